//! One simulated run: the model's own rules on the concrete engine, driven
//! by a seeded random environment.
//!
//! The model says which steps are enabled, from when (each step's guard)
//! and by when something must happen (the state's deadlines); the
//! simulator only says *when* inside those windows each pending event
//! happens, and which faults strike. It takes every step through
//! [`LockModel::cstep`] at an exact time (whole µs), so every run is a path
//! the checker could take and its trace replays with `trace::validate`.
//!
//! Each pending event gets a planned time when it first appears:
//! * a message: a latency drawn log-normal, kept inside the model's window
//!   `[latency_min, latency_max]` (plus the receiver's reaction, uniform in
//!   `[0, step]`, for a reply handled on arrival). With the `delay` fault
//!   on, a draw past the maximum holds the message back (a `Delay` step at
//!   the maximum, then the arrival at the drawn time); with `loss`, a drawn
//!   share of messages is lost (a `Drop` step) instead of arriving;
//! * a client's work: drawn log-normal inside `[work_min, work_max]`; with
//!   the `slow` fault, a draw past the maximum turns the work slow (a `Slow`
//!   step at the maximum) and it ends at the drawn time;
//! * a client's reaction (a decision, the release, a timeout's handling,
//!   a renewal): uniform in `[0, step]` after its window opens;
//! * a start: exponential think time; a retry: uniform backoff;
//! * a replica's apply: a latency draw; a restarted server's return and a
//!   session's expiry: exactly when the model says.
//!
//! Faults (pause, crash, clock jump, restart, failover) strike as Poisson
//! processes at their rates, one per target; a pause lasts a log-normal
//! draw. A planned time is always clamped into its event's window, so no
//! deadline is ever missed. The next step is the earliest planned one (ties
//! broken by the scheduler); after each step every invariant is checked.

use crate::config::{Scheduler, SimConfig};
use crate::dist::{LogNormal, Rng};
use locklab_models::engine::concrete::CState;
use locklab_models::engine::solve::Rational;
use locklab_models::model::Enabled;
use locklab_models::protocols::Service;
use locklab_models::time::{Clk, Micros};
use locklab_models::world::{Log, Msg, Node, Phase, Wait, WaitKind};
use locklab_models::{Action, FaultKind, Invariant, LockModel};

/// Steps after which a run is cut (far beyond any run the horizon allows;
/// a guard against a model that stops advancing time).
const STEP_CAP: u64 = 5_000_000;

/// What every run of one configuration shares.
pub struct Plan {
    pub cfg: SimConfig,
    pub m: LockModel,
    /// Per entry of `Invariant::ALL`: whether it applies to the protocol.
    pub applies: [bool; Invariant::ALL.len()],
    work: LogNormal,
    latency: LogNormal,
    pause: LogNormal,
    on: [bool; FaultKind::ALL.len()],
    /// Redis servers a failover can strike.
    failover_targets: Vec<u8>,
}

impl Plan {
    pub fn new(cfg: &SimConfig) -> Result<Plan, String> {
        cfg.validate()?;
        let m = cfg.model()?;
        let proto = m.proto;
        let mut on = [false; FaultKind::ALL.len()];
        for (i, k) in FaultKind::ALL.into_iter().enumerate() {
            on[i] = m.params.faults.get(k) > 0;
        }
        let failover_targets = match proto.service() {
            Service::Replicated => vec![0],
            Service::Instances => (0..m.params.instances).collect(),
            Service::Single | Service::Consensus | Service::Nothing => vec![],
        };
        let ln = |p50: Micros, p99: Micros| LogNormal::from_percentiles(p50 as f64, p99 as f64);
        Ok(Plan {
            cfg: cfg.clone(),
            applies: Invariant::ALL.map(|i| i.applies(&m)),
            work: ln(cfg.work_p50, cfg.work_p99),
            latency: ln(cfg.latency_p50, cfg.latency_p99),
            pause: ln(cfg.pause_p50, cfg.pause_p99),
            on,
            failover_targets,
            m,
        })
    }

    fn on(&self, k: FaultKind) -> bool {
        self.on[FaultKind::ALL.iter().position(|x| *x == k).unwrap_or(0)]
    }

    /// The invariants that apply, with their index in `Invariant::ALL`.
    pub fn invariants(&self) -> impl Iterator<Item = (usize, Invariant)> + '_ {
        Invariant::ALL
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.applies[*i])
    }
}

