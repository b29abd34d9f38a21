//! `locklab simulate` and `locklab merge`: seeded runs of the model under
//! realistic timings, violation rates per acquisition with Wilson
//! intervals, sweeps, shards, and the simulator benchmark.

use crate::report::thousands;
use crate::util::{EXIT_OK, EXIT_VIOLATION, Failure, check_writable, unknown, write_atomic};
use clap::Args;
use locklab_models::units::show;
use locklab_models::{Invariant, protocols};
use locklab_sim::config::{SimConfig, applies, sweepable};
use locklab_sim::engine::{Plan, Runner};
use locklab_sim::summary::{PointResult, Shard, Summary, TraceInfo};
use locklab_sim::sweep::{Sweep, SweepError};
use locklab_sim::{simulate, violation_trace};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The options of `locklab simulate` (its help text is on `cli::Command`).
/// Every value is kept as text and read by `SimConfig::set`, the one parser
/// that sweeps and shard summaries use too.
#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct SimulateArgs {
    /// Protocol to simulate (`locklab list` shows them all)
    #[arg(value_name = "PROTOCOL")]
    pub protocol: String,

    /// Base seed: run i uses seed SEED+i (`--seed SEED+i --runs 1` replays it alone)
    #[arg(long, default_value_t = 1, help_heading = "Runs")]
    pub seed: u64,
    /// Runs (per sweep point)
    #[arg(long, default_value_t = 10_000, help_heading = "Runs")]
    pub runs: u64,
    /// Run only shard I of N (0-based), a disjoint slice of the runs; combine the shards' --json summaries with `locklab merge`
    #[arg(long, value_name = "I/N", help_heading = "Runs")]
    pub shard: Option<String>,
    /// Vary one option and chart the rates: PARAM=START..END:STEP (e.g. ttl=5s..60s:5s) or PARAM=V1,V2,...
    #[arg(long, value_name = "PARAM=RANGE", help_heading = "Runs")]
    pub sweep: Option<String>,
    /// Worker threads [default: one per core]; the result does not depend on it
    #[arg(long, value_name = "N", help_heading = "Runs")]
    pub threads: Option<usize>,
    /// How to order steps due at the same instant: random or ordered [default: random]
    #[arg(long, value_name = "POLICY", help_heading = "Runs")]
    pub scheduler: Option<String>,
    /// Stop a run at this simulated time [default: 10m]
    #[arg(long, value_name = "DURATION", help_heading = "Runs")]
    pub horizon: Option<String>,

    /// Print the summary as JSON on standard output
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Exit 1 when an invariant's rate per acquisition may exceed RATE: the
    /// upper end of its 95% interval is above it (e.g. 1e-6)
    #[arg(long, value_name = "RATE", help_heading = "Output")]
    pub fail_above: Option<f64>,
    /// Read options from this lock description (docs/audit.md)
    /// [default: ./locklab.toml when it exists]; the command line overrides it
    #[arg(long, value_name = "FILE", help_heading = "Description file")]
    pub config: Option<PathBuf>,
    /// Do not read ./locklab.toml
    #[arg(long, help_heading = "Description file")]
    pub no_config: bool,
    /// Write each invariant's first-violation trace here (for a sweep: the
    /// CSV and the SVG chart; for check shards: every counterexample)
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub out_dir: Option<PathBuf>,

    /// Clients competing for the lock [default: 2]
    #[arg(long, value_name = "N", help_heading = "World")]
    pub clients: Option<String>,
    /// Acquisitions each client makes per run, 1 to 4 [default: 4]
    #[arg(long, value_name = "N", help_heading = "World")]
    pub acquisitions: Option<String>,

    /// Lock TTL [default: 30s, the article's 30 s and Redisson's lockWatchdogTimeout]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub ttl: Option<String>,
    /// Watchdog renewal period as a fraction of the TTL [default: 1/3, Redisson]
    #[arg(
        long,
        value_name = "FRACTION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub renew_ratio: Option<String>,
    /// Client request timeout [default: 1s]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub timeout: Option<String>,
    /// Mean think time before each acquisition, exponential [default: 100ms]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub think: Option<String>,
    /// Shortest retry backoff after a failed acquisition [default: 50ms]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub backoff_min: Option<String>,
    /// Longest retry backoff (uniform between the two) [default: 250ms, as redsync]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub backoff_max: Option<String>,
    /// Critical-section work window MIN..MAX, as the checker's --work; past MAX only with --slow [default: 200ms..2s]
    #[arg(
        long,
        value_name = "RANGE",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub work: Option<String>,
    /// Median work time, log-normal, kept inside --work [default: 300ms, the article's "300 ms on average"]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub work_p50: Option<String>,
    /// 99th percentile of the work time [default: 1.5s]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub work_p99: Option<String>,
    /// One-way latency window MIN..MAX (and a replica's apply lag), as the checker's --latency; past MAX only with --delay [default: 0.2ms..5ms]
    #[arg(
        long,
        value_name = "RANGE",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub latency: Option<String>,
    /// Median one-way latency, log-normal, kept inside --latency [default: 0.5ms]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub latency_p50: Option<String>,
    /// 99th percentile of the latency [default: 2ms]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub latency_p99: Option<String>,
    /// A client's reaction to a reply, timer or end of work, uniform in 0..STEP, as the checker's --step [default: 1ms]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub step: Option<String>,

    /// Probability that a message is lost [default: 0.0001]
    #[arg(long, value_name = "P", help_heading = "Faults (rates per second)")]
    pub loss: Option<String>,
    /// Process pauses (GC, VM freeze) per second per client [default: 1]
    #[arg(long, value_name = "RATE", help_heading = "Faults (rates per second)")]
    pub pause_rate: Option<String>,
    /// Median pause, log-normal [default: 20ms]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Faults (rates per second)"
    )]
    pub pause_p50: Option<String>,
    /// 99th percentile of a pause [default: 2s]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Faults (rates per second)"
    )]
    pub pause_p99: Option<String>,
    /// Fault delay: a latency drawn past --latency's MAX holds the message back that long instead of being cut to MAX
    #[arg(long, help_heading = "Faults (rates per second)")]
    pub delay: bool,
    /// Fault slow: a work time drawn past --work's MAX runs that long instead of being cut to MAX
    #[arg(long, help_heading = "Faults (rates per second)")]
    pub slow: bool,
    /// Size of a wall-clock jump, forward or backward [default: 10s]
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Faults (rates per second)"
    )]
    pub jump: Option<String>,
    /// Clock jumps per second per server (and per client for Redlock) [default: 0.0001]
    #[arg(long, value_name = "RATE", help_heading = "Faults (rates per second)")]
    pub jump_rate: Option<String>,
    /// Client crashes per second per client [default: 0.0001]
    #[arg(long, value_name = "RATE", help_heading = "Faults (rates per second)")]
    pub crash_rate: Option<String>,
    /// Redis restarts (all data lost) per second per server [default: 0.00001]
    #[arg(long, value_name = "RATE", help_heading = "Faults (rates per second)")]
    pub restart_rate: Option<String>,
    /// Failovers per second per primary (replicated, redlock) [default: 0.00001]
    #[arg(long, value_name = "RATE", help_heading = "Faults (rates per second)")]
    pub failover_rate: Option<String>,

    /// Watchdog: stop renewing after this long [default: never]
    #[arg(long, value_name = "DURATION", help_heading = "Protocol knobs")]
    pub renew_cap: Option<String>,
    /// Watchdog bug: renew with a plain PEXPIRE, no ownership check
    #[arg(long, help_heading = "Protocol knobs")]
    pub renew_unchecked: bool,
    /// Watchdog bug: never cancel the renewal
    #[arg(long, help_heading = "Protocol knobs")]
    pub no_cancel: bool,
    /// Redlock: number of instances [default: 5]
    #[arg(long, value_name = "N", help_heading = "Protocol knobs")]
    pub instances: Option<String>,
    /// Redlock: votes needed [default: N/2+1]
    #[arg(long, value_name = "N", help_heading = "Protocol knobs")]
    pub quorum: Option<String>,
    /// Redlock: clock-drift factor in parts per million; the allowance is TTL x factor + 2 ms [default: 10000 = 0.01, as redlock-rb]
    #[arg(long, value_name = "PPM", help_heading = "Protocol knobs")]
    pub drift_factor_ppm: Option<String>,
    /// Clock-rate drift bound in parts per million: the timers each node
    /// measures may stretch or shrink by it (timing questions are answered
    /// as an exact clock reads them) [default: 0]
    #[arg(
        long,
        value_name = "PPM",
        help_heading = "Timing (durations with units: 30s, 200ms, 0.2ms)"
    )]
    pub clock_drift_ppm: Option<String>,
    /// A restarted Redis stays unavailable for a TTL (and a second) before serving
    #[arg(long, help_heading = "Protocol knobs")]
    pub delayed_restart: bool,
    /// Fencing: where the resource checks tokens (`locklab list` names them) [default: the protocol's]
    #[arg(long, value_name = "WHERE", help_heading = "Protocol knobs")]
    pub resource_check: Option<String>,
    /// Fencing: accept token >= max (ge) or token > max (gt) [default: ge]
    #[arg(long, value_name = "RULE", help_heading = "Protocol knobs")]
    pub token_rule: Option<String>,
    /// etcd 3.4: return the lock after waiting without re-checking the own key
    #[arg(long, help_heading = "Protocol knobs")]
    pub no_recheck: bool,
    /// What the critical section does to the resource: rmw, in-place,
    /// check-then-act or conditional (as for `check`) [default: rmw]
    #[arg(long, value_name = "OP", help_heading = "Resource")]
    pub resource_op: Option<String>,
    /// Units in stock at the start, for --resource-op check-then-act or conditional [default: 1]
    #[arg(long, value_name = "N", help_heading = "Resource")]
    pub stock: Option<String>,
    /// Reads carry the token too and are checked by the same form
    #[arg(long, help_heading = "Resource")]
    pub fence_reads: bool,
    /// Where the resource keeps its highest token: durable or memory [default: durable]
    #[arg(long, value_name = "WHERE", help_heading = "Resource")]
    pub token_store: Option<String>,
    /// Writers that bypass the lock and the fence (a batch job, an old client) [default: 0]
    #[arg(long, value_name = "N", help_heading = "Resource")]
    pub unfenced_writers: Option<String>,
    /// Idempotent writes: the resource absorbs a write whose operation id it already applied
    #[arg(long, help_heading = "Resource")]
    pub idempotent: bool,
    /// Resource restarts per second (a highest token kept in memory is lost;
    /// needs --token-store memory) [default: 0]
    #[arg(long, value_name = "RATE", help_heading = "Resource")]
    pub resource_restart_rate: Option<String>,
    /// Duplicate deliveries of a landed write per second per client (a retry
    /// after a lost acknowledgement) [default: 0]
    #[arg(long, value_name = "RATE", help_heading = "Resource")]
    pub duplicate_rate: Option<String>,
    /// Reconciliation after the fact (§7.5 "对账"): a reconciler compares the
    /// resource with the ledger every EVERY and flags the damage; runs that
    /// break detected_within are reported [default: none]
    #[arg(long, value_name = "EVERY", help_heading = "Resource")]
    pub reconcile: Option<String>,
    /// The bound detected_within holds the reconciler to [default: one --reconcile period + --step]
    #[arg(long, value_name = "DURATION", help_heading = "Resource")]
    pub detect_within: Option<String>,
    /// The client library, as a preset of its behaviours (as for `check`;
    /// `locklab list` shows them, docs/clients.md the sources) [default: none]
    #[arg(long, value_name = "LIBRARY", help_heading = "Protocol knobs")]
    pub client: Option<String>,
    /// Redis protocols: the transport re-sends a request that timed out, the
    /// same command on a new connection, up to N times (0 to 10), before the
    /// library sees the failure (as for `check`) [default: the preset's, else 0]
    #[arg(long, value_name = "N", help_heading = "Protocol knobs")]
    pub transport_retries: Option<String>,
    /// How the network orders messages: fifo (one TCP connection) or unordered [default: fifo]
    #[arg(long, value_name = "ORDER", help_heading = "Protocol knobs")]
    pub network: Option<String>,
}

