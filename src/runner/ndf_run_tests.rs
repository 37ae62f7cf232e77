//! NodeDeclaredFeatures in whole runs: a node update that changes `status.declaredFeatures` goes
//! through the node-update path (the snapshot's row, the queue's `DECLARED_FEATURES` event), and the
//! plugin's hint requeues the pod it rejected only for such an update; nodedeclaredfeatures'
//! harness hook (`HarnessHooks`) declares `Feature1..N` on every node.

use super::driver::run_workload;
use super::RunOptions;

/// Two nodes; a pod with a restart rule `RestartAllContainers` (it needs the node feature
/// RestartAllContainersOnContainerExits), unschedulable; then, 20 s apart (longer than any
/// backoff), `updateAny` of node-0 declaring another feature, of node-1 with a new label only, and
/// of node-1 declaring the feature; then a barrier. `hook`: the workload also has
/// `numNodeDeclaredFeatures: 3` and the gate, and the run ends after the first update.
fn workload(hook: bool) -> (tempfile::TempDir, crate::workload::ResolvedWorkload) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let node = |name: &str, extra: &str| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n{extra}status:\n  allocatable:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n"
        )
    };
    let base = write("node.yaml", &node("node-0", "").replace("  name: node-0\n", "  generateName: node-\n"));
    let other = write(
        "other.yaml",
        &node("node-0", "").replace(
            "    pods: \"110\"\n",
            "    pods: \"110\"\n  declaredFeatures: [UserNamespacesHostNetworkSupport]\n",
        ),
    );
    let label = write("label.yaml", &node("node-1", "  labels: {zone: a}\n"));
    let feature = write(
        "feature.yaml",
        &node("node-1", "").replace(
            "    pods: \"110\"\n",
            "    pods: \"110\"\n  declaredFeatures: [RestartAllContainersOnContainerExits]\n",
        ),
    );
    let pod = write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: p-\nspec:\n  containers:\n  - name: c\n    image: img\n    restartPolicyRules:\n    - action: RestartAllContainers\n      exitCodes: {operator: In, values: [42]}\n",
    );
    let sleep = "  - opcode: sleep\n    duration: 20s\n";
    let update = |path: &str| format!("  - opcode: updateAny\n    templatePath: {path}\n    count: 1\n");
    let mut ops = vec![
        format!("  - opcode: createNodes\n    count: 2\n    nodeTemplatePath: {base}\n"),
        "  - opcode: startCollectingMetrics\n    namespaces: [ns]\n".to_string(),
        format!("  - opcode: createPods\n    count: 1\n    namespace: ns\n    podTemplatePath: {pod}\n    skipWaitToCompletion: true\n"),
        sleep.to_string(),
        update(&other),
        sleep.to_string(),
    ];
    if !hook {
        ops.extend([update(&label), sleep.to_string(), update(&feature), "  - opcode: barrier\n".to_string()]);
    }
    ops.push("  - opcode: stopCollectingMetrics\n".to_string());
    let params = if hook {
        "  - name: w\n    featureGates: {NodeDeclaredFeatures: true}\n    params: {numNodeDeclaredFeatures: 3}\n"
    } else {
        "  - name: w\n"
    };
    let text = format!("- name: NDF\n  workloadTemplate:\n{}  workloads:\n{params}", ops.concat());
    let file = dir.path().join("ndf.yaml");
    std::fs::write(&file, text).unwrap();
    let tcs = crate::workload::load_workload_file(&file).unwrap();
    let w = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
    assert_eq!(w.hooks.node_declared_features, hook.then_some(3));
    (dir, w)
}

#[test]
fn a_pod_needing_a_feature_comes_back_only_when_declared_features_change() {
    let (_dir, w) = workload(false);
    let opts = RunOptions { virtual_time: true, progress: false, ..RunOptions::default() };
    let r = run_workload(&w, &opts).unwrap();
    assert_eq!(r.accounting.bound, 1, "{:?}", r.unschedulable_reasons);
    // Three attempts: the first, after node-0's declared features changed (still not the one
    // needed), after node-1 declared it. The label update does not requeue the pod (the plugin
    // registers no label event).
    assert_eq!(r.counters.attempts, 3, "{:?}", r.counters);
}

#[test]
fn the_harness_hook_declares_mock_names_the_scheduler_does_not_know() {
    let (_dir, w) = workload(true);
    let opts = RunOptions { virtual_time: true, progress: false, ..RunOptions::default() };
    let r = run_workload(&w, &opts).unwrap();
    // Feature1..3 are unknown to the real registry: the pod still fits nowhere, for this plugin.
    assert_eq!(r.accounting.bound, 0);
    let reasons = format!("{:?}", r.unschedulable_reasons);
    assert!(reasons.contains("2 node(s) didn't match Pod's required features"), "{reasons}");
}
