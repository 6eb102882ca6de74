//! Artifacts through a real server, on SQLite and on PostgreSQL, content in a folder: stored as
//! text or base64, read back byte for byte with its media type and hash, visible in their
//! workspace, and to an executor only through a call it runs.

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use skill_engine::Origin;

use std::sync::Arc;

use skill_sdk::core::CoreAccess;
use skill_sdk::core::http::HttpCore;

use crate::api::token;
use crate::calls::{Backend, Core, core_with, each_backend, local};

/// A blob store in a new bucket of the test command's S3-compatible server.
async fn s3(label: &str) -> Arc<dyn skill_store::BlobStore> {
    let server = std::env::var("SKILL_TEST_S3_URL")
        .expect("SKILL_TEST_S3_URL names an S3-compatible server; `cargo xtask test -p skill-core` starts one");
    let bucket = format!("{}-{}", label.replace('_', "-"), std::process::id());
    let made = reqwest::Client::new().put(format!("{server}/{bucket}")).send().await.expect("the server answers");
    assert!(made.status().is_success(), "creating the bucket: {}", made.status());
    let options = skill_blobs::S3Options {
        url: format!("s3://{bucket}/artifacts"),
        endpoint: Some(server),
        region: Some("us-east-1".to_owned()),
        access_key_id: Some("test".to_owned()),
        secret_access_key: Some("test".to_owned()),
    };
    Arc::new(skill_blobs::S3Blobs::new(&options).expect("an S3 store"))
}

/// `test` on SQLite and PostgreSQL, each with content in a folder and in the S3-compatible store.
async fn each_store<F, Fut>(label: &str, test: F)
where
    F: Fn(Core) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    each_backend(label, &test).await;
    let sqlite = core_with(Backend::Sqlite, &format!("{label}-s3"), Some(s3(&format!("{label}-sqlite")).await)).await;
    let postgres = core_with(Backend::Postgres, &format!("{label}_s3"), Some(s3(&format!("{label}-pg")).await)).await;
    tokio::join!(test(sqlite), test(postgres));
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What reading artifacts through the SDK's core access does, whichever core answers: the
/// content whole with its media type; an unknown id is `artifact_not_found`. Run against the
/// SDK's `FakeCore` and against this core through the SDK's HTTP client.
async fn sdk_artifact_behaviour(core: &dyn CoreAccess, id: &str, task: Option<&str>, content: &[u8], media: &str) {
    let timeout = std::time::Duration::from_secs(10);
    let read = core.read_artifact(id, task, timeout).await.expect("the artifact");
    assert_eq!((read.data.as_slice(), read.media_type.as_deref()), (content, Some(media)));
    if let Some(hash) = &read.sha256 {
        assert_eq!(*hash, hex(content), "a hash, when given, is the content's");
    }
    let missing = core.read_artifact("no-such-artifact", task, timeout).await.expect_err("unknown");
    assert_eq!((missing.code(), missing.retryable()), ("artifact_not_found", false));
}

#[tokio::test]
async fn the_fake_core_reads_artifacts_as_the_core_does() {
    let fake = skill_sdk::testing::FakeCore::new();
    fake.put_artifact("a-1", "claim,amount\n", Some("text/csv"));
    sdk_artifact_behaviour(&fake, "a-1", Some("t-1"), b"claim,amount\n", "text/csv").await;
}

/// `GET path` as raw bytes: status, content type, hash header, body.
async fn raw(core: &Core, token: &str, path: &str) -> (u16, String, String, Vec<u8>) {
    let answer = core.http.get(format!("{}{path}", core.base)).bearer_auth(token).send().await.expect("answers");
    let header = |name: &str| answer.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (status, media, hash) = (answer.status().as_u16(), header("content-type"), header("x-content-sha256"));
    (status, media, hash, answer.bytes().await.expect("a body").to_vec())
}

/// The workspaces `desk` and `other`, a writer in the first and an outsider in the second, and a
/// task in `desk`: `(writer, outsider, task)`.
async fn desk(core: &Core, label: &str) -> (String, String, String) {
    for key in ["desk", "other"] {
        core.engine.create_workspace(key, key, &Origin::default()).await.expect("workspace");
    }
    let writer = token(&core.engine, &format!("writer-{label}"), &["skills.invoke", "tasks.write@desk"]).await;
    let outsider = token(&core.engine, &format!("outsider-{label}"), &["tasks.write@other"]).await;
    core.post(&core.admin, "/task-types", &json!({"key": "plain", "version": "1"})).await.ok(201);
    let task =
        core.post(&writer, "/tasks", &json!({"workspace": "desk", "taskType": "plain", "title": "A claim"})).await;
    let task = task.ok(201)["id"].as_str().expect("id").to_owned();
    (writer, outsider, task)
}

