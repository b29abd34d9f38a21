//! The protected resource, the last line of defence (article §7.4–§7.5).
//!
//! **What a critical section does to it** (`--resource-op`):
//!
//! * `rmw`: the client reads the counter on entry and writes `read + 1`
//!   back after its work (client-side read, compute, write back);
//! * `in-place`: the resource applies the change itself (`SET stock =
//!   stock - 1`): the write does not depend on what the client read;
//! * `check-then-act`: the client reads the stock, decides in the client
//!   ("if stock > 0"), and then has the resource take one unit in place.
//!   The stock starts at `--stock` (default 1). `no_oversell` judges it.
//!
//! The state keeps one counter for all three: the changes applied
//! (increments, or units taken from the stock). `no_lost_update` compares
//! it with the writes accepted.
//!
//! **How it checks tokens** (`--resource-check`, each named after the
//! article's §7.4 item): `none`; `write` (the token on writes, checked and
//! applied atomically); `read-write` (reads fenced too); `update-where`
//! (§7.4 1.1, a conditional `UPDATE ... WHERE fencing_token < :token`);
//! `txn-for-update` (§7.4 1.2 with `SELECT ... FOR UPDATE`: atomic);
//! `txn-read-committed` (§7.4 1.2 under read-committed without a row lock:
//! the check and the write are two separate steps of the client, and the
//! write sets `fencing_token = :token` blindly); `cas` (§7.4 2, a store's
//! compare-and-set with the token as the version); `service` (§7.4 3, your
//! own service keeping the highest token, in memory or durably:
//! `--token-store`). `--fence-reads` makes reads carry the token and be
//! checked by the same form. Every atomic form has the same semantics here
//! (compare, then raise the mark and apply, in one step); they differ in
//! what they are, and the checker shows they give the same verdicts.
//!
//! A rejected operation is reported back: the client learns it is stale
//! and abandons its critical section.
//!
//! **Actors and faults of the resource's own**: unfenced writers
//! (`--unfenced-writers N`: a batch job, an old client version) read and
//! later write with no lock and no token, bypassing the check
//! ("绕过校验的旁路写入会让整个机制形同虚设", §7.4 3); a `resource-restart`
//! fault forgets a highest token kept in memory.
//!
//! **Reconciliation after the fact** (`--reconcile EVERY`, §7.5 对账): a
//! reconciler runs every EVERY (on its own clock, within one step), at a
//! phase nothing ties to the clients', and compares the resource with the
//! business ledger: the writes accepted
//! (a counter below them is a lost update), the units sold (a stock below
//! zero is an oversell), the operations applied (one applied twice is a
//! duplicate effect). Runs that find nothing change nothing, so the model
//! keeps the one that matters: the step that first damages the resource
//! arms the next run, due anywhere from at once to one period and a step
//! later (any phase). It flags the damage, and says how
//! long after the damaging write (exactly, in a trace). It prevents
//! nothing: the invariants still break. The step that first damages the
//! resource arms a clock; `detected_within` holds while the damage is
//! flagged before that clock passes `--detect-within` (default: one period
//! on the reconciler's clock plus one step, what an undisturbed reconciler
//! always meets). A `pause` can strike the reconciler too, and then it can
//! be late.

use crate::client::Ctx;
use crate::ev;
use crate::model::LockModel;
use crate::params::{ResourceCheck, ResourceOp, TokenRule};
use crate::world::{Log, Phase, World, Writer};
use locklab_traces::EventKind;

/// Whether a resource that has seen `max` accepts an operation carrying `token`.
fn admits(m: &LockModel, max: Option<u16>, token: Option<u16>) -> bool {
    let Some(t) = token else { return true };
    match max {
        None => true,
        Some(max) => match m.params.token_rule {
            TokenRule::Ge => t >= max,
            TokenRule::Gt => t > max,
        },
    }
}

fn raise(w: &mut World, token: Option<u16>) {
    if let Some(t) = token {
        let r = &mut w.resource;
        r.max_token = Some(r.max_token.map_or(t, |m| m.max(t)));
    }
}

/// Units left in stock when `taken` have been taken (may be negative: an oversell).
pub fn stock_left(m: &LockModel, taken: u8) -> i16 {
    m.params.stock as i16 - taken as i16
}

/// What a read shows, in words.
fn shown(m: &LockModel, v: u8) -> String {
    if m.params.resource_op.has_stock() {
        format!("stock {}", stock_left(m, v))
    } else {
        v.to_string()
    }
}

