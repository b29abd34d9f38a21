//! `locklab check`: exhaustive search, one verified shortest counterexample
//! per broken invariant, and which fault kinds each one needed.

use crate::options::ModelArgs;
use crate::trace_cmd::RenderFormat;
use crate::util::{
    EXIT_INCOMPLETE, EXIT_OK, EXIT_VIOLATION, Failure, check_writable, unknown, write_atomic,
};
use crate::watch::{Limits, Watch, parse_bytes, parse_duration};
use clap::Args;
use locklab_models::engine::spill::{Spill, SpillTo};
use locklab_models::search::{SearchOptions, SearchResult, Stop, search, search_watched};
use locklab_models::{FaultKind, Invariant, LockModel, trace};
use locklab_traces::{
    CheckReport, Document, Format, SCHEMA_VERSION, SearchSummary, Trace, Verdict,
};
use std::path::PathBuf;

/// The state bound a check runs with unless `--max-states` says otherwise.
pub const DEFAULT_MAX_STATES: u64 = 1_500_000;

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// Check only these invariants, comma-separated (the exit code then speaks of them alone);
    /// `none` explores the whole reachable space and checks nothing (to measure it)
    #[arg(long, value_name = "NAMES", help_heading = "Search")]
    pub invariants: Option<String>,
    /// Stop after this many distinct states (symbolic states: a world and a zone
    /// of clock values); the result is then incomplete (exit 3). The default keeps
    /// a check within about a minute and 1 GB on a 2-core machine, and lets every
    /// protocol but Redlock finish at its defaults; raise it for a larger search
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STATES, help_heading = "Search")]
    pub max_states: u64,
    /// Explore paths of at most this many steps (the result may then be incomplete)
    #[arg(long, value_name = "N", help_heading = "Search")]
    pub max_depth: Option<u64>,
    /// Do not merge states that differ only by renaming clients or instances
    #[arg(long, help_heading = "Search")]
    pub no_symmetry: bool,
    /// Turn off both folds: give every reply to a Redlock client that waits
    /// for all instances an arrival step of its own, instead of folding the
    /// arrivals into the client's read, and keep every session keepalive a
    /// step after no fault left can disturb it (docs/model.md, "Folded reply
    /// arrivals", "Folded heartbeats"): the same verdicts from more states;
    /// for comparing
    #[arg(long, help_heading = "Search")]
    pub no_fold: bool,
    /// Worker threads [default: one per core]; the result does not depend on it
    #[arg(long, value_name = "N", help_heading = "Search")]
    pub threads: Option<usize>,
    /// With `check all`: run only shard I of N (0-based), the protocols at
    /// positions I, I+N, I+2N ... of the ladder, for a Kubernetes Indexed Job
    /// or a Slurm array. Needs --json; `locklab merge` combines the shards
    #[arg(long, value_name = "I/N", help_heading = "Search")]
    pub shard: Option<String>,
    /// Hunt for counterexamples with a swarm of N depth-first searches instead
    /// of the exhaustive breadth-first search: each explores successors in its
    /// own seeded random order, within --max-states states and --max-depth
    /// steps [default depth: 200]. NOT EXHAUSTIVE (unless a member explored
    /// every state), and a counterexample found is not known to be shortest;
    /// for spaces too large to exhaust. With --shard I/N, shard I runs its
    /// slice of the members
    #[arg(long, value_name = "N", help_heading = "Search")]
    pub swarm: Option<u64>,
    /// The seed of the swarm's first member; member i uses SEED+i
    #[arg(
        long,
        value_name = "SEED",
        default_value_t = 1,
        help_heading = "Search"
    )]
    pub seed: u64,
    /// Skip the search for the smallest sets of fault kinds that break each invariant
    /// (one search per set of kinds, smallest sets first; the searches of one size
    /// share --max-states)
    #[arg(long, help_heading = "Search")]
    pub no_fault_analysis: bool,
    /// Stop after this long (e.g. 90s, 5m, 1h): the search stops and reports what it
    /// found, incomplete (exit 3); `check all` prints the protocols it finished
    #[arg(long, value_name = "DURATION", help_heading = "Search")]
    pub time_limit: Option<String>,
    /// Stop when the process's resident memory passes this (e.g. 512M, 4G): the search
    /// stops and reports what it found, incomplete (exit 3)
    #[arg(long, value_name = "SIZE", help_heading = "Search")]
    pub max_memory: Option<String>,
    /// Once the process's resident memory passes this (e.g. 2G), write the search's
    /// levels, parent links and the zones of finished levels to a file in --spill-dir
    /// instead of RAM. Unlike --max-memory the search goes on, slower, to the same
    /// result (raise --max-states to let it); the level being built and an index of
    /// the worlds stay in RAM, so a wide search can still pass SIZE (the summary says
    /// when it did; add --max-memory to stop there)
    #[arg(long, value_name = "SIZE", help_heading = "Search")]
    pub memory_limit: Option<String>,
    /// Where --memory-limit writes [default: the system's temporary directory]. The
    /// file has no name there and is gone when the search ends
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "Search",
        requires = "memory_limit"
    )]
    pub spill_dir: Option<PathBuf>,

    /// Compare the verdicts with a committed baseline (a `check --json`
    /// report, or `check all --json`) and exit 1 naming each
    /// protocol × invariant cell that changed; exit 0 when none did
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub expect: Option<PathBuf>,
    /// Read options from this lock description (docs/audit.md)
    /// [default: ./locklab.toml when it exists]; the command line overrides it
    #[arg(long, value_name = "FILE", help_heading = "Description file")]
    pub config: Option<PathBuf>,
    /// Do not read ./locklab.toml
    #[arg(long, help_heading = "Description file")]
    pub no_config: bool,

    /// Write every verdict and counterexample as one JSON check report
    /// (`-`: to standard output, instead of the verdicts)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write one JSON trace file per counterexample into this directory (and,
    /// with --format mermaid|svg|html|dot, one drawing per counterexample:
    /// PROTOCOL.INVARIANT.md|svg|html|dot)
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub out_dir: Option<PathBuf>,
    /// How to show the counterexamples. table and text print the verdicts,
    /// then each counterexample (text: as a lane diagram) with its story;
    /// json prints the whole report. mermaid and dot print every
    /// counterexample, one after the other; svg, svg-embed, html and itf hold one each, so
    /// they need one invariant (--invariants NAME) or --out-dir. With
    /// --out-dir, the drawings go to files and the verdicts to the terminal.
    /// `check all` prints its matrix (table, text) or every report (json).
    #[arg(
        long,
        value_enum,
        default_value = "table",
        help_heading = "Output",
        verbatim_doc_comment
    )]
    pub format: RenderFormat,
}

