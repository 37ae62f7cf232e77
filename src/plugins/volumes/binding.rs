//! VolumeBinding (`plugins/volumebinding`: `volume_binding.go`, `binder.go`, `scorer.go`): a pod's
//! claims must exist, not be lost or being deleted (an ephemeral one must belong to the pod), and
//! none may be an unbound claim of an Immediate class. Filter is `FindPodVolumes`: each bound
//! claim's PersistentVolume must exist and its node affinity match the node; each unbound claim of
//! a WaitForFirstConsumer class needs, on the node, either an available volume
//! (`FindMatchingVolume`: smallest fitting first, claims tried smallest request first, a volume
//! chosen once per pod) or dynamic provisioning (a provisioner other than
//! `kubernetes.io/no-provisioner`, the class's `allowedTopologies`, and, when the provisioner's
//! CSIDriver sets `storageCapacity`, a CSIStorageCapacity reaching the node with room for the
//! request). Score is the StorageCapacityScoring scorer (beta and on in v1.37.2, with the default
//! shape: utilization 0 scores 100, 100 scores 0) over the node's static bindings, else its
//! capacity-tracked provisions.
//!
//! Reserve assumes the node's bindings in the plugin's own caches, as upstream's binder keeps its
//! PV and PVC assume caches: the volume's `claimRef` names the claim (no other claim can take
//! it), a provisioned claim gets the selected node. Unreserve reverts them. PreBind stands in for
//! the API writes and the PV controller: the claims become fully bound, a statically bound one to
//! its volume, a provisioned one to a volume on its selected node (only that node then passes).
//!
//! Upstream tries equally small volumes in the order of its informer index (a Go map: random);
//! here the one with the smaller name wins. CSIStorageCapacities are tried by (namespace, name).

use smallvec::SmallVec;

use super::{
    claim_name, claim_not_found, ephemeral_owner_error, lookup, sign_volumes, unresolvable, ResolvedPvAffinity,
};
use crate::api::Quantity;
use crate::config::{UtilizationShapePoint, VolumeBindingArgs, MAX_CUSTOM_PRIORITY_SCORE};
use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{
    BindingPod, Code, CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status, MAX_NODE_SCORE,
};
use crate::ids::PodUid;
use crate::plugins::noderesources::broken_linear;
use crate::snapshot::volumes::{ClaimRef, Pvc, TopologyTerm};
use crate::snapshot::{LabelSelector, NodeIdx, NodeSelector, PodInfo, Snapshot, Sym};
use crate::sync::Mutex;
use ahash::AHashMap;

pub const NAME: &str = "VolumeBinding";

/// `ErrReasonNodeConflict`.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// `ErrReasonBindConflict`.
pub const ERR_REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// `ErrReasonNotEnoughSpace`.
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// `ErrReasonPVNotExist`.
pub const ERR_REASON_PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// PreFilter's reason for an unbound claim of an Immediate class (or a pre-bound one).
pub const ERR_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
/// `volume.NotSupportedProvisioner`.
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// Filter's reasons, one bit each, in the order `FindPodVolumes` appends them.
const BIT_NODE_CONFLICT: u64 = 1;
const BIT_BIND_CONFLICT: u64 = 2;
const BIT_NOT_ENOUGH_SPACE: u64 = 4;
const BIT_PV_NOT_EXIST: u64 = 8;
const REASONS: [(u64, &str); 4] = [
    (BIT_NODE_CONFLICT, ERR_REASON_NODE_CONFLICT),
    (BIT_BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
    (BIT_NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE),
    (BIT_PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST),
];

/// `maxUtilization` of `scorer.go`.
const MAX_UTILIZATION: i64 = 100;

/// A claim as (namespace, name).
type ClaimKey = (Sym, Sym);

/// How PreBind left a claim: fully bound to a volume of the snapshot, or to the volume provisioned
/// for it on its selected node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BoundTo {
    Volume(Sym),
    Provisioned(Sym),
}

/// What Reserve assumed for one pod, for PreBind or Unreserve.
#[derive(Clone, Debug, Default)]
struct PodBindings {
    /// (volume, claim) of each static binding.
    statics: Vec<(Sym, ClaimKey)>,
    /// (claim, node) of each claim to provision.
    provisions: Vec<(ClaimKey, Sym)>,
}

