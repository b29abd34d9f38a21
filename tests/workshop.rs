//! The workshop cannot rot: every exercise file under
//! `docs/workshop/exercises/` is run line by line with the built binary, and
//! each verdict and exit code must be the one the file expects; every
//! `locklab` command the student sheet (`docs/workshop/exercises.md`) shows
//! must be one of those lines.
//!
//! The exercise format (docs/workshop/README.md, "Exercise files"): `#`
//! starts a comment, blank lines are skipped, and every other line is
//!
//! ```text
//! expect holds INVARIANT    :: locklab check ... --invariants INVARIANT
//! expect violated INVARIANT :: locklab check ... --invariants INVARIANT
//! expect vacuous INVARIANT  :: locklab check ... --invariants INVARIANT
//! expect exit N             :: locklab any other command
//! ```
//!
//! A `check` line must name its one invariant with `--invariants`, so that
//! the exit code speaks of it alone: 0 when it holds, 1 when it is violated,
//! 3 when it is vacuous (never put to the test); an incomplete search
//! (exit 3, "unknown") never passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const EXERCISES: &str = "docs/workshop/exercises";
const SHEET: &str = "docs/workshop/exercises.md";
/// What one exercise command may take in the test (the guide promises
/// under 10 s in release on a 2-core laptop; a shared CI machine gets slack).
const SLOW: Duration = Duration::from_secs(30);

#[derive(Debug, PartialEq)]
enum Expect {
    /// `holds`, `violated` or `vacuous`, for this invariant of a `check`.
    Verdict { status: String, invariant: String },
    /// The exit code of any other command.
    Exit(i32),
}

#[derive(Debug)]
struct Line {
    at: String,
    expect: Expect,
    /// The arguments after `locklab`.
    args: Vec<String>,
}

/// One command line, its words split on white space (the sheet's commands
/// have no quoting).
fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn parse_line(at: &str, line: &str) -> Result<Line, String> {
    let (head, cmd) = line
        .split_once("::")
        .ok_or_else(|| format!("{at}: no `::` between the expectation and the command"))?;
    let head = words(head);
    let mut cmd = words(cmd);
    if cmd.first().map(String::as_str) != Some("locklab") {
        return Err(format!("{at}: the command must start with `locklab`"));
    }
    cmd.remove(0);
    let expect = match head.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["expect", "exit", n] => Expect::Exit(
            n.parse()
                .map_err(|_| format!("{at}: `{n}` is not an exit code"))?,
        ),
        [
            "expect",
            status @ ("holds" | "violated" | "vacuous"),
            invariant,
        ] => {
            if cmd.first().map(String::as_str) != Some("check") {
                return Err(format!(
                    "{at}: a verdict is expected of `locklab check` only"
                ));
            }
            let named = cmd
                .windows(2)
                .any(|w| w[0] == "--invariants" && w[1] == invariant);
            if !named {
                return Err(format!(
                    "{at}: the command must say `--invariants {invariant}`"
                ));
            }
            Expect::Verdict {
                status: status.to_string(),
                invariant: invariant.to_string(),
            }
        }
        _ => {
            return Err(format!(
                "{at}: expected `expect holds|violated|vacuous INVARIANT` or `expect exit N` before `::`"
            ));
        }
    };
    Ok(Line {
        at: at.to_string(),
        expect,
        args: cmd,
    })
}

fn exercise_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(EXERCISES)
        .expect("docs/workshop/exercises exists")
        .map(|e| e.expect("reads the directory").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
}

fn parse_file(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).expect("reads an exercise file");
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (format!("{}:{}", path.display(), i + 1), l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(at, l)| parse_line(&at, l).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert!(!lines.is_empty(), "{}: no `expect` line", path.display());
    lines
}

/// Runs one line and returns what went wrong, if anything.
fn run(line: &Line, scratch: &Path, n: usize) -> Option<String> {
    let mut args = line.args.clone();
    args.extend(["--color", "never"].map(String::from));
    let report = scratch.join(format!("{n}.json"));
    if let Expect::Verdict { .. } = line.expect {
        // The fault analysis does not change a verdict; the report is read
        // from a file so that stdout shows what the student sees.
        if !args.iter().any(|a| a == "--no-fault-analysis") {
            args.push("--no-fault-analysis".into());
        }
        args.extend(["--json".into(), report.display().to_string()]);
    }
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(&args)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs locklab");
    let took = started.elapsed();
    let code = out.status.code().unwrap_or(-1);
    let shown = format!("{}: locklab {}", line.at, args.join(" "));
    let why = |what: String| {
        Some(format!(
            "{shown}\n  {what}\n  stderr: {}",
            common::stderr(&out).trim()
        ))
    };
    if took > SLOW {
        return why(format!("took {took:.1?}, more than {SLOW:?}"));
    }
    match &line.expect {
        Expect::Exit(want) if code != *want => why(format!("exit {code}, expected {want}")),
        Expect::Exit(_) => None,
        Expect::Verdict { status, invariant } => {
            let json: serde_json::Value = match std::fs::read_to_string(&report) {
                Ok(s) => serde_json::from_str(&s).expect("the report is JSON"),
                Err(e) => return why(format!("exit {code}, no report: {e}")),
            };
            let got = json["verdicts"]
                .as_array()
                .and_then(|vs| vs.iter().find(|v| v["invariant"] == invariant.as_str()))
                .and_then(|v| v["status"].as_str())
                .unwrap_or("missing");
            let want_code = match status.as_str() {
                "holds" => 0,
                "violated" => 1,
                _ => 3,
            };
            if got != status || code != want_code {
                why(format!(
                    "{invariant} {got} with exit {code}, expected {status} with exit {want_code}"
                ))
            } else {
                None
            }
        }
    }
}

