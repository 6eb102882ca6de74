//! The typed client (`skill-client`) against a real core: every operation of the table, the
//! envelope as a typed error, and no route of the table left unserved.

use serde_json::json;
use skill_api::operations::OPERATIONS;
use skill_api::{
    ApprovalStatus, AssignRequest, CallStatus, CancelRequest, ClaimRequest, CompleteRequest, EventsQuery, FailRequest,
    HeartbeatRequest, InvocationQuery, InvokeRequest, ListQuery, ObjectRef, PackageRef, PageQuery, PatchRequest,
    PublishRequest, RecordRequest, ReportedError, RunStatus, SessionRequest, SessionState, SkillKind, SkillStatus,
    TaskStatus,
};
use skill_client::{Call, Client, ClientError};

use crate::api::{api, leaf, token};

#[tokio::test]
async fn every_operation_through_the_typed_client() {
    let api = api().await;
    let core = Client::new(&api.base, api.admin.clone()).expect("a client");
    let request: PublishRequest = serde_json::from_value(leaf("claim.send_reply", "1")).expect("a request");
    let published = core.publish(&request).await.expect("published");
    assert_eq!((published.kind, published.status, published.row_version), (SkillKind::Leaf, SkillStatus::Active, 1));
    let composite = PublishRequest {
        name: "claims.desk".into(),
        version: Some("1".into()),
        includes: Some(json!(["claim.send_reply@1"])),
        ..PublishRequest::default()
    };
    core.publish(&composite).await.expect("a composite");

    let page = core.skills(&ListQuery { name: Some("claim.send_reply".into()), ..ListQuery::default() }).await;
    assert_eq!(page.expect("a page").items.len(), 1);
    assert_eq!(core.skill("claim.send_reply@1").await.expect("read").id, published.id);
    assert!(core.find_skill("claim.send_reply@9").await.expect("an answer").is_none());
    let definition = core.definition("claims.desk@1").await.expect("a definition");
    assert_eq!(definition.resolved_tools().len(), 1);
    let metadata = core.metadata("claims.desk@1").await.expect("metadata");
    assert!(metadata.metadata.writes() && metadata.kind == SkillKind::Composite);
    let patch = PatchRequest { description: Some("Sends it.".into()), ..PatchRequest::default() };
    let patched = core.patch_skill(&published.id, 1, &patch).await.expect("patched");
    assert_eq!((patched.row_version, patched.description.as_str()), (2, "Sends it."));
    let catalogue = core.catalogue(&PageQuery { limit: Some(1), cursor: None }).await.expect("a catalogue");
    assert_eq!(catalogue.items.len(), 1);
    let next = core.catalogue(&PageQuery { limit: Some(1), cursor: catalogue.next_cursor }).await.expect("page 2");
    assert_eq!(next.items[0].metadata.name().as_str(), "claims.desk");

    let bot_token = token(&api.engine, "bot", &["skills.invoke"]).await;
    let bot = api.engine.authenticate(&bot_token).await.expect("the bot").id().to_owned();
    let assign = AssignRequest { skill_id: "claim.send_reply@1".into(), metadata: None, read_only: None };
    assert!(core.assign(&bot, &assign).await.expect("assigned").created);
    assert!(!core.assign(&bot, &assign).await.expect("again").created, "a repeat assigns nothing new");
    let mine = Client::new(&api.base, bot_token).expect("the bot's client");
    assert_eq!(mine.assigned(&bot).await.expect("its own")[0].name, "claim.send_reply");
    assert!(core.revoke(&bot, "claim.send_reply@1").await.expect("revoked").revoked);
    assert!(mine.assigned(&bot).await.expect("none").is_empty());

    assert!(core.install("claims").await.expect("an answer").is_none());
    let record = RecordRequest {
        package: PackageRef { key: "claims".into(), version: "1.0.0".into() },
        install_hash: "abababababababababababababababababababababababababababababababab".into(),
        objects: vec![ObjectRef { kind: "Skill".into(), key: "claim.send_reply".into() }],
        adopt: vec![],
    };
    assert_eq!(core.record_install(&record).await.expect("recorded").objects, record.objects);
    assert_eq!(
        core.install("claims").await.expect("read").expect("installed").install_hash,
        "abababababababababababababababababababababababababababababababab"
    );
    let subject = format!("skill:{}", published.id);
    let events = core.events(&EventsQuery { subject: Some(subject), ..EventsQuery::default() }).await;
    let kinds: Vec<String> = events.expect("events").into_iter().map(|event| event.kind).collect();
    assert_eq!(kinds, ["skill.registered", "skill.updated"]);

    // Calls: invoke, claim with a session, heartbeat, complete, read, list, cancel, sessions.
    let classify = json!({"name": "claim.classify", "version": "1", "description": "Labels a claim.",
        "sideEffects": "none", "riskLevel": "low",
        "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"},
                     "implementation": {"protocol": "local", "entrypoint": "claims.skills:classify"}}});
    core.publish(&serde_json::from_value(classify).expect("a request")).await.expect("published");
    let caller = Client::new(&api.base, token(&api.engine, "caller", &["skills.invoke"]).await).expect("a client");
    let runner = crate::api::executor_token(
        &api.engine,
        "runner",
        &["skills.execute"],
        json!({"protocols": ["local"], "local": ["claims.skills"]}),
    )
    .await;
    let executor = Client::new(&api.base, runner).expect("a client");
    let invoke = InvokeRequest { idempotency_key: Some("k".into()), ..InvokeRequest::default() };
    let (call, created) = caller.invoke("claim.classify@1", &invoke).await.expect("invoked");
    assert!(created);
    assert!(!caller.invoke("claim.classify@1", &invoke).await.expect("repeated").1, "a repeat creates nothing");
    let session = executor.open_session(&SessionRequest::default()).await.expect("a session");
    let claim = ClaimRequest {
        protocols: vec!["local".into()],
        local_entrypoints: vec!["claims.skills:classify".into()],
        session_id: Some(session.id.clone()),
        ..ClaimRequest::default()
    };
    let claimed = executor.claim(&claim).await.expect("an answer").expect("a call");
    assert_eq!(claimed.invocation.id, call.id);
    assert!(executor.claim(&claim).await.expect("an answer").is_none(), "204: nothing else");
    let beat = HeartbeatRequest { fencing_token: 1, lease_seconds: None, session_id: Some(session.id.clone()) };
    executor.heartbeat(&call.id, &beat).await.expect("renewed");
    let output = json!({"label": "refund"}).as_object().cloned().expect("an object");
    let complete = CompleteRequest { fencing_token: 1, output, cost: None, session_id: Some(session.id.clone()) };
    assert_eq!(executor.complete(&call.id, &complete).await.expect("completed").status, CallStatus::Succeeded);
    assert_eq!(caller.invocation(&call.id).await.expect("read").output, Some(json!({"label": "refund"})));
    assert_eq!(caller.invocations(&InvocationQuery::default()).await.expect("a page").items.len(), 1);
    let terminal = caller.cancel(&call.id, &CancelRequest::default()).await.expect_err("finished");
    assert_eq!(terminal.code(), Some("invocation_terminal"));
    let failed = FailRequest {
        fencing_token: 1,
        error: ReportedError { code: "x".into(), message: String::new(), retryable: false, details: None },
        session_id: None,
    };
    assert_eq!(executor.fail(&call.id, &failed).await.expect_err("finished").code(), Some("stale_invocation_lease"));
    assert_eq!(
        executor.keep_session(&session.id, &SessionRequest::default()).await.expect("kept").status,
        SessionState::Active
    );
    assert_eq!(executor.close_session(&session.id).await.expect("closed").status, SessionState::Closed);

    assert_eq!(core.openapi().await.expect("the document"), skill_api::openapi::document());
    assert_eq!(core.health().await.expect("health").status, "ok");
    assert_eq!(core.ready().await.expect("ready").status, "ready");
}

