//! The report as a renderer-neutral document (headings, tables, lists of plain text spans), so the
//! Markdown and HTML reports say exactly the same things. Text here is raw: each renderer escapes.

use std::collections::BTreeMap;

use super::format::{self, num, percent};
use super::model::{Percentiles, PluginTiming, Report, RunReport};

/// How many plugin timings the Markdown and HTML reports list per run, by total time.
pub const TOP_PLUGINS: usize = 10;

/// How many cache differences and unschedulable reasons are listed before the rest are counted.
const MAX_LISTED: usize = 10;

/// A piece of inline text with its emphasis.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    Text(String),
    /// Inline code (digests, constraints, histogram names).
    Code(String),
    /// A good verdict (`PASS`, `ok`): plain in Markdown, green in HTML.
    Good(String),
    /// A bad verdict or figure (`FAIL`, lost pods): bold in Markdown, red in HTML.
    Bad(String),
}

/// A line of inline spans.
pub type Line = Vec<Span>;

/// A block of the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading of level 2 or 3 (the title is level 1 and rendered by each renderer).
    Heading(u8, String),
    Paragraph(Line),
    Bullets(Vec<Line>),
    /// A table; `right[i]` right-aligns column `i` (numbers).
    Table {
        headers: Vec<String>,
        right: Vec<bool>,
        rows: Vec<Vec<Line>>,
    },
    /// The start of run `index`'s (0-based) section, with its title; HTML folds the section into
    /// `<details>`, open for the first run.
    RunStart(usize, String),
    /// The end of a run's section.
    RunEnd,
}

pub fn text(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}

fn cell(s: impl Into<String>) -> Line {
    vec![Span::Text(s.into())]
}

fn table(headers: &[&str], right: &[bool], rows: Vec<Vec<Line>>) -> Block {
    assert_eq!(headers.len(), right.len(), "one alignment per column");
    Block::Table { headers: headers.iter().map(|h| h.to_string()).collect(), right: right.to_vec(), rows }
}

/// The plugin timings with the largest total time, largest first (ties by plugin, then point).
pub fn top_plugins(timings: &[PluginTiming], n: usize) -> Vec<&PluginTiming> {
    let mut sorted: Vec<&PluginTiming> = timings.iter().collect();
    sorted.sort_by(|a, b| {
        b.total_micros
            .total_cmp(&a.total_micros)
            .then_with(|| a.plugin.cmp(&b.plugin))
            .then_with(|| a.extension_point.cmp(&b.extension_point))
    });
    sorted.truncate(n);
    sorted
}

/// The verdict cell of a run's threshold.
fn verdict_span(run: &RunReport) -> Span {
    match format::verdict(run) {
        "PASS" => Span::Good("PASS".into()),
        "FAIL" => Span::Bad("FAIL".into()),
        v => text(v),
    }
}

/// The summary table: one row per run with the same columns as the terminal summary.
pub fn summary(report: &Report) -> Block {
    let headers = [
        "#",
        "test case/workload",
        "rep",
        "pods",
        "pods/s avg",
        "p50",
        "p90",
        "p99",
        "attempt p50 µs",
        "attempt p99 µs",
        "e2e p99 ms",
        "unsched",
        "preempt",
        "RSS MiB",
        "threshold",
        "lost",
        "cache",
    ];
    let mut right = vec![true; headers.len()];
    for left in [1, 14, 16] {
        right[left] = false;
    }
    let rows = report
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                cell((i + 1).to_string()),
                cell(format::run_name(r)),
                cell(format::rep_label(r)),
                cell(r.measured_pods.to_string()),
                cell(num(r.throughput.average)),
                cell(num(r.throughput.p50)),
                cell(num(r.throughput.p90)),
                cell(num(r.throughput.p99)),
                cell(num(r.attempt_latency_micros.p50)),
                cell(num(r.attempt_latency_micros.p99)),
                cell(num(r.e2e_latency_micros.p99 / 1000.0)),
                cell(r.unschedulable_pods.to_string()),
                cell(r.counters.preemptions.to_string()),
                cell(format::mib(r.peak_rss_bytes)),
                vec![verdict_span(r)],
                vec![if r.accounting.lost > 0 { Span::Bad(r.accounting.lost.to_string()) } else { text("0") }],
                vec![if r.cache_consistent { Span::Good("ok".into()) } else { Span::Bad("DIFF".into()) }],
            ]
        })
        .collect();
    table(&headers, &right, rows)
}

