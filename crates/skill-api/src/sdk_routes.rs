//! The routes a running skill calls through `ctx.artifacts()` and `ctx.knowledge()`, relative to
//! `/api/v1`. The SDK's HTTP client and its in-memory `FakeCore` speak them; the core serves
//! them with the artifacts and knowledge issue, when they join [`crate::operations::OPERATIONS`].

/// `GET /artifacts/{id}/content[?forTask=]`: the content, with `Content-Type` and
/// `X-Content-SHA256`.
pub const ARTIFACT_CONTENT: &str = "/artifacts/{id}/content";

/// The header that carries an artifact's SHA-256.
pub const CONTENT_SHA256_HEADER: &str = "x-content-sha256";

/// `POST`: the plan of a knowledge snapshot, without applying it.
pub const KNOWLEDGE_PREVIEW: &str = "/knowledge/snapshots:preview";
/// `POST`, idempotent: apply a knowledge snapshot (`409 snapshot_stale` with `details.stateToken`).
pub const KNOWLEDGE_APPLY: &str = "/knowledge/snapshots";
/// `POST`, idempotent: add a document.
pub const KNOWLEDGE_DOCUMENT: &str = "/knowledge/documents";
/// `POST`: what is relevant to an anchor.
pub const CONTEXT_RECALL: &str = "/context/recall";
/// `POST`, a read: one page of entities.
pub const KNOWLEDGE_QUERY: &str = "/knowledge/entities:query";
