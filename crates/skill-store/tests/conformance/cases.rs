//! What every backend must do the same way: identity, the catalog, assignments, packages, the
//! journal.

use chrono::Utc;
use serde_json::json;
use skill_api::PrincipalKind;
use skill_api::SkillStatus;
use skill_contract::codes::Code;
use skill_store::records::{
    AccessToken, AssignOutcome, Assignment, Event, Grant, PackageInstall, PackageObject, PackagePlan, SkillChange,
    SkillFilter, SkillRecord, SkillUpdate, Workspace,
};
use skill_store::{ErrorKind, StoreOptions};

use crate::fixture::{Db, catalog_row, event, id, leaf, principal, publish};

pub(crate) async fn migrations_apply_once_and_reopen(db: Db) {
    let first = principal("ana");
    db.store.create_principal(&first, &event("principal.created", "principal:ana")).await.expect("created");
    // Opening again runs the migrator again: nothing applies twice, nothing is lost.
    let again = skill_store::open(&db.target, &StoreOptions::default()).await.expect("reopens");
    assert_eq!(again.backend(), db.store.backend());
    let read = again.principal(&first.id).await.expect("still there");
    assert_eq!(read.name, "ana");
    assert_eq!(
        read.created_at.timestamp_micros(),
        first.created_at.timestamp_micros(),
        "times survive the round trip to the microsecond"
    );
    again.ping().await.expect("answers");
    // A SQLite database migrated while its migrations were numbered one lower from 24 (before
    // the backends were in parity) is renumbered as it opens, and nothing applies twice.
    if let crate::fixture::Raw::Sqlite(pool) = &db.raw {
        for sql in [
            "DELETE FROM _sqlx_migrations WHERE version = 24",
            "UPDATE _sqlx_migrations SET version = -(version - 1) WHERE version > 24",
            "UPDATE _sqlx_migrations SET version = -version WHERE version < 0",
        ] {
            sqlx::query(sql).execute(pool).await.expect("the older numbering");
        }
        let before: Vec<(i64, String)> =
            sqlx::query_as("SELECT version, description FROM _sqlx_migrations WHERE version >= 24 ORDER BY version")
                .fetch_all(pool)
                .await
                .expect("read");
        assert_eq!(before[0], (24, "call traces".to_owned()), "{before:?}");
        let renumbered = skill_store::open(&db.target, &StoreOptions::default()).await.expect("reopens");
        assert_eq!(renumbered.principal(&first.id).await.expect("still there").name, "ana");
        let after: Vec<(i64, String)> =
            sqlx::query_as("SELECT version, description FROM _sqlx_migrations WHERE version >= 24 ORDER BY version")
                .fetch_all(pool)
                .await
                .expect("read");
        let shown: Vec<(i64, &str)> = after.iter().map(|(v, d)| (*v, d.as_str())).collect();
        assert_eq!(
            &shown[..5],
            [(24, "key changes heard"), (25, "call traces"), (26, "journal"), (27, "initiators"), (28, "fixed names")]
        );
    }
}

pub(crate) async fn principals_have_unique_names(db: Db) {
    let ana = principal("ana");
    db.store.create_principal(&ana, &event("principal.created", "principal:x")).await.expect("created");
    let read = db.store.principal_by_name("ana").await.expect("by name");
    assert_eq!(
        (read.id.as_str(), read.kind.as_str(), read.display_name.as_str()),
        (ana.id.as_str(), "person", "ana (display)")
    );
    let error = db
        .store
        .create_principal(&principal("ana"), &event("principal.created", "principal:y"))
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Conflict, "{error}");
    assert_eq!(db.store.principal("no-such-id").await.expect_err("refused").kind(), ErrorKind::NotFound);
    let mut agent = principal("bot");
    agent.kind = PrincipalKind::Agent;
    db.store.create_principal(&agent, &event("principal.created", "principal:z")).await.expect("agent");
    let names: Vec<String> = db.store.principals().await.expect("list").into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["ana", "bot"]);
}

