//! The trace as one self-contained HTML file that works offline: the SVG
//! diagram, a slider, buttons and arrow keys to step through it, and at
//! each step the whole recorded state — every client's phase and belief
//! beside what the lock service holds for it, every server's keys with
//! their time to live and clock offset, the resource, the messages in
//! flight — with the invariant's status and the story. No network, no
//! external script or font: the page carries its own CSS, script and data.
//!
//! The page opens at the step that breaks the invariant, unless its
//! address names another: `trace.html#step=7` opens at step 7, and the
//! address follows the step shown, so it can be copied as a link. The
//! picture fits the window's width; a button draws it 1:1.

use crate::format::{StateView, Trace};
use crate::narrate;
use crate::scene::{self, hold, state};
use crate::svg::{self, esc};
use serde::Serialize;
use std::fmt::Write;

const CSS: &str = include_str!("viewer/viewer.css");
const SCRIPT: &str = include_str!("viewer/viewer.js");

/// What the viewer shows at one step.
#[derive(Serialize)]
struct Frame<'a> {
    index: usize,
    actor: &'a str,
    caption: String,
    fault: bool,
    violations: &'a [String],
    state: &'a StateView,
    /// Per client: what the lock service holds for it, and whether it
    /// believes in a lock the service no longer holds.
    beliefs: Vec<Belief>,
}

#[derive(Serialize)]
struct Belief {
    service: String,
    gap: bool,
}

#[derive(Serialize)]
struct Data<'a> {
    invariant: &'a str,
    violation: &'a str,
    violation_step: usize,
    steps: Vec<Frame<'a>>,
}

fn beliefs(t: &Trace, s: &StateView) -> Vec<Belief> {
    s.clients
        .iter()
        .map(|c| {
            let h = hold(t, s, &c.id);
            let ttl = match h.ttl {
                Some(Some(x)) => format!(", {} left", crate::time::show_ms(x)),
                Some(None) => ", no expiry".into(),
                None => String::new(),
            };
            let service = if h.count == 0 {
                "no key".to_string()
            } else if h.of > 1 && h.quorum > 1 {
                format!(
                    "key on {} of {} servers (quorum {}){ttl}",
                    h.count, h.of, h.quorum
                )
            } else {
                format!("key{ttl}")
            };
            Belief {
                service,
                gap: c.holds && !h.held(),
            }
        })
        .collect()
}

