//! Turns Kubernetes objects (`crate::api`) into the compiled, interned forms the plugins read.
//!
//! Runs once per object when it enters the cluster, never in a scheduling cycle.

use std::collections::BTreeMap;

use ahash::AHashMap;
use smallvec::SmallVec;

use super::intern::{Interner, Sym};
use super::model::*;
use super::WellKnown;
use crate::api::names::{is_scalar_resource_name, normalized_image_name};
use crate::api::time::rfc3339_ms;
use crate::api::{self, Quantity, ResourceList};
use crate::ids::PodUid;

/// `DefaultMilliCPURequest`: the CPU a container without a CPU request counts as when scoring.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// `DefaultMemoryRequest`: 200 MiB, likewise for memory.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

fn add_list(into: &mut BTreeMap<String, Quantity>, from: &BTreeMap<String, Quantity>) {
    for (k, v) in from {
        let e = into.entry(k.clone()).or_insert(Quantity::ZERO);
        *e = e.saturating_add(*v);
    }
}

fn max_list(into: &mut BTreeMap<String, Quantity>, from: &BTreeMap<String, Quantity>) {
    for (k, v) in from {
        let e = into.entry(k.clone()).or_insert(*v);
        if *v > *e {
            *e = *v;
        }
    }
}

/// Which scoring defaults (`NonMissingContainerRequests`) apply to containers without a CPU or
/// memory request.
#[derive(Clone, Copy)]
struct NonMissing {
    cpu: bool,
    memory: bool,
}

const NO_DEFAULTS: NonMissing = NonMissing { cpu: false, memory: false };
const BOTH_DEFAULTS: NonMissing = NonMissing { cpu: true, memory: true };

fn with_defaults(reqs: &ResourceList, non_missing: NonMissing) -> BTreeMap<String, Quantity> {
    let mut r = reqs.clone();
    if non_missing.cpu {
        r.entry("cpu".into()).or_insert(Quantity::from_milli_value(DEFAULT_MILLI_CPU_REQUEST));
    }
    if non_missing.memory {
        r.entry("memory".into()).or_insert(Quantity::from_value(DEFAULT_MEMORY_REQUEST));
    }
    r
}

