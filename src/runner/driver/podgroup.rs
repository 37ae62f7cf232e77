//! Workload-aware scheduling (gate GenericWorkload): PodGroup objects, their pods queued as one
//! entity, and the pod-group scheduling cycle of v1.37.2's `schedule_one_podgroup.go`.
//!
//! With the gate on, a pod whose `spec.schedulingGroup.podGroupName` names a group is a member:
//! - it waits outside the queue until its PodGroup exists (upstream's `incompletePodGroupPods`);
//! - the group's queued pods form one queue entity (a [`crate::queue::QueuedPod`] with a synthetic
//!   uid, the group's priority); PreEnqueue (GangScheduling: `minCount` pods exist; the profile's
//!   own PreEnqueue plugins for every pod) gates the whole entity;
//! - popping the entity runs one pod-group cycle: `validatePodGroup`, then each pod in
//!   `PodGroupMemberPodsOrderingFunc` order through Filter/Score (no PostFilter), assumed in the
//!   snapshot and reserved, with PlacementFeasible after each pod; the trial placements are then
//!   reverted, and only if the group succeeded are its feasible pods assumed for real, reserved
//!   and permitted (GangScheduling's Permit holds them until `minCount` are assumed or bound);
//! - pods that did not schedule go back into the entity, which is requeued as
//!   `AddAttemptedPodGroupIfNeeded` does: to activeQ after a success, to backoffQ (or activeQ when
//!   its backoff is over) after a rejection or an error.
//!
//! - an unschedulable group runs PodGroupPostFilter (DefaultPreemption's group preemption,
//!   `plugins/defaultpreemption/podgroup.rs`, with a fresh trial as the scheduling function): its
//!   victims are deleted (the entity held back by PreEnqueue meanwhile, as a preemptor pod is),
//!   its members nominated, and its message appended to the group's.
//!
//! - with TopologyAwareWorkloadScheduling on, the trial runs once per placement
//!   TopologyPlacementGenerator makes of the group's topology key (`plugins/topologyaware.rs`;
//!   the engine's filter pass limited to the placement's rows) and the best placement where the
//!   group fits is kept ([`group_algorithm`], `podGroupSchedulingPlacementAlgorithm`).
//!
//! Not modelled: PodGroup status conditions and composite groups (their gate skips the workload).

use std::sync::Arc;
use std::time::Instant;

use crate::api;
use crate::clock::Clock;
use crate::engine::{CycleResult, Engine};
use crate::framework::{CycleCx, CycleState, Framework, PermitOutcome, PluginId};
use crate::ids::PodUid;
use crate::plugins::defaultpreemption::podgroup::{
    preempt_pod_group, GroupPostFilter, GroupPreemptor, GroupSchedule, GroupStatus,
};
use crate::plugins::defaultpreemption::{self, GroupMeta};
use crate::plugins::gangscheduling::{self, Feasible};
use crate::plugins::topologyaware;
use crate::queue::QueuedPod;
use crate::snapshot::{NodeIdx, Placement, PodInfo, PreemptionPolicy, Snapshot, Sym};

use super::{Driver, PodState};

/// Queue uids of group entities start here; pod uids are dense from 1 and never reach it.
const GROUP_UID_BASE: u64 = 1 << 62;

/// A pod in a group's queue entity (upstream's `QueuedPodInfos` of the group).
#[derive(Clone, Copy, Debug)]
struct Member {
    uid: PodUid,
    /// When it entered the entity (the ordering's timestamp).
    timestamp_nanos: u64,
}

/// One PodGroup and its pods.
#[derive(Debug)]
pub(super) struct Group {
    namespace: String,
    name: String,
    /// `gang.minCount`; `None` for a basic policy.
    min_count: Option<u32>,
    priority: i32,
    /// `schedulingConstraints.topology[0].key` (read with TopologyAwareWorkloadScheduling on).
    topology_key: Option<String>,
    /// Every pod naming the group and not deleted (`AllPodsCount`).
    members: Vec<PodUid>,
    /// The pods in the group's queue entity.
    queued: Vec<Member>,
    /// The entity is in the scheduling queue.
    in_queue: bool,
    /// The entity was popped and its cycle is running.
    in_flight: bool,
}

/// The run's PodGroups.
#[derive(Debug, Default)]
pub(super) struct Groups {
    /// GenericWorkload is on for this workload.
    pub(super) enabled: bool,
    /// TopologyAwareWorkloadScheduling is on too: cycles try TopologyPlacementGenerator's placements.
    pub(super) topology: bool,
    list: Vec<Group>,
    index: ahash::AHashMap<(String, String), usize>,
    /// Pods naming a group that does not exist yet, by (namespace, name).
    incomplete: std::collections::BTreeMap<(String, String), Vec<PodUid>>,
}

impl Groups {
    pub(super) fn new(enabled: bool, topology: bool) -> Groups {
        Groups { enabled, topology: enabled && topology, ..Groups::default() }
    }

    /// The group whose queue entity has `uid`.
    pub(super) fn group_of_entity(&self, uid: PodUid) -> Option<usize> {
        let ix = uid.0.checked_sub(GROUP_UID_BASE)? as usize;
        (ix < self.list.len()).then_some(ix)
    }

    /// `podgroup/namespace/name` of group `ix`, as traces name a group's entity.
    pub(super) fn entity_key(&self, ix: usize) -> String {
        let g = &self.list[ix];
        format!("podgroup/{}/{}", g.namespace, g.name)
    }

    fn entity_uid(ix: usize) -> PodUid {
        PodUid(GROUP_UID_BASE + ix as u64)
    }
}

/// How a pod-group cycle ended (`rootStatus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GroupOutcome {
    Success,
    Unschedulable(String),
    Error(String),
}

/// What the trial said about one pod.
#[derive(Clone, Debug)]
pub(crate) enum Trial {
    /// The cycle stopped (PlacementFeasible said the group cannot make it, or an error) before it.
    NotEvaluated,
    /// It fits on this node (the placement was reverted with the rest of the trial).
    Feasible(Sym),
    /// It fits nowhere (or Reserve rejected it): the message and the rejecting plugins.
    Unschedulable { message: String, rejectors: Vec<PluginId> },
}

impl Driver {
    /// The (namespace, PodGroup name) of pod `uid` when GenericWorkload is on and it names one.
    pub(super) fn group_key_of(&self, uid: PodUid) -> Option<(String, String)> {
        if !self.groups.enabled {
            return None;
        }
        let rec = self.rec(uid);
        let name = rec.template.spec.scheduling_group.as_ref()?.pod_group_name.as_ref()?;
        Some((rec.namespace.to_string(), name.clone()))
    }