impl SimulateArgs {
    /// The options the user set, by name, as text.
    fn given(&self) -> Vec<(&'static str, String)> {
        let text = [
            ("clients", &self.clients),
            ("acquisitions", &self.acquisitions),
            ("ttl", &self.ttl),
            ("renew-ratio", &self.renew_ratio),
            ("timeout", &self.timeout),
            ("think", &self.think),
            ("backoff-min", &self.backoff_min),
            ("backoff-max", &self.backoff_max),
            ("work", &self.work),
            ("work-p50", &self.work_p50),
            ("work-p99", &self.work_p99),
            ("latency", &self.latency),
            ("latency-p50", &self.latency_p50),
            ("latency-p99", &self.latency_p99),
            ("step", &self.step),
            ("loss", &self.loss),
            ("pause-rate", &self.pause_rate),
            ("pause-p50", &self.pause_p50),
            ("pause-p99", &self.pause_p99),
            ("jump", &self.jump),
            ("jump-rate", &self.jump_rate),
            ("crash-rate", &self.crash_rate),
            ("restart-rate", &self.restart_rate),
            ("failover-rate", &self.failover_rate),
            ("renew-cap", &self.renew_cap),
            ("instances", &self.instances),
            ("quorum", &self.quorum),
            ("drift-factor-ppm", &self.drift_factor_ppm),
            ("clock-drift-ppm", &self.clock_drift_ppm),
            ("resource-check", &self.resource_check),
            ("token-rule", &self.token_rule),
            ("resource-op", &self.resource_op),
            ("stock", &self.stock),
            ("token-store", &self.token_store),
            ("unfenced-writers", &self.unfenced_writers),
            ("resource-restart-rate", &self.resource_restart_rate),
            ("duplicate-rate", &self.duplicate_rate),
            ("reconcile", &self.reconcile),
            ("detect-within", &self.detect_within),
            ("network", &self.network),
            ("client", &self.client),
            ("transport-retries", &self.transport_retries),
            ("horizon", &self.horizon),
            ("scheduler", &self.scheduler),
        ];
        let flags = [
            ("delay", self.delay),
            ("slow", self.slow),
            ("renew-unchecked", self.renew_unchecked),
            ("no-cancel", self.no_cancel),
            ("delayed-restart", self.delayed_restart),
            ("no-recheck", self.no_recheck),
            ("fence-reads", self.fence_reads),
            ("idempotent", self.idempotent),
        ];
        text.into_iter()
            .filter_map(|(n, v)| v.clone().map(|v| (n, v)))
            .chain(
                flags
                    .into_iter()
                    .filter(|(_, on)| *on)
                    .map(|(n, _)| (n, "true".to_string())),
            )
            .collect()
    }

