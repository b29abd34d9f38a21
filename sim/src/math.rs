//! Logarithm, exponential and the normal quantile from `+ - * /` and
//! `sqrt` only.
//!
//! IEEE 754 fixes the result of those five operations bit for bit, but not
//! of `ln` or `exp`: `f64::ln` calls the platform's maths library, whose last
//! bits differ between libm versions and CPUs. A sample one bit off can round
//! a duration to a different millisecond and send a run elsewhere, so the
//! simulator computes its own (accurate to about 1e-15, which is plenty for
//! sampling) and the same seed gives the same bytes on every machine. Rust
//! never fuses a multiply and an add on its own, so the order written here is
//! the order computed.

const LN2: f64 = std::f64::consts::LN_2;
// ln 2 split so that `k * LN2_HI` is exact for |k| < 2^11 (fdlibm's constants).
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
const SQRT_HALF: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// Natural logarithm of a finite `x > 0`.
pub fn ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    // x = m * 2^e with m in [sqrt(1/2), sqrt(2)).
    let (mut m, mut e) = frexp(x);
    if m < SQRT_HALF {
        m *= 2.0;
        e -= 1;
    }
    // ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172: the odd series
    // converges to machine precision within eleven terms.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut sum = 0.0;
    for c in ODD_RECIPROCALS.iter().rev() {
        sum = sum * s2 + c;
    }
    let e = e as f64;
    e * LN2_HI + (e * LN2_LO + 2.0 * s * sum)
}

/// `1/(2k+1)` for k = 0..11: the atanh series' coefficients.
const ODD_RECIPROCALS: [f64; 12] = {
    let mut a = [0.0; 12];
    let mut k = 0;
    while k < 12 {
        a[k] = 1.0 / (2 * k + 1) as f64;
        k += 1;
    }
    a
};

/// `1/n!` for n = 0..5: the exponential's Taylor coefficients.
const INV_FACTORIALS: [f64; 6] = {
    let mut a = [1.0; 6];
    let mut n = 1;
    while n < 6 {
        a[n] = a[n - 1] / n as f64;
        n += 1;
    }
    a
};

/// `x = m * 2^e` with `m` in `[0.5, 1)`, for finite positive `x`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * (1u64 << 54) as f64);
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, exp - 1022)
}

/// `e^x`, saturating to 0 below -700 and to `f64::MAX` above 700.
pub fn exp(x: f64) -> f64 {
    if x < -700.0 {
        return 0.0;
    }
    if x > 700.0 {
        return f64::MAX;
    }
    // x = (64n + j) ln2/64 + r with |r| <= ln2/128, so
    // e^x = 2^n * 2^(j/64) * e^r, and e^r's series is exact to machine
    // precision by its r^5 term. Rounding to nearest by truncating a
    // shifted value is exact and needs no libm call.
    let q = x * (64.0 / LN2);
    let k = (if q < 0.0 { q - 0.5 } else { q + 0.5 }) as i32;
    let kf = k as f64;
    let r = (x - kf * LN2_64_HI) - kf * LN2_64_LO;
    let mut sum = 0.0;
    for c in INV_FACTORIALS.iter().rev() {
        sum = sum * r + c;
    }
    sum * f64::from_bits(EXP2_64[(k & 63) as usize]) * pow2(k >> 6)
}

/// ln2/64 split so that `k * LN2_64_HI` is exact for |k| < 2^21.
const LN2_64_HI: f64 = f64::from_bits(0x3f862e42ff000000);
const LN2_64_LO: f64 = -6.563_929_801_064_195e-13;

