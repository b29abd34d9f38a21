//! `check all --shard I/N` and `locklab merge`: shards that merge into
//! exactly what one machine prints, and shards that do not fit refused.

mod common;
use common::*;

/// The ladder without faults, quickly: Redlock stops at the state bound
/// (incomplete), no-lock breaks, the rest hold.
const LADDER: [&str; 8] = [
    "check",
    "all",
    "--faults",
    "none",
    "--threads",
    "1",
    "--max-states",
    "5000",
];

fn ladder(extra: &[&str]) -> std::process::Output {
    let mut a: Vec<&str> = LADDER.to_vec();
    a.extend(extra);
    locklab(&a)
}

/// JSON reports (one, or a list) without what depends on the machine:
/// seconds, memory, threads.
fn verdicts(json: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(json).expect("JSON reports");
    let reports = match v.as_array_mut() {
        Some(list) => list.iter_mut().collect(),
        None => vec![&mut v],
    };
    for r in reports {
        let s = r["search"].as_object_mut().unwrap();
        for k in ["seconds", "peak_memory_bytes", "threads"] {
            s.remove(k);
        }
    }
    v
}

#[test]
fn shards_merge_to_the_single_machine_output() {
    let dir = scratch("check-shards");
    let mut files = Vec::new();
    let mut protocols = 0;
    for i in 0..3 {
        let f = dir.join(format!("shard-{i}.json"));
        let fs = f.display().to_string();
        let o = ladder(&["--shard", &format!("{i}/3"), "--json", &fs]);
        assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
        assert!(
            stdout(&o).starts_with(&format!("shard {i}/3: ")),
            "{}",
            stdout(&o)
        );
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(doc["kind"], "check-shard");
        assert_eq!(doc["shard"]["index"], i);
        protocols += doc["reports"].as_array().unwrap().len();
        files.push(fs);
    }
    let single = ladder(&[]);
    let mut m: Vec<&str> = vec!["merge"];
    m.extend(files.iter().map(|s| s.as_str()));
    let merged = locklab(&m);
    assert_eq!(
        merged.status.code(),
        single.status.code(),
        "{}",
        stderr(&merged)
    );
    assert_eq!(stdout(&merged), stdout(&single));
    // Every protocol ran in exactly one shard.
    let single_json = ladder(&["--json", "-"]);
    let all = verdicts(&single_json.stdout);
    assert_eq!(protocols, all.as_array().unwrap().len());
    assert!(protocols > 3, "the ladder has more protocols than shards");
    m.push("--json");
    assert_eq!(verdicts(&locklab(&m).stdout), all);
    m.pop();

    // Shards that do not fit are refused, naming why.
    let o = locklab(&["merge", &files[0], &files[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("shards missing: 1/3"), "{}", stderr(&o));
    let o = locklab(&["merge", &files[0], &files[1], &files[1], &files[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("shard 1/3 appears twice"),
        "{}",
        stderr(&o)
    );
    let other = dir.join("other-ttl.json").display().to_string();
    let o = ladder(&["--ttl", "20s", "--shard", "1/3", "--json", &other]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    let o = locklab(&["merge", &files[0], &other, &files[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("ran different checks"),
        "{}",
        stderr(&o)
    );
    let split = dir.join("split.json").display().to_string();
    let o = ladder(&["--shard", "1/2", "--json", &split]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    let o = locklab(&["merge", &files[0], &split, &files[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the same --shard I/N split"),
        "{}",
        stderr(&o)
    );

    // --out-dir writes every counterexample of the ladder.
    let out = dir.join("traces");
    let outs = out.display().to_string();
    m.extend(["--out-dir", &outs]);
    let o = locklab(&m);
    assert_eq!(o.status.code(), single.status.code());
    let traces: usize = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["traces"].as_array().unwrap().len())
        .sum();
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), traces);
}

#[test]
fn shard_options_that_make_no_sense_are_refused() {
    rejects(&["check", "all", "--shard", "0/2"], "add --json FILE");
    rejects(
        &["check", "all", "--shard", "2/2", "--json", "-"],
        "expected I/N with 0 <= I < N",
    );
    rejects(
        &["check", "redlock", "--shard", "0/2", "--json", "-"],
        "--shard splits `check all` into its protocols, or a --swarm",
    );
    rejects(
        &[
            "check",
            "all",
            "--shard",
            "0/2",
            "--json",
            "-",
            "--out-dir",
            "x",
        ],
        "pass --out-dir to `locklab merge`",
    );
    let dir = scratch("check-shard-mix");
    let sim = dir.join("sim.json");
    let o = locklab(&[
        "simulate",
        "lua-release",
        "--runs",
        "20",
        "--shard",
        "0/2",
        "--json",
    ]);
    std::fs::write(&sim, &o.stdout).unwrap();
    let shard = dir.join("check.json");
    let o = ladder(&[
        "--invariants",
        "mutual_exclusion",
        "--shard",
        "1/2",
        "--json",
        shard.to_str().unwrap(),
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    rejects(
        &["merge", sim.to_str().unwrap(), shard.to_str().unwrap()],
        "check shards and simulation summaries together",
    );
}

#[test]
fn swarm_shards_merge_to_the_single_machine_swarm() {
    let dir = scratch("swarm-shards");
    let base = [
        "check",
        "get-del",
        "--faults",
        "slow,pause",
        "--swarm",
        "5",
        "--seed",
        "11",
        "--max-states",
        "3000",
        "--threads",
        "1",
    ];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend(extra);
        locklab(&a)
    };
    let mut files = Vec::new();
    for i in 0..2 {
        let f = dir.join(format!("swarm-{i}.json")).display().to_string();
        let o = with(&["--shard", &format!("{i}/2"), "--json", &f]);
        assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("of the swarm, a partial result"),
            "{}",
            stdout(&o)
        );
        files.push(f);
    }
    let single = with(&["--json", "-"]);
    let merged = locklab(&["merge", &files[0], &files[1], "--json"]);
    assert_eq!(
        merged.status.code(),
        single.status.code(),
        "{}",
        stderr(&merged)
    );
    let want = verdicts(&single.stdout);
    assert_eq!(verdicts(&merged.stdout), want);
    assert!(
        want["search"]["strategy"]
            .as_str()
            .unwrap()
            .contains("swarm of 5 random-order depth-first searches (seeds 11..=15"),
        "{}",
        want["search"]["strategy"]
    );
    // Not exhaustive at this bound: no verdict may say "holds".
    assert_eq!(want["search"]["complete"], false);
    assert!(
        want["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["status"] != "holds"),
        "{want}"
    );
    // Shards of another swarm do not fit.
    let other = dir.join("other.json").display().to_string();
    let mut a: Vec<&str> = base.to_vec();
    a[7] = "12";
    a.extend(["--shard", "1/2", "--json", &other]);
    let o = locklab(&a);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    rejects(&["merge", &files[0], &other], "ran different checks (swarm");
}

#[test]
fn swarm_options_that_make_no_sense_are_refused() {
    rejects(&["check", "all", "--swarm", "4"], "name the protocol");
    rejects(
        &["check", "redlock", "--swarm", "0"],
        "--swarm must be between 1",
    );
}

#[test]
fn a_shard_is_not_compared_with_a_baseline() {
    rejects(
        &[
            "check",
            "all",
            "--shard",
            "0/2",
            "--json",
            "-",
            "--expect",
            "base.json",
        ],
        "--expect with --shard",
    );
}
