//! Exact timestamps for a path: difference constraints over event times.
//!
//! A symbolic counterexample is a sequence of discrete steps; each guard or
//! invariant `x ≺ c` checked at event `i`, where `x` was last reset at event
//! `j`, is the difference constraint `t_i − t_j ≺ c`. This module decides such
//! a system and returns exact rational times, independently of the zone code
//! (so it can validate traces the zone engine produced).
//!
//! Method: the system is a constraint graph; feasibility is the absence of a
//! positive cycle in the "lower bound" relaxation `t_j ≥ t_i − c`, found by
//! Bellman–Ford (Dill 1989; Bengtsson & Yi, *Timed automata: semantics,
//! algorithms and tools*, LNCS 3098, 2004). Strict bounds are handled
//! exactly by the ε-scaling argument: a strict `t_i − t_j < c` is read as
//! `t_i − t_j ≤ c − ε` and path weights are kept as pairs `(a, b)` meaning
//! `a + b·ε`, compared lexicographically (ε infinitesimal). A cycle of weight
//! `(0, b > 0)` is a strict cycle of total constant 0 and is infeasible. At the
//! fixpoint every potential has `0 ≤ b ≤ k` (a longest simple path has at most
//! `k` edges), and every lexicographic inequality between potentials then
//! also holds numerically at `ε = 1/(k+2)`: if the integer parts differ they
//! differ by at least 1, while the ε parts differ by at most `k+1 < k+2`.

use std::cmp::Ordering;
use std::fmt;

/// An exact rational `num / den`, always normalised: `den > 0`, `gcd = 1`.
///
/// Arithmetic is checked and panics on `i128` overflow rather than wrapping:
/// a wrong timestamp must never be printed silently.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rational {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        let r = a % b;
        a = b;
        b = r;
    }
    a
}

impl Rational {
    /// Zero.
    pub const ZERO: Rational = Rational { num: 0, den: 1 };

    /// `num / den`, normalised. Panics if `den == 0`.
    pub fn new(num: i128, den: i128) -> Rational {
        assert!(den != 0, "rational with zero denominator");
        let (num, den) = if den < 0 { (-num, -den) } else { (num, den) };
        let g = gcd(num, den).max(1);
        Rational {
            num: num / g,
            den: den / g,
        }
    }

    /// The integer `n`.
    pub fn integer(n: i64) -> Rational {
        Rational {
            num: n as i128,
            den: 1,
        }
    }

    /// Numerator (sign carrier).
    pub fn num(self) -> i128 {
        self.num
    }

    /// Denominator, always positive.
    pub fn den(self) -> i128 {
        self.den
    }

    /// Compare `self` with the integer `c`, exactly.
    /// This time (µs) in milliseconds, for drawing: rounded to the
    /// nanosecond first, so equal rationals give equal floats.
    pub fn to_ms(self) -> f64 {
        let n = self.num * 1000;
        let ns = if n >= 0 {
            (n + self.den / 2) / self.den
        } else {
            -((-n + self.den / 2) / self.den)
        };
        ns as f64 / 1_000_000.0
    }

    pub fn cmp_int(self, c: i64) -> Ordering {
        let rhs = (c as i128)
            .checked_mul(self.den)
            .expect("rational overflow");
        self.num.cmp(&rhs)
    }
}

impl std::ops::Add for Rational {
    type Output = Rational;
    fn add(self, o: Rational) -> Rational {
        let g = gcd(self.den, o.den);
        let l = self.den / g;
        let num = self
            .num
            .checked_mul(o.den / g)
            .and_then(|a| o.num.checked_mul(l).and_then(|b| a.checked_add(b)))
            .expect("rational overflow");
        let den = l.checked_mul(o.den).expect("rational overflow");
        Rational::new(num, den)
    }
}

impl std::ops::Neg for Rational {
    type Output = Rational;
    fn neg(self) -> Rational {
        Rational {
            num: -self.num,
            den: self.den,
        }
    }
}

impl std::ops::Sub for Rational {
    type Output = Rational;
    #[allow(clippy::suspicious_arithmetic_impl)]
    fn sub(self, o: Rational) -> Rational {
        self + (-o)
    }
}

impl Ord for Rational {
    fn cmp(&self, o: &Rational) -> Ordering {
        let a = self.num.checked_mul(o.den).expect("rational overflow");
        let b = o.num.checked_mul(self.den).expect("rational overflow");
        a.cmp(&b)
    }
}

