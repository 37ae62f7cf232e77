//! Queueing hints for the in-tree filter plugins.
//!
//! [`default_hint`] is the coarse table: it looks at the event kind and what changed, not at
//! whether the change matches the pod. [`fine_hint`] is upstream v1.37.2's `QueueingHintFn`s
//! (`isSchedulableAfter*` of each plugin): it reads the event's objects ([`EventObjects`]) and the
//! queued pod's spec, and answers `None` where it has no rule or the objects are missing, so the
//! coarse table decides. Where upstream returns Queue on an error, so does [`fine_hint`].
//!
//! Fine rules: NodeResourcesFit (node add/allocatable update: does the pod fit the node's
//! allocatable, and did a resource it requests grow; assigned pod scale-down: did a resource it
//! requests shrink), NodeAffinity (node add/label update: does the node match the profile's
//! `addedAffinity` ([`HintArgs`]), and now match the pod's nodeSelector and required affinity when it
//! did not before), TaintToleration (node add/taint update: was a NoSchedule/NoExecute taint
//! untolerated and now is not), NodeUnschedulable (node add/update: it is, or became, schedulable),
//! NodePorts (assigned pod delete: it held a host port the pod asks for), InterPodAffinity (assigned
//! pod add/label update/delete: does it now match all required affinity terms, or no longer match
//! an anti-affinity term, or did the deleted pod's anti-affinity match the pod; terms select
//! namespaces as `AffinityTerm.Matches(pod, nil)` does, so a `namespaceSelector` is read against no
//! labels; node add/label update: a required term's topology key appeared or changed domain, an
//! anti-affinity one disappeared or changed, any node add for a pod with anti-affinity),
//! PodTopologySpread on the pod's own DoNotSchedule constraints (assigned pod add/update/delete in
//! the pod's namespace: its labels match a selector, or the update flips one; node add/delete: it
//! has every topology key; node label/taint update: that changed, or it has them and a key's value
//! or the taints changed; a pod without constraints of its own has none that are hard when every
//! profile default is ScheduleAnyway, as the system defaults are ([`HintArgs`]), else the coarse
//! table decides: a hard default's selector comes from the pod's services and controllers). The
//! rejected pod's own update as upstream's
//! `TargetPod` events: scale-down, toleration, label change. NodeName, NodePorts' node add and
//! NodeResourcesFit's assigned pod delete have no hint function upstream (Queue), as in the coarse
//! table.
//!
//! DynamicResources' hints live in `queue::dra_hints` (registered here by name):
//! node add and label/allocatable updates, DeviceClass and ResourceSlice add/update queue;
//! ResourceClaim add/update/delete go through `isSchedulableAfterClaimChange` with the pod's
//! claims resolved against the run's `ClaimLister` ([`HintArgs::dra_claims`]); the pod's own
//! update through `isSchedulableAfterTargetPodUpdate` when its generated claim names changed; any
//! other event is skipped. NodeResourcesFit also registers DeviceClass add/update
//! (`isSchedulableAfterDeviceClassEvent`, DRAExtendedResource being GA): the coarse table queues,
//! the fine rule reads the class's extended resource names against the pod's requests. For every
//! other plugin of the table the DRA events are not registered (Skip).

use std::sync::Arc;

use super::dra_hints::{self as dra_hints, ClaimLister};
use super::{ClusterEvent, DraAction, EventObjects, HintFn, NodeChange, NodeObject, QueuedPod, QueueingHint};
use crate::framework::Plugin;
use crate::ids::PodUid;
use crate::plugins::dynamicresources::plugin as dra;
use crate::plugins::node_ports::conflicts;
use crate::plugins::nodedeclaredfeatures as ndf;
use crate::plugins::volumes::hints as volume_hints;
use crate::snapshot::{
    tolerations_tolerate, AffinityTerm, InclusionPolicy, LabelRequirement, NodeSelector, NodeTerm, PodInfo, Resources,
    SpreadConstraint, Sym, Taint, TaintEffect, WhenUnsatisfiable,
};

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
                || matches!(event, DeviceClass { action: DraAction::Add | DraAction::Update })
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

