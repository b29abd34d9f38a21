//! Difference-bound matrices (DBMs): zones over dense-time clocks.
//!
//! A zone over clocks `x1..x_{n-1}` plus the reference clock `x0 ≡ 0` is a
//! conjunction of constraints `x_i − x_j ≺ c` (`≺ ∈ {<, ≤}`), stored as an
//! `n × n` matrix of bounds `D[i][j]` (Dill 1989; Bengtsson & Yi, *Timed
//! automata: semantics, algorithms and tools*, Lectures on Concurrency and
//! Petri Nets, LNCS 3098, 2004 — "B&Y" below; its chapter on DBM algorithms
//! is the reference for every operation here).
//!
//! # Invariants
//!
//! * **Canonical.** Every `Dbm` a public method returns is closed (all-pairs
//!   shortest paths: `D[i][j] ≤ D[i][k] + D[k][j]`, `D[i][i] = (0, ≤)`), or
//!   is *the* empty DBM of its dimension (every entry `(0, <)`). Two DBMs of
//!   the same dimension are therefore `==` (and hash equal) iff they denote
//!   the same zone, so `Dbm` can key a visited set.
//! * **Non-negative clocks.** Zones built with these operations satisfy
//!   `x_i ≥ 0` (`D[0][i] ≤ (0, ≤)`), except after a negative [`Dbm::shift`],
//!   where it is the caller's job to re-impose `x ≥ 0` if that is meant.
//! * **Exact strictness.** Bounds carry their strictness bit; `(c, <)` is a
//!   strictly smaller (tighter) bound than `(c, ≤)`, and sums are strict if
//!   either operand is.

use std::fmt;
use std::ops::Add;

use super::solve::{self, Diff, Rational};
use crate::pack::{Pack, Reader, put_varint};

/// One DBM entry: `(c, ≤)`, `(c, <)` or `∞`, encoded in an `i64` as
/// `raw = (c << 1) | weak` (`weak = 1` for `≤`) so that comparing raws
/// compares bounds, with `(c, <) < (c, ≤) < (c+1, <)`. `∞` is `i64::MAX`.
///
/// Constants must satisfy `|c| ≤` [`Bound::MAX_CONST`] (≈ 9·10¹⁵); entries
/// of a canonical DBM are sums along simple paths, so they stay below
/// `(n−1)·MAX_CONST`, far from `i64` overflow for any realistic `n`. Sums
/// that would overflow anyway (repeated [`Dbm::shift`]s) saturate: upwards to
/// `∞` (a sound loosening), downwards to `i64::MIN` (still "empty").
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bound(i64);

impl Bound {
    /// No constraint.
    pub const INF: Bound = Bound(i64::MAX);
    /// `(0, ≤)`: the diagonal, and `x ≥ 0` in row 0.
    pub const LE_ZERO: Bound = Bound(1);
    /// `(0, <)`.
    pub const LT_ZERO: Bound = Bound(0);
    /// Largest constant magnitude accepted by the constructors.
    pub const MAX_CONST: i64 = 1 << 53;

    /// `(c, <)` if `strict`, else `(c, ≤)`.
    pub fn new(c: i64, strict: bool) -> Bound {
        assert!(
            c.abs() <= Self::MAX_CONST,
            "bound constant {c} out of range"
        );
        Bound((c << 1) | (!strict) as i64)
    }

    /// `(c, ≤)`.
    pub fn le(c: i64) -> Bound {
        Bound::new(c, false)
    }

    /// `(c, <)`.
    pub fn lt(c: i64) -> Bound {
        Bound::new(c, true)
    }

    /// The bound squeezed into 32 bits, keeping its order: `a ≤ b`
    /// implies `a.squeezed() ≤ b.squeezed()` (bounds past about 17
    /// minutes, and `∞`, saturate). For cheap necessary conditions.
    #[inline]
    pub fn squeezed(self) -> i32 {
        self.0.clamp(i32::MIN as i64, i32::MAX as i64) as i32
    }

    /// Whether this is `∞`.
    pub fn is_inf(self) -> bool {
        self == Bound::INF
    }

    /// The constant `c`, or `None` for `∞`.
    pub fn constant(self) -> Option<i64> {
        (!self.is_inf()).then_some(self.0 >> 1)
    }

    /// Whether the bound is strict (`<`); `∞` counts as strict.
    pub fn is_strict(self) -> bool {
        self.is_inf() || self.0 & 1 == 0
    }

    /// The raw encoding.
    pub fn raw(self) -> i64 {
        self.0
    }
}

impl Add for Bound {
    type Output = Bound;

    /// Sum of two bounds (path concatenation): constants add, strict if
    /// either is strict, `∞` absorbs, saturating as described on [`Bound`].
    #[inline]
    fn add(self, o: Bound) -> Bound {
        if self.is_inf() || o.is_inf() {
            return Bound::INF;
        }
        let s = (self.0 & !1).saturating_add(o.0 & !1);
        if s >= i64::MAX - 1 {
            return Bound::INF;
        }
        Bound(s | (self.0 & o.0 & 1))
    }
}

impl fmt::Debug for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.constant() {
            None => write!(f, "<∞"),
            Some(c) => write!(f, "{}{}", if self.is_strict() { "<" } else { "≤" }, c),
        }
    }
}

/// Where a clock of a [`Dbm::remap_slots`] result comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The old clock with this index (index 0 must map to `Old(0)`).
    Old(usize),
    /// A fresh clock, unconstrained apart from `≥ 0`.
    Free,
    /// A fresh clock equal to 0 (just reset).
    Zero,
}

/// A zone, kept canonical (see the module documentation).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Dbm {
    n: usize,
    m: Vec<Bound>,
}

/// Per-clock extrapolation constant meaning "this clock is never compared
/// with a constant" (−∞ in Behrmann et al. 2006).
pub const NO_BOUND: i64 = i64::MIN;

impl Dbm {
    fn filled(n: usize, b: Bound) -> Dbm {
        assert!(n >= 1, "a DBM has at least the reference clock x0");
        Dbm {
            n,
            m: vec![b; n * n],
        }
    }

    #[inline]
    fn at(&self, i: usize, j: usize) -> Bound {
        self.m[i * self.n + j]
    }

    #[inline]
    fn set(&mut self, i: usize, j: usize, b: Bound) {
        self.m[i * self.n + j] = b;
    }

    fn make_empty(&mut self) {
        // The one representation of ∅: no closed DBM has (0,<) on its
        // diagonal, so this never collides with a non-empty zone.
        self.m.fill(Bound::LT_ZERO);
    }

    /// The zone where every clock is 0. O(n²).
    pub fn zero(n: usize) -> Dbm {
        Dbm::filled(n, Bound::LE_ZERO)
    }

