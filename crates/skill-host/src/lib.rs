//! Hosting SDK skills: over HTTP (`POST /skills/{name}@{version}`, bearer tokens verified against
//! the IAM's JWKS) and over MCP (stdio, and streamable HTTP at `/mcp`).
//!
//! | what | where |
//! |---|---|
//! | token verification | [`auth`] |

pub mod auth;
