//! Agents as a package declares them (`agents/*.yaml`, `kind: Agent`): who the agent is (its
//! kind and permissions), the skill versions assigned to it, the task types it works on, what an
//! executor agent may run, and where the requests of an agent's writes go.
//!
//! The shape and the rules that need nothing but the document are here, so the offline check
//! and the core refuse the same documents with the same paths; what needs the catalog
//! (unknown versions, disabled ones, workspaces, the installer's own permissions) is the core's.

use std::collections::BTreeSet;

use crate::DocumentProblem;
use crate::codes::Code;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{SkillRef, is_permission};

/// The permission an agent needs to call skills on its own account.
pub const INVOKE_PERMISSION: &str = "skills.invoke";
/// The permission an executor needs to claim calls.
pub const EXECUTE_PERMISSION: &str = "skills.execute";
/// The permission no agent ever holds: a person decides what an agent asked for.
pub const DECIDE_PERMISSION: &str = "approvals.decide";
/// The permission that administers the organisation: who may do what, and what others run.
pub const MANAGE_PERMISSION: &str = "org.manage";

/// The permissions only a person holds — never the principal of an agent or an executor (nor
/// the core's own), in a document, a grant, or a database from before this rule — each with
/// why. An agent is operated by a person and never holds power over people: nothing it holds
/// changes who may do what, publishes what others run, or decides what an agent asked for.
///
/// `org.manage` guards the principals (disabling them, their assigned versions, an executor's
/// allow-list), tokens (an agent's too), workspaces, and publishing skills, task types,
/// artifact types, work rules, processes and packages (which grant agents their permissions);
/// no other permission administers principals or tokens.
pub const PEOPLE_ONLY: &[(&str, &str)] = &[
    (
        MANAGE_PERMISSION,
        "it changes who may do what (principals, tokens, grants, workspaces) and publishes what others run (skills, task types, rules, processes, packages)",
    ),
    (DECIDE_PERMISSION, "a person decides what an agent asks for"),
];

/// What an agent or an executor may hold instead of a [`PEOPLE_ONLY`] permission.
pub const AGENT_MAY_HOLD: &str = "org.read, skills.invoke (an agent), skills.execute (an executor), tasks.read@…, tasks.write@…, facts.read@…, facts.write@…, knowledge.read@…, knowledge.write@…, and the custom permissions its skills' contracts require";

/// The code of the refusal when an agent or executor would hold a [`PEOPLE_ONLY`] permission.
pub const PERMISSION_FORBIDDEN: Code = Code::AgentPermissionForbidden;

/// Whether `written` (`PERMISSION` or `PERMISSION@WORKSPACE`) is one only a person holds.
pub fn people_only(written: &str) -> bool {
    let permission = split_permission(written).0;
    PEOPLE_ONLY.iter().any(|(held, _)| *held == permission)
}

/// Why a principal of `kind` (`agent`, `executor`) is refused `written`, and what it may hold
/// instead: the message of [`PERMISSION_FORBIDDEN`] wherever it is raised.
pub fn people_only_message(kind: &str, written: &str) -> String {
    let permission = split_permission(written).0;
    let why = PEOPLE_ONLY.iter().find(|(held, _)| *held == permission).map_or("", |(_, why)| why);
    format!(
        "an {kind} never holds {permission}, which only a person holds: {why}; an {kind} is operated by a person and holds no power over people — it may hold {AGENT_MAY_HOLD}"
    )
}
/// The most permissions, assigned versions and task types an agent document lists.
pub const MAX_PERMISSIONS: usize = 100;
pub const MAX_INVOKE: usize = 500;
pub const MAX_TASK_TYPES: usize = 100;
/// The longest an agent's request may wait for a person (30 days), and the default (24 h).
pub const MAX_REQUEST_SECONDS: u64 = 30 * 24 * 3600;
pub const DEFAULT_REQUEST_SECONDS: u64 = 24 * 3600;

/// The `spec` of an `Agent` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSpec {
    /// A version of the document, for its author (the agent itself is not versioned: applying a
    /// document replaces what the agent may do, whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub identity: AgentIdentity,
    /// For an agent, `invoke`: the versions assigned to its principal; for an executor, what it
    /// may run.
    #[serde(default)]
    pub skills: AgentSkills,
    #[serde(default)]
    pub work: AgentWork,
    /// `{kind: skills}` for an executor agent (the package's skills executor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ExecutorKind>,
    /// Where an agent's external writes without a basis become requests a person decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<AgentRequests>,
}