    /// The zone of all valuations with every clock `≥ 0`. O(n²).
    pub fn universe(n: usize) -> Dbm {
        let mut d = Dbm::filled(n, Bound::INF);
        for j in 0..n {
            d.set(0, j, Bound::LE_ZERO);
            d.set(j, j, Bound::LE_ZERO);
        }
        d
    }

    /// The empty zone of dimension `n`. O(n²).
    pub fn empty(n: usize) -> Dbm {
        Dbm::filled(n, Bound::LT_ZERO)
    }

    /// Number of clocks including `x0`.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Whether the zone is empty. O(1).
    pub fn is_empty(&self) -> bool {
        self.m[0] < Bound::LE_ZERO
    }

    /// The entry `D[i][j]`: the tightest `b` with `x_i − x_j ≺ b` on the zone
    /// (meaningless on the empty zone).
    pub fn bound(&self, i: usize, j: usize) -> Bound {
        self.at(i, j)
    }

    /// `D[x][0]`: the upper bound of `x` (`x ≺ c`).
    pub fn upper(&self, x: usize) -> Bound {
        self.at(x, 0)
    }

    /// `D[0][x]`: the lower bound of `x` as `−x ≺ c`, i.e. `x ≥ −c` (or `>`).
    pub fn lower(&self, x: usize) -> Bound {
        self.at(0, x)
    }

    /// Floyd–Warshall; empties the DBM on a negative cycle. O(n³).
    fn close(&mut self) -> bool {
        if self.is_empty() {
            return false;
        }
        let n = self.n;
        for k in 0..n {
            // Row k does not change while pivoting on k (D[k][k] = (0,≤)
            // as long as no negative cycle has been seen), so each other
            // row i is relaxed through plain slices beside it.
            let (before, rest) = self.m.split_at_mut(k * n);
            let (row_k, after) = rest.split_at_mut(n);
            let row_k: &[Bound] = row_k;
            let rows = before.chunks_exact_mut(n).enumerate().chain(
                after
                    .chunks_exact_mut(n)
                    .enumerate()
                    .map(|(a, r)| (k + 1 + a, r)),
            );
            let mut negative = false;
            for (i, row_i) in rows {
                let dik = row_i[k];
                if dik.is_inf() {
                    continue;
                }
                for (dst, &src) in row_i.iter_mut().zip(row_k) {
                    let s = dik + src;
                    if s < *dst {
                        *dst = s;
                    }
                }
                if row_i[i] < Bound::LE_ZERO {
                    negative = true;
                    break;
                }
            }
            if negative {
                self.make_empty();
                return false;
            }
            if self.m[k * n + k] < Bound::LE_ZERO {
                self.make_empty();
                return false;
            }
        }
        true
    }

    /// Whether the DBM is closed (or the canonical empty DBM). For tests and
    /// debug assertions. O(n³).
    pub fn is_canonical(&self) -> bool {
        if self.is_empty() {
            return self.m.iter().all(|&b| b == Bound::LT_ZERO);
        }
        let n = self.n;
        (0..n).all(|i| self.at(i, i) == Bound::LE_ZERO)
            && (0..n).all(|i| {
                (0..n).all(|j| (0..n).all(|k| self.at(i, j) <= self.at(i, k).add(self.at(k, j))))
            })
    }

    /// Delay (future): `{v + d | v ∈ Z, d ≥ 0}`. Removes upper bounds
    /// (B&Y "up"); differences and lower bounds are invariant under delay.
    /// The result stays closed: the new `∞` entries satisfy every triangle
    /// inequality trivially, and no other entry changed or had a shorter
    /// path through an entry that grew. O(n).
    pub fn up(&mut self) {
        if self.is_empty() {
            return;
        }
        for i in 1..self.n {
            self.set(i, 0, Bound::INF);
        }
    }

    /// Past: `{v − d ≥ 0 | v ∈ Z, d ≥ 0}`. Sets each lower bound to the
    /// tightest of `x_i ≥ 0` and `x_i ≥ x_j − D[j][i]` (B&Y "down"). That is
    /// closed when all clocks are non-negative; if a negative shift broke that
    /// precondition the result is re-closed. O(n²) (O(n³) in that case).
    pub fn down(&mut self) {
        if self.is_empty() {
            return;
        }
        let n = self.n;
        let nonneg = (1..n).all(|i| self.at(0, i) <= Bound::LE_ZERO);
        for i in 1..n {
            let mut b = Bound::LE_ZERO;
            for j in 1..n {
                b = b.min(self.at(j, i));
            }
            self.set(0, i, b);
        }
        if !nonneg {
            self.close();
        }
    }

    /// Intersect with `x_i − x_j ≺ b`; returns whether the zone is still
    /// non-empty. Incremental closure: a new shortest `k → l` path uses the
    /// tightened edge at most once, so `D[k][l] := min(D[k][l],
    /// D[k][i] + b + D[j][l])`; column `i` and row `j` are unchanged by that
    /// update once `D[j][i] + b ≥ (0, ≤)` has been checked. O(n²), O(1) if
    /// the constraint is already implied.
    pub fn constrain(&mut self, i: usize, j: usize, b: Bound) -> bool {
        let n = self.n;
        assert!(i < n && j < n, "clock index out of range");
        if self.is_empty() {
            return false;
        }
        if i == j {
            if b < Bound::LE_ZERO {
                self.make_empty();
                return false;
            }
            return true;
        }
        if b >= self.at(i, j) {
            return true;
        }
        if self.at(j, i).add(b) < Bound::LE_ZERO {
            self.make_empty();
            return false;
        }
        // Row j is not changed by the update (see above), so each other
        // row k is updated through plain slices beside it.
        let (before, rest) = self.m.split_at_mut(j * n);
        let (row_j, after) = rest.split_at_mut(n);
        let row_j: &[Bound] = row_j;
        for row_k in before.chunks_exact_mut(n).chain(after.chunks_exact_mut(n)) {
            let dki = row_k[i];
            if dki.is_inf() {
                continue;
            }
            let via = dki + b;
            for (dst, &src) in row_k.iter_mut().zip(row_j) {
                let s = via + src;
                if s < *dst {
                    *dst = s;
                }
            }
        }
        true
    }

    /// `x ≤ c`. O(n²).
    pub fn clock_le(&mut self, x: usize, c: i64) -> bool {
        self.constrain(x, 0, Bound::le(c))
    }

    /// `x < c`. O(n²).
    pub fn clock_lt(&mut self, x: usize, c: i64) -> bool {
        self.constrain(x, 0, Bound::lt(c))
    }

    /// `x ≥ c`. O(n²).
    pub fn clock_ge(&mut self, x: usize, c: i64) -> bool {
        self.constrain(0, x, Bound::le(-c))
    }

