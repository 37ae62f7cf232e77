//! The run driver: the scheduling thread's loop, the workload ops, and the end-of-run accounting.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::consistency::{differences, Expected, PodLine};
use super::objects::{default_node, default_pod, Templates};
use super::quality::{placement_digest, placement_quality};
use super::{AgentSpec, RunError, RunOptions};
use crate::agent::sim::{SimAgent, TimeMode};
use crate::agent::{AgentEvent, AgentEventKind, AgentPod, ContainerSpec, NodeAgent};
use crate::api::{self, Object};
use crate::binder::{BindJob, BindOutcome, BindResult, Binder, BindingCycle, FrameworkBinding};
use crate::cache::AssumeCache;
use crate::clock::{Clock, CycleCostModel, VirtualClock, WallClock};
use crate::cluster::{build_snapshot_counted, Cluster, UidGen};
use crate::config::SchedulerConfig;
use crate::engine::{CycleResult, Engine};
use crate::error::InputError;
use crate::framework::{BindingPod, CycleCx, CycleState, Framework, PermitOutcome, Plugin, PluginId, WaitingPods};
use crate::ids::PodUid;
use crate::metrics::{cpu_seconds, peak_rss_bytes, throughput, Histograms, LatencyHist};
use crate::plugins::compile_args;
use crate::queue::{default_hint_fn, ClusterEvent, NodeChange, PluginSet, QueuedPod, SchedulingQueue};
use crate::report::{Accounting, Counters, RunReport};
use crate::snapshot::compile::{compile_node, compile_pod, Priorities};
use crate::snapshot::NodeIdx;
use crate::snapshot::{PodInfo, Snapshot, Sym};
use crate::workload::gates::GateStatus;
use crate::workload::{apply_node_allocatable, label_node_prepare, unique_node_label, ResolvedOp, ResolvedWorkload};

/// How long an open-ended wait (a barrier, the end of a createPods op) lasts without any pod being
/// bound or deleted before the driver stops waiting and reports the rest as unschedulable: 30 s of
/// run time (virtual time in `--virtual-time` runs). Upstream would wait until its test timeout.
const NO_PROGRESS_WAIT_NANOS: u64 = 30_000_000_000;
/// Upstream's limit for a `createPods` wait and a barrier (`waitUntilPodsScheduledInNamespace`,
/// `waitUntilPodsAttemptedInNamespace`): 10 minutes, after which its harness fails the workload.
const UPSTREAM_WAIT_TIMEOUT_NANOS: u64 = 600_000_000_000;
/// Assumed pods handed to the binder at once. kube-scheduler starts a goroutine per pod; a thread
/// wake-up per pod would cost more than the scheduling cycle on two cores.
const BIND_BATCH_PODS: usize = 32;
/// The longest an assumed pod waits for its batch while the scheduler is busy (it is flushed at
/// once when the scheduler goes idle).
const BIND_BATCH_MAX_DELAY_NANOS: u64 = 250_000;
/// What one API call of preemption (a victim's DisruptionTarget status patch, or its delete) takes
/// in the model: 1 ms, an apiserver write in scheduler_perf's integration setup. Modelled, not
/// measured; a victim takes two calls.
const PREEMPTION_API_CALL_NANOS: u64 = 1_000_000;
/// Victims deleted at once: upstream's parallelizer (16 workers) deletes them in waves.
const PREEMPTION_PARALLELISM: u64 = 16;

/// How long deleting `victims` victims in parallel takes: `ceil(victims / 16)` waves of two API calls.
fn victim_deletion_nanos(victims: usize) -> u64 {
    (victims as u64).div_ceil(PREEMPTION_PARALLELISM) * 2 * PREEMPTION_API_CALL_NANOS
}

/// An asynchronous preemption in flight (SchedulerAsyncPreemption, upstream's
/// `prepareCandidateAsync`): all victims but the last are deleted in parallel, then the last one;
/// the preemptor is blocked by DefaultPreemption's PreEnqueue until the last one is gone.
struct Preemption {
    preemptor: PodUid,
    /// When the victims but the last are gone, and them (empty once deleted).
    first_due_nanos: u64,
    first: Vec<PodUid>,
    /// When the last victim is gone.
    last_due_nanos: u64,
    last: PodUid,
}

/// The failed wait of upstream's outcome checks, for the report's `outcome`.
struct FailedWait {
    op: usize,
    waited_for: usize,
    not_done: usize,
}

/// Where a pod is in its life, as the driver tracks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodState {
    /// In the scheduling queue (active, backoff, unschedulable or gated).
    Queued,
    /// Assumed on a node; the bind is in flight.
    Assumed(Sym),
    Bound(Sym),
    Deleted,
}

struct PodRec {
    info: Arc<PodInfo>,
    template: Arc<api::Pod>,
    namespace: String,
    /// Created by this run (pods of `--cluster` are not).
    created_by_run: bool,
    measured: bool,
    profile: usize,
    attempts: u32,
    /// The last attempt found the pod unschedulable.
    unschedulable: bool,
    created_nanos: u64,
    scheduled_nanos: Option<u64>,
    bound_nanos: Option<u64>,
    running_nanos: Option<u64>,
    /// The agent reported the pod failed after it was bound.
    failed: bool,
    state: PodState,
}

/// A churn op running in the background of later ops.
struct Churner {
    recreate: bool,
    number: u64,
    interval_nanos: u64,
    namespace: String,
    templates: Vec<PathBuf>,
    next_nanos: u64,
    created: u64,
    /// Per template, the objects alive (pod uids or node names), oldest first.
    alive: Vec<VecDeque<ChurnObject>>,
}

enum ChurnObject {
    Pod(PodUid),
    Node(String),
    Other,
}

/// A pod template compiled once per namespace (see `Driver::compile_from_template`).
struct CompiledTemplate {
    /// Held so the key's pointer stays this template's.
    template: Arc<api::Pod>,
    info: PodInfo,
    start_from_uid: bool,
}

/// The measurement window: pods created inside it are measured.
#[derive(Default)]
struct Window {
    open: bool,
    namespaces: Vec<String>,
    start_nanos: Option<u64>,
}

struct Driver {
    opts: RunOptions,
    clock: Arc<dyn Clock>,
    vclock: Option<Arc<VirtualClock>>,
    /// What a cycle costs in virtual time (used only with `vclock`).
    cycle_cost: CycleCostModel,
    snap: Snapshot,
    /// Each profile's PodTopologySpread as configured (`None`: not enabled), for the end-of-run
    /// topology skew.
    spread: Vec<Option<crate::plugins::podtopologyspread::PodTopologySpread>>,
    /// One framework per profile (shared with the binder, which runs their binding plugins).
    frameworks: Vec<Arc<Framework>>,
    /// Per profile: the pods waiting on Permit, as Permit plugins see them.
    waiting: Vec<WaitingPods>,
    /// Per profile: the queue's id of its plugin 0 (a profile's plugin `p` has queue id base + p,
    /// so each profile's rejectors get their own plugins' queueing hints).
    hint_base: Vec<usize>,
    /// Virtual time only (binding is inline): pods waiting on Permit, with their deadlines.
    parked: Vec<(u64, BindJob)>,
    /// The profiles' binding plugins, run inline in virtual time.
    binding: Arc<FrameworkBinding>,
    engine: Engine,
    queue: SchedulingQueue<()>,
    cache: Arc<AssumeCache>,
    /// Cache transitions refused on the scheduling thread: each is a reported inconsistency.
    cache_errors: Vec<String>,
    pods: Vec<PodRec>,
    /// Pod index by uid: uids are dense from 1.
    uids: UidGen,
    priorities: Priorities,
    cluster: Cluster,
    agent: Arc<dyn NodeAgent>,
    binder: Option<Arc<Binder>>,
    bind_results: Receiver<BindResult>,
    agent_events: Receiver<AgentEvent>,
    /// Pods assumed whose bind has not finished.
    binds_in_flight: usize,
    /// Assumed pods not yet handed to the binder, and when the oldest was added: the binder gets
    /// them in batches (one worker wake-up per batch), flushed when full, when old, or when the
    /// scheduling loop has nothing else to do.
    bind_batch: Vec<BindJob>,
    bind_batch_since_nanos: u64,
    templates: Templates,
    /// Compiled pod templates by (template pointer, namespace).
    compiled: ahash::AHashMap<(usize, String), CompiledTemplate>,
    churners: Vec<Churner>,
    /// `deletePods` with `skipWaitToCompletion`: pods deleted in the background at a rate
    /// (next deletion time, interval, pods left).
    deleters: Vec<(u64, u64, VecDeque<PodUid>)>,
    window: Window,
    nodes_created: u64,
    pods_created: u64,
    /// Pods deleted so far (progress for waits).
    deleted: u64,
    hist: Histograms,
    counters: Counters,
    unschedulable_reasons: BTreeMap<String, u64>,
    measured_bind_nanos: Vec<u64>,
    events_out: Option<std::io::BufWriter<std::fs::File>>,
    largest_shape: (i64, i64),
    progress: Option<indicatif::ProgressBar>,
    config_source: String,
    config_digest: String,
    /// Per node name: fingerprints of labels, taints, allocatable and `unschedulable`, to tell an
    /// `updateAny` which of them changed (the queue's `NodeChange`).
    node_fingerprints: ahash::AHashMap<String, [u64; 4]>,
    /// Position of the op being run, for failure messages.
    op_index: usize,
    /// SchedulerAsyncPreemption: victims are deleted after the preemptor's cycle (see [`Preemption`]).
    async_preemption: bool,
    preemptions: Vec<Preemption>,
    failed_wait: Option<FailedWait>,
}

/// Fingerprints of what a node update can change, in `NodeChange` order: allocatable, labels,
/// taints, unschedulable.
fn node_fingerprint(node: &api::Node) -> [u64; 4] {
    use std::hash::{Hash, Hasher};
    let h = |text: String| {
        let mut s = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut s);
        s.finish()
    };
    [
        h(format!("{:?}", node.allocatable())),
        h(format!("{:?}", node.metadata.labels)),
        h(format!("{:?}", node.spec.taints)),
        u64::from(node.spec.unschedulable),
    ]
}

impl Driver {
    /// Writes one line of the `--events` trace. The pod's key and the detail are built only when a
    /// trace is written: a run without `--events` pays one branch per event.
    fn trace(&mut self, at_nanos: u64, uid: PodUid, kind: &str, detail: impl FnOnce(&Driver) -> serde_json::Value) {
        if self.events_out.is_none() {
            return;
        }
        let line =
            serde_json::json!({"tNanos": at_nanos, "pod": self.key_of(uid), "event": kind, "detail": detail(self)});
        if let Some(w) = &mut self.events_out {
            let _ = writeln!(w, "{line}");
        }
    }

