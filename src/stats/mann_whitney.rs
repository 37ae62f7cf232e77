//! Mann-Whitney U test and the two-sample Hodges-Lehmann shift with its inverted-U confidence interval.

use super::descriptive::{median_of_sorted, order_stat};
use super::normal::{normal_quantile, normal_sf};
use super::rank::mid_ranks;
use super::{Method, ShiftEstimate, TestResult};

/// The largest sample size (per side) for which the exact U distribution is used.
pub const EXACT_MAX_N: usize = 50;

/// Frequencies of `U = #{(i, j) : x_i > y_j}` under the null for sample sizes `n` and `m` without ties;
/// entry `u` counts the orderings with `U = u`, for `u` in `0..=n*m`. They sum to `C(n + m, n)`.
///
/// Dynamic programme on the largest of the `n + m` values: if it comes from `x` it beats all `m` values
/// of `y`, so `f(n, m, u) = f(n - 1, m, u - m) + f(n, m - 1, u)`. Counts are `f64`, exact up to 2^53
/// and relatively exact to rounding beyond.
pub fn u_frequencies(n: usize, m: usize) -> Vec<f64> {
    // prev[j] = f(i - 1, j, .); the row for i = 0 is U = 0 with frequency 1.
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
    for i in 1..=n {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        cur.push(vec![1.0]);
        for j in 1..=m {
            let mut f = vec![0.0; i * j + 1];
            for (u, &c) in prev[j].iter().enumerate() {
                f[u + j] += c;
            }
            for (u, &c) in cur[j - 1].iter().enumerate() {
                f[u] += c;
            }
            cur.push(f);
        }
        prev = cur;
    }
    prev.swap_remove(m)
}

/// The null CDF `P(U <= u)` for every `u` in `0..=n*m`.
fn u_cdf(n: usize, m: usize) -> Vec<f64> {
    let freq = u_frequencies(n, m);
    let total: f64 = freq.iter().sum();
    let mut acc = 0.0;
    freq.iter()
        .map(|f| {
            acc += f;
            (acc / total).min(1.0)
        })
        .collect()
}

/// The two-sided Mann-Whitney U test of `x` against `y`.
///
/// The statistic is `U = #{x_i > y_j} + #{x_i = y_j} / 2`. The p-value is exact (from
/// [`u_frequencies`]) when there are no ties and both samples have at most [`EXACT_MAX_N`] values;
/// otherwise it is the normal approximation with the tie-corrected variance
/// `nm/12 ((N + 1) - sum(t^3 - t) / (N (N - 1)))` and a continuity correction of 1/2.
/// Panics if either sample is empty.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> TestResult {
    let (n, m) = (x.len(), y.len());
    assert!(n > 0 && m > 0, "Mann-Whitney U of an empty sample");
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let (ranks, tie_term) = mid_ranks(&all);
    let rank_sum_x: f64 = ranks[..n].iter().sum();
    let u = rank_sum_x - (n * (n + 1)) as f64 / 2.0;
    let mean = (n * m) as f64 / 2.0;
    if tie_term == 0.0 && n <= EXACT_MAX_N && m <= EXACT_MAX_N {
        let cdf = u_cdf(n, m);
        // U is an integer without ties. P(U >= u) = 1 - P(U <= u - 1).
        let u_int = u.round() as usize;
        let lower = cdf[u_int];
        let upper = if u_int == 0 {
            1.0
        } else {
            1.0 - cdf[u_int - 1]
        };
        let p = (2.0 * lower.min(upper)).min(1.0);
        return TestResult {
            statistic: u,
            p,
            method: Method::Exact,
        };
    }
    let total = (n + m) as f64;
    let variance = (n * m) as f64 / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    let p = if variance <= 0.0 {
        1.0
    } else {
        let distance = ((u - mean).abs() - 0.5).max(0.0);
        (2.0 * normal_sf(distance / variance.sqrt())).min(1.0)
    };
    TestResult {
        statistic: u,
        p,
        method: Method::Normal,
    }
}

