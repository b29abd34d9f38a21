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
        // `going further` marks where the commands for fast groups start:
        // they run here like the others.
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#') && *l != "going further")
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

#[test]
fn a_second_going_further_line_is_refused() {
    // A workshop of one exercise whose file marks two "going further"
    // points: the whole workshop is refused (exit 2), naming the line.
    let dir = std::env::temp_dir().join(format!("locklab-workshop-gf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("exercises")).expect("creates a scratch workshop");
    std::fs::write(dir.join("exercises.md"), "## Exercise 1: t\n\nx\n").expect("writes");
    std::fs::write(
        dir.join("exercises/01-t.txt"),
        "# t\n\nexpect exit 0 :: locklab list\ngoing further\nexpect exit 0 :: locklab list\ngoing further\nexpect exit 0 :: locklab list\n",
    )
    .expect("writes");
    let out = workshop(&["--dir", dir.to_str().unwrap()], "");
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("01-t.txt:6: a second `going further` line"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // --further goes with an exercise, not with the solutions page.
    let out = workshop(&["--solutions", "--further"], "");
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `locklab workshop ARGS` with `input` on standard input (no TTY).
fn workshop(args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("workshop")
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs locklab");
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(input.as_bytes())
        .expect("writes");
    child.wait_with_output().expect("runs locklab")
}

/// What `locklab workshop 4` shows, with or without waiting: the seven
/// commands before its `going further` line.
fn shows_exercise_4(out: &std::process::Output) {
    let text = common::stdout(out);
    let err = common::stderr(out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{err}");
    let situation = text.find("**Situation.** Three ways to release");
    let predict = text.find("**Predict.**");
    let first = text.find("$ locklab check naive-del --faults pause --invariants ownership");
    assert!(
        situation < predict && predict < first && situation.is_some(),
        "the situation, the prompt, then the commands:\n{text}"
    );
    assert!(
        !text.contains("**Run.**"),
        "the sheet's commands are run, not shown:\n{text}"
    );
    // Every verdict is computed and set against the file's.
    assert_eq!(text.matches("✓ as expected: ").count(), 7, "{text}");
    assert!(text.contains("✓ as expected: ownership violated"), "{text}");
    assert!(text.contains("✓ as expected: ownership holds"), "{text}");
    assert!(text.contains("✓ as expected: exit 0"), "{text}");
    assert!(
        !text.contains("article-get-del-race.json"),
        "the going-further commands wait for --further:\n{text}"
    );
    // The shortest counterexample as lanes, with its story.
    assert!(text.contains("◀ ownership broken"), "{text}");
    assert!(text.contains("What happened"), "{text}");
    assert!(text.contains("**Look for.**"), "{text}");
    assert!(
        text.contains("7 of 7 commands gave what the exercise file expects."),
        "{text}"
    );
    assert!(
        text.contains("Going further: 2 more commands for fast groups (`locklab workshop 4 --further` runs them too)."),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour off a terminal:\n{text}"
    );
}

#[test]
fn workshop_lists_the_exercises_and_refuses_an_unknown_one() {
    let out = workshop(&[], "");
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for f in exercise_files() {
        let n: u32 = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .split('-')
            .next()
            .unwrap_or("")
            .parse()
            .expect("NN-");
        assert!(text.contains(&format!("\n  {n:>2}  ")), "{n} in:\n{text}");
    }
    assert!(
        text.contains("   4  whose lock did I delete? (§4)"),
        "{text}"
    );
    for bad in ["13", "x", "0"] {
        let out = workshop(&[bad], "");
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains(&format!(
                "no exercise {bad}; the exercises are 1, 2, 3, 4, 5, 6, 7"
            )),
            "{bad}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn workshop_4_reveal_runs_every_command_at_once() {
    let out = workshop(&["4", "--reveal"], "");
    shows_exercise_4(&out);
    assert!(
        !common::stderr(&out).contains("press Enter"),
        "--reveal does not wait"
    );
}

#[test]
fn workshop_4_further_runs_the_going_further_commands_too() {
    let out = workshop(&["4", "--reveal", "--further"], "");
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(text.matches("✓ as expected: ").count(), 9, "{text}");
    assert!(text.contains("✓ as expected: exit 3"), "{text}");
    assert!(
        text.contains("9 of 9 commands gave what the exercise file expects."),
        "{text}"
    );
    assert!(!text.contains("Going further:"), "{text}");
    // --further names an exercise.
    let out = workshop(&["--further"], "");
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
}

#[test]
fn workshop_4_waits_for_enter_then_runs_every_command() {
    use std::io::Write;
    // No TTY: standard input is a pipe, kept open until Enter is sent.
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["workshop", "4"])
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs locklab");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().expect("waits").is_none(),
        "it waits for Enter before running the commands"
    );
    let mut stdin = child.stdin.take().expect("a pipe");
    stdin.write_all(b"\n").expect("writes");
    drop(stdin);
    let out = child.wait_with_output().expect("runs");
    shows_exercise_4(&out);
    assert!(
        common::stderr(&out).contains("press Enter to run the 7 commands"),
        "{}",
        common::stderr(&out)
    );
    // Enter on standard input, written at once, works the same.
    shows_exercise_4(&workshop(&["4"], "\n"));
}

#[test]
fn committed_solutions_are_what_the_checks_give_now() {
    let committed = "docs/workshop/solutions.md";
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["docs", "--workshop"])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs locklab");
    assert_eq!(
        out.status.code(),
        Some(0),
        "every command gives what its exercise file expects: {}",
        common::stderr(&out)
    );
    let fresh = common::stdout(&out);
    let have = std::fs::read_to_string(committed).unwrap_or_default();
    if have != fresh {
        let first = have
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| have.lines().count().min(fresh.lines().count()));
        panic!(
            "{committed} is stale: regenerate it with `cargo run --release -- docs --workshop > {committed}` and commit the result\n  first difference at line {}:\n  committed: {:?}\n  now:       {:?}",
            first + 1,
            have.lines().nth(first).unwrap_or(""),
            fresh.lines().nth(first).unwrap_or("")
        );
    }
}
