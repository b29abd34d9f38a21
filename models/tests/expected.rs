//! What the foundation issue says the search must show, computed by the
//! search (never looked up), for the four single-Redis protocols.

mod common;
use common::*;
use locklab_models::search::{SearchOptions, search};
use locklab_models::{FaultKind::*, Invariant, Invariant::*, protocols};

const SINGLE: [&str; 4] = ["setnx-expire", "naive-del", "get-del", "lua-release"];

#[test]
fn fault_free_runs_satisfy_every_invariant() {
    for p in SINGLE {
        let m = model(p, &[]);
        let all: Vec<Invariant> = Invariant::ALL
            .into_iter()
            .filter(|i| i.applies(&m))
            .collect();
        let r = check(&m, &all);
        assert!(
            r.violations.is_empty(),
            "{p} breaks {:?} without faults",
            r.violations.keys()
        );
        assert!(r.exhaustive(), "{p}: search not exhaustive");
        assert!(r.states > 1, "{p}: the search explored nothing");
    }
}

#[test]
fn naive_del_breaks_mutual_exclusion_under_pause_and_under_slow() {
    assert!(violated(&model("naive-del", &[Pause]), MutualExclusion) > 0);
    assert!(violated(&model("naive-del", &[Slow]), MutualExclusion) > 0);
}

#[test]
fn naive_del_deletes_another_clients_lock() {
    violated(&model("naive-del", &[Pause]), Ownership);
    violated(&model("naive-del", &[Slow]), Ownership);
}

#[test]
fn get_del_still_breaks_ownership_through_its_window() {
    // The lock changes hands between GET and DEL: a delayed DEL suffices ...
    violated(&model("get-del", &[Delay]), Ownership);
    // ... and so does a pause between the GET reply and sending DEL.
    violated(&model("get-del", &[Pause]), Ownership);
    // ... and so does a slow critical section: GET and DEL are two round
    // trips, and the key can expire between them (the tick model, which
    // ran both within one tick, said this held).
    violated(&model("get-del", &[Slow]), Ownership);
}

#[test]
fn lua_release_keeps_ownership_under_every_fault() {
    holds(&model("lua-release", ALL_SINGLE), Ownership);
}

#[test]
fn lua_release_still_breaks_mutual_exclusion_under_pause_or_slow() {
    violated(&model("lua-release", &[Pause]), MutualExclusion);
    violated(&model("lua-release", &[Slow]), MutualExclusion);
    // Without a pause or a slow critical section the TTL is never outrun.
    holds(
        &model("lua-release", &[Loss, Delay, Crash]),
        MutualExclusion,
    );
}

#[test]
fn setnx_expire_crash_between_commands_orphans_the_lock() {
    let m = model("setnx-expire", &[Crash]);
    let n = violated(&m, NoOrphanLock);
    // SETNX out, SETNX runs, crash before EXPIRE.
    assert_eq!(n, 3);
    // With the single SET NX PX command the same crash is harmless.
    holds(&model("naive-del", &[Crash]), NoOrphanLock);
}

#[test]
fn counterexamples_are_shortest() {
    // A k-step counterexample must not exist within k-1 steps.
    let cases = [
        ("naive-del", vec![Pause], MutualExclusion),
        ("naive-del", vec![Slow], Ownership),
        ("get-del", vec![Delay], Ownership),
        ("lua-release", vec![Pause], NoLostUpdate),
        ("setnx-expire", vec![Crash], NoOrphanLock),
    ];
    for (p, faults, inv) in cases {
        let m = model(p, &faults);
        let k = violated(&m, inv) as u64;
        let r = search(
            &m,
            &SearchOptions {
                subsume_budgets: true,
                invariants: vec![inv],
                max_states: None,
                max_depth: Some(k - 1),
                symmetry: true,
                threads: 0,
                spill: None,
            },
        );
        assert!(
            !r.violations.contains_key(&inv),
            "{p}: found a {}-step {} counterexample below the {k} steps reported",
            r.violations[&inv].len(),
            inv.name()
        );
        // Without symmetry reduction the shortest length is the same.
        let plain = search(
            &m,
            &SearchOptions {
                subsume_budgets: true,
                invariants: vec![inv],
                max_states: None,
                max_depth: None,
                symmetry: false,
                threads: 0,
                spill: None,
            },
        );
        assert_eq!(
            plain.violations[&inv].len() as u64,
            k,
            "{p}: symmetry changed the length"
        );
    }
}

#[test]
fn every_protocol_is_listed_once() {
    let names = protocols::names();
    for p in SINGLE {
        assert_eq!(names.iter().filter(|n| **n == p).count(), 1);
    }
}

#[test]
fn setnx_expire_orphans_its_key_when_the_setnx_answer_is_lost_though_the_owner_lives() {
    // The SETNX wins, its answer is lost, and every retry finds the
    // client's own key, which has no expiry: the owner is alive and loops.
    let m = model("setnx-expire", &[Loss]);
    let r = check(&m, &[Invariant::NoOrphanLock]);
    let path = r
        .violations
        .get(&Invariant::NoOrphanLock)
        .expect("an orphan");
    let last = worlds(&m, path).pop().unwrap();
    assert!(last.clients.iter().all(|c| c.alive), "nobody crashed");
    assert!(
        Invariant::NoOrphanLock
            .explain(&m, &last)
            .contains("is alive but took its own key for someone else's"),
        "{}",
        Invariant::NoOrphanLock.explain(&m, &last)
    );
    // With no fault it holds: the answer arrives and EXPIRE follows.
    holds(&model("setnx-expire", &[]), Invariant::NoOrphanLock);
}
