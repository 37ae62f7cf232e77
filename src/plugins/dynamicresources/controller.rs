//! The resourceclaim controller's part that scheduler_perf runs (v1.37.2
//! `pkg/controller/resourceclaim`): for each `resourceClaimTemplateName` entry of a pod, a claim
//! made from the template, owned by the pod, recorded in the pod's `status.resourceClaimStatuses`;
//! at pod deletion, the pod removed from its claims' `reservedFor` and a claim nobody uses any more
//! deallocated ([`release_pod_claims`]; generated claims are not deleted, as the oracle's
//! controller leaves them: a deallocated claim holds no device); and `resourceclaim.Name`, the
//! claim a pod's entry refers to. Every write goes to the one claim store (`DraObjects::claims`).
//!
//! Names are deterministic: the API server appends 5 random characters to a `generateName`; here
//! the 5 characters come from a digest of (resource, namespace, prefix, attempt), the oracle's rule
//! (`generatedName` in oracle/dra.go), so schedperf and the oracle name a pod's claims alike.

use std::collections::{BTreeMap, HashSet};

use super::allocator::{allocate_with, DeviceId, DeviceSelectors, NodeView, Outcome};
use super::allocator_capacity::SharedState;
use crate::snapshot::dra::{Claims, DraObjects};

use crate::api::objects::{ObjectMeta, OwnerReference, Pod};
use crate::api::resource::{
    PodResourceClaim, ResourceClaim, ResourceClaimStatus, ResourceClaimTemplate, ResourceSlice,
};

/// `resourceapi.PodResourceClaimAnnotation`: the pod claim a generated claim was made for.
pub const POD_RESOURCE_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// The controller's `maxBaseLen`: room for the 5 generated characters in a 63-character name.
pub const MAX_BASE_NAME_LEN: usize = 57;

/// `utilrand.String`'s alphabet (the API server's `generateName` suffixes).
pub const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The number of characters the API server appends to a `generateName`.
pub const GENERATED_SUFFIX_LEN: usize = 5;

/// The controller's `generateName` for pod `pod_name`'s claim entry `claim_name`:
/// `<pod>-<claim>-`, or when longer than [`MAX_BASE_NAME_LEN`] both parts truncated in
/// proportion to their lengths and joined by `-` (upstream's truncated form has no trailing `-`).
pub fn claim_generate_name(pod_name: &str, claim_name: &str) -> String {
    let full = format!("{pod_name}-{claim_name}-");
    if full.len() <= MAX_BASE_NAME_LEN {
        return full;
    }
    let pod_part = pod_name.len() * MAX_BASE_NAME_LEN / full.len();
    let claim_part = claim_name.len() * MAX_BASE_NAME_LEN / full.len();
    format!("{}-{}", &pod_name[..pod_part], &claim_name[..claim_part])
}

/// The name the API server gives an object of `resource` (`resourceclaims`) in `namespace`
/// created with `generate_name`: the prefix and [`GENERATED_SUFFIX_LEN`] characters of
/// [`GENERATE_NAME_ALPHABET`] drawn from v = the first 8 bytes (big-endian) of
/// sha256(`<resource>/<namespace>/<prefix>/<attempt>`): the character `v mod 27`, then `v /= 27`.
/// `attempt` is 0 unless the name is taken (then 1, 2, ...), as the oracle names objects.
pub fn generated_name(resource: &str, namespace: &str, generate_name: &str, attempt: u32) -> String {
    use sha2::{Digest, Sha256};
    let sum = Sha256::digest(format!("{resource}/{namespace}/{generate_name}/{attempt}").as_bytes());
    let mut v = u64::from_be_bytes(sum[..8].try_into().expect("a sha256 digest has 32 bytes"));
    let base = GENERATE_NAME_ALPHABET.len() as u64;
    let mut name = String::with_capacity(generate_name.len() + GENERATED_SUFFIX_LEN);
    name.push_str(generate_name);
    for _ in 0..GENERATED_SUFFIX_LEN {
        name.push(char::from(GENERATE_NAME_ALPHABET[(v % base) as usize]));
        v /= base;
    }
    name
}

