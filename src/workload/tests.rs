//! Tests of loading, validation, resolution and listing of workload files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::spec::{ChurnMode, ParamValue, StageRequirement};
use super::*;

/// The repository's `workloads/` directory.
fn workloads_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads")
}

/// A temporary directory with `templates/pod.yaml`, `templates/node.yaml` and the workload file
/// `cases/w.yaml` holding `yaml`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(yaml: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("templates")).unwrap();
        std::fs::create_dir_all(dir.path().join("cases")).unwrap();
        std::fs::write(dir.path().join("templates/pod.yaml"), "apiVersion: v1\nkind: Pod\n").unwrap();
        std::fs::write(dir.path().join("templates/node.yaml"), "apiVersion: v1\nkind: Node\n").unwrap();
        std::fs::write(dir.path().join("cases/w.yaml"), yaml).unwrap();
        Fixture { dir }
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("cases/w.yaml")
    }

    fn template(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("templates").join(name)).unwrap()
    }

    fn load(&self) -> Result<Vec<TestCase>, crate::error::InputError> {
        load_workload_file(&self.file())
    }

    /// Loads and resolves every workload; the first error wins.
    fn resolve_all(&self) -> Result<Vec<ResolvedWorkload>, crate::error::InputError> {
        let cases = self.load()?;
        let mut out = Vec::new();
        for tc in &cases {
            for w in &tc.workloads {
                out.push(resolve(tc, w)?);
            }
        }
        Ok(out)
    }
}

const BASIC: &str = "\
- name: Basic
  defaultPodTemplatePath: ../templates/pod.yaml
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
    nodeTemplatePath: ../templates/node.yaml
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: small
    labels: [short]
    params: {initNodes: 5, measurePods: 10}
";

#[test]
fn every_repository_workload_loads_and_resolves() {
    let files = load_path(&workloads_dir()).unwrap();
    let names: Vec<String> =
        files.iter().map(|(p, _)| p.strip_prefix(workloads_dir()).unwrap().display().to_string()).collect();
    assert_eq!(
        names,
        [
            "affinity/performance-config.yaml",
            "batching/performance-config.yaml",
            "ci/performance-config.yaml",
            "dra/performance-config.yaml",
            "e2e/performance-config.yaml",
            "misc/performance-config.yaml",
            "podgroup/performance-config.yaml",
            "scale/performance-config.yaml",
            "topology_spreading/performance-config.yaml",
            "volumes/performance-config.yaml",
        ]
    );
    let mut test_cases = Vec::new();
    for (file, cases) in &files {
        if file.ends_with("ci/performance-config.yaml") {
            // The CI gate's own set (label `ci`), not upstream's cases: it only has to resolve.
            for tc in cases {
                for w in &tc.workloads {
                    let r = resolve(tc, w).unwrap_or_else(|e| panic!("{e}"));
                    assert!(r.labels.iter().any(|l| l == "ci"), "{}", r.name);
                }
            }
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.starts_with("# Thresholds: "),
            "{}: the note on how thresholds were set must come first",
            file.display()
        );
        for tc in cases {
            test_cases.push(tc.name.clone());
            let mut has_short = false;
            for w in &tc.workloads {
                let r = resolve(tc, w).unwrap_or_else(|e| panic!("{e}"));
                // Measured benchmark variants carry a throughput floor; the small ones do not (a
                // `cargo test` machine's speed says nothing).
                let performance = r.labels.iter().any(|l| l == "performance");
                match &r.threshold {
                    Some(t) => assert!(performance && t.get("default") > 0.0, "{}: threshold {t:?}", r.name),
                    None => assert!(!performance, "{}: a performance workload needs a measured threshold", r.name),
                }
                let (nodes, pods) = sizes(&r.ops);
                if r.labels.iter().any(|l| l == "short") {
                    has_short = true;
                    assert!(nodes <= 100 && pods <= 500, "{}: short needs <= 100 nodes, <= 500 pods", r.name);
                    assert!(!r.labels.iter().any(|l| l == "performance" || l == "scale"), "{}", r.name);
                }
                if r.labels.iter().any(|l| l == "scale") {
                    assert!(r.labels.iter().any(|l| l == "performance"), "{}", r.name);
                }
            }
            assert!(has_short, "{}: every test case needs a short variant", tc.name);
        }
    }
    for required in [
        "SchedulingBasic",
        "SchedulingPodAntiAffinity",
        "SchedulingPodAffinity",
        "SchedulingPreferredPodAffinity",
        "SchedulingPreferredPodAntiAffinity",
        "SchedulingNodeAffinity",
        "TopologySpreading",
        "PreferredTopologySpreading",
        "DefaultTopologySpreading",
        "SchedulingWithNodeInclusionPolicy",
        "PreemptionBasic",
        "PreemptionAsync",
        "Unschedulable",
        "SchedulingWithMixedChurn",
        "SchedulingWhileGated",
        "SchedulingWithExtendedResource",
        "MixedSchedulingBasePod",
        "SchedulingDaemonset",
        "Scale",
        "EndToEndPauseBusybox",
    ] {
        assert!(test_cases.iter().any(|n| n == required), "missing test case {required}");
    }
}

/// Total nodes and pods a resolved workload creates (churn excluded).
fn sizes(ops: &[ResolvedOp]) -> (u64, u64) {
    let (mut nodes, mut pods) = (0, 0);
    for op in ops {
        match op {
            ResolvedOp::CreateNodes { count, .. } => nodes += count,
            ResolvedOp::CreatePods { count, .. } => pods += count,
            _ => {}
        }
    }
    (nodes, pods)
}