    /// `namespace/name` of a pod.
    fn key_of(&self, uid: PodUid) -> String {
        let rec = self.rec(uid);
        format!("{}/{}", rec.namespace, rec.info.name)
    }

    fn now(&self) -> u64 {
        self.clock.now_nanos()
    }

    /// Keeps a refused cache transition for the end-of-run check (`cacheConsistent`).
    fn note_cache<T>(&mut self, r: Result<T, crate::cache::TransitionError>) {
        if let Err(e) = r {
            self.cache_errors.push(e.to_string());
        }
    }

    fn rec(&self, uid: PodUid) -> &PodRec {
        &self.pods[(uid.0 - 1) as usize]
    }

    fn rec_mut(&mut self, uid: PodUid) -> &mut PodRec {
        &mut self.pods[(uid.0 - 1) as usize]
    }

    /// Adds a pod record for `uid` (uids are handed out in order, so the index is uid - 1).
    fn push_rec(&mut self, uid: PodUid, rec: PodRec) {
        assert_eq!(self.pods.len() as u64 + 1, uid.0, "pod uids are dense");
        self.pods.push(rec);
    }

    fn profile_of(&self, info: &PodInfo) -> Option<usize> {
        let name = self.snap.interner.resolve(info.scheduler_name);
        self.frameworks.iter().position(|f| f.scheduler_name == name)
    }

    // ---- creating and deleting objects -------------------------------------------------------

    fn create_node(&mut self, mut node: api::Node, file: &str) -> Result<String, InputError> {
        if node.metadata.name.is_empty() {
            let prefix = if node.metadata.generate_name.is_empty() { "node-" } else { &node.metadata.generate_name };
            node.metadata.name = format!("{prefix}{}", self.nodes_created);
        }
        self.nodes_created += 1;
        // A kubelet labels its node with its hostname; simulated nodes do as a registered node would.
        node.metadata.labels.entry("kubernetes.io/hostname".to_string()).or_insert_with(|| node.metadata.name.clone());
        let spec = compile_node(&node, &mut self.snap.interner);
        let idx = self.snap.add_node(&spec).map_err(|e| InputError::new(file, "metadata.name", e))?;
        self.node_fingerprints.insert(node.metadata.name.clone(), node_fingerprint(&node));
        let now = self.now();
        self.queue.on_event(ClusterEvent::NodeAdd { node: idx.0 }, now);
        Ok(node.metadata.name)
    }

    fn create_pod(&mut self, template: Arc<api::Pod>, namespace: &str, file: &str) -> Result<PodUid, InputError> {
        let name = if template.metadata.name.is_empty()
            || self.pods_created > 0 && !template.metadata.generate_name.is_empty()
        {
            let prefix =
                if template.metadata.generate_name.is_empty() { "pod-" } else { &template.metadata.generate_name };
            format!("{prefix}{:06}", self.pods_created)
        } else {
            template.metadata.name.clone()
        };
        self.pods_created += 1;
        let uid = self.uids.next_uid();
        let info = self.compile_from_template(&template, namespace, &name, uid, file)?;
        let profile = self.profile_of(&info).ok_or_else(|| {
            InputError::new(
                file,
                "spec.schedulerName",
                format!("no scheduler profile named {:?}", self.snap.interner.resolve(info.scheduler_name)),
            )
        })?;
        let now = self.now();
        let measured = self.window.open
            && (self.window.namespaces.is_empty() || self.window.namespaces.iter().any(|n| n == namespace));
        if measured && self.window.start_nanos.is_none() {
            self.window.start_nanos = Some(now);
        }
        self.snap.prepare_pod(&info);
        let gated = !self.frameworks[profile].run_pre_enqueue(&info).is_success();
        let priority = info.priority;
        if let Some(c) = self.largest_shape_candidate(&info) {
            self.largest_shape = c;
        }
        self.push_rec(
            uid,
            PodRec {
                info: Arc::new(info),
                template,
                namespace: namespace.to_string(),
                created_by_run: true,
                measured,
                profile,
                attempts: 0,
                unschedulable: false,
                created_nanos: now,
                scheduled_nanos: None,
                bound_nanos: None,
                running_nanos: None,
                failed: false,
                state: PodState::Queued,
            },
        );
        self.trace(now, uid, "created", |_| serde_json::json!({"gated": gated}));
        let mut qp = QueuedPod::new(uid, priority, ()).gated(gated);
        qp.timestamp_nanos = now;
        self.queue.add(qp, now);
        Ok(uid)
    }

    /// The compiled pod for `template` in `namespace`: compiled once per (template, namespace) and
    /// cloned with the pod's own uid and name (and start time, when the template sets none).
    fn compile_from_template(
        &mut self,
        template: &Arc<api::Pod>,
        namespace: &str,
        name: &str,
        uid: PodUid,
        file: &str,
    ) -> Result<PodInfo, InputError> {
        let key = (Arc::as_ptr(template) as usize, namespace.to_string());
        if let Some(c) = self.compiled.get(&key).filter(|c| Arc::ptr_eq(&c.template, template)) {
            let mut info = c.info.clone();
            info.uid = uid;
            info.name = name.to_string();
            if c.start_from_uid {
                info.constraints.start_time_ms = uid.0 as i64;
            }
            return Ok(info);
        }
        let mut pod = (**template).clone();
        pod.metadata.namespace = namespace.to_string();
        let wk = self.snap.wk.clone();
        let info = compile_pod(&pod, name, uid, &self.priorities, &mut self.snap.interner, &wk)
            .map_err(|e| InputError::new(file, "spec.priorityClassName", e))?;
        let start_from_uid = pod
            .status
            .start_time
            .as_deref()
            .or(pod.metadata.creation_timestamp.as_deref())
            .and_then(crate::snapshot::compile::rfc3339_ms)
            .is_none();
        let entry = CompiledTemplate { template: template.clone(), info: info.clone(), start_from_uid };
        self.compiled.insert(key, entry);
        Ok(info)
    }

    fn largest_shape_candidate(&self, info: &PodInfo) -> Option<(i64, i64)> {
        let (c, m) = (info.requests.cpu_milli, info.requests.memory);
        (c > self.largest_shape.0 || (c == self.largest_shape.0 && m > self.largest_shape.1)).then_some((c, m))
    }

    /// Deletes a pod wherever it is: out of the queue, or off its node (the agent stops it).
    fn delete_pod(&mut self, uid: PodUid) {
        let state = self.rec(uid).state;
        let now = self.now();
        match state {
            PodState::Deleted => return,
            PodState::Queued => {
                self.queue.delete(uid);
                self.snap.clear_nomination(uid);
                let r = self.cache.delete(uid);
                self.note_cache(r);
            }
            PodState::Assumed(_) | PodState::Bound(_) => {
                if let Some(placed) = self.snap.unplace_pod(uid) {
                    let node = self.snap.nodes.idx_of(placed.node).map_or(u32::MAX, |n| n.0);
                    self.queue.on_event(ClusterEvent::AssignedPodDelete { pod: uid, node }, now);
                }
                let r = self.cache.delete(uid);
                self.note_cache(r);
                if matches!(state, PodState::Assumed(_)) {
                    self.binds_in_flight -= 1;
                    // Not yet handed to the binder: it never will be.
                    if let Some(i) = self.bind_batch.iter().position(|j| j.pod.uid == uid) {
                        self.bind_batch.remove(i);
                    }
                    // Waiting on Permit: the wait ends with the pod (upstream rejects it).
                    let profile = self.rec(uid).profile;
                    if self.waiting[profile].contains(uid) {
                        self.waiting[profile].remove(uid);
                        self.parked.retain(|(_, j)| j.pod.uid != uid);
                        if let Some(b) = &self.binder {
                            b.reject(uid, "the pod was deleted while waiting on permit");
                        }
                    }
                }
                self.agent.delete(uid);
            }
        }
        self.trace(now, uid, "deleted", |_| serde_json::Value::Null);
        self.rec_mut(uid).state = PodState::Deleted;
        self.deleted += 1;
    }

    fn delete_node(&mut self, name: &str) {
        let Some(sym) = self.snap.interner.get(name) else { return };
        let Some(idx) = self.snap.nodes.idx_of(sym) else { return };
        for uid in self.snap.nodes.pods[idx.ix()].clone() {
            self.delete_pod(uid);
        }
        let idx = self.snap.nodes.idx_of(sym).expect("node still there");
        self.snap.remove_node(sym);
        let now = self.now();
        self.queue.on_event(ClusterEvent::NodeDelete { node: idx.0 }, now);
    }

    /// `createAny` and churn: adds any object to the cluster.
    fn create_object(&mut self, obj: &Object, namespace: Option<&str>, file: &str) -> Result<ChurnObject, InputError> {
        Ok(match obj {
            Object::Node(n) => ChurnObject::Node(self.create_node(n.clone(), file)?),
            Object::Pod(p) => {
                let ns = namespace.map(str::to_string).unwrap_or_else(|| p.namespace().to_string());
                ChurnObject::Pod(self.create_pod(Arc::new(p.clone()), &ns, file)?)
            }
            Object::PriorityClass(pc) => {
                self.priorities.add(pc);
                // Compiled templates resolved their priority against the old classes.
                self.compiled.clear();
                crate::cluster::register_object(&mut self.snap, obj);
                self.cluster.priority_classes.push(pc.clone());
                ChurnObject::Other
            }
            other => {
                crate::cluster::register_object(&mut self.snap, other);
                self.cluster.add(other.clone());
                ChurnObject::Other
            }
        })
    }

