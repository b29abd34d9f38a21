//! `no-lock` (article §9.3 "绕开锁"): no lock at all. Every client goes
//! straight into its critical section; only the resource can keep the data
//! correct. With `--resource-op conditional` the resource's own conditional
//! update (`UPDATE ... SET stock = stock - 1 WHERE stock > 0`) does the
//! mutual exclusion ("很多\u{201c}分布式锁需求\u{201d}其实是一条带WHERE条件的UPDATE就能解决的事");
//! with a client-side check or a read-modify-write it cannot.

use super::{Protocol, Service};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::Reply;

pub struct NoLock;

/// What can still go wrong without a lock: the clients' own faults.
const FAULTS: &[FaultKind] = &[FaultKind::Pause, FaultKind::Slow, FaultKind::Crash];

impl Protocol for NoLock {
    fn name(&self) -> &'static str {
        "no-lock"
    }
    fn summary(&self) -> &'static str {
        "no lock at all (§9.3): clients go straight to the resource, whose own conditional update must keep it correct"
    }
    fn service(&self) -> Service {
        Service::Nothing
    }
    fn faults(&self) -> &'static [FaultKind] {
        FAULTS
    }
    fn has_lock(&self) -> bool {
        false
    }
    fn service_label(&self) -> &'static str {
        "no lock service"
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        x.enter_cs(c, None);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        ignore(x, c, reply);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        x.finish_round(c);
    }
}