/// [`default_hint`] as a registrable hint function (objects ignored); `None` for an unknown plugin.
pub fn default_hint_fn<T: 'static>(plugin: &str) -> Option<HintFn<T>> {
    let name = DEFAULT_HINT_PLUGINS.iter().copied().find(|p| *p == plugin)?;
    Some(Box::new(move |event: &ClusterEvent, _: Option<&EventObjects>, pod: &QueuedPod<T>| {
        default_hint(name, event, pod.uid).expect("known plugin")
    }))
}

/// The interned strings the fine hints compare with.
#[derive(Clone, Copy, Debug)]
pub struct HintSyms {
    /// `0.0.0.0` (NodePorts).
    pub wildcard_ip: Sym,
    /// NodeUnschedulable's taint `node.kubernetes.io/unschedulable:NoSchedule` (empty value).
    pub unschedulable_taint: Taint,
}

/// What a plugin's configuration adds to its hint: NodeAffinity's `addedAffinity`
/// (NodeAffinityArgs), the scheduler-enforced selector a node must match before the pod's own.
#[derive(Clone, Debug, Default)]
pub struct HintArgs {
    pub added_affinity: Option<Arc<NodeSelector>>,
    /// PodTopologySpread's default constraints are all `ScheduleAnyway`
    /// ([`Plugin::spread_defaults_soft`]): a pod without constraints of its own has no hard ones,
    /// and the hint decides on none (as upstream's `getConstraints` returns none). False: the
    /// defaults may be hard (their selector comes from the pod's services and controllers, which
    /// the hint does not read), so the coarse table decides.
    pub spread_defaults_soft: bool,
    /// The claims DynamicResources' hints resolve a pod's claims against (the run's
    /// [`ClaimLister`]); `None`: a pod's claims count as resolvable once named.
    pub dra_claims: Option<Arc<ClaimLister>>,
}

impl HintArgs {
    /// What the profile's instance of `plugin` adds to its hint.
    pub fn of(plugin: &dyn Plugin) -> Self {
        HintArgs {
            added_affinity: plugin.enforced_node_selector().cloned().map(Arc::new),
            spread_defaults_soft: plugin.spread_defaults_soft(),
            dra_claims: None,
        }
    }
}

/// [`fine_hint`] where it decides, else [`default_hint`], as a registrable hint function; `None`
/// for an unknown plugin.
pub fn hint_fn<T: 'static>(plugin: &str, syms: HintSyms, args: HintArgs) -> Option<HintFn<T>> {
    if plugin == ndf::NAME {
        return Some(Box::new(|event: &ClusterEvent, objs: Option<&EventObjects>, pod: &QueuedPod<T>| {
            hint(node_declared_features_hint(event, objs, pod.uid))
        }));
    }
    if plugin == dra::NAME {
        let lister = args.dra_claims.clone();
        return Some(Box::new(move |event: &ClusterEvent, objs: Option<&EventObjects>, pod: &QueuedPod<T>| {
            hint(dra_hints::hint(event, objs, pod.spec.as_ref().map(|s| &*s.0), pod.uid, lister.as_deref()))
        }));
    }
    if let Some(name) = volume_hints::PLUGINS.iter().copied().find(|p| *p == plugin) {
        return Some(Box::new(move |event: &ClusterEvent, objs: Option<&EventObjects>, pod: &QueuedPod<T>| {
            hint(volume_hint(name, event, objs, pod.spec.as_ref().map(|s| &*s.0)))
        }));
    }
    let name = DEFAULT_HINT_PLUGINS.iter().copied().find(|p| *p == plugin)?;
    Some(Box::new(move |event: &ClusterEvent, objs: Option<&EventObjects>, pod: &QueuedPod<T>| {
        if let (Some(objs), Some(spec)) = (objs, &pod.spec) {
            if let Some(h) = fine_hint(name, event, objs, &spec.0, syms, &args) {
                return h;
            }
        }
        default_hint(name, event, pod.uid).expect("known plugin")
    }))
}

