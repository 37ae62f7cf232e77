//! The subset of the Kubernetes API the scheduler reads, as serde types.
//!
//! Types and fields mirror k8s.io/api `core/v1`, `apps/v1`, `policy/v1` and `scheduling/v1`: Go's
//! `NodeSelectorTerm.MatchExpressions` is [`NodeSelectorTerm::match_expressions`] here, read from
//! `matchExpressions`. Unknown fields are ignored, as the API server's lenient decoding does. Optional
//! lists and maps default to empty; fields the API server requires (a taint's `key` and `effect`, a
//! selector requirement's `key` and `operator`, ...) are required here too. Enums accept exactly the
//! Kubernetes strings, and a wrong string is an error that lists the allowed ones.
//!
//! Explicit `null`s are removed by the loader before these types see them, so `null` means "absent"
//! everywhere, as in Go.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, IntoDeserializer, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::quantity::Quantity;

/// Resource amounts by resource name (`cpu`, `memory`, `pods`, `ephemeral-storage`, extended resources).
pub type ResourceList = BTreeMap<String, Quantity>;

/// Reads an optional enum where the empty string means "unset", as Go's zero value does (a toleration
/// with `effect: ""` tolerates every effect).
fn empty_as_none<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    match Option::<String>::deserialize(deserializer)? {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => T::deserialize(s.as_str().into_deserializer()).map(Some),
    }
}

/// `metav1.ObjectMeta`: name, namespace, labels and the ownership fields the scheduler uses.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub generate_name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub owner_references: Vec<OwnerReference>,
    /// RFC 3339 time at which deletion was requested; a pod being deleted is not scheduled.
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
    /// RFC 3339 creation time.
    #[serde(default)]
    pub creation_timestamp: Option<String>,
    /// Finalizers (DRA: the scheduler's `resource.kubernetes.io/delete-protection` on a claim it
    /// allocated, which lets the resourceclaim controller deallocate it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

/// `metav1.OwnerReference`: the object (ReplicaSet, StatefulSet, ...) that owns this one.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    /// Whether this owner is the managing controller.
    #[serde(default)]
    pub controller: Option<bool>,
}

/// `metav1.LabelSelector`. An absent selector (`None` where it is optional) matches nothing; an empty
/// one matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `metav1.LabelSelectorRequirement`: `key operator values`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: LabelSelectorOperator,
    #[serde(default)]
    pub values: Vec<String>,
}

/// `metav1.LabelSelectorOperator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum LabelSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// `v1.Pod`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

impl Pod {
    /// The pod's namespace: `default` when unset, as the API server defaults it.
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() {
            "default"
        } else {
            &self.metadata.namespace
        }
    }
}

/// `v1.PodSpec`: the fields that decide where a pod can run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// The node the pod is bound to; empty while unscheduled.
    #[serde(default)]
    pub node_name: String,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub affinity: Option<Affinity>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    #[serde(default)]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(default)]
    pub init_containers: Vec<Container>,
    /// Resources for the pod sandbox, added to the containers' requests.
    #[serde(default)]
    pub overhead: ResourceList,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub priority_class_name: String,
    #[serde(default, deserialize_with = "empty_as_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// The scheduler profile that schedules this pod; empty means `default-scheduler`.
    #[serde(default)]
    pub scheduler_name: String,
    #[serde(default)]
    pub scheduling_gates: Vec<PodSchedulingGate>,
    #[serde(default)]
    pub host_network: bool,
    /// `spec.hostUsers`: `Some(false)` runs the pod in a user namespace (NodeDeclaredFeatures'
    /// UserNamespacesHostNetworkSupport with `hostNetwork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_users: Option<bool>,
    /// `spec.ephemeralContainers`: only their volume mounts are read (NodeDeclaredFeatures'
    /// VolumeBindMountOptions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ephemeral_containers: Vec<Container>,
    /// Pod-level requests and limits (`spec.resources`, PodLevelResources).
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// `spec.schedulingGroup` (v1.37): the PodGroup the pod belongs to, read with GenericWorkload on.
    #[serde(default)]
    pub scheduling_group: Option<PodSchedulingGroup>,
    /// The pod's volumes (what the volume plugins read of them: `super::storage::Volume`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<super::storage::Volume>,
    /// `spec.resourceClaims`: the DRA claims the pod uses (`super::resource`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<super::resource::PodResourceClaim>,
}

