//! The command line as a user meets it: exit codes, bad input, files.

mod common;
use common::*;
use std::process::Command;

#[test]
fn bad_input_gets_a_clear_error_and_exit_2() {
    rejects(&["check", "naive_del"], "did you mean 'naive-del'");
    rejects(
        &["check", "zookeepr-x"],
        "known protocols: setnx-expire, naive-del",
    );
    rejects(
        &["check", "naive-del", "--faults", "pasue"],
        "did you mean 'pause'",
    );
    rejects(
        &["check", "naive-del", "--invariants", "mutex"],
        "known invariants",
    );
    rejects(
        &["check", "naive-del", "--invariants", "mutual_exclusoin"],
        "did you mean 'mutual_exclusion'",
    );
    rejects(
        &["check", "naive-del", "--clients", "0"],
        "--clients 0 is out of range",
    );
    rejects(&["check", "naive-del", "--clients", "99"], "allowed 1..=6");
    rejects(
        &["check", "naive-del", "--ttl", "0"],
        "--ttl 0 is out of range",
    );
    rejects(
        &["check", "naive-del", "--ttl", "-3"],
        "invalid value '-3' for '--ttl",
    );
    rejects(
        &["check", "naive-del", "--budget", "pause"],
        "is not KIND=N",
    );
    rejects(
        &["check", "naive-del", "--budget", "pause=x"],
        "is not a number",
    );
    rejects(
        &["check", "naive-del", "--budget", "pause=9"],
        "out of range",
    );
    rejects(
        &[
            "check",
            "naive-del",
            "--faults",
            "pause",
            "--budget",
            "loss=1",
        ],
        "not switched on",
    );
    rejects(
        &["check", "naive-del", "--faults", "failover"],
        "does not apply to naive-del",
    );
    rejects(
        &["check", "naive-del", "--instances", "3"],
        "--instances does not apply to naive-del",
    );
    rejects(&["check", "naive-del", "--max-states", "0"], "at least 1");
    rejects(
        &["check", "naive-del", "--invariants", "token_monotonic"],
        "grants no fencing tokens",
    );
    rejects(&["frobnicate"], "unrecognized subcommand");
    rejects(
        &["check", "naive-del", "--max-faults", "0"],
        "--max-faults \"0\": expected a number of faults (at least 1) or 'all'",
    );
    rejects(&["check", "naive-del", "--max-faults", "many"], "or 'all'");
    rejects(
        &["check", "naive-del", "--threads", "0"],
        "--threads must be between 1 and 256",
    );
    rejects(
        &["check", "naive-del", "--no-recheck"],
        "--no-recheck does not apply to naive-del",
    );
    rejects(
        &["check", "lua-release", "--resource-check", "write"],
        "--resource-check does not apply to lua-release",
    );
    rejects(
        &["check", "zookeeper", "--faults", "restart"],
        "fault 'restart' does not apply to zookeeper",
    );
    rejects(
        &["check", "naive-del", "--ttl", "5000"],
        "too large for an exhaustive search",
    );
    // The resource's options fit together, or are refused naming what is allowed.
    rejects(
        &[
            "check",
            "fencing",
            "--resource-check",
            "none",
            "--fence-reads",
        ],
        "--fence-reads needs a token check",
    );
    rejects(
        &[
            "check",
            "fencing",
            "--resource-check",
            "update-where",
            "--token-store",
            "memory",
        ],
        "--resource-check service, write or read-write",
    );
    rejects(
        &[
            "check",
            "fencing",
            "--resource-check",
            "none",
            "--token-store",
            "memory",
        ],
        "--token-store memory needs a resource that keeps its highest token itself",
    );
    rejects(
        &["check", "fencing", "--faults", "pause,resource-restart"],
        "needs --token-store memory",
    );
    rejects(
        &["check", "fencing", "--stock", "3"],
        "--stock applies to --resource-op check-then-act or conditional only",
    );
    rejects(
        &["check", "fencing", "--unfenced-writers", "3"],
        "--unfenced-writers 3 is out of range: allowed 0..=2",
    );
    rejects(
        &["check", "naive-del", "--fence-reads"],
        "--fence-reads does not apply to naive-del",
    );
    rejects(
        &["check", "fencing", "--resource-check", "optimistic"],
        "invalid value 'optimistic' for '--resource-check",
    );
    rejects(
        &[
            "check",
            "naive-del",
            "--resource-op",
            "in-place",
            "--invariants",
            "no_oversell",
        ],
        "no_oversell needs check-then-act or conditional",
    );
    rejects(&["check", "all", "--format", "svg"], "add --out-dir DIR");
    rejects(
        &["check", "all", "--faults", "pasue"],
        "did you mean 'pause'",
    );
}

