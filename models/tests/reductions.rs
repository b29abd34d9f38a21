//! Each reduction of the search, compared with the search without it
//! (issue: "each reduction must keep verdicts unchanged and
//! counterexamples shortest; a test must show this by comparing with the
//! reduction off").
//!
//! Folded reply arrivals (docs/model.md, "Folded reply arrivals"): a
//! Redlock client that waits for every instance reads its replies in one
//! `Gather` step, and their arrivals are no steps of their own. With the
//! reduction off (`Params::fold_replies = false`, `check --no-fold`) each
//! arrival is a step, and the client reads them in a step after the last.

mod common;
use common::*;
use locklab_models::presets::{ClientPreset, Decide};
use locklab_models::search::PathStep;
use locklab_models::world::{Chan, Node};
use locklab_models::{Action, FaultKind, Invariant, LockModel, Params};

/// Arrival steps of replies to a client (those the reduction folds).
fn reply_arrivals(path: &[PathStep]) -> usize {
    path.iter()
        .filter(|(a, _)| {
            matches!(a, Action::Deliver { msg } if matches!(msg.to, Node::Client(_)) && msg.chan == Chan::Main)
        })
        .count()
}

/// Arrivals of requests at an instance: each sends at most one reply.
fn requests_served(path: &[PathStep]) -> usize {
    path.iter()
        .filter(|(a, _)| matches!(a, Action::Deliver { msg } if matches!(msg.to, Node::Redis(_))))
        .count()
}

/// Compares the folded and the unfolded search of one configuration:
/// the same verdict for every invariant, both exhaustive, and shortest
/// counterexamples whose lengths agree up to the arrival steps folded.
///
/// Folding maps each unfolded run to a folded one that drops its reply
/// arrivals, and each folded run back to an unfolded one that adds at
/// most one arrival per reply sent. So, with L the shortest lengths:
/// L_fold ≤ L_unfold − (reply arrivals on the unfolded shortest path), and
/// L_unfold ≤ L_fold + (requests served on the folded shortest path).
/// A folded search that missed a violation, or found only a longer one,
/// breaks the first; one that invented a violation breaks the verdicts.
/// Returns how many invariants were violated.
fn compare(label: &str, f: impl Fn(&mut Params)) -> usize {
    let folded = model_with("redlock", &[], &f);
    assert!(folded.folds(), "{label}: the configuration should fold");
    let unfolded = model_with("redlock", &[], |p| {
        f(p);
        p.fold_replies = false;
    });
    assert!(!unfolded.folds());
    let invs: Vec<Invariant> = folded.properties.clone();
    let a = check(&folded, &invs);
    let b = check(&unfolded, &invs);
    assert!(
        a.exhaustive() && b.exhaustive(),
        "{label}: both searches must finish"
    );
    assert!(
        a.states < b.states,
        "{label}: folding should leave fewer states ({} against {})",
        a.states,
        b.states
    );
    let mut violated = 0;
    for inv in invs {
        match (a.violations.get(&inv), b.violations.get(&inv)) {
            (None, None) => {}
            (Some(pf), Some(pu)) => {
                violated += 1;
                assert!(
                    pf.len() <= pu.len() - reply_arrivals(pu),
                    "{label} {}: the folded counterexample ({} steps) is longer than the unfolded one without its {} reply arrivals ({} steps)",
                    inv.name(),
                    pf.len(),
                    reply_arrivals(pu),
                    pu.len()
                );
                assert!(
                    pu.len() <= pf.len() + requests_served(pf),
                    "{label} {}: the unfolded search missed a counterexample of at most {} steps (it found {})",
                    inv.name(),
                    pf.len() + requests_served(pf),
                    pu.len()
                );
            }
            (x, y) => panic!(
                "{label} {}: folded says {}, unfolded says {}",
                inv.name(),
                if x.is_some() { "violated" } else { "holds" },
                if y.is_some() { "violated" } else { "holds" }
            ),
        }
    }
    violated
}

/// The Redlock client presets that wait for every instance.
fn folding_presets() -> Vec<ClientPreset> {
    ClientPreset::ALL
        .iter()
        .copied()
        .filter(|c| c.fits("redlock"))
        .filter(|c| {
            let m: LockModel = model_with("redlock", &[], |p| c.apply(p, "redlock"));
            m.params.decide == Decide::AllReplies
        })
        .collect()
}

#[test]
fn folding_keeps_every_verdict_and_shortest_length_of_each_all_replies_preset() {
    let presets = folding_presets();
    assert!(
        presets.len() >= 5,
        "most Redlock clients wait for every instance: {presets:?}"
    );
    let mut violated = 0;
    for preset in &presets {
        for fault in FaultKind::LOCK_SIDE {
            // A delay's unbounded hold makes its unfolded search slow (up
            // to 40 s); two presets with different release paths cover it.
            if fault == FaultKind::Delay
                && !matches!(preset, ClientPreset::Page | ClientPreset::RedlockRb)
            {
                continue;
            }
            let label = format!("{} --instances 2 --faults {}", preset.name(), fault.name());
            violated += compare(&label, |p| {
                p.instances = 2;
                p.quorum = 2;
                preset.apply(p, "redlock");
                p.faults.set(fault, 1);
            });
        }
    }
    // The comparison means something only if both kinds of verdict occur.
    assert!(violated >= 10, "only {violated} violations compared");
}

