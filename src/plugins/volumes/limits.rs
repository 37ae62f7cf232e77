//! NodeVolumeLimits (`plugins/nodevolumelimits/csi.go`; the in-tree limits plugins are gone at
//! v1.37): the CSI volumes a pod would attach to a node, with those its pods attach already,
//! must stay within the node's CSINode `allocatable.count` per driver. In-tree GCE PD and AWS EBS
//! volumes (inline, or PersistentVolumes) count as their CSI driver's once the node has a
//! CSINode (upstream's `isCSIMigrationOn`). Not modelled: VolumeAttachments and CSIDriver
//! objects (neither kind is loaded), so no attachment counts beyond the pods' and every driver
//! counts as installed (VolumeLimitScaling's check passes).

use super::{claim_name, lookup, sign_volumes};
use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status};
use crate::snapshot::volumes::{CsiNodeInfo, InTreeDisk, PodVolume, Pvc};
use crate::snapshot::{NodeIdx, PodInfo, Snapshot, Sym};

pub const NAME: &str = "NodeVolumeLimits";

/// `ErrReasonMaxVolumeCountExceeded`.
pub const ERR_REASON_MAX_VOLUME_COUNT: &str = "node(s) exceed max volume count";

const DETAIL_LIMIT: u64 = 0;
const DETAIL_CLAIM_NOT_FOUND: u64 = 1;

/// The migratable in-tree plugins and their CSI drivers (`csi-translation-lib`), with whether
/// `isCSIMigrationOn` holds for the plugin (given a CSINode).
const IN_TREE_DRIVERS: [(&str, &str, bool); 7] = [
    ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", true),
    ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", true),
    ("kubernetes.io/azure-disk", "disk.csi.azure.com", true),
    ("kubernetes.io/cinder", "cinder.csi.openstack.org", true),
    ("kubernetes.io/portworx-volume", "pxd.portworx.com", true),
    ("kubernetes.io/azure-file", "file.csi.azure.com", false),
    ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", false),
];

pub struct NodeVolumeLimits;

/// A volume's handle, standing for upstream's `<driver>/<volumeHandle>` unique name without
/// building the string: equal handles are equal names for one driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handle {
    /// A CSI PersistentVolume's `volumeHandle`.
    Csi(Sym),
    /// A claim not bound to a PV, counted by its class's provisioner: `<random>-<ns>/<claim>`.
    Claim(Sym, Sym),
    /// A GCE PD translated to CSI (by disk name).
    GcePd(Sym),
    /// An AWS EBS volume translated to CSI (by volume id as written).
    AwsEbs(Sym),
}

/// (driver, handle) of one attachable volume.
type Attach = (Sym, Handle);

/// PreFilter's finding: a claim of the pod to schedule does not exist (Filter's NotFound).
struct State {
    missing_claim: Option<String>,
}

/// The CSI driver an in-tree disk migrates to, when migration is on for the node.
fn in_tree_attach(snap: &Snapshot, csi_node: Option<&CsiNodeInfo>, disk: &InTreeDisk) -> Option<Attach> {
    csi_node?;
    let (driver, handle) = match disk {
        InTreeDisk::GcePd(pd) => (IN_TREE_DRIVERS[0].1, Handle::GcePd(*pd)),
        InTreeDisk::AwsEbs(id) => (IN_TREE_DRIVERS[1].1, Handle::AwsEbs(*id)),
    };
    Some((snap.interner.get(driver)?, handle))
}

/// `getCSIDriverInfoFromSC`.
fn from_class(snap: &Snapshot, csi_node: Option<&CsiNodeInfo>, pvc: &Pvc) -> Option<Attach> {
    let class = snap.cluster.volumes.classes.get(&pvc.class)?;
    let provisioner = snap.interner.resolve(class.provisioner);
    let handle = Handle::Claim(pvc.namespace, pvc.name);
    if let Some(&(_, driver, migration_on)) = IN_TREE_DRIVERS.iter().find(|(p, _, _)| *p == provisioner) {
        if csi_node.is_none() || !migration_on {
            return None;
        }
        return Some((snap.interner.get(driver)?, handle));
    }
    if provisioner.is_empty() {
        return None;
    }
    Some((class.provisioner, handle))
}

/// `getCSIDriverInfo`.
fn from_claim(snap: &Snapshot, csi_node: Option<&CsiNodeInfo>, pvc: &Pvc) -> Option<Attach> {
    let Some(pv) = snap.cluster.volumes.pvs.get(&pvc.volume_name) else {
        return from_class(snap, csi_node, pvc);
    };
    if let Some((driver, handle)) = pv.csi {
        if snap.interner.resolve(driver).is_empty() || snap.interner.resolve(handle).is_empty() {
            return None;
        }
        return Some((driver, Handle::Csi(handle)));
    }
    in_tree_attach(snap, csi_node, pv.in_tree.as_ref()?)
}

