//! The store's conformance suite: every case runs on SQLite and on PostgreSQL.
//!
//! PostgreSQL comes from `SKILL_TEST_POSTGRES_URL` (a superuser URL; each case creates its own
//! database); `cargo xtask test -p skill-store` starts a throwaway server and sets it.

#[path = "conformance/calls.rs"]
mod calls;
#[path = "conformance/cases.rs"]
mod cases;
#[path = "conformance/fixture.rs"]
mod fixture;
#[path = "conformance/guards.rs"]
mod guards;
#[path = "conformance/journal.rs"]
mod journal;
#[path = "conformance/moves.rs"]
mod moves;
#[path = "conformance/processes.rs"]
mod processes;
#[path = "conformance/rules.rs"]
mod rules;
#[path = "conformance/work.rs"]
mod work;

macro_rules! conformance {
    ($($module:ident :: $case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $case() {
                let db = crate::fixture::sqlite().await;
                let store = db.store.clone();
                crate::$module::$case(db).await;
                crate::journal::assert_whole(&store).await;
            })*
        }
        mod postgres {
            $(#[tokio::test]
            async fn $case() {
                let db = crate::fixture::postgres().await;
                let store = db.store.clone();
                crate::$module::$case(db).await;
                crate::journal::assert_whole(&store).await;
            })*
        }
    };
}

conformance!(
    cases::migrations_apply_once_and_reopen,
    cases::principals_have_unique_names,
    cases::tokens_are_found_by_hash_and_revoked_once,
    cases::an_executor_carries_what_it_was_allowed_and_its_claims_are_journaled,
    cases::grants_are_idempotent_per_workspace,
    cases::skills_are_published_once_per_version,
    cases::bare_names_resolve_to_the_newest_active_version,
    cases::listings_page_in_publication_order_with_filters,
    cases::changes_need_the_current_row_version,
    cases::assignments_are_idempotent,
    cases::package_installs_link_skills_by_name,
    cases::package_plans_apply_whole_or_not_at_all,
    cases::an_install_recorded_again_is_journaled_once,
    cases::packages_take_skills_only_by_adoption,
    cases::the_journal_holds_every_change_in_order,
    calls::a_key_names_one_call_and_writes_check_the_row_version,
    calls::executors_are_admitted_by_entrypoint_origin_and_audience,
    calls::claims_at_once_each_take_their_own_call_in_queue_order,
    calls::disabling_a_principal_writes_it_with_its_calls_or_nothing,
    calls::a_claim_with_a_draining_session_takes_nothing,
    calls::updates_at_once_each_get_their_own_answer,
    calls::inserts_at_once_each_get_their_own_answer,
    calls::a_claim_sees_a_disabled_authority,
    calls::leases_expire_and_sessions_end_their_leases,
    calls::calls_are_guarded_by_the_database,
    calls::request_keys_keep_one_answer,
    work::work_is_written_whole_and_guarded_by_the_database,
    work::a_call_names_only_a_task_and_a_run_of_it_that_exist,
    work::a_basis_covers_only_what_was_decided_and_an_execution_writes_once,
    work::a_failed_action_is_retried_only_as_often_as_a_decider_asked,
    work::the_approvals_to_decide_are_the_pending_ones_of_open_tasks_asked_by_others,
    work::a_claim_reads_each_basis_passes_held_calls_and_writes_what_it_cancels,
    work::held_calls_never_hide_the_calls_behind_them,
    work::the_backlog_counts_what_waits_and_why,
    work::artifact_types_never_change_and_an_artifact_is_superseded_once,
    work::a_disabled_principal_decides_nothing,
    work::no_initiator_decides_and_initiators_never_change,
    guards::a_published_contract_cannot_change_even_by_sql,
    guards::agents_keep_their_kind_and_never_decide,
    guards::only_the_endpoint_of_a_contract_moves_and_stays_a_string,
    guards::status_moves_only_forward,
    guards::schemas_freeze_with_a_contract_and_stay_mutable_without,
    guards::published_versions_and_events_are_never_deleted_or_rewritten,
    guards::row_shapes_are_checked_by_the_database,
    guards::signing_keys_are_listed_while_published_and_never_change,
    guards::console_sessions_only_end_once,
    guards::a_state_the_code_does_not_know_is_refused_when_read,
    processes::a_process_basis_holds_only_while_its_step_is_open,
    rules::a_fact_is_one_per_key_and_evaluated_once,
    rules::a_rule_acts_as_an_agent_and_never_interprets_with_a_write,
    rules::evaluations_move_as_their_lifecycle_allows,
    rules::a_work_key_names_one_task_and_a_waiting_evaluation_moves_when_its_call_ends,
    moves::calls_move_as_their_lifecycle_allows,
    moves::sessions_move_as_their_lifecycle_allows,
    moves::skills_move_as_their_lifecycle_allows,
    moves::tasks_and_runs_move_as_their_lifecycles_allow,
    moves::approvals_and_outcomes_move_as_their_lifecycles_allow,
    moves::agents_requests_move_as_their_lifecycle_allows,
    journal::many_writers_at_once_leave_one_gap_free_tree,
    journal::the_journal_is_guarded_by_the_database,
    journal::events_written_before_the_journal_get_their_leaves_when_the_store_opens,
    journal::an_event_appended_by_sql_gets_its_hashes_when_they_are_needed,
);
