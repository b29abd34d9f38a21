//! The Redis client calls several protocols share: acquiring with
//! `SET lock v NX PX ttl` (or Redisson's hash-lock script) and its reply
//! handling.

use crate::client::Ctx;
use crate::presets::LockShape;
use crate::world::{Chan, Cmd, Phase, Reply, Val};

/// The acquire command for `val`: `SET lock <val> NX PX ttl`, or
/// Redisson's hash-lock script (`--lock-shape hash`). Both answer `OK`
/// when the lock is taken and nil when someone else holds it.
pub fn acquire_cmd(x: &Ctx, val: Val) -> Cmd {
    let ttl = x.m.params.ttl;
    match x.m.params.lock_shape {
        LockShape::String => Cmd::SetNxPx { val, ttl },
        LockShape::Hash => Cmd::HashLock { val, ttl },
    }
}

/// The release command for `val`: compare-and-delete, or Redisson's
/// hash-unlock script, which counts one hold down.
pub fn release_cmd(x: &Ctx, val: Val) -> Cmd {
    match x.m.params.lock_shape {
        LockShape::String => Cmd::Cad { val },
        LockShape::Hash => Cmd::HashUnlock {
            val,
            ttl: x.m.params.ttl,
        },
    }
}

/// Sends the acquire command for the client's value to the primary and
/// waits in `Acquire(0)`.
pub fn acquire_set_nx_px(x: &mut Ctx, c: u8) {
    let s = x.w.primary();
    let cmd = acquire_cmd(x, x.val(c));
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