/// The claim the controller makes from `template` for `pod`'s entry `pod_claim`, named with
/// in the pod's namespace, owned by the pod, with the template's labels and
/// annotations plus [`POD_RESOURCE_CLAIM_ANNOTATION`], and the template's claim spec. Named by
/// [`generated_name`] with `attempt` (0 unless that name is taken).
pub fn claim_from_template(
    pod: &Pod,
    namespace: &str,
    pod_claim: &PodResourceClaim,
    template: &ResourceClaimTemplate,
    attempt: u32,
) -> ResourceClaim {
    let mut annotations: BTreeMap<String, String> = template.spec.metadata.annotations.clone();
    annotations.insert(POD_RESOURCE_CLAIM_ANNOTATION.to_string(), pod_claim.name.clone());
    let generate_name = claim_generate_name(&pod.metadata.name, &pod_claim.name);
    ResourceClaim {
        metadata: ObjectMeta {
            name: generated_name("resourceclaims", namespace, &generate_name, attempt),
            generate_name,
            namespace: namespace.to_string(),
            labels: template.spec.metadata.labels.clone(),
            annotations,
            owner_references: vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
                controller: Some(true),
            }],
            ..ObjectMeta::default()
        },
        spec: template.spec.spec.clone(),
        status: ResourceClaimStatus::default(),
    }
}

/// The controller's work for a new pod (`syncPod`): for each `resourceClaimTemplateName` entry
/// without a recorded claim, the claim made from the template is added to `dra` (named with the
/// first free attempt) and recorded in the pod's `status.resourceClaimStatuses`. An entry whose
/// template does not exist is left unrecorded (the controller retries; the pod waits at
/// PreEnqueue). With DRAWorkloadResourceClaims on, an entry matching one of its PodGroup's
/// (`pod_claims::bind_to`) gets the group's claim recorded instead (`handleClaim`'s
/// `findPodGroupResourceClaim`), or stays unrecorded until the group's claim exists. Returns how
/// many claims were made.
pub fn create_pod_claims(pod: &mut Pod, namespace: &str, dra: &mut DraObjects) -> usize {
    create_pod_claims_named(pod, namespace, dra).len()
}

/// [`create_pod_claims`], returning the names of the claims made (their add events).
pub fn create_pod_claims_named(pod: &mut Pod, namespace: &str, dra: &mut DraObjects) -> Vec<String> {
    let mut made = Vec::new();
    for entry in pod.spec.resource_claims.clone() {
        let Some(template_name) = entry.resource_claim_template_name.as_deref() else { continue };
        if pod.status.resource_claim_statuses.iter().any(|s| s.name == entry.name) {
            continue;
        }
        // The controller's getPodGroup: a group it does not know yet is no group.
        let group = super::pod_claims::pod_group(pod, namespace, dra).ok().flatten();
        let group_claim = match super::pod_claims::bind_to(pod, namespace, group, &entry) {
            Ok(to) if to.resource == "podgroups" => Some(group.and_then(|(_, g)| g.statuses.get(&entry.name).cloned())),
            Ok(_) => None,
            Err(_) => continue,
        };
        let claim_name = match group_claim {
            Some(None) => continue,
            Some(Some(name)) => name,
            None => {
                let Some(template) = dra.template(namespace, template_name) else { continue };
                let mut attempt = 0;
                let claim = loop {
                    let claim = claim_from_template(pod, namespace, &entry, template, attempt);
                    if !dra.claims.lock().contains_key(&(namespace.to_string(), claim.metadata.name.clone())) {
                        break claim;
                    }
                    attempt += 1;
                };
                dra.add_claim(&claim);
                made.push(claim.metadata.name.clone());
                claim.metadata.name
            }
        };
        pod.status.resource_claim_statuses.push(crate::api::resource::PodResourceClaimStatus {
            name: entry.name.clone(),
            resource_claim_name: Some(claim_name),
        });
    }
    made
}

/// The API version of PodGroups the controller writes in its owner references.
pub const POD_GROUP_OWNER_API_VERSION: &str = "scheduling.k8s.io/v1beta1";

