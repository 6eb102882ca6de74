//! The mock executor: it answers a test's pending calls from `mocks.skills`, through the core's
//! own claim, complete and fail — so the basis is checked at claim as for any executor. Among
//! the answers whose `step` and `when` fit a call, the n-th call of a version takes the n-th,
//! and the last repeats; `timeout` leaves the call pending; a call no answer fits is
//! `unmocked_skill_call`.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use skill_api::{CallStatus, ClaimRequest, CompleteRequest, FailRequest, ReportedError, TestFailure};
use skill_store::records::{InvocationFilter, InvocationRecord};

use crate::file::{Answer, Reply};
use crate::scratch::{Scratch, origin};

/// What becomes of a call the mock has seen: answered with this reply (once it may be claimed),
/// or left pending (`None`: a timeout, or no answer).
type Fate = Option<Reply>;

/// The mock's memory over one test: each call's fate, fixed when first seen, and how many calls
/// of each version it has seen.
#[derive(Debug, Default)]
pub struct Mock {
    fates: HashMap<String, Fate>,
    seen: BTreeMap<String, usize>,
    /// The calls no answer fitted, in order: a failure (or a warning) each.
    pub unmocked: Vec<TestFailure>,
}

/// The calls of the scratch core (of one status when given), oldest first.
pub async fn calls(scratch: &Scratch, status: Option<CallStatus>) -> Result<Vec<InvocationRecord>, Box<TestFailure>> {
    let filter = InvocationFilter { limit: 1000, status, ..InvocationFilter::default() };
    let mut found = scratch.engine.store().invocations(&filter).await.map_err(|error| {
        Box::new(TestFailure::new("scratch_core_failed", None, format!("cannot read the calls: {error}")))
    })?;
    found.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(found)
}

impl Mock {
    /// Answers what it can of the pending calls; how many it moved.
    /// Whether a call of `pending` is one the mock has not seen yet.
    pub fn meets_new(&self, pending: &[InvocationRecord]) -> bool {
        pending.iter().any(|call| !self.fates.contains_key(&call.id))
    }

    /// Answers what it can of the `pending` calls (`step_of`: the process step of each step run,
    /// for answers that name one); how many it moved.
    pub async fn pass(
        &mut self,
        scratch: &Scratch,
        mocks: &BTreeMap<String, Vec<Answer>>,
        pending: &[InvocationRecord],
        step_of: &HashMap<String, String>,
    ) -> Result<usize, Box<TestFailure>> {
        let mut moved = 0;
        for call in pending {
            let fate = match self.fates.get(&call.id) {
                Some(fate) => fate.clone(),
                None => {
                    let fate = self.fate(scratch, call, mocks, step_of).await?;
                    self.fates.insert(call.id.clone(), fate.clone());
                    fate
                }
            };
            let Some(reply) = fate else { continue };
            if call.available_at > scratch.engine.now() {
                continue;
            }
            let claim = ClaimRequest {
                protocols: vec![call.protocol.clone()],
                local_entrypoints: if call.protocol == "local" { vec![call.target.clone()] } else { Vec::new() },
                http_origins: if call.protocol == "http" { vec![origin(&call.target)] } else { Vec::new() },
                mcp_endpoints: if call.protocol == "mcp" { vec![origin(&call.target)] } else { Vec::new() },
                audiences: call.audience.iter().cloned().collect(),
                session_id: None,
                lease_seconds: None,
                invocation_id: Some(call.id.clone()),
                wait_seconds: None,
                max_calls: None,
            };
            let claimed = scratch.engine.claim(&scratch.executor, &claim, None).await.map_err(|error| {
                Box::new(TestFailure::new(
                    "scratch_core_failed",
                    None,
                    format!("the mock executor could not claim a call: {} ({})", error.message, error.code),
                ))
            })?;
            // Cancelled at claim (its basis was lost), or not yet to be taken.
            let Some(claimed) = claimed else {
                moved += usize::from(
                    scratch.engine.store().invocation(&call.id).await.is_ok_and(|c| c.status != CallStatus::Pending),
                );
                continue;
            };
            let fencing_token = claimed.invocation.fencing_token;
            let answered = match reply {
                Reply::Output(output) => {
                    let request = CompleteRequest {
                        fencing_token,
                        output: output.as_object().cloned().unwrap_or_default(),
                        cost: None,
                        session_id: None,
                    };
                    scratch.engine.complete(&scratch.executor, &call.id, &request, None).await.map(|_| ())
                }
                Reply::Error { code, status, detail } => {
                    let request = FailRequest {
                        fencing_token,
                        error: ReportedError {
                            message: detail.clone().unwrap_or_else(|| code.clone()),
                            code,
                            retryable: false,
                            details: status.map(|status| json!({"status": status})),
                        },
                        session_id: None,
                    };
                    scratch.engine.fail(&scratch.executor, &call.id, &request, None).await.map(|_| ())
                }
                // Never a fate: a timeout leaves the call pending.
                Reply::Timeout => continue,
            };
            answered.map_err(|error| {
                Box::new(TestFailure::new(
                    "scratch_core_failed",
                    None,
                    format!("the mock executor's answer was refused: {} ({})", error.message, error.code),
                ))
            })?;
            moved += 1;
        }
        Ok(moved)
    }

