//! `get-del`: acquire with `SET lock v NX PX ttl`; release by `GET`, compare
//! in the client, then `DEL` — two round trips with a window between the
//! check and the act (article §4.2).

use super::{Protocol, SINGLE_REDIS_FAULTS, Service, redis_client as rc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::{Cmd, Phase, Reply};

pub struct GetDel;

impl Protocol for GetDel {
    fn name(&self) -> &'static str {
        "get-del"
    }
    fn summary(&self) -> &'static str {
        "SET NX PX to acquire; GET, compare in the client, then DEL to release"
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
        match (x.phase(c), reply) {
            (Phase::Acquire(0), r) => rc::on_set_reply(x, c, r),
            // Still mine: delete it (in a second round trip).
            (Phase::Release(0), Reply::Val(v)) if v == x.val(c) => {
                rc::release_with(x, c, Cmd::Del, 1)
            }
            // Gone or someone else's: nothing to release.
            (Phase::Release(0), _) => x.finish_round(c),
            (Phase::Release(1), _) => x.finish_round(c),
            _ => ignore(x, c, reply),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        rc::release_with(x, c, Cmd::Get, 0);
    }
}
