//! `fencing` (article §7): a consensus-backed lock service grants the lock
//! with a monotonic token (its revision), kept by a lease the client
//! heartbeats; the client carries the token to the resource, which checks
//! it where `--resource-check` says (default: on writes, the article's
//! form) with the rule `--token-rule` says. Mutual exclusion of *belief*
//! still breaks under a pause — leases are timeouts too; whether the
//! *resource* stays correct is what the token check decides.

use super::{CONSENSUS_FAULTS, Protocol, Renewal, Service, coord_client as cc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::params::ResourceCheck;
use crate::world::{Cmd, Phase, Reply};

pub struct Fencing;

fn first(x: &Ctx, c: u8) -> (Cmd, Phase) {
    let round = x.w.clients[c as usize].round;
    (Cmd::Lock { round }, Phase::Acquire(0))
}

impl Protocol for Fencing {
    fn name(&self) -> &'static str {
        "fencing"
    }
    fn summary(&self) -> &'static str {
        "a consensus lock service grants a monotonic token with each lease; the resource checks tokens"
    }
    fn service(&self) -> Service {
        Service::Consensus
    }
    fn faults(&self) -> &'static [FaultKind] {
        CONSENSUS_FAULTS
    }
    fn issues_tokens(&self) -> bool {
        true
    }
    fn renewal(&self) -> Renewal {
        Renewal::Heartbeat
    }
    fn default_resource_check(&self) -> ResourceCheck {
        ResourceCheck::Write
    }
    fn service_label(&self) -> &'static str {
        "consensus lock service"
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        cc::begin(x, c, first(x, c));
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        match (x.phase(c), reply) {
            (Phase::Acquire(cc::OPENING), Reply::Alive(_)) => cc::opened(x, c, first(x, c)),
            (Phase::Acquire(0), Reply::Alive(false)) => cc::session_lost(x, c),
            (Phase::Acquire(0), Reply::Token(t)) => x.enter_cs(c, Some(t)),
            (Phase::Acquire(0), _) => x.retry(c, "the lock is held by someone else"),
            (Phase::Release(0), _) => x.finish_round(c),
            _ => ignore(x, c, reply),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        cc::release(x, c);
    }
}