pub(crate) async fn tokens_are_found_by_hash_and_revoked_once(db: Db) {
    let ana = principal("ana");
    db.store.create_principal(&ana, &event("principal.created", "p")).await.expect("created");
    let token = AccessToken {
        id: id(),
        principal_id: ana.id.clone(),
        token_hash: "ab".repeat(32),
        label: "laptop".to_owned(),
        created_at: Utc::now(),
        expires_at: None,
        revoked_at: None,
        operated_by: None,
        issued_by: None,
    };
    db.store.create_token(&token, &event("token.created", "t")).await.expect("token");
    let found = db.store.credential(&"ab".repeat(32)).await.expect("found");
    assert_eq!(
        (found.token.id.as_str(), found.token.label.as_str(), found.principal.name.as_str()),
        (token.id.as_str(), "laptop", "ana")
    );
    assert!(found.grants.is_empty(), "a principal without grants still authenticates");
    assert_eq!(db.store.credential(&"cd".repeat(32)).await.expect_err("refused").kind(), ErrorKind::NotFound);
    for permission in ["org.read", "skills.invoke"] {
        let grant = Grant {
            id: id(),
            principal_id: ana.id.clone(),
            workspace_id: None,
            permission: permission.to_owned(),
            created_at: Utc::now(),
        };
        db.store.add_grant(&grant, &event("grant.added", "g")).await.expect("grant");
    }
    let permissions: Vec<String> =
        db.store.credential(&"ab".repeat(32)).await.expect("found").grants.into_iter().map(|g| g.permission).collect();
    assert_eq!(permissions, ["org.read", "skills.invoke"], "the grants come with the token");
    let duplicate = AccessToken { id: id(), ..token.clone() };
    assert_eq!(
        db.store.create_token(&duplicate, &event("token.created", "t")).await.expect_err("refused").kind(),
        ErrorKind::Conflict
    );

    db.store.revoke_token(&token.id, Utc::now(), &event("token.revoked", "t")).await.expect("revoked");
    let found = db.store.credential(&"ab".repeat(32)).await.expect("still found");
    assert!(found.token.revoked_at.is_some());
    let again = db.store.revoke_token(&token.id, Utc::now(), &event("token.revoked", "t")).await.expect_err("refused");
    assert_eq!(again.kind(), ErrorKind::NotFound, "a token is revoked once");
    assert_eq!(db.store.tokens(&ana.id).await.expect("tokens").len(), 1);
}

pub(crate) async fn grants_are_idempotent_per_workspace(db: Db) {
    let ana = principal("ana");
    db.store.create_principal(&ana, &event("principal.created", "p")).await.expect("created");
    let claims = Workspace { id: id(), key: "claims".to_owned(), name: "Claims".to_owned(), created_at: Utc::now() };
    db.store.create_workspace(&claims, &event("workspace.created", "w")).await.expect("workspace");
    assert_eq!(db.store.workspace_by_key("claims").await.expect("by key").id, claims.id);
    let grant = |workspace: Option<&str>, permission: &str| Grant {
        id: id(),
        principal_id: ana.id.clone(),
        workspace_id: workspace.map(str::to_owned),
        permission: permission.to_owned(),
        created_at: Utc::now(),
    };
    let added = |g: Grant| {
        let store = db.store.clone();
        async move { store.add_grant(&g, &event("grant.added", "g")).await.expect("grant") }
    };
    assert!(added(grant(None, "org.read")).await);
    assert!(!added(grant(None, "org.read")).await, "an organisation-wide grant is held once");
    assert!(added(grant(Some(&claims.id), "org.read")).await, "a workspace grant is another grant");
    assert!(!added(grant(Some(&claims.id), "org.read")).await);
    assert!(added(grant(Some(&claims.id), "tasks.write")).await);
    let held: Vec<(Option<String>, String)> =
        db.store.grants(&ana.id).await.expect("grants").into_iter().map(|g| (g.workspace_id, g.permission)).collect();
    assert_eq!(held.len(), 3, "{held:?}");
    assert!(db.store.remove_grant(&ana.id, None, "org.read", &event("grant.removed", "g")).await.expect("removed"));
    assert!(!db.store.remove_grant(&ana.id, None, "org.read", &event("grant.removed", "g")).await.expect("none"));
    let held: Vec<Option<String>> =
        db.store.grants(&ana.id).await.expect("grants").into_iter().map(|g| g.workspace_id).collect();
    assert_eq!(held, [Some(claims.id.clone()), Some(claims.id.clone())]);
    let ghost = Grant { principal_id: "nobody".to_owned(), ..grant(None, "org.read") };
    let error = db.store.add_grant(&ghost, &event("grant.added", "g")).await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Invalid, "a grant needs its principal: {error}");
}

