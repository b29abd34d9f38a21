//! Debug aid: follows a path described on the command line through the
//! zone engine and prints the successors (step, timing answers) after each
//! step. Usage: probe_path PROTOCOL FAULTS STEP... where STEP is an index
//! into the successors listed.
use locklab_models::{Budgets, FaultKind, LockModel, Params, protocols};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let proto = protocols::by_name(&args[1]).unwrap();
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    p.max_faults = None;
    for k in args[2].split(',').filter(|s| !s.is_empty() && *s != "none") {
        p.faults.set(FaultKind::from_name(k).unwrap(), 1);
    }
    let m = LockModel::new(proto, p).unwrap();
    let mut s = m.zinit();
    let mut succs = Vec::new();
    for idx in &args[3..] {
        m.successors(&s, &mut succs);
        let x = succs[idx.parse::<usize>().unwrap()].clone();
        println!("TAKE {:?} answers {:?}", x.action, x.answers);
        s = x.next;
    }
    m.successors(&s, &mut succs);
    println!("{:#?}\nzone {:?}", s.world, s.zone);
    for (i, x) in succs.iter().enumerate() {
        println!("[{i}] {:?} answers {:?}", x.action, x.answers);
    }
}
