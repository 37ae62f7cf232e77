//! The DynamicResources plugin over [`super::cycle`]: PreEnqueue (a claim from a template not
//! created yet keeps the pod out of the active queue), PreFilter (Skip for a pod without claims,
//! so such pods cost one `Option` test), Filter (the allocation per node, kept in the cycle state
//! for Reserve, as upstream caches it), Reserve, Unreserve, PreBind, PostFilter (deallocation of
//! an allocated claim unavailable to the pod and reserved for nobody else), and Score and
//! NormalizeScore (`score.rs`: DRAPrioritizedList's ranking of the `firstAvailable` subrequests
//! Filter allocated on each node, read from the same per-node allocations; a pod that cannot score
//! unevenly, as every pod without such a request to allocate, leaves the plugin out of Score).
//!
//! The scheduler's claim writes go to the snapshot's one claim store (`DraObjects::claims`, which
//! the resourceclaim controller's part and `allocResourceClaims` write too), as upstream's assume
//! cache makes its own writes visible at once. They are made at Reserve, on the scheduling thread
//! (upstream: in flight at Reserve, written at PreBind and assumed at once); PreBind, on a binder
//! thread without the snapshot, is then the API write and only commits them. Unreserve before
//! PreBind takes back what Reserve wrote (the pod's reservations, and the allocations it made of
//! claims nobody else reserved since); after it, only the pod's reservation (as upstream's
//! Unreserve patch). So a pod sharing a claim with a pod in its binding cycle sees the claim
//! allocated and reserved, never "in the process of being allocated".

use ahash::AHashMap;
use std::collections::BTreeMap;

use super::allocator::NodeView;
use super::cycle::{pre_filter, Claims, InFlight, PodClaims, CLAIM_FINALIZER};
use super::pod_claims::pod_resource_claims;
use super::score::{compute_score, ScorePlan};
use super::selectors::CelSelectors;
use crate::api::objects::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement};
use crate::api::resource::{AllocationResult, ResourceSlice};
use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{
    BindingPod, Code, CycleCx, CycleState, Diagnosis, Framework, Plugin, PostFilterPlan, PostFilterResult,
    PreFilterResult, Reject, Status,
};
use crate::ids::PodUid;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::Mutex;

pub const NAME: &str = "DynamicResources";

/// PostFilter's status when PreFilter never ran for the pod (`CycleState.Read`'s `ErrNotFound`).
pub const NO_STATE: &str = "not found";

/// A claim Reserve reserved for a pod: its key (namespace, name) and whether Reserve allocated it.
type ReservedClaim = ((String, String), bool);

/// What the plugin keeps across cycles (the claims themselves are the snapshot's store).
#[derive(Default)]
struct Shared {
    /// Pods between Reserve and PreBind: each claim Reserve reserved for the pod.
    reserved: AHashMap<PodUid, Vec<ReservedClaim>>,
    selectors: CelSelectors,
    /// Filter's rejection reasons: a Reject's `detail` indexes them.
    reasons: Reasons,
    /// Claims reserved for a PodGroup (DRAWorkloadResourceClaims) by a Reserve no member's
    /// PreBind has committed yet, by claim key (upstream's pending allocation shared by the pods
    /// of one pod-group cycle).
    group_pending: BTreeMap<(String, String), GroupPending>,
}

/// A PodGroup's reservation of a claim that Reserve wrote and no PreBind has committed yet.
#[derive(Debug, Default, PartialEq, Eq)]
struct GroupPending {
    /// The group's consumer uid (its `reservedFor` entry).
    group_uid: String,
    /// The members Reserve reserved the claim for (through the group) and not yet unreserved.
    members: Vec<PodUid>,
    /// Reserve allocated the claim (else it was allocated before).
    allocated_here: bool,
}

/// Distinct rejection reasons, each stored once for the plugin's life (a failed cycle's message is
/// worded after the cycle, from its Rejects alone).
#[derive(Default)]
struct Reasons {
    words: Vec<String>,
    index: AHashMap<String, u64>,
}

impl Reasons {
    /// The index of `words`, added if new.
    fn intern(&mut self, words: String) -> u64 {
        if let Some(&at) = self.index.get(&words) {
            return at;
        }
        let at = self.words.len() as u64;
        self.words.push(words.clone());
        self.index.insert(words, at);
        at
    }

