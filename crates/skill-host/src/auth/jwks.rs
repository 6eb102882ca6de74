//! The IAM's signing keys, fetched from its JWKS URL and cached by `kid`.
//!
//! The set is fetched on first use, again when it expires (`Cache-Control: max-age`, else five
//! minutes, kept between one minute and an hour), and again when a token names an unknown `kid` —
//! but at most once every ten seconds for unknown `kid`s, so a stream of forged tokens cannot
//! turn into a stream of fetches. Concurrent callers that need a fetch wait for one fetch
//! (single-flight). If a fetch fails, keys already known keep working; with none known the call
//! is 503.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::sync::{Mutex, RwLock};

use super::{AuthError, is_asymmetric};

const DEFAULT_TTL: Duration = Duration::from_secs(300);
const MIN_TTL: Duration = Duration::from_secs(60);
const MAX_TTL: Duration = Duration::from_secs(3600);
/// The least time between two fetches caused by unknown `kid`s.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(10);
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// One verification key and the algorithm it pins.
pub(crate) struct Key {
    pub(crate) algorithm: Algorithm,
    pub(crate) decoding: DecodingKey,
}

#[derive(Default)]
struct State {
    keys: HashMap<String, Arc<Key>>,
    expires: Option<Instant>,
    last_fetch: Option<Instant>,
    fetches: u64,
}

/// The verification keys of a JWKS document, by `kid`: each key that may verify tokens, with the
/// algorithm it pins; other keys (symmetric, for encryption, of unknown types) are left out.
#[derive(Default)]
pub struct KeySet {
    pub(crate) keys: HashMap<String, Arc<Key>>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet").field("kids", &self.kids()).finish()
    }
}

impl KeySet {
    /// Reads a JWKS document (`{"keys": [...]}`), at most 256 KiB.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() > MAX_JWKS_BYTES {
            return Err(format!("the JWKS is larger than {MAX_JWKS_BYTES} bytes"));
        }
        let set: JwkSet = serde_json::from_slice(bytes).map_err(|e| format!("the JWKS is not a key set: {e}"))?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            let (Some(algorithm), Ok(decoding)) = (pinned_algorithm(jwk), DecodingKey::from_jwk(jwk)) else { continue };
            keys.insert(jwk.common.key_id.clone().unwrap_or_default(), Arc::new(Key { algorithm, decoding }));
        }
        Ok(Self { keys })
    }

    /// The `kid`s of the usable keys, sorted.
    pub fn kids(&self) -> Vec<&str> {
        let mut kids: Vec<&str> = self.keys.keys().map(String::as_str).collect();
        kids.sort_unstable();
        kids
    }

    /// The key a token names: by `kid`, or the only key when the token names none.
    pub(crate) fn key(&self, kid: Option<&str>) -> Result<Arc<Key>, AuthError> {
        key_in(&self.keys, kid)
    }
}

/// The key `kid` names among `keys` (the only key when the token names none), or the refusal.
fn key_in(keys: &HashMap<String, Arc<Key>>, kid: Option<&str>) -> Result<Arc<Key>, AuthError> {
    match Jwks::lookup(keys, kid) {
        Some(key) => Ok(key),
        None if kid.is_none() => Err(AuthError::refused("invalid_token", "the token names no key (kid)")),
        None => Err(AuthError::refused("unknown_key", "the token is signed with a key the IAM does not publish")),
    }
}

/// The cached key set.
pub struct Jwks {
    url: reqwest::Url,
    state: RwLock<State>,
    fetching: Mutex<()>,
    min_refresh_interval: Duration,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks").field("url", &self.url.as_str()).finish_non_exhaustive()
    }
}

/// The algorithm a JWK pins, or `None` for keys that may not verify tokens (symmetric keys,
/// encryption keys, unknown types).
fn pinned_algorithm(jwk: &jsonwebtoken::jwk::Jwk) -> Option<Algorithm> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Some(Algorithm::RS256),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Some(Algorithm::ES256),
            EllipticCurve::P384 => Some(Algorithm::ES384),
            _ => None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => Some(Algorithm::EdDSA),
        _ => None,
    }?;
    let algorithm = match jwk.common.key_algorithm {
        Some(declared) => Algorithm::try_from(declared).ok()?,
        None => by_type,
    };
    is_asymmetric(algorithm).then_some(algorithm)
}

fn max_age(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').find_map(|part| part.trim().strip_prefix("max-age=")?.parse::<u64>().ok()))
        .map_or(DEFAULT_TTL, |seconds| Duration::from_secs(seconds).clamp(MIN_TTL, MAX_TTL))
}

impl Jwks {
    pub(crate) fn new(url: &str) -> Option<Self> {
        let url = reqwest::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https"))?;
        Some(Self {
            url,
            state: RwLock::new(State::default()),
            fetching: Mutex::new(()),
            min_refresh_interval: MIN_REFRESH_INTERVAL,
        })
    }

    pub(crate) fn set_min_refresh_interval(&mut self, interval: Duration) {
        self.min_refresh_interval = interval;
    }

    /// How many times the set was fetched (for tests and metrics).
    pub async fn fetches(&self) -> u64 {
        self.state.read().await.fetches
    }

    async fn fetch(&self) -> Result<(HashMap<String, Arc<Key>>, Duration), String> {
        static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
        let client = CLIENT.get_or_init(|| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("invariant: a client builds")
        });
        let response = client.get(self.url.clone()).timeout(FETCH_TIMEOUT).send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("the JWKS answered {}", response.status()));
        }
        let ttl = max_age(response.headers());
        // Read at most the limit, whatever length the server announces (or does not).
        let mut response = response;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if bytes.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("the JWKS is larger than {MAX_JWKS_BYTES} bytes"));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((KeySet::parse(&bytes)?.keys, ttl))
    }

    fn lookup(keys: &HashMap<String, Arc<Key>>, kid: Option<&str>) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => keys.get(kid).cloned(),
            None if keys.len() == 1 => keys.values().next().cloned(),
            None => None,
        }
    }

    /// The key a token names.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Arc<Key>, AuthError> {
        {
            let state = self.state.read().await;
            let fresh = state.expires.is_some_and(|t| Instant::now() < t);
            if fresh && let Some(key) = Self::lookup(&state.keys, kid) {
                return Ok(key);
            }
        }
        let _single_flight = self.fetching.lock().await;
        let mut state = self.state.write().await;
        let now = Instant::now();
        let expired = state.expires.is_none_or(|t| now >= t);
        let found = Self::lookup(&state.keys, kid);
        let may_fetch_for_unknown = state.last_fetch.is_none_or(|t| now.duration_since(t) >= self.min_refresh_interval);
        if expired || (found.is_none() && may_fetch_for_unknown) {
            state.last_fetch = Some(now);
            state.fetches += 1;
            match self.fetch().await {
                Ok((keys, ttl)) => {
                    state.keys = keys;
                    state.expires = Some(now + ttl);
                }
                Err(reason) if state.keys.is_empty() => {
                    return Err(AuthError::unavailable(format!("the signing keys cannot be fetched: {reason}")));
                }
                Err(reason) => tracing::warn!(%reason, "the JWKS could not be refreshed; the known keys stay in use"),
            }
        }
        key_in(&state.keys, kid)
    }
}
