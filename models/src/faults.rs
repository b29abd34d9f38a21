//! Faults: what can go wrong, when it may happen, and what it does.
//!
//! Every fault kind lives here, in one place: the list of fault actions
//! enabled in a state (`enabled`) and the effect of each (`apply`). Faults are
//! never urgent: the checker may inject one at any moment, but only while the
//! kind's budget lasts, which keeps the state space finite and the
//! counterexamples honest about how much had to go wrong.

use crate::action::Action;
use crate::client::Ctx;
use crate::ev;
use crate::model::LockModel;
use crate::protocols::Service;
use crate::world::{Node, Phase, WaitKind, World};
use locklab_traces::EventKind;
use serde::{Deserialize, Serialize};

/// The kinds of fault, in a fixed order (the order of `locklab list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    Pause,
    Slow,
    Loss,
    Delay,
    ClockJump,
    Crash,
    Restart,
    Failover,
    ResourceRestart,
    Duplicate,
}

impl FaultKind {
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Pause,
        FaultKind::Slow,
        FaultKind::Loss,
        FaultKind::Delay,
        FaultKind::ClockJump,
        FaultKind::Crash,
        FaultKind::Restart,
        FaultKind::Failover,
        FaultKind::ResourceRestart,
        FaultKind::Duplicate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Slow => "slow",
            FaultKind::Loss => "loss",
            FaultKind::Delay => "delay",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::Crash => "crash",
            FaultKind::Restart => "restart",
            FaultKind::Failover => "failover",
            FaultKind::ResourceRestart => "resource-restart",
            FaultKind::Duplicate => "duplicate",
        }
    }

    pub fn from_name(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// One line for `locklab list`.
    pub fn summary(self) -> &'static str {
        match self {
            FaultKind::Pause => {
                "a client process freezes (business thread and watchdog) for up to --pause-max; it does not know"
            }
            FaultKind::Slow => {
                "the critical section's work runs past --work's maximum, for as long as it likes; the process stays alive and its watchdog runs"
            }
            FaultKind::Loss => {
                "a request or reply in flight is dropped (and what follows it on its connection); the sender only sees its timeout"
            }
            FaultKind::Delay => {
                "a request or reply in flight is held back past the longest latency (by up to --delay-max), and with it what follows on its connection"
            }
            FaultKind::ClockJump => {
                "a server's (or a Redlock client's) wall clock jumps by --jump, forward or backward"
            }
            FaultKind::Crash => {
                "a client's business thread dies and never releases; its watchdog dies with it unless --no-cancel"
            }
            FaultKind::Restart => {
                "a Redis instance restarts empty (no persistence); with --delayed-restart it stays down a TTL first"
            }
            FaultKind::Failover => {
                "the Redis primary dies and its replica, holding only what was replicated, is promoted"
            }
            FaultKind::ResourceRestart => {
                "the resource restarts: its data survives, a highest token kept in memory (--token-store memory) is forgotten"
            }
            FaultKind::Duplicate => {
                "a client's write that landed is delivered again (a retry after a lost acknowledgement, an at-least-once redelivery)"
            }
        }
    }

    /// Every kind a lock service and its clients can suffer (all but the
    /// resource's own).
    pub const LOCK_SIDE: [FaultKind; 8] = [
        FaultKind::Pause,
        FaultKind::Slow,
        FaultKind::Loss,
        FaultKind::Delay,
        FaultKind::ClockJump,
        FaultKind::Crash,
        FaultKind::Restart,
        FaultKind::Failover,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A budget that never runs out.
pub const UNLIMITED: u8 = u8::MAX;

/// Remaining budget per fault kind. Part of the state: a fault used is a
/// fault that cannot happen again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Budgets(pub [u8; 10]);

impl Budgets {
    pub fn none() -> Budgets {
        Budgets([0; 10])
    }
    pub fn get(&self, k: FaultKind) -> u8 {
        self.0[k.index()]
    }
    pub fn set(&mut self, k: FaultKind, n: u8) {
        self.0[k.index()] = n;
    }
    /// Spends one fault of kind `k`; a budget of `UNLIMITED` never runs out
    /// (the simulator draws faults by rate, not by budget).
    pub fn take(&mut self, k: FaultKind) {
        if self.0[k.index()] != UNLIMITED {
            self.0[k.index()] = self.0[k.index()].saturating_sub(1);
        }
    }
    /// Kinds with a non-zero budget.
    pub fn enabled(&self) -> Vec<FaultKind> {
        FaultKind::ALL
            .into_iter()
            .filter(|k| self.get(*k) > 0)
            .collect()
    }
}

/// How the passed list compares the fault budgets left in two states of
/// one world: whether a stored state covers another whose zone it includes
/// (docs/model.md, "Inclusion, breadth first, shortest counterexamples").
///
/// With more budget left a state can do every step the other can, as long
/// as the rules read the budgets only to enable faults. The heartbeat fold
/// reads them (`coord::heartbeat_folds`: no fault left may disturb the
/// heartbeat), so where it can happen the budgets of the kinds it reads,
/// and the faults used when a cap counts them, must be equal as well: a
/// state with a pause left would keep heartbeating where the other folds,
/// and need more steps to follow it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetOrder {
    /// A state with at least as much budget left of every kind covers
    /// (else only one with exactly the same budgets).
    pub subsume: bool,
    /// Kinds (a bit each) whose budgets must be equal even so.
    pub same: u16,
    /// The faults used so far must be equal even so.
    pub same_used: bool,
    /// Kinds (a bit each) that do the same thing wherever they can strike
    /// (a Redlock instance's restart and failover: both leave it empty),
    /// so that only how many of them are left matters: their budgets are
    /// compared by their sum. Never a kind in `same`.
    pub pool: u16,
}

