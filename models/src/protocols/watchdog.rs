//! `watchdog` (Redisson style, article §5): acquire with
//! `SET lock v NX PX <watchdog timeout>`; while the lock is held, a renewal
//! timer inside the client process runs every TTL/3 and resets the TTL with
//! the Lua compare-and-`PEXPIRE` script; the renewal is cancelled before the
//! release, which is the Lua compare-and-delete script.
//!
//! The renewal runs on its own timer in the client process: a `slow`
//! critical section does not stop it, a `pause` freezes it with everything
//! else. As in Redisson and python-redis-lock (whose renewal thread dies on
//! `NotAcquired`), a renewal that finds the lock gone (reply 0) stops
//! silently: the holder is not told. A renewal that times out is retried
//! at the next period (Redisson >= 3.44) or, with `--renewal-on-error
//! stop`, ends the watchdog for good (Redisson <= 3.43, python-redis-lock).
//!
//! Buggy variants: `--renew-unchecked` renews with a plain `PEXPIRE` (no
//! ownership check); `--no-cancel` never cancels the renewal, so it outlives
//! a finished or crashed business thread. `--renew-cap` stops renewing after
//! that many ticks, the article's fallback against a stuck holder.

use super::coord_client::set_wd;
use super::{Protocol, Renewal, Service, redis_client as rc};
use crate::client::{Ctx, ignore};
use crate::ev;
use crate::faults::FaultKind;
use crate::presets::RenewalOnError;
use crate::world::{Chan, Cmd, Phase, Reply, WaitKind, WdState};
use locklab_traces::EventKind;

/// Faults a single Redis with watchdog clients can suffer.
pub const FAULTS: &[FaultKind] = super::SINGLE_REDIS_FAULTS;

pub struct Watchdog;

/// The renewal command for the value `wd` guards.
fn renewal_cmd(x: &Ctx, wd: &crate::world::Watchdog) -> Cmd {
    let ttl = x.m.params.ttl;
    if x.m.params.renew_unchecked {
        Cmd::PExpire { ttl }
    } else {
        Cmd::Renew { val: wd.val, ttl }
    }
}

/// The renewal timer fired: send one renewal for the value it guards.
pub fn renew(x: &mut Ctx, c: u8) {
    let Some(mut wd) = x.w.clients[c as usize].wd else {
        return;
    };
    let cmd = renewal_cmd(x, &wd);
    let s = x.w.primary();
    x.send(c, s, Chan::Watchdog, cmd);
    if x.m.params.renew_cap.is_some() {
        wd.renewals += 1;
    }
    wd.resent = 0;
    x.w.clients[c as usize].wd = Some(wd);
    set_wd(x, c, WdState::Waiting, WaitKind::Reply);
}

/// The renewal in flight timed out (its connection already closed): the
/// transport sends the same renewal again on a new connection, with a fresh
/// timeout, if it has re-sends left (`--transport-retries`). Returns false
/// when the renewal thread is to see the failure.
pub fn resend(x: &mut Ctx, c: u8) -> bool {
    let Some(mut wd) = x.w.clients[c as usize].wd else {
        return false;
    };
    if wd.resent >= x.m.params.transport_retries {
        return false;
    }
    wd.resent += 1;
    let cmd = renewal_cmd(x, &wd);
    let s = x.w.primary();
    x.resend(
        c,
        crate::world::Node::Redis(s),
        Chan::Watchdog,
        cmd,
        wd.resent,
    );
    x.w.clients[c as usize].wd = Some(wd);
    set_wd(x, c, WdState::Waiting, WaitKind::Reply);
    true
}

