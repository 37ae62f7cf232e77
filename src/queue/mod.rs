//! The scheduling queue: activeQ, backoffQ, unschedulablePods and the gated set, after
//! kube-scheduler's `internal/queue/scheduling_queue.go`.
//!
//! - **activeQ** is ordered by the profile's QueueSort plugin ([`SchedulingQueue::with_queue_sort`];
//!   PrioritySort by default: higher priority first, then earlier queued timestamp), then the
//!   insertion sequence number (so equal keys pop in a fixed order and runs replay exactly).
//! - **backoffQ** holds pods until `timestamp + backoff(count)`, where [`backoff_duration_nanos`]
//!   doubles from the initial backoff (1 s) up to the maximum (10 s) and the count is the pod's
//!   consecutive errors, or else its unschedulable attempts (upstream's `getBackoffTime`). Pods that
//!   failed with an error wait in a second heap (`entityErrorBackoffQ`). Completed backoff is
//!   flushed to activeQ on a 1-second ticker (whole seconds of run time), as upstream's
//!   `flushBackoffQCompleted` runs; a pod whose expiry equals the tick still waits for the next one.
//! - **SchedulerPopFromBackoffQ** ([`SchedulingQueue::with_pop_from_backoff`], on at v1.37.2): expiry
//!   is truncated to its 1-second window, pods with the same window are ordered by QueueSort, and
//!   `pop` takes the head of backoffQ (not of the error heap) when activeQ is empty. Off: expiry is
//!   exact, ties go in insertion order, and pods leave backoffQ only through the ticker.
//! - **unschedulablePods** holds pods rejected by plugins until a cluster event makes them worth
//!   retrying (asked of the rejecting plugins' queueing hints, as upstream's QueueingHints do) or until
//!   they have waited [`DEFAULT_MAX_IN_UNSCHEDULABLE_NANOS`] (5 min), checked every 30 s.
//! - **preempting** pods ([`SchedulingQueue::set_preempting`]): DefaultPreemption's PreEnqueue
//!   under SchedulerAsyncPreemption keeps a pod whose victims are still being deleted out of activeQ
//!   (and, with SchedulerPopFromBackoffQ, out of backoffQ); it waits in unschedulablePods and only an
//!   assigned pod's deletion (the plugin's registered event) re-evaluates it. With
//!   SchedulerPopFromBackoffQ such a pod waits apart (`parked`) until its preemption ends: an event
//!   could only put it back where it is.
//! - **gated** pods (PreEnqueue: non-empty `schedulingGates`) stay out of activeQ until
//!   [`SchedulingQueue::remove_gate`].
//!
//! The queue has one owner, the scheduling thread, and takes the time as an explicit `now_nanos`
//! argument: no clock, no locks, deterministic, and virtual time only needs
//! [`SchedulingQueue::next_wakeup_nanos`].
//!
//! Events that arrive while a pod is in flight (popped, not yet requeued or [`done`]) are logged and
//! replayed through the rejecting plugins' hints when the pod comes back unschedulable, so a node added
//! during a pod's cycle is not missed.
//!
//! [`done`]: SchedulingQueue::done

pub mod dra_hints;
mod hints;

pub use hints::{default_hint, default_hint_fn, fine_hint, hint_fn, HintArgs, HintSyms, DEFAULT_HINT_PLUGINS};

use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::sync::Arc;

use ahash::AHashMap as HashMap;

use crate::api::resource::ResourceClaim;
use crate::framework::{QueueSortFn, QueueSortKey};
use crate::ids::PodUid;
use crate::snapshot::volumes::{StorageAction, StorageEventObject, StorageKind};
use crate::snapshot::{NodeSpec, PodInfo};
use dra_hints::DeviceClassObject;

/// kube-scheduler's `podInitialBackoffSeconds` default: 1 s.
pub const DEFAULT_INITIAL_BACKOFF_NANOS: u64 = 1_000_000_000;
/// kube-scheduler's `podMaxBackoffSeconds` default: 10 s.
pub const DEFAULT_MAX_BACKOFF_NANOS: u64 = 10_000_000_000;
/// kube-scheduler's `podMaxInUnschedulablePodsDuration`: 5 min.
pub const DEFAULT_MAX_IN_UNSCHEDULABLE_NANOS: u64 = 300_000_000_000;
/// kube-scheduler's `backoffQOrderingWindowDuration` (1 s): the period of the backoff flush ticker
/// (ticks at whole seconds of run time) and, with SchedulerPopFromBackoffQ, the window backoff
/// expiry is truncated to. [`SchedulingQueue::pop`] runs the ticks that are due.
pub const BACKOFF_FLUSH_INTERVAL_NANOS: u64 = 1_000_000_000;
/// How often kube-scheduler flushes unschedulablePods leftovers (30 s, from the start of the run).
pub const UNSCHEDULABLE_FLUSH_INTERVAL_NANOS: u64 = 30_000_000_000;
/// Events kept for in-flight pods before the log is trimmed to what they still need.
const EVENT_LOG_TRIM_LEN: usize = 1024;

/// A plugin's index in the profile, below 64 (an index into [`PluginSet`]).
pub type PluginId = u8;

/// A set of plugin ids, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PluginSet(pub u64);

impl PluginSet {
    pub const EMPTY: PluginSet = PluginSet(0);

    pub fn of(ids: &[PluginId]) -> PluginSet {
        let mut s = PluginSet::EMPTY;
        for &id in ids {
            s.insert(id);
        }
        s
    }

    pub fn insert(&mut self, id: PluginId) {
        assert!(id < 64, "plugin id {id} is not below 64");
        self.0 |= 1 << id;
    }

    pub fn contains(self, id: PluginId) -> bool {
        id < 64 && self.0 & (1 << id) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The ids in increasing order.
    pub fn iter(self) -> impl Iterator<Item = PluginId> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let id = bits.trailing_zeros() as PluginId;
            bits &= bits - 1;
            Some(id)
        })
    }
}

