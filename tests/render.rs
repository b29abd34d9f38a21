//! Every renderer on real counterexamples: every trace of the committed
//! gallery (the shortest counterexample of every broken invariant of every
//! protocol, kept fresh by tests/gallery.rs), and one trace per fault kind,
//! so that every fault marker is drawn at least once.

mod common;

use locklab_models::engine::zone::ZState;
use locklab_models::search::{PathStep, SearchOptions, search};
use locklab_models::{Action, Budgets, FaultKind, Invariant, LockModel, Params, protocols, trace};
use locklab_traces::{Document, Format, Trace, dot, narrate, scene};
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;

fn gallery_traces() -> Vec<Trace> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/gallery/traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable").path())
        .collect();
    files.sort();
    let traces: Vec<Trace> = files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("readable");
            match Document::parse(&text) {
                Ok(Document::Trace(t)) => *t,
                other => panic!("{}: not a trace: {other:?}", p.display()),
            }
        })
        .collect();
    // Every protocol with a broken invariant is there.
    for proto in protocols::ALL {
        assert!(
            traces.iter().any(|t| t.config.protocol == proto.name()),
            "the gallery has no counterexample of {}",
            proto.name()
        );
    }
    traces
}

fn model(protocol: &str, faults: &[FaultKind], f: impl FnOnce(&mut Params)) -> LockModel {
    let proto = protocols::by_name(protocol).expect("known protocol");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    for k in faults {
        p.faults.set(*k, 1);
    }
    p.max_faults = None;
    f(&mut p);
    LockModel::new(proto, p).expect("valid parameters")
}

/// The shortest counterexample of `inv`, built by replaying the search's path.
fn shortest(m: &LockModel, inv: Invariant) -> Trace {
    let r = search(
        m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: vec![inv],
            max_states: None,
            max_depth: None,
            symmetry: true,
            threads: 1,
            spill: None,
        },
    );
    let path = r
        .violations
        .get(&inv)
        .unwrap_or_else(|| panic!("{} does not break {}", m.proto.name(), inv.name()));
    trace::build(m, path, inv, "check", None).expect("replays")
}

/// The shortest path that breaks `inv` and loses a message on the way (the
/// search prefers traces without needless faults, so a loss never shows up
/// in a shortest counterexample on its own).
fn shortest_with_loss(m: &LockModel, inv: Invariant) -> Trace {
    // Breadth first over the zone graph, each state paired with whether a
    // message was lost on the way.
    let init = m.zinit();
    let mut seen: HashSet<(ZState, bool)> = HashSet::new();
    // (state, lost a message on the way, (parent, step) that led here)
    type Node = (ZState, bool, Option<(usize, PathStep)>);
    let mut nodes: Vec<Node> = vec![(init.clone(), false, None)];
    let mut queue = VecDeque::from([0usize]);
    seen.insert((init, false));
    let mut succs = Vec::new();
    while let Some(i) = queue.pop_front() {
        let (z, lost) = (nodes[i].0.clone(), nodes[i].1);
        if lost && !inv.holds_in(m, &z) {
            let mut path = Vec::new();
            let mut at = i;
            while let Some((parent, step)) = nodes[at].2.clone() {
                path.push(step);
                at = parent;
            }
            path.reverse();
            return trace::build(m, &path, inv, "check", None).expect("replays");
        }
        m.successors(&z, &mut succs);
        for s in succs.drain(..) {
            let l = lost || matches!(s.action, Action::Drop { .. });
            if seen.insert((s.next.clone(), l)) {
                nodes.push((s.next, l, Some((i, (s.action, s.answers)))));
                queue.push_back(nodes.len() - 1);
            }
        }
    }
    panic!("no counterexample with a lost message");
}

/// A minimal XML well-formedness check: tags nest and close, attributes
/// are quoted, text has no raw `<` or stray `&`.
fn assert_well_formed_xml(doc: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = doc;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                    .iter()
                    .any(|e| ent.starts_with(e)),
                "stray & in text: {}",
                &ent[..ent.len().min(20)]
            );
        }
        let close = rest[open..].find('>').expect("tag closes") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack
                .pop()
                .unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(top, name.trim(), "mismatched close tag");
        } else if !tag.starts_with('?') && !tag.starts_with('!') {
            let self_closing = tag.ends_with('/');
            let name = tag
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap_or("")
                .to_string();
            assert!(!name.is_empty(), "empty tag name");
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            if !self_closing {
                stack.push(name);
            }
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed tags: {stack:?}");
}