/// The binder's caches: what Reserve assumed and what PreBind wrote, over the snapshot's objects.
#[derive(Debug, Default)]
struct Caches {
    /// Volumes assumed bound: their `claimRef`.
    pvs: AHashMap<Sym, ClaimRef>,
    /// Claims assumed to be provisioned: their selected node.
    pvcs: AHashMap<ClaimKey, Sym>,
    /// Claims PreBind bound.
    bound: AHashMap<ClaimKey, BoundTo>,
    /// Pods between Reserve and PreBind (or Unreserve).
    pending: AHashMap<PodUid, PodBindings>,
}

pub struct VolumeBinding {
    caches: Mutex<Caches>,
    /// StorageCapacityScoring's shape: (utilization, score scaled to `MAX_NODE_SCORE`), as
    /// upstream's `New` builds it from VolumeBindingArgs (score × `MAX_NODE_SCORE` /
    /// `MAX_CUSTOM_PRIORITY_SCORE`).
    shape: Vec<(i64, i64)>,
}

impl Default for VolumeBinding {
    fn default() -> Self {
        VolumeBinding::with_shape(&VolumeBindingArgs::default().shape)
    }
}

impl VolumeBinding {
    /// The plugin with VolumeBindingArgs' `shape`.
    pub fn with_shape(shape: &[UtilizationShapePoint]) -> Self {
        let scale = MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE as i64;
        let shape = shape.iter().map(|p| (p.utilization as i64, p.score as i64 * scale)).collect();
        VolumeBinding { caches: Mutex::default(), shape }
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The PersistentVolume of a bound claim, as Filter checks it.
#[derive(Clone, Debug)]
enum BoundPv {
    /// The claim names a volume that does not exist.
    Missing,
    /// The volume's `nodeAffinity.required`.
    Affinity(NodeSelector),
    /// A volume without required node affinity: any node.
    Any,
    /// A volume provisioned here for the claim: only its node.
    OnNode(Sym),
}

/// A volume a claim could be bound to.
#[derive(Clone, Debug)]
struct Candidate {
    name: Sym,
    class: Sym,
    capacity: Quantity,
    affinity: Option<NodeSelector>,
}

/// Whether (and how) the claim's class provisions on a node.
#[derive(Clone, Debug)]
enum Provision {
    /// No provisioner, or `kubernetes.io/no-provisioner`.
    NotSupported,
    Supported {
        /// `allowedTopologies` (empty: every node).
        topologies: Vec<TopologyTerm>,
        /// `None`: capacity is not checked; else the CSIStorageCapacities of the class with room
        /// for the request: (nodeTopology, `capacity`), in the order they are tried.
        capacities: Option<Vec<(Option<LabelSelector>, Option<Quantity>)>>,
    },
}

/// An unbound claim of a WaitForFirstConsumer class.
#[derive(Clone, Debug)]
struct Delayed {
    claim: ClaimKey,
    /// `spec.storageClassName` (the provision's class in Score).
    class: Sym,
    request: Option<Quantity>,
    /// The selected-node annotation (assumed or written).
    selected_node: Option<Sym>,
    /// Volumes whose `claimRef` already names the claim and that pass the checks made before it
    /// (capacity, volume mode, not being deleted), by name: `FindMatchingVolume` returns the first
    /// (or nothing when its node affinity fails) whatever else would fit.
    prebound: Vec<Candidate>,
    /// Available volumes passing every check but node affinity, smallest first, then by name.
    candidates: Vec<Candidate>,
    provision: Provision,
}

/// PreFilter's state.
struct State {
    /// The bound claims' volumes, in volume order.
    bound: Vec<BoundPv>,
    /// The unbound WaitForFirstConsumer claims, in volume order.
    delayed: Vec<Delayed>,
    /// Indices into `delayed` of the claims without a selected node, by request, smallest first
    /// (`byPVCSize`).
    by_size: Vec<usize>,
}

/// `volume.IsDelayBindingMode`: the claim's class exists and waits for the first consumer.
fn is_delay_binding(snap: &Snapshot, pvc: &Pvc) -> bool {
    if snap.interner.resolve(pvc.class).is_empty() {
        return false;
    }
    snap.cluster.volumes.classes.get(&pvc.class).is_some_and(|c| c.wait_for_first_consumer)
}

/// `podHasPVCs` then `GetPodVolumeClaims`: the pod's claims, or PreFilter's status.
fn pod_claims<'a>(snap: &'a Snapshot, pod: &PodInfo) -> Result<Vec<&'a Pvc>, Status> {
    let Some(vols) = &pod.volumes else { return Ok(Vec::new()) };
    let mut claims = Vec::new();
    for (claim, ephemeral) in vols.claims() {
        let c = claim_name(pod, claim, ephemeral, &snap.interner);
        let Some(pvc) = lookup(snap, pod, &c) else {
            return Err(unresolvable(if ephemeral {
                format!("waiting for ephemeral volume controller to create the persistentvolumeclaim \"{}\"", c.name)
            } else {
                claim_not_found(&c.name)
            }));
        };
        if pvc.lost {
            return Err(unresolvable(format!(
                "persistentvolumeclaim \"{}\" bound to non-existent persistentvolume \"{}\"",
                c.name,
                snap.interner.resolve(pvc.volume_name)
            )));
        }
        if pvc.deleting {
            return Err(unresolvable(format!("persistentvolumeclaim \"{}\" is being deleted", c.name)));
        }
        if ephemeral {
            if let Some(e) = ephemeral_owner_error(snap, pod, pvc) {
                return Err(unresolvable(e));
            }
        }
        claims.push(pvc);
    }
    Ok(claims)
}

