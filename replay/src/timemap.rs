//! The one place where model time becomes real time.
//!
//! The model counts integer ticks; a replay runs on real clocks. Everything
//! that turns a model duration into a real one lives here: when a step is
//! due, what TTL Redis gets, how long an etcd lease and a ZooKeeper session
//! last, how late the driver may run. When the model's time unit changes,
//! this module is what changes.
//!
//! The rule behind every mapping: the model keeps an entry alive while its
//! time left is `>= 0`, so something that lives `n` ticks from model time
//! `s` is still there at `s + n` and gone at `s + n + 1`. Each real expiry
//! must fall strictly between those two moments, with room on both sides
//! for the driver's lateness and the server's own expiry granularity.

use locklab_models::world::Ticks;
use std::time::{Duration, Instant};

/// How model time maps to real time in one replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeMap {
    /// Real milliseconds per model tick.
    pub tick_ms: u64,
}

/// etcd's lessor looks for expired leases every 500 ms (`lease/lessor.go`,
/// `runLoop`), and the revoke then goes through raft: a lease outlives its
/// TTL by up to this much.
pub const ETCD_EXPIRY_SLACK_MS: u64 = 600;

/// ZooKeeper's `tickTime` for a replay with this tick: sessions expire in
/// buckets of one `tickTime`, so it is kept small against the model tick.
fn zk_tick_time(tick_ms: u64) -> u64 {
    (tick_ms / 10).clamp(2, 50)
}

impl TimeMap {
    /// Sleeps until model time `ticks` (counted from `t0`) in real time
    /// and returns how late it woke; fails if it is already so late that
    /// real expiries could fall on the wrong side of a tick, or on Ctrl-C.
    /// Both drivers (Redis, consensus) keep their schedule with this.
    pub fn wait_until(
        &self,
        t0: Instant,
        ticks: u64,
        index: usize,
    ) -> Result<Duration, crate::Error> {
        let target = t0 + self.at(ticks);
        let tolerance = self.tolerance();
        loop {
            if crate::interrupt::interrupted() {
                return Err(crate::Error::Interrupted);
            }
            let now = Instant::now();
            if now >= target {
                let late = now - target;
                if late > tolerance {
                    return Err(crate::Error::Env(format!(
                        "the driver fell {} ms behind the schedule at step {index} (more than {} ms, 0.4 tick): real expiries could no longer be trusted to fall between ticks; rerun with a larger --tick-ms on a less busy machine",
                        late.as_millis(),
                        tolerance.as_millis()
                    )));
                }
                return Ok(late);
            }
            std::thread::sleep((target - now).min(Duration::from_millis(10)));
        }
    }

    /// Real time, from the replay's start, at which model time `ticks` is due.
    pub fn at(&self, ticks: u64) -> Duration {
        Duration::from_millis(ticks * self.tick_ms)
    }

    /// Real milliseconds of `ticks` model ticks.
    pub fn ms(&self, ticks: u64) -> u64 {
        ticks * self.tick_ms
    }

    /// How far behind its schedule the driver may run: 0.4 tick.
    pub fn tolerance(&self) -> Duration {
        Duration::from_millis(self.tick_ms * 2 / 5)
    }

    /// A Redis TTL of `ttl` ticks, in real milliseconds (`PX`): half a tick
    /// more, so the real expiry falls strictly between ticks `s + ttl`
    /// (alive, as the model says) and `s + ttl + 1` (gone), with 0.1 tick to
    /// spare on either side of the driver's 0.4-tick lateness.
    pub fn redis_px(&self, ttl: Ticks) -> u64 {
        ttl as u64 * self.tick_ms + self.tick_ms / 2
    }

    /// Whether a real `PTTL` reading matches `left` model ticks: given the
    /// half-tick margin it is in `(left, left + 1]` ticks.
    pub fn redis_pttl_matches(&self, left: i64, pttl_ms: i64) -> bool {
        let tick = self.tick_ms as i64;
        pttl_ms > left * tick && pttl_ms <= (left + 1) * tick
    }

    /// An etcd lease of `ttl` ticks, in whole seconds (etcd's unit). The
    /// lease is gone between `L` and `L + 0.6 s` after its grant or last
    /// keepalive; that window must lie inside ticks `(ttl + 0.4, ttl + 1)`.
    /// With whole seconds this needs ticks of about 2 s (the default for
    /// etcd replays); shorter ticks are refused with the reason.
    pub fn etcd_lease_secs(&self, ttl: Ticks) -> Result<u64, String> {
        let lo = (ttl as u64 * 10 + 4) * self.tick_ms; // (ttl + 0.4) ticks, in ms x 10
        let secs = lo.div_ceil(10_000).max(1);
        let hi = (ttl as u64 + 1) * self.tick_ms;
        if secs * 1000 + ETCD_EXPIRY_SLACK_MS <= hi {
            Ok(secs)
        } else {
            Err(format!(
                "--tick-ms {}: a {ttl}-tick etcd lease cannot be mapped: etcd counts lease TTLs in whole seconds and expires them up to {ETCD_EXPIRY_SLACK_MS} ms late, so no whole number of seconds falls between {} and {} ms; use --tick-ms 2000 or more",
                self.tick_ms,
                lo / 10,
                hi
            ))
        }
    }

