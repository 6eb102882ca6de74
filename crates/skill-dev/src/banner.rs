//! What `skill-core dev` prints once everything runs: where things are, who the tokens are, and
//! commands that paste — `export` lines for the address and every token, then commands that chain
//! through shell variables (`TASK=$(… | jq -r .id)`), each runnable as printed, in order. Every
//! indented line under "In another shell" is a shell line (comments included), which a test runs.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use skill_api::{ApprovalSchema, TaskTypeRequest};
use skill_api::{JsonType, SchemaView};
use skill_package as package;

/// What the banner shows.
pub(crate) struct Banner<'a> {
    pub(crate) loaded: &'a package::Loaded,
    pub(crate) applied: &'a str,
    pub(crate) core_url: &'a str,
    pub(crate) data: String,
    pub(crate) token: &'a str,
    pub(crate) grants: &'a [String],
    pub(crate) reviewer: &'a str,
    pub(crate) reviewer_grants: &'a [String],
    /// `(label, text)` lines: the executor, the hosts, the folders, the model.
    pub(crate) lines: Vec<(String, String)>,
    /// The folder of `skill-sdk` when it is not on `PATH` but beside this binary.
    pub(crate) sdk_folder: Option<String>,
    /// Whether `skill-sdk` can be run at all.
    pub(crate) sdk: bool,
    /// The workspace work happens in.
    pub(crate) workspace: &'a str,
    /// The package's agents, each with a token.
    pub(crate) agents: &'a [AgentLine],
}

/// An agent of the package and the token dev issued for it.
pub(crate) struct AgentLine {
    pub(crate) key: String,
    pub(crate) token: String,
    pub(crate) spec: skill_api::agent::AgentSpec,
}

/// The shell variable an agent's token is exported as: `AGENT_TOKEN` for the first,
/// `AGENT_TOKEN_<KEY>` for the others.
fn agent_variable(index: usize, key: &str) -> String {
    if index == 0 {
        "AGENT_TOKEN".to_owned()
    } else {
        let upper: String =
            key.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        format!("AGENT_TOKEN_{upper}")
    }
}

#[allow(clippy::print_stdout)]
pub(crate) fn print(banner: &Banner<'_>) {
    println!("{}", render(banner));
}

/// The banner's text.
pub(crate) fn render(banner: &Banner<'_>) -> String {
    let package = &banner.loaded.package;
    let url = banner.core_url;
    let mut out = Vec::new();
    out.push(format!("skill-core dev: package {} {} {}", package.key, package.version, banner.applied));
    let mut lines = vec![
        ("core".to_owned(), format!("{url}/api/v1    (data: {})", banner.data)),
        ("console".to_owned(), format!("{url}/console    (sign in with the token below, or the reviewer's to decide)")),
        ("you".to_owned(), format!("dev: {} (a day)", banner.grants.join(", "))),
        ("reviewer".to_owned(), format!("dev-reviewer: {} (decides approvals)", banner.reviewer_grants.join(", "))),
    ];
    if !banner.agents.is_empty() {
        lines.push((
            "mcp".to_owned(),
            format!(
                "{url}/mcp    (an agent connects with its token; its writes wait for the reviewer: docs/agents.md)"
            ),
        ));
    }
    for agent in banner.agents {
        let skills: Vec<&str> = agent.spec.invoked().map(|(skill, _)| skill).collect();
        let requests = agent
            .spec
            .requests
            .as_ref()
            .map(|requests| format!("; its writes become requests in the workspace {}", requests.workspace))
            .unwrap_or_default();
        lines.push(("agent".to_owned(), format!("{}: {}{requests}", agent.key, skills.join(", "))));
    }
    lines.extend(banner.lines.iter().cloned());
    let width = lines.iter().map(|(label, _)| label.len()).max().unwrap_or(0).max(9);
    for (label, text) in &lines {
        out.push(format!("  {label:<width$} {text}"));
    }
    out.push(String::new());
    out.push("In another shell (the commands use curl and jq):".to_owned());
    out.push(format!("  export SKILL_CORE_URL={url}"));
    out.push(format!("  export SKILL_CORE_TOKEN={}", banner.token));
    out.push(format!("  export REVIEWER={}", banner.reviewer));
    for (index, agent) in banner.agents.iter().enumerate() {
        out.push(format!(
            "  export {}={}    # the agent {}",
            agent_variable(index, &agent.key),
            agent.token,
            agent.key
        ));
    }
    if let Some(folder) = &banner.sdk_folder {
        out.push(format!("  export PATH=\"{folder}:$PATH\"    # skill-sdk, built beside skill-core"));
    }
    let auth = "-H \"Authorization: Bearer $SKILL_CORE_TOKEN\"";
    let json_body = "-H 'Content-Type: application/json'";
    if let Some((reference, inputs)) = example_call(banner.loaded) {
        out.push(String::new());
        out.push("A call through the core, run by the package's host:".to_owned());
        let body = json!({"inputs": inputs}).to_string();
        out.push(format!(
            "  CALL=$(curl -s -X POST \"$SKILL_CORE_URL/api/v1/skills/{reference}:invoke\" {auth} {json_body} -d '{}' | jq -r .id)",
            single_quoted(&body)
        ));
        out.push(format!(
            "  sleep 1; curl -s \"$SKILL_CORE_URL/api/v1/skill-invocations/$CALL\" {auth} | jq '{{status, output, error}}'"
        ));
        if banner.sdk {
            out.push(format!(
                "  skill-sdk call {reference} --input '{}' --wait 10",
                single_quoted(&inputs.to_string())
            ));
        }
    }
    if let Some(story) = story(banner.loaded, banner.workspace) {
        out.push(String::new());
        out.extend(story);
    }
    if let Some(story) = fact_story(banner.loaded, banner.sdk) {
        out.push(String::new());
        out.extend(story);
    }
    out.push(String::new());
    out.push("Stop with Ctrl-C.".to_owned());
    out.join("\n")
}

