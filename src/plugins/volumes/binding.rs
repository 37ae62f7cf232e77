//! VolumeBinding (`plugins/volumebinding`: `volume_binding.go`, `binder.go`): a pod's claims must
//! exist, not be lost or being deleted (an ephemeral one must belong to the pod), and none may be
//! an unbound claim of an Immediate class; each bound claim's PersistentVolume must exist and its
//! node affinity must match the node. Unbound claims of a WaitForFirstConsumer class (static
//! binding to an available PV, dynamic provisioning) are not modelled: such a pod gets an Error
//! at PreFilter saying so, never a silent pass. Scores are 0 everywhere (upstream's scorer adds
//! only for static bindings and provisioned claims, which never exist here); Reserve and PreBind
//! have nothing to do for bound claims, as upstream's.

use super::{
    claim_name, claim_not_found, ephemeral_owner_error, lookup, sign_volumes, unresolvable, ResolvedPvAffinity,
};
use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{Code, CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status};
use crate::snapshot::volumes::Pvc;
use crate::snapshot::{NodeIdx, NodeSelector, PodInfo, Snapshot, Sym};

pub const NAME: &str = "VolumeBinding";

/// `ErrReasonNodeConflict`.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// `ErrReasonPVNotExist`.
pub const ERR_REASON_PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// PreFilter's reason for an unbound claim of an Immediate class (or a pre-bound one).
pub const ERR_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

const DETAIL_NODE_CONFLICT: u64 = 0;
const DETAIL_PV_NOT_EXIST: u64 = 1;

pub struct VolumeBinding;

/// The PersistentVolume of a bound claim, as Filter checks it.
#[derive(Clone, Debug)]
enum BoundPv {
    /// The claim names a volume that does not exist.
    Missing,
    /// The volume's `nodeAffinity.required`.
    Affinity(NodeSelector),
    /// A volume without required node affinity: any node.
    Any,
}

/// PreFilter's state: the pod's bound claims' volumes, in volume order.
struct State {
    bound: Vec<BoundPv>,
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
        let mut bound = Vec::new();
        let mut delayed: Option<&Pvc> = None;
        let mut immediate = false;
        for pvc in claims {
            if pvc.fully_bound {
                bound.push(match snap.cluster.volumes.pvs.get(&pvc.volume_name) {
                    None => BoundPv::Missing,
                    Some(pv) => pv.node_affinity.clone().map_or(BoundPv::Any, BoundPv::Affinity),
                });
            } else if is_delay_binding(snap, pvc) && snap.interner.resolve(pvc.volume_name).is_empty() {
                delayed.get_or_insert(pvc);
            } else {
                immediate = true;
            }
        }
        if immediate {
            return (unresolvable(ERR_UNBOUND_IMMEDIATE), PreFilterResult::default());
        }
        if let Some(pvc) = delayed {
            let r = |s: Sym| snap.interner.resolve(s);
            let message = format!(
                "schedperf does not model binding the unbound WaitForFirstConsumer claim {}/{} (static binding to an \
                 available PersistentVolume, dynamic provisioning)",
                r(pvc.namespace),
                r(pvc.name)
            );
            return (Status::new(Code::Error, message), PreFilterResult::default());
        }
        state.write(NAME, State { bound });
        (Status::success(), PreFilterResult::default())
    }

    fn filter_rejects_none(&self, _cx: CycleCx<'_>, state: &CycleState) -> bool {
        state.read::<State>(NAME).is_none_or(|s| s.bound.iter().all(|b| matches!(b, BoundPv::Any)))
    }

    /// `FindPodVolumes` for bound claims (`checkBoundClaims`): the first claim whose volume is
    /// missing or does not match the node decides.
    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(s) = state.read::<State>(NAME) else { return };
        let snap = cx.snap;
        let resolved: Vec<Option<ResolvedPvAffinity<'_>>> = s
            .bound
            .iter()
            .map(|b| match b {
                BoundPv::Affinity(sel) => Some(ResolvedPvAffinity::new(snap, sel)),
                _ => None,
            })
            .collect();
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            for (b, r) in s.bound.iter().zip(&resolved) {
                let detail = match (b, r) {
                    (BoundPv::Missing, _) => Some(DETAIL_PV_NOT_EXIST),
                    (BoundPv::Affinity(_), Some(r)) if !r.matches(snap, n) => Some(DETAIL_NODE_CONFLICT),
                    _ => None,
                };
                if let Some(d) = detail {
                    *o = Some(Reject::unresolvable(d));
                    break;
                }
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        vec![match reject.detail {
            DETAIL_PV_NOT_EXIST => ERR_REASON_PV_NOT_EXIST,
            _ => ERR_REASON_NODE_CONFLICT,
        }
        .to_string()]
    }

    /// Scores 0 on every node: no claim is ever statically bound or provisioned here.
    fn score_is_uniform(&self, _cx: CycleCx<'_>, _state: &CycleState) -> bool {
        true
    }
}
