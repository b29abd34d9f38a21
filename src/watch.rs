//! A long `check` from the outside: a progress line on a terminal, a time
//! and a memory limit, and Ctrl-C. A watcher thread looks every 100 ms at
//! the clock, the process's resident memory, the interrupt flag and the
//! running search's counters (`search::Progress`: states stored, depth).
//! On a limit or Ctrl-C, a run that stops gracefully (`check`) asks the
//! search to stop and report what it has; otherwise (or if it does not
//! wrap up in time) the process ends from here, after printing what is
//! finished and how far the search had got.

use crate::report::{mib, thousands};
use crate::util::{EXIT_INCOMPLETE, Failure};
use locklab_models::search::Progress;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Exit code after Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// "90s", "5m", "1h", "500ms", "1m30s" -> a duration.
pub fn parse_duration(flag: &str, text: &str) -> Result<Duration, Failure> {
    let bad = || {
        Failure::input(format!(
            "--{flag} {text:?}: expected a duration such as 500ms, 90s, 5m, 1h or 1m30s"
        ))
    };
    let mut total = Duration::ZERO;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.saturating_mul(60)),
            "h" => Duration::from_secs(n.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        total = total.saturating_add(unit);
        rest = &rest[unit_len..];
    }
    if total.is_zero() {
        return Err(Failure::input(format!(
            "--{flag} {text:?}: must be longer than zero"
        )));
    }
    Ok(total)
}

/// "512M", "2G", "1500K" (bytes, powers of 1024) -> bytes.
pub fn parse_bytes(flag: &str, text: &str) -> Result<u64, Failure> {
    let bad = || {
        Failure::input(format!(
            "--{flag} {text:?}: expected a size such as 512M or 2G (K, M, G: powers of 1024)"
        ))
    };
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => return Err(bad()),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    match n.checked_mul(mult) {
        Some(b) if b > 0 => Ok(b),
        _ => Err(bad()),
    }
}

/// Clears the progress line, before another line goes to a terminal.
pub fn clear_line() -> &'static str {
    if std::io::stderr().is_terminal() {
        "\r\x1b[K"
    } else {
        ""
    }
}

/// Resident memory of this process, in bytes (Linux; None elsewhere).
pub use locklab_models::search::resident_memory_bytes as resident_bytes;

/// What the watcher shows and, when it must end the run, prints first.
#[derive(Default)]
struct Shared {
    /// What the run is doing now: "redlock: search".
    phase: String,
    /// When that phase began (for its states per second).
    phase_started: Option<Instant>,
    /// Printed on standard output before the run ends early (the protocols
    /// `check all` has finished).
    finished: String,
    /// Names of what has not started yet, for the closing message.
    pending: Vec<String>,
    /// Whether a limit or Ctrl-C first asks the search to stop (it then
    /// reports what it has) rather than ending the process.
    graceful: bool,
}

/// How long a search asked to stop may take to wrap up before the
/// process ends anyway.
const GRACE: Duration = Duration::from_secs(10);

/// The limits a run was given.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    pub time: Option<Duration>,
    pub memory: Option<u64>,
}

pub struct Watch {
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching: catches Ctrl-C and SIGTERM from now on.
    pub fn start(limits: Limits) -> Watch {
        locklab_replay::interrupt::install();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(Progress::default());
        let tty = std::io::stderr().is_terminal();
        let thread = {
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            let progress = Arc::clone(&progress);
            std::thread::spawn(move || watch(&shared, &stop, &progress, limits, tty))
        };
        Watch {
            shared,
            stop,
            progress,
            thread: Some(thread),
        }
    }

    /// What the run is doing now; a new phase starts its counters afresh.
    pub fn phase(&self, phase: impl Into<String>) {
        self.progress.reset();
        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        s.phase = phase.into();
        s.phase_started = Some(Instant::now());
    }

    /// From now on a limit or Ctrl-C stops the search (which reports what
    /// it has, as incomplete) instead of ending the process; if the run
    /// does not finish within a few seconds after that, it ends anyway.
    pub fn stop_gracefully(&self) {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .graceful = true;
    }

    /// Whether Ctrl-C (or SIGTERM) came.
    pub fn interrupted(&self) -> bool {
        locklab_replay::interrupt::interrupted()
    }

    /// The counters a search run under this watch keeps up to date.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The text to print if the run ends early, and what is still to do.
    pub fn finished(&self, text: String, pending: Vec<String>) {
        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        s.finished = text;
        s.pending = pending;
    }

