//! The model: a protocol plus its parameters, the initial world, which steps
//! are enabled where and when, and what each step does. This is the one
//! transition function; the zone search, trace validation, the simulator
//! and the replayer all drive it.
//!
//! Time enters in three ways, all declared here and nowhere else:
//!
//! * every pending event has a **window** on its clock: it may happen once
//!   the clock reads `lo` (the step's *guard*) and must happen before it
//!   reads past `hi` (the state's *invariant*; `None` = no deadline). A
//!   message takes `--latency`; a client's reaction to a reply or a timer
//!   takes at most `--step` more; work takes `--work`. Faults are what goes
//!   beyond the windows: a `delay` lifts a message's deadline, a `slow`
//!   fault the work's, a `pause` every deadline of its process;
//! * rules **arm clocks** and **ask timing questions** through
//!   [`TimeCtx`](crate::time::TimeCtx) (is this key still live? is the
//!   Redlock validity still positive?);
//! * nothing else: there is no `Tick`. Time passes between steps, as far as
//!   the invariants let it.

use crate::action::Action;
use crate::client::{self, Ctx};
use crate::coord;
use crate::faults;
use crate::invariants::Invariant;
use crate::params::{ConfigError, Network, Params};
use crate::protocols::{Protocol, Service};
use crate::redis;
use crate::time::{Clk, Micros, TimeCtx};
use crate::world::{
    Chan, Client, ClockRole, Coord, Log, Msg, Node, Phase, RedisNode, Resource, Role, Status, Wait,
    WaitKind, WdState, World, same_queue,
};
use locklab_traces::EventKind;

/// A protocol with its parameters.
#[derive(Clone)]
pub struct LockModel {
    pub proto: &'static dyn Protocol,
    pub params: Params,
    /// The invariants that apply to the protocol.
    pub properties: Vec<Invariant>,
}

impl std::fmt::Debug for LockModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockModel")
            .field("protocol", &self.proto.name())
            .field("params", &self.params)
            .finish()
    }
}

/// When a pending event may happen (`lo`) and by when it must (`hi`), on
/// its clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub lo: Micros,
    pub hi: Option<Micros>,
}

/// A step the model offers, with its guard: it may be taken once `clk`
/// reads at least `lo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enabled {
    pub action: Action,
    pub guard: Option<(Clk, Micros)>,
}

impl LockModel {
    /// Builds a model after validating its parameters.
    pub fn new(proto: &'static dyn Protocol, params: Params) -> Result<LockModel, ConfigError> {
        params.validate(proto)?;
        let mut m = LockModel {
            proto,
            params,
            properties: Vec::new(),
        };
        m.properties = Invariant::ALL
            .into_iter()
            .filter(|i| i.applies(&m))
            .collect();
        Ok(m)
    }

    fn fifo(&self) -> bool {
        self.params.network == Network::Fifo
    }

    /// The world before anything happens: every client about to start (its
    /// start clock `c{i}` = clock i+1), the lock free, the resource at 0.
    pub fn init(&self) -> World {
        let redis = match self.proto.service() {
            Service::Single => vec![RedisNode::new(Role::Primary)],
            Service::Replicated => {
                vec![RedisNode::new(Role::Primary), RedisNode::new(Role::Replica)]
            }
            Service::Instances => {
                vec![RedisNode::new(Role::Primary); self.params.instances as usize]
            }
            Service::Consensus | Service::Nothing => Vec::new(),
        };
        let service = match self.proto.service() {
            Service::Consensus => Coord {
                sessions: vec![None; self.params.clients as usize],
                ..Coord::default()
            },
            _ => Coord::default(),
        };
        World {
            clients: (0..self.params.clients)
                .map(|i| Client {
                    per_attempt: self.params.value == crate::presets::LockValue::PerAttempt,
                    ..Client::new(Clk(i + 1))
                })
                .collect(),
            redis,
            net: Vec::new(),
            resource: {
                let mut r = Resource::default();
                for i in 0..self.params.unfenced_writers as usize {
                    r.writers[i] = crate::world::Writer::Ready;
                }
                // The reconciler has been running since before the clients
                // started, at an unknown phase; its runs only matter once
                // there is damage to find (`resource::note_damage`).
                r.recon = self.params.reconcile.map(|_| crate::world::Recon {
                    wait: None,
                    paused: None,
                    damage: None,
                    flagged: false,
                    missed: false,
                });
                r
            },
            faults_left: self.params.faults,
            ghost: Default::default(),
            coord: service,
        }
    }

