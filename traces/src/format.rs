//! The trace file format (schema version 2: exact real-valued time).
//!
//! A trace is everything a reader needs to understand a counterexample and
//! everything a replayer needs to reproduce it: the full configuration, the
//! machine-readable action of every step (which `locklab` replays through the
//! model before it trusts the file), a human label, the structured events the
//! step caused, and a readable snapshot of the world after the step.
//!
//! The renderers in this crate read only this format; they never need the
//! model. The model crate produces it and validates it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema version this build writes and the only one it reads.
/// Version 1 counted time in 5-second ticks; version 2 gives every step
/// its exact time.
pub const SCHEMA_VERSION: u32 = 2;

/// One counterexample (or one simulated run that ended in a violation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trace {
    pub schema_version: u32,
    /// Always `"trace"`; tells a trace file from a check report.
    pub kind: String,
    /// `locklab <version>` that wrote the file.
    pub tool: String,
    /// `"check"` (exhaustive search) or `"simulate"` (seeded random run).
    pub engine: String,
    /// The simulation seed, if the trace came from a simulation.
    pub seed: Option<u64>,
    pub config: Config,
    /// The lanes a diagram draws, in display order.
    pub participants: Vec<Participant>,
    /// The invariant this trace violates.
    pub invariant: String,
    /// The invariant's one-line meaning, for readers of the file.
    pub invariant_meaning: String,
    /// Index (1-based) of the step after which the invariant is first violated.
    pub violation_step: usize,
    /// What went wrong, in one sentence.
    pub violation: String,
    /// Fault kinds the trace uses, sorted.
    pub faults_used: Vec<String>,
    /// The world before the first step.
    pub initial: StateView,
    pub steps: Vec<Step>,
}

/// The configuration a trace (or a whole check) ran with. `params` holds
/// every protocol and world parameter by its CLI name, so a trace can be
/// replayed without any default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Config {
    pub protocol: String,
    pub clients: u32,
    pub acquisitions: u32,
    /// Fault kind -> budget (how many times it may happen). Absent = off.
    pub faults: BTreeMap<String, u32>,
    /// Every model parameter by name.
    pub params: BTreeMap<String, serde_json::Value>,
    /// How time is represented (for readers only).
    pub time: String,
}

/// A lane in a diagram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Participant {
    /// Short id used by events and views: `c1`, `redis`, `redis3`, `resource`.
    pub id: String,
    /// `client`, `redis`, `service` or `resource`.
    pub kind: String,
    /// Longer label for legends.
    pub label: String,
}

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// 1-based position in the trace.
    pub index: usize,
    /// True (global) time of the step, in milliseconds (for drawing).
    pub time: f64,
    /// The same time, exact: microseconds as `"n"` or `"n/d"`. Validation
    /// replays the step at this time and re-checks every bound with it.
    pub at_us: String,
    /// Who acted: a participant id, or `env` for faults, `clock` for time.
    pub actor: String,
    /// The model's action, machine-readable; replayed by `locklab`.
    pub action: serde_json::Value,
    /// The action in words.
    pub label: String,
    /// The message this step delivered, dropped or delayed, if any.
    pub message: Option<MessageView>,
    /// What the step caused, in order.
    pub events: Vec<Event>,
    /// The world after the step.
    pub state: StateView,
    /// Invariants violated in `state` (empty for all but the last steps).
    pub violations: Vec<String>,
    /// The answers the step's timing questions took, in the order asked,
    /// when clocks may drift in rate (`clock_drift_ppm` > 0): within a
    /// drift band either answer is possible, so the time alone does not
    /// tell which. Absent when clocks keep real time (the time tells).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<bool>,
}

/// Something that happened during a step. Renderers draw these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub kind: EventKind,
    /// The participant the event happened at (sender for `send`).
    pub at: String,
    /// The other participant (receiver for `send`, sender for `receive`).
    pub peer: Option<String>,
    /// A short description, e.g. `SET lock c1#1 NX PX 6`.
    pub text: String,
}

