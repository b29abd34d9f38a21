//! Brute-force checks of the clock-zone engine.
//!
//! The oracle never trusts closure: it reads a zone only through its raw
//! entries (`v ∈ Z ⇔ v_i − v_j ≺ D[i][j]` for all i, j), and checks each
//! operation's output against the operation's *definition* applied to its
//! (already checked) input, on every point of a ¼-grid (exhaustive for up to
//! 3 clocks, sampled for 4). Existentials (`∃d ≥ 0`, `∃u`) are decided
//! exactly: for fixed grid coordinates the witness set is an interval cut
//! out by the input's entries.

// Valuations and DBM rows are indexed by the same clock numbers; index loops
// say that more plainly than zipped iterators.
#![allow(clippy::needless_range_loop)]

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use locklab_models::engine::dbm::{Bound, Dbm, NO_BOUND, Slot};
use locklab_models::engine::solve::{self, Diff, Rational};

/// Grid resolution: points are multiples of 1/Q.
const Q: i64 = 4;
/// Largest constant used by random operations.
const MAXC: i64 = 5;
/// Grid range: 0..=RANGE (in units), i.e. max constant + 2.
const RANGE: i64 = MAXC + 2;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// `v − w ≺ b` for grid-scaled values.
fn sat(d: i64, b: Bound) -> bool {
    match b.constant() {
        None => true,
        Some(c) => d < c * Q || (d == c * Q && !b.is_strict()),
    }
}

/// Membership through raw entries only.
fn member(z: &Dbm, v: &[i64]) -> bool {
    let n = z.dim();
    if z.is_empty() {
        return false;
    }
    (0..n).all(|i| (0..n).all(|j| i == j || sat(v[i] - v[j], z.bound(i, j))))
}

/// Membership ignoring every constraint that mentions clock `x`.
fn member_without(z: &Dbm, v: &[i64], x: usize) -> bool {
    let n = z.dim();
    !z.is_empty()
        && (0..n)
            .all(|i| (0..n).all(|j| i == j || i == x || j == x || sat(v[i] - v[j], z.bound(i, j))))
}

/// An interval of scaled reals built from lower and upper bounds; `(value,
/// strict)` pairs. Decides non-emptiness exactly.
struct Iv {
    lo: Option<(i64, bool)>,
    hi: Option<(i64, bool)>,
}

impl Iv {
    fn all() -> Iv {
        Iv { lo: None, hi: None }
    }
    /// `t > a` (strict) or `t ≥ a`.
    fn above(&mut self, a: i64, strict: bool) {
        let tighter = match self.lo {
            None => true,
            Some((b, s)) => a > b || (a == b && strict && !s),
        };
        if tighter {
            self.lo = Some((a, strict));
        }
    }
    /// `t < a` (strict) or `t ≤ a`.
    fn below(&mut self, a: i64, strict: bool) {
        let tighter = match self.hi {
            None => true,
            Some((b, s)) => a < b || (a == b && strict && !s),
        };
        if tighter {
            self.hi = Some((a, strict));
        }
    }
    fn nonempty(&self) -> bool {
        match (self.lo, self.hi) {
            (Some((l, ls)), Some((h, hs))) => l < h || (l == h && !ls && !hs),
            _ => true,
        }
    }
}

/// `∃u ∈ ℝ: v[x := u] ∈ Z`.
fn exists_value(z: &Dbm, v: &[i64], x: usize) -> bool {
    if !member_without(z, v, x) {
        return false;
    }
    let mut iv = Iv::all();
    for j in 0..z.dim() {
        if j == x {
            continue;
        }
        // u − v_j ≺ D[x][j]
        let b = z.bound(x, j);
        if let Some(c) = b.constant() {
            iv.below(v[j] + c * Q, b.is_strict());
        }
        // v_j − u ≺ D[j][x]  ⇔  u ≻ v_j − c
        let b = z.bound(j, x);
        if let Some(c) = b.constant() {
            iv.above(v[j] - c * Q, b.is_strict());
        }
    }
    iv.nonempty()
}

/// `∃d ≥ 0: v + sign·d·1 ∈ Z` (sign −1: up's witness, +1: down's).
fn exists_delay(z: &Dbm, v: &[i64], sign: i64) -> bool {
    let n = z.dim();
    if z.is_empty() {
        return false;
    }
    // Differences between non-reference clocks do not change with d.
    for i in 1..n {
        for j in 1..n {
            if i != j && !sat(v[i] - v[j], z.bound(i, j)) {
                return false;
            }
        }
    }
    let mut iv = Iv::all();
    iv.above(0, false);
    for i in 1..n {
        // (v_i + s·d) ≺ c_up, i.e. s·d ≺ c_up − v_i.
        let up = z.bound(i, 0);
        // −(v_i + s·d) ≺ c_lo, i.e. −s·d ≺ c_lo + v_i.
        let lo = z.bound(0, i);
        if sign > 0 {
            if let Some(c) = up.constant() {
                iv.below(c * Q - v[i], up.is_strict());
            }
            if let Some(c) = lo.constant() {
                iv.above(-c * Q - v[i], lo.is_strict());
            }
        } else {
            if let Some(c) = up.constant() {
                iv.above(v[i] - c * Q, up.is_strict());
            }
            if let Some(c) = lo.constant() {
                iv.below(c * Q + v[i], lo.is_strict());
            }
        }
    }
    iv.nonempty()
}

