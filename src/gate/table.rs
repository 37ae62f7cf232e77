//! The terminal table.

use super::evaluate::{GateFlags, GateReport, Verdict, INSTRUCTION_TEST};
use super::format;

/// Renders the report for a terminal: one row per cell, then placements, warnings and the result.
pub fn render(report: &GateReport, flags: GateFlags) -> String {
    let mut out = format!("{}\n", headline(report));
    let gate = !report.compare_only;
    let mut header: Vec<String> =
        ["WORKLOAD", "METRIC", "BASE -> CURRENT", "CHANGE", "CI", "P"].iter().map(|s| s.to_string()).collect();
    if gate {
        header.extend(["P_HOLM", "BUDGET", "VERDICT"].iter().map(|s| s.to_string()));
    }
    let mut rows = vec![header];
    for c in &report.cells {
        let (change, low, high) = c.change();
        let mut row = vec![
            c.key(),
            format!("{} ({})", c.metric.name(), c.unit),
            format!("{} -> {}", format::value(c.median_base), format::value(c.median_cand)),
            format::cell_pct(c, change),
            format!("[{}, {}]", format::cell_pct(c, low), format::cell_pct(c, high)),
            if c.test == INSTRUCTION_TEST { "-".to_string() } else { format::p(c.p) },
        ];
        if gate {
            row.push(c.p_holm.map(format::p).unwrap_or_else(|| "-".into()));
            row.push(if c.gated { format::budget(c.budget) } else { "-".into() });
            row.push(c.verdict.label().to_string());
        }
        rows.push(row);
    }
    out += &crate::report::table::columns(&rows, &[], false);
    out += &plugin_tables(report);
    for p in &report.placements {
        out +=
            &format!("placements {} seed {}: {}\n", format_key(&p.test_case, &p.workload), p.seed, placement_text(p));
    }
    for w in &report.warnings {
        out += &format!("warning: {w}\n");
    }
    if gate {
        out += &format!("{}\n", result_line(report, flags));
    }
    out
}

/// The rows of the per-plugin table of one workload: plugin/extension point, base and current
/// instructions per scheduled pod, change, and share of the whole change; largest change first.
pub fn plugin_table_rows(report: &GateReport, key: &str) -> Vec<Vec<String>> {
    report
        .plugin_rows(key)
        .into_iter()
        .map(|p| {
            vec![
                p.name.clone(),
                format!("{:.0}", p.base_per_pod),
                format!("{:.0}", p.cand_per_pod),
                format!("{:+.0}", p.delta()),
                format::pct(p.change),
                format!("{:.0}%", p.share_of_total_change * 100.0),
            ]
        })
        .collect()
}

/// The rows of the terminal's per-plugin table (the largest changes; compare.json has them all).
pub const PLUGIN_TABLE_ROWS: usize = 8;

/// The header of [`plugin_table_rows`].
pub const PLUGIN_TABLE_HEADER: [&str; 6] =
    ["PLUGIN/EXTENSION POINT", "BASE INSTR/POD", "CURRENT", "DELTA", "CHANGE", "SHARE OF CHANGE"];

/// For every workload measured in instructions: a line naming the plugins that changed most, then
/// the per-plugin table.
fn plugin_tables(report: &GateReport) -> String {
    let mut out = String::new();
    let mut keys: Vec<String> = report.plugin_changes.iter().map(|p| p.key()).collect();
    keys.dedup();
    for key in keys {
        let cell =
            report.cells.iter().find(|c| c.key() == key && c.metric == super::metric::Metric::InstructionsPerPod);
        let verdict = cell.map_or("", |c| c.verdict.label());
        out += &format!(
            "\ninstructions per scheduled pod by plugin, {key} ({verdict}); most changed: {}\n",
            report.top_plugin_changes(&key, 3)
        );
        let mut rows = vec![PLUGIN_TABLE_HEADER.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
        rows.extend(plugin_table_rows(report, &key).into_iter().take(PLUGIN_TABLE_ROWS));
        out += &crate::report::table::columns(&rows, &[], false);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn format_key(test_case: &str, workload: &str) -> String {
    format!("{test_case}/{workload}")
}

/// `changed: 12 of 500 pods moved (digest a -> b)` or `unchanged`.
pub fn placement_text(p: &super::evaluate::PlacementCheck) -> String {
    if !p.changed {
        return "unchanged".to_string();
    }
    match (p.moved_pods, p.compared_pods) {
        (Some(m), Some(n)) => format!("changed: {m} of {n} pods moved (digest {} -> {})", p.base_digest, p.cand_digest),
        _ => format!("changed (digest {} -> {}; no per-pod placements recorded)", p.base_digest, p.cand_digest),
    }
}

/// The first line: what was compared with what, and how.
pub fn headline(report: &GateReport) -> String {
    let mode =
        if report.paired { "interleaved A/B pairs, Wilcoxon signed-rank" } else { "independent runs, Mann-Whitney U" };
    let what = if report.compare_only { "schedperf compare" } else { "schedperf gate" };
    let mut family =
        if report.compare_only { String::new() } else { format!(", Holm over {} gated cells", report.holm_family()) };
    let counts = report.cells.iter().filter(|c| c.test == INSTRUCTION_TEST).count();
    if counts > 0 {
        family += &format!("; {counts} instruction-count cells judged on their ratio");
    }
    format!(
        "{what}: {} vs {} ({mode}; Hodges-Lehmann change with {:.0}% CI; alpha {}{family})",
        report.baseline.file,
        report.current.file,
        (1.0 - report.alpha) * 100.0,
        report.alpha
    )
}

/// `result: FAIL (exit 1): 1 regressed, 0 suspect, ...`.
pub fn result_line(report: &GateReport, flags: GateFlags) -> String {
    let code = report.exit_code(flags);
    let status = match code {
        0 => "PASS",
        3 => "NOISY",
        _ => "FAIL",
    };
    let counts: Vec<String> =
        [Verdict::Regressed, Verdict::Suspect, Verdict::Noisy, Verdict::Improved, Verdict::Ok, Verdict::ReportOnly]
            .iter()
            .map(|v| format!("{} {}", report.count(*v), v.as_str()))
            .collect();
    let placement = if report.placement_changed() { "; placements changed" } else { "" };
    format!("result: {status} (exit {code}): {}{placement}", counts.join(", "))
}
