//! DefaultPreemption (PostFilter): find nodes where evicting lower-priority pods lets the pod fit,
//! pick one, and nominate it. `plugins/defaultpreemption/default_preemption.go` and
//! `framework/preemption/preemption.go`.
//!
//! Dry runs mutate the snapshot in place (unplace the lower-priority pods, re-place reprieved
//! ones, restore everything before moving on), re-running PreFilter on the changed snapshot where
//! upstream calls the PreFilter extensions' AddPod/RemovePod. The snapshot is identical before and
//! after a preemption attempt, except for the order of pods within a node.
//!
//! When only NodeResourcesFit can change a node's verdict (PreFilter does not read placed pods,
//! every other Filter left reads only the node, and no pod involved carries terms, host ports or
//! scalar resources), the dry run moves the pods on the request columns alone
//! ([`try_node_on_columns`]) and leaves the pod list in the order the plain run would; a
//! node that cannot fit the pod even without them is answered from their summed requests
//! ([`still_unfit_on_columns`]). Without PodDisruptionBudgets the whole node is tried from its
//! `pod_meta` row ([`try_node_on_meta`]: sums and positions, no pod looked up), and a candidate's
//! victims are looked up only when the dry run returns it ([`Victim`], [`victim_pods`]). A
//! property test holds all of them to the plain run.

mod fit_local;
pub mod podgroup;
#[cfg(test)]
mod tests;
pub mod units;

pub use units::{GroupMeta, PodGroupTable};

use std::sync::Arc;

use rand::Rng;

use crate::framework::runtime::{filter_node, nominated_for, Diagnosis};
use crate::framework::{
    Code, CycleCx, CycleState, Framework, Plugin, PluginId, PostFilterCandidate, PostFilterPlan, PostFilterResult,
    Reject, Status,
};
use crate::ids::PodUid;
use crate::plugins::noderesources;
use crate::snapshot::{NodeIdx, Pdb, PodInfo, PreemptionPolicy, PriorityClass, Snapshot, Sym};

pub const NAME: &str = "DefaultPreemption";

/// The plugin with its `DefaultPreemptionArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultPreemption {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemption {
    fn default() -> Self {
        DefaultPreemption { min_candidate_nodes_percentage: 10, min_candidate_nodes_absolute: 100 }
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    fn post_filter(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        rng: &mut dyn rand::RngCore,
    ) -> Result<PostFilterResult, Status> {
        match self.preempt(fw, snap, pod, diag, rng) {
            Ok((p, nominated)) => Ok(PostFilterResult {
                node: p.node,
                pod: nominated,
                victims: p.victims,
                num_pdb_violations: p.num_pdb_violations,
                cleared_nominations: p.cleared_nominations,
            }),
            Err(NoPreemption::NotEligible(m) | NoPreemption::NoCandidates(m)) => {
                Err(Status::new(Code::Unschedulable, m))
            }
        }
    }

    fn post_filter_message(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
    ) -> Option<String> {
        match self.dry_run(fw, snap, pod, diag, false) {
            Ok(run) => run.message.map(status_message),
            Err(NoPreemption::NotEligible(m) | NoPreemption::NoCandidates(m)) => Some(status_message(m)),
        }
    }

    fn post_filter_plan(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        exhaustive: bool,
    ) -> Option<PostFilterPlan> {
        Some(match self.dry_run(fw, snap, pod, diag, exhaustive) {
            Err(NoPreemption::NotEligible(m) | NoPreemption::NoCandidates(m)) => {
                PostFilterPlan { message: Some(status_message(m)), ..PostFilterPlan::default() }
            }
            Ok(run) => PostFilterPlan {
                candidates: run.candidates,
                chosen: run.chosen,
                may_nominate: run.may_nominate,
                message: run.message.map(status_message),
                error: false,
            },
        })
    }
}

/// The message of DefaultPreemption's PostFilter status: the evaluator's, prefixed as
/// `DefaultPreemption.PostFilter` prefixes it.
fn status_message(m: String) -> String {
    format!("preemption: {m}")
}

/// A successful preemption: the node to nominate and the pods to delete.
#[derive(Clone, Debug)]
pub struct Preemption {
    pub node: Sym,
    /// Victims, most important first (`MoreImportantPod` order).
    pub victims: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: usize,
    /// Lower-priority pods nominated to the same node whose nomination was cleared.
    pub cleared_nominations: Vec<PodUid>,
}

/// Why PostFilter found nothing to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoPreemption {
    /// `PodEligibleToPreemptOthers` said no (the message says why).
    NotEligible(String),
    /// No node where preemption helps.
    NoCandidates(String),
}

/// `PodEligibleToPreemptOthers`: `preemptionPolicy: Never` never preempts; a pod whose nominated
/// node still has a terminating lower-priority pod waits for it, unless the filters found that
/// node UnschedulableAndUnresolvable (then it may preempt elsewhere). Terminating pods stand in
/// for upstream's "terminating because of preemption" condition.
pub fn eligible_to_preempt(snap: &Snapshot, pod: &PodInfo, diag: Option<&Diagnosis>) -> Result<(), NoPreemption> {
    if pod.preemption_policy == PreemptionPolicy::Never {
        return Err(NoPreemption::NotEligible("not eligible due to preemptionPolicy=Never.".into()));
    }
    if let Some(idx) = pod.nominated_node.and_then(|n| snap.nodes.idx_of(n)) {
        let unresolvable = diag.is_some_and(|d| {
            d.failures.iter().any(|f| f.node == idx && f.reject.code == Code::UnschedulableAndUnresolvable)
        });
        let terminating_victim = snap.nodes.pods[idx.ix()].iter().any(|u| {
            let p = &snap.pods[u].info;
            p.terminating && units::victim_priority(snap, p) < pod.priority
        });
        if terminating_victim && !unresolvable {
            return Err(NoPreemption::NotEligible(
                "not eligible due to a terminating pod on the nominated node.".into(),
            ));
        }
    }
    Ok(())
}

/// `calculateNumCandidates`: n·pct/100, at least `absolute`, at most n.
pub fn num_candidates(n: usize, percentage: i32, absolute: i32) -> usize {
    let k = n * percentage.max(0) as usize / 100;
    k.max(absolute.max(0) as usize).min(n)
}

/// `MoreImportantPod`: higher priority, then earlier start time.
pub fn more_important(a: &PodInfo, b: &PodInfo) -> std::cmp::Ordering {
    b.priority.cmp(&a.priority).then(a.constraints.start_time_ms.cmp(&b.constraints.start_time_ms))
}