    /// `x > c`. O(n²).
    pub fn clock_gt(&mut self, x: usize, c: i64) -> bool {
        self.constrain(0, x, Bound::lt(-c))
    }

    /// `x := 0`. O(n).
    pub fn reset(&mut self, x: usize) {
        self.assign(x, 0);
    }

    /// `x := c` (`c ≥ 0`). Row/column of `x` become those of `x0` shifted by
    /// `c` (B&Y "reset"); closed because `x` is now a translate of `x0`.
    /// O(n).
    pub fn assign(&mut self, x: usize, c: i64) {
        assert!(x >= 1 && x < self.n, "cannot assign x0 or out of range");
        assert!(c >= 0, "clock value must be non-negative");
        if self.is_empty() {
            return;
        }
        let pos = Bound::le(c);
        let neg = Bound::le(-c);
        for j in 0..self.n {
            self.set(x, j, pos.add(self.at(0, j)));
            self.set(j, x, self.at(j, 0).add(neg));
        }
        self.set(x, x, Bound::LE_ZERO);
    }

    /// `x := y`. Row/column of `x` become those of `y` (B&Y "copy").
    /// O(n).
    pub fn copy(&mut self, x: usize, y: usize) {
        assert!(x >= 1 && x < self.n && y < self.n, "bad clock index");
        if self.is_empty() || x == y {
            return;
        }
        for j in 0..self.n {
            self.set(x, j, self.at(y, j));
            self.set(j, x, self.at(j, y));
        }
        self.set(x, x, Bound::LE_ZERO);
        self.set(x, y, Bound::LE_ZERO);
        self.set(y, x, Bound::LE_ZERO);
    }

    /// Forget `x` (any value `≥ 0`): `D[x][j] := ∞`, `D[j][x] := D[j][0]`
    /// (B&Y "free"); closed because the only paths into `x` left are
    /// through `x0`. O(n).
    pub fn free(&mut self, x: usize) {
        assert!(x >= 1 && x < self.n, "cannot free x0 or out of range");
        if self.is_empty() {
            return;
        }
        for j in 0..self.n {
            if j != x {
                self.set(x, j, Bound::INF);
                self.set(j, x, self.at(j, 0));
            }
        }
    }

    /// `x := x + c` (a clock jump; `c` may be negative). Adds `c` to row `x`
    /// and subtracts it from column `x`; every path through `x` changes by
    /// the same amount entering and leaving, so closure is preserved. O(n).
    ///
    /// With `c < 0` the result may contain valuations with `x < 0`; DBMs
    /// represent them, but extrapolation and [`Dbm::down`]'s fast path assume
    /// non-negative clocks, so a caller that means "clocks are ages" must
    /// follow with `clock_ge(x, 0)` (or argue the jump cannot go below 0).
    pub fn shift(&mut self, x: usize, c: i64) {
        assert!(x >= 1 && x < self.n, "cannot shift x0 or out of range");
        if self.is_empty() {
            return;
        }
        let pos = Bound::le(c);
        let neg = Bound::le(-c);
        for j in 0..self.n {
            if j != x {
                self.set(x, j, self.at(x, j).add(pos));
                self.set(j, x, self.at(j, x).add(neg));
            }
        }
    }

    /// `self ∩ other`; returns whether non-empty. Pointwise minimum, then
    /// re-closed. O(n³).
    pub fn intersect(&mut self, other: &Dbm) -> bool {
        assert_eq!(self.n, other.n, "dimension mismatch");
        if self.is_empty() {
            return false;
        }
        if other.is_empty() {
            self.make_empty();
            return false;
        }
        let mut changed = false;
        for (a, &b) in self.m.iter_mut().zip(&other.m) {
            if b < *a {
                *a = b;
                changed = true;
            }
        }
        !changed || self.close()
    }

    /// Whether `self ∩ other ≠ ∅`. O(n³).
    pub fn intersects(&self, other: &Dbm) -> bool {
        self.clone().intersect(other)
    }

    /// Whether `self ⊇ other`: pointwise on canonical forms (B&Y). O(n²).
    pub fn includes(&self, other: &Dbm) -> bool {
        assert_eq!(self.n, other.n, "dimension mismatch");
        if other.is_empty() {
            return true;
        }
        if self.is_empty() {
            return false;
        }
        other.m.iter().zip(&self.m).all(|(a, b)| a <= b)
    }

    /// `self ∪ other` when that union is itself a zone (then it is their
    /// convex hull), else `None`. Exact: the hull `H` (the entrywise
    /// maximum of two canonical DBMs, itself canonical) equals the union
    /// iff `H ∖ self ⊆ other`, and `H ∖ self` is the union, over the
    /// constraints `x_i − x_j ≺ b` of `self` that `H` loosens, of `H ∧
    /// x_j − x_i ≺' −b` (the complement; UPPAAL's DBM subtraction). Used to
    /// merge the zones that interleavings of independent steps leave
    /// behind (`a·b` and `b·a` order two clocks each way; together they
    /// cover both orders). O(k·n²) for k loosened constraints.
    pub fn convex_union(&self, other: &Dbm) -> Option<Dbm> {
        assert_eq!(self.n, other.n, "dimension mismatch");
        if self.includes(other) {
            return Some(self.clone());
        }
        if other.includes(self) {
            return Some(other.clone());
        }
        // Both are non-empty now. The piece for a loosened constraint is
        // `P = H ∧ x_j − x_i ≺' b'`, whose closed form is `P[k][l] =
        // min(H[k][l], H[k][j] + b' + H[i][l])` (one incremental closure
        // step, as in `constrain`), empty iff `H[i][j] + b' < (0, ≤)`.
        // `P ⊆ other` pointwise; where `other` is as loose as the hull that
        // holds already, so only the entries where `other` is tighter than
        // `self` need checking: no piece is built.
        let n = self.n;
        let hull = |k: usize, l: usize| self.at(k, l).max(other.at(k, l));
        for i in 0..n {
            for j in 0..n {
                let b = self.at(i, j);
                if i == j || b >= other.at(i, j) {
                    continue;
                }
                let Some(c) = b.constant() else { continue };
                let flip = Bound::new(-c, !b.is_strict());
                if hull(i, j) + flip < Bound::LE_ZERO {
                    continue;
                }
                let inside = (0..n * n).all(|e| {
                    let (k, l) = (e / n, e % n);
                    other.m[e] >= self.m[e] || hull(k, j) + flip + hull(i, l) <= other.m[e]
                });
                if !inside {
                    return None;
                }
            }
        }
        Some(self.hull(other))
    }

    /// The convex hull of two non-empty canonical zones: the entrywise
    /// maximum, itself canonical (B&Y 2004). It contains both, and maybe
    /// more than their union.
    pub fn hull(&self, other: &Dbm) -> Dbm {
        assert_eq!(self.n, other.n, "dimension mismatch");
        let mut h = self.clone();
        for (a, &o) in h.m.iter_mut().zip(&other.m) {
            if o > *a {
                *a = o;
            }
        }
        h
    }

