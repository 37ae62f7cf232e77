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

#[test]
fn read_round_trips_and_names_bad_fields() {
    let dir = tempfile::tempdir().unwrap();
    write_outputs(&sample_report(), dir.path()).unwrap();
    assert_eq!(read(&dir.path().join("report.json")).unwrap(), sample_report());

    let valid = serde_json::to_value(sample_report()).unwrap();
    let check = |edit: &dyn Fn(&mut serde_json::Value), path: &str, message: &str| {
        let mut v = valid.clone();
        edit(&mut v);
        let e = parse(&v.to_string(), "r.json").unwrap_err();
        assert_eq!((e.file.as_str(), e.path.as_str()), ("r.json", path), "{e}");
        assert!(e.message.contains(message), "{e}");
    };
    check(&|v| v["runs"][1]["seed"] = "x".into(), "runs[1].seed", "invalid type");
    check(&|v| v["schemaVersion"] = "schedperf.report/v9".into(), "schemaVersion", "another schedperf version");
    check(&|v| drop(v.as_object_mut().unwrap().remove("schemaVersion")), "schemaVersion", "expected the string");
    check(
        &|v| drop(v["runs"][0]["counters"].as_object_mut().unwrap().remove("attempts")),
        "runs[0].counters",
        "attempts",
    );
    let e = parse("{", "r.json").unwrap_err();
    assert!(e.message.starts_with("expected JSON"), "{e}");
    let e = read(&dir.path().join("missing.json")).unwrap_err();
    assert!(e.message.starts_with("cannot read"), "{e}");
}

/// The Rust example of `docs/report-schema.md` (Histograms) on a written sample report (the path
/// is joined to the temporary folder instead of changing the process's working directory).
#[test]
fn docs_histogram_example_recomputes_percentiles() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    write_outputs(&sample_report(), dir.path())?;
    use base64::Engine as _;
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json"))?)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(report["runs"][0]["histograms"]["attemptLatencyMicros"].as_str().unwrap())?;
    let h: hdrhistogram::Histogram<u64> =
        hdrhistogram::serialization::Deserializer::new().deserialize(&mut bytes.as_slice())?;
    println!("{} {}", h.len(), h.value_at_quantile(0.999));
    assert_eq!(h.len(), sample_report().runs[0].attempt_latency_micros.count);
    assert_eq!(h.value_at_quantile(0.99) as f64, sample_report().runs[0].attempt_latency_micros.p99);
    Ok(())
}

