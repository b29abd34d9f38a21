//! The trace as one standalone SVG picture, with no scripts, fonts or
//! links: lanes for every participant, a true time axis, and — the point
//! of the picture — for each client a bar for the lock it *believes* it
//! holds right beside a bar for what the lock service actually stores for
//! it, with the time it has left. Where the first bar runs on without the
//! second, the client is acting on a lock that no longer exists.
//!
//! Layout: time runs down. Each step takes a row; steps at the same instant
//! are stacked a row apart, and the time between two steps takes room in
//! proportion to its length (never less than a row), so the axis on the
//! left is a real clock: a key's bar ends where its time to live runs out.
//! Traces mix millisecond exchanges with pauses of many seconds, so the
//! axis is piecewise: a gap that is long next to the rest of the trace
//! (see [`crate::time::is_long_gap`]) is drawn at a fixed height, broken
//! with `⫽` and labelled with its duration. Messages are drawn from the
//! step that sent them to the step that handled them. Faults are amber
//! badges, the violating step is a red band, and each row has its caption
//! on the right. The story closes the picture.

use crate::format::{EventKind, StateView, Trace};
use crate::narrate;
use crate::scene::{self, Flight, Outcome, action_tag, fault_word, hold, state};
use crate::time::{self, show_ms};
use std::fmt::Write;

pub mod embed;

/// Client colours (strong, light).
const CLIENT: [(&str, &str); 6] = [
    ("#2563eb", "#dbeafe"),
    ("#9333ea", "#f3e8ff"),
    ("#0891b2", "#cffafe"),
    ("#db2777", "#fce7f3"),
    ("#65a30d", "#ecfccb"),
    ("#475569", "#e2e8f0"),
];
const INK: &str = "#1f2937";
const MUTED: &str = "#6b7280";
const FAINT: &str = "#d1d5db";
const RED: &str = "#dc2626";
const AMBER: &str = "#f59e0b";
const AMBER_DARK: &str = "#b45309";
const SANS: &str = "ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, 'DejaVu Sans', sans-serif";
const MONO: &str = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace";

/// Height of a step at a single instant.
const ROW: f64 = 30.0;
const LEFT: f64 = 24.0;
/// Extra height of a broken (long) gap on the time axis.
const BREAK: f64 = 40.0;
/// Most room the unbroken stretches of time take together.
const SPREAD: f64 = 360.0;
const AXIS_X: f64 = 100.0;
const STEP_X: f64 = 142.0;
const LANES_X: f64 = 162.0;
const CAPTION_W: f64 = 520.0;

fn color(n: usize) -> (&'static str, &'static str) {
    CLIENT[n % CLIENT.len()]
}

/// XML-escapes text.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Rough width of text in the sans font (no font metrics in a file that
/// must stand alone; DejaVu, the widest common fallback, sets the pace).
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.58
}

/// Cuts `s` to fit `width` pixels, marking the cut.
fn fit(s: &str, size: f64, width: f64) -> String {
    let max = (width / (size * 0.58)).floor().max(1.0) as usize;
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Breaks `s` into lines of at most `width` pixels.
fn wrap(s: &str, size: f64, width: f64) -> Vec<String> {
    let max = (width / (size * 0.58)).floor().max(8.0) as usize;
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > max {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

fn n(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// Where everything goes.
struct Geometry {
    /// Lifeline x of each participant.
    lane_x: Vec<f64>,
    /// Left and right edge of each lane.
    lane_edges: Vec<(f64, f64)>,
    /// The point of each step (0 = initial state) on the y axis.
    y: Vec<f64>,
    caption_x: f64,
    width: f64,
    /// Pixels per millisecond on the unbroken stretches of the time axis.
    ppm: f64,
    /// Entry `k - 1`: the time before step `k` is a long gap, drawn broken.
    broken: Vec<bool>,
    /// Top of the lanes (below the headers).
    lanes_top: f64,
}

impl Geometry {
    fn new(t: &Trace, top: f64) -> Geometry {
        let mut lane_x = Vec::new();
        let mut lane_edges = Vec::new();
        let mut x = LANES_X;
        for p in &t.participants {
            // Clients carry words on both sides of their bars; their lifeline
            // sits right of centre to leave room for belief on the left.
            let (w, at) = match p.kind.as_str() {
                "client" => (164.0, 92.0),
                "resource" => (190.0, 60.0),
                _ => (108.0, 54.0),
            };
            lane_edges.push((x, x + w));
            lane_x.push(x + at);
            x += w;
        }
        let gaps = time::gaps(t);
        let broken: Vec<bool> = gaps.iter().map(|g| time::is_long_gap(*g, &gaps)).collect();
        let total: f64 = gaps
            .iter()
            .zip(&broken)
            .filter(|(_, b)| !**b)
            .map(|(g, _)| *g)
            .sum();
        let ppm = if total > 0.0 { SPREAD / total } else { 0.0 };
        let lanes_top = top + 46.0;
        let mut y = vec![lanes_top + 22.0];
        for (dt, long) in gaps.iter().zip(&broken) {
            let prev = *y.last().unwrap_or(&0.0);
            let h = if *long {
                ROW + BREAK
            } else {
                (dt * ppm).max(ROW)
            };
            y.push(prev + h);
        }
        let caption_x = x + 28.0;
        Geometry {
            lane_x,
            lane_edges,
            y,
            caption_x,
            width: caption_x + CAPTION_W,
            ppm,
            broken,
            lanes_top,
        }
    }

    /// The y of true time `time` (ms) between step `k - 1` and step `k`
    /// (linear inside a broken gap too, where it is not to scale).
    fn at_time(&self, t: &Trace, k: usize, time: f64) -> f64 {
        let t0 = state(t, k - 1).time;
        let t1 = state(t, k).time;
        let (y0, y1) = (self.y[k - 1], self.y[k]);
        if t1 <= t0 {
            return y1;
        }
        y0 + (time.clamp(t0, t1) - t0) / (t1 - t0) * (y1 - y0)
    }

    fn bottom(&self) -> f64 {
        self.y.last().copied().unwrap_or(0.0) + 26.0
    }
}

struct Svg {
    out: String,
    /// Words to the left of a client's lane, by (lane, step): joined and
    /// drawn last so that two never overlap.
    left: Vec<(usize, usize, String, &'static str)>,
    /// The box of every upright label drawn, by the width estimate that
    /// lays them out (`text_w`): what [`label_boxes`] returns.
    boxes: Vec<LabelBox>,
    /// Labels that may move a little up or down to keep clear of the others
    /// (x, y, style, text): placed last, around everything else.
    movable: Vec<(f64, f64, String, String)>,
}

/// Where a label sits in the picture, as the layout estimates it: the
/// rectangle from its left edge to its right (`text_w` wide) and from its
/// ascent to its descent.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelBox {
    pub text: String,
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl LabelBox {
    /// Whether the two labels cover a common area (touching is not overlapping).
    pub fn overlaps(&self, o: &LabelBox) -> bool {
        const SLACK: f64 = 0.5;
        self.x0 + SLACK < o.x1
            && o.x0 + SLACK < self.x1
            && self.y0 + SLACK < o.y1
            && o.y0 + SLACK < self.y1
    }
}

/// The value of attribute `name` in a style string (`font-size="10"`).
fn attr<'a>(style: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let mut from = 0;
    while let Some(i) = style[from..].find(&key) {
        let at = from + i;
        if at == 0 || style.as_bytes()[at - 1] == b' ' {
            let rest = &style[at + key.len()..];
            return rest.find('"').map(|e| &rest[..e]);
        }
        from = at + key.len();
    }
    None
}

/// The label box of text `s` drawn at (x, y) with `style`, or `None` for
/// rotated text (labels along a slanted arrow), which has no upright box.
fn label_box(x: f64, y: f64, style: &str, s: &str) -> Option<LabelBox> {
    if attr(style, "transform").is_some() {
        return None;
    }
    let size: f64 = attr(style, "font-size")
        .and_then(|v| v.parse().ok())
        .unwrap_or(12.0);
    let w = text_w(s, size);
    let x0 = match attr(style, "text-anchor") {
        Some("middle") => x - w / 2.0,
        Some("end") => x - w,
        _ => x,
    };
    Some(LabelBox {
        text: s.to_string(),
        x0,
        y0: y - 0.8 * size,
        x1: x0 + w,
        y1: y + 0.2 * size,
    })
}

impl Svg {
    fn raw(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }
    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" {style}/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2)
        );
    }
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str) {
        if w <= 0.0 || h <= 0.0 {
            return;
        }
        let _ = writeln!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" {style}/>"#,
            n(x),
            n(y),
            n(w),
            n(h)
        );
    }
    fn text(&mut self, x: f64, y: f64, style: &str, s: &str) {
        self.titled(x, y, style, s, None);
    }
    /// A label that may be nudged up or down to keep clear of the others
    /// (see `place_movable`).
    fn movable_text(&mut self, x: f64, y: f64, style: &str, s: &str) {
        self.movable.push((x, y, style.to_string(), s.to_string()));
    }
    /// Draws the movable labels, each at the first of a few heights near
    /// its own where its box overlaps no label drawn before it.
    fn place_movable(&mut self) {
        const NUDGES: [f64; 7] = [0.0, 12.0, -12.0, 24.0, -24.0, 36.0, -36.0];
        for (x, y, style, text) in std::mem::take(&mut self.movable) {
            let dy = NUDGES
                .iter()
                .copied()
                .find(|dy| {
                    label_box(x, y + dy, &style, &text)
                        .is_none_or(|b| !self.boxes.iter().any(|o| o.overlaps(&b)))
                })
                .unwrap_or(0.0);
            self.text(x, y + dy, &style, &text);
        }
    }
    /// Text with an optional `<title>`: the tooltip a viewer shows on hover.
    fn titled(&mut self, x: f64, y: f64, style: &str, s: &str, title: Option<&str>) {
        if let Some(b) = label_box(x, y, style, s) {
            self.boxes.push(b);
        }
        let title = title
            .map(|t| format!("<title>{}</title>", esc(t)))
            .unwrap_or_default();
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" {style}>{}{title}</text>"#,
            n(x),
            n(y),
            esc(s)
        );
    }
    /// Text cut to fit `width` pixels at font size `size`. A cut label
    /// carries its full text as a `<title>`, so nothing the ellipsis hides
    /// is lost: hovering shows it.
    fn fitted(&mut self, x: f64, y: f64, style: &str, s: &str, size: f64, width: f64) {
        let shown = fit(s, size, width);
        self.titled(x, y, style, &shown, (shown != s).then_some(s));
    }
    /// An arrowhead at (x, y) pointing along (dx, dy).
    fn head(&mut self, x: f64, y: f64, dx: f64, dy: f64, fill: &str) {
        let len = (dx * dx + dy * dy).sqrt().max(1e-6);
        let (ux, uy) = (dx / len, dy / len);
        let (px, py) = (-uy, ux);
        let (bx, by) = (x - ux * 9.0, y - uy * 9.0);
        let _ = writeln!(
            self.out,
            r#"<path d="M{} {} L{} {} L{} {} Z" fill="{fill}"/>"#,
            n(x),
            n(y),
            n(bx + px * 4.0),
            n(by + py * 4.0),
            n(bx - px * 4.0),
            n(by - py * 4.0)
        );
    }
    /// A rounded badge with centred text.
    fn badge(&mut self, cx: f64, cy: f64, label: &str, fill: &str, ink: &str) {
        let w = text_w(label, 10.0) + 12.0;
        let _ = writeln!(
            self.out,
            r##"<rect x="{}" y="{}" width="{}" height="16" rx="8" fill="{fill}" stroke="#ffffff" stroke-width="1.5"/>"##,
            n(cx - w / 2.0),
            n(cy - 8.0),
            n(w)
        );
        self.text(
            cx,
            cy + 3.6,
            &format!(r#"text-anchor="middle" font-size="10" font-weight="700" fill="{ink}""#),
            label,
        );
    }
}