/// Whether `--invariants none` asks for the whole space and no invariant.
pub fn checks_none(args: &CheckArgs) -> bool {
    args.invariants.as_deref().map(str::trim) == Some("none")
}

/// The invariants a check covers, in the fixed order.
pub fn selected(args: &CheckArgs, m: &LockModel) -> Result<Vec<Invariant>, Failure> {
    let all: Vec<Invariant> = Invariant::ALL
        .into_iter()
        .filter(|i| i.applies(m))
        .collect();
    let Some(list) = &args.invariants else {
        return Ok(all);
    };
    if checks_none(args) {
        // The whole reachable space, no invariant checked: for measuring
        // it (`locklab bench --peers`, against a model checker's run with
        // no assertion).
        return Ok(Vec::new());
    }
    let names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let inv = Invariant::from_name(s).ok_or_else(|| unknown("invariant", s, &names))?;
        if let Some(why) = inv.not_applicable(m) {
            return Err(Failure::input(format!(
                "invariant '{s}' does not apply to {}: {why}",
                m.proto.name()
            )));
        }
        if !out.contains(&inv) {
            out.push(inv);
        }
    }
    if out.is_empty() {
        return Err(Failure::input(format!(
            "--invariants is empty; known invariants: {} (or none)",
            names.join(", ")
        )));
    }
    out.sort();
    Ok(out)
}