#[derive(Clone, Debug)]
enum Op {
    Up,
    Down,
    Constrain(usize, usize, Bound),
    Reset(usize),
    Assign(usize, i64),
    Copy(usize, usize),
    Free(usize),
    /// Shift, then re-impose `x ≥ 0` if `clamp`.
    Shift(usize, i64, bool),
    Intersect(Dbm),
}

fn random_bound(r: &mut Rng, i: usize, j: usize) -> Bound {
    // Bounds vs x0 in the natural direction are what guards produce; also
    // generate diagonal and negative constants.
    let c = if i == 0 {
        -r.range(0, MAXC)
    } else if j == 0 {
        r.range(0, MAXC)
    } else {
        r.range(-MAXC, MAXC)
    };
    Bound::new(c, r.coin())
}

fn random_op(r: &mut Rng, n: usize) -> Op {
    let clock = |r: &mut Rng| 1 + r.below((n - 1) as u64) as usize;
    match r.below(12) {
        0 | 1 => Op::Up,
        2 => Op::Down,
        3..=5 => {
            let i = r.below(n as u64) as usize;
            let mut j = r.below(n as u64) as usize;
            if i == j {
                j = (j + 1) % n;
            }
            Op::Constrain(i, j, random_bound(r, i, j))
        }
        6 => Op::Reset(clock(r)),
        7 => Op::Assign(clock(r), r.range(0, 3)),
        8 => Op::Copy(clock(r), r.below(n as u64) as usize),
        9 => Op::Free(clock(r)),
        10 => Op::Shift(clock(r), r.range(-2, 3), r.below(4) != 0),
        _ => {
            let mut o = Dbm::universe(n);
            for _ in 0..r.range(1, 3) {
                let i = r.below(n as u64) as usize;
                let j = (i + 1 + r.below((n - 1) as u64) as usize) % n;
                o.constrain(i, j, random_bound(r, i, j));
            }
            Op::Intersect(o)
        }
    }
}

fn apply(z: &Dbm, op: &Op) -> Dbm {
    let mut z = z.clone();
    match *op {
        Op::Up => z.up(),
        Op::Down => z.down(),
        Op::Constrain(i, j, b) => {
            let ok = z.constrain(i, j, b);
            assert_eq!(ok, !z.is_empty());
        }
        Op::Reset(x) => z.reset(x),
        Op::Assign(x, c) => z.assign(x, c),
        Op::Copy(x, y) => z.copy(x, y),
        Op::Free(x) => z.free(x),
        Op::Shift(x, c, clamp) => {
            z.shift(x, c);
            if clamp {
                z.clock_ge(x, 0);
            }
        }
        Op::Intersect(ref o) => {
            let expect = z.intersects(o);
            let ok = z.intersect(o);
            assert_eq!(ok, !z.is_empty());
            assert_eq!(ok, expect, "intersects disagrees with intersect");
        }
    }
    z
}

/// The definition of `op` applied to the input zone `z`, at point `v`.
fn oracle(z: &Dbm, op: &Op, v: &[i64]) -> bool {
    match *op {
        Op::Up => exists_delay(z, v, -1),
        Op::Down => exists_delay(z, v, 1),
        Op::Constrain(i, j, b) => member(z, v) && sat(v[i] - v[j], b),
        Op::Reset(x) => v[x] == 0 && exists_value(z, v, x),
        Op::Assign(x, c) => v[x] == c * Q && exists_value(z, v, x),
        Op::Copy(x, y) if x == y => member(z, v),
        Op::Copy(x, y) => v[x] == v[y] && exists_value(z, v, x),
        Op::Free(x) => exists_value(z, v, x),
        Op::Shift(x, c, _) => {
            let mut w = v.to_vec();
            w[x] -= c * Q;
            member(z, &w)
        }
        Op::Intersect(ref o) => member(z, v) && member(o, v),
    }
}

