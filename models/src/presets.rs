//! The Redlock clients people actually run, as named presets (`--client`).
//!
//! "A Redlock client" is not one program: redsync, redlock-py,
//! node-redlock, Redisson's `RedissonRedLock` and the `redlock` gem differ
//! in how they name their lock value, whether they clean up after a failed
//! attempt, whether they ask the instances one at a time, and whether they
//! check the validity left. (Redisson's `RedissonRedLock` is not a preset
//! yet: its value names a thread and its lock is a reentrant hash, which
//! the model's `SET NX` does not capture; docs/clients.md.) Each difference is a knob of its own
//! ([`LockValue`], [`UnlockOnFailure`], [`Release`], [`Requests`],
//! [`Decide`], the validity check and the elapsed-time clock); a preset
//! ([`ClientPreset`]) sets all of them as one library does. The sources,
//! file by file, are in docs/clients.md.

use crate::params::{ElapsedClock, Params};
use serde::{Deserialize, Serialize};

/// How a client names its lock value (the value `SET NX` writes and
/// compare-and-delete compares).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum LockValue {
    /// One value per `lock()` call, reused by its retries (redsync,
    /// redlock-py, node-redlock).
    #[default]
    PerCall,
    /// A new value for every attempt (the `redlock` gem: a fresh UUID per try).
    PerAttempt,
    /// One value per thread, reused by every acquisition (Redisson's
    /// `UUID:threadId`); a plain `SET NX` here, without Redisson's reentrant
    /// hash.
    PerThread,
}

/// What a client does with the instances that may hold its key after an
/// attempt failed.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum UnlockOnFailure {
    /// Compare-and-delete on every instance, results not awaited: the
    /// retry's backoff starts at once (the Redis page's algorithm as
    /// locklab models it by default).
    #[default]
    FireAndForget,
    /// Compare-and-delete on every instance and wait for the answers (or
    /// the request timeout) before the backoff (redsync, redlock-py,
    /// Redisson, the `redlock` gem).
    Await,
    /// Nothing between attempts: the keys of a failed attempt stay until
    /// they expire (node-redlock v5 releases only after its last attempt).
    None,
}

/// How a client releases the lock it holds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Release {
    /// Compare-and-delete on every instance, results not awaited.
    #[default]
    FireAndForget,
    /// Compare-and-delete on every instance, and the release returns once
    /// every instance answered or timed out (every library preset).
    Await,
}

/// How a client sends one round of requests to the instances.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Requests {
    /// To every instance at once (redsync, node-redlock).
    #[default]
    Concurrent,
    /// To one instance after another, each waiting for its answer or its
    /// own timeout (redlock-py, Redisson, the `redlock` gem).
    Sequential,
}

/// When a client decides an attempt.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Decide {
    /// Once every instance answered or timed out.
    #[default]
    AllReplies,
    /// As soon as a quorum said yes, or a quorum said no (node-redlock v5);
    /// later answers are ignored.
    FirstQuorum,
}

macro_rules! names {
    ($t:ty { $($v:ident => $n:literal),* $(,)? }) => {
        impl $t {
            pub const ALL: &'static [$t] = &[$(<$t>::$v),*];
            pub fn name(self) -> &'static str {
                match self { $(<$t>::$v => $n),* }
            }
            pub fn from_name(s: &str) -> Option<$t> {
                Self::ALL.iter().copied().find(|v| v.name() == s)
            }
        }
    };
}

names!(LockValue { PerCall => "per-call", PerAttempt => "per-attempt", PerThread => "per-thread" });
names!(UnlockOnFailure { FireAndForget => "fire-and-forget", Await => "await", None => "none" });
names!(Release { FireAndForget => "fire-and-forget", Await => "await" });
names!(Requests { Concurrent => "concurrent", Sequential => "sequential" });
names!(Decide { AllReplies => "all-replies", FirstQuorum => "first-quorum" });