/// The controller's work for a PodGroup (`syncPodGroup`, DRAWorkloadResourceClaims on): the group
/// is recorded in `dra.pod_groups` (`uid`, its `spec.resourceClaims`), and each template entry
/// without a claim gets one made from the template (`handlePodGroupClaim`): generateName
/// `<group>-<claim>-` (truncated as a pod's), owned by the group, the template's labels and
/// annotations plus [`POD_RESOURCE_CLAIM_ANNOTATION`], recorded in the group's statuses. An entry
/// whose template does not exist is left without a claim (the controller retries; the pods wait).
/// Returns how many claims were made.
pub fn create_pod_group_claims(
    group: &crate::api::objects::PodGroup,
    namespace: &str,
    uid: &str,
    dra: &mut DraObjects,
) -> usize {
    let key = (namespace.to_string(), group.metadata.name.clone());
    let mut statuses = dra.pod_groups.get(&key).map(|g| g.statuses.clone()).unwrap_or_default();
    let mut made = 0;
    for entry in &group.spec.resource_claims {
        let Some(template_name) = entry.resource_claim_template_name.as_deref() else { continue };
        if statuses.contains_key(&entry.name) {
            continue;
        }
        let Some(template) = dra.template(namespace, template_name) else { continue };
        let mut annotations: BTreeMap<String, String> = template.spec.metadata.annotations.clone();
        annotations.insert(POD_RESOURCE_CLAIM_ANNOTATION.to_string(), entry.name.clone());
        let generate_name = claim_generate_name(&group.metadata.name, &entry.name);
        let mut attempt = 0;
        let name = loop {
            let name = generated_name("resourceclaims", namespace, &generate_name, attempt);
            if !dra.claims.lock().contains_key(&(namespace.to_string(), name.clone())) {
                break name;
            }
            attempt += 1;
        };
        let claim = ResourceClaim {
            metadata: ObjectMeta {
                name: name.clone(),
                generate_name,
                namespace: namespace.to_string(),
                labels: template.spec.metadata.labels.clone(),
                annotations,
                owner_references: vec![OwnerReference {
                    api_version: POD_GROUP_OWNER_API_VERSION.into(),
                    kind: "PodGroup".into(),
                    name: group.metadata.name.clone(),
                    uid: uid.to_string(),
                    controller: Some(true),
                }],
                ..ObjectMeta::default()
            },
            spec: template.spec.spec.clone(),
            status: ResourceClaimStatus::default(),
        };
        dra.add_claim(&claim);
        statuses.insert(entry.name.clone(), name);
        made += 1;
    }
    dra.pod_groups.insert(
        key,
        crate::snapshot::dra::GroupClaims {
            uid: uid.to_string(),
            claims: group.spec.resource_claims.clone(),
            statuses,
        },
    );
    made
}

/// What a pod's claim entry refers to (`resourceclaim.Name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimRef<'a> {
    /// The claim of this name in the pod's namespace.
    Named(&'a str),
    /// A template entry whose claim the controller decided not to make: nothing to allocate.
    NotNeeded,
    /// A template entry without a recorded claim yet: the pod waits (PreEnqueue).
    Pending,
    /// Neither source set.
    Invalid,
}

/// `resourceclaim.Name` for `pod`'s entry `pod_claim`.
pub fn claim_name<'a>(pod: &'a Pod, pod_claim: &'a PodResourceClaim) -> ClaimRef<'a> {
    if let Some(name) = pod_claim.resource_claim_name.as_deref() {
        return ClaimRef::Named(name);
    }
    if pod_claim.resource_claim_template_name.is_none() {
        return ClaimRef::Invalid;
    }
    match pod.status.resource_claim_statuses.iter().find(|s| s.name == pod_claim.name) {
        Some(status) => status.resource_claim_name.as_deref().map_or(ClaimRef::NotNeeded, ClaimRef::Named),
        None => ClaimRef::Pending,
    }
}

/// The devices every allocated claim of the store holds (`allocatedDevices` of upstream's callers).
pub fn allocated_devices(claims: &Claims) -> HashSet<DeviceId> {
    let mut devices = HashSet::new();
    for claim in claims.values() {
        if let Some(allocation) = &claim.status.allocation {
            // A share of a device allowing multiple allocations leaves the device free.
            for r in allocation.devices.results.iter().filter(|r| r.share_id.is_none()) {
                devices.insert(DeviceId::new(&r.driver, &r.pool, &r.device));
            }
        }
    }
    devices
}