/// A volume plugin's hint (`plugins::volumes::hints`): the events it registers, through its hint
/// functions when the event's objects and the pod's spec are known (Queue otherwise, as upstream
/// answers a hint that cannot read its objects).
pub fn volume_hint(plugin: &str, event: &ClusterEvent, objs: Option<&EventObjects>, pod: Option<&PodInfo>) -> bool {
    use ClusterEvent::*;
    match event {
        NodeAdd { .. } => volume_hints::registers_node_event(plugin, true),
        NodeUpdate { change, .. } => {
            change.intersects(NodeChange::LABEL) && volume_hints::registers_node_event(plugin, false)
        }
        AssignedPodDelete { .. } => {
            volume_hints::registers_assigned_pod_delete(plugin)
                && match (objs.and_then(|o| o.old_pod.as_deref()), pod) {
                    (Some(deleted), Some(pod)) => volume_hints::assigned_pod_deleted_hint(plugin, deleted, pod),
                    _ => true,
                }
        }
        Storage { kind, action } => match pod {
            Some(pod) => volume_hints::storage_hint(
                plugin,
                *kind,
                *action,
                objs.and_then(|o| o.old_storage.as_deref()),
                objs.and_then(|o| o.new_storage.as_deref()),
                pod,
            ),
            None => volume_hints::registers_storage(plugin, *kind, *action),
        },
        UnschedulableTimeout => true,
        AssignedPodAdd { .. }
        | AssignedPodUpdate { .. }
        | NodeDelete { .. }
        | UnscheduledPodUpdate { .. }
        | ResourceClaim { .. }
        | ResourceSlice { .. }
        | DeviceClass { .. } => false,
    }
}

/// NodeDeclaredFeatures' registered events and hints (`plugins::nodedeclaredfeatures`): a node
/// added, a node update that changed its declared features (`UpdateNodeDeclaredFeature`: Queue when
/// the list differs, which is when the driver sets the bit), and the pod's own update (Queue when
/// its inferred requirements changed). Without the objects, Queue.
pub fn node_declared_features_hint(event: &ClusterEvent, objs: Option<&EventObjects>, pod: PodUid) -> bool {
    use ClusterEvent::*;
    match event {
        NodeAdd { .. } => true,
        NodeUpdate { change, .. } => {
            change.intersects(NodeChange::DECLARED_FEATURES)
                && match objs.map(|o| (o.old_node.as_ref(), o.new_node.as_ref())) {
                    Some((Some(old), Some(new))) => {
                        ndf::node_hint(Some(old.spec.declared_features.as_slice()), &new.spec.declared_features)
                    }
                    _ => true,
                }
        }
        UnscheduledPodUpdate { pod: p } if *p == pod => {
            match objs.map(|o| (o.old_pod.as_deref(), o.new_pod.as_deref())) {
                Some((Some(old), Some(new))) => ndf::pod_update_hint(old.feature_facts, new.feature_facts),
                _ => true,
            }
        }
        UnschedulableTimeout => true,
        _ => false,
    }
}