#[test]
fn repository_sizes_match_upstream() {
    let files = load_path(&workloads_dir()).unwrap();
    let find = |tc_name: &str, w_name: &str| {
        for (_, cases) in &files {
            for tc in cases {
                if let Some(w) = tc.workloads.iter().find(|w| tc.name == tc_name && w.name == w_name) {
                    return resolve(tc, w).unwrap();
                }
            }
        }
        panic!("{tc_name}/{w_name} not found");
    };
    let check = |tc: &str, w: &str, nodes: u64, pods: u64, labels: &[&str]| {
        let r = find(tc, w);
        assert_eq!(sizes(&r.ops), (nodes, pods), "{tc}/{w}");
        assert_eq!(r.labels, labels, "{tc}/{w}");
    };
    check("SchedulingBasic", "5000Nodes_10000Pods", 5000, 11000, &["performance"]);
    check("SchedulingBasic", "5000Nodes_50000Pods", 5000, 55000, &["performance"]);
    check("SchedulingDaemonset", "15000Nodes", 15001, 30000, &["performance"]);
    check("Scale", "100000Nodes_1000000Pods", 100000, 1010000, &["performance", "scale"]);
    check("EndToEndPauseBusybox", "20Nodes_200Pods", 20, 200, &["cri"]);
    // The deletePods op of SchedulingWhileGated names the namespace upstream's numbering gives op 3.
    let gated = find("SchedulingWhileGated", "1Node_10GatedPods");
    let ResolvedOp::CreatePods { namespace, .. } = &gated.ops[3] else { panic!("op 3 must be createPods") };
    let ResolvedOp::DeletePods { namespace: deleted, .. } = &gated.ops[4] else { panic!("op 4 must be deletePods") };
    assert_eq!((namespace.as_str(), deleted.as_str()), ("namespace-3", "namespace-3"));
}

/// Checks that loading-and-resolving `yaml` fails at `path` with a message containing `message`.
fn check_error(yaml: &str, path: &str, message: &str) {
    let fx = Fixture::new(yaml);
    let e = fx.resolve_all().expect_err(&format!("expected an error at {path}"));
    assert_eq!(e.file, fx.file().display().to_string());
    assert_eq!(e.path, path, "message: {}", e.message);
    assert!(e.message.contains(message), "at {path}: {:?} does not contain {message:?}", e.message);
}