/// Client `c` reads the resource on entering its critical section. Returns
/// false if a fenced read was rejected.
pub fn read(x: &mut Ctx, c: u8) -> bool {
    let token = x.w.clients[c as usize].token;
    let fenced = token.is_some() && x.m.params.reads_fenced();
    if fenced {
        if !admits(x.m, x.w.resource.max_token, token) {
            ev!(
                x.log,
                EventKind::Reject,
                "resource".to_string(),
                Some(x.w.client_name(c)),
                "rejects {}'s read: token {} is stale (highest seen {})",
                x.w.client_name(c),
                token.unwrap_or(0),
                x.w.resource.max_token.unwrap_or(0)
            );
            return false;
        }
        raise(x.w, token);
    }
    let v = x.w.resource.value;
    x.w.clients[c as usize].read = Some(v);
    ev!(
        x.log,
        EventKind::Read,
        x.w.client_name(c),
        Some("resource".to_string()),
        "reads the resource: {}{}",
        shown(x.m, v),
        if fenced {
            format!(" (token {} checked)", token.unwrap_or(0))
        } else {
            String::new()
        }
    );
    true
}

/// How a fenced write was checked, for the event text.
fn form_text(m: &LockModel, t: u16) -> String {
    let lt = match m.params.token_rule {
        TokenRule::Gt => "<",
        TokenRule::Ge => "<=",
    };
    match m.params.resource_check {
        ResourceCheck::None | ResourceCheck::Write | ResourceCheck::ReadWrite => {
            format!(" with token {t}")
        }
        ResourceCheck::UpdateWhere => {
            format!(" with token {t} (UPDATE ... WHERE fencing_token {lt} {t}: 1 row)")
        }
        ResourceCheck::TxnForUpdate => {
            format!(" with token {t} (SELECT ... FOR UPDATE, compare, UPDATE, COMMIT)")
        }
        ResourceCheck::TxnReadCommitted => {
            format!(" with token {t} (UPDATE ..., fencing_token = {t}; COMMIT)")
        }
        ResourceCheck::Cas => format!(" with token {t} (compare-and-set: version {lt} {t})"),
        ResourceCheck::Service => {
            format!(" with token {t} (the service's highest token compare-and-swapped to {t})")
        }
    }
}

/// The change a write of client `c` (who read `read`) makes: the new
/// counter and its description; `Err` (what happened instead) when a
/// `check-then-act` client sees no stock, or a `conditional` update finds
/// none, and nothing is written.
fn change(m: &LockModel, w: &World, read: u8) -> Result<(u8, String), String> {
    let now = w.resource.value;
    match m.params.resource_op {
        ResourceOp::Rmw => {
            let new = read.saturating_add(1);
            Ok((new, format!("writes {new} (read + 1)")))
        }
        ResourceOp::InPlace => {
            let new = now.saturating_add(1);
            Ok((new, format!("adds 1 in place: {now} -> {new}")))
        }
        ResourceOp::CheckThenAct => {
            if stock_left(m, read) <= 0 {
                return Err(format!(
                    "sees {} in stock and sells nothing",
                    stock_left(m, read)
                ));
            }
            let s = stock_left(m, now);
            Ok((
                now.saturating_add(1),
                format!("takes one unit in place: stock {s} -> {}", s - 1),
            ))
        }
        ResourceOp::Conditional => {
            let s = stock_left(m, now);
            if s <= 0 {
                return Err(format!(
                    "UPDATE ... SET stock = stock - 1 WHERE stock > 0 matches no row (stock {s}): nothing sold"
                ));
            }
            Ok((
                now.saturating_add(1),
                format!(
                    "UPDATE ... SET stock = stock - 1 WHERE stock > 0: stock {s} -> {}",
                    s - 1
                ),
            ))
        }
    }
}

/// Records that client `c`'s write landed, when a `duplicate` fault can
/// deliver it again (otherwise the fact would only split states).
fn mark_written(x: &mut Ctx, c: u8) {
    if x.m.params.faults.get(crate::faults::FaultKind::Duplicate) > 0 {
        x.w.clients[c as usize].wrote = true;
    }
}

/// Applies an accepted write.
fn apply(w: &mut World, new: u8) {
    let r = &mut w.resource;
    r.value = new;
    r.accepted = r.accepted.saturating_add(1);
}

