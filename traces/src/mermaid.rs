//! The trace as a Mermaid `sequenceDiagram`, which code hosts render in
//! Markdown: a participant per lane, an arrow per message at the step it
//! arrives (replies dotted, lost messages crossed), an activation bar while
//! a client believes it holds the lock, notes for faults, acquisitions and
//! expiries, and the violating step boxed in red.
//!
//! [`diagram`] is the bare diagram; [`render`] wraps it in a Markdown page
//! with the story, ready to commit next to the code.

use crate::format::{EventKind, Trace};
use crate::narrate;
use crate::scene::{self, Outcome, state};
use crate::time::{self, show_at, show_ms};
use std::fmt::Write;

/// Makes text safe inside a Mermaid message or note: `#` and `;` are
/// Mermaid syntax, so they become entity codes.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Lanes `ids` cover, as `first,last` in display order (for `Note over`).
fn span(t: &Trace, ids: &[&str]) -> String {
    let pos: Vec<usize> = ids
        .iter()
        .filter_map(|id| t.participants.iter().position(|p| p.id == *id))
        .collect();
    let (Some(lo), Some(hi)) = (pos.iter().min(), pos.iter().max()) else {
        return t.participants[0].id.clone();
    };
    if lo == hi {
        t.participants[*lo].id.clone()
    } else {
        format!("{},{}", t.participants[*lo].id, t.participants[*hi].id)
    }
}

fn everyone(t: &Trace) -> String {
    let ids: Vec<&str> = t.participants.iter().map(|p| p.id.as_str()).collect();
    span(t, &ids)
}

/// The bare `sequenceDiagram`.
pub fn diagram(t: &Trace) -> String {
    let flights = scene::flights(t);
    let mut out = String::new();
    let _ = writeln!(out, "sequenceDiagram");
    for p in &t.participants {
        let _ = writeln!(
            out,
            "    participant {} as {} · {}",
            p.id,
            p.id,
            esc(&p.label)
        );
    }
    let all = everyone(t);
    let _ = writeln!(
        out,
        "    Note over {all}: {} · {} · faults used: {}",
        show_at(t.initial.time),
        esc(&t.config.protocol),
        if t.faults_used.is_empty() {
            "none".to_string()
        } else {
            t.faults_used.join(", ")
        }
    );
    let mut active: Vec<String> = Vec::new();
    for st in &t.steps {
        let k = st.index;
        let before = state(t, k - 1);
        let violation = k == t.violation_step;
        let _ = writeln!(out, "    %% step {k}, {}", show_at(st.state.time));
        if violation {
            let _ = writeln!(out, "    rect rgba(220, 38, 38, 0.12)");
        }
        if let Some(gap) = time::long_gap_before(t, k) {
            let _ = writeln!(
                out,
                "    Note over {all}: … {} pass ({} → {})",
                show_ms(gap),
                show_at(before.time),
                show_at(st.state.time)
            );
        }
        for f in flights.iter().filter(|f| f.end == k) {
            let reply = scene::client_number(t, &f.from).is_none();
            let label = st
                .events
                .iter()
                .find(|e| {
                    e.kind == EventKind::Execute
                        && e.at == f.to
                        && e.peer.as_deref() == Some(&f.from)
                })
                .map(|e| scene::pretty(&e.text))
                .unwrap_or_else(|| f.text.clone());
            let late = if f.late(t) {
                format!(
                    " (sent at step {}, {})",
                    f.sent,
                    show_at(state(t, f.sent).time)
                )
            } else {
                String::new()
            };
            let arrow = match (f.outcome, reply) {
                (Outcome::Delivered, false) => "->>",
                (Outcome::Delivered, true) => "-->>",
                (Outcome::Lost, false) => "-x",
                (Outcome::Lost, true) => "--x",
                _ => continue,
            };
            let lost = if f.outcome == Outcome::Lost {
                " — LOST"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    {}{arrow}{}: {}{late}{lost}",
                f.from,
                f.to,
                esc(&label)
            );
        }
        let mut expired: Vec<&str> = Vec::new();
        for e in &st.events {
            let peer = e.peer.as_deref();
            match e.kind {
                EventKind::Read | EventKind::Write if peer.is_some() => {
                    let _ = writeln!(
                        out,
                        "    {}->>{}: {}",
                        e.at,
                        peer.unwrap_or(""),
                        esc(&e.text)
                    );
                }
                EventKind::Reject if peer.is_some() => {
                    let _ = writeln!(
                        out,
                        "    {}--x{}: {}",
                        e.at,
                        peer.unwrap_or(""),
                        esc(&e.text)
                    );
                }
                EventKind::Replicate if peer.is_some() => {
                    let _ = writeln!(
                        out,
                        "    {}-){}: {}",
                        peer.unwrap_or(""),
                        e.at,
                        esc(&e.text)
                    );
                }
                EventKind::Fault => {
                    let over = match peer {
                        Some(p) if st.message.is_none() => span(t, &[&e.at, p]),
                        _ => span(t, &[&e.at]),
                    };
                    let _ = writeln!(out, "    Note over {over}: ⚡ {}", esc(&e.text));
                }
                EventKind::Acquire => {
                    let _ = writeln!(out, "    Note over {}: ★ {}", e.at, esc(&e.text));
                }
                EventKind::Release | EventKind::Timeout | EventKind::Retry | EventKind::Reject => {
                    let _ = writeln!(out, "    Note over {}: {}", e.at, esc(&e.text));
                }
                EventKind::Expire => expired.push(&e.at),
                _ => {}
            }
        }
        if !expired.is_empty() {
            let _ = writeln!(out, "    Note over {}: lock expires", span(t, &expired));
        }
        // Activation bars follow belief.
        for c in &st.state.clients {
            let on = active.contains(&c.id);
            if c.holds && !on {
                let _ = writeln!(out, "    activate {}", c.id);
                active.push(c.id.clone());
            } else if !c.holds && on {
                let _ = writeln!(out, "    deactivate {}", c.id);
                active.retain(|a| a != &c.id);
            }
        }
        if violation {
            let _ = writeln!(
                out,
                "    Note over {all}: ✗ {} broken: {}",
                t.invariant,
                esc(&t.violation)
            );
            let _ = writeln!(out, "    end");
        }
    }
    // Close every bar still open, or Mermaid draws none of them.
    for id in &active {
        let _ = writeln!(out, "    deactivate {id}");
    }
    // In the protocol's own words (a queue's partitions, not a lock).
    crate::vocab::speak(&t.config.protocol, &out)
}

/// A Markdown page: the title, the story, and the diagram in a fenced
/// `mermaid` block.
pub fn render(t: &Trace) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## {}: {} violated after step {} of {}",
        t.config.protocol,
        t.invariant,
        t.violation_step,
        t.steps.len()
    );
    let _ = writeln!(out);
    out.push_str(&story_markdown(t));
    let _ = writeln!(out);
    let _ = writeln!(out, "```mermaid");
    out.push_str(&diagram(t));
    let _ = writeln!(out, "```");
    out
}

/// The story as a Markdown list, with the conclusion in bold.
pub fn story_markdown(t: &Trace) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "> {}  ", t.violation);
    let _ = writeln!(out, "> <sub>{}</sub>", t.config.time);
    let _ = writeln!(out);
    for s in narrate::story(t) {
        let text = if s.violation {
            format!("**{}**", s.text)
        } else {
            s.text.clone()
        };
        let later = s
            .gap
            .map(|g| format!("*… {} pass …* ", show_ms(g)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "1. {later}`{}` {} <sub>step {}</sub>",
            show_at(s.time),
            text,
            s.step
        );
    }
    out
}