/// A media type is kept, listed and served as its essence in lower case with only its
/// `charset` (a token, in lower case); one that does not parse, or a `charset` that is not a
/// token, is refused naming the field. An artifact type's media types are kept the same way and
/// an artifact's is compared with them in that form.
#[tokio::test]
async fn a_media_type_is_kept_as_its_essence_and_charset() {
    let core = core_with(Backend::Sqlite, "artifact-media", None).await;
    let (writer, _, task) = desk(&core, "media").await;
    let body = |kind: &str, media: &str| json!({"taskId": task, "type": kind, "name": "x", "mediaType": media, "text": "<p>hi</p>"});
    let made = core.post(&writer, "/artifacts", &body("page", "Text/HTML; charset=UTF-8; foo=bar")).await;
    let made = made.ok(201).clone();
    assert_eq!(made["mediaType"], "text/html; charset=utf-8", "{made}");
    let id = made["id"].as_str().expect("id").to_owned();
    let (status, media, _, _) = raw(&core, &writer, &format!("/artifacts/{id}/content")).await;
    assert_eq!((status, media.as_str()), (200, "text/html; charset=utf-8"));
    assert_eq!(core.get(&writer, &format!("/artifacts/{id}")).await.ok(200)["mediaType"], "text/html; charset=utf-8");
    let quoted = core.post(&writer, "/artifacts", &body("page", "text/plain;CHARSET=\"ISO-8859-1\"")).await;
    assert_eq!(quoted.ok(201)["mediaType"], "text/plain; charset=iso-8859-1");
    for media in [
        "plain",
        "text/html; charset=\"utf 8\"",
        "text/html; charset=\"a\\\"b\"",
        "text/html; charset=a; charset=b",
        "text/html\"><script>alert(1)</script>",
        "text/html, text/plain",
        "text/html;\tcharset=utf-8\u{1}",
    ] {
        let refused = core.post(&writer, "/artifacts", &body("page", media)).await;
        let error = &refused.refused(422, "invalid_media_type").body["error"];
        assert_eq!(error["details"]["field"], "mediaType", "{media}: {error}");
        assert!(error["message"].as_str().is_some_and(|m| m.starts_with("mediaType")), "{media}: {error}");
    }
    // An artifact type's media types are kept as artifacts' are, and compared in that form.
    let page = json!({"key": "page", "version": "1", "mediaTypes": ["TEXT/HTML;Charset=UTF-8;level=1"]});
    let published = core.post(&core.admin, "/artifact-types", &page).await.ok(201).clone();
    assert_eq!(published["mediaTypes"], json!(["text/html; charset=utf-8"]), "{published}");
    core.post(&writer, "/artifacts", &body("page", "text/html;charset=\"utf-8\";q=x")).await.ok(201);
    core.post(&writer, "/artifacts", &body("page", "text/html")).await.refused(422, "media_type_not_allowed");
    let bad = json!({"key": "bad", "version": "1", "mediaTypes": ["text/csv", "text/html; charset=\"a b\""]});
    let refused = core.post(&core.admin, "/artifact-types", &bad).await;
    assert_eq!(refused.refused(422, "invalid_artifact_type").body["error"]["details"]["field"], "mediaTypes[1]");
    let listed = core.get(&writer, &format!("/artifacts?task={task}")).await.ok(200).clone();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(3), "nothing refused was written: {listed}");
}

