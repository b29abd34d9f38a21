//! The Redlock client presets (docs/clients.md): each test shows, by the
//! search, a behaviour that sets one library apart from another.

mod common;
use common::*;
use locklab_models::presets::{
    ClientPreset, Decide, LockShape, LockValue, RenewalOnError, Requests,
};
use locklab_models::world::{Phase, Touch, Vote};
use locklab_models::{Action, FaultKind::*, Invariant::*, LockModel, Params};

/// Redlock on one instance (quorum 1), two clients, `faults`, following `preset`.
fn one_instance(
    preset: ClientPreset,
    faults: &[locklab_models::FaultKind],
    f: impl FnOnce(&mut Params),
) -> LockModel {
    model_with("redlock", faults, |p| {
        p.instances = 1;
        p.quorum = 1;
        preset.apply(p, "redlock");
        f(p);
    })
}

/// One instance, `preset`, a delayed OK, and a request timeout long
/// enough (60 s) for the OK to come back after the key expired.
fn late_quorum(preset: ClientPreset, validity_check: bool) -> LockModel {
    one_instance(preset, &[Delay], |p| {
        p.timeout = 60 * locklab_models::time::SEC;
        p.validity_check = validity_check;
    })
}

#[test]
fn node_redlock_enters_on_a_quorum_that_came_back_after_its_keys_expired() {
    // Kleppmann's scenario D: the votes come back after the keys have
    // expired (here the OK is held up in the network; ioredis has no
    // command timeout by default, so the client waits, `--timeout 60s`).
    // node-redlock does not check the validity left: it enters while the
    // other client holds the lock, and both write. No clock fault.
    let scenario = |validity_check| late_quorum(ClientPreset::NodeRedlock, validity_check);
    let m = scenario(false);
    let r = check(&m, &[MutualExclusion, NoLostUpdate]);
    for inv in [MutualExclusion, NoLostUpdate] {
        let path = r.violations.get(&inv).expect("broken");
        assert!(
            !path
                .iter()
                .any(|(a, _)| matches!(a, Action::ClockJump { .. })),
            "no clock fault is needed"
        );
    }
    let path = &r.violations[&MutualExclusion];
    let ws = worlds(&m, path);
    let before = &ws[ws.len() - 2];
    let enters = before
        .clients
        .iter()
        .position(|c| matches!(c.phase, Phase::Acquire(_)) && c.alive)
        .expect("the violation is a client entering");
    assert!(ws.last().unwrap().clients[enters].holds());
    // The same client with the validity check (every other preset) loses
    // no update: it refuses a late quorum, and checks again before writing.
    // (Its belief can still outlast its keys while it works:
    // `mutual_exclusion` counts a holder whose own validity has run out.)
    let checked = scenario(true);
    holds(&checked, NoLostUpdate);
}

/// Ownership under a delayed message, as `preset` behaves.
fn stale_unlock(preset: ClientPreset) -> Option<Touch> {
    let m = one_instance(preset, &[Delay], |_| {});
    let r = check(&m, &[Ownership]);
    let path = r.violations.get(&Ownership)?;
    let ws = worlds(&m, path);
    ws.last().unwrap().ghost.foreign.map(|(_, _, how)| how)
}

#[test]
fn a_value_reused_across_attempts_lets_a_stale_unlock_delete_the_live_lock() {
    // A failed attempt's compare-and-delete is held up in the network; the
    // next attempt writes the same value; the stale request deletes it.
    for preset in [
        ClientPreset::Page,
        ClientPreset::Redsync,
        ClientPreset::RedlockPy,
    ] {
        assert_eq!(
            stale_unlock(preset),
            Some(Touch::DeletedOwnCurrent),
            "{} reuses its value across retries",
            preset.name()
        );
    }
    // A value per attempt (the `redlock` gem) is immune, and so is a
    // client that does not unlock between attempts (node-redlock).
    for preset in [ClientPreset::RedlockRb, ClientPreset::NodeRedlock] {
        let m = one_instance(preset, &[Delay], |_| {});
        holds(&m, Ownership);
    }
}

