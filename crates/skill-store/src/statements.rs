//! The writes of work as data: each [`WorkChange`] is one [`Statement`] (its SQL, written once
//! with `$1`, `$2`, … for both backends, its values and what a write of no row means), so
//! PostgreSQL runs it through sqlx and SQLite through its writer thread (`lite.rs`), where it
//! commits with the calls waiting beside it — without the binding written twice.

use serde_json::Value;

use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{ArtifactRecord, ArtifactTypeRecord, FactRecord, TaskTypeRecord, Time, WorkChange};

/// One value, typed even when absent (PostgreSQL wants a `NULL`'s type).
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i32>),
    BigInt(Option<i64>),
    Bool(Option<bool>),
    Json(Option<Value>),
    Time(Option<Time>),
}

/// What an update that wrote no row means.
#[derive(Debug, Clone)]
pub(crate) enum Unwritten {
    /// Nothing: an insert (its conflicts are the database's errors).
    Fine,
    /// `NotFound` when `table` has no row `id`, `Stale` when it moved on (read again to say which).
    Versioned { table: &'static str, id: String },
    /// `Stale`, saying this.
    Stale(String),
}

/// One statement of a transaction.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    pub(crate) sql: &'static str,
    pub(crate) args: Vec<Arg>,
    pub(crate) unwritten: Unwritten,
}

/// The row version of a row of `table`, read when a versioned update wrote nothing.
pub(crate) fn row_version_sql(table: &'static str) -> &'static str {
    match table {
        "tasks" => "SELECT row_version FROM tasks WHERE id = $1",
        "runs" => "SELECT row_version FROM runs WHERE id = $1",
        "approvals" => "SELECT row_version FROM approvals WHERE id = $1",
        "agent_requests" => "SELECT row_version FROM agent_requests WHERE id = $1",
        "process_instances" => "SELECT row_version FROM process_instances WHERE id = $1",
        "process_steps" => "SELECT row_version FROM process_steps WHERE id = $1",
        _ => "SELECT row_version FROM rule_evaluations WHERE id = $1",
    }
}

/// The error of a versioned update that wrote nothing, given the stored row version.
pub(crate) fn unwritten_error(table: &str, id: &str, stored: Option<i32>) -> StoreError {
    match stored {
        None => StoreError::new(ErrorKind::NotFound, format!("no {table} {id}")),
        Some(version) => StoreError::new(ErrorKind::Stale, format!("{table} {id} is at row version {version}")),
    }
}

fn text(value: &str) -> Arg {
    Arg::Text(Some(value.to_owned()))
}

fn maybe_text(value: Option<&str>) -> Arg {
    Arg::Text(value.map(str::to_owned))
}

fn json(value: &Value) -> Arg {
    Arg::Json(Some(value.clone()))
}

/// Who set a piece of work in motion, as the JSON array its `initiators` column holds.
fn initiators(list: &[skill_api::Initiator]) -> Arg {
    Arg::Json(Some(serde_json::to_value(list).expect("invariant: initiators are strings and words")))
}

fn maybe_json(value: Option<&Value>) -> Arg {
    Arg::Json(value.cloned())
}

/// A fixed-shape document as JSON; one that does not serialize is an error, never a `NULL`.
fn document<T: serde::Serialize>(value: Option<&T>) -> Result<Arg> {
    value
        .map(serde_json::to_value)
        .transpose()
        .map(Arg::Json)
        .map_err(|error| StoreError::new(ErrorKind::Internal, format!("a document does not serialize: {error}")))
}

fn time(value: Time) -> Arg {
    Arg::Time(Some(value))
}

fn insert(sql: &'static str, args: Vec<Arg>) -> Statement {
    Statement { sql, args, unwritten: Unwritten::Fine }
}

fn versioned(sql: &'static str, args: Vec<Arg>, table: &'static str, id: &str) -> Statement {
    Statement { sql, args, unwritten: Unwritten::Versioned { table, id: id.to_owned() } }
}

pub(crate) fn insert_task_type(t: &TaskTypeRecord) -> Result<Statement> {
    Ok(insert(
        "INSERT INTO task_types (id, key, version, display_name, description, spec, execution, created_by, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        vec![
            text(&t.id),
            text(&t.key),
            text(&t.version),
            text(&t.display_name),
            text(&t.description),
            document(Some(&t.spec))?,
            document(t.spec.execution.as_ref())?,
            maybe_text(t.created_by.as_deref()),
            time(t.created_at),
        ],
    ))
}

