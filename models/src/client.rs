//! The client runtime every protocol shares: the program around the lock
//! (start, critical section, write, release, next acquisition), the
//! operations a protocol's rules are written with (`Ctx`), and what time,
//! pauses and crashes do to a client.
//!
//! A client's program, whatever the protocol:
//!
//! ```text
//! Idle --start--> Acquire(k)... --granted--> Work (read done) --work done--> [Write] --> Leave
//!   ^                 |                                                                   |
//!   +---- retry ------+                  Done <-- last acquisition -- Release(k)... <----+
//! ```
//!
//! Each arrow is one step: a pause, crash or clock jump can fall between
//! any two of them, as Kleppmann insists ("GC can pause a running thread at
//! any point").

use crate::ev;
use crate::model::LockModel;
use crate::params::{Handoff, Reenter};
use crate::time::{Micros, TimeCtx};
use crate::world::{
    Body, Chan, Cmd, Log, Msg, Node, Phase, Reply, Val, Wait, WaitKind, WdState, World,
};
use locklab_traces::EventKind;

/// What a protocol's rules act on: the world, the model's parameters, the
/// event log of the step being taken, and the step's time (clocks armed,
/// timing questions asked).
pub struct Ctx<'a, 't> {
    pub m: &'a LockModel,
    pub w: &'a mut World,
    pub log: &'a mut Log,
    pub t: &'a mut TimeCtx<'t>,
}

impl Ctx<'_, '_> {
    pub fn phase(&self, c: u8) -> Phase {
        self.w.clients[c as usize].phase
    }

    /// The lock value of client `c`'s current acquisition.
    pub fn val(&self, c: u8) -> Val {
        self.w.clients[c as usize].val(c)
    }

    /// A wait of `kind` starting now.
    pub fn wait(&mut self, kind: WaitKind) -> Wait {
        Wait {
            kind,
            late: false,
            clk: self.t.reset(),
        }
    }

    /// Client `c`'s business thread next waits for `kind`, from now. A
    /// thread that no longer waits for a reply forgets the request it kept
    /// for the transport's re-sends.
    pub fn set_wait(&mut self, c: u8, kind: WaitKind) {
        let w = self.wait(kind);
        let cl = &mut self.w.clients[c as usize];
        cl.wait = Some(w);
        if kind != WaitKind::Reply {
            cl.resent = 0;
            cl.request = None;
        }
    }

    /// Sends `cmd` from client `c` to server `s` on `chan`. A server that is
    /// down refuses the connection: the request never leaves (returns false),
    /// and the client's timeout tells it.
    pub fn send(&mut self, c: u8, s: u8, chan: Chan, cmd: Cmd) -> bool {
        self.send_to(c, Node::Redis(s), chan, cmd)
    }

    /// Sends `cmd` from client `c` to any node (a Redis server or the
    /// consensus service, which is always up).
    pub fn send_to(&mut self, c: u8, to: Node, chan: Chan, cmd: Cmd) -> bool {
        self.keep_request(c, to, chan, cmd);
        self.transmit(c, to, chan, cmd)
    }

    /// A request the business thread sends to Redis and will wait for is
    /// kept while it waits, for the transport to send again on a timeout
    /// (`--transport-retries`; not kept when there are none, so that the
    /// states are today's). It is a fresh request: no re-sends yet.
    fn keep_request(&mut self, c: u8, to: Node, chan: Chan, cmd: Cmd) {
        if self.m.params.transport_retries == 0
            || chan != Chan::Main
            || !matches!(to, Node::Redis(_))
        {
            return;
        }
        let gathers = self.m.proto.gathers_replies();
        let cl = &mut self.w.clients[c as usize];
        cl.resent = 0;
        cl.request = (!gathers).then_some(cmd);
    }