/// The page.
pub fn render(t: &Trace) -> String {
    let no_violations: Vec<String> = Vec::new();
    let mut steps = vec![Frame {
        index: 0,
        actor: "-",
        caption: "initial state".into(),
        fault: false,
        violations: &no_violations,
        state: &t.initial,
        beliefs: beliefs(t, &t.initial),
    }];
    for st in &t.steps {
        steps.push(Frame {
            index: st.index,
            actor: &st.actor,
            caption: scene::caption(st),
            fault: st.actor == "env",
            violations: &st.violations,
            state: &st.state,
            beliefs: beliefs(t, state(t, st.index)),
        });
    }
    let data = Data {
        invariant: &t.invariant,
        violation: &t.violation,
        violation_step: t.violation_step,
        steps,
    };
    // `<` never appears raw inside the script element, so no `</script>`
    // in a trace's text can end it early.
    let json = serde_json::to_string(&data)
        .expect("the viewer's data always serialises")
        .replace('<', "\\u003c");
    let title = format!("{} · {} broken", t.config.protocol, t.invariant);
    let faults = if t.faults_used.is_empty() {
        "no fault".to_string()
    } else {
        format!("faults: {}", t.faults_used.join(", "))
    };
    let mut out = String::new();
    let _ = writeln!(out, "<!doctype html>");
    let _ = writeln!(out, "<html lang=\"en\">");
    let _ = writeln!(out, "<head>");
    let _ = writeln!(out, "<meta charset=\"utf-8\">");
    let _ = writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    );
    // An empty icon keeps the browser from asking for /favicon.ico.
    let _ = writeln!(out, "<link rel=\"icon\" href=\"data:,\">");
    let _ = writeln!(out, "<title>{}</title>", esc(&title));
    let _ = writeln!(out, "<style>\n{CSS}</style>");
    let _ = writeln!(out, "</head>");
    let _ = writeln!(out, "<body>");
    let _ = writeln!(out, "<header>");
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    let _ = writeln!(out, "<p class=\"violation\">{}</p>", esc(&t.violation));
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} clients · {} · {} steps, broken at step {} · {}</p>",
        t.config.clients,
        esc(&faults),
        t.steps.len(),
        t.violation_step,
        esc(&t.config.time)
    );
    let _ = writeln!(out, "</header>");
    let _ = writeln!(out, "<div class=\"controls\">");
    let _ = writeln!(
        out,
        "<button id=\"ll-prev\" title=\"previous step (←)\">◀</button>"
    );
    // Without a link to another step the viewer opens at the violation;
    // the slider starts there too, so the page never shows one step and
    // points at another.
    let _ = writeln!(
        out,
        "<input id=\"ll-slider\" type=\"range\" min=\"0\" max=\"{}\" value=\"{}\" aria-label=\"step\">",
        t.steps.len(),
        t.violation_step
    );
    let _ = writeln!(
        out,
        "<button id=\"ll-next\" title=\"next step (→)\">▶</button>"
    );
    let _ = writeln!(out, "<button id=\"ll-play\">play</button>");
    let _ = writeln!(
        out,
        "<span id=\"ll-position\">step {}</span>",
        t.violation_step
    );
    let _ = writeln!(
        out,
        "<button id=\"ll-zoom\" title=\"fit the picture to the window, or draw it at its own size\">1:1</button>"
    );
    let _ = writeln!(
        out,
        "<span class=\"hint\">← → step · Home/End · click a row or a sentence · link a step: #step=N</span>"
    );
    let _ = writeln!(out, "</div>");
    let _ = writeln!(out, "<main>");
    let _ = writeln!(out, "<section class=\"diagram fit\">");
    out.push_str(&svg::picture(t, false));
    let _ = writeln!(out, "</section>");
    let _ = writeln!(out, "<aside class=\"state\">");
    let _ = writeln!(out, "<div id=\"ll-invariant\"></div>");
    let _ = writeln!(out, "<div id=\"ll-caption\"></div>");
    let _ = writeln!(out, "<h3>Clients</h3><table id=\"ll-clients\"></table>");
    let _ = writeln!(
        out,
        "<h3>Lock servers</h3><table id=\"ll-servers\"></table>"
    );
    let _ = writeln!(out, "<h3>Resource</h3><div id=\"ll-resource\"></div>");
    let _ = writeln!(
        out,
        "<h3>In flight</h3><ul class=\"net\" id=\"ll-network\"></ul>"
    );
    let _ = writeln!(out, "</aside>");
    let _ = writeln!(out, "</main>");
    let _ = writeln!(out, "<section class=\"story\">");
    let _ = writeln!(out, "<h2>What happened</h2>");
    let _ = writeln!(out, "<ol>");
    for s in narrate::story(t) {
        if let Some(g) = s.gap {
            let _ = writeln!(
                out,
                "<li class=\"gap\">… {} pass …</li>",
                esc(&crate::time::show_ms(g))
            );
        }
        let _ = writeln!(
            out,
            "<li data-step=\"{}\" data-violation=\"{}\"><span class=\"mono\">{}</span> {}</li>",
            s.step,
            s.violation,
            esc(&crate::time::show_at(s.time)),
            esc(&s.text)
        );
    }
    let _ = writeln!(out, "</ol>");
    let _ = writeln!(out, "</section>");
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"ll-trace\">{json}</script>"
    );
    let _ = writeln!(out, "<script>\n{SCRIPT}</script>");
    let _ = writeln!(out, "</body>");
    let _ = writeln!(out, "</html>");
    out
}
