//! `run` drives every extension point from the profile: disabling DefaultPreemption at
//! postFilter stops preemption; test-only Reserve and Permit plugins fail, reject and wait; a
//! second profile's pods get their own plugins' queueing hints.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::driver::run_workload_with;
use super::{RunError, RunOptions};
use crate::config::SchedulerConfig;
use crate::framework::{Code, CycleCx, CycleState, Plugin, Status, WaitingPods};
use crate::ids::PodUid;
use crate::report::RunReport;
use crate::snapshot::NodeIdx;

/// A workload of 2 nodes (4 CPU each) filled by 8 low-priority pods (900m), then `high` pods of
/// priority 10 (3 CPU, so each needs preemption) and `plain` pods of 100m; then a 30 s sleep, or a
/// barrier (every pod scheduled) when `barrier`.
fn workload(high: u32, plain: u32, barrier: bool) -> (tempfile::TempDir, crate::workload::ResolvedWorkload) {
    let templates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/templates");
    let t = |f: &str| templates.join(f).display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let plain_pod = dir.path().join("plain.yaml");
    std::fs::write(
        &plain_pod,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: plain-\nspec:\n  containers:\n  - name: c\n    image: img\n    resources:\n      requests:\n        cpu: 100m\n",
    )
    .unwrap();
    let mut ops = format!(
        "  - opcode: createNodes\n    count: 2\n    nodeTemplatePath: {}\n  - opcode: createPods\n    count: 8\n    podTemplatePath: {}\n    collectMetrics: true\n",
        t("node-default.yaml"),
        t("pod-low-priority.yaml")
    );
    if high > 0 {
        ops += &format!(
            "  - opcode: createPods\n    count: {high}\n    podTemplatePath: {}\n    skipWaitToCompletion: true\n",
            t("pod-high-priority.yaml")
        );
    }
    if plain > 0 {
        ops += &format!(
            "  - opcode: createPods\n    count: {plain}\n    podTemplatePath: {}\n    skipWaitToCompletion: true\n",
            plain_pod.display()
        );
    }
    ops += if barrier { "  - opcode: barrier\n" } else { "  - opcode: sleep\n    duration: 30s\n" };
    let text =
        format!("- name: Points\n  workloadTemplate:\n{ops}  workloads:\n  - name: small\n    labels: [short]\n");
    let file = dir.path().join("points.yaml");
    std::fs::write(&file, text).unwrap();
    let tcs = crate::workload::load_workload_file(&file).unwrap();
    let w = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
    (dir, w)
}

fn config(yaml: &str) -> SchedulerConfig {
    let text = format!("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n{yaml}");
    SchedulerConfig::parse(&text, "test.yaml").unwrap()
}

fn run(
    w: &crate::workload::ResolvedWorkload,
    config: &SchedulerConfig,
    extra: &[Arc<dyn Plugin>],
    virtual_time: bool,
) -> Result<RunReport, RunError> {
    let opts = RunOptions { virtual_time, progress: false, ..RunOptions::default() };
    run_workload_with(w, &opts, config, extra)
}

#[test]
fn postfilter_disabled_never_preempts() {
    let (_dir, w) = workload(2, 0, false);
    let on = run(&w, &SchedulerConfig::defaults(), &[], true).unwrap();
    assert!(on.counters.preemptions >= 2, "{:?}", on.counters);
    let off = config("profiles:\n- plugins:\n    postFilter:\n      disabled:\n      - name: DefaultPreemption\n");
    assert!(!off.profiles[0].plugins.post_filter.iter().any(|p| p == "DefaultPreemption"));
    let r = run(&w, &off, &[], true).unwrap();
    assert_eq!(r.counters.preemptions, 0);
    assert_eq!(r.accounting.unschedulable, 2, "the high-priority pods stay pending");
}

/// Records Reserve/Unreserve calls; with `fail_reserve`, Reserve fails for the `plain-` pods.
struct Recorder {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    fail_reserve: bool,
}

impl Plugin for Recorder {
    fn name(&self) -> &'static str {
        self.name
    }
    fn reserve(&self, cx: CycleCx<'_>, _state: &mut CycleState, _node: NodeIdx) -> Status {
        self.log.lock().unwrap().push(format!("reserve {} {}", self.name, cx.pod.name));
        if self.fail_reserve && cx.pod.name.starts_with("plain-") {
            return Status::new(Code::Unschedulable, "no room reserved");
        }
        Status::success()
    }
    fn unreserve(&self, cx: CycleCx<'_>, _state: &mut CycleState, _node: NodeIdx) {
        self.log.lock().unwrap().push(format!("unreserve {} {}", self.name, cx.pod.name));
    }
}

