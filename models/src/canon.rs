//! Symmetry reduction. Clients run the same program and differ only in
//! their ids; Redlock's instances are interchangeable. Two worlds that
//! differ only by renaming clients (or instances) behave alike, so the
//! search stores one representative per class.
//!
//! stateright's own BFS ignores `symmetry()`, so locklab's search
//! canonicalises here: it deduplicates on the representative's fingerprint
//! but keeps exploring the *actual* successor states, so every trace it
//! prints is a real path of the model (and stays shortest: renamed worlds
//! are reached in the same number of steps).
//!
//! The representative is the smallest world (by its derived order) over all
//! renamings of up to four clients, with instances sorted by everything
//! that concerns them. Any choice inside the class is sound; a smaller
//! choice only merges more.

use crate::model::LockModel;
use crate::protocols::Service;
use crate::search::Fingerprinter;
use crate::world::{
    Body, Client, Cmd, Coord, CoordEntry, Entry, Ghost, Msg, Node, RedisNode, ReplOp, Reply, Val,
    Watchdog, World,
};
use std::borrow::Cow;
use std::hash::{Hash, Hasher};

/// Precomputed renamings for one model.
pub struct Canon {
    client_perms: Vec<Vec<u8>>,
    instances: bool,
}

/// Up to this many clients every renaming is tried; above, clients are not
/// reduced (still sound, just less merging).
const FULL_CLIENT_SYMMETRY: usize = 4;

fn permutations(n: usize) -> Vec<Vec<u8>> {
    fn go(prefix: &mut Vec<u8>, rest: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if rest.is_empty() {
            out.push(prefix.clone());
            return;
        }
        for i in 0..rest.len() {
            let x = rest.remove(i);
            prefix.push(x);
            go(prefix, rest, out);
            prefix.pop();
            rest.insert(i, x);
        }
    }
    let mut out = Vec::new();
    go(&mut Vec::new(), &mut (0..n as u8).collect(), &mut out);
    out
}

impl Canon {
    pub fn new(m: &LockModel, enabled: bool) -> Canon {
        let n = m.params.clients as usize;
        let client_perms = if enabled && n > 1 && n <= FULL_CLIENT_SYMMETRY {
            // The identity first, so a world that is already canonical is cheap.
            permutations(n)
        } else {
            vec![(0..n as u8).collect()]
        };
        Canon {
            client_perms,
            instances: enabled && m.proto.service() == Service::Instances && m.params.instances > 1,
        }
    }

    /// Whether this canon changes anything at all.
    pub fn is_identity(&self) -> bool {
        self.client_perms.len() == 1 && !self.instances
    }

    /// The representative of `w`'s symmetry class (borrowed when `w` is
    /// its own representative).
    pub fn canonical<'a>(&self, w: &'a World) -> Cow<'a, World> {
        let mut best: Cow<'a, World> = if self.instances {
            Cow::Owned(sort_instances(w))
        } else {
            Cow::Borrowed(w)
        };
        for p in self.client_perms.iter().skip(1) {
            let mut v = rename_clients(w, p);
            if self.instances {
                v = sort_instances(&v);
            }
            if v < *best {
                best = Cow::Owned(v);
            }
        }
        best
    }
}

/// Canonical fingerprints without building canonical worlds: the world is
/// hashed once per client renaming, with Redlock instances hashed as a
/// sorted multiset of per-instance "columns" and messages as a sorted
/// multiset, and the smallest hash wins. Two worlds get the same
/// fingerprint exactly when some renaming maps one onto the other (up to
/// 64-bit hash collisions). Every struct is destructured field by field,
/// so adding a field to the state fails to compile here until it is hashed.
impl Canon {
    pub fn fingerprint(&self, w: &World) -> u64 {
        if self.is_identity() {
            return crate::search::fingerprint(w);
        }
        self.client_perms
            .iter()
            .map(|p| self.fingerprint_under(w, p))
            .min()
            .unwrap_or(0)
    }

