//! Benchmark-history formats: Bencher's BMF JSON and github-action-benchmark's custom JSON.
//!
//! Both carry the current side's median per cell with the distribution-free 95% interval of that
//! median; they feed charts and history, while the gate decides.

use serde_json::{json, Map, Value};

use super::evaluate::GateReport;
use super::format;

/// Bencher Metric Format: `{"<testCase/workload>": {"<metric>": {value, lower_value, upper_value}}}`.
pub fn bmf(report: &GateReport) -> String {
    let mut doc = Map::new();
    for c in &report.cells {
        let (lo, hi) = (c.median_cand_low, c.median_cand_high);
        let entry = doc.entry(c.key()).or_insert_with(|| Value::Object(Map::new()));
        entry
            .as_object_mut()
            .expect("object")
            .insert(c.metric.name().to_string(), json!({"value": c.median_cand, "lower_value": lo, "upper_value": hi}));
    }
    // Instructions per scheduled pod of every plugin/extension point, for per-plugin history.
    for p in report.plugin_changes.iter().filter(|p| p.kind == "plugin-extension-point") {
        let entry = doc.entry(p.key()).or_insert_with(|| Value::Object(Map::new()));
        entry.as_object_mut().expect("object").insert(
            format!("instructions-per-pod:{}", p.name),
            json!({"value": p.cand_per_pod, "lower_value": p.cand_per_pod, "upper_value": p.cand_per_pod}),
        );
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(doc)).expect("serializes");
    text.push('\n');
    text
}

/// github-action-benchmark input: `(customBiggerIsBetter, customSmallerIsBetter)` arrays of
/// `{name, unit, value, range, extra}`; the interval goes in `range`, n and p in `extra`.
pub fn gab(report: &GateReport) -> (String, String) {
    let (mut bigger, mut smaller) = (Vec::new(), Vec::new());
    for c in &report.cells {
        let (lo, hi) = (c.median_cand_low, c.median_cand_high);
        let (change, low, high) = c.change();
        let entry = json!({
            "name": format!("{} {}", c.key(), c.metric.name()),
            "unit": c.unit,
            "value": c.median_cand,
            "range": format!("{}..{}", format::value(lo), format::value(hi)),
            "extra": format!(
                "n={}/{} change {} [{}, {}] p={} verdict={}",
                c.n_base,
                c.n_cand,
                format::pct(change),
                format::pct(low),
                format::pct(high),
                format::p(c.p),
                c.verdict.as_str()
            ),
        });
        if c.metric.bigger_is_better() {
            bigger.push(entry);
        } else {
            smaller.push(entry);
        }
    }
    let render = |v: Vec<Value>| {
        let mut t = serde_json::to_string_pretty(&Value::Array(v)).expect("serializes");
        t.push('\n');
        t
    };
    (render(bigger), render(smaller))
}