    /// The window of a thread's wait.
    pub fn wait_window(&self, w: &Wait) -> Window {
        let p = &self.params;
        if w.late {
            return Window {
                lo: 0,
                hi: Some(p.step),
            };
        }
        // Timers run on the client's own clock, so their length spans a
        // band of real time when that clock's rate drifts; the work and a
        // step take real time.
        let timer = |d: Micros| {
            let (lo, hi) = p.band(d);
            (lo, Some(hi + p.step))
        };
        let (lo, hi) = match w.kind {
            WaitKind::Start => (0, None),
            // A backoff is a timer on the client's clock, bounded above
            // only when --retry-max says so.
            WaitKind::Backoff => (p.band(p.retry).0, p.retry_max.and_then(|m| timer(m).1)),
            WaitKind::Reply => timer(p.timeout),
            WaitKind::Work => (p.work_min, Some(p.work_max + p.step)),
            WaitKind::Slow => (p.work_min, None),
            WaitKind::Step => (0, Some(p.step)),
            WaitKind::Renewal => timer(p.renew_every),
            // The reconciler's next run after the damage: it runs every
            // period at a phase nothing ties to the clients', so anywhere
            // from at once to a whole period (on its clock) and a step.
            WaitKind::Reconcile => (0, timer(p.reconcile.unwrap_or(0)).1),
            // The last awaited reply arrives a latency after it was sent;
            // the client reads them all within a step of that.
            WaitKind::Gather => (p.latency_min, Some(p.latency_max + p.step)),
        };
        Window { lo, hi }
    }

    /// The part of a wait's window that is the event itself, without the
    /// client's reaction: past it, a paused client that resumes has the
    /// event behind it and reacts within one step.
    fn wait_event_end(&self, w: &Wait) -> Option<Micros> {
        self.wait_window(w)
            .hi
            .map(|h| if w.late { 0 } else { h - self.params.step })
    }

    /// Whether a reply to client `c` on `chan` is read by a gathering step
    /// (its arrival is one step, its reading another).
    fn buffered(&self, msg: &Msg) -> bool {
        matches!(msg.to, Node::Client(_)) && self.proto.gathers_replies() && msg.chan == Chan::Main
    }

    /// Whether this model's gathering clients read their replies
    /// without a step per arrival (`client::settle_gather`): Redlock
    /// clients that wait for every instance (`--decide all-replies`). A
    /// client that decides on the first quorum acts on an arrival, so each
    /// one stays a step. `--no-fold` ([`Params::fold_replies`]) turns the
    /// reduction off.
    pub fn folds(&self) -> bool {
        self.params.fold_replies
            && self.proto.gathers_replies()
            && self.params.decide == crate::presets::Decide::AllReplies
    }

    /// A reply on its way to a folding client (see [`LockModel::folds`]):
    /// it arrives unseen, some time within its latency, and its client's
    /// read decides whether it is there yet. No step of its own.
    pub fn folded(&self, w: &World, msg: &Msg) -> bool {
        self.buffered(msg)
            && !msg.arrived
            && self.folds()
            && matches!(msg.to, Node::Client(c) if !w.clients[c as usize].unfolded)
    }

    /// The window of a message in flight.
    pub fn msg_window(&self, msg: &Msg) -> Window {
        let p = &self.params;
        // A reply handled on arrival includes the client's reaction.
        let react = match msg.to {
            Node::Client(_) if !self.buffered(msg) => p.step,
            _ => 0,
        };
        let (lo, hi) = if msg.late {
            (0, react)
        } else {
            (p.latency_min, p.latency_max + react)
        };
        let hi = if msg.held {
            p.delay_max.map(|d| hi + d)
        } else {
            Some(hi)
        };
        Window { lo, hi }
    }

    fn msg_event_end(&self, msg: &Msg) -> Micros {
        if msg.late { 0 } else { self.params.latency_max }
    }

    /// Whether `msg` can arrive now (as far as the discrete state says).
    pub fn deliverable(&self, w: &World, msg: &Msg) -> bool {
        if msg.arrived
            || msg.repl_wait > 0
            || (self.fifo() && !w.is_head(msg))
            || self.folded(w, msg)
        {
            return false;
        }
        match msg.to {
            Node::Redis(s) => w.redis[s as usize].is_up(),
            Node::Service => true,
            Node::Client(c) => {
                let cl = &w.clients[c as usize];
                cl.paused.is_none()
                    && match msg.chan {
                        Chan::Main => cl.alive,
                        Chan::Watchdog => cl.wd.is_some(),
                    }
            }
        }
    }

