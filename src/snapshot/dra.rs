//! The dynamic resource allocation objects the DynamicResources plugin reads, as the API holds
//! them: DeviceClasses and ResourceSlices by name, ResourceClaims and ResourceClaimTemplates by
//! (namespace, name) (upstream's listers). Ordered maps, so every walk is deterministic. A cluster
//! without DRA objects leaves every map empty and pods without claims never look here.
//!
//! ResourceClaims live in one store, [`ClaimStore`], that every writer and reader shares: the
//! scheduler (DynamicResources' Reserve writes allocations and `reservedFor` there, Unreserve
//! takes them back, PostFilter deallocates), the resourceclaim controller's part (claims from
//! templates at pod creation; at pod deletion the pod leaves `reservedFor` and a claim nobody uses
//! is deallocated, `controller::release_pod_claims`) and `allocResourceClaims`. The scheduler's
//! points that write it (Reserve, Unreserve, PostFilter) see the snapshot only by `&`, so the map
//! sits behind a lock (taken once per pod with claims, never for a pod without).

use std::collections::BTreeMap;

use std::sync::Arc;

use crate::api::objects::{Pod, PodGroupResourceClaim};
use crate::api::resource::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use crate::api::resource_counters::{apply_taint_rules, DeviceTaintRule};
use crate::ids::PodUid;
use crate::sync::{Mutex, MutexGuard};

/// ResourceClaims by (namespace, name).
pub type Claims = BTreeMap<(String, String), ResourceClaim>;

/// The one ResourceClaim store (see the module docs): a lock over [`Claims`]. Cloning copies the
/// claims (a clone shares nothing with the original).
#[derive(Debug, Default)]
pub struct ClaimStore(Mutex<Claims>);

impl Clone for ClaimStore {
    fn clone(&self) -> Self {
        ClaimStore(Mutex::new(self.lock().clone()))
    }
}

impl ClaimStore {
    /// The claims, locked (a poisoned lock is taken over: every write leaves the map whole).
    pub fn lock(&self) -> MutexGuard<'_, Claims> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The claims, without a lock (the owner of the snapshot).
    pub fn get_mut(&mut self) -> &mut Claims {
        self.0.get_mut().unwrap_or_else(|e| e.into_inner())
    }
}

/// What DynamicResources reads of a pod with resource claims: the pod as the API holds it, cut
/// down to its namespace, name and uid, `spec.resourceClaims`, `spec.schedulingGroup` and `status.resourceClaimStatuses`
/// (the controller's generated claim names, which depend on the pod: a `PodInfo` compiled once
/// for a template gets its own per pod, [`PodClaimRefs::for_pod`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodClaimRefs {
    pub pod: Pod,
}

impl PodClaimRefs {
    /// The same claims for another pod of the same template (`name`, `uid`), statuses cleared:
    /// the controller records this pod's own claims.
    pub fn for_pod(&self, name: &str, uid: PodUid) -> PodClaimRefs {
        let mut pod = self.pod.clone();
        pod.metadata.name = name.to_string();
        pod.metadata.uid = uid_string(uid);
        pod.status.resource_claim_statuses.clear();
        PodClaimRefs { pod }
    }
}

/// The uid a pod without one of its own has in the DRA objects (owner references, `reservedFor`).
pub fn uid_string(uid: PodUid) -> String {
    uid.to_string()
}

/// A pod's [`PodClaimRefs`]; `None` when it has no `spec.resourceClaims`. `name` is the pod's
/// (generated) name; the pod's own `metadata.uid` when set, else `uid`'s string.
pub fn pod_claim_refs(pod: &Pod, name: &str, uid: PodUid) -> Option<Arc<PodClaimRefs>> {
    if pod.spec.resource_claims.is_empty() {
        return None;
    }
    let mut slim = Pod::default();
    slim.metadata.name = name.to_string();
    slim.metadata.namespace.clone_from(&pod.metadata.namespace);
    slim.metadata.uid = if pod.metadata.uid.is_empty() { uid_string(uid) } else { pod.metadata.uid.clone() };
    slim.spec.resource_claims.clone_from(&pod.spec.resource_claims);
    slim.spec.scheduling_group.clone_from(&pod.spec.scheduling_group);
    slim.status.resource_claim_statuses.clone_from(&pod.status.resource_claim_statuses);
    Some(Arc::new(PodClaimRefs { pod: slim }))
}