/// The first violation of one invariant in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Break {
    /// Acquisitions begun up to and including the one it happened in.
    pub acquisitions: u32,
    /// Steps taken, the violating one included (its 1-based index).
    pub step: u64,
    /// Simulated time, µs.
    pub at_us: Micros,
}

/// What one run did.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Acquisitions begun (a client's first attempt at a round; retries of
    /// the same round do not count again).
    pub acquisitions: u32,
    pub steps: u64,
    /// Simulated time at the end of the run, µs.
    pub sim_us: Micros,
    /// Stopped before every client was done: at the horizon, at the step
    /// cap, or stuck with nothing left that could happen.
    pub cut: bool,
    /// Faults that struck (steps that spend a fault budget).
    pub faults: u64,
    /// Per entry of `Invariant::ALL`: its first violation.
    pub broke: [Option<Break>; Invariant::ALL.len()],
    /// Every step taken and its time (µs), when recording.
    pub path: Vec<(Action, Micros)>,
}

/// The planned time of a thread's pending step: which wait it is for
/// (kind, late, when its clock was armed) and when it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ThreadPlan {
    ident: (WaitKind, bool, Micros),
    at: Micros,
}

/// The fate of one message in flight.
#[derive(Clone, Copy, Debug)]
struct MsgPlan {
    /// The packet, without what changes while it travels.
    pkt: Msg,
    /// When it was sent.
    sent: Micros,
    /// When it arrives (or is lost).
    at: Micros,
    lose: bool,
    /// Held past the longest latency by a `delay` fault.
    tail: bool,
    seen: bool,
}

/// A step the model times itself (a replica's apply, a server coming back,
/// a session expiring), keyed by its clock's arming time.
#[derive(Clone, Copy, Debug)]
struct OtherPlan {
    action: Action,
    born: Micros,
    at: Micros,
    seen: bool,
}

/// A fault due at a time.
#[derive(Clone, Copy, Debug)]
struct Timed {
    at: Micros,
    action: Action,
}

/// Runs seeds of one plan, reusing its buffers from run to run.
pub struct Runner<'p> {
    plan: &'p Plan,
    rng: Rng,
    s: CState,
    now: Micros,
    enabled: Vec<Enabled>,
    threads: Vec<Option<ThreadPlan>>,
    wds: Vec<Option<ThreadPlan>>,
    /// Per client: when its slow work ends.
    slow_end: Vec<Option<Micros>>,
    /// Per client: when its pause ends.
    resume_at: Vec<Option<Micros>>,
    msgs: Vec<MsgPlan>,
    others: Vec<OtherPlan>,
    faults: Vec<Timed>,
    cands: Vec<(Micros, Cand)>,
    /// Per client: the round whose first attempt has begun.
    started: Vec<Option<u8>>,
    record: bool,
    /// The last step taken, for diagnostics.
    last: Option<(Action, Micros)>,
    out: RunResult,
}

#[derive(Clone, Copy, Debug)]
enum Cand {
    /// A model step.
    Step(Action),
    /// The fault event at this index.
    Fault(usize),
}

fn integer(r: Rational) -> Micros {
    debug_assert_eq!(r.den(), 1, "the simulator only takes steps at whole µs");
    (r.num() / r.den()) as Micros
}

