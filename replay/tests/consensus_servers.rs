//! The real mechanisms the consensus replays rely on, checked on a real
//! etcd and a real ZooKeeper: leases and sessions expire on the server's
//! own clock when nothing renews them, their keys and nodes go with them,
//! and a watch on them fires. The search's shortest counterexamples never
//! wait on a predecessor, so the watch paths of the driver's clients are
//! checked here. Needs `etcd` (etcd-server) and ZooKeeper (zookeeper);
//! missing ones fail under `CI=true` and print `SKIPPED:` otherwise.

mod common;
use common::{have, on_path};
use locklab_replay::coordsrv::{CoordOptions, CoordServer};
use locklab_replay::etcd::{Etcd, b64};
use locklab_replay::timemap::{System, TimeMap};
use locklab_replay::zk::{self, ZkConn};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn opts() -> CoordOptions {
    CoordOptions {
        etcd: PathBuf::from("etcd"),
        zookeeper_jar: PathBuf::from(CoordOptions::DEFAULT_ZOOKEEPER_JAR),
        java: PathBuf::from("java"),
        base_port: None,
        start_timeout: Duration::from_secs(20),
        reply_timeout: Duration::from_secs(2),
    }
}

#[test]
fn an_etcd_lease_expires_with_its_key_and_the_watch_sees_the_delete() {
    let t = "an_etcd_lease_expires_with_its_key_and_the_watch_sees_the_delete";
    if !have(t, on_path("etcd"), "etcd-server") {
        return;
    }
    let mut s =
        CoordServer::start(System::Etcd, &opts(), TimeMap { speed: 5 }).expect("etcd starts");
    let e = Etcd {
        port: s.port,
        timeout: Duration::from_secs(2),
    };
    // 1 s is the minimum with --election-timeout 100.
    let (lease, ttl) = e.grant(1).unwrap();
    assert_eq!(ttl, 1);
    let key = "locklab/lock/a";
    let v = e
        .post(
            "/v3/kv/txn",
            &json!({
                "compare": [{"target": "CREATE", "key": b64(key.as_bytes()), "create_revision": "0"}],
                "success": [{"request_put": {"key": b64(key.as_bytes()), "value": "", "lease": lease.to_string()}}],
                "failure": [],
            }),
        )
        .unwrap();
    assert_eq!(v["succeeded"], json!(true));
    let (kv, at) = e.get(key).unwrap();
    assert_eq!(kv.unwrap().lease, lease);
    assert_eq!(e.keepalive(lease).unwrap(), 1);
    let mut w = e.watch(key, at + 1).unwrap();
    let begin = Instant::now();
    let ev = w
        .next(Duration::from_secs(5))
        .unwrap()
        .expect("a watch event");
    let waited = begin.elapsed();
    assert_eq!(ev["events"][0]["type"], json!("DELETE"), "{ev}");
    // Gone after its TTL, at most the lessor's 500 ms loop (and raft) later.
    assert!(
        waited >= Duration::from_millis(900) && waited <= Duration::from_millis(1700),
        "{waited:?}"
    );
    assert_eq!(e.time_to_live(lease).unwrap(), -1);
    assert_eq!(e.keepalive(lease).unwrap(), 0);
    assert!(e.get(key).unwrap().0.is_none());
    let pid = s.pid;
    s.shutdown();
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn a_silent_zookeeper_session_expires_on_time_and_the_watcher_is_told() {
    let t = "a_silent_zookeeper_session_expires_on_time_and_the_watcher_is_told";
    if !have(
        t,
        Path::new(CoordOptions::DEFAULT_ZOOKEEPER_JAR).exists() && on_path("java"),
        "zookeeper",
    ) {
        return;
    }
    let time = TimeMap { speed: 10 };
    let mut s = CoordServer::start(System::ZooKeeper, &opts(), time).expect("ZooKeeper starts");
    let timeout = Duration::from_secs(2);
    let session = time.zk_session_ms(12 * locklab_models::time::SEC); // 1200 ms
    let mut admin = ZkConn::connect(s.port, 60_000, timeout).unwrap();
    admin.create("/locklab", b"", zk::PERSISTENT).unwrap();
    let mut a = ZkConn::connect(s.port, session, timeout).unwrap();
    assert_eq!(a.timeout_ms as u64, session);
    let mut b = ZkConn::connect(s.port, 60_000, timeout).unwrap();
    let (pa, sa) = a
        .create("/locklab/_c_x-lock-", b"", zk::EPHEMERAL_SEQUENTIAL)
        .unwrap();
    assert_eq!(pa, "/locklab/_c_x-lock-0000000000");
    assert_eq!(sa.ephemeral_owner, a.session_id);
    let (pb, sb) = b
        .create("/locklab/_c_y-lock-", b"", zk::EPHEMERAL_SEQUENTIAL)
        .unwrap();
    assert_eq!(pb, "/locklab/_c_y-lock-0000000001");
    assert!(sb.czxid > sa.czxid);
    assert_eq!(
        b.children("/locklab").unwrap(),
        ["_c_x-lock-0000000000", "_c_y-lock-0000000001"]
    );
    let begin = Instant::now();
    assert!(b.exists(&pa, true).unwrap().is_some());
    // a says nothing more: its session expires, its node goes, b is told.
    let ev = b
        .next_event(Duration::from_secs(5))
        .unwrap()
        .expect("a watch event");
    let waited = begin.elapsed();
    assert_eq!((ev.kind, ev.path.as_str()), (zk::NODE_DELETED, pa.as_str()));
    assert!(
        waited >= Duration::from_millis(1150) && waited <= Duration::from_millis(1500),
        "{waited:?}"
    );
    // The server closed a's connection; re-attaching is refused.
    assert!(a.ping().is_err());
    let again = ZkConn::reattach(s.port, session, a.session_id, &a.passwd, timeout).unwrap();
    assert!(again.is_none(), "an expired session cannot be re-attached");
    // Sequence numbers count creations only: neither the expiry's delete
    // nor an explicit one advances them (the model's revision counts both,
    // so the replay binds model revisions to nodes in creation order).
    b.delete(&pb).unwrap();
    let (pc, _) = b
        .create("/locklab/_c_z-lock-", b"", zk::EPHEMERAL_SEQUENTIAL)
        .unwrap();
    assert_eq!(pc, "/locklab/_c_z-lock-0000000002");
    let pid = s.pid;
    drop((a, b, admin));
    s.shutdown();
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}