#[test]
fn folding_keeps_the_quorum_lost_by_a_restart_on_three_instances() {
    let violated = compare("page --instances 3 --faults restart", |p| {
        p.instances = 3;
        p.quorum = 2;
        p.faults.set(FaultKind::Restart, 1);
    });
    assert!(violated >= 2, "mutual_exclusion and no_lost_update break");
}

/// Budget subsumption (docs/model.md, "Inclusion, breadth first, shortest
/// counterexamples"): a stored state covers a state of the same world whose
/// zone it includes when it has at least as much budget left of every
/// fault kind. Compared with the search that covers only equal budgets, on
/// every protocol with two or three fault kinds and a cap of two: the same
/// verdict for every invariant, the same shortest lengths, both
/// exhaustive, never more states, and fewer somewhere.
#[test]
fn subsuming_budgets_keeps_every_verdict_and_shortest_length() {
    use FaultKind::*;
    use locklab_models::search::Stop;
    let mut fewer = 0;
    let mut violated = 0;
    for (p, faults) in [
        ("setnx-expire", vec![Crash, Delay]),
        ("naive-del", vec![Pause, Delay, ClockJump]),
        ("get-del", vec![Slow, Delay, Loss]),
        ("lua-release", vec![Pause, Loss, Restart]),
        ("watchdog", vec![Pause, Slow, Crash]),
        ("replicated", vec![Failover, Pause]),
        ("fencing-redis", vec![Pause, Failover]),
        ("redlock", vec![Pause, Restart, ClockJump]),
        // Restart and failover of an instance pooled (one empties it as
        // the other does).
        ("redlock", vec![Restart, Failover, Pause]),
        ("fencing", vec![Crash, Pause]),
        ("zookeeper", vec![Crash, Loss]),
        ("etcd", vec![Crash, Pause]),
        ("queue", vec![Pause, Crash]),
        ("no-lock", vec![Pause, Duplicate]),
    ] {
        let m = model_with(p, &faults, |p| {
            p.max_faults = Some(2);
            if p.instances > 2 {
                p.instances = 2;
                p.quorum = 2;
            }
        });
        let run = |subsume| check_budgets(&m, &m.properties, subsume, Some(2_000_000));
        let (on, off) = (run(true), run(false));
        let label = format!("{p} {faults:?}");
        // Both finish: every state explored, or every invariant broken.
        let done = |r: &locklab_models::search::SearchResult| {
            matches!(r.stop, Stop::Exhausted | Stop::AllViolated)
        };
        assert!(done(&on) && done(&off), "{label}: both must finish");
        assert_eq!(on.stop, off.stop, "{label}");
        assert_eq!(lengths(&on), lengths(&off), "{label}");
        assert!(
            on.states <= off.states,
            "{label}: {} > {}",
            on.states,
            off.states
        );
        fewer += (on.states < off.states) as usize;
        violated += on.violations.len();
        replay_each(&m, &on, &label);
    }
    // The comparison means something only if the reduction bites and
    // violations are compared.
    assert!(
        fewer >= 5,
        "budget subsumption saved states in only {fewer} configurations"
    );
    assert!(violated >= 10, "only {violated} violations compared");
}

