//! The lock protocols. Each protocol's rules live in their own file and are
//! written once, against [`Ctx`]; the checker and the simulator both drive
//! them through the same world transitions.
//!
//! A protocol is the program its clients run (how they acquire and release,
//! whether a watchdog renews) plus the kind of lock service they talk to.

use crate::client::Ctx;
use crate::faults::FaultKind;
use crate::world::Reply;

pub mod coord_client;
mod etcd;
mod fencing;
mod fencing_redis;
mod get_del;
mod lua_release;
mod naive_del;
mod no_lock;
mod queue;
pub mod redis_client;
mod redlock;
pub mod reentry;
mod replicated;
mod setnx_expire;
pub mod watchdog;
mod zookeeper;

pub use etcd::Etcd;
pub use fencing::Fencing;
pub use fencing_redis::FencingRedis;
pub use get_del::GetDel;
pub use lua_release::LuaRelease;
pub use naive_del::NaiveDel;
pub use no_lock::NoLock;
pub use queue::Queue;
pub use redlock::Redlock;
pub use replicated::Replicated;
pub use setnx_expire::SetnxExpire;
pub use watchdog::Watchdog;
pub use zookeeper::Zookeeper;

/// What keeps a client's claim on the lock alive, on a timer of its own
/// inside the client process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    None,
    /// Redisson's watchdog: compare-and-PEXPIRE every TTL/3 while holding.
    Watchdog,
    /// A ZooKeeper session ping / etcd lease keepalive every TTL/3.
    Heartbeat,
}

/// The kind of lock service a protocol's clients talk to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// One Redis instance.
    Single,
    /// A Redis primary with one asynchronously replicated replica.
    Replicated,
    /// N independent Redis instances (Redlock).
    Instances,
    /// A consensus-backed lock service (ZooKeeper, etcd).
    Consensus,
    /// No lock service at all (`no-lock`).
    Nothing,
}

/// Fault kinds a consensus-backed service and its clients can suffer: no
/// restart or failover loses its data, and its clock is monotonic.
pub const CONSENSUS_FAULTS: &[FaultKind] = &[
    FaultKind::Pause,
    FaultKind::Slow,
    FaultKind::Loss,
    FaultKind::Delay,
    FaultKind::Crash,
];

/// Fault kinds a single Redis instance (and its clients) can suffer.
pub const SINGLE_REDIS_FAULTS: &[FaultKind] = &[
    FaultKind::Pause,
    FaultKind::Slow,
    FaultKind::Loss,
    FaultKind::Delay,
    FaultKind::ClockJump,
    FaultKind::Crash,
    FaultKind::Restart,
];

