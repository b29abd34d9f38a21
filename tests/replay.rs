//! `locklab replay` against real redis-server processes: the five
//! counterexamples the issue names must conform step by step and really
//! happen; bad environments get exit 2; nothing is ever left running.
//!
//! Every trace is produced here by the search (`locklab check --json`),
//! never written by hand. These tests need `redis-server` (and `cc` for the
//! clock shim); `.ci/run` installs both. They run one at a time: replays
//! keep a real-time schedule, and the machine has two cores.

mod common;

use common::{CC, REDIS, check, locklab, pids, require, running, scratch, text};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Replays the report at `file` and requires: exit 0, every step
/// conforming, the violation reproduced, every server stopped.
fn replays(file: &Path, invariant: &str) -> String {
    let o = locklab(&["replay", file.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", text(&o.stderr));
    assert!(out.contains("conformance: CONFORMS."), "{out}");
    assert!(
        out.contains(&format!("violation:   {invariant} HAPPENED on real Redis")),
        "{out}"
    );
    assert!(!out.contains('✗'), "a step disagreed:\n{out}");
    let ps = pids(&out);
    assert!(!ps.is_empty());
    for p in ps {
        assert!(!running(p), "redis-server pid {p} is still running");
    }
    out
}

#[test]
fn naive_del_pause_happens_on_real_redis() {
    let _g = serial();
    if !require("replay::naive_del_pause_happens_on_real_redis", &[REDIS]) {
        return;
    }
    let d = scratch("naive");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, "mutual_exclusion");
    // c1 got OK, was held while its key expired for real, and c2 got OK.
    assert!(out.contains("c1 (held by the driver, i.e. paused) believes it holds the lock as c1#1: real Redis granted it on 1 server(s), 1 needed (redis OK)"), "{out}");
    assert!(out.contains("c2 believes it holds the lock as c2#1: real Redis granted it on 1 server(s), 1 needed (redis OK)"), "{out}");
    // The key expired for real: Redis deleted it on c2's access.
    assert!(
        out.contains("redis: lock c1#1 has expired: deleted on access; redis runs c2's SET lock c2#1 NX PX 30000 -> OK"),
        "{out}"
    );
    assert!(out.contains("conformance: CONFORMS"), "{out}");
}

#[test]
fn get_del_window_deletes_the_other_clients_lock_for_real() {
    let _g = serial();
    if !require(
        "replay::get_del_window_deletes_the_other_clients_lock_for_real",
        &[REDIS],
    ) {
        return;
    }
    let d = scratch("getdel");
    let f = check(
        &d,
        "getdel",
        &["get-del", "--faults", "delay", "--invariants", "ownership"],
    );
    let out = replays(&f, "ownership");
    assert!(
        out.contains("just before c1's DEL lock, real redis held \"c2#1\" (GET); the command returned 1: c1 deleted c2's lock for real"),
        "{out}"
    );
}

#[test]
fn lua_release_pause_happens_on_real_redis() {
    let _g = serial();
    if !require("replay::lua_release_pause_happens_on_real_redis", &[REDIS]) {
        return;
    }
    let d = scratch("lua");
    let f = check(
        &d,
        "lua",
        &[
            "lua-release",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, "mutual_exclusion");
    assert!(
        out.contains("as c1#1: real Redis granted it on 1 server(s)"),
        "{out}"
    );
    assert!(
        out.contains("as c2#1: real Redis granted it on 1 server(s)"),
        "{out}"
    );
}

#[test]
fn replicated_failover_really_loses_the_unreplicated_lock() {
    let _g = serial();
    if !require(
        "replay::replicated_failover_really_loses_the_unreplicated_lock",
        &[REDIS],
    ) {
        return;
    }
    let d = scratch("repl");
    let f = check(
        &d,
        "repl",
        &[
            "replicated",
            "--faults",
            "failover",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, "mutual_exclusion");
    assert!(
        out.contains("(replica of redis1, promoted by the failover)"),
        "{out}"
    );
    assert!(
        out.contains("CLIENT KILL TYPE replica on redis1 -> 1"),
        "{out}"
    );
    assert!(
        out.contains("REPLICAOF NO ONE on redis2: promoted"),
        "{out}"
    );
    // The promoted replica really lacks c1's acknowledged lock.
    assert!(out.contains("state: redis2: model - | real nil ✓"), "{out}");
    assert!(
        out.contains("as c1#1: real Redis granted it on 1 server(s), 1 needed (redis1 OK)"),
        "{out}"
    );
    assert!(
        out.contains("as c2#1: real Redis granted it on 1 server(s), 1 needed (redis2 OK)"),
        "{out}"
    );
}

#[test]
fn a_failover_keeps_the_replicated_writes_and_loses_only_the_rest() {
    let _g = serial();
    if !require(
        "replay::a_failover_keeps_the_replicated_writes_and_loses_only_the_rest",
        &[REDIS],
    ) {
        return;
    }
    let d = scratch("orphan");
    // c1's SET reaches the replica, its release (DEL) does not: after the
    // failover the promoted replica still holds c1's lock.
    let f = check(
        &d,
        "orphan",
        &[
            "replicated",
            "--no-cancel",
            "--faults",
            "failover",
            "--invariants",
            "no_orphan_lock",
        ],
    );
    let out = replays(&f, "no_orphan_lock");
    assert!(out.contains("redis2: applies SET lock c1#1 PXAT"), "{out}");
    // The replica had applied the write before the failover: nothing is
    // lost, and the lock c1 is done with stays on the promoted replica.
    assert!(
        out.contains("redis2 is promoted (0 unreplicated writes lost)"),
        "{out}"
    );
    assert!(out.contains("conformance: CONFORMS"), "{out}");
    assert!(
        out.contains("state: redis2: model c1#1 ") && out.contains(" left | real \"c1#1\" pttl"),
        "{out}"
    );
}

#[test]
fn redlock_clock_jump_breaks_mutual_exclusion_on_three_real_servers() {
    let _g = serial();
    if !require(
        "replay::redlock_clock_jump_breaks_mutual_exclusion_on_three_real_servers",
        &[REDIS, CC],
    ) {
        return;
    }
    let d = scratch("redlock");
    let f = check(
        &d,
        "redlock",
        &[
            "redlock",
            // Three instances show the failure that five do (a 15-step
            // counterexample after about 30 s of search), in far less.
            "--instances",
            "3",
            "--faults",
            "clock-jump",
            // A jump well past the TTL: the jumped key is clearly expired
            // (at exactly the TTL its expiry would sit on the jump).
            "--jump",
            "40s",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, "mutual_exclusion");
    let servers = out.lines().filter(|l| l.contains(" 127.0.0.1:")).count();
    assert_eq!(servers, 3, "{out}");
    assert!(out.contains("(under the clock-shift shim)"), "{out}");
    // The model's 40 s jump at the default 20x speed.
    assert!(
        out.contains("wall clock now runs +2000 ms off (clock-shift file rewritten)"),
        "{out}"
    );
    assert!(
        out.contains("as c1#1: real Redis granted it on 2 server(s), 2 needed"),
        "{out}"
    );
    assert!(
        out.contains("as c2#1: real Redis granted it on 2 server(s), 2 needed"),
        "{out}"
    );
}

#[test]
fn fencing_redis_failover_hands_out_the_same_token_twice_for_real() {
    let _g = serial();
    if !require(
        "replay::fencing_redis_failover_hands_out_the_same_token_twice_for_real",
        &[REDIS],
    ) {
        return;
    }
    let d = scratch("fenced");
    let f = check(
        &d,
        "fenced",
        &[
            "fencing-redis",
            "--faults",
            "failover",
            "--invariants",
            "token_monotonic",
        ],
    );
    let out = replays(&f, "token_monotonic");
    assert!(
        out.contains("really granted c2 token 1 after token 1 had already been granted"),
        "{out}"
    );
}

#[test]
fn a_redis_that_behaves_differently_is_a_mismatch() {
    let _g = serial();
    if !require(
        "replay::a_redis_that_behaves_differently_is_a_mismatch",
        &[REDIS],
    ) {
        return;
    }
    let d = scratch("mismatch");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    // A real redis-server that refuses every write (maxmemory 1 byte).
    let wrapper = d.join("oom-redis-server");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nexec redis-server \"$@\" --maxmemory 1 --maxmemory-policy noeviction\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let o = locklab(&[
        "replay",
        f.to_str().unwrap(),
        "--redis-server",
        wrapper.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("conformance: MISMATCH at step 2 (redis runs c1's SET lock c1#1 NX PX 30000 -> OK): the model predicted OK, real Redis replied (error) OOM"),
        "{out}"
    );
    assert!(out.contains("mutual_exclusion was NOT reproduced"), "{out}");
    for p in pids(&out) {
        assert!(!running(p), "pid {p} still running");
    }
}

#[test]
fn a_missing_redis_server_is_a_clear_error() {
    let d = scratch("missing");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let o = locklab(&[
        "replay",
        f.to_str().unwrap(),
        "--redis-server",
        "/nonexistent/redis-server",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/redis-server not found: locklab replay needs Redis (Debian: apt-get install redis-server)"), "{err}");
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let d = scratch("port");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = locklab(&["replay", f.to_str().unwrap(), "--base-port", &port]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "port {port} on 127.0.0.1 is in use (redis would listen there); pick another --base-port"
        )),
        "{err}"
    );
}

#[test]
fn a_server_that_never_comes_up_is_stopped_and_reported() {
    let _g = serial();
    let d = scratch("slow");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    // Something that starts but never listens.
    let fake = d.join("redis-server");
    std::fs::write(&fake, "#!/bin/sh\nexec sleep 30\n").unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let o = locklab(&[
        "replay",
        f.to_str().unwrap(),
        "--redis-server",
        fake.to_str().unwrap(),
        "--start-timeout-ms",
        "300",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did not answer PING within 300 ms"), "{err}");
    let pid: u32 = err[err.find("pid ").unwrap() + 4..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!running(pid), "the fake server {pid} is still running");
}

/// Children of `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == pid {
            out.push(p);
        }
    }
    out
}

#[test]
fn ctrl_c_stops_every_server() {
    let _g = serial();
    if !require("replay::ctrl_c_stops_every_server", &[REDIS, CC]) {
        return;
    }
    let d = scratch("sigint");
    let f = check(
        &d,
        "redlock",
        &[
            "redlock",
            "--instances",
            "3",
            "--latency",
            "1ms",
            "--faults",
            "pause",
            "--invariants",
            "within_validity",
        ],
    );
    // In real time (a 30 s TTL): the replay is still running when the
    // signal comes.
    let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["replay", f.to_str().unwrap(), "--speed", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let servers = loop {
        let kids: Vec<u32> = children(pid)
            .into_iter()
            .filter(|k| {
                std::fs::read_to_string(format!("/proc/{k}/comm"))
                    .is_ok_and(|c| c.trim() == "redis-server")
            })
            .collect();
        if kids.len() == 3 {
            break kids;
        }
        assert!(Instant::now() < deadline, "the servers never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted; every server it started is stopped"),
        "{err}"
    );
    for s in servers {
        assert!(!running(s), "redis-server {s} survived Ctrl-C");
    }
}

#[test]
fn bad_replay_input_is_rejected() {
    let d = scratch("bad");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let cases: [(&[&str], &str); 4] = [
        (
            &["--speed", "0"],
            "model time must run 1 to 10000 times as fast as real time",
        ),
        (
            &["--speed", "10001"],
            "model time must run 1 to 10000 times as fast as real time",
        ),
        (
            &["--invariant", "ownership"],
            "no trace for invariant 'ownership'; it has: mutual_exclusion",
        ),
        (
            &["--invariant", "nonsense"],
            "no trace for invariant 'nonsense'",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["replay", f.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = locklab(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A trace whose recorded states were tampered with does not replay
    // through the model, so it never reaches a server.
    let json = std::fs::read_to_string(&f).unwrap();
    let tampered = d.join("tampered.json");
    std::fs::write(&tampered, json.replacen("\"value\": 0", "\"value\": 7", 1)).unwrap();
    let o = locklab(&["replay", tampered.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("does not replay through the model"), "{err}");
}

#[test]
fn two_replays_racing_for_one_base_port_never_share_a_server() {
    let _g = serial();
    if !require(
        "replay::two_replays_racing_for_one_base_port_never_share_a_server",
        &[REDIS],
    ) {
        return;
    }
    let d = scratch("race");
    let f = check(
        &d,
        "naive",
        &[
            "naive-del",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    for _ in 0..3 {
        let base = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        }
        .to_string();
        let run = || {
            Command::new(env!("CARGO_BIN_EXE_locklab"))
                .args(["replay", f.to_str().unwrap(), "--base-port", &base])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (run(), run());
        let mut outs: Vec<Output> = [a, b]
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        outs.sort_by_key(|o| o.status.code());
        // One replays on its own server; the other refuses (exit 2): no
        // false MISMATCH from a server it did not start.
        let (won, lost) = (&outs[0], &outs[1]);
        assert_eq!(won.status.code(), Some(0), "{}", text(&won.stdout));
        assert_eq!(lost.status.code(), Some(2), "{}", text(&lost.stdout));
        let err = text(&lost.stderr);
        // However the two raced, the loser says the port is taken: before
        // starting its server, or when its server could not bind it.
        assert!(
            err.contains("is in use")
                || err.contains("another process listens there")
                || err.contains("Address already in use"),
            "{err}"
        );
        for p in pids(&text(&won.stdout)) {
            assert!(!running(p));
        }
    }
}
