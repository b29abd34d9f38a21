//! The lock description file (`locklab.toml`, docs/audit.md): one TOML
//! file that describes a lock in the system's own terms — the lock service,
//! the client library, the timings, the clocks, the resource and the faults
//! to consider — and that `check`, `simulate` and `audit` read.
//!
//! A key of the file *is* an option of `check` or `simulate` (the same name
//! and the same values), filed under the section that says what it is
//! about; a few keys speak for several options at once (`[faults] possible`
//! is `check --faults` and switches off the `simulate` rates of the kinds
//! left out; `[clocks] steps = false` takes the clock jump out of both).
//! The file is turned into the command's own arguments, placed before the
//! ones typed on the command line, so a flag given there overrides the
//! file. Every value is read by the command's own parser: the file accepts
//! exactly what the options accept. Errors name the file, the line and the
//! key, and say what is allowed.

use crate::util::{EXIT_BAD_INPUT, Failure, did_you_mean};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The file `check`, `simulate` and `audit` read when no `--config` is given.
pub const DEFAULT_FILE: &str = "locklab.toml";

/// What a key's value is, in TOML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A string: a name, a duration ("30s") or a range ("200ms..2s").
    Text,
    /// A whole number.
    Int,
    /// true or false: a yes/no knob (true gives the option).
    Bool,
    /// true or false, given to the option as on/off.
    OnOff,
    /// A number, whole or not, or a string holding one.
    Number,
    /// An array of strings: fault kinds.
    List,
    /// A table of KIND = N.
    Table,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Text => "a string",
            Kind::Int => "a whole number",
            Kind::Bool | Kind::OnOff => "true or false",
            Kind::Number => "a number",
            Kind::List => "an array of strings",
            Kind::Table => "a table of KIND = N",
        }
    }
}

/// One key of the file: its section, its name, its kind, and the option of
/// each command it sets (`None`: the command has no such option).
struct Key {
    section: &'static str,
    name: &'static str,
    kind: Kind,
    check: Option<&'static str>,
    simulate: Option<&'static str>,
}

const fn key(
    section: &'static str,
    name: &'static str,
    kind: Kind,
    check: Option<&'static str>,
    simulate: Option<&'static str>,
) -> Key {
    Key {
        section,
        name,
        kind,
        check,
        simulate,
    }
}

/// The sections, in the order the starter file and the docs give them.
pub const SECTIONS: &[(&str, &str)] = &[
    (
        "lock",
        "the lock service and the client library: design, preset, knobs, TTL, renewal",
    ),
    (
        "timing",
        "normal timings: work, network latency, a client's step, timeouts (beyond them is a fault)",
    ),
    ("clocks", "clock step corrections (jumps) and rate drift"),
    (
        "resource",
        "the resource the lock protects, and how it checks fencing tokens",
    ),
    (
        "faults",
        "which faults are possible, and how often (per second) for the simulator",
    ),
    (
        "explore",
        "the exhaustive check: clients, acquisitions, search bounds",
    ),
    (
        "simulate",
        "the simulator: runs, seed, clients, acquisitions, and the acquisition rate for daily figures",
    ),
];

use Kind::*;

