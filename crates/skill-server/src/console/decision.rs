//! An approval on its task's page: who asked and why; while pending, what approving and
//! rejecting will do (each call with its version, side effects, risk and inputs — an input the
//! decider writes labelled by what it becomes, one the task cannot fill marked) and the form to
//! decide, its text box pre-filled with the task's newest draft; once decided, the outcome and
//! its actions, with a retry when a failure may pass.

use maud::{Markup, html};
use serde_json::Value;
use skill_api::{ApprovalOut, OutcomeStatus, SkillStatus, TaskOut, TaskStatus};
use skill_engine::work::{ActionPreview, CallPreview};

use super::layout::{badge, json, when};
use super::session::Viewer;

/// An approval with what the viewer may see and do about it.
pub(super) struct Decision {
    pub(super) approval: ApprovalOut,
    pub(super) requested_by: String,
    pub(super) decided_by: Option<String>,
    pub(super) previews: Option<(Vec<ActionPreview>, Vec<ActionPreview>)>,
    /// The task's newest draft, which the decider's text starts from.
    pub(super) draft: Option<String>,
    /// The side effects and risk of the version the approval was requested for, if any.
    pub(super) called: Option<(skill_api::SideEffects, skill_api::RiskLevel)>,
    /// Whether the task's process decides writes on its gates (shown under "The process it
    /// belongs to").
    pub(super) process_writes: bool,
    /// Why the four-eyes rule refuses the viewer this decision (none: they may decide it).
    pub(super) refusal: Option<String>,
}

/// What the decider's text becomes when approving: the label of the input that reads
/// `$.approval.comment` (its schema's title, else its description), and the call it goes to.
fn comment_target(actions: &[ActionPreview]) -> Option<(String, String)> {
    actions.iter().filter_map(|action| action.call.as_ref()).find_map(|call| {
        let (input, _) = call.from.iter().find(|(_, expression)| reads_comment(expression))?;
        let label = call
            .version
            .as_ref()
            .and_then(|version| version.labels.get(input))
            .and_then(Value::as_str)
            .map_or_else(|| format!("{input} of {}", call.skill), str::to_owned);
        Some((label, format!("the input {input} of {}", call.skill)))
    })
}

fn reads_comment(expression: &Value) -> bool {
    expression.as_str().is_some_and(|e| e.starts_with("$.approval.comment"))
}

