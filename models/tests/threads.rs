//! The search gives the same result for any number of threads: the same
//! zones, transitions, depth, verdicts and counterexamples, step for step.
//! Successors are expanded in chunks that do not depend on the threads, and
//! each shard of the passed list takes its successors in frontier order
//! (models/src/engine/passed.rs), so nothing may change with the threads.

mod common;
use common::*;
use locklab_models::search::{SearchOptions, SearchResult, search};
use locklab_models::{FaultKind, Invariant, LockModel};

fn run(m: &LockModel, threads: usize) -> SearchResult {
    search(
        m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: Invariant::ALL.to_vec(),
            max_states: None,
            max_depth: None,
            symmetry: true,
            threads,
            spill: None,
        },
    )
}

fn same_for_any_threads(label: &str, m: &LockModel) {
    let one = run(m, 1);
    assert!(
        one.states > 1_000,
        "{label}: too small to exercise the shards"
    );
    for threads in [2, 3, 8] {
        let r = run(m, threads);
        assert_eq!(
            (r.states, r.worlds, r.transitions, r.depth, r.stop),
            (one.states, one.worlds, one.transitions, one.depth, one.stop),
            "{label}: {threads} threads against 1"
        );
        assert_eq!(r.violations, one.violations, "{label}: {threads} threads");
    }
}

#[test]
fn redlock_with_pauses() {
    let m = model_with("redlock", &[FaultKind::Pause], |p| p.instances = 3);
    same_for_any_threads("redlock --instances 3 --faults pause", &m);
}

#[test]
fn consensus_with_delays() {
    let m = model("zookeeper", &[FaultKind::Delay]);
    same_for_any_threads("zookeeper --faults delay", &m);
}

#[test]
fn five_clients() {
    let m = model_with("lua-release", &[], |p| p.clients = 5);
    same_for_any_threads("lua-release --clients 5", &m);
}
