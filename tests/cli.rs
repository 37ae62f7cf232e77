//! End-to-end tests of the `schedperf` binary: exit codes, error messages, explain, and the short
//! variants of the workloads in `workloads/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedperf"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).current_dir(root()).output().expect("schedperf starts")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const NODES: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
  status: {allocatable: {cpu: '1', memory: 1Gi, pods: '110'}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b}}
  spec:
    taints: [{key: dedicated, value: gpu, effect: PreferNoSchedule}]
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
";

const POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  containers:
  - name: web
    image: nginx
    resources: {requests: {cpu: '2', memory: 1Gi}}
";

#[test]
fn explain_json_has_the_documented_shape() {
    let d = tempfile::tempdir().unwrap();
    let cluster = write(d.path(), "cluster.yaml", NODES);
    let pod = write(d.path(), "pod.yaml", POD);
    let o = run(&["explain", "--cluster", &cluster, "--pod", &pod, "--output", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pod"], "default/web-1");
    assert_eq!(v["profile"], "default-scheduler");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0]["name"], "node-a");
    assert_eq!(nodes[0]["feasible"], false);
    assert_eq!(nodes[0]["filter"]["plugin"], "NodeResourcesFit");
    assert_eq!(nodes[0]["filter"]["code"], "Unschedulable");
    assert_eq!(nodes[0]["filter"]["reasons"], serde_json::json!(["Insufficient cpu", "Insufficient memory"]));
    assert!(nodes[0]["scores"].is_null() && nodes[0]["totalScore"].is_null());
    assert_eq!(nodes[1]["feasible"], true);
    assert!(nodes[1]["filter"].is_null());
    // One intolerable PreferNoSchedule taint on the only feasible node: normalized (reverse) to 0.
    assert_eq!(nodes[1]["scores"]["TaintToleration"], serde_json::json!({"score": 0, "weight": 3}));
    let total: i64 = nodes[1]["scores"].as_object().unwrap().values().map(|s| s["score"].as_i64().unwrap() * s["weight"].as_i64().unwrap()).sum();
    assert_eq!(nodes[1]["totalScore"].as_i64().unwrap(), total);
    assert_eq!(v["selected"], "node-b");
}

#[test]
fn explain_exits_zero_when_nothing_fits_and_table_is_readable() {
    let d = tempfile::tempdir().unwrap();
    let cluster = write(d.path(), "cluster.yaml", NODES);
    let pod = write(d.path(), "pod.yaml", &POD.replace("cpu: '2'", "cpu: '64'"));
    let o = run(&["explain", "--cluster", &cluster, "--pod", &pod]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("0/2 nodes are available: 2 Insufficient cpu"), "{out}");
    assert!(out.contains("node-a") && out.contains("node-b"), "{out}");
}

#[test]
fn bad_inputs_exit_2_with_file_and_field() {
    let d = tempfile::tempdir().unwrap();
    let pod = write(d.path(), "pod.yaml", POD);
    let bad_quantity = write(d.path(), "bad.yaml", &NODES.replace("cpu: '4'", "cpu: 4x"));
    let bad_config = write(d.path(), "config.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n");
    let cluster = write(d.path(), "cluster.yaml", NODES);
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec!["explain".into(), "--cluster".into(), bad_quantity.clone(), "--pod".into(), pod.clone()],
            vec!["bad.yaml", "items[1].status.allocatable.cpu", "\"4x\" is not a quantity"],
        ),
        (
            vec!["explain".into(), "--cluster".into(), cluster.clone(), "--pod".into(), pod.clone(), "--config".into(), bad_config.clone()],
            vec!["config.yaml", "NoSuchPlugin"],
        ),
        (
            vec!["explain".into(), "--cluster".into(), "/nonexistent/c.yaml".into(), "--pod".into(), pod.clone()],
            vec!["/nonexistent/c.yaml"],
        ),
        (vec!["run".into(), "workloads/misc".into(), "--test-case".into(), "NoSuchCase".into()], vec!["no workload matches"]),
        (vec!["run".into(), "workloads/misc".into(), "--label-filter".into(), "+".into()], vec!["label"]),
        (vec!["bogus-command".into()], vec!["bogus-command"]),
    ];
    for (args, wants) in cases {
        let o = bin().args(&args).current_dir(root()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        for w in wants {
            assert!(err.contains(w), "{args:?}: stderr lacks {w:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: no partial output on stdout");
    }
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--format", "json"]);
    let o = run(&full);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn every_short_workload_runs_and_accounts_for_every_pod() {
    let report = run_json(&["workloads", "--label-filter", "short"]);
    let runs = report["runs"].as_array().unwrap();
    assert!(runs.len() >= 18, "one run per short workload, got {}", runs.len());
    for r in runs {
        let name = format!("{}/{}", r["testCase"].as_str().unwrap(), r["workload"].as_str().unwrap());
        assert_eq!(r["accounting"]["lost"], 0, "{name}: {}", r["accounting"]);
        assert_eq!(r["cacheConsistent"], true, "{name}: {}", r["cacheDifferences"]);
        let a = &r["accounting"];
        let sum = ["bound", "unschedulable", "deleted", "pending"].iter().map(|k| a[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(sum, a["created"].as_u64().unwrap(), "{name}: every created pod is accounted for");
        assert!(r["measuredPods"].as_u64().unwrap() > 0, "{name}: measures pods");
    }
}

#[test]
fn same_seed_same_placements_at_any_thread_count() {
    let args = ["workloads/misc", "--test-case", "SchedulingBasic", "--workload", "100Nodes", "--seed", "7"];
    let one = run_json(&[&args[..], &["--threads", "1"]].concat());
    let two = run_json(&[&args[..], &["--threads", "2"]].concat());
    let d1 = one["runs"][0]["placementDigest"].as_str().unwrap().to_string();
    assert_eq!(d1, two["runs"][0]["placementDigest"].as_str().unwrap());
    let other_seed = run_json(&["workloads/misc", "--test-case", "SchedulingBasic", "--workload", "100Nodes", "--seed", "8"]);
    assert_ne!(d1, other_seed["runs"][0]["placementDigest"].as_str().unwrap(), "the seed breaks ties differently");
}

#[test]
fn run_writes_json_markdown_and_html() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let o = run(&["run", "workloads/misc", "--test-case", "SchedulingBasic", "--workload", "5Nodes", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("SchedulingBasic/5Nodes"), "{table}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["schemaVersion"], "schedperf.report/v1");
    assert!(report["commandLine"].as_array().unwrap().len() > 2);
    assert!(std::fs::read_to_string(out.join("report.md")).unwrap().contains("SchedulingBasic"));
    assert!(std::fs::read_to_string(out.join("report.html")).unwrap().contains("<svg"));
}

#[test]
fn virtual_time_runs_seconds_of_kubelet_latency_quickly() {
    let t0 = std::time::Instant::now();
    let r = run_json(&[
        "workloads/misc", "--test-case", "SchedulingBasic", "--workload", "100Nodes", "--virtual-time",
        "--agent-config", "workloads/agents/realistic.yaml",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["virtualTime"], true);
    assert_eq!(run["accounting"]["lost"], 0);
    // Realistic start-up takes seconds per pod in virtual time...
    assert!(run["podStartupMillis"]["p50"].as_f64().unwrap() >= 500.0, "{}", run["podStartupMillis"]);
    // ...and costs far less wall time than that (a loose bound: this is not a speed test).
    assert!(t0.elapsed().as_secs() < 60);
}
