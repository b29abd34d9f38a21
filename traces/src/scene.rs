//! What every picture of a trace needs, worked out once from the trace file
//! alone: the messages and when each was sent and ended, who believes they
//! hold the lock and what the servers actually store for them, the faults,
//! and a short caption per step. The renderers (terminal lanes, Mermaid,
//! SVG, HTML, DOT) and the narration all read it.
//!
//! Messages are recovered from the network snapshots rather than from event
//! texts: a message is "in flight" from the first state that shows it to the
//! first state that no longer does, and the step that removed it says what
//! became of it (delivered when its receiver logged something from the
//! sender, lost when the step named it and nothing arrived, discarded
//! otherwise, e.g. when a restart reset the connection).

use crate::format::{Event, EventKind, StateView, Step, Trace};

/// What became of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It reached its receiver, which handled it.
    Delivered,
    /// A `loss` fault dropped it.
    Lost,
    /// It vanished without being handled (connection reset, reply discarded).
    Discarded,
    /// Still in flight when the trace ends.
    InFlight,
}

/// One message, from the step that sent it to the step that ended it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flight {
    pub from: String,
    pub to: String,
    pub text: String,
    /// The step after which it is first in flight (0: in flight initially).
    pub sent: usize,
    /// The step that delivered, lost or discarded it; the last step if it
    /// is still in flight.
    pub end: usize,
    pub outcome: Outcome,
    /// A `delay` fault held it back at some point.
    pub delayed: bool,
}

impl Flight {
    /// The message arrived late: a delay fault held it back, or it spent
    /// a long time in flight next to the rest of the trace (see
    /// [`crate::time::is_long_gap`]).
    pub fn late(&self, t: &Trace) -> bool {
        let flown = state(t, self.end).time - state(t, self.sent).time;
        self.delayed || crate::time::is_long_gap(flown, &crate::time::gaps(t))
    }
}

/// The state before step `k` is `state(t, k - 1)`; `state(t, 0)` is the
/// initial state and `state(t, k)` the state after step `k`.
pub fn state(t: &Trace, k: usize) -> &StateView {
    if k == 0 {
        &t.initial
    } else {
        &t.steps[k - 1].state
    }
}