/// The problems of a report (failed thresholds, lost pods, inconsistent caches) as bullets, or
/// nothing when there are none.
pub fn problems(report: &Report) -> Vec<Block> {
    let problems = format::problems(report);
    if problems.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Paragraph(vec![Span::Bad("Problems:".into())]),
        Block::Bullets(problems.into_iter().map(|p| vec![text(p)]).collect()),
    ]
}

fn percentile_row(name: &str, unit: &str, p: &Percentiles) -> Vec<Line> {
    vec![
        cell(name),
        cell(unit),
        cell(p.count.to_string()),
        cell(num(p.p50)),
        cell(num(p.p90)),
        cell(num(p.p99)),
        cell(num(p.max)),
    ]
}

fn percentile_table(rows: Vec<Vec<Line>>) -> Block {
    let headers = ["metric", "unit", "count", "p50", "p90", "p99", "max"];
    table(&headers, &[false, false, true, true, true, true, true], rows)
}

fn prefixed(prefix: &str, map: &BTreeMap<String, Percentiles>, unit: &str) -> Vec<Vec<Line>> {
    map.iter().map(|(k, p)| percentile_row(&format!("{prefix}{k}"), unit, p)).collect()
}

/// The section of one run (`index` is 0-based): its facts, latency, placement quality, counters
/// and accounting, top plugin timings and, when present, CRI figures.
pub fn run_section(index: usize, run: &RunReport) -> Vec<Block> {
    let mut out = vec![Block::RunStart(
        index,
        format!("Run {}: {} (rep {})", index + 1, format::run_name(run), format::rep_label(run)),
    )];
    out.push(facts(run));
    out.extend(latency(run));
    out.extend(placement(run));
    out.extend(counters(run));
    out.extend(plugins(run));
    out.extend(cri(run));
    out.extend(instructions(run));
    out.push(Block::RunEnd);
    out
}

fn facts(run: &RunReport) -> Block {
    let t = &run.throughput;
    let mut facts: Vec<(&str, Line)> = vec![
        ("labels", cell(run.labels.join(", "))),
        ("seed", cell(run.seed.to_string())),
        ("threads", cell(run.threads.to_string())),
        ("config", vec![text(format!("{} ", run.config_source)), Span::Code(run.config_digest.clone())]),
        ("workload digest", vec![Span::Code(run.workload_digest.clone())]),
        ("agent", cell(format!("{}{}", run.agent, if run.virtual_time { " (virtual time)" } else { "" }))),
        (
            "measured pods",
            cell(format!(
                "{} ({} scheduled, {} unschedulable)",
                run.measured_pods, run.scheduled_pods, run.unschedulable_pods
            )),
        ),
        ("measured time", cell(format!("{} s", num(run.duration_seconds)))),
        ("wall / CPU time", cell(format!("{} s / {} s", num(run.wall_seconds), num(run.cpu_seconds)))),
        (
            "throughput pods/s",
            cell(format!(
                "avg {} · p50 {} · p90 {} · p95 {} · p99 {} ({} samples of {} s)",
                num(t.average),
                num(t.p50),
                num(t.p90),
                num(t.p95),
                num(t.p99),
                t.samples.len(),
                num(t.interval_seconds)
            )),
        ),
        ("peak RSS", cell(format!("{} MiB", format::mib(run.peak_rss_bytes)))),
        ("threshold", threshold_line(run)),
        ("placement digest", vec![Span::Code(run.placement_digest.clone())]),
    ];
    if let Some(pair) = run.pair {
        facts.push(("pair", cell(pair.to_string())));
    }
    if !run.outcome.passed {
        facts.push(("outcome", cell(format!("FAILED: {}", run.outcome.message))));
    }
    if !run.feature_gates_honoured.is_empty() {
        facts.push(("feature gates honoured", cell(run.feature_gates_honoured.join(", "))));
    }
    if !run.feature_gates_ignored.is_empty() {
        facts.push(("feature gates ignored", cell(run.feature_gates_ignored.join(", "))));
    }
    table(&["", ""], &[false, false], facts.into_iter().map(|(k, v)| vec![cell(k), v]).collect())
}

