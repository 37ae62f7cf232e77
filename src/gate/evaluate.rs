//! From two sets of runs to cells (workload x metric) with ratios, intervals, p-values and verdicts.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::input::RunSample;
use super::metric::{Metric, P99_MIN_MEASURED_PODS};
use super::policy::Policy;
use crate::error::InputError;
use crate::stats::{self, Method, ShiftEstimate};

/// The fewest runs (or pairs) per side the gate accepts.
pub const MIN_SAMPLES: usize = 6;

/// The `test` of an instruction-count cell: counts are near-deterministic, so one run per side is
/// enough and the cell is judged on its ratio and the spread of the runs, outside the Holm family.
pub const INSTRUCTION_TEST: &str = "instruction-count";

/// The verdict of one cell, checked in this order (reference design, section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// `p_holm < alpha` and the whole interval lies beyond the budget: `low > 1 + budget`.
    Regressed,
    /// Significant before correction (`p < alpha`) and the estimate exceeds the budget, but either the
    /// interval crosses the budget line or Holm's correction does not confirm it.
    Suspect,
    /// The interval is wider than twice the budget: the gate cannot see a budget-sized change.
    Noisy,
    /// `p_holm < alpha` and the whole interval lies below 1.
    Improved,
    /// None of the above.
    Ok,
    /// Not gated (report-only metric, or a p99 from runs too small to resolve it).
    ReportOnly,
}

impl Verdict {
    /// The lowercase name used in JSON and JUnit.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Suspect => "suspect",
            Verdict::Noisy => "noisy",
            Verdict::Improved => "improved",
            Verdict::Ok => "ok",
            Verdict::ReportOnly => "report-only",
        }
    }

    /// The label shown in the terminal table.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Suspect => "suspect",
            Verdict::Noisy => "noisy",
            Verdict::Improved => "improved",
            Verdict::Ok => "ok",
            Verdict::ReportOnly => "-",
        }
    }
}

/// Decides a gated cell's verdict from its worse-oriented ratio interval `[low, high]`, its estimate,
/// raw and Holm-corrected p-values, budget (fraction) and the family-wise `alpha`.
pub fn decide(ratio: f64, low: f64, high: f64, p: f64, p_holm: f64, budget: f64, alpha: f64) -> Verdict {
    let line = 1.0 + budget;
    if p_holm < alpha && low > line {
        Verdict::Regressed
    } else if p < alpha && ratio > line {
        Verdict::Suspect
    } else if high - low > 2.0 * budget {
        Verdict::Noisy
    } else if p_holm < alpha && high < 1.0 {
        Verdict::Improved
    } else {
        Verdict::Ok
    }
}

/// One workload x metric comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    pub test_case: String,
    pub workload: String,
    #[serde(serialize_with = "metric_name")]
    pub metric: Metric,
    pub unit: &'static str,
    pub n_base: usize,
    pub n_cand: usize,
    pub median_base: f64,
    pub median_cand: f64,
    /// The distribution-free 95% interval of the current median (order statistics), for history charts.
    pub median_cand_low: f64,
    pub median_cand_high: f64,
    /// The Hodges-Lehmann ratio oriented so that `> 1` is worse (base/cand for pods/s, cand/base for
    /// latency).
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// The coverage the interval guarantees (at least `1 - alpha` when exact).
    pub confidence: f64,
    /// `mann-whitney` (independent runs) or `wilcoxon` (interleaved pairs).
    pub test: &'static str,
    #[serde(serialize_with = "method_name")]
    pub p_method: Method,
    pub p: f64,
    /// Holm-corrected p over the gated cells; `None` for report-only cells.
    pub p_holm: Option<f64>,
    /// The budget as a fraction; `None` for report-only metrics.
    pub budget: Option<f64>,
    pub gated: bool,
    /// Why a cell is report-only.
    pub note: Option<String>,
    pub verdict: Verdict,
}

fn metric_name<S: serde::Serializer>(m: &Metric, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

fn method_name<S: serde::Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.as_str())
}

