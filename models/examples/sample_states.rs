//! Debug aid: explores a model breadth-first without symmetry and prints a
//! sample of the symbolic states (world and zone) at one depth, to see
//! what makes them differ.
use locklab_models::{Budgets, FaultKind, LockModel, Params, protocols};
use std::collections::HashSet;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let proto = protocols::by_name(&args[1]).unwrap();
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    for k in args[2].split(',') {
        p.faults.set(FaultKind::from_name(k).unwrap(), 1);
    }
    let depth: usize = args[3].parse().unwrap();
    let m = LockModel::new(proto, p).unwrap();
    let mut seen = HashSet::new();
    let mut frontier = vec![m.zinit()];
    let mut succs = Vec::new();
    for d in 0..depth {
        let mut next = Vec::new();
        for w in &frontier {
            m.successors(w, &mut succs);
            for x in succs.drain(..) {
                if seen.insert(x.next.clone()) {
                    next.push(x.next);
                }
            }
        }
        eprintln!("depth {} : {} states", d + 1, next.len());
        frontier = next;
    }
    for w in frontier.iter().step_by((frontier.len() / 8).max(1)).take(8) {
        println!("{:?}\nzone {:?}\n", w.world, w.zone);
    }
}