/// The Hodges-Lehmann estimate of the shift `x - y` (the median of all `n m` differences `x_i - y_j`)
/// with a `confidence` interval from inverting the Mann-Whitney U test, and the U test itself.
///
/// The interval is `[D_(k), D_(nm + 1 - k)]` over the sorted differences, where `k` is the smallest `u`
/// with `P(U <= u) >= (1 - confidence) / 2` (at least 1), so its coverage
/// `1 - 2 P(U <= k - 1)` is at least `confidence`. The U distribution is exact for samples of at most
/// [`EXACT_MAX_N`]; beyond, `k = floor(nm/2 + 1/2 - z sigma)` with the tie-corrected sigma.
/// Panics if either sample is empty.
pub fn hodges_lehmann_shift(x: &[f64], y: &[f64], confidence: f64) -> ShiftEstimate {
    let (n, m) = (x.len(), y.len());
    let test = mann_whitney_u(x, y);
    let mut diffs: Vec<f64> = Vec::with_capacity(n * m);
    for &a in x {
        for &b in y {
            diffs.push(a - b);
        }
    }
    diffs.sort_by(|a, b| a.partial_cmp(b).expect("NaN in sample"));
    let nm = n * m;
    let tail = (1.0 - confidence) / 2.0;
    let (k, achieved_confidence, ci_method) = if n <= EXACT_MAX_N && m <= EXACT_MAX_N {
        let cdf = u_cdf(n, m);
        let k = cdf.iter().position(|&c| c >= tail).unwrap_or(0).max(1);
        (k, 1.0 - 2.0 * cdf[k - 1], Method::Exact)
    } else {
        let all: Vec<f64> = x.iter().chain(y).copied().collect();
        let (_, tie_term) = mid_ranks(&all);
        let total = (n + m) as f64;
        let sigma =
            ((nm as f64) / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)))).sqrt();
        let z = normal_quantile(1.0 - tail);
        let k = ((nm as f64) / 2.0 + 0.5 - z * sigma).floor().max(1.0) as usize;
        let below = (k as f64 - 0.5 - (nm as f64) / 2.0) / sigma;
        (k, 1.0 - 2.0 * normal_sf(-below), Method::Normal)
    };
    let k = k.min(nm.div_ceil(2));
    ShiftEstimate {
        estimate: median_of_sorted(&diffs),
        low: order_stat(&diffs, k),
        high: order_stat(&diffs, nm + 1 - k),
        achieved_confidence,
        ci_method,
        test,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The expected values below come from Python with scipy 1.17.1:
    //   scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="exact" | "asymptotic")
    // and, for the Hodges-Lehmann interval, numpy.median of the differences and the order statistic
    // k taken from a brute-force enumeration of itertools.combinations(range(n + m), n).

    const SHIFT_X: [f64; 10] = [10.2, 11.5, 9.8, 10.9, 12.1, 10.4, 11.0, 9.5, 10.7, 11.8];
    const SHIFT_Y: [f64; 10] = [9.1, 9.9, 8.7, 10.3, 9.4, 8.9, 10.0, 9.2, 9.6, 8.4];

    fn close(got: f64, want: f64, tol: f64) -> bool {
        (got - want).abs() <= tol * want.abs().max(1e-300) || (got - want).abs() < 1e-15
    }

    #[test]
    fn u_frequencies_match_enumeration() {
        // Brute force over itertools.combinations(range(n + m), n), U = sum(pos_i - i).
        let check =
            |n: usize, m: usize, want: &[f64]| assert_eq!(u_frequencies(n, m), want, "n={n} m={m}");
        check(3, 2, &[1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0]);
        check(
            4,
            4,
            &[
                1.0, 1.0, 2.0, 3.0, 5.0, 5.0, 7.0, 7.0, 8.0, 7.0, 7.0, 5.0, 5.0, 3.0, 2.0, 1.0, 1.0,
            ],
        );
        check(1, 0, &[1.0]);
        // The frequencies sum to C(n + m, n); C(100, 50) = 1.0089134454556419e29.
        let total: f64 = u_frequencies(50, 50).iter().sum();
        assert!(close(total, 1.008_913_445_455_641_9e29, 1e-12), "{total}");
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        let check = |x: &[f64], y: &[f64], u: f64, p: f64, method: Method| {
            let got = mann_whitney_u(x, y);
            assert_eq!(got.statistic, u, "U for {x:?} vs {y:?}");
            assert_eq!(got.method, method);
            assert!(close(got.p, p, 1e-9), "p = {}, want {p}", got.p);
        };
        // mannwhitneyu(SHIFT_X, SHIFT_Y, alternative="two-sided", method="exact")
        check(
            &SHIFT_X,
            &SHIFT_Y,
            92.0,
            0.000_725_280_911_039_424_9,
            Method::Exact,
        );
        check(
            &SHIFT_Y,
            &SHIFT_X,
            8.0,
            0.000_725_280_911_039_424_9,
            Method::Exact,
        );
        check(
            &[1.0, 2.0, 3.5, 4.25, 5.5, 6.0],
            &[1.5, 2.5, 3.0, 4.0, 5.0, 6.5],
            18.0,
            1.0,
            Method::Exact,
        );
        check(
            &[3.1, 4.7, 2.2, 5.9, 6.3, 4.4, 3.8],
            &[2.9, 1.8, 3.3, 2.5, 4.1, 1.2, 2.0, 3.6],
            47.0,
            0.028_904_428_904_428_903,
            Method::Exact,
        );
        // Ties: mannwhitneyu(x, y, alternative="two-sided", method="asymptotic", use_continuity=True)
        check(
            &[5.0, 6.0, 6.0, 7.0, 8.0, 8.0, 8.0, 9.0, 10.0, 12.0],
            &[4.0, 5.0, 5.0, 6.0, 7.0, 7.0, 8.0, 9.0, 9.0, 9.0],
            62.0,
            0.378_876_194_026_738_9,
            Method::Normal,
        );
        let (x, y) = large_samples();
        check(&x, &y, 1860.0, 0.240_805_907_235_204_23, Method::Normal);
        // All values equal: no information, p = 1.
        check(&[1.0; 6], &[1.0; 6], 18.0, 1.0, Method::Normal);
    }

    /// 60 and 55 distinct values (no ties), beyond the exact limit.
    fn large_samples() -> (Vec<f64>, Vec<f64>) {
        // Python: x=[((i*7919) % 6007)/10.0 + 1000.0 for i in range(60)]
        //         y=[((j*6113) % 5003)/10.0 + 990.05 for j in range(55)]
        let x = (0..60)
            .map(|i: u64| ((i * 7919) % 6007) as f64 / 10.0 + 1000.0)
            .collect();
        let y = (0..55)
            .map(|j: u64| ((j * 6113) % 5003) as f64 / 10.0 + 990.05)
            .collect();
        (x, y)
    }

    #[test]
    fn hodges_lehmann_matches_reference() {
        let check = |x: &[f64], y: &[f64], est: f64, lo: f64, hi: f64, conf: f64, m: Method| {
            let got = hodges_lehmann_shift(x, y, 0.95);
            assert!(
                close(got.estimate, est, 1e-12),
                "estimate {} want {est}",
                got.estimate
            );
            assert!(close(got.low, lo, 1e-12), "low {} want {lo}", got.low);
            assert!(close(got.high, hi, 1e-12), "high {} want {hi}", got.high);
            assert_eq!(got.ci_method, m);
            if m == Method::Exact {
                assert!(
                    close(got.achieved_confidence, conf, 1e-12),
                    "{}",
                    got.achieved_confidence
                );
            }
        };
        // k = 24 of 100 differences: [D_(24), D_(77)], coverage 1 - 2 P(U <= 23).
        check(
            &SHIFT_X,
            &SHIFT_Y,
            1.5,
            0.7,
            2.2,
            0.956_742_947_455_021_8,
            Method::Exact,
        );
        // Swapping the samples negates the shift and its interval.
        check(
            &SHIFT_Y,
            &SHIFT_X,
            -1.5,
            -2.2,
            -0.7,
            0.956_742_947_455_021_8,
            Method::Exact,
        );
        check(
            &[1.0, 2.0, 3.5, 4.25, 5.5, 6.0],
            &[1.5, 2.5, 3.0, 4.0, 5.0, 6.5],
            -0.125,
            -3.0,
            2.75,
            0.958_874_458_874_458_9,
            Method::Exact,
        );
        check(
            &[3.1, 4.7, 2.2, 5.9, 6.3, 4.4, 3.8],
            &[2.9, 1.8, 3.3, 2.5, 4.1, 1.2, 2.0, 3.6],
            1.8,
            0.2,
            3.2,
            0.959_906_759_906_759_9,
            Method::Exact,
        );
        // Ties within n, m <= 50 still invert the exact distribution (k = 24).
        check(
            &[5.0, 6.0, 6.0, 7.0, 8.0, 8.0, 8.0, 9.0, 10.0, 12.0],
            &[4.0, 5.0, 5.0, 6.0, 7.0, 7.0, 8.0, 9.0, 9.0, 9.0],
            1.0,
            -1.0,
            3.0,
            0.956_742_947_455_021_8,
            Method::Exact,
        );
        // Normal approximation: k = floor(3300/2 + 1/2 - 1.959964 * sigma) = 1300.
        let (x, y) = large_samples();
        check(&x, &y, 38.55, -22.05, 95.95, 0.0, Method::Normal);
    }

    #[test]
    fn exact_and_normal_intervals_agree_at_the_limit() {
        // At n = m = 50 the exact k and the continuity-corrected normal k differ by at most one.
        let cdf = u_cdf(50, 50);
        let exact_k = cdf.iter().position(|&c| c >= 0.025).unwrap();
        let sigma = (2500.0_f64 / 12.0 * 101.0).sqrt();
        let normal_k = (1250.0 + 0.5 - normal_quantile(0.975) * sigma).floor() as usize;
        assert!(
            exact_k.abs_diff(normal_k) <= 1,
            "exact {exact_k} normal {normal_k}"
        );
    }
}
