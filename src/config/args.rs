//! Plugin args (`pluginConfig[*].args`): decoding, defaulting (`apis/config/v1/defaults.go`) and
//! validation (`apis/config/validation/validation_pluginargs.go`).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{decode_value, null_as_default, API_VERSION};
use crate::error::InputError;

/// Upstream `config.MaxCustomPriorityScore`: the highest score of a utilization shape point.
pub const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;

/// The args of every plugin that takes args; absent `pluginConfig` entries get the defaults.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PluginArgs {
    pub node_resources_fit: NodeResourcesFitArgs,
    pub balanced_allocation: BalancedAllocationArgs,
    pub node_affinity: NodeAffinityArgs,
    pub pod_topology_spread: PodTopologySpreadArgs,
    pub inter_pod_affinity: InterPodAffinityArgs,
    pub default_preemption: DefaultPreemptionArgs,
    pub volume_binding: VolumeBindingArgs,
}

/// `VolumeBindingArgs` (StorageCapacityScoring on, as at v1.37.2's defaults): the shape of
/// StorageCapacityScoring's score, utilization 0..=100 to score 0..=10 (defaulted to 0 → 10,
/// 100 → 0 when empty, `SetDefaults_VolumeBindingArgs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VolumeBindingArgs {
    pub shape: Vec<UtilizationShapePoint>,
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            shape: vec![
                UtilizationShapePoint { utilization: 0, score: MAX_CUSTOM_PRIORITY_SCORE },
                UtilizationShapePoint { utilization: 100, score: 0 },
            ],
        }
    }
}

impl Default for PluginArgs {
    fn default() -> Self {
        PluginArgs {
            node_resources_fit: NodeResourcesFitArgs::default(),
            balanced_allocation: BalancedAllocationArgs { resources: default_resources() },
            node_affinity: NodeAffinityArgs { added_affinity: None },
            pod_topology_spread: PodTopologySpreadArgs {
                default_constraints: Vec::new(),
                defaulting_type: DefaultingType::System,
            },
            inter_pod_affinity: InterPodAffinityArgs {
                hard_pod_affinity_weight: 1,
                ignore_preferred_terms_of_existing_pods: false,
            },
            default_preemption: DefaultPreemptionArgs {
                min_candidate_nodes_percentage: 10,
                min_candidate_nodes_absolute: 100,
            },
            volume_binding: VolumeBindingArgs::default(),
        }
    }
}

/// A resource and its weight in a scoring strategy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
}

/// One point of a RequestedToCapacityRatio shape: utilization 0..=100 maps to score 0..=10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UtilizationShapePoint {
    pub utilization: i32,
    pub score: i32,
}

/// The NodeResourcesFit scoring strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScoringStrategyType {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
}

/// How NodeResourcesFit scores: the strategy, the resources it weighs, and (for
/// RequestedToCapacityRatio only) the shape; `shape` is empty for the other strategies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScoringStrategy {
    pub kind: ScoringStrategyType,
    pub resources: Vec<ResourceSpec>,
    pub shape: Vec<UtilizationShapePoint>,
}

/// `NodeResourcesFitArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeResourcesFitArgs {
    pub ignored_resources: Vec<String>,
    pub ignored_resource_groups: Vec<String>,
    pub scoring_strategy: ScoringStrategy,
}

impl Default for NodeResourcesFitArgs {
    fn default() -> Self {
        NodeResourcesFitArgs {
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
            scoring_strategy: ScoringStrategy {
                kind: ScoringStrategyType::LeastAllocated,
                resources: default_resources(),
                shape: Vec::new(),
            },
        }
    }
}

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BalancedAllocationArgs {
    pub resources: Vec<ResourceSpec>,
}

/// `NodeAffinityArgs`: `addedAffinity` is kept as the raw Kubernetes `NodeAffinity` object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeAffinityArgs {
    pub added_affinity: Option<Value>,
}

