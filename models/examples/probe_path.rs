//! Debug aid: applies a path described on the command line and prints the
//! enabled actions after each step. Usage: probe_path PROTOCOL FAULTS STEP...
//! where STEP is an index into the enabled actions.
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
    let mut w = m.init();
    let mut acts = Vec::new();
    for idx in &args[3..] {
        m.enabled(&w, &mut acts);
        let a = acts[idx.parse::<usize>().unwrap()];
        println!("TAKE {a:?}");
        w = m.after(&w, &a);
    }
    m.enabled(&w, &mut acts);
    println!("{w:#?}");
    for (i, a) in acts.iter().enumerate() {
        println!("[{i}] {a:?}");
    }
}
