//! The fuzz targets, one function each over arbitrary bytes: none may panic, hang or allocate
//! without bound, whatever the bytes. `fuzz/` runs them under libFuzzer (`cargo xtask fuzz`);
//! `tests/corpus.rs` replays the committed corpus through them in the test command.
//!
//! | target | what it drives |
//! |---|---|
//! | [`api_bodies`] | the core's strict JSON body reader, for the body type of every route |
//! | [`contract`] | contract normalization (every rule, the schema bounds and compilation) |
//! | [`skill_document`] | the YAML reader, then a skill document read by the contract crate |
//! | [`package`] | a package's files read, checked offline, and its endpoints' variables filled |
//! | [`names`] | skill references, names and versions, package keys |
//! | [`token`] | a JWKS document and a bearer token checked against it by the hosts' verifier |
//! | [`mcp`] | the MCP hosts' screen of a raw JSON-RPC message |

use serde_json::Value;
use skill_api::{ApplyRequest, AssignRequest, ListQuery, PatchRequest, PublishRequest, RecordRequest};
use skill_contract::package::{self, PackageFile};
use skill_contract::{NormalizeOptions, SideEffects, Skill, SkillName, SkillRef, SkillVersion};

/// A target: a function over arbitrary bytes.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/` and the corpus folders call them.
pub const TARGETS: &[(&str, Target)] = &[
    ("api_bodies", api_bodies),
    ("contract", contract),
    ("skill_document", skill_document),
    ("package", package),
    ("names", names),
    ("token", token),
    ("mcp", mcp),
];

/// Every request body type of the API through the core's reader.
pub fn api_bodies(data: &[u8]) {
    use skill_server::api::plumbing::parse;
    let _ = parse::<PublishRequest>(data);
    let _ = parse::<PatchRequest>(data);
    let _ = parse::<AssignRequest>(data);
    let _ = parse::<RecordRequest>(data);
    let _ = parse::<ApplyRequest>(data);
    let _ = parse::<ListQuery>(data);
}

/// A contract document normalized for each side effect and option set.
pub fn contract(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    for side_effects in [SideEffects::None, SideEffects::ExternalWrite] {
        let _ = skill_contract::normalize(&value, side_effects, &NormalizeOptions::default());
    }
    let stored = NormalizeOptions { allow_placeholders: true, allow_conditions: true, stored: true };
    let _ = skill_contract::normalize(&value, SideEffects::ExternalRead, &stored);
}

/// YAML text, then the skill document it holds.
pub fn skill_document(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(document) = skill_contract::yaml::from_str(text) else { return };
    let _ = Skill::from_document(&document, &NormalizeOptions { allow_placeholders: true, ..Default::default() });
    let _ = skill_contract::yaml::to_string(&document);
}

/// Files separated by lines `--- <path>` (the first file is `package.yaml`), read as a package,
/// checked, and each object's endpoint variable filled.
pub fn package(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut files = Vec::new();
    let mut path = package::MANIFEST.to_owned();
    let mut body = String::new();
    for line in text.split_inclusive('\n') {
        if let Some(next) = line.strip_prefix("--- ") {
            files.push(file(&path, &body));
            path = next.trim().to_owned();
            body.clear();
        } else {
            body.push_str(line);
        }
    }
    files.push(file(&path, &body));
    let (read, _) = package::read("p", &files);
    if let Some(read) = read {
        let _ = package::check(&read, &[]);
        for object in &read.objects {
            let _ =
                package::fill(&read, object, &|name| (name.len() % 2 == 0).then(|| format!("https://{name}.example")));
        }
    }
}

fn file(path: &str, text: &str) -> PackageFile {
    PackageFile { path: path.to_owned(), document: skill_contract::yaml::from_str(text).map_err(|e| e.to_string()) }
}

/// Names and references.
pub fn names(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = SkillRef::parse(text);
    let _ = SkillName::new(text);
    let _ = SkillVersion::new(text);
    let _ = package::is_package_key(text);
    if let Ok(reference) = SkillRef::parse(text) {
        assert_eq!(SkillRef::parse(&reference.to_string()).ok(), Some(reference), "a reference reads back");
    }
}

/// A JWKS document and a token after a NUL byte, checked by the hosts' verifier.
pub fn token(data: &[u8]) {
    let (keys, token) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(keys) = skill_host::auth::KeySet::parse(keys) else { return };
    let Ok(token) = std::str::from_utf8(token) else { return };
    let verifier = verifier();
    let _ = verifier.verify_with(&keys, Some(&format!("Bearer {token}")));
    let _ = verifier.verify_with(&keys, Some(token));
}

fn verifier() -> &'static skill_host::auth::Verifier {
    static VERIFIER: std::sync::OnceLock<skill_host::auth::Verifier> = std::sync::OnceLock::new();
    VERIFIER.get_or_init(|| {
        skill_host::auth::Verifier::new("https://iam.example", "skills", "https://iam.example/jwks.json")
            .expect("invariant: a valid configuration")
    })
}

/// A raw MCP message through the hosts' screen.
pub fn mcp(data: &[u8]) {
    let _ = skill_host::mcp::screen::screen(data);
}
