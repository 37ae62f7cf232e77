//! The report's charts as inline SVG, drawn in Rust so that `report.html` needs no script to show
//! them. Each chart is an `<svg data-chart="…">`; drawn data marks carry `class="mark"`, and a
//! chart without data shows "no data" instead. Runs keep one colour across all charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::format::{self, num};
use super::histogram;
use super::html::escape;
use super::model::{Report, RunReport};

/// Chart width in SVG user units (the page scales it down on narrow screens).
const WIDTH: f64 = 640.0;
/// Height of the line and column charts.
const HEIGHT: f64 = 300.0;
/// Left, right, top and bottom margins of the plot area.
const MARGIN: (f64, f64, f64, f64) = (64.0, 20.0, 14.0, 46.0);
/// How many plugin/extension-point pairs the plugin chart shows.
pub const PLUGIN_BARS: usize = 12;
/// How many runs the plugin chart draws side by side; later runs are left out and said so.
pub const PLUGIN_RUNS: usize = 6;
/// Left margin of the plugin chart, room for [`PLUGIN_LABEL_CHARS`] characters of 12-unit text.
const PLUGIN_LABEL_WIDTH: f64 = 290.0;
/// Longer plugin labels are cut with an ellipsis (the full label stays in the tooltip).
const PLUGIN_LABEL_CHARS: usize = 40;
/// Width of one bin of the utilization histogram, as a fraction (5 %).
pub const UTILIZATION_BIN: f64 = 0.05;

/// The run colours (Tableau 10), reused cyclically.
const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

/// The colour of run `index` (0-based) in every chart.
pub fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// A run's label in legends and tooltips: `1 SchedulingBasic/5000Nodes rep 0`.
pub fn run_label(index: usize, run: &RunReport) -> String {
    format!("{} {} rep {}", index + 1, format::run_name(run), format::rep_label(run))
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) that cuts `range` into about `ticks` parts.
pub fn nice_step(range: f64, ticks: f64) -> f64 {
    let raw = (range / ticks).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let factor = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    factor * magnitude
}

/// Ticks from 0 to a nice maximum at or above `max` (1 when `max` is not positive).
pub fn linear_ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let step = nice_step(max, 5.0);
    let top = (max / step - 1e-9).ceil().max(1.0) as usize;
    (0..=top).map(|i| i as f64 * step).collect()
}

/// A plot area and the mapping of data to it.
struct Frame {
    height: f64,
    left: f64,
    x_range: (f64, f64),
    y_top: f64,
    x_log: bool,
}

impl Frame {
    fn plot_width(&self) -> f64 {
        WIDTH - self.left - MARGIN.1
    }

    fn plot_height(&self) -> f64 {
        self.height - MARGIN.2 - MARGIN.3
    }

    fn x(&self, v: f64) -> f64 {
        let (lo, hi) = self.x_range;
        let f = if self.x_log {
            (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())
        } else {
            (v - lo) / (hi - lo)
        };
        self.left + f.clamp(0.0, 1.0) * self.plot_width()
    }

    fn y(&self, v: f64) -> f64 {
        let f = (v / self.y_top).clamp(0.0, 1.0);
        MARGIN.2 + (1.0 - f) * self.plot_height()
    }

    fn bottom(&self) -> f64 {
        self.height - MARGIN.3
    }
}

fn open(out: &mut String, kind: &str, title: &str, height: f64) {
    let _ = write!(
        out,
        "<svg data-chart=\"{kind}\" viewBox=\"0 0 {WIDTH} {height:.1}\" width=\"{WIDTH}\" height=\"{height:.1}\" \
         role=\"img\" aria-label=\"{t}\"><title>{t}</title>",
        t = escape(title)
    );
}