#[test]
fn a_failed_reserve_unreserves_every_reserve_plugin_in_reverse() {
    let (_dir, w) = workload(0, 1, false);
    let log = Arc::new(Mutex::new(Vec::new()));
    let extra: Vec<Arc<dyn Plugin>> = vec![
        Arc::new(Recorder { name: "R1", log: log.clone(), fail_reserve: false }),
        Arc::new(Recorder { name: "R2", log: log.clone(), fail_reserve: true }),
        Arc::new(Recorder { name: "R3", log: log.clone(), fail_reserve: false }),
    ];
    let mut cfg = SchedulerConfig::defaults();
    cfg.profiles[0].plugins.reserve = vec!["R1".into(), "R2".into(), "R3".into()];
    let r = run(&w, &cfg, &extra, true).unwrap();
    assert_eq!(r.counters.scheduled, 8, "only the low-priority pods bind");
    let plain: Vec<String> = log.lock().unwrap().iter().filter(|l| l.contains("plain-")).cloned().collect();
    // Every attempt: R1 and R2 reserve, R2 fails, R3 never reserves, all three unreserve in reverse.
    let attempt = ["reserve R1", "reserve R2", "unreserve R3", "unreserve R2", "unreserve R1"];
    assert!(plain.len() >= 5 && plain.len().is_multiple_of(5), "{plain:?}");
    for (i, l) in plain.iter().enumerate() {
        assert!(l.starts_with(attempt[i % 5]), "{plain:?}");
    }
    assert!(r.unschedulable_reasons.keys().any(|k| k.contains("no room reserved")), "{:?}", r.unschedulable_reasons);

    // Without R2 at Reserve the pod binds.
    let (_dir, w) = workload(0, 1, true);
    let mut cfg = SchedulerConfig::defaults();
    cfg.profiles[0].plugins.reserve = vec!["R1".into(), "R3".into()];
    let r = run(&w, &cfg, &extra, true).unwrap();
    assert_eq!(r.counters.scheduled, 9);
}

/// Permit: rejects `plain-` pods, or makes the first two of them wait for each other (a gang of
/// two: the second allows the first), or makes each wait once until its timeout.
struct Gate {
    mode: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    seen: Mutex<Vec<PodUid>>,
}

impl Plugin for Gate {
    fn name(&self) -> &'static str {
        "Gate"
    }
    fn unreserve(&self, cx: CycleCx<'_>, _state: &mut CycleState, _node: NodeIdx) {
        self.log.lock().unwrap().push(format!("unreserve {}", cx.pod.name));
    }
    fn permit(
        &self,
        cx: CycleCx<'_>,
        _state: &mut CycleState,
        _node: NodeIdx,
        waiting: &mut WaitingPods,
    ) -> (Status, Duration) {
        if !cx.pod.name.starts_with("plain-") {
            return (Status::success(), Duration::ZERO);
        }
        let first_time = {
            let mut seen = self.seen.lock().unwrap();
            let first = !seen.contains(&cx.pod.uid);
            seen.push(cx.pod.uid);
            first
        };
        match self.mode {
            "reject" => (Status::new(Code::Unschedulable, "not permitted"), Duration::ZERO),
            "gang" if waiting.pods().is_empty() => {
                (Status::new(Code::Wait, "waiting for the gang"), Duration::from_secs(60))
            }
            "gang" => {
                for uid in waiting.pods().to_vec() {
                    waiting.allow(uid, self.name());
                }
                (Status::success(), Duration::ZERO)
            }
            "timeout" if first_time => (Status::new(Code::Wait, "waiting"), Duration::from_secs(2)),
            _ => (Status::success(), Duration::ZERO),
        }
    }
}

fn gate_config() -> SchedulerConfig {
    let mut cfg = SchedulerConfig::defaults();
    cfg.profiles[0].plugins.permit = vec!["Gate".into()];
    cfg.profiles[0].plugins.reserve.push("Gate".into());
    cfg
}