pub(crate) async fn skills_are_published_once_per_version(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let read = db.store.skill(&skill.id).await.expect("by id");
    assert_eq!(read.skill.contract, skill.contract);
    assert_eq!(read.skill.config, json!({}));
    assert_eq!(read.package, None);
    assert_eq!(db.store.skill_version("claim.classify", "1").await.expect("by version").skill.id, skill.id);
    assert_eq!(db.store.skill_version("claim.classify", "2").await.expect_err("refused").kind(), ErrorKind::NotFound);
    let again = leaf("claim.classify", "1");
    let error = db.store.insert_skill(&again, &event("skill.registered", "s")).await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Conflict);
    // Nothing of the refused publication remains, its event included.
    let events = db.store.events(0, None, 100).await.expect("events");
    assert_eq!(events.len(), 1, "{events:?}");
}

pub(crate) async fn bare_names_resolve_to_the_newest_active_version(db: Db) {
    let v1 = leaf("claim.reply", "1");
    let v2 = leaf("claim.reply", "2");
    let v3 = leaf("claim.reply", "3");
    for skill in [&v1, &v2, &v3] {
        publish(&db, skill).await;
    }
    assert_eq!(db.store.newest_skill("claim.reply").await.expect("newest").skill.version, "3");
    let retire = |skill: &skill_store::records::SkillRecord, status: &str| {
        let change = SkillChange { status: status.parse().expect("a state"), ..SkillChange::from_record(skill) };
        let store = db.store.clone();
        let id = skill.id.clone();
        async move { store.update_skill(&id, 1, &change, &event("skill.updated", "s")).await.expect("changed") }
    };
    retire(&v3, "deprecated").await;
    assert_eq!(db.store.newest_skill("claim.reply").await.expect("newest").skill.version, "2", "active first");
    retire(&v2, "disabled").await;
    retire(&v1, "disabled").await;
    assert_eq!(db.store.newest_skill("claim.reply").await.expect("newest").skill.version, "3", "else deprecated");
    let v3_now = db.store.skill(&v3.id).await.expect("v3").skill;
    let change = SkillChange { status: SkillStatus::Disabled, ..SkillChange::from_record(&v3_now) };
    db.store.update_skill(&v3.id, 2, &change, &event("skill.updated", "s")).await.expect("disabled");
    assert_eq!(
        db.store.newest_skill("claim.reply").await.expect_err("refused").kind(),
        ErrorKind::NotFound,
        "never disabled"
    );
    assert_eq!(db.store.skill_version("claim.reply", "1").await.expect("pinned").skill.status.as_str(), "disabled");
}

pub(crate) async fn listings_page_in_publication_order_with_filters(db: Db) {
    let mut ids = Vec::new();
    for index in 0..7 {
        let skill =
            if index % 2 == 0 { leaf("a.even", &index.to_string()) } else { catalog_row("b.odd", &index.to_string()) };
        publish(&db, &skill).await;
        ids.push(skill.id);
    }
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = db
            .store
            .skills(&SkillFilter { after: after.clone(), limit: 3, ..SkillFilter::default() })
            .await
            .expect("page");
        if page.is_empty() {
            break;
        }
        after = page.last().map(|entry| entry.skill.id.clone());
        seen.extend(page.into_iter().map(|entry| entry.skill.id));
    }
    assert_eq!(seen, ids, "every version once, in publication order");
    let odd = SkillFilter { name: Some("b.odd".to_owned()), limit: 50, ..SkillFilter::default() };
    let versions: Vec<String> =
        db.store.skills(&odd).await.expect("odd").into_iter().map(|e| e.skill.version).collect();
    assert_eq!(versions, ["1", "3", "5"]);
    let disabled = SkillFilter { status: Some(SkillStatus::Disabled), limit: 50, ..SkillFilter::default() };
    assert!(db.store.skills(&disabled).await.expect("none").is_empty());
    let catalog = db.store.skill(&ids[1]).await.expect("catalog row").skill;
    assert_eq!((catalog.contract, catalog.protocol.as_deref()), (None, Some("custom")));
}