/// A chart that says "no data" (in a `<text>`), for a report without the figures it needs.
pub fn no_data(kind: &str, title: &str) -> String {
    let mut out = String::new();
    open(&mut out, kind, title, 120.0);
    let _ = write!(
        out,
        "<rect class=\"frame\" x=\"1\" y=\"1\" width=\"{}\" height=\"118\" rx=\"6\"/>\
         <text class=\"nodata\" x=\"{}\" y=\"66\" text-anchor=\"middle\">no data</text></svg>",
        WIDTH - 2.0,
        WIDTH / 2.0
    );
    out
}

/// Horizontal grid lines with value labels on the left, and the axis titles.
fn y_axis(out: &mut String, frame: &Frame, ticks: &[f64], label: impl Fn(f64) -> String, title: &str) {
    for &t in ticks {
        let y = frame.y(t);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            frame.left,
            WIDTH - MARGIN.1,
            frame.left - 6.0,
            y + 4.0,
            escape(&label(t))
        );
    }
    let mid = MARGIN.2 + frame.plot_height() / 2.0;
    let _ = write!(
        out,
        "<text class=\"axis\" transform=\"translate(14 {mid:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        escape(title)
    );
}

/// Tick marks and labels under the plot at data values `ticks`, and the axis title.
fn x_axis(out: &mut String, frame: &Frame, ticks: &[f64], label: impl Fn(f64) -> String, title: &str) {
    let bottom = frame.bottom();
    let _ = write!(
        out,
        "<line class=\"axisline\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\"/>",
        frame.left,
        WIDTH - MARGIN.1
    );
    for &t in ticks {
        let x = frame.x(t);
        let _ = write!(
            out,
            "<line class=\"axisline\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom:.1}\" y2=\"{:.1}\"/>\
             <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 4.0,
            bottom + 17.0,
            escape(&label(t))
        );
    }
    let _ = write!(
        out,
        "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        frame.left + frame.plot_width() / 2.0,
        frame.height - 8.0,
        escape(title)
    );
}

/// Pixel points of a series, dropping points that land within half a pixel of the previous one.
fn polyline(out: &mut String, frame: &Frame, points: &[(f64, f64)], color: &str, title: &str) {
    let mut coords = String::new();
    let mut last: Option<(f64, f64)> = None;
    for (i, &(x, y)) in points.iter().enumerate() {
        let p = (frame.x(x), frame.y(y));
        let near = last.is_some_and(|l| (l.0 - p.0).abs() < 0.5 && (l.1 - p.1).abs() < 0.5);
        if near && i + 1 != points.len() {
            continue;
        }
        let _ = write!(coords, "{}{:.1},{:.1}", if coords.is_empty() { "" } else { " " }, p.0, p.1);
        last = Some(p);
    }
    let _ = write!(
        out,
        "<polyline class=\"mark line\" points=\"{coords}\" stroke=\"{color}\"><title>{}</title></polyline>",
        escape(title)
    );
}

/// Throughput over time: the per-interval pods/s samples of each run, one line per run.
pub fn throughput(report: &Report) -> String {
    const TITLE: &str = "Scheduling throughput over time";
    let series: Vec<(usize, Vec<(f64, f64)>)> = report
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let dt = r.throughput.interval_seconds;
            let dt = if dt.is_finite() && dt > 0.0 { dt } else { 1.0 };
            let points = r
                .throughput
                .samples
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(k, &v)| ((k + 1) as f64 * dt, v.max(0.0)))
                .collect();
            (i, points)
        })
        .filter(|(_, p): &(usize, Vec<(f64, f64)>)| !p.is_empty())
        .collect();
    if series.is_empty() {
        return no_data("throughput", TITLE);
    }
    let x_max = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(0.0, f64::max);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(0.0, f64::max);
    let y_ticks = linear_ticks(y_max);
    let x_ticks = linear_ticks(x_max);
    let frame = Frame {
        height: HEIGHT,
        left: MARGIN.0,
        x_range: (0.0, *x_ticks.last().unwrap()),
        y_top: *y_ticks.last().unwrap(),
        x_log: false,
    };
    let mut out = String::new();
    open(&mut out, "throughput", TITLE, HEIGHT);
    y_axis(&mut out, &frame, &y_ticks, num, "pods/s");
    x_axis(&mut out, &frame, &x_ticks, num, "seconds since the first measured pod (end of each interval)");
    for (i, points) in &series {
        let label = run_label(*i, &report.runs[*i]);
        polyline(&mut out, &frame, points, color(*i), &label);
        if points.len() <= 60 {
            for &(x, y) in points {
                let _ = write!(
                    out,
                    "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>{}: {} pods/s at {} s</title></circle>",
                    frame.x(x),
                    frame.y(y),
                    color(*i),
                    escape(&label),
                    num(y),
                    num(x)
                );
            }
        }
    }
    out.push_str("</svg>");
    out
}