    fn fingerprint_under(&self, w: &World, p: &[u8]) -> u64 {
        let World {
            clients,
            redis,
            net,
            resource,
            faults_left,
            ghost,
            coord,
        } = w;
        let mut h = Fingerprinter::new();
        // Clients in their new order.
        let mut order = vec![0usize; clients.len()];
        for (old, new) in p.iter().enumerate() {
            order[*new as usize] = old;
        }
        for old in &order {
            hash_client(&mut h, &clients[*old], p, !self.instances);
        }
        if self.instances {
            // Each message concerns exactly one instance: hash it once, with
            // that instance blanked, into the instance's column.
            let mut per: Vec<Vec<u64>> = vec![Vec::new(); redis.len()];
            for m in net.iter() {
                let s = match (m.from, m.to) {
                    (Node::Redis(s), _) | (_, Node::Redis(s)) => s,
                    _ => continue,
                };
                per[s as usize].push(msg_hash(m, p, Some(s)));
            }
            let mut cols: Vec<u64> = per
                .iter_mut()
                .enumerate()
                .map(|(s, msgs)| column_under(w, s, p, &order, msgs))
                .collect();
            cols.sort_unstable();
            cols.hash(&mut h);
        } else {
            for n in redis {
                hash_node(&mut h, n, p);
            }
            let mut msgs: Vec<u64> = net.iter().map(|m| msg_hash(m, p, None)).collect();
            msgs.sort_unstable();
            msgs.hash(&mut h);
        }
        resource.hash(&mut h);
        faults_left.hash(&mut h);
        let Ghost {
            foreign,
            last_token,
            token_regressed,
            duplicated,
        } = ghost;
        foreign
            .map(|(a, o, t)| (p[a as usize], p[o as usize], t))
            .hash(&mut h);
        last_token.hash(&mut h);
        token_regressed.hash(&mut h);
        duplicated.hash(&mut h);
        rename_coord(coord, p, &order).hash(&mut h);
        h.finish()
    }
}

fn hash_client(h: &mut Fingerprinter, c: &Client, p: &[u8], with_votes: bool) {
    let Client {
        alive,
        paused,
        phase,
        timer,
        round,
        read,
        token,
        wrote,
        wd,
        votes,
        elapsed,
        validity,
    } = c;
    (alive, paused, phase, timer, round, read, token, wrote).hash(h);
    wd.map(|d| Watchdog {
        val: map_val(d.val, p),
        ..d
    })
    .hash(h);
    if with_votes {
        votes.hash(h);
    }
    (elapsed, validity).hash(h);
}

fn hash_node(h: &mut Fingerprinter, n: &RedisNode, p: &[u8]) {
    let RedisNode {
        status,
        role,
        lock,
        counter,
        clock,
        backlog,
    } = n;
    (status, role).hash(h);
    lock.map(|e| Entry {
        val: map_val(e.val, p),
        ttl: e.ttl,
    })
    .hash(h);
    (counter, clock).hash(h);
    backlog.len().hash(h);
    for op in backlog {
        match op {
            ReplOp::Set(e) => ReplOp::Set(Entry {
                val: map_val(e.val, p),
                ttl: e.ttl,
            })
            .hash(h),
            ReplOp::SetAndIncr(e) => ReplOp::SetAndIncr(Entry {
                val: map_val(e.val, p),
                ttl: e.ttl,
            })
            .hash(h),
            other => other.hash(h),
        }
    }
}

