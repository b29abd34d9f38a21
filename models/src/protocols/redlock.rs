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

use super::{Protocol, Service, redis_client as rc};
use crate::client::{Ctx, arrived, ignore, take_replies};
use crate::ev;
use crate::faults::FaultKind;
use crate::presets::{Decide, LockValue, Release, Requests, UnlockOnFailure};
use crate::time::{Clk, Micros};
use crate::world::{Chan, Cmd, Node, Phase, Reply, Vote, World};
use locklab_traces::EventKind;

/// Every fault kind applies: Redis instances restart, fail over and jump
/// their clocks, clients pause, slow down and crash, messages are lost and delayed.
pub const FAULTS: &[FaultKind] = &FaultKind::LOCK_SIDE;

/// Acquire step 0: waiting for the SET replies.
const VOTING: u8 = 0;
/// Acquire step 1: a failed attempt's unlocks, awaited (`--unlock-on-failure await`).
const UNLOCKING: u8 = 1;

pub struct Redlock;

/// The request of a round: `SET NX PX` while voting, compare-and-delete
/// when unlocking or releasing.
fn request(x: &Ctx, c: u8, phase: Phase) -> Cmd {
    let val = x.val(c);
    match phase {
        Phase::Acquire(VOTING) => rc::acquire_cmd(x, val),
        _ => rc::release_cmd(x, val),
    }
}

/// Starts a round of `phase`'s request to every instance.
fn begin(x: &mut Ctx, c: u8, phase: Phase) -> bool {
    let n = x.w.redis.len();
    x.w.clients[c as usize].votes = vec![Vote::Unsent; n];
    send_next(x, c, phase)
}

/// Sends the round's request to the instances not asked yet: all of them
/// at once, or the next one that can be reached (`--requests
/// sequential`). An instance that is down refuses the connection: a no.
/// The client then waits for the answers, until its request timeout.
/// Returns false if no request is in flight.
fn send_next(x: &mut Ctx, c: u8, phase: Phase) -> bool {
    let cmd = request(x, c, phase);
    let one_by_one = x.m.params.requests == Requests::Sequential;
    for s in 0..x.w.redis.len() {
        if x.w.clients[c as usize].votes[s] != Vote::Unsent {
            continue;
        }
        let sent = x.send(c, s as u8, Chan::Main, cmd);
        x.w.clients[c as usize].votes[s] = if sent { Vote::Pending } else { Vote::No };
        if sent && one_by_one {
            break;
        }
    }
    let any = x.w.clients[c as usize].votes.contains(&Vote::Pending);
    if any {
        x.await_reply(c, phase);
    }
    any
}

/// The transport's re-send of the round's request to every instance that
/// has not answered (`--transport-retries`): the same command on a new
/// connection. An instance that is down refuses it: a no. Returns false if
/// no request is in flight.
fn resend_pending(x: &mut Ctx, c: u8) -> bool {
    let cmd = request(x, c, x.phase(c));
    let k = x.w.clients[c as usize].resent + 1;
    for s in 0..x.w.redis.len() {
        if x.w.clients[c as usize].votes[s] != Vote::Pending {
            continue;
        }
        let sent = x.resend(c, Node::Redis(s as u8), Chan::Main, cmd, k);
        if !sent {
            x.w.clients[c as usize].votes[s] = Vote::No;
        }
    }
    x.w.clients[c as usize].resent = k;
    let any = x.w.clients[c as usize].votes.contains(&Vote::Pending);
    if any {
        let phase = x.phase(c);
        x.await_reply(c, phase);
    }
    any
}

/// Compare-and-delete on every instance, without waiting for the answers
/// (the page's algorithm as locklab models it by default).
fn unlock_all(x: &mut Ctx, c: u8) {
    let cmd = rc::release_cmd(x, x.val(c));
    for s in 0..x.w.redis.len() {
        x.notify(c, s as u8, cmd);
    }
}

/// A new attempt gets a label that no trace of an earlier one carries.
/// Where the wire value is the attempt's own (`--value per-attempt`) the
/// earlier attempts keep theirs and the new one takes the least unused
/// label. Otherwise every earlier attempt sends the same bytes, and all
/// the model needs to know of a request is whether it comes from the
/// current attempt: the earlier ones are all labelled 1 and the current
/// one 0 (fewer states, same behaviours).
fn new_attempt(x: &mut Ctx, c: u8) {
    let round = x.w.clients[c as usize].round;
    let label = if x.m.params.value == LockValue::PerAttempt {
        x.w.fresh_attempt(c, round)
    } else {
        let current = x.w.clients[c as usize].attempt;
        if current == 0 && x.w.vals().iter().any(|v| v.client == c && v.round == round) {
            x.w.relabel(c, round, 0, 1);
        }
        0
    };
    x.w.clients[c as usize].attempt = label;
}

