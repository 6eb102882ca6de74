//! The skill host of the claims package: `list`, `contract`, `export`, `invoke`,
//! `serve http|mcp-http|mcp-stdio`, and `execute` (the package's local executor of a core).

skill_host::host_main!(claims_integration);
