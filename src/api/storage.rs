//! The storage objects the volume plugins read: a pod's volumes, PersistentVolume,
//! PersistentVolumeClaim (core/v1), StorageClass and CSINode (storage.k8s.io/v1). Only the fields
//! VolumeBinding, VolumeRestrictions, VolumeZone and NodeVolumeLimits read; unknown fields are
//! ignored, a field of the wrong type or an unknown enum value is an error naming the field.

use serde::{Deserialize, Serialize};

use super::objects::{LabelSelector, NodeSelector, ObjectMeta, ResourceRequirements};

/// `v1.Volume`: the sources the volume plugins read. A volume of another kind (emptyDir,
/// configMap, secret, hostPath, ...) has none of them set and is nothing to these plugins.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub persistent_volume_claim: Option<PersistentVolumeClaimVolumeSource>,
    /// Generic ephemeral volume: its claim is named `<pod name>-<volume name>`.
    #[serde(default)]
    pub ephemeral: Option<EphemeralVolumeSource>,
    #[serde(default)]
    pub gce_persistent_disk: Option<GcePersistentDiskVolumeSource>,
    #[serde(default)]
    pub aws_elastic_block_store: Option<AwsElasticBlockStoreVolumeSource>,
    #[serde(default)]
    pub rbd: Option<RbdVolumeSource>,
    #[serde(default)]
    pub iscsi: Option<IscsiVolumeSource>,
    /// An inline (ephemeral) CSI volume: no plugin counts or checks it.
    #[serde(default)]
    pub csi: Option<CsiVolumeSource>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolumeClaimVolumeSource {
    #[serde(default)]
    pub claim_name: String,
    #[serde(default)]
    pub read_only: bool,
}

/// `v1.EphemeralVolumeSource`; the template is not read (the claim it makes must exist).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralVolumeSource {
    #[serde(default)]
    pub volume_claim_template: Option<serde_norway::Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcePersistentDiskVolumeSource {
    pub pd_name: String,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AwsElasticBlockStoreVolumeSource {
    #[serde(rename = "volumeID")]
    pub volume_id: String,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RbdVolumeSource {
    pub monitors: Vec<String>,
    pub image: String,
    /// Defaulted to `rbd` by the API server.
    #[serde(default)]
    pub pool: String,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IscsiVolumeSource {
    pub iqn: String,
    #[serde(default)]
    pub target_portal: String,
    #[serde(default)]
    pub read_only: bool,
}

/// `v1.CSIVolumeSource` (inline) and the driver/handle of `v1.CSIPersistentVolumeSource`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiVolumeSource {
    pub driver: String,
    /// Set in a PersistentVolume's source only.
    #[serde(default)]
    pub volume_handle: String,
    #[serde(default)]
    pub read_only: bool,
}

/// `v1.PersistentVolumeAccessMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum AccessMode {
    ReadWriteOnce,
    ReadOnlyMany,
    ReadWriteMany,
    ReadWriteOncePod,
}

/// `v1.PersistentVolume`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolume {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PersistentVolumeSpec,
    #[serde(default)]
    pub status: PersistentVolumeStatus,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolumeSpec {
    #[serde(default)]
    pub capacity: super::objects::ResourceList,
    #[serde(default)]
    pub access_modes: Vec<AccessMode>,
    #[serde(default)]
    pub claim_ref: Option<ObjectReference>,
    #[serde(default)]
    pub storage_class_name: String,
    #[serde(default)]
    pub node_affinity: Option<VolumeNodeAffinity>,
    #[serde(default)]
    pub csi: Option<CsiVolumeSource>,
    #[serde(default)]
    pub gce_persistent_disk: Option<GcePersistentDiskVolumeSource>,
    #[serde(default)]
    pub aws_elastic_block_store: Option<AwsElasticBlockStoreVolumeSource>,
    /// Defaulted to `Filesystem` by the API server.
    #[serde(default)]
    pub volume_mode: Option<PersistentVolumeMode>,
}

/// `v1.PersistentVolumeMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum PersistentVolumeMode {
    Block,
    Filesystem,
}

/// `v1.VolumeNodeAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeNodeAffinity {
    #[serde(default)]
    pub required: Option<NodeSelector>,
}

/// `v1.ObjectReference`: a PV's `claimRef`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolumeStatus {
    #[serde(default)]
    pub phase: Option<PersistentVolumePhase>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum PersistentVolumePhase {
    Pending,
    Available,
    Bound,
    Released,
    Failed,
}

/// `v1.PersistentVolumeClaim`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolumeClaim {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PersistentVolumeClaimSpec,
    #[serde(default)]
    pub status: PersistentVolumeClaimStatus,
}

impl PersistentVolumeClaim {
    /// The claim's namespace: `default` when unset.
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() {
            "default"
        } else {
            &self.metadata.namespace
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolumeClaimSpec {
    #[serde(default)]
    pub access_modes: Vec<AccessMode>,
    #[serde(default)]
    pub volume_name: String,
    /// `None` (unset) and `Some("")` differ upstream only for the default class admission.
    #[serde(default)]
    pub storage_class_name: Option<String>,
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// The labels a volume must carry to be bound to the claim (`None`: any).
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    /// Defaulted to `Filesystem` by the API server.
    #[serde(default)]
    pub volume_mode: Option<PersistentVolumeMode>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentVolumeClaimStatus {
    #[serde(default)]
    pub phase: Option<PersistentVolumeClaimPhase>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum PersistentVolumeClaimPhase {
    Pending,
    Bound,
    Lost,
}

/// `storage.k8s.io/v1` StorageClass (its fields are top-level: there is no `spec`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageClass {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub provisioner: String,
    /// Defaulted to `Immediate` by the API server.
    #[serde(default)]
    pub volume_binding_mode: Option<VolumeBindingMode>,
    #[serde(default)]
    pub allowed_topologies: Vec<TopologySelectorTerm>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum VolumeBindingMode {
    Immediate,
    WaitForFirstConsumer,
}

/// `v1.TopologySelectorTerm`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySelectorTerm {
    #[serde(default)]
    pub match_label_expressions: Vec<TopologySelectorLabelRequirement>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySelectorLabelRequirement {
    pub key: String,
    #[serde(default)]
    pub values: Vec<String>,
}

/// `storage.k8s.io/v1` CSINode: named after its node.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiNode {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: CsiNodeSpec,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiNodeSpec {
    #[serde(default)]
    pub drivers: Vec<CsiNodeDriver>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiNodeDriver {
    pub name: String,
    #[serde(default, rename = "nodeID")]
    pub node_id: String,
    #[serde(default)]
    pub allocatable: Option<VolumeNodeResources>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeNodeResources {
    #[serde(default)]
    pub count: Option<i32>,
}

/// `storage.k8s.io/v1` CSIDriver: VolumeBinding reads `spec.storageCapacity` of the driver named
/// after a class's provisioner (whether CSIStorageCapacity objects limit provisioning).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiDriver {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: CsiDriverSpec,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiDriverSpec {
    #[serde(default)]
    pub storage_capacity: Option<bool>,
}

/// `storage.k8s.io/v1` CSIStorageCapacity (namespaced; its fields are top-level).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiStorageCapacity {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub storage_class_name: String,
    /// The nodes with access to this capacity (`None`: none).
    #[serde(default)]
    pub node_topology: Option<LabelSelector>,
    #[serde(default)]
    pub capacity: Option<super::quantity::Quantity>,
    #[serde(default)]
    pub maximum_volume_size: Option<super::quantity::Quantity>,
}
