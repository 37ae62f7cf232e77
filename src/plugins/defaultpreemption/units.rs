//! PodGroup-aware victim selection (gate GenericWorkload): v1.37.2's preemption units
//! (`framework/preemption/types.go` `Victim`, `getCrossNodesVictims`; `util.go`
//! `MoreImportantVictim`, `GetPodPriority`, `FilterVictimsWithPDBViolation`) and
//! `SelectVictimsOnNode` over them (`plugins/defaultpreemption/default_preemption.go`).
//!
//! With the gate on, a pod naming a PodGroup (`spec.schedulingGroup.podGroupName`) is a victim
//! with the group's priority (`spec.priority`, 0 when unset; the pod's own when the group does
//! not exist) and ranks above a pod without a group. A group whose `disruptionMode` is `all`
//! is one unit: every scheduled member, on whichever node, is removed, reprieved and evicted
//! together, and counts in the candidate's victims (so in `pickOneNodeForPreemption`'s sums and
//! counts, and in the deletions). `single` (or no mode) leaves each member its own unit.
//!
//! The table of groups and members ([`PodGroupTable`]) lives in the snapshot; the runner and
//! `verify` fill it. A node without any group member on it takes the pod-by-pod path of
//! `mod.rs`, which is the same selection for units of one plain pod each.
//! Composite groups are not modelled (their gate skips the workload).

use std::cmp::Ordering;
use std::sync::Arc;

use ahash::AHashMap;

use super::{fits_with_nominated, pdb_matches, Candidate, NotCandidate, PreFiltered};
use crate::framework::Framework;
use crate::ids::PodUid;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot, Sym};

/// A PodGroup as preemption reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupMeta {
    /// `PodGroupPriority`: `spec.priority`, 0 when unset.
    pub priority: i32,
    /// `spec.disruptionMode.all` is set: the group is evicted whole.
    pub disrupt_all: bool,
}

impl GroupMeta {
    /// A PodGroup object's: `disruptionMode` unset evicts members one by one, as `single` does.
    pub fn of(group: &crate::api::PodGroup) -> GroupMeta {
        GroupMeta {
            priority: group.priority(),
            disrupt_all: group.spec.disruption_mode.as_ref().is_some_and(|d| d.all.is_some()),
        }
    }
}

/// PodGroups (by namespace and name) and the pods naming them, while GenericWorkload is on.
#[derive(Clone, Debug, Default)]
pub struct PodGroupTable {
    enabled: bool,
    groups: AHashMap<(Sym, Sym), GroupMeta>,
    /// Members of each group in the order they were created (deleted ones may linger: only
    /// those placed in the snapshot count).
    members: AHashMap<(Sym, Sym), Vec<PodUid>>,
    member_of: AHashMap<PodUid, (Sym, Sym)>,
}

impl PodGroupTable {
    /// GenericWorkload on or off; off empties the table and every pod is its own unit.
    pub fn set_enabled(&mut self, on: bool) {
        if !on {
            *self = PodGroupTable::default();
        }
        self.enabled = on;
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A PodGroup is created or replaced.
    pub fn set_group(&mut self, namespace: Sym, name: Sym, meta: GroupMeta) {
        if self.enabled {
            self.groups.insert((namespace, name), meta);
        }
    }

    /// Pod `uid` names group `name` in `namespace` (whether or not the group exists yet).
    pub fn add_member(&mut self, uid: PodUid, namespace: Sym, name: Sym) {
        if !self.enabled || self.member_of.contains_key(&uid) {
            return;
        }
        self.member_of.insert(uid, (namespace, name));
        self.members.entry((namespace, name)).or_default().push(uid);
    }

    /// Pod `uid` is deleted.
    pub fn remove_member(&mut self, uid: PodUid) {
        if let Some(key) = self.member_of.remove(&uid) {
            if let Some(v) = self.members.get_mut(&key) {
                v.retain(|u| *u != uid);
            }
        }
    }

    fn group_of(&self, uid: PodUid) -> Option<(Sym, Sym)> {
        self.member_of.get(&uid).copied()
    }

    fn has_members(&self) -> bool {
        !self.member_of.is_empty()
    }
}

/// `GetPodPriority`: the priority preemption weighs a running pod at.
pub fn victim_priority(snap: &Snapshot, p: &PodInfo) -> i32 {
    let t = &snap.pod_groups;
    match t.group_of(p.uid).and_then(|k| t.groups.get(&k)) {
        Some(g) => g.priority,
        None => p.priority,
    }
}

/// `victimRank`'s kinds (composite groups are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnitKind {
    /// A pod without a group.
    Pod = 1,
    /// A pod naming a group (NewPodVictim gives it the group's key type), or a whole `all` group.
    PodGroup = 2,
}

