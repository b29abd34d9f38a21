//! `check all --shard I/N` and the merge of its shards. The protocols of
//! the ladder are independent searches, so N machines (a Kubernetes Indexed
//! Job, a Slurm array) can each run every N-th one; `locklab merge` checks
//! that the shards ran the same plan, each exactly once, and prints what
//! one machine would have printed.
//!
//! Every shard builds the whole plan (building a model costs nothing next
//! to searching it) and stores it, so the merge compares the plans rather
//! than trusting that the command lines matched: a different option, a
//! different `locklab.toml` or another locklab version is caught.

use crate::check::{CheckArgs, exit_code, write_traces};
use crate::ladder::{Planned, matrix};
use crate::sim_cmd::MergeArgs;
use crate::util::{Failure, write_atomic};
use locklab_models::trace;
use locklab_models::{Invariant, LockModel};
use locklab_sim::summary::Shard;
use locklab_traces::{CheckReport, Config, Format, SCHEMA_VERSION};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `check all --shard I/N --json FILE` writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckShard {
    pub schema_version: u32,
    /// Always `"check-shard"`.
    pub kind: String,
    pub tool: String,
    pub shard: Shard,
    /// The `--faults` option as given (absent: every kind each protocol can
    /// suffer).
    pub faults: Option<String>,
    /// How every check of the run searches.
    pub search: SearchPlan,
    /// Present when the shards split a swarm (`check PROTOCOL --swarm N
    /// --shard I/N`): the plan is then that one check, and every shard
    /// runs its slice of the members.
    pub swarm: Option<SwarmPlan>,
    /// Every check of the whole run, in the ladder's order. Shard I of N
    /// runs those at positions I, I+N, I+2N, ...
    pub plan: Vec<PlannedCheck>,
    /// This shard's check reports, in the plan's order.
    pub reports: Vec<CheckReport>,
}

/// The search options every check of a run shares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchPlan {
    pub max_states: u64,
    pub max_depth: Option<u64>,
    pub symmetry: bool,
    /// Whether each broken invariant's smallest fault sets are searched.
    pub fault_analysis: bool,
}

/// The whole swarm the shards split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SwarmPlan {
    /// The first member's seed; member i uses seed + i.
    pub seed: u64,
    /// Members over all shards.
    pub members: u64,
}

/// One protocol's check: its model and the invariants checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedCheck {
    pub config: Config,
    pub invariants: Vec<String>,
}

/// The JSON Schema of a check shard.
pub fn schema() -> String {
    locklab_traces::schema::generate::<CheckShard>("locklab check shard")
}

/// `--shard I/N`, checked against the other options before any search.
pub fn parse(args: &CheckArgs) -> Result<Option<Shard>, Failure> {
    let Some(text) = &args.shard else {
        return Ok(None);
    };
    let s = Shard::parse(text).map_err(Failure::input)?;
    if args.json.is_none() {
        return Err(Failure::input(
            "`check all --shard` writes its part for `locklab merge`: add --json FILE (or --json - for standard output)",
        ));
    }
    if args.out_dir.is_some() {
        return Err(Failure::input(
            "--out-dir with --shard: a shard writes no trace files (its --json file holds its traces); pass --out-dir to `locklab merge`",
        ));
    }
    if args.expect.is_some() {
        return Err(Failure::input(
            "--expect with --shard: a shard holds only part of the verdicts; compare the whole ladder with `check all --expect` on one machine",
        ));
    }
    Ok(Some(s))
}

fn search_plan(args: &CheckArgs) -> SearchPlan {
    SearchPlan {
        max_states: args.max_states,
        max_depth: args.max_depth,
        symmetry: !args.no_symmetry,
        fault_analysis: !args.no_fault_analysis,
    }
}

