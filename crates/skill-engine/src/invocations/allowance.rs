//! What an executor principal may run: an allow-list the operator keeps on the principal (the
//! protocols, `local` entrypoints or modules, `http` and `mcp` origins, audiences), and the check
//! every claim meets — an executor declares at most that, or its claim is refused, so a second
//! `skills.execute` token cannot take a call another executor was meant to run.

use serde_json::{Value, json};
use skill_api::events::ExecutorAllowed;
use skill_api::{ExecutorAllowance, ExecutorAllowanceOut, PrincipalKind};
use skill_contract::codes::Code;
use skill_store::records::{Admission, ExecutorAllowance as Kept};

use crate::actor::Actor;
use crate::audiences::reserved_audience;
use crate::error::{Class, EngineError, Result};
use crate::identity::EXECUTION_PRINCIPAL;
use crate::{Engine, Origin};

const PROTOCOLS: &[&str] = &["local", "http", "mcp"];

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidExecutorAllowance, message).with("field", field)
}

/// A `local` entry: `module(.sub)*` or `module(.sub)*:function`, identifiers as Python's.
fn is_local_entry(entry: &str) -> bool {
    let identifier = |word: &str| {
        let mut chars = word.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let (module, function) = match entry.split_once(':') {
        Some((module, function)) => (module, Some(function)),
        None => (entry, None),
    };
    entry.len() <= 300 && module.split('.').all(identifier) && function.is_none_or(identifier)
}

/// Whether the `local` entries allow `entrypoint` (`module:function`): named exactly, or its
/// module (or a module above it) named.
fn local_allowed(entries: &[String], entrypoint: &str) -> bool {
    let module = entrypoint.split_once(':').map_or(entrypoint, |(module, _)| module);
    entries.iter().any(|entry| {
        entry == entrypoint
            || (!entry.contains(':')
                && (module == entry || module.strip_prefix(entry.as_str()).is_some_and(|rest| rest.starts_with('.'))))
    })
}

/// `scheme://host[:port]` lower-case without a trailing `/` (or `stdio:<name>` exactly, for
/// MCP); `422 invalid_executor_endpoint` otherwise.
pub(crate) fn normalized_origin(field: &str, value: &str, stdio: bool) -> Result<String> {
    let refuse = || {
        Err(EngineError::new(
            Class::Invalid,
            Code::InvalidExecutorEndpoint,
            format!(
                "{field}: {:?} is not an origin `http(s)://host[:port]`{}",
                cut(value, 200),
                if stdio { " or `stdio:<name>`" } else { "" }
            ),
        )
        .with("field", field)
        .with("value", cut(value, 200)))
    };
    if stdio && let Some(name) = value.strip_prefix("stdio:") {
        let ok =
            (1..=100).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        return if ok { Ok(value.to_owned()) } else { refuse() };
    }
    let lower = value.to_ascii_lowercase();
    let lower = lower.strip_suffix('/').unwrap_or(&lower);
    let Some(rest) = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://")) else { return refuse() };
    let port = if let Some(inner) = rest.strip_prefix('[') {
        let Some((address, after)) = inner.split_once(']') else { return refuse() };
        if address.is_empty() || !address.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
            return refuse();
        }
        after
    } else {
        let end = rest.find(':').unwrap_or(rest.len());
        let host = &rest[..end];
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b))
        {
            return refuse();
        }
        &rest[end..]
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| (1..=5).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()));
    if port_ok { Ok(lower.to_owned()) } else { refuse() }
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The allowance checked and normalized (origins lower-case, duplicates dropped). A refusal
/// names the field; when the allowance was written in a document, `under` (`spec.skills`) is
/// where, and the refusal's `path` says it.
pub(crate) fn checked(allowance: &ExecutorAllowance, under: Option<&str>) -> Result<Kept> {
    let placed = |field: &str, error: EngineError| match under {
        Some(root) => error.with("path", format!("{root}.{field}")),
        None => error,
    };
    let invalid = |field: &str, message: String| placed(field, invalid(field, message));
    let mut protocols = Vec::new();
    for protocol in &allowance.protocols {
        if !PROTOCOLS.contains(&protocol.as_str()) {
            return Err(invalid("protocols", format!("a protocol is local, http or mcp, not {protocol:?}")));
        }
        if !protocols.contains(protocol) {
            protocols.push(protocol.clone());
        }
    }
    let declared = |protocol: &str| protocols.iter().any(|p| p == protocol);
    for (field, count, max, protocol) in [
        ("local", allowance.local.len(), 500, "local"),
        ("httpOrigins", allowance.http_origins.len(), 100, "http"),
        ("mcpOrigins", allowance.mcp_origins.len(), 100, "mcp"),
    ] {
        if count > max {
            return Err(invalid(field, format!("`{field}` has at most {max} items")));
        }
        if count > 0 && !declared(protocol) {
            return Err(invalid(field, format!("`{field}` is given, but `protocols` does not allow {protocol}")));
        }
    }
    if allowance.audiences.len() > 100 {
        return Err(invalid("audiences", "`audiences` has at most 100 items".to_owned()));
    }
    if let Some(bad) = allowance.local.iter().find(|entry| !is_local_entry(entry)) {
        return Err(invalid(
            "local",
            format!(
                "{:?} is not `module`, `module.sub` or `module:function`",
                bad.chars().take(120).collect::<String>()
            ),
        ));
    }
    for audience in &allowance.audiences {
        let valid = (1..=200).contains(&audience.len())
            && audience.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b));
        if !valid {
            return Err(invalid("audiences", "an audience is 1 to 200 letters, digits and . _ : / -".to_owned()));
        }
        if reserved_audience(audience, None) {
            return Err(invalid("audiences", format!("{audience} is reserved: no executor carries tokens for it")));
        }
    }
    let unique = |items: Vec<String>| {
        let mut kept: Vec<String> = Vec::new();
        for item in items {
            if !kept.contains(&item) {
                kept.push(item);
            }
        }
        kept
    };
    let origins = |field: &str, written: &[String], stdio: bool| -> Result<Vec<String>> {
        written.iter().map(|o| normalized_origin(field, o, stdio).map_err(|error| placed(field, error))).collect()
    };
    let http = origins("httpOrigins", &allowance.http_origins, false)?;
    let mcp = origins("mcpOrigins", &allowance.mcp_origins, true)?;
    Ok(Kept {
        protocols,
        local: unique(allowance.local.clone()),
        http_origins: unique(http),
        mcp_origins: unique(mcp),
        audiences: unique(allowance.audiences.clone()),
    })
}

