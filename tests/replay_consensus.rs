//! `locklab replay` of the consensus protocols on real servers: `zookeeper`
//! on a real ZooKeeper, `etcd` and `fencing` on a real etcd. Every trace
//! comes from the search (`locklab check --json`), never written by hand;
//! a fault-free acquisition is the checker's trace up to its first
//! acquisition, before any fault (`replay --until`).
//!
//! Needs `etcd` (Debian: etcd-server) and ZooKeeper (Debian: zookeeper,
//! with Java), which `.ci/run` installs. A missing server fails the test
//! when `CI=true`, and otherwise prints a visible `SKIPPED:` line to stderr.
//! Every test checks that every server PID it saw is gone afterwards.
//!
//! etcd counts lease TTLs in whole seconds; etcd replays run model time 5x
//! as fast as real time, and the etcd searches use `--ttl 10s` (a 2 s real
//! lease) to keep them short.
//!
//! The checker prints only the shortest counterexample, and no shortest one
//! waits on a predecessor: a pause alone is shorter. The traces that go
//! through a watch (and etcd 3.4's missing re-check) are found here by the
//! same breadth-first search over the model's own transitions, with a goal
//! on the path, and built and validated by the model's trace builder.

mod common;

use common::{ETCD, JAVA, ZOOKEEPER, all_gone, check, locklab, require, running, scratch, text};
use locklab_models::engine::zone::ZState;
use locklab_models::time::SEC;
use locklab_models::world::{Body, Phase, Reply, World};
use locklab_models::{Action, Budgets, FaultKind, Invariant, LockModel, Params, protocols, trace};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Replays `file` (with `extra` options) and requires exit 0, every step
/// conforming and every server gone.
fn replays(file: &Path, extra: &[&str]) -> String {
    let mut args = vec!["replay", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = locklab(&args);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", text(&o.stderr));
    assert!(out.contains("conformance: CONFORMS."), "{out}");
    assert!(!out.contains('✗'), "a step disagreed:\n{out}");
    all_gone(&out);
    out
}

/// The step (1-based) at which a client first believes it holds the lock,
/// in the checker's trace; no fault comes before it.
fn first_acquisition(file: &Path) -> usize {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let steps = json["traces"][0]["steps"].as_array().expect("steps");
    for s in steps {
        let label = s["label"].as_str().unwrap_or("");
        let action = s["action"]["action"].as_str().unwrap_or("");
        assert!(
            ["step", "deliver", "watchdog"].contains(&action),
            "a fault ({action}) before the first acquisition: {label}"
        );
        if label.contains("now believes it holds the lock") {
            return s["index"].as_u64().unwrap() as usize;
        }
    }
    panic!("no acquisition in the trace")
}

#[test]
fn zookeeper_pause_expires_the_holders_session_on_real_zookeeper() {
    let t = "zookeeper_pause_expires_the_holders_session_on_real_zookeeper";
    let _g = serial();
    if !require(t, &[ZOOKEEPER, JAVA]) {
        return;
    }
    let d = scratch("zk");
    let f = check(
        &d,
        "zk",
        &[
            "zookeeper",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, &[]);
    assert!(
        out.contains("violation:   mutual_exclusion HAPPENED on real ZooKeeper"),
        "{out}"
    );
    // c1's node is really there, then really deleted by the session expiry
    // while the driver holds c1; c2 then really gets the lowest node.
    assert!(
        out.contains("state: /locklab: model c1 #1 | real c1 #1 (_c_"),
        "{out}"
    );
    assert!(out.contains("state: /locklab: model - | real - ✓"), "{out}");
    assert!(
        out.contains("c1 (held by the driver, i.e. paused) believes it holds the lock: it entered on the real answer \"#1, nothing before it\" (a grant)"),
        "{out}"
    );
    assert!(
        out.contains("c2 believes it holds the lock: it entered on the real answer \"#2, nothing before it\" (a grant)"),
        "{out}"
    );
    // The 30 s session at ZooKeeper's default 10x speed.
    assert!(out.contains("granted 3000 ms"), "{out}");
}

#[test]
fn etcd_pause_expires_the_holders_lease_on_real_etcd() {
    let t = "etcd_pause_expires_the_holders_lease_on_real_etcd";
    let _g = serial();
    if !require(t, &[ETCD]) {
        return;
    }
    let d = scratch("etcd");
    let f = check(
        &d,
        "etcd",
        &[
            "etcd",
            "--ttl",
            "10s",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, &[]);
    assert!(
        out.contains("violation:   mutual_exclusion HAPPENED on real etcd"),
        "{out}"
    );
    // The 10 s lease at etcd's default 5x speed.
    assert!(out.contains("LeaseGrant TTL 2 s for c1"), "{out}");
    // Real revisions follow the model's: the empty store is at 1.
    assert!(
        out.contains("state: etcd keys: model c1 #1 | real c1 #1 (create_revision 2)"),
        "{out}"
    );
    assert!(
        out.contains("model gone | real gone (TimeToLive: -1) ✓"),
        "{out}"
    );
    assert!(
        out.contains("state: etcd keys: model c2 #3 | real c2 #3 (create_revision 4)"),
        "{out}"
    );
    assert!(
        out.contains("c2 believes it holds the lock: it entered on the real answer \"#3, nothing before it\" (a grant)"),
        "{out}"
    );
}

#[test]
fn etcd_one_lost_keepalive_does_not_let_the_lease_expire() {
    // With the keepalive every TTL/3 (as etcd's clientv3 sends it, every
    // TTL/3), one lost keepalive leaves two more before the lease runs out:
    // a slow holder keeps its lease. (The tick model, with a 2-tick TTL,
    // said a single loss was enough; that was an artifact of its 5-second
    // steps.)
    let t = "etcd_one_lost_keepalive_does_not_let_the_lease_expire";
    let _g = serial();
    if !require(t, &[ETCD]) {
        return;
    }
    let o = locklab(&[
        "check",
        "etcd",
        "--ttl",
        "10s",
        "--faults",
        "slow,loss",
        "--invariants",
        "mutual_exclusion",
        "--no-fault-analysis",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("mutual_exclusion  belief  holds  exhaustive"),
        "{out}"
    );
}

/// A divergence, kept as a test: the model renews a ZooKeeper session only
/// by its heartbeat, real ZooKeeper by every request on the session. In this
/// counterexample c1's create and getChildren at t=2 keep its real session
/// alive past t=3, where the model expires it; c2 then really queues behind
/// c1's node instead of taking the lock.
#[test]
fn zookeeper_renews_a_session_on_every_request_as_the_model_now_does() {
    // Replaying found that a real ZooKeeper renews a session on every
    // request, not only on pings: a client whose ping was lost and whose
    // next ping was delayed still kept its session by asking for the
    // children. The model now does the same, and loss and delay alone no
    // longer cost a ZooKeeper client its lock.
    let t = "zookeeper_renews_a_session_on_every_request_as_the_model_now_does";
    let _g = serial();
    if !require(t, &[ZOOKEEPER, JAVA]) {
        return;
    }
    // Both faults at once: exhaustive since heartbeats are folded once no
    // fault can disturb them (docs/model.md, "Folded heartbeats"); before,
    // this search stopped at its default bound.
    let o = locklab(&[
        "check",
        "zookeeper",
        "--ttl",
        "10s",
        "--faults",
        "loss,delay",
        "--invariants",
        "mutual_exclusion",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("mutual_exclusion  belief  holds  exhaustive"),
        "{out}"
    );
    // (The tick model found an etcd counterpart under loss and delay; with
    // exact time and keepalives every TTL/3 etcd holds there too: exhaustive
    // under slow, loss and delay, at most two, 649,742 states.)
}

#[test]
fn fencing_on_etcd_hands_the_next_holder_a_higher_token() {
    let t = "fencing_on_etcd_hands_the_next_holder_a_higher_token";
    let _g = serial();
    if !require(t, &[ETCD]) {
        return;
    }
    let d = scratch("fencing");
    let f = check(
        &d,
        "fencing",
        &[
            "fencing",
            "--ttl",
            "10s",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    let out = replays(&f, &[]);
    assert!(
        out.contains("it entered on the real answer \"token 1\" (a grant)"),
        "{out}"
    );
    assert!(
        out.contains("it entered on the real answer \"token 3\" (a grant)"),
        "{out}"
    );
}

#[test]
fn a_fault_free_acquisition_conforms_on_each_server() {
    let t = "a_fault_free_acquisition_conforms_on_each_server";
    let _g = serial();
    for (proto, system, ttl) in [
        ("zookeeper", &[ZOOKEEPER, JAVA][..], "30s"),
        ("etcd", &[ETCD][..], "10s"),
    ] {
        if !require(t, system) {
            continue;
        }
        let d = scratch(&format!("free-{proto}"));
        let f = check(
            &d,
            proto,
            &[
                proto,
                "--ttl",
                ttl,
                "--faults",
                "pause",
                "--invariants",
                "mutual_exclusion",
            ],
        );
        let n = first_acquisition(&f).to_string();
        let out = replays(&f, &["--until", &n]);
        assert!(
            out.contains("mutual_exclusion not judged (a prefix)"),
            "{out}"
        );
        assert!(!out.contains("PAUSED"), "{out}");
        assert!(out.contains("c1 #1"), "{out}");
    }
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
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == pid {
            out.push(p);
        }
    }
    out
}

/// Starts a long replay of `file` and waits until its server process
/// (`comm`) is up; returns the replay and the server's PID.
fn start_long_replay(file: &Path, comm: &str, extra: &[&str]) -> (std::process::Child, u32) {
    try_start_long_replay(file, comm, extra).unwrap_or_else(|e| panic!("{e}"))
}

/// [`start_long_replay`], or why its server did not start: the replay
/// ended first (with what it printed), or 60 s went by (a loaded machine
/// can take a while to start a JVM or etcd).
fn try_start_long_replay(
    file: &Path,
    comm: &str,
    extra: &[&str],
) -> Result<(std::process::Child, u32), String> {
    // In real time: the replay is still running when the signal comes.
    let mut args = vec!["replay", file.to_str().unwrap(), "--speed", "1"];
    args.extend_from_slice(extra);
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = children(pid).into_iter().find(|k| {
            std::fs::read_to_string(format!("/proc/{k}/comm")).is_ok_and(|c| c.trim() == comm)
        });
        if let Some(s) = found {
            return Ok((child, s));
        }
        if let Ok(Some(status)) = child.try_wait() {
            let o = child.wait_with_output().unwrap();
            return Err(format!(
                "the replay ended ({status}) before its {comm} server started: {}",
                text(&o.stderr)
            ));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            return Err(format!("the {comm} server never started"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) {
        assert!(Instant::now() < deadline, "pid {pid} is still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_and_kill_9_stop_etcd_and_zookeeper() {
    let t = "ctrl_c_and_kill_9_stop_etcd_and_zookeeper";
    let _g = serial();
    let d = scratch("signals");
    if require(t, &[ETCD]) {
        let f = check(
            &d,
            "etcd",
            &[
                "etcd",
                "--ttl",
                "10s",
                "--faults",
                "pause",
                "--invariants",
                "mutual_exclusion",
            ],
        );
        let (child, server) = start_long_replay(&f, "etcd", &[]);
        std::thread::sleep(Duration::from_millis(300));
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(130), "{err}");
        assert!(
            err.contains("interrupted; every server it started is stopped"),
            "{err}"
        );
        assert!(!running(server), "etcd {server} survived Ctrl-C");
    }
    if require(t, &[ZOOKEEPER, JAVA]) {
        let f = check(
            &d,
            "zk",
            &[
                "zookeeper",
                "--faults",
                "pause",
                "--invariants",
                "mutual_exclusion",
            ],
        );
        // kill -9 of locklab: the JVM dies with it (PR_SET_PDEATHSIG), and
        // the next replay removes the scratch directory it left.
        let (mut child, server) = start_long_replay(&f, "java", &[]);
        let replay_pid = child.id();
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap();
        child.wait().unwrap();
        wait_gone(server);
        let left: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("locklab-replay-{replay_pid}-"))
            })
            .collect();
        assert!(!left.is_empty(), "a SIGKILLed replay leaves its directory");
        for p in &left {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        let n = first_acquisition(&f).to_string();
        replays(&f, &["--until", &n]);
        for p in &left {
            assert!(!p.exists(), "{} was not cleaned up", p.display());
        }
    }
}

#[test]
fn two_replays_on_one_base_port_never_share_a_server() {
    let t = "two_replays_on_one_base_port_never_share_a_server";
    let _g = serial();
    if !require(t, &[ETCD]) {
        return;
    }
    let d = scratch("ports");
    let f = check(
        &d,
        "etcd",
        &[
            "etcd",
            "--ttl",
            "10s",
            "--faults",
            "pause",
            "--invariants",
            "mutual_exclusion",
        ],
    );
    // A free port from the kernel; the replay also takes the ports above
    // it, and one of those may be taken by something else: then the first
    // run itself refuses, and another base is tried.
    let mut tries = Vec::new();
    let (base, (first, server)) = loop {
        let base = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        }
        .to_string();
        match try_start_long_replay(&f, "etcd", &["--base-port", &base]) {
            Ok(started) => break (base, started),
            Err(e) if tries.len() < 2 && e.contains("is in use") => tries.push(e),
            Err(e) => panic!("{e} (earlier tries: {tries:?})"),
        }
    };
    // Once the first run's etcd listens, a second run on the same ports
    // must refuse, not attach.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", base.parse::<u16>().unwrap())).is_err() {
        assert!(
            Instant::now() < deadline,
            "the first run's etcd never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = locklab(&["replay", f.to_str().unwrap(), "--base-port", &base]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}\n{}", text(&o.stdout));
    assert!(
        err.contains(&format!("port {base} on 127.0.0.1 is in use")),
        "{err}"
    );
    assert!(running(server), "the first run's etcd was disturbed");
    Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    let o = first.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(!running(server));
}

#[test]
fn a_missing_consensus_server_is_a_clear_error() {
    let d = scratch("missing");
    for (proto, flag, needle) in [
        (
            "etcd",
            "--etcd",
            "/nonexistent/etcd not found: locklab replay of this protocol needs etcd (Debian: apt-get install etcd-server)",
        ),
        (
            "zookeeper",
            "--zookeeper-jar",
            "/nonexistent/zookeeper.jar not found: locklab replay of the zookeeper protocol needs ZooKeeper (Debian: apt-get install zookeeper)",
        ),
    ] {
        let f = check(
            &d,
            proto,
            &[
                proto,
                "--ttl",
                "10s",
                "--faults",
                "pause",
                "--invariants",
                "mutual_exclusion",
            ],
        );
        let path = if proto == "etcd" {
            "/nonexistent/etcd"
        } else {
            "/nonexistent/zookeeper.jar"
        };
        let o = locklab(&["replay", f.to_str().unwrap(), flag, path]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
    }
    // Something that starts but never answers: exit 2, and it is stopped.
    let fake = d.join("etcd");
    std::fs::write(&fake, "#!/bin/sh\nexec sleep 30\n").unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let f = d.join("etcd.json");
    let o = locklab(&[
        "replay",
        f.to_str().unwrap(),
        "--etcd",
        fake.to_str().unwrap(),
        "--start-timeout-ms",
        "300",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did not answer within 300 ms"), "{err}");
    let pid: u32 = err[err.find(", pid ").unwrap() + 6..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!running(pid), "the fake server {pid} is still running");
    // A speed of 0 would never get anywhere.
    let f = d.join("etcd.json");
    let o = locklab(&["replay", f.to_str().unwrap(), "--speed", "0"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("model time must run 1 to 10000 times as fast as real time"),
        "{err}"
    );
}

/// A model with only the given faults (budget 1 each) and a short TTL.
fn model(protocol: &str, faults: &[FaultKind], f: impl FnOnce(&mut Params)) -> LockModel {
    let proto = protocols::by_name(protocol).expect("known protocol");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    for k in faults {
        p.faults.set(*k, 1);
    }
    p.max_faults = None;
    f(&mut p);
    LockModel::new(proto, p).expect("valid parameters")
}

/// Shortest path, breadth first over the model's transitions, to a state
/// that breaks `inv` along a path on which `mark` held for some step.
fn shortest_with(
    m: &LockModel,
    inv: Invariant,
    mark: impl Fn(&World, &Action, &World) -> bool,
) -> Vec<(Action, Vec<bool>)> {
    // Breadth-first over the zone engine's symbolic states: (state, mark
    // seen on the path, parent and the step from it with its answers).
    type Node = (ZState, bool, Option<(usize, Action, Vec<bool>)>);
    let mut nodes: Vec<Node> = vec![(m.zinit(), false, None)];
    // Zones of one (world, mark) included in a stored one add nothing.
    let mut seen: HashMap<(World, bool), Vec<locklab_models::engine::dbm::Dbm>> = HashMap::new();
    seen.insert(
        (nodes[0].0.world.clone(), false),
        vec![nodes[0].0.zone.clone()],
    );
    let mut queue = VecDeque::from([0usize]);
    let mut succs = Vec::new();
    while let Some(i) = queue.pop_front() {
        let (s, flag) = (nodes[i].0.clone(), nodes[i].1);
        if !inv.holds_in(m, &s) {
            if flag {
                let mut path = Vec::new();
                let mut at = i;
                while let Some((p, a, answers)) = nodes[at].2.clone() {
                    path.push((a, answers));
                    at = p;
                }
                path.reverse();
                return path;
            }
            continue;
        }
        m.successors(&s, &mut succs);
        for n in succs.drain(..) {
            let f = flag || mark(&s.world, &n.action, &n.next.world);
            let zones = seen.entry((n.next.world.clone(), f)).or_default();
            if !zones.iter().any(|z| z.includes(&n.next.zone)) {
                zones.push(n.next.zone.clone());
                nodes.push((n.next, f, Some((i, n.action, n.answers))));
                queue.push_back(nodes.len() - 1);
            }
        }
        assert!(nodes.len() < 3_000_000, "search too large");
    }
    panic!("no such path")
}

/// Writes the trace of `path` (built and validated by the model).
fn write_trace(dir: &Path, name: &str, m: &LockModel, path: &[(Action, Vec<bool>)]) -> PathBuf {
    let t = trace::build(m, path, Invariant::MutualExclusion, "check", None).expect("a trace");
    let f = dir.join(format!("{name}.json"));
    std::fs::write(&f, t.to_json()).unwrap();
    f
}

fn delivers_watch_event(_: &World, a: &Action, _: &World) -> bool {
    matches!(a, Action::Deliver { msg } if matches!(msg.body, Body::Reply(Reply::Deleted(_))))
}

#[test]
fn a_waiter_is_woken_by_the_real_watch_when_the_paused_holders_entry_expires() {
    let t = "a_waiter_is_woken_by_the_real_watch_when_the_paused_holders_entry_expires";
    let _g = serial();
    for (proto, system, ttl) in [
        ("zookeeper", &[ZOOKEEPER, JAVA][..], 30 * SEC),
        ("etcd", &[ETCD][..], 10 * SEC),
    ] {
        if !require(t, system) {
            continue;
        }
        let m = model(proto, &[FaultKind::Pause], |p| {
            p.ttl = ttl;
            p.renew_every = ttl / 3;
        });
        let path = shortest_with(&m, Invariant::MutualExclusion, delivers_watch_event);
        let d = scratch(&format!("watch-{proto}"));
        let f = write_trace(&d, proto, &m, &path);
        let out = replays(&f, &[]);
        assert!(out.contains("WATCH EVENT: #1 deleted"), "{out}");
        assert!(
            out.contains(if proto == "etcd" {
                "DELETE at mod_revision"
            } else {
                "watch notification on the watcher's session: NodeDeleted /locklab/_c_"
            }),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "violation:   mutual_exclusion HAPPENED on real {}",
                if proto == "etcd" { "etcd" } else { "ZooKeeper" }
            )),
            "{out}"
        );
    }
}

/// A folded heartbeat (docs/model.md, "Folded heartbeats"): once the
/// pause is spent, the service keeps c2's session alive for good and the
/// trace shows no more of its keepalives. The real lease still needs
/// them: the driver sends them itself, every `renew_every` from the last
/// keepalive the model took, and the replay must conform to the end.
#[test]
fn the_driver_keeps_a_session_alive_that_the_model_keeps_alive_for_good() {
    let t = "the_driver_keeps_a_session_alive_that_the_model_keeps_alive_for_good";
    let _g = serial();
    if !require(t, &[ETCD]) {
        return;
    }
    let ttl = 10 * SEC;
    let m = model("etcd", &[FaultKind::Pause], |p| {
        p.ttl = ttl;
        p.renew_every = ttl / 3;
    });
    let kept = |_: &World, _: &Action, n: &World| {
        n.coord
            .sessions
            .contains(&Some(locklab_models::world::Session::Kept))
    };
    let path = shortest_with(&m, Invariant::MutualExclusion, kept);
    let d = scratch("kept-session");
    let f = write_trace(&d, "etcd", &m, &path);
    let out = replays(&f, &[]);
    assert!(out.contains("keeps its session alive for good"), "{out}");
    assert!(
        out.contains("(the heartbeat of a session the model keeps alive, sent by the driver)"),
        "the trace should run past the kept session's next keepalive:\n{out}"
    );
    assert!(
        out.contains("violation:   mutual_exclusion HAPPENED on real etcd"),
        "{out}"
    );
}

#[test]
fn etcd_3_4_takes_the_lock_on_an_answer_that_says_its_key_is_gone() {
    let t = "etcd_3_4_takes_the_lock_on_an_answer_that_says_its_key_is_gone";
    let _g = serial();
    if !require(t, &[ETCD]) {
        return;
    }
    let m = model("etcd", &[FaultKind::Pause], |p| {
        p.ttl = 10 * SEC;
        p.renew_every = 10 * SEC / 3;
        p.acquisitions = 2;
        p.no_recheck = true;
    });
    let entered_without_key = |b: &World, a: &Action, n: &World| {
        matches!(a, Action::Deliver { msg } if matches!(msg.body, Body::Reply(Reply::Place { mine: false, pred: None, .. })))
            && b.clients
                .iter()
                .zip(&n.clients)
                .any(|(x, y)| x.phase != Phase::Work && y.phase == Phase::Work)
    };
    let path = shortest_with(&m, Invariant::MutualExclusion, entered_without_key);
    let d = scratch("no-recheck");
    let f = write_trace(&d, "etcd-3.4", &m, &path);
    let out = replays(&f, &[]);
    assert!(
        out.contains("c2 believes it holds the lock: it entered on the real answer \"#2 is GONE (session expired), nothing before it\" (its own key is gone: only a client without the post-wait re-check, etcd 3.4, takes the lock on it)"),
        "{out}"
    );
    assert!(
        out.contains("violation:   mutual_exclusion HAPPENED on real etcd"),
        "{out}"
    );
}

/// Gallery counterexamples a replay cannot show on a real server, with the
/// exit code and the words the replay says it with:
/// * ZooKeeper reaps an empty container on its own schedule
///   (`znode.container.checkIntervalMs`), which the replay does not drive;
/// * "never goes away" is not a thing a finite replay can observe: the
///   replay conforms step by step, and says it has no real observation
///   for `no_orphan_lock` (exit 1).
const NOT_ON_A_REAL_SERVER: &[(&str, i32, &str)] = &[
    (
        "article-zookeeper-sequence-token.json",
        2,
        "reap the empty container /lock",
    ),
    (
        "article-session-thread-crash.json",
        1,
        "has no real observation for no_orphan_lock",
    ),
];

#[test]
fn every_consensus_counterexample_in_the_gallery_replays_and_conforms() {
    // The gallery's counterexamples for the consensus recipes (the ones the
    // docs draw, generated by `locklab docs`): each must conform step by
    // step on the real server and its violation must really happen.
    let t = "every_consensus_counterexample_in_the_gallery_replays_and_conforms";
    let _g = serial();
    if !require(t, &[ETCD, ZOOKEEPER, JAVA]) {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gallery/traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the committed gallery")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut replayed = Vec::new();
    for f in files {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let proto = doc["config"]["protocol"].as_str().unwrap_or_default();
        if !["fencing", "zookeeper", "etcd"].contains(&proto) {
            continue;
        }
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if let Some((_, code, says)) = NOT_ON_A_REAL_SERVER.iter().find(|(n, ..)| *n == name) {
            // The replay says it cannot show this one, and why.
            let o = locklab(&["replay", f.to_str().unwrap()]);
            let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
            assert_eq!(o.status.code(), Some(*code), "{name}:\n{all}");
            assert!(all.contains(says), "{name}:\n{all}");
            if *code != 2 {
                // It ran: every server it started is gone.
                all_gone(&all);
            }
            continue;
        }
        let out = replays(&f, &[]);
        assert!(
            out.contains(" HAPPENED on real "),
            "{}:\n{out}",
            f.display()
        );
        replayed.push(name);
    }
    // fencing, zookeeper and etcd each have at least their mutual_exclusion
    // and no_lost_update pages, and the article page adds more.
    assert!(replayed.len() >= 6, "replayed only {replayed:?}");
}
