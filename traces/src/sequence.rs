//! The trace as a sequence diagram in the terminal: one lane per
//! participant, time going down, an arrow for each message at the step it
//! arrives, markers for faults, acquisitions and expiries, and the step that
//! breaks the invariant highlighted. A client's lane is drawn heavy while it
//! believes it holds the lock; a server's lane is heavy while it stores a
//! live lock, with the owner and time to live written beside it when they
//! change. The story follows the diagram.

use crate::format::{EventKind, StateView, Trace};
use crate::narrate;
use crate::scene::{self, Outcome, state};
use crate::time::{self, show_ms};
use std::fmt::Write;

/// How a cell is coloured on a terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ink {
    Plain,
    /// The colour of the n-th client.
    Client(usize),
    Fault,
    Dim,
}

const CLIENT_COLORS: [&str; 6] = [
    "\x1b[34m", "\x1b[35m", "\x1b[32m", "\x1b[36m", "\x1b[33m", "\x1b[91m",
];
const FAULT: &str = "\x1b[1;33m";
const DIM: &str = "\x1b[2m";
const BOLD_RED: &str = "\x1b[1;31m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// One terminal line of the lane area.
#[derive(Clone)]
struct Line {
    cells: Vec<(char, Ink)>,
}

impl Line {
    fn blank(width: usize) -> Line {
        Line {
            cells: vec![(' ', Ink::Plain); width],
        }
    }
    fn put(&mut self, x: usize, c: char, ink: Ink) {
        if let Some(cell) = self.cells.get_mut(x) {
            *cell = (c, ink);
        }
    }
    fn free(&self, from: usize, to: usize) -> bool {
        (from..to).all(|x| self.cells.get(x).is_some_and(|c| c.0 == ' '))
    }
    fn text(&self, color: bool) -> String {
        let mut out = String::new();
        let mut cur = Ink::Plain;
        for &(c, ink) in &self.cells {
            if color && ink != cur {
                out.push_str(RESET);
                match ink {
                    Ink::Plain => {}
                    Ink::Client(n) => out.push_str(CLIENT_COLORS[n % CLIENT_COLORS.len()]),
                    Ink::Fault => out.push_str(FAULT),
                    Ink::Dim => out.push_str(DIM),
                }
                cur = ink;
            }
            out.push(c);
        }
        if color && cur != Ink::Plain {
            out.push_str(RESET);
        }
        out.trim_end().to_string()
    }
}

/// An arrow between two lanes within one step.
#[derive(Clone, Copy)]
struct Arrow {
    from: usize,
    to: usize,
    lost: bool,
}

impl Arrow {
    fn span(&self) -> (usize, usize) {
        (self.from.min(self.to), self.from.max(self.to))
    }
    /// Arrows may share a line when they do not overlap, or when they
    /// converge on the same lane from the same side (a fan-in).
    fn fits_with(&self, other: &Arrow) -> bool {
        let (a0, a1) = self.span();
        let (b0, b1) = other.span();
        a1 < b0
            || b1 < a0
            || (self.to == other.to && (self.from < self.to) == (other.from < other.to))
    }
}

struct Layout {
    /// Column of each lane's lifeline.
    x: Vec<usize>,
    width: usize,
}

fn layout(t: &Trace) -> Layout {
    let cell = t
        .participants
        .iter()
        .map(|p| p.id.chars().count())
        .max()
        .unwrap_or(4)
        .max(6)
        + 3;
    let x: Vec<usize> = (0..t.participants.len())
        .map(|i| i * cell + cell / 2 - 1)
        .collect();
    Layout {
        width: t.participants.len() * cell,
        x,
    }
}

/// The live lock entries a server stores: (owner, ttl) pairs.
fn keys<'a>(s: &'a StateView, server: &str) -> Vec<(&'a str, Option<f64>)> {
    s.servers
        .iter()
        .filter(|sv| sv.id == server && sv.status == "up")
        .flat_map(|sv| sv.entries.iter())
        .filter(|e| !e.expired)
        .filter_map(|e| e.owner.as_deref().map(|o| (o, e.ttl)))
        .collect()
}