    /// The validated configuration.
    pub fn config(&self) -> Result<SimConfig, Failure> {
        let proto = protocols::by_name(&self.protocol)
            .ok_or_else(|| unknown("protocol", &self.protocol, &protocols::names()))?;
        let mut cfg = SimConfig::defaults(proto.name());
        for (name, v) in self.given() {
            applies(name, proto).map_err(Failure::input)?;
            cfg.set(name, &v).map_err(Failure::input)?;
        }
        cfg.validate().map_err(Failure::input)?;
        Ok(cfg)
    }
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shards' files, one per shard: the --json summaries of `locklab
    /// simulate ... --shard I/N`, or the --json files of `locklab check all
    /// --shard I/N`
    #[arg(required = true, value_name = "SUMMARY")]
    pub files: Vec<PathBuf>,
    /// Print the merged result as JSON on standard output (check shards: the
    /// reports, as `check all --json` prints them)
    #[arg(long)]
    pub json: bool,
    /// Write each invariant's first-violation trace here (for a sweep: the
    /// CSV and the SVG chart; for check shards: every counterexample)
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// The files a finished simulation writes into `--out-dir`.
fn sweep_files(dir: &Path, s: &Summary) -> Option<(PathBuf, PathBuf)> {
    let param = s.sweep.as_deref()?;
    let stem = format!("{}.sweep-{param}", s.config.protocol);
    Some((
        dir.join(format!("{stem}.csv")),
        dir.join(format!("{stem}.svg")),
    ))
}

fn trace_file(dir: &Path, s: &Summary, inv: &str, seed: u64) -> PathBuf {
    dir.join(format!("{}.{inv}.seed{seed}.json", s.config.protocol))
}

fn check_dir(dir: &Path) -> Result<(), Failure> {
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "--out-dir {}: no such directory (create it first)",
            dir.display()
        )));
    }
    check_writable(&dir.join("probe"))
}

