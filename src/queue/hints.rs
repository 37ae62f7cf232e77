//! Default queueing hints for the in-tree filter plugins, by event kind.
//!
//! Coarse versions of upstream's `QueueingHintFn`s: they look at what changed, not at whether the
//! change matches the pod (a node's new labels against the pod's affinity, say). A coarse Queue only
//! costs a retry; the engine may register finer hints for plugins it knows more about.

use super::{ClusterEvent, HintFn, NodeChange, QueuedPod, QueueingHint};
use crate::ids::PodUid;

/// The plugins [`default_hint`] knows.
pub const DEFAULT_HINT_PLUGINS: &[&str] = &[
    "NodeResourcesFit",
    "NodeAffinity",
    "NodeName",
    "TaintToleration",
    "NodeUnschedulable",
    "NodePorts",
    "PodTopologySpread",
    "InterPodAffinity",
    "SchedulingGates",
];

/// The default hint of `plugin` for `event`, for a pod `pod` it rejected; `None` for an unknown plugin.
pub fn default_hint(plugin: &str, event: &ClusterEvent, pod: PodUid) -> Option<QueueingHint> {
    use ClusterEvent::*;
    let node_update = |mask: NodeChange| match event {
        NodeUpdate { change, .. } => change.intersects(mask),
        _ => false,
    };
    let own_update = matches!(event, UnscheduledPodUpdate { pod: p } if *p == pod);
    let queue = match plugin {
        // Room appears: a new node, more allocatable, a pod leaving, a pod shrinking, the pod shrinking.
        "NodeResourcesFit" => {
            matches!(event, NodeAdd { .. } | AssignedPodDelete { .. })
                || node_update(NodeChange::ALLOCATABLE)
                || matches!(event, AssignedPodUpdate { resources_scaled_down: true, .. })
                || own_update
        }
        "NodeAffinity" => matches!(event, NodeAdd { .. }) || node_update(NodeChange::LABEL) || own_update,
        "NodeName" => matches!(event, NodeAdd { .. }),
        "TaintToleration" => matches!(event, NodeAdd { .. }) || node_update(NodeChange::TAINT) || own_update,
        "NodeUnschedulable" => {
            matches!(event, NodeAdd { .. }) || node_update(NodeChange::UNSCHEDULABLE.union(NodeChange::TAINT))
        }
        "NodePorts" => matches!(event, NodeAdd { .. } | AssignedPodDelete { .. }),
        "PodTopologySpread" => {
            matches!(
                event,
                NodeAdd { .. }
                    | NodeDelete { .. }
                    | AssignedPodAdd { .. }
                    | AssignedPodUpdate { .. }
                    | AssignedPodDelete { .. }
            ) || node_update(NodeChange::LABEL.union(NodeChange::TAINT))
                || own_update
        }
        "InterPodAffinity" => {
            matches!(
                event,
                NodeAdd { .. } | AssignedPodAdd { .. } | AssignedPodUpdate { .. } | AssignedPodDelete { .. }
            ) || node_update(NodeChange::LABEL)
                || own_update
        }
        "SchedulingGates" => own_update,
        _ => return None,
    };
    Some(if queue { QueueingHint::Queue } else { QueueingHint::Skip })
}

/// [`default_hint`] as a registrable hint function; `None` for an unknown plugin.
pub fn default_hint_fn<T: 'static>(plugin: &str) -> Option<HintFn<T>> {
    let name = DEFAULT_HINT_PLUGINS.iter().copied().find(|p| *p == plugin)?;
    Some(Box::new(move |event: &ClusterEvent, pod: &QueuedPod<T>| {
        default_hint(name, event, pod.uid).expect("known plugin")
    }))
}