    /// The steps enabled in `w`, in a fixed order, each with its guard.
    pub fn enabled(&self, w: &World, out: &mut Vec<Enabled>) {
        out.clear();
        for (i, c) in w.clients.iter().enumerate() {
            if c.runs()
                && let Some(wait) = c.wait
            {
                out.push(Enabled {
                    action: Action::Step { client: i as u8 },
                    guard: Some((wait.clk, self.wait_window(&wait).lo)),
                });
            }
        }
        for (i, c) in w.clients.iter().enumerate() {
            if c.runs()
                && let Some(g) = c.gather
            {
                out.push(Enabled {
                    action: Action::Gather { client: i as u8 },
                    guard: Some((g.clk, self.wait_window(&g).lo)),
                });
            }
        }
        for (i, c) in w.clients.iter().enumerate() {
            if c.paused.is_none()
                && let Some(wd) = c.wd
            {
                out.push(Enabled {
                    action: Action::Watchdog { client: i as u8 },
                    guard: Some((wd.wait.clk, self.wait_window(&wd.wait).lo)),
                });
            }
        }
        if let Some(r) = &w.resource.recon {
            if r.paused.is_none()
                && let Some(wait) = r.wait
            {
                out.push(Enabled {
                    action: Action::Reconcile,
                    guard: Some((wait.clk, self.wait_window(&wait).lo)),
                });
            }
            // The observer of `detected_within`: once the bound has passed
            // with the damage unflagged, it records the miss.
            if let (Some(d), false, false, Some(b)) =
                (r.damage, r.flagged, r.missed, self.params.detection_bound())
            {
                out.push(Enabled {
                    action: Action::DetectionLate,
                    guard: Some((d, b)),
                });
            }
        }
        for writer in crate::resource::writers_ready(w) {
            // An unfenced writer runs on its own schedule: any time.
            out.push(Enabled {
                action: Action::Writer { writer },
                guard: None,
            });
        }
        for (i, msg) in w.net.iter().enumerate() {
            let dup = i > 0 && w.net[i - 1] == *msg;
            if !dup && self.deliverable(w, msg) {
                out.push(Enabled {
                    action: Action::Deliver { msg: *msg },
                    guard: Some((msg.clk, self.msg_window(msg).lo)),
                });
            }
        }
        if let Some((p, clk)) = replication_head(w) {
            out.push(Enabled {
                action: Action::Replicate { server: p },
                guard: Some((clk, self.params.latency_min)),
            });
        }
        for (i, s) in w.redis.iter().enumerate() {
            if let Status::Down(clk) = s.status {
                out.push(Enabled {
                    action: Action::ComeUp { server: i as u8 },
                    guard: Some((clk, self.params.down_for())),
                });
            }
        }
        for (i, s) in w.coord.sessions.iter().enumerate() {
            if let Some(clk) = s.and_then(|s| s.clock()) {
                out.push(Enabled {
                    action: Action::SessionExpires { client: i as u8 },
                    guard: Some((clk, self.session_window().0)),
                });
            }
        }
        if crate::coord::reapable(self, w) {
            out.push(Enabled {
                action: Action::Reap,
                guard: None,
            });
        }
        let mut faults = Vec::new();
        faults::enabled(self, w, &mut faults);
        out.extend(faults.into_iter().map(|action| Enabled {
            action,
            guard: None,
        }));
    }

