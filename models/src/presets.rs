//! The lock clients people actually run, as named presets (`--client`).
//!
//! "A Redlock client" is not one program: redsync, redlock-py,
//! node-redlock, Redisson's `RedissonRedLock` and the `redlock` gem differ
//! in how they name their lock value, whether they clean up after a failed
//! attempt, whether they ask the instances one at a time, and whether they
//! check the validity left. Nor is "a watchdog lock": Redisson's `RLock`
//! is a reentrant hash, waits for a replica after every lock script, and
//! before 3.44 gave up renewing after one error; python-redis-lock's
//! renewal thread runs every ⅔ of the TTL and dies at its first error.
//! Each difference is a knob of its own ([`LockValue`],
//! [`UnlockOnFailure`], [`Release`], [`Requests`], [`Decide`], the
//! validity check, the elapsed-time clock, [`LockShape`], the replica
//! wait, [`RenewalOnError`] and the renewal period); a preset
//! ([`ClientPreset`]) sets all of them as one library does, for the
//! protocols it is a client of ([`ClientPreset::protocols`]). The sources,
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
    /// As soon as a quorum said yes; without one, once every instance
    /// answered or timed out (pottery: `concurrent.futures.as_completed`
    /// returns at the first majority of acquired masters, and only then).
    FirstYesQuorum,
}

/// What the lock key holds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum LockShape {
    /// A string: `SET lock <value> NX PX`, released by compare-and-delete.
    #[default]
    String,
    /// Redisson's reentrant hash `{<value> → hold count}`: the acquire
    /// script succeeds when the key is absent *or already holds the
    /// caller's field* (and then counts one more hold and resets the TTL);
    /// the unlock script counts one hold down and deletes the key at zero
    /// (`RedissonLock.tryLockInnerAsync`, `unlockInnerAsync`).
    Hash,
}

/// What a watchdog does when a renewal fails with an error (a timeout, a
/// reset connection), as opposed to a reply saying the lock is gone.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum RenewalOnError {
    /// Try again at the next period (Redisson >= 3.44, `RenewalTask.run`).
    #[default]
    Retry,
    /// Stop renewing for good, telling nobody (Redisson <= 3.43:
    /// `renewExpiration` logs "Can't update lock ... expiration" and
    /// removes the lock from `EXPIRATION_RENEWAL_MAP`).
    Stop,
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
names!(Decide { AllReplies => "all-replies", FirstQuorum => "first-quorum", FirstYesQuorum => "first-yes-quorum" });
names!(LockShape { String => "string", Hash => "hash" });
names!(RenewalOnError { Retry => "retry", Stop => "stop" });

impl LockValue {
    /// Whether a request carrying `a` and an entry holding `b` carry the
    /// same value on the wire (what compare-and-delete compares). The
    /// model keeps every attempt's identity apart from its wire value, so
    /// that a stale request of the same client is told apart from a
    /// current one.
    pub fn same(self, a: crate::world::Val, b: crate::world::Val) -> bool {
        a.client == b.client
            && a.task == b.task
            && match self {
                LockValue::PerThread => true,
                LockValue::PerCall => a.round == b.round,
                LockValue::PerAttempt => a.round == b.round && a.attempt == b.attempt,
            }
    }
}

/// A client library, as a set of behaviours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientPreset {
    /// The algorithm of the "Distributed Locks with Redis" page, as
    /// locklab models it by default: no library in particular.
    Page,
    Redsync,
    RedlockPy,
    NodeRedlock,
    /// node-redlock 4.2.0 (mike-marcacci/node-redlock, `redlock.js`).
    #[serde(rename = "node-redlock@4")]
    NodeRedlock4,
    RedlockRb,
    /// The Rust `redlock` crate (badboy/redlock-rs 2.0.0).
    RedlockRs,
    /// redlock-ng 2.0.4 (Python, alwaysvivek/redlock), its synchronous `Redlock`.
    RedlockNg,
    /// pottery 3.0.1's `Redlock` (Python, brainix/pottery).
    Pottery,
    /// Redisson (3.44 and later): `RLock` on a single Redis or a primary
    /// with replicas, `RedissonRedLock` on Redlock instances.
    Redisson,
    /// Redisson 3.43 and earlier: a renewal error stops the watchdog.
    #[serde(rename = "redisson@3.43")]
    Redisson343,
    /// redis-py's `redis.lock.Lock` (5.0.8; the same in 8.1.0): one
    /// instance, no renewal.
    RedisPyLock,
    /// python-redis-lock 4.0.1 (ionelmc): `auto_renewal` is a watchdog
    /// thread; without it the lock is `lua-release`'s.
    PythonRedisLock,
}

