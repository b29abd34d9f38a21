//! Every knob of the world and of the protocols, with realistic values as
//! defaults, and their validation.
//!
//! Durations are exact, in microseconds ([`Micros`]); the CLI takes them
//! with units (`30s`, `0.2ms`). Defaults (sources in docs/model.md,
//! "Normal timing"):
//!
//! * the article's 30 s lock TTL, Redisson's default watchdog timeout;
//! * LAN latency 0.2 ms .. 5 ms per message, a client step (handle a reply,
//!   decide, send) of at most 1 ms, work of 200 ms .. 2 s in the critical
//!   section — well below the TTL, so fault-free runs hold every invariant;
//! * a request timeout of 1 s and a retry backoff of at least 50 ms;
//! * Redlock's drift allowance computed as the reference clients compute
//!   it: `int(TTL_ms × 0.01) + 2` ms.

use crate::faults::{Budgets, FaultKind};
use crate::presets::{
    ClientPreset, Decide, LockShape, LockValue, Release, RenewalOnError, Requests, UnlockOnFailure,
};
use crate::time::{MS, Micros, SEC};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How time is represented, printed with every result.
pub const TIME_MEANING: &str =
    "exact real-valued time (zones over clocks; traces give times in ms with µs precision)";

/// Largest number of clients the model supports.
pub const MAX_CLIENTS: u8 = 6;
/// Largest number of Redlock instances the model supports.
pub const MAX_INSTANCES: u8 = 9;
/// Most re-sends of one request `--transport-retries` takes (redis-py 8.1's
/// default, `DEFAULT_RETRY_COUNT`).
pub const MAX_TRANSPORT_RETRIES: u8 = 10;
/// Largest clock-rate drift accepted, in ppm: 10 %, far past any quartz
/// (10–100 ppm) and past Redlock's default 1 % allowance.
pub const MAX_CLOCK_DRIFT_PPM: u32 = 100_000;
/// Largest value accepted for any duration: one day. Keeps every sum of
/// constants far inside the zone engine's range.
pub const MAX_DURATION: Micros = 86_400 * SEC;
/// Faults in one execution by default. Every fault kind is on, but an
/// execution may suffer at most this many of them: each extra fault
/// multiplies the state space roughly tenfold, and the known
/// counterexamples need one or two.
pub const DEFAULT_MAX_FAULTS: u8 = 2;
/// Largest number of acquisitions per client.
pub const MAX_ACQUISITIONS: u8 = 4;
/// Largest budget for one fault kind.
pub const MAX_BUDGET: u8 = 4;

/// Where and how the resource checks fencing tokens (article §7.4, "资源端怎么校验").
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceCheck {
    /// The resource ignores tokens.
    None,
    /// Writes carry the token and are rejected when it is stale; check and
    /// write are one atomic step.
    Write,
    /// Reads and writes carry the token; both are checked and both raise the high-water mark.
    ReadWrite,
    /// §7.4 1.1 "令牌列加条件更新": one conditional `UPDATE ... SET ...,
    /// fencing_token = :token WHERE fencing_token < :token`; check and write atomic.
    UpdateWhere,
    /// §7.4 1.2 "事务内先检旗后写入" under `SELECT ... FOR UPDATE` (or
    /// serializable): the row lock makes the check and the write atomic.
    TxnForUpdate,
    /// §7.4 1.2 under read-committed without a row lock: the check (a plain
    /// `SELECT fencing_token`) and the write (`UPDATE ..., fencing_token =
    /// :token; COMMIT`) are two resource steps; another write can land between.
    TxnReadCommitted,
    /// §7.4 2 "支持条件写的存储": a store's compare-and-set with the token as
    /// the version (`put if version < token`); atomic.
    Cas,
    /// §7.4 3 "自研服务类资源": your own service keeps the highest token per
    /// resource and updates it by compare-and-swap; where it keeps that
    /// token is `--token-store`.
    Service,
}

impl ResourceCheck {
    pub const ALL: [ResourceCheck; 8] = [
        ResourceCheck::None,
        ResourceCheck::Write,
        ResourceCheck::ReadWrite,
        ResourceCheck::UpdateWhere,
        ResourceCheck::TxnForUpdate,
        ResourceCheck::TxnReadCommitted,
        ResourceCheck::Cas,
        ResourceCheck::Service,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ResourceCheck::None => "none",
            ResourceCheck::Write => "write",
            ResourceCheck::ReadWrite => "read-write",
            ResourceCheck::UpdateWhere => "update-where",
            ResourceCheck::TxnForUpdate => "txn-for-update",
            ResourceCheck::TxnReadCommitted => "txn-read-committed",
            ResourceCheck::Cas => "cas",
            ResourceCheck::Service => "service",
        }
    }

    /// The article's words for the form, and what the model makes of it.
    pub fn meaning(self) -> &'static str {
        match self {
            ResourceCheck::None => "the resource ignores tokens",
            ResourceCheck::Write => {
                "writes carry the token, checked and applied in one atomic step (\"客户端向资源写入时必须携带令牌\", §7.1)"
            }
            ResourceCheck::ReadWrite => {
                "reads and writes carry the token; both are checked and both raise the mark (= write --fence-reads)"
            }
            ResourceCheck::UpdateWhere => {
                "§7.4 1.1 令牌列加条件更新: UPDATE ... SET ..., fencing_token = :token WHERE fencing_token < :token (atomic)"
            }
            ResourceCheck::TxnForUpdate => {
                "§7.4 1.2 事务内先检旗后写入, with SELECT ... FOR UPDATE (or serializable): check and write atomic"
            }
            ResourceCheck::TxnReadCommitted => {
                "§7.4 1.2 under read-committed, no row lock: the check and the write are two steps; another write can land between"
            }
            ResourceCheck::Cas => {
                "§7.4 2 支持条件写的存储: compare-and-set with the token as the version (put if version < token; atomic)"
            }
            ResourceCheck::Service => {
                "§7.4 3 自研服务类资源: your service keeps the highest token per resource (where: --token-store)"
            }
        }
    }

    /// Whether the resource compares tokens at all.
    pub fn checks(self) -> bool {
        self != ResourceCheck::None
    }

    /// The rule a form uses unless `--token-rule` says otherwise. The
    /// article's SQL (`WHERE fencing_token < :token`) and its prose
    /// ("拒绝一切令牌小于等于该值的写入") let only a strictly greater token
    /// win: `gt`. The two older forms keep `ge`, and fenced reads need it:
    /// under `gt` a holder's own fenced read raises the mark to its token
    /// and its write is then refused.
    pub fn default_rule(self, fence_reads: bool) -> TokenRule {
        match self {
            ResourceCheck::None | ResourceCheck::Write | ResourceCheck::ReadWrite => TokenRule::Ge,
            _ if fence_reads => TokenRule::Ge,
            _ => TokenRule::Gt,
        }
    }
}

