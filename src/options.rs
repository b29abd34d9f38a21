//! The options that describe one model (protocol, world, faults), shared by
//! every command that builds one, and their translation into a validated
//! `LockModel`.

use crate::util::{Failure, unknown};
use clap::{Args, ValueEnum};
use locklab_models::params::{
    CrashKind, Handoff, Network, PARAMS, Reenter, ResourceCheck, ResourceOp, TokenRule,
    TokenSource, TokenStore,
};
use locklab_models::presets::{
    ClientPreset, Decide, LockShape, LockValue, Release, RenewalOnError, Requests, UnlockOnFailure,
};
use locklab_models::time::Micros;
use locklab_models::{FaultKind, LockModel, Params, protocols, units};

/// How the resource checks fencing tokens (article §7.4 "资源端怎么校验").
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CheckOpt {
    /// The resource ignores tokens
    None,
    /// Writes carry the token, checked and applied in one atomic step (§7.1 "客户端向资源写入时必须携带令牌")
    Write,
    /// Reads and writes carry the token; both checked, both raise the mark (= write --fence-reads)
    ReadWrite,
    /// §7.4 1.1 "令牌列加条件更新": UPDATE ... SET ..., fencing_token = :token WHERE fencing_token < :token (atomic)
    UpdateWhere,
    /// §7.4 1.2 "事务内先检旗后写入" with SELECT ... FOR UPDATE (or serializable): check and write atomic
    TxnForUpdate,
    /// §7.4 1.2 under read-committed, no row lock: check, then write, two steps; another write can land between
    TxnReadCommitted,
    /// §7.4 2 "支持条件写的存储": compare-and-set with the token as the version (put if version < token)
    Cas,
    /// §7.4 3 "自研服务类资源": your own service keeps the highest token per resource (see --token-store)
    Service,
}

/// What the critical section does to the resource.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OpOpt {
    /// The client reads, computes and writes back `read + 1`
    Rmw,
    /// The resource applies the change itself (`stock = stock - 1`)
    InPlace,
    /// The client reads the stock, decides "if stock > 0" itself, then has the resource take one unit
    CheckThenAct,
    /// The resource's own conditional update: UPDATE ... SET stock = stock - 1 WHERE stock > 0 (§9.3)
    Conditional,
}

