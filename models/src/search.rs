//! Exhaustive breadth-first search, level by level, over the model's
//! transition function (the same `actions`/`next_state` stateright's
//! checkers use).
//!
//! Why not stateright's BFS: in 0.31 a search with several properties
//! overwrites earlier discoveries with later, longer paths, multi-threaded
//! BFS is not shortest, and `symmetry()` is ignored by BFS (stateright 0.31,
//! `src/checker/bfs.rs`). This search checks every
//! invariant in one pass and keeps, for each, the *first* violating state it
//! meets; because it finishes each depth before the next, that state is at
//! the smallest depth, so its path is a shortest counterexample. It
//! deduplicates on the fingerprint of the symmetry representative but
//! stores real successors, so paths replay exactly.
//!
//! Each level is expanded in fixed chunks of the frontier (successor
//! generation and canonical fingerprints are the cost), by as many worker
//! threads as asked: one pool (rayon), started once per search. The successors are then deduplicated and merged by
//! the shards of the passed list (`engine::passed`), in parallel, each
//! shard taking its own in frontier order; new states get their ids in
//! frontier order afterwards. Neither the chunks nor any shard's order
//! depend on the number of threads, so neither do the states kept nor the
//! result (`models/tests/threads.rs`).
//!
//! Memory: per distinct state, its zone's minimal graph in the passed
//! list (under its world's 64-bit fingerprint) and an 8-byte parent link;
//! plus the states of the level being expanded and of the one being
//! built, packed (`engine::packed`). The levels, the parent links and the
//! zones of finished levels can go to disk (`SearchOptions::spill`,
//! `engine::spill`).
//! Fingerprints are hash-compacted (as in TLC and stateright): two distinct
//! states colliding would wrongly merge them; with 64-bit fingerprints the
//! chance is about n^2 / 2^65 (3e-6 at 10 million states).

use crate::action::Action;
use crate::canon::Canon;
use crate::engine::packed::{Cache, Level, world_hash};
use crate::engine::parents::Parents;
pub(crate) use crate::engine::parents::{Link, ROOT};
use crate::engine::passed::{Arrival, Passed, Zones};
use crate::engine::spill::{Spill, SpillTo};
use crate::engine::zone::{Succ, ZState};
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::witness;
use crate::world::World;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to search for and how far.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub invariants: Vec<Invariant>,
    /// Stop after this many distinct states.
    pub max_states: Option<u64>,
    /// Explore paths of at most this many steps.
    pub max_depth: Option<u64>,
    /// Merge states that differ only by renaming clients/instances.
    pub symmetry: bool,
    /// Let a stored state cover the same world with no more fault budget
    /// left of any kind (`engine::passed::Zones`); off only to compare.
    pub subsume_budgets: bool,
    /// Worker threads expanding each level (0 = one per core). The result
    /// is the same for any number.
    pub threads: usize,
    /// Where the levels, parent links and passed zones go once resident memory passes
    /// a limit (`engine::spill`); `None` keeps them in RAM. The result is
    /// the same either way.
    pub spill: Option<SpillTo>,
}

/// A running search seen from another thread: how many states it has
/// stored and how deep it is, for a progress display, and a request to
/// stop (a time or memory limit, Ctrl-C). The search writes the counters
/// and reads the request between batches; a stopped search reports what
/// it has found, as incomplete (`Stop::Cancelled`).
#[derive(Debug, Default)]
pub struct Progress {
    states: AtomicU64,
    depth: AtomicU64,
    stop: AtomicBool,
    why: Mutex<String>,
}

