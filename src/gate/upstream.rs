//! `schedperf compare --upstream BIN PATH ...`: schedperf beside the real kube-scheduler on the same
//! workloads, measured in the same session. `BIN` is the oracle (`scripts/oracle.sh` builds it), whose
//! `run` subcommand executes the same workload files on upstream's scheduler in-process and prints a
//! report in schedperf's schema.
//!
//! Per workload and repetition the two engines run one after the other (schedperf, then upstream:
//! `ABAB...`), each in a fresh process. The summary per workload: pods/s of each (median and range),
//! the ratio schedperf/upstream as a Hodges-Lehmann estimate on log pods/s with its interval (the
//! exact Mann-Whitney inversion of [`crate::stats::hodges_lehmann_shift`]), attempt p50/p99, peak
//! RSS, lost pods, and whether placements agree (the same `placementDigest`, or the placement
//! quality figures side by side).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::format;
use super::runner::{child_arguments, RunRequest, Runner};
use crate::error::{Error, InputError};
use crate::report::{Report as RunDocument, RunReport};
use crate::stats;
use crate::workload::{load_path, skip_reason, workload_labels, LabelFilter};

/// What `compare --upstream` runs.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamPlan {
    /// This schedperf binary.
    pub bin: PathBuf,
    /// The oracle binary.
    pub upstream: PathBuf,
    pub path: PathBuf,
    pub test_case: Option<String>,
    pub workload: Option<String>,
    pub label_filter: String,
    pub reps: u32,
    pub seed: u64,
}

/// The two engines' runs of one workload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkloadRuns {
    pub test_case: String,
    pub workload: String,
    pub schedperf: Vec<RunReport>,
    pub upstream: Vec<RunReport>,
    /// The `engine` of each side's reports.
    pub engines: [String; 2],
}

/// The `(test case, workload)` pairs the plan selects, in file order, as `schedperf run` selects
/// them (a named workload runs whatever its labels); workloads schedperf skips are left out with a
/// note.
pub fn select(plan: &UpstreamPlan, log: &mut dyn FnMut(&str)) -> Result<Vec<(String, String)>, InputError> {
    let filter = LabelFilter::parse(&plan.label_filter)?;
    let mut out = Vec::new();
    for (_, cases) in load_path(&plan.path)? {
        for tc in &cases {
            if plan.test_case.as_ref().is_some_and(|n| n != &tc.name) {
                continue;
            }
            for w in &tc.workloads {
                if plan.workload.as_ref().is_some_and(|n| n != &w.name) {
                    continue;
                }
                let wanted = plan.workload.is_some()
                    || plan.test_case.is_some() && plan.label_filter == "performance"
                    || filter.matches(&workload_labels(tc, w));
                if !wanted {
                    continue;
                }
                match skip_reason(tc, w) {
                    Some(reason) => log(&format!("compare: skip {}/{}: {reason}", tc.name, w.name)),
                    None => out.push((tc.name.clone(), w.name.clone())),
                }
            }
        }
    }
    if out.is_empty() {
        return Err(InputError::new(
            plan.path.display().to_string(),
            "",
            format!(
                "no runnable workload matches (test case {:?}, workload {:?}, label filter {:?}); `schedperf list {}` shows them",
                plan.test_case,
                plan.workload,
                plan.label_filter,
                plan.path.display()
            ),
        ));
    }
    Ok(out)
}

/// The child commands of one repetition of one workload: schedperf's, then upstream's.
pub fn requests(plan: &UpstreamPlan, test_case: &str, workload: &str, rep: u32) -> [RunRequest; 2] {
    let path = plan.path.display().to_string();
    let common =
        vec![path, "--test-case".to_string(), test_case.to_string(), "--workload".to_string(), workload.to_string()];
    let mut ours = common.clone();
    ours.extend(["--seed".to_string(), plan.seed.to_string()]);
    let mut theirs = vec!["run".to_string()];
    theirs.extend(common);
    theirs.extend(["--format".to_string(), "json".to_string(), "--rep".to_string(), rep.to_string()]);
    [
        RunRequest { bin: plan.bin.clone(), args: child_arguments(&ours) },
        RunRequest { bin: plan.upstream.clone(), args: theirs },
    ]
}

