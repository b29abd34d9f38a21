//! Readable snapshots of the world for trace files and renderers.

use crate::engine::concrete::CState;
use crate::engine::solve::Rational;
use crate::model::LockModel;
use crate::protocols::Service;
use crate::redis::op_text;
use crate::world::{Body, Phase, Role, Session, Status, WaitKind, WdState, World};
use locklab_traces::{
    ClientView, EntryView, MessageView, Participant, ResourceView, ServerView, StateView,
};

/// A duration in ms (for views).
fn ms(r: Rational) -> f64 {
    r.to_ms()
}

fn phase_text(m: &LockModel, s: &CState, i: usize) -> String {
    let w = &s.world;
    let c = &w.clients[i];
    if !c.alive {
        return "crashed".into();
    }
    let waited = c
        .wait
        .map(|wt| crate::units::show_rational(s.read(wt.clk, s.now)))
        .unwrap_or_default();
    match c.phase {
        Phase::Idle if c.wait.is_some_and(|w| w.kind == WaitKind::Start) => "starting".into(),
        Phase::Idle => format!("backing off before a retry (for {waited})"),
        Phase::Acquire(k) => {
            if m.proto.service() == Service::Instances && !c.votes.is_empty() {
                let yes = c
                    .votes
                    .iter()
                    .filter(|v| **v == crate::world::Vote::Yes)
                    .count();
                format!("acquiring ({yes} votes so far)")
            } else {
                format!("acquiring (step {})", k + 1)
            }
        }
        Phase::Work => match c.wait.map(|w| w.kind) {
            Some(WaitKind::Slow) => format!("in critical section (slow, working for {waited})"),
            _ => format!("in critical section (working for {waited})"),
        },
        Phase::Write => "in critical section (write due)".into(),
        Phase::Leave => "leaving critical section".into(),
        Phase::Release(k) => format!("releasing (step {})", k + 1),
        Phase::Task => format!("released; its async task is working ({waited}), the write to come"),
        Phase::Done => "done".into(),
        Phase::Reenter if c.wait.is_some_and(|w| w.kind == WaitKind::Backoff) => {
            format!(
                "in critical section, re-entry blocked: someone else holds the lock (for {waited})"
            )
        }
        Phase::Reenter => format!("in critical section, re-entering (for {waited})"),
        Phase::InnerRelease => format!("written; inner unlock sent (for {waited})"),
    }
}

pub fn participants(m: &LockModel, w: &World) -> Vec<Participant> {
    let mut v: Vec<Participant> = (0..w.clients.len())
        .map(|i| Participant {
            id: w.client_name(i as u8),
            kind: "client".into(),
            label: format!("client {}", i + 1),
        })
        .collect();
    for (i, s) in w.redis.iter().enumerate() {
        let role = match (m.proto.service(), s.role) {
            (Service::Instances, _) => "Redis instance",
            (Service::Replicated, Role::Primary) => "Redis primary",
            (Service::Replicated, Role::Replica) => "Redis replica",
            _ => "Redis",
        };
        v.push(Participant {
            id: w.server_name(i as u8),
            kind: "redis".into(),
            label: role.into(),
        });
    }
    if m.proto.service() == Service::Consensus {
        v.push(Participant {
            id: "service".into(),
            kind: "service".into(),
            label: m.proto.service_label().into(),
        });
    }
    v.push(Participant {
        id: "resource".into(),
        kind: "resource".into(),
        label: "protected resource".into(),
    });
    v
}

pub fn message(s: &CState, m: &crate::world::Msg) -> MessageView {
    let w = &s.world;
    let mut text = w.msg_text(m);
    if m.chan == crate::world::Chan::Watchdog {
        text = format!("{text} (watchdog)");
    }
    if m.conn > 0 && matches!(m.body, Body::Req(_)) {
        text = format!("{text} (on a connection its sender closed)");
    } else if m.orphan && matches!(m.body, Body::Req(_)) {
        text = format!("{text} (reply not awaited)");
    }
    MessageView {
        from: w.node_name(m.from),
        to: w.node_name(m.to),
        text,
        held: m.held,
        age: ms(s.read(m.clk, s.now)),
    }
}

/// Clock offsets accumulated along a trace. They are not part of the
/// state (except where replication needs them); a trace adds up its
/// clock-jump steps to show them.
#[derive(Clone, Debug, Default)]
pub struct Clocks {
    pub clients: Vec<i64>,
    pub servers: Vec<i64>,
}

impl Clocks {
    pub fn new(w: &World) -> Clocks {
        Clocks {
            clients: vec![0; w.clients.len()],
            servers: vec![0; w.redis.len()],
        }
    }

    /// Accounts for `a` if it is a clock jump.
    pub fn record(&mut self, a: &crate::action::Action) {
        if let crate::action::Action::ClockJump { node, by } = *a {
            match node {
                crate::world::Node::Client(c) => self.clients[c as usize] += by,
                crate::world::Node::Redis(s) => self.servers[s as usize] += by,
                crate::world::Node::Service => {}
            }
        }
    }
}