/// What changed in a node update, one bit each (upstream's node `ActionType`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeChange(pub u8);

impl NodeChange {
    pub const ALLOCATABLE: NodeChange = NodeChange(1);
    pub const LABEL: NodeChange = NodeChange(2);
    pub const TAINT: NodeChange = NodeChange(4);
    /// `spec.unschedulable` changed.
    pub const UNSCHEDULABLE: NodeChange = NodeChange(8);
    pub const CONDITION: NodeChange = NodeChange(16);
    /// `status.declaredFeatures` changed (`UpdateNodeDeclaredFeature`).
    pub const DECLARED_FEATURES: NodeChange = NodeChange(32);

    pub fn contains(self, other: NodeChange) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn intersects(self, other: NodeChange) -> bool {
        self.0 & other.0 != 0
    }

    pub fn union(self, other: NodeChange) -> NodeChange {
        NodeChange(self.0 | other.0)
    }
}

/// A cluster event that may make unschedulable pods schedulable. Nodes are snapshot row indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterEvent {
    NodeAdd {
        node: u32,
    },
    NodeUpdate {
        node: u32,
        change: NodeChange,
    },
    NodeDelete {
        node: u32,
    },
    /// A pod was bound (or assumed) onto `node`.
    AssignedPodAdd {
        pod: PodUid,
        node: u32,
    },
    /// A bound pod changed; `resources_scaled_down` when its requests shrank (in-place resize).
    AssignedPodUpdate {
        pod: PodUid,
        node: u32,
        resources_scaled_down: bool,
    },
    /// A bound or assumed pod left its node (deleted, evicted, or forgotten after a failed bind):
    /// its resources, ports and topology counts are freed.
    AssignedPodDelete {
        pod: PodUid,
        node: u32,
    },
    /// A pending pod changed (its own spec: tolerations, gates, requests).
    UnscheduledPodUpdate {
        pod: PodUid,
    },
    /// The leftover flush moved pods (upstream's wildcard `EventUnschedulableTimeout`): the queue
    /// logs it for in-flight pods, and every rejected pod that sees it comes back to activeQ or
    /// backoffQ whatever its hints say. Not a cluster event a caller delivers.
    UnschedulableTimeout,
    /// A storage object (PersistentVolume, claim, StorageClass, CSINode, CSIDriver,
    /// CSIStorageCapacity) was added, updated or deleted (upstream's storage informers' events).
    Storage {
        kind: StorageKind,
        action: StorageAction,
    },
    /// A ResourceClaim was added, updated or deleted (upstream's claim assume cache's events: an
    /// informer's, the scheduler's own PreBind write, the resourceclaim controller's). The
    /// objects are `old_claim`/`new_claim`.
    ResourceClaim {
        action: DraAction,
    },
    /// A ResourceSlice was added, updated (a DeviceTaintRule changing its devices' taints counts,
    /// as upstream's slice tracker reports it) or deleted.
    ResourceSlice {
        action: DraAction,
    },
    /// A DeviceClass was added, updated or deleted; the objects are `old_class`/`new_class`.
    DeviceClass {
        action: DraAction,
    },
}

/// What happened to a DRA object (upstream's `ActionType` Add / Update / Delete).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DraAction {
    Add,
    Update,
    Delete,
}

/// The kind of a [`ClusterEvent`], for tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    NodeAdd,
    NodeUpdate,
    NodeDelete,
    AssignedPodAdd,
    AssignedPodUpdate,
    AssignedPodDelete,
    UnscheduledPodUpdate,
    UnschedulableTimeout,
    Storage,
    ResourceClaim,
    ResourceSlice,
    DeviceClass,
}

impl ClusterEvent {
    pub fn kind(&self) -> EventKind {
        match self {
            ClusterEvent::NodeAdd { .. } => EventKind::NodeAdd,
            ClusterEvent::NodeUpdate { .. } => EventKind::NodeUpdate,
            ClusterEvent::NodeDelete { .. } => EventKind::NodeDelete,
            ClusterEvent::AssignedPodAdd { .. } => EventKind::AssignedPodAdd,
            ClusterEvent::AssignedPodUpdate { .. } => EventKind::AssignedPodUpdate,
            ClusterEvent::AssignedPodDelete { .. } => EventKind::AssignedPodDelete,
            ClusterEvent::UnscheduledPodUpdate { .. } => EventKind::UnscheduledPodUpdate,
            ClusterEvent::UnschedulableTimeout => EventKind::UnschedulableTimeout,
            ClusterEvent::Storage { .. } => EventKind::Storage,
            ClusterEvent::ResourceClaim { .. } => EventKind::ResourceClaim,
            ClusterEvent::ResourceSlice { .. } => EventKind::ResourceSlice,
            ClusterEvent::DeviceClass { .. } => EventKind::DeviceClass,
        }
    }
}

/// A plugin's verdict on whether an event may make a pod it rejected schedulable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueingHint {
    Queue,
    Skip,
}

/// A node as an event carries it (upstream's `oldObj`/`newObj`): the compiled spec and, for
/// NodeAffinity's `Gt`/`Lt`, each label value parsed as an integer (parallel to `spec.labels`).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeObject {
    pub spec: Arc<NodeSpec>,
    pub label_ints: Vec<Option<i64>>,
}

