//! The terminal table.

use super::evaluate::{GateFlags, GateReport, Verdict};
use super::format;

/// Renders the report for a terminal: one row per cell, then placements, warnings and the result.
pub fn render(report: &GateReport, flags: GateFlags) -> String {
    let mut out = format!("{}\n", headline(report));
    let gate = !report.compare_only;
    let mut header: Vec<String> = ["WORKLOAD", "METRIC", "BASE -> CURRENT", "CHANGE", "CI", "P"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if gate {
        header.extend(
            ["P_HOLM", "BUDGET", "VERDICT"]
                .iter()
                .map(|s| s.to_string()),
        );
    }
    let mut rows = vec![header];
    for c in &report.cells {
        let (change, low, high) = c.change();
        let mut row = vec![
            c.key(),
            format!("{} ({})", c.metric.name(), c.unit),
            format!(
                "{} -> {}",
                format::value(c.median_base),
                format::value(c.median_cand)
            ),
            format::pct(change),
            format!("[{}, {}]", format::pct(low), format::pct(high)),
            format::p(c.p),
        ];
        if gate {
            row.push(c.p_holm.map(format::p).unwrap_or_else(|| "-".into()));
            row.push(if c.gated {
                format::budget(c.budget)
            } else {
                "-".into()
            });
            row.push(c.verdict.label().to_string());
        }
        rows.push(row);
    }
    out += &format::columns(&rows);
    for p in &report.placements {
        out += &format!(
            "placements {} seed {}: {}\n",
            format_key(&p.test_case, &p.workload),
            p.seed,
            placement_text(p)
        );
    }
    for w in &report.warnings {
        out += &format!("warning: {w}\n");
    }
    if gate {
        out += &format!("{}\n", result_line(report, flags));
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
        (Some(m), Some(n)) => format!(
            "changed: {m} of {n} pods moved (digest {} -> {})",
            p.base_digest, p.cand_digest
        ),
        _ => format!(
            "changed (digest {} -> {}; no per-pod placements recorded)",
            p.base_digest, p.cand_digest
        ),
    }
}

/// The first line: what was compared with what, and how.
pub fn headline(report: &GateReport) -> String {
    let mode = if report.paired {
        "interleaved A/B pairs, Wilcoxon signed-rank"
    } else {
        "independent runs, Mann-Whitney U"
    };
    let what = if report.compare_only {
        "schedperf compare"
    } else {
        "schedperf gate"
    };
    let family = if report.compare_only {
        String::new()
    } else {
        format!(", Holm over {} gated cells", report.gated())
    };
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
    let counts: Vec<String> = [
        Verdict::Regressed,
        Verdict::Suspect,
        Verdict::Noisy,
        Verdict::Improved,
        Verdict::Ok,
        Verdict::ReportOnly,
    ]
    .iter()
    .map(|v| format!("{} {}", report.count(*v), v.as_str()))
    .collect();
    let placement = if report.placement_changed() {
        "; placements changed"
    } else {
        ""
    };
    format!(
        "result: {status} (exit {code}): {}{placement}",
        counts.join(", ")
    )
}
