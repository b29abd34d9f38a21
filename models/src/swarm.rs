//! Swarm search: many depth-first searches, each exploring the successors
//! of every state in its own seeded random order, for hunting bugs in
//! spaces too large to exhaust. This is Spin's swarm verification
//! (G. J. Holzmann, R. Joshi, A. Groce, "Swarm Verification Techniques",
//! IEEE TSE 37(6), 2011): members with different search orders, each
//! within a small memory bound, together reach far more of a huge space
//! than one search of the same total size, because each one dives along
//! different paths.
//!
//! What a swarm does not give:
//! - **Completeness.** A member stops at its state bound or its depth
//!   bound; states it never reached are not checked. A member that met
//!   neither bound has explored every reachable state (depth-first search
//!   with zone inclusion is complete for reachability when no path was
//!   cut), and only then does the swarm report the search exhaustive.
//! - **Shortest counterexamples.** A depth-first path is whatever path the
//!   member took. The swarm keeps, per invariant, the shortest path any
//!   member found (ties: the lowest seed), and says it is not known to be
//!   shortest; the breadth-first `check` gives the shortest.
//!
//! Every path a member reports is a real path of the unmerged symbolic
//! search (no zones are merged here), and is checked for real-valued
//! times before it is kept, exactly as the breadth-first search's are.

use crate::canon::Canon;
use crate::engine::passed::Zones;
use crate::engine::zone::{Succ, ZState};
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::search::{PathStep, Progress, SearchOptions, SearchResult, Stop, feasible};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The depth bound of a member unless `--max-depth` says otherwise: far
/// beyond any counterexample the breadth-first search has found (the
/// longest in the gallery has under 60 steps), and short enough that a
/// member does not spend its states on one endless dive.
pub const DEFAULT_MAX_DEPTH: u64 = 200;

/// A small, fast, seedable generator (splitmix64): the member's order
/// depends on its seed alone, on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fisher–Yates.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// What one member found.
struct Member {
    violations: BTreeMap<Invariant, Vec<PathStep>>,
    states: u64,
    transitions: u64,
    depth: u64,
    /// Met its state bound or cut a path at its depth bound.
    cut: Option<Stop>,
    max_accepted_writes: u8,
    acquired: bool,
}

/// One state on the member's stack, with the successors still to try.
struct Frame {
    succs: Vec<Succ>,
    next: usize,
}

/// One member: a depth-first search in the order seed `seed` draws.
/// `opts.max_states` bounds its stored states, `max_depth` its paths.
fn member(
    m: &LockModel,
    opts: &SearchOptions,
    canon: &Canon,
    max_depth: u64,
    seed: u64,
    progress: &Progress,
    shared_states: &AtomicU64,
) -> Member {
    let mut rng = Rng(seed);
    let mut seen = Zones::new(m.budget_order(opts.subsume_budgets));
    let mut out = Member {
        violations: BTreeMap::new(),
        states: 1,
        transitions: 0,
        depth: 0,
        cut: None,
        max_accepted_writes: 0,
        acquired: false,
    };
    let init = m.zinit();
    out.max_accepted_writes = init.world.resource.accepted;
    out.acquired = init.world.clients.iter().any(|c| c.holds());
    for inv in &opts.invariants {
        if !inv.holds_in(m, &init) {
            out.violations.insert(*inv, Vec::new());
        }
    }
    let (fp, zone) = canon.canonical(&init);
    seen.insert(fp, zone, init.world.faults_left, 0, 0);
    let expand = |s: &ZState, rng: &mut Rng| {
        let mut succs = Vec::new();
        m.successors(s, &mut succs);
        rng.shuffle(&mut succs);
        succs
    };
    let mut stack = vec![Frame {
        succs: expand(&init, &mut rng),
        next: 0,
    }];
    // The states along the stack (the parent of stack[i]'s successors) and
    // the steps between them.
    let mut states: Vec<ZState> = vec![init];
    let mut path: Vec<PathStep> = Vec::new();
    while let Some(top) = stack.last_mut() {
        if out.violations.len() == opts.invariants.len() {
            break;
        }
        if top.next == top.succs.len() {
            stack.pop();
            states.pop();
            path.pop();
            continue;
        }
        if out.transitions.is_multiple_of(4096) && progress.cancelled().is_some() {
            out.cut = Some(Stop::Cancelled);
            break;
        }
        let i = top.next;
        top.next += 1;
        out.transitions += 1;
        let succ = &top.succs[i];
        let parent = states.last().expect("a frame has its state");
        // A fault that changed nothing but its own budget (as in the
        // breadth-first search): its predecessor dominates it.
        if crate::faults::kind_of(&succ.action).is_some()
            && succ.next.world.same_but_budget(&parent.world)
            && succ.next.zone == parent.zone
        {
            continue;
        }
        let (fp, zone) = canon.canonical(&succ.next);
        if !seen.insert(fp, zone, succ.next.world.faults_left, 0, 0) {
            continue;
        }
        out.states += 1;
        shared_states.fetch_add(1, Ordering::Relaxed);
        let depth = states.len() as u64;
        out.depth = out.depth.max(depth);
        let w = &succ.next.world;
        out.max_accepted_writes = out.max_accepted_writes.max(w.resource.accepted);
        out.acquired |= w.clients.iter().any(|c| c.holds());
        for inv in &opts.invariants {
            let shorter = out
                .violations
                .get(inv)
                .is_none_or(|p| p.len() as u64 > depth);
            if shorter && !inv.holds_in(m, &succ.next) {
                let mut p = path.clone();
                p.push((succ.action, succ.answers.clone()));
                if feasible(m, &p, *inv) {
                    out.violations.insert(*inv, p);
                }
            }
        }
        if opts.max_states.is_some_and(|max| out.states >= max) {
            out.cut = Some(Stop::MaxStates);
            break;
        }
        let step = (succ.action, succ.answers.clone());
        let next = succ.next.clone();
        let succs = expand(&next, &mut rng);
        if depth >= max_depth {
            if !succs.is_empty() {
                out.cut.get_or_insert(Stop::MaxDepth);
            }
            continue;
        }
        stack.push(Frame { succs, next: 0 });
        states.push(next);
        path.push(step);
    }
    out
}