pub(crate) async fn changes_need_the_current_row_version(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let change = SkillChange {
        description: "Sorts claims.".to_owned(),
        config: json!({"region": "eu"}),
        ..SkillChange::from_record(&skill)
    };
    let updated = db.store.update_skill(&skill.id, 1, &change, &event("skill.updated", "s")).await.expect("updated");
    assert_eq!((updated.row_version, updated.description.as_str()), (2, "Sorts claims."));
    assert_eq!(updated.config, json!({"region": "eu"}));
    assert!(updated.updated_at >= skill.updated_at);
    let stale = db.store.update_skill(&skill.id, 1, &change, &event("skill.updated", "s")).await.expect_err("refused");
    assert_eq!(stale.kind(), ErrorKind::Stale, "{stale}");
    let missing = db.store.update_skill("nope", 1, &change, &event("skill.updated", "s")).await.expect_err("refused");
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert_eq!(db.store.events(0, None, 10).await.expect("events").len(), 2, "refused changes leave no event");
}

pub(crate) async fn assignments_are_idempotent(db: Db) {
    let ana = principal("ana");
    db.store.create_principal(&ana, &event("principal.created", "p")).await.expect("created");
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let assignment = Assignment {
        principal_id: ana.id.clone(),
        skill_id: skill.id.clone(),
        metadata: json!({"why": "triage"}),
        read_only: false,
        created_at: Utc::now(),
    };
    let assigned = event("skill.assigned", "s");
    assert_eq!(db.store.assign_skill(&assignment, &assigned).await.expect("assigned"), AssignOutcome::Created);
    let again = event("skill.assigned", "s");
    assert_eq!(db.store.assign_skill(&assignment, &again).await.expect("again"), AssignOutcome::Unchanged);
    let changed = Assignment { metadata: json!({"why": "escalations"}), ..assignment.clone() };
    let moved = event("skill.assigned", "s");
    assert_eq!(db.store.assign_skill(&changed, &moved).await.expect("changed"), AssignOutcome::Updated);
    let held = db.store.assignments(&ana.id).await.expect("list");
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].metadata, json!({"why": "escalations"}), "the metadata of a repeat is kept, not dropped");
    let read_only = Assignment { read_only: true, ..changed.clone() };
    let narrowed = event("skill.assigned", "s");
    assert_eq!(db.store.assign_skill(&read_only, &narrowed).await.expect("narrowed"), AssignOutcome::Updated);
    assert!(db.store.assignments(&ana.id).await.expect("list")[0].read_only, "read-only is kept");
    assert!(db.store.unassign_skill(&ana.id, &skill.id, &event("skill.revoked", "s")).await.expect("revoked"));
    assert!(!db.store.unassign_skill(&ana.id, &skill.id, &event("skill.revoked", "s")).await.expect("none"));
    let kinds: Vec<String> = db.store.events(0, None, 10).await.expect("events").into_iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            "principal.created",
            "skill.registered",
            "skill.assigned",
            "skill.assigned",
            "skill.assigned",
            "skill.revoked"
        ]
    );
}

