//! A schema-2 trace built by hand, so these tests need no model: the naive
//! lock losing an update. c1 takes the lock at about 1 ms, freezes, and
//! sleeps through its 30 s lease; c2 takes the lock and writes; c1 wakes
//! up still believing it holds the lock and overwrites c2's update.
//! Everything happens within a few milliseconds except the 29.999 s pause.

#![allow(dead_code)]

use locklab_traces::*;
use serde_json::json;
use std::collections::BTreeMap;

const TTL: f64 = 30_000.0;

fn client(id: &str) -> ClientView {
    ClientView {
        id: id.into(),
        phase: "starting".into(),
        holds: false,
        alive: true,
        paused: None,
        value: None,
        token: None,
        read: None,
        believed_lease: None,
        clock_offset: 0.0,
        watchdog: None,
        acquisitions_done: 0,
    }
}

fn initial() -> StateView {
    StateView {
        time: 0.0,
        clients: vec![client("c1"), client("c2")],
        servers: vec![ServerView {
            id: "redis".into(),
            role: "primary".into(),
            status: "up".into(),
            clock_offset: 0.0,
            entries: vec![],
            unreplicated: vec![],
            watches: vec![],
        }],
        resource: ResourceView {
            value: 0,
            accepted_writes: 0,
            max_token: None,
            stock: None,
        },
        network: vec![],
        faults_left: BTreeMap::from([("pause".to_string(), 1)]),
    }
}

fn ev(kind: EventKind, at: &str, peer: Option<&str>, text: &str) -> Event {
    Event {
        kind,
        at: at.into(),
        peer: peer.map(Into::into),
        text: text.into(),
    }
}

fn msg(from: &str, to: &str, text: &str, age: f64) -> MessageView {
    MessageView {
        from: from.into(),
        to: to.into(),
        text: text.into(),
        held: false,
        age,
    }
}

struct Builder {
    state: StateView,
    steps: Vec<Step>,
}

impl Builder {
    /// Moves the world to `time` (lease and time to live count down, a
    /// paused client's pause grows, messages age) and records a step.
    fn step(
        &mut self,
        time: f64,
        actor: &str,
        action: serde_json::Value,
        label: &str,
        events: Vec<Event>,
        change: impl FnOnce(&mut StateView),
    ) {
        let dt = time - self.state.time;
        self.state.time = time;
        for s in &mut self.state.servers {
            for e in &mut s.entries {
                e.ttl = e.ttl.map(|x| x - dt);
            }
        }
        for c in &mut self.state.clients {
            c.paused = c.paused.map(|p| p + dt);
        }
        for m in &mut self.state.network {
            m.age += dt;
        }
        change(&mut self.state);
        let index = self.steps.len() + 1;
        self.steps.push(Step {
            index,
            time,
            at_us: format!("{}", (time * 1000.0).round() as i64),
            actor: actor.into(),
            action,
            label: label.into(),
            message: None,
            events,
            state: self.state.clone(),
            violations: vec![],
            answers: vec![],
        });
    }
}

fn set(c: &str) -> String {
    format!("SET lock {c}#1 NX PX {}", TTL as i64)
}

fn grant(s: &mut StateView, c: &str) {
    s.servers[0].entries = vec![EntryView {
        key: "lock".into(),
        value: format!("{c}#1"),
        owner: Some(c.into()),
        ttl: Some(TTL),
        expired: false,
    }];
}

fn client_mut<'a>(s: &'a mut StateView, id: &str) -> &'a mut ClientView {
    s.clients.iter_mut().find(|c| c.id == id).unwrap()
}