/// Every key, by section. A key sets the option of the same name unless
/// its row says otherwise.
const KEYS: &[Key] = &[
    key("lock", "protocol", Text, None, None),
    key("lock", "client", Text, Some("client"), Some("client")),
    key(
        "lock",
        "instances",
        Int,
        Some("instances"),
        Some("instances"),
    ),
    key("lock", "quorum", Int, Some("quorum"), Some("quorum")),
    key("lock", "wait-replicas", Int, Some("wait-replicas"), None),
    key(
        "lock",
        "transport-retries",
        Int,
        Some("transport-retries"),
        Some("transport-retries"),
    ),
    key("lock", "value", Text, Some("value"), None),
    key("lock", "lock-shape", Text, Some("lock-shape"), None),
    key(
        "lock",
        "renewal-on-error",
        Text,
        Some("renewal-on-error"),
        None,
    ),
    key(
        "lock",
        "unlock-on-failure",
        Text,
        Some("unlock-on-failure"),
        None,
    ),
    key("lock", "release", Text, Some("release"), None),
    key("lock", "requests", Text, Some("requests"), None),
    key("lock", "decide", Text, Some("decide"), None),
    key(
        "lock",
        "validity-check",
        OnOff,
        Some("validity-check"),
        None,
    ),
    key("lock", "elapsed-clock", Text, Some("elapsed-clock"), None),
    // simulate: --drift-factor-ppm, converted.
    key("lock", "drift-factor", Number, Some("drift-factor"), None),
    key("lock", "ttl", Text, Some("ttl"), Some("ttl")),
    // simulate: --renew-ratio, the period over the TTL.
    key("lock", "renew-every", Text, Some("renew-every"), None),
    key(
        "lock",
        "renew-cap",
        Text,
        Some("renew-cap"),
        Some("renew-cap"),
    ),
    key(
        "lock",
        "renew-unchecked",
        Bool,
        Some("renew-unchecked"),
        Some("renew-unchecked"),
    ),
    key(
        "lock",
        "no-cancel",
        Bool,
        Some("no-cancel"),
        Some("no-cancel"),
    ),
    key(
        "lock",
        "delayed-restart",
        Bool,
        Some("delayed-restart"),
        Some("delayed-restart"),
    ),
    key(
        "lock",
        "no-recheck",
        Bool,
        Some("no-recheck"),
        Some("no-recheck"),
    ),
    key("lock", "token", Text, Some("token"), None),
    key("lock", "handoff", Text, Some("handoff"), None),
    key("lock", "reenter", Text, Some("reenter"), None),
    key("lock", "crash", Text, Some("crash"), None),
    key("timing", "work", Text, Some("work"), Some("work")),
    key("timing", "work-p50", Text, None, Some("work-p50")),
    key("timing", "work-p99", Text, None, Some("work-p99")),
    key("timing", "latency", Text, Some("latency"), Some("latency")),
    key("timing", "latency-p50", Text, None, Some("latency-p50")),
    key("timing", "latency-p99", Text, None, Some("latency-p99")),
    key("timing", "step", Text, Some("step"), Some("step")),
    key("timing", "timeout", Text, Some("timeout"), Some("timeout")),
    key("timing", "retry", Text, Some("retry"), Some("backoff-min")),
    key("timing", "retry-max", Text, Some("retry-max"), None),
    key("timing", "backoff-max", Text, None, Some("backoff-max")),
    key("timing", "think", Text, None, Some("think")),
    key("timing", "pause-max", Text, Some("pause-max"), None),
    key("timing", "pause-p50", Text, None, Some("pause-p50")),
    key("timing", "pause-p99", Text, None, Some("pause-p99")),
    key("timing", "delay-max", Text, Some("delay-max"), None),
    key("timing", "network", Text, Some("network"), Some("network")),
    // Special: takes clock-jump out of both commands when false.
    key("clocks", "steps", Bool, None, None),
    key("clocks", "jump", Text, Some("jump"), Some("jump")),
    // simulate: --clock-drift-ppm, converted.
    key("clocks", "clock-drift", Text, Some("clock-drift"), None),
    key(
        "resource",
        "resource-check",
        Text,
        Some("resource-check"),
        Some("resource-check"),
    ),
    key(
        "resource",
        "token-rule",
        Text,
        Some("token-rule"),
        Some("token-rule"),
    ),
    key(
        "resource",
        "resource-op",
        Text,
        Some("resource-op"),
        Some("resource-op"),
    ),
    key("resource", "stock", Int, Some("stock"), Some("stock")),
    key(
        "resource",
        "fence-reads",
        Bool,
        Some("fence-reads"),
        Some("fence-reads"),
    ),
    key(
        "resource",
        "token-store",
        Text,
        Some("token-store"),
        Some("token-store"),
    ),
    key(
        "resource",
        "unfenced-writers",
        Int,
        Some("unfenced-writers"),
        Some("unfenced-writers"),
    ),
    key(
        "resource",
        "idempotent",
        Bool,
        Some("idempotent"),
        Some("idempotent"),
    ),
    key(
        "resource",
        "reconcile",
        Text,
        Some("reconcile"),
        Some("reconcile"),
    ),
    key(
        "resource",
        "detect-within",
        Text,
        Some("detect-within"),
        Some("detect-within"),
    ),
    // Special: check --faults; simulate: the rates of the kinds left out are 0.
    key("faults", "possible", List, Some("faults"), None),
    key("faults", "max-faults", Text, Some("max-faults"), None),
    key("faults", "budget", Table, Some("budget"), None),
    key("faults", "pause-rate", Number, None, Some("pause-rate")),
    key("faults", "loss", Number, None, Some("loss")),
    key("faults", "jump-rate", Number, None, Some("jump-rate")),
    key("faults", "crash-rate", Number, None, Some("crash-rate")),
    key("faults", "restart-rate", Number, None, Some("restart-rate")),
    key(
        "faults",
        "failover-rate",
        Number,
        None,
        Some("failover-rate"),
    ),
    key(
        "faults",
        "resource-restart-rate",
        Number,
        None,
        Some("resource-restart-rate"),
    ),
    key(
        "faults",
        "duplicate-rate",
        Number,
        None,
        Some("duplicate-rate"),
    ),
    key("explore", "clients", Int, Some("clients"), None),
    key("explore", "acquisitions", Int, Some("acquisitions"), None),
    key("explore", "max-states", Int, Some("max-states"), None),
    key("explore", "time-limit", Text, Some("time-limit"), None),
    key("explore", "max-depth", Int, Some("max-depth"), None),
    key("explore", "max-memory", Text, Some("max-memory"), None),
    key("explore", "memory-limit", Text, Some("memory-limit"), None),
    key("explore", "spill-dir", Text, Some("spill-dir"), None),
    key("explore", "invariants", List, Some("invariants"), None),
    key("simulate", "clients", Int, None, Some("clients")),
    key("simulate", "acquisitions", Int, None, Some("acquisitions")),
    key("simulate", "runs", Int, None, Some("runs")),
    key("simulate", "seed", Int, None, Some("seed")),
    key("simulate", "horizon", Text, None, Some("horizon")),
    key("simulate", "scheduler", Text, None, Some("scheduler")),
    // Audit only: the rate per day is the rate per acquisition times this.
    key("simulate", "acquisitions-per-day", Int, None, None),
];