fn hint(queue: bool) -> QueueingHint {
    if queue {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

/// Upstream's hint of `plugin` for `event` with its objects `objs`, for the rejected pod `pod`;
/// `None` when there is no fine rule or an object it needs is missing (use [`default_hint`]).
pub fn fine_hint(
    plugin: &str,
    event: &ClusterEvent,
    objs: &EventObjects,
    pod: &PodInfo,
    syms: HintSyms,
    args: &HintArgs,
) -> Option<QueueingHint> {
    use ClusterEvent::*;
    if let UnscheduledPodUpdate { pod: updated } = event {
        return if *updated == pod.uid { own_update_hint(plugin, objs, pod, syms, args) } else { None };
    }
    // (old, new) of an assigned pod's add (old None), label update, or delete (new None).
    let pod_event = || -> Option<(Option<&PodInfo>, Option<&PodInfo>)> {
        match event {
            AssignedPodAdd { .. } => Some((None, Some(objs.new_pod.as_deref()?))),
            AssignedPodUpdate { .. } => Some((Some(objs.old_pod.as_deref()?), Some(objs.new_pod.as_deref()?))),
            AssignedPodDelete { .. } => Some((Some(objs.old_pod.as_deref()?), None)),
            _ => None,
        }
    };
    // (old, new) of a node add (old None) or an update whose change is in `registered`.
    let node_event = |registered: NodeChange| -> Option<(Option<&NodeObject>, &NodeObject)> {
        match event {
            NodeAdd { .. } => Some((None, objs.new_node.as_ref()?)),
            NodeUpdate { change, .. } if change.intersects(registered) => {
                Some((Some(objs.old_node.as_ref()?), objs.new_node.as_ref()?))
            }
            _ => None,
        }
    };
    match plugin {
        // `Fit.isSchedulableAfterNodeChange`, `isSchedulableAfterAssignedPodScaleDown`.
        "NodeResourcesFit" => {
            if let DeviceClass { action: DraAction::Add | DraAction::Update } = event {
                let new = objs.new_class.as_deref()?;
                return Some(hint(dra_hints::fit_device_class_hint(objs.old_class.as_deref(), new, &pod.requests)));
            }
            if let AssignedPodUpdate { resources_scaled_down: true, .. } = event {
                let (old, new) = (objs.old_pod.as_ref()?, objs.new_pod.as_ref()?);
                return Some(hint(any_requested_decreased(&pod.requests, &old.requests, &new.requests)));
            }
            let (old, new) = node_event(NodeChange::ALLOCATABLE)?;
            if !fits_empty_node(&pod.requests, new) {
                return Some(QueueingHint::Skip);
            }
            Some(hint(old.is_none_or(|old| any_requested_increased(&pod.requests, old, new))))
        }
        // `NodeAffinity.isSchedulableAfterNodeChange`: the profile's addedAffinity first.
        "NodeAffinity" => {
            let (old, new) = node_event(NodeChange::LABEL)?;
            if args.added_affinity.as_ref().is_some_and(|sel| !sel.terms.iter().any(|t| term_matches(t, new))) {
                return Some(QueueingHint::Skip);
            }
            Some(match required_affinity_match(pod, new) {
                Err(()) => QueueingHint::Queue,
                Ok(false) => QueueingHint::Skip,
                Ok(true) => match old.map(|o| required_affinity_match(pod, o)) {
                    None | Some(Err(())) | Some(Ok(false)) => QueueingHint::Queue,
                    Some(Ok(true)) => QueueingHint::Skip,
                },
            })
        }
        // `TaintToleration.isSchedulableAfterNodeChange` (spec.unschedulable is a taint update upstream).
        "TaintToleration" => {
            let (old, new) = node_event(NodeChange::TAINT.union(NodeChange::UNSCHEDULABLE))?;
            let was = old.is_none_or(|o| has_untolerated_taint(pod, &o.spec.taints));
            Some(hint(was && !has_untolerated_taint(pod, &new.spec.taints)))
        }
        // `NodeUnschedulable.isSchedulableAfterNodeChange`.
        "NodeUnschedulable" => {
            let (old, new) = node_event(NodeChange::TAINT.union(NodeChange::UNSCHEDULABLE))?;
            Some(hint(!new.spec.unschedulable && old.is_none_or(|o| o.spec.unschedulable)))
        }
        // `NodePorts.isSchedulableAfterAssignedPodDeleted`.
        "NodePorts" => match event {
            AssignedPodDelete { .. } => {
                let deleted = objs.old_pod.as_ref()?;
                let freed = pod.host_ports.iter().any(|p| conflicts(&deleted.host_ports, p, syms.wildcard_ip));
                Some(hint(freed))
            }
            _ => None,
        },
        // `InterPodAffinity.isSchedulableAfterAssignedPodChange` / `isSchedulableAfterNodeChange`.
        "InterPodAffinity" => {
            let a = &pod.constraints.affinity;
            if let Some((old, new)) = pod_event() {
                return Some(hint(match (old, new) {
                    (Some(old), Some(new)) => {
                        (!matches_all_terms(&a.required_affinity, old) && matches_all_terms(&a.required_affinity, new))
                            || (matches_any_term(&a.required_anti_affinity, old)
                                && !matches_any_term(&a.required_anti_affinity, new))
                    }
                    (None, Some(added)) => matches_all_terms(&a.required_affinity, added),
                    (Some(deleted), None) => {
                        matches_any_term(&a.required_anti_affinity, deleted)
                            || matches_any_term(&deleted.constraints.affinity.required_anti_affinity, pod)
                    }
                    (None, None) => unreachable!("a pod event has a pod"),
                }));
            }
            let (old, new) = node_event(NodeChange::LABEL)?;
            let Some(old) = old else {
                let affinity_key = a.required_affinity.iter().any(|t| has_label(new, t.topology_key));
                return Some(hint(affinity_key || !a.required_anti_affinity.is_empty()));
            };
            let moved = |t: &AffinityTerm| {
                let (o, n) = (node_label(old, t.topology_key).0, node_label(new, t.topology_key).0);
                !o.is_none() && !n.is_none() && o != n
            };
            // Affinity: the node gained the key or changed domain; anti-affinity: it lost the key (a
            // node without it always accepts the pod) or changed domain.
            let gained = |t: &AffinityTerm| !has_label(old, t.topology_key) && has_label(new, t.topology_key);
            let lost = |t: &AffinityTerm| has_label(old, t.topology_key) && !has_label(new, t.topology_key);
            Some(hint(
                a.required_affinity.iter().any(|t| gained(t) || moved(t))
                    || a.required_anti_affinity.iter().any(|t| lost(t) || moved(t)),
            ))
        }
        // `PodTopologySpread.isSchedulableAfterAssignedPodChange` / `isSchedulableAfterNodeChange`,
        // on the pod's own DoNotSchedule constraints. A pod without constraints reads the profile's
        // default ones: none that are hard when they are all ScheduleAnyway (the system defaults),
        // else the coarse table decides (their selector is not the hint's to build).
        "PodTopologySpread" => {
            if pod.constraints.topology_spread.is_empty() && !args.spread_defaults_soft {
                return None;
            }
            let hard = || hard_constraints(pod);
            if let Some((old, new)) = pod_event() {
                if old.or(new).is_some_and(|p| p.namespace != pod.namespace) {
                    return Some(QueueingHint::Skip);
                }
                return Some(hint(match (old, new) {
                    (Some(old), Some(new)) => label_change_matters(hard(), old, new),
                    (Some(p), None) | (None, Some(p)) => hard().any(|c| c.selector.matches_labels(&p.labels)),
                    (None, None) => unreachable!("a pod event has a pod"),
                }));
            }
            let (old, new) = match event {
                NodeDelete { .. } => (Some(objs.old_node.as_ref()?), None),
                _ => {
                    let (old, new) = node_event(NodeChange::LABEL.union(NodeChange::TAINT))?;
                    (old, Some(new))
                }
            };
            let keys_present = |n: &NodeObject| hard().all(|c| has_label(n, c.topology_key));
            Some(hint(match (old, new) {
                (Some(old), Some(new)) => {
                    let (was, is) = (keys_present(old), keys_present(new));
                    was != is
                        || (is
                            && (hard().any(|c| node_label(old, c.topology_key).0 != node_label(new, c.topology_key).0)
                                || old.spec.taints != new.spec.taints))
                }
                (Some(n), None) | (None, Some(n)) => keys_present(n),
                (None, None) => unreachable!("a node event has a node"),
            }))
        }
        _ => None,
    }
}

/// `AffinityTerm.Matches(pod, nil)` as the hints call it: the namespace is listed, or the
/// `namespaceSelector` matches an empty label set (the hint reads no Namespace object), and the
/// pod's labels match.
fn term_matches_pod(t: &AffinityTerm, p: &PodInfo) -> bool {
    let ns = &t.selector.namespaces;
    let ns_ok =
        ns.names.binary_search(&p.namespace).is_ok() || ns.selector.as_ref().is_some_and(|s| s.matches_labels(&[]));
    ns_ok && t.selector.labels.matches_labels(&p.labels)
}

/// `podMatchesAllAffinityTerms`: false for no terms.
fn matches_all_terms(terms: &[AffinityTerm], p: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| term_matches_pod(t, p))
}

/// `podMatchesAnyAffinityTerms`.
fn matches_any_term(terms: &[AffinityTerm], p: &PodInfo) -> bool {
    terms.iter().any(|t| term_matches_pod(t, p))
}

/// `getConstraints` for a pod with constraints: its `DoNotSchedule` ones.
fn hard_constraints(pod: &PodInfo) -> impl Iterator<Item = &SpreadConstraint> {
    pod.constraints.topology_spread.iter().filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
}

/// `isSchedulableAfterPodLabelChange`: the labels changed and some constraint's selector matches
/// one side only.
fn label_change_matters<'a>(
    mut constraints: impl Iterator<Item = &'a SpreadConstraint>,
    old: &PodInfo,
    new: &PodInfo,
) -> bool {
    old.labels != new.labels
        && constraints.any(|c| c.selector.matches_labels(&old.labels) != c.selector.matches_labels(&new.labels))
}

