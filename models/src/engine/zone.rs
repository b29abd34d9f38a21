//! The symbolic engine: a discrete world plus a zone over its clocks
//! (UPPAAL's architecture: the discrete model knows nothing of zones; this
//! module turns its windows, guards, questions and fresh clocks into zone
//! operations).
//!
//! A successor along step `e` from `(w, Z)` is, as for timed automata
//! (Bengtsson & Yi 2004, §3):
//!
//! ```text
//! Z' = up( relayout( Z ∧ guard(e) ∧ answers(e) ) ∧ Inv(w') ) ∧ Inv(w')
//! ```
//!
//! where the answers are the constraints the step's timing questions imply,
//! one successor per feasible combination of answers; `relayout` drops the
//! clocks `w'` no longer uses and adds the fresh ones (each reading 0, or a
//! copy); and the result is extrapolated (Extra⁺_M, per-clock bounds from
//! each clock's role) so that the zone graph is finite. Zones are kept
//! canonical, so `(w', Z')` can be hashed and deduplicated exactly.

use super::dbm::{Bound, Dbm, NO_BOUND, Slot};
use crate::action::Action;
use crate::model::LockModel;
use crate::time::{Answers, Ask, Clk, Fresh, Micros, TimeCtx};
use crate::world::{Log, World};
use std::collections::VecDeque;

/// A symbolic state: a discrete world and the zone of its clock values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZState {
    pub world: World,
    pub zone: Dbm,
}

/// A successor: the step, the answers its timing questions took, and the
/// state it leads to.
#[derive(Clone, Debug)]
pub struct Succ {
    pub action: Action,
    pub answers: Vec<bool>,
    pub next: ZState,
}

/// Lays out `w`'s clocks in their canonical order after a step that armed
/// `fresh` clocks on top of `base` existing ones. Rewrites `w`'s handles to
/// the new positions and returns, per new position (0 = reference), where
/// its value comes from. All clocks armed at 0 by one step read the same
/// forever after, so they share one position.
pub fn relayout(w: &mut World, base: usize, fresh: &[Fresh]) -> Vec<Slot> {
    let resolve = |h: u8| -> Slot {
        let mut h = h as usize;
        loop {
            if h <= base {
                return Slot::Old(h);
            }
            match fresh[h - base - 1] {
                Fresh::Zero => return Slot::Zero,
                Fresh::Copy(c) => h = c.0 as usize,
            }
        }
    };
    let mut slots: Vec<Slot> = Vec::with_capacity(base + fresh.len() + 1);
    slots.push(Slot::Old(0));
    w.clocks_mut(&mut |c, _| {
        let src = resolve(c.0);
        let pos = match slots.iter().position(|s| *s == src) {
            Some(p) if p > 0 => p,
            _ => {
                slots.push(src);
                slots.len() - 1
            }
        };
        c.0 = pos as u8;
    });
    slots
}

/// One renumbering pass after a relayout: the messages are re-sorted
/// (their clock is part of their order), then clocks are renumbered in the
/// walk order of the sorted world. Returns the new order (position ->
/// old position) if anything moved. Callers repeat until stable, so the
/// layout depends on the discrete state only.
pub fn renumber(w: &mut World) -> Option<Vec<usize>> {
    w.net.sort_unstable();
    // new_of[old] = new position (0: not met yet; 0 is the reference
    // clock, never a handle); a clock handle is
    // a u8, so the table is on the stack and no position is searched.
    let mut new_of = [0u8; 256];
    let mut met = 0u8;
    let mut moved = false;
    w.clocks_mut(&mut |c, _| {
        let old = c.0 as usize;
        if old == 0 {
            return;
        }
        if new_of[old] == 0 {
            met += 1;
            new_of[old] = met;
        }
        let new = new_of[old];
        moved |= new as usize != old;
        c.0 = new;
    });
    if !moved {
        return None;
    }
    let mut order = vec![0usize; met as usize + 1];
    for (old, new) in new_of.iter().enumerate() {
        if *new != 0 {
            order[*new as usize] = old;
        }
    }
    w.net.sort_unstable();
    Some(order)
}

/// [`renumber`] until stable, permuting the zone alike.
pub fn normalize(w: &mut World, z: &mut Dbm) {
    for _ in 0..8 {
        match renumber(w) {
            Some(order) => {
                let slots: Vec<Slot> = order.into_iter().map(Slot::Old).collect();
                *z = z.remap_slots(&slots);
            }
            None => return,
        }
    }
    debug_assert!(renumber(w).is_none(), "clock layout did not settle");
}

/// Extra_LU bounds per clock of `w`'s layout.
fn bounds(m: &LockModel, w: &mut World, n: usize) -> (Vec<i64>, Vec<i64>) {
    let mut l = vec![NO_BOUND; n];
    let mut u = vec![NO_BOUND; n];
    l[0] = 0;
    u[0] = 0;
    w.clocks_mut(&mut |c, role| {
        let (lo, hi) = m.lu_bounds(role);
        let i = c.0 as usize;
        if let Some(k) = lo {
            l[i] = l[i].max(k);
        }
        if let Some(k) = hi {
            u[i] = u[i].max(k);
        }
    });
    (l, u)
}