/// Where the resource keeps its highest token.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum StoreOpt {
    /// Persisted: survives a restart ("重启后从持久层恢复", §7.4 3)
    Durable,
    /// In memory only: a resource-restart fault forgets it (and is then switched on by default)
    Memory,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum NetworkOpt {
    Fifo,
    Unordered,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ElapsedOpt {
    Wall,
    Monotonic,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RuleOpt {
    Ge,
    Gt,
}

/// One model: a protocol, its parameters, and the faults to explore.
/// Durations take units (`30s`, `200ms`, `0.2ms`, `150us`), exactly, to the µs.
#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Protocol to model (`locklab list` shows them all; `check all` runs every one)
    #[arg(value_name = "PROTOCOL")]
    pub protocol: String,

    /// Number of clients competing for the lock [default: 2]
    #[arg(long, value_name = "N", help_heading = "World")]
    pub clients: Option<u8>,
    /// Acquisitions each client makes [default: 1]
    #[arg(long, value_name = "N", help_heading = "World")]
    pub acquisitions: Option<u8>,
    /// Fault kinds to explore, comma-separated, or `none` or `all`
    /// [default: every kind the protocol's lock service can suffer; a `check`
    /// that names one invariant takes the article's scenario for it, if it tells one]
    #[arg(long, value_name = "KINDS", help_heading = "Faults")]
    pub faults: Option<String>,
    /// At most N faults in one execution, whatever their kinds, or `all` for
    /// no cap beyond the per-kind budgets [default: 2]
    #[arg(long, value_name = "N|all", help_heading = "Faults")]
    pub max_faults: Option<String>,
    /// How many times a fault kind may strike, e.g. `pause=2,loss=1` [default: 1 each]
    #[arg(
        long,
        value_name = "KIND=N",
        value_delimiter = ',',
        help_heading = "Faults"
    )]
    pub budget: Vec<String>,

    /// Lock TTL (Redis PX; watchdog timeout; session or lease TTL), e.g. 30s [default: 30s]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub ttl: Option<String>,
    /// Work inside the critical section, between read and write, as a range
    /// MIN..MAX or one duration; beyond MAX is a `slow` fault [default: 200ms..2s]
    #[arg(
        long,
        value_name = "RANGE",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub work: Option<String>,
    /// One-way message latency (and the replication link's), MIN..MAX or one
    /// duration; beyond MAX is a `delay` fault [default: 0.2ms..5ms]
    #[arg(
        long,
        value_name = "RANGE",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub latency: Option<String>,
    /// Longest a client takes for one step (handle a reply, decide, send) [default: 1ms]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub step: Option<String>,
    /// Client request timeout [default: 1s]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub timeout: Option<String>,
    /// Least backoff before retrying a failed acquisition [default: 50ms]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub retry: Option<String>,
    /// Longest backoff before retrying: a client retries within this long of a
    /// failure (real clients do: redsync, node-redlock, Redisson) [default: no
    /// bound, it may wait as long as it likes]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub retry_max: Option<String>,
    /// Longest pause a `pause` fault causes [default: no bound]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub pause_max: Option<String>,
    /// How much longer than the longest latency a `delay` fault can hold a
    /// message [default: no bound]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub delay_max: Option<String>,
    /// Size of a clock jump [default: the TTL]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub jump: Option<String>,
    /// Clock-rate drift bound: every node's clock may run fast or slow by up
    /// to this many parts per million, e.g. 100ppm (quartz: 10-100 ppm), so
    /// the TTLs and timers it measures stand for a band of real time
    /// [default: 0, clocks keep real time between jumps]
    #[arg(
        long,
        value_name = "PPM",
        help_heading = "Timing (with units: us, ms, s, m, h)"
    )]
    pub clock_drift: Option<String>,
    /// How the network orders messages: `fifo` = one ordered TCP connection
    /// per client, server and channel, and a new connection after a timeout
    /// (what was sent on the old one may still arrive, in its own order);
    /// `unordered` = any message may overtake any other [default: fifo]
    #[arg(long, value_enum, value_name = "SEMANTICS", help_heading = "World")]
    pub network: Option<NetworkOpt>,

    /// Watchdog renewals / session heartbeats: time between them, e.g. 10s
    /// [default: TTL/3; with --client python-redis-lock, 2/3 of the TTL]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Protocol knobs"
    )]
    pub renew_every: Option<String>,
    /// Watchdog: stop renewing after renewing this long, e.g. 60s [default: never]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Protocol knobs"
    )]
    pub renew_cap: Option<String>,
    /// Watchdog bug: renew with a plain PEXPIRE, no ownership check
    #[arg(long, help_heading = "Protocol knobs")]
    pub renew_unchecked: bool,
    /// Watchdog bug: never cancel the renewal (survives release and crash)
    #[arg(long, help_heading = "Protocol knobs")]
    pub no_cancel: bool,
    /// Redlock: number of independent instances [default: 5]
    #[arg(long, value_name = "N", help_heading = "Protocol knobs")]
    pub instances: Option<u8>,
    /// Redlock: votes needed [default: N/2+1]
    #[arg(long, value_name = "N", help_heading = "Protocol knobs")]
    pub quorum: Option<u8>,
    /// Redlock: clock-drift factor; the allowance is int(TTL_ms x factor) + 2 ms,
    /// as redlock-py and redlock-rb compute it [default: 0.01, i.e. 302 ms at a 30s TTL]
    #[arg(long, value_name = "FACTOR", help_heading = "Protocol knobs")]
    pub drift_factor: Option<String>,
    /// Redlock: the clock the client measures an attempt's elapsed time with:
    /// `wall` (redlock-py, node-redlock: moved by the client's clock jumps) or
    /// `monotonic` (redsync, redlock-rb: no jump moves it) [default: wall]
    #[arg(
        long,
        value_enum,
        value_name = "CLOCK",
        help_heading = "Protocol knobs"
    )]
    pub elapsed_clock: Option<ElapsedOpt>,
    /// The client library to model, as a preset of the behaviours below
    /// (each can still be set on its own). Redlock: page (the redis.io
    /// algorithm, the default), redsync, redlock-py, node-redlock,
    /// node-redlock@4, redlock-rb, redlock-rs, redlock-ng, pottery, redisson
    /// (RedissonRedLock). watchdog, replicated: redisson (RLock, 3.44+),
    /// redisson@3.43, python-redis-lock; fencing-redis: the two redisson.
    /// lua-release: redis-py-lock, python-redis-lock. `locklab list`
    /// shows what each sets; docs/clients.md the sources
    #[arg(long, value_name = "LIBRARY", value_parser = names(ClientPreset::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub client: Option<String>,
    /// The lock value: per-call (one per lock() call, reused by its
    /// retries), per-attempt (a new one every try) or per-thread (one for
    /// every acquisition, as Redisson's UUID:threadId) [default: per-call]
    #[arg(long, value_name = "SCOPE", value_parser = names(LockValue::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub value: Option<String>,
    /// What the lock key holds: string (SET NX, compare-and-delete) or hash
    /// (Redisson's reentrant hash: the same value re-acquires and counts one
    /// more hold, an unlock counts one less and deletes at zero) [default: string]
    #[arg(long, value_name = "SHAPE", value_parser = names(LockShape::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub lock_shape: Option<String>,
    /// Watchdog family: after each lock script, WAIT for this many replicas
    /// before trusting the answer, as Redisson does (0 or 1: the model has one
    /// replica) [default: 0]
    #[arg(long, value_name = "N", help_heading = "Client")]
    pub wait_replicas: Option<u8>,
    /// Watchdog family: a renewal that fails with an error (timeout, reset
    /// connection) is retried at the next period (retry: Redisson 3.44+) or
    /// stops the watchdog for good, silently (stop: Redisson up to 3.43)
    /// [default: retry]
    #[arg(long, value_name = "HOW", value_parser = names(RenewalOnError::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub renewal_on_error: Option<String>,
    /// Redis protocols: the transport re-sends a request that timed out, the
    /// same command on a new connection, up to N times (0 to 10), each with
    /// a fresh request timeout, before the library sees the failure; the copy
    /// that timed out stays in flight and may still run. redis-py 8.1
    /// re-sends 10 times, redis-py 5.x not at all [default: the preset's,
    /// else 0]
    #[arg(long, value_name = "N", help_heading = "Client")]
    pub transport_retries: Option<u8>,
    /// ZooKeeper: the fencing token is the node's creation zxid (czxid) or
    /// its sequence suffix (sequence), which starts over when the empty
    /// container parent is reaped [default: czxid]
    #[arg(long, value_name = "SOURCE", value_parser = names(TokenSource::ALL.iter().map(|p| p.name())), help_heading = "Resource")]
    pub token: Option<String>,
    /// The critical section's write (article §4.4): none (the holder writes,
    /// then releases), async (handed to a task that writes after the
    /// release, outside the lock), transfer (the task takes the lock and its
    /// credential, writes, then releases) [default: none]
    #[arg(long, value_name = "HOW", value_parser = names(Handoff::ALL.iter().map(|p| p.name())), help_heading = "Resource")]
    pub handoff: Option<String>,
    /// Redisson's hash lock (watchdog, replicated): the holder calls lock()
    /// again from the same thread inside its critical section, then
    /// unlock() twice (balanced) or once (unbalanced: the inner unlock is
    /// skipped, and Redisson's watchdog, which counts lock() calls, keeps
    /// renewing) [default: none]
    #[arg(long, value_name = "HOW", value_parser = names(Reenter::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub reenter: Option<String>,
    /// What the crash fault kills: the whole process (process), or the
    /// business thread alone without its `finally`, while its watchdog or
    /// session heartbeat lives on in the same process (thread)
    /// [default: process]
    #[arg(long, value_name = "KIND", value_parser = names(CrashKind::ALL.iter().map(|p| p.name())), help_heading = "Faults")]
    pub crash: Option<String>,
    /// Redlock: after a failed attempt, unlock every instance and wait for the
    /// answers (await), without waiting (fire-and-forget), or not at all
    /// (none) [default: fire-and-forget]
    #[arg(long, value_name = "HOW", value_parser = names(UnlockOnFailure::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub unlock_on_failure: Option<String>,
    /// Redlock: the release waits for every instance's answer (await) or
    /// not (fire-and-forget) [default: fire-and-forget]
    #[arg(long, value_name = "HOW", value_parser = names(Release::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub release: Option<String>,
    /// Redlock: ask every instance at once (concurrent) or one after another,
    /// each with its own timeout (sequential) [default: concurrent]
    #[arg(long, value_name = "HOW", value_parser = names(Requests::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub requests: Option<String>,
    /// Redlock: decide an attempt once every instance answered or timed out
    /// (all-replies), as soon as a quorum said yes or a quorum said no
    /// (first-quorum), or as soon as a quorum said yes, else once all
    /// answered (first-yes-quorum) [default: all-replies]
    #[arg(long, value_name = "WHEN", value_parser = names(Decide::ALL.iter().map(|p| p.name())), help_heading = "Client")]
    pub decide: Option<String>,
    /// Redlock: check validity = TTL - elapsed - drift > 0 when the votes are
    /// in and again before writing (on), or trust a quorum (off) [default: on]
    #[arg(long, value_name = "ON|OFF", value_parser = names(["on", "off"]), help_heading = "Client")]
    pub validity_check: Option<String>,
    /// A restarted Redis stays unavailable for the TTL and one more second before serving
    #[arg(long, help_heading = "Protocol knobs")]
    pub delayed_restart: bool,
    /// How the resource checks fencing tokens, by the article's §7.4 forms
    /// [default: write for fencing and fencing-redis, none otherwise]
    #[arg(long, value_enum, help_heading = "Resource")]
    pub resource_check: Option<CheckOpt>,
    /// How the resource compares tokens: ge (token >= max) or gt (token > max).
    /// The article's SQL `WHERE fencing_token < :token` means strictly greater
    /// wins: gt [default: gt for the §7.4 forms (update-where, txn-*, cas,
    /// service) unless reads are fenced; ge for write and read-write]
    #[arg(long, value_enum, help_heading = "Resource")]
    pub token_rule: Option<RuleOpt>,
    /// What the critical section does to the resource [default: rmw]
    #[arg(long, value_enum, value_name = "OP", help_heading = "Resource")]
    pub resource_op: Option<OpOpt>,
    /// Units in stock at the start, for --resource-op check-then-act or conditional [default: 1]
    #[arg(long, value_name = "N", help_heading = "Resource")]
    pub stock: Option<u8>,
    /// Reads carry the token too and are checked by the same form
    #[arg(long, help_heading = "Resource")]
    pub fence_reads: bool,
    /// Where the resource keeps its highest token [default: durable]
    #[arg(long, value_enum, value_name = "WHERE", help_heading = "Resource")]
    pub token_store: Option<StoreOpt>,
    /// Writers that bypass the lock and the fence: a batch job or an old
    /// client version that writes without a token ("绕过校验的旁路写入",
    /// §7.4 3) [default: 0]
    #[arg(long, value_name = "N", help_heading = "Resource")]
    pub unfenced_writers: Option<u8>,
    /// Idempotent writes (§7.5 "幂等设计"): the resource keeps a unique key on
    /// each write's operation id and absorbs a write it has already applied;
    /// switches on the `duplicate` fault unless --faults says otherwise
    #[arg(long, help_heading = "Resource")]
    pub idempotent: bool,
    /// Reconciliation after the fact (§7.5 "对账"): a reconciler compares the
    /// resource with the business ledger every EVERY (e.g. 10s) and flags a
    /// lost update, an oversell or a duplicate effect. It detects, it does
    /// not prevent; `detected_within` judges how soon [default: none]
    #[arg(
        long,
        value_name = "EVERY",
        allow_hyphen_values = true,
        help_heading = "Resource"
    )]
    pub reconcile: Option<String>,
    /// The bound `detected_within` holds the reconciler to: the damage must
    /// be flagged within it [default: one --reconcile period + --step]
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Resource"
    )]
    pub detect_within: Option<String>,
    /// etcd 3.4: after waiting, return the lock without re-checking the own key
    #[arg(long, help_heading = "Protocol knobs")]
    pub no_recheck: bool,
}

