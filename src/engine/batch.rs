//! OpportunisticBatching, as v1.37.2 runs it (`framework/runtime/batch.go`, called from
//! `schedule_one.go`; on by default): when consecutive pods of a profile have the same signature
//! ([`crate::framework::sign`]), the next pod is offered the best remaining node of the previous
//! full cycle's ranking (a *hint*) instead of a full filter and score pass.
//!
//! The protocol, per profile:
//! - A full cycle that picks a node from two or more scored nodes stores the rest of its ranking
//!   (upstream's `SortedScoredNodes`: a Go `container/heap` of the scored nodes, the chosen one
//!   popped) with the pod's signature and the time. One feasible node, or an unsignable pod,
//!   clears it.
//! - The next pod gets a hint only if its cycle immediately follows that one's (no other pod was
//!   popped in between), that cycle succeeded, the pod has no nominated node, its signature is the
//!   same, and the ranking is younger than 500 ms (on the run's clock: virtual time replays).
//! - The last chosen node is filtered again for the new pod. If it still fits (pods that do not
//!   fill a node), it is re-scored (PreScore over every ranked node plus it, Score for it alone)
//!   and every ranked node is normalized again from its stored raw scores, and the heap is rebuilt;
//!   if it no longer fits, the ranking is used as it is. The head of the heap is popped as the hint.
//! - The hinted node is filtered like a nominated node: if it fits, the pod goes there without a
//!   full pass (`nextStartNodeIndex` does not move); otherwise a full cycle runs and replaces the
//!   ranking.
//!
//! What differs from upstream: the rescore reuses the live cycle state instead of a clone (no
//! plugin's PreScore writes what a Filter reads), and while other pods are nominated (preemption
//! in flight) schedperf runs full cycles, recording their ranking, without offering a hint.

use std::collections::BTreeMap;

use crate::framework::{Code, CycleCx, CycleState, Framework, PluginId, Signature, MAX_NODE_SCORE};
use crate::snapshot::{NodeIdx, Sym};

/// `maxBatchAge`.
pub const MAX_BATCH_AGE_NANOS: u64 = 500_000_000;

/// One scored node, as upstream's `NodePluginScores`: the raw score of each Score plugin that ran,
/// and the total after normalization and weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scored {
    pub node: Sym,
    pub raw: Vec<(PluginId, i64)>,
    pub total: i64,
}

/// Upstream's `SortedScoredNodes`: Go's `container/heap` with `Less(i, j)` = higher `TotalScore`
/// (the `Randomizer` tie-break is 0 without extenders), so equal totals come out in heap order.
#[derive(Clone, Debug, Default)]
pub struct SortedScoredNodes {
    items: Vec<Scored>,
}

impl SortedScoredNodes {
    /// `heap.Init` over `items` in the order given.
    pub fn new(items: Vec<Scored>) -> Self {
        let mut h = SortedScoredNodes { items };
        let n = h.items.len();
        for i in (0..n / 2).rev() {
            h.down(i, n);
        }
        h
    }

    /// `heap.Pop`: the root, which is the best total (ties: heap position).
    pub fn pop(&mut self) -> Option<Scored> {
        let n = self.items.len().checked_sub(1)?;
        self.items.swap(0, n);
        self.down(0, n);
        self.items.pop()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `UnorderedList`: the heap's internal order.
    pub fn unordered(&self) -> &[Scored] {
        &self.items
    }

    /// The items in the heap's internal order, leaving the heap empty (no copy of each node's
    /// raw scores, as `unordered().to_vec()` would make).
    pub fn take_unordered(&mut self) -> Vec<Scored> {
        std::mem::take(&mut self.items)
    }

    fn less(&self, i: usize, j: usize) -> bool {
        self.items[i].total > self.items[j].total
    }

    /// Go's `heap.down`.
    fn down(&mut self, i0: usize, n: usize) {
        let mut i = i0;
        loop {
            let j1 = 2 * i + 1;
            if j1 >= n {
                break;
            }
            let mut j = j1;
            if j1 + 1 < n && self.less(j1 + 1, j1) {
                j = j1 + 1;
            }
            if !self.less(j, i) {
                break;
            }
            self.items.swap(i, j);
            i = j;
        }
    }
}

/// Why a ranking could not be used (upstream's `BatchCacheFlushed` reasons).
pub mod flush {
    pub const POD_FAILED: &str = "pod_failed";
    pub const POD_SKIPPED: &str = "pod_skipped";
    pub const POD_NOMINATED: &str = "pod_nominated";
    pub const NODE_MISSING: &str = "node_missing";
    pub const EMPTY_LIST: &str = "empty_list";
    pub const EXPIRED: &str = "expired";
    pub const POD_INCOMPATIBLE: &str = "pod_incompatible";
    pub const POD_NOT_BATCHABLE: &str = "pod_not_batchable";
    pub const PRESCORE_ERROR: &str = "prescore_error";
    pub const RESCORE_ERROR: &str = "rescore_error";
    pub const NORMALIZE_ERROR: &str = "normalize_error";
}

/// Counters of one profile's batching (upstream's `BatchAttemptStats` and `BatchCacheFlushed`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Cycles that asked for a hint and got none.
    pub no_hint: u64,
    /// Hints the pod was placed on.
    pub hint_used: u64,
    /// Hints that no longer fit (a full cycle ran).
    pub hint_not_used: u64,
    /// Rankings given up, by reason.
    pub flushed: BTreeMap<&'static str, u64>,
}

