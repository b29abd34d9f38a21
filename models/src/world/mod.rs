//! The world state: clients with their own beliefs, the Redis servers, the
//! messages in flight, the resource, the remaining fault budgets and the
//! ghost facts the invariants read.
//!
//! The state holds no time at all. Everything that waits for time holds a
//! clock handle ([`Clk`]); the engine that drives the model keeps the
//! clocks' values (a zone of them, or one value each). So the state space
//! is finite with no time horizon, and exact for every real-valued timing.

use crate::faults::Budgets;
pub use crate::time::{Clk, Micros};
use locklab_traces::{Event, EventKind};
use serde::{Deserialize, Serialize};

pub mod pack;

/// A participant that sends or receives messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Node {
    Client(u8),
    Redis(u8),
    /// The consensus-backed lock service (ZooKeeper / etcd ensemble).
    Service,
}

/// A lock value: the ownership proof of one acquisition (`c1#1` = client 1's
/// first acquisition). Unique per acquisition, as the article demands.
///
/// `attempt` tells a Redlock client's attempts apart. It is the attempt's
/// identity in the model, whatever the value on the wire: a client whose
/// retries reuse one value (`--value per-call`) sends the same bytes, and
/// the model still knows which attempt a stale request came from. Attempt
/// labels are recycled: a new attempt takes the least label that nothing
/// in the world still carries (labels are only ever compared for
/// equality, so this loses nothing, and it keeps the state space finite).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Val {
    pub client: u8,
    pub round: u8,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u8,
    /// The attempt is part of the value on the wire (`--value per-attempt`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub per_attempt: bool,
    /// Sent from the thread of the task the holder handed its lock to
    /// (`--handoff transfer` with Redisson's hash lock, whose field names
    /// the thread: `UUID:threadId`), so it matches no field the holder's
    /// thread wrote.
    #[serde(default, skip_serializing_if = "is_false")]
    pub task: bool,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

fn is_zero16(v: &u16) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

impl Val {
    /// Client `client`'s value for acquisition `round` (its first attempt).
    pub fn new(client: u8, round: u8) -> Val {
        Val {
            client,
            round,
            attempt: 0,
            per_attempt: false,
            task: false,
        }
    }

    /// The value as the wire carries it: `c1#1`, and `c1#1.2` for an
    /// attempt's own value (`--value per-attempt`).
    pub fn text(self) -> String {
        if self.task {
            let holder = Val {
                task: false,
                ..self
            };
            return format!("{}/task-thread", holder.text());
        }
        if !self.per_attempt || self.attempt == 0 {
            format!("c{}#{}", self.client + 1, self.round + 1)
        } else {
            format!(
                "c{}#{}.{}",
                self.client + 1,
                self.round + 1,
                self.attempt + 1
            )
        }
    }
}

/// Which of a client's connections a message travels on. The watchdog has
/// its own, so a renewal and a release can be in flight at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Chan {
    Main,
    Watchdog,
}

/// Redis commands on the single lock key `lock` (and, for fencing, the
/// token counter). Scripts are one command: Redis runs them atomically with
/// time frozen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "cmd")]
pub enum Cmd {
    /// `SET lock v NX PX ttl`
    SetNxPx { val: Val, ttl: Micros },
    /// `SETNX lock v`
    SetNx { val: Val },
    /// `EXPIRE lock ttl`
    Expire { ttl: Micros },
    /// `GET lock`
    Get,
    /// `DEL lock`
    Del,
    /// `EVAL "if GET==v then DEL"` (compare-and-delete)
    Cad { val: Val },
    /// `EVAL "if GET==v then PEXPIRE ttl"` (checked renewal)
    Renew { val: Val, ttl: Micros },
    /// `PEXPIRE lock ttl` (unchecked renewal)
    PExpire { ttl: Micros },
    /// `EVAL "if SET NX PX ok then return INCR token"` (fenced acquire)
    FencedSet { val: Val, ttl: Micros },
    /// Redisson's acquire script on its reentrant hash: if the key is
    /// absent or holds field `val`, `HINCRBY lock val 1` and `PEXPIRE ttl`,
    /// reply nil (here `OK`); else reply the holder's PTTL (here nil).
    HashLock { val: Val, ttl: Micros },
    /// Redisson's unlock script: nil if field `val` is absent; else
    /// `HINCRBY lock val -1`, then `PEXPIRE ttl` and 0 while holds are
    /// left, or `DEL` and 1 at zero.
    HashUnlock { val: Val, ttl: Micros },
    /// Consensus service: open a session (ZooKeeper connect, etcd
    /// `LeaseGrant`).
    Open,
    /// Consensus service: take the lock if free, with a fresh token
    /// (`fencing`).
    Lock { round: u8 },
    /// ZooKeeper: create an ephemeral sequential node (idempotent per
    /// acquisition, as Curator's protected mode finds its own node).
    Create { round: u8 },
    /// etcd: `Txn(If CreateRevision(myKey) == 0 Then Put(myKey, lease))`
    /// plus `Get(prefix, FirstCreate)`, one atomic transaction.
    Txn { round: u8 },
    /// Where does entry `rev` stand? (ZooKeeper `getChildren`; etcd's
    /// `waitDeletes` query and, unless disabled, the post-wait `Get(myKey)`.)
    Order { rev: u16 },
    /// Watch entry `rev` for deletion (ZooKeeper `exists` with a watch, etcd watch).
    Watch { rev: u16 },
    /// Session ping / lease keepalive.
    KeepAlive,
    /// Delete the caller's entry `rev` and close its session / revoke its lease.
    Remove { rev: u16 },
}

