//! The concrete engine: one exact time per clock. Trace building and
//! validation, the simulator and the replayer drive the model with it; it
//! checks every window a step relies on with exact rationals, independently
//! of the zone code.

use super::dbm::Slot;
use super::solve::{self, Diff, Rational};
use super::zone::{clock_count, relayout, renumber};
use crate::action::Action;
use crate::model::LockModel;
use crate::time::{Answers, Clk, Micros, TimeCtx};
use crate::world::{Log, World};

/// A world at a moment: its clocks' birth times and the time now, in µs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CState {
    pub world: World,
    /// Per clock of the layout (index 0 unused): when it read 0.
    pub born: Vec<Rational>,
    pub now: Rational,
}

impl CState {
    /// What clock `c` reads at time `at`.
    pub fn read(&self, c: Clk, at: Rational) -> Rational {
        at - self.born[c.0 as usize]
    }
}

/// Why a step cannot be taken at the time asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimingError(pub String);

impl std::fmt::Display for TimingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn us(r: Rational) -> String {
    crate::units::show_rational(r)
}

impl LockModel {
    /// The initial concrete state, at time 0.
    pub fn cinit(&self) -> CState {
        let mut w = self.init();
        let n = clock_count(&mut w);
        CState {
            world: w,
            born: vec![Rational::ZERO; n + 1],
            now: Rational::ZERO,
        }
    }

    /// The latest time `s` may stay as it is: the first deadline in force.
    pub fn deadline(&self, s: &CState) -> Option<Rational> {
        let mut inv = Vec::new();
        self.invariant(&s.world, &mut inv);
        inv.iter()
            .map(|(c, hi)| s.born[c.0 as usize] + Rational::integer(*hi))
            .min()
    }

    /// Takes `action` at time `at`, checking that time may pass until then
    /// (no deadline is missed), that the step is enabled and its guard
    /// met. Returns the next state and the step's events. Timing questions
    /// get the answers an exact clock gives.
    pub fn cstep(
        &self,
        s: &CState,
        action: &Action,
        at: Rational,
        log: &mut Log,
    ) -> Result<CState, TimingError> {
        self.cstep_given(s, action, at, &[], log)
            .map(|(next, _)| next)
    }

    /// [`LockModel::cstep`] with the answers `given` to the step's timing
    /// questions (in the order asked; missing ones as an exact clock
    /// answers), each checked against the time: an answer a drifting clock
    /// could give is accepted, any other is an error. Returns the next
    /// state and the answers taken.
    pub fn cstep_given(
        &self,
        s: &CState,
        action: &Action,
        at: Rational,
        given: &[bool],
        log: &mut Log,
    ) -> Result<(CState, Vec<bool>), TimingError> {
        if at < s.now {
            return Err(TimingError(format!(
                "it happens at {} but the step before it was at {}",
                us(at),
                us(s.now)
            )));
        }
        let mut inv = Vec::new();
        self.invariant(&s.world, &mut inv);
        for (c, hi) in &inv {
            if s.read(*c, at) > Rational::integer(*hi) {
                return Err(TimingError(format!(
                    "a deadline passes before it: a clock that must read at most {} reads {} at {}",
                    crate::units::show(*hi),
                    us(s.read(*c, at)),
                    us(at)
                )));
            }
        }
        let mut enabled = Vec::new();
        self.enabled(&s.world, &mut enabled);
        let Some(e) = enabled.iter().find(|e| e.action == *action) else {
            if let Action::Deliver { msg } = action
                && self.folded(&s.world, msg)
            {
                return Err(TimingError(
                    "the step is not possible in this state: a Redlock client's replies no longer \
                     arrive by steps of their own (they are read together); regenerate the trace \
                     with this locklab"
                        .into(),
                ));
            }
            return Err(TimingError("the step is not possible in this state".into()));
        };
        if let Some((c, lo)) = e.guard
            && s.read(c, at) < Rational::integer(lo)
        {
            return Err(TimingError(format!(
                "it happens too early: its clock must read at least {} but reads {}",
                crate::units::show(lo),
                us(s.read(c, at))
            )));
        }
        let values: Vec<Rational> = s.born.iter().map(|b| at - *b).collect();
        let n = s.born.len() - 1;
        let mut w = s.world.clone();
        let mut t = TimeCtx::new(n, Answers::Values(&values, given));
        self.apply(&mut w, action, &mut t, log);
        if given.len() > t.asks.len() {
            return Err(TimingError(format!(
                "{} answers are given for {} timing questions",
                given.len(),
                t.asks.len()
            )));
        }
        for a in &t.asks {
            let x = t.value(&values, a.clk);
            if !a.possible_at(x) {
                let what = if a.yes { "at most" } else { "more than" };
                return Err(TimingError(format!(
                    "a clock that reads {} is taken to read {what} {} (possible from {} to {} with its rate drift)",
                    us(x),
                    crate::units::show(a.bound),
                    crate::units::show(a.lo),
                    crate::units::show(a.hi)
                )));
            }
        }
        let answers: Vec<bool> = t.asks.iter().map(|a| a.yes).collect();
        let slots = relayout(&mut w, n, &t.fresh);
        let mut born: Vec<Rational> = slots
            .iter()
            .map(|sl| match sl {
                Slot::Old(i) => s.born[*i],
                Slot::Zero | Slot::Free => at,
            })
            .collect();
        while let Some(order) = renumber(&mut w) {
            born = order.iter().map(|o| born[*o]).collect();
        }
        Ok((
            CState {
                world: w,
                born,
                now: at,
            },
            answers,
        ))
    }

