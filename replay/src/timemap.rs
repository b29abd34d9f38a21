//! The one place where model time becomes real time.
//!
//! Model time is exact and dense: every step of a trace carries its time in
//! microseconds as a rational (`locklab_models::trace::actions`). A replay
//! runs on real clocks, `speed` times faster than the model: model time `t`
//! is due at real time `t / speed` after the replay's start, and every
//! duration the servers are told (a Redis `PX`, an etcd lease TTL, a
//! ZooKeeper session timeout) is the model's duration divided by the same
//! `speed`. With `speed` 1 the replay runs in real time.
//!
//! A real run cannot be exact. The driver wakes a little late, Redis keeps
//! expiries in whole milliseconds (`PX`, `keyIsExpired` on `mstime`), etcd
//! grants leases in whole seconds and revokes them from a 500 ms loop,
//! ZooKeeper expires sessions in `tickTime` buckets. Every timing question
//! the model answers on a server's behalf ("is the key still live?") has a
//! margin: how far, in model time, the clock was from the bound. If that
//! margin, mapped to real time, is smaller than the real uncertainty
//! ([`TimeMap::slack`]), the real server may answer either way: the step is
//! reported as finer than the replay can reproduce, never silently passed.

use locklab_models::engine::solve::Rational;
use locklab_models::time::{MS, Micros, SEC};
use std::time::{Duration, Instant};

/// How model time maps to real time in one replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeMap {
    /// Model time runs this many times faster than real time (≥ 1).
    pub speed: u64,
}

/// Fastest speed accepted: beyond it one real millisecond (Redis's
/// resolution) is more than 10 s of model time.
pub const MAX_SPEED: u64 = 10_000;

/// How late the driver may wake before the replay gives up: beyond this
/// the machine is too busy for any timing to mean anything.
pub const GIVE_UP_LATE: Duration = Duration::from_secs(2);

/// etcd's lessor looks for expired leases every 500 ms (`lease/lessor.go`,
/// `runLoop`), and the revoke then goes through raft: a lease outlives its
/// TTL by up to this much.
pub const ETCD_EXPIRY_SLACK_MS: u64 = 600;

/// ZooKeeper's `tickTime` for replays (written into `zoo.cfg`): sessions
/// expire in buckets of one `tickTime` (`ExpiryQueue`), so it is small.
pub const ZK_TICK_TIME_MS: u64 = 20;

/// Redis keeps expiries in whole milliseconds (`SET ... PX`, `mstime()`).
const REDIS_RESOLUTION: Duration = Duration::from_millis(1);

/// Model µs (exact) as real µs (float) at this speed.
fn real_us(model: Rational, speed: u64) -> f64 {
    model.num() as f64 / model.den() as f64 / speed as f64
}

impl TimeMap {
    /// Checks a speed given on the command line.
    pub fn new(speed: u64) -> Result<TimeMap, String> {
        if (1..=MAX_SPEED).contains(&speed) {
            Ok(TimeMap { speed })
        } else {
            Err(format!(
                "--speed {speed}: model time must run 1 to {MAX_SPEED} times as fast as real time"
            ))
        }
    }

    /// Real time, from the replay's start, at which model time `t` (µs) is due.
    pub fn at(&self, t: Rational) -> Duration {
        Duration::from_secs_f64(real_us(t, self.speed).max(0.0) / 1e6)
    }

    /// A model duration in real time.
    pub fn real(&self, d: Micros) -> Duration {
        Duration::from_secs_f64(d.max(0) as f64 / self.speed as f64 / 1e6)
    }

    /// A model duration (exact, maybe negative) in real milliseconds.
    pub fn real_ms(&self, d: Rational) -> f64 {
        real_us(d, self.speed) / 1e3
    }

    /// Sleeps until model time `t` (counted from `t0`) in real time and
    /// returns how late it woke; fails on Ctrl-C, or if it is so late that
    /// no timing of the run means anything any more ([`GIVE_UP_LATE`]).
    /// Smaller lateness is not an error: it widens [`TimeMap::slack`], and
    /// the steps whose margins it eats are reported.
    pub fn wait_until(
        &self,
        t0: Instant,
        t: Rational,
        index: usize,
    ) -> Result<Duration, crate::Error> {
        let target = t0 + self.at(t);
        loop {
            if crate::interrupt::interrupted() {
                return Err(crate::Error::Interrupted);
            }
            let now = Instant::now();
            if now >= target {
                let late = now - target;
                if late > GIVE_UP_LATE {
                    return Err(crate::Error::Env(format!(
                        "the driver fell {} ms behind the schedule at step {index} (more than {} ms): the machine is too busy for a timed replay; rerun with a smaller --speed on a less busy machine",
                        late.as_millis(),
                        GIVE_UP_LATE.as_millis()
                    )));
                }
                return Ok(late);
            }
            std::thread::sleep((target - now).min(Duration::from_millis(10)));
        }
    }

