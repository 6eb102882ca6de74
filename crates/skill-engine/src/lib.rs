//! The core's domain: who may act (principals, tokens, grants), the catalog of skill versions
//! (publish, read, list, change within what a published version allows, assign), composition and
//! discovery. It speaks to storage through `skill_store::Store` and knows no HTTP, MCP or SQL.
//!
//! Its modules are layered: each uses, and calls the `Engine` methods of, only modules below it
//! — identity and the catalog at the bottom; what an actor sees (`visibility`), a write's basis
//! (`basis`) and starting an instance (`instances`) under calls (`invocations`); calls under
//! work, work under rules and processes; agents' requests, packages and disabling a principal
//! at the top. `cargo xtask tidy` fails on a loop, through imports or method calls.
//!
//! | what | where |
//! |---|---|
//! | the engine over a store | [`Engine`] |
//! | authentication, tokens, grants | [`Actor`], [`Engine::authenticate`], [`Engine::issue_token`] |
//! | the catalog | [`Engine::publish`], [`Engine::skill`], [`Engine::skills`], [`Engine::patch`], [`Engine::assign`] |
//! | package installs, the journal | [`Engine::record_install`], [`Engine::package`], [`Engine::events`] |
//! | discovery | [`Engine::definition`], [`Engine::metadata`], [`Engine::catalogue`] |
//! | calls: invoke, read, list, cancel; claim, heartbeat, complete, fail; lease expiry; executor sessions | [`Engine::invoke`], [`Engine::claim`], [`Engine::expire_leases`], [`Engine::open_session`] |
//! | audience tokens and the JWKS | [`Engine::audience_token`], [`Engine::jwks`], [`tokens`] |
//! | console sessions: sign in with a token, the person behind a cookie, sign out | [`Engine::sign_in`], [`Engine::console_actor`], [`Engine::sign_out`] |
//! | errors, with the class a transport maps to a status | [`EngineError`], [`Class`] |

mod actor;
mod agents;
pub mod artifacts;
mod audiences;
mod basis;
mod cancellation;
pub mod catalog;
pub mod clock;
pub mod console;
mod disable;
mod discovery;
mod documents;
mod ended;
mod error;
mod facts;
mod identity;
mod instances;
pub mod invocations;
pub mod journal;
pub mod keyed;
pub mod knowledge;
mod lease;
mod metered;
mod moments;
pub mod packages;
mod paths;
mod planned;
pub mod processes;
pub mod requests;
pub mod rules;
mod scopes;
mod settings;
pub mod tokens;
mod visibility;
pub mod work;

use std::sync::Arc;

use skill_api::EventData;
use skill_store::Store;
use skill_store::records::Event;

pub use actor::{Actor, PERMISSIONS, TOKEN_PREFIX, new_token, token_hash};
pub use catalog::MAX_PAGE_BYTES;
pub use clock::{Clock, MovedClock, SystemClock};
pub use error::{Class, EngineError, Result};
pub use identity::{IssuedToken, MAX_LABEL_CHARS, MAX_TOKEN_DAYS, PRINCIPAL_KINDS, TokenRequest};
pub use invocations::Invoked;
pub use processes::TaskProcess;

/// The domain over one store. Cheap to clone; holds nothing authoritative in memory, so any
/// number of engines (core replicas) can share a database.
#[derive(Debug, Clone)]
pub struct Engine {
    store: Arc<dyn Store>,
    /// Compiled contract schemas by version (published schemas never change).
    schemas: Arc<invocations::SchemaCache>,
    /// The moments the engine's workers wait for, and whom each wakes.
    moments: Arc<moments::Moments>,
    /// The timeout of each version claims met (it never changes once published).
    timeouts: Arc<invocations::Timeouts>,
    /// When the waiting claims of each executor last looked for calls.
    looks: Arc<invocations::Looks>,
    /// When a claim last looked for expired leases (Unix milliseconds).
    expired_at: Arc<std::sync::atomic::AtomicI64>,
    /// The audience tokens' issuer and its keys.
    issuer: Arc<tokens::Issuer>,
    /// Where artifacts' content lives.
    blobs: Arc<dyn skill_store::BlobStore>,
    /// Rules' conditions, compiled once per version.
    conditions: Arc<rules::Conditions>,
    /// Where the time is read.
    clock: Arc<dyn clock::Clock>,
    /// How often a waiting claim looks again on its own, for calls whose wake-up it may not get
    /// (one queued through another core while this one's listening connection was down, a call
    /// whose backoff ended).
    look_again: std::time::Duration,
    /// The W3C `traceparent` a new call of the version it is given belongs to (see
    /// [`Engine::with_traces`]); none without traces.
    trace_of_call: fn(&str, &str) -> Option<String>,
    /// The key the journal's checkpoints are signed with (none: no checkpoints).
    journal: Option<Arc<journal::JournalKey>>,
}

type BlobFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = skill_store::Result<T>> + Send + 'a>>;

/// No blob store: every content write and read is unavailable.
#[derive(Debug)]
struct NoBlobs;

impl skill_store::BlobStore for NoBlobs {
    fn put<'a>(&'a self, _: &'a str, _: &'a [u8]) -> BlobFuture<'a, ()> {
        Box::pin(async { Err(no_blobs()) })
    }

    fn get<'a>(&'a self, _: &'a str) -> BlobFuture<'a, Vec<u8>> {
        Box::pin(async { Err(no_blobs()) })
    }
}

fn no_blobs() -> skill_store::StoreError {
    skill_store::StoreError::new(skill_store::ErrorKind::Unavailable, "this core has no store for artifacts' content")
}

/// Who and which request caused a change, for the events journal.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub actor_id: Option<String>,
    pub request_id: Option<String>,
}

impl Origin {
    pub fn of(actor: &Actor, request_id: Option<&str>) -> Self {
        Self { actor_id: Some(actor.id().to_owned()), request_id: request_id.map(str::to_owned) }
    }
}

impl Engine {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            schemas: Arc::default(),
            moments: Arc::default(),
            timeouts: Arc::default(),
            looks: Arc::default(),
            expired_at: Arc::default(),
            issuer: Arc::default(),
            blobs: Arc::new(NoBlobs),
            conditions: Arc::default(),
            clock: Arc::new(clock::SystemClock),
            look_again: invocations::LOOK_AGAIN,
            trace_of_call: |_, _| None,
            journal: None,
        }
    }

    /// The engine storing with each new call the trace it belongs to, as `trace_of_call` says
    /// for the version (name, version) called: the caller's span when there is one, else a
    /// new trace. Calls carry none without it.
    #[must_use]
    pub fn with_traces(mut self, trace_of_call: fn(&str, &str) -> Option<String>) -> Self {
        self.trace_of_call = trace_of_call;
        self
    }

    /// The engine whose waiting claims look again on their own every `every` (tests make it
    /// long to see that a wake-up alone wakes them).
    #[must_use]
    pub fn with_look_again(mut self, every: std::time::Duration) -> Self {
        self.look_again = every;
        self
    }

    /// The engine reading the time from `clock` (tests move it).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn clock::Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The time now, as the engine's clock says.
    pub fn now(&self) -> skill_store::records::Time {
        self.clock.now()
    }

    /// The engine with `blobs` as the store of artifacts' content (without one, storing or
    /// reading content is `503 content_store_unavailable`).
    #[must_use]
    pub fn with_blobs(mut self, blobs: Arc<dyn skill_store::BlobStore>) -> Self {
        self.blobs = blobs;
        self
    }

    /// The engine with `issuer` as the audience tokens' `iss` (the core's public URL).
    #[must_use]
    pub fn with_issuer(self, issuer: &str) -> Self {
        self.with_issuer_and_lead(issuer, tokens::DEFAULT_KEY_LEAD)
    }

    /// The engine with `issuer`, its new signing keys published `lead` before they sign.
    #[must_use]
    pub fn with_issuer_and_lead(mut self, issuer: &str, lead: std::time::Duration) -> Self {
        self.issuer = Arc::new(tokens::Issuer::named(issuer, lead));
        self
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// A time-ordered id (UUIDv7): listings page by it in creation order.
    pub(crate) fn new_id(&self) -> String {
        uuid::Uuid::now_v7().to_string()
    }

    pub(crate) fn event<E: EventData>(&self, subject: String, data: &E, origin: &Origin) -> Event {
        new_event(subject, data, origin)
    }
}

/// A fixed-shape document of ours (an event's data, a failure, a typed output's outcome) as the
/// JSON the rows keep: plain structs of strings, numbers and enums always serialize.
pub(crate) fn document<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("a document of ours serializes")
}

/// The event `data` is about `subject`, now, by `origin`.
pub(crate) fn new_event<E: EventData>(subject: String, data: &E, origin: &Origin) -> Event {
    Event {
        seq: 0,
        id: uuid::Uuid::now_v7().to_string(),
        kind: E::KIND.to_owned(),
        subject,
        // An event's data is a struct of plain fields: it always serializes.
        data: document(data),
        actor_id: origin.actor_id.clone(),
        request_id: origin.request_id.clone(),
        created_at: chrono::Utc::now(),
    }
}
