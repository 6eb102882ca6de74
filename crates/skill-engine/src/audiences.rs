//! The audiences no token is issued for: the core's own, the executor's and the issuer's.

/// Audiences no token is issued for: the core's own and the executor's.
pub const RESERVED_AUDIENCES: &[&str] = &["skill-core", "skill-executor"];
/// Whether no token may name `audience`: a reserved one or the core's own issuer, compared
/// without regard to case, surrounding whitespace or a trailing `/`.
pub fn reserved_audience(audience: &str, issuer: Option<&str>) -> bool {
    let normal = |text: &str| text.trim().trim_end_matches('/').to_ascii_lowercase();
    let audience = normal(audience);
    RESERVED_AUDIENCES.iter().any(|reserved| normal(reserved) == audience)
        || issuer.is_some_and(|issuer| normal(issuer) == audience)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_audiences_are_named_whatever_their_case_or_spacing() {
        for audience in
            ["skill-core", " Skill-Core", "SKILL-EXECUTOR\t", "https://core.example/", "HTTPS://Core.Example"]
        {
            assert!(reserved_audience(audience, Some("https://core.example")), "{audience:?}");
        }
        assert!(!reserved_audience("claims-api", Some("https://core.example")));
        assert!(!reserved_audience("https://core.example", None), "the issuer only when it is known");
    }
}
