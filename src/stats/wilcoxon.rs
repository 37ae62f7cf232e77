//! Wilcoxon signed-rank test and the one-sample Hodges-Lehmann (Walsh-average) interval, for paired
//! differences such as the per-pair log ratios of an interleaved A/B run.

use super::descriptive::{median_of_sorted, order_stat};
use super::normal::{normal_quantile, normal_sf};
use super::rank::mid_ranks;
use super::{Method, ShiftEstimate, TestResult};

/// The largest number of non-zero differences for which the exact signed-rank distribution is used.
pub const EXACT_MAX_N: usize = 30;

/// Frequencies of `T+` (the sum of the ranks of positive differences) under the null for `n` untied,
/// non-zero differences: entry `t` counts the subsets of `{1, ..., n}` summing to `t`, for `t` in
/// `0..=n(n+1)/2`. They sum to `2^n`.
pub fn signed_rank_frequencies(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut f = vec![0.0; max + 1];
    f[0] = 1.0;
    for rank in 1..=n {
        for t in (rank..=rank * (rank + 1) / 2).rev() {
            f[t] += f[t - rank];
        }
    }
    f
}

fn signed_rank_cdf(n: usize) -> Vec<f64> {
    let total = 2f64.powi(n as i32);
    let mut acc = 0.0;
    signed_rank_frequencies(n)
        .iter()
        .map(|f| {
            acc += f;
            (acc / total).min(1.0)
        })
        .collect()
}

/// The two-sided Wilcoxon signed-rank test of "the differences `d` are symmetric about 0".
///
/// Zero differences are dropped (Wilcoxon's convention). The statistic is `T+`. The p-value is exact
/// when no zero was dropped, `|d|` has no ties and at most [`EXACT_MAX_N`] remain; otherwise it is the
/// normal approximation with variance `n(n+1)(2n+1)/24 - sum(t^3 - t)/48` and a continuity correction
/// of 1/2. With no non-zero difference the p-value is 1.
pub fn wilcoxon_signed_rank(d: &[f64]) -> TestResult {
    let nonzero: Vec<f64> = d.iter().copied().filter(|&v| v != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return TestResult {
            statistic: 0.0,
            p: 1.0,
            method: Method::Normal,
        };
    }
    let magnitudes: Vec<f64> = nonzero.iter().map(|v| v.abs()).collect();
    let (ranks, tie_term) = mid_ranks(&magnitudes);
    let t_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(v, _)| **v > 0.0)
        .map(|(_, r)| r)
        .sum();
    let mean = (n * (n + 1)) as f64 / 4.0;
    if tie_term == 0.0 && n == d.len() && n <= EXACT_MAX_N {
        let cdf = signed_rank_cdf(n);
        let t = t_plus.round() as usize;
        let lower = cdf[t];
        let upper = if t == 0 { 1.0 } else { 1.0 - cdf[t - 1] };
        let p = (2.0 * lower.min(upper)).min(1.0);
        return TestResult {
            statistic: t_plus,
            p,
            method: Method::Exact,
        };
    }
    let variance = (n * (n + 1) * (2 * n + 1)) as f64 / 24.0 - tie_term / 48.0;
    let p = if variance <= 0.0 {
        1.0
    } else {
        let distance = ((t_plus - mean).abs() - 0.5).max(0.0);
        (2.0 * normal_sf(distance / variance.sqrt())).min(1.0)
    };
    TestResult {
        statistic: t_plus,
        p,
        method: Method::Normal,
    }
}