    /// The answer a call first seen takes (its place among the calls of its version fixed now).
    async fn fate(
        &mut self,
        scratch: &Scratch,
        call: &InvocationRecord,
        mocks: &BTreeMap<String, Vec<Answer>>,
        step_of: &HashMap<String, String>,
    ) -> Result<Fate, Box<TestFailure>> {
        let skill = scratch.engine.store().skill(&call.skill_id).await.map_err(|error| {
            Box::new(TestFailure::new("scratch_core_failed", None, format!("cannot read a call's version: {error}")))
        })?;
        let reference = format!("{}@{}", skill.skill.name, skill.skill.version);
        let nth = self.seen.entry(reference.clone()).or_default();
        let index = *nth;
        *nth += 1;
        let Some(answers) = mocks.get(&reference) else {
            let hint = format!("add mocks.skills.{reference}: a list of answers (output, error or timeout)");
            self.unmocked.push(
                TestFailure::new(
                    "unmocked_skill_call",
                    Some("mocks.skills".to_owned()),
                    format!("{reference} was called and no mock answers it (inputs {})", call.inputs),
                )
                .hinted(hint),
            );
            return Ok(None);
        };
        let step = call
            .idempotency_key
            .as_deref()
            .and_then(|key| key.strip_prefix("process:"))
            .map(|rest| rest.split(':').next().unwrap_or(rest))
            .and_then(|activity| step_of.get(activity));
        let document = json!({"input": call.inputs});
        let fitting = fitting(answers, step, &document)?;
        // The n-th fitting answer; past the last, the last again (none fitting: none).
        let Some(answer) = fitting.get(index.min(fitting.len().saturating_sub(1))) else {
            self.unmocked.push(
                TestFailure::new(
                    "unmocked_skill_call",
                    Some(format!("mocks.skills.{reference}")),
                    format!(
                        "{reference} was called with inputs {}{} and none of its {} answers fits (their step and when)",
                        call.inputs,
                        step.map(|step| format!(" by step {step}")).unwrap_or_default(),
                        answers.len()
                    ),
                )
                .hinted("add an answer whose step and when fit this call"),
            );
            return Ok(None);
        };
        Ok(match &answer.reply {
            Reply::Timeout => None,
            reply => Some(reply.clone()),
        })
    }
}