/// What the critical section does to the resource (`--resource-op`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceOp {
    /// The client reads the counter on entry and writes `read + 1` back.
    #[default]
    Rmw,
    /// The resource applies the change itself (`SET stock = stock - 1`):
    /// the client's read does not enter the write.
    InPlace,
    /// The client reads the stock, decides in the client ("if stock > 0"),
    /// then has the resource apply a decrement: the oversell shape.
    CheckThenAct,
    /// The resource's own conditional update, `UPDATE ... SET stock =
    /// stock - 1 WHERE stock > 0`: the business check and the change are
    /// one atomic step of the resource (article §9.3 "交给资源自己").
    Conditional,
}

impl ResourceOp {
    pub const ALL: [ResourceOp; 4] = [
        ResourceOp::Rmw,
        ResourceOp::InPlace,
        ResourceOp::CheckThenAct,
        ResourceOp::Conditional,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ResourceOp::Rmw => "rmw",
            ResourceOp::InPlace => "in-place",
            ResourceOp::CheckThenAct => "check-then-act",
            ResourceOp::Conditional => "conditional",
        }
    }

    /// Whether the resource is a stock (judged by `no_oversell`).
    pub fn has_stock(self) -> bool {
        matches!(self, ResourceOp::CheckThenAct | ResourceOp::Conditional)
    }
}

/// Where a resource that checks tokens keeps the highest token it has seen.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum TokenStore {
    /// Persisted: a restart of the resource keeps it ("重启后从持久层恢复", §7.4 3).
    #[default]
    Durable,
    /// In memory only: a `resource-restart` fault forgets it.
    Memory,
}

impl TokenStore {
    pub fn name(self) -> &'static str {
        match self {
            TokenStore::Durable => "durable",
            TokenStore::Memory => "memory",
        }
    }
}

/// Initial stock for `--resource-op check-then-act`: one unit, so that two
/// clients that both see it in stock oversell.
pub const DEFAULT_STOCK: u8 = 1;
/// Largest `--stock`.
pub const MAX_STOCK: u8 = 8;
/// Largest `--unfenced-writers`.
pub const MAX_UNFENCED_WRITERS: u8 = 2;

fn yes() -> bool {
    true
}
fn is_true(v: &bool) -> bool {
    *v
}
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}
fn default_stock() -> u8 {
    DEFAULT_STOCK
}
fn is_default_stock(v: &u8) -> bool {
    *v == DEFAULT_STOCK
}

/// Reads a choice of the resource options by its name; the error names
/// what is allowed. `simulate` reads its resource options with these; the
/// names are the ones `check`'s options take.
fn parse_named<T: Copy>(v: &str, all: &[T], name: fn(T) -> &'static str) -> Result<T, String> {
    all.iter().copied().find(|x| name(*x) == v).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|x| name(*x)).collect();
        let (last, rest) = names.split_last().expect("a choice has names");
        if rest.is_empty() {
            format!("{v:?}: expected {last}")
        } else {
            format!("{v:?}: expected {} or {last}", rest.join(", "))
        }
    })
}

impl ResourceCheck {
    /// The form named `v` (`--resource-check`).
    pub fn parse(v: &str) -> Result<ResourceCheck, String> {
        parse_named(v, &ResourceCheck::ALL, ResourceCheck::name)
    }
}

impl ResourceOp {
    /// The operation named `v` (`--resource-op`).
    pub fn parse(v: &str) -> Result<ResourceOp, String> {
        parse_named(v, &ResourceOp::ALL, ResourceOp::name)
    }
}

impl TokenStore {
    pub const ALL: [TokenStore; 2] = [TokenStore::Durable, TokenStore::Memory];
    /// The store named `v` (`--token-store`).
    pub fn parse(v: &str) -> Result<TokenStore, String> {
        parse_named(v, &TokenStore::ALL, TokenStore::name)
    }
}

impl TokenRule {
    pub const ALL: [TokenRule; 2] = [TokenRule::Ge, TokenRule::Gt];
    pub fn name(self) -> &'static str {
        match self {
            TokenRule::Ge => "ge",
            TokenRule::Gt => "gt",
        }
    }
    /// The rule named `v` (`--token-rule`).
    pub fn parse(v: &str) -> Result<TokenRule, String> {
        parse_named(v, &TokenRule::ALL, TokenRule::name)
    }
}

/// How the resource compares a token with the highest one it has seen.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum TokenRule {
    /// Accept `token >= max` (Kleppmann, Redisson's docs).
    Ge,
    /// Accept `token > max` (the article's wording: reject tokens `<= max`).
    Gt,
}

/// What a Redlock client measures the elapsed time of an attempt with
/// (`--elapsed-clock`). redlock-py (`time.time()`) and node-redlock
/// (`Date.now()`) read the wall clock, which an NTP step or an operator
/// moves; redsync (Go's `time.Now`/`time.Since`, monotonic reading) and
/// redlock-rb (`Process.clock_gettime(CLOCK_MONOTONIC)`) read a monotonic
/// clock, which no jump moves.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ElapsedClock {
    #[default]
    Wall,
    Monotonic,
}

impl ElapsedClock {
    pub fn name(self) -> &'static str {
        match self {
            ElapsedClock::Wall => "wall",
            ElapsedClock::Monotonic => "monotonic",
        }
    }
}

