//! How a protocol's default search grows, level by level: the zones stored
//! and the discrete worlds they belong to, from searches bounded at each
//! depth (the search the `check` command runs: merging, symmetry, budget
//! subsumption, one thread). Which of the two grows says where a reduction
//! must bite (docs/model.md, "Partial-order reduction"): `cargo run
//! --release -p locklab-models --example worlds_per_level -- redlock 6 10`
//! (protocol, first and last depth).
use locklab_models::search::{SearchOptions, search};
use locklab_models::{LockModel, Params, protocols};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: worlds_per_level PROTOCOL FIRST_DEPTH LAST_DEPTH";
    let proto = protocols::by_name(args.get(1).expect(usage)).expect("a protocol name");
    let depth = |i: usize| -> u64 { args.get(i).expect(usage).parse().expect("a depth") };
    let m = LockModel::new(proto, Params::defaults(proto)).expect("valid parameters");
    for d in depth(2)..=depth(3) {
        let opts = SearchOptions {
            invariants: vec![],
            max_states: None,
            max_depth: Some(d),
            symmetry: true,
            subsume_budgets: true,
            threads: 1,
            spill: None,
        };
        let r = search(&m, &opts);
        println!(
            "depth {d}: {} zones in {} worlds, {:.1} zones a world",
            r.states,
            r.worlds,
            r.states as f64 / r.worlds.max(1) as f64
        );
    }
}
