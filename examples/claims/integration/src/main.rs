//! The skill host of the claims package: `list`, `contract`, `export`, `invoke`.

skill_sdk::host_main!(claims_integration);
