//! `skill-core` as a child process, read with the shared fixture.

use std::process::Command;

use skill_fixtures::{Output, Running};

pub(crate) const CORE: &str = env!("CARGO_BIN_EXE_skill-core");

/// Starts `skill-core ARGS`, reading its stdout (`stdout: true`) or its stderr.
pub(crate) fn start(args: &[&str], stdout: bool) -> Running {
    let mut command = Command::new(CORE);
    command.args(args);
    Running::start(command, if stdout { Output::Stdout } else { Output::Stderr })
}