    /// A PodGroup is created (`createPodGroups`, `createAny`, a cluster file): its waiting pods join
    /// its queue entity. Creating an existing group replaces its spec.
    pub(super) fn add_pod_group(&mut self, group: &api::PodGroup, namespace: &str) {
        let key = (namespace.to_string(), group.metadata.name.clone());
        let ix = match self.groups.index.get(&key) {
            Some(&ix) => {
                let g = &mut self.groups.list[ix];
                g.min_count = group.min_count();
                g.priority = group.priority();
                g.topology_key = group.topology_key().map(str::to_string);
                ix
            }
            None => {
                let ix = self.groups.list.len();
                self.groups.list.push(Group {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                    min_count: group.min_count(),
                    priority: group.priority(),
                    topology_key: group.topology_key().map(str::to_string),
                    members: Vec::new(),
                    queued: Vec::new(),
                    in_queue: false,
                    in_flight: false,
                });
                self.groups.index.insert(key.clone(), ix);
                ix
            }
        };
        let (ns, name) = (self.snap.interner.intern(&key.0), self.snap.interner.intern(&key.1));
        self.snap.pod_groups.set_group(ns, name, GroupMeta::of(group));
        if self.snap.cluster.dra.workload_claims {
            // The resourceclaim controller's syncPodGroup: the group's claims from templates.
            let uid = if group.metadata.uid.is_empty() {
                format!("podgroup-{}-{}", key.0, key.1)
            } else {
                group.metadata.uid.clone()
            };
            let statuses = |d: &Self| {
                d.snap.cluster.dra.pod_groups.get(&key).map(|g| g.statuses.values().cloned().collect::<Vec<_>>())
            };
            let before = statuses(self).unwrap_or_default();
            crate::plugins::dynamicresources::controller::create_pod_group_claims(
                group,
                &key.0,
                &uid,
                &mut self.snap.cluster.dra,
            );
            let made: Vec<String> =
                statuses(self).unwrap_or_default().into_iter().filter(|n| !before.contains(n)).collect();
            self.claims_made(&key.0, &made);
        }
        let now = self.now();
        for uid in self.groups.incomplete.remove(&key).unwrap_or_default() {
            self.join_group(ix, uid, now);
        }
        self.sync_group_entity(ix, now);
    }

    /// A new (or requeued) member `uid` of group `key` enters the queue.
    pub(super) fn enqueue_group_member(&mut self, uid: PodUid, key: (String, String), now: u64) {
        self.note_group_member(uid, &key);
        let Some(&ix) = self.groups.index.get(&key) else {
            self.trace(now, uid, "waitingForPodGroup", |_| serde_json::json!({"podGroup": key.1}));
            self.groups.incomplete.entry(key).or_default().push(uid);
            return;
        };
        self.join_group(ix, uid, now);
        self.sync_group_entity(ix, now);
    }

    fn join_group(&mut self, ix: usize, uid: PodUid, now: u64) {
        let g = &mut self.groups.list[ix];
        if !g.members.contains(&uid) {
            g.members.push(uid);
        }
        if !g.queued.iter().any(|m| m.uid == uid) {
            g.queued.push(Member { uid, timestamp_nanos: now });
        }
    }

    /// Pod `uid` names group `key`: DefaultPreemption weighs it as the group's member.
    pub(super) fn note_group_member(&mut self, uid: PodUid, key: &(String, String)) {
        let (ns, name) = (self.snap.interner.intern(&key.0), self.snap.interner.intern(&key.1));
        self.snap.pod_groups.add_member(uid, ns, name);
    }

    /// A member was deleted: it leaves its group (and the entity, which leaves the queue when empty).
    pub(super) fn remove_group_member(&mut self, uid: PodUid) {
        let Some(key) = self.group_key_of(uid) else { return };
        self.snap.pod_groups.remove_member(uid);
        if let Some(v) = self.groups.incomplete.get_mut(&key) {
            v.retain(|u| *u != uid);
        }
        let Some(&ix) = self.groups.index.get(&key) else { return };
        let g = &mut self.groups.list[ix];
        g.members.retain(|u| *u != uid);
        g.queued.retain(|m| m.uid != uid);
        let now = self.now();
        self.sync_group_entity(ix, now);
    }

    /// Whether the group's entity passes PreEnqueue: GangScheduling's quorum of pods, and the
    /// profile's PreEnqueue plugins for every queued pod (one gated pod gates the entity).
    fn group_pre_enqueue_passes(&self, ix: usize) -> bool {
        let g = &self.groups.list[ix];
        gangscheduling::pre_enqueue(g.min_count, g.members.len()).is_ok()
            && g.queued.iter().all(|m| {
                let rec = self.rec(m.uid);
                self.frameworks[rec.profile].run_pre_enqueue(&rec.info).is_success()
            })
    }

    /// Puts the group's entity in the queue when it has pods and is not there, takes it out when it
    /// has none, and lets a gated entity into activeQ once PreEnqueue passes.
    fn sync_group_entity(&mut self, ix: usize, now: u64) {
        let entity = Groups::entity_uid(ix);
        let g = &self.groups.list[ix];
        if g.in_flight {
            return;
        }
        if g.queued.is_empty() {
            if g.in_queue {
                self.queue.delete(entity);
                self.groups.list[ix].in_queue = false;
            }
            return;
        }
        let passes = self.group_pre_enqueue_passes(ix);
        let g = &mut self.groups.list[ix];
        if !g.in_queue {
            g.in_queue = true;
            let qp = QueuedPod::new(entity, g.priority, ()).gated(!passes);
            self.queue.add(qp, now);
        } else if passes {
            self.queue.remove_gate(entity);
        }
    }

    /// One pod-group scheduling cycle (`scheduleOnePodGroup`) for the entity `qp` of group `ix`.
    pub(super) fn schedule_pod_group(&mut self, ix: usize, mut qp: QueuedPod<()>) {
        let now = self.now();
        let mut members = std::mem::take(&mut self.groups.list[ix].queued);
        members.retain(|m| self.rec(m.uid).state == PodState::Queued);
        if members.is_empty() {
            self.queue.done(qp.uid);
            self.groups.list[ix].in_queue = false;
            return;
        }
        self.groups.list[ix].in_flight = true;
        // `IncAttempts` on the entity increments every pod's attempts.
        for m in &members {
            self.rec_mut(m.uid).attempts += 1;
        }
        // `PodGroupMemberPodsOrderingFunc`: priority (descending), attempts (descending),
        // timestamp, name.
        members.sort_by(|a, b| {
            let (ra, rb) = (self.rec(a.uid), self.rec(b.uid));
            rb.info
                .priority
                .cmp(&ra.info.priority)
                .then(rb.attempts.cmp(&ra.attempts))
                .then(a.timestamp_nanos.cmp(&b.timestamp_nanos))
                .then_with(|| ra.info.name.cmp(&rb.info.name))
        });
        let outcome = match self.validate_pod_group(ix, &members) {
            Err(message) => {
                for m in &members {
                    self.counters.attempts += 1;
                    self.counters.errors += 1;
                    let msg = message.clone();
                    self.trace(now, m.uid, "attempt", |_| serde_json::json!({"result": "error", "reasons": [msg]}));
                }
                self.groups.list[ix].queued = members.clone();
                GroupOutcome::Error(message)
            }
            Ok(profile) => self.pod_group_cycle(ix, profile, &members),
        };
        if let Some(first) = members.first() {
            let g = &self.groups.list[ix];
            let (group, result) = (
                format!("{}/{}", g.namespace, g.name),
                match &outcome {
                    GroupOutcome::Success => ("scheduled".to_string(), String::new()),
                    GroupOutcome::Unschedulable(m) => ("unschedulable".to_string(), m.clone()),
                    GroupOutcome::Error(m) => ("error".to_string(), m.clone()),
                },
            );
            self.trace(now, first.uid, "podGroupAttempt", |_| {
                serde_json::json!({"podGroup": group, "pods": members.len(), "result": result.0, "message": result.1})
            });
        }
        self.requeue_pod_group(ix, &mut qp, &outcome);
    }