pub(crate) async fn package_installs_link_skills_by_name(db: Db) {
    let v1 = leaf("claim.classify", "1");
    let v2 = leaf("claim.classify", "2");
    let other = leaf("other.skill", "1");
    for skill in [&v1, &v2, &other] {
        publish(&db, skill).await;
    }
    let install = PackageInstall {
        key: "claims".to_owned(),
        version: "1.0.0".to_owned(),
        install_hash: "h1".to_owned(),
        installed_at: Utc::now(),
        installed_by: None,
    };
    let objects = [PackageObject { kind: "Skill".to_owned(), key: "claim.classify".to_owned() }];
    db.store
        .record_install(&install, &objects, &[], &event("package.installed", "package:claims"))
        .await
        .expect("recorded");
    for id in [&v1.id, &v2.id] {
        let entry = db.store.skill(id).await.expect("entry");
        assert_eq!(entry.package.as_ref().map(|p| (p.key.as_str(), p.install_hash.as_str())), Some(("claims", "h1")));
    }
    assert_eq!(db.store.skill(&other.id).await.expect("other").package, None);
    let filter = SkillFilter { package: Some("claims".to_owned()), limit: 10, ..SkillFilter::default() };
    assert_eq!(db.store.skills(&filter).await.expect("by package").len(), 2);

    // Installing again replaces the install and keeps one link per object.
    let newer = PackageInstall { version: "1.1.0".to_owned(), install_hash: "h2".to_owned(), ..install.clone() };
    db.store.record_install(&newer, &objects, &[], &event("package.installed", "package:claims")).await.expect("again");
    assert_eq!(db.store.package_install("claims").await.expect("install").install_hash, "h2");
    assert_eq!(db.store.package_objects("claims").await.expect("objects"), objects);
    assert_eq!(db.store.skill(&v2.id).await.expect("v2").package.map(|p| p.version), Some("1.1.0".to_owned()));
    assert_eq!(db.store.package_install("nope").await.expect_err("refused").kind(), ErrorKind::NotFound);
}

/// A skill another package installed moves only when the new install adopts it; a package
/// links only skills the catalog has. A refusal leaves no install and no event.
pub(crate) async fn packages_take_skills_only_by_adoption(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let install = |key: &str| PackageInstall {
        key: key.to_owned(),
        version: "1".to_owned(),
        install_hash: "h1".to_owned(),
        installed_at: Utc::now(),
        installed_by: None,
    };
    let objects = [PackageObject { kind: "Skill".to_owned(), key: "claim.classify".to_owned() }];
    let installed = |key: &str| event("package.installed", &format!("package:{key}"));
    db.store.record_install(&install("claims"), &objects, &[], &installed("claims")).await.expect("recorded");
    let events_before = db.store.events(0, None, 100).await.expect("events").len();

    let error =
        db.store.record_install(&install("rival"), &objects, &[], &installed("rival")).await.expect_err("taken");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::PackageObjectConflict), "{error}");
    assert_eq!(error.details()["objects"], json!([{"kind": "Skill", "key": "claim.classify", "package": "claims"}]));
    let plan = PackagePlan {
        creates: vec![],
        updates: vec![],
        install: install("rival"),
        objects: objects.to_vec(),
        adopt: vec![],
        settings_schema: None,
        task_types: Vec::new(),
        artifact_types: Vec::new(),
        agents: Vec::new(),
        rules: Vec::new(),
        processes: Vec::new(),
    };
    let error = db.store.apply_package(&plan, &installed("rival")).await.expect_err("taken in a plan too");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::PackageObjectConflict), "{error}");
    assert_eq!(db.store.package_install("rival").await.expect_err("no install").kind(), ErrorKind::NotFound);
    assert_eq!(db.store.skill(&skill.id).await.expect("skill").package.map(|p| p.key), Some("claims".to_owned()));

    let ghost = [PackageObject { kind: "Skill".to_owned(), key: "claim.ghost".to_owned() }];
    let error =
        db.store.record_install(&install("ghosts"), &ghost, &[], &installed("ghosts")).await.expect_err("unknown");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::UnknownReference), "{error}");
    assert_eq!(db.store.package_install("ghosts").await.expect_err("no install").kind(), ErrorKind::NotFound);
    assert_eq!(db.store.events(0, None, 100).await.expect("events").len(), events_before, "refusals journal nothing");

    db.store.record_install(&install("rival"), &objects, &objects, &installed("rival")).await.expect("adopted");
    assert_eq!(db.store.skill(&skill.id).await.expect("skill").package.map(|p| p.key), Some("rival".to_owned()));
    assert_eq!(db.store.package_objects("claims").await.expect("objects"), []);
}

