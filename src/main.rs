//! locklab: a deterministic simulator and model checker for distributed-lock
//! protocols. This binary is a thin layer over the `locklab-models` and
//! `locklab-traces` libraries.

#[macro_use]
mod util;

mod against;
mod article;
mod audit;
mod bench;
mod bench_peers;
mod check;
mod check_shards;
mod cli;
mod clients_table;
mod config;
mod docs;
mod ladder;
mod list;
mod options;
mod replay_cmd;
mod report;
mod sim_cmd;
mod trace_cmd;
mod watch;
mod workshop;

fn main() {
    // SIGPIPE stays ignored (Rust's default): a closed pipe is a write
    // error, and `util::emit` ends the run quietly on it.
    let code = cli::run();
    std::process::exit(code);
}