    /// Whether `self ⊆ z_1 ∪ … ∪ z_k`, exactly, by DBM subtraction (as
    /// UPPAAL's federations do): `self ∖ z` is the disjoint union, over the
    /// constraints `x_i − x_j ≺ b` of `z` tighter than the piece, of the
    /// piece with that constraint negated and the earlier ones kept; what
    /// is left after every `z_i` is empty iff `self` is covered. Pieces a
    /// zone includes whole are dropped without splitting. `None` when more
    /// than `max_pieces` pieces are left at once: the answer is not known,
    /// and a caller that merges must then not merge.
    pub fn covered_by_union(&self, zones: &[&Dbm], max_pieces: usize) -> Option<bool> {
        let mut left: Vec<Dbm> = vec![self.clone()];
        for z in zones {
            let mut next = Vec::with_capacity(left.len());
            for p in left {
                if z.includes(&p) {
                    continue;
                }
                if !p.intersects(z) {
                    next.push(p);
                    continue;
                }
                p.subtract_into(z, &mut next);
                if next.len() > max_pieces {
                    return None;
                }
            }
            left = next;
            if left.is_empty() {
                return Some(true);
            }
        }
        Some(left.is_empty())
    }

    /// Pushes the disjoint pieces of `self ∖ z` onto `out` (`self`
    /// canonical and non-empty).
    fn subtract_into(&self, z: &Dbm, out: &mut Vec<Dbm>) {
        let n = self.n;
        let mut rest = self.clone();
        for i in 0..n {
            for j in 0..n {
                let b = z.at(i, j);
                if i == j || b >= rest.at(i, j) {
                    continue;
                }
                let Some(c) = b.constant() else { continue };
                // ¬(x_i − x_j ≺ c) is x_j − x_i ≺' −c, the strictness flipped.
                let mut piece = rest.clone();
                if piece.constrain(j, i, Bound::new(-c, !b.is_strict())) {
                    out.push(piece);
                }
                if !rest.constrain(i, j, b) {
                    return;
                }
            }
        }
    }

    /// Re-layout: new clock `k` is old clock `map[k]`, or a fresh free clock
    /// for `None`. Same as [`Dbm::remap_slots`] with `Slot::Free`.
    pub fn remap(&self, map: &[Option<usize>]) -> Dbm {
        let slots: Vec<Slot> = map
            .iter()
            .map(|s| s.map_or(Slot::Free, Slot::Old))
            .collect();
        self.remap_slots(&slots)
    }

    /// Re-layout into a DBM of dimension `map.len()`: new clock `k` takes old
    /// clock `i` for `Slot::Old(i)` (dropping, permuting, or duplicating old
    /// clocks), or is a fresh clock (`Free`: any value ≥ 0; `Zero`: equal to
    /// 0). `map[0]` must be `Old(0)`. O(n'²), no re-closure:
    ///
    /// * The sub-matrix of a closed DBM on any index set (with repetitions)
    ///   is closed: the triangle inequality `D[i][j] ≤ D[i][k] + D[k][j]`
    ///   holds for all triples, so for the kept ones; and in a canonical DBM
    ///   every entry is attained, so a solution of the sub-system extends to
    ///   the dropped clocks — the sub-matrix is exactly the projection (B&Y:
    ///   canonical DBMs are projection-closed, which is also why `free`
    ///   is O(n)).
    /// * A `Zero` clock is a copy of `x0`: its row/column are `x0`'s.
    /// * A `Free` clock has row `∞` and column `D[j][0]` (as after `free`):
    ///   any path through it costs at least a path through `x0`.
    pub fn remap_slots(&self, map: &[Slot]) -> Dbm {
        let n2 = map.len();
        assert!(n2 >= 1 && map[0] == Slot::Old(0), "map[0] must be Old(0)");
        for s in map {
            if let Slot::Old(i) = s {
                assert!(*i < self.n, "old clock {i} out of range");
            }
        }
        if self.is_empty() {
            return Dbm::empty(n2);
        }
        // Old row/column standing for each new clock; None for Free.
        let src: Vec<Option<usize>> = map
            .iter()
            .map(|s| match *s {
                Slot::Old(i) => Some(i),
                Slot::Zero => Some(0),
                Slot::Free => None,
            })
            .collect();
        let mut out = Dbm::filled(n2, Bound::INF);
        for (k, &sk) in src.iter().enumerate() {
            let Some(ok) = sk else {
                // Row of a free clock stays ∞ (diagonal set below).
                out.set(k, k, Bound::LE_ZERO);
                continue;
            };
            let row = &self.m[ok * self.n..(ok + 1) * self.n];
            for (l, &sl) in src.iter().enumerate() {
                // Column of a free clock: x_k − x_l ≺ D[k][0].
                let b = row[sl.unwrap_or(0)];
                out.m[k * n2 + l] = if k == l { Bound::LE_ZERO } else { b };
            }
        }
        out
    }

    /// Extra⁺_M: [`Dbm::extrapolate_lu`] with `L = U = m`.
    pub fn extrapolate_max(&mut self, m: &[i64]) {
        self.extrapolate_lu(m, m);
    }

