//! A claim takes several calls at once (`maxCalls`): the oldest first, each with its own lease
//! and fencing token, the first as the answer and the others in its `more`.

use serde_json::{Value, json};

use crate::calls::{each_backend, local};

const CLASSIFY: &str = "claims.skills:claim_classify";

#[tokio::test]
async fn a_claim_takes_as_many_calls_as_it_asks_for() {
    each_backend("claim-many", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let mut queued = Vec::new();
        for n in 0..5 {
            let invoked = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": format!("c-{n}")}}));
            queued.push(invoked.await.ok(201)["id"].as_str().expect("an id").to_owned());
        }
        for wrong in [0, 33] {
            let claim = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "maxCalls": wrong});
            let refused = core.claim(claim).await;
            assert_eq!(refused.refused(400, "invalid_request").body["error"]["details"]["field"], "maxCalls");
        }
        let three = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "maxCalls": 3});
        let answer = core.claim(three).await.ok(200).clone();
        let mut taken = vec![answer.clone()];
        taken.extend(answer["more"].as_array().expect("more").iter().cloned());
        let ids: Vec<&str> = taken.iter().map(|c| c["invocation"]["id"].as_str().unwrap_or_default()).collect();
        assert_eq!(ids, queued[..3].iter().map(String::as_str).collect::<Vec<_>>(), "the oldest three, in order");
        for claimed in &taken {
            let call = &claimed["invocation"];
            assert_eq!((call["status"].as_str(), call["fencingToken"].as_i64()), (Some("running"), Some(1)), "{call}");
            assert_eq!(claimed["skill"]["name"], "claim.classify");
        }
        assert!(taken[1..].iter().all(|claimed| claimed.get("more").is_none()), "the others hold no more");
        // Asking for more than there is takes what there is.
        let ten = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "maxCalls": 10});
        let rest = core.claim(ten.clone()).await.ok(200).clone();
        assert_eq!(rest["invocation"]["id"], queued[3].as_str());
        assert_eq!(rest["more"].as_array().map(|more| more.len()), Some(1), "{rest}");
        taken.push(rest.clone());
        taken.push(rest["more"][0].clone());
        assert_eq!(core.claim(ten).await.status.as_u16(), 204, "nothing left");
        // Versions this core has not claimed before, interleaved: the claim learns each on its way
        // and still takes as many as it asked for.
        let mut second = local("claim.classify", "none", (1, 0), &[]);
        second["version"] = json!("2");
        core.publish(second).await;
        let mut mixed = Vec::new();
        for n in 0..4 {
            let version = if n % 2 == 0 { "claim.classify@1" } else { "claim.classify@2" };
            let invoked = core.invoke(&core.caller, version, json!({"inputs": {"claim": format!("m-{n}")}})).await;
            mixed.push(invoked.ok(201)["id"].as_str().expect("an id").to_owned());
        }
        let four = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "maxCalls": 4});
        let answer = core.claim(four).await.ok(200).clone();
        let mut got: Vec<Value> = vec![answer.clone()];
        got.extend(answer["more"].as_array().into_iter().flatten().cloned());
        let mut ids: Vec<&str> = got.iter().map(|c| c["invocation"]["id"].as_str().unwrap_or_default()).collect();
        ids.sort_unstable();
        let mut wanted: Vec<&str> = mixed.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        assert_eq!(ids, wanted, "all four, across both versions");
        taken.extend(got);
        // Each completes on its own fencing token.
        for claimed in &taken {
            let id = claimed["invocation"]["id"].as_str().unwrap_or_default();
            let done = json!({"fencingToken": claimed["invocation"]["fencingToken"], "output": {"label": "delivery"}});
            assert_eq!(core.act(&core.executor, id, "complete", done).await.ok(200)["status"], "succeeded");
        }
    })
    .await;
}
