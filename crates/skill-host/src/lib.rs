//! Hosting SDK skills: over HTTP (`POST /skills/{name}@{version}`, bearer tokens verified against
//! the IAM's JWKS) and over MCP (stdio, and streamable HTTP at `/mcp`).
//!
//! An integration crate's binary gets `serve http|mcp-http|mcp-stdio` next to the SDK's
//! `list`, `contract`, `export` and `invoke` by starting with [`host_main!`]:
//!
//! ```text
//! // src/main.rs of the integration crate `claims-integration`
//! skill_host::host_main!(claims_integration);
//! ```
//!
//! | what | where |
//! |---|---|
//! | token verification | [`auth`] |
//! | the HTTP host | [`http`] |
//! | the MCP host and its tools | [`mcp`], [`mcp_http`], [`mcp_stdio`] |
//! | `serve`: listening, logs, graceful stop | [`serve`] |
//! | `execute`: a local executor of a core | [`execute`] |

pub mod auth;
pub mod execute;
pub mod http;
pub mod mcp;
pub mod mcp_http;
pub mod mcp_stdio;
mod metered;
pub mod serve;

/// `serve` and `execute` for the SDK's host CLI.
pub fn hosted(registry: &skill_sdk::registry::Registry, command: skill_sdk::host::Hosted) -> std::process::ExitCode {
    match command {
        skill_sdk::host::Hosted::Serve(args) => serve::serve(registry, args),
        skill_sdk::host::Hosted::Execute(args) => execute::execute(registry, &args),
    }
}

/// The `main` of a package's skill host with `serve`: links the crates that declare skills and
/// runs the host CLI (`list`, `contract`, `export`, `invoke`, `serve`, `execute`). With no crate named, the
/// skills are those of the binary itself.
#[macro_export]
macro_rules! host_main {
    ($($krate:ident),* $(,)?) => {
        $(use $krate as _;)*

        fn main() -> ::std::process::ExitCode {
            ::skill_sdk::host::main_with(::std::option::Option::Some($crate::hosted))
        }
    };
}
