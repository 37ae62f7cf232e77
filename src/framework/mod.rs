//! The scheduling framework: extension-point interfaces, statuses, cycle state, a registry of
//! plugin factories, and a profile's plugin instances wired to their extension points with the
//! code that runs each point (upstream's `framework/runtime`). It knows no plugin: whoever builds
//! a [`Framework`] hands it a [`Registry`] (the in-tree one is `plugins::registry::in_tree`).

pub mod plugin;
pub mod points;
pub mod profile;
pub mod registry;
pub mod runtime;
pub mod sign;
pub mod status;

use std::sync::Arc;

pub use plugin::{
    default_normalize_score, BindingPod, CycleCx, CycleState, Plugin, PostFilterCandidate, PostFilterPlan,
    PostFilterResult, PreFilterResult, QueueSortFn, QueueSortKey, ScoreMemoKey, MAX_NODE_SCORE,
};
pub use points::{PermitOutcome, WaitingPods, MAX_PERMIT_TIMEOUT};
pub use registry::{PluginFactory, Registry};
pub use runtime::{Diagnosis, Failures, NodeFailure};
pub use sign::{Sign, SignBuilder, Signature};
pub use status::{Code, Reject, Status};

use crate::config::Profile;
use crate::snapshot::Interner;

/// Index of a plugin instance within a [`Framework`].
pub type PluginId = usize;

/// A profile's plugins, instantiated once each and listed per extension point in execution order.
pub struct Framework {
    pub scheduler_name: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: Vec<Arc<dyn Plugin>>,
    pub pre_enqueue: Vec<PluginId>,
    pub queue_sort: Vec<PluginId>,
    pub pre_filter: Vec<PluginId>,
    pub filter: Vec<PluginId>,
    pub post_filter: Vec<PluginId>,
    pub pre_score: Vec<PluginId>,
    /// Score plugins with their weights.
    pub score: Vec<(PluginId, i64)>,
    pub reserve: Vec<PluginId>,
    pub permit: Vec<PluginId>,
    pub pre_bind: Vec<PluginId>,
    pub bind: Vec<PluginId>,
    pub post_bind: Vec<PluginId>,
}

impl Framework {
    /// Whether, with PreFilter's `skip` flags, every Filter left for `pod` reads placed pods only
    /// through the request columns and the pod count, or reads only the node
    /// ([`Plugin::filter_reads_only_columns`]), and the pod requests no scalar resource.
    pub fn filters_read_only_columns(&self, pod: &crate::snapshot::PodInfo, skip: &[bool]) -> bool {
        pod.requests.scalars.iter().all(|&(_, q)| q == 0)
            && self.filter.iter().all(|&pid| skip[pid] || self.plugin(pid).filter_reads_only_columns())
    }

    /// Instantiates `profile`'s plugins from `registry`, each once, and lists them at the points
    /// the profile enables them at (`NewFramework`). A name the registry lacks is an error, as
    /// upstream's "plugin %q does not exist"; the config validated names against its catalogue.
    pub fn new(profile: &Profile, registry: &Registry, interner: &mut Interner) -> Result<Self, String> {
        let mut fw = Framework::empty(&profile.scheduler_name);
        fw.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score;
        let p = &profile.plugins;
        let mut id = |fw: &mut Framework, name: &str| -> Result<PluginId, String> {
            if let Some(i) = fw.plugins.iter().position(|pl| pl.name() == name) {
                return Ok(i);
            }
            let factory = registry.get(name).ok_or_else(|| format!("plugin {name:?} does not exist"))?;
            let plugin = factory(&profile.args, interner)?;
            if plugin.name() != name {
                return Err(format!("the factory of plugin {name:?} built a plugin named {:?}", plugin.name()));
            }
            fw.plugins.push(plugin);
            Ok(fw.plugins.len() - 1)
        };
        macro_rules! wire {
            ($field:ident) => {
                for n in &p.$field {
                    let i = id(&mut fw, n)?;
                    fw.$field.push(i);
                }
            };
        }
        wire!(pre_enqueue);
        wire!(queue_sort);
        wire!(pre_filter);
        wire!(filter);
        wire!(post_filter);
        wire!(pre_score);
        wire!(reserve);
        wire!(permit);
        wire!(pre_bind);
        wire!(bind);
        wire!(post_bind);
        for (n, w) in &p.score {
            let i = id(&mut fw, n)?;
            fw.score.push((i, *w as i64));
        }
        Ok(fw)
    }

    /// A framework with no plugins (tests and embedders fill in its lists).
    pub fn empty(scheduler_name: &str) -> Self {
        Framework {
            scheduler_name: scheduler_name.to_string(),
            percentage_of_nodes_to_score: None,
            plugins: Vec::new(),
            pre_enqueue: Vec::new(),
            queue_sort: Vec::new(),
            pre_filter: Vec::new(),
            filter: Vec::new(),
            post_filter: Vec::new(),
            pre_score: Vec::new(),
            score: Vec::new(),
            reserve: Vec::new(),
            permit: Vec::new(),
            pre_bind: Vec::new(),
            bind: Vec::new(),
            post_bind: Vec::new(),
        }
    }

    pub fn plugin(&self, id: PluginId) -> &dyn Plugin {
        self.plugins[id].as_ref()
    }

    pub fn has_filter_plugins(&self) -> bool {
        !self.filter.is_empty()
    }

    pub fn has_score_plugins(&self) -> bool {
        !self.score.is_empty()
    }
}
