//! What a simulation found: counts per invariant, rates per acquisition with
//! their confidence intervals, and the summary document that `--json`
//! prints, shards write and `locklab merge` combines.
//!
//! Every figure is an integer count or computed from integer counts, so a
//! summary merged from shards is exactly the summary one machine computes.

use crate::config::SimConfig;
use crate::engine::{Plan, RunResult};
use crate::math::Z975;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The summary format's version.
pub const SUMMARY_VERSION: u32 = 2;
/// The interval every rate comes with, as printed.
pub const INTERVAL: &str = "95% Wilson score interval";

/// The Wilson score interval for `k` successes in `n` trials (95%).
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let z2 = Z975 * Z975;
    let p = k / n;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z975 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    let lo = if k == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lo, hi)
}

/// One invariant's result at one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InvariantResult {
    pub invariant: String,
    /// belief, lock-service, resource or token.
    pub category: String,
    /// Runs in which it broke (a run counts once: the world remembers a
    /// broken invariant, so the run cannot show a fresh violation).
    pub violations: u64,
    /// Acquisitions observed for it: in a run where it broke, those begun
    /// up to the violation; otherwise all of the run's.
    pub acquisitions: u64,
    /// violations / acquisitions.
    pub rate: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Index (from the base seed) of the first run that broke it.
    pub first_run: Option<u64>,
    /// That run's seed: `locklab simulate ... --seed <it> --runs 1` replays it.
    pub first_seed: Option<u64>,
    /// The first violation's trace, rebuilt and validated (not for shards
    /// or sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceInfo>,
}

/// The trace of a first violation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TraceInfo {
    /// Steps up to and including the violation.
    pub steps: usize,
    /// Simulated time of the violation, µs.
    pub at_us: i64,
    /// Where it was written, if it was.
    pub file: Option<String>,
}

/// The result at one configuration (one sweep point, or the only one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PointResult {
    /// The swept option's value at this point, as given.
    pub value: Option<String>,
    pub runs: u64,
    pub acquisitions: u64,
    pub steps: u64,
    /// Simulated time over all runs, µs.
    pub simulated_us: i64,
    /// Faults that struck over all runs (pauses, losses, delays, slow
    /// work, clock jumps, crashes, restarts, failovers).
    pub faults: u64,
    /// Runs stopped before every client finished (at the horizon, or stuck).
    pub cut: u64,
    pub invariants: Vec<InvariantResult>,
}

impl PointResult {
    /// An empty tally for the invariants that apply to `plan`'s protocol.
    pub fn new(plan: &Plan, value: Option<String>) -> PointResult {
        PointResult {
            value,
            runs: 0,
            acquisitions: 0,
            steps: 0,
            simulated_us: 0,
            faults: 0,
            cut: 0,
            invariants: plan
                .invariants()
                .map(|(_, inv)| InvariantResult {
                    invariant: inv.name().to_string(),
                    category: inv.category().to_string(),
                    violations: 0,
                    acquisitions: 0,
                    rate: 0.0,
                    ci_low: 0.0,
                    ci_high: 1.0,
                    first_run: None,
                    first_seed: None,
                    trace: None,
                })
                .collect(),
        }
    }

    /// Adds run number `index` (counted from the base seed).
    pub fn add(&mut self, plan: &Plan, index: u64, r: &RunResult) {
        self.runs += 1;
        self.acquisitions += r.acquisitions as u64;
        self.steps += r.steps;
        self.simulated_us += r.sim_us;
        self.faults += r.faults;
        self.cut += r.cut as u64;
        for (slot, (i, _)) in self.invariants.iter_mut().zip(plan.invariants()) {
            match r.broke[i] {
                Some(b) => {
                    slot.violations += 1;
                    slot.acquisitions += b.acquisitions as u64;
                    slot.first_run = Some(slot.first_run.map_or(index, |f| f.min(index)));
                }
                None => slot.acquisitions += r.acquisitions as u64,
            }
        }
    }

    /// Adds another tally of the same configuration (disjoint runs).
    pub fn merge(&mut self, o: &PointResult) {
        self.runs += o.runs;
        self.acquisitions += o.acquisitions;
        self.steps += o.steps;
        self.simulated_us += o.simulated_us;
        self.faults += o.faults;
        self.cut += o.cut;
        for (a, b) in self.invariants.iter_mut().zip(&o.invariants) {
            a.violations += b.violations;
            a.acquisitions += b.acquisitions;
            a.first_run = match (a.first_run, b.first_run) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
        }
    }

    /// Computes the rates, intervals and seeds from the counts.
    pub fn finish(&mut self, seed: u64) {
        for r in &mut self.invariants {
            r.rate = if r.acquisitions == 0 {
                0.0
            } else {
                r.violations as f64 / r.acquisitions as f64
            };
            (r.ci_low, r.ci_high) = wilson(r.violations, r.acquisitions);
            r.first_seed = r.first_run.map(|i| seed.wrapping_add(i));
        }
    }

    pub fn any_violation(&self) -> bool {
        self.invariants.iter().any(|r| r.violations > 0)
    }
}