fn threshold_line(run: &RunReport) -> Line {
    let metric = if run.threshold_metric.is_empty() { "SchedulingThroughput" } else { &run.threshold_metric };
    let Some(threshold) = run.threshold else {
        return cell("none");
    };
    let value = format::threshold_value(run).map(|v| format!(", measured {}", num(v))).unwrap_or_default();
    let verdict = match run.threshold_passed {
        Some(true) => Span::Good("PASS".into()),
        Some(false) => Span::Bad("FAIL".into()),
        None => text("not checked"),
    };
    vec![verdict, text(format!(": {metric} ≥ {}{value}", num(threshold)))]
}

fn latency(run: &RunReport) -> Vec<Block> {
    let mut rows = vec![percentile_row("attempt", "µs", &run.attempt_latency_micros)];
    rows.extend(prefixed("attempt: ", &run.attempt_latency_by_result_micros, "µs"));
    rows.push(percentile_row("created → bound (e2e)", "µs", &run.e2e_latency_micros));
    rows.push(percentile_row("pod startup", "ms", &run.pod_startup_millis));
    rows.extend(prefixed("startup stage: ", &run.pod_startup_stages_millis, "ms"));
    rows.extend(prefixed("extension point: ", &run.extension_point_micros, "µs"));
    let mut out = vec![Block::Heading(3, "Latency".into()), percentile_table(rows)];
    if !run.histograms.is_empty() {
        let mut line = vec![text("Full distributions (HdrHistogram V2, base64) in report.json: ")];
        for (i, name) in run.histograms.keys().enumerate() {
            if i > 0 {
                line.push(text(", "));
            }
            line.push(Span::Code(name.clone()));
        }
        line.push(text("."));
        out.push(Block::Paragraph(line));
    }
    out
}

fn placement(run: &RunReport) -> Vec<Block> {
    let q = &run.placement_quality;
    let mut out = vec![Block::Heading(3, "Placement quality".into())];
    if q.utilization.is_empty() {
        out.push(Block::Paragraph(cell("No utilization figures.")));
    } else {
        let rows = q
            .utilization
            .iter()
            .map(|(res, u)| {
                vec![cell(res.as_str()), cell(percent(u.mean)), cell(percent(u.stddev)), cell(percent(u.max))]
            })
            .collect();
        out.push(table(&["resource", "mean", "stddev", "max"], &[false, true, true, true], rows));
    }
    let worst = q.topology_skew.iter().max_by_key(|s| (s.worst_skew - s.max_skew, s.worst_skew));
    let skew = match worst {
        Some(s) => {
            let mut line = vec![
                text(format!("worst topology skew: {} (maxSkew {}) for ", s.worst_skew, s.max_skew)),
                Span::Code(s.constraint.clone()),
            ];
            if s.worst_skew > s.max_skew {
                line.push(text(" — "));
                line.push(Span::Bad("exceeds maxSkew".into()));
            }
            line
        }
        None => cell("worst topology skew: no spread constraints"),
    };
    out.push(Block::Bullets(vec![
        cell(format!("nodes used: {} of {}", q.nodes_used, q.nodes_total)),
        cell(format!(
            "fragmentation: {} pods of the largest shape fit on no node although the total free capacity would hold them",
            q.fragmentation_pods
        )),
        cell(format!("pending pods: {}", q.pending_pods)),
        skew,
    ]));
    out
}

