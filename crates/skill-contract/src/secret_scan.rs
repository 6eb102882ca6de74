//! Recognises text that looks like a credential, so a contract never carries one.
//!
//! A contract is published, exported to YAML and shown to anyone who may read the catalog: it
//! may name an audience or a scope, never hold a token. The checks are deliberately broad
//! (a false alarm costs an author one rename; a leaked key costs much more).

/// Key names that announce a credential, compared without case, `_` and `-`.
const SECRET_KEY_WORDS: &[&str] = &[
    "secret",
    "password",
    "passwd",
    "token",
    "apikey",
    "privatekey",
    "credential",
    "authorization",
    "bearer",
    "cookie",
    "session",
];

/// Prefixes of well-known key and token formats.
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "hvs.",
    "s.",
];

/// Whether a key name says its value is a credential (`clientSecret`, `api_key`, `token`).
pub(crate) fn is_secret_key(key: &str) -> bool {
    let folded: String = key.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect();
    SECRET_KEY_WORDS.iter().any(|word| folded.contains(word))
}

fn shannon_bits_per_char(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let len = text.chars().count() as f64;
    counts.values().map(|&n| n as f64 / len).map(|p| -p * p.log2()).sum()
}

fn looks_like_jwt(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 3
        && text.starts_with("eyJ")
        && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
}

/// Whether a value looks like a credential: a PEM block, a JWT, an authorization header value,
/// a well-known key format, `name=secret` pairs, or a long random-looking token.
pub(crate) fn looks_like_secret(text: &str) -> bool {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower.contains("-----begin") || looks_like_jwt(trimmed) {
        return true;
    }
    if lower.starts_with("bearer ") || lower.starts_with("basic ") || lower.starts_with("token ") {
        return true;
    }
    // `s.` alone is a vault token prefix only when followed by a long body.
    if TOKEN_PREFIXES.iter().any(|p| trimmed.starts_with(p) && trimmed.len() >= p.len() + 16) {
        return true;
    }
    if let Some((key, value)) = trimmed.split_once('=')
        && is_secret_key(key)
        && !value.is_empty()
    {
        return true;
    }
    let token_chars = trimmed.chars().all(|c| c.is_ascii_alphanumeric() || "+/=_-".contains(c));
    let has_digit = trimmed.chars().any(|c| c.is_ascii_digit());
    let has_alpha = trimmed.chars().any(|c| c.is_ascii_alphabetic());
    token_chars && has_digit && has_alpha && trimmed.len() >= 32 && shannon_bits_per_char(trimmed) >= 3.5
}

/// Query or fragment parameters whose value is a credential, compared without case.
const SECRET_PARAMETERS: &[&str] = &[
    "sig",
    "signature",
    "x-amz-signature",
    "x-goog-signature",
    "access_token",
    "id_token",
    "refresh_token",
    "client_secret",
    "password",
    "apikey",
    "api_key",
    "key",
    "token",
    "code",
];

/// Whether free text (a description, a default, a config value, a URL) holds a credential: a
/// PEM block, a JWT, a well-known key format, an authorization header value, `secret=value`, or
/// a URL parameter that carries one (`?sig=`, `#access_token=`). Unlike [`looks_like_secret`]
/// it does not guess from randomness, since free text holds ids and hashes.
pub(crate) fn text_holds_secret(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if lower.contains("-----begin") || lower.contains("bearer ey") {
        return true;
    }
    let words = text.split(|c: char| c.is_whitespace() || "\"'<>()[]{},;`".contains(c));
    for word in words.filter(|word| !word.is_empty()) {
        // A key of a known format: its prefix, then a long random part with a digit; never a
        // `module:function` or `a.b.c` name that happens to start the same way.
        let random_tail = |prefix: &str| {
            let tail = &word[prefix.len()..];
            tail.len() >= 16 && tail.chars().any(|c| c.is_ascii_digit()) && !tail.contains([':', '.', '/'])
        };
        let known_key = TOKEN_PREFIXES.iter().any(|p| p.len() > 2 && word.starts_with(p) && random_tail(p));
        if looks_like_jwt(word) || known_key {
            return true;
        }
        for pair in word.split(['?', '&', '#']) {
            if let Some((key, value)) = pair.split_once('=')
                && !value.is_empty()
                && (is_secret_key(key) || SECRET_PARAMETERS.iter().any(|name| key.eq_ignore_ascii_case(name)))
            {
                return true;
            }
        }
    }
    false
}