/// `v1.PodSchedulingGroup`: the runtime scheduling group a pod belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSchedulingGroup {
    /// The name of the PodGroup object in the pod's namespace.
    #[serde(default)]
    pub pod_group_name: Option<String>,
}

/// `v1.PodSchedulingGate`: while a pod has gates, it is not scheduled.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSchedulingGate {
    pub name: String,
}

/// `v1.PreemptionPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum PreemptionPolicy {
    PreemptLowerPriority,
    Never,
}

/// `v1.PodStatus`: the parts the scheduler reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    /// The node a preemptor was nominated to, while its victims terminate.
    #[serde(default)]
    pub nominated_node_name: String,
    #[serde(default, deserialize_with = "empty_as_none")]
    pub phase: Option<PodPhase>,
    /// RFC 3339 time the kubelet acknowledged the pod (preemption prefers victims started later).
    #[serde(default)]
    pub start_time: Option<String>,
    /// The claims the resourceclaim controller made for the pod's template entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_claim_statuses: Vec<super::resource::PodResourceClaimStatus>,
}

/// `v1.PodPhase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

/// `v1.Container`: name, image, resources and ports.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub resources: ResourceRequirements,
    #[serde(default)]
    pub ports: Vec<ContainerPort>,
    /// `Always` on an init container makes it a sidecar that keeps running.
    #[serde(default)]
    pub restart_policy: Option<String>,
    /// `restartPolicyRules`: only each rule's action is read (NodeDeclaredFeatures'
    /// RestartAllContainersOnContainerExits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_policy_rules: Vec<ContainerRestartRule>,
    /// `volumeMounts`: only `bindMountOptions` is read (NodeDeclaredFeatures'
    /// VolumeBindMountOptions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
}

/// `v1.ContainerRestartRule`: the action (`Restart`, `RestartAllContainers`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRestartRule {
    #[serde(default)]
    pub action: String,
}

/// `v1.VolumeMount`: the fields the scheduler reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bind_mount_options: Vec<String>,
}

/// `v1.ResourceRequirements`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirements {
    #[serde(default)]
    pub requests: ResourceList,
    #[serde(default)]
    pub limits: ResourceList,
}

/// `v1.ContainerPort`. A non-zero `host_port` occupies that port on the node (NodePorts plugin).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    #[serde(default)]
    pub name: String,
    pub container_port: i32,
    #[serde(default)]
    pub host_port: i32,
    #[serde(default, rename = "hostIP")]
    pub host_ip: String,
    /// `TCP`, `UDP` or `SCTP`; unset means `TCP`.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// `v1.Affinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(default)]
    pub node_affinity: Option<NodeAffinity>,
    #[serde(default)]
    pub pod_affinity: Option<PodAffinity>,
    #[serde(default)]
    pub pod_anti_affinity: Option<PodAntiAffinity>,
}

/// `v1.NodeAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinity {
    #[serde(default)]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// `None` when absent or null; `Some` (even empty) when set, as Go's nil / non-nil slice:
    /// NodeAffinity's PreScore skips only a pod whose list is nil.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_during_scheduling_ignored_during_execution: Option<Vec<PreferredSchedulingTerm>>,
}

/// `v1.NodeSelector`: the terms are ORed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    #[serde(default)]
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// `v1.NodeSelectorTerm`: the requirements are ANDed; an empty term matches nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    #[serde(default)]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(default)]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// `v1.NodeSelectorRequirement`: `key operator values` over node labels (or fields).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorRequirement {
    pub key: String,
    pub operator: NodeSelectorOperator,
    #[serde(default)]
    pub values: Vec<String>,
}

/// `v1.NodeSelectorOperator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum NodeSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

/// `v1.PreferredSchedulingTerm`: a weighted node preference (weight 1-100).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreferredSchedulingTerm {
    pub weight: i32,
    pub preference: NodeSelectorTerm,
}