/// The world `w` at true time `time`, in readable form.
pub fn view(m: &LockModel, s: &CState, clocks: &Clocks) -> StateView {
    let w = &s.world;
    let age = |c: crate::time::Clk| s.read(c, s.now);
    let clients = w
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let has_value = !matches!(c.phase, Phase::Done) && c.alive;
            ClientView {
                id: w.client_name(i as u8),
                phase: phase_text(m, s, i),
                holds: c.holds(),
                alive: c.alive,
                paused: c.paused.map(|p| ms(age(p))),
                value: has_value.then(|| c.val(i as u8).text()),
                token: c.token.map(|t| t as u64),
                read: c.read.map(|r| r as u64),
                believed_lease: match (m.proto.checks_validity() && c.holds(), c.t1) {
                    (true, Some(t1)) => Some(ms(Rational::integer(
                        m.params.ttl - m.params.drift_allowance() - c.t1_shift,
                    ) - age(t1))),
                    _ => None,
                },
                clock_offset: clocks.clients.get(i).copied().unwrap_or(0) as f64 / 1000.0,
                watchdog: c
                    .wd
                    .map(|d| match d.state {
                        WdState::Sleeping => format!(
                            "renews {} every {}",
                            d.val.text(),
                            crate::units::show(m.params.renew_every)
                        ),
                        WdState::Waiting => format!("renewal of {} in flight", d.val.text()),
                    })
                    .or_else(|| {
                        (w.coord.sessions.get(i) == Some(&Some(Session::Kept))).then(|| {
                            "heartbeats its session, which no fault left can stop".to_string()
                        })
                    }),
                acquisitions_done: c.round as u32,
            }
        })
        .collect();
    let servers: Vec<ServerView> = w
        .redis
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut entries = Vec::new();
            if let Some(e) = n.lock {
                let left = e
                    .exp
                    .ttl
                    .map(|t| Rational::integer(t - e.exp.shift) - age(e.exp.since));
                entries.push(EntryView {
                    key: "lock".into(),
                    value: e.val.text(),
                    owner: Some(w.client_name(e.val.client)),
                    ttl: left.map(ms),
                    expired: left.is_some_and(|l| l < Rational::ZERO),
                });
            }
            if n.counter > 0 {
                entries.push(EntryView {
                    key: "token".into(),
                    value: n.counter.to_string(),
                    owner: None,
                    ttl: None,
                    expired: false,
                });
            }
            ServerView {
                id: w.server_name(i as u8),
                role: match (m.proto.service(), n.role) {
                    (Service::Instances, _) => "instance".into(),
                    (_, Role::Primary) => "primary".into(),
                    (_, Role::Replica) => "replica".into(),
                },
                status: match n.status {
                    Status::Up => "up".into(),
                    Status::Down(k) => format!(
                        "down ({} left)",
                        crate::units::show_rational(
                            Rational::integer(m.params.down_for()) - age(k)
                        )
                    ),
                    Status::Dead => "dead".into(),
                },
                clock_offset: clocks.servers.get(i).copied().unwrap_or(0) as f64 / 1000.0,
                entries,
                unreplicated: n.backlog.iter().map(|op| op_text(op.kind)).collect(),
                watches: Vec::new(),
            }
        })
        .collect();
    let mut servers: Vec<ServerView> = servers;
    if m.proto.service() == Service::Consensus {
        let c = &w.coord;
        let ttl = m.params.ttl;
        let session_ttl = |owner: u8| {
            c.sessions
                .get(owner as usize)
                .copied()
                .flatten()
                .and_then(|s| s.clock())
                .map(|k| ms(Rational::integer(ttl) - age(k)))
        };
        let mut entries: Vec<EntryView> = c
            .entries
            .iter()
            .map(|e| EntryView {
                key: "lock".into(),
                value: format!("{} #{}", w.client_name(e.owner), e.rev),
                owner: Some(w.client_name(e.owner)),
                ttl: session_ttl(e.owner),
                expired: false,
            })
            .collect();
        for (i, k) in c.sessions.iter().enumerate() {
            if k.is_some() {
                entries.push(EntryView {
                    key: "session".into(),
                    value: w.client_name(i as u8),
                    owner: Some(w.client_name(i as u8)),
                    ttl: session_ttl(i as u8),
                    expired: false,
                });
            }
        }
        entries.push(EntryView {
            key: "revision".into(),
            value: c.rev.to_string(),
            owner: None,
            ttl: None,
            expired: false,
        });
        servers.push(ServerView {
            id: "service".into(),
            role: "leader".into(),
            status: "up".into(),
            clock_offset: 0.0,
            entries,
            unreplicated: Vec::new(),
            watches: c
                .watches
                .iter()
                .map(|(who, rev)| format!("{} watches #{rev}", w.client_name(*who)))
                .collect(),
        });
    }
    StateView {
        time: ms(s.now),
        clients,
        servers,
        resource: ResourceView {
            value: w.resource.value as u64,
            accepted_writes: w.resource.accepted as u64,
            max_token: w.resource.max_token.map(|t| t as u64),
            stock: m
                .params
                .resource_op
                .has_stock()
                .then(|| crate::resource::stock_left(m, w.resource.value) as i64),
        },
        network: w.net.iter().map(|msg| message(s, msg)).collect(),
        faults_left: crate::faults::FaultKind::ALL
            .into_iter()
            .filter(|k| m.params.faults.get(*k) > 0)
            .map(|k| (k.name().to_string(), w.faults_left.get(k) as u32))
            .collect(),
    }
}