/// Asserts that in `m` (one client, two acquisitions) a stale release of
/// the first acquisition deletes the second's key.
fn second_acquisition_loses_its_key(m: &LockModel) {
    let r = check(m, &[Ownership]);
    let path = r.violations.get(&Ownership).expect("ownership breaks");
    let ws = worlds(m, path);
    let last = ws.last().unwrap();
    assert_eq!(
        last.ghost.foreign.map(|f| f.2),
        Some(Touch::DeletedOwnCurrent)
    );
    assert_eq!(
        last.clients[0].round, 1,
        "the second acquisition lost its key"
    );
}

#[test]
fn a_value_per_thread_lets_a_stale_release_delete_the_next_acquisition() {
    let m = one_instance(ClientPreset::Redsync, &[Delay], |p| {
        p.value = LockValue::PerThread;
        p.acquisitions = 2;
        p.clients = 1;
    });
    second_acquisition_loses_its_key(&m);
    // One value per call: the stale release of acquisition 1 matches nothing.
    let per_call = one_instance(ClientPreset::Redsync, &[Delay], |p| {
        p.acquisitions = 2;
        p.clients = 1;
    });
    holds(&per_call, Ownership);
}

#[test]
fn a_sequential_client_has_one_request_in_flight_at_a_time() {
    let m = model_with("redlock", &[Pause], |p| {
        p.instances = 3;
        p.quorum = 2;
        ClientPreset::RedlockPy.apply(p, "redlock");
    });
    assert_eq!(m.params.requests, Requests::Sequential);
    let r = check(&m, &[NoLostUpdate]);
    let path = r.violations.get(&NoLostUpdate).expect("an update is lost");
    let ws = worlds(&m, path);
    let mut asked_one_by_one = false;
    for w in &ws {
        for c in &w.clients {
            let pending = c.votes.iter().filter(|v| **v == Vote::Pending).count();
            assert!(pending <= 1, "at most one request in flight: {:?}", c.votes);
            asked_one_by_one |= c.votes.contains(&Vote::Unsent);
        }
    }
    assert!(asked_one_by_one, "some instance waited its turn");
}

#[test]
fn redisson_waits_for_the_replica_so_a_failover_keeps_what_it_acknowledged() {
    // Without `WAIT` a failover loses an acknowledged lock (and the
    // fencing counter's last increment); Redisson's `WAIT 1` after each
    // lock script holds its answer until the replica has the write.
    let replicated = |preset: Option<ClientPreset>| {
        model_with("replicated", &[Failover], |p| {
            if let Some(c) = preset {
                c.apply(p, "replicated");
            }
        })
    };
    assert_eq!(violated(&replicated(None), MutualExclusion), 7);
    let redisson = replicated(Some(ClientPreset::Redisson));
    assert_eq!(redisson.params.wait_replicas, 1);
    holds(&redisson, MutualExclusion);
    // The same client with `--wait-replicas 0` breaks again: the wait is
    // what saves it, not the hash or the value.
    let no_wait = model_with("replicated", &[Failover], |p| {
        ClientPreset::Redisson.apply(p, "replicated");
        p.wait_replicas = 0;
    });
    violated(&no_wait, MutualExclusion);

    let fencing = |wait: u8| {
        model_with("fencing-redis", &[Failover], |p| {
            ClientPreset::Redisson.apply(p, "fencing-redis");
            p.wait_replicas = wait;
        })
    };
    let f = fencing(1);
    assert_eq!(
        f.params.lock_shape,
        LockShape::String,
        "a token script sets a string"
    );
    holds(&f, TokenMonotonic);
    assert_eq!(violated(&fencing(0), TokenMonotonic), 6);
}

#[test]
fn redisson_3_43_stops_renewing_for_good_after_one_failed_renewal() {
    // A renewal that is lost (or answered too late) times out. Redisson
    // 3.44+ retries at the next period; up to 3.43 the watchdog stops,
    // the key expires under a live holder, and another client enters.
    let watchdog = |preset: ClientPreset| {
        model_with("watchdog", &[Loss, Slow], |p| preset.apply(p, "watchdog"))
    };
    let old = watchdog(ClientPreset::Redisson343);
    assert_eq!(old.params.renewal_on_error, RenewalOnError::Stop);
    let r = check(&old, &[MutualExclusion]);
    let path = r.violations.get(&MutualExclusion).expect("3.43 breaks");
    assert!(
        path.iter().any(|(a, _)| matches!(a, Action::Drop { .. })),
        "a message is lost on the way"
    );
    holds(&watchdog(ClientPreset::Redisson), MutualExclusion);
}

