//! The trace in the Informal Trace Format (ITF) of Apalache and Quint
//! (Apalache ADR-015), so that their tools, and anything that reads ITF,
//! can take a locklab counterexample.
//!
//! State 0 is the world before the first step; state `i` is the world after
//! step `i`, with the step that led to it (`step`, `actor`, `action`,
//! `events`, `message`). Every state has the same variables, listed in
//! `vars`. Integers are `{"#bigint": "…"}`; times are whole microseconds
//! (`time_us`, with the exact value as `time_exact_us`, `"n"` or `"n/d"`,
//! since a drifting clock can put a step at a fraction of a µs); other
//! durations are rounded to whole µs and named `…_us`. Clients and servers
//! are maps by id (`#map`); a value that may be absent is a Quint option,
//! `{"tag": "Some", "value": v}` or `{"tag": "None", "value": {}}`, as Quint
//! writes it.
//! Each client carries both what it believes (`holds`, `believed_lease_us`)
//! and what the lock service holds for it (`service_holds`,
//! `service_votes`), so the gap a counterexample shows is in the data.

use crate::format::{Event, MessageView, StateView, Step, Trace};
use crate::scene::hold;
use serde_json::{Value, json};

/// The variables of every state, in this order.
pub const VARS: [&str; 14] = [
    "step",
    "time_us",
    "time_exact_us",
    "actor",
    "action",
    "message",
    "events",
    "clients",
    "servers",
    "resource",
    "network",
    "faults_left",
    "violations",
    "invariant_broken",
];

/// The trace as an ITF document (pretty JSON, ending in a newline).
pub fn render(t: &Trace) -> String {
    let mut states = vec![state(t, 0, None, &t.initial)];
    for s in &t.steps {
        states.push(state(t, s.index, Some(s), &s.state));
    }
    let doc = json!({
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": t.tool,
            "description": format!(
                "locklab {} counterexample: {} breaks {} at step {}: {}",
                t.engine, t.config.protocol, t.invariant, t.violation_step, t.violation
            ),
            "protocol": t.config.protocol,
            "invariant": t.invariant,
            "violation_step": t.violation_step.to_string(),
            "engine": t.engine,
        },
        "vars": VARS,
        "states": states,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("an ITF document always serialises");
    s.push('\n');
    s
}

/// An ITF integer.
fn int(n: impl Into<i128>) -> Value {
    json!({ "#bigint": n.into().to_string() })
}

/// Milliseconds as whole microseconds.
fn us(ms: f64) -> Value {
    int((ms * 1000.0).round() as i128)
}

fn some(v: Value) -> Value {
    json!({ "tag": "Some", "value": v })
}

fn none() -> Value {
    json!({ "tag": "None", "value": {} })
}

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
    v.map(f).map(some).unwrap_or_else(none)
}

fn set(mut items: Vec<Value>) -> Value {
    items.dedup();
    json!({ "#set": items })
}

fn map(pairs: Vec<(Value, Value)>) -> Value {
    json!({ "#map": pairs.into_iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>() })
}

/// The exact time of a step (`"n"` or `"n/d"` µs), rounded down to a whole µs.
fn floor_us(exact: &str) -> Option<i128> {
    match exact.split_once('/') {
        None => exact.trim().parse().ok(),
        Some((n, d)) => {
            let (n, d): (i128, i128) = (n.trim().parse().ok()?, d.trim().parse().ok()?);
            (d > 0).then(|| n.div_euclid(d))
        }
    }
}

