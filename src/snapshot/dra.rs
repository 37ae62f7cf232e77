//! The dynamic resource allocation objects the DynamicResources plugin reads, as the API holds
//! them: DeviceClasses and ResourceSlices by name, ResourceClaims and ResourceClaimTemplates by
//! (namespace, name) (upstream's listers). Ordered maps, so every walk is deterministic. A cluster
//! without DRA objects leaves every map empty and pods without claims never look here.

use std::collections::BTreeMap;

use crate::api::resource::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};

/// DRA objects by name.
#[derive(Clone, Debug, Default)]
pub struct DraObjects {
    pub classes: BTreeMap<String, DeviceClass>,
    /// By (namespace, name).
    pub claims: BTreeMap<(String, String), ResourceClaim>,
    /// By (namespace, name).
    pub templates: BTreeMap<(String, String), ResourceClaimTemplate>,
    pub slices: BTreeMap<String, ResourceSlice>,
    /// Bumped on every change to a slice or class (what an allocator built from them caches on).
    pub generation: u64,
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
        self.claims.insert(key, claim);
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
        self.slices.insert(slice.metadata.name.clone(), slice.clone());
        self.generation += 1;
    }

    /// The claim `namespace/name`, if it exists.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&ResourceClaim> {
        self.claims.get(&(namespace.to_string(), name.to_string()))
    }

    /// The template `namespace/name`, if it exists.
    pub fn template(&self, namespace: &str, name: &str) -> Option<&ResourceClaimTemplate> {
        self.templates.get(&(namespace.to_string(), name.to_string()))
    }

    /// No DRA object at all (a cluster that does not use DRA).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.claims.is_empty() && self.templates.is_empty() && self.slices.is_empty()
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
}
