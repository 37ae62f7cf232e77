//! The run driver: the scheduling thread that runs a workload against the engine, the queue,
//! the assume cache, the binder and a node agent. One concern per submodule:
//! `setup` builds the driver, `event_loop` waits and wakes, `cycle` is one scheduling cycle
//! (Reserve, Permit), `binding` ends binding cycles, `cluster_ops` creates, updates and deletes
//! objects (`producer` builds a large `createPods` op's pods on a second thread), `background`
//! runs churn and rate-limited deletion, `preemption` deletes victims as SchedulerAsyncPreemption
//! says, `ops` runs workload ops, and `summary` turns the records into the report.

mod background;
mod binding;
mod cluster_ops;
mod cycle;
mod dra_events;
mod event_loop;
mod ops;
mod podgroup;
pub(crate) use cluster_ops::{alloc_resource_claims_in, node_update_change, pod_name, requests_scaled_down};
pub(crate) use podgroup::{
    group_algorithm, group_post_filter, has_pod_group_post_filter, member_failure_after, validate_group, GroupOutcome,
    GroupTopology, Trial,
};
mod preemption;
mod producer;
mod setup;
mod summary;

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::Receiver;

use crate::agent::{AgentEvent, NodeAgent};
use crate::api;
use crate::binder::{BindJob, BindResult, Binder, FrameworkBinding};
use crate::cache::AssumeCache;
use crate::clock::{Clock, CycleCostModel, VirtualClock};
use crate::cluster::{Cluster, UidGen};
use crate::engine::Engine;
use crate::framework::{Framework, WaitingPods};
use crate::ids::PodUid;
use crate::metrics::Histograms;
use crate::queue::SchedulingQueue;
use crate::report::Counters;
use crate::runner::objects::Templates;
use crate::runner::RunOptions;
use crate::snapshot::compile::Priorities;
use crate::snapshot::{PodInfo, Snapshot, Sym};
use binding::AgentTemplate;

pub use setup::run_workload;
pub(crate) use setup::{dra_features, hint_syms};
#[cfg(test)]
pub(crate) use setup::{register_hints, run_workload_with};

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
    namespace: Arc<str>,
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

impl PodRec {
    /// The record of a pod of the initial cluster (`--cluster`), bound (since the run's start) or
    /// pending, in profile 0 until its `schedulerName` is looked up.
    fn of_cluster(info: Arc<PodInfo>, namespace: String, state: PodState) -> PodRec {
        PodRec {
            template: Arc::new(api::Pod::default()),
            namespace: namespace.into(),
            created_by_run: false,
            measured: false,
            profile: 0,
            attempts: 0,
            unschedulable: false,
            created_nanos: 0,
            scheduled_nanos: None,
            bound_nanos: matches!(state, PodState::Bound(_)).then_some(0),
            running_nanos: None,
            failed: false,
            state,
            info,
        }
    }

    /// Whether a wait for this pod is over: it is bound or deleted; or, when the wait asks only
    /// that pods were attempted (`attempted_only`), it was attempted, is gated (a gated pod has
    /// been seen by the scheduler: PodScheduled=False, reason SchedulingGated) or is assumed.
    fn settled(&self, attempted_only: bool) -> bool {
        settled(self.state, self.attempts, !self.info.scheduling_gates.is_empty(), attempted_only)
    }
}

/// [`PodRec::settled`] on the record's parts.
fn settled(state: PodState, attempts: u32, gated: bool, attempted_only: bool) -> bool {
    match state {
        PodState::Bound(_) | PodState::Deleted => true,
        PodState::Queued => attempted_only && (attempts > 0 || gated),
        PodState::Assumed(_) => attempted_only,
    }
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
    namespace: String,
    info: PodInfo,
    start_from_uid: bool,
    /// The last `signature` label value asked for, and `info` with that label: the pods of one
    /// signature batch are clones of it.
    signed: Option<(Sym, PodInfo)>,
    /// The `signature` value of the last pod made from this entry.
    last_signature: Option<Sym>,
}

/// The measurement window: pods created inside it are measured.
#[derive(Default)]
struct Window {
    open: bool,
    namespaces: Vec<String>,
    start_nanos: Option<u64>,
}

impl Window {
    /// Whether a pod created now in `namespace` is measured: the window is open and names the
    /// namespace (or no namespace: all are measured).
    fn measures(&self, namespace: &str) -> bool {
        self.open && (self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace))
    }
}