/// The lifeline glyph of lane `i` in state `s`.
fn lifeline(t: &Trace, s: &StateView, i: usize) -> (char, Ink) {
    let p = &t.participants[i];
    if let Some(c) = s.clients.iter().find(|c| c.id == p.id) {
        let n = scene::client_number(t, &p.id).unwrap_or(0);
        return match (c.alive, c.holds, c.paused.is_some()) {
            (false, _, _) => (' ', Ink::Plain),
            (_, true, true) => ('╏', Ink::Client(n)),
            (_, true, false) => ('┃', Ink::Client(n)),
            (_, false, true) => ('┆', Ink::Dim),
            _ => ('│', Ink::Plain),
        };
    }
    if let Some(sv) = s.servers.iter().find(|sv| sv.id == p.id) {
        if sv.status == "dead" {
            return (' ', Ink::Plain);
        }
        if sv.status != "up" {
            return ('┆', Ink::Dim);
        }
        return match keys(s, &p.id).first() {
            Some((owner, _)) => (
                '┃',
                Ink::Client(scene::client_number(t, owner).unwrap_or(0)),
            ),
            None => ('│', Ink::Plain),
        };
    }
    ('│', Ink::Plain)
}

/// The lane lines of the state `s`, without arrows.
fn lanes(t: &Trace, l: &Layout, s: &StateView) -> Line {
    let mut line = Line::blank(l.width);
    for (i, &x) in l.x.iter().enumerate() {
        let (c, ink) = lifeline(t, s, i);
        line.put(x, c, ink);
    }
    line
}

/// `c1 5 s` beside a server whose lock changed other than by time passing.
fn key_note(before: &StateView, after: &StateView, server: &str, dt: f64) -> Option<String> {
    let b = keys(before, server);
    let a = keys(after, server);
    let aged = a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ao, at), (bo, bt))| {
            ao == bo
                && match (at, bt) {
                    (Some(x), Some(y)) => (y - dt - x).abs() < 1e-6,
                    (None, None) => true,
                    _ => false,
                }
        });
    if aged || (a.is_empty() && b.is_empty()) {
        return None;
    }
    Some(match a.first() {
        None => "-".into(),
        Some((o, None)) => format!("{o} ∞"),
        Some((o, Some(ttl))) => format!("{o} {}", show_ms(*ttl)),
    })
}

/// Draws the arrows of one line onto it.
fn draw(line: &mut Line, l: &Layout, arrows: &[Arrow], heavy: &[bool]) {
    for a in arrows {
        let (xa, xb) = (l.x[a.from], l.x[a.to]);
        let (lo, hi) = (xa.min(xb), xa.max(xb));
        for x in lo + 1..hi {
            let crossing = l.x.iter().position(|&lx| lx == x);
            let c = match crossing {
                Some(i) if heavy[i] => '╂',
                Some(_) => '┼',
                None => '─',
            };
            line.put(x, c, Ink::Plain);
        }
    }
    for a in arrows {
        let (xa, xb) = (l.x[a.from], l.x[a.to]);
        let right = xb > xa;
        let src = match (right, heavy[a.from]) {
            (true, true) => '┣',
            (true, false) => '├',
            (false, true) => '┫',
            (false, false) => '┤',
        };
        let ink = line.cells[xa].1;
        line.put(xa, src, ink);
        let head = if a.lost {
            '✕'
        } else if right {
            '▶'
        } else {
            '◀'
        };
        let hx = if right { xb - 1 } else { xb + 1 };
        line.put(hx, head, if a.lost { Ink::Fault } else { Ink::Plain });
    }
}