/// Client `c`'s critical section writes; then it is over. Under
/// `txn-read-committed` this is two steps: the token check (the client
/// then stays in `Write` with the commit due), and the write.
pub fn write(x: &mut Ctx, c: u8) {
    let cl = &x.w.clients[c as usize];
    let token = cl.token;
    let read = cl.read.unwrap_or(0);
    let phase = cl.phase;
    let check = x.m.params.resource_check;
    let fenced = token.is_some() && check.checks();
    let two_steps = fenced && check == ResourceCheck::TxnReadCommitted;
    // The commit of a read-committed transaction whose check passed: the
    // UPDATE sets the token column to this token, whatever it holds now.
    if two_steps && phase == Phase::Write {
        if let Ok((new, what)) = change(x.m, x.w, read) {
            x.w.resource.max_token = token;
            apply(x.w, new);
            mark_written(x, c);
            ev!(
                x.log,
                EventKind::Write,
                x.w.client_name(c),
                Some("resource".to_string()),
                "{what}{}",
                form_text(x.m, token.unwrap_or(0))
            );
        }
        x.leave(c);
        return;
    }
    let (new, what) = match change(x.m, x.w, read) {
        Ok(ch) => ch,
        Err(why) => {
            ev!(
                x.log,
                EventKind::Note,
                x.w.client_name(c),
                Some("resource".to_string()),
                "{why}"
            );
            x.leave(c);
            return;
        }
    };
    if fenced && !admits(x.m, x.w.resource.max_token, token) {
        ev!(
            x.log,
            EventKind::Reject,
            "resource".to_string(),
            Some(x.w.client_name(c)),
            "rejects {}'s write of {new}: token {} is stale (highest seen {})",
            x.w.client_name(c),
            token.unwrap_or(0),
            x.w.resource.max_token.unwrap_or(0)
        );
        x.leave(c);
        return;
    }
    if two_steps {
        // BEGIN; SELECT fencing_token (no row lock): the check passed; the
        // UPDATE is the client's next step.
        ev!(
            x.log,
            EventKind::Note,
            x.w.client_name(c),
            Some("resource".to_string()),
            "BEGIN; SELECT fencing_token -> {}: token {} passes (read-committed, no row lock; the UPDATE follows)",
            x.w.resource
                .max_token
                .map_or("none".to_string(), |t| t.to_string()),
            token.unwrap_or(0)
        );
        x.due(c, Phase::Write);
        return;
    }
    if fenced {
        raise(x.w, token);
    }
    apply(x.w, new);
    mark_written(x, c);
    ev!(
        x.log,
        EventKind::Write,
        x.w.client_name(c),
        Some("resource".to_string()),
        "{what}{}",
        if fenced {
            form_text(x.m, token.unwrap_or(0))
        } else {
            String::new()
        }
    );
    x.leave(c);
}

/// The name of unfenced writer `i`.
pub fn writer_name(i: u8) -> String {
    format!("w{}", i + 1)
}

/// The unfenced writers that can take a step in `w` (never urgent: a
/// batch job runs whenever it runs).
pub fn writers_ready(w: &World) -> impl Iterator<Item = u8> + '_ {
    w.resource
        .writers
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != Writer::Done)
        .map(|(i, _)| i as u8)
}

/// Unfenced writer `i` takes its next step: it reads, or it writes what
/// its operation says, with no lock and no token.
pub fn writer_step(m: &LockModel, w: &mut World, i: u8, log: &mut Log) {
    let who = writer_name(i);
    match w.resource.writers[i as usize] {
        Writer::Done => {}
        Writer::Ready => {
            let v = w.resource.value;
            w.resource.writers[i as usize] = Writer::Read(v);
            ev!(
                log,
                EventKind::Read,
                who,
                Some("resource".to_string()),
                "(unfenced writer, no lock) reads the resource: {}",
                shown(m, v)
            );
        }
        Writer::Read(read) => {
            w.resource.writers[i as usize] = Writer::Done;
            match change(m, w, read) {
                Ok((new, what)) => {
                    apply(w, new);
                    ev!(
                        log,
                        EventKind::Write,
                        who,
                        Some("resource".to_string()),
                        "{what} with no token (bypasses the fence)"
                    );
                }
                Err(why) => ev!(
                    log,
                    EventKind::Note,
                    who,
                    Some("resource".to_string()),
                    "{why}"
                ),
            }
        }
    }
}

/// Client `c`'s write, which landed, is delivered again (a retry after a
/// lost acknowledgement, an at-least-once redelivery): the same operation,
/// with the same token and computed from the same read. An idempotent
/// resource finds its operation id already applied and absorbs it;
/// otherwise it passes the same token check as any write and takes effect
/// a second time.
pub fn duplicate(m: &LockModel, w: &mut World, c: u8, log: &mut Log) {
    let who = w.client_name(c);
    let cl = &w.clients[c as usize];
    let (token, read, round) = (cl.token, cl.read.unwrap_or(0), cl.round);
    let op = format!("{}#{}", who, round + 1);
    ev!(
        log,
        EventKind::Fault,
        who.clone(),
        Some("resource".to_string()),
        "its write (operation {op}) is DELIVERED AGAIN (a retry after a lost acknowledgement)"
    );
    if m.params.idempotent {
        ev!(
            log,
            EventKind::Reject,
            "resource".to_string(),
            Some(who),
            "absorbs the duplicate: operation {op} is already applied (unique key on the operation id)"
        );
        return;
    }
    let fenced = token.is_some() && m.params.resource_check.checks();
    if fenced && !admits(m, w.resource.max_token, token) {
        ev!(
            log,
            EventKind::Reject,
            "resource".to_string(),
            Some(who),
            "rejects the duplicate of operation {op}: token {} is stale (highest seen {})",
            token.unwrap_or(0),
            w.resource.max_token.unwrap_or(0)
        );
        return;
    }
    match change(m, w, read) {
        Ok((new, what)) => {
            if fenced {
                raise(w, token);
            }
            apply(w, new);
            w.ghost.duplicated = true;
            ev!(
                log,
                EventKind::Write,
                who,
                Some("resource".to_string()),
                "{what} again: operation {op} takes effect a second time"
            );
        }
        Err(why) => ev!(
            log,
            EventKind::Note,
            who,
            Some("resource".to_string()),
            "{why}"
        ),
    }
}

