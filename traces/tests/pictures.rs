//! The pictures for people (issue 17): what the SVG cuts short is still
//! there on hover, the DOT graph keeps its lanes in the order every other
//! renderer draws them, and the HTML viewer links to a step, fits the
//! window and opens at the violation. (The page's behaviour in a browser
//! is tested by tests/browser.rs; these tests read the page as text.)

mod common;

use locklab_traces::{Format, Trace};

/// Longer than any caption, lane header or header line has room for.
const LONG: &str = "pauses for a very long while, long enough for its lease to run out twice over, and then some more words that cannot possibly fit";

/// The lost update with a long lane label, a long fault text (the caption
/// of step 4) and a long violation sentence.
fn long_labels() -> Trace {
    let mut t = common::lost_update();
    t.participants[2].label = "Redis primary, the only copy of the lock".into();
    t.steps[3].events[0].text = LONG.into();
    t.violation = format!("{} — {LONG}", t.violation);
    t
}

/// The `<text>` elements of an SVG, one per line as the renderer writes them.
fn texts(svg: &str) -> Vec<&str> {
    svg.lines().filter(|l| l.starts_with("<text")).collect()
}

#[test]
fn svg_cut_labels_carry_their_full_text_as_a_title() {
    let t = long_labels();
    let svg = Format::Svg.render(&t, false);
    // The caption of step 4 is cut, and its tooltip has all of it.
    let caption = format!("c1: {LONG}");
    assert!(
        svg.contains(&format!("<title>{caption}</title></text>")),
        "the caption's full text in a <title>"
    );
    assert!(!svg.contains(&format!(">{caption}<title>")), "it is cut");
    // The lane label and the violation too.
    assert!(svg.contains("<title>Redis primary, the only copy of the lock</title></text>"));
    assert!(svg.contains(&format!("<title>{}</title></text>", t.violation)));
    // A message label cut along its arrow: its full text, then the flight.
    assert!(
        svg.contains("…<title>SET lock c2#1 NX PX 30000 → OK — c2 → redis: "),
        "the message's full text in its tooltip"
    );
    // No label anywhere is cut without its tooltip.
    let bare: Vec<&str> = texts(&svg)
        .into_iter()
        .filter(|l| l.contains("…</text>"))
        .collect();
    assert!(bare.is_empty(), "cut without a <title>: {bare:#?}");
    assert_eq!(svg, Format::Svg.render(&t, false), "deterministic");
}

#[test]
fn svg_labels_that_fit_have_no_title() {
    let t = common::lost_update();
    let svg = Format::Svg.render(&t, false);
    let caption = texts(&svg)
        .into_iter()
        .find(|l| l.contains(">c1: pauses"))
        .expect("step 4's caption");
    assert!(caption.ends_with(">c1: pauses</text>"), "{caption}");
}

/// Where each lane head is declared in a DOT graph, in the order given.
fn lane_heads(dot: &str, t: &Trace) -> Vec<usize> {
    t.participants
        .iter()
        .map(|p| {
            let head = format!("\"lane {}\" [label=", p.id);
            dot.find(&head)
                .unwrap_or_else(|| panic!("no head for lane {}: {dot}", p.id))
        })
        .collect()
}

#[test]
fn dot_lanes_keep_the_diagram_order() {
    let t = common::lost_update();
    let dot = Format::Dot.render(&t, false);
    // Clients, then the lock server, then the resource: as the SVG draws them.
    let ids: Vec<&str> = t.participants.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "redis", "resource"]);
    let at = lane_heads(&dot, &t);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{dot}");
    // One rank, chained left to right by edges that are not drawn.
    let rank = dot.find("{ rank=same").expect("the heads share a rank");
    assert!(rank < at[0], "{dot}");
    assert!(
        dot.contains(
            "\"lane c1\" -> \"lane c2\" -> \"lane redis\" -> \"lane resource\" [style=invis]"
        ),
        "{dot}"
    );
    // Each head stands above its lane's first step (node 0 is c1's at step 1).
    assert!(dot.contains("\"lane c1\" -> 0 [style=invis]"), "{dot}");
    assert_eq!(dot, Format::Dot.render(&t, false), "deterministic");
}

#[test]
fn dot_lane_order_follows_the_trace_not_the_names() {
    // A trace that lists its server first still draws it first: the order
    // is the trace's, the one every renderer uses, not one of DOT's own.
    let mut t = common::lost_update();
    t.participants.rotate_right(2);
    let dot = Format::Dot.render(&t, false);
    let at = lane_heads(&dot, &t);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{dot}");
    assert!(dot.contains("\"lane redis\" -> \"lane resource\" -> \"lane c1\""));
}

#[test]
fn html_links_to_steps_and_opens_at_the_violation() {
    let t = common::lost_update();
    assert_eq!(t.violation_step, 11);
    let html = Format::Html.render(&t, false);
    // `#step=N` is read when the page opens and when the address changes,
    // and the step shown is written back without a history entry per step.
    for handler in [
        r##"/^#step=(\d+)$/.exec(window.location.hash)"##,
        r#"window.addEventListener("hashchange""#,
        r##"window.history.replaceState(null, "", "#step=" + k)"##,
    ] {
        assert!(html.contains(handler), "no {handler}");
    }
    // With no link, the page opens at the violation: the script goes
    // there, and the slider and position are there before it runs.
    assert!(html.contains("go(start !== null ? start : data.violation_step);"));
    assert!(html.contains("\"violation_step\":11"));
    assert!(html.contains(r#"max="11" value="11" aria-label="step""#));
    assert!(html.contains(r#"<span id="ll-position">step 11</span>"#));
    assert_eq!(html, Format::Html.render(&t, false), "deterministic");
}

#[test]
fn html_fits_the_picture_to_the_window_with_a_button_for_one_to_one() {
    let html = Format::Html.render(&common::lost_update(), false);
    assert!(
        html.contains(r#"<section class="diagram fit">"#),
        "fitted at first"
    );
    assert!(html.contains(".diagram.fit svg { width: 100%; height: auto; }"));
    assert!(html.contains(r#"<button id="ll-zoom""#), "the 1:1 toggle");
    assert!(html.contains(r#"diagram.classList.toggle("fit", on);"#));
    // The picture keeps its viewBox, so it scales without changing shape.
    assert!(html.contains(r#"viewBox="0 0 "#));
}
