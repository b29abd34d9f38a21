//! `lua-release`: acquire with `SET lock v NX PX ttl`, release with the Lua
//! compare-and-delete script, which Redis runs atomically (article §4.3):
//! `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) else return 0 end`

use super::{Protocol, SINGLE_REDIS_FAULTS, Service, redis_client as rc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::{Cmd, Phase, Reply};

pub struct LuaRelease;

impl Protocol for LuaRelease {
    fn name(&self) -> &'static str {
        "lua-release"
    }
    fn summary(&self) -> &'static str {
        "SET NX PX to acquire, atomic Lua compare-and-delete to release"
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
        let val = x.val(c);
        rc::release_with(x, c, Cmd::Cad { val }, 0);
    }
}