    fn get(&self, at: u64) -> Option<&str> {
        self.words.get(usize::try_from(at).ok()?).map(String::as_str)
    }
}

/// The cycle state: what PreFilter found (`None`: Skip) and Filter's allocations per node.
struct CycleData {
    claims: Option<PodClaims>,
    /// Filter's allocations for each node it passed.
    filtered: Mutex<FilterMemo>,
    /// A pod with DRA-backed extended resources: its special claim (`extended.rs`).
    extended: Option<super::extended::CycleExtended>,
    /// A pod that may score unevenly (`score::plan`); `None`: 0 on every node.
    score: Option<ScorePlan>,
}

#[derive(Default)]
struct FilterMemo {
    allocations: BTreeMap<NodeIdx, Vec<AllocationResult>>,
}

#[derive(Default)]
pub struct DynamicResources {
    shared: Mutex<Shared>,
    /// How many pods are between Reserve and PreBind (`Shared::reserved`'s length), read without
    /// the lock so PreBind of a pod without claims costs one load. Reserve happens before the
    /// pod's PreBind (the hand-off to the binder orders them), so a pod Reserve recorded is seen.
    reserved_pods: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether DynamicResources' PreFilter ran for the pod (and wrote its state, which it does
/// before anything else, claims or not): it is a PreFilter plugin of the profile, and PreFilter
/// did not end before reaching it (an UnschedulableAndUnresolvable status, or an empty
/// intersection of PreFilterResults, from a plugin ordered before it; Unschedulable lets every
/// PreFilter plugin run).
pub fn pre_filter_ran(fw: &Framework, diag: &Diagnosis) -> bool {
    let Some(at) = fw.pre_filter.iter().position(|&p| fw.plugin(p).name() == NAME) else {
        return false;
    };
    match &diag.pre_filter {
        Some((pid, st)) if st.code == Code::UnschedulableAndUnresolvable => {
            fw.pre_filter.iter().position(|p| p == pid).is_none_or(|stop| stop >= at)
        }
        _ => true,
    }
}

/// Whether `requirement` holds for a value (`None`: the key is absent), as `v1.NodeSelectorRequirement`.
fn requirement_holds(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let int = |s: &str| s.parse::<i64>().ok();
    match r.operator {
        NodeSelectorOperator::In => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
        NodeSelectorOperator::NotIn => value.is_none_or(|v| !r.values.iter().any(|x| x == v)),
        NodeSelectorOperator::Exists => value.is_some(),
        NodeSelectorOperator::DoesNotExist => value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(v), [bound]) = (value.and_then(int), r.values.as_slice()) else { return false };
            let Some(bound) = int(bound) else { return false };
            if matches!(r.operator, NodeSelectorOperator::Gt) {
                v > bound
            } else {
                v < bound
            }
        }
    }
}

/// Whether node `n` satisfies an API node selector (terms ORed; a term's requirements ANDed; an
/// empty term matches nothing; `matchFields` only on `metadata.name`).
pub fn node_selector_matches(snap: &Snapshot, n: NodeIdx, selector: &NodeSelector) -> bool {
    let name = snap.node_name(n);
    let label = |key: &str| -> Option<&str> {
        let k = snap.interner.get(key)?;
        let v = snap.nodes.label(n, k);
        (!v.is_none()).then(|| snap.interner.resolve(v))
    };
    selector.node_selector_terms.iter().any(|t| {
        (!t.match_expressions.is_empty() || !t.match_fields.is_empty())
            && t.match_expressions.iter().all(|r| requirement_holds(r, label(&r.key)))
            && t.match_fields.iter().all(|r| r.key == "metadata.name" && requirement_holds(r, Some(name)))
    })
}