fn gate(mode: &'static str) -> (Arc<Gate>, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    (Arc::new(Gate { mode, log: log.clone(), seen: Mutex::new(Vec::new()) }), log)
}

#[test]
fn a_permit_rejection_unreserves_and_requeues() {
    let (_dir, w) = workload(0, 1, false);
    let (g, log) = gate("reject");
    let r = run(&w, &gate_config(), &[g as Arc<dyn Plugin>], true).unwrap();
    assert_eq!(r.counters.scheduled, 8);
    assert_eq!(r.accounting.unschedulable, 1);
    assert!(log.lock().unwrap().iter().any(|l| l.starts_with("unreserve plain-")));
    assert!(r.unschedulable_reasons.keys().any(|k| k.contains("not permitted")));
    assert_eq!(r.accounting.lost, 0);
}

#[test]
fn permit_wait_binds_when_allowed_in_virtual_and_wall_time() {
    for virtual_time in [true, false] {
        let (_dir, w) = workload(0, 2, true);
        let (g, log) = gate("gang");
        let r = run(&w, &gate_config(), &[g as Arc<dyn Plugin>], virtual_time).unwrap();
        assert_eq!(r.counters.scheduled, 10, "virtual time {virtual_time}");
        assert_eq!(r.counters.bind_failures, 0, "virtual time {virtual_time}");
        assert!(log.lock().unwrap().is_empty(), "nothing unreserved");
    }
}

#[test]
fn permit_wait_times_out_then_the_pod_retries() {
    for virtual_time in [true, false] {
        let (_dir, w) = workload(0, 1, true);
        let (g, log) = gate("timeout");
        let r = run(&w, &gate_config(), &[g as Arc<dyn Plugin>], virtual_time).unwrap();
        assert_eq!(r.counters.scheduled, 9, "virtual time {virtual_time}");
        assert_eq!(r.counters.bind_failures, 1, "the wait timed out once (virtual time {virtual_time})");
        assert_eq!(log.lock().unwrap().len(), 1, "unreserved once");
    }
}

#[test]
fn a_second_profiles_rejections_use_its_own_plugins_hints() {
    use crate::config::{PluginArgs, Profile, ProfilePlugins};
    use crate::queue::{ClusterEvent, PluginSet, QueuedPod, SchedulingQueue};
    let profile = |filter: [&str; 2]| Profile {
        scheduler_name: filter[0].to_string(),
        percentage_of_nodes_to_score: None,
        plugins: ProfilePlugins { filter: filter.map(String::from).to_vec(), ..Default::default() },
        args: PluginArgs::default(),
    };
    let mut interner = crate::snapshot::Interner::default();
    let fws: Vec<Arc<crate::framework::Framework>> =
        [["NodeResourcesFit", "NodeName"], ["NodeName", "NodeResourcesFit"]]
            .map(|f| {
                let fw = crate::plugins::build_framework(
                    &profile(f),
                    &crate::plugins::CompiledArgs::default(),
                    &mut interner,
                );
                Arc::new(fw.unwrap())
            })
            .to_vec();
    let mut queue = SchedulingQueue::<()>::new(1_000_000_000, 10_000_000_000);
    let wk = crate::snapshot::WellKnown::new(&mut interner);
    let syms = super::driver::hint_syms(&mut interner, &wk);
    let bases = super::driver::register_hints(&mut queue, &fws, syms, None);
    assert_eq!(bases, vec![0, 2]);
    // A pod of the second profile rejected by its NodeName, which has the same plugin index as the
    // first profile's NodeResourcesFit.
    let node_name = fws[1].plugins.iter().position(|p| p.name() == "NodeName").unwrap();
    assert_eq!(fws[0].plugin(node_name).name(), "NodeResourcesFit");
    queue.add(QueuedPod::new(PodUid(1), 0, ()), 0);
    let qp = queue.pop(0).unwrap();
    queue.add_unschedulable(qp, PluginSet::of(&[(bases[1] + node_name) as u8]), 0);
    // A pod leaving a node frees room (NodeResourcesFit's hint: Queue), not a node name (NodeName: Skip).
    let delete = ClusterEvent::AssignedPodDelete { pod: PodUid(9), node: 0 };
    assert_eq!(queue.on_event(delete, 1), 0, "NodeName's hint, not NodeResourcesFit's");
    assert_eq!(queue.on_event(ClusterEvent::NodeAdd { node: 1 }, 2), 1);
}