    /// The real uncertainty of a timing question on `system`, given the
    /// worst lateness so far: two moments the model relates (a key set, a
    /// command run) can each be late, plus the server's own granularity and
    /// the rounding of the durations it was told.
    pub fn slack(&self, system: System, late: Duration) -> Duration {
        let granularity = match system {
            // 1 ms resolution, plus up to 0.5 ms from rounding PX (and a
            // clock-shift offset) to whole milliseconds.
            System::Redis => REDIS_RESOLUTION + Duration::from_micros(500),
            System::Etcd => Duration::from_millis(ETCD_EXPIRY_SLACK_MS + 1000),
            System::ZooKeeper => Duration::from_millis(ZK_TICK_TIME_MS),
        };
        granularity + 2 * late.max(Duration::from_micros(200))
    }

    /// The uncertainty on the early side of a session's or lease's expiry:
    /// etcd rounds lease TTLs up to whole seconds and revokes late, and
    /// ZooKeeper expires sessions at the end of their `tickTime` bucket, so
    /// the server never expires one before its real timeout; only the
    /// driver's lateness (and 1 ms of rounding) can make it look early.
    pub fn early_slack(&self, late: Duration) -> Duration {
        Duration::from_millis(1) + 2 * late.max(Duration::from_micros(200))
    }

    /// Whether a model margin (µs, exact; its sign ignored) is wide enough
    /// to be reproduced on `system` with this `slack`.
    pub fn reproducible(&self, margin: Rational, slack: Duration) -> bool {
        real_us(margin, self.speed).abs() > slack.as_secs_f64() * 1e6
    }

    /// A Redis TTL (`PX`) for a model TTL: the real duration in whole
    /// milliseconds, rounded to the nearest, at least 1 (Redis refuses 0).
    pub fn redis_px(&self, ttl: Micros) -> u64 {
        let us = ttl.max(0) as u64;
        ((us + self.speed * MS as u64 / 2) / (self.speed * MS as u64)).max(1)
    }

    /// A clock jump of `by` model µs as a real offset in whole milliseconds.
    pub fn offset_ms(&self, by: Micros) -> i64 {
        let d = self.speed as i64 * MS;
        (by + by.signum() * d / 2) / d
    }

    /// Whether a real `PTTL` reading matches `left` model µs to live, within
    /// `slack`.
    pub fn redis_pttl_matches(&self, left: Rational, pttl_ms: i64, slack: Duration) -> bool {
        if pttl_ms < 0 {
            return false;
        }
        (self.real_ms(left) - pttl_ms as f64).abs() <= slack.as_secs_f64() * 1e3 + 1.0
    }

    /// An etcd lease for a model TTL, in whole seconds (etcd's unit),
    /// rounded up: the lease lasts at least the model's TTL; the rounding
    /// is part of [`TimeMap::slack`] (up to 1 s).
    pub fn etcd_lease_secs(&self, ttl: Micros) -> u64 {
        (ttl.max(0) as u64).div_ceil(self.speed * SEC as u64).max(1)
    }

    /// Whether etcd's whole seconds left on a lease match `left` model µs.
    pub fn etcd_ttl_left_matches(&self, left: Rational, real_secs: i64, slack: Duration) -> bool {
        let expect = self.real_ms(left) / 1e3;
        let s = slack.as_secs_f64();
        (real_secs as f64) >= (expect - s - 1.0).floor() && (real_secs as f64) <= expect + s
    }

    /// ZooKeeper's `tickTime` for this replay (written into `zoo.cfg`).
    pub fn zk_tick_time_ms(&self) -> u64 {
        ZK_TICK_TIME_MS
    }

    /// A ZooKeeper session timeout for a model TTL, in real milliseconds
    /// (at least ZooKeeper's minimum, two `tickTime`s).
    pub fn zk_session_ms(&self, ttl: Micros) -> u64 {
        (self.real(ttl).as_millis() as u64).max(2 * ZK_TICK_TIME_MS)
    }

