//! Watchdog renewal, replication with failover, and Redlock: what the
//! search shows about them (issue "watchdog, replicated, redlock").

mod common;
use common::*;
use locklab_models::{Action, FaultKind::*, Invariant::*, trace, world::Node};

#[test]
fn watchdog_survives_slow_work_but_not_a_pause() {
    // The renewal keeps the lock alive however long the work takes ...
    holds(&model("watchdog", &[Slow]), MutualExclusion);
    // ... but a pause freezes the watchdog with the business thread.
    violated(&model("watchdog", &[Pause]), MutualExclusion);
}

#[test]
fn unchecked_renewal_extends_another_clients_lock() {
    let m = model_with("watchdog", &[Pause], |p| p.renew_unchecked = true);
    violated(&m, Ownership);
    // The checked renewal (Lua compare-and-PEXPIRE) never does.
    holds(&model("watchdog", &[Pause]), Ownership);
}

#[test]
fn a_never_cancelled_watchdog_keeps_a_crashed_owners_lock_forever() {
    let m = model_with("watchdog", &[Crash], |p| p.no_cancel = true);
    violated(&m, NoOrphanLock);
    holds(&model("watchdog", &[Crash]), NoOrphanLock);
    // A renewal cap is the article's fallback: the lock expires after it.
    let capped = model_with("watchdog", &[Crash], |p| {
        p.no_cancel = true;
        p.renew_cap = Some(6);
    });
    holds(&capped, NoOrphanLock);
}

#[test]
fn failover_alone_breaks_replicated_mutual_exclusion() {
    let m = model("replicated", &[Failover]);
    let r = check(&m, &[MutualExclusion]);
    let path = &r.violations[&MutualExclusion];
    assert!(path.iter().any(|(a, _)| matches!(a, Action::Failover { .. })));
    assert!(!path.iter().any(|(a, _)| matches!(a, Action::Pause { .. })));
    // Without failover the replica never matters to clients.
    holds(&model("replicated", &[Slow]), MutualExclusion);
}

#[test]
fn redlock_survives_a_restart_or_failover_only_when_restarts_are_delayed() {
    for k in [Restart, Failover] {
        violated(&model("redlock", &[k]), MutualExclusion);
        let delayed = model_with("redlock", &[k], |p| p.delayed_restart = true);
        holds(&delayed, MutualExclusion);
    }
}

#[test]
fn redlock_breaks_under_a_pause_after_acquiring() {
    violated(&model("redlock", &[Pause]), MutualExclusion);
    // Pausing between the validity check and the write loses an update.
    violated(&model("redlock", &[Pause]), NoLostUpdate);
}

#[test]
fn a_server_clock_jump_alone_breaks_redlock() {
    let m = model("redlock", &[ClockJump]);
    let r = check(&m, &[MutualExclusion]);
    let path = &r.violations[&MutualExclusion];
    let jump = path
        .iter()
        .find_map(|(a, _)| match a {
            Action::ClockJump { node, by } => Some((*node, *by)),
            _ => None,
        })
        .expect("the counterexample jumps a clock");
    assert!(
        matches!(jump.0, Node::Redis(_)),
        "a server's clock: {jump:?}"
    );
    assert!(jump.1 > 0, "forward: {jump:?}");
    trace::build(&m, path, MutualExclusion, "check", None).expect("replays");
}

#[test]
fn a_backward_client_clock_jump_defeats_the_validity_check() {
    // A slow critical section alone cannot lose an update: the client
    // checks its validity and abandons the write ...
    holds(&model("redlock", &[Slow]), NoLostUpdate);
    // ... unless its own wall clock jumps back and stretches the validity.
    let m = model("redlock", &[Slow, ClockJump]);
    let r = check(&m, &[NoLostUpdate]);
    let path = &r.violations[&NoLostUpdate];
    assert!(
        path.iter()
            .any(|(a, _)| matches!(a, Action::ClockJump { node: Node::Client(_), by } if *by < 0)),
        "expected a backward client clock jump in {path:?}"
    );
}

#[test]
fn redlock_never_breaks_ownership_or_orphans_a_lock() {
    holds(&model("redlock", &[Pause, Delay]), Ownership);
    holds(&model("redlock", &[Crash, Loss]), NoOrphanLock);
}

#[test]
fn instance_symmetry_keeps_lengths_and_cuts_states() {
    let m = model_with("redlock", &[Pause], |p| p.instances = 3);
    let with = check(&m, &[MutualExclusion]);
    let without = locklab_models::search::search(
        &m,
        &locklab_models::search::SearchOptions {
            invariants: vec![MutualExclusion],
            max_states: None,
            max_depth: None,
            symmetry: false,
            threads: 0,
        },
    );
    assert_eq!(
        with.violations[&MutualExclusion].len(),
        without.violations[&MutualExclusion].len()
    );
    assert!(
        with.states < without.states,
        "{} vs {}",
        with.states,
        without.states
    );
}