/// One lock protocol: the rules its clients follow.
///
/// Hooks run inside one atomic step of the client. Whatever they send goes
/// out at the end of that step; whatever they wait for comes in later
/// steps, so a fault can always fall in between.
pub trait Protocol: Send + Sync {
    /// The CLI name.
    fn name(&self) -> &'static str;
    /// One line for `locklab list`.
    fn summary(&self) -> &'static str;
    fn service(&self) -> Service;
    /// Fault kinds its lock service and clients can suffer (the default set for `check`).
    fn faults(&self) -> &'static [FaultKind];
    /// Whether clients read their own wall clock for lock decisions (Redlock).
    fn uses_client_clock(&self) -> bool {
        false
    }
    /// Whether gathering client `c` has the replies it reads together
    /// (every one it waits for, unless the protocol decides on fewer).
    fn replies_ready(&self, _m: &crate::model::LockModel, w: &crate::world::World, c: u8) -> bool {
        crate::client::all_arrived(w, c)
    }
    /// Whether clients check the lock's validity before writing.
    fn checks_validity(&self) -> bool {
        false
    }
    /// What keeps the client's claim alive while it holds (and, for a
    /// session, while it waits).
    fn renewal(&self) -> Renewal {
        Renewal::None
    }
    /// Whether there is a lock at all (`no-lock` has none: no belief to
    /// hold, no lock entry to own or orphan).
    fn has_lock(&self) -> bool {
        true
    }
    /// Whether the lock service hands out fencing tokens.
    fn issues_tokens(&self) -> bool {
        false
    }
    /// Whether clients wait for a reply from several servers at once and
    /// read them together (an event loop reading every ready socket) rather
    /// than one by one. Such a client's replies are not delivered by
    /// separate steps: its `gather` step reads them all once every one has
    /// arrived, or when its timeout fires.
    fn gathers_replies(&self) -> bool {
        false
    }
    /// The gathering step (only if `gathers_replies`).
    fn gather(&self, _x: &mut Ctx, _c: u8) {}
    /// Where the resource checks fencing tokens unless the user says.
    fn default_resource_check(&self) -> crate::params::ResourceCheck {
        crate::params::ResourceCheck::None
    }
    /// Whether a watch outlives its owner's session (etcd watches are not
    /// tied to the lease; ZooKeeper's die with the session).
    fn watches_survive_session(&self) -> bool {
        false
    }
    /// Whether every request on a live session renews it. A ZooKeeper
    /// server renews a session on any packet from its client
    /// (`SessionTrackerImpl.touchSession`, called for every request the
    /// server receives; found by replaying on a real ZooKeeper 3.8);
    /// etcd renews a lease only on `LeaseKeepAlive`.
    fn requests_renew_session(&self) -> bool {
        false
    }
    /// What the lock service is, for diagrams.
    fn service_label(&self) -> &'static str {
        "Redis"
    }

    /// Client `c` starts an acquisition.
    fn start_acquire(&self, x: &mut Ctx, c: u8);
    /// A reply from server `s` reaches client `c` on its main connection.
    fn on_reply(&self, x: &mut Ctx, c: u8, s: u8, reply: Reply);
    /// Client `c`'s request timed out (its connection is already closed). By
    /// default a timed-out acquisition is retried and a timed-out release
    /// given up (the client cannot tell whether it ran).
    fn on_timeout(&self, x: &mut Ctx, c: u8) {
        match x.phase(c) {
            crate::world::Phase::Acquire(_) => x.retry(c, "no answer"),
            _ => x.finish_round(c),
        }
    }
    /// Client `c` starts releasing.
    fn start_release(&self, x: &mut Ctx, c: u8);

    /// Validity check before the write (only if `checks_validity`).
    fn check_before_write(&self, x: &mut Ctx, c: u8) {
        crate::resource::write(x, c);
    }
    /// For a client in its critical section that knows how long its lock is
    /// valid (Redlock's validity check), the clock condition under which its
    /// own clock still says it is. `None`: the client believes it holds for
    /// as long as it is in its critical section.
    fn validity(
        &self,
        _m: &crate::model::LockModel,
        _w: &crate::world::World,
        _c: u8,
    ) -> Option<crate::invariants::Below> {
        None
    }
    /// Client `c` writes: does its own clock still say its validity lasts?
    /// A timing question, for the `within_validity` ghost. `None`: the
    /// client does not know its validity.
    fn still_valid(&self, _x: &mut Ctx, _c: u8) -> Option<bool> {
        None
    }
    /// The renewal timer fired.
    fn on_watchdog(&self, x: &mut Ctx, c: u8) {
        match self.renewal() {
            Renewal::Watchdog => watchdog::renew(x, c),
            Renewal::Heartbeat => coord_client::heartbeat(x, c),
            Renewal::None => {}
        }
    }
    /// A renewal reply arrived.
    fn on_watchdog_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        match self.renewal() {
            Renewal::Watchdog => watchdog::on_renewed(x, c, reply),
            Renewal::Heartbeat => coord_client::on_heartbeat(x, c, reply),
            Renewal::None => crate::client::ignore(x, c, reply),
        }
    }
    /// A renewal timed out.
    fn on_watchdog_timeout(&self, x: &mut Ctx, c: u8) {
        match self.renewal() {
            Renewal::Watchdog => watchdog::on_renew_timeout(x, c),
            Renewal::Heartbeat => coord_client::on_heartbeat_timeout(x, c),
            Renewal::None => {}
        }
    }
}

/// Every protocol, in the order of the article's ladder.
pub static ALL: &[&dyn Protocol] = &[
    &SetnxExpire,
    &NaiveDel,
    &GetDel,
    &LuaRelease,
    &Watchdog,
    &Replicated,
    &Redlock,
    &Fencing,
    &FencingRedis,
    &Zookeeper,
    &Etcd,
    &Queue,
    &NoLock,
];

/// Looks a protocol up by its CLI name.
pub fn by_name(name: &str) -> Option<&'static dyn Protocol> {
    ALL.iter().copied().find(|p| p.name() == name)
}

/// The CLI names of every protocol.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|p| p.name()).collect()
}
