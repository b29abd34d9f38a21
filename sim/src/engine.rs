//! One simulated run: the model's own rules, driven by a seeded random
//! environment.
//!
//! The model decides everything it times itself (key expiry, request
//! timeouts, retry backoff floors, watchdog timers) and which steps are due;
//! the simulator decides what the environment does and when: how long each
//! message travels and whether it is lost, how long each critical section
//! works, when each client starts an acquisition, and when faults strike. It
//! keeps those decisions as timed events and drives the model with the
//! model's own actions only, so every run is a path the checker could have
//! taken and its trace replays.
//!
//! The loop, at the current instant:
//! 1. the candidates are the model's urgent steps plus every environment
//!    event that is due and that the model allows now; the scheduler picks
//!    one (at random, or the first) and it is applied;
//! 2. when there is none, time jumps straight to the earlier of the model's
//!    next deadline and the next event, in one `Tick`.
//!
//! After each step the simulator schedules what the new state calls for (a
//! message just sent gets its arrival, a client that just entered its
//! critical section gets its end of work, an idle client gets its start)
//! and checks every invariant.

use crate::config::{Scheduler, SimConfig};
use crate::dist::{LogNormal, Rng};
use locklab_models::protocols::Service;
use locklab_models::world::{Chan, Log, Msg, Node, Phase, Role, World};
use locklab_models::{Action, FaultKind, Invariant, LockModel};

/// Steps after which a run is cut (far beyond any run the horizon allows;
/// a guard against a model that stops advancing time).
const STEP_CAP: u64 = 20_000_000;

/// What every run of one configuration shares.
pub struct Plan {
    pub cfg: SimConfig,
    pub m: LockModel,
    /// Per entry of `Invariant::ALL`: whether it applies to the protocol.
    pub applies: [bool; Invariant::ALL.len()],
    work: LogNormal,
    latency: LogNormal,
    repl_lag: LogNormal,
    replicated: bool,
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
        Ok(Plan {
            cfg: cfg.clone(),
            applies: Invariant::ALL.map(|i| i.applies(&m)),
            work: LogNormal::from_percentiles(cfg.work_p50, cfg.work_p99),
            latency: LogNormal::from_percentiles(cfg.latency_p50, cfg.latency_p99),
            repl_lag: LogNormal::from_percentiles(cfg.repl_lag_p50, cfg.repl_lag_p99),
            replicated: proto.service() == Service::Replicated,
            pause: LogNormal::from_percentiles(cfg.pause_p50, cfg.pause_p99),
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
    /// Simulated time, ms.
    pub at_ms: u64,
}

/// What one run did.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Acquisitions begun (a client's first attempt at a round; retries of
    /// the same round do not count again).
    pub acquisitions: u32,
    pub steps: u64,
    pub sim_ms: u64,
    /// Stopped before every client was done: at the horizon, at the step
    /// cap, or stuck with nothing left that could happen.
    pub cut: bool,
    /// Per entry of `Invariant::ALL`: its first violation.
    pub broke: [Option<Break>; Invariant::ALL.len()],
    /// Every action applied, when recording.
    pub path: Vec<Action>,
}

/// An environment event and the model action it becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ev {
    /// An idle client begins (or retries) an acquisition.
    Start(u8),
    /// A client's critical-section work is done.
    Finish(u8),
    /// A paused client resumes.
    Resume(u8),
    /// A message reaches its receiver.
    Arrive(Msg),
    /// A message is lost instead.
    Lose(Msg),
    /// The replica applies the next write of this primary's stream.
    Replicate(u8),
    /// A fault strikes: Pause, Crash, ClockJump, Restart or Failover.
    Fault(Action),
}

