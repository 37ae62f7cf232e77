//! The compiled (interned) form of what the scheduler reads from Pods and Nodes.
//!
//! `crate::api` objects are turned into these once, when they enter the cluster; plugins read only
//! these. Builders for tests live in [`crate::snapshot::testing`].

use smallvec::SmallVec;

use super::intern::{Interner, Sym};
use crate::ids::PodUid;

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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LabelOp {
    In(SmallVec<[Sym; 4]>),
    NotIn(SmallVec<[Sym; 4]>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// One `matchExpressions` entry of a node selector term or a label selector.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LabelRequirement {
    pub key: Sym,
    pub op: LabelOp,
}

impl LabelRequirement {
    /// `labels.Requirement.Matches` given the object's value for `key` (`Sym::NONE` when absent).
    #[inline(always)]
    pub fn matches_value(&self, value: Sym, interner: &Interner) -> bool {
        self.matches_parsed(value, || interner.as_int(value))
    }

    /// [`Self::matches_value`] with the value's integer reading given by `int` (asked only for
    /// `Gt`/`Lt`).
    #[inline(always)]
    pub fn matches_parsed(&self, value: Sym, int: impl FnOnce() -> Option<i64>) -> bool {
        match &self.op {
            LabelOp::In(vals) => !value.is_none() && vals.contains(&value),
            LabelOp::NotIn(vals) => value.is_none() || !vals.contains(&value),
            LabelOp::Exists => !value.is_none(),
            LabelOp::DoesNotExist => value.is_none(),
            LabelOp::Gt(n) => int().is_some_and(|v| v > *n),
            LabelOp::Lt(n) => int().is_some_and(|v| v < *n),
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
    /// The names NodeAffinity's PreFilter pins from the term's raw `metadata.name In` fields
    /// (intersected; read even when the term is invalid, as upstream reads the spec). `None`:
    /// derive them from `fields` (terms built by hand) or the term pins none.
    pub pinned: Option<Vec<Sym>>,
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
    /// CPU and memory NodeResourcesFit scores the pod with: container requests with the defaults,
    /// plus overhead, without pod-level requests (see `compile::fit_score_requests`).
    pub fit_score_cpu_milli: i64,
    pub fit_score_memory: i64,
    /// `spec.nodeSelector`, sorted by key.
    pub node_selector: Vec<(Sym, Sym)>,
    pub required_affinity: Option<NodeSelector>,
    /// Preferred node affinity terms, without the weight-0 and empty ones (which never score).
    pub preferred_affinity: Vec<PreferredTerm>,
    /// `preferredDuringSchedulingIgnoredDuringExecution` is set (non-nil), even if empty or only
    /// empty terms: NodeAffinity's PreScore does not skip the pod then (all its scores are 0).
    pub preferred_affinity_set: bool,
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
    /// Topology spread, pod (anti-)affinity, controller and start time: what PodTopologySpread,
    /// InterPodAffinity and DefaultPreemption read. `Default` is "none of these".
    pub constraints: PodConstraints,
    /// What the pod's signature reads that the fields above do not keep ([`SignParts`]).
    pub sign: SignParts,
    /// The volumes the volume plugins read; `None` for a pod without any (most pods).
    pub volumes: Option<std::sync::Arc<super::volumes::PodVolumes>>,
    /// The resource claims DynamicResources reads; `None` for a pod without any (most pods).
    pub claims: Option<std::sync::Arc<super::dra::PodClaimRefs>>,
    /// What NodeDeclaredFeatures' feature inference reads of the spec.
    pub feature_facts: super::features::PodFeatureFacts,
}

/// What upstream's pod signers read from the API pod that the compiled fields do not keep
/// (`k8s.io/kube-scheduler/framework/signers.go`; OpportunisticBatching compares signatures).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignParts {
    /// `NodeAffinitySigner`: the required and preferred terms, each requirement with its values
    /// sorted, each list sorted; `None` when `spec.affinity.nodeAffinity` is nil.
    pub node_affinity: Option<std::sync::Arc<str>>,
    /// `spec.affinity.podAffinity` or `podAntiAffinity` is set (even empty): InterPodAffinity
    /// cannot sign the pod.
    pub pod_affinity_set: bool,
    /// `HostPortsSigner`: the non-zero host ports of the containers and init containers, sorted,
    /// without duplicates.
    pub host_ports: Vec<i32>,
}

impl PodInfo {
    /// Whether placing or removing the pod changes nothing but the request columns and the pod
    /// count: no host ports, no scalar resources, no (anti-)affinity or spread terms.
    pub fn plain_on_columns(&self) -> bool {
        self.host_ports.is_empty()
            && self.volumes.is_none()
            && self.claims.is_none()
            && self.requests.scalars.iter().all(|&(_, q)| q == 0)
            && self.constraints.affinity.is_empty()
            && self.constraints.topology_spread.is_empty()
    }

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
    /// `status.declaredFeatures` as given (what NodeDeclaredFeatures' node hint compares).
    pub declared_features: Vec<Sym>,
    /// `declared_features` mapped by the scheduler's registry (`features::default_framework`'s
    /// `try_map`, upstream's `NodeInfo.DeclaredFeatures`).
    pub declared_feature_set: super::features::FeatureSet,
}

/// A compiled `metav1.LabelSelector`: `matchLabels` become `In [value]` requirements, ANDed with
/// `matchExpressions`. The empty selector matches every label set; a nil selector (as upstream's
/// `LabelSelectorAsSelector(nil)`) matches nothing and is written [`LabelSelector::nothing`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct LabelSelector {
    /// Requirements, ANDed, sorted by key then operator so equal selectors compare equal.
    pub reqs: Vec<LabelRequirement>,
    /// True for a nil selector: matches no label set.
    pub matches_nothing: bool,
}

impl LabelSelector {
    /// The selector that matches everything (`{}`).
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// The nil selector: matches nothing.
    pub fn nothing() -> Self {
        LabelSelector { reqs: Vec::new(), matches_nothing: true }
    }

    /// `matchLabels` then `matchExpressions`, sorted into canonical order.
    pub fn new(match_labels: &[(Sym, Sym)], mut exprs: Vec<LabelRequirement>) -> Self {
        for &(k, v) in match_labels {
            exprs.push(LabelRequirement { key: k, op: LabelOp::In(smallvec::smallvec![v]) });
        }
        exprs.sort_by(|a, b| a.key.cmp(&b.key).then_with(|| format!("{:?}", a.op).cmp(&format!("{:?}", b.op))));
        exprs.dedup();
        LabelSelector { reqs: exprs, matches_nothing: false }
    }

    /// Adds `key In [value]` (matchLabelKeys) or `key NotIn [value]` (mismatchLabelKeys).
    pub fn and_label(&mut self, key: Sym, value: Sym, equal: bool) {
        let op =
            if equal { LabelOp::In(smallvec::smallvec![value]) } else { LabelOp::NotIn(smallvec::smallvec![value]) };
        let mut reqs = std::mem::take(&mut self.reqs);
        reqs.push(LabelRequirement { key, op });
        self.reqs = LabelSelector::new(&[], reqs).reqs;
    }

    /// `labels.Selector.Matches` against labels sorted by key.
    pub fn matches(&self, labels: &[(Sym, Sym)], interner: &Interner) -> bool {
        self.matches_by(labels, |r, v| r.matches_value(v, interner))
    }

    /// [`Self::matches`] for a selector compiled from a `metav1.LabelSelector`
    /// ([`super::compile::compile_label_selector`]), which has no `Gt`/`Lt` requirement and so
    /// needs no interner.
    pub fn matches_labels(&self, labels: &[(Sym, Sym)]) -> bool {
        self.matches_by(labels, |r, v| r.matches_parsed(v, || None))
    }

    fn matches_by(&self, labels: &[(Sym, Sym)], req: impl Fn(&LabelRequirement, Sym) -> bool) -> bool {
        if self.matches_nothing {
            return false;
        }
        self.reqs.iter().all(|r| {
            let v = match labels.binary_search_by_key(&r.key, |(k, _)| *k) {
                Ok(i) => labels[i].1,
                Err(_) => Sym::NONE,
            };
            req(r, v)
        })
    }

    pub fn is_empty(&self) -> bool {
        !self.matches_nothing && self.reqs.is_empty()
    }
}

/// The namespaces a pod affinity term applies to: `namespaces` ORed with `namespaceSelector`
/// (evaluated against Namespace labels). Upstream defaults an empty list with a nil selector to the
/// pod's own namespace; compile that into `names = [own namespace]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NamespaceSet {
    /// Sorted, deduplicated namespace names.
    pub names: Vec<Sym>,
    /// `namespaceSelector`; `None` when nil (matches no namespace), `Some(empty)` matches all.
    pub selector: Option<LabelSelector>,
}

