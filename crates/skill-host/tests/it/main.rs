//! The host crate's integration tests, one binary: token verification, the HTTP and MCP hosts,
//! clients of other ecosystems against them, and `serve` and `execute` as an operator runs them.

mod auth;
#[path = "../../examples/demo_host/skills.rs"]
mod demo;
#[path = "support/demo.rs"]
mod demo_binary;
mod http;
mod interop;
mod mcp;
mod serve;
#[path = "support/tokens.rs"]
mod tokens;