/// How PodTopologySpread picks constraints for pods that define none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DefaultingType {
    /// The built-in constraints (hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway).
    System,
    /// `defaultConstraints` (possibly empty).
    List,
}

/// `PodTopologySpreadArgs`: each default constraint is a raw `TopologySpreadConstraint`, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodTopologySpreadArgs {
    pub default_constraints: Vec<Value>,
    pub defaulting_type: DefaultingType,
}

/// `InterPodAffinityArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InterPodAffinityArgs {
    /// The score an existing pod's required affinity term adds when the incoming pod matches it (0..=100).
    pub hard_pod_affinity_weight: i32,
    pub ignore_preferred_terms_of_existing_pods: bool,
}

/// `DefaultPreemptionArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DefaultPreemptionArgs {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
}

/// cpu and memory with weight 1 each (upstream `defaultResourceSpec`).
fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec { name: "cpu".into(), weight: 1 }, ResourceSpec { name: "memory".into(), weight: 1 }]
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawResourceSpec {
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    weight: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShapePoint {
    #[serde(default, deserialize_with = "null_as_default")]
    utilization: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    score: i32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequestedToCapacityRatio {
    #[serde(default, deserialize_with = "null_as_default")]
    shape: Vec<RawShapePoint>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawScoringStrategy {
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    resources: Vec<RawResourceSpec>,
    requested_to_capacity_ratio: Option<RawRequestedToCapacityRatio>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawFitArgs {
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    ignored_resources: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    ignored_resource_groups: Vec<String>,
    scoring_strategy: Option<RawScoringStrategy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBalancedAllocationArgs {
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    resources: Vec<RawResourceSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawNodeAffinityArgs {
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    added_affinity: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPodTopologySpreadArgs {
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    default_constraints: Vec<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    defaulting_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConstraint {
    #[serde(default, deserialize_with = "null_as_default")]
    max_skew: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    topology_key: String,
    #[serde(default, deserialize_with = "null_as_default")]
    when_unsatisfiable: String,
    label_selector: Option<Value>,
    // Read from the raw value when the constraints are compiled (`compile_default_constraints`).
    #[serde(rename = "minDomains")]
    _min_domains: Option<Value>,
    #[serde(rename = "nodeAffinityPolicy")]
    _node_affinity_policy: Option<Value>,
    #[serde(rename = "nodeTaintsPolicy")]
    _node_taints_policy: Option<Value>,
    #[serde(rename = "matchLabelKeys")]
    _match_label_keys: Option<Value>,
}

/// `VolumeBindingArgs`: `shape` is applied (StorageCapacityScoring); `bindTimeoutSeconds` is
/// validated, not used (binding completes at once here).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct RawVolumeBindingArgs {
    kind: Option<Value>,
    api_version: Option<Value>,
    #[serde(default)]
    bind_timeout_seconds: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    shape: Vec<RawShapePoint>,
}

/// `SetDefaults_VolumeBindingArgs` then `ValidateVolumeBindingArgs` (StorageCapacityScoring on).
fn volume_binding_args(raw: RawVolumeBindingArgs, path: &str) -> Result<VolumeBindingArgs, InputError> {
    if let Some(t) = raw.bind_timeout_seconds.filter(|t| *t < 0) {
        return Err(err(
            &format!("{path}.bindTimeoutSeconds"),
            format!("invalid BindTimeoutSeconds {t}, should not be a negative value"),
        ));
    }
    if raw.shape.is_empty() {
        return Ok(VolumeBindingArgs::default());
    }
    Ok(VolumeBindingArgs { shape: validate_shape(raw.shape, &format!("{path}.shape"))? })
}

/// `DynamicResourcesArgs`: decoded for strictness; pods here carry no resource claims.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct RawDynamicResourcesArgs {
    kind: Option<Value>,
    api_version: Option<Value>,
    filter_timeout: Option<Value>,
    binding_timeout: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawInterPodAffinityArgs {
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    hard_pod_affinity_weight: Option<i32>,
    #[serde(default, deserialize_with = "null_as_default")]
    ignore_preferred_terms_of_existing_pods: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawDefaultPreemptionArgs {
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    min_candidate_nodes_percentage: Option<i32>,
    min_candidate_nodes_absolute: Option<i32>,
}

/// Whether `name` is a plugin whose args schedperf models.
pub(crate) fn has_args_model(name: &str) -> bool {
    matches!(
        name,
        "NodeResourcesFit"
            | "NodeResourcesBalancedAllocation"
            | "NodeAffinity"
            | "PodTopologySpread"
            | "InterPodAffinity"
            | "DefaultPreemption"
            | "VolumeBinding"
            | "DynamicResources"
    )
}

/// Decodes, defaults and validates the args of plugin `name` into `out`. `path` is
/// `profiles[i].pluginConfig[j].args`. Decoding is strict (an unknown field is an error) for every
/// plugin upstream registers an args kind for; args of the other plugins are ignored, as upstream
/// keeps them undecoded (`runtime.Unknown`).
pub(crate) fn apply_plugin_args(name: &str, args: &Value, path: &str, out: &mut PluginArgs) -> Result<(), InputError> {
    if !has_args_model(name) {
        return Ok(());
    }
    let obj = match args {
        Value::Null => return Ok(()),
        Value::Object(obj) => obj,
        other => {
            return Err(err(path, format!("args must be a mapping of {name}Args fields, got {}", json_kind(other))));
        }
    };
    let expected_kind = format!("{name}Args");
    if let Some(kind) = obj.get("kind") {
        if kind.as_str() != Some(expected_kind.as_str()) {
            return Err(err(
                &format!("{path}.kind"),
                format!("args of plugin {name} must be of kind {expected_kind}, got {kind}"),
            ));
        }
    }
    if let Some(v) = obj.get("apiVersion") {
        if v.as_str() != Some(API_VERSION) {
            return Err(err(&format!("{path}.apiVersion"), format!("expected {API_VERSION}, got {v}")));
        }
    }
    match name {
        "NodeResourcesFit" => out.node_resources_fit = fit_args(decode(args, path)?, path)?,
        "NodeResourcesBalancedAllocation" => {
            out.balanced_allocation = balanced_allocation_args(decode(args, path)?, path)?;
        }
        "NodeAffinity" => out.node_affinity = node_affinity_args(decode(args, path)?, path)?,
        "PodTopologySpread" => out.pod_topology_spread = pod_topology_spread_args(decode(args, path)?, path)?,
        "InterPodAffinity" => out.inter_pod_affinity = inter_pod_affinity_args(decode(args, path)?, path)?,
        "DefaultPreemption" => out.default_preemption = default_preemption_args(decode(args, path)?, path)?,
        "VolumeBinding" => out.volume_binding = volume_binding_args(decode(args, path)?, path)?,
        "DynamicResources" => {
            decode::<RawDynamicResourcesArgs>(args, path)?;
        }
        _ => unreachable!("has_args_model covers exactly these names"),
    }
    Ok(())
}

fn decode<T: DeserializeOwned>(args: &Value, path: &str) -> Result<T, InputError> {
    decode_value(args.clone()).map_err(|e| e.within(path))
}

fn err(path: &str, message: impl Into<String>) -> InputError {
    InputError::new("", path, message)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Upstream `SetDefaults_NodeResourcesFitArgs` then `ValidateNodeResourcesFitArgs`.
fn fit_args(raw: RawFitArgs, path: &str) -> Result<NodeResourcesFitArgs, InputError> {
    for (i, r) in raw.ignored_resources.iter().enumerate() {
        validate_qualified_name(r).map_err(|m| err(&format!("{path}.ignoredResources[{i}]"), m))?;
    }
    for (i, g) in raw.ignored_resource_groups.iter().enumerate() {
        let p = format!("{path}.ignoredResourceGroups[{i}]");
        if g.contains('/') {
            return Err(err(
                &p,
                format!("resource group name {g:?} can't contain '/'; give the prefix only, as \"example.com\""),
            ));
        }
        validate_qualified_name(g).map_err(|m| err(&p, m))?;
    }
    let strategy_path = format!("{path}.scoringStrategy");
    let Some(strategy) = raw.scoring_strategy else {
        return Ok(NodeResourcesFitArgs {
            ignored_resources: raw.ignored_resources,
            ignored_resource_groups: raw.ignored_resource_groups,
            ..NodeResourcesFitArgs::default()
        });
    };
    let kind = match strategy.kind.as_str() {
        "LeastAllocated" => ScoringStrategyType::LeastAllocated,
        "MostAllocated" => ScoringStrategyType::MostAllocated,
        "RequestedToCapacityRatio" => ScoringStrategyType::RequestedToCapacityRatio,
        other => {
            return Err(err(
                &format!("{strategy_path}.type"),
                format!("unsupported scoring strategy {other:?}; use LeastAllocated, MostAllocated or RequestedToCapacityRatio"),
            ));
        }
    };
    let resources = default_and_validate_resources(strategy.resources, &format!("{strategy_path}.resources"))?;
    let rtcr_path = format!("{strategy_path}.requestedToCapacityRatio");
    let shape = match (kind, strategy.requested_to_capacity_ratio) {
        (ScoringStrategyType::RequestedToCapacityRatio, None) => {
            return Err(err(&rtcr_path, "must be specified when type is RequestedToCapacityRatio; give a shape"));
        }
        (ScoringStrategyType::RequestedToCapacityRatio, Some(r)) => {
            validate_shape(r.shape, &format!("{rtcr_path}.shape"))?
        }
        (_, Some(_)) => {
            return Err(err(&rtcr_path, "must be absent when type is not RequestedToCapacityRatio"));
        }
        (_, None) => Vec::new(),
    };
    Ok(NodeResourcesFitArgs {
        ignored_resources: raw.ignored_resources,
        ignored_resource_groups: raw.ignored_resource_groups,
        scoring_strategy: ScoringStrategy { kind, resources, shape },
    })
}

/// Empty resources become cpu/1 memory/1 and an absent (zero) weight becomes 1, as upstream
/// defaults do; the weights must then be in 1..=100 (`validateResources`).
fn default_and_validate_resources(raw: Vec<RawResourceSpec>, path: &str) -> Result<Vec<ResourceSpec>, InputError> {
    if raw.is_empty() {
        return Ok(default_resources());
    }
    raw.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let weight = if r.weight == 0 { 1 } else { r.weight };
            if !(1..=100).contains(&weight) {
                return Err(err(
                    &format!("{path}[{i}].weight"),
                    format!("resource weight of {} is {weight}, not in the valid range 1..=100", r.name),
                ));
            }
            Ok(ResourceSpec { name: r.name, weight })
        })
        .collect()
}

/// Upstream `validateFunctionShape`: at least one point, utilization strictly increasing and in
/// 0..=100, score in 0..=[`MAX_CUSTOM_PRIORITY_SCORE`].
fn validate_shape(raw: Vec<RawShapePoint>, path: &str) -> Result<Vec<UtilizationShapePoint>, InputError> {
    if raw.is_empty() {
        return Err(err(path, "at least one point must be specified"));
    }
    for i in 1..raw.len() {
        if raw[i - 1].utilization >= raw[i].utilization {
            return Err(err(
                &format!("{path}[{i}].utilization"),
                format!(
                    "utilization values must be strictly increasing; {} follows {}",
                    raw[i].utilization,
                    raw[i - 1].utilization
                ),
            ));
        }
    }
    for (i, p) in raw.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            return Err(err(
                &format!("{path}[{i}].utilization"),
                format!("{} is not in the valid range 0..=100", p.utilization),
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            return Err(err(
                &format!("{path}[{i}].score"),
                format!("{} is not in the valid range 0..={MAX_CUSTOM_PRIORITY_SCORE}", p.score),
            ));
        }
    }
    Ok(raw.into_iter().map(|p| UtilizationShapePoint { utilization: p.utilization, score: p.score }).collect())
}

/// Upstream `SetDefaults_NodeResourcesBalancedAllocationArgs` then its validation: no repeated
/// resource, every weight 1 (weights are not used by the formula).
fn balanced_allocation_args(raw: RawBalancedAllocationArgs, path: &str) -> Result<BalancedAllocationArgs, InputError> {
    if raw.resources.is_empty() {
        return Ok(BalancedAllocationArgs { resources: default_resources() });
    }
    let mut resources: Vec<ResourceSpec> = Vec::with_capacity(raw.resources.len());
    for (i, r) in raw.resources.into_iter().enumerate() {
        if resources.iter().any(|seen| seen.name == r.name) {
            return Err(err(&format!("{path}.resources[{i}].name"), format!("resource {} is listed twice", r.name)));
        }
        let weight = if r.weight == 0 { 1 } else { r.weight };
        if weight != 1 {
            return Err(err(&format!("{path}.resources[{i}].weight"), format!("must be 1, got {weight}")));
        }
        resources.push(ResourceSpec { name: r.name, weight });
    }
    Ok(BalancedAllocationArgs { resources })
}

/// `addedAffinity` must be a NodeAffinity mapping; its terms are converted and checked by the
/// NodeAffinity plugin.
fn node_affinity_args(raw: RawNodeAffinityArgs, path: &str) -> Result<NodeAffinityArgs, InputError> {
    match raw.added_affinity {
        None | Some(Value::Null) => Ok(NodeAffinityArgs { added_affinity: None }),
        Some(v @ Value::Object(_)) => Ok(NodeAffinityArgs { added_affinity: Some(v) }),
        Some(other) => Err(err(
            &format!("{path}.addedAffinity"),
            format!("must be a NodeAffinity mapping, got {}", json_kind(&other)),
        )),
    }
}

/// Upstream `SetDefaults_PodTopologySpreadArgs` then `ValidatePodTopologySpreadArgs`.
fn pod_topology_spread_args(raw: RawPodTopologySpreadArgs, path: &str) -> Result<PodTopologySpreadArgs, InputError> {
    let type_path = format!("{path}.defaultingType");
    let defaulting_type = match raw.defaulting_type.as_str() {
        "" | "System" => DefaultingType::System,
        "List" => DefaultingType::List,
        other => return Err(err(&type_path, format!("unsupported defaulting type {other:?}; use System or List"))),
    };
    if defaulting_type == DefaultingType::System && !raw.default_constraints.is_empty() {
        return Err(err(
            &type_path,
            "System defaulting uses the built-in constraints, so defaultConstraints must be empty; set defaultingType: List to use your own",
        ));
    }
    let constraints_path = format!("{path}.defaultConstraints");
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, c) in raw.default_constraints.iter().enumerate() {
        let p = format!("{constraints_path}[{i}]");
        let rc: RawConstraint = decode(c, &p)?;
        if rc.max_skew <= 0 {
            return Err(err(&format!("{p}.maxSkew"), format!("{} is not greater than 0", rc.max_skew)));
        }
        if rc.topology_key.is_empty() {
            return Err(err(&format!("{p}.topologyKey"), "can not be empty"));
        }
        validate_qualified_name(&rc.topology_key).map_err(|m| err(&format!("{p}.topologyKey"), m))?;
        match rc.when_unsatisfiable.as_str() {
            "DoNotSchedule" | "ScheduleAnyway" => {}
            "" => {
                return Err(err(
                    &format!("{p}.whenUnsatisfiable"),
                    "can not be empty; use DoNotSchedule or ScheduleAnyway",
                ))
            }
            other => {
                return Err(err(
                    &format!("{p}.whenUnsatisfiable"),
                    format!("unsupported value {other:?}; use DoNotSchedule or ScheduleAnyway"),
                ));
            }
        }
        if rc.label_selector.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(err(
                &format!("{p}.labelSelector"),
                "default constraints must not define a selector, as it is deduced for each pod; remove it",
            ));
        }
        let key = (rc.topology_key, rc.when_unsatisfiable);
        if seen.contains(&key) {
            return Err(err(&p, format!("duplicate constraint {{{}, {}}}", key.0, key.1)));
        }
        seen.push(key);
    }
    Ok(PodTopologySpreadArgs { default_constraints: raw.default_constraints, defaulting_type })
}

/// Upstream `SetDefaults_InterPodAffinityArgs` then `ValidateInterPodAffinityArgs`.
fn inter_pod_affinity_args(raw: RawInterPodAffinityArgs, path: &str) -> Result<InterPodAffinityArgs, InputError> {
    let weight = raw.hard_pod_affinity_weight.unwrap_or(1);
    if !(0..=100).contains(&weight) {
        return Err(err(
            &format!("{path}.hardPodAffinityWeight"),
            format!("{weight} is not in the valid range 0..=100"),
        ));
    }
    Ok(InterPodAffinityArgs {
        hard_pod_affinity_weight: weight,
        ignore_preferred_terms_of_existing_pods: raw.ignore_preferred_terms_of_existing_pods,
    })
}

/// Upstream `SetDefaults_DefaultPreemptionArgs` then `ValidateDefaultPreemptionArgs`.
fn default_preemption_args(raw: RawDefaultPreemptionArgs, path: &str) -> Result<DefaultPreemptionArgs, InputError> {
    let percentage = raw.min_candidate_nodes_percentage.unwrap_or(10);
    let absolute = raw.min_candidate_nodes_absolute.unwrap_or(100);
    let percentage_path = format!("{path}.minCandidateNodesPercentage");
    if !(0..=100).contains(&percentage) {
        return Err(err(&percentage_path, format!("{percentage} is not in the valid range 0..=100")));
    }
    if absolute < 0 {
        return Err(err(&format!("{path}.minCandidateNodesAbsolute"), format!("{absolute} is negative")));
    }
    if percentage == 0 && absolute == 0 {
        return Err(err(&percentage_path, "cannot be zero at the same time as minCandidateNodesAbsolute"));
    }
    Ok(DefaultPreemptionArgs { min_candidate_nodes_percentage: percentage, min_candidate_nodes_absolute: absolute })
}

/// Kubernetes `IsQualifiedName` (used for label names and resource names): an optional DNS-1123
/// subdomain prefix and `/`, then a name of at most 63 characters of `[A-Za-z0-9_.-]` that starts
/// and ends with an alphanumeric character.
pub(crate) fn validate_qualified_name(value: &str) -> Result<(), String> {
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return Err(format!("{value:?}: the prefix before '/' must be non-empty"));
            }
            if !is_dns1123_subdomain(prefix) {
                return Err(format!(
                    "{value:?}: the prefix {prefix:?} must be a lowercase DNS subdomain (as example.com)"
                ));
            }
            *name
        }
        _ => return Err(format!("{value:?}: a qualified name has at most one '/'")),
    };
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
        && name.starts_with(alnum)
        && name.ends_with(alnum);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{value:?}: the name part must be 1..=63 characters of [A-Za-z0-9_.-], starting and ending with a letter or digit"
        ))
    }
}

fn is_dns1123_subdomain(s: &str) -> bool {
    let lower_alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.chars().all(|c| lower_alnum(c) || c == '-' || c == '.')
        && s.starts_with(lower_alnum)
        && s.ends_with(lower_alnum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        let check = |v: &str, ok: bool| assert_eq!(validate_qualified_name(v).is_ok(), ok, "{v}");
        check("cpu", true);
        check("example.com/gpu", true);
        check("topology.kubernetes.io/zone", true);
        check("a_b.c-d", true);
        check("", false);
        check("-x", false);
        check("x-", false);
        check("Example.com/gpu", false);
        check("/gpu", false);
        check("a/b/c", false);
        check(&"x".repeat(64), false);
        check(&"x".repeat(63), true);
    }
}
