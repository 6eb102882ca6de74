//! Benchmark P6: `export` and `export --check` of a generated package of 1,000 skills, after
//! compilation. Prints a table and writes `target/bench/export.json`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::{run, target_dir, workspace_root};

const SKILLS: usize = 1000;
const RUNS: usize = 7;
/// The bar of `shared/design/performance.md`, P6.
const BAR: Duration = Duration::from_secs(1);

/// A crate with `SKILLS` skills over ten pairs of input/output types, with the policy varied.
fn generate(folder: &Path) -> Result<()> {
    let mut source = String::from(
        "//! Generated for benchmark P6.\n\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\nuse skill_sdk::{SkillError, skill};\n\n",
    );
    for t in 0..10 {
        source.push_str(&format!(
            "#[derive(Debug, Deserialize, JsonSchema)]\npub struct In{t} {{\n    /// The text.\n    pub text: String,\n    pub count: Option<u32>,\n    pub tags: Vec<String>,\n    pub field{t}: bool,\n}}\n\n\
             #[derive(Debug, Serialize, JsonSchema)]\npub struct Out{t} {{\n    pub text: String,\n    pub score: f64,\n    pub note: Option<String>,\n}}\n\n"
        ));
    }
    let policies = [
        ("none", "low", "none", ""),
        ("external_read", "medium", "natural", ", retry = (3, 5)"),
        ("external_write", "high", "required", ", retry = (2, 10), permissions = [\"bench.write\"]"),
    ];
    for i in 0..SKILLS {
        let t = i % 10;
        let (side_effects, risk, idempotency, extra) = policies[i % policies.len()];
        source.push_str(&format!(
            "/// Skill number {i} of the benchmark.\n\
             #[skill(\"bench.skill_{i:04}\", version = \"1\", side_effects = \"{side_effects}\", risk = \"{risk}\", idempotency = \"{idempotency}\"{extra})]\n\
             pub fn skill_{i:04}(inputs: In{t}) -> Result<Out{t}, SkillError> {{\n    Ok(Out{t} {{ text: inputs.text, score: 1.0, note: None }})\n}}\n\n"
        ));
    }
    std::fs::create_dir_all(folder.join("src"))?;
    std::fs::write(folder.join("src/lib.rs"), source)?;
    std::fs::write(folder.join("src/main.rs"), "//! The host.\n\nskill_sdk::host_main!(bench_export);\n")?;
    let manifest = format!(
        "[package]\nname = \"bench-export\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n\
         [dependencies]\nschemars = \"1\"\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
         skill-sdk = {{ path = \"{}\" }}\n\n[profile.release]\ncodegen-units = 16\n",
        workspace_root().join("crates/skill-sdk").display()
    );
    std::fs::write(folder.join("Cargo.toml"), manifest)?;
    std::fs::copy(workspace_root().join("Cargo.lock"), folder.join("Cargo.lock"))?;
    Ok(())
}

fn time(binary: &Path, args: &[&str], before_each: impl Fn() -> Result<()>) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        before_each()?;
        let started = Instant::now();
        let output = Command::new(binary).args(args).output().context("running the benchmark host")?;
        let elapsed = started.elapsed();
        if !output.status.success() {
            bail!(
                "{args:?} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        times.push(elapsed);
    }
    times.sort();
    Ok(times)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn bench() -> Result<()> {
    let root = target_dir().join("bench");
    let folder = root.join("export-crate");
    let package = root.join("export-package");
    generate(&folder)?;
    let _ = std::fs::remove_dir_all(&package);
    std::fs::create_dir_all(&package)?;
    std::fs::write(
        package.join("package.yaml"),
        "apiVersion: taimen.ai/v1\nkind: Package\nkey: export-package\nspec:\n  version: 1.0.0\n",
    )?;
    let build_target = root.join("target");
    let started = Instant::now();
    run(
        "build the 1,000-skill host (release)",
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(folder.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &build_target),
    )?;
    let build_seconds = started.elapsed().as_secs_f64();
    let binary: PathBuf = build_target.join("release/bench-export");
    let package_arg = package.to_string_lossy().into_owned();
    let skills_folder = package.join("skills");
    let empty = || -> Result<()> {
        let _ = std::fs::remove_dir_all(&skills_folder);
        Ok(())
    };
    let nothing = || Ok(());
    let export = time(&binary, &["export", "--package", &package_arg], empty)?;
    let unchanged = time(&binary, &["export", "--package", &package_arg], nothing)?;
    let check = time(&binary, &["export", "--package", &package_arg, "--check"], nothing)?;
    let list = time(&binary, &["list"], nothing)?;
    let files = std::fs::read_dir(package.join("skills"))?.count();
    if files != SKILLS {
        bail!("export wrote {files} files, expected {SKILLS}");
    }
    println!("\nP6: {SKILLS} skills, {RUNS} runs each, whole process (start, build contracts, files)");
    println!("{:<22} {:>10} {:>10} {:>10} {:>8}", "command", "min ms", "median ms", "max ms", "bar");
    let mut rows = Vec::new();
    let rows_in = [
        ("export (all new)", &export),
        ("export (unchanged)", &unchanged),
        ("export --check", &check),
        ("list (no files)", &list),
    ];
    for (name, times) in rows_in {
        let (min, median, max) = (times[0], times[times.len() / 2], times[times.len() - 1]);
        let verdict = if name == "list (no files)" {
            "-"
        } else if median <= BAR {
            "met"
        } else {
            "MISSED"
        };
        println!("{name:<22} {:>10.1} {:>10.1} {:>10.1} {verdict:>8}", ms(min), ms(median), ms(max));
        rows.push(format!(
            "{{\"command\": \"{name}\", \"min_ms\": {:.1}, \"median_ms\": {:.1}, \"max_ms\": {:.1}}}",
            ms(min),
            ms(median),
            ms(max)
        ));
    }
    let result = format!(
        "{{\"benchmark\": \"P6\", \"skills\": {SKILLS}, \"runs\": {RUNS}, \"bar_ms\": {}, \"build_seconds\": {build_seconds:.1}, \"results\": [{}]}}\n",
        BAR.as_millis(),
        rows.join(", ")
    );
    std::fs::write(root.join("export.json"), result)?;
    println!("written {}", root.join("export.json").display());
    Ok(())
}
