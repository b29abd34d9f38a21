//! Rebuilding a counterexample whose last state is a merged zone.
//!
//! The search merges zones of one world met on one level when their union
//! is a zone (`engine::passed`). A merged state keeps the path of its first
//! contributor only, and that path's own zone may miss the valuations that
//! violate. Every valuation of a merged zone is still reached by *some*
//! path: a zone is created from one successor and grows only by the
//! successors merged into it and the zones of its level joined to it, and
//! each of those is the image of a state of the level before, itself such
//! a union. So the valuations that violate are reached along the steps
//! that contributed to the violating state, to its contributors, and so on
//! back to the initial state: its *cone*.
//!
//! [`rebuild`] follows the cone forward from the initial state with exact
//! zones (no merging), keeping a zone at a cone state only when no zone
//! already kept there includes it (zone successors are monotone), and
//! returns the first path whose zone violates with real times. The cone is
//! a layered graph (every step goes from one level to the next), so every
//! path through it has the violation's length: the trace stays a shortest
//! one. Searching the whole space again without merging, bounded at that
//! depth, gives a trace of the same length but costs far more (see
//! docs/model.md, "Merging zones whose union is a zone").

use crate::engine::parents::Parents;
use crate::engine::zone::ZState;
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::search::{Link, PathStep, Progress, ROOT, feasible};
use std::collections::{HashMap, HashSet};

/// How zones were merged in a search that noted it: the steps into each
/// state other than its first parent's, and the states of a level merged
/// into another.
#[derive(Default)]
pub struct Contributors {
    /// (state, parent, step): a successor of `parent` merged into `state`.
    steps: Vec<(u32, u32, Link)>,
    /// (gone, kept): state `gone` was merged into `kept`, of the same level.
    joins: HashMap<u32, u32>,
}

impl Contributors {
    /// A successor of `parent` by `step` was merged into `state`.
    pub(crate) fn step_into(&mut self, state: u32, parent: u32, step: Link) {
        if state != ROOT && parent != ROOT {
            self.steps.push((state, parent, step));
        }
    }

    /// State `gone` was merged into `kept`.
    pub(crate) fn join(&mut self, gone: u32, kept: u32) {
        if gone != ROOT && kept != ROOT {
            self.joins.insert(gone, kept);
        }
    }

    /// The state `id` ended up in (itself unless merged away).
    fn kept(&self, mut id: u32) -> u32 {
        while let Some(&k) = self.joins.get(&id) {
            id = k;
        }
        id
    }

    /// Every step into each kept state: its own first parent's, those of
    /// the states merged into it, and the successors merged into either.
    fn steps_into(&self, parent: &Parents) -> HashMap<u32, Vec<(u32, Link)>> {
        let mut into: HashMap<u32, Vec<(u32, Link)>> = HashMap::new();
        for &gone in self.joins.keys() {
            let (p, l) = parent.get(gone);
            if p != ROOT {
                into.entry(self.kept(gone)).or_default().push((p, l));
            }
        }
        for &(state, p, l) in &self.steps {
            into.entry(self.kept(state)).or_default().push((p, l));
        }
        // Deterministic order: the join map is a hash map.
        for v in into.values_mut() {
            v.sort_by_key(|(p, l)| (*p, l.sort_key()));
        }
        into
    }
}

/// A path to `target` (found at its level by a search that recorded
/// `contributors`) that violates `inv` with real times, rebuilt along the
/// target's cone. `None` if `progress` asks to stop, or if no path of the
/// cone violates (which would mean the merging was not exact).
pub(crate) fn rebuild(
    m: &LockModel,
    parent: &Parents,
    contributors: &Contributors,
    target: u32,
    inv: Invariant,
    progress: &Progress,
) -> Option<Vec<PathStep>> {
    let target = contributors.kept(target);
    let into = contributors.steps_into(parent);
    // The cone, backwards from the target: for each state in it, the steps
    // out of it that stay in it.
    let mut out: HashMap<u32, Vec<(u32, Link)>> = HashMap::new();
    let mut seen: HashSet<u32> = HashSet::from([target]);
    let mut todo = vec![target];
    while let Some(n) = todo.pop() {
        let own = parent.get(n);
        let extra = into.get(&n).map(Vec::as_slice).unwrap_or(&[]);
        for &(p, l) in std::iter::once(&own).chain(extra) {
            if p == ROOT {
                continue;
            }
            out.entry(p).or_default().push((n, l));
            if seen.insert(p) {
                todo.push(p);
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|(n, l)| (*n, l.sort_key()));
        v.dedup_by_key(|(n, l)| (*n, l.sort_key()));
    }

    // Forward, level by level, with exact zones. `trail` holds each kept
    // path's last step and the index of the path it extends.
    let mut trail: Vec<(u32, PathStep)> = Vec::new();
    let mut level: Vec<(u32, ZState, u32)> = vec![(0, m.zinit(), ROOT)];
    let mut depth = 0u64;
    let mut stored = 1u64;
    let mut succs = Vec::new();
    while level.first().is_some_and(|(n, _, _)| *n != target) {
        depth += 1;
        let mut next: Vec<(u32, ZState, u32)> = Vec::new();
        let mut alive: Vec<bool> = Vec::new();
        let mut at: HashMap<u32, Vec<usize>> = HashMap::new();
        for (n, s, t) in &level {
            if progress.cancelled().is_some() {
                return None;
            }
            let Some(steps) = out.get(n) else { continue };
            m.successors(s, &mut succs);
            for (child, l) in steps {
                let Some(succ) = l.find(&succs).map(|i| &succs[i]) else {
                    continue;
                };
                let here = at.entry(*child).or_default();
                if here
                    .iter()
                    .any(|&i| alive[i] && next[i].1.zone.includes(&succ.next.zone))
                {
                    continue;
                }
                for &i in here.iter() {
                    if alive[i] && succ.next.zone.includes(&next[i].1.zone) {
                        alive[i] = false;
                    }
                }
                here.push(next.len());
                trail.push((*t, (succ.action, succ.answers.clone())));
                next.push((*child, succ.next.clone(), trail.len() as u32 - 1));
                alive.push(true);
            }
            succs.clear();
        }
        level = next
            .into_iter()
            .zip(alive)
            .filter_map(|(x, a)| a.then_some(x))
            .collect();
        stored += level.len() as u64;
        progress.set(stored, depth);
    }
    for (_, _, t) in &level {
        let mut steps = Vec::new();
        let mut cur = *t;
        while cur != ROOT {
            let (back, step) = &trail[cur as usize];
            steps.push(step.clone());
            cur = *back;
        }
        steps.reverse();
        if feasible(m, &steps, inv) {
            return Some(steps);
        }
    }
    None
}
