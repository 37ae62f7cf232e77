//! Loads Kubernetes manifests (YAML or JSON, single or multi-document, `List`s) into [`Object`]s.
//!
//! A file is read into untyped documents first, then each object is dispatched on its `kind` and
//! decoded with its field path tracked, so every error names the file and the field:
//! `cluster.yaml: items[3].status.allocatable.cpu: "4x" is not a quantity`. In a stream of more than
//! one document the path starts with `documents[N]` (0-based, counting every document in the stream).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_norway::Value;
use serde_path_to_error::Segment;

use super::objects::{
    Namespace, Node, Pod, PodDisruptionBudget, PodGroup, PriorityClass, ReplicaSet, ReplicationController, Service,
    StatefulSet,
};
use super::resource::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use super::storage::{CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass};
use crate::error::InputError;

/// One Kubernetes object from a manifest.
// Objects are mostly pods and nodes, whose sizes are close, and are consumed once at load time, so
// boxing the pod variant would cost an allocation per pod for little saved space.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    Node(Node),
    Pod(Pod),
    Namespace(Namespace),
    Service(Service),
    ReplicaSet(ReplicaSet),
    StatefulSet(StatefulSet),
    ReplicationController(ReplicationController),
    PodDisruptionBudget(PodDisruptionBudget),
    PriorityClass(PriorityClass),
    /// `scheduling.k8s.io` PodGroup (workload-aware scheduling, gate GenericWorkload).
    PodGroup(PodGroup),
    PersistentVolume(PersistentVolume),
    PersistentVolumeClaim(PersistentVolumeClaim),
    /// `storage.k8s.io/v1`.
    StorageClass(StorageClass),
    /// `storage.k8s.io/v1`, named after its node.
    CsiNode(CsiNode),
    /// `resource.k8s.io/v1` (cluster-scoped).
    DeviceClass(DeviceClass),
    /// `resource.k8s.io/v1`.
    ResourceClaim(ResourceClaim),
    /// `resource.k8s.io/v1`.
    ResourceClaimTemplate(ResourceClaimTemplate),
    /// `resource.k8s.io/v1` (cluster-scoped).
    ResourceSlice(ResourceSlice),
    /// `storage.k8s.io/v1`: VolumeBinding reads its `storageCapacity`.
    CsiDriver(CsiDriver),
    /// `storage.k8s.io/v1`, namespaced: capacity for dynamic provisioning.
    CsiStorageCapacity(CsiStorageCapacity),
    /// `resource.k8s.io/v1` (cluster-scoped): taints devices (DRADeviceTaintRules).
    DeviceTaintRule(super::resource_counters::DeviceTaintRule),
    /// A kind the scheduler does not read (a ConfigMap, a Deployment, ...), kept so callers can report it.
    Other {
        kind: String,
        name: String,
    },
}

impl Object {
    /// The object's `kind`, as written in the manifest.
    pub fn kind(&self) -> &str {
        match self {
            Object::Node(_) => "Node",
            Object::Pod(_) => "Pod",
            Object::Namespace(_) => "Namespace",
            Object::Service(_) => "Service",
            Object::ReplicaSet(_) => "ReplicaSet",
            Object::StatefulSet(_) => "StatefulSet",
            Object::ReplicationController(_) => "ReplicationController",
            Object::PodDisruptionBudget(_) => "PodDisruptionBudget",
            Object::PriorityClass(_) => "PriorityClass",
            Object::PodGroup(_) => "PodGroup",
            Object::PersistentVolume(_) => "PersistentVolume",
            Object::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
            Object::StorageClass(_) => "StorageClass",
            Object::CsiNode(_) => "CSINode",
            Object::DeviceClass(_) => "DeviceClass",
            Object::ResourceClaim(_) => "ResourceClaim",
            Object::ResourceClaimTemplate(_) => "ResourceClaimTemplate",
            Object::ResourceSlice(_) => "ResourceSlice",
            Object::CsiDriver(_) => "CSIDriver",
            Object::CsiStorageCapacity(_) => "CSIStorageCapacity",
            Object::DeviceTaintRule(_) => "DeviceTaintRule",
            Object::Other { kind, .. } => kind,
        }
    }