#[test]
fn error_table() {
    check_error(
        &BASIC.replace("opcode: createNodes", "opcode: createNode"),
        "testCases[0].workloadTemplate[0].opcode",
        "unknown opcode \"createNode\": expected one of createNodes, createNamespaces, createPods",
    );
    check_error(
        &BASIC.replace("  - opcode: createNodes\n    countParam", "  - countParam"),
        "testCases[0].workloadTemplate[0]",
        "missing opcode",
    );
    check_error(
        &BASIC.replace("countParam: $initNodes", "countParam: $initNodes\n    countParam: $initNodes"),
        "testCases[0].workloadTemplate[0]",
        "duplicate entry with key \"countParam\"",
    );
    check_error(
        &BASIC.replace("../templates/node.yaml", "../templates/nope.yaml"),
        "testCases[0].workloadTemplate[0].nodeTemplatePath",
        "nope.yaml cannot be opened",
    );
    check_error(
        &BASIC.replace("../templates/pod.yaml", "pod.yaml"),
        "testCases[0].defaultPodTemplatePath",
        "cannot be opened",
    );
    check_error(
        &BASIC.replace("countParam: $initNodes", "count: -3"),
        "testCases[0].workloadTemplate[0].count",
        "-3 is negative",
    );
    check_error(
        &BASIC.replace("countParam: $initNodes", "count: many"),
        "testCases[0].workloadTemplate[0].count",
        "invalid type",
    );
    check_error(
        &BASIC.replace("countParam: $initNodes", "countParam: initNodes"),
        "testCases[0].workloadTemplate[0].countParam",
        "expected $name",
    );
    check_error(
        &BASIC.replace("initNodes: 5,", "initNode: 5,"),
        "testCases[0].workloadTemplate[0].countParam",
        "workload \"small\": parameter $initNodes is not defined",
    );
    check_error(
        &BASIC.replace("initNodes: 5,", "initNodes: -5,"),
        "testCases[0].workloadTemplate[0].countParam",
        "parameter $initNodes = -5: expected a whole number >= 0",
    );
    check_error(
        &BASIC.replace("initNodes: 5,", "initNodes: five,"),
        "testCases[0].workloadTemplate[0].countParam",
        "parameter $initNodes = \"five\"",
    );
    check_error(
        &BASIC.replace("measurePods: 10}", "measurePods: 10, extra: 1}"),
        "testCases[0].workloads[0].params",
        "[\"extra\"] are defined but the template never uses them",
    );
    check_error(
        &BASIC.replace(
            "  - opcode: createPods\n",
            "  - opcode: barrier\n    stageRequirement: Bound\n  - opcode: createPods\n",
        ),
        "testCases[0].workloadTemplate[1].stageRequirement",
        "unknown stageRequirement \"Bound\": expected Scheduled or Attempted",
    );
    check_error(
        &BASIC.replace(
            "  - opcode: createPods\n",
            "  - opcode: sleep\n    duration: 5 seconds\n  - opcode: createPods\n",
        ),
        "testCases[0].workloadTemplate[1].duration",
        "\"5 seconds\" is not a duration",
    );
    check_error(
        &BASIC
            .replace(
                "  - opcode: createPods\n",
                "  - opcode: sleep\n    durationParam: $pause\n  - opcode: createPods\n",
            )
            .replace("measurePods: 10}", "measurePods: 10, pause: 5}"),
        "testCases[0].workloadTemplate[1].duration",
        "parameter $pause = 5: expected a duration string",
    );
    check_error(
        &BASIC.replace("  - opcode: createPods\n", "  - opcode: sleep\n  - opcode: createPods\n"),
        "testCases[0].workloadTemplate[1].duration",
        "missing",
    );
    check_error(
        &BASIC.replace("collectMetrics: true", "colectMetrics: true"),
        "testCases[0].workloadTemplate[1].colectMetrics",
        "unknown field `colectMetrics`",
    );
    check_error(
        &BASIC.replace("collectMetrics: true", "collectMetrics: false"),
        "testCases[0].workloadTemplate",
        "no op collects metrics",
    );
    check_error(
        &BASIC.replace("collectMetrics: true", "collectMetrics: true\n    skipWaitToCompletion: true"),
        "testCases[0].workloadTemplate[1].skipWaitToCompletion",
        "cannot both be true",
    );
    check_error(
        &format!("{BASIC}  - name: small\n    params: {{initNodes: 1, measurePods: 1}}\n"),
        "testCases[0].workloads[1].name",
        "\"small\" is not unique",
    );
    check_error(
        &format!("{BASIC}{}", BASIC.replace("name: small", "name: other")),
        "testCases[1].name",
        "\"Basic\" is not unique",
    );
    check_error(&BASIC.replace("  - opcode: createPods\n", "  - opcode: churn\n    mode: sometimes\n    templatePaths: [../templates/pod.yaml]\n  - opcode: createPods\n"),
        "testCases[0].workloadTemplate[1].mode", "unknown mode \"sometimes\": expected create or recreate");
    check_error(&BASIC.replace("  - opcode: createPods\n", "  - opcode: churn\n    mode: recreate\n    templatePaths: [../templates/pod.yaml]\n  - opcode: createPods\n"),
        "testCases[0].workloadTemplate[1].number", "must be > 0 when mode is recreate");
    check_error(&BASIC.replace("  - opcode: createPods\n", "  - opcode: churn\n    mode: create\n    templatePaths: [../templates/pod.yaml, gone.yaml]\n  - opcode: createPods\n"),
        "testCases[0].workloadTemplate[1].templatePaths[1]", "gone.yaml cannot be opened");
    check_error(
        &BASIC.replace(
            "  - opcode: createPods\n",
            "  - opcode: churn\n    mode: create\n    intervalMilliseconds: -1\n    templatePaths: [../templates/pod.yaml]\n  - opcode: createPods\n",
        ),
        "testCases[0].workloadTemplate[1].intervalMilliseconds",
        "-1 is negative",
    );
    check_error(
        &BASIC.replace(
            "nodeTemplatePath: ../templates/node.yaml",
            "nodeTemplatePath: ../templates/node.yaml\n    labelNodePrepareStrategy: {labelKey: zone, labelValues: [a]}\n    uniqueNodeLabelStrategy: {labelKey: u}",
        ),
        "testCases[0].workloadTemplate[0].uniqueNodeLabelStrategy",
        "at most one node strategy may be set, found labelNodePrepareStrategy and uniqueNodeLabelStrategy",
    );
    check_error(
        &BASIC.replace(
            "nodeTemplatePath: ../templates/node.yaml",
            "nodeTemplatePath: ../templates/node.yaml\n    labelNodePrepareStrategy: {labelKey: zone, labelValues: []}",
        ),
        "testCases[0].workloadTemplate[0].labelNodePrepareStrategy.labelValues",
        "expected at least one value",
    );
    check_error(
        &BASIC.replace("labels: [short]", "labels: [short]\n    threshold: -1"),
        "testCases[0].workloads[0].threshold",
        "negative",
    );
    check_error(
        &BASIC.replace("labels: [short]", "labels: [short]\n    threshold: fast"),
        "testCases[0].workloads[0].threshold",
        "expected a number or a map of topic name to number",
    );
    check_error(
        &BASIC.replace("labels: [short]", "labels: [short]\n    thresholdMetricSelector: {name: X, dataBucket: ''}"),
        "testCases[0].workloads[0].thresholdMetricSelector.dataBucket",
        "dataBucket must be set",
    );
    check_error(
        &BASIC.replace(
            "  workloads:\n  - name: small\n    labels: [short]\n    params: {initNodes: 5, measurePods: 10}\n",
            "",
        ),
        "testCases[0].workloads",
        "no workloads defined",
    );
    check_error("", "", "no test cases defined");
    check_error("name: Basic\n", "testCases", "invalid type: map, expected a sequence");
    check_error(
        &BASIC.replace("  - opcode: createPods\n", "  - opcode: createPods\n    steadyState: true\n"),
        "testCases[0].workloadTemplate[1].duration",
        "steadyState needs a duration",
    );
}

