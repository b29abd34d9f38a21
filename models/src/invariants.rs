//! The safety invariants (docs/model.md, "Invariants"). Each is a predicate
//! on one world state; facts about transitions (a `DEL` that removed someone
//! else's lock, a token that went backwards) are recorded in the state's
//! ghost fields by the transition that causes them, so the state they
//! produce ends a trace.

use crate::model::LockModel;
use crate::protocols::Protocol;
use crate::world::{Phase, Role, Touch, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    MutualExclusion,
    Ownership,
    NoLostUpdate,
    TokenMonotonic,
    NoOrphanLock,
    NoOversell,
    NoDuplicateEffect,
    DetectedWithin,
}

impl Invariant {
    pub const ALL: [Invariant; 8] = [
        Invariant::MutualExclusion,
        Invariant::Ownership,
        Invariant::NoLostUpdate,
        Invariant::TokenMonotonic,
        Invariant::NoOrphanLock,
        Invariant::NoOversell,
        Invariant::NoDuplicateEffect,
        Invariant::DetectedWithin,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::MutualExclusion => "mutual_exclusion",
            Invariant::Ownership => "ownership",
            Invariant::NoLostUpdate => "no_lost_update",
            Invariant::TokenMonotonic => "token_monotonic",
            Invariant::NoOrphanLock => "no_orphan_lock",
            Invariant::NoOversell => "no_oversell",
            Invariant::NoDuplicateEffect => "no_duplicate_effect",
            Invariant::DetectedWithin => "detected_within",
        }
    }

    pub fn from_name(s: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == s)
    }

    /// One line for `locklab list` and trace files.
    pub fn meaning(self) -> &'static str {
        match self {
            Invariant::MutualExclusion => {
                "no two clients ever believe they hold the lock and are in the critical section at once (a paused one included)"
            }
            Invariant::Ownership => {
                "a client never deletes or re-times a lock entry that another client owns, and no stale request of its own deletes its current one"
            }
            Invariant::NoLostUpdate => {
                "the resource's counter equals the number of writes it accepted"
            }
            Invariant::TokenMonotonic => {
                "every fencing token granted is above every token a client has received (a token no client got does not count)"
            }
            Invariant::NoOrphanLock => {
                "no lock entry outlives its owner forever (no expiry, or renewed for a dead owner)"
            }
            Invariant::NoOversell => {
                "the stock never falls below zero (--resource-op check-then-act or conditional, starting at --stock)"
            }
            Invariant::NoDuplicateEffect => {
                "one operation id takes effect once, however often its write is delivered (with the duplicate fault)"
            }
            Invariant::DetectedWithin => {
                "damage to the resource (a lost update, an oversell, a duplicate effect) is flagged by the reconciler within --detect-within of the damaging write (with --reconcile; default one period + one step)"
            }
        }
    }

    /// The layer the invariant protects: a client's *belief*, the *lock
    /// service*'s records (and its *token* source), the *resource*'s data,
    /// or the *business* rule built on it. Fencing protocols keep the
    /// resource safe while beliefs overlap; the report says which is which.
    pub fn category(self) -> &'static str {
        match self {
            Invariant::MutualExclusion => "belief",
            Invariant::Ownership | Invariant::NoOrphanLock => "lock-service",
            Invariant::NoLostUpdate => "resource",
            Invariant::TokenMonotonic => "token",
            Invariant::NoOversell | Invariant::NoDuplicateEffect | Invariant::DetectedWithin => {
                "business"
            }
        }
    }

    /// Whether the invariant says anything about model `m` (only fencing
    /// protocols grant tokens; only a stock can be oversold).
    pub fn applies(self, m: &LockModel) -> bool {
        self.not_applicable(m).is_none()
    }

    /// Why the invariant says nothing about `m`, if it does not.
    pub fn not_applicable(self, m: &LockModel) -> Option<String> {
        match self {
            Invariant::TokenMonotonic if !m.proto.issues_tokens() => {
                Some(format!("{} grants no fencing tokens", m.proto.name()))
            }
            Invariant::MutualExclusion | Invariant::Ownership | Invariant::NoOrphanLock
                if !m.proto.has_lock() =>
            {
                Some(format!("{} has no lock", m.proto.name()))
            }
            Invariant::NoOversell if !m.params.resource_op.has_stock() => Some(format!(
                "no stock: the resource operation is {} (no_oversell needs check-then-act or conditional)",
                m.params.resource_op.name()
            )),
            Invariant::NoDuplicateEffect
                if m.params.faults.get(crate::faults::FaultKind::Duplicate) == 0 =>
            {
                Some("no write is ever delivered twice (switch on the duplicate fault)".to_string())
            }
            Invariant::DetectedWithin if m.params.reconcile.is_none() => {
                Some("no reconciler (add --reconcile EVERY)".to_string())
            }
            _ => None,
        }
    }

    /// Whether the invariant says anything about `proto` under its
    /// default parameters.
    pub fn applies_to(self, proto: &dyn Protocol) -> bool {
        match self {
            Invariant::TokenMonotonic => proto.issues_tokens(),
            Invariant::NoOversell | Invariant::NoDuplicateEffect | Invariant::DetectedWithin => {
                false
            }
            Invariant::MutualExclusion | Invariant::Ownership | Invariant::NoOrphanLock => {
                proto.has_lock()
            }
            _ => true,
        }
    }

    pub fn holds(self, m: &LockModel, w: &World) -> bool {
        match self {
            Invariant::MutualExclusion => w.clients.iter().filter(|c| c.holds()).count() <= 1,
            Invariant::Ownership => w.ghost.foreign.is_none(),
            Invariant::NoLostUpdate => w.resource.value == w.resource.accepted,
            Invariant::TokenMonotonic => w.ghost.token_regressed.is_none(),
            Invariant::NoOrphanLock => orphan(m, w).is_none(),
            Invariant::NoOversell => crate::resource::stock_left(m, w.resource.value) >= 0,
            Invariant::NoDuplicateEffect => !w.ghost.duplicated,
            Invariant::DetectedWithin => !w.resource.recon.is_some_and(|r| r.missed),
        }
    }

    /// One sentence saying how `w` violates the invariant.
    pub fn explain(self, m: &LockModel, w: &World) -> String {
        match self {
            Invariant::MutualExclusion => {
                let h: Vec<String> = w
                    .clients
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.holds())
                    .map(|(i, c)| {
                        let mut s = w.client_name(i as u8);
                        if c.paused.is_some() {
                            s.push_str(" (paused)");
                        }
                        s
                    })
                    .collect();
                let who = match h.len() {
                    2 => format!("{} and {} both", h[0], h[1]),
                    _ => format!("{} all", h.join(", ")),
                };
                format!("{who} believe they hold the lock at once")
            }
            Invariant::Ownership => match w.ghost.foreign {
                Some((actor, _, Touch::DeletedOwnCurrent)) => format!(
                    "a stale unlock of {who}'s, from an earlier attempt or acquisition that carried the same value, deleted {who}'s current lock entry (value reuse)",
                    who = w.client_name(actor)
                ),
                Some((actor, owner, how)) => format!(
                    "{} {} the lock entry owned by {}",
                    w.client_name(actor),
                    match how {
                        Touch::Deleted => "deleted",
                        Touch::Extended => "changed the expiry of",
                        Touch::DeletedOwnCurrent => "deleted",
                    },
                    w.client_name(owner)
                ),
                None => String::new(),
            },
            Invariant::NoLostUpdate => format!(
                "the resource accepted {} writes but its counter is {}: an update was lost",
                w.resource.accepted, w.resource.value
            ),
            Invariant::TokenMonotonic => match w.ghost.token_regressed {
                Some((t, last)) => {
                    format!("token {t} was granted after a client had received token {last}")
                }
                None => String::new(),
            },
            Invariant::NoOrphanLock => orphan(m, w).unwrap_or_default(),
            Invariant::NoDuplicateEffect => {
                "a write delivered twice took effect twice: one operation was applied twice"
                    .to_string()
            }
            Invariant::DetectedWithin => format!(
                "the resource was damaged, {}, and the reconciler had not flagged it {} later",
                crate::resource::damage(m, w).unwrap_or_default(),
                m.params
                    .detection_bound()
                    .map(crate::units::show)
                    .unwrap_or_default()
            ),
            Invariant::NoOversell => format!(
                "{} units were sold from a stock of {}: the stock is {}",
                w.resource.value,
                m.params.stock,
                crate::resource::stock_left(m, w.resource.value)
            ),
        }
    }
}

