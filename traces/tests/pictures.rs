//! The pictures for people (issue 17): what the SVG cuts short is still
//! there on hover.

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