/// `volume.IsVolumeBoundToClaim`.
fn bound_to_claim(r: &ClaimRef, pvc: &Pvc, empty: Sym) -> bool {
    r.namespace == pvc.namespace && r.name == pvc.name && (r.uid == empty || r.uid == pvc.uid)
}

/// The node-independent part of `FindMatchingVolume` (with a node, delayed binding) for one claim:
/// its pre-bound volumes and its candidates.
fn match_candidates(snap: &Snapshot, caches: &Caches, pvc: &Pvc) -> (Vec<Candidate>, Vec<Candidate>) {
    let empty = snap.wk.empty;
    let request = pvc.request.unwrap_or_default();
    let mut prebound = Vec::new();
    let mut candidates = Vec::new();
    for pv in snap.cluster.volumes.pvs.values() {
        if pv.class != pvc.class {
            continue;
        }
        let claim_ref = caches.pvs.get(&pv.name).or(pv.claim_ref.as_ref());
        if claim_ref.is_some_and(|r| !bound_to_claim(r, pvc, empty))
            || pv.capacity < request
            || pv.block != pvc.block
            || pv.deleting
        {
            continue;
        }
        let cand =
            Candidate { name: pv.name, class: pv.class, capacity: pv.capacity, affinity: pv.node_affinity.clone() };
        if claim_ref.is_some() {
            prebound.push(cand);
            continue;
        }
        if !pv.available
            || pvc.selector.as_ref().is_some_and(|s| !s.matches_labels(&pv.labels))
            || pvc.access_modes & !pv.access_modes != 0
        {
            continue;
        }
        candidates.push(cand);
    }
    let r = |s: Sym| snap.interner.resolve(s);
    prebound.sort_by(|a, b| r(a.name).cmp(r(b.name)));
    candidates.sort_by(|a, b| a.capacity.cmp(&b.capacity).then_with(|| r(a.name).cmp(r(b.name))));
    (prebound, candidates)
}

/// The provisioning side of `checkVolumeProvisions` and `hasEnoughCapacity` that does not depend
/// on the node.
fn provision_of(snap: &Snapshot, pvc: &Pvc) -> Provision {
    let vols = &snap.cluster.volumes;
    let Some(class) = vols.classes.get(&pvc.class) else { return Provision::NotSupported };
    let provisioner = snap.interner.resolve(class.provisioner);
    if provisioner.is_empty() || provisioner == NOT_SUPPORTED_PROVISIONER {
        return Provision::NotSupported;
    }
    let capacities = match pvc.request {
        Some(size) if vols.csi_drivers.get(&class.provisioner) == Some(&true) => Some(
            vols.capacities
                .iter()
                .filter(|c| {
                    c.storage_class == class.name && c.maximum_volume_size.or(c.capacity).is_some_and(|l| l >= size)
                })
                .map(|c| (c.node_topology.clone(), c.capacity))
                .collect(),
        ),
        _ => None,
    };
    Provision::Supported { topologies: class.allowed_topologies.clone(), capacities }
}

