//! The lock description file and `locklab audit` (docs/audit.md): every
//! example in examples/ is audited here, and the verdicts, fixes and
//! checklist answers asserted are the ones the search computes.

mod common;
use common::{locklab, scratch, stderr, stdout};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn example(name: &str) -> String {
    format!("{}/examples/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `locklab` in `dir`.
fn locklab_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs")
}

/// `audit FILE --json -`: the exit code and the report.
fn audit(file: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["audit", file, "--json", "-"];
    args.extend(extra);
    let o = locklab(&args);
    let code = o.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1 || code == 3,
        "audit {file}: exit {code}: {}",
        stderr(&o)
    );
    let v: Value = serde_json::from_str(&stdout(&o)).expect("the report is JSON");
    assert_eq!(v["kind"], "audit-report");
    assert_eq!(v["schema_version"], 1);
    (code, v)
}

fn verdict<'a>(a: &'a Value, inv: &str) -> &'a Value {
    a["check"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["invariant"] == inv)
        .unwrap_or_else(|| panic!("no verdict for {inv}"))
}

fn fixes<'a>(a: &'a Value, inv: &str) -> Vec<&'a Value> {
    a["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["invariant"] == inv)
        .collect()
}

fn checklist(a: &Value, n: usize) -> (&str, &str) {
    let c = &a["checklist"][n - 1];
    (
        c["status"].as_str().unwrap(),
        c["evidence"].as_str().unwrap(),
    )
}

