//! Pages of a listing (items and the cursor of the next page) and plain item lists.

use serde::{Deserialize, Serialize};

/// One page: the items and the cursor of the next page (`None` on the last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// A whole list, not paged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Items<T> {
    pub items: Vec<T>,
}

/// The query of a paged listing: `?limit` (1 to the listing's maximum) and `?cursor` (the
/// previous page's `nextCursor`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}