/// Visit grid points of dimension `n` (entry 0 is x0 = 0): all of them for
/// `n ≤ 4`, else `samples` random ones.
fn for_grid(n: usize, r: &mut Rng, samples: usize, mut f: impl FnMut(&[i64])) {
    let top = RANGE * Q;
    let mut v = vec![0i64; n];
    if n <= 4 {
        loop {
            f(&v);
            let mut k = 1;
            while k < n {
                if v[k] < top {
                    v[k] += 1;
                    break;
                }
                v[k] = 0;
                k += 1;
            }
            if k == n {
                return;
            }
        }
    } else {
        for _ in 0..samples {
            for x in v.iter_mut().skip(1) {
                // Bias towards small values, where the constants are.
                *x = if r.coin() {
                    r.range(0, 3 * Q)
                } else {
                    r.range(0, top)
                };
            }
            f(&v);
        }
    }
}

fn to_grid(p: &[Rational]) -> Option<Vec<i64>> {
    p.iter()
        .map(|q| {
            let s = q.num() * Q as i128;
            (s % q.den() == 0).then(|| (s / q.den()) as i64)
        })
        .collect()
}

/// Checks every structural invariant of a zone produced by an operation.
fn check_shape(z: &Dbm, ctx: &dyn Fn() -> String) {
    assert!(z.is_canonical(), "not canonical: {}", ctx());
    if z.is_empty() {
        assert_eq!(*z, Dbm::empty(z.dim()), "empty not canonical: {}", ctx());
        assert!(z.pick_point().is_none());
        return;
    }
    // pick_point: in the zone (exactly), x0 = 0, and at each clock's
    // infimum when the lower bound is non-strict, else strictly inside the
    // unit above it.
    let p = z.pick_point().expect("non-empty zone has a point");
    assert!(z.contains(&p), "pick_point {p:?} outside {z:?}: {}", ctx());
    assert_eq!(p[0], Rational::ZERO);
    if let Some(g) = to_grid(&p) {
        assert!(member(z, &g), "pick_point not a raw member: {}", ctx());
    }
    for x in 1..z.dim() {
        let lo = z.lower(x);
        let inf = Rational::integer(-lo.constant().unwrap());
        if lo.is_strict() {
            assert!(p[x] > inf && p[x] < inf + Rational::integer(1), "{}", ctx());
        } else {
            assert_eq!(p[x], inf, "pick_point not least: {}", ctx());
        }
    }
}

/// Every operation against its definition, along random operation
/// sequences starting from `zero` or `universe`.
fn run_sequences(n: usize, seqs: usize, len: usize, samples: usize, seed: u64) {
    let mut r = Rng(seed);
    let mut nonempty_outputs = 0usize;
    for s in 0..seqs {
        let mut z = if r.coin() {
            Dbm::zero(n)
        } else {
            Dbm::universe(n)
        };
        let mut history: Vec<Op> = Vec::new();
        for _ in 0..len {
            let op = random_op(&mut r, n);
            let out = apply(&z, &op);
            history.push(op.clone());
            let ctx = || format!("seq {s}, ops {history:?}, in {z:?}, out {out:?}");
            check_shape(&out, &ctx);
            // Inclusion (pointwise on canonical forms) agrees with what the
            // operation must do to the set (growing ones only for x ≥ 0:
            // `free` and `down` impose it).
            let nonneg = (1..n).all(|x| z.lower(x) <= Bound::LE_ZERO);
            match op {
                Op::Up => assert!(out.includes(&z), "{}", ctx()),
                Op::Down | Op::Free(_) if nonneg => assert!(out.includes(&z), "{}", ctx()),
                Op::Constrain(..) | Op::Intersect(_) => assert!(z.includes(&out), "{}", ctx()),
                _ => {}
            }
            let mut hits = 0usize;
            for_grid(n, &mut r, samples, |v| {
                let want = oracle(&z, &op, v);
                let got = member(&out, v);
                assert_eq!(got, want, "point {v:?}: {}", ctx());
                hits += got as usize;
            });
            if hits > 0 {
                assert!(!out.is_empty());
                nonempty_outputs += 1;
            }
            if out.is_empty() {
                break;
            }
            z = out;
        }
    }
    // The generator must exercise non-trivial zones, not just ∅.
    assert!(nonempty_outputs > seqs, "too few non-empty zones");
}

#[test]
fn operations_match_definitions_two_clocks() {
    run_sequences(3, 400, 10, 0, 0x9E37_79B9_7F4A_7C15);
}

#[test]
fn operations_match_definitions_three_clocks() {
    run_sequences(4, 120, 8, 0, 0xD1B5_4A32_D192_ED03);
}

#[test]
fn operations_match_definitions_four_clocks_sampled() {
    run_sequences(5, 200, 10, 3000, 0xABCD_EF01_2345_6789);
}

/// A random non-empty-ish zone from a random operation sequence.
fn random_zone(r: &mut Rng, n: usize, len: usize) -> Dbm {
    let mut z = Dbm::zero(n);
    for _ in 0..len {
        let op = random_op(r, n);
        let out = apply(&z, &op);
        // Keep clocks non-negative (an unclamped negative shift can break
        // that; those zones are covered by the operation tests).
        if !out.is_empty() && (1..n).all(|x| out.lower(x) <= Bound::LE_ZERO) {
            z = out;
        }
    }
    z
}