    /// `validatePodGroup` for group `ix` over its queued `members`, then its scheduled pods.
    /// Returns the profile.
    fn validate_pod_group(&self, ix: usize, members: &[Member]) -> Result<usize, String> {
        let g = &self.groups.list[ix];
        let scheduled = g
            .members
            .iter()
            .copied()
            .filter(|u| matches!(self.rec(*u).state, PodState::Assumed(_) | PodState::Bound(_)));
        let pods = members.iter().map(|m| m.uid).chain(scheduled).map(|uid| {
            let rec = self.rec(uid);
            (rec.profile, self.frameworks[rec.profile].scheduler_name.as_str(), &*rec.info)
        });
        validate_group(g.priority, pods)
    }

    /// Group `ix`'s topology key and scheduled pods, for TopologyPlacementGenerator.
    fn group_topology(&mut self, ix: usize) -> GroupTopology {
        let key = self.groups.list[ix].topology_key.clone().map(|k| self.snap.interner.intern(&k));
        let scheduled = self.groups.list[ix]
            .members
            .iter()
            .filter_map(|u| {
                let rec = self.rec(*u);
                match rec.state {
                    PodState::Assumed(node) | PodState::Bound(node) => {
                        Some(topologyaware::ScheduledPod { key: format!("{}/{}", rec.namespace, rec.info.name), node })
                    }
                    _ => None,
                }
            })
            .collect();
        GroupTopology { key, scheduled, prefer: None }
    }

    /// The scheduled (assumed or bound) pods of group `ix` (`ScheduledPodsCount`).
    fn group_scheduled(&self, ix: usize) -> usize {
        self.groups.list[ix]
            .members
            .iter()
            .filter(|u| matches!(self.rec(**u).state, PodState::Assumed(_) | PodState::Bound(_)))
            .count()
    }

    /// `podGroupCycle`: the trial over `members`, its revert, PodGroupPostFilter when the group is
    /// unschedulable (DefaultPreemption's group preemption: victims deleted, members nominated),
    /// and the submission of the result.
    fn pod_group_cycle(&mut self, ix: usize, profile: usize, members: &[Member]) -> GroupOutcome {
        let fw = self.frameworks[profile].clone();
        let min = gangscheduling::min_count(self.groups.list[ix].min_count);
        let scheduled = self.group_scheduled(ix);
        let infos: Vec<Arc<PodInfo>> = members.iter().map(|m| self.rec(m.uid).info.clone()).collect();
        let tas = self.groups.topology.then(|| self.group_topology(ix));
        let (hist, vclock, agent, cycle_cost) = (&mut self.hist, &self.vclock, &mut self.agent, &self.cycle_cost);
        let advance = |result: &CycleResult| {
            if let Some(v) = vclock {
                let evaluated = match result {
                    CycleResult::Scheduled { evaluated_nodes, .. } => *evaluated_nodes,
                    CycleResult::Unschedulable(diag) => diag.failures.len(),
                    CycleResult::Error(_) => 0,
                };
                v.advance_by(cycle_cost.cycle_nanos(evaluated));
                agent.advance_to(v.now_nanos());
            }
        };
        let (trials, outcome) = group_algorithm(
            &mut self.engine,
            &mut self.snap,
            &fw,
            &infos,
            min,
            scheduled,
            tas.as_ref(),
            |result, cycle_nanos| {
                hist.record_at(crate::metrics::Hist::Attempt, cycle_nanos);
                advance(result);
            },
        );
        let post = match &outcome {
            GroupOutcome::Unschedulable(_) if has_pod_group_post_filter(&fw) => {
                let priority = self.groups.list[ix].priority;
                Some(group_post_filter(
                    &mut self.engine,
                    &mut self.snap,
                    &fw,
                    &infos,
                    min,
                    scheduled,
                    priority,
                    tas.as_ref(),
                    |r, _| advance(r),
                ))
            }
            _ => None,
        };
        if let Some(post) = &post {
            self.apply_group_post_filter(ix, &infos, post);
        }
        self.submit_pod_group(ix, profile, members, trials, &outcome, post.as_ref());
        outcome
    }

    /// `applyPodGroupPostFilterResult` and the actuation: on a preemption, each placed member is
    /// nominated to its node and the victims are deleted as SchedulerAsyncPreemption says (the
    /// group's entity is the preemptor DefaultPreemption's PreEnqueue holds back).
    fn apply_group_post_filter(&mut self, ix: usize, infos: &[Arc<PodInfo>], post: &GroupPostFilter) {
        let GroupPostFilter::Preempt { victims, nominations, .. } = post else { return };
        let now = self.now();
        self.counters.preemptions += 1;
        self.counters.preemption_victims += victims.len() as u64;
        for &(i, node) in nominations {
            let nominated = Arc::new(PodInfo { nominated_node: Some(node), ..(*infos[i]).clone() });
            self.snap.nominate(nominated.clone(), node);
            let uid = nominated.uid;
            self.rec_mut(uid).info = nominated;
            let (node, names) = (
                self.snap.interner.resolve(node).to_string(),
                victims.iter().map(|v| v.name.clone()).collect::<Vec<_>>(),
            );
            self.trace(now, uid, "nominated", |_| serde_json::json!({"node": node, "victims": names}));
        }
        let victims: Vec<PodUid> =
            victims.iter().map(|v| v.uid).filter(|v| v.0 >= 1 && v.0 as usize <= self.pods.len()).collect();
        self.actuate_preemption(Groups::entity_uid(ix), victims, now);
    }

