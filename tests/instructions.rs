//! `run --measure instructions` end to end: the error without valgrind (exit 2, naming the package)
//! and a tiny workload actually counted under valgrind's callgrind, then gated A/A.
//!
//! The valgrind test skips when valgrind is missing, unless `SCHEDPERF_REQUIRE_VALGRIND=1` (CI sets
//! it), in which case it fails.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedperf"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn templates() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("workloads/templates")
}

/// 20 nodes, 5 pods before the window, 30 measured pods; a throughput threshold no run can pass
/// (wall-clock thresholds are not judged under callgrind).
fn tiny_workload(dir: &std::path::Path) -> String {
    let t = templates();
    let text = format!(
        "- name: Tiny
  defaultPodTemplatePath: {pod}
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
    nodeTemplatePath: {node}
  - opcode: createPods
    countParam: $initPods
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: 20Nodes_30Pods
    labels: [ci]
    threshold: 1000000000000
    params:
      initNodes: 20
      initPods: 5
      measurePods: 30
",
        pod = t.join("pod-default.yaml").display(),
        node = t.join("node-default.yaml").display()
    );
    let p = dir.join("tiny.yaml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn measure_instructions_without_valgrind_exits_2_naming_the_package() {
    let d = tempfile::tempdir().unwrap();
    let w = tiny_workload(d.path());
    let o = bin()
        .args(["run", &w, "--label-filter", "ci", "--measure", "instructions"])
        .env("SCHEDPERF_VALGRIND", "/nonexistent/valgrind")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--measure") && e.contains("package `valgrind`") && e.contains("apt-get install"), "{e}");
}

fn valgrind_present() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn a_tiny_workload_is_counted_under_valgrind_and_gates_a_a() {
    if !valgrind_present() {
        assert_ne!(
            std::env::var("SCHEDPERF_REQUIRE_VALGRIND").as_deref(),
            Ok("1"),
            "SCHEDPERF_REQUIRE_VALGRIND=1 but valgrind is not installed (apt-get install -y valgrind)"
        );
        eprintln!("skipped: valgrind is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let w = tiny_workload(d.path());
    let mut files = Vec::new();
    for name in ["a.json", "b.json"] {
        let o = bin()
            .args(["run", &w, "--label-filter", "ci", "--measure", "instructions", "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let p = d.path().join(name);
        std::fs::write(&p, &o.stdout).unwrap();
        files.push(p);
    }
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let run = &report["runs"][0];
    let i = &run["instructions"];
    assert_eq!(i["source"], "callgrind");
    assert_eq!(run["threshold"], 1e12);
    assert!(run["thresholdPassed"].is_null(), "a wall-clock threshold is not judged on ~50x slow times: {run}");
    assert_eq!(i["attempts"], 30, "one measured attempt per measured pod, none of the 5 before the window");
    assert_eq!(i["scheduledPods"], 30);
    let total = i["total"].as_u64().unwrap();
    assert!(total > 0);
    assert!((i["perScheduledPod"].as_f64().unwrap() - total as f64 / 30.0).abs() < 1e-6);
    for point in ["PreFilter", "Filter", "Score"] {
        assert!(i["byExtensionPoint"][point].as_u64().unwrap_or(0) > 0, "{point}: {i}");
    }
    assert!(i["byPlugin"]["NodeResourcesFit"].as_u64().unwrap_or(0) > 0, "{i}");
    let plugins: u64 = i["byPlugin"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert!(plugins < total, "inclusive plugin costs are part of the measured phase");
    let o = bin()
        .args(["gate", files[0].to_str().unwrap(), files[1].to_str().unwrap(), "--policy", "gate.toml"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("instructions-per-pod") && out.contains("PLUGIN/EXTENSION POINT"), "{out}");
}