/// What a client crash kills (`--crash`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CrashKind {
    /// The whole process: the business thread and its watchdog or session
    /// heartbeat die together.
    #[default]
    Process,
    /// Only the business thread, without running its `finally`: the
    /// watchdog (Redisson renews "while lock holder Redisson instance is
    /// alive") or the session heartbeat (ZooKeeper's and etcd's client
    /// threads) lives on in the same process.
    Thread,
}

impl CrashKind {
    pub const ALL: [CrashKind; 2] = [CrashKind::Process, CrashKind::Thread];
    pub fn name(self) -> &'static str {
        match self {
            CrashKind::Process => "process",
            CrashKind::Thread => "thread",
        }
    }
    pub fn from_name(s: &str) -> Option<CrashKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// What the critical section does with its write (article §4.4,
/// `--handoff`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Handoff {
    /// The holder writes, then releases.
    #[default]
    None,
    /// The holder hands the write to an asynchronous task (a thread pool, a
    /// downstream consumer) and returns at once, so the lock is released
    /// while the task still works; the task writes later, outside the lock.
    Async,
    /// The holder hands the lock's lifecycle and credential to the task,
    /// which writes and only then releases: one executor owns the release.
    Transfer,
}

impl Handoff {
    pub const ALL: [Handoff; 3] = [Handoff::None, Handoff::Async, Handoff::Transfer];
    pub fn name(self) -> &'static str {
        match self {
            Handoff::None => "none",
            Handoff::Async => "async",
            Handoff::Transfer => "transfer",
        }
    }
    pub fn from_name(s: &str) -> Option<Handoff> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Whether the critical section takes Redisson's reentrant lock a second
/// time from the same thread (`--reenter`): `lock()` inside `lock()`, as
/// a method that locks calling another that locks the same `RLock`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Reenter {
    /// One `lock()`, one `unlock()`.
    #[default]
    None,
    /// After its work the holder calls `lock()` again, writes, calls
    /// `unlock()` (the inner one), then `unlock()` (the outer one).
    Balanced,
    /// As `balanced`, but the inner `unlock()` is missing (an early return
    /// that skips a `finally`): two `lock()` calls, one `unlock()`.
    Unbalanced,
}

impl Reenter {
    pub const ALL: [Reenter; 3] = [Reenter::None, Reenter::Balanced, Reenter::Unbalanced];
    pub fn name(self) -> &'static str {
        match self {
            Reenter::None => "none",
            Reenter::Balanced => "balanced",
            Reenter::Unbalanced => "unbalanced",
        }
    }
    pub fn from_name(s: &str) -> Option<Reenter> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Where a ZooKeeper lock's fencing token comes from (`--token`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum TokenSource {
    /// The node's creation zxid (`Stat.czxid`): global and monotonic.
    #[default]
    #[serde(rename = "czxid")]
    Revision,
    /// The node's sequence suffix (the article's suggestion): the parent's
    /// `cversion`, which starts over when the empty container parent is
    /// reaped.
    Sequence,
}

impl TokenSource {
    pub const ALL: [TokenSource; 2] = [TokenSource::Revision, TokenSource::Sequence];
    pub fn name(self) -> &'static str {
        match self {
            TokenSource::Revision => "czxid",
            TokenSource::Sequence => "sequence",
        }
    }
    pub fn from_name(s: &str) -> Option<TokenSource> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// How the network orders messages.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// One TCP connection per (client, server, channel): messages arrive in
    /// the order they were sent; a client that times out opens a new
    /// connection, and what it sent on the old one may still arrive, in its
    /// own order, interleaved with the new one.
    Fifo,
    /// Any message in flight may arrive before any other (a proxy that
    /// reorders, or several pooled connections).
    Unordered,
}

impl Network {
    pub fn name(self) -> &'static str {
        match self {
            Network::Fifo => "fifo",
            Network::Unordered => "unordered",
        }
    }
}

