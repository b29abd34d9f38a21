//! Turning action paths into trace files, and checking trace files against
//! the model.
//!
//! A trace is only ever built by replaying its actions through the model
//! from the initial state: each action must be enabled where it is taken,
//! and the last state must violate the invariant the trace claims. A trace
//! read from disk is replayed the same way and every recorded state must
//! match what the model computes; the first step that does not is named.

use crate::action::Action;
use crate::engine::concrete::CState;
use crate::engine::solve::Rational;
use crate::faults::{self, FaultKind};
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::params::{Params, TIME_MEANING};
use crate::protocols;
use crate::search::PathStep;
use crate::view::{Clocks, message, participants, view};
use crate::world::Log;
use locklab_traces::{Config, Event, EventKind, SCHEMA_VERSION, Step, Trace};
use std::collections::BTreeMap;

/// Why a trace does not replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// The first bad step (1-based), if the problem is in a step.
    pub step: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.step {
            Some(s) => write!(f, "step {s}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ReplayError {}

fn err(step: Option<usize>, message: impl Into<String>) -> ReplayError {
    ReplayError {
        step,
        message: message.into(),
    }
}

/// A compact text for an action (stateright's Explorer shows it).
pub fn action_text(a: &Action) -> String {
    match a {
        Action::Step { client } => format!("c{} steps", client + 1),
        Action::Watchdog { client } => format!("c{} watchdog fires", client + 1),
        Action::Gather { client } => format!("c{} reads its replies", client + 1),
        Action::Deliver { msg } => {
            format!("deliver {:?} -> {:?}: {:?}", msg.from, msg.to, msg.body)
        }
        Action::Replicate { server } => format!("replicate from redis{}", server + 1),
        Action::Resume { client } => format!("c{} resumes", client + 1),
        Action::ComeUp { server } => format!("redis{} comes back up", server + 1),
        Action::SessionExpires { client } => format!("c{}'s session expires", client + 1),
        Action::Reap => "the empty container /lock is reaped".to_string(),
        Action::Pause { client } => format!("FAULT pause c{}", client + 1),
        Action::Slow { client } => format!("FAULT slow c{}", client + 1),
        Action::Drop { msg } => {
            format!("FAULT lose {:?} -> {:?}: {:?}", msg.from, msg.to, msg.body)
        }
        Action::Delay { msg } => {
            format!("FAULT delay {:?} -> {:?}: {:?}", msg.from, msg.to, msg.body)
        }
        Action::ClockJump { node, by } => format!("FAULT clock jump {node:?} {by:+}"),
        Action::Crash { client } => format!("FAULT crash c{}", client + 1),
        Action::Restart { server } => format!("FAULT restart redis{}", server + 1),
        Action::Failover { server } => format!("FAULT failover redis{}", server + 1),
        Action::Writer { writer } => format!("w{} steps", writer + 1),
        Action::ResourceRestart => "FAULT resource restart".to_string(),
        Action::Duplicate { client } => format!("FAULT duplicate write of c{}", client + 1),
        Action::Reconcile => "reconciler runs".to_string(),
        Action::PauseReconciler => "FAULT pause reconciler".to_string(),
        Action::ResumeReconciler => "reconciler resumes".to_string(),
        Action::DetectionLate => "detection bound passes".to_string(),
    }
}

/// One line for a step, from its events.
pub fn label(events: &[Event]) -> String {
    let parts: Vec<String> = events
        .iter()
        .map(|e| {
            let peer = e.peer.as_deref().unwrap_or("?");
            match e.kind {
                EventKind::Send => format!("{} -> {peer}: {}", e.at, e.text),
                EventKind::Receive => format!("{} <- {peer}: {}", e.at, e.text),
                EventKind::Execute => format!("{} runs {peer}'s {}", e.at, e.text),
                EventKind::Time => e.text.clone(),
                _ => format!("{}: {}", e.at, e.text),
            }
        })
        .collect();
    if parts.is_empty() {
        "nothing observable happens".into()
    } else {
        parts.join("; ")
    }
}

/// The configuration block of a trace or report.
pub fn config(m: &LockModel) -> Config {
    let mut params = m.params.to_map();
    for k in ["faults", "clients", "acquisitions"] {
        params.remove(k);
    }
    Config {
        protocol: m.proto.name().to_string(),
        clients: m.params.clients as u32,
        acquisitions: m.params.acquisitions as u32,
        faults: FaultKind::ALL
            .into_iter()
            .filter(|k| m.params.faults.get(*k) > 0)
            .map(|k| (k.name().to_string(), m.params.faults.get(k) as u32))
            .collect(),
        params,
        time: TIME_MEANING.to_string(),
    }
}

/// Rebuilds the model a configuration describes, with the same validation
/// the CLI applies.
pub fn model_from_config(c: &Config) -> Result<LockModel, String> {
    let proto = protocols::by_name(&c.protocol).ok_or_else(|| {
        format!(
            "unknown protocol {:?} in the trace's config (known: {})",
            c.protocol,
            protocols::names().join(", ")
        )
    })?;
    let mut map: BTreeMap<String, serde_json::Value> = c.params.clone();
    map.insert("clients".into(), c.clients.into());
    map.insert("acquisitions".into(), c.acquisitions.into());
    let mut budgets = crate::faults::Budgets::none();
    for (name, n) in &c.faults {
        let k = FaultKind::from_name(name)
            .ok_or_else(|| format!("unknown fault kind {name:?} in the trace's config"))?;
        budgets.set(k, (*n).min(255) as u8);
    }
    map.insert(
        "faults".into(),
        serde_json::to_value(budgets).map_err(|e| e.to_string())?,
    );
    let params = Params::from_map(&map)?;
    LockModel::new(proto, params).map_err(|e| e.0)
}

/// Builds the trace of a symbolic path that violates `inv`: gives every
/// step the earliest exact time that meets every window, guard and answer,
/// then replays the steps at those times with the concrete engine. Fails
/// if no such times exist or the replay disagrees with the path.
pub fn build(
    m: &LockModel,
    path: &[PathStep],
    inv: Invariant,
    engine: &str,
    seed: Option<u64>,
) -> Result<Trace, ReplayError> {
    let times = m.times_for_violation(path, inv).ok_or_else(|| {
        err(
            None,
            "no real-valued times realise this path (an engine bug: please report it)",
        )
    })?;
    let steps: Vec<(Action, Rational)> = path
        .iter()
        .zip(times.iter().skip(1))
        .map(|((a, _), t)| (*a, *t))
        .collect();
    let answers: Vec<Vec<bool>> = path.iter().map(|(_, ans)| ans.clone()).collect();
    build_answered(m, &steps, &answers, inv, engine, seed)
}

/// Replays `steps`, each at its exact time in µs, from the initial state,
/// and builds the trace of a violation of `inv`. Fails if a step is not
/// possible where and when it is taken (not enabled, too early, or after a
/// deadline) or the path does not end in a violation of `inv`.
pub fn build_timed(
    m: &LockModel,
    path: &[(Action, Rational)],
    inv: Invariant,
    engine: &str,
    seed: Option<u64>,
) -> Result<Trace, ReplayError> {
    build_answered(m, path, &[], inv, engine, seed)
}

/// [`build_timed`] with the answers `given` to each step's timing
/// questions (see [`LockModel::cstep_given`]; a step with none given is
/// answered as an exact clock reads).
pub fn build_answered(
    m: &LockModel,
    path: &[(Action, Rational)],
    given: &[Vec<bool>],
    inv: Invariant,
    engine: &str,
    seed: Option<u64>,
) -> Result<Trace, ReplayError> {
    let speak = |text: &str| locklab_traces::vocab::speak(m.proto.name(), text);
    let mut s: CState = m.cinit();
    let mut clocks = Clocks::new(&s.world);
    let initial = view(m, &s, &clocks);
    let parts = participants(m, &s.world);
    let mut steps = Vec::with_capacity(path.len());
    let mut used: Vec<FaultKind> = Vec::new();
    let mut first_violation = None;
    for (i, (a, at)) in path.iter().enumerate() {
        let index = i + 1;
        let msg = match a {
            Action::Deliver { msg } | Action::Drop { msg } | Action::Delay { msg } => Some({
                let mut v = message(
                    &CState {
                        now: *at,
                        ..s.clone()
                    },
                    msg,
                );
                v.text = speak(&v.text);
                v
            }),
            _ => None,
        };
        let actor = m.actor(&s.world, a);
        let mut log = Log::on();
        let given_here = given.get(i).map_or(&[][..], Vec::as_slice);
        let (next, answers) = m
            .cstep_given(&s, a, *at, given_here, &mut log)
            .map_err(|e| {
                err(
                    Some(index),
                    format!(
                        "{} at {}: {e}",
                        action_text(a),
                        crate::units::show_rational(*at)
                    ),
                )
            })?;
        s = next;
        clocks.record(a);
        if let Some(k) = faults::kind_of(a)
            && !used.contains(&k)
        {
            used.push(k);
        }
        // The protocol's own words (the queue's partitions and generations).
        let mut events = log.take();
        for e in events.iter_mut() {
            e.text = speak(&e.text);
        }
        let violations: Vec<String> = m
            .properties
            .iter()
            .filter(|p| !p.holds_at(m, &s))
            .map(|p| p.name().to_string())
            .collect();
        if first_violation.is_none() && !inv.holds_at(m, &s) {
            first_violation = Some(index);
        }
        steps.push(Step {
            index,
            time: at.to_ms(),
            at_us: at.to_string(),
            actor,
            action: serde_json::to_value(a).map_err(|e| err(Some(index), e.to_string()))?,
            label: label(&events),
            message: msg,
            events,
            state: view(m, &s, &clocks),
            violations,
            // With drifting clocks the time does not decide the answers.
            answers: if m.params.clock_drift_ppm > 0 {
                answers
            } else {
                Vec::new()
            },
        });
    }
    let Some(vstep) = first_violation else {
        return Err(err(
            None,
            format!("the path does not violate {}", inv.name()),
        ));
    };
    used.sort();
    Ok(Trace {
        schema_version: SCHEMA_VERSION,
        kind: "trace".into(),
        tool: format!("locklab {}", env!("CARGO_PKG_VERSION")),
        engine: engine.into(),
        seed,
        config: config(m),
        participants: parts,
        invariant: inv.name().into(),
        invariant_meaning: inv.meaning().into(),
        violation_step: vstep,
        violation: speak(&inv.explain(m, &s.world)),
        faults_used: used.iter().map(|k| k.name().to_string()).collect(),
        initial,
        steps,
    })
}

/// Parses an exact time `"n"` or `"n/d"` (µs).
pub fn parse_time(text: &str) -> Option<Rational> {
    let (n, d) = match text.split_once('/') {
        Some((n, d)) => (
            n.trim().parse::<i128>().ok()?,
            d.trim().parse::<i128>().ok()?,
        ),
        None => (text.trim().parse::<i128>().ok()?, 1),
    };
    (d > 0).then(|| Rational::new(n, d))
}

/// The steps of a trace, parsed: each action with its exact time.
pub fn actions(t: &Trace) -> Result<Vec<(Action, Rational)>, ReplayError> {
    t.steps
        .iter()
        .map(|s| {
            let a = serde_json::from_value(s.action.clone())
                .map_err(|e| err(Some(s.index), format!("unreadable action: {e}")))?;
            let at = parse_time(&s.at_us).ok_or_else(|| {
                err(
                    Some(s.index),
                    format!(
                        "unreadable time {:?}: expected microseconds as n or n/d",
                        s.at_us
                    ),
                )
            })?;
            Ok((a, at))
        })
        .collect()
}

/// Checks a trace read from disk: rebuilds its model from its config,
/// replays every step at its recorded time (re-checking every latency,
/// deadline, guard and expiry with exact arithmetic), and requires every
/// recorded state, the violation step and the final violation to match the
/// model exactly. Returns the model and the final world.
pub fn validate(t: &Trace) -> Result<(LockModel, CState), ReplayError> {
    let m = model_from_config(&t.config).map_err(|e| err(None, e))?;
    let inv = Invariant::from_name(&t.invariant).ok_or_else(|| {
        err(
            None,
            format!("unknown invariant {:?} in the trace", t.invariant),
        )
    })?;
    let path = actions(t)?;
    let given = given_answers(t);
    let rebuilt = build_answered(&m, &path, &given, inv, &t.engine, t.seed)?;
    if rebuilt.initial != t.initial {
        return Err(err(None, "the initial state does not match the model's"));
    }
    for (a, b) in rebuilt.steps.iter().zip(t.steps.iter()) {
        if a.index != b.index {
            return Err(err(
                Some(b.index),
                format!("step numbered {} where {} was expected", b.index, a.index),
            ));
        }
        if a.state != b.state {
            return Err(err(
                Some(b.index),
                "the recorded state differs from what the model computes",
            ));
        }
    }
    if rebuilt.violation_step != t.violation_step {
        return Err(err(
            None,
            format!(
                "the trace says {} breaks at step {} but the model breaks it at step {}",
                t.invariant, t.violation_step, rebuilt.violation_step
            ),
        ));
    }
    let mut s = m.cinit();
    for (i, (a, at)) in path.iter().enumerate() {
        s = m
            .cstep_given(&s, a, *at, &given[i], &mut Log::off())
            .map_err(|e| err(None, e.0))?
            .0;
    }
    Ok((m, s))
}

/// The answers a trace records for each step's timing questions (empty
/// where the step's time decides them).
pub fn given_answers(t: &Trace) -> Vec<Vec<bool>> {
    t.steps.iter().map(|s| s.answers.clone()).collect()
}
