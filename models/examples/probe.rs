use locklab_models::search::{SearchOptions, search};
use locklab_models::{Budgets, FaultKind, Invariant, LockModel, Params, protocols, trace};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let proto = protocols::by_name(&args[1]).unwrap();
    let mut p = Params::defaults(proto);
    let faults: Vec<&str> = if args.len() > 2 && args[2] != "none" {
        args[2].split(',').collect()
    } else {
        vec![]
    };
    p.faults = Budgets::none();
    for f in &faults {
        p.faults.set(FaultKind::from_name(f).unwrap(), 1);
    }
    p.max_faults = None;
    for kv in args.iter().skip(4) {
        let (k, v) = kv.split_once('=').unwrap();
        let us = |v: &str| locklab_models::units::parse(v).unwrap();
        match k {
            "work" => {
                let (a, b) = locklab_models::units::parse_range(v).unwrap();
                p.work_min = a;
                p.work_max = b;
            }
            "latency" => {
                let (a, b) = locklab_models::units::parse_range(v).unwrap();
                p.latency_min = a;
                p.latency_max = b;
            }
            "ttl" => {
                p.ttl = us(v);
                p.renew_every = p.ttl / 3;
                p.jump = p.ttl;
            }
            "jump" => p.jump = us(v),
            "instances" => {
                p.instances = v.parse().unwrap();
                p.quorum = p.instances / 2 + 1;
            }
            "drift" => p.drift_factor_ppm = v.parse().unwrap(),
            "clients" => p.clients = v.parse().unwrap(),
            "elapsed" => {
                p.elapsed_clock = if v == "monotonic" {
                    locklab_models::params::ElapsedClock::Monotonic
                } else {
                    locklab_models::params::ElapsedClock::Wall
                }
            }
            "rho" => p.clock_drift_ppm = v.parse().unwrap(),
            "maxfaults" => p.max_faults = Some(v.parse().unwrap()),
            _ => panic!("unknown {k}"),
        }
    }
    let m = LockModel::new(proto, p).unwrap();
    let invs: Vec<Invariant> = if args.len() > 3 && args[3] != "all" {
        args[3]
            .split(',')
            .map(|s| Invariant::from_name(s).unwrap())
            .collect()
    } else {
        m.properties.clone()
    };
    let r = if std::env::var("UNMERGED").is_ok() {
        locklab_models::search::search_unmerged
    } else {
        search
    }(
        &m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: invs.clone(),
            max_states: Some(
                std::env::var("MAXS")
                    .map(|v| v.parse().unwrap())
                    .unwrap_or(5_000_000),
            ),
            max_depth: None,
            symmetry: true,
            threads: 1,
            spill: None,
        },
    );
    println!(
        "worlds {} states {} transitions {} depth {} stop {:?} time {:.2?}",
        r.worlds, r.states, r.transitions, r.depth, r.stop, r.elapsed
    );
    for inv in &invs {
        match r.violations.get(inv) {
            None if r.exhaustive() => println!("{}: holds", inv.name()),
            None => println!("{}: unknown (search stopped: {:?})", inv.name(), r.stop),
            Some(path) => {
                println!("{}: VIOLATED in {} steps", inv.name(), path.len());
                match trace::build(&m, path, *inv, "check", None) {
                    Ok(t) => {
                        for s in &t.steps {
                            println!(
                                "  {:>3} t={:>12.6}ms {:>8} {}",
                                s.index, s.time, s.actor, s.label
                            );
                        }
                        println!("  => {}", t.violation);
                        let json = t.to_json();
                        let back: locklab_traces::Trace = serde_json::from_str(&json).unwrap();
                        match trace::validate(&back) {
                            Ok(_) => println!("  validated"),
                            Err(e) => {
                                println!("  VALIDATION FAILED: {e}");
                                let path = trace::actions(&back).unwrap();
                                let re =
                                    trace::build_timed(&m, &path, *inv, "check", None).unwrap();
                                diff(&re, &back);
                            }
                        }
                    }
                    Err(e) => println!("  trace build failed: {e}"),
                }
            }
        }
    }
}
#[allow(dead_code)]
fn diff(a: &locklab_traces::Trace, b: &locklab_traces::Trace) {
    for (x, y) in a.steps.iter().zip(b.steps.iter()) {
        if x.state != y.state {
            println!(
                "step {} differs:\n{}\n{}",
                x.index,
                serde_json::to_string(&x.state).unwrap(),
                serde_json::to_string(&y.state).unwrap()
            );
            break;
        }
    }
}
