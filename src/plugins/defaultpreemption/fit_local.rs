//! DefaultPreemption's dry run as NodeResourcesFit arithmetic in locals ([`LocalPlan`],
//! [`try_node_local`]).
//!
//! When the pod's only Filter that reads placed pods is NodeResourcesFit on the request columns
//! ([`super::OnColumns::fit_in_row`]), no PodDisruptionBudget exists and every pod involved is
//! plain, the verdicts of the other Filters on a node cannot change when pods leave or nominated
//! pods are added. Each is worked out once per node and PostFilter, or taken from the failing
//! cycle's diagnosis where it says so exactly (a node Fit rejected passed every Filter ordered
//! before Fit; those after Fit that run are still checked). Every try and reprieve is then Fit's
//! own check ([`noderesources::core_bits`]) on the row's numbers (allocatable - requested +
//! removed - added) in locals: no row is shifted, no generation bumped, and no pod collected but
//! a candidate's victims. The node's pod list ends as the plain run leaves it. The property test
//! `fit_local_matches_plain` holds it to [`super::try_node_plain`].

use crate::framework::runtime::filter_node;
use crate::framework::{CycleCx, CycleState, Framework, PluginId};
use crate::plugins::noderesources;
use crate::snapshot::nodes::CoreRequests;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot};

use super::{plain_on_columns, Candidate, NotCandidate, OnColumns, PreFiltered, Victim};

/// What a dry run in locals reads once per PostFilter.
pub(super) struct LocalPlan {
    /// NodeResourcesFit's id.
    fit: PluginId,
    /// Work out which Filter rejects a node that is not a candidate ([`OnColumns::reasons`]).
    reasons: bool,
    /// PreFilter's skip flags with every Filter skipped but the node-only ones ordered before Fit;
    /// `None` when none of them runs.
    skip_before: Option<Vec<bool>>,
    /// The same for the Filters ordered after Fit.
    skip_after: Option<Vec<bool>>,
    /// Every nomination counts for the pod ([`crate::snapshot::nominated::NominatedSums::all_count`]):
    /// a node's are read from its `nom_*` columns (the snapshot keeps them equal to the sums' row);
    /// otherwise they are walked per node.
    all_count: bool,
    /// The pod's own nomination (its node and requests), which does not count for it.
    own: Option<(crate::snapshot::Sym, CoreRequests)>,
    /// Fit's thresholds for the pod ([`noderesources::core_needs`]): a free amount below one
    /// rejects the node.
    needs: [i64; 4],
    /// Working buffers for a candidate's reprieves (the lower-priority pods as tried, and their
    /// positions in the pod list in the order the dry run leaves them), grown once per
    /// PostFilter rather than allocated per node.
    scratch: std::cell::RefCell<(Vec<Lower>, Vec<u32>)>,
}

/// A lower-priority pod as a candidate's reprieve loop reads it: its position in the node's pod
/// list, what `MoreImportantPod` compares, its requests in [`noderesources::core_needs`]'s
/// order (one pod slot, CPU, memory, ephemeral storage), and whether it ended a victim.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lower {
    k: u32,
    priority: i32,
    start_time_ms: i64,
    q: [i64; 4],
    victim: bool,
}

/// Skip flags that run only the Filters of `keep` (by position in `fw.filter`) that `skip` runs;
/// `None` when that is none of them.
fn only(fw: &Framework, skip: &[bool], keep: impl Fn(usize) -> bool) -> Option<Vec<bool>> {
    let mut out = vec![true; skip.len()];
    let mut any = false;
    for (k, &pid) in fw.filter.iter().enumerate() {
        if keep(k) && !skip[pid] {
            out[pid] = false;
            any = true;
        }
    }
    any.then_some(out)
}

impl LocalPlan {
    /// The plan for `pod`, or `None` (the dry run goes on as before): Fit must decide
    /// (`plan.fit_in_row`), PreFilter must have run once and passed without restricting the node
    /// names, and no PodDisruptionBudget may exist (then no victim violates one).
    pub(super) fn new(
        fw: &Framework,
        snap: &Snapshot,
        pod: &PodInfo,
        pre: Option<&PreFiltered>,
        plan: Option<OnColumns>,
    ) -> Option<LocalPlan> {
        let plan = plan?;
        let Some(Ok((_, skip, None))) = pre else { return None };
        if !plan.fit_in_row || !snap.cluster.pdbs.is_empty() {
            return None;
        }
        let at = fw.filter.iter().position(|&pid| !skip[pid] && fw.plugin(pid).name() == noderesources::FIT)?;
        let fit = fw.filter[at];
        let all_count = snap.nominated_sums().all_count(pod.priority).is_some();
        let own = snap.nomination_of(pod.uid).map(|(node, p)| {
            let mut sum = CoreRequests::default();
            sum.add(p);
            (node, sum)
        });
        Some(LocalPlan {
            fit,
            reasons: plan.reasons,
            skip_before: only(fw, skip, |k| k < at),
            skip_after: only(fw, skip, |k| k > at),
            all_count,
            own,
            needs: noderesources::core_needs(&pod.requests),
            scratch: Default::default(),
        })
    }

