//! The steps of the world. Urgent steps (a client's due step, a watchdog
//! timer, a message delivery, replication) must happen before time may
//! pass; faults may happen at any moment while their budget lasts.

use crate::world::{Msg, Node, STicks, Ticks};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// True time advances by `ticks` (only when no step is due).
    Tick { ticks: Ticks },
    /// A client's business thread takes its due step.
    Step { client: u8 },
    /// A client's watchdog timer fires.
    Watchdog { client: u8 },
    /// A message in flight arrives and is handled.
    Deliver { msg: Msg },
    /// A replica applies the next write of primary `server`'s stream.
    Replicate { server: u8 },
    /// A paused client resumes before its longest pause is over.
    Resume { client: u8 },
    /// A slow critical section finally finishes its work.
    Finish { client: u8 },
    /// Fault: a client process freezes.
    Pause { client: u8 },
    /// Fault: a client's critical-section work becomes open-ended.
    Slow { client: u8 },
    /// Fault: a message in flight is lost.
    Drop { msg: Msg },
    /// Fault: a message in flight is held back.
    Delay { msg: Msg },
    /// Fault: a wall clock jumps by `by` ticks.
    ClockJump { node: Node, by: STicks },
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
}

impl Action {
    /// Ticks this action advances true time by.
    pub fn ticks(&self) -> u64 {
        match self {
            Action::Tick { ticks } => *ticks as u64,
            _ => 0,
        }
    }
}