impl Progress {
    /// Asks every search run with this progress, now and later, to stop;
    /// `why` names the reason ("the time limit (90 s)").
    pub fn cancel(&self, why: impl Into<String>) {
        *self.why.lock().unwrap_or_else(|e| e.into_inner()) = why.into();
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The reason given to [`Progress::cancel`], once it was called.
    pub fn cancelled(&self) -> Option<String> {
        self.stop
            .load(Ordering::SeqCst)
            .then(|| self.why.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// States stored so far by the search running now (0 before it starts).
    pub fn states(&self) -> u64 {
        self.states.load(Ordering::Relaxed)
    }

    /// The level it is building.
    pub fn depth(&self) -> u64 {
        self.depth.load(Ordering::Relaxed)
    }

    /// Back to nothing, for the next search.
    pub fn reset(&self) {
        self.set(0, 0);
    }

    pub(crate) fn set(&self, states: u64, depth: u64) {
        self.states.store(states, Ordering::Relaxed);
        self.depth.store(depth, Ordering::Relaxed);
    }
}

/// Why the search stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every reachable state was explored.
    Exhausted,
    /// Every invariant searched for was violated; the rest of the space
    /// was not needed.
    AllViolated,
    /// `max_states` was reached first.
    MaxStates,
    /// `max_depth` was reached with unexplored states beyond it.
    MaxDepth,
    /// Asked to stop from outside ([`Progress::cancel`]).
    Cancelled,
}

/// One step of a symbolic path: the action and the answers its timing
/// questions took (see `TimeCtx::ask`).
pub type PathStep = (Action, Vec<bool>);

#[derive(Clone, Debug)]
pub struct SearchResult {
    /// Shortest violating path per violated invariant (steps from the
    /// initial state).
    pub violations: BTreeMap<Invariant, Vec<PathStep>>,
    /// Distinct (symmetry-reduced) symbolic states stored: zones, each with
    /// its discrete world.
    pub states: u64,
    /// Distinct discrete worlds among them, fault budgets aside (a world
    /// can carry several zones, each with the budgets it was stored with).
    pub worlds: u64,
    /// Transitions computed.
    pub transitions: u64,
    /// Deepest level reached, in steps.
    pub depth: u64,
    pub stop: Stop,
    pub elapsed: Duration,
    /// Worker threads used.
    pub threads: usize,
    /// The most writes the resource accepted in any state reached: 0 means
    /// no execution ever got a write through, so "no update was lost"
    /// would hold vacuously.
    pub max_accepted_writes: u8,
    /// Why the search was asked to stop ([`Progress::cancel`]), if it was.
    pub cancelled_by: Option<String>,
    /// Whether some state reached has a client that believes it holds the
    /// lock: without one, `mutual_exclusion` would hold vacuously.
    pub acquired: bool,
    /// Traces rebuilt through merged zones (`witness`): the violating
    /// state's first path did not reach the part of its zone that violates.
    pub rebuilt: usize,
    /// Bytes of levels, parent links and passed zones written to disk
    /// ([`SearchOptions::spill`]).
    pub spilled: u64,
    /// Why the search could not spill as asked, if it could not: what it
    /// could not write stayed in RAM.
    pub spill_failure: Option<String>,
}

impl SearchResult {
    /// True when every reachable state was explored.
    pub fn exhaustive(&self) -> bool {
        self.stop == Stop::Exhausted
    }
}

/// A fast fingerprinting hasher: two independent multiply-rotate lanes over
/// every integer the derived `Hash` writes, combined through the MurmurHash3
/// finaliser. Deterministic, never persisted.
pub(crate) struct Fingerprinter {
    a: u64,
    b: u64,
}

impl Fingerprinter {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;

    pub(crate) fn new() -> Fingerprinter {
        Fingerprinter {
            a: 0x243F_6A88_85A3_08D3,
            b: 0x1319_8A2E_0370_7344,
        }
    }

    #[inline]
    fn mix(&mut self, x: u64) {
        self.a = (self.a.rotate_left(23) ^ x).wrapping_mul(Self::K1);
        self.b = (self.b.rotate_left(31) ^ x).wrapping_mul(Self::K2);
    }
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

impl Hasher for Fingerprinter {
    fn finish(&self) -> u64 {
        fmix64(self.a) ^ fmix64(self.b).rotate_left(32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(buf) ^ ((chunk.len() as u64) << 56));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.mix(i as u64 | 0x100);
    }
    fn write_u16(&mut self, i: u16) {
        self.mix(i as u64 | 0x2_0000);
    }
    fn write_u32(&mut self, i: u32) {
        self.mix(i as u64 | 0x4_0000_0000);
    }
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }
    fn write_i8(&mut self, i: i8) {
        self.write_u8(i as u8);
    }
    fn write_i16(&mut self, i: i16) {
        self.write_u16(i as u16);
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }
    fn write_i64(&mut self, i: i64) {
        self.mix(i as u64);
    }
    fn write_isize(&mut self, i: isize) {
        self.mix(i as u64);
    }
}

/// The 64-bit fingerprint of a world, leaving out the fault budgets it has
/// left: the passed list keeps them beside each zone, so that a state
/// with more budget left covers the same world with less
/// (`engine::passed::Zones`).
pub fn fingerprint(w: &World) -> u64 {
    let mut h = Fingerprinter::new();
    let World {
        clients,
        redis,
        net,
        resource,
        faults_left: _,
        ghost,
        coord,
    } = w;
    (clients, redis, net, resource, ghost, coord).hash(&mut h);
    h.finish()
}

/// The symbolic state as first met and its successors' order.
#[allow(dead_code)]
fn successors(m: &LockModel, s: &ZState) -> Vec<Succ> {
    let mut out = Vec::new();
    m.successors(s, &mut out);
    out
}

/// States expanded between two merges: bounds the memory held by
/// successors that are not yet deduplicated.
const BATCH: usize = 1 << 12;
/// States one worker takes at a time.
const CHUNK: usize = 128;

/// A successor found by a worker, not yet merged.
struct Found {
    /// Index of its parent in the frontier.
    from: usize,
    /// The step from the parent.
    step: Link,
    fp: u64,
    /// Its zone in the canonical layout and, when it differs, in its own.
    zone: crate::engine::dbm::Dbm,
    real: Option<crate::engine::dbm::Dbm>,
    /// The fault budgets it has left.
    left: crate::faults::Budgets,
    /// Its world packed, as the level keeps it, and its hash.
    packed: Box<[u8]>,
    hash: u64,
    /// Invariants (bits, in the order of the pending list) it violates.
    violates: u32,
    /// What the search notes of every state it keeps (`Noted`).
    noted: Noted,
}

/// What the search notes of each state it keeps, read while the worker
/// still has the state unpacked.
#[derive(Clone, Copy)]
struct Noted {
    /// Writes the resource accepted.
    accepted: u8,
    /// Some client believes it holds the lock.
    holds: bool,
    /// Faults spent.
    used: u32,
}

/// The number of worker threads to use.
pub(crate) fn workers(requested: usize) -> usize {
    if requested > 0 {
        requested
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Runs the search.
pub fn search(m: &LockModel, opts: &SearchOptions) -> SearchResult {
    search_watched(m, opts, &Progress::default())
}

/// [`search`], keeping `progress` up to date as it goes.
pub fn search_watched(m: &LockModel, opts: &SearchOptions, progress: &Progress) -> SearchResult {
    let start = Instant::now();
    progress.reset();
    let run = search_with(m, opts, true, false, progress);
    let mut r = run.result;
    let depths = run.depths;
    drop_later((run.parent, run.contributors));
    // A merged state keeps the path of its first contributor, which may not
    // reach the part of the zone that violates. Then the search is run
    // again to that depth, noting every step that contributed to a merged
    // zone, and the trace is rebuilt along those steps alone
    // (`witness::rebuild`): the same length, since the violation's level
    // is the first violating one.
    let mut lost = Vec::new();
    for (inv, path) in r.violations.iter_mut() {
        if !feasible(m, path, *inv) {
            let bounded = SearchOptions {
                subsume_budgets: true,
                invariants: vec![*inv],
                max_states: None,
                max_depth: Some(depths[inv]),
                ..opts.clone()
            };
            progress.reset();
            let again = search_with(m, &bounded, true, true, progress);
            let rebuilt = match (again.targets.get(inv), &again.contributors) {
                (Some(&target), Some(contributors)) if progress.cancelled().is_none() => {
                    witness::rebuild(m, &again.parent, contributors, target, *inv, progress)
                }
                _ => None,
            };
            drop_later((again.parent, again.contributors));
            match rebuilt {
                Some(p) => {
                    *path = p;
                    r.rebuilt += 1;
                }
                // Only a stopped search can fail to find it again.
                None => lost.push(*inv),
            }
        }
    }
    if let Some(d) = lost.iter().map(|inv| depths[inv]).min() {
        // A violation was found at depth `d` (the shortest: every shallower
        // level was finished), but the search rebuilding its trace was
        // stopped. The invariant does not hold, so the result must not
        // say it does: it is reported as a search stopped at that level,
        // which is all that is known without a trace (no counterexample
        // of fewer than `d` steps, to any invariant still open).
        r.depth = r.depth.min(d);
        r.stop = Stop::Cancelled;
    }
    for inv in lost {
        r.violations.remove(&inv);
    }
    if r.stop != Stop::Cancelled && progress.cancelled().is_some() && !r.exhaustive() {
        r.stop = Stop::Cancelled;
    }
    r.cancelled_by = progress.cancelled();
    // The time reported is the whole search's, the rebuilding of traces
    // above included: on some configurations that takes most of it.
    r.elapsed = start.elapsed();
    r
}

/// Whether `path` (empty when it could not be rebuilt) is a violation of
/// `inv` with real times.
pub(crate) fn feasible(m: &LockModel, path: &[PathStep], inv: Invariant) -> bool {
    if path.is_empty() {
        return !inv.holds_in(m, &m.zinit());
    }
    let mut s = m.zinit();
    for (a, answers) in path {
        match m.follow(&s, a, answers) {
            Some(n) => s = n,
            None => return false,
        }
    }
    !inv.holds_in(m, &s) && m.times_for_violation(path, inv).is_some()
}

/// [`search`] without merging zones: every interleaving of independent
/// steps keeps its own zone. For the fallback above and for tests that
/// compare the two.
pub fn search_unmerged(m: &LockModel, opts: &SearchOptions) -> SearchResult {
    search_with(m, opts, false, false, &Progress::default()).result
}

/// What [`search_with`] leaves: the result, and what rebuilding a trace
/// through a merged state needs.
struct Run {
    result: SearchResult,
    /// The depth of each violation found.
    depths: BTreeMap<Invariant, u64>,
    /// The state each violation was found in.
    targets: BTreeMap<Invariant, u32>,
    /// Each state's first parent and the step from it.
    parent: Parents,
    /// When asked for: every other step into a merged state.
    contributors: Option<witness::Contributors>,
}

/// The search: merging zones of one level when `merge`, noting how they
/// were merged when `record`.
fn search_with(
    m: &LockModel,
    opts: &SearchOptions,
    merge: bool,
    record: bool,
    progress: &Progress,
) -> Run {
    let start = Instant::now();
    let canon = Canon::new(m, opts.symmetry);
    let threads = workers(opts.threads);
    // The worker threads, started once for the whole search: each batch
    // of chunks, and each pass over the shards, is handed to them.
    let pool = (threads > 1)
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .ok()
        })
        .flatten();
    // A pool the system would not start leaves one thread, and the result
    // says so.
    let threads = if pool.is_some() { threads } else { 1 };
    let mut spill_failure = None;
    let spill = opts.spill.as_ref().and_then(|to| match Spill::create(to) {
        Ok(s) => Some(Arc::new(s)),
        Err(e) => {
            spill_failure = Some(format!(
                "could not make a spill file in {}: {e}; the search kept everything in RAM",
                to.dir.display()
            ));
            None
        }
    });
    let mut seen = Passed::new(record, m.budget_order(opts.subsume_budgets), spill.clone());
    let mut contributors = record.then(witness::Contributors::default);
    // When recording: the id of each state of the level being built, by
    // shard and index in the shard's `next`.
    let mut ids: Vec<Vec<u32>> = vec![Vec::new(); if record { seen.shards.len() } else { 0 }];
    // parent.get(id) = (parent id, the step from it)
    let mut parent = Parents::new(spill.clone());
    let mut found: BTreeMap<Invariant, u32> = BTreeMap::new();
    let mut pending: Vec<Invariant> = opts.invariants.clone();
    let mut transitions = 0u64;

    // Faults a state has used: within one level, among the states violating
    // an invariant, the search keeps one that used the fewest (then the
    // first met): the trace is shortest, and no more faulty than a shortest
    // trace needs to be.
    let total_budget: u32 = m.params.faults.0.iter().map(|b| *b as u32).sum();
    let used = |w: &World| -> u32 {
        total_budget - w.faults_left.0.iter().map(|b| *b as u32).sum::<u32>()
    };
    let violated = |s: &ZState, pending: &[Invariant]| -> u32 {
        pending
            .iter()
            .enumerate()
            .filter(|(_, inv)| !inv.holds_in(m, s))
            .fold(0, |acc, (i, _)| acc | 1 << i)
    };

    let init = m.zinit();
    let mut max_accepted_writes = init.world.resource.accepted;
    let holds = |w: &World| w.clients.iter().any(|c| c.holds());
    let mut acquired = holds(&init.world);
    let (ifp, iz) = canon.canonical(&init);
    seen.insert(ifp, iz, init.world.faults_left, 0);
    parent.push(ROOT, Link::NONE);
    for (i, inv) in pending.clone().iter().enumerate() {
        if violated(&init, &pending) & (1 << i) != 0 {
            found.insert(*inv, 0);
        }
    }
    pending.retain(|inv| !found.contains_key(inv));
    let mut frontier = Level::one(0, &init);
    let mut depth = 0u64;
    let mut stop = Stop::Exhausted;

    // Expands frontier[lo..hi]; reads `seen` only.
    let expand = |frontier: &Level, lo: usize, hi: usize, seen: &Passed, pending: &[Invariant]| {
        let mut out = Vec::new();
        let mut succs = Vec::new();
        let mut count = 0u64;
        // Duplicates within the chunk are common (diamonds): drop them here.
        let mut local = Zones::new(m.budget_order(opts.subsume_budgets));
        let mut cache = Cache::default();
        for k in 0..hi - lo {
            let s = &frontier.state(lo + k, &mut cache);
            m.successors(s, &mut succs);
            for (index, succ) in succs.drain(..).enumerate() {
                count += 1;
                // A fault that changed nothing but its own budget leads to a
                // state its predecessor dominates (same world and zone, more
                // budget): nothing new is reachable from it.
                if crate::faults::kind_of(&succ.action).is_some()
                    && succ.next.world.same_but_budget(&s.world)
                    && succ.next.zone == s.zone
                {
                    continue;
                }
                let (fp, zone) = canon.canonical(&succ.next);
                let left = succ.next.world.faults_left;
                if seen.covers(fp, &zone, &left) || !local.insert(fp, zone.clone(), left, 0, 0) {
                    continue;
                }
                let violates = violated(&succ.next, pending);
                let w = &succ.next.world;
                let noted = Noted {
                    accepted: w.resource.accepted,
                    holds: holds(w),
                    used: used(w),
                };
                let packed = crate::pack::to_bytes(w).into_boxed_slice();
                let real = (succ.next.zone != zone).then_some(succ.next.zone);
                out.push(Found {
                    from: lo + k,
                    step: Link::new(index, &succ.action, &succ.answers),
                    fp,
                    zone,
                    real,
                    left,
                    hash: world_hash(&packed),
                    packed,
                    violates,
                    noted,
                });
            }
        }
        (out, count)
    };

    'levels: while !frontier.is_empty() {
        // With no invariant asked for, the whole space is explored.
        if pending.is_empty() && !opts.invariants.is_empty() {
            stop = Stop::AllViolated;
            break;
        }
        if opts.max_depth.is_some_and(|d| depth >= d) {
            // Is there anything beyond the bound?
            let (beyond, _) = expand(&frontier, 0, frontier.len(), &seen, &[]);
            if !beyond.is_empty() {
                stop = Stop::MaxDepth;
            }
            break;
        }
        // The states new on this level, in the order they were met: (shard,
        // index in the shard's `next`, id).
        let mut order: Vec<(usize, u32, u32)> = Vec::new();
        // (faults used, state id) of the best violation of each pending invariant on this level
        let mut cands: Vec<Option<(u32, u32)>> = vec![None; pending.len()];
        let mut lo = 0;
        while lo < frontier.len() {
            if progress.cancelled().is_some() {
                stop = Stop::Cancelled;
                break;
            }
            let hi = (lo + BATCH).min(frontier.len());
            // The same chunks whatever the number of threads: a chunk drops
            // the duplicates and included zones it finds within itself, so
            // the chunking, not the threads, decides which states are kept.
            let chunks: Vec<(usize, usize)> = (lo..hi)
                .step_by(CHUNK)
                .map(|a| (a, (a + CHUNK).min(hi)))
                .collect();
            let run = |&(a, b): &(usize, usize)| expand(&frontier, a, b, &seen, &pending);
            let batch: Vec<(Vec<Found>, u64)> = match &pool {
                Some(pool) if chunks.len() > 1 => {
                    use rayon::prelude::*;
                    // In chunk order, whichever worker expanded which.
                    pool.install(|| chunks.par_iter().with_max_len(1).map(run).collect())
                }
                _ => chunks.iter().map(run).collect(),
            };
            transitions += batch.iter().map(|(_, c)| c).sum::<u64>();
            // Each successor goes to the shard of its world, in frontier
            // order; the shards deduplicate and merge in parallel, each in
            // that order, which is what one thread taking them all in
            // order would do (engine/passed.rs).
            let mut meta: Vec<(usize, Link, u32, Noted)> = Vec::new();
            for s in batch.into_iter().flat_map(|(succs, _)| succs) {
                seen.hand(Arrival {
                    seq: meta.len() as u32,
                    fp: s.fp,
                    zone: s.zone,
                    real: s.real,
                    left: s.left,
                    packed: s.packed,
                    hash: s.hash,
                });
                meta.push((s.from, s.step, s.violates, s.noted));
            }
            seen.each_shard(pool.as_ref(), |shard| {
                shard.take_in(&canon, merge, depth + 1)
            });
            // The new states get their ids in frontier order.
            let mut placed: Vec<Option<(usize, u32)>> = vec![None; meta.len()];
            for (i, shard) in seen.shards.iter_mut().enumerate() {
                for (seq, at) in shard.placed.drain(..) {
                    placed[seq as usize] = Some((i, at));
                }
            }
            for (seq, p) in placed.into_iter().enumerate() {
                let Some((sh, at)) = p else { continue };
                let (from, step, violates, noted) = meta[seq];
                let nid = parent.len() as u32;
                parent.push(frontier.id(from), step);
                max_accepted_writes = max_accepted_writes.max(noted.accepted);
                acquired |= noted.holds;
                if violates != 0 {
                    let f = noted.used;
                    for (i, c) in cands.iter_mut().enumerate() {
                        if violates & (1 << i) != 0 && c.is_none_or(|(bf, _)| f < bf) {
                            *c = Some((f, nid));
                        }
                    }
                }
                if let Some(row) = ids.get_mut(sh) {
                    if row.len() <= at as usize {
                        row.resize(at as usize + 1, ROOT);
                    }
                    row[at as usize] = nid;
                }
                order.push((sh, at, nid));
                if opts
                    .max_states
                    .is_some_and(|max| parent.len() as u64 >= max)
                {
                    stop = Stop::MaxStates;
                    break;
                }
            }
            if let Some(c) = contributors.as_mut() {
                for (sh, shard) in seen.shards.iter_mut().enumerate() {
                    for (seq, into) in shard.absorbed.drain(..) {
                        let (from, step, _, _) = meta[seq as usize];
                        c.step_into(id_at(&ids, sh, into), frontier.id(from), step);
                    }
                    for (gone, kept) in shard.joined.drain(..) {
                        c.join(id_at(&ids, sh, gone), id_at(&ids, sh, kept));
                    }
                }
            }
            if stop == Stop::MaxStates {
                break;
            }
            progress.set(parent.len() as u64, depth + 1);
            lo = hi;
        }
        // Every shallower level was finished, so a violation met on this one
        // is a shortest one (even if this level was cut short).
        for (inv, c) in pending.iter().zip(&cands) {
            if let Some((_, id)) = c {
                found.insert(*inv, *id);
            }
        }
        pending.retain(|inv| !found.contains_key(inv));
        if matches!(stop, Stop::MaxStates | Stop::Cancelled) {
            depth += 1;
            break 'levels;
        }
        if merge {
            seen.each_shard(pool.as_ref(), |shard| shard.end_level(&canon, depth + 1));
        }
        if spill.is_some() {
            seen.each_shard(pool.as_ref(), |shard| shard.zones_to_disk());
        }
        if let Some(c) = contributors.as_mut() {
            for (sh, shard) in seen.shards.iter_mut().enumerate() {
                for (gone, kept) in shard.joined.drain(..) {
                    c.join(id_at(&ids, sh, gone), id_at(&ids, sh, kept));
                }
            }
            ids.iter_mut().for_each(Vec::clear);
        }
        // The next frontier, in id order, moved out of the shards, each
        // shard packing its states first (in parallel). Within a shard,
        // states were placed in arrival order and numbered in arrival
        // order, so each shard's states come in id order too: the frontier
        // is a merge of the shards' lists, taken by one cursor each, with
        // no second copy of the level.
        seen.each_shard(pool.as_ref(), |shard| shard.pack_level());
        let mut cursors: Vec<_> = seen
            .shards
            .iter_mut()
            .map(|shard| shard.packed.drain(..).enumerate())
            .collect();
        let mut states = Vec::with_capacity(order.len());
        for (sh, at, nid) in order {
            let place = cursors[sh]
                .find(|(i, _)| *i == at as usize)
                .map(|(_, p)| p)
                .expect("a shard's states are taken in the order they were placed");
            // A state merged into another is not expanded.
            if let Some(place) = place {
                states.push((nid, place));
            }
        }
        drop(cursors);
        let arenas: Vec<_> = seen
            .shards
            .iter_mut()
            .map(|shard| {
                let fresh = shard.arena.fresh();
                std::mem::replace(&mut shard.arena, fresh)
            })
            .collect();
        frontier = Level::ordered(&arenas, states, spill.clone());
        if !frontier.is_empty() {
            depth += 1;
        }
    }

    let worlds = seen.worlds();
    let spilled = spill.as_ref().map_or(0, |s| s.written());
    let spill_failure = spill_failure.or_else(|| spill.as_ref().and_then(|s| s.failure()));
    drop_later((seen, frontier, spill));
    let depths = found
        .iter()
        .map(|(inv, id)| (*inv, parent.depth(*id)))
        .collect();
    let violations = found
        .iter()
        .map(|(inv, id)| (*inv, path_to(m, &parent, *id).unwrap_or_default()))
        .collect();
    Run {
        result: SearchResult {
            violations,
            states: parent.len() as u64,
            worlds,
            transitions,
            depth,
            stop,
            elapsed: start.elapsed(),
            threads,
            max_accepted_writes,
            cancelled_by: None,
            acquired,
            rebuilt: 0,
            spilled,
            spill_failure,
        },
        depths,
        targets: found,
        parent,
        contributors,
    }
}

/// Frees `t` on a thread of its own. A search's passed list, frontier and
/// parent links can hold tens of millions of allocations and close a spill
/// file of gigabytes (the system frees its blocks then): measured on a
/// Redlock search interrupted at 21 million states with 4.3 GB spilled,
/// 3.1 s of the 5.3 s between Ctrl-C and the report went to that. The
/// report must not wait for it (the watcher gives a stopped search 10 s,
/// `src/watch.rs`), and a process that ends first need not free at all.
fn drop_later<T: Send + 'static>(t: T) {
    // If no thread can be started, the closure, `t` with it, is dropped
    // here instead.
    let _ = std::thread::Builder::new()
        .name("locklab-free".into())
        .spawn(move || drop(t));
}