    /// The deadlines in force in `w`: each clock must read at most its
    /// bound (time cannot pass beyond the first of them).
    pub fn invariant(&self, w: &World, out: &mut Vec<(Clk, Micros)>) {
        out.clear();
        for c in &w.clients {
            match c.paused {
                Some(p) => {
                    if let Some(max) = self.params.pause_max {
                        out.push((p, max));
                    }
                }
                None => {
                    if c.runs()
                        && let Some(wait) = c.wait
                        && let Some(hi) = self.wait_window(&wait).hi
                    {
                        out.push((wait.clk, hi));
                    }
                    if let Some(wd) = c.wd
                        && let Some(hi) = self.wait_window(&wd.wait).hi
                    {
                        out.push((wd.wait.clk, hi));
                    }
                    if c.runs()
                        && let Some(g) = c.gather
                        && let Some(hi) = self.wait_window(&g).hi
                    {
                        out.push((g.clk, hi));
                    }
                }
            }
        }
        for msg in &w.net {
            if self.deliverable(w, msg)
                && let Some(hi) = self.msg_window(msg).hi
            {
                out.push((msg.clk, hi));
            }
        }
        if let Some((_, clk)) = replication_head(w) {
            out.push((clk, self.params.latency_max));
        }
        for s in &w.redis {
            if let Status::Down(clk) = s.status {
                out.push((clk, self.params.down_for()));
            }
        }
        for clk in w.coord.sessions.iter().flatten().filter_map(|s| s.clock()) {
            out.push((clk, self.session_window().1));
        }
        if let Some(r) = &w.resource.recon {
            match r.paused {
                Some(p) => {
                    if let Some(max) = self.params.pause_max {
                        out.push((p, max));
                    }
                }
                None => {
                    if let Some(wait) = r.wait
                        && let Some(hi) = self.wait_window(&wait).hi
                    {
                        out.push((wait.clk, hi));
                    }
                }
            }
        }
    }

    /// When the consensus service expires a silent session (lease): its
    /// TTL on the service's own clock, so a band of real time when that
    /// clock's rate drifts.
    pub fn session_window(&self) -> (Micros, Micros) {
        self.params.band(self.params.ttl)
    }

    /// How the passed list compares fault budgets (see
    /// [`faults::BudgetOrder`]): a state with more budget left covers one
    /// with less when `subsume`, except in the budgets a rule reads (those
    /// of the heartbeat fold's disturbing kinds, and the faults used under
    /// a cap, where heartbeats may be folded).
    pub fn budget_order(&self, subsume: bool) -> faults::BudgetOrder {
        let mut order = faults::BudgetOrder {
            subsume,
            ..faults::BudgetOrder::default()
        };
        if subsume && coord::may_fold_heartbeats(self) {
            for k in coord::HEARTBEAT_DISTURBERS {
                order.same |= 1 << k.index();
            }
            order.same_used = self.params.max_faults.is_some();
        }
        // A Redlock instance has no replica: its failover is a restart
        // (`redis::failover`, `lose_everything`), offered where a restart
        // is, so only how many of the two are left tells states apart.
        if subsume && self.proto.service() == Service::Instances {
            let pool = (1 << faults::FaultKind::Restart.index())
                | (1 << faults::FaultKind::Failover.index());
            if order.same & pool == 0 {
                order.pool = pool;
            }
        }
        order
    }

    /// The longest a session can go without a keepalive reaching the
    /// service while its client's heartbeat runs undisturbed (no pause,
    /// crash, loss or delay): `None` when that is not below the shortest
    /// time the service may take to expire it, so that the heartbeat is
    /// never folded (docs/model.md, "Folded heartbeats").
    ///
    /// From a keepalive taken at `t`, its answer is handled by `t +
    /// latency_max + step` (a timeout can only come sooner), the timer
    /// fires within its window (`renew_every` on the client's drifting
    /// clock, and a step) after that and sends the next keepalive, which
    /// arrives within `latency_max`. A keepalive that timed out and was
    /// sent again on a new connection can be overtaken by its successor,
    /// which costs at most one more `latency_max` (and a step, kept for
    /// margin) between two keepalives taken.
    pub fn heartbeat_silence(&self) -> Option<Micros> {
        let p = &self.params;
        let timer = self
            .wait_window(&Wait {
                kind: WaitKind::Renewal,
                late: false,
                clk: Clk(0),
            })
            .hi?;
        let silence = timer + 3 * p.latency_max + 2 * p.step;
        (silence < self.session_window().0).then_some(silence)
    }