/// Runs every selected workload `reps` times on both engines, interleaved, each run a fresh process.
pub fn run_upstream(
    plan: &UpstreamPlan,
    runner: &mut Runner<'_>,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<WorkloadRuns>, Error> {
    if plan.reps == 0 {
        return Err(InputError::new("--reps", "", "0 repetitions; expected at least 1").into());
    }
    let mut out = Vec::new();
    for (test_case, workload) in select(plan, log)? {
        let mut w = WorkloadRuns { test_case: test_case.clone(), workload: workload.clone(), ..Default::default() };
        for rep in 0..plan.reps {
            for (side, request) in requests(plan, &test_case, &workload, rep).iter().enumerate() {
                let name = if side == 0 { "schedperf" } else { "upstream" };
                log(&format!("compare: {test_case}/{workload} rep {rep} {name}"));
                let doc: RunDocument = runner(request)?;
                if w.engines[side].is_empty() {
                    w.engines[side] = engine_of(&doc, side);
                }
                for mut r in doc.runs.into_iter().filter(|r| r.test_case == test_case && r.workload == workload) {
                    r.rep = rep;
                    r.arm = Some(name.to_string());
                    if side == 0 {
                        w.schedperf.push(r);
                    } else {
                        w.upstream.push(r);
                    }
                }
            }
        }
        if w.schedperf.is_empty() || w.upstream.is_empty() {
            return Err(InputError::new(
                format!("{test_case}/{workload}"),
                "",
                "one engine produced no run of this workload (it was skipped); see the log above",
            )
            .into());
        }
        out.push(w);
    }
    Ok(out)
}

fn engine_of(doc: &RunDocument, side: usize) -> String {
    if !doc.engine.is_empty() {
        doc.engine.clone()
    } else if side == 0 {
        format!("schedperf {}", doc.tool.version)
    } else {
        format!("{} {}", doc.tool.name, doc.tool.version)
    }
}

/// One engine's figures for one workload.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineSummary {
    pub engine: String,
    pub runs: usize,
    pub pods_per_s_median: f64,
    pub pods_per_s_min: f64,
    pub pods_per_s_max: f64,
    pub attempt_p50_us: f64,
    pub attempt_p99_us: f64,
    pub peak_rss_mib: f64,
    pub lost_pods: u64,
    pub unschedulable_pods: u64,
    pub cpu_utilization_stddev: f64,
    pub nodes_used: f64,
    pub fragmentation_pods: f64,
    pub digests: Vec<String>,
}

/// The comparison of one workload.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamComparison {
    pub test_case: String,
    pub workload: String,
    pub schedperf: EngineSummary,
    pub upstream: EngineSummary,
    /// schedperf pods/s / upstream pods/s: the Hodges-Lehmann estimate on logs, exponentiated.
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// The confidence the interval achieves (exact for small samples: 90% with 3 runs each).
    pub ratio_confidence: f64,
    /// Repetitions (same index) whose two digests are equal, of those compared.
    pub same_digest_reps: usize,
    pub compared_reps: usize,
}

fn summary(engine: &str, runs: &[RunReport]) -> EngineSummary {
    let col = |f: fn(&RunReport) -> f64| -> Vec<f64> { runs.iter().map(f).collect() };
    let tp = col(|r| r.throughput.average);
    EngineSummary {
        engine: engine.to_string(),
        runs: runs.len(),
        pods_per_s_median: stats::median(&tp),
        pods_per_s_min: tp.iter().copied().fold(f64::INFINITY, f64::min),
        pods_per_s_max: tp.iter().copied().fold(0.0, f64::max),
        attempt_p50_us: stats::median(&col(|r| r.attempt_latency_micros.p50)),
        attempt_p99_us: stats::median(&col(|r| r.attempt_latency_micros.p99)),
        peak_rss_mib: stats::median(&col(|r| r.peak_rss_bytes as f64 / 1_048_576.0)),
        lost_pods: runs.iter().map(|r| r.accounting.lost).sum(),
        unschedulable_pods: runs.iter().map(|r| r.accounting.unschedulable).max().unwrap_or(0),
        cpu_utilization_stddev: stats::median(&col(|r| {
            r.placement_quality.utilization.get("cpu").map_or(0.0, |u| u.stddev)
        })),
        nodes_used: stats::median(&col(|r| r.placement_quality.nodes_used as f64)),
        fragmentation_pods: stats::median(&col(|r| r.placement_quality.fragmentation_pods as f64)),
        digests: runs.iter().map(|r| r.placement_digest.clone()).collect(),
    }
}

