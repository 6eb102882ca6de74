//! `POST /packages:test`: a package's scenario tests on a scratch core of this process (a SQLite
//! database under the temporary folder, removed after), the skill versions this core has
//! published taken as it has them. Nothing of a test is written to this core's database.

use axum::extract::{FromRequest, Request, State};
use axum::response::{IntoResponse, Response};
use skill_api::Code;
use skill_api::{MAX_PACKAGE_TEST_BYTES, PackageTestRequest, PublishRequest, TestFailure};
use skill_engine::{Actor, Class, Engine, EngineError};
use tracing::instrument::WithSubscriber as _;

use super::plumbing::{Failure, JsonBody, drain};
use crate::Core;

/// The caller's permission and the core's one slot come before the body is read: a caller who
/// may not run tests, or who would wait, costs no memory. The body is parsed off the runtime's
/// workers.
pub(super) async fn test(State(core): State<Core>, actor: Actor, request: Request) -> Result<Response, Failure> {
    if let Err(error) = actor.require("org.manage") {
        drain(request.into_body(), MAX_PACKAGE_TEST_BYTES).await;
        return Err(Failure(error));
    }
    let Ok(_slot) = core.package_tests.clone().try_acquire_owned() else {
        drain(request.into_body(), MAX_PACKAGE_TEST_BYTES).await;
        return Err(Failure(EngineError::new(
            Class::Unavailable,
            Code::PackageTestBusy,
            "another package test is running on this core; try again when it ends",
        )));
    };
    let body = JsonBody::<PackageTestRequest, MAX_PACKAGE_TEST_BYTES>::from_request(request, &core).await?;
    let reader = actor.clone();
    let mut request =
        tokio::task::spawn_blocking(move || body.read(&reader, "org.manage")).await.map_err(|error| {
            Failure(EngineError::new(
                Class::Internal,
                Code::ScratchCoreFailed,
                format!("the body could not be parsed: {error}"),
            ))
        })??;
    let warnings = take_published(&core.engine, &actor, &mut request).await?;
    let tests = request.tests.len();
    // The scratch cores' own log lines (a call ended, an approval decided) are not this core's
    // activity: the run logs one line of its own.
    let run = skill_scenarios::run(&request, &std::env::temp_dir())
        .with_subscriber(tracing::subscriber::NoSubscriber::default())
        .await;
    let mut out = run.map_err(|refusal| refused(*refusal))?;
    tracing::info!(
        by = %actor.principal().name,
        tests,
        passed = out.passed,
        failed = out.failed,
        seconds = out.seconds,
        "package test ran on a scratch core"
    );
    out.warnings = warnings;
    Ok(axum::Json(out).into_response())
}

/// Puts the versions this core has published in place of the request's: a test runs against
/// the contract the calls would meet here. A version that differs is named in a warning (the
/// package would have to publish a new version to change it).
async fn take_published(
    engine: &Engine,
    actor: &Actor,
    request: &mut PackageTestRequest,
) -> Result<Vec<TestFailure>, EngineError> {
    let mut warnings = Vec::new();
    for (p, package) in request.packages.iter_mut().enumerate() {
        for (s, create) in package.create.iter_mut().enumerate() {
            let Some(version) = &create.version else { continue };
            let reference = format!("{}@{version}", create.name);
            let published = match engine.skill(actor, &reference).await {
                Ok(published) => published,
                Err(error) if error.is(skill_api::Code::NotFound) => continue,
                Err(error) => return Err(error),
            };
            let taken = PublishRequest::from_published(&published);
            let path = Some(format!("packages[{p}].create[{s}]"));
            if differs(create, &taken) {
                warnings.push(
                    TestFailure::new(
                        "published_differs",
                        path.clone(),
                        format!(
                            "{reference} is published on this core with another contract: the tests ran with the core's"
                        ),
                    )
                    .hinted("give the changed skill a new version"),
                );
            }
            if published.status == skill_api::SkillStatus::Disabled {
                warnings.push(TestFailure::new(
                    "published_disabled",
                    path,
                    format!("{reference} is disabled on this core: calls to it would be refused here"),
                ));
            }
            *create = taken;
        }
    }
    Ok(warnings)
}

/// Whether the package's `create` publishes something other than what the core has as `taken`:
/// another contract, includes or tools, or a policy, protocol, configuration or schema it gives
/// that the core's differs from (one it leaves out takes the core's default). The description
/// does not count.
fn differs(create: &PublishRequest, taken: &PublishRequest) -> bool {
    fn said<T: PartialEq>(given: Option<&T>, published: Option<&T>) -> bool {
        given.is_some_and(|given| Some(given) != published)
    }
    (&create.contract, &create.includes, &create.tools) != (&taken.contract, &taken.includes, &taken.tools)
        || said(create.side_effects.as_ref(), taken.side_effects.as_ref())
        || said(create.risk_level.as_ref(), taken.risk_level.as_ref())
        || said(create.protocol.as_ref(), taken.protocol.as_ref())
        || said(create.config.as_ref(), taken.config.as_ref())
        || said(create.input_schema.as_ref(), taken.input_schema.as_ref())
        || said(create.output_schema.as_ref(), taken.output_schema.as_ref())
}

/// A run refused as a whole, as an error of the API.
fn refused(refusal: TestFailure) -> Failure {
    let (class, code) = match refusal.code.as_str() {
        "too_many_tests" => (Class::Invalid, Code::TooManyTests),
        "too_many_workspaces" => (Class::Invalid, Code::TooManyWorkspaces),
        "package_refused" => (Class::Invalid, Code::PackageRefused),
        "test_run_timeout" => (Class::Invalid, Code::TestRunTimeout),
        "invalid_request" => (Class::BadRequest, Code::InvalidRequest),
        _ => (Class::Internal, Code::ScratchCoreFailed),
    };
    let mut error = EngineError::new(class, code, refusal.message);
    if let Some(field) = refusal.path {
        error = error.with("field", field);
    }
    if let Some(actual) = refusal.actual {
        error = error.with("refusal", actual);
    }
    if let Some(hint) = refusal.hint {
        error = error.with("hint", hint);
    }
    Failure(error)
}