    /// `submitPodGroupAlgorithmResult`: feasible pods of a successful group go to their binding
    /// cycle; every other pod fails with its own status or the group's, and returns to the entity.
    fn submit_pod_group(
        &mut self,
        ix: usize,
        profile: usize,
        members: &[Member],
        trials: Vec<Trial>,
        outcome: &GroupOutcome,
        post: Option<&GroupPostFilter>,
    ) {
        let now = self.now();
        let mut back = Vec::new();
        for (m, trial) in members.iter().zip(trials) {
            let uid = m.uid;
            self.counters.attempts += 1;
            let attempts = self.rec(uid).attempts;
            if attempts > 1 {
                self.counters.retries += 1;
            }
            let failure = match (outcome, &trial) {
                (GroupOutcome::Error(e), _) => {
                    self.counters.errors += 1;
                    let e = e.clone();
                    self.trace(now, uid, "attempt", |_| serde_json::json!({"result": "error", "reasons": [e]}));
                    back.push(*m);
                    continue;
                }
                (GroupOutcome::Success, &Trial::Feasible(node_sym)) => {
                    match self.commit_group_pod(ix, profile, uid, node_sym, now) {
                        Ok(()) => continue,
                        Err(f) => f,
                    }
                }
                (_, Trial::Unschedulable { rejectors, .. }) => {
                    (member_failure(outcome, &trial).unwrap_or_default(), self.queue_ids(profile, rejectors))
                }
                (_, trial) => {
                    // A member that fit in a group that did not: upstream's rejection without
                    // preemption clears its nomination (`clearNominatedNode`).
                    if matches!(trial, Trial::Feasible(_)) && !post.is_some_and(GroupPostFilter::is_success) {
                        self.clear_member_nomination(uid);
                    }
                    (member_failure_after(outcome, trial, post).unwrap_or_default(), Vec::new())
                }
            };
            let (message, _rejectors) = failure;
            self.counters.unschedulable += 1;
            let record_reason = attempts <= 1 || !self.rec(uid).unschedulable;
            self.rec_mut(uid).unschedulable = true;
            if record_reason {
                *self.unschedulable_reasons.entry(message.clone()).or_default() += 1;
            }
            self.trace(now, uid, "attempt", |_| serde_json::json!({"result": "unschedulable", "message": message}));
            back.push(*m);
        }
        let mut g = std::mem::take(&mut self.groups.list[ix].queued);
        // Pods that arrived during the cycle (upstream's pendingPodGroupPods) stay behind them.
        back.append(&mut g);
        self.groups.list[ix].queued = back;
        self.apply_permit_decisions(profile);
    }

    /// Forgets member `uid`'s nomination (the snapshot's and its pod's `nominatedNodeName`).
    fn clear_member_nomination(&mut self, uid: PodUid) {
        if self.rec(uid).info.nominated_node.is_some() {
            self.snap.clear_nomination(uid);
            let info = Arc::new(PodInfo { nominated_node: None, ..(*self.rec(uid).info).clone() });
            self.rec_mut(uid).info = info;
        }
    }

    /// A feasible pod of a successful group: assumed, reserved and permitted for real
    /// (`prepareForBindingCycle`), then bound; GangScheduling's Permit holds it until the quorum.
    /// `Err((message, rejectors))` when Reserve or Permit rejected it.
    fn commit_group_pod(
        &mut self,
        ix: usize,
        profile: usize,
        uid: PodUid,
        node_sym: Sym,
        now: u64,
    ) -> Result<(), (String, Vec<u8>)> {
        let info = self.rec(uid).info.clone();
        let node = self.snap.place_pod(info.clone(), node_sym).expect("the trial's node exists");
        self.snap.clear_nomination(uid);
        let r = self.cache.assume(uid, node_sym.0);
        self.note_cache(r);
        let fw = self.frameworks[profile].clone();
        let cx = CycleCx { snap: &self.snap, pod: &info };
        let st = fw.run_reserve(cx, &mut self.engine.state, node);
        let permit = if st.is_success() {
            fw.run_permit(cx, &mut self.engine.state, node, &mut self.waiting[profile])
        } else {
            PermitOutcome::Reject(st)
        };
        let mut wait = match permit {
            PermitOutcome::Allow => None,
            PermitOutcome::Wait(t) => Some(t),
            PermitOutcome::Reject(st) => {
                fw.run_unreserve(CycleCx { snap: &self.snap, pod: &info }, &mut self.engine.state, node);
                self.snap.unplace_pod(uid);
                let r = self.cache.forget(uid);
                self.note_cache(r);
                let rejector = fw.plugins.iter().position(|p| p.name() == st.plugin);
                let ids = self.queue_ids(profile, rejector.as_slice());
                return Err((format!("0/1 nodes are available: {}.", st.reasons.join(", ")), ids));
            }
        };
        // GangScheduling's Permit: this pod counts as scheduled from here.
        self.rec_mut(uid).state = PodState::Assumed(node_sym);
        let scheduled = self.group_scheduled(ix);
        if gangscheduling::permit(self.groups.list[ix].min_count, scheduled) {
            for other in self.groups.list[ix].members.clone() {
                self.waiting[profile].allow(other, gangscheduling::NAME);
            }
        } else if wait.is_none() {
            self.waiting[profile].add(uid, vec![(gangscheduling::NAME, gangscheduling::PERMIT_TIMEOUT)]);
            wait = Some(gangscheduling::PERMIT_TIMEOUT);
        }
        self.rec_mut(uid).state = PodState::Queued;
        let attempts = self.rec(uid).attempts;
        self.start_binding(uid, profile, node_sym, wait, attempts, now);
        Ok(())
    }

    /// `AddAttemptedPodGroupIfNeeded`: the entity, with the pods that did not schedule, goes back
    /// to activeQ after a success and to backoffQ (activeQ once its backoff is over) otherwise.
    fn requeue_pod_group(&mut self, ix: usize, qp: &mut QueuedPod<()>, outcome: &GroupOutcome) {
        let now = self.now();
        self.queue.done(qp.uid);
        self.groups.list[ix].in_flight = false;
        self.groups.list[ix].in_queue = false;
        self.groups.list[ix].queued.retain(|m| self.pods[(m.uid.0 - 1) as usize].state == PodState::Queued);
        if self.groups.list[ix].queued.is_empty() {
            return;
        }
        let mut entity = qp.clone();
        entity.gated = !self.group_pre_enqueue_passes(ix);
        entity.priority = self.groups.list[ix].priority;
        self.groups.list[ix].in_queue = true;
        match outcome {
            GroupOutcome::Success => {
                entity.unschedulable_count = 0;
                entity.consecutive_errors = 0;
                self.queue.add(entity, now);
            }
            GroupOutcome::Unschedulable(_) => {
                self.queue.add_attempted(entity, false, now);
            }
            GroupOutcome::Error(_) => {
                self.queue.add_attempted(entity, true, now);
            }
        }
    }

    /// A member's binding cycle failed (or its Permit wait ran out): it returns to its group.
    pub(super) fn requeue_group_member(&mut self, uid: PodUid) -> bool {
        let Some(key) = self.group_key_of(uid) else { return false };
        let now = self.now();
        self.enqueue_group_member(uid, key, now);
        true
    }
}

/// The trial of one pod-group cycle (`podGroupSchedulingDefaultAlgorithm` with the revert of
/// `runRootSchedulingAlgorithm`, no PodGroupPostFilter): each of `members`, in the order given
/// (`PodGroupMemberPodsOrderingFunc`'s), through Filter/Score on `snap`, placed and reserved as it
/// fits, with GangScheduling's PlacementFeasible after each pod (`min` pods needed, `scheduled`
/// already assumed or bound); every placement is reverted at the end. `on_cycle` sees each pod's
/// cycle result and its wall time. The driver and `verify`'s lockstep both run this.
pub(crate) fn group_trial(
    engine: &mut Engine,
    snap: &mut Snapshot,
    fw: &Framework,
    members: &[Arc<PodInfo>],
    min: u32,
    scheduled: usize,
    on_cycle: impl FnMut(&CycleResult, u64),
) -> (Vec<Trial>, GroupOutcome) {
    let (trials, end) = group_trial_in_placement(engine, snap, fw, members, min, scheduled, on_cycle);
    (trials, end.outcome())
}

