//! The embeddable picture (`--format svg-embed`): for a README, an issue or
//! a wiki page, where a code host scales an image down to the width of its
//! text column (about 800 px). The full picture is well over 1,000 px wide,
//! so its 10–12 px labels shrink to about 6 px there. This one is 800 px
//! wide and sets no text below 12 px, so it is drawn at its own size.
//!
//! Layout: one row per step, time going down (rows are not to scale; the
//! time of each step is printed). On the left the time; then, per client,
//! two thin bars: solid while the client *believes* it holds the lock,
//! hatched while the lock service *really* holds it for the client, and
//! red where the belief runs on without the lock; then the step's caption,
//! wrapped. Faults are amber, the step that breaks the invariant red.

use super::{AMBER_DARK, FAINT, INK, LabelBox, MUTED, RED, SANS, Svg, color, defs, esc, n, wrap};
use crate::format::Trace;
use crate::scene::{self, hold, state};
use crate::time::show_ms;
use std::fmt::Write;

/// The width the picture is made for: what a code host shows it at.
pub const WIDTH: f64 = 800.0;
/// The smallest font size used.
pub const MIN_FONT: f64 = 12.0;
const PAD: f64 = 16.0;
const TIME_W: f64 = 92.0;
const CLIENT_W: f64 = 34.0;
const LINE: f64 = 17.0;
const CAPTION: f64 = 13.0;

/// The embeddable SVG.
pub fn render(t: &Trace) -> String {
    draw(t).out
}

/// Its labels' boxes, as for the full picture.
pub fn label_boxes(t: &Trace) -> Vec<LabelBox> {
    draw(t).boxes
}

fn draw(t: &Trace) -> Svg {
    let clients = scene::clients(t);
    let caption_x = PAD + TIME_W + clients.len() as f64 * CLIENT_W + 10.0;
    let caption_w = WIDTH - caption_x - PAD;
    let title = format!("{}: {} broken", t.config.protocol, t.invariant);
    let violation = wrap(&t.violation, 13.0, WIDTH - 2.0 * PAD);

    // Rows: the initial state, then every step, each as tall as its caption.
    let mut rows: Vec<(usize, Vec<String>)> = vec![(0, vec!["initial state".to_string()])];
    for st in &t.steps {
        let mut text = scene::caption(st);
        if st.index == t.violation_step {
            text = format!("{} broken · {text}", t.invariant);
        }
        rows.push((st.index, wrap(&text, CAPTION, caption_w)));
    }
    let head_h = 34.0 + violation.len() as f64 * LINE + 12.0;
    let table_top = head_h + 26.0;
    let row_h = |lines: usize| lines.max(1) as f64 * LINE + 8.0;
    let rows_h: f64 = rows.iter().map(|(_, l)| row_h(l.len())).sum();
    let height = table_top + rows_h + 58.0;

    let mut s = Svg {
        out: String::new(),
        left: Vec::new(),
        boxes: Vec::new(),
        movable: Vec::new(),
    };
    let _ = writeln!(
        s.out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{SANS}" font-size="{CAPTION}" fill="{INK}">"#,
        w = n(WIDTH),
        h = n(height)
    );
    let _ = writeln!(
        s.out,
        "<title>{}</title>",
        esc(&format!("{title} — {}", t.violation))
    );
    defs(&mut s, t);
    s.rect(0.0, 0.0, WIDTH, height, r##"fill="#ffffff""##);

    // Header: what broke, and how.
    s.text(PAD, 26.0, r#"font-size="17" font-weight="700""#, &title);
    for (i, l) in violation.iter().enumerate() {
        s.text(
            PAD,
            26.0 + LINE + 4.0 + i as f64 * LINE,
            &format!(r#"font-size="13" fill="{RED}""#),
            l,
        );
    }

    // Column heads.
    let head_y = table_top - 8.0;
    s.text(
        PAD,
        head_y,
        &format!(r#"font-size="12" fill="{MUTED}""#),
        "time",
    );
    for (c, id) in clients.iter().enumerate() {
        let (strong, _) = color(c);
        s.text(
            PAD + TIME_W + c as f64 * CLIENT_W + CLIENT_W / 2.0 - 4.0,
            head_y,
            &format!(r#"text-anchor="middle" font-size="12" font-weight="700" fill="{strong}""#),
            id,
        );
    }
    s.text(
        caption_x,
        head_y,
        &format!(r#"font-size="12" fill="{MUTED}""#),
        "what happens",
    );

    let mut y = table_top;
    for (k, lines) in &rows {
        let h = row_h(lines.len());
        let st = state(t, *k);
        let step = (*k > 0).then(|| &t.steps[*k - 1]);
        let violation = *k == t.violation_step && *k > 0;
        let fault = step.is_some_and(|x| x.actor == "env");
        if violation {
            s.rect(0.0, y, WIDTH, h, r##"fill="#fef2f2""##);
        }
        s.line(
            PAD,
            y,
            WIDTH - PAD,
            y,
            &format!(r#"stroke="{FAINT}" stroke-width="0.6""#),
        );
        s.text(
            PAD,
            y + 17.0,
            &format!(r#"font-size="12" fill="{MUTED}""#),
            &show_ms(st.time),
        );
        for (c, id) in clients.iter().enumerate() {
            let x = PAD + TIME_W + c as f64 * CLIENT_W;
            let believes = st.clients.iter().any(|v| v.id == *id && v.holds);
            let held = hold(t, st, id).held();
            if believes {
                let fill = if held {
                    color(c).0.to_string()
                } else {
                    RED.to_string()
                };
                s.rect(x + 4.0, y, 9.0, h, &format!(r#"fill="{fill}""#));
            }
            if held {
                s.rect(x + 15.0, y, 9.0, h, &format!(r#"fill="url(#ll-key{c})""#));
            }
        }
        let style = if violation {
            format!(r#"font-size="{CAPTION}" font-weight="700" fill="{RED}""#)
        } else if fault {
            format!(r#"font-size="{CAPTION}" font-weight="700" fill="{AMBER_DARK}""#)
        } else if *k == 0 {
            format!(r#"font-size="{CAPTION}" fill="{MUTED}""#)
        } else {
            format!(r#"font-size="{CAPTION}""#)
        };
        for (j, l) in lines.iter().enumerate() {
            s.text(caption_x, y + 17.0 + j as f64 * LINE, &style, l);
        }
        y += h;
    }
    s.line(
        PAD,
        y,
        WIDTH - PAD,
        y,
        &format!(r#"stroke="{FAINT}" stroke-width="0.6""#),
    );

    // Key.
    let key_y = y + 30.0;
    let (strong, _) = color(0);
    s.rect(PAD, key_y - 11.0, 9.0, 14.0, &format!(r#"fill="{strong}""#));
    s.text(
        PAD + 14.0,
        key_y,
        r#"font-size="12""#,
        "believes it holds the lock",
    );
    s.rect(
        PAD + 200.0,
        key_y - 11.0,
        9.0,
        14.0,
        r#"fill="url(#ll-key0)""#,
    );
    s.text(
        PAD + 214.0,
        key_y,
        r#"font-size="12""#,
        "the lock service holds it",
    );
    s.rect(
        PAD + 400.0,
        key_y - 11.0,
        9.0,
        14.0,
        &format!(r#"fill="{RED}""#),
    );
    s.text(
        PAD + 414.0,
        key_y,
        r#"font-size="12""#,
        "believes it, but the lock is gone",
    );
    s.raw("</svg>");
    s
}