/// The answers that fit a call made by `step` with `document` (`{"input": …}`): their step and
/// `when`. The `when`s of one call share one budget: one that costs too much for the call's input
/// fails the test (at its path), which then ends within its own time.
fn fitting<'a>(
    answers: &'a [Answer],
    step: Option<&String>,
    document: &serde_json::Value,
) -> Result<Vec<&'a Answer>, Box<TestFailure>> {
    let deadline = std::time::Instant::now() + skill_conditions::EVAL_BUDGET;
    let mut fitting = Vec::new();
    for answer in answers {
        if answer.step.is_some() && answer.step.as_ref() != step {
            continue;
        }
        let fits = match &answer.when {
            None => true,
            Some(when) => {
                match when.eval_within(document, deadline.saturating_duration_since(std::time::Instant::now())) {
                    Ok(fits) => fits,
                    Err(error) if error.over_budget => {
                        return Err(Box::new(
                            TestFailure::new("invalid_test", Some(format!("{}.when", answer.path)), error.message)
                                .hinted("make the condition read less of the input"),
                        ));
                    }
                    Err(_) => false,
                }
            }
        };
        if fits {
            fitting.push(answer);
        }
    }
    Ok(fitting)
}

/// Every mock output checked against its version's output schema before any step runs: the
/// first mismatch, naming the answer and the JSON pointer.
pub async fn check_outputs(scratch: &Scratch, mocks: &BTreeMap<String, Vec<Answer>>) -> Result<(), Box<TestFailure>> {
    let reader = scratch.people.get(crate::scratch::TESTER).cloned();
    let Some(reader) = reader else { return Ok(()) };
    for (reference, answers) in mocks {
        let skill = match scratch.engine.skill(&reader, reference).await {
            Ok(skill) => skill,
            Err(error) => {
                return Err(Box::new(
                    TestFailure::new(
                        "unknown_skill",
                        Some(format!("mocks.skills.{reference}")),
                        format!(
                            "the mock answers {reference}, which the scratch core does not have: {}",
                            error.message
                        ),
                    )
                    .hinted("mock a version the package or the ones it requires publish"),
                ));
            }
        };
        let schema = skill.contract.as_ref().map_or(Value::Null, |contract| contract.outputs().clone());
        let Ok(validator) = skill_contract::schema::SchemaValidator::new(&schema) else { continue };
        for answer in answers {
            let Reply::Output(output) = &answer.reply else { continue };
            if !output.is_object() {
                return Err(Box::new(TestFailure::new(
                    "mock_output_invalid",
                    Some(format!("{}.output", answer.path)),
                    format!("{}.output is an object, as every skill's output is", answer.path),
                )));
            }
            if let Some(first) = validator.errors(output).first() {
                return Err(Box::new(
                    TestFailure::new(
                        "mock_output_invalid",
                        Some(format!("{}.output", answer.path)),
                        format!(
                            "{}.output does not match {reference}'s output schema at {}: {}",
                            answer.path, first.path, first.message
                        ),
                    )
                    .compared(schema.clone(), output.clone()),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fitting;

    #[test]
    fn a_when_too_costly_for_the_calls_input_fails_the_test_at_its_path() {
        let term = "input.items.all(x, size(input.items + input.items) > 0)";
        let test = crate::file::read(&json!({"name": "n", "process": "p", "steps": [{"start": {}}],
        "mocks": {"skills": {"a.b@1": [
            {"output": {}, "when": "input.items.size() > 1"},
            {"output": {}, "when": vec![term; 30].join(" && ")},
        ]}}}))
        .expect("read");
        let answers = &test.mocks["a.b@1"];
        let small = json!({"input": {"items": [1, 2]}});
        assert_eq!(fitting(answers, None, &small).expect("fits").len(), 2);
        let large = json!({"input": {"items": vec![1; 9000]}});
        let failure = fitting(answers, None, &large).expect_err("over budget");
        assert_eq!(
            (failure.code.as_str(), failure.path.as_deref()),
            ("invalid_test", Some("mocks.skills.a.b@1[1].when")),
            "{failure:?}"
        );
    }
}