/// How `podGroupSchedulingDefaultAlgorithm` ended in one placement (before
/// `runRootSchedulingAlgorithm` turns a success without a pod scheduled into a rejection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TrialEnd {
    Error(String),
    Success {
        any_scheduled: bool,
    },
    /// Its status's `Message()` and its `AsError()` text (`errPodGroupUnschedulable`'s when the
    /// status was made `WithError` with it, else the message).
    Rejected {
        message: String,
        as_error: String,
    },
}

impl TrialEnd {
    /// The group's outcome when this is the root's result (`runRootSchedulingAlgorithm`).
    pub(crate) fn outcome(self) -> GroupOutcome {
        match self {
            TrialEnd::Error(e) => GroupOutcome::Error(e),
            TrialEnd::Success { any_scheduled: true } => GroupOutcome::Success,
            TrialEnd::Success { any_scheduled: false } => {
                GroupOutcome::Unschedulable(POD_GROUP_UNSCHEDULABLE.to_string())
            }
            TrialEnd::Rejected { message, .. } => GroupOutcome::Unschedulable(message),
        }
    }
}

/// [`group_trial`] in the engine's current placement, with how the algorithm itself ended.
pub(crate) fn group_trial_in_placement(
    engine: &mut Engine,
    snap: &mut Snapshot,
    fw: &Framework,
    members: &[Arc<PodInfo>],
    min: u32,
    mut scheduled: usize,
    mut on_cycle: impl FnMut(&CycleResult, u64),
) -> (Vec<Trial>, TrialEnd) {
    let mut remaining = members.len();
    let mut trials: Vec<Trial> = members.iter().map(|_| Trial::NotEvaluated).collect();
    let mut placed: Vec<(PodUid, NodeIdx)> = Vec::new();
    let mut any_scheduled = false;
    let mut feasible = gangscheduling::placement_feasible(min, scheduled, remaining);
    let mut error = None;
    if !matches!(feasible, Feasible::Unschedulable(_)) {
        for (i, info) in members.iter().enumerate() {
            let t0 = Instant::now();
            let result = engine.schedule_one_nominated_batched(fw, snap, info, None);
            on_cycle(&result, t0.elapsed().as_nanos() as u64);
            let mut ok = false;
            match result {
                CycleResult::Scheduled { node, .. } => {
                    let node_sym = snap.nodes.name[node.ix()];
                    snap.place_pod(info.clone(), node_sym).expect("the chosen node exists");
                    let cx = CycleCx { snap, pod: info };
                    let st = fw.run_reserve(cx, &mut engine.state, node);
                    if st.is_success() {
                        placed.push((info.uid, node));
                        trials[i] = Trial::Feasible(node_sym);
                        ok = true;
                    } else {
                        fw.run_unreserve(cx, &mut engine.state, node);
                        snap.unplace_pod(info.uid);
                        if !st.code.is_rejection() {
                            error = Some(format!(
                                "failed to schedule other pod from a pod group: {}",
                                st.reasons.join(", ")
                            ));
                            break;
                        }
                        let rejector = fw.plugins.iter().position(|p| p.name() == st.plugin);
                        trials[i] = Trial::Unschedulable {
                            message: format!("0/1 nodes are available: {}.", st.reasons.join(", ")),
                            rejectors: rejector.map(|r| r as PluginId).into_iter().collect(),
                        };
                    }
                }
                CycleResult::Unschedulable(diag) => {
                    let cx = CycleCx { snap, pod: info };
                    let message = diag.message(fw, cx, &CycleState::new());
                    trials[i] = Trial::Unschedulable { message, rejectors: diag.rejector_plugins() };
                }
                CycleResult::Error(st) => {
                    error = Some(format!("failed to schedule other pod from a pod group: {}", st.reasons.join(", ")));
                    break;
                }
            }
            remaining -= 1;
            if ok {
                scheduled += 1;
            }
            feasible = gangscheduling::placement_feasible(min, scheduled, remaining);
            if matches!(feasible, Feasible::Unschedulable(_)) {
                break;
            }
            any_scheduled |= ok;
        }
    }
    // The trial's placements are reverted whatever the result (`runRootSchedulingAlgorithm`).
    for &(uid, node) in placed.iter().rev() {
        let info = members.iter().find(|m| m.uid == uid).expect("a placed member");
        fw.run_unreserve(CycleCx { snap, pod: info }, &mut engine.state, node);
        snap.unplace_pod(uid);
    }
    // The group's status message: a status made `WithError(errPodGroupUnschedulable)` puts that
    // error's text first (`Status.Reasons`); PlacementFeasible's own Unschedulable after a pod does not.
    let evaluated = trials.iter().any(|t| !matches!(t, Trial::NotEvaluated));
    let end = match (error, feasible) {
        (Some(e), _) => TrialEnd::Error(e),
        (None, Feasible::Success) => TrialEnd::Success { any_scheduled },
        (None, Feasible::Unschedulable(m)) if evaluated => TrialEnd::Rejected { message: m.clone(), as_error: m },
        (None, Feasible::Wait(m) | Feasible::Unschedulable(m)) => TrialEnd::Rejected {
            message: format!("{POD_GROUP_UNSCHEDULABLE}, {m}"),
            as_error: POD_GROUP_UNSCHEDULABLE.to_string(),
        },
    };
    (trials, end)
}

/// TopologyAwareWorkloadScheduling's view of a group for one cycle (`None` where it is passed:
/// the gate is off): its topology key (interned) and its scheduled pods.
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupTopology {
    pub key: Option<Sym>,
    pub scheduled: Vec<topologyaware::ScheduledPod>,
    /// `verify`'s lockstep only: a node upstream put a member on. Among placements tied at the
    /// best score (upstream draws between them), the one holding it is taken.
    pub prefer: Option<Sym>,
}

