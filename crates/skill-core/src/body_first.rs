//! A request's body is read before its credential is: a caller whose token is revoked, whose
//! principal is disabled or whose grant is taken away while it sends a slow body (the server
//! waits up to `--body-timeout` for it) is refused, not served on what it held when the headers
//! came. Every extractor behind this layer — the API's, the console's, the MCP gateway's, the
//! `Idempotency-Key` layer's — authenticates once the body is in. The first [`UNCHECKED_BYTES`]
//! are read for anyone; more only for a caller whose credential holds by then, so nobody without
//! one makes the core hold a large body.

use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use http_body_util::BodyExt;
use skill_api::MAX_APPLY_BYTES;

use crate::Core;

/// What is read of a body before anything is known of the caller.
const UNCHECKED_BYTES: usize = 64 * 1024;

pub(crate) async fn layer(State(core): State<Core>, request: Request, next: Next) -> Response {
    if request.body().size_hint().exact() == Some(0) {
        return next.run(request).await;
    }
    let (parts, mut body) = request.into_parts();
    let mut read = Read::default();
    if read.up_to(&mut body, UNCHECKED_BYTES).await && credential_holds(&core, &parts.headers).await {
        read.up_to(&mut body, MAX_APPLY_BYTES).await;
    }
    next.run(Request::from_parts(parts, read.replay(body))).await
}

/// Whether the request carries a bearer token or a console session that may act now.
async fn credential_holds(core: &Core, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty());
    if let Some(token) = bearer {
        return core.engine.authenticate(token).await.is_ok();
    }
    match crate::console::session::secret(headers) {
        Some(secret) => core.engine.console_actor(secret).await.is_ok(),
        None => false,
    }
}

/// What was read of a body, in order: its chunks and the error that cut it, if one did.
#[derive(Default)]
struct Read {
    chunks: Vec<Result<Bytes, axum::Error>>,
    seen: usize,
    ended: bool,
}

impl Read {
    /// Reads on until more than `limit` bytes are in; whether the body goes on after that.
    async fn up_to(&mut self, body: &mut Body, limit: usize) -> bool {
        while !self.ended && self.seen <= limit {
            match body.frame().await {
                None => self.ended = true,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.seen += data.len();
                        self.chunks.push(Ok(data));
                    }
                }
                Some(Err(error)) => {
                    self.chunks.push(Err(error));
                    self.ended = true;
                }
            }
        }
        !self.ended
    }

    /// The body as it came: what was read, then what is left unread (a route's own limit and
    /// its answer to a slow or broken body stay as they were).
    fn replay(self, rest: Body) -> Body {
        let read = futures::stream::iter(self.chunks);
        if self.ended { Body::from_stream(read) } else { Body::from_stream(read.chain(rest.into_data_stream())) }
    }
}
