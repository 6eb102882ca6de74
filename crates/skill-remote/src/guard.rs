//! The network guard every remote call passes: the endpoint's origin must be allowed; its host
//! is resolved here, by the executor, and when any address is not global (see [`addresses`])
//! the call is refused unless the host is listed as private. The connection then goes to an
//! address that was checked — the guard is the HTTP client's resolver — while the request keeps
//! the host's name (Host header, TLS server name, certificate), so a name that resolves to a
//! public address when checked and to 127.0.0.1 a moment later (DNS rebinding) gains nothing.

pub mod addresses;

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::Url;

/// Finds the addresses of a host (the system's resolver in service, a fixed table in tests).
pub trait Lookup: Send + Sync + fmt::Debug {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system's resolver.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(found.map(|address| address.ip()).collect())
        })
    }
}

/// Why the guard refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The endpoint's origin is not in the allow-list (`endpoint_not_allowed`, retryable: another
    /// executor may be allowed).
    NotAllowed { origin: String },
    /// The host resolves to an address that is not global and is not listed as private
    /// (`endpoint_address_forbidden`, not retryable).
    Forbidden { host: String, address: IpAddr },
    /// The endpoint is not an `http(s)://` URL with a host.
    Invalid { endpoint: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotAllowed { origin } => write!(f, "the origin {origin} is not in this executor's allow-list"),
            Refusal::Forbidden { host, address } => write!(
                f,
                "{host} resolves to {address}, which is not a public address, and {host} is not listed as private"
            ),
            Refusal::Invalid { endpoint } => write!(f, "{endpoint:?} is not an http(s) URL with a host"),
        }
    }
}

impl std::error::Error for Refusal {}

/// The allow-list, the private hosts and the resolver.
#[derive(Debug, Clone)]
pub struct Guard {
    origins: BTreeSet<String>,
    private_hosts: BTreeSet<String>,
    lookup: Arc<dyn Lookup>,
}

impl Guard {
    /// A guard admitting `origins` (each `scheme://host[:port]`, checked by [`origin_of`]) and
    /// letting the `private_hosts` resolve to any address.
    pub fn new(origins: &[String], private_hosts: &[String], lookup: Arc<dyn Lookup>) -> Result<Self, String> {
        let origins = origins.iter().map(|origin| normalized_origin(origin)).collect::<Result<_, _>>()?;
        let private_hosts = private_hosts.iter().map(|host| host.trim_end_matches('.').to_ascii_lowercase()).collect();
        Ok(Self { origins, private_hosts, lookup })
    }

    /// The checks that need no resolution: an allowed origin, and, for a host written as an
    /// address, a global one (or a private host).
    pub fn admit(&self, endpoint: &Url) -> Result<(), Refusal> {
        let origin = origin_of(endpoint).ok_or_else(|| Refusal::Invalid { endpoint: endpoint.to_string() })?;
        if !self.origins.contains(&origin) {
            return Err(Refusal::NotAllowed { origin });
        }
        let host = bare_host(endpoint).unwrap_or_default();
        if let Ok(address) = host.parse::<IpAddr>()
            && !addresses::is_global(address)
            && !self.private_hosts.contains(&host)
        {
            return Err(Refusal::Forbidden { host, address });
        }
        Ok(())
    }

    /// The addresses of `host` a connection may go to: all of them, each checked.
    pub async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let found = self.lookup.lookup(host.clone()).await?;
        if !self.private_hosts.contains(&host)
            && let Some(address) = found.iter().copied().find(|address| !addresses::is_global(*address))
        {
            return Err(Box::new(Refusal::Forbidden { host, address }));
        }
        if found.is_empty() {
            return Err(format!("{host} has no address").into());
        }
        Ok(found)
    }
}

/// The guard as the HTTP client's resolver: the client connects only to checked addresses.
#[derive(Debug, Clone)]
pub(crate) struct Resolver(pub(crate) Arc<Guard>);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = Arc::clone(&self.0);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = guard.resolve(&host).await?;
            let addresses: reqwest::dns::Addrs = Box::new(found.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addresses)
        })
    }
}

/// The guard's refusal inside an error of the HTTP client, if that is what stopped it.
pub(crate) fn refusal_in(error: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(refusal) = error.downcast_ref::<Refusal>() {
            return Some(refusal.clone());
        }
        cause = error.source();
    }
    None
}

/// The host of `url`, lower-case, without the brackets of an IPv6 address.
fn bare_host(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase())
}

