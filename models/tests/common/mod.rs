//! Helpers shared by the model tests.
#![allow(dead_code)]

use locklab_models::search::{SearchOptions, SearchResult, search};
use locklab_models::{Budgets, FaultKind, Invariant, LockModel, Params, protocols};

/// `protocol` with default parameters and exactly `faults` switched on
/// (budget 1 each).
pub fn model(protocol: &str, faults: &[FaultKind]) -> LockModel {
    model_with(protocol, faults, |_| {})
}

/// Like `model`, with a chance to change parameters.
pub fn model_with(protocol: &str, faults: &[FaultKind], f: impl FnOnce(&mut Params)) -> LockModel {
    let proto = protocols::by_name(protocol).expect("known protocol");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    for k in faults {
        p.faults.set(*k, 1);
    }
    // Tests name their faults; no cap on how many strike together.
    p.max_faults = None;
    f(&mut p);
    LockModel::new(proto, p).expect("valid parameters")
}

/// Every protocol, with every fault kind it can suffer switched on (budget
/// 1 each) and at most `max_faults` striking in one execution.
pub fn every_protocol_with_its_faults(max_faults: u8) -> Vec<(&'static str, LockModel)> {
    protocols::ALL
        .iter()
        .map(|proto| {
            let kinds: Vec<FaultKind> = FaultKind::ALL
                .into_iter()
                .filter(|k| proto.faults().contains(k))
                .collect();
            let m = model_with(proto.name(), &kinds, |p| p.max_faults = Some(max_faults));
            (proto.name(), m)
        })
        .collect()
}

/// Exhaustive search for the given invariants.
pub fn check(m: &LockModel, invs: &[Invariant]) -> SearchResult {
    check_budgets(m, invs, true, None)
}

/// Search for the given invariants, a stored state covering one with less
/// budget left when `subsume_budgets`, within `max_states` if given.
pub fn check_budgets(
    m: &LockModel,
    invs: &[Invariant],
    subsume_budgets: bool,
    max_states: Option<u64>,
) -> SearchResult {
    search(
        m,
        &SearchOptions {
            subsume_budgets,
            invariants: invs.to_vec(),
            max_states,
            max_depth: None,
            symmetry: true,
            threads: 0,
            spill: None,
        },
    )
}

/// Asserts `inv` is violated and returns the shortest path's length.
pub fn violated(m: &LockModel, inv: Invariant) -> usize {
    let r = check(m, &[inv]);
    let path = r
        .violations
        .get(&inv)
        .unwrap_or_else(|| panic!("{} should be violated by {:?}", inv.name(), m));
    path.len()
}

/// Asserts `inv` holds and the search was exhaustive.
pub fn holds(m: &LockModel, inv: Invariant) {
    holds_each(m, &[inv]);
}

/// Asserts each of `invs` holds, from one exhaustive search of them all.
pub fn holds_each(m: &LockModel, invs: &[Invariant]) {
    let r = check(m, invs);
    for inv in invs {
        assert!(
            !r.violations.contains_key(inv),
            "{} should hold for {:?}, found a {}-step counterexample",
            inv.name(),
            m,
            r.violations[inv].len()
        );
    }
    assert!(
        r.exhaustive(),
        "the search must be exhaustive to claim {} hold",
        invs.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
    );
}

pub const ALL_SINGLE: &[FaultKind] = &[
    FaultKind::Pause,
    FaultKind::Slow,
    FaultKind::Loss,
    FaultKind::Delay,
    FaultKind::Crash,
];

/// The discrete worlds along a symbolic path (the initial one first), each
/// step followed through the zone engine with the answers it took.
pub fn worlds(
    m: &LockModel,
    path: &[locklab_models::search::PathStep],
) -> Vec<locklab_models::World> {
    let mut s = m.zinit();
    let mut out = vec![s.world.clone()];
    for (i, (a, answers)) in path.iter().enumerate() {
        s = m
            .follow(&s, a, answers)
            .unwrap_or_else(|| panic!("step {} ({a:?}) cannot be followed", i + 1));
        out.push(s.world.clone());
    }
    out
}

/// The actions of a symbolic path.
pub fn acts(path: &[locklab_models::search::PathStep]) -> Vec<locklab_models::Action> {
    path.iter().map(|(a, _)| *a).collect()
}

/// Every property of `m`, searched exhaustively with and without symmetry
/// reduction.
pub fn with_and_without_symmetry(m: &LockModel) -> (SearchResult, SearchResult) {
    let run = |symmetry| {
        search(
            m,
            &SearchOptions {
                subsume_budgets: true,
                invariants: m.properties.clone(),
                max_states: None,
                max_depth: None,
                symmetry,
                threads: 0,
                spill: None,
            },
        )
    };
    (run(true), run(false))
}

/// Each violated invariant with its shortest counterexample's length.
pub fn lengths(r: &SearchResult) -> Vec<(Invariant, usize)> {
    r.violations.iter().map(|(i, p)| (*i, p.len())).collect()
}