fn shown(kept: Kept) -> ExecutorAllowance {
    ExecutorAllowance {
        protocols: kept.protocols,
        local: kept.local,
        http_origins: kept.http_origins,
        mcp_origins: kept.mcp_origins,
        audiences: kept.audiences,
    }
}

/// `403 executor_not_allowed`: the claim declares `value` under `field`, beyond the allowance.
fn not_allowed(actor: &Actor, field: &str, value: &str, allowed: &[String]) -> EngineError {
    let name = &actor.principal().name;
    EngineError::new(
        Class::Forbidden,
        Code::ExecutorNotAllowed,
        format!(
            "the executor {name} may not run {field} {value:?}: the operator allows an executor what it runs (skill-core allow --principal {name} …)"
        ),
    )
    .with("principal", name.as_str())
    .with("field", field)
    .with("value", value.chars().take(200).collect::<String>())
    .with("allowed", json!(allowed))
}

/// `Ok` when the claim declares at most what the operator allowed `actor`.
pub(crate) fn check_admission(actor: &Actor, protocols: &[String], admission: &Admission) -> Result<()> {
    let Some(allowed) = actor.allowance() else {
        let name = &actor.principal().name;
        return Err(EngineError::new(
            Class::Forbidden,
            Code::ExecutorNotAllowed,
            format!(
                "the operator allowed the executor {name} nothing: set what it runs with `skill-core allow --principal {name} --protocol local --local <module>` (or POST /principals/{name}/executor-allowance)"
            ),
        )
        .with("principal", name.as_str())
        .with("allowed", Value::Null));
    };
    if let Some(protocol) = protocols.iter().find(|p| !allowed.protocols.contains(p)) {
        return Err(not_allowed(actor, "protocols", protocol, &allowed.protocols));
    }
    if let Some(entry) = admission.local_entrypoints.iter().find(|e| !local_allowed(&allowed.local, e)) {
        return Err(not_allowed(actor, "localEntrypoints", entry, &allowed.local));
    }
    if let Some(origin) = admission.http_origins.iter().find(|o| !allowed.http_origins.contains(o)) {
        return Err(not_allowed(actor, "httpOrigins", origin, &allowed.http_origins));
    }
    if let Some(endpoint) = admission.mcp_endpoints.iter().find(|e| !allowed.mcp_origins.contains(e)) {
        return Err(not_allowed(actor, "mcpEndpoints", endpoint, &allowed.mcp_origins));
    }
    if let Some(audience) = admission.audiences.iter().find(|a| !allowed.audiences.contains(a)) {
        return Err(not_allowed(actor, "audiences", audience, &allowed.audiences));
    }
    Ok(())
}

