//! One method per operation of `/api/v1`, each a [`Call`] of its operation with the
//! operation's request and answer types.

use serde_json::Value;
use skill_api::operations::{Op, Operation};
use skill_api::{
    ApplyOut, ApplyRequest, AssignRequest, Assigned, AssignedSkill, AudienceTokenOut, AudienceTokenRequest,
    CancelRequest, ClaimOut, ClaimRequest, CloseRequest, CompleteRequest, DisableOut, DisableRequest, EvaluateOut,
    EvaluateRequest, EventOut, EventsQuery, ExecutorAllowance, ExecutorAllowanceOut, FactOut, FactQuery, FactRequest,
    FailRequest, Health, HeartbeatRequest, InstallOut, InvocationOut, InvocationQuery, InvokeRequest, Items, ListQuery,
    MetadataOut, PackageTestOut, PackageTestRequest, Page, PageQuery, PatchRequest, PublishRequest, RecordRequest,
    Revoked, RuleOut, RuleRequest, SessionOut, SessionRequest, SettingsOut, SettingsRequest, SkillOut,
};
use skill_contract::SkillDefinition;

use crate::call::{Call, Client};
use crate::error::ClientError;

fn call(op: Op) -> Call<'static> {
    Call::new(Operation::of(op))
}

/// `Ok(None)` for a `404 not_found`.
fn absent<T>(result: Result<T, ClientError>) -> Result<Option<T>, ClientError> {
    match result {
        Err(error) if error.code() == Some("not_found") => Ok(None),
        other => other.map(Some),
    }
}

impl Client {
    /// `POST /skills`: publishes a version.
    pub async fn publish(&self, request: &PublishRequest) -> Result<SkillOut, ClientError> {
        Ok(self.send(call(Op::PublishSkill).body(request)).await?.body)
    }

    /// `GET /skills`: one page of versions.
    pub async fn skills(&self, query: &ListQuery) -> Result<Page<SkillOut>, ClientError> {
        Ok(self.send(call(Op::ListSkills).query(query)).await?.body)
    }

    /// `GET /skills/{reference}`: a version by id, `name@version` or name.
    pub async fn skill(&self, reference: &str) -> Result<SkillOut, ClientError> {
        Ok(self.send(call(Op::ReadSkill).parameters(&[reference])).await?.body)
    }

    /// [`Client::skill`], with `None` when there is no such version.
    pub async fn find_skill(&self, reference: &str) -> Result<Option<SkillOut>, ClientError> {
        absent(self.skill(reference).await)
    }

    /// `GET /skills/{reference}:definition`.
    pub async fn definition(&self, reference: &str) -> Result<SkillDefinition, ClientError> {
        Ok(self.send(call(Op::SkillDefinition).parameters(&[reference])).await?.body)
    }

    /// `GET /skills/{reference}:metadata`.
    pub async fn metadata(&self, reference: &str) -> Result<MetadataOut, ClientError> {
        Ok(self.send(call(Op::SkillMetadata).parameters(&[reference])).await?.body)
    }

    /// `PATCH /skills/{reference}` with `If-Match` of `row_version`.
    pub async fn patch_skill(
        &self,
        reference: &str,
        row_version: i32,
        request: &PatchRequest,
    ) -> Result<SkillOut, ClientError> {
        let call = call(Op::PatchSkill)
            .parameters(&[reference])
            .header("if-match", skill_api::etag(row_version))
            .body(request);
        Ok(self.send(call).await?.body)
    }

    /// `GET /catalogue`: one page of metadata.
    pub async fn catalogue(&self, query: &PageQuery) -> Result<Page<MetadataOut>, ClientError> {
        Ok(self.send(call(Op::Catalogue).query(query)).await?.body)
    }

    /// `POST /principals/{principal}/skills`.
    pub async fn assign(&self, principal: &str, request: &AssignRequest) -> Result<Assigned, ClientError> {
        Ok(self.send(call(Op::AssignSkill).parameters(&[principal]).body(request)).await?.body)
    }

    /// `GET /principals/{principal}/skills`.
    pub async fn assigned(&self, principal: &str) -> Result<Vec<AssignedSkill>, ClientError> {
        let answer: Items<AssignedSkill> = self.send(call(Op::AssignedSkills).parameters(&[principal])).await?.body;
        Ok(answer.items)
    }