/// A clap parser that takes exactly these names (so `--help` lists them and
/// clap suggests the nearest on a typo).
fn names(list: impl IntoIterator<Item = &'static str>) -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(list)
}

/// `--faults ""`: an empty list is a mistake, not a way to say "none".
pub fn empty_faults() -> Failure {
    Failure::input(format!(
        "--faults is empty; say --faults none for no faults, or name kinds: {}, all",
        fault_names().join(", ")
    ))
}

/// The forms a duration option accepts, for error messages.
const DURATION_FORMS: &str =
    "a number with a unit: us, ms, s, m or h (for example 30s, 200ms, 0.2ms, 150us)";

/// `--NAME TEXT` as one duration in µs.
pub fn duration(name: &str, text: &str) -> Result<Micros, Failure> {
    units::parse(text).map_err(|e| unit_error(name, text, &e, DURATION_FORMS))
}

/// The error for a duration option that did not parse. A bare number is
/// what the old 5-second-tick options took: say to add a unit.
fn unit_error(name: &str, text: &str, e: &str, forms: &str) -> Failure {
    let bare = |t: &str| {
        let t = t.trim();
        !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.')
    };
    if text.trim_start().starts_with('-') || text.contains("..-") {
        Failure::input(format!(
            "--{name} {text}: a duration cannot be negative; expected {forms}"
        ))
    } else if text.split("..").any(bare) {
        Failure::input(format!(
            "--{name} {text}: a duration needs a unit (times are exact now, no longer 5-second ticks); expected {forms}"
        ))
    } else {
        Failure::input(format!("--{name} {text}: {e}; expected {forms}"))
    }
}