/// scheduler_perf's `allocResourceClaims` op: every unallocated claim of `namespace`, in name
/// order, gets an allocation from the structured allocator on the first node that fits, written to
/// its status (as UpdateStatus). Upstream tries the nodes in a fresh unseeded random order per
/// claim; here, as the oracle does, claim `i` tries `nodes` (sorted by name by the caller) starting
/// at `i mod nodes.len()`: deterministic, and spread as the uniform draw is. Returns how many claims
/// were allocated; `Err` when one fits nowhere or the allocator fails (upstream's test fails).
pub fn alloc_resource_claims(
    dra: &mut DraObjects,
    namespace: &str,
    nodes: &[NodeView<'_>],
    selectors: &mut dyn DeviceSelectors,
) -> Result<usize, String> {
    let claims = dra.claims.get_mut();
    let names: Vec<String> = claims.keys().filter(|(ns, _)| ns == namespace).map(|(_, name)| name.clone()).collect();
    let mut allocated = allocated_devices(claims);
    let mut shared = SharedState::of(claims.values().filter_map(|c| c.status.allocation.as_ref()));
    let slices: Vec<ResourceSlice> = dra.slices.values().cloned().collect();
    let slices: Vec<&ResourceSlice> = slices.iter().collect();
    let mut done = 0;
    'claims: for (i, name) in names.iter().enumerate() {
        let key = (namespace.to_string(), name.clone());
        let claim = dra.claims.get_mut()[&key].clone();
        if claim.status.allocation.is_some() {
            continue;
        }
        for k in 0..nodes.len() {
            let node = &nodes[(i + k) % nodes.len()];
            match allocate_with(&[&claim], node, &slices, &dra.classes, &allocated, &shared, dra.features, selectors)? {
                Outcome::Unfit => {}
                Outcome::Allocated(mut results) => {
                    let allocation = results.remove(0);
                    for r in allocation.devices.results.iter().filter(|r| r.share_id.is_none()) {
                        allocated.insert(DeviceId::new(&r.driver, &r.pool, &r.device));
                    }
                    shared.add(&allocation);
                    if let Some(c) = dra.claims.get_mut().get_mut(&key) {
                        c.status.allocation = Some(allocation);
                    }
                    done += 1;
                    continue 'claims;
                }
            }
        }
        return Err(format!("Could not allocate claim {i} out of {}", names.len()));
    }
    Ok(done)
}

