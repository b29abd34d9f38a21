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
//! * Every step runs at its exact model time, mapped to real time by
//!   [`TimeMap`] (model time runs `speed` times as fast); real time passes
//!   between steps. A step whose server-side timing question (is the key
//!   still live?) is decided by less than the real uncertainty is reported
//!   as finer than the replay can reproduce.
//! * Connections are real TCP connections, one per (client, server,
//!   channel) and generation: when a client times out and closes its
//!   connection, requests it had sent stay on the old socket and are sent
//!   there when the trace delivers them; its next request opens a new one.
//!   A delivery that overtakes an older request on the same connection is
//!   impossible on TCP and does not conform.
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
use locklab_models::client::Ctx;
use locklab_models::engine::concrete::CState;
use locklab_models::engine::solve::Rational;
use locklab_models::invariants::Invariant;
use locklab_models::protocols::Service;
use locklab_models::time::{Answers, Clk, Fresh, Micros, TimeCtx};
use locklab_models::units::show_rational;
use locklab_models::world::{
    Body, Chan, Cmd, Entry as KeyEntry, Log, Msg, Node, Phase, Reply, Role, World,
};
use locklab_models::{LockModel, redis, trace};
use locklab_traces::Trace;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::{Duration, Instant};

/// How late the driver is assumed to run when re-timing a trace: generous,
/// so that a busy machine (a CI runner, parallel builds) stays inside it.
const NOMINAL_LATE: Duration = Duration::from_millis(25);

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

/// The compare-and-delete release (docs/semantics.md §1.3, §9).
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
    /// Model time runs this many times as fast as real time; `None`: the
    /// real system's default ([`System::default_speed`]).
    pub speed: Option<u64>,
    pub servers: ServerOptions,
    /// etcd and ZooKeeper, for the consensus protocols.
    pub coord: CoordOptions,
    /// Replay only steps 1..=N (a prefix: conformance only, the violation
    /// is not judged).
    pub until: Option<usize>,
    /// Replay at the trace's own times, even where they put a server's
    /// timing decision closer to its bound than real time can reproduce
    /// (by default the steps are re-timed, see [`retime`]).
    pub keep_times: bool,
}

/// The trace's steps with the answers their timing questions took at the
/// recorded times (the symbolic path the model's search found).
fn answered(m: &LockModel, path: &[(Action, Rational)]) -> Result<Vec<(Action, Vec<bool>)>, Error> {
    let mut st = m.cinit();
    let mut out = Vec::with_capacity(path.len());
    for (i, (a, at)) in path.iter().enumerate() {
        let (next, answers) = m
            .cstep_given(&st, a, *at, &[], &mut Log::off())
            .map_err(|e| Error::Input(format!("step {} does not replay: {e}", i + 1)))?;
        out.push((*a, answers));
        st = next;
    }
    Ok(out)
}