/// `v1.PodAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinity {
    #[serde(default)]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    #[serde(default)]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// `v1.PodAntiAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAntiAffinity {
    #[serde(default)]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    #[serde(default)]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// `v1.PodAffinityTerm`: pods matching the selector in the namespaces, within one topology domain.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinityTerm {
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Namespaces to match; with no `namespace_selector` either, the pod's own namespace.
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub namespace_selector: Option<LabelSelector>,
    pub topology_key: String,
    #[serde(default)]
    pub match_label_keys: Vec<String>,
    #[serde(default)]
    pub mismatch_label_keys: Vec<String>,
}

/// `v1.WeightedPodAffinityTerm` (weight 1-100).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPodAffinityTerm {
    pub weight: i32,
    pub pod_affinity_term: PodAffinityTerm,
}

/// `v1.Toleration`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// The taint key; empty with operator `Exists` tolerates every taint.
    #[serde(default)]
    pub key: String,
    /// Unset means `Equal`.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub operator: Option<TolerationOperator>,
    #[serde(default)]
    pub value: String,
    /// Unset tolerates every effect.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub effect: Option<TaintEffect>,
    /// How long a `NoExecute` taint is tolerated; unset means forever.
    #[serde(default)]
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// Whether this toleration tolerates `taint`, as upstream's `Toleration.ToleratesTaint` (core/v1
    /// `toleration.go`): an unset effect matches every effect, an empty key matches every key, `Exists`
    /// matches every value and `Equal` (or unset) needs an equal value.
    pub fn tolerates_taint(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|effect| effect != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            None | Some(TolerationOperator::Equal) => self.value == taint.value,
            Some(TolerationOperator::Exists) => true,
        }
    }
}

/// `v1.TolerationOperator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum TolerationOperator {
    Exists,
    Equal,
}

/// `v1.Taint`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    #[serde(default)]
    pub value: String,
    pub effect: TaintEffect,
}

/// `v1.TaintEffect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

/// `v1.TopologySpreadConstraint`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: UnsatisfiableConstraintAction,
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    #[serde(default)]
    pub min_domains: Option<i32>,
    /// Unset means `Honor`.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub node_affinity_policy: Option<NodeInclusionPolicy>,
    /// Unset means `Ignore`.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub node_taints_policy: Option<NodeInclusionPolicy>,
    #[serde(default)]
    pub match_label_keys: Vec<String>,
}

/// `v1.UnsatisfiableConstraintAction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum UnsatisfiableConstraintAction {
    DoNotSchedule,
    ScheduleAnyway,
}

/// `v1.NodeInclusionPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum NodeInclusionPolicy {
    Honor,
    Ignore,
}

/// `v1.Node`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: NodeSpec,
    #[serde(default)]
    pub status: NodeStatus,
}

impl Node {
    /// The resources pods may use: `status.allocatable`, or `status.capacity` when allocatable is
    /// absent as a whole (hand-written manifests often give only one of them).
    pub fn allocatable(&self) -> &ResourceList {
        if self.status.allocatable.is_empty() {
            &self.status.capacity
        } else {
            &self.status.allocatable
        }
    }
}

/// `v1.NodeSpec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub unschedulable: bool,
}

/// `v1.NodeStatus`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    #[serde(default)]
    pub allocatable: ResourceList,
    #[serde(default)]
    pub capacity: ResourceList,
    #[serde(default)]
    pub images: Vec<ContainerImage>,
    /// `status.declaredFeatures` (NodeDeclaredFeatures): the features the node's kubelet declares,
    /// kept as given (the apiserver requires them sorted and unique; the scheduler maps them with
    /// a merge walk that assumes so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_features: Vec<String>,
}

/// `v1.ContainerImage`: an image present on a node (ImageLocality plugin).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerImage {
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub size_bytes: i64,
}

/// `v1.Namespace` (its labels feed affinity terms' `namespace_selector`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Namespace {
    #[serde(default)]
    pub metadata: ObjectMeta,
}

/// `v1.Service` (its selector feeds default topology spreading).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ServiceSpec,
}

/// `v1.ServiceSpec`: only the selector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    #[serde(default)]
    pub selector: BTreeMap<String, String>,
}

/// `apps/v1.ReplicaSet`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSet {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ReplicaSetSpec,
}

/// `apps/v1.ReplicaSetSpec`: replicas and selector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSetSpec {
    #[serde(default)]
    pub replicas: Option<i32>,
    /// Absent matches nothing (Go's nil selector).
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

/// `apps/v1.StatefulSet`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSet {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: StatefulSetSpec,
}