pub(crate) fn insert_artifact_type(t: &ArtifactTypeRecord) -> Result<Statement> {
    Ok(insert(
        "INSERT INTO artifact_types (id, key, version, display_name, description, media_types, max_bytes, \
         metadata_schema, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        vec![
            text(&t.id),
            text(&t.key),
            text(&t.version),
            text(&t.display_name),
            text(&t.description),
            document(Some(&t.media_types))?,
            Arg::BigInt(Some(t.max_bytes)),
            maybe_json(t.metadata_schema.as_ref()),
            maybe_text(t.created_by.as_deref()),
            time(t.created_at),
        ],
    ))
}

pub(crate) fn insert_artifact(a: &ArtifactRecord) -> Statement {
    insert(
        "INSERT INTO artifacts (id, workspace_id, task_id, run_id, type, name, media_type, size_bytes, sha256, \
         metadata, author_principal_id, skill_invocation_id, supersedes_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        vec![
            text(&a.id),
            text(&a.workspace_id),
            maybe_text(a.task_id.as_deref()),
            maybe_text(a.run_id.as_deref()),
            text(&a.kind),
            text(&a.name),
            text(&a.media_type),
            Arg::BigInt(Some(a.size_bytes)),
            text(&a.sha256),
            json(&a.metadata),
            text(&a.author_principal_id),
            maybe_text(a.skill_invocation_id.as_deref()),
            maybe_text(a.supersedes_id.as_deref()),
            time(a.created_at),
        ],
    )
}

pub(crate) fn insert_process(p: &crate::records::ProcessRecord) -> Result<Statement> {
    Ok(insert(
        "INSERT INTO processes (id, key, version, spec, agent_principal_id, package_key, published_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        vec![
            text(&p.id),
            text(&p.key),
            text(&p.version),
            document(Some(&p.spec))?,
            text(&p.agent_principal_id),
            maybe_text(p.package_key.as_deref()),
            text(&p.published_by),
            time(p.created_at),
        ],
    ))
}

pub(crate) fn insert_fact(f: &FactRecord) -> Statement {
    insert(
        "INSERT INTO facts (id, workspace_id, kind, key, data, occurred_at, source, depth, caused_by_task, \
         recorded_by, created_at, evaluated_at, initiators) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        vec![
            text(&f.id),
            text(&f.workspace_id),
            text(&f.kind),
            text(&f.key),
            json(&f.data),
            time(f.occurred_at),
            maybe_text(f.source.as_deref()),
            Arg::Int(Some(f.depth)),
            maybe_text(f.caused_by_task.as_deref()),
            text(&f.recorded_by),
            time(f.created_at),
            Arg::Time(f.evaluated_at),
            initiators(&f.initiators),
        ],
    )
}

