//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) through every target: each input
//! a run once found interesting must still pass without a panic.

use std::path::Path;

#[test]
fn the_committed_corpus_passes_every_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut replayed = 0;
    for (name, target) in skill_fuzz::TARGETS {
        let folder = root.join(name);
        let entries = std::fs::read_dir(&folder).unwrap_or_else(|error| panic!("{}: {error}", folder.display()));
        let mut count = 0;
        for entry in entries {
            let path = entry.expect("an entry").path();
            let data = std::fs::read(&path).expect("readable");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name} panics on {}", path.display());
            count += 1;
        }
        assert!(count > 0, "the corpus of {name} is empty");
        replayed += count;
    }
    assert!(replayed >= skill_fuzz::TARGETS.len());
}
