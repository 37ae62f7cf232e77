//! The plugin interface: one method per extension point, each with a default that says "not
//! implemented here". Which plugins run at which point is decided by the profile (the config), as
//! upstream; a plugin's method is called only at the points it is enabled for.
//!
//! Dynamic dispatch is paid once per pod (PreFilter, PreScore) or once per chunk of nodes (Filter,
//! Score), never once per node.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use rand::RngCore;

use super::points::WaitingPods;
use super::runtime::Diagnosis;
use super::sign::{Sign, SignBuilder};
use super::status::{Code, Reject, Status};
use super::Framework;
use crate::ids::PodUid;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot, Sym};

/// What a plugin sees of the cycle: the snapshot and the pod being scheduled.
#[derive(Clone, Copy)]
pub struct CycleCx<'a> {
    pub snap: &'a Snapshot,
    pub pod: &'a PodInfo,
}

/// Per-pod state written at PreFilter/PreScore and read at Filter/Score, keyed by plugin name.
#[derive(Default)]
pub struct CycleState {
    entries: Vec<(&'static str, Box<dyn Any + Send + Sync>)>,
}

impl CycleState {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn write<T: Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        if let Some(e) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            e.1 = Box::new(value);
        } else {
            self.entries.push((key, Box::new(value)));
        }
    }

    pub fn read<T: Any>(&self, key: &'static str) -> Option<&T> {
        self.entries.iter().find(|(k, _)| *k == key).and_then(|(_, v)| v.downcast_ref::<T>())
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// What PreFilter returns besides its status: optionally, the only nodes worth filtering.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreFilterResult {
    /// `Some(names)`: only these nodes can pass (`PreFilterResult.NodeNames`).
    pub node_names: Option<Vec<crate::snapshot::Sym>>,
}

/// What QueueSort compares: a queued pod's priority and queue timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSortKey {
    pub priority: i32,
    pub timestamp_nanos: u64,
}

/// QueueSort's `Less`: whether `a` is popped before `b`. A plain function, so the queue pays no
/// dynamic dispatch per comparison.
pub type QueueSortFn = fn(&QueueSortKey, &QueueSortKey) -> bool;

/// A pod in its binding cycle, as PreBind, Bind and PostBind see it. They run on binder threads,
/// which do not read the snapshot (and get no cycle state).
#[derive(Clone, Copy, Debug)]
pub struct BindingPod<'a> {
    pub uid: PodUid,
    pub namespace: &'a str,
    pub name: &'a str,
    pub node: &'a str,
}

/// A node where a PostFilter plugin would make room for the pod, and the pods it would evict
/// (most important first).
#[derive(Clone, Debug)]
pub struct PostFilterCandidate {
    pub node: Sym,
    pub victims: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: usize,
}

/// What a PostFilter plugin would do for an unschedulable pod, found without nominating or
/// evicting anything (`explain`, `verify`): its candidates, the one it would pick, and why it
/// cannot help when it cannot (upstream's words).
#[derive(Clone, Debug, Default)]
pub struct PostFilterPlan {
    pub candidates: Vec<PostFilterCandidate>,
    /// An index into `candidates`.
    pub chosen: Option<usize>,
    /// The candidates (indices) upstream may pick instead of `chosen`, which it reaches by visiting
    /// the nodes from a random offset; filled by exhaustive plans, `chosen` included.
    pub may_nominate: Vec<usize>,
    /// The plugin's PostFilter status message when it does not nominate (as upstream words it,
    /// e.g. DefaultPreemption's "preemption: ...").
    pub message: Option<String>,
    /// The plugin's PostFilter would return an Error: PostFilter ends there (no later plugin runs).
    pub error: bool,
}

/// What a successful PostFilter decided (`PostFilterResult` with its nominating info): nominate
/// `pod` (a copy with `nominated_node` set; the snapshot already records the nomination) on
/// `node` once `victims` are evicted.
#[derive(Clone, Debug)]
pub struct PostFilterResult {
    pub node: Sym,
    pub pod: Arc<PodInfo>,
    /// Most important first, the order upstream deletes them in.
    pub victims: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: usize,
    /// Lower-priority pods nominated to the same node whose nomination was cleared.
    pub cleared_nominations: Vec<PodUid>,
}

