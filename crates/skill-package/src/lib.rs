//! The package tooling that `skill-sdk package check|plan|apply` and `skill-core dev` share: a
//! package folder read from disk with the packages it requires, checked offline (the contract
//! crate's rules), planned against a core and applied through the typed client; and the
//! package's integration crate found and built.
//!
//! | what | where |
//! |---|---|
//! | reading a package folder (regular files inside it only, bounded), the install hash, every problem | [`load`], [`problems`], [`Loaded`], [`MAX_FILE_BYTES`] |
//! | one skill version against what the core published | [`plan_skill`], [`SkillPlan`] |
//! | the plan of a whole package, and carrying it out | [`plan`], [`apply`], [`Change`], [`Applied`] |
//! | the integration crate and its host binary | [`host_crate`] |
//! | the skills executor's container image (`skill-sdk image skills`) | [`image`] |
//! | the scenario tests and the packages a scratch core installs for them | [`test_files`], [`test_request`] |
//! | a test run's outcome for people and as JUnit XML | [`report`] |

mod apply;
mod failure;
mod files;
pub mod host_crate;
pub mod image;
mod load;
mod plan;
pub mod report;
mod scenarios;
mod task_types;

pub use apply::{Applied, apply};
pub use files::{MAX_DEPTH, MAX_FILE_BYTES, MAX_FILES, MAX_PACKAGE_BYTES};
pub use load::{Loaded, load, problems};
pub use plan::{Change, SkillPlan, plan, plan_skill, plan_with, refusal, subset};
pub use scenarios::{UnreadTest, test_files, test_request};
/// A skill document of the package with its endpoint's installation variable filled.
pub use skill_contract::package::{VariableKind, fill};
pub use task_types::{agent_requests, artifact_type_requests, process_requests, rule_requests, task_type_requests};
