//! The in-tree plugins, one module each with its tests beside it, and the registry that builds
//! them by name from a profile's args.

pub mod defaultpreemption;
pub mod helper;
pub mod image_locality;
pub mod interpodaffinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_unschedulable;
pub mod noderesources;
pub mod podtopologyspread;
pub mod simple;
pub mod taint_toleration;
#[cfg(test)]
pub mod testutil;

use std::sync::Arc;

use crate::config::{DefaultingType, PluginArgs, ScoringStrategyType};
use crate::framework::Plugin;
use crate::snapshot::{Interner, NodeSelector, PreferredTerm, SpreadConstraint};

/// Plugin inputs compiled by the caller from raw Kubernetes objects in the args.
#[derive(Clone, Debug, Default)]
pub struct CompiledArgs {
    /// NodeAffinityArgs.addedAffinity, required part.
    pub added_required: Option<NodeSelector>,
    /// NodeAffinityArgs.addedAffinity, preferred part.
    pub added_preferred: Vec<PreferredTerm>,
    /// The preferred part has terms (even only empty ones): NodeAffinity's PreScore never skips.
    pub added_preferred_set: bool,
    /// PodTopologySpreadArgs.defaultConstraints compiled (selectors unused: deduced per pod). When
    /// `None`, `build_plugin` compiles them from the raw args itself.
    pub spread_default_constraints: Option<Vec<SpreadConstraint>>,
}

/// Plugins that are known names but find nothing to do for pods here: the volume plugins (pods
/// carry no volumes), DynamicResources (no resource claims) and NodeDeclaredFeatures (no declared
/// feature requirements). Their PreFilter returns Skip, as upstream's does for such pods; those
/// registered at Score (VolumeBinding, DynamicResources) score 0 on every node, as upstream's do.
pub const NO_OP_PLUGINS: &[&str] = &[
    "DynamicResources",
    "NodeDeclaredFeatures",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "EBSLimits",
    "GCEPDLimits",
    "AzureDiskLimits",
    "CinderLimits",
];

/// Builds plugin `name` from `args`. `Err` names an unknown plugin.
pub fn build_plugin(
    name: &str,
    args: &PluginArgs,
    compiled: &CompiledArgs,
    interner: &mut Interner,
) -> Result<Arc<dyn Plugin>, String> {
    let scored = |interner: &mut Interner, rs: &[crate::config::ResourceSpec]| -> Vec<noderesources::ScoredResource> {
        rs.iter().map(|r| noderesources::ScoredResource { name: interner.intern(&r.name), weight: r.weight }).collect()
    };
    let p: Arc<dyn Plugin> = match name {
        simple::PRIORITY_SORT => Arc::new(simple::PrioritySort),
        simple::SCHEDULING_GATES => Arc::new(simple::SchedulingGates),
        simple::DEFAULT_BINDER => Arc::new(simple::DefaultBinder),
        node_unschedulable::NAME => Arc::new(node_unschedulable::NodeUnschedulable),
        node_name::NAME => Arc::new(node_name::NodeName),
        taint_toleration::NAME => Arc::new(taint_toleration::TaintToleration),
        node_ports::NAME => Arc::new(node_ports::NodePorts),
        image_locality::NAME => Arc::new(image_locality::ImageLocality),
        node_affinity::NAME => Arc::new(node_affinity::NodeAffinity {
            added_required: compiled.added_required.clone(),
            added_preferred: compiled.added_preferred.clone(),
            added_preferred_set: compiled.added_preferred_set,
        }),
        noderesources::FIT => {
            let a = &args.node_resources_fit;
            let strategy = match a.scoring_strategy.kind {
                ScoringStrategyType::LeastAllocated => noderesources::StrategyKind::LeastAllocated,
                ScoringStrategyType::MostAllocated => noderesources::StrategyKind::MostAllocated,
                ScoringStrategyType::RequestedToCapacityRatio => noderesources::StrategyKind::RequestedToCapacityRatio(
                    a.scoring_strategy.shape.iter().map(|p| (p.utilization as i64, p.score as i64)).collect(),
                ),
            };
            Arc::new(noderesources::Fit {
                ignored_resources: a.ignored_resources.iter().map(|r| interner.intern(r)).collect(),
                ignored_resource_groups: a.ignored_resource_groups.clone(),
                strategy,
                resources: scored(interner, &a.scoring_strategy.resources),
            })
        }
        noderesources::BALANCED => Arc::new(noderesources::BalancedAllocation {
            resources: scored(interner, &args.balanced_allocation.resources),
        }),
        podtopologyspread::NAME => {
            let a = &args.pod_topology_spread;
            match &compiled.spread_default_constraints {
                Some(c) if a.defaulting_type != DefaultingType::System => {
                    Arc::new(podtopologyspread::PodTopologySpread {
                        default_constraints: c.clone(),
                        system_defaulted: false,
                    })
                }
                _ => Arc::new(podtopologyspread::PodTopologySpread::from_args(a, interner)?),
            }
        }
        interpodaffinity::NAME => Arc::new(interpodaffinity::InterPodAffinity {
            hard_pod_affinity_weight: args.inter_pod_affinity.hard_pod_affinity_weight as i64,
            ignore_preferred_terms_of_existing_pods: args.inter_pod_affinity.ignore_preferred_terms_of_existing_pods,
        }),
        defaultpreemption::NAME => Arc::new(defaultpreemption::DefaultPreemption {
            min_candidate_nodes_percentage: args.default_preemption.min_candidate_nodes_percentage,
            min_candidate_nodes_absolute: args.default_preemption.min_candidate_nodes_absolute,
        }),
        v if NO_OP_PLUGINS.contains(&v) => {
            let name: &'static str = NO_OP_PLUGINS.iter().find(|n| **n == v).expect("listed");
            Arc::new(simple::NoVolumes(name))
        }
        other => return Err(format!("unknown plugin {other:?}")),
    };
    Ok(p)
}

/// Compiles the Kubernetes objects inside a profile's plugin args (NodeAffinityArgs.addedAffinity).
/// `file` names the config for error messages.
pub fn compile_args(
    args: &PluginArgs,
    interner: &mut Interner,
    file: &str,
) -> Result<CompiledArgs, crate::error::InputError> {
    use crate::snapshot::compile::{compile_node_selector, compile_preferred};
    let mut out = CompiledArgs::default();
    if let Some(raw) = &args.node_affinity.added_affinity {
        let na: crate::api::NodeAffinity = serde_path_to_error::deserialize(raw.clone()).map_err(|e| {
            crate::error::InputError::new(
                file,
                format!("pluginConfig[NodeAffinity].args.addedAffinity.{}", e.path()),
                e.inner().to_string(),
            )
        })?;
        out.added_required =
            na.required_during_scheduling_ignored_during_execution.as_ref().map(|s| compile_node_selector(s, interner));
        let terms = na.preferred_during_scheduling_ignored_during_execution.as_deref().unwrap_or_default();
        out.added_preferred = compile_preferred(terms, interner);
        out.added_preferred_set = !terms.is_empty();
    }
    Ok(out)
}
