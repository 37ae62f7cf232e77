//! Workload-aware scheduling in whole runs: the GenericWorkload gate changing what happens to the
//! pods of a PodGroup (gate off: scheduled one by one, the group ignored, as upstream's queue does
//! when `isPodGroupMember` is false; gate on: one pod-group cycle, all-or-nothing for a gang).

use super::driver::run_workload;
use super::RunOptions;

/// One node with 2 CPUs; a PodGroup `g` with `policy`; `pods` pods of 900m naming `g` (so two fit).
fn workload(gate_on: bool, policy: &str, pods: u64) -> (tempfile::TempDir, crate::workload::ResolvedWorkload) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let node = write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: node-\nstatus:\n  allocatable:\n    cpu: \"2\"\n    memory: 8Gi\n    pods: \"110\"\n",
    );
    let group = write(
        "group.yaml",
        &format!("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n  schedulingPolicy:\n    {policy}\n"),
    );
    let pod = write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: member-\nspec:\n  schedulingGroup:\n    podGroupName: g\n  containers:\n  - name: c\n    image: img\n    resources:\n      requests:\n        cpu: 900m\n",
    );
    let text = format!(
        "- name: Gang
  featureGates: {{GenericWorkload: {gate_on}}}
  workloadTemplate:
  - opcode: createNodes
    count: 1
    nodeTemplatePath: {node}
  - opcode: createPodGroups
    count: 1
    namespace: ns
    templatePath: {group}
  - opcode: createPods
    count: {pods}
    namespace: ns
    podTemplatePath: {pod}
    skipWaitToCompletion: true
  - opcode: sleep
    duration: 5s
  - opcode: createPods
    count: 0
    namespace: ns
    podTemplatePath: {pod}
    collectMetrics: true
  workloads:
  - name: w
"
    );
    let file = dir.path().join("gang.yaml");
    std::fs::write(&file, text).unwrap();
    let tcs = crate::workload::load_workload_file(&file).unwrap();
    let w = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
    (dir, w)
}

#[test]
fn the_generic_workload_gate_turns_one_by_one_scheduling_into_all_or_nothing() {
    // (gate, policy, pods created) -> (bound, an unschedulable reason starts with, attempted at all)
    type Case<'a> = (bool, &'a str, u64, u64, Option<&'a str>, bool);
    let cases: &[Case] = &[
        // Gate off: the group reference is ignored; two pods fit, the third does not.
        (false, "gang:\n      minCount: 3", 3, 2, Some("0/1 nodes are available: 1 Insufficient cpu."), true),
        // Gate on: the gang of 3 cannot all fit, so none is bound; the two that fit carry
        // PlacementFeasible's message behind errPodGroupUnschedulable's (the oracle's words).
        (
            true,
            "gang:\n      minCount: 3",
            3,
            0,
            Some("pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"),
            true,
        ),
        // A gang of 2 among 3 pods: the quorum is met, the two feasible pods bind.
        (true, "gang:\n      minCount: 2", 3, 2, Some("0/1 nodes are available: 1 Insufficient cpu."), true),
        // A basic group schedules whatever fits.
        (true, "basic: {}", 3, 2, Some("0/1 nodes are available: 1 Insufficient cpu."), true),
        // Fewer pods than minCount: PreEnqueue keeps the group out of activeQ, nothing is attempted.
        (true, "gang:\n      minCount: 4", 3, 0, None, false),
    ];
    for (gate, policy, pods, bound, reason, attempted) in cases {
        let (_dir, w) = workload(*gate, policy, *pods);
        let opts = RunOptions { virtual_time: true, progress: false, ..RunOptions::default() };
        let r = run_workload(&w, &opts).unwrap();
        let what = format!("gate {gate}, {policy:?}, {pods} pods");
        assert_eq!(r.accounting.bound, *bound, "{what}: {:?}", r.unschedulable_reasons);
        assert_eq!(r.accounting.lost, 0, "{what}");
        if let Some(reason) = reason {
            let found = r.unschedulable_reasons.keys().any(|k| k.starts_with(*reason));
            assert!(found, "{what}: {:?}", r.unschedulable_reasons);
        }
        assert_eq!(r.counters.attempts > 0, *attempted, "{what}: {} attempts", r.counters.attempts);
    }
}