/// `text` inside single quotes: each `'` closed, escaped, and opened again.
fn single_quoted(text: &str) -> String {
    text.replace('\'', "'\\''")
}

/// `json` inside double quotes, with `$TASK` where it holds [`TASK`].
fn with_task(json: &Value) -> String {
    let text = json.to_string();
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"").replace('$', "\\$").replace('`', "\\`");
    escaped.replace(TASK, "$TASK")
}

/// Stands for the task's id in a body, until the shell puts `$TASK` there.
const TASK: &str = "@@TASK@@";

/// The lines that play a gated task type's story: the task with example fields, its draft when
/// the type declares one, the gate approval, and where the reviewer decides.
fn story(loaded: &package::Loaded, workspace: &str) -> Option<Vec<String>> {
    let task_types = package::task_type_requests(loaded).ok()?;
    let gates = |request: &TaskTypeRequest| {
        request.approval_schema.as_ref().and_then(|schema| ApprovalSchema::deserialize(schema).ok())
    };
    let (gated, schema) = task_types
        .iter()
        .find_map(|request| gates(request).filter(|schema| !schema.gates.is_empty()).map(|schema| (request, schema)))?;
    let key = format!("{}@{}", gated.key, gated.version);
    let fields: Map<String, Value> =
        gated.custom_fields.iter().flatten().map(|(name, schema)| (name.clone(), sample(schema))).collect();
    let name = gated.display_name.as_deref().unwrap_or(&gated.key);
    let first = fields.values().find_map(Value::as_str).map(|value| format!(": {value}")).unwrap_or_default();
    let auth = "-H \"Authorization: Bearer $SKILL_CORE_TOKEN\"";
    let json_body = "-H 'Content-Type: application/json'";
    let mut lines =
        vec![format!("A task of {key}, its draft, and a gate approval the reviewer decides (docs/work.md):")];
    let task =
        json!({"workspace": workspace, "taskType": key, "title": format!("{name}{first}"), "customFields": fields});
    lines.push(format!(
        "  TASK=$(curl -s -X POST \"$SKILL_CORE_URL/api/v1/tasks\" {auth} {json_body} -d '{}' | jq -r .id)",
        single_quoted(&task.to_string())
    ));
    if let Some(draft) = schema.gates.get("default").and_then(|gate| gate.draft.as_ref()) {
        let skill = draft.skill.as_str();
        let inputs: Map<String, Value> = draft
            .inputs
            .iter()
            .filter_map(|(input, source)| {
                let value = match source.as_str().and_then(|path| path.strip_prefix("$.customFields.")) {
                    Some(field) => fields.get(field).cloned()?,
                    None if source.as_str().is_some_and(|text| text.starts_with('$')) => return None,
                    None => source.clone(),
                };
                Some((input.clone(), value))
            })
            .collect();
        let body = json!({"taskId": TASK, "inputs": inputs});
        lines.push(format!(
            "  DRAFT=$(curl -s -X POST \"$SKILL_CORE_URL/api/v1/skills/{skill}:invoke\" {auth} {json_body} -d \"{}\" | jq -r .id)",
            with_task(&body)
        ));
    }
    let ask = json!({"taskId": TASK});
    lines.push(format!(
        "  APPROVAL=$(curl -s -X POST \"$SKILL_CORE_URL/api/v1/approvals\" {auth} {json_body} -d \"{}\" | jq -r .id)",
        with_task(&ask)
    ));
    lines.push(
        "  echo \"Decide at $SKILL_CORE_URL/console/tasks/$TASK — sign in with the reviewer's token (\\$REVIEWER)\""
            .to_owned(),
    );
    lines.push(format!(
        "  # or here: curl -s -X POST \"$SKILL_CORE_URL/api/v1/approvals/$APPROVAL:decide\" -H \"Authorization: Bearer $REVIEWER\" {json_body} -d '{{\"outcome\": \"approved\", \"comment\": \"…\"}}'"
    ));
    Some(lines)
}