/// A preemption unit (`Victim`): pods evicted together.
#[derive(Clone, Debug)]
pub struct Unit {
    pub kind: UnitKind,
    pub priority: i32,
    /// The pods and the node each is on.
    pub pods: Vec<(Arc<PodInfo>, Sym)>,
    /// `EarliestStartTime` (in `start_time_ms`, as `more_important` reads it).
    pub earliest_start_ms: i64,
}

impl Unit {
    fn new(kind: UnitKind, priority: i32, pods: Vec<(Arc<PodInfo>, Sym)>) -> Unit {
        let earliest_start_ms = pods.iter().map(|(p, _)| p.constraints.start_time_ms).min().unwrap_or(i64::MAX);
        Unit { kind, priority, pods, earliest_start_ms }
    }
}

/// `MoreImportantVictim` as an ordering (most important first): higher priority, then the kind
/// (group above pod), then more pods, then the earlier start.
pub fn more_important_unit(a: &Unit, b: &Unit) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then(b.kind.cmp(&a.kind))
        .then(b.pods.len().cmp(&a.pods.len()))
        .then(a.earliest_start_ms.cmp(&b.earliest_start_ms))
}

/// `GetVictimsOnNode` with the gate on (`getCrossNodesVictims` over one node): each pod on the
/// node in order; a member of an `all` group brings the group's scheduled members, on every node,
/// as one unit (once); any other pod is a unit of its own.
pub fn units_on_node(snap: &Snapshot, node: NodeIdx) -> Vec<Unit> {
    let t = &snap.pod_groups;
    let mut seen: Vec<(Sym, Sym)> = Vec::new();
    let mut out = Vec::new();
    let node_name = snap.nodes.name[node.ix()];
    for uid in &snap.nodes.pods[node.ix()] {
        let p = &snap.pods[uid].info;
        let key = t.group_of(p.uid);
        let meta = key.and_then(|k| t.groups.get(&k));
        let kind = if key.is_some() { UnitKind::PodGroup } else { UnitKind::Pod };
        let priority = meta.map_or(p.priority, |g| g.priority);
        if let (Some(k), Some(g)) = (key, meta) {
            if g.disrupt_all {
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                let pods: Vec<(Arc<PodInfo>, Sym)> = t.members[&k]
                    .iter()
                    .filter_map(|u| snap.pods.get(u))
                    .map(|pp| (pp.info.clone(), pp.node))
                    .collect();
                if !pods.is_empty() {
                    out.push(Unit::new(UnitKind::PodGroup, priority, pods));
                    continue;
                }
            }
        }
        out.push(Unit::new(kind, priority, vec![(p.clone(), node_name)]));
    }
    out
}