impl BudgetOrder {
    /// Whether a state stored with budgets `stored` left may cover one of
    /// the same world with `left` left.
    ///
    /// Called for every zone stored with a world a successor meets, so it
    /// reads each budget once: equal budgets always cover; otherwise every
    /// kind needs at least as much left, and the kinds in `same` exactly
    /// as much. With `same_used`, the totals must be equal too, which, with
    /// at least as much of every kind, means equal budgets. The kinds of
    /// `pool` count as one kind, their budgets summed: a state with a
    /// failover left can do whatever one with a restart left can, one step
    /// for one step, and reaches the same worlds with the same budgets.
    #[inline]
    pub fn covers(&self, stored: &Budgets, left: &Budgets) -> bool {
        if stored == left {
            return true;
        }
        let (stored, left) = (self.pooled(stored), self.pooled(left));
        if !self.subsume || self.same_used {
            return stored == left;
        }
        self.at_least(&stored, &left)
    }

    /// Every kind has at least as much left in `stored`, the kinds in
    /// `same` exactly as much.
    #[inline]
    fn at_least(&self, stored: &Budgets, left: &Budgets) -> bool {
        stored
            .0
            .iter()
            .zip(&left.0)
            .enumerate()
            .all(|(i, (s, l))| s > l && self.same & (1 << i) == 0 || s == l)
    }

    /// `b` with the budgets of the pooled kinds summed into the first of
    /// them and the others zero.
    #[inline]
    fn pooled(&self, b: &Budgets) -> Budgets {
        let mut out = *b;
        if self.pool == 0 {
            return out;
        }
        let mut first: Option<usize> = None;
        for i in 0..out.0.len() {
            if self.pool & (1 << i) == 0 {
                continue;
            }
            match first {
                None => first = Some(i),
                Some(f) => {
                    out.0[f] = out.0[f].saturating_add(out.0[i]);
                    out.0[i] = 0;
                }
            }
        }
        out
    }
}

/// How many faults `w` has seen so far (its budgets say).
pub fn used(m: &LockModel, w: &World) -> u32 {
    let total: u32 = m.params.faults.0.iter().map(|b| *b as u32).sum();
    total - w.faults_left.0.iter().map(|b| *b as u32).sum::<u32>()
}

