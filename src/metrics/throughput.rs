//! scheduler_perf's throughput collector, computed after the run from the bind times of the
//! measured pods (the same intervals and percentiles as a live collector, without a sampling thread
//! on a two-core machine).

use crate::metrics::Throughput;

/// How many intervals a measured window is cut into (scheduler_perf samples every 1 s; short runs
/// use a shorter interval so that there are enough samples).
pub const THROUGHPUT_TARGET_SAMPLES: u64 = 25;
/// The longest sampling interval (scheduler_perf's `throughputSampleInterval`).
pub const THROUGHPUT_MAX_INTERVAL_NANOS: u64 = 1_000_000_000;

/// The nearest-rank percentile `p` (0..=1) of ascending `sorted` values: the value at index
/// ⌈n·p⌉−1 (the first for p = 0), as scheduler_perf's collector takes them; 0 for no values.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1).min(sorted.len() - 1);
    sorted[i]
}

/// scheduler_perf's throughput collector, over bind times (ns from the window start):
/// rates per interval; an interval without progress is merged into the next one that has some,
/// whose rate is then recorded once per merged interval; percentiles at sorted index ⌈n·p⌉−1.
/// `average` is measured pods over the window's duration.
pub fn throughput(bind_nanos: &mut [u64], window_nanos: u64) -> Throughput {
    bind_nanos.sort_unstable();
    let n = bind_nanos.len() as u64;
    if n == 0 || window_nanos == 0 {
        return Throughput::default();
    }
    let interval = (window_nanos / THROUGHPUT_TARGET_SAMPLES).clamp(1, THROUGHPUT_MAX_INTERVAL_NANOS);
    let mut samples = Vec::new();
    let mut idx = 0usize;
    let mut last_count = 0u64;
    let mut skipped = 0u64;
    let mut t = interval;
    while t <= window_nanos {
        while idx < bind_nanos.len() && bind_nanos[idx] < t {
            idx += 1;
        }
        let count = idx as u64;
        if count == last_count {
            skipped += 1;
        } else {
            let span_s = (interval * (skipped + 1)) as f64 / 1e9;
            let rate = (count - last_count) as f64 / span_s;
            for _ in 0..=skipped {
                samples.push(rate);
            }
            skipped = 0;
            last_count = count;
        }
        t += interval;
    }
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| nearest_rank(&sorted, p);
    Throughput {
        average: n as f64 / (window_nanos as f64 / 1e9),
        p50: pct(0.50),
        p90: pct(0.90),
        p95: pct(0.95),
        p99: pct(0.99),
        samples,
        interval_seconds: interval as f64 / 1e9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_takes_the_value_at_ceil_np_minus_one() {
        let v = [10.0, 20.0, 30.0, 40.0];
        // p -> value
        let cases = [(0.0, 10.0), (0.25, 10.0), (0.26, 20.0), (0.5, 20.0), (0.9, 40.0), (0.99, 40.0), (1.0, 40.0)];
        for (p, want) in cases {
            assert_eq!(nearest_rank(&v, p), want, "p={p}");
        }
        assert_eq!(nearest_rank(&[], 0.5), 0.0);
        assert_eq!(nearest_rank(&[7.0], 0.99), 7.0);
    }

    #[test]
    fn throughput_uniform_and_gaps() {
        // 100 pods evenly over 1 s: 25 intervals of 40 ms, 4 pods each -> 100 pods/s everywhere.
        let mut binds: Vec<u64> = (0..100).map(|i| i * 10_000_000).collect();
        let t = throughput(&mut binds, 1_000_000_000);
        assert_eq!(t.samples.len(), 25);
        assert!((t.average - 100.0).abs() < 1e-9);
        assert!(t.samples.iter().all(|s| (s - 100.0).abs() < 1e-9), "{:?}", t.samples);
        // All pods in the last interval: the empty intervals merge into it; 25 samples of 100/s.
        let mut binds: Vec<u64> = vec![990_000_000; 100];
        let t = throughput(&mut binds, 1_000_000_000);
        assert_eq!(t.samples.len(), 25);
        assert!((t.p50 - 100.0).abs() < 1e-9);
        // Half the pods early, half late.
        let mut binds: Vec<u64> = (0..50).map(|_| 1).chain((0..50).map(|_| 999_000_000)).collect();
        let t = throughput(&mut binds, 1_000_000_000);
        assert!((t.samples[0] - 50.0 / 0.04).abs() < 1e-6);
        assert!((t.samples[1] - 50.0 / 0.96).abs() < 1e-6);
        assert_eq!(throughput(&mut [], 10).samples.len(), 0);
    }
}