#[tokio::test]
async fn refusals_arrive_as_typed_errors_with_the_request_id() {
    let api = api().await;
    let core = Client::new(&api.base, api.admin.clone()).expect("a client");
    let request: PublishRequest = serde_json::from_value(leaf("claim.send_reply", "1")).expect("a request");
    core.publish(&request).await.expect("published");
    let Err(ClientError::Api(error)) = core.publish(&request).await else { panic!("a second publish is refused") };
    assert_eq!((error.status, error.code(), error.retryable()), (409, "skill_exists", false));
    assert!(error.request_id().is_some_and(|id| !id.is_empty()), "{error}");
    assert_eq!(error.body.detail_str("name"), Some("claim.send_reply"));

    let stranger = Client::new(&api.base, "skp_0").expect("a client");
    let refused = stranger.skill("claim.send_reply@1").await.expect_err("an unknown token");
    assert_eq!((refused.code(), refused.retryable()), (Some("invalid_token"), false));
    let nobody = Client::new("http://127.0.0.1:9", "t").expect("a client").with_retries(0);
    assert!(matches!(nobody.health().await, Err(ClientError::Unreachable { .. })));
}

/// A request of every operation reaches a handler: whatever the handler answers, it is not the
/// router's fallback (`details.route`) and not a method the path does not serve (405).
#[tokio::test]
async fn every_operation_of_the_table_is_served() {
    let api = api().await;
    let core = Client::new(&api.base, api.admin.clone()).expect("a client").with_retries(0);
    for operation in OPERATIONS {
        let parameters: Vec<&str> = operation.parameters().map(|_| "x@1").collect();
        let mut call = Call::new(operation).parameters(&parameters);
        if operation.request.is_some() {
            call = call.body(&json!({}));
        }
        match core.send::<serde_json::Value>(call).await {
            Ok(_) => {}
            Err(ClientError::Api(error)) => {
                assert!(error.body.details.get("route").is_none(), "{operation:?} is not routed: {error}");
            }
            Err(other) => panic!("{operation:?}: {other}"),
        }
    }
}

