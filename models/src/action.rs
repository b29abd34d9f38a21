//! The steps of the world. When a step may and must happen is not part of
//! the step: each pending event has a window on its clock (see
//! `LockModel::window`), and the engine that drives the model decides the
//! times. Faults may happen at any moment while their budget lasts.

use crate::time::Micros;
use crate::world::{Msg, Node};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// A client's business thread takes its next step.
    Step { client: u8 },
    /// A client's watchdog (or heartbeat) takes its next step.
    Watchdog { client: u8 },
    /// A client that gathers replies reads them all: the last awaited one
    /// has arrived (each arrives unseen within its latency).
    Gather { client: u8 },
    /// A message in flight arrives and is handled.
    Deliver { msg: Msg },
    /// A replica applies the next write of primary `server`'s stream.
    Replicate { server: u8 },
    /// A paused client resumes.
    Resume { client: u8 },
    /// A Redis server kept down by a delayed restart comes back.
    ComeUp { server: u8 },
    /// The consensus service expires a client's session (lease).
    SessionExpires { client: u8 },
    /// ZooKeeper reaps the lock's empty container parent node
    /// (`--token sequence`).
    Reap,
    /// Fault: a client process freezes.
    Pause { client: u8 },
    /// Fault: a client's critical-section work runs past its maximum.
    Slow { client: u8 },
    /// Fault: a message in flight is lost.
    Drop { msg: Msg },
    /// Fault: a message in flight is held back past the longest latency.
    Delay { msg: Msg },
    /// Fault: a wall clock jumps by `by` microseconds.
    ClockJump { node: Node, by: Micros },
    /// Fault: a client's business thread dies.
    Crash { client: u8 },
    /// Fault: a Redis server restarts empty.
    Restart { server: u8 },
    /// Fault: a primary dies and its replica is promoted.
    Failover { server: u8 },
    /// An unfenced writer (no lock, no token) takes its next step.
    Writer { writer: u8 },
    /// Fault: the resource restarts (a highest token kept in memory is lost).
    ResourceRestart,
    /// Fault: a client's write that landed is delivered again.
    Duplicate { client: u8 },
    /// The reconciler (`--reconcile`) runs: it compares the resource with
    /// the ledger and flags the damage it finds.
    Reconcile,
    /// Fault (a `pause`): the reconciler's process freezes.
    PauseReconciler,
    /// The paused reconciler resumes.
    ResumeReconciler,
    /// The detection bound passes with the damage still unflagged (an
    /// observer's step for `detected_within`; nothing in the world acts).
    DetectionLate,
}