/// All parameters of one model instance. Durations in microseconds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Params {
    pub clients: u8,
    /// Acquisitions each client makes before it stops.
    pub acquisitions: u8,
    /// Lock TTL (`PX`); for the watchdog, the watchdog timeout; for the
    /// consensus service, the session / lease TTL.
    pub ttl: Micros,
    /// Work inside the critical section, between read and write (wall
    /// time: a pause does not stop the database working on the client's
    /// request, but the write waits until the process runs again).
    pub work_min: Micros,
    pub work_max: Micros,
    /// One-way latency of every message (and of the replication link).
    pub latency_min: Micros,
    pub latency_max: Micros,
    /// Longest a client takes for one step (handle a reply, decide, send).
    pub step: Micros,
    /// Client request timeout.
    pub timeout: Micros,
    /// Least backoff before a client retries a failed acquisition.
    pub retry: Micros,
    /// Longest backoff (`None`: no bound, the client may wait as long as
    /// it likes before retrying). Absent from a trace's parameters when
    /// unset, as traces written before it have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_max: Option<Micros>,
    /// Longest pause a `pause` fault can cause (`None`: no bound; the paused
    /// client resumes whenever the environment lets it).
    pub pause_max: Option<Micros>,
    /// How much longer than the longest latency a `delay` fault can hold a
    /// message back (`None`: no bound).
    pub delay_max: Option<Micros>,
    /// Size of one clock jump.
    pub jump: Micros,
    /// Fault budgets.
    pub faults: Budgets,
    /// At most this many faults in one execution, whatever their kinds
    /// (`None`: only the per-kind budgets limit them).
    pub max_faults: Option<u8>,
    /// Watchdog / heartbeat: time between renewals (Redisson: TTL/3).
    pub renew_every: Micros,
    /// Watchdog: stop renewing after this long of renewals (None = never).
    pub renew_cap: Option<Micros>,
    /// Watchdog bug: renew with a plain `PEXPIRE`, without the ownership check.
    pub renew_unchecked: bool,
    /// Watchdog bug: the renewal is never cancelled (survives release and crash).
    pub no_cancel: bool,
    /// Redlock: number of independent instances.
    pub instances: u8,
    /// Redlock: votes needed.
    pub quorum: u8,
    /// Redlock: clock-drift factor in parts per million of the TTL (the
    /// reference clients' 0.01 is 10,000); the allowance is
    /// `int(TTL_ms × factor) + 2 ms`.
    pub drift_factor_ppm: u32,
    /// Redlock: the clock the client measures elapsed time with.
    #[serde(default, skip_serializing_if = "is_default")]
    pub elapsed_clock: ElapsedClock,
    /// The client library this model follows (`--client`); its behaviours
    /// are the fields below, each settable on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientPreset>,
    /// How the client names its lock value (`--value`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub value: LockValue,
    /// Redlock: what the client does after a failed attempt (`--unlock-on-failure`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub unlock_on_failure: UnlockOnFailure,
    /// Redlock: whether the release waits for the instances' answers (`--release`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub release: Release,
    /// Redlock: all instances at once, or one after another (`--requests`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub requests: Requests,
    /// Redlock: when an attempt is decided (`--decide`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub decide: Decide,
    /// Redlock: the client checks the validity left (TTL − elapsed − drift
    /// > 0) on acquiring and before writing (`--validity-check on|off`).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub validity_check: bool,
    /// What the lock key holds: a string, or Redisson's reentrant hash
    /// (`--lock-shape`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub lock_shape: LockShape,
    /// Watchdog family: replicas the client waits for (`WAIT n`) after each
    /// lock script before it trusts the answer (`--wait-replicas`; Redisson
    /// since 3.13). The model has one replica: 0 or 1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub wait_replicas: u8,
    /// Watchdog family: what a renewal error does (`--renewal-on-error`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub renewal_on_error: RenewalOnError,
    /// The transport's re-sends of a request that timed out
    /// (`--transport-retries`): the client closes the connection (the
    /// request stays in flight and may still run) and sends the same command
    /// again on a new one, up to this many times, each with a fresh request
    /// timeout; only then does the library see the failure (redis-py 8.1:
    /// 10; redis-py 5.x: 0).
    #[serde(default, skip_serializing_if = "is_default")]
    pub transport_retries: u8,
    /// What the crash fault kills: the process, or the business thread
    /// alone (`--crash`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub crash: CrashKind,
    /// Whether the critical section hands its write to another executor
    /// (`--handoff`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub handoff: Handoff,
    /// Watchdog family with the hash lock: a second `lock()` inside the
    /// critical section (`--reenter`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub reenter: Reenter,
    /// ZooKeeper: the fencing token's source (`--token`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub token: TokenSource,
    /// Clock-rate drift bound ρ, in parts per million: every node's clock
    /// may run fast or slow by up to this much (`--clock-drift`), so its
    /// timers and the TTLs it measures span a band of real times
    /// ([`Params::band`]). 0: clocks keep real time between jumps.
    #[serde(default, skip_serializing_if = "is_default")]
    pub clock_drift_ppm: u32,
    /// A restarted (or failed-over) Redis stays unavailable a TTL and a bit.
    pub delayed_restart: bool,
    /// Where the resource checks tokens.
    pub resource_check: ResourceCheck,
    /// How the resource compares tokens.
    pub token_rule: TokenRule,
    /// etcd 3.4: after waiting, return the lock without re-checking the
    /// client's own key.
    #[serde(default)]
    pub no_recheck: bool,
    /// How the network orders messages (`--network`).
    pub network: Network,
    /// What the critical section does to the resource (`--resource-op`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub resource_op: ResourceOp,
    /// Units in stock at the start (`--stock`; business quantity of
    /// `check-then-act`, judged by `no_oversell`).
    #[serde(default = "default_stock", skip_serializing_if = "is_default_stock")]
    pub stock: u8,
    /// Reads carry the token and are checked too (`--fence-reads`; implied
    /// by `--resource-check read-write`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub fence_reads: bool,
    /// Where the resource keeps its highest token (`--token-store`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub token_store: TokenStore,
    /// Writers that bypass the lock and the fence (`--unfenced-writers`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub unfenced_writers: u8,
    /// Idempotent writes (`--idempotent`, §7.5 幂等设计): the resource keeps a
    /// unique key on each write's operation id and absorbs a write whose
    /// operation it has already applied.
    #[serde(default, skip_serializing_if = "is_default")]
    pub idempotent: bool,
    /// Reconciliation after the fact (`--reconcile EVERY`, §7.5 对账): a
    /// reconciler compares the resource with the business ledger every
    /// EVERY and flags the damage it finds (`None`: no reconciler).
    #[serde(default, skip_serializing_if = "is_default")]
    pub reconcile: Option<Micros>,
    /// The bound `detected_within` holds the reconciler to
    /// (`--detect-within`; `None`: one period and one step, see
    /// [`Params::detection_bound`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub detect_within: Option<Micros>,
    /// A checker reduction, not a behaviour: a Redlock client that waits
    /// for every instance reads its replies in one `Gather` step, and
    /// their arrivals are no steps of their own (docs/model.md, "Folded
    /// reply arrivals"). `false` (`check --no-fold`) gives each arrival its
    /// own step again: the same verdicts from more states, for comparing.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub fold_replies: bool,
    /// A checker reduction, not a behaviour: once no fault left can stop,
    /// lose or hold a session's heartbeat, and its period is short enough
    /// that the session can never expire, the session is kept alive for
    /// good and its keepalives are no longer steps (docs/model.md, "Folded
    /// heartbeats"). `false` (`check --no-fold`, and `simulate`, which
    /// shows every heartbeat) keeps every keepalive a step.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub fold_heartbeats: bool,
}

