//! The claims a pod uses (upstream's `foreachPodResourceClaim`, which PreEnqueue and PreFilter
//! run): each `spec.resourceClaims` entry resolved by `resourceclaim.Name`, looked up in the
//! claim cache, checked for deletion and, for a claim made from a template, ownership
//! (`resourceclaim.IsForPod`). The error strings are upstream's; PreEnqueue returns them as an
//! Unschedulable status.
//!
//! With DRAWorkloadResourceClaims on, a pod in a PodGroup may share the group's claims: an entry
//! whose name, claim name and template name equal one of the group's `spec.resourceClaims`
//! resolves (for a template, through the pod's status, which the controller fills with the
//! group's claim) to a claim owned by the group, and is reserved for the group, not the pod
//! ([`bind_to`], [`pod_group`], upstream's `resourceclaim.BindTo` and `getPodGroupSnapshot`).

use super::controller::{claim_name, ClaimRef};
use crate::api::objects::Pod;
use crate::api::resource::{PodResourceClaim, ResourceClaim, ResourceClaimConsumerReference};
use crate::snapshot::dra::{Claims, DraObjects, GroupClaims};

/// `schedulingapi.GroupName`: a PodGroup consumer's `apiGroup`.
pub const SCHEDULING_GROUP: &str = "scheduling.k8s.io";

/// A pod's PodGroup as DynamicResources reads it: its name and claims.
pub type PodGroupRef<'a> = (&'a str, &'a GroupClaims);

/// `getPodGroupSnapshot`: `Ok(None)` with DRAWorkloadResourceClaims off or a pod without
/// `spec.schedulingGroup.podGroupName`; the error of the snapshot's PodGroup lister when the group
/// does not exist.
pub fn pod_group<'a>(pod: &'a Pod, namespace: &str, dra: &'a DraObjects) -> Result<Option<PodGroupRef<'a>>, String> {
    if !dra.workload_claims {
        return Ok(None);
    }
    let Some(name) = pod.spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.as_deref()) else {
        return Ok(None);
    };
    match dra.pod_groups.get(&(namespace.to_string(), name.to_string())) {
        Some(group) => Ok(Some((name, group))),
        None => Err(format!("pod group state not found for pod group podgroup/{namespace}/{name}")),
    }
}

/// `resourceclaim.BindTo`: the consumer a pod's claim entry is reserved for: the pod's PodGroup
/// when the group has an entry with the same name, claim name and template name, else the pod.
pub fn bind_to(
    pod: &Pod,
    namespace: &str,
    group: Option<PodGroupRef<'_>>,
    entry: &PodResourceClaim,
) -> Result<ResourceClaimConsumerReference, String> {
    if entry.resource_claim_name.is_none() && entry.resource_claim_template_name.is_none() {
        return Err(format!(
            "Pod {namespace}/{} claim {}: none of the supported fields are set",
            pod.metadata.name, entry.name
        ));
    }
    if let Some((group_name, group)) = group {
        for c in &group.claims {
            if c.resource_claim_name.is_none() && c.resource_claim_template_name.is_none() {
                return Err(format!(
                    "PodGroup {namespace}/{group_name} claim {}: none of the supported fields are set",
                    c.name
                ));
            }
            if c.name == entry.name
                && c.resource_claim_name == entry.resource_claim_name
                && c.resource_claim_template_name == entry.resource_claim_template_name
            {
                return Ok(ResourceClaimConsumerReference {
                    api_group: SCHEDULING_GROUP.into(),
                    resource: "podgroups".into(),
                    name: group_name.to_string(),
                    uid: group.uid.clone(),
                });
            }
        }
    }
    Ok(ResourceClaimConsumerReference {
        api_group: String::new(),
        resource: "pods".into(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
    })
}

/// `resourceclaim.IsReservedForPod`: the pod's uid is among the claim's consumers, or (with
/// `accept_group`, DRAWorkloadResourceClaims on) the pod's PodGroup is, by name.
pub fn is_reserved_for_pod(pod: &Pod, claim: &ResourceClaim, accept_group: bool) -> bool {
    let group = pod.spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.as_deref());
    claim.status.reserved_for.iter().any(|r| {
        r.uid == pod.metadata.uid
            || (accept_group
                && r.api_group == SCHEDULING_GROUP
                && r.resource == "podgroups"
                && group.is_some_and(|g| g == r.name))
    })
}

/// The pod's claims in `spec.resourceClaims` order, with the entry's name; entries whose claim
/// the controller chose not to make are left out. `namespace` is the pod's; `store` the claim
/// store's map (`DraObjects::claims`, locked).
pub fn pod_resource_claims<'a>(
    pod: &'a Pod,
    namespace: &str,
    store: &'a Claims,
) -> Result<Vec<(&'a str, &'a ResourceClaim)>, String> {
    pod_resource_claims_with(pod, namespace, store, false)
}

