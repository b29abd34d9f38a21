//! `locklab workshop`: the workshop of docs/workshop/ in the terminal. It
//! lists the exercises, runs one ("predict, then run"), or prints the
//! solutions page. The prose (titles, situations, prediction prompts) comes
//! from the student sheet, `exercises.md`; the commands and the verdicts
//! they should give from the exercise files, `exercises/NN-name.txt`
//! (docs/workshop/README.md, "Exercise files"). Every verdict shown is
//! computed by running the command.

use crate::util::{EXIT_OK, EXIT_VIOLATION, Failure};
use clap::{Args, Parser};
use locklab_traces::{CheckReport, Format};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct WorkshopArgs {
    /// The exercise to run; without it, list the exercises
    #[arg(value_name = "N")]
    pub number: Option<String>,
    /// Run the commands at once instead of waiting for Enter after the prediction prompt
    #[arg(long)]
    pub reveal: bool,
    /// Also run the exercise's "going further" commands, for fast groups
    #[arg(long, requires = "number")]
    pub further: bool,
    /// Print the solutions page in Markdown, every verdict computed now (the
    /// same as `locklab docs --workshop > docs/workshop/solutions.md`)
    #[arg(long, conflicts_with_all = ["number", "reveal", "further"])]
    pub solutions: bool,
    /// The workshop directory, with exercises.md and exercises/ (run from the checkout root: the commands read its traces)
    #[arg(long, value_name = "DIR", default_value = "docs/workshop")]
    pub dir: PathBuf,
}

/// What an exercise line expects of its command.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// `holds`, `violated` or `vacuous`, for this invariant of a `check`.
    Verdict { status: String, invariant: String },
    /// The exit code of any other command.
    Exit(i32),
}

/// One command of an exercise file.
#[derive(Debug)]
struct Line {
    /// The comment lines just before it: what it shows.
    about: Vec<String>,
    expect: Expect,
    /// The arguments after `locklab`.
    args: Vec<String>,
    /// After the file's `going further` line: for fast groups, run by
    /// `locklab workshop N --further` (and by the solutions page).
    further: bool,
}

#[derive(Debug)]
struct Exercise {
    number: u32,
    title: String,
    /// The sheet's section, without its heading.
    section: Vec<String>,
    lines: Vec<Line>,
}

fn parse_line(at: &str, line: &str) -> Result<(Expect, Vec<String>), Failure> {
    let bad = |why: &str| Failure::input(format!("{at}: {why}"));
    let (head, cmd) = line
        .split_once("::")
        .ok_or_else(|| bad("no `::` between the expectation and the command"))?;
    let head: Vec<&str> = head.split_whitespace().collect();
    let mut cmd: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    if cmd.first().map(String::as_str) != Some("locklab") {
        return Err(bad("the command must start with `locklab`"));
    }
    cmd.remove(0);
    let expect = match head[..] {
        ["expect", "exit", n] => Expect::Exit(
            n.parse()
                .map_err(|_| bad(&format!("`{n}` is not an exit code")))?,
        ),
        [
            "expect",
            status @ ("holds" | "violated" | "vacuous"),
            invariant,
        ] => {
            if cmd.first().map(String::as_str) != Some("check") {
                return Err(bad("a verdict is expected of `locklab check` only"));
            }
            if !cmd
                .windows(2)
                .any(|w| w[0] == "--invariants" && w[1] == invariant)
            {
                return Err(bad(&format!(
                    "the command must say `--invariants {invariant}`"
                )));
            }
            Expect::Verdict {
                status: status.to_string(),
                invariant: invariant.to_string(),
            }
        }
        _ => {
            return Err(bad(
                "expected `expect holds|violated|vacuous INVARIANT` or `expect exit N` before `::`",
            ));
        }
    };
    Ok((expect, cmd))
}

/// The line of an exercise file after which its commands are the "going
/// further" ones.
const GOING_FURTHER: &str = "going further";