/// A TTL as Redis takes it after `PX`: whole milliseconds.
fn ms(t: Micros) -> i64 {
    t / crate::time::MS
}

impl Cmd {
    /// The lock value the command carries, if any.
    pub fn val(self) -> Option<Val> {
        match self {
            Cmd::SetNxPx { val, .. }
            | Cmd::SetNx { val }
            | Cmd::Cad { val }
            | Cmd::Renew { val, .. }
            | Cmd::FencedSet { val, .. }
            | Cmd::HashLock { val, .. }
            | Cmd::HashUnlock { val, .. } => Some(val),
            _ => None,
        }
    }

    /// The lock value the command carries, to change.
    pub fn val_mut(&mut self) -> Option<&mut Val> {
        match self {
            Cmd::SetNxPx { val, .. }
            | Cmd::SetNx { val }
            | Cmd::Cad { val }
            | Cmd::Renew { val, .. }
            | Cmd::FencedSet { val, .. }
            | Cmd::HashLock { val, .. }
            | Cmd::HashUnlock { val, .. } => Some(val),
            _ => None,
        }
    }

    pub fn text(self) -> String {
        match self {
            Cmd::SetNxPx { val, ttl } => format!("SET lock {} NX PX {}", val.text(), ms(ttl)),
            Cmd::SetNx { val } => format!("SETNX lock {}", val.text()),
            Cmd::Expire { ttl } => format!("EXPIRE lock {}", ttl / crate::time::SEC),
            Cmd::Get => "GET lock".into(),
            Cmd::Del => "DEL lock".into(),
            Cmd::Cad { val } => format!("EVAL compare-and-delete lock {}", val.text()),
            Cmd::Renew { val, ttl } => {
                format!("EVAL compare-and-PEXPIRE lock {} {}", val.text(), ms(ttl))
            }
            Cmd::PExpire { ttl } => format!("PEXPIRE lock {}", ms(ttl)),
            Cmd::FencedSet { val, ttl } => {
                format!(
                    "EVAL SET lock {} NX PX {} + INCR token",
                    val.text(),
                    ms(ttl)
                )
            }
            Cmd::HashLock { val, ttl } => format!(
                "EVAL hash-lock lock {} {} (HINCRBY if absent or mine)",
                val.text(),
                ms(ttl)
            ),
            Cmd::HashUnlock { val, ttl } => format!(
                "EVAL hash-unlock lock {} {} (HINCRBY -1, DEL at 0)",
                val.text(),
                ms(ttl)
            ),
            Cmd::Open => "open session / grant lease".into(),
            Cmd::Lock { .. } => "LOCK".into(),
            Cmd::Create { .. } => "create /lock/node- EPHEMERAL|SEQUENTIAL".into(),
            Cmd::Txn { .. } => {
                "Txn(create_revision(myKey)==0 ? put myKey : get) + Get(owner)".into()
            }
            Cmd::Order { rev } => format!("query the entries before #{rev}"),
            Cmd::Watch { rev } => format!("watch #{rev} for deletion"),
            Cmd::KeepAlive => "keepalive".into(),
            Cmd::Remove { rev } => format!("delete #{rev}, close session"),
        }
    }
}

/// Redis replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reply", content = "value")]
pub enum Reply {
    Ok,
    Nil,
    Int(u8),
    Val(Val),
    Token(u16),
    /// Consensus service: the lock is taken; someone else holds it.
    Busy,
    /// Where the caller's entry `rev` stands: the entry just before it, if
    /// any (to watch), and whether the entry itself still exists (it is
    /// gone once its session expired).
    Place {
        rev: u16,
        pred: Option<u16>,
        mine: bool,
    },
    /// Answer to a watch: whether the watched entry still exists.
    Exists(bool),
    /// Watch event: entry `rev` was deleted.
    Deleted(u16),
    /// Answer to a keepalive: whether the session / lease was still alive.
    Alive(bool),
}