/// A label value of node `n` (`Sym::NONE` when it has no such label).
#[inline]
fn node_label(snap: &Snapshot, n: NodeIdx, key: Sym) -> Sym {
    snap.nodes.label_column(key).map_or(Sym::NONE, |c| c[n.ix()])
}

/// `v1helper.MatchTopologySelectorTerms` against node `n`'s labels.
fn topology_matches(snap: &Snapshot, n: NodeIdx, terms: &[TopologyTerm]) -> bool {
    terms.is_empty()
        || terms.iter().flatten().any(|reqs| {
            reqs.iter().all(|(k, vals)| {
                let v = node_label(snap, n, *k);
                !v.is_none() && vals.contains(&v)
            })
        })
}

/// `labels.Selector.Matches` of a compiled label selector against node `n`'s labels.
fn selector_matches(snap: &Snapshot, n: NodeIdx, sel: &LabelSelector) -> bool {
    !sel.matches_nothing && sel.reqs.iter().all(|r| r.matches_value(node_label(snap, n, r.key), &snap.interner))
}

/// A volume's node affinity against node `n` (`volume.CheckNodeAffinity`); `None`: no affinity.
#[inline]
fn affinity_ok(snap: &Snapshot, n: NodeIdx, affinity: &Option<ResolvedPvAffinity<'_>>) -> bool {
    affinity.as_ref().is_none_or(|r| r.matches(snap, n))
}

/// The node affinities of PreFilter's state with their label columns looked up, once per Filter,
/// Score or Reserve call (not per node).
struct Resolved<'a> {
    bound: Vec<Option<ResolvedPvAffinity<'a>>>,
    /// Per delayed claim: its pre-bound volumes' and its candidates' affinities.
    prebound: Vec<Vec<Option<ResolvedPvAffinity<'a>>>>,
    candidates: Vec<Vec<Option<ResolvedPvAffinity<'a>>>>,
}

impl<'a> Resolved<'a> {
    fn new(s: &'a State, snap: &'a Snapshot) -> Self {
        let of = |c: &'a [Candidate]| -> Vec<Option<ResolvedPvAffinity<'a>>> {
            c.iter().map(|c| c.affinity.as_ref().map(|sel| ResolvedPvAffinity::new(snap, sel))).collect()
        };
        Resolved {
            bound: s
                .bound
                .iter()
                .map(|b| match b {
                    BoundPv::Affinity(sel) => Some(ResolvedPvAffinity::new(snap, sel)),
                    _ => None,
                })
                .collect(),
            prebound: s.delayed.iter().map(|d| of(&d.prebound)).collect(),
            candidates: s.delayed.iter().map(|d| of(&d.candidates)).collect(),
        }
    }
}

