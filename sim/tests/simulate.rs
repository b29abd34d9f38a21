//! The simulator as a library: determinism, shards, traces, and agreement
//! with what the exhaustive checker proves.

use locklab_models::time::{MS, SEC};
use locklab_models::{Invariant, protocols, trace};
use locklab_sim::config::SimConfig;
use locklab_sim::engine::Plan;
use locklab_sim::summary::{Shard, Summary};
use locklab_sim::{simulate, violation_trace};
use std::sync::atomic::AtomicU64;

/// Pauses long enough to outlast a 30 s TTL now and then.
fn stressed(protocol: &str) -> SimConfig {
    let mut c = SimConfig::defaults(protocol);
    c.pause_p50 = 2 * SEC;
    c.pause_p99 = 60 * SEC;
    c
}

fn summary(cfg: &SimConfig, seed: u64, runs: u64, shard: Option<Shard>, threads: usize) -> Summary {
    let plan = Plan::new(cfg).unwrap();
    let range = shard.map_or(0..runs, |s| s.range(runs));
    let mut s = Summary::new(cfg.clone(), seed, runs, None);
    s.shard = shard;
    s.points = vec![simulate(
        &plan,
        None,
        seed,
        range,
        threads,
        &AtomicU64::new(0),
    )];
    s
}

fn json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).unwrap()
}

fn rate_of<'a>(s: &'a Summary, inv: &str) -> &'a locklab_sim::summary::InvariantResult {
    s.points[0]
        .invariants
        .iter()
        .find(|r| r.invariant == inv)
        .unwrap()
}

#[test]
fn the_same_seed_gives_the_same_bytes_whatever_the_thread_count() {
    let cfg = stressed("watchdog");
    let a = json(&summary(&cfg, 7, 400, None, 1));
    let b = json(&summary(&cfg, 7, 400, None, 1));
    let c = json(&summary(&cfg, 7, 400, None, 3));
    assert_eq!(a, b);
    assert_eq!(a, c);
    // And the seed matters.
    assert_ne!(
        a,
        json(&summary(&cfg, 8, 400, None, 1)).replace("\"seed\": 8", "\"seed\": 7")
    );
}

#[test]
fn shards_merge_into_exactly_the_single_machine_result() {
    let cfg = stressed("lua-release");
    let whole = summary(&cfg, 3, 500, None, 2);
    assert!(
        whole.any_violation(),
        "the stressed configuration must break something"
    );
    let parts: Vec<(String, Summary)> = (0..4)
        .map(|i| {
            let sh = Shard { index: i, count: 4 };
            (format!("shard{i}"), summary(&cfg, 3, 500, Some(sh), 1))
        })
        .collect();
    // Any order.
    let mut shuffled = parts.clone();
    shuffled.reverse();
    assert_eq!(json(&Summary::merge(shuffled).unwrap()), json(&whole));
    // Incomplete, duplicated or foreign shards are refused.
    assert!(
        Summary::merge(parts[..3].to_vec())
            .unwrap_err()
            .contains("shards missing: 3/4")
    );
    let mut dup = parts.clone();
    dup[1] = parts[0].clone();
    assert!(Summary::merge(dup).unwrap_err().contains("both shard 0/4"));
    let mut other = parts.clone();
    let mut c2 = cfg.clone();
    c2.ttl = 20 * SEC;
    other[2].1 = summary(&c2, 3, 500, Some(Shard { index: 2, count: 4 }), 1);
    assert!(
        Summary::merge(other)
            .unwrap_err()
            .contains("options differ")
    );
}

#[test]
fn a_first_violation_replays_and_its_seed_alone_reproduces_it() {
    let cfg = stressed("lua-release");
    let plan = Plan::new(&cfg).unwrap();
    let s = summary(&cfg, 1, 300, None, 1);
    let r = rate_of(&s, "mutual_exclusion");
    let seed = r.first_seed.expect("a violation in 300 stressed runs");
    let t = violation_trace(&plan, seed, Invariant::MutualExclusion).unwrap();
    assert_eq!(t.engine, "simulate");
    assert_eq!(t.seed, Some(seed));
    assert_eq!(
        t.violation_step,
        t.steps.len(),
        "the trace ends at the violation"
    );
    trace::validate(&t).unwrap();
    // The seed run alone (as `--seed S --runs 1` does) finds the same trace.
    let alone = summary(&cfg, seed, 1, None, 1);
    assert_eq!(rate_of(&alone, "mutual_exclusion").first_seed, Some(seed));
    let again = violation_trace(&plan, seed, Invariant::MutualExclusion).unwrap();
    assert_eq!(t.to_json(), again.to_json());
    // A seed without a violation says so.
    let clean =
        (1..).find(|s| summary(&cfg, *s, 1, None, 1).points[0].invariants[0].violations == 0);
    assert!(violation_trace(&plan, clean.unwrap(), Invariant::MutualExclusion).is_err());
}