fn threads(t: Option<usize>) -> Result<usize, Failure> {
    match t {
        Some(0) => Err(Failure::input("--threads must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// A progress bar on standard error, shown only on a terminal and only
/// once the work has taken a second.
struct Progress {
    done: AtomicU64,
    stop: AtomicBool,
    total: u64,
}

impl Progress {
    fn new(total: u64) -> Progress {
        Progress {
            done: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            total,
        }
    }

    /// Runs `work` while drawing the bar.
    fn around<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        if !std::io::stderr().is_terminal() {
            return work();
        }
        std::thread::scope(|s| {
            let bar = s.spawn(|| self.draw());
            let out = work();
            self.stop.store(true, Ordering::Relaxed);
            let _ = bar.join();
            out
        })
    }

    fn draw(&self) {
        let start = Instant::now();
        let mut shown = false;
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            let t = start.elapsed().as_secs_f64();
            if t < 1.0 {
                continue;
            }
            shown = true;
            let done = self.done.load(Ordering::Relaxed).min(self.total);
            let f = done as f64 / self.total.max(1) as f64;
            let width = 30;
            let fill = (f * width as f64) as usize;
            let eta = if done > 0 {
                format!("{:.0} s left", t / f - t)
            } else {
                String::new()
            };
            let _ = write!(
                std::io::stderr(),
                "\r[{}{}] {:>3.0}% {done}/{} runs, {t:.0} s, {eta}   ",
                "#".repeat(fill),
                ".".repeat(width - fill),
                f * 100.0,
                self.total
            );
            let _ = std::io::stderr().flush();
        }
        if shown {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(80));
        }
    }
}

/// The most runs one `simulate` takes (per sweep point).
pub const MAX_RUNS: u64 = 1_000_000_000;

pub fn run(args: &SimulateArgs) -> Result<i32, Failure> {
    if let Some(r) = args.fail_above
        && !(r.is_finite() && r >= 0.0)
    {
        return Err(Failure::input(format!(
            "--fail-above {r}: expected a rate per acquisition of 0 or more, for example 1e-6"
        )));
    }
    let summary = summarize(args)?;
    // Which invariants' rates may exceed the threshold: the upper end of
    // the interval, so a rate too small to be seen in these runs still
    // fails when the runs cannot rule it out.
    let above: Vec<String> = match args.fail_above {
        Some(limit) => summary
            .points
            .iter()
            .flat_map(|p| {
                p.invariants
                    .iter()
                    .filter(|r| r.ci_high > limit)
                    .map(|r| match &p.value {
                        Some(v) => format!("{} at {v}: up to {:.2e}", r.invariant, r.ci_high),
                        None => format!("{}: up to {:.2e}", r.invariant, r.ci_high),
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        None => Vec::new(),
    };
    let code = finish(summary, args.out_dir.as_deref(), args.json)?;
    if let Some(limit) = args.fail_above {
        if !above.is_empty() {
            note!(
                "--fail-above {limit:e}: the rate per acquisition may exceed it (upper end of the 95% interval): {}",
                above.join("; ")
            );
            return Ok(EXIT_VIOLATION);
        }
        return Ok(EXIT_OK);
    }
    Ok(code)
}

/// Runs the simulation `args` describe and returns its summary, unprinted.
pub fn summarize(args: &SimulateArgs) -> Result<Summary, Failure> {
    let cfg = args.config()?;
    if args.runs == 0 {
        return Err(Failure::input("--runs must be at least 1"));
    }
    if args.runs > MAX_RUNS {
        return Err(Failure::input(format!(
            "--runs {}: at most {MAX_RUNS} runs in one simulation",
            args.runs
        )));
    }
    if args.seed.checked_add(args.runs - 1).is_none() {
        return Err(Failure::input(format!(
            "--seed {} --runs {}: run i uses seed SEED+i, and the last seed would pass {} (the largest seed); use a seed of at most {}",
            args.seed,
            args.runs,
            u64::MAX,
            u64::MAX - (args.runs - 1)
        )));
    }
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(Failure::input)?;
    let sweep = args
        .sweep
        .as_deref()
        .map(Sweep::parse)
        .transpose()
        .map_err(|e| match e {
            SweepError::UnknownParam(p) => unknown("sweep parameter", &p, &sweepable()),
            SweepError::Syntax(m) => Failure::input(m),
        })?;
    let configs = match &sweep {
        Some(s) => s.configs(&cfg).map_err(Failure::input)?,
        None => vec![cfg.clone()],
    };
    if let Some(d) = &args.out_dir {
        if shard.is_some() {
            return Err(Failure::input(
                "--out-dir with --shard: a shard writes no files; print its summary with --json and pass --out-dir to `locklab merge`",
            ));
        }
        check_dir(d)?;
    }
    let threads = threads(args.threads)?;
    let plans = configs
        .iter()
        .map(Plan::new)
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::input)?;
    let range = shard.map_or(0..args.runs, |s| s.range(args.runs));
    let mut summary = Summary::new(
        cfg,
        args.seed,
        args.runs,
        sweep.as_ref().map(|s| s.param.clone()),
    );
    summary.shard = shard;
    let progress = Progress::new((range.end - range.start) * plans.len() as u64);
    let started = Instant::now();
    summary.points = progress.around(|| {
        plans
            .iter()
            .enumerate()
            .map(|(i, plan)| {
                let value = sweep.as_ref().map(|s| s.values[i].clone());
                simulate(
                    plan,
                    value,
                    args.seed,
                    range.clone(),
                    threads,
                    &progress.done,
                )
            })
            .collect()
    });
    let secs = started.elapsed().as_secs_f64();
    let acq: u64 = summary.points.iter().map(|p| p.acquisitions).sum();
    if std::io::stderr().is_terminal() {
        note!(
            "simulated {acq} acquisitions in {secs:.1} s ({:.0} per second, {threads} thread{})",
            acq as f64 / secs.max(1e-9),
            if threads == 1 { "" } else { "s" }
        );
    }
    Ok(summary)
}

pub fn merge(args: &MergeArgs) -> Result<i32, Failure> {
    let mut texts = Vec::new();
    for f in &args.files {
        texts.push((f.display().to_string(), crate::util::read_input(f)?));
    }
    let checks = texts
        .iter()
        .filter(|(_, t)| crate::check_shards::is_check_shard(t))
        .count();
    if checks == texts.len() {
        return crate::check_shards::merge(texts, args);
    }
    if checks > 0 {
        return Err(Failure::input(
            "merge was given check shards and simulation summaries together: merge each kind on its own",
        ));
    }
    let mut parts = Vec::new();
    for (f, text) in texts {
        let s: Summary = serde_json::from_str(&text).map_err(|e| {
            Failure::input(format!(
                "{f}: not a simulation summary ({e}); merge reads the --json output of `locklab simulate --shard` or `locklab check all --shard`"
            ))
        })?;
        s.config
            .validate()
            .map_err(|e| Failure::input(format!("{f}: bad options in the summary: {e}")))?;
        parts.push((f, s));
    }
    let summary = Summary::merge(parts).map_err(Failure::input)?;
    if let Some(d) = &args.out_dir {
        check_dir(d)?;
    }
    finish(summary, args.out_dir.as_deref(), args.json)
}

/// Rebuilds the first violations' traces (of a whole, unswept result),
/// writes the files, prints the summary; the exit code says whether
/// anything broke.
fn finish(mut s: Summary, out_dir: Option<&Path>, json: bool) -> Result<i32, Failure> {
    let mut files = Vec::new();
    if s.shard.is_none() && s.sweep.is_none() {
        let plan = Plan::new(&s.config).map_err(Failure::input)?;
        let dir_name = |seed: u64, inv: &str| out_dir.map(|d| trace_file(d, &s, inv, seed));
        let mut infos = Vec::new();
        for r in &s.points[0].invariants {
            let (Some(seed), Some(inv)) = (r.first_seed, Invariant::from_name(&r.invariant)) else {
                infos.push(None);
                continue;
            };
            let t = violation_trace(&plan, seed, inv).map_err(|e| Failure {
                code: 70,
                message: format!("internal error: {e}"),
            })?;
            let file = dir_name(seed, &r.invariant);
            infos.push(Some(TraceInfo {
                steps: t.violation_step,
                at_us: locklab_models::trace::parse_time(&t.steps[t.violation_step - 1].at_us)
                    .map(locklab_models::engine::concrete::micros)
                    .unwrap_or_default(),
                file: file.as_ref().map(|f| f.display().to_string()),
            }));
            if let Some(f) = file {
                files.push((f, t.to_json()));
            }
        }
        for (r, info) in s.points[0].invariants.iter_mut().zip(infos) {
            r.trace = info;
        }
    }
    if let Some((csv, svg)) = out_dir.and_then(|d| sweep_files(d, &s))
        && s.shard.is_none()
    {
        files.push((csv, locklab_sim::chart::csv(&s)));
        files.push((svg, locklab_sim::chart::svg(&s)));
    }
    for (f, _) in &files {
        check_writable(f)?;
    }
    for (f, text) in &files {
        write_atomic(f, text)?;
    }
    if json {
        let text = serde_json::to_string_pretty(&s).map_err(|e| Failure {
            code: 70,
            message: format!("internal error: {e}"),
        })?;
        outln!("{text}")?;
    } else {
        out!("{}", render(&s, out_dir))?;
    }
    Ok(if s.any_violation() {
        EXIT_VIOLATION
    } else {
        EXIT_OK
    })
}

fn rate(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.1e}")
    }
}

/// The command that replays one seed of this configuration alone and
/// writes its traces.
fn rerun(s: &Summary, seed: u64, out_dir: Option<&Path>) -> String {
    let mut words = vec![
        "locklab".to_string(),
        "simulate".into(),
        s.config.protocol.clone(),
    ];
    words.extend(s.config.cli_args());
    words.extend([
        "--seed".into(),
        seed.to_string(),
        "--runs".into(),
        "1".into(),
        "--out-dir".into(),
        out_dir.map_or(".".into(), |d| d.display().to_string()),
    ]);
    words.join(" ")
}

/// The summary as text: deterministic, with no timing, so a rerun or a merge
/// prints the same bytes.
pub fn render(s: &Summary, out_dir: Option<&Path>) -> String {
    use std::fmt::Write as _;
    let c = &s.config;
    let mut o = String::new();
    match &c.client {
        Some(client) => {
            let _ = writeln!(o, "locklab simulate {} --client {client}", c.protocol);
        }
        None => {
            let _ = writeln!(o, "locklab simulate {}", c.protocol);
        }
    }
    let last = s.seed.wrapping_add(s.runs - 1);
    let _ = writeln!(
        o,
        "  runs:     {} per point, seeds {} to {}; {} clients x {} acquisitions each; {} scheduler",
        thousands(s.runs),
        s.seed,
        last,
        c.clients,
        c.acquisitions,
        c.scheduler.name()
    );
    if let Some(sh) = s.shard {
        let r = sh.range(s.runs);
        let seeds = if r.is_empty() {
            "no runs (more shards than runs)".to_string()
        } else {
            format!(
                "seeds {} to {} only",
                s.seed.wrapping_add(r.start),
                s.seed.wrapping_add(r.end - 1)
            )
        };
        let _ = writeln!(
            o,
            "  shard:    {}/{}: {seeds}, a partial result; `locklab merge` the shards' --json summaries",
            sh.index, sh.count
        );
    }
    if let Some(param) = &s.sweep {
        let values: Vec<&str> = s.points.iter().filter_map(|p| p.value.as_deref()).collect();
        let _ = writeln!(
            o,
            "  sweep:    {param} = {} (the table's first column; every other option as below)",
            values.join(", ")
        );
    }
    let _ = writeln!(o, "  timing:   {}", timing_line(c));
    let _ = writeln!(o, "  faults:   {}", faults_line(c));
    let sum = |f: fn(&PointResult) -> u64| s.points.iter().map(f).sum::<u64>();
    let cut = sum(|p| p.cut);
    let _ = writeln!(
        o,
        "  totals:   {}{} acquisitions, {} steps, {} faults, {:.1} h simulated; {} run{} stopped unfinished at the {} horizon",
        if s.points.len() > 1 {
            format!("{} points; ", s.points.len())
        } else {
            String::new()
        },
        thousands(sum(|p| p.acquisitions)),
        thousands(sum(|p| p.steps)),
        thousands(sum(|p| p.faults)),
        s.points.iter().map(|p| p.simulated_us as f64).sum::<f64>() / 3.6e9,
        thousands(cut),
        if cut == 1 { "" } else { "s" },
        show(c.horizon)
    );
    let _ = writeln!(o, "  rates:    violations per acquisition, {}", s.interval);
    let _ = writeln!(o);
    let lead = s
        .sweep
        .as_deref()
        .map(|p| format!("{p:<14}"))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "  {lead}{:<17} {:<13} {:>10} {:>13}  {:<8} {:<20} first seed",
        "invariant", "category", "violations", "acquisitions", "rate", "95% interval"
    );
    for p in &s.points {
        let lead = match &s.sweep {
            Some(_) => format!("{:<14}", p.value.as_deref().unwrap_or("")),
            None => String::new(),
        };
        if s.sweep.is_some() && !std::ptr::eq(p, &s.points[0]) {
            let _ = writeln!(o);
        }
        for inv in Invariant::ALL {
            match p.invariants.iter().find(|r| r.invariant == inv.name()) {
                Some(r) => {
                    let _ = writeln!(
                        o,
                        "  {lead}{:<17} {:<13} {:>10} {:>13}  {:<8} {:<20} {}",
                        r.invariant,
                        r.category,
                        thousands(r.violations),
                        thousands(r.acquisitions),
                        rate(r.rate),
                        format!("{} .. {}", rate(r.ci_low), rate(r.ci_high)),
                        r.first_seed.map_or("-".into(), |x| x.to_string())
                    );
                }
                // Said once, under the first point.
                None if std::ptr::eq(p, &s.points[0]) && inv == Invariant::TokenMonotonic => {
                    let _ = writeln!(
                        o,
                        "  {lead}{:<17} {:<13} n/a: {} grants no fencing tokens",
                        inv.name(),
                        inv.category(),
                        c.protocol
                    );
                }
                None => {}
            }
        }
    }
    if s.shard.is_none() && s.sweep.is_none() {
        let broken: Vec<_> = s.points[0]
            .invariants
            .iter()
            .filter(|r| r.first_seed.is_some())
            .collect();
        if !broken.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(
                o,
                "  first violations (each rebuilt by replaying its run through the model, and validated):"
            );
        }
        for r in broken {
            let seed = r.first_seed.unwrap_or_default();
            let _ = write!(o, "    {:<17} seed {seed}", r.invariant);
            if let Some(t) = &r.trace {
                let _ = write!(o, ", step {} at {}", t.steps, show(t.at_us));
                match &t.file {
                    Some(f) => {
                        let _ = writeln!(o, ": {f}");
                    }
                    None => {
                        let _ = writeln!(o);
                    }
                }
            } else {
                let _ = writeln!(o);
            }
            let _ = writeln!(o, "      replay: {}", rerun(s, seed, out_dir));
        }
    }
    if s.sweep.is_some() && s.shard.is_none() {
        let _ = writeln!(o);
        match out_dir.and_then(|d| sweep_files(d, s)) {
            Some((csv, svg)) => {
                let _ = writeln!(o, "  wrote {} and {}", csv.display(), svg.display());
            }
            None => {
                let _ = writeln!(
                    o,
                    "  pass --out-dir DIR to write the table as CSV and the chart as SVG"
                );
            }
        }
        if let (Some(param), Some(p)) = (&s.sweep, s.points.iter().find(|p| p.any_violation())) {
            let seed = p.invariants.iter().filter_map(|r| r.first_seed).min();
            let mut at = s.clone();
            if let (Some(v), Some(seed)) = (&p.value, seed)
                && at.config.set(param, v).is_ok()
            {
                let _ = writeln!(
                    o,
                    "  replay a point's first violation, e.g. at {param}={v}: {}",
                    rerun(&at, seed, out_dir)
                );
            }
        }
    }
    o
}

