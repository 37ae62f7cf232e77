//! Reading `report.json` files written by `schedperf run` and `schedperf ab`.
//!
//! Only the fields the gate relies on are read; anything else is ignored, so newer writers stay
//! readable. Every problem is an [`InputError`] naming the file and the field path.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::InputError;

/// The schema this reader understands (`schemaVersion` must start with it).
pub const REPORT_SCHEMA: &str = "schedperf.report/v1";

/// Which binary an interleaved A/B run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// The baseline binary (merge base).
    Base,
    /// The candidate binary (the change under test).
    Cand,
}

/// Throughput of one run, in pods per second (averaged, and percentiles over the run's time windows).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Throughput {
    pub average: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

/// Latency percentiles of one run, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct LatencySummary {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// One run (one fresh process) of one workload: the unit of replication.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSample {
    pub test_case: String,
    pub workload: String,
    pub seed: u64,
    pub config_digest: String,
    #[serde(default)]
    pub workload_digest: Option<String>,
    /// The repetition index.
    pub rep: u32,
    /// The interleaved A/B pair index (`ab` reports only).
    #[serde(default)]
    pub pair: Option<u32>,
    /// The A/B arm (`ab` reports only; a file-level `arm` applies to every run). Other labels (the
    /// config names `compare` writes) are not A/B arms and read as `None`.
    #[serde(default, deserialize_with = "arm_label")]
    pub arm: Option<Arm>,
    pub throughput: Throughput,
    /// Scheduling attempt latency percentiles, in microseconds.
    #[serde(rename = "attemptLatencyMicros")]
    pub attempt_latency_us: LatencySummary,
    /// Queued-to-bound latency percentiles, in microseconds.
    #[serde(rename = "e2eLatencyMicros")]
    pub e2e_latency_us: LatencySummary,
    pub measured_pods: u64,
    pub placement_digest: String,
    /// Pod name to node name, present only for small workloads.
    #[serde(default)]
    pub placements: Option<BTreeMap<String, String>>,
    /// Instruction counts (`run --measure instructions`); such a run's times are not gated.
    #[serde(default)]
    pub instructions: Option<crate::report::InstructionsReport>,
}

impl RunSample {
    /// The cell key `testCase/workload`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.test_case, self.workload)
    }
}

/// A parsed report: its runs plus the other top-level fields (environment fingerprints and the
/// like), kept verbatim for the `compare/v1` output.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The file the report came from, as given on the command line.
    pub file: String,
    pub schema_version: String,
    /// Top-level fields other than `runs`.
    pub header: serde_json::Map<String, serde_json::Value>,
    pub runs: Vec<RunSample>,
}

impl Report {
    /// True if any run belongs to an A/B arm.
    pub fn has_arms(&self) -> bool {
        self.runs.iter().any(|r| r.arm.is_some())
    }

    /// The runs of one arm.
    pub fn arm(&self, arm: Arm) -> Vec<RunSample> {
        self.runs.iter().filter(|r| r.arm == Some(arm)).cloned().collect()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawReport {
    schema_version: String,
    runs: Vec<RunSample>,
    #[serde(default, deserialize_with = "arm_label")]
    arm: Option<Arm>,
}

/// Reads an `arm` label: `base` and `cand` are A/B arms; any other label is not.
fn arm_label<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Arm>, D::Error> {
    let label: Option<String> = Option::deserialize(d)?;
    Ok(match label.as_deref() {
        Some("base") => Some(Arm::Base),
        Some("cand") => Some(Arm::Cand),
        _ => None,
    })
}

/// Reads and parses a report file.
pub fn load_report(path: &Path) -> Result<Report, InputError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(&file, "", format!("cannot read the report: {e}")))?;
    parse_report(&file, &text)
}

/// Parses the text of a report; `file` names it in errors.
pub fn parse_report(file: &str, text: &str) -> Result<Report, InputError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| InputError::new(file, "", format!("not valid JSON: {e}")))?;
    let serde_json::Value::Object(mut top) = value else {
        return Err(InputError::new(file, "", "expected a JSON object with `schemaVersion` and `runs`"));
    };
    match top.get("schemaVersion") {
        Some(serde_json::Value::String(v)) if v.starts_with(REPORT_SCHEMA) => {}
        Some(serde_json::Value::String(v)) => {
            return Err(InputError::new(
                file,
                "schemaVersion",
                format!("unsupported schema {v:?}; expected {REPORT_SCHEMA:?} (a report written by `schedperf run`)"),
            ))
        }
        _ => {
            return Err(InputError::new(
                file,
                "schemaVersion",
                format!("missing or not a string; expected {REPORT_SCHEMA:?}"),
            ))
        }
    }
    let raw: RawReport = serde_path_to_error::deserialize(serde_json::Value::Object(top.clone())).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        InputError::new(file, path, e.into_inner().to_string())
    })?;
    top.remove("runs");
    let mut runs = raw.runs;
    if let Some(arm) = raw.arm {
        for run in runs.iter_mut().filter(|r| r.arm.is_none()) {
            run.arm = Some(arm);
        }
    }
    for (i, run) in runs.iter().enumerate() {
        validate_run(run).map_err(|(field, msg)| InputError::new(file, format!("runs[{i}].{field}"), msg))?;
    }
    if runs.is_empty() {
        return Err(InputError::new(file, "runs", "no runs; expected at least 6 per workload"));
    }
    Ok(Report { file: file.to_string(), schema_version: raw.schema_version, header: top, runs })
}