names!(ClientPreset {
    Page => "page",
    Redsync => "redsync",
    RedlockPy => "redlock-py",
    NodeRedlock => "node-redlock",
    NodeRedlock4 => "node-redlock@4",
    RedlockRb => "redlock-rb",
    RedlockRs => "redlock-rs",
    RedlockNg => "redlock-ng",
    Pottery => "pottery",
    Redisson => "redisson",
    Redisson343 => "redisson@3.43",
    RedisPyLock => "redis-py-lock",
    PythonRedisLock => "python-redis-lock",
});

// The protocol lists are the options' own (`params`): the protocols whose
// client is a Redlock client, Redisson's `RLock` (the watchdog family),
// all of Redisson's, and the lock with neither quorum nor renewal.
use crate::params::{HASH_SHAPED, LUA_RELEASE, REDISSON, REDLOCK, WATCHDOG_FAMILY as RLOCK};

/// python-redis-lock's: its lock with `auto_renewal` on one Redis (or a
/// Sentinel master) and, without `auto_renewal`, `lua-release`'s.
const PYTHON_REDIS_LOCK: &[&str] = &["watchdog", "replicated", "lua-release"];

/// One Redlock preset's behaviours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub value: LockValue,
    pub unlock_on_failure: UnlockOnFailure,
    pub release: Release,
    pub requests: Requests,
    pub decide: Decide,
    pub validity_check: bool,
    pub elapsed_clock: ElapsedClock,
    pub shape: LockShape,
}

/// One single-Redis (watchdog family) preset's behaviours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RLockBehaviour {
    pub value: LockValue,
    pub shape: LockShape,
    /// Replicas the client waits for after each lock script (`WAIT n`).
    pub wait_replicas: u8,
    pub renewal_on_error: RenewalOnError,
    /// The renewal period as a fraction of the TTL, when the library's
    /// differs from the watchdog's default TTL/3 (Redisson's
    /// `lockWatchdogTimeout / 3`): python-redis-lock renews every ⅔.
    pub renew_every: Option<(i64, i64)>,
}

