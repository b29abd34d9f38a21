//! Small helpers of the CLI: user errors with their exit code, "did you
//! mean", and writing files whole or not at all.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `--color`: whether standard output gets colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// Colour when standard output is a terminal and NO_COLOR is unset or empty
    Auto,
    Always,
    Never,
}

static COLOR: OnceLock<Color> = OnceLock::new();

/// Sets `--color` for the run (once, at start-up).
pub fn set_color(c: Color) {
    let _ = COLOR.set(c);
}

/// Whether to colour standard output: `--color always|never`, or for
/// `auto` what anstream decides (a terminal; NO_COLOR set and non-empty
/// turns colour off, CLICOLOR_FORCE on).
pub fn stdout_color() -> bool {
    match COLOR.get().copied().unwrap_or(Color::Auto) {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
        }
    }
}

/// Exit codes (README.md, "Commands").
pub const EXIT_OK: i32 = 0;
pub const EXIT_VIOLATION: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_INCOMPLETE: i32 = 3;

/// An error to show the user, with the exit code it ends the run with.
/// An empty message is shown as nothing (a closed pipe ends the run quietly).
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

/// Prints to standard output, returning a `Failure` instead of panicking
/// when the output cannot be written: `out!(...)?`.
macro_rules! out {
    ($($t:tt)*) => {
        $crate::util::emit(&format!($($t)*))
    };
}

/// `out!` with a newline.
macro_rules! outln {
    () => {
        $crate::util::emit("\n")
    };
    ($($t:tt)*) => {
        $crate::util::emit(&(format!($($t)*) + "\n"))
    };
}

/// Prints a line to standard error; a standard error that cannot be
/// written is not worth a panic.
macro_rules! note {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// Writes `text` to standard output and flushes it. A closed pipe
/// (`locklab list | head -1`) ends the run quietly with exit 0; any other
/// error (a full disk, `> /dev/full`) is a clear error with exit 2.
pub fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|_| o.flush())
        .map_err(stdout_failure)
}

/// The failure a write to standard output ends the run with.
pub fn stdout_failure(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure {
            code: EXIT_OK,
            message: String::new(),
        }
    } else {
        Failure::input(format!("cannot write to standard output: {e}"))
    }
}

impl Failure {
    /// Bad input: exit 2.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            code: EXIT_BAD_INPUT,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest of `known` to `given`, if it is close enough to be a typo.
pub fn did_you_mean<'a>(given: &str, known: &[&'a str]) -> Option<&'a str> {
    let norm = given.to_ascii_lowercase().replace('_', "-");
    known
        .iter()
        .map(|k| (edit_distance(&norm, &k.replace('_', "-")), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// "unknown protocol 'redlok' (did you mean 'redlock'?); known protocols: a, b, c"
pub fn unknown(what: &str, given: &str, known: &[&str]) -> Failure {
    let hint = did_you_mean(given, known)
        .map(|k| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    Failure::input(format!(
        "unknown {what} '{given}'{hint}; known {what}s: {}",
        known.join(", ")
    ))
}

/// `-` names standard input (for files read) or standard output (for
/// files written).
pub fn is_dash(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How messages name `path`: `standard input` for `-`.
pub fn input_name(path: &Path) -> String {
    if is_dash(path) {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// Reads a whole input file, or standard input for `-`.
pub fn read_input(path: &Path) -> Result<String, Failure> {
    use std::io::Read;
    let mut text = String::new();
    let r = if is_dash(path) {
        std::io::stdin()
            .lock()
            .read_to_string(&mut text)
            .map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    r.map_err(|e| Failure::input(format!("cannot read {}: {e}", input_name(path))))?;
    Ok(text)
}

/// Checks that `path` can be written (its directory exists and a file can
/// be created in it) before any work starts, so a run never fails after
/// doing the work.
pub fn check_writable(path: &Path) -> Result<(), Failure> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        let why = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(Failure::input(format!(
            "cannot write {}: {} {why}",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(Failure::input(format!(
            "cannot write {}: it is a directory",
            path.display()
        )));
    }
    // A device or a pipe is written through, not replaced: nothing to probe.
    if let Ok(m) = std::fs::metadata(path)
        && !m.is_file()
    {
        return Ok(());
    }
    probe(&dir).map_err(|e| {
        Failure::input(format!(
            "cannot write {}: cannot create a file in {}: {e}",
            path.display(),
            dir.display()
        ))
    })
}

/// Creates a file in `dir` and removes it again.
fn probe(dir: &Path) -> std::io::Result<()> {
    let p = dir.join(format!(".locklab-probe.{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)?;
    std::fs::remove_file(&p)
}

/// Makes sure the output directory `dir` (given as `--FLAG`) can take
/// files before any long work starts: it is a directory, or can be created
/// in the nearest existing one, and a file can be created there. Creates
/// nothing that stays.
pub fn prepare_dir(flag: &str, dir: &Path) -> Result<(), Failure> {
    let fail = |why: String| Failure::input(format!("--{flag} {}: {why}", dir.display()));
    let mut existing = dir.to_path_buf();
    while !existing.exists() {
        match existing.parent() {
            Some(p) if !p.as_os_str().is_empty() => existing = p.to_path_buf(),
            _ => {
                existing = PathBuf::from(".");
                break;
            }
        }
    }
    if !existing.is_dir() {
        return Err(fail(if existing == dir {
            "not a directory".into()
        } else {
            format!(
                "cannot create it: {} is not a directory",
                existing.display()
            )
        }));
    }
    probe(&existing).map_err(|e| fail(format!("cannot write files in {}: {e}", existing.display())))
}

/// Writes `contents` to `path` atomically: a temporary file in the same
/// directory, then a rename. A reader never sees half a file.
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure {
        code: EXIT_BAD_INPUT,
        message: format!("cannot write {}: {e}", path.display()),
    };
    // Write what a symbolic link names, so that the link stays a link.
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(t) => t,
            // A dangling link: create the file it names.
            Err(_) => match std::fs::read_link(path) {
                Ok(t) if t.is_relative() => path.parent().unwrap_or(Path::new(".")).join(t),
                Ok(t) => t,
                Err(e) => return Err(fail(e)),
            },
        },
        _ => path.to_path_buf(),
    };
    // A device or a pipe (`/dev/stdout`, a FIFO) is written through: there
    // is no file to replace, and renaming over it would destroy it.
    if let Ok(m) = std::fs::metadata(&target)
        && !m.is_file()
        && !m.is_dir()
    {
        return std::fs::write(&target, contents).map_err(fail);
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, contents)
        .and_then(|_| std::fs::rename(&tmp, &target))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let known = ["naive-del", "get-del", "lua-release", "setnx-expire"];
        assert_eq!(did_you_mean("naive_del", &known), Some("naive-del"));
        assert_eq!(did_you_mean("lua-relase", &known), Some("lua-release"));
        assert_eq!(did_you_mean("zookeeper", &known), None);
    }
}