/// The rejected pod itself changed (upstream's `TargetPod` events from `PodSchedulingPropertiesChange`):
/// NodeResourcesFit queues on `UpdatePodScaleDown`, TaintToleration on `UpdatePodToleration`,
/// NodeUnschedulable on `UpdatePodToleration` when the new tolerations tolerate its taint;
/// NodeAffinity, NodePorts and NodeName register no pod update (Skip). `None`: the coarse table.
fn own_update_hint(
    plugin: &str,
    objs: &EventObjects,
    pod: &PodInfo,
    syms: HintSyms,
    args: &HintArgs,
) -> Option<QueueingHint> {
    let (old, new) = (objs.old_pod.as_ref()?, objs.new_pod.as_ref()?);
    let tolerations_changed = old.tolerations != new.tolerations;
    match plugin {
        // `isSchedulableAfterTargetPodUpdateLabel`: registered for label updates only.
        "InterPodAffinity" => Some(hint(old.labels != new.labels)),
        // `isSchedulableAfterTargetPodChange`, on the pod's (new) constraints.
        "PodTopologySpread" if !pod.constraints.topology_spread.is_empty() || args.spread_defaults_soft => {
            let honor = hard_constraints(pod).any(|c| c.node_taints_policy == InclusionPolicy::Honor);
            Some(hint((tolerations_changed && honor) || label_change_matters(hard_constraints(pod), old, new)))
        }
        "NodeResourcesFit" => {
            let (o, n) = (&old.requests, &new.requests);
            let scalar_down = o.scalars.iter().any(|&(r, v)| n.scalar(r) < v);
            Some(hint(
                n.cpu_milli < o.cpu_milli
                    || n.memory < o.memory
                    || n.ephemeral_storage < o.ephemeral_storage
                    || scalar_down,
            ))
        }
        "TaintToleration" => Some(hint(tolerations_changed)),
        "NodeUnschedulable" => {
            Some(hint(tolerations_changed && tolerations_tolerate(&new.tolerations, &syms.unschedulable_taint)))
        }
        "NodeAffinity" | "NodePorts" | "NodeName" => Some(QueueingHint::Skip),
        _ => None,
    }
}