/// All subsets of `kinds` with `size` elements, in order.
fn subsets(kinds: &[FaultKind], size: usize) -> Vec<Vec<FaultKind>> {
    if size == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        for mut rest in subsets(&kinds[i + 1..], size - 1) {
            rest.insert(0, *k);
            out.push(rest);
        }
    }
    out
}

/// Searches `m` for a violation of `inv` alone, with only the fault kinds
/// of `set` switched on (their budgets kept), or every kind `m` has when
/// `set` is `None`.
pub fn search_under(
    m: &LockModel,
    inv: Invariant,
    set: Option<&[FaultKind]>,
    base: &SearchOptions,
) -> SearchResult {
    let mut sub = m.clone();
    if let Some(set) = set {
        for k in m.params.faults.enabled() {
            if !set.contains(&k) {
                sub.params.faults.set(k, 0);
            }
        }
    }
    search(
        &sub,
        &SearchOptions {
            subsume_budgets: true,
            invariants: vec![inv],
            ..base.clone()
        },
    )
}

/// The smallest sets of fault kinds with which `inv` still breaks (pause
/// alone? clock jump alone? README.md, "How to read a trace"). Searches
/// every set no larger than the one the counterexample used, smallest
/// first, each with only that set switched on. Returns the sets found and whether every smaller set was
/// shown safe by an exhaustive search.
///
/// The searches of one size share the state bound: each of k sets gets
/// `max_states / k`, so the analysis of a counterexample that used n
/// kinds explores at most n + 1 times the bound, whatever the number of
/// kinds. Otherwise eight kinds that each fail to finish alone (Redlock
/// at its defaults) cost eight full searches: five minutes for one
/// broken invariant. A set whose search stops at its share without a
/// counterexample is neither shown safe nor reported: the sets found are
/// then marked "minimality not proven" when it was smaller than they are,
/// and "other sets of this size not ruled out" when it was as large.
fn minimal_fault_sets(
    m: &LockModel,
    inv: Invariant,
    used: &[FaultKind],
    base: &SearchOptions,
) -> FaultSets {
    let on = m.params.faults.enabled();
    let mut minimal = true;
    for size in 0..=used.len() {
        let mut found = Vec::new();
        let mut all_found = true;
        let sets = subsets(&on, size);
        let share = SearchOptions {
            max_states: base
                .max_states
                .map(|n| (n / sets.len().max(1) as u64).max(1)),
            ..base.clone()
        };
        for set in sets {
            let r = search_under(m, inv, Some(&set), &share);
            if r.violations.contains_key(&inv) {
                found.push(set);
            } else if !r.exhaustive() {
                all_found = false;
            }
        }
        if !found.is_empty() {
            return FaultSets {
                sets: found,
                minimal,
                all_found,
            };
        }
        // A set of this size that was not decided may break it: a larger
        // set found later is then not known to be smallest.
        minimal &= all_found;
    }
    FaultSets {
        sets: vec![used.to_vec()],
        minimal,
        all_found: minimal,
    }
}

/// What [`minimal_fault_sets`] found.
struct FaultSets {
    /// The smallest sets found to break the invariant.
    sets: Vec<Vec<FaultKind>>,
    /// Every smaller set was searched to the end and does not break it.
    minimal: bool,
    /// Every other set of the same size was searched to the end and does
    /// not break it: the list is complete.
    all_found: bool,
}

/// Why `inv` was never put to the test in an exhaustive search that found
/// no violation, if it was not: a "holds" must rest on executions where
/// the property could have failed. `mutual_exclusion` needs a client that
/// acquired; `no_lost_update` two accepted writes.
fn unexercised(inv: Invariant, r: &SearchResult) -> Option<String> {
    match inv {
        Invariant::MutualExclusion if !r.acquired => {
            Some("no client ever acquires the lock".into())
        }
        Invariant::NoLostUpdate if r.max_accepted_writes == 0 => {
            Some("no execution gets a write accepted".into())
        }
        Invariant::NoLostUpdate if r.max_accepted_writes == 1 => {
            Some("no execution gets two writes accepted".into())
        }
        _ => None,
    }
}