/// The attempt-latency distribution of a run as CDF points (µs, fraction): from its serialized
/// histogram when it has one that decodes, otherwise from its p50/p90/p99/max.
pub fn attempt_latency_cdf(run: &RunReport) -> Vec<(f64, f64)> {
    if let Some(encoded) = run.histograms.get(histogram::ATTEMPT_LATENCY_MICROS) {
        if let Ok(h) = histogram::decode(encoded, histogram::ATTEMPT_LATENCY_MICROS) {
            let points = histogram::cdf(&h);
            if !points.is_empty() {
                return points;
            }
        }
    }
    let p = &run.attempt_latency_micros;
    if p.count == 0 {
        return Vec::new();
    }
    [(p.p50, 0.5), (p.p90, 0.9), (p.p99, 0.99), (p.max, 1.0)]
        .into_iter()
        .filter(|(v, _)| v.is_finite() && *v > 0.0)
        .collect()
}

/// Attempt latency distributions: one CDF per run on a logarithmic latency axis, with guides at
/// the 50th, 90th and 99th percentiles.
pub fn latency(report: &Report) -> String {
    const TITLE: &str = "Scheduling attempt latency (cumulative distribution)";
    let series: Vec<(usize, Vec<(f64, f64)>)> = report
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i, attempt_latency_cdf(r)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if series.is_empty() {
        return no_data("latency", TITLE);
    }
    let values = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0.max(1.0)));
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let lo_decade = lo.log10().floor() as i32;
    let hi_decade = (hi.log10().ceil() as i32).max(lo_decade + 1);
    let x_ticks: Vec<f64> = (lo_decade..=hi_decade).map(|d| 10f64.powi(d)).collect();
    let frame = Frame {
        height: HEIGHT,
        left: MARGIN.0,
        x_range: (x_ticks[0], *x_ticks.last().unwrap()),
        y_top: 1.0,
        x_log: true,
    };
    let mut out = String::new();
    open(&mut out, "latency", TITLE, HEIGHT);
    let y_ticks = [0.0, 0.25, 0.5, 0.75, 1.0];
    y_axis(&mut out, &frame, &y_ticks, |t| format!("{:.0}%", t * 100.0), "attempts ≤ latency");
    x_axis(&mut out, &frame, &x_ticks, num, "attempt latency (µs, log scale)");
    for (q, name) in [(0.9, "p90"), (0.99, "p99")] {
        let y = frame.y(q);
        let _ = write!(
            out,
            "<line class=\"guide\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
            frame.left,
            WIDTH - MARGIN.1,
            frame.left + 4.0,
            y - 3.0
        );
    }
    for (i, points) in &series {
        let run = &report.runs[*i];
        let p = &run.attempt_latency_micros;
        let title = format!(
            "{}: p50 {} µs, p90 {} µs, p99 {} µs, max {} µs",
            run_label(*i, run),
            num(p.p50),
            num(p.p90),
            num(p.p99),
            num(p.max)
        );
        polyline(&mut out, &frame, points, color(*i), &title);
    }
    out.push_str("</svg>");
    out
}

