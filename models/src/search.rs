//! Exhaustive breadth-first search, level by level, over the model's
//! transition function (the same `actions`/`next_state` stateright's
//! checkers use).
//!
//! Why not stateright's BFS: in 0.31 a search with several properties
//! overwrites earlier discoveries with later, longer paths, multi-threaded
//! BFS is not shortest, and `symmetry()` is ignored by BFS (see
//! `shared/reference/stateright-notes.md`). This search checks every
//! invariant in one pass and keeps, for each, the *first* violating state it
//! meets; because it finishes each depth before the next, that state is at
//! the smallest depth, so its path is a shortest counterexample. It
//! deduplicates on the fingerprint of the symmetry representative but
//! stores real successors, so paths replay exactly.
//!
//! Memory: one 64-bit fingerprint and one parent link per distinct state,
//! plus the states of the current and the next level.
//! Fingerprints are hash-compacted (as in TLC and stateright): two distinct
//! states colliding would wrongly merge them; with 64-bit fingerprints the
//! chance is about n^2 / 2^65 (3e-6 at 10 million states).

use crate::action::Action;
use crate::canon::Canon;
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::world::World;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
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
}

#[derive(Clone, Debug)]
pub struct SearchResult {
    /// Shortest violating path per violated invariant (actions from the
    /// initial state).
    pub violations: BTreeMap<Invariant, Vec<Action>>,
    /// Distinct (symmetry-reduced) states stored.
    pub states: u64,
    /// Transitions computed.
    pub transitions: u64,
    /// Deepest level reached, in steps.
    pub depth: u64,
    pub stop: Stop,
    pub elapsed: Duration,
}

impl SearchResult {
    /// True when every reachable state was explored.
    pub fn exhaustive(&self) -> bool {
        self.stop == Stop::Exhausted
    }
}

/// A hasher for keys that already are fingerprints.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | *b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Seen = HashMap<u64, u32, BuildHasherDefault<PassThrough>>;

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

/// The 64-bit fingerprint of a world.
pub fn fingerprint(w: &World) -> u64 {
    let mut h = Fingerprinter::new();
    w.hash(&mut h);
    h.finish()
}

const ROOT: u32 = u32::MAX;

/// Runs the search.
pub fn search(m: &LockModel, opts: &SearchOptions) -> SearchResult {
    let start = Instant::now();
    let canon = Canon::new(m, opts.symmetry);
    let key = |w: &World| {
        if canon.is_identity() {
            fingerprint(w)
        } else {
            fingerprint(&canon.canonical(w))
        }
    };
    let mut seen: Seen = HashMap::default();
    // parent[id] = (parent id, index of the action in the parent's enabled list)
    let mut parent: Vec<(u32, u32)> = Vec::new();
    let mut found: BTreeMap<Invariant, u32> = BTreeMap::new();
    let mut pending: Vec<Invariant> = opts.invariants.clone();
    let mut transitions = 0u64;

    // Within one level, among states violating an invariant, keep the one
    // that used the fewest faults (then the first met): the trace is
    // shortest, and no more faulty than a shortest trace needs to be.
    let used = |w: &World| -> u32 {
        let total: u32 = m.params.faults.0.iter().map(|b| *b as u32).sum();
        let left: u32 = w.faults_left.0.iter().map(|b| *b as u32).sum();
        total - left
    };
    let check =
        |w: &World, id: u32, pending: &[Invariant], cands: &mut BTreeMap<Invariant, (u32, u32)>| {
            for inv in pending {
                if !inv.holds(m, w) {
                    let f = used(w);
                    let better = cands.get(inv).is_none_or(|(bf, _)| f < *bf);
                    if better {
                        cands.insert(*inv, (f, id));
                    }
                }
            }
        };
    let settle = |pending: &mut Vec<Invariant>,
                  cands: &mut BTreeMap<Invariant, (u32, u32)>,
                  found: &mut BTreeMap<Invariant, u32>| {
        for (inv, (_, id)) in std::mem::take(cands) {
            found.insert(inv, id);
            pending.retain(|p| *p != inv);
        }
    };
    let mut cands: BTreeMap<Invariant, (u32, u32)> = BTreeMap::new();

    let init = m.init();
    seen.insert(key(&init), 0);
    parent.push((ROOT, 0));
    check(&init, 0, &pending, &mut cands);
    settle(&mut pending, &mut cands, &mut found);
    let mut frontier: Vec<(u32, World)> = vec![(0, init)];
    let mut depth = 0u64;
    let mut stop = Stop::Exhausted;
    let mut actions = Vec::new();

    'levels: while !frontier.is_empty() {
        if pending.is_empty() {
            stop = Stop::AllViolated;
            break;
        }
        if opts.max_depth.is_some_and(|d| depth >= d) {
            // Is there anything beyond the bound?
            for (_, w) in &frontier {
                m.enabled(w, &mut actions);
                for a in &actions {
                    if !seen.contains_key(&key(&m.after(w, a))) {
                        stop = Stop::MaxDepth;
                        break 'levels;
                    }
                }
            }
            break;
        }
        let mut next: Vec<(u32, World)> = Vec::new();
        for (id, w) in &frontier {
            m.enabled(w, &mut actions);
            for (ai, a) in actions.iter().enumerate() {
                transitions += 1;
                let succ = m.after(w, a);
                // A fault that changed nothing but its own budget leads to a
                // state its predecessor dominates (same world, more budget):
                // nothing new is reachable from it.
                if crate::faults::kind_of(a).is_some() && succ.same_but_budget(w) {
                    continue;
                }
                let nid = parent.len() as u32;
                match seen.entry(key(&succ)) {
                    std::collections::hash_map::Entry::Occupied(_) => continue,
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(nid);
                    }
                }
                parent.push((*id, ai as u32));
                check(&succ, nid, &pending, &mut cands);
                next.push((nid, succ));
                if opts
                    .max_states
                    .is_some_and(|max| parent.len() as u64 >= max)
                {
                    depth += 1;
                    stop = Stop::MaxStates;
                    // Every shallower level was finished, so a violation
                    // met on this one is still a shortest one.
                    settle(&mut pending, &mut cands, &mut found);
                    break 'levels;
                }
            }
        }
        settle(&mut pending, &mut cands, &mut found);
        frontier = next;
        if !frontier.is_empty() {
            depth += 1;
        }
    }

    let violations = found
        .into_iter()
        .map(|(inv, id)| (inv, path_to(m, &parent, id)))
        .collect();
    SearchResult {
        violations,
        states: parent.len() as u64,
        transitions,
        depth,
        stop,
        elapsed: start.elapsed(),
    }
}

/// Rebuilds the action path to state `id` by following parent links back to
/// the root, then replaying action indices forward from the initial state.
fn path_to(m: &LockModel, parent: &[(u32, u32)], id: u32) -> Vec<Action> {
    let mut idx = Vec::new();
    let mut cur = id;
    while parent[cur as usize].0 != ROOT {
        idx.push(parent[cur as usize].1);
        cur = parent[cur as usize].0;
    }
    idx.reverse();
    let mut w = m.init();
    let mut actions = Vec::new();
    let mut path = Vec::with_capacity(idx.len());
    for i in idx {
        m.enabled(&w, &mut actions);
        let a = actions[i as usize];
        w = m.after(&w, &a);
        path.push(a);
    }
    path
}