/// The commands a description feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum For {
    Check,
    Simulate,
}

impl For {
    fn name(self) -> &'static str {
        match self {
            For::Check => "check",
            For::Simulate => "simulate",
        }
    }
}

/// One value read from the file, with where it was.
#[derive(Clone, Debug)]
pub struct Setting {
    pub section: &'static str,
    pub key: &'static str,
    pub line: usize,
    /// The value as the option takes it (a list joined by commas, a table
    /// as KIND=N,KIND=N, true/false for a yes/no knob).
    pub value: String,
}

/// Some of a command's arguments (an option and its value), with the
/// setting they came from.
pub type Arg<'a> = (Vec<String>, Option<&'a Setting>);

/// A lock description, read and type-checked.
#[derive(Clone, Debug)]
pub struct Description {
    pub path: PathBuf,
    pub settings: Vec<Setting>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn allowed_keys(section: &str) -> Vec<&'static str> {
    KEYS.iter()
        .filter(|k| k.section == section)
        .map(|k| k.name)
        .collect()
}

impl Description {
    /// Reads and type-checks the description at `path`.
    pub fn load(path: &Path) -> Result<Description, Failure> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::input(format!(
                "cannot read the lock description {}: {e}{}",
                path.display(),
                if e.kind() == std::io::ErrorKind::NotFound {
                    "; write a starter with `locklab init`"
                } else {
                    ""
                }
            ))
        })?;
        Description::parse(path, &text)
    }

    /// Type-checks the description `text` (read from `path`).
    pub fn parse(path: &Path, text: &str) -> Result<Description, Failure> {
        let file = path.display().to_string();
        let at = |offset: usize| format!("{file}:{}", line_of(text, offset));
        let root = DeTable::parse(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
            Failure::input(format!(
                "{file}:{line}: not valid TOML: {}",
                e.message().trim()
            ))
        })?;
        let section_names: Vec<&str> = SECTIONS.iter().map(|(s, _)| *s).collect();
        let mut settings = Vec::new();
        for (name, value) in root.get_ref() {
            let sname: &str = name.get_ref();
            // A key outside any section: say which section takes it.
            if !matches!(value.get_ref(), DeValue::Table(_)) {
                let home = KEYS
                    .iter()
                    .find(|k| k.name == sname)
                    .map_or("a section".to_string(), |k| format!("[{}]", k.section));
                return Err(Failure::input(format!(
                    "{}: `{sname}` is outside any section; put it under {home} (sections: {})",
                    at(name.span().start),
                    section_names.join(", ")
                )));
            }
            let Some(section) = section_names.iter().copied().find(|s| *s == sname) else {
                let hint = did_you_mean(sname, &section_names)
                    .map(|s| format!("did you mean [{s}]? "))
                    .unwrap_or_default();
                return Err(Failure::input(format!(
                    "{}: unknown section [{sname}]; {hint}sections: {}",
                    at(name.span().start),
                    section_names.join(", ")
                )));
            };
            let DeValue::Table(table) = value.get_ref() else {
                return Err(Failure::input(format!(
                    "{}: `{sname}` must be a section ([{sname}]), not a value",
                    at(name.span().start)
                )));
            };
            for (k, v) in table {
                settings.push(read_key(section, k, v, &at)?);
            }
        }
        // In the file's order, so the command lines read as the file does.
        settings.sort_by_key(|s| s.line);
        let d = Description {
            path: path.to_path_buf(),
            settings,
        };
        if d.get("lock", "protocol").is_none() {
            return Err(Failure::input(format!(
                "{file}: [lock] has no `protocol`; name the design, one of: {}",
                locklab_models::protocols::names().join(", ")
            )));
        }
        Ok(d)
    }

    /// A key's setting, if the file gives it.
    pub fn get(&self, section: &str, key: &str) -> Option<&Setting> {
        self.settings
            .iter()
            .find(|s| s.section == section && s.key == key)
    }

    /// The protocol the file describes.
    pub fn protocol(&self) -> &str {
        self.get("lock", "protocol")
            .map_or("", |s| s.value.as_str())
    }

    /// Where `s` was set, for messages: `FILE:LINE ([section] key)`.
    pub fn origin(&self, s: &Setting) -> String {
        format!(
            "{}:{} ([{}] {})",
            self.path.display(),
            s.line,
            s.section,
            s.key
        )
    }

    /// The arguments of `command` the description gives, with the
    /// setting each came from, protocol excluded.
    pub fn args(&self, command: For) -> Result<Vec<Arg<'_>>, Failure> {
        let mut out: Vec<Arg<'_>> = Vec::new();
        let flag = |o: &str| format!("--{o}");
        let steps_off = self
            .get("clocks", "steps")
            .is_some_and(|s| s.value == "false");
        for s in &self.settings {
            let k = KEYS
                .iter()
                .find(|k| k.section == s.section && k.name == s.key)
                .expect("read keys are known");
            let option = match command {
                For::Check => k.check,
                For::Simulate => k.simulate,
            };
            match (command, s.key) {
                (For::Check, "possible") => {
                    let mut kinds: Vec<&str> =
                        s.value.split(',').filter(|x| !x.is_empty()).collect();
                    if steps_off {
                        kinds.retain(|k| *k != "clock-jump");
                    }
                    let v = if kinds.is_empty() {
                        "none".to_string()
                    } else {
                        kinds.join(",")
                    };
                    out.push((vec![flag("faults"), v], Some(s)));
                    continue;
                }
                (For::Simulate, "drift-factor") => {
                    let ppm = crate::options::drift_factor(&s.value)
                        .map_err(|e| self.at(s, &e.message))?;
                    out.push((vec![flag("drift-factor-ppm"), ppm.to_string()], Some(s)));
                    continue;
                }
                (For::Simulate, "clock-drift") => {
                    let ppm = crate::options::clock_drift(&s.value)
                        .map_err(|e| self.at(s, &e.message))?;
                    out.push((vec![flag("clock-drift-ppm"), ppm.to_string()], Some(s)));
                    continue;
                }
                (For::Simulate, "renew-every") => {
                    let every = crate::options::duration("renew-every", &s.value)
                        .map_err(|e| self.at(s, &e.message))?;
                    let ttl = match self.get("lock", "ttl") {
                        Some(t) => crate::options::duration("ttl", &t.value)
                            .map_err(|e| self.at(t, &e.message))?,
                        None => {
                            locklab_models::Params::defaults(
                                locklab_models::protocols::by_name("watchdog").expect("watchdog"),
                            )
                            .ttl
                        }
                    };
                    if ttl > 0 {
                        let ratio = every as f64 / ttl as f64;
                        out.push((vec![flag("renew-ratio"), format!("{ratio}")], Some(s)));
                    }
                    continue;
                }
                _ => {}
            }
            let Some(option) = option else { continue };
            match k.kind {
                Bool => {
                    if s.value == "true" {
                        out.push((vec![flag(option)], Some(s)));
                    }
                }
                OnOff => out.push((
                    vec![
                        flag(option),
                        if s.value == "true" { "on" } else { "off" }.into(),
                    ],
                    Some(s),
                )),
                _ => out.push((vec![flag(option), s.value.clone()], Some(s))),
            }
        }
        if command == For::Simulate {
            out.extend(self.simulate_fault_args());
        }
        Ok(out)
    }

    /// For `simulate`: the faults the file rules out get no rate (a delay or
    /// a slow run beyond the window only when the file allows it).
    fn simulate_fault_args(&self) -> Vec<Arg<'_>> {
        let proto = locklab_models::protocols::by_name(self.protocol());
        let can = |k: locklab_models::FaultKind| proto.is_some_and(|p| p.faults().contains(&k));
        let steps_off = self
            .get("clocks", "steps")
            .is_some_and(|s| s.value == "false");
        let possible = self.get("faults", "possible");
        let allowed = |name: &str| {
            possible.is_none_or(|p| p.value.split(',').any(|k| k == name))
                && !(steps_off && name == "clock-jump")
        };
        let mut out = Vec::new();
        use locklab_models::FaultKind as F;
        for (kind, rate) in [
            (F::Pause, "pause-rate"),
            (F::Loss, "loss"),
            (F::ClockJump, "jump-rate"),
            (F::Crash, "crash-rate"),
            (F::Restart, "restart-rate"),
            (F::Failover, "failover-rate"),
        ] {
            if can(kind) && !allowed(kind.name()) {
                out.push((vec![format!("--{rate}"), "0".into()], possible));
            }
        }
        if let Some(p) = possible {
            for kind in [F::Delay, F::Slow] {
                if can(kind) && allowed(kind.name()) {
                    out.push((vec![format!("--{}", kind.name())], Some(p)));
                }
            }
        }
        out
    }

    /// An error about setting `s`.
    pub fn at(&self, s: &Setting, message: &str) -> Failure {
        Failure::input(format!("{}: {message}", self.origin(s)))
    }

    /// The full argument list of `locklab COMMAND` for this description
    /// alone (protocol first).
    pub fn argv(&self, command: For) -> Result<Vec<String>, Failure> {
        let mut v = vec![
            "locklab".to_string(),
            command.name().into(),
            self.protocol().into(),
        ];
        for (a, _) in self.args(command)? {
            v.extend(a);
        }
        Ok(v)
    }

    /// Checks that every value is one its option takes, parsing the file's
    /// arguments with the command's own parser, one setting at a time, so
    /// that an error names the line it came from.
    pub fn validate(&self, command: For) -> Result<(), Failure> {
        let base = [
            "locklab".to_string(),
            command.name().into(),
            self.protocol().into(),
        ];
        let proto = self.get("lock", "protocol").expect("checked at load");
        if locklab_models::protocols::by_name(self.protocol()).is_none() {
            return Err(self.at(
                proto,
                &crate::util::unknown(
                    "protocol",
                    self.protocol(),
                    &locklab_models::protocols::names(),
                )
                .message,
            ));
        }
        for (a, s) in self.args(command)? {
            let mut argv = base.to_vec();
            argv.extend(a.iter().cloned());
            if let Err(e) = crate::cli::Cli::try_parse_args(&argv) {
                let msg = clap_message(&e);
                return Err(match s {
                    Some(s) => self.at(s, &msg),
                    None => Failure::input(format!("{}: {msg}", self.path.display())),
                });
            }
        }
        // Then the values together, as the command reads them: units,
        // ranges, and options that do not apply to the protocol.
        let whole = crate::cli::Cli::try_parse_args(&self.argv(command)?).map_err(|e| {
            Failure::input(format!("{}: {}", self.path.display(), clap_message(&e)))
        })?;
        let checked = match whole.command {
            crate::cli::Command::Check(c) => c.model.build().map(|_| ()),
            crate::cli::Command::Simulate(s) => s.config().map(|_| ()),
            _ => Ok(()),
        };
        checked.map_err(|f| Failure {
            code: f.code,
            message: self.annotate(command, &f.message),
        })
    }

    /// Prefixes `message` with where the option it names (`--ttl ...`)
    /// was set, when the file set it: a model error names options, the
    /// user wrote keys.
    pub fn annotate(&self, command: For, message: &str) -> String {
        let Ok(args) = self.args(command) else {
            return message.to_string();
        };
        for (a, s) in &args {
            let (Some(flag), Some(s)) = (a.first(), s) else {
                continue;
            };
            let mentioned = message.match_indices(flag.as_str()).any(|(i, _)| {
                !message[i + flag.len()..]
                    .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
            });
            if mentioned {
                return format!("{}: {message}", self.origin(s));
            }
        }
        message.to_string()
    }
}