fn schema() -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The schema's errors for `instance`, as `path: message` lines.
fn schema_errors(instance: &serde_json::Value) -> Vec<String> {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

#[test]
fn schema_is_a_valid_draft_2020_12_schema() {
    let schema = schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    jsonschema::meta::validate(&schema).unwrap();
    assert_eq!(schema["properties"]["schemaVersion"]["const"], SCHEMA_VERSION);
}

#[test]
fn sample_report_matches_the_schema() {
    let mut report = sample_report();
    let errors = schema_errors(&serde_json::to_value(&report).unwrap());
    assert!(errors.is_empty(), "{errors:#?}");
    // The optional fields validate too when present.
    let run = &mut report.runs[0];
    run.pair = Some(3);
    run.arm = Some("cand".to_string());
    run.placements = Some([("default/pod-0".to_string(), "node-1".to_string())].into());
    run.threshold = None;
    run.threshold_passed = None;
    run.outcome = crate::report::Outcome {
        passed: false,
        message: "op 1 (barrier: every pod scheduled): 2 of 5 pods not done".to_string(),
        failed_op: Some(1),
        pods_waited_for: 5,
        pods_not_done: 2,
        reasons: [("0/2 nodes are available: 2 Insufficient cpu.".to_string(), 2)].into(),
    };
    let errors = schema_errors(&serde_json::to_value(&report).unwrap());
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn schema_rejects_reports_that_drift_from_the_model() {
    let valid = serde_json::to_value(sample_report()).unwrap();
    let check = |what: &str, edit: &dyn Fn(&mut serde_json::Value), expected_path: &str| {
        let mut instance = valid.clone();
        edit(&mut instance);
        let errors = schema_errors(&instance);
        assert!(
            errors.iter().any(|e| e.starts_with(expected_path)),
            "{what}: expected an error at {expected_path}, got {errors:#?}"
        );
    };
    check("missing field", &|v| drop(v["runs"][0].as_object_mut().unwrap().remove("cacheConsistent")), "/runs/0");
    check("unknown field", &|v| v["runs"][1]["placementQuality"]["extra"] = 1.into(), "/runs/1/placementQuality");
    check("wrong type", &|v| v["runs"][0]["measuredPods"] = "5000".into(), "/runs/0/measuredPods");
    check("negative count", &|v| v["runs"][0]["counters"]["attempts"] = (-1).into(), "/runs/0/counters/attempts");
    check(
        "NaN written as null",
        &|v| v["runs"][0]["throughput"]["average"] = serde_json::Value::Null,
        "/runs/0/throughput/average",
    );
    check("schema version", &|v| v["schemaVersion"] = "schedperf.report/v2".into(), "/schemaVersion");
    check(
        "histogram not base64",
        &|v| v["runs"][0]["histograms"]["attemptLatencyMicros"] = "not base64!".into(),
        "/runs/0/histograms/attemptLatencyMicros",
    );
    check(
        "percentiles",
        &|v| drop(v["runs"][1]["cri"]["podStartupMillis"].as_object_mut().unwrap().remove("p99")),
        "/runs/1/cri/podStartupMillis",
    );
}

/// Every property a serialized report holds appears in the schema, and the other way round: the
/// schema's `required` lists are exactly the fields serde always writes.
#[test]
fn schema_required_lists_match_the_serialized_model() {
    let schema = schema();
    let mut report = sample_report();
    let run = &mut report.runs[1];
    run.pair = Some(0);
    run.arm = Some("base".to_string());
    run.placements = Some(Default::default());
    run.virtual_cycle_cost = Some(crate::clock::CycleCostModel::DEFAULT);
    run.opportunistic_batching = Some(crate::report::BatchingReport {
        hint_used: 3,
        hint_not_used: 0,
        no_hint: 1,
        flushed: [("pod_incompatible".to_string(), 1)].into(),
    });
    run.instructions = Some(crate::report::InstructionsReport {
        source: "callgrind".into(),
        tool: "valgrind-3.19.0".into(),
        total: 1000,
        attempts: 4,
        scheduled_pods: 4,
        per_scheduled_pod: 250.0,
        per_attempt: 250.0,
        by_plugin: [("NodeResourcesFit".to_string(), 700)].into(),
        by_extension_point: [("Score".to_string(), 400)].into(),
        by_plugin_extension_point: [("NodeResourcesFit/Score".to_string(), 400)].into(),
    });
    let value = serde_json::to_value(&report).unwrap();
    assert!(schema_errors(&value).is_empty(), "{:#?}", schema_errors(&value));
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let props = |def: &serde_json::Value| -> Vec<String> { keys(&def["properties"]) };
    let defs = &schema["$defs"];
    let check = |name: &str, def: &serde_json::Value, instance: &serde_json::Value| {
        assert_eq!(props(def), keys(instance), "properties of {name}");
    };
    check("Report", &schema, &value);
    check("RunReport", &defs["RunReport"], &value["runs"][1]);
    check("CriReport", &defs["CriReport"], &value["runs"][1]["cri"]);
    check("CycleCostModel", &defs["CycleCostModel"], &value["runs"][1]["virtualCycleCost"]);
    check("InstructionsReport", &defs["InstructionsReport"], &value["runs"][1]["instructions"]);
    check("Throughput", &defs["Throughput"], &value["runs"][0]["throughput"]);
    check("PlacementQuality", &defs["PlacementQuality"], &value["runs"][0]["placementQuality"]);
    check("PluginTiming", &defs["PluginTiming"], &value["runs"][0]["pluginTimings"][0]);
    check("Counters", &defs["Counters"], &value["runs"][0]["counters"]);
    check("Accounting", &defs["Accounting"], &value["runs"][0]["accounting"]);
    check("Percentiles", &defs["Percentiles"], &value["runs"][0]["e2eLatencyMicros"]);
    let mut optional: Vec<String> = props(&defs["RunReport"])
        .into_iter()
        .filter(|p| !defs["RunReport"]["required"].as_array().unwrap().iter().any(|r| r == p.as_str()))
        .collect();
    optional.sort();
    assert_eq!(
        optional,
        ["arm", "cri", "instructions", "opportunisticBatching", "pair", "placements", "virtualCycleCost"]
    );
}

/// Writes the sample report and loads its HTML in headless Chromium through
/// `scripts/check-html.sh`, which fails on any script error or undrawn chart. Set
/// `SCHEDPERF_SAMPLE_REPORT_DIR` to keep the files (and a `screenshot.png`) in that folder.
#[test]
#[ignore = "needs chromium: run scripts/check-html.sh"]
fn html_loads_in_a_headless_browser_and_draws_every_chart() {
    let temp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("SCHEDPERF_SAMPLE_REPORT_DIR").map_or(temp.path().to_path_buf(), Into::into);
    write_outputs(&sample_report(), &dir).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-html.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("--screenshot")
        .arg(dir.join("screenshot.png"))
        .arg(dir.join("report.html"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("4 of 4 charts drawn"), "{stdout}");

    // The check itself fails on broken pages: a script error, and a chart with nothing drawn.
    let page = html(&sample_report());
    let check_fails = |name: &str, broken: String, expected: &str| {
        let file = dir.join(name);
        std::fs::write(&file, broken).unwrap();
        let out = std::process::Command::new("bash").arg(&script).arg(&file).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} passed the check");
        assert!(stderr.contains(expected), "{name}: {stderr}");
    };
    check_fails(
        "throws.html",
        page.replace("<script>", "<script>window.undefinedFunction();</script><script>"),
        "script error",
    );
    check_fails(
        "undrawn.html",
        page.replace("class=\"mark bar\" x=", "class=\"bar\" x="),
        "chart plugins has no drawn marks",
    );
}

/// Writes a sample report with many runs (and arms) to `SCHEDPERF_SAMPLE_REPORT_DIR` for a look.
#[test]
#[ignore = "writes files for manual inspection"]
fn write_many_run_sample() {
    let Some(dir) = std::env::var_os("SCHEDPERF_SAMPLE_REPORT_DIR") else { return };
    let mut report = sample_report();
    let base = report.runs.clone();
    report.runs = (0..9)
        .map(|i| {
            let mut r = base[i % 2].clone();
            r.rep = (i / 2) as u32;
            r.pair = Some((i / 2) as u32);
            r.arm = Some(if i % 2 == 0 { "base" } else { "cand" }.to_string());
            r
        })
        .collect();
    write_outputs(&report, std::path::Path::new(&dir)).unwrap();
    print!("{}", summary_table(&report));
}