/// The kinds of events. Kept coarse on purpose: renderers pick markers by
/// kind and print `text`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A message leaves `at` for `peer`.
    Send,
    /// A message from `peer` is handled at `at`.
    Receive,
    /// A server executes a command (text = command and reply).
    Execute,
    /// A lock entry expires on a server.
    Expire,
    /// A client now believes it holds the lock.
    Acquire,
    /// A client gave up on this attempt (lock busy, timeout) and will retry.
    Retry,
    /// A client's request timed out.
    Timeout,
    /// The client reads the resource.
    Read,
    /// The resource accepts a write.
    Write,
    /// The resource rejects a stale operation.
    Reject,
    /// The client leaves the critical section / starts releasing.
    Release,
    /// The client finished its acquisitions.
    Done,
    /// A watchdog renewal happened or stopped.
    Renew,
    /// The replica applied a write from the primary.
    Replicate,
    /// Time advanced.
    Time,
    /// A fault was injected.
    Fault,
    /// Anything else worth a line.
    Note,
    /// A holder takes its reentrant lock once more from the same thread,
    /// or gives such a hold back (`--reenter`).
    Reenter,
}

/// A readable snapshot of the whole world.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StateView {
    /// True time in milliseconds.
    pub time: f64,
    pub clients: Vec<ClientView>,
    pub servers: Vec<ServerView>,
    pub resource: ResourceView,
    pub network: Vec<MessageView>,
    /// Remaining fault budgets, by kind.
    pub faults_left: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientView {
    pub id: String,
    /// Program phase in words: `idle`, `acquiring`, `in critical section`, ...
    pub phase: String,
    /// Whether the client believes it holds the lock (and is in its critical section).
    pub holds: bool,
    pub alive: bool,
    /// How long it has been paused, in ms, if paused.
    pub paused: Option<f64>,
    /// The lock value (ownership proof) of the current acquisition.
    pub value: Option<String>,
    /// Fencing token of the current hold.
    pub token: Option<u64>,
    /// Value read from the resource in this critical section.
    pub read: Option<u64>,
    /// Lease the client believes it has left, in ms by its own clock
    /// (Redlock validity), if it tracks one.
    pub believed_lease: Option<f64>,
    /// Offset of this client's wall clock from true time, in ms.
    pub clock_offset: f64,
    /// Watchdog state in words, if the client has one.
    pub watchdog: Option<String>,
    /// Acquisitions completed.
    pub acquisitions_done: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerView {
    pub id: String,
    /// `primary`, `replica`, `instance`, `leader`.
    pub role: String,
    /// `up`, `down (N s left)`, `dead`.
    pub status: String,
    /// Offset of this server's wall clock from true time, in ms.
    pub clock_offset: f64,
    pub entries: Vec<EntryView>,
    /// Writes accepted by this primary that its replica has not applied yet.
    pub unreplicated: Vec<String>,
    /// Watches set on a consensus service's entries (`c2 watches #3`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EntryView {
    pub key: String,
    pub value: String,
    /// The client the value belongs to, if any.
    pub owner: Option<String>,
    /// Milliseconds until expiry by this server's clock (negative: past
    /// it); `None` = no expiry.
    pub ttl: Option<f64>,
    /// Logically expired but still stored (replicas keep them until the primary's DEL).
    pub expired: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceView {
    /// The counter the clients increment by read-modify-write.
    pub value: u64,
    /// Writes the resource accepted.
    pub accepted_writes: u64,
    /// Highest fencing token seen, if the resource checks tokens.
    pub max_token: Option<u64>,
    /// Units left in stock (`check-then-act` only; below zero = oversold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessageView {
    pub from: String,
    pub to: String,
    pub text: String,
    /// Whether a delay fault holds the message back past the longest latency.
    pub held: bool,
    /// How long it has been in flight, in ms.
    pub age: f64,
}

/// The report `locklab check --json` writes: every verdict and every
/// counterexample of one check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckReport {
    pub schema_version: u32,
    /// Always `"check-report"`.
    pub kind: String,
    pub tool: String,
    pub config: Config,
    pub search: SearchSummary,
    pub verdicts: Vec<Verdict>,
    pub traces: Vec<Trace>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchSummary {
    /// `breadth-first`.
    pub strategy: String,
    pub symmetry: bool,
    pub states: u64,
    pub transitions: u64,
    pub max_depth: u64,
    /// True when every reachable state was explored.
    pub complete: bool,
    /// Why the search stopped early, when it did.
    pub bound_hit: Option<String>,
    pub seconds: f64,
    /// Worker threads that expanded the levels.
    #[serde(default)]
    pub threads: u64,
    /// Peak resident memory of the process, when the platform reports it.
    #[serde(default)]
    pub peak_memory_bytes: Option<u64>,
    /// The most writes the resource accepted in any state explored.
    #[serde(default)]
    pub max_accepted_writes: u64,
    /// Bytes of levels, parent links and passed zones the search wrote to disk
    /// (`check --memory-limit`); absent when it was not asked to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spilled_bytes: Option<u64>,
    /// The resident memory past which the search wrote to disk (`check
    /// --memory-limit`); absent when it was not asked to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    pub invariant: String,
    /// `belief`, `lock-service`, `resource` or `token`.
    pub category: String,
    /// `holds`, `violated`, `unknown` (search incomplete), `vacuous` (an
    /// exhaustive search found no violation, but the property was never
    /// put to the test: no client acquired, or fewer than two writes were
    /// accepted) or `n/a`.
    pub status: String,
    /// Steps in the shortest counterexample, when violated.
    pub steps: Option<usize>,
    /// Fault kinds the counterexample uses.
    pub faults_used: Vec<String>,
    /// The smallest sets of fault kinds (among those switched on) with
    /// which the invariant still breaks, each found by a search with only
    /// that set switched on. `None` when not analysed.
    pub minimal_fault_sets: Option<Vec<Vec<String>>>,
    /// True when every smaller set was searched exhaustively and shown not
    /// to break the invariant.
    pub fault_sets_proven_minimal: bool,
    /// True when every other set of the same size was searched
    /// exhaustively too, so that `minimal_fault_sets` names every smallest
    /// set. Absent in reports written before it existed, which set
    /// `fault_sets_proven_minimal` only when every set up to that size was
    /// decided: true.
    #[serde(default = "all_found_before")]
    pub fault_sets_all_found: bool,
    pub note: String,
}

fn all_found_before() -> bool {
    true
}

impl Verdict {
    /// What its smallest fault sets are not known to be, as a suffix for
    /// the list: nothing when they are proven smallest and complete.
    pub fn fault_sets_caveat(&self) -> &'static str {
        if !self.fault_sets_proven_minimal {
            " (minimality not proven)"
        } else if !self.fault_sets_all_found {
            " (other sets of this size not ruled out)"
        } else {
            ""
        }
    }
}

/// Either kind of file `locklab` writes and reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Document {
    Trace(Box<Trace>),
    Report(Box<CheckReport>),
}