/// The viewer's embedded data, parsed back.
fn viewer_data(html: &str) -> serde_json::Value {
    let start = html
        .find(r#"<script type="application/json" id="ll-trace">"#)
        .expect("data script")
        + r#"<script type="application/json" id="ll-trace">"#.len();
    let end = start + html[start..].find("</script>").expect("closed");
    serde_json::from_str(&html[start..end]).expect("the viewer's data is JSON")
}

/// What every rendering of every trace must satisfy.
fn check_all_formats(t: &Trace) {
    let name = format!("{} {}", t.config.protocol, t.invariant);
    trace::validate(t).unwrap_or_else(|e| panic!("{name}: does not replay: {e}"));
    let n = t.steps.len();

    // Terminal lanes: a lane per participant, the violation marked.
    let text = Format::Text.render(t, false);
    for p in &t.participants {
        assert!(text.contains(&p.id), "{name}: lane {} missing", p.id);
    }
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with(">>")).collect();
    assert_eq!(marked.len(), 1, "{name}: one violating row");
    assert!(
        marked[0].contains(&format!("{} broken", t.invariant)),
        "{name}: {}",
        marked[0]
    );
    assert!(text.contains("What happened"), "{name}: story missing");
    assert!(!text.contains('\x1b'), "{name}: colour without a terminal");
    assert!(
        Format::Text.render(t, true).contains("\x1b["),
        "{name}: no colour on a terminal"
    );

    // The table keeps its form and gains the story.
    let table = Format::Table.render(t, false);
    assert!(
        table.contains(&format!("<-- {} broken", t.invariant)),
        "{name}"
    );
    assert!(table.contains("What happened"), "{name}");

    // Mermaid: every participant, notes for the violation, balanced blocks
    // and activations.
    let md = Format::Mermaid.render(t, false);
    assert!(md.contains("```mermaid\nsequenceDiagram\n"), "{name}");
    for p in &t.participants {
        assert!(md.contains(&format!("participant {} as", p.id)), "{name}");
    }
    assert!(md.contains(&format!("✗ {} broken", t.invariant)), "{name}");
    assert_eq!(
        md.matches("    rect ").count(),
        md.matches("\n    end\n").count(),
        "{name}"
    );
    for c in scene::clients(t) {
        let on = md.matches(&format!("activate {c}\n")).count();
        let off = md.matches(&format!("deactivate {c}\n")).count();
        assert!(on >= off && on - off <= 1, "{name}: activations of {c}");
    }
    let diagram = md.split("```mermaid\n").nth(1).expect("fenced");
    for line in diagram.lines().take_while(|l| *l != "```") {
        let body = line.trim_start();
        if body.starts_with("%%") {
            continue;
        }
        // Only entity codes (`#35;`, `#lt;`) may use `#` and `;`.
        let mut plain = String::new();
        let mut rest = body;
        while let Some(i) = rest.find('#') {
            plain.push_str(&rest[..i]);
            let code = &rest[i + 1..];
            let end = code
                .find(';')
                .unwrap_or_else(|| panic!("{name}: raw '#': {line}"));
            let inner = &code[..end];
            assert!(
                inner == "lt" || inner == "gt" || inner.chars().all(|c| c.is_ascii_digit()),
                "{name}: raw '#': {line}"
            );
            rest = &code[end + 1..];
        }
        plain.push_str(rest);
        assert!(
            !plain.contains(';'),
            "{name}: raw ';' would split a Mermaid statement: {line}"
        );
    }

    // SVG: well-formed, standalone, one row per step, the violation marked.
    let svg = Format::Svg.render(t, false);
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{name}"
    );
    assert_well_formed_xml(&svg);
    for k in 0..=n {
        assert!(
            svg.contains(&format!("data-step=\"{k}\"")),
            "{name}: row {k}"
        );
    }
    assert!(
        !svg.contains("NaN") && !svg.contains("inf\""),
        "{name}: bad number"
    );
    assert!(
        !svg.contains("<script") && !svg.contains("href="),
        "{name}: not standalone"
    );
    assert!(svg.contains(&format!("{} broken", t.invariant)), "{name}");

    // HTML: offline, its data is the trace's states.
    let html = Format::Html.render(t, false);
    for bad in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "<link rel=\"stylesheet",
    ] {
        assert!(!html.contains(bad), "{name}: the page loads {bad}");
    }
    let data = viewer_data(&html);
    let steps = data["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), n + 1, "{name}");
    for (k, s) in steps.iter().enumerate() {
        let expected = if k == 0 {
            &t.initial
        } else {
            &t.steps[k - 1].state
        };
        assert_eq!(
            s["state"],
            serde_json::to_value(expected).unwrap(),
            "{name}: state {k}"
        );
    }
    assert!(
        steps[t.violation_step]["violations"]
            .as_array()
            .expect("violations")
            .iter()
            .any(|v| v == t.invariant.as_str()),
        "{name}"
    );

    // DOT: a partial order with a message edge per delivered message.
    let g = dot::graph(t);
    assert!(
        !petgraph::algo::is_cyclic_directed(&g),
        "{name}: happens-before must be acyclic"
    );
    let delivered = scene::flights(t)
        .iter()
        .filter(|f| f.outcome == scene::Outcome::Delivered)
        .count();
    let messages = g
        .edge_weights()
        .filter(|e| matches!(e, dot::Order::Message(_)))
        .count();
    assert!(messages >= delivered, "{name}: {messages} < {delivered}");
    assert!(g.node_weights().any(|h| h.violation), "{name}");
    let dot_text = Format::Dot.render(t, false);
    assert!(dot_text.contains("digraph happens_before {"), "{name}");
    assert_eq!(
        dot_text.matches('{').count(),
        dot_text.matches('}').count(),
        "{name}"
    );

    // The story ends on the violation, and each sentence is at a real step.
    let story = narrate::story(t);
    let last = story.last().expect("a story");
    assert!(last.violation && last.step == t.violation_step, "{name}");
    assert!(last.text.contains(&t.violation), "{name}");
    for s in &story {
        assert_eq!(s.time, t.steps[s.step - 1].state.time, "{name}");
    }
    assert!(
        Format::Story.render(t, false).contains(&last.text),
        "{name}"
    );
}

