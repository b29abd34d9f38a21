//! `locklab audit [FILE]`: the pre-launch review of one described lock
//! (docs/audit.md). From the description alone it runs
//!
//! 1. the exhaustive check of every invariant under the faults the file
//!    allows, with the smallest fault sets that break each one;
//! 2. the simulator under the file's timings: the rate per acquisition with
//!    its interval, and per day at the file's acquisition rate;
//! 3. for each broken invariant, the fixes of the article's ladder (a knob,
//!    the next rung): each is run against the counterexample's own schedule
//!    (as `trace against` does) and then confirmed by its own check;
//! 4. the article's §9.2 checklist, each item answered from 1–3.
//!
//! Nothing here is looked up: every verdict, rate and fix comes from a
//! search or a simulation run now, and the report says which.

use crate::check::{self, CheckArgs};
use crate::config::{Description, For};
use crate::sim_cmd::SimulateArgs;
use crate::util::{EXIT_INCOMPLETE, EXIT_OK, EXIT_VIOLATION, Failure, write_atomic};
use clap::Args;
use locklab_models::protocols::{self, Renewal, Service};
use locklab_models::search::SearchOptions;
use locklab_models::transfer::transfer;
use locklab_models::{Invariant, LockModel, trace};
use locklab_traces::{CheckReport, Trace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The JSON Schema of `audit --json` (docs/schemas/audit-report.schema.json).
pub fn schema() -> String {
    locklab_traces::schema::generate::<AuditReport>("locklab audit report")
}

/// The audit report's schema version.
pub const AUDIT_SCHEMA_VERSION: u32 = 1;

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// The lock description [default: ./locklab.toml; `locklab init` writes a starter]
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Write the report into DIR: report.md, report.html (self-contained,
    /// with the pictures), audit.json, and each counterexample's trace and SVG
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write the report as JSON to FILE (`-`: standard output, instead of the text)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Compare every verdict with a committed baseline (an audit.json) and
    /// exit 1 naming each cell that changed; exit 0 when none did
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Simulator runs, overriding the file's [simulate] runs [default: 2000]
    #[arg(long, value_name = "N")]
    pub runs: Option<u64>,
    /// Skip the fixes (their checks are most of an audit's time)
    #[arg(long)]
    pub no_fixes: bool,
    /// Worker threads [default: one per core]; the report does not depend on it
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// One invariant's rate in the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rate {
    pub invariant: String,
    pub violations: u64,
    pub acquisitions: u64,
    pub per_acquisition: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Expected violations per day at `acquisitions_per_day` (interval).
    pub per_day: Option<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Simulation {
    pub command: String,
    pub runs: u64,
    pub seed: u64,
    pub acquisitions_per_day: Option<u64>,
    pub rates: Vec<Rate>,
}

/// One fix tried against one broken invariant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FixResult {
    pub invariant: String,
    /// What the fix is, in the article's terms.
    pub fix: String,
    /// The fix as a change to the description: the keys to set (the rest
    /// of the file, its world, faults and timings, stays as it is).
    pub change: String,
    /// The counterexample's schedule run against the fix: `blocks`,
    /// `breaks` (the same schedule still breaks it), `inconclusive` (the
    /// schedules part before the violation), or `other-service` (the fix
    /// talks to another kind of lock service: no schedule to compare).
    pub against: String,
    /// The fix's own check of the invariant: holds, violated, unknown, vacuous.
    pub check: String,
    pub note: String,
    /// When its own check is violated and several smallest fault sets
    /// break the invariant: the fix's check under each set alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_fault_set: Vec<FaultSetResult>,
}

/// A fix's check with one smallest fault set alone switched on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FaultSetResult {
    pub faults: Vec<String>,
    /// holds, violated or unknown.
    pub check: String,
}

/// One item of the article's §9.2 checklist.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChecklistItem {
    pub item: String,
    /// `pass`, `fail`, `unknown` (the search did not finish), `n/a`, or
    /// `manual` (the description cannot answer it).
    pub status: String,
    pub evidence: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditReport {
    pub schema_version: u32,
    /// Always `"audit-report"`.
    pub kind: String,
    pub tool: String,
    pub description: String,
    pub check_command: String,
    /// The check, timings left out (seconds, memory, threads: 0), so the
    /// same file gives the same bytes.
    pub check: CheckReport,
    pub simulation: Option<Simulation>,
    pub fixes: Vec<FixResult>,
    pub checklist: Vec<ChecklistItem>,
}