/// `apps/v1.StatefulSetSpec`: replicas and selector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetSpec {
    #[serde(default)]
    pub replicas: Option<i32>,
    /// Absent matches nothing (Go's nil selector).
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

/// `v1.ReplicationController`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationController {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ReplicationControllerSpec,
}

/// `v1.ReplicationControllerSpec`: replicas and a plain label-map selector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationControllerSpec {
    #[serde(default)]
    pub replicas: Option<i32>,
    #[serde(default)]
    pub selector: BTreeMap<String, String>,
}

/// `policy/v1.PodDisruptionBudget` (preemption prefers victims whose eviction violates none).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodDisruptionBudgetSpec,
    #[serde(default)]
    pub status: PodDisruptionBudgetStatus,
}

/// `policy/v1.PodDisruptionBudgetSpec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetSpec {
    #[serde(default)]
    pub min_available: Option<IntOrString>,
    #[serde(default)]
    pub max_unavailable: Option<IntOrString>,
    /// Absent matches nothing; empty matches every pod in the namespace.
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

/// `policy/v1.PodDisruptionBudgetStatus`: what preemption reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetStatus {
    #[serde(default)]
    pub disruptions_allowed: i32,
    #[serde(default)]
    pub current_healthy: i32,
    #[serde(default)]
    pub desired_healthy: i32,
    #[serde(default)]
    pub expected_pods: i32,
    /// Pods already evicted but not yet gone, by name, with the eviction time.
    #[serde(default)]
    pub disrupted_pods: BTreeMap<String, String>,
}

/// `scheduling/v1.PriorityClass`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PriorityClass {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub value: i32,
    #[serde(default)]
    pub global_default: bool,
    #[serde(default)]
    pub description: String,
    #[serde(default, deserialize_with = "empty_as_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
}

/// `scheduling.k8s.io/v1beta1` (and `v1alpha3`) `PodGroup`: pods scheduled together under one
/// policy. Decoded strictly, as upstream's harness creates it (`FieldValidation: Strict`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroup {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: PodGroupSpec,
    /// Conditions written by the scheduler; kept as written (a cluster dump carries them).
    #[serde(default)]
    pub status: Option<serde_norway::Value>,
}

/// `PodGroupSpec`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSpec {
    pub scheduling_policy: PodGroupSchedulingPolicy,
    /// Resolved from `priorityClassName` by admission; unset means 0 (`PodGroupPriority`).
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub priority_class_name: String,
    #[serde(default)]
    pub disruption_mode: Option<DisruptionMode>,
    /// Read only with PodGroupPreemptionPolicy on.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
    #[serde(default)]
    pub workload_ref: Option<serde_norway::Value>,
    /// Read only with CompositePodGroup on.
    #[serde(default)]
    pub parent_composite_pod_group_name: Option<String>,
    /// Read only with TopologyAwareWorkloadScheduling on (TopologyPlacementGenerator).
    #[serde(default)]
    pub scheduling_constraints: Option<PodGroupSchedulingConstraints>,
    /// Read only with DRAWorkloadResourceClaims on: the claims the group's pods share.
    #[serde(default)]
    pub resource_claims: Vec<PodGroupResourceClaim>,
}

/// `PodGroupResourceClaim`: a claim shared by the group's pods, named directly or made from a
/// template (exactly one of the two). A pod's `spec.resourceClaims` entry with the same three
/// fields resolves to it (`resourceclaim.BindTo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupResourceClaim {
    pub name: String,
    #[serde(default)]
    pub resource_claim_name: Option<String>,
    #[serde(default)]
    pub resource_claim_template_name: Option<String>,
}

/// `PodGroupSchedulingPolicy`: exactly one of `basic` and `gang`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSchedulingPolicy {
    #[serde(default)]
    pub basic: Option<EmptyPolicy>,
    #[serde(default)]
    pub gang: Option<GangSchedulingPolicy>,
}

/// An empty policy object (`basic: {}`, `single: {}`, `all: {}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmptyPolicy {}

/// `GangSchedulingPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GangSchedulingPolicy {
    pub min_count: i32,
}

/// `PodGroupSchedulingConstraints`: at most one topology constraint (`+k8s:maxItems=1`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSchedulingConstraints {
    #[serde(default)]
    pub topology: Vec<TopologyConstraint>,
}

