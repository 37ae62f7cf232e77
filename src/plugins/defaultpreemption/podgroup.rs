//! PodGroupPostFilter: DefaultPreemption for an unschedulable pod group (gate GenericWorkload).
//! v1.37.2's `framework/preemption/podgrouppreemption.go` (`PodGroupEvaluator.Preempt`,
//! `selectVictimsOnDomain`) behind `plugins/defaultpreemption` `PodGroupPostFilter`.
//!
//! The domain is the whole cluster. In order:
//! 1. eligibility: a group whose pods say `preemptionPolicy: Never` does not preempt
//!    (Unschedulable, [`NOT_ELIGIBLE`]);
//! 2. ongoing preemption: when a member's nominated node still holds a lower-priority pod that is
//!    terminating, the members keep their nominations (Success, [`ONGOING`]);
//! 3. every unit ([`super::units::Unit`]: a pod, or a `disruptionMode: all` group with all its
//!    scheduled members) of lower priority than the group is removed from the snapshot; none is
//!    UnschedulableAndUnresolvable ([`NO_VICTIMS`]);
//! 4. the pod-group scheduling function runs once on that snapshot (the caller's: the driver's
//!    trial); if the group still does not fit, its status is the answer;
//! 5. units are reprieved one by one, PDB-violating ones first, each list most important first
//!    (`MoreImportantVictim`): the unit's pods return, then every member the function placed is
//!    filtered on its node (`RunFilterPluginsWithNominatedPods`, PreFilter run afresh on the
//!    snapshot as it is, which is what upstream's cycle states plus the AddPod/RemovePod
//!    extensions hold) and held there for the members after it; a unit stays back only if every
//!    member still fits;
//! 6. the victims are the units not reprieved, most important first; each placed member is
//!    nominated to its node (`ModeOverride`).
//!
//! The snapshot is restored before returning (upstream's `StartMutations`/`EndMutations`), except
//! for the order of pods within a node. Reserve is not run for the held members (no default
//! Reserve plugin holds anything for pods without volumes or claims).

use std::sync::Arc;

use super::fits_with_nominated;
use super::units::{more_important_unit, split_units_by_pdb, units_on_node, victim_priority, Unit};
use crate::framework::Framework;
use crate::ids::PodUid;
use crate::snapshot::{NodeIdx, PodInfo, PreemptionPolicy, Snapshot, Sym};

/// `PodGroupPostFilter`'s prefix on every message it returns.
pub const PREFIX: &str = "pod group preemption: ";
/// `preemptorEligibleToPreemptOthers`' message for `preemptionPolicy: Never`.
pub const NOT_ELIGIBLE: &str = "not eligible due to preemptionPolicy=Never.";
/// `Preempt`'s status while an earlier preemption's victims are still terminating.
pub const ONGOING: &str = "ongoing preemption on nominated nodes";
/// `selectVictimsOnDomain` without any lower-priority unit.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming preemptor";

/// The preemptor: the group's priority, its preemption policy (the first pod's: PodGroupPreemptionPolicy
/// is off) and the members of this cycle, in the cycle's order.
#[derive(Clone, Copy, Debug)]
pub struct GroupPreemptor<'a> {
    pub priority: i32,
    pub policy: PreemptionPolicy,
    pub members: &'a [Arc<PodInfo>],
}

/// What the pod-group scheduling function (`PodGroupSchedulingFunc`) returns: the node each
/// member was placed on (`None`: not placed), and the group's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSchedule {
    pub assignments: Vec<Option<Sym>>,
    pub status: GroupStatus,
}

/// A pod-group cycle's status (`rootStatus`), with upstream's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupStatus {
    Success,
    Unschedulable(String),
    Error(String),
}

/// PodGroupPostFilter's answer.
#[derive(Clone, Debug)]
pub enum GroupPostFilter {
    /// Success: delete `victims`, nominate member `i` to its node for each `(i, node)`.
    Preempt { victims: Vec<Arc<PodInfo>>, num_pdb_violations: usize, nominations: Vec<(usize, Sym)> },
    /// Success: an earlier preemption is still under way; members keep their nominations.
    Ongoing,
    /// Unschedulable (`unresolvable`: UnschedulableAndUnresolvable) with the evaluator's message.
    Rejected { message: String, unresolvable: bool },
    /// The scheduling function ended in an error.
    Error(String),
}

impl GroupPostFilter {
    pub fn is_success(&self) -> bool {
        matches!(self, GroupPostFilter::Preempt { .. } | GroupPostFilter::Ongoing)
    }

    /// The status message `RunPodGroupPostFilterPlugins` returns (what
    /// `applyPodGroupPostFilterResult` appends to the group's status).
    pub fn message(&self) -> String {
        match self {
            GroupPostFilter::Preempt { victims, .. } => {
                format!("{PREFIX}found a placement for podgroup, preempting {} victims", victims.len())
            }
            GroupPostFilter::Ongoing => format!("{PREFIX}{ONGOING}"),
            GroupPostFilter::Rejected { message, .. } => format!("{PREFIX}{message}"),
            GroupPostFilter::Error(e) => {
                format!("error in \"DefaultPreemption\" PodGroupPostFilter plugins: {PREFIX}{e}")
            }
        }
    }
}

