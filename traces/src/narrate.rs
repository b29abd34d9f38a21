//! The counterexample as a short story in plain English: one sentence per
//! step that matters (a fault, an acquisition, an expiry, a write, a stale
//! command landing), each stamped with its time, ending with the broken
//! invariant. Steps that only carry a message along are left to the
//! diagrams.
//!
//! Sentences are built from the events' kinds and participants and from the
//! states before and after each step, so they say *while holding the lock*
//! or *still believing it holds the lock* from the client's recorded
//! belief, never from guesswork.

use crate::format::{ClientView, Event, EventKind, StateView, Step, Trace};
use crate::scene::{self, Flight, Outcome, action_tag, hold, names, state};
use crate::time::{self, show_at, show_ms};
use std::fmt::Write;

/// One sentence of the story.
#[derive(Clone, Debug, PartialEq)]
pub struct Sentence {
    /// The step it tells (1-based).
    pub step: usize,
    /// True time of that step, in ms.
    pub time: f64,
    /// Time since the previous sentence (or the start), in ms, when it is
    /// long next to the rest of the trace and the sentence does not say
    /// it already: renderings print `… 30 s pass …` before the sentence.
    pub gap: Option<f64>,
    pub text: String,
    /// This is the step that breaks the invariant.
    pub violation: bool,
}

fn client<'a>(s: &'a StateView, id: &str) -> Option<&'a ClientView> {
    s.clients.iter().find(|c| c.id == id)
}

/// What a client was doing, for "c1 crashes while holding the lock".
fn doing(c: &ClientView) -> &'static str {
    if c.holds {
        " while holding the lock"
    } else if c.phase.starts_with("acquiring") {
        " while acquiring the lock"
    } else if c.phase.starts_with("releasing") {
        " while releasing the lock"
    } else if c.phase.starts_with("waiting") {
        " while waiting to retry"
    } else if c.phase == "starting" {
        " before asking for the lock"
    } else if c.phase == "done" {
        " after finishing"
    } else {
        ""
    }
}

/// Owners of the live lock entries server `server` stores in `s`.
fn owners_on<'a>(s: &'a StateView, server: &str) -> Vec<&'a str> {
    s.servers
        .iter()
        .filter(|sv| sv.id == server)
        .flat_map(|sv| sv.entries.iter())
        .filter(|e| !e.expired)
        .filter_map(|e| e.owner.as_deref())
        .collect()
}

/// A duration in words: `30 s`, `4.8 ms`.
fn lasting(ms: f64) -> String {
    show_ms(ms.max(0.0))
}

/// How far `id`'s wall clock moved between two states, in ms.
fn offset_change(before: &StateView, after: &StateView, id: &str) -> f64 {
    scene::clock_offset(after, id) - scene::clock_offset(before, id)
}

/// Others that believe they hold the lock in `s`, as ", while c1 (paused)
/// still believes it holds it".
fn rivals(s: &StateView, me: &str) -> String {
    let others: Vec<String> = s
        .clients
        .iter()
        .filter(|c| c.id != me && c.holds)
        .map(|c| {
            if c.paused.is_some() {
                format!("{} (paused)", c.id)
            } else {
                c.id.clone()
            }
        })
        .collect();
    match others.len() {
        0 => String::new(),
        1 => format!(", while {} still believes it holds it", others[0]),
        _ => format!(
            ", while {} still believe they hold it",
            others.join(" and ")
        ),
    }
}

/// "c1's lock" for the entries an expiry or a loss removed.
fn locks_of(owners: &[&str]) -> String {
    let mut o: Vec<&str> = owners.to_vec();
    o.sort();
    o.dedup();
    match o.len() {
        0 => "the lock".into(),
        _ => format!("{}'s lock", o.join(" and ")),
    }
}

/// Expiries in a step, folded: "c1's lock expires on redis1–5".
fn expiries(t: &Trace, k: usize) -> Vec<String> {
    let before = state(t, k - 1);
    let mut by_owner: Vec<(String, Vec<&str>)> = Vec::new();
    for e in t.steps[k - 1]
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Expire)
    {
        let owner = locks_of(&owners_on(before, &e.at));
        match by_owner.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, at)) => at.push(&e.at),
            None => by_owner.push((owner, vec![&e.at])),
        }
    }
    by_owner
        .into_iter()
        .map(|(owner, at)| {
            let all = at.len() > 2 && at.len() == before.servers.len();
            let place = if all {
                format!("all {} servers", at.len())
            } else {
                names(&at)
            };
            format!("{owner} expires on {place}")
        })
        .collect()
}

