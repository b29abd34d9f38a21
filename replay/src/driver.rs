//! The replay driver: walks a validated trace through the model again and,
//! for every step, does the real thing to real Redis servers.
//!
//! * A request is sent when the trace delivers it, on that client's own
//!   connection to that server (one per client, server and channel), and
//!   the real reply is compared with the reply the model's `execute`
//!   computes in the same state. A request the sender abandoned still runs
//!   (it is delivered); a lost request is never sent; a lost reply was read
//!   by the driver and is simply never shown to the modelled client; a
//!   delayed message waits in the driver until the trace delivers it.
//! * Pauses, crashes, slow work, watchdog timers and client clock jumps
//!   only change what the driver sends next, which the model says: the
//!   driver *is* every client.
//! * `Tick` lets real time pass: one tick is `tick_ms` real milliseconds.
//! * A server clock jump rewrites that server's clock-shift file; a restart
//!   is `kill -9` and a fresh empty start; a failover of the replicated
//!   pair follows the recipe that really loses the unreplicated writes.
//! * After every step that can change a server, the driver reads the lock
//!   (`GET`, `PTTL`, and the token counter for fenced protocols) on each
//!   serving primary and compares it with the model's state.

use crate::Error;
use crate::coordsrv::CoordOptions;
use crate::report::{Check, Report, Row, ServerLine, Timing, Verdict};
use crate::resp::{Conn, Value};
use crate::servers::{Cluster, ServerOptions, ServerSpec};
use crate::timemap::{System, TimeMap};
use locklab_models::action::Action;
use locklab_models::invariants::Invariant;
use locklab_models::protocols::Service;
use locklab_models::world::{
    Body, Chan, Cmd, Log, Msg, Node, Phase, Reply, Role, Ticks, Ttl, World,
};
use locklab_models::{LockModel, redis, trace};
use locklab_traces::Trace;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::{Duration, Instant};

/// Real milliseconds per model tick unless told otherwise. Long enough that
/// a step (well under a millisecond) and a server restart (~25 ms) stay far
/// inside the half-tick safety margin; short enough that a 5-server
/// Redlock trace with a 7-tick pause replays in under 2 s.
pub const DEFAULT_TICK_MS: u64 = 200;
/// Shortest tick the driver accepts: below it, scheduling noise eats the margin.
pub const MIN_TICK_MS: u64 = 20;
/// Longest tick the driver accepts (one minute).
pub const MAX_TICK_MS: u64 = 60_000;

/// The protocols whose lock service is Redis (the only ones replay drives).
pub const REDIS_PROTOCOLS: &[&str] = &[
    "setnx-expire",
    "naive-del",
    "get-del",
    "lua-release",
    "watchdog",
    "replicated",
    "redlock",
    "fencing-redis",
];

/// The compare-and-delete release (semantics.md §1, real-redis.md §2).
const UNLOCK: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
/// The checked renewal: compare-and-PEXPIRE (Redisson's watchdog).
const EXTEND: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;
/// The fenced acquire: `SET NX PX`, and on success `INCR` the token.
const FENCED: &str = r#"if redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2]) then return redis.call("incr",KEYS[2]) else return false end"#;
/// The lock key and the fencing-token counter.
const LOCK_KEY: &str = "lock";
const TOKEN_KEY: &str = "token";

/// How to replay.
#[derive(Clone, Debug)]
pub struct Options {
    /// Real milliseconds per model tick; `None`: the real system's default
    /// ([`System::default_tick_ms`]).
    pub tick_ms: Option<u64>,
    pub servers: ServerOptions,
    /// etcd and ZooKeeper, for the consensus protocols.
    pub coord: CoordOptions,
    /// Replay only steps 1..=N (a prefix: conformance only, the violation
    /// is not judged).
    pub until: Option<usize>,
}

/// The real system a protocol's lock service is replayed on.
pub fn system_of(protocol: &str) -> Option<System> {
    if REDIS_PROTOCOLS.contains(&protocol) {
        Some(System::Redis)
    } else {
        match protocol {
            "etcd" | "fencing" => Some(System::Etcd),
            "zookeeper" => Some(System::ZooKeeper),
            _ => None,
        }
    }
}

/// A TTL of `ttl` ticks, in real milliseconds.
///
/// The model keeps a key while `now == expire_at` and drops it one tick
/// later; Redis keeps a key while its clock is at or before the deadline.
/// Every step of model time `t` runs a little after real time
/// `t × tick_ms` (the driver's lateness, checked to stay below 0.4 tick),
/// so a key set at tick `s` with `PX ttl × tick_ms` would expire at the very
/// moment tick `s + ttl` is replayed: a coin toss. Adding half a tick puts
/// the real expiry strictly between ticks `s + ttl` (alive, as the model
/// says) and `s + ttl + 1` (gone), with 0.1 tick to spare on either side.
pub fn px(ttl: Ticks, tick_ms: u64) -> u64 {
    TimeMap { tick_ms }.redis_px(ttl)
}