/// What a pod's scores depend on besides the node row (see [`Plugin::score_memo_key`]): compared
/// exactly, never hashed.
pub type ScoreMemoKey = smallvec::SmallVec<[i64; 4]>;

/// A scheduling framework plugin.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// Whether this plugin is one of upstream's `SignPlugin`s. A profile signs pods (and so can
    /// batch them, OpportunisticBatching) only when every plugin at PreFilter, Filter, PreScore and
    /// Score is ([`crate::framework::sign`]).
    fn signs_pods(&self) -> bool {
        false
    }

    /// `SignPod`: writes this plugin's fragments of the pod's signature, or says it cannot sign the
    /// pod. Asked only of plugins whose [`Plugin::signs_pods`] is true.
    fn sign_pod(&self, _pod: &PodInfo, _sig: &mut SignBuilder) -> Sign {
        Sign::Signed
    }

    /// This plugin, as configured, cannot sign any pod (PodTopologySpread with default
    /// constraints): the profile then signs nothing, without asking per pod.
    fn signs_no_pod(&self) -> bool {
        false
    }

    /// The scheduler-enforced node selector this plugin's queueing hint checks a node against
    /// before the pod's own (NodeAffinity's `addedAffinity`); `None` for the others.
    fn enforced_node_selector(&self) -> Option<&crate::snapshot::NodeSelector> {
        None
    }

    /// PodTopologySpread: every default constraint of the profile is `ScheduleAnyway` (the system
    /// defaults are), so a pod without constraints of its own has no hard ones for the queueing
    /// hint to read. False for the others, and when a default is `DoNotSchedule`.
    fn spread_defaults_soft(&self) -> bool {
        false
    }

    /// PreEnqueue: `Success` lets the pod into the active queue; `Pending`/`UnschedulableAndUnresolvable` keep it out.
    fn pre_enqueue(&self, _pod: &PodInfo) -> Status {
        Status::success()
    }

    /// QueueSort: the order of the active queue (`Less`); `None` for a plugin that is not one.
    fn queue_sort_less(&self) -> Option<QueueSortFn> {
        None
    }

    /// PostFilter, for a pod no node passed: `Ok` nominates a node (after evicting victims);
    /// `Err` says why not (Unschedulable lets the next PostFilter plugin try). Gets the framework
    /// to re-run PreFilter and Filter on changed nodes (upstream's handle) and the cycle's RNG.
    fn post_filter(
        &self,
        _fw: &Framework,
        _snap: &mut Snapshot,
        _pod: &PodInfo,
        _diag: &Diagnosis,
        _rng: &mut dyn RngCore,
    ) -> Result<PostFilterResult, Status> {
        Err(Status { code: Code::Unschedulable, reasons: Vec::new(), plugin: "" })
    }

    /// PostFilter as a dry run: what this plugin would do, leaving the snapshot as it found it.
    /// `exhaustive` looks at every potential node (upstream stops at enough candidates). `None`:
    /// the plugin has nothing to show.
    fn post_filter_plan(
        &self,
        _fw: &Framework,
        _snap: &mut Snapshot,
        _pod: &PodInfo,
        _diag: &Diagnosis,
        _exhaustive: bool,
    ) -> Option<PostFilterPlan> {
        None
    }

    /// Why PostFilter cannot help, as upstream's message words it, found without changing
    /// anything (a dry run over every node; the real PostFilter may stop early). For reports and
    /// `explain`; `None` when this plugin would succeed or has nothing to say.
    fn post_filter_message(
        &self,
        _fw: &Framework,
        _snap: &mut Snapshot,
        _pod: &PodInfo,
        _diag: &Diagnosis,
    ) -> Option<String> {
        None
    }

    /// PreFilter: compute per-pod state; may reject the pod outright, skip this plugin's Filter,
    /// or narrow the nodes to filter.
    fn pre_filter(&self, _cx: CycleCx<'_>, _state: &mut CycleState) -> (Status, PreFilterResult) {
        (Status::success(), PreFilterResult::default())
    }

    /// Filter: for each node in `nodes` write `None` (passes) or a rejection into `out[i]`.
    /// `out` has the same length as `nodes` and is all `None` on entry.
    fn filter(&self, _cx: CycleCx<'_>, _state: &CycleState, _nodes: &[NodeIdx], _out: &mut [Option<Reject>]) {}

    /// [`Plugin::filter`] for a plugin whose loop knows whether it rejected a node: writes `out` as
    /// `filter` does and returns `Some(rejected any)`. The default does nothing and returns `None`:
    /// the caller runs `filter` and scans `out`. (An override must not call `filter` itself, nor
    /// `filter` it: the instruction report counts both methods as Filter, inclusively.)
    fn filter_any(
        &self,
        _cx: CycleCx<'_>,
        _state: &CycleState,
        _nodes: &[NodeIdx],
        _out: &mut [Option<Reject>],
    ) -> Option<bool> {
        None
    }

    /// Whether Filter can reject no node of the snapshot for this pod (after PreFilter ran), so
    /// the framework may leave it out of the filter pass: every verdict is the same without it.
    /// Must never say `true` when some node could be rejected. Checked once per cycle, so it must
    /// cost O(1) or O(pod), not O(nodes).
    fn filter_rejects_none(&self, _cx: CycleCx<'_>, _state: &CycleState) -> bool {
        false
    }

    /// A superset of the nodes this plugin's Filter can pass for the pod (after PreFilter ran),
    /// in row order, written into `out` (cleared first), when the plugin knows one without looking
    /// at every node (NodeResourcesFit: the nodes carrying a rare extended resource the pod
    /// requests; PodTopologySpread: the nodes its PreFilter found passing); every node left
    /// out is rejected by this plugin's Filter, or, when `untolerated_rejected` (another active
    /// Filter plugin rejects them: [`Plugin::filter_rejects_untolerated_taints`]), carries a
    /// NoSchedule/NoExecute taint the pod does not tolerate. False (the default)
    /// when it offers none. The engine may then evaluate only these nodes
    /// ([`crate::engine::cycle::SPARSE_FILTER_DIVISOR`]); must cost O(pod + result), not O(nodes)
    /// (a row bitset read 64 nodes at a time counts as O(result)).
    fn filter_candidates(
        &self,
        _cx: CycleCx<'_>,
        _state: &CycleState,
        _untolerated_rejected: bool,
        _out: &mut Vec<NodeIdx>,
    ) -> bool {
        false
    }

    /// Whether this plugin's Filter rejects every node carrying a NoSchedule or NoExecute taint
    /// the pod does not tolerate (`tolerations_tolerate`), whatever else it checks: TaintToleration.
    /// Lets another plugin's [`Plugin::filter_candidates`] leave such nodes out.
    fn filter_rejects_untolerated_taints(&self) -> bool {
        false
    }

    /// The reason strings for a rejection this plugin wrote.
    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, _reject: Reject) -> Vec<String> {
        Vec::new()
    }

    /// PreScore: `Skip` drops this plugin's Score for this pod.
    fn pre_score(&self, _cx: CycleCx<'_>, _state: &mut CycleState, _feasible: &[NodeIdx]) -> Status {
        Status::success()
    }

    /// The error upstream's Score returns when it cannot read the state its PreScore writes: a
    /// profile that enables this plugin at Score but not at PreScore makes every cycle that scores
    /// fail with it (the text of `cycleState.Read`'s error). `None`: Score needs no PreScore state.
    fn score_state_missing(&self) -> Option<&'static str> {
        None
    }

    /// Score: raw scores for `nodes` into `out` (same length). Every entry of `out` must be
    /// written: the engine reuses the buffer between plugins without clearing it.
    fn score(&self, _cx: CycleCx<'_>, _state: &CycleState, _nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        out.fill(0);
        Ok(())
    }

    /// Whether this plugin's Filter reads placed pods only through the request columns and the
    /// pod count (for a pod that requests no scalar resource), or reads only the node and the pod:
    /// then shifting those columns by a pod is, for its verdict, what placing the pod does.
    fn filter_reads_only_columns(&self) -> bool {
        false
    }

    /// Whether Score followed by NormalizeScore gives every one of `nodes` the same in-range score
    /// for this pod (after PreScore ran). Such a plugin adds the same amount to every node's total,
    /// so it cannot change host selection (ties are broken by position, not by value), and the
    /// engine leaves it out of a cycle that keeps no per-plugin table (`explain` keeps one). Must
    /// never say `true` when scores could differ. Checked once per cycle: O(1) or O(pod).
    fn score_is_uniform(&self, _cx: CycleCx<'_>, _state: &CycleState) -> bool {
        false
    }

    /// A key for this pod's scores when a node's Score is a function of the key and of the
    /// node's `NodeTable` row alone (every input is in the row, so the row's generation moves
    /// whenever the score can) and NormalizeScore leaves scores unchanged. Pods with equal keys
    /// get equal scores on a row of the same generation: the engine keeps each row's score per
    /// key and scores only rows whose generation moved. `None` (the default): scored every cycle.
    fn score_memo_key(&self, _cx: CycleCx<'_>, _state: &CycleState) -> Option<ScoreMemoKey> {
        None
    }

    /// NormalizeScore over every scored node (`nodes[i]` has `scores[i]`).
    fn normalize(&self, _cx: CycleCx<'_>, _state: &CycleState, _nodes: &[NodeIdx], _scores: &mut [i64]) {}

    /// Reserve: called after the pod is assumed on `node`.
    fn reserve(&self, _cx: CycleCx<'_>, _state: &mut CycleState, _node: NodeIdx) -> Status {
        Status::success()
    }

    /// Unreserve: undo Reserve after a later failure.
    fn unreserve(&self, _cx: CycleCx<'_>, _state: &mut CycleState, _node: NodeIdx) {}

    /// Permit: `Success`, a rejection, or `Wait` with its timeout. `waiting` is the profile's
    /// pods waiting on Permit: a plugin may allow or reject them (a gang that is now complete).
    fn permit(
        &self,
        _cx: CycleCx<'_>,
        _state: &mut CycleState,
        _node: NodeIdx,
        _waiting: &mut WaitingPods,
    ) -> (Status, Duration) {
        (Status::success(), Duration::ZERO)
    }

    /// PreBind: a failure fails the binding cycle (the pod is unreserved, forgotten and retried).
    fn pre_bind(&self, _pod: &BindingPod<'_>) -> Status {
        Status::success()
    }

    /// Bind: `Skip` passes the pod to the next Bind plugin; `Success` takes it (the binder then
    /// writes the binding through the node agent, which stands in for the API server).
    fn bind(&self, _pod: &BindingPod<'_>) -> Status {
        Status::skip()
    }

    /// PostBind: informational, after the binding succeeded.
    fn post_bind(&self, _pod: &BindingPod<'_>) {}

    /// Whether this plugin's filter verdicts can be changed by preemption (used by the queue's hints
    /// and PostFilter); by default `Unschedulable` can and `UnschedulableAndUnresolvable` cannot.
    fn resolvable(&self, code: Code) -> bool {
        code == Code::Unschedulable
    }
}

/// `helper.DefaultNormalizeScore`: scale to [0, max] by the highest raw score; `reverse` flips.
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [i64]) {
    let max_count = scores.iter().copied().fold(0, i64::max);
    if max_count == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max_priority);
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut v = max_priority * *s / max_count;
        if reverse {
            v = max_priority - v;
        }
        *s = v;
    }
}