    /// Exact times for a symbolic path (steps with the answers their timing
    /// questions took): the earliest times that meet every guard, deadline
    /// and answer, in µs, or `None` if there are none.
    pub fn times_for(&self, path: &[(Action, Vec<bool>)]) -> Option<Vec<Rational>> {
        self.times_with_margin(path, 0)
    }

    /// Like [`LockModel::times_for`], for a path whose last state violates
    /// `inv`: the last step also happens at a moment when the clocks meet
    /// one of the ways of violating it (a client's own clock still says its
    /// validity lasts). The ways are tried in order; `None` if none can be
    /// met.
    pub fn times_for_violation(
        &self,
        path: &[(Action, Vec<bool>)],
        inv: crate::invariants::Invariant,
    ) -> Option<Vec<Rational>> {
        let (cs, w, born) = self.constraints(path, 0)?;
        let k = path.len();
        inv.violations(self, &w).iter().find_map(|way| {
            let mut cs = cs.clone();
            cs.extend(
                way.iter()
                    .map(|b| Diff::lt(k, born[b.clk.0 as usize], b.hi)),
            );
            solve::earliest(k + 1, &cs)
        })
    }

    /// Like [`LockModel::times_for`], but every timing question must be
    /// decided by at least `margin` µs (a "yes" to `clock ≤ b` needs the
    /// clock at most `b − margin`, a "no" at least `b + margin`): the
    /// earliest times at which the same steps could be reproduced on real
    /// servers whose clocks are only that exact. `None` if the path has no
    /// such timing. Entry 0 is time 0; step `k` is entry `k`.
    pub fn times_with_margin(
        &self,
        path: &[(Action, Vec<bool>)],
        margin: Micros,
    ) -> Option<Vec<Rational>> {
        let (cs, _, _) = self.constraints(path, margin)?;
        solve::earliest(path.len() + 1, &cs)
    }

    /// The difference constraints over event times that `path` (with
    /// `margin`, see [`LockModel::times_with_margin`]) imposes, the last
    /// world, and the event at which each of its clocks was armed.
    #[allow(clippy::type_complexity)]
    fn constraints(
        &self,
        path: &[(Action, Vec<bool>)],
        margin: Micros,
    ) -> Option<(Vec<Diff>, World, Vec<usize>)> {
        // Event 0 is time 0; step k happens at event k. born[c] = the event
        // at which clock c was armed.
        let mut w = self.init();
        let n0 = clock_count(&mut w);
        let mut born: Vec<usize> = vec![0; n0 + 1];
        let mut cs: Vec<Diff> = Vec::new();
        let mut inv = Vec::new();
        let mut enabled = Vec::new();
        for (k0, (action, answers)) in path.iter().enumerate() {
            let k = k0 + 1;
            cs.push(Diff::le(k - 1, k, 0));
            self.invariant(&w, &mut inv);
            for (c, hi) in &inv {
                cs.push(Diff::le(k, born[c.0 as usize], *hi));
            }
            self.enabled(&w, &mut enabled);
            let e = enabled.iter().find(|e| e.action == *action)?;
            if let Some((c, lo)) = e.guard {
                cs.push(Diff::le(born[c.0 as usize], k, -lo));
            }
            let n = born.len() - 1;
            let mut t = TimeCtx::new(n, Answers::Script(answers));
            self.apply(&mut w, action, &mut t, &mut Log::off());
            if t.asks.iter().map(|a| a.yes).collect::<Vec<_>>() != *answers {
                return None;
            }
            for a in &t.asks {
                let j = self.born_of(&born, n, &t.fresh, a.clk, k);
                cs.push(match (a.yes, a.strict, margin) {
                    (true, false, 0) => Diff::le(k, j, a.hi),
                    (true, true, 0) => Diff::lt(k, j, a.hi),
                    (false, false, 0) => Diff::lt(j, k, -a.lo),
                    (false, true, 0) => Diff::le(j, k, -a.lo),
                    (true, _, m) => Diff::le(k, j, a.hi - m),
                    (false, _, m) => Diff::le(j, k, -(a.lo + m)),
                });
            }
            let slots = relayout(&mut w, n, &t.fresh);
            let mut next: Vec<usize> = slots
                .iter()
                .map(|sl| match sl {
                    Slot::Old(i) => born[*i],
                    Slot::Zero | Slot::Free => k,
                })
                .collect();
            while let Some(order) = renumber(&mut w) {
                next = order.iter().map(|o| next[*o]).collect();
            }
            born = next;
        }
        // The last state is reached within its own deadlines.
        let k = path.len();
        self.invariant(&w, &mut inv);
        for (c, hi) in &inv {
            cs.push(Diff::le(k, born[c.0 as usize], *hi));
        }
        Some((cs, w, born))
    }

    /// The event at which clock `c` (a handle of a step in progress, maybe
    /// fresh) was armed.
    fn born_of(
        &self,
        born: &[usize],
        base: usize,
        fresh: &[crate::time::Fresh],
        c: Clk,
        now: usize,
    ) -> usize {
        let i = c.0 as usize;
        if i <= base {
            return born[i];
        }
        match fresh[i - base - 1] {
            crate::time::Fresh::Zero => now,
            crate::time::Fresh::Copy(d) => self.born_of(born, base, fresh, d, now),
        }
    }
}

/// A duration in µs as a rational, for messages.
pub fn micros(r: Rational) -> Micros {
    (r.num() / r.den()) as Micros
}