#[tokio::test]
async fn work_through_the_typed_client() {
    use skill_api::{
        ApprovalRequest, CloseTaskRequest, CommentRequest, DecideRequest, EndRunRequest, RunRequest, TaskQuery,
        TaskRequest, TaskTypeQuery, TaskTypeRequest, WithdrawRequest,
    };
    let api = api().await;
    let admin = Client::new(&api.base, api.admin.clone()).expect("a client");
    api.engine.create_workspace("desk", "Desk", &skill_engine::Origin::default()).await.expect("workspace");
    let clerk = Client::new(&api.base, token(&api.engine, "clerk", &["tasks.write@desk"]).await).expect("a client");
    let decider =
        Client::new(&api.base, token(&api.engine, "decider", &["approvals.decide@desk"]).await).expect("a client");
    let request = TaskTypeRequest { key: "plain".into(), version: "1".into(), ..TaskTypeRequest::default() };
    let published = admin.publish_task_type(&request).await.expect("a type");
    let again = admin.publish_task_type(&request).await.expect_err("published already");
    assert_eq!(again.code(), Some("task_type_exists"));
    assert_eq!(clerk.task_type("plain@1").await.expect("read").id, published.id);
    assert_eq!(clerk.task_types(&TaskTypeQuery::default()).await.expect("a page").items.len(), 1);

    let task = TaskRequest {
        workspace: "desk".into(),
        task_type: "plain".into(),
        title: "T".into(),
        ..TaskRequest::default()
    };
    let task = clerk.create_task(&task).await.expect("a task");
    assert_eq!(decider.task(&task.id).await.expect("read").title, "T");
    assert_eq!(clerk.tasks(&TaskQuery::default()).await.expect("a page").items.len(), 1);
    let run = clerk.start_run(&RunRequest { task_id: task.id.clone() }).await.expect("a run");
    assert_eq!(decider.run(&run.id).await.expect("read").status, RunStatus::Running);
    let ended = EndRunRequest { status: "succeeded".into(), result: None, error: None };
    assert_eq!(clerk.end_run(&run.id, &ended).await.expect("ended").status, RunStatus::Succeeded);
    let approval = ApprovalRequest { task_id: task.id.clone(), gate: None, comment: Some("ok?".into()), call: None };
    let approval = clerk.request_approval(&approval).await.expect("asked");
    let decision = DecideRequest { outcome: "approved".into(), comment: Some("yes".into()) };
    assert_eq!(
        clerk.decide(&approval.id, &decision).await.expect_err("not a decider").code(),
        Some("permission_denied")
    );
    assert_eq!(decider.decide(&approval.id, &decision).await.expect("decided").status, ApprovalStatus::Approved);
    assert_eq!(decider.approval(&approval.id).await.expect("read").comment, "yes");
    assert_eq!(
        clerk.withdraw(&approval.id, &WithdrawRequest::default()).await.expect("withdrawn").status,
        ApprovalStatus::Withdrawn
    );
    assert_eq!(clerk.approvals(&task.id).await.expect("approvals").len(), 1);
    clerk.comment(&CommentRequest { task_id: task.id.clone(), body: "done".into() }).await.expect("a comment");
    assert_eq!(decider.comments(&task.id).await.expect("comments")[0].body, "done");
    let closed = clerk.close_task(&task.id, &CloseTaskRequest { status: "done".into(), comment: None }).await;
    assert_eq!(closed.expect("closed").status, TaskStatus::Done);
}
