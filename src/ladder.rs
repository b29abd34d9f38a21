//! `locklab check all`: the whole ladder in one command — every protocol
//! checked with its default fault kinds, and the protocol × invariant
//! matrix, each broken cell pointing at its shortest counterexample.

use crate::check::{CheckArgs, exit_code, report, search_options, trace_file_name, write_traces};
use crate::util::{Failure, write_atomic};
use locklab_models::{FaultKind, Invariant, LockModel, protocols};
use locklab_traces::{CheckReport, Format};
use std::fmt::Write;
use std::path::Path;

/// The options of `check` that name one protocol's knobs make no sense
/// for every protocol at once.
fn refuse_protocol_knobs(args: &CheckArgs) -> Result<(), Failure> {
    let m = &args.model;
    let given = [
        ("renew-every", m.renew_every.is_some()),
        ("renew-cap", m.renew_cap.is_some()),
        ("renew-unchecked", m.renew_unchecked),
        ("no-cancel", m.no_cancel),
        ("instances", m.instances.is_some()),
        ("quorum", m.quorum.is_some()),
        ("drift-factor", m.drift_factor.is_some()),
        ("delayed-restart", m.delayed_restart),
        ("resource-check", m.resource_check.is_some()),
        ("token-rule", m.token_rule.is_some()),
        ("no-recheck", m.no_recheck),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(Failure::input(format!(
            "--{name} applies to some protocols only; with `check all` every protocol runs with its defaults (check one protocol to change it)"
        ))),
        None => Ok(()),
    }
}

pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    refuse_protocol_knobs(args)?;
    let shard = crate::check_shards::parse(args)?;
    let baseline = args
        .expect
        .as_deref()
        .map(crate::check::load_baseline)
        .transpose()?;
    let format = args.format.format();
    if !matches!(format, Format::Table | Format::Text | Format::Json) && args.out_dir.is_none() {
        return Err(Failure::input(format!(
            "`check all --format {}` draws one file per counterexample: add --out-dir DIR",
            format.name()
        )));
    }
    // --faults names kinds for every protocol: each keeps those it can suffer.
    let asked: Option<Vec<FaultKind>> = match args.model.faults.as_deref().map(str::trim) {
        None | Some("all") => None,
        Some("none") => Some(Vec::new()),
        Some("") => return Err(crate::options::empty_faults()),
        Some(list) => Some(
            list.split(',')
                .map(str::trim)
                .map(|s| {
                    FaultKind::from_name(s).ok_or_else(|| {
                        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                        crate::util::unknown("fault kind", s, &names)
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    if crate::check::checks_none(args) {
        return Err(Failure::input(
            "--invariants none explores one protocol's whole space: name the protocol (check PROTOCOL --invariants none)",
        ));
    }
    let wanted: Option<Vec<Invariant>> = match &args.invariants {
        None => None,
        Some(list) => Some(
            list.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    Invariant::from_name(s).ok_or_else(|| {
                        let names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
                        crate::util::unknown("invariant", s, &names)
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    };

    let plan = plan(args, asked.as_deref(), wanted.as_deref())?;
    let mine: Vec<&Planned> = plan
        .iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| *i as u64 % s.count == s.index))
        .map(|(_, p)| p)
        .collect();

    if let Some(d) = &args.out_dir {
        crate::util::prepare_dir("out-dir", d)?;
    }
    let watch = crate::watch::Watch::start(crate::check::limits(args)?);
    let color = crate::util::stdout_color();
    let faults = args.model.faults.as_deref();
    let mut reports: Vec<CheckReport> = Vec::new();
    for (i, p) in mine.iter().enumerate() {
        note!(
            "{}checking {} ...",
            crate::watch::clear_line(),
            p.model.proto.name()
        );
        // Should the run end during this protocol, what is finished is
        // printed and the rest named.
        let pending = mine[i + 1..]
            .iter()
            .map(|p| p.model.proto.name().to_string())
            .collect();
        watch.finished(
            stdout_text(&reports, faults, args.out_dir.as_deref(), format, color),
            pending,
        );
        reports.push(report(
            &p.model,
            &search_options(args, p.invariants.clone()),
            !args.no_fault_analysis,
            Some(&watch),
        )?);
    }
    watch.done();

    if let Some(s) = shard {
        let plan = crate::check_shards::ladder_plan(&plan);
        return crate::check_shards::finish(args, s, plan, reports, color);
    }
    let all = serde_json::to_string_pretty(&reports).expect("reports serialise") + "\n";
    let json_to_stdout = args.json.as_deref().is_some_and(crate::util::is_dash);
    if let Some(p) = &args.json
        && !json_to_stdout
    {
        write_atomic(p, &all)?;
    }
    if let Some(d) = &args.out_dir {
        let refs: Vec<&CheckReport> = reports.iter().collect();
        write_traces(d, &refs, format)?;
    }
    if json_to_stdout {
        out!("{all}")?;
    } else {
        out!(
            "{}",
            stdout_text(&reports, faults, args.out_dir.as_deref(), format, color)
        )?;
    }
    if let Some(b) = &baseline {
        let refs: Vec<&CheckReport> = reports.iter().collect();
        return Ok(crate::check::expect_exit(b, &refs));
    }
    Ok(exit_code(reports.iter().flat_map(|r| r.verdicts.iter())))
}

/// One protocol's check in `check all`: its model, as the options and its
/// defaults make it, and the invariants that apply to it.
pub struct Planned {
    pub model: LockModel,
    pub invariants: Vec<Invariant>,
}

/// Every check `check all` runs, in the order of `protocols::ALL`: a
/// protocol none of whose invariants is asked for is left out. Building a
/// model costs nothing next to searching it, so every shard builds the
/// whole plan, and `merge` can tell that the shards ran the same one.
fn plan(
    args: &CheckArgs,
    asked: Option<&[FaultKind]>,
    wanted: Option<&[Invariant]>,
) -> Result<Vec<Planned>, Failure> {
    let mut plan = Vec::new();
    for proto in protocols::ALL.iter() {
        let mut margs = args.model.clone();
        margs.protocol = proto.name().to_string();
        if let Some(kinds) = asked {
            let mine: Vec<&str> = kinds
                .iter()
                .filter(|k| proto.faults().contains(k))
                .map(|k| k.name())
                .collect();
            margs.faults = Some(if mine.is_empty() {
                "none".into()
            } else {
                mine.join(",")
            });
            margs.budget.retain(|b| {
                b.split_once('=')
                    .and_then(|(k, _)| FaultKind::from_name(k.trim()))
                    .is_some_and(|k| proto.faults().contains(&k))
            });
        }
        let model = crate::check::reductions(args, margs.build()?);
        let invariants: Vec<Invariant> = Invariant::ALL
            .into_iter()
            .filter(|i| i.applies(&model))
            .filter(|i| wanted.is_none_or(|w| w.contains(i)))
            .collect();
        if !invariants.is_empty() {
            plan.push(Planned { model, invariants });
        }
    }
    Ok(plan)
}

/// What `check all` prints: every report as JSON, or the matrix.
fn stdout_text(
    reports: &[CheckReport],
    faults: Option<&str>,
    out_dir: Option<&Path>,
    format: Format,
    color: bool,
) -> String {
    if format == Format::Json {
        serde_json::to_string_pretty(reports).expect("reports serialise") + "\n"
    } else {
        matrix(reports, faults, out_dir, color)
    }
}

/// The protocol × invariant matrix of `reports`, as run with `--faults
/// faults`; trace files are named in `out_dir` when given.
pub fn matrix(
    reports: &[CheckReport],
    faults: Option<&str>,
    out_dir: Option<&Path>,
    color: bool,
) -> String {
    let (red, green, yellow, reset) = if color {
        ("\x1b[1;31m", "\x1b[32m", "\x1b[33m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    let mut out = String::new();
    let cap = reports
        .first()
        .and_then(|r| r.config.params.get("max-faults"))
        .and_then(|v| v.as_u64());
    let kinds = match faults.map(str::trim) {
        None | Some("all") => "every fault kind its lock service can suffer".to_string(),
        Some("none") => "no fault".to_string(),
        Some(list) => format!("the fault kinds {list} where its lock service can suffer them"),
    };
    let _ = writeln!(
        out,
        "locklab check all: {} protocols, each with {kinds}{}",
        reports.len(),
        cap.map(|c| format!(" (at most {c} per execution)"))
            .unwrap_or_default()
    );
    if let Some(r) = reports.first() {
        let _ = writeln!(out, "network: {}", crate::report::network_line(&r.config));
    }
    let _ = writeln!(
        out,
        "cells: ✗ N = broken, shortest counterexample N steps; ok = holds (exhaustive); ? = search incomplete; vacuous = never put to the test; - = n/a"
    );
    let _ = writeln!(out);
    // The invariants some report speaks of (no_oversell only with a stock).
    let names: Vec<&str> = Invariant::ALL
        .iter()
        .map(|i| i.name())
        .filter(|n| {
            reports
                .iter()
                .any(|r| r.verdicts.iter().any(|v| v.invariant == *n))
        })
        .collect();
    let wp = reports
        .iter()
        .map(|r| r.config.protocol.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut header = format!("{:<wp$}", "protocol");
    for n in &names {
        let _ = write!(header, "  {n:<16}");
    }
    let _ = writeln!(out, "{header}  states");
    for r in reports {
        let mut line = format!("{:<wp$}", r.config.protocol);
        for n in &names {
            let cell = match r.verdicts.iter().find(|v| v.invariant == *n) {
                Some(v) if v.status == "violated" => {
                    let txt = format!("✗ {}", v.steps.unwrap_or(0));
                    format!("{red}{txt:<16}{reset}")
                }
                Some(v) if v.status == "holds" => format!("{green}{:<16}{reset}", "ok"),
                Some(v) if v.status == "unknown" => format!("{yellow}{:<16}{reset}", "?"),
                Some(v) if v.status == "vacuous" => format!("{yellow}{:<16}{reset}", "vacuous"),
                _ => format!("{:<16}", "-"),
            };
            let _ = write!(line, "  {cell}");
        }
        let _ = writeln!(out, "{line}  {}", crate::report::thousands(r.search.states));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Broken cells (smallest fault sets; trace files with --out-dir):"
    );
    for r in reports {
        for v in r.verdicts.iter().filter(|v| v.status == "violated") {
            let sets = v
                .minimal_fault_sets
                .as_ref()
                .map(|s| {
                    s.iter()
                        .map(|set| {
                            if set.is_empty() {
                                "no fault".into()
                            } else {
                                set.join("+")
                            }
                        })
                        .collect::<Vec<String>>()
                        .join(" | ")
                })
                .unwrap_or_else(|| v.faults_used.join("+"));
            let file = r
                .traces
                .iter()
                .find(|t| t.invariant == v.invariant)
                .zip(out_dir)
                .map(|(t, d)| format!(" -> {}", d.join(trace_file_name(t)).display()))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} · {}: {} steps, {sets}{file}",
                r.config.protocol,
                v.invariant,
                v.steps.unwrap_or(0)
            );
        }
    }
    out
}