impl ClientPreset {
    /// The library and version the preset follows.
    pub fn library(self) -> &'static str {
        match self {
            ClientPreset::Page => "the algorithm of redis.io's \"Distributed Locks with Redis\"",
            ClientPreset::Redsync => "go-redsync/redsync v4",
            ClientPreset::RedlockPy => "SPSCommerce/redlock-py 1.0.8",
            ClientPreset::NodeRedlock => "mike-marcacci/node-redlock v5",
            ClientPreset::NodeRedlock4 => "mike-marcacci/node-redlock 4.2.0",
            ClientPreset::RedlockRb => "leandromoreira/redlock-rb (the `redlock` gem)",
            ClientPreset::RedlockRs => "badboy/redlock-rs 2.0.0 (the Rust `redlock` crate)",
            ClientPreset::RedlockNg => "redlock-ng 2.0.4 (alwaysvivek/redlock; its sync Redlock)",
            ClientPreset::Pottery => "brainix/pottery 3.0.1 (Redlock)",
            ClientPreset::Redisson => "redisson/redisson 3.44+ (RLock; RedissonRedLock on redlock)",
            ClientPreset::Redisson343 => "redisson/redisson up to 3.43 (RLock)",
            ClientPreset::RedisPyLock => "redis/redis-py 5.0.8 to 8.1.0 (redis.lock.Lock)",
            ClientPreset::PythonRedisLock => {
                "ionelmc/python-redis-lock 4.0.1 (auto_renewal: watchdog, replicated; without: lua-release)"
            }
        }
    }

    /// The protocols this library is a client of.
    pub fn protocols(self) -> &'static [&'static str] {
        match self {
            ClientPreset::Redisson => REDISSON,
            ClientPreset::Redisson343 => RLOCK,
            ClientPreset::RedisPyLock => LUA_RELEASE,
            ClientPreset::PythonRedisLock => PYTHON_REDIS_LOCK,
            _ => REDLOCK,
        }
    }

    /// Whether the preset is a client of `protocol`.
    pub fn fits(self, protocol: &str) -> bool {
        self.protocols().contains(&protocol)
    }

    /// The Redlock behaviours it sets (docs/clients.md gives the source of
    /// each); `None` for a library that is no Redlock client.
    pub fn redlock(self) -> Option<Behaviour> {
        use ElapsedClock::{Monotonic, Wall};
        let b = |value, unlock_on_failure, release, requests, decide, validity_check, clock| {
            Some(Behaviour {
                value,
                unlock_on_failure,
                release,
                requests,
                decide,
                validity_check,
                elapsed_clock: clock,
                shape: LockShape::String,
            })
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
            // `_lock` draws `value = self._random()` once, before
            // `attempt()`; sends the lock script to every server and
            // decides in `loop` once `waiting` is down to 0; keeps the
            // lock iff `votes >= quorum && lock.expiration > Date.now()`,
            // `expiration = start + ttl - drift`, `start = Date.now()`;
            // after a failed attempt `lock.unlock(cb)`, the retry timer
            // set in its callback, once every server answered.
            ClientPreset::NodeRedlock4 => b(
                LockValue::PerCall,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Concurrent,
                Decide::AllReplies,
                true,
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
            // `RedLock::lock`: one value before the retry loop; one server
            // after another; the unlocks after a failed try in the same
            // loop. Its validity `ttl - drift - elapsed` is a `usize`: past
            // the TTL it wraps (release build) and the check `> 0` passes,
            // so only an exact zero is refused: the check is as good as
            // off. `Instant`: monotonic.
            ClientPreset::RedlockRs => b(
                LockValue::PerCall,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Sequential,
                Decide::AllReplies,
                false,
                Monotonic,
            ),
            // `Redlock.acquire` (sync): `token = get_random_token()` before
            // `while True`; `for instance in self.client.instances`, each
            // `SET NX PX` bounded by its socket timeout (0.1 s); `validity
            // = ttl - elapsed - drift > 0` with `current_time_ms()` =
            // `time.time()`; on failure `_unlock_all` (one server after
            // another, errors swallowed), then the sleep: redlock-py's
            // behaviours, one for one.
            ClientPreset::RedlockNg => ClientPreset::RedlockPy.redlock(),
            // `Redlock._acquire_masters`: `self._uuid = str(uuid.uuid4())`
            // on every attempt; a `BailOutExecutor` thread per master and
            // `as_completed`, returning once more than half acquired and
            // `auto_release_time - drift - elapsed > 0` (`ContextTimer`:
            // `timeit.default_timer`, monotonic); otherwise, once all are
            // in, `__release` in parallel, waited for.
            ClientPreset::Pottery => b(
                LockValue::PerAttempt,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Concurrent,
                Decide::FirstYesQuorum,
                true,
                Monotonic,
            ),
            // `RedissonMultiLock.tryLock`: one instance after another, the
            // locks it got unlocked and awaited after a failed round
            // (`unlockInner`), no validity check; the elapsed time only
            // bounds the wait, so its clock decides nothing.
            // Every instance holds a reentrant hash, as an `RLock` does.
            ClientPreset::Redisson => b(
                LockValue::PerThread,
                UnlockOnFailure::Await,
                Release::Await,
                Requests::Sequential,
                Decide::AllReplies,
                false,
                Wall,
            )
            .map(|b| Behaviour {
                shape: LockShape::Hash,
                ..b
            }),
            ClientPreset::Redisson343
            | ClientPreset::RedisPyLock
            | ClientPreset::PythonRedisLock => None,
        }
    }

    /// The single-Redis behaviours it sets; `None` for a Redlock-only client.
    pub fn rlock(self) -> Option<RLockBehaviour> {
        let redisson = |renewal_on_error| {
            Some(RLockBehaviour {
                value: LockValue::PerThread,
                shape: LockShape::Hash,
                wait_replicas: 1,
                renewal_on_error,
                renew_every: None,
            })
        };
        match self {
            ClientPreset::Redisson => redisson(RenewalOnError::Retry),
            ClientPreset::Redisson343 => redisson(RenewalOnError::Stop),
            // `Lock.__init__`: `_id` drawn once per `Lock` object (a new
            // one per `with Lock(...)`); `SET NX EX`, a string; no `WAIT`;
            // `_lock_renewer` calls `extend` every `expire * 2 / 3`, and
            // any exception from it (`NotAcquired`, a connection error)
            // ends the thread, telling nobody.
            ClientPreset::PythonRedisLock => Some(RLockBehaviour {
                value: LockValue::PerCall,
                shape: LockShape::String,
                wait_replicas: 0,
                renewal_on_error: RenewalOnError::Stop,
                renew_every: Some((2, 3)),
            }),
            _ => None,
        }
    }

    /// The lock value it uses on `lua-release` (a lock with neither quorum
    /// nor renewal); `None` for a library that is no client of it.
    pub fn plain(self) -> Option<LockValue> {
        match self {
            // redis-py `Lock.acquire`: `token = uuid.uuid1().hex.encode()`
            // before `while True`, reused by its retries.
            // python-redis-lock: `_id` per `Lock` object.
            ClientPreset::RedisPyLock | ClientPreset::PythonRedisLock => Some(LockValue::PerCall),
            _ => None,
        }
    }

    /// The re-sends of a timed-out request its transport makes by default
    /// (`--transport-retries`; docs/clients.md, "The transport"). redis-py
    /// 8.1's `Redis.__init__` defaults to `retry=Retry(
    /// ExponentialWithJitterBackoff(base=0.01, cap=1), retries=10)`
    /// (`DEFAULT_RETRY_COUNT`, `redis/_defaults.py`) and its failure callback
    /// disconnects before each re-send; redis-py 5.x's `Connection.__init__`
    /// sets `Retry(NoBackoff(), 0)` unless `retry_on_timeout`/`retry_on_error`.
    /// A preset whose library lets pip install redis-py 8 (`redis`,
    /// `redis>=2.10.0`, `redis>=4.2.0rc1`; redis-py's own `Lock` taken at 8.1)
    /// gets 10; redlock-ng (`redis = "^5.0.0"`) gets 0; libraries on other
    /// transports (go-redis, ioredis, redis-rb, redis-rs, Redisson) get 0.
    pub fn transport_retries(self) -> u8 {
        match self {
            ClientPreset::RedlockPy
            | ClientPreset::Pottery
            | ClientPreset::RedisPyLock
            | ClientPreset::PythonRedisLock => 10,
            ClientPreset::RedlockNg
            | ClientPreset::Page
            | ClientPreset::Redsync
            | ClientPreset::NodeRedlock
            | ClientPreset::NodeRedlock4
            | ClientPreset::RedlockRb
            | ClientPreset::RedlockRs
            | ClientPreset::Redisson
            | ClientPreset::Redisson343 => 0,
        }
    }

    /// The behaviours, as the options that set them, for each family of
    /// protocols the preset fits.
    pub fn summary(self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.redlock() {
            parts.push(format!(
                "redlock: --value {} --unlock-on-failure {} --release {} --requests {} --decide {} --validity-check {} --elapsed-clock {} --lock-shape {}",
                b.value.name(),
                b.unlock_on_failure.name(),
                b.release.name(),
                b.requests.name(),
                b.decide.name(),
                if b.validity_check { "on" } else { "off" },
                b.elapsed_clock.name(),
                b.shape.name()
            ));
        }
        if let Some(b) = self.rlock() {
            let every = match b.renew_every {
                Some((n, d)) => format!(" --renew-every {n}/{d} of the TTL"),
                None => String::new(),
            };
            let fencing = if self.fits("fencing-redis") {
                "; fencing-redis: the same but --lock-shape (its token script sets a string)"
            } else {
                ""
            };
            parts.push(format!(
                "watchdog, replicated: --value {} --lock-shape {} --wait-replicas {} --renewal-on-error {}{every}{fencing}",
                b.value.name(),
                b.shape.name(),
                b.wait_replicas,
                b.renewal_on_error.name()
            ));
        }
        if let Some(v) = self.plain() {
            parts.push(format!("lua-release: --value {}", v.name()));
        }
        let n = self.transport_retries();
        if n > 0 {
            parts.push(format!("all: --transport-retries {n}"));
        }
        parts.join("; ")
    }

    /// Sets every behaviour the preset has for `protocol` in `p` (nothing
    /// but the name when it is no client of `protocol`: `Params::validate`
    /// refuses that).
    pub fn apply(self, p: &mut Params, protocol: &str) {
        p.client = Some(self);
        p.transport_retries = self.transport_retries();
        if REDLOCK.contains(&protocol)
            && let Some(b) = self.redlock()
        {
            p.value = b.value;
            p.unlock_on_failure = b.unlock_on_failure;
            p.release = b.release;
            p.requests = b.requests;
            p.decide = b.decide;
            p.validity_check = b.validity_check;
            p.elapsed_clock = b.elapsed_clock;
            p.lock_shape = b.shape;
        }
        if RLOCK.contains(&protocol)
            && let Some(b) = self.rlock()
        {
            p.value = b.value;
            if HASH_SHAPED.contains(&protocol) {
                p.lock_shape = b.shape;
            }
            p.wait_replicas = b.wait_replicas;
            p.renewal_on_error = b.renewal_on_error;
            if let Some((n, d)) = b.renew_every {
                p.renew_every = p.ttl * n / d;
            }
        }
        if LUA_RELEASE.contains(&protocol)
            && let Some(v) = self.plain()
        {
            p.value = v;
        }
    }
}