impl Reply {
    pub fn text(self) -> String {
        match self {
            Reply::Ok => "OK".into(),
            Reply::Nil => "nil".into(),
            Reply::Int(i) => format!("{i}"),
            Reply::Val(v) => format!("\"{}\"", v.text()),
            Reply::Token(t) => format!("token {t}"),
            Reply::Busy => "busy".into(),
            Reply::Place { rev, pred, mine } => {
                let before = match pred {
                    Some(p) => format!("behind #{p}"),
                    None => "nothing before it".into(),
                };
                if mine {
                    format!("#{rev}, {before}")
                } else {
                    format!("#{rev} is GONE (session expired), {before}")
                }
            }
            Reply::Exists(b) => format!("exists: {b}"),
            Reply::Deleted(r) => format!("WATCH EVENT: #{r} deleted"),
            Reply::Alive(b) => format!("session alive: {b}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Body {
    Req(Cmd),
    Reply(Reply),
}

/// A message in flight.
///
/// Each (client, server, channel) pair talks over one TCP connection, which
/// delivers in order: under `--network fifo` only the oldest message of a
/// queue (same `from`, `to`, `chan`, `conn`; `seq` 0) can arrive. A client
/// that times out closes the connection and opens a new one for its next
/// request; what it had already sent stays deliverable, in its own order,
/// on the closed connection (`conn` ≥ 1), but no longer ordered against the
/// new one (RFC 9293: two connections have no mutual order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Msg {
    pub from: Node,
    pub to: Node,
    pub chan: Chan,
    /// 0: the sender's current connection; k ≥ 1: a connection it closed
    /// (the numbers only tell closed connections apart).
    #[serde(default)]
    pub conn: u8,
    /// Position in its connection's queue, 0 = next to arrive (always 0
    /// under `--network unordered`).
    #[serde(default)]
    pub seq: u8,
    pub body: Body,
    /// A delay fault holds it back past the longest normal latency (up to
    /// `--delay-max` more, or without bound).
    pub held: bool,
    /// It should have arrived already but could not (its receiver was
    /// paused, or an older message on its connection was held back): it
    /// arrives as soon as it can, its clock re-armed when it became free.
    pub late: bool,
    /// A reply to a client that reads several replies together (Redlock):
    /// it has reached the client's socket buffer and waits to be read.
    pub arrived: bool,
    /// The sender gave up on this request (timed out and closed the
    /// connection, or crashed): it still runs on the server, but its reply
    /// goes nowhere.
    pub orphan: bool,
    /// A reply held back by `WAIT` (`--wait-replicas`): the number of
    /// writes of its server's replication stream that must reach the
    /// replica before it leaves. It cannot arrive while this is above 0;
    /// its clock is re-armed when it reaches 0 (the reply is sent then).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repl_wait: u8,
    /// Time since it was sent (or re-armed, when `late`).
    pub clk: Clk,
}

/// A key's expiry: `expire_at = the server's wall clock at \`since\` + ttl`.
/// The key is live while the server's wall clock reads at most
/// `expire_at` (Redis `keyIsExpired`: `now > when` is expired), that is
/// while the real time since `since` is at most `ttl - shift`, where
/// `shift` is how far the judging server's wall clock has jumped forward
/// (relative to the clock that fixed `expire_at`) since then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Expiry {
    /// `None`: no expiry (`SETNX` without `EXPIRE`).
    pub ttl: Option<Micros>,
    pub shift: Micros,
    pub since: Clk,
}

fn one() -> u8 {
    1
}

fn is_one(v: &u8) -> bool {
    *v == 1
}

/// The lock key's value and expiry on one server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Entry {
    pub val: Val,
    pub exp: Expiry,
    /// Holds counted in Redisson's reentrant hash (`--lock-shape hash`):
    /// the value of the field `val`; always 1 for a string key.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub holds: u8,
}

impl Entry {
    /// A key holding `val` once.
    pub fn new(val: Val, exp: Expiry) -> Entry {
        Entry { val, exp, holds: 1 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Takes client commands; the only role of a single or Redlock instance.
    Primary,
    /// Applies the primary's replication stream; never expires keys.
    Replica,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Up,
    /// Restarting (a delayed restart): down since the clock's reset.
    Down(Clk),
    /// Failed over: gone for good.
    Dead,
}

/// One write of the primary's replication stream, not yet applied by the
/// replica. Expiries travel as absolute times (Redis 7 sends `PXAT`):
/// `shift` converts them to the replica's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplKind {
    Set(Val),
    Del,
    Expire,
    /// A fenced acquire script's effects, `SET` and `INCR token`: Redis 7
    /// ships a script's writes to replicas as one `MULTI`/`EXEC`.
    SetAndIncr(Val),
    /// A hash-lock script's effects: field `Val` now counts this many
    /// holds (`HINCRBY`, `PEXPIREAT`).
    Holds(Val, u8),
}

impl ReplKind {
    /// The lock value the write carries.
    pub fn val(mut self) -> Option<Val> {
        self.val_mut().map(|v| *v)
    }

    /// The lock value the write carries, to change.
    pub fn val_mut(&mut self) -> Option<&mut Val> {
        match self {
            ReplKind::Set(v) | ReplKind::SetAndIncr(v) | ReplKind::Holds(v, _) => Some(v),
            ReplKind::Del | ReplKind::Expire => None,
        }
    }
}

/// A replicated write and the expiry it carries; `exp.since` is the time
/// since the primary ran it (it also times the replication link).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ReplOp {
    pub kind: ReplKind,
    pub exp: Expiry,
}

/// One Redis server.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RedisNode {
    pub status: Status,
    pub role: Role,
    pub lock: Option<Entry>,
    /// The fencing-token counter (`INCR token`); 0 = absent.
    pub counter: u16,
    /// Offset of this server's wall clock from true time. Kept only where it
    /// changes behaviour (a replicated pair converts absolute expiries
    /// between clocks); elsewhere a jump's effect is already in the keys'
    /// shifts, and traces recover offsets from their clock-jump steps.
    pub clock: Micros,
    /// Replication stream waiting for the replica (primary only).
    pub backlog: Vec<ReplOp>,
}

impl RedisNode {
    pub fn new(role: Role) -> RedisNode {
        RedisNode {
            status: Status::Up,
            role,
            lock: None,
            counter: 0,
            clock: 0,
            backlog: Vec::new(),
        }
    }
    pub fn is_up(&self) -> bool {
        self.status == Status::Up
    }
    pub fn is_dead(&self) -> bool {
        self.status == Status::Dead
    }
}

