//! DynamicResources' registered events and queueing hints, as v1.37.2's `EventsToRegister`
//! (`dynamicresources.go`), and NodeResourcesFit's DeviceClass hint (`fit.go`
//! `isSchedulableAfterDeviceClassEvent`, registered since DRAExtendedResource is GA).
//!
//! DynamicResources registers:
//! - Node `Add | UpdateNodeLabel | UpdateNodeAllocatable`, no hint function (Queue);
//! - ResourceClaim `Add | Update | Delete` with `isSchedulableAfterClaimChange`
//!   ([`claim_change_hint`]); its `preQueueingHint` only narrows which pods are asked and is
//!   behind the alpha SchedulerPreQueueingHints gate (off at v1.37.2), so it is not modelled;
//! - the rejected pod's own `UpdatePodGeneratedResourceClaim` (its
//!   `status.resourceClaimStatuses` changed) with `isSchedulableAfterTargetPodUpdate`
//!   ([`target_pod_update_hint`]);
//! - DeviceClass `Add | Update` and ResourceSlice `Add | Update`, no hint function (Queue).
//!
//! Everything else (assigned pods, node deletion or taint updates, ResourceSlice deletion,
//! storage) is not registered: Skip. The hints read the claims through [`ClaimLister`], the
//! scheduler's claim lister as the hints see it (upstream's `foreachPodResourceClaim` reads the
//! live lister when the hint runs, not the event's time).

use std::sync::atomic::{AtomicBool, Ordering};

use super::{ClusterEvent, DraAction, EventObjects, NodeChange};
use crate::api::resource::{DeviceClass, ResourceClaim};
use crate::ids::PodUid;
use crate::snapshot::dra::{ClaimStore, Claims};
use crate::snapshot::{Interner, PodInfo, Resources, Sym};

use crate::plugins::dynamicresources::controller::{claim_name, ClaimRef};
use crate::plugins::dynamicresources::extended::DEVICE_CLASS_PREFIX;
use crate::plugins::dynamicresources::pod_claims::pod_resource_claims_with;

/// The claims as `foreachPodResourceClaim` reads them in a hint: which exist, their uid, owners
/// and deletion mark (status and spec are not kept). The driver adds each claim where it
/// creates one (`createAny`, the controller's claims from templates and for pod groups, a
/// cluster file's) and removes it where it deletes one.
#[derive(Debug, Default)]
pub struct ClaimLister {
    claims: ClaimStore,
    /// DRAWorkloadResourceClaims: a claim from a template may be owned by the pod's PodGroup.
    accept_group_owner: AtomicBool,
}

impl ClaimLister {
    /// Adds (or replaces) `claim`.
    pub fn insert(&self, claim: &ResourceClaim) {
        let meta = ResourceClaim { metadata: claim.metadata.clone(), ..ResourceClaim::default() };
        let key = (claim.metadata.namespace.clone(), claim.metadata.name.clone());
        self.claims.lock().insert(key, meta);
    }

    /// Removes the claim `namespace/name`.
    pub fn remove(&self, namespace: &str, name: &str) {
        self.claims.lock().remove(&(namespace.to_string(), name.to_string()));
    }

    /// Every claim of `claims` (a run's starting store).
    pub fn fill(&self, claims: &Claims) {
        for c in claims.values() {
            self.insert(c);
        }
    }

    pub fn set_accept_group_owner(&self, on: bool) {
        self.accept_group_owner.store(on, Ordering::Relaxed);
    }

    /// `foreachPodResourceClaim(pod)`: the uids of the pod's claims, or an error (a claim not
    /// created yet, missing, being deleted or not the pod's).
    pub fn pod_claim_uids(&self, pod: &PodInfo) -> Result<Vec<String>, String> {
        let Some(refs) = &pod.claims else { return Ok(Vec::new()) };
        let claims = self.claims.lock();
        let accept = self.accept_group_owner.load(Ordering::Relaxed);
        let resolved = pod_resource_claims_with(&refs.pod, &refs.pod.metadata.namespace, &claims, accept)?;
        Ok(resolved.into_iter().map(|(_, c)| c.metadata.uid.clone()).collect())
    }
}

/// A DeviceClass as the hints read it: its name and `spec.extendedResourceName`, with the
/// interned resource names a pod could request for it (`None`: no pod requests that name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceClassObject {
    pub name: String,
    pub extended_resource_name: Option<String>,
    /// `deviceclass.resource.kubernetes.io/<name>`, when interned.
    pub implicit: Option<Sym>,
    /// `spec.extendedResourceName`, when interned.
    pub explicit: Option<Sym>,
}

impl DeviceClassObject {
    pub fn of(class: &DeviceClass, interner: &Interner) -> Self {
        let ext = class.spec.extended_resource_name.clone();
        DeviceClassObject {
            name: class.metadata.name.clone(),
            implicit: interner.get(&format!("{DEVICE_CLASS_PREFIX}{}", class.metadata.name)),
            explicit: ext.as_deref().and_then(|n| interner.get(n)),
            extended_resource_name: ext,
        }
    }
}