/// `scheme://host[:port]` of an `http(s)` URL, lower-case, the scheme's default port omitted.
pub fn origin_of(url: &Url) -> Option<String> {
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.to_ascii_lowercase();
    Some(match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    })
}

/// An allow-list entry as written by an operator: exactly an origin — a path, a query, a
/// fragment or credentials are refused (the executor does not start).
pub fn normalized_origin(written: &str) -> Result<String, String> {
    let refuse = |why: &str| Err(format!("{written:?} is not an origin scheme://host[:port]: {why}"));
    let Ok(url) = Url::parse(written) else { return refuse("not a URL") };
    if !url.username().is_empty() || url.password().is_some() {
        return refuse("it has credentials");
    }
    if url.query().is_some() || url.fragment().is_some() {
        return refuse("it has a query or a fragment");
    }
    if !matches!(url.path(), "" | "/") {
        return refuse("it has a path");
    }
    origin_of(&url).map_or_else(|| refuse("only http and https"), Ok)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[derive(Debug)]
    struct Table(HashMap<String, Vec<IpAddr>>);

    impl Lookup for Table {
        fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
            let found = self.0.get(&host).cloned();
            Box::pin(async move { found.ok_or_else(|| std::io::Error::other("unknown host")) })
        }
    }

    fn guard(private: &[&str]) -> Guard {
        let table = Table(HashMap::from([
            ("public.example".to_owned(), vec!["93.184.215.14".parse().expect("ip")]),
            ("metadata.example".to_owned(), vec!["169.254.169.254".parse().expect("ip")]),
            ("mixed.example".to_owned(), vec!["93.184.215.14".parse().expect("ip"), "10.0.0.5".parse().expect("ip")]),
            ("inside.example".to_owned(), vec!["10.0.0.7".parse().expect("ip")]),
        ]));
        let origins: Vec<String> = [
            "https://public.example",
            "https://metadata.example",
            "https://mixed.example",
            "https://inside.example",
            "http://127.0.0.1:8080",
            "https://[::1]",
        ]
        .iter()
        .map(|o| (*o).to_owned())
        .collect();
        let private: Vec<String> = private.iter().map(|h| (*h).to_owned()).collect();
        Guard::new(&origins, &private, Arc::new(table)).expect("a guard")
    }

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    #[test]
    fn allow_list_entries_are_origins_only() {
        assert_eq!(normalized_origin("HTTPS://Svc.Example:443/").expect("ok"), "https://svc.example");
        assert_eq!(normalized_origin("http://svc.example:8080").expect("ok"), "http://svc.example:8080");
        for bad in ["https://svc.example/x", "https://u:p@svc.example", "https://svc.example?q", "ftp://h", "svc"] {
            assert!(normalized_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn origins_not_listed_are_refused_before_any_lookup() {
        let guard = guard(&[]);
        assert_eq!(
            guard.admit(&url("https://other.example/skills/x@1")),
            Err(Refusal::NotAllowed { origin: "https://other.example".into() })
        );
        assert_eq!(
            guard.admit(&url("https://public.example:8443/x")),
            Err(Refusal::NotAllowed { origin: "https://public.example:8443".into() })
        );
        assert_eq!(guard.admit(&url("https://public.example/skills/x@1")), Ok(()));
    }

    #[test]
    fn addresses_written_as_hosts_are_judged_at_once() {
        let closed = guard(&[]);
        assert!(matches!(closed.admit(&url("http://127.0.0.1:8080/x")), Err(Refusal::Forbidden { .. })));
        assert!(matches!(closed.admit(&url("https://[::1]/x")), Err(Refusal::Forbidden { .. })));
        let open = guard(&["127.0.0.1", "::1"]);
        assert_eq!(open.admit(&url("http://127.0.0.1:8080/x")), Ok(()));
        assert_eq!(open.admit(&url("https://[::1]/x")), Ok(()));
    }

    #[tokio::test]
    async fn every_resolved_address_is_checked_unless_the_host_is_private() {
        let closed = guard(&[]);
        assert!(closed.resolve("public.example").await.is_ok());
        for host in ["metadata.example", "mixed.example", "inside.example"] {
            let error = closed.resolve(host).await.expect_err(host);
            assert!(matches!(refusal_in(error.as_ref()), Some(Refusal::Forbidden { .. })), "{host}: {error}");
        }
        let open = guard(&["inside.example"]);
        assert_eq!(
            open.resolve("INSIDE.example.").await.expect("private"),
            vec!["10.0.0.7".parse::<IpAddr>().expect("ip")]
        );
        assert!(open.resolve("metadata.example").await.is_err(), "only the listed host");
    }
}
