//! The storage objects scheduler_perf's harness creates, as documents both the runner and the
//! lockstep replay apply, so the two build exactly the same objects:
//!
//! - `createPods` with `persistentVolumeTemplatePath` + `persistentVolumeClaimTemplatePath`
//!   (upstream `getPodStrategy` -> `NewCreatePodWithPersistentVolumeStrategy` ->
//!   `CreatePodWithPersistentVolume` with `bindVolume`, and `getCustomVolumeFactory`): for pod `i`
//!   of the op (0-based within the op) in namespace `ns`, claim `pvc-<i>` from the claim template
//!   and volume `<ns>-vol-<i>` from the volume template, bound to each other (claimRef / volumeName,
//!   phases `Bound`); an AWS EBS source gets volumeID `vol-<i>`, a CSI source the handle
//!   `<ns>-vol-<i>` (the factory sets `vol-<i>`, the caller then the prefixed name). The pod's
//!   volumes are replaced by one volume `vol` that names the claim.
//! - `createNodes`' `nodeAllocatableStrategy` (upstream `NodeAllocatableStrategy`
//!   `PrepareDependentObjects` -> `createCSINode`): a CSINode named after the node, with the
//!   migrated-plugins annotation (the plugins joined by commas, present even when empty) and one
//!   driver per `csiNodeAllocatable` entry (nodeID = the node's name, allocatable as written).

use std::path::Path;

use serde_json::{json, Value};

use super::spec::NodeAllocatableStrategy;
use crate::error::InputError;
use crate::snapshot::volumes::ANN_MIGRATED_PLUGINS;

/// The name of the pod volume that references the claim (upstream's `"vol"`).
pub const CLAIM_VOLUME_NAME: &str = "vol";

/// A volume template and a claim template, read once per op (`getSpecFromFile`: no templating).
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeTemplates {
    pub pv: Value,
    pub pvc: Value,
}

impl VolumeTemplates {
    /// Reads both templates; each must hold one object of the expected kind.
    pub fn load(pv_path: &Path, pvc_path: &Path) -> Result<Self, InputError> {
        Ok(VolumeTemplates {
            pv: read_object(pv_path, "PersistentVolume")?,
            pvc: read_object(pvc_path, "PersistentVolumeClaim")?,
        })
    }
}

fn read_object(path: &Path, kind: &str) -> Result<Value, InputError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(&file, "", format!("cannot read the template: {e}")))?;
    let v: Value = serde_norway::from_str(&text).map_err(|e| InputError::new(&file, "", e.to_string()))?;
    if v["kind"].as_str() != Some(kind) {
        return Err(InputError::new(&file, "kind", format!("expected a {kind}, found {}", v["kind"])));
    }
    Ok(v)
}

/// `docs` as the objects the snapshot loads (each a JSON document, which is YAML).
pub fn parse(docs: &[Value], file: &str) -> Result<Vec<crate::api::Object>, InputError> {
    let mut out = Vec::with_capacity(docs.len());
    for d in docs {
        out.extend(crate::api::parse_objects(&d.to_string(), file)?);
    }
    Ok(out)
}

/// The claim `pvc-<i>`, bound to its volume `<namespace>-vol-<i>`.
pub fn claim_name(i: u64) -> String {
    format!("pvc-{i}")
}

/// The volume of pod `i` in `namespace`: `<namespace>-vol-<i>` (PVs are cluster-wide).
pub fn volume_name(namespace: &str, i: u64) -> String {
    format!("{namespace}-vol-{i}")
}

