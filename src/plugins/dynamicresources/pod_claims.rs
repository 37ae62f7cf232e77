//! The claims a pod uses (upstream's `foreachPodResourceClaim`, which PreEnqueue and PreFilter
//! run): each `spec.resourceClaims` entry resolved by `resourceclaim.Name`, looked up in the
//! claim cache, checked for deletion and, for a claim made from a template, ownership
//! (`resourceclaim.IsForPod`). The error strings are upstream's; PreEnqueue returns them as an
//! Unschedulable status.

use super::controller::{claim_name, ClaimRef};
use crate::api::objects::Pod;
use crate::api::resource::ResourceClaim;
use crate::snapshot::dra::Claims;

/// The pod's claims in `spec.resourceClaims` order, with the entry's name; entries whose claim
/// the controller chose not to make are left out. `namespace` is the pod's; `store` the claim
/// store's map (`DraObjects::claims`, locked).
pub fn pod_resource_claims<'a>(
    pod: &'a Pod,
    namespace: &str,
    store: &'a Claims,
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
            return Err(format!(
                "ResourceClaim {namespace}/{name} was not created for Pod {namespace}/{} (Pod is not owner)",
                pod.metadata.name
            ));
        }
        claims.push((entry.name.as_str(), claim));
    }
    Ok(claims)
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