/// Writes shard `s`'s document; prints it (`--json -`) or its part of the
/// matrix. The exit code speaks of this shard's verdicts.
/// The plan entry of model `m` checked for `invariants`.
pub fn planned(m: &LockModel, invariants: &[Invariant]) -> PlannedCheck {
    PlannedCheck {
        config: trace::config(m),
        invariants: invariants.iter().map(|i| i.name().to_string()).collect(),
    }
}

/// The plan of `check all`.
pub fn ladder_plan(plan: &[Planned]) -> Vec<PlannedCheck> {
    plan.iter()
        .map(|p| planned(&p.model, &p.invariants))
        .collect()
}

pub fn finish(
    args: &CheckArgs,
    s: Shard,
    plan: Vec<PlannedCheck>,
    reports: Vec<CheckReport>,
    color: bool,
) -> Result<i32, Failure> {
    let code = exit_code(reports.iter().flat_map(|r| r.verdicts.iter()));
    let doc = CheckShard {
        schema_version: SCHEMA_VERSION,
        kind: "check-shard".into(),
        tool: format!("locklab {}", env!("CARGO_PKG_VERSION")),
        shard: s,
        faults: args.model.faults.clone(),
        search: search_plan(args),
        swarm: args.swarm.map(|members| SwarmPlan {
            seed: args.seed,
            members,
        }),
        plan,
        reports,
    };
    let text = serde_json::to_string_pretty(&doc).expect("a shard always serialises") + "\n";
    match &args.json {
        Some(p) if !crate::util::is_dash(p) && doc.swarm.is_some() => {
            write_atomic(p, &text)?;
            out!(
                "shard {}/{} of the swarm, a partial result; `locklab merge` the shards' --json files\n\n{}",
                s.index,
                s.count,
                crate::report::render(&doc.reports[0], Some(Format::Table), color)
            )?;
        }
        Some(p) if !crate::util::is_dash(p) => {
            write_atomic(p, &text)?;
            out!(
                "shard {}/{}: {} of the {} protocols, a partial result; `locklab merge` the shards' --json files\n\n{}",
                s.index,
                s.count,
                doc.reports.len(),
                doc.plan.len(),
                matrix(&doc.reports, doc.faults.as_deref(), None, color)
            )?;
        }
        _ => out!("{text}")?,
    }
    Ok(code)
}

/// Whether `text` is a check shard (rather than a simulation summary).
pub fn is_check_shard(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| {
            v.get("kind")
                .and_then(|k| k.as_str())
                .map(|k| k == "check-shard")
        })
        .unwrap_or(false)
}

fn read(name: &str, text: &str) -> Result<CheckShard, Failure> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Failure::input(format!("{name}: not JSON ({e})")))?;
    let version = v.get("schema_version").and_then(|x| x.as_u64());
    if version != Some(SCHEMA_VERSION as u64) {
        return Err(Failure::input(format!(
            "{name}: schema_version {} but this locklab reads {SCHEMA_VERSION}: run the shard again with this locklab",
            version.map_or("missing".to_string(), |v| v.to_string())
        )));
    }
    serde_json::from_value(v).map_err(|e| {
        Failure::input(format!(
            "{name}: not a check shard ({e}); merge reads the --json files of `locklab check all --shard I/N`"
        ))
    })
}

/// Why shard `b` (file `nb`) cannot be merged with shard `a` (file `na`),
/// if it cannot.
fn mismatch(na: &str, a: &CheckShard, nb: &str, b: &CheckShard) -> Option<String> {
    if a.tool != b.tool {
        return Some(format!(
            "{nb} was written by {}, {na} by {}: run every shard with the same locklab",
            b.tool, a.tool
        ));
    }
    if a.shard.count != b.shard.count {
        return Some(format!(
            "{nb} is shard {}/{} but {na} is shard {}/{}: every shard must come from the same --shard I/N split",
            b.shard.index, b.shard.count, a.shard.index, a.shard.count
        ));
    }
    let differs = if a.swarm != b.swarm {
        format!("swarm {:?} against {:?}", b.swarm, a.swarm)
    } else if a.faults != b.faults {
        format!("--faults {:?} against {:?}", b.faults, a.faults)
    } else if a.search != b.search {
        format!("search options {:?} against {:?}", b.search, a.search)
    } else if a.plan.len() != b.plan.len() {
        format!("{} checks against {}", b.plan.len(), a.plan.len())
    } else if let Some((x, y)) = a.plan.iter().zip(&b.plan).find(|(x, y)| x != y) {
        if x.config.protocol != y.config.protocol {
            format!(
                "protocol {} where the other has {}",
                y.config.protocol, x.config.protocol
            )
        } else {
            format!("the options of {}", y.config.protocol)
        }
    } else {
        return None;
    };
    Some(format!(
        "{nb} and {na} ran different checks ({differs}): run every shard with the same options"
    ))
}

