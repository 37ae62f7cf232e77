//! Latency histograms (hdrhistogram, 3 significant digits) whose names end in their unit.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The unit a histogram records in, taken from its name's suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TimeUnit {
    Nanos,
    Micros,
    Millis,
}

impl TimeUnit {
    /// The unit named by `name`'s suffix: `_ns`, `_us` or `_ms`.
    pub fn of_name(name: &str) -> Option<TimeUnit> {
        [("_ns", TimeUnit::Nanos), ("_us", TimeUnit::Micros), ("_ms", TimeUnit::Millis)]
            .into_iter()
            .find(|(suffix, _)| name.ends_with(suffix))
            .map(|(_, u)| u)
    }

    fn nanos_per_unit(self) -> u64 {
        match self {
            TimeUnit::Nanos => 1,
            TimeUnit::Micros => 1_000,
            TimeUnit::Millis => 1_000_000,
        }
    }
}

/// A latency histogram. Not shared: each thread keeps its own and they are [`merge`](Self::merge)d.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    name: &'static str,
    unit: TimeUnit,
    hist: Histogram<u64>,
}

/// A histogram's summary, in the histogram's unit (named by `name`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    pub name: &'static str,
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

impl LatencyHistogram {
    /// A histogram named `name`, which must end in `_ns`, `_us` or `_ms` (an internal invariant: names
    /// are constants in the code).
    pub fn new(name: &'static str) -> Self {
        let unit = TimeUnit::of_name(name)
            .unwrap_or_else(|| panic!("histogram name {name:?} does not end in _ns, _us or _ms"));
        LatencyHistogram { name, unit, hist: Histogram::new(3).expect("3 significant digits is valid") }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn unit(&self) -> TimeUnit {
        self.unit
    }

    /// Records a value in the histogram's unit.
    pub fn record(&mut self, value: u64) {
        // The histogram auto-resizes (`saturating_record` would clamp instead); growing fails only
        // past usize's range, where clamping is the best left.
        if self.hist.record(value).is_err() {
            self.hist.saturating_record(value);
        }
    }

    /// Records a duration given in nanoseconds, converted (truncated) to the histogram's unit.
    pub fn record_nanos(&mut self, nanos: u64) {
        self.record(nanos / self.unit.nanos_per_unit());
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Adds `other`'s values (it must have the same name).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        assert_eq!(self.name, other.name, "merging different histograms");
        self.hist.add(&other.hist).expect("auto-resizing histograms always merge");
    }

    pub fn summary(&self) -> LatencySummary {
        let q = |p: f64| self.hist.value_at_quantile(p);
        LatencySummary {
            name: self.name,
            count: self.hist.len(),
            mean: if self.hist.is_empty() { 0.0 } else { self.hist.mean() },
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            max: self.hist.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_units() {
        let check = |name: &str, expected: Option<TimeUnit>| assert_eq!(TimeUnit::of_name(name), expected, "{name}");
        check("scheduling_attempt_duration_us", Some(TimeUnit::Micros));
        check("bind_latency_ms", Some(TimeUnit::Millis));
        check("filter_ns", Some(TimeUnit::Nanos));
        check("bind_latency", None);
        check("bind_latency_s", None);
    }

    #[test]
    #[should_panic(expected = "does not end in")]
    fn a_name_without_unit_is_refused() {
        LatencyHistogram::new("latency");
    }

    #[test]
    fn records_converts_summarises_and_merges() {
        let mut a = LatencyHistogram::new("bind_latency_us");
        for v in 1..=100 {
            a.record_nanos(v * 1000 + 999); // truncated to v µs
        }
        let s = a.summary();
        assert_eq!((s.count, s.p50, s.p90, s.p95, s.p99, s.max), (100, 50, 90, 95, 99, 100));
        assert!((s.mean - 50.5).abs() < 0.01);
        let mut b = LatencyHistogram::new("bind_latency_us");
        b.record(1_000_000);
        a.merge(&b);
        assert_eq!(a.count(), 101);
        let max = a.summary().max;
        assert!((999_000..=1_001_000).contains(&max), "max {max}");
        let empty = LatencyHistogram::new("x_ms").summary();
        assert_eq!((empty.count, empty.mean, empty.p99), (0, 0.0, 0));
    }
}
