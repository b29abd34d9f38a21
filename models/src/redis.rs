//! Redis server semantics, as real Redis 7 behaves (sources: `src/db.c`
//! `keyIsExpired`, `src/expire.c`, `src/server.c` `call`, and the `SET`,
//! `EXPIRE`, `EVAL` and replication pages of the Redis documentation):
//!
//! * a command or script runs atomically, with time frozen, so nothing
//!   expires in the middle of a Lua script;
//! * a key is judged by the server's wall clock and is still served when
//!   `now == expire_at` (`db.c` `keyIsExpired`: expired iff `now > when`);
//!   a key found expired is deleted on access (lazy expiry), and the `DEL`
//!   is replicated;
//! * a replica never expires keys itself, and commands replicated from the
//!   primary see logically expired keys as present;
//! * expiries are replicated as absolute times (`PXAT`), so a replica judges
//!   them by its own clock;
//! * without persistence a restart loses everything, and a replica that
//!   resyncs from an empty primary is emptied too.

use crate::client::Ctx;
use crate::ev;
use crate::time::Micros;
use crate::world::{
    Body, Chan, Cmd, Entry, Expiry, Msg, Node, ReplKind, ReplOp, Reply, Role, Status, Touch, Val,
    World,
};
use locklab_traces::EventKind;

fn replica_of(w: &World) -> Option<usize> {
    w.redis
        .iter()
        .position(|s| s.role == Role::Replica && !s.is_dead())
}

/// Queues a write for the replica. `exp` is the write's expiry as server
/// `p` fixed it; the replica judges the absolute time by its own clock.
fn replicate_later(x: &mut Ctx, p: usize, kind: ReplKind, exp: Option<Expiry>) {
    let Some(r) = replica_of(x.w) else { return };
    if x.w.redis[p].role != Role::Primary {
        return;
    }
    // The stream's own clock: time since the primary ran the write (the
    // same clock as the expiry it fixed, when it fixed one: a clock, once
    // armed, only ever measures time since its event).
    let since = match exp {
        Some(e) => e.since,
        None => x.t.reset(),
    };
    let offset = x.w.redis[r].clock - x.w.redis[p].clock;
    let exp = Expiry {
        ttl: exp.and_then(|e| e.ttl),
        shift: exp.map_or(0, |e| e.shift) + offset,
        since,
    };
    x.w.redis[p].backlog.push(ReplOp { kind, exp });
}

fn touch_foreign(w: &mut World, actor: u8, owner: u8, how: Touch) {
    if actor != owner && w.ghost.foreign.is_none() {
        w.ghost.foreign = Some((actor, owner, how));
    }
}

/// A compare-and-delete carrying `sent` matched the entry `found` by value
/// alone: if `found` is the sender's current attempt and `sent` came from
/// another one, a stale request of its own deleted its live lock.
fn stale_own_delete(w: &mut World, from: u8, sent: Val, found: Val) {
    let current = w.clients[from as usize].val(from);
    if sent != found && found == current && w.ghost.foreign.is_none() {
        w.ghost.foreign = Some((from, from, Touch::DeletedOwnCurrent));
    }
}

/// The lock entry of server `s` if it is live now. A primary that finds
/// its key expired deletes it (and replicates the `DEL`).
fn live_entry(x: &mut Ctx, s: usize) -> Option<Entry> {
    let e = x.w.redis[s].lock?;
    if x.live(&e) {
        return Some(e);
    }
    x.w.redis[s].lock = None;
    ev!(
        x.log,
        EventKind::Expire,
        x.w.server_name(s as u8),
        None,
        "lock {} has expired{}: deleted on access",
        e.val.text(),
        x.t.drift_note()
    );
    replicate_later(x, s, ReplKind::Del, None);
    None
}

/// A new expiry starting now, `ttl` long.
fn expiry(x: &mut Ctx, ttl: Option<Micros>) -> Expiry {
    Expiry {
        ttl,
        shift: 0,
        since: x.t.reset(),
    }
}