/// Summarises one workload. Throughputs that are not positive (a run that measured nothing) make
/// the ratio NaN rather than a misleading number.
pub fn compare_workload(w: &WorkloadRuns) -> UpstreamComparison {
    let ours = summary(&w.engines[0], &w.schedperf);
    let theirs = summary(&w.engines[1], &w.upstream);
    let logs = |runs: &[RunReport]| -> Option<Vec<f64>> {
        runs.iter().map(|r| (r.throughput.average > 0.0).then(|| r.throughput.average.ln())).collect()
    };
    let (ratio, ratio_low, ratio_high, ratio_confidence) = match (logs(&w.schedperf), logs(&w.upstream)) {
        (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => {
            let s = stats::hodges_lehmann_shift(&a, &b, 0.95);
            (s.estimate.exp(), s.low.exp(), s.high.exp(), s.achieved_confidence)
        }
        _ => (f64::NAN, f64::NAN, f64::NAN, 0.0),
    };
    let mut compared = 0;
    let mut same = 0;
    for a in &w.schedperf {
        if let Some(b) = w.upstream.iter().find(|b| b.rep == a.rep) {
            compared += 1;
            same += usize::from(a.placement_digest == b.placement_digest);
        }
    }
    UpstreamComparison {
        test_case: w.test_case.clone(),
        workload: w.workload.clone(),
        schedperf: ours,
        upstream: theirs,
        ratio,
        ratio_low,
        ratio_high,
        ratio_confidence,
        same_digest_reps: same,
        compared_reps: compared,
    }
}

/// A ratio with three significant digits: `61.2x`, `2.05x`.
fn ratio_text(x: f64) -> String {
    if x.is_finite() {
        if x >= 99.95 {
            format!("{x:.0}x")
        } else if x >= 9.995 {
            format!("{x:.1}x")
        } else {
            format!("{x:.2}x")
        }
    } else {
        "n/a".to_string()
    }
}

fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.round());
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// The printed table of every workload.
pub fn render(comparisons: &[UpstreamComparison], reps: u32) -> String {
    let mut out = format!(
        "compare --upstream: {reps} reps per engine, interleaved (schedperf, upstream, ...), each a fresh process\n"
    );
    for c in comparisons {
        let _ = writeln!(out, "\n{}/{}", c.test_case, c.workload);
        let row =
            |name: &str, f: &dyn Fn(&EngineSummary) -> String| vec![name.to_string(), f(&c.schedperf), f(&c.upstream)];
        let table = vec![
            vec![String::new(), c.schedperf.engine.clone(), c.upstream.engine.clone()],
            row("runs", &|s| s.runs.to_string()),
            row("pods/s median [min-max]", &|s| {
                format!(
                    "{} [{}-{}]",
                    thousands(s.pods_per_s_median),
                    thousands(s.pods_per_s_min),
                    thousands(s.pods_per_s_max)
                )
            }),
            row("attempt p50 / p99 (µs)", &|s| {
                format!("{} / {}", format::value(s.attempt_p50_us), format::value(s.attempt_p99_us))
            }),
            row("peak RSS (MiB)", &|s| format!("{:.0}", s.peak_rss_mib)),
            row("pods lost (all runs)", &|s| s.lost_pods.to_string()),
            row("unschedulable pods (max)", &|s| s.unschedulable_pods.to_string()),
            row("cpu utilization stddev", &|s| format!("{:.1}%", s.cpu_utilization_stddev * 100.0)),
            row("nodes used", &|s| format::value(s.nodes_used)),
            row("fragmentation (pods)", &|s| format::value(s.fragmentation_pods)),
        ];
        out += &crate::report::table::columns(&table, &[], false);
        let _ = writeln!(
            out,
            "ratio schedperf/upstream: {} ({:.0}% CI {} - {}, Hodges-Lehmann on log pods/s)",
            ratio_text(c.ratio),
            c.ratio_confidence * 100.0,
            ratio_text(c.ratio_low),
            ratio_text(c.ratio_high)
        );
        let digests = if c.same_digest_reps == c.compared_reps {
            format!("placements agree: the same placementDigest in all {} reps", c.compared_reps)
        } else {
            format!(
                "placements differ: the same placementDigest in {} of {} reps (quality side by side above)",
                c.same_digest_reps, c.compared_reps
            )
        };
        let _ = writeln!(out, "{digests}");
    }
    out
}