#[test]
fn a_thread_value_in_a_reentrant_hash_lets_a_stale_unlock_delete_the_next_acquisition() {
    // Redisson's field is `UUID:threadId`: both acquisitions of one thread
    // write the same field. acquisition 1's unlock, held up in the
    // network, counts down acquisition 2's hold and deletes the key.
    let m = model_with("watchdog", &[Delay], |p| {
        ClientPreset::Redisson.apply(p, "watchdog");
        p.clients = 1;
        p.acquisitions = 2;
    });
    assert_eq!(m.params.lock_shape, LockShape::Hash);
    second_acquisition_loses_its_key(&m);
    // A value per acquisition (every other client) is immune.
    let per_call = model_with("watchdog", &[Delay], |p| {
        ClientPreset::Redisson.apply(p, "watchdog");
        p.clients = 1;
        p.acquisitions = 2;
        p.value = LockValue::PerCall;
    });
    holds(&per_call, Ownership);
}

#[test]
fn a_preset_is_refused_for_a_protocol_it_is_no_client_of() {
    let proto = locklab_models::protocols::by_name("watchdog").unwrap();
    let mut p = Params::defaults(proto);
    ClientPreset::Redsync.apply(&mut p, "watchdog");
    let err = LockModel::new(proto, p).expect_err("redsync is no watchdog client");
    let text = err.to_string();
    assert!(text.contains("redisson, redisson@3.43"), "{text}");
}

#[test]
fn the_rust_crate_s_unsigned_validity_wraps_and_lets_a_late_quorum_in() {
    // redlock-rs computes `ttl - drift - elapsed` in `usize`: once the
    // elapsed time passes the TTL it wraps to a huge validity and the
    // lock is granted. Its requests have no timeout (`--timeout 60s`
    // stands in for none); a delayed OK comes back after the key expired.
    let scenario = |validity_check| late_quorum(ClientPreset::RedlockRs, validity_check);
    let m = scenario(false);
    assert_eq!(m.params.requests, Requests::Sequential);
    let r = check(&m, &[NoLostUpdate]);
    let path = r.violations.get(&NoLostUpdate).expect("an update is lost");
    assert!(
        !path
            .iter()
            .any(|(a, _)| matches!(a, Action::ClockJump { .. })),
        "no clock fault is needed"
    );
    // Signed arithmetic (the check as every other checking client has it)
    // refuses the late quorum.
    holds(&scenario(true), NoLostUpdate);
}

#[test]
fn each_of_the_six_more_presets_sets_its_behaviours() {
    use locklab_models::params::ElapsedClock::{Monotonic, Wall};
    use locklab_models::presets::{Release, UnlockOnFailure};
    let redlock = |c: ClientPreset| {
        let m = one_instance(c, &[], |_| {});
        let p = m.params.clone();
        (
            p.value,
            p.unlock_on_failure,
            p.release,
            p.requests,
            p.decide,
            p.validity_check,
            p.elapsed_clock,
        )
    };
    use Requests::{Concurrent, Sequential};
    assert_eq!(
        redlock(ClientPreset::NodeRedlock4),
        (
            LockValue::PerCall,
            UnlockOnFailure::Await,
            Release::Await,
            Concurrent,
            Decide::AllReplies,
            true,
            Wall
        )
    );
    assert_eq!(
        redlock(ClientPreset::RedlockNg),
        (
            LockValue::PerCall,
            UnlockOnFailure::Await,
            Release::Await,
            Sequential,
            Decide::AllReplies,
            true,
            Wall
        )
    );
    assert_eq!(
        redlock(ClientPreset::Pottery),
        (
            LockValue::PerAttempt,
            UnlockOnFailure::Await,
            Release::Await,
            Concurrent,
            Decide::FirstYesQuorum,
            true,
            Monotonic
        )
    );
    // python-redis-lock's watchdog thread: a string key, no WAIT, a
    // renewal every 2/3 of the TTL, and the first error ends it.
    let w = model_with("watchdog", &[], |p| {
        p.ttl = 9 * locklab_models::time::SEC;
        ClientPreset::PythonRedisLock.apply(p, "watchdog");
    });
    assert_eq!(w.params.value, LockValue::PerCall);
    assert_eq!(w.params.lock_shape, LockShape::String);
    assert_eq!(w.params.wait_replicas, 0);
    assert_eq!(w.params.renewal_on_error, RenewalOnError::Stop);
    assert_eq!(w.params.renew_every, 6 * locklab_models::time::SEC);
    // Redisson keeps the watchdog's own period (TTL/3).
    let r = model_with("watchdog", &[], |p| {
        ClientPreset::Redisson.apply(p, "watchdog")
    });
    assert_eq!(r.params.renew_every, r.params.ttl / 3);
    // redis-py's Lock and python-redis-lock without auto_renewal are
    // lua-release clients; a value per acquire() call.
    for c in [ClientPreset::RedisPyLock, ClientPreset::PythonRedisLock] {
        let m = model_with("lua-release", &[], |p| {
            p.value = LockValue::PerThread;
            c.apply(p, "lua-release");
        });
        assert_eq!(m.params.value, LockValue::PerCall, "{}", c.name());
        assert!(c.fits("lua-release"));
    }
    assert!(!ClientPreset::RedisPyLock.fits("watchdog"));
    assert!(!ClientPreset::PythonRedisLock.fits("fencing-redis"));
    assert!(!ClientPreset::Redisson.fits("lua-release"));
}