    /// Stops watching (and clears the progress line). From here on the run
    /// finishes normally.
    pub fn done(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// " (120,000 states, depth 9)" while a search runs, else empty.
fn search_text(p: &Progress) -> String {
    match p.states() {
        0 => String::new(),
        n => format!(" ({} states, depth {})", thousands(n), p.depth()),
    }
}

fn watch(
    shared: &Mutex<Shared>,
    stop: &AtomicBool,
    progress: &Progress,
    limits: Limits,
    tty: bool,
) {
    let started = Instant::now();
    let mut last_draw: Option<Instant> = None;
    let mut drawn = false;
    // When the search was asked to stop, in graceful mode.
    let mut asked: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let elapsed = started.elapsed();
        let rss = resident_bytes();
        // (exit code, what happened, the stop's name in a verdict)
        let why = if locklab_replay::interrupt::interrupted() {
            Some((
                EXIT_INTERRUPTED,
                "interrupted".to_string(),
                "an interrupt (Ctrl-C)".to_string(),
            ))
        } else if let Some(t) = limits.time.filter(|t| elapsed >= *t) {
            let limit = format!("the time limit ({:.0} s)", t.as_secs_f64());
            Some((
                EXIT_INCOMPLETE,
                format!("incomplete: {limit} ran out"),
                limit,
            ))
        } else if let (Some(max), Some(now)) = (limits.memory, rss)
            && now > max
        {
            Some((
                EXIT_INCOMPLETE,
                format!(
                    "incomplete: resident memory {} passed the limit ({})",
                    mib(now),
                    mib(max)
                ),
                format!("the memory limit ({})", mib(max)),
            ))
        } else {
            None
        };
        let s = shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, what, limit)) = &why
            && s.graceful
            && asked.is_none()
        {
            // The search stops between two batches and reports what it has.
            asked = Some(Instant::now());
            progress.cancel(limit.clone());
            let mut err = std::io::stderr().lock();
            if drawn {
                let _ = write!(err, "\r\x1b[K");
                drawn = false;
            }
            let _ = writeln!(
                err,
                "{what} after {:.1} s, during {}{}; the search stops and reports what it found (incomplete)",
                elapsed.as_secs_f64(),
                s.phase,
                search_text(progress),
            );
            continue;
        }
        if let Some((code, what, _)) = why
            && asked.is_none_or(|t| t.elapsed() >= GRACE)
        {
            let mut err = std::io::stderr().lock();
            if drawn {
                let _ = write!(err, "\r\x1b[K");
            }
            // What is finished goes to standard output whole; a write error
            // changes nothing now.
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(s.finished.as_bytes());
            let _ = out.flush();
            let pending = if s.pending.is_empty() {
                String::new()
            } else {
                format!("; not checked: {}", s.pending.join(", "))
            };
            let _ = writeln!(
                err,
                "{what} after {:.1} s, during {}{}{pending}; no verdict for it (no report or trace file was written)",
                elapsed.as_secs_f64(),
                if s.phase.is_empty() {
                    "start-up"
                } else {
                    &s.phase
                },
                search_text(progress),
            );
            std::process::exit(code);
        }
        if tty
            && elapsed >= Duration::from_millis(500)
            && last_draw.is_none_or(|t| t.elapsed() >= Duration::from_millis(250))
        {
            last_draw = Some(Instant::now());
            drawn = true;
            let states = progress.states();
            let in_phase = s.phase_started.map_or(elapsed, |t| t.elapsed());
            let rate = match states {
                0 => String::new(),
                n => format!(
                    ", {} states/s",
                    thousands((n as f64 / in_phase.as_secs_f64().max(1e-3)) as u64)
                ),
            };
            let line: String = format!(
                "{}{}{rate}, {:.1} s, {}",
                s.phase,
                search_text(progress),
                elapsed.as_secs_f64(),
                rss.map(mib).unwrap_or_default()
            )
            .chars()
            .take(79)
            .collect();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{line}\x1b[K");
            let _ = err.flush();
        }
    }
    if drawn {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_parse_or_are_refused() {
        assert_eq!(parse_duration("t", "90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("t", "5m").unwrap(), Duration::from_secs(300));
        assert_eq!(
            parse_duration("t", "1m30s").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse_duration("t", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        for bad in ["", "90", "s", "5x", "-1s", "0s", "1.5s"] {
            assert!(parse_duration("t", bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_bytes("m", "2G").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("m", "512M").unwrap(), 512 << 20);
        for bad in ["", "2", "0M", "G", "2T", "-1M"] {
            assert!(parse_bytes("m", bad).is_err(), "{bad:?}");
        }
    }
}
