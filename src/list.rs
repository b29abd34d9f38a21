//! `locklab list`: the protocols, fault kinds and invariants, one line each.

use locklab_models::{FaultKind, Invariant, protocols};
use std::fmt::Write;

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
        let _ = writeln!(out, "  {:<10}  {}", k.name(), k.summary());
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Invariants (--invariants NAME,NAME):");
    for i in Invariant::ALL {
        let _ = writeln!(
            out,
            "  {:<16}  [{}] {}",
            i.name(),
            i.category(),
            i.meaning()
        );
    }
    out
}