/// The objects of a [`ClusterEvent`] that the fine hints read, as they were when the event
/// happened (the queue keeps them for in-flight pods, as upstream keeps `oldObj`/`newObj`).
/// A field left `None` makes the hints fall back to the coarse table ([`default_hint`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventObjects {
    /// The node before an update.
    pub old_node: Option<NodeObject>,
    /// The node added, or after an update.
    pub new_node: Option<NodeObject>,
    /// The assigned pod deleted (AssignedPodDelete), or the pod before an update.
    pub old_pod: Option<Arc<PodInfo>>,
    /// The pod after an update.
    pub new_pod: Option<Arc<PodInfo>>,
    /// The storage object before an update, or deleted.
    pub old_storage: Option<Arc<StorageEventObject>>,
    /// The storage object added, or after an update.
    pub new_storage: Option<Arc<StorageEventObject>>,
    /// The ResourceClaim before an update, or deleted.
    pub old_claim: Option<Arc<ResourceClaim>>,
    /// The ResourceClaim added, or after an update.
    pub new_claim: Option<Arc<ResourceClaim>>,
    /// The DeviceClass before an update, or deleted.
    pub old_class: Option<Arc<DeviceClassObject>>,
    /// The DeviceClass added, or after an update.
    pub new_class: Option<Arc<DeviceClassObject>>,
}

/// The queued pod's compiled spec, for the fine hints (compared by identity).
#[derive(Clone, Debug)]
pub struct PodSpecRef(pub Arc<PodInfo>);

impl PartialEq for PodSpecRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for PodSpecRef {}

/// A queueing hint function, registered per plugin id: the event, its objects when the caller
/// delivered them ([`SchedulingQueue::on_event_with`]), and the rejected pod.
pub type HintFn<T> = Box<dyn Fn(&ClusterEvent, Option<&EventObjects>, &QueuedPod<T>) -> QueueingHint + Send>;

/// A pod in the queue, with the caller's payload `data` (a pod index, for instance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuedPod<T> {
    pub uid: PodUid,
    /// `spec.priority`.
    pub priority: i32,
    /// When the pod was last (re)queued; PrioritySort's tie-breaker and the start of its backoff.
    pub timestamp_nanos: u64,
    /// When the pod was first popped, for the pod scheduling duration (SLI) metric.
    pub initial_attempt_nanos: Option<u64>,
    /// Scheduling attempts so far (incremented by [`SchedulingQueue::pop`]).
    pub attempts: u32,
    /// Attempts that ended unschedulable (upstream's `UnschedulableCount`).
    pub unschedulable_count: u32,
    /// Attempts in a row that ended in an error (upstream's `ConsecutiveErrorsCount`); while
    /// non-zero it is the backoff count.
    pub consecutive_errors: u32,
    /// PreEnqueue: the pod has scheduling gates and must not enter activeQ.
    pub gated: bool,
    /// The plugins that rejected the pod in its last attempt.
    pub unschedulable_plugins: PluginSet,
    /// The pod's compiled spec, when the caller gave it ([`QueuedPod::with_spec`]): the fine hints
    /// need it; without it they use the coarse table.
    pub spec: Option<PodSpecRef>,
    pub data: T,
}

impl<T> QueuedPod<T> {
    pub fn new(uid: PodUid, priority: i32, data: T) -> Self {
        QueuedPod {
            uid,
            priority,
            timestamp_nanos: 0,
            initial_attempt_nanos: None,
            attempts: 0,
            unschedulable_count: 0,
            consecutive_errors: 0,
            gated: false,
            unschedulable_plugins: PluginSet::EMPTY,
            spec: None,
            data,
        }
    }

    pub fn with_spec(mut self, spec: Arc<PodInfo>) -> Self {
        self.spec = Some(PodSpecRef(spec));
        self
    }

    pub fn gated(mut self, gated: bool) -> Self {
        self.gated = gated;
        self
    }
}

/// Backoff after `attempts` attempts: `initial · 2^(attempts−1)`, capped at `max` (initial for 0 attempts).
pub fn backoff_duration_nanos(attempts: u32, initial_nanos: u64, max_nanos: u64) -> u64 {
    let mut d = initial_nanos.min(max_nanos);
    for _ in 1..attempts {
        if d >= max_nanos - d {
            return max_nanos;
        }
        d += d;
    }
    d
}

/// Which sub-queue a pod is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Active,
    Backoff,
    Unschedulable,
    Gated,
}

/// Where [`SchedulingQueue::add_unschedulable`] and friends put a pod.
pub type Requeued = Location;

struct Entry<T> {
    pod: QueuedPod<T>,
    loc: Location,
    /// The sequence number of the pod's current heap entry (older entries are stale).
    seq: u64,
    /// In unschedulablePods because DefaultPreemption's PreEnqueue blocked it (its preemption
    /// was still running): only an assigned pod's deletion re-evaluates it.
    preemption_gated: bool,
    /// When the leftover flush last took the pod and PreEnqueue kept it (upstream's
    /// `FlushTimestamp`): the next flush counts 5 min from here.
    flushed_nanos: u64,
}

/// A backoffQ heap entry: the earliest expiry first; with `less` (SchedulerPopFromBackoffQ) equal
/// expiries go in the queue's QueueSort order; then the lower seq.
struct BackoffKey {
    expiry_nanos: u64,
    key: QueueSortKey,
    seq: u64,
    uid: PodUid,
    less: Option<QueueSortFn>,
}

impl Ord for BackoffKey {
    /// BinaryHeap pops the greatest: the earliest expiry, then the one `less` puts first, then the lower seq.
    fn cmp(&self, other: &Self) -> Ordering {
        other.expiry_nanos.cmp(&self.expiry_nanos).then_with(|| {
            if let Some(less) = self.less {
                if less(&self.key, &other.key) {
                    return Ordering::Greater;
                }
                if less(&other.key, &self.key) {
                    return Ordering::Less;
                }
            }
            other.seq.cmp(&self.seq)
        })
    }
}

impl PartialEq for BackoffKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for BackoffKey {}

impl PartialOrd for BackoffKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

struct ActiveKey {
    key: QueueSortKey,
    seq: u64,
    uid: PodUid,
    /// The queue's order (QueueSort's `Less`), a plain function: no dynamic dispatch.
    less: QueueSortFn,
}