    /// The counted nominated pods on `node`, summed: from its `nom_*` columns (less the pod's own
    /// nomination), or walked. `None` when one of them is not plain or is placed already.
    #[inline]
    fn nominated(&self, snap: &Snapshot, pod: &PodInfo, node: NodeIdx) -> Option<CoreRequests> {
        let mut sum = CoreRequests::default();
        if self.all_count {
            let t = &snap.nodes;
            let i = node.ix();
            sum.cpu_milli = t.nom_cpu_milli[i];
            sum.memory = t.nom_memory[i];
            sum.ephemeral_storage = t.nom_ephemeral_storage[i];
            sum.pods = t.nom_pods[i];
            if let Some((own_node, own)) = &self.own {
                if *own_node == t.name[i] {
                    sum.sub_sum(own);
                }
            }
            return Some(sum);
        }
        let name = snap.nodes.name[node.ix()];
        if let Some(v) = snap.nominated.get(&name) {
            for p in v.iter().filter(|p| p.uid != pod.uid && p.priority >= pod.priority) {
                if !plain_on_columns(p) || snap.pods.contains_key(&p.uid) {
                    return None;
                }
                sum.add(p);
            }
        }
        Some(sum)
    }
}

/// Fit's free amounts on row `i` shifted by `delta`: pod slots, CPU, memory, ephemeral storage.
fn free_with(t: &crate::snapshot::NodeTable, i: usize, delta: &CoreRequests) -> [i64; 4] {
    [
        t.alloc_pods[i] - (t.pod_count[i] as i64 + delta.pods),
        t.alloc_cpu_milli[i] - (t.req_cpu_milli[i] + delta.cpu_milli),
        t.alloc_memory[i] - (t.req_memory[i] + delta.memory),
        t.alloc_ephemeral_storage[i] - (t.req_ephemeral_storage[i] + delta.ephemeral_storage),
    ]
}

/// A candidate found in locals as `pickOneNodeForPreemption` ranks it ([`super::rank`]), counted
/// in the reprieve loop: its victims are the last `victims` pods of the node's list once
/// [`reprieve_local`] returns (the list ends with the reprieved, then the victims, each in the
/// order tried), so they are read ([`tail_victims`]) only for the candidate PostFilter keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tally {
    pub node: NodeIdx,
    /// How many pods are evicted.
    pub victims: usize,
    /// The highest victim priority (`i32::MIN` without victims).
    pub top: i32,
    /// Each victim's priority + 2^31, summed ([`super::rank`]'s sum).
    pub priority_sum: i64,
    /// The earliest start among the victims of priority `top` (`i64::MIN` without victims).
    pub earliest_top_ms: i64,
}

impl Tally {
    /// [`super::rank`] of the candidate this tally stands for (no PDB violations: no budget
    /// exists under a [`LocalPlan`]).
    pub(super) fn rank(&self) -> super::Rank {
        (0, self.top, self.priority_sum, self.victims, std::cmp::Reverse(self.earliest_top_ms))
    }
}

/// The victims of `t` as the candidate reads them: the last `t.victims` pods of its node's list,
/// in order (what [`reprieve_local`] left there; valid until the list changes).
pub(super) fn tail_victims(snap: &Snapshot, t: &Tally) -> Vec<Victim> {
    let i = t.node.ix();
    let (pods, meta) = (&snap.nodes.pods[i], &snap.nodes.pod_meta[i]);
    let from = pods.len() - t.victims;
    pods[from..]
        .iter()
        .zip(&meta[from..])
        .map(|(&uid, m)| Victim {
            uid,
            priority: m.priority,
            start_time_ms: m.start_time_ms,
            start_time_known: m.start_time_known,
        })
        .collect()
}

/// [`super::try_node`] in locals under `lp`: [`reprieve_local`] with the victims read back.
pub(super) fn try_node_local(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    state: &CycleState,
    lp: &LocalPlan,
    fit_rejected: bool,
) -> Option<Result<Candidate, NotCandidate>> {
    let out = reprieve_local(fw, snap, pod, node, state, lp, fit_rejected)?;
    Some(out.map(|t| Candidate { node, victims: tail_victims(snap, &t), num_pdb_violations: 0 }))
}

