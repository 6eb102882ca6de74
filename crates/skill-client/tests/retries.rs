//! When the client repeats a call, against a stub core on 127.0.0.1 that answers as it is told:
//! only retryable answers are retried, a bounded number of times, and a write that takes an
//! `Idempotency-Key` sends the same key on every try.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::any;
use serde_json::{Value, json};
use skill_api::operations::{Method, Op, Operation};
use skill_client::{Call, Client, ClientError};

/// What the stub answers, in order; the last answer repeats.
#[derive(Clone)]
enum Reply {
    Envelope(u16, bool),
    Plain(u16),
    Ok,
}

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Option<String>>>>);

async fn stub(replies: Vec<Reply>) -> (String, Seen) {
    let seen = Seen::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/api/v1/{*rest}",
        any(move |headers: HeaderMap| {
            let log = log.clone();
            let replies = replies.clone();
            async move {
                let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
                let tries = {
                    let mut seen = log.0.lock().expect("the log");
                    seen.push(key);
                    seen.len()
                };
                match replies[(tries - 1).min(replies.len() - 1)] {
                    Reply::Envelope(status, retryable) => (
                        StatusCode::from_u16(status).expect("a status"),
                        axum::Json(json!({"error": {"code": "busy", "message": "m", "retryable": retryable,
                                                     "details": null, "requestId": "r1"}})),
                    )
                        .into_response(),
                    Reply::Plain(status) => {
                        (StatusCode::from_u16(status).expect("a status"), "bad gateway").into_response()
                    }
                    Reply::Ok => axum::Json(json!({"ok": true})).into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

const KEYED_WRITE: Operation = Operation {
    op: Op::RecordInstall,
    method: Method::Post,
    path: "/things",
    summary: "",
    permission: "",
    request: None,
    query: None,
    success: (200, None),
    errors: &[],
    idempotency_key: true,
};

const PLAIN_WRITE: Operation = Operation { idempotency_key: false, ..KEYED_WRITE };
const READ: Operation = Operation { method: Method::Get, idempotency_key: false, ..KEYED_WRITE };

fn client(base: &str, retries: u32) -> Client {
    Client::new(base, "t").expect("a client").with_retries(retries).with_backoff(Duration::from_millis(1))
}

fn seen(seen: &Seen) -> Vec<Option<String>> {
    seen.0.lock().expect("the log").clone()
}

#[tokio::test]
async fn a_retryable_answer_is_retried_with_the_same_key() {
    let (base, log) = stub(vec![Reply::Envelope(503, true), Reply::Envelope(503, true), Reply::Ok]).await;
    let answer = client(&base, 2).send::<Value>(Call::new(&KEYED_WRITE)).await.expect("the third try succeeds");
    assert_eq!(answer.body, json!({"ok": true}));
    let keys = seen(&log);
    assert_eq!(keys.len(), 3);
    assert!(keys[0].as_ref().is_some_and(|key| !key.is_empty()), "a key is sent");
    assert!(keys.iter().all(|key| *key == keys[0]), "one key for every try: {keys:?}");
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_answer_is_the_error() {
    let (base, log) = stub(vec![Reply::Envelope(503, true)]).await;
    let error = client(&base, 2).send::<Value>(Call::new(&KEYED_WRITE).key("mine")).await.expect_err("always busy");
    let Some(api) = error.api() else { panic!("an envelope: {error}") };
    assert_eq!((api.status, api.code(), api.retryable(), api.request_id()), (503, "busy", true, Some("r1")));
    assert_eq!(seen(&log), vec![Some("mine".to_owned()); 3], "the caller's key, three tries");
}

#[tokio::test]
async fn a_refusal_is_not_retried() {
    let (base, log) = stub(vec![Reply::Envelope(409, false), Reply::Ok]).await;
    let error = client(&base, 5).send::<Value>(Call::new(&KEYED_WRITE)).await.expect_err("refused");
    assert_eq!(error.code(), Some("busy"));
    assert_eq!(seen(&log).len(), 1);
}

#[tokio::test]
async fn a_gateway_error_is_retried_only_where_repeating_is_safe() {
    let (base, log) = stub(vec![Reply::Plain(502), Reply::Ok]).await;
    let error = client(&base, 3).send::<Value>(Call::new(&PLAIN_WRITE)).await.expect_err("a write without a key");
    assert!(matches!(error, ClientError::Unexpected { status: 502, .. }), "{error}");
    assert_eq!(seen(&log), vec![None], "no key, one try");

    let (base, log) = stub(vec![Reply::Plain(502), Reply::Ok]).await;
    client(&base, 3).send::<Value>(Call::new(&READ)).await.expect("a read is tried again");
    assert_eq!(seen(&log).len(), 2);
}