/// Number of clocks (besides the reference) in `w`'s layout.
pub fn clock_count(w: &mut World) -> usize {
    let mut n = 0;
    w.clocks_mut(&mut |c, _| n = n.max(c.0 as usize));
    n
}

/// `clk ≥ lo`.
fn at_least(z: &mut Dbm, clk: Clk, lo: Micros) -> bool {
    z.constrain(0, clk.0 as usize, Bound::le(-lo))
}

/// The constraint an answer implies (see [`Ask`]: "yes" bounds the clock
/// by the top of its band, "no" by the bottom).
fn answer(z: &mut Dbm, a: &Ask) -> bool {
    let x = a.clk.0 as usize;
    match (a.yes, a.strict) {
        (true, false) => z.constrain(x, 0, Bound::le(a.hi)),
        (true, true) => z.constrain(x, 0, Bound::lt(a.hi)),
        (false, false) => z.constrain(0, x, Bound::lt(-a.lo)),
        (false, true) => z.constrain(0, x, Bound::le(-a.lo)),
    }
}

/// Intersects `z` with `w`'s invariant; false if that empties it.
fn invariant(m: &LockModel, w: &World, z: &mut Dbm, scratch: &mut Vec<(Clk, Micros)>) -> bool {
    m.invariant(w, scratch);
    for (clk, hi) in scratch.iter() {
        if !z.constrain(clk.0 as usize, 0, Bound::le(*hi)) {
            return false;
        }
    }
    !z.is_empty()
}

/// Lets time pass as far as `w`'s invariant allows, then extrapolates.
fn settle(
    m: &LockModel,
    w: &mut World,
    mut z: Dbm,
    scratch: &mut Vec<(Clk, Micros)>,
) -> Option<Dbm> {
    if !invariant(m, w, &mut z, scratch) {
        return None;
    }
    z.up();
    if !invariant(m, w, &mut z, scratch) {
        return None;
    }
    let (l, u) = bounds(m, w, z.dim());
    z.extrapolate_lu(&l, &u);
    Some(z)
}

impl LockModel {
    /// The initial symbolic state: every clock at 0, then time passes.
    pub fn zinit(&self) -> ZState {
        let mut w = self.init();
        let n = clock_count(&mut w);
        let z = Dbm::zero(n + 1);
        let mut scratch = Vec::new();
        let zone = settle(self, &mut w, z, &mut scratch).expect("the initial state has a future");
        ZState { world: w, zone }
    }

    /// Every successor of `s`, in a fixed order: by enabled step, then by
    /// the answers to its timing questions ("yes" first).
    pub fn successors(&self, s: &ZState, out: &mut Vec<Succ>) {
        out.clear();
        let mut enabled = Vec::new();
        self.enabled(&s.world, &mut enabled);
        let n = s.zone.dim() - 1;
        let mut scratch = Vec::new();
        for e in &enabled {
            // The guard alone may already rule the step out.
            let mut guarded = s.zone.clone();
            if let Some((clk, lo)) = e.guard
                && !at_least(&mut guarded, clk, lo)
            {
                continue;
            }
            let mut scripts: VecDeque<Vec<bool>> = VecDeque::from([Vec::new()]);
            while let Some(script) = scripts.pop_front() {
                let mut w = s.world.clone();
                let mut t = TimeCtx::new(n, Answers::Script(&script));
                self.apply(&mut w, &e.action, &mut t, &mut Log::off());
                let answers: Vec<bool> = t.asks.iter().map(|a| a.yes).collect();
                for i in script.len()..answers.len() {
                    if t.asks[i].forced {
                        continue;
                    }
                    let mut alt = answers[..i].to_vec();
                    alt.push(!answers[i]);
                    scripts.push_back(alt);
                }
                let mut z = guarded.clone();
                if !t.asks.iter().all(|a| answer(&mut z, a)) {
                    continue;
                }
                let slots = relayout(&mut w, n, &t.fresh);
                let mut z = z.remap_slots(&slots);
                normalize(&mut w, &mut z);
                if let Some(zone) = settle(self, &mut w, z, &mut scratch) {
                    out.push(Succ {
                        action: e.action,
                        answers,
                        next: ZState { world: w, zone },
                    });
                }
            }
        }
    }

    /// The successor of `s` along `action` with these `answers`, if any.
    pub fn follow(&self, s: &ZState, action: &Action, answers: &[bool]) -> Option<ZState> {
        let mut out = Vec::new();
        self.successors(s, &mut out);
        out.into_iter()
            .find(|x| x.action == *action && x.answers == answers)
            .map(|x| x.next)
    }
}
