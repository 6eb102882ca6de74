//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) through every target: each input
//! a run once found interesting must still pass without a panic. The corpus stays lean: `cargo
//! xtask fuzz` keeps only the fewest inputs that reach every edge (about 2,800 files, 1.5 MB).

use std::path::Path;

#[test]
fn the_committed_corpus_passes_every_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let (mut replayed, mut bytes) = (0, 0);
    for (name, target) in skill_fuzz::TARGETS {
        let folder = root.join(name);
        let entries = std::fs::read_dir(&folder).unwrap_or_else(|error| panic!("{}: {error}", folder.display()));
        let mut count = 0;
        for entry in entries {
            let path = entry.expect("an entry").path();
            let data = std::fs::read(&path).expect("readable");
            bytes += data.len();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name} panics on {}", path.display());
            count += 1;
        }
        assert!(count > 0, "the corpus of {name} is empty");
        replayed += count;
    }
    assert!(replayed >= skill_fuzz::TARGETS.len());
    // A corpus merged without `cargo xtask fuzz` (which keeps a set cover) would grow back to
    // the tens of thousands of files it once was.
    assert!(replayed <= 3_500 && bytes <= 5 << 20, "{replayed} inputs, {bytes} bytes: run `cargo xtask fuzz min`");
}
