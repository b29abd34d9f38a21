//! The swarm (random-order depth-first searches, models/src/swarm.rs)
//! against the breadth-first search on small configurations: a swarm that
//! explored everything breaks exactly the invariants the breadth-first
//! search breaks, never with a shorter path than the shortest, and every
//! path it reports has real times; its result does not depend on the
//! number of threads; and a member cut short never claims "exhausted".

mod common;
use common::*;
use locklab_models::search::{Progress, SearchOptions, Stop, search};
use locklab_models::swarm::swarm;
use locklab_models::{FaultKind, Invariant, LockModel, trace};

fn opts(max_states: Option<u64>, threads: usize) -> SearchOptions {
    SearchOptions {
        subsume_budgets: true,
        invariants: Invariant::ALL.to_vec(),
        max_states,
        max_depth: None,
        symmetry: true,
        threads,
        spill: None,
    }
}

fn agrees_with_bfs(label: &str, m: &LockModel) {
    let bfs = search(m, &opts(None, 1));
    assert_eq!(
        bfs.stop,
        Stop::Exhausted,
        "{label}: the reference must be exhaustive"
    );
    let sw = swarm(m, &opts(None, 1), 7..10, &Progress::default());
    assert_eq!(
        sw.stop,
        Stop::Exhausted,
        "{label}: an unbounded member explores everything"
    );
    let broken = |r: &locklab_models::search::SearchResult| -> Vec<Invariant> {
        r.violations.keys().copied().collect()
    };
    assert_eq!(
        broken(&sw),
        broken(&bfs),
        "{label}: the same invariants break"
    );
    for (inv, path) in &sw.violations {
        assert!(
            path.len() >= bfs.violations[inv].len(),
            "{label}: {} in {} steps, shorter than the shortest ({})",
            inv.name(),
            path.len(),
            bfs.violations[inv].len()
        );
        trace::build(m, path, *inv, "check", None).unwrap_or_else(|e| {
            panic!(
                "{label}: {}: the swarm's path does not replay: {e}",
                inv.name()
            )
        });
    }
    assert!(
        !broken(&bfs).is_empty(),
        "{label}: some invariant must break to compare"
    );
    // The same members give the same result on more threads.
    let two = swarm(m, &opts(None, 2), 7..10, &Progress::default());
    assert_eq!(
        (two.states, two.transitions, two.depth, two.stop),
        (sw.states, sw.transitions, sw.depth, sw.stop),
        "{label}: 2 threads against 1"
    );
    assert_eq!(two.violations, sw.violations, "{label}: 2 threads");
}

#[test]
fn naive_del_with_pauses_and_jumps() {
    let m = model("naive-del", &[FaultKind::Pause, FaultKind::ClockJump]);
    agrees_with_bfs("naive-del --faults pause,clock-jump", &m);
}

#[test]
fn get_del_slow() {
    let m = model("get-del", &[FaultKind::Slow]);
    agrees_with_bfs("get-del --faults slow", &m);
}

#[test]
fn lua_release_with_pauses_and_jumps() {
    let m = model("lua-release", &[FaultKind::Pause, FaultKind::ClockJump]);
    agrees_with_bfs("lua-release --faults pause,clock-jump", &m);
}

#[test]
fn a_member_cut_short_is_not_exhaustive() {
    let m = model_with("redlock", &[FaultKind::Pause], |p| p.instances = 3);
    let r = swarm(&m, &opts(Some(50), 1), 1..3, &Progress::default());
    assert_eq!(r.stop, Stop::MaxStates);
    assert!(
        r.states <= 100,
        "each member stops at its bound: {}",
        r.states
    );
}