#[test]
fn what_the_checker_proves_safe_never_breaks_and_what_it_breaks_does() {
    // Compare-and-delete never deletes another client's lock, and keys
    // with a TTL are never orphaned, however long the pauses.
    for p in ["lua-release", "watchdog"] {
        let mut cfg = stressed(p);
        cfg.loss = 0.01;
        cfg.crash_rate = 0.01;
        cfg.restart_rate = 0.001;
        cfg.jump_rate = 0.01;
        let s = summary(&cfg, 1, 1500, None, 2);
        for inv in ["ownership", "no_orphan_lock"] {
            assert_eq!(rate_of(&s, inv).violations, 0, "{p} {inv}");
        }
        assert!(rate_of(&s, "mutual_exclusion").violations > 0, "{p}");
    }
    // A plain DEL does delete other clients' locks after a long pause.
    let s = summary(&stressed("naive-del"), 1, 1500, None, 2);
    assert!(rate_of(&s, "ownership").violations > 0);
    // SETNX then EXPIRE leaves a lock without expiry when the client dies
    // between the two.
    let mut cfg = SimConfig::defaults("setnx-expire");
    cfg.crash_rate = 0.5;
    cfg.set("latency", "1ms..50ms").unwrap();
    cfg.latency_p50 = 5 * MS;
    cfg.latency_p99 = 50 * MS;
    let s = summary(&cfg, 1, 1500, None, 2);
    assert!(rate_of(&s, "no_orphan_lock").violations > 0);
}

#[test]
fn a_failover_loses_the_writes_replication_had_not_carried_yet() {
    // The replica applies each write within the latency window: the wider
    // it is, the more a failover finds unreplicated.
    let at = |range: &str, p50: i64, p99: i64| {
        let mut c = SimConfig::defaults("replicated");
        c.pause_rate = 0.0;
        c.failover_rate = 0.05;
        c.set("latency", range).unwrap();
        c.latency_p50 = p50;
        c.latency_p99 = p99;
        rate_of(&summary(&c, 1, 3000, None, 2), "mutual_exclusion").violations
    };
    let (fast, slow) = (
        at("0.1ms..0.2ms", 100, 200),
        at("1ms..500ms", 50 * MS, 500 * MS),
    );
    assert!(slow > 0, "a lagging replica must lose a lock on failover");
    assert!(slow > 5 * fast.max(1), "lag {fast} vs {slow}");
}

#[test]
fn without_faults_every_protocol_finishes_every_acquisition_safely() {
    for p in protocols::ALL {
        // With no lock at all, a read-modify-write loses updates with no
        // fault: that is what `no-lock` shows (models/tests/resource.rs).
        if !p.has_lock() {
            continue;
        }
        let mut cfg = SimConfig::defaults(p.name());
        for k in [
            "loss",
            "pause-rate",
            "jump-rate",
            "crash-rate",
            "restart-rate",
            "failover-rate",
        ] {
            cfg.set(k, "0").unwrap();
        }
        // Work well inside the TTL.
        cfg.work_p99 = SEC;
        let s = summary(&cfg, 1, 300, None, 2);
        let pt = &s.points[0];
        assert_eq!(pt.cut, 0, "{}", p.name());
        assert_eq!(
            pt.acquisitions,
            300 * cfg.clients as u64 * cfg.acquisitions as u64,
            "{}",
            p.name()
        );
        assert!(!s.any_violation(), "{}: {:?}", p.name(), pt.invariants);
    }
}

#[test]
fn longer_pauses_break_more_and_counts_stay_consistent() {
    let short = summary(&SimConfig::defaults("lua-release"), 1, 2000, None, 2);
    let long = summary(&stressed("lua-release"), 1, 2000, None, 2);
    let (a, b) = (
        rate_of(&short, "mutual_exclusion"),
        rate_of(&long, "mutual_exclusion"),
    );
    assert!(b.violations > 10 * a.violations.max(1), "{a:?} {b:?}");
    for s in [&short, &long] {
        let p = &s.points[0];
        for r in &p.invariants {
            assert!(r.violations <= p.runs);
            assert!(r.acquisitions <= p.acquisitions);
            assert!(r.ci_low <= r.rate && r.rate <= r.ci_high);
        }
    }
}