/// The real command for a model command, and how to show it. Only Redis
/// commands have one: traces of the consensus-service protocols are refused
/// before any step runs.
fn command(cmd: Cmd, tick_ms: u64) -> Result<(Vec<String>, String), Error> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let (args, shown) = match cmd {
        Cmd::SetNxPx { val, ttl } => {
            let a = s(&[
                "SET",
                LOCK_KEY,
                &val.text(),
                "NX",
                "PX",
                &px(ttl, tick_ms).to_string(),
            ]);
            let shown = a.join(" ");
            (a, shown)
        }
        Cmd::SetNx { val } => {
            let a = s(&["SETNX", LOCK_KEY, &val.text()]);
            let shown = a.join(" ");
            (a, shown)
        }
        // EXPIRE counts seconds and a tick is shorter than one: the same
        // command in milliseconds (same replies: 1 if the key exists).
        Cmd::Expire { ttl } | Cmd::PExpire { ttl } => {
            let a = s(&["PEXPIRE", LOCK_KEY, &px(ttl, tick_ms).to_string()]);
            let shown = a.join(" ");
            (a, shown)
        }
        Cmd::Get => (s(&["GET", LOCK_KEY]), format!("GET {LOCK_KEY}")),
        Cmd::Del => (s(&["DEL", LOCK_KEY]), format!("DEL {LOCK_KEY}")),
        Cmd::Cad { val } => (
            s(&["EVAL", UNLOCK, "1", LOCK_KEY, &val.text()]),
            format!("EVAL <compare-and-delete> 1 {LOCK_KEY} {}", val.text()),
        ),
        Cmd::Renew { val, ttl } => {
            let ms = px(ttl, tick_ms).to_string();
            (
                s(&["EVAL", EXTEND, "1", LOCK_KEY, &val.text(), &ms]),
                format!(
                    "EVAL <compare-and-PEXPIRE> 1 {LOCK_KEY} {} {ms}",
                    val.text()
                ),
            )
        }
        Cmd::FencedSet { val, ttl } => {
            let ms = px(ttl, tick_ms).to_string();
            (
                s(&["EVAL", FENCED, "2", LOCK_KEY, TOKEN_KEY, &val.text(), &ms]),
                format!(
                    "EVAL <SET NX PX + INCR> 2 {LOCK_KEY} {TOKEN_KEY} {} {ms}",
                    val.text()
                ),
            )
        }
        Cmd::Open
        | Cmd::Lock { .. }
        | Cmd::Create { .. }
        | Cmd::Txn { .. }
        | Cmd::Order { .. }
        | Cmd::Watch { .. }
        | Cmd::KeepAlive
        | Cmd::Remove { .. } => {
            return Err(Error::Input(format!(
                "{} is a consensus-service request, not a Redis command",
                cmd.text()
            )));
        }
    };
    Ok((args, shown))
}

/// Whether real Redis replied what the model predicted.
pub fn agrees(model: Reply, real: &Value) -> bool {
    match (model, real) {
        (Reply::Ok, Value::Simple(s)) => s == "OK",
        (Reply::Nil, Value::Bulk(None)) => true,
        (Reply::Int(i), Value::Int(r)) => i as i64 == *r,
        (Reply::Val(v), Value::Bulk(Some(s))) => v.text() == *s,
        (Reply::Token(t), Value::Int(r)) => t as i64 == *r,
        _ => false,
    }
}

/// The lock value an acquisition command tries to set.
fn acquires(cmd: Cmd) -> Option<String> {
    match cmd {
        Cmd::SetNxPx { val, .. } | Cmd::SetNx { val } | Cmd::FencedSet { val, .. } => {
            Some(val.text())
        }
        _ => None,
    }
}

/// Whether a real reply to an acquisition command granted the lock.
fn granted(real: &Value) -> bool {
    match real {
        Value::Simple(s) => s == "OK",
        Value::Int(i) => *i >= 1,
        _ => false,
    }
}

/// What a pre-pass over the trace decides before any server starts.
struct Plan {
    /// Servers whose clock jumps (they run under the clock shim).
    shimmed: Vec<bool>,
    /// The replicated pair: the step (0-based) before which the replica must
    /// be cut off, because the model's failover loses every write from that
    /// step on.
    cut_before: Option<usize>,
    /// The trace uses fencing tokens (the `token` counter is observed too).
    tokens: bool,
}

fn plan(m: &LockModel, path: &[Action]) -> Plan {
    let mut w = m.init();
    let n = w.redis.len();
    let mut shimmed = vec![false; n];
    let mut tokens = false;
    let mut cut_before = None;
    // For each server, the step that wrote each entry still in its
    // replication backlog. The backlog is a FIFO and a failover loses
    // exactly what is in it, so the oldest entry's step is where the
    // replica must stop receiving.
    let mut origin: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, a) in path.iter().enumerate() {
        match *a {
            Action::ClockJump {
                node: Node::Redis(s),
                ..
            } => shimmed[s as usize] = true,
            Action::Deliver { msg } if matches!(msg.body, Body::Req(Cmd::FencedSet { .. })) => {
                tokens = true
            }
            Action::Failover { server } if m.proto.service() == Service::Replicated => {
                cut_before = origin[server as usize].first().copied();
            }
            _ => {}
        }
        m.apply(&mut w, a, &mut Log::off());
        for (s, o) in origin.iter_mut().enumerate() {
            if matches!(a, Action::Replicate { server } if *server as usize == s) && !o.is_empty() {
                o.remove(0);
            }
            let len = w.redis[s].backlog.len();
            if len < o.len() {
                // Emptied (a restart, a resync): whatever is left is new.
                o.clear();
            }
            o.resize(len, i);
        }
    }
    Plan {
        shimmed,
        cut_before,
        tokens,
    }
}

