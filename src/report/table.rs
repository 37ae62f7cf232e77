//! The terminal summary printed on stdout after a run: one aligned row per run and a footer that
//! names every run that failed its threshold, lost pods or ended with an inconsistent cache.

use super::format::{self, num};
use super::model::{Report, RunReport};

/// The summary columns: header, whether the column is right-aligned, and how a run fills it.
type Column = (&'static str, bool, fn(&RunReport) -> String);

const COLUMNS: &[Column] = &[
    ("test case/workload", false, |r| format::one_line(&format::run_name(r))),
    ("rep", true, format::rep_label),
    ("pods", true, |r| r.measured_pods.to_string()),
    ("pods/s avg", true, |r| num(r.throughput.average)),
    ("p50", true, |r| num(r.throughput.p50)),
    ("p90", true, |r| num(r.throughput.p90)),
    ("p99", true, |r| num(r.throughput.p99)),
    ("attempt p50 µs", true, |r| num(r.attempt_latency_micros.p50)),
    ("attempt p99 µs", true, |r| num(r.attempt_latency_micros.p99)),
    ("e2e p99 ms", true, |r| num(r.e2e_latency_micros.p99 / 1000.0)),
    ("unsched", true, |r| r.unschedulable_pods.to_string()),
    ("preempt", true, |r| r.counters.preemptions.to_string()),
    ("RSS MiB", true, |r| format::mib(r.peak_rss_bytes)),
    ("threshold", false, |r| format::verdict(r).to_string()),
    ("lost", true, |r| r.accounting.lost.to_string()),
    ("cache", false, |r| if r.cache_consistent { "ok" } else { "DIFF" }.to_string()),
];

/// The terminal summary of a report: a header line, one row per run with aligned columns, and a
/// footer listing problems (or saying that there were none).
pub fn summary_table(report: &Report) -> String {
    let headers: Vec<String> = COLUMNS.iter().map(|c| c.0.to_string()).collect();
    let rows: Vec<Vec<String>> = report.runs.iter().map(|r| COLUMNS.iter().map(|c| (c.2)(r)).collect()).collect();
    let right: Vec<bool> = COLUMNS.iter().map(|c| c.1).collect();
    let mut out = align(&headers, &rows, &right);
    if report.runs.is_empty() {
        out.push_str("(no runs)\n");
    }
    out += &instructions_block(report);
    let problems = format::problems(report);
    out.push('\n');
    if problems.is_empty() {
        let thresholds = report.runs.iter().filter(|r| r.threshold_passed.is_some()).count();
        out.push_str(&format!(
            "{} run(s): no pods lost, caches consistent, {thresholds} threshold(s) passed.\n",
            report.runs.len()
        ));
    } else {
        for p in &problems {
            out.push_str(p);
            out.push('\n');
        }
    }
    out
}

/// For runs measured with `--measure instructions`: instructions of the measured phase, per
/// scheduled pod and per attempt, and the three plugin/extension points that cost the most.
fn instructions_block(report: &Report) -> String {
    let runs: Vec<&RunReport> = report.runs.iter().filter(|r| r.instructions.is_some()).collect();
    if runs.is_empty() {
        return String::new();
    }
    let headers: Vec<String> =
        ["instructions (callgrind)", "rep", "total", "per pod", "per attempt", "top plugins (per pod)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let i = r.instructions.as_ref().expect("filtered");
            let mut top: Vec<(&String, &u64)> = i.by_plugin_extension_point.iter().collect();
            top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let pods = i.scheduled_pods.max(1) as f64;
            let top: Vec<String> = top.iter().take(3).map(|(k, v)| format!("{k} {:.0}", **v as f64 / pods)).collect();
            vec![
                format::one_line(&format::run_name(r)),
                format::rep_label(r),
                i.total.to_string(),
                format!("{:.0}", i.per_scheduled_pod),
                format!("{:.0}", i.per_attempt),
                top.join(", "),
            ]
        })
        .collect();
    format!("\n{}", align(&headers, &rows, &[false, true, true, true, true, false]))
}

/// A header and rows laid out by [`columns`], with a dashed rule under the header.
fn align(headers: &[String], rows: &[Vec<String>], right: &[bool]) -> String {
    let all: Vec<Vec<String>> = std::iter::once(headers.to_vec()).chain(rows.iter().cloned()).collect();
    columns(&all, right, true)
}