#[tokio::test]
async fn artifacts_are_stored_whole_and_read_by_who_may() {
    each_store("artifacts", |core| async move {
        let (writer, outsider, task) = desk(&core, "artifacts").await;
        // Text, with metadata.
        let csv = "claim,amount\nC-1,120\nC-2,80\n";
        let body = json!({"taskId": task, "type": "claim_rows", "name": "rows.csv", "mediaType": "text/csv",
                          "metadata": {"rows": 2}, "text": csv});
        let made = core.post(&writer, "/artifacts", &body).await.ok(201).clone();
        assert_eq!((made["sizeBytes"].clone(), made["sha256"].clone()), (json!(csv.len()), json!(hex(csv.as_bytes()))));
        assert_eq!(made["taskId"], task);
        let id = made["id"].as_str().expect("id").to_owned();
        let (status, media, hash, bytes) = raw(&core, &writer, &format!("/artifacts/{id}/content")).await;
        assert_eq!((status, media.as_str(), hash.as_str(), bytes.as_slice()), (200, "text/csv", hex(csv.as_bytes()).as_str(), csv.as_bytes()));
        assert_eq!(core.get(&writer, &format!("/artifacts/{id}")).await.ok(200)["metadata"], json!({"rows": 2}));
        let listed = core.get(&writer, &format!("/artifacts?task={task}")).await.ok(200).clone();
        assert_eq!(listed["items"][0]["id"], id.as_str());
        // Bytes that are not text, as base64.
        let binary: Vec<u8> = (0..=255u8).chain([0, 0, 255]).collect();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&binary);
        let body = json!({"workspace": "desk", "type": "scan", "name": "scan.bin", "mediaType": "application/octet-stream",
                          "base64": encoded});
        let scan = core.post(&writer, "/artifacts", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
        assert_eq!(raw(&core, &writer, &format!("/artifacts/{scan}/content")).await.3, binary);

        // Content is data in a browser: never sniffed, never a page that runs; what a browser
        // would run is a download.
        for (media, attachment) in [("text/html", true), ("image/svg+xml", true), ("text/plain", false)] {
            let body = json!({"workspace": "desk", "type": "page", "name": "x", "mediaType": media,
                              "text": "<script>alert(document.cookie)</script>"});
            let page = core.post(&writer, "/artifacts", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
            let answer = core
                .http
                .get(format!("{}/artifacts/{page}/content", core.base))
                .bearer_auth(&writer)
                .send()
                .await
                .expect("answers");
            let header = |name: &str| answer.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"), "{media}");
            assert!(header("content-security-policy").is_some_and(|csp| csp.starts_with("sandbox")), "{media}");
            assert_eq!(header("content-disposition").as_deref(), attachment.then_some("attachment"), "{media}");
        }

        // Another workspace's principal: as if it were not there.
        for path in [format!("/artifacts/{id}"), format!("/artifacts/{id}/content")] {
            core.get(&outsider, &path).await.refused(404, "artifact_not_found");
        }
        core.get(&outsider, &format!("/artifacts?task={task}")).await.refused(404, "not_found");
        core.get(&writer, "/artifacts/no-such-id").await.refused(404, "artifact_not_found");
        // Bad input changes nothing.
        let base = json!({"workspace": "desk", "type": "x", "name": "x", "mediaType": "text/plain"});
        let with = |extra: Value| {
            let mut body = base.clone();
            body.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
            body
        };
        for (extra, field) in [
            (json!({}), "text"),
            (json!({"text": "a", "base64": "YQ=="}), "text"),
            (json!({"base64": "not base64!"}), "base64"),
            (json!({"text": "a", "type": "Bad Type"}), "type"),
        ] {
            let refused = core.post(&writer, "/artifacts", &with(extra)).await;
            assert_eq!(refused.refused(400, "invalid_request").body["error"]["details"]["field"], field);
        }
        core.post(&outsider, "/artifacts", &with(json!({"text": "a"}))).await.refused(403, "permission_denied");
        let big = "x".repeat(skill_api::MAX_ARTIFACT_BYTES + 1);
        core.post(&writer, "/artifacts", &with(json!({"text": big}))).await.refused(413, "artifact_too_large");
        assert_eq!(core.get(&writer, &format!("/artifacts?task={task}")).await.ok(200)["items"].as_array().map(Vec::len), Some(1));

        // An executor reads what the call it runs may see: only with the call's task, while it runs.
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let path = format!("/artifacts/{id}/content");
        core.get(&core.executor, &path).await.refused(404, "artifact_not_found");
        let call = core.invoke(&writer, "claim.classify@1", json!({"inputs": {"claim": "c"}, "taskId": task})).await;
        let call = call.ok(201)["id"].as_str().expect("id").to_owned();
        let claim = json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"], "invocationId": call});
        core.claim(claim).await.ok(200);
        let (status, _, _, bytes) = raw(&core, &core.executor, &format!("{path}?forTask={task}")).await;
        assert_eq!((status, bytes.as_slice()), (200, csv.as_bytes()));
        // … the artifacts of that task only: another of the same workspace, which the call's
        // authority may read, is not the task's.
        core.get(&core.executor, &format!("/artifacts/{scan}/content?forTask={task}"))
            .await
            .refused(404, "artifact_not_found");
        // The SDK's client, as a skill the executor runs reads it: the same behaviour as FakeCore.
        let root = core.base.trim_end_matches("/api/v1").to_owned();
        let http = HttpCore::new(&root, Some(core.executor.clone())).expect("the SDK's core client");
        sdk_artifact_behaviour(&http, &id, Some(&task), csv.as_bytes(), "text/csv").await;
        core.get(&core.executor, &path).await.refused(404, "artifact_not_found");
        core.act(&core.executor, &call, "complete", json!({"fencingToken": 1, "output": {"label": "x"}})).await.ok(200);
        core.get(&core.executor, &format!("{path}?forTask={task}")).await.refused(404, "artifact_not_found");
        // Every artifact left its event.
        let events = core.engine.store().events(0, Some(&format!("artifact:{id}")), 10).await.expect("events");
        assert_eq!(events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["artifact.created"]);
    })
    .await;
}

#[tokio::test]
async fn a_task_bound_call_leaves_its_result_as_an_artifact() {
    each_store("results", |core| async move {
        let (writer, outsider, task) = desk(&core, "results").await;
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let run =
            core.post(&writer, "/runs", &json!({"taskId": task})).await.ok(201)["id"].as_str().expect("id").to_owned();
        let call = core.invoke(&writer, "claim.classify@1", json!({"inputs": {"claim": "c"}, "runId": run})).await;
        let call = call.ok(201)["id"].as_str().expect("id").to_owned();
        let claim =
            json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"], "invocationId": call});
        core.claim(claim).await.ok(200);
        let done = core
            .act(&core.executor, &call, "complete", json!({"fencingToken": 1, "output": {"label": "delivery"}}))
            .await;
        let done = done.ok(200).clone();
        let artifact_id = done["artifactId"].as_str().expect("the result's artifact").to_owned();
        let artifact = core.get(&writer, &format!("/artifacts/{artifact_id}")).await.ok(200).clone();
        let writer_id = done["authorityPrincipalId"].clone();
        assert_eq!(
            (artifact["type"].clone(), artifact["name"].clone(), artifact["taskId"].clone(), artifact["runId"].clone()),
            (json!("skill_result"), json!("claim.classify@1"), json!(task), json!(run))
        );
        assert_eq!(artifact["authorPrincipalId"], writer_id, "authored by the call's authority, not its executor");
        assert_eq!(artifact["skillInvocationId"], call);
        assert_eq!(artifact["metadata"]["invocationId"], call);
        let (status, media, _, bytes) = raw(&core, &writer, &format!("/artifacts/{artifact_id}/content")).await;
        assert_eq!((status, media.as_str()), (200, "application/json"));
        let content: Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(
            content,
            json!({"invocationId": call, "skill": "claim.classify", "version": "1", "attempt": 1,
                                   "output": {"label": "delivery"}})
        );
        core.get(&outsider, &format!("/artifacts/{artifact_id}")).await.refused(404, "artifact_not_found");
        // The events: the call's success names the artifact, the artifact names the call.
        let succeeded =
            core.engine.store().events(0, Some(&format!("skill_invocation:{call}")), 10).await.expect("events");
        let last = succeeded.last().expect("an event");
        assert_eq!(
            (last.kind.as_str(), last.data["artifactId"].clone()),
            ("skill.invocation_succeeded", json!(artifact_id))
        );
        let created =
            core.engine.store().events(0, Some(&format!("artifact:{artifact_id}")), 10).await.expect("events");
        assert_eq!(created[0].data["skillInvocationId"], call);
        // A call without a task leaves none.
        let free = core.invoke(&writer, "claim.classify@1", json!({"inputs": {"claim": "d"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let claim =
            json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"], "invocationId": free});
        core.claim(claim).await.ok(200);
        let done =
            core.act(&core.executor, &free, "complete", json!({"fencingToken": 1, "output": {"label": "x"}})).await;
        assert_eq!(done.ok(200)["artifactId"], Value::Null);
    })
    .await;
}