/// `locklab merge` of check shards: `parts` are (file name, contents).
pub fn merge(parts: Vec<(String, String)>, args: &MergeArgs) -> Result<i32, Failure> {
    let mut shards = Vec::new();
    for (name, text) in &parts {
        shards.push((name.as_str(), read(name, text)?));
    }
    let (first_name, first) = &shards[0];
    for (name, s) in &shards[1..] {
        if let Some(why) = mismatch(first_name, first, name, s) {
            return Err(Failure::input(why));
        }
    }
    let n = first.shard.count;
    let mut by_index: Vec<Option<&(&str, CheckShard)>> = vec![None; n as usize];
    for entry in &shards {
        let slot = &mut by_index[entry.1.shard.index as usize];
        if let Some((other, _)) = slot {
            return Err(Failure::input(format!(
                "shard {}/{n} appears twice: {other} and {}",
                entry.1.shard.index, entry.0
            )));
        }
        *slot = Some(entry);
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| by_index[*i as usize].is_none())
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(Failure::input(format!(
            "shards missing: {}; merge needs every shard 0/{n} .. {}/{n}",
            missing.join(", "),
            n - 1
        )));
    }
    if let Some(sw) = first.swarm {
        let mut parts = Vec::new();
        for (i, entry) in by_index.iter().enumerate() {
            let (name, s) = entry.expect("every shard is present");
            match s.reports.as_slice() {
                [r] if s.plan.len() == 1 && r.config == s.plan[0].config => parts.push(r),
                _ => {
                    return Err(Failure::input(format!(
                        "{name}: shard {i}/{n} of a swarm must hold one report, of the check its plan names"
                    )));
                }
            }
        }
        let report = swarm_report(&parts, sw);
        return finish_one(report, args);
    }
    // Each shard must hold exactly its slice of the plan.
    let plan = &first.plan;
    let mut reports: Vec<CheckReport> = Vec::with_capacity(plan.len());
    for (i, p) in plan.iter().enumerate() {
        let (name, s) = by_index[i % n as usize].expect("every shard is present");
        let r = s
            .reports
            .get(i / n as usize)
            .filter(|r| r.config == p.config);
        let Some(r) = r else {
            return Err(Failure::input(format!(
                "{name}: it has no report of {}, which its plan gives it (was the file edited or cut short?)",
                p.config.protocol
            )));
        };
        reports.push(r.clone());
    }
    for (name, s) in &shards {
        let expected = (s.shard.index as usize..plan.len())
            .step_by(n as usize)
            .count();
        if s.reports.len() != expected {
            return Err(Failure::input(format!(
                "{name}: {} reports where its plan gives it {expected}",
                s.reports.len()
            )));
        }
    }
    note!(
        "merged {n} check shard{}: {} protocols",
        if n == 1 { "" } else { "s" },
        reports.len()
    );
    if let Some(d) = &args.out_dir {
        crate::util::prepare_dir("out-dir", d)?;
        let refs: Vec<&CheckReport> = reports.iter().collect();
        write_traces(d, &refs, Format::Json)?;
    }
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&reports).expect("reports serialise") + "\n"
        )?;
    } else {
        out!(
            "{}",
            matrix(
                &reports,
                first.faults.as_deref(),
                args.out_dir.as_deref(),
                crate::util::stdout_color()
            )
        )?;
    }
    Ok(exit_code(reports.iter().flat_map(|r| r.verdicts.iter())))
}

