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
    PreFilter = 0,
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

/// Whether cycle `k` (1-based) is timed when `percent` of cycles are: when `floor(k * P / 100)`
/// steps up from cycle k-1, so exactly P of every 100 consecutive cycles are timed, spread evenly
/// (P = 10: cycles 10, 20, ...; P = 60: 3 of every 5), the same cycles in every run.
pub fn cycle_sampled(k: u64, percent: u32) -> bool {
    let p = u64::from(percent.min(100));
    k >= 1 && (k * p) / 100 > ((k - 1) * p) / 100
}

/// Collects the timings of sampled cycles.
#[derive(Debug, Clone)]
pub struct Profiler {
    /// Percent of cycles timed (0 = none), see [`cycle_sampled`].
    percent: u32,
    counter: u64,
    pub sampled_cycles: u64,
    /// Per (plugin name, extension point): time per sampled cycle, ns ([`Profiler::by_plugin`]).
    plugin_hists: Vec<((&'static str, &'static str), Histogram<u64>)>,
    /// Per extension point (`Point as usize`): the plugins' summed time per sampled cycle, ns.
    point_hists: [Option<Histogram<u64>>; POINTS.len()],
    /// Spans of the cycle being folded (kept to reuse its allocation).
    spans: Vec<(PluginId, Point, u64)>,
    /// The framework (its address) `slot` and `sums` are laid out for: per plugin id and point
    /// (`pid * POINTS.len() + point`), the index in `plugin_hists` (`u32::MAX`: not looked up yet),
    /// and the cycle's summed time (`u64::MAX`: no call).
    slot_fw: usize,
    slot: Vec<u32>,
    sums: Vec<u64>,
}

impl Profiler {
    /// Samples `percent` of cycles (evenly spaced; 0 disables).
    pub fn new(percent: u32) -> Self {
        Profiler {
            percent: percent.min(100),
            counter: 0,
            sampled_cycles: 0,
            plugin_hists: Vec::new(),
            point_hists: Default::default(),
            spans: Vec::new(),
            slot_fw: 0,
            slot: Vec::new(),
            sums: Vec::new(),
        }
    }

    /// Per (plugin name, extension point): time per sampled cycle, ns.
    pub fn by_plugin(&self) -> BTreeMap<(&'static str, &'static str), &Histogram<u64>> {
        self.plugin_hists.iter().map(|(k, h)| (*k, h)).collect()
    }

    /// Per extension point: the plugins' summed time per sampled cycle, ns.
    pub fn by_point(&self) -> BTreeMap<&'static str, &Histogram<u64>> {
        POINTS.iter().zip(&self.point_hists).filter_map(|(pt, h)| Some((pt.as_str(), h.as_ref()?))).collect()
    }

    /// Starts a cycle; returns whether it is sampled.
    pub fn begin(&mut self) -> bool {
        if self.percent == 0 {
            return false;
        }
        self.counter += 1;
        let sampled = cycle_sampled(self.counter, self.percent);
        if sampled {
            SPANS.with(|s| s.borrow_mut().clear());
            ACTIVE.with(|a| a.set(true));
        }
        sampled
    }

    /// Ends a sampled cycle: folds its spans into the histograms. Allocation-free once every
    /// (plugin, point) has been seen: the span buffers are swapped, not dropped, and a (plugin,
    /// point)'s histogram is found by plugin id (by name only the first time, or after a cycle of
    /// another framework).
    pub fn end(&mut self, fw: &Framework) {
        ACTIVE.with(|a| a.set(false));
        self.sampled_cycles += 1;
        SPANS.with(|s| std::mem::swap(&mut *s.borrow_mut(), &mut self.spans));
        let fw_addr = std::ptr::from_ref(fw) as usize;
        let slots = fw.plugins.len() * POINTS.len();
        if self.slot_fw != fw_addr || self.slot.len() != slots {
            self.slot_fw = fw_addr;
            self.slot.clear();
            self.slot.resize(slots, u32::MAX);
            self.sums.clear();
            self.sums.resize(slots, u64::MAX);
        }
        // A plugin is called several times per cycle (once per filter block): sum per key.
        let mut per_point: [Option<u64>; POINTS.len()] = [None; POINTS.len()];
        for &(p, pt, ns) in &self.spans {
            let sum = &mut self.sums[p * POINTS.len() + pt as usize];
            *sum = if *sum == u64::MAX { ns } else { *sum + ns };
            *per_point[pt as usize].get_or_insert(0) += ns;
        }
        for &(p, pt, _) in &self.spans {
            let at = p * POINTS.len() + pt as usize;
            let ns = std::mem::replace(&mut self.sums[at], u64::MAX);
            if ns == u64::MAX {
                continue; // recorded already (an earlier span of the same key)
            }
            let key = (fw.plugin(p).name(), pt.as_str());
            // The cached slot holds this very name (a framework at a reused address may not).
            let same = |k: &(&str, &str)| std::ptr::eq(k.0, key.0) && std::ptr::eq(k.1, key.1);
            if self.plugin_hists.get(self.slot[at] as usize).is_none_or(|(k, _)| !same(k)) {
                let found = self.plugin_hists.iter().position(|(k, _)| *k == key);
                self.slot[at] = found.unwrap_or_else(|| {
                    self.plugin_hists.push((key, hist()));
                    self.plugin_hists.len() - 1
                }) as u32;
            }
            self.plugin_hists[self.slot[at] as usize].1.saturating_record(ns.max(1));
        }
        for (h, ns) in self.point_hists.iter_mut().zip(per_point) {
            if let Some(ns) = ns {
                h.get_or_insert_with(hist).saturating_record(ns.max(1));
            }
        }
        self.spans.clear();
    }
}