/// Runs `cmd`, sent by client `from`, on server `s` and returns the reply.
pub fn execute(x: &mut Ctx, s: u8, from: u8, cmd: Cmd) -> Reply {
    let si = s as usize;
    let cur = live_entry(x, si);
    match cmd {
        Cmd::SetNxPx { val, ttl } => match cur {
            Some(_) => Reply::Nil,
            None => {
                let exp = expiry(x, Some(ttl));
                x.w.redis[si].lock = Some(Entry::new(val, exp));
                replicate_later(x, si, ReplKind::Set(val), Some(exp));
                Reply::Ok
            }
        },
        Cmd::SetNx { val } => match cur {
            Some(_) => Reply::Int(0),
            None => {
                let exp = expiry(x, None);
                x.w.redis[si].lock = Some(Entry::new(val, exp));
                replicate_later(x, si, ReplKind::Set(val), Some(exp));
                Reply::Int(1)
            }
        },
        Cmd::Expire { ttl } | Cmd::PExpire { ttl } => match cur {
            Some(e) => {
                touch_foreign(x.w, from, e.val.client, Touch::Extended);
                let exp = expiry(x, Some(ttl));
                x.w.redis[si].lock = Some(Entry { exp, ..e });
                replicate_later(x, si, ReplKind::Expire, Some(exp));
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
                touch_foreign(x.w, from, e.val.client, Touch::Deleted);
                x.w.redis[si].lock = None;
                replicate_later(x, si, ReplKind::Del, None);
                Reply::Int(1)
            }
            None => Reply::Int(0),
        },
        Cmd::Cad { val } => match cur {
            Some(e) if x.m.params.value.same(e.val, val) => {
                stale_own_delete(x.w, from, val, e.val);
                x.w.redis[si].lock = None;
                replicate_later(x, si, ReplKind::Del, None);
                Reply::Int(1)
            }
            _ => Reply::Int(0),
        },
        Cmd::Renew { val, ttl } => match cur {
            Some(e) if x.m.params.value.same(e.val, val) => {
                let exp = expiry(x, Some(ttl));
                x.w.redis[si].lock = Some(Entry { exp, ..e });
                replicate_later(x, si, ReplKind::Expire, Some(exp));
                Reply::Int(1)
            }
            _ => Reply::Int(0),
        },
        Cmd::FencedSet { val, ttl } => match cur {
            Some(_) => Reply::Nil,
            None => {
                let exp = expiry(x, Some(ttl));
                x.w.redis[si].lock = Some(Entry::new(val, exp));
                x.w.redis[si].counter += 1;
                let token = x.w.redis[si].counter;
                replicate_later(x, si, ReplKind::SetAndIncr(val), Some(exp));
                x.w.issue_token(token);
                Reply::Token(token)
            }
        },
        Cmd::HashLock { val, ttl } => match cur {
            Some(e) if !x.m.params.value.same(e.val, val) => Reply::Nil,
            _ => {
                // Absent, or held by this very value: one more hold and a
                // fresh TTL (a re-entry, or a retry whose first try had
                // already landed).
                let holds = cur.map_or(0, |e| e.holds).saturating_add(1);
                let val = cur.map_or(val, |e| e.val);
                let exp = expiry(x, Some(ttl));
                x.w.redis[si].lock = Some(Entry { val, exp, holds });
                replicate_later(x, si, ReplKind::Holds(val, holds), Some(exp));
                Reply::Ok
            }
        },
        Cmd::HashUnlock { val, ttl } => match cur {
            Some(e) if x.m.params.value.same(e.val, val) => {
                if e.holds > 1 {
                    let exp = expiry(x, Some(ttl));
                    let holds = e.holds - 1;
                    x.w.redis[si].lock = Some(Entry { exp, holds, ..e });
                    replicate_later(x, si, ReplKind::Holds(e.val, holds), Some(exp));
                    Reply::Int(0)
                } else {
                    stale_own_delete(x.w, from, val, e.val);
                    x.w.redis[si].lock = None;
                    replicate_later(x, si, ReplKind::Del, None);
                    Reply::Int(1)
                }
            }
            // "attempt to unlock lock, not locked by current thread"
            _ => Reply::Nil,
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

/// Delivers a request to server `s`: runs it and sends the reply back on
/// the same connection (unless the sender has abandoned the request).
pub fn deliver(x: &mut Ctx, s: u8, msg: Msg) {
    let Node::Client(c) = msg.from else { return };
    let Body::Req(cmd) = msg.body else { return };
    let queued = x.w.redis[s as usize].backlog.len();
    let reply = execute(x, s, c, cmd);
    // `WAIT`: the reply leaves once the replica has applied every write of
    // the stream up to and including this command's own (Redisson sends
    // each lock script and `WAIT` as one batch, so it reads both answers
    // together). A command that wrote nothing has nothing to wait for; and
    // with no replica connected nothing is queued, as Redisson then counts
    // no replica to wait for.
    let backlog = x.w.redis[s as usize].backlog.len();
    let repl_wait = if x.m.params.wait_replicas > 0 && backlog > queued {
        backlog as u8
    } else {
        0
    };
    ev!(
        x.log,
        EventKind::Execute,
        x.w.server_name(s),
        Some(x.w.client_name(c)),
        "{} -> {}{}{}",
        cmd.text(),
        reply.text(),
        stale(x.w, &msg),
        crate::protocols::reentry::recreated(x.w, s, &msg)
    );
    let client_gone = !x.w.clients[c as usize].alive && msg.chan == Chan::Main;
    if msg.orphan || client_gone {
        ev!(
            x.log,
            EventKind::Note,
            x.w.server_name(s),
            Some(x.w.client_name(c)),
            "the reply goes nowhere: {} is not waiting for it",
            x.w.client_name(c)
        );
        return;
    }
    if repl_wait > 0 {
        ev!(
            x.log,
            EventKind::Note,
            x.w.server_name(s),
            Some(x.w.client_name(c)),
            "WAIT 1: the reply waits until the replica has the write"
        );
    }
    x.put_waiting(
        Node::Redis(s),
        Node::Client(c),
        msg.chan,
        msg.conn,
        Body::Reply(reply),
        repl_wait,
    );
}

/// The replica acknowledged one more write of primary `p`'s stream:
/// replies held by `WAIT` move up, and one that waited for nothing more
/// leaves now. `all`: a full resynchronisation delivered the whole stream.
fn acknowledge(x: &mut Ctx, p: u8, all: bool) {
    let mut freed = false;
    for i in 0..x.w.net.len() {
        let m = x.w.net[i];
        if m.from != Node::Redis(p) || m.repl_wait == 0 {
            continue;
        }
        let left = if all { 0 } else { m.repl_wait - 1 };
        x.w.net[i].repl_wait = left;
        if left == 0 {
            x.w.net[i].clk = x.t.reset();
            freed = true;
        }
    }
    if freed {
        ev!(
            x.log,
            EventKind::Note,
            x.w.server_name(p),
            None,
            "the replica acknowledged: WAIT returns 1, the reply leaves"
        );
    }
}

/// The replica applies the oldest write of the primary's stream.
pub fn replicate(x: &mut Ctx, p: u8) {
    let Some(r) = replica_of(x.w) else { return };
    if x.w.redis[p as usize].backlog.is_empty() {
        return;
    }
    let op = x.w.redis[p as usize].backlog.remove(0);
    acknowledge(x, p, false);
    let rep = &mut x.w.redis[r];
    match op.kind {
        ReplKind::Set(val) => {
            rep.lock = Some(Entry::new(val, op.exp));
        }
        ReplKind::Holds(val, holds) => {
            rep.lock = Some(Entry {
                val,
                exp: op.exp,
                holds,
            });
        }
        ReplKind::Del => rep.lock = None,
        ReplKind::Expire => {
            if let Some(e) = &mut rep.lock {
                e.exp = op.exp;
            }
        }
        ReplKind::SetAndIncr(val) => {
            rep.lock = Some(Entry::new(val, op.exp));
            rep.counter += 1;
        }
    }
    ev!(
        x.log,
        EventKind::Replicate,
        x.w.server_name(r as u8),
        Some(x.w.server_name(p)),
        "applies {}",
        op_text(op.kind)
    );
}

pub fn op_text(op: ReplKind) -> String {
    match op {
        ReplKind::Set(v) => format!("SET lock {} PXAT", v.text()),
        ReplKind::Del => "DEL lock".into(),
        ReplKind::Expire => "PEXPIREAT lock".into(),
        ReplKind::SetAndIncr(v) => format!("MULTI SET lock {} PXAT; INCR token EXEC", v.text()),
        ReplKind::Holds(v, n) => format!("MULTI HSET lock {} {n}; PEXPIREAT lock EXEC", v.text()),
    }
}

/// Server `s`'s wall clock jumps by `by`: its keys expire earlier
/// (forward) or later (backward), exactly as `expire.md` warns.
pub fn clock_jump(x: &mut Ctx, s: u8, by: Micros) {
    let si = s as usize;
    if replica_of(x.w).is_some() {
        x.w.redis[si].clock += by;
    }
    if let Some(e) = &mut x.w.redis[si].lock {
        e.exp.shift += by;
    }
    if x.w.redis[si].role == Role::Replica {
        // The stream carries absolute times: the replica's clock moving
        // changes how long they have left.
        for p in 0..x.w.redis.len() {
            for op in &mut x.w.redis[p].backlog {
                op.exp.shift += by;
            }
        }
    }
    ev!(
        x.log,
        EventKind::Fault,
        x.w.server_name(s),
        None,
        "wall clock JUMPS {} {}",
        if by > 0 { "forward" } else { "backward" },
        crate::units::show(by.abs())
    );
}

/// Drops every message in flight to or from server `s` (its connections
/// were reset). The clients' timeouts tell them.
fn reset_connections(w: &mut World, s: u8) {
    w.net
        .retain(|msg| msg.to != Node::Redis(s) && msg.from != Node::Redis(s));
}

/// Full resynchronisation of the replica from the primary.
fn resync(x: &mut Ctx) {
    let (Some(r), Some(p)) = (
        replica_of(x.w),
        x.w.redis
            .iter()
            .position(|n| n.role == Role::Primary && !n.is_dead()),
    ) else {
        return;
    };
    let offset = x.w.redis[r].clock - x.w.redis[p].clock;
    let lock = x.w.redis[p].lock.map(|e| Entry {
        exp: Expiry {
            shift: e.exp.shift + offset,
            ..e.exp
        },
        ..e
    });
    x.w.redis[r].lock = lock;
    x.w.redis[r].counter = x.w.redis[p].counter;
    x.w.redis[p].backlog.clear();
    acknowledge(x, p as u8, true);
}

/// Server `s` is back up, empty.
pub fn come_up(x: &mut Ctx, s: usize) {
    x.w.redis[s].status = Status::Up;
    ev!(
        x.log,
        EventKind::Note,
        x.w.server_name(s as u8),
        None,
        "is back up, empty"
    );
    resync(x);
}

/// Server `s` loses everything it held: its connections are reset, the
/// lock and the token counter are gone. With `--delayed-restart` it then
/// stays unavailable for a TTL and a bit, as the Redlock page recommends.
fn lose_everything(x: &mut Ctx, s: u8, what: &str) {
    let si = s as usize;
    reset_connections(x.w, s);
    let node = &mut x.w.redis[si];
    node.lock = None;
    node.counter = 0;
    node.backlog.clear();
    if x.m.params.delayed_restart {
        let down = x.t.reset();
        x.w.redis[si].status = Status::Down(down);
        ev!(
            x.log,
            EventKind::Fault,
            x.w.server_name(s),
            None,
            "{what}; stays unavailable {} (delayed restart)",
            crate::units::show(x.m.params.down_for())
        );
    } else {
        ev!(x.log, EventKind::Fault, x.w.server_name(s), None, "{what}");
        come_up(x, si);
    }
}

/// Server `s` restarts without persistence: it loses the lock and the
/// token counter.
pub fn restart(x: &mut Ctx, s: u8) {
    lose_everything(x, s, "RESTARTS and loses all data (no persistence)");
}

/// Primary `s` dies; its replica is promoted with exactly what it had
/// applied and starts expiring keys by its own clock. A Redlock instance
/// has no replica in the model: its failover is the worst case, a replica
/// that had received none of the lock writes (so, like a restart, it comes
/// back empty; with `--delayed-restart` it is kept out of service first).
pub fn failover(x: &mut Ctx, s: u8) {
    let p = s as usize;
    let Some(r) = replica_of(x.w) else {
        lose_everything(
            x,
            s,
            "FAILOVER: the primary dies; a replica that received none of the lock writes takes over",
        );
        return;
    };
    let lost = x.w.redis[p].backlog.len();
    reset_connections(x.w, p as u8);
    x.w.redis[p].status = Status::Dead;
    x.w.redis[p].backlog.clear();
    x.w.redis[r].role = Role::Primary;
    ev!(
        x.log,
        EventKind::Fault,
        x.w.server_name(p as u8),
        Some(x.w.server_name(r as u8)),
        "FAILOVER: primary dies, {} is promoted ({} unreplicated write{} lost)",
        x.w.server_name(r as u8),
        lost,
        if lost == 1 { "" } else { "s" }
    );
}
