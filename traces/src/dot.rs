//! The happens-before graph of a trace, in Graphviz DOT: one node for
//! each step at each participant it involves, program-order edges along
//! each participant, and an edge from every message's sending step to the
//! step that handled it (or to where it was lost). Two nodes with no path
//! between them were concurrent: no participant could have known the order
//! in which they happened. Built with `petgraph`; render it with
//! `dot -Tsvg`.
//!
//! Lanes keep a fixed left-to-right order: the trace's participant order,
//! which every renderer draws (clients, then lock servers and services,
//! then the resource). A head node per lane sits on the top rank, chained
//! left to right by invisible edges, and each lane's steps hang below its
//! head in one `group`, so Graphviz keeps the columns where the SVG and
//! the text diagram put them.

use crate::format::{EventKind, Trace};
use crate::narrate;
use crate::scene::{self, Outcome, state};
use crate::time::show_at;
use petgraph::algo::is_cyclic_directed;
use petgraph::dot::{Config, Dot};
use petgraph::graph::{DiGraph, NodeIndex};
use std::fmt::Write;

/// A step as one participant saw it.
#[derive(Clone, Debug)]
pub struct Happening {
    pub step: usize,
    /// True time in ms.
    pub time: f64,
    pub at: String,
    /// What the participant did or suffered, in short clauses.
    pub what: Vec<String>,
    pub fault: bool,
    pub violation: bool,
    /// A message was lost here (a node of its own, not a participant's).
    pub lost: bool,
}

/// Why one happening comes before another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// The same participant, one step after the other.
    Program,
    /// A message from one to the other.
    Message(String),
    /// A message that was lost on the way.
    Lost(String),
}

/// The happens-before graph of a trace.
pub fn graph(t: &Trace) -> DiGraph<Happening, Order> {
    let mut g: DiGraph<Happening, Order> = DiGraph::new();
    let flights = scene::flights(t);
    let is_lane = |id: &str| t.participants.iter().any(|p| p.id == id);
    // Nodes, step by step, in lane order.
    let mut at: Vec<Vec<(String, NodeIndex)>> = vec![Vec::new(); t.steps.len() + 1];
    for st in &t.steps {
        let k = st.index;
        for p in &t.participants {
            let mine: Vec<&crate::format::Event> = st
                .events
                .iter()
                .filter(|e| e.at == p.id && e.kind != EventKind::Time)
                .collect();
            let sends = flights.iter().any(|f| f.sent == k && f.from == p.id);
            let gets = flights
                .iter()
                .any(|f| f.end == k && f.to == p.id && f.outcome == Outcome::Delivered);
            let touched = st.events.iter().any(|e| {
                e.peer.as_deref() == Some(&p.id)
                    && matches!(
                        e.kind,
                        EventKind::Read | EventKind::Write | EventKind::Replicate
                    )
            });
            // A violation noticed by an actor without a lane (the
            // reconciler) is drawn on the lane it speaks of.
            let noticed =
                k == t.violation_step && st.events.iter().any(|e| e.peer.as_deref() == Some(&p.id));
            if mine.is_empty() && !sends && !gets && !touched && !noticed {
                continue;
            }
            // Its own events, or what others did to it (a read of the
            // resource, a write replicated to it).
            let told: Vec<crate::format::Event> = if mine.is_empty() {
                st.events
                    .iter()
                    .filter(|e| e.peer.as_deref() == Some(&p.id) && e.kind != EventKind::Send)
                    .cloned()
                    .collect()
            } else {
                mine.iter().map(|e| (*e).clone()).collect()
            };
            let what: Vec<String> = scene::clauses(&told);
            let idx = g.add_node(Happening {
                step: k,
                time: st.state.time,
                at: p.id.clone(),
                what,
                fault: mine.iter().any(|e| e.kind == EventKind::Fault),
                violation: k == t.violation_step,
                lost: false,
            });
            at[k].push((p.id.clone(), idx));
        }
    }
    let node = |at: &Vec<Vec<(String, NodeIndex)>>, k: usize, id: &str| {
        at.get(k)
            .and_then(|v| v.iter().find(|(p, _)| p == id))
            .map(|(_, i)| *i)
    };
    // Program order.
    for p in t.participants.iter().filter(|p| is_lane(&p.id)) {
        let mut prev: Option<NodeIndex> = None;
        for k in 1..=t.steps.len() {
            if let Some(i) = node(&at, k, &p.id) {
                if let Some(j) = prev {
                    g.add_edge(j, i, Order::Program);
                }
                prev = Some(i);
            }
        }
    }
    // Messages.
    for f in &flights {
        let Some(from) = node(&at, f.sent, &f.from) else {
            continue;
        };
        match f.outcome {
            Outcome::Delivered => {
                if let Some(to) = node(&at, f.end, &f.to) {
                    g.add_edge(from, to, Order::Message(f.text.clone()));
                }
            }
            Outcome::Lost => {
                let lost = g.add_node(Happening {
                    step: f.end,
                    time: state(t, f.end).time,
                    at: format!("{} → {}", f.from, f.to),
                    what: vec![format!("lost: {}", f.text)],
                    fault: true,
                    violation: false,
                    lost: true,
                });
                g.add_edge(from, lost, Order::Lost(f.text.clone()));
            }
            _ => {}
        }
    }
    // Same-step exchanges with the resource and the replica.
    for st in &t.steps {
        for e in &st.events {
            let Some(peer) = e.peer.as_deref() else {
                continue;
            };
            let (a, b) = match e.kind {
                EventKind::Read | EventKind::Write => (e.at.as_str(), peer),
                EventKind::Replicate => (peer, e.at.as_str()),
                _ => continue,
            };
            if let (Some(i), Some(j)) = (node(&at, st.index, a), node(&at, st.index, b))
                && i != j
            {
                g.add_edge(i, j, Order::Message(e.text.clone()));
            }
        }
    }
    g
}

