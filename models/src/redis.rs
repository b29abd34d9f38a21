//! Redis server semantics, as real Redis 7 behaves (sources: `src/db.c`
//! `keyIsExpired`, `src/expire.c`, `src/server.c` `call`, and the `SET`,
//! `EXPIRE`, `EVAL` and replication pages of the Redis documentation):
//!
//! * a command or script runs atomically, with time frozen, so nothing
//!   expires in the middle of a Lua script;
//! * a key is judged by the server's wall clock and is still served when
//!   `now == expire_at`;
//! * a primary expires keys and replicates the synthesized `DEL`; a replica
//!   never expires keys itself, and commands replicated from the primary see
//!   logically expired keys as present;
//! * expiries are replicated as absolute times (`PXAT`), so a replica judges
//!   them by its own clock;
//! * without persistence a restart loses everything, and a replica that
//!   resyncs from an empty primary is emptied too.

use crate::ev;
use crate::model::LockModel;
use crate::world::{
    Body, Chan, Cmd, Entry, Log, Msg, Node, RedisNode, ReplOp, Reply, Role, STicks, Status, Ticks,
    Touch, Ttl, World,
};
use locklab_traces::EventKind;

/// Lowest relative expiry a replica keeps for a logically expired key. Below
/// it, no backward clock jump the budget allows can revive the key, so the
/// exact value no longer matters and the state space stays finite.
fn ttl_floor(m: &LockModel) -> STicks {
    -(m.params.jump as STicks) * m.params.faults.get(crate::faults::FaultKind::ClockJump) as STicks
        - 1
}

fn replica_of(w: &World) -> Option<usize> {
    w.redis
        .iter()
        .position(|s| s.role == Role::Replica && !s.is_dead())
}

/// Converts an expiry relative to server `p`'s clock into one relative to
/// the replica's clock: the absolute `PXAT` stays, the clocks differ.
fn for_replica(w: &World, p: usize, ttl: Ttl) -> Ttl {
    match (ttl, replica_of(w)) {
        (Ttl::Left(t), Some(r)) => Ttl::Left(t + w.redis[p].clock - w.redis[r].clock),
        (t, _) => t,
    }
}

fn replicate_later(w: &mut World, p: usize, op: ReplOp) {
    if replica_of(w).is_some() && w.redis[p].role == Role::Primary {
        let op = match op {
            ReplOp::Set(e) => ReplOp::Set(Entry {
                val: e.val,
                ttl: for_replica(w, p, e.ttl),
            }),
            ReplOp::SetAndIncr(e) => ReplOp::SetAndIncr(Entry {
                val: e.val,
                ttl: for_replica(w, p, e.ttl),
            }),
            ReplOp::Expire(t) => ReplOp::Expire(for_replica(w, p, t)),
            other => other,
        };
        w.redis[p].backlog.push(op);
    }
}

fn live_entry(n: &RedisNode) -> Option<Entry> {
    n.lock.filter(|e| e.live())
}

fn touch_foreign(w: &mut World, actor: u8, owner: u8, how: Touch) {
    if actor != owner && w.ghost.foreign.is_none() {
        w.ghost.foreign = Some((actor, owner, how));
    }
}

