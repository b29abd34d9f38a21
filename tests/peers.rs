//! `locklab bench --peers`: the same question asked of locklab and of the
//! Spin model checker, on the small naive-del row.
//!
//! Needs `spin` (Debian: spin) and `gcc`, which `.ci/run` installs. A
//! missing tool fails the test when `CI=true`, and otherwise prints a
//! visible `SKIPPED:` line to stderr.

mod common;

use common::{CC, SPIN, locklab, require, text};

#[test]
fn both_tools_answer_the_same_question() {
    if !require("peers::both_tools_answer_the_same_question", &[SPIN, CC]) {
        return;
    }
    let o = locklab(&[
        "bench",
        "--peers",
        "--row",
        "naive-del-me",
        "--peer-time-limit",
        "120",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let line = |tool: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().any(|w| w == tool) && l.contains("violated"))
            .unwrap_or_else(|| panic!("no {tool} row in:\n{out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // Both break mutual exclusion. locklab's shortest trace is its own
    // (dense time); Spin's peer model, in whole ticks with urgency, needs
    // 13 steps (its README's breadth-first figure).
    let ours = line("locklab");
    let theirs = line("spin");
    assert!(ours.join(" ").contains("violated:"), "{ours:?}");
    assert!(
        theirs.join(" ").contains("violated: 13 steps"),
        "{theirs:?}"
    );
    // states, seconds, states/s, bytes/state: measured, not blank.
    let states = |row: &[String]| -> u64 {
        let at = row.iter().position(|w| w == "steps").expect("a step count") + 1;
        row[at]
            .parse()
            .unwrap_or_else(|_| panic!("states in {row:?}"))
    };
    assert!(states(&ours) > 0 && states(&theirs) > 0, "{out}");
    assert!(out.contains("naive-del, 2 clients, pause+slow"), "{out}");
}

#[test]
fn peer_options_are_checked() {
    // These need no Spin: they are refused before anything runs.
    let o = locklab(&["bench", "--peers", "--row", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("--row nope: no such question"), "{err}");
    assert!(err.contains("redlock5-all"), "{err}");
    let o = locklab(&["bench", "--row", "naive-del-me"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("add --peers"));
    let o = locklab(&["bench", "--peers", "--sim"]);
    assert_eq!(o.status.code(), Some(2));
    let o = locklab(&["bench", "--peers", "--peer-time-limit", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = locklab(&["bench", "--peers", "--max-states", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--max-states must be at least 1"));
    let o = locklab(&["bench", "--max-states", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("add --peers"));
}
