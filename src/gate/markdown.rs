//! Markdown for `$GITHUB_STEP_SUMMARY` and `::error` / `::warning` workflow annotations.

use super::evaluate::{Cell, GateFlags, GateReport, Verdict};
use super::{format, table};
use crate::report::markdown::escape;

/// GitHub rejects a step summary above 1 MiB; stay well below it.
pub const STEP_SUMMARY_MAX_BYTES: usize = 1_000_000;

/// GitHub shows about ten annotations per step; more are dropped.
pub const MAX_ANNOTATIONS: usize = 10;

/// Renders the summary: the result, the cells needing attention, then every cell in `<details>`.
pub fn render(report: &GateReport, flags: GateFlags) -> String {
    let mut out = String::new();
    if report.compare_only {
        out += "## schedperf compare\n\n";
    } else {
        let code = report.exit_code(flags);
        let status = match code {
            0 => "pass",
            3 => "noisy",
            _ => "FAIL",
        };
        out += &format!("## schedperf gate: {status} (exit {code})\n\n");
    }
    out += &format!("{}\n\n", escape(&table::headline(report)));
    let attention: Vec<&Cell> = report
        .cells
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Regressed | Verdict::Suspect | Verdict::Noisy | Verdict::Improved))
        .collect();
    if !report.compare_only {
        if attention.is_empty() {
            out += &format!("All {} gated cells are within budget.\n\n", report.gated());
        } else {
            out += &cells_table(&attention, true);
            out.push('\n');
        }
    }
    out += &plugin_tables(report);
    if report.placements.iter().any(|p| p.changed) {
        out += "**Placements changed** for the same seed:\n\n";
        for p in report.placements.iter().filter(|p| p.changed) {
            out += &format!("- `{}/{}` seed {}: {}\n", p.test_case, p.workload, p.seed, table::placement_text(p));
        }
        out.push('\n');
    }
    if !report.warnings.is_empty() {
        out += "Warnings:\n\n";
        for w in &report.warnings {
            out += &format!("- {}\n", escape(w));
        }
        out.push('\n');
    }
    let all: Vec<&Cell> = report.cells.iter().collect();
    let details = format!(
        "<details><summary>All {} cells</summary>\n\n{}\n</details>\n",
        all.len(),
        cells_table(&all, !report.compare_only)
    );
    if out.len() + details.len() < STEP_SUMMARY_MAX_BYTES {
        out += &details;
    } else {
        out += "The full table is too large for the step summary; see the JSON report.\n";
    }
    if !report.compare_only {
        out += &format!("\n{}\n", table::result_line(report, flags));
    }
    out
}

fn cells_table(cells: &[&Cell], gate: bool) -> String {
    let mut out = String::from("| Workload | Metric | Base | Current | Change | CI | p |");
    if gate {
        out += " p (Holm) | Budget | Verdict |";
    }
    out += "\n|---|---|---:|---:|---:|---|---:|";
    if gate {
        out += "---:|---:|---|";
    }
    out.push('\n');
    for c in cells {
        let (change, low, high) = c.change();
        out += &format!(
            "| `{}` | {} | {} {} | {} {} | {} | [{}, {}] | {} |",
            c.key(),
            c.metric.name(),
            format::value(c.median_base),
            c.unit,
            format::value(c.median_cand),
            c.unit,
            format::cell_pct(c, change),
            format::cell_pct(c, low),
            format::cell_pct(c, high),
            if c.test == super::evaluate::INSTRUCTION_TEST { "-".to_string() } else { format::p(c.p) }
        );
        if gate {
            let verdict = match c.verdict {
                Verdict::Regressed => "**REGRESSED**".to_string(),
                v => v.as_str().to_string(),
            };
            out += &format!(
                " {} | {} | {} |",
                c.p_holm.map(format::p).unwrap_or_else(|| "-".into()),
                if c.gated { format::budget(c.budget) } else { "-".into() },
                verdict
            );
        }
        out.push('\n');
    }
    out
}

/// Per workload measured in instructions: the per-plugin table (the 12 rows that changed most).
fn plugin_tables(report: &GateReport) -> String {
    let mut out = String::new();
    let mut keys: Vec<String> = report.plugin_changes.iter().map(|p| p.key()).collect();
    keys.dedup();
    for key in keys {
        out += &format!("Instructions per scheduled pod by plugin, `{key}` (largest change first):\n\n");
        out += "| Plugin/extension point | Base | Current | Delta | Change | Share of change |\n|---|---:|---:|---:|---:|---:|\n";
        for row in table::plugin_table_rows(report, &key).into_iter().take(12) {
            out += &format!("| {} |\n", row.iter().map(|c| escape(c)).collect::<Vec<_>>().join(" | "));
        }
        out.push('\n');
    }
    out
}

/// Workflow commands for the worst cells (at most [`MAX_ANNOTATIONS`]): `::error` for a failure,
/// `::warning` for suspect, noisy and changed placements that do not fail the gate.
pub fn annotations(report: &GateReport, flags: GateFlags) -> Vec<String> {
    if report.compare_only {
        return Vec::new();
    }
    let mut items: Vec<(u8, f64, String)> = Vec::new();
    for c in &report.cells {
        let (change, low, high) = c.change();
        let detail = format!(
            "{} {} {} -> {} {}: {} [{}, {}], p_holm={}, budget {}",
            c.key(),
            c.metric.name(),
            format::value(c.median_base),
            format::value(c.median_cand),
            c.unit,
            format::pct(change),
            format::pct(low),
            format::pct(high),
            c.p_holm.map(format::p).unwrap_or_else(|| "-".into()),
            format::budget(c.budget)
        );
        let detail = if c.metric.is_instructions() {
            format!("{detail}; most changed: {}", report.top_plugin_changes(&c.key(), 3))
        } else {
            detail
        };
        let level = match c.verdict {
            Verdict::Regressed => 0,
            Verdict::Suspect if flags.strict => 0,
            Verdict::Suspect => 1,
            Verdict::Noisy => 2,
            _ => continue,
        };
        let command = if level == 0 { "error" } else { "warning" };
        items.push((
            level,
            -c.ratio,
            command_line(command, &format!("{} {}", c.verdict.as_str(), c.metric.name()), &detail),
        ));
    }
    for p in report.placements.iter().filter(|p| p.changed) {
        let command = if flags.fail_on_placement_change { "error" } else { "warning" };
        let detail = format!("{}/{} seed {}: {}", p.test_case, p.workload, p.seed, table::placement_text(p));
        items.push((
            if flags.fail_on_placement_change { 0 } else { 1 },
            0.0,
            command_line(command, "placements changed", &detail),
        ));
    }
    items.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    items.into_iter().take(MAX_ANNOTATIONS).map(|(_, _, line)| line).collect()
}

/// One workflow command, with GitHub's escaping of data (`%`, CR, LF) and properties (also `:` `,`).
fn command_line(command: &str, title: &str, message: &str) -> String {
    let data = |s: &str| s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    let property = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
    format!("::{command} title=schedperf gate {}::{}", property(title), data(message))
}
