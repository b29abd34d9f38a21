//! `locklab bench`: the search's speed and memory on fixed configurations.
//!
//! Each configuration runs in a child process (`locklab check ... --format
//! json`) so that its peak memory is its own; the child reports the search
//! time, the states it stored and its peak resident memory.

use crate::util::Failure;
use clap::Args;
use std::process::Command;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Also run the long searches: replicated and fencing-redis with every fault kind
    /// (about 20 s each in a release build on one core)
    #[arg(long)]
    pub heavy: bool,
    /// Worker threads for each search [default: one per core]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Measure the simulator instead: acquisitions and steps per second on one thread
    #[arg(long)]
    pub sim: bool,
    /// With --sim: runs per protocol (1 to 100,000,000) [default: 20000]
    #[arg(long, value_name = "N")]
    pub sim_runs: Option<u64>,
    /// Ask the same questions of the Spin model checker (Debian package `spin`,
    /// with gcc) and print both tools' states, time, states/s and bytes per state
    #[arg(long)]
    pub peers: bool,
    /// With --peers: only this question (repeatable; see docs/bench.md for the list)
    #[arg(long, value_name = "ID")]
    pub row: Vec<String>,
    /// With --peers: stop each tool's run after this many seconds [default: 300]
    #[arg(long, value_name = "SECONDS")]
    pub peer_time_limit: Option<u64>,
    /// With --peers: locklab's --max-states for each question [default: check's, 1500000]
    #[arg(long, value_name = "N")]
    pub max_states: Option<u64>,
}

struct Case {
    name: &'static str,
    args: Vec<&'static str>,
}

/// Configurations the exact-time search finishes (measured in
/// docs/model.md); Redlock with five instances and faults does
/// not yet (many concurrent clocks), so it is benchmarked fault-free on
/// three instances.
fn cases(heavy: bool) -> Vec<Case> {
    let mut v = vec![
        Case {
            name: "redlock, 3 instances, no faults",
            args: vec!["redlock", "--instances", "3", "--faults", "none"],
        },
        Case {
            name: "naive-del, full check",
            args: vec!["naive-del"],
        },
        Case {
            name: "get-del, full check",
            args: vec!["get-del"],
        },
        Case {
            name: "lua-release, full check",
            args: vec!["lua-release"],
        },
        Case {
            name: "watchdog, full check",
            args: vec!["watchdog"],
        },
    ];
    if heavy {
        v.push(Case {
            name: "replicated, full check",
            args: vec!["replicated"],
        });
        v.push(Case {
            name: "fencing-redis, full check",
            args: vec!["fencing-redis"],
        });
    }
    v
}

/// Runs `locklab check ARGS EXTRA --format json --no-fault-analysis` in a
/// child process (so that its peak memory is its own) and returns its
/// report; `name` names the configuration in an error.
pub(crate) fn check_report(
    exe: &std::path::Path,
    name: &str,
    args: &[impl AsRef<std::ffi::OsStr>],
    extra: &[String],
) -> Result<serde_json::Value, Failure> {
    let out = Command::new(exe)
        .arg("check")
        .args(args)
        .args(extra)
        .args([
            "--format",
            "json",
            "--no-fault-analysis",
            "--color",
            "never",
        ])
        .output()
        .map_err(|e| Failure::input(format!("cannot run {}: {e}", exe.display())))?;
    serde_json::from_slice(&out.stdout).map_err(|e| Failure {
        code: 70,
        message: format!(
            "{name}: the check printed no report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

pub fn run(args: &BenchArgs) -> Result<i32, Failure> {
    if !args.peers
        && (!args.row.is_empty() || args.peer_time_limit.is_some() || args.max_states.is_some())
    {
        return Err(Failure::input(
            "--row, --peer-time-limit and --max-states apply to the peer benchmark only: add --peers",
        ));
    }
    if args.sim && args.peers {
        return Err(Failure::input(
            "--sim and --peers are two benchmarks: pick one",
        ));
    }
    match (args.sim, args.sim_runs) {
        (false, Some(_)) => {
            return Err(Failure::input(
                "--sim-runs applies to the simulator benchmark only: add --sim",
            ));
        }
        (true, Some(n)) if n == 0 || n > 100_000_000 => {
            return Err(Failure::input(format!(
                "--sim-runs {n}: must be between 1 and 100000000"
            )));
        }
        (true, n) => return crate::sim_cmd::bench(n.unwrap_or(20_000)),
        (false, None) => {}
    }
    let exe = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot find the locklab executable: {e}")))?;
    if args.threads == Some(0) {
        return Err(Failure::input("--threads must be at least 1"));
    }
    if args.peers {
        let limit = args.peer_time_limit.unwrap_or(300);
        if limit == 0 {
            return Err(Failure::input(
                "--peer-time-limit must be at least 1 second",
            ));
        }
        if args.max_states == Some(0) {
            return Err(Failure::input("--max-states must be at least 1"));
        }
        return crate::bench_peers::run(&exe, &args.row, args.threads, limit, args.max_states);
    }
    outln!(
        "{:<46} {:>12} {:>9} {:>12} {:>10} {:>11} {:>8}",
        "configuration",
        "states",
        "seconds",
        "states/s",
        "peak MB",
        "bytes/state",
        "threads"
    )?;
    for case in cases(args.heavy) {
        let mut extra = Vec::new();
        if let Some(t) = args.threads {
            extra = vec!["--threads".to_string(), t.to_string()];
        }
        let report = check_report(&exe, case.name, &case.args, &extra)?;
        let s = &report["search"];
        let states = s["states"].as_u64().unwrap_or(0);
        let secs = s["seconds"].as_f64().unwrap_or(0.0);
        let peak = s["peak_memory_bytes"].as_u64();
        outln!(
            "{:<46} {:>12} {:>9.2} {:>12.0} {:>10} {:>11} {:>8}",
            case.name,
            states,
            secs,
            states as f64 / secs.max(1e-9),
            peak.map_or("-".to_string(), |p| format!("{:.0}", p as f64 / 1e6)),
            peak.map_or("-".to_string(), |p| format!(
                "{:.0}",
                p as f64 / states.max(1) as f64
            )),
            s["threads"].as_u64().unwrap_or(0),
        )?;
    }
    outln!()?;
    outln!(
        "states = distinct symmetry-reduced states stored; bytes/state = peak resident memory / states"
    )?;
    outln!(
        "(the whole process: the fingerprint set, the parent links and the widest two levels of states)."
    )?;
    Ok(0)
}