/// Every unit on the cluster (`getCrossNodesVictims` over all nodes), in node order; a
/// `disruptionMode: all` group once, wherever its members are.
pub fn cluster_units(snap: &Snapshot) -> Vec<Unit> {
    let mut seen: Vec<PodUid> = Vec::new();
    let mut out = Vec::new();
    for ix in 0..snap.nodes.len() {
        for u in units_on_node(snap, NodeIdx(ix as u32)) {
            if u.pods.len() > 1 || u.pods.iter().any(|(_, n)| *n != snap.nodes.name[ix]) {
                let first = u.pods.iter().map(|(p, _)| p.uid).min().expect("a unit has pods");
                if seen.contains(&first) {
                    continue;
                }
                seen.push(first);
            }
            out.push(u);
        }
    }
    out
}

/// `isOngoingPreemption`: a member's nominated node holds a terminating pod of lower priority.
pub fn ongoing_preemption(snap: &Snapshot, preemptor: &GroupPreemptor<'_>) -> bool {
    preemptor.members.iter().filter_map(|m| m.nominated_node).filter_map(|n| snap.nodes.idx_of(n)).any(|ix| {
        snap.nodes.pods[ix.ix()].iter().any(|u| {
            let p = &snap.pods[u].info;
            p.terminating && victim_priority(snap, p) < preemptor.priority
        })
    })
}

fn remove(snap: &mut Snapshot, u: &Unit) {
    for (p, _) in &u.pods {
        snap.unplace_pod(p.uid);
    }
}

fn restore(snap: &mut Snapshot, u: &Unit) {
    for (p, n) in &u.pods {
        snap.place_pod(p.clone(), *n).expect("a victim returns to its node");
    }
}

/// `PodGroupEvaluator.Preempt` (see the module doc). `schedule` is the pod-group scheduling
/// function: it runs the group's cycle on the snapshot it is given and must leave it as it was.
pub fn preempt_pod_group(
    fw: &Framework,
    snap: &mut Snapshot,
    preemptor: &GroupPreemptor<'_>,
    schedule: impl FnOnce(&mut Snapshot) -> GroupSchedule,
) -> GroupPostFilter {
    if preemptor.policy == PreemptionPolicy::Never {
        return GroupPostFilter::Rejected { message: NOT_ELIGIBLE.into(), unresolvable: false };
    }
    if ongoing_preemption(snap, preemptor) {
        return GroupPostFilter::Ongoing;
    }
    let mut units: Vec<Unit> = cluster_units(snap).into_iter().filter(|u| u.priority < preemptor.priority).collect();
    if units.is_empty() {
        return GroupPostFilter::Rejected { message: NO_VICTIMS.into(), unresolvable: true };
    }
    for u in &units {
        remove(snap, u);
    }
    let sched = schedule(snap);
    match sched.status {
        GroupStatus::Success => {}
        GroupStatus::Unschedulable(message) => {
            units.iter().for_each(|u| restore(snap, u));
            return GroupPostFilter::Rejected { message, unresolvable: false };
        }
        GroupStatus::Error(e) => {
            units.iter().for_each(|u| restore(snap, u));
            return GroupPostFilter::Error(e);
        }
    }
    let assigned: Vec<(usize, Sym)> =
        sched.assignments.iter().enumerate().filter_map(|(i, n)| n.map(|n| (i, n))).collect();
    units.sort_by(more_important_unit);
    let (violating, non_violating) = split_units_by_pdb(snap, units);
    let mut victims: Vec<Unit> = Vec::new();
    let mut num_pdb_violations = 0;
    for (u, n) in violating.into_iter().chain(non_violating.into_iter().map(|u| (u, 0))) {
        restore(snap, &u);
        if reprieve_fits(fw, snap, preemptor.members, &assigned) {
            continue;
        }
        remove(snap, &u);
        num_pdb_violations += n;
        victims.push(u);
    }
    victims.sort_by(more_important_unit);
    victims.iter().for_each(|u| restore(snap, u));
    GroupPostFilter::Preempt {
        victims: victims.into_iter().flat_map(|u| u.pods.into_iter().map(|(p, _)| p)).collect(),
        num_pdb_violations,
        nominations: assigned,
    }
}

/// `reprieveVictim`'s check: every assigned member, in order, passes the filters (with nominated
/// pods) on its node, each held there for the members after it; the held members are removed again.
fn reprieve_fits(fw: &Framework, snap: &mut Snapshot, members: &[Arc<PodInfo>], assigned: &[(usize, Sym)]) -> bool {
    let mut held: Vec<PodUid> = Vec::new();
    let mut fits = true;
    for &(i, node) in assigned {
        let m = &members[i];
        let Some(ix) = snap.nodes.idx_of(node) else {
            fits = false;
            break;
        };
        if fits_with_nominated(fw, snap, m, ix, None).is_some() {
            fits = false;
            break;
        }
        snap.place_pod(m.clone(), node).expect("the member's node exists");
        held.push(m.uid);
    }
    for uid in held.into_iter().rev() {
        snap.unplace_pod(uid);
    }
    fits
}

#[cfg(test)]
#[path = "podgroup_tests.rs"]
mod tests;