/// A clap error's first line, without its "error: " prefix.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if let Some(vals) = text.lines().find(|l| l.contains("possible values")) {
        msg.push_str(&format!(" ({})", vals.trim().trim_matches(['[', ']'])));
    }
    msg
}

/// Reads one key of `section`.
fn read_key(
    section: &'static str,
    k: &Spanned<toml::de::DeString<'_>>,
    v: &Spanned<DeValue<'_>>,
    at: &dyn Fn(usize) -> String,
) -> Result<Setting, Failure> {
    let name: &str = k.get_ref();
    let keys = allowed_keys(section);
    let Some(def) = KEYS.iter().find(|d| d.section == section && d.name == name) else {
        // A key of another section is a likely slip: say where it goes.
        let elsewhere = KEYS
            .iter()
            .find(|d| d.name == name)
            .map(|d| format!("`{name}` goes in [{}]; ", d.section));
        let hint = elsewhere
            .or_else(|| did_you_mean(name, &keys).map(|s| format!("did you mean `{s}`? ")));
        return Err(Failure::input(format!(
            "{}: unknown key `{name}` in [{section}]; {}keys of [{section}]: {}",
            at(k.span().start),
            hint.unwrap_or_default(),
            keys.join(", ")
        )));
    };
    let wrong = |found: &str| {
        Failure::input(format!(
            "{}: [{section}] {name}: expected {}, found {found}",
            at(v.span().start),
            def.kind.what()
        ))
    };
    let found = v.get_ref().type_str();
    let value = match (def.kind, v.get_ref()) {
        (Text, DeValue::String(s)) => s.to_string(),
        // A bare whole number where a name or count is wanted is fine
        // (`max-faults = 2`); a duration then fails in its own parser.
        (Text, DeValue::Integer(i)) => {
            int_text(i.as_str(), i.radix()).ok_or_else(|| wrong(found))?
        }
        (Int, DeValue::Integer(i)) => {
            int_text(i.as_str(), i.radix()).ok_or_else(|| wrong(found))?
        }
        (Bool | OnOff, DeValue::Boolean(b)) => b.to_string(),
        (Number, DeValue::Integer(i)) => {
            int_text(i.as_str(), i.radix()).ok_or_else(|| wrong(found))?
        }
        (Number, DeValue::Float(f)) => f.as_str().replace('_', ""),
        (Number, DeValue::String(s)) => s.to_string(),
        (List, DeValue::Array(items)) => {
            let mut names = Vec::new();
            for item in items.iter() {
                match item.get_ref() {
                    DeValue::String(s) => names.push(s.to_string()),
                    other => {
                        return Err(Failure::input(format!(
                            "{}: [{section}] {name}: expected an array of strings, found a {} in it",
                            at(item.span().start),
                            other.type_str()
                        )));
                    }
                }
            }
            names.join(",")
        }
        (List, DeValue::String(s)) if s.as_ref() == "all" || s.as_ref() == "none" => s.to_string(),
        (Table, DeValue::Table(t)) => {
            let mut parts = Vec::new();
            for (kind, n) in t {
                match n.get_ref() {
                    DeValue::Integer(i) => parts.push(format!(
                        "{}={}",
                        kind.get_ref(),
                        int_text(i.as_str(), i.radix()).ok_or_else(|| wrong(found))?
                    )),
                    other => {
                        return Err(Failure::input(format!(
                            "{}: [{section}] {name}.{}: expected a whole number, found {}",
                            at(n.span().start),
                            kind.get_ref(),
                            other.type_str()
                        )));
                    }
                }
            }
            parts.join(",")
        }
        _ => return Err(wrong(found)),
    };
    Ok(Setting {
        section,
        key: def.name,
        line: line_of_span(at, k.span().start),
        value,
    })
}

