//! scheduler_perf's throughput collector (`test/integration/scheduler_perf/util.go`,
//! `throughputCollector`), driven by explicit sample times so that virtual-time runs work too.
//!
//! Every interval the driver calls [`ThroughputCollector::sample`] with the count of pods bound so far:
//! - nothing is recorded until some pod is bound; the first sample after that only sets the baseline
//!   (it is skipped: sampling and pod creation start independently);
//! - an interval with no new pods records nothing and is counted as skipped; the next interval with
//!   progress records its rate (new pods / actual elapsed time since the last recorded sample) once
//!   for itself and once per skipped interval, to keep percentiles honest;
//! - the summary's percentiles take the sorted sample at index `ceil(n·p/100) − 1`. Its average is the
//!   measured pods over the measured time (the brief's definition; upstream averages the samples,
//!   which [`ThroughputSummary::mean_of_samples`] keeps for comparison).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{RecvTimeoutError, Sender};
use serde::Serialize;

use super::counters::{Counter, Counters};
use crate::clock::Clock;

/// scheduler_perf's `throughputSampleInterval`: 1 s.
pub const DEFAULT_SAMPLE_INTERVAL_NANOS: u64 = 1_000_000_000;
/// The fewest samples a run should yield; [`sample_interval_nanos`] shortens the interval for it.
pub const MIN_SAMPLES: u64 = 20;
/// The shortest interval [`sample_interval_nanos`] picks: 1 ms.
const MIN_SAMPLE_INTERVAL_NANOS: u64 = 1_000_000;

/// The sample interval for a run expected to last `expected_run_nanos`: 1 s, or shorter so that the
/// run yields at least [`MIN_SAMPLES`] samples, but not below 1 ms.
pub fn sample_interval_nanos(expected_run_nanos: u64) -> u64 {
    (expected_run_nanos / MIN_SAMPLES).clamp(MIN_SAMPLE_INTERVAL_NANOS, DEFAULT_SAMPLE_INTERVAL_NANOS)
}

/// The `p`-th percentile of ascending `sorted` values: `sorted[ceil(n·p/100) − 1]`; 0 when empty.
pub fn percentile_sorted(sorted: &[f64], p: u32) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let n = sorted.len() as u64;
    let idx = (n * p as u64).div_ceil(100).max(1) - 1;
    sorted[idx as usize]
}

/// The throughput of a run, in pods per second.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThroughputSummary {
    /// Measured pods / measured seconds.
    pub average: f64,
    /// The mean of the samples (upstream's `Average`).
    pub mean_of_samples: f64,
    pub perc50: f64,
    pub perc90: f64,
    pub perc95: f64,
    pub perc99: f64,
    pub samples: usize,
    pub measured_pods: u64,
    pub measured_seconds: f64,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct ThroughputCollector {
    interval_nanos: u64,
    started: bool,
    last_count: u64,
    last_sample_nanos: u64,
    skipped: u32,
    samples: Vec<f64>,
    measured_pods: u64,
    measured_nanos: u64,
    /// (time, pods bound) at every call, for the per-interval progress file.
    progress: Vec<(u64, u64)>,
}

impl ThroughputCollector {
    pub fn new(interval_nanos: u64) -> Self {
        assert!(interval_nanos > 0, "a sample interval must be positive");
        ThroughputCollector {
            interval_nanos,
            started: false,
            last_count: 0,
            last_sample_nanos: 0,
            skipped: 0,
            samples: Vec::new(),
            measured_pods: 0,
            measured_nanos: 0,
            progress: Vec::new(),
        }
    }

    pub fn interval_nanos(&self) -> u64 {
        self.interval_nanos
    }

    /// One tick: `bound_total` pods are bound at `now_nanos`.
    pub fn sample(&mut self, now_nanos: u64, bound_total: u64) {
        self.progress.push((now_nanos, bound_total));
        if bound_total == 0 {
            return;
        }
        if !self.started {
            self.started = true;
            self.last_count = bound_total;
            self.last_sample_nanos = now_nanos;
            return;
        }
        let new_pods = bound_total.saturating_sub(self.last_count);
        if new_pods == 0 {
            self.skipped += 1;
            return;
        }
        let elapsed = now_nanos.saturating_sub(self.last_sample_nanos).max(1);
        let rate = new_pods as f64 / (elapsed as f64 / 1e9);
        for _ in 0..=self.skipped {
            self.samples.push(rate);
        }
        self.measured_pods += new_pods;
        self.measured_nanos += elapsed;
        self.skipped = 0;
        self.last_count = bound_total;
        self.last_sample_nanos = now_nanos;
    }

    /// The recorded rates, in pods per second, in recording order.
    pub fn samples(&self) -> &[f64] {
        &self.samples
    }

    pub fn progress(&self) -> &[(u64, u64)] {
        &self.progress
    }

    /// `None` until at least one rate is recorded.
    pub fn summary(&self) -> Option<ThroughputSummary> {
        if self.samples.is_empty() {
            return None;
        }
        let mut sorted = self.samples.clone();
        sorted.sort_by(f64::total_cmp);
        let measured_seconds = self.measured_nanos as f64 / 1e9;
        Some(ThroughputSummary {
            average: self.measured_pods as f64 / measured_seconds,
            mean_of_samples: sorted.iter().sum::<f64>() / sorted.len() as f64,
            perc50: percentile_sorted(&sorted, 50),
            perc90: percentile_sorted(&sorted, 90),
            perc95: percentile_sorted(&sorted, 95),
            perc99: percentile_sorted(&sorted, 99),
            samples: sorted.len(),
            measured_pods: self.measured_pods,
            measured_seconds,
        })
    }
}

