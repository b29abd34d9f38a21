//! The safety invariants (docs/model.md, "Invariants"). Each is a predicate
//! on one world state and, where a client's own clock decides what it
//! believes, on the state's clocks; facts about transitions (a `DEL` that
//! removed someone else's lock, a token that went backwards, a write past
//! the writer's validity) are recorded in the state's ghost fields by the
//! transition that causes them, so the state they produce ends a trace.
//!
//! A violation is a set of *ways*: each a conjunction of clock conditions
//! ([`Below`]) that must hold together at one moment of the state (none: the
//! state violates whatever its clocks read). The zone engine asks whether
//! some valuation of a state's zone meets one of them ([`Invariant::holds_in`]),
//! the concrete engine whether the clocks meet one now ([`Invariant::holds_at`]),
//! and the trace builder adds a way's conditions to the times it solves for
//! (`LockModel::times_for_violation`).

use crate::engine::concrete::CState;
use crate::engine::dbm::{Bound, Dbm};
use crate::engine::solve::Rational;
use crate::engine::zone::ZState;
use crate::model::LockModel;
use crate::protocols::Protocol;
use crate::time::{Clk, Micros};
use crate::world::{Phase, Role, Session, Touch, World};

/// A clock condition a violation needs: clock `clk` reads below `hi` µs.
/// Only upper bounds occur: a client stops believing once its clock has run
/// past a bound, so the conditions are met, if at all, from the moment a
/// state is entered (time only makes clocks larger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Below {
    pub clk: Clk,
    pub hi: Micros,
}

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
    WithinValidity,
}

impl Invariant {
    pub const ALL: [Invariant; 9] = [
        Invariant::MutualExclusion,
        Invariant::Ownership,
        Invariant::NoLostUpdate,
        Invariant::TokenMonotonic,
        Invariant::NoOrphanLock,
        Invariant::NoOversell,
        Invariant::NoDuplicateEffect,
        Invariant::DetectedWithin,
        Invariant::WithinValidity,
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
            Invariant::WithinValidity => "within_validity",
        }
    }

    pub fn from_name(s: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == s)
    }

    /// One line for `locklab list` and trace files.
    pub fn meaning(self) -> &'static str {
        match self {
            Invariant::MutualExclusion => {
                "no two clients ever believe they hold the lock and are in the critical section at once (a paused one included; a client that knows its validity, a Redlock client that checks it, believes only while its own clock says the validity lasts)"
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
            Invariant::WithinValidity => {
                "a client that knows its validity (a Redlock client that checks it) never writes to the resource once its own clock says the validity has run out"
            }
        }
    }

    /// The layer the invariant protects: a client's *belief*, the *lock
    /// service*'s records (and its *token* source), the *resource*'s data,
    /// or the *business* rule built on it. Fencing protocols keep the
    /// resource safe while beliefs overlap; the report says which is which.
    pub fn category(self) -> &'static str {
        match self {
            Invariant::MutualExclusion | Invariant::WithinValidity => "belief",
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
            Invariant::WithinValidity if !m.proto.checks_validity() => Some(format!(
                "{} clients do not know how long their lock is valid (only Redlock's validity = TTL - elapsed - drift tells a client)",
                m.proto.name()
            )),
            Invariant::WithinValidity if !m.params.validity_check => Some(
                "the client does not check its validity (--validity-check off): it has no reading of it to act against"
                    .to_string(),
            ),
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
            Invariant::WithinValidity => proto.checks_validity(),
            _ => true,
        }
    }

    /// The ways `w` violates the invariant, each the clock conditions that
    /// must hold at once (an empty way: violated whatever the clocks read).
    /// No way: `w` satisfies it at every moment.
    pub fn violations(self, m: &LockModel, w: &World) -> Vec<Vec<Below>> {
        match self {
            Invariant::MutualExclusion => believers(m, w),
            _ if self.holds_untimed(m, w) => Vec::new(),
            _ => vec![Vec::new()],
        }
    }

    /// Whether the invariant holds throughout the symbolic state `s`: no
    /// valuation of its zone meets any way of violating it.
    pub fn holds_in(self, m: &LockModel, s: &ZState) -> bool {
        self.violations(m, &s.world)
            .iter()
            .all(|way| !zone_meets(&s.zone, way))
    }

    /// Whether the invariant holds in the concrete state `s` at its time.
    pub fn holds_at(self, m: &LockModel, s: &CState) -> bool {
        self.violations(m, &s.world).iter().all(|way| {
            !way.iter()
                .all(|b| s.read(b.clk, s.now) < Rational::integer(b.hi))
        })
    }

    /// The invariants whose violation reads no clock.
    fn holds_untimed(self, m: &LockModel, w: &World) -> bool {
        match self {
            Invariant::MutualExclusion => believers(m, w).is_empty(),
            Invariant::Ownership => w.ghost.foreign.is_none(),
            Invariant::NoLostUpdate => w.resource.value == w.resource.accepted,
            Invariant::TokenMonotonic => w.ghost.token_regressed.is_none(),
            Invariant::NoOrphanLock => orphan(m, w).is_none(),
            Invariant::NoOversell => crate::resource::stock_left(m, w.resource.value) >= 0,
            Invariant::NoDuplicateEffect => !w.ghost.duplicated,
            Invariant::DetectedWithin => !w.resource.recon.is_some_and(|r| r.missed),
            Invariant::WithinValidity => w.ghost.late_write.is_none(),
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
                let own = if h.len() >= 2 && m.proto.checks_validity() && m.params.validity_check {
                    ", each within its validity by its own clock"
                } else {
                    ""
                };
                format!("{who} believe they hold the lock at once{own}")
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
            Invariant::WithinValidity => match w.ghost.late_write {
                Some(c) => format!(
                    "{} wrote to the resource after its own clock said its validity had run out",
                    w.client_name(c)
                ),
                None => String::new(),
            },
        }
    }
}

/// The ways two clients can believe they hold the lock at once: every pair
/// of clients in their critical sections, with the conditions under which
/// each still believes (a client that knows its validity believes only
/// while its clock reads below the validity's end; any other, as long as it
/// is in its critical section).
fn believers(m: &LockModel, w: &World) -> Vec<Vec<Below>> {
    let holders: Vec<u8> = (0..w.clients.len() as u8)
        .filter(|c| w.clients[*c as usize].holds())
        .collect();
    let mut ways = Vec::new();
    for (i, a) in holders.iter().enumerate() {
        for b in &holders[i + 1..] {
            let way: Vec<Below> = [a, b]
                .iter()
                .filter_map(|c| m.proto.validity(m, w, **c))
                .collect();
            if way.is_empty() {
                // Violated whatever the clocks read: no need for the rest.
                return vec![way];
            }
            ways.push(way);
        }
    }
    ways
}

/// Whether some valuation of `zone` meets every condition of `way`.
fn zone_meets(zone: &Dbm, way: &[Below]) -> bool {
    if way.is_empty() {
        return !zone.is_empty();
    }
    let mut z = zone.clone();
    way.iter()
        .all(|b| z.constrain(b.clk.0 as usize, 0, Bound::lt(b.hi)))
        && !z.is_empty()
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
        let heartbeating =
            owner.wd.is_some() || w.coord.sessions[e.owner as usize] == Some(Session::Kept);
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
