//! The replay driver for the consensus protocols: `etcd` and `fencing` on
//! a real single-node etcd, `zookeeper` on a real standalone ZooKeeper.
//!
//! The driver plays every client, as the recipes' client libraries do:
//!
//! * etcd (`concurrency.Mutex` on a `concurrency.Session`): `Open` is
//!   `LeaseGrant`; `Txn` is one transaction `If(CreateRevision(myKey) == 0)
//!   Then(Put(myKey, lease), Range(prefix)) Else(Range(myKey),
//!   Range(prefix))` with `myKey = prefix + lease id in hex`; `Order` is a
//!   range over the prefix (the `waitDeletes` query and the 3.5 post-wait
//!   `Get(myKey)` in one read); `Watch` reads the predecessor and opens a
//!   watch on it from the next revision; `KeepAlive` is one
//!   `LeaseKeepAlive` round; `Remove` deletes `myKey` and revokes the lease.
//!   `fencing`'s `Lock` is a transaction on a single key (`If
//!   CreateRevision == 0 Then Put Else Get`): the token is the key's
//!   create revision.
//! * ZooKeeper (Curator's `InterProcessMutex`): `Open` connects a session;
//!   `Create` is the protected create — look for this acquisition's
//!   `_c_<guid>-` node among the children, else `create2` an
//!   EPHEMERAL_SEQUENTIAL node; `Order` is `getChildren`; `Watch` is
//!   `exists` with a watch on the predecessor; `KeepAlive` is a ping; `Remove`
//!   deletes the node and closes the session.
//!
//! Model revisions map to real ones as the replay checks: on etcd, real
//! revision = model revision + the revision of the empty store (deletes and
//! lease revokes advance both alike); on ZooKeeper the zxid also counts
//! session transactions and sequence numbers count creations only, so model
//! revisions are bound to real nodes in creation order, each new node
//! required to come after every earlier one by sequence number and czxid. A client pause, a lost or delayed message are the
//! driver's: a paused client sends nothing (no keepalive, no ping), so its
//! lease or session expires on the server's own clock while the driver
//! waits in real time ([`TimeMap`]).

use crate::Error;
use crate::coordsrv::{CoordOptions, CoordServer};
use crate::etcd::{self, Etcd, EtcdError, Kv, WatchStream, b64};
use crate::report::{Check, Report, Row, ServerLine, Timing, Verdict};
use crate::timemap::{System, TimeMap};
use crate::zk::{self, ZkConn, ZkError};
use locklab_models::LockModel;
use locklab_models::action::Action;
use locklab_models::engine::concrete::CState;
use locklab_models::engine::solve::Rational;
use locklab_models::invariants::Invariant;
use locklab_models::trace;
use locklab_models::units::show_rational;
use locklab_models::world::{
    Body, Chan, Cmd, Log, Msg, Node, Phase, Reply, Session as ModelSession, World,
};
use locklab_traces::{EventKind, Trace};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// etcd keys: the `etcd` recipe's prefix and `fencing`'s single key.
const ETCD_PREFIX: &str = "locklab/lock/";
const FENCING_KEY: &str = "locklab/lock/fencing";
/// ZooKeeper: the lock's parent node.
const ZK_PARENT: &str = "/locklab";

/// One client's session on the real server.
enum Session {
    Lease(i64),
    Zk {
        conn: Option<ZkConn>,
        id: i64,
        passwd: Vec<u8>,
    },
}

/// A real lock entry the model knows by its revision.
#[derive(Clone, Debug)]
struct RealEntry {
    /// etcd key or ZooKeeper path.
    name: String,
    /// etcd create revision or ZooKeeper czxid.
    real_rev: i64,
}

/// A real reply the driver read and holds until the model delivers it.
struct Pending {
    client: u8,
    chan: Chan,
    model: String,
    real: String,
    /// The real answer told the client it holds the lock.
    grants: bool,
}

/// An open watch.
enum RealWatch {
    Etcd { key: String, stream: WatchStream },
    Zk { path: String },
}

/// The model's reply (as text) and the real one in the model's terms (or
/// why it has none).
type Exchange = (String, Result<Reply, String>);

/// The real reply translated into the model's terms (or why it cannot be).
struct Answer {
    reply: Result<Reply, String>,
    did: String,
}

#[derive(Default)]
struct Evidence {
    /// Per client: the real answer on which it entered its critical section.
    grants: Vec<Option<(String, bool)>>,
    /// Accepted resource writes: (step, writer, its lock was really granted).
    writes: Vec<(usize, u8, bool)>,
    /// Real tokens granted, in order: (client, token).
    tokens: Vec<(u8, i64)>,
}

struct Driver<'a> {
    m: &'a LockModel,
    system: System,
    time: TimeMap,
    server: CoordServer,
    etcd: Etcd,
    t0: Instant,
    max_late: Duration,
    reply_timeout: Duration,
    sessions: Vec<Option<Session>>,
    entries: BTreeMap<u16, RealEntry>,
    pending: Vec<Pending>,
    watches: BTreeMap<u8, Vec<RealWatch>>,
    /// The revision of the empty store (etcd).
    rev0: i64,
    /// The observer's own ZooKeeper session.
    observer: Option<ZkConn>,
    /// Lease ids / session ids, and the client each belongs to.
    owners: BTreeMap<i64, u8>,
    /// Per client: its latest lease (etcd), kept after it is gone.
    last_lease: Vec<Option<i64>>,
    /// The real answer the model just delivered (for the verdict).
    last_answer: Option<(String, bool)>,
    /// Per client whose session the model keeps alive for good (a folded
    /// heartbeat, `world::Session::Kept`): when the last keepalive for it
    /// reached the real server. The trace no longer shows these
    /// keepalives, so the driver sends them itself, as the client's
    /// heartbeat would, on a real-time schedule (`tend_kept`).
    kept: Vec<Option<Instant>>,
    ev: Evidence,
}