/// The diagram and the story of a trace. `color` adds ANSI colour; pass it
/// only when writing to a terminal.
pub fn render(t: &Trace, color: bool) -> String {
    let (bold, red, dim, reset) = if color {
        (BOLD, BOLD_RED, DIM, RESET)
    } else {
        ("", "", "", "")
    };
    let l = layout(t);
    let flights = scene::flights(t);
    let lane = |id: &str| t.participants.iter().position(|p| p.id == id);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{red}{}{reset} violated after step {} of {}: {}",
        t.invariant,
        t.violation_step,
        t.steps.len(),
        t.violation
    );
    let faults = if t.faults_used.is_empty() {
        "none".to_string()
    } else {
        t.faults_used.join(", ")
    };
    let _ = writeln!(
        out,
        "{dim}protocol {} · {} clients · faults used: {faults} · {}{reset}",
        t.config.protocol, t.config.clients, t.config.time
    );
    let _ = writeln!(
        out,
        "{dim}┃ client: believes it holds the lock · ┃ server: stores a live lock (owner and time to live beside it) · ┆ paused or down{reset}"
    );
    let _ = writeln!(
        out,
        "{dim}★ acquires · ◆ fault · ◇ lock expires · ──▶ a message, drawn when it arrives · ✕ lost{reset}"
    );
    let _ = writeln!(out);

    let tw = std::iter::once(t.initial.time)
        .chain(t.steps.iter().map(|s| s.state.time))
        .map(|x| show_ms(x).chars().count())
        .max()
        .unwrap_or(1)
        .max(1);
    let prefix_w = 8 + tw;
    let mut header = Line::blank(l.width);
    for (i, p) in t.participants.iter().enumerate() {
        let w = p.id.chars().count();
        let start = (l.x[i] + 1).saturating_sub(w.div_ceil(2));
        for (j, ch) in p.id.chars().enumerate() {
            let ink = scene::client_number(t, &p.id).map_or(Ink::Plain, Ink::Client);
            header.put(start + j, ch, ink);
        }
    }
    let _ = writeln!(
        out,
        "{:>prefix_w$}  {}",
        format!("{bold}step  {:>tw$}{reset}", "t"),
        header.text(color),
        prefix_w = prefix_w + bold.len() + reset.len()
    );
    let first = lanes(t, &l, &t.initial);
    let _ = writeln!(
        out,
        "  {:>4}  {:>tw$}  {}",
        0,
        show_ms(t.initial.time),
        pad(&first.text(color), &first, l.width) + &format!("  {dim}initial state{reset}")
    );

    for st in &t.steps {
        let k = st.index;
        let before = state(t, k - 1);
        let after = &st.state;
        let heavy: Vec<bool> = (0..t.participants.len())
            .map(|i| matches!(lifeline(t, after, i).0, '┃' | '╏'))
            .collect();
        let mut base = lanes(t, &l, after);
        // Markers on the lanes.
        for e in &st.events {
            let Some(i) = lane(&e.at) else { continue };
            let mark = match e.kind {
                EventKind::Fault => Some(('◆', Ink::Fault)),
                EventKind::Expire => Some(('◇', Ink::Fault)),
                EventKind::Acquire => Some((
                    '★',
                    Ink::Client(scene::client_number(t, &e.at).unwrap_or(0)),
                )),
                _ => None,
            };
            if let Some((c, ink)) = mark {
                base.put(l.x[i], c, ink);
            }
        }
        // Arrows: messages that arrive (or are lost) now, and the
        // same-step exchanges with the resource and the replica.
        let mut arrows: Vec<Arrow> = Vec::new();
        for f in flights.iter().filter(|f| f.end == k) {
            let lost = match f.outcome {
                Outcome::Delivered => false,
                Outcome::Lost => true,
                _ => continue,
            };
            if let (Some(a), Some(b)) = (lane(&f.from), lane(&f.to)) {
                arrows.push(Arrow {
                    from: a,
                    to: b,
                    lost,
                });
            }
        }
        for e in &st.events {
            let (from, to, lost) = match e.kind {
                EventKind::Read | EventKind::Write => (e.at.as_str(), e.peer.as_deref(), false),
                EventKind::Reject => match e.peer.as_deref() {
                    Some(p) => (p, Some(e.at.as_str()), true),
                    None => continue,
                },
                EventKind::Replicate => match e.peer.as_deref() {
                    Some(p) => (p, Some(e.at.as_str()), false),
                    None => continue,
                },
                _ => continue,
            };
            if let (Some(a), Some(b)) = (lane(from), to.and_then(lane))
                && a != b
            {
                arrows.push(Arrow {
                    from: a,
                    to: b,
                    lost,
                });
            }
        }
        let mut groups: Vec<Vec<Arrow>> = Vec::new();
        for a in arrows {
            match groups.iter_mut().find(|g| g.iter().all(|b| a.fits_with(b))) {
                Some(g) => g.push(a),
                None => groups.push(vec![a]),
            }
        }
        let mut lines: Vec<Line> = if groups.is_empty() {
            vec![base.clone()]
        } else {
            groups
                .iter()
                .map(|g| {
                    let mut line = base.clone();
                    draw(&mut line, &l, g, &heavy);
                    line
                })
                .collect()
        };
        // Owner and time to live beside a server whose lock changed.
        let dt = after.time - before.time;
        for (i, p) in t.participants.iter().enumerate() {
            if p.kind == "client" || p.kind == "resource" {
                continue;
            }
            if let Some(note) = key_note(before, after, &p.id, dt) {
                let x = l.x[i] + 1;
                let w = note.chars().count();
                if let Some(line) = lines.iter_mut().find(|ln| ln.free(x, x + w + 1)) {
                    let n = keys(after, &p.id)
                        .first()
                        .and_then(|(o, _)| scene::client_number(t, o));
                    for (j, ch) in note.chars().enumerate() {
                        line.put(x + 1 + j, ch, n.map_or(Ink::Dim, Ink::Client));
                    }
                }
            }
        }
        // A long pause between steps takes a line of its own.
        if let Some(gap) = time::long_gap_before(t, k) {
            let filler = lanes(t, &l, before);
            let drawn = pad(&filler.text(color), &filler, l.width);
            let row = format!(
                "  {:>4}  {:>tw$}  {drawn}  {dim}… {} pass …{reset}",
                "",
                "",
                show_ms(gap)
            );
            let _ = writeln!(out, "{}", row.trim_end());
        }
        let violation = k == t.violation_step;
        let fault = st.actor == "env";
        let mut caption = scene::caption(st);
        if violation {
            caption = format!("{caption}   ◀ {} broken", t.invariant);
        }
        let n = lines.len();
        for (j, line) in lines.iter().enumerate() {
            let last = j + 1 == n;
            let (mark, num, time) = if last {
                (
                    if violation { ">>" } else { "  " },
                    k.to_string(),
                    show_ms(after.time),
                )
            } else {
                ("  ", String::new(), String::new())
            };
            let drawn = pad(&line.text(color), line, l.width);
            let text = if last { caption.as_str() } else { "" };
            let (on, off) = if violation {
                (red, reset)
            } else if fault && last {
                (if color { FAULT } else { "" }, reset)
            } else {
                ("", "")
            };
            let row = format!("{mark}{num:>4}  {time:>tw$}  {drawn}  {on}{text}{off}");
            let _ = writeln!(out, "{}", row.trim_end());
        }
    }

    let _ = writeln!(out);
    out.push_str(&narrate::section(t, color));
    out
}

/// Pads a drawn line to the lane area's width (colour codes take no room).
fn pad(drawn: &str, line: &Line, width: usize) -> String {
    let visible = line
        .cells
        .iter()
        .rposition(|c| c.0 != ' ')
        .map_or(0, |p| p + 1);
    format!("{drawn}{}", " ".repeat(width.saturating_sub(visible)))
}