    /// The largest constants a clock of this role is ever compared with
    /// before it is reset, as a lower bound (`x ≥ c`, `x > c`: L) and as an
    /// upper bound (`x ≤ c`, `x < c`: U); `None` where it never is. These
    /// are the bounds of Extra⁺_LU extrapolation (Behrmann, Bouyer, Larsen,
    /// Pelánek 2006), sound and complete for reachability.
    pub fn lu_bounds(&self, role: ClockRole) -> (Option<Micros>, Option<Micros>) {
        let p = &self.params;
        let jumps = p.jump * p.faults.get(faults::FaultKind::ClockJump) as Micros;
        let both = |c: Micros| (Some(c), Some(c));
        match role {
            // Liveness and validity questions compare both ways.
            // (A drifting clock's reading stands for a band of real time:
            // its top is the largest constant.)
            ClockRole::Key | ClockRole::T1 => both(p.band(p.ttl + jumps).1),
            ClockRole::Replication => both(p.band(p.ttl + jumps).1.max(p.latency_max)),
            ClockRole::Down => both(p.down_for()),
            ClockRole::Session => both(self.session_window().1),
            ClockRole::Pause => (None, p.pause_max),
            ClockRole::Wait(kind) => {
                let w = Wait {
                    kind,
                    late: false,
                    clk: Clk(0),
                };
                let win = self.wait_window(&w);
                // A resume asks whether the event is past its end.
                let end = self.wait_event_end(&w);
                let lo = match (win.lo, end) {
                    (0, None) => None,
                    (lo, e) => Some(lo.max(e.unwrap_or(0))),
                };
                (lo, win.hi)
            }
            ClockRole::Damage => {
                let b = p.detection_bound();
                (b, b)
            }
            ClockRole::Message => (
                Some(p.latency_max),
                Some(p.latency_max + p.step + p.delay_max.unwrap_or(0)),
            ),
        }
    }

    /// Applies `a` to `w` in place. `a` must be enabled in `w`, and its
    /// time is `t`'s.
    pub fn apply(&self, w: &mut World, a: &Action, t: &mut TimeCtx, log: &mut Log) {
        let x = &mut Ctx { m: self, w, log, t };
        match *a {
            Action::Step { client } => client::step(x, client),
            Action::Watchdog { client } => client::watchdog(x, client),
            Action::Gather { client } => client::gather_read(x, client),
            Action::Deliver { msg } => {
                if self.buffered(&msg) {
                    if let Node::Client(c) = msg.to {
                        client::deliver(x, c, msg);
                    }
                    return;
                }
                x.w.remove_msg(&msg);
                released(x, &msg);
                match msg.to {
                    Node::Redis(s) => redis::deliver(x, s, msg),
                    Node::Service => coord::deliver(x, msg),
                    Node::Client(c) => client::deliver(x, c, msg),
                }
            }
            Action::Replicate { server } => redis::replicate(x, server),
            Action::ComeUp { server } => redis::come_up(x, server as usize),
            Action::SessionExpires { client } => coord::expire(x, client),
            Action::Reap => coord::reap(x),
            Action::Writer { writer } => crate::resource::writer_step(self, x.w, writer, x.log),
            Action::Reconcile => crate::resource::reconcile(x),
            Action::ResumeReconciler => resume_reconciler(x),
            Action::DetectionLate => crate::resource::detection_late(x),
            _ => {
                faults::apply(x, a);
            }
        }
        if self.folds() {
            client::settle_gather(x);
        }
        crate::resource::note_damage(x);
    }

    /// Name of the participant an action belongs to, for traces.
    pub fn actor(&self, w: &World, a: &Action) -> String {
        match *a {
            Action::Step { client } | Action::Watchdog { client } | Action::Gather { client } => {
                w.client_name(client)
            }
            Action::Deliver { msg } => w.node_name(msg.to),
            Action::Replicate { server } => {
                let r = w
                    .redis
                    .iter()
                    .position(|n| n.role == Role::Replica)
                    .unwrap_or(server as usize);
                w.server_name(r as u8)
            }
            Action::ComeUp { server } => w.server_name(server),
            Action::SessionExpires { .. } | Action::Reap => "service".into(),
            Action::Writer { writer } => crate::resource::writer_name(writer),
            Action::Reconcile
            | Action::PauseReconciler
            | Action::ResumeReconciler
            | Action::DetectionLate => crate::resource::RECONCILER.into(),
            _ => "env".into(),
        }
    }
}

/// The primary whose replication stream has a write its live replica can
/// apply next, and that write's clock.
fn replication_head(w: &World) -> Option<(u8, Clk)> {
    let replica_up = w.redis.iter().any(|r| r.role == Role::Replica && r.is_up());
    if !replica_up {
        return None;
    }
    w.redis.iter().enumerate().find_map(|(i, s)| {
        (s.role == Role::Primary && s.is_up())
            .then(|| s.backlog.first().map(|op| (i as u8, op.exp.since)))
            .flatten()
    })
}