/// What `FindPodVolumes` found on one node: the volume chosen for each claim it binds statically
/// (index into `State::delayed`, volume) and each claim it provisions (index, the capacity
/// object's `capacity` when capacity is tracked).
#[derive(Default)]
struct Found<'s> {
    statics: SmallVec<[(usize, &'s Candidate); 4]>,
    provisions: SmallVec<[(usize, Option<Option<Quantity>>); 4]>,
}

/// `FindPodVolumes` on node `n`: the reason bits (0 when the node passes) and what it found.
fn find_pod_volumes<'s>(s: &'s State, r: &Resolved<'_>, snap: &Snapshot, n: NodeIdx) -> (u64, Found<'s>) {
    let mut bits = 0;
    for (b, aff) in s.bound.iter().zip(&r.bound) {
        let fail = match b {
            BoundPv::Missing => BIT_PV_NOT_EXIST,
            BoundPv::Affinity(_) if !affinity_ok(snap, n, aff) => BIT_NODE_CONFLICT,
            BoundPv::OnNode(node) if *node != snap.nodes.name[n.ix()] => BIT_NODE_CONFLICT,
            _ => 0,
        };
        if fail != 0 {
            bits |= fail;
            break;
        }
    }
    let mut found = Found::default();
    if s.delayed.is_empty() {
        return (bits, found);
    }
    let node_name = snap.nodes.name[n.ix()];
    let mut to_provision: SmallVec<[usize; 4]> = SmallVec::new();
    for (i, d) in s.delayed.iter().enumerate() {
        if let Some(sel) = d.selected_node {
            if sel != node_name {
                return (bits | BIT_BIND_CONFLICT, found);
            }
            to_provision.push(i);
        }
    }
    let mut unbound_ok = true;
    let mut sufficient = true;
    for &i in &s.by_size {
        let d = &s.delayed[i];
        let chosen = |c: &&Candidate| found.statics.iter().any(|(_, x)| x.name == c.name);
        let pick = match d.prebound.iter().zip(&r.prebound[i]).find(|(c, _)| !chosen(c)) {
            Some((c, aff)) => affinity_ok(snap, n, aff).then_some(c),
            None => d
                .candidates
                .iter()
                .zip(&r.candidates[i])
                .find(|(c, aff)| !chosen(c) && affinity_ok(snap, n, aff))
                .map(|(c, _)| c),
        };
        match pick {
            Some(c) => found.statics.push((i, c)),
            None => {
                unbound_ok = false;
                to_provision.push(i);
            }
        }
    }
    if !to_provision.is_empty() {
        unbound_ok = true;
        for &i in &to_provision {
            let Provision::Supported { topologies, capacities } = &s.delayed[i].provision else {
                unbound_ok = false;
                break;
            };
            if !topology_matches(snap, n, topologies) {
                unbound_ok = false;
                break;
            }
            let capacity = match capacities {
                None => None,
                Some(caps) => {
                    match caps.iter().find(|(sel, _)| sel.as_ref().is_some_and(|sel| selector_matches(snap, n, sel))) {
                        Some((_, cap)) => Some(*cap),
                        None => {
                            sufficient = false;
                            break;
                        }
                    }
                }
            };
            found.provisions.push((i, capacity));
        }
    }
    if !unbound_ok {
        bits |= BIT_BIND_CONFLICT;
    }
    if !sufficient {
        bits |= BIT_NOT_ENOUGH_SPACE;
    }
    (bits, found)
}

/// `buildScorerFunction` over `shape` (see [`VolumeBinding::with_shape`]) and (requested,
/// capacity) per class: each class's utilization (`requested * 100 / capacity`, or 100 when the
/// capacity is 0 or exceeded) through the broken linear function, the classes' mean rounded half
/// away from zero.
fn capacity_score(shape: &[(i64, i64)], classes: &[(Sym, i64, i64)]) -> i64 {
    if classes.is_empty() {
        return 0;
    }
    let f = |requested: i64, capacity: i64| {
        if capacity == 0 || requested > capacity {
            return broken_linear(shape, MAX_UTILIZATION);
        }
        broken_linear(shape, requested.wrapping_mul(MAX_UTILIZATION) / capacity)
    };
    let sum: i64 = classes.iter().map(|&(_, r, c)| f(r, c)).sum();
    (sum as f64 / classes.len() as f64).round() as i64
}