pub(crate) async fn the_journal_holds_every_change_in_order(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let change = SkillChange { description: "new".to_owned(), ..SkillChange::from_record(&skill) };
    let mut updated = event("skill.updated", &format!("skill:{}", skill.id));
    updated.data = json!({"changedFields": ["description"], "rowVersion": 2});
    db.store.update_skill(&skill.id, 1, &change, &updated).await.expect("updated");
    db.store.create_principal(&principal("ana"), &event("principal.created", "principal:ana")).await.expect("ana");

    let all = db.store.events(0, None, 10).await.expect("all");
    let kinds: Vec<&str> = all.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["skill.registered", "skill.updated", "principal.created"]);
    assert!(all.windows(2).all(|pair| pair[0].seq < pair[1].seq));
    assert_eq!(all[1].data, json!({"changedFields": ["description"], "rowVersion": 2}));
    assert_eq!(all[1].request_id.as_deref(), Some("req-1"));
    let subject = format!("skill:{}", skill.id);
    let of_skill = db.store.events(0, Some(&subject), 10).await.expect("of the skill");
    assert_eq!(of_skill.len(), 2);
    let rest = db.store.events(all[0].seq, None, 1).await.expect("after the first");
    assert_eq!(rest.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["skill.updated"]);
}

/// A package plan is written whole or not at all: a conflict in its second version, or a stale
/// change, leaves no version, no install and no event behind.
pub(crate) async fn package_plans_apply_whole_or_not_at_all(db: Db) {
    let existing = leaf("claim.send_reply", "1");
    publish(&db, &existing).await;
    let events_before = db.store.events(0, None, 100).await.expect("events").len();
    let install = PackageInstall {
        key: "claims".to_owned(),
        version: "1.0.0".to_owned(),
        install_hash: "h1".to_owned(),
        installed_at: Utc::now(),
        installed_by: None,
    };
    let objects = vec![
        PackageObject { kind: "Skill".to_owned(), key: "claim.classify".to_owned() },
        PackageObject { kind: "Skill".to_owned(), key: "claim.send_reply".to_owned() },
    ];
    let fresh = leaf("claim.classify", "1");
    let created = |skill: &SkillRecord| (skill.clone(), event("skill.registered", &format!("skill:{}", skill.id)));
    let change = SkillChange { description: "patched".to_owned(), ..SkillChange::from_record(&existing) };
    let update = |expected: i32| SkillUpdate {
        id: existing.id.clone(),
        expected_row_version: expected,
        change: change.clone(),
        event: event("skill.updated", &format!("skill:{}", existing.id)),
    };
    let plan = |creates: Vec<(SkillRecord, Event)>, updates: Vec<SkillUpdate>| PackagePlan {
        creates,
        updates,
        install: install.clone(),
        objects: objects.clone(),
        adopt: vec![],
        settings_schema: None,
        task_types: Vec::new(),
        artifact_types: Vec::new(),
        agents: Vec::new(),
        rules: Vec::new(),
        processes: Vec::new(),
    };
    let installed = event("package.installed", "package:claims");

    // The second version clashes with a published one.
    let clash = leaf("claim.send_reply", "1");
    let refused = db.store.apply_package(&plan(vec![created(&fresh), created(&clash)], vec![]), &installed).await;
    assert_eq!(refused.expect_err("a clash").kind(), ErrorKind::Conflict);
    // The change is stale.
    let refused = db.store.apply_package(&plan(vec![created(&fresh)], vec![update(7)]), &installed).await;
    assert_eq!(refused.expect_err("stale").kind(), ErrorKind::Stale);
    assert_eq!(db.store.skill(&fresh.id).await.expect_err("not written").kind(), ErrorKind::NotFound);
    assert_eq!(db.store.package_install("claims").await.expect_err("no install").kind(), ErrorKind::NotFound);
    assert_eq!(db.store.events(0, None, 100).await.expect("events").len(), events_before);

    db.store.apply_package(&plan(vec![created(&fresh)], vec![update(1)]), &installed).await.expect("applied");
    assert_eq!(db.store.skill(&existing.id).await.expect("patched").skill.description, "patched");
    assert_eq!(db.store.skill(&fresh.id).await.expect("created").package.map(|p| p.key), Some("claims".to_owned()));
    let kinds: Vec<String> =
        db.store.events(0, None, 100).await.expect("events").into_iter().skip(events_before).map(|e| e.kind).collect();
    assert_eq!(kinds, ["skill.registered", "skill.updated", "package.installed"]);
}

