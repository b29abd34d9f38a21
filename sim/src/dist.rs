//! The random quantities of a run, drawn from a seeded ChaCha8 stream.
//!
//! Durations are drawn as real numbers of microseconds and rounded to whole
//! microseconds (the model's resolution). The generator's output is fixed by `rand_chacha` for
//! every platform, and the arithmetic here uses only the portable functions
//! of [`crate::math`], so a seed means the same run everywhere.

use crate::math::{Z99, exp, ln, normal_quantile};
use locklab_models::time::Micros;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// The random stream of one run.
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The stream of the run with this seed.
    pub fn new(seed: u64) -> Rng {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        // A fixed tag in the rest of the key keeps these streams apart from
        // any other use of ChaCha8 with small keys.
        key[8..16].copy_from_slice(b"locklab1");
        Rng(ChaCha8Rng::from_seed(key))
    }

    /// Uniform in the open interval (0, 1): 53 random bits, centred.
    pub fn unit(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform integer in `lo..=hi`.
    pub fn between(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        // Multiply-shift: unbiased enough for spans far below 2^64.
        let span = (hi - lo) as u128 + 1;
        lo + ((self.0.next_u64() as u128 * span) >> 64) as i64
    }

    /// Uniform index below `n` (`n > 0`).
    pub fn index(&mut self, n: usize) -> usize {
        self.between(0, n as i64 - 1) as usize
    }

    /// Exponentially distributed with this mean (µs), in whole µs.
    pub fn exponential(&mut self, mean_us: f64) -> Micros {
        to_us(-ln(self.unit()) * mean_us)
    }

    /// The waiting time to the next event of a Poisson process with `rate`
    /// events per second, in whole µs (at least 1); `None` when the rate
    /// is 0.
    pub fn arrival(&mut self, rate_per_s: f64) -> Option<Micros> {
        (rate_per_s > 0.0).then(|| self.exponential(1e6 / rate_per_s).max(1))
    }

    /// A draw from `d`, in whole µs.
    pub fn sample(&mut self, d: &LogNormal) -> Micros {
        if d.sigma == 0.0 {
            return to_us(d.median);
        }
        to_us(d.median * exp(d.sigma * normal_quantile(self.unit())))
    }
}

/// Longest duration a draw can produce (the model's largest duration).
pub const MAX_US: Micros = locklab_models::params::MAX_DURATION;

fn to_us(x: f64) -> Micros {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= MAX_US as f64 {
        MAX_US
    } else {
        (x + 0.5) as Micros
    }
}

/// A log-normal distribution given by its median and 99th percentile (in
/// µs): most values near the median, a long tail to the right.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogNormal {
    pub median: f64,
    pub sigma: f64,
}

impl LogNormal {
    /// `p50 > 0`, `p99 >= p50` (checked by the configuration).
    pub fn from_percentiles(p50: f64, p99: f64) -> LogNormal {
        LogNormal {
            median: p50,
            sigma: (ln(p99) - ln(p50)) / Z99,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let draw = |s| {
            let mut r = Rng::new(s);
            (0..8).map(|_| r.between(0, 1_000_000)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn lognormal_percentiles_come_out_where_they_were_put() {
        let d = LogNormal::from_percentiles(20_000.0, 2_000_000.0);
        let mut r = Rng::new(1);
        let mut xs: Vec<i64> = (0..200_000).map(|_| r.sample(&d)).collect();
        xs.sort();
        let p50 = xs[xs.len() / 2] as f64;
        let p99 = xs[xs.len() * 99 / 100] as f64;
        assert!((p50 / 20_000.0 - 1.0).abs() < 0.02, "p50 {p50}");
        assert!((p99 / 2_000_000.0 - 1.0).abs() < 0.05, "p99 {p99}");
    }

    #[test]
    fn exponential_has_its_mean_and_uniform_stays_in_range() {
        let mut r = Rng::new(3);
        let n = 100_000;
        let mean = (0..n).map(|_| r.exponential(100_000.0)).sum::<i64>() as f64 / n as f64;
        assert!((mean / 100_000.0 - 1.0).abs() < 0.02, "mean {mean}");
        for _ in 0..10_000 {
            let x = r.between(50, 250);
            assert!((50..=250).contains(&x));
        }
        assert_eq!(r.arrival(0.0), None);
    }
}