fn counters(run: &RunReport) -> Vec<Block> {
    let c = &run.counters;
    let counters = [
        ("attempts", c.attempts),
        ("scheduled", c.scheduled),
        ("unschedulable", c.unschedulable),
        ("errors", c.errors),
        ("preemptions", c.preemptions),
        ("preemption victims", c.preemption_victims),
        ("bind failures", c.bind_failures),
        ("retries", c.retries),
        ("evictions", c.evictions),
    ];
    let a = &run.accounting;
    let accounting = [
        ("created", a.created),
        ("bound", a.bound),
        ("unschedulable", a.unschedulable),
        ("deleted", a.deleted),
        ("pending", a.pending),
        ("lost", a.lost),
    ];
    let rows = (0..counters.len().max(accounting.len()))
        .map(|i| {
            let pair = |list: &[(&str, u64)]| match list.get(i) {
                Some((k, v)) if *k == "lost" && *v > 0 => {
                    vec![vec![Span::Bad(k.to_string())], vec![Span::Bad(v.to_string())]]
                }
                Some((k, v)) => vec![cell(*k), cell(v.to_string())],
                None => vec![cell(""), cell("")],
            };
            let mut row = pair(&counters);
            row.extend(pair(&accounting));
            row
        })
        .collect();
    let mut out = vec![
        Block::Heading(3, "Counters and accounting".into()),
        table(&["counter", "count", "pod accounting", "pods"], &[false, true, false, true], rows),
        Block::Paragraph(if run.cache_consistent {
            vec![text("Scheduler cache: "), Span::Good("consistent with the cluster".into()), text(".")]
        } else {
            vec![text("Scheduler cache: "), Span::Bad("differs from the cluster".into()), text(".")]
        }),
    ];
    let mut diffs: Vec<Line> = run.cache_differences.iter().take(MAX_LISTED).map(|d| cell(d.as_str())).collect();
    if run.cache_differences.len() > MAX_LISTED {
        diffs.push(cell(format!("… and {} more", run.cache_differences.len() - MAX_LISTED)));
    }
    if !diffs.is_empty() {
        out.push(Block::Bullets(diffs));
    }
    if !run.unschedulable_reasons.is_empty() {
        let mut reasons: Vec<(&String, &u64)> = run.unschedulable_reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let rows = reasons.iter().take(MAX_LISTED).map(|(r, n)| vec![cell(r.as_str()), cell(n.to_string())]).collect();
        out.push(table(&["unschedulable reason", "pods"], &[false, true], rows));
    }
    out
}

fn plugins(run: &RunReport) -> Vec<Block> {
    let mut out = vec![Block::Heading(
        3,
        format!("Plugin timings (top {TOP_PLUGINS} by total, {}% of cycles sampled)", run.plugin_sample_percent),
    )];
    let top = top_plugins(&run.plugin_timings, TOP_PLUGINS);
    if top.is_empty() {
        out.push(Block::Paragraph(cell("No plugin timings.")));
        return out;
    }
    let all: f64 = run.plugin_timings.iter().map(|t| t.total_micros).sum();
    let rows = top
        .iter()
        .map(|t| {
            vec![
                cell(t.plugin.as_str()),
                cell(t.extension_point.as_str()),
                cell(t.calls.to_string()),
                cell(num(t.p50_micros)),
                cell(num(t.p99_micros)),
                cell(num(t.total_micros / 1000.0)),
                cell(if all > 0.0 { percent(t.total_micros / all) } else { "-".to_string() }),
            ]
        })
        .collect();
    let headers = ["plugin", "extension point", "calls", "p50 µs", "p99 µs", "total ms", "share"];
    out.push(table(&headers, &[false, false, true, true, true, true, true], rows));
    out
}

