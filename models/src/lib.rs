//! locklab's model of distributed locks.
//!
//! * [`world`]: the state — clients with their own beliefs, Redis servers,
//!   messages in flight, the resource, fault budgets, ghost facts.
//! * [`redis`]: what a Redis server does with each command, with time, with
//!   restarts, replication and failover.
//! * [`client`]: the program around the lock every client runs, and the
//!   operations protocols are written with.
//! * [`protocols`]: one file per lock protocol.
//! * [`faults`]: every fault kind, when it may strike and what it does.
//! * [`resource`]: the protected counter and its fencing-token checks.
//! * [`presets`]: the Redlock client libraries and their behaviours.
//! * [`invariants`]: the safety properties.
//! * [`model`]: the transition function.
//! * `explore` (with the default feature `explore`): the same transitions as
//!   a `stateright::Model` over zone states, for stateright's Explorer.
//! * [`canon`], [`search`]: symmetry reduction and the shortest-path search.
//! * [`trace`], [`view`]: trace files, built and validated by replay.

pub mod action;
pub mod canon;
pub mod client;
pub mod coord;
pub mod engine;
#[cfg(feature = "explore")]
pub mod explore;
pub mod faults;
pub mod invariants;
pub mod model;
pub mod pack;
pub mod params;
pub mod presets;
pub mod protocols;
pub mod redis;
pub mod resource;
pub mod search;
pub mod swarm;
pub mod time;
pub mod trace;
pub mod transfer;
pub mod units;
pub mod view;
pub mod witness;
pub mod world;

pub use action::Action;
pub use faults::{Budgets, FaultKind};
pub use invariants::Invariant;
pub use model::LockModel;
pub use params::{ConfigError, Params};
pub use protocols::Protocol;
pub use world::World;
