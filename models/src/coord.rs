//! The consensus-backed lock service, with the semantics ZooKeeper and etcd
//! give (docs/semantics.md §5, §6):
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

use crate::client::Ctx;
use crate::ev;
use crate::model::LockModel;
use crate::params::TokenSource;
use crate::world::{Body, Chan, Cmd, CoordEntry, Msg, Node, Reply, Session, WdState, World};
use locklab_traces::EventKind;

/// Whether client `c` has a live session / lease.
fn has_session(w: &World, c: u8) -> bool {
    w.coord.sessions[c as usize].is_some()
}

/// Deletes the entries at `idx` (one transaction: one new revision) and
/// fires the watches on them.
fn delete(x: &mut Ctx, idx: &[usize]) {
    if idx.is_empty() {
        return;
    }
    x.w.coord.rev += 1;
    if x.m.params.token == TokenSource::Sequence {
        x.w.coord.cversion += idx.len() as u16;
    }
    let gone: Vec<CoordEntry> = idx.iter().map(|i| x.w.coord.entries[*i]).collect();
    x.w.coord.entries =
        x.w.coord
            .entries
            .iter()
            .enumerate()
            .filter(|(i, _)| !idx.contains(i))
            .map(|(_, e)| *e)
            .collect();
    for e in gone {
        let fired: Vec<(u8, u16)> =
            x.w.coord
                .watches
                .iter()
                .copied()
                .filter(|(_, r)| *r == e.rev)
                .collect();
        x.w.coord.watches.retain(|(_, r)| *r != e.rev);
        for (watcher, rev) in fired {
            if !x.w.clients[watcher as usize].alive {
                continue;
            }
            ev!(
                x.log,
                EventKind::Send,
                "service".to_string(),
                Some(x.w.client_name(watcher)),
                "watch event: #{rev} deleted"
            );
            x.put(
                Node::Service,
                Node::Client(watcher),
                Chan::Main,
                0,
                Body::Reply(Reply::Deleted(rev)),
                false,
            );
        }
    }
}

/// The fencing token of entry `rev`: its creation revision (czxid), or
/// under `--token sequence` its node's sequence suffix.
pub fn token_of(m: &LockModel, w: &World, rev: u16) -> u16 {
    match m.params.token {
        TokenSource::Revision => rev,
        TokenSource::Sequence => w
            .coord
            .entries
            .iter()
            .find(|e| e.rev == rev)
            .map_or(rev, |e| e.seq),
    }
}

/// Whether the lock's parent is an empty container ZooKeeper may reap
/// (`--token sequence`: only then does its counter matter).
pub fn reapable(m: &LockModel, w: &World) -> bool {
    m.params.token == TokenSource::Sequence && w.coord.entries.is_empty() && w.coord.cversion > 0
}