/// Time per plugin: horizontal bars of total time per plugin and extension point (the
/// [`PLUGIN_BARS`] largest over the first [`PLUGIN_RUNS`] runs), one bar per run in each group.
pub fn plugins(report: &Report) -> String {
    const TITLE: &str = "Time per plugin and extension point (total over sampled cycles)";
    let runs: Vec<(usize, &RunReport)> = report.runs.iter().enumerate().take(PLUGIN_RUNS).collect();
    let mut totals: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for (_, run) in &runs {
        for t in &run.plugin_timings {
            if t.total_micros.is_finite() && t.total_micros > 0.0 {
                *totals.entry((t.plugin.as_str(), t.extension_point.as_str())).or_default() += t.total_micros;
            }
        }
    }
    if totals.is_empty() {
        return no_data("plugins", TITLE);
    }
    let mut keys: Vec<((&str, &str), f64)> = totals.into_iter().collect();
    keys.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    keys.truncate(PLUGIN_BARS);
    let with_data: Vec<(usize, &RunReport)> =
        runs.into_iter().filter(|(_, r)| r.plugin_timings.iter().any(|t| t.total_micros > 0.0)).collect();
    let value = |run: &RunReport, key: (&str, &str)| {
        run.plugin_timings
            .iter()
            .filter(|t| (t.plugin.as_str(), t.extension_point.as_str()) == key)
            .map(|t| t.total_micros / 1000.0)
            .sum::<f64>()
    };
    let groups: Vec<BarGroup> = keys
        .iter()
        .map(|(key, _)| {
            let full = format!("{} · {}", key.0, key.1);
            let bars = with_data
                .iter()
                .map(|(i, run)| {
                    let ms = value(run, *key);
                    Bar {
                        value: ms,
                        color: color(*i),
                        tooltip: format!("{}: {full}: {} ms", run_label(*i, run), num(ms)),
                    }
                })
                .collect();
            BarGroup { label: full, bars }
        })
        .collect();
    horizontal_bars("plugins", TITLE, "total time (ms)", &groups)
}

/// One bar of a [`horizontal_bars`] chart.
pub struct Bar {
    pub value: f64,
    pub color: &'static str,
    /// Shown on hover; raw text (escaped here).
    pub tooltip: String,
}

/// Bars under one label.
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// Horizontal bars in labelled groups on one linear axis from 0 (titled `axis`), the groups in the
/// order given; labels longer than [`PLUGIN_LABEL_CHARS`] are cut (the full one is the tooltip).
/// Bars are thinner the more a group has; a bar thick enough carries its value. "No data" when no
/// group has a bar.
pub fn horizontal_bars(kind: &str, title: &str, axis: &str, groups: &[BarGroup]) -> String {
    let per_group = groups.iter().map(|g| g.bars.len()).max().unwrap_or(0);
    if per_group == 0 {
        return no_data(kind, title);
    }
    let bar = (22.0 / per_group as f64).clamp(5.0, 14.0);
    let group = bar * per_group as f64 + 8.0;
    let height = MARGIN.2 + MARGIN.3 + group * groups.len() as f64;
    let max = groups.iter().flat_map(|g| g.bars.iter().map(|b| b.value)).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let x_ticks = linear_ticks(max);
    let frame =
        Frame { height, left: PLUGIN_LABEL_WIDTH, x_range: (0.0, *x_ticks.last().unwrap()), y_top: 1.0, x_log: false };
    let mut out = String::new();
    open(&mut out, kind, title, height);
    for &t in &x_ticks {
        let x = frame.x(t);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
            MARGIN.2,
            frame.bottom()
        );
    }
    x_axis(&mut out, &frame, &x_ticks, num, axis);
    for (row, g) in groups.iter().enumerate() {
        let top = MARGIN.2 + row as f64 * group + 4.0;
        let shown: String = if g.label.chars().count() > PLUGIN_LABEL_CHARS {
            g.label.chars().take(PLUGIN_LABEL_CHARS - 1).chain(['…']).collect()
        } else {
            g.label.clone()
        };
        let _ = write!(
            out,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}<title>{}</title></text>",
            frame.left - 6.0,
            top + group / 2.0,
            escape(&shown),
            escape(&g.label)
        );
        for (k, b) in g.bars.iter().enumerate() {
            let v = if b.value.is_finite() { b.value } else { 0.0 };
            let y = top + k as f64 * bar;
            let width = (frame.x(v) - frame.left).max(if v > 0.0 { 1.0 } else { 0.0 });
            let _ = write!(
                out,
                "<rect class=\"mark bar\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"{}\">\
                 <title>{}</title></rect>",
                frame.left,
                bar - 1.0,
                b.color,
                escape(&b.tooltip)
            );
            if bar >= 9.0 {
                let _ = write!(
                    out,
                    "<text class=\"value\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    frame.left + width + 4.0,
                    y + bar - 2.5,
                    num(v)
                );
            }
        }
    }
    out.push_str("</svg>");
    out
}