impl Params {
    /// Defaults for `protocol`: realistic timings and every fault kind the
    /// protocol's lock service can suffer, budget 1 each.
    pub fn defaults(protocol: &dyn crate::protocols::Protocol) -> Params {
        let ttl = 30 * SEC;
        let mut faults = Budgets::none();
        for k in protocol.faults() {
            faults.set(*k, 1);
        }
        let instances = if protocol.service() == crate::protocols::Service::Instances {
            5
        } else {
            1
        };
        Params {
            clients: 2,
            acquisitions: 1,
            ttl,
            work_min: 200 * MS,
            work_max: 2 * SEC,
            latency_min: 200,
            latency_max: 5 * MS,
            step: MS,
            timeout: SEC,
            retry: 50 * MS,
            retry_max: None,
            pause_max: None,
            delay_max: None,
            jump: ttl,
            faults,
            max_faults: Some(DEFAULT_MAX_FAULTS),
            renew_every: ttl / 3,
            renew_cap: None,
            renew_unchecked: false,
            no_cancel: false,
            instances,
            quorum: instances / 2 + 1,
            drift_factor_ppm: 10_000,
            elapsed_clock: ElapsedClock::Wall,
            client: None,
            value: LockValue::PerCall,
            unlock_on_failure: UnlockOnFailure::FireAndForget,
            release: Release::FireAndForget,
            requests: Requests::Concurrent,
            decide: Decide::AllReplies,
            validity_check: true,
            lock_shape: LockShape::String,
            wait_replicas: 0,
            renewal_on_error: RenewalOnError::Retry,
            transport_retries: 0,
            crash: CrashKind::Process,
            handoff: Handoff::None,
            reenter: Reenter::None,
            token: TokenSource::Revision,
            clock_drift_ppm: 0,
            delayed_restart: false,
            resource_check: protocol.default_resource_check(),
            token_rule: TokenRule::Ge,
            no_recheck: false,
            network: Network::Fifo,
            resource_op: ResourceOp::Rmw,
            stock: DEFAULT_STOCK,
            fence_reads: false,
            token_store: TokenStore::Durable,
            unfenced_writers: 0,
            idempotent: false,
            reconcile: None,
            detect_within: None,
            fold_replies: true,
            fold_heartbeats: true,
        }
    }

    /// The time within which damage must be flagged (`detected_within`):
    /// `--detect-within`, or else the longest a reconciliation period can
    /// last on the reconciler's clock plus the step that runs it (damage
    /// done just after a run is flagged by the next one). `None` without a
    /// reconciler.
    pub fn detection_bound(&self) -> Option<Micros> {
        let every = self.reconcile?;
        Some(
            self.detect_within
                .unwrap_or_else(|| self.band(every).1 + self.step),
        )
    }

    /// Whether reads carry the token and are checked.
    pub fn reads_fenced(&self) -> bool {
        self.resource_check == ResourceCheck::ReadWrite
            || (self.fence_reads && self.resource_check.checks())
    }

    /// Redlock's drift allowance, as redlock-rb and redlock-py compute it:
    /// `int(TTL_ms × factor) + 2` ms.
    pub fn drift_allowance(&self) -> Micros {
        let ttl_ms = (self.ttl / MS) as i128;
        let ms = ttl_ms * self.drift_factor_ppm as i128 / 1_000_000 + 2;
        ms as Micros * MS
    }

    /// The real times a node's clock may have measured when it reads `d`:
    /// `(lo, hi)` with `lo = ⌊d / (1 + ρ)⌋` (the clock ran fast) and
    /// `hi = ⌈d / (1 − ρ)⌉` (it ran slow), in whole µs, rounded outwards so
    /// that every rate within ±ρ is covered. `(d, d)` when ρ = 0.
    pub fn band(&self, d: Micros) -> (Micros, Micros) {
        let rho = self.clock_drift_ppm as i128;
        if rho == 0 {
            return (d, d);
        }
        let floor = |n: i128, q: i128| n.div_euclid(q);
        let ceil = |n: i128, q: i128| -(-n).div_euclid(q);
        let n = d as i128 * 1_000_000;
        (
            floor(n, 1_000_000 + rho) as Micros,
            ceil(n, 1_000_000 - rho) as Micros,
        )
    }

    /// How long a delayed restart keeps an instance down: "a bit more than
    /// the max TTL" (the Redlock page): one more second.
    pub fn down_for(&self) -> Micros {
        self.ttl + SEC
    }

    /// The parameters as a name -> value map, by CLI name (for trace files).
    pub fn to_map(&self) -> BTreeMap<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m.into_iter().collect(),
            _ => BTreeMap::new(),
        }
    }

    /// The value of a parameter that [`Params::to_map`] leaves out because
    /// it has its default (`None` for an unset option, shown as `off`).
    pub fn omitted(key: &str) -> Option<serde_json::Value> {
        fn json<T: Serialize>(v: T) -> Option<serde_json::Value> {
            serde_json::to_value(v).ok()
        }
        match key {
            "elapsed-clock" => json(ElapsedClock::default()),
            "value" => json(LockValue::default()),
            "unlock-on-failure" => json(UnlockOnFailure::default()),
            "release" => json(Release::default()),
            "requests" => json(Requests::default()),
            "decide" => json(Decide::default()),
            "validity-check" => json(true),
            "lock-shape" => json(LockShape::default()),
            "renewal-on-error" => json(RenewalOnError::default()),
            "crash" => json(CrashKind::default()),
            "handoff" => json(Handoff::default()),
            "reenter" => json(Reenter::default()),
            "token" => json(TokenSource::default()),
            "resource-op" => json(ResourceOp::default()),
            "token-store" => json(TokenStore::default()),
            "stock" => json(DEFAULT_STOCK),
            "wait-replicas" | "clock-drift-ppm" | "unfenced-writers" | "transport-retries" => {
                json(0)
            }
            "fence-reads" | "idempotent" => json(false),
            _ => None,
        }
    }

    /// Reads parameters back from a trace file's map.
    pub fn from_map(map: &BTreeMap<String, serde_json::Value>) -> Result<Params, String> {
        let obj: serde_json::Map<String, serde_json::Value> =
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        serde_json::from_value(serde_json::Value::Object(obj))
            .map_err(|e| format!("bad params in trace config: {e}"))
    }
}

