//! `fencing-redis` (Redisson's `RFencedLock`, article §7.3): the watchdog
//! lock on the replicated Redis of `replicated`, where the acquire script
//! also runs `INCR token` and returns the new value as the fencing token.
//! The counter lives on the same primary as the lock, so a failover can
//! lose its latest increments like any other unreplicated write.

use super::{Protocol, Renewal, Service, replicated, watchdog};
use crate::client::Ctx;
use crate::faults::FaultKind;
use crate::params::ResourceCheck;
use crate::world::{Chan, Cmd, Phase, Reply};

pub struct FencingRedis;

impl Protocol for FencingRedis {
    fn name(&self) -> &'static str {
        "fencing-redis"
    }
    fn summary(&self) -> &'static str {
        "the replicated watchdog lock whose acquire script also INCRs a fencing token on the primary"
    }
    fn service(&self) -> Service {
        Service::Replicated
    }
    fn faults(&self) -> &'static [FaultKind] {
        replicated::FAULTS
    }
    fn renewal(&self) -> Renewal {
        Renewal::Watchdog
    }
    fn issues_tokens(&self) -> bool {
        true
    }
    fn default_resource_check(&self) -> ResourceCheck {
        ResourceCheck::Write
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        let s = x.w.primary();
        let cmd = Cmd::FencedSet {
            val: x.val(c),
            ttl: x.m.params.ttl,
        };
        x.send(c, s, Chan::Main, cmd);
        x.await_reply(c, Phase::Acquire(0));
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        match (x.phase(c), reply) {
            (Phase::Acquire(0), Reply::Token(t)) => x.enter_cs(c, Some(t)),
            (Phase::Acquire(0), _) => x.retry(c, "the lock is held by someone else"),
            _ => watchdog::on_reply(x, c, reply),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        watchdog::start_release(x, c);
    }
}
