//! The claims skills: look a claim up in the claims service (served over https, called with a
//! token for `claims-api`), classify a claim (offline), draft a reply with the installation's
//! model for a person to review, and send the approved reply (an external write into the claims
//! outbox, idempotent by key).

use std::io::Write;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use skill_sdk::{SkillContext, SkillError, skill};

/// What a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Refund,
    Delivery,
    Quality,
    Other,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ClassifyIn {
    /// The claim as the customer wrote it.
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassifyOut {
    pub category: Category,
    /// The words that decided it, in the order found.
    pub matched: Vec<String>,
}

/// Word stems per category, Russian and English, checked in this order.
const KEYWORDS: &[(Category, &[&str])] = &[
    (Category::Refund, &["возврат", "вернуть", "верните", "деньги", "refund", "money back", "chargeback"]),
    (
        Category::Delivery,
        &["доставк", "курьер", "не пришл", "не доставил", "delivery", "courier", "not arrived", "shipping"],
    ),
    (Category::Quality, &["брак", "сломан", "дефект", "не работает", "broken", "defect", "damaged", "does not work"]),
];

/// Classify a customer claim by what it is about.
///
/// Works offline: the category comes from the words of the claim.
#[skill("claim.classify", version = "1", side_effects = "none", risk = "low", timeout = 5, idempotency = "natural")]
pub fn classify(inputs: ClassifyIn) -> Result<ClassifyOut, SkillError> {
    let text = inputs.text.to_lowercase();
    for (category, words) in KEYWORDS {
        let matched: Vec<String> = words.iter().filter(|w| text.contains(*w)).map(|w| (*w).to_owned()).collect();
        if !matched.is_empty() {
            return Ok(ClassifyOut { category: *category, matched });
        }
    }
    Ok(ClassifyOut { category: Category::Other, matched: Vec::new() })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LookupIn {
    /// The claim's number, e.g. C-1001.
    pub claim: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LookupOut {
    pub claim: String,
    pub customer: String,
    pub order: String,
    /// `open`, `waiting_for_customer` or `closed`.
    pub status: String,
}

/// The claims the demo service knows: (number, customer, order, status).
const CLAIMS: &[(&str, &str, &str, &str)] = &[
    ("C-1001", "Anna Petrova", "O-5521", "open"),
    ("C-1002", "Jonas Berg", "O-5534", "waiting_for_customer"),
    ("C-1003", "Mei Lin", "O-5540", "closed"),
];

/// Look a claim up in the claims service: its customer, order and status.
///
/// The claims service runs this skill itself (`serve http` at `CLAIMS_SKILLS_URL`); the platform
/// calls it over https with a token for the audience `claims-api`.
#[skill(
    "claim.lookup",
    version = "1",
    side_effects = "external_read",
    risk = "low",
    timeout = 10,
    idempotency = "natural",
    implementation = http(endpoint = "${CLAIMS_SKILLS_URL}/skills/claim.lookup@1", audience = "claims-api")
)]
pub fn lookup(inputs: LookupIn) -> Result<LookupOut, SkillError> {
    let found = CLAIMS.iter().find(|(number, ..)| number.eq_ignore_ascii_case(inputs.claim.trim()));
    let Some((claim, customer, order, status)) = found else {
        return Err(SkillError::new("claim_not_found")
            .with_message(format!("there is no claim {}", inputs.claim))
            .with_detail("claim", json!(inputs.claim)));
    };
    Ok(LookupOut {
        claim: (*claim).to_owned(),
        customer: (*customer).to_owned(),
        order: (*order).to_owned(),
        status: (*status).to_owned(),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DraftIn {
    /// The claim as the customer wrote it.
    pub claim: String,
    /// Earlier messages of the conversation, oldest first.
    #[serde(default)]
    pub history: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DraftOut {
    /// The reply for a person to review.
    pub draft: String,
}

/// Draft a reply to a customer claim for a person to review.
#[skill("claim.draft_reply", version = "1", side_effects = "none", risk = "low", timeout = 120)]
pub async fn draft_reply(inputs: DraftIn, ctx: SkillContext) -> Result<DraftOut, SkillError> {
    let mut messages: Vec<serde_json::Value> =
        inputs.history.iter().map(|earlier| skill_sdk::llm::assistant(earlier)).collect();
    messages.push(skill_sdk::llm::user(&inputs.claim));
    let answer =
        ctx.llm()?.chat_json::<DraftOut>("You draft polite replies to customer claims.", &messages, "draft").await?;
    Ok(answer.data)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendIn {
    /// The claim's id in the claims register.
    pub claim: String,
    /// The reply the person approved, as the customer will read it.
    #[schemars(title = "Reply to send")]
    pub comment: String,
}

/// What happened to the reply. A key sent before with another reply is no outcome but a
/// failure (`reply_conflict`): the approved reply was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendStatus {
    /// In the outbox: written now, or by an earlier call with the same key and reply (a repeat
    /// answers what the first call did).
    Sent,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SendOut {
    pub status: SendStatus,
    /// The outbox message that carries the reply.
    pub message_id: String,
}

/// The outbox file of one idempotency key: the key hex-encoded, so any key is a safe file name.
fn message_id(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Send the approved reply to the customer.
///
/// Writes the reply into the claims outbox (`CLAIMS_OUTBOX_DIR`), once per idempotency key: a
/// retry with the same key and reply sends no second message and answers as the first did; the
/// same key with another reply sends nothing and fails (`reply_conflict`).
#[skill(
    "claim.send_reply",
    version = "1",
    side_effects = "external_write",
    risk = "high",
    idempotency = "required",
    timeout = 30,
    retry = (3, 10),
    permissions = ["claims.reply"],
    cost_model(unit = "message", estimate = 1)
)]
pub fn send_reply(inputs: SendIn, ctx: SkillContext) -> Result<SendOut, SkillError> {
    let Some(key) = ctx.idempotency_key() else {
        return Err(SkillError::new("idempotency_key_required")
            .with_message("claim.send_reply writes to the outbox only with an idempotency key"));
    };
    let Some(outbox) = ctx.config("CLAIMS_OUTBOX_DIR", None).filter(|dir| !dir.is_empty()) else {
        return Err(SkillError::new("config_missing")
            .with_message("CLAIMS_OUTBOX_DIR is not set: the host needs the claims outbox folder")
            .with_detail("config", json!("CLAIMS_OUTBOX_DIR")));
    };
    let message_id = message_id(key);
    let path = PathBuf::from(&outbox).join(format!("{message_id}.json"));
    let message = json!({"claim": inputs.claim, "reply": inputs.comment});
    let unavailable = |error: std::io::Error| {
        SkillError::new("outbox_unavailable")
            .with_message(format!("the claims outbox cannot be written: {}", error.kind()))
            .with_retryable(true)
    };
    // Written whole or not at all: the message goes to a file of its own first, and is linked
    // under its key only once complete, so a failure leaves no half a reply behind.
    let part = PathBuf::from(&outbox).join(format!(".{message_id}.{}.part", next_part()));
    let written = std::fs::File::create(&part)
        .and_then(|mut file| file.write_all(message.to_string().as_bytes()).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::hard_link(&part, &path));
    let _ = std::fs::remove_file(&part);
    match written {
        Ok(()) => {
            ctx.add_cost("message", 1.0);
            Ok(SendOut { status: SendStatus::Sent, message_id })
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            let sent = std::fs::read_to_string(&path).map_err(unavailable)?;
            let same = serde_json::from_str::<serde_json::Value>(&sent).is_ok_and(|sent| sent == message);
            if !same {
                // Whoever relies on this call would tell the customer a reply went out that
                // did not: another one holds its key.
                return Err(SkillError::new("reply_conflict")
                    .with_message(
                        "another reply was sent under this idempotency key: this reply was not sent; send it under a key of its own",
                    )
                    .with_retryable(false)
                    .with_detail("messageId", json!(message_id)));
            }
            Ok(SendOut { status: SendStatus::Sent, message_id })
        }
        Err(error) => Err(unavailable(error)),
    }
}

/// A number no other message of this process is being written under.
fn next_part() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImportIn {
    /// The task the import belongs to: the artifact is read as that task's call may read it.
    pub task: String,
    /// The workspace whose knowledge receives the claims.
    pub workspace: String,
    /// The CSV artifact of the claims register: a header `claim,customer,status`, one claim a row.
    pub artifact: String,
    /// The slot's scope: one register (e.g. a region) replaces only its own claims.
    pub scope: String,
}

/// What the import changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportReport {
    /// Claims in the file.
    pub rows: u64,
    /// Claims new to the workspace's knowledge.
    pub opened: u64,
    /// Claims no longer in the register, closed.
    pub closed: u64,
    /// Claims whose customer or status changed.
    pub changed: u64,
    /// Claims as they were.
    pub unchanged: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportOut {
    pub report: ImportReport,
    /// The slot's state after the import: the token a later import expects.
    pub state_token: String,
}

/// The columns of the claims register, in this order.
const REGISTER_COLUMNS: [&str; 3] = ["claim", "customer", "status"];

/// The fields of one CSV line: commas separate, double quotes enclose a field with commas or
/// quotes (`""` is one quote). `None` for an unclosed quote.
fn csv_fields(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let field = fields.last_mut()?;
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => fields.push(String::new()),
            (c, _) => field.push(c),
        }
    }
    (!quoted).then_some(fields)
}

/// The register's claims as knowledge entities, or `invalid_csv` naming the line.
fn register_entities(text: &str) -> Result<Vec<serde_json::Value>, SkillError> {
    let invalid = |line: usize, message: String| {
        SkillError::new("invalid_csv").with_message(format!("line {line}: {message}")).with_detail("line", json!(line))
    };
    let mut lines = text.lines().enumerate().map(|(index, line)| (index + 1, line.trim_end_matches('\r')));
    let header = lines.next().map(|(_, line)| csv_fields(line).unwrap_or_default()).unwrap_or_default();
    if header.iter().map(|h| h.trim()).ne(REGISTER_COLUMNS) {
        return Err(invalid(1, format!("the header must be {}", REGISTER_COLUMNS.join(","))));
    }
    let mut entities = Vec::new();
    for (number, line) in lines.filter(|(_, line)| !line.trim().is_empty()) {
        let fields = csv_fields(line).ok_or_else(|| invalid(number, "a quote is not closed".to_owned()))?;
        let [claim, customer, status] = <[String; 3]>::try_from(fields)
            .map_err(|fields| invalid(number, format!("{} fields, expected 3", fields.len())))?;
        if claim.trim().is_empty() {
            return Err(invalid(number, "the claim is empty".to_owned()));
        }
        entities.push(json!({
            "kind": "claim",
            "key": claim.trim(),
            "attributes": {"customer": customer.trim(), "status": status.trim()},
        }));
    }
    Ok(entities)
}

/// A count of the plan, 0 when absent.
fn count(plan: &serde_json::Value, name: &str) -> u64 {
    plan[name].as_u64().unwrap_or_default()
}

/// Import the claims register (a CSV artifact of the task) into the workspace's knowledge.
///
/// Previews the snapshot and applies it at the state the preview saw: if another import changed
/// the slot in between, nothing is written and the call fails with `snapshot_stale` (retryable
/// by running the import again).
#[skill("claim.import_rows", version = "1", side_effects = "none", risk = "low", timeout = 60, idempotency = "natural")]
pub async fn import_rows(inputs: ImportIn, ctx: SkillContext) -> Result<ImportOut, SkillError> {
    let content = ctx.artifacts()?.read_for_task(&inputs.artifact, &inputs.task).await?;
    let text = content.text().map_err(|_| {
        SkillError::new("invalid_csv").with_message("the register is not UTF-8 text").with_detail("line", json!(0))
    })?;
    let entities = register_entities(text)?;
    let rows = entities.len() as u64;
    let snapshot =
        json!({"pack": "claims", "source": "claims-register.csv", "scope": inputs.scope, "entities": entities});
    let knowledge = ctx.knowledge()?;
    let plan = knowledge.preview(snapshot.clone(), &inputs.workspace).await?;
    let expected = plan["stateToken"].as_str().unwrap_or_default().to_owned();
    let applied = knowledge.apply(snapshot, &inputs.workspace, Some(&expected)).await?;
    // The plan counts a changed claim as opened and closed (its new version replaces the old).
    let changed = count(&applied, "superseded");
    Ok(ImportOut {
        report: ImportReport {
            rows,
            opened: count(&applied, "opened").saturating_sub(changed),
            closed: count(&applied, "closed").saturating_sub(changed),
            changed,
            unchanged: count(&applied, "unchanged"),
        },
        state_token: applied["stateToken"].as_str().unwrap_or_default().to_owned(),
    })
}
