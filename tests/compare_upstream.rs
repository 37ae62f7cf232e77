//! `schedperf compare --upstream`: the plumbing against a stand-in upstream
//! (`tests/data/fake-upstream.py`, schedperf's own run at half the throughput), and one ignored test
//! on the real kube-scheduler (the oracle) that `scripts/test.sh` runs with SCHEDPERF_ORACLE set.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn schedperf(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedperf"));
    c.args(args).current_dir(root()).env("SCHEDPERF", env!("CARGO_BIN_EXE_schedperf"));
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("schedperf starts")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn fake() -> String {
    root().join("tests/data/fake-upstream.py").display().to_string()
}

#[test]
fn compare_upstream_prints_both_engines_and_their_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let fake = fake();
    let o = schedperf(
        &[
            "compare",
            "--upstream",
            &fake,
            "workloads/misc",
            "--test-case",
            "SchedulingBasic",
            "--workload",
            "5Nodes",
            "--reps",
            "6",
            "--out",
            &out,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("SchedulingBasic/5Nodes"), "{stdout}");
    assert!(stdout.contains("fake upstream") && stdout.contains("schedperf "), "{stdout}");
    // The stand-in halves every throughput of the same run shape, so the ratio is about 2.
    let ratio: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ratio schedperf/upstream: "))
        .and_then(|l| l.split('x').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no ratio line: {stdout}"));
    assert!(ratio > 1.0, "{stdout}");
    assert!(stdout.contains("placements agree: the same placementDigest in all 6 reps"), "{stdout}");
    // Each engine's runs, readable by `compare A B` and `gate` as they are.
    let a = dir.path().join("schedperf/report.json");
    let b = dir.path().join("upstream/report.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    assert_eq!(doc["engine"], "fake upstream");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 6);
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let o = schedperf(&["compare", &a, &b], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Six runs a side is the gate's minimum. Its verdict on tiny runs is noise; reading is the point.
    let o = schedperf(&["gate", &a, &b], &[]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "gate must read both reports: {}", text(&o));
    assert!(text(&o).contains("placements SchedulingBasic/5Nodes seed 1: unchanged"), "{}", text(&o));
}

#[test]
fn compare_upstream_bad_input_exits_2_naming_what_and_a_crashed_engine_4() {
    let fake = fake();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "compare",
                "--upstream",
                "/no/such/oracle",
                "workloads/misc",
                "--test-case",
                "SchedulingBasic",
                "--workload",
                "5Nodes",
                "--reps",
                "1",
            ],
            "/no/such/oracle",
        ),
        (
            &["compare", "--upstream", &fake, "workloads/misc", "--test-case", "NoSuchCase", "--reps", "1"],
            "no runnable workload",
        ),
        (
            &["compare", "--upstream", &fake, "workloads/misc", "--test-case", "SchedulingBasic", "--reps", "0"],
            "--reps",
        ),
        (&["compare", "--upstream", &fake, "a.json", "b.json"], "--upstream"),
    ];
    for (args, want) in cases {
        let o = schedperf(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
    }
    let o = schedperf(
        &[
            "compare",
            "--upstream",
            &fake,
            "workloads/misc",
            "--test-case",
            "SchedulingBasic",
            "--workload",
            "5Nodes",
            "--reps",
            "1",
        ],
        &[("FAKE_MODE", "crash")],
    );
    // A crashed engine is a runtime failure (exit 4), not bad input.
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).contains("fake upstream: crashed"), "{}", text(&o));
}

fn schema_errors(instance: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/report.schema.json")).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    v.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

/// The real kube-scheduler: SCHEDPERF_ORACLE is the oracle binary (`scripts/test.sh` sets it from
/// `scripts/oracle.sh`). Its report passes the schema, no pod is lost on either side, and `compare`
/// prints both engines.
#[test]
#[ignore = "needs the oracle: SCHEDPERF_ORACLE=$(scripts/oracle.sh | tail -1) cargo test --test compare_upstream -- --ignored"]
fn compare_upstream_against_the_real_kube_scheduler() {
    let oracle = std::env::var("SCHEDPERF_ORACLE")
        .expect("set SCHEDPERF_ORACLE to the oracle binary: SCHEDPERF_ORACLE=$(scripts/oracle.sh | tail -1)");
    assert!(Path::new(&oracle).is_file(), "SCHEDPERF_ORACLE={oracle} is not a file");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = schedperf(
        &[
            "compare",
            "--upstream",
            &oracle,
            "workloads/misc",
            "--test-case",
            "SchedulingBasic",
            "--workload",
            "100Nodes",
            "--reps",
            "1",
            "--out",
            &out,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("kube-scheduler v1.37.2 (in-process)") && stdout.contains("ratio schedperf/upstream"),
        "{stdout}"
    );
    for side in ["schedperf", "upstream"] {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(side).join("report.json")).unwrap()).unwrap();
        let errors = schema_errors(&doc);
        assert!(errors.is_empty(), "{side}: {errors:#?}");
        let run = &doc["runs"][0];
        assert_eq!(run["accounting"]["lost"], 0, "{side}");
        assert_eq!(run["scheduledPods"], 400, "{side}");
    }
    // The oracle's own report, as `schedperf-oracle run --out` writes it, passes the schema too.
    let o = Command::new(&oracle)
        .args(["run", "workloads/misc", "--test-case", "SchedulingBasic", "--workload", "5Nodes", "--out", &out])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert!(schema_errors(&doc).is_empty(), "{:#?}", schema_errors(&doc));
    assert_eq!(doc["engine"], "kube-scheduler v1.37.2 (in-process)");
    // Bad input names the file and the field, exit 2.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, countParam: $nodes}\n  workloads:\n  - {name: w}\n",
    )
    .unwrap();
    let o = Command::new(&oracle).args(["run"]).arg(&bad).args(["--label-filter", ""]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.yaml") && text(&o).contains("countParam"), "{}", text(&o));
}