    /// Whether the transport re-sends client `c`'s request(s) that timed
    /// out on the business thread's connection: some re-sends are left.
    pub fn may_resend(&self, c: u8) -> bool {
        self.w.clients[c as usize].resent < self.m.params.transport_retries
    }

    /// The transport's re-send of `cmd` that timed out (its connection
    /// already closed), to `to` on a new connection: re-send `k` of
    /// `--transport-retries`. Returns whether it left (a server that is down
    /// refuses the connection).
    pub fn resend(&mut self, c: u8, to: Node, chan: Chan, cmd: Cmd, k: u8) -> bool {
        ev!(
            self.log,
            EventKind::Retry,
            self.w.client_name(c),
            Some(self.w.node_name(to)),
            "re-sends {} on a new connection (transport retry {k} of {}); the copy that timed out may still run",
            cmd.text(),
            self.m.params.transport_retries
        );
        self.transmit(c, to, chan, cmd)
    }

    /// The business thread's request that timed out (its connection
    /// already closed) goes out again on a new connection to the primary,
    /// with a fresh request timeout, if the transport has re-sends left
    /// (`--transport-retries`). Returns false when the library is to see
    /// the failure.
    pub fn resend_request(&mut self, c: u8) -> bool {
        let Some(cmd) = self.w.clients[c as usize].request else {
            return false;
        };
        if !self.may_resend(c) {
            return false;
        }
        let k = self.w.clients[c as usize].resent + 1;
        let s = self.w.primary();
        self.resend(c, Node::Redis(s), Chan::Main, cmd, k);
        let cl = &mut self.w.clients[c as usize];
        cl.resent = k;
        cl.request = Some(cmd);
        self.set_wait(c, WaitKind::Reply);
        true
    }

    /// Puts a request from client `c` on the network, unless a Redis
    /// server that is down refuses the connection.
    fn transmit(&mut self, c: u8, to: Node, chan: Chan, cmd: Cmd) -> bool {
        if let Node::Redis(s) = to
            && !self.w.redis[s as usize].is_up()
        {
            ev!(
                self.log,
                EventKind::Note,
                self.w.client_name(c),
                Some(self.w.node_name(to)),
                "cannot reach {} (down): {}",
                self.w.node_name(to),
                cmd.text()
            );
            return false;
        }
        self.post(c, to, chan, cmd, false);
        true
    }

    /// Puts a message in flight from now, on its sender's current
    /// connection.
    pub fn put(&mut self, from: Node, to: Node, chan: Chan, conn: u8, body: Body, orphan: bool) {
        let m = self.msg(from, to, chan, conn, body, orphan);
        self.emit(m);
    }

    /// Puts a server's reply on the network, held back until `repl_wait`
    /// more writes have reached the replica (`WAIT`; 0: none).
    pub fn put_waiting(
        &mut self,
        from: Node,
        to: Node,
        chan: Chan,
        conn: u8,
        body: Body,
        repl_wait: u8,
    ) {
        let m = self.msg(from, to, chan, conn, body, false);
        self.emit(Msg { repl_wait, ..m });
    }

    /// A message sent now.
    fn msg(&mut self, from: Node, to: Node, chan: Chan, conn: u8, body: Body, orphan: bool) -> Msg {
        Msg {
            from,
            to,
            chan,
            conn,
            seq: 0,
            body,
            held: false,
            late: false,
            arrived: false,
            orphan,
            repl_wait: 0,
            clk: self.t.reset(),
        }
    }

    fn emit(&mut self, m: Msg) {
        let fifo = self.m.params.network == crate::params::Network::Fifo;
        self.w.send_msg(m, fifo);
    }

    /// Puts a request on client `c`'s current connection to `to`.
    /// `no_reply`: the client will not read the answer.
    fn post(&mut self, c: u8, to: Node, chan: Chan, cmd: Cmd, no_reply: bool) {
        ev!(
            self.log,
            EventKind::Send,
            self.w.client_name(c),
            Some(self.w.node_name(to)),
            "{}",
            cmd.text()
        );
        self.put(Node::Client(c), to, chan, 0, Body::Req(cmd), no_reply);
    }

