//! Latency histograms (HdrHistogram, 1 ns to 1 hour, 3 significant digits) recorded in
//! nanoseconds, summarized in the unit a report field names, and serialized into `report.json`.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::metrics::Percentiles;

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
        percentiles_of(&self.0, unit_nanos)
    }

    /// The histogram rescaled to `unit_nanos` units (1_000 for µs), encoded as `report.json` stores
    /// histograms (compressed HdrHistogram V2, base64).
    pub fn encode_in(&self, unit_nanos: u64) -> String {
        let mut h =
            Histogram::<u64>::new_with_bounds(1, (HIST_MAX_NANOS / unit_nanos).max(2), 3).expect("valid bounds");
        for v in self.0.iter_recorded() {
            h.saturating_record_n((v.value_iterated_to() / unit_nanos).max(1), v.count_at_value());
        }
        crate::metrics::encoding::encode(&h)
    }
}

/// The percentiles a report keeps of any histogram (p50, p90, p99, max, the count and the mean), each value
/// divided by `unit` (1_000 turns recorded ns into µs; 1 keeps the recorded unit). All zero when
/// the histogram is empty.
pub fn percentiles_of(h: &Histogram<u64>, unit: f64) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        p50: h.value_at_quantile(0.50) as f64 / unit,
        p90: h.value_at_quantile(0.90) as f64 / unit,
        p99: h.value_at_quantile(0.99) as f64 / unit,
        max: h.max() as f64 / unit,
        count: h.len(),
        mean: h.mean() / unit,
    }
}

/// The histograms the run driver records for every pod: an array slot each, so that recording one
/// is an index rather than a lookup by name (several per pod on the scheduling thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hist {
    Attempt,
    AttemptScheduled,
    AttemptUnschedulable,
    AttemptError,
    E2e,
    Startup,
    CreatedToScheduled,
    ScheduledToBound,
    BoundToRunning,
}

impl Hist {
    pub const ALL: [Hist; 9] = [
        Hist::Attempt,
        Hist::AttemptScheduled,
        Hist::AttemptUnschedulable,
        Hist::AttemptError,
        Hist::E2e,
        Hist::Startup,
        Hist::CreatedToScheduled,
        Hist::ScheduledToBound,
        Hist::BoundToRunning,
    ];

    /// The name the report and [`Histograms::percentiles`] know it by.
    pub fn name(self) -> &'static str {
        match self {
            Hist::Attempt => "attempt",
            Hist::AttemptScheduled => "attempt.scheduled",
            Hist::AttemptUnschedulable => "attempt.unschedulable",
            Hist::AttemptError => "attempt.error",
            Hist::E2e => "e2e",
            Hist::Startup => "startup",
            Hist::CreatedToScheduled => "stage.created_to_scheduled",
            Hist::ScheduledToBound => "stage.scheduled_to_bound",
            Hist::BoundToRunning => "stage.bound_to_running",
        }
    }

    fn of_name(name: &str) -> Option<Hist> {
        Hist::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// Histograms by name, serialized into the report. A histogram exists once something was recorded
/// in it.
#[derive(Debug, Default)]
pub struct Histograms {
    fixed: [Option<LatencyHist>; Hist::ALL.len()],
    other: BTreeMap<String, LatencyHist>,
}

impl Histograms {
    /// Records into one of the driver's histograms (no lookup by name).
    pub fn record_at(&mut self, hist: Hist, nanos: u64) {
        self.fixed[hist as usize].get_or_insert_with(LatencyHist::default).record_nanos(nanos);
    }

    pub fn record(&mut self, name: &str, nanos: u64) {
        if let Some(h) = Hist::of_name(name) {
            return self.record_at(h, nanos);
        }
        match self.other.get_mut(name) {
            Some(h) => h.record_nanos(nanos),
            None => {
                let mut h = LatencyHist::default();
                h.record_nanos(nanos);
                self.other.insert(name.to_string(), h);
            }
        }
    }

    /// The histogram named `name`, if anything was recorded in it.
    pub fn get(&self, name: &str) -> Option<&LatencyHist> {
        match Hist::of_name(name) {
            Some(h) => self.fixed[h as usize].as_ref(),
            None => self.other.get(name),
        }
    }

    pub fn percentiles(&self, name: &str, unit_nanos: f64) -> Percentiles {
        self.get(name).map_or_else(Percentiles::default, |h| h.percentiles(unit_nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_any_histogram_in_a_unit() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000, 3).unwrap();
        assert_eq!(percentiles_of(&h, 1.0), Percentiles::default());
        for v in 1..=100u64 {
            h.record(v * 1000).unwrap();
        }
        // (unit) -> (p50, p90, p99, max, mean): the mean of 1..=100 thousand is 50.5 thousand.
        for (unit, want) in
            [(1.0, [50_000.0, 90_000.0, 99_000.0, 100_000.0, 50_500.0]), (1e3, [50.0, 90.0, 99.0, 100.0, 50.5])]
        {
            let p = percentiles_of(&h, unit);
            let got = [p.p50, p.p90, p.p99, p.max, p.mean];
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() <= w * 1e-3, "unit {unit}: {got:?} vs {want:?}");
            }
            assert_eq!(p.count, 100);
        }
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
        let back = crate::metrics::encoding::decode(&h.encode_in(1_000), "x").unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), 1000, "rescaled to microseconds");
    }

    #[test]
    fn a_named_histogram_and_its_slot_are_one_histogram() {
        let mut h = Histograms::default();
        assert!(h.get("attempt").is_none() && h.get("custom").is_none(), "nothing recorded yet");
        h.record_at(Hist::Attempt, 2_000);
        h.record("attempt", 4_000);
        h.record("custom", 7_000);
        assert_eq!(h.get("attempt").map(|x| x.0.len()), Some(2));
        assert_eq!(h.percentiles("custom", 1_000.0).count, 1);
        assert!(h.get("attempt.error").is_none(), "an empty slot is no histogram");
        for k in Hist::ALL {
            assert_eq!(Hist::of_name(k.name()), Some(k), "{k:?}");
        }
    }
}