/// PrioritySort's order, the queue's until [`SchedulingQueue::with_queue_sort`] sets the profile's:
/// higher priority first, then the earlier timestamp.
fn priority_sort_less(a: &QueueSortKey, b: &QueueSortKey) -> bool {
    a.priority > b.priority || (a.priority == b.priority && a.timestamp_nanos < b.timestamp_nanos)
}

impl Ord for ActiveKey {
    /// BinaryHeap pops the greatest: the one `less` puts first, then the lower seq.
    fn cmp(&self, other: &Self) -> Ordering {
        if (self.less)(&self.key, &other.key) {
            Ordering::Greater
        } else if (self.less)(&other.key, &self.key) {
            Ordering::Less
        } else {
            other.seq.cmp(&self.seq)
        }
    }
}

impl PartialEq for ActiveKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ActiveKey {}

impl PartialOrd for ActiveKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Sizes of the sub-queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLens {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
    pub gated: usize,
    pub in_flight: usize,
}

/// The scheduling queue. Single owner; see the module docs.
pub struct SchedulingQueue<T> {
    initial_backoff_nanos: u64,
    max_backoff_nanos: u64,
    max_in_unschedulable_nanos: u64,
    /// SchedulerPopFromBackoffQ (see the module docs).
    pop_from_backoff: bool,
    pods: HashMap<PodUid, Entry<T>>,
    active: BinaryHeap<ActiveKey>,
    /// Pods rejected by plugins (upstream's `entityBackoffQ`).
    backoff: BinaryHeap<BackoffKey>,
    /// Pods that failed with an error (upstream's `entityErrorBackoffQ`), earliest expiry first.
    error_backoff: BinaryHeap<BackoffKey>,
    /// The last backoff flush tick run (tick k is at k seconds; 0: none yet).
    backoff_ticks_done: u64,
    /// The last unschedulablePods leftover tick run (tick j is at 30·j seconds).
    leftover_ticks_done: Option<u64>,
    /// Pods whose asynchronous preemption is still running (DefaultPreemption's PreEnqueue).
    preempting: BTreeSet<PodUid>,
    /// (timestamp, uid): iteration order is deterministic.
    unschedulable: BTreeSet<(u64, PodUid)>,
    /// Pods of unschedulablePods that PreEnqueue re-blocked while their preemption runs, kept
    /// apart from `unschedulable` so that events need not visit them (see [`Self::park`]).
    parked: BTreeSet<(u64, PodUid)>,
    gated: BTreeSet<PodUid>,
    active_len: usize,
    backoff_len: usize,
    /// Pods of `backoff_len` in `error_backoff`.
    error_backoff_len: usize,
    next_seq: u64,
    less: QueueSortFn,
    hints: Vec<Option<HintFn<T>>>,
    /// Popped pods not yet requeued or done, with the event sequence number at their pop.
    in_flight: HashMap<PodUid, u64>,
    /// Events received while some pod was in flight: (event sequence number, event).
    event_log: VecDeque<(u64, ClusterEvent, Option<Arc<EventObjects>>)>,
    next_event_seq: u64,
    /// In-flight pods [`activate`](Self::activate)d during their attempt: they come back to
    /// activeQ or backoffQ whatever the hints say (upstream's `EventForceActivate` for the pod).
    force_activated: BTreeSet<PodUid>,
}

impl<T> SchedulingQueue<T> {
    pub fn new(initial_backoff_nanos: u64, max_backoff_nanos: u64) -> Self {
        SchedulingQueue {
            initial_backoff_nanos,
            max_backoff_nanos,
            max_in_unschedulable_nanos: DEFAULT_MAX_IN_UNSCHEDULABLE_NANOS,
            pop_from_backoff: true,
            pods: HashMap::new(),
            active: BinaryHeap::new(),
            backoff: BinaryHeap::new(),
            error_backoff: BinaryHeap::new(),
            backoff_ticks_done: 0,
            leftover_ticks_done: None,
            preempting: BTreeSet::new(),
            unschedulable: BTreeSet::new(),
            parked: BTreeSet::new(),
            gated: BTreeSet::new(),
            active_len: 0,
            backoff_len: 0,
            error_backoff_len: 0,
            next_seq: 0,
            less: priority_sort_less,
            hints: (0..64).map(|_| None).collect(),
            in_flight: HashMap::new(),
            event_log: VecDeque::new(),
            next_event_seq: 0,
            force_activated: BTreeSet::new(),
        }
    }

    /// Orders activeQ by `less` (the profile's QueueSort plugin); set before any pod is added.
    pub fn with_queue_sort(mut self, less: QueueSortFn) -> Self {
        assert!(self.pods.is_empty(), "the queue order is set before pods are queued");
        self.less = less;
        self
    }

    /// SchedulerPopFromBackoffQ (on by default, as at v1.37.2); set before any pod is added.
    pub fn with_pop_from_backoff(mut self, enabled: bool) -> Self {
        assert!(self.pods.is_empty(), "the backoff order is set before pods are queued");
        self.pop_from_backoff = enabled;
        self
    }

    /// Overrides `podMaxInUnschedulablePodsDuration` (5 min by default).
    pub fn with_max_in_unschedulable_nanos(mut self, nanos: u64) -> Self {
        self.max_in_unschedulable_nanos = nanos;
        self
    }

    /// Registers the queueing hint of plugin `id`. A plugin without a hint answers Queue to every
    /// event (conservative, like an upstream plugin without QueueingHintFn).
    pub fn register_hint(&mut self, id: PluginId, hint: HintFn<T>) {
        assert!(id < 64, "plugin id {id} is not below 64");
        self.hints[id as usize] = Some(hint);
    }

