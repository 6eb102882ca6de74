//! Where a skill runs: `local` (an entrypoint in a skill host), `http` (an author's service) or
//! `mcp` (a tool on an MCP server), with the per-protocol address rules and the IAM audience.

use serde_json::{Map, Value, json};

use crate::fields::{self, join, present};
use crate::secret_scan::{is_secret_key, looks_like_secret};
use crate::violation::{ContractError, Problem, Violation};

/// Longest endpoint or entrypoint.
pub const MAX_ADDRESS: usize = 2000;
/// Most scopes in `auth.scopes`.
pub const MAX_SCOPES: usize = 20;
const MAX_AUDIENCE: usize = 200;

/// The protocol an implementation is called over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    Local,
    Http,
    Mcp,
}

impl Protocol {
    pub const ALLOWED: &'static [&'static str] = &["http", "local", "mcp"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Http => "http",
            Self::Mcp => "mcp",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "local" => Some(Self::Local),
            "http" => Some(Self::Http),
            "mcp" => Some(Self::Mcp),
            _ => None,
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The IAM audience a caller's token must be issued for, and the scopes it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    pub(super) audience: String,
    pub(super) scopes: Vec<String>,
}

impl Auth {
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Without duplicates, in the order given.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    fn to_export_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("audience".into(), json!(self.audience));
        if !self.scopes.is_empty() {
            map.insert("scopes".into(), json!(self.scopes));
        }
        Value::Object(map)
    }
}

/// A validated implementation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Implementation {
    /// A function in the package's skill host, `module.path:function`.
    Local { entrypoint: String },
    /// `POST <endpoint>` on an author's service.
    Http { endpoint: String, auth: Option<Auth> },
    /// `tools/call` of `tool` on the MCP server at `endpoint` (`http(s)://` or `stdio:<name>`).
    Mcp { endpoint: String, tool: String, auth: Option<Auth> },
}

impl Implementation {
    /// A local implementation; `entrypoint` must look like `module.path:function`.
    pub fn local(entrypoint: &str) -> Result<Self, ContractError> {
        Self::from_json(&json!({"protocol": "local", "entrypoint": entrypoint}))
    }

    /// An HTTP implementation at `endpoint`, optionally for an IAM audience.
    pub fn http(endpoint: &str, audience: Option<&str>) -> Result<Self, ContractError> {
        let mut doc = json!({"protocol": "http", "endpoint": endpoint});
        if let Some(audience) = audience {
            doc["auth"] = json!({"audience": audience});
        }
        Self::from_json(&doc)
    }

    /// An MCP implementation: `tool` on the server at `endpoint`.
    pub fn mcp(endpoint: &str, tool: &str, audience: Option<&str>) -> Result<Self, ContractError> {
        let mut doc = json!({"protocol": "mcp", "endpoint": endpoint, "entrypoint": tool});
        if let Some(audience) = audience {
            doc["auth"] = json!({"audience": audience});
        }
        Self::from_json(&doc)
    }

    fn from_json(doc: &Value) -> Result<Self, ContractError> {
        Self::parse(doc, &super::NormalizeOptions::default())
    }