    /// Sends `cmd` and expects no answer: the client does not wait for the
    /// reply (reference Redlock clients ignore unlock results). It travels
    /// on the client's current connection, ahead of whatever it sends next.
    pub fn notify(&mut self, c: u8, s: u8, cmd: Cmd) -> bool {
        if !self.w.redis[s as usize].is_up() {
            return self.transmit(c, Node::Redis(s), Chan::Main, cmd);
        }
        self.post(c, Node::Redis(s), Chan::Main, cmd, true);
        true
    }

    /// Client `c` now waits in `phase` for replies, until its request timeout.
    pub fn await_reply(&mut self, c: u8, phase: Phase) {
        self.w.clients[c as usize].phase = phase;
        self.set_wait(c, WaitKind::Reply);
    }

    /// Client `c` stops waiting for anything on `chan`: requests still in
    /// flight will run but their replies go nowhere, replies in flight are
    /// discarded (the connection is closed).
    pub fn abandon(&mut self, c: u8, chan: Chan) {
        if self.m.params.network == crate::params::Network::Fifo {
            self.w.close_conns(c, chan);
            return;
        }
        let me = Node::Client(c);
        self.w.net.retain(|m| !(m.to == me && m.chan == chan));
        let mut changed = false;
        for m in self.w.net.iter_mut() {
            if m.from == me && m.chan == chan && !m.orphan {
                m.orphan = true;
                changed = true;
            }
        }
        if changed {
            self.w.net.sort_unstable();
        }
    }

    /// Client `c`'s request timed out (`what` says so and what follows):
    /// it closes the connection, whatever is still in flight on it.
    pub fn timed_out(&mut self, c: u8, what: &str) {
        ev!(
            self.log,
            EventKind::Timeout,
            self.w.client_name(c),
            None,
            "{what}"
        );
        self.abandon(c, Chan::Main);
    }

    /// The acquisition failed; try again after the retry backoff.
    pub fn retry(&mut self, c: u8, why: &str) {
        self.w.clients[c as usize].phase = Phase::Idle;
        self.back_off(c, why);
    }

    /// Client `c` waits `--retry` or more before its next try, `why` says.
    pub fn back_off(&mut self, c: u8, why: &str) {
        ev!(
            self.log,
            EventKind::Retry,
            self.w.client_name(c),
            None,
            "{why}; retries after a backoff of at least {}",
            crate::units::show(self.m.params.retry)
        );
        self.set_wait(c, WaitKind::Backoff);
    }

    /// The lock is granted (with a fencing token, if the protocol has them):
    /// client `c` enters its critical section and reads the resource.
    pub fn enter_cs(&mut self, c: u8, token: Option<u16>) {
        {
            let cl = &mut self.w.clients[c as usize];
            cl.phase = Phase::Work;
            cl.token = token;
        }
        if let Some(t) = token {
            self.w.receive_token(t);
        }
        // An async hand-off returns at once: the task does the work.
        let kind = if self.m.params.handoff == Handoff::Async {
            WaitKind::Step
        } else {
            WaitKind::Work
        };
        self.set_wait(c, kind);
        let tok = token
            .map(|t| format!(" with token {t}"))
            .unwrap_or_default();
        ev!(
            self.log,
            EventKind::Acquire,
            self.w.client_name(c),
            None,
            "now believes it holds the lock{tok}"
        );
        if self.m.proto.renewal() == crate::protocols::Renewal::Watchdog {
            let val = self.val(c);
            let wait = self.wait(WaitKind::Renewal);
            self.w.clients[c as usize].wd = Some(crate::world::Watchdog::new(val, wait));
        }
        if !crate::resource::read(self, c) {
            self.leave(c);
        }
    }