/// The resource restarts: its data is durable, but a highest token kept
/// in memory (`--token-store memory`) is gone.
pub fn restart(_m: &LockModel, w: &mut World, log: &mut Log) {
    let lost = w.resource.max_token.take();
    ev!(
        log,
        EventKind::Fault,
        "resource".to_string(),
        None,
        "RESTARTS: its data survives, but the highest token it kept in memory ({}) is forgotten",
        lost.map_or("none".to_string(), |t| t.to_string())
    );
}

/// The reconciler's name in traces.
pub const RECONCILER: &str = "reconciler";

/// The damage the ledger shows in `w`, in words; `None` if the resource
/// agrees with it.
pub fn damage(m: &LockModel, w: &World) -> Option<String> {
    let r = &w.resource;
    let mut found = Vec::new();
    if r.value != r.accepted {
        found.push(format!(
            "a lost update (the ledger has {} accepted writes, the resource counts {})",
            r.accepted, r.value
        ));
    }
    if m.params.resource_op.has_stock() && stock_left(m, r.value) < 0 {
        found.push(format!(
            "an oversell ({} units sold from a stock of {})",
            r.value, m.params.stock
        ));
    }
    if w.ghost.duplicated {
        found.push("a duplicate effect (one operation applied twice)".to_string());
    }
    (!found.is_empty()).then(|| found.join(" and "))
}

/// After every step: the step that first damages the resource arms the
/// clock the reconciler's detection is timed by, and the reconciler's next
/// run: its runs before found nothing and changed nothing, and its phase
/// is free, so the next one is due anywhere from now to one period (on its
/// clock) and a step from now.
pub fn note_damage(x: &mut Ctx) {
    let Some(r) = x.w.resource.recon else { return };
    if r.damage.is_some() || r.flagged || damage(x.m, x.w).is_none() {
        return;
    }
    let clk = x.t.reset();
    let next = x.t.reset();
    if let Some(r) = &mut x.w.resource.recon {
        r.damage = Some(clk);
        r.wait = Some(crate::world::Wait {
            kind: crate::world::WaitKind::Reconcile,
            late: false,
            clk: next,
        });
    }
}

/// The reconciler runs: it flags the damage if there is any (its job is
/// then done), or else waits for its next run.
pub fn reconcile(x: &mut Ctx) {
    let Some(mut r) = x.w.resource.recon else {
        return;
    };
    match (r.damage, damage(x.m, x.w)) {
        (Some(d), Some(what)) => {
            let after =
                x.t.reading(d)
                    .map(|v| {
                        format!(
                            ", {} after the damaging write",
                            crate::units::show_rational(v)
                        )
                    })
                    .unwrap_or_default();
            r.flagged = true;
            r.damage = None;
            r.wait = None;
            ev!(
                x.log,
                EventKind::Note,
                RECONCILER.to_string(),
                Some("resource".to_string()),
                "reconciliation flags {what}{after}: the damage is done, reconciliation only detects it"
            );
        }
        // Never offered: the run is armed by the damage. A run that found
        // nothing would wait for the next.
        _ => r.wait = None,
    }
    x.w.resource.recon = Some(r);
}

/// The observer of `detected_within`: is the damage older than the bound?
/// If so, detection is late.
pub fn detection_late(x: &mut Ctx) {
    let Some(mut r) = x.w.resource.recon else {
        return;
    };
    let (Some(d), Some(bound)) = (r.damage, x.m.params.detection_bound()) else {
        return;
    };
    if x.t.ask(d, bound, false) {
        return;
    }
    r.missed = true;
    x.w.resource.recon = Some(r);
    ev!(
        x.log,
        EventKind::Note,
        RECONCILER.to_string(),
        Some("resource".to_string()),
        "has not flagged {} more than {} after the damaging write: detection is late",
        damage(x.m, x.w).unwrap_or_default(),
        crate::units::show(bound)
    );
}
