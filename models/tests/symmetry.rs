//! Symmetry reduction by canonical labelling (`canon.rs`): every renaming
//! of a state has the same representative, and the reduced search keeps
//! every verdict and shortest length, with more clients than the old
//! every-permutation scheme allowed.

mod common;

use common::*;
use locklab_models::FaultKind::*;
use locklab_models::Invariant::*;
use locklab_models::canon::{Canon, client_signature};
use locklab_models::engine::zone::ZState;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Every order of `0..n`.
fn all_orders(n: usize) -> Vec<Vec<u8>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in all_orders(n - 1) {
        for at in 0..n {
            let mut p = rest.clone();
            p.insert(at, (n - 1) as u8);
            out.push(p);
        }
    }
    out
}

/// States met on seeded random walks from the initial state.
fn walk_states(m: &locklab_models::LockModel, walks: usize, len: usize, seed: u64) -> Vec<ZState> {
    let mut r = Rng(seed);
    let mut out = Vec::new();
    let mut succs = Vec::new();
    for _ in 0..walks {
        let mut s = m.zinit();
        for _ in 0..len {
            m.successors(&s, &mut succs);
            if succs.is_empty() {
                break;
            }
            let k = r.below(succs.len());
            s = succs.swap_remove(k).next;
            succs.clear();
            out.push(s.clone());
        }
    }
    out
}

#[test]
fn every_renaming_of_a_state_has_the_same_representative() {
    let cases = [
        model_with("redlock", &[Pause, Loss], |p| {
            p.clients = 3;
            p.instances = 3;
        }),
        model_with("lua-release", &[Pause, Delay], |p| p.clients = 3),
        model_with("zookeeper", &[Pause], |p| p.clients = 3),
        model_with("fencing", &[Pause], |p| p.clients = 4),
        model_with("watchdog", &[Pause, Slow], |p| p.clients = 3),
    ];
    let mut checked = 0;
    let mut twins = 0;
    for m in &cases {
        let canon = Canon::new(m, true);
        let n = m.params.clients as usize;
        let orders = all_orders(n);
        for s in walk_states(m, 30, 25, 0x9E37_79B9 ^ n as u64) {
            let (fp, rep) = canon.representative(&s);
            let sigs = |st: &ZState| {
                let mut v: Vec<u64> = (0..n as u8)
                    .map(|c| client_signature(&st.world, c))
                    .collect();
                v.sort_unstable();
                v
            };
            let mine = sigs(&s);
            twins += mine.windows(2).any(|w| w[0] == w[1]) as usize;
            for p in &orders {
                let renamed = canon.renamed(&s, p);
                assert_eq!(sigs(&renamed), mine, "{}: signatures moved", m.proto.name());
                let (fp2, rep2) = canon.representative(&renamed);
                assert_eq!(fp2, fp, "{}: {:?} under {p:?}", m.proto.name(), s.world);
                assert_eq!(rep2.zone, rep.zone, "{}: zone layout", m.proto.name());
                checked += 1;
            }
        }
    }
    assert!(checked > 3000, "only {checked} renamings checked");
    assert!(twins > 20, "ties among clients barely exercised: {twins}");
}

#[test]
fn symmetry_with_three_clients_keeps_every_verdict_and_length() {
    for (p, faults) in [
        ("naive-del", vec![Pause]),
        ("get-del", vec![Slow]),
        ("lua-release", vec![Pause]),
        ("watchdog", vec![Pause]),
    ] {
        let m = model_with(p, &faults, |q| q.clients = 3);
        let (with, without) = with_and_without_symmetry(&m);
        assert_eq!(lengths(&with), lengths(&without), "{p} {faults:?}");
        assert!(with.exhaustive() && without.exhaustive(), "{p}");
        assert!(
            with.states * 2 < without.states,
            "{p}: symmetry should at least halve 3 clients' states: {} vs {}",
            with.states,
            without.states
        );
    }
    // Five clients, past the old four-client limit (every one of 120
    // renamings was tried up to four; above, none): still reduced, and
    // exhaustive in a few thousand zones.
    let m = model_with("lua-release", &[], |q| q.clients = 5);
    let with = check(&m, &[MutualExclusion, Ownership]);
    assert!(with.exhaustive() && with.violations.is_empty());
    assert!(with.states < 50_000, "{} zones", with.states);
}