    pub fn lens(&self) -> QueueLens {
        QueueLens {
            active: self.active_len,
            backoff: self.backoff_len,
            unschedulable: self.unschedulable.len() + self.parked.len(),
            gated: self.gated.len(),
            in_flight: self.in_flight.len(),
        }
    }

    /// Pods waiting in any sub-queue (not counting in-flight ones).
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Every queued pod and its sub-queue (a pod DefaultPreemption's PreEnqueue blocks is
    /// [`Location::Gated`] here, as upstream counts it), in no particular order.
    pub fn queued_pods(&self) -> impl Iterator<Item = (PodUid, Location)> + '_ {
        self.pods.iter().map(|(&uid, e)| (uid, if e.preemption_gated { Location::Gated } else { e.loc }))
    }

    /// Where a queued pod is, if it is queued.
    pub fn location(&self, uid: PodUid) -> Option<Location> {
        self.pods.get(&uid).map(|e| e.loc)
    }

    pub fn backoff_nanos(&self, attempts: u32) -> u64 {
        backoff_duration_nanos(attempts, self.initial_backoff_nanos, self.max_backoff_nanos)
    }

    /// When `pod`'s backoff ends (upstream's `getBackoffTime`): `None` when it has none (no failed
    /// attempt yet, or a maximum backoff of 0). With SchedulerPopFromBackoffQ the time is truncated
    /// to its 1-second window.
    fn backoff_expiry_nanos(&self, pod: &QueuedPod<T>) -> Option<u64> {
        let count = if pod.consecutive_errors > 0 { pod.consecutive_errors } else { pod.unschedulable_count };
        if self.max_backoff_nanos == 0 || count == 0 {
            return None;
        }
        Some(self.align_to_window(pod.timestamp_nanos.saturating_add(self.backoff_nanos(count))))
    }

    /// Upstream's `alignToWindow`: truncated to the 1-second window with SchedulerPopFromBackoffQ.
    fn align_to_window(&self, t_nanos: u64) -> u64 {
        if self.pop_from_backoff {
            t_nanos - t_nanos % BACKOFF_FLUSH_INTERVAL_NANOS
        } else {
            t_nanos
        }
    }

    /// Upstream's `isEntityBackingoff`: the expiry is not before `now` (its window, with
    /// SchedulerPopFromBackoffQ).
    fn is_backing_off(&self, pod: &QueuedPod<T>, now_nanos: u64) -> bool {
        self.backoff_expiry_nanos(pod).is_some_and(|e| e >= self.align_to_window(now_nanos))
    }

    /// Adds a new pod (timestamp = `now_nanos`): to activeQ, or to the gated set if PreEnqueue says so.
    pub fn add(&mut self, mut pod: QueuedPod<T>, now_nanos: u64) -> Location {
        pod.timestamp_nanos = now_nanos;
        let loc = if pod.gated {
            Location::Gated
        } else if self.preempting.contains(&pod.uid) {
            return self.place_gated_by_preemption(pod);
        } else {
            Location::Active
        };
        self.place(pod, loc)
    }

    /// DefaultPreemption's PreEnqueue blocked the pod: unschedulablePods, re-evaluated only by an
    /// assigned pod's deletion.
    fn place_gated_by_preemption(&mut self, pod: QueuedPod<T>) -> Location {
        let uid = pod.uid;
        self.place(pod, Location::Unschedulable);
        let e = self.pods.get_mut(&uid).expect("just placed");
        e.preemption_gated = true;
        let key = (e.pod.timestamp_nanos, uid);
        self.park(key);
        Location::Unschedulable
    }

    /// Moves a pod PreEnqueue just re-blocked (`preemption_gated`, never flushed, its preemption
    /// running) from `unschedulable` to `parked` when SchedulerPopFromBackoffQ is on. There an
    /// event would change nothing for it: only an assigned pod's deletion re-evaluates it, and
    /// whether or not its hints say Queue, `requeue` would block it again with the same entry
    /// (preemption_gated, flushed_nanos 0, the same timestamp), since PreEnqueue runs on the way
    /// into backoffQ as well as activeQ. So [`Self::on_event_with`] skips parked pods instead of
    /// asking their hints and re-placing each one per event (O(pods preempting) per victim
    /// deleted). A pod leaves `parked` when its preemption ends ([`Self::set_preempting`]) and
    /// before a leftover flush, which counts it by its timestamp.
    fn park(&mut self, key: (u64, PodUid)) {
        if self.pop_from_backoff && self.preempting.contains(&key.1) && self.unschedulable.remove(&key) {
            self.parked.insert(key);
        }
    }

    /// Returns every parked pod to `unschedulable` (see [`Self::park`]).
    fn unpark_all(&mut self) {
        let parked = std::mem::take(&mut self.parked);
        self.unschedulable.extend(parked);
    }

    /// Moves `pod` to activeQ or backoffQ as `requeueEntityWithQueueingStrategy` does after a
    /// Queue hint: backoffQ while it backs off, activeQ otherwise; DefaultPreemption's PreEnqueue
    /// runs on the way into activeQ, and into backoffQ too with SchedulerPopFromBackoffQ.
    fn requeue(&mut self, pod: QueuedPod<T>, now_nanos: u64) -> Location {
        let loc = if self.is_backing_off(&pod, now_nanos) { Location::Backoff } else { Location::Active };
        let pre_enqueue_runs = loc == Location::Active || self.pop_from_backoff;
        if pre_enqueue_runs && self.preempting.contains(&pod.uid) {
            return self.place_gated_by_preemption(pod);
        }
        self.place(pod, loc)
    }

