//! `locklab docs`: the counterexample gallery. Runs the default `check` of
//! every protocol and writes a Markdown page per protocol — each broken
//! invariant's shortest counterexample as a story, an SVG picture and a
//! Mermaid diagram, with its trace file — and an index with the matrix of
//! protocol × invariant linking to them.
//!
//! The output depends only on the model: no timings, no dates, no memory
//! figures, so the committed gallery can be checked for staleness by
//! regenerating it and comparing bytes.

use crate::util::{Failure, prepare_dir, write_atomic};
use clap::Args;
use locklab_models::search::SearchOptions;
use locklab_models::{Invariant, LockModel, Params, protocols};
use locklab_traces::{CheckReport, Trace, Verdict, mermaid, svg};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct DocsArgs {
    /// Directory to write the gallery into: a new or empty one, or one an
    /// earlier `locklab docs` wrote (it keeps the list of its files in
    /// DIR/.locklab-docs-manifest). Files an earlier run wrote that the
    /// gallery no longer has are removed; no other file is touched.
    #[arg(long, value_name = "DIR", default_value = "docs/gallery")]
    pub out: PathBuf,
    /// Write into a directory that holds files `locklab docs` did not
    /// write (they are overwritten only where the gallery has a file of the
    /// same name, and never deleted)
    #[arg(long)]
    pub force: bool,
    /// Worker threads for the searches [default: one per core]; the gallery does not depend on it
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Print the client presets × fault kinds table on standard output
    /// instead of writing the gallery (`locklab docs --clients > docs/clients-table.md`)
    #[arg(long, conflicts_with = "force")]
    pub clients: bool,
    /// Print the workshop's solutions page on standard output instead of
    /// writing the gallery, every verdict computed now; exit 1 when a
    /// command's verdict is not the one its exercise file expects
    /// (`locklab docs --workshop > docs/workshop/solutions.md`, run from
    /// the checkout root)
    #[arg(long, conflicts_with_all = ["force", "clients"])]
    pub workshop: bool,
}

/// The command that regenerates the gallery, as pages quote it.
const REGENERATE: &str = "cargo run --release -- docs --out docs/gallery";

/// Every search of the gallery stops after this many states (deterministic:
/// BFS stops at the same state whatever the thread count). With exact time,
/// the default checks of Redlock, fencing, ZooKeeper, etcd and the queue do
/// not finish yet (docs/model.md, What the search does not finish yet); a verdict the bound
/// stops is shown as `unknown`, never as holding.
pub const GALLERY_STATES: u64 = 200_000;

/// The default check of one protocol.
fn check_protocol(
    proto: &'static dyn locklab_models::Protocol,
    threads: usize,
) -> Result<CheckReport, Failure> {
    let params = Params::defaults(proto);
    params
        .validate_for_search()
        .map_err(|e| Failure::input(e.0))?;
    let m = LockModel::new(proto, params).map_err(|e| Failure::input(e.0))?;
    let invariants: Vec<Invariant> = Invariant::ALL
        .into_iter()
        .filter(|i| i.applies(&m))
        .collect();
    let opts = SearchOptions {
        subsume_budgets: true,
        invariants: invariants.clone(),
        max_states: Some(GALLERY_STATES),
        max_depth: None,
        symmetry: true,
        threads,
        spill: None,
    };
    crate::check::report(&m, &opts, true, None)
}

fn stem(t: &Trace) -> String {
    format!("{}.{}", t.config.protocol, t.invariant)
}

/// `pause · slow · clock-jump+restart`
fn fault_sets(v: &Verdict) -> String {
    match &v.minimal_fault_sets {
        Some(sets) if sets.iter().any(|s| s.is_empty()) => "no fault needed".into(),
        Some(sets) => sets
            .iter()
            .map(|s| s.join("+"))
            .collect::<Vec<_>>()
            .join(" · "),
        None => v.faults_used.join("+"),
    }
}

/// A matrix cell.
fn cell(proto: &str, v: Option<&Verdict>) -> String {
    let Some(v) = v else {
        return "—".into();
    };
    match v.status.as_str() {
        "violated" => format!(
            "✗ [broken in {} steps]({proto}.md#{})<br><sub>{}</sub>",
            v.steps.unwrap_or(0),
            v.invariant,
            fault_sets(v)
        ),
        "holds" => "✓ holds".into(),
        "vacuous" => "∅ vacuous".into(),
        "n/a" => "n/a".into(),
        other => other.to_string(),
    }
}

