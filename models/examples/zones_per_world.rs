//! Groups the zones of a Redlock search by discrete world, to see where
//! the zones come from (docs/model.md, "What the search does not finish
//! yet"): `cargo run --release -p locklab-models --example zones_per_world
//! -- redlock 3 [0.2ms..5ms]` (protocol, instances, latency), fault-free.
//! Plain breadth-first search with symmetry and inclusion, no merging.
use locklab_models::canon::Canon;
use locklab_models::engine::dbm::Dbm;
use locklab_models::{Budgets, LockModel, Params, protocols};
use std::collections::HashMap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let proto = protocols::by_name(&args[1]).expect("a protocol name");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    p.max_faults = None;
    p.instances = args[2].parse().expect("a number of instances");
    p.quorum = p.instances / 2 + 1;
    if let Some(l) = args.get(3) {
        let (a, b) = locklab_models::units::parse_range(l).expect("a latency range");
        p.latency_min = a;
        p.latency_max = b;
    }
    let m = LockModel::new(proto, p).expect("valid parameters");
    let canon = Canon::new(&m, true);
    let mut seen: HashMap<u64, Vec<Dbm>> = HashMap::new();
    let mut frontier = vec![m.zinit()];
    let mut out = Vec::new();
    let mut depth = 0;
    while !frontier.is_empty() && seen.values().map(Vec::len).sum::<usize>() < 400_000 {
        let mut next = Vec::new();
        for s in &frontier {
            m.successors(s, &mut out);
            for x in out.drain(..) {
                let (fp, zone) = canon.canonical(&x.next);
                let zones = seen.entry(fp).or_default();
                if zones.iter().any(|z| z.includes(&zone)) {
                    continue;
                }
                zones.retain(|z| !zone.includes(z));
                zones.push(zone);
                next.push(x.next);
            }
        }
        depth += 1;
        let total: usize = seen.values().map(Vec::len).sum();
        eprintln!(
            "depth {depth}: {} new, {total} zones in {} worlds",
            next.len(),
            seen.len()
        );
        frontier = next;
    }
    let mut by_size: Vec<&Vec<Dbm>> = seen.values().collect();
    by_size.sort_by_key(|zones| std::cmp::Reverse(zones.len()));
    let top: Vec<usize> = by_size.iter().take(10).map(|z| z.len()).collect();
    println!("zones in the ten most zoned worlds: {top:?}");
    // How many distinct projections on the first clocks: a key's age, ...
    for zones in by_size.iter().take(3) {
        let n = zones[0].dim();
        for keep in [2usize, 4, 6].into_iter().filter(|k| *k <= n) {
            let map: Vec<Option<usize>> = (0..keep).map(Some).collect();
            let mut distinct: Vec<String> =
                zones.iter().map(|z| z.remap(&map).to_string()).collect();
            distinct.sort();
            distinct.dedup();
            println!(
                "{} zones; on clocks x1..x{}: {} distinct",
                zones.len(),
                keep - 1,
                distinct.len()
            );
        }
    }
}