/// The pod-group algorithm of one cycle (`podGroupSchedulingAlgorithm`): with
/// TopologyAwareWorkloadScheduling off (`tas` None) the trial over the whole cluster
/// ([`group_trial`]); on, `podGroupSchedulingPlacementAlgorithm`: TopologyPlacementGenerator's
/// placements, the trial in each (the engine's placement set, every trial reverted), and of those
/// where the group fits the best by NodeResourcesFit's and PodGroupPodsCount's placement scores
/// (ties by the engine's seeded draws, as upstream's `rand.Int()`). When it fits nowhere, the
/// first placement's trials stand, behind `0/N placements are available`. The driver and
/// `verify`'s lockstep both run this.
#[allow(clippy::too_many_arguments)]
pub(crate) fn group_algorithm(
    engine: &mut Engine,
    snap: &mut Snapshot,
    fw: &Framework,
    members: &[Arc<PodInfo>],
    min: u32,
    scheduled: usize,
    tas: Option<&GroupTopology>,
    mut on_cycle: impl FnMut(&CycleResult, u64),
) -> (Vec<Trial>, GroupOutcome) {
    let Some(tas) = tas else {
        return group_trial(engine, snap, fw, members, min, scheduled, on_cycle);
    };
    let not_evaluated = || members.iter().map(|_| Trial::NotEvaluated).collect::<Vec<_>>();
    let generated = topologyaware::generate_placements(&snap.nodes, snap.scan_order(), tas.key, &tas.scheduled, |s| {
        snap.interner.resolve(s).to_string()
    });
    let placements: Vec<Option<Placement>> = match generated {
        Err(e) => return (not_evaluated(), GroupOutcome::Error(e)),
        Ok(topologyaware::Generated::Parent) => vec![None],
        Ok(topologyaware::Generated::Domains(ps)) if ps.is_empty() => {
            return (not_evaluated(), GroupOutcome::Unschedulable(topologyaware::NO_FEASIBLE_PLACEMENTS.to_string()))
        }
        Ok(topologyaware::Generated::Domains(ps)) => ps.into_iter().map(Some).collect(),
    };
    let mut first: Option<(Vec<Trial>, TrialEnd)> = None;
    // (placement, its trials, whether a pod was scheduled) where the group fits.
    let mut fits: Vec<(usize, Vec<Trial>, bool)> = Vec::new();
    let mut kept: Vec<Option<Placement>> = Vec::with_capacity(placements.len());
    let n = placements.len();
    for (i, placement) in placements.into_iter().enumerate() {
        // The placement moves into the engine and back (a placement of every node is kept as
        // `None`: the whole cluster, as the engine holds it).
        engine.set_placement(snap, placement);
        let (trials, end) = group_trial_in_placement(engine, snap, fw, members, min, scheduled, &mut on_cycle);
        kept.push(engine.take_placement());
        match end {
            TrialEnd::Error(e) => return (trials, GroupOutcome::Error(e)),
            TrialEnd::Success { any_scheduled } => {
                if first.is_none() {
                    first = Some((trials.clone(), TrialEnd::Success { any_scheduled }));
                }
                fits.push((i, trials, any_scheduled));
            }
            end => {
                if first.is_none() {
                    first = Some((trials, end));
                }
            }
        }
    }
    if fits.is_empty() {
        let (trials, end) = first.expect("at least one placement");
        let as_error = match end {
            TrialEnd::Rejected { as_error, .. } => as_error,
            _ => unreachable!("only rejections are left"),
        };
        let message =
            format!("{POD_GROUP_UNSCHEDULABLE}, 0/{n} placements are available, first placement status: {as_error}");
        return (trials, GroupOutcome::Unschedulable(message));
    }
    let best = if fits.len() == 1 {
        0
    } else {
        match score_placements(engine, snap, fw, members, scheduled, tas.prefer, &kept, &fits) {
            Ok(best) => best,
            Err(e) => return (not_evaluated(), GroupOutcome::Error(e)),
        }
    };
    let (_, trials, any_scheduled) = fits.swap_remove(best);
    (trials, TrialEnd::Success { any_scheduled }.outcome())
}

/// `findBestPlacement` over the placements where the group fits (`fits`: the placement's index
/// in `placements`, its trials): NodeResourcesFit's placement score (weight 1) when the profile
/// has the plugin, plus PodGroupPodsCount's (weight 1); the index into `fits` of the best, or
/// `RunPlacementScorePlugins`' error.
#[allow(clippy::too_many_arguments)]
fn score_placements(
    engine: &mut Engine,
    snap: &Snapshot,
    fw: &Framework,
    members: &[Arc<PodInfo>],
    scheduled: usize,
    prefer: Option<Sym>,
    placements: &[Option<Placement>],
    fits: &[(usize, Vec<Trial>, bool)],
) -> Result<usize, String> {
    let rows_of = |i: usize| placements[i].as_ref().map(|p| &p.rows[..]);
    let proposed: Vec<Vec<(i64, i64)>> = fits
        .iter()
        .map(|(_, trials, _)| {
            members
                .iter()
                .zip(trials)
                .filter(|(_, t)| matches!(t, Trial::Feasible(_)))
                .map(|(m, _)| (m.non_zero_cpu_milli, m.non_zero_memory))
                .collect()
        })
        .collect();
    let counts = topologyaware::pods_count_scores(scheduled, &proposed.iter().map(Vec::len).collect::<Vec<_>>())
        .map_err(|e| {
            format!(
                "running NormalizePlacementScore on PlacementScore plugins: plugin {:?} failed with: {e}",
                topologyaware::PODS_COUNT
            )
        })?;
    let with_fit = fw.plugins.iter().any(|p| p.name() == topologyaware::FIT);
    let whole = fits.iter().any(|(i, _, _)| rows_of(*i).is_none());
    let all: Vec<NodeIdx> = if whole { (0..snap.nodes.len() as u32).map(NodeIdx).collect() } else { Vec::new() };
    let totals: Vec<i64> = fits
        .iter()
        .zip(&proposed)
        .zip(&counts)
        .map(|(((i, _, _), proposed), count)| {
            let fit = if with_fit {
                topologyaware::fit_placement_score(&snap.nodes, rows_of(*i).unwrap_or(&all), proposed)
            } else {
                0
            };
            fit + count
        })
        .collect();
    let draws: Vec<u64> = totals.iter().map(|_| engine.draw()).collect();
    let best = topologyaware::best_placement(&totals, &draws);
    let preferred = prefer.and_then(|node| snap.nodes.idx_of(node)).and_then(|node| {
        (0..fits.len())
            .find(|&j| totals[j] == totals[best] && placements[fits[j].0].as_ref().is_none_or(|p| p.contains(node)))
    });
    Ok(preferred.unwrap_or(best))
}

/// Whether the profile runs a PodGroupPostFilter plugin: DefaultPreemption enabled at PostFilter
/// (the only in-tree one besides DynamicResources, which has nothing to do for pods without claims).
pub(crate) fn has_pod_group_post_filter(fw: &Framework) -> bool {
    fw.post_filter.iter().any(|&p| fw.plugin(p).name() == defaultpreemption::NAME)
}

/// PodGroupPostFilter for a group whose trial was unschedulable (`podGroupCycle`): DefaultPreemption's
/// group preemption, with [`group_algorithm`] as the pod-group scheduling function (a fresh trial
/// of the same `members` on the snapshot without the victims). The driver and `verify`'s lockstep both
/// run this; the snapshot is left as it was (the caller deletes the victims).
#[allow(clippy::too_many_arguments)]
pub(crate) fn group_post_filter(
    engine: &mut Engine,
    snap: &mut Snapshot,
    fw: &Framework,
    members: &[Arc<PodInfo>],
    min: u32,
    scheduled: usize,
    group_priority: i32,
    tas: Option<&GroupTopology>,
    mut on_cycle: impl FnMut(&CycleResult, u64),
) -> GroupPostFilter {
    let policy = members.first().map_or(PreemptionPolicy::PreemptLowerPriority, |m| m.preemption_policy);
    let preemptor = GroupPreemptor { priority: group_priority, policy, members };
    preempt_pod_group(fw, snap, &preemptor, |snap| {
        let (trials, outcome) = group_algorithm(engine, snap, fw, members, min, scheduled, tas, &mut on_cycle);
        let assignments = trials.iter().map(|t| if let Trial::Feasible(n) = t { Some(*n) } else { None }).collect();
        let status = match outcome {
            GroupOutcome::Success => GroupStatus::Success,
            GroupOutcome::Unschedulable(m) => GroupStatus::Unschedulable(m),
            GroupOutcome::Error(e) => GroupStatus::Error(e),
        };
        GroupSchedule { assignments, status }
    })
}

