//! Symmetry reduction. Clients run the same program and differ only in
//! their ids; Redlock's instances are interchangeable. Two symbolic states
//! that differ only by renaming clients (or instances) behave alike, so the
//! search stores one representative per class.
//!
//! Renaming a client renames its clocks too: the renamed world is laid out
//! again (its clocks renumbered in walk order) and the zone permuted alike
//! — permuting only the discrete part would be unsound (Hendriks et al.,
//! *Adding symmetry reduction to UPPAAL*, FORMATS 2003).
//!
//! The search deduplicates on the representative's fingerprint but keeps
//! exploring the *actual* successor states, so every trace it prints is a
//! real path of the model (and stays shortest: renamed states are reached
//! in the same number of steps).
//!
//! The representative (canonical labelling, as in nauty's partition
//! refinement, in its simplest form): clients are sorted by a signature
//! that renaming cannot change ([`client_signature`]), and only the orders
//! of clients whose signatures tie are tried, the smallest fingerprint
//! winning; so a state whose clients all differ costs one renaming, not
//! k!, and any number of clients is reduced. Instances are then sorted by
//! everything that concerns them, their clocks' bounds included. Ties
//! among instances, and clients tied beyond [`MAX_TIE_ORDERS`] orders, are
//! kept in index order, which is sound (any renaming is) though not always
//! canonical: some symmetric states may be stored twice.

use crate::engine::dbm::Dbm;
use crate::engine::zone::{ZState, normalize};
use crate::model::LockModel;
use crate::protocols::Service;
use crate::search::Fingerprinter;
use crate::world::{Body, Clk, Cmd, Coord, Msg, Node, Reply, Session, Val, World};
use std::hash::{Hash, Hasher};

/// How one model's states are renamed.
pub struct Canon {
    /// Clients are interchangeable (symmetry on, two or more clients).
    clients: bool,
    /// Instances are interchangeable (Redlock, symmetry on).
    instances: bool,
}

/// At most this many client orders are tried for one state: the orders of
/// clients whose signatures tie, in a fixed enumeration. Past it the rest
/// are not tried, which is sound (any renaming is) but may store a
/// symmetric state twice. 24 = every order of four twins.
pub const MAX_TIE_ORDERS: usize = 24;

/// Clients or instances one renaming permutes, at most (the parameters
/// allow 6 clients and 9 instances); it sizes the renamings' stack arrays.
const MAX_PERMUTED: usize = 16;