/// Writes `schedperf/report.json` and `upstream/report.json` (every run of each engine, readable by
/// `schedperf compare A B` and `gate`) and `compare-upstream.json` under `dir`.
pub fn write_outputs(
    dir: &Path,
    runs: &[WorkloadRuns],
    comparisons: &[UpstreamComparison],
    template: [&RunDocument; 2],
) -> Result<(), InputError> {
    let err = |p: &Path, e: std::io::Error| InputError::new(p.display().to_string(), "", format!("cannot write: {e}"));
    for (side, name) in [(0, "schedperf"), (1, "upstream")] {
        let mut doc = template[side].clone();
        doc.runs = runs.iter().flat_map(|w| if side == 0 { w.schedperf.clone() } else { w.upstream.clone() }).collect();
        let d = dir.join(name);
        std::fs::create_dir_all(&d).map_err(|e| err(&d, e))?;
        let p = d.join("report.json");
        let text = serde_json::to_string_pretty(&doc).expect("a report serializes") + "\n";
        std::fs::write(&p, text).map_err(|e| err(&p, e))?;
    }
    let p = dir.join("compare-upstream.json");
    let text = serde_json::to_string_pretty(comparisons).expect("a comparison serializes") + "\n";
    std::fs::write(&p, text).map_err(|e| err(&p, e))
}

