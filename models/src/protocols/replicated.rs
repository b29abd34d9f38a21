//! `replicated`: the `watchdog` protocol on a Redis primary with one
//! asynchronously replicated replica (article §6.1). Writes reach the
//! replica in a later step; the primary judges expiry and replicates its
//! `DEL`; the replica never expires keys itself. When the primary fails,
//! the replica is promoted with only what it had applied — a lock the
//! primary acknowledged but had not yet shipped is simply gone.
//!
//! The clients' rules are the watchdog's, unchanged.

use super::{Protocol, Renewal, Service, redis_client as rc, watchdog};
use crate::client::Ctx;
use crate::faults::FaultKind;
use crate::world::Reply;

/// Every fault kind applies: Redis instances restart, fail over and jump
/// their clocks, clients pause, slow down and crash, messages are lost and delayed.
pub const FAULTS: &[FaultKind] = &FaultKind::LOCK_SIDE;

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
    fn renewal(&self) -> Renewal {
        Renewal::Watchdog
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        rc::acquire_set_nx_px(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        watchdog::on_reply(x, c, reply);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        watchdog::start_release(x, c);
    }
}
