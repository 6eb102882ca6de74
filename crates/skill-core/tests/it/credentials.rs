//! A credential counts as it stands when the core acts, not as it stood when the request came: a
//! claim that waited for a call and a request whose body came slowly are both refused when, in
//! the meantime, the token was revoked, the principal disabled or a grant or an allowance taken
//! away — and nothing is handed over or changed.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};
use skill_engine::{Origin, TokenRequest};

use crate::calls::{Backend, Core, core, each_backend, local, test_allowance};

const CLASSIFY: &str = "claims.skills:claim_classify";

/// A new executor `name` allowed to run the tests' skills: its token and the token's id.
async fn executor(core: &Core, name: &str) -> (String, String) {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: "executor".to_owned(),
        grants: vec!["skills.execute".to_owned()],
        label: String::new(),
        expires_at: None,
    };
    let issued = core.engine.issue_token(&request, &Origin::default()).await.expect("a token");
    let allowance: skill_api::ExecutorAllowance = serde_json::from_value(test_allowance()).expect("an allowance");
    core.engine.allow_executor(None, name, &allowance, None).await.expect("allowed");
    (issued.token, issued.record.id)
}

/// Each way a credential is taken away, done through the core as an operator would.
#[derive(Debug, Clone, Copy)]
enum Taken {
    Revoked,
    Disabled,
    GrantRemoved,
    NothingAllowed,
}

impl Taken {
    const ALL: [Taken; 4] = [Taken::Revoked, Taken::Disabled, Taken::GrantRemoved, Taken::NothingAllowed];

    async fn take(self, core: &Core, name: &str, token_id: &str) {
        let origin = Origin::default();
        match self {
            Taken::Revoked => core.engine.revoke_token(token_id, &origin).await.expect("revoked"),
            Taken::Disabled => {
                core.post(&core.admin, "/principals:disable", &json!({"principal": name, "reason": "offboarded"}))
                    .await
                    .ok(200);
            }
            Taken::GrantRemoved => {
                assert!(core.engine.revoke_grant(name, "skills.execute", &origin).await.expect("taken back"));
            }
            Taken::NothingAllowed => {
                let nothing: skill_api::ExecutorAllowance =
                    serde_json::from_value(json!({"protocols": []})).expect("an allowance");
                core.engine.allow_executor(None, name, &nothing, None).await.expect("allowed nothing");
            }
        }
    }

    /// What the waiting claim is answered.
    fn refusal(self) -> (u16, &'static str) {
        match self {
            Taken::Revoked | Taken::Disabled => (401, "invalid_token"),
            Taken::GrantRemoved => (403, "permission_denied"),
            Taken::NothingAllowed => (403, "executor_not_allowed"),
        }
    }
}

#[tokio::test]
async fn a_waiting_claim_takes_nothing_once_its_credential_is_taken_away() {
    each_backend("waiting-credential", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "waitSeconds": 10});
        for taken in Taken::ALL {
            let name = format!("late-{taken:?}").to_lowercase();
            let (token, token_id) = executor(&core, &name).await;
            let started = std::time::Instant::now();
            let (claimed, id) = tokio::join!(core.post(&token, "/skill-invocations:claim", &take), async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                taken.take(&core, &name, &token_id).await;
                let invoked = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await;
                invoked.ok(201)["id"].as_str().expect("an id").to_owned()
            });
            claimed.refused(taken.refusal().0, taken.refusal().1);
            assert!(started.elapsed() < Duration::from_secs(8), "{taken:?}: refused when woken, not at the wait's end");
            // The call was not handed over: it is still pending, and an executor that may run it
            // takes it.
            let call = core.get(&core.admin, &format!("/skill-invocations/{id}")).await.ok(200).clone();
            assert_eq!((call["status"].as_str(), call["attempt"].as_u64()), (Some("pending"), Some(0)), "{call}");
            let now = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
            assert_eq!(core.claim(now).await.ok(200)["invocation"]["id"], id.as_str(), "{taken:?}");
        }
    })
    .await;
}