fn bound_text(r: &SearchResult, opts: &SearchOptions) -> Option<String> {
    match r.stop {
        Stop::MaxStates => Some(format!("--max-states {}", opts.max_states.unwrap_or(0))),
        Stop::MaxDepth => Some(format!(
            "--max-depth {}",
            opts.max_depth
                .unwrap_or(locklab_models::swarm::DEFAULT_MAX_DEPTH)
        )),
        Stop::Cancelled => Some(r.cancelled_by.clone().unwrap_or_default()),
        Stop::Exhausted | Stop::AllViolated => None,
    }
}

/// Searches `m` and builds its check report: a verdict per invariant and a
/// verified trace per counterexample (with the smallest fault sets when
/// `analyse`).
/// The members a swarm run runs: seeds `seed + first .. seed + end`.
#[derive(Clone, Copy, Debug)]
pub struct Swarm {
    pub seed: u64,
    pub first: u64,
    pub end: u64,
}

impl Swarm {
    fn seeds(self) -> std::ops::Range<u64> {
        self.seed.saturating_add(self.first)..self.seed.saturating_add(self.end)
    }

    /// How the report names the strategy.
    pub fn strategy(self) -> String {
        let seeds = self.seeds();
        format!(
            "swarm of {} random-order depth-first searches (seeds {}..={}; not exhaustive, counterexamples not known to be shortest)",
            seeds.end - seeds.start,
            seeds.start,
            seeds.end.saturating_sub(1)
        )
    }
}

/// The note of an invariant a swarm found no violation of.
pub fn swarm_unknown_note(members: u64, states: u64, bound: &str) -> String {
    format!(
        "not exhaustive: {members} random-order depth-first searches met no violation in {} states; each stopped at {bound}",
        crate::report::thousands(states)
    )
}

/// The swarm `--swarm` asks for (`shard`'s slice of it, when sharded).
pub fn swarm_of(
    args: &CheckArgs,
    shard: Option<locklab_sim::summary::Shard>,
) -> Result<Option<Swarm>, Failure> {
    let Some(members) = args.swarm else {
        return Ok(None);
    };
    if checks_none(args) {
        return Err(Failure::input(
            "--swarm hunts for violations and --invariants none checks none: drop --swarm to explore the whole space breadth-first",
        ));
    }
    if members == 0 || members > 1_000_000 {
        return Err(Failure::input(
            "--swarm must be between 1 and 1000000 members",
        ));
    }
    let range = shard.map_or(0..members, |s| s.range(members));
    Ok(Some(Swarm {
        seed: args.seed,
        first: range.start,
        end: range.end,
    }))
}

pub fn report(
    m: &LockModel,
    opts: &SearchOptions,
    analyse: bool,
    watch: Option<&Watch>,
) -> Result<CheckReport, Failure> {
    report_with(m, opts, analyse, watch, None)
}