/// ZooKeeper's `ContainerManager` deletes the empty container parent; the
/// next lock creates it again, and its children's sequence starts over.
pub fn reap(x: &mut Ctx) {
    x.w.coord.cversion = 0;
    ev!(
        x.log,
        EventKind::Note,
        "service".to_string(),
        None,
        "reaps the empty container node /lock: the next child's sequence number starts again at 0"
    );
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
fn own_entry(x: &mut Ctx, c: u8, round: u8) -> u16 {
    if let Some(e) =
        x.w.coord
            .entries
            .iter()
            .find(|e| e.owner == c && e.round == round)
    {
        return e.rev;
    }
    x.w.coord.rev += 1;
    let rev = x.w.coord.rev;
    // The parent's counter is kept only where it is the token: elsewhere
    // it would tell apart states that behave alike.
    let sequence = x.m.params.token == TokenSource::Sequence;
    let seq = x.w.coord.cversion;
    if sequence {
        x.w.coord.cversion += 1;
        ev!(
            x.log,
            EventKind::Note,
            "service".to_string(),
            Some(x.w.client_name(c)),
            "the node is /lock/node-{seq:010}: its token is {seq}"
        );
    }
    x.w.coord.entries.push(CoordEntry {
        owner: c,
        round,
        rev,
        seq,
    });
    let token = token_of(x.m, x.w, rev);
    x.w.issue_token(token);
    rev
}

/// Runs `cmd`, sent by client `c`, and returns the reply.
fn execute(x: &mut Ctx, c: u8, cmd: Cmd) -> Reply {
    // A ZooKeeper server renews a live session on every request.
    if x.m.proto.requests_renew_session()
        && matches!(x.w.coord.sessions[c as usize], Some(Session::Live(_)))
    {
        x.w.coord.sessions[c as usize] = Some(Session::Live(x.t.reset()));
    }
    match cmd {
        // An `Open` that reaches a kept session (one its client gave up
        // on, still on its way) renews it, and its heartbeat keeps it.
        Cmd::Open if x.w.coord.sessions[c as usize] == Some(Session::Kept) => Reply::Alive(true),
        Cmd::Open => {
            x.w.coord.sessions[c as usize] = Some(Session::Live(x.t.reset()));
            Reply::Alive(true)
        }
        // Creating an entry needs a live session (etcd: "lease not found";
        // ZooKeeper: session expired).
        Cmd::Lock { .. } | Cmd::Create { .. } | Cmd::Txn { .. } if !has_session(x.w, c) => {
            Reply::Alive(false)
        }
        Cmd::Lock { round } => match x.w.coord.entries.first() {
            Some(e) if e.owner == c && e.round == round => Reply::Token(e.rev),
            Some(_) => Reply::Busy,
            None => Reply::Token(own_entry(x, c, round)),
        },
        Cmd::Create { round } => Reply::Token(own_entry(x, c, round)),
        Cmd::Txn { round } => {
            let rev = own_entry(x, c, round);
            place(x.w, rev)
        }
        Cmd::Order { rev } => place(x.w, rev),
        Cmd::Watch { rev } => {
            if x.w.coord.entries.iter().any(|e| e.rev == rev) {
                x.w.coord.watches.push((c, rev));
                x.w.coord.watches.sort_unstable();
                Reply::Exists(true)
            } else {
                Reply::Exists(false)
            }
        }
        Cmd::KeepAlive if x.w.coord.sessions[c as usize] == Some(Session::Kept) => {
            Reply::Alive(true)
        }
        Cmd::KeepAlive => {
            if x.w.coord.sessions[c as usize].is_some() {
                x.w.coord.sessions[c as usize] = Some(Session::Live(x.t.reset()));
                Reply::Alive(true)
            } else {
                Reply::Alive(false)
            }
        }
        Cmd::Remove { rev } => {
            let idx = entries_of(x.w, c);
            let had =
                x.w.coord
                    .entries
                    .iter()
                    .any(|e| e.rev == rev && e.owner == c);
            delete(x, &idx);
            x.w.coord.sessions[c as usize] = None;
            x.w.coord.watches.retain(|(watcher, _)| *watcher != c);
            Reply::Int(had as u8)
        }
        // Redis commands never reach the service.
        _ => Reply::Nil,
    }
}

/// Folded heartbeats (docs/model.md, "Folded heartbeats"): whether the
/// service, taking client `c`'s keepalive `msg` now, can keep `c`'s session
/// alive for good and drop its heartbeat from the state.
///
/// That is exact when nothing the heartbeat does can be observed again.
/// Under normal timing it cannot fail: keepalives come often enough that
/// the session never expires (`LockModel::heartbeat_silence`), and every
/// answer is "alive", which changes nothing. Only a fault can disturb it,
/// so none may be left that could (`HEARTBEAT_DISTURBERS`). The
/// keepalive taken now must be the one the heartbeat waits for, with
/// nothing else of the heartbeat in flight, and the client not frozen, so
/// that the bound holds from now on. A heartbeat
/// that is never cancelled (`--no-cancel`) is not folded: it outlives the
/// session it kept, and its next keepalive tells the client so.
fn heartbeat_folds(x: &Ctx, c: u8, msg: &Msg) -> bool {
    use crate::faults::can_strike;
    let (m, w) = (x.m, &*x.w);
    if !may_fold_heartbeats(m) || msg.orphan {
        return false;
    }
    if !matches!(w.coord.sessions[c as usize], Some(Session::Live(_))) {
        return false;
    }
    if HEARTBEAT_DISTURBERS.iter().any(|k| can_strike(m, w, *k)) {
        return false;
    }
    let cl = &w.clients[c as usize];
    let waiting = cl.wd.is_some_and(|d| d.state == WdState::Waiting);
    let me = Node::Client(c);
    let in_flight = w
        .net
        .iter()
        .any(|n| n.chan == Chan::Watchdog && (n.from == me || n.to == me));
    cl.paused.is_none() && waiting && !in_flight
}

/// Whether this model ever folds a heartbeat: the reduction is on, the
/// protocol's sessions are heartbeated, the heartbeat is cancelled with
/// its lock, and it outpaces the session's expiry
/// (`LockModel::heartbeat_silence`).
pub fn may_fold_heartbeats(m: &LockModel) -> bool {
    m.params.fold_heartbeats
        && !m.params.no_cancel
        && m.proto.renewal() == crate::protocols::Renewal::Heartbeat
        && m.heartbeat_silence().is_some()
}

/// The fault kinds that can disturb a session heartbeat, or the release
/// that ends a kept session (`Session::Closing`): a pause stops its timer,
/// a loss or a delay takes a keepalive, its answer or the release, a crash
/// kills the heartbeat with the process or, of the business thread alone
/// (`--crash thread`), leaves a closing session unclosed, and a clock jump
/// is counted for safety (the service's clock never jumps).
pub const HEARTBEAT_DISTURBERS: [crate::faults::FaultKind; 5] = {
    use crate::faults::FaultKind;
    [
        FaultKind::Pause,
        FaultKind::Loss,
        FaultKind::Delay,
        FaultKind::ClockJump,
        FaultKind::Crash,
    ]
};

/// Delivers a request to the service: runs it and answers on the same
/// connection (unless the sender has abandoned the request).
pub fn deliver(x: &mut Ctx, msg: Msg) {
    let Node::Client(c) = msg.from else { return };
    let Body::Req(cmd) = msg.body else { return };
    if cmd == Cmd::KeepAlive && heartbeat_folds(x, c, &msg) {
        x.w.coord.sessions[c as usize] = Some(Session::Kept);
        x.w.clients[c as usize].wd = None;
        ev!(
            x.log,
            EventKind::Note,
            "service".to_string(),
            Some(x.w.client_name(c)),
            "{} -> alive; from here on no fault left can stop {}'s heartbeat, which keeps its session alive for good (its keepalives are no longer shown)",
            cmd.text(),
            x.w.client_name(c)
        );
        return;
    }
    let reply = execute(x, c, cmd);
    ev!(
        x.log,
        EventKind::Execute,
        "service".to_string(),
        Some(x.w.client_name(c)),
        "{} -> {}{}",
        cmd.text(),
        reply.text(),
        crate::redis::stale(x.w, &msg)
    );
    let gone = !x.w.clients[c as usize].alive && msg.chan == Chan::Main;
    if msg.orphan || gone {
        return;
    }
    x.put(
        Node::Service,
        Node::Client(c),
        msg.chan,
        msg.conn,
        Body::Reply(reply),
        false,
    );
}

/// The service expires client `c`'s session (lease): it has not heard a
/// keepalive for the whole TTL. Its entries go in one transaction (and, in
/// ZooKeeper, its watches with it).
pub fn expire(x: &mut Ctx, c: u8) {
    x.w.coord.sessions[c as usize] = None;
    ev!(
        x.log,
        EventKind::Expire,
        "service".to_string(),
        Some(x.w.client_name(c)),
        "{}'s session expires: its lock entries are deleted",
        x.w.client_name(c)
    );
    let idx = entries_of(x.w, c);
    delete(x, &idx);
    if !x.m.proto.watches_survive_session() {
        x.w.coord.watches.retain(|(watcher, _)| *watcher != c);
    }
}

/// Positions of client `c`'s lock entries in the service.
fn entries_of(w: &World, c: u8) -> Vec<usize> {
    w.coord
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.owner == c)
        .map(|(i, _)| i)
        .collect()
}