/// The path (`spec.description`, `config.apiKey`, `metadata.notes[2]`) of the first place in
/// `value` that holds a credential: a string [`text_holds_secret`] flags, or a string or number
/// under a key that names one (`password`, `clientSecret`).
pub fn find_secret_material(value: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(text) => text_holds_secret(text).then(|| path.to_owned()),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(index, item)| find_secret_material(item, &format!("{path}[{index}]")))
        }
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            let credential_value = match item {
                Value::String(text) => !text.is_empty(),
                Value::Number(_) => true,
                _ => false,
            };
            if is_secret_key(key) && credential_value {
                return Some(here);
            }
            find_secret_material(item, &here)
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_holding_credentials_is_found_and_ids_are_not() {
        use serde_json::json;
        let flagged = [
            (json!({"description": "use this:\n-----BEGIN RSA PRIVATE KEY-----\nMIIB"}), "description"),
            (json!({"config": {"mode": "sk_live_0123456789abcdefghij"}}), "config.mode"),
            (
                json!({"inputs": {"properties": {"t": {"default": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"}}}}),
                "inputs.properties.t.default",
            ),
            (json!({"metadata": {"password": "hunter2"}}), "metadata.password"),
            (json!({"endpoint": "https://x.example/cb#access_token=abc"}), "endpoint"),
            (json!({"endpoint": "https://blob.example/f?sv=1&sig=abcdef"}), "endpoint"),
            (json!({"notes": ["fine", "Authorization: Bearer eyJraWQ"]}), "notes[1]"),
        ];
        for (value, path) in flagged {
            assert_eq!(find_secret_material(&value, ""), Some(path.to_owned()), "{value}");
        }
        let clean = json!({
            "description": "Find a claim by id 550e8400-e29b-41d4-a716-446655440000; sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "inputs": {"properties": {"password": {"type": "string", "writeOnly": true}, "token_count": {"type": "integer"}},
                       "required": ["password"]},
            "endpoint": "https://x.example/skills/a@1?design=1",
            "entrypoint": "hvs.abcdefghijklmnopqrst:run",
            "modules": ["AKIAabcdefghijklmnopqr.handlers:go", "AIzaSomething1long.module.path:f"],
            "scopes": ["claims:write"],
        });
        assert_eq!(find_secret_material(&clean, ""), None);
    }

    #[test]
    fn recognises_credentials() {
        let secrets = [
            "-----BEGIN PRIVATE KEY-----\nabc",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "Bearer abc.def",
            "sk-proj-0123456789abcdefghij",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
            "AKIAIOSFODNN7EXAMPLE1234",
            "password=hunter2",
            "9f8e7d6c5b4a39281706f5e4d3c2b1a0Zq8Xw7Vu",
        ];
        for text in secrets {
            assert!(looks_like_secret(text), "{text}");
        }
    }

    #[test]
    fn leaves_names_and_scopes_alone() {
        let names = [
            "claims-skills",
            "https://graph.example.com/.default",
            "claims:write",
            "crm.contacts.read",
            "api://claims-service",
            "skills",
            "s.short",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
        ];
        for text in names {
            assert!(!looks_like_secret(text), "{text}");
        }
    }

    #[test]
    fn recognises_secret_key_names() {
        for key in ["token", "clientSecret", "api_key", "API-KEY", "privateKey", "Authorization"] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["audience", "scopes", "endpoint"] {
            assert!(!is_secret_key(key), "{key}");
        }
    }
}
