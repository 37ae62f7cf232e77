//! What a run measures: latency histograms (HdrHistogram), scheduler_perf's throughput collector
//! over bind times, and the process's peak RSS and CPU time.

pub mod encoding;
mod histogram;
mod process;
mod throughput;

pub use histogram::{percentiles_of, Hist, Histograms, LatencyHist};
pub use process::{cpu_seconds, peak_rss_bytes, reset_peak_rss};
use serde::{Deserialize, Serialize};

pub use throughput::{nearest_rank, throughput, THROUGHPUT_MAX_INTERVAL_NANOS, THROUGHPUT_TARGET_SAMPLES};

/// p50/p90/p99/max and the mean of a latency distribution, in the unit the field name says.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub count: u64,
    /// The mean (scheduler_perf's `Average` of a latency metric); 0 in reports written before it was kept.
    #[serde(default)]
    pub mean: f64,
}

/// Scheduling throughput in pods/s, as scheduler_perf's throughput collector computes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Throughput {
    /// Measured pods / measured time.
    pub average: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    /// The per-interval rates the percentiles come from.
    pub samples: Vec<f64>,
    pub interval_seconds: f64,
}
