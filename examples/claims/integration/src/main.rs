//! The skill host of the claims package: `list`, `contract`, `export`, `invoke`, and
//! `serve http|mcp-http|mcp-stdio`.

skill_host::host_main!(claims_integration);
