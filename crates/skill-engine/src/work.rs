//! Work: task types (`types.rs`), tasks (`tasks.rs`), runs (`runs.rs`), approvals and their
//! decisions (`approvals.rs`) and what a decision would do (`preview.rs`), and comments. A task belongs to a workspace; reading it
//! needs `tasks.read` there (`tasks.write` and `approvals.decide` include it), and to anyone
//! else it does not exist (`404`).

mod approvals;
mod decisions;
mod draft;
mod execution;
mod needs;
mod outcomes;
mod preview;
mod retry;
mod runs;
mod tasks;
mod types;

use skill_api::events::TaskCommented;
use skill_api::{CommentOut, CommentRequest, Items, OfTaskQuery};
use skill_contract::codes::Code;
use skill_store::records::{CommentRecord, TaskRecord, WorkChange};

use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

pub use crate::visibility::REQUEST_TYPE;
pub use approvals::MAX_RETRIES;
pub use draft::{Draft, draft_of};
pub use needs::FieldUse;
pub use outcomes::SKILL_WAIT;
pub use preview::{ActionPreview, CallPreview, CalledVersion};
pub(crate) use tasks::check_fields;
pub(crate) use types::task_type_out;

/// The most comments a task's listing answers with.
const MAX_COMMENTS: i64 = 1_000;

/// `403 decider_not_a_person` for `actor`, who is not a person: a decision — and a retry, which
/// carries one out again — is a person's, never an agent's or an executor's, whatever it holds.
pub(crate) fn not_a_person(actor: &Actor) -> EngineError {
    EngineError::new(
        Class::Forbidden,
        Code::DeciderNotAPerson,
        format!("a person decides approvals; {} is an {}", actor.principal().name, actor.principal().kind),
    )
    .with("kind", actor.principal().kind)
}

/// `name@version` of the version `task_type`'s execution pins, if it has one.
pub(crate) fn execution_reference(task_type: &skill_store::records::TaskTypeRecord) -> Option<String> {
    task_type.spec.execution.as_ref().map(skill_api::TaskExecution::reference)
}

impl Engine {
    /// Adds a comment to a task (`tasks.write` in its workspace).
    pub async fn add_comment(
        &self,
        actor: &Actor,
        request: &CommentRequest,
        request_id: Option<&str>,
    ) -> Result<CommentOut> {
        let task = self.visible_task(actor, &request.task_id, Some("tasks.write")).await?;
        let comment = self.comment(&task, actor.id(), &request.body)?;
        let event = comment_event(&comment, &Origin::of(actor, request_id));
        self.store.write_work(&[WorkChange::InsertComment(comment.clone())], &[event]).await?;
        Ok(comment_out(comment))
    }

    /// The comments of a task, oldest first (`tasks.read` in its workspace).
    pub async fn comments(&self, actor: &Actor, query: &OfTaskQuery) -> Result<Items<CommentOut>> {
        let task = self.visible_task(actor, &query.task, None).await?;
        let comments = self.store.comments(&task.id, MAX_COMMENTS).await?;
        Ok(Items { items: comments.into_iter().map(comment_out).collect() })
    }

    /// A new comment by `author` on `task`; `body` is 1 to 10,000 characters.
    pub(crate) fn comment(&self, task: &TaskRecord, author: &str, body: &str) -> Result<CommentRecord> {
        if !(1..=10_000).contains(&body.chars().count()) {
            return Err(EngineError::invalid_request("a comment is 1 to 10,000 characters").with("field", "body"));
        }
        Ok(CommentRecord {
            id: self.new_id(),
            task_id: task.id.clone(),
            author_principal_id: author.to_owned(),
            body: body.to_owned(),
            created_at: self.now(),
        })
    }
}

pub(crate) fn comment_event(comment: &CommentRecord, origin: &Origin) -> skill_store::records::Event {
    let commented = TaskCommented { comment_id: comment.id.clone(), author: comment.author_principal_id.clone() };
    crate::new_event(format!("task:{}", comment.task_id), &commented, origin)
}

fn comment_out(comment: CommentRecord) -> CommentOut {
    CommentOut {
        id: comment.id,
        task_id: comment.task_id,
        author_principal_id: comment.author_principal_id,
        body: comment.body,
        created_at: view_time(&comment.created_at),
    }
}