/// Yes and no votes so far.
fn tally(x: &Ctx, c: u8) -> (usize, usize) {
    let v = &x.w.clients[c as usize].votes;
    (
        v.iter().filter(|v| **v == Vote::Yes).count(),
        v.iter().filter(|v| **v == Vote::No).count(),
    )
}

/// Whether a voting client that decides at the first quorum has one:
/// either way (`--decide first-quorum`), or of OKs (`first-yes-quorum`).
fn settled(m: &crate::model::LockModel, votes: &[Vote]) -> bool {
    let q = m.params.quorum as usize;
    let yes = votes.iter().filter(|v| **v == Vote::Yes).count();
    let no = votes.iter().filter(|v| **v == Vote::No).count();
    match m.params.decide {
        Decide::AllReplies => false,
        Decide::FirstQuorum => yes >= q || no >= q,
        Decide::FirstYesQuorum => yes >= q,
    }
}

/// The validity's end as client `c`'s clock measures it: the real time
/// since T1 below which its clock can still say validity > 0, and the
/// nominal bound with its band. `None` before T1.
fn validity_end(
    m: &crate::model::LockModel,
    w: &World,
    c: u8,
) -> Option<(Clk, Micros, (Micros, Micros))> {
    let cl = &w.clients[c as usize];
    let t1 = cl.t1?;
    let bound = m.params.ttl - m.params.drift_allowance() - cl.t1_shift;
    Some((t1, bound, m.params.band(bound)))
}

/// Is the validity still positive by client `c`'s own clock? validity =
/// TTL − elapsed − drift > 0, elapsed measured since T1 on its wall clock
/// (so shifted by any jump of that clock since), that is: the real time
/// since T1 is below TTL − drift − shift, as that clock measures it (a
/// drift of its rate widens the answer's band; a monotonic clock drifts
/// too).
fn valid(x: &mut Ctx, c: u8) -> bool {
    let Some((t1, bound, band)) = validity_end(x.m, x.w, c) else {
        return false;
    };
    x.t.ask_band(t1, bound, band, true)
}

/// Every vote is in (or timed out, or a quorum settled it): acquired, or
/// clean up as the client does and retry.
fn decide(x: &mut Ctx, c: u8) {
    let q = x.m.params.quorum as usize;
    let (yes, _) = tally(x, c);
    let n = x.w.clients[c as usize].votes.len();
    x.w.clients[c as usize].votes.clear();
    let checks = x.m.params.validity_check;
    let in_time = yes >= q && (!checks || valid(x, c));
    let allowance = crate::units::show(x.m.params.drift_allowance());
    if in_time {
        if checks {
            ev!(
                x.log,
                EventKind::Note,
                x.w.client_name(c),
                None,
                "{yes} of {n} instances said OK (quorum {q}), in time by its own clock{} (validity = TTL - elapsed - {allowance} > 0)",
                x.t.drift_note()
            );
        } else {
            ev!(
                x.log,
                EventKind::Note,
                x.w.client_name(c),
                None,
                "{yes} of {n} instances said OK (quorum {q}); it does not check how much validity is left"
            );
        }
        x.enter_cs(c, None);
        return;
    }
    let why = if yes >= q {
        "validity used up by its own clock".to_string()
    } else {
        format!("{yes} of {n} OK (quorum {q})")
    };
    x.w.clients[c as usize].t1 = None;
    x.w.clients[c as usize].t1_shift = 0;
    match x.m.params.unlock_on_failure {
        UnlockOnFailure::FireAndForget => {
            ev!(
                x.log,
                EventKind::Retry,
                x.w.client_name(c),
                None,
                "fails: {why}; unlocks every instance"
            );
            unlock_all(x, c);
            x.retry(c, "the attempt failed");
        }
        UnlockOnFailure::None => x.retry(
            c,
            &format!("fails: {why}; leaves its keys to expire (no unlock between attempts)"),
        ),
        UnlockOnFailure::Await => {
            ev!(
                x.log,
                EventKind::Retry,
                x.w.client_name(c),
                None,
                "fails: {why}; unlocks every instance and waits for the answers"
            );
            if !begin(x, c, Phase::Acquire(UNLOCKING)) {
                x.retry(c, "the attempt failed");
            }
        }
    }
}