fn cri(run: &RunReport) -> Vec<Block> {
    let Some(cri) = &run.cri else {
        return Vec::new();
    };
    let mut out = vec![
        Block::Heading(3, "CRI".into()),
        Block::Bullets(vec![
            cell(format!("endpoints: {}", cri.endpoints.join(", "))),
            cell(format!("real pods: {} ({} running)", cri.real_pods, cri.real_pods_running)),
        ]),
    ];
    let mut rows = vec![percentile_row("pod startup", "ms", &cri.pod_startup_millis)];
    rows.extend(prefixed("stage: ", &cri.pod_startup_stages_millis, "ms"));
    rows.extend(prefixed("call: ", &cri.cri_call_millis, "ms"));
    out.push(percentile_table(rows));
    if !cri.cri_errors.is_empty() {
        let rows = cri.cri_errors.iter().map(|(k, v)| vec![cell(k.as_str()), cell(v.to_string())]).collect();
        out.push(table(&["CRI call", "errors"], &[false, true], rows));
    }
    out
}

/// `--measure instructions`: the measured phase's instructions, per pod and attempt, and per
/// plugin/extension point (per scheduled pod, most expensive first).
fn instructions(run: &RunReport) -> Vec<Block> {
    let Some(i) = &run.instructions else {
        return Vec::new();
    };
    let pods = i.scheduled_pods.max(1) as f64;
    let mut rows: Vec<(&String, &u64)> = i.by_plugin_extension_point.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let rows = rows
        .into_iter()
        .map(|(k, v)| {
            vec![
                cell(k.as_str()),
                cell(format!("{:.0}", *v as f64 / pods)),
                cell(format!("{:.1}%", *v as f64 / i.total.max(1) as f64 * 100.0)),
            ]
        })
        .collect();
    vec![
        Block::Heading(3, format!("Instructions ({}, {})", i.source, i.tool)),
        Block::Bullets(vec![
            cell(format!(
                "measured phase: {} instructions; {:.0} per scheduled pod ({} pods), {:.0} per attempt ({} attempts)",
                i.total, i.per_scheduled_pod, i.scheduled_pods, i.per_attempt, i.attempts
            )),
            cell("the run ran under valgrind: its times are ~50x slow"),
        ]),
        table(&["plugin/extension point", "instructions per pod", "share (inclusive)"], &[false, true, true], rows),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_section_only_with_instructions() {
        let mut run = RunReport::default();
        assert!(instructions(&run).is_empty());
        run.instructions = Some(crate::report::InstructionsReport {
            source: "callgrind".into(),
            tool: "valgrind-3.19.0".into(),
            total: 1000,
            attempts: 4,
            scheduled_pods: 4,
            per_scheduled_pod: 250.0,
            per_attempt: 250.0,
            by_plugin_extension_point: [("A/Filter".to_string(), 100), ("B/Score".to_string(), 400)].into(),
            ..Default::default()
        });
        let blocks = instructions(&run);
        let Block::Table { rows, .. } = &blocks[2] else { panic!("{blocks:?}") };
        assert_eq!(rows[0], vec![cell("B/Score"), cell("100"), cell("40.0%")]);
        assert_eq!(rows[1], vec![cell("A/Filter"), cell("25"), cell("10.0%")]);
    }

    #[test]
    fn top_plugins_orders_by_total_then_name() {
        let t = |plugin: &str, total: f64| PluginTiming {
            plugin: plugin.into(),
            total_micros: total,
            ..Default::default()
        };
        let timings = vec![t("b", 5.0), t("a", 9.0), t("c", 5.0), t("d", 1.0)];
        let names: Vec<&str> = top_plugins(&timings, 3).iter().map(|t| t.plugin.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(top_plugins(&[], 3).is_empty());
    }
}
