//! `schedperf compare PATH --config A --config B ...`: every config on the same workload and seed,
//! repetitions interleaved (`A B A B ...`), each in a fresh process; then speed, latency, placement
//! quality and changed placements side by side, relative to the first config.
//!
//! Speed figures are medians over repetitions with a Hodges-Lehmann ratio against the first config
//! and its 95% interval from the Mann-Whitney U distribution (runs of different configs are
//! independent). Placement figures are medians over repetitions.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::format;
use super::runner::{child_arguments, round_robin, RunRequest, Runner};
use crate::error::{Error, InputError};
use crate::report::document::{self, Block};
use crate::report::{Report as RunDocument, RunReport};
use crate::stats;

/// The schema of `compare.json` written by a config comparison.
pub const SWEEP_SCHEMA: &str = "schedperf.compare-configs/v1";

/// A config comparison to run.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    pub bin: PathBuf,
    pub path: PathBuf,
    pub test_case: String,
    pub workload: Option<String>,
    pub configs: Vec<PathBuf>,
    pub reps: u32,
    pub seed: u64,
}

/// The label of each config: its file stem, made unique with `-2`, `-3`, ... when stems repeat.
pub fn labels(configs: &[PathBuf]) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    configs
        .iter()
        .map(|c| {
            let stem = c.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "config".into());
            let n = seen.entry(stem.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                stem
            } else {
                format!("{stem}-{n}")
            }
        })
        .collect()
}

/// The raw runs of one config.
#[derive(Debug, Clone)]
pub struct ArmRuns {
    pub label: String,
    pub config: PathBuf,
    pub report: RunDocument,
}

/// Runs `plan` in round-robin order and returns each config's runs (with `rep` and `arm` set).
pub fn run_sweep(plan: &SweepPlan, runner: &mut Runner<'_>, log: &mut dyn FnMut(&str)) -> Result<Vec<ArmRuns>, Error> {
    if plan.configs.len() < 2 {
        return Err(InputError::new("--config", "", "give at least two --config files to compare").into());
    }
    if plan.reps == 0 {
        return Err(InputError::new("--reps", "", "0 repetitions; expected at least 1").into());
    }
    let labels = labels(&plan.configs);
    let mut arms: Vec<Option<ArmRuns>> = vec![None; plan.configs.len()];
    for (rep, c) in round_robin(plan.configs.len(), plan.reps) {
        let mut args = vec![plan.path.display().to_string(), "--test-case".to_string(), plan.test_case.clone()];
        if let Some(w) = &plan.workload {
            args.extend(["--workload".to_string(), w.clone()]);
        }
        args.extend([
            "--config".to_string(),
            plan.configs[c].display().to_string(),
            "--seed".to_string(),
            plan.seed.to_string(),
        ]);
        log(&format!("compare: rep {rep} {}", labels[c]));
        let mut doc = runner(&RunRequest { bin: plan.bin.clone(), args: child_arguments(&args) })?;
        for r in &mut doc.runs {
            r.rep = rep;
            r.arm = Some(labels[c].clone());
        }
        match &mut arms[c] {
            Some(a) => a.report.runs.append(&mut doc.runs),
            slot @ None => {
                *slot = Some(ArmRuns { label: labels[c].clone(), config: plan.configs[c].clone(), report: doc })
            }
        }
    }
    Ok(arms.into_iter().map(|a| a.expect("every config ran")).collect())
}

/// A speed or latency figure of one config: the median over repetitions and, against the first
/// config, the Hodges-Lehmann change `this/first - 1` with its 95% interval and Mann-Whitney p.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub median: f64,
    pub change: Option<f64>,
    pub change_low: Option<f64>,
    pub change_high: Option<f64>,
    pub p: Option<f64>,
}

/// How many placements differ from the first config's with the same seed and repetition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementDiff {
    /// Repetitions present on both sides.
    pub reps_compared: usize,
    /// Repetitions whose `placementDigest` differs.
    pub reps_differing: usize,
    /// The median number of pods on a different node, when both sides carry `placements`.
    pub moved_pods: Option<u64>,
    /// Pods compared (the union of both sides' pods), when both sides carry `placements`.
    pub compared_pods: Option<u64>,
}