/// Folded heartbeats (docs/model.md, "Folded heartbeats"): once no fault
/// left can disturb a session's heartbeat, the service keeps the session
/// alive for good and the heartbeat's steps are dropped. Compared with
/// every keepalive a step (`Params::fold_heartbeats = false`, `check
/// --no-fold`) on the consensus recipes, each fault kind they suffer
/// alone, pairs of them under a cap, a crash that leaves the heartbeat
/// running, and three clients with no fault: both searches exhaustive,
/// the same verdict for every invariant, the same shortest lengths, and
/// every folded counterexample replayed and validated with its times.
///
/// Folding maps each unfolded run to a folded one without the heartbeat
/// steps after the fold, so L_fold ≤ L_unfold; every folded run is an
/// unfolded one with keepalives added, so a fold never invents a
/// violation. Equal lengths are what these configurations give.
#[test]
fn folding_heartbeats_keeps_every_verdict_and_shortest_length() {
    use FaultKind::*;
    use locklab_models::params::CrashKind;
    let mut fewer = 0;
    let mut violated = 0;
    type Tweak = fn(&mut Params);
    let plain: Tweak = |_| {};
    let thread_crash: Tweak = |p| p.crash = CrashKind::Thread;
    let three: Tweak = |p| {
        p.clients = 3;
        p.retry_max = Some(locklab_models::time::SEC);
    };
    let twice: Tweak = |p| p.acquisitions = 2;
    let mut configs: Vec<(&str, Vec<FaultKind>, Option<u8>, Tweak)> = Vec::new();
    for proto in ["fencing", "zookeeper", "etcd"] {
        for k in [Pause, Slow, Loss, Delay, Crash] {
            configs.push((proto, vec![k], None, plain));
        }
        configs.push((proto, vec![Crash, Loss], Some(2), plain));
        configs.push((proto, vec![Pause, Slow], Some(2), plain));
        configs.push((proto, vec![Crash], None, thread_crash));
        configs.push((proto, vec![], None, three));
        // A kept session released, then a second acquisition on a new one.
        configs.push((proto, vec![Slow], None, twice));
    }
    configs.push(("queue", vec![Pause], None, plain));
    for (proto, faults, cap, tweak) in configs {
        let folded = model_with(proto, &faults, |p| {
            p.max_faults = cap;
            tweak(p);
        });
        let unfolded = model_with(proto, &faults, |p| {
            p.max_faults = cap;
            tweak(p);
            p.fold_heartbeats = false;
        });
        let label = format!("{proto} {faults:?} cap {cap:?}");
        let invs = folded.properties.clone();
        let (a, b) = (check(&folded, &invs), check(&unfolded, &invs));
        assert!(
            a.exhaustive() && b.exhaustive(),
            "{label}: both searches must finish"
        );
        assert_eq!(lengths(&a), lengths(&b), "{label}");
        // The fold reads the budgets, so budget subsumption keeps those it
        // reads equal (`faults::BudgetOrder`): the folded search gives the
        // lengths it gives with no subsumption at all.
        let exact = check_budgets(&folded, &invs, false, None);
        assert!(exact.exhaustive(), "{label}");
        assert_eq!(lengths(&a), lengths(&exact), "{label}: budget subsumption");
        fewer += (a.states < b.states) as usize;
        violated += a.violations.len();
        replay_each(&folded, &a, &label);
    }
    assert!(
        fewer >= 15,
        "folding heartbeats saved states in only {fewer} configurations"
    );
    assert!(violated >= 10, "only {violated} violations compared");
}

/// The fold needs the heartbeat to outpace the session's expiry by its
/// bound, and a heartbeat that is cancelled with its lock: a renewal
/// period too close to the TTL, or `--no-cancel`, keeps every keepalive a
/// step, so the search is the same state for state.
#[test]
fn heartbeats_are_not_folded_where_the_fold_would_not_be_exact() {
    for (label, tweak) in [
        (
            "renew-every near the TTL",
            (|p: &mut Params| p.renew_every = p.ttl - p.latency_max) as fn(&mut Params),
        ),
        ("no-cancel", |p: &mut Params| p.no_cancel = true),
    ] {
        let folded = model_with("zookeeper", &[FaultKind::Slow], tweak);
        let unfolded = model_with("zookeeper", &[FaultKind::Slow], |p| {
            tweak(p);
            p.fold_heartbeats = false;
        });
        let invs = folded.properties.clone();
        let (a, b) = (check(&folded, &invs), check(&unfolded, &invs));
        assert_eq!(
            (a.states, a.transitions),
            (b.states, b.transitions),
            "{label}"
        );
    }
    // And where it is exact, it bites.
    let folded = model_with("zookeeper", &[FaultKind::Slow], |_| {});
    let unfolded = model_with("zookeeper", &[FaultKind::Slow], |p| {
        p.fold_heartbeats = false
    });
    let invs = folded.properties.clone();
    assert!(check(&folded, &invs).states < check(&unfolded, &invs).states);
}

/// A kept session whose client releases stops being heartbeated
/// (`Session::Closing`): an entry its owner is done with, whose release is
/// still on its way, is not one "its heartbeat keeps alive". Found in
/// review: with a release that times out before it lands (`--timeout 2ms`
/// against up to 5 ms of latency) the client is done while its `Remove` is
/// in flight, and the fold used to report a `no_orphan_lock` violation in
/// 10 steps that the model without it does not have (its heartbeat is
/// cancelled at the release). The unfolded search of this configuration
/// does not finish (a timeout below the latency makes every request a
/// retry storm), so the folded verdict is checked against that argument.
#[test]
fn a_released_kept_session_is_no_longer_heartbeated() {
    use locklab_models::time::MS;
    let m = model_with("fencing", &[], |p| {
        p.ttl = 1000 * MS;
        p.work_min = 30 * MS;
        p.work_max = 50 * MS;
        p.renew_every = 20 * MS;
        p.timeout = 2 * MS;
    });
    let r = check(&m, &[Invariant::NoOrphanLock]);
    assert!(r.exhaustive(), "{} states", r.states);
    assert!(
        r.violations.is_empty(),
        "no_orphan_lock broken in {:?} steps",
        r.violations.values().map(|p| p.len()).collect::<Vec<_>>()
    );
}

/// Builds every counterexample of `r` into a trace with exact times and
/// validates it against the model.
fn replay_each(m: &LockModel, r: &locklab_models::search::SearchResult, label: &str) {
    for (inv, path) in &r.violations {
        let t = locklab_models::trace::build(m, path, *inv, "check", None)
            .unwrap_or_else(|e| panic!("{label} {}: {e}", inv.name()));
        locklab_models::trace::validate(&t)
            .unwrap_or_else(|e| panic!("{label} {}: {e}", inv.name()));
    }
}