    /// The critical section is over (done or aborted): the release is due.
    pub fn leave(&mut self, c: u8) {
        if self.phase(c) == Phase::Task {
            // The async task has written (or been turned away): the
            // acquisition is over.
            self.finish_round(c);
            return;
        }
        self.w.clients[c as usize].phase = Phase::Leave;
        self.set_wait(c, WaitKind::Step);
    }

    /// Client `c`'s renewal agent (watchdog or session heartbeat) stops
    /// for good, saying `why`; nothing tells the business thread.
    pub fn stop_renewal(&mut self, c: u8, why: &str) {
        self.w.clients[c as usize].wd = None;
        ev!(
            self.log,
            EventKind::Renew,
            self.w.client_name(c),
            None,
            "{why}"
        );
    }

    /// A step of client `c` is due now (within one client step).
    pub fn due(&mut self, c: u8, phase: Phase) {
        self.w.clients[c as usize].phase = phase;
        self.set_wait(c, WaitKind::Step);
    }

    /// The release finished (or was given up): the acquisition is complete.
    pub fn finish_round(&mut self, c: u8) {
        let rounds = self.m.params.acquisitions;
        let cl = &self.w.clients[c as usize];
        if self.m.params.handoff == Handoff::Async && cl.phase != Phase::Task && cl.read.is_some() {
            // The lock is released, but the task the holder handed its
            // write to is still working: it writes within `--work`, with
            // what the holder read and its token, and no lock.
            self.w.clients[c as usize].phase = Phase::Task;
            self.set_wait(c, WaitKind::Work);
            ev!(
                self.log,
                EventKind::Note,
                self.w.client_name(c),
                None,
                "its async task is still working: it writes outside the lock"
            );
            return;
        }
        {
            let cl = &mut self.w.clients[c as usize];
            cl.round += 1;
            cl.read = None;
            cl.token = None;
            cl.wrote = false;
            cl.t1 = None;
            cl.t1_shift = 0;
            cl.reentered = false;
        }
        if self.w.clients[c as usize].round >= rounds {
            let cl = &mut self.w.clients[c as usize];
            cl.phase = Phase::Done;
            cl.wait = None;
            ev!(
                self.log,
                EventKind::Done,
                self.w.client_name(c),
                None,
                "is done"
            );
        } else {
            // The next acquisition starts whenever the client likes.
            self.w.clients[c as usize].phase = Phase::Idle;
            self.set_wait(c, WaitKind::Start);
        }
    }

    /// Is the key entry `e` (as `judge` judges it) still live now? The
    /// server measures the key's age on its own clock (a jump of it is in
    /// `shift`; a drift of its rate widens the answer's band).
    pub fn live(&mut self, e: &crate::world::Entry) -> bool {
        match e.exp.ttl {
            None => true,
            Some(ttl) => {
                let bound = ttl - e.exp.shift;
                let band = self.m.params.band(bound);
                self.t.ask_band(e.exp.since, bound, band, false)
            }
        }
    }
}

