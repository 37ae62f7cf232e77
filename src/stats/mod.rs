//! Pure, deterministic statistics for comparing two sets of benchmark runs.
//!
//! Everything here is a free function over `f64` slices: no RNG, no I/O, no allocation beyond the
//! result. The gate (`crate::gate`) feeds it per-run values (one number per whole run, never per pod,
//! to avoid pseudo-replication) and turns the results into verdicts.
//!
//! - [`descriptive`]: median and the distribution-free confidence interval of a median.
//! - [`normal`]: the standard normal distribution (CDF, survival function, quantile).
//! - [`rank`]: mid-ranks with ties and the tie term `sum(t^3 - t)`.
//! - [`mann_whitney`]: two-sample Mann-Whitney U test and the Hodges-Lehmann shift with the CI
//!   obtained by inverting the U distribution (unpaired runs, as against a stored baseline).
//! - [`wilcoxon`]: Wilcoxon signed-rank test and the Walsh-average Hodges-Lehmann CI (interleaved
//!   A/B pairs).
//! - [`mod@holm`]: Holm's step-down correction of a family of p-values.

pub mod descriptive;
pub mod holm;
pub mod mann_whitney;
pub mod normal;
pub mod rank;
pub mod wilcoxon;

pub use descriptive::{median, median_ci};
pub use holm::holm;
pub use mann_whitney::{hodges_lehmann_shift, mann_whitney_u};
pub use wilcoxon::{hodges_lehmann_paired, wilcoxon_signed_rank};

/// How a p-value or confidence interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// From the exact null distribution (no ties, small samples).
    Exact,
    /// From the normal approximation with tie and continuity corrections.
    Normal,
}

impl Method {
    /// A short lowercase name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Normal => "normal",
        }
    }
}

/// A two-sided test result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestResult {
    /// The test statistic: U of the first sample for Mann-Whitney, T+ for Wilcoxon.
    pub statistic: f64,
    /// The two-sided p-value, in `[0, 1]`.
    pub p: f64,
    /// How `p` was computed.
    pub method: Method,
}

/// A Hodges-Lehmann location shift with its confidence interval and the matching test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShiftEstimate {
    /// The Hodges-Lehmann point estimate.
    pub estimate: f64,
    /// The lower end of the confidence interval.
    pub low: f64,
    /// The upper end of the confidence interval.
    pub high: f64,
    /// The confidence level the interval guarantees (at least the one requested when exact).
    pub achieved_confidence: f64,
    /// How the interval's order statistics were chosen.
    pub ci_method: Method,
    /// The two-sided test of "no shift".
    pub test: TestResult,
}