/// The first event of `kind` in a step.
fn first(step: &Step, kind: EventKind) -> Option<&Event> {
    step.events.iter().find(|e| e.kind == kind)
}

/// "request" or "reply", from who sent it.
fn message_kind(t: &Trace, from: &str) -> &'static str {
    if scene::client_number(t, from).is_some() {
        "request"
    } else {
        "reply"
    }
}

/// The step whose state first shows client `id` unpaused again after
/// step `k` paused it, and the time it resumed.
fn resumed(t: &Trace, id: &str, k: usize) -> Option<(usize, f64)> {
    scene::paused_spans(t, id)
        .into_iter()
        .find(|(a, b)| *a <= k && k <= *b)
        .and_then(|(_, last)| (last < t.steps.len()).then(|| (last + 1, state(t, last + 1).time)))
}

/// When client `id`'s pause that covers the state before step `k` began.
fn paused_since(t: &Trace, id: &str, k: usize) -> Option<f64> {
    scene::paused_spans(t, id)
        .into_iter()
        .find(|(a, b)| *a < k && k - 1 <= *b)
        .map(|(a, _)| state(t, a).time)
}

struct Teller<'a> {
    t: &'a Trace,
    flights: Vec<Flight>,
    last_writer: Option<String>,
}

impl Teller<'_> {
    fn fault(&self, k: usize) -> Option<String> {
        let t = self.t;
        let step = &t.steps[k - 1];
        let before = state(t, k - 1);
        let after = &step.state;
        let ev = first(step, EventKind::Fault);
        let at = ev.map(|e| e.at.as_str()).unwrap_or("?");
        let then = expiries(t, k);
        let then = if then.is_empty() {
            String::new()
        } else {
            format!(", so {} at once", then.join(" and "))
        };
        Some(match action_tag(step) {
            "pause" => {
                let what = client(before, at).map(doing).unwrap_or("");
                match resumed(t, at, k) {
                    Some((_, when)) => format!(
                        "{at} freezes (a GC or VM pause it will not notice) for {}{what}",
                        lasting(when - after.time)
                    ),
                    None => format!(
                        "{at} freezes (a GC or VM pause it will not notice){what}, and stays frozen"
                    ),
                }
            }
            "slow" => format!(
                "{at}'s work in the critical section turns slow: it will outlast any timeout, while {at} stays alive"
            ),
            "drop" | "delay" => {
                let m = step.message.as_ref()?;
                let fate = if action_tag(step) == "drop" {
                    "is lost"
                } else {
                    "is held up in the network"
                };
                format!(
                    "the {} {} from {} to {} {fate}",
                    message_kind(t, &m.from),
                    scene::pretty(&m.text),
                    m.from,
                    m.to
                )
            }
            "clock-jump" => {
                let by = offset_change(before, after, at);
                format!(
                    "{at}'s wall clock jumps {} {}{then}",
                    if by >= 0.0 { "forward" } else { "backward" },
                    lasting(by.abs())
                )
            }
            "crash" => {
                let c = client(before, at);
                let never = if c.is_some_and(|c| c.holds) {
                    "; it will never release"
                } else {
                    ""
                };
                let forever = after
                    .servers
                    .iter()
                    .flat_map(|s| s.entries.iter())
                    .any(|e| e.owner.as_deref() == Some(at) && e.ttl.is_none() && !e.expired);
                format!(
                    "{at} crashes{}{never}{}",
                    c.map(doing).unwrap_or(""),
                    if forever {
                        ", and its lock key has no expiry"
                    } else {
                        ""
                    }
                )
            }
            "restart" => {
                let lost = owners_on(before, at);
                let with = if lost.is_empty() {
                    String::new()
                } else {
                    format!(", including {}", locks_of(&lost))
                };
                let down = if after
                    .servers
                    .iter()
                    .any(|s| s.id == at && s.status.starts_with("down"))
                {
                    " and stays down for a while"
                } else {
                    ""
                };
                format!("{at} restarts and loses everything it stored{with}{down}")
            }
            "failover" => {
                let lost = owners_on(before, at);
                match ev.and_then(|e| e.peer.as_deref()) {
                    Some(promoted) => {
                        let kept = owners_on(after, promoted);
                        let missing: Vec<&str> =
                            lost.iter().copied().filter(|o| !kept.contains(o)).collect();
                        let without = if missing.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ", without {}, which had not been replicated yet",
                                locks_of(&missing)
                            )
                        };
                        format!("the primary {at} dies and {promoted} is promoted{without}")
                    }
                    None => format!(
                        "{at} fails over to a replica that never received {}",
                        locks_of(&lost)
                    ),
                }
            }
            "resume" => {
                let since = paused_since(t, at, k).unwrap_or(after.time);
                let still = if client(after, at).is_some_and(|c| c.holds) {
                    ", still believing it holds the lock"
                } else {
                    ""
                };
                format!("{at} wakes up after {}{still}", lasting(after.time - since))
            }
            _ => {
                let e = ev?;
                format!("{}: {}", e.at, e.text)
            }
        })
    }

    /// A step in which only time acts (an expiry, a pause running out):
    /// "30 s pass: c1's lock expires on redis".
    fn passing(&self, k: usize) -> Option<String> {
        let t = self.t;
        let step = &t.steps[k - 1];
        let before = state(t, k - 1);
        let mut parts = expiries(t, k);
        for c in &step.state.clients {
            let was = client(before, &c.id).is_some_and(|b| b.paused.is_some());
            if was && c.paused.is_none() {
                let since = paused_since(t, &c.id, k).unwrap_or(before.time);
                let still = if c.holds {
                    ", still believing it holds the lock"
                } else {
                    ""
                };
                parts.push(format!(
                    "{} wakes up after {}{still}",
                    c.id,
                    lasting(step.state.time - since)
                ));
            }
        }
        let gap = step.state.time - before.time;
        (!parts.is_empty()).then(|| {
            if gap > 0.0 {
                format!("{} pass: {}", lasting(gap), parts.join(", and "))
            } else {
                parts.join(", and ")
            }
        })
    }

    /// The events of an ordinary step that a reader needs.
    fn events(&mut self, k: usize) -> Vec<String> {
        let t = self.t;
        let step = &t.steps[k - 1];
        let before = state(t, k - 1);
        let after = &step.state;
        let mut out = Vec::new();
        for e in &step.events {
            match e.kind {
                EventKind::Acquire => {
                    let c = client(after, &e.at);
                    let token = c
                        .and_then(|c| c.token)
                        .map(|tok| format!(" with token {tok}"))
                        .unwrap_or_default();
                    // With a stock (check-then-act) the counter is the
                    // units taken: the client saw what was left.
                    let initial = after
                        .resource
                        .stock
                        .map(|s| s + after.resource.value as i64);
                    let read = c
                        .and_then(|c| c.read)
                        .map(|r| match initial {
                            Some(i) => format!(" and reads stock {}", i - r as i64),
                            None => format!(" and reads {r} from the resource"),
                        })
                        .unwrap_or_default();
                    let gone = if hold(t, after, &e.at).held() {
                        ""
                    } else {
                        " (though the lock service does not hold it for it)"
                    };
                    out.push(format!(
                        "{} acquires the lock{token}{gone}{read}{}",
                        e.at,
                        rivals(after, &e.at)
                    ));
                }
                EventKind::Write => {
                    let lost = after.resource.value <= before.resource.value;
                    let over = match (&self.last_writer, lost) {
                        (Some(w), true) => format!(
                            ", overwriting the {} that {w} wrote: one update is lost",
                            before.resource.value
                        ),
                        (None, true) => ": one update is lost".into(),
                        _ => String::new(),
                    };
                    let believes = client(before, &e.at).is_some_and(|c| c.holds)
                        && !hold(t, before, &e.at).held();
                    let why = if believes && over.is_empty() {
                        ", believing it still holds the lock, which the lock service no longer holds for it"
                    } else if believes {
                        ", believing it still holds the lock"
                    } else {
                        ""
                    };
                    out.push(format!("{} {}{why}{over}", e.at, e.text));
                    self.last_writer = Some(e.at.clone());
                }
                EventKind::Reject => out.push(format!("the {} {}", e.at, e.text)),
                EventKind::Release => {
                    let how: Vec<&str> = step
                        .events
                        .iter()
                        .filter(|x| x.kind == EventKind::Send && x.at == e.at)
                        .map(|x| x.text.as_str())
                        .collect();
                    let with = if how.is_empty() {
                        String::new()
                    } else {
                        format!(" with {}", how.join(", "))
                    };
                    out.push(format!("{} starts releasing the lock{with}", e.at));
                }
                EventKind::Execute => {
                    if let Some(s) = self.execute(k, e) {
                        out.push(s);
                    }
                }
                EventKind::Expire => {}
                EventKind::Timeout | EventKind::Retry | EventKind::Renew => {
                    out.push(format!("{}: {}", e.at, e.text));
                }
                EventKind::Replicate => out.push(format!(
                    "{} {} from {}",
                    e.at,
                    e.text,
                    e.peer.as_deref().unwrap_or("?")
                )),
                EventKind::Fault | EventKind::Reenter => out.push(format!("{}: {}", e.at, e.text)),
                // What a client or writer does at the resource besides a
                // write: a transaction's separate check, a sale not made,
                // an unfenced writer's read.
                EventKind::Note if e.peer.as_deref() == Some("resource") => {
                    out.push(format!("{}: {}", e.at, e.text))
                }
                EventKind::Read if client(after, &e.at).is_none() => {
                    out.push(format!("{} {}", e.at, e.text))
                }
                _ => {}
            }
        }
        // A client that reads a reply and answers with another command
        // (GET then DEL, SETNX then EXPIRE) makes a decision worth telling.
        let decides = !step
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Acquire | EventKind::Release));
        if decides
            && let Some(got) = first(step, EventKind::Receive)
            && let Some(sent) = step
                .events
                .iter()
                .find(|e| e.kind == EventKind::Send && e.at == got.at)
        {
            out.insert(
                0,
                format!(
                    "{} gets {} from {} and sends {}",
                    got.at,
                    got.text,
                    got.peer.as_deref().unwrap_or("?"),
                    sent.text
                ),
            );
        }
        out.extend(expiries(t, k));
        out
    }

    /// A command that lands where it matters: it deletes or re-times
    /// another client's lock, it arrives late, or it grants a lock its
    /// client never hears about within the trace.
    fn execute(&self, k: usize, e: &Event) -> Option<String> {
        let t = self.t;
        let from = e.peer.as_deref()?;
        let before = owners_on(state(t, k - 1), &e.at);
        let after = owners_on(&t.steps[k - 1].state, &e.at);
        let flight = self.flights.iter().find(|f| {
            f.end == k && f.to == e.at && f.from == from && f.outcome == Outcome::Delivered
        });
        let sent = flight
            .filter(|f| f.late(t))
            .map(|f| {
                format!(
                    " (sent at step {}, {})",
                    f.sent,
                    show_at(state(t, f.sent).time)
                )
            })
            .unwrap_or_default();
        // Late: held back by a delay fault, or long in flight.
        let late = flight.is_some_and(|f| f.late(t));
        let cmd = scene::pretty(&e.text);
        let victims: Vec<&str> = before
            .iter()
            .copied()
            .filter(|o| *o != from && !after.contains(o))
            .collect();
        if !victims.is_empty() {
            return Some(format!(
                "{} runs {from}'s {cmd}{sent}, deleting {}",
                e.at,
                locks_of(&victims)
            ));
        }
        let before_ttl = entry_ttls(state(t, k - 1), &e.at);
        let dt = t.steps[k - 1].state.time - state(t, k - 1).time;
        let after_ttl = entry_ttls(&t.steps[k - 1].state, &e.at);
        let retimed: Vec<&str> = after_ttl
            .iter()
            .filter(|(o, ttl)| {
                *o != from
                    && before_ttl
                        .iter()
                        .any(|(b, bt)| b == o && retimed_ttl(*bt, *ttl, dt))
            })
            .map(|(o, _)| *o)
            .collect();
        if !retimed.is_empty() {
            return Some(format!(
                "{} runs {from}'s {cmd}{sent}, changing the expiry of {}",
                e.at,
                locks_of(&retimed)
            ));
        }
        let granted = !before.contains(&from) && after.contains(&from);
        let learns = t.steps[k..].iter().any(|s| {
            s.events
                .iter()
                .any(|x| x.kind == EventKind::Acquire && x.at == from)
        });
        if granted && !learns {
            return Some(format!(
                "{} runs {from}'s {cmd}{sent}: it now stores {from}'s lock",
                e.at
            ));
        }
        late.then(|| format!("{} finally runs {from}'s {cmd}{sent}", e.at))
    }
}

