//! Users' own files through the `schedperf` binary: a `kubectl get -o yaml` dump as `--cluster`
//! (read once from a pipe, fed to every workload and repetition), KWOK Stage files as
//! `--agent-config`, workloads that fail as upstream's harness fails them, and bad input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedperf")).args(args).current_dir(root()).output().expect("schedperf starts")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

fn report(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

#[test]
fn a_kubectl_dump_on_a_pipe_feeds_every_workload_and_repetition() {
    let dump = std::fs::read(root().join("tests/data/kubectl-dump.yaml")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["run", "tests/data/cluster-workloads.yaml", "--label-filter", "short", "--cluster", "/dev/stdin"])
        .args(["--reps", "2", "--format", "json"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&dump).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let r = report(&o);
    let runs = r["runs"].as_array().unwrap();
    // Two workloads x two repetitions, each on the dump's node: the 900m pod fits beside the
    // Running 1-CPU pod only because the Succeeded and Failed pods hold nothing.
    assert_eq!(runs.len(), 4, "{err}");
    for run in runs {
        assert_eq!((run["measuredPods"].as_u64(), run["scheduledPods"].as_u64()), (Some(1), Some(1)), "{run}");
        let placements = run["placements"].as_object().unwrap();
        assert!(placements.values().all(|n| n == "node-a"), "{placements:?}");
    }
    assert!(err.contains("1 nodes, 1 bound pods, 2 pending pods, 2 Succeeded/Failed pods"), "{err}");
    assert!(err.contains("ignored: ConfigMap (1), Deployment (1), Event (1)"), "{err}");
    assert!(err.contains("\"volcano\"") && err.contains("left to that scheduler"), "{err}");
    assert!(err.contains("OnImportedCluster/first: pending --cluster pods whose schedulerName has no profile in this run, left to that scheduler: 1 for \"volcano\""), "{err}");
}

#[test]
fn cluster_errors_name_the_file_the_object_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "more.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: lost, namespace: x}\nspec:\n  nodeName: node-zz\n  containers: [{name: c, image: i}]\n",
    );
    let o = run(&[
        "run",
        "tests/data/cluster-workloads.yaml",
        "--label-filter",
        "short",
        "--cluster",
        "tests/data/kubectl-dump.yaml",
        "--cluster",
        &bad,
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&bad) && err.contains("(x/lost).spec.nodeName"), "{err}");
}

#[test]
fn a_workload_whose_pods_never_schedule_fails_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "huge.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: huge-}\nspec:\n  containers:\n  - {name: c, image: i, resources: {requests: {cpu: '64'}}}\n");
    let file = write(
        dir.path(),
        "w.yaml",
        "- name: TooBig\n  workloadTemplate:\n  - {opcode: createNodes, count: 2}\n  - {opcode: createPods, count: 3, podTemplatePath: huge.yaml, collectMetrics: true}\n  workloads:\n  - {name: w, labels: [short]}\n- name: Fine\n  workloadTemplate:\n  - {opcode: createNodes, count: 1}\n  - {opcode: createPods, count: 2, collectMetrics: true}\n  workloads:\n  - {name: w, labels: [short]}\n",
    );
    let out = dir.path().join("out");
    let o = run(&["run", &file, "--label-filter", "short", "--virtual-time", "--out", out.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("FAILED TooBig/w: op 1 (createPods in namespace namespace-1 waits for its pods to be scheduled): 3 of 3 pods not done"), "{err}");
    assert!(err.contains("2 Insufficient cpu"), "{err}");
    assert!(err.contains("1 workloads ran to the end, 1 failed, 0 skipped"), "{err}");
    assert!(text(&o.stdout).contains("Fine/w"));
    // report.json says it too: the failed workload is there, with its outcome.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    let outcome = |case: &str| &runs.iter().find(|r| r["testCase"] == case).unwrap()["outcome"];
    let failed = outcome("TooBig");
    assert_eq!(failed["passed"], false);
    assert_eq!(
        (failed["failedOp"].as_u64(), failed["podsWaitedFor"].as_u64(), failed["podsNotDone"].as_u64()),
        (Some(1), Some(3), Some(3))
    );
    assert!(failed["message"].as_str().unwrap().contains("3 of 3 pods not done"), "{failed}");
    let reasons = failed["reasons"].as_object().unwrap();
    assert!(reasons.keys().any(|k| k.contains("2 Insufficient cpu")), "{failed}");
    assert_eq!(outcome("Fine")["passed"], true);
    assert_eq!(outcome("Fine")["failedOp"], serde_json::Value::Null);
    let summary = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(summary.contains("FAILED: op 1"), "the Markdown report says so too");
}