/// The trace: 11 steps, a 29.999 s gap before step 5.
pub fn lost_update() -> Trace {
    let mut b = Builder {
        state: initial(),
        steps: vec![],
    };
    let a = |tag: &str| json!({ "action": tag });
    b.step(
        0.5,
        "c1",
        a("step"),
        "c1 asks for the lock",
        vec![ev(EventKind::Send, "c1", Some("redis"), &set("c1"))],
        |s| {
            client_mut(s, "c1").phase = "acquiring".into();
            s.network = vec![msg("c1", "redis", &set("c1"), 0.0)];
        },
    );
    b.step(
        1.0,
        "redis",
        a("deliver"),
        "redis handles c1's SET",
        vec![
            ev(EventKind::Receive, "redis", Some("c1"), &set("c1")),
            ev(
                EventKind::Execute,
                "redis",
                Some("c1"),
                &format!("{} → OK", set("c1")),
            ),
            ev(EventKind::Send, "redis", Some("c1"), "OK"),
        ],
        |s| {
            grant(s, "c1");
            s.network = vec![msg("redis", "c1", "OK", 0.0)];
        },
    );
    b.step(
        1.5,
        "c1",
        a("deliver"),
        "c1 gets OK",
        vec![
            ev(EventKind::Receive, "c1", Some("redis"), "OK"),
            ev(EventKind::Acquire, "c1", None, "acquires the lock"),
            ev(EventKind::Read, "c1", Some("resource"), "reads 0"),
        ],
        |s| {
            let c = client_mut(s, "c1");
            c.phase = "holding".into();
            c.holds = true;
            c.value = Some("c1#1".into());
            c.read = Some(0);
            s.network.clear();
        },
    );
    b.step(
        2.0,
        "env",
        a("pause"),
        "c1 pauses",
        vec![ev(EventKind::Fault, "c1", None, "pauses")],
        |s| {
            client_mut(s, "c1").paused = Some(0.0);
            s.faults_left.insert("pause".into(), 0);
        },
    );
    b.step(
        30_001.0,
        "clock",
        a("expire"),
        "the lock expires on redis",
        vec![ev(EventKind::Expire, "redis", None, "lock c1#1 expires")],
        |s| s.servers[0].entries.clear(),
    );
    b.step(
        30_001.6,
        "c2",
        a("step"),
        "c2 asks for the lock",
        vec![ev(EventKind::Send, "c2", Some("redis"), &set("c2"))],
        |s| {
            client_mut(s, "c2").phase = "acquiring".into();
            s.network = vec![msg("c2", "redis", &set("c2"), 0.0)];
        },
    );
    b.step(
        30_002.1,
        "redis",
        a("deliver"),
        "redis handles c2's SET",
        vec![
            ev(EventKind::Receive, "redis", Some("c2"), &set("c2")),
            ev(
                EventKind::Execute,
                "redis",
                Some("c2"),
                &format!("{} → OK", set("c2")),
            ),
            ev(EventKind::Send, "redis", Some("c2"), "OK"),
        ],
        |s| {
            grant(s, "c2");
            s.network = vec![msg("redis", "c2", "OK", 0.0)];
        },
    );
    b.step(
        30_002.6,
        "c2",
        a("deliver"),
        "c2 gets OK",
        vec![
            ev(EventKind::Receive, "c2", Some("redis"), "OK"),
            ev(EventKind::Acquire, "c2", None, "acquires the lock"),
            ev(EventKind::Read, "c2", Some("resource"), "reads 0"),
        ],
        |s| {
            let c = client_mut(s, "c2");
            c.phase = "holding".into();
            c.holds = true;
            c.value = Some("c2#1".into());
            c.read = Some(0);
            s.network.clear();
        },
    );
    b.step(
        30_003.0,
        "c2",
        a("step"),
        "c2 writes 1",
        vec![ev(
            EventKind::Write,
            "c2",
            Some("resource"),
            "writes 1 to the resource",
        )],
        |s| {
            s.resource.value = 1;
            s.resource.accepted_writes = 1;
        },
    );
    b.step(
        30_004.2,
        "env",
        a("resume"),
        "c1 resumes",
        vec![ev(EventKind::Fault, "c1", None, "resumes")],
        |s| client_mut(s, "c1").paused = None,
    );
    b.step(
        30_004.8,
        "c1",
        a("step"),
        "c1 writes 1",
        vec![ev(
            EventKind::Write,
            "c1",
            Some("resource"),
            "writes 1 to the resource",
        )],
        |s| s.resource.accepted_writes = 2,
    );
    let last = b.steps.len();
    b.steps[last - 1].violations = vec!["no_lost_update".into()];
    Trace {
        schema_version: SCHEMA_VERSION,
        kind: "trace".into(),
        tool: "locklab test".into(),
        engine: "check".into(),
        seed: None,
        config: Config {
            protocol: "naive".into(),
            clients: 2,
            acquisitions: 1,
            faults: BTreeMap::from([("pause".to_string(), 1)]),
            params: BTreeMap::from([("ttl-ms".to_string(), json!(30_000))]),
            time: "exact real time; the picture shows ms and s".into(),
        },
        participants: vec![
            Participant {
                id: "c1".into(),
                kind: "client".into(),
                label: "client 1".into(),
            },
            Participant {
                id: "c2".into(),
                kind: "client".into(),
                label: "client 2".into(),
            },
            Participant {
                id: "redis".into(),
                kind: "redis".into(),
                label: "Redis".into(),
            },
            Participant {
                id: "resource".into(),
                kind: "resource".into(),
                label: "shared resource".into(),
            },
        ],
        invariant: "no_lost_update".into(),
        invariant_meaning: "every accepted write is reflected in the value".into(),
        violation_step: last,
        violation: "2 writes accepted but the value is 1: one update was lost".into(),
        faults_used: vec!["pause".into()],
        initial: initial(),
        steps: b.steps,
    }
}