/// The fault kind an action spends, if it is a fault.
pub fn kind_of(a: &Action) -> Option<FaultKind> {
    match a {
        Action::Pause { .. } | Action::PauseReconciler => Some(FaultKind::Pause),
        Action::Slow { .. } => Some(FaultKind::Slow),
        Action::Drop { .. } => Some(FaultKind::Loss),
        Action::Delay { .. } => Some(FaultKind::Delay),
        Action::ClockJump { .. } => Some(FaultKind::ClockJump),
        Action::Crash { .. } => Some(FaultKind::Crash),
        Action::Restart { .. } => Some(FaultKind::Restart),
        Action::Failover { .. } => Some(FaultKind::Failover),
        Action::ResourceRestart => Some(FaultKind::ResourceRestart),
        Action::Duplicate { .. } => Some(FaultKind::Duplicate),
        _ => None,
    }
}

/// Whether a fault of kind `k` can still strike in `w`: its budget is not
/// spent, nor are all faults the cap (`--max-faults`) allows.
pub fn can_strike(m: &LockModel, w: &World, k: FaultKind) -> bool {
    w.faults_left.get(k) > 0
        && m.params
            .max_faults
            .is_none_or(|cap| used(m, w) < cap as u32)
}

/// Appends the fault (and fault-ending) actions enabled in `w`.
pub fn enabled(m: &LockModel, w: &World, out: &mut Vec<Action>) {
    let left = |k: FaultKind| can_strike(m, w, k);
    // The end of a pause is not a fault but the environment choosing when
    // it ends; it costs no budget.
    for (i, c) in w.clients.iter().enumerate() {
        if c.paused.is_some() {
            out.push(Action::Resume { client: i as u8 });
        }
    }
    if w.resource.recon.is_some_and(|r| r.paused.is_some()) {
        out.push(Action::ResumeReconciler);
    }
    if left(FaultKind::Pause) {
        for (i, c) in w.clients.iter().enumerate() {
            if c.alive && c.paused.is_none() && pause_matters(w, i) {
                out.push(Action::Pause { client: i as u8 });
            }
        }
        // The reconciler is a process too. Only a pause while its run is
        // due (after the damage) is offered: one that began earlier delays
        // that run no more than one that begins at the damage; once it has
        // flagged the damage, a pause changes nothing.
        if w.resource
            .recon
            .is_some_and(|r| r.paused.is_none() && r.wait.is_some())
        {
            out.push(Action::PauseReconciler);
        }
    }
    if left(FaultKind::Slow) {
        for (i, c) in w.clients.iter().enumerate() {
            if c.alive && c.phase == Phase::Work && c.wait.is_some_and(|w| w.kind == WaitKind::Work)
            {
                out.push(Action::Slow { client: i as u8 });
            }
        }
    }
    if left(FaultKind::Loss) {
        for msg in &w.net {
            if !msg.arrived {
                out.push(Action::Drop { msg: *msg });
            }
        }
    }
    if left(FaultKind::Delay) {
        for msg in &w.net {
            if !msg.held && !msg.arrived {
                out.push(Action::Delay { msg: *msg });
            }
        }
    }
    if left(FaultKind::ClockJump) {
        let j = m.params.jump;
        for (i, s) in w.redis.iter().enumerate() {
            if !s.is_dead() {
                for by in [j, -j] {
                    out.push(Action::ClockJump {
                        node: Node::Redis(i as u8),
                        by,
                    });
                }
            }
        }
        if m.proto.uses_client_clock() {
            for (i, c) in w.clients.iter().enumerate() {
                if c.alive && c.phase != Phase::Done {
                    for by in [j, -j] {
                        out.push(Action::ClockJump {
                            node: Node::Client(i as u8),
                            by,
                        });
                    }
                }
            }
        }
    }
    if left(FaultKind::Crash) {
        for (i, c) in w.clients.iter().enumerate() {
            if c.alive && c.phase != Phase::Done {
                out.push(Action::Crash { client: i as u8 });
            }
        }
    }
    if left(FaultKind::Restart) {
        for (i, s) in w.redis.iter().enumerate() {
            if s.is_up() {
                out.push(Action::Restart { server: i as u8 });
            }
        }
    }
    if left(FaultKind::Failover) {
        match m.proto.service() {
            Service::Replicated => {
                if w.can_fail_over() {
                    out.push(Action::Failover {
                        server: w.primary(),
                    });
                }
            }
            Service::Instances => {
                for (i, s) in w.redis.iter().enumerate() {
                    if s.is_up() {
                        out.push(Action::Failover { server: i as u8 });
                    }
                }
            }
            Service::Single | Service::Consensus | Service::Nothing => {}
        }
    }
    // Only a highest token kept in memory is lost; a restart that finds
    // none to lose changes nothing and is not offered.
    if left(FaultKind::ResourceRestart)
        && m.params.token_store == crate::params::TokenStore::Memory
        && w.resource.max_token.is_some()
    {
        out.push(Action::ResourceRestart);
    }
    // A write that landed can be delivered again until its client is done
    // with the acquisition (then nothing is left to retry it).
    if left(FaultKind::Duplicate) {
        for (i, c) in w.clients.iter().enumerate() {
            if c.wrote {
                out.push(Action::Duplicate { client: i as u8 });
            }
        }
    }
}