/// A parameter a user can set, for `--help`, `list` and applicability checks.
pub struct ParamInfo {
    /// CLI name (`--ttl`).
    pub name: &'static str,
    pub help: &'static str,
    /// Protocol-specific parameters name the protocols that accept them;
    /// `None` = every protocol.
    pub only: Option<&'static [&'static str]>,
}

pub(crate) const WATCHDOG_FAMILY: &[&str] = &["watchdog", "replicated", "fencing-redis"];
const RENEWING: &[&str] = &[
    "watchdog",
    "replicated",
    "fencing-redis",
    "fencing",
    "zookeeper",
    "etcd",
    "queue",
];
const ETCD: &[&str] = &["etcd"];
/// Protocols whose client a preset (`--client`) can name.
pub(crate) const CLIENTS: &[&str] = &[
    "redlock",
    "watchdog",
    "replicated",
    "fencing-redis",
    "lua-release",
];
/// Redisson's protocols: `RLock` (the watchdog family, `RFencedLock` on
/// fencing-redis) and `RedissonRedLock`.
pub(crate) const REDISSON: &[&str] = &["redlock", "watchdog", "replicated", "fencing-redis"];
/// The lock with neither a quorum nor a renewal (redis-py's `Lock`).
pub(crate) const LUA_RELEASE: &[&str] = &["lua-release"];
/// The protocols whose lock entry can be Redisson's reentrant hash
/// (`fencing-redis` keeps its `SET NX` + `INCR` script).
pub(crate) const HASH_SHAPED: &[&str] = &["redlock", "watchdog", "replicated"];
pub(crate) const REDLOCK: &[&str] = &["redlock"];
/// The protocols whose client can take Redisson's `RLock` twice from one
/// thread (`--reenter`).
pub(crate) const REENTRANT: &[&str] = &["watchdog", "replicated"];
const RESTARTABLE: &[&str] = &[
    "setnx-expire",
    "naive-del",
    "get-del",
    "lua-release",
    "watchdog",
    "replicated",
    "redlock",
    "fencing-redis",
];
/// The protocols whose clients talk to Redis (a transport such as
/// redis-py's can re-send their commands).
pub(crate) const REDIS_PROTOCOLS: &[&str] = RESTARTABLE;
const FENCED: &[&str] = &["fencing", "fencing-redis", "zookeeper", "etcd", "queue"];