    fn place(&mut self, pod: QueuedPod<T>, loc: Location) -> Location {
        let uid = pod.uid;
        assert!(!self.pods.contains_key(&uid), "{uid} is already queued");
        let seq = self.next_seq;
        self.next_seq += 1;
        match loc {
            Location::Active => {
                let key = QueueSortKey { priority: pod.priority, timestamp_nanos: pod.timestamp_nanos };
                self.active.push(ActiveKey { key, seq, uid, less: self.less });
                self.active_len += 1;
            }
            Location::Backoff => {
                let expiry_nanos = self.backoff_expiry_nanos(&pod).unwrap_or(0);
                let key = QueueSortKey { priority: pod.priority, timestamp_nanos: pod.timestamp_nanos };
                // Upstream's `backoffQueue.add`: no rejecting plugin means an error.
                if pod.unschedulable_plugins.is_empty() {
                    self.error_backoff.push(BackoffKey { expiry_nanos, key, seq, uid, less: None });
                    self.error_backoff_len += 1;
                } else {
                    let less = self.pop_from_backoff.then_some(self.less);
                    self.backoff.push(BackoffKey { expiry_nanos, key, seq, uid, less });
                }
                self.backoff_len += 1;
            }
            Location::Unschedulable => {
                self.unschedulable.insert((pod.timestamp_nanos, uid));
            }
            Location::Gated => {
                self.gated.insert(uid);
            }
        }
        self.pods.insert(uid, Entry { pod, loc, seq, preemption_gated: false, flushed_nanos: 0 });
        loc
    }

    fn take(&mut self, uid: PodUid) -> Option<QueuedPod<T>> {
        let e = self.pods.remove(&uid)?;
        match e.loc {
            Location::Active => self.active_len -= 1,
            Location::Backoff => {
                self.backoff_len -= 1;
                if e.pod.unschedulable_plugins.is_empty() {
                    self.error_backoff_len -= 1;
                }
            }
            Location::Unschedulable => {
                let key = (e.pod.timestamp_nanos, uid);
                if !self.unschedulable.remove(&key) {
                    self.parked.remove(&key);
                }
            }
            Location::Gated => {
                self.gated.remove(&uid);
            }
        }
        Some(e.pod)
    }

    fn is_current(&self, uid: PodUid, seq: u64, loc: Location) -> bool {
        self.pods.get(&uid).is_some_and(|e| e.seq == seq && e.loc == loc)
    }

    /// Runs the queue's timers that are due by `now_nanos`: the backoff flush (every whole second)
    /// and the unschedulablePods leftover flush (every 30 s). Ticks missed between two calls run as
    /// one, at the last of them: nothing else happened to the queue in between.
    pub fn flush_backoff_completed(&mut self, now_nanos: u64) {
        let tick = now_nanos / BACKOFF_FLUSH_INTERVAL_NANOS;
        if tick > self.backoff_ticks_done {
            self.backoff_ticks_done = tick;
            self.flush_backoff_at(tick * BACKOFF_FLUSH_INTERVAL_NANOS);
        }
        let tick = now_nanos / UNSCHEDULABLE_FLUSH_INTERVAL_NANOS;
        if self.leftover_ticks_done != Some(tick) {
            self.leftover_ticks_done = Some(tick);
            self.flush_unschedulable_leftover(tick * UNSCHEDULABLE_FLUSH_INTERVAL_NANOS);
        }
    }

    /// One tick of upstream's `flushBackoffQCompleted` at `tick_nanos`: every pod of backoffQ, then
    /// of the error heap, that is no longer backing off moves to activeQ (without PreEnqueue under
    /// SchedulerPopFromBackoffQ, which ran it on the way in).
    fn flush_backoff_at(&mut self, tick_nanos: u64) {
        let mut due = Vec::new();
        for error in [false, true] {
            loop {
                let heap = if error { &self.error_backoff } else { &self.backoff };
                let Some(k) = heap.peek() else { break };
                let (uid, seq) = (k.uid, k.seq);
                let current = self.is_current(uid, seq, Location::Backoff);
                if current && self.is_backing_off(&self.pods[&uid].pod, tick_nanos) {
                    break;
                }
                if error {
                    self.error_backoff.pop();
                } else {
                    self.backoff.pop();
                }
                if current {
                    due.push(uid);
                }
            }
        }
        for uid in due {
            let pod = self.take(uid).expect("current backoff entry");
            if !self.pop_from_backoff && self.preempting.contains(&uid) {
                self.place_gated_by_preemption(pod);
            } else {
                self.place(pod, Location::Active);
            }
        }
    }

    /// Runs the due timers, then pops the head of activeQ, or with SchedulerPopFromBackoffQ the head
    /// of backoffQ when activeQ is empty: its attempts are incremented and it is in flight until
    /// requeued or [`done`](Self::done).
    pub fn pop(&mut self, now_nanos: u64) -> Option<QueuedPod<T>> {
        self.flush_backoff_completed(now_nanos);
        let mut uid = None;
        while let Some(key) = self.active.pop() {
            if self.is_current(key.uid, key.seq, Location::Active) {
                uid = Some(key.uid);
                break;
            }
        }
        if uid.is_none() && self.pop_from_backoff {
            while let Some(key) = self.backoff.pop() {
                if self.is_current(key.uid, key.seq, Location::Backoff) {
                    uid = Some(key.uid);
                    break;
                }
            }
        }
        let mut pod = self.take(uid?).expect("current queue entry");
        pod.attempts += 1;
        pod.initial_attempt_nanos.get_or_insert(now_nanos);
        self.in_flight.insert(pod.uid, self.next_event_seq);
        Some(pod)
    }

    /// The pod's scheduling cycle is over (it was assumed): stop keeping events for it.
    pub fn done(&mut self, uid: PodUid) {
        self.in_flight.remove(&uid);
        self.force_activated.remove(&uid);
        self.trim_event_log();
    }

    fn trim_event_log(&mut self) {
        if self.in_flight.is_empty() {
            self.event_log.clear();
        } else if self.event_log.len() > EVENT_LOG_TRIM_LEN {
            let oldest = self.in_flight.values().copied().min().unwrap_or(self.next_event_seq);
            while self.event_log.front().is_some_and(|(s, _, _)| *s < oldest) {
                self.event_log.pop_front();
            }
        }
    }

