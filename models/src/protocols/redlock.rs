//! `redlock`, as the "Distributed Locks with Redis" page specifies it and
//! the reference clients (redlock-rb, redlock-py, node-redlock) implement it
//! (docs/semantics.md §2):
//!
//! 1. take T1 from the client's own wall clock;
//! 2. send `SET lock v NX PX ttl` to all N independent instances (the page's
//!    recommended multiplexing; redsync does the same), each request with a
//!    timeout;
//! 3. elapsed = now - T1, by the same wall clock; the lock is acquired iff a
//!    quorum (N/2+1) said OK and validity = TTL - elapsed - drift > 0;
//! 4. otherwise unlock all N instances (even those that said no) by
//!    compare-and-delete, and retry after a backoff;
//! 5. release = compare-and-delete on all N.
//!
//! The client reads its replies together once all are in (or at its
//! timeout), as an event loop reading every ready socket would; unlock
//! results are not awaited (the reference clients ignore them).
//!
//! The client believes its validity as measured by its wall clock, so a
//! backward jump of that clock stretches it past the keys' real TTL. Before
//! writing, the client checks that validity; the write is a separate step,
//! so a pause can still fall between the check and the write (Kleppmann).
//! Retries of one acquisition reuse its value, as redsync does.

use super::{Protocol, Service};
use crate::client::{Ctx, ignore, take_replies};
use crate::ev;
use crate::faults::FaultKind;
use crate::world::{Chan, Cmd, Phase, Reply, Vote};
use locklab_traces::EventKind;

/// Every fault kind applies: Redis instances restart, fail over and jump
/// their clocks, clients pause, slow down and crash, messages are lost and delayed.
pub const FAULTS: &[FaultKind] = &FaultKind::LOCK_SIDE;

/// Acquire step 0: waiting for the SET replies.
const VOTING: u8 = 0;

pub struct Redlock;

/// Sends `SET NX PX` to every instance; the client then waits for a reply
/// from each one it could reach. Returns false if none was reachable.
fn ask_all(x: &mut Ctx, c: u8) -> bool {
    let cmd = Cmd::SetNxPx {
        val: x.val(c),
        ttl: x.m.params.ttl,
    };
    let n = x.w.redis.len();
    let mut votes = vec![Vote::No; n];
    for (s, v) in votes.iter_mut().enumerate() {
        if x.send(c, s as u8, Chan::Main, cmd) {
            *v = Vote::Pending;
        }
    }
    let any = votes.contains(&Vote::Pending);
    x.w.clients[c as usize].votes = votes;
    x.await_reply(c, Phase::Acquire(VOTING));
    any
}

/// Compare-and-delete on every instance, without waiting for the answers
/// (redlock-rb, redlock-py and node-redlock ignore unlock results).
fn unlock_all(x: &mut Ctx, c: u8) {
    let val = x.val(c);
    for s in 0..x.w.redis.len() {
        x.notify(c, s as u8, Cmd::Cad { val });
    }
}

/// Is the validity still positive by client `c`'s own clock? validity =
/// TTL − elapsed − drift > 0, elapsed measured since T1 on its wall clock
/// (so shifted by any jump of that clock since), that is: the real time
/// since T1 is below TTL − drift − shift, as that clock measures it (a
/// drift of its rate widens the answer's band; a monotonic clock drifts
/// too).
fn valid(x: &mut Ctx, c: u8) -> bool {
    let cl = &x.w.clients[c as usize];
    let Some(t1) = cl.t1 else { return false };
    let bound = x.m.params.ttl - x.m.params.drift_allowance() - cl.t1_shift;
    let band = x.m.params.band(bound);
    x.t.ask_band(t1, bound, band, true)
}

/// Every vote is in (or timed out): acquired, or unlock everything and retry.
fn decide(x: &mut Ctx, c: u8) {
    let q = x.m.params.quorum as usize;
    let (yes, n) = {
        let cl = &x.w.clients[c as usize];
        (
            cl.votes.iter().filter(|v| **v == Vote::Yes).count(),
            cl.votes.len(),
        )
    };
    x.w.clients[c as usize].votes.clear();
    let in_time = yes >= q && valid(x, c);
    let allowance = crate::units::show(x.m.params.drift_allowance());
    if in_time {
        ev!(
            x.log,
            EventKind::Note,
            x.w.client_name(c),
            None,
            "{yes} of {n} instances said OK (quorum {q}), in time by its own clock{} (validity = TTL - elapsed - {allowance} > 0)",
            x.t.drift_note()
        );
        x.enter_cs(c, None);
    } else {
        let why = if yes >= q {
            "validity used up by its own clock".to_string()
        } else {
            format!("{yes} of {n} OK (quorum {q})")
        };
        ev!(
            x.log,
            EventKind::Retry,
            x.w.client_name(c),
            None,
            "fails: {why}; unlocks every instance"
        );
        x.w.clients[c as usize].t1 = None;
        x.w.clients[c as usize].t1_shift = 0;
        unlock_all(x, c);
        x.retry(c, "the attempt failed");
    }
}

impl Protocol for Redlock {
    fn name(&self) -> &'static str {
        "redlock"
    }
    fn summary(&self) -> &'static str {
        "SET NX PX on N independent instances; holds with a quorum within validity = TTL - elapsed - drift"
    }
    fn service(&self) -> Service {
        Service::Instances
    }
    fn faults(&self) -> &'static [FaultKind] {
        FAULTS
    }
    fn uses_client_clock(&self) -> bool {
        true
    }
    fn checks_validity(&self) -> bool {
        true
    }
    fn gathers_replies(&self) -> bool {
        true
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        // T1: elapsed counts from here, on the client's wall clock.
        let t1 = x.t.reset();
        x.w.clients[c as usize].t1 = Some(t1);
        x.w.clients[c as usize].t1_shift = 0;
        if !ask_all(x, c) {
            decide(x, c);
        }
    }
    fn gather(&self, x: &mut Ctx, c: u8) {
        for (s, r) in take_replies(x, c) {
            let v = &mut x.w.clients[c as usize].votes[s as usize];
            if *v == Vote::Pending {
                *v = if r == Reply::Ok { Vote::Yes } else { Vote::No };
            }
        }
        if x.w.clients[c as usize].votes.contains(&Vote::Pending) {
            // The timeout fired first: whoever has not answered counts as no.
            ev!(
                x.log,
                EventKind::Timeout,
                x.w.client_name(c),
                None,
                "gives up waiting for the instances that have not answered"
            );
            x.abandon(c, Chan::Main);
            for v in x.w.clients[c as usize].votes.iter_mut() {
                if *v == Vote::Pending {
                    *v = Vote::No;
                }
            }
        }
        decide(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        ignore(x, c, reply);
    }
    fn on_timeout(&self, x: &mut Ctx, c: u8) {
        self.gather(x, c);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        unlock_all(x, c);
        x.finish_round(c);
    }
    fn check_before_write(&self, x: &mut Ctx, c: u8) {
        if valid(x, c) {
            ev!(
                x.log,
                EventKind::Note,
                x.w.client_name(c),
                None,
                "checks its validity: still positive by its own clock{}; the write comes next",
                x.t.drift_note()
            );
            x.due(c, Phase::Write);
        } else {
            ev!(
                x.log,
                EventKind::Note,
                x.w.client_name(c),
                None,
                "checks its validity: used up by its own clock; abandons the write"
            );
            x.leave(c);
        }
    }
}