/// A renewal reply arrived.
pub fn on_renewed(x: &mut Ctx, c: u8, reply: Reply) {
    let Some(wd) = x.w.clients[c as usize].wd else {
        return ignore(x, c, reply);
    };
    if reply != Reply::Int(1) {
        x.stop_renewal(
            c,
            "renewal found the lock gone: the watchdog stops, silently (the business thread is not told)",
        );
        return;
    }
    let every = x.m.params.renew_every;
    let capped =
        x.m.params
            .renew_cap
            .is_some_and(|cap| wd.renewals as i128 * every as i128 >= cap as i128);
    if capped {
        x.stop_renewal(c, "renewed; the renewal cap is reached, the watchdog stops");
    } else {
        set_wd(x, c, WdState::Sleeping, WaitKind::Renewal);
        ev!(
            x.log,
            EventKind::Renew,
            x.w.client_name(c),
            None,
            "renewed; next renewal in {}",
            crate::units::show(every)
        );
    }
}

/// A renewal timed out (lost, late, or its connection reset): Redisson
/// 3.44 and later tries again at the next period; up to 3.43 it gives up
/// for good and tells nobody, so the key expires a TTL after the last renewal that
/// landed while the holder keeps working.
pub fn on_renew_timeout(x: &mut Ctx, c: u8) {
    if x.m.params.renewal_on_error == RenewalOnError::Stop {
        x.stop_renewal(
            c,
            "renewal timed out; the watchdog stops for good, silently (renewal-on-error=stop: Redisson <= 3.43)",
        );
        return;
    }
    let every = x.m.params.renew_every;
    set_wd(x, c, WdState::Sleeping, WaitKind::Renewal);
    ev!(
        x.log,
        EventKind::Renew,
        x.w.client_name(c),
        None,
        "renewal timed out; retries in {}",
        crate::units::show(every)
    );
}

/// The acquire/release rules shared with `replicated`.
pub fn on_reply(x: &mut Ctx, c: u8, reply: Reply) {
    match x.phase(c) {
        Phase::Acquire(0) => rc::on_set_reply(x, c, reply),
        Phase::Release(0) => x.finish_round(c),
        Phase::Reenter => super::reentry::on_reenter_reply(x, c, reply),
        Phase::InnerRelease => super::reentry::on_inner_release_reply(x, c, reply),
        _ => ignore(x, c, reply),
    }
}

pub fn start_release(x: &mut Ctx, c: u8) {
    let mut val = x.val(c);
    if task_thread_releases(x) {
        val.task = true;
        ev!(
            x.log,
            EventKind::Note,
            x.w.client_name(c),
            None,
            "the task it handed the lock to calls unlock() from its own thread, whose field the key does not hold"
        );
    }
    let cmd = rc::release_cmd(x, val);
    rc::release_with(x, c, cmd, 0);
}

/// Redisson's field is `UUID:threadId`: with `--handoff transfer` the task
/// releases from a thread other than the one that locked, so its
/// `unlock()` matches nothing ("attempt to unlock lock, not locked by
/// current thread") and takes no count from the renewal entry, which
/// keeps renewing (`RedissonBaseLock.unlockAsync0`; the way around it is
/// `unlockAsync(threadId)` with the locking thread's id, or
/// `forceUnlock`).
pub fn task_thread_releases(x: &Ctx) -> bool {
    x.m.params.handoff == crate::params::Handoff::Transfer
        && x.m.params.lock_shape == crate::presets::LockShape::Hash
        && x.m.proto.renewal() == Renewal::Watchdog
}

impl Protocol for Watchdog {
    fn name(&self) -> &'static str {
        "watchdog"
    }
    fn summary(&self) -> &'static str {
        "SET NX PX, renewed every TTL/3 by Lua compare-and-PEXPIRE (Redisson), Lua release"
    }
    fn service(&self) -> Service {
        Service::Single
    }
    fn faults(&self) -> &'static [FaultKind] {
        FAULTS
    }
    fn renewal(&self) -> Renewal {
        Renewal::Watchdog
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        rc::acquire_set_nx_px(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        on_reply(x, c, reply);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        start_release(x, c);
    }
}