/// `resolve_priority`: a pod's priority and preemption policy from its `priorityClassName`, the
/// global default class (the lowest-valued one if several, as the Priority admission plugin picks),
/// or 0 / PreemptLowerPriority. `Err` names a missing class (upstream's
/// admission rejects such a pod).
pub fn resolve_priority(class_name: Option<Sym>, classes: &[PriorityClass]) -> Result<(i32, PreemptionPolicy), Sym> {
    match class_name {
        Some(name) => classes.iter().find(|c| c.name == name).map(|c| (c.value, c.preemption_policy)).ok_or(name),
        None => Ok(classes
            .iter()
            .filter(|c| c.global_default)
            .min_by_key(|c| c.value)
            .map_or((0, PreemptionPolicy::PreemptLowerPriority), |c| (c.value, c.preemption_policy))),
    }
}

/// The outcome of PreFilter: the per-plugin skip flags and the node-name restriction, or the
/// plugin that rejected the pod.
pub type PreFiltered = Result<(CycleState, Vec<bool>, Option<Vec<Sym>>), PluginId>;

fn run_pre_filter(fw: &Framework, snap: &Snapshot, pod: &PodInfo) -> PreFiltered {
    let mut state = CycleState::new();
    match fw.run_pre_filter(CycleCx { snap, pod }, &mut state) {
        Ok((skip, names, _)) => Ok((state, skip, names)),
        Err((pid, _)) => Err(pid),
    }
}

/// Runs PreFilter (or reuses `cached` when PreFilter does not read placed pods) and every Filter
/// on `node` in the snapshot as it is now; the first rejection, if any.
fn fits_now(
    fw: &Framework,
    snap: &Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
) -> Option<(PluginId, Reject)> {
    let owned;
    let pre = match cached {
        Some(c) => c,
        None => {
            owned = run_pre_filter(fw, snap, pod);
            &owned
        }
    };
    let (state, skip, names) = match pre {
        Ok(v) => v,
        Err(pid) => return Some((*pid, Reject::unresolvable(u64::MAX))),
    };
    if let Some(ns) = names {
        if !ns.contains(&snap.nodes.name[node.ix()]) {
            return Some((usize::MAX, Reject::unresolvable(u64::MAX)));
        }
    }
    filter_node(fw, CycleCx { snap, pod }, state, skip, node)
}

/// `RunFilterPluginsWithNominatedPods` for one node: with the node's nominated pods added (placed
/// for the check), then without them if any were added; both must pass. Restores the snapshot.
pub fn fits_with_nominated(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
) -> Option<(PluginId, Reject)> {
    let name = snap.nodes.name[node.ix()];
    let nominated = nominated_for(snap, pod, name);
    let mut added = Vec::new();
    for p in nominated {
        if !snap.pods.contains_key(&p.uid) && snap.place_pod(p.clone(), name).is_ok() {
            added.push(p.uid);
        }
    }
    // Nominated pods may carry terms that select the pod: PreFilter runs afresh with them.
    let with = fits_now(fw, snap, pod, node, if added.is_empty() { cached } else { None });
    for uid in &added {
        snap.unplace_pod(*uid);
    }
    if with.is_some() || added.is_empty() {
        return with;
    }
    fits_now(fw, snap, pod, node, cached)
}

/// A victim as the candidate ordering reads it: its pod is looked up ([`victim_pods`]) only
/// for the candidates a dry run returns, not for every node it tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Victim {
    uid: PodUid,
    priority: i32,
    start_time_ms: i64,
    start_time_known: bool,
}

impl Victim {
    fn of(p: &PodInfo) -> Victim {
        Victim {
            uid: p.uid,
            priority: p.priority,
            start_time_ms: p.constraints.start_time_ms,
            start_time_known: p.constraints.start_time_known,
        }
    }
}

/// The placed pods of `victims`, in order (every victim is placed: dry runs restore the snapshot).
fn victim_pods(snap: &Snapshot, victims: &[Victim]) -> Vec<Arc<PodInfo>> {
    victims.iter().map(|v| snap.pods[&v.uid].info.clone()).collect()
}

/// Victims chosen on one node.
#[derive(Clone, Debug)]
struct Candidate {
    node: NodeIdx,
    victims: Vec<Victim>,
    num_pdb_violations: usize,
}

fn pdb_matches(pdb: &Pdb, pod: &PodInfo, snap: &Snapshot) -> bool {
    pdb.namespace == pod.namespace && !pdb.selector.is_empty() && pdb.selector.matches(&pod.labels, &snap.interner)
}

/// `filterPodsWithPDBViolation`: splits pods (in order) into those whose eviction would exceed a
/// matching budget and the rest, consuming budgets as it goes.
fn split_by_pdb(snap: &Snapshot, pods: Vec<Arc<PodInfo>>) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let pdbs = &snap.cluster.pdbs;
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let (mut violating, mut ok) = (Vec::new(), Vec::new());
    for p in pods {
        let mut violates = false;
        for (i, pdb) in pdbs.iter().enumerate() {
            if !pdb_matches(pdb, &p, snap) || pdb.disrupted_pods.iter().any(|n| *n == p.name) {
                continue;
            }
            allowed[i] -= 1;
            if allowed[i] < 0 {
                violates = true;
            }
        }
        if violates {
            violating.push(p);
        } else {
            ok.push(p);
        }
    }
    (violating, ok)
}

/// `SelectVictimsOnNode`: remove every lower-priority pod; if the pod then fits, reprieve pods
/// (PDB-violating first, each group most important first) while it still fits. With
/// `on_columns` (from [`columns_plan`]), a node where nothing but the request columns can
/// change a verdict is tried on them ([`try_node_on_columns`]).
fn select_victims_on_node(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
    on_columns: Option<OnColumns>,
    local: Option<(&fit_local::LocalPlan, bool)>,
) -> Option<Candidate> {
    try_node_with(fw, snap, pod, node, cached, on_columns, local).ok()
}

/// Why a node tried by a dry run is not a candidate (upstream's per-node status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotCandidate {
    /// No pod of lower priority runs there: "No preemption victims found for incoming pod".
    NoLowerPriorityPods,
    /// The pod does not fit even with every lower-priority pod removed: the first failing filter.
    StillUnfit(PluginId, Reject),
    /// As `StillUnfit`, where which Filter fails was not worked out ([`OnColumns::reasons`] off:
    /// PostFilter itself reads only whether a node is a candidate).
    Unfit,
}

/// How [`try_node`] may try a node on the request columns, decided once per pod ([`columns_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnColumns {
    /// NodeResourcesFit is among the Filters that run for the pod. Every other one reads only the
    /// node ([`columns_suffice`]), so once the pod fits a node with every lower-priority pod gone,
    /// only Fit can turn the verdict: each reprieve is [`noderesources::rejects_core_with`] on a
    /// running sum, and a node Fit rejects with those pods gone is not a candidate without any
    /// Filter run.
    pub fit_in_row: bool,
    /// Work out which Filter rejects a node that is not a candidate
    /// ([`NotCandidate::StillUnfit`]): `explain` and `verify` report it.
    pub reasons: bool,
}