impl NamespaceSet {
    /// Only namespace `ns`.
    pub fn only(ns: Sym) -> Self {
        NamespaceSet { names: vec![ns], selector: None }
    }

    /// A term's namespaces as upstream reads them (`GetNamespacesFromPodAffinityTerm`): the listed
    /// names, or the pod's own namespace when the list is empty and `namespaceSelector` is nil.
    pub fn for_term(pod_namespace: Sym, mut names: Vec<Sym>, selector: Option<LabelSelector>) -> Self {
        if names.is_empty() && selector.is_none() {
            names.push(pod_namespace);
        }
        names.sort_unstable();
        names.dedup();
        NamespaceSet { names, selector }
    }
}

/// A pod selector across namespaces: which pods a term, spread constraint or query counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PodSelector {
    pub namespaces: NamespaceSet,
    pub labels: LabelSelector,
}

impl PodSelector {
    /// `AffinityTerm.Matches`: the pod's namespace is selected and its labels match.
    /// `ns_labels` are the labels of the pod's Namespace (empty when unknown).
    pub fn matches(
        &self,
        namespace: Sym,
        labels: &[(Sym, Sym)],
        ns_labels: &[(Sym, Sym)],
        interner: &Interner,
    ) -> bool {
        let ns_ok = self.namespaces.names.binary_search(&namespace).is_ok()
            || self.namespaces.selector.as_ref().is_some_and(|s| s.matches(ns_labels, interner));
        ns_ok && self.labels.matches(labels, interner)
    }
}

