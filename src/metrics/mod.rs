//! Run metrics: scheduler_perf's throughput collector, latency histograms whose names carry their
//! unit, and the run's shared counters.

mod counters;
mod histogram;
mod throughput;

pub use counters::{Counter, CounterSnapshot, Counters};
pub use histogram::{LatencyHistogram, LatencySummary, TimeUnit};
pub use throughput::{
    percentile_sorted, sample_interval_nanos, ThroughputCollector, ThroughputSampler, ThroughputSummary,
    DEFAULT_SAMPLE_INTERVAL_NANOS, MIN_SAMPLES,
};