/// `--NAME TEXT` as a range `MIN..MAX` (or one duration, meaning `D..D`).
pub fn range(name: &str, text: &str) -> Result<(Micros, Micros), Failure> {
    units::parse_range(text).map_err(|e| {
        unit_error(
            name,
            text,
            &e,
            &format!("MIN..MAX or one duration, each {DURATION_FORMS}"),
        )
    })
}

/// `--clock-drift 100ppm` (or `100`) as parts per million.
pub fn clock_drift(text: &str) -> Result<u32, Failure> {
    let t = text.trim();
    let digits = t.strip_suffix("ppm").unwrap_or(t).trim();
    match digits.parse::<u32>() {
        Ok(v) if v <= locklab_models::params::MAX_CLOCK_DRIFT_PPM => Ok(v),
        _ => Err(Failure::input(format!(
            "--clock-drift {text}: expected a whole number of parts per million from 0 to {} (10 %), optionally followed by ppm, for example 100ppm",
            locklab_models::params::MAX_CLOCK_DRIFT_PPM
        ))),
    }
}

/// `--drift-factor 0.01` as parts per million, exactly (at most 6 decimals, 0..=1).
pub fn drift_factor(text: &str) -> Result<u32, Failure> {
    let bad = |why: &str| {
        Failure::input(format!(
            "--drift-factor {text}: {why}; expected a plain decimal between 0 and 1 with at most 6 decimals (for example 0.01, the reference clients' value)"
        ))
    };
    let t = text.trim();
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return Err(bad("not a number"));
    }
    if frac.len() > 6 {
        return Err(bad("finer than one part per million"));
    }
    let whole: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad("not a number"))?
    };
    let frac_ppm: u64 = format!("{frac:0<6}")
        .parse()
        .map_err(|_| bad("not a number"))?;
    let ppm = whole.saturating_mul(1_000_000).saturating_add(frac_ppm);
    if ppm > 1_000_000 {
        return Err(bad("out of range"));
    }
    Ok(ppm as u32)
}

