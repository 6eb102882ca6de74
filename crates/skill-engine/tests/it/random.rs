//! What the random tests share: a small generator that gives the same sequence on every machine,
//! their sizes from the environment, and the principals they act as.

use skill_engine::{Actor, Engine, Origin, TokenRequest};

/// splitmix64: small, fast, and the same sequence on every machine.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { Some(&items[self.below(items.len())]) }
    }
}

pub(crate) fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// A principal of `kind` named `name` with `grants`, as the engine authenticates it.
pub(crate) async fn actor(engine: &Engine, name: &str, kind: &str, grants: &[&str]) -> Actor {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: kind.to_owned(),
        grants: grants.iter().map(|g| (*g).to_owned()).collect(),
        label: String::new(),
        expires_at: None,
    };
    let issued = engine.issue_token(&request, &Origin::default()).await.expect("token");
    engine.authenticate(&issued.token).await.expect("authenticates")
}
