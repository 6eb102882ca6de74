//! Who is looking: the session behind the console's cookie, and the checks every form passes
//! (the session's CSRF token, a same-origin request).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use skill_engine::{Actor, Class, Origin};
use skill_http::requests::RequestId;
use skill_store::records::ConsoleSession;

use super::layout;
use crate::Core;

/// The cookie that carries a session's secret.
pub(super) const COOKIE: &str = "skill_console";

/// A signed-in person: the actor the engine authenticated from the session, and the session.
#[derive(Debug, Clone)]
pub(super) struct Viewer {
    pub(super) actor: Actor,
    pub(super) session: ConsoleSession,
    pub(super) request_id: Option<String>,
}

impl Viewer {
    /// What the page frame shows of the viewer.
    pub(super) fn frame(&self) -> layout::For<'_> {
        layout::For {
            name: &self.actor.principal().name,
            csrf: &self.session.csrf,
            operator: self.actor.can("org.read"),
        }
    }

    pub(super) fn origin(&self) -> Origin {
        Origin::of(&self.actor, self.request_id.as_deref())
    }

    /// The refusal of a form whose `csrf` is not this session's, or that comes from another
    /// origin (`Origin`, when the browser sends one, names another host); `None` for a good one.
    pub(super) fn form_refusal(&self, headers: &HeaderMap, csrf: &str) -> Option<Response> {
        (!same_origin(headers) || !equal(csrf.as_bytes(), self.session.csrf.as_bytes())).then(|| {
            layout::refused(
                Some(self.frame()),
                "This form does not come from your console session",
                "Nothing was changed. Reload the page and try again.",
            )
        })
    }
}

/// Compares in time that does not depend on where the two differ.
fn equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a request's `Origin`, when present, is the host it was sent to.
pub(super) fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let origin = origin.to_str().unwrap_or_default();
    let bare = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"));
    !host.is_empty() && bare == Some(host)
}

/// The session secret the request's cookie carries.
fn secret(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

impl FromRequestParts<Core> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, core: &Core) -> Result<Self, Self::Rejection> {
        let sign_in = || Redirect::to("/console/sign-in").into_response();
        let Some(secret) = secret(&parts.headers) else {
            return Err(sign_in());
        };
        match core.engine.console_actor(secret).await {
            Ok((actor, session)) => {
                let request_id = parts.extensions.get::<RequestId>().map(|id| id.0.clone());
                Ok(Self { actor, session, request_id })
            }
            Err(error) if error.class == Class::Unauthenticated => {
                let mut response = sign_in();
                response.headers_mut().insert(header::SET_COOKIE, clear_cookie(core.console.secure_cookies));
                Err(response)
            }
            Err(error) => Err(layout::failure(None, &error)),
        }
    }
}

/// The cookie of a new session: its secret, until it expires.
pub(super) fn session_cookie(secret: &str, session: &ConsoleSession, secure: bool) -> HeaderValue {
    let seconds = (session.expires_at - chrono::Utc::now()).num_seconds().max(0);
    let secure = if secure { "; Secure" } else { "" };
    let value = format!("{COOKIE}={secret}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={seconds}{secure}");
    HeaderValue::from_str(&value).expect("invariant: a hex secret makes a valid header")
}

/// The cookie that removes the session's from the browser.
pub(super) fn clear_cookie(secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{secure}"))
        .expect("invariant: a fixed cookie is a valid header")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_read_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; skill_console=abc; b=2"));
        assert_eq!(secret(&headers), Some("abc"));
        headers.insert(header::COOKIE, HeaderValue::from_static("skill_console="));
        assert_eq!(secret(&headers), None);
    }

    #[test]
    fn only_the_hosts_own_origin_passes() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8700"));
        assert!(same_origin(&headers), "no Origin: a same-origin form of an older browser");
        headers.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:8700"));
        assert!(same_origin(&headers));
        headers.insert(header::ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert!(!same_origin(&headers));
        headers.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&headers));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(equal(b"abc", b"abc"));
        assert!(!equal(b"abc", b"abd"));
        assert!(!equal(b"abc", b"ab"));
        assert!(!equal(b"", b"a"));
    }
}