/// The claim and the volume (in that order, as upstream creates them) for pod `i` of a
/// `createPods` op in `namespace`, pre-bound to each other.
pub fn pod_volume_objects(t: &VolumeTemplates, namespace: &str, i: u64) -> [Value; 2] {
    let (claim, volume) = (claim_name(i), volume_name(namespace, i));
    let mut pvc = t.pvc.clone();
    pvc["apiVersion"] = json!("v1");
    set_meta(&mut pvc, &claim, Some(namespace));
    pvc["spec"]["volumeName"] = json!(volume);
    pvc["status"] = json!({"phase": "Bound"});

    let mut pv = t.pv.clone();
    pv["apiVersion"] = json!("v1");
    set_meta(&mut pv, &volume, None);
    let spec = &mut pv["spec"];
    if spec.get("csi").is_some_and(Value::is_object) {
        spec["csi"]["volumeHandle"] = json!(volume);
    } else if spec.get("awsElasticBlockStore").is_some_and(Value::is_object) {
        spec["awsElasticBlockStore"]["volumeID"] = json!(format!("vol-{i}"));
    }
    spec["claimRef"] =
        json!({"kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim, "apiVersion": "v1"});
    pv["status"] = json!({"phase": "Bound"});
    [pvc, pv]
}

fn set_meta(obj: &mut Value, name: &str, namespace: Option<&str>) {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"]["name"] = json!(name);
    if let Some(ns) = namespace {
        obj["metadata"]["namespace"] = json!(ns);
    }
}

/// The pod's `spec.volumes` under a claim template: one volume `vol` naming claim `pvc-<i>`
/// (upstream replaces whatever volumes the pod template had).
pub fn claim_volumes(i: u64) -> Value {
    json!([{"name": CLAIM_VOLUME_NAME, "persistentVolumeClaim": {"claimName": claim_name(i)}}])
}

/// The CSINode `nodeAllocatableStrategy` creates for node `node` (upstream creates one whatever
/// the strategy holds: with no `csiNodeAllocatable` its driver list is empty).
pub fn csi_node(node: &str, s: &NodeAllocatableStrategy) -> Value {
    let drivers: Vec<Value> = match &s.csi_node_allocatable {
        Some(serde_norway::Value::Mapping(m)) => m
            .iter()
            .map(|(k, v)| {
                let name = k.as_str().unwrap_or_default();
                let alloc: Value = serde_json::to_value(v).unwrap_or(Value::Null);
                let mut d = json!({"name": name, "nodeID": node});
                if !alloc.is_null() {
                    d["allocatable"] = alloc;
                }
                d
            })
            .collect(),
        _ => Vec::new(),
    };
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node, "annotations": {ANN_MIGRATED_PLUGINS: s.migrated_plugins.join(",")}},
        "spec": {"drivers": drivers},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates(pv_source: Value) -> VolumeTemplates {
        let mut pv = json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "spec": {"accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"},
                     "persistentVolumeReclaimPolicy": "Retain"}});
        for (k, v) in pv_source.as_object().unwrap() {
            pv["spec"][k] = v.clone();
        }
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "true"}},
            "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "1Gi"}}}});
        VolumeTemplates { pv, pvc }
    }

    /// (source, namespace, i) -> (claim, volume, AWS volumeID, CSI handle).
    type Case<'a> = (&'a Value, &'a str, u64, &'a str, &'a str, Option<&'a str>, Option<&'a str>);

    #[test]
    fn pod_volume_objects_table() {
        let aws = json!({"awsElasticBlockStore": {"volumeID": "<volume-id>"}});
        let csi = json!({"csi": {"driver": "ebs.csi.aws.com"}});
        let cases: [Case; 4] = [
            (&aws, "namespace-1", 0, "pvc-0", "namespace-1-vol-0", Some("vol-0"), None),
            (&aws, "namespace-2", 17, "pvc-17", "namespace-2-vol-17", Some("vol-17"), None),
            (&csi, "namespace-1", 3, "pvc-3", "namespace-1-vol-3", None, Some("namespace-1-vol-3")),
            (&csi, "blockeraffinity", 14, "pvc-14", "blockeraffinity-vol-14", None, Some("blockeraffinity-vol-14")),
        ];
        for (source, ns, i, claim, volume, aws_id, handle) in cases {
            let [pvc, pv] = pod_volume_objects(&templates(source.clone()), ns, i);
            let at = format!("{ns} {i}");
            assert_eq!(pvc["metadata"]["name"], claim, "{at}");
            assert_eq!(pvc["metadata"]["namespace"], ns, "{at}");
            assert_eq!(pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"], "true", "{at}");
            assert_eq!(pvc["spec"]["volumeName"], volume, "{at}");
            assert_eq!(pvc["status"]["phase"], "Bound", "{at}");
            assert_eq!(pv["metadata"]["name"], volume, "{at}");
            assert!(pv["metadata"].get("namespace").is_none(), "{at}: PVs are cluster-wide");
            assert_eq!(
                pv["spec"]["claimRef"],
                json!({"kind": "PersistentVolumeClaim", "namespace": ns, "name": claim, "apiVersion": "v1"}),
                "{at}"
            );
            assert_eq!(pv["status"]["phase"], "Bound", "{at}");
            assert_eq!(pv["spec"]["awsElasticBlockStore"]["volumeID"].as_str(), aws_id, "{at}");
            assert_eq!(pv["spec"]["csi"]["volumeHandle"].as_str(), handle, "{at}");
            if handle.is_some() {
                assert_eq!(pv["spec"]["csi"]["driver"], "ebs.csi.aws.com", "{at}");
            }
            // Both parse as the objects the snapshot loads.
            let objs = parse(&[pvc, pv], "test").unwrap();
            assert_eq!(objs.len(), 2, "{at}");
        }
        assert_eq!(claim_volumes(5), json!([{"name": "vol", "persistentVolumeClaim": {"claimName": "pvc-5"}}]));
    }

    #[test]
    fn csi_node_from_strategy() {
        let s = NodeAllocatableStrategy {
            node_allocatable: Default::default(),
            csi_node_allocatable: Some(serde_norway::from_str("ebs.csi.aws.com: {count: 39}").unwrap()),
            migrated_plugins: vec!["kubernetes.io/aws-ebs".into()],
        };
        assert_eq!(
            csi_node("node-3", &s),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": "node-3",
                    "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}},
                "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "node-3", "allocatable": {"count": 39}}]}})
        );
        let none = NodeAllocatableStrategy { csi_node_allocatable: None, migrated_plugins: vec![], ..s };
        let n = csi_node("n", &none);
        assert_eq!(n["metadata"]["annotations"]["storage.alpha.kubernetes.io/migrated-plugins"], "");
        assert_eq!(n["spec"]["drivers"], json!([]));
    }
}