    fn hint(
        &self,
        plugin: PluginId,
        event: &ClusterEvent,
        objs: Option<&EventObjects>,
        pod: &QueuedPod<T>,
    ) -> QueueingHint {
        match &self.hints[plugin as usize] {
            Some(f) => f(event, objs, pod),
            None => QueueingHint::Queue,
        }
    }

    /// Whether `event` may make `pod` schedulable: some rejecting plugin says Queue.
    fn worth_requeuing(&self, event: &ClusterEvent, objs: Option<&EventObjects>, pod: &QueuedPod<T>) -> bool {
        pod.unschedulable_plugins.is_empty()
            || matches!(event, ClusterEvent::UnschedulableTimeout)
            || pod.unschedulable_plugins.iter().any(|p| self.hint(p, event, objs, pod) == QueueingHint::Queue)
    }

    /// A popped pod was rejected by `rejectors` (its timestamp becomes `now_nanos`). If an event that
    /// arrived while it was in flight is worth requeuing for, it goes to backoffQ (or activeQ when its
    /// backoff is over); otherwise to unschedulablePods. With no rejectors (an error) it backs off.
    pub fn add_unschedulable(&mut self, mut pod: QueuedPod<T>, rejectors: PluginSet, now_nanos: u64) -> Requeued {
        pod.timestamp_nanos = now_nanos;
        pod.unschedulable_plugins = rejectors;
        if rejectors.is_empty() {
            pod.consecutive_errors += 1;
        } else {
            pod.unschedulable_count += 1;
            pod.consecutive_errors = 0;
        }
        let popped_at = self.in_flight.remove(&pod.uid);
        let forced = self.force_activated.remove(&pod.uid);
        let moved = rejectors.is_empty()
            || forced
            || popped_at.is_some_and(|from| {
                self.event_log
                    .iter()
                    .filter(|(s, _, _)| *s >= from)
                    .any(|(_, e, o)| self.worth_requeuing(e, o.as_deref(), &pod))
            });
        self.trim_event_log();
        if moved {
            self.requeue(pod, now_nanos)
        } else {
            self.place(pod, Location::Unschedulable)
        }
    }

    /// A popped entity comes back after its attempt (`AddAttemptedPodGroupIfNeeded`): rejected
    /// (`error` false: its unschedulable count grows) or failed with an error (its error count
    /// grows); it goes to backoffQ while it backs off, activeQ otherwise (gated if `pod.gated`),
    /// never to unschedulablePods. Timestamp = `now_nanos`.
    pub fn add_attempted(&mut self, mut pod: QueuedPod<T>, error: bool, now_nanos: u64) -> Requeued {
        self.in_flight.remove(&pod.uid);
        self.force_activated.remove(&pod.uid);
        self.trim_event_log();
        pod.timestamp_nanos = now_nanos;
        if error {
            pod.consecutive_errors += 1;
        } else {
            pod.unschedulable_count += 1;
            pod.consecutive_errors = 0;
        }
        if pod.gated {
            return self.place(pod, Location::Gated);
        }
        self.requeue(pod, now_nanos)
    }

    /// Requeues a pod with backoff after an error or a failed binding cycle (timestamp = `now_nanos`).
    pub fn add_backoff(&mut self, pod: QueuedPod<T>, now_nanos: u64) -> Requeued {
        self.add_unschedulable(pod, PluginSet::EMPTY, now_nanos)
    }

    /// A cluster event: unschedulable pods for which a rejecting plugin's hint says Queue move to
    /// backoffQ or activeQ. Returns how many moved.
    pub fn on_event(&mut self, event: ClusterEvent, now_nanos: u64) -> usize {
        self.on_event_with(event, None, now_nanos)
    }

    /// [`SchedulingQueue::on_event`] with the event's objects, for the hints that read them. The
    /// objects are only read when some pod is unschedulable or in flight.
    pub fn on_event_with(&mut self, event: ClusterEvent, objs: Option<Arc<EventObjects>>, now_nanos: u64) -> usize {
        self.log_for_in_flight(event, objs.clone());
        // A pod DefaultPreemption's PreEnqueue blocked is re-evaluated only by the plugin's event.
        let gating_event = matches!(event, ClusterEvent::AssignedPodDelete { .. });
        let to_move: Vec<PodUid> = self
            .unschedulable
            .iter()
            .map(|&(_, uid)| uid)
            .filter(|uid| {
                let e = &self.pods[uid];
                (gating_event || !e.preemption_gated) && self.worth_requeuing(&event, objs.as_deref(), &e.pod)
            })
            .collect();
        let mut moved = 0;
        for &uid in &to_move {
            let pod = self.take(uid).expect("unschedulable pod");
            if self.requeue(pod, now_nanos) != Location::Unschedulable {
                moved += 1;
            }
        }
        moved
    }

    /// Keeps `event` for the pods in flight (replayed through their hints when they come back).
    fn log_for_in_flight(&mut self, event: ClusterEvent, objs: Option<Arc<EventObjects>>) {
        if !self.in_flight.is_empty() {
            self.event_log.push_back((self.next_event_seq, event, objs));
            self.next_event_seq += 1;
            self.trim_event_log();
        }
    }

