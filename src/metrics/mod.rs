//! What a run measures: latency histograms (HdrHistogram), scheduler_perf's throughput collector
//! over bind times, and the process's peak RSS and CPU time.

mod histogram;
mod process;
mod throughput;

pub use histogram::{Histograms, LatencyHist};
pub use process::{cpu_seconds, peak_rss_bytes};
pub use throughput::{throughput, THROUGHPUT_MAX_INTERVAL_NANOS, THROUGHPUT_TARGET_SAMPLES};