#[test]
fn params_are_substituted() {
    let yaml = "\
- name: Params
  defaultPodTemplatePath: ../templates/pod.yaml
  featureGates: {SchedulerAsyncPreemption: true, OpportunisticBatching: true}
  labels: [performance]
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    labelNodePrepareStrategy: {labelKey: zone, labelValues: [a, b]}
  - opcode: createNamespaces
    prefix: ns
    countParam: $sets
  - opcode: createPodSets
    countParam: $sets
    namespacePrefix: ns
    createPodsOp:
      opcode: createPods
      countParam: $perSet
      countMultiplierParam: $mult
  - opcode: sleep
    durationParam: $pause
  - opcode: sleep
    duration: $pause
  - opcode: churn
    mode: create
    intervalMilliseconds: 0
    templatePaths: [../templates/pod.yaml]
  - opcode: createAny
    templatePath: ../templates/pod.yaml
    templateParams: {size: $perSet, fixed: x}
  - opcode: createPods
    count: 7
    podTemplatePath: ../templates/node.yaml
    collectMetrics: true
    steadyStateParam: $steady
    duration: 2s
  - opcode: barrier
  workloads:
  - name: w
    labels: [performance, short]
    featureGates: {OpportunisticBatching: false}
    threshold: {topicA: 10}
    params: {nodes: 3, sets: 2, perSet: 4, mult: 5, pause: 150ms, steady: true}
";
    let fx = Fixture::new(yaml);
    let cases = fx.load().unwrap();
    let r = resolve(&cases[0], &cases[0].workloads[0]).unwrap();
    assert_eq!(r.name, "Params/w");
    assert_eq!(r.labels, ["performance", "short"]);
    assert_eq!(
        r.feature_gates,
        BTreeMap::from([("OpportunisticBatching".to_string(), false), ("SchedulerAsyncPreemption".to_string(), true)])
    );
    assert_eq!(r.threshold.as_ref().unwrap().get("topicA"), 10.0);
    assert_eq!(r.threshold.as_ref().unwrap().get("other"), 0.0);
    assert_eq!(r.threshold_metric_selector.name, "SchedulingThroughput");
    assert_eq!(r.threshold_metric_selector.data_bucket, "Average");
    let pod = fx.template("pod.yaml");
    let node = fx.template("node.yaml");
    let pods = |count, namespace: &str, path: &PathBuf, collect, steady_state, duration| ResolvedOp::CreatePods {
        count,
        namespace: namespace.to_string(),
        pod_template_path: Some(path.clone()),
        collect_metrics: collect,
        skip_wait_to_completion: false,
        steady_state,
        duration,
        persistent_volume_template_path: None,
        persistent_volume_claim_template_path: None,
        template_params: BTreeMap::new(),
        signature_batch_size: 1,
    };
    let expected = vec![
        ResolvedOp::CreateNodes {
            count: 3,
            node_template_path: None,
            node_allocatable_strategy: None,
            label_node_prepare_strategy: Some(spec::LabelNodePrepareStrategy {
                label_key: "zone".into(),
                label_values: vec!["a".into(), "b".into()],
            }),
            unique_node_label_strategy: None,
            template_params: BTreeMap::new(),
        },
        ResolvedOp::CreateNamespaces { prefix: "ns".into(), count: 2, namespace_template_path: None },
        pods(20, "ns-0", &pod, false, false, None),
        pods(20, "ns-1", &pod, false, false, None),
        ResolvedOp::Sleep { duration: Duration::from_millis(150) },
        ResolvedOp::Sleep { duration: Duration::from_millis(150) },
        ResolvedOp::Churn {
            mode: ChurnMode::Create,
            number: 0,
            interval_ms: 500,
            namespace: "namespace-6".into(),
            template_paths: vec![pod.clone()],
        },
        ResolvedOp::CreateAny {
            template_path: pod.clone(),
            namespace: None,
            count: 1,
            template_params: BTreeMap::from([
                ("fixed".to_string(), ParamValue::Str("x".into())),
                ("size".to_string(), ParamValue::Int(4)),
            ]),
        },
        pods(7, "namespace-8", &node, true, true, Some(Duration::from_secs(2))),
        ResolvedOp::Barrier {
            namespaces: vec![],
            label_selector: BTreeMap::new(),
            stage_requirement: StageRequirement::Scheduled,
        },
    ];
    assert_eq!(r.ops, expected);
}

#[test]
fn paths_resolve_relative_to_the_workload_file() {
    let fx = Fixture::new(BASIC);
    // Loading from another working directory must not matter: paths follow the file.
    let cases = fx.load().unwrap();
    assert_eq!(cases[0].default_pod_template_path.as_deref(), Some(fx.template("pod.yaml").as_path()));
    let spec::Op::CreateNodes(op) = &cases[0].workload_template[0] else { panic!("op 0 is createNodes") };
    assert_eq!(op.node_template_path.as_deref(), Some(fx.template("node.yaml").as_path()));
    assert!(op.node_template_path.as_ref().unwrap().is_absolute());
    // The same relative path from a file one level up points elsewhere and fails.
    std::fs::write(fx.dir.path().join("w.yaml"), BASIC).unwrap();
    let e = load_workload_file(&fx.dir.path().join("w.yaml")).unwrap_err();
    assert_eq!(e.path, "testCases[0].workloadTemplate[0].nodeTemplatePath");
}

