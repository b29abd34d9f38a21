//! The consensus-service client calls the `fencing`, `zookeeper` and `etcd`
//! recipes share: the session heartbeat (ZooKeeper pings, etcd lease
//! keepalives, every TTL/3 on a timer inside the client process, so a pause
//! stops it) and the release.

use crate::client::Ctx;
use crate::world::{Chan, Cmd, Node, Phase, Reply, Session, WaitKind, Watchdog, WdState};

/// Acquire step: waiting for the session to open.
pub const OPENING: u8 = 9;

/// Starts an acquisition: with the session the client already has (its
/// heartbeat is running), or by opening one first.
pub fn begin(x: &mut Ctx, c: u8, first: (Cmd, Phase)) {
    // A kept session's heartbeat runs unseen (`coord::heartbeat_folds`).
    let kept = x.w.coord.sessions[c as usize] == Some(Session::Kept);
    if x.w.clients[c as usize].wd.is_some() || kept {
        ask(x, c, first.0, first.1);
    } else {
        ask(x, c, Cmd::Open, Phase::Acquire(OPENING));
    }
}

/// The session is open: start heartbeating it, then make the first request.
pub fn opened(x: &mut Ctx, c: u8, first: (Cmd, Phase)) {
    start_heartbeat(x, c);
    ask(x, c, first.0, first.1);
}

/// The service says the session is gone: stop heartbeating and start over
/// with a new one.
pub fn session_lost(x: &mut Ctx, c: u8) {
    x.w.clients[c as usize].wd = None;
    // The old session's heartbeat connection goes with it: a reply still on
    // its way must not reach the next session's heartbeat (it would become
    // deliverable long past its deadline, a state no time can leave).
    x.abandon(c, Chan::Watchdog);
    x.w.clients[c as usize].token = None;
    x.retry(c, "its session expired");
}

/// Starts client `c`'s heartbeat if it is not running.
fn start_heartbeat(x: &mut Ctx, c: u8) {
    let val = x.val(c);
    if x.w.clients[c as usize].wd.is_none() {
        let wait = x.wait(WaitKind::Renewal);
        x.w.clients[c as usize].wd = Some(Watchdog::new(val, wait));
    }
}

/// Sends `cmd` to the service and waits in `phase` for the answer.
pub fn ask(x: &mut Ctx, c: u8, cmd: Cmd, phase: Phase) {
    x.send_to(c, Node::Service, Chan::Main, cmd);
    x.await_reply(c, phase);
}

/// Waits in `phase` for a watch event, with no timeout: the wait lasts as
/// long as the predecessor holds.
pub fn wait_for_event(x: &mut Ctx, c: u8, phase: Phase) {
    let cl = &mut x.w.clients[c as usize];
    cl.phase = phase;
    cl.wait = None;
}

/// The heartbeat timer fired.
pub fn heartbeat(x: &mut Ctx, c: u8) {
    x.send_to(c, Node::Service, Chan::Watchdog, Cmd::KeepAlive);
    set_wd(x, c, WdState::Waiting, WaitKind::Reply);
}

/// The service answered a heartbeat.
pub fn on_heartbeat(x: &mut Ctx, c: u8, reply: Reply) {
    if reply == Reply::Alive(true) {
        set_wd(x, c, WdState::Sleeping, WaitKind::Renewal);
    } else {
        // etcd's Session.Done() closes, ZooKeeper reports the session
        // expired: the session is gone, and nothing tells the code that
        // believes it holds the lock.
        x.stop_renewal(
            c,
            "learns its session expired; the heartbeat stops (the lock holder is not told)",
        );
    }
}

/// A heartbeat timed out: try again at the next period.
pub fn on_heartbeat_timeout(x: &mut Ctx, c: u8) {
    set_wd(x, c, WdState::Sleeping, WaitKind::Renewal);
}

/// Client `c`'s renewal agent (watchdog or heartbeat) moves to `state`,
/// its next step waiting for `kind` from now.
pub fn set_wd(x: &mut Ctx, c: u8, state: WdState, kind: WaitKind) {
    if x.w.clients[c as usize].wd.is_some() {
        let wait = x.wait(kind);
        if let Some(wd) = &mut x.w.clients[c as usize].wd {
            wd.state = state;
            wd.wait = wait;
            if state == WdState::Sleeping {
                wd.resent = 0;
            }
        }
    }
}

/// Release: delete the client's entry and close its session.
pub fn release(x: &mut Ctx, c: u8) {
    // The entry's revision (the token may be its sequence number instead).
    let cl = &x.w.clients[c as usize];
    let rev =
        x.w.coord
            .entries
            .iter()
            .find(|e| e.owner == c && e.round == cl.round)
            .map_or(cl.token.unwrap_or(0), |e| e.rev);
    ask(x, c, Cmd::Remove { rev }, Phase::Release(0));
}

/// The entry the client is acquiring with (kept in `token` until it holds).
pub fn my_entry(x: &Ctx, c: u8) -> u16 {
    x.w.clients[c as usize].token.unwrap_or(0)
}