/// The statement that writes `change`.
#[allow(clippy::too_many_lines)]
pub(crate) fn of_change(change: &WorkChange) -> Result<Statement> {
    Ok(match change {
        WorkChange::InsertTaskType(t) => insert_task_type(t)?,
        WorkChange::InsertArtifactType(t) => insert_artifact_type(t)?,
        WorkChange::InsertTask(t) => insert(
            "INSERT INTO tasks (id, workspace_id, task_type_id, title, custom_fields, status, created_by, \
             row_version, created_at, updated_at, closed_at, close_reason, initiators) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            vec![
                text(&t.id),
                text(&t.workspace_id),
                text(&t.task_type_id),
                text(&t.title),
                json(&t.custom_fields),
                text(t.status.as_str()),
                text(&t.created_by),
                Arg::Int(Some(t.row_version)),
                time(t.created_at),
                time(t.updated_at),
                Arg::Time(t.closed_at),
                maybe_text(t.close_reason.as_deref()),
                initiators(&t.initiators),
            ],
        ),
        WorkChange::UpdateTask(t) => versioned(
            "UPDATE tasks SET title = $3, custom_fields = $4, status = $5, row_version = $6, updated_at = $7, \
             closed_at = $8, close_reason = $9 WHERE id = $1 AND row_version = $2",
            vec![
                text(&t.id),
                Arg::Int(Some(t.row_version - 1)),
                text(&t.title),
                json(&t.custom_fields),
                text(t.status.as_str()),
                Arg::Int(Some(t.row_version)),
                time(t.updated_at),
                Arg::Time(t.closed_at),
                maybe_text(t.close_reason.as_deref()),
            ],
            "tasks",
            &t.id,
        ),
        WorkChange::InsertRun(r) => insert(
            "INSERT INTO runs (id, task_id, owner_principal_id, status, result, error, row_version, created_at, \
             ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            vec![
                text(&r.id),
                text(&r.task_id),
                text(&r.owner_principal_id),
                text(r.status.as_str()),
                maybe_json(r.result.as_ref()),
                maybe_json(r.error.as_ref()),
                Arg::Int(Some(r.row_version)),
                time(r.created_at),
                Arg::Time(r.ended_at),
            ],
        ),
        WorkChange::UpdateRun(r) => versioned(
            "UPDATE runs SET status = $3, result = $4, error = $5, row_version = $6, ended_at = $7 \
             WHERE id = $1 AND row_version = $2",
            vec![
                text(&r.id),
                Arg::Int(Some(r.row_version - 1)),
                text(r.status.as_str()),
                maybe_json(r.result.as_ref()),
                maybe_json(r.error.as_ref()),
                Arg::Int(Some(r.row_version)),
                Arg::Time(r.ended_at),
            ],
            "runs",
            &r.id,
        ),
        WorkChange::InsertApproval(a) => insert(
            "INSERT INTO approvals (id, task_id, gate, status, requested_by, request_comment, decided_by, \
             decided_at, comment, decision_authority, withdrawn_by, withdrawn_at, outcome_status, \
             outcome_reaction, row_version, created_at, updated_at, call_skill_id, call_inputs, initiators) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
            vec![
                text(&a.id),
                text(&a.task_id),
                Arg::Bool(Some(a.gate)),
                text(a.status.as_str()),
                text(&a.requested_by),
                text(&a.request_comment),
                maybe_text(a.decided_by.as_deref()),
                Arg::Time(a.decided_at),
                text(&a.comment),
                document(a.decision_authority.as_ref())?,
                maybe_text(a.withdrawn_by.as_deref()),
                Arg::Time(a.withdrawn_at),
                maybe_text(a.outcome_status.map(|s| s.as_str())),
                maybe_text(a.outcome_reaction.map(|r| r.as_str())),
                Arg::Int(Some(a.row_version)),
                time(a.created_at),
                time(a.updated_at),
                maybe_text(a.call_skill_id.as_deref()),
                maybe_json(a.call_inputs.as_ref()),
                initiators(&a.initiators),
            ],
        ),
        WorkChange::UpdateApproval(a) => versioned(
            "UPDATE approvals SET status = $3, decided_by = $4, decided_at = $5, comment = $6, \
             decision_authority = $7, withdrawn_by = $8, withdrawn_at = $9, outcome_status = $10, \
             outcome_reaction = $11, row_version = $12, updated_at = $13 WHERE id = $1 AND row_version = $2",
            vec![
                text(&a.id),
                Arg::Int(Some(a.row_version - 1)),
                text(a.status.as_str()),
                maybe_text(a.decided_by.as_deref()),
                Arg::Time(a.decided_at),
                text(&a.comment),
                document(a.decision_authority.as_ref())?,
                maybe_text(a.withdrawn_by.as_deref()),
                Arg::Time(a.withdrawn_at),
                maybe_text(a.outcome_status.map(|s| s.as_str())),
                maybe_text(a.outcome_reaction.map(|r| r.as_str())),
                Arg::Int(Some(a.row_version)),
                time(a.updated_at),
            ],
            "approvals",
            &a.id,
        ),
        WorkChange::InsertAction(a) => insert(
            "INSERT INTO approval_actions (approval_id, action_index, action, status, invocation_id, result, \
             error, attempts, row_version, created_at, updated_at, skill_id, inputs, retries) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            vec![
                text(&a.approval_id),
                Arg::Int(Some(a.action_index)),
                document(Some(&a.action))?,
                text(a.status.as_str()),
                maybe_text(a.invocation_id.as_deref()),
                document(a.result.as_ref())?,
                document(a.error.as_ref())?,
                Arg::Int(Some(a.attempts)),
                Arg::Int(Some(a.row_version)),
                time(a.created_at),
                time(a.updated_at),
                maybe_text(a.skill_id.as_deref()),
                maybe_json(a.inputs.as_ref()),
                Arg::Int(Some(a.retries)),
            ],
        ),
        WorkChange::UpdateAction(a) => Statement {
            sql: "UPDATE approval_actions SET status = $4, invocation_id = $5, result = $6, error = $7, \
                  attempts = $8, row_version = $9, updated_at = $10, retries = $11 \
                  WHERE approval_id = $1 AND action_index = $2 AND row_version = $3",
            args: vec![
                text(&a.approval_id),
                Arg::Int(Some(a.action_index)),
                Arg::Int(Some(a.row_version - 1)),
                text(a.status.as_str()),
                maybe_text(a.invocation_id.as_deref()),
                document(a.result.as_ref())?,
                document(a.error.as_ref())?,
                Arg::Int(Some(a.attempts)),
                Arg::Int(Some(a.row_version)),
                time(a.updated_at),
                Arg::Int(Some(a.retries)),
            ],
            unwritten: Unwritten::Stale(format!("action {} of approval {} moved on", a.action_index, a.approval_id)),
        },
        WorkChange::InsertComment(c) => insert(
            "INSERT INTO task_comments (id, task_id, author_principal_id, body, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
            vec![text(&c.id), text(&c.task_id), text(&c.author_principal_id), text(&c.body), time(c.created_at)],
        ),
        WorkChange::InsertRequest(r) => insert(
            "INSERT INTO agent_requests (id, agent_principal_id, skill_id, inputs, client_name, client_version, \
             task_id, approval_id, status, invocation_id, expires_at, row_version, created_at, updated_at, \
             ended_at, idempotency_key, initiators) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
            vec![
                text(&r.id),
                text(&r.agent_principal_id),
                text(&r.skill_id),
                json(&r.inputs),
                text(&r.client_name),
                text(&r.client_version),
                text(&r.task_id),
                text(&r.approval_id),
                text(r.status.as_str()),
                maybe_text(r.invocation_id.as_deref()),
                time(r.expires_at),
                Arg::Int(Some(r.row_version)),
                time(r.created_at),
                time(r.updated_at),
                Arg::Time(r.ended_at),
                maybe_text(r.idempotency_key.as_deref()),
                initiators(&r.initiators),
            ],
        ),
        WorkChange::UpdateRequest(r) => versioned(
            "UPDATE agent_requests SET status = $3, invocation_id = $4, row_version = $5, updated_at = $6, \
             ended_at = $7 WHERE id = $1 AND row_version = $2",
            vec![
                text(&r.id),
                Arg::Int(Some(r.row_version - 1)),
                text(r.status.as_str()),
                maybe_text(r.invocation_id.as_deref()),
                Arg::Int(Some(r.row_version)),
                time(r.updated_at),
                Arg::Time(r.ended_at),
            ],
            "agent_requests",
            &r.id,
        ),
        WorkChange::InsertEvaluation(e) => insert(
            "INSERT INTO rule_evaluations (id, fact_id, rule_id, status, invocation_id, task_ids, artifact_id, \
             error, row_version, created_at, updated_at, ended_at, asks, instance_ids) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            vec![
                text(&e.id),
                text(&e.fact_id),
                text(&e.rule_id),
                text(e.status.as_str()),
                maybe_text(e.invocation_id.as_deref()),
                document(Some(&e.task_ids))?,
                maybe_text(e.artifact_id.as_deref()),
                document(e.error.as_ref())?,
                Arg::Int(Some(e.row_version)),
                time(e.created_at),
                time(e.updated_at),
                Arg::Time(e.ended_at),
                Arg::Int(Some(e.asks)),
                document(Some(&e.instance_ids))?,
            ],
        ),
        WorkChange::UpdateEvaluation(e) => versioned(
            "UPDATE rule_evaluations SET status = $3, invocation_id = $4, task_ids = $5, artifact_id = $6, \
             error = $7, row_version = $8, updated_at = $9, ended_at = $10, asks = $11, instance_ids = $12 \
             WHERE id = $1 AND row_version = $2",
            vec![
                text(&e.id),
                Arg::Int(Some(e.row_version - 1)),
                text(e.status.as_str()),
                maybe_text(e.invocation_id.as_deref()),
                document(Some(&e.task_ids))?,
                maybe_text(e.artifact_id.as_deref()),
                document(e.error.as_ref())?,
                Arg::Int(Some(e.row_version)),
                time(e.updated_at),
                Arg::Time(e.ended_at),
                Arg::Int(Some(e.asks)),
                document(Some(&e.instance_ids))?,
            ],
            "rule_evaluations",
            &e.id,
        ),
        WorkChange::FactEvaluated { fact_id, at } => Statement {
            sql: "UPDATE facts SET evaluated_at = $2 WHERE id = $1 AND evaluated_at IS NULL",
            args: vec![text(fact_id), time(*at)],
            unwritten: Unwritten::Stale(format!("fact {fact_id} is evaluated already, or there is none")),
        },
        WorkChange::InsertTaskOrigin(o) => insert(
            "INSERT INTO task_origins (task_id, workspace_id, work_key, fact_id, evaluation_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            vec![
                text(&o.task_id),
                text(&o.workspace_id),
                text(&o.work_key),
                text(&o.fact_id),
                text(&o.evaluation_id),
                time(o.created_at),
            ],
        ),
        WorkChange::InsertArtifact(a) => insert_artifact(a),
        WorkChange::InsertInstance(i) => insert(
            "INSERT INTO process_instances (id, process_id, process_key, workspace_id, key, input, vars, status, \
             at_step, wake_at, error, started_by, row_version, created_at, updated_at, ended_at, initiators) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
            vec![
                text(&i.id),
                text(&i.process_id),
                text(&i.process_key),
                text(&i.workspace_id),
                text(&i.key),
                json(&i.input),
                json(&i.vars),
                text(i.status.as_str()),
                maybe_text(i.at_step.as_deref()),
                Arg::Time(i.wake_at),
                document(i.error.as_ref())?,
                text(&i.started_by),
                Arg::Int(Some(i.row_version)),
                time(i.created_at),
                time(i.updated_at),
                Arg::Time(i.ended_at),
                initiators(&i.initiators),
            ],
        ),
        WorkChange::UpdateInstance(i) => versioned(
            "UPDATE process_instances SET vars = $3, status = $4, at_step = $5, wake_at = $6, error = $7, \
             row_version = $8, updated_at = $9, ended_at = $10 WHERE id = $1 AND row_version = $2",
            vec![
                text(&i.id),
                Arg::Int(Some(i.row_version - 1)),
                json(&i.vars),
                text(i.status.as_str()),
                maybe_text(i.at_step.as_deref()),
                Arg::Time(i.wake_at),
                document(i.error.as_ref())?,
                Arg::Int(Some(i.row_version)),
                time(i.updated_at),
                Arg::Time(i.ended_at),
            ],
            "process_instances",
            &i.id,
        ),
        WorkChange::InsertStep(t) => insert(
            "INSERT INTO process_steps (id, instance_id, seq, step_id, action, status, attempt, skill_id, inputs, \
             invocation_id, task_id, fact_id, wait_kind, output, error, wake_at, row_version, started_at, \
             ended_at, approval_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20)",
            vec![
                text(&t.id),
                text(&t.instance_id),
                Arg::Int(Some(t.seq)),
                text(&t.step_id),
                text(t.action.as_str()),
                text(t.status.as_str()),
                Arg::Int(Some(t.attempt)),
                maybe_text(t.skill_id.as_deref()),
                maybe_json(t.inputs.as_ref()),
                maybe_text(t.invocation_id.as_deref()),
                maybe_text(t.task_id.as_deref()),
                maybe_text(t.fact_id.as_deref()),
                maybe_text(t.wait_kind.as_deref()),
                maybe_json(t.output.as_ref()),
                document(t.error.as_ref())?,
                Arg::Time(t.wake_at),
                Arg::Int(Some(t.row_version)),
                time(t.started_at),
                Arg::Time(t.ended_at),
                maybe_text(t.approval_id.as_deref()),
            ],
        ),
        WorkChange::UpdateStep(t) => versioned(
            "UPDATE process_steps SET status = $3, invocation_id = $4, task_id = $5, fact_id = $6, wait_kind = $7, \
             output = $8, error = $9, wake_at = $10, row_version = $11, ended_at = $12 \
             WHERE id = $1 AND row_version = $2",
            vec![
                text(&t.id),
                Arg::Int(Some(t.row_version - 1)),
                text(t.status.as_str()),
                maybe_text(t.invocation_id.as_deref()),
                maybe_text(t.task_id.as_deref()),
                maybe_text(t.fact_id.as_deref()),
                maybe_text(t.wait_kind.as_deref()),
                maybe_json(t.output.as_ref()),
                document(t.error.as_ref())?,
                Arg::Time(t.wake_at),
                Arg::Int(Some(t.row_version)),
                Arg::Time(t.ended_at),
            ],
            "process_steps",
            &t.id,
        ),
    })
}