/// The share of a run's nodes in each utilization bin of [`UTILIZATION_BIN`] width (values of
/// exactly 1.0 and above go into the last bin), as fractions of its node count.
pub fn utilization_bins(values: &[f64]) -> Vec<f64> {
    let bins = (1.0 / UTILIZATION_BIN).round() as usize;
    let mut counts = vec![0u64; bins];
    let mut n = 0u64;
    for &v in values.iter().filter(|v| v.is_finite()) {
        counts[((v.max(0.0) / UTILIZATION_BIN) as usize).min(bins - 1)] += 1;
        n += 1;
    }
    counts.iter().map(|&c| if n == 0 { 0.0 } else { c as f64 / n as f64 }).collect()
}

/// Node utilization: a histogram of requested/allocatable CPU per node at the end of each run,
/// in percent of the run's nodes, runs side by side in each bin.
pub fn utilization(report: &Report) -> String {
    const TITLE: &str = "Node CPU utilization at the end of the run";
    let series: Vec<(usize, Vec<f64>)> = report
        .runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.placement_quality.node_cpu_utilization.iter().any(|v| v.is_finite()))
        .map(|(i, r)| (i, utilization_bins(&r.placement_quality.node_cpu_utilization)))
        .collect();
    if series.is_empty() {
        return no_data("utilization", TITLE);
    }
    let max = series.iter().flat_map(|(_, b)| b.iter().copied()).fold(0.0, f64::max) * 100.0;
    let y_ticks = linear_ticks(max);
    let frame =
        Frame { height: HEIGHT, left: MARGIN.0, x_range: (0.0, 1.0), y_top: *y_ticks.last().unwrap(), x_log: false };
    let mut out = String::new();
    open(&mut out, "utilization", TITLE, HEIGHT);
    y_axis(&mut out, &frame, &y_ticks, |t| format!("{}%", num(t)), "share of nodes");
    let x_ticks: Vec<f64> = (0..=10).map(|i| i as f64 / 10.0).collect();
    x_axis(&mut out, &frame, &x_ticks, |t| format!("{:.0}%", t * 100.0), "CPU requested / allocatable");
    let bin_width = frame.x(UTILIZATION_BIN) - frame.x(0.0);
    let bar = (bin_width - 2.0) / series.len() as f64;
    for (k, (i, bins)) in series.iter().enumerate() {
        let label = run_label(*i, &report.runs[*i]);
        for (b, share) in bins.iter().enumerate() {
            if *share <= 0.0 {
                continue;
            }
            let x = frame.x(b as f64 * UTILIZATION_BIN) + 1.0 + k as f64 * bar;
            let y = frame.y(share * 100.0);
            let _ = write!(
                out,
                "<rect class=\"mark bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\">\
                 <title>{}: {}% of nodes at {:.0}–{:.0}% CPU</title></rect>",
                bar.max(0.5),
                (frame.bottom() - y).max(0.5),
                color(*i),
                escape(&label),
                num(share * 100.0),
                b as f64 * UTILIZATION_BIN * 100.0,
                (b + 1) as f64 * UTILIZATION_BIN * 100.0
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    #[test]
    fn nice_steps_and_ticks() {
        let check = |range: f64, expected: f64| assert_eq!(nice_step(range, 5.0), expected, "range {range}");
        check(10.0, 2.0);
        check(9200.0, 2000.0);
        check(1.0, 0.2);
        check(0.3, 0.1);
        check(37.0, 10.0);
        assert_eq!(linear_ticks(9.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(0.0), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(linear_ticks(f64::NAN).len(), 6);
    }

    #[test]
    fn utilization_bins_cover_zero_to_one() {
        let bins = utilization_bins(&[0.0, 0.049, 0.05, 0.5, 1.0, 1.2, f64::NAN]);
        assert_eq!(bins.len(), 20);
        let check = |bin: usize, expected: f64| assert!((bins[bin] - expected).abs() < 1e-12, "bin {bin}: {bins:?}");
        check(0, 2.0 / 6.0);
        check(1, 1.0 / 6.0);
        check(10, 1.0 / 6.0);
        check(19, 2.0 / 6.0);
        assert!((bins.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(utilization_bins(&[]), vec![0.0; 20]);
    }

    #[test]
    fn every_chart_draws_marks_for_the_sample() {
        let report = sample_report();
        let check = |svg: String, kind: &str, marks: usize| {
            assert!(svg.starts_with(&format!("<svg data-chart=\"{kind}\"")), "{svg}");
            assert!(svg.ends_with("</svg>"));
            assert_eq!(svg.matches("class=\"mark").count(), marks, "{kind}: {svg}");
            assert!(!svg.contains("no data"), "{kind}");
            assert!(!svg.contains("<script>"), "{kind} must escape run names");
        };
        check(throughput(&report), "throughput", 2);
        check(latency(&report), "latency", 2);
        // 12 plugin/extension-point groups × 2 runs.
        check(plugins(&report), "plugins", 24);
        let svg = utilization(&report);
        assert!(svg.matches("class=\"mark bar\"").count() >= 2 * 10, "{svg}");
    }

    #[test]
    fn charts_without_data_say_so() {
        let mut report = sample_report();
        for run in &mut report.runs {
            run.throughput.samples.clear();
            run.histograms.clear();
            run.attempt_latency_micros.count = 0;
            run.plugin_timings.clear();
            run.placement_quality.node_cpu_utilization.clear();
        }
        for (kind, svg) in [
            ("throughput", throughput(&report)),
            ("latency", latency(&report)),
            ("plugins", plugins(&report)),
            ("utilization", utilization(&report)),
        ] {
            assert!(svg.starts_with(&format!("<svg data-chart=\"{kind}\"")), "{svg}");
            assert!(svg.contains(">no data</text>"), "{kind}: {svg}");
            assert!(!svg.contains("class=\"mark"), "{kind}: {svg}");
        }
    }

    #[test]
    fn latency_uses_the_histogram_and_falls_back_to_percentiles() {
        let report = sample_report();
        let run = &report.runs[0];
        let from_histogram = attempt_latency_cdf(run);
        assert!(from_histogram.len() > 50, "{}", from_histogram.len());
        assert_eq!(from_histogram.last().unwrap().1, 1.0);
        let mut bare = run.clone();
        bare.histograms.clear();
        let p = bare.attempt_latency_micros;
        assert_eq!(attempt_latency_cdf(&bare), vec![(p.p50, 0.5), (p.p90, 0.9), (p.p99, 0.99), (p.max, 1.0)]);
        bare.histograms.insert(histogram::ATTEMPT_LATENCY_MICROS.into(), "garbage".into());
        assert_eq!(attempt_latency_cdf(&bare).len(), 4);
    }
}