/// `filterAttachableVolumes` of a pod already on the node (claims it cannot find are skipped).
fn attachable(snap: &Snapshot, pod: &PodInfo, csi_node: Option<&CsiNodeInfo>, out: &mut Vec<Attach>) {
    let Some(vols) = &pod.volumes else { return };
    for v in &vols.list {
        let a = match v {
            PodVolume::Claim { claim, ephemeral } => {
                let c = claim_name(pod, *claim, *ephemeral, &snap.interner);
                lookup(snap, pod, &c).and_then(|pvc| from_claim(snap, csi_node, pvc))
            }
            PodVolume::GcePd { pd_name, .. } => in_tree_attach(snap, csi_node, &InTreeDisk::GcePd(*pd_name)),
            PodVolume::AwsEbs { volume_id, .. } => in_tree_attach(snap, csi_node, &InTreeDisk::AwsEbs(*volume_id)),
            _ => None,
        };
        if let Some(a) = a {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
}

impl Plugin for NodeVolumeLimits {
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

    /// Skip unless the pod has a claim or a migratable in-tree volume.
    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        let none = PreFilterResult::default;
        let Some(vols) = &cx.pod.volumes else { return (Status::skip(), none()) };
        if !vols
            .list
            .iter()
            .any(|v| matches!(v, PodVolume::Claim { .. } | PodVolume::GcePd { .. } | PodVolume::AwsEbs { .. }))
        {
            return (Status::skip(), none());
        }
        // Filter's lookup of the pod's own claims does not depend on the node: done once here.
        state.write(NAME, State { missing_claim: missing_claim(cx) });
        (Status::success(), none())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(s) = state.read::<State>(NAME) else { return };
        if s.missing_claim.is_some() {
            out.fill(Some(Reject::unresolvable(DETAIL_CLAIM_NOT_FOUND)));
            return;
        }
        let snap = cx.snap;
        let mut new: Vec<Attach> = Vec::new();
        let mut attached: Vec<Attach> = Vec::new();
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            let csi_node = snap.cluster.volumes.csi_nodes.get(&snap.nodes.name[n.ix()]);
            new.clear();
            attachable(snap, cx.pod, csi_node, &mut new);
            if new.is_empty() {
                continue;
            }
            let Some(limits) = csi_node.filter(|c| c.drivers.iter().any(|d| d.1.is_some())) else { continue };
            attached.clear();
            for (uid, meta) in snap.nodes.pods[n.ix()].iter().zip(&snap.nodes.pod_meta[n.ix()]) {
                if !meta.plain {
                    attachable(snap, &snap.pods[uid].info, csi_node, &mut attached);
                }
            }
            new.retain(|a| !attached.contains(a));
            let over = limits.drivers.iter().any(|&(driver, count)| {
                let Some(max) = count else { return false };
                let adding = new.iter().filter(|a| a.0 == driver).count();
                adding > 0 && (attached.iter().filter(|a| a.0 == driver).count() + adding) as i64 > i64::from(max)
            });
            if over {
                *o = Some(Reject::unschedulable(DETAIL_LIMIT));
            }
        }
    }

    /// A missing claim is worded from the cycle state, or found again when the state is gone (the
    /// run words a failed cycle's message after the cycle).
    fn reasons(&self, cx: CycleCx<'_>, state: &CycleState, reject: Reject) -> Vec<String> {
        if reject.detail == DETAIL_CLAIM_NOT_FOUND {
            let missing = match state.read::<State>(NAME) {
                Some(s) => s.missing_claim.clone(),
                None => missing_claim(cx),
            };
            if let Some(m) = missing {
                return vec![m];
            }
        }
        vec![ERR_REASON_MAX_VOLUME_COUNT.to_string()]
    }
}

/// The first claim of the pod that does not exist, worded as Filter's NotFound error.
fn missing_claim(cx: CycleCx<'_>) -> Option<String> {
    let vols = cx.pod.volumes.as_ref()?;
    for (claim, ephemeral) in vols.claims() {
        let c = claim_name(cx.pod, claim, ephemeral, &cx.snap.interner);
        if lookup(cx.snap, cx.pod, &c).is_none() {
            let ns = cx.snap.interner.resolve(cx.pod.namespace);
            return Some(format!("looking up PVC {ns}/{}: {}", c.name, super::claim_not_found(&c.name)));
        }
    }
    None
}