/// The option that sets model parameter `name` (`drift-factor-ppm` is set
/// by `--drift-factor`; `work-min`, `work-max` by `--work`, ...).
pub fn cli_name(name: &str) -> &str {
    match name {
        "drift-factor-ppm" => "drift-factor",
        "clock-drift-ppm" => "clock-drift",
        "work-min" | "work-max" => "work",
        "latency-min" | "latency-max" => "latency",
        other => other,
    }
}

/// A model error message with its parameter names as the CLI spells them.
pub fn cli_names(message: &str) -> String {
    message
        .replace("--work-min ", "--work (its minimum) ")
        .replace("--work-max ", "--work (its maximum) ")
        .replace("--latency-min ", "--latency (its minimum) ")
        .replace("--latency-max ", "--latency (its maximum) ")
        .replace(
            "--drift-factor-ppm ",
            "--drift-factor (in parts per million) ",
        )
}

fn fault_names() -> Vec<&'static str> {
    FaultKind::ALL.iter().map(|k| k.name()).collect()
}

impl ModelArgs {
    /// Options the user set, by CLI name.
    fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut add = |set: bool, name: &'static str| {
            if set {
                v.push(name);
            }
        };
        add(self.renew_every.is_some(), "renew-every");
        add(self.renew_cap.is_some(), "renew-cap");
        add(self.renew_unchecked, "renew-unchecked");
        add(self.no_cancel, "no-cancel");
        add(self.instances.is_some(), "instances");
        add(self.quorum.is_some(), "quorum");
        add(self.drift_factor.is_some(), "drift-factor-ppm");
        add(self.clock_drift.is_some(), "clock-drift-ppm");
        add(self.elapsed_clock.is_some(), "elapsed-clock");
        add(self.client.is_some(), "client");
        add(self.value.is_some(), "value");
        add(self.lock_shape.is_some(), "lock-shape");
        add(self.wait_replicas.is_some(), "wait-replicas");
        add(self.renewal_on_error.is_some(), "renewal-on-error");
        add(self.transport_retries.is_some(), "transport-retries");
        add(self.crash.is_some(), "crash");
        add(self.handoff.is_some(), "handoff");
        add(self.reenter.is_some(), "reenter");
        add(self.token.is_some(), "token");
        add(self.unlock_on_failure.is_some(), "unlock-on-failure");
        add(self.release.is_some(), "release");
        add(self.requests.is_some(), "requests");
        add(self.decide.is_some(), "decide");
        add(self.validity_check.is_some(), "validity-check");
        add(self.delayed_restart, "delayed-restart");
        add(self.resource_check.is_some(), "resource-check");
        add(self.token_rule.is_some(), "token-rule");
        add(self.no_recheck, "no-recheck");
        add(self.resource_op.is_some(), "resource-op");
        add(self.stock.is_some(), "stock");
        add(self.fence_reads, "fence-reads");
        add(self.token_store.is_some(), "token-store");
        add(self.unfenced_writers.is_some(), "unfenced-writers");
        add(self.idempotent, "idempotent");
        add(self.reconcile.is_some(), "reconcile");
        add(self.detect_within.is_some(), "detect-within");
        v
    }

    /// World options the user set (who runs, which faults strike), by CLI
    /// name: `trace against` keeps the trace's world and refuses these.
    pub fn world_given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (set, name) in [
            (self.clients.is_some(), "clients"),
            (self.acquisitions.is_some(), "acquisitions"),
            (self.faults.is_some(), "faults"),
            (self.max_faults.is_some(), "max-faults"),
            (!self.budget.is_empty(), "budget"),
        ] {
            if set {
                v.push(name);
            }
        }
        v
    }

    /// Builds and validates the model these options describe.
    pub fn build(&self) -> Result<LockModel, Failure> {
        let proto = self.proto()?;
        let mut p = Params::defaults(proto);
        self.overlay(proto, &mut p)?;
        p.validate_for_search()
            .map_err(|e| Failure::input(cli_names(&e.0)))?;
        LockModel::new(proto, p).map_err(|e| Failure::input(cli_names(&e.0)))
    }

    /// The protocol these options name.
    pub fn proto(&self) -> Result<&'static dyn locklab_models::Protocol, Failure> {
        protocols::by_name(&self.protocol)
            .ok_or_else(|| unknown("protocol", &self.protocol, &protocols::names()))
    }

    /// Applies the options the user set, and only those, to `p`.
    pub fn overlay(
        &self,
        proto: &dyn locklab_models::Protocol,
        p: &mut Params,
    ) -> Result<(), Failure> {
        for name in self.given() {
            let info = PARAMS
                .iter()
                .find(|p| p.name == name)
                .expect("every option is listed");
            if let Some(only) = info.only
                && !only.contains(&proto.name())
            {
                let name = cli_name(name);
                return Err(Failure::input(format!(
                    "--{name} does not apply to {}: it is an option of {}",
                    proto.name(),
                    only.join(", ")
                )));
            }
        }
        if let Some(v) = self.clients {
            p.clients = v;
        }
        if let Some(v) = self.acquisitions {
            p.acquisitions = v;
        }
        if let Some(t) = &self.ttl {
            // Durations derived from the TTL follow it unless set explicitly.
            let v = duration("ttl", t)?;
            p.ttl = v;
            p.jump = v;
            p.renew_every = v / 3;
        }
        if let Some(t) = &self.work {
            (p.work_min, p.work_max) = range("work", t)?;
        }
        if let Some(t) = &self.latency {
            (p.latency_min, p.latency_max) = range("latency", t)?;
        }
        for (name, opt, field) in [
            ("step", &self.step, &mut p.step),
            ("timeout", &self.timeout, &mut p.timeout),
            ("retry", &self.retry, &mut p.retry),
            ("jump", &self.jump, &mut p.jump),
            ("renew-every", &self.renew_every, &mut p.renew_every),
        ] {
            if let Some(t) = opt {
                *field = duration(name, t)?;
            }
        }
        for (name, opt, field) in [
            ("retry-max", &self.retry_max, &mut p.retry_max),
            ("pause-max", &self.pause_max, &mut p.pause_max),
            ("delay-max", &self.delay_max, &mut p.delay_max),
            ("renew-cap", &self.renew_cap, &mut p.renew_cap),
        ] {
            if let Some(t) = opt {
                *field = Some(duration(name, t)?);
            }
        }
        if let Some(t) = &self.drift_factor {
            p.drift_factor_ppm = drift_factor(t)?;
        }
        if let Some(t) = &self.clock_drift {
            p.clock_drift_ppm = clock_drift(t)?;
        }
        p.renew_unchecked |= self.renew_unchecked;
        p.no_cancel |= self.no_cancel;
        p.delayed_restart |= self.delayed_restart;
        p.no_recheck |= self.no_recheck;
        if let Some(n) = self.instances {
            p.instances = n;
            p.quorum = n / 2 + 1;
        }
        if let Some(q) = self.quorum {
            p.quorum = q;
        }
        if let Some(c) = self.resource_check {
            p.resource_check = match c {
                CheckOpt::None => ResourceCheck::None,
                CheckOpt::Write => ResourceCheck::Write,
                CheckOpt::ReadWrite => ResourceCheck::ReadWrite,
                CheckOpt::UpdateWhere => ResourceCheck::UpdateWhere,
                CheckOpt::TxnForUpdate => ResourceCheck::TxnForUpdate,
                CheckOpt::TxnReadCommitted => ResourceCheck::TxnReadCommitted,
                CheckOpt::Cas => ResourceCheck::Cas,
                CheckOpt::Service => ResourceCheck::Service,
            };
        }
        p.fence_reads |= self.fence_reads;
        p.token_rule = p.resource_check.default_rule(p.fence_reads);
        if let Some(o) = self.resource_op {
            p.resource_op = match o {
                OpOpt::Rmw => ResourceOp::Rmw,
                OpOpt::InPlace => ResourceOp::InPlace,
                OpOpt::CheckThenAct => ResourceOp::CheckThenAct,
                OpOpt::Conditional => ResourceOp::Conditional,
            };
        }
        if let Some(n) = self.stock {
            p.stock = n;
        }
        if let Some(s) = self.token_store {
            p.token_store = match s {
                StoreOpt::Durable => TokenStore::Durable,
                StoreOpt::Memory => TokenStore::Memory,
            };
        }
        if let Some(n) = self.unfenced_writers {
            p.unfenced_writers = n;
        }
        p.idempotent |= self.idempotent;
        if let Some(t) = &self.reconcile {
            p.reconcile = Some(duration("reconcile", t)?);
        }
        if let Some(t) = &self.detect_within {
            p.detect_within = Some(duration("detect-within", t)?);
        }
        if let Some(r) = self.token_rule {
            p.token_rule = match r {
                RuleOpt::Ge => TokenRule::Ge,
                RuleOpt::Gt => TokenRule::Gt,
            };
        }
        self.overlay_client(p, proto.name());
        if let Some(e) = self.elapsed_clock {
            p.elapsed_clock = match e {
                ElapsedOpt::Wall => locklab_models::params::ElapsedClock::Wall,
                ElapsedOpt::Monotonic => locklab_models::params::ElapsedClock::Monotonic,
            };
        }
        if let Some(n) = self.network {
            p.network = match n {
                NetworkOpt::Fifo => Network::Fifo,
                NetworkOpt::Unordered => Network::Unordered,
            };
        }
        self.apply_faults(proto, p)?;
        if let Some(v) = &self.max_faults {
            p.max_faults = match v.trim() {
                "all" => None,
                n => Some(n.parse::<u8>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    Failure::input(format!(
                        "--max-faults {v:?}: expected a number of faults (at least 1) or 'all'"
                    ))
                })?),
            };
        }
        Ok(())
    }

    /// The client: a preset first, then each behaviour set on its own.
    /// (Every name was checked by clap.)
    fn overlay_client(&self, p: &mut Params, protocol: &str) {
        fn pick<T: Copy>(v: &Option<String>, from: fn(&str) -> Option<T>, field: &mut T) {
            if let Some(t) = v.as_deref().and_then(from) {
                *field = t;
            }
        }
        if let Some(preset) = self.client.as_deref().and_then(ClientPreset::from_name) {
            // A preset may set the renewal period; `--renew-every` wins.
            let renew_every = p.renew_every;
            preset.apply(p, protocol);
            if self.renew_every.is_some() {
                p.renew_every = renew_every;
            }
        }
        pick(&self.value, LockValue::from_name, &mut p.value);
        pick(&self.lock_shape, LockShape::from_name, &mut p.lock_shape);
        pick(
            &self.renewal_on_error,
            RenewalOnError::from_name,
            &mut p.renewal_on_error,
        );
        if let Some(n) = self.wait_replicas {
            p.wait_replicas = n;
        }
        if let Some(n) = self.transport_retries {
            p.transport_retries = n;
        }
        pick(&self.crash, CrashKind::from_name, &mut p.crash);
        pick(&self.handoff, Handoff::from_name, &mut p.handoff);
        pick(&self.reenter, Reenter::from_name, &mut p.reenter);
        pick(&self.token, TokenSource::from_name, &mut p.token);
        pick(
            &self.unlock_on_failure,
            UnlockOnFailure::from_name,
            &mut p.unlock_on_failure,
        );
        pick(&self.release, Release::from_name, &mut p.release);
        pick(&self.requests, Requests::from_name, &mut p.requests);
        pick(&self.decide, Decide::from_name, &mut p.decide);
        if let Some(v) = &self.validity_check {
            p.validity_check = v == "on";
        }
    }

    fn apply_faults(
        &self,
        proto: &dyn locklab_models::Protocol,
        p: &mut Params,
    ) -> Result<(), Failure> {
        let names = fault_names();
        if let Some(list) = &self.faults {
            let list = list.trim();
            let kinds: Vec<FaultKind> = match list {
                "all" => {
                    let mut v = proto.faults().to_vec();
                    if p.token_store == TokenStore::Memory {
                        v.push(FaultKind::ResourceRestart);
                    }
                    if p.idempotent {
                        v.push(FaultKind::Duplicate);
                    }
                    v
                }
                "none" => Vec::new(),
                "" => return Err(empty_faults()),
                _ => list
                    .split(',')
                    .map(|s| s.trim())
                    .map(|s| {
                        FaultKind::from_name(s).ok_or_else(|| {
                            let mut known = names.clone();
                            known.extend(["none", "all"]);
                            Failure::input(format!(
                                "--faults: {}",
                                unknown("fault kind", s, &known).message
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            };
            p.faults = locklab_models::Budgets::none();
            for k in kinds {
                p.faults.set(k, 1);
            }
        } else {
            // A token kept in memory is what a resource restart can lose:
            // that fault is then one the resource can suffer. Idempotency is
            // there for duplicate deliveries: they are then switched on.
            if p.token_store == TokenStore::Memory {
                p.faults.set(FaultKind::ResourceRestart, 1);
            }
            if p.idempotent {
                p.faults.set(FaultKind::Duplicate, 1);
            }
        }
        for item in &self.budget {
            let (k, n) = item.split_once('=').ok_or_else(|| {
                Failure::input(format!(
                    "--budget {item:?} is not KIND=N (for example --budget pause=2)"
                ))
            })?;
            let kind = FaultKind::from_name(k.trim())
                .ok_or_else(|| unknown("fault kind", k.trim(), &names))?;
            let n: u8 = n.trim().parse().map_err(|_| {
                Failure::input(format!(
                    "--budget {item:?}: {:?} is not a number (allowed 0..={})",
                    n.trim(),
                    locklab_models::params::MAX_BUDGET
                ))
            })?;
            if p.faults.get(kind) == 0 && n > 0 {
                let on: Vec<&str> = p.faults.enabled().iter().map(|k| k.name()).collect();
                return Err(Failure::input(format!(
                    "--budget {item}: fault '{}' is not switched on (faults on: {}); add it to --faults",
                    kind.name(),
                    if on.is_empty() {
                        "none".to_string()
                    } else {
                        on.join(", ")
                    }
                )));
            }
            p.faults.set(kind, n);
        }
        Ok(())
    }
}