/// The `host:port` of the core's server.
fn address(core: &Core) -> String {
    core.base.trim_start_matches("http://").trim_end_matches("/api/v1").to_owned()
}

/// Publishes `skill` over one connection: the header and the first `first` bytes of the body
/// at once, the rest after `meanwhile` is done. The answer's status and body.
async fn published_slowly(
    core: &Core,
    token: &str,
    key: Option<&str>,
    body: &[u8],
    first: usize,
    meanwhile: impl Future<Output = ()>,
) -> (u16, Value) {
    let address = address(core);
    let authorization = format!("Bearer {token}");
    let mut headers = vec![("Authorization", authorization.as_str()), ("Connection", "close")];
    if let Some(key) = key {
        headers.push(("Idempotency-Key", key));
    }
    let mut stream = skill_fixtures::slow::stalled_body(&address, "/api/v1/skills", &headers, body.len(), 0);
    stream.write_all(&body[..first]).expect("writes");
    tokio::time::sleep(Duration::from_millis(300)).await;
    meanwhile.await;
    let rest = body[first..].to_vec();
    let answer = tokio::task::spawn_blocking(move || {
        // A refused body may be answered before its end is sent: the rest then goes nowhere.
        let _ = stream.write_all(&rest);
        skill_fixtures::slow::read_to_close(&mut stream, Duration::from_secs(10)).expect("answered")
    })
    .await
    .expect("joined");
    let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// A body of `size` bytes publishing `name`: the skill, padded with spaces in front.
fn padded(name: &str, size: usize) -> Vec<u8> {
    let skill = serde_json::to_vec(&local(name, "none", (1, 0), &[])).expect("JSON");
    let mut body = vec![b' '; size.saturating_sub(skill.len())];
    body.extend_from_slice(&skill);
    body
}

#[tokio::test]
async fn a_slow_body_is_refused_when_its_credential_was_taken_away_meanwhile() {
    let core = core(Backend::Sqlite, "slow-credential").await;
    let origin = Origin::default();
    // A small body and a large one, each with and without an `Idempotency-Key`.
    for (size, first, key) in [(2_000, 100, None), (300_000, 200_000, None), (2_000, 100, Some("slow-1"))] {
        let name = format!("slow.publish{size}{}", if key.is_some() { "keyed" } else { "" });
        let principal = format!("publisher-{size}-{}", key.is_some());
        let request = TokenRequest {
            principal: principal.clone(),
            kind: "person".to_owned(),
            grants: vec!["org.manage".to_owned()],
            label: String::new(),
            expires_at: None,
        };
        let issued = core.engine.issue_token(&request, &origin).await.expect("a token");
        // Kept: the same slow body publishes while nothing changes.
        let body = padded(&format!("{name}.kept"), size);
        let kept_key = key.map(|key| format!("{key}-kept"));
        let kept = published_slowly(&core, &issued.token, kept_key.as_deref(), &body, first, async {}).await;
        assert_eq!(kept.0, 201, "{kept:?}");
        // Another grant given meanwhile: what the sender holds changed, so it sends again.
        let grant = async {
            assert!(core.engine.grant(&principal, "facts.read", &origin).await.expect("granted"));
        };
        let (status, answer) = published_slowly(&core, &issued.token, key, &padded(&name, size), first, grant).await;
        assert_eq!((status, answer["error"]["details"]["reason"].as_str()), (401, Some("changed")), "{answer}");
        // Revoked meanwhile.
        let revoke = async {
            core.engine.revoke_token(&issued.record.id, &origin).await.expect("revoked");
        };
        let (status, answer) = published_slowly(&core, &issued.token, None, &padded(&name, size), first, revoke).await;
        assert_eq!((status, answer["error"]["code"].as_str()), (401, Some("invalid_token")), "{size}: {answer}");
        core.get(&core.admin, &format!("/skills/{name}@1")).await.refused(404, "not_found");
    }
    // A token that never held sends a large body: refused as before, without the core reading it.
    let body = padded("never.published", 1_000_000);
    let (status, answer) = published_slowly(&core, "skp_nothing", None, &body, 500_000, async {}).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (401, Some("invalid_token")), "{answer}");
}