impl Cell {
    /// `testCase/workload`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.test_case, self.workload)
    }

    /// The relative change of the raw metric, `cand/base - 1`, with its interval (natural direction:
    /// a throughput drop is negative, a latency rise positive).
    pub fn change(&self) -> (f64, f64, f64) {
        if self.metric.bigger_is_better() {
            (1.0 / self.ratio - 1.0, 1.0 / self.ratio_high - 1.0, 1.0 / self.ratio_low - 1.0)
        } else {
            (self.ratio - 1.0, self.ratio_low - 1.0, self.ratio_high - 1.0)
        }
    }
}

/// Placement comparison of one workload and seed: the decision gate beside the speed gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementCheck {
    pub test_case: String,
    pub workload: String,
    pub seed: u64,
    pub base_digest: String,
    pub cand_digest: String,
    pub changed: bool,
    /// Pods on a different node (or present on one side only), when both sides carry `placements`.
    pub moved_pods: Option<usize>,
    /// Pods compared (the union of both sides' pod names), when both sides carry `placements`.
    pub compared_pods: Option<usize>,
}

/// The change of one plugin's (or extension point's) instructions per scheduled pod, so that an
/// instruction regression names its plugin.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginChange {
    pub test_case: String,
    pub workload: String,
    /// `NodeResourcesFit/Score`, `NodeResourcesFit` or `Score`, by `kind`.
    pub name: String,
    /// `plugin-extension-point`, `plugin` or `extension-point`.
    pub kind: &'static str,
    /// Median over the runs of inclusive instructions per scheduled pod.
    pub base_per_pod: f64,
    pub cand_per_pod: f64,
    /// `cand/base - 1` (infinite for a plugin absent from the baseline).
    pub change: f64,
    /// This row's part of the change of the whole measured phase per pod (`delta / total delta`).
    pub share_of_total_change: f64,
}

impl PluginChange {
    /// `testCase/workload`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.test_case, self.workload)
    }

    /// The absolute change per pod.
    pub fn delta(&self) -> f64 {
        self.cand_per_pod - self.base_per_pod
    }
}

/// A workload present on one side only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unmatched {
    pub key: String,
    /// `baseline` or `current`.
    pub present_in: &'static str,
}

/// Where one side's runs came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Source {
    pub file: String,
    /// The report's top-level fields other than `runs` (environment fingerprints and the like).
    pub header: serde_json::Map<String, serde_json::Value>,
}

/// Flags that turn warnings into failures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateFlags {
    /// Exit 3 when a gated cell is noisy (and nothing regressed).
    pub fail_on_noisy: bool,
    /// Exit 1 when placements changed for the same seed.
    pub fail_on_placement_change: bool,
    /// Exit 1 when a cell is suspect.
    pub strict: bool,
}

/// Exit code: pass.
pub const EXIT_PASS: i32 = crate::error::exit::OK as i32;
/// Exit code: at least one regression (or a failure turned on by a flag).
pub const EXIT_REGRESSION: i32 = crate::error::exit::FAILED as i32;
/// Exit code: usage or input error.
pub const EXIT_INPUT: i32 = crate::error::exit::BAD_INPUT as i32;
/// Exit code: noisy under `--fail-on-noisy`.
pub const EXIT_NOISY: i32 = crate::error::exit::NOISY as i32;

/// The full result of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct GateReport {
    /// True for interleaved A/B pairs (Wilcoxon), false for independent runs (Mann-Whitney).
    pub paired: bool,
    /// A report-only `compare`: nothing is gated and there is no verdict.
    pub compare_only: bool,
    pub alpha: f64,
    pub cells: Vec<Cell>,
    pub placements: Vec<PlacementCheck>,
    /// Per plugin and extension point, for workloads measured in instructions.
    pub plugin_changes: Vec<PluginChange>,
    pub unmatched: Vec<Unmatched>,
    pub warnings: Vec<String>,
    pub baseline: Source,
    pub current: Source,
}