/// The id of the state at index `at` of shard `sh`'s level, [`ROOT`] if
/// it was not numbered (a search stopped within the level).
fn id_at(ids: &[Vec<u32>], sh: usize, at: u32) -> u32 {
    ids[sh].get(at as usize).copied().unwrap_or(ROOT)
}

/// Peak resident memory of this process so far (Linux: `VmHWM`).
pub fn peak_memory_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// Resident memory of this process now (Linux: `VmRSS`; `None` elsewhere).
pub fn resident_memory_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// A size in kB from `/proc/self/status`, in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Rebuilds the path to state `id` by following parent links back to the
/// initial state and replaying the steps forward. `None` if a step cannot
/// be taken along the way: a state that absorbed others by merging keeps
/// its first parent, whose own zone may not allow every later step.
pub(crate) fn path_to(m: &LockModel, parent: &Parents, id: u32) -> Option<Vec<PathStep>> {
    let links = parent.links_to(id);
    let mut s = m.zinit();
    let mut path = Vec::with_capacity(links.len());
    let mut succs = Vec::new();
    for l in links {
        m.successors(&s, &mut succs);
        let succ = succs.swap_remove(l.find(&succs)?);
        succs.clear();
        path.push((succ.action, succ.answers));
        s = succ.next;
    }
    Some(path)
}