#[test]
fn every_exercise_gives_the_verdict_its_file_expects() {
    let files = exercise_files();
    assert!(files.len() >= 8, "only {} exercise files", files.len());
    let scratch = common::scratch("workshop");
    let mut failures = Vec::new();
    let mut n = 0;
    for file in &files {
        for line in parse_file(file) {
            n += 1;
            failures.extend(run(&line, &scratch, n));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} lines failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The commands the sheet shows: every line of a code block, and every
/// inline code span, that starts with `locklab `, cut before a `>`
/// redirection.
fn sheet_commands(sheet: &str) -> Vec<String> {
    let command = |s: &str| words(s.split(" > ").next().unwrap_or(s)).join(" ");
    let mut inside = false;
    let mut commands = Vec::new();
    for l in sheet.lines() {
        if l.trim_start().starts_with("```") {
            inside = !inside;
        } else if inside {
            if l.trim_start().starts_with("locklab ") {
                commands.push(command(l));
            }
        } else {
            // Odd pieces between backticks are code spans.
            let spans = l.split('`').skip(1).step_by(2);
            commands.extend(spans.filter(|s| s.starts_with("locklab ")).map(command));
        }
    }
    commands
}

#[test]
fn every_command_on_the_sheet_is_an_exercise_line() {
    let known: Vec<String> = exercise_files()
        .iter()
        .flat_map(|f| parse_file(f))
        .map(|l| format!("locklab {}", l.args.join(" ")))
        .collect();
    let sheet = std::fs::read_to_string(SHEET).expect("reads the sheet");
    let shown = sheet_commands(&sheet);
    assert!(
        shown.len() >= 20,
        "only {} commands on the sheet",
        shown.len()
    );
    let missing: Vec<&String> = shown.iter().filter(|c| !known.contains(c)).collect();
    assert!(
        missing.is_empty(),
        "commands on {SHEET} that no exercise file runs:\n{}",
        missing
            .iter()
            .map(|c| format!("  {c}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_exercise_file_has_its_section_on_the_sheet_and_back() {
    let sheet = std::fs::read_to_string(SHEET).expect("reads the sheet");
    let sections: Vec<u32> = sheet
        .lines()
        .filter_map(|l| l.strip_prefix("## Exercise "))
        .map(|l| {
            l.split(':')
                .next()
                .unwrap_or("")
                .parse()
                .expect("## Exercise N: title")
        })
        .collect();
    let files: Vec<u32> = exercise_files()
        .iter()
        .map(|f| {
            let name = f
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            name.split('-')
                .next()
                .unwrap_or("")
                .parse()
                .unwrap_or_else(|_| {
                    panic!(
                        "{}: the name must start with the exercise number, NN-",
                        f.display()
                    )
                })
        })
        .collect();
    assert_eq!(
        sections, files,
        "the sheet's sections and the exercise files, by number"
    );
}

#[test]
fn the_format_is_parsed_and_bad_lines_are_refused() {
    let l = parse_line(
        "x:1",
        "expect violated ownership :: locklab check naive-del --invariants ownership",
    )
    .expect("parses");
    assert_eq!(
        l.expect,
        Expect::Verdict {
            status: "violated".into(),
            invariant: "ownership".into()
        }
    );
    assert_eq!(l.args, words("check naive-del --invariants ownership"));
    let e = parse_line("x:2", "expect exit 0 :: locklab trace explain t.json").expect("parses");
    assert_eq!(e.expect, Expect::Exit(0));
    for bad in [
        "expect holds ownership locklab check naive-del --invariants ownership",
        "expect holds ownership :: cargo run -- check naive-del",
        "expect holds ownership :: locklab check naive-del",
        "expect holds ownership :: locklab trace explain t.json",
        "expect unknown ownership :: locklab check naive-del --invariants ownership",
        "expect exit x :: locklab list",
    ] {
        assert!(parse_line("x:3", bad).is_err(), "accepted: {bad}");
    }
    let sheet = "`locklab list` and `--x`\n```sh\nlocklab check a   --b c\n# no\n```\nlocklab prose `locklab r f > t.html`\n";
    assert_eq!(
        sheet_commands(sheet),
        ["locklab list", "locklab check a --b c", "locklab r f"].map(String::from)
    );
}
