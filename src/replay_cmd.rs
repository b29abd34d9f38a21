//! `locklab replay`: run a counterexample against real redis-server, etcd
//! or ZooKeeper processes and report whether reality conforms to the model.

use crate::util::Failure;
use locklab_replay::{CoordOptions, Error, Options, ServerOptions, interrupt, replay};
use locklab_traces::{Document, Trace};
use std::path::PathBuf;
use std::time::Duration;

/// Exit code after Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: i32 = 130;

#[derive(clap::Args, Debug)]
#[command(
    after_long_help = "Starts the servers the trace needs on 127.0.0.1 (free ports, a fresh \
empty directory each, no persistence): redis-server for the Redis protocols, a single-node etcd \
for etcd and fencing, a standalone ZooKeeper for zookeeper. It drives the trace step by step as \
every client, and prints, for every step, the reply the model predicted beside the \
reply the real server gave, and the real lock state beside the model's. Client pauses, \
crashes and lost or delayed messages are the driver's choices (a paused client sends no \
keepalive or ping, so its lease or session expires on the server's own clock); server clock \
jumps go through a small clock-shift shim preloaded into that Redis server (compiled with cc \
at run time); restarts are kill -9 and a fresh start; a failover freezes and cuts off the \
replica before the write the model loses.

Exit codes: 0 every reply and reading matched the model and the violation happened \
for real (with --until: every reply and reading matched); 1 a mismatch (or the violation \
did not happen); 2 bad input or environment (a server missing, port in use, a server not \
up in time, the driver falling behind its real-time schedule); 130 \
interrupted. Every server started is stopped in every case."
)]
pub struct ReplayArgs {
    /// A trace file, or a check report written by `locklab check --json` (`-`: standard input)
    pub file: PathBuf,
    /// From a check report, replay the trace of this invariant [default: the first violated one]
    #[arg(long, value_name = "NAME")]
    pub invariant: Option<String>,
    /// Model time runs N times as fast as real time, for the schedule and every TTL, lease and session alike (1..=10000) [default: 20 on Redis, 5 on etcd (whole-second leases), 10 on ZooKeeper]
    #[arg(long, value_name = "N")]
    pub speed: Option<u64>,
    /// Replay at the trace's own (earliest) times instead of re-timing the steps so that every server timing decision has a margin real time can reproduce
    #[arg(long)]
    pub keep_times: bool,
    /// The redis-server binary to run
    #[arg(long, value_name = "PATH", default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// The etcd binary to run (for etcd and fencing traces)
    #[arg(long, value_name = "PATH", default_value = "etcd")]
    pub etcd: PathBuf,
    /// The ZooKeeper server jar (for zookeeper traces)
    #[arg(long, value_name = "PATH", default_value = CoordOptions::DEFAULT_ZOOKEEPER_JAR)]
    pub zookeeper_jar: PathBuf,
    /// The java binary that runs ZooKeeper
    #[arg(long, value_name = "PATH", default_value = "java")]
    pub java: PathBuf,
    /// Put the servers on consecutive ports from this one [default: free ports]
    #[arg(long, value_name = "PORT")]
    pub base_port: Option<u16>,
    /// Replay only steps 1 to N (a prefix, e.g. a fault-free acquisition): conformance only, the violation is not judged
    #[arg(long, value_name = "N")]
    pub until: Option<usize>,
    /// How long a server may take to come up (and a replica to sync), in ms
    #[arg(long, value_name = "MS", default_value_t = 10000)]
    pub start_timeout_ms: u64,
}

/// The trace to replay: the only one of a trace file, or from a check
/// report the one for `invariant` (default: the first violated invariant,
/// in the report's order).
fn pick(file: &std::path::Path, invariant: Option<&str>) -> Result<Trace, Failure> {
    let text = crate::util::read_input(file)?;
    let doc = Document::parse(&text)
        .map_err(|e| Failure::input(format!("{}: {e}", crate::util::input_name(file))))?;
    let traces = doc.traces();
    let names: Vec<&str> = traces.iter().map(|t| t.invariant.as_str()).collect();
    let found = match invariant {
        Some(name) => traces.iter().find(|t| t.invariant == name),
        None => traces.first(),
    };
    if let Some(t) = found {
        return Ok((*t).clone());
    }
    Err(Failure::input(if names.is_empty() {
        format!(
            "{}: no counterexample to replay (the check found no violated invariant)",
            crate::util::input_name(file)
        )
    } else {
        format!(
            "{}: no trace for invariant '{}'; it has: {}",
            crate::util::input_name(file),
            invariant.unwrap_or_default(),
            names.join(", ")
        )
    }))
}

pub fn run(args: &ReplayArgs) -> Result<i32, Failure> {
    let trace = pick(&args.file, args.invariant.as_deref())?;
    crate::trace_cmd::verify(&trace).map_err(|e| {
        Failure::input(format!(
            "{}: the {} trace does not replay through the model: {e}",
            crate::util::input_name(&args.file),
            trace.invariant
        ))
    })?;
    let opts = Options {
        speed: args.speed,
        keep_times: args.keep_times,
        servers: ServerOptions {
            redis_server: args.redis_server.clone(),
            base_port: args.base_port,
            start_timeout: Duration::from_millis(args.start_timeout_ms),
            reply_timeout: Duration::from_secs(2),
        },
        coord: CoordOptions {
            etcd: args.etcd.clone(),
            zookeeper_jar: args.zookeeper_jar.clone(),
            java: args.java.clone(),
            base_port: args.base_port,
            start_timeout: Duration::from_millis(args.start_timeout_ms.max(1)),
            reply_timeout: Duration::from_secs(2),
        },
        until: args.until,
    };
    interrupt::install();
    match replay(&trace, &opts) {
        Ok(report) => {
            out!("{}", report.render())?;
            Ok(report.exit_code())
        }
        Err(Error::Interrupted) => Err(Failure {
            code: EXIT_INTERRUPTED,
            message: Error::Interrupted.to_string(),
        }),
        Err(e) => Err(Failure::input(format!(
            "{}: {e}",
            crate::util::input_name(&args.file)
        ))),
    }
}
