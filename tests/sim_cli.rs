//! `locklab simulate` and `locklab merge` as a user meets them: the same
//! bytes for the same seed, shards that merge into the single-machine
//! output, traces that replay, sweep files, and clear errors.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Long pauses, so that violations are found in a few hundred runs.
const STRESS: &[&str] = &["--pause-p50", "2s", "--pause-p99", "60s"];

fn sim(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["simulate", "lua-release", "--seed", "11", "--runs", "400"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(STRESS.iter().map(|s| s.to_string()));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(args: &[String]) -> Output {
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    locklab(&a)
}

#[test]
fn same_seed_same_bytes_and_nothing_on_stderr_off_a_terminal() {
    let a = run(&sim(&["--threads", "1"]));
    let b = run(&sim(&["--threads", "2"]));
    assert_eq!(a.status.code(), Some(1), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    assert!(stdout(&a).contains("95% Wilson score interval"));
    // The progress bar only draws on a terminal.
    assert_eq!(stderr(&a), "");
    let j1 = run(&sim(&["--json"]));
    let j2 = run(&sim(&["--json"]));
    assert_eq!(j1.stdout, j2.stdout);
    let v: serde_json::Value = serde_json::from_slice(&j1.stdout).unwrap();
    assert_eq!(v["kind"], "simulation");
    assert_eq!(v["points"][0]["runs"], 400);
}

#[test]
fn shards_merge_to_the_single_machine_output() {
    let dir = scratch("shards");
    let mut files = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        let o = run(&sim(&["--shard", &shard, "--json"]));
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
        let f = dir.join(format!("s{i}.json"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f.display().to_string());
    }
    let single = run(&sim(&[]));
    let mut m: Vec<&str> = vec!["merge"];
    m.extend(files.iter().map(|s| s.as_str()));
    let merged = locklab(&m);
    assert_eq!(merged.status.code(), single.status.code());
    assert_eq!(stdout(&merged), stdout(&single));
    let single_json = run(&sim(&["--json"]));
    m.push("--json");
    assert_eq!(locklab(&m).stdout, single_json.stdout);
    // A missing shard is named.
    let o = locklab(&["merge", &files[0], &files[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("shards missing: 1/3"), "{}", stderr(&o));
}

#[test]
fn the_printed_replay_command_rewrites_the_same_trace() {
    let dir = scratch("replay");
    let d = dir.display().to_string();
    let o = run(&sim(&["--out-dir", &d]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("replay: locklab simulate"))
        .expect("a replay command");
    let written: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!written.is_empty());
    let before: Vec<(PathBuf, Vec<u8>)> = written
        .iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    for p in &written {
        std::fs::remove_file(p).unwrap();
    }
    let words: Vec<&str> = line.trim_start()["replay: locklab ".len()..]
        .split(' ')
        .collect();
    let again = locklab(&words);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    // Every trace of that seed comes back byte for byte.
    let seed = words[words.iter().position(|w| *w == "--seed").unwrap() + 1];
    let mut matched = Vec::new();
    for (p, bytes) in &before {
        if p.to_string_lossy().contains(&format!(".seed{seed}.json")) {
            assert_eq!(&std::fs::read(p).unwrap(), bytes, "{}", p.display());
            matched.push(p);
        }
    }
    assert!(!matched.is_empty());
    // And the model reads it back, as it reads `check`'s traces.
    let v = locklab(&["trace", "validate", &matched[0].display().to_string()]);
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));
    assert!(stdout(&v).contains("trace replays"));
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn a_sweep_writes_a_csv_and_a_chart() {
    let dir = scratch("sweep");
    let d = dir.display().to_string();
    let o = locklab(&[
        "simulate",
        "watchdog",
        "--runs",
        "200",
        "--sweep",
        "ttl=5s..15s:5s",
        "--pause-p99",
        "20s",
        "--out-dir",
        &d,
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let csv = lines(&dir.join("watchdog.sweep-ttl.csv"));
    assert!(csv[0].starts_with("param,value,invariant"));
    // 3 points x 4 invariants that apply to watchdog.
    assert_eq!(csv.len(), 1 + 3 * 4);
    assert!(csv[1].starts_with("ttl,5s,mutual_exclusion,"));
    let svg = std::fs::read_to_string(dir.join("watchdog.sweep-ttl.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert_eq!(svg.matches("<polyline").count(), 4);
    for label in [
        "mutual_exclusion",
        "no_orphan_lock",
        "ttl (duration)",
        "log scale",
    ] {
        assert!(svg.contains(label), "{label}");
    }
    assert!(stdout(&o).contains("wrote "));
}

#[test]
fn bad_options_get_a_clear_error_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--pause-rate", "-1"], "--pause-rate -1 is negative"),
        (&["--loss", "1.5"], "--loss 1.5 is a probability"),
        (
            &["--pause-p50", "500ms", "--pause-p99", "100ms"],
            "--pause-p99 100 ms is below --pause-p50 500 ms",
        ),
        (&["--sweep", "tll=1s..2s:1s"], "did you mean 'ttl'"),
        (
            &["--sweep", "ttl=100s..10s:5s"],
            "the end is below the start",
        ),
        (
            &["--sweep", "pause-p99=1ms..15ms:10ms"],
            "below --pause-p50",
        ),
        (&["--sweep", "ttl=1..5:1"], "no unit"),
        (&["--failover-rate", "0.1"], "does not apply to lua-release"),
        (&["--instances", "3"], "it is an option of redlock"),
        (&["--acquisitions", "9"], "--acquisitions 9 is out of range"),
        (&["--ttl", "30"], "has no unit"),
        (&["--ttl", "0.0005ms"], "finer than a microsecond"),
        (&["--work", "2s..1s"], "the range is empty"),
        (&["--latency", "1ms..0.5ms"], "the range is empty"),
        (&["--network", "tcp"], "expected fifo or unordered"),
        (&["--shard", "3/3"], "expected I/N with 0 <= I < N"),
        (&["--runs", "0"], "--runs must be at least 1"),
        (&["--out-dir", "/nonexistent/dir"], "no such directory"),
        (&["--scheduler", "fifo"], "expected random or ordered"),
        (
            &["--clock-drift-ppm", "abc"],
            "expected a whole number of parts per million",
        ),
        (
            &["--clock-drift-ppm", "200000"],
            "--clock-drift-ppm 200000 is out of range",
        ),
        (
            &["--resource-check", "write"],
            "does not apply to lua-release",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["simulate", "lua-release"];
        if !extra.contains(&"--runs") {
            args.extend(["--runs", "10"]);
        }
        args.extend_from_slice(extra);
        let o = locklab(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in {err:?}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?} printed a result");
    }
    for (bad, needle) in [
        (
            ["--resource-check", "reads"],
            "expected none, write, read-write",
        ),
        (["--token-rule", ">="], "expected ge or gt"),
    ] {
        let mut args = vec!["simulate", "fencing", "--runs", "10"];
        args.extend(bad);
        let o = locklab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
    }
    let o = locklab(&["simulate", "redlok"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean 'redlock'"));
    let dir = scratch("bad");
    let f = dir.join("x.json");
    std::fs::write(&f, "{}").unwrap();
    let o = locklab(&["merge", &f.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a simulation summary"));
}

#[test]
fn fenced_reads_keep_the_resource_correct_and_write_only_fencing_does_not() {
    // Long pauses and long work make stale holders common. The counts are
    // deterministic for these seeds; the exhaustive checker proves the
    // read-write case safe for every execution.
    let lost = |check: &str| -> u64 {
        let o = locklab(&[
            "simulate",
            "fencing",
            "--runs",
            "3000",
            "--resource-check",
            check,
            "--pause-p50",
            "2s",
            "--pause-p99",
            "60s",
            "--work",
            "200ms..20s",
            "--work-p99",
            "20s",
            "--json",
        ]);
        assert!(
            matches!(o.status.code(), Some(0) | Some(1)),
            "{}",
            stderr(&o)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON summary");
        let row = v["points"][0]["invariants"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["invariant"] == "no_lost_update"))
            .unwrap_or_else(|| panic!("no no_lost_update row in {v}"));
        row["violations"].as_u64().expect("a count")
    };
    let (none, write, both) = (lost("none"), lost("write"), lost("read-write"));
    assert!(write > 0, "write-only fencing still loses updates");
    assert!(none > write, "and checking writes helps: {none} vs {write}");
    assert_eq!(both, 0, "fencing reads too loses none");
}

#[test]
fn durations_take_units_and_the_summary_shows_them() {
    let o = locklab(&[
        "simulate",
        "get-del",
        "--runs",
        "20",
        "--ttl",
        "10s",
        "--work",
        "9.99s..10s",
        "--work-p50",
        "9.995s",
        "--work-p99",
        "10s",
        "--latency",
        "0.2ms..5ms",
        "--pause-rate",
        "0",
        "--delay",
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("ttl 10 s;"), "{text}");
    assert!(text.contains("work 9.99 s..10 s"), "{text}");
    assert!(text.contains("latency 200 µs..5 ms"), "{text}");
    assert!(text.contains("delay: latencies drawn past 5 ms"), "{text}");
}

#[test]
fn simulate_takes_the_resource_options_as_check_does() {
    // Per-invariant violation counts of a JSON summary.
    let counts = |extra: &[&str]| -> std::collections::BTreeMap<String, u64> {
        let mut args = vec![
            "simulate", "no-lock", "--runs", "200", "--seed", "3", "--json",
        ];
        args.extend_from_slice(extra);
        let o = locklab(&args);
        assert!(
            matches!(o.status.code(), Some(0) | Some(1)),
            "{args:?}: {}",
            stderr(&o)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON summary");
        v["points"][0]["invariants"]
            .as_array()
            .expect("invariant rows")
            .iter()
            .map(|r| {
                (
                    r["invariant"].as_str().unwrap().to_string(),
                    r["violations"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // No lock: the client's own "if stock > 0" oversells; the resource's
    // own conditional update never does.
    let cta = counts(&["--resource-op", "check-then-act"]);
    assert!(cta["no_oversell"] > 0, "{cta:?}");
    let cond = counts(&["--resource-op", "conditional", "--stock", "1"]);
    assert_eq!(cond["no_oversell"], 0, "{cond:?}");
    // A read-modify-write loses updates; in place it does not.
    assert!(counts(&[])["no_lost_update"] > 0);
    assert_eq!(counts(&["--resource-op", "in-place"])["no_lost_update"], 0);
    // Duplicates take effect twice unless the writes are idempotent.
    let dup = ["--resource-op", "in-place", "--duplicate-rate", "10"];
    assert!(counts(&dup)["no_duplicate_effect"] > 0);
    let mut idem = dup.to_vec();
    idem.push("--idempotent");
    assert_eq!(counts(&idem)["no_duplicate_effect"], 0);
    // Reconciliation: undisturbed, the damage is flagged within a period
    // and a step; with a bound below the period, runs break it.
    let rec = counts(&["--reconcile", "10s"]);
    assert!(
        rec["no_lost_update"] > 0 && rec["detected_within"] == 0,
        "{rec:?}"
    );
    let short = counts(&["--reconcile", "10s", "--detect-within", "1s"]);
    assert!(short["detected_within"] > 0, "{short:?}");
    // Bad values are refused as check refuses them: exit 2, naming what is
    // allowed (and an option of fencing is refused for no-lock).
    let o = locklab(&[
        "simulate",
        "no-lock",
        "--runs",
        "10",
        "--token-store",
        "memory",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("does not apply to no-lock"),
        "{}",
        stderr(&o)
    );
    for (bad, needle) in [
        (
            &["--resource-op", "cas"][..],
            "expected rmw, in-place, check-then-act or conditional",
        ),
        (&["--token-store", "disk"][..], "expected durable or memory"),
        (
            &["--stock", "2"][..],
            "--stock applies to --resource-op check-then-act or conditional only",
        ),
        (&["--reconcile", "10"][..], "--reconcile"),
        (
            &["--detect-within", "1s"][..],
            "--detect-within needs a reconciler",
        ),
        (
            &["--fence-reads", "--resource-check", "none"][..],
            "--fence-reads needs a token check",
        ),
    ] {
        let mut args = vec!["simulate", "fencing", "--runs", "10"];
        args.extend_from_slice(bad);
        let o = locklab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn simulate_takes_a_client_preset_where_it_fits() {
    // python-redis-lock renews every 2/3 of the TTL, as `check` models it.
    let o = common::locklab(&[
        "simulate",
        "watchdog",
        "--client",
        "python-redis-lock",
        "--runs",
        "20",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    assert!(
        text.starts_with("locklab simulate watchdog --client python-redis-lock\n"),
        "{text}"
    );
    assert!(text.contains("ttl 30 s (renewed every 20 s)"), "{text}");
    // An explicit ratio wins over the preset's period.
    let o = common::locklab(&[
        "simulate",
        "watchdog",
        "--client",
        "python-redis-lock",
        "--renew-ratio",
        "0.25",
        "--runs",
        "20",
    ]);
    assert!(common::stdout(&o).contains("(renewed every 7.5 s)"));
    // A preset of another protocol, or no preset at all: exit 2, named.
    common::rejects(
        &["simulate", "lua-release", "--client", "redisson"],
        "the presets for lua-release are",
    );
    common::rejects(
        &["simulate", "redlock", "--client", "redsink"],
        "no such preset",
    );
}