/// Where a client's program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "phase", content = "step")]
pub enum Phase {
    /// Waiting to (re)start an acquisition.
    Idle,
    /// Acquiring; the protocol's step number; waiting for a reply or the
    /// request timeout.
    Acquire(u8),
    /// In the critical section: read done, working.
    Work,
    /// Validity checked, the write is due (only for protocols that check).
    Write,
    /// Critical section over; the release is due.
    Leave,
    /// Releasing; the protocol's step number; waiting for a reply or the
    /// request timeout.
    Release(u8),
    /// Released, while the asynchronous task it handed its write to
    /// (`--handoff async`) still works: the task's write is next.
    Task,
    /// All acquisitions done.
    Done,
    /// In the critical section, taking the lock again from the same thread
    /// (`--reenter`): waiting for the re-entry's reply, or, when someone
    /// else holds the key, for its next try (`lock()` blocks).
    Reenter,
    /// Still in the outer critical section, waiting for the inner
    /// `unlock()`'s reply (`--reenter balanced`).
    InnerRelease,
}

/// What a thread's next step waits for. Its window (when the step may and
/// must happen, on the wait's clock) follows from the kind and the model's
/// timing parameters (`LockModel::window`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    /// The first start: whenever the client likes.
    Start,
    /// A backoff before retrying: any time from `--retry` on.
    Backoff,
    /// A reply, or else the request timeout.
    Reply,
    /// The critical section's work: done within `--work`.
    Work,
    /// Work turned slow by a fault: done at some time past its minimum.
    Slow,
    /// A step is due now (a decision, the write, the release): within one
    /// client step.
    Step,
    /// Watchdog: the next renewal, `--renew-every` after the last.
    Renewal,
    /// Reconciler: the next run, `--reconcile` after the last.
    Reconcile,
    /// A Redlock client's every awaited reply has been sent: it reads them
    /// once the last has arrived (a latency after its send) and within a
    /// step after that. The clock is the last reply's own.
    Gather,
}

/// A pending step of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Wait {
    pub kind: WaitKind,
    /// The process was paused past the end of this wait's window: the step
    /// is due within one client step of the resume (`clk` re-armed then).
    pub late: bool,
    pub clk: Clk,
}

/// The watchdog's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WdState {
    /// Waiting for the next renewal time.
    Sleeping,
    /// A renewal is in flight; gives up at the request timeout.
    Waiting,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Watchdog {
    /// The lock value it keeps alive.
    pub val: Val,
    pub state: WdState,
    pub wait: Wait,
    /// Renewals sent so far (only counted when a renewal cap is set).
    pub renewals: u32,
    /// The thread's `lock()` calls less its `unlock()` calls, as
    /// Redisson's renewal entry counts them (`LockEntry.addThreadId`,
    /// `removeThreadId`): the renewal is cancelled only when this reaches
    /// zero. 1 unless the holder re-entered (`--reenter`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub holds: u8,
    /// The transport's re-sends of the renewal in flight
    /// (`--transport-retries`): 0 for a renewal sent by the watchdog itself.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resent: u8,
}

/// A Redlock client's view of one instance during an acquisition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vote {
    Pending,
    Yes,
    No,
    /// Not asked yet: a client that asks one instance after another
    /// (`--requests sequential`) has not reached it.
    Unsent,
}

/// One client process.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Client {
    /// The business thread is alive (false after a crash).
    pub alive: bool,
    /// `Some(c)`: the whole process is frozen, since `c` was reset.
    pub paused: Option<Clk>,
    pub phase: Phase,
    /// The business thread's next step.
    pub wait: Option<Wait>,
    /// Acquisitions completed.
    pub round: u8,
    /// The resource value read in this critical section.
    pub read: Option<u8>,
    /// Fencing token of the current hold.
    pub token: Option<u16>,
    /// This acquisition's write landed (a `duplicate` fault can deliver it again).
    #[serde(default)]
    pub wrote: bool,
    pub wd: Option<Watchdog>,
    /// Redlock: per-instance votes of the current attempt.
    pub votes: Vec<Vote>,
    /// Redlock: T1, the start of the current attempt (and hold), and how
    /// far the client's wall clock has jumped forward since.
    pub t1: Option<Clk>,
    pub t1_shift: Micros,
    /// Redlock: the label of the current attempt (see [`Val`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u8,
    /// Every attempt sends a value of its own (`--value per-attempt`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub per_attempt: bool,
    /// The business thread has taken the lock a second time and not yet
    /// called the inner `unlock()` (`--reenter`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub reentered: bool,
    /// The transport's re-sends of the request(s) the business thread
    /// waits for (`--transport-retries`): 0 for a request its program sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resent: u8,
    /// The command the business thread waits for an answer to, kept while it
    /// waits so that the transport can send it again (only with
    /// `--transport-retries` above 0, and not for a client that gathers
    /// several replies: its round's command follows from its phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Cmd>,
    /// A client that gathers replies (Redlock, `--decide all-replies`):
    /// the read of its replies, once every awaited one has been sent (see
    /// `client::settle_gather`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gather: Option<Wait>,
    /// This round's replies arrive by steps of their own, as other
    /// messages do (a fault struck one of them), instead of unseen within
    /// their latency (see `client::unfold`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub unfolded: bool,
}

// `Val`, `Watchdog` and `Client` hash as the derived `Hash` would, field by
// field, except that the state of rarely used behaviours adds nothing while
// it is at rest: the transport's re-sends (`--transport-retries`), a
// re-entry (`--reenter`) and a task thread's value (`--handoff transfer`
// under Redisson). The search picks a symmetry representative by
// fingerprint, so a world without re-sends must hash as it did before the
// knob existed: with `--transport-retries 0` the state counts stay the same.
impl Watchdog {
    /// A renewal agent for `val`, asleep until its first renewal (`wait`).
    pub fn new(val: Val, wait: Wait) -> Watchdog {
        Watchdog {
            val,
            state: WdState::Sleeping,
            wait,
            renewals: 0,
            holds: 1,
            resent: 0,
        }
    }
}

