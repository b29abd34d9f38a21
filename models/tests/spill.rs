//! A search that writes its levels and parent links to disk
//! (`engine::spill`, `check --memory-limit`) is the same search: the same
//! states, transitions, depth, verdicts and counterexamples, step for
//! step, as the one that keeps them in RAM. A limit of 0 bytes sends every
//! full block and chunk to disk from the start, so every level is read
//! back from the file and every trace from parent links on disk.

mod common;
use common::*;
use locklab_models::engine::spill::SpillTo;
use locklab_models::search::{SearchOptions, SearchResult, search};
use locklab_models::{FaultKind, Invariant, LockModel};

fn run(m: &LockModel, max_states: u64, spill: Option<SpillTo>) -> SearchResult {
    search(
        m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: Invariant::ALL.to_vec(),
            max_states: Some(max_states),
            max_depth: None,
            symmetry: true,
            threads: 2,
            spill,
        },
    )
}

fn same_on_disk(label: &str, m: &LockModel, max_states: u64) -> SearchResult {
    let ram = run(m, max_states, None);
    let to = SpillTo {
        dir: std::env::temp_dir(),
        limit: 0,
    };
    let disk = run(m, max_states, Some(to));
    assert_eq!(
        (
            disk.states,
            disk.worlds,
            disk.transitions,
            disk.depth,
            disk.stop
        ),
        (ram.states, ram.worlds, ram.transitions, ram.depth, ram.stop),
        "{label}: spilled against in RAM"
    );
    assert_eq!(disk.violations, ram.violations, "{label}");
    assert_eq!(disk.rebuilt, ram.rebuilt, "{label}");
    assert_eq!(disk.spill_failure, None, "{label}");
    assert_eq!(ram.spilled, 0, "{label}: nothing spills unless asked");
    if ram.states > 1_000 {
        assert!(
            disk.spilled > 0,
            "{label}: {} states, nothing spilled",
            disk.states
        );
    }
    disk
}

#[test]
fn every_protocol_gives_the_same_result_spilled() {
    for (p, m) in every_protocol_with_its_faults(1) {
        same_on_disk(p, &m, 20_000);
    }
}

/// Past 65,536 states the parent links go to disk in chunks too, and the
/// counterexamples are read back through them.
#[test]
fn parent_links_on_disk_give_the_same_counterexamples() {
    let m = model("redlock", &[FaultKind::Pause, FaultKind::ClockJump]);
    let r = same_on_disk("redlock --faults pause,clock-jump", &m, 150_000);
    assert!(r.states > 70_000, "{} states", r.states);
    assert!(
        !r.violations.is_empty(),
        "a counterexample read through links on disk"
    );
}
