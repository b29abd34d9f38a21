//! The text form of a check report: the configuration, the search, one line
//! per invariant, then each counterexample as a step table.

use locklab_models::params::PARAMS;
use locklab_traces::{CheckReport, Config, Format};
use std::fmt::Write;

/// Parameters stored in µs, shown as durations with units.
const DURATIONS: &[&str] = &[
    "ttl",
    "step",
    "timeout",
    "retry",
    "retry-max",
    "pause-max",
    "delay-max",
    "jump",
    "renew-every",
    "renew-cap",
    "reconcile",
    "detect-within",
];

/// A parameter's value as the CLI takes it back: durations with units
/// (`30s`), the drift factor as a decimal, `off` for an unset option.
pub fn param_value(key: &str, v: &serde_json::Value) -> String {
    match key {
        "work-min" | "work-max" | "latency-min" | "latency-max" => duration_text(v),
        "drift-factor-ppm" => {
            let ppm = v.as_u64().unwrap_or(0);
            let frac = format!("{:06}", ppm % 1_000_000);
            let frac = frac.trim_end_matches('0');
            let sep = if frac.is_empty() { "" } else { "." };
            format!("{}{sep}{frac}", ppm / 1_000_000)
        }
        k if DURATIONS.contains(&k) => duration_text(v),
        "validity-check" => if v.as_bool() == Some(false) {
            "off"
        } else {
            "on"
        }
        .into(),
        _ => match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "off".into(),
            other => other.to_string(),
        },
    }
}

/// A duration parameter's value in the form the CLI takes back (`30s`).
fn duration_text(v: &serde_json::Value) -> String {
    match v.as_i64() {
        Some(us) => locklab_models::units::arg(us),
        None if v.is_null() => "off".into(),
        None => v.to_string(),
    }
}