/// A message's hash with clients renamed by `p` and, if given, instance
/// `blank` replaced by a placeholder. Packed by hand: this runs for every
/// message of every successor.
fn msg_hash(m: &Msg, p: &[u8], blank: Option<u8>) -> u64 {
    let Msg {
        from,
        to,
        chan,
        conn,
        seq,
        body,
        held,
        orphan,
    } = *m;
    let node = |n: Node| -> u64 {
        match n {
            Node::Client(c) => 0x100 | p[c as usize] as u64,
            Node::Redis(s) if Some(s) == blank => 0x2ff,
            Node::Redis(s) => 0x200 | s as u64,
            Node::Service => 0x300,
        }
    };
    let val = |v: Val| -> u64 { ((p[v.client as usize] as u64) << 8) | v.round as u64 };
    let (tag, a, b): (u64, u64, u64) = match body {
        Body::Req(Cmd::SetNxPx { val: v, ttl }) => (1, val(v), ttl as u64),
        Body::Req(Cmd::SetNx { val: v }) => (2, val(v), 0),
        Body::Req(Cmd::Expire { ttl }) => (3, 0, ttl as u64),
        Body::Req(Cmd::Get) => (4, 0, 0),
        Body::Req(Cmd::Del) => (5, 0, 0),
        Body::Req(Cmd::Cad { val: v }) => (6, val(v), 0),
        Body::Req(Cmd::Renew { val: v, ttl }) => (7, val(v), ttl as u64),
        Body::Req(Cmd::PExpire { ttl }) => (8, 0, ttl as u64),
        Body::Req(Cmd::FencedSet { val: v, ttl }) => (9, val(v), ttl as u64),
        Body::Reply(Reply::Ok) => (10, 0, 0),
        Body::Reply(Reply::Nil) => (11, 0, 0),
        Body::Reply(Reply::Int(i)) => (12, i as u64, 0),
        Body::Reply(Reply::Val(v)) => (13, val(v), 0),
        Body::Reply(Reply::Token(t)) => (14, t as u64, 0),
        Body::Req(Cmd::Lock { round }) => (15, round as u64, 0),
        Body::Req(Cmd::Open) => (28, 0, 0),
        Body::Req(Cmd::Create { round }) => (16, round as u64, 0),
        Body::Req(Cmd::Txn { round }) => (17, round as u64, 0),
        Body::Req(Cmd::Order { rev }) => (18, rev as u64, 0),
        Body::Req(Cmd::Watch { rev }) => (19, rev as u64, 0),
        Body::Req(Cmd::KeepAlive) => (20, 0, 0),
        Body::Req(Cmd::Remove { rev }) => (21, rev as u64, 0),
        Body::Reply(Reply::Busy) => (22, 0, 0),
        Body::Reply(Reply::Place { rev, pred, mine }) => (
            23,
            rev as u64 | (mine as u64) << 16,
            pred.map_or(0, |r| r as u64 + 1),
        ),
        Body::Reply(Reply::Exists(b)) => (25, b as u64, 0),
        Body::Reply(Reply::Deleted(r)) => (26, r as u64, 0),
        Body::Reply(Reply::Alive(b)) => (27, b as u64, 0),
    };
    let w0 = node(from) | node(to) << 12 | (chan as u64) << 24 | tag << 28 | (orphan as u64) << 36;
    let w1 = a | b << 24;
    let w2 = held.map_or(0, |k| k as u64 + 1) | (conn as u64) << 40 | (seq as u64) << 48;
    let mut h = Fingerprinter::new();
    h.write_u64(w0);
    h.write_u64(w1);
    h.write_u64(w2);
    h.finish()
}

/// Everything that concerns instance `s`, under client renaming `p`;
/// `msgs` holds the hashes of its messages.
fn column_under(w: &World, s: usize, p: &[u8], order: &[usize], msgs: &mut [u64]) -> u64 {
    let mut h = Fingerprinter::new();
    hash_node(&mut h, &w.redis[s], p);
    for old in order {
        w.clients[*old].votes.get(s).hash(&mut h);
    }
    msgs.sort_unstable();
    msgs.hash(&mut h);
    h.finish()
}

fn map_val(v: Val, p: &[u8]) -> Val {
    Val {
        client: p[v.client as usize],
        round: v.round,
    }
}

fn map_cmd(c: Cmd, p: &[u8]) -> Cmd {
    match c {
        Cmd::SetNxPx { val, ttl } => Cmd::SetNxPx {
            val: map_val(val, p),
            ttl,
        },
        Cmd::SetNx { val } => Cmd::SetNx {
            val: map_val(val, p),
        },
        Cmd::Cad { val } => Cmd::Cad {
            val: map_val(val, p),
        },
        Cmd::Renew { val, ttl } => Cmd::Renew {
            val: map_val(val, p),
            ttl,
        },
        Cmd::FencedSet { val, ttl } => Cmd::FencedSet {
            val: map_val(val, p),
            ttl,
        },
        other @ (Cmd::Expire { .. }
        | Cmd::Get
        | Cmd::Del
        | Cmd::PExpire { .. }
        | Cmd::Open
        | Cmd::Lock { .. }
        | Cmd::Create { .. }
        | Cmd::Txn { .. }
        | Cmd::Order { .. }
        | Cmd::Watch { .. }
        | Cmd::KeepAlive
        | Cmd::Remove { .. }) => other,
    }
}

fn map_body(b: Body, p: &[u8]) -> Body {
    match b {
        Body::Req(c) => Body::Req(map_cmd(c, p)),
        Body::Reply(Reply::Val(v)) => Body::Reply(Reply::Val(map_val(v, p))),
        other => other,
    }
}

fn map_node(n: Node, clients: &[u8], servers: Option<&[u8]>) -> Node {
    match n {
        Node::Client(c) => Node::Client(clients[c as usize]),
        Node::Redis(s) => Node::Redis(servers.map_or(s, |sp| sp[s as usize])),
        Node::Service => Node::Service,
    }
}