/// The business thread's due step: whatever its phase says comes next.
pub fn step(x: &mut Ctx, c: u8) {
    let proto = x.m.proto;
    match x.phase(c) {
        Phase::Idle => proto.start_acquire(x, c),
        Phase::Acquire(_) | Phase::Release(_) if proto.gathers_replies() => proto.gather(x, c),
        Phase::Acquire(_) | Phase::Release(_) => {
            x.timed_out(c, "request timed out");
            if !x.resend_request(c) {
                proto.on_timeout(x, c);
            }
        }
        Phase::Work if x.m.params.handoff == Handoff::Async => {
            ev!(
                x.log,
                EventKind::Note,
                x.w.client_name(c),
                None,
                "hands its write to an async task and returns"
            );
            x.leave(c);
        }
        Phase::Task => crate::resource::write(x, c),
        Phase::Work if x.m.params.reenter != Reenter::None => {
            crate::protocols::reentry::reenter(x, c)
        }
        Phase::Work => work_done(x, c),
        Phase::Write => {
            note_late_write(x, c);
            crate::resource::write(x, c)
        }
        Phase::Reenter => crate::protocols::reentry::reenter_due(x, c),
        Phase::InnerRelease => crate::protocols::reentry::inner_release_timed_out(x, c),
        Phase::Leave if crate::protocols::reentry::inner_unlock_due(x, c) => {
            crate::protocols::reentry::inner_release(x, c)
        }
        Phase::Leave => {
            if crate::protocols::watchdog::task_thread_releases(x) {
                ev!(
                    x.log,
                    EventKind::Renew,
                    x.w.client_name(c),
                    None,
                    "its watchdog counts the locking thread, not the task's: it keeps renewing"
                );
            } else if !x.m.params.no_cancel {
                cancel_watchdog(x, c);
            }
            ev!(
                x.log,
                EventKind::Release,
                x.w.client_name(c),
                None,
                "releases the lock"
            );
            proto.start_release(x, c);
        }
        Phase::Done => {}
    }
}

/// The critical section's work is done: the write comes next (after the
/// validity check, for a protocol that makes one).
/// The write a validity check let through. A client that knows its
/// validity reads its clock as it writes; if the validity has run out by
/// then (a pause or a slow step since the check), the ghost records it for
/// `within_validity`. The client writes all the same: it checked already.
fn note_late_write(x: &mut Ctx, c: u8) {
    let m = x.m;
    if m.proto.still_valid(x, c) == Some(false) {
        x.w.ghost.late_write.get_or_insert(c);
        ev!(
            x.log,
            EventKind::Note,
            x.w.client_name(c),
            None,
            "writes although its own clock now says its validity has run out{}",
            x.t.drift_note()
        );
    }
}

pub fn work_done(x: &mut Ctx, c: u8) {
    if x.m.params.handoff == Handoff::Transfer {
        ev!(
            x.log,
            EventKind::Note,
            x.w.client_name(c),
            None,
            "the task it handed the lock and its credential to writes, then releases"
        );
    }
    if x.m.proto.checks_validity() {
        x.m.proto.check_before_write(x, c);
    } else {
        crate::resource::write(x, c);
    }
}

/// One `unlock()` tells the watchdog: Redisson counts the thread's
/// `lock()` calls less its `unlock()` calls and cancels the renewal when
/// none is left (`RenewalTask.cancelExpirationRenewal`).
pub fn cancel_watchdog(x: &mut Ctx, c: u8) {
    let session = &mut x.w.coord.sessions;
    if session.get(c as usize) == Some(&Some(crate::world::Session::Kept)) {
        // A folded heartbeat (`coord::heartbeat_folds`) stops too: the
        // session is no longer kept, only sure to be closed in time.
        session[c as usize] = Some(crate::world::Session::Closing);
        ev!(
            x.log,
            EventKind::Renew,
            x.w.client_name(c),
            None,
            "stops its session heartbeat"
        );
        return;
    }
    let Some(mut wd) = x.w.clients[c as usize].wd else {
        return;
    };
    if wd.holds > 1 {
        wd.holds -= 1;
        x.w.clients[c as usize].wd = Some(wd);
        ev!(
            x.log,
            EventKind::Renew,
            x.w.client_name(c),
            None,
            "its watchdog still counts {} lock() call{} without an unlock(): it keeps renewing",
            wd.holds,
            if wd.holds == 1 { "" } else { "s" }
        );
        return;
    }
    x.w.clients[c as usize].wd = None;
    x.abandon(c, Chan::Watchdog);
    ev!(
        x.log,
        EventKind::Renew,
        x.w.client_name(c),
        None,
        "cancels its watchdog"
    );
}

