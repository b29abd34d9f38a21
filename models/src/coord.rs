//! The consensus-backed lock service, with the semantics ZooKeeper and etcd
//! give (semantics.md §5, §6):
//!
//! * linearizable: each request runs atomically, in one step;
//! * nothing is lost when its leader changes, so restarts and failovers are
//!   not faults it suffers, and its clock is monotonic: clock jumps do not
//!   reach it;
//! * every change bumps one global counter (etcd's revision, ZooKeeper's
//!   zxid); an entry's creation revision is a monotonic fencing token;
//! * sessions (ZooKeeper) and leases (etcd) expire on the leader's clock
//!   unless the client's heartbeat keeps them alive; an expiring session
//!   deletes its entries in one transaction and fires the watches on them.
//!   A paused client stops heartbeating and learns nothing until it next
//!   talks to the service.

use crate::ev;
use crate::model::LockModel;
use crate::world::{Body, Chan, Cmd, CoordEntry, Log, Msg, Node, Reply, STicks, Ticks, World};
use locklab_traces::EventKind;

/// Whether client `c` has a live session / lease.
fn has_session(w: &World, c: u8) -> bool {
    w.coord.sessions[c as usize].is_some()
}

/// Deletes the entries at `idx` (one transaction: one new revision) and
/// fires the watches on them.
fn delete(m: &LockModel, w: &mut World, idx: &[usize], log: &mut Log) {
    let fifo = m.params.network == crate::params::Network::Fifo;
    if idx.is_empty() {
        return;
    }
    w.coord.rev += 1;
    let gone: Vec<CoordEntry> = idx.iter().map(|i| w.coord.entries[*i]).collect();
    w.coord.entries = w
        .coord
        .entries
        .iter()
        .enumerate()
        .filter(|(i, _)| !idx.contains(i))
        .map(|(_, e)| *e)
        .collect();
    for e in gone {
        let fired: Vec<(u8, u16)> = w
            .coord
            .watches
            .iter()
            .copied()
            .filter(|(_, r)| *r == e.rev)
            .collect();
        w.coord.watches.retain(|(_, r)| *r != e.rev);
        for (watcher, rev) in fired {
            if !w.clients[watcher as usize].alive {
                continue;
            }
            ev!(
                log,
                EventKind::Send,
                "service".to_string(),
                Some(w.client_name(watcher)),
                "watch event: #{rev} deleted"
            );
            w.send_msg(
                Msg {
                    from: Node::Service,
                    to: Node::Client(watcher),
                    chan: Chan::Main,
                    conn: 0,
                    seq: 0,
                    body: Body::Reply(Reply::Deleted(rev)),
                    held: None,
                    orphan: false,
                },
                fifo,
            );
        }
    }
}

/// Where entry `rev` stands.
fn place(w: &World, rev: u16) -> Reply {
    let pred = w
        .coord
        .entries
        .iter()
        .filter(|e| e.rev < rev)
        .map(|e| e.rev)
        .max();
    let mine = w.coord.entries.iter().any(|e| e.rev == rev);
    Reply::Place { rev, pred, mine }
}

/// Adds an entry for client `c`'s acquisition `round` unless it has one
/// (a retried request finds its own entry, as Curator's protected mode and
/// etcd's `CreateRevision(myKey) == 0` guard do). Returns its revision.
fn own_entry(w: &mut World, c: u8, round: u8) -> u16 {
    if let Some(e) = w
        .coord
        .entries
        .iter()
        .find(|e| e.owner == c && e.round == round)
    {
        return e.rev;
    }
    w.coord.rev += 1;
    let rev = w.coord.rev;
    w.coord.entries.push(CoordEntry {
        owner: c,
        round,
        rev,
    });
    // The entry's creation revision is its fencing token.
    w.issue_token(rev);
    rev
}