/// `whenUnsatisfiable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WhenUnsatisfiable {
    #[default]
    DoNotSchedule,
    ScheduleAnyway,
}

/// `nodeAffinityPolicy` / `nodeTaintsPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

/// A compiled `TopologySpreadConstraint`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpreadConstraint {
    /// `maxSkew` (> 0).
    pub max_skew: i32,
    /// `topologyKey`, interned.
    pub topology_key: Sym,
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// `labelSelector` with `matchLabelKeys` already ANDed in (the pod's values for those keys, for
    /// keys the pod carries). A nil `labelSelector` is [`LabelSelector::nothing`].
    pub selector: LabelSelector,
    /// `minDomains`; 1 when unset.
    pub min_domains: i32,
    /// `nodeAffinityPolicy`; `Honor` when unset.
    pub node_affinity_policy: InclusionPolicy,
    /// `nodeTaintsPolicy`; `Ignore` when unset.
    pub node_taints_policy: InclusionPolicy,
}

impl SpreadConstraint {
    /// A constraint with upstream's defaults for the optional fields (minDomains 1, Honor, Ignore).
    pub fn new(max_skew: i32, topology_key: Sym, when: WhenUnsatisfiable, selector: LabelSelector) -> Self {
        SpreadConstraint {
            max_skew,
            topology_key,
            when_unsatisfiable: when,
            selector,
            min_domains: 1,
            node_affinity_policy: InclusionPolicy::Honor,
            node_taints_policy: InclusionPolicy::Ignore,
        }
    }

    /// ANDs `key In [pod's value]` into the selector for each `matchLabelKeys` key the pod carries
    /// (`mergeLabelSetWithSelector`). `pod_labels` sorted by key.
    pub fn with_match_label_keys(mut self, keys: &[Sym], pod_labels: &[(Sym, Sym)]) -> Self {
        for k in keys {
            if let Ok(i) = pod_labels.binary_search_by_key(k, |(kk, _)| *kk) {
                self.selector.and_label(*k, pod_labels[i].1, true);
            }
        }
        self
    }
}

/// A compiled `PodAffinityTerm`: which pods (namespaces and labels, with `matchLabelKeys` /
/// `mismatchLabelKeys` ANDed into the label selector) and the topology key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffinityTerm {
    pub selector: PodSelector,
    pub topology_key: Sym,
}

impl AffinityTerm {
    pub fn new(namespaces: NamespaceSet, labels: LabelSelector, topology_key: Sym) -> Self {
        AffinityTerm { selector: PodSelector { namespaces, labels }, topology_key }
    }

    /// ANDs `key In [v]` for `matchLabelKeys` and `key NotIn [v]` for `mismatchLabelKeys`, for keys
    /// the pod carries (what the API server does at admission).
    pub fn with_label_keys(mut self, match_keys: &[Sym], mismatch_keys: &[Sym], pod_labels: &[(Sym, Sym)]) -> Self {
        for (keys, equal) in [(match_keys, true), (mismatch_keys, false)] {
            for k in keys {
                if let Ok(i) = pod_labels.binary_search_by_key(k, |(kk, _)| *kk) {
                    self.selector.labels.and_label(*k, pod_labels[i].1, equal);
                }
            }
        }
        self
    }
}

/// A `WeightedPodAffinityTerm` (weight 1..=100).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WeightedTerm {
    pub weight: i32,
    pub term: AffinityTerm,
}

/// `spec.affinity.podAffinity` and `podAntiAffinity`, compiled.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PodAffinity {
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<WeightedTerm>,
    pub preferred_anti_affinity: Vec<WeightedTerm>,
}

impl PodAffinity {
    pub fn is_empty(&self) -> bool {
        self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }
}

/// The kinds of controller whose selector feeds PodTopologySpread's system default constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControllerKind {
    ReplicationController,
    ReplicaSet,
    StatefulSet,
}

/// The pod's controller owner reference (`metav1.GetControllerOf`), when it is one of
/// [`ControllerKind`] (group `""` for ReplicationController, `apps` for the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ControllerRef {
    pub kind: ControllerKind,
    pub name: Sym,
}

/// What PodTopologySpread, InterPodAffinity and DefaultPreemption read from a pod.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PodConstraints {
    /// `spec.topologySpreadConstraints`, both kinds, in spec order.
    pub topology_spread: Vec<SpreadConstraint>,
    /// Pod affinity and anti-affinity.
    pub affinity: PodAffinity,
    /// The controller owner reference, if any.
    pub controller: Option<ControllerRef>,
    /// `status.startTime` in milliseconds on the run's clock (`MoreImportantPod` ties; earlier is
    /// more important). Pods not started yet use their creation time.
    pub start_time_ms: i64,
    /// Whether the pod has a `status.startTime`. Upstream reads a missing one as the time of
    /// reading (`util.GetPodStartTime`), so preemption's start-time tie-break among such pods
    /// follows the order it happens to evaluate them in.
    pub start_time_known: bool,
}