/// The same install recorded again, even by four writers at once, is journaled once.
pub(crate) async fn an_install_recorded_again_is_journaled_once(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let install = PackageInstall {
        key: "claims".to_owned(),
        version: "1.0.0".to_owned(),
        install_hash: "h1".to_owned(),
        installed_at: Utc::now(),
        installed_by: None,
    };
    let objects = vec![PackageObject { kind: "Skill".to_owned(), key: "claim.classify".to_owned() }];
    let plan = PackagePlan {
        creates: vec![],
        updates: vec![],
        install: install.clone(),
        objects: objects.clone(),
        adopt: vec![],
        settings_schema: None,
        task_types: Vec::new(),
        artifact_types: Vec::new(),
        agents: Vec::new(),
        rules: Vec::new(),
        processes: Vec::new(),
    };
    let events: Vec<Event> = (0..4).map(|_| event("package.installed", "package:claims")).collect();
    let writes = events.iter().map(|installed| db.store.apply_package(&plan, installed));
    for result in futures::future::join_all(writes).await {
        result.expect("each apply succeeds");
    }
    let again = event("package.installed", "package:claims");
    db.store.record_install(&install, &objects, &[], &again).await.expect("recorded again");
    let installs = db.store.events(0, Some("package:claims"), 100).await.expect("events");
    assert_eq!(installs.len(), 1, "one install, one event: {installs:?}");
    let newer = PackageInstall { install_hash: "h2".to_owned(), ..install.clone() };
    let changed = event("package.installed", "package:claims");
    db.store.record_install(&newer, &objects, &[], &changed).await.expect("a new hash");
    assert_eq!(db.store.events(0, Some("package:claims"), 100).await.expect("events").len(), 2);
}

pub(crate) async fn an_executor_carries_what_it_was_allowed_and_its_claims_are_journaled(db: Db) {
    use skill_store::records::ExecutorAllowance;
    let runner = principal("runner");
    db.store.create_principal(&runner, &event("principal.created", "p")).await.expect("created");
    let token = AccessToken {
        id: id(),
        principal_id: runner.id.clone(),
        token_hash: "ef".repeat(32),
        label: String::new(),
        created_at: Utc::now(),
        expires_at: None,
        revoked_at: None,
        operated_by: None,
        issued_by: None,
    };
    db.store.create_token(&token, &event("token.created", "t")).await.expect("token");
    assert_eq!(db.store.credential(&"ef".repeat(32)).await.expect("found").allowance, None, "nothing by default");
    assert_eq!(db.store.executor_allowance(&runner.id).await.expect("read"), None);
    let allowance = ExecutorAllowance {
        protocols: vec!["local".to_owned()],
        local: vec!["claims_integration.skills".to_owned()],
        ..ExecutorAllowance::default()
    };
    db.store.set_executor_allowance(&runner.id, Some(&allowance), &event("principal.allowed", "p")).await.expect("set");
    assert_eq!(db.store.credential(&"ef".repeat(32)).await.expect("found").allowance.as_ref(), Some(&allowance));
    assert_eq!(db.store.executor_allowance(&runner.id).await.expect("read"), Some(allowance));
    db.store.set_executor_allowance(&runner.id, None, &event("principal.allowed", "p")).await.expect("cleared");
    assert_eq!(db.store.credential(&"ef".repeat(32)).await.expect("found").allowance, None);
    let missing = db.store.set_executor_allowance("nobody", None, &event("principal.allowed", "p")).await;
    assert_eq!(missing.expect_err("no principal").kind(), ErrorKind::NotFound);
    // A row the allowance type cannot read is an error, never an empty allowance.
    db.raw
        .execute(&format!(
            "UPDATE principals SET executor_allowance = '{{\"protocols\": 7}}' WHERE id = '{}'",
            runner.id
        ))
        .await
        .expect("raw update");
    assert!(db.store.credential(&"ef".repeat(32)).await.is_err(), "a malformed allowance is refused");

    // Who claimed a call, from the journal.
    let mut claimed = event("skill.invocation_claimed", "skill_invocation:c-1");
    claimed.actor_id = Some(runner.id.clone());
    db.store.write_work(&[], &[claimed]).await.expect("journaled");
    assert!(db.store.claimed_by("c-1", &runner.id).await.expect("read"));
    assert!(!db.store.claimed_by("c-1", "someone").await.expect("read"));
    assert!(!db.store.claimed_by("c-2", &runner.id).await.expect("read"));
}