/// Runs `cmd`, sent by client `from`, on server `s` and returns the reply.
pub fn execute(w: &mut World, s: u8, from: u8, cmd: Cmd) -> Reply {
    let si = s as usize;
    let cur = live_entry(&w.redis[si]);
    match cmd {
        Cmd::SetNxPx { val, ttl } => match cur {
            Some(_) => Reply::Nil,
            None => {
                let e = Entry {
                    val,
                    ttl: Ttl::Left(ttl as STicks),
                };
                w.redis[si].lock = Some(e);
                replicate_later(w, si, ReplOp::Set(e));
                Reply::Ok
            }
        },
        Cmd::SetNx { val } => match cur {
            Some(_) => Reply::Int(0),
            None => {
                let e = Entry {
                    val,
                    ttl: Ttl::Never,
                };
                w.redis[si].lock = Some(e);
                replicate_later(w, si, ReplOp::Set(e));
                Reply::Int(1)
            }
        },
        Cmd::Expire { ttl } | Cmd::PExpire { ttl } => match cur {
            Some(e) => {
                touch_foreign(w, from, e.val.client, Touch::Extended);
                let t = Ttl::Left(ttl as STicks);
                w.redis[si].lock = Some(Entry { val: e.val, ttl: t });
                replicate_later(w, si, ReplOp::Expire(t));
                Reply::Int(1)
            }
            None => Reply::Int(0),
        },
        Cmd::Get => match cur {
            Some(e) => Reply::Val(e.val),
            None => Reply::Nil,
        },
        Cmd::Del => match cur {
            Some(e) => {
                touch_foreign(w, from, e.val.client, Touch::Deleted);
                w.redis[si].lock = None;
                replicate_later(w, si, ReplOp::Del);
                Reply::Int(1)
            }
            None => Reply::Int(0),
        },
        Cmd::Cad { val } => match cur {
            Some(e) if e.val == val => {
                w.redis[si].lock = None;
                replicate_later(w, si, ReplOp::Del);
                Reply::Int(1)
            }
            _ => Reply::Int(0),
        },
        Cmd::Renew { val, ttl } => match cur {
            Some(e) if e.val == val => {
                let t = Ttl::Left(ttl as STicks);
                w.redis[si].lock = Some(Entry { val, ttl: t });
                replicate_later(w, si, ReplOp::Expire(t));
                Reply::Int(1)
            }
            _ => Reply::Int(0),
        },
        Cmd::FencedSet { val, ttl } => match cur {
            Some(_) => Reply::Nil,
            None => {
                let e = Entry {
                    val,
                    ttl: Ttl::Left(ttl as STicks),
                };
                w.redis[si].lock = Some(e);
                w.redis[si].counter += 1;
                let token = w.redis[si].counter;
                replicate_later(w, si, ReplOp::SetAndIncr(e));
                w.issue_token(token);
                Reply::Token(token)
            }
        },
        // The consensus service's requests never reach Redis.
        Cmd::Open
        | Cmd::Lock { .. }
        | Cmd::Create { .. }
        | Cmd::Txn { .. }
        | Cmd::Order { .. }
        | Cmd::Watch { .. }
        | Cmd::KeepAlive
        | Cmd::Remove { .. } => Reply::Nil,
    }
}

/// Delivers a request to server `s`: runs it and sends the reply back on
/// the same connection (unless the sender has abandoned the request).
pub fn deliver(m: &LockModel, w: &mut World, s: u8, msg: Msg, log: &mut Log) {
    let Node::Client(c) = msg.from else { return };
    let Body::Req(cmd) = msg.body else { return };
    let reply = execute(w, s, c, cmd);
    ev!(
        log,
        EventKind::Execute,
        w.server_name(s),
        Some(w.client_name(c)),
        "{} -> {}{}",
        cmd.text(),
        reply.text(),
        stale(w, &msg)
    );
    let client_gone = !w.clients[c as usize].alive && msg.chan == Chan::Main;
    if msg.orphan || client_gone {
        ev!(
            log,
            EventKind::Note,
            w.server_name(s),
            Some(w.client_name(c)),
            "the reply goes nowhere: {} is not waiting for it",
            w.client_name(c)
        );
        return;
    }
    // Under open timing, a reply to a gathering client travels until the
    // environment says it has arrived (a `Deliver` of the held reply).
    let travelling = m.params.open_timing && m.proto.gathers_replies() && msg.chan == Chan::Main;
    w.send_msg(
        Msg {
            from: Node::Redis(s),
            to: Node::Client(c),
            chan: msg.chan,
            conn: msg.conn,
            seq: 0,
            body: Body::Reply(reply),
            held: travelling.then_some(crate::world::OPEN),
            orphan: false,
        },
        m.params.network == crate::params::Network::Fifo,
    );
}

/// Marks a request that runs after its sender closed the connection it
/// came on (it timed out and moved on): the server still runs what reached
/// it before the close.
pub fn stale(w: &World, msg: &Msg) -> String {
    match msg.from {
        Node::Client(c) if msg.conn > 0 => format!(
            " (a stale request: {} had closed this connection)",
            w.client_name(c)
        ),
        _ => String::new(),
    }
}

