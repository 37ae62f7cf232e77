//! The DRA cluster events, raised where upstream's informers (and the claim assume cache) would
//! see the change: `createAny`/`updateAny` of a ResourceClaim, ResourceSlice, DeviceClass or
//! DeviceTaintRule (a rule changes its slices' device taints: a slice update, as upstream's slice
//! tracker reports it), the resourceclaim controller's claims from templates (pod creation, pod
//! group creation) and its release of a deleted pod's claims (`reservedFor` and, for a claim
//! nobody uses, the allocation), and the scheduler's own PreBind write of `reservedFor` (reported
//! when the pod is bound). The queue reads the objects only when some pod is unschedulable or in
//! flight. Every claim made also enters the hints' [`ClaimLister`](crate::queue::dra_hints::ClaimLister).

use std::sync::Arc;

use crate::api::resource::ResourceClaim;
use crate::api::Object;
use crate::ids::PodUid;
use crate::queue::dra_hints::DeviceClassObject;
use crate::queue::{ClusterEvent, DraAction, EventObjects};

use super::Driver;

impl Driver {
    /// A ResourceClaim `old` → `new` (add: `old` None; delete: `new` None).
    pub(super) fn claim_event(&mut self, action: DraAction, old: Option<ResourceClaim>, new: Option<ResourceClaim>) {
        if let Some(c) = &new {
            self.claim_lister.insert(c);
        }
        let objs = self.queue.wants_event_objects().then(|| {
            Arc::new(EventObjects {
                old_claim: old.map(Arc::new),
                new_claim: new.map(Arc::new),
                ..EventObjects::default()
            })
        });
        let now = self.now();
        self.queue.on_event_with(ClusterEvent::ResourceClaim { action }, objs, now);
    }

    /// The claim `namespace/name` as the store holds it now.
    pub(super) fn stored_claim(&self, namespace: &str, name: &str) -> Option<ResourceClaim> {
        self.snap.cluster.dra.claim(namespace, name)
    }

    /// A DRA object created (`action` Add, `old` None) or replaced (`updateAny`: Update, with the
    /// object as it was) by an op: its event, after the snapshot holds it. `old` is read by the
    /// caller before the snapshot changes ([`Driver::dra_object_before`]).
    pub(super) fn dra_object_event(&mut self, obj: &Object, action: DraAction, old: Option<DraBefore>) {
        match obj {
            Object::ResourceClaim(c) => {
                let old = match old {
                    Some(DraBefore::Claim(c)) => Some(*c),
                    _ => None,
                };
                let new = self.stored_claim(c.namespace(), &c.metadata.name).unwrap_or_else(|| c.clone());
                self.claim_event(action, old, Some(new));
            }
            Object::ResourceSlice(_) => self.plain_event(ClusterEvent::ResourceSlice { action }),
            // The slice tracker reports the slices whose devices' taints changed as updated.
            Object::DeviceTaintRule(_) if !self.snap.cluster.dra.slices.is_empty() => {
                self.plain_event(ClusterEvent::ResourceSlice { action: DraAction::Update })
            }
            Object::DeviceClass(c) => {
                let old = match old {
                    Some(DraBefore::Class(c)) => Some(c),
                    _ => None,
                };
                let new = Arc::new(DeviceClassObject::of(c, &self.snap.interner));
                let objs = self.queue.wants_event_objects().then(|| {
                    Arc::new(EventObjects { old_class: old, new_class: Some(new), ..EventObjects::default() })
                });
                let now = self.now();
                self.queue.on_event_with(ClusterEvent::DeviceClass { action }, objs, now);
            }
            _ => {}
        }
    }

    /// What [`Driver::dra_object_event`] needs of the object `obj` replaces, read before it does.
    pub(super) fn dra_object_before(&self, obj: &Object) -> Option<DraBefore> {
        match obj {
            Object::ResourceClaim(c) => {
                self.stored_claim(c.namespace(), &c.metadata.name).map(|c| DraBefore::Claim(Box::new(c)))
            }
            Object::DeviceClass(c) => self
                .snap
                .cluster
                .dra
                .classes
                .get(&c.metadata.name)
                .map(|old| DraBefore::Class(Arc::new(DeviceClassObject::of(old, &self.snap.interner)))),
            _ => None,
        }
    }

    fn plain_event(&mut self, event: ClusterEvent) {
        let now = self.now();
        self.queue.on_event(event, now);
    }

    /// The controller made the claims `names` in `namespace` (from templates): their add events.
    pub(super) fn claims_made(&mut self, namespace: &str, names: &[String]) {
        for name in names {
            if let Some(c) = self.stored_claim(namespace, name) {
                self.claim_event(DraAction::Add, None, Some(c));
            }
        }
    }

    /// The controller released claims of a deleted pod: `changed` holds each claim as it was
    /// before; the update events carry it and the claim as it is now.
    pub(super) fn claims_released(&mut self, changed: Vec<ResourceClaim>) {
        for old in changed {
            let new = self.stored_claim(&old.metadata.namespace, &old.metadata.name);
            self.claim_event(DraAction::Update, Some(old), new);
        }
    }

    /// The scheduler's PreBind wrote `reservedFor` (and the allocation) of the bound pod `uid`'s
    /// claims: an update each, from the claim without the pod's reservation (as it was before).
    pub(super) fn claims_bound(&mut self, uid: PodUid) {
        let Some(refs) = self.rec(uid).info.claims.clone() else { return };
        if !self.queue.wants_event_objects() {
            return;
        }
        let pod = &refs.pod;
        let namespace = pod.metadata.namespace.clone();
        let mut claims = Vec::new();
        {
            let store = self.snap.cluster.dra.claims.lock();
            let accept = self.snap.cluster.dra.workload_claims;
            if let Ok(found) =
                crate::plugins::dynamicresources::pod_claims::pod_resource_claims_with(pod, &namespace, &store, accept)
            {
                for (_, c) in found {
                    if !claims.iter().any(|k: &ResourceClaim| k.metadata.uid == c.metadata.uid) {
                        claims.push(c.clone());
                    }
                }
            }
        }
        for new in claims {
            let mut old = new.clone();
            old.status.reserved_for.retain(|r| r.uid != pod.metadata.uid);
            if old.status == new.status {
                continue;
            }
            self.claim_event(DraAction::Update, Some(old), Some(new));
        }
    }
}

/// A replaced DRA object as its event's `old` needs it.
pub(super) enum DraBefore {
    Claim(Box<ResourceClaim>),
    Class(Arc<DeviceClassObject>),
}