/// The allocator features a run's feature gates turn on beyond v1.37's defaults (upstream's
/// `structured.Features` fields whose gates are off by default), and DRAPrioritizedList turned off. Either one makes upstream pick its
/// `experimental` allocator, the only one supporting them (`structured.NewAllocator`), as the
/// suites' `_test.go` files also pin it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DraFeatures {
    /// DRADeviceCompatibilityGroups: the compatibility-group check; off, slices whose devices
    /// declare groups are ignored (their pools become incomplete).
    pub compatibility_groups: bool,
    /// DRAPrioritizedList off (the gate is locked on at v1.37, so only tests turn it off):
    /// PreFilter refuses a claim to allocate with `firstAvailable` subrequests and Score gives 0.
    pub prioritized_list_off: bool,
    /// DRAListTypeAttributes: list-valued attributes, compared as sets by `matchAttribute` (a
    /// non-empty running intersection) and `distinctAttribute` (pairwise disjoint); off, the
    /// scalar comparison of `incubating`.
    pub list_type_attributes: bool,
}

impl DraFeatures {
    /// The allocator upstream runs for these features: `experimental` when any is on, else the
    /// first of `stable`/`incubating` supporting v1.37's default features (`incubating`).
    pub fn allocator(&self) -> &'static str {
        if self.compatibility_groups || self.list_type_attributes {
            "experimental"
        } else {
            "incubating"
        }
    }
}

/// DRA objects by name.
#[derive(Clone, Debug, Default)]
pub struct DraObjects {
    /// The run's allocator features (from its feature gates).
    pub features: DraFeatures,
    pub classes: BTreeMap<String, DeviceClass>,
    /// The claim store, by (namespace, name).
    pub claims: ClaimStore,
    /// By (namespace, name).
    pub templates: BTreeMap<(String, String), ResourceClaimTemplate>,
    pub slices: BTreeMap<String, ResourceSlice>,
    /// Bumped on every change to a slice or class (what an allocator built from them caches on).
    pub generation: u64,
    /// DeviceTaintRules by name: `slices` hold their taints (the scheduler's slice tracker).
    pub taint_rules: BTreeMap<String, DeviceTaintRule>,
    /// The slices a rule patched, as published (to re-apply the rules when they change).
    pub published_slices: BTreeMap<String, ResourceSlice>,
    /// DRAWorkloadResourceClaims (with GenericWorkload) is on: a pod's claim entry matching one of
    /// its PodGroup's resolves through the group (`pod_groups`). Off, upstream's
    /// `getPodGroupSnapshot` returns nil and every claim is the pod's own.
    pub workload_claims: bool,
    /// The PodGroups' claims, by (namespace, name), while `workload_claims` is on.
    pub pod_groups: BTreeMap<(String, String), GroupClaims>,
}

/// What DynamicResources and the resourceclaim controller read of a PodGroup
/// (DRAWorkloadResourceClaims): its uid, `spec.resourceClaims` and the claims the controller made
/// for its template entries (`status.resourceClaimStatuses`: entry name -> claim name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupClaims {
    pub uid: String,
    pub claims: Vec<PodGroupResourceClaim>,
    pub statuses: BTreeMap<String, String>,
}

impl DraObjects {
    /// Adds or replaces a DeviceClass.
    pub fn add_class(&mut self, class: &DeviceClass) {
        self.classes.insert(class.metadata.name.clone(), class.clone());
        self.generation += 1;
    }

    /// Adds or replaces a ResourceClaim (its namespace defaulted).
    pub fn add_claim(&mut self, claim: &ResourceClaim) {
        let key = (claim.namespace().to_string(), claim.metadata.name.clone());
        let mut claim = claim.clone();
        claim.metadata.namespace.clone_from(&key.0);
        self.claims.get_mut().insert(key, claim);
    }

    /// Adds or replaces a ResourceClaimTemplate (its namespace defaulted).
    pub fn add_template(&mut self, template: &ResourceClaimTemplate) {
        let key = (template.namespace().to_string(), template.metadata.name.clone());
        let mut template = template.clone();
        template.metadata.namespace.clone_from(&key.0);
        self.templates.insert(key, template);
    }

