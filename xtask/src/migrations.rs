//! The two backends' migrations in parity: the same stems (`0024_key_changes_heard`, …) in the
//! same order in `migrations/sqlite/` and `migrations/postgres/`, so a schema change is made for
//! both (a file that says why the other backend needs nothing where it does not), and each list
//! in `backend.rs` names every file of its folder once.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// The `.sql` file stems of `folder`, sorted.
fn stems(folder: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(folder).with_context(|| format!("reading {}", folder.display()))? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) == Some("sql") {
            found.push(path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned());
        }
    }
    found.sort();
    Ok(found)
}

/// What differs between the stems of the two backends: each line names the position, and what
/// each side has there.
fn differences(sqlite: &[String], postgres: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for at in 0..sqlite.len().max(postgres.len()) {
        let (lite, pg) = (sqlite.get(at), postgres.get(at));
        if lite != pg {
            let shown = |stem: Option<&String>| stem.map_or("nothing".to_owned(), |stem| format!("{stem}.sql"));
            found.push(format!("migration {}: sqlite has {}, postgres has {}", at + 1, shown(lite), shown(pg)));
        }
    }
    for (backend, stems) in [("sqlite", sqlite), ("postgres", postgres)] {
        for (at, stem) in stems.iter().enumerate() {
            let number = format!("{:04}_", at + 1);
            if !stem.starts_with(&number) {
                found.push(format!("{backend}: {stem}.sql is migration {}: name it {number}…", at + 1));
            }
        }
    }
    found
}

/// The files each backend's list in `backend.rs` does not name.
fn unlisted(source: &str, backend: &str, stems: &[String]) -> Vec<String> {
    stems
        .iter()
        .filter(|stem| !source.contains(&format!("../migrations/{backend}/{stem}.sql")))
        .map(|stem| format!("{backend}: {stem}.sql is not in the list of crates/skill-store/src/backend.rs"))
        .collect()
}

pub(crate) fn check() -> Result<()> {
    println!("==> migrations in parity");
    let store = workspace_root().join("crates/skill-store");
    let sqlite = stems(&store.join("migrations/sqlite"))?;
    let postgres = stems(&store.join("migrations/postgres"))?;
    let source = std::fs::read_to_string(store.join("src/backend.rs")).context("reading backend.rs")?;
    let mut found = differences(&sqlite, &postgres);
    found.extend(unlisted(&source, "sqlite", &sqlite));
    found.extend(unlisted(&source, "postgres", &postgres));
    if !found.is_empty() {
        bail!(
            "the backends' migrations are not in parity (add the migration to both, an SQL comment saying why where a backend needs nothing):\n  {}",
            found.join("\n  ")
        );
    }
    println!("    {} migrations, the same stems on both backends", sqlite.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(stems: &[&str]) -> Vec<String> {
        stems.iter().map(|stem| (*stem).to_owned()).collect()
    }

    #[test]
    fn the_same_stems_pass_and_a_planted_difference_is_named() {
        let both = list(&["0001_catalog", "0002_work"]);
        assert!(differences(&both, &both).is_empty());
        let found =
            differences(&list(&["0001_catalog", "0002_traces"]), &list(&["0001_catalog", "0002_keys", "0003_traces"]));
        assert_eq!(
            found,
            [
                "migration 2: sqlite has 0002_traces.sql, postgres has 0002_keys.sql",
                "migration 3: sqlite has nothing, postgres has 0003_traces.sql",
            ]
        );
        let gap = differences(&list(&["0001_catalog", "0003_work"]), &list(&["0001_catalog", "0003_work"]));
        assert!(gap.iter().any(|line| line.contains("0003_work.sql is migration 2")), "{gap:?}");
    }

    #[test]
    fn a_file_missing_from_the_list_is_named() {
        let source = r#"(1, "catalog", include_str!("../migrations/sqlite/0001_catalog.sql")),"#;
        assert!(unlisted(source, "sqlite", &list(&["0001_catalog"])).is_empty());
        assert_eq!(unlisted(source, "sqlite", &list(&["0001_catalog", "0002_work"])).len(), 1);
    }

    #[test]
    fn this_repositorys_migrations_are_in_parity() {
        check().expect("in parity");
    }
}