    /// The object placed in `namespace`, as a client creating it there would (`Namespace(ns).Create`):
    /// `None` for a cluster-scoped kind (Node, Namespace, PriorityClass). A kind the scheduler does
    /// not read is returned as it is.
    pub fn in_namespace(&self, namespace: &str) -> Option<Object> {
        let mut o = self.clone();
        let meta = match &mut o {
            Object::Node(_)
            | Object::Namespace(_)
            | Object::PriorityClass(_)
            | Object::PersistentVolume(_)
            | Object::StorageClass(_)
            | Object::CsiNode(_)
            | Object::DeviceClass(_)
            | Object::ResourceSlice(_)
            | Object::DeviceTaintRule(_)
            | Object::CsiDriver(_) => return None,
            Object::Other { .. } => return Some(o),
            Object::Pod(x) => &mut x.metadata,
            Object::Service(x) => &mut x.metadata,
            Object::ReplicaSet(x) => &mut x.metadata,
            Object::StatefulSet(x) => &mut x.metadata,
            Object::ReplicationController(x) => &mut x.metadata,
            Object::PodDisruptionBudget(x) => &mut x.metadata,
            Object::PodGroup(x) => &mut x.metadata,
            Object::PersistentVolumeClaim(x) => &mut x.metadata,
            Object::ResourceClaim(x) => &mut x.metadata,
            Object::ResourceClaimTemplate(x) => &mut x.metadata,
            Object::CsiStorageCapacity(x) => &mut x.metadata,
        };
        meta.namespace = namespace.to_string();
        Some(o)
    }

    /// The object's `metadata.name` (empty for a pod that only has a `generateName`).
    pub fn name(&self) -> &str {
        match self {
            Object::Node(o) => &o.metadata.name,
            Object::Pod(o) => &o.metadata.name,
            Object::Namespace(o) => &o.metadata.name,
            Object::Service(o) => &o.metadata.name,
            Object::ReplicaSet(o) => &o.metadata.name,
            Object::StatefulSet(o) => &o.metadata.name,
            Object::ReplicationController(o) => &o.metadata.name,
            Object::PodDisruptionBudget(o) => &o.metadata.name,
            Object::PriorityClass(o) => &o.metadata.name,
            Object::PodGroup(o) => &o.metadata.name,
            Object::PersistentVolume(o) => &o.metadata.name,
            Object::PersistentVolumeClaim(o) => &o.metadata.name,
            Object::StorageClass(o) => &o.metadata.name,
            Object::CsiNode(o) => &o.metadata.name,
            Object::DeviceClass(o) => &o.metadata.name,
            Object::ResourceClaim(o) => &o.metadata.name,
            Object::ResourceClaimTemplate(o) => &o.metadata.name,
            Object::ResourceSlice(o) => &o.metadata.name,
            Object::CsiDriver(o) => &o.metadata.name,
            Object::CsiStorageCapacity(o) => &o.metadata.name,
            Object::DeviceTaintRule(o) => &o.metadata.name,
            Object::Other { name, .. } => name,
        }
    }
}

/// Reads and parses one manifest file; errors name the file as `path` displays.
pub fn load_objects(path: &Path) -> Result<Vec<Object>, InputError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| InputError::new(&file, "", format!("cannot read the file: {e}")))?;
    parse_objects(&text, &file)
}

/// Reads and parses several manifest files, returning their objects in order.
pub fn load_object_files(paths: &[PathBuf]) -> Result<Vec<Object>, InputError> {
    let mut objects = Vec::new();
    for path in paths {
        objects.extend(load_objects(path)?);
    }
    Ok(objects)
}

/// Parses a manifest: YAML (one or more `---`-separated documents) or JSON (one or more concatenated
/// values). `List`s and typed lists (`NodeList`, ...) are flattened, recursively; empty documents are
/// skipped. `file` names the input in errors.
pub fn parse_objects(text: &str, file: &str) -> Result<Vec<Object>, InputError> {
    objects_from_documents(parse_documents(text, file)?, file)
}