/// Whether this pod's dry run may try nodes on the request columns: PreFilter ran once (it does
/// not read placed pods), the pod requests no scalar resource, and every Filter that PreFilter
/// did not skip is NodeResourcesFit (which reads the request columns and the pod count alone
/// when the pod requests no scalar resource) or reads only the node (`Framework::filters_read_only_columns`).
fn columns_suffice(fw: &Framework, pod: &PodInfo, cached: Option<&PreFiltered>) -> bool {
    let Some(Ok((_, skip, _))) = cached else { return false };
    fw.filters_read_only_columns(pod, skip)
}

/// [`OnColumns`] for this pod when [`columns_suffice`], else `None` (the plain run).
fn columns_plan(fw: &Framework, pod: &PodInfo, cached: Option<&PreFiltered>, reasons: bool) -> Option<OnColumns> {
    if !columns_suffice(fw, pod, cached) {
        return None;
    }
    let Some(Ok((_, skip, _))) = cached else { return None };
    let fit_in_row = fw.filter.iter().any(|&pid| !skip[pid] && fw.plugin(pid).name() == noderesources::FIT);
    Some(OnColumns { fit_in_row, reasons })
}

/// A pod the columns path may move without touching anything else place and unplace touch: no
/// host ports, no scalar resources, no (anti-)affinity or spread terms.
pub fn plain_on_columns(p: &PodInfo) -> bool {
    p.plain_on_columns()
}

/// The nominated pods that count on `node` when the columns path may stand in for the plain one
/// there, or `None`: every lower-priority pod and every such nominated pod is
/// [`plain_on_columns`], and no nominated pod is placed already. Then the plain run's placing
/// and unplacing leaves the snapshot as it was (counters return, the pod list's order is
/// rebuilt), and its fresh PreFilter with the nominated pods placed equals the cached one (they
/// carry no term PreFilter reads).
fn movable_on_columns(
    snap: &Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    lower: &[Arc<PodInfo>],
) -> Option<Vec<Arc<PodInfo>>> {
    if !lower.iter().all(|p| plain_on_columns(p)) {
        return None;
    }
    let nominated = nominated_for(snap, pod, snap.nodes.name[node.ix()]);
    nominated.iter().all(|p| plain_on_columns(p) && !snap.pods.contains_key(&p.uid)).then_some(nominated)
}

/// [`select_victims_on_node`] with the reason a node is not a candidate (the tests' entry: the
/// dry runs pass their plan in locals to [`try_node_with`]).
#[cfg(test)]
fn try_node(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
    on_columns: Option<OnColumns>,
) -> Result<Candidate, NotCandidate> {
    try_node_with(fw, snap, pod, node, cached, on_columns, None)
}

/// [`try_node`], in locals when `local` holds a plan ([`fit_local::try_node_local`]; the flag says
/// the failing cycle's diagnosis has NodeResourcesFit rejecting the node).
fn try_node_with(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
    on_columns: Option<OnColumns>,
    local: Option<(&fit_local::LocalPlan, bool)>,
) -> Result<Candidate, NotCandidate> {
    // GenericWorkload: pods of PodGroups are weighed (and evicted) as preemption units.
    if units::applies(snap, node) {
        return units::try_node_units(fw, snap, pod, node, cached);
    }
    if let (Some((lp, fit_rejected)), Some(Ok((state, _, _)))) = (local, cached) {
        if let Some(out) = fit_local::try_node_local(fw, snap, pod, node, state, lp, fit_rejected) {
            return out;
        }
    }
    if let (Some(pre), Some(plan)) = (cached, on_columns) {
        if let Some(out) = try_node_on_meta(fw, snap, pod, node, pre, plan) {
            return out;
        }
        if let Some(unfit) = still_unfit_on_columns(fw, snap, pod, node, pre) {
            return Err(unfit);
        }
    }
    let lower: Vec<Arc<PodInfo>> = snap.nodes.pods[node.ix()]
        .iter()
        .map(|u| &snap.pods[u].info)
        .filter(|p| p.priority < pod.priority)
        .cloned()
        .collect();
    if lower.is_empty() {
        return Err(NotCandidate::NoLowerPriorityPods);
    }
    if let (Some(pre), Some(_)) = (cached, on_columns) {
        if let Some(nominated) = movable_on_columns(snap, pod, node, &lower) {
            return try_node_on_columns(fw, snap, pod, node, pre, lower, &nominated);
        }
    }
    try_node_plain(fw, snap, pod, node, cached, lower)
}

/// The first check of [`try_node_on_columns`] (does the pod fit with every lower-priority pod
/// gone?) without collecting anything: the lower-priority pods leave the columns as one sum.
/// `Some` when the node is not a candidate, with the pod list as the plain run leaves it (the
/// other pods, then the lower-priority ones, in order); `None` when the node may be a candidate,
/// has no lower-priority pod, or the columns path does not apply ([`movable_on_columns`]): then
/// [`try_node`] goes on as before, from an unchanged snapshot.
fn still_unfit_on_columns(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    pre: &PreFiltered,
) -> Option<NotCandidate> {
    let LowerOnRow { sum: lower, count, interleaved } = lower_on_row(snap, node, pod.priority)?;
    if count == 0 {
        return None;
    }
    let name = snap.nodes.name[node.ix()];
    let mut nominated = crate::snapshot::nodes::CoreRequests::default();
    if let Some(v) = snap.nominated.get(&name) {
        for p in v.iter().filter(|p| p.uid != pod.uid && p.priority >= pod.priority) {
            if !plain_on_columns(p) || snap.pods.contains_key(&p.uid) {
                return None;
            }
            nominated.add(p);
        }
    }
    snap.nodes.shift_core_sum(node, &lower, -1);
    // `fits_with_nominated`: with the nominated pods, then (if any) without them.
    let mut unfit = None;
    if nominated.pods > 0 {
        snap.nodes.shift_core_sum(node, &nominated, 1);
        unfit = fits_now(fw, snap, pod, node, Some(pre));
        snap.nodes.shift_core_sum(node, &nominated, -1);
    }
    if unfit.is_none() {
        unfit = fits_now(fw, snap, pod, node, Some(pre));
    }
    snap.nodes.shift_core_sum(node, &lower, 1);
    let (pid, reject) = unfit?;
    if interleaved {
        snap.nodes.partition_by_priority(node, pod.priority, true, []);
    }
    Some(NotCandidate::StillUnfit(pid, reject))
}