#[test]
fn redisson_on_sentinel_pause_breaks_failover_does_not_because_of_wait_and_fenced_reads_fix_it() {
    let (code, a) = audit(&example("redisson-sentinel"), &[]);
    assert_eq!(code, 1);
    assert!(a["check"]["search"]["complete"].as_bool().unwrap());
    // A pause breaks mutual exclusion ...
    let me = verdict(&a, "mutual_exclusion");
    assert_eq!(me["status"], "violated");
    assert_eq!(me["minimal_fault_sets"], serde_json::json!([["pause"]]));
    // ... whatever the lock service does: the consensus services were
    // tried, and their own checks break it too.
    let tried = fixes(&a, "mutual_exclusion");
    assert!(!tried.is_empty());
    for f in &tried {
        assert_eq!(f["check"], "violated", "{f}");
    }
    for service in ["zookeeper", "etcd"] {
        assert!(
            tried
                .iter()
                .any(|f| f["change"] == format!("protocol = \"{service}\"")),
            "{service} not tried"
        );
    }
    // Failover alone breaks nothing, because Redisson WAITs; without the
    // wait it does.
    let (status, evidence) = checklist(&a, 6);
    assert_eq!(status, "pass");
    assert!(
        evidence.contains("without it (--wait-replicas 0) mutual_exclusion breaks in"),
        "{evidence}"
    );
    // The rate under the file's GC-pause distribution.
    let sim = &a["simulation"];
    assert!(sim["command"].as_str().unwrap().contains("--pause-p99 3s"));
    assert_eq!(sim["acquisitions_per_day"], 500000);
    let rate = sim["rates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["invariant"] == "mutual_exclusion")
        .unwrap();
    assert!(rate["acquisitions"].as_u64().unwrap() > 1000);
    assert!(rate["ci_high"].as_f64().unwrap() > 0.0);
    assert!(rate["per_day"][1].as_f64().unwrap() > 0.0);
    // Fencing with fenced reads keeps the resource safe: it blocks the
    // counterexample and its own check holds.
    let lost = fixes(&a, "no_lost_update");
    let fenced = lost
        .iter()
        .find(|f| {
            f["change"]
                .as_str()
                .unwrap()
                .contains("resource-check = \"read-write\"")
                && f["check"] == "holds"
        })
        .expect("a fenced-reads fix that holds");
    assert_eq!(fenced["against"], "blocks");
}

#[test]
fn a_renewal_period_longer_than_the_ttl_breaks_under_slow_and_renewing_every_third_fixes_it() {
    let (code, a) = audit(&example("watchdog-long-renewal"), &[]);
    assert_eq!(code, 1);
    let me = verdict(&a, "mutual_exclusion");
    assert_eq!(me["status"], "violated");
    assert_eq!(me["minimal_fault_sets"], serde_json::json!([["slow"]]));
    let fix = fixes(&a, "mutual_exclusion")
        .into_iter()
        .find(|f| {
            f["fix"]
                .as_str()
                .unwrap()
                .starts_with("renew at most every TTL/3")
        })
        .expect("the TTL/3 fix is tried");
    assert_eq!(fix["against"], "blocks");
    assert_eq!(fix["check"], "holds");
    assert_eq!(fix["change"], "renew-every = \"10s\"");
    // The proposed fix, as the text shows it.
    let o = locklab(&["audit", &example("watchdog-long-renewal"), "--no-fixes"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("No fix was tried (--no-fixes)."));
}

#[test]
fn python_redis_lock_needs_both_a_shorter_period_and_retried_renewals() {
    let (code, a) = audit(&example("python-redis-lock"), &["--runs", "200"]);
    assert_eq!(code, 1);
    let me = verdict(&a, "mutual_exclusion");
    assert_eq!(me["status"], "violated");
    assert_eq!(
        me["minimal_fault_sets"],
        serde_json::json!([["slow", "loss"]])
    );
    let check_of = |change: &str| {
        fixes(&a, "mutual_exclusion")
            .into_iter()
            .find(|f| f["change"] == change)
            .unwrap_or_else(|| panic!("{change} not tried"))["check"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(check_of("renew-every = \"10s\""), "violated");
    assert_eq!(check_of("renewal-on-error = \"retry\""), "violated");
    assert_eq!(
        check_of("renew-every = \"10s\", renewal-on-error = \"retry\""),
        "holds"
    );
    assert_eq!(
        checklist(&a, 5).0,
        "fail",
        "the renewal thread stops silently"
    );
}

#[test]
fn etcd_guarding_postgres_loses_an_update_until_reads_are_fenced() {
    let (code, a) = audit(&example("etcd-postgres"), &[]);
    assert_eq!(code, 1);
    assert_eq!(verdict(&a, "no_lost_update")["status"], "violated");
    assert_eq!(verdict(&a, "token_monotonic")["status"], "holds");
    let fix = fixes(&a, "no_lost_update")
        .into_iter()
        .find(|f| f["change"] == "resource-check = \"read-write\"")
        .expect("fencing reads is tried");
    assert_eq!(
        (fix["against"].as_str(), fix["check"].as_str()),
        (Some("blocks"), Some("holds"))
    );
    assert_eq!(checklist(&a, 6).0, "pass");
    assert_eq!(checklist(&a, 7).0, "fail");
}

#[test]
fn a_partial_fix_says_which_fault_it_cures() {
    // The starter: one Redis, Lua release; a pause, a slow critical
    // section or a restart each break mutual exclusion. A watchdog cures
    // the slow one only.
    let (code, a) = audit(&example("starter"), &["--runs", "100"]);
    assert_eq!(code, 1);
    let watchdog = fixes(&a, "mutual_exclusion")
        .into_iter()
        .find(|f| f["change"] == "protocol = \"watchdog\"")
        .expect("the watchdog is tried");
    assert_eq!(watchdog["check"], "violated");
    let by: Vec<(String, String)> = watchdog["by_fault_set"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["faults"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join("+"),
                s["check"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(by.contains(&("slow".into(), "holds".into())), "{by:?}");
    assert!(by.contains(&("pause".into(), "violated".into())), "{by:?}");
    let o = locklab(&["audit", &example("starter"), "--runs", "100"]);
    assert!(
        stdout(&o).contains("Partly: a watchdog that renews (§5) keeps it under slow alone"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn redsync_on_five_instances_is_unknown_never_safe() {
    let (code, a) = audit(&example("redsync-5"), &["--runs", "100"]);
    assert_eq!(code, 3, "an incomplete search is no verdict");
    assert!(!a["check"]["search"]["complete"].as_bool().unwrap());
    for v in a["check"]["verdicts"].as_array().unwrap() {
        assert!(v["status"] == "unknown" || v["status"] == "n/a", "{v}");
    }
    for n in [2, 3, 6, 7] {
        assert_ne!(
            checklist(&a, n).0,
            "pass",
            "item {n} passes on an incomplete search"
        );
    }
}

#[test]
fn the_same_description_gives_the_same_bytes_on_any_number_of_threads() {
    let f = example("watchdog-long-renewal");
    let one = locklab(&["audit", &f, "--json", "-", "--threads", "1"]);
    let two = locklab(&["audit", &f, "--json", "-", "--threads", "2"]);
    assert_eq!(one.status.code(), Some(1));
    assert!(!one.stdout.is_empty());
    assert_eq!(one.stdout, two.stdout);
}

#[test]
fn out_writes_the_markdown_the_html_the_json_and_the_traces() {
    let d = scratch("audit-out");
    let out = d.join("report");
    let o = locklab(&[
        "audit",
        &example("watchdog-long-renewal"),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("![mutual_exclusion counterexample](watchdog.mutual_exclusion.svg)"));
    // The checklist's evidence links the counterexample it rests on.
    assert!(
        md.contains("no_lost_update violated (9 steps) ([no_lost_update trace](watchdog.no_lost_update.json), [picture](watchdog.no_lost_update.svg))"),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("renew at most every TTL/3"));
    assert!(out.join("watchdog.mutual_exclusion.svg").is_file());
    // The trace is one `trace` commands read.
    let t = out.join("watchdog.mutual_exclusion.json");
    let v = locklab(&["trace", "validate", t.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("audit.json")).unwrap()).unwrap();
    assert_eq!(json["kind"], "audit-report");
}

#[test]
fn expect_passes_on_the_same_verdicts_and_names_each_cell_that_changed() {
    let d = scratch("audit-expect");
    let file = d.join("lock.toml");
    let text = std::fs::read_to_string(example("watchdog-long-renewal")).unwrap();
    std::fs::write(&file, &text).unwrap();
    let base = d.join("baseline.json");
    let o = locklab(&[
        "audit",
        file.to_str().unwrap(),
        "--json",
        base.to_str().unwrap(),
        "--no-fixes",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let same = locklab(&[
        "audit",
        file.to_str().unwrap(),
        "--expect",
        base.to_str().unwrap(),
        "--no-fixes",
    ]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    std::fs::write(
        &file,
        text.replace("renew-every = \"40s\"", "renew-every = \"10s\""),
    )
    .unwrap();
    let changed = locklab(&[
        "audit",
        file.to_str().unwrap(),
        "--expect",
        base.to_str().unwrap(),
        "--no-fixes",
    ]);
    assert_eq!(changed.status.code(), Some(1));
    let err = stderr(&changed);
    assert!(
        err.contains("check mutual_exclusion: was violated, now holds"),
        "{err}"
    );
}

#[test]
fn check_expect_names_the_protocol_and_invariant_that_changed() {
    let d = scratch("check-expect");
    let base = d.join("base.json");
    let args = [
        "check",
        "watchdog",
        "--faults",
        "slow",
        "--no-fault-analysis",
    ];
    let mut first = args.to_vec();
    first.extend(["--renew-every", "40s", "--json", base.to_str().unwrap()]);
    assert_eq!(locklab(&first).status.code(), Some(1));
    let mut same = args.to_vec();
    same.extend(["--renew-every", "40s", "--expect", base.to_str().unwrap()]);
    assert_eq!(locklab(&same).status.code(), Some(0));
    let mut fixed = args.to_vec();
    fixed.extend(["--renew-every", "10s", "--expect", base.to_str().unwrap()]);
    let o = locklab(&fixed);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("watchdog mutual_exclusion: was violated (7 steps), now holds"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn simulate_fail_above_fails_when_the_interval_cannot_rule_the_rate_out() {
    let args = [
        "simulate",
        "lua-release",
        "--runs",
        "100",
        "--faults-not-an-option",
    ];
    // (a bad option is still a clean error)
    assert_eq!(locklab(&args).status.code(), Some(2));
    let ok = locklab(&[
        "simulate",
        "lua-release",
        "--runs",
        "100",
        "--fail-above",
        "0.5",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let fail = locklab(&[
        "simulate",
        "lua-release",
        "--runs",
        "100",
        "--fail-above",
        "1e-9",
    ]);
    assert_eq!(fail.status.code(), Some(1));
    assert!(
        stderr(&fail).contains("mutual_exclusion: up to"),
        "{}",
        stderr(&fail)
    );
    let bad = locklab(&["simulate", "lua-release", "--fail-above", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn init_writes_a_starter_that_audits_and_never_replaces_a_file() {
    let d = scratch("init");
    let o = locklab_in(&d, &["init"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let starter = std::fs::read_to_string(d.join("locklab.toml")).unwrap();
    assert_eq!(
        starter,
        std::fs::read_to_string(example("starter")).unwrap()
    );
    // Read from the current directory by audit and check alike.
    let a = locklab_in(&d, &["audit", "--no-fixes", "--runs", "100"]);
    assert_eq!(a.status.code(), Some(1), "{}", stderr(&a));
    assert!(stdout(&a).contains("lua-release"));
    let c = locklab_in(&d, &["check", "--no-fault-analysis"]);
    assert_eq!(c.status.code(), Some(1));
    assert!(stderr(&c).contains("reading the lock description ./locklab.toml"));
    // A flag overrides the file; --no-config ignores it.
    let none = locklab_in(&d, &["check", "--faults", "none"]);
    assert_eq!(none.status.code(), Some(0), "{}", stdout(&none));
    let ignored = locklab_in(&d, &["check", "--no-config"]);
    assert_eq!(
        ignored.status.code(),
        Some(2),
        "no protocol without the file"
    );
    // init again: refused, the file untouched.
    std::fs::write(d.join("locklab.toml"), "# mine\n").unwrap();
    let again = locklab_in(&d, &["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("never replaces"));
    assert_eq!(
        std::fs::read_to_string(d.join("locklab.toml")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn a_bad_description_is_refused_with_its_file_line_and_key() {
    let d = scratch("bad-description");
    let cases = [
        (
            "[lock]\nprotocol = \"watchdog\"\nttll = \"30s\"\n",
            "lock.toml:3: unknown key `ttll` in [lock]; did you mean `ttl`?",
        ),
        (
            "[lock]\nprotocol = \"watchdog\"\n[explore]\nclients = \"two\"\n",
            "lock.toml:4: [explore] clients: expected a whole number, found string",
        ),
        (
            "[lock]\nprotocol = \"lua-release\"\nclient = \"redisson\"\n",
            "lock.toml:3 ([lock] client): --client redisson is no client of lua-release",
        ),
        (
            "[lock]\nprotocol = \"watchdog\"\nttl = \"30\"\n",
            "lock.toml:3 ([lock] ttl): --ttl 30: a duration needs a unit",
        ),
        (
            "[lock]\nprotocol = \"watchdog\"\n[faults]\npossible = [\"gc\"]\n",
            "lock.toml:4 ([faults] possible): --faults: unknown fault kind 'gc'",
        ),
        (
            "[lock]\nprotocol = \"wachdog\"\n",
            "lock.toml:2 ([lock] protocol): unknown protocol 'wachdog'",
        ),
    ];
    let file = d.join("lock.toml");
    for (text, needle) in cases {
        std::fs::write(&file, text).unwrap();
        for cmd in [
            vec!["audit", file.to_str().unwrap()],
            vec!["check", "--config", file.to_str().unwrap()],
        ] {
            let o = locklab(&cmd);
            assert_eq!(o.status.code(), Some(2), "{cmd:?} on {text:?}");
            let err = stderr(&o);
            assert!(err.contains(needle), "{cmd:?} on {text:?}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    let missing = locklab(&["audit", d.join("nope.toml").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("locklab init"));
}

#[test]
fn bad_audit_and_expect_arguments_are_refused_before_any_work() {
    let d = scratch("audit-bad-args");
    let file = example("watchdog-long-renewal");
    // --out: a file, or a directory holding someone else's files.
    let plain = d.join("plain");
    std::fs::write(&plain, "mine").unwrap();
    common::rejects(
        &["audit", &file, "--out", plain.to_str().unwrap()],
        "not a directory",
    );
    let theirs = d.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("report.md"), "my notes").unwrap();
    common::rejects(
        &["audit", &file, "--out", theirs.to_str().unwrap()],
        "holds files an audit did not write",
    );
    assert_eq!(
        std::fs::read_to_string(theirs.join("report.md")).unwrap(),
        "my notes"
    );
    // An earlier audit's directory is written again.
    let ours = d.join("ours");
    let args = [
        "audit",
        &file,
        "--no-fixes",
        "--runs",
        "20",
        "--out",
        ours.to_str().unwrap(),
    ];
    assert_eq!(locklab(&args).status.code(), Some(1));
    assert_eq!(locklab(&args).status.code(), Some(1));
    // --runs 0, and baselines that are not reports.
    common::rejects(
        &["audit", &file, "--runs", "0"],
        "--runs must be at least 1",
    );
    common::rejects(
        &["audit", &file, "--expect", plain.to_str().unwrap()],
        "not an audit report",
    );
    common::rejects(
        &["check", "watchdog", "--expect", plain.to_str().unwrap()],
        "not a check report",
    );
    common::rejects(&["docs", "--clients", "--force"], "cannot be used with");
}