/// The objects of untyped `documents` (from [`parse_documents`], possibly edited), decoded exactly
/// as [`parse_objects`] decodes a manifest's documents.
pub fn objects_from_documents(documents: Vec<Value>, file: &str) -> Result<Vec<Object>, InputError> {
    let multi = documents.iter().filter(|d| !d.is_null()).count() > 1;
    let mut objects = Vec::new();
    for (index, mut document) in documents.into_iter().enumerate() {
        if document.is_null() {
            continue;
        }
        let prefix = if multi { format!("documents[{index}]") } else { String::new() };
        strip_nulls(&mut document);
        collect_objects(document, None, file, &mut objects).map_err(|e| e.within(&prefix))?;
    }
    Ok(objects)
}

/// Splits `text` into untyped documents: JSON when it starts with `{` and parses as JSON, YAML
/// otherwise. A flow-style YAML document also starts with `{`, so a JSON failure falls back to YAML;
/// when both fail, the JSON error is reported. YAML merge keys are applied; `null` entries are
/// still there. [`parse_objects`] is this then [`objects_from_documents`], which may run on edited
/// documents as often as needed.
pub fn parse_documents(text: &str, file: &str) -> Result<Vec<Value>, InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        match read_json_documents(text, file) {
            Ok(documents) => Ok(documents),
            Err(json_error) => read_yaml_documents(text, file).map_err(|_| json_error),
        }
    } else {
        read_yaml_documents(text, file)
    }
}

/// The path of the document at `index` for errors found before the documents are counted.
fn document_path(index: usize) -> String {
    if index > 0 {
        format!("documents[{index}]")
    } else {
        String::new()
    }
}

/// Reads one or more concatenated JSON values.
fn read_json_documents(text: &str, file: &str) -> Result<Vec<Value>, InputError> {
    let mut documents = Vec::new();
    for (index, document) in serde_json::Deserializer::from_str(text).into_iter::<Value>().enumerate() {
        let document =
            document.map_err(|e| InputError::new(file, document_path(index), format!("invalid JSON: {e}")))?;
        documents.push(document);
    }
    Ok(documents)
}

/// Reads a `---`-separated YAML stream, applying `<<` merge keys.
fn read_yaml_documents(text: &str, file: &str) -> Result<Vec<Value>, InputError> {
    let mut documents = Vec::new();
    for (index, deserializer) in serde_norway::Deserializer::from_str(text).enumerate() {
        let mut document = Value::deserialize(deserializer)
            .map_err(|e| InputError::new(file, document_path(index), format!("invalid YAML: {e}")))?;
        document
            .apply_merge()
            .map_err(|e| InputError::new(file, document_path(index), format!("invalid YAML merge key: {e}")))?;
        documents.push(document);
    }
    Ok(documents)
}

/// Removes `null`-valued mapping entries everywhere, so `null` reads as "absent", as Go's decoder does.
fn strip_nulls(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        match node {
            Value::Mapping(mapping) => {
                mapping.retain(|_, v| !v.is_null());
                stack.extend(mapping.values_mut());
            }
            Value::Sequence(sequence) => stack.extend(sequence.iter_mut()),
            Value::Tagged(tagged) => stack.push(&mut tagged.value),
            _ => {}
        }
    }
}

