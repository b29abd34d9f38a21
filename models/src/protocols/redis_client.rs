//! The Redis client calls several protocols share: acquiring with
//! `SET lock v NX PX ttl` and its reply handling.

use crate::client::Ctx;
use crate::world::{Chan, Cmd, Phase, Reply};

/// Sends `SET lock <my value> NX PX ttl` to the primary and waits in `Acquire(0)`.
pub fn acquire_set_nx_px(x: &mut Ctx, c: u8) {
    let s = x.w.primary();
    let cmd = Cmd::SetNxPx {
        val: x.val(c),
        ttl: x.m.params.ttl,
    };
    x.send(c, s, Chan::Main, cmd);
    x.await_reply(c, Phase::Acquire(0));
}

/// `OK` grants the lock; `nil` means another client holds it.
pub fn on_set_reply(x: &mut Ctx, c: u8, reply: Reply) {
    match reply {
        Reply::Ok => x.enter_cs(c, None),
        _ => x.retry(c, "the lock is held by someone else"),
    }
}

/// Sends a release command to the primary and waits in `Release(step)`.
pub fn release_with(x: &mut Ctx, c: u8, cmd: Cmd, step: u8) {
    let s = x.w.primary();
    x.send(c, s, Chan::Main, cmd);
    x.await_reply(c, Phase::Release(step));
}

/// A timed-out acquisition is retried; a timed-out release is given up
/// (the client cannot tell whether it ran).
pub fn on_timeout_default(x: &mut Ctx, c: u8) {
    match x.phase(c) {
        Phase::Acquire(_) => x.retry(c, "no answer"),
        _ => x.finish_round(c),
    }
}