/// Quotes a DOT string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\l"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The graph in DOT, with the story as its caption.
pub fn render(t: &Trace) -> String {
    let g = graph(t);
    debug_assert!(!is_cyclic_directed(&g), "happens-before is a partial order");
    let fill = |h: &Happening| -> &str {
        if h.lost {
            return "#fde68a";
        }
        if h.fault {
            return "#fcd34d";
        }
        lane_fill(t, &h.at)
    };
    let node_attrs = |_, (_, h): (NodeIndex, &Happening)| -> String {
        let mut label = format!("step {} · {} · {}\n", h.step, show_at(h.time), h.at);
        for w in &h.what {
            label.push_str(w);
            label.push('\n');
        }
        let border = if h.violation {
            " color=\"#dc2626\" penwidth=2.5"
        } else {
            ""
        };
        format!(
            "label={} fillcolor={} group={}{border}",
            quote(&label),
            quote(fill(h)),
            quote(&h.at)
        )
    };
    let edge_attrs = |_, e: petgraph::graph::EdgeReference<'_, Order>| -> String {
        match e.weight() {
            Order::Program => "color=\"#9ca3af\" arrowsize=0.6".into(),
            Order::Message(m) => format!("label={} color=\"#1f2937\"", quote(m)),
            Order::Lost(m) => format!(
                "label={} color=\"#dc2626\" style=dashed",
                quote(&format!("{m} (lost)"))
            ),
        }
    };
    let body = Dot::with_attr_getters(
        &g,
        &[
            Config::GraphContentOnly,
            Config::NodeNoLabel,
            Config::EdgeNoLabel,
        ],
        &edge_attrs,
        &node_attrs,
    );
    let mut caption = format!(
        "{} · {} broken: {}\n\n",
        t.config.protocol, t.invariant, t.violation
    );
    for s in narrate::story(t) {
        let _ = writeln!(caption, "{}  {}", show_at(s.time), s.text);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Happens-before graph of a locklab trace: {} · {}. Render with `dot -Tsvg`.",
        t.config.protocol, t.invariant
    );
    let _ = writeln!(out, "digraph happens_before {{");
    let _ = writeln!(
        out,
        "    graph [rankdir=TB labelloc=b labeljust=l fontname=\"Helvetica\" fontsize=11 label={}]",
        quote(&caption)
    );
    let _ = writeln!(
        out,
        "    node [shape=box style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=10]"
    );
    let _ = writeln!(out, "    edge [fontname=\"Helvetica\" fontsize=9]");
    let _ = write!(out, "{body:?}");
    lanes(&mut out, t, &g);
    let _ = writeln!(out, "}}");
    out
}

/// A lane's colour: its client's light colour, or grey for the rest.
fn lane_fill(t: &Trace, id: &str) -> &'static str {
    match scene::client_number(t, id) {
        Some(0) => "#dbeafe",
        Some(1) => "#f3e8ff",
        Some(2) => "#cffafe",
        Some(_) => "#fce7f3",
        None => "#f9fafb",
    }
}

/// The DOT id of a lane's head node; step nodes are numbers, so a name
/// with a space never collides with one.
fn lane_id(id: &str) -> String {
    quote(&format!("lane {id}"))
}

/// The lane heads, in the trace's participant order (the order every
/// renderer draws its lanes in; see the module comment): one rank, held
/// left to right by an invisible chain, each above its lane's first step.
fn lanes(out: &mut String, t: &Trace, g: &DiGraph<Happening, Order>) {
    let _ = writeln!(out, "    // Lanes, left to right.");
    let _ = writeln!(out, "    {{ rank=same");
    for p in &t.participants {
        let _ = writeln!(
            out,
            "        {} [label={} fillcolor={} group={} penwidth=1.5]",
            lane_id(&p.id),
            quote(&format!("{}\n{}\n", p.id, p.label)),
            quote(lane_fill(t, &p.id)),
            quote(&p.id)
        );
    }
    let _ = writeln!(out, "    }}");
    let chain: Vec<String> = t.participants.iter().map(|p| lane_id(&p.id)).collect();
    if chain.len() > 1 {
        let _ = writeln!(out, "    {} [style=invis]", chain.join(" -> "));
    }
    for p in &t.participants {
        let first = g.node_indices().find(|i| !g[*i].lost && g[*i].at == p.id);
        if let Some(i) = first {
            let _ = writeln!(out, "    {} -> {} [style=invis]", lane_id(&p.id), i.index());
        }
    }
}
