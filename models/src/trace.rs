//! Turning action paths into trace files, and checking trace files against
//! the model.
//!
//! A trace is only ever built by replaying its actions through the model
//! from the initial state: each action must be enabled where it is taken,
//! and the last state must violate the invariant the trace claims. A trace
//! read from disk is replayed the same way and every recorded state must
//! match what the model computes; the first step that does not is named.

use crate::action::Action;
use crate::faults::{self, FaultKind};
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::params::{Params, TICK_MEANING};
use crate::protocols;
use crate::view::{Clocks, message, participants, view};
use crate::world::{Log, World};
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
        Action::Tick { ticks } => format!("tick +{ticks}"),
        Action::Step { client } => format!("c{} steps", client + 1),
        Action::Watchdog { client } => format!("c{} watchdog fires", client + 1),
        Action::Deliver { msg } => {
            format!("deliver {:?} -> {:?}: {:?}", msg.from, msg.to, msg.body)
        }
        Action::Replicate { server } => format!("replicate from redis{}", server + 1),
        Action::Resume { client } => format!("c{} resumes", client + 1),
        Action::Finish { client } => format!("c{} finishes slow work", client + 1),
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
        tick: TICK_MEANING.to_string(),
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

/// Replays `path` from the initial state and builds the trace of a
/// violation of `inv`. Fails if an action is not enabled where it is taken
/// or the path does not end in a violation of `inv`.
pub fn build(
    m: &LockModel,
    path: &[Action],
    inv: Invariant,
    engine: &str,
    seed: Option<u64>,
) -> Result<Trace, ReplayError> {
    let mut w = m.init();
    let mut clocks = Clocks::new(&w);
    let initial = view(m, &w, 0, &clocks);
    let parts = participants(m, &w);
    let mut time = 0u64;
    let mut steps = Vec::with_capacity(path.len());
    let mut used: Vec<FaultKind> = Vec::new();
    let mut first_violation = None;
    for (i, a) in path.iter().enumerate() {
        let index = i + 1;
        if !m.allows(&w, a) {
            return Err(err(
                Some(index),
                format!("action {} is not enabled here", action_text(a)),
            ));
        }
        let msg = match a {
            Action::Deliver { msg } | Action::Drop { msg } | Action::Delay { msg } => {
                Some(message(&w, msg))
            }
            _ => None,
        };
        let actor = m.actor(&w, a);
        let mut log = Log::on();
        m.apply(&mut w, a, &mut log);
        clocks.record(a);
        time += a.ticks();
        if let Some(k) = faults::kind_of(a)
            && !used.contains(&k)
        {
            used.push(k);
        }
        let events = log.take();
        let violations: Vec<String> = m
            .properties
            .iter()
            .filter(|p| !p.holds(m, &w))
            .map(|p| p.name().to_string())
            .collect();
        if first_violation.is_none() && !inv.holds(m, &w) {
            first_violation = Some(index);
        }
        steps.push(Step {
            index,
            time,
            actor,
            action: serde_json::to_value(a).map_err(|e| err(Some(index), e.to_string()))?,
            label: label(&events),
            message: msg,
            events,
            state: view(m, &w, time, &clocks),
            violations,
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
        violation: inv.explain(m, &w),
        faults_used: used.iter().map(|k| k.name().to_string()).collect(),
        initial,
        steps,
    })
}

/// The actions of a trace, parsed.
pub fn actions(t: &Trace) -> Result<Vec<Action>, ReplayError> {
    t.steps
        .iter()
        .map(|s| {
            serde_json::from_value(s.action.clone())
                .map_err(|e| err(Some(s.index), format!("unreadable action: {e}")))
        })
        .collect()
}

/// Checks a trace read from disk: rebuilds its model from its config,
/// replays every action, and requires every recorded state, the time, the
/// violation step and the final violation to match the model exactly.
/// Returns the model and the final world.
pub fn validate(t: &Trace) -> Result<(LockModel, World), ReplayError> {
    let m = model_from_config(&t.config).map_err(|e| err(None, e))?;
    let inv = Invariant::from_name(&t.invariant).ok_or_else(|| {
        err(
            None,
            format!("unknown invariant {:?} in the trace", t.invariant),
        )
    })?;
    let path = actions(t)?;
    let rebuilt = build(&m, &path, inv, &t.engine, t.seed).map_err(|e| ReplayError {
        step: e.step,
        message: e.message,
    })?;
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
        if a.time != b.time {
            return Err(err(
                Some(b.index),
                format!("recorded time {} but the model says {}", b.time, a.time),
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
    let mut w = m.init();
    for a in &path {
        w = m.after(&w, a);
    }
    Ok((m, w))
}
