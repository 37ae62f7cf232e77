//! Cross-renderer tests: `write_outputs`, the JSON Schema, and the headless-browser check.

use super::sample::sample_report;
use super::*;

#[test]
fn write_outputs_writes_three_files_that_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/out");
    let report = sample_report();
    write_outputs(&report, &out).unwrap();
    let json = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(json.starts_with("{\n  \"schemaVersion\": \"schedperf.report/v1\""), "pretty JSON");
    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
    assert_eq!(std::fs::read_to_string(out.join("report.md")).unwrap(), markdown(&report));
    assert_eq!(std::fs::read_to_string(out.join("report.html")).unwrap(), html(&report));
}