/// Runs `compare --upstream` end to end: the runs, the table on stdout, the files under `out`.
pub fn run_command(
    plan: &UpstreamPlan,
    out: Option<&Path>,
    runner: &mut Runner<'_>,
    log: &mut dyn FnMut(&str),
) -> Result<String, Error> {
    let mut first: [Option<RunDocument>; 2] = [None, None];
    let mut keep = |r: &RunRequest| -> Result<RunDocument, Error> {
        let doc = runner(r)?;
        let side = usize::from(r.bin == plan.upstream && r.bin != plan.bin);
        if first[side].is_none() {
            first[side] = Some(doc.clone());
        }
        Ok(doc)
    };
    let runs = run_upstream(plan, &mut keep, log)?;
    let comparisons: Vec<UpstreamComparison> = runs.iter().map(compare_workload).collect();
    if let Some(dir) = out {
        if let [Some(a), Some(b)] = &first {
            write_outputs(dir, &runs, &comparisons, [a, b])?;
        }
    }
    Ok(render(&comparisons, plan.reps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rep: u32, pods_per_s: f64, digest: &str) -> RunReport {
        let mut r = RunReport {
            test_case: "T".into(),
            workload: "w".into(),
            rep,
            placement_digest: digest.into(),
            peak_rss_bytes: 64 << 20,
            ..Default::default()
        };
        r.throughput.average = pods_per_s;
        r.attempt_latency_micros.p50 = 10.0;
        r.attempt_latency_micros.p99 = 30.0;
        r
    }

    fn plan() -> UpstreamPlan {
        UpstreamPlan {
            bin: "/bin/schedperf".into(),
            upstream: "/bin/oracle".into(),
            path: Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/misc"),
            test_case: Some("SchedulingBasic".into()),
            workload: None,
            label_filter: "short".into(),
            reps: 2,
            seed: 3,
        }
    }

    #[test]
    fn ratio_is_hodges_lehmann_on_logs_and_digests_are_compared_by_rep() {
        let w = WorkloadRuns {
            test_case: "T".into(),
            workload: "w".into(),
            schedperf: vec![run(0, 1000.0, "a"), run(1, 1100.0, "b"), run(2, 900.0, "c")],
            upstream: vec![run(0, 100.0, "a"), run(1, 110.0, "x"), run(2, 90.0, "c")],
            engines: ["schedperf 0.1.0".into(), "kube-scheduler v1.37.2 (in-process)".into()],
        };
        let c = compare_workload(&w);
        assert!((c.ratio - 10.0).abs() < 1e-9, "{}", c.ratio);
        // Three runs each: the exact interval is the range of the pairwise ratios, at 90%.
        assert!((c.ratio_low - 900.0 / 110.0).abs() < 1e-9 && (c.ratio_high - 1100.0 / 90.0).abs() < 1e-9);
        assert!((c.ratio_confidence - 0.9).abs() < 1e-9, "{}", c.ratio_confidence);
        assert_eq!((c.same_digest_reps, c.compared_reps), (2, 3));
        assert_eq!(
            (c.schedperf.pods_per_s_median, c.schedperf.pods_per_s_min, c.schedperf.pods_per_s_max),
            (1000.0, 900.0, 1100.0)
        );
        assert_eq!(c.upstream.peak_rss_mib, 64.0);
        let text = render(&[c], 3);
        assert!(text.contains("ratio schedperf/upstream: 10.0x (90% CI 8.18x - 12.2x"), "{text}");
        assert!(text.contains("placements differ: the same placementDigest in 2 of 3 reps"), "{text}");
        assert!(text.contains("1,000 [900-1,100]"), "{text}");
    }

    #[test]
    fn a_run_that_measured_nothing_has_no_ratio() {
        let w = WorkloadRuns {
            schedperf: vec![run(0, 1000.0, "a")],
            upstream: vec![run(0, 0.0, "a")],
            ..Default::default()
        };
        let c = compare_workload(&w);
        assert!(c.ratio.is_nan());
        assert!(render(&[c], 1).contains("ratio schedperf/upstream: n/a"));
    }

    #[test]
    fn runs_interleave_schedperf_then_upstream_in_fresh_processes() {
        let p = plan();
        let mut calls: Vec<(PathBuf, Vec<String>)> = Vec::new();
        let mut runner = |r: &RunRequest| -> Result<RunDocument, Error> {
            calls.push((r.bin.clone(), r.args.clone()));
            let w = r.args.iter().position(|a| a == "--workload").map(|i| r.args[i + 1].clone()).unwrap();
            let mut doc = crate::report::header::report(vec![]);
            let mut run = run(0, 1.0, "d");
            run.test_case = "SchedulingBasic".into();
            run.workload = w;
            doc.runs.push(run);
            Ok(doc)
        };
        let runs = run_upstream(&p, &mut runner, &mut |_| {}).unwrap();
        // The short SchedulingBasic workloads of workloads/misc: 5Nodes and 100Nodes, two reps each.
        assert_eq!(runs.iter().map(|w| w.workload.as_str()).collect::<Vec<_>>(), ["5Nodes", "100Nodes"]);
        let order: Vec<&str> =
            calls.iter().map(|(b, _)| if b == Path::new("/bin/oracle") { "U" } else { "S" }).collect();
        assert_eq!(order.concat(), "SUSUSUSU");
        assert_eq!(calls[0].1[0], "run");
        assert!(calls[0].1.ends_with(&["--format".to_string(), "json".to_string()]), "{:?}", calls[0].1);
        assert!(calls[0].1.windows(2).any(|w| w == ["--seed", "3"]));
        assert!(calls[3].1.windows(2).any(|w| w == ["--rep", "1"]), "{:?}", calls[3].1);
        assert_eq!(runs[0].upstream.iter().map(|r| r.rep).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(runs[0].schedperf[0].arm.as_deref(), Some("schedperf"));
    }

    #[test]
    fn a_selection_without_runnable_workloads_is_bad_input() {
        let mut p = plan();
        p.test_case = Some("NoSuchCase".into());
        let e = select(&p, &mut |_| {}).unwrap_err();
        assert!(e.file.ends_with("workloads/misc") && e.message.contains("no runnable workload"), "{e}");
        p.reps = 0;
        match run_upstream(&p, &mut |_| unreachable!(), &mut |_| {}).unwrap_err() {
            Error::Input(e) => assert_eq!(e.file, "--reps"),
            other => panic!("expected bad input, got {other}"),
        }
    }
}
