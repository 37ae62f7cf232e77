//! The in-tree registry (upstream's `framework/plugins/registry.go`): every plugin name schedperf
//! implements, with the factory that builds it from a profile's args. The framework is handed a
//! [`Registry`] and knows no plugin; the config's catalogue (`config::PLUGINS`: which extension
//! points each name implements, the default multiPoint set) names the same plugins (tested).

use std::sync::Arc;

use super::{
    defaultpreemption, dynamicresources, image_locality, interpodaffinity, node_affinity, node_name, node_ports,
    node_unschedulable, nodedeclaredfeatures, noderesources, podtopologyspread, simple, taint_toleration, volumes,
    CompiledArgs,
};
use crate::config::{DefaultingType, PluginArgs, Profile, ResourceSpec, ScoringStrategyType, PLUGINS};
use crate::framework::{Framework, Plugin, Registry};
use crate::snapshot::Interner;

/// Plugins that are known names but find nothing to do for pods here: the in-tree volume limits
/// plugins (gone upstream at v1.37; NodeVolumeLimits counts in-tree disks as their CSI drivers').
/// Their PreFilter returns Skip, as upstream's does for such pods.
pub const NO_OP_PLUGINS: &[&str] = &["EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits"];

/// The in-tree registry; `compiled` holds the Kubernetes objects inside the profile's args,
/// compiled by [`super::compile_args`].
pub fn in_tree(compiled: &CompiledArgs) -> Registry {
    let mut r = Registry::new();
    for info in PLUGINS {
        let name = info.name;
        let compiled = compiled.clone();
        r.register(name, Box::new(move |args, interner| build_plugin(name, args, &compiled, interner)))
            .expect("the catalogue names each plugin once");
    }
    r
}

/// The framework of `profile` built from the in-tree registry.
pub fn build_framework(
    profile: &Profile,
    compiled: &CompiledArgs,
    interner: &mut Interner,
) -> Result<Framework, String> {
    Framework::new(profile, &in_tree(compiled), interner)
}

/// Builds in-tree plugin `name` from `args`. `Err` names an unknown plugin.
pub fn build_plugin(
    name: &str,
    args: &PluginArgs,
    compiled: &CompiledArgs,
    interner: &mut Interner,
) -> Result<Arc<dyn Plugin>, String> {
    let scored = |interner: &mut Interner, rs: &[ResourceSpec]| -> Vec<noderesources::ScoredResource> {
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
        nodedeclaredfeatures::NAME => Arc::new(nodedeclaredfeatures::NodeDeclaredFeatures::default()),
        dynamicresources::plugin::NAME => Arc::new(dynamicresources::plugin::DynamicResources::default()),
        volumes::binding::NAME => Arc::new(volumes::VolumeBinding::with_shape(&args.volume_binding.shape)),
        volumes::restrictions::NAME => Arc::new(volumes::VolumeRestrictions),
        volumes::zone::NAME => Arc::new(volumes::VolumeZone),
        volumes::limits::NAME => Arc::new(volumes::NodeVolumeLimits),
        v if NO_OP_PLUGINS.contains(&v) => {
            let name: &'static str = NO_OP_PLUGINS.iter().find(|n| **n == v).expect("listed");
            Arc::new(simple::NoVolumes(name))
        }
        other => return Err(format!("unknown plugin {other:?}")),
    };
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExtensionPoint;

    #[test]
    fn every_catalogue_name_builds_and_names_itself() {
        let mut interner = Interner::default();
        let r = in_tree(&CompiledArgs::default());
        let names: Vec<&str> = r.names().collect();
        assert_eq!(names, PLUGINS.iter().map(|p| p.name).collect::<Vec<_>>());
        for info in PLUGINS {
            let p = (r.get(info.name).expect("registered"))(&PluginArgs::default(), &mut interner).expect("builds");
            assert_eq!(p.name(), info.name);
        }
    }

    #[test]
    fn the_default_profile_wires_each_point_as_upstream_registers_it() {
        // (point, the plugins v1.37.2's default profile runs there, in order).
        let config = crate::config::SchedulerConfig::defaults();
        let mut interner = Interner::default();
        let fw = build_framework(&config.profiles[0], &CompiledArgs::default(), &mut interner).unwrap();
        let names = |ids: &[usize]| ids.iter().map(|&i| fw.plugin(i).name()).collect::<Vec<_>>();
        let cases: &[(ExtensionPoint, &[&str])] = &[
            (ExtensionPoint::QueueSort, &["PrioritySort"]),
            (ExtensionPoint::PreEnqueue, &["SchedulingGates", "DynamicResources", "DefaultPreemption"]),
            (ExtensionPoint::PostFilter, &["DynamicResources", "DefaultPreemption"]),
            (ExtensionPoint::Reserve, &["VolumeBinding", "DynamicResources"]),
            (ExtensionPoint::PreBind, &["VolumeBinding", "DynamicResources"]),
            (ExtensionPoint::Bind, &["DefaultBinder"]),
            (ExtensionPoint::Permit, &[]),
            (ExtensionPoint::PostBind, &[]),
        ];
        for (point, want) in cases {
            let got = match point {
                ExtensionPoint::QueueSort => names(&fw.queue_sort),
                ExtensionPoint::PreEnqueue => names(&fw.pre_enqueue),
                ExtensionPoint::PostFilter => names(&fw.post_filter),
                ExtensionPoint::Reserve => names(&fw.reserve),
                ExtensionPoint::PreBind => names(&fw.pre_bind),
                ExtensionPoint::Bind => names(&fw.bind),
                ExtensionPoint::Permit => names(&fw.permit),
                ExtensionPoint::PostBind => names(&fw.post_bind),
                _ => unreachable!(),
            };
            assert_eq!(&got, want, "{point}");
        }
        assert!(fw.queue_sort_fn().is_some(), "PrioritySort gives the queue its order");
    }
}
