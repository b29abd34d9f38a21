//! Running one protocol's counterexample schedule against another protocol
//! (design §5b): "does the fix block it, and where?"
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

use crate::action::Action;
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
fn counterpart(m: &LockModel, w: &World, a: &Action) -> Option<Action> {
    let mut enabled = Vec::new();
    m.enabled(w, &mut enabled);
    let find_msg = |msg: &Msg| w.net.iter().find(|x| same_role(x, msg)).copied();
    let candidate = match *a {
        Action::Tick { ticks } => {
            // Time passes the same in both; the target may have to stop at
            // its own deadlines on the way.
            let d = m.next_deadline(w).unwrap_or(ticks);
            Action::Tick {
                ticks: ticks.min(d).max(1),
            }
        }
        Action::Deliver { msg } => Action::Deliver {
            msg: find_msg(&msg)?,
        },
        Action::Drop { msg } => Action::Drop {
            msg: find_msg(&msg)?,
        },
        Action::Delay { msg } => Action::Delay {
            msg: find_msg(&msg)?,
        },
        other => other,
    };
    m.allows(w, &candidate).then_some(candidate)
}

/// The target's own urgent steps: taken, first one first, before a source
/// step whose role is not yet playable.
fn urgent(m: &LockModel, w: &World) -> Option<Action> {
    let mut enabled = Vec::new();
    m.enabled(w, &mut enabled);
    if enabled.contains(&Action::Tick { ticks: 1 }) {
        return None;
    }
    enabled.into_iter().find(|a| {
        faults::kind_of(a).is_none() && !matches!(a, Action::Resume { .. } | Action::Finish { .. })
    })
}

/// How many of its own steps the target may take to catch up with one
/// source step before the schedules are declared parted.
const CATCH_UP: usize = 64;

/// Runs the schedule of `path` (a path of `source`; only the roles of its
/// steps matter) against `target`, watching `inv`.
pub fn transfer(
    source: &LockModel,
    path: &[Action],
    target: &LockModel,
    inv: Invariant,
) -> Transfer {
    let _ = source;
    let mut wt = target.init();
    let mut steps = Vec::new();
    let mut broken_at = None;
    let mut parted_at = None;
    let mut push = |steps: &mut Vec<Mapped>, wt: &World, source: Option<usize>, action: Action| {
        let broken = !inv.holds(target, wt);
        if broken && broken_at.is_none() {
            broken_at = Some(steps.len());
        }
        steps.push(Mapped {
            source,
            action,
            broken,
        });
    };
    'schedule: for (i, a) in path.iter().enumerate() {
        let index = i + 1;
        match *a {
            Action::Tick { ticks } => {
                // Let the same time pass, stopping at the target's own
                // deadlines to take what it must do there.
                let mut left = ticks;
                let mut rounds = 0;
                while left > 0 {
                    let step = Action::Tick { ticks: left };
                    match counterpart(target, &wt, &step) {
                        Some(Action::Tick { ticks: t }) => {
                            target.apply(&mut wt, &Action::Tick { ticks: t }, &mut Log::off());
                            push(&mut steps, &wt, Some(index), Action::Tick { ticks: t });
                            left -= t;
                        }
                        _ => match urgent(target, &wt) {
                            Some(u) if rounds < CATCH_UP => {
                                target.apply(&mut wt, &u, &mut Log::off());
                                push(&mut steps, &wt, None, u);
                                rounds += 1;
                            }
                            _ => {
                                parted_at = Some(index);
                                break 'schedule;
                            }
                        },
                    }
                }
            }
            _ => {
                let mut rounds = 0;
                loop {
                    if let Some(c) = counterpart(target, &wt, a) {
                        target.apply(&mut wt, &c, &mut Log::off());
                        push(&mut steps, &wt, Some(index), c);
                        break;
                    }
                    match urgent(target, &wt) {
                        Some(u) if rounds < CATCH_UP => {
                            target.apply(&mut wt, &u, &mut Log::off());
                            push(&mut steps, &wt, None, u);
                            rounds += 1;
                        }
                        _ => {
                            parted_at = Some(index);
                            break 'schedule;
                        }
                    }
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