/// A node's pods of priority below `priority`, read from its [`crate::snapshot::nodes::PodMeta`]
/// row as one sum of their requests (nothing looked up or collected).
pub(super) struct LowerOnRow {
    pub sum: crate::snapshot::nodes::CoreRequests,
    pub count: usize,
    /// Some pod that stays comes after a lower-priority one: the pod list must be reordered as
    /// the plain run leaves it.
    pub interleaved: bool,
}

/// [`LowerOnRow`] of `node`; `None` when one of its lower-priority pods is not plain on the
/// columns (the columns paths do not apply).
pub(super) fn lower_on_row(snap: &Snapshot, node: NodeIdx, priority: i32) -> Option<LowerOnRow> {
    let mut out = LowerOnRow { sum: Default::default(), count: 0, interleaved: false };
    for m in &snap.nodes.pod_meta[node.ix()] {
        if m.priority < priority {
            if !m.plain {
                return None;
            }
            out.sum.add_sum(&m.requests);
            out.count += 1;
        } else if out.count > 0 {
            out.interleaved = true;
        }
    }
    Some(out)
}

/// [`try_node_on_columns`] read from the node's [`crate::snapshot::nodes::PodMeta`] row, with no
/// pod looked up and nothing collected but positions: the lower-priority pods leave and return
/// as sums of their requests, are tried in `MoreImportantPod` order (their priority and start
/// time are in the row), and become [`Victim`]s. `None` (nothing touched) unless no
/// PodDisruptionBudget exists (then no victim violates one and the split keeps the tried order),
/// every lower-priority pod on the node is plain and every counted nominated pod is plain and not
/// placed (what [`movable_on_columns`] asks): then [`try_node`] goes on as before. The node's
/// pod list ends as the plain run leaves it.
fn try_node_on_meta(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    pre: &PreFiltered,
    plan: OnColumns,
) -> Option<Result<Candidate, NotCandidate>> {
    use crate::snapshot::nodes::CoreRequests;
    if !snap.cluster.pdbs.is_empty() {
        return None;
    }
    let i = node.ix();
    // The lower-priority pods summed (collected only for a node the pod may fit: [`lower_on_meta`]).
    let LowerOnRow { sum: lower_sum, count, interleaved } = lower_on_row(snap, node, pod.priority)?;
    if count == 0 {
        return Some(Err(NotCandidate::NoLowerPriorityPods));
    }
    let mut nominated = CoreRequests::default();
    if let Some(v) = snap.nominated.get(&snap.nodes.name[i]) {
        for p in v.iter().filter(|p| p.uid != pod.uid && p.priority >= pod.priority) {
            if !plain_on_columns(p) || snap.pods.contains_key(&p.uid) {
                return None;
            }
            nominated.add(p);
        }
    }
    // `fits_with_nominated`: with the nominated pods, then (if any) without them.
    let fits = |snap: &mut Snapshot| {
        if nominated.pods > 0 {
            snap.nodes.shift_core_sum(node, &nominated, 1);
            let with = fits_now(fw, snap, pod, node, Some(pre));
            snap.nodes.shift_core_sum(node, &nominated, -1);
            if with.is_some() {
                return with;
            }
        }
        fits_now(fw, snap, pod, node, Some(pre))
    };
    if plan.fit_in_row {
        return Some(meta_fit_in_row(fw, snap, pod, node, pre, plan, lower_sum, nominated, interleaved, fits));
    }
    let mut lower = lower_on_meta(snap, pod, node);
    snap.nodes.shift_core_sum(node, &lower_sum, -1);
    if let Some((pid, reject)) = fits(snap) {
        snap.nodes.shift_core_sum(node, &lower_sum, 1);
        if interleaved {
            snap.nodes.partition_by_priority(node, pod.priority, true, []);
        }
        return Some(Err(NotCandidate::StillUnfit(pid, reject)));
    }
    // `MoreImportantPod` order (a stable sort, as the plain run's over the pods in list order).
    lower.sort_by(|(_, _, a), (_, _, b)| b.priority.cmp(&a.priority).then(a.start_time_ms.cmp(&b.start_time_ms)));
    // Reprieve while the pod still fits: the reprieved first, then the victims, each in the
    // order tried (the pod list's new tail).
    let mut order: smallvec::SmallVec<[u32; 8]> = smallvec::SmallVec::new();
    let mut victims = Vec::new();
    let mut victims_sum = CoreRequests::default();
    for &(r, uid, m) in &lower {
        snap.nodes.shift_core_sum(node, &m.requests, 1);
        if fits(snap).is_some() {
            snap.nodes.shift_core_sum(node, &m.requests, -1);
            victims_sum.add_sum(&m.requests);
            victims.push((r, uid, m));
        } else {
            order.push(r);
        }
    }
    snap.nodes.shift_core_sum(node, &victims_sum, 1);
    order.extend(victims.iter().map(|(r, _, _)| *r));
    snap.nodes.partition_by_priority_to(node, pod.priority, &order);
    // Tried in order, the victims are already sorted.
    let victims = victims
        .iter()
        .map(|&(_, uid, m)| Victim {
            uid,
            priority: m.priority,
            start_time_ms: m.start_time_ms,
            start_time_known: m.start_time_known,
        })
        .collect();
    Some(Ok(Candidate { node, victims, num_pdb_violations: 0 }))
}

/// The lower-priority pods [`try_node_on_meta`] moves: position in the list, uid and row, in
/// list order.
fn lower_on_meta(
    snap: &Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
) -> smallvec::SmallVec<[(u32, PodUid, crate::snapshot::nodes::PodMeta); 8]> {
    let i = node.ix();
    snap.nodes.pod_meta[i]
        .iter()
        .enumerate()
        .filter(|(_, m)| m.priority < pod.priority)
        .map(|(r, m)| (r as u32, snap.nodes.pods[i][r], *m))
        .collect()
}