#[test]
fn every_format_renders_every_gallery_counterexample() {
    for t in gallery_traces() {
        check_all_formats(&t);
    }
}

/// Every format on fresh counterexamples of the current model, one per
/// lock-service family that searches quickly (the gallery test above needs
/// the committed gallery rebuilt on exact time).
#[test]
fn every_format_renders_fresh_counterexamples() {
    use FaultKind::*;
    for (proto, faults, inv) in [
        ("get-del", &[][..], Invariant::Ownership),
        ("naive-del", &[Pause][..], Invariant::NoLostUpdate),
        ("watchdog", &[Pause][..], Invariant::MutualExclusion),
        ("setnx-expire", &[Crash][..], Invariant::NoOrphanLock),
    ] {
        let m = model(proto, faults, |p| {
            if proto == "get-del" {
                // Work that ends just at the TTL: the race needs no fault.
                p.work_min = 29_990_000;
                p.work_max = 30_000_000;
            }
        });
        let t = shortest(&m, inv);
        check_all_formats(&t);
        let name = format!("{proto}.{}", inv.name());
        activations_balance(&name, &locklab_traces::mermaid::diagram(&t));
    }
}

/// Per fault kind: a trace that uses it, the badge the SVG draws, and the
/// words the story uses.
#[test]
fn every_fault_kind_is_drawn_and_told() {
    use FaultKind::*;
    let cases: Vec<(Trace, &str, &str)> = vec![
        (
            shortest(
                &model("lua-release", &[Pause], |_| {}),
                Invariant::MutualExclusion,
            ),
            "PAUSE",
            "freezes",
        ),
        (
            shortest(
                &model("lua-release", &[Slow], |_| {}),
                Invariant::MutualExclusion,
            ),
            "SLOW",
            "turns slow",
        ),
        (
            shortest_with_loss(
                &model("naive-del", &[Loss, Pause], |_| {}),
                Invariant::MutualExclusion,
            ),
            "LOST",
            "is lost",
        ),
        (
            shortest(&model("naive-del", &[Delay], |_| {}), Invariant::Ownership),
            "DELAY",
            "held up in the network",
        ),
        (
            shortest(
                &model("naive-del", &[ClockJump], |_| {}),
                Invariant::Ownership,
            ),
            // The default jump is the TTL, 30 s.
            "CLOCK +30 S",
            "wall clock jumps forward 30 s",
        ),
        (
            shortest(
                &model("setnx-expire", &[Crash], |_| {}),
                Invariant::NoOrphanLock,
            ),
            "CRASH",
            "crashes",
        ),
        (
            shortest(
                &model("naive-del", &[Restart], |_| {}),
                Invariant::MutualExclusion,
            ),
            "RESTART",
            "restarts and loses everything",
        ),
        (
            shortest(
                &model("replicated", &[Failover], |_| {}),
                Invariant::NoLostUpdate,
            ),
            "FAILOVER",
            "is promoted",
        ),
    ];
    for (t, badge, words) in &cases {
        check_all_formats(t);
        let svg = Format::Svg.render(t, false);
        assert!(
            svg.contains(&format!(">{badge}</text>")),
            "{}: the SVG has no {badge} badge",
            t.faults_used.join("+")
        );
        let story = Format::Story.render(t, false);
        assert!(
            story.contains(words),
            "{badge}: the story lacks {words:?}:\n{story}"
        );
        let mermaid = Format::Mermaid.render(t, false);
        let text = Format::Text.render(t, false);
        if *badge == "LOST" {
            assert!(
                mermaid.contains("-x") && mermaid.contains("— LOST"),
                "{mermaid}"
            );
            assert!(text.contains('✕'), "{text}");
        } else {
            assert!(
                mermaid.contains("Note over") && mermaid.contains("⚡"),
                "{badge}: {mermaid}"
            );
            assert!(text.contains('◆'), "{badge}: {text}");
        }
    }
    // The pause, as the issue tells it: the paused client's belief runs on
    // while its key is gone.
    let pause = &cases[0].0;
    let story = Format::Story.render(pause, false);
    assert!(story.contains("while holding the lock"), "{story}");
    assert!(Format::Svg.render(pause, false).contains("key gone"));
}

