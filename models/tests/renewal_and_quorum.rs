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
    assert!(
        path.iter()
            .any(|(a, _)| matches!(a, Action::Failover { .. }))
    );
    assert!(!path.iter().any(|(a, _)| matches!(a, Action::Pause { .. })));
    // Without failover the replica never matters to clients.
    holds(&model("replicated", &[Slow]), MutualExclusion);
}

/// Redlock with one instance (quorum 1): with 5 instances and faults the
/// zone engine does not finish in minutes yet (docs/model.md, What the search does not finish yet).
/// What these tests show depends on the client's validity check and one
/// server's expiry, not on the quorum.
fn redlock(faults: &[locklab_models::FaultKind]) -> locklab_models::LockModel {
    redlock_with(faults, |_| {})
}

fn redlock_with(
    faults: &[locklab_models::FaultKind],
    f: impl FnOnce(&mut locklab_models::Params),
) -> locklab_models::LockModel {
    model_with("redlock", faults, |p| {
        p.instances = 1;
        p.quorum = 1;
        f(p);
    })
}

#[test]
fn redlock_survives_a_restart_or_failover_only_when_restarts_are_delayed() {
    for k in [Restart, Failover] {
        violated(&redlock(&[k]), MutualExclusion);
        let delayed = redlock_with(&[k], |p| p.delayed_restart = true);
        holds(&delayed, MutualExclusion);
    }
}

#[test]
fn redlock_breaks_under_a_pause_after_acquiring() {
    // Read on its own clock, the paused holder's validity ends before its
    // keys do: the beliefs never overlap. Pausing between the validity
    // check and the write writes past it and loses an update.
    holds(&redlock(&[Pause]), MutualExclusion);
    violated(&redlock(&[Pause]), WithinValidity);
    violated(&redlock(&[Pause]), NoLostUpdate);
}

#[test]
fn a_server_clock_jump_alone_breaks_redlock() {
    let m = redlock(&[ClockJump]);
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
    holds(&redlock(&[Slow]), NoLostUpdate);
    // ... unless its own wall clock jumps back and stretches the validity.
    // Two instances, quorum 2: with one, a server's forward jump is the
    // shorter way to lose the update.
    let m = model_with("redlock", &[Slow, ClockJump], |p| {
        p.instances = 2;
        p.quorum = 2;
    });
    let r = check(&m, &[NoLostUpdate]);
    let path = &r.violations[&NoLostUpdate];
    assert!(
        path.iter()
            .any(|(a, _)| matches!(a, Action::ClockJump { node: Node::Client(_), by } if *by < 0)),
        "expected a backward client clock jump in {path:?}"
    );
}

#[test]
fn redlock_breaks_ownership_only_by_reusing_its_value_and_never_orphans_a_lock() {
    // Changed when attempts got labels: a failed attempt's delayed
    // compare-and-delete, carrying the value the retry reuses, deletes the
    // retry's key. No other client's lock is ever deleted.
    let m = redlock(&[Pause, Delay]);
    let r = check(&m, &[Ownership]);
    let path = r.violations.get(&Ownership).expect("value reuse");
    let last = worlds(&m, path).pop().unwrap();
    let (actor, owner, how) = last.ghost.foreign.expect("a touched entry");
    assert_eq!(
        (actor, how),
        (owner, locklab_models::world::Touch::DeletedOwnCurrent)
    );
    // A value per attempt: holds.
    let per_attempt = redlock_with(&[Pause, Delay], |p| {
        p.value = locklab_models::presets::LockValue::PerAttempt;
    });
    holds(&per_attempt, Ownership);
    holds(&redlock(&[Crash, Loss]), NoOrphanLock);
}

#[test]
fn instance_symmetry_keeps_lengths_and_cuts_states() {
    let m = model_with("redlock", &[Pause], |p| {
        p.instances = 2;
        p.quorum = 2;
    });
    let with = check(&m, &[NoLostUpdate]);
    let without = locklab_models::search::search(
        &m,
        &locklab_models::search::SearchOptions {
            subsume_budgets: true,
            invariants: vec![NoLostUpdate],
            max_states: None,
            max_depth: None,
            symmetry: false,
            threads: 0,
            spill: None,
        },
    );
    assert_eq!(
        with.violations[&NoLostUpdate].len(),
        without.violations[&NoLostUpdate].len()
    );
    assert!(
        with.states < without.states,
        "{} vs {}",
        with.states,
        without.states
    );
}
