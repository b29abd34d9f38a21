//! locklab: a deterministic simulator and model checker for distributed-lock
//! protocols. This binary is a thin layer over the `locklab-models` and
//! `locklab-traces` libraries.

mod against;
mod article;
mod bench;
mod check;
mod cli;
mod docs;
mod ladder;
mod list;
mod options;
mod replay_cmd;
mod report;
mod sim_cmd;
mod trace_cmd;
mod util;

/// Die quietly on a closed pipe (`locklab list | head`), as Unix tools do,
/// instead of panicking on the failed write.
#[cfg(unix)]
fn restore_sigpipe() {
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: resetting a signal to its default disposition at start-up,
    // before any thread exists.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}

fn main() {
    restore_sigpipe();
    let code = cli::run();
    std::process::exit(code);
}
