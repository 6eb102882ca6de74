//! The crate graph, checked in two ways: no external crate where it does not belong (`cargo
//! tree`), and no workspace crate depending on one it may not (`cargo metadata`), so a wrong-way
//! edge — the core linking the authoring SDK, say — fails CI.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{cargo, workspace_root};

/// Crates that must not appear in a crate's normal dependency tree.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("skill-contract", &["tokio", "axum", "rmcp", "sqlx", "hyper", "reqwest", "cel"]),
    ("skill-journal", &["tokio", "axum", "rmcp", "sqlx", "hyper", "reqwest"]),
    ("skill-conditions", &["tokio", "axum", "rmcp", "sqlx", "hyper", "reqwest"]),
    ("skill-api", &["tokio", "axum", "rmcp", "sqlx", "hyper", "reqwest"]),
    ("skill-sdk-macros", &["tokio", "axum", "rmcp", "sqlx", "hyper", "reqwest"]),
    // The SDK speaks HTTP as a client (the core, LLM providers); serving is skill-host's.
    ("skill-sdk", &["axum", "rmcp", "sqlx"]),
    // Storage knows SQL and nothing of HTTP or MCP.
    ("skill-store", &["axum", "rmcp", "hyper", "reqwest"]),
    // The domain knows no transport and no SQL dialect.
    ("skill-engine", &["axum", "rmcp", "hyper", "reqwest"]),
    // The scenario runner drives the engine in process: no transport, no authoring crate.
    ("skill-scenarios", &["axum", "rmcp", "hyper", "reqwest", "skill-sdk", "skill-host"]),
    ("skill-client", &["axum", "rmcp", "sqlx"]),
    // The authoring command builds fast: no engine and no database (`package test` runs the
    // scenarios in `skill-core scenarios`).
    ("skill-cli", &["skill-engine", "skill-store", "skill-scenarios", "sqlx", "rusqlite", "axum"]),
    ("skill-executor", &["axum", "sqlx"]),
    ("skill-remote", &["axum", "sqlx"]),
    ("skill-blobs", &["axum", "rmcp"]),
    // The core links no authoring crate. It links rmcp's server only through the gateway crate
    // (and its client as the remote executor's, through skill-remote).
    ("skill-core", &["skill-sdk", "skill-host", "skill-cli", "skill-sdk-macros"]),
    // The server is the server: no authoring crate, and none of dev's tools (its CA).
    ("skill-server", &["skill-sdk", "skill-host", "skill-cli", "skill-sdk-macros", "rcgen"]),
    // dev builds the package's host with cargo and runs it: it links none of it.
    ("skill-dev", &["skill-sdk", "skill-host", "skill-cli", "skill-sdk-macros"]),
    // The gateway serves MCP over the engine: no authoring crate (and no HTTP client of its
    // own: see NOT_DIRECT; the trace exporter's comes through skill-http).
    ("skill-gateway", &["skill-sdk", "skill-host", "skill-cli"]),
];

/// Crates a crate must not list itself (its code cannot use them), though one of its
/// dependencies may bring them in for its own use.
const NOT_DIRECT: &[(&str, &[&str])] = &[
    // The gateway makes no outgoing request: only the trace exporter beneath skill-http does.
    ("skill-gateway", &["reqwest"]),
];

/// Each crate's normal or build dependency that `not_direct` says it must not list.
fn listed_forbidden(metadata: &Value, not_direct: &[(&str, &[&str])]) -> Vec<String> {
    let mut wrong = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        let Some((_, forbidden)) = not_direct.iter().find(|(krate, _)| *krate == name) else { continue };
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let listed = dependency["name"].as_str().unwrap_or_default();
            if dependency["kind"].as_str() != Some("dev") && forbidden.contains(&listed) {
                wrong.push(format!("{name} must not list {listed} among its dependencies"));
            }
        }
    }
    wrong
}