    /// `updateAny`: replaces a node or a pod by name, as upstream's Update + UpdateStatus do.
    fn update_object(&mut self, obj: &Object, namespace: Option<&str>, file: &str) -> Result<(), InputError> {
        let now = self.now();
        match obj {
            Object::Node(node) => {
                let name = node.metadata.name.clone();
                let missing =
                    || InputError::new(file, "metadata.name", format!("updateAny: node {name:?} does not exist"));
                let sym = self.snap.interner.get(&name).ok_or_else(missing)?;
                if self.snap.nodes.idx_of(sym).is_none() {
                    return Err(missing());
                }
                let spec = compile_node(node, &mut self.snap.interner);
                let idx = self.snap.update_node(&spec).map_err(|e| InputError::new(file, "metadata.name", e))?;
                let new = node_fingerprint(node);
                let old = self.node_fingerprints.insert(name, new).unwrap_or([u64::MAX; 4]);
                let bits = [NodeChange::ALLOCATABLE, NodeChange::LABEL, NodeChange::TAINT, NodeChange::UNSCHEDULABLE];
                let change = (0..4).filter(|&i| old[i] != new[i]).fold(NodeChange::default(), |c, i| c.union(bits[i]));
                self.queue.on_event(ClusterEvent::NodeUpdate { node: idx.0, change }, now);
            }
            Object::Pod(pod) => {
                let ns = namespace.map(str::to_string).unwrap_or_else(|| pod.namespace().to_string());
                let name = pod.metadata.name.clone();
                let uid = self
                    .pods
                    .iter()
                    .find(|r| r.state != PodState::Deleted && r.namespace == ns && r.info.name == name)
                    .map(|r| r.info.uid)
                    .ok_or_else(|| {
                        InputError::new(file, "metadata.name", format!("updateAny: pod {ns}/{name} does not exist"))
                    })?;
                let mut p = pod.clone();
                p.metadata.namespace = ns;
                let wk = self.snap.wk.clone();
                let info = compile_pod(&p, &name, uid, &self.priorities, &mut self.snap.interner, &wk)
                    .map_err(|e| InputError::new(file, "spec.priorityClassName", e))?;
                let old = self.rec(uid).info.clone();
                let scaled_down =
                    info.requests.cpu_milli < old.requests.cpu_milli || info.requests.memory < old.requests.memory;
                let info = Arc::new(info);
                self.snap.prepare_pod(&info);
                let state = self.rec(uid).state;
                {
                    let rec = self.rec_mut(uid);
                    rec.info = info.clone();
                    rec.template = Arc::new(p);
                }
                match state {
                    PodState::Queued => {
                        let profile = self.rec(uid).profile;
                        if self.frameworks[profile].run_pre_enqueue(&info).is_success()
                            && self.queue.remove_gate(uid, now)
                        {
                            self.trace(now, uid, "ungated", |_| serde_json::Value::Null);
                        } else {
                            self.queue.on_event(ClusterEvent::UnscheduledPodUpdate { pod: uid }, now);
                        }
                    }
                    PodState::Assumed(node) | PodState::Bound(node) => {
                        self.snap.unplace_pod(uid);
                        self.snap.place_pod(info, node).map_err(|e| InputError::new(file, "metadata.name", e))?;
                        let idx = self.snap.nodes.idx_of(node).map_or(u32::MAX, |n| n.0);
                        self.queue.on_event(
                            ClusterEvent::AssignedPodUpdate { pod: uid, node: idx, resources_scaled_down: scaled_down },
                            now,
                        );
                    }
                    PodState::Deleted => {}
                }
            }
            other => {
                // Objects the scheduler reads as a whole (services, PDBs, namespaces) are replaced.
                crate::cluster::register_object(&mut self.snap, other);
            }
        }
        Ok(())
    }