/// Lays out rows as columns two spaces apart, each cell padded to its column's widest cell
/// (counted in characters): column `i` right-aligned when `right[i]`, left-aligned otherwise
/// (and past the end of `right`). Rows may differ in length; no line has trailing spaces. With
/// `rule`, a dashed rule as wide as each column goes under the first row (the header). Every
/// terminal table of the tool is laid out here.
pub fn columns(rows: &[Vec<String>], right: &[bool], rule: bool) -> String {
    let width = |s: &str| s.chars().count();
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; n];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(widths[i] - width(cell));
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&pad);
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&pad);
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        out.push_str(&line(row));
        if i == 0 && rule {
            let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&line(&dashes));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    #[test]
    fn one_aligned_row_per_run() {
        let report = sample_report();
        let text = summary_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("test case/workload"), "{text}");
        assert!(lines[1].starts_with("----"), "{text}");
        // Every header and data line has the same width up to the last column's padding, and the
        // `rep` column ends at the same character index in every row.
        let rep_end = lines[0].find("rep").unwrap() + 3;
        for row in &lines[2..4] {
            let chars: Vec<char> = row.chars().collect();
            assert!(chars[rep_end - 1].is_ascii_digit(), "rep column misaligned in {row:?}");
            assert_eq!(chars[rep_end], ' ', "{row:?}");
        }
        let check = |row: usize, needles: &[&str]| {
            for n in needles {
                assert!(lines[row].contains(n), "row {row} lacks {n:?}: {}", lines[row]);
            }
        };
        check(2, &["SchedulingBasic/5000Nodes", "PASS", "ok", "5000"]);
        check(3, &["SchedulingPodAffinity/<script>", "FAIL", "DIFF"]);
    }

    #[test]
    fn footer_names_failed_and_lossy_runs() {
        let report = sample_report();
        let text = summary_table(&report);
        assert!(text.contains("FAIL SchedulingPodAffinity/<script>&\"x\" rep 1: SchedulingThroughput"), "{text}");
        assert!(text.contains("LOST SchedulingPodAffinity/<script>&\"x\" rep 1: 3 of"), "{text}");
        assert!(text.contains("CACHE SchedulingPodAffinity/<script>&\"x\" rep 1"), "{text}");
        assert!(!text.contains("SchedulingBasic/5000Nodes rep 0:"), "{text}");

        let mut clean = report.clone();
        clean.runs.truncate(1);
        let text = summary_table(&clean);
        assert!(text.ends_with("1 run(s): no pods lost, caches consistent, 1 threshold(s) passed.\n"), "{text}");
    }

    #[test]
    fn no_runs_says_so() {
        let mut report = sample_report();
        report.runs.clear();
        assert!(summary_table(&report).contains("(no runs)"));
    }

    #[test]
    fn align_pads_by_characters() {
        let headers = vec!["a".to_string(), "µs".to_string()];
        let rows = vec![vec!["long".to_string(), "1".to_string()]];
        assert_eq!(align(&headers, &rows, &[false, true]), "a     µs\n----  --\nlong   1\n");
    }

    #[test]
    fn columns_pad_align_and_trim() {
        let rows = |rs: &[&[&str]]| rs.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect::<Vec<_>>();
        // (rows, right, rule) -> text
        type Case<'a> = (Vec<Vec<String>>, &'a [bool], bool, &'a str);
        let cases: [Case; 6] = [
            (rows(&[]), &[], true, ""),
            (rows(&[&["a", "bb", "c"], &["ddd", "e"]]), &[], false, "a    bb  c\nddd  e\n"),
            (rows(&[&["n", "v"], &["x", "10"], &["yy", "7"]]), &[false, true], false, "n    v\nx   10\nyy   7\n"),
            (rows(&[&["h", "µs"], &["long", "1"]]), &[false, true], true, "h     µs\n----  --\nlong   1\n"),
            // A last cell that is empty or short leaves no trailing spaces.
            (rows(&[&["name", ""], &["a", "b"]]), &[], false, "name\na     b\n"),
            // `right` shorter than the rows: the rest is left-aligned.
            (rows(&[&["1", "x"], &["22", "yy"]]), &[true], false, " 1  x\n22  yy\n"),
        ];
        for (rs, right, rule, want) in cases {
            assert_eq!(columns(&rs, right, rule), want, "{rs:?} right={right:?} rule={rule}");
        }
    }
}