/// A slice of the seed range run by one machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Shard {
    /// 0-based.
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The run indices of this shard: contiguous, disjoint, covering
    /// `0..runs` over all shards.
    pub fn range(self, runs: u64) -> std::ops::Range<u64> {
        let cut = |i: u64| (runs as u128 * i as u128 / self.count as u128) as u64;
        cut(self.index)..cut(self.index + 1)
    }

    /// Reads `i/n`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s:?}: expected I/N with 0 <= I < N (for example 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Everything a simulation reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    pub schema_version: u32,
    /// Always `"simulation"`.
    pub kind: String,
    pub tool: String,
    /// The protocol and every option (durations in µs, rates per second).
    pub config: SimConfig,
    /// Run `i` uses seed `seed + i`.
    pub seed: u64,
    /// Runs per point over all shards.
    pub runs: u64,
    /// Present when this is one shard's partial result.
    pub shard: Option<Shard>,
    /// The swept option, when the points are a sweep.
    pub sweep: Option<String>,
    pub interval: String,
    pub points: Vec<PointResult>,
}

impl Summary {
    pub fn new(config: SimConfig, seed: u64, runs: u64, sweep: Option<String>) -> Summary {
        Summary {
            schema_version: SUMMARY_VERSION,
            kind: "simulation".into(),
            tool: format!("locklab {}", env!("CARGO_PKG_VERSION")),
            config,
            seed,
            runs,
            shard: None,
            sweep,
            interval: INTERVAL.into(),
            points: Vec::new(),
        }
    }

    pub fn any_violation(&self) -> bool {
        self.points.iter().any(|p| p.any_violation())
    }

    /// Combines shard summaries into the summary of the whole range: they
    /// must share every option, the seed, the run count and the sweep, and
    /// their shards must be `0/n .. n-1/n`, each exactly once.
    pub fn merge(parts: Vec<(String, Summary)>) -> Result<Summary, String> {
        let Some((first_name, first)) = parts.first() else {
            return Err("merge needs at least one summary".into());
        };
        let count = match first.shard {
            Some(s) => s.count,
            None => {
                return Err(format!(
                    "{first_name} is not a shard's summary (it has no \"shard\"); merge combines the --json output of --shard runs"
                ));
            }
        };
        let mut seen = vec![None::<&str>; count as usize];
        for (name, s) in &parts {
            if s.kind != "simulation" || s.schema_version != SUMMARY_VERSION {
                return Err(format!(
                    "{name} is not a simulation summary of version {SUMMARY_VERSION}"
                ));
            }
            let Some(sh) = s.shard else {
                return Err(format!(
                    "{name} is not a shard's summary (it has no \"shard\")"
                ));
            };
            let differs = |what: &str| {
                Err(format!(
                    "{name} and {first_name} come from different simulations: their {what} differ"
                ))
            };
            if s.config != first.config {
                return differs("options");
            }
            if s.seed != first.seed {
                return differs("seeds");
            }
            if s.runs != first.runs {
                return differs("--runs");
            }
            if s.sweep != first.sweep
                || s.points
                    .iter()
                    .map(|p| &p.value)
                    .ne(first.points.iter().map(|p| &p.value))
            {
                return differs("sweeps");
            }
            if sh.count != count {
                return differs("shard counts");
            }
            if let Some(other) = seen[sh.index as usize] {
                return Err(format!(
                    "{name} and {other} are both shard {}/{count}",
                    sh.index
                ));
            }
            seen[sh.index as usize] = Some(name);
        }
        let missing: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .map(|(i, _)| format!("{i}/{count}"))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "shards missing: {} (every shard 0/{count} .. {}/{count} is needed)",
                missing.join(", "),
                count - 1
            ));
        }
        let mut out = first.clone();
        out.shard = None;
        for p in &mut out.points {
            for r in &mut p.invariants {
                r.trace = None;
            }
        }
        for (_, s) in &parts[1..] {
            for (a, b) in out.points.iter_mut().zip(&s.points) {
                a.merge(b);
            }
        }
        for p in &mut out.points {
            p.finish(out.seed);
        }
        Ok(out)
    }
}

/// The JSON Schema of the summary `simulate --json` and `merge` print.
pub fn schema() -> String {
    locklab_traces::schema::generate::<Summary>("locklab simulation summary")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), table I: 81/263 -> 0.2553..0.3662.
        let (lo, hi) = wilson(81, 263);
        assert!(
            (lo - 0.2553).abs() < 5e-5 && (hi - 0.3662).abs() < 5e-5,
            "{lo} {hi}"
        );
        // 0/10 -> 0..0.2775; 10/10 -> 0.7225..1.
        let (lo, hi) = wilson(0, 10);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 5e-5);
        let (lo, hi) = wilson(10, 10);
        assert!((lo - 0.7225).abs() < 5e-5 && hi == 1.0);
    }

    #[test]
    fn shards_cover_the_runs_exactly_once() {
        for (runs, n) in [(10u64, 3u64), (7, 7), (1000, 16), (5, 1)] {
            let mut all = Vec::new();
            for i in 0..n {
                all.extend(Shard { index: i, count: n }.range(runs));
            }
            assert_eq!(all, (0..runs).collect::<Vec<_>>());
        }
        assert!(Shard::parse("3/3").is_err());
        assert!(Shard::parse("x").is_err());
        assert_eq!(Shard::parse("2/5"), Ok(Shard { index: 2, count: 5 }));
    }
}