/// Upstream's `isFit`: the pod's requests against the node's allocatable with nothing on it.
fn fits_empty_node(req: &Resources, node: &NodeObject) -> bool {
    let a = &node.spec.allocatable;
    node.spec.allowed_pod_number >= 1
        && (req.cpu_milli == 0 || req.cpu_milli <= a.cpu_milli)
        && (req.memory == 0 || req.memory <= a.memory)
        && (req.ephemeral_storage == 0 || req.ephemeral_storage <= a.ephemeral_storage)
        && req.scalars.iter().all(|&(n, v)| v == 0 || v <= a.scalar(n))
}

/// Upstream's `haveAnyRequestedResourcesIncreased`.
fn any_requested_increased(req: &Resources, old: &NodeObject, new: &NodeObject) -> bool {
    let (o, n) = (&old.spec.allocatable, &new.spec.allocatable);
    if new.spec.allowed_pod_number > old.spec.allowed_pod_number {
        return true;
    }
    (req.cpu_milli > 0 && n.cpu_milli > o.cpu_milli)
        || (req.memory > 0 && n.memory > o.memory)
        || (req.ephemeral_storage > 0 && n.ephemeral_storage > o.ephemeral_storage)
        || req.scalars.iter().any(|&(r, v)| v != 0 && n.scalar(r) > o.scalar(r))
}