/// [`report`], by the breadth-first search or by a swarm.
pub fn report_with(
    m: &LockModel,
    opts: &SearchOptions,
    analyse: bool,
    watch: Option<&Watch>,
    swarm: Option<Swarm>,
) -> Result<CheckReport, Failure> {
    let invariants = opts.invariants.clone();
    let name = m.proto.name();
    let default_progress = locklab_models::search::Progress::default();
    let result = match (watch, swarm) {
        (_, Some(s)) => {
            let progress = match watch {
                Some(w) => {
                    w.phase(format!("{name}: swarm"));
                    w.progress()
                }
                None => &default_progress,
            };
            locklab_models::swarm::swarm(m, opts, s.seeds(), progress)
        }
        (Some(w), None) => {
            w.phase(format!("{name}: search"));
            search_watched(m, opts, w.progress())
        }
        (None, None) => search(m, opts),
    };
    if let Some(why) = &result.spill_failure {
        eprintln!("{}warning: {why}", crate::watch::clear_line());
    }
    // A swarm's fault sets would need exhaustive searches of their own.
    let analyse = analyse && swarm.is_none();

    let mut traces: Vec<Trace> = Vec::new();
    let mut verdicts: Vec<Verdict> = Vec::new();
    for inv in Invariant::ALL {
        if let Some(why) = inv.not_applicable(m) {
            // Only the token source's n/a is worth a line in every report.
            if matches!(
                inv,
                Invariant::NoOversell | Invariant::NoDuplicateEffect | Invariant::DetectedWithin
            ) {
                continue;
            }
            verdicts.push(Verdict {
                invariant: inv.name().into(),
                category: inv.category().into(),
                status: "n/a".into(),
                steps: None,
                faults_used: vec![],
                minimal_fault_sets: None,
                fault_sets_proven_minimal: false,
                fault_sets_all_found: false,
                note: why,
            });
            continue;
        }
        if !invariants.contains(&inv) {
            continue;
        }
        match result.violations.get(&inv) {
            Some(path) => {
                // Every counterexample is replayed through the model, then
                // written out and read back, before anyone sees it.
                let t = trace::build(m, path, inv, "check", None).map_err(|e| Failure {
                    code: 70,
                    message: format!("internal error: a counterexample failed to replay ({e})"),
                })?;
                let text = t.to_json();
                let reread = match Document::parse(&text) {
                    Ok(Document::Trace(t)) => *t,
                    _ => {
                        return Err(Failure {
                            code: 70,
                            message: "internal error: a trace did not read back".into(),
                        });
                    }
                };
                trace::validate(&reread).map_err(|e| Failure {
                    code: 70,
                    message: format!("internal error: a written trace failed validation ({e})"),
                })?;
                let used: Vec<FaultKind> = t
                    .faults_used
                    .iter()
                    .filter_map(|n| FaultKind::from_name(n))
                    .collect();
                let (sets, proven, all_found) = if !analyse {
                    (None, false, false)
                } else {
                    if let Some(w) = watch {
                        w.phase(format!(
                            "{name}: smallest fault sets breaking {}",
                            inv.name()
                        ));
                    }
                    let f = minimal_fault_sets(m, inv, &used, opts);
                    (Some(f.sets), f.minimal, f.all_found)
                };
                verdicts.push(Verdict {
                    invariant: inv.name().into(),
                    category: inv.category().into(),
                    status: "violated".into(),
                    steps: Some(t.steps.len()),
                    faults_used: t.faults_used.clone(),
                    minimal_fault_sets: sets.map(|v| {
                        v.iter()
                            .map(|set| set.iter().map(|k| k.name().to_string()).collect())
                            .collect()
                    }),
                    fault_sets_proven_minimal: proven,
                    fault_sets_all_found: all_found,
                    note: t.violation.clone(),
                });
                traces.push(t);
            }
            None if result.exhaustive() => {
                let explored = match swarm {
                    None => format!(
                        "every one of {} states explored",
                        crate::report::thousands(result.states)
                    ),
                    Some(_) => "a swarm member explored every reachable state".into(),
                };
                let (status, note) = match unexercised(inv, &result) {
                    Some(why) => (
                        "vacuous",
                        format!("{why}, so nothing could break it ({explored})"),
                    ),
                    None => ("holds", format!("exhaustive: {explored}")),
                };
                verdicts.push(Verdict {
                    invariant: inv.name().into(),
                    category: inv.category().into(),
                    status: status.into(),
                    steps: None,
                    faults_used: vec![],
                    minimal_fault_sets: None,
                    fault_sets_proven_minimal: false,
                    fault_sets_all_found: false,
                    note,
                })
            }
            None => verdicts.push(Verdict {
                invariant: inv.name().into(),
                category: inv.category().into(),
                status: "unknown".into(),
                steps: None,
                faults_used: vec![],
                minimal_fault_sets: None,
                fault_sets_proven_minimal: false,
                fault_sets_all_found: false,
                note: match swarm {
                    None => format!(
                        "search incomplete: no counterexample of {} steps or fewer; stopped at {} after {} states",
                        result.depth.saturating_sub(1),
                        bound_text(&result, opts).unwrap_or_default(),
                        crate::report::thousands(result.states)
                    ),
                    Some(s) => swarm_unknown_note(
                        s.end - s.first,
                        result.states,
                        &bound_text(&result, opts).unwrap_or_default(),
                    ),
                },
            }),
        }
    }

    let report = CheckReport {
        schema_version: SCHEMA_VERSION,
        kind: "check-report".into(),
        tool: format!("locklab {}", env!("CARGO_PKG_VERSION")),
        config: trace::config(m),
        search: SearchSummary {
            strategy: swarm.map_or("breadth-first".into(), Swarm::strategy),
            symmetry: opts.symmetry,
            states: result.states,
            transitions: result.transitions,
            max_depth: result.depth,
            complete: result.exhaustive(),
            bound_hit: bound_text(&result, opts),
            seconds: result.elapsed.as_secs_f64(),
            threads: result.threads as u64,
            peak_memory_bytes: locklab_models::search::peak_memory_bytes(),
            max_accepted_writes: result.max_accepted_writes as u64,
            spilled_bytes: opts.spill.is_some().then_some(result.spilled),
            memory_limit_bytes: opts.spill.as_ref().map(|s| s.limit),
        },
        verdicts,
        traces,
    };
    Ok(report)
}