impl GateReport {
    /// The number of cells with verdict `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.cells.iter().filter(|c| c.verdict == v).count()
    }

    /// The number of gated cells.
    pub fn gated(&self) -> usize {
        self.cells.iter().filter(|c| c.gated).count()
    }

    /// The number of gated cells decided by a rank test (the Holm family; instruction counts are not in it).
    pub fn holm_family(&self) -> usize {
        self.cells.iter().filter(|c| c.gated && c.test != INSTRUCTION_TEST).count()
    }

    /// The plugin rows (`plugin-extension-point`) of workload `key`, largest absolute change first.
    pub fn plugin_rows(&self, key: &str) -> Vec<&PluginChange> {
        let mut rows: Vec<&PluginChange> =
            self.plugin_changes.iter().filter(|p| p.kind == "plugin-extension-point" && p.key() == key).collect();
        rows.sort_by(|a, b| b.delta().abs().total_cmp(&a.delta().abs()).then_with(|| a.name.cmp(&b.name)));
        rows
    }

    /// `NodeResourcesFit/Score +812 (+3.5%), ...`: the `n` plugin rows of `key` that changed most.
    pub fn top_plugin_changes(&self, key: &str, n: usize) -> String {
        let rows: Vec<String> = self
            .plugin_rows(key)
            .into_iter()
            .filter(|p| p.delta() != 0.0)
            .take(n)
            .map(|p| format!("{} {:+.0} ({})", p.name, p.delta(), super::format::pct(p.change)))
            .collect();
        if rows.is_empty() {
            "no plugin changed".to_string()
        } else {
            rows.join(", ")
        }
    }

    /// True if a same-seed placement changed.
    pub fn placement_changed(&self) -> bool {
        self.placements.iter().any(|p| p.changed)
    }

    /// The workloads with a suspect cell: in `ab` mode, extend these once to 20 pairs and decide again;
    /// against a stored baseline, re-measure workloads with a regressed cell to confirm.
    pub fn workloads_with(&self, v: Verdict) -> Vec<String> {
        let set: BTreeSet<String> = self.cells.iter().filter(|c| c.verdict == v).map(Cell::key).collect();
        set.into_iter().collect()
    }

    /// The exit code: 1 if anything regressed (or is suspect under `strict`, or placements changed
    /// under `fail_on_placement_change`), else 3 if something is noisy under `fail_on_noisy`, else 0.
    pub fn exit_code(&self, flags: GateFlags) -> i32 {
        let fails = self.count(Verdict::Regressed) > 0
            || (flags.strict && self.count(Verdict::Suspect) > 0)
            || (flags.fail_on_placement_change && self.placement_changed());
        if fails {
            EXIT_REGRESSION
        } else if flags.fail_on_noisy && self.count(Verdict::Noisy) > 0 {
            EXIT_NOISY
        } else {
            EXIT_PASS
        }
    }
}

/// Compares baseline runs with candidate runs under `policy`: matched by `(testCase, workload)`,
/// paired by `pair` index when `paired`. Errors (exit 2) on fewer than [`MIN_SAMPLES`] runs or pairs per
/// side, on a `workloadDigest` mismatch, or when no workload matches.
pub fn evaluate(
    base: &[RunSample],
    cand: &[RunSample],
    policy: &Policy,
    paired: bool,
) -> Result<GateReport, InputError> {
    let options =
        Options { base_label: "baseline", cand_label: "current", min_samples: MIN_SAMPLES, compare_only: false };
    evaluate_with(base, cand, policy, paired, &options)
}

/// How strict [`evaluate_with`] is and how it names the sides in errors.
pub(crate) struct Options<'a> {
    pub base_label: &'a str,
    pub cand_label: &'a str,
    pub min_samples: usize,
    /// Report-only comparison: digest mismatches are warnings, and no cell is gated.
    pub compare_only: bool,
}

struct Group<'a> {
    key: String,
    base: Vec<&'a RunSample>,
    cand: Vec<&'a RunSample>,
}