/// The dry run on `node` in locals under `lp`, the candidate as a [`Tally`]. `fit_rejected` says
/// the failing cycle's diagnosis has Fit rejecting `node` (so every Filter ordered before Fit
/// passed there). `None` (nothing touched) when a lower-priority pod on the node, or a counted
/// nominated pod, is not plain or the nominated pod is placed: then the dry run goes on as before.
/// The node's pod list ends as the plain run leaves it.
pub(super) fn reprieve_local(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    state: &CycleState,
    lp: &LocalPlan,
    fit_rejected: bool,
) -> Option<Result<Tally, NotCandidate>> {
    let i = node.ix();
    let mut scratch = lp.scratch.borrow_mut();
    let (lowers, order) = &mut *scratch;
    lowers.clear();
    // A walk over the node's pods (as `lower_on_row`): the lower-priority pods' requests summed,
    // and whether a pod that stays follows one of them. They are collected (below) only when
    // the node is a candidate.
    let mut lower = [0i64; 4];
    let (mut count, mut interleaved) = (0usize, false);
    for m in &snap.nodes.pod_meta[i] {
        if m.priority < pod.priority {
            if !m.plain {
                return None;
            }
            let r = &m.requests;
            lower = [lower[0] + r.pods, lower[1] + r.cpu_milli, lower[2] + r.memory, lower[3] + r.ephemeral_storage];
            count += 1;
        } else {
            interleaved |= count != 0;
        }
    }
    if count == 0 {
        return Some(Err(NotCandidate::NoLowerPriorityPods));
    }
    // The row's change with the lower-priority pods gone and the nominated pods counted: the
    // stricter of `fits_with_nominated`'s two checks (Fit's verdict only grows with the requests;
    // the other Filters read only the node).
    let mut delta = lp.nominated(snap, pod, node)?;
    delta.pods -= lower[0];
    delta.cpu_milli -= lower[1];
    delta.memory -= lower[2];
    delta.ephemeral_storage -= lower[3];
    let r = &pod.requests;
    let t = &snap.nodes;
    let free = free_with(t, i, &delta);
    let rejects = noderesources::core_rejects(&free, &lp.needs);
    let node_only = |skip: &Option<Vec<bool>>| {
        skip.as_ref().and_then(|skip| filter_node(fw, CycleCx { snap: &*snap, pod }, state, skip, node))
    };
    let unfit = if rejects && !lp.reasons {
        Some(NotCandidate::Unfit)
    } else {
        let bits = noderesources::core_bits(free[0], free[1], free[2], free[3], r);
        let before = if fit_rejected {
            debug_assert!(node_only(&lp.skip_before).is_none(), "the diagnosis has Fit rejecting the node");
            None
        } else {
            node_only(&lp.skip_before)
        };
        let fit = (bits != 0).then(|| {
            let reject = noderesources::core_reject(
                bits,
                r,
                t.alloc_cpu_milli[i],
                t.alloc_memory[i],
                t.alloc_ephemeral_storage[i],
            );
            (lp.fit, reject)
        });
        before.or(fit).or_else(|| node_only(&lp.skip_after)).map(|(pid, reject)| NotCandidate::StillUnfit(pid, reject))
    };
    if let Some(why) = unfit {
        if interleaved {
            snap.nodes.partition_by_priority(node, pod.priority, true, []);
        }
        return Some(Err(why));
    }
    lowers.extend(snap.nodes.pod_meta[i].iter().enumerate().filter(|(_, m)| m.priority < pod.priority).map(
        |(k, m)| {
            let r = &m.requests;
            let q = [r.pods, r.cpu_milli, r.memory, r.ephemeral_storage];
            Lower { k: k as u32, priority: m.priority, start_time_ms: m.start_time_ms, q, victim: false }
        },
    ));
    // The lower-priority pods in `MoreImportantPod` order (a stable sort, as the plain run's over
    // the pods in list order); a list already in that order is left as it is.
    let more_important = |a: &Lower, b: &Lower| b.priority.cmp(&a.priority).then(a.start_time_ms.cmp(&b.start_time_ms));
    let sorted = lowers.windows(2).all(|w| more_important(&w[0], &w[1]) != std::cmp::Ordering::Greater);
    if !sorted {
        lowers.sort_by(more_important);
    }
    // Reprieve while Fit still passes with the nominated pods counted, each pod marked a victim
    // or not. The tally is counted as the victims come: tried in order, the first has the
    // highest priority.
    let needs = &lp.needs;
    let mut free = free;
    let mut victims = 0usize;
    let (mut top, mut priority_sum, mut earliest_top_ms) = (i32::MIN, 0i64, i64::MIN);
    let mut reprieved_after_victim = false;
    for l in lowers.iter_mut() {
        let q = &l.q;
        let with = [free[0] - q[0], free[1] - q[1], free[2] - q[2], free[3] - q[3]];
        l.victim = noderesources::core_rejects(&with, needs);
        if l.victim {
            if victims == 0 {
                (top, earliest_top_ms) = (l.priority, l.start_time_ms);
            } else if l.priority == top {
                earliest_top_ms = earliest_top_ms.min(l.start_time_ms);
            }
            priority_sum += l.priority as i64 + (i32::MAX as i64 + 1);
            victims += 1;
        } else {
            free = with;
            reprieved_after_victim |= victims != 0;
        }
    }
    let tally = Tally { node, victims, top, priority_sum, earliest_top_ms };
    // The list ends as the plain run leaves it: the pods that stay, the reprieved, the victims,
    // each in the order tried. When the lower-priority pods are already its tail in that order
    // (no pod that stays follows one, the sort moved none, no reprieve came after a victim),
    // nothing moves.
    if interleaved || !sorted || reprieved_after_victim {
        order.clear();
        order.extend(lowers.iter().filter(|l| !l.victim).map(|l| l.k));
        order.extend(lowers.iter().filter(|l| l.victim).map(|l| l.k));
        snap.nodes.partition_by_priority_to(node, pod.priority, order);
    }
    Some(Ok(tally))
}