/// The round in flight is over: what it was for comes next.
fn round_over(x: &mut Ctx, c: u8) {
    match x.phase(c) {
        Phase::Acquire(VOTING) => decide(x, c),
        Phase::Acquire(_) => {
            x.w.clients[c as usize].votes.clear();
            x.retry(c, "the attempt failed")
        }
        _ => {
            x.w.clients[c as usize].votes.clear();
            x.finish_round(c)
        }
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
    fn validity(
        &self,
        m: &crate::model::LockModel,
        w: &World,
        c: u8,
    ) -> Option<crate::invariants::Below> {
        if !m.params.validity_check {
            return None;
        }
        // Its clock may say "still valid" up to the top of the band.
        validity_end(m, w, c).map(|(clk, _, (_, hi))| crate::invariants::Below { clk, hi })
    }
    fn still_valid(&self, x: &mut Ctx, c: u8) -> Option<bool> {
        x.m.params.validity_check.then(|| valid(x, c))
    }
    fn gathers_replies(&self) -> bool {
        true
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        new_attempt(x, c);
        // T1: elapsed counts from here, on the client's wall clock.
        let t1 = x.t.reset();
        x.w.clients[c as usize].t1 = Some(t1);
        x.w.clients[c as usize].t1_shift = 0;
        if !begin(x, c, Phase::Acquire(VOTING)) {
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
        let voting = x.phase(c) == Phase::Acquire(VOTING);
        let early = voting && settled(x.m, &x.w.clients[c as usize].votes);
        if x.w.clients[c as usize].votes.contains(&Vote::Pending) {
            if early {
                ev!(
                    x.log,
                    EventKind::Note,
                    x.w.client_name(c),
                    None,
                    "{}",
                    if x.m.params.decide == Decide::FirstYesQuorum {
                        "has a quorum of OKs: decides without the other answers"
                    } else {
                        "has a quorum either way: decides without the other answers"
                    }
                );
            } else if x.may_resend(c) {
                // The timeout fired first, and the transport re-sends every
                // request that has not been answered (each instance's own
                // connection, all sent and timed out together) on a new
                // connection, with a fresh timeout.
                ev!(
                    x.log,
                    EventKind::Timeout,
                    x.w.client_name(c),
                    None,
                    "times out waiting for the instances that have not answered"
                );
                x.abandon(c, Chan::Main);
                if resend_pending(x, c) {
                    return;
                }
            } else {
                // The timeout fired first: whoever has not answered counts as no.
                ev!(
                    x.log,
                    EventKind::Timeout,
                    x.w.client_name(c),
                    None,
                    "gives up waiting for the instances that have not answered"
                );
            }
            x.abandon(c, Chan::Main);
            for v in x.w.clients[c as usize].votes.iter_mut() {
                if *v == Vote::Pending {
                    *v = Vote::No;
                }
            }
        }
        let early = voting && settled(x.m, &x.w.clients[c as usize].votes);
        if !early && send_next(x, c, x.phase(c)) {
            return;
        }
        round_over(x, c);
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        ignore(x, c, reply);
    }
    fn on_timeout(&self, x: &mut Ctx, c: u8) {
        self.gather(x, c);
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        match x.m.params.release {
            Release::FireAndForget => {
                unlock_all(x, c);
                x.finish_round(c);
            }
            Release::Await => {
                if !begin(x, c, Phase::Release(0)) {
                    x.finish_round(c);
                }
            }
        }
    }
    fn replies_ready(&self, m: &crate::model::LockModel, w: &World, c: u8) -> bool {
        let cl = &w.clients[c as usize];
        if cl.phase == Phase::Acquire(VOTING) && m.params.decide != Decide::AllReplies {
            // The answers that have arrived, counted with those already read.
            let mut votes = cl.votes.clone();
            for msg in arrived(w, c) {
                if let (crate::world::Node::Redis(s), crate::world::Body::Reply(r)) =
                    (msg.from, msg.body)
                    && votes[s as usize] == Vote::Pending
                {
                    votes[s as usize] = if r == Reply::Ok { Vote::Yes } else { Vote::No };
                }
            }
            if settled(m, &votes) {
                return true;
            }
        }
        crate::client::all_arrived(w, c)
    }
    fn check_before_write(&self, x: &mut Ctx, c: u8) {
        if !x.m.params.validity_check {
            crate::resource::write(x, c);
            return;
        }
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