#[test]
fn node_redlock_4_checks_the_validity_that_node_redlock_5_does_not() {
    // The late quorum of Kleppmann's scenario D: node-redlock 4.2.0 keeps
    // the lock only if `start + ttl - drift > Date.now()`, so it loses no
    // update where v5 does.
    holds(&late_quorum(ClientPreset::NodeRedlock4, true), NoLostUpdate);
    let m = one_instance(ClientPreset::NodeRedlock4, &[Delay], |p| {
        p.timeout = 60 * locklab_models::time::SEC;
    });
    assert!(m.params.validity_check);
    holds(&m, NoLostUpdate);
    let v5 = one_instance(ClientPreset::NodeRedlock, &[Delay], |p| {
        p.timeout = 60 * locklab_models::time::SEC;
    });
    violated(&v5, NoLostUpdate);
    // And it unlocks after a failed attempt with the value its retry
    // reuses: a held-up unlock deletes the retry's key (v5 does not unlock).
    assert_eq!(
        stale_unlock(ClientPreset::NodeRedlock4),
        Some(Touch::DeletedOwnCurrent)
    );
}

/// Two instances, both needed, a slow critical section and a 10 s clock
/// jump: only the client's own wall clock jumping back can stretch its
/// validity past the keys.
fn jumping(preset: ClientPreset, f: impl FnOnce(&mut Params)) -> LockModel {
    model_with("redlock", &[ClockJump, Slow], |p| {
        p.instances = 2;
        p.quorum = 2;
        p.jump = 10 * locklab_models::time::SEC;
        preset.apply(p, "redlock");
        f(p);
    })
}

#[test]
fn redlock_ng_measures_on_the_wall_clock_and_a_jump_back_loses_an_update() {
    // `current_time_ms()` is `time.time()`: a backward jump of the client's
    // clock stretches the validity it computed.
    let m = jumping(ClientPreset::RedlockNg, |_| {});
    let r = check(&m, &[NoLostUpdate]);
    let path = r.violations.get(&NoLostUpdate).expect("an update is lost");
    assert!(path.iter().any(|(a, _)| matches!(
        a,
        Action::ClockJump {
            node: locklab_models::world::Node::Client(_),
            ..
        }
    )));
    // The same client on a monotonic clock holds.
    holds(
        &jumping(ClientPreset::RedlockNg, |p| {
            p.elapsed_clock = locklab_models::params::ElapsedClock::Monotonic
        }),
        NoLostUpdate,
    );
}