/// `TopologyConstraint`: the node label whose one value every pod of the group shares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyConstraint {
    pub key: String,
}

/// `DisruptionMode`: exactly one of `single` and `all`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DisruptionMode {
    #[serde(default)]
    pub single: Option<EmptyPolicy>,
    #[serde(default)]
    pub all: Option<EmptyPolicy>,
}

/// The API versions that serve `PodGroup` at v1.37.2.
pub const POD_GROUP_API_VERSIONS: &[&str] = &["scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"];

/// The largest priority a user may set (`HighestUserDefinablePriority`).
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

impl PodGroup {
    /// The group's namespace: `default` when unset.
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() {
            "default"
        } else {
            &self.metadata.namespace
        }
    }

    /// `gang.minCount` for a gang policy, `None` for basic.
    pub fn min_count(&self) -> Option<u32> {
        self.spec.scheduling_policy.gang.as_ref().map(|g| g.min_count.max(1) as u32)
    }

    /// The topology key of `spec.schedulingConstraints.topology[0]` (TopologyPlacementGenerator's
    /// `getTopologyKey`: only the first constraint is read).
    pub fn topology_key(&self) -> Option<&str> {
        self.spec.scheduling_constraints.as_ref()?.topology.first().map(|t| t.key.as_str())
    }

    /// `PodGroupPriority`: `spec.priority`, or 0 when unset.
    pub fn priority(&self) -> i32 {
        self.spec.priority.unwrap_or(0)
    }

    /// What the API server's validation rejects: `(field path, expectation)`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, m: String| Err((f.to_string(), m));
        if !self.api_version.is_empty() && !POD_GROUP_API_VERSIONS.contains(&self.api_version.as_str()) {
            return err(
                "apiVersion",
                format!("{:?}: expected one of {}", self.api_version, POD_GROUP_API_VERSIONS.join(", ")),
            );
        }
        if self.metadata.name.is_empty() {
            return err(
                "metadata.name",
                "missing: a PodGroup needs a name (pods name it in spec.schedulingGroup)".into(),
            );
        }
        let p = &self.spec.scheduling_policy;
        match (&p.basic, &p.gang) {
            (Some(_), Some(_)) => {
                return err("spec.schedulingPolicy", "both basic and gang are set: expected exactly one".into())
            }
            (None, None) => {
                return err("spec.schedulingPolicy", "neither basic nor gang is set: expected exactly one".into())
            }
            (None, Some(g)) if g.min_count < 1 => {
                return err("spec.schedulingPolicy.gang.minCount", format!("{}: expected an integer >= 1", g.min_count))
            }
            _ => {}
        }
        if let Some(pr) = self.spec.priority {
            if pr > HIGHEST_USER_DEFINABLE_PRIORITY {
                return err("spec.priority", format!("{pr}: expected at most {HIGHEST_USER_DEFINABLE_PRIORITY}"));
            }
        }
        if let Some(d) = &self.spec.disruption_mode {
            if d.single.is_some() == d.all.is_some() {
                return err("spec.disruptionMode", "expected exactly one of single and all".into());
            }
        }
        for (i, c) in self.spec.resource_claims.iter().enumerate() {
            let field = format!("spec.resourceClaims[{i}]");
            if c.name.is_empty() {
                return err(&format!("{field}.name"), "missing: expected the claim's name in the group".into());
            }
            match (&c.resource_claim_name, &c.resource_claim_template_name) {
                (Some(_), Some(_)) => {
                    return err(
                        &field,
                        "both resourceClaimName and resourceClaimTemplateName are set: expected exactly one".into(),
                    )
                }
                (None, None) => {
                    return err(
                        &field,
                        "neither resourceClaimName nor resourceClaimTemplateName is set: expected exactly one".into(),
                    )
                }
                _ => {}
            }
            if self.spec.resource_claims[..i].iter().any(|o| o.name == c.name) {
                return err(&format!("{field}.name"), format!("{:?}: duplicate: expected unique names", c.name));
            }
        }
        if let Some(c) = &self.spec.scheduling_constraints {
            if c.topology.len() > 1 {
                return err(
                    "spec.schedulingConstraints.topology",
                    format!("{} items: expected at most 1", c.topology.len()),
                );
            }
            for (i, t) in c.topology.iter().enumerate() {
                let field = format!("spec.schedulingConstraints.topology[{i}].key");
                if t.key.is_empty() {
                    return err(&field, "missing: expected a node label key".into());
                }
                if let Err(m) = crate::config::validate_qualified_name(&t.key) {
                    return err(&field, format!("{m} (expected a node label key)"));
                }
            }
        }
        Ok(())
    }
}