    /// Reads an implementation document (`{protocol, endpoint?, auth?, entrypoint?}`).
    pub fn parse(doc: &Value, options: &super::NormalizeOptions) -> Result<Self, ContractError> {
        let mut out = Vec::new();
        let parsed = parse(Some(doc), options, &mut out);
        match (parsed, ContractError::from_violations(out)) {
            (Some(implementation), None) => Ok(implementation),
            (_, Some(error)) => Err(error),
            (None, None) => unreachable!("invariant: a failed parse reports a violation"),
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self {
            Self::Local { .. } => Protocol::Local,
            Self::Http { .. } => Protocol::Http,
            Self::Mcp { .. } => Protocol::Mcp,
        }
    }

    pub fn endpoint(&self) -> Option<&str> {
        match self {
            Self::Local { .. } => None,
            Self::Http { endpoint, .. } | Self::Mcp { endpoint, .. } => Some(endpoint),
        }
    }

    /// The local entrypoint or the MCP tool name.
    pub fn entrypoint(&self) -> Option<&str> {
        match self {
            Self::Local { entrypoint } => Some(entrypoint),
            Self::Http { .. } => None,
            Self::Mcp { tool, .. } => Some(tool),
        }
    }

    pub fn auth(&self) -> Option<&Auth> {
        match self {
            Self::Local { .. } => None,
            Self::Http { auth, .. } | Self::Mcp { auth, .. } => auth.as_ref(),
        }
    }

    /// The SDK's export form: `local` → `{protocol, entrypoint}`; `http` → `{protocol,
    /// endpoint, auth?}`; `mcp` → `{protocol, endpoint, entrypoint, auth?}`.
    pub fn to_export_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("protocol".into(), json!(self.protocol().as_str()));
        if let Some(endpoint) = self.endpoint() {
            map.insert("endpoint".into(), json!(endpoint));
        }
        if let Some(entrypoint) = self.entrypoint() {
            map.insert("entrypoint".into(), json!(entrypoint));
        }
        if let Some(auth) = self.auth() {
            map.insert("auth".into(), auth.to_export_json());
        }
        Value::Object(map)
    }

    /// The core's stored form: all four keys, `null` where absent.
    pub fn to_normalized_json(&self) -> Value {
        json!({
            "protocol": self.protocol().as_str(),
            "endpoint": self.endpoint(),
            "auth": self.auth().map(|a| json!({"audience": a.audience, "scopes": a.scopes})),
            "entrypoint": self.entrypoint(),
        })
    }
}

const KEYS: &[&str] = &["protocol", "endpoint", "auth", "entrypoint"];
const AUTH_KEYS: &[&str] = &["audience", "scopes"];
const LOCAL_RULE: &str = "a local entrypoint `module.path:function` (letters, digits and `_`)";
const URL_RULE: &str = "an http:// or https:// URL with a host";
const MCP_ENDPOINT_RULE: &str = "an http:// or https:// URL, or stdio:<name>";
const TOOL_RULE: &str = "an MCP tool name (letters, digits, `_`, `.`, `-`, `/`; at most 200)";
const SCOPE_RULE: &str = "a scope of letters, digits and `_.:*/-` (1 to 200 characters)";
const AUDIENCE_RULE: &str = "an audience name without spaces or control characters";
const PLACEHOLDER_ORIGIN: &str = "https://placeholder.invalid";

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `module.path:function`, ASCII identifiers.
pub(crate) fn is_local_entrypoint(text: &str) -> bool {
    text.split_once(':')
        .is_some_and(|(module, function)| module.split('.').all(is_identifier) && is_identifier(function))
}

pub(crate) fn is_tool_name(text: &str) -> bool {
    let mut chars = text.chars();
    text.chars().count() <= 200
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
}

fn is_scope(text: &str) -> bool {
    (1..=200).contains(&text.len()) && text.chars().all(|c| c.is_ascii_alphanumeric() || "_.:*/-".contains(c))
}

/// Replaces a leading `${NAME}` by a stand-in origin when placeholders are allowed.
fn substitute_placeholder(endpoint: &str, allow: bool) -> Option<String> {
    let rest = endpoint.strip_prefix("${")?;
    let (name, tail) = rest.split_once('}')?;
    (allow && is_identifier(name)).then(|| format!("{PLACEHOLDER_ORIGIN}{tail}"))
}

/// Checks the address of an MCP server: an `http(s)://` URL without credentials, or
/// `stdio:<name>` for a server the executor starts from its own configuration.
pub(crate) fn check_mcp_address(text: &str, field: &str, out: &mut Vec<Violation>) {
    if let Some(name) = text.strip_prefix("stdio:") {
        let ok =
            (1..=100).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !ok {
            out.push(Violation::new(field, Problem::BadFormat { found: text.to_owned(), rule: MCP_ENDPOINT_RULE }));
        }
    } else {
        check_url(text, field, MCP_ENDPOINT_RULE, out);
    }
}