impl Engine {
    /// Sets what the executor `principal` (an id or a name) may run, whole (`org.manage`; the
    /// operator's own command passes no actor).
    pub async fn allow_executor(
        &self,
        actor: Option<&Actor>,
        principal: &str,
        allowance: &ExecutorAllowance,
        request_id: Option<&str>,
    ) -> Result<ExecutorAllowanceOut> {
        if let Some(actor) = actor {
            actor.require("org.manage")?;
        }
        let found = self.principal_by_reference(principal).await?;
        if found.kind != PrincipalKind::Executor || found.name == EXECUTION_PRINCIPAL {
            return Err(invalid(
                "principal",
                format!(
                    "{} is a {}{}: only an executor runs calls",
                    found.name,
                    found.kind,
                    if found.name == EXECUTION_PRINCIPAL { " that never claims calls" } else { "" }
                ),
            ));
        }
        self.not_an_agent(&found, "an allow-list set by hand").await?;
        let kept = checked(allowance, None)?;
        let origin = actor.map_or_else(Origin::default, |actor| Origin::of(actor, request_id));
        let allowed = ExecutorAllowed {
            allowance: skill_api::ExecutorAllowance {
                protocols: kept.protocols.clone(),
                local: kept.local.clone(),
                http_origins: kept.http_origins.clone(),
                mcp_origins: kept.mcp_origins.clone(),
                audiences: kept.audiences.clone(),
            },
        };
        let event = self.event(format!("principal:{}", found.id), &allowed, &origin);
        self.store.set_executor_allowance(&found.id, Some(&kept), &event).await?;
        Ok(ExecutorAllowanceOut { principal_id: found.id, name: found.name, allowance: Some(shown(kept)) })
    }

    /// What the executor `principal` (an id or a name) may run (`org.read`).
    pub async fn executor_allowance(&self, actor: &Actor, principal: &str) -> Result<ExecutorAllowanceOut> {
        actor.require("org.read")?;
        let found = self.principal_by_reference(principal).await?;
        let kept = self.store.executor_allowance(&found.id).await?;
        Ok(ExecutorAllowanceOut { principal_id: found.id, name: found.name, allowance: kept.map(shown) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_allows_its_functions_and_its_submodules_but_not_its_neighbours() {
        let entries = vec!["claims_integration.skills".to_owned(), "other:run".to_owned()];
        assert!(local_allowed(&entries, "claims_integration.skills:send_reply"));
        assert!(local_allowed(&entries, "claims_integration.skills.more:x"));
        assert!(!local_allowed(&entries, "claims_integration.skillsx:send_reply"), "a prefix is not a module");
        assert!(!local_allowed(&entries, "claims_integration:send_reply"), "the module above");
        assert!(local_allowed(&entries, "other:run"));
        assert!(!local_allowed(&entries, "other:walk"), "an entrypoint is exact");
        assert!(is_local_entry("a.b_c:d") && is_local_entry("a") && !is_local_entry("a:") && !is_local_entry("1a"));
        assert!(!is_local_entry("a..b") && !is_local_entry("a:b:c") && !is_local_entry("a b"));
    }

    #[test]
    fn an_allowance_names_its_protocols_and_keeps_origins_in_one_form() {
        let request = ExecutorAllowance {
            protocols: vec!["http".into(), "http".into()],
            http_origins: vec!["HTTPS://Svc.Example/".into(), "https://svc.example".into()],
            audiences: vec!["claims".into()],
            ..ExecutorAllowance::default()
        };
        let kept = checked(&request, None).expect("an allowance");
        assert_eq!(
            (kept.protocols, kept.http_origins),
            (vec!["http".to_owned()], vec!["https://svc.example".to_owned()])
        );
        let local_without = ExecutorAllowance { local: vec!["m".into()], ..ExecutorAllowance::default() };
        assert_eq!(checked(&local_without, None).expect_err("local not allowed").code, Code::InvalidExecutorAllowance);
        let placed = checked(&local_without, Some("spec.skills")).expect_err("in a document");
        assert_eq!(
            (placed.details["field"].clone(), placed.details["path"].clone()),
            (json!("local"), json!("spec.skills.local"))
        );
        let reserved = ExecutorAllowance { audiences: vec![" Skill-Core".into()], ..ExecutorAllowance::default() };
        assert!(checked(&reserved, None).is_err());
        let path = ExecutorAllowance {
            protocols: vec!["http".into()],
            http_origins: vec!["https://h/x".into()],
            ..ExecutorAllowance::default()
        };
        assert_eq!(checked(&path, None).expect_err("a path").code, Code::InvalidExecutorEndpoint);
        let placed = checked(&path, Some("spec.skills")).expect_err("a path in a document");
        assert_eq!(placed.details["path"], json!("spec.skills.httpOrigins"));
    }

    #[test]
    fn origins_are_normalized_or_refused() {
        assert_eq!(normalized_origin("httpOrigins", "HTTPS://Svc.Example/", false).expect("ok"), "https://svc.example");
        assert_eq!(normalized_origin("httpOrigins", "http://[::1]:8080", false).expect("ok"), "http://[::1]:8080");
        assert_eq!(normalized_origin("mcpEndpoints", "stdio:Tools", true).expect("ok"), "stdio:Tools");
        for bad in
            ["https://h/x", "ftp://h", "https://user@h", "https://h:123456", "https://", "stdio:x", "https://h?q"]
        {
            let error = normalized_origin("httpOrigins", bad, false).expect_err(bad);
            assert_eq!(error.code, Code::InvalidExecutorEndpoint, "{bad}");
        }
        assert!(normalized_origin("mcpEndpoints", "stdio:a b", true).is_err());
    }
}