/// `2^(j/64)` for j = 0..63, correctly rounded (the bits of the nearest
/// doubles, computed once with 60-digit decimal arithmetic).
const EXP2_64: [u64; 64] = [
    0x3ff0000000000000,
    0x3ff02c9a3e778061,
    0x3ff059b0d3158574,
    0x3ff0874518759bc8,
    0x3ff0b5586cf9890f,
    0x3ff0e3ec32d3d1a2,
    0x3ff11301d0125b51,
    0x3ff1429aaea92de0,
    0x3ff172b83c7d517b,
    0x3ff1a35beb6fcb75,
    0x3ff1d4873168b9aa,
    0x3ff2063b88628cd6,
    0x3ff2387a6e756238,
    0x3ff26b4565e27cdd,
    0x3ff29e9df51fdee1,
    0x3ff2d285a6e4030b,
    0x3ff306fe0a31b715,
    0x3ff33c08b26416ff,
    0x3ff371a7373aa9cb,
    0x3ff3a7db34e59ff7,
    0x3ff3dea64c123422,
    0x3ff4160a21f72e2a,
    0x3ff44e086061892d,
    0x3ff486a2b5c13cd0,
    0x3ff4bfdad5362a27,
    0x3ff4f9b2769d2ca7,
    0x3ff5342b569d4f82,
    0x3ff56f4736b527da,
    0x3ff5ab07dd485429,
    0x3ff5e76f15ad2148,
    0x3ff6247eb03a5585,
    0x3ff6623882552225,
    0x3ff6a09e667f3bcd,
    0x3ff6dfb23c651a2f,
    0x3ff71f75e8ec5f74,
    0x3ff75feb564267c9,
    0x3ff7a11473eb0187,
    0x3ff7e2f336cf4e62,
    0x3ff82589994cce13,
    0x3ff868d99b4492ed,
    0x3ff8ace5422aa0db,
    0x3ff8f1ae99157736,
    0x3ff93737b0cdc5e5,
    0x3ff97d829fde4e50,
    0x3ff9c49182a3f090,
    0x3ffa0c667b5de565,
    0x3ffa5503b23e255d,
    0x3ffa9e6b5579fdbf,
    0x3ffae89f995ad3ad,
    0x3ffb33a2b84f15fb,
    0x3ffb7f76f2fb5e47,
    0x3ffbcc1e904bc1d2,
    0x3ffc199bdd85529c,
    0x3ffc67f12e57d14b,
    0x3ffcb720dcef9069,
    0x3ffd072d4a07897c,
    0x3ffd5818dcfba487,
    0x3ffda9e603db3285,
    0x3ffdfc97337b9b5f,
    0x3ffe502ee78b3ff6,
    0x3ffea4afa2a490da,
    0x3ffefa1bee615a27,
    0x3fff50765b6e4540,
    0x3fffa7c1819e90d8,
];

/// `2^k` for `k <= 1023`, exactly (0 below the subnormals).
fn pow2(k: i32) -> f64 {
    if k < -1074 {
        return 0.0;
    }
    if k < -1022 {
        return pow2(k + 100) * pow2(-100);
    }
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// The standard normal quantile `Φ⁻¹(p)` for `0 < p < 1` (Acklam's rational
/// approximation, relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    const LOW: f64 = 0.02425;
    if p < LOW {
        tail((-2.0 * ln(p)).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * ln(1.0 - p)).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The 0.99 quantile of the standard normal distribution.
pub const Z99: f64 = 2.326_347_874_040_841;
/// The 0.975 quantile: a two-sided 95% interval.
pub const Z975: f64 = 1.959_963_984_540_054;

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn ln_and_exp_agree_with_the_platform_to_many_digits() {
        for x in [
            1e-300, 1e-10, 0.001, 0.5, 0.7, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e200,
        ] {
            assert!(
                close(ln(x), x.ln(), 1e-14) || (x == 1.0 && ln(x) == 0.0),
                "ln {x}"
            );
        }
        for x in [-700.0, -50.0, -1.0, -1e-9, 0.0, 0.3, 1.0, 2.5, 40.0, 700.0] {
            assert!(
                close(exp(x), x.exp(), 1e-14),
                "exp {x}: {} vs {}",
                exp(x),
                x.exp()
            );
        }
        assert_eq!(
            ln(f64::MIN_POSITIVE / 8.0).round(),
            (f64::MIN_POSITIVE / 8.0).ln().round()
        );
    }

    #[test]
    fn ln_and_exp_stay_within_a_few_ulps_everywhere() {
        let mut x = -700.0;
        while x < 700.0 {
            assert!(close(exp(x), x.exp(), 4e-15), "exp {x}");
            let y = exp(x);
            if y > 0.0 && y.is_finite() {
                assert!((ln(y) - x).abs() <= 4e-15 * x.abs().max(1.0), "ln(exp {x})");
            }
            x += 0.3701;
        }
    }

    #[test]
    fn normal_quantile_matches_known_values() {
        assert!(normal_quantile(0.5).abs() < 1e-12);
        assert!(close(normal_quantile(0.99), Z99, 1e-8));
        assert!(close(normal_quantile(0.975), Z975, 1e-8));
        assert!(close(normal_quantile(0.01), -Z99, 1e-8));
        assert!(close(normal_quantile(1e-9), -5.997807015, 1e-7));
    }
}
