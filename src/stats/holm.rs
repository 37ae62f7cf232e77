//! Holm's step-down correction for a family of tests.

/// Holm-adjusted p-values, in the order of `p`.
///
/// With the p-values sorted ascending as `p_(1) <= ... <= p_(m)`, the adjusted value of `p_(i)` is
/// `max_{j <= i} min(1, (m - j + 1) p_(j))`. Rejecting every adjusted value below `alpha` controls the
/// family-wise error rate at `alpha`, with no assumption about how the tests depend on each other.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    // A stable sort keeps equal p-values in input order, so the result is deterministic.
    order.sort_by(|&a, &b| p[a].partial_cmp(&p[b]).expect("NaN p-value"));
    let mut adjusted = vec![0.0; m];
    let mut running_max = 0.0_f64;
    for (i, &idx) in order.iter().enumerate() {
        let value = ((m - i) as f64 * p[idx]).min(1.0);
        running_max = running_max.max(value);
        adjusted[idx] = running_max;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_cases() {
        // Hand-computed from the definition (sorted p times m, m-1, ..., then a running maximum).
        let check = |p: &[f64], want: &[f64]| {
            let got = holm(p);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() < 1e-15,
                    "holm({p:?}) = {got:?}, want {want:?}"
                );
            }
        };
        check(&[], &[]);
        check(&[0.03], &[0.03]);
        // Sorted 0.01, 0.02, 0.04 -> 3*0.01, 2*0.02, 1*0.04 = 0.03, 0.04, 0.04.
        check(&[0.04, 0.01, 0.02], &[0.04, 0.03, 0.04]);
        // Monotonicity: 4*0.001=0.004, 3*0.03=0.09, 2*0.031=0.062 -> max keeps 0.09, 1*0.5=0.5.
        check(&[0.5, 0.031, 0.001, 0.03], &[0.5, 0.09, 0.004, 0.09]);
        // Capping at 1.
        check(&[0.6, 0.7], &[1.0, 1.0]);
    }
}