impl BatchStats {
    pub fn merge(&mut self, other: &BatchStats) {
        self.no_hint += other.no_hint;
        self.hint_used += other.hint_used;
        self.hint_not_used += other.hint_not_used;
        for (k, v) in &other.flushed {
            *self.flushed.entry(k).or_default() += v;
        }
    }
}

struct BatchState {
    signature: Signature,
    sorted: SortedScoredNodes,
    created_nanos: u64,
}

#[derive(Clone, Copy, Default)]
struct LastCycle {
    cycle: u64,
    chosen: Sym,
    succeeded: bool,
}

/// One profile's batching state (upstream's `OpportunisticBatch`).
#[derive(Default)]
pub struct OpportunisticBatch {
    state: Option<BatchState>,
    last: LastCycle,
    pub stats: BatchStats,
}

/// What a cycle hands the engine to batch with.
pub struct BatchCx<'a> {
    pub batch: &'a mut OpportunisticBatch,
    /// The pod's signature under the profile (`None`: it cannot be batched).
    pub signature: Option<Signature>,
    /// The scheduling cycle: how many pods the queue has popped, this one included.
    pub cycle: u64,
    /// The run's clock.
    pub now_nanos: u64,
}

impl OpportunisticBatch {
    fn flush(&mut self, reason: &'static str) {
        *self.stats.flushed.entry(reason).or_default() += 1;
    }

    fn state_empty(&self) -> bool {
        self.state.as_ref().is_none_or(|s| s.sorted.is_empty())
    }

    /// `GetNodeHint`: the node to try first, if the stored ranking applies to this pod.
    /// `skip` is the cycle's PreFilter skip set.
    #[allow(clippy::too_many_arguments)]
    pub fn node_hint(
        &mut self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        skip: &[bool],
        signature: Option<&Signature>,
        cycle: u64,
        now_nanos: u64,
    ) -> Option<Sym> {
        let hint = self.compatible(cx, signature, cycle, now_nanos)
            && self.refresh(fw, cx, state, skip)
            && !self.state_empty();
        let hint = hint.then(|| self.state.as_mut().and_then(|s| s.sorted.pop()).map(|s| s.node)).flatten();
        if hint.is_none() {
            self.stats.no_hint += 1;
        }
        hint
    }

    /// `batchStateCompatible`.
    fn compatible(&mut self, cx: CycleCx<'_>, signature: Option<&Signature>, cycle: u64, now_nanos: u64) -> bool {
        if self.state_empty() {
            return false;
        }
        if cycle != self.last.cycle + 1 {
            self.flush(flush::POD_SKIPPED);
            return false;
        }
        if !self.last.succeeded {
            self.flush(flush::POD_FAILED);
            return false;
        }
        if cx.pod.nominated_node.is_some() {
            self.flush(flush::POD_NOMINATED);
            return false;
        }
        let state = self.state.as_ref().expect("not empty");
        if signature != Some(&state.signature) {
            self.flush(flush::POD_INCOMPATIBLE);
            return false;
        }
        if now_nanos > state.created_nanos.saturating_add(MAX_BATCH_AGE_NANOS) {
            self.flush(flush::EXPIRED);
            return false;
        }
        true
    }