/// The line number `at` put in its text.
fn line_of_span(at: &dyn Fn(usize) -> String, offset: usize) -> usize {
    at(offset)
        .rsplit(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// A TOML integer's text as a decimal number (underscores dropped); `None`
/// for a negative one or another radix.
fn int_text(text: &str, radix: u32) -> Option<String> {
    let t = text.replace('_', "");
    let digits = t.strip_prefix('+').unwrap_or(&t);
    (radix == 10 && !digits.starts_with('-')).then(|| digits.to_string())
}

/// The description `expand` read, for the messages of the run.
static LOADED: std::sync::OnceLock<(Description, For)> = std::sync::OnceLock::new();

/// An error message of the run, with where the option it names was set
/// when a description set it.
pub fn annotate_loaded(message: &str) -> String {
    match LOADED.get() {
        Some((d, command)) => d.annotate(*command, message),
        None => message.to_string(),
    }
}

/// A fix as the keys to set in a description: `protocol = "x"` when it
/// changes the protocol, then each option of `args` (`--renew-every 10s`,
/// `--set renew-unchecked=false`) as its key.
pub fn change_text(protocol: Option<&str>, args: &[String]) -> String {
    let mut parts = Vec::new();
    if let Some(p) = protocol {
        parts.push(format!("protocol = \"{p}\""));
    }
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if a == "--set" {
            if let Some(kv) = it.next() {
                let (k, v) = kv.split_once('=').unwrap_or((kv, "true"));
                parts.push(format!("{k} = {v}"));
            }
            continue;
        }
        let Some(option) = a.strip_prefix("--") else {
            continue;
        };
        let value = match it.peek() {
            Some(v) if !v.starts_with("--") => it.next().cloned(),
            _ => None,
        };
        let key = KEYS.iter().find(|k| k.check == Some(option));
        let name = key.map_or(option, |k| k.name);
        let text = match (key.map(|k| k.kind), value) {
            (Some(OnOff), Some(v)) => (v == "on").to_string(),
            (Some(Int), Some(v)) => v,
            (_, Some(v)) => format!("\"{v}\""),
            (_, None) => "true".into(),
        };
        parts.push(format!("{name} = {text}"));
    }
    parts.join(", ")
}

/// Where the description comes from: `--config FILE`, or `locklab.toml`
/// in the current directory, or nowhere (`--no-config`, or no such file).
pub fn locate(given: Option<&Path>, no_config: bool) -> Option<PathBuf> {
    if no_config {
        return None;
    }
    match given {
        Some(p) => Some(p.to_path_buf()),
        None => {
            let p = PathBuf::from(DEFAULT_FILE);
            p.is_file().then_some(p)
        }
    }
}

/// `locklab check|simulate` with a description: its arguments placed
/// before the command line's, so that a flag typed there overrides the
/// file (the commands take the last value of an option). The protocol is
/// the file's unless the command line names one. Anything else is left as
/// it is.
pub fn expand(argv: Vec<OsString>) -> Result<Vec<OsString>, Failure> {
    let text: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // The subcommand: the first word that is not the global --color.
    let mut i = 1;
    while i < text.len() {
        match text[i].as_str() {
            "--color" => i += 2,
            s if s.starts_with("--color=") => i += 1,
            _ => break,
        }
    }
    let command = match text.get(i).map(String::as_str) {
        Some("check") => For::Check,
        Some("simulate") => For::Simulate,
        _ => return Ok(argv),
    };
    let rest = &text[i + 1..];
    if rest.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(argv);
    }
    let mut given: Option<PathBuf> = None;
    for (j, a) in rest.iter().enumerate() {
        if a == "--config" {
            match rest.get(j + 1) {
                Some(p) => given = Some(PathBuf::from(p)),
                None => return Ok(argv),
            }
        } else if let Some(p) = a.strip_prefix("--config=") {
            given = Some(PathBuf::from(p));
        }
    }
    let no_config = rest.iter().any(|a| a == "--no-config");
    let Some(path) = locate(given.as_deref(), no_config) else {
        return Ok(argv);
    };
    if given.is_none() {
        note!("reading the lock description ./{DEFAULT_FILE} (--no-config ignores it)");
    }
    let d = Description::load(&path)?;
    d.validate(command)?;
    // Does the command line name a protocol? It does when it parses as it
    // is; a missing positional is the one error the file can mend.
    let named = match crate::cli::Cli::try_parse_args(&text) {
        Ok(_) => true,
        Err(e) => e.kind() != clap::error::ErrorKind::MissingRequiredArgument,
    };
    let _ = LOADED.set((d.clone(), command));
    let mut out: Vec<OsString> = argv[..=i].to_vec();
    if !named {
        out.push(d.protocol().into());
    }
    for (a, _) in d.args(command)? {
        out.extend(a.into_iter().map(OsString::from));
    }
    out.extend(argv[i + 1..].iter().cloned());
    Ok(out)
}

