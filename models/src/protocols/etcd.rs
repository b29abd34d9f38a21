//! `etcd`: `concurrency.Mutex` on a lease (docs/semantics.md §6): one
//! transaction puts the client's key if it has none
//! (`CreateRevision(myKey) == 0`) and reads the owner; the key with the
//! lowest create revision holds; otherwise wait for the keys with lower
//! revisions to be deleted (watching the one just before), then — since
//! v3.5 — check that the client's own key still exists. The lease is kept
//! alive every TTL/3; when it expires the key is deleted. The create
//! revision is the fencing token (`--resource-check`).
//!
//! `--no-recheck` is etcd 3.4: after waiting, `Lock` returned without
//! re-checking the client's own key, even if its lease had expired and the
//! key was gone (etcd issue #11456, found by Jepsen).

use super::{CONSENSUS_FAULTS, Protocol, Renewal, Service, coord_client as cc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::{Cmd, Phase, Reply};

const TXN: u8 = 0;
const WATCH: u8 = 1;
const WAIT: u8 = 2;
const CHECK: u8 = 3;

pub struct Etcd;

fn first(x: &Ctx, c: u8) -> (Cmd, Phase) {
    let round = x.w.clients[c as usize].round;
    (Cmd::Txn { round }, Phase::Acquire(TXN))
}

fn recheck(x: &mut Ctx, c: u8) {
    let rev = cc::my_entry(x, c);
    cc::ask(x, c, Cmd::Order { rev }, Phase::Acquire(CHECK));
}

/// Where the client's key stands after the transaction or a wait.
fn decide(x: &mut Ctx, c: u8, rev: u16, pred: Option<u16>, mine: bool) {
    match pred {
        Some(p) => cc::ask(x, c, Cmd::Watch { rev: p }, Phase::Acquire(WATCH)),
        None if mine || x.m.params.no_recheck => x.enter_cs(c, Some(rev)),
        None => {
            x.w.clients[c as usize].token = None;
            x.retry(c, "ErrSessionExpired: its key is gone");
        }
    }
}

impl Protocol for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }
    fn summary(&self) -> &'static str {
        "lease + keepalive, txn on create_revision == 0, wait for lower revisions; revision as token"
    }
    fn service(&self) -> Service {
        Service::Consensus
    }
    fn faults(&self) -> &'static [FaultKind] {
        CONSENSUS_FAULTS
    }
    fn issues_tokens(&self) -> bool {
        true
    }
    fn renewal(&self) -> Renewal {
        Renewal::Heartbeat
    }
    fn service_label(&self) -> &'static str {
        "etcd cluster"
    }
    fn watches_survive_session(&self) -> bool {
        true
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        cc::begin(x, c, first(x, c));
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        match (x.phase(c), reply) {
            (Phase::Acquire(cc::OPENING), Reply::Alive(_)) => cc::opened(x, c, first(x, c)),
            (Phase::Acquire(TXN), Reply::Alive(false)) => cc::session_lost(x, c),
            (Phase::Acquire(TXN), Reply::Place { rev, pred, mine }) => {
                x.w.clients[c as usize].token = Some(rev);
                decide(x, c, rev, pred, mine);
            }
            (Phase::Acquire(CHECK), Reply::Place { rev, pred, mine }) => {
                decide(x, c, rev, pred, mine)
            }
            (Phase::Acquire(WATCH), Reply::Exists(true)) => {
                cc::wait_for_event(x, c, Phase::Acquire(WAIT))
            }
            (Phase::Acquire(WATCH), Reply::Exists(false) | Reply::Deleted(_)) => recheck(x, c),
            (Phase::Acquire(WAIT), Reply::Deleted(_)) => recheck(x, c),
            (Phase::Release(0), _) => x.finish_round(c),
            _ => ignore(x, c, reply),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        cc::release(x, c);
    }
}