    /// `refreshHintCandidates`: the last chosen node, if it still fits, is re-scored and competes
    /// again. Returns false when the ranking cannot be used.
    fn refresh(&mut self, fw: &Framework, cx: CycleCx<'_>, state: &mut CycleState, skip: &[bool]) -> bool {
        let Some(last) = cx.snap.nodes.idx_of(self.last.chosen) else {
            self.flush(flush::NODE_MISSING);
            return false;
        };
        if crate::framework::runtime::filter_node(fw, cx, state, skip, last).is_some() {
            // Rejected: the ranking stands as it is.
            return true;
        }
        match self.rescore(fw, cx, state, last) {
            Ok(()) => true,
            Err(reason) => {
                self.flush(reason);
                false
            }
        }
    }

    /// `rescoreHintedNode`.
    fn rescore(
        &mut self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        last: NodeIdx,
    ) -> Result<(), &'static str> {
        let batch = self.state.as_mut().expect("a ranking to refresh");
        let cached = batch.sorted.unordered();
        let mut nodes = Vec::with_capacity(cached.len() + 1);
        for s in cached {
            nodes.push(cx.snap.nodes.idx_of(s.node).ok_or(flush::NODE_MISSING)?);
        }
        nodes.push(last);
        let mut skipped = vec![false; fw.plugins.len()];
        for &pid in &fw.pre_score {
            match fw.plugin(pid).pre_score(cx, state, &nodes).code {
                Code::Success => {}
                Code::Skip => skipped[pid] = true,
                _ => return Err(flush::PRESCORE_ERROR),
            }
        }
        let state: &CycleState = state;
        let active: Vec<(PluginId, i64)> = fw.score.iter().copied().filter(|(p, _)| !skipped[*p]).collect();
        let mut fresh = Vec::with_capacity(active.len());
        for &(pid, _) in &active {
            let plugin = fw.plugin(pid);
            if plugin.score_state_missing().is_some() && !fw.pre_score.contains(&pid) {
                return Err(flush::RESCORE_ERROR);
            }
            let mut out = [0i64];
            plugin.score(cx, state, &[last], &mut out).map_err(|_| flush::RESCORE_ERROR)?;
            fresh.push((pid, out[0]));
        }
        // The ranking's own items (moved, not copied); on a normalize error they go back as they
        // were, totals included (a ranking used as it stands pops by them).
        let mut all = batch.sorted.take_unordered();
        let totals: Vec<i64> = all.iter().map(|s| s.total).collect();
        all.push(Scored { node: self.last.chosen, raw: fresh, total: 0 });
        if let Err(reason) = normalize_totals(fw, cx, state, &active, &nodes, &mut all) {
            all.pop();
            for (s, t) in all.iter_mut().zip(totals) {
                s.total = t;
            }
            batch.sorted.items = all;
            return Err(reason);
        }
        batch.sorted = SortedScoredNodes::new(all);
        Ok(())
    }

    /// `StoreScheduleResults`, after a cycle chose `chosen`: `others` is the rest of a full
    /// cycle's ranking (`None` when only one node was feasible or the hint was taken).
    pub fn store(
        &mut self,
        signature: Option<Signature>,
        hinted: Option<Sym>,
        chosen: Sym,
        others: Option<SortedScoredNodes>,
        cycle: u64,
        now_nanos: u64,
    ) {
        self.last = LastCycle { cycle, chosen, succeeded: true };
        if hinted == Some(chosen) {
            self.stats.hint_used += 1;
            return;
        }
        if hinted.is_some() {
            self.stats.hint_not_used += 1;
        }
        match (signature, others) {
            (Some(signature), Some(sorted)) if !sorted.is_empty() => {
                self.state = Some(BatchState { signature, sorted, created_nanos: now_nanos });
            }
            (_, others) => {
                let empty = others.as_ref().is_none_or(|s| s.is_empty());
                self.flush(if empty { flush::EMPTY_LIST } else { flush::POD_NOT_BATCHABLE });
                self.state = None;
            }
        }
    }
}

impl OpportunisticBatch {
    /// `StoreScheduleResults` for a pod that could not be signed, after a full cycle that scored
    /// two or more nodes: nothing to keep.
    pub fn store_unsigned(&mut self, hinted: Option<Sym>, chosen: Sym, cycle: u64) {
        self.last = LastCycle { cycle, chosen, succeeded: true };
        if hinted.is_some() && hinted != Some(chosen) {
            self.stats.hint_not_used += 1;
        }
        self.flush(flush::POD_NOT_BATCHABLE);
        self.state = None;
    }
}