/// One config's figures for one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArmSummary {
    pub label: String,
    pub config: String,
    pub config_digest: String,
    pub runs: usize,
    pub throughput_pods_per_s: Estimate,
    pub attempt_p50_us: Estimate,
    pub attempt_p99_us: Estimate,
    pub e2e_p50_us: Estimate,
    pub e2e_p99_us: Estimate,
    /// The standard deviation of per-node CPU utilization (0..1): lower is more even spreading.
    pub cpu_utilization_stddev: f64,
    pub memory_utilization_stddev: f64,
    pub nodes_used: f64,
    pub nodes_total: u64,
    pub fragmentation_pods: f64,
    /// The largest `worstSkew` over the workload's topology spread constraints.
    pub worst_topology_skew: f64,
    pub pending_pods: f64,
    pub preemptions: f64,
    pub placements: PlacementDiff,
}

/// One workload, every config.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSweep {
    pub test_case: String,
    pub workload: String,
    pub arms: Vec<ArmSummary>,
}

/// `compare.json` of a config comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    pub schema_version: String,
    pub command_line: Vec<String>,
    pub seed: u64,
    pub reps: u32,
    pub workloads: Vec<WorkloadSweep>,
}

fn estimate(first: &[f64], this: &[f64], is_first: bool) -> Estimate {
    let median = stats::median(this);
    let usable = |xs: &[f64]| xs.iter().all(|v| v.is_finite() && *v > 0.0);
    if is_first || first.is_empty() || this.is_empty() || !usable(first) || !usable(this) {
        return Estimate { median, change: None, change_low: None, change_high: None, p: None };
    }
    let lf: Vec<f64> = first.iter().map(|v| v.ln()).collect();
    let lt: Vec<f64> = this.iter().map(|v| v.ln()).collect();
    let s = stats::hodges_lehmann_shift(&lt, &lf, 0.95);
    Estimate {
        median,
        change: Some(s.estimate.exp() - 1.0),
        change_low: Some(s.low.exp() - 1.0),
        change_high: Some(s.high.exp() - 1.0),
        p: Some(s.test.p),
    }
}

fn median_of(runs: &[&RunReport], f: impl Fn(&RunReport) -> f64) -> f64 {
    stats::median(&runs.iter().map(|r| f(r)).collect::<Vec<_>>())
}

fn placement_diff(first: &[&RunReport], this: &[&RunReport]) -> PlacementDiff {
    let by_rep: BTreeMap<u32, &RunReport> = first.iter().map(|r| (r.rep, *r)).collect();
    let (mut compared, mut differing) = (0, 0);
    let mut moved: Vec<f64> = Vec::new();
    let mut pods: Option<u64> = None;
    for r in this {
        let Some(f) = by_rep.get(&r.rep) else {
            continue;
        };
        compared += 1;
        if f.placement_digest != r.placement_digest {
            differing += 1;
        }
        if let (Some(pf), Some(pt)) = (&f.placements, &r.placements) {
            let union: BTreeSet<&String> = pf.keys().chain(pt.keys()).collect();
            moved.push(union.iter().filter(|p| pf.get(**p) != pt.get(**p)).count() as f64);
            pods = Some(union.len() as u64);
        }
    }
    PlacementDiff {
        reps_compared: compared,
        reps_differing: differing,
        moved_pods: (!moved.is_empty()).then(|| stats::median(&moved).round() as u64),
        compared_pods: pods,
    }
}

fn utilization_stddev(r: &RunReport, resource: &str) -> f64 {
    r.placement_quality.utilization.get(resource).map_or(0.0, |u| u.stddev)
}