struct Driver {
    opts: RunOptions,
    clock: Arc<dyn Clock>,
    /// Wall time only: the instant `clock` reads as 0 (`WallClock::origin`), so the instants read to
    /// time a cycle give the clock's readings too ([`Driver::nanos_at`]).
    wall_origin: Option<std::time::Instant>,
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
    /// OpportunisticBatching, when its gate is on.
    batches: Option<super::batching::Batches>,
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
    /// The agent's part of the template last bound (`Driver::agent_pod`), shared by its pods.
    agent_template: Option<AgentTemplate>,
    templates: Templates,
    /// Compiled pod templates by template pointer, one per namespace.
    compiled: ahash::AHashMap<usize, Vec<CompiledTemplate>>,
    /// The namespace of the last pod created, shared by the records of the pods created in it.
    last_namespace: Arc<str>,
    churners: Vec<Churner>,
    /// `deletePods` with `skipWaitToCompletion`: pods deleted in the background at a rate.
    deleters: Vec<background::Deleter>,
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
    node_fingerprints: ahash::AHashMap<String, NodeFingerprint>,
    /// Per node name: the node as the queue's hints last saw it (the `old` of an update). Nodes
    /// of a loaded `--cluster` are not here: their updates get the coarse hints.
    node_objects: ahash::AHashMap<String, crate::queue::NodeObject>,
    /// Per storage kind and `namespace/name`: the object as the volume plugins' hints last saw it
    /// (the `old` of an `updateAny`).
    storage_objects: ahash::AHashMap<
        (crate::snapshot::volumes::StorageKind, String),
        Arc<crate::snapshot::volumes::StorageEventObject>,
    >,
    /// The claims DynamicResources' queueing hints resolve a pod's claims against (upstream's
    /// claim lister as the hints read it), kept by `dra_events`.
    claim_lister: Arc<crate::queue::dra_hints::ClaimLister>,
    /// Position of the op being run, for failure messages.
    op_index: usize,
    /// SchedulerAsyncPreemption: victims are deleted after the preemptor's cycle.
    async_preemption: bool,
    preemptions: Vec<preemption::Preemption>,
    /// The wait that failed upstream's outcome checks, for the report's `outcome`.
    failed_wait: Option<FailedWait>,
    /// PodGroups and their pods' queue entities (GenericWorkload).
    groups: podgroup::Groups,
    /// Upstream's Go test hooks the workload selects.
    hooks: crate::workload::HarnessHooks,
}

/// A failed wait: the op, the pods it waited for, and those not done.
struct FailedWait {
    op: usize,
    waited_for: usize,
    not_done: usize,
}

/// Fingerprints of what a node update can change, in `NodeChange` order: allocatable, labels,
/// taints, unschedulable, declared features.
type NodeFingerprint = [u64; 5];

/// The [`NodeFingerprint`] of `node`.
fn node_fingerprint(node: &api::Node) -> NodeFingerprint {
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
        declared_features_fingerprint(&node.status.declared_features),
    ]
}

/// The declared-features entry of a [`NodeFingerprint`].
fn declared_features_fingerprint(features: &[String]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut s = std::collections::hash_map::DefaultHasher::new();
    features.hash(&mut s);
    s.finish()
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

    /// `namespace/name` of a pod (`podgroup/namespace/name` of a PodGroup's queue entity).
    fn key_of(&self, uid: PodUid) -> String {
        if let Some(ix) = self.groups.group_of_entity(uid) {
            return self.groups.entity_key(ix);
        }
        let rec = self.rec(uid);
        format!("{}/{}", rec.namespace, rec.info.name)
    }

    fn now(&self) -> u64 {
        self.clock.now_nanos()
    }

    /// The run clock's reading at `t`, an instant just read on this thread: the same as
    /// [`now`](Self::now) then, without reading the clock again (wall time); in virtual time, `now`.
    fn nanos_at(&self, t: std::time::Instant) -> u64 {
        match self.wall_origin {
            Some(origin) => t.saturating_duration_since(origin).as_nanos() as u64,
            None => self.now(),
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_over_for_bound_and_deleted_pods_and_for_attempted_ones_when_asked() {
        let node = Sym(3);
        // (state, attempts, gated) -> (settled when scheduling is waited for, when attempts are)
        let cases = [
            (PodState::Bound(node), 0, false, (true, true)),
            (PodState::Deleted, 0, false, (true, true)),
            (PodState::Queued, 0, false, (false, false)),
            (PodState::Queued, 2, false, (false, true)),
            (PodState::Queued, 0, true, (false, true)),
            (PodState::Assumed(node), 1, false, (false, true)),
        ];
        for (state, attempts, gated, (scheduled, attempted)) in cases {
            let got = (settled(state, attempts, gated, false), settled(state, attempts, gated, true));
            assert_eq!(got, (scheduled, attempted), "{state:?} attempts={attempts} gated={gated}");
        }
    }

    #[test]
    fn the_window_measures_pods_of_its_namespaces_while_open() {
        let w = |open: bool, ns: &[&str]| Window {
            open,
            namespaces: ns.iter().map(|s| s.to_string()).collect(),
            start_nanos: None,
        };
        let cases = [
            (w(false, &[]), "a", false),
            (w(true, &[]), "a", true),
            (w(true, &["a", "b"]), "b", true),
            (w(true, &["a"]), "c", false),
            (w(false, &["a"]), "a", false),
        ];
        for (window, ns, want) in cases {
            assert_eq!(window.measures(ns), want, "open={} {:?} {ns}", window.open, window.namespaces);
        }
    }
}
