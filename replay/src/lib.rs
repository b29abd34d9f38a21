//! `locklab replay`: runs a counterexample the model found against real
//! servers — `redis-server` for the Redis protocols, a single-node etcd for
//! `etcd` and `fencing`, a standalone ZooKeeper for `zookeeper` — and
//! reports, step by step, whether the real server replied what the model
//! predicted, and whether the invariant violation really happened.
//!
//! * [`servers`]: the redis-server processes (127.0.0.1 only, free ports,
//!   fresh 0700 dirs, no persistence, always stopped) and the clock shim;
//!   [`coordsrv`]: the etcd and ZooKeeper processes, kept the same way.
//! * [`resp`], [`etcd`], [`zk`]: the small clients the drivers speak (RESP,
//!   etcd's JSON gateway over HTTP/1.1, ZooKeeper's jute protocol).
//! * [`driver`] (Redis) and [`coord_driver`] (etcd, ZooKeeper): walk the
//!   trace through the model and do the real thing for every step.
//! * [`timemap`]: the one place where model time (exact µs) becomes real
//!   time: a speed factor, the same for the schedule and for every TTL,
//!   lease and session timeout the servers are told; and the real
//!   uncertainty against which a step's timing margin is judged.
//! * [`report`]: the conformance report and the verdict.
//!
//! A trace carries the earliest exact times of its steps, which put a
//! server's timing decisions as close to their bounds as the model allows;
//! by default the driver re-times the same steps to keep a real-time margin
//! (`driver::retime`, the model's exact solver), and a step whose margin is
//! still below the real uncertainty is reported (`~`), never passed.
//! Every (client, server, channel) is one real TCP connection per
//! generation: a client that timed out gets a new one, and a request it had
//! already sent goes out on the old one.
//!
//! The driver plays every client (and the protected resource, which is the
//! model's): a client pause is the driver not sending for that client (no
//! keepalive, no ping), a lost request is one it never sends, a lost reply
//! one it reads and hides. Redis servers suffer real faults: clock jumps
//! through the clock-shift shim, restarts by `kill -9` and a fresh empty
//! start, failover by the recipe that really loses an unreplicated write.
//! The replayer runs on Linux only.

pub mod coord_driver;
pub mod coordsrv;
pub mod driver;
pub mod etcd;
pub mod report;
pub mod resp;
pub mod servers;
pub mod timemap;
pub mod zk;

pub use coordsrv::CoordOptions;
pub use driver::{Options, replay, system_of};
pub use report::Report;
pub use servers::ServerOptions;

/// Why a replay could not run to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The trace cannot be replayed (it does not validate, or its protocol
    /// has no real system to run on).
    Input(String),
    /// The machine cannot run it: a server missing, a port in use, a
    /// server that did not come up in time, the driver so far behind its
    /// real-time schedule that no timing means anything.
    Env(String),
    /// Ctrl-C (or SIGTERM) arrived; every server was stopped.
    Interrupted,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Input(m) | Error::Env(m) => f.write_str(m),
            Error::Interrupted => f.write_str("interrupted; every server it started is stopped"),
        }
    }
}

impl std::error::Error for Error {}

/// Ctrl-C and SIGTERM handling without extra crates: the handler only sets
/// a flag; the driver checks it between steps and while it waits, then
/// returns `Error::Interrupted`, and the servers are stopped on the way out.
pub mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};

    static INTERRUPTED: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_signal(_sig: i32) {
        INTERRUPTED.store(true, Ordering::SeqCst);
    }

    /// Catches SIGINT and SIGTERM for the rest of the process.
    pub fn install() {
        let handler: extern "C" fn(i32) = on_signal;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(libc::SIGINT, handler as libc::sighandler_t);
            libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        }
    }

    pub fn interrupted() -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }
}