fn state(t: &Trace, index: usize, step: Option<&Step>, s: &StateView) -> Value {
    let exact = step.map(|x| x.at_us.clone()).unwrap_or_else(|| {
        // The initial state has no exact time of its own: its time in ms.
        ((s.time * 1000.0).round() as i128).to_string()
    });
    let time = floor_us(&exact)
        .map(int)
        .unwrap_or_else(|| us(step.map_or(s.time, |x| x.time)));
    let mut violations: Vec<Value> = step
        .map(|x| x.violations.iter().map(|v| json!(v)).collect())
        .unwrap_or_default();
    violations.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    let broken = step.is_some_and(|x| x.violations.contains(&t.invariant));
    json!({
        "#meta": { "index": index },
        "step": int(index as i128),
        "time_us": time,
        "time_exact_us": exact,
        "actor": step.map_or("init", |x| x.actor.as_str()),
        "action": step.map_or("the world before the first step", |x| x.label.as_str()),
        "message": opt(step.and_then(|x| x.message.as_ref()), message),
        "events": step.map_or(vec![], |x| x.events.iter().map(event).collect::<Vec<_>>()),
        "clients": clients(t, s),
        "servers": servers(s),
        "resource": {
            "value": int(s.resource.value),
            "accepted_writes": int(s.resource.accepted_writes),
            "max_token": opt(s.resource.max_token, int),
            "stock": opt(s.resource.stock, int),
        },
        "network": s.network.iter().map(message).collect::<Vec<_>>(),
        "faults_left": map(
            s.faults_left
                .iter()
                .map(|(k, v)| (json!(k), int(*v)))
                .collect(),
        ),
        "violations": set(violations),
        "invariant_broken": broken,
    })
}

fn clients(t: &Trace, s: &StateView) -> Value {
    map(s
        .clients
        .iter()
        .map(|c| {
            let h = hold(t, s, &c.id);
            let v = json!({
                "phase": c.phase,
                "holds": c.holds,
                "alive": c.alive,
                "paused_us": opt(c.paused, us),
                "value": opt(c.value.clone(), Value::String),
                "token": opt(c.token, int),
                "read": opt(c.read, int),
                "believed_lease_us": opt(c.believed_lease, us),
                "clock_offset_us": us(c.clock_offset),
                "watchdog": opt(c.watchdog.clone(), Value::String),
                "acquisitions_done": int(c.acquisitions_done),
                "service_holds": h.held(),
                "service_votes": int(h.count as i128),
                "service_ttl_us": opt(h.ttl.flatten(), us),
            });
            (json!(c.id), v)
        })
        .collect())
}

fn servers(s: &StateView) -> Value {
    map(s
        .servers
        .iter()
        .map(|sv| {
            let entries = map(sv
                .entries
                .iter()
                .map(|e| {
                    let v = json!({
                        "value": e.value,
                        "owner": opt(e.owner.clone(), Value::String),
                        "ttl_us": opt(e.ttl, us),
                        "expired": e.expired,
                    });
                    (json!(e.key), v)
                })
                .collect());
            let mut watches: Vec<Value> = sv.watches.iter().map(|w| json!(w)).collect();
            watches.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            let v = json!({
                "role": sv.role,
                "status": sv.status,
                "clock_offset_us": us(sv.clock_offset),
                "entries": entries,
                "unreplicated": sv.unreplicated,
                "watches": set(watches),
            });
            (json!(sv.id), v)
        })
        .collect())
}

fn message(m: &MessageView) -> Value {
    json!({
        "from": m.from,
        "to": m.to,
        "text": m.text,
        "held": m.held,
        "age_us": us(m.age),
    })
}

fn event(e: &Event) -> Value {
    let kind = serde_json::to_value(e.kind).expect("an event kind always serialises");
    json!({
        "kind": kind,
        "at": e.at,
        "peer": opt(e.peer.clone(), Value::String),
        "text": e.text,
    })
}

#[cfg(test)]
mod tests {
    use super::floor_us;

    #[test]
    fn exact_times_round_down_to_whole_microseconds() {
        assert_eq!(floor_us("1500"), Some(1500));
        assert_eq!(floor_us("7/2"), Some(3));
        assert_eq!(floor_us("-7/2"), Some(-4));
        assert_eq!(floor_us("1/0"), None);
        assert_eq!(floor_us("x"), None);
    }
}