#[test]
fn pottery_s_value_per_attempt_and_monotonic_timer_decide_two_verdicts() {
    // A uuid4 per attempt: a held-up unlock of a failed attempt matches
    // nothing the retry wrote (redlock-ng, one value per call, breaks).
    holds(
        &one_instance(ClientPreset::Pottery, &[Delay], |_| {}),
        Ownership,
    );
    assert_eq!(
        stale_unlock(ClientPreset::RedlockNg),
        Some(Touch::DeletedOwnCurrent)
    );
    assert_eq!(
        stale_unlock(ClientPreset::Pottery),
        None,
        "pottery is immune"
    );
    let per_call = one_instance(ClientPreset::Pottery, &[Delay], |p| {
        p.value = LockValue::PerCall
    });
    violated(&per_call, Ownership);
    // `ContextTimer` reads `timeit.default_timer` (monotonic): the clock
    // jump that breaks redlock-ng does not break pottery, and does once
    // its timer is the wall clock.
    holds(&jumping(ClientPreset::Pottery, |_| {}), NoLostUpdate);
    violated(
        &jumping(ClientPreset::Pottery, |p| {
            p.elapsed_clock = locklab_models::params::ElapsedClock::Wall
        }),
        NoLostUpdate,
    );
}

/// Whether one client of `preset` on three instances (quorum 2), with no
/// fault and `decide`, can believe it holds the lock while one of its
/// `SET`s is still on its way (its answer would come later): every
/// reachable symbolic state.
fn enters_with_an_answer_in_flight(preset: ClientPreset, decide: Decide) -> bool {
    use locklab_models::world::{Body, Cmd, Node};
    let m = model_with("redlock", &[], |p| {
        p.instances = 3;
        p.quorum = 2;
        p.clients = 1;
        preset.apply(p, "redlock");
        p.decide = decide;
    });
    let start = m.zinit();
    let mut seen = std::collections::HashSet::from([start.clone()]);
    let mut queue = std::collections::VecDeque::from([start]);
    let mut next = Vec::new();
    while let Some(s) = queue.pop_front() {
        let w = &s.world;
        if w.clients[0].holds()
            && w.net.iter().any(|msg| {
                msg.from == Node::Client(0) && matches!(msg.body, Body::Req(Cmd::SetNxPx { .. }))
            })
        {
            return true;
        }
        m.successors(&s, &mut next);
        for x in next.drain(..) {
            if seen.insert(x.next.clone()) {
                queue.push_back(x.next);
            }
        }
    }
    false
}

#[test]
fn pottery_decides_at_the_first_quorum_of_oks() {
    // `as_completed` hands pottery the masters' answers as they come and
    // it returns at the first majority of OKs: it can be in its critical
    // section while its third `SET` has not even reached its instance. A
    // client that decides on all replies cannot.
    assert!(enters_with_an_answer_in_flight(
        ClientPreset::Pottery,
        Decide::FirstYesQuorum
    ));
    assert!(!enters_with_an_answer_in_flight(
        ClientPreset::Pottery,
        Decide::AllReplies
    ));
}

#[test]
fn redis_py_lock_draws_a_token_per_acquire_so_a_late_release_matches_nothing() {
    // One client, two acquisitions, a held-up release of the first: the
    // second acquire() has its own uuid1 token. A token reused across
    // acquisitions (`acquire(token=...)` with a fixed one) lets the stale
    // release delete the second lock.
    let lua = |f: fn(&mut Params)| {
        model_with("lua-release", &[Delay], |p| {
            ClientPreset::RedisPyLock.apply(p, "lua-release");
            p.clients = 1;
            p.acquisitions = 2;
            f(p);
        })
    };
    holds(&lua(|_| {}), Ownership);
    second_acquisition_loses_its_key(&lua(|p| p.value = LockValue::PerThread));
}

#[test]
fn python_redis_lock_s_renewal_thread_dies_silently_and_renews_too_late_to_retry() {
    // A lost renewal, on redis-py 5.x (no transport re-sends): the
    // thread's `extend` raises and the thread ends; the holder is not told,
    // keeps working, and its key expires under it.
    let watchdog = |f: fn(&mut Params)| {
        model_with("watchdog", &[Loss, Slow], |p| {
            ClientPreset::PythonRedisLock.apply(p, "watchdog");
            p.transport_retries = 0;
            f(p);
        })
    };
    // On redis-py 8.1 (the preset's 10 re-sends) the lost renewal is sent
    // again on a new connection at its timeout, and lands in time.
    let redis_py_8 = model_with("watchdog", &[Loss, Slow], |p| {
        ClientPreset::PythonRedisLock.apply(p, "watchdog");
    });
    assert_eq!(redis_py_8.params.transport_retries, 10);
    holds(&redis_py_8, MutualExclusion);
    let m = watchdog(|_| {});
    let r = check(&m, &[MutualExclusion]);
    let path = r.violations.get(&MutualExclusion).expect("it breaks");
    assert!(
        path.iter().any(|(a, _)| matches!(a, Action::Drop { .. })),
        "a message is lost on the way"
    );
    let ws = worlds(&m, path);
    let last = ws.last().unwrap();
    assert_eq!(
        last.clients.iter().filter(|c| c.holds()).count(),
        2,
        "the first holder still believes it holds the lock"
    );
    // Retrying would not save it: the next renewal, 2/3 of the TTL later,
    // comes after the key expired. Retrying at TTL/3 does.
    violated(
        &watchdog(|p| p.renewal_on_error = RenewalOnError::Retry),
        MutualExclusion,
    );
    violated(&watchdog(|p| p.renew_every = p.ttl / 3), MutualExclusion);
    holds(
        &watchdog(|p| {
            p.renewal_on_error = RenewalOnError::Retry;
            p.renew_every = p.ttl / 3;
        }),
        MutualExclusion,
    );
}

