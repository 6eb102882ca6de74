//! The `skill-sdk` command: from a package root, find the integration crate, build its skill
//! host with cargo and run the host's command — so `skill-sdk export --package . claims-integration`
//! works as the package documentation writes it.

pub mod call_command;
pub mod fact_command;
pub mod image_command;
pub mod package_command;
pub mod test_command;