/// Every point, in declaration order (`Point as usize` indexes it).
const POINTS: [Point; 5] = [Point::PreFilter, Point::Filter, Point::PreScore, Point::Score, Point::NormalizeScore];

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
    }

    /// The share of cycles timed is the share asked for (60 % once timed every cycle: 100 / 60
    /// rounded to "one in 1"), spread evenly, the same cycles each run.
    #[test]
    fn the_sampled_share_is_the_percentage_asked_for() {
        for (percent, first_sampled) in [
            (0u32, vec![]),
            (1, vec![100]),
            (10, vec![10, 20, 30]),
            (33, vec![4, 7, 10]),
            (50, vec![2, 4, 6]),
            (60, vec![2, 4, 5]),
            (99, vec![2, 3, 4]),
            (100, vec![1, 2, 3]),
        ] {
            let mut p = Profiler::new(percent);
            let sampled: Vec<u64> = (1..=1000u64)
                .filter(|_| {
                    p.begin() && {
                        ACTIVE.with(|a| a.set(false));
                        true
                    }
                })
                .collect();
            assert_eq!(sampled.len() as u64, 10 * u64::from(percent), "{percent}%: {} of 1000", sampled.len());
            assert_eq!(&sampled[..first_sampled.len()], &first_sampled[..], "{percent}%");
            for window in (1..=900u64).step_by(37) {
                let n = (window..window + 100).filter(|k| cycle_sampled(*k, percent)).count() as u32;
                assert_eq!(n, percent, "{percent}%: cycles {window}..{}", window + 100);
            }
        }
    }

    #[test]
    fn end_sums_calls_per_plugin_and_point() {
        use crate::config::{PluginArgs, Profile, ProfilePlugins};
        struct Named(&'static str);
        impl crate::framework::Plugin for Named {
            fn name(&self) -> &'static str {
                self.0
            }
        }
        let mut registry = crate::framework::Registry::new();
        for name in ["NodeUnschedulable", "NodeName"] {
            registry.register_instance(std::sync::Arc::new(Named(name))).unwrap();
        }
        let mut interner = crate::snapshot::Interner::default();
        let plugins =
            ProfilePlugins { filter: vec!["NodeUnschedulable".into(), "NodeName".into()], ..Default::default() };
        let profile = Profile {
            scheduler_name: "default-scheduler".into(),
            percentage_of_nodes_to_score: None,
            plugins,
            args: PluginArgs::default(),
        };
        let fw = Framework::new(&profile, &registry, &mut interner).unwrap();
        let id = |name: &str| fw.plugins.iter().position(|p| p.name() == name).unwrap();
        let (a, b) = (id("NodeUnschedulable"), id("NodeName"));
        let mut p = Profiler::new(100);
        // Two sampled cycles; the first calls plugin `a` twice (two filter blocks).
        for spans in
            [vec![(a, Point::Filter, 100), (b, Point::Filter, 30), (a, Point::Filter, 50)], vec![(b, Point::Filter, 7)]]
        {
            assert!(p.begin());
            SPANS.with(|s| s.borrow_mut().extend(spans));
            p.end(&fw);
        }
        let (by_plugin, by_point) = (p.by_plugin(), p.by_point());
        let h = by_plugin[&("NodeUnschedulable", "Filter")];
        assert_eq!((h.len(), h.max()), (1, 150), "one record per cycle, the calls summed");
        let h = by_plugin[&("NodeName", "Filter")];
        assert_eq!((h.len(), h.min(), h.max()), (2, 7, 30));
        let h = by_point["Filter"];
        assert_eq!((h.len(), h.min(), h.max()), (2, 7, 180));
        assert!(!by_point.contains_key("Score"), "no span, no record");
        assert_eq!(p.sampled_cycles, 2);
    }
}
