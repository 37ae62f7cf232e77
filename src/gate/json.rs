//! The versioned `compare/v1` JSON report.

use serde_json::{json, Value};

use super::evaluate::{GateFlags, GateReport, Verdict};

/// The schema tag of the JSON output.
pub const COMPARE_SCHEMA: &str = "schedperf.compare/v1";

/// Renders the report as `compare/v1` JSON (pretty-printed, newline-terminated).
pub fn render(report: &GateReport, flags: GateFlags) -> String {
    let counts: serde_json::Map<String, Value> =
        [Verdict::Regressed, Verdict::Suspect, Verdict::Noisy, Verdict::Improved, Verdict::Ok, Verdict::ReportOnly]
            .iter()
            .map(|v| (v.as_str().to_string(), json!(report.count(*v))))
            .collect();
    let doc = json!({
        "schemaVersion": COMPARE_SCHEMA,
        "kind": if report.compare_only { "compare" } else { "gate" },
        "mode": if report.paired { "ab" } else { "stored-baseline" },
        "alpha": report.alpha,
        "exitCode": if report.compare_only { Value::Null } else { json!(report.exit_code(flags)) },
        "flags": {
            "failOnNoisy": flags.fail_on_noisy,
            "failOnPlacementChange": flags.fail_on_placement_change,
            "strict": flags.strict,
        },
        "counts": counts,
        "gatedCells": report.gated(),
        "baseline": report.baseline,
        "current": report.current,
        "cells": report.cells,
        "placements": report.placements,
        "pluginChanges": report.plugin_changes,
        "unmatched": report.unmatched,
        "warnings": report.warnings,
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("report serializes");
    text.push('\n');
    text
}
