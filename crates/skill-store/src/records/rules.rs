//! The rows of facts and work rules: a fact, a rule version, one rule's evaluation of one fact,
//! and where a task a rule ensured comes from.

use serde_json::Value;
use skill_api::{Failure, RuleEvaluationStatus};
use skill_contract::rule::RuleSpec;

use super::Time;
use crate::states::{JsonText, Text};

/// A fact (`facts`): never changes; evaluated once.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct FactRecord {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub key: String,
    #[sqlx(json)]
    pub data: Value,
    pub occurred_at: Time,
    pub source: Option<String>,
    pub depth: i32,
    pub caused_by_task: Option<String>,
    pub recorded_by: String,
    pub created_at: Time,
    pub evaluated_at: Option<Time>,
    /// Who sent it (its recorder's person; fixed when recorded).
    #[sqlx(json)]
    pub initiators: Vec<skill_api::Initiator>,
}

/// A published rule version (`rules`): never changes.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct RuleRecord {
    pub id: String,
    pub key: String,
    pub version: String,
    /// The fact kind it is for.
    pub kind: String,
    #[sqlx(try_from = "JsonText<RuleSpec>")]
    pub spec: RuleSpec,
    pub agent_principal_id: String,
    pub interpretation_skill_id: Option<String>,
    pub package_key: Option<String>,
    pub published_by: String,
    pub created_at: Time,
}

/// One rule's evaluation of one fact (`rule_evaluations`).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct RuleEvaluationRecord {
    pub id: String,
    pub fact_id: String,
    pub rule_id: String,
    #[sqlx(try_from = "Text<RuleEvaluationStatus>")]
    pub status: RuleEvaluationStatus,
    pub invocation_id: Option<String>,
    /// How many times the interpretation was asked for (1 to 3).
    pub asks: i32,
    #[sqlx(json)]
    pub task_ids: Vec<String>,
    /// The process instances it ensured.
    #[sqlx(json)]
    pub instance_ids: Vec<String>,
    pub artifact_id: Option<String>,
    /// Why it failed.
    #[sqlx(try_from = "JsonText<Failure>")]
    pub error: Option<Failure>,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
    pub ended_at: Option<Time>,
}

/// Where a task a rule ensured comes from (`task_origins`).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct TaskOriginRecord {
    pub task_id: String,
    pub workspace_id: String,
    pub work_key: String,
    pub fact_id: String,
    pub evaluation_id: String,
    pub created_at: Time,
}