    /// The end of a wait that upstream's harness would fail: what is missing, and why.
    fn wait_failure(&self, what: &str, pending: &[&PodRec], total: usize, timed_out: bool) -> RunError {
        let mut reasons: Vec<(&String, &u64)> = self.unschedulable_reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1));
        let why = match reasons.first() {
            Some((r, _)) => format!("the most frequent unschedulable reason was: {r}"),
            None if pending.iter().any(|r| !r.info.scheduling_gates.is_empty()) => {
                "pods still have scheduling gates".to_string()
            }
            None => "no scheduling attempt failed; the pods were never attempted".to_string(),
        };
        let example = pending.first().map(|r| format!(" (first: {}/{})", r.namespace, r.info.name)).unwrap_or_default();
        let how = if timed_out {
            "after upstream's 10-minute wait".to_string()
        } else {
            "and nothing more could happen (upstream's harness would time out after 10 minutes)".to_string()
        };
        RunError::Failed(format!(
            "op {} ({what}): {} of {total} pods not done {how}{example}; {why}",
            self.op_index,
            pending.len()
        ))
    }

    // ---- the scheduling loop ---------------------------------------------------------------

    /// Schedules the next pod from the active queue. Returns false when the queue has none ready.
    fn schedule_next(&mut self) -> bool {
        let now = self.now();
        let Some(qp) = self.queue.pop(now) else { return false };
        let uid = qp.uid;
        if self.rec(uid).state != PodState::Queued {
            self.queue.done(uid);
            return true;
        }
        let profile = self.rec(uid).profile;
        let info = self.rec(uid).info.clone();
        let t0 = Instant::now();
        // A measured pod's cycle runs inside the wrapper callgrind counts (`--measure instructions`).
        let result = if self.rec(uid).measured {
            crate::instructions::measured_attempt(|| {
                self.engine.schedule_one_nominated(&self.frameworks[profile], &mut self.snap, &info)
            })
        } else {
            self.engine.schedule_one_nominated(&self.frameworks[profile], &mut self.snap, &info)
        };
        let cycle_nanos = t0.elapsed().as_nanos() as u64;
        if let Some(v) = &self.vclock {
            // Virtual time moves by the modelled cost, never by the measured one, so the run replays;
            // the agent's stages that came due during the cycle fire now, not at the next idle moment.
            let evaluated = match &result {
                CycleResult::Scheduled { evaluated_nodes, .. } => *evaluated_nodes,
                CycleResult::Unschedulable(diag) => diag.failures.len(),
                CycleResult::Error(_) => 0,
            };
            v.advance_by(self.cycle_cost.cycle_nanos(evaluated));
            self.agent.advance_to(v.now_nanos());
        }
        let now = self.now();
        self.counters.attempts += 1;
        self.rec_mut(uid).attempts = qp.attempts;
        if qp.attempts > 1 {
            self.counters.retries += 1;
        }
        self.hist.record("attempt", cycle_nanos);
        match result {
            CycleResult::Scheduled { node, .. } => {
                self.hist.record("attempt.scheduled", cycle_nanos);
                let node_sym = self.snap.nodes.name[node.ix()];
                self.snap.clear_nomination(uid);
                self.snap.place_pod(info.clone(), node_sym).expect("the chosen node exists and the pod is not placed");
                let r = self.cache.assume(uid, node_sym.0);
                self.note_cache(r);
                // Reserve and Permit end the scheduling cycle, as `schedulingCycle` runs them.
                let permit_wait = match self.reserve_and_permit(uid, profile, node, &qp, now) {
                    Some(w) => w,
                    None => return true,
                };
                self.queue.done(uid);
                let rec = self.rec_mut(uid);
                rec.state = PodState::Assumed(node_sym);
                rec.unschedulable = false;
                rec.scheduled_nanos = Some(now);
                self.binds_in_flight += 1;
                let node_name = self.snap.interner.resolve(node_sym).to_string();
                self.trace(now, uid, "assumed", |_| serde_json::json!({"node": node_name, "attempt": qp.attempts}));
                let mut job = BindJob::new(self.agent_pod(uid, &node_name)).with_profile(profile);
                if let Some(t) = permit_wait {
                    job = job.with_permit_wait(t);
                }
                if self.binder.is_some() {
                    if self.bind_batch.is_empty() {
                        self.bind_batch_since_nanos = now;
                    }
                    self.bind_batch.push(job);
                    if self.bind_batch.len() >= BIND_BATCH_PODS
                        || now.saturating_sub(self.bind_batch_since_nanos) >= BIND_BATCH_MAX_DELAY_NANOS
                    {
                        self.flush_binds();
                    }
                } else if let Some(t) = permit_wait {
                    self.parked.push((now.saturating_add(t.as_nanos() as u64), job));
                } else {
                    self.bind_inline(job);
                }
                self.apply_permit_decisions(profile);
            }
            CycleResult::Unschedulable(diag) => {
                self.hist.record("attempt.unschedulable", cycle_nanos);
                self.counters.unschedulable += 1;
                let fw = &self.frameworks[profile];
                let cx = CycleCx { snap: &self.snap, pod: &info };
                let fit_msg = diag.message(fw, cx, &CycleState::new());
                let rejectors = self.queue_ids(profile, &diag.rejector_plugins());
                let record_reason = self.rec(uid).attempts <= 1 || !self.rec(uid).unschedulable;
                self.rec_mut(uid).unschedulable = true;
                // PostFilter (the profile's plugins; DefaultPreemption nominates a node and evicts
                // victims through the agent).
                let post = if self.rec(uid).measured {
                    crate::instructions::measured_post_filter(|| {
                        self.engine.post_filter(&self.frameworks[profile], &mut self.snap, &info, &diag)
                    })
                } else {
                    self.engine.post_filter(&self.frameworks[profile], &mut self.snap, &info, &diag)
                };
                // When preemption does nothing, upstream's message carries its reasons after the
                // filters' ("... 2 Too many pods. preemption: 0/3 nodes are available: ..."). The
                // dry run that words them is only paid for when the message is recorded.
                let msg = match &post {
                    Err(_) if record_reason || self.events_out.is_some() => {
                        match self.engine.preemption_failure_message(
                            &self.frameworks[profile],
                            &mut self.snap,
                            &info,
                            &diag,
                        ) {
                            Some(p) => format!("{fit_msg} preemption: {p}"),
                            None => fit_msg,
                        }
                    }
                    _ => fit_msg,
                };
                if record_reason {
                    *self.unschedulable_reasons.entry(msg.clone()).or_default() += 1;
                }
                self.trace(now, uid, "attempt", |_| serde_json::json!({"result": "unschedulable", "message": msg}));
                let mut now = now;
                if let Ok(pre) = post {
                    self.counters.preemptions += 1;
                    self.counters.preemption_victims += pre.victims.len() as u64;
                    let node = self.snap.interner.resolve(pre.node).to_string();
                    let names: Vec<String> = pre.victims.iter().map(|v| v.name.clone()).collect();
                    self.trace(now, uid, "nominated", |_| serde_json::json!({"node": node, "victims": names}));
                    self.rec_mut(uid).info = pre.pod;
                    let victims: Vec<PodUid> = pre
                        .victims
                        .iter()
                        .map(|v| v.uid)
                        .filter(|v| v.0 >= 1 && v.0 as usize <= self.pods.len())
                        .collect();
                    now = self.actuate_preemption(uid, victims, now);
                }
                self.queue.add_unschedulable(qp, PluginSet::of(&rejectors), now);
            }
            CycleResult::Error(st) => {
                self.hist.record("attempt.error", cycle_nanos);
                self.counters.errors += 1;
                self.trace(now, uid, "attempt", |_| serde_json::json!({"result": "error", "reasons": st.reasons}));
                self.queue.add_backoff(qp, now);
            }
        }
        true
    }

    /// Deletes a preemptor's victims as SchedulerAsyncPreemption says; returns the time the
    /// preemptor's failure handling continues at. Off (upstream's `prepareCandidate`): PostFilter
    /// deletes them before it returns, and in virtual time the cycle pays for the calls. On
    /// (`prepareCandidateAsync`): the cycle ends at once, the preemptor is marked as preempting,
    /// and [`Driver::fire_preemptions`] deletes the victims when their calls are done.
    fn actuate_preemption(&mut self, preemptor: PodUid, mut victims: Vec<PodUid>, now: u64) -> u64 {
        if victims.is_empty() {
            return now;
        }
        if !self.async_preemption {
            let mut now = now;
            if let Some(v) = &self.vclock {
                v.advance_by(victim_deletion_nanos(victims.len()));
                self.agent.advance_to(v.now_nanos());
                now = self.now();
            }
            for v in victims {
                self.trace(now, v, "preempted", |d| serde_json::json!({"by": d.key_of(preemptor)}));
                self.delete_pod(v);
            }
            return now;
        }
        let last = victims.pop().expect("not empty");
        let first_due_nanos = now + victim_deletion_nanos(victims.len());
        let last_due_nanos = first_due_nanos + victim_deletion_nanos(1);
        self.queue.set_preempting(preemptor, true);
        self.preemptions.push(Preemption { preemptor, first_due_nanos, first: victims, last_due_nanos, last });
        now
    }

    /// Deletes the victims of asynchronous preemptions whose calls are done by now; when the last
    /// victim goes, the preemptor's PreEnqueue passes again (before the deletion's event, which
    /// upstream's PreEnqueue sees with the victim already gone).
    fn fire_preemptions(&mut self) {
        let now = self.now();
        let mut i = 0;
        while i < self.preemptions.len() {
            let p = &mut self.preemptions[i];
            let (preemptor, last) = (p.preemptor, p.last);
            if p.first_due_nanos <= now && !p.first.is_empty() {
                for v in std::mem::take(&mut p.first) {
                    self.trace(now, v, "preempted", |d| serde_json::json!({"by": d.key_of(preemptor)}));
                    self.delete_pod(v);
                }
            }
            if self.preemptions[i].last_due_nanos <= now {
                self.preemptions.swap_remove(i);
                self.queue.set_preempting(preemptor, false);
                self.trace(now, last, "preempted", |d| serde_json::json!({"by": d.key_of(preemptor)}));
                self.delete_pod(last);
                continue;
            }
            i += 1;
        }
    }

    /// The queue's plugin ids of `plugins` of `profile` (see [`Driver::hint_base`]); ids past the
    /// queue's 64 share the last one, which has no hint (a rejection there requeues on any event).
    fn queue_ids(&self, profile: usize, plugins: &[PluginId]) -> Vec<u8> {
        plugins.iter().map(|&p| (self.hint_base[profile] + p).min(63) as u8).collect()
    }

    /// Reserve, then Permit, for a pod just assumed on `node` (`schedulingCycle` after assume).
    /// `Some(wait)`: the binding cycle goes ahead, first waiting on Permit for `wait` if set.
    /// `None`: a Reserve failure or a Permit rejection; Unreserve ran (every Reserve plugin, in
    /// reverse order), the pod is forgotten and back in the queue (unschedulable with the plugin
    /// as rejector, or backing off after an error), as upstream's failure handler does.
    fn reserve_and_permit(
        &mut self,
        uid: PodUid,
        profile: usize,
        node: NodeIdx,
        qp: &QueuedPod<()>,
        now: u64,
    ) -> Option<Option<Duration>> {
        let fw = &self.frameworks[profile];
        if fw.reserve.is_empty() && fw.permit.is_empty() {
            return Some(None);
        }
        let info = self.rec(uid).info.clone();
        let fw = &self.frameworks[profile];
        let cx = CycleCx { snap: &self.snap, pod: &info };
        let state = &mut self.engine.state;
        let st = fw.run_reserve(cx, state, node);
        let (stage, st) = if !st.is_success() {
            ("Reserve", st)
        } else {
            match fw.run_permit(cx, state, node, &mut self.waiting[profile]) {
                PermitOutcome::Allow => return Some(None),
                PermitOutcome::Wait(t) => {
                    self.waiting[profile].add(uid);
                    return Some(Some(t));
                }
                PermitOutcome::Reject(st) => ("Permit", st),
            }
        };
        fw.run_unreserve(cx, state, node);
        let rejector = fw.plugins.iter().position(|p| p.name() == st.plugin);
        self.snap.unplace_pod(uid);
        let r = self.cache.forget(uid);
        self.note_cache(r);
        let msg = st.reasons.join(", ");
        self.trace(
            now,
            uid,
            "attempt",
            |_| serde_json::json!({"result": "rejected", "stage": stage, "plugin": st.plugin, "message": msg}),
        );
        let mut requeued = qp.clone();
        if st.code.is_rejection() {
            self.counters.unschedulable += 1;
            let record_reason = qp.attempts <= 1 || !self.rec(uid).unschedulable;
            self.rec_mut(uid).unschedulable = true;
            if record_reason {
                let reason = format!("0/1 nodes are available: {}.", st.reasons.join(", "));
                *self.unschedulable_reasons.entry(reason).or_default() += 1;
            }
            let ids = self.queue_ids(profile, rejector.as_slice());
            self.queue.add_unschedulable(requeued, PluginSet::of(&ids), now);
        } else {
            self.counters.errors += 1;
            requeued.timestamp_nanos = now;
            self.queue.add_backoff(requeued, now);
        }
        // A rejecting Permit plugin may have decided about waiting pods too.
        self.apply_permit_decisions(profile);
        None
    }

    /// Applies what Permit plugins decided about waiting pods: an allowed pod goes on to bind, a
    /// rejected one fails its binding cycle (Unreserve, forget, requeue).
    fn apply_permit_decisions(&mut self, profile: usize) {
        let (allowed, rejected) = self.waiting[profile].take_decisions();
        if allowed.is_empty() && rejected.is_empty() {
            return;
        }
        if let Some(b) = self.binder.clone() {
            // A waiting pod may still be in the batch: the binder must hold it to release it.
            self.flush_binds();
            for uid in allowed {
                b.allow(uid);
            }
            for (uid, msg) in rejected {
                b.reject(uid, &msg);
            }
            return;
        }
        for uid in allowed {
            if let Some(i) = self.parked.iter().position(|(_, j)| j.pod.uid == uid) {
                let (_, job) = self.parked.remove(i);
                self.bind_inline(job);
            }
        }
        for (uid, msg) in rejected {
            if let Some(i) = self.parked.iter().position(|(_, j)| j.pod.uid == uid) {
                self.parked.remove(i);
                self.on_bind_failed(uid, &msg);
            }
        }
    }

    /// Virtual time: fails the pods whose Permit wait has run out by now (the binder's permit
    /// timer in wall-clock time).
    fn expire_permits(&mut self) {
        let now = self.now();
        while let Some(i) = self.parked.iter().position(|(deadline, _)| *deadline <= now) {
            let (_, job) = self.parked.remove(i);
            let timeout = job.permit_wait.unwrap_or_default();
            self.on_bind_failed(job.pod.uid, &format!("rejected due to timeout after waiting {timeout:?} at permit"));
        }
    }

    /// The earliest Permit deadline of a parked pod (virtual time).
    fn next_permit_deadline_nanos(&self) -> Option<u64> {
        self.parked.iter().map(|(d, _)| *d).min()
    }

    /// The binding cycle on this thread (virtual time): PreBind and Bind plugins, then the bind
    /// through the agent, whose `Bound` event ends it (PostBind in [`Driver::on_bound`]).
    fn bind_inline(&mut self, job: BindJob) {
        let result = self.binding.pre_bind(&job).and_then(|()| self.binding.bind(&job));
        match result {
            Ok(()) => self.agent.bind(job.pod),
            Err(reason) => self.on_bind_failed(job.pod.uid, &reason),
        }
    }

    /// Hands the batched assumed pods to the binder. Tokens come back only when this thread reads
    /// the agent's events, so it reads them while the batch would not fit in the in-flight bound.
    fn flush_binds(&mut self) {
        let Some(b) = self.binder.clone() else { return };
        if self.bind_batch.is_empty() {
            return;
        }
        let n = self.bind_batch.len().min(b.max_in_flight());
        while b.in_flight() + n > b.max_in_flight() {
            match self.agent_events.recv_timeout(Duration::from_millis(20)) {
                Ok(ev) => self.handle_agent_event(ev),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            }
        }
        let batch = std::mem::take(&mut self.bind_batch);
        if batch.len() <= n {
            b.submit_batch(batch);
        } else {
            // Larger than the whole bound: one pod at a time, reading events in between.
            for job in batch {
                self.bind_batch.push(job);
                self.flush_binds();
            }
        }
    }

    fn agent_pod(&self, uid: PodUid, node: &str) -> AgentPod {
        let rec = self.rec(uid);
        let t = &rec.template;
        let cs = |c: &api::Container| ContainerSpec {
            name: c.name.clone(),
            image: c.image.clone(),
            command: c.command.clone(),
            args: c.args.clone(),
            sidecar: c.restart_policy.as_deref() == Some("Always"),
        };
        AgentPod {
            uid,
            namespace: rec.namespace.clone(),
            name: rec.info.name.clone(),
            node: node.to_string(),
            labels: t.metadata.labels.clone(),
            host_network: t.spec.host_network,
            init_containers: t.spec.init_containers.iter().map(cs).collect(),
            containers: t.spec.containers.iter().map(cs).collect(),
        }
    }

    fn on_bound(&mut self, uid: PodUid, at_nanos: u64) {
        let PodState::Assumed(node) = self.rec(uid).state else { return };
        self.binds_in_flight -= 1;
        // With a binder, the binder finished the binding cycle in the cache (FinishBinding).
        if self.binder.is_none() {
            let r = self.cache.finish_binding(uid);
            self.note_cache(r);
            let rec = self.rec(uid);
            let fw = &self.frameworks[rec.profile];
            if !fw.post_bind.is_empty() {
                let node = self.snap.interner.resolve(node);
                fw.run_post_bind(&BindingPod { uid, namespace: &rec.namespace, name: &rec.info.name, node });
            }
        }
        let rec = self.rec_mut(uid);
        rec.state = PodState::Bound(node);
        rec.bound_nanos = Some(at_nanos);
        let (created, measured) = (rec.created_nanos, rec.measured);
        self.counters.scheduled += 1;
        if measured {
            self.hist.record("e2e", at_nanos.saturating_sub(created));
            self.measured_bind_nanos.push(at_nanos);
            if let Some(pb) = &self.progress {
                pb.inc(1);
            }
        }
        if let Some(s) = self.rec(uid).scheduled_nanos {
            self.hist.record("stage.scheduled_to_bound", at_nanos.saturating_sub(s));
            self.hist.record("stage.created_to_scheduled", s.saturating_sub(created));
        }
        let idx = self.snap.nodes.idx_of(node).map_or(u32::MAX, |n| n.0);
        let now = self.now();
        self.queue.on_event(ClusterEvent::AssignedPodAdd { pod: uid, node: idx }, now);
        self.trace(at_nanos, uid, "bound", |d| serde_json::json!({"node": d.snap.interner.resolve(node)}));
    }

    fn on_bind_failed(&mut self, uid: PodUid, reason: &str) {
        let PodState::Assumed(node) = self.rec(uid).state else { return };
        self.binds_in_flight -= 1;
        self.counters.bind_failures += 1;
        // `handleBindingCycleError`: Unreserve (every Reserve plugin, in reverse), then forget.
        let profile = self.rec(uid).profile;
        self.waiting[profile].remove(uid);
        if let Some(idx) = self.snap.nodes.idx_of(node) {
            let info = self.rec(uid).info.clone();
            let mut state = CycleState::new();
            self.frameworks[profile].run_unreserve(CycleCx { snap: &self.snap, pod: &info }, &mut state, idx);
        }
        // With a binder, the binder forgot the pod in the cache when its binding cycle failed.
        if self.binder.is_none() {
            let r = self.cache.forget(uid);
            self.note_cache(r);
        }
        self.snap.unplace_pod(uid);
        let now = self.now();
        let idx = self.snap.nodes.idx_of(node).map_or(u32::MAX, |n| n.0);
        self.queue.on_event(ClusterEvent::AssignedPodDelete { pod: uid, node: idx }, now);
        let rec = self.rec_mut(uid);
        rec.state = PodState::Queued;
        let (priority, attempts) = (rec.info.priority, rec.attempts);
        self.trace(now, uid, "bindFailed", |_| serde_json::json!({"reason": reason}));
        let mut qp = QueuedPod::new(uid, priority, ());
        qp.attempts = attempts;
        qp.timestamp_nanos = now;
        self.queue.add_backoff(qp, now);
    }

    fn on_agent_event(&mut self, ev: AgentEvent) {
        let uid = ev.uid;
        if uid.0 == 0 || uid.0 as usize > self.pods.len() {
            return;
        }
        match ev.kind {
            AgentEventKind::Bound => {
                if self.binder.is_none() {
                    self.on_bound(uid, ev.at_nanos)
                }
            }
            AgentEventKind::BindFailed(reason) => {
                if self.binder.is_none() {
                    self.on_bind_failed(uid, &reason)
                }
            }
            AgentEventKind::Running => {
                self.trace(ev.at_nanos, uid, "running", |_| serde_json::Value::Null);
                let rec = self.rec_mut(uid);
                if rec.running_nanos.is_none() {
                    rec.running_nanos = Some(ev.at_nanos);
                    let (created, bound, measured) = (rec.created_nanos, rec.bound_nanos, rec.measured);
                    if measured {
                        self.hist.record("startup", ev.at_nanos.saturating_sub(created));
                    }
                    if let Some(b) = bound {
                        self.hist.record("stage.bound_to_running", ev.at_nanos.saturating_sub(b));
                    }
                }
            }
            AgentEventKind::Evicted(reason) => {
                if matches!(self.rec(uid).state, PodState::Bound(_) | PodState::Assumed(_)) {
                    self.counters.evictions += 1;
                    let template = self.rec(uid).template.clone();
                    let ns = self.rec(uid).namespace.clone();
                    self.trace(ev.at_nanos, uid, "evicted", |_| serde_json::json!({"reason": reason}));
                    self.delete_pod(uid);
                    // A controller recreates evicted pods.
                    let _ = self.create_pod(template, &ns, "<eviction>");
                }
            }
            AgentEventKind::Failed(reason) => {
                self.rec_mut(uid).failed = true;
                self.trace(ev.at_nanos, uid, "failed", |_| serde_json::json!({"reason": reason}));
            }
            AgentEventKind::SandboxReady | AgentEventKind::ContainersStarted | AgentEventKind::Deleted => {}
        }
    }

    fn drain(&mut self) -> bool {
        let mut any = self.drain_bind_results();
        while let Ok(ev) = self.agent_events.try_recv() {
            any = true;
            self.handle_agent_event(ev);
        }
        any
    }

    fn drain_bind_results(&mut self) -> bool {
        self.drain_bind_results_at(None)
    }

    /// Handles finished binding cycles; `at_nanos` is when the agent reported the outcome (else now).
    fn drain_bind_results_at(&mut self, at_nanos: Option<u64>) -> bool {
        let mut any = false;
        while let Ok(r) = self.bind_results.try_recv() {
            any = true;
            let at = at_nanos.unwrap_or_else(|| self.now());
            match r.outcome {
                BindOutcome::Bound => self.on_bound(r.job.pod.uid, at),
                BindOutcome::Failed { reason, .. } => self.on_bind_failed(r.job.pod.uid, &reason),
            }
        }
        any
    }

    /// One event from the agent. The scheduling thread is the binder's event reader (a router
    /// thread would be one more hand-off per pod on two cores): an event that ends a binding cycle
    /// makes the binder finish it (FinishBinding, PostBind) and send its result, which is handled
    /// before the event itself so that `Bound` precedes `Running`.
    fn handle_agent_event(&mut self, ev: AgentEvent) {
        if let Some(b) = &self.binder {
            if b.on_agent_event(&ev) {
                // The pod was bound when the agent said so, not when this thread got to it.
                self.drain_bind_results_at(Some(ev.at_nanos));
            }
        }
        self.on_agent_event(ev);
    }

    fn fire_churn(&mut self) -> Result<(), InputError> {
        self.fire_deleters();
        self.fire_preemptions();
        let now = self.now();
        for ci in 0..self.churners.len() {
            while self.churners[ci].next_nanos <= now {
                let c = &mut self.churners[ci];
                c.next_nanos += c.interval_nanos.max(1);
                if !c.recreate && c.number > 0 && c.created >= c.number {
                    continue;
                }
                c.created += 1;
                let (templates, ns, recreate, number) =
                    (c.templates.clone(), c.namespace.clone(), c.recreate, c.number);
                for (ti, path) in templates.iter().enumerate() {
                    if recreate && self.churners[ci].alive[ti].len() as u64 >= number.max(1) {
                        match self.churners[ci].alive[ti].pop_front() {
                            Some(ChurnObject::Pod(uid)) => self.delete_pod(uid),
                            Some(ChurnObject::Node(name)) => self.delete_node(&name),
                            _ => {}
                        }
                    }
                    let idx = self.churners[ci].created;
                    let objs = self.templates.instantiate(path, idx, number, &BTreeMap::new())?;
                    let file = path.display().to_string();
                    for o in objs.iter() {
                        let made = self.create_object(o, Some(&ns), &file)?;
                        self.churners[ci].alive[ti].push_back(made);
                    }
                }
            }
        }
        Ok(())
    }

    fn next_churn_nanos(&self) -> Option<u64> {
        let churn = self.churners.iter().map(|c| c.next_nanos).min();
        let del = self.deleters.iter().filter(|d| !d.2.is_empty()).map(|d| d.0).min();
        let preemption = self
            .preemptions
            .iter()
            .map(|p| if p.first.is_empty() { p.last_due_nanos } else { p.first_due_nanos })
            .min();
        [churn, del, preemption].into_iter().flatten().min()
    }

    fn fire_deleters(&mut self) {
        let now = self.now();
        for i in 0..self.deleters.len() {
            while self.deleters[i].0 <= now {
                let Some(uid) = self.deleters[i].2.pop_front() else { break };
                self.deleters[i].0 += self.deleters[i].1;
                self.delete_pod(uid);
            }
        }
        self.deleters.retain(|d| !d.2.is_empty());
    }

    /// Runs the loop until `done` holds, the deadline passes, or nothing more can happen.
    fn run_until(&mut self, deadline: Option<u64>, done: &dyn Fn(&Driver) -> bool) -> Result<(), RunError> {
        let progress = |d: &Driver| d.counters.scheduled + d.counters.bind_failures + d.deleted;
        let (mut last_progress, mut last_progress_at) = (progress(self), self.now());
        let started = self.now();
        loop {
            self.drain();
            self.expire_permits();
            self.fire_churn()?;
            let now = self.now();
            if done(self) || deadline.is_some_and(|d| now >= d) {
                return Ok(());
            }
            if deadline.is_none() && now.saturating_sub(started) >= UPSTREAM_WAIT_TIMEOUT_NANOS {
                return Ok(());
            }
            // An open-ended wait ends when nothing was bound or deleted for a while: the pods still
            // waited for cannot be scheduled (background churn alone keeps the loop busy).
            if progress(self) != last_progress {
                (last_progress, last_progress_at) = (progress(self), now);
            } else if deadline.is_none() && now.saturating_sub(last_progress_at) > NO_PROGRESS_WAIT_NANOS {
                return Ok(());
            }
            if self.schedule_next() {
                continue;
            }
            // Idle: nothing is ready to schedule.
            self.flush_binds();
            let lens = self.queue.lens();
            let stalled = self.binds_in_flight == 0
                && lens.active == 0
                && lens.backoff == 0
                && self.preemptions.is_empty()
                && deadline.is_none();
            if stalled && !self.drain() {
                return Ok(());
            }
            let mut wake =
                [self.queue.next_wakeup_nanos(), self.next_churn_nanos(), self.next_permit_deadline_nanos(), deadline]
                    .into_iter()
                    .flatten()
                    .min();
            match &self.vclock {
                Some(v) => {
                    if let Some(a) = self.agent.next_due_nanos() {
                        wake = Some(wake.map_or(a, |w| w.min(a)));
                    }
                    match wake {
                        Some(t) => {
                            v.advance_to(t);
                            self.agent.advance_to(t);
                        }
                        None => return Ok(()),
                    }
                }
                None => {
                    let now = self.now();
                    let timeout =
                        wake.map_or(Duration::from_millis(20), |w| Duration::from_nanos(w.saturating_sub(now)));
                    let timeout = timeout.min(Duration::from_millis(20));
                    crossbeam_channel::select! {
                        recv(self.bind_results) -> r => if let Ok(r) = r {
                            let at = self.now();
                            match r.outcome {
                                BindOutcome::Bound => self.on_bound(r.job.pod.uid, at),
                                BindOutcome::Failed { reason, .. } => self.on_bind_failed(r.job.pod.uid, &reason),
                            }
                        },
                        recv(self.agent_events) -> e => if let Ok(e) = e { self.handle_agent_event(e) },
                        default(timeout) => {},
                    }
                }
            }
        }
    }

    fn pods_settled(&self, pred: &dyn Fn(&PodRec) -> bool, attempted_only: bool) -> bool {
        self.pods.iter().filter(|r| pred(r)).all(|r| match r.state {
            PodState::Bound(_) | PodState::Deleted => true,
            // A gated pod has been seen by the scheduler (PodScheduled=False, reason SchedulingGated).
            PodState::Queued => attempted_only && (r.attempts > 0 || !r.info.scheduling_gates.is_empty()),
            PodState::Assumed(_) => attempted_only,
        })
    }

    // ---- ops -------------------------------------------------------------------------------

    fn run_op(&mut self, op: &ResolvedOp) -> Result<(), RunError> {
        match op {
            ResolvedOp::CreateNodes {
                count,
                node_template_path,
                node_allocatable_strategy,
                label_node_prepare_strategy,
                unique_node_label_strategy,
                template_params,
            } => {
                let file =
                    node_template_path.as_ref().map_or("<default node>".to_string(), |p| p.display().to_string());
                for i in 0..*count {
                    let mut node = match node_template_path {
                        Some(p) => self.templates.node(p, i, *count, template_params)?,
                        None => default_node(),
                    };
                    if let Some(s) = label_node_prepare_strategy {
                        if let Some((k, v)) = label_node_prepare(i, s) {
                            node.metadata.labels.insert(k.to_string(), v.to_string());
                        }
                    }
                    if let Some(s) = unique_node_label_strategy {
                        let (k, v) = unique_node_label(self.nodes_created, s);
                        node.metadata.labels.insert(k.to_string(), v);
                    }
                    if let Some(s) = node_allocatable_strategy {
                        // The apiserver defaults allocatable to capacity; upstream's strategy then adds
                        // its keys to that (`NodeAllocatableStrategy.PrepareNode`).
                        if node.status.allocatable.is_empty() {
                            node.status.allocatable = node.status.capacity.clone();
                        }
                        let base: BTreeMap<String, String> =
                            node.status.allocatable.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
                        for (k, v) in apply_node_allocatable(&base, s) {
                            let q = api::Quantity::parse(&v).map_err(|e| {
                                InputError::new(&file, format!("nodeAllocatableStrategy.nodeAllocatable.{k}"), e)
                            })?;
                            node.status.allocatable.insert(k, q);
                        }
                    }
                    self.create_node(node, &file)?;
                }
            }
            ResolvedOp::CreateNamespaces { prefix, count, namespace_template_path } => {
                for i in 0..*count {
                    let mut ns = api::Namespace::default();
                    if let Some(p) = namespace_template_path {
                        if let Some(Object::Namespace(n)) =
                            self.templates.instantiate(p, i, *count, &BTreeMap::new())?.first()
                        {
                            ns = n.clone();
                        }
                    }
                    ns.metadata.name = format!("{prefix}-{i}");
                    crate::cluster::register_object(&mut self.snap, &Object::Namespace(ns.clone()));
                    self.cluster.namespaces.push(ns);
                }
            }
            ResolvedOp::CreatePods {
                count,
                namespace,
                pod_template_path,
                collect_metrics,
                skip_wait_to_completion,
                steady_state,
                duration,
                template_params,
                ..
            } => {
                if *collect_metrics {
                    self.window = Window { open: true, namespaces: vec![namespace.clone()], start_nanos: None };
                    if let Some(pb) = &self.progress {
                        pb.set_length(*count);
                        pb.set_position(0);
                    }
                }
                let file = pod_template_path.as_ref().map_or("<default pod>".to_string(), |p| p.display().to_string());
                let mut uids = Vec::with_capacity(*count as usize);
                for i in 0..*count {
                    let t = match pod_template_path {
                        Some(p) => self.templates.pod(p, i, *count, template_params)?,
                        None => default_pod(),
                    };
                    uids.push(self.create_pod(t, namespace, &file)?);
                    // Keep scheduling while creating, as the scheduler runs alongside the creator.
                    if i % 64 == 63 {
                        self.drain();
                        while self.schedule_next() {}
                        self.flush_binds();
                    }
                }
                if *steady_state {
                    let end = self.now() + duration.unwrap_or_default().as_nanos() as u64;
                    let tmpl = pod_template_path.clone();
                    while self.now() < end {
                        self.run_until(Some(end.min(self.now() + 5_000_000)), &|_| false)?;
                        // Bound pods finish and are replaced, keeping `count` pods in the namespace.
                        for (j, slot) in uids.iter_mut().enumerate() {
                            if matches!(self.pods[(slot.0 - 1) as usize].state, PodState::Bound(_)) {
                                self.delete_pod(*slot);
                                let t = match &tmpl {
                                    Some(p) => self.templates.pod(p, j as u64, *count, template_params)?,
                                    None => default_pod(),
                                };
                                *slot = self.create_pod(t, namespace, &file)?;
                            }
                        }
                    }
                } else if !*skip_wait_to_completion {
                    let set: ahash::AHashSet<PodUid> = uids.iter().copied().collect();
                    let start = self.now();
                    self.run_until(None, &|d: &Driver| d.pods_settled(&|r: &PodRec| set.contains(&r.info.uid), false))?;
                    let pending: Vec<&PodRec> = uids
                        .iter()
                        .map(|u| self.rec(*u))
                        .filter(|r| matches!(r.state, PodState::Queued | PodState::Assumed(_)))
                        .collect();
                    if !pending.is_empty() {
                        let timed_out = self.now().saturating_sub(start) >= UPSTREAM_WAIT_TIMEOUT_NANOS;
                        let err = self.wait_failure(
                            &format!("createPods in namespace {namespace} waits for its pods to be scheduled"),
                            &pending,
                            uids.len(),
                            timed_out,
                        );
                        let not_done = pending.len();
                        self.failed_wait = Some(FailedWait { op: self.op_index, waited_for: uids.len(), not_done });
                        return Err(err);
                    }
                }
                if *collect_metrics {
                    self.window.open = false;
                }
            }
            ResolvedOp::DeletePods { namespace, label_selector, skip_wait_to_completion, delete_pods_per_second } => {
                let targets: Vec<PodUid> = self
                    .pods
                    .iter()
                    .filter(|r| r.state != PodState::Deleted && &r.namespace == namespace)
                    .filter(|r| label_selector.iter().all(|(k, v)| r.template.metadata.labels.get(k) == Some(v)))
                    .map(|r| r.info.uid)
                    .collect();
                let gap = if *delete_pods_per_second > 0 { 1_000_000_000 / delete_pods_per_second } else { 0 };
                if *skip_wait_to_completion && gap > 0 {
                    // Deletion goes on in the background while the next ops run, as upstream.
                    self.deleters.push((self.now(), gap, targets.into_iter().collect()));
                    return Ok(());
                }
                for uid in targets {
                    if gap > 0 {
                        let until = self.now() + gap;
                        self.run_until(Some(until), &|_| false)?;
                    }
                    self.delete_pod(uid);
                }
                if !*skip_wait_to_completion {
                    self.drain();
                }
            }
            ResolvedOp::Churn { mode, number, interval_ms, namespace, template_paths } => {
                let now = self.now();
                self.churners.push(Churner {
                    recreate: matches!(mode, crate::workload::spec::ChurnMode::Recreate),
                    number: *number,
                    interval_nanos: interval_ms * 1_000_000,
                    namespace: namespace.clone(),
                    templates: template_paths.clone(),
                    next_nanos: now,
                    created: 0,
                    alive: template_paths.iter().map(|_| VecDeque::new()).collect(),
                });
            }
            ResolvedOp::Barrier { namespaces, label_selector, stage_requirement } => {
                let attempted = matches!(stage_requirement, crate::workload::spec::StageRequirement::Attempted);
                let ns = namespaces.clone();
                let sel = label_selector.clone();
                let pred = move |r: &PodRec| {
                    r.created_by_run
                        && (ns.is_empty() || ns.contains(&r.namespace))
                        && sel.iter().all(|(k, v)| r.template.metadata.labels.get(k) == Some(v))
                };
                let start = self.now();
                self.run_until(None, &|d: &Driver| d.pods_settled(&pred, attempted))?;
                let matching: Vec<&PodRec> = self.pods.iter().filter(|r| pred(r)).collect();
                let pending: Vec<&PodRec> = matching
                    .iter()
                    .copied()
                    .filter(|r| match r.state {
                        PodState::Bound(_) | PodState::Deleted => false,
                        PodState::Queued => !(attempted && (r.attempts > 0 || !r.info.scheduling_gates.is_empty())),
                        PodState::Assumed(_) => !attempted,
                    })
                    .collect();
                if !pending.is_empty() {
                    let timed_out = self.now().saturating_sub(start) >= UPSTREAM_WAIT_TIMEOUT_NANOS;
                    let what = if attempted { "barrier: every pod attempted" } else { "barrier: every pod scheduled" };
                    let err = self.wait_failure(what, &pending, matching.len(), timed_out);
                    let (waited_for, not_done) = (matching.len(), pending.len());
                    self.failed_wait = Some(FailedWait { op: self.op_index, waited_for, not_done });
                    return Err(err);
                }
            }
            ResolvedOp::Sleep { duration } => {
                let until = self.now() + duration.as_nanos() as u64;
                self.run_until(Some(until), &|_| false)?;
            }
            ResolvedOp::StartCollectingMetrics { namespaces, .. } => {
                self.window = Window { open: true, namespaces: namespaces.clone(), start_nanos: None };
            }
            ResolvedOp::StopCollectingMetrics => {
                let measured: ahash::AHashSet<PodUid> =
                    self.pods.iter().filter(|r| r.measured).map(|r| r.info.uid).collect();
                self.run_until(None, &|d: &Driver| {
                    d.pods_settled(&|r: &PodRec| measured.contains(&r.info.uid), false)
                })?;
                self.window.open = false;
            }
            ResolvedOp::CreateAny { template_path, namespace, count, template_params } => {
                let file = template_path.display().to_string();
                for i in 0..*count {
                    let objs = self.templates.instantiate(template_path, i, *count, template_params)?;
                    for o in objs.iter() {
                        self.create_object(o, namespace.as_deref(), &file)?;
                    }
                }
            }
            ResolvedOp::UpdateAny { template_path, namespace, count, update_per_second, .. } => {
                let file = template_path.display().to_string();
                // As upstream's ticker: the first update one interval after the op starts.
                let gap = if *update_per_second > 0 { 1_000_000_000 / update_per_second } else { 0 };
                for i in 0..*count {
                    if gap > 0 {
                        let until = self.now() + gap;
                        self.run_until(Some(until), &|_| false)?;
                    }
                    let objs = self.templates.instantiate(template_path, i, *count, &BTreeMap::new())?;
                    for o in objs.iter() {
                        self.update_object(o, namespace.as_deref(), &file)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Runs one workload once and returns its report entry.
/// Registers the default queueing hints of every profile's plugins: profile `i`'s plugin `p` gets
/// queue id `base[i] + p` (while ids last; see [`Driver::queue_ids`]). Returns the bases.
pub(crate) fn register_hints(queue: &mut SchedulingQueue<()>, frameworks: &[Arc<Framework>]) -> Vec<usize> {
    let mut bases = Vec::with_capacity(frameworks.len());
    let mut next = 0;
    for fw in frameworks {
        bases.push(next);
        for (p, plugin) in fw.plugins.iter().enumerate() {
            if next + p >= 63 {
                break;
            }
            if let Some(h) = default_hint_fn::<()>(plugin.name()) {
                queue.register_hint((next + p) as u8, h);
            }
        }
        next += fw.plugins.len();
    }
    bases
}

pub fn run_workload(w: &ResolvedWorkload, opts: &RunOptions) -> Result<RunReport, RunError> {
    let config = match (&opts.config_override, &w.scheduler_config_path) {
        (Some(p), _) | (None, Some(p)) => SchedulerConfig::load(p)?,
        (None, None) => SchedulerConfig::defaults(),
    };
    run_workload_with(w, opts, &config, &[])
}

/// [`run_workload`] with a loaded `config` whose profiles may also name `extra` plugins (besides
/// the in-tree registry's): for tests and embedders with plugins of their own.
pub(crate) fn run_workload_with(
    w: &ResolvedWorkload,
    opts: &RunOptions,
    config: &SchedulerConfig,
    extra: &[Arc<dyn Plugin>],
) -> Result<RunReport, RunError> {
    let wall_start = Instant::now();
    let cpu_start = cpu_seconds();
    let (vclock, clock): (Option<Arc<VirtualClock>>, Arc<dyn Clock>) = if opts.virtual_time {
        let v = Arc::new(VirtualClock::new());
        (Some(v.clone()), v)
    } else {
        (None, Arc::new(WallClock::new()))
    };
    let cluster_file = opts.cluster.first().map(|p| p.display().to_string()).unwrap_or_default();
    // A cluster given as loaded objects (read once for every workload and repetition) or as paths.
    let cluster = match &opts.cluster_objects {
        Some(c) => (**c).clone(),
        None if opts.cluster.is_empty() => Cluster::default(),
        None => Cluster::load(&opts.cluster)?,
    };
    let mut uids = UidGen::default();
    let (mut snap, pending, _) = build_snapshot_counted(&cluster, &cluster_file, &mut uids)?;
    let mut frameworks = Vec::new();
    for profile in &config.profiles {
        let compiled = compile_args(&profile.args, &mut snap.interner, &config.source)?;
        let mut registry = crate::plugins::in_tree(&compiled);
        for p in extra {
            registry.register_instance(p.clone()).map_err(|e| InputError::new(&config.source, "profiles", e))?;
        }
        let fw = Framework::new(profile, &registry, &mut snap.interner)
            .map_err(|e| InputError::new(&config.source, "profiles", e))?;
        frameworks.push(Arc::new(fw));
    }
    let mut spread = Vec::new();
    for (profile, fw) in config.profiles.iter().zip(&frameworks) {
        use crate::plugins::podtopologyspread::{PodTopologySpread, NAME};
        let enabled = fw.plugins.iter().any(|p| p.name() == NAME);
        spread.push(if enabled {
            Some(
                PodTopologySpread::from_args(&profile.args.pod_topology_spread, &mut snap.interner)
                    .map_err(|e| InputError::new(&config.source, "profiles", e))?,
            )
        } else {
            None
        });
    }
    let gate = |name: &str| {
        w.feature_gates
            .get(name)
            .copied()
            .unwrap_or_else(|| crate::workload::gates::lookup(name).is_some_and(|g| g.default))
    };
    let mut queue = SchedulingQueue::new(
        config.pod_initial_backoff_seconds as u64 * 1_000_000_000,
        config.pod_max_backoff_seconds as u64 * 1_000_000_000,
    )
    .with_pop_from_backoff(gate("SchedulerPopFromBackoffQ"));
    // Every profile has the same QueueSort (the config checks it): the first one's order.
    if let Some(less) = frameworks[0].queue_sort_fn() {
        queue = queue.with_queue_sort(less);
    }
    let hint_base = register_hints(&mut queue, &frameworks);
    let (agent_tx, agent_rx) = crossbeam_channel::unbounded::<AgentEvent>();
    let agent: Arc<dyn NodeAgent> = match &opts.agent {
        AgentSpec::Sim(cfg) => {
            let mode = if opts.virtual_time { TimeMode::Virtual } else { TimeMode::Wall };
            Arc::new(SimAgent::new(cfg.clone().with_seed(opts.seed), agent_tx, clock.clone(), mode))
        }
        // An agent that cannot start (an endpoint that does not answer, images it lacks) is bad
        // input, as `cri check` says; a runtime that dies later is a runtime failure (exit 4).
        AgentSpec::Custom { factory, .. } => factory(agent_tx, clock.clone()).map_err(|e| {
            RunError::Input(InputError::new("--agent", "", format!("the node agent cannot start: {e}")))
        })?,
    };
    let cache = Arc::new(AssumeCache::new());
    let (results_tx, results_rx) = crossbeam_channel::unbounded::<BindResult>();
    let binding = Arc::new(FrameworkBinding::new(frameworks.clone()));
    let (binder, agent_events) = if opts.virtual_time {
        (None, agent_rx)
    } else {
        let b = Arc::new(Binder::start(
            opts.bind_workers.max(1),
            opts.max_binds_in_flight.max(1),
            agent.clone(),
            binding.clone(),
            Some(cache.clone()),
            results_tx.clone(),
        ));
        (Some(b), agent_rx)
    };
    // The workloads of one repetition append to one trace (`runner::cli` empties it first); a
    // `workload` line says where each starts.
    let events_out = match &opts.events_file {
        Some(p) => {
            let mut out = std::fs::OpenOptions::new().create(true).append(true).open(p).map(std::io::BufWriter::new);
            if let Ok(o) = &mut out {
                let line = serde_json::json!({"event": "workload", "testCase": w.test_case, "workload": w.workload, "rep": opts.rep});
                let _ = writeln!(o, "{line}");
            }
            Some(out.map_err(|e| {
                InputError::new(p.display().to_string(), "", format!("cannot open the events file: {e}"))
            })?)
        }
        None => None,
    };
    let progress = opts.progress.then(|| {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} pods {per_sec} eta {eta}")
                .expect("valid progress template"),
        );
        pb.set_prefix(w.name.clone());
        pb
    });
    let priorities = cluster.priorities();
    let mut d = Driver {
        opts: opts.clone(),
        clock,
        vclock,
        cycle_cost: CycleCostModel::DEFAULT,
        engine: Engine::new(opts.seed, opts.threads, config.percentage_of_nodes_to_score)
            .with_plugin_sampling(opts.plugin_sample_percent),
        queue,
        cache,
        cache_errors: Vec::new(),
        pods: Vec::new(),
        uids: UidGen::default(),
        priorities,
        agent,
        binder,
        bind_results: results_rx,
        agent_events,
        binds_in_flight: 0,
        bind_batch: Vec::new(),
        bind_batch_since_nanos: 0,
        templates: Templates::default(),
        compiled: ahash::AHashMap::new(),
        churners: Vec::new(),
        deleters: Vec::new(),
        window: Window::default(),
        nodes_created: 0,
        pods_created: 0,
        deleted: 0,
        hist: Histograms::default(),
        counters: Counters::default(),
        unschedulable_reasons: BTreeMap::new(),
        measured_bind_nanos: Vec::new(),
        events_out,
        largest_shape: (0, 0),
        progress,
        config_source: config.source.clone(),
        config_digest: config.digest.clone(),
        waiting: frameworks.iter().map(|_| WaitingPods::new()).collect(),
        hint_base,
        parked: Vec::new(),
        binding,
        frameworks,
        spread,
        snap: Snapshot::new(),
        cluster: Cluster::default(),
        node_fingerprints: cluster.nodes.iter().map(|n| (n.metadata.name.clone(), node_fingerprint(n))).collect(),
        op_index: 0,
        async_preemption: gate("SchedulerAsyncPreemption"),
        preemptions: Vec::new(),
        failed_wait: None,
    };
    drop(results_tx);
    // The initial cluster: its bound pods are in the snapshot; give them records too.
    let bound: Vec<_> = snap.pods.values().map(|p| (p.info.clone(), p.node)).collect();
    let mut bound = bound;
    bound.sort_by_key(|(i, _)| i.uid);
    d.uids = uids;
    let mut recs: Vec<Option<PodRec>> = (0..d.uids.issued()).map(|_| None).collect();
    for (info, node) in bound {
        let idx = (info.uid.0 - 1) as usize;
        let r = d.cache.confirm_bound(info.uid, node.0);
        d.note_cache(r);
        recs[idx] = Some(PodRec {
            template: Arc::new(api::Pod::default()),
            namespace: snap.interner.resolve(info.namespace).to_string(),
            created_by_run: false,
            measured: false,
            profile: 0,
            attempts: 0,
            unschedulable: false,
            created_nanos: 0,
            scheduled_nanos: None,
            bound_nanos: Some(0),
            running_nanos: None,
            failed: false,
            state: PodState::Bound(node),
            info,
        });
    }
    let pending_infos: Vec<PodInfo> = pending;
    for info in &pending_infos {
        let idx = (info.uid.0 - 1) as usize;
        recs[idx] = Some(PodRec {
            template: Arc::new(api::Pod::default()),
            namespace: snap.interner.resolve(info.namespace).to_string(),
            created_by_run: false,
            measured: false,
            profile: 0,
            attempts: 0,
            unschedulable: false,
            created_nanos: 0,
            scheduled_nanos: None,
            bound_nanos: None,
            running_nanos: None,
            failed: false,
            state: PodState::Queued,
            info: Arc::new(info.clone()),
        });
    }
    d.pods = recs.into_iter().map(|r| r.expect("every cluster pod has a record")).collect();
    d.snap = snap;
    d.cluster = cluster;
    let mut other_schedulers: BTreeMap<String, u64> = BTreeMap::new();
    for info in pending_infos {
        // schedulerName picks the profile; a pod for another scheduler is left to it.
        let Some(profile) = d.profile_of(&info) else {
            *other_schedulers.entry(d.snap.interner.resolve(info.scheduler_name).to_string()).or_default() += 1;
            continue;
        };
        d.rec_mut(info.uid).profile = profile;
        let gated = !d.frameworks[profile].run_pre_enqueue(&info).is_success();
        let mut qp = QueuedPod::new(info.uid, info.priority, ()).gated(gated);
        qp.timestamp_nanos = 0;
        d.queue.add(qp, 0);
    }

    if !other_schedulers.is_empty() && opts.rep == 0 {
        let names: Vec<String> = other_schedulers.iter().map(|(n, c)| format!("{c} for {n:?}")).collect();
        eprintln!(
            "{}: pending --cluster pods whose schedulerName has no profile in this run, left to that scheduler: {}",
            w.name,
            names.join(", ")
        );
    }
    // A wait upstream's harness would fail ends the workload there; its report says so (`outcome`).
    let mut failure = None;
    for (i, op) in w.ops.iter().enumerate() {
        d.op_index = i;
        match d.run_op(op) {
            Ok(()) => {}
            Err(RunError::Failed(why)) => {
                failure = Some(why);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    // Let in-flight binds finish before accounting.
    d.churners.clear();
    d.deleters.clear();
    d.run_until(None, &|d: &Driver| d.binds_in_flight == 0)?;
    // Pod start-up is measured to Running: give bound pods the time the agent needs to start them.
    let grace_nanos = if opts.virtual_time { 3_600_000_000_000 } else { 120_000_000_000 };
    let until = d.now() + grace_nanos;
    d.run_until(Some(until), &|d: &Driver| {
        d.pods.iter().all(|r| {
            !matches!(r.state, PodState::Bound(_)) || !r.created_by_run || r.running_nanos.is_some() || r.failed
        })
    })?;
    if let Some(pb) = &d.progress {
        pb.finish_and_clear();
    }
    let failed_wait = d.failed_wait.take();
    let mut report = d.finish(w, wall_start, cpu_start);
    if let Some(message) = failure {
        report.outcome = crate::report::Outcome {
            passed: false,
            message,
            failed_op: failed_wait.as_ref().map(|f| f.op as u64),
            pods_waited_for: failed_wait.as_ref().map_or(0, |f| f.waited_for as u64),
            pods_not_done: failed_wait.as_ref().map_or(0, |f| f.not_done as u64),
            reasons: report.unschedulable_reasons.clone(),
        };
    }
    Ok(report)
}

impl Driver {
    fn finish(mut self, w: &ResolvedWorkload, wall_start: Instant, cpu_start: f64) -> RunReport {
        // Consistency: the snapshot, the assume cache and the agent agree; no transition was refused.
        let agent_pods: BTreeMap<PodUid, String> = self.agent.pods().into_iter().collect();
        let lines: Vec<PodLine<'_>> = self
            .pods
            .iter()
            .map(|r| PodLine {
                uid: r.info.uid,
                name: &r.info.name,
                expected: match r.state {
                    PodState::Queued => Expected::Queued,
                    PodState::Assumed(n) => Expected::Assumed(n),
                    PodState::Bound(n) => Expected::Bound(n),
                    PodState::Deleted => Expected::Deleted,
                },
                created_by_run: r.created_by_run,
            })
            .collect();
        let mut transition_errors = std::mem::take(&mut self.cache_errors);
        if let Some(b) = &self.binder {
            transition_errors.extend(b.take_cache_errors().iter().map(|e| e.to_string()));
        }
        let mut diffs = differences(&self.snap, &self.cache, &lines, &agent_pods, &transition_errors);
        drop(lines);
        let shutdown = self.agent.shutdown();
        if let Err(e) = &shutdown {
            diffs.push(format!("agent shutdown: {e}"));
        }
        // Accounting over the pods this run created.
        let mut acc = Accounting::default();
        let mut placements = BTreeMap::new();
        for r in self.pods.iter().filter(|r| r.created_by_run) {
            acc.created += 1;
            match r.state {
                PodState::Bound(node) => {
                    acc.bound += 1;
                    placements.insert(
                        format!("{}/{}", r.namespace, r.info.name),
                        self.snap.interner.resolve(node).to_string(),
                    );
                }
                PodState::Deleted => acc.deleted += 1,
                PodState::Queued if r.unschedulable => acc.unschedulable += 1,
                PodState::Queued => acc.pending += 1,
                PodState::Assumed(_) => {}
            }
        }
        acc.lost = acc.created - acc.bound - acc.deleted - acc.unschedulable - acc.pending;
        let measured: Vec<&PodRec> = self.pods.iter().filter(|r| r.measured).collect();
        let measured_pods = measured.len() as u64;
        let scheduled = measured.iter().filter(|r| matches!(r.state, PodState::Bound(_))).count() as u64;
        let unschedulable = measured.iter().filter(|r| r.state == PodState::Queued && r.unschedulable).count() as u64;
        let start = self.window.start_nanos.unwrap_or(0);
        let mut rel: Vec<u64> = self.measured_bind_nanos.iter().map(|t| t.saturating_sub(start)).collect();
        let window = rel.iter().copied().max().map_or(0, |m| m + 1);
        let tp = throughput(&mut rel, window);
        let h = &self.hist;
        let mut by_result = BTreeMap::new();
        for res in ["scheduled", "unschedulable", "error"] {
            let p = h.percentiles(&format!("attempt.{res}"), 1e3);
            if p.count > 0 {
                by_result.insert(res.to_string(), p);
            }
        }
        let mut stages = BTreeMap::new();
        for (k, name) in [
            ("createdToScheduled", "stage.created_to_scheduled"),
            ("scheduledToBound", "stage.scheduled_to_bound"),
            ("boundToRunning", "stage.bound_to_running"),
        ] {
            stages.insert(k.to_string(), h.percentiles(name, 1e6));
        }
        let pending_total = self.pods.iter().filter(|r| r.state == PodState::Queued).count() as u64;
        let mut quality = placement_quality(&self.snap, self.largest_shape, pending_total);
        quality.topology_skew = super::quality::topology_skew(
            &self.snap,
            &self.spread,
            self.pods.iter().filter(|r| r.created_by_run).map(|r| (r.profile, &*r.info)),
        );
        let threshold = w.threshold.as_ref().map(|t| t.get("")).filter(|v| *v > 0.0);
        let metric = &w.threshold_metric_selector;
        let value = match metric.data_bucket.as_str() {
            "Perc50" => tp.p50,
            "Perc90" => tp.p90,
            "Perc95" => tp.p95,
            "Perc99" => tp.p99,
            _ => tp.average,
        };
        let threshold_passed = threshold.map(|th| if metric.expect_lower { value < th } else { value > th });
        if let Some(mut o) = self.events_out.take() {
            let _ = o.flush();
        }
        use crate::report::histogram as hk;
        let mut histograms = BTreeMap::new();
        for (key, name, unit) in [
            (hk::ATTEMPT_LATENCY_MICROS, "attempt", 1_000),
            (hk::E2E_LATENCY_MICROS, "e2e", 1_000),
            (hk::POD_STARTUP_MILLIS, "startup", 1_000_000),
        ] {
            if let Some(hist) = h.by_name.get(name) {
                histograms.insert(key.to_string(), hist.encode_in(unit));
            }
        }
        let workload_digest = {
            use sha2::{Digest, Sha256};
            // Template paths are absolute; digest them relative to the working directory so that
            // two checkouts of the same workloads agree.
            let mut text = format!("{:?}", w.ops);
            if let Ok(cwd) = std::env::current_dir() {
                text = text.replace(&format!("{}/", cwd.display()), "");
            }
            format!("{:x}", Sha256::digest(text.as_bytes()))
        };
        let small = placements.len() <= 20_000;
        let cri = match &self.opts.agent {
            AgentSpec::Custom { report: Some(report), .. } => report(&|uid| self.pod_times(uid)),
            _ => None,
        };
        RunReport {
            test_case: w.test_case.clone(),
            workload: w.workload.clone(),
            labels: w.labels.clone(),
            seed: self.opts.seed,
            threads: self.engine.threads(),
            rep: self.opts.rep,
            pair: None,
            arm: None,
            config_source: self.config_source.clone(),
            config_digest: self.config_digest.clone(),
            workload_digest,
            agent: self.agent.name().to_string(),
            virtual_time: self.opts.virtual_time,
            virtual_cycle_cost: self.vclock.is_some().then_some(self.cycle_cost),
            // Gates that do not take effect as set, with the reason (the field's name predates the statuses).
            feature_gates_ignored: w
                .gate_statuses
                .iter()
                .filter_map(|(_, _, st)| match st {
                    GateStatus::NotApplicable(r) | GateStatus::NotHonoured(r) | GateStatus::Skip(r) => {
                        Some(format!("{} ({r})", st.word()))
                    }
                    GateStatus::Default | GateStatus::Honoured(_) => None,
                })
                .collect(),
            feature_gates_honoured: w
                .gate_statuses
                .iter()
                .filter(|(_, _, st)| matches!(st, GateStatus::Honoured(_)))
                .map(|(name, value, _)| format!("{name}={value}"))
                .collect(),
            outcome: crate::report::Outcome::default(),
            measured_pods,
            scheduled_pods: scheduled,
            unschedulable_pods: unschedulable,
            duration_seconds: window as f64 / 1e9,
            wall_seconds: wall_start.elapsed().as_secs_f64(),
            cpu_seconds: cpu_seconds() - cpu_start,
            throughput: tp,
            attempt_latency_micros: h.percentiles("attempt", 1e3),
            attempt_latency_by_result_micros: by_result,
            e2e_latency_micros: h.percentiles("e2e", 1e3),
            pod_startup_millis: h.percentiles("startup", 1e6),
            pod_startup_stages_millis: stages,
            extension_point_micros: self
                .engine
                .profiler
                .by_point
                .iter()
                .map(|(k, h)| (k.to_string(), LatencyHist(h.clone()).percentiles(1e3)))
                .collect(),
            plugin_timings: self
                .engine
                .profiler
                .by_plugin
                .iter()
                .map(|((plugin, point), h)| crate::report::PluginTiming {
                    plugin: plugin.to_string(),
                    extension_point: point.to_string(),
                    calls: h.len(),
                    p50_micros: h.value_at_quantile(0.5) as f64 / 1e3,
                    p99_micros: h.value_at_quantile(0.99) as f64 / 1e3,
                    total_micros: h.mean() * h.len() as f64 / 1e3,
                })
                .collect(),
            plugin_sample_percent: self.opts.plugin_sample_percent,
            counters: self.counters.clone(),
            accounting: acc,
            unschedulable_reasons: self.unschedulable_reasons.clone(),
            cache_consistent: diffs.is_empty(),
            cache_differences: diffs.into_iter().take(50).collect(),
            placement_quality: quality,
            placement_digest: placement_digest(&placements),
            placements: small.then_some(placements),
            peak_rss_bytes: peak_rss_bytes(),
            threshold,
            threshold_metric: format!(
                "SchedulingThroughput/{}",
                if metric.data_bucket.is_empty() { "Average" } else { &metric.data_bucket }
            ),
            threshold_passed,
            histograms,
            cri,
            instructions: None,
        }
    }

    /// The driver's times of pod `uid`, for an agent's report.
    fn pod_times(&self, uid: PodUid) -> Option<super::PodTimes> {
        let r = self.pods.get(usize::try_from(uid.0).ok()?.checked_sub(1)?)?;
        Some(super::PodTimes {
            created_nanos: r.created_nanos,
            scheduled_nanos: r.scheduled_nanos,
            bound_nanos: r.bound_nanos,
            measured: r.measured,
        })
    }
}
