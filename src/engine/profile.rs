//! Sampled per-plugin timing, like upstream's `scheduler_plugin_execution_duration_seconds`
//! (which times 10 % of cycles): on a sampled cycle every plugin call at PreFilter, Filter,
//! PreScore, Score and NormalizeScore is timed; other cycles pay one thread-local flag read per
//! plugin call. Filter blocks evaluated in parallel on other threads are not timed.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::framework::{Framework, PluginId};

/// An extension point whose plugin calls are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Point {
    PreFilter,
    Filter,
    PreScore,
    Score,
    NormalizeScore,
}

impl Point {
    pub fn as_str(self) -> &'static str {
        match self {
            Point::PreFilter => "PreFilter",
            Point::Filter => "Filter",
            Point::PreScore => "PreScore",
            Point::Score => "Score",
            Point::NormalizeScore => "NormalizeScore",
        }
    }
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static SPANS: RefCell<Vec<(PluginId, Point, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f`, timing it when the current cycle is sampled.
#[inline]
pub fn timed<R>(plugin: PluginId, point: Point, f: impl FnOnce() -> R) -> R {
    if !ACTIVE.with(Cell::get) {
        return f();
    }
    let t0 = Instant::now();
    let r = f();
    let nanos = t0.elapsed().as_nanos() as u64;
    SPANS.with(|s| s.borrow_mut().push((plugin, point, nanos)));
    r
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// Collects the timings of sampled cycles.
#[derive(Debug, Clone)]
pub struct Profiler {
    /// Time one cycle in `every` (0 = never).
    every: u64,
    counter: u64,
    pub sampled_cycles: u64,
    /// Per (plugin, extension point): time per sampled cycle, ns.
    pub by_plugin: BTreeMap<(String, &'static str), Histogram<u64>>,
    /// Per extension point: the plugins' summed time per sampled cycle, ns.
    pub by_point: BTreeMap<&'static str, Histogram<u64>>,
}

impl Profiler {
    /// Samples `percent` of cycles (evenly spaced; 0 disables).
    pub fn new(percent: u32) -> Self {
        let every = if percent == 0 { 0 } else { (100 / percent.min(100)) as u64 };
        Profiler { every, counter: 0, sampled_cycles: 0, by_plugin: BTreeMap::new(), by_point: BTreeMap::new() }
    }

    /// Starts a cycle; returns whether it is sampled.
    pub fn begin(&mut self) -> bool {
        if self.every == 0 {
            return false;
        }
        self.counter += 1;
        let sampled = self.counter.is_multiple_of(self.every);
        if sampled {
            SPANS.with(|s| s.borrow_mut().clear());
            ACTIVE.with(|a| a.set(true));
        }
        sampled
    }

    /// Ends a sampled cycle: folds its spans into the histograms.
    pub fn end(&mut self, fw: &Framework) {
        ACTIVE.with(|a| a.set(false));
        self.sampled_cycles += 1;
        let spans = SPANS.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let mut per_plugin: BTreeMap<(PluginId, Point), u64> = BTreeMap::new();
        let mut per_point: BTreeMap<Point, u64> = BTreeMap::new();
        for (p, pt, ns) in spans {
            *per_plugin.entry((p, pt)).or_default() += ns;
            *per_point.entry(pt).or_default() += ns;
        }
        for ((p, pt), ns) in per_plugin {
            let key = (fw.plugin(p).name().to_string(), pt.as_str());
            self.by_plugin.entry(key).or_insert_with(hist).saturating_record(ns.max(1));
        }
        for (pt, ns) in per_point {
            self.by_point.entry(pt.as_str()).or_insert_with(hist).saturating_record(ns.max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sampled_cycles_record_spans() {
        let mut p = Profiler::new(50);
        assert!(!p.begin());
        assert_eq!(timed(0, Point::Filter, || 7), 7);
        assert!(SPANS.with(|s| s.borrow().is_empty()), "an unsampled cycle records nothing");
        assert!(p.begin());
        timed(0, Point::Filter, || std::hint::black_box(1));
        assert_eq!(SPANS.with(|s| s.borrow().len()), 1);
        ACTIVE.with(|a| a.set(false));
        assert_eq!(Profiler::new(0).every, 0);
        assert_eq!(Profiler::new(10).every, 10);
        assert_eq!(Profiler::new(100).every, 1);
    }
}
