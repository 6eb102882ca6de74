//! Suggestions for a skill reference that names nothing: the published references closest to it
//! (other versions of the same name first, then names a few edits away), so a `404` says what
//! was probably meant.

use skill_api::PrincipalKind;
use skill_store::records::SkillFilter;

use crate::Engine;
use crate::actor::Actor;
use crate::error::EngineError;

/// The most published versions looked through for a suggestion.
const LOOKED_AT: u32 = 1_000;
/// The most suggestions given.
const GIVEN: usize = 3;

/// The edit distance between `a` and `b` (insertions, deletions, substitutions), by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            previous = here;
        }
    }
    row[b.len()]
}

/// The references among `known` closest to `wanted`, best first.
pub(crate) fn closest(wanted: &str, known: &[String]) -> Vec<String> {
    let (name, _) = wanted.split_once('@').unwrap_or((wanted, ""));
    let limit = (name.chars().count() / 4).max(2);
    let mut scored: Vec<(usize, &String)> = known
        .iter()
        .filter_map(|reference| {
            let (other, _) = reference.split_once('@').unwrap_or((reference, ""));
            let score = if other == name { 0 } else { distance(name, other) };
            (score <= limit && reference != wanted).then_some((score, reference))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(GIVEN).map(|(_, reference)| reference.clone()).collect()
}

impl Engine {
    /// `error` (a `404` for `reference`) with the closest published references, if any — for
    /// people and executors; an agent, which calls only what it is assigned, learns no other names.
    pub(crate) async fn with_suggestions(&self, actor: &Actor, error: EngineError, reference: &str) -> EngineError {
        if actor.principal().kind == PrincipalKind::Agent {
            return error;
        }
        let filter = SkillFilter { limit: LOOKED_AT, ..SkillFilter::default() };
        let Ok(entries) = self.store.skills(&filter).await else { return error };
        let known: Vec<String> =
            entries.into_iter().map(|entry| format!("{}@{}", entry.skill.name, entry.skill.version)).collect();
        let found = closest(reference, &known);
        if found.is_empty() {
            return error;
        }
        let message = format!("{}: did you mean {}?", error.message, found.join(", "));
        EngineError { message, ..error }.with("didYouMean", found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_references_come_first() {
        let known: Vec<String> =
            ["claim.lookup@1", "claim.send_reply@1", "claim.send_reply@2", "claim.classify@1", "other.thing@1"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
        assert_eq!(closest("claim.send_reply@3", &known), ["claim.send_reply@1", "claim.send_reply@2"]);
        assert_eq!(closest("claim.lokup@1", &known), ["claim.lookup@1"]);
        assert_eq!(closest("claim.send-reply", &known), ["claim.send_reply@1", "claim.send_reply@2"]);
        assert!(closest("billing.refund@1", &known).is_empty());
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }
}
