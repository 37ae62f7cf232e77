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
    /// Per node row, 1 + the position of its nominations' row in
    /// [`crate::snapshot::nominated::NominatedSums::rows`] (0: none), when every nomination counts
    /// for the pod ([`crate::snapshot::nominated::NominatedSums::all_count`]); empty when the
    /// nominations must be walked per node.
    nominated_row: Vec<u32>,
    /// The pod's own nomination (its node and requests), which does not count for it.
    own: Option<(crate::snapshot::Sym, CoreRequests)>,
    /// Working buffers for a candidate's reprieves (positions in the pod list: tried, then
    /// reprieved and victims), grown once per PostFilter rather than allocated per node.
    scratch: std::cell::RefCell<(Vec<u32>, Vec<u32>)>,
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
        let sums = snap.nominated_sums();
        let mut nominated_row = Vec::new();
        if let Some(rows) = sums.all_count(pod.priority) {
            nominated_row = vec![0u32; snap.nodes.len()];
            for (k, row) in rows.iter().enumerate() {
                if let Some(idx) = row.idx {
                    nominated_row[idx.ix()] = k as u32 + 1;
                }
            }
        }
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
            nominated_row,
            own,
            scratch: Default::default(),
        })
    }

    /// The counted nominated pods on `node`, summed: from the sums' row (less the pod's own
    /// nomination), or walked. `None` when one of them is not plain or is placed already.
    fn nominated(&self, snap: &Snapshot, pod: &PodInfo, node: NodeIdx) -> Option<CoreRequests> {
        let name = snap.nodes.name[node.ix()];
        let mut sum = CoreRequests::default();
        if !self.nominated_row.is_empty() {
            let k = self.nominated_row[node.ix()];
            if k > 0 {
                sum = snap.nominated_sums().rows()[k as usize - 1].sum;
                if let Some((own_node, own)) = &self.own {
                    if *own_node == name {
                        sum.sub_sum(own);
                    }
                }
            }
            return Some(sum);
        }
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

/// [`super::try_node`] in locals under `lp`. `fit_rejected` says the failing cycle's diagnosis
/// has Fit rejecting `node` (so every Filter ordered before Fit passed there). `None` (nothing
/// touched) when a lower-priority pod on the node, or a counted nominated pod, is not plain or
/// the nominated pod is placed: then the dry run goes on as before.
pub(super) fn try_node_local(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    state: &CycleState,
    lp: &LocalPlan,
    fit_rejected: bool,
) -> Option<Result<Candidate, NotCandidate>> {
    let i = node.ix();
    let super::LowerOnRow { sum: lower, count, interleaved } = super::lower_on_row(snap, node, pod.priority)?;
    if count == 0 {
        return Some(Err(NotCandidate::NoLowerPriorityPods));
    }
    // The row's change with the lower-priority pods gone and the nominated pods counted: the
    // stricter of `fits_with_nominated`'s two checks (Fit's verdict only grows with the requests;
    // the other Filters read only the node).
    let mut delta = lp.nominated(snap, pod, node)?;
    delta.sub_sum(&lower);
    let r = &pod.requests;
    let t = &snap.nodes;
    let [pods_free, cpu_free, memory_free, ephemeral_free] = free_with(t, i, &delta);
    let bits = noderesources::core_bits(pods_free, cpu_free, memory_free, ephemeral_free, r);
    let node_only = |skip: &Option<Vec<bool>>| {
        skip.as_ref().and_then(|skip| filter_node(fw, CycleCx { snap: &*snap, pod }, state, skip, node))
    };
    let unfit = if bits != 0 && !lp.reasons {
        Some(NotCandidate::Unfit)
    } else {
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
    let meta = &snap.nodes.pod_meta[i];
    let mut scratch = lp.scratch.borrow_mut();
    let (order, victims) = &mut *scratch;
    // The lower-priority pods' positions in `MoreImportantPod` order (a stable sort, as the plain
    // run's over the pods in list order).
    order.clear();
    victims.clear();
    order.extend((0..meta.len() as u32).filter(|&k| meta[k as usize].priority < pod.priority));
    order.sort_by(|&a, &b| {
        let (a, b) = (&meta[a as usize], &meta[b as usize]);
        b.priority.cmp(&a.priority).then(a.start_time_ms.cmp(&b.start_time_ms))
    });
    // Reprieve while Fit still passes with the nominated pods counted: the reprieved first (kept
    // in place at the front of `order`), then the victims, each in the order tried (the pod
    // list's new tail).
    let mut free = [pods_free, cpu_free, memory_free, ephemeral_free];
    let mut kept = 0;
    for j in 0..order.len() {
        let k = order[j];
        let m = &meta[k as usize].requests;
        let with = [free[0] - m.pods, free[1] - m.cpu_milli, free[2] - m.memory, free[3] - m.ephemeral_storage];
        if noderesources::core_bits(with[0], with[1], with[2], with[3], r) != 0 {
            victims.push(k);
        } else {
            free = with;
            order[kept] = k;
            kept += 1;
        }
    }
    // Tried in order, the victims are already sorted.
    let pods = &snap.nodes.pods[i];
    let victim_rows = victims
        .iter()
        .map(|&k| {
            let m = &meta[k as usize];
            Victim {
                uid: pods[k as usize],
                priority: m.priority,
                start_time_ms: m.start_time_ms,
                start_time_known: m.start_time_known,
            }
        })
        .collect();
    order.truncate(kept);
    order.extend_from_slice(victims);
    snap.nodes.partition_by_priority_to(node, pod.priority, order);
    Some(Ok(Candidate { node, victims: victim_rows, num_pdb_violations: 0 }))
}
