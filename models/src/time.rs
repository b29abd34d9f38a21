//! Time as the world sees it: exact, dense, in microseconds.
//!
//! The discrete world never holds a time. It holds *clock handles* ([`Clk`]):
//! each names a clock that measures the real time elapsed since some event
//! (a message was sent, a key was set, a timer was armed). Which values the
//! clocks may take is the business of an engine: the zone engine keeps a
//! zone over them (every real-valued timing at once), the concrete engine
//! keeps one time per clock (the simulator, the replayer, trace validation).
//!
//! A rule that needs time does one of three things, through [`TimeCtx`]:
//!
//! * **arm a clock**: `reset()` gives a fresh handle that reads 0 now;
//!   `copy(c)` a fresh handle that reads what `c` reads;
//! * **ask a timing question** at the instant of the step: `ask(c, b)` is
//!   "does `c` read at most `b` now?" (a Redis key is live while its age is
//!   at most its TTL; a Redlock validity is still positive while its elapsed
//!   time is below a bound). The zone engine answers both ways where the
//!   zone allows both, and keeps the constraint each answer implies; the
//!   concrete engine reads the clock. A question a node answers with its
//!   own clock (`ask_band`) has a band of real times in which either answer
//!   is possible, because that clock's rate may drift (`--clock-drift`);
//!   there the concrete engine takes the answer it is given (a trace
//!   records it) or, given none, the answer an exact clock would give;
//! * nothing else: when a step may or must happen is declared apart from
//!   the rules, as a *window* per pending event (see `model::windows`).

use serde::{Deserialize, Serialize};

/// A duration or a constant of the model, in microseconds.
pub type Micros = i64;

/// Microseconds in one millisecond and one second.
pub const MS: Micros = 1_000;
pub const SEC: Micros = 1_000_000;

/// A clock of the world: the real time elapsed since the event that reset
/// it. Handles are positions in the state's clock layout (0 is the
/// reference clock, which always reads 0, and never appears in a world).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Clk(pub u8);

/// A fresh clock made by a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fresh {
    /// Reads 0 at the step.
    Zero,
    /// Reads what this clock reads.
    Copy(Clk),
}

/// A timing question asked during a step, and the answer taken: "does
/// `clk` read at most `bound` (less than `bound` when `strict`)?" `yes`
/// needs the real time `clk ≤ hi` (`< hi`), `no` needs `clk > lo`
/// (`≥ lo`). For a question on real time `lo = bound = hi`, so the answers
/// are complements; for a node's own clock, whose rate may drift, `[lo,
/// hi]` is the band of real times its reading of `bound` may stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    pub clk: Clk,
    pub bound: Micros,
    pub lo: Micros,
    pub hi: Micros,
    pub strict: bool,
    pub yes: bool,
    /// A condition of the step rather than a question: only "yes" is
    /// possible (`TimeCtx::require`), so the engines never try "no".
    pub forced: bool,
}

impl Ask {
    /// Whether the answer taken is possible when `clk` reads `x` (real time).
    pub fn possible_at(&self, x: crate::engine::solve::Rational) -> bool {
        use crate::engine::solve::Rational;
        match (self.yes, self.strict) {
            (true, false) => x <= Rational::integer(self.hi),
            (true, true) => x < Rational::integer(self.hi),
            (false, false) => x > Rational::integer(self.lo),
            (false, true) => x >= Rational::integer(self.lo),
        }
    }
}

/// How a step's timing questions are answered.
pub enum Answers<'a> {
    /// Symbolic: answers follow `script`, then "yes"; the engine explores
    /// every answer sequence the zone allows.
    Script(&'a [bool]),
    /// Concrete: each clock's value now, by handle (index 0 unused), and
    /// the answers given for the step (a trace's record): the answer to
    /// question `i` is `given[i]` if there is one, else what an exact clock
    /// reads. The engine then checks every answer against the values.
    Values(&'a [crate::engine::solve::Rational], &'a [bool]),
}

/// What a step does to time: the clocks it arms and the questions it asks.
pub struct TimeCtx<'a> {
    /// Clocks in the layout before the step: fresh handles come after.
    base: u8,
    pub fresh: Vec<Fresh>,
    pub asks: Vec<Ask>,
    answers: Answers<'a>,
}

