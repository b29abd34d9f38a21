//! `locklab trace against PROTOCOL FILE`: run a counterexample's schedule
//! against another protocol (or the same one with other knobs) and show
//! where the fix blocks it (README.md, "Rendering traces").

use crate::options::ModelArgs;
use crate::util::{EXIT_INCOMPLETE, EXIT_OK, EXIT_VIOLATION, Failure};
use clap::Args;
use locklab_models::Action;
use locklab_models::engine::concrete::CState;
use locklab_models::engine::solve::Rational;
use locklab_models::params::PARAMS;
use locklab_models::transfer::transfer;
use locklab_models::world::Log;
use locklab_models::{Invariant, LockModel, Params, trace, units};
use locklab_traces::Trace;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AgainstArgs {
    /// The protocol to run the schedule against, and any knob to change
    /// (`--resource-check read-write`, `--delayed-restart`, `--ttl`, ...).
    /// The world (clients, acquisitions, faults) is the trace's and cannot
    /// be changed here; so are its timings unless set.
    #[command(flatten)]
    pub model: ModelArgs,
    /// A trace file or a check report (`locklab check --json`; `-`: standard input)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// From a check report, the trace of this invariant [default: the first]
    #[arg(long, value_name = "NAME")]
    pub invariant: Option<String>,
    /// Switch off yes/no knobs the trace carries, comma-separated, to run
    /// the fix of a bug knob: renew-unchecked, no-cancel, delayed-restart,
    /// no-recheck, fence-reads, idempotent
    #[arg(long, value_name = "KNOBS", value_delimiter = ',')]
    pub off: Vec<String>,
    /// Set yes/no knobs, comma-separated KNOB=true|false, on or off whatever
    /// the trace carries (`--set renew-unchecked=false` runs the fix of the
    /// unchecked renewal on its own counterexample); the knobs are --off's
    #[arg(long = "set", value_name = "KNOB=BOOL", value_delimiter = ',')]
    pub set: Vec<String>,
}

/// The yes/no knobs `--off` and `--set` can switch, by CLI name.
pub const SWITCHES: &[&str] = &[
    "renew-unchecked",
    "no-cancel",
    "delayed-restart",
    "no-recheck",
    "fence-reads",
    "idempotent",
];

/// Sets yes/no knob `knob` to `on` in `p`; `flag` is the option that
/// named it, for the message when it is no such knob.
fn switch(p: &mut Params, knob: &str, on: bool, flag: &str) -> Result<(), Failure> {
    let field = match knob {
        "renew-unchecked" => &mut p.renew_unchecked,
        "no-cancel" => &mut p.no_cancel,
        "delayed-restart" => &mut p.delayed_restart,
        "no-recheck" => &mut p.no_recheck,
        "fence-reads" => &mut p.fence_reads,
        "idempotent" => &mut p.idempotent,
        _ => {
            return Err(Failure::input(format!(
                "{flag}: not a yes/no knob; allowed: {} (other knobs take their own option, e.g. --ttl 20s)",
                SWITCHES.join(", ")
            )));
        }
    };
    *field = on;
    Ok(())
}

/// `--set KNOB=true|false`: the knob and its value.
fn parse_set(item: &str) -> Result<(&str, bool), Failure> {
    let item = item.trim();
    let (knob, value) = item.split_once('=').ok_or_else(|| {
        Failure::input(format!(
            "--set {item}: expected KNOB=true or KNOB=false (for example --set renew-unchecked=false)"
        ))
    })?;
    let on = match value.trim() {
        "true" => true,
        "false" => false,
        other => {
            return Err(Failure::input(format!(
                "--set {item}: {other:?} is not a yes/no value; allowed: true, false"
            )));
        }
    };
    Ok((knob.trim(), on))
}

/// `source`'s world and knobs carried over to protocol `proto`: `proto`'s
/// defaults, with every parameter of the source that `proto` also has (the
/// world's, and each knob both take), and no fault kind `proto`'s lock
/// service cannot suffer.
pub fn carried_over(
    source: &LockModel,
    proto: &dyn locklab_models::Protocol,
) -> Result<Params, String> {
    let mut map = Params::defaults(proto).to_map();
    for (k, v) in source.params.to_map() {
        let shared = match PARAMS.iter().find(|p| p.name == k) {
            Some(info) => info.only.is_none_or(|only| only.contains(&proto.name())),
            // Not a user knob (the fault budgets, the cap): the world's.
            None => true,
        };
        if shared {
            map.insert(k, v);
        }
    }
    let mut p = Params::from_map(&map)?;
    for k in p.faults.enabled() {
        if !proto.faults().contains(&k) {
            p.faults.set(k, 0);
        }
    }
    Ok(p)
}

