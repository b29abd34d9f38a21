//! `locklab bench --peers`: the same questions asked of locklab and of the
//! Spin model checker, side by side, on this machine.
//!
//! The Promela models are in the repository (`peers/spin/`, built into the
//! binary); Spin is Debian's `spin` package and compiles them with `gcc`.
//! Each run happens in a child process: `locklab check ... --format json`
//! for locklab, `spin -a` + `gcc` + `pan` for Spin, in a fresh temporary
//! directory that is removed afterwards. Nothing else is written.
//!
//! The questions cannot be identical: the peer models keep whole ticks,
//! urgency and one message in flight per client, where locklab keeps dense
//! time (latencies, step times and work within bounds, zones of clock
//! values), TCP connections and its fault kinds as documented in
//! docs/model.md. So the state counts differ; what is compared is the time
//! and memory each tool needs to answer the same question about the same
//! protocol, clients, instances, faults and invariant.

use crate::util::Failure;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The Promela models, as files of the build directory.
const MODELS: [(&str, &str); 4] = [
    ("common.h", include_str!("../peers/spin/common.h")),
    ("naive-del.pml", include_str!("../peers/spin/naive-del.pml")),
    ("redlock.pml", include_str!("../peers/spin/redlock.pml")),
    ("fencing.pml", include_str!("../peers/spin/fencing.pml")),
];

/// How Spin answers a question.
struct SpinRun {
    model: &'static str,
    /// Breadth-first (`-DBFS`, a shortest counterexample) or depth-first.
    bfs: bool,
    /// Model constants (`spin -DNAME=VALUE`); `INV=0` asserts nothing.
    defines: &'static [&'static str],
    /// `pan -w`: log2 of the hash table's slots.
    hashw: u32,
}

/// One question, asked of both tools.
pub struct PeerCase {
    pub id: &'static str,
    pub question: &'static str,
    /// `locklab check` arguments.
    locklab: Vec<String>,
    spin: SpinRun,
}