/// A word for the type of `value`, for error messages.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// Decodes one object (or list of objects) into `out`. `default_kind` is the item kind of an enclosing
/// typed list, whose items the API server writes without a `kind`.
fn collect_objects(
    value: Value,
    default_kind: Option<&str>,
    file: &str,
    out: &mut Vec<Object>,
) -> Result<(), InputError> {
    let Value::Mapping(mut mapping) = value else {
        return Err(InputError::new(
            file,
            "",
            format!("expected a Kubernetes object (a mapping with `kind`), found {}", type_name(&value)),
        ));
    };
    let kind = match mapping.get("kind") {
        Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
        None | Some(Value::String(_)) => match default_kind {
            Some(kind) => kind.to_string(),
            None => return Err(InputError::new(file, "", "missing field `kind`")),
        },
        Some(other) => {
            return Err(InputError::new(file, "kind", format!("expected a string, found {}", type_name(other))));
        }
    };
    if kind == "List" || kind.ends_with("List") {
        let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
        let items = match mapping.remove("items") {
            None => Vec::new(),
            Some(Value::Sequence(items)) => items,
            Some(other) => {
                return Err(InputError::new(
                    file,
                    "items",
                    format!("expected a sequence of objects, found {}", type_name(&other)),
                ));
            }
        };
        for (index, item) in items.into_iter().enumerate() {
            collect_objects(item, item_kind, file, out).map_err(|e| e.within(&format!("items[{index}]")))?;
        }
        return Ok(());
    }
    let value = Value::Mapping(mapping);
    let object = match kind.as_str() {
        "Node" => {
            let node: Node = decode(value, file)?;
            if node.metadata.name.is_empty() && node.metadata.generate_name.is_empty() {
                return Err(InputError::new(file, "metadata", "missing field `name` (or `generateName`)"));
            }
            Object::Node(node)
        }
        "Pod" => {
            let pod: Pod = decode(value, file)?;
            if pod.metadata.name.is_empty() && pod.metadata.generate_name.is_empty() {
                return Err(InputError::new(file, "metadata", "missing field `name` (or `generateName`)"));
            }
            Object::Pod(pod)
        }
        "Namespace" => Object::Namespace(decode(value, file)?),
        "Service" => Object::Service(decode(value, file)?),
        "ReplicaSet" => Object::ReplicaSet(decode(value, file)?),
        "StatefulSet" => Object::StatefulSet(decode(value, file)?),
        "ReplicationController" => Object::ReplicationController(decode(value, file)?),
        "PodDisruptionBudget" => Object::PodDisruptionBudget(decode(value, file)?),
        "PriorityClass" => Object::PriorityClass(decode(value, file)?),
        "PodGroup" => {
            let group: PodGroup = decode(value, file)?;
            group.validate().map_err(|(path, message)| InputError::new(file, path, message))?;
            Object::PodGroup(group)
        }
        "PersistentVolume" => {
            Object::PersistentVolume(named(decode(value, file)?, |o: &PersistentVolume| &o.metadata, file)?)
        }
        "PersistentVolumeClaim" => {
            Object::PersistentVolumeClaim(named(decode(value, file)?, |o: &PersistentVolumeClaim| &o.metadata, file)?)
        }
        "StorageClass" => {
            let class: StorageClass = named(decode(value, file)?, |o: &StorageClass| &o.metadata, file)?;
            if class.provisioner.is_empty() {
                return Err(InputError::new(file, "provisioner", "missing field `provisioner`"));
            }
            Object::StorageClass(class)
        }
        "CSINode" => Object::CsiNode(named(decode(value, file)?, |o: &CsiNode| &o.metadata, file)?),
        "DeviceClass" => Object::DeviceClass(named(decode(value, file)?, |o: &DeviceClass| &o.metadata, file)?),
        "ResourceClaim" => {
            let claim: ResourceClaim = named(decode(value, file)?, |o: &ResourceClaim| &o.metadata, file)?;
            super::resource::validate_claim_spec(&claim.spec)
                .map_err(|(path, message)| InputError::new(file, format!("spec.{path}"), message))?;
            Object::ResourceClaim(claim)
        }
        "ResourceClaimTemplate" => {
            let template: ResourceClaimTemplate =
                named(decode(value, file)?, |o: &ResourceClaimTemplate| &o.metadata, file)?;
            super::resource::validate_claim_spec(&template.spec.spec)
                .map_err(|(path, message)| InputError::new(file, format!("spec.spec.{path}"), message))?;
            Object::ResourceClaimTemplate(template)
        }
        "ResourceSlice" => {
            let slice: ResourceSlice = decode(value, file)?;
            if slice.metadata.name.is_empty() && slice.metadata.generate_name.is_empty() {
                return Err(InputError::new(file, "metadata", "missing field `name` (or `generateName`)"));
            }
            super::resource::validate_slice(&slice).map_err(|(path, message)| InputError::new(file, path, message))?;
            Object::ResourceSlice(slice)
        }
        "DeviceTaintRule" => {
            use super::resource_counters::{validate_taint, DeviceTaintRule};
            let rule: DeviceTaintRule = named(decode(value, file)?, |o: &DeviceTaintRule| &o.metadata, file)?;
            validate_taint(&rule.spec.taint, "spec.taint")
                .map_err(|(path, message)| InputError::new(file, path, message))?;
            Object::DeviceTaintRule(rule)
        }
        "CSIDriver" => Object::CsiDriver(named(decode(value, file)?, |o: &CsiDriver| &o.metadata, file)?),
        "CSIStorageCapacity" => {
            Object::CsiStorageCapacity(named(decode(value, file)?, |o: &CsiStorageCapacity| &o.metadata, file)?)
        }
        _ => {
            let name = value.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
            Object::Other { name: name.to_string(), kind }
        }
    };
    out.push(object);
    Ok(())
}