/// Pausing a client that is done, or idle with nothing running and nothing
/// on its way to it, changes nothing an idle client could not do by simply
/// waiting (it picks its own moment to start): such pauses are not offered.
fn pause_matters(w: &World, c: usize) -> bool {
    let cl = &w.clients[c];
    match cl.phase {
        Phase::Done => cl.wd.is_some(),
        Phase::Idle => cl.wd.is_some() || w.net.iter().any(|m| m.to == Node::Client(c as u8)),
        _ => true,
    }
}

/// Applies a fault action (or a resume). Returns false if `a` is not one.
pub fn apply(x: &mut Ctx, a: &Action) -> bool {
    if let Some(k) = kind_of(a) {
        x.w.faults_left.take(k);
    }
    // A folded reply (`client::settle_gather`) can be lost or held only
    // while it is still on its way; after that, its round's replies arrive
    // by steps of their own.
    if let Action::Drop { msg } | Action::Delay { msg } = a
        && x.m.folded(x.w, msg)
        && let Node::Client(c) = msg.to
    {
        x.t.require(msg.clk, x.m.params.latency_max);
        crate::client::unfold(x, c, Some(msg));
    }
    match *a {
        Action::Resume { client } => crate::model::resume(x, client),
        Action::Pause { client } => {
            let clk = x.t.reset();
            x.w.clients[client as usize].paused = Some(clk);
            let max = x.m.params.pause_max;
            ev!(
                x.log,
                EventKind::Fault,
                x.w.client_name(client),
                None,
                "PAUSED (GC / VM freeze{}); it will not notice",
                max.map(|k| format!(", up to {}", crate::units::show(k)))
                    .unwrap_or_default()
            );
        }
        Action::Slow { client } => {
            if let Some(w) = &mut x.w.clients[client as usize].wait {
                w.kind = WaitKind::Slow;
            }
            ev!(
                x.log,
                EventKind::Fault,
                x.w.client_name(client),
                None,
                "its critical section turns SLOW (the work runs past its maximum)"
            );
        }
        Action::Drop { msg } => {
            if x.m.params.network == crate::params::Network::Fifo {
                x.w.lose_msg(&msg);
            } else {
                x.w.remove_msg(&msg);
            }
            ev!(
                x.log,
                EventKind::Fault,
                x.w.node_name(msg.from),
                Some(x.w.node_name(msg.to)),
                "message LOST: {}",
                x.w.msg_text(&msg)
            );
            crate::model::released(x, &msg);
        }
        Action::Delay { msg } => {
            let d = x.m.params.delay_max;
            if let Some(m) = x.w.net.iter_mut().find(|m| **m == msg) {
                m.held = true;
            }
            x.w.net.sort();
            ev!(
                x.log,
                EventKind::Fault,
                x.w.node_name(msg.from),
                Some(x.w.node_name(msg.to)),
                "message DELAYED{}: {}",
                d.map(|k| format!(" by up to {} more", crate::units::show(k)))
                    .unwrap_or_default(),
                x.w.msg_text(&msg)
            );
        }
        Action::ClockJump { node, by } => match node {
            Node::Redis(s) => crate::redis::clock_jump(x, s, by),
            Node::Client(c) => crate::client::clock_jump(x, c, by),
            // Never offered: the service's clock is monotonic.
            Node::Service => {}
        },
        Action::Crash { client } => crate::client::crash(x, client),
        Action::Restart { server } => crate::redis::restart(x, server),
        Action::Failover { server } => crate::redis::failover(x, server),
        Action::ResourceRestart => crate::resource::restart(x.m, x.w, x.log),
        Action::Duplicate { client } => crate::resource::duplicate(x.m, x.w, client, x.log),
        Action::PauseReconciler => {
            let clk = x.t.reset();
            if let Some(r) = &mut x.w.resource.recon {
                r.paused = Some(clk);
            }
            let max = x.m.params.pause_max;
            ev!(
                x.log,
                EventKind::Fault,
                crate::resource::RECONCILER.to_string(),
                None,
                "PAUSED (GC / VM freeze{}): its runs wait",
                max.map(|k| format!(", up to {}", crate::units::show(k)))
                    .unwrap_or_default()
            );
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets(kinds: &[(FaultKind, u8)]) -> Budgets {
        let mut b = Budgets::none();
        for (k, n) in kinds {
            b.set(*k, *n);
        }
        b
    }

    #[test]
    fn a_budget_order_covers_more_budget_except_where_a_rule_reads_it() {
        use FaultKind::*;
        let more = budgets(&[(Pause, 1), (Slow, 1)]);
        let less = budgets(&[(Pause, 1)]);
        let no_pause = budgets(&[(Slow, 1)]);
        let exact = BudgetOrder::default();
        assert!(exact.covers(&more, &more) && !exact.covers(&more, &less));
        let subsume = BudgetOrder {
            subsume: true,
            ..exact
        };
        assert!(subsume.covers(&more, &less) && subsume.covers(&more, &no_pause));
        assert!(!subsume.covers(&less, &more));
        // Pause read by a rule: its budget must match; slow may differ.
        let pause_read = BudgetOrder {
            same: 1 << Pause.index(),
            ..subsume
        };
        assert!(pause_read.covers(&more, &less));
        assert!(!pause_read.covers(&more, &no_pause));
        // The faults used read by a rule (a cap): the totals must match.
        let used_read = BudgetOrder {
            same_used: true,
            ..subsume
        };
        assert!(!used_read.covers(&more, &less));
        assert!(used_read.covers(&more, &more));
        // Restart and failover pooled: one left of either covers one left
        // of the other, and two kinds' worth covers one, not the reverse.
        let pool = BudgetOrder {
            pool: 1 << Restart.index() | 1 << Failover.index(),
            ..subsume
        };
        let restart = budgets(&[(Restart, 1), (Pause, 1)]);
        let failover = budgets(&[(Failover, 1), (Pause, 1)]);
        let both = budgets(&[(Restart, 1), (Failover, 1)]);
        let just_failover = budgets(&[(Failover, 1)]);
        assert!(!subsume.covers(&restart, &failover));
        assert!(pool.covers(&restart, &failover) && pool.covers(&failover, &restart));
        assert!(pool.covers(&both, &just_failover) && !pool.covers(&just_failover, &both));
        // A pause is still a pause.
        assert!(!pool.covers(&both, &restart));
        // With the faults used read, the pooled budgets must match.
        let pool_used = BudgetOrder {
            same_used: true,
            ..pool
        };
        assert!(pool_used.covers(&restart, &failover));
        assert!(!pool_used.covers(&both, &just_failover));
    }
}