/// `check` arguments, from words.
fn args(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// The Redlock questions' `check` arguments: every fault kind the peer
/// has, all at once, requests one instance after the other as the peer's.
fn redlock(instances: u8, invariant: &str) -> Vec<String> {
    args(&format!(
        "redlock --requests sequential --instances {instances} \
         --faults pause,clock-jump,restart,loss --max-faults all --invariants {invariant}"
    ))
}

/// The fencing questions' `check` arguments: fenced reads and writes.
fn fencing(rest: &str) -> Vec<String> {
    args(&format!(
        "fencing --resource-check read-write {rest} --invariants no_lost_update"
    ))
}

fn spin(model: &'static str, bfs: bool, defines: &'static [&'static str], hashw: u32) -> SpinRun {
    SpinRun {
        model,
        bfs,
        defines,
        hashw,
    }
}

/// The questions: the table of issue 19 (Redlock on 5 and 3 instances with
/// every fault kind of the peer at once, fencing with fenced reads), and a
/// small naive-del row.
pub fn cases() -> Vec<PeerCase> {
    let case = |id, question, locklab, spin| PeerCase {
        id,
        question,
        locklab,
        spin,
    };
    vec![
        case(
            "naive-del-me",
            "naive-del, 2 clients, pause+slow, shortest mutual_exclusion",
            args("naive-del --faults pause,slow --max-faults all --invariants mutual_exclusion"),
            spin("naive-del", true, &["INV=1"], 18),
        ),
        case(
            "redlock5-all",
            "Redlock, 5 instances, 2 clients, pause+clock-jump+restart+loss, whole space",
            redlock(5, "none"),
            spin("redlock", false, &["INV=0", "N=5"], 25),
        ),
        case(
            "redlock5-me",
            "same, shortest mutual_exclusion",
            redlock(5, "mutual_exclusion"),
            spin("redlock", true, &["INV=1", "N=5"], 25),
        ),
        case(
            "redlock5-lu",
            "same, shortest no_lost_update",
            redlock(5, "no_lost_update"),
            spin("redlock", true, &["INV=4", "N=5"], 25),
        ),
        case(
            "redlock3-all",
            "Redlock, 3 instances, same faults, whole space",
            redlock(3, "none"),
            spin("redlock", false, &["INV=0", "N=3"], 22),
        ),
        case(
            "redlock3-lu",
            "Redlock, 3 instances, shortest no_lost_update",
            redlock(3, "no_lost_update"),
            spin("redlock", true, &["INV=4", "N=3"], 22),
        ),
        case(
            "fencing-3",
            "fencing, read-write check, 3 clients, pause 1, no_lost_update",
            fencing("--clients 3 --faults pause"),
            spin("fencing", false, &["INV=4", "CHECK=2", "NC=3"], 20),
        ),
        case(
            "fencing-2x2",
            "fencing, read-write, 2 clients x 2 acquisitions, pause 2 + slow 1",
            fencing("--acquisitions 2 --faults pause,slow --budget pause=2 --max-faults all"),
            spin(
                "fencing",
                false,
                &["INV=4", "CHECK=2", "ACQ=2", "PAUSE_B=2", "SLOW_B=1"],
                22,
            ),
        ),
        case(
            "fencing-4x2",
            "fencing, read-write, 4 clients x 2 acquisitions, pause 2",
            fencing(
                "--clients 4 --acquisitions 2 --faults pause --budget pause=2 --max-faults all",
            ),
            spin(
                "fencing",
                false,
                &["INV=4", "CHECK=2", "NC=4", "ACQ=2", "PAUSE_B=2"],
                25,
            ),
        ),
    ]
}

/// What one tool answered.
struct Answer {
    /// "holds", "explored", "violated: N steps", "incomplete: ...".
    result: String,
    states: u64,
    seconds: f64,
    /// The memory the tool reports for the run, in bytes.
    memory: Option<u64>,
}

/// Runs the questions `rows` selects (all when empty), each tool stopped
/// after `limit_s` seconds, locklab also at `max_states` states.
pub fn run(
    exe: &Path,
    rows: &[String],
    threads: Option<usize>,
    limit_s: u64,
    max_states: Option<u64>,
) -> Result<i32, Failure> {
    let all = cases();
    for r in rows {
        if !all.iter().any(|c| c.id == r) {
            let ids: Vec<&str> = all.iter().map(|c| c.id).collect();
            return Err(Failure::input(format!(
                "--row {r}: no such question; the questions are {}",
                ids.join(", ")
            )));
        }
    }
    for tool in ["spin", "gcc", "timeout"] {
        if which(tool).is_none() {
            return Err(Failure::input(format!(
                "locklab bench --peers runs Spin, which needs `{tool}` on PATH: install it with \
                 `apt-get install spin gcc coreutils` (Debian's spin package is Spin 6.5)"
            )));
        }
    }
    let chosen: Vec<&PeerCase> = all
        .iter()
        .filter(|c| rows.is_empty() || rows.iter().any(|r| r == c.id))
        .collect();
    outln!(
        "{:<13} {:<8} {:<26} {:>11} {:>9} {:>11} {:>8} {:>9}",
        "question",
        "tool",
        "result",
        "states",
        "seconds",
        "states/s",
        "B/state",
        "time/Spin"
    )?;
    let mut incomplete = false;
    for case in chosen {
        let ours = locklab_answer(exe, case, threads, limit_s, max_states)?;
        let theirs = spin_answer(case, limit_s)?;
        let stopped = |a: &Answer| a.result.starts_with("incomplete");
        incomplete |= stopped(&ours) || stopped(&theirs);
        // A ratio only when both answered: a stopped search's time is its
        // bound's.
        let ratio = if stopped(&ours) || stopped(&theirs) {
            "-".to_string()
        } else {
            format!("{:.2}x", ours.seconds / theirs.seconds.max(1e-3))
        };
        row(case.id, "locklab", &ours, &ratio)?;
        row("", "spin", &theirs, "")?;
        outln!("{:<13} {}", "", case.question)?;
    }
    outln!()?;
    outln!(
        "locklab: `locklab check ... --no-fault-analysis --threads 1` (or --threads N), dense time; Spin 6.5: the peer"
    )?;
    outln!(
        "models of peers/spin (whole ticks), `gcc -O2 -DSAFETY -DNOREDUCE`, pan -wN, BFS for shortest counterexamples,"
    )?;
    outln!(
        "DFS for whole spaces. seconds = the search's own time (locklab's report, pan's elapsed time); B/state = peak"
    )?;
    outln!(
        "resident memory / states (locklab) or pan's total memory / states. The models differ (docs/bench.md): compare"
    )?;
    outln!("the time and memory each needs for the same question, not the state counts.")?;
    Ok(if incomplete {
        crate::util::EXIT_INCOMPLETE
    } else {
        0
    })
}

fn row(id: &str, tool: &str, a: &Answer, ratio: &str) -> Result<(), Failure> {
    outln!(
        "{:<13} {:<8} {:<26} {:>11} {:>9.3} {:>11} {:>8} {:>9}",
        id,
        tool,
        a.result,
        a.states,
        a.seconds,
        if a.seconds >= 1e-3 {
            format!("{:.0}", a.states as f64 / a.seconds)
        } else {
            "-".to_string()
        },
        a.memory.map_or("-".to_string(), |m| format!(
            "{:.0}",
            m as f64 / a.states.max(1) as f64
        )),
        ratio
    )
}

fn locklab_answer(
    exe: &Path,
    case: &PeerCase,
    threads: Option<usize>,
    limit_s: u64,
    max_states: Option<u64>,
) -> Result<Answer, Failure> {
    let mut extra = vec![
        "--threads".to_string(),
        threads.unwrap_or(1).to_string(),
        "--time-limit".to_string(),
        format!("{limit_s}s"),
    ];
    if let Some(n) = max_states {
        extra.extend(["--max-states".to_string(), n.to_string()]);
    }
    let report = crate::bench::check_report(exe, case.id, &case.locklab, &extra)?;
    let s = &report["search"];
    let verdict = report["verdicts"].as_array().and_then(|v| v.first());
    let result = match verdict {
        Some(v) if v["status"] == "violated" => {
            format!("violated: {} steps", v["steps"].as_u64().unwrap_or(0))
        }
        _ if s["complete"] == false => format!(
            "incomplete: {}",
            s["bound_hit"].as_str().unwrap_or("stopped")
        ),
        Some(v) => v["status"].as_str().unwrap_or("?").to_string(),
        None => "explored".to_string(),
    };
    Ok(Answer {
        result,
        states: s["states"].as_u64().unwrap_or(0),
        seconds: s["seconds"].as_f64().unwrap_or(0.0),
        memory: s["peak_memory_bytes"].as_u64(),
    })
}

/// A fresh directory of this process under the temporary directory.
fn scratch(id: &str) -> Result<PathBuf, Failure> {
    let dir = std::env::temp_dir().join(format!("locklab-spin-{}-{id}", std::process::id()));
    std::fs::create_dir(&dir)
        .map_err(|e| Failure::input(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

fn spin_answer(case: &PeerCase, limit_s: u64) -> Result<Answer, Failure> {
    let dir = scratch(case.id)?;
    let answer = spin_in(&dir, case, limit_s);
    // The directory and everything in it were made here.
    let _ = std::fs::remove_dir_all(&dir);
    answer
}

fn spin_in(dir: &Path, case: &PeerCase, limit_s: u64) -> Result<Answer, Failure> {
    let io = |what: &str, e: std::io::Error| Failure::input(format!("{}: {what}: {e}", case.id));
    for (name, text) in MODELS {
        std::fs::write(dir.join(name), text).map_err(|e| io("writing the model", e))?;
    }
    let spin = &case.spin;
    let model = format!("{}.pml", spin.model);
    let defines: Vec<String> = spin.defines.iter().map(|d| format!("-D{d}")).collect();
    let step = |cmd: &mut Command, what: &str| -> Result<(), Failure> {
        let o = cmd.current_dir(dir).output().map_err(|e| io(what, e))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(Failure {
                code: 70,
                message: format!(
                    "{}: {what} failed: {}{}",
                    case.id,
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ),
            })
        }
    };
    step(
        Command::new("spin").arg("-a").args(&defines).arg(&model),
        "spin -a",
    )?;
    let mut gcc = Command::new("gcc");
    gcc.args(["-O2", "-w", "-DSAFETY", "-DNOREDUCE", "-DMEMLIM=16384"]);
    if spin.bfs {
        gcc.arg("-DBFS");
    }
    step(gcc.args(["-o", "pan", "pan.c"]), "gcc")?;
    let mut pan = Command::new("timeout");
    pan.args(["-s", "INT", &limit_s.to_string(), "./pan"])
        .arg(format!("-w{}", spin.hashw));
    if !spin.bfs {
        pan.arg("-m100000");
    }
    let started = Instant::now();
    let o = pan.current_dir(dir).output().map_err(|e| io("pan", e))?;
    let wall = started.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let asserts = !spin.defines.contains(&"INV=0");
    Ok(parse_pan(
        &text,
        asserts,
        o.status.code() == Some(124),
        wall,
    ))
}

/// Reads pan's summary.
fn parse_pan(text: &str, asserts: bool, timed_out: bool, wall: f64) -> Answer {
    let number_before = |marker: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.contains(marker))?;
        line.split_whitespace().next()?.parse::<f64>().ok()
    };
    let states = number_before("states, stored").unwrap_or(0.0) as u64;
    let seconds = text
        .lines()
        .find_map(|l| {
            let rest = l.split("elapsed time ").nth(1)?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .unwrap_or(wall);
    let memory = number_before("total actual memory usage").map(|mb| (mb * 1_048_576.0) as u64);
    let result = if let Some(l) = text.lines().find(|l| l.contains("assertion violated")) {
        // "... (at depth D)": the violating step is step D + 1.
        let depth = l
            .split("at depth ")
            .nth(1)
            .and_then(|r| r.trim_end_matches(')').trim().parse::<u64>().ok());
        match depth {
            Some(d) => format!("violated: {} steps", d + 1),
            None => "violated".to_string(),
        }
    } else if timed_out {
        "incomplete: time limit".to_string()
    } else if text.contains("max search depth too small") {
        "incomplete: depth".to_string()
    } else if text.to_lowercase().contains("out of memory") || text.contains("memlim") {
        "incomplete: memory".to_string()
    } else if text.contains("errors: 0") {
        if asserts { "holds" } else { "explored" }.to_string()
    } else {
        "incomplete: pan stopped".to_string()
    };
    Answer {
        result,
        states,
        seconds,
        memory,
    }
}

/// The path of an executable named `tool` on PATH.
fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}
