//! locklab: a deterministic simulator and model checker for distributed-lock
//! protocols. This binary is a thin layer over the `locklab-models` and
//! `locklab-traces` libraries.

mod bench;
mod check;
mod cli;
mod list;
mod options;
mod report;
mod trace_cmd;
mod util;

fn main() {
    let code = cli::run();
    std::process::exit(code);
}