/// The replica applies the oldest write of the primary's stream.
pub fn replicate(w: &mut World, p: u8, log: &mut Log) {
    let Some(r) = replica_of(w) else { return };
    if w.redis[p as usize].backlog.is_empty() {
        return;
    }
    let op = w.redis[p as usize].backlog.remove(0);
    let rep = &mut w.redis[r];
    match op {
        ReplOp::Set(e) => rep.lock = Some(e),
        ReplOp::Del => rep.lock = None,
        ReplOp::Expire(t) => {
            if let Some(e) = &mut rep.lock {
                e.ttl = t;
            }
        }
        ReplOp::SetAndIncr(e) => {
            rep.lock = Some(e);
            rep.counter += 1;
        }
    }
    ev!(
        log,
        EventKind::Replicate,
        w.server_name(r as u8),
        Some(w.server_name(p)),
        "applies {}",
        op_text(op)
    );
}

pub fn op_text(op: ReplOp) -> String {
    match op {
        ReplOp::Set(e) => format!("SET lock {} PXAT", e.val.text()),
        ReplOp::Del => "DEL lock".into(),
        ReplOp::Expire(_) => "PEXPIREAT lock".into(),
        ReplOp::SetAndIncr(e) => format!("MULTI SET lock {} PXAT; INCR token EXEC", e.val.text()),
    }
}

/// The primary (or a lone instance) expires its key once its clock passes
/// `expire_at`, and replicates the `DEL`.
fn expire_if_due(m: &LockModel, w: &mut World, s: usize, log: &mut Log) {
    let node = &mut w.redis[s];
    let Some(e) = node.lock else { return };
    let Ttl::Left(t) = e.ttl else { return };
    if t >= 0 {
        return;
    }
    match node.role {
        Role::Primary => {
            node.lock = None;
            ev!(
                log,
                EventKind::Expire,
                w.server_name(s as u8),
                None,
                "lock {} expires",
                e.val.text()
            );
            replicate_later(w, s, ReplOp::Del);
        }
        Role::Replica => {
            node.lock = Some(Entry {
                val: e.val,
                ttl: Ttl::Left(t.max(ttl_floor(m))),
            });
        }
    }
}

fn shift(t: Ttl, by: STicks, floor: STicks) -> Ttl {
    match t {
        Ttl::Never => Ttl::Never,
        Ttl::Left(x) => Ttl::Left((x - by).max(floor)),
    }
}

/// `n` ticks of true time on every server. `n` never passes a deadline
/// (the model only lets time run up to the next one), so nothing can
/// happen part-way and one step does the work of `n`.
pub fn tick(m: &LockModel, w: &mut World, n: Ticks, log: &mut Log) {
    let floor = ttl_floor(m);
    let by = n.min(STicks::MAX as Ticks) as STicks;
    for s in 0..w.redis.len() {
        match w.redis[s].status {
            Status::Dead => {}
            Status::Down(k) => {
                if k <= n {
                    come_up(w, s, log);
                } else {
                    w.redis[s].status = Status::Down(k - n);
                }
            }
            Status::Up => {
                let node = &mut w.redis[s];
                if let Some(e) = &mut node.lock {
                    // A primary deletes the key as soon as it passes -1.
                    e.ttl = shift(e.ttl, by, floor.min(-1));
                }
                for op in &mut node.backlog {
                    match op {
                        ReplOp::Set(e) | ReplOp::SetAndIncr(e) => e.ttl = shift(e.ttl, by, floor),
                        ReplOp::Expire(t) => *t = shift(*t, by, floor),
                        _ => {}
                    }
                }
                expire_if_due(m, w, s, log);
            }
        }
    }
}

/// Ticks until the next key expiry or restart completes, if any.
pub fn next_deadline(w: &World) -> Option<Ticks> {
    w.redis
        .iter()
        .filter_map(|n| match n.status {
            Status::Down(k) => Some(k),
            Status::Up if n.role == Role::Primary => match n.lock.map(|e| e.ttl) {
                Some(Ttl::Left(t)) if t >= 0 => Some((t + 1) as Ticks),
                _ => None,
            },
            _ => None,
        })
        .min()
}

