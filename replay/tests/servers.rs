//! The real mechanisms the replay maps faults to, checked on real
//! redis-server processes: the clock-shift shim, restart without
//! persistence, and the failover recipe that loses exactly the writes made
//! after the replica was cut off. Needs `redis-server` and `cc` (installed
//! by `.ci/run`).

mod common;
use common::have_redis;
use locklab_replay::resp::Value;
use locklab_replay::servers::{Cluster, ServerOptions, ServerSpec};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn opts() -> ServerOptions {
    ServerOptions {
        redis_server: PathBuf::from("redis-server"),
        base_port: None,
        start_timeout: Duration::from_secs(5),
        reply_timeout: Duration::from_secs(2),
    }
}

fn spec(name: &str, replica_of: Option<usize>, shimmed: bool) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        replica_of,
        shimmed,
    }
}

fn call(c: &Cluster, s: usize, args: &[&str]) -> Value {
    c.connect(s).unwrap().call(args).unwrap()
}

fn int(v: Value) -> i64 {
    match v {
        Value::Int(i) => i,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn the_clock_shim_moves_one_servers_wall_clock_and_its_expiries() {
    if !have_redis("the_clock_shim_moves_one_servers_wall_clock_and_its_expiries") {
        return;
    }
    let mut c = Cluster::start(
        vec![spec("shifted", None, true), spec("plain", None, false)],
        opts(),
    )
    .expect("servers start (needs redis-server and cc)");
    for s in 0..2 {
        assert_eq!(
            call(&c, s, &["SET", "k", "v", "PX", "30000"]),
            Value::Simple("OK".into())
        );
        assert_eq!(
            call(&c, s, &["SET", "k2", "v", "PX", "90000"]),
            Value::Simple("OK".into())
        );
    }
    c.set_offset(0, 60_000).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let Value::Array(Some(t)) = call(&c, 0, &["TIME"]) else {
        panic!("TIME is an array")
    };
    let server_secs: i64 = t[0].as_str().unwrap().parse().unwrap();
    assert!(
        (server_secs - now - 60).abs() <= 1,
        "server clock {server_secs}, real {now}"
    );
    // +60 s: the 30 s key is gone, the 90 s key has about 30 s left.
    assert_eq!(int(call(&c, 0, &["PTTL", "k"])), -2);
    let left = int(call(&c, 0, &["PTTL", "k2"]));
    assert!((29_000..=30_000).contains(&left), "{left}");
    // The other server's clock did not move.
    let plain = int(call(&c, 1, &["PTTL", "k"]));
    assert!((29_000..=30_000).contains(&plain), "{plain}");
    // Backward: a key lives longer by the jump.
    c.set_offset(0, -60_000).unwrap();
    let back = int(call(&c, 0, &["PTTL", "k2"]));
    assert!((149_000..=150_000).contains(&back), "{back}");
    let pids = c.pids();
    c.shutdown();
    assert!(pids.iter().all(|p| gone(*p)));
}

#[test]
fn a_restart_comes_back_empty_on_the_same_port() {
    if !have_redis("a_restart_comes_back_empty_on_the_same_port") {
        return;
    }
    let mut c = Cluster::start(vec![spec("redis", None, false)], opts()).unwrap();
    let port = c.servers[0].port;
    assert_eq!(
        call(&c, 0, &["SET", "lock", "c1#1", "NX", "PX", "30000"]),
        Value::Simple("OK".into())
    );
    let first = c.pids()[0];
    c.kill(0);
    assert!(gone(first));
    c.launch(0).unwrap();
    assert_eq!(c.servers[0].port, port);
    assert_eq!(c.servers[0].pids.len(), 2);
    assert_eq!(call(&c, 0, &["GET", "lock"]), Value::Bulk(None));
    let pids = c.pids();
    drop(c);
    assert!(
        pids.iter().all(|p| gone(*p)),
        "dropping the cluster stops every server"
    );
}

#[test]
fn the_failover_recipe_loses_exactly_the_writes_after_the_cut() {
    if !have_redis("the_failover_recipe_loses_exactly_the_writes_after_the_cut") {
        return;
    }
    let mut c = Cluster::start(
        vec![
            spec("primary", None, false),
            spec("replica", Some(0), false),
        ],
        opts(),
    )
    .unwrap();
    assert_eq!(
        call(&c, 0, &["SET", "before", "1"]),
        Value::Simple("OK".into())
    );
    // The replica has it; then it is frozen and cut off.
    c.wait_replicated(0, 1).unwrap();
    c.freeze(1, true).unwrap();
    assert_eq!(int(call(&c, 0, &["CLIENT", "KILL", "TYPE", "replica"])), 1);
    assert_eq!(
        call(&c, 0, &["SET", "lock", "c1#1", "NX", "PX", "30000"]),
        Value::Simple("OK".into())
    );
    c.kill(0);
    c.freeze(1, false).unwrap();
    assert_eq!(
        call(&c, 1, &["REPLICAOF", "NO", "ONE"]),
        Value::Simple("OK".into())
    );
    assert_eq!(
        call(&c, 1, &["GET", "before"]),
        Value::Bulk(Some("1".into()))
    );
    assert_eq!(call(&c, 1, &["GET", "lock"]), Value::Bulk(None));
}

#[test]
fn a_listener_belongs_only_to_the_process_that_opened_it() {
    use locklab_replay::servers::owns_listener;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    assert!(owns_listener(std::process::id(), port));
    // PID 1 does not own this test's socket; nothing listens on a closed port.
    assert!(!owns_listener(1, port));
    drop(l);
    assert!(!owns_listener(std::process::id(), port));
}

#[test]
fn a_replays_scratch_directory_is_private_and_leftovers_are_removed() {
    if !have_redis("a_replays_scratch_directory_is_private_and_leftovers_are_removed") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    // A directory left by a replay whose process no longer exists.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait().unwrap();
    let stale = std::env::temp_dir().join(format!("locklab-replay-{pid}-0-0"));
    std::fs::create_dir_all(stale.join("redis-1")).unwrap();
    let c = Cluster::start(vec![spec("plain", None, false)], opts()).expect("redis-server starts");
    let mode = std::fs::metadata(c.root()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert!(
        !stale.exists(),
        "the leftover {} is still there",
        stale.display()
    );
    let pids = c.pids();
    drop(c);
    for p in pids {
        assert!(gone(p));
    }
}