/// Runs the members with seeds `seeds`, as many at once as `opts.threads`
/// allows, and combines what they found: per invariant the shortest path
/// (ties: the lowest seed); states and transitions summed over members.
pub fn swarm(
    m: &LockModel,
    opts: &SearchOptions,
    seeds: std::ops::Range<u64>,
    progress: &Progress,
) -> SearchResult {
    let start = Instant::now();
    progress.reset();
    let canon = Canon::new(m, opts.symmetry);
    let max_depth = opts.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
    let threads = crate::search::workers(opts.threads)
        .min(seeds.clone().count())
        .max(1);
    let next = Mutex::new(seeds.clone());
    let shared_states = AtomicU64::new(0);
    let found: Mutex<Vec<(u64, Member)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some(seed) = next.lock().unwrap_or_else(|e| e.into_inner()).next() else {
                        break;
                    };
                    if progress.cancelled().is_some() {
                        break;
                    }
                    let r = member(m, opts, &canon, max_depth, seed, progress, &shared_states);
                    progress.set(shared_states.load(Ordering::Relaxed), r.depth);
                    found
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((seed, r));
                }
            });
        }
    });
    let mut members = found.into_inner().unwrap_or_else(|e| e.into_inner());
    members.sort_by_key(|(seed, _)| *seed);
    let ran = members.len() as u64;
    let mut violations: BTreeMap<Invariant, Vec<PathStep>> = BTreeMap::new();
    for (_, r) in &members {
        for (inv, p) in &r.violations {
            if violations.get(inv).is_none_or(|q| p.len() < q.len()) {
                violations.insert(*inv, p.clone());
            }
        }
    }
    let exhausted = members
        .iter()
        .any(|(_, r)| r.cut.is_none() && r.violations.len() < opts.invariants.len());
    let stop = if violations.len() == opts.invariants.len() {
        Stop::AllViolated
    } else if progress.cancelled().is_some() || ran < seeds.count() as u64 {
        Stop::Cancelled
    } else if exhausted {
        Stop::Exhausted
    } else if members.iter().any(|(_, r)| r.cut == Some(Stop::MaxStates)) {
        Stop::MaxStates
    } else {
        Stop::MaxDepth
    };
    SearchResult {
        violations,
        states: members.iter().map(|(_, r)| r.states).sum(),
        worlds: 0,
        transitions: members.iter().map(|(_, r)| r.transitions).sum(),
        depth: members.iter().map(|(_, r)| r.depth).max().unwrap_or(0),
        stop,
        elapsed: start.elapsed(),
        threads,
        max_accepted_writes: members
            .iter()
            .map(|(_, r)| r.max_accepted_writes)
            .max()
            .unwrap_or(0),
        cancelled_by: progress.cancelled(),
        acquired: members.iter().any(|(_, r)| r.acquired),
        rebuilt: 0,
        spilled: 0,
        spill_failure: None,
    }
}