/// Checks that outputs can be written and numbers make sense, before any
/// work starts.
fn validate_run(args: &CheckArgs) -> Result<(), Failure> {
    if let Some(p) = &args.json
        && !crate::util::is_dash(p)
    {
        check_writable(p)?;
    }
    if let Some(d) = &args.out_dir
        && d.exists()
        && !d.is_dir()
    {
        return Err(Failure::input(format!(
            "--out-dir {}: not a directory",
            d.display()
        )));
    }
    if args.threads == Some(0) || args.threads.is_some_and(|t| t > 256) {
        return Err(Failure::input("--threads must be between 1 and 256"));
    }
    if args.max_states == 0 || args.max_depth == Some(0) {
        return Err(Failure::input(
            "--max-states and --max-depth must be at least 1",
        ));
    }
    limits(args)?;
    if let Some(to) = spill_to(args)? {
        // The directory is tried now, rather than found unwritable in the
        // middle of the search.
        if let Err(e) = Spill::create(&to) {
            return Err(Failure::input(format!(
                "--spill-dir {}: cannot make a file there ({e}); name a writable directory",
                to.dir.display()
            )));
        }
    }
    Ok(())
}

/// Where and from what resident memory on the search spills
/// (`--memory-limit`, `--spill-dir`).
pub fn spill_to(args: &CheckArgs) -> Result<Option<SpillTo>, Failure> {
    let Some(limit) = args.memory_limit.as_deref() else {
        return Ok(None);
    };
    if args.swarm.is_some() {
        return Err(Failure::input(
            "--memory-limit spills the levels of the exhaustive search; --swarm keeps only each member's stack (drop one of them)",
        ));
    }
    Ok(Some(SpillTo {
        limit: parse_bytes("memory-limit", limit)?,
        dir: args.spill_dir.clone().unwrap_or_else(std::env::temp_dir),
    }))
}

/// The time and memory limits the run was given.
pub fn limits(args: &CheckArgs) -> Result<Limits, Failure> {
    Ok(Limits {
        time: args
            .time_limit
            .as_deref()
            .map(|t| parse_duration("time-limit", t))
            .transpose()?,
        memory: args
            .max_memory
            .as_deref()
            .map(|t| parse_bytes("max-memory", t))
            .transpose()?,
    })
}

/// The model with the reductions `args` switch off (`--no-fold`).
pub fn reductions(args: &CheckArgs, m: LockModel) -> LockModel {
    if !args.no_fold {
        return m;
    }
    let mut p = m.params.clone();
    p.fold_replies = false;
    p.fold_heartbeats = false;
    LockModel::new(m.proto, p).expect("the model was valid, and folding changes no constraint")
}

/// The search options a check runs with.
pub fn search_options(args: &CheckArgs, invariants: Vec<Invariant>) -> SearchOptions {
    SearchOptions {
        subsume_budgets: true,
        invariants,
        max_states: Some(args.max_states),
        max_depth: args.max_depth,
        symmetry: !args.no_symmetry,
        threads: args.threads.unwrap_or(0),
        spill: spill_to(args).ok().flatten(),
    }
}