impl std::hash::Hash for Val {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let Val {
            client,
            round,
            attempt,
            per_attempt,
            task,
        } = self;
        client.hash(h);
        round.hash(h);
        attempt.hash(h);
        per_attempt.hash(h);
        if *task {
            task.hash(h);
        }
    }
}

impl std::hash::Hash for Watchdog {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let Watchdog {
            val,
            state,
            wait,
            renewals,
            holds,
            resent,
        } = self;
        val.hash(h);
        state.hash(h);
        wait.hash(h);
        renewals.hash(h);
        if *holds != 1 {
            holds.hash(h);
        }
        if *resent != 0 {
            resent.hash(h);
        }
    }
}

impl std::hash::Hash for Client {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let Client {
            alive,
            paused,
            phase,
            wait,
            round,
            read,
            token,
            wrote,
            wd,
            votes,
            t1,
            t1_shift,
            attempt,
            per_attempt,
            reentered,
            resent,
            request,
            gather,
            unfolded,
        } = self;
        alive.hash(h);
        paused.hash(h);
        phase.hash(h);
        wait.hash(h);
        round.hash(h);
        read.hash(h);
        token.hash(h);
        wrote.hash(h);
        wd.hash(h);
        votes.hash(h);
        t1.hash(h);
        t1_shift.hash(h);
        attempt.hash(h);
        per_attempt.hash(h);
        if *reentered {
            reentered.hash(h);
        }
        if *resent != 0 || request.is_some() {
            resent.hash(h);
            request.hash(h);
        }
        if gather.is_some() || *unfolded {
            gather.hash(h);
            unfolded.hash(h);
        }
    }
}

impl Client {
    /// A client about to start, its start clock `clk`.
    pub fn new(clk: Clk) -> Client {
        Client {
            alive: true,
            paused: None,
            phase: Phase::Idle,
            wait: Some(Wait {
                kind: WaitKind::Start,
                late: false,
                clk,
            }),
            round: 0,
            read: None,
            token: None,
            wrote: false,
            wd: None,
            votes: Vec::new(),
            t1: None,
            t1_shift: 0,
            attempt: 0,
            per_attempt: false,
            reentered: false,
            resent: 0,
            request: None,
            gather: None,
            unfolded: false,
        }
    }

    /// The lock value of the client's current acquisition.
    pub fn val(&self, id: u8) -> Val {
        Val {
            client: id,
            round: self.round,
            attempt: self.attempt,
            per_attempt: self.per_attempt,
            task: false,
        }
    }

    /// The client believes it holds the lock and is in its critical section.
    pub fn holds(&self) -> bool {
        self.alive && matches!(self.phase, Phase::Work | Phase::Write | Phase::Reenter)
    }

    /// Its business thread can take a step (not paused, not dead, not done).
    pub fn runs(&self) -> bool {
        self.alive && self.paused.is_none() && self.phase != Phase::Done
    }
}

/// The protected resource (see `resource.rs`): a counter of the changes
/// applied (increments for `rmw` and `in-place`, units taken from the stock
/// for `check-then-act`), the writes it accepted, the highest fencing token
/// it has seen, and the unfenced writers' progress.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Resource {
    pub value: u8,
    pub accepted: u8,
    pub max_token: Option<u16>,
    /// Unfenced writers (no lock, no token), by index.
    pub writers: [Writer; crate::params::MAX_UNFENCED_WRITERS as usize],
    /// The reconciler (`--reconcile`), if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recon: Option<Recon>,
}

/// The reconciler of §7.5 (对账): a periodic job that compares the
/// resource with the business ledger (the writes accepted, the units sold,
/// the operations applied) and flags the damage it finds. It prevents
/// nothing; `detected_within` judges how soon it notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Recon {
    /// Its next run that matters: armed by the damage (`None` before it,
    /// and once it has flagged it: its job is done).
    pub wait: Option<Wait>,
    /// `Some(c)`: the reconciler's process is frozen, since `c` was reset.
    pub paused: Option<Clk>,
    /// The time since the resource was first damaged, while nobody has
    /// flagged it yet.
    pub damage: Option<Clk>,
    /// The damage has been flagged.
    pub flagged: bool,
    /// The damage went unflagged past the detection bound (`detected_within`).
    pub missed: bool,
}
/// Where an unfenced writer (a batch job, an old client version) is: it
/// reads, then writes, bypassing the lock and the fence.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Writer {
    /// Not present, or finished.
    #[default]
    Done,
    /// About to read.
    Ready,
    /// Has read this value; its write is next.
    Read(u8),
}

/// Facts about transitions that invariants need: recorded in the state so
/// that the state where they become true ends a counterexample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Ghost {
    /// First time a client deleted or re-timed a lock entry another client
    /// owned: (the client, the owner, what it did).
    pub foreign: Option<(u8, u8, Touch)>,
    /// Highest fencing token a client has received so far.
    pub last_token: Option<u16>,
    /// A token was granted that was not above every token a client had
    /// received: (token, highest received).
    pub token_regressed: Option<(u16, u16)>,
    /// An operation's write took effect a second time (`no_duplicate_effect`).
    #[serde(default)]
    pub duplicated: bool,
    /// First client that wrote to the resource after its own clock said its
    /// validity had run out (`within_validity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_write: Option<u8>,
}

