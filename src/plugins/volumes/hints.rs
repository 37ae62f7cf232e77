//! The volume plugins' queueing hints: which cluster events each registers (upstream v1.37.2's
//! `EventsToRegister`) and its `QueueingHintFn`s (`isSchedulableAfter*`), as plain functions over
//! the event's objects and the rejected pod. The queue (`queue::hints`) calls them; an event a
//! plugin does not register is Skip, a registered one without a hint function is Queue, and a
//! hint whose object is missing says Queue (upstream's answer on an error).
//!
//! | plugin | registered events (hint) |
//! |---|---|
//! | VolumeBinding | StorageClass add/update (add, or `allowedTopologies` changed), claim add/update (the pod names it), PV add/update, node add/label update, CSINode add/update (add, or the migrated-plugins annotation changed), CSIDriver update (an inline CSI volume's driver turned `storageCapacity` off), CSIStorageCapacity add/update (add, or `volumeLimit` grew) |
//! | VolumeRestrictions | assigned pod delete (same namespace, and a disk conflict or a shared claim), node add, claim add (a `persistentVolumeClaim` volume names it) |
//! | VolumeZone | StorageClass add (WaitForFirstConsumer), node add/label update, claim add/update (a `persistentVolumeClaim` volume names it), PV add/update (add, or its topology labels changed) |
//! | NodeVolumeLimits | CSINode add, CSINode update (a driver's limit grew), assigned pod delete (it had a claim or a migratable in-tree disk), claim add (the pod names it); VolumeAttachment delete is not modelled |

use super::{binding, limits, restrictions, zone};
use crate::snapshot::volumes::{PodVolume, StorageAction, StorageEventObject as Obj, StorageKind};
use crate::snapshot::{PodInfo, Sym};

/// The plugins with hints here.
pub const PLUGINS: &[&str] = &[binding::NAME, restrictions::NAME, zone::NAME, limits::NAME];

/// Whether `plugin` registers a node add (`add`) or a node label update (`!add`).
pub fn registers_node_event(plugin: &str, add: bool) -> bool {
    match plugin {
        binding::NAME | zone::NAME => true,
        restrictions::NAME => add,
        _ => false,
    }
}

/// Whether `plugin` registers an assigned pod's deletion.
pub fn registers_assigned_pod_delete(plugin: &str) -> bool {
    matches!(plugin, restrictions::NAME | limits::NAME)
}

/// Whether `plugin` registers `action` on `kind`.
pub fn registers_storage(plugin: &str, kind: StorageKind, action: StorageAction) -> bool {
    use StorageAction::*;
    use StorageKind::*;
    let add_update = matches!(action, Add | Update);
    match plugin {
        binding::NAME => match kind {
            CsiDriver => action == Update,
            _ => add_update,
        },
        restrictions::NAME => kind == PersistentVolumeClaim && action == Add,
        zone::NAME => match kind {
            StorageClass => action == Add,
            PersistentVolumeClaim | PersistentVolume => add_update,
            _ => false,
        },
        limits::NAME => match kind {
            CsiNode => add_update,
            PersistentVolumeClaim => action == Add,
            _ => false,
        },
        _ => false,
    }
}

/// The claims the pod's volumes name in `namespace`: is one of them `name` (a `persistentVolumeClaim`
/// volume's `claimName`, or with `ephemeral` an ephemeral volume's `<pod>-<volume>`)?
fn names_claim(pod: &PodInfo, namespace: Sym, name: Sym, splits: &[(String, Sym)], ephemeral: bool) -> bool {
    let Some(v) = &pod.volumes else { return false };
    pod.namespace == namespace
        && v.claims().any(|(claim, eph)| {
            if eph {
                ephemeral && splits.iter().any(|(p, vol)| *vol == claim && *p == pod.name)
            } else {
                claim == name
            }
        })
}