/// `intstr.IntOrString`: an integer or a string such as `"50%"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum IntOrString {
    Int(i32),
    String(String),
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntOrStringVisitor)
    }
}

struct IntOrStringVisitor;

impl Visitor<'_> for IntOrStringVisitor {
    type Value = IntOrString;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string such as \"50%\"")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &"a 32-bit integer"))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &"a 32-bit integer"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v.to_string()))
    }
}

impl IntOrString {
    /// Resolves against `total` as upstream's `GetScaledValueFromIntOrPercent`: an integer is itself,
    /// `"N%"` is `N * total / 100` rounded up or down. Other strings are errors.
    pub fn scaled_value(&self, total: i32, round_up: bool) -> Result<i32, String> {
        match self {
            IntOrString::Int(v) => Ok(*v),
            IntOrString::String(s) => {
                let percent: i64 = s.strip_suffix('%').and_then(|p| p.parse().ok()).ok_or_else(|| {
                    format!("invalid value for IntOrString: invalid type: string is not a percentage: {s:?}")
                })?;
                let product = percent * i64::from(total);
                let scaled = if round_up {
                    product.div_euclid(100) + i64::from(product.rem_euclid(100) != 0)
                } else {
                    product.div_euclid(100)
                };
                i32::try_from(scaled).map_err(|_| format!("{s:?} of {total} does not fit a 32-bit integer"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, String> {
        serde_norway::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_a_full_pod() {
        let pod: Pod = yaml(
            r#"
metadata: {name: web-1, namespace: prod, labels: {app: web}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: u1, controller: true}]}
spec:
  nodeSelector: {disk: ssd}
  priority: 10
  priorityClassName: high
  preemptionPolicy: Never
  schedulerName: other
  hostNetwork: true
  schedulingGates: [{name: wait}]
  overhead: {cpu: 10m}
  tolerations:
  - {key: k, operator: Equal, value: v, effect: NoSchedule, tolerationSeconds: 30}
  - {operator: Exists}
  - {key: e, effect: ""}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
          matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 5, preference: {matchExpressions: [{key: gen, operator: Gt, values: ["3"]}]}}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
        matchLabelKeys: [pod-template-hash]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 7
        podAffinityTerm:
          labelSelector: {matchExpressions: [{key: tier, operator: DoesNotExist}]}
          namespaceSelector: {}
          topologyKey: zone
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, minDomains: 3, nodeAffinityPolicy: Ignore, nodeTaintsPolicy: Honor, matchLabelKeys: [v]}
  containers:
  - name: c
    image: nginx
    command: [run]
    args: [--fast]
    resources: {requests: {cpu: 100m, memory: 1Gi}, limits: {cpu: 1}}
    ports: [{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1, protocol: UDP}]
  initContainers:
  - {name: sidecar, restartPolicy: Always}
status: {nominatedNodeName: n2, phase: Pending, startTime: "2024-01-01T00:00:00Z"}
"#,
        )
        .unwrap();
        assert_eq!(pod.namespace(), "prod");
        assert_eq!(pod.metadata.owner_references[0].controller, Some(true));
        let spec = &pod.spec;
        assert_eq!(spec.node_selector["disk"], "ssd");
        assert_eq!((spec.priority, spec.priority_class_name.as_str()), (Some(10), "high"));
        assert_eq!(spec.preemption_policy, Some(PreemptionPolicy::Never));
        assert!(spec.host_network);
        assert_eq!(spec.scheduling_gates, vec![PodSchedulingGate { name: "wait".into() }]);
        assert_eq!(spec.overhead["cpu"].milli_value_ceil(), 10);
        assert_eq!(
            spec.tolerations,
            vec![
                Toleration {
                    key: "k".into(),
                    operator: Some(TolerationOperator::Equal),
                    value: "v".into(),
                    effect: Some(TaintEffect::NoSchedule),
                    toleration_seconds: Some(30),
                },
                Toleration { operator: Some(TolerationOperator::Exists), ..Default::default() },
                Toleration { key: "e".into(), ..Default::default() },
            ]
        );
        let affinity = spec.affinity.as_ref().unwrap();
        let node = affinity.node_affinity.as_ref().unwrap();
        let term = &node.required_during_scheduling_ignored_during_execution.as_ref().unwrap().node_selector_terms[0];
        assert_eq!(term.match_expressions[0].operator, NodeSelectorOperator::In);
        assert_eq!(term.match_expressions[0].values, ["a", "b"]);
        assert_eq!(term.match_fields[0].key, "metadata.name");
        let preferred = &node.preferred_during_scheduling_ignored_during_execution.as_ref().unwrap()[0];
        assert_eq!(
            (preferred.weight, preferred.preference.match_expressions[0].operator),
            (5, NodeSelectorOperator::Gt)
        );
        assert!(affinity.pod_affinity.is_none());
        let anti = affinity.pod_anti_affinity.as_ref().unwrap();
        let required = &anti.required_during_scheduling_ignored_during_execution[0];
        assert_eq!(required.topology_key, "kubernetes.io/hostname");
        assert_eq!(required.match_label_keys, ["pod-template-hash"]);
        assert!(required.namespace_selector.is_none());
        let weighted = &anti.preferred_during_scheduling_ignored_during_execution[0];
        assert_eq!(weighted.weight, 7);
        assert_eq!(weighted.pod_affinity_term.namespace_selector, Some(LabelSelector::default()));
        assert_eq!(
            weighted.pod_affinity_term.label_selector.as_ref().unwrap().match_expressions[0].operator,
            LabelSelectorOperator::DoesNotExist
        );
        let spread = &spec.topology_spread_constraints[0];
        assert_eq!(spread.when_unsatisfiable, UnsatisfiableConstraintAction::DoNotSchedule);
        assert_eq!((spread.min_domains, spread.node_affinity_policy), (Some(3), Some(NodeInclusionPolicy::Ignore)));
        assert_eq!(spread.node_taints_policy, Some(NodeInclusionPolicy::Honor));
        let c = &spec.containers[0];
        assert_eq!(c.resources.requests["memory"].value_ceil(), 1 << 30);
        assert_eq!(c.resources.limits["cpu"].milli_value_ceil(), 1000);
        assert_eq!(c.ports[0].host_ip, "10.0.0.1");
        assert_eq!((c.ports[0].container_port, c.ports[0].host_port), (80, 8080));
        assert_eq!(c.ports[0].protocol.as_deref(), Some("UDP"));
        assert_eq!(spec.init_containers[0].restart_policy.as_deref(), Some("Always"));
        assert_eq!(pod.status.phase, Some(PodPhase::Pending));
        assert_eq!(pod.status.nominated_node_name, "n2");
    }

    #[test]
    fn pod_namespace_defaults() {
        assert_eq!(Pod::default().namespace(), "default");
    }

    #[test]
    fn node_allocatable_falls_back_to_capacity() {
        let node: Node = yaml("status: {capacity: {cpu: 4, pods: 110}}").unwrap();
        assert_eq!(node.allocatable()["cpu"].value_ceil(), 4);
        let node: Node = yaml("status: {capacity: {cpu: 4, pods: 110}, allocatable: {cpu: 3500m}}").unwrap();
        assert_eq!(node.allocatable().len(), 1);
        assert_eq!(node.allocatable()["cpu"].milli_value_ceil(), 3500);
    }

    #[test]
    fn enums_accept_exact_strings_only() {
        let check = |text: &str, expected: Result<Taint, &str>| {
            assert_eq!(yaml::<Taint>(text), expected.map_err(str::to_string), "{text}");
        };
        check(
            "{key: k, effect: NoExecute}",
            Ok(Taint { key: "k".into(), value: String::new(), effect: TaintEffect::NoExecute }),
        );
        check(
            "{key: k, effect: noschedule}",
            Err("effect: unknown variant `noschedule`, expected one of `NoSchedule`, `PreferNoSchedule`, `NoExecute` at line 1 column 18"),
        );
        check("{key: k}", Err("missing field `effect`"));
        check("{effect: NoSchedule}", Err("missing field `key`"));
        let err = yaml::<Toleration>("{effect: Sometimes}").unwrap_err();
        assert!(err.starts_with("unknown variant `Sometimes`, expected one of `NoSchedule`"), "{err}");
        let err = yaml::<NodeSelectorRequirement>("{key: a, operator: Has}").unwrap_err();
        assert!(err.contains("expected one of `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`"), "{err}");
        let err = yaml::<LabelSelectorRequirement>("{key: a}").unwrap_err();
        assert!(err.starts_with("missing field `operator`"), "{err}");
    }

    #[test]
    fn tolerations_match_taints() {
        let taint = |key: &str, value: &str, effect| Taint { key: key.into(), value: value.into(), effect };
        let toleration = |text: &str| yaml::<Toleration>(text).unwrap();
        let no_schedule = taint("k", "v", TaintEffect::NoSchedule);
        for (tol, t, expected) in [
            ("{key: k, operator: Equal, value: v, effect: NoSchedule}", &no_schedule, true),
            ("{key: k, value: v}", &no_schedule, true),
            ("{key: k, value: w}", &no_schedule, false),
            ("{key: k, operator: Exists}", &no_schedule, true),
            ("{key: k, operator: Exists, effect: NoExecute}", &no_schedule, false),
            ("{key: other, operator: Exists}", &no_schedule, false),
            ("{operator: Exists}", &no_schedule, true),
            ("{operator: Exists, effect: NoSchedule}", &taint("any", "x", TaintEffect::NoSchedule), true),
            ("{operator: Exists, effect: PreferNoSchedule}", &no_schedule, false),
            ("{key: k, effect: \"\", value: v}", &taint("k", "v", TaintEffect::NoExecute), true),
            ("{value: v}", &no_schedule, true),
            ("{key: k}", &taint("k", "", TaintEffect::PreferNoSchedule), true),
        ] {
            assert_eq!(toleration(tol).tolerates_taint(t), expected, "{tol} vs {t:?}");
        }
    }

    #[test]
    fn int_or_string() {
        let check = |text: &str, expected: Result<IntOrString, &str>| {
            assert_eq!(yaml::<IntOrString>(text), expected.map_err(str::to_string), "{text}");
        };
        check("3", Ok(IntOrString::Int(3)));
        check("\"50%\"", Ok(IntOrString::String("50%".into())));
        check("50%", Ok(IntOrString::String("50%".into())));
        check("4294967296", Err("invalid value: integer `4294967296`, expected a 32-bit integer"));
        check("1.5", Err("invalid type: floating point `1.5`, expected an integer or a string such as \"50%\""));
        let scaled = |v: IntOrString, total, up| v.scaled_value(total, up);
        assert_eq!(scaled(IntOrString::Int(2), 10, true), Ok(2));
        assert_eq!(scaled(IntOrString::String("50%".into()), 5, true), Ok(3));
        assert_eq!(scaled(IntOrString::String("50%".into()), 5, false), Ok(2));
        assert!(scaled(IntOrString::String("half".into()), 5, false).is_err());
    }

    #[test]
    fn selectors_distinguish_absent_from_empty() {
        let rs: ReplicaSet = yaml("spec: {replicas: 2}").unwrap();
        assert_eq!(rs.spec.selector, None);
        let rs: StatefulSet = yaml("spec: {selector: {}}").unwrap();
        assert_eq!(rs.spec.selector, Some(LabelSelector::default()));
        let rc: ReplicationController = yaml("spec: {selector: {app: a}}").unwrap();
        assert_eq!(rc.spec.selector["app"], "a");
        let pdb: PodDisruptionBudget =
            yaml("spec: {minAvailable: 1, selector: {matchLabels: {app: a}}}\nstatus: {disruptionsAllowed: 0}")
                .unwrap();
        assert_eq!(pdb.spec.min_available, Some(IntOrString::Int(1)));
        assert_eq!(pdb.spec.max_unavailable, None);
        let pc: PriorityClass =
            yaml("{value: 1000, globalDefault: true, preemptionPolicy: PreemptLowerPriority}").unwrap();
        assert_eq!((pc.value, pc.global_default), (1000, true));
        assert!(yaml::<PriorityClass>("{globalDefault: true}").unwrap_err().starts_with("missing field `value`"));
    }
}
