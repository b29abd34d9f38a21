//! Terminal rendering of a trace: one line per step with the time, the
//! actor, who believes they hold the lock, what each server stores, the
//! resource, and what happened. The step that breaks the invariant is marked.

use crate::format::{StateView, Trace};
use crate::time::{self, show_ms};
use std::fmt::Write;

const BOLD_RED: &str = "\x1b[1;31m";
const DIM: &str = "\x1b[2m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// Who believes they hold the lock, e.g. `c1,c2` or `-`.
pub fn holders(s: &StateView) -> String {
    let h: Vec<&str> = s
        .clients
        .iter()
        .filter(|c| c.holds)
        .map(|c| c.id.as_str())
        .collect();
    if h.is_empty() {
        "-".into()
    } else {
        h.join(",")
    }
}

/// What the lock servers store, compactly: `c1#1 ttl 5 s` for one server,
/// `r1:c1 r2:c1 r3:- ...` for several.
pub fn lock_summary(s: &StateView) -> String {
    let live: Vec<_> = s.servers.iter().collect();
    let one = |sv: &crate::format::ServerView| -> String {
        if sv.status.starts_with("down") {
            return "down".into();
        }
        if sv.status == "dead" {
            return "dead".into();
        }
        match sv.entries.iter().find(|e| e.key == "lock") {
            None => "-".into(),
            Some(e) => {
                let ttl = match e.ttl {
                    None => "no ttl".to_string(),
                    Some(t) if e.expired => format!("expired({})", show_ms(t)),
                    Some(t) => format!("ttl {}", show_ms(t)),
                };
                format!("{} {}", e.value, ttl)
            }
        }
    };
    match live.len() {
        0 => "-".into(),
        1 => one(live[0]),
        _ if live.iter().all(|sv| sv.role == "instance") => live
            .iter()
            .map(|sv| {
                let short = sv.id.replace("redis", "r");
                let v = match sv.entries.iter().find(|e| e.key == "lock") {
                    _ if sv.status != "up" => "down".to_string(),
                    None => "-".into(),
                    Some(e) => e.owner.clone().unwrap_or_else(|| e.value.clone()),
                };
                format!("{short}:{v}")
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => live
            .iter()
            .map(|sv| format!("{}:{}", sv.role, one(sv)))
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// `value/writes` plus the highest token when the resource checks tokens.
pub fn resource_summary(s: &StateView) -> String {
    let r = &s.resource;
    let base = match r.stock {
        Some(st) => format!("stock {st} {}/{}", r.value, r.accepted_writes),
        None => format!("{}/{}", r.value, r.accepted_writes),
    };
    match r.max_token {
        Some(t) => format!("{base} tok {t}"),
        None => base,
    }
}

/// Renders the trace as a table a workshop can read. `color` adds ANSI
/// colour; pass it only when writing to a terminal.
pub fn render(trace: &Trace, color: bool) -> String {
    let (bold, dim, yellow, reset) = if color {
        (BOLD_RED, DIM, YELLOW, RESET)
    } else {
        ("", "", "", "")
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{bold}{}{reset} violated after step {} of {}: {}",
        trace.invariant,
        trace.violation_step,
        trace.steps.len(),
        trace.violation
    );
    let faults = if trace.faults_used.is_empty() {
        "none".to_string()
    } else {
        trace.faults_used.join(", ")
    };
    let _ = writeln!(
        out,
        "{dim}protocol {} · {} clients · faults used: {} · {}{reset}",
        trace.config.protocol, trace.config.clients, faults, trace.config.time
    );
    let _ = writeln!(
        out,
        "{dim}columns: holders = clients that believe they hold the lock; lock = what the server stores; resource = value/accepted writes{reset}"
    );

    let rows: Vec<[String; 6]> = std::iter::once([
        "step".to_string(),
        "t".to_string(),
        "actor".to_string(),
        "holders".to_string(),
        "lock".to_string(),
        "resource".to_string(),
    ])
    .chain(std::iter::once([
        "0".to_string(),
        show_ms(trace.initial.time),
        "-".to_string(),
        holders(&trace.initial),
        lock_summary(&trace.initial),
        resource_summary(&trace.initial),
    ]))
    .chain(trace.steps.iter().map(|st| {
        [
            st.index.to_string(),
            show_ms(st.state.time),
            st.actor.clone(),
            holders(&st.state),
            lock_summary(&st.state),
            resource_summary(&st.state),
        ]
    }))
    .collect();
    let mut widths = [0usize; 6];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let labels: Vec<String> = std::iter::once("what happened".to_string())
        .chain(std::iter::once("initial state".to_string()))
        .chain(trace.steps.iter().map(|s| s.label.clone()))
        .collect();
    for (i, (r, label)) in rows.iter().zip(labels.iter()).enumerate() {
        let step_index = i.checked_sub(1);
        let is_violation = step_index == Some(trace.violation_step);
        let is_fault = step_index
            .and_then(|k| k.checked_sub(1))
            .and_then(|k| trace.steps.get(k))
            .is_some_and(|s| s.actor == "env");
        let marker = if is_violation { ">>" } else { "  " };
        let mut line = format!(
            "{marker} {:>w0$}  {:>w1$}  {:<w2$}  {:<w3$}  {:<w4$}  {:<w5$}  {label}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
            w5 = widths[5],
        );
        if is_violation {
            line = format!("{bold}{line}   <-- {} broken{reset}", trace.invariant);
        } else if is_fault {
            line = format!("{yellow}{line}{reset}");
        } else if i == 0 {
            line = format!("{dim}{line}{reset}");
        }
        if let Some(gap) = step_index.and_then(|k| time::long_gap_before(trace, k)) {
            let _ = writeln!(
                out,
                "{dim}   {:>w0$}  {:>w1$}  … {} pass …{reset}",
                "",
                "",
                show_ms(gap),
                w0 = widths[0],
                w1 = widths[1],
            );
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}