fn index(reports: &[CheckReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Counterexample gallery");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Every protocol locklab models, checked with its default options (`locklab check PROTOCOL`, each search bounded as said below), and the shortest counterexample of every invariant it breaks — told as a story, drawn as an SVG and as a Mermaid sequence diagram. Each counterexample was found by the search and replayed through the model before it was drawn."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Generated by `{REGENERATE}`; do not edit by hand — a test regenerates the gallery and fails when these files are stale."
    );
    let _ = writeln!(out);
    // Columns: the invariants some protocol's default check speaks of.
    let columns: Vec<Invariant> = Invariant::ALL
        .into_iter()
        .filter(|i| {
            reports
                .iter()
                .any(|r| r.verdicts.iter().any(|v| v.invariant == i.name()))
        })
        .collect();
    let _ = write!(out, "| protocol |");
    for inv in columns.iter().copied() {
        let _ = write!(out, " `{}` |", inv.name());
    }
    let _ = writeln!(out);
    let _ = write!(out, "|---|");
    for _ in &columns {
        let _ = write!(out, "---|");
    }
    let _ = writeln!(out);
    for r in reports {
        let p = &r.config.protocol;
        let _ = write!(out, "| [{p}]({p}.md) |");
        for inv in columns.iter().copied() {
            let v = r.verdicts.iter().find(|v| v.invariant == inv.name());
            let _ = write!(out, " {} |", cell(p, v));
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Under each broken cell: the smallest sets of fault kinds that still break the invariant, each found by its own exhaustive search with only those kinds switched on (`pause · slow` = a pause alone suffices, and so does a slow critical section alone)."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Every search stops after {} states. A cell marked `unknown` is one the bound stopped before the search found a violation or explored every state: it decides nothing.",
        crate::report::thousands(GALLERY_STATES)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## The invariants");
    let _ = writeln!(out);
    for inv in Invariant::ALL {
        let _ = writeln!(
            out,
            "- `{}` ({}): {}",
            inv.name(),
            inv.category(),
            inv.meaning()
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "## Reading the pictures");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Time runs down; the axis on the left is true time, exact to the microsecond and shown in s and ms (the defaults: a 30 s TTL, 200 ms..2 s of work, 0.2..5 ms per message, a client step of at most 1 ms). Steps that happen at the same instant are stacked, and a gap that is long next to the rest of the trace (a pause, the wait for a key to expire) is drawn broken (`⫽`) and labelled with its length. Beside each client, a solid bar shows when it **believes** it holds the lock and a hatched bar what the lock service **really** stores for it, with the time its key has left; where the belief runs on without the key, the bar turns red. Messages go from the step that sent them to the step that handled them, faults are amber badges, and the step that breaks the invariant is the red band."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "To step through a counterexample state by state, open its viewer: `locklab trace render docs/gallery/traces/FILE.json --format html > trace.html`."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "**[The article's claims, checked](article.md)**: each claim the article makes about a design under a fault, the check that tests it, and what the search finds."
    );
    out
}

fn page(r: &CheckReport) -> String {
    let p = &r.config.protocol;
    let proto = protocols::by_name(p);
    let mut out = String::new();
    let _ = writeln!(out, "# {p}");
    let _ = writeln!(out);
    if let Some(proto) = proto {
        let _ = writeln!(out, "{}.", proto.summary());
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "`locklab check {p}`: {} clients, {} acquisition{} each; faults: {}; parameters: {}. {} states explored{}.",
        r.config.clients,
        r.config.acquisitions,
        if r.config.acquisitions == 1 { "" } else { "s" },
        crate::report::faults_line(&r.config),
        crate::report::params_line(&r.config),
        crate::report::thousands(r.search.states),
        if r.search.complete {
            ", every reachable state"
        } else {
            ""
        }
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| invariant | kind | verdict | smallest fault sets |");
    let _ = writeln!(out, "|---|---|---|---|");
    for v in &r.verdicts {
        let verdict = match v.status.as_str() {
            "violated" => format!(
                "✗ [broken in {} steps](#{})",
                v.steps.unwrap_or(0),
                v.invariant
            ),
            "holds" => "✓ holds".into(),
            "vacuous" => format!("∅ vacuous: {}", v.note),
            other => other.to_string(),
        };
        let sets = if v.status == "violated" {
            fault_sets(v)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {verdict} | {sets} |",
            v.invariant, v.category
        );
    }
    for t in &r.traces {
        let s = stem(t);
        let _ = writeln!(out);
        let _ = writeln!(out, "## {}", t.invariant);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Shortest counterexample: {} steps, faults used: {}.",
            t.steps.len(),
            if t.faults_used.is_empty() {
                "none".to_string()
            } else {
                t.faults_used.join(", ")
            }
        );
        let _ = writeln!(out);
        out.push_str(&mermaid::story_markdown(t));
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "[![{p}: {} broken — {}](svg/{s}.svg)](svg/{s}.svg)",
            t.invariant,
            t.violation.replace(['[', ']'], "")
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "```mermaid");
        out.push_str(&mermaid::diagram(t));
        let _ = writeln!(out, "```");
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Trace file: [`traces/{s}.json`](traces/{s}.json) — `locklab trace render docs/gallery/traces/{s}.json --format html > {s}.html` opens it in the step-through viewer."
        );
    }
    if r.traces.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "No invariant is broken: every reachable state was explored."
        );
    }
    out
}