/// The resourceclaim controller at a pod's deletion (`syncClaim` for each claim the pod
/// references, as the oracle's controller does it): the pod (by uid) leaves the claim's
/// `reservedFor`; when that leaves it reserved for nobody and the scheduler allocated it (it has
/// `cycle::CLAIM_FINALIZER`), the allocation and the finalizer go (its devices are free again).
/// A claim that was reserved for nobody already, or allocated by `allocResourceClaims` (no
/// finalizer), keeps its allocation, as upstream's. Claims are resolved as `resourceclaim.Name`
/// does (a template entry through the pod's `status.resourceClaimStatuses`); a missing claim is
/// skipped. Returns the keys of the claims that changed (their update events).
pub fn release_pod_claims(pod: &Pod, namespace: &str, claims: &mut Claims) -> Vec<(String, String)> {
    let mut changed = Vec::new();
    for entry in &pod.spec.resource_claims {
        let ClaimRef::Named(name) = claim_name(pod, entry) else { continue };
        let key = (namespace.to_string(), name.to_string());
        let Some(claim) = claims.get_mut(&key) else { continue };
        let before = claim.status.reserved_for.len();
        claim.status.reserved_for.retain(|r| r.uid != pod.metadata.uid);
        if claim.status.reserved_for.len() == before {
            continue;
        }
        let finalizer = claim.metadata.finalizers.iter().position(|f| f == super::cycle::CLAIM_FINALIZER);
        if let (true, Some(at)) = (claim.status.reserved_for.is_empty(), finalizer) {
            claim.status.allocation = None;
            claim.metadata.finalizers.remove(at);
        }
        if !changed.contains(&key) {
            changed.push(key);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resource::PodResourceClaimStatus;
    use crate::plugins::dynamicresources::selectors::CelSelectors;

    /// A pod's template entries get a claim each, recorded in its status; an entry already
    /// recorded, a named claim and a missing template are left alone; a taken name moves on to the
    /// next attempt.
    #[test]
    fn create_pod_claims_makes_and_records_each_template_claim() {
        use crate::api::{parse_objects, Object};
        let objects = parse_objects(
            "kind: Pod\nmetadata: {name: p, uid: u1}\nspec:\n  containers: [{name: c}]\n  resourceClaims:\n  - {name: a, resourceClaimTemplateName: t}\n  - {name: b, resourceClaimName: shared}\n  - {name: c, resourceClaimTemplateName: missing}\n---\nkind: ResourceClaimTemplate\nmetadata: {name: t, namespace: test}\n",
            "m.yaml",
        )
        .unwrap();
        let (Object::Pod(pod), Object::ResourceClaimTemplate(t)) = (&objects[0], &objects[1]) else { panic!() };
        let mut dra = DraObjects::default();
        dra.add_template(t);
        // The first attempt's name is taken by another claim.
        let first = generated_name("resourceclaims", "test", "p-a-", 0);
        let mut other = claim_from_template(pod, "test", &pod.spec.resource_claims[0], t, 0);
        other.metadata.owner_references.clear();
        dra.add_claim(&other);
        let mut pod = pod.clone();
        assert_eq!(create_pod_claims(&mut pod, "test", &mut dra), 1);
        let second = generated_name("resourceclaims", "test", "p-a-", 1);
        assert_ne!(first, second);
        assert_eq!(
            pod.status.resource_claim_statuses,
            [PodResourceClaimStatus { name: "a".into(), resource_claim_name: Some(second.clone()) }]
        );
        let made = dra.claim("test", &second).unwrap();
        assert_eq!(made.metadata.owner_references[0].uid, "u1");
        // Again: nothing more to make.
        assert_eq!(create_pod_claims(&mut pod, "test", &mut dra), 0);
        assert_eq!(dra.claims.lock().len(), 2);
    }

    /// DRAWorkloadResourceClaims: the controller makes ONE claim per PodGroup template entry
    /// (owned by the group, named `<group>-<claim>-xxxxx`, recorded in the group's statuses), and a
    /// member's matching template entry records that claim instead of getting its own; a pod not
    /// in the group, or whose entry differs, gets its own; a group whose template is missing has
    /// no claim and its members' entries stay unrecorded (the pods wait).
    #[test]
    fn one_claim_per_pod_group() {
        use crate::api::{parse_objects, Object};
        let objects = parse_objects(
            "kind: ResourceClaimTemplate\nmetadata: {name: t, namespace: test}\nspec: {metadata: {labels: {a: b}}}\n---\nkind: PodGroup\nmetadata: {name: test-dra-0}\nspec:\n  schedulingPolicy: {basic: {}}\n  resourceClaims: [{name: resource, resourceClaimTemplateName: t}]\n---\nkind: PodGroup\nmetadata: {name: test-dra-1}\nspec:\n  schedulingPolicy: {basic: {}}\n  resourceClaims: [{name: resource, resourceClaimTemplateName: missing}]\n",
            "m.yaml",
        )
        .unwrap();
        let (Object::ResourceClaimTemplate(t), Object::PodGroup(g0), Object::PodGroup(g1)) =
            (&objects[0], &objects[1], &objects[2])
        else {
            panic!()
        };
        let mut dra = DraObjects { workload_claims: true, ..DraObjects::default() };
        dra.add_template(t);
        assert_eq!(create_pod_group_claims(g0, "test", "g0-uid", &mut dra), 1);
        assert_eq!(create_pod_group_claims(g1, "test", "g1-uid", &mut dra), 0);
        // Again: already made.
        assert_eq!(create_pod_group_claims(g0, "test", "g0-uid", &mut dra), 0);
        let group_claim = dra.pod_groups[&("test".to_string(), "test-dra-0".to_string())].statuses["resource"].clone();
        assert_eq!(group_claim, generated_name("resourceclaims", "test", "test-dra-0-resource-", 0));
        let made = dra.claim("test", &group_claim).unwrap();
        let owner = &made.metadata.owner_references[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("scheduling.k8s.io/v1beta1", "PodGroup", "test-dra-0", "g0-uid", Some(true))
        );
        assert_eq!(made.metadata.annotations[POD_RESOURCE_CLAIM_ANNOTATION], "resource");
        assert_eq!(made.metadata.labels["a"], "b");
        assert!(dra.pod_groups[&("test".to_string(), "test-dra-1".to_string())].statuses.is_empty());

        let pod = |name: &str, group: Option<&str>, entry: &str| {
            let mut text = format!(
                "kind: Pod\nmetadata: {{name: {name}, uid: {name}}}\nspec:\n  containers: [{{name: c}}]\n  resourceClaims: [{entry}]\n"
            );
            if let Some(g) = group {
                text.push_str(&format!("  schedulingGroup: {{podGroupName: {g}}}\n"));
            }
            let Object::Pod(p) = parse_objects(&text, "p.yaml").unwrap().remove(0) else { panic!() };
            p
        };
        const ENTRY: &str = "{name: resource, resourceClaimTemplateName: t}";
        // (case, pod, group, entry) -> (claims made, recorded claim: None = unrecorded, Some("") = its own).
        type Case = (&'static str, &'static str, Option<&'static str>, &'static str, (usize, Option<&'static str>));
        let cases: [Case; 5] = [
            ("member", "a", Some("test-dra-0"), ENTRY, (0, Some("group"))),
            ("another member", "b", Some("test-dra-0"), ENTRY, (0, Some("group"))),
            ("not in a group", "c", None, ENTRY, (1, Some(""))),
            (
                "entry named otherwise",
                "d",
                Some("test-dra-0"),
                "{name: other, resourceClaimTemplateName: t}",
                (1, Some("")),
            ),
            (
                "group without its claim",
                "e",
                Some("test-dra-1"),
                "{name: resource, resourceClaimTemplateName: missing}",
                (0, None),
            ),
        ];
        for (name, pod_name, group, entry, (want_made, want_claim)) in cases {
            let mut p = pod(pod_name, group, entry);
            let before = dra.claims.lock().len();
            assert_eq!(create_pod_claims(&mut p, "test", &mut dra), want_made, "{name}");
            assert_eq!(dra.claims.lock().len(), before + want_made, "{name}");
            let recorded = p.status.resource_claim_statuses.first().and_then(|s| s.resource_claim_name.clone());
            match want_claim {
                None => assert_eq!(recorded, None, "{name}"),
                Some("group") => assert_eq!(recorded.as_deref(), Some(group_claim.as_str()), "{name}"),
                Some(_) => {
                    let own = dra.claim("test", recorded.as_deref().unwrap()).unwrap();
                    assert_eq!(own.metadata.owner_references[0].uid, pod_name, "{name}: owned by the pod");
                }
            }
        }
        // Gate off: a member gets its own claim.
        dra.workload_claims = false;
        let mut p = pod("f", Some("test-dra-0"), ENTRY);
        assert_eq!(create_pod_claims(&mut p, "test", &mut dra), 1);
    }

    /// The controller at pod deletion (`syncClaim`'s reservedFor clean-up, as the oracle runs it):
    /// (case, reservedFor uids, allocated, scheduler's finalizer) -> (reservedFor after,
    /// allocated after, changed).
    #[test]
    fn release_pod_claims_drops_the_pod_and_deallocates_unused_scheduler_claims() {
        use crate::api::resource::{AllocationResult, ResourceClaimConsumerReference};
        use crate::plugins::dynamicresources::cycle::CLAIM_FINALIZER;
        type Case = (&'static str, &'static [&'static str], bool, bool, (&'static [&'static str], bool, bool));
        let cases: [Case; 6] = [
            ("last consumer, scheduler's allocation", &["u1"], true, true, (&[], false, true)),
            ("another consumer stays", &["u1", "u2"], true, true, (&["u2"], true, true)),
            ("not reserved for the pod", &["u2"], true, true, (&["u2"], true, false)),
            ("reserved for nobody already (allocResourceClaims)", &[], true, false, (&[], true, false)),
            ("last consumer, allocResourceClaims' allocation (no finalizer)", &["u1"], true, false, (&[], true, true)),
            ("reserved but unallocated", &["u1"], false, false, (&[], false, true)),
        ];
        let pod_yaml = "kind: Pod\nmetadata: {name: p, uid: u1}\nspec:\n  containers: [{name: c}]\n  resourceClaims:\n  - {name: a, resourceClaimName: shared}\n  - {name: b, resourceClaimTemplateName: t}\nstatus:\n  resourceClaimStatuses: [{name: b, resourceClaimName: p-b-xxxxx}]\n";
        let crate::api::Object::Pod(pod) = crate::api::parse_objects(pod_yaml, "m.yaml").unwrap().remove(0) else {
            panic!()
        };
        for (name, reserved, allocated, finalizer, (want_reserved, want_allocated, want_changed)) in cases {
            let mut claims = Claims::new();
            for claim_name in ["shared", "p-b-xxxxx"] {
                let mut c = ResourceClaim::default();
                c.metadata.name = claim_name.into();
                c.metadata.namespace = "test".into();
                c.status.reserved_for = reserved
                    .iter()
                    .map(|u| ResourceClaimConsumerReference {
                        api_group: String::new(),
                        resource: "pods".into(),
                        name: format!("pod-{u}"),
                        uid: u.to_string(),
                    })
                    .collect();
                c.status.allocation = allocated.then(AllocationResult::default);
                if finalizer {
                    c.metadata.finalizers.push(CLAIM_FINALIZER.into());
                }
                claims.insert(("test".into(), claim_name.into()), c);
            }
            let changed = release_pod_claims(&pod, "test", &mut claims);
            let want_keys: Vec<(String, String)> = if want_changed {
                vec![("test".into(), "shared".into()), ("test".into(), "p-b-xxxxx".into())]
            } else {
                Vec::new()
            };
            assert_eq!(changed, want_keys, "{name}: changed");
            for c in claims.values() {
                let uids: Vec<&str> = c.status.reserved_for.iter().map(|r| r.uid.as_str()).collect();
                assert_eq!(uids, want_reserved, "{name}: reservedFor of {}", c.metadata.name);
                assert_eq!(c.status.allocation.is_some(), want_allocated, "{name}: allocated {}", c.metadata.name);
                let has_finalizer = c.metadata.finalizers.iter().any(|f| f == CLAIM_FINALIZER);
                assert_eq!(has_finalizer, finalizer && want_allocated, "{name}: finalizer of {}", c.metadata.name);
            }
        }
        // A pod in another namespace, or whose claims are gone, changes nothing.
        let mut claims = Claims::new();
        assert!(release_pod_claims(&pod, "test", &mut claims).is_empty());
    }

    #[test]
    fn generate_names_are_the_controllers() {
        let cases: [(String, String, String); 3] = [
            ("test-dra-0".into(), "resource".into(), "test-dra-0-resource-".into()),
            // 40 + 1 + 20 + 1 = 62 > 57: 40*57/62 = 36 and 20*57/62 = 18 characters, no trailing hyphen.
            ("p".repeat(40), "c".repeat(20), format!("{}-{}", "p".repeat(36), "c".repeat(18))),
            // Exactly 57: kept.
            ("p".repeat(40), "c".repeat(15), format!("{}-{}-", "p".repeat(40), "c".repeat(15))),
        ];
        for (pod, claim, want) in cases {
            assert_eq!(claim_generate_name(&pod, &claim), want, "{pod} {claim}");
        }
    }

    /// The oracle's rule computed independently (Python's hashlib over the same string).
    const GOLDEN_NAME: &str = "test-dra000000-resource-47r6l";

    #[test]
    fn generated_names_are_the_oracles_and_in_the_apiservers_alphabet() {
        let name = generated_name("resourceclaims", "test", "test-dra000000-resource-", 0);
        assert_eq!(name, GOLDEN_NAME);
        assert!(name["test-dra000000-resource-".len()..].bytes().all(|b| GENERATE_NAME_ALPHABET.contains(&b)));
        assert_ne!(name, generated_name("resourceclaims", "test", "test-dra000000-resource-", 1));
        let names: std::collections::HashSet<_> =
            (0..2000).map(|i| generated_name("resourceclaims", "test", &format!("p{i}-"), 0)).collect();
        assert_eq!(names.len(), 2000);
    }

    #[test]
    fn a_template_claim_is_owned_by_its_pod_and_copies_the_template() {
        let objects = crate::api::parse_objects(
            r#"kind: ResourceClaimTemplate
metadata: {name: t, namespace: test}
spec:
  metadata: {labels: {a: b}}
  spec: {devices: {requests: [{name: req-0, exactly: {deviceClassName: test-class}}]}}
---
kind: Pod
metadata: {name: test-dra-0, uid: u1}
spec:
  containers: [{name: c}]
  resourceClaims: [{name: resource, resourceClaimTemplateName: t}, {name: other, resourceClaimName: shared}]
"#,
            "m.yaml",
        )
        .unwrap();
        let (crate::api::Object::ResourceClaimTemplate(t), crate::api::Object::Pod(mut pod)) =
            (objects[0].clone(), objects[1].clone())
        else {
            panic!()
        };
        let entry = pod.spec.resource_claims[0].clone();
        let claim = claim_from_template(&pod, "test", &entry, &t, 3);
        assert_eq!(claim.metadata.name, "test-dra-0-resource-qvtp5");
        assert_eq!(claim.metadata.namespace, "test");
        assert_eq!(claim.metadata.labels["a"], "b");
        assert_eq!(claim.metadata.annotations[POD_RESOURCE_CLAIM_ANNOTATION], "resource");
        assert_eq!(claim.metadata.owner_references[0].uid, "u1");
        assert_eq!(claim.spec, t.spec.spec);
        assert_eq!(claim_name(&pod, &pod.spec.resource_claims[1]), ClaimRef::Named("shared"));
        assert_eq!(claim_name(&pod, &entry), ClaimRef::Pending);
        pod.status.resource_claim_statuses = vec![PodResourceClaimStatus {
            name: "resource".into(),
            resource_claim_name: Some(claim.metadata.name.clone()),
        }];
        let pod_claim = pod.spec.resource_claims[0].clone();
        assert_eq!(claim_name(&pod, &pod_claim), ClaimRef::Named("test-dra-0-resource-qvtp5"));
        pod.status.resource_claim_statuses[0].resource_claim_name = None;
        assert_eq!(claim_name(&pod, &pod_claim), ClaimRef::NotNeeded);
    }

    #[test]
    fn init_claims_go_round_the_sorted_nodes() {
        let mut text = String::from(
            "kind: DeviceClass\nmetadata: {name: test-class}\nspec: {selectors: [{cel: {expression: 'device.driver == \"d\"'}}]}\n",
        );
        for n in 0..2 {
            text.push_str(&format!(
                "---\nkind: ResourceSlice\nmetadata: {{name: s{n}}}\nspec: {{driver: d, nodeName: node-{n}, pool: {{name: p{n}, generation: 1, resourceSliceCount: 1}}, devices: [{{name: a}}, {{name: b}}]}}\n"
            ));
        }
        for c in 0..5 {
            text.push_str(&format!(
                "---\nkind: ResourceClaim\nmetadata: {{name: test-claim-{c}, namespace: init}}\nspec: {{devices: {{requests: [{{name: req-0, exactly: {{deviceClassName: test-class}}}}]}}}}\n"
            ));
        }
        let mut dra = DraObjects::default();
        for o in crate::api::parse_objects(&text, "m.yaml").unwrap() {
            match o {
                crate::api::Object::DeviceClass(c) => dra.add_class(&c),
                crate::api::Object::ResourceSlice(s) => dra.add_slice(&s),
                crate::api::Object::ResourceClaim(c) => dra.add_claim(&c),
                _ => unreachable!(),
            }
        }
        let never = |_: &crate::api::objects::NodeSelector| false;
        let nodes = [
            NodeView { name: "node-0", selector_matches: &never },
            NodeView { name: "node-1", selector_matches: &never },
        ];
        // Four devices, five claims: the fifth fits nowhere.
        let err = alloc_resource_claims(&mut dra, "init", &nodes, &mut CelSelectors::new()).unwrap_err();
        assert_eq!(err, "Could not allocate claim 4 out of 5");
        let placed = |dra: &DraObjects, c: usize| {
            let claim = dra.claim("init", &format!("test-claim-{c}")).unwrap();
            let r = &claim.status.allocation.as_ref().unwrap().devices.results[0];
            format!("{}/{}", r.pool, r.device)
        };
        // Claim i starts at node i mod 2.
        assert_eq!(
            [placed(&dra, 0), placed(&dra, 1), placed(&dra, 2), placed(&dra, 3)],
            ["p0/a", "p1/a", "p0/b", "p1/b"]
        );
        assert_eq!(allocated_devices(&dra.claims.lock()).len(), 4);
        // Nothing left to do for the allocated ones; the last claim removed, the op succeeds.
        dra.claims.get_mut().remove(&("init".to_string(), "test-claim-4".to_string()));
        assert_eq!(alloc_resource_claims(&mut dra, "init", &nodes, &mut CelSelectors::new()), Ok(0));
    }
}