    /// Extra⁺_LU (Behrmann, Bouyer, Larsen, Pelánek, *Lower and upper bounds
    /// in zone-based abstractions of timed automata*, STTT 8(3), 2006,
    /// doi 10.1007/s10009-005-0190-0),
    /// then re-closed. `l[x]`/`u[x]` are the largest constants `x` is
    /// compared with in lower-bound (`x > c`, `x ≥ c`) / upper-bound (`x < c`,
    /// `x ≤ c`) guards and invariants reachable from the current discrete
    /// state, or [`NO_BOUND`] if none (then `x` is freed); index 0 is ignored.
    /// The result includes the zone (it only loosens entries) and has finitely
    /// many possible values for fixed `l`, `u`, which makes the zone graph
    /// finite. O(n²) + O(n³) for the closure.
    ///
    /// Soundness (reachability is preserved both ways) needs: clocks are
    /// non-negative; guards are diagonal-free (Bouyer, *Forward analysis of
    /// updatable timed automata*, FMSD 24(3), 2004: with `x − y ≺ c` guards
    /// this abstraction is unsound); and the bounds include every constant
    /// that updates can bring into play — for a clock that may be
    /// [`Dbm::shift`]ed by up to `J` in total before a comparison with `c`,
    /// use `c + J`; an [`Dbm::assign`] `x := c` followed by comparisons is
    /// covered by the comparisons' own constants.
    pub fn extrapolate_lu(&mut self, l: &[i64], u: &[i64]) {
        let n = self.n;
        assert!(l.len() >= n && u.len() >= n, "need a bound per clock");
        for x in 1..n {
            assert!(l[x] >= 0 || l[x] == NO_BOUND, "L must be ≥ 0 or NO_BOUND");
            assert!(u[x] >= 0 || u[x] == NO_BOUND, "U must be ≥ 0 or NO_BOUND");
        }
        if self.is_empty() {
            return;
        }
        // `b > (k, ≤)`, with NO_BOUND = −∞.
        let above = |b: Bound, k: i64| k == NO_BOUND || b > Bound::le(k);
        // Lower bound of the clock (row-0 entry `b`) strictly above `k`:
        // `−b > (k, ≤)`, i.e. `b < (−k, ≤)`.
        let lower_above = |b: Bound, k: i64| k == NO_BOUND || b < Bound::le(-k);
        let row0: Vec<Bound> = self.m[..n].to_vec();
        let mut changed = false;
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    continue;
                }
                let d = self.at(i, j);
                let nb = if i != 0 && (above(d, l[i]) || lower_above(row0[i], l[i])) {
                    Bound::INF
                } else if j != 0 && lower_above(row0[j], u[j]) {
                    if i != 0 {
                        Bound::INF
                    } else if u[j] == NO_BOUND {
                        Bound::LE_ZERO
                    } else {
                        Bound::lt(-u[j])
                    }
                } else {
                    d
                };
                if nb != d {
                    debug_assert!(nb > d, "extrapolation only loosens");
                    self.set(i, j, nb);
                    changed = true;
                }
            }
        }
        if changed {
            self.close();
        }
    }

    /// The difference constraints of the zone (finite off-diagonal entries),
    /// over times `t_i = x_i`.
    fn diffs(&self) -> Vec<Diff> {
        let n = self.n;
        let mut cs = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let b = self.at(i, j);
                if let (false, Some(c)) = (i == j, b.constant()) {
                    cs.push(Diff {
                        i,
                        j,
                        c,
                        strict: b.is_strict(),
                    });
                }
            }
        }
        cs
    }

    /// A valuation in the zone, indexed like the clocks (entry 0 is `x0 = 0`),
    /// or `None` if empty. Each clock gets its least value over the zone when
    /// that is attained; at a strict lower bound it gets the bound plus a
    /// multiple of `1/(n+1)` less than 1 (see [`solve::earliest_ticks`]), so
    /// strict bounds hold strictly. O(n³) (Bellman–Ford on n² constraints).
    pub fn pick_point(&self) -> Option<Vec<Rational>> {
        if self.is_empty() {
            return None;
        }
        // No implicit `x ≥ 0`: the zone's row 0 states the lower bounds (all
        // finite), and a negatively shifted zone may hold negative values.
        let (scale, ticks) = solve::least(self.n, &self.diffs(), false)
            .expect("a non-empty canonical zone has a point");
        Some(ticks.into_iter().map(|t| Rational::new(t, scale)).collect())
    }

    /// Whether the valuation `v` (entry 0 must be 0) lies in the zone,
    /// exactly. O(n²).
    pub fn contains(&self, v: &[Rational]) -> bool {
        assert_eq!(v.len(), self.n, "valuation length");
        if self.is_empty() {
            return false;
        }
        self.diffs().iter().all(|d| d.holds(v))
    }

    fn name(i: usize) -> String {
        if i == 0 {
            "0".to_string()
        } else {
            format!("x{i}")
        }
    }
}

/// Constraints in a readable, non-redundant-ish form: per clock
/// `a ≤ x ≤ b` (strictness shown), then differences not implied by the two
/// clocks' bounds. `false` for the empty zone, `true` for the universe.
impl fmt::Display for Dbm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return write!(f, "false");
        }
        let n = self.n;
        let op = |b: Bound| if b.is_strict() { "<" } else { "≤" };
        let mut parts: Vec<String> = Vec::new();
        for x in 1..n {
            let lo = self.at(0, x);
            let hi = self.at(x, 0);
            let name = Dbm::name(x);
            let lo_s = (lo != Bound::LE_ZERO)
                .then(|| format!("{} {} ", -lo.constant().unwrap_or(0), op(lo)));
            let hi_s = hi.constant().map(|c| format!(" {} {}", op(hi), c));
            if lo_s.is_some() || hi_s.is_some() {
                parts.push(format!(
                    "{}{}{}",
                    lo_s.unwrap_or_default(),
                    name,
                    hi_s.unwrap_or_default()
                ));
            }
        }
        for i in 1..n {
            for j in 1..n {
                let b = self.at(i, j);
                if i == j || b.is_inf() || b == self.at(i, 0).add(self.at(0, j)) {
                    continue;
                }
                parts.push(format!(
                    "{} − {} {} {}",
                    Dbm::name(i),
                    Dbm::name(j),
                    op(b),
                    b.constant().unwrap_or(0)
                ));
            }
        }
        if parts.is_empty() {
            write!(f, "true")
        } else {
            write!(f, "{}", parts.join(" ∧ "))
        }
    }
}

impl fmt::Debug for Dbm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dbm[{}]{{{}}}", self.n, self)
    }
}

/// A zone kept as its **minimal constraint graph** (Larsen, Larsson,
/// Pettersson, Yi, *Efficient verification of real-time systems: compact
/// data structure and state-space reduction*, RTSS 1997; UPPAAL's passed
/// list stores zones so): the fewest constraints `x_i − x_j ≺ b` whose
/// closure is the zone. A zone the search met on an earlier level is only
/// ever asked whether it includes a new one, and that needs only these
/// constraints: a canonical `Z` lies inside iff `Z[i][j] ≤ b` for each of
/// them. Zones from the search keep 10–25 of their 36–100 entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinZone {
    n: u8,
    /// `(i, j, D[i][j])`; the empty zone is the one constraint
    /// `x0 − x0 < 0`, which no non-empty canonical DBM satisfies.
    edges: Edges,
}

/// The kept constraints. Each in one 64-bit word when every bound fits in
/// 48 bits, as the bounds of any realistic configuration do (microseconds
/// up to about 4 years): the clocks in the low 16 bits, the bound above.
/// Half the memory of `(Bound, u8, u8)`, which the rare zone beyond falls
/// back to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Edges {
    Narrow(Box<[u64]>),
    Wide(Box<[(Bound, u8, u8)]>),
}

impl Edges {
    fn new(v: Vec<(Bound, u8, u8)>) -> Edges {
        let fits = |b: Bound| b.0 >= -(1 << 47) && b.0 < (1 << 47);
        if v.iter().all(|&(b, _, _)| fits(b)) {
            Edges::Narrow(
                v.iter()
                    .map(|&(b, i, j)| ((b.0 as u64) << 16) | ((i as u64) << 8) | j as u64)
                    .collect(),
            )
        } else {
            Edges::Wide(v.into_boxed_slice())
        }
    }