fn group<'a>(base: &'a [RunSample], cand: &'a [RunSample]) -> Vec<Group<'a>> {
    let mut order: Vec<String> = Vec::new();
    let mut by_key: HashMap<String, Group<'a>> = HashMap::new();
    for (runs, is_base) in [(base, true), (cand, false)] {
        for run in runs {
            let key = run.key();
            let g = by_key.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                Group { key, base: Vec::new(), cand: Vec::new() }
            });
            if is_base {
                g.base.push(run);
            } else {
                g.cand.push(run);
            }
        }
    }
    order.into_iter().map(|k| by_key.remove(&k).expect("key recorded")).collect()
}

pub(crate) fn evaluate_with(
    base: &[RunSample],
    cand: &[RunSample],
    policy: &Policy,
    paired: bool,
    opt: &Options,
) -> Result<GateReport, InputError> {
    let mut report = GateReport {
        paired,
        compare_only: opt.compare_only,
        alpha: policy.alpha,
        cells: Vec::new(),
        placements: Vec::new(),
        plugin_changes: Vec::new(),
        unmatched: Vec::new(),
        warnings: Vec::new(),
        baseline: Source { file: opt.base_label.to_string(), header: Default::default() },
        current: Source { file: opt.cand_label.to_string(), header: Default::default() },
    };
    let groups = group(base, cand);
    for g in &groups {
        if g.cand.is_empty() {
            report.unmatched.push(Unmatched { key: g.key.clone(), present_in: "baseline" });
        } else if g.base.is_empty() {
            report.unmatched.push(Unmatched { key: g.key.clone(), present_in: "current" });
        }
    }
    let matched: Vec<&Group> = groups.iter().filter(|g| !g.base.is_empty() && !g.cand.is_empty()).collect();
    if matched.is_empty() {
        let names = |side: &str| {
            let keys: Vec<&str> =
                report.unmatched.iter().filter(|u| u.present_in == side).map(|u| u.key.as_str()).collect();
            keys.join(", ")
        };
        return Err(InputError::new(
            opt.cand_label,
            "runs",
            format!(
                "no workload in common with {}: it has [{}], this file has [{}]",
                opt.base_label,
                names("baseline"),
                names("current")
            ),
        ));
    }
    for u in &report.unmatched {
        report.warnings.push(format!("{} is only in the {} report; not compared", u.key, u.present_in));
    }
    for g in &matched {
        check_digests(g, opt, &mut report.warnings)?;
        if measured_in_instructions(g, opt)? {
            for metric in Metric::INSTRUCTIONS {
                let b: Vec<f64> = g.base.iter().map(|r| metric.value(r)).collect();
                let c: Vec<f64> = g.cand.iter().map(|r| metric.value(r)).collect();
                report.cells.push(instruction_cell(g, metric, &b, &c, policy, opt.compare_only));
            }
            report.plugin_changes.extend(plugin_changes(g));
            report.placements.extend(placement_checks(g, &mut report.warnings));
            continue;
        }
        let (base_values, cand_values) = samples(g, paired, opt, &mut report.warnings)?;
        let min_pods = g.base.iter().chain(&g.cand).map(|r| r.measured_pods).min().unwrap_or(0);
        for metric in Metric::TIMED {
            let b: Vec<f64> = base_values.iter().map(|r| metric.value(r)).collect();
            let c: Vec<f64> = cand_values.iter().map(|r| metric.value(r)).collect();
            report.cells.push(cell(g, metric, &b, &c, paired, policy, min_pods, opt.compare_only));
        }
        report.placements.extend(placement_checks(g, &mut report.warnings));
    }
    let gated: Vec<usize> = (0..report.cells.len())
        .filter(|&i| report.cells[i].gated && report.cells[i].test != INSTRUCTION_TEST)
        .collect();
    let adjusted = stats::holm(&gated.iter().map(|&i| report.cells[i].p).collect::<Vec<_>>());
    for (&i, p_holm) in gated.iter().zip(adjusted) {
        let c = &mut report.cells[i];
        c.p_holm = Some(p_holm);
        let budget = c.budget.expect("gated cells have budgets");
        c.verdict = decide(c.ratio, c.ratio_low, c.ratio_high, c.p, p_holm, budget, policy.alpha);
    }
    if let Some(w) = blind_family_warning(&report) {
        report.warnings.push(w);
    }
    Ok(report)
}

