//! Contracts built to burn the core's CPU are refused early and in bounded time, and the core
//! keeps answering `/healthz` while it refuses them.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::api::api;

/// A skill whose input schema is `inputs`.
fn skill(name: &str, inputs: Value) -> Value {
    json!({"name": name, "version": "1", "sideEffects": "none", "riskLevel": "low",
           "contract": {"inputs": inputs, "outputs": {"type": "object"},
                        "implementation": {"protocol": "local", "entrypoint": "claims.skills:x"}}})
}

/// `$defs` d0 → d1 → … → d{links} by `$ref`, in place.
fn chain(links: usize) -> Value {
    let mut defs = Map::new();
    for n in 0..links {
        defs.insert(format!("d{n}"), json!({"$ref": format!("#/$defs/d{}", n + 1)}));
    }
    defs.insert(format!("d{links}"), json!({"type": "object"}));
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heavy_schemas_are_refused_early_while_healthz_answers() {
    let api = api().await;
    let client = reqwest::Client::new();
    let refs = chain(14_000);
    let big = json!({"type": "object", "description": "x".repeat(1_700_000)});
    assert!(refs.to_string().len() < 512 * 1024, "the chain fits the size limit, so only its bounds refuse it");

    let health = {
        let client = client.clone();
        let url = format!("{}/healthz", api.base);
        tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            for _ in 0..40 {
                let started = Instant::now();
                let answer = client.get(&url).send().await.expect("healthz answers");
                assert_eq!(answer.status(), 200);
                slowest = slowest.max(started.elapsed());
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            slowest
        })
    };
    let publish = |name: &str, inputs: &Value| {
        let request = client
            .post(format!("{}/api/v1/skills", api.base))
            .bearer_auth(&api.admin)
            .json(&skill(name, inputs.clone()))
            .send();
        async move {
            let answer = request.await.expect("answers");
            (answer.status().as_u16(), answer.json::<Value>().await.expect("JSON"))
        }
    };
    let started = Instant::now();
    let (a, b, c, d) = tokio::join!(
        publish("heavy.refs.a", &refs),
        publish("heavy.refs.b", &refs),
        publish("heavy.refs.c", &refs),
        publish("heavy.big", &big),
    );
    let answers = [a, b, c, d];
    let took = started.elapsed();
    for (status, body) in &answers[..3] {
        assert_eq!(*status, 422, "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("14001 `$ref`s"), "{message}");
    }
    let (status, body) = &answers[3];
    assert_eq!((*status, body["error"]["details"]["field"].as_str()), (422, Some("contract")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("bytes"), "{body}");
    // Liveness, not speed: before the bounds these took 1.3 s to 19 s each and stalled /healthz.
    assert!(took < Duration::from_secs(10), "refused in bounded time: {took:?}");
    let slowest = health.await.expect("joined");
    assert!(slowest < Duration::from_secs(2), "/healthz kept answering: slowest {slowest:?}");
}