/// Server `s`'s wall clock jumps by `by` ticks: its keys expire earlier
/// (forward) or later (backward), exactly as `expire.md` warns.
pub fn clock_jump(m: &LockModel, w: &mut World, s: u8, by: STicks, log: &mut Log) {
    let si = s as usize;
    let floor = ttl_floor(m);
    if replica_of(w).is_some() {
        w.redis[si].clock += by;
    }
    if let Some(e) = &mut w.redis[si].lock {
        e.ttl = shift(e.ttl, by, floor.min(-1));
    }
    if w.redis[si].role == Role::Replica {
        // The stream carries absolute times: the replica's clock moving
        // changes how long they have left.
        for p in 0..w.redis.len() {
            for op in &mut w.redis[p].backlog {
                match op {
                    ReplOp::Set(e) | ReplOp::SetAndIncr(e) => e.ttl = shift(e.ttl, by, floor),
                    ReplOp::Expire(t) => *t = shift(*t, by, floor),
                    _ => {}
                }
            }
        }
    }
    ev!(
        log,
        EventKind::Fault,
        w.server_name(s),
        None,
        "wall clock JUMPS {} {} ticks",
        if by > 0 { "forward" } else { "backward" },
        by.unsigned_abs()
    );
    expire_if_due(m, w, si, log);
}

/// Drops every message in flight to or from server `s` (its connections
/// were reset). The clients' timeouts tell them.
fn reset_connections(w: &mut World, s: u8) {
    w.net
        .retain(|msg| msg.to != Node::Redis(s) && msg.from != Node::Redis(s));
}

/// Full resynchronisation of the replica from the primary.
fn resync(w: &mut World) {
    let (Some(r), Some(p)) = (
        replica_of(w),
        w.redis
            .iter()
            .position(|n| n.role == Role::Primary && !n.is_dead()),
    ) else {
        return;
    };
    let lock = w.redis[p].lock.map(|e| Entry {
        val: e.val,
        ttl: for_replica(w, p, e.ttl),
    });
    w.redis[r].lock = lock;
    w.redis[r].counter = w.redis[p].counter;
    w.redis[p].backlog.clear();
}

fn come_up(w: &mut World, s: usize, log: &mut Log) {
    w.redis[s].status = Status::Up;
    ev!(
        log,
        EventKind::Note,
        w.server_name(s as u8),
        None,
        "is back up, empty"
    );
    resync(w);
}

/// Server `s` loses everything it held: its connections are reset, the
/// lock and the token counter are gone. With `--delayed-restart` it then
/// stays unavailable for a TTL, as the Redlock page recommends.
fn lose_everything(m: &LockModel, w: &mut World, s: u8, log: &mut Log, what: &str) {
    let si = s as usize;
    reset_connections(w, s);
    let node = &mut w.redis[si];
    node.lock = None;
    node.counter = 0;
    node.backlog.clear();
    if m.params.delayed_restart {
        node.status = Status::Down(m.params.down_for());
        ev!(
            log,
            EventKind::Fault,
            w.server_name(s),
            None,
            "{what}; stays unavailable {} ticks (delayed restart)",
            m.params.down_for()
        );
    } else {
        ev!(log, EventKind::Fault, w.server_name(s), None, "{what}");
        come_up(w, si, log);
    }
}

/// Server `s` restarts without persistence: it loses the lock and the
/// token counter.
pub fn restart(m: &LockModel, w: &mut World, s: u8, log: &mut Log) {
    lose_everything(m, w, s, log, "RESTARTS and loses all data (no persistence)");
}

/// Primary `s` dies; its replica is promoted with exactly what it had
/// applied and starts expiring keys by its own clock. A Redlock instance
/// has no replica in the model: its failover is the worst case, a replica
/// that had received none of the lock writes (so, like a restart, it comes
/// back empty; with `--delayed-restart` it is kept out of service first).
pub fn failover(m: &LockModel, w: &mut World, s: u8, log: &mut Log) {
    let p = s as usize;
    let Some(r) = replica_of(w) else {
        lose_everything(
            m,
            w,
            s,
            log,
            "FAILOVER: the primary dies; a replica that received none of the lock writes takes over",
        );
        return;
    };
    let lost = w.redis[p].backlog.len();
    reset_connections(w, p as u8);
    w.redis[p].status = Status::Dead;
    w.redis[p].backlog.clear();
    w.redis[r].role = Role::Primary;
    if let Some(e) = w.redis[r].lock
        && !e.live()
    {
        w.redis[r].lock = None;
    }
    ev!(
        log,
        EventKind::Fault,
        w.server_name(p as u8),
        Some(w.server_name(r as u8)),
        "FAILOVER: primary dies, {} is promoted ({} unreplicated write{} lost)",
        w.server_name(r as u8),
        lost,
        if lost == 1 { "" } else { "s" }
    );
}