    /// Upstream's `flushUnschedulableEntitiesLeftover`: pods unschedulable for longer than the
    /// maximum (5 min, counted from their timestamp or their last flush) move to backoffQ or
    /// activeQ, gated ones through PreEnqueue (which keeps them). When it takes any pod, the
    /// wildcard [`ClusterEvent::UnschedulableTimeout`] is logged for the pods in flight. Returns
    /// how many moved.
    pub fn flush_unschedulable_leftover(&mut self, now_nanos: u64) -> usize {
        self.unpark_all();
        let limit = self.max_in_unschedulable_nanos;
        let old = |e: &Entry<T>| now_nanos.saturating_sub(e.pod.timestamp_nanos.max(e.flushed_nanos)) > limit;
        let due: Vec<PodUid> = self
            .unschedulable
            .iter()
            .take_while(|&&(ts, _)| now_nanos.saturating_sub(ts) > limit)
            .map(|&(_, uid)| uid)
            .filter(|uid| old(&self.pods[uid]))
            .collect();
        let gated: Vec<PodUid> = self.gated.iter().copied().filter(|uid| old(&self.pods[uid])).collect();
        for uid in &gated {
            self.pods.get_mut(uid).expect("gated pod").flushed_nanos = now_nanos;
        }
        if !due.is_empty() || !gated.is_empty() {
            self.log_for_in_flight(ClusterEvent::UnschedulableTimeout, None);
        }
        let mut moved = 0;
        for &uid in &due {
            let pod = self.take(uid).expect("unschedulable pod");
            if self.requeue(pod, now_nanos) == Location::Unschedulable {
                self.pods.get_mut(&uid).expect("requeued pod").flushed_nanos = now_nanos;
            } else {
                moved += 1;
            }
        }
        moved
    }

    /// Whether an event's objects would be read now: some pod is unschedulable or in flight.
    pub fn wants_event_objects(&self) -> bool {
        !self.unschedulable.is_empty() || !self.parked.is_empty() || !self.in_flight.is_empty()
    }

    /// The queued pod `uid` changed: its spec for the hints becomes `spec` (no-op when not queued).
    pub fn update_spec(&mut self, uid: PodUid, spec: Arc<PodInfo>) {
        if let Some(e) = self.pods.get_mut(&uid) {
            e.pod.spec = Some(PodSpecRef(spec));
        }
    }

    /// DefaultPreemption's asynchronous preemption for `uid` starts (`true`) or its last victim is
    /// gone (`false`): while it runs, PreEnqueue keeps the pod out of activeQ (see the module docs).
    pub fn set_preempting(&mut self, uid: PodUid, running: bool) {
        if running {
            self.preempting.insert(uid);
        } else if self.preempting.remove(&uid) {
            if let Some(e) = self.pods.get(&uid).filter(|e| e.loc == Location::Unschedulable) {
                let key = (e.pod.timestamp_nanos, uid);
                if self.parked.remove(&key) {
                    self.unschedulable.insert(key);
                }
            }
        }
    }

    /// PreEnqueue passes now: a gated pod moves to activeQ. Returns false if the pod was not gated.
    /// The pod keeps its timestamp (when it was added), as upstream's `Update` keeps it: it only
    /// swaps the pod object (`QueuedPodInfo.Update`) before `moveToActiveQ`.
    pub fn remove_gate(&mut self, uid: PodUid) -> bool {
        if self.location(uid) != Some(Location::Gated) {
            return false;
        }
        let mut pod = self.take(uid).expect("gated pod");
        pod.gated = false;
        self.place(pod, Location::Active);
        true
    }

    /// Upstream's `Activate`: a pod in unschedulablePods or backoffQ moves to activeQ at once
    /// (DefaultPreemption's PreEnqueue still applies, except to a pod leaving backoffQ under
    /// SchedulerPopFromBackoffQ, which passed it on the way in); an in-flight pod will come back
    /// to activeQ or backoffQ whatever its hints say. Returns whether a queued pod moved.
    pub fn activate(&mut self, uid: PodUid) -> bool {
        let from_backoff = match self.pods.get(&uid).map(|e| (e.loc, e.preemption_gated)) {
            Some((Location::Backoff, _)) => true,
            Some((Location::Unschedulable, _)) => false,
            Some(_) => return false,
            None => {
                if self.in_flight.contains_key(&uid) {
                    self.force_activated.insert(uid);
                }
                return false;
            }
        };
        let pod = self.take(uid).expect("queued pod");
        if !(from_backoff && self.pop_from_backoff) && self.preempting.contains(&uid) {
            self.place_gated_by_preemption(pod);
            return false;
        }
        self.place(pod, Location::Active);
        true
    }

    /// Removes a pod (deleted while pending, or its gate-less replacement added). Returns it if queued.
    pub fn delete(&mut self, uid: PodUid) -> Option<QueuedPod<T>> {
        self.in_flight.remove(&uid);
        self.force_activated.remove(&uid);
        self.take(uid)
    }

    /// The earliest time at which the queue changes by itself (a backoff flush tick that moves a pod,
    /// or a leftover tick that flushes an unschedulable pod), for a virtual-time driver. `None` when
    /// nothing is pending.
    pub fn next_wakeup_nanos(&mut self) -> Option<u64> {
        for error in [false, true] {
            loop {
                let heap = if error { &self.error_backoff } else { &self.backoff };
                let Some(k) = heap.peek() else { break };
                if self.is_current(k.uid, k.seq, Location::Backoff) {
                    break;
                }
                if error {
                    self.error_backoff.pop();
                } else {
                    self.backoff.pop();
                }
            }
        }
        // A pod flushes at the first tick after its expiry (the expiry itself is still backing off).
        let tick = |expiry: u64, every: u64| (expiry / every + 1).saturating_mul(every);
        let backoff = [self.backoff.peek(), self.error_backoff.peek()]
            .into_iter()
            .flatten()
            .map(|k| tick(k.expiry_nanos, BACKOFF_FLUSH_INTERVAL_NANOS))
            .min();
        let first = match (self.unschedulable.first(), self.parked.first()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let leftover = first.map(|&(ts, _)| {
            tick(ts.saturating_add(self.max_in_unschedulable_nanos), UNSCHEDULABLE_FLUSH_INTERVAL_NANOS)
        });
        match (backoff, leftover) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests;
