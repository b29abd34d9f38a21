//! Helpers shared by the replay tests.
#![allow(dead_code)]

use std::io::Write;

/// Whether `bin` is a file in some directory of the PATH.
pub fn on_path(bin: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(bin).exists()))
}

/// Whether `test` can run, `ok` saying whether its tool (Debian package
/// `pkg`) is there. A missing tool fails the test under `CI=true`, and
/// otherwise prints `SKIPPED: ...` straight to standard error, past the
/// test harness's capture, so that it shows (and `.ci/run` counts it).
pub fn have(test: &str, ok: bool, pkg: &str) -> bool {
    if ok {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: {pkg} is not installed: CI must run it (apt-get install {pkg})"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}: {pkg} is not installed (apt-get install {pkg})"
    );
    false
}

/// Whether `redis-server` is there for `test` (see [`have`]).
pub fn have_redis(test: &str) -> bool {
    have(test, on_path("redis-server"), "redis-server")
}
