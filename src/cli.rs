//! Command-line structure and dispatch.

use crate::util::{EXIT_BAD_INPUT, Failure};
use clap::{Parser, Subcommand};

/// Deterministic simulator and model checker for distributed-lock protocols.
///
/// Every counterexample is a shortest path found by exhaustive
/// breadth-first search and replayed through the model before it is shown.
/// Exit codes: 0 no violation, 1 violation found, 2 bad input,
/// 3 no verdict (search incomplete: a bound was hit; or vacuous: a
/// property never put to the test).
#[derive(Parser, Debug)]
#[command(
    name = "locklab",
    version,
    propagate_version = true,
    after_help = "Start here:\n  locklab list                          protocols, fault kinds, invariants\n  locklab check redlock                 shortest counterexamples for Redlock\n  locklab check all                     the whole ladder as a matrix\n  locklab simulate watchdog --runs 100000\n  locklab trace render FILE --format svg\n  locklab replay FILE                   the counterexample on real Redis, etcd or ZooKeeper\n\nMore: README.md, docs/model.md, docs/simulation.md, docs/gallery/."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour on standard output: auto (when it is a terminal and NO_COLOR is unset or empty), always, never
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: crate::util::Color,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Explore a protocol exhaustively; print the shortest counterexample for every invariant it breaks
    ///
    /// Options may come from a lock description (--config FILE, or
    /// ./locklab.toml when it exists); an option on the command line
    /// overrides the file's.
    #[command(allow_negative_numbers = true, args_override_self = true)]
    Check(Box<crate::check::CheckArgs>),
    /// The pre-launch review of a described lock: the exhaustive check with the smallest fault
    /// sets, the simulator's rates, the fixes that block each counterexample (each confirmed by
    /// its own check), and the article's §9.2 checklist (docs/audit.md).
    /// Exit codes as check: 0 every invariant holds, 1 one is broken, 2 bad input, 3 no verdict;
    /// with --expect, 0 when every verdict is as in the baseline and 1 when one changed
    Audit(crate::audit::AuditArgs),
    /// Write a commented starter lock description (default ./locklab.toml) for `audit`, `check` and `simulate`
    Init(InitArgs),
    /// List protocols, fault kinds and invariants
    List(crate::list::ListArgs),
    /// Step through a protocol's zone graph in stateright's web Explorer (on 127.0.0.1):
    /// each state is a world with the zone of its clock values (µs), each step an action
    /// with the answers its timing questions took (needs the `explore` feature, on by default)
    #[command(allow_negative_numbers = true)]
    Explore(Box<ExploreArgs>),
    /// Read trace files: render, explain, validate, or run a schedule against another protocol
    #[command(subcommand)]
    Trace(crate::trace_cmd::TraceCommand),
    /// Measure the search (states, states/s, memory per state), or with --sim the simulator (acquisitions/s)
    Bench(crate::bench::BenchArgs),
    /// Replay a counterexample against real Redis, etcd or ZooKeeper servers and check they conform to the model
    Replay(crate::replay_cmd::ReplayArgs),
    /// Seeded random runs with realistic timings: violation rates per acquisition
    ///
    /// Durations take units, as in `check` (30s, 200ms, 0.2ms). Rates are
    /// events per second of simulated time, per client, server or node.
    /// Run i uses seed SEED+i: the same
    /// seed and options print the same bytes on every machine and thread
    /// count. Rates come with a 95% Wilson score interval. Exit codes: 0 no
    /// violation, 1 violation found, 2 bad input. docs/simulation.md explains
    /// the options, their defaults and sharding.
    #[command(args_override_self = true)]
    Simulate(Box<crate::sim_cmd::SimulateArgs>),
    /// Combine the --json files of `simulate --shard` or `check all --shard` runs into the
    /// single-machine result. Exit codes: as the command the shards ran (0 none broken, 1 a
    /// violation found, 3 check: a search incomplete), 2 bad input or shards that do not fit
    Merge(crate::sim_cmd::MergeArgs),
    /// Generate the counterexample gallery: a page per protocol with each broken invariant's
    /// shortest counterexample (story, SVG, Mermaid, trace file) and the protocol × invariant matrix
    Docs(crate::docs::DocsArgs),
    /// The workshop (docs/workshop/): list the exercises, or run exercise N: its situation and
    /// prediction prompt, then, after Enter (or with --reveal), its commands, each verdict against
    /// the expected one and the shortest counterexample as lanes. Run from the checkout root.
    /// Exit codes: 0 every command gave what its exercise file expects, 1 one did not, 2 bad input
    Workshop(crate::workshop::WorkshopArgs),
    /// Print a shell completion script: `locklab completions bash > /etc/bash_completion.d/locklab`
    Completions {
        /// The shell to complete in
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `locklab man > locklab.1; man ./locklab.1`
    Man,
    /// Print the JSON Schema of a document locklab writes, or write all of them into a directory
    /// (`locklab schema --out docs/schemas` regenerates the committed ones)
    #[command(hide = true)]
    Schema(SchemaArgs),
}