impl Ev {
    fn action(self) -> Action {
        match self {
            Ev::Start(client) => Action::Step { client },
            Ev::Finish(client) => Action::Finish { client },
            Ev::Resume(client) => Action::Resume { client },
            Ev::Arrive(msg) => Action::Deliver { msg },
            Ev::Lose(msg) => Action::Drop { msg },
            Ev::Replicate(server) => Action::Replicate { server },
            Ev::Fault(a) => a,
        }
    }
    fn client(self) -> Option<u8> {
        match self {
            Ev::Start(c) | Ev::Finish(c) => Some(c),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Timed {
    at: u64,
    seq: u64,
    ev: Ev,
}

#[derive(Clone, Copy, Debug)]
enum Cand {
    Model(Action),
    Event(usize),
}

/// Runs seeds of one plan, reusing its buffers from run to run.
pub struct Runner<'p> {
    plan: &'p Plan,
    rng: Rng,
    w: World,
    now: u64,
    seq: u64,
    events: Vec<Timed>,
    enabled: Vec<Action>,
    cands: Vec<Cand>,
    due: Vec<(u64, u64, usize)>,
    matched: Vec<bool>,
    /// Per client: the round whose first attempt has begun.
    started: Vec<Option<u8>>,
    /// Per client: when its current pause began.
    paused_at: Vec<u64>,
    record: bool,
    out: RunResult,
}

impl<'p> Runner<'p> {
    pub fn new(plan: &'p Plan) -> Runner<'p> {
        Runner {
            plan,
            rng: Rng::new(0),
            w: plan.m.init(),
            now: 0,
            seq: 0,
            events: Vec::new(),
            enabled: Vec::new(),
            cands: Vec::new(),
            due: Vec::new(),
            matched: Vec::new(),
            started: Vec::new(),
            paused_at: Vec::new(),
            record: false,
            out: RunResult::default(),
        }
    }

    /// Runs the seed; with `record`, keeps every action in `path`.
    pub fn run(&mut self, seed: u64, record: bool) -> RunResult {
        let n = self.plan.m.params.clients as usize;
        self.rng = Rng::new(seed);
        self.w = self.plan.m.init();
        self.now = 0;
        self.seq = 0;
        self.events.clear();
        self.started.clear();
        self.started.resize(n, None);
        self.paused_at.clear();
        self.paused_at.resize(n, 0);
        self.record = record;
        self.out = RunResult::default();
        self.start_faults();
        self.reconcile();
        self.check();
        self.go();
        self.out.sim_ms = self.now;
        std::mem::take(&mut self.out)
    }

    fn go(&mut self) {
        let p = self.plan;
        let horizon = p.cfg.horizon as u64;
        loop {
            if self.all_broken() || self.finished() {
                return;
            }
            if self.out.steps >= STEP_CAP {
                self.out.cut = true;
                return;
            }
            p.m.enabled(&self.w, &mut self.enabled);
            self.settle_faults();
            self.collect();
            if self.cands.is_empty() {
                let next_event = self
                    .events
                    .iter()
                    .filter(|e| e.at > self.now)
                    .map(|e| e.at)
                    .min();
                let deadline = self.deadline().map(|d| self.now + d as u64);
                let Some(until) = [next_event, deadline].into_iter().flatten().min() else {
                    // Nothing is due and nothing ever will be, yet some
                    // client has not finished: the run is stuck.
                    self.out.cut = true;
                    return;
                };
                if until > horizon {
                    self.out.cut = true;
                    return;
                }
                let ticks = (until - self.now) as u32;
                self.take(Action::Tick { ticks });
                continue;
            }
            let pick = match p.cfg.scheduler {
                Scheduler::Random => self.rng.index(self.cands.len()),
                Scheduler::Ordered => 0,
            };
            match self.cands[pick] {
                Cand::Model(a) => self.take(a),
                Cand::Event(i) => {
                    let e = self.events.remove(i);
                    self.fire(e.ev);
                }
            }
        }
    }

    /// The model's next deadline. `enabled` offers time up to it as a
    /// `Tick` when it is more than one tick away; only otherwise is it
    /// computed again.
    fn deadline(&self) -> Option<u32> {
        let whole = self.enabled.iter().find_map(|a| match a {
            Action::Tick { ticks } if *ticks > 1 => Some(*ticks),
            _ => None,
        });
        whole.or_else(|| self.plan.m.next_deadline(&self.w))
    }

    /// Every client is done or dead, nothing is in flight, no watchdog runs.
    fn finished(&self) -> bool {
        self.w.net.is_empty()
            && self
                .w
                .clients
                .iter()
                .all(|c| (!c.alive || c.phase == Phase::Done) && c.wd.is_none())
    }

    fn all_broken(&self) -> bool {
        (0..Invariant::ALL.len()).all(|i| !self.plan.applies[i] || self.out.broke[i].is_some())
    }

    /// Applies one model action and updates everything that follows from it.
    fn take(&mut self, a: Action) {
        if let Action::Step { client } = a {
            let c = &self.w.clients[client as usize];
            if c.phase == Phase::Idle && self.started[client as usize] != Some(c.round) {
                self.started[client as usize] = Some(c.round);
                self.out.acquisitions += 1;
            }
        }
        self.plan.m.apply(&mut self.w, &a, &mut Log::off());
        self.out.steps += 1;
        if let Action::Tick { ticks } = a {
            self.now += ticks as u64;
        }
        if self.record {
            self.out.path.push(a);
        }
        if self.plan.replicated {
            self.reconcile_replication();
        }
        // Time passing, pauses, resumes, clock jumps and the end of work
        // neither send nor take messages nor change what a client is doing
        // (its phase, whether it lives): nothing new to schedule.
        if !matches!(
            a,
            Action::Tick { .. }
                | Action::Pause { .. }
                | Action::Resume { .. }
                | Action::ClockJump { .. }
                | Action::Finish { .. }
        ) {
            self.reconcile();
        }
        self.check();
    }

    /// An environment event is applied.
    fn fire(&mut self, ev: Ev) {
        self.take(ev.action());
        match ev {
            Ev::Fault(Action::Pause { client }) => {
                self.paused_at[client as usize] = self.now;
                let d = self.rng.sample(&self.plan.pause);
                self.schedule(d, Ev::Resume(client));
            }
            Ev::Resume(client) => {
                // Work and think time do not progress while paused.
                let d = self.now - self.paused_at[client as usize];
                for e in self.events.iter_mut() {
                    if e.ev.client() == Some(client) {
                        e.at += d;
                    }
                }
                self.next_fault(Action::Pause { client });
            }
            Ev::Fault(Action::Crash { .. }) => {}
            Ev::Fault(a) => self.next_fault(a),
            _ => {}
        }
    }

    /// A fault that is due but that the model does not offer now (its
    /// target is down, dead, done, or a pause would change nothing).
    fn missed(&mut self, a: Action) {
        match a {
            Action::Pause { client } => {
                let c = &self.w.clients[client as usize];
                if !c.alive {
                    return;
                }
                // An idle client with nothing in flight: the pause only
                // postpones its next start.
                let d = self.rng.sample(&self.plan.pause);
                let until = self.now + d;
                for e in self.events.iter_mut() {
                    if e.ev == Ev::Start(client) && e.at < until {
                        e.at = until;
                    }
                }
                if let Some(gap) = self.rng.arrival(self.plan.cfg.pause_rate) {
                    self.push(until + gap, Ev::Fault(a));
                }
            }
            Action::Crash { client } => {
                if self.w.clients[client as usize].phase != Phase::Done {
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
        let servers = self.w.redis.len() as u8;
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
            _ => 0.0,
        };
        let Some(gap) = self.rng.arrival(rate) else {
            return;
        };
        let a = match a {
            Action::ClockJump { node, .. } => {
                let j = self.plan.m.params.jump as i32;
                let by = if self.rng.chance(0.5) { j } else { -j };
                Action::ClockJump { node, by }
            }
            other => other,
        };
        self.schedule(gap, Ev::Fault(a));
    }

    fn schedule(&mut self, after: u64, ev: Ev) {
        self.push(self.now + after, ev);
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Timed {
            at,
            seq: self.seq,
            ev,
        });
    }

    /// Due faults the model does not offer now are skipped (and their
    /// process goes on); every other due event waits until the model allows it.
    fn settle_faults(&mut self) {
        let mut i = 0;
        while i < self.events.len() {
            let e = &self.events[i];
            if e.at <= self.now
                && let Ev::Fault(a) = e.ev
                && !self.enabled.contains(&a)
            {
                self.events.remove(i);
                self.missed(a);
                continue;
            }
            i += 1;
        }
    }

    /// The model's urgent steps (in its order), then the due events it
    /// allows (by time, then by when they were scheduled).
    fn collect(&mut self) {
        self.cands.clear();
        for a in &self.enabled {
            if !urgent(&self.w, a) {
                // `enabled` lists urgent steps first.
                break;
            }
            self.cands.push(Cand::Model(*a));
        }
        self.due.clear();
        for (i, e) in self.events.iter().enumerate() {
            if e.at <= self.now && self.enabled.contains(&e.ev.action()) {
                self.due.push((e.at, e.seq, i));
            }
        }
        self.due.sort_unstable();
        self.cands
            .extend(self.due.iter().map(|(_, _, i)| Cand::Event(*i)));
    }

    /// Schedules what the state now calls for, and forgets events it no
    /// longer has a use for.
    fn reconcile(&mut self) {
        let p = self.plan;
        // Clients: a start for each idle one, an end of work for each one
        // in its critical section.
        let n = self.w.clients.len();
        let mut has = [(false, false); 8];
        let w = &self.w;
        self.events.retain(|e| match e.ev {
            Ev::Start(c) => {
                let cl = &w.clients[c as usize];
                let keep = cl.alive && cl.phase == Phase::Idle && cl.timer.is_some();
                has[c as usize].0 |= keep;
                keep
            }
            Ev::Finish(c) => {
                let cl = &w.clients[c as usize];
                let keep = cl.alive && cl.phase == Phase::Work && cl.timer.is_none();
                has[c as usize].1 |= keep;
                keep
            }
            _ => true,
        });
        for (c, (has_start, has_finish)) in has.into_iter().enumerate().take(n) {
            let cl = &self.w.clients[c];
            if !cl.alive {
                continue;
            }
            let (phase, timer, round) = (cl.phase, cl.timer, cl.round);
            if phase == Phase::Idle && timer.is_some() && !has_start {
                let retry = self.started[c] == Some(round);
                let d = if retry {
                    self.rng
                        .between(p.cfg.backoff_min as u64, p.cfg.backoff_max as u64)
                } else {
                    self.rng.exponential(p.cfg.think)
                };
                self.schedule(d, Ev::Start(c as u8));
            }
            if phase == Phase::Work && timer.is_none() && !has_finish {
                let d = self.rng.sample(&p.work);
                self.schedule(d, Ev::Finish(c as u8));
            }
        }
        // Messages: each one in transit has exactly one arrival (or loss).
        let gathers = p.m.proto.gathers_replies();
        self.matched.clear();
        self.matched.resize(self.w.net.len(), false);
        let mut i = 0;
        while i < self.events.len() {
            let (Ev::Arrive(m) | Ev::Lose(m)) = self.events[i].ev else {
                i += 1;
                continue;
            };
            let found = self.w.net.iter().enumerate().position(|(j, x)| {
                !self.matched[j] && in_transit(x, gathers) && same_packet(x, &m)
            });
            match found {
                Some(j) => {
                    self.matched[j] = true;
                    // The sender may have given up on it meanwhile.
                    let now = self.w.net[j];
                    self.events[i].ev = match self.events[i].ev {
                        Ev::Lose(_) => Ev::Lose(now),
                        _ => Ev::Arrive(now),
                    };
                    i += 1;
                }
                None => {
                    self.events.remove(i);
                }
            }
        }
        let loss = p.on(FaultKind::Loss);
        for j in 0..self.w.net.len() {
            let msg = self.w.net[j];
            if self.matched[j] || !in_transit(&msg, gathers) {
                continue;
            }
            let d = self.rng.sample(&p.latency);
            let ev = if loss && self.rng.chance(p.cfg.loss) {
                Ev::Lose(msg)
            } else {
                Ev::Arrive(msg)
            };
            self.schedule(d, ev);
        }
    }

    /// One pending replication per primary with writes its replica has
    /// not applied (time passing can add one: a key expiring on the primary
    /// replicates its `DEL`).
    fn reconcile_replication(&mut self) {
        for s in 0..self.w.redis.len() {
            let server = s as u8;
            let pending = self
                .events
                .iter()
                .position(|e| e.ev == Ev::Replicate(server));
            let n = &self.w.redis[s];
            let replica_up = self
                .w
                .redis
                .iter()
                .any(|r| r.role == Role::Replica && r.is_up());
            let wanted =
                replica_up && n.role == Role::Primary && n.is_up() && !n.backlog.is_empty();
            match (wanted, pending) {
                (true, None) => {
                    let d = self.rng.sample(&self.plan.repl_lag);
                    self.schedule(d, Ev::Replicate(server));
                }
                (false, Some(i)) => {
                    self.events.remove(i);
                }
                _ => {}
            }
        }
    }

    fn check(&mut self) {
        for (i, inv) in Invariant::ALL.into_iter().enumerate() {
            if self.plan.applies[i]
                && self.out.broke[i].is_none()
                && !inv.holds(&self.plan.m, &self.w)
            {
                self.out.broke[i] = Some(Break {
                    acquisitions: self.out.acquisitions,
                    step: self.out.steps,
                    at_ms: self.now,
                });
            }
        }
    }
}

/// Whether `a` is one of the steps the model says must happen before time
/// may pass (see `LockModel::enabled`): a busy client's due step or a
/// watchdog timer. Under open timing no delivery or replication is urgent
/// (the simulator times them), and an idle client's start is its own choice.
fn urgent(w: &World, a: &Action) -> bool {
    match *a {
        Action::Step { client } => w.clients[client as usize].phase != Phase::Idle,
        Action::Watchdog { .. } => true,
        _ => false,
    }
}

/// Whether `m` is still travelling. A reply to a gathering (Redlock) client
/// that has arrived waits, unheld, in its socket buffer until the client's
/// gathering step reads it (see `client::gather_ready`).
fn in_transit(m: &Msg, gathers: bool) -> bool {
    !(gathers && matches!(m.to, Node::Client(_)) && m.chan == Chan::Main && m.held.is_none())
}

/// The same packet, whether or not its sender has since given up on it.
fn same_packet(a: &Msg, b: &Msg) -> bool {
    // Closing a connection relabels what was sent on it, and a message
    // moves up its queue as the ones ahead arrive: still the same packet.
    let plain = |m: &Msg| Msg {
        orphan: false,
        conn: 0,
        seq: 0,
        ..*m
    };
    plain(a) == plain(b)
}