fn validate_run(run: &RunSample) -> Result<(), (String, String)> {
    let t = &run.throughput;
    for (name, v) in [("average", t.average), ("p50", t.p50), ("p90", t.p90), ("p95", t.p95), ("p99", t.p99)] {
        if !v.is_finite() || v < 0.0 {
            return Err((format!("throughput.{name}"), format!("{v} is not a finite, non-negative pods/s")));
        }
    }
    if t.average <= 0.0 {
        return Err(("throughput.average".into(), "0 pods/s: the run scheduled nothing".into()));
    }
    for (group, l) in [("attemptLatencyMicros", &run.attempt_latency_us), ("e2eLatencyMicros", &run.e2e_latency_us)] {
        for (name, v) in [("p50", l.p50), ("p90", l.p90), ("p99", l.p99), ("max", l.max)] {
            if !v.is_finite() || v < 0.0 {
                return Err((format!("{group}.{name}"), format!("{v} is not a finite, non-negative latency")));
            }
        }
    }
    if run.test_case.is_empty() {
        return Err(("testCase".into(), "empty; expected the test case name".into()));
    }
    if run.workload.is_empty() {
        return Err(("workload".into(), "empty; expected the workload name".into()));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal valid run as JSON, for tests across the gate.
    pub(crate) fn run_json(test_case: &str, workload: &str, rep: u32, throughput: f64) -> serde_json::Value {
        serde_json::json!({
            "testCase": test_case, "workload": workload, "seed": 42, "configDigest": "c1",
            "workloadDigest": "w1", "rep": rep,
            "throughput": {"average": throughput, "p50": throughput, "p90": throughput, "p95": throughput, "p99": throughput},
            "attemptLatencyMicros": {"p50": 100.0, "p90": 200.0, "p99": 400.0, "max": 900.0},
            "e2eLatencyMicros": {"p50": 1000.0, "p90": 2000.0, "p99": 4000.0, "max": 9000.0},
            "measuredPods": 5000, "placementDigest": "d1", "extraField": {"ignored": true}
        })
    }

    fn report_text(runs: Vec<serde_json::Value>) -> String {
        serde_json::json!({"schemaVersion": "schedperf.report/v1", "tool": "schedperf 0.1", "runs": runs}).to_string()
    }

    #[test]
    fn parses_runs_and_keeps_header() {
        let mut with_arm = run_json("T", "w", 1, 10.0);
        with_arm["arm"] = "cand".into();
        with_arm["pair"] = 3.into();
        with_arm["placements"] = serde_json::json!({"pod-1": "node-2"});
        let r = parse_report("r.json", &report_text(vec![run_json("T", "w", 0, 10.0), with_arm])).unwrap();
        assert_eq!(r.runs.len(), 2);
        assert_eq!(r.runs[0].key(), "T/w");
        assert_eq!(r.runs[0].attempt_latency_us.p99, 400.0);
        assert_eq!((r.runs[1].arm, r.runs[1].pair), (Some(Arm::Cand), Some(3)));
        assert_eq!(r.runs[1].placements.as_ref().unwrap()["pod-1"], "node-2");
        assert_eq!(r.header["tool"], "schedperf 0.1");
        assert!(!r.header.contains_key("runs"));
        assert!(r.has_arms());
    }

    #[test]
    fn file_level_arm_applies_to_runs() {
        let text = serde_json::json!({"schemaVersion": "schedperf.report/v1", "arm": "base",
            "runs": [run_json("T", "w", 0, 10.0)]})
        .to_string();
        assert_eq!(parse_report("a.json", &text).unwrap().runs[0].arm, Some(Arm::Base));
    }

    #[test]
    fn errors_name_file_and_field() {
        let check = |text: String, path: &str, contains: &str| {
            let e = parse_report("r.json", &text).unwrap_err();
            assert_eq!(e.file, "r.json");
            assert_eq!(e.path, path, "{e}");
            assert!(e.message.contains(contains), "{e}");
        };
        check("[1]".into(), "", "JSON object");
        check("{".into(), "", "not valid JSON");
        check(r#"{"runs": []}"#.into(), "schemaVersion", "missing");
        check(r#"{"schemaVersion": "other/v2", "runs": []}"#.into(), "schemaVersion", "unsupported");
        check(report_text(vec![]), "runs", "no runs");
        let mut bad = run_json("T", "w", 0, 10.0);
        bad["throughput"]["p90"] = "fast".into();
        check(report_text(vec![run_json("T", "w", 0, 1.0), bad]), "runs[1].throughput.p90", "invalid type");
        let mut missing = run_json("T", "w", 0, 10.0);
        missing.as_object_mut().unwrap().remove("placementDigest");
        check(report_text(vec![missing]), "runs[0]", "placementDigest");
        check(report_text(vec![run_json("T", "w", 0, 0.0)]), "runs[0].throughput.average", "scheduled nothing");
        let mut negative = run_json("T", "w", 0, 10.0);
        negative["e2eLatencyMicros"]["max"] = (-1.0).into();
        check(report_text(vec![negative]), "runs[0].e2eLatencyMicros.max", "non-negative");
    }
}