/// One report of the whole swarm from its shards' reports (in shard
/// order): per invariant the shortest counterexample any shard found
/// (ties: the lowest shard, whose seeds are the lowest); a "holds" only
/// when a member explored every state; states and transitions summed.
fn swarm_report(parts: &[&CheckReport], sw: SwarmPlan) -> CheckReport {
    let mut r = parts[0].clone();
    r.traces.clear();
    let complete = parts.iter().any(|p| p.search.complete);
    for (k, v) in r.verdicts.iter_mut().enumerate() {
        let all = parts.iter().map(|p| &p.verdicts[k]);
        let best = all
            .clone()
            .filter(|x| x.status == "violated")
            .min_by_key(|x| x.steps.unwrap_or(usize::MAX));
        let exhaustive = all
            .clone()
            .find(|x| matches!(x.status.as_str(), "holds" | "vacuous"));
        let unknown = all.clone().find(|x| x.status == "unknown");
        if let Some(b) = best.or(exhaustive).or(unknown) {
            *v = b.clone();
        }
    }
    for v in r.verdicts.iter().filter(|v| v.status == "violated") {
        let t = parts.iter().find_map(|p| {
            p.traces.iter().find(|t| {
                t.invariant == v.invariant
                    && p.verdicts
                        .iter()
                        .any(|x| x.invariant == v.invariant && x.steps == v.steps)
            })
        });
        r.traces.extend(t.cloned());
    }
    let s = &mut r.search;
    s.strategy = crate::check::Swarm {
        seed: sw.seed,
        first: 0,
        end: sw.members,
    }
    .strategy();
    s.states = parts.iter().map(|p| p.search.states).sum();
    s.transitions = parts.iter().map(|p| p.search.transitions).sum();
    s.max_depth = parts.iter().map(|p| p.search.max_depth).max().unwrap_or(0);
    s.complete = complete;
    s.bound_hit = if complete {
        None
    } else {
        parts.iter().find_map(|p| p.search.bound_hit.clone())
    };
    s.seconds = parts.iter().map(|p| p.search.seconds).sum();
    s.threads = parts.iter().map(|p| p.search.threads).sum();
    s.peak_memory_bytes = parts
        .iter()
        .filter_map(|p| p.search.peak_memory_bytes)
        .max();
    s.spilled_bytes = parts
        .iter()
        .filter_map(|p| p.search.spilled_bytes)
        .reduce(|a, b| a + b);
    // With the largest peak and the largest limit, a peak above the limit
    // is one above some shard's own.
    s.memory_limit_bytes = parts
        .iter()
        .filter_map(|p| p.search.memory_limit_bytes)
        .max();
    s.max_accepted_writes = parts
        .iter()
        .map(|p| p.search.max_accepted_writes)
        .max()
        .unwrap_or(0);
    let (states, bound) = (s.states, s.bound_hit.clone().unwrap_or_default());
    for v in r.verdicts.iter_mut().filter(|v| v.status == "unknown") {
        v.note = crate::check::swarm_unknown_note(sw.members, states, &bound);
    }
    r
}

/// Prints one merged check report as `check` would, and writes its traces.
fn finish_one(report: CheckReport, args: &MergeArgs) -> Result<i32, Failure> {
    if let Some(d) = &args.out_dir {
        crate::util::prepare_dir("out-dir", d)?;
        write_traces(d, &[&report], Format::Json)?;
    }
    if args.json {
        out!("{}", report.to_json())?;
    } else {
        out!(
            "{}",
            crate::report::render(&report, Some(Format::Table), crate::util::stdout_color())
        )?;
    }
    Ok(exit_code(report.verdicts.iter()))
}
