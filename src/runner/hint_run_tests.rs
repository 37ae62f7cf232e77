//! Object-aware queueing hints in whole runs: the driver delivers the bound pod with each
//! assigned-pod event, so a pod InterPodAffinity rejected comes back only for a pod that matches
//! its term (labels and namespace), not for every bind.

use super::driver::run_workload;
use super::RunOptions;

/// One node; pod `p` (namespace `ns`) needs a pod `app: web` on its node and is unschedulable;
/// then, 20 s apart (longer than any backoff), a pod without labels in `ns`, a pod `app: web` in
/// namespace `other`, a pod without labels in `ns`; then the pod `app: web` in `ns` that
/// unblocks `p`; then a barrier.
fn workload() -> (tempfile::TempDir, crate::workload::ResolvedWorkload) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let node = write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: node-\nstatus:\n  allocatable:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n",
    );
    let p = write(
        "p.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: p-\nspec:\n  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels:\n            app: web\n        topologyKey: kubernetes.io/hostname\n  containers:\n  - name: c\n    image: img\n",
    );
    let plain = write(
        "plain.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: plain-\nspec:\n  containers:\n  - name: c\n    image: img\n",
    );
    let web = write(
        "web.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: web-\n  labels:\n    app: web\nspec:\n  containers:\n  - name: c\n    image: img\n",
    );
    let create = |path: &str, ns: &str, wait: bool| {
        let how = if wait { "    collectMetrics: true\n" } else { "    skipWaitToCompletion: true\n" };
        format!("  - opcode: createPods\n    count: 1\n    namespace: {ns}\n    podTemplatePath: {path}\n{how}")
    };
    let sleep = "  - opcode: sleep\n    duration: 20s\n";
    let ops = [
        format!("  - opcode: createNodes\n    count: 1\n    nodeTemplatePath: {node}\n"),
        create(&p, "ns", false),
        sleep.to_string(),
        create(&plain, "ns", true),
        sleep.to_string(),
        create(&web, "other", true),
        sleep.to_string(),
        create(&plain, "ns", true),
        sleep.to_string(),
        create(&web, "ns", true),
        "  - opcode: barrier\n".to_string(),
    ]
    .concat();
    let text = format!("- name: Hints\n  workloadTemplate:\n{ops}  workloads:\n  - name: w\n");
    let file = dir.path().join("hints.yaml");
    std::fs::write(&file, text).unwrap();
    let tcs = crate::workload::load_workload_file(&file).unwrap();
    let w = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
    (dir, w)
}

#[test]
fn a_pod_inter_pod_affinity_rejected_comes_back_only_for_a_matching_pod() {
    let (_dir, w) = workload();
    let opts = RunOptions { virtual_time: true, progress: false, ..RunOptions::default() };
    let r = run_workload(&w, &opts).unwrap();
    assert_eq!(r.accounting.bound, 5, "{:?}", r.unschedulable_reasons);
    // One attempt for each of the four other pods, two for `p`: the binds of the pod without
    // labels and of the `app: web` pod in another namespace do not requeue it (the coarse
    // table would, three more attempts).
    assert_eq!(r.counters.attempts, 6, "{:?}", r.counters);
}