/// A believed lease (Redlock's validity by the client's own clock) is shown
/// where the trace records one.
#[test]
fn believed_lease_is_drawn() {
    // Redlock on two instances, a pause between the validity check and
    // the write, and the update it loses: the holder's validity by its own
    // clock is drawn where the trace records one, and its end.
    let t = shortest(
        &model("redlock", &[FaultKind::Pause], |p| {
            p.instances = 2;
            p.quorum = 2;
        }),
        Invariant::NoLostUpdate,
    );
    let svg = Format::Svg.render(&t, false);
    // validity = TTL − drift allowance − elapsed = 30 s − (int(30000 ×
    // 0.01) + 2) ms − the two shortest message legs (2 × 0.2 ms).
    assert!(
        svg.contains("lease 29.6976 s left"),
        "redlock's validity after acquiring"
    );
    assert!(svg.contains("lease over"), "the validity runs out");
    assert!(
        svg.contains("2/2 · ttl 30 s"),
        "both instances hold the key"
    );
}

mod cli {
    use std::path::PathBuf;
    use std::process::{Command, Output};

    fn locklab(args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_locklab"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .expect("runs")
    }

    use super::common::scratch;

    /// A fresh trace file of `check PROTOCOL --faults FAULTS --invariants INV`.
    fn fresh(dir: &std::path::Path, proto: &str, faults: &str, inv: &str) -> String {
        let out = dir.join(format!("{proto}-{faults}"));
        let o = locklab(&[
            "check",
            proto,
            "--faults",
            faults,
            "--invariants",
            inv,
            "--no-fault-analysis",
            "--out-dir",
            &out.to_string_lossy(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out.join(format!("{proto}.{inv}.json"))
            .to_string_lossy()
            .to_string()
    }

    /// Bad input: exit 2, the problem named, nothing on standard output.
    fn rejects(args: &[&str], needle: &str) {
        let o = locklab(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in {err:?}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: rendered from bad input");
        assert!(!err.contains("panicked"), "{err}");
    }

    #[test]
    fn bad_trace_files_are_named_and_nothing_is_drawn() {
        let d = scratch("bad");
        let not_json = d.join("not.json");
        std::fs::write(&not_json, "this is not json").unwrap();
        let good =
            std::fs::read_to_string(fresh(d.path(), "naive-del", "pause", "ownership")).unwrap();
        let future = d.join("future.json");
        std::fs::write(
            &future,
            good.replacen("\"schema_version\": 2", "\"schema_version\": 99", 1),
        )
        .unwrap();
        // Step 5's recorded state claims a resource value the model never reaches.
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        v["steps"][4]["state"]["resource"]["value"] = 42.into();
        let tampered = d.join("tampered.json");
        std::fs::write(&tampered, serde_json::to_string(&v).unwrap()).unwrap();
        for format in ["text", "table", "mermaid", "svg", "html", "dot", "json"] {
            let f = |p: &PathBuf| p.to_string_lossy().to_string();
            rejects(
                &["trace", "render", &f(&not_json), "--format", format],
                "not a JSON document",
            );
            rejects(
                &["trace", "render", &f(&future), "--format", format],
                "unsupported schema_version 99",
            );
            rejects(
                &["trace", "render", &f(&tampered), "--format", format],
                "step 5:",
            );
        }
        rejects(
            &["trace", "explain", &tampered.to_string_lossy()],
            "does not replay through the model: step 5",
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn one_picture_per_file() {
        let d = scratch("report");
        let report = d.join("r.json");
        let o = locklab(&[
            "check",
            "naive-del",
            "--no-fault-analysis",
            "--json",
            &report.to_string_lossy(),
        ]);
        assert_eq!(o.status.code(), Some(1));
        let r = report.to_string_lossy().to_string();
        rejects(
            &["trace", "render", &r, "--format", "svg"],
            "add --invariant NAME",
        );
        rejects(
            &["check", "naive-del", "--format", "html"],
            "add --out-dir DIR",
        );
        let o = locklab(&[
            "trace",
            "render",
            &r,
            "--format",
            "svg",
            "--invariant",
            "ownership",
        ]);
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("<svg"));
        // Mermaid and DOT documents follow one another.
        let o = locklab(&["trace", "render", &r, "--format", "mermaid"]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout)
                .matches("```mermaid")
                .count(),
            3
        );
        let o = locklab(&["trace", "render", &r, "--format", "dot"]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout)
                .matches("digraph")
                .count(),
            3
        );
        // check --out-dir writes a drawing per counterexample.
        let out = d.join("out");
        let o = locklab(&[
            "check",
            "naive-del",
            "--no-fault-analysis",
            "--format",
            "svg",
            "--out-dir",
            &out.to_string_lossy(),
        ]);
        assert_eq!(o.status.code(), Some(1));
        for inv in ["mutual_exclusion", "ownership", "no_lost_update"] {
            let svg = std::fs::read_to_string(out.join(format!("naive-del.{inv}.svg"))).unwrap();
            assert!(svg.starts_with("<svg"));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn explain_tells_the_story() {
        let d = scratch("explain");
        let f = fresh(d.path(), "lua-release", "pause", "mutual_exclusion");
        let o = locklab(&["trace", "explain", &f]);
        assert!(o.status.success());
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.contains("c1 freezes"), "{s}");
        assert!(s.contains("expires on redis"), "{s}");
        assert!(
            s.contains("while c1 (paused) still believes it holds it"),
            "{s}"
        );
    }
}

/// Checks that a Mermaid `sequenceDiagram` opens and closes activation
/// bars in pairs per participant, never closes one that is not open and
/// leaves none open (Mermaid draws no bars otherwise). Returns how many bars
/// it opened.
fn activations_balance(name: &str, diagram: &str) -> usize {
    let mut open: std::collections::BTreeMap<&str, i64> = Default::default();
    let mut opened = 0;
    for line in diagram.lines().map(str::trim) {
        if let Some(id) = line.strip_prefix("activate ") {
            *open.entry(id).or_default() += 1;
            opened += 1;
        } else if let Some(id) = line.strip_prefix("deactivate ") {
            let n = open.entry(id).or_default();
            assert!(*n > 0, "{name}: deactivates {id}, which is not active");
            *n -= 1;
        }
    }
    let left: Vec<_> = open.iter().filter(|(_, n)| **n != 0).collect();
    assert!(left.is_empty(), "{name}: activations left open: {left:?}");
    opened
}

#[test]
fn every_mermaid_diagram_balances_its_activation_bars() {
    let mut bars = 0;
    let traces = gallery_traces();
    for t in &traces {
        let name = format!("{}.{}", t.config.protocol, t.invariant);
        bars += activations_balance(&name, &locklab_traces::mermaid::diagram(t));
    }
    // The committed pages carry the same diagrams.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/gallery");
    let mut blocks = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            let md = std::fs::read_to_string(&p).unwrap();
            for block in md.split("```mermaid\n").skip(1) {
                let diagram = block.split("```").next().unwrap();
                activations_balance(&p.display().to_string(), diagram);
                blocks += 1;
            }
        }
    }
    let pages = std::fs::read_dir(dir.join("traces"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("article-")
        })
        .count();
    assert_eq!(blocks, pages, "a diagram per protocol page counterexample");
    assert!(bars > 0, "no diagram opens a bar: the check checks nothing");
}