/// Every user-settable parameter.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "clients",
        help: "number of clients",
        only: None,
    },
    ParamInfo {
        name: "acquisitions",
        help: "acquisitions per client",
        only: None,
    },
    ParamInfo {
        name: "ttl",
        help: "lock TTL (watchdog timeout, session or lease TTL)",
        only: None,
    },
    ParamInfo {
        name: "work-min",
        help: "least work in the critical section",
        only: None,
    },
    ParamInfo {
        name: "work-max",
        help: "most work in the critical section (beyond it: a slow fault)",
        only: None,
    },
    ParamInfo {
        name: "latency-min",
        help: "least one-way message latency",
        only: None,
    },
    ParamInfo {
        name: "latency-max",
        help: "most one-way message latency (beyond it: a delay fault)",
        only: None,
    },
    ParamInfo {
        name: "step",
        help: "longest client step (handle a reply, decide, send)",
        only: None,
    },
    ParamInfo {
        name: "timeout",
        help: "client request timeout",
        only: None,
    },
    ParamInfo {
        name: "retry",
        help: "least backoff before a failed acquisition is retried",
        only: None,
    },
    ParamInfo {
        name: "retry-max",
        help: "longest backoff before a failed acquisition is retried (default: no bound)",
        only: None,
    },
    ParamInfo {
        name: "pause-max",
        help: "longest pause a pause fault causes",
        only: None,
    },
    ParamInfo {
        name: "delay-max",
        help: "longest a delay fault holds a message past the longest latency",
        only: None,
    },
    ParamInfo {
        name: "jump",
        help: "size of a clock jump",
        only: None,
    },
    ParamInfo {
        name: "clock-drift-ppm",
        help: "clock-rate drift bound, in ppm: every node's clock may run this much fast or slow",
        only: None,
    },
    ParamInfo {
        name: "renew-every",
        help: "time between watchdog renewals / session heartbeats",
        only: Some(RENEWING),
    },
    ParamInfo {
        name: "renew-cap",
        help: "stop renewing after this long",
        only: Some(WATCHDOG_FAMILY),
    },
    ParamInfo {
        name: "renew-unchecked",
        help: "renew without the ownership check",
        only: Some(WATCHDOG_FAMILY),
    },
    ParamInfo {
        name: "no-cancel",
        help: "never cancel the renewal",
        only: Some(WATCHDOG_FAMILY),
    },
    ParamInfo {
        name: "instances",
        help: "Redlock instances",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "quorum",
        help: "Redlock votes needed",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "elapsed-clock",
        help: "Redlock: the clock elapsed time is measured with: wall (redlock-py, node-redlock; moved by jumps) or monotonic (redsync, redlock-rb)",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "client",
        help: "the client library whose behaviours the model follows (locklab list shows the presets and the protocols each is a client of)",
        only: Some(CLIENTS),
    },
    ParamInfo {
        name: "value",
        help: "the lock value: per-call (one per lock() call, reused by its retries), per-attempt, or per-thread (reused by every acquisition)",
        only: Some(CLIENTS),
    },
    ParamInfo {
        name: "lock-shape",
        help: "what the lock key holds: string (SET NX, compare-and-delete) or hash (Redisson's reentrant hash: a re-acquire by the same value counts one more hold, an unlock one less)",
        only: Some(HASH_SHAPED),
    },
    ParamInfo {
        name: "wait-replicas",
        help: "after each lock script, WAIT for this many replicas before trusting the answer (Redisson): 0 or 1, the model's one replica",
        only: Some(WATCHDOG_FAMILY),
    },
    ParamInfo {
        name: "renewal-on-error",
        help: "a watchdog renewal that fails with an error: retry at the next period (Redisson >= 3.44) or stop for good (<= 3.43)",
        only: Some(WATCHDOG_FAMILY),
    },
    ParamInfo {
        name: "transport-retries",
        help: "re-send a request that timed out on a new connection, the same command, up to N times (0 to 10) before the library sees the failure; the first copy stays in flight and may still run (redis-py 8.1: 10; redis-py 5.x: 0)",
        only: Some(REDIS_PROTOCOLS),
    },
    ParamInfo {
        name: "token",
        help: "ZooKeeper: the fencing token is the node's czxid (default) or its sequence suffix, which starts over when the empty container parent is reaped",
        only: Some(&["zookeeper"]),
    },
    ParamInfo {
        name: "handoff",
        help: "the critical section's write: none (the holder writes, then releases), async (handed to a task that writes after the release, outside the lock), transfer (the task writes, then releases)",
        only: None,
    },
    ParamInfo {
        name: "reenter",
        help: "Redisson's hash lock: the holder calls lock() again inside its critical section, then unlock() twice (balanced) or once (unbalanced: an inner unlock skipped)",
        only: Some(REENTRANT),
    },
    ParamInfo {
        name: "crash",
        help: "what the crash fault kills: the whole process (default), or the business thread alone, its watchdog or session heartbeat living on",
        only: Some(RENEWING),
    },
    ParamInfo {
        name: "unlock-on-failure",
        help: "Redlock: after a failed attempt, unlock every instance and await the answers, fire-and-forget, or none",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "release",
        help: "Redlock: the release awaits the instances' answers, or fires and forgets",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "requests",
        help: "Redlock: send to every instance at once (concurrent) or one after another (sequential)",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "decide",
        help: "Redlock: decide an attempt once every instance answered (all-replies) or at the first quorum either way (first-quorum) or at the first quorum of OKs (first-yes-quorum)",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "validity-check",
        help: "Redlock: check TTL - elapsed - drift > 0 on acquiring and before writing",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "drift-factor-ppm",
        help: "Redlock clock-drift factor in ppm of the TTL (allowance = int(TTL_ms x factor) + 2 ms)",
        only: Some(REDLOCK),
    },
    ParamInfo {
        name: "delayed-restart",
        help: "restarted Redis stays down for a TTL",
        only: Some(RESTARTABLE),
    },
    ParamInfo {
        name: "resource-check",
        help: "where the resource checks tokens",
        only: Some(FENCED),
    },
    ParamInfo {
        name: "token-rule",
        help: "how the resource compares tokens",
        only: Some(FENCED),
    },
    ParamInfo {
        name: "resource-op",
        help: "what the critical section does to the resource: rmw, in-place, check-then-act or conditional",
        only: None,
    },
    ParamInfo {
        name: "stock",
        help: "units in stock at the start (check-then-act, conditional)",
        only: None,
    },
    ParamInfo {
        name: "fence-reads",
        help: "reads carry the token and are checked too",
        only: Some(FENCED),
    },
    ParamInfo {
        name: "token-store",
        help: "where the resource keeps its highest token: durable or memory",
        only: Some(FENCED),
    },
    ParamInfo {
        name: "unfenced-writers",
        help: "writers that bypass the lock and the fence (a batch job, an old client)",
        only: None,
    },
    ParamInfo {
        name: "idempotent",
        help: "the resource absorbs a write whose operation id it has already applied",
        only: None,
    },
    ParamInfo {
        name: "reconcile",
        help: "reconciliation after the fact (§7.5 对账): a reconciler compares the resource with the ledger every EVERY and flags the damage",
        only: None,
    },
    ParamInfo {
        name: "detect-within",
        help: "the bound detected_within holds the reconciler to [default: one --reconcile period + --step]",
        only: None,
    },
    ParamInfo {
        name: "network",
        help: "fifo: one ordered TCP connection per client, server and channel, a new one after a timeout; unordered: any message may overtake any other",
        only: None,
    },
    ParamInfo {
        name: "no-recheck",
        help: "etcd 3.4: return the lock after waiting without re-checking the own key",
        only: Some(ETCD),
    },
];

/// Why a configuration is refused. The message names what was wrong and what
/// is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn range<T: PartialOrd + std::fmt::Display>(
    name: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        Err(ConfigError(format!(
            "--{name} {v} is out of range: allowed {lo}..={hi}"
        )))
    } else {
        Ok(())
    }
}

impl Params {
    /// The resource options fit together and with the protocol.
    fn validate_resource(
        &self,
        protocol: &dyn crate::protocols::Protocol,
    ) -> Result<(), ConfigError> {
        range(
            "unfenced-writers",
            self.unfenced_writers,
            0,
            MAX_UNFENCED_WRITERS,
        )?;
        if self.resource_op.has_stock() {
            range("stock", self.stock, 0, MAX_STOCK)?;
        } else if self.stock != DEFAULT_STOCK {
            return Err(ConfigError(format!(
                "--stock applies to --resource-op check-then-act or conditional only (this model's is {})",
                self.resource_op.name()
            )));
        }
        if self.resource_check.checks() && !protocol.issues_tokens() {
            return Err(ConfigError(format!(
                "--resource-check {} does not apply to {}: it grants no fencing tokens (allowed: none)",
                self.resource_check.name(),
                protocol.name()
            )));
        }
        if self.fence_reads && !self.resource_check.checks() {
            return Err(ConfigError(
                "--fence-reads needs a token check: --resource-check is none (allowed with any other form)"
                    .into(),
            ));
        }
        if let Some(every) = self.reconcile
            && !(1..=MAX_DURATION).contains(&every)
        {
            return Err(ConfigError(format!(
                "--reconcile {} is out of range: allowed {} ..= {}",
                crate::units::show(every),
                crate::units::show(1),
                crate::units::show(MAX_DURATION)
            )));
        }
        if let Some(b) = self.detect_within {
            if self.reconcile.is_none() {
                return Err(ConfigError(
                    "--detect-within needs a reconciler: add --reconcile EVERY".into(),
                ));
            }
            if !(0..=MAX_DURATION).contains(&b) {
                return Err(ConfigError(format!(
                    "--detect-within {} is out of range: allowed 0 ..= {}",
                    crate::units::show(b),
                    crate::units::show(MAX_DURATION)
                )));
            }
        }
        if self.token_store == TokenStore::Memory
            && !matches!(
                self.resource_check,
                ResourceCheck::Service | ResourceCheck::Write | ResourceCheck::ReadWrite
            )
        {
            return Err(ConfigError(format!(
                "--token-store memory needs a resource that keeps its highest token itself: \
                 --resource-check service, write or read-write (this model's is {}; a database's token column and a store's version are stored with the data)",
                self.resource_check.name()
            )));
        }
        Ok(())
    }