/// The first `cap` orders of `0..k` (Heap's algorithm, identity first).
fn orders(k: usize, cap: usize) -> Vec<Vec<usize>> {
    let mut a: Vec<usize> = (0..k).collect();
    let mut out = vec![a.clone()];
    let mut c = vec![0usize; k];
    let mut i = 1;
    while i < k && out.len() < cap {
        if c[i] < i {
            if i % 2 == 0 {
                a.swap(0, i);
            } else {
                a.swap(c[i], i);
            }
            out.push(a.clone());
            c[i] += 1;
            i = 1;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    out
}

/// The fingerprint of a symbolic state as it is.
pub fn fingerprint(s: &ZState) -> u64 {
    let mut h = Fingerprinter::new();
    s.hash(&mut h);
    h.finish()
}

/// Everything about client `me` that renaming clients or instances cannot
/// change, and no clock: its own state with its clocks blanked and values
/// reduced to its own or another's, its votes as a multiset, the keys and
/// replicated writes that hold its value, its session and lock entries on
/// the consensus service, the ghost's record of it, and the messages it
/// sends, receives or whose value is its own (ids and clocks blanked).
///
/// Clocks stay out on purpose: a world carries many zones, and a signature
/// that read their bounds would lay out one world's zones in different
/// client orders, so that zones which include one another would no longer
/// compare (measured: 35–200 % more zones).
pub fn client_signature(w: &World, me: u8) -> u64 {
    signature(w, me, &mut Vec::new(), &mut Vec::new())
}

/// [`client_signature`], sorting its multisets in the caller's buffers.
fn signature(w: &World, me: u8, keys: &mut Vec<u64>, msgs: &mut Vec<u64>) -> u64 {
    let mut h = Fingerprinter::new();
    let blank = Clk(0);
    // Client ids as `me` sees them: 0 itself, 1 any other (a "renaming"
    // that `map_val`, `map_cmd`, `map_body` and `map_node` apply), and
    // every instance alike.
    let mut own = [1u8; MAX_PERMUTED];
    own[me as usize] = 0;
    let own = &own[..w.clients.len()];
    let one_instance = [0u8; u8::MAX as usize + 1];
    let mut c = w.clients[me as usize].clone();
    if let Some(p) = &mut c.paused {
        *p = blank;
    }
    for wait in [&mut c.wait, &mut c.gather].into_iter().flatten() {
        wait.clk = blank;
    }
    if let Some(wd) = &mut c.wd {
        wd.wait.clk = blank;
        wd.val = map_val(wd.val, own);
    }
    if let Some(t) = &mut c.t1 {
        *t = blank;
    }
    c.request = c.request.map(|r| map_cmd(r, own));
    c.votes.sort_unstable();
    c.hash(&mut h);
    let mine = |v: Option<Val>| v.is_some_and(|v| v.client == me);
    keys.clear();
    for n in &w.redis {
        let mut kh = Fingerprinter::new();
        if let Some(e) = n.lock.filter(|e| e.val.client == me) {
            (0u8, map_val(e.val, own), e.holds, e.exp.ttl, e.exp.shift).hash(&mut kh);
            keys.push(kh.finish());
        }
        for op in n.backlog.iter().filter(|op| mine(op.kind.val())) {
            let mut kind = op.kind;
            if let Some(v) = kind.val_mut() {
                *v = map_val(*v, own);
            }
            let mut kh = Fingerprinter::new();
            (1u8, kind, op.exp.ttl, op.exp.shift).hash(&mut kh);
            keys.push(kh.finish());
        }
    }
    keys.sort_unstable();
    keys.hash(&mut h);
    let coord = &w.coord;
    coord
        .sessions
        .get(me as usize)
        .map(|s| s.is_some())
        .hash(&mut h);
    // Hashed apart, so a signature without a kept session stays what it
    // was before sessions could be kept.
    match coord.sessions.get(me as usize) {
        Some(Some(Session::Kept)) => "kept".hash(&mut h),
        Some(Some(Session::Closing)) => "closing".hash(&mut h),
        _ => {}
    }
    for e in coord.entries.iter().filter(|e| e.owner == me) {
        (e.round, e.rev, e.seq).hash(&mut h);
    }
    for (_, rev) in coord.watches.iter().filter(|(by, _)| *by == me) {
        rev.hash(&mut h);
    }
    let g = &w.ghost;
    g.foreign
        .map(|(a, o, t)| (a == me, o == me, t))
        .hash(&mut h);
    (g.late_write == Some(me)).hash(&mut h);
    msgs.clear();
    for m in &w.net {
        let carries = match m.body {
            Body::Req(cmd) => mine(cmd.val()),
            Body::Reply(Reply::Val(v)) => v.client == me,
            _ => false,
        };
        if !(carries || m.from == Node::Client(me) || m.to == Node::Client(me)) {
            continue;
        }
        let mut mh = Fingerprinter::new();
        Msg {
            from: map_node(m.from, own, Some(&one_instance)),
            to: map_node(m.to, own, Some(&one_instance)),
            body: map_body(m.body, own),
            clk: blank,
            ..*m
        }
        .hash(&mut mh);
        msgs.push(mh.finish());
    }
    msgs.sort_unstable();
    msgs.hash(&mut h);
    h.finish()
}

impl Canon {
    pub fn new(m: &LockModel, enabled: bool) -> Canon {
        Canon {
            clients: enabled && m.params.clients > 1,
            instances: enabled && m.proto.service() == Service::Instances && m.params.instances > 1,
        }
    }

    /// Whether this canon changes anything at all.
    pub fn is_identity(&self) -> bool {
        !self.clients && !self.instances
    }

    /// The client renamings worth trying for `w`, each as `p[old] = new`:
    /// clients sorted by [`client_signature`], then every order of the
    /// clients whose signatures tie (at most [`MAX_TIE_ORDERS`] in all).
    /// Renaming cannot change a signature, so the clients of every
    /// renaming of `w` sort alike and all of them meet the same candidates.
    pub fn candidates(&self, w: &World) -> Vec<Vec<u8>> {
        let n = w.clients.len();
        if !self.clients {
            return vec![(0..n as u8).collect()];
        }
        assert!(
            n <= MAX_PERMUTED,
            "at most {MAX_PERMUTED} clients are renamed"
        );
        let (mut keys, mut msgs) = (Vec::new(), Vec::new());
        let mut sigs = [0u64; MAX_PERMUTED];
        for (c, sig) in sigs.iter_mut().enumerate().take(n) {
            *sig = signature(w, c as u8, &mut keys, &mut msgs);
        }
        // sorted[new] = old
        let mut sorted = [0usize; MAX_PERMUTED];
        for (i, o) in sorted.iter_mut().enumerate() {
            *o = i;
        }
        let sorted = &mut sorted[..n];
        sorted.sort_by_key(|c| (sigs[*c], *c));
        let to_renaming = |order: &[usize]| {
            let mut p = vec![0u8; n];
            for (new, old) in order.iter().enumerate() {
                p[*old] = new as u8;
            }
            p
        };
        if sorted.windows(2).all(|c| sigs[c[0]] != sigs[c[1]]) {
            // No two clients tie: one renaming, and nothing else to build.
            return vec![to_renaming(sorted)];
        }
        let mut found = vec![sorted.to_vec()];
        let mut lo = 0;
        while lo < n {
            let hi = (lo..n)
                .find(|k| sigs[sorted[*k]] != sigs[sorted[lo]])
                .unwrap_or(n);
            if hi - lo > 1 {
                let per = orders(hi - lo, MAX_TIE_ORDERS);
                let mut grown = Vec::new();
                'all: for base in &found {
                    for o in &per {
                        let mut next = base.clone();
                        for (k, j) in o.iter().enumerate() {
                            next[lo + k] = base[lo + j];
                        }
                        grown.push(next);
                        if grown.len() == MAX_TIE_ORDERS {
                            break 'all;
                        }
                    }
                }
                found = grown;
            }
            lo = hi;
        }
        found.iter().map(|order| to_renaming(order)).collect()
    }

    /// The fingerprint of `s`'s representative.
    pub fn fingerprint(&self, s: &ZState) -> u64 {
        if self.is_identity() {
            return fingerprint(s);
        }
        self.candidates(&s.world)
            .iter()
            .map(|p| fingerprint(&self.renamed(s, p)))
            .min()
            .unwrap_or(0)
    }

    /// The representative of `s`'s class, as the fingerprint of its world
    /// and its zone: zones of one world can then be compared by inclusion.
    pub fn canonical(&self, s: &ZState) -> (u64, Dbm) {
        if self.is_identity() {
            return (crate::search::fingerprint(&s.world), s.zone.clone());
        }
        let (fp, r) = self.representative(s);
        (fp, r.zone)
    }

    /// The representative of `s`'s class itself (world and zone in the
    /// representative's layout), with its world's fingerprint: among the
    /// [`Canon::candidates`], the renaming with the least world
    /// fingerprint, then the least zone hash.
    pub fn representative(&self, s: &ZState) -> (u64, ZState) {
        if self.is_identity() {
            return (crate::search::fingerprint(&s.world), s.clone());
        }
        let candidates = self.candidates(&s.world);
        if let [p] = candidates.as_slice() {
            let r = self.renamed(s, p);
            return (crate::search::fingerprint(&r.world), r);
        }
        let mut best: Option<(u64, u64, ZState)> = None;
        for p in &candidates {
            let r = self.renamed(s, p);
            let wf = crate::search::fingerprint(&r.world);
            let mut h = Fingerprinter::new();
            r.zone.hash(&mut h);
            let zf = h.finish();
            if best
                .as_ref()
                .is_none_or(|(bw, bz, _)| (wf, zf) < (*bw, *bz))
            {
                best = Some((wf, zf, r));
            }
        }
        let (wf, _, r) = best.expect("at least one candidate");
        (wf, r)
    }

    /// `s` with clients renamed by `p` (and instances sorted), laid out again.
    /// One copy of the world, renamed in place.
    pub fn renamed(&self, s: &ZState, p: &[u8]) -> ZState {
        let mut w = s.world.clone();
        if !p.iter().enumerate().all(|(i, x)| i == *x as usize) {
            rename_clients(&mut w, p);
        }
        if self.instances {
            sort_instances(&mut w, &s.zone);
        }
        let mut zone = s.zone.clone();
        normalize(&mut w, &mut zone);
        ZState { world: w, zone }
    }
}

/// Reorders `v` in place so that `v[new]` is the old `v[order[new]]`,
/// following the permutation's cycles (no copy of `v`).
fn permute<T>(v: &mut [T], order: &[usize]) {
    debug_assert_eq!(v.len(), order.len());
    let mut done = 0u64;
    for start in 0..order.len() {
        if done >> start & 1 == 1 {
            continue;
        }
        // Walk the cycle through `start`: position k takes from order[k].
        let mut k = start;
        done |= 1 << k;
        while order[k] != start {
            v.swap(k, order[k]);
            let next = order[k];
            done |= 1 << next;
            // After the swap, position `next` holds what `k` held before,
            // which position `order[next]`'s successor needs: follow it.
            k = next;
        }
    }
}

fn map_val(v: Val, p: &[u8]) -> Val {
    Val {
        client: p[v.client as usize],
        ..v
    }
}

fn map_cmd(mut c: Cmd, p: &[u8]) -> Cmd {
    if let Some(v) = c.val_mut() {
        *v = map_val(*v, p);
    }
    c
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
fn rename_coord(c: &mut Coord, p: &[u8], order: &[usize]) {
    for w in &mut c.watches {
        w.0 = p[w.0 as usize];
    }
    c.watches.sort_unstable();
    if !c.sessions.is_empty() {
        permute(&mut c.sessions, order);
    }
    for e in &mut c.entries {
        e.owner = p[e.owner as usize];
    }
}

/// Renames client `i` to `p[i]` everywhere in `w`, in place.
pub fn rename_clients(w: &mut World, p: &[u8]) {
    let n = p.len();
    assert!(
        n <= MAX_PERMUTED,
        "at most {MAX_PERMUTED} clients are renamed"
    );
    // order[new] = old
    let mut order = [0usize; MAX_PERMUTED];
    for (old, new) in p.iter().enumerate() {
        order[*new as usize] = old;
    }
    let order = &order[..n];
    for c in &mut w.clients {
        if let Some(wd) = &mut c.wd {
            wd.val = map_val(wd.val, p);
        }
        c.request = c.request.map(|r| map_cmd(r, p));
    }
    permute(&mut w.clients, order);
    for node in &mut w.redis {
        if let Some(e) = &mut node.lock {
            e.val = map_val(e.val, p);
        }
        for op in &mut node.backlog {
            if let Some(v) = op.kind.val_mut() {
                *v = map_val(*v, p);
            }
        }
    }
    for m in &mut w.net {
        m.from = map_node(m.from, p, None);
        m.to = map_node(m.to, p, None);
        m.body = map_body(m.body, p);
    }
    w.net.sort_unstable();
    let ghost = &mut w.ghost;
    if let Some((a, o, _)) = &mut ghost.foreign {
        *a = p[*a as usize];
        *o = p[*o as usize];
    }
    if let Some(c) = &mut ghost.late_write {
        *c = p[*c as usize];
    }
    rename_coord(&mut w.coord, p, order);
}

/// The bounds of clock `c` in `z`, for signatures (renaming-invariant,
/// unlike the clock's position).
fn bounds(z: &Dbm, c: Clk) -> (i64, i64) {
    let i = c.0 as usize;
    (z.lower(i).raw(), z.upper(i).raw())
}

/// A fingerprint of everything that concerns instance `s`: its own state,
/// every client's vote for it, and the messages to and from it (with its
/// own id blanked, so equal columns of different instances hash alike),
/// clocks by their bounds.
fn column(w: &World, z: &Dbm, s: usize, msgs: &mut Vec<u64>) -> u64 {
    let me = Node::Redis(s as u8);
    let mut h = Fingerprinter::new();
    let n = &w.redis[s];
    match n.status {
        crate::world::Status::Up => 0u8.hash(&mut h),
        crate::world::Status::Down(c) => (1u8, bounds(z, c)).hash(&mut h),
        crate::world::Status::Dead => 2u8.hash(&mut h),
    }
    (n.role, n.counter, n.clock).hash(&mut h);
    if let Some(e) = n.lock {
        (
            e.val,
            e.holds,
            e.exp.ttl,
            e.exp.shift,
            bounds(z, e.exp.since),
        )
            .hash(&mut h);
    }
    for op in &n.backlog {
        (op.kind, op.exp.ttl, op.exp.shift, bounds(z, op.exp.since)).hash(&mut h);
    }
    for c in &w.clients {
        c.votes.get(s).hash(&mut h);
    }
    msgs.clear();
    for m in &w.net {
        if m.to == me || m.from == me {
            let blank = |n: Node| if n == me { Node::Redis(u8::MAX) } else { n };
            let mut mh = Fingerprinter::new();
            (
                blank(m.from),
                blank(m.to),
                m.chan,
                m.conn,
                m.seq,
                m.body,
                m.held,
                m.late,
                m.arrived,
                m.orphan,
                m.repl_wait,
                bounds(z, m.clk),
            )
                .hash(&mut mh);
            msgs.push(mh.finish());
        }
    }
    msgs.sort_unstable();
    msgs.hash(&mut h);
    h.finish()
}

/// The clock that best tells instance `s` apart from its twins: its key's
/// clock, else the clock of a message to or from it.
fn anchor(w: &World, s: usize) -> Option<Clk> {
    if let Some(e) = w.redis[s].lock {
        return Some(e.exp.since);
    }
    let me = Node::Redis(s as u8);
    w.net
        .iter()
        .find(|m| (m.to == me || m.from == me) && !m.arrived)
        .map(|m| m.clk)
}

/// Reorders `w`'s (interchangeable) Redis instances, in place, by the
/// fingerprint of everything that concerns each; instances alike in
/// everything but when things happened to them are ordered by their anchor
/// clocks' rank (how many of their twins' anchors are known to read no
/// more than theirs), which renaming cannot change.
fn sort_instances(w: &mut World, z: &Dbm) {
    let n = w.redis.len();
    assert!(
        n <= MAX_PERMUTED,
        "at most {MAX_PERMUTED} instances are sorted"
    );
    let mut scratch = Vec::new();
    let mut keys = [0u64; MAX_PERMUTED];
    let mut anchors = [None; MAX_PERMUTED];
    for s in 0..n {
        keys[s] = column(w, z, s, &mut scratch);
        anchors[s] = anchor(w, s);
    }
    let rank = |s: usize| -> usize {
        let Some(a) = anchors[s] else { return 0 };
        (0..n)
            .filter(|t| *t != s && keys[*t] == keys[s])
            .filter(|t| {
                anchors[*t].is_some_and(|b: Clk| {
                    z.bound(b.0 as usize, a.0 as usize) <= crate::engine::dbm::Bound::LE_ZERO
                })
            })
            .count()
    };
    let mut ranks = [0usize; MAX_PERMUTED];
    for (s, r) in ranks.iter_mut().enumerate().take(n) {
        *r = rank(s);
    }
    // order[new] = old; perm[old] = new.
    let mut order = [0usize; MAX_PERMUTED];
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    let order = &mut order[..n];
    order.sort_by_key(|s| (keys[*s], ranks[*s]));
    if order.iter().enumerate().all(|(i, x)| i == *x) {
        return;
    }
    let mut perm = [0u8; MAX_PERMUTED];
    for (new, old) in order.iter().enumerate() {
        perm[*old] = new as u8;
    }
    let perm = &perm[..n];
    permute(&mut w.redis, order);
    for c in &mut w.clients {
        if !c.votes.is_empty() {
            permute(&mut c.votes, order);
        }
    }
    for m in &mut w.net {
        m.from = map_server(m.from, perm);
        m.to = map_server(m.to, perm);
    }
    w.net.sort_unstable();
}

/// `n` with Redis server `s` renamed to `perm[s]`.
fn map_server(n: Node, perm: &[u8]) -> Node {
    match n {
        Node::Redis(s) => Node::Redis(perm[s as usize]),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_follows_every_cycle() {
        // Every order of five elements, so every cycle structure.
        for order in orders(5, usize::MAX) {
            let mut v: Vec<usize> = (10..15).collect();
            permute(&mut v, &order);
            let want: Vec<usize> = order.iter().map(|old| 10 + old).collect();
            assert_eq!(v, want, "order {order:?}");
        }
    }

    #[test]
    fn orders_are_distinct_identity_first_and_capped() {
        for k in 0..=5 {
            let all = orders(k, usize::MAX);
            let fact: usize = (1..=k).product();
            assert_eq!(all.len(), fact.max(1), "k = {k}");
            assert_eq!(all[0], (0..k).collect::<Vec<_>>());
            let mut sorted = all.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), all.len(), "orders repeat for k = {k}");
            for o in &all {
                let mut s = o.clone();
                s.sort();
                assert_eq!(s, (0..k).collect::<Vec<_>>());
            }
        }
        assert_eq!(orders(6, MAX_TIE_ORDERS).len(), MAX_TIE_ORDERS);
    }
}
