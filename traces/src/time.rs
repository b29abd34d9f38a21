//! Human-friendly time: every renderer prints times and durations through
//! [`show_ms`], so a trace reads `t=30.0012 s`, `+4.8 ms` or `480 µs`
//! whichever renderer drew it.

/// A time or duration given in milliseconds, with a unit that suits it:
/// `µs` under 1 ms, `ms` under 1 s, `s` above. Up to six significant
/// digits, trailing zeros trimmed: `0 s`, `480 µs`, `4.8 ms`, `30.0012 s`.
/// Deterministic: the same input always gives the same text.
pub fn show_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return if ms.is_nan() {
            "?".into()
        } else if ms > 0.0 {
            "∞".into()
        } else {
            "-∞".into()
        };
    }
    if ms == 0.0 {
        return "0 s".into();
    }
    let sign = if ms < 0.0 { "-" } else { "" };
    // Round to six significant digits first, so 999.9999 ms reads `1 s`.
    let p = ms.abs().log10().floor() as i32;
    let scale = 10f64.powi(5 - p);
    let a = (ms.abs() * scale).round() / scale;
    let (v, unit) = if a < 1.0 {
        (a * 1000.0, "µs")
    } else if a < 1000.0 {
        (a, "ms")
    } else {
        (a / 1000.0, "s")
    };
    format!("{sign}{} {unit}", sig(v, 6))
}

/// A duration with an explicit sign: `+4.8 ms`, `-1 s`, `+0 s`.
pub fn show_delta(ms: f64) -> String {
    let s = show_ms(ms);
    if s.starts_with('-') {
        s
    } else {
        format!("+{s}")
    }
}

/// A point in time: `t=0 s`, `t=30.0012 s`.
pub fn show_at(ms: f64) -> String {
    format!("t={}", show_ms(ms))
}

/// `v` (non-negative) with at most `digits` significant digits, trailing
/// zeros and a trailing point trimmed.
fn sig(v: f64, digits: i32) -> String {
    let whole = if v >= 1.0 {
        v.log10().floor() as i32 + 1
    } else {
        1
    };
    let decimals = (digits - whole).clamp(0, 9) as usize;
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

/// Whether the gap before step `k` (0-based index into `times`, the step
/// times in ms, with `times[0]` the initial time) is large next to the rest
/// of the trace: at least 1 s and at least ten times the median of the
/// non-zero gaps. Renderers use it to say "… 30 s pass …" between steps.
pub fn is_long_gap(gap: f64, gaps: &[f64]) -> bool {
    if gap < 1000.0 {
        return false;
    }
    let mut nz: Vec<f64> = gaps.iter().copied().filter(|g| *g > 0.0).collect();
    if nz.len() < 2 {
        return true;
    }
    nz.sort_by(f64::total_cmp);
    let median = nz[nz.len() / 2];
    gap >= 10.0 * median
}

/// The gaps between consecutive steps of a trace, in ms: entry `i` is the
/// time from step `i` to step `i + 1` (step 0 = the initial state).
pub fn gaps(t: &crate::format::Trace) -> Vec<f64> {
    let mut prev = t.initial.time;
    t.steps
        .iter()
        .map(|s| {
            let g = (s.time - prev).max(0.0);
            prev = s.time;
            g
        })
        .collect()
}

/// The gap before step `k` (1-based) when it is long enough to mention.
pub fn long_gap_before(t: &crate::format::Trace, k: usize) -> Option<f64> {
    let g = gaps(t);
    let gap = *g.get(k.checked_sub(1)?)?;
    is_long_gap(gap, &g).then_some(gap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(show_ms(0.0), "0 s");
        assert_eq!(show_ms(0.48), "480 µs");
        assert_eq!(show_ms(0.0005), "0.5 µs");
        assert_eq!(show_ms(4.8), "4.8 ms");
        assert_eq!(show_ms(999.5), "999.5 ms");
        assert_eq!(show_ms(999.99999), "1 s");
        assert_eq!(show_ms(0.0099), "9.9 µs");
        assert_eq!(show_ms(1000.0), "1 s");
        assert_eq!(show_ms(30001.2), "30.0012 s");
        assert_eq!(show_ms(30000.0), "30 s");
        assert_eq!(show_ms(1.0 / 3.0), "333.333 µs");
        assert_eq!(show_ms(-2500.0), "-2.5 s");
        assert_eq!(show_delta(4.8), "+4.8 ms");
        assert_eq!(show_delta(-4.8), "-4.8 ms");
        assert_eq!(show_at(30001.2), "t=30.0012 s");
        assert_eq!(show_at(0.0), "t=0 s");
    }

    #[test]
    fn long_gaps() {
        let g = [1.0, 2.0, 30000.0, 1.5];
        assert!(is_long_gap(30000.0, &g));
        assert!(!is_long_gap(2.0, &g));
        assert!(!is_long_gap(900.0, &[900.0, 1.0, 1.0]));
    }
}