/// Runs statements inside the sqlx transaction `$tx` (of either backend).
macro_rules! run_in {
    ($tx:ident, $statements:expr) => {{
        for statement in $statements {
            let statement: &$crate::statements::Statement = statement;
            let mut query = sqlx::query(statement.sql);
            for arg in &statement.args {
                query = match arg.clone() {
                    $crate::statements::Arg::Text(v) => query.bind(v),
                    $crate::statements::Arg::Int(v) => query.bind(v),
                    $crate::statements::Arg::BigInt(v) => query.bind(v),
                    $crate::statements::Arg::Bool(v) => query.bind(v),
                    $crate::statements::Arg::Json(v) => query.bind(v.map(sqlx::types::Json)),
                    $crate::statements::Arg::Time(v) => query.bind(v),
                };
            }
            let done = query.execute(&mut *$tx).await?;
            if done.rows_affected() == 0 {
                match &statement.unwritten {
                    $crate::statements::Unwritten::Fine => {}
                    $crate::statements::Unwritten::Versioned { table, id } => {
                        let stored: Option<i32> = sqlx::query_scalar($crate::statements::row_version_sql(table))
                            .bind(id)
                            .fetch_optional(&mut *$tx)
                            .await?;
                        return Err($crate::statements::unwritten_error(table, id, stored));
                    }
                    $crate::statements::Unwritten::Stale(message) => {
                        return Err($crate::error::StoreError::new($crate::error::ErrorKind::Stale, message.clone()));
                    }
                }
            }
        }
    }};
}
pub(crate) use run_in;

