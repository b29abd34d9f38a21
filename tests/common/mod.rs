//! Helpers every CLI test shares: run the built binary, read its output,
//! make a scratch directory (removed when the test ends), expect a clean
//! rejection, and decide whether a test whose tools are missing fails or
//! is skipped.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
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

/// A fresh, empty directory for one test, removed (with everything in it)
/// when it is dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty directory for one test; see `Scratch`.
pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("locklab-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
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

/// An external program a test needs, and the Debian package that has it.
#[derive(Clone, Copy, Debug)]
pub struct Tool {
    /// Executable names to look for, the first found wins.
    pub names: &'static [&'static str],
    /// The Debian package to install.
    pub package: &'static str,
}

pub const REDIS: Tool = Tool {
    names: &["redis-server"],
    package: "redis-server",
};
pub const CC: Tool = Tool {
    names: &["cc"],
    package: "gcc",
};
pub const CHROMIUM: Tool = Tool {
    names: &["chromium", "chromium-browser", "google-chrome"],
    package: "chromium",
};
pub const CHROMEDRIVER: Tool = Tool {
    names: &["chromedriver"],
    package: "chromium-driver",
};
/// The Spin model checker (`locklab bench --peers`).
pub const SPIN: Tool = Tool {
    names: &["spin"],
    package: "spin",
};
pub const ETCD: Tool = Tool {
    names: &["etcd"],
    package: "etcd-server",
};
/// ZooKeeper's server jar (Debian puts it in /usr/share/java).
pub const ZOOKEEPER: Tool = Tool {
    names: &["zookeeper.jar"],
    package: "zookeeper",
};
/// The JVM ZooKeeper runs on (the zookeeper package brings one).
pub const JAVA: Tool = Tool {
    names: &["java"],
    package: "zookeeper",
};

/// Where `tool` is installed: on PATH, or in the places Debian puts it.
pub fn find(tool: Tool) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path).chain([
        PathBuf::from("/usr/bin"),
        PathBuf::from("/usr/lib/chromium"),
        PathBuf::from("/usr/share/java"),
    ]) {
        for n in tool.names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// True when the environment says this is CI (`CI=true`, as CI services set it).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// What to do when a test's tools are missing. `Ok(None)`: nothing is
/// missing, run the test. `Ok(Some(line))`: skip it and show `line`
/// (`SKIPPED: <test>: <why> (apt-get install <pkgs>)`). `Err(message)`:
/// this is CI, where a missing tool is a failure naming the packages.
pub fn decide(test: &str, missing: &[Tool], ci: bool) -> Result<Option<String>, String> {
    if missing.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = missing.iter().map(|t| t.names[0]).collect();
    let mut packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    packages.dedup();
    let why = format!(
        "{test}: {} not installed (apt-get install {})",
        names.join(" and "),
        packages.join(" ")
    );
    if ci {
        return Err(format!(
            "CI=true and a tool this test needs is missing: {why}"
        ));
    }
    Ok(Some(format!("SKIPPED: {why}")))
}

/// Whether `test` can run: every one of `tools` is installed. Otherwise it
/// fails in CI (`CI=true`) and elsewhere prints its `SKIPPED:` line straight
/// to standard error, past the test harness's capture, so that it shows in
/// `cargo test`'s output (see `decide`).
/// Use as `if !common::require("suite::name", &[REDIS]) { return; }`.
pub fn require(test: &str, tools: &[Tool]) -> bool {
    let missing: Vec<Tool> = tools
        .iter()
        .copied()
        .filter(|t| find(*t).is_none())
        .collect();
    match decide(test, &missing, in_ci()) {
        Ok(None) => true,
        Ok(Some(line)) => {
            let _ = writeln!(std::io::stderr(), "{line}");
            false
        }
        Err(message) => panic!("{message}"),
    }
}

/// Bytes of a command's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// Runs `locklab check ARGS --json DIR/NAME.json` for a replay test; the
/// search must find the violation.
pub fn check(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.json"));
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-fault-analysis", "--json", out.to_str().unwrap()]);
    let o = locklab(&all);
    assert_eq!(o.status.code(), Some(1), "{all:?}: {}", text(&o.stderr));
    out
}

/// PIDs from a replay report's cleanup line.
pub fn pids(stdout: &str) -> Vec<u32> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("cleanup:"))
        .expect("a cleanup line");
    let start = line.find("(pids ").expect("pids") + 6;
    let end = start + line[start..].find(';').expect("end of the pid list");
    line[start..end]
        .split(", ")
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Whether process `pid` still exists.
pub fn running(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Every server a replay report names is gone.
pub fn all_gone(out: &str) {
    let ps = pids(out);
    assert!(!ps.is_empty(), "{out}");
    for p in ps {
        assert!(!running(p), "server pid {p} is still running");
    }
}