fn parse_file(path: &Path) -> Result<Vec<Line>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("{}: cannot read it: {e}", path.display())))?;
    let mut lines = Vec::new();
    let mut about = Vec::new();
    let mut further = false;
    // The comments before the first blank line are the file's own heading.
    let mut heading = true;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        heading &= !l.is_empty();
        if let Some(c) = l.strip_prefix('#') {
            if !heading {
                about.push(c.trim().to_string());
            }
            continue;
        }
        heading = false;
        if l.is_empty() {
            continue;
        }
        if l == GOING_FURTHER {
            if further {
                return Err(Failure::input(format!(
                    "{}:{}: a second `{GOING_FURTHER}` line",
                    path.display(),
                    i + 1
                )));
            }
            further = true;
            continue;
        }
        let (expect, args) = parse_line(&format!("{}:{}", path.display(), i + 1), l)?;
        lines.push(Line {
            about: std::mem::take(&mut about),
            expect,
            args,
            further,
        });
    }
    if lines.is_empty() {
        return Err(Failure::input(format!(
            "{}: no `expect` line",
            path.display()
        )));
    }
    Ok(lines)
}

/// The sheet's sections, by exercise number: the title and the lines up to
/// the next `---` or heading.
fn sections(sheet: &str) -> Vec<(u32, String, Vec<String>)> {
    let mut out: Vec<(u32, String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for l in sheet.lines() {
        if let Some(rest) = l.strip_prefix("## Exercise ") {
            let (n, title) = rest.split_once(':').unwrap_or((rest, ""));
            if let Ok(n) = n.trim().parse() {
                out.push((n, title.trim().to_string(), Vec::new()));
                inside = true;
                continue;
            }
        }
        if l.starts_with("## ") || l.trim() == "---" {
            inside = false;
        } else if inside && let Some(last) = out.last_mut() {
            last.2.push(l.to_string());
        }
    }
    for s in &mut out {
        while s.2.last().is_some_and(|l| l.trim().is_empty()) {
            s.2.pop();
        }
        while s.2.first().is_some_and(|l| l.trim().is_empty()) {
            s.2.remove(0);
        }
    }
    out
}

/// Every exercise: a file under DIR/exercises with its section on the sheet.
fn load(dir: &Path) -> Result<Vec<Exercise>, Failure> {
    let sheet_path = dir.join("exercises.md");
    let sheet = std::fs::read_to_string(&sheet_path).map_err(|e| {
        Failure::input(format!(
            "{}: cannot read it ({e}); run locklab workshop from the root of the locklab checkout, or give --dir DIR",
            sheet_path.display()
        ))
    })?;
    let mut sections = sections(&sheet);
    let files_dir = dir.join("exercises");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&files_dir)
        .map_err(|e| Failure::input(format!("{}: cannot read it: {e}", files_dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let number: u32 = name
            .split('-')
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                Failure::input(format!(
                    "{}: the name must start with the exercise number, NN-",
                    f.display()
                ))
            })?;
        let at = sections.iter().position(|s| s.0 == number).ok_or_else(|| {
            Failure::input(format!(
                "{}: {} has no section `## Exercise {number}: TITLE`",
                f.display(),
                sheet_path.display()
            ))
        })?;
        let (_, title, section) = sections.remove(at);
        out.push(Exercise {
            number,
            title,
            section,
            lines: parse_file(&f)?,
        });
    }
    if out.is_empty() {
        return Err(Failure::input(format!(
            "{}: no exercise files (NN-name.txt)",
            files_dir.display()
        )));
    }
    Ok(out)
}

/// What running one line gave.
struct Outcome {
    /// `holds`, `violated`, ... for a check; `exit N` otherwise.
    got: Expect,
    /// What the command printed (a check: its report, lanes for the broken invariant).
    shown: String,
    /// For `trace against`: its verdict line; for `simulate`: its rates.
    verdict_line: Option<String>,
    /// A report, for a check.
    report: Option<CheckReport>,
}

/// Runs a `check` line in-process: the search and the report `locklab
/// check` would print, as lanes (`--format text`). No fault analysis: it
/// does not change a verdict.
fn run_check(
    args: &[String],
    invariant: &str,
    color: bool,
    threads: Option<usize>,
) -> Result<Outcome, Failure> {
    let cli = crate::cli::Cli::try_parse_from(
        std::iter::once("locklab".to_string()).chain(args.iter().cloned()),
    )
    .map_err(|e| {
        let e = e.to_string();
        Failure::input(format!(
            "locklab {}: {}",
            args.join(" "),
            e.lines().next().unwrap_or_default()
        ))
    })?;
    let crate::cli::Command::Check(mut a) = cli.command else {
        return Err(Failure::input(
            "a verdict is expected of `locklab check` only",
        ));
    };
    if threads.is_some() {
        a.threads = threads;
    }
    let m = a.model.build()?;
    let invariants = crate::check::selected(&a, &m)?;
    let report = crate::check::report(
        &m,
        &crate::check::search_options(&a, invariants),
        false,
        None,
    )?;
    let status = report
        .verdicts
        .iter()
        .find(|v| v.invariant == invariant)
        .map_or("missing", |v| v.status.as_str())
        .to_string();
    Ok(Outcome {
        got: Expect::Verdict {
            status,
            invariant: invariant.to_string(),
        },
        shown: crate::report::render(&report, Some(shown_as(args, &a)), color),
        verdict_line: None,
        report: Some(report),
    })
}