fn is_sidecar(c: &api::Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// A container's requests after API defaulting (`SetDefaults_Pod`): a resource with a limit and
/// no request requests its limit.
fn container_requests(c: &api::Container) -> ResourceList {
    let mut r = c.resources.requests.clone();
    for (k, v) in &c.resources.limits {
        r.entry(k.clone()).or_insert(*v);
    }
    r
}

/// `IsSupportedPodLevelResource`: cpu, memory and hugepages.
fn is_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// The pod-level requests (`spec.resources.requests`, PodLevelResources on by default) after API
/// defaulting (`defaultPodRequests`): when pod-level limits are set, a supported resource without
/// a pod-level request takes the containers' aggregated request when cpu or memory has one, else
/// its pod-level limit. `None` unless a supported resource ends up requested
/// (`IsPodLevelRequestsSet`).
fn pod_level_requests(spec: &api::PodSpec) -> Option<ResourceList> {
    let res = spec.resources.as_ref()?;
    let mut reqs = res.requests.clone();
    if !res.limits.is_empty() {
        let containers = aggregate_container_requests(spec, NO_DEFAULTS);
        for (k, v) in &containers {
            if (k == "cpu" || k == "memory") && !reqs.contains_key(k) {
                reqs.insert(k.clone(), *v);
            }
        }
        for (k, v) in &res.limits {
            if is_pod_level_resource(k) && !reqs.contains_key(k) {
                reqs.insert(k.clone(), *v);
            }
        }
    }
    reqs.retain(|k, _| is_pod_level_resource(k));
    (!reqs.is_empty()).then_some(reqs)
}

/// `resourcehelper.AggregateContainerRequests`: max(sum of containers and sidecars, the largest
/// init container with the sidecars started before it). `non_missing` applies the scoring
/// defaults to containers without a CPU or memory request.
fn aggregate_container_requests(spec: &api::PodSpec, non_missing: NonMissing) -> BTreeMap<String, Quantity> {
    let mut reqs = BTreeMap::new();
    for c in &spec.containers {
        add_list(&mut reqs, &with_defaults(&container_requests(c), non_missing));
    }
    let mut restartable = BTreeMap::new();
    let mut init = BTreeMap::new();
    for c in &spec.init_containers {
        let creqs = with_defaults(&container_requests(c), non_missing);
        let use_reqs = if is_sidecar(c) {
            add_list(&mut reqs, &creqs);
            add_list(&mut restartable, &creqs);
            restartable.clone()
        } else {
            let mut tmp = creqs;
            add_list(&mut tmp, &restartable);
            tmp
        };
        max_list(&mut init, &use_reqs);
    }
    max_list(&mut reqs, &init);
    reqs
}

/// `resourcehelper.PodRequests`: the containers' aggregated requests, with cpu, memory and
/// hugepages replaced by the pod-level requests when those are set, + overhead. `non_missing`
/// applies the scoring defaults to containers without a CPU or memory request.
///
/// With pod-level requests set, a default applies only to a resource requested neither by a
/// container nor at pod level (`getNonMissingContainerRequests` in `PodInfo.CalculateResource`).
pub fn pod_requests(spec: &api::PodSpec, non_missing: bool) -> BTreeMap<String, Quantity> {
    let pod_level = pod_level_requests(spec);
    let defaults = if !non_missing {
        NO_DEFAULTS
    } else if pod_level.is_none() {
        BOTH_DEFAULTS
    } else {
        let plain = pod_requests(spec, false);
        NonMissing { cpu: !plain.contains_key("cpu"), memory: !plain.contains_key("memory") }
    };
    let mut reqs = aggregate_container_requests(spec, defaults);
    if let Some(pod_level) = pod_level {
        for (k, v) in pod_level {
            reqs.insert(k, v);
        }
    }
    add_list(&mut reqs, &spec.overhead);
    reqs
}

/// The incoming pod's CPU (millicores) and memory as NodeResourcesFit scores them: the containers'
/// aggregated requests with the scoring defaults, plus overhead, and *without* pod-level requests
/// (upstream's Fit builds its `resourceAllocationScorer` without `enablePodLevelResources`, unlike
/// BalancedAllocation and the filter).
pub fn fit_score_requests(spec: &api::PodSpec) -> (i64, i64) {
    let mut reqs = aggregate_container_requests(spec, BOTH_DEFAULTS);
    add_list(&mut reqs, &spec.overhead);
    (reqs.get("cpu").map_or(0, |q| q.milli_value_ceil()), reqs.get("memory").map_or(0, |q| q.value_ceil()))
}

/// Converts a resource list into [`Resources`] (CPU in millicores, the rest rounded up to units).
pub fn resources_of(list: &BTreeMap<String, Quantity>, interner: &mut Interner) -> Resources {
    let mut r = Resources::default();
    let mut scalars: Vec<(String, i64)> = Vec::new();
    for (name, q) in list {
        match name.as_str() {
            "cpu" => r.cpu_milli = q.milli_value_ceil(),
            "memory" => r.memory = q.value_ceil(),
            "ephemeral-storage" => r.ephemeral_storage = q.value_ceil(),
            n if is_scalar_resource_name(n) => scalars.push((n.to_string(), q.value_ceil())),
            _ => {}
        }
    }
    scalars.sort();
    r.scalars = scalars.into_iter().map(|(n, v)| (interner.intern(&n), v)).collect();
    r
}

fn sorted_pairs(m: &BTreeMap<String, String>, interner: &mut Interner) -> Vec<(Sym, Sym)> {
    let mut v: Vec<(Sym, Sym)> = m.iter().map(|(k, v)| (interner.intern(k), interner.intern(v))).collect();
    v.sort();
    v
}

fn effect(e: api::TaintEffect) -> TaintEffect {
    match e {
        api::TaintEffect::NoSchedule => TaintEffect::NoSchedule,
        api::TaintEffect::PreferNoSchedule => TaintEffect::PreferNoSchedule,
        api::TaintEffect::NoExecute => TaintEffect::NoExecute,
    }
}

/// Compiles a node. Allocatable falls back to capacity; `pods` sets the allowed pod number.
pub fn compile_node(node: &api::Node, interner: &mut Interner) -> NodeSpec {
    let alloc = node.allocatable();
    let allowed_pod_number = alloc.get("pods").map_or(0, |q| q.value_ceil());
    let taints = node
        .spec
        .taints
        .iter()
        .map(|t| Taint { key: interner.intern(&t.key), value: interner.intern(&t.value), effect: effect(t.effect) })
        .collect();
    let mut images = Vec::new();
    for img in &node.status.images {
        for n in &img.names {
            images.push((interner.intern(n), img.size_bytes));
        }
    }
    NodeSpec {
        name: interner.intern(&node.metadata.name),
        labels: sorted_pairs(&node.metadata.labels, interner),
        taints,
        unschedulable: node.spec.unschedulable,
        allocatable: resources_of(alloc, interner),
        allowed_pod_number,
        images,
        declared_features: node.status.declared_features.iter().map(|f| interner.intern(f)).collect(),
        declared_feature_set: super::features::default_framework().try_map(node.status.declared_features.as_slice()),
    }
}

/// Compiles one node selector term as component-helpers' `newNodeSelectorTerm` parses it. A
/// requirement `labels.NewRequirement` rejects (a key that is not a qualified name, a value that
/// is not a valid label value (so `Gt "-1"` too), no values for `In`/`NotIn`, values for
/// `Exists`/`DoesNotExist`, not exactly one integer for `Gt`/`Lt`), or a field requirement that
/// is not `In`/`NotIn` with one value, makes the term invalid: it matches nothing (and a preferred
/// one is an error at PreScore); the bad requirement stays as one that never holds
/// ([`never_matches`]). An empty term is marked invalid too (upstream skips it) and has no
/// requirements.
/// A field other than `metadata.name` reads as "" on every node: `In ""` and `NotIn x` (x ≠ "")
/// always hold and are dropped; `In x` and `NotIn ""` never hold and become [`never_matches`].
pub fn compile_term(term: &api::NodeSelectorTerm, interner: &mut Interner) -> NodeTerm {
    use api::NodeSelectorOperator as Op;
    let mut out = NodeTerm { labels: Vec::new(), fields: Vec::new(), valid: true, pinned: None };
    if term.match_expressions.is_empty() && term.match_fields.is_empty() {
        out.valid = false;
        return out;
    }
    for r in &term.match_expressions {
        let key_ok = crate::config::validate_qualified_name(&r.key).is_ok();
        let values_ok = r.values.iter().all(|v| is_label_value(v));
        let int = || if r.values.len() == 1 { r.values[0].parse::<i64>().ok() } else { None };
        let op = match r.operator {
            Op::In if !r.values.is_empty() => Some(LabelOp::In(r.values.iter().map(|v| interner.intern(v)).collect())),
            Op::NotIn if !r.values.is_empty() => {
                Some(LabelOp::NotIn(r.values.iter().map(|v| interner.intern(v)).collect()))
            }
            Op::Exists if r.values.is_empty() => Some(LabelOp::Exists),
            Op::DoesNotExist if r.values.is_empty() => Some(LabelOp::DoesNotExist),
            Op::Gt => int().map(LabelOp::Gt),
            Op::Lt => int().map(LabelOp::Lt),
            _ => None,
        };
        match op {
            Some(op) if key_ok && values_ok => out.labels.push(LabelRequirement { key: interner.intern(&r.key), op }),
            _ => {
                // Kept as a requirement that never holds, so that an invalid term is told from an
                // empty one (the queueing hint treats the first as a parse error, as upstream's
                // `Match` returns one).
                out.labels.push(never_matches(interner));
                out.valid = false;
            }
        }
    }
    for f in term.match_fields.iter().filter(|f| f.key == "metadata.name" && f.operator == Op::In) {
        let names: Vec<Sym> = f.values.iter().map(|v| interner.intern(v)).collect();
        out.pinned = Some(match out.pinned.take() {
            None => names,
            Some(prev) => prev.into_iter().filter(|n| names.contains(n)).collect(),
        });
    }
    for f in &term.match_fields {
        let in_set = match f.operator {
            Op::In if f.values.len() == 1 => true,
            Op::NotIn if f.values.len() == 1 => false,
            _ => {
                out.labels.push(never_matches(interner));
                out.valid = false;
                continue;
            }
        };
        let value = &f.values[0];
        if f.key == "metadata.name" {
            out.fields.push(NameRequirement { in_set, name: interner.intern(value) });
        } else if in_set != value.is_empty() {
            out.labels.push(never_matches(interner));
        }
    }
    out
}

/// A requirement no node satisfies (`In` with no values, which the parser never produces).
pub fn never_matches(interner: &mut Interner) -> LabelRequirement {
    LabelRequirement { key: interner.intern(""), op: LabelOp::In(SmallVec::new()) }
}

/// Kubernetes `IsValidLabelValue`: empty, or at most 63 characters of `[A-Za-z0-9_.-]` starting
/// and ending with a letter or digit.
pub fn is_label_value(v: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    v.is_empty()
        || (v.len() <= 63
            && v.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
            && v.starts_with(alnum)
            && v.ends_with(alnum))
}

pub fn compile_node_selector(sel: &api::NodeSelector, interner: &mut Interner) -> NodeSelector {
    NodeSelector { terms: sel.node_selector_terms.iter().map(|t| compile_term(t, interner)).collect() }
}

/// Preferred terms of weight 0 and empty terms are dropped, as upstream's
/// `NewPreferredSchedulingTerms` skips them; an invalid term is kept (`valid: false`): PreScore
/// turns it into an error.
pub fn compile_preferred(terms: &[api::PreferredSchedulingTerm], interner: &mut Interner) -> Vec<PreferredTerm> {
    terms
        .iter()
        .filter(|t| t.weight != 0)
        .filter(|t| !t.preference.match_expressions.is_empty() || !t.preference.match_fields.is_empty())
        .map(|t| PreferredTerm { weight: t.weight, term: compile_term(&t.preference, interner) })
        .collect()
}

/// PriorityClasses by name, and the `globalDefault` one.
#[derive(Debug, Clone, Default)]
pub struct Priorities {
    classes: AHashMap<String, (i32, PreemptionPolicy)>,
    global_default: Option<(i32, PreemptionPolicy)>,
}

fn policy(p: Option<api::PreemptionPolicy>) -> PreemptionPolicy {
    match p {
        Some(api::PreemptionPolicy::Never) => PreemptionPolicy::Never,
        _ => PreemptionPolicy::PreemptLowerPriority,
    }
}

impl Priorities {
    pub fn add(&mut self, pc: &api::PriorityClass) {
        let v = (pc.value, policy(pc.preemption_policy));
        self.classes.insert(pc.metadata.name.clone(), v);
        if pc.global_default {
            self.global_default = Some(v);
        }
    }

    /// The pod's priority and preemption policy, as the Priority admission plugin resolves them:
    /// `spec.priority` when set, else its class's value, else the global default, else 0.
    pub fn resolve(&self, spec: &api::PodSpec) -> Result<(i32, PreemptionPolicy), String> {
        let class = if spec.priority_class_name.is_empty() {
            self.global_default
        } else {
            match spec.priority_class_name.as_str() {
                "system-node-critical" => Some((2_000_001_000, PreemptionPolicy::PreemptLowerPriority)),
                "system-cluster-critical" => Some((2_000_000_000, PreemptionPolicy::PreemptLowerPriority)),
                name => match self.classes.get(name) {
                    Some(v) => Some(*v),
                    None => return Err(format!("no PriorityClass with name {name:?} was found")),
                },
            }
        };
        let priority = spec.priority.or(class.map(|c| c.0)).unwrap_or(0);
        let pol = match spec.preemption_policy {
            Some(p) => policy(Some(p)),
            None => class.map_or(PreemptionPolicy::PreemptLowerPriority, |c| c.1),
        };
        Ok((priority, pol))
    }
}

/// `metav1.LabelSelectorAsSelector`: `None` selects nothing; an invalid requirement (values on
/// `Exists`, none on `In`) makes the selector select nothing.
pub fn compile_label_selector(sel: Option<&api::LabelSelector>, interner: &mut Interner) -> LabelSelector {
    use api::LabelSelectorOperator as Op;
    let Some(sel) = sel else { return LabelSelector::nothing() };
    let labels = sorted_pairs(&sel.match_labels, interner);
    let mut exprs = Vec::with_capacity(sel.match_expressions.len());
    for r in &sel.match_expressions {
        let key = interner.intern(&r.key);
        let vals: SmallVec<[Sym; 4]> = r.values.iter().map(|v| interner.intern(v)).collect();
        let op = match r.operator {
            Op::In if !vals.is_empty() => LabelOp::In(vals),
            Op::NotIn if !vals.is_empty() => LabelOp::NotIn(vals),
            Op::Exists if vals.is_empty() => LabelOp::Exists,
            Op::DoesNotExist if vals.is_empty() => LabelOp::DoesNotExist,
            _ => return LabelSelector::nothing(),
        };
        exprs.push(LabelRequirement { key, op });
    }
    LabelSelector::new(&labels, exprs)
}

fn affinity_term(
    t: &api::PodAffinityTerm,
    pod_ns: Sym,
    pod_labels: &[(Sym, Sym)],
    interner: &mut Interner,
) -> AffinityTerm {
    let names: Vec<Sym> = t.namespaces.iter().map(|n| interner.intern(n)).collect();
    let ns_sel = t.namespace_selector.as_ref().map(|s| compile_label_selector(Some(s), interner));
    let labels = compile_label_selector(t.label_selector.as_ref(), interner);
    let key = interner.intern(&t.topology_key);
    let mk: Vec<Sym> = t.match_label_keys.iter().map(|k| interner.intern(k)).collect();
    let mmk: Vec<Sym> = t.mismatch_label_keys.iter().map(|k| interner.intern(k)).collect();
    AffinityTerm::new(NamespaceSet::for_term(pod_ns, names, ns_sel), labels, key).with_label_keys(&mk, &mmk, pod_labels)
}

/// Compiles a spread constraint of a pod (or of PodTopologySpreadArgs' defaults, with no labels).
pub fn compile_spread(
    c: &api::TopologySpreadConstraint,
    pod_labels: &[(Sym, Sym)],
    interner: &mut Interner,
) -> SpreadConstraint {
    let when = match c.when_unsatisfiable {
        api::UnsatisfiableConstraintAction::DoNotSchedule => WhenUnsatisfiable::DoNotSchedule,
        api::UnsatisfiableConstraintAction::ScheduleAnyway => WhenUnsatisfiable::ScheduleAnyway,
    };
    let policy = |p: Option<api::NodeInclusionPolicy>, default: InclusionPolicy| match p {
        Some(api::NodeInclusionPolicy::Honor) => InclusionPolicy::Honor,
        Some(api::NodeInclusionPolicy::Ignore) => InclusionPolicy::Ignore,
        None => default,
    };
    let selector = compile_label_selector(c.label_selector.as_ref(), interner);
    let keys: Vec<Sym> = c.match_label_keys.iter().map(|k| interner.intern(k)).collect();
    let mut sc = SpreadConstraint::new(c.max_skew, interner.intern(&c.topology_key), when, selector)
        .with_match_label_keys(&keys, pod_labels);
    sc.min_domains = c.min_domains.unwrap_or(1);
    sc.node_affinity_policy = policy(c.node_affinity_policy, InclusionPolicy::Honor);
    sc.node_taints_policy = policy(c.node_taints_policy, InclusionPolicy::Ignore);
    sc
}

/// The pod-to-pod constraints of a pod. `start_time_ms` is its start time on the run's clock.
pub fn compile_constraints(
    pod: &api::Pod,
    ns: Sym,
    labels: &[(Sym, Sym)],
    start_time_ms: i64,
    interner: &mut Interner,
) -> PodConstraints {
    let spec = &pod.spec;
    let topology_spread =
        spec.topology_spread_constraints.iter().map(|c| compile_spread(c, labels, interner)).collect();
    let mut affinity = PodAffinity::default();
    if let Some(a) = spec.affinity.as_ref() {
        if let Some(pa) = &a.pod_affinity {
            for t in &pa.required_during_scheduling_ignored_during_execution {
                affinity.required_affinity.push(affinity_term(t, ns, labels, interner));
            }
            for w in &pa.preferred_during_scheduling_ignored_during_execution {
                let term = affinity_term(&w.pod_affinity_term, ns, labels, interner);
                affinity.preferred_affinity.push(WeightedTerm { weight: w.weight, term });
            }
        }
        if let Some(pa) = &a.pod_anti_affinity {
            for t in &pa.required_during_scheduling_ignored_during_execution {
                affinity.required_anti_affinity.push(affinity_term(t, ns, labels, interner));
            }
            for w in &pa.preferred_during_scheduling_ignored_during_execution {
                let term = affinity_term(&w.pod_affinity_term, ns, labels, interner);
                affinity.preferred_anti_affinity.push(WeightedTerm { weight: w.weight, term });
            }
        }
    }
    let controller = pod.metadata.owner_references.iter().find(|o| o.controller == Some(true)).and_then(|o| {
        let kind = match o.kind.as_str() {
            "ReplicationController" => ControllerKind::ReplicationController,
            "ReplicaSet" => ControllerKind::ReplicaSet,
            "StatefulSet" => ControllerKind::StatefulSet,
            _ => return None,
        };
        Some(ControllerRef { kind, name: interner.intern(&o.name) })
    });
    PodConstraints { topology_spread, affinity, controller, start_time_ms, start_time_known: false }
}

/// Compiles a pod. `name` is the pod's final name (generated when it had only `generateName`).
pub fn compile_pod(
    pod: &api::Pod,
    name: &str,
    uid: PodUid,
    priorities: &Priorities,
    interner: &mut Interner,
    wk: &WellKnown,
) -> Result<PodInfo, String> {
    let spec = &pod.spec;
    let requests = resources_of(&pod_requests(spec, false), interner);
    let non_zero = pod_requests(spec, true);
    let non_zero_cpu_milli = non_zero.get("cpu").map_or(0, |q| q.milli_value_ceil());
    let non_zero_memory = non_zero.get("memory").map_or(0, |q| q.value_ceil());
    let (fit_score_cpu_milli, fit_score_memory) = fit_score_requests(spec);
    let (priority, preemption_policy) = priorities.resolve(spec)?;
    let node_affinity = spec.affinity.as_ref().and_then(|a| a.node_affinity.as_ref());
    let required_affinity = node_affinity
        .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref())
        .map(|s| compile_node_selector(s, interner));
    let preferred_list =
        node_affinity.and_then(|na| na.preferred_during_scheduling_ignored_during_execution.as_deref());
    let preferred_affinity_set = preferred_list.is_some();
    let preferred_affinity = preferred_list.map(|t| compile_preferred(t, interner)).unwrap_or_default();
    let tolerations = spec
        .tolerations
        .iter()
        .map(|t| Toleration {
            key: if t.key.is_empty() { None } else { Some(interner.intern(&t.key)) },
            op: match t.operator {
                Some(api::TolerationOperator::Exists) => TolerationOp::Exists,
                _ => TolerationOp::Equal,
            },
            value: interner.intern(&t.value),
            effect: t.effect.map(effect),
        })
        .collect();
    let mut host_ports = Vec::new();
    let port_containers = spec.init_containers.iter().filter(|c| is_sidecar(c)).chain(spec.containers.iter());
    for c in port_containers {
        for p in c.ports.iter().filter(|p| p.host_port > 0) {
            let proto = p.protocol.as_deref().filter(|s| !s.is_empty()).unwrap_or("TCP");
            let ip = if p.host_ip.is_empty() { "0.0.0.0" } else { p.host_ip.as_str() };
            host_ports.push(HostPort { protocol: interner.intern(proto), ip: interner.intern(ip), port: p.host_port });
        }
    }
    let images = spec
        .init_containers
        .iter()
        .chain(spec.containers.iter())
        .map(|c| ImageRef(interner.intern(&normalized_image_name(&c.image))))
        .collect();
    let scheduler_name =
        if spec.scheduler_name.is_empty() { wk.default_scheduler } else { interner.intern(&spec.scheduler_name) };
    let node_name = if spec.node_name.is_empty() { None } else { Some(interner.intern(&spec.node_name)) };
    let nominated_node = if pod.status.nominated_node_name.is_empty() {
        None
    } else {
        Some(interner.intern(&pod.status.nominated_node_name))
    };
    let namespace = interner.intern(pod.namespace());
    let labels = sorted_pairs(&pod.metadata.labels, interner);
    let start_time_ms = pod
        .status
        .start_time
        .as_deref()
        .or(pod.metadata.creation_timestamp.as_deref())
        .and_then(rfc3339_ms)
        .unwrap_or(uid.0 as i64);
    let mut constraints = compile_constraints(pod, namespace, &labels, start_time_ms, interner);
    constraints.start_time_known = pod.status.start_time.is_some();
    Ok(PodInfo {
        uid,
        namespace,
        name: name.to_string(),
        labels,
        constraints,
        node_name,
        requests,
        non_zero_cpu_milli,
        non_zero_memory,
        fit_score_cpu_milli,
        fit_score_memory,
        node_selector: sorted_pairs(&spec.node_selector, interner),
        required_affinity,
        preferred_affinity,
        preferred_affinity_set,
        tolerations,
        host_ports,
        images,
        container_count: (spec.init_containers.len() + spec.containers.len()) as u32,
        priority,
        preemption_policy,
        scheduler_name,
        scheduling_gates: spec.scheduling_gates.iter().map(|g| g.name.clone()).collect(),
        terminating: pod.metadata.deletion_timestamp.is_some(),
        host_network: spec.host_network,
        nominated_node,
        sign: sign_parts(spec),
        volumes: super::volumes::compile_pod_volumes(pod, interner),
        claims: super::dra::pod_claim_refs(pod, name, uid),
        feature_facts: super::features::PodFeatureFacts::admitted(spec),
    })
}