/// The highest node score (`framework.MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_normalize_score_table() {
        // (raw, reverse, want): cases of plugins/helper/normalize_score_test.go.
        let cases: &[(&[i64], bool, &[i64])] = &[
            (&[10, 20, 30, 40], false, &[25, 50, 75, 100]),
            (&[10, 20, 30, 40], true, &[75, 50, 25, 0]),
            (&[0, 0, 0], false, &[0, 0, 0]),
            (&[0, 0, 0], true, &[100, 100, 100]),
            (&[1000, 10, 20, 30], false, &[100, 1, 2, 3]),
            (&[1000, 10, 20, 30], true, &[0, 99, 98, 97]),
            (&[1, 1, 1, 1], false, &[100, 100, 100, 100]),
        ];
        for (raw, reverse, want) in cases {
            let mut s = raw.to_vec();
            default_normalize_score(100, *reverse, &mut s);
            assert_eq!(&s, want, "raw {raw:?} reverse {reverse}");
        }
    }

    #[test]
    fn cycle_state_overwrites_by_key() {
        let mut s = CycleState::new();
        s.write("A", 1u32);
        s.write("A", 2u32);
        s.write("B", "x");
        assert_eq!(s.read::<u32>("A"), Some(&2));
        assert_eq!(s.read::<&str>("B"), Some(&"x"));
        assert_eq!(s.read::<u32>("B"), None);
    }
}
