//! A failing case of the model-based test, shrunk: its steps are taken away, a chunk at a time
//! and then one by one, as long as what is left still fails, so the report is the shortest
//! sequence found that does — printed as readable steps with the seed that replays it.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Once};

use super::{Case, Flaw, run_case};

/// What each step of a run did, as people read it.
pub(crate) type Trail = Arc<Mutex<Vec<String>>>;

/// The most replays one shrink makes, and the longest it takes: on a loaded machine the
/// report comes with what was found by then.
const MAX_REPLAYS: usize = 600;
const MAX_SHRINKING: std::time::Duration = std::time::Duration::from_secs(180);

thread_local! {
    /// Set while a replay runs: its panic is expected, and the report says what it was.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Replays' panics are not printed; every other panic is, as before.
fn quiet_replays() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let shown = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                shown(info);
            }
        }));
    });
}

/// How a run of a case failed.
#[derive(Debug)]
pub(crate) struct Failed {
    /// The step that failed (the number of steps when the check at the end did).
    pub(crate) at: usize,
    pub(crate) message: String,
    pub(crate) trail: Vec<String>,
}

/// Runs `case` on a world of its own; what it counted, or how it failed.
pub(crate) async fn attempt(case: Case, quiet: bool) -> Result<BTreeMap<&'static str, u64>, Failed> {
    if quiet {
        quiet_replays();
    }
    let trail: Trail = Arc::default();
    let kept = Arc::clone(&trail);
    QUIET.with(|flag| flag.set(quiet));
    // On this test's own thread (a current-thread runtime), so the flag above is the task's.
    let ran = tokio::spawn(async move {
        let mut totals = BTreeMap::new();
        run_case(&case, &mut totals, &kept).await;
        totals
    })
    .await;
    QUIET.with(|flag| flag.set(false));
    let trail = trail.lock().map(|steps| steps.clone()).unwrap_or_else(|poisoned| poisoned.into_inner().clone());
    match ran {
        Ok(totals) => Ok(totals),
        Err(error) => {
            let message = match error.try_into_panic() {
                Ok(payload) => payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|text| (*text).to_owned()))
                    .unwrap_or_else(|| "a panic without a message".to_owned()),
                Err(error) => error.to_string(),
            };
            Err(Failed { at: trail.len().saturating_sub(1), message, trail })
        }
    }
}

/// At most this many steps left, pairs of them are tried out too.
const PAIRED: usize = 12;

/// The shortest sequence of `case`'s steps found that still fails, how it fails, and how many
/// replays it took. A failure of the check at the end keeps every step before it.
pub(crate) async fn shrink(case: &Case, first: Failed) -> (Case, Failed, usize) {
    let mut best = case.steps[..(first.at + 1).min(case.steps.len())].to_vec();
    let mut failure = first;
    let mut replays = 0;
    let mut chunk = best.len().div_ceil(2).max(1);
    let deadline = std::time::Instant::now() + MAX_SHRINKING;
    let spent = |replays: usize| replays >= MAX_REPLAYS || std::time::Instant::now() >= deadline;
    loop {
        let mut start = 0;
        let mut progressed = false;
        while start < best.len() && !spent(replays) {
            let end = (start + chunk).min(best.len());
            let candidate: Vec<u64> = best[..start].iter().chain(&best[end..]).copied().collect();
            replays += 1;
            match attempt(Case { steps: candidate.clone(), ..case.clone() }, true).await {
                Err(failed) => {
                    best = candidate[..(failed.at + 1).min(candidate.len())].to_vec();
                    failure = failed;
                    progressed = true;
                }
                Ok(_) => start += chunk,
            }
        }
        if spent(replays) || (chunk == 1 && !progressed) {
            break;
        }
        if !progressed {
            chunk = chunk.div_ceil(2);
        }
    }
    // Then two steps at a time, anywhere, when few are left: a step that picks among earlier
    // ones (a pending approval, say) may need two of them gone at once to pick the same.
    'pairs: while best.len() <= PAIRED && !spent(replays) {
        for first_out in 0..best.len() {
            for second_out in first_out + 1..best.len() {
                if spent(replays) {
                    break 'pairs;
                }
                let candidate: Vec<u64> = best
                    .iter()
                    .enumerate()
                    .filter(|(index, _)| *index != first_out && *index != second_out)
                    .map(|(_, step)| *step)
                    .collect();
                replays += 1;
                if let Err(failed) = attempt(Case { steps: candidate.clone(), ..case.clone() }, true).await {
                    best = candidate[..(failed.at + 1).min(candidate.len())].to_vec();
                    failure = failed;
                    continue 'pairs;
                }
            }
        }
        break;
    }
    (Case { steps: best, ..case.clone() }, failure, replays)
}