/// The documents that have a JSON Schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaName {
    /// A trace file
    Trace,
    /// The report of `check --json`
    CheckReport,
    /// The summary of `simulate --json` and `merge`
    Simulation,
    /// The report of `audit --json`
    AuditReport,
    /// The file of `check all --shard I/N --json`
    CheckShard,
}

impl SchemaName {
    const ALL: [SchemaName; 5] = [
        SchemaName::Trace,
        SchemaName::CheckReport,
        SchemaName::Simulation,
        SchemaName::AuditReport,
        SchemaName::CheckShard,
    ];

    fn file(self) -> &'static str {
        match self {
            SchemaName::Trace => "trace.schema.json",
            SchemaName::CheckReport => "check-report.schema.json",
            SchemaName::Simulation => "simulation.schema.json",
            SchemaName::AuditReport => "audit-report.schema.json",
            SchemaName::CheckShard => "check-shard.schema.json",
        }
    }

    fn generate(self) -> String {
        match self {
            SchemaName::Trace => locklab_traces::schema::trace(),
            SchemaName::CheckReport => locklab_traces::schema::check_report(),
            SchemaName::Simulation => locklab_sim::summary::schema(),
            SchemaName::AuditReport => crate::audit::schema(),
            SchemaName::CheckShard => crate::check_shards::schema(),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct SchemaArgs {
    /// The document whose schema to print
    #[arg(value_enum, required_unless_present = "out", conflicts_with = "out")]
    pub name: Option<SchemaName>,
    /// Write every schema into DIR (trace.schema.json, check-report.schema.json, simulation.schema.json, audit-report.schema.json, check-shard.schema.json)
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

/// `locklab schema`: the schemas come from the library crates; this only
/// prints or writes them.
fn schema(args: &SchemaArgs) -> Result<i32, Failure> {
    match (&args.out, args.name) {
        (Some(dir), _) => {
            crate::util::prepare_dir("out", dir)?;
            std::fs::create_dir_all(dir).map_err(|e| {
                Failure::input(format!("--out {}: cannot create it: {e}", dir.display()))
            })?;
            for s in SchemaName::ALL {
                crate::util::write_atomic(&dir.join(s.file()), &s.generate())?;
            }
            Ok(0)
        }
        (None, Some(s)) => out!("{}", s.generate()).map(|()| 0),
        (None, None) => Err(Failure::input("name a schema, or give --out DIR")),
    }
}

/// The completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> Result<i32, Failure> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "locklab", &mut buf);
    out!("{}", String::from_utf8_lossy(&buf))?;
    Ok(0)
}

/// The manual page, in roff.
fn man() -> Result<i32, Failure> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
        .render(&mut buf)
        .map_err(|e| Failure::input(format!("cannot render the manual page: {e}")))?;
    out!("{}", String::from_utf8_lossy(&buf))?;
    Ok(0)
}

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Where to write it; an existing file is never replaced
    #[arg(value_name = "FILE", default_value = crate::config::DEFAULT_FILE)]
    pub file: std::path::PathBuf,
}

impl Cli {
    /// Parses `args` (program name first) as the command line would be.
    pub fn try_parse_args(args: &[String]) -> Result<Cli, clap::Error> {
        <Cli as Parser>::try_parse_from(args)
    }
}

#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    #[command(flatten)]
    pub model: crate::options::ModelArgs,
    /// Address to serve on (loopback only)
    #[arg(long, default_value = "127.0.0.1:3000")]
    pub addr: std::net::SocketAddr,
    /// Port to serve on, replacing --addr's; 0 picks any free port (the URL is printed)
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
}