/// Adds (requested, capacity) to `class`'s entry, or sets its capacity when `set_capacity`.
fn add_class(classes: &mut SmallVec<[(Sym, i64, i64); 4]>, class: Sym, requested: i64, capacity: i64, set: bool) {
    match classes.iter_mut().find(|c| c.0 == class) {
        Some(c) => {
            c.1 += requested;
            if set {
                c.2 = capacity;
            } else {
                c.2 += capacity;
            }
        }
        None => classes.push((class, requested, capacity)),
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sign_volumes(pod, sig);
        Sign::Signed
    }

    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        let snap = cx.snap;
        let claims = match pod_claims(snap, cx.pod) {
            Ok(c) if c.is_empty() => return (Status::skip(), PreFilterResult::default()),
            Ok(c) => c,
            Err(st) => return (st, PreFilterResult::default()),
        };
        let caches = self.caches();
        let mut bound = Vec::new();
        let mut delayed_claims: Vec<&Pvc> = Vec::new();
        let mut immediate = false;
        for pvc in claims {
            let key = (pvc.namespace, pvc.name);
            let volume = match caches.bound.get(&key) {
                Some(BoundTo::Provisioned(node)) => {
                    bound.push(BoundPv::OnNode(*node));
                    continue;
                }
                Some(BoundTo::Volume(pv)) => Some(*pv),
                None => pvc.fully_bound.then_some(pvc.volume_name),
            };
            if let Some(pv) = volume {
                bound.push(match snap.cluster.volumes.pvs.get(&pv) {
                    None => BoundPv::Missing,
                    Some(pv) => pv.node_affinity.clone().map_or(BoundPv::Any, BoundPv::Affinity),
                });
            } else if is_delay_binding(snap, pvc) && snap.interner.resolve(pvc.volume_name).is_empty() {
                delayed_claims.push(pvc);
            } else {
                immediate = true;
            }
        }
        if immediate {
            return (unresolvable(ERR_UNBOUND_IMMEDIATE), PreFilterResult::default());
        }
        let delayed: Vec<Delayed> = delayed_claims
            .iter()
            .map(|pvc| {
                let (prebound, candidates) = match_candidates(snap, &caches, pvc);
                Delayed {
                    claim: (pvc.namespace, pvc.name),
                    class: pvc.class,
                    request: pvc.request,
                    selected_node: caches.pvcs.get(&(pvc.namespace, pvc.name)).copied().or(pvc.selected_node),
                    prebound,
                    candidates,
                    provision: provision_of(snap, pvc),
                }
            })
            .collect();
        drop(caches);
        let mut by_size: Vec<usize> = (0..delayed.len()).filter(|&i| delayed[i].selected_node.is_none()).collect();
        by_size.sort_by_key(|&i| delayed[i].request.unwrap_or_default());
        state.write(NAME, State { bound, delayed, by_size });
        (Status::success(), PreFilterResult::default())
    }

    fn filter_rejects_none(&self, _cx: CycleCx<'_>, state: &CycleState) -> bool {
        state
            .read::<State>(NAME)
            .is_none_or(|s| s.delayed.is_empty() && s.bound.iter().all(|b| matches!(b, BoundPv::Any)))
    }

    /// `FindPodVolumes`: the reasons of every check that failed, in upstream's order.
    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(s) = state.read::<State>(NAME) else { return };
        let r = Resolved::new(s, cx.snap);
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            let (bits, _) = find_pod_volumes(s, &r, cx.snap, n);
            if bits != 0 {
                *o = Some(Reject::unresolvable(bits));
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        REASONS.iter().filter(|(b, _)| reject.detail & b != 0).map(|(_, r)| r.to_string()).collect()
    }

    /// Scores only where a claim is bound statically or provisioned with tracked capacity.
    fn score_is_uniform(&self, _cx: CycleCx<'_>, state: &CycleState) -> bool {
        state.read::<State>(NAME).is_none_or(|s| s.delayed.is_empty())
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        out.fill(0);
        let Some(s) = state.read::<State>(NAME) else { return Ok(()) };
        if s.delayed.is_empty() {
            return Ok(());
        }
        let r = Resolved::new(s, cx.snap);
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            let (bits, found) = find_pod_volumes(s, &r, cx.snap, n);
            if bits != 0 {
                continue;
            }
            let mut classes: SmallVec<[(Sym, i64, i64); 4]> = SmallVec::new();
            if !found.statics.is_empty() {
                for &(i, c) in &found.statics {
                    let req = s.delayed[i].request.unwrap_or_default().value_ceil();
                    add_class(&mut classes, c.class, req, c.capacity.value_ceil(), false);
                }
            } else {
                for &(i, cap) in &found.provisions {
                    let Some(cap) = cap else { continue };
                    let d = &s.delayed[i];
                    let req = d.request.unwrap_or_default().value_ceil();
                    add_class(&mut classes, d.class, req, cap.unwrap_or_default().value_ceil(), true);
                }
            }
            *o = capacity_score(&self.shape, &classes);
        }
        Ok(())
    }

    /// `AssumePodVolumes`: the node's static bindings and provisions, assumed.
    fn reserve(&self, cx: CycleCx<'_>, state: &mut CycleState, node: NodeIdx) -> Status {
        let Some(s) = state.read::<State>(NAME) else { return Status::success() };
        if s.delayed.is_empty() {
            return Status::success();
        }
        let (bits, found) = find_pod_volumes(s, &Resolved::new(s, cx.snap), cx.snap, node);
        if bits != 0 {
            return Status::new(Code::Error, format!("no pod volume found for node \"{}\"", cx.snap.node_name(node)));
        }
        let node_name = cx.snap.nodes.name[node.ix()];
        let mut caches = self.caches();
        let mut b = PodBindings::default();
        for &(i, c) in &found.statics {
            let claim = s.delayed[i].claim;
            let uid = cx.snap.cluster.volumes.pvc(claim.0, claim.1).map_or(cx.snap.wk.empty, |p| p.uid);
            caches.pvs.insert(c.name, ClaimRef { namespace: claim.0, name: claim.1, uid });
            b.statics.push((c.name, claim));
        }
        for &(i, _) in &found.provisions {
            let claim = s.delayed[i].claim;
            caches.pvcs.insert(claim, node_name);
            b.provisions.push((claim, node_name));
        }
        caches.pending.insert(cx.pod.uid, b);
        Status::success()
    }

    /// `RevertAssumedPodVolumes`.
    fn unreserve(&self, cx: CycleCx<'_>, _state: &mut CycleState, _node: NodeIdx) {
        let mut caches = self.caches();
        if let Some(b) = caches.pending.remove(&cx.pod.uid) {
            for (pv, _) in &b.statics {
                caches.pvs.remove(pv);
            }
            for (claim, _) in &b.provisions {
                caches.pvcs.remove(claim);
            }
        }
    }

    /// `BindPodVolumes` with the PV controller's part done at once: the claims become fully bound.
    fn pre_bind(&self, pod: &BindingPod<'_>) -> Status {
        let mut caches = self.caches();
        if let Some(b) = caches.pending.remove(&pod.uid) {
            for (pv, claim) in b.statics {
                caches.bound.insert(claim, BoundTo::Volume(pv));
            }
            for (claim, node) in b.provisions {
                caches.bound.insert(claim, BoundTo::Provisioned(node));
            }
        }
        Status::success()
    }
}