/// Upstream's `haveEnoughRelevantResourcesDecreased` for an assigned pod (`old` → `new` requests).
fn any_requested_decreased(req: &Resources, old: &Resources, new: &Resources) -> bool {
    (req.cpu_milli > 0 && old.cpu_milli > new.cpu_milli)
        || (req.memory > 0 && old.memory > new.memory)
        || (req.ephemeral_storage > 0 && old.ephemeral_storage > new.ephemeral_storage)
        || req.scalars.iter().any(|&(r, v)| v != 0 && old.scalar(r) > new.scalar(r))
}

/// `FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`: a NoSchedule or
/// NoExecute taint the pod does not tolerate.
fn has_untolerated_taint(pod: &PodInfo, taints: &[Taint]) -> bool {
    taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .any(|t| !tolerations_tolerate(&pod.tolerations, t))
}

fn node_label(node: &NodeObject, key: Sym) -> (Sym, Option<i64>) {
    match node.spec.labels.binary_search_by_key(&key, |(k, _)| *k) {
        Ok(i) => (node.spec.labels[i].1, node.label_ints.get(i).copied().flatten()),
        Err(_) => (Sym::NONE, None),
    }
}

fn has_label(node: &NodeObject, key: Sym) -> bool {
    !node_label(node, key).0.is_none()
}

fn requirement_matches(r: &LabelRequirement, node: &NodeObject) -> bool {
    let (v, int) = node_label(node, r.key);
    r.matches_parsed(v, || int)
}

fn term_matches(t: &NodeTerm, node: &NodeObject) -> bool {
    t.valid
        && t.labels.iter().all(|r| requirement_matches(r, node))
        && t.fields.iter().all(|f| (node.spec.name == f.name) == f.in_set)
}

/// `RequiredNodeAffinity.Match`: the nodeSelector and then the required terms (ORed). A term that
/// failed to parse is skipped and, when no term matches, makes it an error (`Err`).
fn required_affinity_match(pod: &PodInfo, node: &NodeObject) -> Result<bool, ()> {
    if !pod.node_selector.iter().all(|&(k, v)| node_label(node, k).0 == v) {
        return Ok(false);
    }
    let Some(sel) = &pod.required_affinity else { return Ok(true) };
    if sel.terms.iter().any(|t| term_matches(t, node)) {
        return Ok(true);
    }
    // An empty term matches nothing without an error; an invalid non-empty one is a parse error.
    let parse_error = sel.terms.iter().any(|t| !t.valid && (!t.labels.is_empty() || !t.fields.is_empty()));
    if parse_error {
        Err(())
    } else {
        Ok(false)
    }
}

#[cfg(test)]
#[path = "hint_tests.rs"]
mod tests;