/// The replicated pair's replica.
fn replica(w: &World) -> Result<usize, Error> {
    w.redis
        .iter()
        .position(|n| n.role == Role::Replica && !n.is_dead())
        .ok_or_else(|| Error::Input("the trace fails over a primary that has no replica".into()))
}

/// A request the driver sent and what came back.
struct Exchange {
    model: Reply,
    real: Value,
}

/// One read of a server's lock state.
struct Observed {
    lock: Option<String>,
    pttl: i64,
    token: Option<i64>,
}

/// A real reply to an acquisition command.
#[derive(Clone)]
struct Grant {
    server: u8,
    /// The lock value it tried to set.
    val: String,
    reply: String,
    granted: bool,
}

/// Real observations the verdict is stated from.
#[derive(Default)]
struct Evidence {
    /// Per client: real replies to the acquisition commands of its current
    /// attempt.
    grants: Vec<Vec<Grant>>,
    /// Accepted resource writes: (step, writer, its lock was really granted).
    writes: Vec<(usize, u8, bool)>,
    /// The first command that touched another client's lock: (sentence,
    /// reproduced).
    foreign: Option<(String, bool)>,
    /// Highest real token seen so far, and the first regression.
    max_token: Option<i64>,
    token_regressed: Option<String>,
}

struct Driver<'a> {
    m: &'a LockModel,
    tick_ms: u64,
    cluster: Cluster,
    t0: Instant,
    conns: BTreeMap<(u8, u8, Chan), Conn>,
    observers: BTreeMap<usize, Conn>,
    tokens: bool,
    max_late: Duration,
    ev: Evidence,
}

/// Replays `t` against real redis-server processes started for it.
pub fn replay(t: &Trace, opts: &Options) -> Result<Report, Error> {
    if !cfg!(target_os = "linux") {
        return Err(Error::Env(
            "locklab replay runs on Linux only: it stops servers with PR_SET_PDEATHSIG, checks port ownership in /proc and preloads a glibc clock shim".into(),
        ));
    }
    if let Some(tick) = opts.tick_ms
        && !(MIN_TICK_MS..=MAX_TICK_MS).contains(&tick)
    {
        return Err(Error::Input(format!(
            "--tick-ms {tick}: a tick must be {MIN_TICK_MS} to {MAX_TICK_MS} real milliseconds"
        )));
    }
    let (m, _) = trace::validate(t).map_err(|e| {
        Error::Input(format!(
            "the {} trace does not replay through the model: {e}",
            t.invariant
        ))
    })?;
    let Some(system) = system_of(m.proto.name()) else {
        return Err(Error::Input(format!(
            "protocol {} has no real system to replay on; replay supports {} (Redis), etcd and fencing (etcd), zookeeper (ZooKeeper)",
            m.proto.name(),
            REDIS_PROTOCOLS.join(", ")
        )));
    };
    let inv = Invariant::from_name(&t.invariant)
        .ok_or_else(|| Error::Input(format!("unknown invariant {:?}", t.invariant)))?;
    let full = trace::actions(t).map_err(|e| Error::Input(e.to_string()))?;
    let cut = match opts.until {
        Some(0) => return Err(Error::Input("--until 0: replay at least one step".into())),
        Some(n) if n > full.len() => {
            return Err(Error::Input(format!(
                "--until {n}: the trace has only {} steps",
                full.len()
            )));
        }
        Some(n) => n,
        None => full.len(),
    };
    let path = &full[..cut];
    let tick_ms = opts.tick_ms.unwrap_or(system.default_tick_ms());
    let mut report = if system == System::Redis {
        replay_redis(t, &m, inv, path, tick_ms, opts)?
    } else {
        crate::coord_driver::replay(t, &m, inv, path, system, tick_ms, &opts.coord)?
    };
    if cut < full.len() {
        report.until = Some(cut);
        report.verdict.reproduced = false;
        report.verdict.lines.insert(
            0,
            format!(
                "not judged: --until {cut} replays steps 1 to {cut} of {}; the model breaks {} at step {}",
                full.len(),
                t.invariant,
                t.violation_step
            ),
        );
    }
    Ok(report)
}