/// How a check's counterexamples are shown: as the line asks when it asks
/// for a terminal format (`--format table|text|story`), as lanes otherwise.
fn shown_as(args: &[String], a: &crate::check::CheckArgs) -> Format {
    let f = a.format.format();
    let asked = args
        .iter()
        .any(|w| w == "--format" || w.starts_with("--format="));
    if asked && matches!(f, Format::Table | Format::Text | Format::Story) {
        f
    } else {
        Format::Text
    }
}

/// The format of a line that prints a document rather than text for the
/// terminal (`trace render FILE --format html`), if it does.
fn document_format(args: &[String]) -> Option<&str> {
    let value = args
        .iter()
        .enumerate()
        .find_map(|(i, w)| match w.strip_prefix("--format") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        })?;
    ["html", "svg", "svg-embed", "json", "itf", "dot"]
        .contains(&value)
        .then_some(value)
}

/// Runs any other line with this very binary, its output captured.
fn run_other(args: &[String], color: bool) -> Result<Outcome, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot find this locklab's executable: {e}")))?;
    let out = std::process::Command::new(exe)
        .args(args)
        .args(["--color", if color { "always" } else { "never" }])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Failure::input(format!("cannot run locklab {}: {e}", args.join(" "))))?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let mut shown = match document_format(args) {
        Some(f) => format!(
            "({} bytes of {f} on standard output: redirect it into a file to open it, e.g. > t.{f})\n",
            out.stdout.len()
        ),
        None => stdout.clone(),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        shown.push_str(&stderr);
    }
    let verdict_line = match args.first().map(String::as_str) {
        Some("simulate") => Some(simulate_rates(&stdout).join("; ")).filter(|s| !s.is_empty()),
        _ => stdout
            .lines()
            .find_map(|l| l.strip_prefix("verdict: "))
            .map(str::to_string),
    };
    Ok(Outcome {
        got: Expect::Exit(out.status.code().unwrap_or(-1)),
        shown,
        verdict_line,
        report: None,
    })
}

/// Runs one line; `threads` overrides a check's worker threads.
fn run_line(line: &Line, color: bool, threads: Option<usize>) -> Result<Outcome, Failure> {
    match &line.expect {
        Expect::Verdict { invariant, .. } => run_check(&line.args, invariant, color, threads),
        Expect::Exit(_) => run_other(&line.args, color),
    }
}

fn expect_text(e: &Expect) -> String {
    match e {
        Expect::Verdict { status, invariant } => format!("{invariant} {status}"),
        Expect::Exit(n) => format!("exit {n}"),
    }
}

/// What an exit code of this command means, for the solutions page, when
/// the command has codes of its own.
fn exit_meaning(args: &[String], code: i32) -> Option<&'static str> {
    let words: Vec<&str> = args.iter().take(2).map(String::as_str).collect();
    match (&words[..], code) {
        (["trace", "against"], 0) => Some("the fix blocks it"),
        (["trace", "against"], 1) => Some("it breaks too"),
        (["trace", "against"], 3) => Some("inconclusive: the schedules part"),
        (["simulate", ..], 0) => Some("no violation in any run"),
        (["simulate", ..], 1) => Some("a violation in some run"),
        (["audit", ..], 0) => Some("every invariant holds"),
        (["audit", ..], 1) => Some("an invariant is broken"),
        (["audit", ..], 3) => Some("no verdict: the search did not finish"),
        _ => None,
    }
}

/// The rate table of `simulate`'s output, one phrase per invariant:
/// `mutual_exclusion` 2 in 79,982 acquisitions (2.5e-5; 95%: 6.9e-6 .. 9.1e-5).
/// The same seeds print the same numbers on every machine.
fn simulate_rates(stdout: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let mut inside = false;
    for l in stdout.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.first() == Some(&"invariant") && w.contains(&"violations") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if w.is_empty() {
            break;
        }
        if let [name, _, v, n, rate, lo, "..", hi, ..] = w[..] {
            rows.push(format!(
                "`{name}` {v} in {n} acquisitions ({rate}; 95%: {lo} .. {hi})"
            ));
        }
    }
    rows
}

