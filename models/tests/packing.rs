//! The packed states the search keeps between levels (`engine::packed`,
//! `world::pack`) are the states themselves: packing and unpacking gives
//! back every state the model reaches, for every protocol and fault kind,
//! and equal states pack to equal bytes.

mod common;
use common::*;
use locklab_models::engine::packed::Level;
use locklab_models::engine::zone::ZState;
use locklab_models::pack::{from_bytes, to_bytes};
use locklab_models::world::World;
use std::collections::{HashSet, VecDeque};

/// The first `limit` states of `m`'s zone graph, breadth first.
fn reachable(m: &locklab_models::LockModel, limit: usize) -> Vec<ZState> {
    let init = m.zinit();
    let mut seen: HashSet<ZState> = HashSet::from([init.clone()]);
    let mut queue = VecDeque::from([init]);
    let mut out = Vec::new();
    let mut succs = Vec::new();
    while let Some(s) = queue.pop_front() {
        if out.len() >= limit {
            break;
        }
        m.successors(&s, &mut succs);
        for succ in succs.drain(..) {
            if seen.insert(succ.next.clone()) {
                queue.push_back(succ.next);
            }
        }
        out.push(s);
    }
    out
}

#[test]
fn every_state_reached_packs_and_unpacks_to_itself() {
    let mut states = 0;
    let mut with_messages = 0;
    // Every fault kind each protocol can suffer.
    for (p, m) in every_protocol_with_its_faults(2) {
        let reached = reachable(&m, 3000);
        assert!(reached.len() >= 100, "{p}: only {} states", reached.len());
        let mut bytes: HashSet<Vec<u8>> = HashSet::new();
        let mut worlds: HashSet<&World> = HashSet::new();
        for s in &reached {
            let b = to_bytes(&s.world);
            assert_eq!(from_bytes::<World>(&b), s.world, "{p}");
            assert_eq!(to_bytes(&s.world.clone()), b, "{p}: packing is a function");
            assert_eq!(
                Level::one(0, s).state(0, &mut Default::default()),
                *s,
                "{p}"
            );
            bytes.insert(b);
            worlds.insert(&s.world);
            with_messages += !s.world.net.is_empty() as usize;
        }
        // Distinct worlds, distinct bytes.
        assert_eq!(bytes.len(), worlds.len(), "{p}");
        states += reached.len();
    }
    assert!(
        states > 10_000 && with_messages > 1_000,
        "{states} {with_messages}"
    );
}
