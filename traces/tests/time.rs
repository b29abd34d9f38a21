//! Exact time, shown for people: every renderer prints times with units,
//! and a long gap between steps (here c1's 29.999 s pause) is called out.

mod common;

use locklab_traces::time::{show_at, show_delta, show_ms};
use locklab_traces::{Document, Format};

#[test]
fn the_formatter_picks_a_unit() {
    assert_eq!(show_ms(0.0), "0 s");
    assert_eq!(show_ms(0.25), "250 µs");
    assert_eq!(show_ms(4.8), "4.8 ms");
    assert_eq!(show_ms(30_001.2), "30.0012 s");
    assert_eq!(show_delta(4.8), "+4.8 ms");
    assert_eq!(show_at(30_001.2), "t=30.0012 s");
}

#[test]
fn the_trace_round_trips_as_schema_2() {
    let t = common::lost_update();
    let json = t.to_json();
    assert!(json.contains("\"schema_version\": 2") || json.contains("\"schema_version\":2"));
    let Ok(Document::Trace(back)) = Document::parse(&json) else {
        panic!("a schema-2 trace parses");
    };
    // Floats may come back a last bit off; the text they write may not.
    let again = back.to_json();
    let diff: Vec<(&str, &str)> = json
        .lines()
        .zip(again.lines())
        .filter(|(a, b)| a != b)
        .take(3)
        .collect();
    assert!(diff.is_empty(), "{diff:?}");
}

#[test]
fn a_long_gap_shows_in_the_table() {
    let t = common::lost_update();
    let table = Format::Table.render(&t, false);
    assert!(table.contains("… 29.999 s pass …"), "{table}");
    assert!(table.contains("30.001 s"), "step 5's time: {table}");
    assert!(table.contains("1.5 ms"), "step 3's time: {table}");
    assert!(!table.to_lowercase().contains("tick"), "{table}");
    // The gap line comes right before step 5.
    let gap = table.find("29.999 s pass").unwrap();
    let step5 = table.find("the lock expires on redis").unwrap();
    let step4 = table.find("c1 pauses").unwrap();
    assert!(step4 < gap && gap < step5, "{table}");
}

#[test]
fn a_long_gap_shows_in_the_lanes() {
    let t = common::lost_update();
    let text = Format::Text.render(&t, false);
    assert!(text.contains("… 29.999 s pass …"), "{text}");
    assert!(text.contains("30.0048 s"), "the last step's time: {text}");
    assert!(!text.to_lowercase().contains("tick"), "{text}");
}

#[test]
fn the_story_says_how_long() {
    let t = common::lost_update();
    let story = Format::Story.render(&t, false);
    assert!(story.contains("t=1.5 ms"), "{story}");
    assert!(
        story.contains("29.999 s pass: c1's lock expires on redis"),
        "{story}"
    );
    assert!(story.contains("c1 wakes up after 30.0022 s"), "{story}");
    assert!(story.contains("t=30.0048 s"), "{story}");
    assert!(!story.to_lowercase().contains("tick"), "{story}");
}

#[test]
fn the_svg_breaks_the_axis_at_a_long_gap() {
    let t = common::lost_update();
    let svg = Format::Svg.render(&t, false);
    assert!(svg.contains("⫽ 29.999 s"), "the break and its duration");
    assert!(svg.contains(">30.001 s</text>"), "the time after the gap");
    assert!(svg.contains(">1.5 ms</text>"), "a time before it");
    let lower = svg.to_lowercase();
    let tick = lower
        .find("tick")
        .map(|i| &lower[i.saturating_sub(80)..(i + 20).min(lower.len())]);
    assert!(tick.is_none(), "{tick:?}");
    assert_eq!(svg, Format::Svg.render(&t, false), "deterministic");
}

#[test]
fn every_format_renders_without_ticks() {
    let t = common::lost_update();
    for f in [
        Format::Text,
        Format::Table,
        Format::Story,
        Format::Mermaid,
        Format::Svg,
        Format::Html,
        Format::Dot,
    ] {
        let out = f.render(&t, false);
        assert_eq!(out, f.render(&t, false), "{f:?} is deterministic");
        let lower = out.to_lowercase();
        assert!(!lower.contains(" tick"), "{f:?} mentions ticks");
        assert!(lower.contains("ms"), "{f:?} shows times with units");
    }
    let mermaid = Format::Mermaid.render(&t, false);
    assert!(mermaid.contains("29.999 s pass"), "{mermaid}");
    let dot = Format::Dot.render(&t, false);
    assert!(dot.contains("t=30.0048 s"), "{dot}");
}