/// The candidate fixes of the ladder for `inv` broken in `m`: a name, the
/// protocol, and the options that switch it on. Each is tried; none is
/// assumed to work.
fn candidates(m: &LockModel, inv: Invariant) -> Vec<(String, &'static str, Vec<String>)> {
    let p = &m.params;
    let name = m.proto.name();
    let mut v: Vec<(String, &'static str, Vec<String>)> = Vec::new();
    let mut same = |what: &str, args: &[&str]| {
        v.push((
            what.to_string(),
            name,
            args.iter().map(|s| s.to_string()).collect(),
        ))
    };
    if p.renew_unchecked {
        same(
            "renew with the compare-and-PEXPIRE script (§4.3)",
            &["--set", "renew-unchecked=false"],
        );
    }
    if p.no_cancel {
        same(
            "cancel the renewal in finally, before the delete (§9.2)",
            &["--set", "no-cancel=false"],
        );
    }
    if p.no_recheck {
        same(
            "re-check the own key after waiting (etcd 3.5)",
            &["--set", "no-recheck=false"],
        );
    }
    let ttl = p.ttl;
    if m.proto.renewal() != Renewal::None && p.renew_every * 3 > ttl {
        let third = cli_duration(ttl / 3);
        v.push((
            format!("renew at most every TTL/3 ({third})"),
            name,
            vec!["--renew-every".into(), third],
        ));
    }
    let stops = p.renewal_on_error == locklab_models::presets::RenewalOnError::Stop;
    if stops {
        v.push((
            "keep renewing after a failed renewal (Redisson 3.44+)".into(),
            name,
            vec!["--renewal-on-error".into(), "retry".into()],
        ));
    }
    // The two together: a retry a long period later comes after the key
    // expired, so neither alone may be enough.
    if stops && m.proto.renewal() != Renewal::None && p.renew_every * 3 > ttl {
        let third = cli_duration(ttl / 3);
        v.push((
            format!("renew every TTL/3 ({third}) and keep renewing after a failed renewal"),
            name,
            vec![
                "--renew-every".into(),
                third,
                "--renewal-on-error".into(),
                "retry".into(),
            ],
        ));
    }
    if matches!(name, "replicated" | "fencing-redis") && p.wait_replicas == 0 {
        v.push((
            "WAIT for the replica after each lock script (§6.1)".into(),
            name,
            vec!["--wait-replicas".into(), "1".into()],
        ));
    }
    if name == "redlock" && !p.delayed_restart {
        v.push((
            "delay a restarted instance's return by a TTL (§6.2)".into(),
            name,
            vec!["--delayed-restart".into()],
        ));
    }
    if name == "redlock" && !p.validity_check {
        v.push((
            "check the validity left before acting (§6.2)".into(),
            name,
            vec!["--validity-check".into(), "on".into()],
        ));
    }
    // The next rungs of the ladder.
    let rung =
        |v: &mut Vec<(String, &'static str, Vec<String>)>, what: &str, proto, args: &[&str]| {
            if proto != name {
                v.push((
                    what.to_string(),
                    proto,
                    args.iter().map(|s| s.to_string()).collect(),
                ));
            }
        };
    let lock_side = inv != Invariant::NoLostUpdate
        && inv != Invariant::NoOversell
        && inv != Invariant::NoDuplicateEffect;
    if matches!(name, "naive-del" | "get-del" | "setnx-expire") {
        rung(
            &mut v,
            "SET NX PX, released by a Lua compare-and-delete (§4)",
            "lua-release",
            &[],
        );
    }
    if matches!(
        name,
        "naive-del" | "get-del" | "setnx-expire" | "lua-release"
    ) && inv == Invariant::MutualExclusion
    {
        rung(&mut v, "a watchdog that renews (§5)", "watchdog", &[]);
    }
    if lock_side && inv != Invariant::TokenMonotonic {
        rung(
            &mut v,
            "a consensus service: ZooKeeper's ephemeral sequential node (§8)",
            "zookeeper",
            &[],
        );
        rung(
            &mut v,
            "a consensus service: etcd's lease and revision (§8)",
            "etcd",
            &[],
        );
    }
    if inv == Invariant::TokenMonotonic {
        rung(
            &mut v,
            "tokens from a consensus service (§7.2)",
            "fencing",
            &[],
        );
    }
    if !lock_side {
        let has_tokens = m.proto.issues_tokens();
        if has_tokens && p.resource_check != locklab_models::params::ResourceCheck::ReadWrite {
            v.push((
                "fence reads and writes at the resource (§7)".into(),
                name,
                vec!["--resource-check".into(), "read-write".into()],
            ));
        }
        if !has_tokens {
            if m.proto.service() != Service::Consensus {
                rung(
                    &mut v,
                    "fencing tokens from Redis (INCR in the lock script, WAIT 1), reads and writes fenced (§7)",
                    "fencing-redis",
                    &["--resource-check", "read-write", "--wait-replicas", "1"],
                );
            }
            rung(
                &mut v,
                "fencing tokens from a consensus service, reads and writes fenced (§7)",
                "fencing",
                &["--resource-check", "read-write"],
            );
        }
    }
    v
}

/// A duration as an option takes it: whole seconds, ms or µs.
fn cli_duration(us: locklab_models::time::Micros) -> String {
    if us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else if us % 1_000 == 0 {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// The model of a fix: the source's world and shared knobs, the fix's
/// protocol, and the fix's options on top.
fn fix_model(source: &LockModel, proto: &str, args: &[String]) -> Result<LockModel, String> {
    let target = protocols::by_name(proto).ok_or_else(|| format!("no protocol {proto}"))?;
    let mut p = crate::against::carried_over(source, target)?;
    // A preset names a library; the target protocol may have none.
    p.client = None;
    let mut words = vec![
        "locklab".to_string(),
        "trace".into(),
        "against".into(),
        proto.into(),
    ];
    let (sets, rest): (Vec<&String>, Vec<&String>) = {
        let mut sets = Vec::new();
        let mut rest = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "--set" {
                if let Some(v) = it.next() {
                    sets.push(v);
                }
            } else {
                rest.push(a);
            }
        }
        (sets, rest)
    };
    words.extend(rest.into_iter().cloned());
    words.push("x.json".into());
    let parsed = crate::cli::Cli::try_parse_args(&words).map_err(|e| e.to_string())?;
    let crate::cli::Command::Trace(crate::trace_cmd::TraceCommand::Against(a)) = parsed.command
    else {
        return Err("internal: not a trace against".into());
    };
    a.model.overlay(target, &mut p).map_err(|e| e.message)?;
    for s in sets {
        let (knob, on) = s.split_once('=').unwrap_or((s, "true"));
        match knob {
            "renew-unchecked" => p.renew_unchecked = on == "true",
            "no-cancel" => p.no_cancel = on == "true",
            "no-recheck" => p.no_recheck = on == "true",
            _ => return Err(format!("internal: unknown switch {knob}")),
        }
    }
    LockModel::new(target, p).map_err(|e| crate::options::cli_names(&e.0))
}

/// Tries one fix on one counterexample: its schedule, then its own check.
fn try_fix(
    source: &LockModel,
    t: &Trace,
    inv: Invariant,
    (what, proto, args): &(String, &'static str, Vec<String>),
    sets: &[Vec<locklab_models::FaultKind>],
    base: &SearchOptions,
) -> Option<FixResult> {
    let target = match fix_model(source, proto, args) {
        Ok(m) => m,
        // A fix that cannot be built for this world (a knob the protocol
        // refuses here) is no candidate: say nothing rather than guess.
        Err(_) => return None,
    };
    if !inv.applies(&target) {
        return None;
    }
    let change =
        crate::config::change_text((*proto != source.proto.name()).then_some(*proto), args);
    let against = if target.proto.service() != source.proto.service() {
        "other-service".to_string()
    } else {
        match trace::actions(t) {
            Ok(path) => {
                let r = transfer(source, &path, &target, inv);
                match (r.broken_at, r.parted_at) {
                    (Some(_), _) => "breaks".into(),
                    (None, Some(p)) if p <= t.violation_step => "inconclusive".into(),
                    _ => "blocks".into(),
                }
            }
            Err(_) => "inconclusive".into(),
        }
    };
    let (check, note) = if against == "breaks" {
        (
            "violated".to_string(),
            "the counterexample's own schedule breaks it too".to_string(),
        )
    } else {
        let r = check::search_under(&target, inv, None, base);
        match r.violations.get(&inv) {
            Some(path) => (
                "violated".into(),
                format!(
                    "its own check finds a counterexample of {} steps",
                    path.len()
                ),
            ),
            None if r.exhaustive() => (
                "holds".into(),
                format!(
                    "exhaustive: every one of {} states explored",
                    crate::report::thousands(r.states)
                ),
            ),
            None => (
                "unknown".into(),
                format!(
                    "search incomplete: stopped after {} states",
                    crate::report::thousands(r.states)
                ),
            ),
        }
    };
    // A fix that does not keep the invariant under every fault may still
    // keep it under some: one smallest fault set at a time (a watchdog
    // cures a slow critical section, not a pause).
    let by_fault_set = if check == "violated" && sets.len() > 1 {
        sets.iter()
            .map(|set| FaultSetResult {
                faults: set.iter().map(|k| k.name().to_string()).collect(),
                check: check_under(&target, inv, set, base),
            })
            .collect()
    } else {
        Vec::new()
    };
    Some(FixResult {
        invariant: inv.name().into(),
        fix: what.clone(),
        change,
        against,
        check,
        note,
        by_fault_set,
    })
}

/// `inv` in `m` with only the fault kinds of `set` switched on: holds,
/// violated or unknown. A kind `m`'s lock service cannot suffer is gone
/// with the fix, and the set with it.
fn check_under(
    m: &LockModel,
    inv: Invariant,
    set: &[locklab_models::FaultKind],
    base: &SearchOptions,
) -> String {
    if set.iter().any(|k| !m.proto.faults().contains(k)) {
        return "holds".into();
    }
    let r = check::search_under(m, inv, Some(set), base);
    if r.violations.contains_key(&inv) {
        "violated".into()
    } else if r.exhaustive() {
        "holds".into()
    } else {
        "unknown".into()
    }
}

/// Why a design has no renewal task for the checklist's renewal items.
fn no_watchdog(m: &LockModel) -> String {
    let name = m.proto.name();
    match m.proto.renewal() {
        Renewal::Heartbeat => format!(
            "{name}'s session or lease is kept alive by the client library's heartbeat, not by a renewal task the code starts and cancels"
        ),
        _ => format!("{name} does not renew"),
    }
}

/// An item's status from the verdict it rests on: pass when it holds,
/// fail when it is broken, unknown when the search could not tell (or the
/// property was never put to the test).
fn judged(status: &str) -> &'static str {
    if status.starts_with("holds") {
        "pass"
    } else if status.starts_with("violated") {
        "fail"
    } else {
        "unknown"
    }
}

fn verdict<'a>(r: &'a CheckReport, inv: &str) -> Option<&'a locklab_traces::Verdict> {
    r.verdicts.iter().find(|v| v.invariant == inv)
}

