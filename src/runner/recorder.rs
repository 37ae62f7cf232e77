//! What a run measures: latency histograms (HdrHistogram), counters, per-pod timestamps, and the
//! scheduler_perf-style throughput computed from bind times after the run.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::report::{Percentiles, Throughput};

/// Histogram bounds: 1 ns .. 1 hour, 3 significant digits.
const HIST_MAX_NANOS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHist(pub Histogram<u64>);

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist(Histogram::new_with_bounds(1, HIST_MAX_NANOS, 3).expect("valid histogram bounds"))
    }
}

impl LatencyHist {
    pub fn record_nanos(&mut self, nanos: u64) {
        self.0.saturating_record(nanos.clamp(1, HIST_MAX_NANOS));
    }

    /// Percentiles in `unit_nanos` units (1_000 for µs, 1_000_000 for ms).
    pub fn percentiles(&self, unit_nanos: f64) -> Percentiles {
        let h = &self.0;
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: h.value_at_quantile(0.50) as f64 / unit_nanos,
            p90: h.value_at_quantile(0.90) as f64 / unit_nanos,
            p99: h.value_at_quantile(0.99) as f64 / unit_nanos,
            max: h.max() as f64 / unit_nanos,
            count: h.len(),
        }
    }

    /// The histogram rescaled to `unit_nanos` units (1_000 for µs), encoded as `report.json` stores
    /// histograms (compressed HdrHistogram V2, base64).
    pub fn encode_in(&self, unit_nanos: u64) -> String {
        let mut h = Histogram::<u64>::new_with_bounds(1, (HIST_MAX_NANOS / unit_nanos).max(2), 3).expect("valid bounds");
        for v in self.0.iter_recorded() {
            h.saturating_record_n((v.value_iterated_to() / unit_nanos).max(1), v.count_at_value());
        }
        crate::report::histogram::encode(&h)
    }
}

/// Histograms by name, serialized into the report.
#[derive(Debug, Default)]
pub struct Histograms {
    pub by_name: BTreeMap<String, LatencyHist>,
}

impl Histograms {
    pub fn record(&mut self, name: &str, nanos: u64) {
        match self.by_name.get_mut(name) {
            Some(h) => h.record_nanos(nanos),
            None => {
                let mut h = LatencyHist::default();
                h.record_nanos(nanos);
                self.by_name.insert(name.to_string(), h);
            }
        }
    }

    pub fn percentiles(&self, name: &str, unit_nanos: f64) -> Percentiles {
        self.by_name.get(name).map_or_else(Percentiles::default, |h| h.percentiles(unit_nanos))
    }
}

/// How many intervals a measured window is cut into (scheduler_perf samples every 1 s; short runs
/// use a shorter interval so that there are enough samples).
pub const THROUGHPUT_TARGET_SAMPLES: u64 = 25;
/// The longest sampling interval (scheduler_perf's `throughputSampleInterval`).
pub const THROUGHPUT_MAX_INTERVAL_NANOS: u64 = 1_000_000_000;

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
    let pct = |p: f64| -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let i = ((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1).min(sorted.len() - 1);
        sorted[i]
    };
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

/// Peak resident set size of this process (`VmHWM`), in bytes; 0 where /proc is unavailable.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024)
}

/// CPU time (user + system) of this process so far, in seconds.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the state field.
    (ticks(11) + ticks(12)) / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn histogram_round_trip() {
        let mut h = LatencyHist::default();
        for v in [1_000, 2_000, 3_000, 1_000_000] {
            h.record_nanos(v);
        }
        let p = h.percentiles(1_000.0);
        assert_eq!(p.count, 4);
        assert!((p.p50 - 2.0).abs() < 0.01);
        assert!((p.max - 1000.0).abs() < 1.0);
        let back = crate::report::histogram::decode(&h.encode_in(1_000), "x").unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), 1000, "rescaled to microseconds");
    }
}