/// A fact for the package's first work rule: its kind, data with each `$.fact.data.<field>` the
/// rule reads (an example of the task field or skill input it fills), sent to the workspace its
/// agent makes work in; then what the rule made of it.
fn fact_story(loaded: &package::Loaded, sdk: bool) -> Option<Vec<String>> {
    let objects = &loaded.package.objects;
    let rule = objects.iter().find(|object| object.kind == "WorkRule")?;
    let spec = skill_api::rule::read_spec(rule.spec()).ok()?;
    let agent = objects.iter().find(|o| o.kind == "Agent" && o.key == spec.identity.agent)?;
    let workspace = agent
        .document
        .pointer("/spec/identity/permissions")?
        .as_array()?
        .iter()
        .find_map(|written| written.as_str()?.strip_prefix("tasks.write@").map(str::to_owned))?;
    let mut data = Map::new();
    let mut learn = |source: &Value, schema: Option<&Value>| {
        if let Some(field) = source.as_str().and_then(|path| path.strip_prefix("$.fact.data.")) {
            let field = field.split(['.', '[']).next().unwrap_or(field).to_owned();
            let value = schema.map_or(json!("example"), sample);
            let entry = data.entry(field).or_insert(Value::Null);
            if entry.is_null() || *entry == json!("example") {
                *entry = value;
            }
        }
    };
    let tasks = spec.ensure_work.iter().filter_map(|work| match work {
        skill_api::rule::EnsureWork::Task(task) => Some(task),
        skill_api::rule::EnsureWork::Process(_) => None,
    });
    // A process's input: an example of the task field its task steps fill from it.
    let processes: Vec<_> = spec
        .ensure_work
        .iter()
        .filter_map(|work| match work {
            skill_api::rule::EnsureWork::Process(process) => Some(process),
            skill_api::rule::EnsureWork::Task(_) => None,
        })
        .collect();
    for started in &processes {
        let key = started.process.split('@').next().unwrap_or_default();
        let process = objects
            .iter()
            .find(|o| o.kind == "Process" && o.key == key)
            .and_then(|o| skill_api::process::read_spec(o.spec()).ok());
        for (name, source) in &started.input {
            let read = format!("$.input.{name}");
            let field =
                process.iter().flat_map(|p| p.steps.iter()).filter_map(|step| step.task.as_ref()).find_map(|task| {
                    let (field, _) =
                        task.custom_fields.iter().find(|(_, value)| value.as_str() == Some(read.as_str()))?;
                    let type_key = task.task_type.split('@').next().unwrap_or_default();
                    objects
                        .iter()
                        .find(|o| o.kind == "TaskType" && o.key == type_key)
                        .and_then(|o| o.document.pointer(&format!("/spec/customFields/{field}")).cloned())
                });
            learn(source, field.as_ref());
        }
    }
    for task in tasks {
        let key = task.task_type.split('@').next().unwrap_or_default();
        let fields = objects
            .iter()
            .find(|o| o.kind == "TaskType" && o.key == key)
            .and_then(|o| o.document.pointer("/spec/customFields").cloned());
        for (name, source) in &task.custom_fields {
            learn(source, fields.as_ref().and_then(|fields| fields.get(name)));
        }
    }
    if let Some(interpretation) = &spec.interpretation {
        let (name, version) = interpretation.skill.split_once('@')?;
        let inputs = objects
            .iter()
            .find(|o| o.kind == "Skill" && o.key == name && o.version() == Some(version))
            .and_then(|o| o.document.pointer("/spec/contract/inputs/properties").cloned());
        for (name, source) in &interpretation.inputs {
            learn(source, inputs.as_ref().and_then(|inputs| inputs.get(name)));
        }
    }
    let auth = "-H \"Authorization: Bearer $SKILL_CORE_TOKEN\"";
    let json_body = "-H 'Content-Type: application/json'";
    let fact = json!({"workspace": workspace, "kind": spec.on.kind, "key": "message-1", "data": data});
    let mut lines = vec![format!(
        "A fact from the world: the rule {}@{} interprets it and opens the work (docs/rules.md, docs/processes.md):",
        rule.key, spec.version
    )];
    lines.push(format!(
        "  FACT=$(curl -s -X POST \"$SKILL_CORE_URL/api/v1/facts\" {auth} {json_body} -d '{}' | jq -r .id)",
        single_quoted(&fact.to_string())
    ));
    lines.push(format!(
        "  sleep 2; curl -s \"$SKILL_CORE_URL/api/v1/facts/$FACT\" {auth} | jq '.evaluations[] | {{rule, status, taskIds, instanceIds}}'"
    ));
    if !processes.is_empty() {
        lines.push(format!(
            "  INSTANCE=$(curl -s \"$SKILL_CORE_URL/api/v1/facts/$FACT\" {auth} | jq -r '.evaluations[0].instanceIds[0]')"
        ));
        lines.push(format!(
            "  sleep 2; curl -s \"$SKILL_CORE_URL/api/v1/process-instances/$INSTANCE\" {auth} | jq '{{process, status, step, steps: [.steps[] | {{step, status, taskId}}]}}'"
        ));
    }
    if sdk {
        lines.push(format!(
            "  skill-sdk fact send --workspace {workspace} --kind {} --key message-2 --data '{}'",
            spec.on.kind,
            single_quoted(&Value::Object(data).to_string())
        ));
    }
    Some(lines)
}