/// One text is the other plus a suffix (a message marked "(abandoned by
/// sender)" after it was sent is still the same message).
fn compatible(a: &str, b: &str) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Whether `to` logged something from `from` in this step (it handled a
/// message from it).
fn handled(step: &Step, from: &str, to: &str) -> bool {
    step.events
        .iter()
        .any(|e| e.kind != EventKind::Fault && e.at == to && e.peer.as_deref() == Some(from))
}

/// Every message of the trace, in the order they were first seen.
pub fn flights(t: &Trace) -> Vec<Flight> {
    let mut all: Vec<Flight> = t
        .initial
        .network
        .iter()
        .map(|m| Flight {
            from: m.from.clone(),
            to: m.to.clone(),
            text: m.text.clone(),
            sent: 0,
            end: 0,
            outcome: Outcome::InFlight,
            delayed: m.held,
        })
        .collect();
    let mut open: Vec<usize> = (0..all.len()).collect();
    for st in &t.steps {
        let net = &st.state.network;
        let mut taken = vec![false; net.len()];
        let mut matched = vec![false; open.len()];
        // A command sent in this step is a new message, even when an older
        // copy of the same command (a transport's re-send) is still in
        // flight under a changed text (its connection closed): where the
        // messages of a text are too few for the older flights and the new
        // sends both, the last ones are the new sends.
        let mut sends: Vec<(&str, &str, &str, usize)> = Vec::new();
        let mut reserved: Vec<usize> = Vec::new();
        for e in st.events.iter().filter(|e| e.kind == EventKind::Send) {
            let Some(to) = e.peer.as_deref() else {
                continue;
            };
            match sends
                .iter_mut()
                .find(|(f, t, x, _)| *f == e.at && *t == to && *x == e.text)
            {
                Some(s) => s.3 += 1,
                None => sends.push((&e.at, to, &e.text, 1)),
            }
        }
        for (from, to, text, fresh) in sends {
            let same = |m_from: &str, m_to: &str, m_text: &str| {
                m_from == from && m_to == to && m_text == text
            };
            let msgs: Vec<usize> = (0..net.len())
                .filter(|&j| same(&net[j].from, &net[j].to, &net[j].text))
                .collect();
            let older = open
                .iter()
                .filter(|&&fi| same(&all[fi].from, &all[fi].to, &all[fi].text))
                .count();
            if msgs.len() < older + fresh {
                reserved.extend(msgs.iter().rev().take(fresh));
            }
        }
        for &j in &reserved {
            taken[j] = true;
        }
        // Same text first, then a text that gained or lost a suffix.
        for exact in [true, false] {
            for (oi, &fi) in open.iter().enumerate() {
                if matched[oi] {
                    continue;
                }
                let f = &all[fi];
                let hit = net.iter().enumerate().position(|(j, m)| {
                    !taken[j]
                        && m.from == f.from
                        && m.to == f.to
                        && if exact {
                            m.text == f.text
                        } else {
                            compatible(&m.text, &f.text)
                        }
                });
                if let Some(j) = hit {
                    taken[j] = true;
                    matched[oi] = true;
                    all[fi].delayed |= net[j].held;
                }
            }
        }
        // The new sends were kept from the older flights: they start now.
        for &j in &reserved {
            taken[j] = false;
        }
        let mut named_used = false;
        let mut still = Vec::new();
        for (oi, &fi) in open.iter().enumerate() {
            if matched[oi] {
                still.push(fi);
                continue;
            }
            let f = &mut all[fi];
            let named = !named_used
                && st.message.as_ref().is_some_and(|m| {
                    m.from == f.from && m.to == f.to && compatible(&m.text, &f.text)
                });
            named_used |= named;
            let got = handled(st, &f.from, &f.to);
            f.end = st.index;
            f.outcome = match (named, got) {
                (_, true) => Outcome::Delivered,
                (true, false) => Outcome::Lost,
                (false, false) => Outcome::Discarded,
            };
        }
        for (j, m) in net.iter().enumerate() {
            if !taken[j] {
                still.push(all.len());
                all.push(Flight {
                    from: m.from.clone(),
                    to: m.to.clone(),
                    text: m.text.clone(),
                    sent: st.index,
                    end: st.index,
                    outcome: Outcome::InFlight,
                    delayed: m.held,
                });
            }
        }
        open = still;
    }
    for fi in open {
        all[fi].end = t.steps.len();
        all[fi].outcome = Outcome::InFlight;
    }
    all
}

/// The ids of the client lanes, in display order.
pub fn clients(t: &Trace) -> Vec<&str> {
    t.participants
        .iter()
        .filter(|p| p.kind == "client")
        .map(|p| p.id.as_str())
        .collect()
}

/// Position of a client among the clients (its colour), if it is one.
pub fn client_number(t: &Trace, id: &str) -> Option<usize> {
    clients(t).iter().position(|c| *c == id)
}

/// The machine-readable action's tag: `step`, `deliver`, `pause`, ...
pub fn action_tag(step: &Step) -> &str {
    step.action
        .get("action")
        .and_then(|a| a.as_str())
        .unwrap_or("")
}

/// The fault an action injects, in words, or `None` for ordinary steps.
pub fn fault_word(t: &Trace, step: &Step) -> Option<String> {
    let word = match action_tag(step) {
        "pause" => "pause",
        "slow" => "slow",
        "drop" => "loss",
        "delay" => "delay",
        "clock-jump" => {
            let at = step
                .events
                .iter()
                .find(|e| e.kind == EventKind::Fault)
                .map(|e| e.at.as_str())
                .unwrap_or(step.actor.as_str());
            let by = clock_offset(&step.state, at)
                - clock_offset(state(t, step.index.saturating_sub(1)), at);
            return Some(format!("clock {}", crate::time::show_delta(by)));
        }
        "crash" => "crash",
        "restart" => "restart",
        "failover" => "failover",
        "resume" => "resume",
        _ if step.actor == "env" => return Some(action_tag(step).replace('-', " ")),
        _ => return None,
    };
    Some(word.to_string())
}

/// Offset of participant `id`'s wall clock from true time in `s`, in ms.
pub fn clock_offset(s: &StateView, id: &str) -> f64 {
    s.clients
        .iter()
        .find(|c| c.id == id)
        .map(|c| c.clock_offset)
        .or_else(|| {
            s.servers
                .iter()
                .find(|v| v.id == id)
                .map(|v| v.clock_offset)
        })
        .unwrap_or(0.0)
}

/// What the lock service stores for one client at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Hold {
    /// Servers (that clients talk to) holding a live entry owned by the client.
    pub count: usize,
    /// Servers that clients talk to (primaries, instances, leaders) and are up.
    pub of: usize,
    /// Votes needed for the lock to count as held (1 unless a quorum protocol).
    pub quorum: usize,
    /// Smallest time to live among those entries, in ms; `Some(None)` =
    /// no expiry.
    pub ttl: Option<Option<f64>>,
}

impl Hold {
    /// The service really holds the lock for the client.
    pub fn held(&self) -> bool {
        self.count >= self.quorum.max(1)
    }
}

/// Servers whose lock entries count: replicas are only copies.
fn authoritative(s: &StateView) -> impl Iterator<Item = &crate::format::ServerView> {
    s.servers
        .iter()
        .filter(|sv| sv.role != "replica" && sv.status == "up")
}

/// Votes a client needs: the quorum when the lock lives on independent
/// instances, otherwise one.
pub fn quorum(t: &Trace) -> usize {
    let instances = t
        .initial
        .servers
        .iter()
        .filter(|s| s.role == "instance")
        .count();
    if instances > 1 {
        t.config
            .params
            .get("quorum")
            .and_then(|q| q.as_u64())
            .map(|q| q as usize)
            .unwrap_or(instances / 2 + 1)
    } else {
        1
    }
}