/// Every file of the gallery, by path relative to its root.
pub fn generate(threads: usize) -> Result<BTreeMap<String, String>, Failure> {
    let mut files = BTreeMap::new();
    let mut reports = Vec::new();
    for proto in protocols::ALL.iter().copied() {
        let r = check_protocol(proto, threads)?;
        for t in &r.traces {
            files.insert(format!("svg/{}.svg", stem(t)), svg::render(t));
            files.insert(format!("traces/{}.json", stem(t)), t.to_json());
        }
        files.insert(format!("{}.md", r.config.protocol), page(&r));
        reports.push(r);
    }
    files.insert("README.md".into(), index(&reports));
    files.extend(crate::article::page(threads)?);
    Ok(files)
}

/// The file in the output directory that lists what `locklab docs` wrote
/// there: the only files a later run may delete or overwrite without
/// `--force`.
pub const MANIFEST: &str = ".locklab-docs-manifest";

const MANIFEST_HEADER: &str = "# Written by `locklab docs`: the files it generated in this directory, one per line.\n# A later `locklab docs --out` here deletes or overwrites only the files listed.\n";

fn manifest_text(files: &BTreeMap<String, String>) -> String {
    let mut out = MANIFEST_HEADER.to_string();
    for name in files.keys() {
        out.push_str(name);
        out.push('\n');
    }
    out
}

/// A manifest entry names a file below the directory: relative, no `..`.
fn safe_entry(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// The files a manifest lists; an error for a manifest that is not one.
fn read_manifest(path: &Path) -> Result<BTreeSet<String>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !safe_entry(line) {
            return Err(Failure::input(format!(
                "{}: {line:?} is not a file inside the directory; refusing to use this manifest",
                path.display()
            )));
        }
        out.insert(line.to_string());
    }
    Ok(out)
}

/// What a run may do in `dir`: the files it wrote before (from the
/// manifest), checked before any work starts. Refuses a directory that
/// holds files it did not write, unless `force`.
fn owned_files(dir: &Path, force: bool) -> Result<BTreeSet<String>, Failure> {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        // Not there yet: it will be created, and everything in it is ours.
        return Ok(BTreeSet::new());
    };
    let manifest = dir.join(MANIFEST);
    if manifest.is_file() {
        return read_manifest(&manifest);
    }
    if entries.next().is_some() && !force {
        return Err(Failure::input(format!(
            "--out {}: the directory is not empty and was not written by `locklab docs` (it has no {MANIFEST}); choose a new or empty directory, or pass --force to write the gallery into it anyway (files it does not generate are left alone)",
            dir.display()
        )));
    }
    Ok(BTreeSet::new())
}

