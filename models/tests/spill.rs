//! A search that writes its levels, parent links and passed zones to disk
//! (`engine::spill`, `check --memory-limit`) is the same search: the same
//! states, transitions, depth, verdicts and counterexamples, step for
//! step, as the one that keeps them in RAM. A limit of 0 bytes sends every
//! full block and chunk to disk from the start, and every level's zones at
//! its end, so every level is read back from the file, every inclusion
//! test of a successor whose world was met on an earlier level reads its
//! zones from the file, and every trace comes from parent links on disk.

mod common;
use common::*;
use locklab_models::engine::spill::SpillTo;
use locklab_models::search::{SearchOptions, SearchResult, search, search_unmerged};
use locklab_models::{FaultKind, Invariant, LockModel};

fn options(max_states: u64, spill: Option<SpillTo>) -> SearchOptions {
    SearchOptions {
        subsume_budgets: true,
        invariants: Invariant::ALL.to_vec(),
        max_states: Some(max_states),
        max_depth: None,
        symmetry: true,
        threads: 2,
        spill,
    }
}

/// Searches `m` with `search` (merging or not) in RAM and with
/// everything on disk, and requires the same result.
fn same_on_disk_with(
    label: &str,
    m: &LockModel,
    max_states: u64,
    search: fn(&LockModel, &SearchOptions) -> SearchResult,
) -> SearchResult {
    let ram = search(m, &options(max_states, None));
    let to = SpillTo {
        dir: std::env::temp_dir(),
        limit: 0,
    };
    let disk = search(m, &options(max_states, Some(to)));
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

fn same_on_disk(label: &str, m: &LockModel, max_states: u64) -> SearchResult {
    same_on_disk_with(label, m, max_states, search)
}

#[test]
fn every_protocol_gives_the_same_result_spilled() {
    for (p, m) in every_protocol_with_its_faults(1) {
        same_on_disk(p, &m, 20_000);
    }
}

/// Past 65,536 states the parent links go to disk in chunks too, and the
/// counterexamples are read back through them. Its levels are wide enough
/// that merge candidates forget what was read of them (past 1,024 a shard,
/// `passed::CACHED`; about 11,000 times here) and read it again.
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

/// Without merging, a stored zone is kept whole until it goes to disk,
/// where it is written as its minimal graph: the same answers.
#[test]
fn the_unmerged_search_gives_the_same_result_spilled() {
    for (p, m) in every_protocol_with_its_faults(1) {
        same_on_disk_with(&format!("{p}, unmerged"), &m, 5_000, search_unmerged);
    }
}