/// The parts of `spec` upstream's pod signers read ([`SignParts`]).
pub fn sign_parts(spec: &api::PodSpec) -> SignParts {
    fn requirements(reqs: &[api::NodeSelectorRequirement]) -> Vec<String> {
        let mut out: Vec<String> = reqs
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.values.sort();
                serde_json::to_string(&r).expect("a requirement serializes")
            })
            .collect();
        out.sort();
        out
    }
    fn term(t: &api::NodeSelectorTerm) -> String {
        serde_json::json!({"MatchExpressions": requirements(&t.match_expressions), "MatchFields": requirements(&t.match_fields)})
            .to_string()
    }
    let affinity = spec.affinity.as_ref();
    let node_affinity = affinity.and_then(|a| a.node_affinity.as_ref()).map(|na| {
        let mut required: Vec<String> = na
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|s| s.node_selector_terms.iter().map(term).collect())
            .unwrap_or_default();
        required.sort();
        let mut preferred: Vec<String> = na
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .map(|p| format!("{{\"Weight\":{},\"Preference\":{}}}", p.weight, term(&p.preference)))
            .collect();
        preferred.sort();
        std::sync::Arc::from(serde_json::json!({"Required": required, "Preferred": preferred}).to_string())
    });
    let pod_affinity_set = affinity.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some());
    let mut host_ports: Vec<i32> = spec
        .containers
        .iter()
        .chain(&spec.init_containers)
        .flat_map(|c| c.ports.iter().map(|p| p.host_port))
        .filter(|&p| p != 0)
        .collect();
    host_ports.sort_unstable();
    host_ports.dedup();
    SignParts { node_affinity, pod_affinity_set, host_ports }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> api::Pod {
        match api::parse_objects(yaml, "pod.yaml").unwrap().remove(0) {
            api::Object::Pod(p) => p,
            o => panic!("not a pod: {o:?}"),
        }
    }

    fn compile(yaml: &str) -> (PodInfo, Interner) {
        let mut i = Interner::new();
        let wk = super::super::WellKnown::new(&mut i);
        let p = pod(yaml);
        let info = compile_pod(&p, "p", PodUid(1), &Priorities::default(), &mut i, &wk).unwrap();
        (info, i)
    }

    #[test]
    fn requests_table() {
        // (pod spec, cpu milli, memory, non-zero cpu, non-zero memory, Fit score cpu, Fit score
        // memory): resource helper cases. Fit scores the incoming pod without pod-level requests.
        const M200: i64 = 200 * 1024 * 1024;
        let cases: &[(&str, i64, i64, i64, i64, i64, i64)] = &[
            ("containers: [{name: a}]", 0, 0, 100, M200, 100, M200),
            ("containers: [{name: a, resources: {requests: {cpu: 0}}}]", 0, 0, 0, M200, 0, M200),
            ("containers: [{name: a, resources: {requests: {cpu: 100m, memory: 1Gi}}}, {name: b, resources: {requests: {cpu: '1.5'}}}]", 1600, 1 << 30, 1600, (1 << 30) + M200, 1600, (1 << 30) + M200),
            // Init container larger than the sum wins.
            ("containers: [{name: a, resources: {requests: {cpu: 1}}}]\n  initContainers: [{name: i, resources: {requests: {cpu: 2}}}]", 2000, 0, 2000, M200, 2000, M200),
            // A sidecar adds to the containers and to every later init container.
            ("containers: [{name: a, resources: {requests: {cpu: 1}}}]\n  initContainers: [{name: s, restartPolicy: Always, resources: {requests: {cpu: 1}}}, {name: i, resources: {requests: {cpu: 1500m}}}]", 2500, 0, 2500, 2 * M200, 2500, 2 * M200),
            ("containers: [{name: a, resources: {requests: {cpu: 1}}}]\n  overhead: {cpu: 250m, memory: 10Mi}", 1250, 10 << 20, 1250, (10 << 20) + M200, 1250, (10 << 20) + M200),
            // A limit without a request requests the limit (API defaulting).
            ("containers: [{name: a, resources: {limits: {cpu: 2, memory: 1Gi}}}]", 2000, 1 << 30, 2000, 1 << 30, 2000, 1 << 30),
            ("containers: [{name: a, resources: {requests: {cpu: 1}, limits: {cpu: 2}}}]", 1000, 0, 1000, M200, 1000, M200),
            // Pod-level requests replace the containers' cpu and memory (PodLevelResources).
            ("containers: [{name: a, resources: {requests: {cpu: 100m}}}, {name: b}]\n  resources: {requests: {cpu: 3, memory: 2Gi}}", 3000, 2 << 30, 3000, 2 << 30, 200, 2 * M200),
            ("containers: [{name: a, resources: {requests: {cpu: 500m}}}]\n  resources: {requests: {memory: 1Gi}}", 500, 1 << 30, 500, 1 << 30, 500, M200),
            // Pod-level limits default the pod-level requests: containers' cpu, then the limit for memory.
            ("containers: [{name: a, resources: {requests: {cpu: 500m}}}]\n  resources: {limits: {cpu: 4, memory: 1Gi}}", 500, 1 << 30, 500, 1 << 30, 500, M200),
            // With pod-level requests, a default applies only where neither level requests the
            // resource: b's missing memory adds nothing, a requests some.
            ("containers: [{name: a, resources: {requests: {memory: 1Gi}}}, {name: b}]\n  resources: {requests: {cpu: 2}}", 2000, 1 << 30, 2000, 1 << 30, 200, (1 << 30) + M200),
            // Overhead is added after the pod-level requests.
            ("containers: [{name: a}]\n  resources: {requests: {cpu: 1}}\n  overhead: {cpu: 250m}", 1250, 0, 1250, M200, 350, M200),
        ];
        for (spec, cpu, mem, nz_cpu, nz_mem, fit_cpu, fit_mem) in cases {
            let (p, _) = compile(&format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  {spec}\n"));
            assert_eq!((p.requests.cpu_milli, p.requests.memory), (*cpu, *mem), "{spec}");
            assert_eq!((p.non_zero_cpu_milli, p.non_zero_memory), (*nz_cpu, *nz_mem), "{spec}");
            assert_eq!((p.fit_score_cpu_milli, p.fit_score_memory), (*fit_cpu, *fit_mem), "{spec}");
        }
    }

    #[test]
    fn node_terms_and_ports_and_images() {
        let (p, i) = compile(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: busybox, ports: [{containerPort: 80, hostPort: 8080}]}]\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: k, operator: In, values: []}]\n        - matchExpressions: [{key: k, operator: Gt, values: ['3']}]\n        - {}\n",
        );
        let req = p.required_affinity.unwrap();
        assert!(!req.terms[0].valid, "In without values is invalid");
        assert_eq!(req.terms[1].labels[0].op, LabelOp::Gt(3));
        assert!(!req.terms[2].valid, "empty term matches nothing");
        assert_eq!(i.resolve(p.images[0].0), "busybox:latest");
        assert_eq!(p.host_ports.len(), 1);
        assert_eq!((i.resolve(p.host_ports[0].protocol), i.resolve(p.host_ports[0].ip)), ("TCP", "0.0.0.0"));
    }

    #[test]
    fn pod_constraints_compile() {
        let (p, i) = compile(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs1, uid: u, controller: true}]}\nspec:\n  containers: [{name: a}]\n  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app]}\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchExpressions: [{key: app, operator: Exists}]}}\n",
        );
        let c = &p.constraints;
        assert_eq!(c.topology_spread.len(), 1);
        assert_eq!(c.topology_spread[0].min_domains, 1);
        assert_eq!(c.topology_spread[0].node_affinity_policy, InclusionPolicy::Honor);
        assert_eq!(c.topology_spread[0].node_taints_policy, InclusionPolicy::Ignore);
        assert_eq!(c.affinity.required_anti_affinity.len(), 1);
        assert_eq!(i.resolve(c.affinity.required_anti_affinity[0].topology_key), "kubernetes.io/hostname");
        assert_eq!(c.controller.as_ref().map(|c| c.kind), Some(ControllerKind::ReplicaSet));
        let none = compile_label_selector(None, &mut Interner::new());
        assert!(none.matches_nothing);
    }

    #[test]
    fn priority_resolution() {
        let mut pr = Priorities::default();
        pr.add(&api::PriorityClass {
            metadata: api::ObjectMeta { name: "high".into(), ..Default::default() },
            value: 1000,
            global_default: false,
            description: String::new(),
            preemption_policy: Some(api::PreemptionPolicy::Never),
        });
        let spec = |class: &str, prio: Option<i32>| api::PodSpec {
            priority_class_name: class.into(),
            priority: prio,
            ..Default::default()
        };
        assert_eq!(pr.resolve(&spec("high", None)), Ok((1000, PreemptionPolicy::Never)));
        assert_eq!(pr.resolve(&spec("", None)), Ok((0, PreemptionPolicy::PreemptLowerPriority)));
        assert_eq!(pr.resolve(&spec("", Some(7))).unwrap().0, 7);
        assert!(pr.resolve(&spec("nope", None)).unwrap_err().contains("no PriorityClass"));
    }
}