/// Who the agent is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentIdentity {
    pub kind: AgentKind,
    /// `PERMISSION` organisation-wide or `PERMISSION@WORKSPACE` in one workspace.
    #[serde(default)]
    pub permissions: Vec<String>,
}

/// An agent that calls skills, or an executor that runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    Agent,
    Executor,
}

impl AgentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Executor => "executor",
        }
    }
}

/// `spec.skills`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSkills {
    /// The versions assigned to the agent: `name@version`, or `{skill: name@version, readOnly:
    /// true}` to list and call it only as far as it does not write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invoke: Vec<InvokeEntry>,
    /// An executor's protocols: `local`, `http`, `mcp`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<String>,
    /// An executor's local modules or `module:function` entrypoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_origins: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_origins: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
}

impl AgentSkills {
    /// Whether any of the executor's allow-list is given.
    pub fn declares_execution(&self) -> bool {
        !(self.protocols.is_empty()
            && self.local.is_empty()
            && self.http_origins.is_empty()
            && self.mcp_origins.is_empty()
            && self.audiences.is_empty())
    }
}

/// One assigned version.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum InvokeEntry {
    Pinned(String),
    Detailed(DetailedEntry),
}

impl<'de> Deserialize<'de> for InvokeEntry {
    /// A string, or a mapping read with its own rules (so an unknown key or a wrong type is named).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(deserializer)? {
            Value::String(skill) => Ok(Self::Pinned(skill)),
            object @ Value::Object(_) => DetailedEntry::deserialize(object)
                .map(Self::Detailed)
                .map_err(|error| D::Error::custom(format!("an invoke entry {{skill, readOnly}}: {error}"))),
            _ => Err(D::Error::custom("an invoke entry is name@version or {skill: name@version, readOnly: true}")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetailedEntry {
    pub skill: String,
    #[serde(default)]
    pub read_only: bool,
}

impl InvokeEntry {
    /// The `name@version` written.
    pub fn skill(&self) -> &str {
        match self {
            Self::Pinned(skill) | Self::Detailed(DetailedEntry { skill, .. }) => skill,
        }
    }

    pub fn read_only(&self) -> bool {
        matches!(self, Self::Detailed(DetailedEntry { read_only: true, .. }))
    }
}

/// `spec.work`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentWork {
    /// The task types (by key) the agent works on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_types: Vec<String>,
}

/// `spec.executor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutorKind {
    /// `skills`: the executor of a package's skills.
    pub kind: String,
}

/// `spec.requests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentRequests {
    /// The workspace (by key) the request tasks are created in.
    pub workspace: String,
    /// How long a request waits for a person before it expires: `90m`, `24h`, `7d` (default
    /// 24h, at most 30d).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<String>,
}

impl AgentRequests {
    /// How long a request waits, in seconds.
    pub fn expires_in_seconds(&self) -> u64 {
        self.expires_in.as_deref().and_then(parse_duration).unwrap_or(DEFAULT_REQUEST_SECONDS)
    }
}