/// The workspace crates each crate may depend on (normal and build dependencies; tests may use
/// any). A crate missing here fails the check until it is added.
pub(crate) const ALLOWED: &[(&str, &[&str])] = &[
    ("skill-contract", &[]),
    ("skill-api", &["skill-contract"]),
    ("skill-client", &["skill-api", "skill-contract"]),
    ("skill-package", &["skill-api", "skill-client", "skill-conditions", "skill-contract"]),
    ("skill-sdk-macros", &["skill-contract"]),
    ("skill-sdk", &["skill-api", "skill-contract", "skill-sdk-macros"]),
    // The metrics' names are skill-api's, one list for every binary.
    ("skill-http", &["skill-api", "skill-traces"]),
    // The journal's proofs: the tree and signed checkpoints, no IO; its audit applies the API's
    // four-eyes rule.
    ("skill-journal", &["skill-api", "skill-contract"]),
    // OpenTelemetry traces: the exporter and the context in and out.
    ("skill-traces", &["skill-api"]),
    // CEL conditions: their own crate, so the contract (which every author compiles) does not
    // build the CEL parser.
    ("skill-conditions", &[]),
    // The executor loop: a client of the core, whatever runs the calls.
    ("skill-executor", &["skill-api", "skill-client", "skill-traces"]),
    // The runners of remote skills: what an executor daemon calls, behind the network guard.
    ("skill-remote", &["skill-api", "skill-client", "skill-contract", "skill-executor", "skill-traces"]),
    ("skill-host", &["skill-api", "skill-client", "skill-executor", "skill-http", "skill-sdk", "skill-traces"]),
    // The rows keep the states the API defines (and the contract's side effects and risk).
    ("skill-store", &["skill-api", "skill-contract", "skill-journal"]),
    // The blob stores beyond a folder (S3-compatible), behind skill-store's trait.
    ("skill-blobs", &["skill-store"]),
    ("skill-engine", &["skill-api", "skill-conditions", "skill-contract", "skill-journal", "skill-store"]),
    // The MCP gateway: rmcp's server over the engine.
    ("skill-gateway", &["skill-api", "skill-engine", "skill-http", "skill-traces"]),
    // The core's server: the API, the console, health and the journal's checkpoints.
    (
        "skill-server",
        &[
            "skill-api",
            "skill-engine",
            "skill-gateway",
            "skill-http",
            "skill-journal",
            "skill-scenarios",
            "skill-store",
        ],
    ),
    // `skill-core dev`: the server on an embedded database, the package's host and executors.
    (
        "skill-dev",
        &[
            "skill-api",
            "skill-client",
            "skill-engine",
            "skill-executor",
            "skill-http",
            "skill-journal",
            "skill-package",
            "skill-remote",
            "skill-server",
            "skill-store",
            "skill-traces",
        ],
    ),
    // The command: serve, dev, the executor, tokens, the journal.
    (
        "skill-core",
        &[
            "skill-api",
            "skill-blobs",
            "skill-client",
            "skill-dev",
            "skill-engine",
            "skill-executor",
            "skill-gateway",
            "skill-http",
            "skill-journal",
            "skill-package",
            "skill-remote",
            "skill-scenarios",
            "skill-server",
            "skill-store",
            "skill-traces",
        ],
    ),
    // Package scenario tests: a scratch core (the engine on its own SQLite database) whose
    // skills mocks answer; used by the core's /packages:test and `skill-core scenarios`.
    ("skill-scenarios", &["skill-api", "skill-conditions", "skill-contract", "skill-engine", "skill-store"]),
    // The authoring command; `package test` runs the scenarios in `skill-core scenarios`.
    ("skill-cli", &["skill-api", "skill-client", "skill-package", "skill-sdk"]),
    ("claims-integration", &["skill-host", "skill-sdk"]),
    // The fuzz targets drive the parsers of the core, the hosts and the contract crate.
    ("skill-fuzz", &["skill-api", "skill-contract", "skill-host", "skill-server"]),
    // Test fixtures: a dev-dependency of the suites, never a normal dependency.
    ("skill-fixtures", &[]),
    ("xtask", &[]),
];

/// Every workspace edge of `metadata` (`cargo metadata --no-deps`) that `allowed` does not list,
/// and every workspace crate `allowed` does not know, as messages.
pub(crate) fn wrong_edges(metadata: &Value, allowed: &[(&str, &[&str])]) -> Vec<String> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut wrong = Vec::new();
    for package in &packages {
        let name = package["name"].as_str().unwrap_or_default();
        let Some((_, may)) = allowed.iter().find(|(krate, _)| *krate == name) else {
            wrong.push(format!("{name} is not in xtask's list of allowed edges: add it with the crates it may use"));
            continue;
        };
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let target = dependency["name"].as_str().unwrap_or_default();
            if dependency["kind"] == "dev" || !members.contains(target) {
                continue;
            }
            if !may.contains(&target) {
                wrong.push(format!(
                    "{name} must not depend on {target} (it may use: {})",
                    if may.is_empty() { "no workspace crate".to_owned() } else { may.join(", ") }
                ));
            }
        }
    }
    wrong
}

/// Every package of `metadata` with more than one integration-test binary, named with its
/// binaries: each binary links the crate and its dependencies again, so a crate keeps its
/// integration tests as modules of one (`tests/it/main.rs`).
pub(crate) fn extra_test_binaries(metadata: &Value) -> Vec<String> {
    let mut extra = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let tests: Vec<&str> = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|target| target["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|kind| kind == "test")))
            .filter_map(|target| target["name"].as_str())
            .collect();
        if tests.len() > 1 {
            let name = package["name"].as_str().unwrap_or("?");
            extra.push(format!(
                "{name} has {} integration-test binaries ({}): make them modules of tests/it/main.rs",
                tests.len(),
                tests.join(", ")
            ));
        }
    }
    extra
}