/// The target model: the trace's world, the target protocol's own knobs
/// (the source's where the target has the same knob), then what the user
/// set.
fn target_model(source: &LockModel, args: &AgainstArgs) -> Result<LockModel, Failure> {
    if let Some(name) = args.model.world_given().first() {
        return Err(Failure::input(format!(
            "--{name} cannot be set here: the schedule is the trace's, with its clients, acquisitions and faults; change the protocol or its knobs (--resource-check, --delayed-restart, --ttl, ...)"
        )));
    }
    let proto = args.model.proto()?;
    if proto.service() != source.proto.service() {
        return Err(Failure::input(format!(
            "{} and {} talk to different kinds of lock service ({:?} vs {:?}): a schedule of one means nothing to the other",
            source.proto.name(),
            proto.name(),
            source.proto.service(),
            proto.service()
        )));
    }
    let mut p = carried_over(source, proto).map_err(Failure::input)?;
    args.model.overlay(proto, &mut p)?;
    for knob in &args.off {
        let knob = knob.trim();
        switch(&mut p, knob, false, &format!("--off {knob}"))?;
    }
    for item in &args.set {
        let (knob, on) = parse_set(item)?;
        switch(&mut p, knob, on, &format!("--set {}", item.trim()))?;
    }
    LockModel::new(proto, p).map_err(|e| Failure::input(crate::options::cli_names(&e.0)))
}

/// Labels of the timed steps of `path` through `m`, as a trace would show
/// them, and the state after the last one.
fn labels(m: &LockModel, path: &[(Action, Rational)]) -> Result<(Vec<String>, CState), Failure> {
    let mut s = m.cinit();
    let mut out = Vec::with_capacity(path.len());
    for (a, at) in path {
        let mut log = Log::on();
        s = m.cstep(&s, a, *at, &mut log).map_err(|e| Failure {
            code: 70,
            message: format!(
                "internal error: the transferred run does not replay at its times ({}: {e})",
                trace::action_text(a)
            ),
        })?;
        out.push(trace::label(&log.take()));
    }
    Ok((out, s))
}