/// The last world of the shortest path to an orphaned lock in `m`.
fn orphaned(m: &LockModel) -> locklab_models::World {
    let r = check(m, &[NoOrphanLock]);
    let path = r
        .violations
        .get(&NoOrphanLock)
        .expect("an orphan with no fault at all");
    worlds(m, path).pop().unwrap()
}

/// Redisson's watchdog lock, one acquisition per client, with `--reenter`.
fn reentrant(
    reenter: locklab_models::params::Reenter,
    preset: ClientPreset,
    faults: &[locklab_models::FaultKind],
    clients: u8,
) -> LockModel {
    model_with("watchdog", faults, |p| {
        preset.apply(p, "watchdog");
        p.reenter = reenter;
        p.clients = clients;
    })
}

#[test]
fn an_unbalanced_reentry_leaves_the_watchdog_renewing_an_orphan() {
    use locklab_models::params::Reenter;
    // Two lock() calls, one unlock(): the key keeps one hold, and the
    // renewal entry, which counts lock() calls, keeps renewing it.
    let m = reentrant(Reenter::Unbalanced, ClientPreset::Redisson, &[], 2);
    let last = orphaned(&m);
    let e = last.redis[0].lock.expect("the key is still there");
    assert_eq!(e.holds, 1);
    let owner = &last.clients[e.val.client as usize];
    assert_eq!(owner.phase, Phase::Done);
    assert!(owner.wd.is_some_and(|wd| wd.holds == 1));
    // Balanced, the same program leaves nothing behind.
    holds(
        &reentrant(Reenter::Balanced, ClientPreset::Redisson, &[], 2),
        NoOrphanLock,
    );
}

#[test]
fn a_reentry_after_a_silent_expiry_recreates_the_lock_and_the_inner_unlock_deletes_it() {
    use locklab_models::params::Reenter;
    use std::collections::{HashSet, VecDeque};
    // Redisson 3.43: a renewal lost while the holder works slowly stops
    // the watchdog for good; the key expires. The re-entry's script finds
    // no key and creates it (one hold, though the thread counts two), and
    // the inner unlock() deletes it while the thread is still inside its
    // outer critical section. Found by a search of the zone graph for a
    // path through both states (one client, so nobody else takes the key).
    let m = reentrant(
        Reenter::Balanced,
        ClientPreset::Redisson343,
        &[Loss, Slow],
        1,
    );
    let recreated = |w: &locklab_models::World| {
        w.clients[0].reentered && w.redis[0].lock.is_some_and(|e| e.holds == 1)
    };
    let deleted_under_it = |w: &locklab_models::World| {
        w.clients[0].phase == Phase::InnerRelease && w.redis[0].lock.is_none()
    };
    let mut seen: HashSet<(locklab_models::World, bool)> = HashSet::new();
    let mut queue = VecDeque::from([(m.zinit(), false)]);
    let mut succ = Vec::new();
    let mut found = false;
    while let Some((s, through)) = queue.pop_front() {
        let through = through || recreated(&s.world);
        if through && deleted_under_it(&s.world) {
            found = true;
            break;
        }
        if !seen.insert((s.world.clone(), through)) {
            continue;
        }
        m.successors(&s, &mut succ);
        for x in succ.drain(..) {
            queue.push_back((x.next, through));
        }
    }
    assert!(found, "no path re-creates the key and then deletes it");
    // With the watchdog that retries (3.44+) the key never expires under
    // the same faults, and the re-entry only counts a hold up.
    let retrying = reentrant(Reenter::Balanced, ClientPreset::Redisson, &[Loss, Slow], 2);
    holds(&retrying, MutualExclusion);
}