    /// `POST /principals/{principal}/skills/{skill}:revoke`.
    pub async fn revoke(&self, principal: &str, skill: &str) -> Result<Revoked, ClientError> {
        Ok(self.send(call(Op::RevokeSkill).parameters(&[principal, skill])).await?.body)
    }

    /// `POST /packages:apply`: a package's whole plan, in one transaction.
    pub async fn apply_package(&self, request: &ApplyRequest) -> Result<ApplyOut, ClientError> {
        Ok(self.send(call(Op::ApplyPackage).body(request)).await?.body)
    }

    /// `POST /packages:test`: a package's scenario tests on a scratch core of the core (waits
    /// up to the run's limit and a minute more; never repeated).
    pub async fn test_package(&self, request: &PackageTestRequest) -> Result<PackageTestOut, ClientError> {
        let wait = std::time::Duration::from_secs(skill_api::MAX_TEST_RUN_SECONDS + 60);
        Ok(self.send(call(Op::TestPackage).body(request).timeout(wait)).await?.body)
    }

    /// `POST /packages:record`.
    pub async fn record_install(&self, request: &RecordRequest) -> Result<InstallOut, ClientError> {
        Ok(self.send(call(Op::RecordInstall).body(request)).await?.body)
    }

    /// `GET /packages/{key}`, with `None` when the package was never installed.
    pub async fn install(&self, key: &str) -> Result<Option<InstallOut>, ClientError> {
        absent(self.send(call(Op::ReadInstall).parameters(&[key])).await.map(|answer| answer.body))
    }

    /// `GET /packages/{key}/settings`.
    pub async fn settings(&self, key: &str) -> Result<SettingsOut, ClientError> {
        Ok(self.send(call(Op::ReadSettings).parameters(&[key])).await?.body)
    }

    /// `POST /packages/{key}/settings`.
    pub async fn set_settings(&self, key: &str, request: &SettingsRequest) -> Result<SettingsOut, ClientError> {
        Ok(self.send(call(Op::SetSettings).parameters(&[key]).body(request)).await?.body)
    }

    /// `GET /events`.
    pub async fn events(&self, query: &EventsQuery) -> Result<Vec<EventOut>, ClientError> {
        let answer: Items<EventOut> = self.send(call(Op::Events).query(query)).await?.body;
        Ok(answer.items)
    }

    /// `POST /skills/{reference}:invoke`: the call, and whether this request created it (`201`)
    /// rather than repeated an accepted one (`200`).
    pub async fn invoke(&self, reference: &str, request: &InvokeRequest) -> Result<(InvocationOut, bool), ClientError> {
        let answer = self.send(call(Op::InvokeSkill).parameters(&[reference]).body(request)).await?;
        Ok((answer.body, answer.status == 201))
    }

    /// `POST /facts`: the fact, and whether this request recorded it (`201`) rather than found
    /// the same fact recorded before (`200`).
    pub async fn record_fact(&self, request: &FactRequest) -> Result<(FactOut, bool), ClientError> {
        let answer = self.send(call(Op::RecordFact).body(request)).await?;
        Ok((answer.body, answer.status == 201))
    }

    /// `GET /facts/{id}`: the fact and each rule's evaluation of it.
    pub async fn fact(&self, id: &str) -> Result<FactOut, ClientError> {
        Ok(self.send(call(Op::ReadFact).parameters(&[id])).await?.body)
    }

    /// `GET /facts`: one page of a workspace's facts, newest first.
    pub async fn facts(&self, query: &FactQuery) -> Result<Page<FactOut>, ClientError> {
        Ok(self.send(call(Op::ListFacts).query(query)).await?.body)
    }

    /// `POST /rules`.
    pub async fn publish_rule(&self, request: &RuleRequest) -> Result<RuleOut, ClientError> {
        Ok(self.send(call(Op::PublishRule).body(request)).await?.body)
    }

    /// `POST /rules/{reference}:evaluate`: the dry run.
    pub async fn evaluate_rule(&self, reference: &str, request: &EvaluateRequest) -> Result<EvaluateOut, ClientError> {
        Ok(self.send(call(Op::EvaluateRule).parameters(&[reference]).body(request)).await?.body)
    }

    /// `GET /skill-invocations`: one page of calls, newest first.
    pub async fn invocations(&self, query: &InvocationQuery) -> Result<Page<InvocationOut>, ClientError> {
        Ok(self.send(call(Op::ListInvocations).query(query)).await?.body)
    }

