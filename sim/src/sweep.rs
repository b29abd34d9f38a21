//! Sweeps: one option varied over a range, the same seeds at every point
//! (common random numbers, so the curve moves with the option and not with
//! the luck of the draw).

use crate::config::{Kind, SimConfig, applies, option, sweepable};
use locklab_models::units;

/// `PARAM=START..END:STEP` or `PARAM=V1,V2,...`, expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    pub param: String,
    /// The values, as text exactly as they will be set and printed.
    pub values: Vec<String>,
}

/// Most points one sweep may have.
pub const MAX_POINTS: usize = 200;

/// A decimal number as an integer count of `10^-scale`.
fn decimal(s: &str) -> Option<(i128, u32)> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 12
        || frac.len() > 9
    {
        return None;
    }
    let mut v: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        v = v * 10 + (b - b'0') as i128;
    }
    Some((if neg { -v } else { v }, frac.len() as u32))
}

fn rescale(v: i128, from: u32, to: u32) -> i128 {
    v * 10i128.pow(to - from)
}

fn text(v: i128, scale: u32) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    if scale == 0 {
        return format!("{sign}{a}");
    }
    let p = 10u128.pow(scale);
    format!("{sign}{}.{:0width$}", a / p, a % p, width = scale as usize)
}

impl Sweep {
    /// Parses and expands a sweep; the message says what is wrong and what
    /// is allowed.
    pub fn parse(spec: &str) -> Result<Sweep, SweepError> {
        let (param, range) = spec.split_once('=').ok_or_else(|| {
            SweepError::Syntax(format!(
                "--sweep {spec:?}: expected PARAM=START..END:STEP (for example ttl=5s..60s:5s) or PARAM=V1,V2,..."
            ))
        })?;
        let param = param.trim();
        if !sweepable().contains(&param) {
            return Err(SweepError::UnknownParam(param.to_string()));
        }
        let bad = |why: &str| SweepError::Syntax(format!("--sweep {spec:?}: {why}"));
        let is_duration = option(param).is_some_and(|o| o.kind == Kind::Duration);
        let values = if let Some((a, rest)) = range.split_once("..")
            && is_duration
        {
            let (b, step) = rest
                .split_once(':')
                .ok_or_else(|| bad("a range needs a step: START..END:STEP"))?;
            let dur = |s: &str| units::parse(s).map_err(|e| bad(&e));
            let (a, b, step) = (dur(a)?, dur(b)?, dur(step)?);
            if step <= 0 {
                return Err(bad("the step must be above 0"));
            }
            if b < a {
                return Err(bad("the end is below the start"));
            }
            let n = (b - a) / step + 1;
            if n > MAX_POINTS as i64 {
                return Err(bad(&format!(
                    "{n} points; at most {MAX_POINTS} (use a larger step)"
                )));
            }
            (0..n).map(|k| units::arg(a + k * step)).collect()
        } else if let Some((a, rest)) = range.split_once("..") {
            let (b, step) = rest
                .split_once(':')
                .ok_or_else(|| bad("a range needs a step: START..END:STEP"))?;
            let num =
                |s: &str| decimal(s).ok_or_else(|| bad(&format!("{s:?} is not a decimal number")));
            let (a, b, step) = (num(a)?, num(b)?, num(step)?);
            let scale = a.1.max(b.1).max(step.1);
            let (a, b, step) = (
                rescale(a.0, a.1, scale),
                rescale(b.0, b.1, scale),
                rescale(step.0, step.1, scale),
            );
            if step <= 0 {
                return Err(bad("the step must be above 0"));
            }
            if b < a {
                return Err(bad("the end is below the start"));
            }
            let n = (b - a) / step + 1;
            if n > MAX_POINTS as i128 {
                return Err(bad(&format!(
                    "{n} points; at most {MAX_POINTS} (use a larger step)"
                )));
            }
            (0..n).map(|k| text(a + k * step, scale)).collect()
        } else {
            let v: Vec<String> = range
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if v.is_empty() {
                return Err(bad("no values"));
            }
            if v.len() > MAX_POINTS {
                return Err(bad(&format!("at most {MAX_POINTS} values")));
            }
            v
        };
        Ok(Sweep {
            param: param.to_string(),
            values,
        })
    }

    /// The configuration at each point, every one checked before anything
    /// runs.
    pub fn configs(&self, base: &SimConfig) -> Result<Vec<SimConfig>, String> {
        let proto = base.proto()?;
        applies(&self.param, proto).map_err(|e| format!("--sweep {}: {e}", self.param))?;
        self.values
            .iter()
            .map(|v| {
                let mut c = base.clone();
                c.set(&self.param, v)
                    .and_then(|_| c.validate())
                    .map_err(|e| format!("--sweep at {}={v}: {e}", self.param))?;
                Ok(c)
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepError {
    /// The parameter is not one a sweep can vary (the CLI suggests names).
    UnknownParam(String),
    Syntax(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_exactly() {
        let s = Sweep::parse("ttl=5s..60s:5s").unwrap();
        assert_eq!(s.values.len(), 12);
        assert_eq!(s.values[0], "5s");
        assert_eq!(s.values[11], "60s");
        let s = Sweep::parse("latency-p99=1ms..2ms:0.5ms").unwrap();
        assert_eq!(s.values, ["1ms", "1.5ms", "2ms"]);
        let s = Sweep::parse("loss=0..0.0003:0.0001").unwrap();
        assert_eq!(s.values, ["0.0000", "0.0001", "0.0002", "0.0003"]);
        let s = Sweep::parse("renew-ratio=0.2..0.5:0.1").unwrap();
        assert_eq!(s.values, ["0.2", "0.3", "0.4", "0.5"]);
        let s = Sweep::parse("instances=3,5,7").unwrap();
        assert_eq!(s.values, ["3", "5", "7"]);
    }

    #[test]
    fn bad_sweeps_are_refused() {
        assert_eq!(
            Sweep::parse("tll=1..2:1"),
            Err(SweepError::UnknownParam("tll".into()))
        );
        assert!(Sweep::parse("ttl=5s..1s:1s").is_err());
        assert!(Sweep::parse("ttl=1s..5s:0s").is_err());
        assert!(Sweep::parse("ttl=1s..5s").is_err());
        assert!(Sweep::parse("ttl=1..5:1").is_err());
        assert!(Sweep::parse("ttl").is_err());
        assert!(Sweep::parse("ttl=1ms..100s:1ms").is_err());
        assert!(Sweep::parse("clients=1..100000:1").is_err());
        let base = SimConfig::defaults("watchdog");
        let e = Sweep::parse("pause-p99=5ms..15ms:10ms")
            .unwrap()
            .configs(&base)
            .unwrap_err();
        assert!(e.contains("below --pause-p50"), "{e}");
        let e = Sweep::parse("instances=3,5")
            .unwrap()
            .configs(&base)
            .unwrap_err();
        assert!(e.contains("does not apply to watchdog"), "{e}");
        let e = Sweep::parse("ttl=1.5,2")
            .unwrap()
            .configs(&base)
            .unwrap_err();
        assert!(e.contains("no unit"), "{e}");
    }
}