#[test]
fn load_path_walks_directories_and_skips_non_workloads() {
    let fx = Fixture::new(BASIC);
    let root = fx.dir.path();
    std::fs::write(root.join("templates/list.yaml"), "- a\n- b\n").unwrap();
    std::fs::write(root.join("cases/scheduler-config.yaml"), "apiVersion: kubescheduler.config.k8s.io/v1\n").unwrap();
    std::fs::create_dir_all(root.join("cases/deeper")).unwrap();
    std::fs::write(root.join("cases/deeper/more.yml"), BASIC.replace("../templates", "../../templates")).unwrap();
    let got: Vec<PathBuf> =
        load_path(root).unwrap().into_iter().map(|(p, _)| p.strip_prefix(root).unwrap().to_path_buf()).collect();
    assert_eq!(got, [PathBuf::from("cases/deeper/more.yml"), PathBuf::from("cases/w.yaml")]);
    // A broken workload file under a directory is an error, not skipped.
    std::fs::write(root.join("cases/broken.yaml"), BASIC.replace("createPods", "createPots")).unwrap();
    assert!(load_path(root).unwrap_err().message.contains("unknown opcode"));
    // A file named directly must be a workload file.
    assert!(load_path(&root.join("cases/scheduler-config.yaml")).is_err());
}

#[test]
fn list_is_aligned() {
    let yaml = format!(
        "{}  - name: 5000Nodes_10000Pods\n    labels: [performance]\n    threshold: 680\n    params: {{initNodes: 5000, measurePods: 10000}}\n",
        BASIC.replace("- name: Basic\n", "- name: Basic\n  labels: [misc]\n")
    );
    let fx = Fixture::new(&yaml);
    let got = list(&fx.file(), None).unwrap();
    let file = fx.file().display().to_string();
    let want = format!(
        "\
WORKLOAD                   LABELS            THRESHOLD  PARAMS                            STATUS
# {file}
Basic/small                misc,short        -          initNodes=5 measurePods=10        run
Basic/5000Nodes_10000Pods  misc,performance  >680       initNodes=5000 measurePods=10000  run
1 files, 2 workloads
"
    );
    assert_eq!(got, want);
}

#[test]
fn list_covers_the_repository() {
    let text = list(&workloads_dir(), None).unwrap();
    assert!(text.contains("SchedulingBasic/5000Nodes_50000Pods"), "{text}");
    assert!(text.contains("\n10 files, "), "{text}");
    // Every row is aligned: each column starts where its header does, after a space.
    let header = text.lines().next().unwrap();
    let starts: Vec<usize> = ["LABELS", "THRESHOLD", "PARAMS"].iter().map(|h| header.find(h).unwrap()).collect();
    for line in text.lines().skip(1).filter(|l| !l.starts_with('#') && l.contains('/')) {
        for &at in &starts {
            let b = line.as_bytes();
            assert!(b[at - 1] == b' ' && b[at] != b' ', "column at {at} misaligned in {line:?}");
        }
    }
    assert!(text.contains("\nSchedulingBasic/500Nodes  "), "{text}");
}

#[test]
fn threshold_formats() {
    let sel = spec::ThresholdMetricSelector::default();
    let t = Threshold { value: 0.0, values_by_topic: BTreeMap::from([("a".to_string(), 5.0)]) };
    assert_eq!(super::format_threshold(&t, &sel), "a:>5");
    let lower = spec::ThresholdMetricSelector {
        expect_lower: true,
        name: "Latency".into(),
        data_bucket: "Perc99".into(),
        ..sel
    };
    let t = Threshold { value: 3.5, values_by_topic: BTreeMap::new() };
    assert_eq!(super::format_threshold(&t, &lower), "<3.5 (Latency Perc99)");
}