impl<'p> Runner<'p> {
    pub fn new(plan: &'p Plan) -> Runner<'p> {
        Runner {
            plan,
            rng: Rng::new(0),
            s: plan.m.cinit(),
            now: 0,
            enabled: Vec::new(),
            threads: Vec::new(),
            wds: Vec::new(),
            slow_end: Vec::new(),
            resume_at: Vec::new(),
            msgs: Vec::new(),
            others: Vec::new(),
            faults: Vec::new(),
            cands: Vec::new(),
            started: Vec::new(),
            record: false,
            last: None,
            out: RunResult::default(),
        }
    }

    /// Runs the seed; with `record`, keeps every step in `path`.
    pub fn run(&mut self, seed: u64, record: bool) -> RunResult {
        let n = self.plan.m.params.clients as usize;
        self.rng = Rng::new(seed);
        self.s = self.plan.m.cinit();
        self.now = 0;
        for v in [&mut self.threads, &mut self.wds] {
            v.clear();
            v.resize(n, None);
        }
        for v in [&mut self.slow_end, &mut self.resume_at] {
            v.clear();
            v.resize(n, None);
        }
        self.msgs.clear();
        self.others.clear();
        self.faults.clear();
        self.started.clear();
        self.started.resize(n, None);
        self.record = record;
        self.last = None;
        self.out = RunResult::default();
        self.start_faults();
        self.check();
        self.go(seed);
        self.out.sim_us = self.now;
        std::mem::take(&mut self.out)
    }

    fn go(&mut self, seed: u64) {
        let p = self.plan;
        loop {
            if self.all_broken() || self.finished() {
                return;
            }
            if self.out.steps >= STEP_CAP {
                self.out.cut = true;
                return;
            }
            p.m.enabled(&self.s.world, &mut self.enabled);
            self.candidates();
            let Some(t) = self.cands.iter().map(|c| c.0).min() else {
                // Nothing is pending and nothing ever will be, yet some
                // client has not finished: the run is stuck.
                self.out.cut = true;
                return;
            };
            if t > p.cfg.horizon {
                self.out.cut = true;
                return;
            }
            let ties = self.cands.iter().filter(|c| c.0 == t).count();
            let k = match p.cfg.scheduler {
                Scheduler::Random if ties > 1 => self.rng.index(ties),
                _ => 0,
            };
            let (_, cand) = *self
                .cands
                .iter()
                .filter(|c| c.0 == t)
                .nth(k)
                .expect("k < ties");
            match cand {
                Cand::Step(a) => self.take(a, t, seed),
                Cand::Fault(i) => {
                    let e = self.faults.remove(i);
                    if self.enabled.iter().any(|x| x.action == e.action) {
                        self.take(e.action, t, seed);
                        self.after_fault(e.action);
                    } else {
                        self.now = self.now.max(t);
                        self.missed(e.action);
                    }
                }
            }
        }
    }

    /// Every client is done or dead, nothing is in flight, no watchdog runs.
    fn finished(&self) -> bool {
        let w = &self.s.world;
        w.net.is_empty()
            && w.clients
                .iter()
                .all(|c| (!c.alive || c.phase == Phase::Done) && c.wd.is_none())
    }

    fn all_broken(&self) -> bool {
        (0..Invariant::ALL.len()).all(|i| !self.plan.applies[i] || self.out.broke[i].is_some())
    }

    fn born(&self, c: Clk) -> Micros {
        integer(self.s.born[c.0 as usize])
    }

    /// Takes model step `a` at time `t` through the concrete engine.
    fn take(&mut self, a: Action, t: Micros, seed: u64) {
        if let Action::Step { client } = a {
            let c = &self.s.world.clients[client as usize];
            if c.phase == Phase::Idle && self.started[client as usize] != Some(c.round) {
                self.started[client as usize] = Some(c.round);
                self.out.acquisitions += 1;
            }
        }
        let at = t.max(self.now);
        self.s = match self
            .plan
            .m
            .cstep(&self.s, &a, Rational::integer(at), &mut Log::off())
        {
            Ok(s) => s,
            Err(e) => panic!(
                "simulator bug (seed {seed}, step {}): {} at {at} µs refused by the model: {e} (the step before: {})",
                self.out.steps + 1,
                locklab_models::trace::action_text(&a),
                self.last.map_or("none".into(), |(a, t)| format!(
                    "{} at {t} µs",
                    locklab_models::trace::action_text(&a)
                ))
            ),
        };
        self.now = at;
        self.last = Some((a, at));
        self.out.steps += 1;
        if locklab_models::faults::kind_of(&a).is_some() {
            self.out.faults += 1;
        }
        if self.record {
            self.out.path.push((a, at));
        }
        self.check();
    }

    /// What follows a fault that struck: a pause's end, the next strike.
    fn after_fault(&mut self, a: Action) {
        match a {
            Action::Pause { client } => {
                let d = self.rng.sample(&self.plan.pause);
                self.resume_at[client as usize] = Some(self.now + d);
            }
            Action::Crash { .. } => {}
            a => self.next_fault(a),
        }
    }

    /// A fault that is due but that the model does not offer now (its
    /// target is down, dead, done, paused, or a pause would change
    /// nothing): its process goes on.
    fn missed(&mut self, a: Action) {
        match a {
            Action::Pause { client } => {
                let c = &self.s.world.clients[client as usize];
                if c.alive && c.paused.is_none() {
                    self.next_fault(a);
                }
            }
            Action::Crash { client } => {
                if self.s.world.clients[client as usize].phase != Phase::Done {
                    self.next_fault(a);
                }
            }
            _ => self.next_fault(a),
        }
    }

    /// The first arrival of every fault process: one per target.
    fn start_faults(&mut self) {
        let p = self.plan;
        let clients = p.m.params.clients;
        let servers = self.s.world.redis.len() as u8;
        if p.on(FaultKind::Pause) {
            for client in 0..clients {
                self.next_fault(Action::Pause { client });
            }
        }
        if p.on(FaultKind::Crash) {
            for client in 0..clients {
                self.next_fault(Action::Crash { client });
            }
        }
        if p.m.params.faults.get(FaultKind::ResourceRestart) > 0 {
            self.next_fault(Action::ResourceRestart);
        }
        if p.m.params.faults.get(FaultKind::Duplicate) > 0 {
            for client in 0..clients {
                self.next_fault(Action::Duplicate { client });
            }
        }
        if p.on(FaultKind::Restart) {
            for server in 0..servers {
                self.next_fault(Action::Restart { server });
            }
        }
        if p.on(FaultKind::Failover) {
            for &server in &p.failover_targets {
                self.next_fault(Action::Failover { server });
            }
        }
        if p.on(FaultKind::ClockJump) {
            for s in 0..servers {
                self.next_fault(Action::ClockJump {
                    node: Node::Redis(s),
                    by: 0,
                });
            }
            if p.m.proto.uses_client_clock() {
                for c in 0..clients {
                    self.next_fault(Action::ClockJump {
                        node: Node::Client(c),
                        by: 0,
                    });
                }
            }
        }
    }

    /// Schedules the next strike of fault `a`'s process (same target).
    fn next_fault(&mut self, a: Action) {
        let c = &self.plan.cfg;
        let rate = match a {
            Action::Pause { .. } => c.pause_rate,
            Action::Crash { .. } => c.crash_rate,
            Action::Restart { .. } => c.restart_rate,
            Action::Failover { .. } => c.failover_rate,
            Action::ClockJump { .. } => c.jump_rate,
            Action::ResourceRestart => c.resource_restart_rate,
            Action::Duplicate { .. } => c.duplicate_rate,
            _ => 0.0,
        };
        let Some(gap) = self.rng.arrival(rate) else {
            return;
        };
        let action = match a {
            Action::ClockJump { node, .. } => {
                let j = self.plan.m.params.jump;
                let by = if self.rng.chance(0.5) { j } else { -j };
                Action::ClockJump { node, by }
            }
            other => other,
        };
        self.faults.push(Timed {
            at: self.now + gap,
            action,
        });
    }

    /// A reaction time: uniform in `[0, step]`.
    fn react(&mut self) -> Micros {
        self.rng.between(0, self.plan.m.params.step)
    }

    /// Every step that can happen next, with its planned time; plans are
    /// made for new pending events and dropped for those that are gone.
    fn candidates(&mut self) {
        self.cands.clear();
        let enabled = std::mem::take(&mut self.enabled);
        for e in &enabled {
            match e.action {
                Action::Step { client } => {
                    let c = client as usize;
                    let Some(wait) = self.s.world.clients[c].wait else {
                        continue;
                    };
                    let t = self.thread_time(c, wait, false);
                    self.cands.push((t, Cand::Step(e.action)));
                }
                Action::Watchdog { client } => {
                    let c = client as usize;
                    let Some(wd) = self.s.world.clients[c].wd else {
                        continue;
                    };
                    let t = self.thread_time(c, wd.wait, true);
                    self.cands.push((t, Cand::Step(e.action)));
                }
                Action::Resume { client } => {
                    let at = *self.resume_at[client as usize].get_or_insert(self.now);
                    self.cands.push((at.max(self.now), Cand::Step(e.action)));
                }
                Action::Replicate { .. }
                | Action::Gather { .. }
                | Action::ComeUp { .. }
                | Action::SessionExpires { .. }
                | Action::Reap
                | Action::Writer { .. }
                | Action::Reconcile
                | Action::DetectionLate => {
                    let t = self.other_time(e);
                    self.cands.push((t, Cand::Step(e.action)));
                }
                // Messages are planned below; faults strike by rate.
                _ => {}
            }
        }
        self.others.retain(|o| o.seen);
        for o in &mut self.others {
            o.seen = false;
        }
        self.messages(&enabled);
        self.enabled = enabled;
        for (i, f) in self.faults.iter().enumerate() {
            self.cands.push((f.at.max(self.now), Cand::Fault(i)));
        }
    }

    /// When a thread's pending step happens (business thread, or watchdog
    /// with `wd`), planned when its wait first appears.
    fn thread_time(&mut self, c: usize, wait: Wait, wd: bool) -> Micros {
        let p = self.plan;
        let par = &p.m.params;
        let born = self.born(wait.clk);
        let ident = (wait.kind, wait.late, born);
        let stored = if wd { self.wds[c] } else { self.threads[c] };
        let at = match stored {
            Some(tp) if tp.ident == ident => tp.at,
            _ => {
                let at = if wait.late {
                    born + self.react()
                } else {
                    match wait.kind {
                        WaitKind::Start => born + self.rng.exponential(p.cfg.think as f64),
                        WaitKind::Backoff => {
                            born + self.rng.between(p.cfg.backoff_min, p.cfg.backoff_max)
                        }
                        WaitKind::Reply => born + par.timeout + self.react(),
                        WaitKind::Step => born + self.react(),
                        // Not a thread's wait: `Action::Gather` is planned
                        // with the model's other events.
                        WaitKind::Gather => born + par.latency_max + self.react(),
                        WaitKind::Renewal => born + par.renew_every + self.react(),
                        WaitKind::Reconcile => born + par.reconcile.unwrap_or(0) + self.react(),
                        WaitKind::Work => {
                            let d = self.rng.sample(&p.work);
                            if d > par.work_max && p.on(FaultKind::Slow) {
                                // Turns slow at its maximum, ends at the draw.
                                self.slow_end[c] = Some(born + d);
                                self.faults.push(Timed {
                                    at: born + par.work_max,
                                    action: Action::Slow { client: c as u8 },
                                });
                                born + par.work_max + par.step
                            } else {
                                born + d.clamp(par.work_min, par.work_max) + self.react()
                            }
                        }
                        WaitKind::Slow => match self.slow_end[c].take() {
                            Some(end) => end,
                            None => born + par.work_max + self.rng.sample(&p.work),
                        },
                    }
                };
                let tp = Some(ThreadPlan { ident, at });
                if wd {
                    self.wds[c] = tp;
                } else {
                    self.threads[c] = tp;
                }
                at
            }
        };
        let win = p.m.wait_window(&wait);
        let mut t = at.max(born + win.lo);
        if let Some(hi) = win.hi {
            t = t.min(born + hi);
        }
        t.max(self.now)
    }

    /// When a step the model times itself happens.
    fn other_time(&mut self, e: &Enabled) -> Micros {
        let (born, lo) = match e.guard {
            Some((c, lo)) => (self.born(c), lo),
            None => (self.now, 0),
        };
        let found = self
            .others
            .iter_mut()
            .find(|o| !o.seen && o.action == e.action && o.born == born);
        let at = match found {
            Some(o) => {
                o.seen = true;
                o.at
            }
            None => {
                let at = match e.action {
                    Action::Replicate { .. } => {
                        let par = &self.plan.m.params;
                        let d = self.rng.sample(&self.plan.latency);
                        born + d.clamp(par.latency_min, par.latency_max)
                    }
                    // The last awaited reply arrives after its latency,
                    // and the client reads within a step. (A read forced
                    // by the timeout takes a reply still inside its
                    // latency as not yet there.)
                    Action::Gather { client } => {
                        let late = self.s.world.clients[client as usize]
                            .gather
                            .is_some_and(|g| g.late);
                        if late {
                            // Caught up after a pause: within a step.
                            born + self.react()
                        } else {
                            let par = &self.plan.m.params;
                            let d = self.rng.sample(&self.plan.latency);
                            born + d.clamp(par.latency_min, par.latency_max) + self.react()
                        }
                    }
                    Action::Writer { .. } => {
                        self.now + self.rng.exponential(self.plan.cfg.think as f64)
                    }
                    // The reconciler's next run after the damage, at a
                    // uniformly random phase of its period.
                    Action::Reconcile => {
                        let par = &self.plan.m.params;
                        let hi = par.band(par.reconcile.unwrap_or(0)).1 + par.step;
                        born + self.rng.between(0, hi)
                    }
                    // The observer of `detected_within` looks just past
                    // the bound: if the damage is still unflagged, it is late.
                    Action::DetectionLate => born + lo + 1,
                    _ => born + lo,
                };
                self.others.push(OtherPlan {
                    action: e.action,
                    born,
                    at,
                    seen: true,
                });
                at
            }
        };
        let mut t = at.max(born + lo);
        if let Action::Replicate { .. } = e.action {
            t = t.min(born + self.plan.m.params.latency_max);
        }
        t.max(self.now)
    }

    /// Plans every message in flight (matching the plans of earlier steps
    /// by packet) and adds its arrival, loss or hold-back.
    fn messages(&mut self, enabled: &[Enabled]) {
        let p = self.plan;
        let par = &p.m.params;
        for mp in &mut self.msgs {
            mp.seen = false;
        }
        let net = self.s.world.net.clone();
        let mut which: Vec<Option<usize>> = vec![None; net.len()];
        // Exact matches first (same packet, same sending time), then any
        // plan of the same packet (a message whose clock was re-armed).
        for exact in [true, false] {
            for (j, msg) in net.iter().enumerate() {
                if which[j].is_some() || msg.arrived {
                    continue;
                }
                let pkt = packet(msg);
                let born = self.born(msg.clk);
                let found = self
                    .msgs
                    .iter()
                    .position(|x| !x.seen && x.pkt == pkt && (!exact || x.sent == born));
                if let Some(i) = found {
                    self.msgs[i].seen = true;
                    which[j] = Some(i);
                }
            }
        }
        for (j, msg) in net.iter().enumerate() {
            if which[j].is_some() || msg.arrived {
                continue;
            }
            let born = self.born(msg.clk);
            let fresh = Msg {
                late: false,
                held: false,
                ..*msg
            };
            let react = p.m.msg_window(&fresh).hi.unwrap_or(par.latency_max) - par.latency_max;
            let d = self.rng.sample(&p.latency);
            let tail = d > par.latency_max && p.on(FaultKind::Delay);
            let lose = p.on(FaultKind::Loss) && self.rng.chance(p.cfg.loss);
            let lat = if tail {
                d
            } else {
                d.clamp(par.latency_min, par.latency_max)
            };
            let reaction = if react > 0 {
                self.rng.between(0, react)
            } else {
                0
            };
            self.msgs.push(MsgPlan {
                pkt: packet(msg),
                sent: born,
                at: born + lat + reaction,
                lose,
                tail,
                seen: true,
            });
            which[j] = Some(self.msgs.len() - 1);
        }
        for (j, msg) in net.iter().enumerate() {
            let Some(i) = which[j] else { continue };
            let mp = self.msgs[i];
            let born = self.born(msg.clk);
            let win = p.m.msg_window(msg);
            let deliver = enabled
                .iter()
                .any(|e| e.action == Action::Deliver { msg: *msg });
            // A deliverable message must arrive (or go) by its deadline; a
            // folded reply (arriving unseen) can be struck only while it is
            // still on its way.
            let folded = p.m.folded(&self.s.world, msg);
            if folded && self.now > born + par.latency_max {
                continue;
            }
            let hi = if deliver {
                win.hi.map(|h| born + h)
            } else if folded {
                Some(born + par.latency_max)
            } else {
                None
            };
            let cap = |t: Micros| hi.map_or(t, |h| t.min(h));
            let (t, a) = if mp.lose {
                (cap(mp.at), Action::Drop { msg: *msg })
            } else if mp.tail && !msg.held {
                (cap(mp.sent + par.latency_max), Action::Delay { msg: *msg })
            } else if deliver {
                (cap(mp.at.max(born + win.lo)), Action::Deliver { msg: *msg })
            } else {
                continue;
            };
            if enabled.iter().any(|e| e.action == a) {
                self.cands.push((t.max(self.now), Cand::Step(a)));
            }
        }
        self.msgs.retain(|x| x.seen);
    }

    fn check(&mut self) {
        for (i, inv) in Invariant::ALL.into_iter().enumerate() {
            if self.plan.applies[i]
                && self.out.broke[i].is_none()
                && !inv.holds_at(&self.plan.m, &self.s)
            {
                self.out.broke[i] = Some(Break {
                    acquisitions: self.out.acquisitions,
                    step: self.out.steps,
                    at_us: self.now,
                });
            }
        }
    }
}

/// A message as a packet: what stays the same while it travels (closing a
/// connection relabels it, it moves up its queue, a fault holds it, a
/// pause re-arms its clock: still the same packet).
fn packet(m: &Msg) -> Msg {
    Msg {
        orphan: false,
        conn: 0,
        seq: 0,
        held: false,
        late: false,
        arrived: false,
        repl_wait: 0,
        clk: Clk(0),
        ..*m
    }
}
