//! The journal's page (`org.read`): how many entries it holds, the key that signs its
//! checkpoints, the latest checkpoint (the signed note, to keep or compare), and where each
//! checkpoint was sent and how that went.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use skill_engine::{Engine, EngineError};

use super::layout::{page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// `GET /console/journal`.
pub(super) async fn journal(State(core): State<Core>, viewer: Viewer) -> Response {
    rendered(viewer.frame(), journal_page(&core.engine, &viewer).await)
}

async fn journal_page(engine: &Engine, viewer: &Viewer) -> Result<Markup, EngineError> {
    let status = engine.journal_status(&viewer.actor).await?;
    let body = html! {
        h1 { "Journal" }
        p {
            "Every change the core records is an entry of a Merkle tree; its signed checkpoints let anyone check, \
             offline, that no entry was changed, removed or reordered since (" code { "skill-core journal verify" } ")."
        }
        dl.fields.journal {
            dt { "Entries" } dd.size { (status.size) }
            dt { "Signing key" } dd {
                @match &status.key {
                    Some(key) => code.key { (key) },
                    None => "none: this core signs no checkpoints (start it with --journal-key)",
                }
            }
        }
        h2 { "Latest checkpoint" }
        @match &status.checkpoint {
            Some(checkpoint) => {
                p.checkpoint {
                    (checkpoint.size) " entries, signed " (when(&checkpoint.signed_at))
                    @if checkpoint.size < status.size { " · " (status.size - checkpoint.size) " newer entries wait for the next" }
                }
                pre.note { (checkpoint.note) }
            }
            None => p.empty { "None signed yet." }
        }
        h2 { "Sent" }
        @if status.sends.is_empty() {
            p.empty { "No checkpoint was sent outside (--journal-send-file, --journal-send-url)." }
        } @else {
            table.sends {
                thead { tr { th { "When" } th { "Checkpoint" } th { "To" } th { "How it went" } } }
                tbody {
                    @for send in &status.sends {
                        tr class=(if send.ok { "sent" } else { "failed" }) {
                            td { (when(&send.sent_at.to_rfc3339())) }
                            td { (send.size) " entries" }
                            td { code { (send.target) } }
                            td { @if send.ok { "sent " } @else { "failed: " } (send.detail) }
                        }
                    }
                }
            }
        }
    };
    Ok(page("Journal", Some(viewer.frame()), body))
}
