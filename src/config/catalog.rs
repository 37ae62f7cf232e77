//! The plugin catalogue the config knows: every in-tree plugin name, the extension points it
//! implements, and the default `multiPoint` list with its score weights. The config needs it to
//! validate names and expand `multiPoint` when the file is loaded, so errors name the field.
//!
//! It is data only. The registry that builds plugins by name is `plugins::registry` (upstream's
//! `framework/plugins/registry.go`), tested to name the same plugins; the defaults are
//! `getDefaultPlugins` in `apis/config/v1/default_plugins.go`; a plugin "implements" an extension
//! point when its Go type satisfies that point's interface, which is what
//! `expandMultiPointPlugins` checks.

use serde::Serialize;

/// One extension point of the scheduling framework.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ExtensionPoint {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl ExtensionPoint {
    /// Every extension point, in the order a pod meets them.
    pub const ALL: [ExtensionPoint; 12] = [
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::Reserve,
        ExtensionPoint::Permit,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
    ];

    /// The field name of this point under `profiles[*].plugins` in a KubeSchedulerConfiguration.
    pub fn field_name(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "preEnqueue",
            ExtensionPoint::QueueSort => "queueSort",
            ExtensionPoint::PreFilter => "preFilter",
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PostFilter => "postFilter",
            ExtensionPoint::PreScore => "preScore",
            ExtensionPoint::Score => "score",
            ExtensionPoint::Reserve => "reserve",
            ExtensionPoint::Permit => "permit",
            ExtensionPoint::PreBind => "preBind",
            ExtensionPoint::Bind => "bind",
            ExtensionPoint::PostBind => "postBind",
        }
    }

    /// The position of this point in [`ExtensionPoint::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for ExtensionPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

/// A registered plugin: its name and the extension points it implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    /// The plugin name as written in a scheduler config (`NodeResourcesFit`).
    pub name: &'static str,
    /// The extension points the plugin implements, in framework order.
    pub extension_points: &'static [ExtensionPoint],
    /// Whether the plugin is in the default `multiPoint` list of a v1.31 profile.
    pub in_defaults: bool,
    /// The score weight the default `multiPoint` entry carries (`None` when it sets none).
    pub default_weight: Option<i32>,
}

impl PluginInfo {
    /// Whether the plugin implements `point`.
    pub fn implements(&self, point: ExtensionPoint) -> bool {
        self.extension_points.contains(&point)
    }
}

use ExtensionPoint::{Bind, Filter, PostFilter, PreEnqueue, PreFilter, PreScore, QueueSort, Reserve, Score};

const fn default(name: &'static str, extension_points: &'static [ExtensionPoint], weight: Option<i32>) -> PluginInfo {
    PluginInfo { name, extension_points, in_defaults: true, default_weight: weight }
}

const fn optional(name: &'static str, extension_points: &'static [ExtensionPoint]) -> PluginInfo {
    PluginInfo { name, extension_points, in_defaults: false, default_weight: None }
}

/// The catalogue: the default plugins first, in default `multiPoint` order, then the known plugins a
/// profile may enable that are not on by default.
///
/// The order and weights are v1.37.2's `getDefaultPlugins` after `applyFeatureGates` at the
/// release's default gates: DynamicResources (DRA is GA) before DefaultPreemption, and
/// NodeDeclaredFeatures (GA) last. VolumeBinding implements PreScore/Score in Go, so multiPoint
/// expansion gives it Score with weight 1; with StorageCapacityScoring on (the default) its
/// PreScore runs and it scores 0 for pods without volumes, as DynamicResources does without claims.
pub const PLUGINS: &[PluginInfo] = &[
    default("SchedulingGates", &[PreEnqueue], None),
    default("PrioritySort", &[QueueSort], None),
    default("NodeName", &[PreFilter, Filter], None),
    default("NodeUnschedulable", &[PreFilter, Filter], None),
    default("TaintToleration", &[PreFilter, Filter, PreScore, Score], Some(3)),
    default("NodeAffinity", &[PreFilter, Filter, PreScore, Score], Some(2)),
    default("NodePorts", &[PreFilter, Filter], None),
    default("NodeResourcesFit", &[PreFilter, Filter, PreScore, Score], Some(1)),
    default("VolumeRestrictions", &[PreFilter, Filter], None),
    default("NodeVolumeLimits", &[PreFilter, Filter], None),
    default("VolumeBinding", &[PreFilter, Filter, Reserve, ExtensionPoint::PreBind, PreScore, Score], Some(1)),
    default("VolumeZone", &[PreFilter, Filter], None),
    default("PodTopologySpread", &[PreFilter, Filter, PreScore, Score], Some(2)),
    default("InterPodAffinity", &[PreFilter, Filter, PreScore, Score], Some(2)),
    default(
        "DynamicResources",
        &[PreEnqueue, PreFilter, Filter, PostFilter, Reserve, ExtensionPoint::PreBind, Score],
        Some(2),
    ),
    default("DefaultPreemption", &[PreEnqueue, PostFilter], None),
    default("NodeResourcesBalancedAllocation", &[PreScore, Score], Some(1)),
    default("ImageLocality", &[Score], Some(1)),
    default("DefaultBinder", &[Bind], None),
    default("NodeDeclaredFeatures", &[PreFilter, Filter], None),
    optional("EBSLimits", &[Filter]),
    optional("GCEPDLimits", &[Filter]),
    optional("AzureDiskLimits", &[Filter]),
    optional("CinderLimits", &[Filter]),
];