#[test]
fn accepts_every_upstream_field() {
    let yaml = "\
- name: Everything
  featureGates: {SchedulerPopFromBackoffQ: true}
  metricsCollectorConfig:
    Metrics:
      scheduler_scheduling_attempt_duration_seconds:
      - Label: result
        Values: [scheduled]
  schedulerConfigPath: ../templates/node.yaml
  labels: [performance]
  defaultThresholdMetricSelector: {name: SchedulingThroughput, dataBucket: Perc50}
  workloadTemplate:
  - opcode: createNodes
    count: 2
    uniqueNodeLabelStrategy: {labelKey: unique}
  - opcode: createNodes
    count: 1
    nodeAllocatableStrategy:
      nodeAllocatable: {attachable-volumes-csi-ebs.csi.aws.com: \"39\"}
      csiNodeAllocatable: {ebs.csi.aws.com: {count: 39}}
      migratedPlugins: [kubernetes.io/aws-ebs]
  - opcode: createNamespaces
    prefix: ns
    count: 1
    namespaceTemplatePath: ../templates/node.yaml
  - opcode: startCollectingMetrics
    name: phase
    namespaces: [ns-0]
    labelSelector: {app: x}
  - opcode: createPods
    count: 3
    namespace: ns-0
    podTemplatePath: ../templates/pod.yaml
    persistentVolumeTemplatePath: ../templates/node.yaml
    persistentVolumeClaimTemplatePath: ../templates/pod.yaml
    skipWaitToCompletion: true
  - opcode: barrier
    namespaces: [ns-0]
    labelSelector: {app: x}
    stageRequirement: Attempted
  - opcode: stopCollectingMetrics
  - opcode: deletePods
    namespace: ns-0
    labelSelector: {app: x}
    deletePodsPerSecond: 10
    skipWaitForPodsDeleted: true
  - opcode: updateAny
    templatePath: ../templates/node.yaml
    countParam: $n
    updatePerSecond: 5
    subresources: [status]
  - opcode: churn
    mode: recreate
    number: 2
    intervalMilliseconds: 100
    namespace: churn
    templatePaths: [../templates/pod.yaml]
  - opcode: sleep
    duration: 1m
  workloads:
  - name: w
    featureGates: {SchedulerPopFromBackoffQ: false}
    threshold: {default: 1, other: 2}
    params: {n: 4}
  - name: v
    threshold: 5
    thresholdMetricSelector: {name: X, labels: {a: b}, dataBucket: Perc99, expectLower: true}
    params: {n: 1}
";
    let fx = Fixture::new(yaml);
    let cases = fx.load().unwrap();
    let tc = &cases[0];
    assert_eq!(tc.scheduler_config_path.as_deref(), Some(fx.template("node.yaml").as_path()));
    assert!(tc.metrics_collector_config.is_some());
    assert_eq!(tc.workloads[0].threshold_metric_selector.data_bucket, "Perc50");
    assert_eq!(tc.workloads[1].threshold_metric_selector.name, "X");
    assert!(tc.workloads[1].threshold_metric_selector.expect_lower);
    let w = resolve(tc, &tc.workloads[0]).unwrap();
    assert_eq!(w.feature_gates, BTreeMap::from([("SchedulerPopFromBackoffQ".to_string(), false)]));
    assert_eq!(w.threshold.as_ref().map(|t| t.get("other")), Some(2.0));
    let opcodes: Vec<&str> = tc.workload_template.iter().map(spec::Op::opcode).collect();
    assert_eq!(
        opcodes,
        [
            "createNodes",
            "createNodes",
            "createNamespaces",
            "startCollectingMetrics",
            "createPods",
            "barrier",
            "stopCollectingMetrics",
            "deletePods",
            "updateAny",
            "churn",
            "sleep"
        ]
    );
    assert!(matches!(
        &w.ops[7],
        ResolvedOp::DeletePods { skip_wait_to_completion: true, delete_pods_per_second: 10, .. }
    ));
    assert!(matches!(&w.ops[8], ResolvedOp::UpdateAny { count: 4, update_per_second: 5, .. }));
    assert!(matches!(&w.ops[9], ResolvedOp::Churn { mode: ChurnMode::Recreate, number: 2, interval_ms: 100, .. }));
    assert_eq!(w.ops[10], ResolvedOp::Sleep { duration: Duration::from_secs(60) });
    assert!(matches!(&w.ops[5], ResolvedOp::Barrier { stage_requirement: StageRequirement::Attempted, .. }));
}

#[test]
fn repository_templates_are_kubernetes_objects() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.components().any(|c| c.as_os_str() == "templates") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&workloads_dir(), &mut files);
    assert!(files.len() >= 25, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // The parameters workloads/podgroup's templates read.
        let params = BTreeMap::from([
            ("podsPerGroup".to_string(), ParamValue::Int(2)),
            ("minCount".to_string(), ParamValue::Int(2)),
            ("prefix".to_string(), ParamValue::Str("g".into())),
            ("cpu".to_string(), ParamValue::Str("100m".into())),
        ]);
        let text = render_template(&text, &template_env(0, 1, &params)).unwrap();
        let value: serde_norway::Value =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
        let kinds = [
            "Node",
            "Pod",
            "Service",
            "PodGroup",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "StorageClass",
            "CSIDriver",
            "CSIStorageCapacity",
            "DeviceClass",
            "ResourceClaimTemplate",
            "ResourceSlice",
        ];
        assert!(kinds.contains(&kind), "{}: kind {kind:?}", file.display());
        let want = match kind {
            "PodGroup" => "scheduling.k8s.io/v1beta1",
            "StorageClass" | "CSIDriver" | "CSIStorageCapacity" => "storage.k8s.io/v1",
            "DeviceClass" | "ResourceClaimTemplate" | "ResourceSlice" => "resource.k8s.io/v1",
            _ => "v1",
        };
        assert_eq!(value.get("apiVersion").and_then(|v| v.as_str()), Some(want), "{}", file.display());
    }
}

#[test]
fn unsupported_ops_and_gates_skip_workloads_with_a_reason() {
    let yaml = "\
- name: Groups
  workloadTemplate:
  - opcode: createNodes
    count: 2
  - opcode: createResourceClaims
    countParam: $groups
    templatePath: ../templates/pod.yaml
  - opcode: createPods
    count: 2
    collectMetrics: true
  workloads:
  - name: g
    params: {groups: 3}
- name: Gates
  workloadTemplate:
  - opcode: startCollectingProfile
    type: CPU
    filePath: cpu.prof
  - opcode: createPods
    count: 2
    collectMetrics: true
  - opcode: stopCollectingProfile
    type: CPU
  workloads:
  - name: locked
    featureGates: {NodeDeclaredFeatures: false}
  - name: workloads
    featureGates: {CompositePodGroup: true}
  - name: fine
    featureGates: {SchedulerAsyncAPICalls: true, SchedulerPopFromBackoffQ: false}
";
    let fx = Fixture::new(yaml);
    let cases = fx.load().unwrap();
    let reasons: Vec<Option<String>> =
        cases.iter().flat_map(|tc| tc.workloads.iter().map(move |w| skip_reason(tc, w))).collect();
    assert!(reasons[0].as_deref().unwrap().contains("op createResourceClaims"), "{reasons:?}");
    assert!(reasons[1].as_deref().unwrap().contains("locked to true"), "{reasons:?}");
    assert!(
        reasons[2].as_deref().unwrap().contains("CompositePodGroup=true needs workload-aware scheduling"),
        "{reasons:?}"
    );
    assert_eq!(reasons[3], None);
    // The profiling ops are accepted and do nothing; the gates say what they mean.
    let w = resolve(&cases[1], &cases[1].workloads[2]).unwrap();
    assert_eq!(w.ops.len(), 1);
    let words: Vec<(&str, &str)> = w.gate_statuses.iter().map(|(n, _, s)| (n.as_str(), s.word())).collect();
    assert_eq!(words, [("SchedulerAsyncAPICalls", "not applicable"), ("SchedulerPopFromBackoffQ", "honoured")]);
    // `list` says the same as `run` would.
    let text = list(&fx.file(), None).unwrap();
    assert!(text.contains("skip: op createResourceClaims"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("Gates/fine") && l.ends_with("run")), "{text}");
}

