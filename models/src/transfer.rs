//! Running one protocol's counterexample schedule against another protocol
//! (README.md, "Rendering traces"): "does the fix block it, and where?"
//!
//! A schedule is what the environment did: which client stepped when,
//! which message arrived in which order, which fault struck when, how much
//! time passed. The target protocol runs its own rules under the same
//! schedule: each source step is mapped to the target step that plays the
//! same role (the same client's due step; the arrival of the message
//! between the same two participants in the same direction; the same
//! fault; the same amount of time). Where the target has steps of its own
//! that are due first (an extra round trip, a renewal), it takes them
//! before the next source step, in a fixed order. Where no step plays the
//! role, the schedules part and the comparison stops there, and says so.
//!
//! Times are exact (the concrete engine, `engine/concrete.rs`). Each step
//! is taken at its source time, shifted by how much later the target runs:
//! where the target's windows do not allow a step yet (a longer latency or
//! least work), it is taken at the earliest time its guard holds, and every
//! later step keeps its distance to it, so the schedule's gaps (a pause, a
//! slow work, a wait for a key to expire) keep their lengths.

use crate::action::Action;
use crate::engine::concrete::CState;
use crate::engine::solve::Rational;
use crate::model::LockModel;
use crate::world::{Body, Log, Msg, World};
use crate::{Invariant, faults};

/// One step of the target run.
#[derive(Clone, Debug)]
pub struct Mapped {
    /// The source step it plays (1-based), or `None` for a step the target
    /// took on its own before the next source step.
    pub source: Option<usize>,
    pub action: Action,
    /// When it happened, in µs.
    pub at: Rational,
    /// Whether the invariant is broken after it.
    pub broken: bool,
}

/// The outcome of a transfer.
#[derive(Clone, Debug)]
pub struct Transfer {
    pub steps: Vec<Mapped>,
    /// The first source step (1-based) no target step could play, if the
    /// schedules parted.
    pub parted_at: Option<usize>,
    /// Index in `steps` of the first step after which the invariant broke
    /// in the target, if it did.
    pub broken_at: Option<usize>,
}

/// The part of a message that says what role its arrival plays.
fn same_role(a: &Msg, b: &Msg) -> bool {
    let kind = |m: &Msg| matches!(m.body, Body::Req(_));
    a.from == b.from && a.to == b.to && a.chan == b.chan && kind(a) == kind(b)
}

/// The target action that plays the role of `a` in `w`, if any.
fn counterpart(w: &World, a: &Action) -> Option<Action> {
    let find_msg = |msg: &Msg| w.net.iter().find(|x| same_role(x, msg)).copied();
    Some(match *a {
        Action::Deliver { msg } => Action::Deliver {
            msg: find_msg(&msg)?,
        },
        Action::Drop { msg } => Action::Drop {
            msg: find_msg(&msg)?,
        },
        Action::Delay { msg } => Action::Delay {
            msg: find_msg(&msg)?,
        },
        // A client whose replies arrive by steps of their own reads them
        // in its due step once they are in.
        Action::Gather { client } if w.clients.get(client as usize)?.gather.is_none() => {
            Action::Step { client }
        }
        // And one whose replies are folded reads them in its `Gather`.
        Action::Step { client } if w.clients.get(client as usize)?.gather.is_some() => {
            Action::Gather { client }
        }
        other => other,
    })
}

/// One of the target's own steps with a deadline that it can take at `at`,
/// first one first.
fn own_step(m: &LockModel, s: &CState, at: Rational) -> Option<(Action, CState)> {
    let mut enabled = Vec::new();
    m.enabled(&s.world, &mut enabled);
    let mut inv = Vec::new();
    m.invariant(&s.world, &mut inv);
    enabled
        .into_iter()
        .filter(|e| faults::kind_of(&e.action).is_none())
        .filter(|e| !matches!(e.action, Action::Resume { .. }))
        .filter(|e| {
            e.guard
                .is_some_and(|(c, _)| inv.iter().any(|(d, _)| *d == c))
        })
        .find_map(|e| {
            m.cstep(s, &e.action, at, &mut Log::off())
                .ok()
                .map(|n| (e.action, n))
        })
}

/// The earliest time at or after `at` when `action`'s guard holds in `s`
/// (the clock it waits on reads its lower bound), if the step is enabled.
fn earliest(m: &LockModel, s: &CState, action: &Action, at: Rational) -> Option<Rational> {
    let mut enabled = Vec::new();
    m.enabled(&s.world, &mut enabled);
    let e = enabled.iter().find(|e| e.action == *action)?;
    Some(match e.guard {
        Some((c, lo)) => at.max(s.born[c.0 as usize] + Rational::integer(lo)),
        None => at,
    })
}

/// How many of its own steps the target may take to catch up with one
/// source step before the schedules are declared parted.
const CATCH_UP: usize = 64;

/// Runs the schedule of `path` (a timed path of `source`; only the roles
/// of its steps and their times matter) against `target`, watching `inv`.
pub fn transfer(
    source: &LockModel,
    path: &[(Action, Rational)],
    target: &LockModel,
    inv: Invariant,
) -> Transfer {
    let _ = source;
    let mut st = target.cinit();
    let mut steps: Vec<Mapped> = Vec::new();
    let mut broken_at = None;
    let mut parted_at = None;
    let mut push = |steps: &mut Vec<Mapped>, s: &CState, source: Option<usize>, action: Action| {
        let broken = !inv.holds_at(target, s);
        if broken && broken_at.is_none() {
            broken_at = Some(steps.len());
        }
        steps.push(Mapped {
            source,
            action,
            at: s.now,
            broken,
        });
    };
    // How much later than in the source the target runs: a step the
    // target's windows do not allow yet (a longer latency, a longer least
    // work) is taken as soon as they do, and every later step keeps its
    // distance to it, so the gaps of the schedule (a pause, a slow work)
    // stay what they were.
    let mut shift = Rational::ZERO;
    'schedule: for (i, (a, source_at)) in path.iter().enumerate() {
        let index = i + 1;
        // A reply's arrival that the target does not make a step (it folds
        // it into its client's read, `client::settle_gather`): the reply
        // arrives unseen, and the read comes with the source's read.
        if let Action::Deliver { msg } = a
            && let Some(x) = st.world.net.iter().find(|x| same_role(x, msg))
            && target.folded(&st.world, x)
        {
            continue;
        }
        let mut rounds = 0;
        loop {
            let at = &(*source_at + shift).max(st.now);
            // The target's own deadlines come first.
            if let Some(d) = target.deadline(&st)
                && d < *at
            {
                match own_step(target, &st, d.max(st.now)) {
                    Some((u, n)) if rounds < CATCH_UP => {
                        st = n;
                        push(&mut steps, &st, None, u);
                        rounds += 1;
                        continue;
                    }
                    _ => {
                        parted_at = Some(index);
                        break 'schedule;
                    }
                }
            }
            if let Some(c) = counterpart(&st.world, a)
                && let Some(when) = earliest(target, &st, &c, *at)
                && target.deadline(&st).is_none_or(|d| when <= d)
                && let Ok(n) = target.cstep(&st, &c, when, &mut Log::off())
            {
                shift = when - *source_at;
                st = n;
                push(&mut steps, &st, Some(index), c);
                break;
            }
            match own_step(target, &st, *at) {
                Some((u, n)) if rounds < CATCH_UP => {
                    st = n;
                    push(&mut steps, &st, None, u);
                    rounds += 1;
                }
                _ => {
                    parted_at = Some(index);
                    break 'schedule;
                }
            }
        }
    }
    Transfer {
        steps,
        parted_at,
        broken_at,
    }
}