/// A key with no expiry whose owner is alive but will never remove it: the
/// owner is backing off from a failed attempt of the acquisition the key
/// belongs to (its `SETNX` won, the answer never reached it, and every
/// retry finds the key taken), and none of its requests is in flight that
/// could still set an expiry or delete the key.
fn stuck_behind_own_key(w: &World, server: usize, e: crate::world::Entry) -> bool {
    let owner = &w.clients[e.val.client as usize];
    let me = crate::world::Node::Client(e.val.client);
    e.exp.ttl.is_none()
        && owner.alive
        && owner.phase == Phase::Idle
        && owner
            .wait
            .is_some_and(|wt| wt.kind == crate::world::WaitKind::Backoff)
        && owner.val(e.val.client) == e.val
        && !w
            .net
            .iter()
            .any(|m| m.from == me && m.to == crate::world::Node::Redis(server as u8))
}

/// A lock entry on a serving primary whose owner will never release it and
/// that will never expire: its owner crashed, finished, or moved on, and the
/// entry has no expiry or a watchdog keeps renewing it.
fn orphan(m: &LockModel, w: &World) -> Option<String> {
    for (i, s) in w.redis.iter().enumerate() {
        if s.role != Role::Primary || s.is_dead() {
            continue;
        }
        let Some(e) = s.lock else { continue };
        let owner = &w.clients[e.val.client as usize];
        if stuck_behind_own_key(w, i, e) {
            return Some(format!(
                "lock {} on {} can never go away: {} is alive but took its own key for someone else's, retries forever, and the key has no expiry",
                e.val.text(),
                w.server_name(i as u8),
                w.client_name(e.val.client)
            ));
        }
        let abandoned = !owner.alive || owner.phase == Phase::Done || owner.round > e.val.round;
        if !abandoned {
            continue;
        }
        // A capped watchdog stops renewing by itself: the entry then expires.
        let renewed = owner.wd.is_some_and(|d| d.val == e.val) && m.params.renew_cap.is_none();
        let forever = e.exp.ttl.is_none() || renewed;
        if forever {
            let who = w.client_name(e.val.client);
            let state = if !owner.alive {
                "crashed"
            } else {
                "is done with it"
            };
            let why = if e.exp.ttl.is_none() {
                "it has no expiry"
            } else {
                "a watchdog keeps renewing it"
            };
            return Some(format!(
                "lock {} on {} can never go away: {who} {state} and {why}",
                e.val.text(),
                w.server_name(i as u8)
            ));
        }
    }
    // The consensus services: an entry lives as long as its session, and a
    // session as long as its client heartbeats it. An entry its owner is
    // done with, under a session the owner keeps alive, never goes away.
    for e in &w.coord.entries {
        let owner = &w.clients[e.owner as usize];
        let abandoned = !owner.alive || owner.phase == Phase::Done || owner.round > e.round;
        let heartbeating = owner.wd.is_some();
        if abandoned && heartbeating && w.coord.sessions[e.owner as usize].is_some() {
            let who = w.client_name(e.owner);
            let state = if owner.alive {
                "is done with it"
            } else {
                "'s business thread died"
            };
            return Some(format!(
                "{who}'s entry (revision {}) can never go away: {who}{}{state}, and the session its heartbeat keeps alive keeps the entry",
                e.rev,
                if owner.alive { " " } else { "" },
            ));
        }
    }
    None
}
