//! Finds a counterexample with the model and replays it on real servers:
//! `cargo run -p locklab-replay --example replay_probe -- get-del none ownership work=29.99s..30s [speed=20] [network=unordered] [out=trace.json]`
//! (a development aid until the `locklab replay` command is ported).

use locklab_models::params::Network;
use locklab_models::search::{SearchOptions, search};
use locklab_models::{Budgets, FaultKind, Invariant, LockModel, Params, protocols, trace};
use locklab_replay::{CoordOptions, Options, ServerOptions, replay};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: replay_probe PROTOCOL FAULTS|none INVARIANT [key=value...]");
        std::process::exit(2);
    }
    let proto = protocols::by_name(&args[1]).expect("a protocol");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    if args[2] != "none" {
        for f in args[2].split(',') {
            p.faults.set(FaultKind::from_name(f).expect("a fault"), 1);
        }
    }
    p.max_faults = None;
    let mut speed = None;
    let mut out = None;
    let mut keep_times = false;
    for kv in &args[4..] {
        let (k, v) = kv.split_once('=').expect("key=value");
        let us = |v: &str| locklab_models::units::parse(v).expect("a duration");
        let range = |v: &str| locklab_models::units::parse_range(v).expect("a range");
        match k {
            "work" => (p.work_min, p.work_max) = range(v),
            "latency" => (p.latency_min, p.latency_max) = range(v),
            "ttl" => p.ttl = us(v),
            "timeout" => p.timeout = us(v),
            "jump" => p.jump = us(v),
            "clients" => p.clients = v.parse().expect("a number"),
            "instances" => {
                p.instances = v.parse().expect("a number");
                p.quorum = p.instances / 2 + 1;
            }
            "network" => {
                p.network = if v == "unordered" {
                    Network::Unordered
                } else {
                    Network::Fifo
                }
            }
            "speed" => speed = Some(v.parse().expect("a number")),
            "out" => out = Some(v.to_string()),
            "keep-times" => keep_times = v == "yes",
            _ => panic!("unknown {k}"),
        }
    }
    let m = LockModel::new(proto, p).expect("a model");
    let inv = Invariant::from_name(&args[3]).expect("an invariant");
    let r = search(
        &m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: vec![inv],
            max_states: Some(2_000_000),
            max_depth: None,
            symmetry: true,
            threads: 1,
            spill: None,
        },
    );
    let Some(path) = r.violations.get(&inv) else {
        println!("{} holds ({} states)", inv.name(), r.states);
        return;
    };
    let t = trace::build(&m, path, inv, "check", None).expect("a trace");
    if let Some(o) = out {
        std::fs::write(&o, t.to_json()).expect("written");
    }
    locklab_replay::interrupt::install();
    let opts = Options {
        speed,
        servers: ServerOptions {
            redis_server: "redis-server".into(),
            base_port: None,
            start_timeout: Duration::from_secs(5),
            reply_timeout: Duration::from_secs(2),
        },
        coord: CoordOptions {
            etcd: "etcd".into(),
            zookeeper_jar: CoordOptions::DEFAULT_ZOOKEEPER_JAR.into(),
            java: "java".into(),
            base_port: None,
            start_timeout: Duration::from_secs(30),
            reply_timeout: Duration::from_secs(2),
        },
        until: None,
        keep_times,
    };
    match replay(&t, &opts) {
        Ok(rep) => {
            print!("{}", rep.render());
            println!("exit code {}", rep.exit_code());
        }
        Err(e) => {
            eprintln!("replay: {e}");
            std::process::exit(2);
        }
    }
}