    fn narrow(e: u64) -> (Bound, u8, u8) {
        (Bound((e as i64) >> 16), (e >> 8) as u8, e as u8)
    }

    fn len(&self) -> usize {
        match self {
            Edges::Narrow(e) => e.len(),
            Edges::Wide(e) => e.len(),
        }
    }

    fn to_vec(&self) -> Vec<(Bound, u8, u8)> {
        match self {
            Edges::Narrow(e) => e.iter().map(|&e| Edges::narrow(e)).collect(),
            Edges::Wide(e) => e.to_vec(),
        }
    }
}

impl Dbm {
    /// The zone's minimal constraint graph. Clocks whose differences are
    /// fixed (`D[i][j] + D[j][i] = (0, ≤)`: a zero cycle) form classes;
    /// each class keeps a cycle through its members in index order, and
    /// between the classes' first members (no zero cycle is left among
    /// them) an edge `I → J` is kept unless some other first member `K`
    /// gives `D[I][K] + D[K][J] ≤ D[I][J]`. O(n³).
    pub fn minimal(&self) -> MinZone {
        let n = self.n;
        assert!(n <= u8::MAX as usize, "at most 255 clocks");
        if self.is_empty() {
            return MinZone {
                n: n as u8,
                edges: Edges::new(vec![(Bound::LT_ZERO, 0, 0)]),
            };
        }
        // class[i]: the least clock with a fixed difference to i.
        let mut class: [u8; 256] = std::array::from_fn(|i| i as u8);
        let mut edges = Vec::with_capacity(2 * n);
        for i in 0..n {
            if class[i] as usize != i {
                continue;
            }
            // The class's members after i, chained in index order and
            // closed back to i.
            let mut last = i;
            for (j, cj) in class.iter_mut().enumerate().take(n).skip(i + 1) {
                if *cj as usize == j && self.at(i, j) + self.at(j, i) == Bound::LE_ZERO {
                    *cj = i as u8;
                    edges.push((self.at(last, j), last as u8, j as u8));
                    last = j;
                }
            }
            if last != i {
                edges.push((self.at(last, i), last as u8, i as u8));
            }
        }
        let first = |i: usize| class[i] as usize == i;
        // In a canonical DBM D[i][j] ≤ D[i][k] + D[k][j] always, so an
        // edge is implied exactly when some path through k is as tight.
        let mut implied = [false; 256];
        for i in (0..n).filter(|&i| first(i)) {
            implied[..n].fill(false);
            let row_i = &self.m[i * n..(i + 1) * n];
            for k in (0..n).filter(|&k| k != i && first(k)) {
                let dik = row_i[k];
                if dik.is_inf() {
                    continue;
                }
                let row_k = &self.m[k * n..(k + 1) * n];
                for (j, (dkj, dij)) in row_k.iter().zip(row_i).enumerate() {
                    // dik + dkj == dij, branch-free for finite dkj (finite
                    // entries of a canonical DBM are far from overflow).
                    let sum = (dik.0 & !1).wrapping_add(dkj.0 & !1) | (dik.0 & dkj.0 & 1);
                    implied[j] |= j != k && !dkj.is_inf() && sum == dij.0;
                }
            }
            for j in (0..n).filter(|&j| j != i && first(j)) {
                let b = row_i[j];
                if !b.is_inf() && !implied[j] {
                    edges.push((b, i as u8, j as u8));
                }
            }
        }
        // The zones of one world differ most in their clocks' bounds
        // (row and column 0): asked first, they end most failed inclusion
        // tests at once.
        edges.sort_by_key(|&(_, i, j)| (i != 0 && j != 0, i, j));
        MinZone {
            n: n as u8,
            edges: Edges::new(edges),
        }
    }
}

impl MinZone {
    /// Whether this zone includes `z` (canonical, of the same dimension).
    /// O(constraints kept).
    pub fn includes(&self, z: &Dbm) -> bool {
        assert_eq!(self.n as usize, z.n, "dimension mismatch");
        if z.is_empty() {
            return true;
        }
        match &self.edges {
            Edges::Narrow(e) => e.iter().all(|&e| {
                let (b, i, j) = Edges::narrow(e);
                z.at(i as usize, j as usize) <= b
            }),
            Edges::Wide(e) => e.iter().all(|&(b, i, j)| z.at(i as usize, j as usize) <= b),
        }
    }