/// The consensus service with client `i` renamed to `p[i]`; `order[new]`
/// is the old id of new client `new`.
fn rename_coord(c: &Coord, p: &[u8], order: &[usize]) -> Coord {
    let Coord {
        rev,
        sessions,
        entries,
        watches,
    } = c;
    let mut watches: Vec<(u8, u16)> = watches.iter().map(|(w, r)| (p[*w as usize], *r)).collect();
    watches.sort_unstable();
    Coord {
        rev: *rev,
        sessions: if sessions.is_empty() {
            Vec::new()
        } else {
            order.iter().map(|old| sessions[*old]).collect()
        },
        entries: entries
            .iter()
            .map(|e| CoordEntry {
                owner: p[e.owner as usize],
                ..*e
            })
            .collect(),
        watches,
    }
}

/// `w` with client `i` renamed to `p[i]` everywhere.
pub fn rename_clients(w: &World, p: &[u8]) -> World {
    let mut clients = w.clients.clone();
    for (i, c) in w.clients.iter().enumerate() {
        let mut c = c.clone();
        if let Some(wd) = &mut c.wd {
            wd.val = map_val(wd.val, p);
        }
        clients[p[i] as usize] = c;
    }
    let redis = w
        .redis
        .iter()
        .map(|n| {
            let mut n = n.clone();
            if let Some(e) = &mut n.lock {
                e.val = map_val(e.val, p);
            }
            for op in &mut n.backlog {
                if let ReplOp::Set(e) | ReplOp::SetAndIncr(e) = op {
                    e.val = map_val(e.val, p);
                }
            }
            n
        })
        .collect();
    let mut net: Vec<Msg> = w
        .net
        .iter()
        .map(|m| Msg {
            from: map_node(m.from, p, None),
            to: map_node(m.to, p, None),
            body: map_body(m.body, p),
            ..*m
        })
        .collect();
    net.sort();
    let mut ghost = w.ghost;
    if let Some((a, o, t)) = ghost.foreign {
        ghost.foreign = Some((p[a as usize], p[o as usize], t));
    }
    let mut order = vec![0usize; p.len()];
    for (old, new) in p.iter().enumerate() {
        order[*new as usize] = old;
    }
    World {
        clients,
        redis,
        net,
        resource: w.resource,
        faults_left: w.faults_left,
        ghost,
        coord: rename_coord(&w.coord, p, &order),
    }
}

/// A fingerprint of everything that concerns instance `s`: its own state,
/// every client's vote for it, and the messages to and from it (with its
/// own id blanked, so equal columns of different instances hash alike).
fn column(w: &World, s: usize) -> u64 {
    use std::hash::{Hash, Hasher};
    let me = Node::Redis(s as u8);
    let mut h = crate::search::Fingerprinter::new();
    w.redis[s].hash(&mut h);
    for c in &w.clients {
        c.votes.get(s).hash(&mut h);
    }
    for m in &w.net {
        if m.to == me || m.from == me {
            let blank = |n: Node| if n == me { Node::Redis(u8::MAX) } else { n };
            (
                blank(m.from),
                blank(m.to),
                m.chan,
                m.conn,
                m.seq,
                m.body,
                m.held,
                m.orphan,
            )
                .hash(&mut h);
        }
    }
    h.finish()
}

/// `w` with its (interchangeable) Redis instances reordered by the
/// fingerprint of everything that concerns each (ties are identical
/// columns, whose order does not matter).
fn sort_instances(w: &World) -> World {
    let n = w.redis.len();
    let keys: Vec<u64> = (0..n).map(|s| column(w, s)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|s| keys[*s]);
    if order.iter().enumerate().all(|(i, x)| i == *x) {
        return w.clone();
    }
    // order[new] = old; perm[old] = new.
    let mut perm = vec![0u8; n];
    for (new, old) in order.iter().enumerate() {
        perm[*old] = new as u8;
    }
    let ident: Vec<u8> = (0..w.clients.len() as u8).collect();
    let redis = order.iter().map(|old| w.redis[*old].clone()).collect();
    let clients = w
        .clients
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if !c.votes.is_empty() {
                c.votes = order.iter().map(|old| c.votes[*old]).collect();
            }
            c
        })
        .collect();
    let mut net: Vec<Msg> = w
        .net
        .iter()
        .map(|m| Msg {
            from: map_node(m.from, &ident, Some(&perm)),
            to: map_node(m.to, &ident, Some(&perm)),
            ..*m
        })
        .collect();
    net.sort();
    World {
        clients,
        redis,
        net,
        resource: w.resource,
        faults_left: w.faults_left,
        ghost: w.ghost,
        coord: w.coord.clone(),
    }
}