/// Checks an `http(s)://` URL; credentials in it are secret material.
fn check_url(url: &str, field: &str, rule: &'static str, out: &mut Vec<Violation>) {
    let bad =
        |out: &mut Vec<Violation>| out.push(Violation::new(field, Problem::BadFormat { found: url.to_owned(), rule }));
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad(out);
    }
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else {
        return bad(out);
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return out.push(Violation::new(field, Problem::SecretMaterial));
    }
    let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
    if host.is_empty() {
        return bad(out);
    }
    let query = rest.split_once('?').map(|(_, q)| q).unwrap_or_default();
    if query.split('&').any(|pair| pair.split_once('=').is_some_and(|(k, v)| is_secret_key(k) && !v.is_empty())) {
        out.push(Violation::new(field, Problem::SecretMaterial));
    }
}

fn parse_auth(value: &Value, field: &str, out: &mut Vec<Violation>) -> Option<Auth> {
    let Value::Object(map) = value else {
        out.push(fields::wrong_type(field, "an object with `audience` and optional `scopes`", value));
        return None;
    };
    let before = out.len();
    for key in map.keys().filter(|k| !AUTH_KEYS.contains(&k.as_str())) {
        let problem = if is_secret_key(key) {
            Problem::SecretMaterial
        } else {
            Problem::UnknownKeys { unknown: vec![key.clone()], allowed: AUTH_KEYS }
        };
        out.push(Violation::new(join(field, key), problem));
    }
    let audience_field = join(field, "audience");
    let audience = match present(map, "audience") {
        None => {
            out.push(Violation::new(&audience_field, Problem::Missing { expected: "the IAM audience of the service" }));
            None
        }
        Some(value) => fields::bounded_string(value, &audience_field, MAX_AUDIENCE, out).and_then(|text| {
            if looks_like_secret(text) {
                out.push(Violation::new(&audience_field, Problem::SecretMaterial));
                None
            } else if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
                out.push(Violation::new(
                    &audience_field,
                    Problem::BadFormat { found: text.to_owned(), rule: AUDIENCE_RULE },
                ));
                None
            } else {
                Some(text.to_owned())
            }
        }),
    };
    let scopes_field = join(field, "scopes");
    let mut scopes: Vec<String> = Vec::new();
    match present(map, "scopes") {
        None => {}
        Some(Value::Array(items)) => {
            if items.len() > MAX_SCOPES {
                out.push(Violation::new(&scopes_field, Problem::TooMany { count: items.len(), max: MAX_SCOPES }));
            }
            for (index, item) in items.iter().enumerate() {
                let Some(scope) = item.as_str() else {
                    out.push(fields::wrong_type(&scopes_field, "a string", item).at(index));
                    continue;
                };
                if looks_like_secret(scope) {
                    out.push(Violation::new(&scopes_field, Problem::SecretMaterial).at(index));
                } else if !is_scope(scope) {
                    out.push(
                        Violation::new(&scopes_field, Problem::BadFormat { found: scope.to_owned(), rule: SCOPE_RULE })
                            .at(index),
                    );
                } else if !scopes.iter().any(|s| s == scope) {
                    scopes.push(scope.to_owned());
                }
            }
        }
        Some(other) => out.push(fields::wrong_type(&scopes_field, "a list of scopes", other)),
    }
    (out.len() == before).then(|| Auth { audience: audience.unwrap_or_default(), scopes })
}