#[test]
fn kwok_stage_files_drive_the_agent_in_virtual_time() {
    let dir = tempfile::tempdir().unwrap();
    let stages = write(
        dir.path(),
        "stages.yaml",
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: slow-ready}\nspec:\n  resourceRef: {apiGroup: v1, kind: Pod}\n  selector:\n    matchExpressions:\n    - {key: .status.podIP, operator: DoesNotExist}\n  delay: {durationMilliseconds: 2000, jitterDurationMilliseconds: 4000}\n  next:\n    statusTemplate: |\n      podIP: 10.0.0.9\n      phase: Running\n",
    );
    let file = write(
        dir.path(),
        "w.yaml",
        "- name: Kwok\n  workloadTemplate:\n  - {opcode: createNodes, count: 3}\n  - {opcode: createPods, count: 20, collectMetrics: true}\n  workloads:\n  - {name: w, labels: [short]}\n",
    );
    let o = run(&[
        "run",
        &file,
        "--label-filter",
        "short",
        "--virtual-time",
        "--agent-config",
        &stages,
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = report(&o);
    let startup = &r["runs"][0]["podStartupMillis"];
    assert_eq!(startup["count"].as_u64(), Some(20), "{startup}");
    let (p50, max) = (startup["p50"].as_f64().unwrap(), startup["max"].as_f64().unwrap());
    assert!((2000.0..4000.0).contains(&p50) && max < 4100.0, "startup in [2 s, 4 s) of virtual time: {startup}");
    let o = run(&[
        "run",
        &file,
        "--label-filter",
        "short",
        "--virtual-time",
        "--agent-config",
        "workloads/agents/kwok-default.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn bad_user_files_exit_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{{ Modulo .Index 2 }}\n");
    let bad_fn = write(
        dir.path(),
        "fn.yaml",
        "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, count: 1}\n  - {opcode: createPods, count: 1, podTemplatePath: pod.yaml, collectMetrics: true}\n  workloads:\n  - {name: w, labels: [short]}\n",
    );
    let gate = write(
        dir.path(),
        "gate.yaml",
        "- name: T\n  featureGates: {SchedulerQueueingHints: true}\n  workloadTemplate:\n  - {opcode: createNodes, count: 1}\n  - {opcode: createPods, count: 1, collectMetrics: true}\n  workloads:\n  - {name: w, labels: [short]}\n",
    );
    let stage = write(
        dir.path(),
        "stage.yaml",
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: s}\nspec:\n  resourceRef: {kind: Pod}\n  selector: {matchExpressions: [{key: .status.phase, operator: Equals, values: [Running]}]}\n  next: {}\n",
    );
    let ok = write(
        dir.path(),
        "ok.yaml",
        "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, count: 1}\n  - {opcode: createPods, count: 1, collectMetrics: true}\n  workloads:\n  - {name: w, labels: [short]}\n",
    );
    let pod_file = dir.path().join("pod.yaml").canonicalize().unwrap().display().to_string();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["run", &bad_fn, "--label-filter", "short"],
            &format!("{pod_file}: line 4"),
            "function \"Modulo\" not defined",
        ),
        (&["list", &bad_fn], &format!("{pod_file}: line 4"), "function \"Modulo\" not defined"),
        (
            &["run", &gate, "--label-filter", "short"],
            "testCases[0].featureGates.SchedulerQueueingHints",
            "not a feature gate",
        ),
        (
            &["run", &ok, "--label-filter", "short", "--agent-config", &stage],
            "documents[0].spec.selector.matchExpressions[0].operator",
            "expected In, NotIn, Exists or DoesNotExist",
        ),
    ];
    for (args, field, message) in cases {
        let o = run(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(field) && err.contains(message), "{args:?}: {err}");
    }
    assert!(text(&run(cases[3].0).stderr).contains(&stage));
}