/// Replies on their way to client `c` on its business connection that have
/// been sent (not held back by `WAIT`) and not yet marked arrived.
fn on_the_way(w: &World, c: u8) -> impl Iterator<Item = &Msg> {
    w.net.iter().filter(move |m| {
        m.to == Node::Client(c) && m.chan == Chan::Main && !m.arrived && m.repl_wait == 0
    })
}

fn mark_arrived(w: &mut World, msg: &Msg) {
    if let Some(m) = w.net.iter_mut().find(|m| **m == *msg) {
        m.arrived = true;
        m.held = false;
        m.late = false;
        m.clk = crate::time::Clk(0);
    }
}

/// Folded replies (see `LockModel::folds`). A Redlock client that waits for
/// every instance reads its replies together; when each of them reached
/// its socket is invisible until then. So a reply on its way to it has no
/// arrival step: it arrives unseen, some time between `latency_min` and
/// `latency_max` after it was sent, and the read asks which have. Once
/// every awaited reply has been sent, the client's `gather` wait runs on
/// the last one's clock: the last arrival is at most `latency_max` after
/// the last send, every earlier reply is in by then, and the read follows
/// within a step (exact: the other replies' arrival times constrain
/// nothing the read does not already imply). Without folding, the five
/// arrivals of a round would be five steps whose every real-time order is
/// a zone of its own.
///
/// Called after every step: arms the read when the step sent the last
/// awaited reply, drops it when a reply it waited for is gone, and ends
/// a round's unfolding once its replies are all read.
pub fn settle_gather(x: &mut Ctx) {
    for c in 0..x.w.clients.len() as u8 {
        let ci = c as usize;
        let me = Node::Client(c);
        if x.w.clients[ci].unfolded && !x.w.net.iter().any(|m| m.to == me && m.chan == Chan::Main) {
            x.w.clients[ci].unfolded = false;
        }
        let cl = &x.w.clients[ci];
        let mut pending = cl
            .votes
            .iter()
            .enumerate()
            .filter(|(_, v)| **v == crate::world::Vote::Pending)
            .map(|(s, _)| s as u8)
            .peekable();
        let complete = cl.alive
            && !cl.unfolded
            && pending.peek().is_some()
            && pending.all(|s| on_the_way(x.w, c).any(|m| m.from == Node::Redis(s)));
        match (complete, cl.gather) {
            (true, None) => {
                // The step that sent the last awaited reply armed its clock.
                let base = x.t.base();
                let last = on_the_way(x.w, c)
                    .find(|m| m.clk.0 as usize > base)
                    .map(|m| m.clk);
                match last {
                    Some(clk) => {
                        x.w.clients[ci].gather = Some(crate::world::Wait {
                            kind: WaitKind::Gather,
                            late: false,
                            clk,
                        });
                    }
                    None => {
                        debug_assert!(false, "a round's replies completed without a send");
                        unfold(x, c, None);
                    }
                }
            }
            (false, Some(_)) => x.w.clients[ci].gather = None,
            _ => {}
        }
    }
}

/// Client `c`'s read of its replies, when the last awaited one has
/// arrived (the `gather` wait's guard): every reply on its way is in.
pub fn gather_read(x: &mut Ctx, c: u8) {
    x.w.clients[c as usize].gather = None;
    let all: Vec<Msg> = on_the_way(x.w, c).copied().collect();
    for msg in &all {
        mark_arrived(x.w, msg);
    }
    x.w.net.sort_unstable();
    x.m.proto.gather(x, c);
}

/// A fault strikes `hit`, a folded reply to client `c`: from now on this
/// round's replies arrive by steps of their own, as other messages do, so
/// that a held reply's arrival is a step the read can follow. Each other
/// folded reply is either in already (its latency is over) or still on its
/// way with the rest of its window.
pub fn unfold(x: &mut Ctx, c: u8, hit: Option<&Msg>) {
    let cl = &mut x.w.clients[c as usize];
    cl.unfolded = true;
    cl.gather = None;
    let lmax = x.m.params.latency_max;
    let others: Vec<Msg> = on_the_way(x.w, c)
        .filter(|m| Some(*m) != hit)
        .copied()
        .collect();
    for msg in &others {
        if !x.t.ask(msg.clk, lmax, false) {
            mark_arrived(x.w, msg);
        }
    }
    x.w.net.sort_unstable();
}