/// Hashed as the derived impl hashed it before `late_write` existed, and
/// `late_write` only when set, so the fingerprints (and with them the
/// symmetry representatives and the zone counts) of every state without a
/// late write stay what they were.
impl std::hash::Hash for Ghost {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let Ghost {
            foreign,
            last_token,
            token_regressed,
            duplicated,
            late_write,
        } = self;
        foreign.hash(h);
        last_token.hash(h);
        token_regressed.hash(h);
        duplicated.hash(h);
        if late_write.is_some() {
            late_write.hash(h);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Touch {
    Deleted,
    Extended,
    /// A stale compare-and-delete of the client's own (an earlier attempt
    /// or acquisition that carried the same value) deleted its current
    /// lock entry: the value-reuse failure.
    DeletedOwnCurrent,
}

/// One lock entry of the consensus service: an ephemeral sequential znode
/// or an etcd lock key, tied to its owner's session or lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CoordEntry {
    pub owner: u8,
    /// The owner's acquisition it belongs to.
    pub round: u8,
    /// Creation revision (etcd) / czxid (ZooKeeper): the fencing token.
    pub rev: u16,
    /// ZooKeeper: the sequence suffix of its node's name, the parent's
    /// `cversion` when it was created (`--token sequence`).
    #[serde(default, skip_serializing_if = "is_zero16")]
    pub seq: u16,
}

/// A client's session (ZooKeeper) or lease (etcd) at the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Session {
    /// The time since the service last heard its keepalive: the service
    /// expires it once that reaches the TTL.
    Live(Clk),
    /// Kept alive for good: its heartbeat can no longer be stopped, lost or
    /// held by any fault left, and runs fast enough that the session can
    /// never expire, so its keepalives are no longer steps (a checker
    /// reduction, `coord::heartbeat_folds`). It ends only when its client
    /// closes it.
    Kept,
    /// A kept session whose client has cancelled its heartbeat to release
    /// (`client::cancel_watchdog`): no longer heartbeated, and still sure
    /// not to expire, since the `Remove` that closes it is on its way and
    /// no fault left can lose, hold or stop it.
    Closing,
}

impl Session {
    /// The clock the service judges the session by, if it can expire.
    pub fn clock(self) -> Option<Clk> {
        match self {
            Session::Live(c) => Some(c),
            Session::Kept | Session::Closing => None,
        }
    }
}

/// A live session hashes as its clock alone, as the `Option<Clk>` it
/// replaced did, so that fingerprints (and with them the symmetry
/// representatives and zone counts) of worlds without a kept session stay
/// what they were.
impl std::hash::Hash for Session {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            Session::Live(c) => c.hash(h),
            Session::Kept => u64::MAX.hash(h),
            Session::Closing => (u64::MAX - 1).hash(h),
        }
    }
}

/// The consensus-backed lock service (ZooKeeper or etcd semantics):
/// linearizable, nothing lost on leader change, sessions and leases judged
/// on the leader's monotonic clock (clock jumps do not reach it).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Coord {
    /// Revision / zxid: bumped by every change.
    pub rev: u16,
    /// Per client: its session (lease), if it has one.
    pub sessions: Vec<Option<Session>>,
    /// Lock entries, in creation order.
    pub entries: Vec<CoordEntry>,
    /// Watches set: (watcher, watched entry's rev).
    pub watches: Vec<(u8, u16)>,
    /// ZooKeeper: the lock's parent node's `cversion`, bumped by every
    /// child created or deleted; the next sequential child's suffix. Back
    /// to 0 when the empty container parent is reaped and made again.
    #[serde(default, skip_serializing_if = "is_zero16")]
    pub cversion: u16,
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct World {
    pub clients: Vec<Client>,
    pub redis: Vec<RedisNode>,
    /// Messages in flight, kept sorted so equal worlds compare equal.
    pub net: Vec<Msg>,
    pub resource: Resource,
    pub faults_left: Budgets,
    pub ghost: Ghost,
    /// The consensus service (empty for the Redis protocols).
    pub coord: Coord,
}

impl World {
    /// Every lock value the world still carries: on a server (its key, its
    /// replication backlog), in a message, or kept alive by a watchdog.
    pub fn vals(&self) -> Vec<Val> {
        let mut v = Vec::new();
        for r in &self.redis {
            v.extend(r.lock.map(|e| e.val));
            for op in &r.backlog {
                v.extend(op.kind.val());
            }
        }
        for m in &self.net {
            match m.body {
                Body::Req(cmd) => v.extend(cmd.val()),
                Body::Reply(Reply::Val(x)) => v.push(x),
                _ => {}
            }
        }
        v.extend(self.clients.iter().filter_map(|c| c.wd.map(|d| d.val)));
        v.extend(
            self.clients
                .iter()
                .filter_map(|c| c.request.and_then(Cmd::val)),
        );
        v
    }

    /// Client `c`'s values of acquisition `round` as labelled `attempt` to
    /// `to`, wherever the world carries them.
    pub fn relabel(&mut self, c: u8, round: u8, attempt: u8, to: u8) {
        let f = |v: &mut Val| {
            if v.client == c && v.round == round && v.attempt == attempt {
                v.attempt = to;
            }
        };
        for r in &mut self.redis {
            if let Some(e) = r.lock.as_mut() {
                f(&mut e.val);
            }
            for op in &mut r.backlog {
                op.kind.val_mut().into_iter().for_each(f);
            }
        }
        for m in &mut self.net {
            match &mut m.body {
                Body::Req(cmd) => cmd.val_mut().into_iter().for_each(f),
                Body::Reply(Reply::Val(x)) => f(x),
                _ => {}
            }
        }
        for cl in &mut self.clients {
            if let Some(d) = cl.wd.as_mut() {
                f(&mut d.val);
            }
            if let Some(v) = cl.request.as_mut().and_then(Cmd::val_mut) {
                f(v);
            }
        }
        self.net.sort_unstable();
    }

