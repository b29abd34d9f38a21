//! `naive-del`: acquire with `SET lock v NX PX ttl`, release with a plain
//! `DEL lock` that does not check whose lock it deletes (article §4.1).

use super::{Protocol, SINGLE_REDIS_FAULTS, Service, redis_client as rc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::{Cmd, Phase, Reply};

pub struct NaiveDel;

impl Protocol for NaiveDel {
    fn name(&self) -> &'static str {
        "naive-del"
    }
    fn summary(&self) -> &'static str {
        "SET NX PX to acquire, plain DEL to release (deletes whoever's lock is there)"
    }
    fn service(&self) -> Service {
        Service::Single
    }
    fn faults(&self) -> &'static [FaultKind] {
        SINGLE_REDIS_FAULTS
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        rc::acquire_set_nx_px(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        match x.phase(c) {
            Phase::Acquire(0) => rc::on_set_reply(x, c, reply),
            Phase::Release(0) => x.finish_round(c),
            _ => ignore(x, c, reply),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        rc::release_with(x, c, Cmd::Del, 0);
    }
}
