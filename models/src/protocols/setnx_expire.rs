//! `setnx-expire`: the old two-command acquisition, `SETNX lock v` then
//! `EXPIRE lock ttl` in a second round trip; release with `DEL` (article
//! §2.1). A crash between the two commands leaves a lock that never expires.

use super::{Protocol, SINGLE_REDIS_FAULTS, Service, redis_client as rc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::{Chan, Cmd, Phase, Reply};

pub struct SetnxExpire;

impl Protocol for SetnxExpire {
    fn name(&self) -> &'static str {
        "setnx-expire"
    }
    fn summary(&self) -> &'static str {
        "SETNX then EXPIRE (two commands) to acquire, DEL to release"
    }
    fn service(&self) -> Service {
        Service::Single
    }
    fn faults(&self) -> &'static [FaultKind] {
        SINGLE_REDIS_FAULTS
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        let s = x.w.primary();
        let val = x.val(c);
        x.send(c, s, Chan::Main, Cmd::SetNx { val });
        x.await_reply(c, Phase::Acquire(0));
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, s: u8, reply: Reply) {
        match (x.phase(c), reply) {
            (Phase::Acquire(0), Reply::Int(1)) => {
                let ttl = x.m.params.ttl;
                x.send(c, s, Chan::Main, Cmd::Expire { ttl });
                x.await_reply(c, Phase::Acquire(1));
            }
            (Phase::Acquire(0), _) => x.retry(c, "the lock is held by someone else"),
            // Typical code ignores EXPIRE's result: the SETNX already won.
            (Phase::Acquire(1), _) => x.enter_cs(c, None),
            (Phase::Release(0), _) => x.finish_round(c),
            _ => ignore(x, c, reply),
        }
    }
    fn on_timeout(&self, x: &mut Ctx, c: u8) {
        match x.phase(c) {
            // SETNX won; the EXPIRE's fate is unknown. The client goes on.
            Phase::Acquire(1) => x.enter_cs(c, None),
            _ => rc::on_timeout_default(x, c),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        rc::release_with(x, c, Cmd::Del, 0);
    }
}