fn replay_redis(
    t: &Trace,
    m: &LockModel,
    inv: Invariant,
    path: &[Action],
    tick_ms: u64,
    opts: &Options,
) -> Result<Report, Error> {
    let plan = plan(m, path);
    let w0 = m.init();
    let replicated = m.proto.service() == Service::Replicated;
    let specs: Vec<ServerSpec> = (0..w0.redis.len())
        .map(|s| ServerSpec {
            name: w0.server_name(s as u8),
            replica_of: (replicated && w0.redis[s].role == Role::Replica)
                .then_some(w0.primary() as usize),
            shimmed: plan.shimmed[s],
        })
        .collect();

    let begin = Instant::now();
    let cluster = Cluster::start(specs.clone(), opts.servers.clone())?;
    let start_ms = begin.elapsed().as_secs_f64() * 1e3;
    let mut d = Driver {
        m,
        tick_ms,
        cluster,
        t0: Instant::now(),
        conns: BTreeMap::new(),
        observers: BTreeMap::new(),
        tokens: plan.tokens,
        max_late: Duration::ZERO,
        ev: Evidence {
            grants: vec![Vec::new(); w0.clients.len()],
            ..Evidence::default()
        },
    };
    let run_begin = Instant::now();
    let (rows, w) = d.run(path, &plan)?;
    let finals = d.observe_all(&w)?;
    let replay_ms = run_begin.elapsed().as_secs_f64() * 1e3;
    let verdict = d.verdict(inv, &w, &finals);
    let servers = d
        .cluster
        .servers
        .iter()
        .zip(&specs)
        .map(|(s, first)| ServerLine {
            name: s.spec.name.clone(),
            port: s.port,
            pids: s.pids.clone(),
            shimmed: s.spec.shimmed,
            // The role it started with; a failover promotes the replica.
            replica_of: first.replica_of.map(|p| w0.server_name(p as u8)),
            promoted: first.replica_of.is_some() && s.spec.replica_of.is_none(),
        })
        .collect();
    let max_late_ms = d.max_late.as_secs_f64() * 1e3;
    let stop_begin = Instant::now();
    drop(d.conns);
    drop(d.observers);
    d.cluster.shutdown();
    let stop_ms = stop_begin.elapsed().as_secs_f64() * 1e3;
    let survivors = d.cluster.survivors();
    Ok(Report {
        protocol: m.proto.name().to_string(),
        system: System::Redis.name().to_string(),
        time_line: TimeMap { tick_ms }.describe(System::Redis, m.params.ttl),
        invariant: t.invariant.clone(),
        violation: t.violation.clone(),
        violation_step: t.violation_step,
        tick_ms,
        servers,
        rows,
        finals: finals.into_iter().map(|(_, c)| c).collect(),
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
    })
}