/// Whether any counterexample of `r` needed fault `kind` in every smallest set.
fn broken_by(r: &CheckReport, kind: &str) -> Vec<String> {
    r.verdicts
        .iter()
        .filter(|v| v.status == "violated")
        .filter(|v| {
            v.minimal_fault_sets
                .as_ref()
                .map_or(v.faults_used.iter().any(|f| f == kind), |sets| {
                    sets.iter().any(|s| s.iter().any(|f| f == kind))
                })
        })
        .map(|v| v.invariant.clone())
        .collect()
}

fn status_of(r: &CheckReport, inv: &str) -> String {
    verdict(r, inv).map_or("n/a".into(), |v| match v.steps {
        Some(n) => format!("{} ({n} steps)", v.status),
        None => v.status.clone(),
    })
}

/// The article's §9.2 checklist ("上线前自查清单"), each item answered from
/// the check, the fixes and the description.
fn checklist(
    m: &LockModel,
    r: &CheckReport,
    failover_without_wait: Option<String>,
) -> Vec<ChecklistItem> {
    let p = &m.params;
    let name = m.proto.name();
    let consensus = m.proto.service() == Service::Consensus;
    let redis = !consensus && !matches!(name, "no-lock" | "queue");
    let item = |item: &str, status: &str, evidence: String| ChecklistItem {
        item: item.into(),
        status: status.into(),
        evidence,
    };
    let mut out = Vec::new();
    let faults_on: Vec<&str> = p.faults.enabled().iter().map(|k| k.name()).collect();
    let explored = |k: &str| faults_on.contains(&k);

    out.push(if !redis {
        item(
            "The acquire is one atomic command or transaction (no window between taking the lock and setting its expiry)",
            "n/a",
            format!("{name} takes no Redis key"),
        )
    } else if name == "setnx-expire" {
        item(
            "The acquire is one atomic command or transaction (no window between taking the lock and setting its expiry)",
            "fail",
            format!("SETNX then EXPIRE: no_orphan_lock {}", status_of(r, "no_orphan_lock")),
        )
    } else {
        item(
            "The acquire is one atomic command or transaction (no window between taking the lock and setting its expiry)",
            "pass",
            format!("{name} acquires with SET NX PX or one script; no_orphan_lock {}", status_of(r, "no_orphan_lock")),
        )
    });

    let own = status_of(r, "ownership");
    out.push(if !redis {
        item("The lock value is this acquisition's own credential, kept by the client", "n/a", format!("{name}: the lock is the client's own node or key"))
    } else if name == "naive-del" {
        item("The lock value is this acquisition's own credential, kept by the client", "fail", format!("plain DEL compares nothing; ownership {own}"))
    } else if p.value == locklab_models::presets::LockValue::PerThread {
        item(
            "The lock value is this acquisition's own credential, kept by the client",
            judged(&own),
            format!("one value per thread (UUID:threadId), not per acquisition; ownership {own} with {} acquisition(s) per client explored", p.acquisitions),
        )
    } else {
        item(
            "The lock value is this acquisition's own credential, kept by the client",
            judged(&own),
            format!("value {}; ownership {own}", p.value.name()),
        )
    });

    out.push(if !redis {
        item(
            "Release and renewal check ownership in one atomic server-side script",
            "n/a",
            format!("{name} releases its own node or key"),
        )
    } else if matches!(name, "naive-del" | "get-del") || p.renew_unchecked {
        item(
            "Release and renewal check ownership in one atomic server-side script",
            "fail",
            format!(
                "{}; ownership {own}",
                if p.renew_unchecked {
                    "renewal is a plain PEXPIRE"
                } else {
                    "the release checks in the client, then deletes"
                }
            ),
        )
    } else {
        item(
            "Release and renewal check ownership in one atomic server-side script",
            judged(&own),
            format!(
                "Lua compare-and-delete{}; ownership {own}",
                if m.proto.renewal() == Renewal::Watchdog {
                    " and compare-and-PEXPIRE"
                } else {
                    ""
                }
            ),
        )
    });

    let orphan = status_of(r, "no_orphan_lock");
    out.push(if m.proto.renewal() != Renewal::Watchdog {
        item("Release runs in finally, cancels the renewal before deleting; renewal has a total cap", "n/a", no_watchdog(m))
    } else if p.no_cancel || orphan.starts_with("violated") {
        item(
            "Release runs in finally, cancels the renewal before deleting; renewal has a total cap",
            "fail",
            format!("{}no_orphan_lock {orphan}", if p.no_cancel { "the renewal is never cancelled; " } else { "" }),
        )
    } else if p.renew_cap.is_none() {
        item(
            "Release runs in finally, cancels the renewal before deleting; renewal has a total cap",
            "fail",
            format!("no renewal cap (renew-cap unset): a holder that never finishes keeps the lock for ever; no_orphan_lock {orphan}"),
        )
    } else {
        item(
            "Release runs in finally, cancels the renewal before deleting; renewal has a total cap",
            "pass",
            format!("renewal capped at {}; no_orphan_lock {orphan}", locklab_models::units::show(p.renew_cap.unwrap_or(0))),
        )
    });

    let me = status_of(r, "mutual_exclusion");
    out.push(if m.proto.renewal() != Renewal::Watchdog {
        item("A failed renewal reaches the business thread, which checks a lock-lost flag before critical writes", "n/a", no_watchdog(m))
    } else if p.renewal_on_error == locklab_models::presets::RenewalOnError::Stop {
        item(
            "A failed renewal reaches the business thread, which checks a lock-lost flag before critical writes",
            "fail",
            format!("a renewal error stops the watchdog silently (renewal-on-error stop); mutual_exclusion {me}"),
        )
    } else {
        item(
            "A failed renewal reaches the business thread, which checks a lock-lost flag before critical writes",
            "manual",
            format!("the modelled client is not told when its lock is gone; whether your code checks a flag is not in the description (mutual_exclusion {me})"),
        )
    });

    let lost_on_failover: Vec<String> = ["failover", "restart"]
        .iter()
        .flat_map(|k| {
            broken_by(r, k)
                .into_iter()
                .map(move |i| format!("{i} by a {k}"))
        })
        .collect();
    out.push(if consensus {
        item("Failover has been answered: correctness rests on a majority or consensus", "pass", format!("{name} is a consensus service"))
    } else if !explored("failover") && !explored("restart") {
        item("Failover has been answered: correctness rests on a majority or consensus", "manual", "the description rules out failover and restart, so the audit did not explore them".into())
    } else if !lost_on_failover.is_empty() {
        item(
            "Failover has been answered: correctness rests on a majority or consensus",
            "fail",
            format!("the lock service forgets the lock: {} (see the smallest fault sets)", lost_on_failover.join(", ")),
        )
    } else {
        item(
            "Failover has been answered: correctness rests on a majority or consensus",
            if r.search.complete { "pass" } else { "unknown" },
            match (failover_without_wait, r.search.complete) {
                (_, false) => "the search did not finish: no counterexample needing a failover or restart was found within its bound".into(),
                (Some(w), true) => format!("no invariant needs a failover or restart to break, because the client WAITs for the replica; {w}"),
                (None, true) => "no invariant needs a failover or restart to break".into(),
            },
        )
    });

    let lost = status_of(r, "no_lost_update");
    out.push(if p.unfenced_writers > 0 {
        item(
            "Every write path carries a token the resource checks, with no bypass",
            "fail",
            format!(
                "{} writer(s) bypass the fence; no_lost_update {lost}",
                p.unfenced_writers
            ),
        )
    } else if !m.proto.issues_tokens()
        || p.resource_check == locklab_models::params::ResourceCheck::None
    {
        item(
            "Every write path carries a token the resource checks, with no bypass",
            "fail",
            format!("the resource checks no token; no_lost_update {lost}"),
        )
    } else {
        item(
            "Every write path carries a token the resource checks, with no bypass",
            judged(&lost),
            format!(
                "resource check {}; no_lost_update {lost}",
                p.resource_check.name()
            ),
        )
    });

    out.push(if !explored("pause") {
        item("Tests inject pauses (long GC) and failovers, and the resource rejects the stale holder", "manual", "the description rules out pauses, so the audit injected none".into())
    } else {
        item(
            "Tests inject pauses (long GC) and failovers, and the resource rejects the stale holder",
            judged(&lost),
            format!("this audit injects them: faults {}; no_lost_update {lost}", faults_on.join(", ")),
        )
    });
    out
}

