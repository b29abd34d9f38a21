//! Helpers every CLI test shares: run the built binary, read its output,
//! make a scratch directory, expect a clean rejection.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `locklab` with `args` (no colour).
pub fn locklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A fresh, empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("locklab-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Bad input: exit 2, a message naming the problem, no panic, no backtrace.
pub fn rejects(args: &[&str], needle: &str) {
    let o = locklab(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
}