/// Replays a consensus-protocol trace on the real server for `system`.
pub fn replay(
    t: &Trace,
    m: &LockModel,
    inv: Invariant,
    path: &[(Action, Rational)],
    system: System,
    time: TimeMap,
    opts: &CoordOptions,
) -> Result<Report, Error> {
    for (a, _) in path {
        if matches!(
            a,
            Action::Restart { .. } | Action::Failover { .. } | Action::ClockJump { .. }
        ) {
            return Err(Error::Input(format!(
                "step {} is a server fault ({}) that a consensus service does not suffer in the model; it cannot be replayed",
                trace::action_text(a),
                system.name()
            )));
        }
    }
    let begin = Instant::now();
    let server = CoordServer::start(system, opts, time)?;
    let start_ms = begin.elapsed().as_secs_f64() * 1e3;
    let w0 = m.init();
    let mut d = Driver {
        m,
        system,
        time,
        etcd: Etcd {
            port: server.port,
            timeout: opts.reply_timeout,
        },
        server,
        t0: Instant::now(),
        max_late: Duration::ZERO,
        reply_timeout: opts.reply_timeout,
        sessions: (0..w0.clients.len()).map(|_| None).collect(),
        entries: BTreeMap::new(),
        pending: Vec::new(),
        watches: BTreeMap::new(),
        rev0: 0,
        observer: None,
        owners: BTreeMap::new(),
        last_lease: vec![None; w0.clients.len()],
        last_answer: None,
        kept: vec![None; w0.clients.len()],
        ev: Evidence {
            grants: vec![None; w0.clients.len()],
            ..Evidence::default()
        },
    };
    d.prepare()?;
    let run_begin = Instant::now();
    let (rows, st) = d.run(path)?;
    let mut final_unsure = Vec::new();
    let finals = d.observe(&st, &mut final_unsure)?;
    let replay_ms = run_begin.elapsed().as_secs_f64() * 1e3;
    let verdict = d.verdict(inv, &st.world, &finals);
    let servers = vec![ServerLine {
        name: d.server.name.clone(),
        port: d.server.port,
        pids: vec![d.server.pid],
        shimmed: false,
        replica_of: None,
        promoted: false,
    }];
    let max_late_ms = d.max_late.as_secs_f64() * 1e3;
    let stop_begin = Instant::now();
    d.sessions.clear();
    d.watches.clear();
    d.observer = None;
    d.server.shutdown();
    let stop_ms = stop_begin.elapsed().as_secs_f64() * 1e3;
    let survivors = if d.server.survives() {
        vec![d.server.pid]
    } else {
        vec![]
    };
    Ok(Report {
        protocol: m.proto.name().to_string(),
        system: system.name().to_string(),
        time_line: time.describe(system, m.params.ttl),
        invariant: t.invariant.clone(),
        violation: t.violation.clone(),
        violation_step: t.violation_step,
        speed: time.speed,
        servers,
        rows,
        finals,
        final_unsure,
        verdict,
        survivors,
        timing: Timing {
            start_ms,
            replay_ms,
            stop_ms,
            total_ms: begin.elapsed().as_secs_f64() * 1e3,
            max_late_ms,
        },
        until: None,
        retimed: None,
    })
}

fn env(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Env(format!("{what}: {e}"))
}

/// A ZooKeeper node's sequence number (its last ten digits).
fn seq_of(name: &str) -> Option<i64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits.parse().ok()
}