#[test]
fn unknown_gates_and_template_functions_are_bad_input() {
    let fx = Fixture::new(
        &BASIC.replace("- name: small\n", "- name: small\n    featureGates: {SchedulerQueueingHints: false}\n"),
    );
    let e = fx.load().unwrap_err();
    assert_eq!(e.path, "testCases[0].workloads[0].featureGates.SchedulerQueueingHints");
    assert!(e.message.contains("not a feature gate of Kubernetes v1.37.2"), "{e}");
    let fx = Fixture::new(BASIC);
    std::fs::write(
        fx.dir.path().join("templates/pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{{ Modulo .Index 2 }}\n",
    )
    .unwrap();
    let e = fx.load().unwrap_err();
    assert_eq!((e.file.as_str(), e.path.as_str()), (fx.template("pod.yaml").to_str().unwrap(), "line 4"));
    assert!(
        e.message.contains("function \"Modulo\" not defined") && e.message.contains("defaultPodTemplatePath"),
        "{e}"
    );
}

#[test]
fn template_param_defaults_as_upstream() {
    let yaml = "\
- name: Defaults
  workloadTemplate:
  - opcode: createPods
    count: 1
    collectMetrics: true
    podTemplatePath: ../templates/pod.yaml
    templateParams: {a: $given|7, b: $absent|7, c: $absent|zone-1}
  workloads:
  - name: w
    params: {given: 3}
";
    let fx = Fixture::new(yaml);
    let r = fx.resolve_all().unwrap().remove(0);
    let ResolvedOp::CreatePods { template_params, .. } = &r.ops[0] else { panic!("{:?}", r.ops[0]) };
    assert_eq!(template_params["a"], ParamValue::Int(3));
    assert_eq!(template_params["b"], ParamValue::Int(7));
    assert_eq!(template_params["c"], ParamValue::Str("zone-1".into()));
}

/// `createPodGroups` as upstream's `isValid` checks it, and PodGroup templates as the API server
/// validates them: each bad input names the file, the field and what was expected.
#[test]
fn create_pod_groups_and_pod_group_templates_are_checked() {
    let case = |op: &str| {
        let params = if op.contains("$n") { "    params: {n: 0}\n" } else { "" };
        format!(
            "- name: G\n  featureGates: {{GenericWorkload: true}}\n  workloadTemplate:\n{op}  - opcode: createPods\n    count: 1\n    collectMetrics: true\n  workloads:\n  - name: w\n{params}"
        )
    };
    let op_ok =
        "  - opcode: createPodGroups\n    count: 2\n    namespace: ns\n    templatePath: ../templates/group.yaml\n";
    // (op, path of the error, words in the message); None: loads and resolves.
    let cases: &[(&str, Option<(&str, &str)>)] = &[
        (op_ok, None),
        (
            "  - opcode: createPodGroups\n    count: 2\n    templatePath: ../templates/group.yaml\n",
            Some(("testCases[0].workloadTemplate[0].namespace", "namespace must be set")),
        ),
        (
            "  - opcode: createPodGroups\n    count: 2\n    namespace: ns\n",
            Some(("testCases[0].workloadTemplate[0].templatePath", "templatePath must be set")),
        ),
        (
            "  - opcode: createPodGroups\n    countParam: $n\n    namespace: ns\n    templatePath: ../templates/group.yaml\n",
            Some(("testCases[0].workloadTemplate[0].countParam", "count must be greater than 0")),
        ),
        (
            "  - opcode: createPodGroups\n    count: 1\n    namespace: ns\n    templatePath: ../templates/group.yaml\n    minCount: 3\n",
            Some(("testCases[0].workloadTemplate[0].minCount", "unknown field `minCount`")),
        ),
    ];
    for (op, want) in cases {
        let fx = Fixture::new(&case(op));
        std::fs::write(
            fx.dir.path().join("templates/group.yaml"),
            "apiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\nmetadata:\n  name: g-{{.Index}}\nspec:\n  schedulingPolicy:\n    gang:\n      minCount: 2\n",
        )
        .unwrap();
        match (fx.resolve_all(), want) {
            (Ok(w), None) => {
                let ResolvedOp::CreatePodGroups { count, namespace, .. } = &w[0].ops[0] else {
                    panic!("{:?}", w[0].ops)
                };
                assert_eq!((*count, namespace.as_str()), (2, "ns"));
                assert_eq!(skip_reason(&fx.load().unwrap()[0], &fx.load().unwrap()[0].workloads[0]), None);
            }
            (Err(e), Some((path, words))) => {
                assert_eq!(e.path, *path, "{op}: {e}");
                assert!(e.message.contains(words), "{op}: {e}");
            }
            (got, want) => panic!("{op}: got {got:?}, want {want:?}"),
        }
    }
    // PodGroup objects: the API server's checks, with the field path.
    let groups: &[(&str, &str, &str)] = &[
        ("spec:\n  schedulingPolicy: {}\n", "spec.schedulingPolicy", "neither basic nor gang"),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n    gang:\n      minCount: 2\n",
            "spec.schedulingPolicy",
            "both basic and gang",
        ),
        ("spec:\n  schedulingPolicy:\n    gang:\n      minCount: 0\n", "spec.schedulingPolicy.gang.minCount", ">= 1"),
        ("spec:\n  schedulingPolicy:\n    gang: {}\n", "spec.schedulingPolicy.gang", "missing field `minCount`"),
        ("spec:\n  schedulingPolicy:\n    basic: {}\n  minCount: 2\n", "spec.minCount", "unknown field `minCount`"),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  disruptionMode: {}\n",
            "spec.disruptionMode",
            "exactly one of single and all",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  schedulingConstraints:\n    topology: rack\n",
            "spec.schedulingConstraints.topology",
            "expected a sequence",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  schedulingConstraints:\n    topology:\n    - key: 7\n",
            "spec.schedulingConstraints.topology[0].key",
            "expected a string",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  schedulingConstraints:\n    topology:\n    - {}\n",
            "spec.schedulingConstraints.topology[0]",
            "missing field `key`",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  schedulingConstraints:\n    topology:\n    - key: a\n    - key: b\n",
            "spec.schedulingConstraints.topology",
            "expected at most 1",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  schedulingConstraints:\n    topology:\n    - key: \"a b\"\n",
            "spec.schedulingConstraints.topology[0].key",
            "node label key",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  schedulingConstraints:\n    spread: []\n",
            "spec.schedulingConstraints.spread",
            "unknown field `spread`",
        ),
        // DRAWorkloadResourceClaims: each shared claim names exactly one of a claim and a template.
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  resourceClaims:\n  - name: resource\n",
            "spec.resourceClaims[0]",
            "neither resourceClaimName nor resourceClaimTemplateName is set: expected exactly one",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  resourceClaims:\n  - {name: a, resourceClaimName: c}\n  - {name: b, resourceClaimName: c, resourceClaimTemplateName: t}\n",
            "spec.resourceClaims[1]",
            "both resourceClaimName and resourceClaimTemplateName are set: expected exactly one",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  resourceClaims:\n  - {resourceClaimName: c}\n",
            "spec.resourceClaims[0]",
            "missing field `name`",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  resourceClaims:\n  - {name: a, resourceClaimName: c}\n  - {name: a, resourceClaimTemplateName: t}\n",
            "spec.resourceClaims[1].name",
            "duplicate",
        ),
        (
            "spec:\n  schedulingPolicy:\n    basic: {}\n  resourceClaims:\n  - {name: a, claimName: c}\n",
            "spec.resourceClaims[0].claimName",
            "unknown field `claimName`",
        ),
    ];
    for (spec, path, words) in groups {
        let text = format!("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata:\n  name: g\n{spec}");
        let e = crate::api::parse_objects(&text, "group.yaml").unwrap_err();
        assert_eq!((e.file.as_str(), e.path.as_str()), ("group.yaml", *path), "{spec}: {e}");
        assert!(e.message.contains(words), "{spec}: {e}");
    }
    // upstream's podgroup/tas template loads, with its key.
    let tas = "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n  schedulingPolicy:\n    gang:\n      minCount: 4\n  schedulingConstraints:\n    topology:\n    - key: topology.kubernetes.io/rack\n";
    let objs = crate::api::parse_objects(tas, "group.yaml").unwrap();
    let crate::api::Object::PodGroup(g) = &objs[0] else { panic!() };
    assert_eq!(g.topology_key(), Some("topology.kubernetes.io/rack"));
    let text = "apiVersion: scheduling.k8s.io/v1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n  schedulingPolicy:\n    basic: {}\n";
    let e = crate::api::parse_objects(text, "group.yaml").unwrap_err();
    assert_eq!(e.path, "apiVersion", "{e}");
    // The pod's reference, as upstream's gang-pod.yaml writes it.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  schedulingGroup:\n    podGroupName: gang-0\n";
    let objs = crate::api::parse_objects(pod, "pod.yaml").unwrap();
    let crate::api::Object::Pod(p) = &objs[0] else { panic!() };
    assert_eq!(p.spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.as_deref()), Some("gang-0"));
}