/// Normalizes every node's raw scores of the `active` plugins (a node without a raw score for
/// one scores 0 there) and sets the weighted totals, as upstream's `NormalizeScores`.
fn normalize_totals(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    active: &[(PluginId, i64)],
    nodes: &[NodeIdx],
    all: &mut [Scored],
) -> Result<(), &'static str> {
    for s in all.iter_mut() {
        s.total = 0;
    }
    let mut scores = vec![0i64; all.len()];
    for &(pid, weight) in active {
        for (out, s) in scores.iter_mut().zip(all.iter()) {
            *out = s.raw.iter().find(|(p, _)| *p == pid).map_or(0, |(_, v)| *v);
        }
        fw.plugin(pid).normalize(cx, state, nodes, &mut scores);
        if scores.iter().any(|s| !(0..=MAX_NODE_SCORE).contains(s)) {
            return Err(flush::NORMALIZE_ERROR);
        }
        for (s, v) in all.iter_mut().zip(&scores) {
            s.total += v * weight;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(totals: &[i64]) -> Vec<Scored> {
        totals.iter().enumerate().map(|(i, &t)| Scored { node: Sym(i as u32), raw: Vec::new(), total: t }).collect()
    }

    /// A plain reference for Go's heap: Init then Pop until empty yields totals in descending
    /// order, and the first pop is `select_host`'s tournament root.
    #[test]
    fn heap_pops_in_descending_order_and_its_root_is_select_host() {
        let cases: &[&[i64]] = &[&[1], &[3, 1, 2], &[5, 5, 5, 5], &[0, 9, 9, 3, 9, 1, 0], &[2, 2, 1, 2, 3, 3]];
        for totals in cases {
            let mut h = SortedScoredNodes::new(scored(totals));
            let first = h.clone().pop().unwrap().node.0 as usize;
            assert_eq!(first, super::super::cycle::select_host(&mut Vec::new(), totals), "{totals:?}");
            let mut got = Vec::new();
            while let Some(s) = h.pop() {
                got.push(s.total);
            }
            let mut want = totals.to_vec();
            want.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(got, want, "{totals:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn heap_root_matches_select_host(totals in proptest::collection::vec(0i64..4, 1..100)) {
            let mut h = SortedScoredNodes::new(scored(&totals));
            let root = h.pop().unwrap().node.0 as usize;
            proptest::prop_assert_eq!(root, super::super::cycle::select_host(&mut Vec::new(), &totals));
        }
    }

    /// Equal totals pop in Go's order: `[a=5, b=5, c=5]` pops a, then c (moved to the root by
    /// the swap), then b.
    #[test]
    fn ties_pop_in_gos_heap_order() {
        let mut h = SortedScoredNodes::new(scored(&[5, 5, 5]));
        let order: Vec<u32> = std::iter::from_fn(|| h.pop()).map(|s| s.node.0).collect();
        assert_eq!(order, vec![0, 2, 1]);
    }

    use crate::engine::{CycleResult, Engine};
    use crate::framework::sign::sign_pod;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::{PodInfo, Snapshot};

    /// upstream's batching config: PodTopologySpread without default constraints, so pods sign.
    const NO_TOPOLOGY: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: []
";

    fn framework(snap: &mut Snapshot, yaml: Option<&str>) -> Framework {
        let config = match yaml {
            Some(y) => crate::config::SchedulerConfig::parse(y, "test.yaml").expect("a valid config"),
            None => crate::config::SchedulerConfig::defaults(),
        };
        let compiled = crate::plugins::compile_args(&config.profiles[0].args, &mut snap.interner, "test.yaml")
            .expect("args compile");
        crate::plugins::build_framework(&config.profiles[0], &compiled, &mut snap.interner).expect("builds")
    }

    /// Schedules `pods` in order (cycles 1, 2, ...; `gap` skips a cycle before the pod at that
    /// index), placing each; returns (node, evaluated nodes) per pod and the batch's counters.
    fn run(
        snap: &mut Snapshot,
        fw: &Framework,
        pods: &[PodInfo],
        now: &[u64],
        gap: Option<usize>,
    ) -> (Vec<(String, usize)>, BatchStats) {
        let mut engine = Engine::new(1, 1, None);
        let mut batch = OpportunisticBatch::default();
        let mut cycle = 0;
        let mut out = Vec::new();
        for (i, pod) in pods.iter().enumerate() {
            cycle += 1 + u64::from(gap == Some(i));
            let signature = sign_pod(fw, pod, &fw.scheduler_name);
            let cx = BatchCx { batch: &mut batch, signature, cycle, now_nanos: now.get(i).copied().unwrap_or(0) };
            match engine.schedule_one_batched(fw, snap, pod, Some(cx)) {
                CycleResult::Scheduled { node, evaluated_nodes, .. } => {
                    let name = snap.node_name(node).to_string();
                    let sym = snap.nodes.name[node.ix()];
                    snap.place_pod(std::sync::Arc::new(pod.clone()), sym).expect("places");
                    out.push((name, evaluated_nodes));
                }
                r => panic!("pod {i} not scheduled: {r:?}"),
            }
        }
        (out, batch.stats)
    }

    fn nodes(snap: &mut Snapshot, n: usize, cpu: i64) {
        for i in 0..n {
            MakeNode::new(snap, &format!("node-{i}")).capacity(cpu, 1 << 34).pods(110).add();
        }
    }

    fn port_pods(snap: &mut Snapshot, n: usize) -> Vec<PodInfo> {
        (0..n)
            .map(|i| MakePod::new(snap, &format!("p{i}")).req(100, 1 << 20).host_port("TCP", "", 80).build())
            .collect()
    }

    /// HostPortConflict (upstream's best case): after one full cycle, each next pod takes the
    /// previous ranking's next node (one node evaluated), and every pod lands on its own node.
    #[test]
    fn one_pod_per_node_pods_take_the_hint() {
        let mut snap = Snapshot::new();
        nodes(&mut snap, 6, 4000);
        let fw = framework(&mut snap, Some(NO_TOPOLOGY));
        let pods = port_pods(&mut snap, 6);
        let (placed, stats) = run(&mut snap, &fw, &pods, &[], None);
        let evaluated: Vec<usize> = placed.iter().map(|p| p.1).collect();
        assert_eq!(evaluated, vec![6, 1, 1, 1, 1, 1]);
        let mut names: Vec<&str> = placed.iter().map(|p| p.0.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 6, "one pod per node: {placed:?}");
        assert_eq!((stats.hint_used, stats.no_hint), (5, 1));
    }

    /// Each condition of `batchStateCompatible` ends the batch with upstream's reason.
    #[test]
    fn the_ranking_is_dropped_with_upstreams_reason() {
        // (case, second pod differs, now of the second pod, cycle gap before it, reason)
        let cases: &[(&str, bool, u64, bool, &str)] = &[
            ("another signature", true, 0, false, flush::POD_INCOMPATIBLE),
            ("older than 500 ms", false, MAX_BATCH_AGE_NANOS + 1, false, flush::EXPIRED),
            ("another pod was popped in between", false, 0, true, flush::POD_SKIPPED),
        ];
        for &(case, differs, now, gap, reason) in cases {
            let mut snap = Snapshot::new();
            nodes(&mut snap, 4, 4000);
            let fw = framework(&mut snap, Some(NO_TOPOLOGY));
            let mut pods = port_pods(&mut snap, 2);
            if differs {
                pods[1] = MakePod::new(&mut snap, "other").req(200, 1 << 20).host_port("TCP", "", 80).build();
            }
            let (placed, stats) = run(&mut snap, &fw, &pods, &[0, now], gap.then_some(1));
            assert_eq!(placed[1].1, 4, "{case}: a full cycle");
            assert_eq!(stats.hint_used, 0, "{case}");
            assert_eq!(stats.flushed.get(reason), Some(&1), "{case}: {:?}", stats.flushed);
        }
        // Exactly 500 ms old is still young (`time.Now().After(created + maxBatchAge)`).
        let mut snap = Snapshot::new();
        nodes(&mut snap, 4, 4000);
        let fw = framework(&mut snap, Some(NO_TOPOLOGY));
        let pods = port_pods(&mut snap, 2);
        let (_, stats) = run(&mut snap, &fw, &pods, &[0, MAX_BATCH_AGE_NANOS], None);
        assert_eq!(stats.hint_used, 1);
    }

    /// The default profile's PodTopologySpread has system default constraints: no pod signs, so
    /// no cycle is batched, as upstream.
    #[test]
    fn the_default_profile_never_batches() {
        let mut snap = Snapshot::new();
        nodes(&mut snap, 4, 4000);
        let fw = framework(&mut snap, None);
        assert!(!crate::framework::sign::profile_signs_pods(&fw));
        let pods = port_pods(&mut snap, 3);
        assert_eq!(sign_pod(&fw, &pods[0], &fw.scheduler_name), None);
        let (placed, stats) = run(&mut snap, &fw, &pods, &[], None);
        assert!(placed.iter().all(|p| p.1 == 4), "{placed:?}");
        assert_eq!(stats.hint_used, 0);
        assert_eq!(stats.flushed.get(flush::POD_NOT_BATCHABLE), Some(&3));
    }

    /// Pods with pod affinity or spread constraints of their own cannot be signed; labels count
    /// unless InterPodAffinity ignores existing pods' preferred terms.
    #[test]
    fn signatures_follow_upstreams_signers() {
        let mut snap = Snapshot::new();
        nodes(&mut snap, 1, 4000);
        let fw = framework(&mut snap, Some(NO_TOPOLOGY));
        let plain = MakePod::new(&mut snap, "a").req(100, 1).build();
        let same = MakePod::new(&mut snap, "b").req(100, 1).build();
        let labelled = MakePod::new(&mut snap, "c").req(100, 1).label("app", "x").build();
        let affinity = MakePod::new(&mut snap, "d").req(100, 1).pod_affinity("app", Some(&["x"]), "zone").build();
        let prio = MakePod::new(&mut snap, "e").req(100, 1).priority(100).build();
        let sig = |p: &PodInfo| sign_pod(&fw, p, &fw.scheduler_name);
        assert!(sig(&plain).is_some());
        assert_eq!(sig(&plain), sig(&same), "names do not count");
        assert_eq!(sig(&plain), sig(&prio), "priority is not signed");
        assert_ne!(sig(&plain), sig(&labelled), "labels count");
        assert_eq!(sig(&affinity), None);
        let ignoring = framework(
            &mut snap,
            Some(&format!(
                "{NO_TOPOLOGY}  - name: InterPodAffinity\n    args:\n      ignorePreferredTermsOfExistingPods: true\n"
            )),
        );
        let sig2 = |p: &PodInfo| sign_pod(&ignoring, p, &ignoring.scheduler_name);
        assert_eq!(sig2(&plain), sig2(&labelled), "labels do not count when existing pods' terms are ignored");
    }

    proptest::proptest! {
        /// With every node in the window (under 100 nodes) and per-node scores, a hint is always a
        /// node a full cycle would score best: the ranking is exact, not approximate.
        #[test]
        fn a_hint_is_a_best_node_of_a_full_cycle(
            cpus in proptest::collection::vec(1i64..8, 2..12),
            pod_cpu in 100i64..1500,
            count in 2usize..10,
        ) {
            let mut snap = Snapshot::new();
            for (i, c) in cpus.iter().enumerate() {
                MakeNode::new(&mut snap, &format!("node-{i}")).capacity(c * 1000, 1 << 34).pods(110).add();
            }
            let fw = framework(&mut snap, Some(NO_TOPOLOGY));
            let mut engine = Engine::new(1, 1, None);
            let mut batch = OpportunisticBatch::default();
            for i in 0..count {
                let pod = MakePod::new(&mut snap, &format!("p{i}")).req(pod_cpu, 1 << 20).build();
                let signature = sign_pod(&fw, &pod, &fw.scheduler_name);
                // The best total a full cycle finds, on a copy of the batch-free path.
                let full = Engine::new(1, 1, None);
                let best = {
                    let cx = CycleCx { snap: &snap, pod: &pod };
                    let mut state = CycleState::new();
                    let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("no PreFilter rejection");
                    let all: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
                    let feasible: Vec<NodeIdx> = all
                        .into_iter()
                        .filter(|&n| crate::framework::runtime::filter_node(&fw, cx, &state, &skip, n).is_none())
                        .collect();
                    if feasible.is_empty() {
                        break;
                    }
                    let table = full.score(&fw, cx, &mut state, &feasible, false).expect("scores");
                    feasible.iter().zip(&table.totals).map(|(n, t)| (*n, *t)).collect::<Vec<_>>()
                };
                let top = best.iter().map(|(_, t)| *t).max().expect("feasible nodes");
                let cx = BatchCx { batch: &mut batch, signature, cycle: i as u64 + 1, now_nanos: 0 };
                let CycleResult::Scheduled { node, .. } = engine.schedule_one_batched(&fw, &snap, &pod, Some(cx)) else {
                    panic!("a feasible node exists");
                };
                let got = best.iter().find(|(n, _)| *n == node).map(|(_, t)| *t);
                proptest::prop_assert_eq!(got, Some(top), "pod {} went to a node that is not a best one", i);
                let sym = snap.nodes.name[node.ix()];
                snap.place_pod(std::sync::Arc::new(pod), sym).expect("places");
            }
        }
    }
}