/// [`try_node_on_meta`] when NodeResourcesFit decides ([`OnColumns::fit_in_row`]). With the
/// lower-priority pods gone and the nominated pods counted (the stricter of
/// `fits_with_nominated`'s two checks: Fit's verdict only grows with the requests, the other
/// Filters read only the node), Fit is read from the row; where it passes, every Filter runs once
/// on the shifted row (the node-only ones may still reject). A candidate's reprieves then ask Fit
/// alone, on a running sum, with no row shifted. `fits` is [`try_node_on_meta`]'s check on the
/// snapshot as it stands, run only for a reason the caller asked for.
#[allow(clippy::too_many_arguments)]
fn meta_fit_in_row(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    pre: &PreFiltered,
    plan: OnColumns,
    lower_sum: crate::snapshot::nodes::CoreRequests,
    nominated: crate::snapshot::nodes::CoreRequests,
    interleaved: bool,
    fits: impl Fn(&mut Snapshot) -> Option<(PluginId, Reject)>,
) -> Result<Candidate, NotCandidate> {
    let i = node.ix();
    // The row's change with the lower-priority pods gone and the nominated pods counted.
    let mut delta = nominated;
    delta.sub_sum(&lower_sum);
    let unfit = if noderesources::rejects_core_with(&snap.nodes, i, &delta, &pod.requests) {
        Some(if plan.reasons {
            snap.nodes.shift_core_sum(node, &lower_sum, -1);
            let why = fits(snap).expect("Fit rejects the node with the lower-priority pods gone");
            snap.nodes.shift_core_sum(node, &lower_sum, 1);
            NotCandidate::StillUnfit(why.0, why.1)
        } else {
            NotCandidate::Unfit
        })
    } else {
        snap.nodes.shift_core_sum(node, &delta, 1);
        let why = fits_now(fw, snap, pod, node, Some(pre));
        snap.nodes.shift_core_sum(node, &delta, -1);
        why.map(|(pid, reject)| NotCandidate::StillUnfit(pid, reject))
    };
    if let Some(why) = unfit {
        if interleaved {
            snap.nodes.partition_by_priority(node, pod.priority, true, []);
        }
        return Err(why);
    }
    let mut lower = lower_on_meta(snap, pod, node);
    // `MoreImportantPod` order (a stable sort, as the plain run's over the pods in list order).
    lower.sort_by(|(_, _, a), (_, _, b)| b.priority.cmp(&a.priority).then(a.start_time_ms.cmp(&b.start_time_ms)));
    // Reprieve while Fit still passes with the nominated pods counted: the reprieved first, then
    // the victims, each in the order tried (the pod list's new tail).
    let mut order: smallvec::SmallVec<[u32; 8]> = smallvec::SmallVec::new();
    let mut victims: smallvec::SmallVec<[usize; 8]> = smallvec::SmallVec::new();
    for (k, (r, _, m)) in lower.iter().enumerate() {
        let mut with = delta;
        with.add_sum(&m.requests);
        if noderesources::rejects_core_with(&snap.nodes, i, &with, &pod.requests) {
            victims.push(k);
        } else {
            delta = with;
            order.push(*r);
        }
    }
    order.extend(victims.iter().map(|&k| lower[k].0));
    snap.nodes.partition_by_priority_to(node, pod.priority, &order);
    // Tried in order, the victims are already sorted.
    let victims = victims
        .iter()
        .map(|&k| {
            let (_, uid, m) = lower[k];
            Victim { uid, priority: m.priority, start_time_ms: m.start_time_ms, start_time_known: m.start_time_known }
        })
        .collect();
    Ok(Candidate { node, victims, num_pdb_violations: 0 })
}

/// The dry run on one node as upstream writes it: unplace the lower-priority pods, filter with
/// the nominated pods, reprieve, restore.
fn try_node_plain(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
    mut lower: Vec<Arc<PodInfo>>,
) -> Result<Candidate, NotCandidate> {
    let name = snap.nodes.name[node.ix()];
    for p in &lower {
        snap.unplace_pod(p.uid);
    }
    let restore = |snap: &mut Snapshot, pods: &[Arc<PodInfo>]| {
        for p in pods {
            snap.place_pod(p.clone(), name).expect("a victim returns to its node");
        }
    };
    if let Some((pid, reject)) = fits_with_nominated(fw, snap, pod, node, cached) {
        restore(snap, &lower);
        return Err(NotCandidate::StillUnfit(pid, reject));
    }
    lower.sort_by(|a, b| more_important(a, b));
    let (violating, non_violating) = split_by_pdb(snap, lower);
    let mut victims = Vec::new();
    let mut num_pdb_violations = 0;
    for (group, is_violating) in [(violating, true), (non_violating, false)] {
        for p in group {
            snap.place_pod(p.clone(), name).expect("a reprieved pod returns to its node");
            if fits_with_nominated(fw, snap, pod, node, cached).is_some() {
                snap.unplace_pod(p.uid);
                num_pdb_violations += is_violating as usize;
                victims.push(p);
            }
        }
    }
    restore(snap, &victims);
    victims.sort_by(|a, b| more_important(a, b));
    Ok(Candidate { node, victims: victims.iter().map(|p| Victim::of(p)).collect(), num_pdb_violations })
}

/// [`try_node_plain`] on the request columns: the lower-priority pods (and the nominated pods,
/// for the check with them) leave and return through
/// [`crate::snapshot::NodeTable::shift_core_requests`] instead of unplace and place, and the
/// Filters run with the cached PreFilter, as [`fits_with_nominated`] would.
/// Only for a pod [`columns_suffice`] accepts on a node [`movable_on_columns`] accepts,
/// where every verdict is the plain run's. The node's pod list ends in the order the plain run
/// leaves it: the other pods, then the reprieved, then the victims (each in the order they were
/// tried), or on a node that cannot fit the pod, the other pods, then the lower-priority ones.
fn try_node_on_columns(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    pre: &PreFiltered,
    mut lower: Vec<Arc<PodInfo>>,
    nominated: &[Arc<PodInfo>],
) -> Result<Candidate, NotCandidate> {
    // `fits_with_nominated`: with the nominated pods, then (if any) without them.
    let fits = |snap: &mut Snapshot| {
        for p in nominated {
            snap.nodes.shift_core_requests(node, p, 1);
        }
        let with = fits_now(fw, snap, pod, node, Some(pre));
        for p in nominated {
            snap.nodes.shift_core_requests(node, p, -1);
        }
        if with.is_some() || nominated.is_empty() {
            return with;
        }
        fits_now(fw, snap, pod, node, Some(pre))
    };
    for p in &lower {
        snap.nodes.shift_core_requests(node, p, -1);
    }
    // The pod list as the plain run rebuilds it: the pods that stay, then the lower-priority ones
    // in the order the run returned them.
    if let Some((pid, reject)) = fits(snap) {
        for p in &lower {
            snap.nodes.shift_core_requests(node, p, 1);
        }
        snap.nodes.partition_by_priority(node, pod.priority, false, lower.iter().map(|p| &**p));
        return Err(NotCandidate::StillUnfit(pid, reject));
    }
    lower.sort_by(|a, b| more_important(a, b));
    let (violating, non_violating) = split_by_pdb(snap, lower);
    let mut victims = Vec::new();
    let mut reprieved = Vec::new();
    let mut num_pdb_violations = 0;
    for (group, is_violating) in [(violating, true), (non_violating, false)] {
        for p in group {
            snap.nodes.shift_core_requests(node, &p, 1);
            if fits(snap).is_some() {
                snap.nodes.shift_core_requests(node, &p, -1);
                num_pdb_violations += is_violating as usize;
                victims.push(p);
            } else {
                reprieved.push(p);
            }
        }
    }
    for p in &victims {
        snap.nodes.shift_core_requests(node, p, 1);
    }
    snap.nodes.partition_by_priority(node, pod.priority, false, reprieved.iter().chain(&victims).map(|p| &**p));
    victims.sort_by(|a, b| more_important(a, b));
    Ok(Candidate { node, victims: victims.iter().map(|p| Victim::of(p)).collect(), num_pdb_violations })
}

