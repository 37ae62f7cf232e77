//! Run reports: the `report.json` model and its renderings (terminal table, Markdown, HTML).

pub mod model;

pub use model::*;

/// Minimal renderers until the full ones land (replaced on merge of the report branch).
pub fn summary_table(report: &Report) -> String {
    let mut s = String::new();
    for r in &report.runs {
        s.push_str(&format!(
            "{}/{} rep {}: {} pods, {:.0} pods/s avg (p50 {:.0}), attempt p50 {:.1}us p99 {:.1}us, lost {}, cache consistent {}\n",
            r.test_case, r.workload, r.rep, r.measured_pods, r.throughput.average, r.throughput.p50,
            r.attempt_latency_micros.p50, r.attempt_latency_micros.p99, r.accounting.lost, r.cache_consistent
        ));
    }
    s
}

pub fn markdown(report: &Report) -> String {
    summary_table(report)
}

pub fn write_outputs(report: &Report, dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::write(dir.join("report.json"), serde_json::to_string_pretty(report).expect("report serializes"))
}
