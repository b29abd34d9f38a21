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
use crate::world::{
    Body, Chan, Cmd, Log, Msg, Node, Phase, Reply, STicks, Ticks, Val, WdState, World,
};
use locklab_traces::EventKind;

/// What a protocol's rules act on: the world, the model's parameters, and
/// the event log of the step being taken.
pub struct Ctx<'a> {
    pub m: &'a LockModel,
    pub w: &'a mut World,
    pub log: &'a mut Log,
}

impl Ctx<'_> {
    pub fn phase(&self, c: u8) -> Phase {
        self.w.clients[c as usize].phase
    }

    /// The lock value of client `c`'s current acquisition.
    pub fn val(&self, c: u8) -> Val {
        self.w.clients[c as usize].val(c)
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
        let fifo = self.m.params.network == crate::params::Network::Fifo;
        self.w.send_msg(
            Msg {
                from: Node::Client(c),
                to,
                chan,
                conn: 0,
                seq: 0,
                body: Body::Req(cmd),
                held: None,
                orphan: no_reply,
            },
            fifo,
        );
    }

    /// Sends `cmd` and expects no answer: the client does not wait for the
    /// reply (reference Redlock clients ignore unlock results). It travels
    /// on the client's current connection, ahead of whatever it sends next.
    pub fn notify(&mut self, c: u8, s: u8, cmd: Cmd) -> bool {
        if !self.w.redis[s as usize].is_up() {
            return self.send(c, s, Chan::Main, cmd);
        }
        self.post(c, Node::Redis(s), Chan::Main, cmd, true);
        true
    }

    /// Client `c` now waits in `phase` for replies, until its request timeout.
    pub fn await_reply(&mut self, c: u8, phase: Phase) {
        let t = self.m.params.timeout;
        let cl = &mut self.w.clients[c as usize];
        cl.phase = phase;
        cl.timer = Some(t);
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
            self.w.net.sort();
        }
    }

    /// The acquisition failed; try again after the retry delay.
    pub fn retry(&mut self, c: u8, why: &str) {
        ev!(
            self.log,
            EventKind::Retry,
            self.w.client_name(c),
            None,
            "{why}; retries in {} tick(s)",
            self.m.params.retry
        );
        let r = self.m.params.retry;
        let cl = &mut self.w.clients[c as usize];
        cl.phase = Phase::Idle;
        cl.timer = Some(r);
    }

    /// The lock is granted (with a fencing token, if the protocol has them):
    /// client `c` enters its critical section and reads the resource.
    pub fn enter_cs(&mut self, c: u8, token: Option<u16>) {
        // Under open timing the environment says when the work is done.
        let work = (!self.m.params.open_timing).then_some(self.m.params.work);
        {
            let cl = &mut self.w.clients[c as usize];
            cl.phase = Phase::Work;
            cl.timer = work;
            cl.token = token;
        }
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
            let every = self.m.params.renew_every;
            self.w.clients[c as usize].wd = Some(crate::world::Watchdog {
                val,
                state: WdState::Sleeping(every),
                renewals: 0,
            });
        }
        if !crate::resource::read(self, c) {
            self.leave(c);
        }
    }

    /// The critical section is over (done or aborted): the release is due.
    pub fn leave(&mut self, c: u8) {
        let cl = &mut self.w.clients[c as usize];
        cl.phase = Phase::Leave;
        cl.timer = Some(0);
    }

    /// The release finished (or was given up): the acquisition is complete.
    pub fn finish_round(&mut self, c: u8) {
        let rounds = self.m.params.acquisitions;
        let cl = &mut self.w.clients[c as usize];
        cl.round += 1;
        cl.read = None;
        cl.token = None;
        cl.wrote = false;
        if cl.round >= rounds {
            cl.phase = Phase::Done;
            cl.timer = None;
            ev!(
                self.log,
                EventKind::Done,
                self.w.client_name(c),
                None,
                "is done"
            );
        } else {
            cl.phase = Phase::Idle;
            cl.timer = Some(0);
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
            ev!(
                x.log,
                EventKind::Timeout,
                x.w.client_name(c),
                None,
                "request timed out"
            );
            x.abandon(c, Chan::Main);
            proto.on_timeout(x, c);
        }
        Phase::Work => {
            if proto.checks_validity() {
                proto.check_before_write(x, c);
            } else {
                crate::resource::write(x, c);
            }
        }
        Phase::Write => crate::resource::write(x, c),
        Phase::Leave => {
            if !x.m.params.no_cancel && x.w.clients[c as usize].wd.take().is_some() {
                x.abandon(c, Chan::Watchdog);
                ev!(
                    x.log,
                    EventKind::Renew,
                    x.w.client_name(c),
                    None,
                    "cancels its watchdog"
                );
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

/// True when gathering client `c` has a reply in from every server it
/// still waits for (so its gathering step is due now).
pub fn gather_ready(w: &World, c: usize) -> bool {
    let cl = &w.clients[c];
    if !cl.alive
        || cl.paused.is_some()
        || !matches!(cl.phase, Phase::Acquire(_) | Phase::Release(_))
    {
        return false;
    }
    let waiting = cl
        .votes
        .iter()
        .filter(|v| **v == crate::world::Vote::Pending)
        .count();
    let arrived = w
        .net
        .iter()
        .filter(|m| m.to == Node::Client(c as u8) && m.chan == Chan::Main && m.held.is_none())
        .count();
    waiting > 0 && arrived >= waiting
}

/// Takes every reply that has arrived for gathering client `c` (not held
/// back by a delay) out of the network, as (server, reply) pairs.
pub fn take_replies(x: &mut Ctx, c: u8) -> Vec<(u8, Reply)> {
    let me = Node::Client(c);
    let mut got = Vec::new();
    x.w.net.retain(|m| {
        let mine = m.to == me && m.chan == Chan::Main && m.held.is_none();
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
        // It stays where it is in its connection's queue, no longer held.
        if let Some(m) = x.w.net.iter_mut().find(|m| **m == msg) {
            m.held = None;
        }
        x.w.net.sort();
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
        WdState::Sleeping(_) => x.m.proto.on_watchdog(x, c),
        WdState::Waiting(_) => {
            x.abandon(c, Chan::Watchdog);
            x.m.proto.on_watchdog_timeout(x, c);
        }
    }
}

/// True when client `c`'s watchdog has a step due now.
pub fn watchdog_due(w: &World, c: usize) -> bool {
    let cl = &w.clients[c];
    cl.paused.is_none()
        && matches!(
            cl.wd.map(|d| d.state),
            Some(WdState::Sleeping(0)) | Some(WdState::Waiting(0))
        )
}

/// `n` ticks of true time for every client (never past a deadline). A
/// paused process does no work, but its timers keep running (they are
/// deadlines, not work) and fire when it resumes.
pub fn tick(m: &LockModel, w: &mut World, n: Ticks, log: &mut Log) {
    let by = n.min(STicks::MAX as Ticks) as STicks;
    for i in 0..w.clients.len() {
        let name_needed = log.enabled();
        let cl = &mut w.clients[i];
        let running = cl.alive && cl.paused.is_none();
        if cl.phase == Phase::Work {
            if running {
                cl.timer = cl.timer.map(|t| t.saturating_sub(n));
            }
        } else if cl.alive {
            cl.timer = cl.timer.map(|t| t.saturating_sub(n));
        }
        if let Some(wd) = &mut cl.wd {
            wd.state = match wd.state {
                WdState::Sleeping(k) => WdState::Sleeping(k.saturating_sub(n)),
                WdState::Waiting(k) => WdState::Waiting(k.saturating_sub(n)),
            };
        }
        // Redlock's clock readings move only while they mean something:
        // elapsed while voting, validity while holding.
        if m.proto.uses_client_clock() {
            let (lo, hi) = clock_bounds(m);
            match cl.phase {
                Phase::Acquire(0) => cl.elapsed = cl.elapsed.saturating_add(by).min(hi),
                Phase::Work | Phase::Write => cl.validity = cl.validity.saturating_sub(by).max(lo),
                _ => {}
            }
        }
        if let Some(p) = cl.paused {
            cl.paused = crate::world::count_down(p, n);
            if cl.paused.is_none() && name_needed {
                let n = w.client_name(i as u8);
                log.push(
                    EventKind::Fault,
                    n,
                    None,
                    "resumes: the pause is over".into(),
                );
            }
        }
    }
}

/// Bounds that keep Redlock's clock readings finite: beyond them no clock
/// jump left in the budget can change a decision.
pub fn clock_bounds(m: &LockModel) -> (STicks, STicks) {
    let slack = m.params.jump as STicks
        * m.params.faults.get(crate::faults::FaultKind::ClockJump) as STicks;
    (-slack - 1, m.params.ttl as STicks + slack + 1)
}

/// Ticks until some client timer fires or a pause ends, if any. With
/// `idle`, the end of an idle client's minimum backoff counts too.
pub fn next_deadline(w: &World, idle: bool) -> Option<Ticks> {
    let mut best: Option<Ticks> = None;
    let mut consider = |t: Ticks| {
        if t > 0 {
            best = Some(best.map_or(t, |b| b.min(t)));
        }
    };
    for cl in &w.clients {
        if let Some(p) = cl.paused
            && p != crate::world::OPEN
        {
            consider(p);
        }
        // An idle client's timer is a minimum backoff, not a deadline, but
        // its end is still worth stopping at. Work does not progress while
        // the client is paused.
        if cl.alive
            && cl.phase != Phase::Done
            && (idle || cl.phase != Phase::Idle)
            && let Some(t) = cl.timer
            && (cl.phase != Phase::Work || cl.paused.is_none())
        {
            consider(t);
        }
        if let Some(wd) = cl.wd {
            match wd.state {
                WdState::Sleeping(k) | WdState::Waiting(k) => consider(k),
            }
        }
    }
    best
}

/// Client `c`'s business thread dies where it stands. It never releases.
/// Its watchdog dies with it unless the watchdog is never cancelled
/// (`--no-cancel`), in which case it keeps renewing for a dead owner.
pub fn crash(m: &LockModel, w: &mut World, c: u8, log: &mut Log) {
    let ci = c as usize;
    {
        // A dead thread's program position no longer matters: forget it, so
        // crashes at different points lead to the same state.
        let cl = &mut w.clients[ci];
        cl.alive = false;
        cl.phase = Phase::Idle;
        cl.timer = None;
        cl.read = None;
        cl.token = None;
        cl.wrote = false;
        cl.votes.clear();
        cl.elapsed = 0;
        cl.validity = 0;
    }
    let mut x = Ctx { m, w, log };
    x.abandon(c, Chan::Main);
    let keeps_watchdog = m.params.no_cancel && x.w.clients[ci].wd.is_some();
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
        if keeps_watchdog {
            " (its never-cancelled watchdog keeps running)"
        } else {
            ""
        }
    );
}

/// Client `c`'s wall clock jumps. Only what the client measures with its
/// wall clock moves: Redlock's elapsed time and the validity it believes in.
pub fn clock_jump(m: &LockModel, w: &mut World, c: u8, by: STicks, log: &mut Log) {
    let (lo, hi) = clock_bounds(m);
    let cl = &mut w.clients[c as usize];
    match cl.phase {
        Phase::Acquire(0) => cl.elapsed = (cl.elapsed + by).clamp(lo, hi),
        Phase::Work | Phase::Write => cl.validity = (cl.validity - by).clamp(lo, hi),
        _ => {}
    }
    ev!(
        log,
        EventKind::Fault,
        w.client_name(c),
        None,
        "wall clock JUMPS {} {} ticks",
        if by > 0 { "forward" } else { "backward" },
        by.unsigned_abs()
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
