//! `queue` (article §9.3 "能不能队列化"): a single-writer queue. Operations
//! on the resource are routed to one partition, consumed by one consumer
//! at a time; the consumer group's coordinator assigns the partition with a
//! generation (epoch) and keeps the assignment alive while the consumer
//! heartbeats. A consumer that stops heartbeating (a pause) is evicted and
//! the partition is rebalanced to another consumer; the paused one does not
//! know, and when it resumes it processes its batch as a *zombie*.
//!
//! This is the same machinery as `fencing` — an exclusive assignment on a
//! heartbeated session of a linearizable coordinator, with a monotonic
//! number per assignment — and it is modelled by the same rules: the
//! generation is the token. Without a fence (the default, `--resource-check
//! none`) the zombie's write lands; an epoch fence at the sink
//! (`--resource-check read-write`, or `write` with `--resource-op
//! in-place`) turns it away.
//!
//! Its traces speak of what it is, not of the lock it is modelled by: the
//! coordinator *assigns the partition* (`ASSIGN partition`) with a
//! *generation*, consumers *heartbeat*, a silent one is *evicted from the
//! group* and the partition *rebalanced* (`locklab_traces::vocab`, applied
//! to every event, message, violation, story and diagram of its traces).

use super::{CONSENSUS_FAULTS, Fencing, Protocol, Renewal, Service};
use crate::client::Ctx;
use crate::faults::FaultKind;
use crate::params::ResourceCheck;
use crate::world::Reply;

pub struct Queue;

impl Protocol for Queue {
    fn name(&self) -> &'static str {
        "queue"
    }
    fn summary(&self) -> &'static str {
        "a single-writer queue (§9.3): one consumer per partition, rebalanced when its heartbeat stops; the generation is an epoch the sink can fence"
    }
    fn service(&self) -> Service {
        Service::Consensus
    }
    fn faults(&self) -> &'static [FaultKind] {
        CONSENSUS_FAULTS
    }
    fn issues_tokens(&self) -> bool {
        true
    }
    fn renewal(&self) -> Renewal {
        Renewal::Heartbeat
    }
    fn default_resource_check(&self) -> ResourceCheck {
        ResourceCheck::None
    }
    fn service_label(&self) -> &'static str {
        "consumer-group coordinator"
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        Fencing.start_acquire(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, s: u8, reply: Reply) {
        Fencing.on_reply(x, c, s, reply);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        Fencing.start_release(x, c);
    }
}