impl Driver<'_> {
    /// Before the clock starts: the empty store's revision (etcd); the
    /// observer session, the lock's parent node and a JVM warm-up
    /// (ZooKeeper).
    fn prepare(&mut self) -> Result<(), Error> {
        match self.system {
            System::Etcd => {
                let (_, rev) = self
                    .etcd
                    .range_prefix(ETCD_PREFIX)
                    .map_err(|e| env("cannot read etcd", e))?;
                self.rev0 = rev;
            }
            _ => {
                let mut c = ZkConn::connect(self.server.port, 600_000, self.reply_timeout)
                    .map_err(|e| env("cannot open the observer's ZooKeeper session", e))?;
                // Warm the server's request path up outside the schedule.
                for _ in 0..20 {
                    let (p, _) = c
                        .create("/warmup-", b"", zk::EPHEMERAL_SEQUENTIAL)
                        .map_err(|e| env("ZooKeeper warm-up", e))?;
                    c.exists(&p, false)
                        .and_then(|_| c.children("/"))
                        .and_then(|_| c.delete(&p))
                        .and_then(|_| c.ping())
                        .map_err(|e| env("ZooKeeper warm-up", e))?;
                }
                c.create(ZK_PARENT, b"", zk::PERSISTENT)
                    .map_err(|e| env("cannot create the lock's parent node", e))?;
                self.observer = Some(c);
            }
        }
        Ok(())
    }

    fn run(&mut self, path: &[(Action, Rational)]) -> Result<(Vec<Row>, CState), Error> {
        let m = self.m;
        let mut st = m.cinit();
        let mut rows = Vec::with_capacity(path.len());
        self.t0 = Instant::now();
        for (i, (a, at)) in path.iter().enumerate() {
            let index = i + 1;
            let mut did = self.wait_keeping_alive(&st.world, *at, index)?;
            let mut unsure = Vec::new();
            let actor = m.actor(&st.world, a);
            let before = st.world.clone();
            // The model's side first: its reply to a request.
            let mut log = Log::on();
            let after = m
                .cstep(&st, a, *at, &mut log)
                .map_err(|e| Error::Input(format!("step {index} does not replay: {e}")))?;
            let events = log.take();
            let model_reply = events
                .iter()
                .find(|e| e.kind == EventKind::Execute)
                .and_then(|e| e.text.rsplit_once(" -> ").map(|(_, r)| r.to_string()));
            let exchange = self.act(&before, a, model_reply, &mut did)?;
            let at_ms = self.t0.elapsed().as_millis() as u64;
            st = after;
            let label = trace::label(&events);
            self.track(&before, &st.world, a, index);
            let checks = match a {
                Action::Deliver {
                    msg: Msg {
                        to: Node::Service, ..
                    },
                } => self.observe(&st, &mut unsure)?,
                // The server expires a session on its own clock, in its own
                // granularity: wait for it up to the replay's slack.
                Action::SessionExpires { client } => {
                    let waited = Instant::now();
                    let slack = self.slack();
                    loop {
                        did.extend(self.tend_kept(&st.world)?);
                        let mut u = Vec::new();
                        let checks = self.observe(&st, &mut u)?;
                        if checks.iter().all(|c| c.ok || c.unsure) || waited.elapsed() >= slack {
                            did.push(format!(
                                "the real server expires {}'s session on its own clock: the driver watched for it for {:.0} ms (the replay's slack is {:.0} ms)",
                                st.world.client_name(*client),
                                waited.elapsed().as_secs_f64() * 1e3,
                                slack.as_secs_f64() * 1e3
                            ));
                            unsure.extend(u);
                            break checks;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                _ => vec![],
            };
            let (model_reply, real_reply, reply_ok) = match exchange {
                Some((model, real)) => {
                    let ok = real.as_ref().is_ok_and(|r| r.text() == model);
                    let real = match real {
                        Ok(r) => r.text(),
                        Err(e) => e,
                    };
                    (Some(model), Some(real), Some(ok))
                }
                None => (None, None, None),
            };
            rows.push(Row {
                index,
                time: show_rational(*at),
                at_ms,
                actor,
                label,
                did,
                model_reply,
                real_reply,
                reply_ok,
                checks,
                unsure,
                blind: false,
            });
        }
        Ok((rows, st))
    }

    /// Waits until model time `t`, keeping alive the sessions the model
    /// keeps alive for good meanwhile (`tend_kept`). Returns what it sent.
    fn wait_keeping_alive(
        &mut self,
        w: &World,
        t: Rational,
        index: usize,
    ) -> Result<Vec<String>, Error> {
        let mut did = self.tend_kept(w)?;
        let target = self.t0 + self.time.at(t);
        while let Some(due) = self.next_keepalive() {
            if due >= target {
                break;
            }
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if crate::interrupt::interrupted() {
                return Err(Error::Interrupted);
            }
            did.extend(self.tend_kept(w)?);
        }
        self.wait_until(t, index)?;
        Ok(did)
    }

    /// How often the driver renews a kept session: half the model's
    /// heartbeat period in real time, so that its own lateness cannot
    /// cost the session (the model says nothing can).
    fn keepalive_period(&self) -> Duration {
        (self.time.real(self.m.params.renew_every) / 2).max(Duration::from_millis(10))
    }

    fn next_keepalive(&self) -> Option<Instant> {
        let every = self.keepalive_period();
        self.kept.iter().flatten().map(|last| *last + every).min()
    }

    /// Sends a keepalive for each session the model keeps alive for good
    /// whose last one is a period old. A session the model has just kept
    /// starts its period now (the keepalive the model took is the step
    /// just replayed). A keepalive the real server refuses is reported;
    /// the state check that follows shows the divergence. One the driver
    /// cannot send fails the replay, as every other request does.
    fn tend_kept(&mut self, w: &World) -> Result<Vec<String>, Error> {
        let every = self.keepalive_period();
        let mut did = Vec::new();
        for c in 0..w.clients.len() {
            if w.coord.sessions[c] != Some(ModelSession::Kept) {
                self.kept[c] = None;
                continue;
            }
            let Some(last) = self.kept[c] else {
                self.kept[c] = Some(Instant::now());
                continue;
            };
            if last.elapsed() < every {
                continue;
            }
            let ms = self.t0.elapsed().as_millis();
            self.kept[c] = Some(Instant::now());
            let ans = self.request(w, c as u8, Cmd::KeepAlive)?;
            did.push(format!(
                "{ms} ms: {}{} (the heartbeat of a session the model keeps alive, sent by the driver)",
                ans.did,
                if ans.reply == Ok(Reply::Alive(true)) {
                    ""
                } else {
                    ": REFUSED, where the model says this session cannot end"
                }
            ));
        }
        Ok(did)
    }

    fn wait_until(&mut self, t: Rational, index: usize) -> Result<(), Error> {
        let late = self.time.wait_until(self.t0, t, index)?;
        self.max_late = self.max_late.max(late);
        Ok(())
    }

    /// The real uncertainty of the server's session expiry so far.
    fn slack(&self) -> Duration {
        self.time.slack(self.system, self.max_late)
    }

    /// The real side of one step. Returns the model's reply and the real
    /// one when a request ran or a watch event arrived.
    fn act(
        &mut self,
        w: &World,
        a: &Action,
        model_reply: Option<String>,
        did: &mut Vec<String>,
    ) -> Result<Option<Exchange>, Error> {
        let name = |c: u8| w.client_name(c);
        match *a {
            Action::Deliver { msg } => match (msg.from, msg.to, msg.body) {
                (Node::Client(c), Node::Service, Body::Req(cmd)) => {
                    let ans = self.request(w, c, cmd)?;
                    did.push(ans.did);
                    let Some(model) = model_reply else {
                        return Ok(None);
                    };
                    // The model answers unless the sender gave up on the
                    // request or its business thread died (coord::deliver).
                    let gone = !w.clients[c as usize].alive && msg.chan == Chan::Main;
                    if msg.orphan || gone {
                        did.push(format!(
                            "{} no longer waits for this answer: it reaches nobody",
                            name(c)
                        ));
                    } else {
                        let grants = matches!(
                            ans.reply,
                            Ok(Reply::Token(_)) | Ok(Reply::Place { pred: None, .. })
                        );
                        self.pending.push(Pending {
                            client: c,
                            chan: msg.chan,
                            model: model.clone(),
                            real: ans
                                .reply
                                .as_ref()
                                .map(|r| r.text())
                                .unwrap_or_else(|e| e.clone()),
                            grants,
                        });
                    }
                    return Ok(Some((model, ans.reply)));
                }
                (Node::Service, Node::Client(c), Body::Reply(Reply::Deleted(rev)))
                    if msg.chan == Chan::Main && self.is_watch_event(w, c, msg) =>
                {
                    let real = self.watch_event(c, did)?;
                    return Ok(Some((Reply::Deleted(rev).text(), real)));
                }
                (Node::Service, Node::Client(c), Body::Reply(r)) => {
                    let p = self.take_pending(c, msg.chan, &r.text());
                    self.last_answer = p.as_ref().map(|p| (p.real.clone(), p.grants));
                    match p {
                        Some(_) => did.push(format!(
                            "nothing real: the answer was read when its request ran; now {} handles it",
                            name(c)
                        )),
                        None => did.push(format!("nothing real: {} handles the answer", name(c))),
                    }
                }
                _ => {}
            },
            Action::Drop {
                msg:
                    msg @ Msg {
                        body: Body::Reply(r @ Reply::Deleted(_)),
                        ..
                    },
            } if self.is_watch_event(w, msg.to_client(), msg) => {
                // A lost watch event: read the real one off the watch, so
                // the stream stays in step, and hide it from the client.
                let c = msg.to_client();
                let real = self.watch_event(c, did)?;
                did.push(format!("the driver hides this watch event from {}", name(c)));
                return Ok(Some((r.text(), real)));
            }
            Action::Drop { msg } => did.push(match msg.body {
                Body::Req(_) => "the driver drops the request: it is never sent".into(),
                Body::Reply(r) => {
                    self.take_pending(msg.to_client(), msg.chan, &r.text());
                    format!(
                        "the driver read this answer when the request ran and hides it from {}",
                        w.node_name(msg.to)
                    )
                }
            }),
            Action::Delay { msg } => did.push(match msg.body {
                Body::Req(_) => "the driver holds the request until the trace delivers it".into(),
                Body::Reply(_) => format!(
                    "the driver holds the answer away from {} until the trace delivers it",
                    w.node_name(msg.to)
                ),
            }),
            Action::Pause { client: c } => did.push(format!(
                "the driver holds {}: it sends nothing for it, no keepalive, no ping",
                name(c)
            )),
            Action::Resume { client: c } => did.push(format!("the driver lets {} go on", name(c))),
            Action::Crash { client: c } => did.push(format!(
                "the driver stops running {}'s business thread",
                name(c)
            )),
            Action::Watchdog { client: c } => did.push(format!(
                "{}'s heartbeat timer: nothing real yet (a keepalive it sends reaches the server only when the trace delivers it)",
                name(c)
            )),
            Action::Reap => {
                return Err(Error::Input(
                    "the trace has ZooKeeper reap the empty container /lock (--token sequence): a real ensemble does that on its own schedule (znode.container.checkIntervalMs), which this replay does not drive".into(),
                ));
            }
            _ => {}
        }
        Ok(None)
    }

    /// Whether a `Deleted` reply is a watch event (not a request's answer
    /// waiting in the driver).
    fn is_watch_event(&self, _w: &World, c: u8, msg: Msg) -> bool {
        let text = match msg.body {
            Body::Reply(r) => r.text(),
            _ => return false,
        };
        !self
            .pending
            .iter()
            .any(|p| p.client == c && p.chan == msg.chan && p.model == text)
    }

    fn take_pending(&mut self, c: u8, chan: Chan, model: &str) -> Option<Pending> {
        let i = self
            .pending
            .iter()
            .position(|p| p.client == c && p.chan == chan && p.model == model)
            .or_else(|| {
                self.pending
                    .iter()
                    .position(|p| p.client == c && p.chan == chan)
            })?;
        Some(self.pending.remove(i))
    }

    /// The model revision of a real etcd revision.
    fn etcd_rev(&self, real: i64) -> Result<u16, String> {
        u16::try_from(real - self.rev0)
            .map_err(|_| format!("revision {real} is below the empty store's {}", self.rev0))
    }

    /// Runs `cmd` for client `c` on the real server.
    fn request(&mut self, w: &World, c: u8, cmd: Cmd) -> Result<Answer, Error> {
        match self.system {
            System::Etcd => self.etcd_request(w, c, cmd),
            _ => self.zk_request(w, c, cmd),
        }
    }

    fn lease(&self, c: u8) -> Option<i64> {
        match self.sessions[c as usize] {
            Some(Session::Lease(id)) => Some(id),
            _ => None,
        }
    }

    fn my_key(&self, c: u8) -> String {
        format!("{ETCD_PREFIX}{:x}", self.lease(c).unwrap_or(0))
    }

    /// Where the entry `my` stands among the keys: the model's `Place`.
    fn etcd_place(&self, kvs: &[Kv], my: i64) -> Result<Reply, String> {
        let rev = self.etcd_rev(my)?;
        let mine = kvs.iter().any(|k| k.create_revision == my);
        let pred = kvs
            .iter()
            .filter(|k| k.create_revision < my)
            .map(|k| k.create_revision)
            .max()
            .map(|r| self.etcd_rev(r))
            .transpose()?;
        Ok(Reply::Place { rev, pred, mine })
    }

    fn etcd_request(&mut self, w: &World, c: u8, cmd: Cmd) -> Result<Answer, Error> {
        let who = w.client_name(c);
        let lease_gone =
            |e: &EtcdError| matches!(e, EtcdError::Server(m) if m.contains("lease not found"));
        let io = |e: EtcdError| env(&format!("etcd did not answer {who}'s {}", cmd.text()), e);
        let ans = match cmd {
            Cmd::Open => {
                let secs = self.time.etcd_lease_secs(self.m.params.ttl);
                let (id, ttl) = self.etcd.grant(secs).map_err(io)?;
                self.sessions[c as usize] = Some(Session::Lease(id));
                self.owners.insert(id, c);
                self.last_lease[c as usize] = Some(id);
                Answer {
                    reply: Ok(Reply::Alive(id != 0 && ttl > 0)),
                    did: format!("LeaseGrant TTL {secs} s for {who} -> lease {id:x}, TTL {ttl} s"),
                }
            }
            Cmd::KeepAlive => match self.lease(c) {
                None => Answer {
                    reply: Ok(Reply::Alive(false)),
                    did: format!("{who} has no lease: nothing to keep alive"),
                },
                Some(id) => {
                    let ttl = self.etcd.keepalive(id).map_err(io)?;
                    Answer {
                        reply: Ok(Reply::Alive(ttl > 0)),
                        did: format!(
                            "LeaseKeepAlive {id:x} on {who}'s keepalive stream -> TTL {ttl} s{}",
                            if ttl > 0 { "" } else { " (the lease is gone)" }
                        ),
                    }
                }
            },
            Cmd::Txn { .. } => {
                let key = self.my_key(c);
                let k = b64(key.as_bytes());
                let body = json!({
                    "compare": [{"target": "CREATE", "key": k, "create_revision": "0"}],
                    "success": [
                        {"request_put": {"key": k, "value": "", "lease": self.lease(c).unwrap_or(0).to_string()}},
                        {"request_range": etcd::range_prefix_op(ETCD_PREFIX)},
                    ],
                    "failure": [
                        {"request_range": {"key": k}},
                        {"request_range": etcd::range_prefix_op(ETCD_PREFIX)},
                    ],
                });
                match self.etcd.post("/v3/kv/txn", &body) {
                    Err(e) if lease_gone(&e) => Answer {
                        reply: Ok(Reply::Alive(false)),
                        did: format!("Txn put {key} with {who}'s lease -> {e}"),
                    },
                    Err(e) => return Err(io(e)),
                    Ok(v) => {
                        let ok = v["succeeded"].as_bool() == Some(true);
                        let resp = &v["responses"];
                        let my = if ok {
                            etcd::num(&v["header"]["revision"])
                        } else {
                            etcd::kvs(&resp[0]["response_range"])
                                .first()
                                .map(|k| k.create_revision)
                                .unwrap_or(0)
                        };
                        let all = etcd::kvs(&resp[1]["response_range"]);
                        let reply = self.etcd_place(&all, my);
                        if let Ok(Reply::Place { rev, .. }) = reply {
                            self.entries.insert(
                                rev,
                                RealEntry {
                                    name: key.clone(),
                                    real_rev: my,
                                },
                            );
                        }
                        Answer {
                            reply,
                            did: format!(
                                "Txn(If create_revision({key}) == 0 Then Put Else Get) + Range({ETCD_PREFIX}) -> {}, {key} create_revision {my}; keys: {}",
                                if ok {
                                    "succeeded"
                                } else {
                                    "failed (it exists)"
                                },
                                kv_list(&all)
                            ),
                        }
                    }
                }
            }
            Cmd::Order { rev } => {
                let my = self.entries.get(&rev).map(|e| e.real_rev).unwrap_or(0);
                let (all, at) = self.etcd.range_prefix(ETCD_PREFIX).map_err(io)?;
                Answer {
                    reply: self.etcd_place(&all, my),
                    did: format!(
                        "Range({ETCD_PREFIX}) at revision {at} -> keys: {} (the waitDeletes query and, in 3.5, Get(myKey))",
                        kv_list(&all)
                    ),
                }
            }
            Cmd::Watch { rev } => {
                let Some(e) = self.entries.get(&rev).cloned() else {
                    return Ok(Answer {
                        reply: Err(format!("no real key for #{rev}")),
                        did: "nothing to watch".into(),
                    });
                };
                let (kv, at) = self.etcd.get(&e.name).map_err(io)?;
                let exists = kv.is_some_and(|k| k.create_revision == e.real_rev);
                let mut did = format!(
                    "Get({}) at revision {at} -> {}",
                    e.name,
                    if exists { "exists" } else { "gone" }
                );
                if exists {
                    let stream = self.etcd.watch(&e.name, at + 1).map_err(io)?;
                    did.push_str(&format!(
                        "; Watch({}, from revision {}) opened on {who}'s watch stream",
                        e.name,
                        at + 1
                    ));
                    self.watches.entry(c).or_default().push(RealWatch::Etcd {
                        key: e.name.clone(),
                        stream,
                    });
                }
                Answer {
                    reply: Ok(Reply::Exists(exists)),
                    did,
                }
            }
            Cmd::Remove { .. } => {
                let Some(id) = self.lease(c) else {
                    return Ok(Answer {
                        reply: Ok(Reply::Int(0)),
                        did: format!("{who} has no lease"),
                    });
                };
                let key = if self.m.proto.name() == "fencing" {
                    FENCING_KEY.to_string()
                } else {
                    self.my_key(c)
                };
                // Delete only a key this lease holds (fencing's single key
                // may be someone else's).
                let body = json!({
                    "compare": [{"target": "LEASE", "key": b64(key.as_bytes()), "lease": id.to_string()}],
                    "success": [{"request_delete_range": {"key": b64(key.as_bytes())}}],
                    "failure": [],
                });
                let v = self.etcd.post("/v3/kv/txn", &body).map_err(io)?;
                let deleted = etcd::num(&v["responses"][0]["response_delete_range"]["deleted"]);
                let revoked = match self.etcd.revoke(id) {
                    Ok(_) => "revoked".to_string(),
                    Err(e) => e.to_string(),
                };
                self.sessions[c as usize] = None;
                Answer {
                    reply: Ok(Reply::Int((deleted > 0) as u8)),
                    did: format!(
                        "Txn(If lease({key}) == {id:x} Then Delete) -> deleted {deleted}; LeaseRevoke {id:x} -> {revoked}"
                    ),
                }
            }
            Cmd::Lock { .. } => {
                let val = w.clients[c as usize].val(c).text();
                let k = b64(FENCING_KEY.as_bytes());
                let body = json!({
                    "compare": [{"target": "CREATE", "key": k, "create_revision": "0"}],
                    "success": [{"request_put": {"key": k, "value": b64(val.as_bytes()), "lease": self.lease(c).unwrap_or(0).to_string()}}],
                    "failure": [{"request_range": {"key": k}}],
                });
                match self.etcd.post("/v3/kv/txn", &body) {
                    Err(e) if lease_gone(&e) => Answer {
                        reply: Ok(Reply::Alive(false)),
                        did: format!("Txn put {FENCING_KEY} with {who}'s lease -> {e}"),
                    },
                    Err(e) => return Err(io(e)),
                    Ok(v) => {
                        let ok = v["succeeded"].as_bool() == Some(true);
                        let (reply, real) = if ok {
                            let r = etcd::num(&v["header"]["revision"]);
                            (self.etcd_rev(r).map(Reply::Token), r)
                        } else {
                            let kv = &v["responses"][0]["response_range"]["kvs"][0];
                            let holder = kv["value"]
                                .as_str()
                                .and_then(etcd::unb64)
                                .map(|b| String::from_utf8_lossy(&b).to_string())
                                .unwrap_or_default();
                            let r = etcd::num(&kv["create_revision"]);
                            if holder == val {
                                (self.etcd_rev(r).map(Reply::Token), r)
                            } else {
                                (Ok(Reply::Busy), r)
                            }
                        };
                        if let Ok(Reply::Token(t)) = reply {
                            self.entries.insert(
                                t,
                                RealEntry {
                                    name: FENCING_KEY.into(),
                                    real_rev: real,
                                },
                            );
                            self.ev.tokens.push((c, real));
                        }
                        Answer {
                            reply,
                            did: format!(
                                "Txn(If create_revision({FENCING_KEY}) == 0 Then Put {val} Else Get) -> {}, create_revision {real}",
                                if ok {
                                    "succeeded"
                                } else {
                                    "failed (it exists)"
                                }
                            ),
                        }
                    }
                }
            }
            other => Answer {
                reply: Err(format!("{} has no etcd mapping", other.text())),
                did: "nothing sent".into(),
            },
        };
        Ok(ans)
    }

    /// Client `c`'s ZooKeeper connection, re-attached to its session if the
    /// old one broke. `None`: the session expired (or never existed).
    fn zk_conn(&mut self, c: u8) -> Result<Option<&mut ZkConn>, Error> {
        let port = self.server.port;
        let ms = self.time.zk_session_ms(self.m.params.ttl);
        let timeout = self.reply_timeout;
        let Some(Session::Zk { conn, id, passwd }) = &mut self.sessions[c as usize] else {
            return Ok(None);
        };
        if conn.is_none() {
            match ZkConn::reattach(port, ms, *id, passwd, timeout) {
                Ok(Some(n)) => *conn = Some(n),
                Ok(None) => {
                    self.sessions[c as usize] = None;
                    return Ok(None);
                }
                Err(e) => return Err(env("cannot reconnect to ZooKeeper", e)),
            }
        }
        match &mut self.sessions[c as usize] {
            Some(Session::Zk { conn, .. }) => Ok(conn.as_mut()),
            _ => Ok(None),
        }
    }

    /// Runs `f` on client `c`'s session; a broken connection is re-attached
    /// once, as a client library does. `Ok(None)`: the session is expired.
    fn zk_call<T>(
        &mut self,
        c: u8,
        mut f: impl FnMut(&mut ZkConn) -> Result<T, ZkError>,
    ) -> Result<Option<Result<T, i32>>, Error> {
        for attempt in 0..2 {
            let Some(conn) = self.zk_conn(c)? else {
                return Ok(None);
            };
            match f(conn) {
                Ok(v) => return Ok(Some(Ok(v))),
                Err(ZkError::Server(zk::SESSIONEXPIRED)) => {
                    self.sessions[c as usize] = None;
                    return Ok(None);
                }
                Err(ZkError::Server(code)) => return Ok(Some(Err(code))),
                Err(ZkError::Io(e)) => {
                    // The server closes an expired session's connection.
                    if let Some(Session::Zk { conn, .. }) = &mut self.sessions[c as usize] {
                        *conn = None;
                    }
                    if attempt == 1 {
                        return Err(env("ZooKeeper connection", e));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The model revision bound to a real ZooKeeper node (by its name).
    fn zk_rev(&self, name: &str) -> Result<u16, String> {
        self.entries
            .iter()
            .find(|(_, e)| e.name == name || e.name.ends_with(&format!("/{name}")))
            .map(|(r, _)| *r)
            .ok_or_else(|| format!("{name} is no node the replay created"))
    }

    fn zk_place(&self, children: &[String], rev: u16) -> Result<Reply, String> {
        let me = self.entries.get(&rev).map(|e| e.name.clone());
        let my_seq = me.as_deref().and_then(seq_of).unwrap_or(rev as i64 - 1);
        let mine = me
            .as_deref()
            .is_some_and(|p| children.iter().any(|ch| p.ends_with(&format!("/{ch}"))));
        let pred = children
            .iter()
            .filter(|ch| seq_of(ch).is_some_and(|s| s < my_seq))
            .max_by_key(|ch| seq_of(ch))
            .map(|ch| self.zk_rev(ch))
            .transpose()?;
        Ok(Reply::Place { rev, pred, mine })
    }

    fn zk_request(&mut self, w: &World, c: u8, cmd: Cmd) -> Result<Answer, Error> {
        let who = w.client_name(c);
        let expired = |what: &str| Answer {
            reply: Ok(Reply::Alive(false)),
            did: format!(
                "{what}: {who}'s session has expired (the server says so when the driver re-attaches)"
            ),
        };
        let ans = match cmd {
            Cmd::Open => {
                let ms = self.time.zk_session_ms(self.m.params.ttl);
                let conn = ZkConn::connect(self.server.port, ms, self.reply_timeout)
                    .map_err(|e| env("cannot open a ZooKeeper session", e))?;
                let did = format!(
                    "connect: {who}'s session 0x{:x}, timeout asked {ms} ms, granted {} ms",
                    conn.session_id, conn.timeout_ms
                );
                let granted = conn.timeout_ms as u64 == ms;
                self.owners.insert(conn.session_id, c);
                self.sessions[c as usize] = Some(Session::Zk {
                    id: conn.session_id,
                    passwd: conn.passwd.clone(),
                    conn: Some(conn),
                });
                Answer {
                    reply: if granted {
                        Ok(Reply::Alive(true))
                    } else {
                        Err("the server granted another session timeout".into())
                    },
                    did,
                }
            }
            Cmd::KeepAlive => match self.zk_call(c, |z| z.ping())? {
                None => expired("ping"),
                Some(r) => Answer {
                    reply: Ok(Reply::Alive(r.is_ok())),
                    did: format!(
                        "ping on {who}'s session -> {}",
                        r.map(|_| "pong".to_string())
                            .unwrap_or_else(|e| zk::code_name(e).into())
                    ),
                },
            },
            Cmd::Create { round } => {
                // Curator's protected mode: this acquisition's id in the
                // name (Curator draws a UUID; one per client and round is
                // as unique on this server, and keeps the report stable).
                let guid = format!("c{}-{}", c + 1, round + 1);
                let prefix = format!("_c_{guid}-lock-");
                let path = format!("{ZK_PARENT}/{prefix}");
                let found = self.zk_call(c, |z| z.children(ZK_PARENT))?;
                let existing = match &found {
                    Some(Ok(ch)) => ch.iter().find(|x| x.starts_with(&prefix)).cloned(),
                    _ => None,
                };
                let res = match existing {
                    Some(name) => Some(Ok((format!("{ZK_PARENT}/{name}"), None, true))),
                    None => self
                        .zk_call(c, |z| z.create(&path, b"", zk::EPHEMERAL_SEQUENTIAL))?
                        .map(|r| r.map(|(p, s)| (p, Some(s), false))),
                };
                match res {
                    None => expired("create"),
                    Some(Err(code)) => Answer {
                        reply: Err(format!("create: {}", zk::code_name(code))),
                        did: format!(
                            "create {path} EPHEMERAL_SEQUENTIAL -> {}",
                            zk::code_name(code)
                        ),
                    },
                    Some(Ok((p, stat, found))) => {
                        // Model revisions are bound to real nodes in creation
                        // order: a new node must come after every node
                        // created before it, by sequence number and by
                        // czxid (the real fencing token).
                        let model_rev = w
                            .coord
                            .entries
                            .iter()
                            .find(|e| e.owner == c && e.round == round)
                            .map(|e| e.rev)
                            .unwrap_or(w.coord.rev + 1);
                        let czxid = stat.map(|s| s.czxid).unwrap_or(0);
                        let reply = if found {
                            self.zk_rev(&p).map(Reply::Token)
                        } else {
                            let seq = seq_of(&p).unwrap_or(-1);
                            let late = self.entries.values().find(|e| {
                                seq_of(&e.name).unwrap_or(-1) >= seq || e.real_rev >= czxid
                            });
                            match late {
                                Some(e) => Err(format!(
                                    "{p} (czxid 0x{czxid:x}) is not after {} (czxid 0x{:x})",
                                    e.name, e.real_rev
                                )),
                                None => {
                                    self.entries.insert(
                                        model_rev,
                                        RealEntry {
                                            name: p.clone(),
                                            real_rev: czxid,
                                        },
                                    );
                                    Ok(Reply::Token(model_rev))
                                }
                            }
                        };
                        Answer {
                            reply,
                            did: if found {
                                format!(
                                    "protected create: {p} already exists for this acquisition (found among the children)"
                                )
                            } else {
                                format!(
                                    "create {path} EPHEMERAL_SEQUENTIAL -> {p}, czxid 0x{czxid:x}"
                                )
                            },
                        }
                    }
                }
            }
            Cmd::Order { rev } => match self.zk_call(c, |z| z.children(ZK_PARENT))? {
                None => Answer {
                    reply: Err("SESSIONEXPIRED".into()),
                    did: format!("getChildren {ZK_PARENT}: {who}'s session has expired"),
                },
                Some(Err(code)) => Answer {
                    reply: Err(zk::code_name(code).into()),
                    did: format!("getChildren {ZK_PARENT} -> {}", zk::code_name(code)),
                },
                Some(Ok(ch)) => Answer {
                    reply: self.zk_place(&ch, rev),
                    did: format!("getChildren {ZK_PARENT} -> [{}]", ch.join(", ")),
                },
            },
            Cmd::Watch { rev } => {
                let Some(e) = self.entries.get(&rev).cloned() else {
                    return Ok(Answer {
                        reply: Err(format!("no real node for #{rev}")),
                        did: "nothing to watch".into(),
                    });
                };
                match self.zk_call(c, |z| z.exists(&e.name, true))? {
                    None => Answer {
                        reply: Err("SESSIONEXPIRED".into()),
                        did: format!("exists {} (watch): {who}'s session has expired", e.name),
                    },
                    Some(Err(code)) => Answer {
                        reply: Err(zk::code_name(code).into()),
                        did: format!("exists {} (watch) -> {}", e.name, zk::code_name(code)),
                    },
                    Some(Ok(stat)) => {
                        if stat.is_some() {
                            self.watches.entry(c).or_default().push(RealWatch::Zk {
                                path: e.name.clone(),
                            });
                        }
                        Answer {
                            reply: Ok(Reply::Exists(stat.is_some())),
                            did: format!(
                                "exists {} with a watch -> {}",
                                e.name,
                                match stat {
                                    Some(s) => format!(
                                        "czxid 0x{:x}, ephemeral owner 0x{:x}",
                                        s.czxid, s.ephemeral_owner
                                    ),
                                    None => "no node".into(),
                                }
                            ),
                        }
                    }
                }
            }
            Cmd::Remove { rev } => {
                let path = self.entries.get(&rev).map(|e| e.name.clone());
                let del = match &path {
                    Some(p) => self.zk_call(c, |z| z.delete(p))?,
                    None => Some(Err(zk::NONODE)),
                };
                let closed = self.zk_call(c, |z| z.close_session())?;
                self.sessions[c as usize] = None;
                let (reply, what) = match del {
                    None => (
                        Reply::Int(0),
                        "its session has expired: nothing to delete".to_string(),
                    ),
                    Some(Ok(())) => (Reply::Int(1), "deleted".to_string()),
                    Some(Err(code)) => (Reply::Int(0), zk::code_name(code).to_string()),
                };
                Answer {
                    reply: Ok(reply),
                    did: format!(
                        "delete {} -> {what}; closeSession -> {}",
                        path.unwrap_or_else(|| "(no node)".into()),
                        match closed {
                            Some(Ok(())) => "closed",
                            _ => "already expired",
                        }
                    ),
                }
            }
            other => Answer {
                reply: Err(format!("{} has no ZooKeeper mapping", other.text())),
                did: "nothing sent".into(),
            },
        };
        Ok(ans)
    }

    /// Reads the watch event the model delivers to client `c`.
    fn watch_event(
        &mut self,
        c: u8,
        did: &mut Vec<String>,
    ) -> Result<Result<Reply, String>, Error> {
        let wait = self.slack().max(Duration::from_millis(200));
        let Some(list) = self.watches.get_mut(&c) else {
            did.push("no real watch is open for this client".into());
            return Ok(Err("no watch event".into()));
        };
        if list.is_empty() {
            did.push("no real watch is open for this client".into());
            return Ok(Err("no watch event".into()));
        }
        let watch = list.remove(0);
        match watch {
            RealWatch::Etcd { key, mut stream } => {
                let deadline = Instant::now() + wait;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let msg = stream
                        .next(left)
                        .map_err(|e| env("the etcd watch stream broke", e))?;
                    let Some(v) = msg else {
                        did.push(format!(
                            "no event on the watch of {key} within {} ms",
                            wait.as_millis()
                        ));
                        return Ok(Err("no watch event".into()));
                    };
                    let Some(events) = v["events"].as_array() else {
                        continue;
                    };
                    for e in events {
                        let kv = Kv::from_json(&e["kv"]);
                        let kind = e["type"].as_str().unwrap_or("PUT");
                        did.push(format!(
                            "watch event on {}: {kind} at mod_revision {}",
                            kv.key, kv.mod_revision
                        ));
                        if kind == "DELETE" && kv.key == key {
                            let rev = self
                                .entries
                                .iter()
                                .find(|(_, e)| e.name == key)
                                .map(|(r, _)| *r);
                            return Ok(rev
                                .map(Reply::Deleted)
                                .ok_or_else(|| format!("DELETE of unknown key {key}")));
                        }
                    }
                }
            }
            RealWatch::Zk { path } => {
                let Some(Session::Zk {
                    conn: Some(conn), ..
                }) = &mut self.sessions[c as usize]
                else {
                    did.push("the watcher's connection is gone".into());
                    return Ok(Err("no watch event".into()));
                };
                let ev = conn
                    .next_event(wait)
                    .map_err(|e| env("ZooKeeper watch", e))?;
                match ev {
                    None => {
                        did.push(format!(
                            "no event for {path} within {} ms",
                            wait.as_millis()
                        ));
                        Ok(Err("no watch event".into()))
                    }
                    Some(e) => {
                        did.push(format!(
                            "watch notification on the watcher's session: {}",
                            e.text()
                        ));
                        if e.kind == zk::NODE_DELETED {
                            Ok(self.zk_rev(&e.path).map(Reply::Deleted))
                        } else {
                            Ok(Err(e.text()))
                        }
                    }
                }
            }
        }
    }

    /// Records the grants and writes the verdict needs.
    fn track(&mut self, before: &World, after: &World, a: &Action, index: usize) {
        if let Action::Deliver { msg } = *a
            && let (Node::Service, Node::Client(c)) = (msg.from, msg.to)
        {
            let ci = c as usize;
            if !before.clients[ci].holds() && after.clients[ci].holds() {
                // The answer it entered on was read (and removed from the
                // pending list) in `act`; find it again by its text.
                let real = self.last_answer.take();
                self.ev.grants[ci] = real;
            }
        }
        for (c, (b, n)) in before.clients.iter().zip(&after.clients).enumerate() {
            if b.phase == Phase::Idle && n.phase != Phase::Idle {
                self.ev.grants[c] = None;
            }
        }
        if after.resource.accepted > before.resource.accepted
            && let Action::Step { client } = *a
        {
            let ok = self.ev.grants[client as usize]
                .as_ref()
                .is_some_and(|g| g.1);
            self.ev.writes.push((index, client, ok));
        }
    }

    /// The owner of a lease or session id, as the report names it.
    fn owner_name(&self, w: &World, id: i64) -> String {
        self.owners
            .get(&id)
            .map(|c| w.client_name(*c))
            .unwrap_or_else(|| format!("?{id:x}"))
    }

    /// Reads the real lock entries (and, on etcd, every lease's time left)
    /// and compares them with the model's state.
    fn observe(&mut self, st: &CState, unsure: &mut Vec<String>) -> Result<Vec<Check>, Error> {
        let w = &st.world;
        let slack = self.slack();
        let ttl = Rational::integer(self.m.params.ttl);
        // Per client: model time its session has left (negative: overdue),
        // and whether that is within the replay's uncertainty.
        let left: Vec<Option<(Rational, bool)>> = w
            .coord
            .sessions
            .iter()
            .map(|s| {
                s.and_then(|s| s.clock()).map(|clk| {
                    let l = ttl - st.read(clk, st.now);
                    // Alive in the model: the server cannot have expired it
                    // early but for the driver's lateness; gone: the server
                    // may still be about to.
                    let need = if l >= Rational::ZERO {
                        self.time.early_slack(self.max_late)
                    } else {
                        slack
                    };
                    (l, !self.time.reproducible(l, need))
                })
            })
            .collect();
        let close = left.iter().flatten().any(|(_, u)| *u);
        for (c, l) in left.iter().enumerate() {
            if let Some((l, true)) = l {
                unsure.push(format!(
                    "{}'s session is {} of model time ({:.1} ms real) from its expiry, within the replay's uncertainty ({:.0} ms after the model's expiry, {:.1} ms before): the server may have expired it or not",
                    w.client_name(c as u8),
                    show_rational(*l),
                    self.time.real_ms(*l),
                    slack.as_secs_f64() * 1e3,
                    self.time.early_slack(self.max_late).as_secs_f64() * 1e3
                ));
            }
        }
        let model: Vec<String> = w
            .coord
            .entries
            .iter()
            .map(|e| format!("{} #{}", w.client_name(e.owner), e.rev))
            .collect();
        let model_text = if model.is_empty() {
            "-".to_string()
        } else {
            model.join(", ")
        };
        let mut checks = Vec::new();
        match self.system {
            System::Etcd => {
                let (kvs, at) = self
                    .etcd
                    .range_prefix(ETCD_PREFIX)
                    .map_err(|e| env("cannot read etcd's lock keys", e))?;
                let mut real = Vec::new();
                let mut shown = Vec::new();
                for k in &kvs {
                    let rev = self
                        .etcd_rev(k.create_revision)
                        .map(|r| r.to_string())
                        .unwrap_or_else(|_| "?".into());
                    real.push(format!("{} #{rev}", self.owner_name(w, k.lease)));
                    shown.push(format!(
                        "{} #{rev} (create_revision {})",
                        self.owner_name(w, k.lease),
                        k.create_revision
                    ));
                }
                checks.push(Check {
                    text: format!(
                        "etcd keys: model {model_text} | real {} at revision {at}",
                        if shown.is_empty() {
                            "-".to_string()
                        } else {
                            shown.join(", ")
                        }
                    ),
                    ok: real == model,
                    unsure: close,
                });
                for (c, lc) in left.iter().enumerate() {
                    let Some(id) = self.last_lease[c] else {
                        continue;
                    };
                    let secs = self
                        .etcd
                        .time_to_live(id)
                        .map_err(|e| env("cannot read a lease's TTL", e))?;
                    let (m, ok) = match (*lc, w.coord.sessions[c]) {
                        (Some((l, _)), _) => (
                            format!("alive, {} left", show_rational(l)),
                            self.time.etcd_ttl_left_matches(l, secs, slack),
                        ),
                        // Its heartbeat runs unseen, kept up by the driver.
                        (None, Some(ModelSession::Kept)) => {
                            ("kept alive by its heartbeat".to_string(), secs > 0)
                        }
                        // Its heartbeat stopped, its release on the way.
                        (None, Some(ModelSession::Closing)) => {
                            ("alive until its release lands".to_string(), secs > 0)
                        }
                        (None, _) => ("gone".to_string(), secs < 0),
                    };
                    let real = if secs < 0 {
                        "gone (TimeToLive: -1)".to_string()
                    } else {
                        format!("TimeToLive {secs} s")
                    };
                    checks.push(Check {
                        text: format!(
                            "{}'s lease {id:x}: model {m} | real {real}",
                            w.client_name(c as u8)
                        ),
                        ok,
                        unsure: lc.is_some_and(|(_, u)| u),
                    });
                }
            }
            _ => {
                let mut observer = self.observer.take();
                let Some(obs) = observer.as_mut() else {
                    return Ok(checks);
                };
                let children = obs
                    .children(ZK_PARENT)
                    .map_err(|e| env("cannot list the lock's nodes", e))?;
                let mut nodes = Vec::new();
                for ch in &children {
                    let p = format!("{ZK_PARENT}/{ch}");
                    let st = obs
                        .exists(&p, false)
                        .map_err(|e| env("cannot read a lock node", e))?;
                    if let Some(st) = st {
                        nodes.push((ch.clone(), st));
                    }
                }
                let mut real = Vec::new();
                let mut shown = Vec::new();
                for (ch, st) in &nodes {
                    let rev = self
                        .zk_rev(ch)
                        .map(|r| r.to_string())
                        .unwrap_or_else(|_| "?".into());
                    let owner = self.owner_name(w, st.ephemeral_owner);
                    real.push(format!("{owner} #{rev}"));
                    shown.push(format!("{owner} #{rev} ({ch}, czxid 0x{:x})", st.czxid));
                }
                self.observer = observer;
                checks.push(Check {
                    text: format!(
                        "{ZK_PARENT}: model {model_text} | real {}",
                        if shown.is_empty() {
                            "-".to_string()
                        } else {
                            shown.join(", ")
                        }
                    ),
                    ok: real == model,
                    unsure: close,
                });
            }
        }
        Ok(checks)
    }

    /// Whether the violation happened for real, stated from real answers
    /// and readings.
    fn verdict(&self, inv: Invariant, w: &World, finals: &[Check]) -> Verdict {
        let mut lines = Vec::new();
        let reproduced = match inv {
            Invariant::MutualExclusion => {
                let mut n = 0;
                let mut all = true;
                for (i, cl) in w.clients.iter().enumerate() {
                    if !cl.holds() {
                        continue;
                    }
                    n += 1;
                    let g = &self.ev.grants[i];
                    all &= g.as_ref().is_some_and(|g| g.1);
                    lines.push(format!(
                        "{}{} believes it holds the lock: it entered on the real answer {}",
                        w.client_name(i as u8),
                        if cl.paused.is_some() {
                            " (held by the driver, i.e. paused)"
                        } else {
                            ""
                        },
                        match g {
                            Some((text, true)) if text.contains("is GONE") => format!(
                                "\"{text}\" (its own key is gone: only a client without the post-wait re-check, etcd 3.4, takes the lock on it)"
                            ),
                            Some((text, true)) => format!("\"{text}\" (a grant)"),
                            Some((text, false)) => format!("\"{text}\" (NOT a grant)"),
                            None => "(none recorded)".into(),
                        }
                    ));
                }
                n >= 2 && all
            }
            Invariant::NoLostUpdate | Invariant::NoOversell => {
                lines.push(if inv == Invariant::NoOversell {
                    format!(
                        "the resource is the driver's (the model's): {} units taken from a stock of {}",
                        w.resource.value, self.m.params.stock
                    )
                } else {
                    format!(
                        "the resource is the driver's (the model's): it accepted {} writes and holds {}",
                        w.resource.accepted, w.resource.value
                    )
                });
                let mut all = !self.ev.writes.is_empty();
                for (step, c, ok) in &self.ev.writes {
                    all &= ok;
                    lines.push(format!(
                        "step {step}: {} wrote while holding a lock real {} {}",
                        w.client_name(*c),
                        self.system.name(),
                        if *ok {
                            "had granted it"
                        } else {
                            "had NOT granted it"
                        }
                    ));
                }
                all
            }
            Invariant::TokenMonotonic => {
                let mut regressed = None;
                for pair in self.ev.tokens.windows(2) {
                    if pair[1].1 <= pair[0].1 && regressed.is_none() {
                        regressed = Some(format!(
                            "{} got token {} after {} had got {}",
                            w.client_name(pair[1].0),
                            pair[1].1,
                            w.client_name(pair[0].0),
                            pair[0].1
                        ));
                    }
                }
                match regressed {
                    Some(s) => {
                        lines.push(s);
                        true
                    }
                    None => {
                        lines.push(format!(
                            "real {} never granted a token that went backwards",
                            self.system.name()
                        ));
                        false
                    }
                }
            }
            Invariant::DetectedWithin => {
                lines.push(
                    "the reconciler is the driver's (the model's): it flagged the damage too late"
                        .into(),
                );
                false
            }
            Invariant::WithinValidity => {
                lines.push(format!(
                    "{} (a consensus lock tells its client no validity to act within)",
                    inv.explain(self.m, w)
                ));
                false
            }
            Invariant::NoDuplicateEffect => {
                lines.push(
                    "the resource is the driver's (the model's): a write delivered twice took effect twice"
                        .into(),
                );
                false
            }
            Invariant::Ownership | Invariant::NoOrphanLock => {
                lines.push(format!(
                    "the replay on {} has no real observation for {}; the model says: {}",
                    self.system.name(),
                    inv.name(),
                    inv.explain(self.m, w)
                ));
                false
            }
        };
        if !finals.is_empty() {
            let state: Vec<String> = finals.iter().map(|c| c.text.clone()).collect();
            lines.push(format!("real state at the end: {}", state.join("; ")));
        }
        Verdict { reproduced, lines }
    }
}

fn kv_list(kvs: &[Kv]) -> String {
    if kvs.is_empty() {
        return "none".into();
    }
    kvs.iter()
        .map(|k| {
            format!(
                "{} (create_revision {}, lease {:x})",
                k.key, k.create_revision, k.lease
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

trait ToClient {
    fn to_client(&self) -> u8;
}

impl ToClient for Msg {
    fn to_client(&self) -> u8 {
        match self.to {
            Node::Client(c) => c,
            _ => u8::MAX,
        }
    }
}