    /// The least attempt label for client `c`'s acquisition `round` that
    /// nothing in the world carries (see [`Val`]).
    pub fn fresh_attempt(&self, c: u8, round: u8) -> u8 {
        let used = self.vals();
        (0..=u8::MAX)
            .find(|a| {
                !used
                    .iter()
                    .any(|v| v.client == c && v.round == round && v.attempt == *a)
            })
            .unwrap_or(0)
    }
    /// The lock service grants fencing token `t`. `token_monotonic` is
    /// judged against the tokens clients have received: a grant that is
    /// not above every one of them is recorded. A token granted but never
    /// received (its reply lost, or held by `WAIT` until a failover)
    /// fences nothing, so a later grant may repeat it.
    pub fn issue_token(&mut self, t: u16) {
        let g = &mut self.ghost;
        if let Some(last) = g.last_token
            && t <= last
            && g.token_regressed.is_none()
        {
            g.token_regressed = Some((t, last));
        }
    }

    /// A client received fencing token `t` and enters with it.
    pub fn receive_token(&mut self, t: u16) {
        let g = &mut self.ghost;
        g.last_token = Some(g.last_token.map_or(t, |l| l.max(t)));
    }

    /// True when `self` and `other` differ at most in their fault budgets.
    pub fn same_but_budget(&self, other: &World) -> bool {
        self.clients == other.clients
            && self.redis == other.redis
            && self.net == other.net
            && self.resource == other.resource
            && self.ghost == other.ghost
            && self.coord == other.coord
    }

    /// Puts `m` in flight as it is (its `conn` and `seq` already set).
    pub fn push_msg(&mut self, m: Msg) {
        let at = self.net.partition_point(|x| x <= &m);
        self.net.insert(at, m);
    }