/// Summarises the runs of every config per workload (workloads in the first config's order).
pub fn summarize(arms: &[ArmRuns], seed: u64, reps: u32) -> SweepReport {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in arms.iter().flat_map(|a| &a.report.runs) {
        let k = (r.test_case.clone(), r.workload.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let workloads = keys
        .into_iter()
        .map(|(test_case, workload)| {
            let of = |a: &'_ ArmRuns| -> Vec<RunReport> {
                a.report.runs.iter().filter(|r| r.test_case == test_case && r.workload == workload).cloned().collect()
            };
            let per_arm: Vec<Vec<RunReport>> = arms.iter().map(of).collect();
            let first: Vec<&RunReport> = per_arm[0].iter().collect();
            let summaries = arms
                .iter()
                .zip(&per_arm)
                .enumerate()
                .map(|(i, (arm, runs))| {
                    let runs: Vec<&RunReport> = runs.iter().collect();
                    let values =
                        |rs: &[&RunReport], f: fn(&RunReport) -> f64| -> Vec<f64> { rs.iter().map(|r| f(r)).collect() };
                    let est = |f: fn(&RunReport) -> f64| estimate(&values(&first, f), &values(&runs, f), i == 0);
                    ArmSummary {
                        label: arm.label.clone(),
                        config: arm.config.display().to_string(),
                        config_digest: runs.first().map(|r| r.config_digest.clone()).unwrap_or_default(),
                        runs: runs.len(),
                        throughput_pods_per_s: est(|r| r.throughput.average),
                        attempt_p50_us: est(|r| r.attempt_latency_micros.p50),
                        attempt_p99_us: est(|r| r.attempt_latency_micros.p99),
                        e2e_p50_us: est(|r| r.e2e_latency_micros.p50),
                        e2e_p99_us: est(|r| r.e2e_latency_micros.p99),
                        cpu_utilization_stddev: median_of(&runs, |r| utilization_stddev(r, "cpu")),
                        memory_utilization_stddev: median_of(&runs, |r| utilization_stddev(r, "memory")),
                        nodes_used: median_of(&runs, |r| r.placement_quality.nodes_used as f64),
                        nodes_total: runs.first().map_or(0, |r| r.placement_quality.nodes_total),
                        fragmentation_pods: median_of(&runs, |r| r.placement_quality.fragmentation_pods as f64),
                        worst_topology_skew: median_of(&runs, |r| {
                            r.placement_quality.topology_skew.iter().map(|s| s.worst_skew).max().unwrap_or(0) as f64
                        }),
                        pending_pods: median_of(&runs, |r| r.placement_quality.pending_pods as f64),
                        preemptions: median_of(&runs, |r| r.counters.preemptions as f64),
                        placements: placement_diff(&first, &runs),
                    }
                })
                .collect();
            WorkloadSweep { test_case, workload, arms: summaries }
        })
        .collect();
    SweepReport {
        schema_version: SWEEP_SCHEMA.to_string(),
        command_line: std::env::args().collect(),
        seed,
        reps,
        workloads,
    }
}

/// The rows of the side-by-side table: a metric name and one cell per config.
fn rows(w: &WorkloadSweep) -> Vec<(String, Vec<String>)> {
    let est = |e: &Estimate| match (e.change, e.change_low, e.change_high) {
        (Some(c), Some(l), Some(h)) => {
            format!("{} ({} [{}, {}])", format::value(e.median), format::pct(c), format::pct(l), format::pct(h))
        }
        _ => format::value(e.median),
    };
    let num = |v: f64| format::value(v);
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut push = |name: &str, f: &dyn Fn(&ArmSummary) -> String| {
        out.push((name.to_string(), w.arms.iter().map(f).collect()));
    };
    push("runs", &|a| a.runs.to_string());
    push("throughput (pods/s)", &|a| est(&a.throughput_pods_per_s));
    push("attempt p50 (µs)", &|a| est(&a.attempt_p50_us));
    push("attempt p99 (µs)", &|a| est(&a.attempt_p99_us));
    push("e2e p50 (µs)", &|a| est(&a.e2e_p50_us));
    push("e2e p99 (µs)", &|a| est(&a.e2e_p99_us));
    push("cpu utilization stddev", &|a| pct(a.cpu_utilization_stddev));
    push("memory utilization stddev", &|a| pct(a.memory_utilization_stddev));
    push("nodes used", &|a| format!("{} / {}", num(a.nodes_used), a.nodes_total));
    push("fragmentation (pods)", &|a| num(a.fragmentation_pods));
    push("worst topology skew", &|a| num(a.worst_topology_skew));
    push("pending pods", &|a| num(a.pending_pods));
    push("preemptions", &|a| num(a.preemptions));
    let first = w.arms.first().map(|a| a.label.clone()).unwrap_or_default();
    push("placements vs first", &|a| {
        let p = &a.placements;
        if a.label == first {
            return "(reference)".to_string();
        }
        match (p.moved_pods, p.compared_pods) {
            (Some(m), Some(n)) => format!("{m}/{n} pods moved ({}/{} reps differ)", p.reps_differing, p.reps_compared),
            _ => format!("{}/{} reps differ", p.reps_differing, p.reps_compared),
        }
    });
    out
}

fn header(w: &WorkloadSweep) -> Vec<String> {
    let mut h = vec!["METRIC".to_string()];
    h.extend(w.arms.iter().map(|a| a.label.clone()));
    h
}

/// The terminal table: per workload, one column per config.
pub fn render_table(report: &SweepReport) -> String {
    let mut out = format!(
        "compare configs: seed {}, {} reps each, interleaved; changes vs the first config with 95% CI\n",
        report.seed, report.reps
    );
    for w in &report.workloads {
        let _ = writeln!(out, "\n{}/{}", w.test_case, w.workload);
        let mut table = vec![header(w)];
        for (name, cells) in rows(w) {
            let mut row = vec![name];
            row.extend(cells);
            table.push(row);
        }
        out += &crate::report::table::columns(&table, &[], false);
    }
    out
}

/// A workload's part of `compare.md` and `compare.html`: its heading and the side-by-side table.
fn workload_blocks(w: &WorkloadSweep) -> [Block; 2] {
    let headers = header(w);
    let right = vec![false; headers.len()];
    let rows = rows(w)
        .into_iter()
        .map(|(name, cells)| std::iter::once(name).chain(cells).map(|c| vec![document::text(c)]).collect())
        .collect();
    [Block::Heading(2, format!("{}/{}", w.test_case, w.workload)), Block::Table { headers, right, rows }]
}

const INTRO: &str = "Changes are relative to the first config: Hodges-Lehmann estimate [95% CI].";

/// `compare.md`.
pub fn render_markdown(report: &SweepReport) -> String {
    let mut out = format!(
        "# Config comparison\n\nSeed {}, {} repetitions per config, interleaved, each in a fresh process. {INTRO}\n\n",
        report.seed, report.reps
    );
    for w in &report.workloads {
        crate::report::markdown::blocks(&mut out, &workload_blocks(w));
    }
    out
}

/// Reads one figure of a config's summary, for a chart.
type ArmValue = fn(&ArmSummary) -> f64;

/// `compare.html`: self-contained (inline CSS and SVG, nothing fetched), with the report's style,
/// tables and bar charts (the first config, the reference, in grey).
pub fn render_html(report: &SweepReport) -> String {
    use crate::report::charts::{color, horizontal_bars, Bar, BarGroup};
    use crate::report::html::escape;
    let mut out = crate::report::html::page_start("schedperf config comparison", false);
    let _ = writeln!(
        out,
        "<h1>Config comparison</h1><p>Seed {}, {} repetitions per config, interleaved, each in a fresh process. {}</p>",
        report.seed,
        report.reps,
        escape(INTRO)
    );
    for w in &report.workloads {
        crate::report::html::blocks(&mut out, &workload_blocks(w));
        let series: [(&str, ArmValue); 4] = [
            ("Throughput, median (pods/s)", |a| a.throughput_pods_per_s.median),
            ("Attempt latency p99, median (µs)", |a| a.attempt_p99_us.median),
            ("Nodes used, median", |a| a.nodes_used),
            ("CPU utilization stddev, median (%)", |a| a.cpu_utilization_stddev * 100.0),
        ];
        out.push_str("<div class=\"charts\">\n");
        for (title, f) in series {
            let groups: Vec<BarGroup> = w
                .arms
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let v = f(a);
                    let color = if i == 0 { "#8c959f" } else { color(i - 1) };
                    let bars = vec![Bar { value: v, color, tooltip: format!("{}: {}", a.label, format::value(v)) }];
                    BarGroup { label: a.label.clone(), bars }
                })
                .collect();
            let svg = horizontal_bars("config", title, title, &groups);
            let _ = writeln!(out, "<figure><figcaption>{}</figcaption>{svg}</figure>", escape(title));
        }
        out.push_str("</div>\n");
    }
    out += "</body>\n</html>\n";
    out
}