fn hash_of(z: &Dbm) -> u64 {
    let mut h = DefaultHasher::new();
    z.hash(&mut h);
    h.finish()
}

#[test]
fn equal_zones_built_differently_are_equal_and_hash_equal() {
    let mut r = Rng(42);
    for _ in 0..500 {
        let n = r.range(2, 6) as usize;
        let z = random_zone(&mut r, n, 8);
        // Rebuild from its entries in a random order, starting from the
        // universe: the same zone, so the same canonical matrix.
        let mut entries: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|&(i, j)| i != j)
            .collect();
        for k in (1..entries.len()).rev() {
            entries.swap(k, r.below(k as u64 + 1) as usize);
        }
        let mut w = Dbm::universe(n);
        for &(i, j) in &entries {
            let b = z.bound(i, j);
            if !b.is_inf() {
                w.constrain(i, j, b);
            }
        }
        assert_eq!(w, z);
        assert_eq!(hash_of(&w), hash_of(&z));
        // Adding an implied constraint changes nothing.
        let mut w2 = z.clone();
        if !z.is_empty() {
            w2.constrain(1, 0, z.upper(1) + Bound::le(1));
            assert_eq!(w2, z);
        }
    }
    // Same zone, different routes: x ∈ [1, 3] via up-then-clip and via
    // assign-then-widen.
    let mut a = Dbm::zero(2);
    a.up();
    a.clock_ge(1, 1);
    a.clock_le(1, 3);
    let mut b = Dbm::universe(2);
    b.assign(1, 2);
    b.free(1);
    b.clock_le(1, 3);
    b.clock_ge(1, 1);
    assert_eq!(a, b);
    assert_eq!(hash_of(&a), hash_of(&b));
}

#[test]
fn empty_zones_are_canonical() {
    let mut seen = HashSet::new();
    let mut a = Dbm::zero(3);
    assert!(!a.clock_gt(1, 0));
    let mut b = Dbm::universe(3);
    b.clock_le(1, 2);
    assert!(!b.clock_gt(1, 2) || !b.clock_ge(1, 3));
    let mut c = Dbm::universe(3);
    c.constrain(1, 2, Bound::lt(0));
    assert!(!c.constrain(2, 1, Bound::le(0)));
    let mut d = Dbm::universe(3);
    assert!(!d.intersect(&a));
    for z in [&a, &b, &c, &d] {
        assert!(z.is_empty());
        assert_eq!(*z, Dbm::empty(3));
        seen.insert(hash_of(z));
        // Operations leave ∅ canonical.
        let mut w = (*z).clone();
        w.up();
        w.reset(1);
        w.free(2);
        w.shift(1, 3);
        w.down();
        w.extrapolate_max(&[0, 1, 1]);
        assert_eq!(w, Dbm::empty(3));
        assert!(w.includes(&Dbm::empty(3)) && Dbm::zero(3).includes(&w));
        assert!(!w.includes(&Dbm::zero(3)));
        assert_eq!(w.remap(&[Some(0), Some(2)]), Dbm::empty(2));
    }
    assert_eq!(seen.len(), 1);
    assert_ne!(Dbm::empty(3), Dbm::empty(2));
}

#[test]
fn strictness_is_exact() {
    // x < 1 and x ≤ 1 are different zones.
    let mut lt = Dbm::universe(2);
    lt.clock_lt(1, 1);
    let mut le = Dbm::universe(2);
    le.clock_le(1, 1);
    assert_ne!(lt, le);
    assert!(le.includes(&lt) && !lt.includes(&le));
    // up keeps strictness of the lower bound.
    let mut z = Dbm::zero(3);
    z.up();
    z.clock_gt(1, 1);
    z.clock_lt(1, 2);
    z.up();
    assert_eq!(z.lower(1), Bound::lt(-1));
    assert_eq!(z.bound(0, 2), Bound::lt(-1));
    // Strict sums: x > 1 strict and y − x ≥ 0 gives y > 1 strict.
    let mut w = Dbm::universe(3);
    w.clock_gt(1, 1);
    w.constrain(1, 2, Bound::le(0));
    assert_eq!(w.lower(2), Bound::lt(-1));
    // x − y < 0 ∧ y − x ≤ 0: empty; both ≤: x = y.
    let mut e = Dbm::universe(3);
    e.constrain(1, 2, Bound::lt(0));
    assert!(!e.constrain(2, 1, Bound::le(0)));
    let mut f = Dbm::universe(3);
    f.constrain(1, 2, Bound::le(0));
    assert!(f.constrain(2, 1, Bound::le(0)));
    // A strict chain over three clocks inside one open unit interval:
    // 0 < x3 < x2 < x1 < 1. Non-empty in dense time, no point on a ½ grid.
    let mut c = Dbm::universe(4);
    assert!(c.clock_gt(3, 0));
    assert!(c.constrain(3, 2, Bound::lt(0)));
    assert!(c.constrain(2, 1, Bound::lt(0)));
    assert!(c.clock_lt(1, 1));
    let p = c.pick_point().unwrap();
    assert!(c.contains(&p));
    assert_eq!(
        p,
        vec![
            Rational::ZERO,
            Rational::new(3, 5),
            Rational::new(2, 5),
            Rational::new(1, 5)
        ]
    );
    let halves = [0, 1, 2].map(|k| Rational::new(k, 2));
    for a in halves {
        for b in halves {
            for d in halves {
                assert!(!c.contains(&[Rational::ZERO, a, b, d]));
            }
        }
    }
    // The non-strict chain does contain a ½-grid point (all equal to 0).
    let mut w = Dbm::universe(4);
    w.constrain(3, 2, Bound::le(0));
    w.constrain(2, 1, Bound::le(0));
    w.clock_le(1, 1);
    assert!(w.contains(&[Rational::ZERO; 4]));
}

