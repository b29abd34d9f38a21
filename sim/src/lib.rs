//! locklab's simulator: the model's transition rules (no second
//! implementation of any protocol) on the concrete exact-time engine,
//! driven by a seeded random environment with realistic timings inside the
//! model's windows, run many times to estimate how often each invariant
//! breaks per lock acquisition.
//!
//! * [`config`]: the options, their defaults and the model they build.
//! * [`engine`]: one run of one seed.
//! * [`summary`]: counts, rates with Wilson intervals, shards and merging.
//! * [`sweep`], [`chart`]: one option varied, as CSV and SVG.
//! * [`dist`], [`math`]: portable random durations.
//!
//! Run `i` of a simulation with base seed `s` uses seed `s + i`, whatever
//! the thread count or shard: `--seed s+i --runs 1` replays it alone.

pub mod chart;
pub mod config;
pub mod dist;
pub mod engine;
pub mod math;
pub mod summary;
pub mod sweep;

use engine::{Plan, Runner};
use locklab_models::engine::solve::Rational;
use locklab_models::{Invariant, trace};
use locklab_traces::Trace;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use summary::PointResult;

/// Runs of one thread's chunk before it reports progress and takes more.
const CHUNK: u64 = 64;

/// Runs `runs` (indices from the base `seed`) on `threads` threads, adding
/// each finished run to `done`. The result does not depend on `threads`:
/// the tally is a sum, and the first violating run a minimum.
pub fn simulate(
    plan: &Plan,
    value: Option<String>,
    seed: u64,
    runs: Range<u64>,
    threads: usize,
    done: &AtomicU64,
) -> PointResult {
    let next = AtomicU64::new(runs.start);
    let work = || {
        let mut tally = PointResult::new(plan, value.clone());
        let mut runner = Runner::new(plan);
        loop {
            let from = next.fetch_add(CHUNK, Ordering::Relaxed);
            if from >= runs.end {
                return tally;
            }
            let to = (from + CHUNK).min(runs.end);
            for i in from..to {
                let r = runner.run(seed.wrapping_add(i), false);
                tally.add(plan, i, &r);
            }
            done.fetch_add(to - from, Ordering::Relaxed);
        }
    };
    let mut total = PointResult::new(plan, value.clone());
    let tallies: Vec<PointResult> = if threads <= 1 {
        vec![work()]
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            hs.into_iter()
                .map(|h| h.join().expect("a simulation thread panicked"))
                .collect()
        })
    };
    for t in &tallies {
        total.merge(t);
    }
    total.finish(seed);
    total
}

/// Reruns `seed` recording its steps and their times, and builds the trace
/// of its first violation of `inv`: replayed at those exact times through
/// the concrete engine by `trace::build_timed`, then validated as a file
/// reader would (`trace::validate`).
pub fn violation_trace(plan: &Plan, seed: u64, inv: Invariant) -> Result<Trace, String> {
    let idx = Invariant::ALL
        .iter()
        .position(|i| *i == inv)
        .expect("every invariant is in ALL");
    let r = Runner::new(plan).run(seed, true);
    let b = r.broke[idx].ok_or_else(|| {
        format!(
            "seed {seed} does not violate {} with these options",
            inv.name()
        )
    })?;
    let path: Vec<_> = r.path[..b.step as usize]
        .iter()
        .map(|(a, at)| (*a, Rational::integer(*at)))
        .collect();
    let t = trace::build_timed(&plan.m, &path, inv, "simulate", Some(seed))
        .map_err(|e| format!("the simulated run does not replay: {e}"))?;
    trace::validate(&t).map_err(|e| format!("the simulated trace does not validate: {e}"))?;
    Ok(t)
}