/// Files the gallery is about to write over that an earlier run did not
/// write: refused unless `force`.
fn foreign_targets(
    dir: &Path,
    files: &BTreeMap<String, String>,
    owned: &BTreeSet<String>,
) -> Vec<String> {
    files
        .keys()
        .filter(|f| !owned.contains(*f) && std::fs::symlink_metadata(dir.join(f)).is_ok())
        .cloned()
        .collect()
}

pub fn run(args: &DocsArgs) -> Result<i32, Failure> {
    if args.threads == Some(0) || args.threads.is_some_and(|t| t > 256) {
        return Err(Failure::input("--threads must be between 1 and 256"));
    }
    if args.clients {
        let page = crate::clients_table::render(args.threads)?;
        out!("{page}")?;
        return Ok(0);
    }
    if args.workshop {
        return crate::workshop::print_solutions(Path::new("docs/workshop"));
    }
    prepare_dir("out", &args.out)?;
    let owned = owned_files(&args.out, args.force)?;
    let files = generate(args.threads.unwrap_or(0))?;
    let foreign = foreign_targets(&args.out, &files, &owned);
    if !foreign.is_empty() && !args.force {
        return Err(Failure::input(format!(
            "--out {}: the gallery would overwrite {} file(s) `locklab docs` did not write ({}); move them away, or pass --force",
            args.out.display(),
            foreign.len(),
            foreign.join(", ")
        )));
    }
    for sub in ["", "svg", "traces"] {
        let d = args.out.join(sub);
        std::fs::create_dir_all(&d)
            .map_err(|e| Failure::input(format!("cannot create {}: {e}", d.display())))?;
    }
    for (path, contents) in &files {
        write_atomic(&args.out.join(path), contents)?;
    }
    // The manifest lists every file written, so that the next run may
    // replace them; files only the old manifest listed are deleted.
    write_atomic(&args.out.join(MANIFEST), &manifest_text(&files))?;
    for old in owned.iter().filter(|f| !files.contains_key(*f)) {
        let p = args.out.join(old);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_file() => std::fs::remove_file(&p)
                .map_err(|e| Failure::input(format!("cannot remove {}: {e}", p.display())))?,
            _ => {}
        }
    }
    outln!(
        "wrote the gallery to {}: {} files ({} protocols)",
        args.out.display(),
        files.len(),
        protocols::ALL.len()
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn dir(name: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("locklab-docs-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    #[test]
    fn a_foreign_directory_is_refused_unless_forced() {
        let d = dir("foreign");
        assert!(
            owned_files(&d.0, false).unwrap().is_empty(),
            "empty is fine"
        );
        std::fs::write(d.0.join("model.md"), "mine").unwrap();
        let e = owned_files(&d.0, false).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("--force"), "{}", e.message);
        assert!(e.message.contains(&d.0.display().to_string()));
        assert!(owned_files(&d.0, true).unwrap().is_empty());
    }

    #[test]
    fn the_manifest_round_trips_and_names_what_may_be_replaced() {
        let d = dir("manifest");
        let mut files = BTreeMap::new();
        files.insert("README.md".to_string(), String::new());
        files.insert("svg/a.svg".to_string(), String::new());
        std::fs::write(d.0.join(MANIFEST), manifest_text(&files)).unwrap();
        std::fs::write(d.0.join("notes.md"), "mine").unwrap();
        let owned = owned_files(&d.0, false).unwrap();
        assert_eq!(
            owned.iter().cloned().collect::<Vec<_>>(),
            vec!["README.md".to_string(), "svg/a.svg".to_string()]
        );
        // A file of the gallery's name that the manifest does not list is foreign.
        files.insert("notes.md".to_string(), String::new());
        assert_eq!(foreign_targets(&d.0, &files, &owned), vec!["notes.md"]);
    }

    #[test]
    fn a_manifest_cannot_name_files_outside_the_directory() {
        let d = dir("escape");
        for bad in ["../README.md", "/etc/passwd", "svg/../../x"] {
            std::fs::write(d.0.join(MANIFEST), format!("{bad}\n")).unwrap();
            let e = owned_files(&d.0, false).unwrap_err();
            assert!(e.message.contains("refusing"), "{bad}: {}", e.message);
        }
    }
}
