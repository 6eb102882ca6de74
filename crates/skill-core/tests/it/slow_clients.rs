//! Clients that stall cannot hold the core: more half-open connections than the connection
//! bound leave `/healthz` answering, a body that never arrives is cut at its deadline, and
//! SIGTERM does not wait for any of them.

use std::time::Duration;

use rustix::process::Signal;
use skill_fixtures::{Running, Scratch, slow};

use crate::process::token;
use crate::running;

fn serve(db: &str, bounds: &[&str]) -> (Running, String) {
    let mut args = vec!["serve", "--db", db, "--listen", "127.0.0.1:0"];
    args.extend_from_slice(bounds);
    let mut core = running::start(&args, false);
    let address = core.address(30);
    (core, address)
}

#[test]
fn stalled_clients_past_the_bound_leave_healthz_answering_and_sigterm_prompt() {
    let scratch = Scratch::new("skill-core-slow");
    let db = scratch.path().join("data").to_str().expect("utf-8").to_owned();
    let token = token(&db);
    let (core, address) = serve(&db, &["--max-connections", "32", "--max-connections-per-client", "32"]);
    let mut half_open = slow::half_headers(&address, 100);
    let authorization = format!("Bearer {token}");
    let mut bodies: Vec<_> = (0..3)
        .map(|_| slow::stalled_body(&address, "/api/v1/skills", &[("Authorization", &authorization)], 500, 10))
        .collect();
    for _ in 0..5 {
        assert_eq!(slow::get(&address, "/healthz", 5).map(|(status, _)| status), Some(200), "/healthz answers");
    }
    let closed = half_open
        .iter_mut()
        .map(|stream| slow::read_to_close(stream, Duration::from_millis(50)).is_some())
        .filter(|closed| *closed)
        .count();
    assert!(closed >= 100 - 32, "the half-open connections in the way were closed: {closed}");

    core.signal(Signal::TERM);
    let (code, lines) = core.wait_within(5);
    assert_eq!(code, 0, "{lines:?}");
    for body in &mut bodies {
        let answer = slow::read_to_close(body, Duration::from_secs(2)).expect("the connection was closed");
        assert!(
            answer.starts_with("HTTP/1.1 503") && answer.contains("\"retryable\":true"),
            "a body cut at the stop is refused, to be sent again: {answer}"
        );
    }
}

#[test]
fn a_header_or_a_body_that_does_not_arrive_in_time_is_cut() {
    let scratch = Scratch::new("skill-core-deadlines");
    let db = scratch.path().join("data").to_str().expect("utf-8").to_owned();
    let token = token(&db);
    let (core, address) = serve(&db, &["--header-timeout", "1", "--body-timeout", "1"]);
    let mut half_open = slow::half_headers(&address, 1).pop().expect("a connection");
    let authorization = format!("Bearer {token}");
    let mut body = slow::stalled_body(&address, "/api/v1/skills", &[("Authorization", &authorization)], 500, 10);
    let answer = slow::read_to_close(&mut body, Duration::from_secs(5)).expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("request_timeout") && answer.contains("did not arrive within"),
        "the answer says why: {answer}"
    );
    assert!(slow::read_to_close(&mut half_open, Duration::from_secs(5)).is_some(), "the half header was cut");
    assert_eq!(slow::get(&address, "/healthz", 5).map(|(status, _)| status), Some(200));
    let lines = core.stop(Signal::TERM);
    assert!(lines.iter().any(|line| line.contains("skill-core stopped")), "{lines:?}");
}
