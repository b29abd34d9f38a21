//! `replicated`: the `watchdog` protocol on a Redis primary with one
//! asynchronously replicated replica (article §6.1). Writes reach the
//! replica in a later step; the primary judges expiry and replicates its
//! `DEL`; the replica never expires keys itself. When the primary fails,
//! the replica is promoted with only what it had applied — a lock the
//! primary acknowledged but had not yet shipped is simply gone.
//!
//! The clients' rules are the watchdog's, unchanged.

use super::{Protocol, Service, redis_client as rc, watchdog};
use crate::client::Ctx;
use crate::faults::FaultKind;
use crate::world::Reply;

pub const FAULTS: &[FaultKind] = &[
    FaultKind::Pause,
    FaultKind::Slow,
    FaultKind::Loss,
    FaultKind::Delay,
    FaultKind::ClockJump,
    FaultKind::Crash,
    FaultKind::Restart,
    FaultKind::Failover,
];

pub struct Replicated;

impl Protocol for Replicated {
    fn name(&self) -> &'static str {
        "replicated"
    }
    fn summary(&self) -> &'static str {
        "the watchdog protocol on a primary with an async replica; failover promotes the replica"
    }
    fn service(&self) -> Service {
        Service::Replicated
    }
    fn faults(&self) -> &'static [FaultKind] {
        FAULTS
    }
    fn has_watchdog(&self) -> bool {
        true
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        rc::acquire_set_nx_px(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        watchdog::on_reply(x, c, reply);
    }
    fn on_timeout(&self, x: &mut Ctx, c: u8) {
        rc::on_timeout_default(x, c);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        watchdog::start_release(x, c);
    }
    fn on_watchdog(&self, x: &mut Ctx, c: u8) {
        watchdog::renew(x, c);
    }
    fn on_watchdog_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        watchdog::on_renewed(x, c, reply);
    }
    fn on_watchdog_timeout(&self, x: &mut Ctx, c: u8) {
        watchdog::on_renew_timeout(x, c);
    }
}
