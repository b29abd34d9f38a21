//! `locklab list`: the protocols, fault kinds and invariants, one line each.

use locklab_models::params::{ResourceCheck, ResourceOp};
use locklab_models::presets::ClientPreset;
use locklab_models::{FaultKind, Invariant, protocols};
use serde_json::json;
use std::fmt::Write;

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Print the lists as one JSON object (protocols with the fault kinds
    /// each can suffer, fault kinds, invariants)
    #[arg(long)]
    pub json: bool,
}

/// The lists as JSON, in the same order as the text.
pub fn render_json() -> String {
    let protocols: Vec<_> = protocols::ALL
        .iter()
        .map(|p| {
            json!({
                "name": p.name(),
                "summary": p.summary(),
                "faults": p.faults().iter().map(|k| k.name()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let faults: Vec<_> = FaultKind::ALL
        .iter()
        .map(|k| json!({ "name": k.name(), "summary": k.summary() }))
        .collect();
    let invariants: Vec<_> = Invariant::ALL
        .iter()
        .map(|i| json!({ "name": i.name(), "category": i.category(), "meaning": i.meaning() }))
        .collect();
    let clients: Vec<_> = ClientPreset::ALL
        .iter()
        .map(|c| json!({ "name": c.name(), "library": c.library(), "protocols": c.protocols(), "options": c.summary() }))
        .collect();
    let all = json!({
        "protocols": protocols,
        "clients": clients,
        "fault_kinds": faults,
        "invariants": invariants,
    });
    serde_json::to_string_pretty(&all).expect("serialises") + "\n"
}

pub fn render() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Protocols (locklab check PROTOCOL):");
    let w = protocols::ALL
        .iter()
        .map(|p| p.name().len())
        .max()
        .unwrap_or(10);
    for p in protocols::ALL {
        let _ = writeln!(out, "  {:<w$}  {}", p.name(), p.summary());
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Fault kinds (--faults KIND,KIND; --budget KIND=N):");
    for k in FaultKind::ALL {
        let _ = writeln!(out, "  {:<16}  {}", k.name(), k.summary());
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Resource operations (--resource-op; what the critical section does to the resource):"
    );
    for (op, what) in [
        (
            ResourceOp::Rmw,
            "the client reads, computes and writes back read + 1",
        ),
        (
            ResourceOp::InPlace,
            "the resource applies the change itself (stock = stock - 1)",
        ),
        (
            ResourceOp::CheckThenAct,
            "the client reads the stock, decides \"if stock > 0\" itself, then has the resource take one unit (--stock)",
        ),
        (
            ResourceOp::Conditional,
            "the resource's own conditional update: UPDATE ... SET stock = stock - 1 WHERE stock > 0 (§9.3; --stock)",
        ),
    ] {
        let _ = writeln!(out, "  {:<18}  {what}", op.name());
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Token checks (--resource-check; the article's §7.4 forms, for protocols with tokens):"
    );
    for c in ResourceCheck::ALL {
        let _ = writeln!(out, "  {:<18}  {}", c.name(), c.meaning());
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Clients (--client NAME; each sets these options for the protocols it is a client of, docs/clients.md gives the sources):"
    );
    for c in ClientPreset::ALL {
        let _ = writeln!(out, "  {:<18}  {}", c.name(), c.library());
        for part in c.summary().split("; ") {
            let _ = writeln!(out, "  {:<18}    {}", "", part);
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Invariants (--invariants NAME,NAME):");
    for i in Invariant::ALL {
        let _ = writeln!(
            out,
            "  {:<19}  [{}] {}",
            i.name(),
            i.category(),
            i.meaning()
        );
    }
    out
}
