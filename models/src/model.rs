//! The model: a protocol plus its parameters, the initial world, which steps
//! are enabled where, and what each step does. This is the one transition
//! function; the exhaustive search, the trace replayer, stateright's
//! Explorer and the simulator all drive it.

use crate::action::Action;
use crate::client::{self, Ctx};
use crate::coord;
use crate::faults;
use crate::invariants::Invariant;
use crate::params::{ConfigError, Params};
use crate::protocols::{Protocol, Service};
use crate::redis;
use crate::world::{Client, Coord, Log, Node, Phase, RedisNode, Resource, Role, Ticks, World};
use locklab_traces::EventKind;

/// A protocol with its parameters.
#[derive(Clone)]
pub struct LockModel {
    pub proto: &'static dyn Protocol,
    pub params: Params,
    /// The invariants `stateright::Model::properties` reports (stateright's
    /// BFS gives shortest paths only with one property per search).
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

    /// The world before anything happens: every client about to start, the
    /// lock free, the resource at 0.
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
            clients: vec![Client::new(); self.params.clients as usize],
            redis,
            net: Vec::new(),
            resource: {
                let mut r = Resource::default();
                for i in 0..self.params.unfenced_writers as usize {
                    r.writers[i] = crate::world::Writer::Ready;
                }
                r
            },
            faults_left: self.params.faults,
            ghost: Default::default(),
            coord: service,
        }
    }

    /// Ticks until the next timer fires, key expires, pause ends or delayed
    /// message becomes due.
    pub fn next_deadline(&self, w: &World) -> Option<Ticks> {
        let held = w
            .net
            .iter()
            .filter_map(|m| m.held)
            .filter(|k| *k > 0 && *k != crate::world::OPEN)
            .min();
        // Under open timing an idle client starts when the simulator says,
        // so the end of its minimum backoff is no reason to stop time.
        let idle = !self.params.open_timing;
        [
            redis::next_deadline(w),
            coord::next_deadline(w),
            client::next_deadline(w, idle),
            held,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The steps enabled in `w`, in a fixed order. Urgent steps come first;
    /// `Tick` is offered only when there is none (urgency: time cannot pass
    /// while a live, unpaused participant has a step due).
    pub fn enabled(&self, w: &World, out: &mut Vec<Action>) {
        out.clear();
        for (i, c) in w.clients.iter().enumerate() {
            let gathered = self.proto.gathers_replies() && client::gather_ready(w, i);
            if (c.step_due() && c.phase != Phase::Idle) || gathered {
                out.push(Action::Step { client: i as u8 });
            }
        }
        for i in 0..w.clients.len() {
            if client::watchdog_due(w, i) {
                out.push(Action::Watchdog { client: i as u8 });
            }
        }
        let open = self.params.open_timing;
        for (i, msg) in w.net.iter().enumerate() {
            let dup = i > 0 && w.net[i - 1] == *msg;
            if msg.held.is_none()
                && !open
                && !dup
                && w.is_head(msg)
                && faults::deliverable(self, w, msg)
            {
                out.push(Action::Deliver { msg: *msg });
            }
        }
        // Replication is urgent for the checker; under open timing the
        // simulator decides the replication lag.
        if !open {
            replicate(w, out);
        }
        let urgent = !out.is_empty();
        // Not urgent: a client starts, or retries after its backoff, at a
        // moment of its own choosing (at least `--retry` ticks after a
        // failure: real clients sleep a random backoff). A delayed message
        // may still arrive before its delay is up.
        for (i, c) in w.clients.iter().enumerate() {
            if c.step_due() && c.phase == Phase::Idle {
                out.push(Action::Step { client: i as u8 });
            }
        }
        for writer in crate::resource::writers_ready(w) {
            out.push(Action::Writer { writer });
        }
        for (i, msg) in w.net.iter().enumerate() {
            let dup = i > 0 && w.net[i - 1] == *msg;
            if (msg.held.is_some() || open)
                && !dup
                && w.is_head(msg)
                && faults::deliverable(self, w, msg)
            {
                out.push(Action::Deliver { msg: *msg });
            }
        }
        if open {
            replicate(w, out);
        }
        if !urgent {
            out.push(Action::Tick { ticks: 1 });
            if let Some(d) = self.next_deadline(w)
                && d > 1
            {
                out.push(Action::Tick { ticks: d });
            }
        }
        faults::enabled(self, w, out);
    }

    /// Whether `a` may be taken in `w`. Time may advance by any number of
    /// ticks up to the next deadline (the search offers only 1 and the
    /// whole way; the simulator stops wherever its own events fall).
    pub fn allows(&self, w: &World, a: &Action) -> bool {
        let mut enabled = Vec::new();
        self.enabled(w, &mut enabled);
        match a {
            Action::Tick { ticks } => {
                *ticks >= 1
                    && enabled.contains(&Action::Tick { ticks: 1 })
                    && self.next_deadline(w).is_none_or(|d| *ticks <= d)
            }
            _ => enabled.contains(a),
        }
    }

    /// Applies `a` to `w` in place. `a` must be allowed in `w`.
    pub fn apply(&self, w: &mut World, a: &Action, log: &mut Log) {
        match *a {
            Action::Tick { ticks } => {
                redis::tick(self, w, ticks, log);
                coord::tick(self, w, ticks, log);
                client::tick(self, w, ticks, log);
                tick_network(w, ticks);
                crate::ev!(
                    log,
                    EventKind::Time,
                    "clock".to_string(),
                    None,
                    "time passes {ticks} tick{}",
                    if ticks == 1 { "" } else { "s" }
                );
            }
            Action::Step { client } => client::step(&mut Ctx { m: self, w, log }, client),
            Action::Watchdog { client } => client::watchdog(&mut Ctx { m: self, w, log }, client),
            Action::Deliver { msg } => {
                // A gathering client's reply lands in its socket buffer and
                // stays in the network until the gathering step reads it.
                let buffered = matches!(msg.to, Node::Client(_))
                    && self.proto.gathers_replies()
                    && msg.chan == crate::world::Chan::Main;
                if !buffered {
                    w.remove_msg(&msg);
                }
                match msg.to {
                    Node::Redis(s) => redis::deliver(self, w, s, msg, log),
                    Node::Service => coord::deliver(self, w, msg, log),
                    Node::Client(c) => client::deliver(&mut Ctx { m: self, w, log }, c, msg),
                }
            }
            Action::Replicate { server } => redis::replicate(w, server, log),
            Action::Writer { writer } => crate::resource::writer_step(self, w, writer, log),
            _ => {
                faults::apply(self, w, a, log);
            }
        }
    }

    /// `w` after `a`, without events.
    pub fn after(&self, w: &World, a: &Action) -> World {
        let mut next = w.clone();
        self.apply(&mut next, a, &mut Log::off());
        next
    }

    /// Name of the participant an action belongs to, for traces.
    pub fn actor(&self, w: &World, a: &Action) -> String {
        match *a {
            Action::Tick { .. } => "clock".into(),
            Action::Step { client } | Action::Watchdog { client } => w.client_name(client),
            Action::Deliver { msg } => w.node_name(msg.to),
            Action::Replicate { server } => {
                let r = w
                    .redis
                    .iter()
                    .position(|n| n.role == Role::Replica)
                    .unwrap_or(server as usize);
                w.server_name(r as u8)
            }
            Action::Writer { writer } => crate::resource::writer_name(writer),
            Action::Resume { .. } | Action::Finish { .. } => "env".into(),
            _ => "env".into(),
        }
    }
}

/// Each primary with writes its live replica has not applied yet can
/// replicate the next one.
fn replicate(w: &World, out: &mut Vec<Action>) {
    let replica_up = w.redis.iter().any(|r| r.role == Role::Replica && r.is_up());
    for (i, s) in w.redis.iter().enumerate() {
        if replica_up && s.role == Role::Primary && s.is_up() && !s.backlog.is_empty() {
            out.push(Action::Replicate { server: i as u8 });
        }
    }
}

/// Delay faults hold messages back for a bounded time.
fn tick_network(w: &mut World, n: Ticks) {
    let mut changed = false;
    for m in w.net.iter_mut() {
        if let Some(k) = m.held
            && k != crate::world::OPEN
        {
            m.held = crate::world::count_down(k, n);
            changed = true;
        }
    }
    if changed {
        w.net.sort();
    }
}

fn prop_me(m: &LockModel, w: &World) -> bool {
    Invariant::MutualExclusion.holds(m, w)
}
fn prop_ownership(m: &LockModel, w: &World) -> bool {
    Invariant::Ownership.holds(m, w)
}
fn prop_lost(m: &LockModel, w: &World) -> bool {
    Invariant::NoLostUpdate.holds(m, w)
}
fn prop_token(m: &LockModel, w: &World) -> bool {
    Invariant::TokenMonotonic.holds(m, w)
}
fn prop_orphan(m: &LockModel, w: &World) -> bool {
    Invariant::NoOrphanLock.holds(m, w)
}
fn prop_oversell(m: &LockModel, w: &World) -> bool {
    Invariant::NoOversell.holds(m, w)
}
fn prop_duplicate(m: &LockModel, w: &World) -> bool {
    Invariant::NoDuplicateEffect.holds(m, w)
}

impl stateright::Model for LockModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![self.init()]
    }

    fn actions(&self, state: &World, actions: &mut Vec<Action>) {
        let mut v = Vec::new();
        self.enabled(state, &mut v);
        actions.extend(v);
    }

    fn next_state(&self, last: &World, action: Action) -> Option<World> {
        Some(self.after(last, &action))
    }

    fn format_action(&self, action: &Action) -> String {
        crate::trace::action_text(action)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        self.properties
            .iter()
            .map(|i| {
                let f: fn(&LockModel, &World) -> bool = match i {
                    Invariant::MutualExclusion => prop_me,
                    Invariant::Ownership => prop_ownership,
                    Invariant::NoLostUpdate => prop_lost,
                    Invariant::TokenMonotonic => prop_token,
                    Invariant::NoOrphanLock => prop_orphan,
                    Invariant::NoOversell => prop_oversell,
                    Invariant::NoDuplicateEffect => prop_duplicate,
                };
                stateright::Property::always(i.name(), f)
            })
            .collect()
    }
}