/// Takes every reply that has arrived for gathering client `c` out of the
/// network, as (server, reply) pairs. A folded reply (see
/// [`settle_gather`]) may have arrived from `latency_min` after it was sent
/// and has by `latency_max`: in between, both are explored.
pub fn take_replies(x: &mut Ctx, c: u8) -> Vec<(u8, Reply)> {
    if x.m.folds() && !x.w.clients[c as usize].unfolded {
        let p = &x.m.params;
        let (lo, hi) = (p.latency_min, p.latency_max);
        let folded: Vec<Msg> = on_the_way(x.w, c).copied().collect();
        for msg in &folded {
            // "Still on its way?" Possible while it reads below `hi`; "in"
            // possible once it reads `lo`.
            if !x.t.ask_band(msg.clk, hi, (lo, hi), true) {
                mark_arrived(x.w, msg);
            }
        }
        x.w.net.sort_unstable();
    }
    let me = Node::Client(c);
    let mut got = Vec::new();
    x.w.net.retain(|m| {
        let mine = m.to == me && m.chan == Chan::Main && m.arrived;
        if mine && let (Node::Redis(s), Body::Reply(r)) = (m.from, m.body) {
            got.push((s, r));
        }
        !mine
    });
    for (s, r) in &got {
        ev!(
            x.log,
            EventKind::Receive,
            x.w.client_name(c),
            Some(x.w.server_name(*s)),
            "{}",
            r.text()
        );
    }
    got
}

/// The replies that have arrived for gathering client `c` and wait to be read.
pub fn arrived(w: &World, c: u8) -> impl Iterator<Item = &Msg> {
    w.net
        .iter()
        .filter(move |m| m.to == Node::Client(c) && m.chan == Chan::Main && m.arrived)
}

/// True when gathering client `c` has a reply in from every server it
/// still waits for.
pub fn all_arrived(w: &World, c: u8) -> bool {
    let cl = &w.clients[c as usize];
    let waiting = cl
        .votes
        .iter()
        .filter(|v| **v == crate::world::Vote::Pending)
        .count();
    waiting > 0 && arrived(w, c).count() >= waiting
}

/// A reply reaches client `c`. A gathering client's reply lands in its
/// socket buffer, where its gathering step will read it.
pub fn deliver(x: &mut Ctx, c: u8, msg: Msg) {
    // Protocols see a Redis server's index; the service has none.
    let s = match msg.from {
        Node::Redis(s) => s,
        Node::Service => u8::MAX,
        Node::Client(_) => return,
    };
    let Body::Reply(reply) = msg.body else { return };
    if x.m.proto.gathers_replies() && msg.chan == Chan::Main {
        ev!(
            x.log,
            EventKind::Note,
            x.w.client_name(c),
            Some(x.w.node_name(msg.from)),
            "the reply {} from {} arrives and waits to be read",
            reply.text(),
            x.w.node_name(msg.from)
        );
        // It stays where it is in its connection's queue, arrived.
        if let Some(m) = x.w.net.iter_mut().find(|m| **m == msg) {
            m.arrived = true;
            m.held = false;
            m.late = false;
            m.clk = crate::time::Clk(0);
        }
        x.w.net.sort_unstable();
        // Every awaited reply is in (or enough to decide): the client
        // reads them within a step.
        let stepping = x.w.clients[c as usize]
            .wait
            .is_some_and(|w| w.kind == WaitKind::Step);
        if !stepping && x.m.proto.replies_ready(x.m, x.w, c) {
            x.set_wait(c, WaitKind::Step);
        }
        return;
    }
    ev!(
        x.log,
        EventKind::Receive,
        x.w.client_name(c),
        Some(x.w.node_name(msg.from)),
        "{}",
        reply.text()
    );
    match msg.chan {
        Chan::Main => x.m.proto.on_reply(x, c, s, reply),
        Chan::Watchdog => x.m.proto.on_watchdog_reply(x, c, s, reply),
    }
}

