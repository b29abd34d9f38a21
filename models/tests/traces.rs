//! Trace files: built by replay, read back to the same steps, validated,
//! and rejected when tampered with.

mod common;
use common::*;
use locklab_models::{FaultKind::*, Invariant::*, trace};
use locklab_traces::{Document, Trace};

fn counterexample() -> Trace {
    let m = model("naive-del", &[Pause]);
    let r = check(&m, &[MutualExclusion]);
    trace::build(
        &m,
        &r.violations[&MutualExclusion],
        MutualExclusion,
        "check",
        None,
    )
    .expect("the counterexample replays")
}

#[test]
fn a_trace_reads_back_to_the_same_steps_and_validates() {
    let t = counterexample();
    assert_eq!(t.violation_step, t.steps.len());
    assert_eq!(t.faults_used, vec!["pause".to_string()]);
    let json = t.to_json();
    let back = match Document::parse(&json).expect("parses") {
        Document::Trace(b) => *b,
        _ => panic!("not a trace"),
    };
    assert_eq!(back, t);
    let (m, s) = trace::validate(&back).expect("validates");
    assert!(!MutualExclusion.holds_at(&m, &s));
}

#[test]
fn tampered_traces_are_rejected_with_the_first_bad_step() {
    let t = counterexample();
    // A state that the model would not compute.
    let mut bad = t.clone();
    bad.steps[2].state.resource.value = 7;
    let e = trace::validate(&bad).unwrap_err();
    assert_eq!(e.step, Some(3), "{e}");
    // An action that is not enabled where it is taken.
    let mut bad = t.clone();
    bad.steps.swap(0, 1);
    let e = trace::validate(&bad).unwrap_err();
    assert_eq!(e.step, Some(1), "{e}");
    // A trace that stops before its violation.
    let mut bad = t.clone();
    bad.steps.pop();
    assert!(trace::validate(&bad).is_err());
    // Unknown schema versions are refused before anything else.
    let json = t
        .to_json()
        .replacen("\"schema_version\": 2", "\"schema_version\": 9", 1);
    let e = Document::parse(&json).unwrap_err();
    assert!(e.0.contains("schema_version 9"), "{e}");
    // Tick-model (version 1) files are refused with a way out.
    let json = t
        .to_json()
        .replacen("\"schema_version\": 2", "\"schema_version\": 1", 1);
    let e = Document::parse(&json).unwrap_err();
    assert!(e.0.contains("regenerate"), "{e}");
    assert!(Document::parse("not json").is_err());
}

#[test]
fn a_step_moved_out_of_its_window_is_rejected() {
    let t = counterexample();
    // Every step of the counterexample happens at an exact time that the
    // replay accepts; the SET runs 0.2 ms after it was sent (the shortest
    // latency). Moving it earlier than the shortest latency breaks its guard.
    let i = t
        .steps
        .iter()
        .position(|s| s.actor == "redis")
        .expect("the server runs a command");
    let mut bad = t.clone();
    let before = trace::parse_time(&bad.steps[i - 1].at_us).unwrap();
    bad.steps[i].at_us = if before.den() == 1 {
        before.num().to_string()
    } else {
        format!("{}/{}", before.num(), before.den())
    };
    bad.steps[i].time = before.to_ms();
    let e = trace::validate(&bad).unwrap_err();
    assert_eq!(e.step, Some(i + 1), "{e}");
    // ... and moving the pause past the point where c2 must have acted
    // (work, latency and reaction windows) misses a deadline.
    let mut bad = t.clone();
    let last = bad.steps.len() - 1;
    bad.steps[last].at_us = "999999999999".into();
    bad.steps[last].time = 999_999_999.999;
    assert!(trace::validate(&bad).is_err());
}

#[test]
fn traces_are_deterministic() {
    assert_eq!(counterexample().to_json(), counterexample().to_json());
}