#[test]
fn a_fault_free_default_lua_release_run_shows_no_violation() {
    let mut cfg = SimConfig::defaults("lua-release");
    for k in [
        "loss",
        "pause-rate",
        "jump-rate",
        "crash-rate",
        "restart-rate",
        "failover-rate",
    ] {
        cfg.set(k, "0").unwrap();
    }
    let s = summary(&cfg, 1, 500, None, 2);
    let pt = &s.points[0];
    assert_eq!(pt.faults, 0);
    assert_eq!(pt.cut, 0);
    assert!(pt.acquisitions >= 500 * 8);
    assert!(!s.any_violation(), "{:?}", pt.invariants);
}

#[test]
fn the_fault_free_get_del_race_is_found_and_its_trace_validates() {
    // Article §4.2: work that ends just as the TTL does. No fault: c1's
    // GET sees its own value, the key expires, c2 sets it, c1 deletes it.
    let mut cfg = SimConfig::defaults("get-del");
    for k in [
        "loss",
        "pause-rate",
        "jump-rate",
        "crash-rate",
        "restart-rate",
        "failover-rate",
    ] {
        cfg.set(k, "0").unwrap();
    }
    cfg.set("work", "29.99s..30s").unwrap();
    cfg.set("work-p50", "29.995s").unwrap();
    cfg.set("work-p99", "30s").unwrap();
    let plan = Plan::new(&cfg).unwrap();
    let s = summary(&cfg, 1, 200, None, 2);
    assert_eq!(s.points[0].faults, 0);
    let seed = rate_of(&s, "ownership")
        .first_seed
        .expect("the race shows up in 200 runs");
    let t = violation_trace(&plan, seed, Invariant::Ownership).unwrap();
    assert_eq!(t.violation_step, t.steps.len());
    assert!(t.config.faults.is_empty());
    trace::validate(&t).unwrap();
    // Exact times: every step at a whole µs, in order.
    let times: Vec<_> = trace::actions(&t)
        .unwrap()
        .into_iter()
        .map(|(_, at)| at)
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn every_protocol_under_every_fault_stays_inside_the_model_and_its_traces_validate() {
    // Every step goes through the concrete engine, which refuses a step
    // at a time the model does not allow (the run would panic); every
    // first violation must rebuild into a trace that validates.
    for p in protocols::ALL {
        let mut cfg = stressed(p.name());
        let proto = cfg.proto().unwrap();
        for (name, v) in [
            ("loss", "0.02"),
            ("pause-rate", "2"),
            ("jump-rate", "0.05"),
            ("crash-rate", "0.02"),
            ("restart-rate", "0.02"),
            ("failover-rate", "0.02"),
            ("delay", "true"),
            ("slow", "true"),
            ("latency-p99", "20ms"),
            ("work-p99", "10s"),
        ] {
            if locklab_sim::config::applies(name, proto).is_ok() {
                cfg.set(name, v).unwrap();
            }
        }
        cfg.horizon = 120 * SEC;
        let plan = Plan::new(&cfg).unwrap();
        let s = summary(&cfg, 1, 60, None, 2);
        for r in &s.points[0].invariants {
            if let Some(seed) = r.first_seed {
                let inv = Invariant::from_name(&r.invariant).unwrap();
                let t = violation_trace(&plan, seed, inv)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", p.name(), r.invariant));
                trace::validate(&t).unwrap();
            }
        }
        assert!(s.points[0].faults > 0, "{}", p.name());
    }
}

#[test]
fn drifting_clocks_stretch_the_timers_and_every_trace_still_validates() {
    // 5 % drift: timers (backoff, timeout, renewal, a session's TTL) are
    // drawn within windows widened by it; every step still goes through
    // the concrete engine, and every first violation rebuilds into a
    // trace that records its answers and validates.
    for name in ["redlock", "watchdog", "zookeeper", "etcd"] {
        let mut cfg = stressed(name);
        cfg.set("clock-drift-ppm", "50000").unwrap();
        cfg.set("pause-rate", "1").unwrap();
        cfg.horizon = 120 * SEC;
        let plan = Plan::new(&cfg).unwrap();
        assert_eq!(plan.m.params.clock_drift_ppm, 50_000);
        let s = summary(&cfg, 7, 40, None, 2);
        assert!(s.points[0].faults > 0, "{name}");
        for r in &s.points[0].invariants {
            if let Some(seed) = r.first_seed {
                let inv = Invariant::from_name(&r.invariant).unwrap();
                let t = violation_trace(&plan, seed, inv).unwrap();
                trace::validate(&t).unwrap_or_else(|e| panic!("{name} {}: {e}", r.invariant));
            }
        }
    }
    let mut bad = SimConfig::defaults("redlock");
    bad.set("clock-drift-ppm", "200000").unwrap();
    assert!(Plan::new(&bad).is_err(), "past 10 % is refused");
}