/// For a client that waits for its replica, what a failover does without
/// the wait: the counterfactual that says why the failover item passes.
fn without_wait(m: &LockModel, base: &SearchOptions) -> Option<String> {
    let p = &m.params;
    if p.wait_replicas == 0 || p.faults.get(locklab_models::FaultKind::Failover) == 0 {
        return None;
    }
    let mut q = p.clone();
    q.wait_replicas = 0;
    let alt = LockModel::new(m.proto, q).ok()?;
    let inv = Invariant::MutualExclusion;
    let r = check::search_under(&alt, inv, None, base);
    Some(match r.violations.get(&inv) {
        Some(path) => format!(
            "without it (--wait-replicas 0) mutual_exclusion breaks in {} steps",
            path.len()
        ),
        None if r.exhaustive() => "without it mutual_exclusion holds too".into(),
        None => "without it the search did not finish".into(),
    })
}

fn simulation(d: &Description, args: &AuditArgs) -> Result<Option<Simulation>, Failure> {
    let mut argv = d.argv(For::Simulate)?;
    let runs = args
        .runs
        .or_else(|| d.get("simulate", "runs").and_then(|s| s.value.parse().ok()))
        .unwrap_or(2000);
    // --runs on the command line wins over the file's; the audit's own
    // default is smaller than simulate's.
    if args.runs.is_some() || d.get("simulate", "runs").is_none() {
        argv.extend(["--runs".into(), runs.to_string()]);
    }
    if let Some(t) = args.threads {
        argv.extend(["--threads".into(), t.to_string()]);
    }
    let parsed = crate::cli::Cli::try_parse_args(&argv)
        .map_err(|e| Failure::input(d.annotate(For::Simulate, &e.to_string())))?;
    let crate::cli::Command::Simulate(s) = parsed.command else {
        return Err(Failure::input("internal: not a simulate command"));
    };
    let s: &SimulateArgs = &s;
    let summary = crate::sim_cmd::summarize(s)
        .map_err(|f| Failure::input(d.annotate(For::Simulate, &f.message)))?;
    let per_day: Option<u64> = d
        .get("simulate", "acquisitions-per-day")
        .and_then(|s| s.value.parse().ok());
    let point = &summary.points[0];
    let rates = point
        .invariants
        .iter()
        .map(|r| Rate {
            invariant: r.invariant.clone(),
            violations: r.violations,
            acquisitions: r.acquisitions,
            per_acquisition: r.rate,
            ci_low: r.ci_low,
            ci_high: r.ci_high,
            per_day: per_day.map(|n| (r.ci_low * n as f64, r.ci_high * n as f64)),
        })
        .collect();
    let mut words = argv[..argv.len()].to_vec();
    if args.threads.is_some() {
        words.truncate(words.len() - 2);
    }
    Ok(Some(Simulation {
        command: words.join(" "),
        runs,
        seed: summary.seed,
        acquisitions_per_day: per_day,
        rates,
    }))
}