#[test]
fn nothing_is_written_when_the_output_path_is_bad() {
    let d = scratch("badpath");
    let target = d.join("missing-dir").join("t.json");
    rejects(
        &[
            "check",
            "naive-del",
            "--faults",
            "pause",
            "--json",
            target.to_str().unwrap(),
        ],
        "does not exist",
    );
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
}

#[test]
fn exit_codes_speak_of_the_invariants_checked() {
    // Violation found.
    let o = locklab(&[
        "check",
        "naive-del",
        "--faults",
        "pause",
        "--invariants",
        "mutual_exclusion",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("mutual_exclusion  belief  VIOLATED in 8 steps"),
        "{}",
        stdout(&o)
    );
    // Holds, exhaustively.
    let o = locklab(&[
        "check",
        "lua-release",
        "--faults",
        "pause,delay",
        "--invariants",
        "ownership",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("holds"));
    assert!(stdout(&o).contains("exhaustive"));
    // A bound hit: incomplete, never "holds".
    let o = locklab(&[
        "check",
        "lua-release",
        "--faults",
        "pause,delay",
        "--invariants",
        "ownership",
        "--max-states",
        "50",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("INCOMPLETE") && out.contains("unknown"),
        "{out}"
    );
    assert!(!out.contains("holds"), "{out}");
    let o = locklab(&[
        "check",
        "lua-release",
        "--faults",
        "pause",
        "--invariants",
        "ownership",
        "--max-depth",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
}

#[test]
fn json_report_and_trace_files_read_back_and_replay() {
    let d = scratch("json");
    let report = d.join("report.json");
    let dir = d.join("traces");
    let o = locklab(&[
        "check",
        "naive-del",
        "--faults",
        "pause",
        "--json",
        report.to_str().unwrap(),
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        files
            .iter()
            .any(|p| p.ends_with("naive-del.mutual_exclusion.json")),
        "{files:?}"
    );
    for f in files.iter().chain(std::iter::once(&report)) {
        let o = locklab(&["trace", "validate", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}: {}", f.display(), stderr(&o));
        assert!(stdout(&o).contains("replays"));
    }
    let o = locklab(&[
        "trace",
        "render",
        report.to_str().unwrap(),
        "--invariant",
        "mutual_exclusion",
        "--format",
        "table",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("<-- mutual_exclusion broken"));
    // A tampered file is refused, naming the step.
    let text = std::fs::read_to_string(dir.join("naive-del.mutual_exclusion.json")).unwrap();
    let bad = d.join("bad.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["steps"][2]["state"]["resource"]["value"] = 5.into();
    std::fs::write(&bad, v.to_string()).unwrap();
    rejects(
        &["trace", "render", bad.to_str().unwrap()],
        "does not replay through the model: step 3:",
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["schema_version"] = 7.into();
    std::fs::write(&bad, v.to_string()).unwrap();
    rejects(
        &["trace", "render", bad.to_str().unwrap()],
        "unsupported schema_version 7",
    );
    std::fs::write(&bad, "{ not json").unwrap();
    rejects(
        &["trace", "render", bad.to_str().unwrap()],
        "not a JSON document",
    );
}

#[test]
fn json_stdout_is_deterministic() {
    let run = || {
        let o = locklab(&["check", "get-del", "--faults", "delay", "--format", "json"]);
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // Wall time and memory are measurements, allowed to differ.
        v["search"]["seconds"] = 0.into();
        v["search"]["peak_memory_bytes"] = 0.into();
        v
    };
    assert_eq!(run(), run());
}

#[test]
fn list_names_everything() {
    let o = locklab(&["list"]);
    let out = stdout(&o);
    for name in [
        "naive-del",
        "lua-release",
        "pause",
        "clock-jump",
        "mutual_exclusion",
        "no_orphan_lock",
        "no_oversell",
        "no_duplicate_effect",
        "duplicate",
        "[business]",
        "resource-restart",
        "txn-read-committed",
        "check-then-act",
    ] {
        assert!(out.contains(name), "{name} missing from list");
    }
}

#[test]
fn check_all_prints_the_ladder_matrix() {
    let d = scratch("ladder");
    let o = locklab(&[
        "check",
        "all",
        "--invariants",
        "ownership",
        "--no-fault-analysis",
        "--out-dir",
        d.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    let row = |p: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{p} ")))
            .unwrap_or_else(|| panic!("no row for {p} in {out}"))
            .to_string()
    };
    // The unchecked DEL deletes another client's lock; the Lua release never does.
    assert!(row("naive-del").contains('✗'), "{out}");
    assert!(!row("lua-release").contains('✗'), "{out}");
    assert!(row("lua-release").contains("ok"), "{out}");
    assert!(d.join("naive-del.ownership.json").exists());
    assert!(!d.join("lua-release.ownership.json").exists());
    rejects(
        &["check", "all", "--instances", "3"],
        "--instances applies to some protocols only",
    );
}

#[test]
fn explore_serves_the_state_space_on_loopback() {
    use std::io::{Read, Write};
    rejects(
        &["explore", "naive-del", "--addr", "0.0.0.0:3999"],
        "only serves on loopback",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args([
            "explore",
            "naive-del",
            "--faults",
            "pause",
            "--addr",
            &format!("127.0.0.1:{port}"),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut body = String::new();
    for _ in 0..100 {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(s, "GET /.status HTTP/1.0\r\nHost: localhost\r\n\r\n");
            let _ = s.read_to_string(&mut body);
            if !body.is_empty() {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(body.contains("mutual_exclusion"), "{body}");
}

#[test]
fn a_counterexample_schedule_runs_against_the_fix() {
    let d = scratch("against");
    let trace = |proto: &str, faults: &str, inv: &str| -> String {
        let f = d.join(format!("{proto}.{inv}.json"));
        let o = locklab(&[
            "check",
            proto,
            "--faults",
            faults,
            "--invariants",
            inv,
            "--no-fault-analysis",
            "--json",
            f.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        f.to_str().unwrap().to_string()
    };
    // The compare-and-delete release blocks naive DEL's foreign delete ...
    let f = trace("naive-del", "pause", "ownership");
    let o = locklab(&["trace", "against", "lua-release", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("lua-release BLOCKS it"), "{out}");
    assert!(
        out.contains("EVAL compare-and-delete lock c1#1 -> 0"),
        "{out}"
    );
    // ... but renewal does not save a paused holder.
    let f = trace("lua-release", "pause", "mutual_exclusion");
    let o = locklab(&["trace", "against", "watchdog", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("watchdog breaks mutual_exclusion too"));
    // Fencing the reads turns the stale write away, at the step that lost it.
    let f = trace("fencing", "pause", "no_lost_update");
    let o = locklab(&[
        "trace",
        "against",
        "fencing",
        "--resource-check",
        "read-write",
        &f,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("rejects c1's write of 1: token 1 is stale"));
    // A schedule means nothing to another kind of lock service.
    let f = trace("naive-del", "pause", "mutual_exclusion");
    rejects(
        &["trace", "against", "zookeeper", &f],
        "different kinds of lock service",
    );
    rejects(
        &["trace", "against", "lua-release", "--instances", "3", &f],
        "--instances does not apply",
    );
}