    /// Appends the graph as a record of fixed-width fields, which
    /// [`MinZone::record_includes`] reads in place (the passed list on
    /// disk): the dimension, the number of constraints (u32), whether they
    /// are wide, then each constraint as its 64-bit word (little-endian),
    /// or as bound (i64) and clocks when wide.
    pub fn put_record(&self, out: &mut Vec<u8>) {
        out.push(self.n);
        out.extend_from_slice(&(self.edges.len() as u32).to_le_bytes());
        match &self.edges {
            Edges::Narrow(e) => {
                out.push(0);
                for w in e.iter() {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
            Edges::Wide(e) => {
                out.push(1);
                for (b, i, j) in e.iter() {
                    out.extend_from_slice(&b.0.to_le_bytes());
                    out.extend_from_slice(&[*i, *j]);
                }
            }
        }
    }

    /// Whether the graph recorded at the start of `bytes` (by
    /// [`MinZone::put_record`]) includes `z`, and the record's length. The
    /// same answer as [`MinZone::includes`] on the graph; no allocation.
    pub fn record_includes(bytes: &[u8], z: &Dbm) -> (bool, usize) {
        let n = bytes[0];
        assert_eq!(n as usize, z.n, "dimension mismatch");
        let k = u32::from_le_bytes(bytes[1..5].try_into().expect("4 bytes")) as usize;
        let width = if bytes[5] == 0 { 8 } else { 10 };
        let body = &bytes[6..6 + k * width];
        let len = 6 + k * width;
        if z.is_empty() {
            return (true, len);
        }
        let inside = if width == 8 {
            body.chunks_exact(8).all(|w| {
                let (b, i, j) = Edges::narrow(u64::from_le_bytes(w.try_into().expect("8 bytes")));
                z.at(i as usize, j as usize) <= b
            })
        } else {
            body.chunks_exact(10).all(|w| {
                let b = Bound(i64::from_le_bytes(w[..8].try_into().expect("8 bytes")));
                z.at(w[8] as usize, w[9] as usize) <= b
            })
        };
        (inside, len)
    }

    /// How many constraints are kept.
    pub fn constraints(&self) -> usize {
        self.edges.len()
    }

    /// The zone again, as a canonical DBM: the closure of the constraints.
    pub fn to_dbm(&self) -> Dbm {
        let mut d = Dbm::filled(self.n as usize, Bound::INF);
        for i in 0..d.n {
            d.set(i, i, Bound::LE_ZERO);
        }
        for (b, i, j) in self.edges.to_vec() {
            let (i, j) = (i as usize, j as usize);
            if b < d.at(i, j) {
                d.set(i, j, b);
            }
        }
        if d.is_empty() {
            d.make_empty();
        } else {
            d.close();
        }
        d
    }
}

/// A minimal graph packed (`crate::pack`): the dimension, then each kept
/// constraint as its two clocks and its bound, a varint. What the search
/// keeps of a frontier state's zone.
impl Pack for MinZone {
    fn pack(&self, out: &mut Vec<u8>) {
        out.push(self.n);
        put_varint(out, self.edges.len() as u64);
        for (b, i, j) in self.edges.to_vec() {
            out.push(i);
            out.push(j);
            b.0.pack(out);
        }
    }
    fn unpack(r: &mut Reader) -> MinZone {
        let n = r.byte();
        let k = r.varint() as usize;
        let edges: Vec<(Bound, u8, u8)> = (0..k)
            .map(|_| {
                let i = r.byte();
                let j = r.byte();
                (Bound(i64::unpack(r)), i, j)
            })
            .collect();
        MinZone {
            n,
            edges: Edges::new(edges),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_encoding_and_order() {
        assert!(Bound::lt(1) < Bound::le(1));
        assert!(Bound::le(1) < Bound::lt(2));
        assert!(Bound::le(-3) < Bound::lt(-2));
        assert!(Bound::le(Bound::MAX_CONST) < Bound::INF);
        assert_eq!(Bound::le(3).constant(), Some(3));
        assert_eq!(Bound::lt(-3).constant(), Some(-3));
        assert!(Bound::lt(-3).is_strict() && !Bound::le(-3).is_strict());
        assert_eq!(Bound::le(2).add(Bound::le(3)), Bound::le(5));
        assert_eq!(Bound::le(2).add(Bound::lt(-3)), Bound::lt(-1));
        assert_eq!(Bound::lt(2).add(Bound::lt(3)), Bound::lt(5));
        assert_eq!(Bound::lt(2).add(Bound::INF), Bound::INF);
        assert_eq!(Bound::INF.add(Bound::le(-5)), Bound::INF);
        // Large magnitudes: exact up to MAX_CONST, saturating beyond i64.
        let big = Bound::le(1_000_000_000_000_000);
        assert_eq!(big.add(big).constant(), Some(2_000_000_000_000_000));
        let huge = Bound(i64::MAX - 3);
        assert_eq!(huge.add(huge), Bound::INF);
        let tiny = Bound(i64::MIN + 2);
        assert!(tiny.add(tiny) < Bound::LT_ZERO);
    }

    #[test]
    fn strict_and_weak_upper_bounds_differ() {
        let mut a = Dbm::universe(2);
        let mut b = Dbm::universe(2);
        a.clock_lt(1, 1);
        b.clock_le(1, 1);
        assert_ne!(a, b);
        assert!(b.includes(&a) && !a.includes(&b));
        let one = vec![Rational::ZERO, Rational::integer(1)];
        assert!(b.contains(&one) && !a.contains(&one));
        // x < 1 ∧ x ≥ 1 is empty, x ≤ 1 ∧ x ≥ 1 is not.
        assert!(!a.clock_ge(1, 1));
        assert!(b.clock_ge(1, 1));
        assert_eq!(a, Dbm::empty(2));
    }

    #[test]
    fn up_keeps_strict_lower_bound() {
        let mut z = Dbm::universe(2);
        z.clock_gt(1, 2);
        z.clock_le(1, 3);
        z.up();
        assert_eq!(z.lower(1), Bound::lt(-2));
        assert!(z.upper(1).is_inf());
        assert_eq!(format!("{z}"), "2 < x1");
    }

    #[test]
    fn display_shows_constraints() {
        let mut z = Dbm::zero(3);
        z.up();
        z.clock_lt(1, 4);
        z.reset(2);
        z.clock_ge(1, 1);
        assert_eq!(format!("{z}"), "1 ≤ x1 < 4 ∧ x2 ≤ 0");
        z.up();
        assert_eq!(format!("{z}"), "1 ≤ x1 ∧ x1 − x2 < 4 ∧ x2 − x1 ≤ -1");
        assert_eq!(format!("{}", Dbm::universe(3)), "true");
        assert_eq!(format!("{:?}", Dbm::empty(2)), "Dbm[2]{false}");
    }

    /// The convex union as first written: build each piece with
    /// `constrain` and test it with `includes`. The reference for the
    /// piece-free [`Dbm::convex_union`].
    fn convex_union_reference(a: &Dbm, b: &Dbm) -> Option<Dbm> {
        if a.includes(b) {
            return Some(a.clone());
        }
        if b.includes(a) {
            return Some(b.clone());
        }
        let mut hull = a.clone();
        for (h, o) in hull.m.iter_mut().zip(&b.m) {
            if *o > *h {
                *h = *o;
            }
        }
        let n = a.n;
        for i in 0..n {
            for j in 0..n {
                let c = a.at(i, j);
                if i == j || c >= hull.at(i, j) {
                    continue;
                }
                let Some(k) = c.constant() else { continue };
                let mut piece = hull.clone();
                if piece.constrain(j, i, Bound::new(-k, !c.is_strict())) && !b.includes(&piece) {
                    return None;
                }
            }
        }
        Some(hull)
    }

    /// A seeded xorshift generator: `next(k)` draws from `0..k`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |k| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % k
        }
    }

    /// Small random zones over 3 clocks: random bounds, some strict, some
    /// delayed; and pairs split from one zone by a constraint and its
    /// complement, whose union is that zone.
    #[test]
    fn convex_union_agrees_with_the_piecewise_reference() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let zone = |next: &mut dyn FnMut(u64) -> u64| {
            let n = 4;
            let mut z = Dbm::zero(n);
            for _ in 0..3 {
                let x = 1 + next(3) as usize;
                z.reset(x);
                z.up();
                let c = next(6) as i64;
                let strict = next(2) == 0;
                match next(3) {
                    0 => z.constrain(x, 0, Bound::new(c + 1, strict)),
                    1 => z.constrain(0, x, Bound::new(-c, strict)),
                    _ => z.constrain(x, 1 + next(3) as usize, Bound::new(c - 2, strict)),
                };
            }
            z
        };
        let (mut some, mut none) = (0, 0);
        for _ in 0..4000 {
            let a = zone(&mut next);
            let b = if next(2) == 0 {
                zone(&mut next)
            } else {
                // a split of `a` by x_i − x_j ≺ c, and the other side
                let (i, j) = (next(4) as usize, next(4) as usize);
                let (c, strict) = (next(8) as i64 - 4, next(2) == 0);
                let mut side = a.clone();
                side.constrain(i, j, Bound::new(c, strict));
                let mut other = a.clone();
                if i != j {
                    other.constrain(j, i, Bound::new(-c, !strict));
                }
                let want = a.clone();
                if !side.is_empty() && !other.is_empty() {
                    assert_eq!(side.convex_union(&other), Some(want.clone()));
                }
                side
            };
            let got = a.convex_union(&b);
            assert_eq!(got, convex_union_reference(&a, &b), "{a:?} ∪ {b:?}");
            if !a.is_empty() && !b.is_empty() {
                // The union is convex iff the hull is covered by the two.
                assert_eq!(
                    a.hull(&b).covered_by_union(&[&a, &b], usize::MAX),
                    Some(got.is_some()),
                    "{a:?} ∪ {b:?}"
                );
            }
            assert_eq!(
                got.is_some(),
                b.convex_union(&a).is_some(),
                "symmetric: {a:?} ∪ {b:?}"
            );
            if got.is_some() { some += 1 } else { none += 1 }
        }
        assert!(
            some > 500 && none > 500,
            "both outcomes exercised: {some} / {none}"
        );
    }

    /// Random zones over five clocks, with clocks reset together (fixed
    /// differences: zero cycles) and bounds strict and weak: the minimal
    /// graph closes back to the zone, no constraint of it can go, and it
    /// answers inclusion as the full matrix does.
    #[test]
    fn a_minimal_graph_with_bounds_beyond_48_bits_keeps_them_whole() {
        let big = Bound::MAX_CONST;
        let mut z = Dbm::zero(3);
        z.up();
        z.constrain(1, 0, Bound::new(big, false));
        z.constrain(0, 2, Bound::new(-big / 2, true));
        let min = z.minimal();
        assert!(matches!(min.edges, Edges::Wide(_)));
        assert_eq!(min.to_dbm(), z);
        assert!(min.includes(&z));
        let mut inner = z.clone();
        inner.constrain(1, 0, Bound::new(big - 1, false));
        assert!(min.includes(&inner) && !inner.minimal().includes(&z));
        let mut rec = Vec::new();
        min.put_record(&mut rec);
        assert_eq!(MinZone::record_includes(&rec, &inner), (true, rec.len()));
        inner.minimal().put_record(&mut rec);
        let (_, first) = MinZone::record_includes(&rec, &z);
        assert_eq!(
            MinZone::record_includes(&rec[first..], &z),
            (false, rec.len() - first)
        );
        assert_eq!(
            crate::pack::from_bytes::<MinZone>(&crate::pack::to_bytes(&min)),
            min
        );
        let mut small = Dbm::zero(3);
        small.up();
        small.constrain(1, 0, Bound::new(30_000_000, false));
        assert!(matches!(small.minimal().edges, Edges::Narrow(_)));
    }

    #[test]
    fn the_minimal_graph_is_the_zone_and_answers_inclusion() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        let zone = |next: &mut dyn FnMut(u64) -> u64| {
            let n = 6;
            let mut z = Dbm::zero(n);
            for _ in 0..1 + next(6) {
                let x = 1 + next(5) as usize;
                match next(4) {
                    0 => z.reset(x),
                    1 => z.copy(x, 1 + next(5) as usize),
                    _ => {}
                }
                z.up();
                let (c, strict) = (next(9) as i64, next(2) == 0);
                match next(3) {
                    0 => z.constrain(x, 0, Bound::new(c + 1, strict)),
                    1 => z.constrain(0, x, Bound::new(-c, strict)),
                    _ => z.constrain(x, 1 + next(5) as usize, Bound::new(c - 4, strict)),
                };
            }
            z
        };
        let (mut cycles, mut included, mut empty) = (0, 0, 0);
        for _ in 0..3000 {
            let a = zone(&mut next);
            let b = zone(&mut next);
            let min = a.minimal();
            assert_eq!(min.to_dbm(), a, "{a:?}");
            assert_eq!(
                crate::pack::from_bytes::<MinZone>(&crate::pack::to_bytes(&min)),
                min
            );
            assert_eq!(min.includes(&b), a.includes(&b), "{a:?} ⊇ {b:?}");
            assert!(min.includes(&a));
            let mut rec = vec![7];
            min.put_record(&mut rec);
            rec.push(9);
            assert_eq!(
                MinZone::record_includes(&rec[1..], &b),
                (a.includes(&b), rec.len() - 2)
            );
            if a.is_empty() {
                empty += 1;
                continue;
            }
            if (1..a.dim()).any(|i| (0..i).any(|j| a.at(i, j) + a.at(j, i) == Bound::LE_ZERO)) {
                cycles += 1;
            }
            included += a.includes(&b) as usize;
            for drop in 0..min.constraints() {
                let mut fewer = min.clone();
                let mut edges = fewer.edges.to_vec();
                edges.remove(drop);
                fewer.edges = Edges::new(edges);
                assert_ne!(
                    fewer.to_dbm(),
                    a,
                    "constraint {drop} of {min:?} is redundant"
                );
            }
            assert!(min.constraints() < a.dim() * a.dim());
        }
        assert!(
            cycles > 300 && included > 100 && empty > 10,
            "zero cycles {cycles}, inclusions {included}, empty {empty}"
        );
    }