/// `object` when its `metadata.name` is set (the storage kinds are looked up by name).
fn named<T>(object: T, meta: impl Fn(&T) -> &super::objects::ObjectMeta, file: &str) -> Result<T, InputError> {
    if meta(&object).name.is_empty() {
        return Err(InputError::new(file, "metadata", "missing field `name`"));
    }
    Ok(object)
}

/// Decodes `value` as `T`, turning a failure into an error at the failing field's path.
fn decode<T: DeserializeOwned>(value: Value, file: &str) -> Result<T, InputError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = field_path(e.path().iter());
        InputError::new(file, path, e.into_inner().to_string())
    })
}

/// Renders path segments as `items[3].status.allocatable.cpu`.
fn field_path<'a>(segments: impl Iterator<Item = &'a Segment>) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            Segment::Seq { index } => path.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Segment::Unknown => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push('?');
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::objects::{TaintEffect, TolerationOperator};

    /// `kubectl get nodes,pods -A -o yaml` output, trimmed, with the server-side noise it carries.
    const KUBECTL_LIST: &str = r#"
apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      node.alpha.kubernetes.io/ttl: "0"
    creationTimestamp: "2024-05-01T10:00:00Z"
    labels:
      kubernetes.io/hostname: node-a
      topology.kubernetes.io/zone: zone-1
    managedFields:
    - manager: kubelet
      operation: Update
    name: node-a
    resourceVersion: "123"
    uid: 1b4e
  spec:
    podCIDR: 10.244.0.0/24
    taints:
    - effect: NoSchedule
      key: node-role.kubernetes.io/control-plane
  status:
    addresses:
    - address: 172.18.0.2
      type: InternalIP
    allocatable:
      cpu: "8"
      ephemeral-storage: 100Gi
      memory: 32766Mi
      pods: "110"
    capacity:
      cpu: "8"
      memory: 32868Mi
      pods: "110"
    images:
    - names:
      - registry.k8s.io/pause:3.9
      sizeBytes: 321520
    nodeInfo:
      kubeletVersion: v1.30.0
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: node-b
    name: node-b
  spec:
    unschedulable: true
  status:
    capacity:
      cpu: 4
      memory: 16Gi
- apiVersion: v1
  kind: Pod
  metadata:
    generateName: web-7d9f-
    name: web-7d9f-abcde
    namespace: prod
    labels: {app: web}
    ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: ReplicaSet
      name: web-7d9f
      uid: 9a1c
  spec:
    containers:
    - image: nginx:1.27
      imagePullPolicy: IfNotPresent
      name: nginx
      resources:
        requests: {cpu: 250m, memory: 64Mi}
    nodeName: node-a
    priority: 0
    schedulerName: default-scheduler
    tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
    volumes:
    - name: kube-api-access
      projected: {defaultMode: 420}
  status:
    phase: Running
    startTime: "2024-05-01T10:05:00Z"
    conditions:
    - {type: Ready, status: "True"}
- apiVersion: v1
  kind: Pod
  metadata:
    name: pending
    creationTimestamp: null
  spec:
    containers:
    - name: c
      resources: {}
  status:
    phase: Pending
