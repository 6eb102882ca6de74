//! The claims package's integration tests, one binary: its skills through the SDK's invocation
//! path and their committed files, and the package's host.

mod host;
mod skills;