/// Runs the whole audit of description `d`.
pub fn audit(d: &Description, args: &AuditArgs) -> Result<AuditReport, Failure> {
    d.validate(For::Check)?;
    d.validate(For::Simulate)?;
    let mut argv = d.argv(For::Check)?;
    let command = argv.join(" ");
    if let Some(t) = args.threads {
        argv.extend(["--threads".into(), t.to_string()]);
    }
    let parsed = crate::cli::Cli::try_parse_args(&argv)
        .map_err(|e| Failure::input(d.annotate(For::Check, &e.to_string())))?;
    let crate::cli::Command::Check(c) = parsed.command else {
        return Err(Failure::input("internal: not a check command"));
    };
    let c: &CheckArgs = &c;
    let m = c
        .model
        .build()
        .map_err(|f| Failure::input(d.annotate(For::Check, &f.message)))?;
    let invariants = check::selected(c, &m)?;
    let opts = check::search_options(c, invariants);
    note!(
        "audit {}: checking {} ...",
        d.path.display(),
        m.proto.name()
    );
    let mut report = check::report(&m, &opts, true, None)?;
    report.search.seconds = 0.0;
    report.search.peak_memory_bytes = None;
    report.search.threads = 0;

    note!("audit {}: simulating ...", d.path.display());
    let simulation = simulation(d, args)?;

    let mut fixes = Vec::new();
    if !args.no_fixes {
        for t in &report.traces {
            let Some(inv) = Invariant::from_name(&t.invariant) else {
                continue;
            };
            let sets: Vec<Vec<locklab_models::FaultKind>> = report
                .verdicts
                .iter()
                .find(|v| v.invariant == t.invariant)
                .and_then(|v| v.minimal_fault_sets.clone())
                .unwrap_or_default()
                .iter()
                .map(|set| {
                    set.iter()
                        .filter_map(|k| locklab_models::FaultKind::from_name(k))
                        .collect()
                })
                .collect();
            for cand in candidates(&m, inv) {
                note!(
                    "audit {}: trying '{}' on {} ...",
                    d.path.display(),
                    cand.0,
                    t.invariant
                );
                if let Some(f) = try_fix(&m, t, inv, &cand, &sets, &opts) {
                    fixes.push(f);
                }
            }
        }
    }
    let counterfactual = without_wait(&m, &opts);
    let checklist = checklist(&m, &report, counterfactual);
    Ok(AuditReport {
        schema_version: AUDIT_SCHEMA_VERSION,
        kind: "audit-report".into(),
        tool: format!("locklab {}", env!("CARGO_PKG_VERSION")),
        description: d.path.display().to_string(),
        check_command: command,
        check: report,
        simulation,
        fixes,
        checklist,
    })
}