fn timing_line(c: &SimConfig) -> String {
    let proto = c.proto().ok();
    let renew = if proto.is_some_and(|p| p.renewal() != locklab_models::protocols::Renewal::None) {
        format!(
            " (renewed every {})",
            show(c.model().map(|m| m.params.renew_every).unwrap_or_default())
        )
    } else {
        String::new()
    };
    format!(
        "ttl {}{renew}; work {}..{} (p50 {} / p99 {}); latency {}..{} (p50 {} / p99 {}); step {}; timeout {}; think {}; backoff {}..{}",
        show(c.ttl),
        show(c.work_min),
        show(c.work_max),
        show(c.work_p50),
        show(c.work_p99),
        show(c.latency_min),
        show(c.latency_max),
        show(c.latency_p50),
        show(c.latency_p99),
        show(c.step),
        show(c.timeout),
        show(c.think),
        show(c.backoff_min),
        show(c.backoff_max)
    )
}

fn faults_line(c: &SimConfig) -> String {
    use locklab_models::FaultKind;
    let Ok(p) = c.proto() else {
        return String::new();
    };
    let on = |k| c.fault_on(p, k);
    let mut v = Vec::new();
    if on(FaultKind::Pause) {
        v.push(format!(
            "pause {}/s per client (p50 {} / p99 {})",
            c.pause_rate,
            show(c.pause_p50),
            show(c.pause_p99)
        ));
    }
    if on(FaultKind::Loss) {
        v.push(format!("loss {} per message", c.loss));
    }
    if on(FaultKind::Delay) {
        v.push(format!(
            "delay: latencies drawn past {} hold the message back",
            show(c.latency_max)
        ));
    }
    if on(FaultKind::Slow) {
        v.push(format!(
            "slow: work drawn past {} runs on",
            show(c.work_max)
        ));
    }
    if on(FaultKind::ClockJump) {
        v.push(format!(
            "clock jump ±{} {}/s per {}",
            show(c.jump),
            c.jump_rate,
            if p.uses_client_clock() {
                "server and client"
            } else {
                "server"
            }
        ));
    }
    if on(FaultKind::Crash) {
        v.push(format!("crash {}/s per client", c.crash_rate));
    }
    if on(FaultKind::Restart) {
        v.push(format!(
            "restart {}/s per server{}",
            c.restart_rate,
            if c.delayed_restart { " (delayed)" } else { "" }
        ));
    }
    if on(FaultKind::Failover) {
        v.push(format!("failover {}/s per primary", c.failover_rate));
    }
    if v.is_empty() {
        "none".into()
    } else {
        v.join("; ")
    }
}