/// Reads `implementation`, reporting every broken rule into `out`.
pub(crate) fn parse(
    value: Option<&Value>,
    options: &super::NormalizeOptions,
    out: &mut Vec<Violation>,
) -> Option<Implementation> {
    const FIELD: &str = "implementation";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        out.push(Violation::new(
            FIELD,
            Problem::Missing { expected: "an object with `protocol` (http, local or mcp)" },
        ));
        return None;
    };
    let Value::Object(map) = value else {
        out.push(fields::wrong_type(FIELD, "an object", value));
        return None;
    };
    let before = out.len();
    fields::check_keys(map, KEYS, FIELD, out);
    let protocol: Option<Protocol> = match present(map, "protocol") {
        None => {
            out.push(Violation::new("implementation.protocol", Problem::MissingWord { allowed: Protocol::ALLOWED }));
            None
        }
        Some(value) => fields::string(value, "implementation.protocol", out).and_then(|word| {
            let parsed = Protocol::parse(word);
            if parsed.is_none() {
                out.push(Violation::new(
                    "implementation.protocol",
                    Problem::NotAllowed { found: word.to_owned(), allowed: Protocol::ALLOWED },
                ));
            }
            parsed
        }),
    };
    let endpoint =
        present(map, "endpoint").and_then(|v| fields::bounded_string(v, "implementation.endpoint", MAX_ADDRESS, out));
    let entrypoint = present(map, "entrypoint")
        .and_then(|v| fields::bounded_string(v, "implementation.entrypoint", MAX_ADDRESS, out));
    let auth = present(map, "auth").and_then(|v| parse_auth(v, "implementation.auth", out));
    let protocol = protocol?;

    let conflict = |field: &str, reason: &str| Violation::new(field, Problem::Conflict { reason: reason.to_owned() });
    let implementation = match protocol {
        Protocol::Local => {
            if present(map, "endpoint").is_some() {
                out.push(conflict(
                    "implementation.endpoint",
                    "a local implementation has no endpoint: the skill host runs the entrypoint",
                ));
            }
            if present(map, "auth").is_some() {
                out.push(conflict(
                    "implementation.auth",
                    "a local implementation has no auth: nothing is called over the network",
                ));
            }
            match entrypoint {
                None if present(map, "entrypoint").is_none() => {
                    out.push(Violation::new("implementation.entrypoint", Problem::Missing { expected: LOCAL_RULE }));
                    None
                }
                None => None,
                Some(text) if !is_local_entrypoint(text) => {
                    out.push(Violation::new(
                        "implementation.entrypoint",
                        Problem::BadFormat { found: text.to_owned(), rule: LOCAL_RULE },
                    ));
                    None
                }
                Some(text) => Some(Implementation::Local { entrypoint: text.to_owned() }),
            }
        }
        Protocol::Http | Protocol::Mcp => {
            let endpoint = match endpoint {
                None if present(map, "endpoint").is_none() => {
                    let rule = if protocol == Protocol::Http { URL_RULE } else { MCP_ENDPOINT_RULE };
                    out.push(Violation::new("implementation.endpoint", Problem::Missing { expected: rule }));
                    None
                }
                None => None,
                Some(text) => {
                    let checked =
                        substitute_placeholder(text, options.allow_placeholders).unwrap_or_else(|| text.to_owned());
                    if protocol == Protocol::Mcp {
                        check_mcp_address(&checked, "implementation.endpoint", out);
                    } else {
                        check_url(&checked, "implementation.endpoint", URL_RULE, out);
                    }
                    Some(text.to_owned())
                }
            };
            if protocol == Protocol::Http {
                if present(map, "entrypoint").is_some() {
                    out.push(conflict(
                        "implementation.entrypoint",
                        "an http implementation has no entrypoint: the endpoint is the address of the skill",
                    ));
                }
                endpoint.map(|endpoint| Implementation::Http { endpoint, auth })
            } else {
                let tool = match entrypoint {
                    None if present(map, "entrypoint").is_none() => {
                        out.push(Violation::new(
                            "implementation.entrypoint",
                            Problem::Missing { expected: "the MCP tool name" },
                        ));
                        None
                    }
                    None => None,
                    Some(text) if !is_tool_name(text) => {
                        out.push(Violation::new(
                            "implementation.entrypoint",
                            Problem::BadFormat { found: text.to_owned(), rule: TOOL_RULE },
                        ));
                        None
                    }
                    Some(text) => Some(text.to_owned()),
                };
                endpoint.zip(tool).map(|(endpoint, tool)| Implementation::Mcp { endpoint, tool, auth })
            }
        }
    };
    (out.len() == before).then_some(implementation).flatten()
}
