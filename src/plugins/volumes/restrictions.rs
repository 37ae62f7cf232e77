//! VolumeRestrictions (`plugins/volumerestrictions`): an inline GCE PD, AWS EBS, RBD or iSCSI
//! volume must not conflict with one of a pod already on the node (`isVolumeConflict`), and a
//! ReadWriteOncePod claim must not be in use by any placed pod.

use super::{claim_not_found, sign_volumes, unresolvable};
use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status};
use crate::snapshot::volumes::PodVolume;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot, Sym};

pub const NAME: &str = "VolumeRestrictions";

/// `ErrReasonDiskConflict`.
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// `ErrReasonReadWriteOncePodConflict`.
pub const ERR_REASON_RWOP_CONFLICT: &str =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

const DETAIL_DISK: u64 = 0;
const DETAIL_RWOP: u64 = 1;

pub struct VolumeRestrictions;

/// PreFilter's state (`preFilterState`).
struct State {
    /// The pod has an inline volume `isVolumeConflict` checks.
    needs_check: bool,
    /// Placed pods' references to the pod's ReadWriteOncePod claims (`conflictingPVCRefCount`).
    conflicting: usize,
}

/// `needsRestrictionsCheck`.
fn needs_check(v: &PodVolume) -> bool {
    matches!(v, PodVolume::GcePd { .. } | PodVolume::AwsEbs { .. } | PodVolume::Rbd { .. } | PodVolume::Iscsi { .. })
}

/// `haveOverlap`.
fn overlap(a: &[Sym], b: &[Sym]) -> bool {
    a.iter().any(|x| b.contains(x))
}

/// `isVolumeConflict`: `v` (of the pod to schedule) conflicts with a volume of `existing`.
pub fn conflicts(v: &PodVolume, existing: &[PodVolume]) -> bool {
    existing.iter().any(|e| match (v, e) {
        (PodVolume::GcePd { pd_name: a, read_only: ra }, PodVolume::GcePd { pd_name: b, read_only: rb }) => {
            a == b && !(*ra && *rb)
        }
        (PodVolume::AwsEbs { volume_id: a, .. }, PodVolume::AwsEbs { volume_id: b, .. }) => a == b,
        (PodVolume::Iscsi { iqn: a, read_only: ra }, PodVolume::Iscsi { iqn: b, read_only: rb }) => {
            a == b && !(*ra && *rb)
        }
        (
            PodVolume::Rbd { monitors: ma, pool: pa, image: ia, read_only: ra },
            PodVolume::Rbd { monitors: mb, pool: pb, image: ib, read_only: rb },
        ) => overlap(ma, mb) && pa == pb && ia == ib && !(*ra && *rb),
        _ => false,
    })
}

/// `IsPVCUsedByPods`: a placed pod's `persistentVolumeClaim` volume names the claim.
fn claim_in_use(snap: &Snapshot, namespace: Sym, claim: Sym) -> bool {
    snap.pods.values().any(|p| {
        p.info.namespace == namespace
            && p.info.volumes.as_ref().is_some_and(|v| {
                v.list.iter().any(|x| matches!(x, PodVolume::Claim { claim: c, ephemeral: false } if *c == claim))
            })
    })
}

impl Plugin for VolumeRestrictions {
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
        let none = PreFilterResult::default;
        let Some(vols) = &cx.pod.volumes else { return (Status::skip(), none()) };
        let snap = cx.snap;
        let needs_check = vols.list.iter().any(needs_check);
        let mut rwop: Vec<Sym> = Vec::new();
        for v in &vols.list {
            let PodVolume::Claim { claim, ephemeral: false } = v else { continue };
            let Some(pvc) = snap.cluster.volumes.pvc(cx.pod.namespace, *claim) else {
                return (unresolvable(claim_not_found(snap.interner.resolve(*claim))), none());
            };
            if pvc.read_write_once_pod && !rwop.contains(claim) {
                rwop.push(*claim);
            }
        }
        let conflicting = rwop.iter().filter(|&&c| claim_in_use(snap, cx.pod.namespace, c)).count();
        if !needs_check && conflicting == 0 {
            return (Status::skip(), none());
        }
        state.write(NAME, State { needs_check, conflicting });
        (Status::success(), none())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(s) = state.read::<State>(NAME) else { return };
        let Some(vols) = &cx.pod.volumes else { return };
        let snap = cx.snap;
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            if s.needs_check {
                let disk = vols.list.iter().filter(|v| needs_check(v)).any(|v| {
                    snap.nodes.pods[n.ix()].iter().zip(&snap.nodes.pod_meta[n.ix()]).any(|(uid, meta)| {
                        !meta.plain && snap.pods[uid].info.volumes.as_ref().is_some_and(|e| conflicts(v, &e.list))
                    })
                });
                if disk {
                    *o = Some(Reject::unschedulable(DETAIL_DISK));
                    continue;
                }
            }
            if s.conflicting > 0 {
                *o = Some(Reject::unschedulable(DETAIL_RWOP));
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        vec![match reject.detail {
            DETAIL_RWOP => ERR_REASON_RWOP_CONFLICT,
            _ => ERR_REASON_DISK_CONFLICT,
        }
        .to_string()]
    }
}