/// Strict guards need arbitrarily fine time: reachable in dense time, not on a ½
/// grid (the folk "double the constants" digitization misses it).
/// Edges: `l0 → l1` resets x; `l1 → l2` has guard `0 < x < 1` and resets y;
/// `l2 → bad` has guard `y > 0 ∧ x < 1`. Also the looped version, which
/// needs k + 2 distinct instants inside one open unit interval.
#[test]
fn dense_time_chain_is_reachable() {
    let (x, y) = (1, 2);
    let mut z = Dbm::zero(3);
    z.up();
    z.reset(x);
    z.up();
    assert!(z.clock_gt(x, 0) && z.clock_lt(x, 1));
    z.reset(y);
    z.up();
    assert!(z.clock_gt(y, 0) && z.clock_lt(x, 1));
    let p = z.pick_point().unwrap();
    assert!(z.contains(&p));
    assert!(p[x] > p[y] && p[y] > Rational::ZERO && p[x] < Rational::integer(1));
    // The loop `y > 0 ∧ x < 1, y := 0` taken 5 more times.
    for _ in 0..5 {
        z.reset(y);
        z.up();
        assert!(z.clock_gt(y, 0) && z.clock_lt(x, 1));
        let p = z.pick_point().unwrap();
        assert!(z.contains(&p));
    }
    // The same path as event times t0 (reset x), t1 (reset y), t2 .. t7
    // (loop steps), t8 (bad), ordered, with the guards as differences.
    let k = 8;
    let mut cs: Vec<Diff> = (0..k).map(|i| Diff::le(i, i + 1, 0)).collect();
    cs.push(Diff::lt(0, 1, 0)); // x > 0 at t1
    cs.push(Diff::lt(1, 0, 1)); // x < 1 at t1
    for i in 2..=k {
        cs.push(Diff::lt(i - 1, i, 0)); // y > 0 at t_i (y reset at t_{i−1})
        cs.push(Diff::lt(i, 0, 1)); // x < 1 at t_i
    }
    let t = solve::earliest(k + 1, &cs).unwrap();
    assert_eq!(solve::first_violation(&t, &cs), None);
    // 9 strictly increasing instants in [0, 1): no fixed coarse grid fits.
    assert!(t[k] < Rational::integer(1));
    assert!(t.iter().any(|q| q.den() > 2));
    // On the ½ grid (scaled by 2: strict < c becomes ≤ 2c − 1) it is
    // infeasible, which the solver sees as well.
    let halves: Vec<Diff> = cs
        .iter()
        .map(|d| Diff::le(d.i, d.j, 2 * d.c - d.strict as i64))
        .collect();
    let h = solve::earliest_ticks(k + 1, &halves);
    // Integer solutions of the ½-grid system are the grid runs; the ε
    // solution has integer ticks only if one exists. Here none does.
    assert!(h.is_none());
}