    /// The six orders of three clocks in a box cover the box; any five
    /// leave the sixth's interior uncovered; and a cap on the pieces gives
    /// up rather than answer.
    #[test]
    fn the_orders_of_three_clocks_cover_their_box() {
        let mut boxed = Dbm::universe(4);
        for x in 1..4 {
            boxed.clock_le(x, 5);
        }
        let orders = [
            [1, 2, 3],
            [1, 3, 2],
            [2, 1, 3],
            [2, 3, 1],
            [3, 1, 2],
            [3, 2, 1],
        ];
        let cells: Vec<Dbm> = orders
            .iter()
            .map(|o| {
                let mut z = boxed.clone();
                z.constrain(o[0], o[1], Bound::LE_ZERO);
                z.constrain(o[1], o[2], Bound::LE_ZERO);
                z
            })
            .collect();
        let all: Vec<&Dbm> = cells.iter().collect();
        let hull = cells[1..].iter().fold(cells[0].clone(), |h, z| h.hull(z));
        assert_eq!(hull, boxed);
        assert_eq!(hull.covered_by_union(&all, usize::MAX), Some(true));
        for skip in 0..6 {
            let some: Vec<&Dbm> = (0..6).filter(|k| *k != skip).map(|k| &cells[k]).collect();
            assert_eq!(
                hull.covered_by_union(&some, usize::MAX),
                Some(false),
                "without {skip}"
            );
        }
        assert_eq!(hull.covered_by_union(&all[1..], 0), None);
    }
}