/// `90s`, `30m`, `24h`, `7d`: a whole number of seconds, minutes, hours or days.
pub fn parse_duration(text: &str) -> Option<u64> {
    let unit = match text.chars().last()? {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || digits.len() > 7 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok().map(|n| n * unit)
}

/// A problem of an agent document: `invalid_agent`, or the reference's `skills_invoke_not_permitted`.
fn problem(path: impl Into<String>, code: Code, message: impl Into<String>, hint: &str) -> DocumentProblem {
    DocumentProblem::new(path, code, message, hint)
}

/// Whether `key` names an agent: 1 to 100 lower-case letters, digits, `.`, `_`, `-`, starting
/// with a letter or digit — it is also its principal's name.
pub fn is_agent_key(key: &str) -> bool {
    (1..=100).contains(&key.len())
        && key.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Whether `key` names a workspace: 1 to 100 lower-case letters, digits, `-` and `_`.
pub fn is_workspace_key(key: &str) -> bool {
    (1..=100).contains(&key.len())
        && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_".contains(&b))
}

/// Reads an agent document's `spec`: the spec, or the first problem of its shape (an unknown
/// field, a wrong type), with its path.
pub fn read_spec(spec: &Value) -> Result<AgentSpec, DocumentProblem> {
    if !spec.is_object() {
        return Err(problem(
            "spec",
            Code::InvalidAgent,
            "an agent's spec is a mapping",
            "write spec: {identity: {kind, permissions}, skills: {...}, ...}",
        ));
    }
    crate::read_typed::<AgentSpec>(spec, "spec").map_err(|unread| {
        let (path, error) = (unread.path, unread.reason);
        problem(
            path,
            Code::InvalidAgent,
            format!("the agent document does not read: {error}"),
            "an agent's spec has identity {kind, permissions}, skills {invoke | protocols, local, httpOrigins, mcpOrigins, audiences}, work {taskTypes}, executor {kind: skills}, requests {workspace, expiresIn}",
        )
    })
}

/// A permission as an agent document writes it: the permission and the workspace key, if any.
pub fn split_permission(written: &str) -> (&str, Option<&str>) {
    match written.split_once('@') {
        Some((permission, workspace)) => (permission, Some(workspace)),
        None => (written, None),
    }
}

impl AgentSpec {
    /// The permission words the agent holds, whatever the workspace.
    fn holds(&self, permission: &str) -> bool {
        self.identity.permissions.iter().any(|written| split_permission(written).0 == permission)
    }

    /// The rules that need nothing but the document.
    pub fn problems(&self) -> Vec<DocumentProblem> {
        let mut out = Vec::new();
        for (path, count, max) in [
            ("spec.identity.permissions", self.identity.permissions.len(), MAX_PERMISSIONS),
            ("spec.skills.invoke", self.skills.invoke.len(), MAX_INVOKE),
            ("spec.work.taskTypes", self.work.task_types.len(), MAX_TASK_TYPES),
        ] {
            if count > max {
                out.push(problem(
                    path,
                    Code::InvalidAgent,
                    format!("{count} entries; at most {max}"),
                    "shorten the list",
                ));
                return out;
            }
        }
        let mut seen = BTreeSet::new();
        for (index, written) in self.identity.permissions.iter().enumerate() {
            let path = format!("spec.identity.permissions[{index}]");
            let (permission, workspace) = split_permission(written);
            if !is_permission(permission) || workspace.is_some_and(|key| !is_workspace_key(key)) {
                out.push(problem(
                    path,
                    Code::InvalidAgent,
                    format!("{written:?} is not a permission: dotted lower-case words, optionally @<workspace key>"),
                    "write e.g. skills.invoke or tasks.write@claims",
                ));
            } else if !seen.insert(written.as_str()) {
                out.push(problem(path, Code::InvalidAgent, format!("{written} is listed twice"), "list it once"));
            } else if people_only(permission) {
                let hint = if permission == DECIDE_PERMISSION {
                    "remove approvals.decide; grant it to the people who review the agent's requests"
                } else {
                    "remove it; the person who installs the package holds it, and the agent's writes become requests a person decides"
                };
                out.push(problem(
                    path,
                    PERMISSION_FORBIDDEN,
                    people_only_message(self.identity.kind.as_str(), written),
                    hint,
                ));
            } else if self.identity.kind == AgentKind::Executor && permission == INVOKE_PERMISSION {
                out.push(problem(
                    path,
                    Code::InvalidAgent,
                    "an executor runs calls and makes none on its own account, so it does not hold skills.invoke",
                    "remove skills.invoke; assign skills to an agent with identity.kind agent",
                ));
            } else if self.identity.kind == AgentKind::Agent && permission == EXECUTE_PERMISSION {
                out.push(problem(
                    path,
                    Code::InvalidAgent,
                    "an agent calls skills and runs none, so it does not hold skills.execute",
                    "remove skills.execute; declare the package's executor as an agent with identity.kind executor",
                ));
            }
        }
        let mut skills = BTreeSet::new();
        let mut tools = std::collections::BTreeMap::new();
        for (index, entry) in self.skills.invoke.iter().enumerate() {
            let path = format!("spec.skills.invoke[{index}]");
            match entry.skill().parse::<SkillRef>() {
                Err(_) if !entry.skill().contains('@') => out.push(problem(
                    path,
                    Code::InvalidAgent,
                    format!("{} names no version: an agent is assigned pinned versions", entry.skill()),
                    "write name@version",
                )),
                Err(error) => {
                    out.push(problem(
                        path,
                        Code::InvalidAgent,
                        format!("{:?}: {error}", entry.skill()),
                        "write name@version",
                    ));
                }
                Ok(reference) if !skills.insert(reference.to_string()) => {
                    out.push(problem(path, Code::InvalidAgent, format!("{reference} is listed twice"), "list it once"));
                }
                Ok(reference) => {
                    // One MCP tool per skill name: two versions of one skill would be one tool.
                    let tool = reference.name().as_str().replace('/', ".");
                    if let Some(first) = tools.insert(tool.clone(), reference.to_string()) {
                        out.push(problem(
                            path,
                            Code::InvalidAgent,
                            format!("{first} and {reference} would both be the agent's tool {tool}"),
                            "assign one version of a skill to an agent",
                        ));
                    }
                }
            }
        }
        if !self.skills.invoke.is_empty() && !self.holds(INVOKE_PERMISSION) {
            out.push(problem(
                "spec.identity.permissions",
                Code::SkillsInvokeNotPermitted,
                "the agent is assigned skills but does not hold skills.invoke",
                "add skills.invoke to identity.permissions",
            ));
        }
        for (index, key) in self.work.task_types.iter().enumerate() {
            if key.is_empty() || key.len() > 200 || key.contains('@') {
                out.push(problem(
                    format!("spec.work.taskTypes[{index}]"),
                    Code::InvalidAgent,
                    format!("{key:?} is not a task type key"),
                    "name a task type by its key, without a version",
                ));
            }
        }
        match self.identity.kind {
            AgentKind::Agent => self.agent_problems(&mut out),
            AgentKind::Executor => self.executor_problems(&mut out),
        }
        for (field, value) in [("displayName", &self.display_name), ("description", &self.description)] {
            if value.as_ref().is_some_and(|text| text.chars().count() > 2000) {
                out.push(problem(
                    format!("spec.{field}"),
                    Code::InvalidAgent,
                    format!("{field} has at most 2000 characters"),
                    "shorten it",
                ));
            }
        }
        out
    }

    fn agent_problems(&self, out: &mut Vec<DocumentProblem>) {
        if self.executor.is_some() || self.skills.declares_execution() {
            out.push(problem(
                if self.executor.is_some() { "spec.executor" } else { "spec.skills" },
                Code::InvalidAgent,
                "an agent (identity.kind agent) runs no calls: protocols, local, origins and audiences are an executor's",
                "remove them, or make a separate agent with identity.kind executor",
            ));
        }
        if let Some(requests) = &self.requests {
            if !is_workspace_key(&requests.workspace) {
                out.push(problem(
                    "spec.requests.workspace",
                    Code::InvalidAgent,
                    format!("{:?} is not a workspace key", requests.workspace),
                    "name the workspace the requests go to by its key",
                ));
            }
            if let Some(written) = &requests.expires_in {
                let ok = parse_duration(written).is_some_and(|seconds| (60..=MAX_REQUEST_SECONDS).contains(&seconds));
                if !ok {
                    out.push(problem(
                        "spec.requests.expiresIn",
                        Code::InvalidAgent,
                        format!("{written:?} is not a duration from 1m to 30d"),
                        "write a whole number and a unit: 90m, 24h, 7d",
                    ));
                }
            }
        }
    }

    fn executor_problems(&self, out: &mut Vec<DocumentProblem>) {
        if !self.skills.invoke.is_empty() {
            out.push(problem(
                "spec.skills.invoke",
                Code::InvalidAgent,
                "an executor runs calls and makes none on its own account",
                "assign the skills to an agent with identity.kind agent",
            ));
        }
        if self.requests.is_some() {
            out.push(problem(
                "spec.requests",
                Code::InvalidAgent,
                "an executor asks for nothing: requests are an agent's",
                "remove requests",
            ));
        }
        match &self.executor {
            Some(executor) if executor.kind != "skills" => out.push(problem(
                "spec.executor.kind",
                Code::InvalidAgent,
                format!("{:?} is not an executor kind", executor.kind),
                "write executor: {kind: skills}",
            )),
            Some(_) => {}
            None => out.push(problem(
                "spec.executor",
                Code::InvalidAgent,
                "an executor agent says what kind of executor it is",
                "add executor: {kind: skills}",
            )),
        }
        if !self.holds(EXECUTE_PERMISSION) {
            out.push(problem(
                "spec.identity.permissions",
                Code::InvalidAgent,
                "an executor does not hold skills.execute, so it could claim nothing",
                "add skills.execute to identity.permissions",
            ));
        }
        if self.skills.protocols.is_empty() {
            out.push(problem(
                "spec.skills.protocols",
                Code::InvalidAgent,
                "an executor names the protocols it runs (an executor allowed nothing claims nothing)",
                "write skills: {protocols: [local], local: [<module>]}",
            ));
        }
    }

    /// The versions assigned, as written, with their read-only flag.
    pub fn invoked(&self) -> impl Iterator<Item = (&str, bool)> {
        self.skills.invoke.iter().map(|entry| (entry.skill(), entry.read_only()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn codes(spec: Value) -> Vec<(String, &'static str)> {
        match read_spec(&spec) {
            Err(problem) => vec![(problem.path, problem.code.as_str())],
            Ok(spec) => spec.problems().into_iter().map(|problem| (problem.path, problem.code.as_str())).collect(),
        }
    }

    #[test]
    fn a_desk_agent_and_its_executor_read_clean() {
        let desk = json!({
            "identity": {"kind": "agent", "permissions": ["skills.invoke", "claims.read"]},
            "skills": {"invoke": ["claim.classify@1", {"skill": "claim.send_reply@1", "readOnly": false}]},
            "work": {"taskTypes": ["claim-reply"]},
            "requests": {"workspace": "claims", "expiresIn": "24h"}
        });
        assert_eq!(codes(desk.clone()), []);
        let spec = read_spec(&desk).expect("reads");
        assert_eq!(spec.invoked().collect::<Vec<_>>(), [("claim.classify@1", false), ("claim.send_reply@1", false)]);
        assert_eq!(spec.requests.expect("requests").expires_in_seconds(), 86_400);
        let executor = json!({
            "identity": {"kind": "executor", "permissions": ["skills.execute"]},
            "executor": {"kind": "skills"},
            "skills": {"protocols": ["local"], "local": ["claims_integration.skills"]}
        });
        assert_eq!(codes(executor), []);
    }

    #[test]
    fn each_rule_names_its_path() {
        let unknown = json!({"identity": {"kind": "agent"}, "skils": {}});
        assert_eq!(codes(unknown)[0].1, "invalid_agent");
        let kind = json!({"identity": {"kind": "robot"}});
        assert_eq!(codes(kind), [("spec.identity.kind".to_owned(), "invalid_agent")]);
        let no_invoke = json!({"identity": {"kind": "agent", "permissions": []}, "skills": {"invoke": ["a@1"]}});
        assert_eq!(codes(no_invoke), [("spec.identity.permissions".to_owned(), "skills_invoke_not_permitted")]);
        let unpinned = json!({"identity": {"kind": "agent", "permissions": ["skills.invoke"]},
                              "skills": {"invoke": ["a", "a@1", {"skill": "a@1", "readOnly": true}]}});
        let found = codes(unpinned);
        assert_eq!(found[0], ("spec.skills.invoke[0]".to_owned(), "invalid_agent"));
        assert_eq!(found[1], ("spec.skills.invoke[2]".to_owned(), "invalid_agent"), "listed twice");
        let decide = json!({"identity": {"kind": "agent", "permissions": ["approvals.decide@claims", "bad perm"]}});
        let found = codes(decide);
        assert_eq!(
            found.iter().map(|(path, _)| path.as_str()).collect::<Vec<_>>(),
            ["spec.identity.permissions[0]", "spec.identity.permissions[1]"]
        );
        let runs = json!({"identity": {"kind": "agent"}, "skills": {"protocols": ["local"]}});
        assert_eq!(codes(runs), [("spec.skills".to_owned(), "invalid_agent")]);
        let expiry = json!({"identity": {"kind": "agent"}, "requests": {"workspace": "claims", "expiresIn": "31d"}});
        assert_eq!(codes(expiry), [("spec.requests.expiresIn".to_owned(), "invalid_agent")]);
        let executor = json!({"identity": {"kind": "executor", "permissions": ["skills.invoke"]},
                              "skills": {"invoke": ["a@1"]}});
        let paths: Vec<String> = codes(executor).into_iter().map(|(path, _)| path).collect();
        assert_eq!(
            paths,
            [
                "spec.identity.permissions[0]",
                "spec.skills.invoke",
                "spec.executor",
                "spec.identity.permissions",
                "spec.skills.protocols"
            ]
        );
        // Nobody but a person decides; an agent does not execute; one tool per skill name.
        let decides = json!({"identity": {"kind": "executor", "permissions": ["skills.execute", "approvals.decide"]},
                             "executor": {"kind": "skills"}, "skills": {"protocols": ["local"]}});
        assert_eq!(codes(decides), [("spec.identity.permissions[1]".to_owned(), PERMISSION_FORBIDDEN.as_str())]);
        let executes = json!({"identity": {"kind": "agent", "permissions": ["skills.execute"]}});
        assert_eq!(codes(executes), [("spec.identity.permissions[0]".to_owned(), "invalid_agent")]);
        let two = json!({"identity": {"kind": "agent", "permissions": ["skills.invoke"]},
                         "skills": {"invoke": ["a.b@1", "a.b@2"]}});
        assert_eq!(codes(two), [("spec.skills.invoke[1]".to_owned(), "invalid_agent")]);
        let many = json!({"identity": {"kind": "agent", "permissions": vec!["x.y"; 101]}});
        assert_eq!(codes(many), [("spec.identity.permissions".to_owned(), "invalid_agent")]);
        // The shape: a spec is a mapping, and an invoke entry names what is wrong in it.
        assert_eq!(codes(json!([null, {"kind": "agent"}])), [("spec".to_owned(), "invalid_agent")]);
        let spec = json!({"identity": {"kind": "agent"}, "skills": {"invoke": [{"skill": "a@1", "readOnly": "yes"}]}});
        let entry = read_spec(&spec).expect_err("a string for a boolean");
        assert!(entry.path.starts_with("spec.skills.invoke") && entry.message.contains("boolean"), "{entry:?}");
        let spec = json!({"identity": {"kind": "agent"}, "skills": {"invoke": [{"skill": "a@1", "ro": true}]}});
        let entry = read_spec(&spec).expect_err("an unknown key");
        assert!(entry.message.contains("unknown field `ro`"), "{entry:?}");
    }

    #[test]
    fn no_agent_or_executor_holds_what_only_a_person_holds() {
        assert!(people_only("org.manage") && people_only("approvals.decide@claims") && people_only("org.manage@x"));
        assert!(!people_only("org.read") && !people_only("tasks.write@claims") && !people_only("org.managed"));
        for kind in ["agent", "executor"] {
            let permissions = if kind == "agent" { "skills.invoke" } else { "skills.execute" };
            let spec = json!({"identity": {"kind": kind, "permissions": [permissions, "org.read", "org.manage", "approvals.decide@claims"]}});
            let spec = if kind == "agent" {
                spec
            } else {
                let mut spec = spec;
                spec["executor"] = json!({"kind": "skills"});
                spec["skills"] = json!({"protocols": ["local"]});
                spec
            };
            let found = read_spec(&spec).expect("reads").problems();
            let at: Vec<(&str, &str)> = found.iter().map(|p| (p.path.as_str(), p.code.as_str())).collect();
            assert_eq!(
                at,
                [
                    ("spec.identity.permissions[2]", PERMISSION_FORBIDDEN.as_str()),
                    ("spec.identity.permissions[3]", PERMISSION_FORBIDDEN.as_str())
                ],
                "{kind}"
            );
            assert!(found[0].message.starts_with(&format!("an {kind} never holds org.manage")), "{}", found[0].message);
            for instead in ["org.read", "skills.invoke", "tasks.write@…", "facts.read@…", "custom permissions"] {
                assert!(found[0].message.contains(instead), "{instead}: {}", found[0].message);
            }
        }
    }

    #[test]
    fn durations_are_whole_units() {
        assert_eq!(parse_duration("90m"), Some(5400));
        assert_eq!(parse_duration("7d"), Some(604_800));
        for bad in ["", "h", "1.5h", "-1h", "24", "1w", "99999999s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        assert!(is_agent_key("claims-desk") && !is_agent_key("Claims") && !is_agent_key("-x") && !is_agent_key(""));
    }
}
