//! The compiled (interned) form of what the scheduler reads from Pods and Nodes.
//!
//! `crate::api` objects are turned into these once, when they enter the cluster; plugins read only
//! these. Builders for tests live in [`crate::snapshot::testing`].

use smallvec::SmallVec;

use super::intern::{Interner, Sym};
use crate::agent::PodUid;

/// Resource requests of a pod (or the sum over a node's pods), in base units: CPU in millicores,
/// everything else in bytes or counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub cpu_milli: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Scalar resources (extended `example.com/foo`, `hugepages-*`, ...), sorted by name, no duplicates.
    pub scalars: SmallVec<[(Sym, i64); 2]>,
}

impl Resources {
    pub fn scalar(&self, name: Sym) -> i64 {
        self.scalars.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }

    pub fn is_zero(&self) -> bool {
        self.cpu_milli == 0 && self.memory == 0 && self.ephemeral_storage == 0 && self.scalars.is_empty()
    }
}

/// A taint's or toleration's effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Taint {
    pub key: Sym,
    pub value: Sym,
    pub effect: TaintEffect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TolerationOp {
    /// `Equal` or empty.
    Equal,
    Exists,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// `None` for an empty key (matches every key).
    pub key: Option<Sym>,
    pub op: TolerationOp,
    pub value: Sym,
    /// `None` for an empty effect (matches every effect).
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// `Toleration.ToleratesTaint` of k8s.io/api/core/v1.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if self.key.is_some_and(|k| k != taint.key) {
            return false;
        }
        match self.op {
            TolerationOp::Equal => self.value == taint.value,
            TolerationOp::Exists => true,
        }
    }
}

/// True when some toleration tolerates `taint` (`TolerationsTolerateTaint`).
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// A label requirement's operator with its parsed values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelOp {
    In(SmallVec<[Sym; 4]>),
    NotIn(SmallVec<[Sym; 4]>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// One `matchExpressions` entry of a node selector term or a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelRequirement {
    pub key: Sym,
    pub op: LabelOp,
}

impl LabelRequirement {
    /// `labels.Requirement.Matches` given the object's value for `key` (`Sym::NONE` when absent).
    #[inline]
    pub fn matches_value(&self, value: Sym, interner: &Interner) -> bool {
        match &self.op {
            LabelOp::In(vals) => !value.is_none() && vals.contains(&value),
            LabelOp::NotIn(vals) => value.is_none() || !vals.contains(&value),
            LabelOp::Exists => !value.is_none(),
            LabelOp::DoesNotExist => value.is_none(),
            LabelOp::Gt(n) => interner.as_int(value).is_some_and(|v| v > *n),
            LabelOp::Lt(n) => interner.as_int(value).is_some_and(|v| v < *n),
        }
    }
}

/// A `matchFields` entry: only `metadata.name` with `In`/`NotIn` and one value exists upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameRequirement {
    pub in_set: bool,
    pub name: Sym,
}

/// A node selector term: `matchExpressions` AND `matchFields`. An empty or invalid term matches nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTerm {
    pub labels: Vec<LabelRequirement>,
    pub fields: Vec<NameRequirement>,
    /// False for an empty term or one that failed to parse (bad operator values): it matches nothing.
    pub valid: bool,
}

/// Required node affinity: terms ORed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelector {
    pub terms: Vec<NodeTerm>,
}

/// A preferred scheduling term with its weight (terms of weight 0 are dropped when compiling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredTerm {
    pub weight: i32,
    pub term: NodeTerm,
}

/// A host port a pod asks for, sanitized (empty IP is `0.0.0.0`, empty protocol is `TCP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub protocol: Sym,
    pub ip: Sym,
    pub port: i32,
}

/// One container's image, normalized (`:latest` added when there is no tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRef(pub Sym);

/// `preemptionPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PreemptionPolicy {
    #[default]
    PreemptLowerPriority,
    Never,
}

/// What the scheduler knows of a pod, compiled.
#[derive(Clone, Debug, PartialEq)]
pub struct PodInfo {
    pub uid: PodUid,
    pub namespace: Sym,
    pub name: String,
    /// Labels sorted by key.
    pub labels: Vec<(Sym, Sym)>,
    /// `spec.nodeName` as given in the pod to schedule (NodeName filter), interned.
    pub node_name: Option<Sym>,
    /// Requests used for filtering: max(sum of containers and sidecars, max init) + overhead.
    pub requests: Resources,
    /// CPU and memory requests for scoring, with the 100m / 200Mi defaults for containers that set none.
    pub non_zero_cpu_milli: i64,
    pub non_zero_memory: i64,
    /// `spec.nodeSelector`, sorted by key.
    pub node_selector: Vec<(Sym, Sym)>,
    pub required_affinity: Option<NodeSelector>,
    pub preferred_affinity: Vec<PreferredTerm>,
    pub tolerations: Vec<Toleration>,
    pub host_ports: Vec<HostPort>,
    /// Images of init containers then containers, normalized.
    pub images: Vec<ImageRef>,
    /// Number of init containers plus containers (ImageLocality's threshold).
    pub container_count: u32,
    pub priority: i32,
    pub preemption_policy: PreemptionPolicy,
    pub scheduler_name: Sym,
    pub scheduling_gates: Vec<String>,
    pub terminating: bool,
    pub host_network: bool,
    /// `status.nominatedNodeName`, if set.
    pub nominated_node: Option<Sym>,
}

impl PodInfo {
    pub fn label(&self, key: Sym) -> Sym {
        match self.labels.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(i) => self.labels[i].1,
            Err(_) => Sym::NONE,
        }
    }
}

/// What the scheduler knows of a node, compiled, before it enters the [`super::NodeTable`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodeSpec {
    pub name: Sym,
    /// Labels sorted by key.
    pub labels: Vec<(Sym, Sym)>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// Allocatable resources (falling back to capacity).
    pub allocatable: Resources,
    pub allowed_pod_number: i64,
    /// Images present on the node: each name with the image's size in bytes.
    pub images: Vec<(Sym, i64)>,
}