#[test]
fn a_task_handed_redisson_s_lock_cannot_release_it_and_the_watchdog_renews_an_orphan() {
    use locklab_models::params::Handoff;
    // Redisson's field is `UUID:threadId`: the task's unlock() comes from
    // another thread, matches nothing, and leaves the renewal entry of the
    // locking thread renewing the key.
    let m = model_with("watchdog", &[], |p| {
        ClientPreset::Redisson.apply(p, "watchdog");
        p.handoff = Handoff::Transfer;
    });
    let last = orphaned(&m);
    let e = last.redis[0].lock.expect("the key is still there");
    assert!(!e.val.task, "the key holds the locking thread's field");
    assert_eq!(last.clients[e.val.client as usize].phase, Phase::Done);
    // The same hand-off with a string value the task is given releases.
    let string = model_with("watchdog", &[], |p| p.handoff = Handoff::Transfer);
    holds(&string, NoOrphanLock);
}

#[test]
fn a_redlock_client_believes_only_while_its_own_clock_says_its_validity_lasts() {
    // A pause in the critical section (Kleppmann): the keys expire and the
    // other client wins them. Read on its own clock, the paused client's
    // validity ended before its keys did, so the two beliefs never
    // overlap; what breaks is the write after its last check, past its
    // validity, and the update it loses.
    let m = one_instance(ClientPreset::Page, &[Pause], |_| {});
    let r = check(&m, &[MutualExclusion, WithinValidity, NoLostUpdate]);
    assert!(
        r.exhaustive(),
        "mutual_exclusion holds only after every state"
    );
    assert!(!r.violations.contains_key(&MutualExclusion));
    assert!(r.acquired, "mutual_exclusion was exercised");
    let late = &r.violations[&WithinValidity];
    let ws = worlds(&m, late);
    let last = ws.last().expect("a last world");
    let c = last.ghost.late_write.expect("the ghost names the writer") as usize;
    assert!(
        acts(late)
            .iter()
            .any(|a| matches!(a, Action::Pause { client } if *client as usize == c)),
        "the late writer was paused"
    );
    assert!(r.violations.contains_key(&NoLostUpdate));

    // Without the check the client has no reading of its validity: it
    // believes for as long as it is in its critical section, and the
    // pause breaks mutual_exclusion; within_validity says nothing of it.
    let blind = one_instance(ClientPreset::Page, &[Pause], |p| p.validity_check = false);
    violated(&blind, MutualExclusion);
    assert!(!WithinValidity.applies(&blind));
}

#[test]
fn a_backward_clock_jump_keeps_a_validity_alive_after_its_keys_died() {
    // The clock-jump counterexample of mutual_exclusion ends at a moment
    // when both clients are within their validity by their own clocks:
    // the trace builder solves for it and the replayed state shows it.
    let m = one_instance(ClientPreset::Page, &[ClockJump], |_| {});
    let r = check(&m, &[MutualExclusion]);
    let path = &r.violations[&MutualExclusion];
    let t = locklab_models::trace::build(&m, path, MutualExclusion, "check", None)
        .expect("the trace replays");
    assert_eq!(t.violation_step, t.steps.len());
    let (m2, s) = locklab_models::trace::validate(&t).expect("validates");
    assert!(!MutualExclusion.holds_at(&m2, &s));
    // Both believers read their T1 clock below the validity's end.
    let ways = MutualExclusion.violations(&m2, &s.world);
    assert!(
        ways.iter().any(|w| w.len() == 2),
        "both clients read their validity"
    );
    for b in ways.iter().flatten() {
        assert!(s.read(b.clk, s.now) < locklab_models::engine::solve::Rational::integer(b.hi));
    }
    // The same worlds, with time run past the validity's end: no longer a
    // violation, although both clients are still in their critical
    // sections.
    let later = locklab_models::engine::concrete::CState {
        now: s.now + locklab_models::engine::solve::Rational::integer(m2.params.ttl),
        ..s.clone()
    };
    assert!(MutualExclusion.holds_at(&m2, &later));
}
