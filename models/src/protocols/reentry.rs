//! Redisson's `RLock` taken twice by one thread (`--reenter`), for the
//! watchdog family with the hash lock (`--lock-shape hash`).
//!
//! ```text
//! lock(); try { work(); lock(); try { write(); } finally { unlock(); } } finally { unlock(); }
//! ```
//!
//! The second `lock()` runs the same script as the first
//! (`RedissonLock.tryLockInnerAsync`): if the key is absent it is created
//! with one hold, if it holds the caller's field the hold count goes up,
//! and either way the TTL starts again; only a key with another caller's
//! field refuses, and then `lock()` blocks and tries again. So a re-entry
//! after the key expired silently does not fail: it *creates the lock
//! anew*, with one hold where the thread believes it has two, and the
//! inner `unlock()` then deletes it while the outer section runs on. Each
//! successful `lock()` also counts one more hold in the thread's renewal
//! entry (`RenewalTask.add`, `LockEntry.addThreadId`), and each `unlock()`
//! one less, whatever its reply (`RedissonBaseLock.unlockAsync0` calls
//! `cancelExpirationRenewal` in `handle`); the watchdog stops only at
//! zero. An unbalanced pair (two `lock()`, one `unlock()`) therefore leaves
//! the key at one hold and the watchdog renewing it for as long as the
//! process lives: an orphan.

use super::redis_client as rc;
use crate::client::{Ctx, cancel_watchdog, work_done};
use crate::ev;
use crate::params::Reenter;
use crate::world::{Body, Chan, Cmd, Msg, Node, Phase, Reply, WaitKind, World};
use locklab_traces::EventKind;

/// A line of the trace about the re-entry.
fn say(x: &mut Ctx, c: u8, what: &str) {
    ev!(
        x.log,
        EventKind::Reenter,
        x.w.client_name(c),
        None,
        "{what}"
    );
}

/// The outer work is done: the holder calls `lock()` again.
pub fn reenter(x: &mut Ctx, c: u8) {
    say(x, c, "calls lock() again from the same thread (a re-entry)");
    send(x, c);
}

fn send(x: &mut Ctx, c: u8) {
    let s = x.w.primary();
    let cmd = rc::acquire_cmd(x, x.val(c));
    x.send(c, s, Chan::Main, cmd);
    x.await_reply(c, Phase::Reenter);
}

/// A re-entering client's step is due: its backoff is over (try again),
/// or its request timed out (`lock()` throws, the outer `finally` unlocks,
/// and the write is skipped).
pub fn reenter_due(x: &mut Ctx, c: u8) {
    let backoff = x.w.clients[c as usize]
        .wait
        .is_some_and(|w| w.kind == WaitKind::Backoff);
    if backoff {
        return send(x, c);
    }
    x.timed_out(c, "request timed out");
    if x.resend_request(c) {
        return;
    }
    say(x, c, "the inner lock() throws; the outer finally releases");
    x.leave(c);
}

/// The re-entry's reply.
pub fn on_reenter_reply(x: &mut Ctx, c: u8, reply: Reply) {
    if reply != Reply::Ok {
        x.back_off(
            c,
            "its re-entry finds the lock held by someone else: lock() blocks",
        );
        return;
    }
    x.w.clients[c as usize].reentered = true;
    let wd = x.w.clients[c as usize].wd;
    match wd {
        Some(mut wd) => {
            wd.holds = wd.holds.saturating_add(1);
            x.w.clients[c as usize].wd = Some(wd);
        }
        None => {
            // The renewal entry was dropped (a renewal found the key gone):
            // this lock() schedules a new one, counting one hold.
            let val = x.val(c);
            let wait = x.wait(WaitKind::Renewal);
            x.w.clients[c as usize].wd = Some(crate::world::Watchdog::new(val, wait));
        }
    }
    say(
        x,
        c,
        if wd.is_none() {
            "re-entered: by its own count it holds the lock twice (its watchdog starts again)"
        } else {
            "re-entered: by its own count it holds the lock twice"
        },
    );
    work_done(x, c);
}

/// Leaving the inner section: is the inner `unlock()` due (re-entered,
/// and the program has one)?
pub fn inner_unlock_due(x: &Ctx, c: u8) -> bool {
    x.m.params.reenter == Reenter::Balanced && x.w.clients[c as usize].reentered
}

/// The inner `unlock()`.
pub fn inner_release(x: &mut Ctx, c: u8) {
    say(x, c, "calls the inner unlock()");
    let s = x.w.primary();
    let cmd = rc::release_cmd(x, x.val(c));
    x.send(c, s, Chan::Main, cmd);
    x.await_reply(c, Phase::InnerRelease);
}

/// The inner `unlock()`'s reply: one hold less, the key deleted, or "not
/// locked by current thread" (`IllegalMonitorStateException`). Whatever
/// it says, the outer `finally` unlocks next.
pub fn on_inner_release_reply(x: &mut Ctx, c: u8, reply: Reply) {
    let what = match reply {
        Reply::Int(1) => {
            "the inner unlock() deleted the key: the lock is gone while the outer section still runs"
        }
        Reply::Int(_) => "the inner unlock() counted one hold down",
        _ => {
            "the inner unlock() finds the lock not held by this thread (IllegalMonitorStateException); the outer finally unlocks anyway"
        }
    };
    say(x, c, what);
    inner_done(x, c);
}

/// The inner `unlock()` timed out: it throws, and the outer `finally`
/// unlocks.
pub fn inner_release_timed_out(x: &mut Ctx, c: u8) {
    x.timed_out(c, "request timed out");
    if x.resend_request(c) {
        return;
    }
    say(
        x,
        c,
        "the inner unlock() throws; the outer finally releases",
    );
    inner_done(x, c);
}

fn inner_done(x: &mut Ctx, c: u8) {
    x.w.clients[c as usize].reentered = false;
    if !x.m.params.no_cancel {
        cancel_watchdog(x, c);
    }
    x.leave(c);
}

/// Marks, in a server's trace line, a re-entry that found the key gone and
/// created it anew: the script answers as it does for a re-entry, so the
/// client cannot tell, and believes it holds two holds where the key has
/// one.
pub fn recreated(w: &World, s: u8, msg: &Msg) -> &'static str {
    let (Node::Client(c), Body::Req(Cmd::HashLock { .. })) = (msg.from, msg.body) else {
        return "";
    };
    let live_request = msg.conn == 0 && w.clients[c as usize].phase == Phase::Reenter;
    match w.redis[s as usize].lock {
        Some(e) if live_request && e.val.client == c && e.holds == 1 => {
            " (a re-entry that found the key gone: it is created anew with one hold)"
        }
        _ => "",
    }
}