/// [`member_failure`] after PodGroupPostFilter ran (`post`): `applyPodGroupPostFilterResult`
/// appends its message to the group's status, which a member that fit carries. While the group
/// waits on preemption the member gets the group's status as it is; otherwise behind
/// `errPodGroupUnschedulable`'s text. Members the trial rejected or never reached keep theirs.
pub(crate) fn member_failure_after(
    outcome: &GroupOutcome,
    trial: &Trial,
    post: Option<&GroupPostFilter>,
) -> Option<String> {
    match (outcome, trial, post) {
        (GroupOutcome::Unschedulable(m), Trial::Feasible(_), Some(p)) if p.is_success() => {
            Some(format!("{m}, {}", p.message()))
        }
        (GroupOutcome::Unschedulable(m), Trial::Feasible(_), Some(p)) => {
            Some(format!("{POD_GROUP_UNSCHEDULABLE}, {m}, {}", p.message()))
        }
        _ => member_failure(outcome, trial),
    }
}

/// `errPodGroupUnschedulable`'s text.
pub(crate) const POD_GROUP_UNSCHEDULABLE: &str = "pod group is unschedulable";

/// The status message `submitPodGroupAlgorithmResult` gives a member of a group whose cycle ended
/// in `outcome`, or `None` when the member goes to its binding cycle. A member that fit while its
/// group did not gets the group's message behind `errPodGroupUnschedulable`'s; one the trial
/// rejected keeps its own; one the trial never reached gets a copy of the group's (taken before
/// PodGroupPostFilter; [`member_failure_after`] adds what PodGroupPostFilter appends).
pub(crate) fn member_failure(outcome: &GroupOutcome, trial: &Trial) -> Option<String> {
    match (outcome, trial) {
        (GroupOutcome::Error(e), _) => Some(e.clone()),
        (GroupOutcome::Success, Trial::Feasible(_)) => None,
        (_, Trial::Unschedulable { message, .. }) => Some(message.clone()),
        (GroupOutcome::Unschedulable(m), Trial::Feasible(_)) => Some(format!("{POD_GROUP_UNSCHEDULABLE}, {m}")),
        (GroupOutcome::Unschedulable(m), Trial::NotEvaluated) => Some(m.clone()),
        (GroupOutcome::Success, Trial::NotEvaluated) => Some(POD_GROUP_UNSCHEDULABLE.to_string()),
    }
}