/// The watchdog's timer fired: renew, or give up on a renewal in flight.
pub fn watchdog(x: &mut Ctx, c: u8) {
    let Some(wd) = x.w.clients[c as usize].wd else {
        return;
    };
    match wd.state {
        WdState::Sleeping => x.m.proto.on_watchdog(x, c),
        WdState::Waiting => {
            x.abandon(c, Chan::Watchdog);
            let resent = x.m.proto.renewal() == crate::protocols::Renewal::Watchdog
                && crate::protocols::watchdog::resend(x, c);
            if !resent {
                x.m.proto.on_watchdog_timeout(x, c);
            }
        }
    }
}

/// Client `c`'s business thread dies where it stands. It never releases.
/// Its watchdog dies with it unless the watchdog is never cancelled
/// (`--no-cancel`), in which case it keeps renewing for a dead owner.
pub fn crash(x: &mut Ctx, c: u8) {
    let ci = c as usize;
    {
        // A dead thread's program position no longer matters: forget it, so
        // crashes at different points lead to the same state.
        let cl = &mut x.w.clients[ci];
        cl.alive = false;
        cl.phase = Phase::Idle;
        cl.wait = None;
        cl.read = None;
        cl.token = None;
        cl.wrote = false;
        cl.votes.clear();
        cl.t1 = None;
        cl.t1_shift = 0;
        cl.resent = 0;
        cl.request = None;
    }
    x.abandon(c, Chan::Main);
    // A never-cancelled watchdog, or any renewal thread when only the
    // business thread died (`--crash thread`), lives on.
    let lives_on = x.m.params.no_cancel || x.m.params.crash == crate::params::CrashKind::Thread;
    let keeps_watchdog = lives_on && x.w.clients[ci].wd.is_some();
    if !keeps_watchdog {
        x.w.clients[ci].wd = None;
        x.abandon(c, Chan::Watchdog);
    }
    ev!(
        x.log,
        EventKind::Fault,
        x.w.client_name(c),
        None,
        "CRASHES{}",
        if keeps_watchdog && x.m.params.no_cancel {
            " (its never-cancelled watchdog keeps running)"
        } else if keeps_watchdog {
            " (the business thread only: its renewal thread keeps running)"
        } else {
            ""
        }
    );
}

/// Client `c`'s wall clock jumps by `by`. Only what the client measures
/// with its wall clock moves: Redlock's elapsed time since T1 (and so the
/// validity it believes in).
pub fn clock_jump(x: &mut Ctx, c: u8, by: Micros) {
    // A monotonic clock does not move with the wall clock: an attempt's
    // elapsed time is unaffected.
    let wall = x.m.params.elapsed_clock == crate::params::ElapsedClock::Wall;
    let cl = &mut x.w.clients[c as usize];
    if cl.t1.is_some() && wall {
        cl.t1_shift += by;
    }
    ev!(
        x.log,
        EventKind::Fault,
        x.w.client_name(c),
        None,
        "wall clock JUMPS {} {}{}",
        if by > 0 { "forward" } else { "backward" },
        crate::units::show(by.abs()),
        if wall {
            ""
        } else {
            " (it measures elapsed time on a monotonic clock, which does not move)"
        }
    );
}

/// A reply the client's program did not expect (it moved on).
pub fn ignore(x: &mut Ctx, c: u8, reply: Reply) {
    ev!(
        x.log,
        EventKind::Note,
        x.w.client_name(c),
        None,
        "ignores the late reply {}",
        reply.text()
    );
}