/// Runs `cmd`, sent by client `c`, and returns the reply.
fn execute(m: &LockModel, w: &mut World, c: u8, cmd: Cmd, log: &mut Log) -> Reply {
    // A ZooKeeper server renews a live session on every request.
    if m.proto.requests_renew_session()
        && let Some(t) = &mut w.coord.sessions[c as usize]
    {
        *t = m.params.ttl as STicks;
    }
    match cmd {
        Cmd::Open => {
            w.coord.sessions[c as usize] = Some(m.params.ttl as STicks);
            Reply::Alive(true)
        }
        // Creating an entry needs a live session (etcd: "lease not found";
        // ZooKeeper: session expired).
        Cmd::Lock { .. } | Cmd::Create { .. } | Cmd::Txn { .. } if !has_session(w, c) => {
            Reply::Alive(false)
        }
        Cmd::Lock { round } => match w.coord.entries.first() {
            Some(e) if e.owner == c && e.round == round => Reply::Token(e.rev),
            Some(_) => Reply::Busy,
            None => Reply::Token(own_entry(w, c, round)),
        },
        Cmd::Create { round } => Reply::Token(own_entry(w, c, round)),
        Cmd::Txn { round } => {
            let rev = own_entry(w, c, round);
            place(w, rev)
        }
        Cmd::Order { rev } => place(w, rev),
        Cmd::Watch { rev } => {
            if w.coord.entries.iter().any(|e| e.rev == rev) {
                w.coord.watches.push((c, rev));
                w.coord.watches.sort_unstable();
                Reply::Exists(true)
            } else {
                Reply::Exists(false)
            }
        }
        Cmd::KeepAlive => match &mut w.coord.sessions[c as usize] {
            Some(t) => {
                *t = m.params.ttl as STicks;
                Reply::Alive(true)
            }
            None => Reply::Alive(false),
        },
        Cmd::Remove { rev } => {
            let idx: Vec<usize> = w
                .coord
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.owner == c)
                .map(|(i, _)| i)
                .collect();
            let had = w.coord.entries.iter().any(|e| e.rev == rev && e.owner == c);
            delete(m, w, &idx, log);
            w.coord.sessions[c as usize] = None;
            w.coord.watches.retain(|(watcher, _)| *watcher != c);
            Reply::Int(had as u8)
        }
        // Redis commands never reach the service.
        _ => Reply::Nil,
    }
}

/// Delivers a request to the service: runs it and answers on the same
/// connection (unless the sender has abandoned the request).
pub fn deliver(m: &LockModel, w: &mut World, msg: Msg, log: &mut Log) {
    let Node::Client(c) = msg.from else { return };
    let Body::Req(cmd) = msg.body else { return };
    let reply = execute(m, w, c, cmd, log);
    ev!(
        log,
        EventKind::Execute,
        "service".to_string(),
        Some(w.client_name(c)),
        "{} -> {}{}",
        cmd.text(),
        reply.text(),
        crate::redis::stale(w, &msg)
    );
    let gone = !w.clients[c as usize].alive && msg.chan == Chan::Main;
    if msg.orphan || gone {
        return;
    }
    w.send_msg(
        Msg {
            from: Node::Service,
            to: Node::Client(c),
            chan: msg.chan,
            conn: msg.conn,
            seq: 0,
            body: Body::Reply(reply),
            held: None,
            orphan: false,
        },
        m.params.network == crate::params::Network::Fifo,
    );
}

/// `n` ticks on the leader's monotonic clock (never past a deadline):
/// sessions not heard from for their whole TTL expire, with their entries
/// (and, in ZooKeeper, with their watches).
pub fn tick(m: &LockModel, w: &mut World, n: Ticks, log: &mut Log) {
    let by = n.min(STicks::MAX as Ticks) as STicks;
    for c in 0..w.coord.sessions.len() {
        let Some(t) = w.coord.sessions[c] else {
            continue;
        };
        let left = t - by;
        if left >= 0 {
            w.coord.sessions[c] = Some(left);
            continue;
        }
        w.coord.sessions[c] = None;
        ev!(
            log,
            EventKind::Expire,
            "service".to_string(),
            Some(w.client_name(c as u8)),
            "{}'s session expires: its lock entries are deleted",
            w.client_name(c as u8)
        );
        let idx: Vec<usize> = w
            .coord
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.owner as usize == c)
            .map(|(i, _)| i)
            .collect();
        delete(m, w, &idx, log);
        if !m.proto.watches_survive_session() {
            w.coord
                .watches
                .retain(|(watcher, _)| *watcher as usize != c);
        }
    }
}

/// Ticks until the next session expiry, if any.
pub fn next_deadline(w: &World) -> Option<Ticks> {
    w.coord
        .sessions
        .iter()
        .flatten()
        .filter(|t| **t >= 0)
        .map(|t| (*t + 1) as Ticks)
        .min()
}