#[test]
fn dra_workloads_run_whatever_dra_gates_they_set() {
    let yaml = "\
- name: Basic
  featureGates: {DynamicResourceAllocation: true}
  workloadTemplate:
  - opcode: allocResourceClaims
    namespace: init
  - opcode: createPods
    count: 1
    collectMetrics: true
  workloads:
  - name: b
- name: Features
  featureGates: {DynamicResourceAllocation: true, DRAConsumableCapacity: true, DRAListTypeAttributes: true}
  workloadTemplate:
  - opcode: allocResourceClaims
    namespace: init
  - opcode: createPods
    count: 1
    collectMetrics: true
  workloads:
  - name: capacity
  - name: both
    featureGates: {DRAPartitionableDevices: true, DRADeviceTaints: true, DRAExtendedResource: true}
  - name: groups
    featureGates: {DRAListTypeAttributes: false, DRADeviceCompatibilityGroups: true}
";
    let fx = Fixture::new(yaml);
    let cases = fx.load().unwrap();
    let reasons: Vec<Option<String>> =
        cases.iter().flat_map(|tc| tc.workloads.iter().map(move |w| skip_reason(tc, w))).collect();
    // Every DRA feature of upstream's suites is implemented (consumable capacity, prioritized
    // lists, partitionable devices, device taints, DRA-backed extended resources, compatibility
    // groups, pod groups' claims, list attributes): no DRA gate skips a workload.
    assert_eq!(reasons, [None, None, None, None]);
}