/// Upstream's hint of `plugin` for a storage event it registers (`old`: the object before an
/// update; `new`: the object added or after an update): whether the pod may now fit. A
/// registered event without a hint function, and a missing object, say true (Queue).
pub fn storage_hint(
    plugin: &str,
    kind: StorageKind,
    action: StorageAction,
    old: Option<&Obj>,
    new: Option<&Obj>,
    pod: &PodInfo,
) -> bool {
    if !registers_storage(plugin, kind, action) {
        return false;
    }
    let Some(new) = new else { return true };
    let added = action == StorageAction::Add;
    match (plugin, new) {
        // `isSchedulableAfterPersistentVolumeClaimChange` (VolumeBinding: ephemeral claims too),
        // VolumeRestrictions' `isSchedulableAfterPersistentVolumeClaimAdded` and VolumeZone's
        // (`persistentVolumeClaim` volumes only), NodeVolumeLimits' `isSchedulableAfterPVCAdded`.
        (_, Obj::Pvc { namespace, name, ephemeral }) => {
            let with_ephemeral = matches!(plugin, binding::NAME | limits::NAME);
            names_claim(pod, *namespace, *name, ephemeral, with_ephemeral)
        }
        // VolumeBinding's `isSchedulableAfterStorageClassChange`; VolumeZone's
        // `isSchedulableAfterStorageClassAdded`.
        (zone::NAME, Obj::StorageClass { wait_for_first_consumer, .. }) => *wait_for_first_consumer,
        (_, Obj::StorageClass { allowed_topologies, .. }) => match old {
            _ if added => true,
            Some(Obj::StorageClass { allowed_topologies: before, .. }) => before != allowed_topologies,
            _ => true,
        },
        // VolumeZone's `isSchedulableAfterPersistentVolumeChange`; VolumeBinding has no hint.
        (zone::NAME, Obj::Pv { topologies }) => match old {
            _ if added => true,
            Some(Obj::Pv { topologies: before }) => before != topologies,
            _ => true,
        },
        // VolumeBinding's `isSchedulableAfterCSINodeChange`; NodeVolumeLimits' add has no hint,
        // its update is `isSchedulableAfterCSINodeUpdated`.
        (_, Obj::CsiNode { migrated_plugins, limits: new_limits }) => match old {
            _ if added => true,
            Some(Obj::CsiNode { migrated_plugins: before, limits: old_limits }) => {
                if plugin == limits::NAME {
                    new_limits.iter().any(|(d, n)| {
                        let o = old_limits.iter().rev().find(|(od, _)| od == d).map_or(0, |(_, c)| *c);
                        *n > o
                    })
                } else {
                    before.as_deref().unwrap_or("") != migrated_plugins.as_deref().unwrap_or("")
                }
            }
            _ => true,
        },
        // VolumeBinding's `isSchedulableAfterCSIDriverChange`.
        (_, Obj::CsiDriver { name, storage_capacity }) => match old {
            Some(Obj::CsiDriver { storage_capacity: before, .. }) => {
                let uses = pod
                    .volumes
                    .as_ref()
                    .is_some_and(|v| v.list.iter().any(|x| matches!(x, PodVolume::Csi { driver } if driver == name)));
                uses && *before && !*storage_capacity
            }
            _ => true,
        },
        // VolumeBinding's `isSchedulableAfterCSIStorageCapacityChange` (`Quantity.Value()`).
        (_, Obj::CsiStorageCapacity { volume_limit }) => match old {
            _ if added => true,
            Some(Obj::CsiStorageCapacity { volume_limit: before }) => match (volume_limit, before) {
                (None, _) => false,
                (Some(_), None) => true,
                (Some(n), Some(o)) => n.value_ceil() > o.value_ceil(),
            },
            _ => true,
        },
        // A PV event VolumeBinding registers without a hint.
        (_, Obj::Pv { .. }) => true,
    }
}

/// Upstream's hint of `plugin` for the deletion of the assigned pod `deleted`, for the rejected
/// pod `pod`: VolumeRestrictions' and NodeVolumeLimits' `isSchedulableAfterAssignedPodDeleted`.
pub fn assigned_pod_deleted_hint(plugin: &str, deleted: &PodInfo, pod: &PodInfo) -> bool {
    match plugin {
        restrictions::NAME => {
            if deleted.namespace != pod.namespace {
                return false;
            }
            let (Some(mine), Some(theirs)) = (&pod.volumes, &deleted.volumes) else { return false };
            mine.list.iter().any(|v| restrictions::conflicts(v, &theirs.list))
                || mine.claims().filter(|c| !c.1).any(|c| theirs.claims().any(|d| !d.1 && d.0 == c.0))
        }
        // The deleted pod is assigned: it has a node.
        limits::NAME => deleted.volumes.as_ref().is_some_and(|v| {
            v.list
                .iter()
                .any(|x| matches!(x, PodVolume::Claim { .. } | PodVolume::GcePd { .. } | PodVolume::AwsEbs { .. }))
        }),
        _ => false,
    }
}

#[cfg(test)]
#[path = "hint_tests.rs"]
mod tests;