/// `validatePodGroup`: every pod of a group, queued ones first, as (profile, its scheduler name, the
/// pod), has the first pod's scheduler, the group's priority and the first pod's preemption policy
/// (PodGroupPreemptionPolicy off). Returns the first pod's profile, or upstream's error message.
pub(crate) fn validate_group<'a>(
    group_priority: i32,
    pods: impl IntoIterator<Item = (usize, &'a str, &'a PodInfo)>,
) -> Result<usize, String> {
    let mut first: Option<(usize, &str, &PodInfo)> = None;
    for (profile, scheduler_name, pod) in pods {
        let (first_profile, first_name, first_pod) = *first.get_or_insert((profile, scheduler_name, pod));
        if profile != first_profile {
            return Err(format!(
                "all pods in a single pod group should have the same .spec.schedulerName set, got: {scheduler_name:?} and {first_name:?}"
            ));
        }
        if pod.priority != group_priority {
            return Err(format!(
                "all pods in a single pod group should have the same priority as the pod group's priority, got {} and {group_priority}",
                pod.priority
            ));
        }
        if pod.preemption_policy != first_pod.preemption_policy {
            let word = |p: crate::snapshot::PreemptionPolicy| match p {
                crate::snapshot::PreemptionPolicy::Never => "Never",
                crate::snapshot::PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
            };
            return Err(format!(
                "all pods in a single pod group should have the same preemption policy, got {} and {}",
                word(pod.preemption_policy),
                word(first_pod.preemption_policy)
            ));
        }
    }
    Ok(first.map_or(0, |f| f.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::testing::{MakeNode, MakePod};

    /// `submitPodGroupAlgorithmResult`'s message per (group outcome, member's trial), as the oracle
    /// gives them (`workloads/podgroup`, `schedperf verify`).
    #[test]
    fn member_failure_gives_each_member_upstreams_message() {
        let unsched = |m: &str| GroupOutcome::Unschedulable(m.to_string());
        let own =
            Trial::Unschedulable { message: "0/2 nodes are available: 2 Insufficient cpu.".into(), rejectors: vec![] };
        let cases: &[(GroupOutcome, Trial, Option<&str>)] = &[
            (GroupOutcome::Success, Trial::Feasible(Sym(1)), None),
            (GroupOutcome::Success, own.clone(), Some("0/2 nodes are available: 2 Insufficient cpu.")),
            (
                unsched("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"),
                Trial::Feasible(Sym(1)),
                Some("pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"),
            ),
            (
                unsched("minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"),
                Trial::NotEvaluated,
                Some("minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"),
            ),
            (unsched("x"), own, Some("0/2 nodes are available: 2 Insufficient cpu.")),
            (
                GroupOutcome::Error("failed to schedule other pod from a pod group: boom".into()),
                Trial::Feasible(Sym(1)),
                Some("failed to schedule other pod from a pod group: boom"),
            ),
        ];
        for (outcome, trial, want) in cases {
            assert_eq!(member_failure(outcome, trial).as_deref(), *want, "{outcome:?} {trial:?}");
        }
    }

    /// `applyPodGroupPostFilterResult` then `submitPodGroupAlgorithmResult`: PodGroupPostFilter's
    /// message lands on the members that fit, behind the group's, and behind
    /// `errPodGroupUnschedulable`'s as well when the group does not wait on a preemption.
    #[test]
    fn member_failure_after_appends_pod_group_post_filter_to_the_members_that_fit() {
        let m = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining";
        let outcome = GroupOutcome::Unschedulable(m.to_string());
        let own =
            Trial::Unschedulable { message: "0/2 nodes are available: 2 Insufficient cpu.".into(), rejectors: vec![] };
        let preempt = GroupPostFilter::Preempt { victims: vec![], num_pdb_violations: 0, nominations: vec![] };
        let none =
            GroupPostFilter::Rejected { message: defaultpreemption::podgroup::NO_VICTIMS.into(), unresolvable: true };
        let cases: Vec<(&Trial, Option<&GroupPostFilter>, Option<String>)> = vec![
            (
                &Trial::Feasible(Sym(1)),
                Some(&preempt),
                Some(format!("{m}, pod group preemption: found a placement for podgroup, preempting 0 victims")),
            ),
            (
                &Trial::Feasible(Sym(1)),
                Some(&none),
                Some(format!(
                    "pod group is unschedulable, {m}, pod group preemption: No preemption victims found for incoming preemptor"
                )),
            ),
            (&Trial::Feasible(Sym(1)), None, Some(format!("pod group is unschedulable, {m}"))),
            (&own, Some(&preempt), Some("0/2 nodes are available: 2 Insufficient cpu.".to_string())),
            (&Trial::NotEvaluated, Some(&preempt), Some(m.to_string())),
        ];
        for (trial, post, want) in cases {
            assert_eq!(member_failure_after(&outcome, trial, post), want, "{trial:?} {post:?}");
        }
    }

    /// The default profile's framework.
    fn default_framework(snap: &mut Snapshot) -> Framework {
        let config = crate::config::SchedulerConfig::defaults();
        let compiled = crate::plugins::compile_args(&config.profiles[0].args, &mut snap.interner, "test.yaml")
            .expect("args compile");
        crate::plugins::build_framework(&config.profiles[0], &compiled, &mut snap.interner).expect("builds")
    }

    const RACK: &str = "topology.kubernetes.io/rack";

    /// `podGroupSchedulingPlacementAlgorithm` (`TestPodGroupSchedulingPlacementAlgorithm`'s cases
    /// with the real plugins in place of its fakes): nodes as (name, rack, CPU millis), `pods`
    /// members of `cpu` millis each, minCount = all of them, the group's topology key (or none),
    /// its scheduled pods (pod, node) -> each member's node (or `-`), and the group's outcome.
    #[test]
    fn group_algorithm_tries_each_placement_and_keeps_the_best() {
        type Case<'a> = (
            &'a str,
            &'a [(&'a str, &'a str, i64)],
            usize,
            i64,
            Option<&'a str>,
            &'a [(&'a str, &'a str)],
            &'a [&'a str],
            &'a str,
        );
        let racks: &[(&str, &str, i64)] = &[("a1", "ra", 4000), ("b1", "rb", 4000), ("b2", "rb", 4000)];
        let cases: &[Case] = &[
            // MostAllocated over the placement: 2 of 4 CPUs (50) beats 2 of 8 (25).
            ("the fuller placement scores higher", racks, 2, 1000, Some(RACK), &[], &["a1", "a1"], "success"),
            // Three pods of 2 CPUs fit only in rb.
            ("a placement where the group does not fit is left out", racks, 3, 2000, Some(RACK), &[], &["b1", "b2", "b1"], "success"),
            (
                "no placement fits: the first placement's trials and status",
                racks,
                2,
                5000,
                Some(RACK),
                &[],
                &["-", "-"],
                "pod group is unschedulable, 0/2 placements are available, first placement status: minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
            ),
            ("no node carries the key", racks, 1, 100, Some("example.com/none"), &[], &["-"], "no feasible placements found"),
            ("no topology key: the whole cluster", racks, 3, 1000, None, &[], &["a1", "b1", "b2"], "success"),
            ("scheduled pods pin their domain", racks, 1, 1000, Some(RACK), &[("s", "b2")], &["b1"], "success"),
            (
                "scheduled pods in two domains: an error",
                racks,
                1,
                1000,
                Some(RACK),
                &[("s", "b2"), ("t", "a1")],
                &["-"],
                "error: cannot determine domain for already scheduled pods: more than 1 domain found for pod group: rb, ra",
            ),
        ];
        for (name, nodes, pods, cpu, key, scheduled, want_nodes, want) in cases {
            let mut snap = Snapshot::default();
            for (node, rack, millis) in *nodes {
                MakeNode::new(&mut snap, node).capacity(*millis, 32 << 30).label(RACK, rack).add();
            }
            let fw = default_framework(&mut snap);
            let members: Vec<Arc<PodInfo>> = (0..*pods)
                .map(|i| Arc::new(MakePod::new(&mut snap, &format!("p{i}")).req(*cpu, 1 << 30).build()))
                .collect();
            let tas = GroupTopology {
                prefer: None,
                key: key.map(|k| snap.interner.intern(k)),
                scheduled: scheduled
                    .iter()
                    .map(|(p, n)| topologyaware::ScheduledPod {
                        key: format!("default/{p}"),
                        node: snap.interner.intern(n),
                    })
                    .collect(),
            };
            let mut engine = Engine::new(7, 1, None);
            let (trials, outcome) = group_algorithm(
                &mut engine,
                &mut snap,
                &fw,
                &members,
                *pods as u32,
                scheduled.len(),
                Some(&tas),
                |_, _| {},
            );
            let got_nodes: Vec<String> = trials
                .iter()
                .map(|t| match t {
                    Trial::Feasible(n) => snap.interner.resolve(*n).to_string(),
                    _ => "-".to_string(),
                })
                .collect();
            let got = match &outcome {
                GroupOutcome::Success => "success".to_string(),
                GroupOutcome::Unschedulable(m) => m.clone(),
                GroupOutcome::Error(e) => format!("error: {e}"),
            };
            assert_eq!(
                (got_nodes.iter().map(String::as_str).collect::<Vec<_>>(), got.as_str()),
                (want_nodes.to_vec(), *want),
                "{name}"
            );
            assert_eq!(snap.pods.len(), 0, "{name}: every trial is reverted");
        }
    }

    /// A placement limits the filter pass: a member that fits in the cluster but not in the
    /// placement reports the placement's node count, and a nominated node outside it is not tried.
    #[test]
    fn the_engines_placement_limits_the_filter_pass() {
        let mut snap = Snapshot::default();
        let a = MakeNode::new(&mut snap, "a").capacity(1000, 1 << 30).label(RACK, "ra").add();
        let b = MakeNode::new(&mut snap, "b").capacity(1000, 1 << 30).label(RACK, "ra").add();
        MakeNode::new(&mut snap, "c").capacity(8000, 1 << 30).label(RACK, "rb").add();
        let fw = default_framework(&mut snap);
        let pod = MakePod::new(&mut snap, "p").req(4000, 0).build();
        let mut engine = Engine::new(1, 1, None);
        engine.set_placement(&snap, Some(Placement::new(Sym::NONE, vec![a, b])));
        let CycleResult::Unschedulable(diag) = engine.schedule_one(&fw, &snap, &pod) else { panic!("fits in c only") };
        assert_eq!(diag.num_all_nodes, 2);
        let c = snap.interner.intern("c");
        let nominated = PodInfo { nominated_node: Some(c), ..pod.clone() };
        assert!(matches!(engine.schedule_one(&fw, &snap, &nominated), CycleResult::Unschedulable(_)));
        engine.set_placement(&snap, None);
        assert!(matches!(engine.schedule_one(&fw, &snap, &pod), CycleResult::Scheduled { .. }));
    }
}