#[cfg(test)]
mod scorer_tests {
    use super::*;

    /// scorer_test.go TestScore: (shape, [(hdd requested, capacity), (ssd requested, capacity)] → score).
    #[test]
    fn capacity_score_is_upstreams_scorer() {
        let default = VolumeBinding::default().shape;
        assert_eq!(default, vec![(0, 100), (100, 0)]);
        let custom = vec![(50, 0), (80, 30), (100, 50)];
        let (hdd, ssd) = (Sym(1), Sym(2));
        type Case = (&'static [(i64, i64)], i64);
        type Table<'a> = (&'a str, &'a [(i64, i64)], &'a [Case]);
        let tables: [Table<'_>; 3] = [
            (
                "default shape, single class",
                &default,
                &[(&[(0, 100)], 100), (&[(30, 100)], 70), (&[(50, 100)], 50), (&[(100, 100)], 0)],
            ),
            (
                "default shape, multiple classes",
                &default,
                &[
                    (&[(0, 100), (0, 100)], 100),
                    (&[(0, 100), (30, 100)], 85),
                    (&[(30, 100), (30, 100)], 70),
                    (&[(30, 100), (60, 100)], 55),
                    (&[(50, 100), (50, 100)], 50),
                    (&[(50, 100), (100, 100)], 25),
                    (&[(100, 100), (100, 100)], 0),
                ],
            ),
            (
                "custom shape, multiple classes",
                &custom,
                &[
                    (&[(0, 100), (0, 100)], 0),
                    (&[(0, 100), (30, 100)], 0),
                    (&[(30, 100), (30, 100)], 0),
                    (&[(30, 100), (60, 100)], 5),
                    (&[(50, 100), (100, 100)], 25),
                    (&[(90, 100), (90, 100)], 40),
                    (&[(100, 100), (100, 100)], 50),
                ],
            ),
        ];
        for (name, shape, cases) in tables {
            for (classes, want) in cases {
                let c: Vec<(Sym, i64, i64)> =
                    classes.iter().zip([hdd, ssd]).map(|(&(r, cap), class)| (class, r, cap)).collect();
                assert_eq!(capacity_score(shape, &c), *want, "{name}: {classes:?}");
            }
        }
        // Capacity 0 or exceeded: utilization 100.
        assert_eq!(capacity_score(&custom, &[(hdd, 5, 0)]), 50);
        assert_eq!(capacity_score(&custom, &[(hdd, 200, 100)]), 50);
    }

    /// VolumeBindingArgs' shape points (score 0..=10) become scores 0..=100, as upstream's `New` scales them.
    #[test]
    fn args_shape_is_scaled_to_node_scores() {
        let pts =
            [UtilizationShapePoint { utilization: 0, score: 0 }, UtilizationShapePoint { utilization: 100, score: 10 }];
        assert_eq!(VolumeBinding::with_shape(&pts).shape, vec![(0, 0), (100, 100)]);
    }
}