fn entry_ttls<'a>(s: &'a StateView, server: &str) -> Vec<(&'a str, Option<f64>)> {
    s.servers
        .iter()
        .filter(|sv| sv.id == server)
        .flat_map(|sv| sv.entries.iter())
        .filter(|e| !e.expired)
        .filter_map(|e| e.owner.as_deref().map(|o| (o, e.ttl)))
        .collect()
}

/// Whether a time to live changed other than by time passing (`dt` ms).
fn retimed_ttl(before: Option<f64>, after: Option<f64>, dt: f64) -> bool {
    match (before, after) {
        (Some(b), Some(a)) => (b - dt - a).abs() > 1e-6,
        (None, None) => false,
        _ => true,
    }
}

/// Whether only time acts in a step: the clock's own step, or one whose
/// events are all expiries.
fn only_time(step: &Step) -> bool {
    step.actor == "clock"
        || action_tag(step) == "time"
        || (!step.events.is_empty()
            && step
                .events
                .iter()
                .all(|e| matches!(e.kind, EventKind::Expire | EventKind::Time)))
}

/// Capitalises a sentence unless it starts with a participant's id
/// (`c1 crashes`, not `C1 crashes`).
fn capitalized(t: &Trace, s: &str) -> String {
    let word = s.split([' ', '\'', ':']).next().unwrap_or("");
    if t.participants.iter().any(|p| p.id == word) {
        return s.to_string();
    }
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The story of a trace, one sentence per step that matters.
pub fn story(t: &Trace) -> Vec<Sentence> {
    let mut teller = Teller {
        t,
        flights: scene::flights(t),
        last_writer: None,
    };
    let gaps = time::gaps(t);
    let mut out = Vec::new();
    let mut last_time = t.initial.time;
    for k in 1..=t.steps.len() {
        let step = &t.steps[k - 1];
        let mut parts: Vec<String> = Vec::new();
        let passing = only_time(step);
        match action_tag(step) {
            _ if passing => parts.extend(teller.passing(k)),
            _ if step.actor == "env" => {
                parts.extend(teller.fault(k));
                parts.extend(teller.events(k).into_iter().filter(|p| {
                    // The fault clause already tells the fault events.
                    !step
                        .events
                        .iter()
                        .any(|e| e.kind == EventKind::Fault && p.ends_with(&e.text))
                        && !p.contains(" expires on ")
                }));
            }
            _ => parts.extend(teller.events(k)),
        }
        let violation = k == t.violation_step;
        if parts.is_empty() && !violation {
            continue;
        }
        // In the protocol's own words (a queue's partitions, not a lock);
        // the violation is the trace's own, already in them.
        let mut text = crate::vocab::speak(&t.config.protocol, &capitalized(t, &parts.join("; ")));
        if violation {
            if !text.is_empty() {
                text.push_str(". ");
            }
            text.push_str(&format!("{} is broken: {}", t.invariant, t.violation));
        }
        text.push('.');
        let since = (step.state.time - last_time).max(0.0);
        let told = passing && step.state.time > state(t, k - 1).time;
        let gap = (!told && time::is_long_gap(since, &gaps)).then_some(since);
        last_time = step.state.time;
        out.push(Sentence {
            step: k,
            time: step.state.time,
            gap,
            text,
            violation,
        });
    }
    out
}

/// "t=30.0012 s" stamps padded to the widest one, so the sentences line up.
pub fn stamps(story: &[Sentence]) -> Vec<String> {
    let raw: Vec<String> = story.iter().map(|s| show_at(s.time)).collect();
    let w = raw.iter().map(|s| s.len()).max().unwrap_or(0);
    raw.into_iter().map(|s| format!("{s:<w$}")).collect()
}

/// "What happened" and the story, for the terminal renderings.
pub fn section(t: &Trace, color: bool) -> String {
    let (bold, red, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let mut out = String::new();
    let _ = writeln!(out, "{bold}What happened{reset}");
    let story = story(t);
    for (s, stamp) in story.iter().zip(stamps(&story)) {
        let (on, off) = if s.violation { (red, reset) } else { ("", "") };
        if let Some(g) = s.gap {
            let _ = writeln!(out, "  … {} pass …", show_ms(g));
        }
        let _ = writeln!(out, "  {stamp}  {on}{}{off}", s.text);
    }
    out
}

/// The story as plain text, one sentence a line, for `locklab trace explain`.
pub fn render(t: &Trace) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · {} violated after step {} of {}: {}",
        t.config.protocol,
        t.invariant,
        t.violation_step,
        t.steps.len(),
        t.violation
    );
    let _ = writeln!(out, "{}", t.config.time);
    let _ = writeln!(out);
    let story = story(t);
    for (s, stamp) in story.iter().zip(stamps(&story)) {
        if let Some(g) = s.gap {
            let _ = writeln!(out, "  … {} pass …", show_ms(g));
        }
        let _ = writeln!(out, "  {stamp}  {}  (step {})", s.text, s.step);
    }
    out
}
