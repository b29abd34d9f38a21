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
    let (_, w) = trace::validate(&back).expect("validates");
    assert!(!MutualExclusion.holds(&trace::model_from_config(&back.config).unwrap(), &w));
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
        .replacen("\"schema_version\": 1", "\"schema_version\": 9", 1);
    let e = Document::parse(&json).unwrap_err();
    assert!(e.0.contains("schema_version 9"), "{e}");
    assert!(Document::parse("not json").is_err());
}

#[test]
fn traces_are_deterministic() {
    assert_eq!(counterexample().to_json(), counterexample().to_json());
}