/// A value for a field of `schema`: its first example, its default, else the smallest of its
/// shape.
fn sample(schema: &Value) -> Value {
    SchemaView(schema).sample().cloned().unwrap_or_else(|| example(schema))
}

/// A skill without side effects and inputs that fit its schema, for the printed example.
fn example_call(loaded: &package::Loaded) -> Option<(String, Value)> {
    let skill = loaded.package.objects.iter().find(|object| {
        let effects = object.document.pointer("/spec/sideEffects").and_then(Value::as_str);
        object.kind == "Skill" && effects.and_then(|word| word.parse().ok()) == Some(skill_api::SideEffects::None)
    })?;
    let version = skill.version()?;
    let schema = skill.document.pointer("/spec/contract/inputs")?;
    Some((format!("{}@{version}", skill.key), example(schema)))
}

/// The smallest value of `schema`'s shape: required properties only (each its example when the
/// schema gives one).
fn example(schema: &Value) -> Value {
    let view = SchemaView(schema);
    match view.one_kind() {
        Some(JsonType::Object) => Value::Object(
            view.required()
                .into_iter()
                .map(|name| {
                    (name.to_owned(), view.property(name).map_or(json!("example"), |property| sample(property.0)))
                })
                .collect(),
        ),
        Some(JsonType::Integer | JsonType::Number) => json!(1),
        Some(JsonType::Boolean) => json!(false),
        Some(JsonType::Array) => json!([]),
        _ => json!("example"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_with_the_task_is_double_quoted_for_the_shell() {
        let body = json!({"taskId": TASK, "inputs": {"claim": "It's \"late\" — $5 `now`"}});
        let quoted = with_task(&body);
        assert_eq!(quoted, r#"{\"taskId\":\"$TASK\",\"inputs\":{\"claim\":\"It's \\\"late\\\" — \$5 \`now\`\"}}"#);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("TASK=t-1; printf '%s' \"{quoted}\""))
            .output()
            .expect("sh runs");
        let back: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert_eq!(back, json!({"taskId": "t-1", "inputs": {"claim": "It's \"late\" — $5 `now`"}}));
        let single = single_quoted(r#"{"a": "it's"}"#);
        let output =
            std::process::Command::new("sh").arg("-c").arg(format!("printf '%s' '{single}'")).output().expect("sh");
        assert_eq!(String::from_utf8_lossy(&output.stdout), r#"{"a": "it's"}"#);
    }

    #[test]
    fn a_field_takes_its_example_then_its_default() {
        assert_eq!(sample(&json!({"type": "string", "examples": ["C-1002"], "default": "x"})), json!("C-1002"));
        assert_eq!(sample(&json!({"type": "string", "default": "x"})), json!("x"));
        assert_eq!(sample(&json!({"type": "integer"})), json!(1));
        assert_eq!(
            example(&json!({"type": "object", "properties": {"a": {"type": "string", "examples": ["A"]}, "b": {}},
                             "required": ["a"]})),
            json!({"a": "A"})
        );
    }
}