impl Driver<'_> {
    fn run(&mut self, path: &[Action], plan: &Plan) -> Result<(Vec<Row>, World), Error> {
        let m = self.m;
        let mut w = m.init();
        let mut now: u64 = 0;
        let mut rows = Vec::with_capacity(path.len());
        self.t0 = Instant::now();
        for (i, a) in path.iter().enumerate() {
            let index = i + 1;
            self.wait_until(now, index)?;
            let mut did = Vec::new();
            if plan.cut_before == Some(i) {
                did.push(self.cut_replica(&w)?);
            }
            let actor = m.actor(&w, a);
            let before = w.clone();
            let exchange = self.act(&before, a, now, index, &mut did)?;
            // Taken after the real action, so a tick shows the time it reached.
            let at_ms = self.t0.elapsed().as_millis() as u64;
            let mut log = Log::on();
            m.apply(&mut w, a, &mut log);
            now += a.ticks();
            let label = trace::label(&log.take());
            self.reconcile(&w, &mut did)?;
            self.track(&before, &w, a, index);
            let checks = self.observe_after(&w, a)?;
            rows.push(Row {
                index,
                time: now,
                at_ms,
                actor,
                label,
                did,
                model_reply: exchange.as_ref().map(|x| x.model.text()),
                real_reply: exchange.as_ref().map(|x| x.real.text()),
                reply_ok: exchange.as_ref().map(|x| agrees(x.model, &x.real)),
                checks,
            });
        }
        Ok((rows, w))
    }

    /// Waits until model time `ticks` in real time; fails if the driver is
    /// already so late that real expiries could fall on the wrong side of a
    /// tick (see [`px`]).
    fn wait_until(&mut self, ticks: u64, index: usize) -> Result<(), Error> {
        let map = TimeMap {
            tick_ms: self.tick_ms,
        };
        let late = map.wait_until(self.t0, ticks, index)?;
        self.max_late = self.max_late.max(late);
        Ok(())
    }

    fn name(&self, s: usize) -> String {
        self.cluster.servers[s].spec.name.clone()
    }

    /// The real side of one step (before the model applies it).
    fn act(
        &mut self,
        w: &World,
        a: &Action,
        now: u64,
        index: usize,
        did: &mut Vec<String>,
    ) -> Result<Option<Exchange>, Error> {
        let client = |c: u8| w.client_name(c);
        match *a {
            Action::Deliver { msg } => match (msg.from, msg.to, msg.body) {
                (Node::Client(c), Node::Redis(s), Body::Req(cmd)) => {
                    return self.send(w, c, s, msg, cmd, did).map(Some);
                }
                (Node::Redis(_), Node::Client(c), Body::Reply(_)) => did.push(format!(
                    "nothing real: the reply was read when its request ran; now {} handles it",
                    client(c)
                )),
                _ => {}
            },
            Action::Drop { msg } => did.push(match msg.body {
                Body::Req(_) => "the driver drops the request: it is never sent".into(),
                Body::Reply(_) => format!(
                    "the driver read this reply when the request ran and hides it from {}",
                    w.node_name(msg.to)
                ),
            }),
            Action::Delay { msg } => did.push(match msg.body {
                Body::Req(_) => "the driver holds the request until the trace delivers it".into(),
                Body::Reply(_) => format!(
                    "the driver holds the reply away from {} until the trace delivers it",
                    w.node_name(msg.to)
                ),
            }),
            Action::Tick { ticks } => {
                let to = now + ticks as u64;
                self.wait_until(to, index)?;
                did.push(format!(
                    "real time passes {} ms (to {} ms)",
                    ticks as u64 * self.tick_ms,
                    to * self.tick_ms
                ));
            }
            Action::ClockJump {
                node: Node::Redis(s),
                by,
            } => {
                let s = s as usize;
                let ms = self.cluster.servers[s].offset_ms + by as i64 * self.tick_ms as i64;
                self.cluster.set_offset(s, ms)?;
                did.push(format!(
                    "{}'s wall clock now runs {ms:+} ms off (clock-shift file rewritten)",
                    self.name(s)
                ));
            }
            Action::ClockJump {
                node: Node::Client(c),
                ..
            } => did.push(format!(
                "nothing real: {}'s clock is the driver's bookkeeping (the model's)",
                client(c)
            )),
            // The model never offers it: a consensus service's clock is monotonic.
            Action::ClockJump {
                node: Node::Service,
                ..
            } => {}
            Action::Restart { server } => {
                let s = server as usize;
                did.push(self.kill(s));
            }
            Action::Failover { server } => {
                if self.m.proto.service() == Service::Replicated {
                    self.fail_over(w, server as usize, did)?;
                } else {
                    // A Redlock instance's replica that received none of the
                    // lock writes takes over: an empty server on its address.
                    did.push(self.kill(server as usize));
                }
            }
            Action::Replicate { .. } => did.push(
                "nothing to do: real replication is automatic; the replica's copy is checked where it matters (failover)"
                    .into(),
            ),
            Action::Pause { client: c } => did.push(format!(
                "the driver holds {}: it sends nothing for it",
                client(c)
            )),
            Action::Resume { client: c } => {
                did.push(format!("the driver lets {} go on", client(c)))
            }
            Action::Crash { client: c } => did.push(format!(
                "the driver stops running {}'s business thread",
                client(c)
            )),
            Action::Writer { .. } | Action::ResourceRestart | Action::Duplicate { .. } => did.push(
                "nothing to do on Redis: the resource and its unfenced writers are the driver's (the model's)"
                    .into(),
            ),
            Action::Step { .. }
            | Action::Watchdog { .. }
            | Action::Slow { .. }
            | Action::Finish { .. } => {}
        }
        Ok(None)
    }

    /// Sends `cmd` for client `c` to server `s` and reads the real reply.
    fn send(
        &mut self,
        w: &World,
        c: u8,
        s: u8,
        msg: Msg,
        cmd: Cmd,
        did: &mut Vec<String>,
    ) -> Result<Exchange, Error> {
        let si = s as usize;
        let chan = msg.chan;
        // The model's prediction: the same `execute` the transition runs.
        let mut probe = w.clone();
        let model = redis::execute(&mut probe, s, c, cmd);
        let foreign = w.ghost.foreign.is_none() && probe.ghost.foreign.is_some();
        let before = if foreign {
            Some(self.observe(si)?)
        } else {
            None
        };
        let (args, shown) = command(cmd, self.tick_ms)?;
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let name = self.name(si);
        let conn = match self.conns.entry((c, s, chan)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(self.cluster.connect(si)?),
        };
        let real = conn.call(&refs).map_err(|e| {
            Error::Env(format!(
                "{name} did not answer {}'s {shown}: {e}",
                w.client_name(c)
            ))
        })?;
        let chan_text = match chan {
            Chan::Main => "",
            Chan::Watchdog => " watchdog",
        };
        did.push(format!(
            "sent {shown} on {}'s{chan_text} connection to {name}",
            w.client_name(c)
        ));
        // A grant counts only if its client is still waiting for it (an
        // abandoned request's OK reaches nobody).
        if let Some(val) = acquires(cmd).filter(|_| !msg.orphan) {
            self.ev.grants[c as usize].push(Grant {
                server: s,
                val,
                reply: real.text(),
                granted: granted(&real),
            });
        }
        if let (Cmd::FencedSet { .. }, Value::Int(t)) = (cmd, &real) {
            if let Some(max) = self.ev.max_token
                && *t <= max
                && self.ev.token_regressed.is_none()
            {
                self.ev.token_regressed = Some(format!(
                    "{name} really granted {} token {t} after token {max} had already been granted",
                    w.client_name(c)
                ));
            }
            self.ev.max_token = Some(self.ev.max_token.map_or(*t, |m| m.max(*t)));
        }
        if let (Some(b), Some((actor, owner, _))) = (before, probe.ghost.foreign) {
            let owner_val = w.redis[si].lock.map(|e| e.val.text()).unwrap_or_default();
            let removed = real == Value::Int(1);
            let held = b.lock.as_deref() == Some(owner_val.as_str());
            let sentence = format!(
                "just before {}'s {shown}, real {name} held {} (GET); the command returned {}: {} {} {}'s lock for real",
                w.client_name(actor),
                b.lock
                    .as_deref()
                    .map(|v| format!("{v:?}"))
                    .unwrap_or_else(|| "nothing".into()),
                real.text(),
                w.client_name(actor),
                match cmd {
                    Cmd::Del | Cmd::Cad { .. } => "deleted",
                    _ => "re-timed",
                },
                w.client_name(owner),
            );
            self.ev.foreign = Some((sentence, removed && held));
        }
        Ok(Exchange { model, real })
    }

    /// Kills server `s` (SIGKILL: nothing is saved) and forgets its connections.
    fn kill(&mut self, s: usize) -> String {
        let pid = self.cluster.servers[s].pids.last().copied().unwrap_or(0);
        self.cluster.kill(s);
        self.conns.retain(|k, _| k.1 as usize != s);
        self.observers.remove(&s);
        format!("kill -9 {} (pid {pid}): it loses everything", self.name(s))
    }

    /// The replicated pair's failover (real-redis.md §5): the replica was
    /// frozen and cut off before the first write the model loses (or, if
    /// it loses none, catches up now); the primary is killed, the replica
    /// thawed and promoted with `REPLICAOF NO ONE`.
    fn fail_over(&mut self, w: &World, p: usize, did: &mut Vec<String>) -> Result<(), Error> {
        let r = replica(w)?;
        if !self.cluster.servers[r].frozen {
            self.cluster.wait_replicated(p, r)?;
            did.push(format!(
                "{} has applied every write of {} (offsets agree): the model loses none",
                self.name(r),
                self.name(p)
            ));
        }
        did.push(self.kill(p));
        if self.cluster.servers[r].frozen {
            self.cluster.freeze(r, false)?;
            did.push(format!("SIGCONT {}", self.name(r)));
        }
        let reply = self
            .observer(r)?
            .call(&["REPLICAOF", "NO", "ONE"])
            .map_err(|e| Error::Env(format!("REPLICAOF NO ONE on {}: {e}", self.name(r))))?;
        if reply != Value::Simple("OK".into()) {
            return Err(Error::Env(format!(
                "REPLICAOF NO ONE on {} replied {}",
                self.name(r),
                reply.text()
            )));
        }
        // From now on it is a primary, also if it restarts.
        self.cluster.servers[r].spec.replica_of = None;
        did.push(format!("REPLICAOF NO ONE on {}: promoted", self.name(r)));
        Ok(())
    }

    /// Cuts the replica off before the first write the model's failover
    /// will lose: once it has applied everything so far, freeze it
    /// (SIGSTOP) and sever its link from the primary (`CLIENT KILL TYPE
    /// replica`); a frozen replica alone would still receive the write
    /// through its socket buffer (real-redis.md §5).
    fn cut_replica(&mut self, w: &World) -> Result<String, Error> {
        let p = w.primary() as usize;
        let r = replica(w)?;
        self.cluster.wait_replicated(p, r)?;
        self.cluster.freeze(r, true)?;
        let killed = self
            .observer(p)?
            .call(&["CLIENT", "KILL", "TYPE", "replica"])
            .map_err(|e| Error::Env(format!("CLIENT KILL on {}: {e}", self.name(p))))?;
        Ok(format!(
            "before this step: {} has caught up; SIGSTOP {} and CLIENT KILL TYPE replica on {} -> {}: the writes from here on never reach it (the model's failover loses them)",
            self.name(r),
            self.name(r),
            self.name(p),
            killed.text()
        ))
    }

    /// Starts or stops servers so that exactly the ones the model has up
    /// are running (a restart's second half, a delayed restart's end).
    fn reconcile(&mut self, w: &World, did: &mut Vec<String>) -> Result<(), Error> {
        for s in 0..w.redis.len() {
            let up = w.redis[s].is_up();
            if up && !self.cluster.servers[s].running() {
                self.cluster.launch(s)?;
                did.push(format!(
                    "{} started again with an empty --dir (pid {})",
                    self.name(s),
                    self.cluster.servers[s].pids.last().copied().unwrap_or(0)
                ));
            } else if !up && self.cluster.servers[s].running() {
                did.push(self.kill(s));
            }
        }
        Ok(())
    }

    /// Records the attempts, grants and writes the verdict needs.
    fn track(&mut self, before: &World, after: &World, a: &Action, index: usize) {
        for (c, (b, n)) in before.clients.iter().zip(&after.clients).enumerate() {
            // A new attempt starts: forget the replies of the last one.
            if b.phase == Phase::Idle && n.phase != Phase::Idle {
                self.ev.grants[c].clear();
            }
        }
        if after.resource.accepted > before.resource.accepted
            && let Action::Step { client } = *a
        {
            let ok = self.has_grant(after, client);
            self.ev.writes.push((index, client, ok));
        }
    }

    /// Votes a client needs: the quorum for Redlock, one otherwise.
    fn needed(&self) -> usize {
        if self.m.proto.service() == Service::Instances {
            self.m.params.quorum as usize
        } else {
            1
        }
    }

    /// Real grants of client `c`'s current attempt, on distinct servers.
    fn grant_count(&self, w: &World, c: u8) -> usize {
        let val = w.clients[c as usize].val(c).text();
        let mut servers: Vec<u8> = self.ev.grants[c as usize]
            .iter()
            .filter(|g| g.granted && g.val == val)
            .map(|g| g.server)
            .collect();
        servers.sort();
        servers.dedup();
        servers.len()
    }

    fn has_grant(&self, w: &World, c: u8) -> bool {
        self.grant_count(w, c) >= self.needed()
    }

    fn observer(&mut self, s: usize) -> Result<&mut Conn, Error> {
        Ok(match self.observers.entry(s) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(self.cluster.connect(s)?),
        })
    }

    /// Reads server `s`'s lock (and token counter) on the driver's own
    /// connection.
    fn observe(&mut self, s: usize) -> Result<Observed, Error> {
        let name = self.name(s);
        let tokens = self.tokens;
        let conn = self.observer(s)?;
        let fail = |e: std::io::Error| Error::Env(format!("cannot read {name}'s lock: {e}"));
        let lock = conn.call(&["GET", LOCK_KEY]).map_err(fail)?;
        let pttl = conn.call(&["PTTL", LOCK_KEY]).map_err(fail)?;
        let token = if tokens {
            match conn.call(&["GET", TOKEN_KEY]).map_err(fail)? {
                Value::Bulk(Some(t)) => t.parse().ok(),
                _ => Some(0),
            }
        } else {
            None
        };
        Ok(Observed {
            lock: lock.as_str().map(str::to_string),
            pttl: match pttl {
                Value::Int(i) => i,
                _ => i64::MIN,
            },
            token,
        })
    }

    /// Compares a real reading of server `s` with the model's state.
    fn check(&self, w: &World, s: usize, o: &Observed) -> Check {
        let node = &w.redis[s];
        let entry = node.lock.filter(|e| e.live());
        let (model, mut ok) = match entry {
            None => ("-".to_string(), o.lock.is_none()),
            Some(e) => {
                let (ttl_text, ttl_ok) = match e.ttl {
                    Ttl::Never => ("no expiry".to_string(), o.pttl == -1),
                    // The real TTL left must round to the model's ticks
                    // left: (t, t + 1] ticks, given the half-tick margin.
                    Ttl::Left(t) => (
                        format!("ttl {t}"),
                        TimeMap {
                            tick_ms: self.tick_ms,
                        }
                        .redis_pttl_matches(t as i64, o.pttl),
                    ),
                };
                (
                    format!("{} {ttl_text}", e.val.text()),
                    o.lock.as_deref() == Some(e.val.text().as_str()) && ttl_ok,
                )
            }
        };
        let real = match &o.lock {
            None => "nil".to_string(),
            Some(v) if o.pttl == -1 => format!("{v:?} no expiry"),
            Some(v) => format!("{v:?} pttl {} ms", o.pttl),
        };
        let (mut model, mut real) = (model, real);
        if let Some(t) = o.token {
            ok &= t == node.counter as i64;
            model.push_str(&format!(", token {}", node.counter));
            real.push_str(&format!(", token {t}"));
        }
        Check {
            text: format!("{}: model {model} | real {real}", self.name(s)),
            ok,
        }
    }

    /// Whether the driver can read server `s` now: the model has it up and
    /// serving (a replica's copy lags by design until a failover), and it is
    /// running and not frozen.
    fn readable(&self, w: &World, s: usize) -> bool {
        w.redis[s].is_up()
            && w.redis[s].role == Role::Primary
            && self.cluster.servers[s].running()
            && !self.cluster.servers[s].frozen
    }

    /// Reads and checks every server the step may have changed.
    fn observe_after(&mut self, w: &World, a: &Action) -> Result<Vec<Check>, Error> {
        let touched: Vec<usize> = match *a {
            Action::Deliver { msg } => match msg.to {
                Node::Redis(s) => vec![s as usize],
                Node::Client(_) | Node::Service => vec![],
            },
            Action::ClockJump {
                node: Node::Redis(s),
                ..
            } => vec![s as usize],
            Action::Tick { .. } | Action::Restart { .. } | Action::Failover { .. } => {
                (0..w.redis.len()).collect()
            }
            _ => vec![],
        };
        let mut checks = Vec::new();
        for s in touched {
            if self.readable(w, s) {
                let o = self.observe(s)?;
                checks.push(self.check(w, s, &o));
            }
        }
        Ok(checks)
    }

    /// Reads every serving server at the end.
    fn observe_all(&mut self, w: &World) -> Result<Vec<(usize, Check)>, Error> {
        let mut out = Vec::new();
        for s in 0..w.redis.len() {
            if self.readable(w, s) {
                let o = self.observe(s)?;
                out.push((s, self.check(w, s, &o)));
            }
        }
        Ok(out)
    }

    /// Whether the violation happened for real, stated from real replies
    /// and readings.
    fn verdict(&self, inv: Invariant, w: &World, finals: &[(usize, Check)]) -> Verdict {
        let mut lines = Vec::new();
        let reproduced = match inv {
            Invariant::MutualExclusion => {
                let mut all = true;
                for (i, cl) in w.clients.iter().enumerate() {
                    if !cl.holds() {
                        continue;
                    }
                    let c = i as u8;
                    let val = cl.val(c).text();
                    let oks: Vec<String> = self.ev.grants[i]
                        .iter()
                        .filter(|g| g.granted && g.val == val)
                        .map(|g| format!("{} {}", w.server_name(g.server), g.reply))
                        .collect();
                    let n = self.grant_count(w, c);
                    let enough = n >= self.needed();
                    all &= enough;
                    lines.push(format!(
                        "{}{} believes it holds the lock as {val}: real Redis granted it on {n} server(s), {} needed ({})",
                        w.client_name(c),
                        if cl.paused.is_some() {
                            " (held by the driver, i.e. paused)"
                        } else {
                            ""
                        },
                        self.needed(),
                        if oks.is_empty() {
                            "no grant".to_string()
                        } else {
                            oks.join(", ")
                        }
                    ));
                }
                all
            }
            Invariant::Ownership => match &self.ev.foreign {
                Some((sentence, ok)) => {
                    lines.push(sentence.clone());
                    *ok
                }
                None => {
                    lines.push("no command touched another client's lock".into());
                    false
                }
            },
            Invariant::NoLostUpdate => {
                lines.push(format!(
                    "the resource is the driver's (the model's): it accepted {} writes and holds {}",
                    w.resource.accepted, w.resource.value
                ));
                let mut all = !self.ev.writes.is_empty();
                for (step, c, ok) in &self.ev.writes {
                    all &= ok;
                    lines.push(format!(
                        "step {step}: {} wrote while holding a lock real Redis {}",
                        w.client_name(*c),
                        if *ok {
                            "had granted it"
                        } else {
                            "had NOT granted it"
                        }
                    ));
                }
                all
            }
            Invariant::NoDuplicateEffect => {
                lines.push(
                    "the resource is the driver's (the model's): a write delivered twice took effect twice"
                        .into(),
                );
                false
            }
            Invariant::NoOversell => {
                lines.push(format!(
                    "the resource is the driver's (the model's): {} units taken from a stock of {}",
                    w.resource.value, self.m.params.stock
                ));
                let mut all = !self.ev.writes.is_empty();
                for (step, c, ok) in &self.ev.writes {
                    all &= ok;
                    lines.push(format!(
                        "step {step}: {} wrote while holding a lock real Redis {}",
                        w.client_name(*c),
                        if *ok {
                            "had granted it"
                        } else {
                            "had NOT granted it"
                        }
                    ));
                }
                all
            }
            Invariant::TokenMonotonic => match &self.ev.token_regressed {
                Some(s) => {
                    lines.push(s.clone());
                    true
                }
                None => {
                    lines.push("real Redis never granted a token that went backwards".into());
                    false
                }
            },
            Invariant::NoOrphanLock => {
                lines.push(format!("the model: {}", inv.explain(self.m, w)));
                // The entries the model still has must really be there,
                // with the same kind of expiry.
                let held: Vec<&(usize, Check)> = finals
                    .iter()
                    .filter(|(s, _)| w.redis[*s].lock.is_some_and(|e| e.live()))
                    .collect();
                for (_, c) in &held {
                    lines.push(format!(
                        "{} {}",
                        c.text,
                        if c.ok {
                            "(the entry is really there, as the model says)"
                        } else {
                            "(differs)"
                        }
                    ));
                }
                !held.is_empty() && held.iter().all(|(_, c)| c.ok)
            }
        };
        if inv != Invariant::NoOrphanLock && !finals.is_empty() {
            let state: Vec<String> = finals.iter().map(|(_, c)| c.text.clone()).collect();
            lines.push(format!("real lock state at the end: {}", state.join("; ")));
        }
        Verdict { reproduced, lines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_models::world::Val;

    #[test]
    fn real_expiry_falls_half_a_tick_after_the_models_last_live_tick() {
        assert_eq!(px(6, 200), 1300);
        assert_eq!(px(1, 100), 150);
    }

    #[test]
    fn commands_map_to_real_redis() {
        let val = Val {
            client: 1,
            round: 0,
        };
        let (args, shown) = command(Cmd::SetNxPx { val, ttl: 6 }, 200).expect("a Redis command");
        assert_eq!(args, ["SET", "lock", "c2#1", "NX", "PX", "1300"]);
        assert_eq!(shown, "SET lock c2#1 NX PX 1300");
        let (args, _) = command(Cmd::Expire { ttl: 2 }, 100).expect("a Redis command");
        assert_eq!(args, ["PEXPIRE", "lock", "250"]);
        let (args, shown) = command(Cmd::Cad { val }, 100).expect("a Redis command");
        assert_eq!(args[0], "EVAL");
        assert_eq!(args[2..], ["1", "lock", "c2#1"]);
        assert_eq!(shown, "EVAL <compare-and-delete> 1 lock c2#1");
        let (args, _) = command(Cmd::FencedSet { val, ttl: 1 }, 100).expect("a Redis command");
        assert_eq!(args[2..], ["2", "lock", "token", "c2#1", "150"]);
    }

    #[test]
    fn replies_agree_only_when_equal() {
        let v = Val {
            client: 0,
            round: 0,
        };
        assert!(agrees(Reply::Ok, &Value::Simple("OK".into())));
        assert!(!agrees(Reply::Ok, &Value::Bulk(None)));
        assert!(agrees(Reply::Nil, &Value::Bulk(None)));
        assert!(agrees(Reply::Int(1), &Value::Int(1)));
        assert!(!agrees(Reply::Int(1), &Value::Int(0)));
        assert!(agrees(Reply::Val(v), &Value::Bulk(Some("c1#1".into()))));
        assert!(!agrees(Reply::Val(v), &Value::Bulk(Some("c2#1".into()))));
        assert!(agrees(Reply::Token(3), &Value::Int(3)));
        assert!(!agrees(Reply::Ok, &Value::Error("ERR".into())));
    }
}