impl<'a> TimeCtx<'a> {
    pub fn new(base: usize, answers: Answers<'a>) -> TimeCtx<'a> {
        TimeCtx {
            base: base as u8,
            fresh: Vec::new(),
            asks: Vec::new(),
            answers,
        }
    }

    /// A context for a step whose time does not matter (no questions
    /// expected; fresh clocks are still handed out).
    pub fn blind() -> TimeCtx<'static> {
        TimeCtx::new(0, Answers::Script(&[]))
    }

    /// Clocks in the layout before the step.
    pub fn base(&self) -> usize {
        self.base as usize
    }

    /// A fresh clock reading 0 now.
    pub fn reset(&mut self) -> Clk {
        self.fresh.push(Fresh::Zero);
        Clk(self.base + self.fresh.len() as u8)
    }

    /// A fresh clock reading what `c` reads.
    pub fn copy(&mut self, c: Clk) -> Clk {
        self.fresh.push(Fresh::Copy(c));
        Clk(self.base + self.fresh.len() as u8)
    }

    /// Does `clk` read at most `bound` now (`strict`: less than `bound`)?
    /// A question on real time.
    pub fn ask(&mut self, clk: Clk, bound: Micros, strict: bool) -> bool {
        self.ask_band(clk, bound, (bound, bound), strict)
    }

    /// Does a node's own clock, measuring what `clk` measures, read at most
    /// `bound` now? `band` = `(lo, hi)`: the real times that reading may
    /// stand for (see [`Ask`]), e.g. from `Params::band`.
    pub fn ask_band(
        &mut self,
        clk: Clk,
        bound: Micros,
        band: (Micros, Micros),
        strict: bool,
    ) -> bool {
        let i = self.asks.len();
        let yes = match &self.answers {
            Answers::Script(s) => s.get(i).copied().unwrap_or(true),
            Answers::Values(v, given) => given
                .get(i)
                .copied()
                .unwrap_or_else(|| self.exact(v, clk, bound, strict)),
        };
        self.asks.push(Ask {
            clk,
            bound,
            lo: band.0,
            hi: band.1,
            strict,
            yes,
            forced: false,
        });
        yes
    }

    /// A condition the step needs: `clk` reads at most `bound` now. Unlike
    /// [`TimeCtx::ask`], "no" is never explored: where the zone cannot meet
    /// the condition, the step is not possible (the zone engine drops that
    /// successor; the concrete engine rejects a time that breaks it).
    pub fn require(&mut self, clk: Clk, bound: Micros) {
        self.asks.push(Ask {
            clk,
            bound,
            lo: bound,
            hi: bound,
            strict: false,
            yes: true,
            forced: true,
        });
    }

    /// For an event's text: how the last question's answer came about when
    /// it is not what an exact clock gives (concrete engine only): a "no"
    /// before the bound is reached in real time means the asking node's
    /// clock runs fast, a "yes" past it that it runs slow. Empty otherwise.
    pub fn drift_note(&self) -> &'static str {
        let (Answers::Values(v, _), Some(a)) = (&self.answers, self.asks.last()) else {
            return "";
        };
        match (self.exact(v, a.clk, a.bound, a.strict), a.yes) {
            (true, false) => " (its clock runs fast)",
            (false, true) => " (its clock runs slow)",
            _ => "",
        }
    }

    /// The answer an exact clock gives: does `clk` read at most `bound`
    /// (less than, when `strict`)?
    fn exact(
        &self,
        v: &[crate::engine::solve::Rational],
        clk: Clk,
        bound: Micros,
        strict: bool,
    ) -> bool {
        let x = self.value(v, clk);
        let b = crate::engine::solve::Rational::integer(bound);
        if strict { x < b } else { x <= b }
    }

    /// What `clk` reads now, exactly, when the step is taken at a concrete
    /// time (building or replaying a trace); `None` in the zone search.
    pub fn reading(&self, clk: Clk) -> Option<crate::engine::solve::Rational> {
        match &self.answers {
            Answers::Values(v, _) => Some(self.value(v, clk)),
            Answers::Script(_) => None,
        }
    }

    /// What `clk` reads now, in the concrete engine.
    pub fn value(
        &self,
        v: &[crate::engine::solve::Rational],
        clk: Clk,
    ) -> crate::engine::solve::Rational {
        let i = clk.0 as usize;
        if i <= self.base as usize {
            return v[i];
        }
        match self.fresh[i - self.base as usize - 1] {
            Fresh::Zero => crate::engine::solve::Rational::ZERO,
            Fresh::Copy(c) => self.value(v, c),
        }
    }
}