/// Why a file could not be read as a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

impl Document {
    /// Parses a trace or a check report, checking the schema version first so
    /// that a file from another version gets a clear message rather than a
    /// field error.
    pub fn parse(text: &str) -> Result<Document, FormatError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| FormatError(format!("not a JSON document: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| FormatError("expected a JSON object at the top level".into()))?;
        match obj.get("schema_version") {
            Some(v) if v.as_u64() == Some(SCHEMA_VERSION as u64) => {}
            Some(v) if v.as_u64() == Some(1) => {
                return Err(FormatError(
                    "this file was written by an older locklab (schema_version 1, time in 5-second ticks); \
                     traces now carry exact times: regenerate it with the `locklab check` or \
                     `locklab simulate` command that made it"
                        .into(),
                ));
            }
            Some(v) => {
                return Err(FormatError(format!(
                    "unsupported schema_version {v}: this locklab reads schema_version {SCHEMA_VERSION}"
                )));
            }
            None => {
                return Err(FormatError(
                    "missing schema_version: not a locklab trace".into(),
                ));
            }
        }
        match obj.get("kind").and_then(|k| k.as_str()) {
            Some("trace") => serde_json::from_value(value)
                .map(|t| Document::Trace(Box::new(t)))
                .map_err(|e| FormatError(format!("malformed trace: {e}"))),
            Some("check-report") => serde_json::from_value(value)
                .map(|r| Document::Report(Box::new(r)))
                .map_err(|e| FormatError(format!("malformed check report: {e}"))),
            Some(k) => Err(FormatError(format!(
                "unknown kind {k:?}: expected \"trace\" or \"check-report\""
            ))),
            None => Err(FormatError(
                "missing kind: expected \"trace\" or \"check-report\"".into(),
            )),
        }
    }

    /// The traces the document holds.
    pub fn traces(&self) -> Vec<&Trace> {
        match self {
            Document::Trace(t) => vec![t],
            Document::Report(r) => r.traces.iter().collect(),
        }
    }
}

impl Trace {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a trace always serialises");
        s.push('\n');
        s
    }
}

impl CheckReport {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serialises");
        s.push('\n');
        s
    }
}