/// Why the target, in state `s`, has no step playing the role of source
/// action `a` at time `at`.
fn why_parted(target: &LockModel, s: &CState, a: &Action, at: Rational) -> String {
    let w = &s.world;
    let view = locklab_models::view::view(target, s, &locklab_models::view::Clocks::new(w));
    let name = target.proto.name();
    let when = units::show_rational(at);
    if let Some(d) = target.deadline(s)
        && d < at
    {
        return format!(
            "in {name} a step of its own falls due at {} and none can be taken then",
            units::show_rational(d)
        );
    }
    match a {
        Action::Deliver { msg } | Action::Drop { msg } | Action::Delay { msg } => {
            let to = w.node_name(msg.to);
            let down = view
                .servers
                .iter()
                .find(|s| s.id == to)
                .filter(|s| s.status != "up")
                .map(|s| format!(" ({to} is {})", s.status))
                .unwrap_or_default();
            match target.cstep(s, a, at, &mut Log::off()) {
                Err(e) if w.net.iter().any(|m| m.from == msg.from && m.to == msg.to) => format!(
                    "in {name} the message from {} to {to} cannot arrive at {when}: {e}{down}",
                    w.node_name(msg.from)
                ),
                _ => format!(
                    "in {name} no message from {} to {to} of that kind is in flight{down}",
                    w.node_name(msg.from)
                ),
            }
        }
        Action::Step { client } | Action::Watchdog { client } => {
            match view.clients.get(*client as usize) {
                Some(c) => format!(
                    "in {name} {} has no such step due at {when} ({})",
                    c.id, c.phase
                ),
                None => format!("in {name} there is no client c{}", client + 1),
            }
        }
        other => format!(
            "{name} cannot take the step \"{}\" at {when}",
            trace::action_text(other)
        ),
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

/// What tells the two runs apart: the protocol names when they differ,
/// otherwise the protocol with every setting that differs
/// (`fencing resource-check=write` against `fencing resource-check=read-write`).
fn column_names(source: &LockModel, target: &LockModel) -> (String, String) {
    let (s, t) = (source.proto.name(), target.proto.name());
    if s != t {
        return (s.to_string(), t.to_string());
    }
    let (a, b) = (source.params.to_map(), target.params.to_map());
    // A setting a trace leaves out has its default.
    let shown = |k: &str, v: Option<&serde_json::Value>| match v {
        Some(v) => crate::report::param_value(k, v),
        None => match locklab_models::Params::omitted(k) {
            Some(d) => crate::report::param_value(k, &d),
            None => "off".to_string(),
        },
    };
    let (mut ls, mut lt) = (s.to_string(), t.to_string());
    for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
        // A range (`--work`, `--latency`) is one option: shown once, whole.
        if let Some(range) = k.strip_suffix("-min") {
            let hi = format!("{range}-max");
            if a.get(k) != b.get(k) || a.get(&hi) != b.get(&hi) {
                let _ = write!(
                    ls,
                    " {range}={}..{}",
                    shown(k, a.get(k)),
                    shown(&hi, a.get(&hi))
                );
                let _ = write!(
                    lt,
                    " {range}={}..{}",
                    shown(k, b.get(k)),
                    shown(&hi, b.get(&hi))
                );
            }
            continue;
        }
        if k.ends_with("-max") && a.contains_key(&k.replace("-max", "-min")) {
            continue;
        }
        if a.get(k) != b.get(k) {
            let name = crate::options::cli_name(k);
            let _ = write!(ls, " {name}={}", shown(k, a.get(k)));
            let _ = write!(lt, " {name}={}", shown(k, b.get(k)));
        }
    }
    (ls, lt)
}

pub fn run(args: &AgainstArgs) -> Result<i32, Failure> {
    let traces = crate::trace_cmd::load(&args.file, args.invariant.as_deref())?;
    let t: &Trace = traces.first().ok_or_else(|| {
        Failure::input(format!(
            "{}: no trace in it",
            crate::util::input_name(&args.file)
        ))
    })?;
    let source = trace::model_from_config(&t.config).map_err(Failure::input)?;
    let inv = Invariant::from_name(&t.invariant)
        .ok_or_else(|| Failure::input(format!("unknown invariant {:?}", t.invariant)))?;
    let target = target_model(&source, args)?;
    if !inv.applies(&target) {
        return Err(Failure::input(format!(
            "{} does not apply to {}",
            inv.name(),
            target.proto.name()
        )));
    }
    let path = trace::actions(t).map_err(|e| Failure::input(e.to_string()))?;
    let result = transfer(&source, &path, &target, inv);
    let tpath: Vec<(Action, Rational)> = result.steps.iter().map(|s| (s.action, s.at)).collect();
    let (tl, last) = labels(&target, &tpath)?;

    let (src_name, tgt_name) = column_names(&source, &target);
    let (src_name, tgt_name) = (src_name.as_str(), tgt_name.as_str());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "the {} counterexample of {src_name} ({} steps), its schedule run against {tgt_name}",
        t.invariant,
        t.steps.len()
    );
    let _ = writeln!(
        out,
        "(each row: the source step, the time the target took its step, and what the target did in its place; ≠ marks a different outcome; \"+\" rows are the target's own due steps)"
    );
    let _ = writeln!(out);
    let w = 72;
    let _ = writeln!(out, " step  {:>12}  {:<w$}     {tgt_name}", "t", src_name);
    let mut shown = 0;
    let mut differ: Vec<usize> = Vec::new();
    for (k, s) in result.steps.iter().enumerate() {
        let t_at = units::show_rational(s.at);
        let mark = if s.broken && result.broken_at == Some(k) {
            format!("   <-- {} broken", t.invariant)
        } else {
            String::new()
        };
        match s.source {
            Some(i) if i > shown => {
                shown = i;
                let src = &t.steps[i - 1];
                let smark = if i == t.violation_step { " ✗" } else { "" };
                let ne = if src.label != tl[k] {
                    differ.push(i);
                    "≠"
                } else {
                    " "
                };
                let _ = writeln!(
                    out,
                    " {:>4}  {t_at:>12}  {:<w$}  {ne}  {}{mark}",
                    i,
                    cut(&format!("{}{smark}", src.label), w),
                    tl[k]
                );
            }
            Some(_) => {
                let _ = writeln!(
                    out,
                    " {:>4}  {t_at:>12}  {:<w$}     {}{mark}",
                    "", "", tl[k]
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    " {:>4}  {t_at:>12}  {:<w$}  +  {}{mark}",
                    "", "", tl[k]
                );
            }
        }
    }
    let _ = writeln!(out);
    let at = t.violation_step;
    let played_to = result.parted_at.map_or(t.steps.len(), |p| p - 1);
    let code = match (result.broken_at, result.parted_at) {
        (Some(k), _) => {
            let _ = writeln!(
                out,
                "verdict: {tgt_name} breaks {} too under the same schedule: {}",
                t.invariant, tl[k]
            );
            EXIT_VIOLATION
        }
        (None, Some(p)) if p <= at => {
            let _ = writeln!(
                out,
                "verdict: inconclusive: the schedules part at step {p} ({}): {}; {src_name} breaks {} at step {at}",
                t.steps[p - 1].label,
                why_parted(&target, &last, &path[p - 1].0, path[p - 1].1),
                t.invariant
            );
            EXIT_INCOMPLETE
        }
        _ => {
            let blocked = result
                .steps
                .iter()
                .position(|s| s.source == Some(at))
                .map(|k| tl[k].clone())
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "verdict: {tgt_name} BLOCKS it: {} holds through the schedule (followed to step {played_to} of {}). {src_name} breaks it at step {at} ({}); in its place {tgt_name} does: {blocked}",
                t.invariant,
                t.steps.len(),
                t.steps[at - 1].label
            );
            if !differ.is_empty() {
                let list: Vec<String> = differ.iter().map(|i| i.to_string()).collect();
                let _ = writeln!(
                    out,
                    "         the steps that played out differently (≠): {}",
                    list.join(", ")
                );
            }
            EXIT_OK
        }
    };
    out!("{out}")?;
    Ok(code)
}