/// The exit code a set of verdicts ends the run with.
pub fn exit_code<'a>(verdicts: impl Iterator<Item = &'a Verdict>) -> i32 {
    let (mut unknown, mut violated) = (false, false);
    for v in verdicts {
        // A vacuous "holds" is no verdict either.
        unknown |= v.status == "unknown" || v.status == "vacuous";
        violated |= v.status == "violated";
    }
    if unknown {
        EXIT_INCOMPLETE
    } else if violated {
        EXIT_VIOLATION
    } else {
        EXIT_OK
    }
}

/// Writes every trace of `reports` into `dir`, one JSON file per
/// counterexample, and beside it a drawing when `format` draws one.
pub fn write_traces(
    dir: &std::path::Path,
    reports: &[&CheckReport],
    format: Format,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::input(format!("cannot create {}: {e}", dir.display())))?;
    let draws = matches!(
        format,
        Format::Mermaid | Format::Svg | Format::SvgEmbed | Format::Html | Format::Dot | Format::Itf
    );
    let mut files = Vec::new();
    for t in reports.iter().flat_map(|r| &r.traces) {
        files.push((dir.join(trace_file_name(t)), t.to_json(), false));
        if draws {
            let name = format!(
                "{}.{}.{}",
                t.config.protocol,
                t.invariant,
                format.extension()
            );
            files.push((dir.join(name), format.render(t, false), true));
        }
    }
    // Every target is checked before the first is written: a run that
    // cannot write them all writes none.
    for (p, _, _) in &files {
        check_writable(p)?;
    }
    for (p, contents, announce) in &files {
        write_atomic(p, contents)?;
        if *announce {
            note!("wrote {}", p.display());
        }
    }
    Ok(())
}