/// Writes `compare.json`, `compare.md`, `compare.html` and each config's raw runs as
/// `<label>/report.json` under `dir`.
pub fn write_outputs(dir: &Path, report: &SweepReport, arms: &[ArmRuns]) -> Result<(), InputError> {
    let err = |p: &Path, e: std::io::Error| InputError::new(p.display().to_string(), "", format!("cannot write: {e}"));
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    let mut files = vec![
        (dir.join("compare.json"), serde_json::to_string_pretty(report).expect("compare report serializes") + "\n"),
        (dir.join("compare.md"), render_markdown(report)),
        (dir.join("compare.html"), render_html(report)),
    ];
    for a in arms {
        let sub = dir.join(&a.label);
        std::fs::create_dir_all(&sub).map_err(|e| err(&sub, e))?;
        files.push((
            sub.join("report.json"),
            serde_json::to_string_pretty(&a.report).expect("report serializes") + "\n",
        ));
    }
    for (path, text) in files {
        std::fs::write(&path, text).map_err(|e| err(&path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::runner::tests::{fake_document, fake_run};

    fn plan(configs: &[&str], reps: u32) -> SweepPlan {
        SweepPlan {
            bin: "schedperf".into(),
            path: "workloads/ci/".into(),
            test_case: "T".into(),
            workload: Some("w".into()),
            configs: configs.iter().map(PathBuf::from).collect(),
            reps,
            seed: 7,
        }
    }

    /// A fake runner: config `a` spreads (2 nodes used), any other config packs (1 node used) and
    /// is 20% faster; the order of configs is recorded.
    fn sweep(configs: &[&str], reps: u32) -> (Vec<ArmRuns>, Vec<String>) {
        let mut order = Vec::new();
        let mut runner = |req: &RunRequest| -> Result<RunDocument, Error> {
            let i = req.args.iter().position(|a| a == "--config").unwrap();
            let config = req.args[i + 1].clone();
            assert_eq!(req.args[req.args.len() - 4..], ["--seed", "7", "--format", "json"].map(String::from));
            order.push(config.clone());
            let spread = config.ends_with("a.yaml");
            let mut run = fake_run(if spread { 1000.0 } else { 1200.0 } + order.len() as f64, 0);
            run.placement_quality.nodes_used = if spread { 2 } else { 1 };
            run.placement_quality.nodes_total = 2;
            run.counters.preemptions = 3;
            run.placements = Some(
                [("p1", "n1"), ("p2", if spread { "n2" } else { "n1" })]
                    .iter()
                    .map(|(p, n)| (p.to_string(), n.to_string()))
                    .collect(),
            );
            run.placement_digest = if spread { "d-a" } else { "d-b" }.into();
            Ok(fake_document(vec![run]))
        };
        let arms = run_sweep(&plan(configs, reps), &mut runner, &mut |_| {}).unwrap();
        (arms, order)
    }

    #[test]
    fn configs_run_round_robin_with_labels() {
        let (arms, order) = sweep(&["x/a.yaml", "y/b.yaml"], 3);
        assert_eq!(order, ["x/a.yaml", "y/b.yaml", "x/a.yaml", "y/b.yaml", "x/a.yaml", "y/b.yaml"]);
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["a", "b"]);
        let reps: Vec<(u32, Option<&str>)> = arms[1].report.runs.iter().map(|r| (r.rep, r.arm.as_deref())).collect();
        assert_eq!(reps, [(0, Some("b")), (1, Some("b")), (2, Some("b"))]);
    }

    #[test]
    fn labels_are_stems_made_unique() {
        let check = |configs: &[&str], expected: &[&str]| {
            let paths: Vec<PathBuf> = configs.iter().map(PathBuf::from).collect();
            assert_eq!(labels(&paths), expected, "{configs:?}");
        };
        check(&["a.yaml", "b.yaml"], &["a", "b"]);
        check(&["x/default.yaml", "y/default.yaml", "z/default.yml"], &["default", "default-2", "default-3"]);
    }

    #[test]
    fn summary_is_relative_to_the_first_config() {
        let (arms, _) = sweep(&["a.yaml", "b.yaml"], 6);
        let report = summarize(&arms, 7, 6);
        assert_eq!(report.schema_version, SWEEP_SCHEMA);
        assert_eq!(report.workloads.len(), 1);
        let [a, b] = report.workloads[0].arms.as_slice() else {
            panic!("two arms");
        };
        assert_eq!((a.runs, b.runs), (6, 6));
        assert_eq!(a.throughput_pods_per_s.change, None);
        let change = b.throughput_pods_per_s.change.unwrap();
        assert!((0.15..0.25).contains(&change), "{change}");
        assert!(b.throughput_pods_per_s.change_low.unwrap() > 0.0);
        assert_eq!((a.nodes_used, b.nodes_used, b.nodes_total), (2.0, 1.0, 2));
        assert_eq!(b.preemptions, 3.0);
        assert_eq!((a.placements.reps_differing, a.placements.moved_pods), (0, Some(0)));
        assert_eq!(
            (
                b.placements.reps_compared,
                b.placements.reps_differing,
                b.placements.moved_pods,
                b.placements.compared_pods
            ),
            (6, 6, Some(1), Some(2))
        );
        let table = render_table(&report);
        assert!(table.contains("T/w"), "{table}");
        assert!(table.contains("1/2 pods moved (6/6 reps differ)"), "{table}");
        let html = render_html(&report);
        assert!(html.contains("<svg") && html.contains("<rect"), "{html}");
        // Self-contained: the only URL is the SVG namespace, and nothing is loaded.
        assert_eq!(
            (html.matches("http://").count() + html.matches("https://").count()),
            html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!html.contains("<script") && !html.contains("<link"));
        assert!(render_markdown(&report).contains("| nodes used | 2.00 / 2 | 1.00 / 2 |"));
    }

    #[test]
    fn outputs_are_written_and_raw_runs_stay_gateable() {
        let (arms, _) = sweep(&["a.yaml", "b.yaml"], 6);
        let report = summarize(&arms, 7, 6);
        let dir = tempfile::tempdir().unwrap();
        write_outputs(dir.path(), &report, &arms).unwrap();
        for f in ["compare.json", "compare.md", "compare.html", "a/report.json", "b/report.json"] {
            assert!(dir.path().join(f).is_file(), "{f}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("compare.json")).unwrap()).unwrap();
        assert_eq!(json["schemaVersion"], SWEEP_SCHEMA);
        // Config labels are not A/B arms: the raw reports gate as two independent sides.
        let raw = crate::gate::load_report(&dir.path().join("b/report.json")).unwrap();
        assert_eq!(raw.runs.len(), 6);
        assert!(!raw.has_arms());
    }

    #[test]
    fn fewer_than_two_configs_or_no_reps_is_an_input_error() {
        let mut runner = |_: &RunRequest| -> Result<RunDocument, Error> { unreachable!() };
        let e = run_sweep(&plan(&["a.yaml"], 3), &mut runner, &mut |_| {}).unwrap_err();
        assert!(matches!(&e, Error::Input(i) if i.file == "--config"), "{e}");
        let e = run_sweep(&plan(&["a.yaml", "b.yaml"], 0), &mut runner, &mut |_| {}).unwrap_err();
        assert!(matches!(&e, Error::Input(i) if i.file == "--reps"), "{e}");
    }
}