/// `FilterVictimsWithPDBViolation`: units (in order) whose eviction would take a matching
/// budget below zero, each with the number of its pods that do, and the rest; budgets are
/// consumed pod by pod, a pod stopping at the first budget it exhausts.
pub fn split_units_by_pdb(snap: &Snapshot, units: Vec<Unit>) -> (Vec<(Unit, usize)>, Vec<Unit>) {
    let pdbs = &snap.cluster.pdbs;
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let mut violates = |p: &PodInfo| {
        if p.labels.is_empty() {
            return false;
        }
        for (i, pdb) in pdbs.iter().enumerate() {
            if !pdb_matches(pdb, p, snap) || pdb.disrupted_pods.contains(&p.name) {
                continue;
            }
            allowed[i] -= 1;
            if allowed[i] < 0 {
                return true;
            }
        }
        false
    };
    let (mut violating, mut ok) = (Vec::new(), Vec::new());
    for u in units {
        let n = u.pods.iter().filter(|(p, _)| violates(p)).count();
        if n > 0 {
            violating.push((u, n));
        } else {
            ok.push(u);
        }
    }
    (violating, ok)
}

/// Whether the unit path applies: the gate is on and a pod on `node` names a group.
pub fn applies(snap: &Snapshot, node: NodeIdx) -> bool {
    let t = &snap.pod_groups;
    t.enabled && t.has_members() && snap.nodes.pods[node.ix()].iter().any(|u| t.group_of(*u).is_some())
}

/// `SelectVictimsOnNode` over units: remove every unit of lower priority than the preemptor
/// (its pods on other nodes too, when PreFilter reads placed pods; upstream passes those through
/// the PreFilter extensions' RemovePod), filter, then reprieve units (PDB-violating first, each
/// group most important first) while the pod still fits. The victims are the pods of the units
/// not reprieved, unit by unit. Restores the snapshot (except the order of pods within a node).
pub(super) fn try_node_units(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    cached: Option<&PreFiltered>,
) -> Result<Candidate, NotCandidate> {
    let node_name = snap.nodes.name[node.ix()];
    let mut units: Vec<Unit> = units_on_node(snap, node).into_iter().filter(|u| u.priority < pod.priority).collect();
    if units.is_empty() {
        return Err(NotCandidate::NoLowerPriorityPods);
    }
    // A cached PreFilter reads no placed pod: pods on other nodes cannot change the verdict.
    let moves_remote = cached.is_none();
    let moved =
        |u: &Unit| u.pods.iter().filter(move |(_, n)| moves_remote || *n == node_name).cloned().collect::<Vec<_>>();
    let remove = |snap: &mut Snapshot, u: &Unit| {
        for (p, _) in moved(u) {
            snap.unplace_pod(p.uid);
        }
    };
    let restore = |snap: &mut Snapshot, u: &Unit| {
        for (p, n) in moved(u) {
            snap.place_pod(p, n).expect("a victim returns to its node");
        }
    };
    for u in &units {
        remove(snap, u);
    }
    if let Some((pid, reject)) = fits_with_nominated(fw, snap, pod, node, cached) {
        for u in &units {
            restore(snap, u);
        }
        return Err(NotCandidate::StillUnfit(pid, reject));
    }
    units.sort_by(more_important_unit);
    let (violating, non_violating) = split_units_by_pdb(snap, units);
    let any_violating = !violating.is_empty();
    let any_non_violating = !non_violating.is_empty();
    let mut victims: Vec<Unit> = Vec::new();
    let mut num_pdb_violations = 0;
    let tries = violating.into_iter().chain(non_violating.into_iter().map(|u| (u, 0)));
    for (u, n) in tries {
        restore(snap, &u);
        if fits_with_nominated(fw, snap, pod, node, cached).is_some() {
            remove(snap, &u);
            num_pdb_violations += n;
            victims.push(u);
        }
    }
    for u in &victims {
        restore(snap, u);
    }
    if any_violating && any_non_violating {
        victims.sort_by(more_important_unit);
    }
    let victims = victims.iter().flat_map(|u| u.pods.iter().map(|(p, _)| super::Victim::of(p))).collect();
    Ok(Candidate { node, victims, num_pdb_violations })
}

#[cfg(test)]
#[path = "units_tests.rs"]
mod tests;