/// The Hodges-Lehmann estimate of the centre of the paired differences `d` (the median of the
/// `n(n+1)/2` Walsh averages `(d_i + d_j)/2`, `i <= j`) with a `confidence` interval from inverting
/// the signed-rank distribution, and the signed-rank test.
///
/// The interval is `[W_(k), W_(N + 1 - k)]` over the sorted Walsh averages, where `k` is the smallest
/// `t` with `P(T+ <= t) >= (1 - confidence) / 2` (at least 1) for the exact distribution of `n = d.len()`
/// when `n <= EXACT_MAX_N`, else `floor(n(n+1)/4 + 1/2 - z sigma)`. Panics on an empty slice.
pub fn hodges_lehmann_paired(d: &[f64], confidence: f64) -> ShiftEstimate {
    let n = d.len();
    assert!(n > 0, "Hodges-Lehmann of an empty sample");
    let test = wilcoxon_signed_rank(d);
    let mut walsh: Vec<f64> = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    walsh.sort_by(|a, b| a.partial_cmp(b).expect("NaN in sample"));
    let count = walsh.len();
    let tail = (1.0 - confidence) / 2.0;
    let (k, achieved_confidence, ci_method) = if n <= EXACT_MAX_N {
        let cdf = signed_rank_cdf(n);
        let k = cdf.iter().position(|&c| c >= tail).unwrap_or(0).max(1);
        (k, 1.0 - 2.0 * cdf[k - 1], Method::Exact)
    } else {
        let mean = (n * (n + 1)) as f64 / 4.0;
        let sigma = ((n * (n + 1) * (2 * n + 1)) as f64 / 24.0).sqrt();
        let k = (mean + 0.5 - normal_quantile(1.0 - tail) * sigma)
            .floor()
            .max(1.0) as usize;
        let below = (k as f64 - 0.5 - mean) / sigma;
        (k, 1.0 - 2.0 * normal_sf(-below), Method::Normal)
    };
    let k = k.min(count.div_ceil(2));
    ShiftEstimate {
        estimate: median_of_sorted(&walsh),
        low: order_stat(&walsh, k),
        high: order_stat(&walsh, count + 1 - k),
        achieved_confidence,
        ci_method,
        test,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected p-values: scipy.stats.wilcoxon(d, alternative="two-sided", method="exact") or, where
    // noted, method="approx", correction=True, zero_method="wilcox" (scipy 1.17.1). Scipy reports
    // min(T+, T-) as its statistic; T+ below is n(n+1)/2 minus it where needed. Hodges-Lehmann
    // intervals: numpy.median of the Walsh averages and the order statistic k from a brute-force
    // enumeration of all 2^n sign patterns.

    const POS10: [f64; 10] = [
        0.052, 0.031, 0.078, -0.012, 0.064, 0.045, 0.089, 0.023, 0.057, 0.038,
    ];
    const MIXED8: [f64; 8] = [0.01, -0.02, 0.035, -0.041, 0.005, 0.027, -0.013, 0.018];
    const SIX: [f64; 6] = [0.11, 0.07, 0.13, 0.09, 0.15, 0.05];
    const TIES: [f64; 10] = [0.02, 0.02, -0.01, 0.03, 0.03, 0.03, -0.02, 0.04, 0.01, 0.05];
    const ZEROS: [f64; 10] = [
        0.0, 0.02, 0.031, -0.012, 0.044, 0.0, 0.057, 0.063, -0.005, 0.071,
    ];

    fn big() -> Vec<f64> {
        // Python: [((i*7919) % 6007)/10000.0 - 0.25 for i in range(40)]
        (0..40u64)
            .map(|i| ((i * 7919) % 6007) as f64 / 10000.0 - 0.25)
            .collect()
    }

    fn close(got: f64, want: f64, tol: f64) -> bool {
        (got - want).abs() <= tol * want.abs().max(1e-300) || (got - want).abs() < 1e-15
    }

    #[test]
    fn frequencies_match_enumeration() {
        assert_eq!(
            signed_rank_frequencies(4),
            [1., 1., 1., 2., 2., 2., 2., 2., 1., 1., 1.]
        );
        assert_eq!(signed_rank_frequencies(0), [1.0]);
        let total: f64 = signed_rank_frequencies(30).iter().sum();
        assert_eq!(total, 2f64.powi(30));
    }

    #[test]
    fn signed_rank_matches_scipy() {
        let check = |d: &[f64], t_plus: f64, p: f64, method: Method| {
            let got = wilcoxon_signed_rank(d);
            assert_eq!(got.statistic, t_plus, "{d:?}");
            assert_eq!(got.method, method, "{d:?}");
            assert!(close(got.p, p, 1e-9), "{d:?}: p = {}, want {p}", got.p);
        };
        check(&POS10, 54.0, 0.003_906_25, Method::Exact);
        check(&MIXED8, 20.0, 0.843_75, Method::Exact);
        check(&SIX, 21.0, 0.031_25, Method::Exact);
        check(&TIES, 49.5, 0.027_495_967_938_017_14, Method::Normal);
        check(&ZEROS, 33.0, 0.042_315_274_905_713_96, Method::Normal);
        check(&big(), 499.0, 0.234_221_415_590_626_8, Method::Normal);
        check(&[0.0, 0.0, 0.0], 0.0, 1.0, Method::Normal);
    }

    #[test]
    fn walsh_interval_matches_reference() {
        let check = |d: &[f64], est: f64, lo: f64, hi: f64, conf: Option<f64>| {
            let got = hodges_lehmann_paired(d, 0.95);
            assert!(
                close(got.estimate, est, 1e-12),
                "estimate {} want {est}",
                got.estimate
            );
            assert!(close(got.low, lo, 1e-12), "low {} want {lo}", got.low);
            assert!(close(got.high, hi, 1e-12), "high {} want {hi}", got.high);
            if let Some(conf) = conf {
                assert!(
                    close(got.achieved_confidence, conf, 1e-12),
                    "{}",
                    got.achieved_confidence
                );
            }
        };
        // n = 10: k = 9 of 55 Walsh averages, coverage 1 - 2 * 10/1024.
        check(&POS10, 0.0475, 0.026, 0.067, Some(0.951_171_875));
        check(&MIXED8, 0.004_25, -0.02, 0.0265, Some(0.960_937_5));
        // n = 6: k = 1, the interval spans all Walsh averages.
        check(&SIX, 0.1, 0.05, 0.15, Some(0.968_75));
        check(&ZEROS, 0.0285, 0.0, 0.051, Some(0.951_171_875));
        // n = 40: normal k = floor(410 + 0.5 - 1.959964 * sqrt(5535)) = 264 of 820.
        check(&big(), 0.0383, -0.0174, 0.093_25, None);
    }
}