const HALO: &str =
    r##"stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke""##;

/// The picture, closed by the story.
pub fn render(t: &Trace) -> String {
    picture(t, true)
}

/// The picture. `standalone` adds the title above and the story below it;
/// the HTML viewer has both already.
pub fn picture(t: &Trace, standalone: bool) -> String {
    draw(t, standalone).out
}

/// The box of every upright label of the standalone picture, as its layout
/// estimates them: two that overlap are a collision.
pub fn label_boxes(t: &Trace) -> Vec<LabelBox> {
    draw(t, true).boxes
}

fn draw(t: &Trace, standalone: bool) -> Svg {
    let mut s = Svg {
        out: String::new(),
        left: Vec::new(),
        boxes: Vec::new(),
        movable: Vec::new(),
    };
    let g = Geometry::new(t, 0.0);
    let g = Geometry::new(t, header_height(t, standalone, g.width));
    let flights = scene::flights(t);
    let story = narrate::story(t);
    let story_size = 12.5;
    // The stamps (`t=30.0012 s`) take a column as wide as the widest.
    let stamps = narrate::stamps(&story);
    let stamp_w = stamps
        .iter()
        .map(|st| text_w(st, 12.0) + 10.0)
        .fold(60.0, f64::max);
    let story_w = g.width - 2.0 * LEFT - stamp_w;
    let story_lines: Vec<(usize, Vec<String>)> = story
        .iter()
        .enumerate()
        .map(|(i, st)| (i, wrap(&st.text, story_size, story_w)))
        .collect();
    let story_h: f64 = if standalone {
        60.0 + story_lines
            .iter()
            .map(|(_, l)| l.len() as f64 * 17.0 + 5.0)
            .sum::<f64>()
    } else {
        0.0
    };
    let height = g.bottom() + 24.0 + story_h;

    let _ = writeln!(
        s.out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{SANS}" font-size="12" fill="{INK}">"#,
        w = n(g.width),
        h = n(height)
    );
    let _ = writeln!(
        s.out,
        "<title>{}</title>",
        esc(&format!(
            "{}: {} violated — {}",
            t.config.protocol, t.invariant, t.violation
        ))
    );
    defs(&mut s, t);
    s.rect(0.0, 0.0, g.width, height, r##"fill="#ffffff""##);
    header(&mut s, t, &g, standalone);
    rows(&mut s, t, &g);
    axis(&mut s, t, &g);
    lanes(&mut s, t, &g);
    for (i, p) in t.participants.iter().enumerate() {
        if let Some(c) = scene::client_number(t, &p.id) {
            client_bars(&mut s, t, &g, i, c);
        } else if p.kind != "resource" {
            server_keys(&mut s, t, &g, i);
        }
    }
    messages(&mut s, t, &g, &flights);
    marks(&mut s, t, &g);
    resource_notes(&mut s, t, &g);
    captions(&mut s, t, &g);
    left_labels(&mut s, &g);
    s.place_movable();

    if !standalone {
        s.raw("</svg>");
        return s;
    }
    // The story.
    let mut y = g.bottom() + 30.0;
    s.line(
        LEFT,
        y - 14.0,
        g.width - LEFT,
        y - 14.0,
        &format!(r#"stroke="{FAINT}""#),
    );
    s.text(
        LEFT,
        y + 8.0,
        r#"font-size="15" font-weight="700""#,
        "What happened",
    );
    y += 32.0;
    for (i, lines) in &story_lines {
        let st = &story[*i];
        let ink = if st.violation { RED } else { INK };
        let weight = if st.violation { "700" } else { "400" };
        s.text(
            LEFT,
            y,
            &format!(r#"font-family="{MONO}" font-size="12" fill="{MUTED}""#),
            &stamps[*i],
        );
        for (j, l) in lines.iter().enumerate() {
            s.text(
                LEFT + stamp_w,
                y + j as f64 * 17.0,
                &format!(r#"font-size="{story_size}" fill="{ink}" font-weight="{weight}""#),
                l,
            );
        }
        y += lines.len() as f64 * 17.0 + 5.0;
    }
    s.raw("</svg>");
    s
}

fn defs(s: &mut Svg, t: &Trace) {
    s.raw("<defs>");
    for c in 0..scene::clients(t).len() {
        let (strong, light) = color(c);
        let _ = writeln!(
            s.out,
            r#"<pattern id="ll-key{c}" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="{light}"/><rect width="2.4" height="6" fill="{strong}"/></pattern>"#
        );
    }
    let _ = writeln!(
        s.out,
        r##"<pattern id="ll-gap" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(-45)"><rect width="6" height="6" fill="#fee2e2"/><rect width="2.6" height="6" fill="{RED}"/></pattern>"##
    );
    let _ = writeln!(
        s.out,
        r##"<pattern id="ll-pause" patternUnits="userSpaceOnUse" width="8" height="8" patternTransform="rotate(45)"><rect width="8" height="8" fill="#f3f4f6"/><rect width="1.2" height="8" fill="#d1d5db"/></pattern>"##
    );
    s.raw("</defs>");
}

/// One entry of the legend.
#[derive(Clone, Copy, PartialEq)]
enum Key {
    Belief,
    Service,
    Gap,
    Fault,
    Paused,
    Request,
    Reply,
    Lost,
    Clock,
    Violation,
}

impl Key {
    fn words(self) -> &'static str {
        match self {
            Key::Belief => "believes it holds the lock",
            Key::Service => "what the lock service really holds for it (time left beside it)",
            Key::Gap => "believes it, but the service holds no lock for it",
            Key::Fault => "injected fault",
            Key::Paused => "paused / down",
            Key::Request => "request",
            Key::Reply => "reply",
            Key::Lost => "lost",
            Key::Clock => "its clock is off",
            Key::Violation => "the step that breaks the invariant",
        }
    }
}

/// The legend entries this trace needs: nothing explained that is not drawn.
fn legend(t: &Trace) -> Vec<Key> {
    let states: Vec<&StateView> = (0..=t.steps.len()).map(|k| state(t, k)).collect();
    let flights = scene::flights(t);
    let mut keys = vec![Key::Belief, Key::Service];
    if states.iter().any(|s| {
        s.clients
            .iter()
            .any(|c| c.holds && !hold(t, s, &c.id).held())
    }) {
        keys.push(Key::Gap);
    }
    if t.steps.iter().any(|st| st.actor == "env") {
        keys.push(Key::Fault);
    }
    if states.iter().any(|s| {
        s.clients.iter().any(|c| c.paused.is_some())
            || s.servers
                .iter()
                .any(|v| v.status != "up" && v.status != "dead")
    }) {
        keys.push(Key::Paused);
    }
    keys.push(Key::Request);
    if flights
        .iter()
        .any(|f| scene::client_number(t, &f.from).is_none())
    {
        keys.push(Key::Reply);
    }
    if flights.iter().any(|f| f.outcome == Outcome::Lost) {
        keys.push(Key::Lost);
    }
    if states.iter().any(|s| {
        s.clients.iter().any(|c| c.clock_offset != 0.0)
            || s.servers.iter().any(|v| v.clock_offset != 0.0)
    }) {
        keys.push(Key::Clock);
    }
    keys.push(Key::Violation);
    keys
}

/// Height of what comes above the lane headers.
fn header_height(t: &Trace, standalone: bool, width: f64) -> f64 {
    let lines = legend_lines(&legend(t), width).len() as f64;
    (if standalone { 92.0 } else { 14.0 }) + lines * 24.0 + 8.0
}

/// The legend entries laid out in lines that fit `width`.
fn legend_lines(keys: &[Key], width: f64) -> Vec<Vec<Key>> {
    let mut lines: Vec<Vec<Key>> = vec![Vec::new()];
    let mut x = LEFT;
    for k in keys {
        let w = 36.0 + text_w(k.words(), 12.0) + 18.0;
        if x + w > width - LEFT && !lines.last().is_some_and(|l| l.is_empty()) {
            lines.push(Vec::new());
            x = LEFT;
        }
        if let Some(l) = lines.last_mut() {
            l.push(*k);
        }
        x += w;
    }
    lines
}

fn header(s: &mut Svg, t: &Trace, g: &Geometry, standalone: bool) {
    let mut y = 14.0;
    if standalone {
        s.text(
            LEFT,
            36.0,
            r#"font-size="21" font-weight="700""#,
            &format!("{} · {} broken", t.config.protocol, t.invariant),
        );
        s.fitted(
            LEFT,
            60.0,
            &format!(r#"font-size="14" fill="{RED}""#),
            &t.violation,
            14.0,
            g.width - 2.0 * LEFT,
        );
        let faults = if t.faults_used.is_empty() {
            "no fault".to_string()
        } else {
            format!("faults: {}", t.faults_used.join(", "))
        };
        s.text(
            LEFT,
            80.0,
            &format!(r#"font-size="12" fill="{MUTED}""#),
            &format!(
                "{} clients · {faults} · {} steps, broken at step {} · {}",
                t.config.clients,
                t.steps.len(),
                t.violation_step,
                t.config.time
            ),
        );
        y = 92.0;
    }
    for line in legend_lines(&legend(t), g.width) {
        let cy = y + 12.0;
        let mut x = LEFT;
        for k in line {
            let (c0, _) = color(0);
            match k {
                Key::Belief => s.rect(
                    x + 6.0,
                    cy - 9.0,
                    9.0,
                    18.0,
                    &format!(r#"fill="{c0}" rx="2""#),
                ),
                Key::Service => s.rect(
                    x + 7.0,
                    cy - 9.0,
                    7.0,
                    18.0,
                    r#"fill="url(#ll-key0)" rx="1.5""#,
                ),
                Key::Gap => s.rect(
                    x + 6.0,
                    cy - 9.0,
                    9.0,
                    18.0,
                    r#"fill="url(#ll-gap)" rx="2""#,
                ),
                Key::Fault => s.badge(x + 14.0, cy, "!", AMBER, "#111827"),
                Key::Paused => s.rect(x + 2.0, cy - 8.0, 18.0, 16.0, r#"fill="url(#ll-pause)""#),
                Key::Request | Key::Reply => {
                    let dash = if k == Key::Reply {
                        r#" stroke-dasharray="5 3""#
                    } else {
                        ""
                    };
                    s.line(
                        x,
                        cy,
                        x + 20.0,
                        cy,
                        &format!(r#"stroke="{INK}" stroke-width="1.3"{dash}"#),
                    );
                    s.head(x + 26.0, cy, 1.0, 0.0, INK);
                }
                Key::Lost => s.text(
                    x + 10.0,
                    cy + 5.0,
                    &format!(
                        r#"text-anchor="middle" font-size="15" font-weight="700" fill="{RED}""#
                    ),
                    "✕",
                ),
                Key::Clock => s.line(
                    x + 10.0,
                    cy - 9.0,
                    x + 10.0,
                    cy + 9.0,
                    &format!(r#"stroke="{AMBER}" stroke-width="2.5""#),
                ),
                Key::Violation => s.rect(x, cy - 8.0, 24.0, 16.0, r##"fill="#fee2e2""##),
            }
            s.text(x + 32.0, cy + 4.0, "", k.words());
            x += 36.0 + text_w(k.words(), 12.0) + 18.0;
        }
        y += 24.0;
    }
    // Lane headers.
    let top = g.lanes_top - 46.0;
    for (i, p) in t.participants.iter().enumerate() {
        let (l, r) = g.lane_edges[i];
        let (fill, stroke) = match scene::client_number(t, &p.id) {
            Some(c) => (color(c).1, color(c).0),
            None => ("#f9fafb", "#9ca3af"),
        };
        s.rect(
            l + 8.0,
            top,
            r - l - 16.0,
            38.0,
            &format!(r#"rx="7" fill="{fill}" stroke="{stroke}" stroke-width="1.2""#),
        );
        s.text(
            g.lane_x[i],
            top + 16.0,
            r#"text-anchor="middle" font-size="13.5" font-weight="700""#,
            &p.id,
        );
        s.fitted(
            g.lane_x[i],
            top + 31.0,
            &format!(r#"text-anchor="middle" font-size="10.5" fill="{MUTED}""#),
            &p.label,
            10.5,
            r - l - 22.0,
        );
    }
    s.text(
        AXIS_X,
        top + 24.0,
        &format!(r#"text-anchor="middle" font-size="10.5" fill="{MUTED}""#),
        "time",
    );
    s.text(
        STEP_X,
        top + 24.0,
        &format!(r#"text-anchor="end" font-size="10.5" fill="{MUTED}""#),
        "step",
    );
    s.text(
        g.caption_x,
        top + 24.0,
        &format!(r#"font-size="10.5" fill="{MUTED}""#),
        "what happened at each step",
    );
}

/// The band of step `k` (for highlighting) from its top to its bottom.
fn band(t: &Trace, g: &Geometry, k: usize) -> (f64, f64) {
    let _ = t;
    (g.y[k] - ROW / 2.0, g.y[k] + ROW / 2.0)
}

/// Row bands: alternate shading, the violation in red, and one invisible
/// rectangle per step that the HTML viewer highlights.
fn rows(s: &mut Svg, t: &Trace, g: &Geometry) {
    for k in 0..=t.steps.len() {
        let (y0, y1) = band(t, g, k);
        if k == t.violation_step {
            s.rect(
                LEFT,
                y0,
                g.width - LEFT - 8.0,
                y1 - y0,
                r##"fill="#fee2e2""##,
            );
        } else if k % 2 == 1 {
            s.rect(
                LEFT,
                y0,
                g.width - LEFT - 8.0,
                y1 - y0,
                r##"fill="#f9fafb""##,
            );
        }
    }
    s.raw(r#"<g class="ll-rows">"#);
    for k in 0..=t.steps.len() {
        let (y0, y1) = band(t, g, k);
        let _ = writeln!(
            s.out,
            r#"<rect class="ll-row" data-step="{k}" x="{}" y="{}" width="{}" height="{}" fill="none"/>"#,
            n(LEFT),
            n(y0),
            n(g.width - LEFT - 8.0),
            n(y1 - y0)
        );
    }
    s.raw("</g>");
}

/// The time axis: a thin rule where steps share an instant, a ruler with
/// marks at round times where time passes, and a break (`⫽` and the
/// duration) across a gap that is long next to the rest of the trace.
fn axis(s: &mut Svg, t: &Trace, g: &Geometry) {
    let y_end = *g.y.last().unwrap_or(&0.0);
    s.line(
        AXIS_X,
        g.y[0],
        AXIS_X,
        y_end,
        &format!(r#"stroke="{FAINT}" stroke-width="2""#),
    );
    // Marks at least 16 px apart, at 1, 2 or 5 times a power of ten (ms).
    let every = (-3..=8)
        .flat_map(|p| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(p)))
        .find(|e| *e * g.ppm >= 16.0)
        .unwrap_or(f64::INFINITY);
    let label = |s: &mut Svg, y: f64, time: f64, strong: bool| {
        s.text(
            AXIS_X - 8.0,
            y + 4.0,
            &format!(
                r#"text-anchor="end" font-size="{}" fill="{}" font-weight="{}""#,
                if strong { "11.5" } else { "9.5" },
                if strong { INK } else { MUTED },
                if strong { "700" } else { "400" }
            ),
            &show_ms(time),
        );
    };
    label(s, g.y[0], t.initial.time, true);
    let mut last_labelled = g.y[0];
    for k in 1..=t.steps.len() {
        let t0 = state(t, k - 1).time;
        let t1 = state(t, k).time;
        if t1 <= t0 {
            continue;
        }
        let (y0, y1) = (g.y[k - 1], g.y[k]);
        let ruler = r##"stroke="#64748b" stroke-width="4" stroke-linecap="round""##;
        if g.broken.get(k - 1).copied().unwrap_or(false) {
            // A broken stretch: the ruler stops short of the middle, two
            // slanted strokes mark the break, and the duration beside it.
            let mid = (y0 + y1) / 2.0;
            s.line(AXIS_X, y0, AXIS_X, mid - 7.0, ruler);
            s.line(AXIS_X, mid + 7.0, AXIS_X, y1, ruler);
            for dy in [-4.0, 4.0] {
                s.line(
                    AXIS_X - 8.0,
                    mid + dy + 3.0,
                    AXIS_X + 8.0,
                    mid + dy - 3.0,
                    r##"stroke="#334155" stroke-width="1.6""##,
                );
            }
            s.text(
                AXIS_X - 12.0,
                mid + 4.0,
                &format!(
                    r#"text-anchor="end" font-size="10.5" fill="{MUTED}" font-style="italic""#
                ),
                &format!("⫽ {}", show_ms(t1 - t0)),
            );
        } else {
            s.line(AXIS_X, y0, AXIS_X, y1, ruler);
            let mut i = (t0 / every).floor() + 1.0;
            while i * every < t1 && every.is_finite() {
                let mark = i * every;
                let y = g.at_time(t, k, mark);
                s.line(AXIS_X - 5.0, y, AXIS_X + 5.0, y, r##"stroke="#64748b""##);
                if y - last_labelled > 14.0 && y1 - y > 14.0 {
                    label(s, y, mark, false);
                    last_labelled = y;
                }
                i += 1.0;
            }
        }
        s.line(
            AXIS_X - 7.0,
            y1,
            AXIS_X + 7.0,
            y1,
            r##"stroke="#334155" stroke-width="2""##,
        );
        label(s, y1, t1, true);
        last_labelled = y1;
    }
    for k in 0..=t.steps.len() {
        s.text(
            STEP_X,
            g.y[k] + 4.0,
            &format!(r#"text-anchor="end" font-size="10.5" fill="{MUTED}""#),
            &k.to_string(),
        );
    }
    if t.violation_step > 0 {
        let y = g.y[t.violation_step];
        let _ = writeln!(
            s.out,
            r#"<circle cx="{}" cy="{}" r="6" fill="{RED}"/>"#,
            n(AXIS_X),
            n(y)
        );
    }
}

/// Lifelines: solid while alive and up, hatched while paused or down, amber
/// while the participant's clock is off, gone once dead.
fn lanes(s: &mut Svg, t: &Trace, g: &Geometry) {
    for (i, p) in t.participants.iter().enumerate() {
        let x = g.lane_x[i];
        for k in 0..=t.steps.len() {
            let st = state(t, k);
            let y0 = g.y[k];
            let y1 = if k < t.steps.len() {
                g.y[k + 1]
            } else {
                g.bottom() - 6.0
            };
            let (alive, pausedish, offset) =
                if let Some(c) = st.clients.iter().find(|c| c.id == p.id) {
                    (c.alive, c.paused.is_some(), c.clock_offset)
                } else if let Some(sv) = st.servers.iter().find(|sv| sv.id == p.id) {
                    (sv.status != "dead", sv.status != "up", sv.clock_offset)
                } else {
                    (true, false, 0.0)
                };
            if !alive {
                continue;
            }
            if pausedish {
                s.rect(
                    x - 26.0,
                    y0,
                    52.0,
                    y1 - y0,
                    r#"fill="url(#ll-pause)" opacity="0.9""#,
                );
            }
            let stroke = if offset != 0.0 { AMBER } else { "#9ca3af" };
            let width = if offset != 0.0 { 2.5 } else { 1.2 };
            let dash = if pausedish {
                r#" stroke-dasharray="3 4""#
            } else {
                ""
            };
            s.line(
                x,
                y0,
                x,
                y1,
                &format!(r#"stroke="{stroke}" stroke-width="{width}"{dash}"#),
            );
        }
        // Labels where a pause, an outage or a clock offset begins.
        for k in 0..=t.steps.len() {
            let st = state(t, k);
            let prev = (k > 0).then(|| state(t, k - 1));
            let now = participant_status(st, &p.id);
            let before = prev.map(|b| participant_status(b, &p.id));
            if !now.0 && before.is_some_and(|b| b.0) {
                s.movable_text(
                    x + 8.0,
                    g.y[k] + 4.0,
                    &format!(r#"font-size="10.5" fill="{MUTED}" font-style="italic" {HALO}"#),
                    if p.kind == "client" {
                        "crashed"
                    } else {
                        "dead"
                    },
                );
            } else if now.0 && now.1 && before.is_none_or(|b| !b.1) {
                s.movable_text(
                    x - 30.0,
                    g.y[k] + 16.0,
                    &format!(r#"text-anchor="end" font-size="10.5" fill="{MUTED}" font-style="italic" {HALO}"#),
                    if p.kind == "client" { "paused" } else { "down" },
                );
            }
        }
    }
}

/// (alive, paused or down, clock offset) of a participant in a state.
fn participant_status(s: &StateView, id: &str) -> (bool, bool, f64) {
    if let Some(c) = s.clients.iter().find(|c| c.id == id) {
        (c.alive, c.paused.is_some(), c.clock_offset)
    } else if let Some(sv) = s.servers.iter().find(|sv| sv.id == id) {
        (sv.status != "dead", sv.status != "up", sv.clock_offset)
    } else {
        (true, false, 0.0)
    }
}

/// Text for what the service stores for a client: `ttl 6 s`, `3/5 · ttl 6 s`.
fn hold_text(h: &scene::Hold) -> String {
    let ttl = match h.ttl {
        Some(Some(x)) => format!("ttl {}", show_ms(x)),
        Some(None) => "no ttl".to_string(),
        None => String::new(),
    };
    if h.of > 1 && h.quorum > 1 {
        format!("{}/{} · {ttl}", h.count, h.of)
    } else {
        ttl
    }
}

/// A client's two bars: belief, and what the lock service holds for it.
fn client_bars(s: &mut Svg, t: &Trace, g: &Geometry, lane: usize, c: usize) {
    let id = &t.participants[lane].id;
    let x = g.lane_x[lane];
    let (strong, _) = color(c);
    let last = t.steps.len();
    // Interval k covers the state after step k, from its point to the next.
    let span = |k: usize| -> (f64, f64) {
        let y0 = g.y[k];
        let y1 = if k < last { g.y[k + 1] } else { g.y[k] + 18.0 };
        (y0, y1)
    };
    let mut label_prev: Option<String> = None;
    let mut gap_labelled = false;
    for k in 0..=last {
        let st = state(t, k);
        let Some(cv) = st.clients.iter().find(|cv| cv.id == *id) else {
            continue;
        };
        let (y0, y1) = span(k);
        let h = hold(t, st, id);
        // The service's key: during a step that lets time pass it ends where
        // its time to live runs out.
        let mut key_end = y1;
        if k < last
            && h.count > 0
            && let Some(Some(ttl)) = h.ttl
            && !hold(t, state(t, k + 1), id).held()
            && state(t, k + 1).time > st.time
        {
            key_end = g.at_time(t, k + 1, st.time + ttl);
        }
        if h.count > 0 {
            let opacity = if h.held() { "1" } else { "0.45" };
            s.rect(
                x + 8.0,
                y0,
                7.0,
                key_end - y0,
                &format!(r#"fill="url(#ll-key{c})" opacity="{opacity}""#),
            );
            let text = hold_text(&h);
            let changed = match &label_prev {
                None => true,
                Some(p) => {
                    // Time to live counting down is not news; anything else is.
                    let aged = k > 0 && {
                        let before = hold(t, state(t, k - 1), id);
                        let dt = st.time - state(t, k - 1).time;
                        before.count == h.count
                            && match (before.ttl, h.ttl) {
                                (Some(Some(a)), Some(Some(b))) => (a - dt - b).abs() < 1e-6,
                                (a, b) => a == b,
                            }
                    };
                    !aged && *p != text
                }
            };
            if changed && !text.is_empty() {
                s.text(
                    x + 19.0,
                    y0 + 4.0,
                    &format!(r#"font-size="10" fill="{strong}" {HALO}"#),
                    &text,
                );
            }
            label_prev = Some(text);
        } else {
            label_prev = None;
        }
        if cv.holds {
            let fill = if h.held() {
                strong.to_string()
            } else {
                "url(#ll-gap)".to_string()
            };
            s.rect(
                x - 5.0,
                y0,
                10.0,
                y1 - y0,
                &format!(r#"fill="{fill}" rx="1.5""#),
            );
            if !h.held() && !gap_labelled {
                s.text(
                    x + 19.0,
                    y0 + 4.0 + if h.count > 0 { 12.0 } else { 0.0 },
                    &format!(r#"font-size="10" font-weight="700" fill="{RED}" {HALO}"#),
                    "key gone",
                );
                gap_labelled = true;
            }
            if let Some(lease) = cv.believed_lease
                && (k == 0
                    || state(t, k - 1)
                        .clients
                        .iter()
                        .find(|b| b.id == *id)
                        .is_none_or(|b| b.believed_lease != Some(lease)))
            {
                let words = if lease > 0.0 {
                    format!("lease {} left", show_ms(lease))
                } else {
                    "lease over".to_string()
                };
                s.left.push((lane, k, words, strong));
            }
        } else {
            gap_labelled = false;
        }
    }
}

/// On a server lane: a bar per key it stores, coloured by its owner.
fn server_keys(s: &mut Svg, t: &Trace, g: &Geometry, lane: usize) {
    let id = &t.participants[lane].id;
    let x = g.lane_x[lane];
    let last = t.steps.len();
    let clients = scene::clients(t);
    for k in 0..=last {
        let st = state(t, k);
        let Some(sv) = st.servers.iter().find(|sv| sv.id == *id) else {
            continue;
        };
        if sv.status == "dead" {
            continue;
        }
        let y0 = g.y[k];
        let y1 = if k < last { g.y[k + 1] } else { g.y[k] + 18.0 };
        let prev = (k > 0).then(|| state(t, k - 1));
        for e in &sv.entries {
            let Some(owner) = e.owner.as_deref() else {
                // An entry nobody owns (the fencing-token counter): its
                // value where it changes.
                let was = prev.and_then(|p| {
                    p.servers
                        .iter()
                        .filter(|n| n.id == *id)
                        .flat_map(|n| n.entries.iter())
                        .find(|n| n.key == e.key)
                });
                if was.is_none_or(|w| w.value != e.value) {
                    s.movable_text(
                        x + 8.0,
                        y0 + 16.0,
                        &format!(r#"font-size="10" fill="{MUTED}" {HALO}"#),
                        &format!("{} = {}", e.key, e.value),
                    );
                }
                continue;
            };
            let c = scene::client_number(t, owner).unwrap_or(0);
            let slot = c as f64 - (clients.len() as f64 - 1.0) / 2.0;
            let bx = x - 3.5 + slot * 9.0;
            let mut end = y1;
            if k < last
                && let Some(ttl) = e.ttl
                && state(t, k + 1).time > st.time
                && !state(t, k + 1)
                    .servers
                    .iter()
                    .filter(|n| n.id == *id)
                    .flat_map(|n| n.entries.iter())
                    .any(|n| n.owner == e.owner && n.value == e.value && !n.expired)
            {
                end = g.at_time(t, k + 1, st.time + ttl);
            }
            let opacity = if e.expired { "0.35" } else { "1" };
            s.rect(
                bx,
                y0,
                7.0,
                end - y0,
                &format!(r#"fill="url(#ll-key{c})" opacity="{opacity}""#),
            );
            // Label a key when it appears or is re-timed.
            let before = prev.and_then(|p| {
                p.servers
                    .iter()
                    .filter(|n| n.id == *id)
                    .flat_map(|n| n.entries.iter())
                    .find(|n| n.owner == e.owner && n.value == e.value)
            });
            let dt = prev.map_or(0.0, |p| st.time - p.time);
            let news = match before {
                None => true,
                Some(b) => match (b.ttl, e.ttl) {
                    (Some(a), Some(z)) => (a - dt - z).abs() > 1e-6,
                    (a, z) => a != z,
                },
            };
            if news {
                let ttl = match e.ttl {
                    Some(x) => format!("ttl {}", show_ms(x)),
                    None => "no ttl".into(),
                };
                s.movable_text(
                    bx + 11.0,
                    y0 + 4.0,
                    &format!(r#"font-size="10" fill="{}" {HALO}"#, color(c).0),
                    &format!("{} · {ttl}", e.value),
                );
            }
        }
    }
}

/// Where an arrow ends on a lane: beside the bars rather than on the line.
fn lane_edge(x: f64, toward: f64) -> f64 {
    if toward > x { x + 7.0 } else { x - 7.0 }
}

/// Messages from the step that sent them to the step that ended them, and
/// the same-step exchanges with the resource and the replica.
fn messages(s: &mut Svg, t: &Trace, g: &Geometry, flights: &[Flight]) {
    let lane = |id: &str| t.participants.iter().position(|p| p.id == id);
    // What a delivered request did: its command and the reply, when the
    // receiver logged it.
    let result = |f: &Flight| -> Option<String> {
        if f.outcome != Outcome::Delivered || f.end == 0 {
            return None;
        }
        t.steps[f.end - 1]
            .events
            .iter()
            .find(|e| {
                e.kind == EventKind::Execute && e.at == f.to && e.peer.as_deref() == Some(&f.from)
            })
            .map(|e| scene::pretty(&e.text))
    };
    // Where each flight is drawn: (x0, y0, x1, y1).
    let ends = |f: &Flight| -> Option<(f64, f64, f64, f64)> {
        let (a, b) = (lane(&f.from)?, lane(&f.to)?);
        let (xa, xb) = (g.lane_x[a], g.lane_x[b]);
        let x0 = lane_edge(xa, xb);
        let x1 = lane_edge(xb, xa);
        let y0 = g.y[f.sent];
        let y1 = g.y[f.end];
        Some(match f.outcome {
            Outcome::Delivered => (x0, y0, x1, y1),
            Outcome::Lost => (x0, y0, x0 + (x1 - x0) * 0.62, y0 + (y1 - y0) * 0.8),
            Outcome::Discarded => (x0, y0, x0 + (x1 - x0) * 0.5, y1),
            Outcome::InFlight => (x0, y0, x0 + (x1 - x0) * 0.4, y0 + 16.0),
        })
    };
    for f in flights {
        let Some((x0, y0, x1, y1)) = ends(f) else {
            continue;
        };
        let reply = scene::client_number(t, &f.from).is_none();
        let ink = match f.outcome {
            Outcome::Lost => RED,
            Outcome::Discarded | Outcome::InFlight => "#9ca3af",
            Outcome::Delivered if f.delayed => AMBER_DARK,
            Outcome::Delivered => "#334155",
        };
        let dash = match (f.outcome, reply) {
            (Outcome::InFlight, _) => r#" stroke-dasharray="2 3""#,
            (_, true) => r#" stroke-dasharray="5 3""#,
            _ => "",
        };
        s.line(
            x0,
            y0,
            x1,
            y1,
            &format!(r#"stroke="{ink}" stroke-width="1.4"{dash}"#),
        );
        match f.outcome {
            Outcome::Delivered => s.head(x1, y1, x1 - x0, y1 - y0, ink),
            Outcome::Lost => {
                s.text(
                    x1,
                    y1 + 5.0,
                    &format!(
                        r#"text-anchor="middle" font-size="15" font-weight="700" fill="{RED}""#
                    ),
                    "✕",
                );
                s.badge(x1, y1 + 17.0, "LOST", AMBER, "#111827");
            }
            Outcome::Discarded => s.text(
                x1,
                y1 + 4.0,
                &format!(r#"text-anchor="middle" font-size="12" fill="{MUTED}""#),
                "✕",
            ),
            Outcome::InFlight => s.text(
                x1 + if x1 > x0 { 4.0 } else { -4.0 },
                y1 + 4.0,
                &format!(
                    r#"text-anchor="{}" font-size="9.5" fill="{MUTED}" font-style="italic""#,
                    if x1 > x0 { "start" } else { "end" }
                ),
                "in flight",
            ),
        }
        // A delay fault: its badge sits on the message it holds back.
        if f.delayed
            && let Some(st) = t.steps.iter().find(|st| {
                action_tag(st) == "delay"
                    && st.index > f.sent
                    && st.index <= f.end
                    && st
                        .message
                        .as_ref()
                        .is_some_and(|m| m.from == f.from && m.to == f.to)
            })
        {
            let y = g.y[st.index];
            let x = if (y1 - y0).abs() < 1e-6 {
                x0
            } else {
                x0 + (x1 - x0) * ((y - y0) / (y1 - y0)).clamp(0.0, 1.0)
            };
            s.badge(x, y, "DELAY", AMBER, "#111827");
        }
    }
    // Labels. Requests sent together to several servers (a fan) get one
    // label where they leave; replies that arrive together get one label on
    // the nearest; every other delivered or lost message is labelled along
    // its line. Messages that never arrived are left unlabelled.
    let mut fans: Vec<(String, usize, String)> = Vec::new();
    let mut fan_ins: Vec<(String, usize, String)> = Vec::new();
    for f in flights {
        if !matches!(f.outcome, Outcome::Delivered | Outcome::Lost) {
            continue;
        }
        let Some((x0, y0, x1, y1)) = ends(f) else {
            continue;
        };
        let ink = match f.outcome {
            Outcome::Lost => RED,
            _ if f.delayed => AMBER_DARK,
            _ => "#334155",
        };
        let fan: Vec<&Flight> = flights
            .iter()
            .filter(|o| o.from == f.from && o.sent == f.sent && o.text == f.text)
            .collect();
        if fan.len() > 1 && scene::client_number(t, &f.from).is_some() {
            let key = (f.from.clone(), f.sent, f.text.clone());
            if fans.contains(&key) {
                continue;
            }
            fans.push(key);
            // `SET ... → OK ×3 · nil ×2`: what each server answered.
            let mut outcomes: Vec<(String, usize)> = Vec::new();
            for o in &fan {
                let r = match (o.outcome, result(o)) {
                    (_, Some(r)) => r
                        .rsplit_once(" → ")
                        .map(|(_, r)| r.to_string())
                        .unwrap_or(r),
                    (Outcome::Lost, _) => "lost".into(),
                    (Outcome::InFlight, _) => "in flight".into(),
                    _ => "dropped".into(),
                };
                match outcomes.iter_mut().find(|(x, _)| *x == r) {
                    Some((_, n)) => *n += 1,
                    None => outcomes.push((r, 1)),
                }
            }
            let summary: Vec<String> = outcomes
                .iter()
                .map(|(r, n)| {
                    if *n > 1 {
                        format!("{r} ×{n}")
                    } else {
                        r.clone()
                    }
                })
                .collect();
            let right = x1 > x0;
            s.fitted(
                if right { x0 + 10.0 } else { x0 - 10.0 },
                y0 - 5.0,
                &format!(
                    r##"text-anchor="{}" font-family="{MONO}" font-size="10.5" fill="#334155" {HALO}"##,
                    if right { "start" } else { "end" }
                ),
                &format!("{} → {}", f.text, summary.join(" · ")),
                10.5,
                300.0,
            );
            continue;
        }
        let fan_in: Vec<&Flight> = flights
            .iter()
            .filter(|o| {
                o.to == f.to && o.end == f.end && o.text == f.text && o.outcome == f.outcome
            })
            .collect();
        let mut text = result(f).unwrap_or_else(|| f.text.clone());
        let (lx0, ly0, lx1, ly1) = if fan_in.len() > 1 {
            let key = (f.to.clone(), f.end, f.text.clone());
            if fan_ins.contains(&key) {
                continue;
            }
            fan_ins.push(key);
            text = format!("{text} ×{}", fan_in.len());
            let near = fan_in
                .iter()
                .min_by(|p, q| {
                    let d = |o: &&Flight| (g.lane_x[lane(&o.from).unwrap_or(0)] - x1).abs();
                    d(p).total_cmp(&d(q))
                })
                .copied()
                .unwrap_or(f);
            ends(near).unwrap_or((x0, y0, x1, y1))
        } else {
            (x0, y0, x1, y1)
        };
        let flown = state(t, f.end).time - state(t, f.sent).time;
        if f.delayed {
            text = format!("{text} (delayed)");
        } else if f.late(t) {
            text = format!("{text} (after {})", show_ms(flown));
        }
        let tip = format!(
            "{} → {}: {} · in flight {}",
            f.from,
            f.to,
            f.text,
            show_ms(flown)
        );
        let len = ((lx1 - lx0).powi(2) + (ly1 - ly0).powi(2)).sqrt();
        let shown = fit(&text, 10.5, (len - 24.0).max(40.0));
        // The tooltip always says where the message went and how long it
        // flew; a cut label puts its full text first.
        let tip = if shown == text {
            tip
        } else {
            format!("{text} — {tip}")
        };
        let (mx, my) = ((lx0 + lx1) / 2.0, (ly0 + ly1) / 2.0);
        let mut angle = (ly1 - ly0).atan2(lx1 - lx0).to_degrees();
        if angle > 90.0 {
            angle -= 180.0;
        } else if angle < -90.0 {
            angle += 180.0;
        }
        s.titled(
            mx,
            my - 4.0,
            &format!(
                r#"text-anchor="middle" font-family="{MONO}" font-size="10.5" fill="{ink}" transform="rotate({} {} {})" {HALO}"#,
                n(angle),
                n(mx),
                n(my)
            ),
            &shown,
            Some(&tip),
        );
    }
    // Same-step exchanges: reads, writes, rejections, replication.
    for st in &t.steps {
        let y = g.y[st.index];
        for e in &st.events {
            let (from, to, text, reject) = match (e.kind, e.peer.as_deref()) {
                (EventKind::Read, Some(p)) => (e.at.as_str(), p, short_resource(&e.text), false),
                (EventKind::Write, Some(p)) => (e.at.as_str(), p, short_resource(&e.text), false),
                (EventKind::Reject, Some(p)) => (p, e.at.as_str(), e.text.clone(), true),
                (EventKind::Replicate, Some(p)) => (p, e.at.as_str(), e.text.clone(), false),
                _ => continue,
            };
            let (Some(a), Some(b)) = (lane(from), lane(to)) else {
                continue;
            };
            let (xa, xb) = (g.lane_x[a], g.lane_x[b]);
            let x0 = lane_edge(xa, xb);
            let x1 = lane_edge(xb, xa);
            let ink = if reject { RED } else { "#334155" };
            s.line(
                x0,
                y,
                x1,
                y,
                &format!(r#"stroke="{ink}" stroke-width="1.4""#),
            );
            if reject {
                s.text(
                    x1,
                    y + 5.0,
                    &format!(
                        r#"text-anchor="middle" font-size="14" font-weight="700" fill="{RED}""#
                    ),
                    "✕",
                );
            } else {
                s.head(x1, y, x1 - x0, 0.0, ink);
            }
            let near = if xb > xa { x1 - 12.0 } else { x1 + 12.0 };
            let anchor = if xb > xa { "end" } else { "start" };
            s.fitted(
                near,
                y - 4.0,
                &format!(r#"text-anchor="{anchor}" font-family="{MONO}" font-size="10.5" fill="{ink}" {HALO}"#),
                &text,
                10.5,
                (x1 - x0).abs() - 30.0,
            );
        }
    }
}

/// `writes 1 (read + 1) with token 3` → `write 1 · token 3`, `reads the resource: 0` → `read 0`.
fn short_resource(text: &str) -> String {
    let token = text
        .find("token ")
        .map(|i| {
            let rest = &text[i + 6..];
            let num: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            format!(" · token {num}")
        })
        .unwrap_or_default();
    let num = |s: &str| -> String {
        s.chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit())
            .collect()
    };
    if let Some(rest) = text.strip_prefix("writes ") {
        format!("write {}{token}", num(rest))
    } else if let Some(i) = text.find(": ") {
        format!("read {}{token}", num(&text[i..]))
    } else {
        text.to_string()
    }
}

/// Badges for faults, and marks for acquisitions, releases and expiries.
fn marks(s: &mut Svg, t: &Trace, g: &Geometry) {
    let lane = |id: &str| t.participants.iter().position(|p| p.id == id);
    for st in &t.steps {
        let k = st.index;
        let y = g.y[k];
        let word = fault_word(t, st);
        let mut badged: Vec<usize> = Vec::new();
        for e in &st.events {
            let Some(i) = lane(&e.at) else { continue };
            let x = g.lane_x[i];
            match e.kind {
                EventKind::Fault => {
                    // Losses and delays are marked on their message.
                    if matches!(action_tag(st), "drop" | "delay") {
                        continue;
                    }
                    let label = match &word {
                        Some(w) => w.to_uppercase(),
                        None if e.text.starts_with("resumes") => "RESUME".into(),
                        None => "FAULT".into(),
                    };
                    if badged.contains(&i) {
                        continue;
                    }
                    badged.push(i);
                    let (fill, ink) = if label == "RESUME" {
                        ("#e5e7eb", INK)
                    } else {
                        (AMBER, "#111827")
                    };
                    s.badge(x, y, &label, fill, ink);
                }
                EventKind::Expire => {
                    let before = state(t, k - 1);
                    let ttl = before
                        .servers
                        .iter()
                        .filter(|sv| sv.id == e.at)
                        .flat_map(|sv| sv.entries.iter())
                        .find(|en| !en.expired)
                        .and_then(|en| en.ttl);
                    let ey = match ttl {
                        Some(ttl) if st.state.time > before.time => {
                            g.at_time(t, k, before.time + ttl)
                        }
                        _ => y,
                    };
                    // Beside the fault's badge when the fault expired it.
                    let x = match (&word, badged.contains(&i) && ey == y) {
                        (Some(w), true) => x + text_w(w, 10.0) / 2.0 + 18.0,
                        _ => x,
                    };
                    let _ = writeln!(
                        s.out,
                        r##"<path d="M{} {} l5 -5 l5 5 l-5 5 z" fill="#ffffff" stroke="{RED}" stroke-width="1.6"/>"##,
                        n(x - 5.0),
                        n(ey)
                    );
                    s.text(
                        x + 9.0,
                        ey + 4.0,
                        &format!(r#"font-size="10" font-weight="700" fill="{RED}" {HALO}"#),
                        "expires",
                    );
                }
                EventKind::Acquire | EventKind::Release => {
                    let c = scene::client_number(t, &e.at).unwrap_or(0);
                    let word = if e.kind == EventKind::Acquire {
                        "acquires"
                    } else {
                        "releases"
                    };
                    s.left.push((i, k, word.to_string(), color(c).0));
                    // The fencing token it was granted, where there is one.
                    if e.kind == EventKind::Acquire
                        && let Some(tok) = st
                            .state
                            .clients
                            .iter()
                            .find(|cv| cv.id == e.at)
                            .and_then(|cv| cv.token)
                    {
                        s.left.push((i, k, format!("token {tok}"), color(c).0));
                    }
                }
                _ => {}
            }
        }
        // A pause that ends by itself, not by a resume fault: mark it.
        if st.actor != "env" {
            for c in &st.state.clients {
                let was = state(t, k - 1)
                    .clients
                    .iter()
                    .any(|b| b.id == c.id && b.paused.is_some());
                if was
                    && c.paused.is_none()
                    && let Some(i) = lane(&c.id)
                    && !badged.contains(&i)
                {
                    s.badge(g.lane_x[i], y, "RESUME", "#e5e7eb", INK);
                }
            }
        }
        if st.actor == "env"
            && let Some(w) = &word
            && badged.is_empty()
            && !matches!(action_tag(st), "drop" | "delay")
        {
            // A fault that logged no event at a lane (none today): still show it.
            s.badge(LANES_X + 20.0, y, &w.to_uppercase(), AMBER, "#111827");
        }
    }
    if let Some(st) = t.steps.get(t.violation_step.saturating_sub(1)) {
        let y = g.y[st.index];
        let x = g.caption_x - 14.0;
        s.text(
            x,
            y + 5.0,
            &format!(r#"text-anchor="end" font-size="14" font-weight="700" fill="{RED}""#),
            "✗",
        );
    }
}

/// The words gathered for the left of client lanes, one run per row.
fn left_labels(s: &mut Svg, g: &Geometry) {
    let mut done: Vec<(usize, usize)> = Vec::new();
    let items = std::mem::take(&mut s.left);
    for (lane, k, _, ink) in &items {
        if done.contains(&(*lane, *k)) {
            continue;
        }
        done.push((*lane, *k));
        let words: Vec<&str> = items
            .iter()
            .filter(|(l, kk, _, _)| l == lane && kk == k)
            .map(|(_, _, w, _)| w.as_str())
            .collect();
        // Stacked, centred on the row.
        let top = g.y[*k] + 4.0 - (words.len() as f64 - 1.0) * 6.0;
        for (j, w) in words.iter().enumerate() {
            s.movable_text(
                g.lane_x[*lane] - 11.0,
                top + j as f64 * 12.0,
                &format!(
                    r#"text-anchor="end" font-size="10.5" font-weight="700" fill="{ink}" {HALO}"#
                ),
                w,
            );
        }
    }
}

/// The resource's counter where it changes.
fn resource_notes(s: &mut Svg, t: &Trace, g: &Geometry) {
    let Some(i) = t.participants.iter().position(|p| p.kind == "resource") else {
        return;
    };
    let x = g.lane_x[i];
    let text = |r: &crate::format::ResourceView| {
        let tok = r
            .max_token
            .map(|m| format!(" · max token {m}"))
            .unwrap_or_default();
        format!(
            "value {} · {} write{}{tok}",
            r.value,
            r.accepted_writes,
            if r.accepted_writes == 1 { "" } else { "s" }
        )
    };
    s.movable_text(
        x + 8.0,
        g.y[0] + 4.0,
        &format!(r#"font-size="10" fill="{MUTED}" {HALO}"#),
        &text(&t.initial.resource),
    );
    for st in &t.steps {
        let before = &state(t, st.index - 1).resource;
        let now = &st.state.resource;
        if now != before {
            let lost = now.value < now.accepted_writes;
            let ink = if lost { RED } else { INK };
            s.movable_text(
                x + 8.0,
                g.y[st.index] + 15.0,
                &format!(r#"font-size="10" font-weight="700" fill="{ink}" {HALO}"#),
                &text(now),
            );
        }
    }
}

/// One caption per step in the right-hand column.
fn captions(s: &mut Svg, t: &Trace, g: &Geometry) {
    s.text(
        g.caption_x,
        g.y[0] + 4.0,
        &format!(r#"font-size="11.5" fill="{MUTED}""#),
        "initial state",
    );
    for st in &t.steps {
        let violation = st.index == t.violation_step;
        let mut text = scene::caption(st);
        if violation {
            text = format!("{} broken · {text}", t.invariant);
        }
        let style = if violation {
            format!(r#"font-size="11.5" font-weight="700" fill="{RED}""#)
        } else if st.actor == "env" {
            format!(r#"font-size="11.5" font-weight="700" fill="{AMBER_DARK}""#)
        } else {
            r#"font-size="11.5""#.to_string()
        };
        s.fitted(
            g.caption_x,
            g.y[st.index] + 4.0,
            &style,
            &text,
            11.5,
            CAPTION_W - 24.0,
        );
    }
}
