//! The in-tree plugins, one module each with its tests beside it, and the registry that builds
//! them by name from a profile's args (`registry`).

pub mod defaultpreemption;
pub mod dynamicresources;
pub mod gangscheduling;
pub mod helper;
pub mod image_locality;
pub mod interpodaffinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_unschedulable;
pub mod nodedeclaredfeatures;
pub mod noderesources;
pub mod podtopologyspread;
pub mod registry;
pub mod simple;
pub mod taint_toleration;
#[cfg(test)]
pub mod testutil;
pub mod topologyaware;
pub mod volumes;

use crate::config::PluginArgs;
use crate::snapshot::{Interner, NodeSelector, PreferredTerm, SpreadConstraint};

pub use registry::{build_framework, build_plugin, in_tree, NO_OP_PLUGINS};

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
