//! locklab: a deterministic simulator and model checker for distributed-lock
//! protocols. This binary is a thin layer over the `locklab-models` and
//! `locklab-traces` libraries.

/// The search allocates and frees many small blocks (packed states, zones,
/// successor lists) from several threads; mimalloc's per-thread free
/// lists serve that pattern with far less time in the allocator than
/// glibc's malloc (measured on `check redlock`: about a quarter of the
/// time was in glibc's malloc and free).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
