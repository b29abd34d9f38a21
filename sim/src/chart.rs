//! A sweep as a CSV table and as an SVG line chart: violation rate per
//! acquisition against the swept option, one line per invariant, with
//! each point's 95% interval as an error bar. The SVG is plain text with no
//! script or external resource, so any browser or document shows it.

use crate::math::ln;
use crate::summary::Summary;
use std::fmt::Write;

/// log10 by the portable logarithm, so the chart's bytes do not depend on
/// the platform's maths library.
fn lg(v: f64) -> f64 {
    ln(v) / std::f64::consts::LN_10
}

/// One row per point and invariant.
pub fn csv(s: &Summary) -> String {
    let param = s.sweep.as_deref().unwrap_or("");
    let mut out = String::from(
        "param,value,invariant,category,runs,acquisitions,violations,rate,ci_low,ci_high,first_seed\n",
    );
    for p in &s.points {
        for r in &p.invariants {
            let _ = writeln!(
                out,
                "{param},{},{},{},{},{},{},{},{},{},{}",
                p.value.as_deref().unwrap_or(""),
                r.invariant,
                r.category,
                p.runs,
                r.acquisitions,
                r.violations,
                r.rate,
                r.ci_low,
                r.ci_high,
                r.first_seed.map(|x| x.to_string()).unwrap_or_default()
            );
        }
    }
    out
}

fn colour(invariant: &str) -> &'static str {
    match invariant {
        "mutual_exclusion" => "#d62728",
        "ownership" => "#1f77b4",
        "no_lost_update" => "#ff7f0e",
        "token_monotonic" => "#9467bd",
        _ => "#2ca02c",
    }
}

