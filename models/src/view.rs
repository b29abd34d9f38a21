//! Readable snapshots of the world for trace files and renderers.

use crate::model::LockModel;
use crate::protocols::Service;
use crate::redis::op_text;
use crate::world::{Body, Phase, Role, Status, Ttl, WdState, World};
use locklab_traces::{
    ClientView, EntryView, MessageView, Participant, ResourceView, ServerView, StateView,
};

fn phase_text(m: &LockModel, w: &World, i: usize) -> String {
    let c = &w.clients[i];
    if !c.alive {
        return "crashed".into();
    }
    let t = |x: Option<crate::world::Ticks>| x.map(|t| t.to_string()).unwrap_or_else(|| "-".into());
    match c.phase {
        Phase::Idle if c.round == 0 && c.timer == Some(0) => "starting".into(),
        Phase::Idle => format!("waiting to retry (in {})", t(c.timer)),
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
        Phase::Work => match c.timer {
            Some(left) => format!("in critical section (work left {left})"),
            // Under open timing the environment decides when work ends.
            None if m.params.open_timing => "in critical section (working)".into(),
            None => "in critical section (slow)".into(),
        },
        Phase::Write => "in critical section (write due)".into(),
        Phase::Leave => "leaving critical section".into(),
        Phase::Release(k) => format!("releasing (step {})", k + 1),
        Phase::Done => "done".into(),
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

pub fn message(w: &World, m: &crate::world::Msg) -> MessageView {
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
        held: m.held.map(|h| {
            if h == crate::world::OPEN {
                u64::MAX
            } else {
                h as u64
            }
        }),
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
                crate::world::Node::Client(c) => self.clients[c as usize] += by as i64,
                crate::world::Node::Redis(s) => self.servers[s as usize] += by as i64,
                crate::world::Node::Service => {}
            }
        }
    }
}

/// The world `w` at true time `time`, in readable form.
pub fn view(m: &LockModel, w: &World, time: u64, clocks: &Clocks) -> StateView {
    let clients = w
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let has_value = !matches!(c.phase, Phase::Done) && c.alive;
            ClientView {
                id: w.client_name(i as u8),
                phase: phase_text(m, w, i),
                holds: c.holds(),
                alive: c.alive,
                paused: c.paused.map(|p| {
                    if p == crate::world::OPEN {
                        u64::MAX
                    } else {
                        p as u64
                    }
                }),
                value: has_value.then(|| c.val(i as u8).text()),
                token: c.token.map(|t| t as u64),
                read: c.read.map(|r| r as u64),
                believed_lease: (m.proto.checks_validity() && c.holds())
                    .then_some(c.validity as i64),
                clock_offset: clocks.clients.get(i).copied().unwrap_or(0),
                watchdog: c.wd.map(|d| match d.state {
                    WdState::Sleeping(k) => format!("renews {} in {k}", d.val.text()),
                    WdState::Waiting(k) => {
                        format!("renewal of {} in flight (gives up in {k})", d.val.text())
                    }
                }),
                acquisitions_done: c.round as u32,
            }
        })
        .collect();
    let servers: Vec<ServerView> = w
        .redis
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut entries = Vec::new();
            if let Some(e) = s.lock {
                entries.push(EntryView {
                    key: "lock".into(),
                    value: e.val.text(),
                    owner: Some(w.client_name(e.val.client)),
                    ttl: match e.ttl {
                        Ttl::Never => None,
                        Ttl::Left(t) => Some(t as i64),
                    },
                    expired: !e.live(),
                });
            }
            if s.counter > 0 {
                entries.push(EntryView {
                    key: "token".into(),
                    value: s.counter.to_string(),
                    owner: None,
                    ttl: None,
                    expired: false,
                });
            }
            ServerView {
                id: w.server_name(i as u8),
                role: match (m.proto.service(), s.role) {
                    (Service::Instances, _) => "instance".into(),
                    (_, Role::Primary) => "primary".into(),
                    (_, Role::Replica) => "replica".into(),
                },
                status: match s.status {
                    Status::Up => "up".into(),
                    Status::Down(k) => format!("down ({k} ticks left)"),
                    Status::Dead => "dead".into(),
                },
                clock_offset: clocks.servers.get(i).copied().unwrap_or(0),
                entries,
                unreplicated: s.backlog.iter().map(|op| op_text(*op)).collect(),
                watches: Vec::new(),
            }
        })
        .collect();
    let mut servers: Vec<ServerView> = servers;
    if m.proto.service() == Service::Consensus {
        let c = &w.coord;
        let session_ttl = |owner: u8| c.sessions.get(owner as usize).copied().flatten();
        let mut entries: Vec<EntryView> = c
            .entries
            .iter()
            .map(|e| EntryView {
                key: "lock".into(),
                value: format!("{} #{}", w.client_name(e.owner), e.rev),
                owner: Some(w.client_name(e.owner)),
                ttl: session_ttl(e.owner).map(|t| t as i64),
                expired: false,
            })
            .collect();
        for (i, s) in c.sessions.iter().enumerate() {
            if let Some(t) = s {
                entries.push(EntryView {
                    key: "session".into(),
                    value: w.client_name(i as u8),
                    owner: Some(w.client_name(i as u8)),
                    ttl: Some(*t as i64),
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
            clock_offset: 0,
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
        time,
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
        network: w.net.iter().map(|msg| message(w, msg)).collect(),
        faults_left: crate::faults::FaultKind::ALL
            .into_iter()
            .filter(|k| m.params.faults.get(*k) > 0)
            .map(|k| (k.name().to_string(), w.faults_left.get(k) as u32))
            .collect(),
    }
}
