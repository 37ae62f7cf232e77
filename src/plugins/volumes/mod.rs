//! The volume plugins: VolumeBinding (`binding.rs`), VolumeRestrictions (`restrictions.rs`),
//! VolumeZone (`zone.rs`) and NodeVolumeLimits (`limits.rs`, upstream's `nodevolumelimits/csi.go`),
//! over the storage objects of the snapshot (`snapshot::volumes`). A pod without volumes
//! ([`PodInfo::volumes`] `None`) makes each PreFilter return Skip at once, as upstream's do.

pub mod binding;
pub mod hints;
pub mod limits;
pub mod restrictions;
pub mod zone;

#[cfg(test)]
mod tests;

pub use binding::VolumeBinding;
pub use limits::NodeVolumeLimits;
pub use restrictions::VolumeRestrictions;
pub use zone::VolumeZone;

use crate::framework::sign::{keys, SignBuilder};
use crate::framework::{Code, Status};
use crate::snapshot::volumes::Pvc;
use crate::snapshot::{Interner, LabelRequirement, NodeIdx, NodeSelector, PodInfo, Snapshot, Sym};

/// `VolumesSigner`: every volume plugin signs the pod's volumes (a pod without volumes signs
/// as it did before volumes were modelled).
pub fn sign_volumes(pod: &PodInfo, sig: &mut SignBuilder) {
    match &pod.volumes {
        None => sig.put(keys::VOLUMES, [(); 0]),
        Some(v) => sig.put(keys::VOLUMES, &v.list),
    }
}

/// A claim a pod's volume names: `claimName`, or `<pod name>-<volume name>` for a generic
/// ephemeral volume (`ephemeral.VolumeClaimName`).
pub struct ClaimName {
    pub name: String,
    /// The interned name; `None` when no object ever had the name (so no claim has it).
    pub sym: Option<Sym>,
    pub ephemeral: bool,
}

/// The claim of a pod's `Claim` volume.
pub fn claim_name(pod: &PodInfo, claim: Sym, ephemeral: bool, interner: &Interner) -> ClaimName {
    if ephemeral {
        let name = format!("{}-{}", pod.name, interner.resolve(claim));
        let sym = interner.get(&name);
        ClaimName { name, sym, ephemeral }
    } else {
        ClaimName { name: interner.resolve(claim).to_string(), sym: Some(claim), ephemeral }
    }
}

/// The claim named `c` in the pod's namespace (the PVC lister's `Get`).
pub fn lookup<'a>(snap: &'a Snapshot, pod: &PodInfo, c: &ClaimName) -> Option<&'a Pvc> {
    c.sym.and_then(|s| snap.cluster.volumes.pvc(pod.namespace, s))
}

/// The API's NotFound message for a claim (`persistentvolumeclaim "x" not found`).
pub fn claim_not_found(name: &str) -> String {
    format!("persistentvolumeclaim \"{name}\" not found")
}

/// `ephemeral.VolumeIsForPod`: the claim is controlled by the pod.
pub fn ephemeral_owner_error(snap: &Snapshot, pod: &PodInfo, pvc: &Pvc) -> Option<String> {
    let owned = match (&pvc.controller_uid, &pod.volumes) {
        (Some(uid), Some(v)) => *uid == v.pod_uid,
        _ => false,
    };
    if pvc.namespace == pod.namespace && owned {
        return None;
    }
    let r = |s: Sym| snap.interner.resolve(s);
    Some(format!(
        "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
        r(pvc.namespace),
        r(pvc.name),
        r(pod.namespace),
        pod.name
    ))
}

/// A PreFilter rejection no node can resolve.
pub fn unresolvable(reason: impl Into<String>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, reason)
}

/// A label requirement with the column of its key (`None`: no node has the key).
type ResolvedRequirement<'a> = (Option<&'a [Sym]>, &'a LabelRequirement);

/// A PV's `nodeAffinity.required` with its label columns looked up, checked as
/// `volume.CheckNodeAffinity` does: against a node that has the node's labels and no name (so a
/// `metadata.name` field requirement holds only for `NotIn`). Terms are ORed; an invalid term
/// matches nothing.
pub struct ResolvedPvAffinity<'a> {
    terms: Vec<Vec<ResolvedRequirement<'a>>>,
}

impl<'a> ResolvedPvAffinity<'a> {
    pub fn new(snap: &'a Snapshot, sel: &'a NodeSelector) -> Self {
        let empty = snap.wk.empty;
        let terms = sel
            .terms
            .iter()
            .filter(|t| t.valid && t.fields.iter().all(|f| f.in_set == (f.name == empty)))
            .map(|t| t.labels.iter().map(|r| (snap.nodes.label_column(r.key), r)).collect())
            .collect();
        ResolvedPvAffinity { terms }
    }

    #[inline]
    pub fn matches(&self, snap: &Snapshot, node: NodeIdx) -> bool {
        self.terms
            .iter()
            .any(|t| t.iter().all(|(col, r)| r.matches_value(col.map_or(Sym::NONE, |c| c[node.ix()]), &snap.interner)))
    }
}