impl DynamicResources {
    fn data<'a>(&self, state: &'a CycleState) -> Option<&'a CycleData> {
        state.read::<CycleData>(NAME)
    }

    /// Score's plan for a pod PreFilter passed (`score::plan`); a PodGroup claim is pending (in
    /// upstream's view unallocated) while a member's Reserve that allocated it awaits PreBind.
    fn score_plan(&self, snap: &Snapshot, claims: &PodClaims) -> Option<ScorePlan> {
        let on = !snap.cluster.dra.features.prioritized_list_off;
        let shared = lock(&self.shared);
        let pending = |i: usize| {
            let c = &claims.claims[i];
            claims.is_group_claim(i)
                && shared
                    .group_pending
                    .get(&(c.metadata.namespace.clone(), c.metadata.name.clone()))
                    .is_some_and(|p| p.allocated_here)
        };
        super::score::plan(&claims.claims, &claims.to_allocate, pending, on)
    }

    /// The pod's allocated claims (as written) that PostFilter may deallocate: allocated for some
    /// nodes only, and reserved for nobody or only this pod.
    fn deallocatable(snap: &Snapshot, pod: &PodInfo, claims: &Claims) -> Option<(String, String)> {
        let refs = pod.claims.as_ref()?;
        let namespace = snap.interner.resolve(pod.namespace);
        let found = pod_resource_claims(&refs.pod, namespace, claims).ok()?;
        found.into_iter().find_map(|(_, claim)| {
            let key = (claim.metadata.namespace.clone(), claim.metadata.name.clone());
            let allocation = claim.status.allocation.as_ref()?;
            allocation.node_selector.as_ref()?;
            let reserved = &claim.status.reserved_for;
            (reserved.is_empty() || (reserved.len() == 1 && reserved[0].uid == refs.pod.metadata.uid)).then_some(key)
        })
    }
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn sign_pod(&self, pod: &PodInfo, _sig: &mut SignBuilder) -> Sign {
        match pod.claims {
            None => Sign::Signed,
            Some(_) => Sign::Unsignable("pods with dra resource claims are not signable"),
        }
    }

    /// `foreachPodResourceClaim` without the claim lookup (PreEnqueue sees no snapshot): a claim
    /// from a template the controller has not recorded yet keeps the pod waiting. The runner makes
    /// a pod's claims when it creates the pod, so they exist by then.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let Some(refs) = &pod.claims else { return Status::success() };
        let p = &refs.pod;
        for entry in &p.spec.resource_claims {
            match super::controller::claim_name(p, entry) {
                super::controller::ClaimRef::Pending => {
                    return Status::new(
                        Code::UnschedulableAndUnresolvable,
                        format!("pod \"{}/{}\": ResourceClaim not created yet", p.metadata.namespace, p.metadata.name),
                    )
                }
                super::controller::ClaimRef::Invalid => {
                    return Status::new(
                        Code::UnschedulableAndUnresolvable,
                        format!(
                            "pod \"{}/{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                            p.metadata.namespace, p.metadata.name, entry.name
                        ),
                    )
                }
                _ => {}
            }
        }
        Status::success()
    }

    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        // Without claims nothing is written: every later point reads a missing state as "no claims"
        // (and PostFilter asks the framework whether PreFilter ran, `pre_filter_ran`).
        // A pod without claims may still request extended resources backed by DRA (`extended.rs`).
        let (slim, requests);
        let pod = match &cx.pod.claims {
            Some(refs) => {
                requests = super::extended::pod_requests(cx.snap, cx.pod);
                &refs.pod
            }
            None => {
                if cx.pod.requests.scalars.is_empty() {
                    return (Status::skip(), PreFilterResult::default());
                }
                requests = super::extended::pod_requests(cx.snap, cx.pod);
                if requests.is_empty() {
                    return (Status::skip(), PreFilterResult::default());
                }
                slim = super::extended::slim_pod(cx.snap, cx.pod);
                &slim
            }
        };
        let namespace = cx.snap.interner.resolve(cx.pod.namespace);
        let mut extended = None;
        let found = {
            let dra = &cx.snap.cluster.dra;
            let store = dra.claims.lock();
            let found = pre_filter(pod, namespace, dra, &store, &InFlight::new());
            match found {
                Ok(claims) if !requests.is_empty() => {
                    let mut shared = lock(&self.shared);
                    super::extended::pre_filter(
                        cx.snap,
                        cx.pod,
                        pod,
                        &requests,
                        claims,
                        &store,
                        &mut shared.selectors,
                        state,
                    )
                    .map(|(claims, ext)| {
                        extended = Some(ext);
                        Some(claims)
                    })
                }
                other => other,
            }
        };
        match found {
            Ok(claims) => {
                let skip = claims.is_none();
                let score = claims.as_ref().and_then(|c| self.score_plan(cx.snap, c));
                state.write(NAME, CycleData { claims, filtered: Mutex::default(), extended, score });
                let st = if skip { Status::skip() } else { Status::success() };
                (st, PreFilterResult::default())
            }
            Err(st) => {
                state.write(NAME, CycleData { claims: None, filtered: Mutex::default(), extended: None, score: None });
                (st, PreFilterResult::default())
            }
        }
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(data) = self.data(state) else { return };
        let Some(claims) = &data.claims else { return };
        let dra = &cx.snap.cluster.dra;
        let slices: Vec<&ResourceSlice> = dra.slices.values().collect();
        let mut shared = lock(&self.shared);
        let mut memo = lock(&data.filtered);
        for (i, &n) in nodes.iter().enumerate() {
            let matches = |s: &NodeSelector| node_selector_matches(cx.snap, n, s);
            let view = NodeView { name: cx.snap.node_name(n), selector_matches: &matches };
            match claims.filter(&view, dra, &slices, &mut shared.selectors) {
                Ok(allocations) => {
                    memo.allocations.insert(n, allocations);
                }
                Err(st) => {
                    let detail = shared.reasons.intern(st.reasons.join(", "));
                    out[i] = Some(Reject { code: st.code, detail });
                }
            }
        }
    }

    /// The rejection's words, from the plugin's table (not the cycle state: the run words a
    /// failed cycle's message after the cycle).
    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        lock(&self.shared).reasons.get(reject.detail).map(str::to_string).into_iter().collect()
    }

    /// 0 on every node unless PreFilter found a claim with `firstAvailable` requests and a claim
    /// upstream allocates in this cycle (`score::plan`): every pod without claims, or with only
    /// `exactly` requests, or with all its claims allocated.
    fn score_is_uniform(&self, _cx: CycleCx<'_>, state: &CycleState) -> bool {
        self.data(state).is_none_or(|d| d.score.is_none())
    }

    /// `Score`: `computeScore` over the allocations Filter kept for each node (0 for a node it
    /// kept none for, as upstream's missing `nodeAllocations` entry).
    fn score(&self, _cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        out.fill(0);
        let Some(data) = self.data(state) else { return Ok(()) };
        let (Some(plan), Some(claims)) = (&data.score, &data.claims) else { return Ok(()) };
        let memo = lock(&data.filtered);
        let mut results = Vec::new();
        for (o, n) in out.iter_mut().zip(nodes) {
            let Some(allocations) = memo.allocations.get(n) else { continue };
            results.clear();
            results.extend(allocations.iter().chain(&plan.pending));
            *o = compute_score(&claims.claims, &plan.unallocated, &results).map_err(|e| Status::new(Code::Error, e))?;
        }
        Ok(())
    }

    /// `NormalizeScore`: `helper.DefaultNormalizeScore(MaxNodeScore, false, scores)`.
    fn normalize(&self, _cx: CycleCx<'_>, state: &CycleState, _nodes: &[NodeIdx], scores: &mut [i64]) {
        if self.data(state).is_some_and(|d| d.score.is_some()) {
            super::score::normalize(scores);
        }
    }

    /// Filter's allocations for `node` put in flight and written at once (allocation and the
    /// pod's `reservedFor`), remembered for Unreserve.
    fn reserve(&self, cx: CycleCx<'_>, state: &mut CycleState, node: NodeIdx) -> Status {
        let Some(data) = self.data(state) else { return Status::success() };
        let ext_pod = data.extended.as_ref().map(|e| &e.pod);
        let (Some(claims), Some(pod)) = (&data.claims, cx.pod.claims.as_ref().map(|r| &r.pod).or(ext_pod)) else {
            return Status::success();
        };
        let allocations = lock(&data.filtered).allocations.get(&node).cloned().unwrap_or_default();
        let mut in_flight = InFlight::new();
        if let Err(st) = claims.reserve(&allocations, &mut in_flight) {
            return st;
        }
        let mut store = cx.snap.cluster.dra.claims.lock();
        let mut shared = lock(&self.shared);
        // What Reserve is about to write, recorded first so Unreserve takes back a partial write.
        let mut reserved: Vec<ReservedClaim> = Vec::new();
        for (i, c) in claims.claims.iter().enumerate() {
            let key = (c.metadata.namespace.clone(), c.metadata.name.clone());
            if claims.is_group_claim(i) {
                // Shared through the PodGroup: the group's reservation is held until every member
                // that relied on it before a PreBind committed it is unreserved.
                let group_uid = &claims.bindings[i].uid;
                if let Some(pending) = shared.group_pending.get_mut(&key) {
                    if !pending.members.contains(&cx.pod.uid) {
                        pending.members.push(cx.pod.uid);
                    }
                } else if !store.get(&key).is_some_and(|c| c.status.reserved_for.iter().any(|r| &r.uid == group_uid)) {
                    shared.group_pending.insert(
                        key,
                        GroupPending {
                            group_uid: group_uid.clone(),
                            members: vec![cx.pod.uid],
                            allocated_here: claims.to_allocate.contains(&i),
                        },
                    );
                }
            } else if !c.status.reserved_for.iter().any(|r| r.uid == pod.metadata.uid) {
                reserved.push((key, claims.to_allocate.contains(&i)));
            }
        }
        if shared.reserved.insert(cx.pod.uid, reserved).is_none() {
            self.reserved_pods.fetch_add(1, Ordering::AcqRel);
        }
        match claims.pre_bind(pod, &mut in_flight, &mut store) {
            Ok(()) => Status::success(),
            Err(st) => st,
        }
    }

    /// Before PreBind: what Reserve wrote is undone (the pod's reservations; an allocation Reserve
    /// made, unless someone else reserved the claim since). After it: the pod's reservations removed.
    fn unreserve(&self, cx: CycleCx<'_>, state: &mut CycleState, _node: NodeIdx) {
        let Some(data) = self.data(state) else { return };
        let ext_pod = data.extended.as_ref().map(|e| &e.pod);
        let (Some(claims), Some(pod)) = (&data.claims, cx.pod.claims.as_ref().map(|r| &r.pod).or(ext_pod)) else {
            return;
        };
        let mut store = cx.snap.cluster.dra.claims.lock();
        let mut shared = lock(&self.shared);
        match shared.reserved.remove(&cx.pod.uid) {
            Some(reserved) => {
                self.reserved_pods.fetch_sub(1, Ordering::AcqRel);
                undo_reserve(&pod.metadata.uid, &reserved, &mut store);
                undo_group_reserve(cx.pod.uid, &mut shared.group_pending, &mut store);
            }
            None => {
                claims.unreserve(pod, &mut InFlight::new(), &mut store);
                // `unreserveExtendedResourceClaim`: the special claim PreBind created is deleted.
                if let Some(ext) = &data.extended {
                    store.remove(&ext.claim);
                }
            }
        }
    }

    /// The API write of what Reserve wrote: commits it (Unreserve then keeps the allocation).
    /// A PodGroup's reservation the pod relied on is committed with it (other members' Unreserve
    /// then leaves it, as upstream's ignores claims reserved for the group).
    fn pre_bind(&self, pod: &BindingPod<'_>) -> Status {
        if self.reserved_pods.load(Ordering::Acquire) > 0 {
            let mut shared = lock(&self.shared);
            if shared.reserved.remove(&pod.uid).is_some() {
                self.reserved_pods.fetch_sub(1, Ordering::AcqRel);
                if !shared.group_pending.is_empty() {
                    shared.group_pending.retain(|_, p| !p.members.contains(&pod.uid));
                }
            }
        }
        Status::success()
    }

    /// `deallocateOrDeletePodClaims`: an allocated claim of the pod limited to some nodes and
    /// reserved for nobody else is deallocated (the pod may then fit elsewhere); otherwise
    /// Unschedulable, so DefaultPreemption tries. [`NO_STATE`] when PreFilter never ran.
    fn post_filter(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        _rng: &mut dyn rand::RngCore,
    ) -> Result<PostFilterResult, Status> {
        if let Some(m) = self.post_filter_message(fw, snap, pod, diag) {
            return Err(Status::new(Code::Error, m));
        }
        let key = Self::deallocatable(snap, pod, &snap.cluster.dra.claims.lock());
        if let Some(key) = key {
            if let Some(claim) = snap.cluster.dra.claims.get_mut().get_mut(&key) {
                claim.status.allocation = None;
                claim.status.reserved_for.clear();
                claim.metadata.finalizers.retain(|f| f != CLAIM_FINALIZER);
            }
            return Err(Status::new(Code::Unschedulable, "deallocation of ResourceClaim completed"));
        }
        Err(Status { code: Code::Unschedulable, reasons: Vec::new(), plugin: "" })
    }

    fn post_filter_plan(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        _exhaustive: bool,
    ) -> Option<PostFilterPlan> {
        let message = self.post_filter_message(fw, snap, pod, diag)?;
        Some(PostFilterPlan { message: Some(message), error: true, ..PostFilterPlan::default() })
    }

    fn post_filter_message(
        &self,
        fw: &Framework,
        _snap: &mut Snapshot,
        _pod: &PodInfo,
        diag: &Diagnosis,
    ) -> Option<String> {
        (!pre_filter_ran(fw, diag)).then(|| NO_STATE.to_string())
    }
}