    /// Expected real seconds left on an etcd lease with `left` model ticks
    /// to live: the lease's real TTL minus the model time spent since it
    /// was last renewed. etcd reports whole seconds, rounded down.
    pub fn etcd_ttl_left_matches(&self, ttl: Ticks, left: i64, real_secs: i64) -> bool {
        let Ok(secs) = self.etcd_lease_secs(ttl) else {
            return false;
        };
        let spent_ms = (ttl as i64 - left) * self.tick_ms as i64;
        let expect_ms = secs as i64 * 1000 - spent_ms;
        // Rounded down, read up to 0.4 tick late.
        let lo = (expect_ms - self.tolerance().as_millis() as i64 - 1000)
            .div_euclid(1000)
            .max(0);
        let hi = expect_ms.div_euclid(1000);
        (lo..=hi).contains(&real_secs)
    }

    /// ZooKeeper's `tickTime` for this replay (written into `zoo.cfg`).
    pub fn zk_tick_time_ms(&self) -> u64 {
        zk_tick_time(self.tick_ms)
    }

    /// A ZooKeeper session of `ttl` ticks, in real milliseconds. The server
    /// expires a session in the first `tickTime` bucket after its timeout,
    /// so the timeout is put half a `tickTime` before the middle of tick
    /// `ttl + 0.5`: the expiry window is centred between the two ticks.
    pub fn zk_session_ms(&self, ttl: Ticks) -> u64 {
        let centre = ttl as u64 * self.tick_ms + self.tick_ms / 2;
        centre.saturating_sub(self.zk_tick_time_ms() / 2).max(1)
    }

    /// One line for the report.
    pub fn describe(&self, system: System, ttl: Ticks) -> String {
        match system {
            System::Redis => format!(
                "1 tick = {} ms of real time; a TTL of n ticks is sent as n x {} + {} ms, so real expiry falls half a tick after the model's last live tick",
                self.tick_ms,
                self.tick_ms,
                self.tick_ms / 2
            ),
            System::Etcd => format!(
                "1 tick = {} ms of real time; the {ttl}-tick lease is granted with TTL {} s (etcd counts whole seconds and revokes up to {ETCD_EXPIRY_SLACK_MS} ms late), so it is gone between ticks {ttl}.4 and {} after its last keepalive",
                self.tick_ms,
                self.etcd_lease_secs(ttl)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|_| "?".into()),
                ttl + 1
            ),
            System::ZooKeeper => format!(
                "1 tick = {} ms of real time; the {ttl}-tick session is requested with timeout {} ms and tickTime {} ms, so the server expires it between ticks {ttl} and {} after the client was last heard",
                self.tick_ms,
                self.zk_session_ms(ttl),
                self.zk_tick_time_ms(),
                ttl + 1
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
    /// Real milliseconds per tick unless told otherwise: long enough for the
    /// system's expiry granularity and start-up jitter.
    pub fn default_tick_ms(self) -> u64 {
        match self {
            System::Redis => 200,
            // Whole-second leases need ~2 s ticks (see `etcd_lease_secs`).
            System::Etcd => 2000,
            // A cold JVM answers its first requests in tens of ms.
            System::ZooKeeper => 500,
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
    fn redis_expiry_falls_half_a_tick_after_the_last_live_tick() {
        let m = TimeMap { tick_ms: 200 };
        assert_eq!(m.redis_px(6), 1300);
        assert!(m.redis_pttl_matches(6, 1300));
        assert!(!m.redis_pttl_matches(6, 1200));
    }

    #[test]
    fn etcd_leases_are_whole_seconds_inside_the_tick_window() {
        let m = TimeMap { tick_ms: 2000 };
        // 6 ticks = 12 s: the lease must be gone after 12.8 s and before 14 s.
        assert_eq!(m.etcd_lease_secs(6), Ok(13));
        assert_eq!(m.etcd_lease_secs(2), Ok(5));
        assert!(TimeMap { tick_ms: 1000 }.etcd_lease_secs(6).is_err());
        assert!(m.etcd_ttl_left_matches(6, 6, 12));
        assert!(m.etcd_ttl_left_matches(6, 4, 8));
        assert!(!m.etcd_ttl_left_matches(6, 4, 12));
    }

    #[test]
    fn zookeeper_sessions_expire_between_ticks() {
        let m = TimeMap { tick_ms: 500 };
        assert_eq!(m.zk_tick_time_ms(), 50);
        // centre 6.5 ticks = 3250 ms; the bucket adds up to 50 ms.
        assert_eq!(m.zk_session_ms(6), 3225);
    }
}