    /// Extra limits for exhaustive search (`check`, `explore`).
    pub fn validate_for_search(&self) -> Result<(), ConfigError> {
        for k in FaultKind::ALL {
            let b = self.faults.get(k);
            if b > MAX_BUDGET {
                return Err(ConfigError(format!(
                    "--budget {}={b} is out of range: allowed 0..={MAX_BUDGET}",
                    k.name()
                )));
            }
        }
        Ok(())
    }

    /// Checks every value against what the model supports.
    pub fn validate(&self, protocol: &dyn crate::protocols::Protocol) -> Result<(), ConfigError> {
        range("clients", self.clients, 1, MAX_CLIENTS)?;
        range("acquisitions", self.acquisitions, 1, MAX_ACQUISITIONS)?;
        let d = |name: &str, v: Micros, lo: Micros| -> Result<(), ConfigError> {
            if v < lo || v > MAX_DURATION {
                Err(ConfigError(format!(
                    "--{name} {} is out of range: allowed {} ..= {}",
                    crate::units::show(v),
                    crate::units::show(lo),
                    crate::units::show(MAX_DURATION)
                )))
            } else {
                Ok(())
            }
        };
        d("ttl", self.ttl, MS)?;
        if self.ttl % MS != 0 {
            return Err(ConfigError(format!(
                "--ttl {} is not a whole number of milliseconds: Redis takes PX in ms",
                crate::units::show(self.ttl)
            )));
        }
        d("work-min", self.work_min, 0)?;
        d("work-max", self.work_max, self.work_min)?;
        d("latency-min", self.latency_min, 0)?;
        d("latency-max", self.latency_max, self.latency_min)?;
        d("step", self.step, 0)?;
        d("timeout", self.timeout, 1)?;
        d("retry", self.retry, 0)?;
        if let Some(v) = self.retry_max {
            d("retry-max", v, self.retry)?;
        }
        if let Some(v) = self.pause_max {
            d("pause-max", v, 1)?;
        }
        if let Some(v) = self.delay_max {
            d("delay-max", v, 1)?;
        }
        d("jump", self.jump, 1)?;
        d("renew-every", self.renew_every, 1)?;
        if let Some(c) = self.renew_cap {
            d("renew-cap", c, 1)?;
        }
        if protocol.service() == crate::protocols::Service::Instances {
            range("instances", self.instances, 1, MAX_INSTANCES)?;
            range("quorum", self.quorum, 1, self.instances)?;
            range("drift-factor-ppm", self.drift_factor_ppm, 0, 1_000_000)?;
        }
        if self.handoff != Handoff::None && !protocol.has_lock() {
            return Err(ConfigError(format!(
                "--handoff {} needs a lock to hand off: {} takes none",
                self.handoff.name(),
                protocol.name()
            )));
        }
        if self.reenter != Reenter::None && self.lock_shape != LockShape::Hash {
            return Err(ConfigError(format!(
                "--reenter {} needs Redisson's reentrant hash lock: add --lock-shape hash or --client redisson (a SET NX lock cannot be taken twice: the inner lock() would wait for itself)",
                self.reenter.name()
            )));
        }
        if self.reenter != Reenter::None && self.handoff != Handoff::None {
            return Err(ConfigError(
                "--reenter with --handoff is not modelled: choose one".into(),
            ));
        }
        if self.handoff == Handoff::Async && self.resource_check == ResourceCheck::TxnReadCommitted
        {
            return Err(ConfigError(
                "--handoff async with --resource-check txn-read-committed is not modelled (a task's write in two steps): choose another --resource-check".into(),
            ));
        }
        if let Some(c) = self.client
            && !c.fits(protocol.name())
        {
            let fitting: Vec<&str> = ClientPreset::ALL
                .iter()
                .filter(|p| p.fits(protocol.name()))
                .map(|p| p.name())
                .collect();
            return Err(ConfigError(format!(
                "--client {} is no client of {}: it is a client of {}; {}",
                c.name(),
                protocol.name(),
                c.protocols().join(", "),
                if fitting.is_empty() {
                    format!("{} has no client presets", protocol.name())
                } else {
                    format!(
                        "the presets for {} are {}",
                        protocol.name(),
                        fitting.join(", ")
                    )
                }
            )));
        }
        range("wait-replicas", self.wait_replicas, 0, 1)?;
        range(
            "transport-retries",
            self.transport_retries,
            0,
            MAX_TRANSPORT_RETRIES,
        )?;
        range(
            "clock-drift-ppm",
            self.clock_drift_ppm,
            0,
            MAX_CLOCK_DRIFT_PPM,
        )?;
        self.validate_resource(protocol)?;
        for k in FaultKind::ALL {
            let b = self.faults.get(k);
            if k == FaultKind::Duplicate {
                // Any client's write can be delivered twice.
                continue;
            }
            if k == FaultKind::ResourceRestart {
                if b > 0 && self.token_store != TokenStore::Memory {
                    return Err(ConfigError(
                        "fault 'resource-restart' needs --token-store memory: the resource's data and a durable token survive a restart, so it would change nothing".into(),
                    ));
                }
                continue;
            }
            if b > 0 && !protocol.faults().contains(&k) {
                let allowed: Vec<&str> = protocol.faults().iter().map(|f| f.name()).collect();
                return Err(ConfigError(format!(
                    "fault '{}' does not apply to {}: its lock service can suffer {}",
                    k.name(),
                    protocol.name(),
                    allowed.join(", ")
                )));
            }
        }
        Ok(())
    }
}