impl Decision {
    pub(super) fn render(&self, viewer: &Viewer, task: &TaskOut) -> Markup {
        let approval = &self.approval;
        let may_decide = self.refusal.is_none();
        let target = self.previews.as_ref().and_then(|(approve, _)| comment_target(approve));
        html! {
            article.approval id={ "approval-" (approval.id) } {
                h3 { @if approval.gate { "Gate approval" } @else { "Approval" } " " (badge(approval.status)) }
                p.meta { "asked by " (self.requested_by) " · " (when(&approval.created_at)) }
                @if !approval.request_comment.is_empty() { blockquote { (approval.request_comment) } }
                @if let Some((approve, reject)) = &self.previews {
                    div.preview {
                        h4 { "Approving will" }
                        @let decides_process = self.process_writes && approval.gate && approval.call.is_none();
                        @if (approval.call.is_none() || !approve.is_empty()) && !(decides_process && approve.is_empty()) {
                            (preview(approve, target.as_ref().map(|(label, _)| label.as_str())))
                        }
                        @if decides_process {
                            p.requested {
                                @if !approve.is_empty() { "and " }
                                "decide the writes of the process this task belongs to ("
                                a href="#process" { "below" } "): they are made once the task closes done"
                            }
                        }
                        @if let Some(call) = &approval.call {
                            p.requested {
                                @if !approve.is_empty() { "and " }
                                "let " strong { (self.requested_by) } " make exactly this call, once: "
                                strong.skill { (call.skill) }
                                @if let Some((side_effects, risk)) = &self.called {
                                    " — " (badge(*side_effects)) " " span class={ "badge risk-" (risk) } { "risk " (risk) }
                                }
                                " — with exactly these inputs:"
                            }
                            (json(&call.inputs))
                        }
                        h4 { "Rejecting will" }
                        (preview(reject, None))
                    }
                    @if may_decide && task.status == TaskStatus::Open {
                        form.decide method="post" action={ "/console/approvals/" (approval.id) "/decide" } {
                            input type="hidden" name="csrf" value=(viewer.session.csrf);
                            @match &target {
                                Some((label, becomes)) => {
                                    label for={ "comment-" (approval.id) } { (label) }
                                    p.help {
                                        "Approving sends this text as " (becomes) "."
                                        @if self.draft.is_some() { " It starts from the task's draft: edit it as you see fit." }
                                    }
                                }
                                None => label for={ "comment-" (approval.id) } { "Comment (kept with the decision)" },
                            }
                            textarea id={ "comment-" (approval.id) } name="comment" rows=(if target.is_some() { "10" } else { "4" }) maxlength="10000" {
                                @if target.is_some() { (self.draft.clone().unwrap_or_default()) }
                            }
                            @if let Some(draft) = self.draft.as_deref().filter(|d| target.is_some() && d.chars().any(super::layout::is_hidden)) {
                                p.note.warning {
                                    "The draft holds characters that are invisible or change the direction of the text: "
                                    (super::layout::visible(draft))
                                }
                            }
                            div.buttons {
                                button.approve type="submit" name="outcome" value="approved" { "Approve" }
                                button.reject type="submit" name="outcome" value="rejected" { "Reject" }
                            }
                        }
                    } @else if let Some(why) = &self.refusal {
                        p.note.refusal { "You do not decide this approval: " (why) "." }
                    }
                } @else {
                    p.meta.decided {
                        @if let Some(by) = &self.decided_by { "decided by " (by) }
                        @if let Some(at) = &approval.decided_at { " · " (when(at)) }
                    }
                    @if !approval.comment.is_empty() { blockquote { (approval.comment) } }
                    @if let Some(outcome) = &approval.outcome {
                        div.outcome data-live={ "outcome-" (approval.id) } id={ "outcome-" (approval.id) } {
                            h4 { "Outcome " (badge(outcome.status)) }
                            @if let Some(reaction) = &outcome.reaction { p.meta { "reaction: " (reaction) } }
                            ol.actions {
                                @for action in &outcome.actions {
                                    li {
                                        "call " (action.action.invoke_skill.skill) " " (badge(action.status))
                                        @if action.attempts > 1 { " " span.meta { (action.attempts) " calls" } }
                                        @if let Some(call) = &action.invocation_id {
                                            " · " a href={ "/console/calls/" (call) } { "its call" }
                                        }
                                        @if let Some(error) = &action.error { (json(&serde_json::json!(error))) }
                                    }
                                }
                            }
                            @let retryable = outcome.status == OutcomeStatus::Failed && outcome.actions.iter().any(|a| a.retryable);
                            @if retryable && may_decide && task.status == TaskStatus::Open {
                                form.retry method="post" action={ "/console/approvals/" (approval.id) "/retry" } {
                                    input type="hidden" name="csrf" value=(viewer.session.csrf);
                                    p.help { "The failure may pass (the call's error is retryable). Once its cause is mended, \
                                              retry: the same calls with the same inputs, under this approval." }
                                    label for={ "reason-" (approval.id) } { "What was mended (kept as a comment)" }
                                    input type="text" id={ "reason-" (approval.id) } name="reason" maxlength="10000";
                                    div.buttons { button type="submit" { "Retry the outcome" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What an action is, in a few words.
fn action_name(action: &Value) -> String {
    if let Some(skill) = action.pointer("/invokeSkill/skill").and_then(Value::as_str) {
        return format!("call {skill}");
    }
    action.as_object().and_then(|o| o.keys().next().cloned()).unwrap_or_else(|| "action".to_owned())
}

/// The actions of a decision; the input the decider writes is called by `written`'s label.
fn preview(actions: &[ActionPreview], written: Option<&str>) -> Markup {
    html! {
        @if actions.is_empty() { p.empty { "do nothing more than record the decision." } }
        ul.actions {
            @for action in actions {
                @match &action.call {
                    Some(CallPreview { skill, version, inputs, from }) => {
                        li.invoke {
                            "call " strong.skill { (skill) }
                            @match version {
                                Some(called) => {
                                    " — " (badge(called.side_effects)) " " span class={ "badge risk-" (called.risk_level) } { "risk " (called.risk_level) }
                                    @if called.status != SkillStatus::Active { " " (badge(called.status)) }
                                }
                                None => { " — " span.badge.failed { "no such version: the call would fail" } }
                            }
                            dl.inputs {
                                @for (name, expression) in from {
                                    dt { (name) }
                                    dd {
                                        @if reads_comment(expression) {
                                            em { "the text you write below" @if let Some(label) = written { " (" (label) ")" } }
                                        } @else {
                                            @match inputs.get(name) {
                                                // What approving sends is shown whole: nothing of it hidden.
                                                Some(value) => (json(value)),
                                                None if version.as_ref().is_some_and(|v| v.required.contains(name)) => {
                                                    span.badge.failed.missing { "missing — the call would fail: " (skill) " requires " (name) }
                                                }
                                                None => em { "nothing (the task has no such value)" },
                                            }
                                        }
                                        " " code.from { (expression.as_str().unwrap_or_default()) }
                                    }
                                }
                            }
                        }
                    }
                    None => li { (action_name(&action.action)) " " (json(&action.action)) },
                }
            }
        }
    }
}
