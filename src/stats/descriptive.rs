//! Medians and the distribution-free confidence interval of a median.

/// The median of `xs` (the mean of the two middle values for an even count).
///
/// Panics on an empty slice or a NaN: callers validate their samples first.
pub fn median(xs: &[f64]) -> f64 {
    assert!(!xs.is_empty(), "median of an empty sample");
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("NaN in sample"));
    median_of_sorted(&v)
}

/// The median of an already sorted, non-empty slice.
pub(crate) fn median_of_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The value `x` at 1-based order statistic `k` of a sorted slice.
pub(crate) fn order_stat(sorted: &[f64], k: usize) -> f64 {
    sorted[k - 1]
}

/// The confidence interval of the median from order statistics: `[x_(k), x_(n+1-k)]` with the largest
/// `k >= 1` such that `P(Binomial(n, 1/2) <= k - 1) <= (1 - confidence) / 2`.
///
/// Returns `(low, high, achieved_confidence)`, where the achieved confidence is
/// `1 - 2 P(Binomial(n, 1/2) <= k - 1)`. With too few values for the requested level, `k = 1` and the
/// interval is the sample range. Panics on an empty slice.
pub fn median_ci(xs: &[f64], confidence: f64) -> (f64, f64, f64) {
    assert!(!xs.is_empty(), "median CI of an empty sample");
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("NaN in sample"));
    let n = v.len();
    let tail = (1.0 - confidence) / 2.0;
    let total = 2f64.powi(n as i32);
    // cdf[j] = P(Binomial(n, 1/2) <= j), from binomial coefficients in f64.
    let mut cdf = Vec::with_capacity(n);
    let (mut coef, mut acc) = (1.0_f64, 0.0_f64);
    for j in 0..n {
        acc += coef / total;
        cdf.push(acc);
        coef = coef * (n - j) as f64 / (j + 1) as f64;
    }
    // The median is below x_(k) when at most k - 1 values are below it: probability cdf[k - 1].
    let k = (1..=n.div_ceil(2))
        .filter(|&k| cdf[k - 1] <= tail)
        .max()
        .unwrap_or(1);
    let miss = cdf[k - 1];
    (
        order_stat(&v, k),
        order_stat(&v, n + 1 - k),
        1.0 - 2.0 * miss,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_cases() {
        let check = |xs: &[f64], want: f64| assert_eq!(median(xs), want, "{xs:?}");
        check(&[3.0], 3.0);
        check(&[3.0, 1.0], 2.0);
        check(&[5.0, 1.0, 3.0], 3.0);
        check(&[4.0, 1.0, 3.0, 2.0], 2.5);
        check(&[-1.0, -1.0, 7.0, 7.0, 7.0], 7.0);
    }

    #[test]
    fn median_ci_cases() {
        // Expected k and coverage from scipy (`from scipy.stats import binom`):
        //   k = largest k with binom.cdf(k-1, n, .5) <= .025 (else 1); coverage = 1 - 2*binom.cdf(k-1, n, .5)
        // n=6: binom.cdf(0,6,.5)=0.015625, cdf(1)=0.109375 -> k=1, coverage 0.96875
        // n=10: binom.cdf(1,10,.5)=0.0107421875, cdf(2)=0.0546875 -> k=2, coverage 0.978515625
        // n=20: binom.cdf(5,20,.5)=0.020694732666015625, cdf(6)=0.057659149169921875 -> k=6,
        //       coverage 1-2*0.020694732666015625 = 0.95861053466796875
        // n=3: binom.cdf(0,3,.5)=0.125 > .025 -> k=1 (the whole range), coverage 0.75
        let check = |n: usize, lo: f64, hi: f64, coverage: f64| {
            let xs: Vec<f64> = (1..=n).rev().map(|i| i as f64).collect();
            let (l, h, c) = median_ci(&xs, 0.95);
            assert_eq!((l, h), (lo, hi), "n={n}");
            assert!(
                (c - coverage).abs() < 1e-12,
                "n={n}: coverage {c} want {coverage}"
            );
        };
        check(6, 1.0, 6.0, 0.96875);
        check(10, 2.0, 9.0, 0.978515625);
        check(20, 6.0, 15.0, 0.958_610_534_667_968_8);
        check(3, 1.0, 3.0, 0.75);
    }
}
