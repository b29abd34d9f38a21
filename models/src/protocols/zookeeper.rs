//! `zookeeper`: the official lock recipe as Curator's `InterProcessMutex`
//! runs it (docs/semantics.md §5): create an ephemeral sequential node;
//! list the children; the lowest holds; otherwise watch only the node
//! just before yours and look again when it goes. The session's heartbeat
//! keeps the node; when the session expires the ensemble deletes it and
//! fires the watches — but the paused holder is told nothing until it
//! talks to the ensemble again. Optional fencing: the node's czxid (its
//! creation revision) is the token (`--resource-check`).

use super::{CONSENSUS_FAULTS, Protocol, Renewal, Service, coord_client as cc};
use crate::client::{Ctx, ignore};
use crate::faults::FaultKind;
use crate::world::{Cmd, Phase, Reply};

const CREATE: u8 = 0;
const CHILDREN: u8 = 1;
const WATCH: u8 = 2;
const WAIT: u8 = 3;

pub struct Zookeeper;

fn first(x: &Ctx, c: u8) -> (Cmd, Phase) {
    let round = x.w.clients[c as usize].round;
    (Cmd::Create { round }, Phase::Acquire(CREATE))
}

fn look(x: &mut Ctx, c: u8) {
    let rev = cc::my_entry(x, c);
    cc::ask(x, c, Cmd::Order { rev }, Phase::Acquire(CHILDREN));
}

impl Protocol for Zookeeper {
    fn name(&self) -> &'static str {
        "zookeeper"
    }
    fn summary(&self) -> &'static str {
        "ephemeral sequential node, lowest holds, watch the predecessor; the session timeout deletes it"
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
    fn requests_renew_session(&self) -> bool {
        true
    }
    fn service_label(&self) -> &'static str {
        "ZooKeeper ensemble"
    }
    fn start_acquire(&self, x: &mut Ctx, c: u8) {
        cc::begin(x, c, first(x, c));
    }
    fn on_reply(&self, x: &mut Ctx, c: u8, _s: u8, reply: Reply) {
        match (x.phase(c), reply) {
            (Phase::Acquire(cc::OPENING), Reply::Alive(_)) => cc::opened(x, c, first(x, c)),
            (Phase::Acquire(CREATE), Reply::Alive(false)) => cc::session_lost(x, c),
            (Phase::Acquire(CREATE), Reply::Token(rev)) => {
                x.w.clients[c as usize].token = Some(rev);
                look(x, c);
            }
            (Phase::Acquire(CHILDREN), Reply::Place { rev, pred, mine }) => match (mine, pred) {
                // Curator: our node vanished (session expired): start over.
                (false, _) => {
                    x.w.clients[c as usize].token = None;
                    x.retry(c, "its node is gone (session expired)");
                }
                (true, None) => {
                    let token = crate::coord::token_of(x.m, x.w, rev);
                    x.enter_cs(c, Some(token))
                }
                (true, Some(p)) => cc::ask(x, c, Cmd::Watch { rev: p }, Phase::Acquire(WATCH)),
            },
            (Phase::Acquire(WATCH), Reply::Exists(true)) => {
                cc::wait_for_event(x, c, Phase::Acquire(WAIT))
            }
            // The predecessor is already gone (or its watch event overtook the answer).
            (Phase::Acquire(WATCH), Reply::Exists(false) | Reply::Deleted(_)) => look(x, c),
            (Phase::Acquire(WAIT), Reply::Deleted(_)) => look(x, c),
            (Phase::Release(0), _) => x.finish_round(c),
            _ => ignore(x, c, reply),
        }
    }
    fn start_release(&self, x: &mut Ctx, c: u8) {
        cc::release(x, c);
    }
}