/// True when both sides of the group counted instructions (every run has `instructions`), false when
/// both measured time; an input error when one side (or one run) differs.
fn measured_in_instructions(g: &Group, opt: &Options) -> Result<bool, InputError> {
    let kind = |runs: &[&RunSample], label: &str| -> Result<bool, InputError> {
        let with = runs.iter().filter(|r| r.instructions.is_some()).count();
        if with != 0 && with != runs.len() {
            return Err(InputError::new(
                label,
                "runs[].instructions",
                format!(
                    "{}: {with} of {} runs counted instructions; a report holds runs of one kind (`run --measure instructions` or time)",
                    g.key,
                    runs.len()
                ),
            ));
        }
        Ok(with > 0)
    };
    let (b, c) = (kind(&g.base, opt.base_label)?, kind(&g.cand, opt.cand_label)?);
    if b != c {
        let what = |i: bool| if i { "instructions (`run --measure instructions`)" } else { "time" };
        return Err(InputError::new(
            opt.cand_label,
            "runs[].instructions",
            format!(
                "{}: the {} measured {} but this report measured {}; compare like with like",
                g.key,
                opt.base_label,
                what(b),
                what(c)
            ),
        ));
    }
    Ok(b)
}

/// Decides an instruction-count cell from the ratio of medians (`cand/base`, `> 1` worse), the
/// spread of the runs `[low, high]` (`min cand / max base`, `max cand / min base`) and the budget:
/// counts repeat to well under the budget, so no rank test is needed. Regressed when every run pair
/// is beyond the budget; suspect when the medians are but some runs are not; noisy when the runs
/// spread over more than twice the budget; improved when every run pair is better by more than the
/// budget.
pub fn decide_count(ratio: f64, low: f64, high: f64, budget: f64) -> Verdict {
    if low > 1.0 + budget {
        Verdict::Regressed
    } else if ratio > 1.0 + budget {
        Verdict::Suspect
    } else if high - low > 2.0 * budget {
        Verdict::Noisy
    } else if high < 1.0 - budget {
        Verdict::Improved
    } else {
        Verdict::Ok
    }
}

fn instruction_cell(g: &Group, metric: Metric, b: &[f64], c: &[f64], policy: &Policy, compare_only: bool) -> Cell {
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (mb, mc) = (stats::median(b), stats::median(c));
    let ratio = mc / mb;
    let (low, high) = (min(c) / max(b), max(c) / min(b));
    let budget = policy.budget(&g.key, metric, false);
    let mut note = None;
    let gated = if compare_only {
        false
    } else if !policy.is_gated(&g.key, metric) || budget.is_none() {
        note = Some("report only".to_string());
        false
    } else if !(mb > 0.0 && ratio.is_finite()) {
        note = Some("report only: no instructions per unit in the baseline (nothing scheduled?)".to_string());
        false
    } else {
        true
    };
    let verdict = if gated { decide_count(ratio, low, high, budget.expect("gated")) } else { Verdict::ReportOnly };
    let first = &g.base[0];
    Cell {
        test_case: first.test_case.clone(),
        workload: first.workload.clone(),
        metric,
        unit: metric.unit(),
        n_base: b.len(),
        n_cand: c.len(),
        median_base: mb,
        median_cand: mc,
        median_cand_low: min(c),
        median_cand_high: max(c),
        ratio,
        ratio_low: low,
        ratio_high: high,
        confidence: 1.0,
        test: INSTRUCTION_TEST,
        p_method: Method::Exact,
        // Counts do not need a p-value: 0 when every run pair differs in the same direction.
        p: if low > 1.0 || high < 1.0 { 0.0 } else { 1.0 },
        p_holm: None,
        budget,
        gated,
        note,
        verdict,
    }
}