/// Unreserve before PreBind: pod `uid` leaves the `reservedFor` of each claim Reserve reserved for
/// it, and a claim Reserve allocated that is then reserved for nobody loses its allocation.
fn undo_reserve(uid: &str, reserved: &[ReservedClaim], claims: &mut Claims) {
    for (key, allocated_here) in reserved {
        let Some(c) = claims.get_mut(key) else { continue };
        c.status.reserved_for.retain(|r| r.uid != uid);
        if *allocated_here && c.status.reserved_for.is_empty() {
            c.status.allocation = None;
            c.metadata.finalizers.retain(|f| f != CLAIM_FINALIZER);
        }
    }
}

/// Unreserve before PreBind of PodGroup member `uid`: it leaves each pending group reservation;
/// the last member out takes the group's reservation back, and the allocation when Reserve made
/// it and nobody else holds the claim (upstream: the pending allocation goes with the last pod
/// sharing it).
fn undo_group_reserve(uid: PodUid, pending: &mut BTreeMap<(String, String), GroupPending>, claims: &mut Claims) {
    pending.retain(|key, p| {
        let Some(at) = p.members.iter().position(|&m| m == uid) else { return true };
        p.members.remove(at);
        if !p.members.is_empty() {
            return true;
        }
        if let Some(c) = claims.get_mut(key) {
            c.status.reserved_for.retain(|r| r.uid != p.group_uid);
            if p.allocated_here && c.status.reserved_for.is_empty() {
                c.status.allocation = None;
                c.metadata.finalizers.retain(|f| f != CLAIM_FINALIZER);
            }
        }
        false
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resource::{ResourceClaim, ResourceClaimConsumerReference};

    /// Unreserve before PreBind: (case, reservedFor before, allocated by Reserve) -> (reservedFor
    /// after, still allocated).
    #[test]
    fn undo_reserve_takes_back_only_what_reserve_wrote() {
        type Case = (&'static str, &'static [&'static str], bool, (&'static [&'static str], bool));
        let cases: [Case; 4] = [
            ("allocated by Reserve, only this pod", &["u1"], true, (&[], false)),
            ("allocated by Reserve, another pod reserved it since", &["u1", "u2"], true, (&["u2"], true)),
            ("allocated before, only this pod", &["u1"], false, (&[], true)),
            ("allocated before, shared", &["u2", "u1"], false, (&["u2"], true)),
        ];
        for (name, reserved, allocated_here, (want_reserved, want_allocated)) in cases {
            let key = ("ns".to_string(), "c".to_string());
            let mut claim = ResourceClaim::default();
            claim.status.allocation = Some(AllocationResult::default());
            claim.metadata.finalizers.push(CLAIM_FINALIZER.into());
            claim.status.reserved_for = reserved
                .iter()
                .map(|u| ResourceClaimConsumerReference {
                    resource: "pods".into(),
                    uid: u.to_string(),
                    ..Default::default()
                })
                .collect();
            let mut claims = Claims::new();
            claims.insert(key.clone(), claim);
            undo_reserve("u1", &[(key.clone(), allocated_here)], &mut claims);
            let c = &claims[&key];
            let uids: Vec<&str> = c.status.reserved_for.iter().map(|r| r.uid.as_str()).collect();
            assert_eq!(uids, want_reserved, "{name}");
            assert_eq!(c.status.allocation.is_some(), want_allocated, "{name}");
            assert_eq!(c.metadata.finalizers.is_empty(), !want_allocated, "{name}");
        }
    }

    /// Unreserve before PreBind of PodGroup members sharing a claim Reserve reserved for the
    /// group: (case, members pending, allocated by Reserve, other consumers, member unreserved)
    /// -> (group still reserved, still allocated, still pending).
    #[test]
    fn undo_group_reserve_waits_for_the_last_member() {
        type Case = (&'static str, &'static [u64], bool, &'static [&'static str], u64, (bool, bool, bool));
        let cases: [Case; 6] = [
            ("another member still relies on it", &[1, 2], true, &[], 1, (true, true, true)),
            ("last member, Reserve allocated", &[2], true, &[], 2, (false, false, false)),
            ("last member, allocated before", &[2], false, &[], 2, (false, true, false)),
            ("last member, another consumer", &[2], true, &["x"], 2, (false, true, false)),
            ("not a pending member", &[1], true, &[], 3, (true, true, true)),
            ("the other of two members leaves", &[1, 3], true, &[], 3, (true, true, true)),
        ];
        for (name, members, allocated_here, others, out, (want_group, want_allocated, want_pending)) in cases {
            let key = ("ns".to_string(), "c".to_string());
            let mut claim = ResourceClaim::default();
            claim.status.allocation = Some(AllocationResult::default());
            claim.metadata.finalizers.push(CLAIM_FINALIZER.into());
            claim.status.reserved_for.push(ResourceClaimConsumerReference {
                api_group: "scheduling.k8s.io".into(),
                resource: "podgroups".into(),
                name: "g".into(),
                uid: "g-uid".into(),
            });
            for o in others {
                claim.status.reserved_for.push(ResourceClaimConsumerReference {
                    resource: "pods".into(),
                    uid: o.to_string(),
                    ..Default::default()
                });
            }
            let mut claims = Claims::new();
            claims.insert(key.clone(), claim);
            let mut pending = BTreeMap::new();
            pending.insert(
                key.clone(),
                GroupPending {
                    group_uid: "g-uid".into(),
                    members: members.iter().map(|&m| PodUid(m)).collect(),
                    allocated_here,
                },
            );
            undo_group_reserve(PodUid(out), &mut pending, &mut claims);
            let c = &claims[&key];
            assert_eq!(c.status.reserved_for.iter().any(|r| r.uid == "g-uid"), want_group, "{name}: group");
            assert_eq!(c.status.allocation.is_some(), want_allocated, "{name}: allocation");
            assert_eq!(pending.contains_key(&key), want_pending, "{name}: pending");
        }
    }

    #[test]
    fn dynamic_resources_post_filter_errs_when_its_pre_filter_never_ran() {
        let config = crate::config::SchedulerConfig::defaults();
        let mut interner = crate::snapshot::Interner::default();
        let fw = crate::plugins::registry::build_framework(
            &config.profiles[0],
            &crate::plugins::CompiledArgs::default(),
            &mut interner,
        )
        .unwrap();
        let id = |name: &str| (0..fw.plugins.len()).find(|&p| fw.plugin(p).name() == name).unwrap();
        let dra = DynamicResources::default();
        let mut snap = Snapshot::new();
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        // (PreFilter's end: the plugin and its code; None = every PreFilter plugin passed) -> message.
        type Case = (Option<(&'static str, Code)>, Option<&'static str>);
        let cases: &[Case] = &[
            (None, None),
            // Unschedulable lets the later PreFilter plugins run: DynamicResources wrote its state.
            (Some(("VolumeBinding", Code::Unschedulable)), None),
            // An earlier plugin ended PreFilter: no state, "not found", PostFilter ends there.
            (Some(("VolumeBinding", Code::UnschedulableAndUnresolvable)), Some(NO_STATE)),
            (Some(("NodeAffinity", Code::UnschedulableAndUnresolvable)), Some(NO_STATE)),
            (Some(("InterPodAffinity", Code::UnschedulableAndUnresolvable)), Some(NO_STATE)),
            (Some((NAME, Code::UnschedulableAndUnresolvable)), None),
        ];
        for (end, want) in cases {
            let diag = Diagnosis {
                pre_filter: end.map(|(name, code)| (id(name), Status::new(code, "rejected"))),
                num_all_nodes: 1,
                ..Default::default()
            };
            let got = dra.post_filter_message(&fw, &mut snap, &pod, &diag);
            assert_eq!(got.as_deref(), *want, "{end:?}");
            let plan = dra.post_filter_plan(&fw, &mut snap, &pod, &diag, false);
            assert_eq!(plan.as_ref().map(|p| p.error), want.map(|_| true), "{end:?}: plan");
            let st = dra.post_filter(&fw, &mut snap, &pod, &diag, &mut rng).unwrap_err();
            let code = if want.is_some() { Code::Error } else { Code::Unschedulable };
            assert_eq!(st.code, code, "{end:?}: status");
        }
    }
}