/// A rate or count: plain with three significant digits between 0.01 and
/// a million, scientific outside.
fn rate_text(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if (0.01..1e6).contains(&x) {
        let digits = (2 - x.log10().floor() as i32).max(0) as usize;
        format!("{x:.digits$}")
    } else {
        format!("{x:.2e}")
    }
}

/// The report as Markdown (also what the terminal shows). `pictures`: the
/// file name of each counterexample's SVG, by invariant.
pub fn markdown(a: &AuditReport, pictures: bool) -> String {
    let r = &a.check;
    let mut o = String::new();
    let _ = writeln!(o, "# locklab audit: {}\n", a.description);
    let _ = writeln!(
        o,
        "{} — {}\n",
        r.config.protocol,
        crate::report::params_line(&r.config)
    );
    let _ = writeln!(
        o,
        "Faults explored: {}\n",
        crate::report::faults_line(&r.config)
    );
    let _ = writeln!(o, "{}\n", summary(a));
    let _ = writeln!(o, "## 1. What breaks (exhaustive check)\n");
    let _ = writeln!(o, "`{}`\n", a.check_command);
    let _ = writeln!(
        o,
        "{} states, depth {}, {}.\n",
        crate::report::thousands(r.search.states),
        r.search.max_depth,
        if r.search.complete {
            "complete".to_string()
        } else {
            format!(
                "INCOMPLETE (stopped at {}): an invariant without a counterexample is unknown, not safe",
                r.search.bound_hit.clone().unwrap_or_default()
            )
        }
    );
    let _ = writeln!(o, "| invariant | verdict | steps | smallest fault sets |");
    let _ = writeln!(o, "|---|---|---|---|");
    for v in &r.verdicts {
        let sets = v.minimal_fault_sets.as_ref().map_or(String::new(), |s| {
            s.iter()
                .map(|set| {
                    if set.is_empty() {
                        "none (normal timing)".to_string()
                    } else {
                        set.join("+")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
                + v.fault_sets_caveat()
        });
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            v.invariant,
            v.status,
            v.steps.map_or(String::new(), |n| n.to_string()),
            sets
        );
    }
    let _ = writeln!(o);
    for t in &r.traces {
        let _ = writeln!(o, "### {} ({} steps)\n", t.invariant, t.steps.len());
        if pictures {
            let _ = writeln!(
                o,
                "![{} counterexample]({}.{}.svg)\n",
                t.invariant, t.config.protocol, t.invariant
            );
        }
        for line in locklab_traces::narrate::render(t).lines() {
            let _ = writeln!(o, "    {line}");
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o, "## 2. How often (simulator)\n");
    match &a.simulation {
        Some(s) => {
            let _ = writeln!(o, "`{}`\n", s.command);
            let _ = writeln!(
                o,
                "{} runs from seed {}; rates per acquisition with a 95% Wilson interval{}.\n",
                crate::report::thousands(s.runs),
                s.seed,
                s.acquisitions_per_day.map_or(String::new(), |n| format!(
                    ", and per day at {} acquisitions a day",
                    crate::report::thousands(n)
                ))
            );
            let _ = writeln!(
                o,
                "| invariant | violations / acquisitions | per acquisition (95% CI) | per day (95% CI) |"
            );
            let _ = writeln!(o, "|---|---|---|---|");
            for x in &s.rates {
                let _ = writeln!(
                    o,
                    "| {} | {} / {} | {} ({} – {}) | {} |",
                    x.invariant,
                    x.violations,
                    x.acquisitions,
                    rate_text(x.per_acquisition),
                    rate_text(x.ci_low),
                    rate_text(x.ci_high),
                    x.per_day.map_or("—".into(), |(lo, hi)| format!(
                        "{} – {}",
                        rate_text(lo),
                        rate_text(hi)
                    ))
                );
            }
            let _ = writeln!(o);
        }
        None => {
            let _ = writeln!(o, "Not run.\n");
        }
    }
    let _ = writeln!(o, "## 3. What fixes it\n");
    if a.fixes.is_empty() {
        let _ = writeln!(
            o,
            "{}\n",
            if r.traces.is_empty() && r.search.complete {
                "Nothing to fix: no invariant is broken."
            } else if r.traces.is_empty() {
                "No counterexample found within the search's bound; nothing to fix yet, and nothing shown safe."
            } else {
                "No fix was tried (--no-fixes)."
            }
        );
    }
    for t in &r.traces {
        let tried: Vec<&FixResult> = a
            .fixes
            .iter()
            .filter(|f| f.invariant == t.invariant)
            .collect();
        if tried.is_empty() {
            continue;
        }
        let _ = writeln!(o, "### {}\n", t.invariant);
        let confirmed: Vec<&&FixResult> = tried
            .iter()
            .filter(|f| f.check == "holds" && f.against != "breaks")
            .collect();
        match confirmed.first() {
            Some(f) => {
                let _ = writeln!(
                    o,
                    "Fix: **{}** — with `{}` in the description, {} holds ({}).\n",
                    f.fix, f.change, f.invariant, f.note
                );
            }
            None => {
                let paused = r
                    .verdicts
                    .iter()
                    .find(|v| v.invariant == t.invariant)
                    .and_then(|v| v.minimal_fault_sets.as_ref())
                    .is_some_and(|s| s.iter().any(|set| set.iter().any(|k| k == "pause")));
                let _ = writeln!(
                    o,
                    "No fix tried keeps {}{}.\n",
                    t.invariant,
                    if t.invariant == "mutual_exclusion" && paused {
                        ": a paused holder goes on believing it holds the lock whatever the lock service does (the consensus services below break it too); protect the resource instead (no_lost_update)"
                    } else {
                        ""
                    }
                );
            }
        }
        let partial: Vec<String> = tried
            .iter()
            .filter(|f| f.check != "holds")
            .filter_map(|f| {
                let cured: Vec<String> = f
                    .by_fault_set
                    .iter()
                    .filter(|s| s.check == "holds")
                    .map(|s| s.faults.join("+"))
                    .collect();
                (!cured.is_empty()).then(|| {
                    let under: Vec<String> =
                        cured.iter().map(|c| format!("under {c} alone")).collect();
                    format!("{} keeps it {}", f.fix, under.join(", and "))
                })
            })
            .collect();
        if !partial.is_empty() {
            let _ = writeln!(o, "Partly: {}.\n", partial.join("; "));
        }
        let _ = writeln!(
            o,
            "| fix | change to the description | against the counterexample | own check | by smallest fault set |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|");
        for f in tried {
            let by: Vec<String> = f
                .by_fault_set
                .iter()
                .map(|s| format!("{}: {}", s.faults.join("+"), s.check))
                .collect();
            let _ = writeln!(
                o,
                "| {} | `{}` | {} | {} — {} | {} |",
                f.fix,
                f.change,
                f.against,
                f.check,
                f.note,
                by.join(", ")
            );
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o, "## 4. The pre-launch checklist (article §9.2)\n");
    let _ = writeln!(o, "| # | item | status | evidence |");
    let _ = writeln!(o, "|---|---|---|---|");
    for (i, c) in a.checklist.iter().enumerate() {
        // Beside the files (--out), the evidence links the counterexamples
        // it names.
        let mut evidence = c.evidence.clone();
        if pictures {
            for t in &r.traces {
                if c.evidence.contains(&format!("{} violated", t.invariant)) {
                    let _ = write!(
                        evidence,
                        " ([{} trace]({}), [picture]({}.{}.svg))",
                        t.invariant,
                        check::trace_file_name(t),
                        t.config.protocol,
                        t.invariant
                    );
                }
            }
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            i + 1,
            c.item,
            c.status,
            evidence
        );
    }
    o
}

/// The report in one line: `verdict: ...`, what breaks and under which
/// smallest fault sets, the fixes confirmed, and the checklist's tally.
pub fn summary(a: &AuditReport) -> String {
    let r = &a.check;
    let sets = |v: &locklab_traces::Verdict| {
        v.minimal_fault_sets.as_ref().map_or(String::new(), |s| {
            let list: Vec<String> = s
                .iter()
                .map(|set| {
                    if set.is_empty() {
                        "no fault".into()
                    } else {
                        set.join("+")
                    }
                })
                .collect();
            format!(" ({})", list.join(", "))
        })
    };
    let broken: Vec<String> = r
        .verdicts
        .iter()
        .filter(|v| v.status == "violated")
        .map(|v| format!("{}{}", v.invariant, sets(v)))
        .collect();
    let unknown: Vec<&str> = r
        .verdicts
        .iter()
        .filter(|v| v.status == "unknown" || v.status == "vacuous")
        .map(|v| v.invariant.as_str())
        .collect();
    let mut parts = Vec::new();
    if !broken.is_empty() {
        parts.push(format!("BROKEN: {}", broken.join(", ")));
    }
    if !unknown.is_empty() {
        parts.push(format!("UNKNOWN (no verdict): {}", unknown.join(", ")));
    }
    if parts.is_empty() {
        parts.push("every invariant checked holds (exhaustive)".into());
    }
    let mut fixed = Vec::new();
    for t in &r.traces {
        if let Some(f) = a
            .fixes
            .iter()
            .find(|f| f.invariant == t.invariant && f.check == "holds" && f.against != "breaks")
        {
            fixed.push(format!("{} by {}", t.invariant, f.fix));
        }
    }
    if !fixed.is_empty() {
        parts.push(format!("fixed: {}", fixed.join("; ")));
    }
    let mut tally: Vec<(String, usize)> = Vec::new();
    for c in &a.checklist {
        match tally.iter_mut().find(|(s, _)| *s == c.status) {
            Some((_, n)) => *n += 1,
            None => tally.push((c.status.clone(), 1)),
        }
    }
    let tally: Vec<String> = tally.iter().map(|(s, n)| format!("{n} {s}")).collect();
    parts.push(format!("checklist: {}", tally.join(", ")));
    format!("verdict: {}", parts.join("; "))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A self-contained HTML page: the Markdown's content, with each
/// counterexample's SVG inline.
pub fn html(a: &AuditReport) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>locklab audit: {}</title>\n<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}}pre{{background:#f6f6f6;padding:.6em;overflow:auto}}.fail,.violated{{color:#b00}}.pass,.holds{{color:#070}}</style></head><body>\n",
        esc(&a.description)
    );
    let mut in_table = false;
    for line in markdown(a, false).lines() {
        if let Some(cells) = line.strip_prefix('|') {
            if line.starts_with("|---") {
                continue;
            }
            if !in_table {
                o.push_str("<table>\n");
                in_table = true;
            }
            o.push_str("<tr>");
            for c in cells.trim_end_matches('|').split(" | ") {
                let c = c.trim();
                let _ = write!(
                    o,
                    "<td class=\"{}\">{}</td>",
                    esc(c.split(' ').next().unwrap_or("")),
                    esc(c)
                );
            }
            o.push_str("</tr>\n");
            continue;
        }
        if in_table {
            o.push_str("</table>\n");
            in_table = false;
        }
        if let Some(h) = line.strip_prefix("### ") {
            let _ = writeln!(o, "<h3>{}</h3>", esc(h));
            if let Some(t) = a
                .check
                .traces
                .iter()
                .find(|t| h.starts_with(&format!("{} (", t.invariant)))
            {
                o.push_str(&locklab_traces::svg::render(t));
                o.push('\n');
            }
        } else if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(o, "<h2>{}</h2>", esc(h));
        } else if let Some(h) = line.strip_prefix("# ") {
            let _ = writeln!(o, "<h1>{}</h1>", esc(h));
        } else if let Some(code) = line.strip_prefix("    ") {
            let _ = writeln!(o, "<pre>{}</pre>", esc(code));
        } else if !line.is_empty() {
            let _ = writeln!(o, "<p>{}</p>", esc(line));
        }
    }
    if in_table {
        o.push_str("</table>\n");
    }
    o.push_str("</body></html>\n");
    o
}

/// The cells `--expect` compares, by name.
pub fn cells(a: &AuditReport) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = a
        .check
        .verdicts
        .iter()
        .map(|x| (format!("check {}", x.invariant), x.status.clone()))
        .collect();
    if let Some(s) = &a.simulation {
        for r in &s.rates {
            v.push((
                format!("simulate {}", r.invariant),
                if r.violations > 0 { "seen" } else { "not seen" }.into(),
            ));
        }
    }
    for f in &a.fixes {
        v.push((
            format!("fix {} / {}", f.invariant, f.fix),
            format!("{}, {}", f.against, f.check),
        ));
        for s in &f.by_fault_set {
            v.push((
                format!("fix {} / {} / {}", f.invariant, f.fix, s.faults.join("+")),
                s.check.clone(),
            ));
        }
    }
    for (i, c) in a.checklist.iter().enumerate() {
        v.push((format!("checklist {}", i + 1), c.status.clone()));
    }
    v
}

/// The cells that differ between `before` and `now`, as lines.
pub fn diff(before: &[(String, String)], now: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in now {
        match before.iter().find(|(b, _)| b == k) {
            Some((_, old)) if old != v => out.push(format!("{k}: was {old}, now {v}")),
            None => out.push(format!("{k}: new, {v}")),
            _ => {}
        }
    }
    for (k, v) in before {
        if !now.iter().any(|(n, _)| n == k) {
            out.push(format!("{k}: was {v}, now gone"));
        }
    }
    out
}

fn exit_code(a: &AuditReport) -> i32 {
    check::exit_code(a.check.verdicts.iter())
}

pub fn run(args: &AuditArgs) -> Result<i32, Failure> {
    let path = args
        .file
        .clone()
        .unwrap_or_else(|| PathBuf::from(crate::config::DEFAULT_FILE));
    if args.runs == Some(0) {
        return Err(Failure::input("--runs must be at least 1"));
    }
    let d = Description::load(&path)?;
    let baseline = match &args.expect {
        Some(p) => {
            let text = crate::util::read_input(p)?;
            let b: AuditReport = serde_json::from_str(&text).map_err(|e| {
                Failure::input(format!(
                    "--expect {}: not an audit report ({e}); write one with `locklab audit FILE --json BASELINE`",
                    p.display()
                ))
            })?;
            Some(b)
        }
        None => None,
    };
    if let Some(p) = &args.json
        && !crate::util::is_dash(p)
    {
        crate::util::check_writable(p)?;
    }
    if let Some(dir) = &args.out {
        crate::util::prepare_dir("out", dir)?;
        refuse_foreign(dir)?;
    }
    let a = audit(&d, args)?;
    let json = serde_json::to_string_pretty(&a).map_err(|e| Failure {
        code: 70,
        message: format!("internal error: {e}"),
    })? + "\n";
    if let Some(dir) = &args.out {
        write_out(dir, &a, &json)?;
    }
    let to_stdout = args.json.as_deref().is_some_and(crate::util::is_dash);
    if let Some(p) = &args.json
        && !to_stdout
    {
        write_atomic(p, &json)?;
    }
    if to_stdout {
        out!("{json}")?;
    } else {
        out!("{}", markdown(&a, false))?;
    }
    if let Some(b) = baseline {
        let changed = diff(&cells(&b), &cells(&a));
        if changed.is_empty() {
            note!("--expect: every verdict as in the baseline");
            return Ok(EXIT_OK);
        }
        note!("--expect: {} cell(s) changed:", changed.len());
        for c in &changed {
            note!("  {c}");
        }
        return Ok(EXIT_VIOLATION);
    }
    Ok(match exit_code(&a) {
        EXIT_INCOMPLETE => EXIT_INCOMPLETE,
        c => c,
    })
}

/// `--out DIR` must be new, empty, or an earlier audit's output (it holds
/// that audit's `audit.json`): an audit never overwrites files it did not
/// write.
fn refuse_foreign(dir: &Path) -> Result<(), Failure> {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let earlier = std::fs::read_to_string(dir.join("audit.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v["kind"] == "audit-report");
    if earlier {
        Ok(())
    } else {
        Err(Failure::input(format!(
            "--out {}: the directory holds files an audit did not write; name a new or empty directory (or one an earlier audit wrote)",
            dir.display()
        )))
    }
}

fn write_out(dir: &Path, a: &AuditReport, json: &str) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::input(format!("--out {}: cannot create it: {e}", dir.display())))?;
    let mut files = vec![
        (dir.join("report.md"), markdown(a, true)),
        (dir.join("report.html"), html(a)),
        (dir.join("audit.json"), json.to_string()),
    ];
    for t in &a.check.traces {
        files.push((dir.join(check::trace_file_name(t)), t.to_json()));
        files.push((
            dir.join(format!("{}.{}.svg", t.config.protocol, t.invariant)),
            locklab_traces::svg::render(t),
        ));
    }
    for (p, _) in &files {
        crate::util::check_writable(p)?;
    }
    for (p, text) in &files {
        write_atomic(p, text)?;
    }
    note!(
        "wrote {}: report.md, report.html, audit.json and {} trace(s)",
        dir.display(),
        a.check.traces.len()
    );
    Ok(())
}