struct Paint {
    bold: &'static str,
    red: &'static str,
    green: &'static str,
    reset: &'static str,
}

impl Paint {
    fn new(color: bool) -> Paint {
        if color {
            Paint {
                bold: "\x1b[1m",
                red: "\x1b[1;31m",
                green: "\x1b[32m",
                reset: "\x1b[0m",
            }
        } else {
            Paint {
                bold: "",
                red: "",
                green: "",
                reset: "",
            }
        }
    }
}

fn list(exercises: &[Exercise], dir: &Path) -> Result<i32, Failure> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "The workshop's exercises ({}); run one with `locklab workshop N`:",
        dir.join("exercises.md").display()
    );
    let _ = writeln!(out);
    let w = exercises
        .iter()
        .map(|e| e.title.chars().count())
        .max()
        .unwrap_or(0);
    for e in exercises {
        let n = e.lines.len();
        let pad = w - e.title.chars().count();
        let _ = writeln!(
            out,
            "  {:>2}  {}{:pad$}  {n} command{}",
            e.number,
            e.title,
            "",
            if n == 1 { "" } else { "s" }
        );
    }
    outln!("{}", out.trim_end())?;
    Ok(EXIT_OK)
}

/// The sheet's lines from the first that starts with `from` up to (not
/// including) the first after it that starts with `**`.
fn paragraph<'a>(section: &'a [String], from: &str) -> &'a [String] {
    let Some(start) = section.iter().position(|l| l.starts_with(from)) else {
        return &[];
    };
    let end = section[start + 1..]
        .iter()
        .position(|l| l.starts_with("**"))
        .map_or(section.len(), |k| start + 1 + k);
    &section[start..end]
}

fn run_one(e: &Exercise, reveal: bool, further: bool) -> Result<i32, Failure> {
    let color = crate::util::stdout_color();
    let p = Paint::new(color);
    let mut head = String::new();
    let _ = writeln!(
        head,
        "{}Exercise {}: {}{}",
        p.bold, e.number, e.title, p.reset
    );
    let _ = writeln!(head);
    // The situation and the prediction prompt: the section up to "Run.".
    let run_at = e
        .section
        .iter()
        .position(|l| l.starts_with("**Run"))
        .unwrap_or(e.section.len());
    for l in &e.section[..run_at] {
        let _ = writeln!(head, "{l}");
    }
    out!("{}", head.trim_end().to_string() + "\n\n")?;
    let lines: Vec<&Line> = e.lines.iter().filter(|l| further || !l.further).collect();
    let skipped = e.lines.len() - lines.len();
    if !reveal {
        note!(
            "Write down your prediction, then press Enter to run the {} commands (--reveal skips this).",
            lines.len()
        );
        let mut answer = String::new();
        // End of input runs them too.
        let _ = std::io::stdin().read_line(&mut answer);
    }
    let mut matched = 0;
    for line in lines.iter().copied() {
        let mut out = String::new();
        for a in &line.about {
            let _ = writeln!(out, "# {a}");
        }
        let _ = writeln!(
            out,
            "{}$ locklab {}{}",
            p.bold,
            line.args.join(" "),
            p.reset
        );
        out!("{out}")?;
        let (shown, got) = match run_line(line, color, None) {
            Ok(o) => (o.shown, expect_text(&o.got)),
            Err(f) => (
                format!("error: {}\n", f.message),
                format!("error (exit {})", f.code),
            ),
        };
        let want = expect_text(&line.expect);
        let mark = if got == want {
            matched += 1;
            format!("{}✓ as expected: {got}{}", p.green, p.reset)
        } else {
            format!(
                "{}✗ got {got}, the exercise expects {want}{}",
                p.red, p.reset
            )
        };
        outln!("{}\n\n{mark}\n", shown.trim_end())?;
    }
    let look = paragraph(&e.section, "**Look for");
    if !look.is_empty() {
        outln!("{}", look.join("\n").trim_end())?;
        outln!()?;
    }
    outln!(
        "{matched} of {} commands gave what the exercise file expects.",
        lines.len()
    )?;
    if skipped > 0 {
        outln!(
            "Going further: {skipped} more command{} for fast groups (`locklab workshop {} --further` runs them too).",
            if skipped == 1 { "" } else { "s" },
            e.number
        )?;
    }
    Ok(if matched == lines.len() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    })
}