/// The report of a shrunk failure: the seed, each step as people read it, the failure, and how
/// to replay exactly these steps.
pub(crate) fn report(case: &Case, from: usize, failure: &Failed, replays: usize) -> String {
    let mut out = format!(
        "the model-based test failed (seed {:#x}, case {}); shrunk from {from} steps to {} in {replays} replays:\n",
        case.seed,
        case.case,
        case.steps.len()
    );
    for (index, step) in failure.trail.iter().enumerate() {
        let mark = if index == failure.at { "   <- fails here" } else { "" };
        out.push_str(&format!("  {:>3}. {step}{mark}\n", index + 1));
    }
    out.push_str(&format!("failure: {}\n", failure.message));
    let seeds: Vec<String> = case.steps.iter().map(|seed| format!("{seed:#x}")).collect();
    out.push_str(&format!(
        "replay: SKILL_MODEL_SEED={:#x} SKILL_MODEL_REPLAY={}:{} cargo xtask test -p skill-engine --test it -- model\n",
        case.seed,
        case.case,
        seeds.join(",")
    ));
    out
}

/// The case `SKILL_MODEL_REPLAY` (`<case>:<step seed>,<step seed>,…`) names.
pub(crate) fn replayed(seed: u64, replay: &str) -> Case {
    let (case, steps) = replay.split_once(':').expect("SKILL_MODEL_REPLAY is <case>:<step seed>,…");
    let number = |text: &str| {
        let text = text.trim();
        let parsed = match text.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => text.parse(),
        };
        parsed.unwrap_or_else(|_| panic!("SKILL_MODEL_REPLAY: {text:?} is not a number"))
    };
    Case { seed, case: number(case), steps: steps.split(',').map(number).collect(), flaw: Flaw::None }
}

/// The harness itself: a model with a flaw fails, and the failure is shrunk to the few steps
/// that show it — a person sets work in motion (asks for its approval, starts its instance),
/// then decides it themself — with a report that replays them.
#[tokio::test]
#[allow(clippy::print_stderr)]
async fn a_broken_model_is_reported_as_its_shortest_failing_sequence() {
    for number in 0..20 {
        let case = Case::new(0x5EED_0001, number, 150, Flaw::SelfDecision);
        let Err(first) = attempt(case.clone(), true).await else { continue };
        let (shortest, failure, replays) = shrink(&case, first).await;
        let report = report(&shortest, case.steps.len(), &failure, replays);
        eprintln!("{report}");
        let flawed =
            |message: &str| ["self_approval_refused", "decider_is_initiator"].iter().any(|c| message.contains(c));
        assert!(flawed(&failure.message), "the flaw is what failed: {report}");
        assert!(shortest.steps.len() <= 3, "shrunk to a few steps: {report}");
        assert!(shortest.steps.len() < case.steps.len(), "{report}");
        assert!(report.contains("seed 0x5eed0001") && report.contains("SKILL_MODEL_REPLAY="), "{report}");
        assert!(report.contains("decides a pending approval"), "{report}");
        // The reported steps replay to the same failure.
        let again = attempt(shortest.clone(), true).await.expect_err("the shortest sequence fails again");
        assert!(flawed(&again.message), "{}", again.message);
        return;
    }
    panic!("no case reached the flaw: the harness test proves nothing");
}