#[cfg(feature = "explore")]
fn explore(args: &ExploreArgs) -> Result<i32, Failure> {
    use stateright::Model;
    let mut addr = args.addr;
    if let Some(p) = args.port {
        addr.set_port(p);
    }
    if !addr.ip().is_loopback() {
        return Err(Failure::input(format!(
            "--addr {addr}: the Explorer only serves on loopback (127.0.0.1 or ::1)"
        )));
    }
    let m = args.model.build()?;
    // Take the port first: a port in use is a clear error, and port 0
    // becomes a real free port to announce.
    let listener = std::net::TcpListener::bind(addr).map_err(|e| {
        Failure::input(format!(
            "cannot serve on {addr}: {e}; pick another port with --port PORT, or --port 0 for any free one"
        ))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::input(format!("cannot serve on {addr}: {e}")))?;
    drop(listener);
    note!(
        "Explorer for {} on http://{addr}/ (Ctrl-C to stop)",
        m.proto.name()
    );
    outln!("http://{addr}/")?;
    // stateright's server panics when it cannot bind (another process took
    // the port in the instant since it was free) or answer: say so, briefly.
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown error");
        note!("error: the Explorer on {addr} stopped: {what}");
        std::process::exit(EXIT_BAD_INPUT);
    }));
    // Serves until the process is stopped.
    // The Explorer walks the zone graph: the world holds no time, so a
    // state is a world with the zone of its clock values.
    let _checker = locklab_models::explore::ZoneModel(m).checker().serve(addr);
    Ok(0)
}

/// Without stateright there is no Explorer to serve: say how to get one.
#[cfg(not(feature = "explore"))]
fn explore(_: &ExploreArgs) -> Result<i32, Failure> {
    Err(Failure::input(
        "this locklab was built without the `explore` feature, so it has no Explorer; \
         rebuild with default features (cargo install --path .) or with --features explore",
    ))
}

/// A clearer message than clap's for a yes/no knob given a value
/// (`--renew-unchecked=false`) or negated (`--no-renew-unchecked`): say how
/// to switch it off.
fn switch_hint(args: &[String]) -> Option<String> {
    let switches = crate::against::SWITCHES;
    args.iter().find_map(|a| {
        let rest = a.strip_prefix("--")?;
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (rest, None),
        };
        let knob = match value {
            Some(_) if switches.contains(&name) => name,
            None if !switches.contains(&name) => {
                let k = name.strip_prefix("no-")?;
                switches.iter().find(|s| **s == k)?
            }
            _ => return None,
        };
        Some(format!(
            "{a}: a yes/no knob takes no value and has no --no- form; --{knob} switches it on, and it is off unless given. \
             To switch off a knob a trace carries: locklab trace against PROTOCOL FILE --set {knob}=false (or --off {knob}). \
             Yes/no knobs: {}",
            switches.join(", ")
        ))
    })
}

pub fn run() -> i32 {
    // A lock description's options go before the command line's.
    let argv = match crate::config::expand(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(f) => {
            note!("error: {}", f.message);
            return f.code;
        }
    };
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() {
                let args: Vec<String> = std::env::args_os()
                    .skip(1)
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                if let Some(hint) = switch_hint(&args) {
                    note!("error: {hint}");
                    return EXIT_BAD_INPUT;
                }
            }
            let code = if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
            // Help and version go to standard output, which may fail too.
            let printed = e.print().and_then(|_| {
                use std::io::Write;
                std::io::stdout().flush()
            });
            if let Err(w) = printed
                && !e.use_stderr()
            {
                let f = crate::util::stdout_failure(w);
                if !f.message.is_empty() {
                    note!("error: {}", f.message);
                }
                return f.code;
            }
            return code;
        }
    };
    crate::util::set_color(cli.color);
    let result = match &cli.command {
        Command::Check(a) => crate::check::run(a),
        Command::List(a) if a.json => out!("{}", crate::list::render_json()).map(|()| 0),
        Command::List(_) => out!("{}", crate::list::render()).map(|()| 0),
        Command::Explore(a) => explore(a),
        Command::Trace(t) => crate::trace_cmd::run(t),
        Command::Bench(b) => crate::bench::run(b),
        Command::Replay(r) => crate::replay_cmd::run(r),
        Command::Simulate(a) => crate::sim_cmd::run(a),
        Command::Merge(a) => crate::sim_cmd::merge(a),
        Command::Docs(d) => crate::docs::run(d),
        Command::Workshop(w) => crate::workshop::run(w),
        Command::Audit(a) => crate::audit::run(a),
        Command::Init(a) => crate::config::init(&a.file),
        Command::Completions { shell } => completions(*shell),
        Command::Man => man(),
        Command::Schema(a) => schema(a),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            if !f.message.is_empty() {
                note!("error: {}", crate::config::annotate_loaded(&f.message));
            }
            f.code
        }
    }
}
