//! The methods of the work operations: task types, artifact types, tasks, runs, approvals,
//! comments.

use skill_api::operations::{Op, Operation};
use skill_api::{
    ApprovalOut, ApprovalRequest, ArtifactTypeOut, ArtifactTypeQuery, ArtifactTypeRequest, CloseTaskRequest,
    CommentOut, CommentRequest, DecideRequest, EndRunRequest, Items, OfTaskQuery, Page, RunOut, RunRequest, TaskOut,
    TaskQuery, TaskRequest, TaskTypeOut, TaskTypeQuery, TaskTypeRequest, WithdrawRequest,
};

use crate::call::{Call, Client};
use crate::error::ClientError;

fn call(op: Op) -> Call<'static> {
    Call::new(Operation::of(op))
}

impl Client {
    /// `POST /task-types`: publishes a task type version (`org.manage`).
    pub async fn publish_task_type(&self, request: &TaskTypeRequest) -> Result<TaskTypeOut, ClientError> {
        Ok(self.send(call(Op::PublishTaskType).body(request)).await?.body)
    }

    /// `GET /task-types`: one page of task type versions.
    pub async fn task_types(&self, query: &TaskTypeQuery) -> Result<Page<TaskTypeOut>, ClientError> {
        Ok(self.send(call(Op::ListTaskTypes).query(query)).await?.body)
    }

    /// `GET /task-types/{reference}`: an id, `key@version` or a key (its newest version).
    pub async fn task_type(&self, reference: &str) -> Result<TaskTypeOut, ClientError> {
        Ok(self.send(call(Op::ReadTaskType).parameters(&[reference])).await?.body)
    }

    /// `POST /artifact-types`: publishes an artifact type version (`org.manage`).
    pub async fn publish_artifact_type(&self, request: &ArtifactTypeRequest) -> Result<ArtifactTypeOut, ClientError> {
        Ok(self.send(call(Op::PublishArtifactType).body(request)).await?.body)
    }

    /// `GET /artifact-types`: one page of artifact type versions.
    pub async fn artifact_types(&self, query: &ArtifactTypeQuery) -> Result<Page<ArtifactTypeOut>, ClientError> {
        Ok(self.send(call(Op::ListArtifactTypes).query(query)).await?.body)
    }

    /// `GET /artifact-types/{reference}`: an id, `key@version` or a key (its newest version).
    pub async fn artifact_type(&self, reference: &str) -> Result<ArtifactTypeOut, ClientError> {
        Ok(self.send(call(Op::ReadArtifactType).parameters(&[reference])).await?.body)
    }

    /// `POST /tasks`: a task in a workspace (`tasks.write` there).
    pub async fn create_task(&self, request: &TaskRequest) -> Result<TaskOut, ClientError> {
        Ok(self.send(call(Op::CreateTask).body(request)).await?.body)
    }

    /// `GET /tasks`: one page of tasks, newest first.
    pub async fn tasks(&self, query: &TaskQuery) -> Result<Page<TaskOut>, ClientError> {
        Ok(self.send(call(Op::ListTasks).query(query)).await?.body)
    }

    /// `GET /tasks/{id}`.
    pub async fn task(&self, id: &str) -> Result<TaskOut, ClientError> {
        Ok(self.send(call(Op::ReadTask).parameters(&[id])).await?.body)
    }

    /// `POST /tasks/{id}:close`: done, failed or cancelled, for good.
    pub async fn close_task(&self, id: &str, request: &CloseTaskRequest) -> Result<TaskOut, ClientError> {
        Ok(self.send(call(Op::CloseTask).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /runs`: a run of one's own on an open task.
    pub async fn start_run(&self, request: &RunRequest) -> Result<RunOut, ClientError> {
        Ok(self.send(call(Op::StartRun).body(request)).await?.body)
    }

    /// `GET /runs/{id}`.
    pub async fn run(&self, id: &str) -> Result<RunOut, ClientError> {
        Ok(self.send(call(Op::ReadRun).parameters(&[id])).await?.body)
    }

    /// `POST /runs/{id}:end`: by its owner.
    pub async fn end_run(&self, id: &str, request: &EndRunRequest) -> Result<RunOut, ClientError> {
        Ok(self.send(call(Op::EndRun).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /approvals`: asks for a decision on a task (a gate by default).
    pub async fn request_approval(&self, request: &ApprovalRequest) -> Result<ApprovalOut, ClientError> {
        Ok(self.send(call(Op::RequestApproval).body(request)).await?.body)
    }

    /// `GET /approvals?task=`: the approvals of a task.
    pub async fn approvals(&self, task: &str) -> Result<Vec<ApprovalOut>, ClientError> {
        let query = OfTaskQuery { task: task.to_owned() };
        let items: Items<ApprovalOut> = self.send(call(Op::ListApprovals).query(&query)).await?.body;
        Ok(items.items)
    }

    /// `GET /approvals/{id}`, with what its outcome did.
    pub async fn approval(&self, id: &str) -> Result<ApprovalOut, ClientError> {
        Ok(self.send(call(Op::ReadApproval).parameters(&[id])).await?.body)
    }

    /// `POST /approvals/{id}:decide` (`approvals.decide`; never one's own request).
    pub async fn decide(&self, id: &str, request: &DecideRequest) -> Result<ApprovalOut, ClientError> {
        Ok(self.send(call(Op::DecideApproval).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /approvals/{id}:withdraw`.
    pub async fn withdraw(&self, id: &str, request: &WithdrawRequest) -> Result<ApprovalOut, ClientError> {
        Ok(self.send(call(Op::WithdrawApproval).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /approvals/{id}:retry`.
    pub async fn retry_outcome(&self, id: &str, request: &skill_api::RetryRequest) -> Result<ApprovalOut, ClientError> {
        Ok(self.send(call(Op::RetryOutcome).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /task-comments`.
    pub async fn comment(&self, request: &CommentRequest) -> Result<CommentOut, ClientError> {
        Ok(self.send(call(Op::AddComment).body(request)).await?.body)
    }

    /// `GET /task-comments?task=`: the comments of a task, oldest first.
    pub async fn comments(&self, task: &str) -> Result<Vec<CommentOut>, ClientError> {
        let query = OfTaskQuery { task: task.to_owned() };
        let items: Items<CommentOut> = self.send(call(Op::ListComments).query(&query)).await?.body;
        Ok(items.items)
    }
}