/// DynamicResources' hint for `event` and a pod `pod` (uid `uid`) it rejected: whether the event
/// is registered and its hint function (if any) says Queue. Without the objects or the pod's
/// spec, a registered event queues (as upstream's hint answers Queue on an error); without a
/// lister, the pod's claims count as resolvable.
pub fn hint(
    event: &ClusterEvent,
    objs: Option<&EventObjects>,
    pod: Option<&PodInfo>,
    uid: PodUid,
    lister: Option<&ClaimLister>,
) -> bool {
    use ClusterEvent::*;
    let resolve = |p: &PodInfo| -> Result<Vec<String>, String> {
        match lister {
            Some(l) => l.pod_claim_uids(p),
            None => names_only(p),
        }
    };
    match event {
        NodeAdd { .. } => true,
        NodeUpdate { change, .. } => change.intersects(NodeChange::LABEL.union(NodeChange::ALLOCATABLE)),
        ResourceClaim { .. } => match (objs, pod) {
            (Some(o), Some(p)) if o.old_claim.is_some() || o.new_claim.is_some() => {
                claim_change_hint(o.old_claim.as_deref(), o.new_claim.as_deref(), || resolve(p))
            }
            _ => true,
        },
        UnscheduledPodUpdate { pod: p } if *p == uid => {
            match objs.map(|o| (o.old_pod.as_deref(), o.new_pod.as_deref())) {
                Some((Some(old), Some(new))) => target_pod_update_hint(old, new, |p| resolve(p).is_ok()),
                _ => true,
            }
        }
        DeviceClass { action } | ResourceSlice { action } => matches!(action, DraAction::Add | DraAction::Update),
        UnschedulableTimeout => true,
        NodeDelete { .. }
        | AssignedPodAdd { .. }
        | AssignedPodUpdate { .. }
        | AssignedPodDelete { .. }
        | UnscheduledPodUpdate { .. }
        | Storage { .. } => false,
    }
}

/// Without a lister: the pod's claims resolve when each entry names its claim (PreEnqueue's check).
fn names_only(pod: &PodInfo) -> Result<Vec<String>, String> {
    let Some(refs) = &pod.claims else { return Ok(Vec::new()) };
    for entry in &refs.pod.spec.resource_claims {
        if matches!(claim_name(&refs.pod, entry), ClaimRef::Pending | ClaimRef::Invalid) {
            return Err("a claim is not named yet".into());
        }
    }
    Ok(Vec::new())
}

/// `isSchedulableAfterClaimChange` for a claim `old` → `new` (added: `old` None; deleted: `new`
/// None) and a rejected pod whose claims `pod_claims` resolves (`foreachPodResourceClaim`: their
/// uids, or an error). Deleted: Queue only if it was allocated. Otherwise Skip when the pod's
/// claims do not resolve; Queue when the claim was deallocated (devices freed for anyone); Skip
/// when the pod does not use it; Queue when it was created or its status changed.
pub fn claim_change_hint(
    old: Option<&ResourceClaim>,
    new: Option<&ResourceClaim>,
    pod_claims: impl FnOnce() -> Result<Vec<String>, String>,
) -> bool {
    let Some(new) = new else {
        return old.is_some_and(|o| o.status.allocation.is_some());
    };
    let Ok(uids) = pod_claims() else { return false };
    if old.is_some_and(|o| o.status.allocation.is_some()) && new.status.allocation.is_none() {
        return true;
    }
    if !uids.contains(&new.metadata.uid) {
        return false;
    }
    match old {
        None => true,
        Some(old) => old.status != new.status,
    }
}

/// `isSchedulableAfterTargetPodUpdate`, for the pod's own update registered as
/// `UpdatePodGeneratedResourceClaim` (its `status.resourceClaimStatuses` changed; any other
/// update of the pod is not this event): Queue when the new pod's claims resolve.
pub fn target_pod_update_hint(old: &PodInfo, new: &PodInfo, resolves: impl FnOnce(&PodInfo) -> bool) -> bool {
    let statuses = |p: &PodInfo| p.claims.as_ref().map(|r| r.pod.status.resource_claim_statuses.clone());
    statuses(old) != statuses(new) && resolves(new)
}

/// NodeResourcesFit's `isSchedulableAfterDeviceClassEvent`: an update queues when the class's
/// `extendedResourceName` changed and the pod requests the new one; an add when the pod requests
/// the class's implicit name (`deviceclass.resource.kubernetes.io/<name>`) or its extended one.
pub fn fit_device_class_hint(old: Option<&DeviceClassObject>, new: &DeviceClassObject, requests: &Resources) -> bool {
    let requested = |s: Option<Sym>| s.is_some_and(|s| requests.scalars.iter().any(|&(r, _)| r == s));
    match old {
        Some(old) if old.extended_resource_name == new.extended_resource_name => return false,
        Some(_) => {}
        None if requested(new.implicit) => return true,
        None => {}
    }
    new.extended_resource_name.is_some() && requested(new.explicit)
}

#[cfg(test)]
#[path = "dra_hints_tests.rs"]
mod tests;