/// `ttl=30s work=200ms..2s latency=200us..5ms ...` for the parameters that
/// apply to the protocol, by their CLI names and in their CLI forms.
pub fn params_line(c: &Config) -> String {
    let get = |k: &str| c.params.get(k);
    PARAMS
        .iter()
        .filter(|p| {
            p.only
                .is_none_or(|only| only.contains(&c.protocol.as_str()))
        })
        .filter(|p| {
            !matches!(
                p.name,
                "clients" | "acquisitions" | "max-faults" | "work-max" | "latency-max"
            )
        })
        .filter_map(|p| {
            let key = p.name;
            let v = get(key)?;
            Some(match key {
                "work-min" | "latency-min" => {
                    let name = key.trim_end_matches("-min");
                    let hi = get(&format!("{name}-max"))
                        .map(duration_text)
                        .unwrap_or_default();
                    format!("{name}={}..{hi}", duration_text(v))
                }
                "drift-factor-ppm" => format!("drift-factor={}", param_value(key, v)),
                "clock-drift-ppm" => format!("clock-drift={v}ppm"),
                _ => format!("{key}={}", param_value(key, v)),
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the network semantics in `c` mean, for every result.
pub fn network_line(c: &Config) -> String {
    match c.params.get("network").and_then(|v| v.as_str()) {
        Some("unordered") => "unordered: any message in flight may overtake any other".into(),
        Some(other) => format!(
            "{other}: one ordered TCP connection per client, server and channel; a new one after a timeout (what was sent on the old one may still arrive, in its own order)"
        ),
        None => "fifo".into(),
    }
}

pub fn faults_line(c: &Config) -> String {
    if c.faults.is_empty() {
        return "none".into();
    }
    let kinds = c
        .faults
        .iter()
        .map(|(k, n)| {
            if *n == 1 {
                k.clone()
            } else {
                format!("{k}={n}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    match c.params.get("max-faults").and_then(|v| v.as_u64()) {
        Some(cap) => {
            format!("at most {cap} per execution, of kinds {kinds} (budget 1 each unless shown)")
        }
        None => format!("{kinds} (budget 1 each unless shown; no cap on how many strike together)"),
    }
}

/// `12345` -> `12,345`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// What to do about an exhaustive search that stopped at a bound with
/// invariants still unknown: an unknown is not a pass, and the user should
/// not have to guess which knob moves it. A swarm is never exhaustive, so
/// raising its bound is no advice.
fn next_step_when_incomplete(r: &CheckReport) -> Option<String> {
    let bound = r.search.bound_hit.as_deref()?;
    if r.search.strategy.starts_with("swarm") || r.verdicts.iter().all(|v| v.status != "unknown") {
        return None;
    }
    let raise = if bound.starts_with("--max-states") {
        "raise --max-states (memory grows with it; --memory-limit 2G keeps RAM flat by writing to disk)"
    } else if bound.starts_with("--max-depth") {
        "raise --max-depth or drop it"
    } else {
        "give the search more time or memory (--time-limit, --max-memory; --memory-limit 2G writes to disk instead of stopping)"
    };
    // Several kinds at once make the space wide; one kind alone reaches
    // much deeper (the default Redlock search stops at depth 11, while
    // `--faults clock-jump` breaks mutual exclusion at depth 15 in seconds).
    let fewer = match r.config.faults.iter().next() {
        Some((kind, _)) if r.config.faults.len() > 1 => {
            format!("one fault kind at a time (--faults {kind}, and so on)")
        }
        _ => "fewer fault kinds (--faults)".to_string(),
    };
    Some(format!(
        "an unknown is not a pass. To decide it, {raise}, or ask a smaller question: {fewer}, fewer at once (--max-faults 1), one invariant (--invariants NAME)"
    ))
}

/// One sentence that separates what clients believe from what happened to
/// the resource, for protocols that can keep the resource safe while
/// beliefs overlap (fencing).
fn belief_vs_resource(r: &CheckReport) -> Option<String> {
    let status = |name: &str| {
        r.verdicts
            .iter()
            .find(|v| v.invariant == name)
            .map(|v| v.status.as_str())
    };
    let fenced = r
        .config
        .params
        .get("resource-check")
        .and_then(|v| v.as_str())
        .is_some_and(|c| c != "none");
    match (status("mutual_exclusion"), status("no_lost_update")) {
        (Some("violated"), Some("vacuous")) if fenced && r.search.max_accepted_writes == 0 => Some(
            "Belief vs resource: two clients can believe they hold the lock at once; the resource loses no update only because it accepts none: with this token rule a holder's own read raises the mark to its token and its write is then rejected.".into(),
        ),
        (Some("violated"), Some("holds")) if fenced => Some(
            "Belief vs resource: two clients can believe they hold the lock at once, and the resource still stays correct: its token check turns away every stale write.".into(),
        ),
        (Some("violated"), Some("violated")) if fenced => Some(
            "Belief vs resource: two clients can believe they hold the lock at once, and the token check does not save the resource: an update is lost anyway (see no_lost_update).".into(),
        ),
        _ => None,
    }
}

pub fn render(r: &CheckReport, traces: Option<Format>, color: bool) -> String {
    let (bold, red, green, yellow, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[32m", "\x1b[33m", "\x1b[0m")
    } else {
        ("", "", "", "", "")
    };
    let c = &r.config;
    let s = &r.search;
    let mut out = String::new();
    let _ = writeln!(out, "{bold}locklab check {}{reset}", c.protocol);
    let _ = writeln!(
        out,
        "  world:  {} clients, {} acquisition{} each; faults: {}",
        c.clients,
        c.acquisitions,
        if c.acquisitions == 1 { "" } else { "s" },
        faults_line(c)
    );
    let _ = writeln!(out, "  params: {}", params_line(c));
    let _ = writeln!(out, "  network: {}", network_line(c));
    let _ = writeln!(out, "  time:   {}", c.time);
    let completeness = if s.complete {
        "exhaustive".to_string()
    } else if let Some(b) = &s.bound_hit {
        format!("{yellow}INCOMPLETE: stopped at {b}{reset}")
    } else {
        "stopped once every invariant checked was broken".to_string()
    };
    let _ = writeln!(
        out,
        "  search: {}{}, {} states, {} transitions, depth {}, {}, {:.2} s",
        s.strategy,
        if s.symmetry {
            " with symmetry reduction"
        } else {
            ""
        },
        thousands(s.states),
        thousands(s.transitions),
        s.max_depth,
        completeness,
        s.seconds
    );
    if let Some(b) = s.spilled_bytes {
        let _ = writeln!(
            out,
            "  spilled: {:.1} MiB of levels, parent links and passed zones written to disk (--memory-limit)",
            b as f64 / (1u64 << 20) as f64
        );
        // What cannot go to disk still grows: say so rather than let the
        // limit read as a bound on RAM.
        if let (Some(peak), Some(limit)) = (s.peak_memory_bytes, s.memory_limit_bytes)
            && peak > limit
        {
            let _ = writeln!(
                out,
                "  memory: resident memory peaked at {}, above --memory-limit {}: the level being built and the index of the worlds stay in RAM (--max-memory stops a search at a size)",
                mib(peak),
                mib(limit)
            );
        }
    }
    let _ = writeln!(out);
    let w_inv = r
        .verdicts
        .iter()
        .map(|v| v.invariant.len())
        .max()
        .unwrap_or(9);
    let w_cat = r
        .verdicts
        .iter()
        .map(|v| v.category.len())
        .max()
        .unwrap_or(8);
    for v in &r.verdicts {
        let verdict = match v.status.as_str() {
            "violated" => format!("{red}VIOLATED{reset} in {} steps", v.steps.unwrap_or(0)),
            "holds" => format!("{green}holds{reset}"),
            "unknown" => format!("{yellow}unknown{reset}"),
            "vacuous" => format!("{yellow}vacuous{reset}"),
            other => other.to_string(),
        };
        let faults = if v.status != "violated" {
            String::new()
        } else {
            match &v.minimal_fault_sets {
                Some(sets) if sets.iter().any(|s| s.is_empty()) => {
                    "breaks with no fault at all; ".into()
                }
                Some(sets) => {
                    let alts: Vec<String> = sets.iter().map(|s| s.join("+")).collect();
                    let qual = v.fault_sets_caveat();
                    format!("smallest fault sets: {}{qual}; ", alts.join(" | "))
                }
                None if v.faults_used.is_empty() => "uses no fault; ".to_string(),
                None => format!("uses {}; ", v.faults_used.join("+")),
            }
        };
        let _ = writeln!(
            out,
            "  {:<w_inv$}  {:<w_cat$}  {verdict}  {faults}{}",
            v.invariant, v.category, v.note
        );
    }
    if let Some(s) = belief_vs_resource(r) {
        let _ = writeln!(out);
        let _ = writeln!(out, "  {s}");
    }
    if let Some(s) = next_step_when_incomplete(r) {
        let _ = writeln!(out);
        let _ = writeln!(out, "  {yellow}next:{reset} {s}");
    }
    // A swarm's depth-first paths are whatever paths its members took.
    let which = if r.search.strategy.starts_with("swarm") {
        "the shortest counterexample the swarm found"
    } else {
        "shortest counterexample"
    };
    for t in r.traces.iter().filter(|_| traces.is_some()) {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{bold}== {}: {which} ({} steps, replayed through the model){reset}",
            t.invariant,
            t.steps.len()
        );
        out.push_str(&traces.unwrap_or(Format::Table).render(t, color));
    }
    if r.traces.is_empty()
        && r.verdicts
            .iter()
            .all(|v| v.status != "unknown" && v.status != "vacuous")
    {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "No invariant is broken: every reachable state was explored."
        );
    }
    out
}

/// Bytes as whole MiB (KiB below one MiB, as a limit of `1K` is), for a
/// summary or progress line.
pub fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{} MiB", thousands(bytes >> 20))
    }
}