/// If the event timed by `clk` is past `end` now, the process was kept from
/// it (paused, or blocked behind a held message): returns a fresh clock for
/// the catch-up window.
fn catch_up(x: &mut Ctx, clk: Clk, end: Micros) -> Option<Clk> {
    if x.t.ask(clk, end, false) {
        None
    } else {
        Some(x.t.reset())
    }
}

/// A paused client resumes. Whatever fell due while it was frozen (its
/// timers, its work, replies that reached it) is handled within one step.
pub fn resume(x: &mut Ctx, c: u8) {
    let ci = c as usize;
    x.w.clients[ci].paused = None;
    ev_resume(x, c);
    if x.w.clients[ci].runs()
        && let Some(w) = x.w.clients[ci].wait
        && let Some(end) = x.m.wait_event_end(&w)
        && let Some(clk) = catch_up(x, w.clk, end)
    {
        x.w.clients[ci].wait = Some(Wait {
            late: true,
            clk,
            ..w
        });
    }
    if let Some(wd) = x.w.clients[ci].wd
        && let Some(end) = x.m.wait_event_end(&wd.wait)
        && let Some(clk) = catch_up(x, wd.wait.clk, end)
        && let Some(d) = &mut x.w.clients[ci].wd
    {
        d.wait = Wait {
            late: true,
            clk,
            ..d.wait
        };
    }
    // The read of folded replies: due within a step of the resume if the
    // last reply came in while the client was frozen.
    if let Some(g) = x.w.clients[ci].gather
        && let Some(end) = x.m.wait_event_end(&g)
        && let Some(clk) = catch_up(x, g.clk, end)
    {
        x.w.clients[ci].gather = Some(Wait {
            late: true,
            clk,
            ..g
        });
    }
    // Replies reach the socket while the process is frozen; a folded one
    // keeps its own clock, read when the client reads its replies.
    let me = Node::Client(c);
    let waiting: Vec<Msg> =
        x.w.net
            .iter()
            .filter(|m| m.to == me && !m.held && !m.arrived && !x.m.folded(x.w, m))
            .copied()
            .collect();
    for msg in waiting {
        let end = x.m.msg_event_end(&msg);
        if let Some(clk) = catch_up(x, msg.clk, end)
            && let Some(m) = x.w.net.iter_mut().find(|m| **m == msg)
        {
            m.late = true;
            m.clk = clk;
        }
    }
    x.w.net.sort_unstable();
}

/// The paused reconciler resumes: a run that fell due while it was frozen
/// happens within one step.
fn resume_reconciler(x: &mut Ctx) {
    let Some(r) = x.w.resource.recon else { return };
    let mut r = r;
    r.paused = None;
    if let Some(w) = r.wait
        && let Some(end) = x.m.wait_event_end(&w)
        && let Some(clk) = catch_up(x, w.clk, end)
    {
        r.wait = Some(Wait {
            late: true,
            clk,
            ..w
        });
    }
    x.w.resource.recon = Some(r);
    crate::ev!(
        x.log,
        EventKind::Fault,
        crate::resource::RECONCILER.to_string(),
        None,
        "resumes: the pause is over"
    );
}

fn ev_resume(x: &mut Ctx, c: u8) {
    crate::ev!(
        x.log,
        EventKind::Fault,
        x.w.client_name(c),
        None,
        "resumes: the pause is over"
    );
}

/// `msg` left its connection (arrived or lost). If it was held back, what
/// queued behind it was blocked: whatever of that is overdue arrives at
/// once (TCP hands over the buffered bytes together).
pub fn released(x: &mut Ctx, msg: &Msg) {
    if !msg.held || !x.m.fifo() {
        return;
    }
    let behind: Vec<Msg> =
        x.w.net
            .iter()
            .filter(|m| same_queue(m, msg) && !m.held && !m.late && !m.arrived)
            .copied()
            .collect();
    for b in behind {
        let end = x.m.msg_event_end(&b);
        if let Some(clk) = catch_up(x, b.clk, end)
            && let Some(m) = x.w.net.iter_mut().find(|m| **m == b)
        {
            m.late = true;
            m.clk = clk;
        }
    }
    x.w.net.sort_unstable();
}

/// Used by traces: the phase name of a client.
pub fn phase_of(w: &World, c: u8) -> Phase {
    w.clients[c as usize].phase
}

/// Used by traces: the watchdog state of a client.
pub fn wd_state(w: &World, c: u8) -> Option<WdState> {
    w.clients[c as usize].wd.map(|d| d.state)
}