#[test]
fn extrapolation_merges_beyond_max_constants() {
    // x = 5 and x = 7 are the same beyond M = 3 (both become x > 3).
    let mut a = Dbm::zero(3);
    a.assign(1, 5);
    let mut b = Dbm::zero(3);
    b.assign(1, 7);
    a.extrapolate_max(&[0, 3, 3]);
    b.extrapolate_max(&[0, 3, 3]);
    assert_eq!(a, b);
    assert_eq!(a.lower(1), Bound::lt(-3));
    assert!(a.upper(1).is_inf());
    // An unbounded age after repeated delays: successive zones of
    // `up; x ≥ i` converge once i > M.
    let mut seen = HashSet::new();
    for i in 0..20 {
        let mut z = Dbm::zero(3);
        z.up();
        z.clock_ge(1, i);
        z.reset(2);
        z.extrapolate_lu(&[0, 4, 2], &[0, 4, 2]);
        seen.insert(z);
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
    // A clock never compared (NO_BOUND) is freed.
    let mut c = Dbm::zero(3);
    c.up();
    c.clock_le(2, 3);
    c.extrapolate_max(&[0, NO_BOUND, 10]);
    let mut d = Dbm::zero(3);
    d.up();
    d.clock_le(2, 3);
    d.free(1);
    assert_eq!(c, d);
    // LU: a clock with no upper-bound guard (U = none) loses the zone's
    // lower bounds (only `x ≤ c` guards could tell them apart) but keeps
    // upper bounds up to L (a guard `x ≥ c`, c ≤ L, still sees them).
    let mut e = Dbm::zero(2);
    e.up();
    e.clock_ge(1, 2);
    e.clock_le(1, 3);
    e.extrapolate_lu(&[0, 5], &[0, NO_BOUND]);
    assert_eq!(e.lower(1), Bound::LE_ZERO);
    assert_eq!(e.upper(1), Bound::le(3));
    // ... and with L below the upper bound, that goes too.
    e.extrapolate_lu(&[0, 2], &[0, NO_BOUND]);
    assert_eq!(e, Dbm::universe(2));
    // Extra⁺ rule "lower bound of x_i above L_i ⇒ row i is ∞": x1 − x2 = 1
    // with x1 ≥ 6, x2 ≥ 5; L = 3 < 5 drops both diagonals, U = 10 keeps
    // the lower bounds (plain Extra_LU would keep the diagonals).
    let mut g = Dbm::zero(3);
    g.up();
    g.clock_ge(1, 1);
    g.clock_le(1, 1);
    g.reset(2);
    g.up();
    g.clock_ge(1, 6);
    assert_eq!(g.bound(1, 2), Bound::le(1));
    g.extrapolate_lu(&[0, 3, 3], &[0, 10, 10]);
    let mut want = Dbm::universe(3);
    want.clock_ge(1, 6);
    want.clock_ge(2, 5);
    assert_eq!(g, want);
    // Extra⁺_M on the same zone with M = 3: everything above 3.
    let mut h = Dbm::zero(3);
    h.up();
    h.clock_ge(1, 1);
    h.clock_le(1, 1);
    h.reset(2);
    h.up();
    h.clock_ge(1, 6);
    h.extrapolate_max(&[0, 3, 3]);
    let mut want = Dbm::universe(3);
    want.clock_gt(1, 3);
    want.clock_gt(2, 3);
    assert_eq!(h, want);
}

#[test]
fn extrapolation_is_sound_on_random_zones() {
    let mut r = Rng(7);
    let mut changed = 0;
    for _ in 0..1500 {
        let n = r.range(2, 4) as usize;
        let z = random_zone(&mut r, n, 8);
        if z.is_empty() || (1..n).any(|x| z.lower(x) > Bound::LE_ZERO) {
            continue;
        }
        let l: Vec<i64> = (0..n).map(|_| r.range(0, 4)).collect();
        let u: Vec<i64> = (0..n).map(|_| r.range(0, 4)).collect();
        let m: Vec<i64> = (0..n).map(|x| l[x].max(u[x])).collect();
        let mut em = z.clone();
        em.extrapolate_max(&m);
        let mut elu = z.clone();
        elu.extrapolate_lu(&l, &u);
        for e in [&em, &elu] {
            assert!(e.is_canonical());
            assert!(e.includes(&z), "extrapolation dropped valuations");
            // Idempotent for fixed bounds.
        }
        let mut em2 = em.clone();
        em2.extrapolate_max(&m);
        assert_eq!(em2, em);
        // Extra⁺_M ⊆ Extra⁺_LU when M = max(L, U) (Behrmann et al. 2006).
        assert!(elu.includes(&em));
        changed += (em != z) as usize;
        // Below the bounds nothing changes: a valuation with every clock ≤
        // min(L, U) is LU-equivalent only to itself, so it is in the
        // extrapolation iff it is in the zone.
        for_grid(n, &mut r, 0, |v| {
            if (1..n).all(|x| v[x] <= l[x].min(u[x]) * Q) {
                assert_eq!(member(&elu, v), member(&z, v), "{z:?} {l:?} {u:?} {v:?}");
            }
            if (1..n).all(|x| v[x] <= m[x] * Q) {
                assert_eq!(member(&em, v), member(&z, v), "{z:?} {m:?} {v:?}");
            }
            if member(&z, v) {
                assert!(member(&elu, v) && member(&em, v));
            }
        });
    }
    assert!(
        changed > 100,
        "extrapolation rarely did anything: {changed}"
    );
}

fn permutation(r: &mut Rng, n: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for k in (2..n).rev() {
        p.swap(k, 1 + r.below(k as u64) as usize);
    }
    p
}

#[test]
fn remap_permutation_projection_and_fresh_clocks() {
    let mut r = Rng(99);
    for _ in 0..400 {
        let n = r.range(2, 5) as usize;
        let z = random_zone(&mut r, n, 8);
        // Permutation: membership follows the renaming; round trip is the
        // identity.
        let p = permutation(&mut r, n);
        let map: Vec<Option<usize>> = p.iter().map(|&i| Some(i)).collect();
        let zp = z.remap(&map);
        assert!(zp.is_canonical());
        let mut inv = vec![0; n];
        for (k, &i) in p.iter().enumerate() {
            inv[i] = k;
        }
        let back: Vec<Option<usize>> = inv.iter().map(|&k| Some(k)).collect();
        assert_eq!(zp.remap(&back), z);
        for_grid(n, &mut r, 500, |v| {
            let w: Vec<i64> = p.iter().map(|&i| v[i]).collect();
            assert_eq!(member(&zp, &w), member(&z, v));
        });
        if n < 3 {
            continue;
        }
        // Projection: dropping x equals freeing x then dropping it, and is
        // exactly ∃x (checked by the oracle, not by the closure argument).
        let x = 1 + r.below((n - 1) as u64) as usize;
        let keep: Vec<Option<usize>> = (0..n).filter(|&i| i != x).map(Some).collect();
        let proj = z.remap(&keep);
        assert!(proj.is_canonical());
        let mut freed = z.clone();
        freed.free(x);
        assert_eq!(freed.remap(&keep), proj);
        for_grid(n, &mut r, 500, |v| {
            let w: Vec<i64> = (0..n).filter(|&i| i != x).map(|i| v[i]).collect();
            // v ranges over full-dimension points; v[x] is irrelevant to ∃.
            assert_eq!(member(&proj, &w), exists_value(&z, v, x));
        });
        // Fresh clocks: Free is "free", Zero is "reset"; a duplicate is a
        // copy.
        let mut grow: Vec<Option<usize>> = (0..n).map(Some).collect();
        grow.push(None);
        let gf = z.remap(&grow);
        let mut slots: Vec<Slot> = (0..n).map(Slot::Old).collect();
        slots.push(Slot::Zero);
        let gz = z.remap_slots(&slots);
        let mut gz2 = gf.clone();
        gz2.reset(n);
        assert_eq!(gz, gz2);
        // ... and the other way round, against the independent `free`.
        let mut gf2 = gz.clone();
        gf2.free(n);
        assert_eq!(gf, gf2);
        assert_eq!(gf.lower(n), Bound::LE_ZERO);
        assert!(gf.is_canonical() && gz.is_canonical());
        assert_eq!(gf.remap(&(0..n).map(Some).collect::<Vec<_>>()), z);
        let mut dup: Vec<Option<usize>> = (0..n).map(Some).collect();
        dup.push(Some(x));
        let mut gc = gf.clone();
        gc.copy(n, x);
        assert_eq!(z.remap(&dup), gc);
        // Mixed: two fresh clocks of both kinds, after a permutation.
        let mut mixed: Vec<Slot> = p.iter().map(|&i| Slot::Old(i)).collect();
        mixed.push(Slot::Free);
        mixed.push(Slot::Zero);
        let zm = z.remap_slots(&mixed);
        assert!(zm.is_canonical());
        let mut zm2 = zp.remap(&(0..n).map(Some).chain([None, None]).collect::<Vec<_>>());
        zm2.reset(n + 1);
        assert_eq!(zm, zm2);
    }
}

#[test]
fn solver_agrees_with_zones_on_random_systems() {
    let mut r = Rng(2024);
    let (mut feasible, mut infeasible) = (0, 0);
    for _ in 0..3000 {
        let n = r.range(2, 5) as usize;
        let m = r.range(1, 7) as usize;
        let cs: Vec<Diff> = (0..m)
            .map(|_| {
                let i = r.below(n as u64) as usize;
                let j = (i + 1 + r.below((n - 1) as u64) as usize) % n;
                let c = r.range(-4, 4);
                if r.coin() {
                    Diff::lt(i, j, c)
                } else {
                    Diff::le(i, j, c)
                }
            })
            .collect();
        // The same system as a zone over clocks t_1..t_{n−1} (t_0 = x0).
        let mut z = Dbm::universe(n);
        for d in &cs {
            z.constrain(d.i, d.j, Bound::new(d.c, d.strict));
        }
        let sol = solve::earliest(n, &cs);
        assert_eq!(sol.is_some(), !z.is_empty(), "{cs:?} {z:?}");
        match sol {
            None => infeasible += 1,
            Some(t) => {
                feasible += 1;
                assert_eq!(solve::first_violation(&t, &cs), None, "{cs:?} {t:?}");
                assert_eq!(t[0], Rational::ZERO);
                // Earliest: each time at its infimum over all solutions
                // when that is attained, else within one unit above it.
                for x in 1..n {
                    let lo = z.lower(x);
                    let inf = Rational::integer(-lo.constant().unwrap());
                    if lo.is_strict() {
                        assert!(t[x] > inf && t[x] < inf + Rational::integer(1));
                    } else {
                        assert_eq!(t[x], inf, "{cs:?} {t:?}");
                    }
                }
            }
        }
    }
    assert!(
        feasible > 500 && infeasible > 500,
        "{feasible} {infeasible}"
    );
}

#[test]
fn solver_earliest_times_on_chains() {
    // Message latency in [2, 5], processing strictly after arrival, then a
    // deadline 10 after the send: t1 ∈ [2,5] after t0, t2 > t1, t2 ≤ 10.
    let cs = [
        Diff::le(0, 1, -2),
        Diff::le(1, 0, 5),
        Diff::lt(1, 2, 0),
        Diff::le(2, 0, 10),
    ];
    let t = solve::earliest(3, &cs).unwrap();
    assert_eq!(t[1], Rational::integer(2));
    assert!(t[2] > Rational::integer(2) && t[2] < Rational::integer(3));
    let (scale, ticks) = solve::earliest_ticks(3, &cs).unwrap();
    assert_eq!((scale, ticks), (4, vec![0, 8, 9]));
    // Tighten the deadline to < 2 after t1's earliest: infeasible.
    let mut tight = cs.to_vec();
    tight.push(Diff::le(2, 0, 2));
    assert!(solve::earliest(3, &tight).is_none());
    // Strict zero-weight cycle through three times.
    let cyc = [Diff::le(1, 2, 0), Diff::le(2, 3, 0), Diff::lt(3, 1, 0)];
    assert!(solve::earliest(4, &cyc).is_none());
    // Large constants (≈ 1e15 time units) stay exact.
    let big = 1_000_000_000_000_000;
    let cs = [Diff::lt(0, 1, -big), Diff::le(1, 0, big + 1)];
    let t = solve::earliest(2, &cs).unwrap();
    assert!(t[1] > Rational::integer(big) && t[1] < Rational::integer(big + 1));
    let mut z = Dbm::universe(2);
    assert!(z.clock_gt(1, big) && z.clock_le(1, big + 1));
    z.up();
    z.reset(1);
    z.up();
    assert!(z.clock_ge(1, big));
    assert_eq!(z.lower(1), Bound::le(-big));
}

/// Costs at n = 8, 16, 24 (clocks including x0). Not a test; run with
/// `cargo test --release -p locklab-models --test dbm -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_operations() {
    use std::hint::black_box;
    use std::time::Instant;
    let mut r = Rng(5);
    for n in [8usize, 16, 24] {
        // A zone with many finite entries: staggered resets and delays.
        let mut z = Dbm::zero(n);
        for x in 1..n {
            z.up();
            z.clock_le(1, 100);
            z.reset(x);
        }
        assert!(!z.is_empty() && !z.upper(1).is_inf());
        let iters = 200_000;
        let time = |name: &str, f: &mut dyn FnMut()| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            let ns = t.elapsed().as_nanos() as f64 / iters as f64;
            println!("n = {n:2}  {name:<26} {ns:8.1} ns");
        };
        time("clone (baseline)", &mut || {
            black_box(z.clone());
        });
        let mut k = 0i64;
        time("clone + constrain (tight)", &mut || {
            let mut w = z.clone();
            k = (k + 1) % 50;
            w.constrain(2, 0, Bound::lt(50 + k));
            black_box(w);
        });
        let mut zz = z.clone();
        time("constrain (implied)", &mut || {
            black_box(black_box(&mut zz).clock_le(1, 1000));
        });
        let mut w = z.clone();
        time("up", &mut || {
            w.up();
            black_box(&w);
        });
        time("reset", &mut || {
            w.reset(3);
            black_box(&w);
        });
        let p = permutation(&mut r, n);
        let map: Vec<Option<usize>> = p.iter().map(|&i| Some(i)).collect();
        time("remap (permutation)", &mut || {
            black_box(z.remap(&map));
        });
        let m: Vec<i64> = vec![50; n];
        time("clone + extrapolate_max", &mut || {
            let mut w = z.clone();
            w.extrapolate_max(&m);
            black_box(w);
        });
        time("includes", &mut || {
            black_box(z.includes(&w));
        });
        time("hash", &mut || {
            black_box(hash_of(&z));
        });
    }
}
