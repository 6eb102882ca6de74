//! The demo host binary (`examples/demo_host`), which `cargo test` builds next to the tests.

#![allow(dead_code)]

use std::path::PathBuf;

pub(crate) fn demo_host() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let debug = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>");
    let path = debug.join("examples").join(format!("demo_host{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "{} is missing: cargo build -p skill-host --example demo_host", path.display());
    path
}