    /// One line for the report.
    pub fn describe(&self, system: System, ttl: Micros) -> String {
        let show = locklab_models::units::show;
        let head = if self.speed == 1 {
            "model time runs in real time".to_string()
        } else {
            format!(
                "model time runs {}x as fast as real time (1 real ms = {} of model time)",
                self.speed,
                show(self.speed as i64 * MS)
            )
        };
        match system {
            System::Redis => format!(
                "{head}; a TTL of {} is sent as PX {} (Redis keeps whole ms)",
                show(ttl),
                self.redis_px(ttl)
            ),
            System::Etcd => format!(
                "{head}; the {} lease is granted with TTL {} s (etcd counts whole seconds and revokes up to {ETCD_EXPIRY_SLACK_MS} ms late)",
                show(ttl),
                self.etcd_lease_secs(ttl)
            ),
            System::ZooKeeper => format!(
                "{head}; the {} session is requested with timeout {} ms, tickTime {} ms (sessions expire in tickTime buckets)",
                show(ttl),
                self.zk_session_ms(ttl),
                self.zk_tick_time_ms()
            ),
        }
    }
}

/// Which real system a replay drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Redis,
    Etcd,
    ZooKeeper,
}

impl System {
    /// Speed unless told otherwise: fast enough that a trace around the
    /// default 30 s TTL replays in seconds, slow enough that the system's
    /// granularity stays a small part of model time.
    pub fn default_speed(self) -> u64 {
        match self {
            // 30 s TTL -> 1.5 s; 1 real ms = 20 model ms.
            System::Redis => 20,
            // Whole-second leases, revoked up to 0.6 s late: 30 s -> 6 s.
            System::Etcd => 5,
            // A cold JVM answers its first requests in tens of ms: 30 s -> 3 s.
            System::ZooKeeper => 10,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            System::Redis => "Redis",
            System::Etcd => "etcd",
            System::ZooKeeper => "ZooKeeper",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_scale_by_the_speed() {
        let m = TimeMap::new(20).expect("a valid speed");
        assert_eq!(m.redis_px(30 * SEC), 1500);
        // 10 ms model = 0.5 ms real: rounded to the nearest, at least 1.
        assert_eq!(m.redis_px(10 * MS), 1);
        assert_eq!(m.redis_px(29 * MS), 1);
        assert_eq!(m.redis_px(31 * MS), 2);
        assert_eq!(m.at(Rational::integer(2 * SEC)), Duration::from_millis(100));
        assert_eq!(m.offset_ms(301_500 * MS / 1000), 15);
        assert_eq!(m.offset_ms(-40 * MS), -2);
        assert!(TimeMap::new(0).is_err());
        assert!(TimeMap::new(MAX_SPEED + 1).is_err());
    }

    #[test]
    fn a_margin_below_the_slack_is_not_reproducible() {
        let m = TimeMap::new(20).expect("a valid speed");
        let slack = m.slack(System::Redis, Duration::from_millis(1));
        // 1.5 ms + 2 ms = 3.5 ms real = 70 ms model.
        assert_eq!(slack, Duration::from_micros(3500));
        assert!(!m.reproducible(Rational::new(1, 12), slack));
        assert!(!m.reproducible(Rational::integer(-70 * MS), slack));
        assert!(m.reproducible(Rational::integer(71 * MS), slack));
        assert!(m.redis_pttl_matches(Rational::integer(10 * SEC), 500, slack));
        assert!(!m.redis_pttl_matches(Rational::integer(10 * SEC), 400, slack));
    }

    #[test]
    fn etcd_leases_are_whole_seconds_and_zookeeper_sessions_ms() {
        let m = TimeMap::new(5).expect("a valid speed");
        assert_eq!(m.etcd_lease_secs(30 * SEC), 6);
        assert_eq!(m.etcd_lease_secs(31 * SEC), 7);
        let slack = m.slack(System::Etcd, Duration::ZERO);
        assert!(m.etcd_ttl_left_matches(Rational::integer(20 * SEC), 4, slack));
        // 4 s real, give or take the 1.6 s slack and etcd's rounding down.
        assert!(!m.etcd_ttl_left_matches(Rational::integer(20 * SEC), 0, slack));
        assert!(!m.etcd_ttl_left_matches(Rational::integer(20 * SEC), 7, slack));
        let z = TimeMap::new(10).expect("a valid speed");
        assert_eq!(z.zk_session_ms(30 * SEC), 3000);
        assert_eq!(z.zk_session_ms(10 * MS), 40);
    }
}