/// Plugins that older configs name but that no longer exist, with what to use instead.
pub const REMOVED_PLUGINS: &[(&str, &str)] = &[
    ("NodeResourcesLeastAllocated", "use NodeResourcesFit with scoringStrategy.type: LeastAllocated"),
    ("NodeResourcesMostAllocated", "use NodeResourcesFit with scoringStrategy.type: MostAllocated"),
    ("RequestedToCapacityRatio", "use NodeResourcesFit with scoringStrategy.type: RequestedToCapacityRatio"),
    ("SelectorSpread", "use PodTopologySpread (its system default constraints spread by the same selectors)"),
    ("ServiceAffinity", "use InterPodAffinity"),
    ("NodeLabel", "use NodeAffinity"),
    ("NodePreferAvoidPods", "remove it; the node annotation it read is no longer honoured"),
];

/// Looks a plugin up by name.
pub fn plugin_info(name: &str) -> Option<&'static PluginInfo> {
    PLUGINS.iter().find(|p| p.name == name)
}

/// The message for a plugin name that is not in [`PLUGINS`], with a hint when the name is a removed plugin.
pub(crate) fn unknown_plugin_message(name: &str) -> String {
    if let Some((_, hint)) = REMOVED_PLUGINS.iter().find(|(removed, _)| *removed == name) {
        return format!("plugin {name:?} was removed from kube-scheduler; {hint}");
    }
    let known: Vec<&str> = PLUGINS.iter().map(|p| p.name).collect();
    format!("unknown plugin {name:?}; known plugins are {}", known.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_lookup() {
        let check = |name: &str, point: ExtensionPoint, expected: Option<bool>| {
            assert_eq!(plugin_info(name).map(|p| p.implements(point)), expected, "{name} at {point}");
        };
        check("NodeResourcesFit", Score, Some(true));
        check("NodePorts", Score, Some(false));
        check("ImageLocality", Filter, Some(false));
        check("EBSLimits", Filter, Some(true));
        check("SelectorSpread", Filter, None);
        check("NodeResourcesLeastAllocated", Score, None);
    }

    #[test]
    fn names_are_unique_and_field_names_match_order() {
        for (i, p) in PLUGINS.iter().enumerate() {
            assert!(PLUGINS[..i].iter().all(|q| q.name != p.name), "{} twice", p.name);
            assert_eq!(p.default_weight.is_some(), p.in_defaults && p.implements(Score), "{}", p.name);
        }
        for (i, point) in ExtensionPoint::ALL.iter().enumerate() {
            assert_eq!(point.index(), i);
        }
    }

    #[test]
    fn unknown_plugin_messages() {
        assert!(unknown_plugin_message("SelectorSpread").contains("PodTopologySpread"));
        assert!(unknown_plugin_message("NodeResourcesLeastAllocated").contains("scoringStrategy.type: LeastAllocated"));
        assert!(unknown_plugin_message("Foo").starts_with("unknown plugin \"Foo\"; known plugins are SchedulingGates"));
    }
}
