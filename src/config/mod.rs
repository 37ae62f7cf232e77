//! TEMPORARY stand-in for the config module being written on the `config` branch; replaced at merge.
#![allow(missing_docs)]

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategyType {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UtilizationShapePoint {
    pub utilization: i32,
    pub score: i32,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoringStrategy {
    pub kind: ScoringStrategyType,
    pub resources: Vec<ResourceSpec>,
    pub shape: Vec<UtilizationShapePoint>,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeResourcesFitArgs {
    pub ignored_resources: Vec<String>,
    pub ignored_resource_groups: Vec<String>,
    pub scoring_strategy: ScoringStrategy,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalancedAllocationArgs {
    pub resources: Vec<ResourceSpec>,
}
#[derive(Clone, Debug, PartialEq)]
pub struct NodeAffinityArgs {
    pub added_affinity: Option<serde_json::Value>,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DefaultingType {
    System,
    List,
}
#[derive(Clone, Debug, PartialEq)]
pub struct PodTopologySpreadArgs {
    pub default_constraints: Vec<serde_json::Value>,
    pub defaulting_type: DefaultingType,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterPodAffinityArgs {
    pub hard_pod_affinity_weight: i32,
    pub ignore_preferred_terms_of_existing_pods: bool,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultPreemptionArgs {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
}
#[derive(Clone, Debug, PartialEq)]
pub struct PluginArgs {
    pub node_resources_fit: NodeResourcesFitArgs,
    pub balanced_allocation: BalancedAllocationArgs,
    pub node_affinity: NodeAffinityArgs,
    pub pod_topology_spread: PodTopologySpreadArgs,
    pub inter_pod_affinity: InterPodAffinityArgs,
    pub default_preemption: DefaultPreemptionArgs,
}
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ProfilePlugins {
    pub pre_enqueue: Vec<String>,
    pub queue_sort: Vec<String>,
    pub pre_filter: Vec<String>,
    pub filter: Vec<String>,
    pub post_filter: Vec<String>,
    pub pre_score: Vec<String>,
    pub score: Vec<(String, i32)>,
    pub reserve: Vec<String>,
    pub permit: Vec<String>,
    pub pre_bind: Vec<String>,
    pub bind: Vec<String>,
    pub post_bind: Vec<String>,
}
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub scheduler_name: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: ProfilePlugins,
    pub args: PluginArgs,
}
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    pub source: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub parallelism: i32,
    pub pod_initial_backoff_seconds: i64,
    pub pod_max_backoff_seconds: i64,
    pub profiles: Vec<Profile>,
    pub digest: String,
}

fn v(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

impl SchedulerConfig {
    pub fn defaults() -> Self {
        let rs = || vec![ResourceSpec { name: "cpu".into(), weight: 1 }, ResourceSpec { name: "memory".into(), weight: 1 }];
        let plugins = ProfilePlugins {
            pre_enqueue: v(&["SchedulingGates"]),
            queue_sort: v(&["PrioritySort"]),
            pre_filter: v(&["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity"]),
            filter: v(&["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity"]),
            post_filter: v(&["DefaultPreemption"]),
            pre_score: v(&["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"]),
            score: vec![("TaintToleration".into(), 3), ("NodeAffinity".into(), 2), ("NodeResourcesFit".into(), 1), ("PodTopologySpread".into(), 2), ("InterPodAffinity".into(), 2), ("NodeResourcesBalancedAllocation".into(), 1), ("ImageLocality".into(), 1)],
            reserve: v(&["VolumeBinding"]),
            permit: vec![],
            pre_bind: v(&["VolumeBinding"]),
            bind: v(&["DefaultBinder"]),
            post_bind: vec![],
        };
        let args = PluginArgs {
            node_resources_fit: NodeResourcesFitArgs { ignored_resources: vec![], ignored_resource_groups: vec![], scoring_strategy: ScoringStrategy { kind: ScoringStrategyType::LeastAllocated, resources: rs(), shape: vec![] } },
            balanced_allocation: BalancedAllocationArgs { resources: rs() },
            node_affinity: NodeAffinityArgs { added_affinity: None },
            pod_topology_spread: PodTopologySpreadArgs { default_constraints: vec![], defaulting_type: DefaultingType::System },
            inter_pod_affinity: InterPodAffinityArgs { hard_pod_affinity_weight: 1, ignore_preferred_terms_of_existing_pods: false },
            default_preemption: DefaultPreemptionArgs { min_candidate_nodes_percentage: 10, min_candidate_nodes_absolute: 100 },
        };
        SchedulerConfig {
            source: "<defaults>".into(),
            percentage_of_nodes_to_score: None,
            parallelism: 16,
            pod_initial_backoff_seconds: 1,
            pod_max_backoff_seconds: 10,
            profiles: vec![Profile { scheduler_name: "default-scheduler".into(), percentage_of_nodes_to_score: None, plugins, args }],
            digest: String::new(),
        }
    }
}
