//! A package's scenario tests (`tests/*.test.yaml`) run on a scratch core whose skills are
//! answered by mocks: what the core's `POST /packages:test` and `skill-core scenarios` (which
//! `skill-sdk package test` runs) use. A test never touches a real core's data: every run makes
//! a SQLite database of its own (the packages installed once), and every test starts from a copy.
//!
//! | what | where |
//! |---|---|
//! | the test file, read as written | [`file`] |
//! | the template database and each test's copy | [`scratch`] |
//! | the mock executor, and the mock outputs checked before any step | [`mock`] |
//! | a test's steps and expectations | [`steps`] |

pub mod file;
pub mod mock;
pub mod scratch;
pub mod steps;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use skill_api::{MAX_TEST_WORKSPACES, MAX_TESTS, PackageTestOut, PackageTestRequest, TestFailure, TestOutcome};

/// How long one test may take.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one run may take: a test not ended by then fails `test_timeout`, and those after it
/// are not started.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(skill_api::MAX_TEST_RUN_SECONDS);

/// Runs the tests of `request` on scratch cores made in a new folder under `under` (the system's
/// temporary folder, say; removed after). Refused as a whole (`too_many_tests`,
/// `package_refused`, …) when it cannot run at all.
pub async fn run(request: &PackageTestRequest, under: &Path) -> Result<PackageTestOut, Box<TestFailure>> {
    let started = Instant::now();
    if request.tests.is_empty() || request.tests.len() > MAX_TESTS {
        return Err(Box::new(
            TestFailure::new(
                "too_many_tests",
                Some("tests".to_owned()),
                format!("one run has 1 to {MAX_TESTS} tests, not {}", request.tests.len()),
            )
            .hinted(SPLIT),
        ));
    }
    let Some(tested) = request.packages.last() else {
        return Err(Box::new(TestFailure::new("invalid_request", Some("packages".to_owned()), "no package to test")));
    };
    let read: Vec<_> = request.tests.iter().map(|file| file::read(&file.document)).collect();
    let mut workspaces: BTreeSet<String> = read.iter().flatten().map(|test| test.given.workspace.clone()).collect();
    workspaces.remove(file::DEFAULT_WORKSPACE);
    if workspaces.len() > MAX_TEST_WORKSPACES {
        return Err(Box::new(
            TestFailure::new(
                "too_many_workspaces",
                Some("tests".to_owned()),
                format!(
                    "the tests name {} workspaces (given.workspace); one run makes at most {MAX_TEST_WORKSPACES}",
                    workspaces.len()
                ),
            )
            .hinted(SPLIT),
        ));
    }
    workspaces.insert(file::DEFAULT_WORKSPACE.to_owned());
    let folder = under.join(format!("{}{}", scratch::FOLDER_PREFIX, uuid::Uuid::now_v7()));
    // Making the scratch core counts against the run's time too.
    let made = tokio::time::timeout(RUN_TIMEOUT, scratch::Template::make(&folder, &request.packages, &workspaces));
    let Ok(template) = made.await else {
        return Err(Box::new(
            TestFailure::new(
                "test_run_timeout",
                None,
                format!("installing the packages on the scratch core took the run's {} s", RUN_TIMEOUT.as_secs()),
            )
            .hinted("install fewer or smaller packages in one run"),
        ));
    };
    let template = template?;
    let mut tests = Vec::with_capacity(read.len());
    for (file, test) in request.tests.iter().zip(read) {
        let began = Instant::now();
        let name = file.document.get("name").and_then(|name| name.as_str()).unwrap_or(&file.file).to_owned();
        let left = RUN_TIMEOUT.saturating_sub(started.elapsed());
        let (failure, warnings) = match test {
            _ if left.is_zero() => (Some(run_out()), Vec::new()),
            Err(refusal) => (Some(*refusal), Vec::new()),
            Ok(test) => match subject_reference(tested, &test) {
                Err(refusal) => (Some(*refusal), Vec::new()),
                Ok(subject) => one(&template, &test, subject, request.allow_unmocked, left).await,
            },
        };
        tests.push(TestOutcome {
            file: file.file.clone(),
            name,
            passed: failure.is_none(),
            seconds: began.elapsed().as_secs_f64(),
            failure,
            warnings,
        });
    }
    drop(template);
    let passed = tests.iter().filter(|test| test.passed).count();
    Ok(PackageTestOut {
        failed: tests.len() - passed,
        passed,
        tests,
        seconds: started.elapsed().as_secs_f64(),
        warnings: Vec::new(),
    })
}

/// How to run fewer tests at once.
const SPLIT: &str =
    "split the tests over several runs: skill-sdk package test --only NAME runs those whose file or name holds NAME";

fn run_out() -> TestFailure {
    TestFailure::new("test_timeout", None, format!("the run's {} s ran out before this test", RUN_TIMEOUT.as_secs()))
        .hinted(SPLIT)
}

async fn one(
    template: &scratch::Template,
    test: &file::Test,
    subject: String,
    allow_unmocked: bool,
    left: Duration,
) -> (Option<TestFailure>, Vec<TestFailure>) {
    let scratch = match template.scratch().await {
        Ok(scratch) => scratch,
        Err(failure) => return (Some(*failure), Vec::new()),
    };
    let mut run = steps::Run::new(scratch, test, subject, allow_unmocked);
    let outcome = tokio::time::timeout(TEST_TIMEOUT.min(left), run.run()).await;
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(*failure),
        Err(_) if left < TEST_TIMEOUT => Some(run_out()),
        Err(_) => Some(TestFailure::new(
            "test_timeout",
            None,
            format!("the test did not end within {} s", TEST_TIMEOUT.as_secs()),
        )),
    };
    let warnings = std::mem::take(&mut run.warnings);
    run.s.discard();
    (failure, warnings)
}

/// `key@version` of the test's subject: its version, or the one the package under test has.
fn subject_reference(package: &skill_api::ApplyRequest, test: &file::Test) -> Result<String, Box<TestFailure>> {
    if let Some(version) = &test.version {
        return Ok(format!("{}@{version}", test.key));
    }
    let spec_version = |spec: &serde_json::Value| spec["version"].as_str().map(str::to_owned);
    let versions: Vec<String> = match test.subject {
        file::Subject::TaskType => {
            package.task_types.iter().filter(|t| t.key == test.key).map(|t| t.version.clone()).collect()
        }
        file::Subject::Rule => {
            package.rules.iter().filter(|r| r.key == test.key).filter_map(|r| spec_version(&r.spec)).collect()
        }
        file::Subject::Process => {
            package.processes.iter().filter(|p| p.key == test.key).filter_map(|p| spec_version(&p.spec)).collect()
        }
    };
    match versions.as_slice() {
        [one] => Ok(format!("{}@{one}", test.key)),
        [] => Err(Box::new(
            TestFailure::new(
                "unknown_reference",
                Some(test.subject.field().to_owned()),
                format!("package {} has no {} {}", package.package.key, test.subject.field(), test.key),
            )
            .hinted("name an object of the package under test"),
        )),
        _ => Err(Box::new(TestFailure::new(
            "invalid_test",
            Some("version".to_owned()),
            format!("the package has {} versions of {}: name one with `version`", versions.len(), test.key),
        ))),
    }
}