/// The checks on the workspace.
pub(crate) fn check() -> Result<()> {
    println!("==> crate boundaries");
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(workspace_root())
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout).context("reading cargo metadata")?;
    let wrong = wrong_edges(&metadata, ALLOWED);
    if !wrong.is_empty() {
        bail!("wrong-way dependencies between workspace crates:\n  {}", wrong.join("\n  "));
    }
    println!("    workspace edges: as allowed for {} crates", ALLOWED.len());
    let extra = extra_test_binaries(&metadata);
    if !extra.is_empty() {
        bail!("more than one integration-test binary:\n  {}", extra.join("\n  "));
    }
    println!("    integration-test binaries: at most one per crate");
    let listed = listed_forbidden(&metadata, NOT_DIRECT);
    if !listed.is_empty() {
        bail!("dependencies listed where they do not belong:\n  {}", listed.join("\n  "));
    }
    for (krate, forbidden) in FORBIDDEN {
        let output = cargo()
            .args(["tree", "--quiet", "--edges", "normal", "--prefix", "none", "--format", "{p}", "--package", krate])
            .current_dir(workspace_root())
            .output()
            .context("running cargo tree")?;
        if !output.status.success() {
            bail!("cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        let tree = String::from_utf8_lossy(&output.stdout);
        let mut found: Vec<&str> = tree
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| forbidden.contains(name))
            .collect();
        found.sort_unstable();
        found.dedup();
        if !found.is_empty() {
            bail!(
                "{krate} must not depend on {} (run `cargo tree -p {krate} -e normal -i <crate>` to see why)",
                found.join(", ")
            );
        }
        println!("    {krate}: none of {}", forbidden.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn metadata(edges: &[(&str, &str, Option<&str>)]) -> Value {
        let names: BTreeSet<&str> = edges.iter().flat_map(|(from, to, _)| [*from, *to]).collect();
        let packages: Vec<Value> = names
            .iter()
            .map(|name| {
                let dependencies: Vec<Value> = edges
                    .iter()
                    .filter(|(from, _, _)| from == name)
                    .map(|(_, to, kind)| json!({"name": to, "kind": kind}))
                    .chain([json!({"name": "serde", "kind": null})])
                    .collect();
                json!({"name": name, "dependencies": dependencies})
            })
            .collect();
        json!({"packages": packages})
    }

    #[test]
    fn a_dependency_listed_where_it_may_not_be_is_named() {
        let not_direct: &[(&str, &[&str])] = &[("gateway", &["reqwest"])];
        assert!(listed_forbidden(&metadata(&[("gateway", "engine", None)]), not_direct).is_empty());
        assert!(listed_forbidden(&metadata(&[("gateway", "reqwest", Some("dev"))]), not_direct).is_empty());
        let wrong = listed_forbidden(&metadata(&[("gateway", "reqwest", None)]), not_direct);
        assert_eq!(wrong, ["gateway must not list reqwest among its dependencies"]);
    }

    #[test]
    fn a_second_test_binary_is_named() {
        let target = |name: &str, kind: &str| json!({"name": name, "kind": [kind]});
        let one = json!({"packages": [{"name": "core", "targets": [target("core", "lib"), target("it", "test")]}]});
        assert!(extra_test_binaries(&one).is_empty());
        let two = json!({"packages": [{"name": "core", "targets": [target("it", "test"), target("load", "example"), target("calls", "test")]}]});
        assert_eq!(
            extra_test_binaries(&two),
            ["core has 2 integration-test binaries (it, calls): make them modules of tests/it/main.rs"]
        );
    }

    #[test]
    fn a_wrong_way_edge_is_named() {
        let allowed: &[(&str, &[&str])] = &[("core", &["engine"]), ("engine", &[]), ("host", &[])];
        assert!(wrong_edges(&metadata(&[("core", "engine", None)]), allowed).is_empty());
        let wrong = wrong_edges(&metadata(&[("core", "engine", None), ("core", "host", None)]), allowed);
        assert_eq!(wrong, ["core must not depend on host (it may use: engine)"]);
        let wrong = wrong_edges(&metadata(&[("engine", "core", Some("build"))]), allowed);
        assert_eq!(wrong, ["engine must not depend on core (it may use: no workspace crate)"]);
    }

    #[test]
    fn test_edges_are_free_and_unknown_crates_are_named() {
        let allowed: &[(&str, &[&str])] = &[("core", &[]), ("host", &[])];
        assert!(wrong_edges(&metadata(&[("host", "core", Some("dev"))]), allowed).is_empty());
        let wrong = wrong_edges(&metadata(&[("core", "new", Some("dev"))]), allowed);
        assert_eq!(wrong.len(), 1);
        assert!(wrong[0].starts_with("new is not in xtask's list"), "{wrong:?}");
    }

    #[test]
    fn the_workspace_keeps_its_edges() {
        let output = cargo()
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
            .current_dir(workspace_root())
            .output()
            .expect("cargo metadata runs");
        let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata");
        assert_eq!(wrong_edges(&metadata, ALLOWED), Vec::<String>::new());
    }
}