/// The starter file `locklab init` writes: every section, the keys an
/// engineer is most likely to set given, the rest commented out with their
/// defaults. It audits as it is (tests/audit.rs).
pub const STARTER: &str = include_str!("../examples/starter.toml");

/// `locklab init [FILE]`: writes the starter description. Never replaces a
/// file.
pub fn init(path: &Path) -> Result<i32, Failure> {
    if path.exists() {
        return Err(Failure {
            code: EXIT_BAD_INPUT,
            message: format!(
                "{} already exists; locklab init never replaces a file: name another (locklab init FILE), or edit that one",
                path.display()
            ),
        });
    }
    crate::util::check_writable(path)?;
    crate::util::write_atomic(path, STARTER)?;
    note!(
        "wrote {}: describe your lock in it, then run `locklab audit{}` (docs/audit.md explains each key)",
        path.display(),
        if path == Path::new(DEFAULT_FILE) {
            String::new()
        } else {
            format!(" {}", path.display())
        }
    );
    Ok(0)
}

/// Every key by section (the docs' tables list them all: a test says so).
#[cfg(test)]
fn keys_by_section() -> Vec<(&'static str, Vec<&'static str>)> {
    SECTIONS
        .iter()
        .map(|(s, _)| (*s, allowed_keys(s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Description, Failure> {
        Description::parse(Path::new("t.toml"), text)
    }

    #[test]
    fn docs_audit_md_lists_every_key_in_its_section() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit.md"))
            .expect("docs/audit.md");
        for (section, keys) in keys_by_section() {
            let start = doc
                .find(&format!("### `[{section}]`"))
                .unwrap_or_else(|| panic!("docs/audit.md has no heading for [{section}]"));
            let rest = &doc[start + 4..];
            let end = rest.find("### ").unwrap_or(rest.len());
            for k in keys {
                assert!(
                    rest[..end].contains(&format!("| `{k}` |")),
                    "docs/audit.md: [{section}] does not list `{k}`"
                );
            }
        }
    }

    #[test]
    fn keys_become_the_options_of_each_command() {
        let d = parse(
            "[lock]\nprotocol = \"watchdog\"\nttl = \"30s\"\nrenew-every = \"10s\"\nrenew-unchecked = true\n\
             [faults]\npossible = [\"pause\", \"slow\"]\n[clocks]\nclock-drift = \"100ppm\"\n",
        )
        .unwrap();
        let check = d.argv(For::Check).unwrap().join(" ");
        assert_eq!(
            check,
            "locklab check watchdog --ttl 30s --renew-every 10s --renew-unchecked --faults pause,slow --clock-drift 100ppm"
        );
        let sim = d.argv(For::Simulate).unwrap().join(" ");
        assert!(sim.contains("--renew-ratio 0.333"), "{sim}");
        assert!(sim.contains("--clock-drift-ppm 100"), "{sim}");
        // Faults ruled out get no rate; slow is allowed beyond the window.
        assert!(
            sim.contains("--crash-rate 0") && sim.contains("--loss 0"),
            "{sim}"
        );
        assert!(sim.contains("--slow") && !sim.contains("--delay"), "{sim}");
        assert!(!sim.contains("--pause-rate 0"), "{sim}");
    }

    #[test]
    fn clock_steps_off_takes_the_jump_out() {
        let d = parse(
            "[lock]\nprotocol = \"redlock\"\n[clocks]\nsteps = false\n[faults]\npossible = [\"clock-jump\", \"pause\"]\n",
        )
        .unwrap();
        assert!(
            d.argv(For::Check)
                .unwrap()
                .join(" ")
                .ends_with("--faults pause")
        );
        assert!(
            d.argv(For::Simulate)
                .unwrap()
                .join(" ")
                .contains("--jump-rate 0")
        );
    }

    #[test]
    fn errors_name_the_line_the_key_and_what_is_allowed() {
        let e = parse("[lock]\nprotocol = \"watchdog\"\nttll = \"30s\"\n").unwrap_err();
        assert!(
            e.message
                .starts_with("t.toml:3: unknown key `ttll` in [lock]"),
            "{}",
            e.message
        );
        assert!(e.message.contains("did you mean `ttl`"), "{}", e.message);
        let e = parse("[lock]\nprotocol = \"watchdog\"\n[timing]\nclients = 3\n").unwrap_err();
        assert!(
            e.message.contains("`clients` goes in [explore]"),
            "{}",
            e.message
        );
        let e = parse("[lock]\nprotocol = \"watchdog\"\nttl = 30\n")
            .unwrap()
            .validate(For::Check)
            .unwrap_err();
        assert_eq!(e.code, EXIT_BAD_INPUT);
        assert!(
            e.message
                .starts_with("t.toml:3 ([lock] ttl): --ttl 30: a duration needs a unit"),
            "{}",
            e.message
        );
        let e = parse("[lock]\nprotocol = \"watchdog\"\nrenew-unchecked = \"yes\"\n").unwrap_err();
        assert!(
            e.message
                .contains("t.toml:3: [lock] renew-unchecked: expected true or false, found string"),
            "{}",
            e.message
        );
        let e = parse("protocol = \"watchdog\"\n").unwrap_err();
        assert!(
            e.message
                .contains("t.toml:1: `protocol` is outside any section; put it under [lock]"),
            "{}",
            e.message
        );
        let e = parse("[lok]\nprotocol = \"watchdog\"\n").unwrap_err();
        assert!(
            e.message
                .contains("t.toml:1: unknown section [lok]; did you mean [lock]?"),
            "{}",
            e.message
        );
        let e = parse("[lock]\nttl = \"30s\"\n").unwrap_err();
        assert!(e.message.contains("has no `protocol`"), "{}", e.message);
        let e = parse("[lock]\nprotocol = \"watchdog\"\nttl = \n").unwrap_err();
        assert!(
            e.message.starts_with("t.toml:3: not valid TOML"),
            "{}",
            e.message
        );
    }
}
