//! An `http`/`mcp` endpoint in one form: the core keeps a contract's endpoint only as the
//! origin it is read as (WHATWG URL parsing, which executors and their network guard use too), so
//! a call's target and an executor's allowed origin compare as the same text. Numeric and
//! abbreviated IPv4 hosts (`2130706433`, `127.1`, `0x7f000001`), an IPv4-mapped IPv6 address, a
//! default port written out, a trailing dot: refused, with the form to write instead.

use skill_contract::codes::Code;
use url::{Host, Url};

use crate::error::{Class, EngineError, Result};

/// `Ok` when `endpoint` (an `http(s)://` URL, or `stdio:<name>`) is written in its canonical
/// origin form; `422 invalid_skill_contract` naming `field` and the canonical form otherwise.
pub(crate) fn check_endpoint(field: &str, endpoint: &str) -> Result<()> {
    if endpoint.starts_with("stdio:") {
        return Ok(());
    }
    let refuse = |why: &str, canonical: Option<String>| {
        let mut error = EngineError::new(
            Class::Invalid,
            Code::InvalidSkillContract,
            format!("the endpoint {:?} {why}", endpoint.chars().take(120).collect::<String>()),
        )
        .with("field", field);
        if let Some(canonical) = canonical {
            error = error.with("canonical", canonical);
        }
        error
    };
    let Ok(url) = Url::parse(endpoint) else { return Err(refuse("is not a URL", None)) };
    let Some(host) = url.host() else { return Err(refuse("has no host", None)) };
    if let Host::Ipv6(address) = host
        && let Some(v4) = address.to_ipv4_mapped()
    {
        return Err(refuse("names an IPv4 address in IPv6 form: write the IPv4 address", Some(v4.to_string())));
    }
    if url.host_str().is_some_and(|host| host.ends_with('.')) {
        return Err(refuse("ends its host with a dot: write the host without it", None));
    }
    let canonical = match url.port() {
        Some(port) => format!("{}://{}:{port}", url.scheme(), url.host_str().unwrap_or_default()),
        None => format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default()),
    };
    let rest_at = endpoint.find("://").map_or(0, |at| at + 3);
    let origin_end = endpoint[rest_at..].find(['/', '?', '#']).map_or(endpoint.len(), |at| rest_at + at);
    let written = endpoint[..origin_end].to_ascii_lowercase();
    if written != canonical {
        let suggested = format!("{canonical}{}", &endpoint[origin_end..]);
        return Err(refuse(
            &format!("is not in its canonical form: its origin reads as {canonical}; write {suggested}"),
            Some(suggested),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_kept_only_in_the_form_it_is_read_as() {
        for fine in [
            "https://svc.example/run",
            "HTTPS://Svc.Example/run",
            "http://127.0.0.1:8080/x",
            "https://[::1]:8443/mcp",
            "https://svc.example",
            "stdio:tools",
        ] {
            assert!(check_endpoint("implementation.endpoint", fine).is_ok(), "{fine}");
        }
        for (bad, canonical) in [
            ("http://2130706433:8080/x", Some("http://127.0.0.1:8080/x")),
            ("http://127.1/x", Some("http://127.0.0.1/x")),
            ("http://0x7f000001/x", Some("http://127.0.0.1/x")),
            ("http://0177.0.0.1/x", Some("http://127.0.0.1/x")),
            ("https://svc.example:443/run", Some("https://svc.example/run")),
            ("http://[::ffff:127.0.0.1]/x", Some("127.0.0.1")),
            ("https://[0:0:0:0:0:0:0:1]/x", Some("https://[::1]/x")),
            ("https://svc.example./run", None),
        ] {
            let error = check_endpoint("implementation.endpoint", bad).expect_err(bad);
            assert_eq!(error.code, Code::InvalidSkillContract, "{bad}");
            assert_eq!(error.details.get("canonical").and_then(|c| c.as_str()), canonical, "{bad}");
        }
    }
}