"#;

    fn parse(text: &str) -> Vec<Object> {
        parse_objects(text, "c.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn kinds_and_names(objects: &[Object]) -> Vec<(String, String)> {
        objects.iter().map(|o| (o.kind().to_string(), o.name().to_string())).collect()
    }

    #[test]
    fn reads_a_kubectl_list() {
        let objects = parse(KUBECTL_LIST);
        assert_eq!(
            kinds_and_names(&objects),
            [("Node", "node-a"), ("Node", "node-b"), ("Pod", "web-7d9f-abcde"), ("Pod", "pending")]
                .map(|(k, n)| (k.to_string(), n.to_string()))
        );
        let Object::Node(a) = &objects[0] else { panic!("not a node") };
        assert_eq!(a.metadata.labels["topology.kubernetes.io/zone"], "zone-1");
        assert_eq!(a.spec.taints[0].effect, TaintEffect::NoSchedule);
        assert_eq!(a.allocatable()["cpu"].milli_value_ceil(), 8000);
        assert_eq!(a.allocatable()["memory"].value_ceil(), 32766 << 20);
        assert_eq!(a.allocatable()["pods"].value_ceil(), 110);
        assert_eq!(a.status.images[0].size_bytes, 321520);
        let Object::Node(b) = &objects[1] else { panic!("not a node") };
        assert!(b.spec.unschedulable);
        assert_eq!(b.allocatable()["memory"].value_ceil(), 16 << 30);
        let Object::Pod(web) = &objects[2] else { panic!("not a pod") };
        assert_eq!(web.namespace(), "prod");
        assert_eq!(web.spec.node_name, "node-a");
        assert_eq!(web.spec.containers[0].resources.requests["cpu"].milli_value_ceil(), 250);
        assert_eq!(web.spec.tolerations[0].operator, Some(TolerationOperator::Exists));
        assert_eq!(web.metadata.owner_references[0].kind, "ReplicaSet");
        let Object::Pod(pending) = &objects[3] else { panic!("not a pod") };
        assert_eq!((pending.namespace(), pending.metadata.creation_timestamp.as_deref()), ("default", None));
    }

    #[test]
    fn reads_multi_document_streams() {
        let text = "# cluster\n---\nkind: Node\nmetadata: {name: n1}\n---\n# only a comment\n---\n\
                    kind: Namespace\nmetadata: {name: ns, labels: {team: a}}\n---\nkind: ConfigMap\nmetadata: {name: cm}\n---\n";
        let objects = parse(text);
        assert_eq!(
            kinds_and_names(&objects),
            [("Node", "n1"), ("Namespace", "ns"), ("ConfigMap", "cm")].map(|(k, n)| (k.to_string(), n.to_string()))
        );
    }

    #[test]
    fn reads_every_supported_kind() {
        let text = r#"
kind: List
items:
- {kind: Service, metadata: {name: s}, spec: {selector: {app: a}}}
- {kind: ReplicaSet, metadata: {name: rs}, spec: {selector: {matchLabels: {app: a}}}}
- {kind: StatefulSet, metadata: {name: ss}, spec: {selector: {matchLabels: {app: a}}}}
- {kind: ReplicationController, metadata: {name: rc}, spec: {selector: {app: a}}}
- {kind: PodDisruptionBudget, metadata: {name: pdb}, spec: {maxUnavailable: "10%"}}
- {kind: PriorityClass, metadata: {name: high}, value: 1000}
- {kind: Namespace, metadata: {name: ns}}
- {kind: Deployment, metadata: {name: d}}
- {kind: List, items: [{kind: NodeList, items: [{metadata: {name: nested}}]}]}
"#;
        let objects = parse(text);
        assert_eq!(
            objects.iter().map(Object::kind).collect::<Vec<_>>(),
            [
                "Service",
                "ReplicaSet",
                "StatefulSet",
                "ReplicationController",
                "PodDisruptionBudget",
                "PriorityClass",
                "Namespace",
                "Deployment",
                "Node"
            ]
        );
        assert_eq!(objects[8].name(), "nested");
        let Object::PriorityClass(pc) = &objects[5] else { panic!("not a priority class") };
        assert_eq!(pc.value, 1000);
    }

    #[test]
    fn reads_json() {
        let list = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": 2.5, "memory": "1Gi"}}},
            {"kind": "Pod", "metadata": {"name": "p1", "namespace": null}, "spec": {"containers": [{"name": "c"}]}}
        ]}"#;
        let objects = parse(list);
        assert_eq!(
            kinds_and_names(&objects),
            [("Node", "n1"), ("Pod", "p1")].map(|(k, n)| (k.to_string(), n.to_string()))
        );
        let Object::Node(n) = &objects[0] else { panic!("not a node") };
        assert_eq!(n.allocatable()["cpu"].milli_value_ceil(), 2500);
        // A raw API response: a typed list whose items carry no kind; two concatenated JSON values.
        let stream = r#"{"kind": "PodList", "items": [{"metadata": {"name": "a"}}]} {"kind": "Node", "metadata": {"name": "n"}}"#;
        assert_eq!(
            kinds_and_names(&parse(stream)),
            [("Pod", "a"), ("Node", "n")].map(|(k, n)| (k.to_string(), n.to_string()))
        );
    }

    #[test]
    fn reads_numeric_quantities() {
        let objects = parse(
            "kind: Node\nmetadata: {name: n}\nstatus: {capacity: {cpu: 1.5, memory: 1e3, pods: 110, gpu: \"2\"}}\n",
        );
        let Object::Node(n) = &objects[0] else { panic!("not a node") };
        let capacity: Vec<(&str, i64)> =
            n.allocatable().iter().map(|(k, q)| (k.as_str(), q.milli_value_ceil())).collect();
        assert_eq!(capacity, [("cpu", 1500), ("gpu", 2000), ("memory", 1_000_000), ("pods", 110_000)]);
    }

    #[test]
    fn reads_flow_style_yaml_that_looks_like_json() {
        let objects = parse("{kind: Node, metadata: {name: n}}\n---\n{kind: Pod, metadata: {name: p}}\n");
        assert_eq!(
            kinds_and_names(&objects),
            [("Node", "n"), ("Pod", "p")].map(|(k, n)| (k.to_string(), n.to_string()))
        );
    }

    #[test]
    fn ignores_unknown_fields_and_skips_empty_input() {
        let objects = parse("kind: Node\nfoo: 1\nmetadata: {name: n, bar: [1]}\nspec: {baz: {}}\nstatus: {qux: x}\n");
        assert_eq!(kinds_and_names(&objects), [("Node".to_string(), "n".to_string())]);
        assert!(parse("").is_empty());
        assert!(parse("---\n---\n# nothing\n").is_empty());
        assert!(parse("kind: List\nitems: null\n").is_empty());
    }

    #[test]
    fn applies_yaml_merge_keys() {
        let text = "kind: List\nitems:\n- &n {kind: Node, metadata: {name: a}, spec: {unschedulable: true}}\n\
                    - {<<: *n, metadata: {name: b}}\n";
        let objects = parse(text);
        let Object::Node(b) = &objects[1] else { panic!("not a node") };
        assert_eq!((b.metadata.name.as_str(), b.spec.unschedulable), ("b", true));
    }

    #[test]
    fn errors_name_the_field() {
        let check = |text: &str, expected: &str| {
            let got = parse_objects(text, "c.yaml").map(|o| kinds_and_names(&o)).map_err(|e| e.to_string());
            assert_eq!(got, Err(expected.to_string()), "{text}");
        };
        let bad_quantity = KUBECTL_LIST.replacen("cpu: 4", "cpu: 4x", 1);
        check(&bad_quantity, "c.yaml: items[1].status.capacity.cpu: \"4x\" is not a quantity");
        check(
            "kind: List\nitems:\n- {kind: Node, metadata: {name: a}}\n- {kind: Node, metadata: {name: b}}\n- {kind: Node, metadata: {name: c}}\n\
             - {kind: Node, metadata: {name: d}, status: {allocatable: {cpu: 4x}}}\n",
            "c.yaml: items[3].status.allocatable.cpu: \"4x\" is not a quantity",
        );
        check(
            "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b}\nspec: {taints: [{key: k}]}\n",
            "c.yaml: documents[1].spec.taints[0]: missing field `effect`",
        );
        check(
            "kind: Node\nmetadata: {name: a}\nspec: {taints: [{effect: NoSchedule}]}\n",
            "c.yaml: spec.taints[0]: missing field `key`",
        );
        check("metadata: {name: a}\n", "c.yaml: missing field `kind`");
        check(
            "kind: Node\nmetadata: {name: a}\n---\n---\nkind: Node\n",
            "c.yaml: documents[2].metadata: missing field `name` (or `generateName`)",
        );
        check(
            "kind: List\nitems: [{kind: Node, metadata: {name: a}}, {metadata: {name: b}}]\n",
            "c.yaml: items[1]: missing field `kind`",
        );
        check("kind: 3\n", "c.yaml: kind: expected a string, found a number");
        check("kind: List\nitems: {a: 1}\n", "c.yaml: items: expected a sequence of objects, found a mapping");
        check("just text\n", "c.yaml: expected a Kubernetes object (a mapping with `kind`), found a string");
        check("kind: Node\nspec: {}\n", "c.yaml: metadata: missing field `name` (or `generateName`)");
        check("kind: Node\nmetadata: {name: null}\n", "c.yaml: metadata: missing field `name` (or `generateName`)");
        check("kind: Pod\nmetadata: {namespace: x}\n", "c.yaml: metadata: missing field `name` (or `generateName`)");
        check(
            "kind: Pod\nmetadata: {name: p}\nspec: {tolerations: [{operator: Maybe}]}\n",
            "c.yaml: spec.tolerations[0].operator: unknown variant `Maybe`, expected `Exists` or `Equal`",
        );
        check(
            "kind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        \
             nodeSelectorTerms: [{matchExpressions: [{key: k, values: [a]}]}]\n",
            "c.yaml: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]\
             .matchExpressions[0]: missing field `operator`",
        );
        check(
            "kind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      \
             - labelSelector: {matchExpressions: [{key: k, operator: Gt}]}\n        topologyKey: zone\n",
            "c.yaml: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0]\
             .operator: unknown variant `Gt`, expected one of `In`, `NotIn`, `Exists`, `DoesNotExist`",
        );
        check(
            "kind: Node\nmetadata: {name: n}\nspec: {unschedulable: yes}\n",
            "c.yaml: spec.unschedulable: invalid type: string \"yes\", expected a boolean",
        );
        check(
            "kind: Pod\nmetadata: {name: p, labels: {v: 1}}\n",
            "c.yaml: metadata.labels.v: invalid type: integer `1`, expected a string",
        );
        check(
            "kind: Pod\nmetadata: {name: p}\nspec: {priority: high}\n",
            "c.yaml: spec.priority: invalid type: string \"high\", expected i32",
        );
        check(
            "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}, \"status\": {\"capacity\": {\"cpu\": \"1 Gi\"}}}",
            "c.yaml: status.capacity.cpu: \"1 Gi\" is not a quantity",
        );
    }

    #[test]
    fn syntax_errors_give_the_location() {
        let check = |text: &str, expected_prefix: &str| {
            let err = parse_objects(text, "c.yaml").unwrap_err().to_string();
            assert!(err.starts_with(expected_prefix), "{text:?} gave {err}");
            assert!(err.contains("line"), "{err}");
        };
        check("kind: Node\nmetadata: {name: a\n", "c.yaml: invalid YAML: ");
        check("kind: Node\n---\nkind: [\n", "c.yaml: documents[1]: invalid YAML: ");
        check("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}", "c.yaml: invalid JSON: ");
    }

    #[test]
    fn loads_files() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = dir.path().join("nodes.yaml");
        let pods = dir.path().join("pods.json");
        std::fs::write(&nodes, "kind: Node\nmetadata: {name: n}\n").unwrap();
        std::fs::write(&pods, r#"{"kind": "Pod", "metadata": {"name": "p"}}"#).unwrap();
        let objects = load_object_files(&[nodes.clone(), pods]).unwrap();
        assert_eq!(
            kinds_and_names(&objects),
            [("Node", "n"), ("Pod", "p")].map(|(k, n)| (k.to_string(), n.to_string()))
        );
        std::fs::write(&nodes, "kind: Node\nmetadata: {}\n").unwrap();
        let err = load_objects(&nodes).unwrap_err();
        assert_eq!((err.file, err.path), (nodes.display().to_string(), "metadata".to_string()));
        let missing = dir.path().join("missing.yaml");
        let err = load_objects(&missing).unwrap_err();
        assert_eq!(err.file, missing.display().to_string());
        assert!(err.message.starts_with("cannot read the file: "), "{}", err.message);
        assert!(err.message.contains("os error 2"), "{}", err.message);
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(text in proptest::prelude::any::<String>()) {
            let _ = parse_objects(&text, "fuzz.yaml");
        }

        #[test]
        fn parse_never_panics_on_manifest_alphabet(text in "(kind: |List|Node|Pod|items|metadata|name|status|capacity|cpu|[-:{}\\[\\],\"\n 0-9a-z.]){0,60}") {
            let _ = parse_objects(&text, "fuzz.yaml");
        }
    }
}