#[test]
fn a_group_whose_pods_and_group_disagree_on_priority_fails_validation_every_attempt() {
    let (dir, w) = workload(true, "gang:\n      minCount: 1", 2);
    // The pods get priority 5; the group has none (0): `validatePodGroup` refuses the group.
    let pod = dir.path().join("pod.yaml");
    let text = std::fs::read_to_string(&pod).unwrap().replace("spec:\n", "spec:\n  priority: 5\n");
    std::fs::write(&pod, text).unwrap();
    let tcs = crate::workload::load_workload_file(&dir.path().join("gang.yaml")).unwrap();
    let w2 = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
    drop(w);
    let opts = RunOptions { virtual_time: true, progress: false, ..RunOptions::default() };
    let r = run_workload(&w2, &opts).unwrap();
    assert_eq!(r.accounting.bound, 0);
    assert!(r.counters.errors >= 2, "every pod of every attempt fails: {} errors", r.counters.errors);
}

/// Two nodes of 2 CPUs; PodGroup `g` (basic policy, priority 10, `mode` as its disruptionMode)
/// with two members of 900m, which the group's cycle spreads over both nodes; then a pod of
/// priority 100 asking 1500m, which must preempt.
fn preemption_workload(gate_on: bool, mode: &str) -> (tempfile::TempDir, crate::workload::ResolvedWorkload) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let node = write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: node-\nstatus:\n  allocatable:\n    cpu: \"2\"\n    memory: 8Gi\n    pods: \"110\"\n",
    );
    let mode = if mode.is_empty() { String::new() } else { format!("  disruptionMode:\n    {mode}: {{}}\n") };
    let group = write(
        "group.yaml",
        &format!("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n  priority: 10\n{mode}  schedulingPolicy:\n    basic: {{}}\n"),
    );
    let member = write(
        "member.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: member-\nspec:\n  priority: 10\n  schedulingGroup:\n    podGroupName: g\n  containers:\n  - name: c\n    image: img\n    resources:\n      requests:\n        cpu: 900m\n",
    );
    let preemptor = write(
        "preemptor.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: high-\nspec:\n  priority: 100\n  containers:\n  - name: c\n    image: img\n    resources:\n      requests:\n        cpu: 1500m\n",
    );
    let text = format!(
        "- name: Preempt
  featureGates: {{GenericWorkload: {gate_on}}}
  workloadTemplate:
  - opcode: createNodes
    count: 2
    nodeTemplatePath: {node}
  - opcode: createPodGroups
    count: 1
    namespace: ns
    templatePath: {group}
  - opcode: createPods
    count: 2
    namespace: ns
    podTemplatePath: {member}
  - opcode: createPods
    count: 1
    namespace: ns
    podTemplatePath: {preemptor}
    collectMetrics: true
  workloads:
  - name: w
"
    );
    let file = dir.path().join("preempt.yaml");
    std::fs::write(&file, text).unwrap();
    let tcs = crate::workload::load_workload_file(&file).unwrap();
    let w = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
    (dir, w)
}

#[test]
fn disruption_mode_all_evicts_the_whole_group_on_every_node() {
    // (gate, disruptionMode) -> victims of the one preemption. `all` takes the member on the
    // other node too; `single`, no mode, or the gate off evict the one member in the way.
    for (gate, mode, victims) in [(true, "all", 2), (true, "single", 1), (true, "", 1), (false, "all", 1)] {
        let (_dir, w) = preemption_workload(gate, mode);
        let opts = RunOptions { virtual_time: true, progress: false, ..RunOptions::default() };
        let r = run_workload(&w, &opts).unwrap();
        let what = format!("gate {gate}, disruptionMode {mode:?}");
        assert_eq!((r.counters.preemptions, r.counters.preemption_victims), (1, victims), "{what}");
        assert_eq!(r.accounting.lost, 0, "{what}");
    }
}