/// The nodes PostFilter may try, in the diagnosis's order: every node (the scan order) when a
/// PreFilter plugin rejected the pod as Unschedulable, none when it was unresolvable, else the
/// nodes a Filter rejected as Unschedulable. With each, whether the diagnosis has
/// NodeResourcesFit rejecting it (then every Filter ordered before Fit passed there: the engine
/// runs them in order and records the first rejection).
enum Potential<'a> {
    /// Every failure of the diagnosis is Unschedulable: its nodes, in order (no list built), and
    /// Fit's id (`usize::MAX` without Fit).
    Failures(&'a crate::framework::Failures, PluginId),
    /// The nodes, each with whether the diagnosis has Fit rejecting it.
    Nodes(Vec<(NodeIdx, bool)>),
}

impl Potential<'_> {
    fn of<'a>(fw: &Framework, snap: &Snapshot, diag: &'a Diagnosis) -> Potential<'a> {
        let fit = fw.plugins.iter().position(|p| p.name() == noderesources::FIT).unwrap_or(usize::MAX);
        match &diag.pre_filter {
            // A PreFilter rejection applies to every node with its code.
            Some((_, st)) if st.code == Code::Unschedulable => {
                Potential::Nodes(snap.scan_order().iter().map(|&n| (n, false)).collect())
            }
            Some(_) => Potential::Nodes(Vec::new()),
            None if diag.failures.runs().all(|(_, reject, _)| reject.code == Code::Unschedulable) => {
                Potential::Failures(&diag.failures, fit)
            }
            None => Potential::Nodes(
                diag.failures
                    .iter()
                    .filter(|f| f.reject.code == Code::Unschedulable)
                    .map(|f| (f.node, f.plugin == fit))
                    .collect(),
            ),
        }
    }

    fn len(&self) -> usize {
        match self {
            Potential::Failures(f, _) => f.len(),
            Potential::Nodes(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every node once, from the `offset`-th on and then from the first: `get((offset + i) %
    /// len)` for `i` in `0..len`, without a search per node (proptest `potential_walk_is_get`).
    fn iter_from(&self, offset: usize) -> impl Iterator<Item = (NodeIdx, bool)> + '_ {
        let (failures, nodes) = match self {
            Potential::Failures(f, fit) => {
                (Some(f.iter_wrapping_from(offset).map(move |f| (f.node, f.plugin == *fit))), None)
            }
            Potential::Nodes(v) => {
                let at = if v.is_empty() { 0 } else { offset % v.len() };
                (None, Some(v[at..].iter().chain(&v[..at]).copied()))
            }
        };
        failures.into_iter().flatten().chain(nodes.into_iter().flatten())
    }

    /// The `k`-th node and whether the diagnosis has Fit rejecting it.
    fn get(&self, k: usize) -> (NodeIdx, bool) {
        match self {
            Potential::Failures(f, fit) => {
                let f = f.get(k);
                (f.node, f.plugin == *fit)
            }
            Potential::Nodes(v) => v[k],
        }
    }
}

/// A candidate's place in `pickOneNodeForPreemption`'s order ([`rank`]).
type Rank = (usize, i32, i64, usize, std::cmp::Reverse<i64>);

/// `pickOneNodeForPreemption`'s order (smaller is better): fewest PDB violations, then the lowest
/// highest-victim priority, the smallest priority sum, the fewest victims, the latest
/// earliest-start among the highest-priority victims.
fn rank(c: &Candidate) -> Rank {
    let top = c.victims.first().map_or(i32::MIN, |v| v.priority);
    let sum: i64 = c.victims.iter().map(|v| v.priority as i64 + (i32::MAX as i64 + 1)).sum();
    let earliest_top =
        c.victims.iter().filter(|v| v.priority == top).map(|v| v.start_time_ms).min().unwrap_or(i64::MIN);
    (c.num_pdb_violations, top, sum, c.victims.len(), std::cmp::Reverse(earliest_top))
}

/// `pickOneNodeForPreemption`: the best [`rank`], ties to the first candidate (each candidate's
/// rank worked out once).
fn pick_one(cands: &[Candidate]) -> usize {
    let Some(first) = cands.first() else { return 0 };
    let (mut best, mut best_rank) = (0, rank(first));
    for (i, c) in cands.iter().enumerate().skip(1) {
        let r = rank(c);
        if r < best_rank {
            (best, best_rank) = (i, r);
        }
    }
    best
}

/// [`rank`] as upstream's draw sees it: when none of the highest-priority victims has a
/// `status.startTime`, upstream reads "now" for them, later than every known start, so such a
/// candidate beats every candidate with a known start and ties with the others like it (in the
/// order upstream happens to evaluate them).
fn draw_rank(c: &Candidate) -> (usize, i32, i64, usize, Option<std::cmp::Reverse<i64>>) {
    let (pdb, top, sum, len, _) = rank(c);
    let known = c.victims.iter().filter(|v| v.priority == top && v.start_time_known).map(|v| v.start_time_ms).min();
    (pdb, top, sum, len, known.map(std::cmp::Reverse))
}

/// The candidates upstream's PostFilter may nominate, given every candidate there is (an
/// exhaustive dry run). Upstream visits the potential nodes from a random offset, stops once it
/// holds `want` candidates with one of them free of PDB violations, and nominates the best of
/// those ([`draw_rank`]; ties go to whichever its map iteration lists first). So a candidate can
/// be nominated when it ranks best of all (ties included), or when it has no PDB violations and,
/// with the candidates ranking no better than it, makes `want`: the dry run may find exactly
/// those first. (Which sets are reachable also depends on the order of the potential nodes,
/// which upstream takes from a map; this counts every set of that size.)
fn may_nominate(cands: &[Candidate], want: usize) -> Vec<usize> {
    let Some(best) = cands.iter().map(draw_rank).min() else { return Vec::new() };
    (0..cands.len())
        .filter(|&i| {
            let r = draw_rank(&cands[i]);
            if r == best {
                return true;
            }
            cands[i].num_pdb_violations == 0 && cands.iter().filter(|c| draw_rank(c) >= r).count() >= want
        })
        .collect()
}

impl DefaultPreemption {
    /// PostFilter: returns the node to nominate and the victims, or why nothing is done. Only
    /// nodes the diagnosis marks `Unschedulable` are tried, from a random offset (from `rng`),
    /// until enough candidates are found. Records the nomination in the snapshot (the returned
    /// pod copy carries `nominated_node`) and clears lower-priority nominations on that node.
    pub fn preempt(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        rng: &mut (impl Rng + ?Sized),
    ) -> Result<(Preemption, Arc<PodInfo>), NoPreemption> {
        self.preempt_with(fw, snap, pod, diag, rng, true)
    }

    /// [`Self::preempt`]; `in_locals` lets a plan in locals rank the candidates as it finds them
    /// ([`Self::best_in_locals`]) instead of building every one ([`Self::best_of_all`]: the tests'
    /// reference).
    fn preempt_with(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        rng: &mut (impl Rng + ?Sized),
        in_locals: bool,
    ) -> Result<(Preemption, Arc<PodInfo>), NoPreemption> {
        eligible_to_preempt(snap, pod, Some(diag))?;
        let potential = Potential::of(fw, snap, diag);
        if potential.is_empty() {
            return Err(NoPreemption::NoCandidates(format!(
                "0/{} nodes are available: preemption is not helpful for scheduling.",
                diag.num_all_nodes
            )));
        }
        let want =
            num_candidates(potential.len(), self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute);
        let offset = rng.gen_range(0..potential.len());
        // PreFilter runs once when its outcome cannot depend on the pods the dry runs move.
        let cached = (!snap.pre_filter_reads_pods(pod)).then(|| run_pre_filter(fw, snap, pod));
        let on_columns = columns_plan(fw, pod, cached.as_ref(), false);
        let local = fit_local::LocalPlan::new(fw, snap, pod, cached.as_ref(), on_columns);
        let best = match &local {
            Some(lp) if in_locals => {
                self.best_in_locals(fw, snap, pod, &potential, offset, want, cached.as_ref(), on_columns, lp)
            }
            _ => self.best_of_all(fw, snap, pod, &potential, offset, want, cached.as_ref(), on_columns, local.as_ref()),
        };
        let Some(best) = best else {
            return Err(NoPreemption::NoCandidates(format!(
                "0/{} nodes are available: no preemption victims found for incoming pod.",
                diag.num_all_nodes
            )));
        };
        let node = snap.nodes.name[best.node.ix()];
        let mut cleared = Vec::new();
        if let Some(v) = snap.nominated.get(&node) {
            cleared = v.iter().filter(|p| p.priority < pod.priority && p.uid != pod.uid).map(|p| p.uid).collect();
        }
        for uid in &cleared {
            snap.clear_nomination(*uid);
        }
        let nominated = Arc::new(PodInfo { nominated_node: Some(node), ..pod.clone() });
        snap.nominate(nominated.clone(), node);
        Ok((
            Preemption {
                node,
                victims: victim_pods(snap, &best.victims),
                num_pdb_violations: best.num_pdb_violations,
                cleared_nominations: cleared,
            },
            nominated,
        ))
    }

    /// `DryRunPreemption` then `pickOneNodeForPreemption` as upstream writes them: every candidate
    /// found (from `offset`, until upstream's stop) is built in full, then the best is picked.
    #[allow(clippy::too_many_arguments)]
    fn best_of_all(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        potential: &Potential<'_>,
        offset: usize,
        want: usize,
        cached: Option<&PreFiltered>,
        on_columns: Option<OnColumns>,
        local: Option<&fit_local::LocalPlan>,
    ) -> Option<Candidate> {
        let mut non_violating: Vec<Candidate> = Vec::new();
        let mut violating: Vec<Candidate> = Vec::new();
        for i in 0..potential.len() {
            let (node, fit_rejected) = potential.get((offset + i) % potential.len());
            let local = local.map(|lp| (lp, fit_rejected));
            if let Some(c) = select_victims_on_node(fw, snap, pod, node, cached, on_columns, local) {
                if c.victims.is_empty() {
                    continue;
                }
                if c.num_pdb_violations == 0 {
                    non_violating.push(c);
                } else {
                    violating.push(c);
                }
                if !non_violating.is_empty() && non_violating.len() + violating.len() >= want {
                    break;
                }
            }
        }
        let mut cands = non_violating;
        cands.extend(violating);
        if cands.is_empty() {
            return None;
        }
        Some(cands.swap_remove(pick_one(&cands)))
    }

    /// [`Self::best_of_all`] under a plan in locals (no PodDisruptionBudget: every candidate is
    /// free of violations, so upstream's order of candidates is the order found): each node
    /// tried in locals yields a [`fit_local::Tally`], ranked as found, and only a candidate that
    /// ranks strictly better than the best so far has its victims read (ties go to the first
    /// found, as [`pick_one`]'s). A node the plan does not cover (pod groups, a pod that is not
    /// plain) is tried as before and ranked the same way. Proptest `best_in_locals_matches_all`.
    #[allow(clippy::too_many_arguments)]
    fn best_in_locals(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        potential: &Potential<'_>,
        offset: usize,
        want: usize,
        cached: Option<&PreFiltered>,
        on_columns: Option<OnColumns>,
        lp: &fit_local::LocalPlan,
    ) -> Option<Candidate> {
        let Some(Ok((state, _, _))) = cached else { unreachable!("a plan in locals has PreFilter's outcome") };
        let mut best: Option<(Rank, Candidate)> = None;
        let (mut found, mut non_violating) = (0usize, 0usize);
        for (node, fit_rejected) in potential.iter_from(offset) {
            let in_locals = if units::applies(snap, node) {
                None
            } else {
                fit_local::reprieve_local(fw, snap, pod, node, state, lp, fit_rejected)
            };
            let better = |r: &Rank| best.as_ref().is_none_or(|(b, _)| r < b);
            match in_locals {
                Some(Err(_)) => continue,
                Some(Ok(t)) => {
                    if t.victims == 0 {
                        continue;
                    }
                    non_violating += 1;
                    let r = t.rank();
                    if better(&r) {
                        let c = Candidate { node, victims: fit_local::tail_victims(snap, &t), num_pdb_violations: 0 };
                        best = Some((r, c));
                    }
                }
                // The plan does not cover the node: tried as before (`reprieve_local` touched
                // nothing).
                None => {
                    let Some(c) = select_victims_on_node(fw, snap, pod, node, cached, on_columns, None) else {
                        continue;
                    };
                    if c.victims.is_empty() {
                        continue;
                    }
                    non_violating += (c.num_pdb_violations == 0) as usize;
                    let r = rank(&c);
                    if better(&r) {
                        best = Some((r, c));
                    }
                }
            }
            found += 1;
            if non_violating > 0 && found >= want {
                break;
            }
        }
        best.map(|(_, c)| c)
    }
}

/// Upstream's status for nodes PostFilter did not try (`SetAbsentNodesStatus`).
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// Upstream's status for a node without lower-priority pods (`SelectVictimsOnNode`).
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// A node where evicting `victims` (most important first, `MoreImportantPod` order, the order
/// upstream deletes them in) lets the pod fit: the framework's PostFilter candidate.
pub type CandidateNode = PostFilterCandidate;

/// What PostFilter would do, found without nominating or evicting anything.
#[derive(Clone, Debug)]
pub struct DryRun {
    /// Every candidate, in upstream's order: those without PDB violations first, each group in
    /// node order.
    pub candidates: Vec<CandidateNode>,
    /// The candidate `pickOneNodeForPreemption` picks (an index into `candidates`).
    pub chosen: Option<usize>,
    /// With `exhaustive`: every candidate upstream may nominate from some random offset
    /// ([`may_nominate`]); otherwise `chosen` alone.
    pub may_nominate: Vec<usize>,
    /// The potential nodes that are not candidates, and why.
    pub rejected: Vec<(NodeIdx, NotCandidate)>,
    /// Without candidates: upstream's `FitError` message, e.g.
    /// "0/3 nodes are available: 3 No preemption victims found for incoming pod."
    pub message: Option<String>,
}

impl DefaultPreemption {
    /// PostFilter as a dry run, for `explain` and `verify`: tries the potential nodes in node order
    /// (offset 0, where upstream draws a random offset) and returns the candidates, the one
    /// PostFilter would nominate among them, and upstream's message when there is none. It stops
    /// where upstream's `DryRunPreemption` does (a candidate without PDB violations in hand and
    /// `numCandidates` found) unless `exhaustive`, which tries every potential node (the set
    /// upstream may draw its candidates from when it visits nodes in another order). Nominates
    /// nothing; the snapshot is as before on return (except the order of pods within a node).
    pub fn dry_run(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        exhaustive: bool,
    ) -> Result<DryRun, NoPreemption> {
        eligible_to_preempt(snap, pod, Some(diag))?;
        let n_all = snap.nodes.len();
        if n_all == 0 {
            return Err(NoPreemption::NoCandidates("no nodes available".into()));
        }
        let potential = Potential::of(fw, snap, diag);
        let cached = (!snap.pre_filter_reads_pods(pod)).then(|| run_pre_filter(fw, snap, pod));
        let on_columns = columns_plan(fw, pod, cached.as_ref(), true);
        let local = fit_local::LocalPlan::new(fw, snap, pod, cached.as_ref(), on_columns);
        let (mut non_violating, mut violating, mut rejected) = (Vec::new(), Vec::new(), Vec::new());
        // Upstream reports a successful dry run without victims as an error naming the node.
        let mut no_victim_nodes = Vec::new();
        // From offset 0, stopping where upstream's DryRunPreemption cancels: once a candidate
        // without PDB violations is in hand and numCandidates have been found.
        let want =
            num_candidates(potential.len(), self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute);
        for k in 0..potential.len() {
            let (node, fit_rejected) = potential.get(k);
            let local = local.as_ref().map(|lp| (lp, fit_rejected));
            match try_node_with(fw, snap, pod, node, cached.as_ref(), on_columns, local) {
                Ok(c) if c.victims.is_empty() => no_victim_nodes.push(node),
                Ok(c) if c.num_pdb_violations == 0 => non_violating.push(c),
                Ok(c) => violating.push(c),
                Err(why) => rejected.push((node, why)),
            }
            if !exhaustive && !non_violating.is_empty() && non_violating.len() + violating.len() >= want {
                break;
            }
        }
        let mut cands: Vec<Candidate> = non_violating;
        cands.extend(violating);
        let chosen = (!cands.is_empty()).then(|| pick_one(&cands));
        let may_nominate = if exhaustive { may_nominate(&cands, want) } else { chosen.into_iter().collect() };
        let candidates: Vec<CandidateNode> = cands
            .into_iter()
            .map(|c| CandidateNode {
                node: snap.nodes.name[c.node.ix()],
                victims: victim_pods(snap, &c.victims),
                num_pdb_violations: c.num_pdb_violations,
            })
            .collect();
        if chosen.is_some() {
            return Ok(DryRun { candidates, chosen, may_nominate, rejected, message: None });
        }
        if let Some(node) = no_victim_nodes.first() {
            let name = snap.node_name(*node).to_string();
            let message = format!("expected at least one victim pod on node {name:?}");
            return Ok(DryRun { candidates, chosen: None, may_nominate, rejected, message: Some(message) });
        }
        let message = no_candidates_message(fw, snap, pod, n_all, &rejected);
        Ok(DryRun { candidates, chosen: None, may_nominate, rejected, message: Some(message) })
    }
}

/// `FitError.Error()` over the dry run's node statuses: each tried node's reasons, the untried
/// nodes as "Preemption is not helpful for scheduling", counted and sorted.
fn no_candidates_message(
    fw: &Framework,
    snap: &Snapshot,
    pod: &PodInfo,
    n_all: usize,
    rejected: &[(NodeIdx, NotCandidate)],
) -> String {
    let cx = CycleCx { snap, pod };
    let state = CycleState::new();
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (_, why) in rejected {
        let reasons = match *why {
            NotCandidate::NoLowerPriorityPods => vec![NO_VICTIMS.to_string()],
            // A PreFilter rejection during the dry run (no Filter reason to decode).
            NotCandidate::StillUnfit(pid, r) if pid >= fw.plugins.len() || r.detail == u64::MAX => {
                let name = fw.plugins.get(pid).map_or("PreFilter", |p| p.name());
                vec![format!("node(s) didn't satisfy plugin(s) [{name}]")]
            }
            NotCandidate::StillUnfit(pid, r) => fw.plugin(pid).reasons(cx, &state, r),
            NotCandidate::Unfit => unreachable!("the dry run works out why a node is not a candidate"),
        };
        for r in reasons {
            *counts.entry(r).or_default() += 1;
        }
    }
    let untried = n_all - rejected.len();
    if untried > 0 {
        *counts.entry(NOT_HELPFUL.to_string()).or_default() += untried;
    }
    let mut parts: Vec<String> = counts.into_iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{n_all} nodes are available: {}.", parts.join(", "))
}