/// What the lock service stores for `client` in state `s`.
pub fn hold(t: &Trace, s: &StateView, client: &str) -> Hold {
    let mut count = 0;
    let mut of = 0;
    let mut ttl: Option<Option<f64>> = None;
    for sv in authoritative(s) {
        of += 1;
        let mine = sv
            .entries
            .iter()
            .filter(|e| e.owner.as_deref() == Some(client) && !e.expired);
        let mut any = false;
        for e in mine {
            any = true;
            ttl = Some(match (ttl, e.ttl) {
                (None, x) => x,
                (Some(None), x) => x,
                (Some(Some(a)), Some(b)) => Some(a.min(b)),
                (Some(Some(a)), None) => Some(a),
            });
        }
        if any {
            count += 1;
        }
    }
    Hold {
        count,
        of,
        quorum: quorum(t),
        ttl,
    }
}

/// `redis1–5` for a run of numbered names, else a comma list.
pub fn names(list: &[&str]) -> String {
    fn split(s: &str) -> Option<(&str, u64)> {
        let cut = s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        (cut < s.len())
            .then(|| s[cut..].parse().ok().map(|n| (&s[..cut], n)))
            .flatten()
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let mut j = i;
        if let Some((prefix, n)) = split(list[i]) {
            while j + 1 < list.len() && split(list[j + 1]) == Some((prefix, n + (j + 1 - i) as u64))
            {
                j += 1;
            }
            if j - i >= 2 {
                out.push(format!("{prefix}{n}–{}", n + (j - i) as u64));
                i = j + 1;
                continue;
            }
        }
        out.push(list[i].to_string());
        i += 1;
    }
    out.join(", ")
}

/// Arrows for `->` in model texts.
pub fn pretty(text: &str) -> String {
    text.replace(" -> ", " → ")
}

/// One clause per event, with runs of the same event at or from several
/// participants folded into one (`c1 → redis1–5: SET ...`).
pub fn clauses(events: &[Event]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let e = &events[i];
        // How far the run of the same kind and text with the same `at`
        // (sends, receives) or the same peer (everything else) reaches.
        let same_at = matches!(e.kind, EventKind::Send | EventKind::Receive);
        let mut j = i + 1;
        while j < events.len()
            && events[j].kind == e.kind
            && events[j].text == e.text
            && if same_at {
                events[j].at == e.at
            } else {
                events[j].peer == e.peer
            }
        {
            j += 1;
        }
        let run = &events[i..j];
        let peers: Vec<&str> = run.iter().filter_map(|x| x.peer.as_deref()).collect();
        let ats: Vec<&str> = run.iter().map(|x| x.at.as_str()).collect();
        let text = pretty(&e.text);
        out.push(match e.kind {
            EventKind::Send => format!("{} → {}: {text}", e.at, names(&peers)),
            EventKind::Receive => format!("{} ← {}: {text}", e.at, names(&peers)),
            EventKind::Execute => format!(
                "{} {} {}'s {text}",
                names(&ats),
                if ats.len() > 1 { "run" } else { "runs" },
                e.peer.as_deref().unwrap_or("?")
            ),
            EventKind::Time => text,
            _ => format!("{}: {text}", names(&ats)),
        });
        i = j;
    }
    out
}

/// A step in one line, for diagrams: its events folded into clauses.
pub fn caption(step: &Step) -> String {
    let c = clauses(&step.events);
    if c.is_empty() {
        "nothing observable happens".into()
    } else {
        c.join("; ")
    }
}

/// Steps whose state shows client `id` paused, as (first, last) step
/// ranges: the client is paused in the states after `first..=last`.
pub fn paused_spans(t: &Trace, id: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for k in 0..=t.steps.len() {
        let paused = state(t, k)
            .clients
            .iter()
            .any(|c| c.id == id && c.paused.is_some());
        match (paused, start) {
            (true, None) => start = Some(k),
            (false, Some(s)) => {
                spans.push((s, k - 1));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, t.steps.len()));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_numbered_names() {
        assert_eq!(
            names(&["redis1", "redis2", "redis3", "redis4", "redis5"]),
            "redis1–5"
        );
        assert_eq!(names(&["redis1", "redis2"]), "redis1, redis2");
        assert_eq!(
            names(&["redis1", "redis3", "redis4"]),
            "redis1, redis3, redis4"
        );
        assert_eq!(names(&["c1", "redis"]), "c1, redis");
        assert_eq!(names(&[]), "");
    }

    #[test]
    fn folds_runs_of_sends() {
        let ev = |kind, at: &str, peer: &str, text: &str| Event {
            kind,
            at: at.into(),
            peer: Some(peer.into()),
            text: text.into(),
        };
        let events = vec![
            ev(EventKind::Send, "c1", "redis1", "SET lock c1#1 NX PX 6"),
            ev(EventKind::Send, "c1", "redis2", "SET lock c1#1 NX PX 6"),
            ev(EventKind::Send, "c1", "redis3", "SET lock c1#1 NX PX 6"),
            ev(EventKind::Execute, "redis", "c2", "DEL lock -> 1"),
        ];
        assert_eq!(
            clauses(&events),
            vec![
                "c1 → redis1–3: SET lock c1#1 NX PX 6".to_string(),
                "redis runs c2's DEL lock → 1".to_string()
            ]
        );
    }
}