/// Runs statements on SQLite's writing connection (inside the writer's savepoint).
pub(crate) fn run_lite(connection: &rusqlite::Connection, statements: &[Statement]) -> Result<()> {
    use crate::lite::rows::{execute, rows, time_text};
    use rusqlite::types::Value as Lite;
    for statement in statements {
        let values: Vec<Lite> = statement
            .args
            .iter()
            .map(|arg| match arg {
                Arg::Text(v) => v.clone().map_or(Lite::Null, Lite::Text),
                Arg::Int(v) => v.map_or(Lite::Null, |v| Lite::Integer(v.into())),
                Arg::BigInt(v) => v.map_or(Lite::Null, Lite::Integer),
                Arg::Bool(v) => v.map_or(Lite::Null, |v| Lite::Integer(v.into())),
                Arg::Json(v) => v.as_ref().map_or(Lite::Null, |v| Lite::Text(v.to_string())),
                Arg::Time(v) => v.map_or(Lite::Null, |v| Lite::Text(time_text(v))),
            })
            .collect();
        if execute(connection, statement.sql, &values)? > 0 {
            continue;
        }
        match &statement.unwritten {
            Unwritten::Fine => {}
            Unwritten::Versioned { table, id } => {
                let stored =
                    rows(connection, row_version_sql(table), &[Lite::Text(id.clone())], |row| row.get::<_, i32>(0))?;
                return Err(unwritten_error(table, id, stored.first().copied()));
            }
            Unwritten::Stale(message) => return Err(StoreError::new(ErrorKind::Stale, message.clone())),
        }
    }
    Ok(())
}