/// A wall-clock sampler: one thread that samples [`Counter::PodsBound`] every interval (ticks at
/// fixed offsets from the start, so waits do not drift). Virtual-time drivers call
/// [`ThroughputCollector::sample`] themselves instead.
pub struct ThroughputSampler {
    stop: Sender<()>,
    handle: JoinHandle<ThroughputCollector>,
}

impl ThroughputSampler {
    pub fn spawn(counters: Arc<Counters>, clock: Arc<dyn Clock>, interval_nanos: u64) -> Self {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(1);
        let handle = std::thread::Builder::new()
            .name("throughput-sampler".into())
            .spawn(move || {
                let mut c = ThroughputCollector::new(interval_nanos);
                let start = clock.now_nanos();
                let mut tick: u64 = 1;
                loop {
                    let due = start + tick * interval_nanos;
                    let wait = Duration::from_nanos(due.saturating_sub(clock.now_nanos()));
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            c.sample(clock.now_nanos(), counters.get(Counter::PodsBound));
                            tick += 1;
                        }
                        _ => return c,
                    }
                }
            })
            .expect("spawn throughput sampler");
        ThroughputSampler { stop, handle }
    }

    /// Stops sampling and returns the collector.
    pub fn stop(self) -> ThroughputCollector {
        // The thread may have stopped already only by panicking, which join reports.
        let _ = self.stop.send(());
        self.handle.join().expect("throughput sampler panicked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::WallClock;

    const S: u64 = 1_000_000_000;

    #[test]
    fn percentile_index_is_ceil_n_p_minus_one() {
        let check = |values: &[f64], p: u32, expected: f64| {
            assert_eq!(percentile_sorted(values, p), expected, "{values:?} p{p}");
        };
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        check(&ten, 50, 5.0);
        check(&ten, 90, 9.0);
        check(&ten, 95, 10.0);
        check(&ten, 99, 10.0);
        check(&ten, 1, 1.0);
        check(&[7.0], 50, 7.0);
        check(&[1.0, 2.0, 3.0], 50, 2.0);
        check(&[], 50, 0.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        check(&hundred, 99, 99.0);
        check(&hundred, 50, 50.0);
    }

    #[test]
    fn interval_gives_at_least_twenty_samples() {
        let check = |run: u64, expected: u64| assert_eq!(sample_interval_nanos(run), expected, "run {run}");
        check(600 * S, S);
        check(20 * S, S);
        check(10 * S, S / 2);
        check(S, S / 20);
        check(1_000_000, 1_000_000);
    }

    /// (time in s, pods bound) ticks -> recorded samples.
    fn run(ticks: &[(u64, u64)]) -> ThroughputCollector {
        let mut c = ThroughputCollector::new(S);
        for &(t, n) in ticks {
            c.sample(t * S, n);
        }
        c
    }

    #[test]
    fn first_sample_skipped_zero_progress_folded_into_the_next() {
        let check = |ticks: &[(u64, u64)], expected: &[f64]| {
            assert_eq!(run(ticks).samples(), expected, "{ticks:?}");
        };
        // Nothing bound yet: no baseline. The first non-zero tick is the baseline.
        check(&[(1, 0), (2, 0), (3, 10), (4, 30), (5, 60)], &[20.0, 30.0]);
        // Two stalled intervals: the next rate covers three seconds and is recorded three times.
        check(&[(1, 5), (2, 10), (3, 10), (4, 10), (5, 40)], &[5.0, 10.0, 10.0, 10.0]);
        // A stall at the end records nothing.
        check(&[(1, 5), (2, 10), (3, 10)], &[5.0]);
        check(&[(1, 5)], &[]);
    }

    #[test]
    fn summary_average_is_pods_over_measured_time() {
        let c = run(&[(1, 100), (2, 200), (3, 200), (4, 500), (5, 1100)]);
        // Rates: 100 (1 s), 150 twice (2 s), 600 (1 s).
        let s = c.summary().unwrap();
        assert_eq!(s.samples, 4);
        assert_eq!(s.measured_pods, 1000);
        assert_eq!(s.measured_seconds, 4.0);
        assert_eq!(s.average, 250.0);
        assert_eq!(s.mean_of_samples, 250.0);
        assert_eq!((s.perc50, s.perc90, s.perc95, s.perc99), (150.0, 600.0, 600.0, 600.0));
        assert!(run(&[(1, 10)]).summary().is_none());
        assert_eq!(c.progress().len(), 5);
    }

    #[test]
    fn rate_uses_actual_elapsed_time() {
        // Late ticks (1.5 s apart) are measured as they happened.
        let mut c = ThroughputCollector::new(S);
        c.sample(S, 10);
        c.sample(S + 3 * S / 2, 40);
        assert_eq!(c.samples(), &[20.0]);
    }

    #[test]
    fn wall_clock_sampler_collects_twenty_samples() {
        let counters = Arc::new(Counters::new());
        let sampler = ThroughputSampler::spawn(counters.clone(), Arc::new(WallClock::new()), 5_000_000);
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(150) {
            counters.incr(Counter::PodsBound);
            std::thread::sleep(Duration::from_micros(200));
        }
        let c = sampler.stop();
        assert!(c.samples().len() >= 20, "{} samples", c.samples().len());
        let s = c.summary().unwrap();
        assert!(s.average > 100.0 && s.average < 10_000.0, "{s:?}");
    }
}