/// Per plugin, extension point and plugin/extension point: the median instructions per scheduled
/// pod on each side and the change.
fn plugin_changes(g: &Group) -> Vec<PluginChange> {
    type Pick = fn(&crate::report::InstructionsReport) -> &BTreeMap<String, u64>;
    let per_pod = |runs: &[&RunSample], pick: Pick, name: &str| -> f64 {
        let v: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.instructions.as_ref())
            .map(|i| {
                let n = pick(i).get(name).copied().unwrap_or(0) as f64;
                if i.scheduled_pods == 0 {
                    0.0
                } else {
                    n / i.scheduled_pods as f64
                }
            })
            .collect();
        stats::median(&v)
    };
    let total = |runs: &[&RunSample]| -> f64 {
        stats::median(&runs.iter().map(|r| Metric::InstructionsPerPod.value(r)).collect::<Vec<_>>())
    };
    let total_delta = total(&g.cand) - total(&g.base);
    let first = &g.base[0];
    let mut out = Vec::new();
    let kinds: [(&'static str, Pick); 3] = [
        ("plugin-extension-point", |i| &i.by_plugin_extension_point),
        ("plugin", |i| &i.by_plugin),
        ("extension-point", |i| &i.by_extension_point),
    ];
    for (kind, pick) in kinds {
        let names: BTreeSet<&String> =
            g.base.iter().chain(&g.cand).filter_map(|r| r.instructions.as_ref()).flat_map(|i| pick(i).keys()).collect();
        for name in names {
            let (b, c) = (per_pod(&g.base, pick, name), per_pod(&g.cand, pick, name));
            out.push(PluginChange {
                test_case: first.test_case.clone(),
                workload: first.workload.clone(),
                name: name.clone(),
                kind,
                base_per_pod: b,
                cand_per_pod: c,
                change: if b > 0.0 {
                    c / b - 1.0
                } else if c > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                },
                share_of_total_change: if total_delta != 0.0 { (c - b) / total_delta } else { 0.0 },
            });
        }
    }
    out
}

fn check_digests(g: &Group, opt: &Options, warnings: &mut Vec<String>) -> Result<(), InputError> {
    fn digests(runs: &[&RunSample], f: fn(&RunSample) -> Option<&str>) -> BTreeSet<String> {
        runs.iter().filter_map(|r| f(r).map(str::to_string)).collect()
    }
    fn workload(r: &RunSample) -> Option<&str> {
        // Empty: a writer that cannot compute schedperf's digest (the oracle's `run`).
        r.workload_digest.as_deref().filter(|d| !d.is_empty())
    }
    fn config(r: &RunSample) -> Option<&str> {
        Some(r.config_digest.as_str())
    }
    let (wb, wc) = (digests(&g.base, workload), digests(&g.cand, workload));
    for (set, label) in [(&wb, opt.base_label), (&wc, opt.cand_label)] {
        if set.len() > 1 {
            return Err(InputError::new(
                label,
                "runs[].workloadDigest",
                format!("{} mixes workload definitions {:?}; one report must hold one definition", g.key, set),
            ));
        }
    }
    if !wb.is_empty() && !wc.is_empty() && wb != wc {
        let msg = format!(
            "{}: workloadDigest {} differs from the {}'s {}; the workloads are not the same, so the runs are not comparable (refresh the baseline)",
            g.key,
            wc.iter().next().unwrap(),
            opt.base_label,
            wb.iter().next().unwrap()
        );
        if opt.compare_only {
            warnings.push(msg);
        } else {
            return Err(InputError::new(opt.cand_label, "runs[].workloadDigest", msg));
        }
    }
    let (cb, cc) = (digests(&g.base, config), digests(&g.cand, config));
    if cb != cc {
        warnings.push(format!(
            "{}: configDigest differs ({} {:?}, {} {:?}): this compares scheduler configurations",
            g.key, opt.base_label, cb, opt.cand_label, cc
        ));
    }
    Ok(())
}