/// [`pod_resource_claims`] with `accept_group_owner` (DRAWorkloadResourceClaims on): a claim
/// from a template may be owned by the pod's PodGroup (`IsForPod`'s `acceptPodGroupOwner`).
pub fn pod_resource_claims_with<'a>(
    pod: &'a Pod,
    namespace: &str,
    store: &'a Claims,
    accept_group_owner: bool,
) -> Result<Vec<(&'a str, &'a ResourceClaim)>, String> {
    let mut claims = Vec::with_capacity(pod.spec.resource_claims.len());
    for entry in &pod.spec.resource_claims {
        let name = match claim_name(pod, entry) {
            ClaimRef::Named(name) => name,
            ClaimRef::NotNeeded => continue,
            ClaimRef::Pending => {
                return Err(format!("pod \"{namespace}/{}\": ResourceClaim not created yet", pod.metadata.name))
            }
            ClaimRef::Invalid => {
                return Err(format!(
                    "pod \"{namespace}/{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                    pod.metadata.name, entry.name
                ))
            }
        };
        let Some(claim) = store.get(&(namespace.to_string(), name.to_string())) else {
            return Err(format!("could not find ResourceClaim \"{namespace}/{name}\""));
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("resourceclaim {name:?} is being deleted"));
        }
        let must_check_owner = entry.resource_claim_name.is_none();
        if must_check_owner && !is_controlled_by(claim, pod) {
            let group = pod.spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.as_deref());
            match group.filter(|_| accept_group_owner) {
                Some(group) if is_for_group_by_pod(claim, group) => {}
                Some(group) => {
                    return Err(format!(
                        "ResourceClaim {namespace}/{name} was not created for Pod {namespace}/{} (neither Pod nor PodGroup {group} is the owner)",
                        pod.metadata.name
                    ))
                }
                None => {
                    return Err(format!(
                        "ResourceClaim {namespace}/{name} was not created for Pod {namespace}/{} (Pod is not owner)",
                        pod.metadata.name
                    ))
                }
            }
        }
        claims.push((entry.name.as_str(), claim));
    }
    Ok(claims)
}

/// `isForPodGroupByPod`: the claim's controller is the PodGroup `group` (by kind, name and the
/// API group of its `apiVersion`; a pod does not know its group's uid).
fn is_for_group_by_pod(claim: &ResourceClaim, group: &str) -> bool {
    claim.metadata.owner_references.iter().find(|r| r.controller == Some(true)).is_some_and(|r| {
        r.name == group && r.kind == "PodGroup" && r.api_version.starts_with(&format!("{SCHEDULING_GROUP}/"))
    })
}

/// `metav1.IsControlledBy`: the claim's controller owner reference has the pod's uid.
fn is_controlled_by(claim: &ResourceClaim, pod: &Pod) -> bool {
    claim.metadata.owner_references.iter().any(|r| r.controller == Some(true) && r.uid == pod.metadata.uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{parse_objects, Object};
    use crate::snapshot::dra::DraObjects;

    #[test]
    fn claims_resolve_as_upstreams_foreach_pod_resource_claim() {
        let objects = parse_objects(
            r#"kind: Pod
metadata: {name: p, namespace: test, uid: u1}
spec:
  containers: [{name: c}]
  resourceClaims:
  - {name: shared, resourceClaimName: test-claim-0}
  - {name: resource, resourceClaimTemplateName: t}
status:
  resourceClaimStatuses: [{name: resource, resourceClaimName: p-resource-abcde}]
---
kind: ResourceClaim
metadata: {name: test-claim-0, namespace: test}
---
kind: ResourceClaim
metadata:
  name: p-resource-abcde
  namespace: test
  ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u1, controller: true}]
"#,
            "m.yaml",
        )
        .unwrap();
        let Object::Pod(pod) = &objects[0] else { panic!() };
        let mut dra = DraObjects::default();
        for o in &objects[1..] {
            let Object::ResourceClaim(c) = o else { panic!() };
            dra.add_claim(c);
        }
        let claims = dra.claims.get_mut().clone();
        let got = pod_resource_claims(pod, "test", &claims).unwrap();
        let names: Vec<_> = got.iter().map(|(entry, c)| (*entry, c.metadata.name.as_str())).collect();
        assert_eq!(names, [("shared", "test-claim-0"), ("resource", "p-resource-abcde")]);

        let mut other = pod.clone();
        other.metadata.uid = "u2".into();
        assert_eq!(
            pod_resource_claims(&other, "test", &claims).unwrap_err(),
            "ResourceClaim test/p-resource-abcde was not created for Pod test/p (Pod is not owner)"
        );
        let mut pending = pod.clone();
        pending.status.resource_claim_statuses.clear();
        assert_eq!(
            pod_resource_claims(&pending, "test", &claims).unwrap_err(),
            "pod \"test/p\": ResourceClaim not created yet"
        );
        let mut not_needed = pod.clone();
        not_needed.status.resource_claim_statuses[0].resource_claim_name = None;
        assert_eq!(pod_resource_claims(&not_needed, "test", &claims).unwrap().len(), 1);
        let mut deleting = claims.clone();
        deleting.values_mut().for_each(|c| c.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into()));
        assert_eq!(
            pod_resource_claims(pod, "test", &deleting).unwrap_err(),
            "resourceclaim \"test-claim-0\" is being deleted"
        );
        assert_eq!(
            pod_resource_claims(pod, "other", &claims).unwrap_err(),
            "could not find ResourceClaim \"other/test-claim-0\""
        );
    }
}
