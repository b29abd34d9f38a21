//! Durations with units, exactly: `30s`, `0.2ms`, `1500us`, `5m`, and
//! ranges `200ms..2s`. Parsed without floating point, so `0.2ms` is exactly
//! 200 µs; anything finer than a microsecond is refused.

use crate::time::{MS, Micros, SEC};

/// The units accepted, longest suffix first.
const UNITS: &[(&str, Micros)] = &[
    ("us", 1),
    ("µs", 1),
    ("ms", MS),
    ("s", SEC),
    ("m", 60 * SEC),
    ("h", 3600 * SEC),
];

/// Parses one duration (`30s`, `0.2ms`, `1.5 s`).
pub fn parse(text: &str) -> Result<Micros, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| {
            format!("{text:?} has no unit: write it as e.g. 30s, 200ms, 0.2ms or 150us")
        })?;
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    let scale = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, s)| *s)
        .ok_or_else(|| format!("{text:?}: unknown unit {unit:?} (allowed: us, ms, s, m, h)"))?;
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(format!("{text:?}: expected a number before the unit"));
    }
    if frac.contains('.') {
        return Err(format!("{text:?}: not a number"));
    }
    let whole: i128 = if int.is_empty() {
        0
    } else {
        int.parse::<i128>()
            .map_err(|_| format!("{text:?}: not a number"))?
    };
    let mut value = whole * scale as i128;
    let mut unit_part = scale as i128;
    for (k, d) in frac.char_indices() {
        let digit = d
            .to_digit(10)
            .ok_or_else(|| format!("{text:?}: not a number"))? as i128;
        if unit_part % 10 != 0 {
            if digit != 0 || frac[k..].chars().any(|c| c != '0') {
                return Err(format!(
                    "{text:?} is finer than a microsecond, the model's resolution"
                ));
            }
            break;
        }
        unit_part /= 10;
        value += digit * unit_part;
    }
    if value > i64::MAX as i128 / 4 {
        return Err(format!("{text:?} is too long"));
    }
    Ok(value as Micros)
}

/// Parses `A..B` (a range) or a single duration `A` (meaning `A..A`).
pub fn parse_range(text: &str) -> Result<(Micros, Micros), String> {
    match text.split_once("..") {
        Some((a, b)) => {
            let (a, b) = (parse(a)?, parse(b)?);
            if a > b {
                return Err(format!(
                    "{text:?}: the range is empty (its start is after its end)"
                ));
            }
            Ok((a, b))
        }
        None => {
            let a = parse(text)?;
            Ok((a, a))
        }
    }
}

/// A duration for people: `30 s`, `0.2 ms`, `1.5 s`, `150 µs`, exact.
pub fn show(us: Micros) -> String {
    let (neg, us) = if us < 0 { ("-", -us) } else { ("", us) };
    let (scale, unit) = if us >= SEC {
        (SEC, "s")
    } else if us >= MS {
        (MS, "ms")
    } else if us == 0 {
        return "0".into();
    } else {
        (1, "µs")
    };
    format!("{neg}{} {unit}", decimal(us as i128, scale as i128))
}

/// The exact decimal `n / scale` (scale a power of ten), trailing zeros dropped.
fn decimal(n: i128, scale: i128) -> String {
    let whole = n / scale;
    let mut frac = n % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let mut digits = String::new();
    let mut s = scale;
    while frac > 0 && s > 1 {
        s /= 10;
        digits.push(char::from(b'0' + (frac / s) as u8));
        frac %= s;
    }
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// An exact time in µs for people, to the nanosecond.
pub fn show_rational(r: crate::engine::solve::Rational) -> String {
    if r.den() == 1 {
        return show(r.num() as Micros);
    }
    let ns = (r.num() * 1000 + r.den() / 2) / r.den();
    let (neg, ns) = if ns < 0 { ("-", -ns) } else { ("", ns) };
    if ns >= 1_000_000 {
        format!("{neg}{} ms", decimal(ns, 1_000_000))
    } else {
        format!("{neg}{} µs", decimal(ns, 1000))
    }
}

/// A duration in the compact form the CLI takes back (`30s`, `0.2ms`).
pub fn arg(us: Micros) -> String {
    let (scale, unit) = if us.abs() >= SEC {
        (SEC, "s")
    } else if us.abs() >= MS {
        (MS, "ms")
    } else {
        (1, "us")
    };
    format!("{}{unit}", decimal(us as i128, scale as i128))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exactly() {
        assert_eq!(parse("30s"), Ok(30 * SEC));
        assert_eq!(parse("0.2ms"), Ok(200));
        assert_eq!(parse("1.5 s"), Ok(1_500_000));
        assert_eq!(parse("150us"), Ok(150));
        assert_eq!(parse("150µs"), Ok(150));
        assert_eq!(parse("5m"), Ok(300 * SEC));
        assert_eq!(parse(".5ms"), Ok(500));
        assert_eq!(parse("2.000ms"), Ok(2000));
        assert!(parse("0.0005ms").is_err());
        assert!(parse("30").is_err());
        assert!(parse("30x").is_err());
        assert!(parse("1.2.3s").is_err());
        assert!(parse("s").is_err());
        assert_eq!(parse_range("200ms..2s"), Ok((200 * MS, 2 * SEC)));
        assert_eq!(parse_range("5ms"), Ok((5 * MS, 5 * MS)));
        assert!(parse_range("2s..1s").is_err());
    }

    #[test]
    fn shows_exactly_and_round_trips() {
        assert_eq!(show(30 * SEC), "30 s");
        assert_eq!(show(200), "200 µs");
        assert_eq!(show(1_500), "1.5 ms");
        assert_eq!(show(30_000_001), "30.000001 s");
        assert_eq!(show(0), "0");
        for us in [1, 200, 1_500, 2 * SEC, 30_000_001, 302 * MS] {
            assert_eq!(parse(&arg(us)), Ok(us), "{}", arg(us));
        }
    }
}