    /// `GET /skill-invocations/{id}`.
    pub async fn invocation(&self, id: &str) -> Result<InvocationOut, ClientError> {
        Ok(self.send(call(Op::ReadInvocation).parameters(&[id])).await?.body)
    }

    /// `POST /skill-invocations:claim`: a call under a new lease, or `None` (`204`).
    pub async fn claim(&self, request: &ClaimRequest) -> Result<Option<ClaimOut>, ClientError> {
        Ok(self.send(call(Op::ClaimInvocation).body(request)).await?.body)
    }

    /// `POST /skill-invocations/{id}:heartbeat`.
    pub async fn heartbeat(&self, id: &str, request: &HeartbeatRequest) -> Result<InvocationOut, ClientError> {
        Ok(self.send(call(Op::HeartbeatInvocation).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /skill-invocations/{id}:complete`.
    pub async fn complete(&self, id: &str, request: &CompleteRequest) -> Result<InvocationOut, ClientError> {
        Ok(self.send(call(Op::CompleteInvocation).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /skill-invocations/{id}:fail`.
    pub async fn fail(&self, id: &str, request: &FailRequest) -> Result<InvocationOut, ClientError> {
        Ok(self.send(call(Op::FailInvocation).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /skill-invocations/{id}:cancel`.
    pub async fn cancel(&self, id: &str, request: &CancelRequest) -> Result<InvocationOut, ClientError> {
        Ok(self.send(call(Op::CancelInvocation).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /executor-sessions`.
    pub async fn open_session(&self, request: &SessionRequest) -> Result<SessionOut, ClientError> {
        Ok(self.send(call(Op::OpenSession).body(request)).await?.body)
    }

    /// `POST /executor-sessions/{id}:heartbeat`.
    pub async fn keep_session(&self, id: &str, request: &SessionRequest) -> Result<SessionOut, ClientError> {
        Ok(self.send(call(Op::KeepSession).parameters(&[id]).body(request)).await?.body)
    }

    /// `POST /principals:disable`: its tokens stop working, the calls it authorized are
    /// cancelled, the calls it runs go back to the queue (`org.manage`).
    pub async fn disable_principal(&self, request: &DisableRequest) -> Result<DisableOut, ClientError> {
        Ok(self.send(call(Op::DisablePrincipal).body(request)).await?.body)
    }

    /// `POST /principals/{principal}/executor-allowance`: what an executor principal may run,
    /// whole (`org.manage`).
    pub async fn allow_executor(
        &self,
        principal: &str,
        allowance: &ExecutorAllowance,
    ) -> Result<ExecutorAllowanceOut, ClientError> {
        Ok(self.send(call(Op::SetExecutorAllowance).parameters(&[principal]).body(allowance)).await?.body)
    }

    /// `GET /principals/{principal}/executor-allowance` (`org.read`).
    pub async fn executor_allowance(&self, principal: &str) -> Result<ExecutorAllowanceOut, ClientError> {
        Ok(self.send(call(Op::ReadExecutorAllowance).parameters(&[principal])).await?.body)
    }

    /// `POST /audience-tokens`: a token for a call the executor holds, with that call's contract
    /// audience and scopes (`skills.execute`).
    pub async fn audience_token(&self, request: &AudienceTokenRequest) -> Result<AudienceTokenOut, ClientError> {
        Ok(self.send(call(Op::IssueAudienceToken).body(request)).await?.body)
    }

    /// `POST /executor-sessions/{id}:close`.
    pub async fn close_session(&self, id: &str) -> Result<SessionOut, ClientError> {
        Ok(self.send(call(Op::CloseSession).parameters(&[id]).body(&CloseRequest {})).await?.body)
    }

    /// `GET /api/v1/openapi.json`: the document the core serves.
    pub async fn openapi(&self) -> Result<Value, ClientError> {
        self.get_outside_table("/openapi.json", true).await
    }

    /// `GET /healthz`: the process answers.
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.get_outside_table("/healthz", false).await
    }

    /// `GET /readyz`: the process and its database answer (`503` with `unavailable` otherwise).
    pub async fn ready(&self) -> Result<Health, ClientError> {
        self.get_outside_table("/readyz", false).await
    }
}