/// CPU time of the calling thread: on a shared machine, wall time would
/// count other processes' turns as ours.
#[cfg(target_os = "linux")]
fn thread_cpu_seconds() -> Option<f64> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.sec as f64 + ts.nsec as f64 * 1e-9)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_seconds() -> Option<f64> {
    None
}

/// `locklab bench --sim`: acquisitions and steps per second of one core,
/// default timings, for the protocols the issue names.
pub fn bench(runs: u64) -> Result<i32, Failure> {
    outln!(
        "{:<14} {:>8} {:>13} {:>12} {:>9} {:>16} {:>14}",
        "protocol",
        "runs",
        "acquisitions",
        "steps",
        "cpu s",
        "acquisitions/s",
        "steps/s"
    )?;
    for name in ["lua-release", "naive-del", "watchdog", "redlock"] {
        let plan = Plan::new(&SimConfig::defaults(name)).map_err(Failure::input)?;
        let mut tally = PointResult::new(&plan, None);
        let mut runner = Runner::new(&plan);
        // Warm caches and the allocator before timing.
        for i in 0..runs.div_ceil(10) {
            runner.run(u64::MAX - i, false);
        }
        let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
        for i in 0..runs {
            let r = runner.run(1 + i, false);
            tally.add(&plan, i, &r);
        }
        let secs = match (cpu, thread_cpu_seconds()) {
            (Some(a), Some(b)) => b - a,
            _ => wall.elapsed().as_secs_f64(),
        }
        .max(1e-9);
        outln!(
            "{:<14} {:>8} {:>13} {:>12} {:>9.2} {:>16.0} {:>14.0}",
            name,
            runs,
            tally.acquisitions,
            tally.steps,
            secs,
            tally.acquisitions as f64 / secs,
            tally.steps as f64 / secs
        )?;
    }
    outln!()?;
    outln!(
        "one thread, seeds 1..={runs}, default timings (`locklab simulate --help`); rates per second of"
    )?;
    outln!("the thread's CPU time (wall time on systems without a thread CPU clock)")?;
    Ok(0)
}
