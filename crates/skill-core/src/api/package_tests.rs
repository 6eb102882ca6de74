//! `POST /packages:test`: a package's scenario tests on a scratch core of this process (a SQLite
//! database under the temporary folder, removed after), the skill versions this core has
//! published taken as it has them. Nothing of a test is written to this core's database.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use skill_api::{MAX_PACKAGE_TEST_BYTES, PackageTestRequest, PublishRequest, TestFailure};
use skill_engine::{Actor, Class, Engine, EngineError};

use super::plumbing::{Failure, JsonBody};
use crate::Core;

pub(super) async fn test(
    State(core): State<Core>,
    actor: Actor,
    body: JsonBody<PackageTestRequest, MAX_PACKAGE_TEST_BYTES>,
) -> Result<Response, Failure> {
    let mut request = body.read(&actor, "org.manage")?;
    let Ok(_slot) = core.package_tests.clone().try_acquire_owned() else {
        return Err(Failure(EngineError::new(
            Class::Unavailable,
            "package_test_busy",
            "another package test is running on this core; try again when it ends",
        )));
    };
    let warnings = take_published(&core.engine, &actor, &mut request).await?;
    let mut out = skill_scenarios::run(&request, &std::env::temp_dir()).await.map_err(|refusal| refused(*refusal))?;
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
                Err(error) if error.code == "not_found" => continue,
                Err(error) => return Err(error),
            };
            let taken = PublishRequest::from_published(&published);
            let path = Some(format!("packages[{p}].create[{s}]"));
            if (&taken.contract, &taken.includes, &taken.tools) != (&create.contract, &create.includes, &create.tools) {
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

/// A run refused as a whole, as an error of the API.
fn refused(refusal: TestFailure) -> Failure {
    let (class, code) = match refusal.code.as_str() {
        "too_many_tests" => (Class::Invalid, "too_many_tests"),
        "package_refused" => (Class::Invalid, "package_refused"),
        "unknown_reference" => (Class::Invalid, "unknown_reference"),
        "invalid_request" => (Class::BadRequest, "invalid_request"),
        _ => (Class::Internal, "scratch_core_failed"),
    };
    let mut error = EngineError::new(class, code, refusal.message);
    if let Some(path) = refusal.path {
        error = error.with("path", path);
    }
    if let Some(actual) = refusal.actual {
        error = error.with("refusal", actual);
    }
    if let Some(hint) = refusal.hint {
        error = error.with("hint", hint);
    }
    Failure(error)
}