fn unit(param: &str) -> &'static str {
    match param {
        "loss" => "probability per message",
        "renew-ratio" => "fraction of the TTL",
        "clients" | "acquisitions" | "instances" | "quorum" => "count",
        "drift-factor-ppm" | "clock-drift-ppm" => "parts per million",
        p if p.ends_with("-rate") => "per second",
        _ => "duration",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `1e-5` style label for a power of ten.
fn decade(e: i32) -> String {
    match e {
        0 => "1".into(),
        -1 => "0.1".into(),
        -2 => "0.01".into(),
        _ => format!("1e{e}"),
    }
}

/// The chart of a sweep summary.
pub fn svg(s: &Summary) -> String {
    const W: f64 = 960.0;
    const H: f64 = 600.0;
    const L: f64 = 90.0;
    const R: f64 = 230.0;
    const T: f64 = 70.0;
    const B: f64 = 80.0;
    let (pw, ph) = (W - L - R, H - T - B);
    let param = s.sweep.as_deref().unwrap_or("value");
    let xs: Vec<f64> = s
        .points
        .iter()
        .map(|p| {
            p.value
                .as_deref()
                .and_then(|v| {
                    // A duration (`5s`) is placed by its length in µs.
                    v.parse()
                        .ok()
                        .or_else(|| locklab_models::units::parse(v).ok().map(|us| us as f64))
                })
                .unwrap_or(0.0)
        })
        .collect();
    let (mut x0, mut x1) = (
        xs.iter().cloned().fold(f64::INFINITY, f64::min),
        xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    );
    if x1 > x0 {
        // Half a step of room on either side keeps the end points off the frame.
        let pad = (x1 - x0) / (2.0 * (xs.len() - 1).max(1) as f64);
        x0 -= pad;
        x1 += pad;
    } else {
        x0 -= 1.0;
        x1 += 1.0;
    }
    // Log scale over whole decades spanning every rate and interval end
    // above 0; a rate of 0 sits on the bottom edge.
    let positive = s
        .points
        .iter()
        .flat_map(|p| &p.invariants)
        .flat_map(|r| [r.rate, r.ci_low, r.ci_high])
        .filter(|v| *v > 0.0);
    let (lo, hi) = positive.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (mut e0, mut e1) = if lo.is_finite() {
        (lg(lo).floor() as i32, lg(hi).ceil() as i32)
    } else {
        (-6, 0)
    };
    if e1 <= e0 {
        e1 = e0 + 1;
    }
    e0 = e0.max(-15);
    let xp = |x: f64| L + (x - x0) / (x1 - x0) * pw;
    // The decades fill the plot but a lane at the bottom, where rates of 0
    // (no violation seen) sit: a log scale has no 0.
    const ZERO_LANE: f64 = 32.0;
    const GAP: f64 = 16.0;
    let zero_y = T + ph - ZERO_LANE / 2.0;
    let ye = |e: f64| T + (ph - ZERO_LANE - GAP) * (1.0 - (e - e0 as f64) / (e1 - e0) as f64);
    let yp = |v: f64| {
        if v > 0.0 {
            ye(lg(v).max(e0 as f64))
        } else {
            zero_y
        }
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{L}" y="28" font-size="18" font-weight="bold">{}: violations per acquisition against {}</text>"#,
        esc(&s.config.protocol),
        esc(param)
    );
    let _ = writeln!(
        o,
        r##"<text x="{L}" y="50" fill="#444">{} runs per point (seeds {} to {}), {}; bars: {}</text>"##,
        s.runs,
        s.seed,
        s.seed.wrapping_add(s.runs.saturating_sub(1)),
        clients_line(s),
        s.interval
    );
    // Horizontal grid, one line per decade.
    for e in e0..=e1 {
        let y = ye(e as f64);
        let _ = writeln!(
            o,
            r##"<line x1="{L}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            L + pw,
            L - 8.0,
            y + 4.0,
            decade(e)
        );
    }
    let _ = writeln!(
        o,
        r##"<line x1="{L}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#bbb" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" text-anchor="end">0</text>"##,
        T + ph - ZERO_LANE,
        L + pw,
        T + ph - ZERO_LANE,
        L - 8.0,
        zero_y + 4.0
    );
    // X ticks at the points (thinned when crowded).
    let every = xs.len().div_ceil(12).max(1);
    for (i, (x, p)) in xs.iter().zip(&s.points).enumerate() {
        if i % every != 0 && i + 1 != xs.len() {
            continue;
        }
        let px = xp(*x);
        let _ = writeln!(
            o,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#999"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            T + ph,
            T + ph + 5.0,
            T + ph + 20.0,
            esc(p.value.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(
        o,
        r##"<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{} ({})</text>"#,
        L + pw / 2.0,
        H - 35.0,
        esc(param),
        unit(param)
    );
    let _ = writeln!(
        o,
        r#"<text transform="translate(24 {:.1}) rotate(-90)" text-anchor="middle">violations per acquisition (log scale)</text>"#,
        T + ph / 2.0
    );
    let _ = writeln!(
        o,
        r##"<text x="{L}" y="{:.1}" fill="#666" font-size="11">A hollow point in the bottom lane (0) means no violation was seen; its bar reaches the interval's upper bound.</text>"##,
        H - 12.0
    );
    // One series per invariant; bars dodged sideways so they do not overlap.
    let k = s.points.first().map_or(0, |p| p.invariants.len());
    for j in 0..k {
        let name = &s.points[0].invariants[j].invariant;
        let c = colour(name);
        let dodge = (j as f64 - (k as f64 - 1.0) / 2.0) * 4.0;
        let mut line = String::new();
        for (x, p) in xs.iter().zip(&s.points) {
            let r = &p.invariants[j];
            let (px, py) = (xp(*x) + dodge, yp(r.rate));
            let _ = write!(
                line,
                "{}{px:.1},{py:.1}",
                if line.is_empty() { "" } else { " " }
            );
            let _ = writeln!(
                o,
                r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{c}" stroke-width="1.5" opacity="0.7"/>"#,
                yp(r.ci_low),
                yp(r.ci_high)
            );
            let fill = if r.violations > 0 { c } else { "white" };
            let _ = writeln!(
                o,
                r#"<circle cx="{px:.1}" cy="{py:.1}" r="3.5" fill="{fill}" stroke="{c}" stroke-width="1.5"/>"#
            );
        }
        let _ = writeln!(
            o,
            r#"<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2"/>"#
        );
        let total: u64 = s.points.iter().map(|p| p.invariants[j].violations).sum();
        let ly = T + 10.0 + j as f64 * 40.0;
        let lx = L + pw + 20.0;
        let _ = writeln!(
            o,
            r##"<line x1="{lx}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text><text x="{:.1}" y="{:.1}" fill="#666" font-size="11">{} violations over all points</text>"##,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            name,
            lx + 30.0,
            ly + 19.0,
            total
        );
    }
    o.push_str("</svg>\n");
    o
}

fn clients_line(s: &Summary) -> String {
    format!(
        "{} clients x {} acquisitions per run",
        s.config.clients, s.config.acquisitions
    )
}