/// The baseline `--expect FILE` names: one check report or a list of them
/// (`check all --json`). Read before any search starts.
pub fn load_baseline(path: &std::path::Path) -> Result<Vec<CheckReport>, Failure> {
    let text = crate::util::read_input(path)?;
    let bad = |e: String| {
        Failure::input(format!(
            "--expect {}: not a check report ({e}); write a baseline with `locklab check ... --json FILE`",
            path.display()
        ))
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if v.is_array() {
        serde_json::from_value(v).map_err(|e| bad(e.to_string()))
    } else {
        serde_json::from_value(v)
            .map(|r| vec![r])
            .map_err(|e| bad(e.to_string()))
    }
}

/// `--expect`: the exit code when every protocol × invariant cell of
/// `now` is as in `baseline` (0) or one changed (1, each change named on
/// standard error).
pub fn expect_exit(baseline: &[CheckReport], now: &[&CheckReport]) -> i32 {
    let cells = |rs: &mut dyn Iterator<Item = &CheckReport>| -> Vec<(String, String)> {
        rs.flat_map(|r| {
            r.verdicts.iter().map(move |v| {
                (
                    format!("{} {}", r.config.protocol, v.invariant),
                    match v.steps {
                        Some(n) => format!("{} ({n} steps)", v.status),
                        None => v.status.clone(),
                    },
                )
            })
        })
        .collect()
    };
    let before = cells(&mut baseline.iter());
    let after = cells(&mut now.iter().copied());
    let changed = crate::audit::diff(&before, &after);
    if changed.is_empty() {
        note!("--expect: every verdict as in the baseline");
        return EXIT_OK;
    }
    note!("--expect: {} cell(s) changed:", changed.len());
    for c in &changed {
        note!("  {c}");
    }
    EXIT_VIOLATION
}

/// `<protocol>.<invariant>.json`
pub fn trace_file_name(t: &Trace) -> String {
    format!("{}.{}.json", t.config.protocol, t.invariant)
}

/// Room-friendly defaults: a check that names one invariant and says
/// nothing about faults explores the fault kinds of the article's own
/// scenario for that protocol and invariant (`article::scenario_faults`),
/// so a workshop's "predict, then run" shows the article's story rather
/// than the first of eight kinds that breaks it. Says so on stderr; the
/// header names the kinds explored. Returns the model options to build.
fn scenario(args: &CheckArgs, invariants: &[Invariant]) -> Option<ModelArgs> {
    let one = args.invariants.is_some() && invariants.len() == 1;
    if !one || args.model.faults.is_some() || !args.model.budget.is_empty() {
        return None;
    }
    let (kinds, sections) = crate::article::scenario_faults(&args.model.protocol, invariants[0])?;
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    note!(
        "faults: {} (the article's scenario for {}'s {}, {}); say --faults all for every kind {} can suffer",
        names.join(","),
        args.model.protocol,
        invariants[0].name(),
        sections.join(", "),
        args.model.protocol
    );
    let mut model = args.model.clone();
    model.faults = Some(names.join(","));
    Some(model)
}

pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    validate_run(args)?;
    if args.shard.is_some() && args.model.protocol != "all" && args.swarm.is_none() {
        return Err(Failure::input(format!(
            "--shard splits `check all` into its protocols, or a --swarm into its members; one protocol's exhaustive check ({}) runs on one machine (use --threads)",
            args.model.protocol
        )));
    }
    if args.model.protocol == "all" {
        if args.swarm.is_some() {
            return Err(Failure::input(
                "--swarm hunts in one protocol's space: name the protocol (check PROTOCOL --swarm N)",
            ));
        }
        return crate::ladder::run(args);
    }
    let baseline = args.expect.as_deref().map(load_baseline).transpose()?;
    let m = args.model.build()?;
    let invariants = selected(args, &m)?;
    let m = match scenario(args, &invariants) {
        Some(model) => model.build()?,
        None => m,
    };
    let m = reductions(args, m);
    let format = args.format.format();
    if args.out_dir.is_none()
        && !format.concatenates()
        && format != Format::Json
        && invariants.len() > 1
    {
        return Err(Failure::input(format!(
            "--format {} draws one counterexample per file, and {} invariants are checked: add --out-dir DIR (one file per counterexample), or pick one with --invariants NAME",
            format.name(),
            invariants.len()
        )));
    }
    if let Some(d) = &args.out_dir {
        crate::util::prepare_dir("out-dir", d)?;
    }
    let shard = crate::check_shards::parse(args)?;
    let swarm = swarm_of(args, shard)?;
    let watch = Watch::start(limits(args)?);
    // A limit or Ctrl-C stops the search, which then reports what it has.
    watch.stop_gracefully();
    let report = report_with(
        &m,
        &search_options(args, invariants.clone()),
        !args.no_fault_analysis,
        Some(&watch),
        swarm,
    )?;
    let interrupted = watch.interrupted();
    watch.done();
    if let Some(s) = shard {
        let plan = vec![crate::check_shards::planned(&m, &invariants)];
        let color = crate::util::stdout_color();
        return crate::check_shards::finish(args, s, plan, vec![report], color);
    }
    let code = |report: &CheckReport| {
        if interrupted {
            crate::watch::EXIT_INTERRUPTED
        } else if invariants.is_empty() && !report.search.complete {
            // No verdict to speak for the search: its bound does.
            EXIT_INCOMPLETE
        } else if let Some(b) = &baseline {
            expect_exit(b, &[report])
        } else {
            exit_code(report.verdicts.iter())
        }
    };
    // Outputs: everything is computed; now write.
    let json_to_stdout = args.json.as_deref().is_some_and(crate::util::is_dash);
    if let Some(p) = &args.json
        && !json_to_stdout
    {
        write_atomic(p, &report.to_json())?;
    }
    if let Some(d) = &args.out_dir {
        write_traces(d, &[&report], format)?;
    }
    if json_to_stdout {
        out!("{}", report.to_json())?;
        return Ok(code(&report));
    }
    let color = crate::util::stdout_color();
    match format {
        Format::Json => out!("{}", report.to_json())?,
        Format::Table | Format::Text | Format::Story => {
            out!("{}", crate::report::render(&report, Some(format), color))?
        }
        _ if args.out_dir.is_some() => {
            out!("{}", crate::report::render(&report, None, color))?;
        }
        _ => {
            if report.traces.is_empty() {
                note!("no counterexample to draw: no checked invariant is broken");
            }
            out!("{}", crate::trace_cmd::join(&report.traces, format, color))?;
        }
    }
    Ok(code(&report))
}
