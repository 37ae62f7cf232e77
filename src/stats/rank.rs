//! Mid-ranks with ties.

/// Ranks of `xs` (1-based; tied values share the mean of their ranks) and the tie term
/// `sum(t^3 - t)` over groups of `t` tied values, as used by the tie-corrected variances.
pub fn mid_ranks(xs: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].partial_cmp(&xs[b]).expect("NaN in sample"));
    let mut ranks = vec![0.0; xs.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && xs[order[j]] == xs[order[i]] {
            j += 1;
        }
        // Positions i..j (0-based) hold equal values: ranks i+1..=j, mean (i + 1 + j) / 2.
        let rank = (i + 1 + j) as f64 / 2.0;
        for &idx in &order[i..j] {
            ranks[idx] = rank;
        }
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    (ranks, tie_term)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mid_rank_cases() {
        // Expected ranks: scipy.stats.rankdata(xs) (method="average").
        let check = |xs: &[f64], ranks: &[f64], tie_term: f64| {
            assert_eq!(mid_ranks(xs), (ranks.to_vec(), tie_term), "{xs:?}");
        };
        check(&[3.0, 1.0, 2.0], &[3.0, 1.0, 2.0], 0.0);
        check(&[2.0, 1.0, 2.0, 5.0], &[2.5, 1.0, 2.5, 4.0], 6.0);
        check(&[7.0, 7.0, 7.0], &[2.0, 2.0, 2.0], 24.0);
        check(&[], &[], 0.0);
    }
}