/// The solutions page of the workshop in `dir`
/// (`locklab docs --workshop > docs/workshop/solutions.md`), and each
/// command whose verdict is not the one its exercise file expects.
pub fn solutions_page(dir: &Path) -> Result<(String, Vec<String>), Failure> {
    solutions(&load(dir)?)
}

/// Prints the solutions page; exit 1 when a command gave another verdict
/// than its exercise file expects (each is named on stderr).
pub fn print_solutions(dir: &Path) -> Result<i32, Failure> {
    let (page, mismatches) = solutions_page(dir)?;
    out!("{page}")?;
    for m in &mismatches {
        note!("{m}");
    }
    Ok(if mismatches.is_empty() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    })
}

/// The solutions page: per exercise, each command with what it shows and
/// the verdict computed now.
fn solutions(exercises: &[Exercise]) -> Result<(String, Vec<String>), Failure> {
    let mut out = String::new();
    let _ = writeln!(out, "# Distributed locks, rung by rung: the solutions");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Generated by `locklab docs --workshop > docs/workshop/solutions.md` \
         from the exercise files ([exercises/](exercises/)): every verdict below \
         was computed by running its command when the page was generated, and \
         `tests/workshop.rs` generates the page again and fails when it differs. \
         Do not edit it by hand. The questions are on the [sheet](exercises.md). \
         The checks ran on one thread (`--threads 1`); the state counts are the \
         same for any number of threads."
    );
    let mut mismatches = Vec::new();
    for e in exercises {
        let _ = writeln!(out);
        let _ = writeln!(out, "## Exercise {}: {}", e.number, e.title);
        let _ = writeln!(out);
        let _ = writeln!(out, "| what it shows | command | verdict |");
        let _ = writeln!(out, "|---|---|---|");
        for line in &e.lines {
            let cmd = format!("`locklab {}`", line.args.join(" "));
            let outcome = run_line(line, false, Some(1))?;
            let verdict = match (&outcome.got, &outcome.report) {
                (Expect::Verdict { status, invariant }, Some(r)) => {
                    let v = r.verdicts.iter().find(|v| &v.invariant == invariant);
                    let note = v.map(|v| v.note.as_str()).unwrap_or_default();
                    match v.and_then(|v| v.steps) {
                        Some(n) => format!("`{invariant}` **{status}** in {n} steps: {note}"),
                        None => format!("`{invariant}` **{status}**: {note}"),
                    }
                }
                (Expect::Exit(code), _) => {
                    let mut s = format!("exit {code}");
                    if let Some(m) = exit_meaning(&line.args, *code) {
                        let _ = write!(s, " ({m})");
                    }
                    if let Some(v) = &outcome.verdict_line {
                        let _ = write!(s, ": {v}");
                    }
                    s
                }
                _ => expect_text(&outcome.got),
            };
            if outcome.got != line.expect {
                mismatches.push(format!(
                    "exercise {}: locklab {}: got {}, the file expects {}",
                    e.number,
                    line.args.join(" "),
                    expect_text(&outcome.got),
                    expect_text(&line.expect)
                ));
            }
            let cell = |s: &str| s.replace('|', "\\|");
            let _ = writeln!(
                out,
                "| {} | {cmd} | {} |",
                cell(&line.about.join(" ")),
                cell(&verdict)
            );
        }
    }
    Ok((out, mismatches))
}

pub fn run(args: &WorkshopArgs) -> Result<i32, Failure> {
    if args.solutions {
        return print_solutions(&args.dir);
    }
    let exercises = load(&args.dir)?;
    let Some(n) = &args.number else {
        return list(&exercises, &args.dir);
    };
    let valid: Vec<String> = exercises.iter().map(|e| e.number.to_string()).collect();
    let e = n
        .trim()
        .parse::<u32>()
        .ok()
        .and_then(|n| exercises.iter().find(|e| e.number == n))
        .ok_or_else(|| {
            Failure::input(format!(
                "no exercise {n}; the exercises are {} (`locklab workshop` lists them)",
                valid.join(", ")
            ))
        })?;
    run_one(e, args.reveal, args.further)
}