/// Re-times a trace for real servers. A trace carries the earliest times
/// at which its steps can happen, so a key that must be gone is asked
/// about 1/12 µs after its expiry: no real server reproduces that. The
/// same steps, with the same answers to every timing question, are given
/// the earliest times at which every question is decided by at least
/// `want` µs of model time (the model's exact solver; halved until
/// feasible, down to 1 µs). Returns the step times and the margin reached,
/// or `None` if even 1 µs is impossible.
pub fn retime(
    m: &LockModel,
    path: &[(Action, Rational)],
    want: Micros,
) -> Result<Option<(Vec<Rational>, Micros)>, Error> {
    let sym = answered(m, path)?;
    let mut margin = want;
    while margin >= 1 {
        if let Some(times) = m.times_with_margin(&sym, margin) {
            return Ok(Some((times[1..].to_vec(), margin)));
        }
        margin /= 2;
    }
    Ok(None)
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

/// A model TTL as Redis `PX` milliseconds at this time mapping.
pub fn px(ttl: Micros, map: TimeMap) -> u64 {
    map.redis_px(ttl)
}

/// The real command for a model command, and how to show it. Only Redis
/// commands have one: traces of the consensus-service protocols are refused
/// before any step runs.
fn command(cmd: Cmd, map: TimeMap) -> Result<(Vec<String>, String), Error> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let (args, shown) = match cmd {
        Cmd::SetNxPx { val, ttl } => {
            let a = s(&[
                "SET",
                LOCK_KEY,
                &val.text(),
                "NX",
                "PX",
                &px(ttl, map).to_string(),
            ]);
            let shown = a.join(" ");
            (a, shown)
        }
        Cmd::SetNx { val } => {
            let a = s(&["SETNX", LOCK_KEY, &val.text()]);
            let shown = a.join(" ");
            (a, shown)
        }
        // EXPIRE counts seconds and a scaled TTL is rarely whole seconds:
        // the same command in milliseconds (same replies: 1 if the key exists).
        Cmd::Expire { ttl } | Cmd::PExpire { ttl } => {
            let a = s(&["PEXPIRE", LOCK_KEY, &px(ttl, map).to_string()]);
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
            let ms = px(ttl, map).to_string();
            (
                s(&["EVAL", EXTEND, "1", LOCK_KEY, &val.text(), &ms]),
                format!(
                    "EVAL <compare-and-PEXPIRE> 1 {LOCK_KEY} {} {ms}",
                    val.text()
                ),
            )
        }
        Cmd::FencedSet { val, ttl } => {
            let ms = px(ttl, map).to_string();
            (
                s(&["EVAL", FENCED, "2", LOCK_KEY, TOKEN_KEY, &val.text(), &ms]),
                format!(
                    "EVAL <SET NX PX + INCR> 2 {LOCK_KEY} {TOKEN_KEY} {} {ms}",
                    val.text()
                ),
            )
        }
        // The replayer reads the lock back with `GET`, which a hash answers
        // with WRONGTYPE.
        Cmd::HashLock { .. } | Cmd::HashUnlock { .. } => {
            return Err(Error::Input(format!(
                "{}: traces of Redisson's hash lock (--lock-shape hash) cannot be replayed yet: the replayer reads the lock back with GET, which a hash answers with WRONGTYPE",
                cmd.text()
            )));
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

fn plan(m: &LockModel, path: &[(Action, Rational)]) -> Result<Plan, Error> {
    let mut st = m.cinit();
    let n = st.world.redis.len();
    let mut shimmed = vec![false; n];
    let mut tokens = false;
    let mut cut_before = None;
    // For each server, the step that wrote each entry still in its
    // replication backlog. The backlog is a FIFO and a failover loses
    // exactly what is in it, so the oldest entry's step is where the
    // replica must stop receiving.
    let mut origin: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, (a, at)) in path.iter().enumerate() {
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
        st = m
            .cstep(&st, a, *at, &mut Log::off())
            .map_err(|e| Error::Input(format!("step {}: {e}", i + 1)))?;
        for (s, o) in origin.iter_mut().enumerate() {
            if matches!(a, Action::Replicate { server } if *server as usize == s) && !o.is_empty() {
                o.remove(0);
            }
            let len = st.world.redis[s].backlog.len();
            if len < o.len() {
                // Emptied (a restart, a resync): whatever is left is new.
                o.clear();
            }
            o.resize(len, i);
        }
    }
    Ok(Plan {
        shimmed,
        cut_before,
        tokens,
    })
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

/// What the real side of a step adds to its row besides the reply.
#[derive(Default)]
struct StepNotes {
    checks: Vec<Check>,
    /// Why the step's timing is finer than the replay can reproduce.
    unsure: Vec<String>,
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

/// One real TCP connection of a (client, server, channel) pair: opened
/// at its first request, kept while the model has requests in flight on it.
#[derive(Default)]
struct Gen {
    sock: Option<Conn>,
    /// Its number among the pair's connections (1, 2, ...), once opened.
    number: u32,
}

/// The connections of one (client, server, channel): the current one (the
/// model's `conn` 0) and the closed ones that still carry requests, oldest
/// first (the model's `conn` 1, 2, ...).
#[derive(Default)]
struct Link {
    current: Gen,
    closed: Vec<Gen>,
    opened: u32,
}

/// Requests in flight from client `c` to server `s` on `chan`, counted per
/// model connection id.
fn in_flight(w: &World, c: u8, s: u8, chan: Chan) -> BTreeMap<u8, usize> {
    let mut out = BTreeMap::new();
    for m in &w.net {
        if m.from == Node::Client(c)
            && m.to == Node::Redis(s)
            && m.chan == chan
            && matches!(m.body, Body::Req(_))
        {
            *out.entry(m.conn).or_insert(0) += 1;
        }
    }
    out
}

/// What clock `c` reads during a step whose clocks read `values` (fresh
/// clocks of the step come after `base`).
fn clock_value(values: &[Rational], base: usize, fresh: &[Fresh], c: Clk) -> Rational {
    let i = c.0 as usize;
    if i <= base {
        return values[i];
    }
    match fresh[i - base - 1] {
        Fresh::Zero => Rational::ZERO,
        Fresh::Copy(d) => clock_value(values, base, fresh, d),
    }
}

/// Model time left before entry `e` expires at the state's time (negative:
/// expired); `None`: it never expires.
fn time_left(st: &CState, e: &KeyEntry) -> Option<Rational> {
    e.exp
        .ttl
        .map(|ttl| Rational::integer(ttl - e.exp.shift) - st.read(e.exp.since, st.now))
}

/// Whether the model has entry `e` live at the state's time.
fn live(st: &CState, e: &KeyEntry) -> bool {
    time_left(st, e).is_none_or(|l| l >= Rational::ZERO)
}

fn abs(r: Rational) -> Rational {
    if r < Rational::ZERO { -r } else { r }
}

struct Driver<'a> {
    m: &'a LockModel,
    map: TimeMap,
    cluster: Cluster,
    t0: Instant,
    conns: BTreeMap<(u8, u8, Chan), Link>,
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
    if let Some(speed) = opts.speed {
        TimeMap::new(speed).map_err(Error::Input)?;
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
    let map = TimeMap::new(opts.speed.unwrap_or(system.default_speed())).map_err(Error::Input)?;
    // The margin a real run needs, in model µs, with the driver a few ms late.
    let want =
        (map.slack(system, NOMINAL_LATE).as_micros() as Micros).saturating_mul(map.speed as Micros);
    let mut retimed = None;
    let mut full = full;
    if !opts.keep_times
        && let Some((times, margin)) = retime(&m, &full, want)?
    {
        let moved = full
            .iter()
            .zip(&times)
            .filter(|((_, a), b)| a != *b)
            .count();
        if moved > 0 {
            for ((_, at), t) in full.iter_mut().zip(times) {
                *at = t;
            }
            retimed = Some(format!(
                "re-timed: the trace's earliest times put server timing decisions closer to their bounds than real time can reproduce; the replay takes the same {} steps with the same answers at the earliest times that decide every timing question by at least {} of model time{} ({moved} step(s) moved; --keep-times replays the trace's own times)",
                full.len(),
                locklab_models::units::show(margin),
                if margin < want {
                    format!(
                        " (the {} wanted is impossible on this path)",
                        locklab_models::units::show(want)
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
    let path = &full[..cut];
    let mut report = if system == System::Redis {
        replay_redis(t, &m, inv, path, map, opts)?
    } else {
        crate::coord_driver::replay(t, &m, inv, path, system, map, &opts.coord)?
    };
    report.retimed = retimed;
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
    path: &[(Action, Rational)],
    map: TimeMap,
    opts: &Options,
) -> Result<Report, Error> {
    let plan = plan(m, path)?;
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
        map,
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
    let (rows, st) = d.run(path, &plan)?;
    let mut final_unsure = Vec::new();
    let finals = d.observe_all(&st, &mut final_unsure)?;
    let replay_ms = run_begin.elapsed().as_secs_f64() * 1e3;
    let verdict = d.verdict(inv, &st, &finals);
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
        time_line: map.describe(System::Redis, m.params.ttl),
        invariant: t.invariant.clone(),
        violation: t.violation.clone(),
        violation_step: t.violation_step,
        speed: map.speed,
        servers,
        rows,
        finals: finals.into_iter().map(|(_, c)| c).collect(),
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

impl Driver<'_> {
    fn run(
        &mut self,
        path: &[(Action, Rational)],
        plan: &Plan,
    ) -> Result<(Vec<Row>, CState), Error> {
        let m = self.m;
        let mut st = m.cinit();
        let mut rows = Vec::with_capacity(path.len());
        self.t0 = Instant::now();
        for (i, (a, at)) in path.iter().enumerate() {
            let index = i + 1;
            self.wait_until(*at, index)?;
            let mut did = Vec::new();
            let mut step = StepNotes::default();
            if plan.cut_before == Some(i) {
                did.push(self.cut_replica(&st.world)?);
            }
            let actor = m.actor(&st.world, a);
            let before = st.clone();
            let exchange = self.act(&before, a, *at, &mut did, &mut step)?;
            let at_ms = self.t0.elapsed().as_millis() as u64;
            let mut log = Log::on();
            st = m
                .cstep(&st, a, *at, &mut log)
                .map_err(|e| Error::Input(format!("step {index} does not replay: {e}")))?;
            let label = trace::label(&log.take());
            self.sync_links(&before.world, &st.world, a, &mut did)?;
            self.reconcile(&st.world, &mut did)?;
            self.track(&before.world, &st.world, a, index);
            let decided_blind = !step.unsure.is_empty();
            let mut checks = self.observe_after(&st, a, &mut step.unsure)?;
            if decided_blind {
                // What the server reads after a decision real time could
                // not reproduce follows that decision: not judged either.
                for c in &mut checks {
                    c.unsure = true;
                }
            }
            checks.extend(step.checks);
            rows.push(Row {
                index,
                time: show_rational(*at),
                at_ms,
                actor,
                label,
                did,
                model_reply: exchange.as_ref().map(|x| x.model.text()),
                real_reply: exchange.as_ref().map(|x| x.real.text()),
                reply_ok: exchange.as_ref().map(|x| agrees(x.model, &x.real)),
                checks,
                unsure: step.unsure,
                blind: decided_blind,
            });
        }
        Ok((rows, st))
    }

    /// Waits until model time `t` in real time and records how late it woke.
    fn wait_until(&mut self, t: Rational, index: usize) -> Result<(), Error> {
        let late = self.map.wait_until(self.t0, t, index)?;
        self.max_late = self.max_late.max(late);
        Ok(())
    }

    /// The real uncertainty of a server-side timing question so far.
    fn slack(&self) -> Duration {
        self.map.slack(System::Redis, self.max_late)
    }

    fn name(&self, s: usize) -> String {
        self.cluster.servers[s].spec.name.clone()
    }

    /// Keeps the real connections in step with the model's after a step: a
    /// closed connection whose requests are all gone is forgotten; when a
    /// client closed its current connection with requests still on it, that
    /// socket joins the closed ones and the next request opens a new one.
    fn sync_links(
        &mut self,
        before: &World,
        after: &World,
        a: &Action,
        did: &mut Vec<String>,
    ) -> Result<(), Error> {
        let fifo = self.m.params.network == locklab_models::params::Network::Fifo;
        let mut keys: Vec<(u8, u8, Chan)> = self.conns.keys().copied().collect();
        for m in before.net.iter().chain(&after.net) {
            if let (Node::Client(c), Node::Redis(s), Body::Req(_)) = (m.from, m.to, m.body) {
                keys.push((c, s, m.chan));
            }
        }
        keys.sort();
        keys.dedup();
        for (c, s, chan) in keys {
            let pre = in_flight(before, c, s, chan);
            let post = in_flight(after, c, s, chan);
            let link = self.conns.entry((c, s, chan)).or_default();
            let pre_closed = pre.keys().filter(|k| **k > 0).count();
            // Closed connections the driver never used (nothing was sent on
            // them yet): their sockets open when the trace delivers there.
            while link.closed.len() < pre_closed {
                link.closed.push(Gen::default());
            }
            link.closed.truncate(pre_closed);
            // What this step took off each connection.
            let mut left: Vec<usize> = pre
                .iter()
                .filter(|(k, _)| **k > 0)
                .map(|(_, n)| *n)
                .collect();
            let mut cur = pre.get(&0).copied().unwrap_or(0);
            let hit = match *a {
                Action::Deliver { msg } | Action::Drop { msg }
                    if msg.from == Node::Client(c)
                        && msg.to == Node::Redis(s)
                        && msg.chan == chan
                        && matches!(msg.body, Body::Req(_)) =>
                {
                    let total = pre.get(&msg.conn).copied().unwrap_or(0);
                    let gone = match a {
                        // A loss breaks the stream: what follows it is lost too.
                        Action::Drop { .. } if fifo => total.saturating_sub(msg.seq as usize),
                        _ => 1,
                    };
                    Some((msg.conn, gone))
                }
                _ => None,
            };
            if let Some((k, gone)) = hit {
                if k == 0 {
                    cur = cur.saturating_sub(gone);
                } else if let Some(n) = left.get_mut(k as usize - 1) {
                    *n = n.saturating_sub(gone);
                }
            }
            let mut kept = Vec::new();
            for (g, n) in std::mem::take(&mut link.closed).into_iter().zip(&left) {
                if *n > 0 {
                    kept.push(g);
                }
            }
            let post_closed = post.keys().filter(|k| **k > 0).count();
            if post_closed == kept.len() + 1 && cur > 0 {
                // The client closed its connection with requests on it.
                kept.push(std::mem::take(&mut link.current));
            } else if post_closed == 0 {
                kept.clear();
            } else if post_closed != kept.len() {
                return Err(Error::Env(format!(
                    "internal: the driver lost track of {}'s connections to {} ({} closed in the model, {} real)",
                    after.client_name(c),
                    self.cluster.servers[s as usize].spec.name,
                    post_closed,
                    kept.len()
                )));
            }
            link.closed = kept;
            // A request just put on the current connection: the client opens
            // the connection when it sends, as a real client does.
            if post.get(&0).is_some_and(|n| *n > 0) && link.current.sock.is_none() {
                let sock = self.cluster.connect(s as usize)?;
                let link = self.conns.entry((c, s, chan)).or_default();
                link.opened += 1;
                link.current.sock = Some(sock);
                link.current.number = link.opened;
                did.push(format!(
                    "opened TCP connection #{} from {} to {}{}",
                    link.opened,
                    after.client_name(c),
                    self.cluster.servers[s as usize].spec.name,
                    if link.opened > 1 {
                        " (a new one: the client closed the last one)"
                    } else {
                        ""
                    }
                ));
            }
        }
        Ok(())
    }

    /// The real side of one step (before the model applies it).
    fn act(
        &mut self,
        st: &CState,
        a: &Action,
        at: Rational,
        did: &mut Vec<String>,
        step: &mut StepNotes,
    ) -> Result<Option<Exchange>, Error> {
        let w = &st.world;
        let client = |c: u8| w.client_name(c);
        match *a {
            Action::Deliver { msg } => match (msg.from, msg.to, msg.body) {
                (Node::Client(c), Node::Redis(s), Body::Req(cmd)) => {
                    return self.send(st, at, c, s, msg, cmd, did, step).map(Some);
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
            Action::ClockJump {
                node: Node::Redis(s),
                by,
            } => {
                let s = s as usize;
                let ms = self.cluster.servers[s].offset_ms + self.map.offset_ms(by);
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
            Action::Writer { .. }
            | Action::ResourceRestart
            | Action::Duplicate { .. }
            | Action::Reconcile
            | Action::PauseReconciler
            | Action::ResumeReconciler
            | Action::DetectionLate => did.push(
                "nothing to do on Redis: the resource and its unfenced writers are the driver's (the model's)"
                    .into(),
            ),
            // The server comes back in `reconcile`, once the model has it up.
            Action::ComeUp { .. } => {}
            Action::Step { .. }
            | Action::Watchdog { .. }
            | Action::Gather { .. }
            | Action::Slow { .. }
            | Action::SessionExpires { .. }
            | Action::Reap => {}
        }
        Ok(None)
    }

    /// Sends `cmd` for client `c` to server `s` and reads the real reply.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        st: &CState,
        at: Rational,
        c: u8,
        s: u8,
        msg: Msg,
        cmd: Cmd,
        did: &mut Vec<String>,
        step: &mut StepNotes,
    ) -> Result<Exchange, Error> {
        let w = &st.world;
        let si = s as usize;
        let chan = msg.chan;
        let name = self.name(si);
        // The model's prediction: the same `execute` the transition runs,
        // with every clock read at the step's exact time.
        let values: Vec<Rational> = st.born.iter().map(|b| at - *b).collect();
        let base = st.born.len() - 1;
        let mut probe = w.clone();
        let mut t = TimeCtx::new(base, Answers::Values(&values, &[]));
        let model = redis::execute(
            &mut Ctx {
                m: self.m,
                w: &mut probe,
                log: &mut Log::off(),
                t: &mut t,
            },
            s,
            c,
            cmd,
        );
        // The server's timing questions (is the key still live?): each is
        // decided by how far its clock is from the bound. Real time cannot
        // reproduce a margin below the replay's uncertainty.
        let slack = self.slack();
        for ask in &t.asks {
            let margin =
                clock_value(&values, base, &t.fresh, ask.clk) - Rational::integer(ask.bound);
            if !self.map.reproducible(margin, slack) {
                step.unsure.push(format!(
                    "{name} decides whether the key is still live {} of model time {} its expiry: {:.3} ms real, within the replay's uncertainty of {:.1} ms (Redis keeps whole ms, the driver ran up to {:.1} ms late); real Redis may decide either way, and what it reads next with it",
                    show_rational(abs(margin)),
                    if margin > Rational::ZERO { "after" } else { "before" },
                    self.map.real_ms(abs(margin)),
                    slack.as_secs_f64() * 1e3,
                    self.max_late.as_secs_f64() * 1e3,
                ));
            }
        }
        // One TCP connection delivers in the order it was sent: a request
        // that overtakes an older one on its connection cannot happen.
        let fifo = self.m.params.network == locklab_models::params::Network::Fifo;
        let older = w
            .net
            .iter()
            .filter(|x| {
                x.from == msg.from
                    && x.to == msg.to
                    && x.chan == chan
                    && x.conn == msg.conn
                    && matches!(x.body, Body::Req(_))
                    && **x != msg
                    && if fifo {
                        // Its place in the queue (a late message's clock
                        // is re-armed, so its clock says nothing of order).
                        x.seq < msg.seq
                    } else {
                        st.born[x.clk.0 as usize] < st.born[msg.clk.0 as usize]
                    }
            })
            .count();
        if older > 0 {
            step.checks.push(Check {
                text: format!(
                    "impossible on TCP: this request overtakes {older} older request(s) {} sent earlier on the same connection",
                    w.client_name(c)
                ),
                ok: false,
                unsure: false,
            });
        }
        let foreign = w.ghost.foreign.is_none() && probe.ghost.foreign.is_some();
        let before = if foreign {
            Some(self.observe(si)?)
        } else {
            None
        };
        let (args, shown) = command(cmd, self.map)?;
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let link = self.conns.entry((c, s, chan)).or_default();
        let (link_gen, closed) = match msg.conn {
            0 => (&mut link.current, false),
            k => {
                while link.closed.len() < k as usize {
                    link.closed.push(Gen::default());
                }
                (&mut link.closed[k as usize - 1], true)
            }
        };
        let mut opened = false;
        if link_gen.sock.is_none() {
            link_gen.sock = Some(self.cluster.connect(si)?);
            link.opened += 1;
            link_gen.number = link.opened;
            opened = true;
        }
        let number = link_gen.number;
        let conn = link_gen.sock.as_mut().expect("opened above");
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
            "sent {shown} on {}'s{chan_text} TCP connection #{number} to {name}{}",
            w.client_name(c),
            match (opened, closed) {
                (true, false) if number > 1 =>
                    " (a new connection: the client closed the last one)",
                (true, false) => " (opened for it)",
                (_, true) => " (a connection the client has closed: the request was already on it)",
                (false, false) => "",
            }
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
            let verb = match cmd {
                Cmd::Del | Cmd::Cad { .. } => "deleted",
                _ => "re-timed",
            };
            let outcome = if removed && held {
                format!(
                    "{} {verb} {}'s lock for real",
                    w.client_name(actor),
                    w.client_name(owner)
                )
            } else {
                format!(
                    "{} did NOT touch {}'s lock for real (the model has {} there)",
                    w.client_name(actor),
                    w.client_name(owner),
                    owner_val
                )
            };
            let sentence = format!(
                "just before {}'s {shown}, real {name} held {} (GET); the command returned {}: {outcome}",
                w.client_name(actor),
                b.lock
                    .as_deref()
                    .map(|v| format!("{v:?}"))
                    .unwrap_or_else(|| "nothing".into()),
                real.text(),
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

    /// The replicated pair's failover (docs/semantics.md §9): the replica was
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
    /// through its socket buffer (docs/semantics.md §9).
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

    /// Compares a real reading of server `s` with the model's state at
    /// the state's time. A key within the replay's uncertainty of its
    /// expiry may really be there or gone: that reading is unsure.
    fn check(&self, st: &CState, s: usize, o: &Observed, unsure: &mut Vec<String>) -> Check {
        let node = &st.world.redis[s];
        // The reading was taken after the step's own real work (a failover
        // kills and promotes servers first): it is as late as now.
        let lag = Instant::now().saturating_duration_since(self.t0 + self.map.at(st.now));
        let slack = self.map.slack(System::Redis, self.max_late.max(lag));
        let mut close = false;
        let entry = node.lock.filter(|e| {
            if let Some(l) = time_left(st, e)
                && !self.map.reproducible(l, slack)
            {
                close = true;
                unsure.push(format!(
                    "{}'s key {} is {} of model time ({:.3} ms real) {} its expiry when read, within the replay's uncertainty of {:.1} ms: the reading may go either way",
                    self.name(s),
                    e.val.text(),
                    show_rational(abs(l)),
                    self.map.real_ms(abs(l)),
                    if l < Rational::ZERO { "past" } else { "short of" },
                    slack.as_secs_f64() * 1e3
                ));
            }
            live(st, e)
        });
        let (model, mut ok) = match entry {
            None => ("-".to_string(), o.lock.is_none()),
            Some(e) => {
                let (ttl_text, ttl_ok) = match time_left(st, &e) {
                    None => ("no expiry".to_string(), o.pttl == -1),
                    Some(l) => (
                        format!("{} left", show_rational(l)),
                        self.map.redis_pttl_matches(l, o.pttl, slack),
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
            unsure: close,
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
    fn observe_after(
        &mut self,
        st: &CState,
        a: &Action,
        unsure: &mut Vec<String>,
    ) -> Result<Vec<Check>, Error> {
        let w = &st.world;
        let touched: Vec<usize> = match *a {
            Action::Deliver { msg } => match msg.to {
                Node::Redis(s) => vec![s as usize],
                Node::Client(_) | Node::Service => vec![],
            },
            Action::ClockJump {
                node: Node::Redis(s),
                ..
            } => vec![s as usize],
            Action::Restart { .. } | Action::Failover { .. } | Action::ComeUp { .. } => {
                (0..w.redis.len()).collect()
            }
            _ => vec![],
        };
        let mut checks = Vec::new();
        for s in touched {
            if self.readable(w, s) {
                let o = self.observe(s)?;
                checks.push(self.check(st, s, &o, unsure));
            }
        }
        Ok(checks)
    }

    /// Reads every serving server at the end.
    fn observe_all(
        &mut self,
        st: &CState,
        unsure: &mut Vec<String>,
    ) -> Result<Vec<(usize, Check)>, Error> {
        let mut out = Vec::new();
        for s in 0..st.world.redis.len() {
            if self.readable(&st.world, s) {
                let o = self.observe(s)?;
                out.push((s, self.check(st, s, &o, unsure)));
            }
        }
        Ok(out)
    }

    /// Whether the violation happened for real, stated from real replies
    /// and readings.
    fn verdict(&self, inv: Invariant, st: &CState, finals: &[(usize, Check)]) -> Verdict {
        let w = &st.world;
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
            Invariant::DetectedWithin => {
                lines.push(
                    "the reconciler is the driver's (the model's): it flagged the damage too late"
                        .into(),
                );
                false
            }
            Invariant::WithinValidity => {
                // The validity is read on the client's clock, which is the
                // driver's; what real Redis shows is whether the write went
                // out with the lock still granted.
                lines.push(format!(
                    "the client's clock is the driver's (the model's): {}",
                    inv.explain(self.m, w)
                ));
                let late = w.ghost.late_write;
                let wrote = self.ev.writes.iter().any(|(_, c, _)| Some(*c) == late);
                lines.push(if wrote {
                    "the driver sent that write to the resource".to_string()
                } else {
                    "the driver sent no write for it".to_string()
                });
                wrote
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
                    .filter(|(s, _)| w.redis[*s].lock.is_some_and(|e| live(st, &e)))
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

    use locklab_models::time::SEC;

    const MAP: TimeMap = TimeMap { speed: 20 };

    #[test]
    fn a_model_ttl_is_sent_scaled_to_whole_milliseconds() {
        assert_eq!(px(30 * SEC, MAP), 1500);
        assert_eq!(px(30 * SEC, TimeMap { speed: 1 }), 30_000);
    }

    #[test]
    fn commands_map_to_real_redis() {
        let val = Val::new(1, 0);
        let (args, shown) =
            command(Cmd::SetNxPx { val, ttl: 30 * SEC }, MAP).expect("a Redis command");
        assert_eq!(args, ["SET", "lock", "c2#1", "NX", "PX", "1500"]);
        assert_eq!(shown, "SET lock c2#1 NX PX 1500");
        let (args, _) = command(Cmd::Expire { ttl: 10 * SEC }, MAP).expect("a Redis command");
        assert_eq!(args, ["PEXPIRE", "lock", "500"]);
        let (args, shown) = command(Cmd::Cad { val }, MAP).expect("a Redis command");
        assert_eq!(args[0], "EVAL");
        assert_eq!(args[2..], ["1", "lock", "c2#1"]);
        assert_eq!(shown, "EVAL <compare-and-delete> 1 lock c2#1");
        let (args, _) =
            command(Cmd::FencedSet { val, ttl: 3 * SEC }, MAP).expect("a Redis command");
        assert_eq!(args[2..], ["2", "lock", "token", "c2#1", "150"]);
    }

    #[test]
    fn replies_agree_only_when_equal() {
        let v = Val::new(0, 0);
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