    /// Sends `m` on connection `m.conn`: under FIFO it joins the back of
    /// that connection's queue; unordered, every message is its own queue.
    pub fn send_msg(&mut self, mut m: Msg, fifo: bool) {
        m.seq = if fifo {
            self.net
                .iter()
                .filter(|x| same_queue(x, &m))
                .map(|x| x.seq + 1)
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        self.push_msg(m);
    }

    /// Takes `m` out of the network (it arrived or was lost); the messages
    /// behind it on its connection move up.
    pub fn remove_msg(&mut self, m: &Msg) -> bool {
        match self.net.iter().position(|x| x == m) {
            Some(i) => {
                let gone = self.net.remove(i);
                for x in self.net.iter_mut() {
                    if same_queue(x, &gone) && x.seq > gone.seq {
                        x.seq -= 1;
                    }
                }
                self.compact_conns();
                true
            }
            None => false,
        }
    }

    /// A loss on a TCP connection: `m` and everything sent after it on the
    /// same connection never arrive (the byte stream breaks at `m`).
    pub fn lose_msg(&mut self, m: &Msg) {
        let m = *m;
        self.net.retain(|x| !(same_queue(x, &m) && x.seq >= m.seq));
        self.compact_conns();
    }

    /// Whether `m` is at the head of its connection's queue.
    pub fn is_head(&self, m: &Msg) -> bool {
        m.seq == 0
    }

    /// Client `c` closes its connections on `chan`: replies in flight to it
    /// are discarded; requests it had sent stay in flight on the closed
    /// connection (a server still runs what reached it before the close)
    /// with nobody to read their replies.
    pub fn close_conns(&mut self, c: u8, chan: Chan) {
        let me = Node::Client(c);
        self.net.retain(|m| !(m.to == me && m.chan == chan));
        let mut next: Vec<(Node, u8)> = Vec::new();
        for m in &self.net {
            if m.from == me && m.chan == chan {
                match next.iter_mut().find(|(to, _)| *to == m.to) {
                    Some((_, k)) => *k = (*k).max(m.conn + 1),
                    None => next.push((m.to, m.conn + 1)),
                }
            }
        }
        for m in self.net.iter_mut() {
            if m.from == me && m.chan == chan && m.conn == 0 {
                let k = next.iter().find(|(to, _)| *to == m.to).map_or(1, |x| x.1);
                m.conn = k;
                m.orphan = true;
            }
            if m.from == me && m.chan == chan {
                m.orphan = true;
            }
        }
        self.net.sort_unstable();
        self.compact_conns();
    }

    /// Renumbers closed connections 1, 2, ... per (client, server, channel)
    /// in their order, so worlds that differ only in the labels of drained
    /// connections are equal.
    fn compact_conns(&mut self) {
        if self.net.iter().all(|m| m.conn <= 1) {
            return;
        }
        // (from, to, chan, old id) -> new id, from the ids in use.
        let mut used: Vec<(Node, Node, Chan, u8)> = self
            .net
            .iter()
            .filter(|m| m.conn > 0)
            .map(|m| (m.from, m.to, m.chan, m.conn))
            .collect();
        used.sort();
        used.dedup();
        let mut changed = false;
        for m in self.net.iter_mut() {
            if m.conn == 0 {
                continue;
            }
            let rank = used
                .iter()
                .filter(|(f, t, c, k)| *f == m.from && *t == m.to && *c == m.chan && *k < m.conn)
                .count() as u8
                + 1;
            if rank != m.conn {
                m.conn = rank;
                changed = true;
            }
        }
        if changed {
            self.net.sort_unstable();
        }
    }

    /// Every clock handle in the world, in a fixed order that depends only
    /// on the discrete state, with what the clock times. The engines lay
    /// clocks out in this order after every step, so equal discrete states
    /// use equal layouts.
    pub fn clocks_mut(&mut self, f: &mut dyn FnMut(&mut Clk, ClockRole)) {
        for n in self.redis.iter_mut() {
            if let Some(e) = &mut n.lock {
                f(&mut e.exp.since, ClockRole::Key);
            }
            for op in n.backlog.iter_mut() {
                f(&mut op.exp.since, ClockRole::Replication);
            }
            if let Status::Down(c) = &mut n.status {
                f(c, ClockRole::Down);
            }
        }
        for s in self.coord.sessions.iter_mut().flatten() {
            if let Session::Live(c) = s {
                f(c, ClockRole::Session);
            }
        }
        for cl in self.clients.iter_mut() {
            if let Some(p) = &mut cl.paused {
                f(p, ClockRole::Pause);
            }
            if let Some(w) = &mut cl.wait {
                f(&mut w.clk, ClockRole::Wait(w.kind));
            }
            if let Some(wd) = &mut cl.wd {
                f(&mut wd.wait.clk, ClockRole::Wait(wd.wait.kind));
            }
            if let Some(g) = &mut cl.gather {
                f(&mut g.clk, ClockRole::Wait(g.kind));
            }
            if let Some(t) = &mut cl.t1 {
                f(t, ClockRole::T1);
            }
        }
        for m in self.net.iter_mut() {
            // A reply that has reached its client's buffer has no window
            // left: its clock is not kept.
            if !m.arrived {
                f(&mut m.clk, ClockRole::Message);
            }
        }
        // The reconciler's clocks come last: at the start its timer is the
        // clock after the clients' start clocks.
        if let Some(r) = &mut self.resource.recon {
            if let Some(p) = &mut r.paused {
                f(p, ClockRole::Pause);
            }
            if let Some(w) = &mut r.wait {
                f(&mut w.clk, ClockRole::Wait(w.kind));
            }
            if let Some(d) = &mut r.damage {
                f(d, ClockRole::Damage);
            }
        }
    }

    /// Index of the Redis server clients send commands to (the primary).
    pub fn primary(&self) -> u8 {
        self.redis
            .iter()
            .position(|s| s.role == Role::Primary && !s.is_dead())
            .unwrap_or(0) as u8
    }

    /// A primary with a live replica can fail over.
    pub fn can_fail_over(&self) -> bool {
        self.redis.len() == 2
            && self
                .redis
                .iter()
                .any(|s| s.role == Role::Replica && s.is_up())
            && self
                .redis
                .iter()
                .any(|s| s.role == Role::Primary && s.is_up())
    }

    pub fn client_name(&self, c: u8) -> String {
        format!("c{}", c + 1)
    }

    pub fn server_name(&self, s: u8) -> String {
        if self.redis.len() == 1 {
            "redis".into()
        } else {
            format!("redis{}", s + 1)
        }
    }

    pub fn node_name(&self, n: Node) -> String {
        match n {
            Node::Client(c) => self.client_name(c),
            Node::Redis(s) => self.server_name(s),
            Node::Service => "service".into(),
        }
    }

    pub fn msg_text(&self, m: &Msg) -> String {
        match m.body {
            Body::Req(c) => c.text(),
            Body::Reply(r) => r.text(),
        }
    }
}

/// What a clock times (decides which constants it is ever compared with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockRole {
    /// A key's age on its server.
    Key,
    /// A write on the replication stream, since the primary ran it.
    Replication,
    /// A delayed restart.
    Down,
    /// A session or lease since its last keepalive.
    Session,
    /// A pause.
    Pause,
    /// A thread's wait.
    Wait(WaitKind),
    /// Redlock's T1.
    T1,
    /// The time since the resource was damaged, not yet flagged.
    Damage,
    /// A message in flight.
    Message,
}

/// Whether `a` and `b` travel on the same connection in the same direction.
pub fn same_queue(a: &Msg, b: &Msg) -> bool {
    a.from == b.from && a.to == b.to && a.chan == b.chan && a.conn == b.conn
}

/// Collects the events of one step when a trace is being built; costs
/// nothing in the search, where it is off.
pub struct Log {
    events: Option<Vec<Event>>,
}

impl Log {
    pub fn off() -> Log {
        Log { events: None }
    }
    pub fn on() -> Log {
        Log {
            events: Some(Vec::new()),
        }
    }
    pub fn enabled(&self) -> bool {
        self.events.is_some()
    }
    /// Records an event. Use the `ev!` macro, which builds the strings
    /// only when the log is on.
    pub fn push(&mut self, kind: EventKind, at: String, peer: Option<String>, text: String) {
        if let Some(v) = &mut self.events {
            v.push(Event {
                kind,
                at,
                peer,
                text,
            });
        }
    }
    pub fn take(self) -> Vec<Event> {
        self.events.unwrap_or_default()
    }
}

/// Records an event in a `Log`, evaluating its arguments only when the log
/// is on: `ev!(log, EventKind::Send, at, Some(peer), "SET {}", x)`.
#[macro_export]
macro_rules! ev {
    ($log:expr, $kind:expr, $at:expr, $peer:expr, $($fmt:tt)*) => {
        if $log.enabled() {
            $log.push($kind, $at, $peer, format!($($fmt)*));
        }
    };
}