impl PartialOrd for Rational {
    fn partial_cmp(&self, o: &Rational) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

impl fmt::Debug for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The difference constraint `t_i − t_j < c` (`strict`) or `t_i − t_j ≤ c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Diff {
    pub i: usize,
    pub j: usize,
    pub c: i64,
    pub strict: bool,
}

impl Diff {
    /// `t_i − t_j ≤ c`.
    pub fn le(i: usize, j: usize, c: i64) -> Diff {
        Diff {
            i,
            j,
            c,
            strict: false,
        }
    }

    /// `t_i − t_j < c`.
    pub fn lt(i: usize, j: usize, c: i64) -> Diff {
        Diff {
            i,
            j,
            c,
            strict: true,
        }
    }

    /// Whether `times` satisfies this constraint, exactly.
    pub fn holds(&self, times: &[Rational]) -> bool {
        let d = times[self.i] - times[self.j];
        match d.cmp_int(self.c) {
            Ordering::Less => true,
            Ordering::Equal => !self.strict,
            Ordering::Greater => false,
        }
    }
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.strict { "<" } else { "≤" };
        write!(f, "t{} − t{} {} {}", self.i, self.j, op, self.c)
    }
}

/// The index of the first constraint `times` violates, or `None`.
pub fn first_violation(times: &[Rational], cs: &[Diff]) -> Option<usize> {
    cs.iter().position(|d| !d.holds(times))
}

/// The earliest solution of `cs` over `n` event times, as integers over a
/// common scale: `t_i = ticks[i] / scale`, with `scale = n + 1` (that is
/// `k + 2` for events `t_0..t_k`).
///
/// Besides `cs`, the system always includes `t_0 = 0` and `t_i ≥ 0` for
/// every `i`; ordering constraints such as `t_i ≤ t_{i+1}` are the caller's.
/// Returns `None` if the system is infeasible (including a strict cycle of
/// total constant 0, e.g. `t_1 − t_0 < 1 ∧ t_0 − t_1 ≤ −1`). Panics if a
/// constraint names a time `≥ n`.
///
/// "Earliest": each `t_i` is `a_i + b_i/(n+1)` where `a_i` is the greatest
/// lower bound of `t_i` over all solutions (an integer, since constants are)
/// and `b_i` is the number of strict bounds on the longest chain forcing it;
/// so non-strict chains give exactly the least solution, and strict bounds
/// are met with slack `1/(n+1)` per strict step. The result is the least
/// solution of the ε-tightened system, coordinate-wise.
pub fn earliest_ticks(n: usize, cs: &[Diff]) -> Option<(i128, Vec<i128>)> {
    least(n, cs, true)
}

/// The least solution of the ε-tightened system with `t_0 = 0`, as ticks of
/// `1/(n+1)`. With `nonneg`, every `t_i ≥ 0` is implied; without it, times
/// may be negative and every time must be bounded below by a chain of
/// constraints from `t_0` (else `None`). [`super::dbm::Dbm::pick_point`]
/// uses the latter, since a canonical DBM states its lower bounds itself
/// (and may, after a negative shift, allow negative clocks).
pub(super) fn least(n: usize, cs: &[Diff], nonneg: bool) -> Option<(i128, Vec<i128>)> {
    assert!(n >= 1, "need at least t_0");
    for d in cs {
        assert!(d.i < n && d.j < n, "constraint {d} names a time ≥ {n}");
    }
    // Lower-bound potentials p_j = (a, b) meaning t_j ≥ a + b·ε (None: no
    // lower bound found yet). The implicit t_j ≥ t_0 = 0 is the initial
    // value (0, 0) for everyone.
    let start = if nonneg { Some((0, 0)) } else { None };
    let mut p: Vec<Option<(i128, i128)>> = vec![start; n];
    p[0] = Some((0, 0));
    // A constraint t_i − t_j ≺ c gives t_j ≥ t_i − c (+ ε if strict).
    let mut changed = true;
    let mut rounds = 0;
    while changed {
        if rounds > n {
            // More than n rounds of improvement: a positive cycle.
            return None;
        }
        rounds += 1;
        changed = false;
        for d in cs {
            let Some((a, b)) = p[d.i] else { continue };
            let cand = Some((a - d.c as i128, b + d.strict as i128));
            if cand > p[d.j] {
                p[d.j] = cand;
                changed = true;
            }
        }
    }
    // t_0 is fixed at 0: anything forcing it higher is a positive cycle
    // through t_0 (caught above) — double-check rather than trust it.
    if p[0] != Some((0, 0)) {
        return None;
    }
    let scale = n as i128 + 1;
    let ticks: Vec<i128> = p
        .iter()
        .map(|q| q.map(|(a, b)| a * scale + b))
        .collect::<Option<_>>()?;
    // The fixpoint is a lower-bound solution; it satisfies every upper
    // constraint iff the system is feasible. Verify exactly at ε = 1/scale
    // (cheap, and it is the argument in the module comment made executable).
    for d in cs {
        let lhs = ticks[d.i] - ticks[d.j];
        let rhs = d.c as i128 * scale;
        if lhs > rhs || (d.strict && lhs == rhs) {
            return None;
        }
    }
    Some((scale, ticks))
}

/// The earliest solution of `cs` over `n` event times as exact rationals
/// (see [`earliest_ticks`] for the implicit constraints and the meaning of
/// "earliest"), or `None` if infeasible.
pub fn earliest(n: usize, cs: &[Diff]) -> Option<Vec<Rational>> {
    let (scale, ticks) = earliest_ticks(n, cs)?;
    Some(ticks.into_iter().map(|t| Rational::new(t, scale)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i128, d: i128) -> Rational {
        Rational::new(n, d)
    }

    #[test]
    fn rational_normalises_and_orders() {
        assert_eq!(r(2, 4), r(-1, -2));
        assert_eq!(r(3, -6).num(), -1);
        assert_eq!(r(3, -6).den(), 2);
        assert!(r(1, 3) < r(1, 2));
        assert_eq!(r(1, 3) + r(1, 6), r(1, 2));
        assert_eq!(r(1, 3) - r(1, 2), r(-1, 6));
        assert_eq!(r(5, 2).cmp_int(2), Ordering::Greater);
        assert_eq!(r(4, 2).cmp_int(2), Ordering::Equal);
        assert_eq!(format!("{} {}", r(4, 2), r(-3, 6)), "2 -1/2");
    }

    #[test]
    fn non_strict_chain_is_exactly_least() {
        // t1 ≥ 2, t2 − t1 ≥ 3, t2 ≤ 10.
        let cs = [Diff::le(0, 1, -2), Diff::le(1, 2, -3), Diff::le(2, 0, 10)];
        let t = earliest(3, &cs).unwrap();
        assert_eq!(
            t,
            vec![Rational::ZERO, Rational::integer(2), Rational::integer(5)]
        );
        assert_eq!(first_violation(&t, &cs), None);
    }

    #[test]
    fn strict_chain_gets_slack_and_holds() {
        // Three distinct instants inside one open unit: 0 < t1 < t2 < t3 < 1.
        let cs = [
            Diff::lt(0, 1, 0),
            Diff::lt(1, 2, 0),
            Diff::lt(2, 3, 0),
            Diff::lt(3, 0, 1),
        ];
        let t = earliest(4, &cs).unwrap();
        assert_eq!(t, vec![Rational::ZERO, r(1, 5), r(2, 5), r(3, 5)]);
        assert_eq!(first_violation(&t, &cs), None);
    }

    #[test]
    fn infeasible_systems() {
        // Zero-weight strict cycle.
        assert!(earliest(2, &[Diff::lt(1, 0, 1), Diff::le(0, 1, -1)]).is_none());
        // Negative cycle.
        assert!(earliest(2, &[Diff::le(1, 0, 1), Diff::le(0, 1, -2)]).is_none());
        // t_0 forced above 0 (t_0 − t_1 ≥ 1 with t_1 ≥ 0).
        assert!(earliest(2, &[Diff::le(1, 0, -1)]).is_none());
        // Same non-strict cycle is feasible.
        let t = earliest(2, &[Diff::le(1, 0, 1), Diff::le(0, 1, -1)]).unwrap();
        assert_eq!(t[1], Rational::integer(1));
    }

    #[test]
    fn first_violation_names_the_constraint() {
        let cs = [Diff::le(1, 0, 5), Diff::lt(1, 0, 3), Diff::le(0, 1, -1)];
        let t = vec![Rational::ZERO, Rational::integer(3)];
        assert_eq!(first_violation(&t, &cs), Some(1));
        let t = vec![Rational::ZERO, r(5, 2)];
        assert_eq!(first_violation(&t, &cs), None);
    }
}
