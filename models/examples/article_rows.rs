//! Runs configurations like the article page's rows (`src/article.rs`) on
//! the models crate alone, to try them before the root crate builds:
//! `cargo run --release -p locklab-models --example article_rows -- PROTO FAULTS|none INV CAP|all [key=value...]`
//! keys: work, latency (ranges), ttl, jump, step, renew-cap, instances,
//! clients, knob (renew-unchecked, no-cancel, delayed-restart); MAXS env caps the states.
use locklab_models::params::{ResourceCheck, ResourceOp, TokenStore};
use locklab_models::search::{SearchOptions, search};
use locklab_models::{Budgets, FaultKind, Invariant, LockModel, Params, protocols, trace, units};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let proto = protocols::by_name(&args[1]).expect("protocol");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    if args[2] != "none" {
        for f in args[2].split(',') {
            p.faults.set(FaultKind::from_name(f).expect("fault"), 1);
        }
    }
    p.max_faults = if args[4] == "all" {
        None
    } else {
        Some(args[4].parse().unwrap())
    };
    let inv = Invariant::from_name(&args[3]).expect("invariant");
    for kv in args.iter().skip(5) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let us = |v: &str| units::parse(v).expect("duration");
        match k {
            "work" => (p.work_min, p.work_max) = units::parse_range(v).unwrap(),
            "latency" => (p.latency_min, p.latency_max) = units::parse_range(v).unwrap(),
            "ttl" => p.ttl = us(v),
            "jump" => p.jump = us(v),
            "step" => p.step = us(v),
            "renew-cap" => p.renew_cap = Some(us(v)),
            "instances" => {
                p.instances = v.parse().unwrap();
                p.quorum = p.instances / 2 + 1;
            }
            "clients" => p.clients = v.parse().unwrap(),
            "renew-unchecked" => p.renew_unchecked = true,
            "no-cancel" => p.no_cancel = true,
            "delayed-restart" => p.delayed_restart = true,
            "check" => {
                p.resource_check = match v {
                    "write" => ResourceCheck::Write,
                    "read-write" => ResourceCheck::ReadWrite,
                    "update-where" => ResourceCheck::UpdateWhere,
                    "txn-for-update" => ResourceCheck::TxnForUpdate,
                    "txn-read-committed" => ResourceCheck::TxnReadCommitted,
                    "cas" => ResourceCheck::Cas,
                    "service" => ResourceCheck::Service,
                    _ => panic!("check {v}"),
                };
            }
            "fence-reads" => p.fence_reads = true,
            "default-rule" => p.token_rule = p.resource_check.default_rule(p.fence_reads),
            "op" => {
                p.resource_op = match v {
                    "rmw" => ResourceOp::Rmw,
                    "in-place" => ResourceOp::InPlace,
                    "check-then-act" => ResourceOp::CheckThenAct,
                    "conditional" => ResourceOp::Conditional,
                    _ => panic!("op {v}"),
                }
            }
            "memory" => p.token_store = TokenStore::Memory,
            "unfenced" => p.unfenced_writers = v.parse().unwrap(),
            "idempotent" => p.idempotent = true,
            _ => panic!("unknown {k}"),
        }
    }
    let m = LockModel::new(proto, p).expect("model");
    let maxs = std::env::var("MAXS")
        .map(|v| v.parse().unwrap())
        .unwrap_or(2_000_000);
    let threads = std::env::var("THREADS")
        .map(|v| v.parse().unwrap())
        .unwrap_or(1);
    let r = search(
        &m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: vec![inv],
            max_states: Some(maxs),
            max_depth: None,
            symmetry: true,
            threads,
            spill: None,
        },
    );
    let verdict = match r.violations.get(&inv) {
        Some(path) => {
            let t = trace::build(&m, path, inv, "check", None).expect("trace");
            let back: locklab_traces::Trace = serde_json::from_str(&t.to_json()).unwrap();
            let ok = trace::validate(&back).is_ok();
            let steps: Vec<String> = t
                .steps
                .iter()
                .map(|s| format!("{:.3}ms {} {}", s.time, s.actor, s.label))
                .collect();
            format!(
                "VIOLATED {} steps valid={ok}: {}\n    {}",
                path.len(),
                t.violation,
                steps.join("\n    ")
            )
        }
        None if r.exhaustive() => "holds".into(),
        None => format!("UNFINISHED {:?}", r.stop),
    };
    println!(
        "states {} depth {} time {:.1?} => {verdict}",
        r.states, r.depth, r.elapsed
    );
}