impl LockValue {
    /// Whether a request carrying `a` and an entry holding `b` carry the
    /// same value on the wire (what compare-and-delete compares). The
    /// model keeps every attempt's identity apart from its wire value, so
    /// that a stale request of the same client is told apart from a
    /// current one.
    pub fn same(self, a: crate::world::Val, b: crate::world::Val) -> bool {
        a.client == b.client
            && match self {
                LockValue::PerThread => true,
                LockValue::PerCall => a.round == b.round,
                LockValue::PerAttempt => a.round == b.round && a.attempt == b.attempt,
            }
    }
}

/// A Redlock client library, as a set of behaviours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientPreset {
    /// The algorithm of the "Distributed Locks with Redis" page, as
    /// locklab models it by default: no library in particular.
    Page,
    Redsync,
    RedlockPy,
    NodeRedlock,
    RedlockRb,
}

names!(ClientPreset {
    Page => "page",
    Redsync => "redsync",
    RedlockPy => "redlock-py",
    NodeRedlock => "node-redlock",
    RedlockRb => "redlock-rb",
});

/// One preset's behaviours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub value: LockValue,
    pub unlock_on_failure: UnlockOnFailure,
    pub release: Release,
    pub requests: Requests,
    pub decide: Decide,
    pub validity_check: bool,
    pub elapsed_clock: ElapsedClock,
}

impl ClientPreset {
    /// The library and version the preset follows.
    pub fn library(self) -> &'static str {
        match self {
            ClientPreset::Page => "the algorithm of redis.io's \"Distributed Locks with Redis\"",
            ClientPreset::Redsync => "go-redsync/redsync v4",
            ClientPreset::RedlockPy => "SPSCommerce/redlock-py 1.0.8",
            ClientPreset::NodeRedlock => "mike-marcacci/node-redlock v5",
            ClientPreset::RedlockRb => "leandromoreira/redlock-rb (the `redlock` gem)",
        }
    }

    /// The behaviours it sets (docs/clients.md gives the source of each).
    pub fn behaviour(self) -> Behaviour {
        use ElapsedClock::{Monotonic, Wall};
        let b = |value, unlock_on_failure, release, requests, decide, validity_check, clock| {
            Behaviour {
                value,
                unlock_on_failure,
                release,
                requests,
                decide,
                validity_check,
                elapsed_clock: clock,
            }
        };
        match self {
            ClientPreset::Page => b(
                LockValue::PerCall,
                UnlockOnFailure::FireAndForget,
                Release::FireAndForget,
                Requests::Concurrent,
                Decide::AllReplies,
                true,
                Wall,
            ),
            ClientPreset::Redsync => b(
                LockValue::PerCall,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Concurrent,
                Decide::AllReplies,
                true,
                Monotonic,
            ),
            ClientPreset::RedlockPy => b(
                LockValue::PerCall,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Sequential,
                Decide::AllReplies,
                true,
                Wall,
            ),
            ClientPreset::NodeRedlock => b(
                LockValue::PerCall,
                UnlockOnFailure::None,
                Release::Await,
                Requests::Concurrent,
                Decide::FirstQuorum,
                false,
                Wall,
            ),
            ClientPreset::RedlockRb => b(
                LockValue::PerAttempt,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Sequential,
                Decide::AllReplies,
                true,
                Monotonic,
            ),
        }
    }

    /// The behaviours, as the options that set them.
    pub fn summary(self) -> String {
        let b = self.behaviour();
        format!(
            "--value {} --unlock-on-failure {} --release {} --requests {} --decide {} --validity-check {} --elapsed-clock {}",
            b.value.name(),
            b.unlock_on_failure.name(),
            b.release.name(),
            b.requests.name(),
            b.decide.name(),
            if b.validity_check { "on" } else { "off" },
            b.elapsed_clock.name()
        )
    }

    /// Sets every behaviour of the preset in `p`.
    pub fn apply(self, p: &mut Params) {
        let b = self.behaviour();
        p.client = Some(self);
        p.value = b.value;
        p.unlock_on_failure = b.unlock_on_failure;
        p.release = b.release;
        p.requests = b.requests;
        p.decide = b.decide;
        p.validity_check = b.validity_check;
        p.elapsed_clock = b.elapsed_clock;
    }
}