/// The runs to compare on each side: all of them, or the complete pairs in pair order.
fn samples<'a>(
    g: &Group<'a>,
    paired: bool,
    opt: &Options,
    warnings: &mut Vec<String>,
) -> Result<(Vec<&'a RunSample>, Vec<&'a RunSample>), InputError> {
    let too_few = |label: &str, n: usize, what: &str| {
        InputError::new(
            label,
            "runs",
            format!("{} has {n} {what}; at least {} per side are needed (10 recommended)", g.key, opt.min_samples),
        )
    };
    if !paired {
        for (runs, label) in [(&g.base, opt.base_label), (&g.cand, opt.cand_label)] {
            if runs.len() < opt.min_samples {
                return Err(too_few(label, runs.len(), "runs"));
            }
        }
        return Ok((g.base.clone(), g.cand.clone()));
    }
    let index = |runs: &[&'a RunSample], label: &str| -> Result<BTreeMap<u32, &'a RunSample>, InputError> {
        let mut map = BTreeMap::new();
        for r in runs {
            let pair = r.pair.ok_or_else(|| {
                InputError::new(
                    label,
                    "runs[].pair",
                    format!("{} (rep {}) has no pair index; cannot pair A/B runs", g.key, r.rep),
                )
            })?;
            if map.insert(pair, *r).is_some() {
                return Err(InputError::new(label, "runs[].pair", format!("{} has pair {pair} twice", g.key)));
            }
        }
        Ok(map)
    };
    let (mb, mc) = (index(&g.base, opt.base_label)?, index(&g.cand, opt.cand_label)?);
    let common: Vec<u32> = mb.keys().filter(|k| mc.contains_key(k)).copied().collect();
    let orphans = mb.len() + mc.len() - 2 * common.len();
    if orphans > 0 {
        warnings.push(format!("{}: {orphans} run(s) without a partner in the other arm were left out", g.key));
    }
    if common.len() < opt.min_samples {
        return Err(too_few(opt.cand_label, common.len(), "complete A/B pairs"));
    }
    Ok((common.iter().map(|k| mb[k]).collect(), common.iter().map(|k| mc[k]).collect()))
}

#[allow(clippy::too_many_arguments)]
fn cell(
    g: &Group,
    metric: Metric,
    b: &[f64],
    c: &[f64],
    paired: bool,
    policy: &Policy,
    min_pods: u64,
    compare_only: bool,
) -> Cell {
    let confidence = 1.0 - policy.alpha;
    let lb: Vec<f64> = b.iter().map(|&v| metric.oriented_log(v)).collect();
    let lc: Vec<f64> = c.iter().map(|&v| metric.oriented_log(v)).collect();
    let (shift, test): (ShiftEstimate, &'static str) = if paired {
        let d: Vec<f64> = lc.iter().zip(&lb).map(|(c, b)| c - b).collect();
        (stats::hodges_lehmann_paired(&d, confidence), "wilcoxon")
    } else {
        (stats::hodges_lehmann_shift(&lc, &lb, confidence), "mann-whitney")
    };
    let budget = policy.budget(&g.key, metric, paired);
    let mut note = None;
    let gated = if compare_only {
        false
    } else if !policy.is_gated(&g.key, metric) || budget.is_none() {
        note = Some("report only".to_string());
        false
    } else if metric.is_p99() && min_pods < P99_MIN_MEASURED_PODS {
        note = Some(format!("report only: runs measured {min_pods} pods, p99 is gated from {P99_MIN_MEASURED_PODS}"));
        false
    } else {
        true
    };
    let (median_cand_low, median_cand_high, _) = stats::median_ci(c, 0.95);
    let first = &g.base[0];
    Cell {
        test_case: first.test_case.clone(),
        workload: first.workload.clone(),
        metric,
        unit: metric.unit(),
        n_base: b.len(),
        n_cand: c.len(),
        median_base: stats::median(b),
        median_cand: stats::median(c),
        median_cand_low,
        median_cand_high,
        ratio: shift.estimate.exp(),
        ratio_low: shift.low.exp(),
        ratio_high: shift.high.exp(),
        confidence: shift.achieved_confidence,
        test,
        p_method: shift.test.method,
        p: shift.test.p,
        p_holm: None,
        budget,
        gated,
        note,
        verdict: Verdict::ReportOnly,
    }
}

/// Compares `placementDigest` for every seed both sides ran.
fn placement_checks(g: &Group, warnings: &mut Vec<String>) -> Vec<PlacementCheck> {
    fn by_seed<'a>(runs: &[&'a RunSample]) -> BTreeMap<u64, Vec<&'a RunSample>> {
        let mut m: BTreeMap<u64, Vec<&'a RunSample>> = BTreeMap::new();
        for r in runs {
            m.entry(r.seed).or_default().push(*r);
        }
        m
    }
    let (sb, sc) = (by_seed(&g.base), by_seed(&g.cand));
    for (side, map) in [("baseline", &sb), ("current", &sc)] {
        for (seed, runs) in map {
            let distinct: BTreeSet<&str> = runs.iter().map(|r| r.placement_digest.as_str()).collect();
            if distinct.len() > 1 {
                warnings.push(format!(
                    "{}: the {side} placed pods differently in {} runs with the same seed {seed}: the scheduler is not deterministic",
                    g.key,
                    distinct.len()
                ));
            }
        }
    }
    let mut out = Vec::new();
    for (seed, base_runs) in &sb {
        let Some(cand_runs) = sc.get(seed) else {
            continue;
        };
        let (rb, rc) = (base_runs[0], cand_runs[0]);
        let changed = rb.placement_digest != rc.placement_digest;
        let (moved_pods, compared_pods) = match (&rb.placements, &rc.placements) {
            (Some(pb), Some(pc)) => {
                let pods: BTreeSet<&String> = pb.keys().chain(pc.keys()).collect();
                let moved = pods.iter().filter(|p| pb.get(**p) != pc.get(**p)).count();
                (Some(moved), Some(pods.len()))
            }
            _ => (None, None),
        };
        out.push(PlacementCheck {
            test_case: rb.test_case.clone(),
            workload: rb.workload.clone(),
            seed: *seed,
            base_digest: rb.placement_digest.clone(),
            cand_digest: rc.placement_digest.clone(),
            changed,
            moved_pods,
            compared_pods,
        });
    }
    if out.is_empty() {
        warnings.push(format!("{}: no seed in common; placements not compared", g.key));
    }
    out
}

/// The smallest p-value a test can return with these sample sizes: `2 / C(n + m, n)` for exact
/// Mann-Whitney, `2 / 2^n` for exact Wilcoxon.
pub fn min_achievable_p(n_base: usize, n_cand: usize, paired: bool) -> f64 {
    if paired {
        2.0 / 2f64.powi(n_base as i32)
    } else {
        let mut c = 1.0_f64;
        for i in 0..n_base {
            c = c * (n_cand + i + 1) as f64 / (i + 1) as f64;
        }
        (2.0 / c).min(1.0)
    }
}

/// Warns when Holm's correction over the family makes some gated cell unable to reach `alpha`.
fn blind_family_warning(report: &GateReport) -> Option<String> {
    let family = report.holm_family();
    let blind = report
        .cells
        .iter()
        .filter(|c| {
            c.gated
                && c.test != INSTRUCTION_TEST
                && min_achievable_p(c.n_base, c.n_cand, report.paired) * family as f64 >= report.alpha
        })
        .count();
    (blind > 0).then(|| {
        format!(
            "{blind} of {family} gated cells cannot reach p_holm < {} with their sample sizes (the smallest p times the family size is at least alpha): take more runs or pairs, or gate fewer metrics",
            report.alpha
        )
    })
}