    /// Adds or replaces a ResourceSlice.
    pub fn add_slice(&mut self, slice: &ResourceSlice) {
        let name = slice.metadata.name.clone();
        self.published_slices.remove(&name);
        let rules: Vec<&DeviceTaintRule> = self.taint_rules.values().collect();
        match apply_taint_rules(slice, &rules) {
            Some(patched) => {
                self.published_slices.insert(name.clone(), slice.clone());
                self.slices.insert(name, patched);
            }
            None => {
                self.slices.insert(name, slice.clone());
            }
        }
        self.generation += 1;
    }

    /// Adds or replaces a DeviceTaintRule: every slice gets the taints of the rules selecting its
    /// devices (upstream's ResourceSlice tracker, which the scheduler reads slices through).
    pub fn add_taint_rule(&mut self, rule: &DeviceTaintRule) {
        self.taint_rules.insert(rule.metadata.name.clone(), rule.clone());
        let names: Vec<String> = self.slices.keys().cloned().collect();
        for name in names {
            let published = self.published_slices.get(&name).or_else(|| self.slices.get(&name)).cloned();
            if let Some(published) = published {
                self.add_slice(&published);
            }
        }
        self.generation += 1;
    }

    /// A copy of the claim `namespace/name`, if it exists.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<ResourceClaim> {
        self.claims.lock().get(&(namespace.to_string(), name.to_string())).cloned()
    }

    /// The template `namespace/name`, if it exists.
    pub fn template(&self, namespace: &str, name: &str) -> Option<&ResourceClaimTemplate> {
        self.templates.get(&(namespace.to_string(), name.to_string()))
    }

    /// No DRA object at all (a cluster that does not use DRA).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.claims.lock().is_empty() && self.templates.is_empty() && self.slices.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::api::parse_objects;
    use crate::cluster::register_object;
    use crate::snapshot::Snapshot;

    #[test]
    fn registered_objects_are_held_by_name() {
        let text = r#"kind: DeviceClass
metadata: {name: test-class}
---
kind: ResourceClaim
metadata: {name: c}
spec: {devices: {requests: [{name: r, exactly: {deviceClassName: test-class}}]}}
---
kind: ResourceClaimTemplate
metadata: {name: t, namespace: test}
---
kind: ResourceSlice
metadata: {name: s}
spec: {driver: d, pool: {name: p, generation: 1, resourceSliceCount: 1}, nodeName: n}
"#;
        let mut snap = Snapshot::new();
        assert!(snap.cluster.dra.is_empty());
        for o in parse_objects(text, "m.yaml").unwrap() {
            register_object(&mut snap, &o);
        }
        let dra = &snap.cluster.dra;
        assert!(dra.classes.contains_key("test-class"));
        assert_eq!(dra.claim("default", "c").unwrap().metadata.namespace, "default");
        assert!(dra.template("test", "t").is_some() && dra.template("default", "t").is_none());
        assert_eq!(dra.slices["s"].spec.node_name.as_deref(), Some("n"));
        assert_eq!(dra.generation, 2, "one class and one slice");
    }

    #[test]
    fn taint_rules_taint_the_devices_they_select_before_and_after_the_slice() {
        let slice = |name: &str, driver: &str| {
            format!("kind: ResourceSlice\nmetadata: {{name: {name}}}\nspec: {{driver: {driver}, pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}, nodeName: n, devices: [{{name: a}}, {{name: b}}]}}\n")
        };
        let rule = |name: &str, selector: &str| {
            format!("kind: DeviceTaintRule\nmetadata: {{name: {name}}}\nspec: {{deviceSelector: {selector}, taint: {{key: k, effect: NoSchedule}}}}\n")
        };
        let text = [
            slice("s1", "d1"),
            rule("r1", "{driver: d1, device: b}"),
            rule("r2", "null"),
            slice("s2", "d2"),
            rule("r3", "{}"),
        ]
        .join("---\n");
        let mut snap = Snapshot::new();
        for o in parse_objects(&text, "m.yaml").unwrap() {
            register_object(&mut snap, &o);
        }
        let dra = &snap.cluster.dra;
        let taints = |s: &str, d: usize| dra.slices[s].spec.devices[d].taints.len();
        // r1 selects d1's device b; r2 (no selector) nothing; r3 (empty selector) every device.
        assert_eq!([taints("s1", 0), taints("s1", 1), taints("s2", 0), taints("s2", 1)], [1, 2, 1, 1]);
        assert!(dra.published_slices["s1"].spec.devices.iter().all(|d| d.taints.is_empty()));
    }
}
