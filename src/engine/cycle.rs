//! One scheduling cycle: PreFilter, the sampled filter pass, PreScore/Score/NormalizeScore, and
//! host selection, as `schedule_one.go` runs them.
//!
//! Determinism: nodes are filtered in blocks in rotation order from `next_start_node_index`; blocks
//! may be evaluated in parallel, but results are merged in order and cut at the first feasible
//! node after the k-th (upstream's one-worker cancel point). So which nodes were evaluated, which were feasible, and which node is chosen do
//! not depend on the thread count. The only randomness (ties in selectHost) comes from a seeded RNG
//! consumed on the scheduling thread.

use std::sync::Arc;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::batch::{BatchCx, Scored, SortedScoredNodes};
use super::sampling::num_feasible_nodes_to_find;
use crate::framework::profile::{timed, Point};
pub use crate::framework::runtime::{
    filter_node, filter_nodes, filter_nodes_lazy, filter_nodes_passing, filter_nodes_with, nominated_for,
    BlockVerdicts, Diagnosis, Failures, FilterScratch, NodeFailure, PreFilterOutcome,
};
use crate::framework::{
    Code, CycleCx, CycleState, Framework, PluginId, PostFilterResult, Reject, Status, MAX_NODE_SCORE,
};
use crate::snapshot::nodes::CoreRequests;
use crate::snapshot::{bits, NodeIdx, Placement, PodInfo, Snapshot, Sym};

/// Nodes filtered per block. A block is the unit of parallel work and of the early stop.
pub const FILTER_BLOCK_NODES: usize = 128;
/// Below this many nodes to evaluate, the filter pass stays on the calling thread. Measured with
/// the `ScaleCrossover` workloads (every node evaluated, `--threads 1` against `2`, benches/README.md
/// "Issue 14: 1M nodes"): on this shared 2-core machine the second thread lost at 4,000 and 8,000
/// evaluated nodes (attempt p50 2x, throughput lower or equal) and won on throughput from 16,000-32,000.
pub const PARALLEL_MIN_FILTER_NODES: usize = 16_384;
/// Nodes filtered per wave of the parallel filter pass at least (split between the threads).
pub const PARALLEL_MIN_WAVE_NODES: usize = 4096;
/// Below this many feasible nodes, scoring stays on the calling thread (the same crossover).
pub const PARALLEL_MIN_SCORE_NODES: usize = 16_384;
/// Chunks of a parallel filter wave per thread. One per thread splits a wave evenly only when
/// both threads start together and run at the same speed; the calling thread starts at once, the
/// other wakes late and shares its core with the binder and the agent, and a chunk left over
/// when the calling thread is done runs on it. Several per thread let the other thread take
/// (steal) what it has time for, so both end together: the waste is at most one chunk's time.
/// Few, so the merge and the partial blocks at chunk edges stay small (at 1M nodes a wave of
/// 50,001 nodes is 8 chunks of ~6,250).
pub const FILTER_CHUNKS_PER_THREAD: usize = 4;
/// The filter pass evaluates only a filter plugin's candidate nodes ([`Plugin::filter_candidates`])
/// when they are fewer than `nodes / SPARSE_FILTER_DIVISOR`: the other nodes are rejected by that
/// plugin, so only their number matters while some node fits (it moves `nextStartNodeIndex` and
/// makes `EvaluatedNodes`). The candidates evaluated are those among the nodes the plain pass
/// evaluates (it stops at the same scan position), so the pass costs at most the plain one plus
/// the list's rotation (a copy), at any share; only a cycle where no node fits pays twice (the
/// candidates, then the plain pass for the diagnosis). 1: every list that leaves a node out.
/// Measured with `run --measure instructions` (benches/README.md "Issue 14: node inclusion
/// policy"): SchedulingWithNodeInclusionPolicy/5000Nodes (PodTopologySpread's candidates, 1,000
/// to 5,000 of 5,000 nodes) fell from 539k to 353k instructions per pod going from 8 to 1, with
/// the candidates' share 7/8 at 408k; SchedulingWithExtendedResource/5000pods_5000nodes
/// (NodeResourcesFit's, under 1/8) 4,301 at 8 and 4,316 at 1.
///
/// [`Plugin::filter_candidates`]: crate::framework::Plugin::filter_candidates
pub const SPARSE_FILTER_DIVISOR: usize = 1;

/// Whether an active Filter plugin (not in `skip`) rejects every node carrying a NoSchedule or
/// NoExecute taint the pod does not tolerate ([`Plugin::filter_rejects_untolerated_taints`]):
/// a plugin's candidates may then leave those nodes out.
///
/// [`Plugin::filter_rejects_untolerated_taints`]: crate::framework::Plugin::filter_rejects_untolerated_taints
fn untolerated_taints_rejected(fw: &Framework, skip: &[bool]) -> bool {
    fw.filter.iter().any(|&pid| !skip[pid] && fw.plugin(pid).filter_rejects_untolerated_taints())
}

/// What [`Engine::schedule_nominated_on_columns`] needs: the pod's PreFilter outcome.
struct NominatedColumnsPlan {
    state: CycleState,
    skip: Vec<bool>,
    names: Option<Vec<Sym>>,
    narrowing: Vec<PluginId>,
    adds: NominatedAdds,
}

/// What a cycle counting nominated pods on the columns adds to each row.
enum NominatedAdds {
    /// Every nomination counts ([`crate::snapshot::nominated::NominatedSums::all_count`]): the
    /// table's nominated columns ([`crate::snapshot::NodeTable::nom_cpu_milli`], ...), read by Fit
    /// while [`crate::snapshot::NodeTable::counts_nominated`] is on, less the pod's own
    /// nomination (its row and requests), which does not count for it. No row is shifted.
    Table { own: Option<(NodeIdx, CoreRequests)> },
    /// Per node with counted nominated pods, their requests summed (one entry per node, in the
    /// nomination map's order), from the plan's one walk of the nominations: shifted onto the
    /// request columns for the pass, then off.
    Walk(Vec<(CoreRequests, NodeIdx)>),
}

/// The pod's own nomination as [`NominatedAdds::Table`] leaves it out: its node's row (when the
/// node exists) and the nominated copy's requests.
fn own_nomination(snap: &Snapshot, pod: &PodInfo) -> Option<(NodeIdx, CoreRequests)> {
    let (node, p) = snap.nomination_of(pod.uid)?;
    let idx = snap.nodes.idx_of(node)?;
    let mut sum = CoreRequests::default();
    sum.add(p);
    Some((idx, sum))
}

/// Whether some row of `rows` holds a nominated pod other than the pod's own (`own`, from
/// [`own_nomination`]): whether [`NominatedAdds::Table`] adds anything.
fn table_counts_any(rows: &[crate::snapshot::nominated::NominatedRow], own: Option<(NodeIdx, CoreRequests)>) -> bool {
    rows.iter().any(|r| r.idx.is_some_and(|idx| r.sum.pods > own.filter(|(o, _)| *o == idx).map_or(0, |(_, s)| s.pods)))
}

/// The plan's per-node sums from the maintained ones ([`crate::snapshot::nominated::NominatedSums::all_count`]:
/// every nominated pod counts, is plain and is not placed), less the pod's own nomination (`own`:
/// its node and nominated copy), which does not count for it: what the walk sums, in row order.
#[cfg(test)]
fn nominated_adds_from_sums(
    rows: &[crate::snapshot::nominated::NominatedRow],
    own: Option<(Sym, &Arc<PodInfo>)>,
) -> Vec<(CoreRequests, NodeIdx)> {
    let mut own_sum = CoreRequests::default();
    if let Some((_, p)) = own {
        own_sum.add(p);
    }
    let own_node = own.map(|(n, _)| n);
    let mut adds = Vec::with_capacity(rows.len());
    for r in rows {
        let Some(idx) = r.idx else { continue };
        let mut sum = r.sum;
        if own_node == Some(r.node) {
            sum.sub_sum(&own_sum);
        }
        if sum.pods > 0 {
            adds.push((sum, idx));
        }
    }
    adds
}

/// Whether nominated pod `p` counts when filtering `pod` and is not placed already: what
/// [`nominated_for`] keeps and the plain path then places.
fn counts_as_nominated(snap: &Snapshot, pod: &PodInfo, p: &PodInfo) -> bool {
    p.uid != pod.uid && p.priority >= pod.priority && !snap.pods.contains_key(&p.uid)
}

/// The outcome of one cycle.
#[derive(Debug)]
pub enum CycleResult {
    Scheduled {
        node: NodeIdx,
        /// Nodes filtered (feasible + failed), as upstream's `EvaluatedNodes`.
        evaluated_nodes: usize,
        feasible_nodes: usize,
    },
    Unschedulable(Diagnosis),
    Error(Status),
}

/// Per-plugin scores of one cycle (for `explain`).
#[derive(Clone, Debug, Default)]
pub struct ScoreTable {
    /// (plugin, weight, normalized scores aligned with the feasible nodes).
    pub plugins: Vec<(PluginId, i64, Vec<i64>)>,
    /// (plugin, raw scores before NormalizeScore), for the plugins that scored.
    pub raw: Vec<(PluginId, Vec<i64>)>,
    pub totals: Vec<i64>,
    /// The index into `totals` host selection takes ([`select_host_fast`]), when the score pass
    /// found it on the way (the fused parallel pass, [`ScoreMemo::score_fused`]).
    ///
    /// [`ScoreMemo::score_fused`]: super::memo::ScoreMemo::score_fused
    pub best: Option<usize>,
}

thread_local! {
    /// The pool the calling thread works in as its thread 0 ([`home_pool`]), once built.
    static HOME_POOL: std::cell::RefCell<Option<Arc<rayon::ThreadPool>>> = const { std::cell::RefCell::new(None) };
}

/// A pool of `threads` threads for an engine used on the calling thread. The calling thread is
/// the pool's thread 0, so the cycle's parallel steps run inline on it (`install` needs no
/// hand-off to another thread and back, two futex round trips) and the other threads steal halves
/// of the work; a step the others are too slow to wake for runs on the calling thread alone. A
/// thread can join only one pool, for good (rayon leaks such a pool), so the first one built is
/// kept for every later engine of the thread with the same count; any other count, or a thread
/// that is already some pool's worker, gets a pool of its own threads.
fn home_pool(threads: usize) -> Arc<rayon::ThreadPool> {
    let separate =
        || Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool starts"));
    HOME_POOL.with(|home| {
        let mut home = home.borrow_mut();
        if let Some(pool) = home.as_ref() {
            return if pool.current_num_threads() == threads { pool.clone() } else { separate() };
        }
        match rayon::ThreadPoolBuilder::new().num_threads(threads).use_current_thread().build() {
            Ok(pool) => home.insert(Arc::new(pool)).clone(),
            Err(_) => separate(),
        }
    })
}

/// The scheduling-cycle engine: the rotating start index, the seeded RNG, the thread pool.
pub struct Engine {
    /// `nextStartNodeIndex`.
    pub next_start_node_index: usize,
    pub global_percentage_of_nodes_to_score: Option<i32>,
    rng: ChaCha8Rng,
    pool: Option<Arc<rayon::ThreadPool>>,
    pub state: CycleState,
    /// Scratch space of `select_host`, kept across cycles (no allocation once grown).
    heap: Vec<(i64, u32)>,
    /// Sampled per-plugin timings (off unless set with [`Engine::with_plugin_sampling`]).
    pub profiler: crate::framework::profile::Profiler,
    /// Scores kept per node row across cycles ([`Plugin::score_memo_key`]).
    memo: std::cell::RefCell<super::memo::ScoreMemo>,
    /// The filter pass's chunks (one per thread), kept across cycles.
    filter_chunks: std::cell::RefCell<Vec<FilterChunk>>,
    /// `score`'s buffers, kept across cycles: one plugin's scores, and the totals vector a
    /// [`ScoreTable`] hands back through [`Engine::recycle`] (no allocation or zeroing per cycle).
    score_buf: std::cell::RefCell<Vec<i64>>,
    spare_totals: std::cell::RefCell<Vec<i64>>,
    /// A filter plugin's candidate nodes ([`Engine::sparse_filter_pass`]), kept across cycles.
    candidates: std::cell::RefCell<Vec<NodeIdx>>,
    /// The placement a pod-group cycle is trying (TopologyAwareWorkloadScheduling's
    /// `AssumePlacement`): the filter pass scans only its rows, a nominated node outside it is not
    /// tried, and `nextStartNodeIndex` wraps at its size; `None` is the whole cluster.
    placement: Option<Placement>,
    /// The filter pass's output buffer, handed back by [`Engine::recycle_feasible`]: the chunks
    /// write their feasible nodes into it in place, and its length is kept (stale entries are
    /// overwritten before they are read), so a cycle neither allocates it nor zeroes it.
    spare_feasible: std::cell::RefCell<Vec<NodeIdx>>,
}

impl Engine {
    /// `threads` = 1 keeps every pass on the calling thread.
    pub fn new(seed: u64, threads: usize, global_percentage_of_nodes_to_score: Option<i32>) -> Self {
        let pool = (threads > 1).then(|| home_pool(threads));
        Engine {
            next_start_node_index: 0,
            global_percentage_of_nodes_to_score,
            rng: ChaCha8Rng::seed_from_u64(seed),
            pool,
            state: CycleState::new(),
            heap: Vec::new(),
            profiler: crate::framework::profile::Profiler::new(0),
            memo: Default::default(),
            filter_chunks: Default::default(),
            score_buf: Default::default(),
            spare_totals: Default::default(),
            candidates: Default::default(),
            spare_feasible: Default::default(),
            placement: None,
        }
    }

    /// Sets the placement the following cycles run in (`AssumePlacement`), or the whole cluster
    /// (`ForgetPlacement`). A placement of every node is the whole cluster, as upstream's.
    pub fn set_placement(&mut self, snap: &Snapshot, placement: Option<Placement>) {
        self.placement = placement.filter(|p| p.rows.len() != snap.nodes.len());
    }

    /// Takes the placement back (its buffers for the next one), leaving the whole cluster.
    pub fn take_placement(&mut self) -> Option<Placement> {
        self.placement.take()
    }

    /// `NumNodesInPlacement`.
    fn num_nodes(&self, snap: &Snapshot) -> usize {
        self.placement.as_ref().map_or(snap.nodes.len(), |p| p.rows.len())
    }

    /// Node `name`'s row when it is in the placement (`GetNodeInPlacement`).
    fn node_in_placement(&self, snap: &Snapshot, name: Sym) -> Option<NodeIdx> {
        snap.nodes.idx_of(name).filter(|i| self.placement.as_ref().is_none_or(|p| p.contains(*i)))
    }

    /// A draw from the engine's seeded RNG (upstream's `rand.Int()` where it breaks ties).
    pub fn draw(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Times the plugins of `percent` of cycles (upstream: 10).
    pub fn with_plugin_sampling(mut self, percent: u32) -> Self {
        self.profiler = crate::framework::profile::Profiler::new(percent);
        self
    }

    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.current_num_threads())
    }

    /// Runs the PreFilter plugins ([`Framework::run_pre_filter`]).
    pub fn run_pre_filter(
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
    ) -> Result<PreFilterOutcome, (PluginId, Status)> {
        fw.run_pre_filter(cx, state)
    }

    /// Schedules one pod: returns the chosen node, or why none fits. Does not change the snapshot.
    pub fn schedule_one(&mut self, fw: &Framework, snap: &Snapshot, pod: &PodInfo) -> CycleResult {
        self.schedule_one_batched(fw, snap, pod, None)
    }

    /// [`Engine::schedule_one`] with the profile's OpportunisticBatching state, when the gate is on.
    pub fn schedule_one_batched(
        &mut self,
        fw: &Framework,
        snap: &Snapshot,
        pod: &PodInfo,
        batch: Option<BatchCx<'_>>,
    ) -> CycleResult {
        let n_all = self.num_nodes(snap);
        let mut diag = Diagnosis { num_all_nodes: n_all, ..Default::default() };
        if n_all == 0 {
            return CycleResult::Unschedulable(diag);
        }
        let cx = CycleCx { snap, pod };
        let mut state = std::mem::take(&mut self.state);
        state.clear();
        let sampled = self.profiler.begin();
        let result = self.schedule_with_state(fw, cx, &mut state, &mut diag, batch);
        if sampled {
            self.profiler.end(fw);
        }
        self.state = state;
        result
    }

    fn schedule_with_state(
        &mut self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        diag: &mut Diagnosis,
        mut batch: Option<BatchCx<'_>>,
    ) -> CycleResult {
        let snap = cx.snap;
        let (skip, names, narrowing) = match Self::run_pre_filter(fw, cx, state) {
            Ok(v) => v,
            Err((pid, st)) => {
                if st.code == Code::Error {
                    return CycleResult::Error(st);
                }
                diag.pre_filter = Some((pid, st));
                return CycleResult::Unschedulable(std::mem::take(diag));
            }
        };
        diag.pre_filter_result_plugins = narrowing;
        let hint = batch
            .as_mut()
            .and_then(|b| b.batch.node_hint(fw, cx, state, &skip, b.signature.as_ref(), b.cycle, b.now_nanos));

        // A nominated node (or else the batch's hint) is tried alone first; when it fails, its
        // status stays in the diagnosis (upstream's NodeToStatus is shared with the full pass).
        let mut nominated_failure = None;
        if let Some(nom) = cx.pod.nominated_node.or(hint).and_then(|n| self.node_in_placement(snap, n)) {
            match filter_node(fw, cx, state, &skip, nom) {
                None => {
                    if let Some(b) = batch {
                        b.batch.store(b.signature, hint, snap.nodes.name[nom.ix()], None, b.cycle, b.now_nanos);
                    }
                    return CycleResult::Scheduled { node: nom, evaluated_nodes: 1, feasible_nodes: 1 };
                }
                Some((plugin, reject)) => nominated_failure = Some(NodeFailure { node: nom, plugin, reject }),
            }
        }

        let (feasible, failures, evaluated_nodes) =
            self.sampled_filter_pass(fw, cx, state, &skip, names, nominated_failure, diag, true);
        diag.failures = failures;

        if feasible.is_empty() {
            self.recycle_feasible(feasible);
            return CycleResult::Unschedulable(std::mem::take(diag));
        }
        let result = match self.choose(fw, cx, state, &feasible, batch, hint) {
            Ok(node) => CycleResult::Scheduled { node, evaluated_nodes, feasible_nodes: feasible.len() },
            Err(st) => CycleResult::Error(st),
        };
        self.recycle_feasible(feasible);
        result
    }

    /// The node a full cycle picks among `feasible` (one or more): the only one, or the best
    /// scored (`schedulePod`); the batch, if any, keeps the rest of the ranking
    /// (`StoreScheduleResults`).
    fn choose(
        &mut self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        feasible: &[NodeIdx],
        batch: Option<BatchCx<'_>>,
        hint: Option<Sym>,
    ) -> Result<NodeIdx, Status> {
        let snap = cx.snap;
        if let [only] = feasible {
            if let Some(b) = batch {
                b.batch.store(b.signature, hint, snap.nodes.name[only.ix()], None, b.cycle, b.now_nanos);
            }
            return Ok(*only);
        }
        let ranked = batch.as_ref().is_some_and(|b| b.signature.is_some());
        let table = self.score(fw, cx, state, feasible, ranked)?;
        let chosen = self.choose_scored(snap, feasible, batch, hint, ranked, &table);
        self.recycle(table);
        Ok(chosen)
    }

    /// Host selection from `table` (the scores of `feasible`), storing the batch's state.
    fn choose_scored(
        &self,
        snap: &Snapshot,
        feasible: &[NodeIdx],
        batch: Option<BatchCx<'_>>,
        hint: Option<Sym>,
        ranked: bool,
        table: &ScoreTable,
    ) -> NodeIdx {
        match batch {
            Some(b) if ranked => {
                let scored = feasible
                    .iter()
                    .enumerate()
                    .map(|(i, n)| Scored {
                        node: snap.nodes.name[n.ix()],
                        raw: table.raw.iter().map(|(pid, v)| (*pid, v[i])).collect(),
                        total: table.totals[i],
                    })
                    .collect();
                let mut sorted = SortedScoredNodes::new(scored);
                let best = sorted.pop().expect("two or more scored nodes").node;
                b.batch.store(b.signature, hint, best, Some(sorted), b.cycle, b.now_nanos);
                snap.nodes.idx_of(best).expect("a scored node exists")
            }
            b => {
                let best = table.best.unwrap_or_else(|| select_host_fast(self.pool.as_deref(), &table.totals));
                let chosen = feasible[best];
                if let Some(b) = b {
                    b.batch.store_unsigned(hint, snap.nodes.name[chosen.ix()], b.cycle);
                }
                chosen
            }
        }
    }

    /// Takes back the filter pass's feasible list for the next cycle's pass (its buffer).
    fn recycle_feasible(&self, feasible: Vec<NodeIdx>) {
        let mut spare = self.spare_feasible.borrow_mut();
        if feasible.capacity() > spare.capacity() {
            *spare = feasible;
        }
    }

    /// Takes back a [`ScoreTable`]'s totals buffer for the next cycle's [`Engine::score`].
    pub fn recycle(&self, table: ScoreTable) {
        let mut spare = self.spare_totals.borrow_mut();
        if table.totals.capacity() > spare.capacity() {
            *spare = table.totals;
        }
    }

    /// The filter pass of a cycle, as upstream's `findNodesThatPassFilters`: the nodes a
    /// PreFilterResult allows (`names`; the others are counted in `diag`), `numFeasibleNodesToFind`
    /// of them wanted (1 without score plugins), from the rotating start index over the scan order
    /// ([`Snapshot::scan_order`]). The index then moves past every node with a status of its own:
    /// the feasible and failed ones, plus a failed nominated node the pass did not reach (nodes
    /// outside a PreFilterResult have none: `(next + len(feasible) + NodeToStatus.Len()) % len(allNodes)`).
    /// Returns the feasible nodes, the failures and the number of nodes evaluated. With `sparse`,
    /// the pass may evaluate only a filter plugin's candidates ([`Engine::sparse_filter_pass`]):
    /// then, when some node fits, the failures list only the candidates that failed (the count
    /// includes every node); and the plain pass, unless a nominated node failed, lists only the
    /// failures before the first block with a feasible node ([`Engine::filter_pass`]). Either
    /// way the failures are all listed when no node fits (the diagnosis reads them).
    #[allow(clippy::too_many_arguments)]
    fn sampled_filter_pass(
        &mut self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &CycleState,
        skip: &[bool],
        names: Option<Vec<Sym>>,
        nominated_failure: Option<NodeFailure>,
        diag: &mut Diagnosis,
        sparse: bool,
    ) -> (Vec<NodeIdx>, Failures, usize) {
        let n_all = self.num_nodes(cx.snap);
        let named: Option<Vec<NodeIdx>> =
            names.map(|ns| ns.iter().filter_map(|n| self.node_in_placement(cx.snap, *n)).collect());
        if let Some(r) = &named {
            diag.pre_filter_excluded = n_all - r.len();
        }
        // A PreFilterResult's nodes, else the placement's, else every node in scan order.
        let restricted: Option<&[NodeIdx]> = named.as_deref().or(self.placement.as_ref().map(|p| &p.rows[..]));
        let n = restricted.map_or(n_all, |r| r.len());
        let k = if !fw.has_score_plugins() {
            1.min(n)
        } else {
            num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, self.global_percentage_of_nodes_to_score, n)
        };
        let start = if n == 0 { 0 } else { self.next_start_node_index % n };
        let pass = (sparse && restricted.is_none()).then(|| self.sparse_filter_pass(fw, cx, state, skip, n, start, k));
        // A failed nominated node is looked up among the listed failures below.
        let list = !sparse || nominated_failure.is_some();
        let (feasible, mut failures, unlisted) = match pass.flatten() {
            Some(v) => v,
            None => self.filter_pass(fw, cx, state, skip, restricted, n, start, k, list),
        };
        let mut processed = feasible.len() + failures.len() + unlisted;
        if let Some(f) = nominated_failure {
            // Unlisted failures (only the sparse pass's here) are the scan positions before
            // `processed` (row order, from `start`).
            let unlisted_there = unlisted > 0 && (f.node.ix() + n - start) % n < processed;
            if !unlisted_there && !failures.contains_node(f.node) {
                failures.push(f);
                processed += 1;
            }
        }
        self.next_start_node_index = (self.next_start_node_index + processed) % n_all;
        (feasible, failures, processed)
    }

    /// The filter pass over a filter plugin's candidate nodes ([`Plugin::filter_candidates`]),
    /// when the scan order is the row order and some plugin offers fewer than `n /`
    /// [`SPARSE_FILTER_DIVISOR`] of them: every other node is rejected by that plugin, so the
    /// first `k` feasible nodes and the scan position of the (k+1)-th (the nodes evaluated) are
    /// the plain pass's. Returns them with the candidates that failed before that position and
    /// the number of other nodes before it (failed, not listed); `None` when no plugin offers
    /// candidates, or when no node fits (the diagnosis then needs every node's status: the
    /// plain pass runs).
    ///
    /// [`Plugin::filter_candidates`]: crate::framework::Plugin::filter_candidates
    #[allow(clippy::too_many_arguments)]
    fn sparse_filter_pass(
        &self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &CycleState,
        skip: &[bool],
        n: usize,
        start: usize,
        k: usize,
    ) -> Option<(Vec<NodeIdx>, Failures, usize)> {
        if k == 0 || n == 0 || n != cx.snap.nodes.len() || !cx.snap.scan_order_is_row_order() {
            return None;
        }
        let skip = effective_skip(fw, cx, state, skip);
        let mut cands_guard = self.candidates.borrow_mut();
        let cands: &mut Vec<NodeIdx> = &mut cands_guard;
        let untolerated = untolerated_taints_rejected(fw, &skip);
        let offered =
            fw.filter.iter().any(|&pid| !skip[pid] && fw.plugin(pid).filter_candidates(cx, state, untolerated, cands));
        if !offered || cands.len().saturating_mul(SPARSE_FILTER_DIVISOR) >= n {
            return None;
        }
        // Scan positions run from `start`: the candidates at or after it, then those before it.
        let split = cands.partition_point(|c| c.ix() < start);
        cands.rotate_left(split);
        let pos = |node: NodeIdx| if node.ix() >= start { node.ix() - start } else { node.ix() + n - start };
        let mut chunks_guard = self.filter_chunks.borrow_mut();
        if chunks_guard.is_empty() {
            chunks_guard.push(FilterChunk::default());
        }
        let FilterChunk { verdicts, scratch, .. } = &mut chunks_guard[0];
        let mut feasible = Vec::with_capacity(k.min(cands.len()));
        let mut failures = Failures::new();
        let mut end = n;
        'blocks: for block in cands.chunks(FILTER_BLOCK_NODES) {
            let rejected = filter_nodes_with(fw, cx, state, &skip, block, verdicts, scratch);
            for (j, &node) in block.iter().enumerate() {
                match if rejected { verdicts[j] } else { None } {
                    None if feasible.len() == k => {
                        end = pos(node);
                        break 'blocks;
                    }
                    None => feasible.push(node),
                    Some((plugin, reject)) => failures.push_parts(node, plugin, reject),
                }
            }
        }
        if feasible.is_empty() {
            return None;
        }
        let unlisted = end - feasible.len() - failures.len();
        Some((feasible, failures, unlisted))
    }

    /// The filter pass: evaluates nodes in rotation order from `start` in blocks until `k` are
    /// feasible and one more passes (or every node is evaluated); returns the first `k` feasible
    /// nodes (in order) and the failures of the nodes evaluated before the one after the k-th.
    #[allow(clippy::too_many_arguments)]
    pub fn find_feasible(
        &self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &CycleState,
        skip: &[bool],
        restricted: Option<&[NodeIdx]>,
        n: usize,
        start: usize,
        k: usize,
    ) -> (Vec<NodeIdx>, Failures) {
        let (feasible, failures, unlisted) = self.filter_pass(fw, cx, state, skip, restricted, n, start, k, true);
        debug_assert_eq!(unlisted, 0, "a listing pass counts no failure apart");
        (feasible, failures)
    }

    /// [`Engine::find_feasible`], and, without `list`, on one thread: once a block has a node
    /// that passes, the failures of it and of later blocks are counted (the third value) rather
    /// than listed, since a pod that fits needs only their number (it moves
    /// `nextStartNodeIndex`); so the failures are all listed when no node fits, from the one pass.
    /// The blocks' survivors are taken whole ([`FilterScratch::survivors`]), not node by node.
    #[allow(clippy::too_many_arguments)]
    fn filter_pass(
        &self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &CycleState,
        skip: &[bool],
        restricted: Option<&[NodeIdx]>,
        n: usize,
        start: usize,
        k: usize,
        list: bool,
    ) -> (Vec<NodeIdx>, Failures, usize) {
        // The scan order; `None` when it is the row order (no indirection per node).
        let order = match restricted {
            Some(r) => Some(r),
            None => (!cx.snap.scan_order_is_row_order()).then(|| cx.snap.scan_order()),
        };
        let scan = |lo: usize, hi: usize, ids: &mut Vec<NodeIdx>| push_scan_range(order, n, start, lo, hi, ids);
        // Last cycle's buffer: its contents are scratch (the passes below write before they read).
        let mut feasible = std::mem::take(&mut *self.spare_feasible.borrow_mut());
        let mut failures = Failures::new();
        if k == 0 || n == 0 {
            feasible.clear();
            return (feasible, failures, 0);
        }
        let skip_owned = effective_skip(fw, cx, state, skip);
        let skip = &skip_owned[..];
        if !fw.filter.iter().any(|&p| !skip[p]) {
            feasible.clear();
            scan(0, k.min(n), &mut feasible);
            return (feasible, failures, 0);
        }
        let filter_block =
            |ids: &[NodeIdx], verdicts: Option<&mut Vec<Option<(PluginId, Reject)>>>, scratch: &mut FilterScratch| {
                match verdicts {
                    Some(verdicts) => filter_nodes_lazy(fw, cx, state, skip, ids, verdicts, scratch),
                    None => filter_nodes_passing(fw, cx, state, skip, ids, scratch),
                }
            };
        let eval_chunk = |lo: usize, hi: usize, want: usize, chunk: &mut FilterChunk, out: &mut [NodeIdx]| {
            eval_filter_chunk(lo, hi, want, true, chunk, out, &scan, filter_block)
        };
        let mut unlisted = 0;
        let mut chunks_guard = self.filter_chunks.borrow_mut();
        let chunks: &mut Vec<FilterChunk> = &mut chunks_guard;
        let parallel =
            self.pool.as_ref().filter(|_| k.min(n) >= PARALLEL_MIN_FILTER_NODES || n >= PARALLEL_MIN_FILTER_NODES * 4);
        match parallel {
            None => {
                // One chunk: the whole rotation, stopped at the first feasible node after the k-th.
                if chunks.is_empty() {
                    chunks.push(FilterChunk::default());
                }
                let chunk = &mut chunks[0];
                let room = (k + 1).min(n);
                if feasible.len() < room {
                    feasible.resize(room, NodeIdx(0));
                }
                eval_filter_chunk(0, n, k + 1, list, chunk, &mut feasible[..room], &scan, filter_block);
                unlisted = merge_serial_chunk(chunk, k, list, &mut feasible, &mut failures);
            }
            Some(pool) => parallel_filter_pass(
                pool,
                n,
                k,
                PARALLEL_MIN_WAVE_NODES,
                chunks,
                &eval_chunk,
                &mut feasible,
                &mut failures,
            ),
        }
        (feasible, failures, unlisted)
    }

    /// PreScore, Score and NormalizeScore for the feasible nodes; weighted totals.
    pub fn score(
        &self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        feasible: &[NodeIdx],
        keep_plugin_scores: bool,
    ) -> Result<ScoreTable, Status> {
        let mut skip: smallvec::SmallVec<[bool; 32]> = smallvec::smallvec![false; fw.plugins.len()];
        for &pid in &fw.pre_score {
            let st = timed(pid, Point::PreScore, || fw.plugin(pid).pre_score(cx, state, feasible));
            match st.code {
                Code::Success => {}
                Code::Skip => skip[pid] = true,
                _ => {
                    let name = fw.plugin(pid).name();
                    let reason = st.reasons.join(", ");
                    return Err(
                        Status::new(st.code, format!("running PreScore plugin {name:?}: {reason}")).with_plugin(name)
                    );
                }
            }
        }
        let state: &CycleState = state;
        let n = feasible.len();
        // The totals start unwritten: the first plugin accumulated assigns them (`Accumulate::Set`),
        // and they are zeroed only if no plugin is.
        let mut totals = std::mem::take(&mut *self.spare_totals.borrow_mut());
        if totals.len() < n {
            totals.resize(n, 0);
        }
        totals.truncate(n);
        let mut table = ScoreTable { plugins: Vec::new(), raw: Vec::new(), totals, best: None };
        // The memo's lookups and the totals go parallel from this many nodes on.
        let par_pool = self.pool.as_deref().filter(|_| n >= PARALLEL_MIN_SCORE_NODES);
        if let Some(pool) = par_pool.filter(|_| !keep_plugin_scores) {
            table.best = self.score_fused(fw, cx, state, &skip, feasible, &mut table.totals, pool);
            if table.best.is_some() {
                return Ok(table);
            }
        }
        let mut totals_written = false;
        // Score plugins write every entry of their `out` (the trait's contract): no clearing.
        let mut score_buf = self.score_buf.borrow_mut();
        if score_buf.len() < n {
            score_buf.resize(n, 0);
        }
        let scores = &mut score_buf[..n];
        for &(pid, weight) in &fw.score {
            if skip[pid] {
                continue;
            }
            let plugin = fw.plugin(pid);
            // A plugin that scores every node alike cannot move the argmax: left out unless the
            // caller keeps the per-plugin table (after the missing-state check, whose error stays).
            let uniform = !keep_plugin_scores && plugin.score_is_uniform(cx, state);
            let score_error = |reason: &str| {
                let msg = format!("running Score plugins: plugin {:?} failed with: {reason}", plugin.name());
                Status::new(Code::Error, msg).with_plugin(plugin.name())
            };
            if let Some(missing) = plugin.score_state_missing() {
                if !fw.pre_score.contains(&pid) {
                    return Err(score_error(missing));
                }
            }
            if uniform {
                continue;
            }
            // Score plugins write every entry of `out` (the trait's contract), so no clearing here.
            let run = |nodes: &[NodeIdx], out: &mut [i64]| -> Result<(), Status> {
                match self.pool.as_ref().filter(|_| nodes.len() >= PARALLEL_MIN_SCORE_NODES) {
                    Some(pool) => {
                        let chunk = nodes.len().div_ceil(pool.current_num_threads() * 4).max(FILTER_BLOCK_NODES);
                        pool.install(|| {
                            nodes
                                .par_chunks(chunk)
                                .zip(out.par_chunks_mut(chunk))
                                .map(|(nodes, out)| plugin.score(cx, state, nodes, out))
                                .collect::<Result<(), Status>>()
                        })
                    }
                    None => timed(pid, Point::Score, || plugin.score(cx, state, nodes, out)),
                }
            };
            let res = match plugin.score_memo_key(cx, state) {
                Some(key) => {
                    self.memo.borrow_mut().score(pid, key, &cx.snap.nodes.generation, feasible, scores, par_pool, run)
                }
                None => run(feasible, scores),
            };
            res.map_err(|st| score_error(&st.reasons.join(", ")))?;
            if keep_plugin_scores {
                table.raw.push((pid, scores.to_vec()));
            }
            timed(pid, Point::NormalizeScore, || plugin.normalize(cx, state, feasible, scores));
            let set = !totals_written;
            totals_written = true;
            // One pass that vectorizes: accumulate, and note any score out of [0, MAX_NODE_SCORE]
            // (a negative score is a huge unsigned one).
            let out_of_range = match par_pool {
                None => accumulate(&mut table.totals, scores, weight, set),
                Some(pool) => {
                    let chunk = n.div_ceil(pool.current_num_threads() * 2);
                    let scores: &[i64] = scores;
                    pool.install(|| {
                        table
                            .totals
                            .par_chunks_mut(chunk)
                            .zip(scores.par_chunks(chunk))
                            .map(|(t, s)| accumulate(t, s, weight, set))
                            .reduce(|| false, |a, b| a | b)
                    })
                }
            };
            if out_of_range {
                let bad = scores.iter().find(|s| !(0..=MAX_NODE_SCORE).contains(*s)).expect("an out-of-range score");
                return Err(Status::new(
                    Code::Error,
                    format!("applying score defaultWeights on Score plugins: plugin {:?} returns an invalid score {bad}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing", plugin.name()),
                ).with_plugin(plugin.name()));
            }
            if keep_plugin_scores {
                table.plugins.push((pid, weight, scores.to_vec()));
            }
        }
        if !totals_written {
            table.totals.fill(0);
        }
        Ok(table)
    }

    /// [`Engine::score`]'s one-step parallel pass, when every plugin that scores this pod (not
    /// skipped by PreScore, not uniform) is memoized ([`Plugin::score_memo_key`]: its
    /// NormalizeScore leaves scores unchanged): lookups, misses, weighted totals and host selection
    /// in one parallel step over chunks of `feasible` ([`ScoreMemo::score_fused`]), instead of a
    /// step per plugin for the lookups, one per plugin for the totals and one for host selection.
    /// Returns the selected index, or `None` when the plain pass must run (a plugin not memoized,
    /// a missing PreScore state, a plugin error or an out-of-range score, which it reports).
    ///
    /// [`Plugin::score_memo_key`]: crate::framework::Plugin::score_memo_key
    /// [`ScoreMemo::score_fused`]: super::memo::ScoreMemo::score_fused
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn score_fused(
        &self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &CycleState,
        skip: &[bool],
        feasible: &[NodeIdx],
        totals: &mut [i64],
        pool: &rayon::ThreadPool,
    ) -> Option<usize> {
        let mut plugins: smallvec::SmallVec<[(PluginId, crate::framework::ScoreMemoKey, i64); 4]> =
            smallvec::SmallVec::new();
        for &(pid, weight) in &fw.score {
            if skip[pid] {
                continue;
            }
            let plugin = fw.plugin(pid);
            let uniform = plugin.score_is_uniform(cx, state);
            if plugin.score_state_missing().is_some() && !fw.pre_score.contains(&pid) {
                return None;
            }
            if !uniform {
                plugins.push((pid, plugin.score_memo_key(cx, state)?, weight));
            }
        }
        if plugins.is_empty() {
            return None;
        }
        let score = |j: usize, nodes: &[NodeIdx], out: &mut [i64]| fw.plugin(plugins[j].0).score(cx, state, nodes, out);
        let best =
            self.memo.borrow_mut().score_fused(&plugins, &cx.snap.nodes.generation, feasible, totals, pool, &score);
        // NormalizeScore leaves a memoized plugin's scores as they are: its (empty) span is kept.
        for &(pid, _, _) in &plugins {
            timed(pid, Point::NormalizeScore, || ());
        }
        best
    }

    /// `schedule_one` counting nominated pods, as `RunFilterPluginsWithNominatedPods` does: pods
    /// nominated to a node with priority >= the pod's are placed while the filter pass runs (so
    /// filters see the resources, ports and topology counts they will take), then removed; every
    /// feasible node that had such pods must also pass without them, and scoring sees the cluster
    /// without them. Differs from upstream only in that a node's filters also see pods nominated
    /// to *other* nodes in topology counts. With no such pods this is `schedule_one`. Leaves the
    /// snapshot as it found it.
    pub fn schedule_one_nominated(&mut self, fw: &Framework, snap: &mut Snapshot, pod: &PodInfo) -> CycleResult {
        self.schedule_one_nominated_batched(fw, snap, pod, None)
    }

    /// [`Engine::schedule_one_nominated`] with the profile's OpportunisticBatching state. While
    /// nominated pods count, the cycle is a full one (no hint); the batch keeps its ranking.
    pub fn schedule_one_nominated_batched(
        &mut self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        batch: Option<BatchCx<'_>>,
    ) -> CycleResult {
        if snap.nominated.is_empty() {
            return self.schedule_one_batched(fw, snap, pod, batch);
        }
        if let Some(plan) = Self::nominated_columns_plan(fw, snap, pod) {
            return self.schedule_nominated_on_columns(fw, snap, pod, batch, plan);
        }
        self.schedule_nominated_placed(fw, snap, pod, batch)
    }

    /// [`Engine::schedule_one_nominated_batched`] with the nominated pods placed in the snapshot
    /// for the filter pass (the plain path, for any pod and profile), then removed.
    pub(crate) fn schedule_nominated_placed(
        &mut self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        batch: Option<BatchCx<'_>>,
    ) -> CycleResult {
        let mut added: Vec<(crate::agent::PodUid, Sym)> = Vec::new();
        let mut nodes: Vec<Sym> = snap.nominated.keys().copied().collect();
        nodes.sort_unstable();
        for node in nodes {
            for p in nominated_for(snap, pod, node) {
                if !snap.pods.contains_key(&p.uid) && snap.place_pod(p.clone(), node).is_ok() {
                    added.push((p.uid, node));
                }
            }
        }
        if added.is_empty() || snap.nodes.is_empty() {
            return self.schedule_one_batched(fw, snap, pod, batch);
        }
        let n_all = self.num_nodes(snap);
        let mut diag = Diagnosis { num_all_nodes: n_all, ..Default::default() };
        // The filter pass, with the nominated pods placed.
        let filtered = {
            let cx = CycleCx { snap: &*snap, pod };
            let mut state = CycleState::new();
            Self::run_pre_filter(fw, cx, &mut state).map(|(skip, names, narrowing)| {
                diag.pre_filter_result_plugins = narrowing;
                let nom = pod.nominated_node.and_then(|n| self.node_in_placement(cx.snap, n));
                let mut nominated_failure = None;
                if let Some(nom) = nom {
                    match filter_node(fw, cx, &state, &skip, nom) {
                        None => return (vec![nom], Failures::new()),
                        Some((plugin, reject)) => nominated_failure = Some(NodeFailure { node: nom, plugin, reject }),
                    }
                }
                // Every failure listed: a node that fits only with the nominated pods may not.
                let (feasible, failures, _) =
                    self.sampled_filter_pass(fw, cx, &state, &skip, names, nominated_failure, &mut diag, false);
                (feasible, failures)
            })
        };
        for (uid, _) in &added {
            snap.unplace_pod(*uid);
        }
        let (feasible, failures) = match filtered {
            Ok(v) => v,
            Err((pid, st)) => {
                if st.code == Code::Error {
                    return CycleResult::Error(st);
                }
                diag.pre_filter = Some((pid, st));
                return CycleResult::Unschedulable(diag);
            }
        };
        // The pass without them, for the feasible nodes that had some; then scoring.
        let cx = CycleCx { snap: &*snap, pod };
        let mut state = CycleState::new();
        let skip = match Self::run_pre_filter(fw, cx, &mut state) {
            Ok((skip, _, _)) => skip,
            Err((_, st)) => return CycleResult::Error(st),
        };
        let had_nominated = |node: NodeIdx| {
            let name = snap.nodes.name[node.ix()];
            added.iter().any(|(_, n)| *n == name)
        };
        self.recheck_and_choose(fw, cx, &mut state, &skip, feasible, failures, had_nominated, diag, batch)
    }

    /// Whether the nominated pods may count on the request columns alone, and then the pod's
    /// PreFilter outcome (run once). That holds when some nominated pod counts for `pod`, PreFilter
    /// does not read placed pods (so it is the same with the nominated pods placed or not), every
    /// Filter left reads placed pods only through the request columns and the pod count, and no
    /// counted nominated pod carries anything else placing it would change (host ports, scalar
    /// resources, terms). Then shifting the columns by the nominated pods is what placing them
    /// does for every verdict, and the snapshot is left as it was.
    fn nominated_columns_plan(fw: &Framework, snap: &Snapshot, pod: &PodInfo) -> Option<NominatedColumnsPlan> {
        let adds = match snap.nominated_sums().all_count(pod.priority) {
            Some(rows) => {
                let own = own_nomination(snap, pod);
                if !table_counts_any(rows, own) {
                    return None;
                }
                NominatedAdds::Table { own }
            }
            None => {
                let adds = Self::nominated_adds_walk(snap, pod)?;
                if adds.is_empty() {
                    return None;
                }
                NominatedAdds::Walk(adds)
            }
        };
        if snap.pre_filter_reads_pods(pod) {
            return None;
        }
        let mut state = CycleState::new();
        let (skip, names, narrowing) = Self::run_pre_filter(fw, CycleCx { snap, pod }, &mut state).ok()?;
        fw.filters_read_only_columns(pod, &skip).then_some(NominatedColumnsPlan { state, skip, names, narrowing, adds })
    }

    /// The plan's per-node sums by walking every nomination: `None` when a counted nominated pod
    /// is not plain on the columns.
    fn nominated_adds_walk(snap: &Snapshot, pod: &PodInfo) -> Option<Vec<(CoreRequests, NodeIdx)>> {
        // At most one entry per node with nominations: reserved at once (grown by doubling from
        // empty, the copies of reallocation cost more than the walk at 5,000 nominations).
        let mut adds: Vec<(CoreRequests, NodeIdx)> = Vec::with_capacity(snap.nominated.len());
        for (node, v) in &snap.nominated {
            let Some(idx) = snap.nodes.idx_of(*node) else { continue };
            let mut sum = CoreRequests::default();
            for p in v.iter().filter(|p| counts_as_nominated(snap, pod, p)) {
                if !p.plain_on_columns() {
                    return None;
                }
                sum.add(p);
            }
            if sum.pods > 0 {
                adds.push((sum, idx));
            }
        }
        Some(adds)
    }

    /// [`Engine::schedule_one_nominated_batched`] on the request columns ([`Self::nominated_columns_plan`]):
    /// the same passes, verdicts and choice, with the nominated pods shifted onto the columns
    /// instead of placed, PreFilter run once, and the pod's nominated node tried with only its
    /// own nominated pods counted (its verdict reads its row alone) before the others are.
    fn schedule_nominated_on_columns(
        &mut self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        batch: Option<BatchCx<'_>>,
        plan: NominatedColumnsPlan,
    ) -> CycleResult {
        let NominatedColumnsPlan { mut state, skip, names, narrowing, adds } = plan;
        let mut diag = Diagnosis { num_all_nodes: self.num_nodes(snap), ..Default::default() };
        diag.pre_filter_result_plugins = narrowing;
        if let NominatedAdds::Table { own } = adds {
            return self.schedule_nominated_on_table(fw, snap, pod, batch, (state, skip, names), own, diag);
        }
        let NominatedAdds::Walk(adds) = adds else { unreachable!("the table plan returned above") };
        let on_node = |snap: &Snapshot, node: Sym| -> Vec<Arc<PodInfo>> {
            snap.nominated
                .get(&node)
                .map_or_else(Vec::new, |v| v.iter().filter(|p| counts_as_nominated(snap, pod, p)).cloned().collect())
        };
        // The nominated node first, as upstream's `evaluateNominatedNode`.
        let mut nominated_failure = None;
        let mut feasible_on_nominated = None;
        if let Some(nom) = pod.nominated_node.and_then(|n| self.node_in_placement(snap, n)) {
            let adds = on_node(snap, snap.nodes.name[nom.ix()]);
            for p in &adds {
                snap.nodes.shift_core_requests(nom, p, 1);
            }
            let verdict = filter_node(fw, CycleCx { snap: &*snap, pod }, &state, &skip, nom);
            for p in &adds {
                snap.nodes.shift_core_requests(nom, p, -1);
            }
            match verdict {
                None => feasible_on_nominated = Some((vec![nom], !adds.is_empty())),
                Some((plugin, reject)) => nominated_failure = Some(NodeFailure { node: nom, plugin, reject }),
            }
        }
        // The nodes that had counted nominated pods, one bit per node row (set and test in O(1), no sort).
        let mut with_nominated = vec![0u64; bits::words_for(snap.nodes.len())];
        let (feasible, failures) = match feasible_on_nominated {
            Some((feasible, had)) => {
                if had {
                    bits::set(&mut with_nominated, feasible[0].ix(), true);
                }
                (feasible, Failures::new())
            }
            None => {
                // The filter pass, with every counted nominated pod on the columns (in any order:
                // the sums are the same), per node the counted pods' requests summed by the plan.
                for (sum, idx) in &adds {
                    snap.nodes.shift_core_sum(*idx, sum, 1);
                }
                let cx = CycleCx { snap: &*snap, pod };
                // Every failure listed: a node that fits only with the nominated pods may not.
                let (feasible, failures, _) =
                    self.sampled_filter_pass(fw, cx, &state, &skip, names, nominated_failure, &mut diag, false);
                for (sum, idx) in &adds {
                    snap.nodes.shift_core_sum(*idx, sum, -1);
                }
                for (_, idx) in &adds {
                    bits::set(&mut with_nominated, idx.ix(), true);
                }
                (feasible, failures)
            }
        };
        // The pass without them, for the feasible nodes that had some; then scoring.
        let cx = CycleCx { snap: &*snap, pod };
        let had_nominated = |node: NodeIdx| bits::get(&with_nominated, node.ix());
        self.recheck_and_choose(fw, cx, &mut state, &skip, feasible, failures, had_nominated, diag, batch)
    }

    /// [`Engine::schedule_nominated_on_columns`] when every nomination counts
    /// ([`NominatedAdds::Table`]): Fit reads the table's nominated columns
    /// ([`crate::snapshot::NodeTable::counts_nominated`] on) with the pod's own nomination (`own`)
    /// taken off its row, for the nominated node's check and for the filter pass; no request
    /// column is shifted and no row's generation moves. The nominated node counts exactly its own
    /// nominated pods either way, so it is checked with the same switch.
    #[allow(clippy::too_many_arguments)]
    fn schedule_nominated_on_table(
        &mut self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        batch: Option<BatchCx<'_>>,
        (mut state, skip, names): (CycleState, Vec<bool>, Option<Vec<Sym>>),
        own: Option<(NodeIdx, CoreRequests)>,
        mut diag: Diagnosis,
    ) -> CycleResult {
        if let Some((idx, sum)) = own {
            snap.nodes.shift_nominated(idx, &sum, -1);
        }
        snap.nodes.set_counts_nominated(true);
        // The nominated node first, as upstream's `evaluateNominatedNode`.
        let mut nominated_failure = None;
        let mut feasible = None;
        if let Some(nom) = pod.nominated_node.and_then(|n| self.node_in_placement(snap, n)) {
            match filter_node(fw, CycleCx { snap: &*snap, pod }, &state, &skip, nom) {
                None => feasible = Some((vec![nom], Failures::new())),
                Some((plugin, reject)) => nominated_failure = Some(NodeFailure { node: nom, plugin, reject }),
            }
        }
        let (feasible, failures) = feasible.unwrap_or_else(|| {
            let cx = CycleCx { snap: &*snap, pod };
            // Every failure listed: a node that fits only with the nominated pods may not.
            let (feasible, failures, _) =
                self.sampled_filter_pass(fw, cx, &state, &skip, names, nominated_failure, &mut diag, false);
            (feasible, failures)
        });
        snap.nodes.set_counts_nominated(false);
        if let Some((idx, sum)) = own {
            snap.nodes.shift_nominated(idx, &sum, 1);
        }
        // The pass without them, for the feasible nodes that had some (a row whose nominated pods
        // are not all the pod's own); then scoring.
        let cx = CycleCx { snap: &*snap, pod };
        let nom_pods = &snap.nodes.nom_pods;
        let had_nominated =
            |node: NodeIdx| nom_pods[node.ix()] > own.filter(|(o, _)| *o == node).map_or(0, |(_, s)| s.pods);
        self.recheck_and_choose(fw, cx, &mut state, &skip, feasible, failures, had_nominated, diag, batch)
    }

    /// The end of a cycle that counted nominated pods: every feasible node that had some
    /// (`had_nominated`) must also pass without them (in `cx`'s snapshot, which no longer holds
    /// them), then the survivors are scored and one is chosen.
    #[allow(clippy::too_many_arguments)]
    fn recheck_and_choose(
        &mut self,
        fw: &Framework,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        skip: &[bool],
        feasible: Vec<NodeIdx>,
        mut failures: Failures,
        had_nominated: impl Fn(NodeIdx) -> bool,
        mut diag: Diagnosis,
        batch: Option<BatchCx<'_>>,
    ) -> CycleResult {
        let mut kept = Vec::with_capacity(feasible.len());
        for node in feasible {
            if had_nominated(node) {
                if let Some((plugin, reject)) = filter_node(fw, cx, state, skip, node) {
                    failures.push_parts(node, plugin, reject);
                    continue;
                }
            }
            kept.push(node);
        }
        let evaluated = kept.len() + failures.len();
        diag.failures = failures;
        if kept.is_empty() {
            return CycleResult::Unschedulable(diag);
        }
        match self.choose(fw, cx, state, &kept, batch, None) {
            Ok(node) => CycleResult::Scheduled { node, evaluated_nodes: evaluated, feasible_nodes: kept.len() },
            Err(st) => CycleResult::Error(st),
        }
    }

    /// PostFilter for a pod the cycle found unschedulable: the profile's PostFilter plugins
    /// ([`Framework::run_post_filter`]) with the engine's seeded RNG. `Ok`: delete the victims
    /// and requeue the returned pod (its `nominated_node` set; the snapshot records the nomination).
    pub fn post_filter(
        &mut self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
    ) -> Result<PostFilterResult, Status> {
        fw.run_post_filter(snap, pod, diag, &mut self.rng)
    }

    /// Upstream's PostFilter message when PostFilter does not help (`FitError.Error()` over the
    /// dry run's node statuses, e.g. "0/3 nodes are available: 1 Preemption is not helpful for
    /// scheduling, 2 No preemption victims found for incoming pod."); `None` when the profile has
    /// no PostFilter plugin or one would succeed. Leaves the snapshot as it found it.
    pub fn preemption_failure_message(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
    ) -> Option<String> {
        fw.post_filter_message(snap, pod, diag)
    }

    /// Host selection for `explain`: `feasible` in scan order, `totals` aligned with it.
    pub fn select(&mut self, feasible: &[NodeIdx], totals: &[i64]) -> NodeIdx {
        feasible[select_host(&mut self.heap, totals)]
    }
}

/// `skip` plus the filters that can reject no node for this pod: they are left out of the pass
/// (same verdicts).
fn effective_skip(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    skip: &[bool],
) -> smallvec::SmallVec<[bool; 32]> {
    let mut skip_owned: smallvec::SmallVec<[bool; 32]> = skip.iter().copied().collect();
    for &pid in &fw.filter {
        if !skip_owned[pid] && fw.plugin(pid).filter_rejects_none(cx, state) {
            skip_owned[pid] = true;
        }
    }
    skip_owned
}

/// Adds `scores` times `weight` to `totals` (or, with `set`, writes them: the first plugin's), in
/// one pass that vectorizes; true when a score is out of [0, MAX_NODE_SCORE] (a negative score is a
/// huge unsigned one).
#[inline(always)]
pub(super) fn accumulate(totals: &mut [i64], scores: &[i64], weight: i64, set: bool) -> bool {
    let mut out_of_range = false;
    if set {
        for (t, &s) in totals.iter_mut().zip(scores) {
            out_of_range |= s as u64 > MAX_NODE_SCORE as u64;
            *t = s * weight;
        }
    } else {
        for (t, &s) in totals.iter_mut().zip(scores) {
            out_of_range |= s as u64 > MAX_NODE_SCORE as u64;
            *t += s * weight;
        }
    }
    out_of_range
}

/// One chunk of the filter pass (a run of consecutive scan positions): the number of its feasible
/// nodes (written in place, in scan order, at the start of the part of the pass's output the
/// chunk was given: `ChunkOut`), its listed failures in scan order, per feasible node how many
/// listed failures come before it (where the pass may cut the chunk), the number of failures
/// counted without being listed, and the working buffers of its blocks.
#[derive(Default)]
pub struct FilterChunk {
    feasible: usize,
    failures: Failures,
    /// Per feasible node (while failures are listed), the number of listed failures before it.
    failures_before: Vec<u32>,
    unlisted: usize,
    ids: Vec<NodeIdx>,
    verdicts: Vec<Option<(PluginId, Reject)>>,
    scratch: FilterScratch,
}

/// Appends the nodes at scan positions `lo..hi` (`lo <= hi <= n`) to `ids`: the rows (or the
/// entries of `order`, when the scan order is not the row order) from `start + lo`, wrapping at
/// `n`. At most two contiguous runs, copied whole (no wrap test or lookup per node).
fn push_scan_range(order: Option<&[NodeIdx]>, n: usize, start: usize, lo: usize, hi: usize, ids: &mut Vec<NodeIdx>) {
    let mut push = |from: usize, to: usize| match order {
        Some(o) => ids.extend_from_slice(&o[from..to]),
        None => ids.extend((from as u32..to as u32).map(NodeIdx)),
    };
    let (a, b) = (start + lo, start + hi);
    if b <= n {
        push(a, b);
    } else if a >= n {
        push(a - n, b - n);
    } else {
        push(a, n);
        push(0, b - n);
    }
}

/// A chunk's feasible nodes, written in place into its part `buf` of the pass's output (as many
/// entries as the chunk has scan positions, or as it may take: no chunk writes past its part), and
/// their number, kept in the chunk (`FilterChunk::feasible`). The pass merges the parts in order
/// by moving each chunk's nodes down to the end of the previous ones ([`merge_filter_chunk`]), a
/// no-op when every earlier chunk filled its part: no copy of the feasible list per cycle.
struct ChunkOut<'a> {
    buf: &'a mut [NodeIdx],
    len: &'a mut usize,
}

impl ChunkOut<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        *self.len
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        *self.len == 0
    }

    #[inline(always)]
    fn push(&mut self, node: NodeIdx) {
        self.buf[*self.len] = node;
        *self.len += 1;
    }

    #[inline(always)]
    fn extend_from_slice(&mut self, nodes: &[NodeIdx]) {
        self.buf[*self.len..*self.len + nodes.len()].copy_from_slice(nodes);
        *self.len += nodes.len();
    }
}

/// Filters scan positions `lo..hi` in blocks of [`FILTER_BLOCK_NODES`] (`scan` appends the nodes
/// at a range of positions, `filter_block` writes a block's verdicts when given the vector, or
/// returns false and none when it rejects no node; when it returns true, its survivors are in the
/// scratch space) into `chunk`, its feasible nodes into `out` (at least `min(hi - lo, want)` long),
/// stopping after the `want`-th feasible node. With `list`, every failure is listed; without, a
/// block that has a feasible node (or follows one) only counts its failures in `chunk.unlisted`
/// and takes its survivors whole, so the failures are all listed exactly when no node passed.
#[allow(clippy::too_many_arguments)]
fn eval_filter_chunk(
    lo: usize,
    hi: usize,
    want: usize,
    list: bool,
    chunk: &mut FilterChunk,
    out: &mut [NodeIdx],
    scan: &impl Fn(usize, usize, &mut Vec<NodeIdx>),
    filter_block: impl Fn(&[NodeIdx], Option<&mut Vec<Option<(PluginId, Reject)>>>, &mut FilterScratch) -> bool,
) {
    let FilterChunk { feasible: count, failures, failures_before, unlisted, ids, verdicts, scratch } = chunk;
    *count = 0;
    let feasible = &mut ChunkOut { buf: out, len: count };
    failures.clear();
    failures_before.clear();
    *unlisted = 0;
    let mut b_lo = lo;
    while b_lo < hi {
        let b_hi = (b_lo + FILTER_BLOCK_NODES).min(hi);
        ids.clear();
        scan(b_lo, b_hi, ids);
        // The verdicts are read only while they may have to be listed.
        let verdicts_wanted = list || feasible.is_empty();
        if !filter_block(ids, verdicts_wanted.then_some(&mut *verdicts), scratch) {
            // Every node of the block passed.
            let take = (want - feasible.len()).min(ids.len());
            feasible.extend_from_slice(&ids[..take]);
            failures_before.resize(failures_before.len() + take, failures.len() as u32);
            if feasible.len() >= want {
                return;
            }
            b_lo = b_hi;
            continue;
        }
        let (alive, pos) = scratch.survivors();
        let some_passed = !feasible.is_empty() || !alive.is_empty();
        if !list && some_passed {
            // Some node passes: take the survivors up to the `want`-th, count the failures before it.
            let room = want - feasible.len();
            if alive.len() >= room {
                *unlisted += pos[room - 1] as usize + 1 - room;
                feasible.extend_from_slice(&alive[..room]);
                return;
            }
            *unlisted += ids.len() - alive.len();
            feasible.extend_from_slice(alive);
            b_lo = b_hi;
            continue;
        }
        match scratch.verdicts(verdicts) {
            // One plugin rejected the whole block (a preemptor's failing cycle): its node ids and
            // rejections join the failures whole, a run per change of rejection.
            BlockVerdicts::One(plugin, rejects) if alive.is_empty() => failures.push_rejected(plugin, ids, rejects),
            v => {
                for (k, &node) in ids.iter().enumerate() {
                    match v.get(k) {
                        None => {
                            feasible.push(node);
                            failures_before.push(failures.len() as u32);
                            if feasible.len() >= want {
                                return;
                            }
                        }
                        Some((plugin, reject)) => failures.push_parts(node, plugin, reject),
                    }
                }
            }
        }
        b_lo = b_hi;
    }
}

/// The parallel filter pass over scan positions `0..n`: waves of contiguous chunks,
/// [`FILTER_CHUNKS_PER_THREAD`] per thread of `pool`, each sized so one wave covers the nodes still expected to be needed (from
/// the feasible share seen so far; at least `min_wave` nodes); `eval_chunk(lo, hi, want, chunk, out)`
/// filters positions `lo..hi` into `chunk` and its feasible nodes into `out` (the chunk's part of
/// `feasible`, `hi - lo` entries after the nodes merged so far), stopping once the chunk alone
/// holds every feasible node the wave can still use. Merged in scan order, in place, so the
/// result is the one-thread pass's. `feasible`'s contents on entry are scratch (its length is kept
/// where it is long enough: no zeroing); on return it holds the feasible nodes.
#[allow(clippy::too_many_arguments)]
fn parallel_filter_pass(
    pool: &rayon::ThreadPool,
    n: usize,
    k: usize,
    min_wave: usize,
    chunks: &mut Vec<FilterChunk>,
    eval_chunk: &(impl Fn(usize, usize, usize, &mut FilterChunk, &mut [NodeIdx]) + Sync),
    feasible: &mut Vec<NodeIdx>,
    failures: &mut Failures,
) {
    let parts = pool.current_num_threads().max(1) * FILTER_CHUNKS_PER_THREAD;
    if chunks.len() < parts {
        chunks.resize_with(parts, FilterChunk::default);
    }
    // The feasible nodes merged so far are `feasible[..merged]`.
    let mut merged = 0;
    let mut pos = 0;
    while pos < n {
        let want = k + 1 - merged;
        let expected = if pos == 0 {
            want
        } else if merged == 0 {
            pos.saturating_mul(2)
        } else {
            want.saturating_mul(pos).div_ceil(merged)
        };
        let wave = expected.max(min_wave).min(n - pos);
        let per = wave.div_ceil(parts);
        let used = wave.div_ceil(per);
        if feasible.len() < merged + wave {
            feasible.resize(merged + wave, NodeIdx(0));
        }
        let parts_out = &mut feasible[merged..merged + wave];
        pool.install(|| {
            // One job per chunk (`with_max_len(1)`): rayon's own splitting stops at about one job
            // per thread per half, so a thread done early could take only pairs of chunks.
            chunks[..used].par_iter_mut().zip(parts_out.par_chunks_mut(per)).enumerate().with_max_len(1).for_each(
                |(i, (chunk, out))| {
                    let lo = pos + i * per;
                    eval_chunk(lo, (lo + per).min(pos + wave), want, chunk, out);
                },
            )
        });
        let wave_base = merged;
        for (i, chunk) in chunks[..used].iter().enumerate() {
            if merge_filter_chunk(chunk, k, feasible, wave_base + i * per, &mut merged, failures) {
                feasible.truncate(merged);
                return;
            }
        }
        pos += wave;
    }
    feasible.truncate(merged);
}

/// Takes the one-thread pass's chunk (all of the scan, evaluated with `want` = k + 1, so every
/// failure in it comes before the cut; its feasible nodes written at the start of `feasible`) into
/// the pass's results, leaving `feasible` holding the first k: as [`merge_filter_chunk`] with
/// `list` or when no node passed; otherwise the feasible nodes only, returning the number of
/// failures (listed in the chunk or not), which the caller counts without a list.
fn merge_serial_chunk(
    chunk: &FilterChunk,
    k: usize,
    list: bool,
    feasible: &mut Vec<NodeIdx>,
    failures: &mut Failures,
) -> usize {
    if list || chunk.feasible == 0 {
        let mut merged = 0;
        merge_filter_chunk(chunk, k, feasible, 0, &mut merged, failures);
        feasible.truncate(merged);
        return chunk.unlisted;
    }
    feasible.truncate(chunk.feasible.min(k));
    chunk.failures.len() + chunk.unlisted
}

/// Appends an evaluated chunk, the next in scan order, to the pass's results: its feasible nodes
/// (`feasible[at..]`, `at` >= `*merged`) move down to follow the `*merged` ones (no move when they
/// already do), and its failures are listed; returns true when the pass ends in it, at the first
/// feasible node after the k-th. Upstream's pass (one filter worker) stops there too: it cancels
/// only when a (k+1)-th node passes, so the nodes that fail between the k-th and it keep their
/// status and move `nextStartNodeIndex`; the (k+1)-th itself is dropped.
fn merge_filter_chunk(
    chunk: &FilterChunk,
    k: usize,
    feasible: &mut [NodeIdx],
    at: usize,
    merged: &mut usize,
    failures: &mut Failures,
) -> bool {
    let room = k - *merged;
    let take = chunk.feasible.min(room);
    if at != *merged {
        feasible.copy_within(at..at + take, *merged);
    }
    *merged += take;
    if chunk.feasible <= room {
        failures.extend_from(&chunk.failures);
        return false;
    }
    // The cut is the chunk's feasible node number `room` (0-based): the failures listed before it.
    failures.extend_prefix(&chunk.failures, chunk.failures_before[room] as usize);
    true
}

/// Host selection as v1.37 `schedulePod` does it without extenders: the scored nodes, in the
/// order the filter pass found them, become a max-heap (`NewSortedScoredNodes`: Go's
/// `container/heap` with `Less(i, j)` = higher `TotalScore`, then higher `Randomizer`, which is 0
/// without a scoring extender) and the first `Pop` takes its root. So ties are broken by heap
/// position, with no random draw. Returns the root's index into `totals`.
///
/// `heap.Init` runs `down(i)` for i from n/2-1 to 0; after `down(i)` the element at i is the
/// larger of its children's current elements when that one is strictly greater than its own
/// (the right child only when strictly greater than the left), and nothing later moves it until
/// `down(parent(i))` reads it. So the root is the winner of this bottom-up tournament, computed
/// here without the sifting (checked against a plain `heap.Init` in the tests). O(n); `tops` is
/// scratch space.
pub fn select_host(tops: &mut Vec<(i64, u32)>, totals: &[i64]) -> usize {
    assert!(!totals.is_empty(), "select_host needs scored nodes");
    let n = totals.len();
    tops.clear();
    tops.extend(totals.iter().enumerate().map(|(i, &t)| (t, i as u32)));
    for i in (0..n / 2).rev() {
        let left = tops[2 * i + 1];
        let child = match tops.get(2 * i + 2) {
            Some(&right) if right.0 > left.0 => right,
            _ => left,
        };
        if child.0 > tops[i].0 {
            tops[i] = child;
        }
    }
    tops[0].1 as usize
}

/// [`select_host`] without the tournament: the root of Go's `heap.Init` holds the highest total,
/// and among equal highest totals the one first in the heap's preorder (a parent before its
/// children, the left subtree before the right: the tournament keeps a parent unless a child is
/// strictly greater, and takes the right child only when strictly greater than the left). So:
/// one pass for the highest total, then one for its holders (none when index 0 holds it): on one
/// thread, each depth's first holder; in parallel chunks on `pool` from
/// [`PARALLEL_MIN_SCORE_NODES`] totals, every holder.
pub fn select_host_fast(pool: Option<&rayon::ThreadPool>, totals: &[i64]) -> usize {
    assert!(!totals.is_empty(), "select_host needs scored nodes");
    let first_max = |base: usize, t: &[i64], max: i64| -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, &v) in t.iter().enumerate() {
            if v == max && best.is_none_or(|b| heap_preorder_before(base + i, b)) {
                best = Some(base + i);
            }
        }
        best
    };
    let pick = |a: Option<usize>, b: Option<usize>| match (a, b) {
        (Some(a), Some(b)) => Some(if heap_preorder_before(a, b) { a } else { b }),
        (a, None) => a,
        (None, b) => b,
    };
    match pool.filter(|_| totals.len() >= PARALLEL_MIN_SCORE_NODES) {
        None => {
            // Within one depth of the heap (indices 2^d - 1 .. 2^(d+1) - 1) the preorder is the
            // index order, so only each depth's first holder of the highest total is a candidate:
            // one pass for the highest total, then per depth a search that stops at its first
            // holder (about one compare per total, none per tie).
            let max = *totals.iter().max().expect("scored nodes");
            if totals[0] == max {
                return 0;
            }
            let mut best: Option<(u64, usize)> = None;
            let (mut lo, mut width) = (1, 2);
            while lo < totals.len() {
                let hi = (lo + width).min(totals.len());
                if let Some(j) = totals[lo..hi].iter().position(|&v| v == max) {
                    let key = heap_preorder_key(lo + j);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
                (lo, width) = (hi, width * 2);
            }
            best.expect("the highest total is held").1
        }
        Some(pool) => pool.install(|| {
            let chunk = totals.len().div_ceil(pool.current_num_threads() * 2);
            let max = totals.par_chunks(chunk).map(|t| t.iter().copied().max().unwrap_or(i64::MIN)).max();
            let max = max.expect("scored nodes");
            if totals[0] == max {
                return 0;
            }
            totals
                .par_chunks(chunk)
                .enumerate()
                .map(|(c, t)| first_max(c * chunk, t, max))
                .reduce(|| None, pick)
                .expect("the highest total is held")
        }),
    }
}

/// A key that orders heap indices as [`heap_preorder_before`] does: the 1-based index shifted
/// left until its top bit is bit 63 (its path from the root, left-aligned: a left turn is a 0),
/// then the index itself (an ancestor, with the same aligned path as its leftmost descendants,
/// comes first). The root's key is the least.
fn heap_preorder_key(i: usize) -> (u64, usize) {
    let i1 = i as u64 + 1;
    (i1 << i1.leading_zeros(), i)
}

/// The top of a chunk of totals that starts at index `base` of the whole: its highest total, and
/// the [`heap_preorder_key`] and index of that total's first holder in heap preorder (per depth of
/// the heap the first holder in index order, the least key among them, as in
/// [`select_host_fast`]); `None` for an empty chunk. The whole's selected index is the one in the
/// top with the highest total, the least key among equals.
pub(super) fn chunk_top(base: usize, totals: &[i64]) -> Option<(i64, u64, usize)> {
    let max = *totals.iter().max()?;
    let end = base + totals.len();
    let mut best: Option<(u64, usize)> = None;
    let mut lo = base;
    while lo < end {
        // Depth d of the heap holds indices 2^d - 1 .. 2^(d+1) - 1.
        let hi = ((lo + 2).next_power_of_two() - 1).min(end);
        if let Some(j) = totals[lo - base..hi - base].iter().position(|&v| v == max) {
            let key = heap_preorder_key(lo + j);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        lo = hi;
    }
    best.map(|(key, i)| (max, key, i))
}

/// Whether heap index `a` comes before `b` (a different index) in the preorder of a binary heap
/// laid out in an array (children of i at 2i+1 and 2i+2): `a` is an ancestor of `b`, or at the
/// depth where their paths part, `a`'s side is the left one.
fn heap_preorder_before(a: usize, b: usize) -> bool {
    // 1-based indices: a node's ancestors are its index shifted right.
    let (a1, b1) = (a as u64 + 1, b as u64 + 1);
    let (da, db) = (63 - a1.leading_zeros(), 63 - b1.leading_zeros());
    if da <= db {
        let up = b1 >> (db - da);
        up == a1 || a1 < up
    } else {
        let up = a1 >> (da - db);
        up != b1 && up < b1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The parallel filter pass (waves of chunks, merged in order) and the one-chunk pass
        /// find what a plain node-by-node pass finds: the first k feasible positions and every
        /// failure before the first feasible position after them. The one-chunk pass that counts
        /// failures finds the same feasible positions and number of failures, and lists them all
        /// when none is feasible (none otherwise).
        #[test]
        fn parallel_filter_pass_is_the_plain_pass(
            fits in proptest::prop_oneof![
                proptest::collection::vec(proptest::bool::weighted(0.7), 0..700),
                proptest::collection::vec(proptest::bool::weighted(0.998), 0..700),
                proptest::collection::vec(proptest::bool::weighted(0.003), 0..700),
            ],
            k in 1usize..300,
            min_wave in 1usize..200,
            threads in 1usize..4,
            stale in 0usize..800,
        ) {
            let n = fits.len();
            let scan = |lo: usize, hi: usize, ids: &mut Vec<NodeIdx>| ids.extend((lo..hi).map(|p| NodeIdx(p as u32)));
            let block = |ids: &[NodeIdx], verdicts: Option<&mut Vec<Option<(PluginId, Reject)>>>, scratch: &mut FilterScratch| {
                if ids.iter().all(|id| fits[id.ix()]) {
                    return false;
                }
                if let Some(verdicts) = verdicts {
                    verdicts.clear();
                    verdicts.extend(ids.iter().map(|id| (!fits[id.ix()]).then_some((3, Reject::unschedulable(id.0 as u64)))));
                }
                scratch.set_survivors(ids, |id| fits[id.ix()]);
                true
            };
            let eval_chunk = |lo: usize, hi: usize, want: usize, chunk: &mut FilterChunk, out: &mut [NodeIdx]| {
                eval_filter_chunk(lo, hi, want, true, chunk, out, &scan, block)
            };
            // The plain pass.
            let (mut want_f, mut want_x) = (Vec::new(), Vec::new());
            for (pos, &fit) in fits.iter().enumerate() {
                match fit {
                    true if want_f.len() >= k => break,
                    true => want_f.push(NodeIdx(pos as u32)),
                    false => want_x.push(pos as u32),
                }
            }
            let failed = |x: &Failures| x.iter().map(|f| f.node.0).collect::<Vec<_>>();
            // Output buffers hold stale nodes on entry, as the engine's kept one does.
            let stale_buf = |len: usize| vec![NodeIdx(u32::MAX); len];
            let mut chunks = Vec::new();
            let (mut f, mut x) = (Vec::new(), Failures::new());
            if n > 0 {
                chunks.push(FilterChunk::default());
                f = stale_buf((k + 1).min(n));
                eval_chunk(0, n, k + 1, &mut chunks[0], &mut f);
                merge_serial_chunk(&chunks[0], k, true, &mut f, &mut x);
            }
            proptest::prop_assert_eq!(&f, &want_f);
            proptest::prop_assert_eq!(failed(&x), want_x.clone());
            if n > 0 {
                let (mut f, mut x) = (stale_buf((k + 1).min(n)), Failures::new());
                eval_filter_chunk(0, n, k + 1, false, &mut chunks[0], &mut f, &scan, block);
                let unlisted = merge_serial_chunk(&chunks[0], k, false, &mut f, &mut x);
                proptest::prop_assert_eq!(&f, &want_f);
                proptest::prop_assert_eq!(x.len() + unlisted, want_x.len());
                if want_f.is_empty() {
                    proptest::prop_assert_eq!(failed(&x), want_x.clone());
                } else {
                    proptest::prop_assert!(x.is_empty());
                }
            }
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool starts");
            let (mut f, mut x) = (stale_buf(stale), Failures::new());
            parallel_filter_pass(&pool, n, k, min_wave, &mut chunks, &eval_chunk, &mut f, &mut x);
            proptest::prop_assert_eq!(&f, &want_f);
            proptest::prop_assert_eq!(failed(&x), want_x);
        }

        /// The nodes of a range of scan positions, copied in runs, are those the position-by-position
        /// rotation gives, in the row order and in another scan order.
        #[test]
        fn push_scan_range_is_the_rotation(
            n in 1usize..300,
            start_seed in 0usize..1000,
            lo_seed in 0usize..1000,
            len_seed in 0usize..1000,
            reversed in proptest::bool::ANY,
        ) {
            let start = start_seed % n;
            let lo = lo_seed % (n + 1);
            let hi = lo + len_seed % (n - lo + 1);
            let order: Vec<NodeIdx> = (0..n as u32).rev().map(NodeIdx).collect();
            let order = reversed.then_some(&order[..]);
            let want: Vec<NodeIdx> = (lo..hi)
                .map(|pos| {
                    let j = (start + pos) % n;
                    order.map_or(NodeIdx(j as u32), |o| o[j])
                })
                .collect();
            let mut got = vec![NodeIdx(7)];
            push_scan_range(order, n, start, lo, hi, &mut got);
            proptest::prop_assert_eq!(&got[1..], &want[..]);
        }

        /// The two-pass host selection picks what the tournament picks, on one thread and in
        /// parallel chunks (few distinct totals, so ties are the rule, or many).
        #[test]
        fn select_host_fast_is_the_tournament(
            totals in proptest::prop_oneof![
                proptest::collection::vec(0i64..4, 1..300),
                proptest::collection::vec(0i64..1000, 1..300),
            ],
        ) {
            let mut heap = Vec::new();
            let want = select_host(&mut heap, &totals);
            proptest::prop_assert_eq!(select_host_fast(None, &totals), want);
            proptest::prop_assert_eq!(want, go_heap_init_root(&totals));
        }

        /// The preorder key orders any two heap indices as `heap_preorder_before` does.
        #[test]
        fn heap_preorder_key_is_heap_preorder_before(a in 0usize..5000, b in 0usize..5000) {
            proptest::prop_assume!(a != b);
            proptest::prop_assert_eq!(heap_preorder_key(a) < heap_preorder_key(b), heap_preorder_before(a, b));
        }
    }

    proptest::proptest! {
        /// Chunk tops ([`chunk_top`]) over any split of the totals, reduced by the highest total
        /// and then the least key, pick the tournament's index.
        #[test]
        fn chunk_tops_are_the_tournament(
            totals in proptest::collection::vec(0i64..4, 1..300),
            cuts in proptest::collection::vec(0usize..300, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % totals.len()).collect();
            cuts.push(0);
            cuts.push(totals.len());
            cuts.sort_unstable();
            let mut best: Option<(i64, u64, usize)> = None;
            for w in cuts.windows(2) {
                if let Some(top) = chunk_top(w[0], &totals[w[0]..w[1]]) {
                    if best.is_none_or(|b| top.0 > b.0 || (top.0 == b.0 && top.1 < b.1)) {
                        best = Some(top);
                    }
                }
            }
            let mut heap = Vec::new();
            proptest::prop_assert_eq!(best.map(|b| b.2), Some(select_host(&mut heap, &totals)));
        }
    }

    #[test]
    fn select_host_fast_in_parallel_chunks_is_the_tournament() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("rayon pool starts");
        let n = PARALLEL_MIN_SCORE_NODES * 3 + 17;
        let mut heap = Vec::new();
        // Totals from a small LCG: few distinct values; the highest sometimes held by index 0.
        for seed in 0..40u64 {
            let mut x = seed;
            let totals: Vec<i64> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((x >> 33) % (3 + seed % 5)) as i64
                })
                .collect();
            assert_eq!(select_host_fast(Some(&pool), &totals), select_host(&mut heap, &totals), "seed {seed}");
        }
    }

    proptest::proptest! {
        /// The block pass (plugins in turn, compacting the survivors, resetting its output only
        /// after a plugin that rejected something) gives every node the verdict of the plain
        /// per-node path: its first failing filter plugin, with the same detail.
        #[test]
        fn filter_block_matches_the_per_node_path(
            nodes in proptest::collection::vec((0u8..4, 1i64..4, 0u8..3), 1..40),
            pod_cpu in 0i64..3000,
            tolerate in proptest::bool::ANY,
        ) {
            use crate::snapshot::testing::{MakeNode, MakePod};
            use crate::snapshot::{Snapshot, TaintEffect, TolerationOp};
            let mut snap = Snapshot::new();
            for (i, &(kind, cpus, pods)) in nodes.iter().enumerate() {
                // kind 1: unschedulable; 2: a NoSchedule taint; 3: both.
                let mut n = MakeNode::new(&mut snap, &format!("n{i}")).capacity(cpus * 1000, 1 << 34).pods(pods as i64);
                if kind & 1 != 0 {
                    n = n.unschedulable();
                }
                if kind & 2 != 0 {
                    n = n.taint("dedicated", "x", TaintEffect::NoSchedule);
                }
                n.add();
            }
            let mut p = MakePod::new(&mut snap, "p").req(pod_cpu, 1 << 20);
            if tolerate {
                p = p.toleration("dedicated", TolerationOp::Equal, "x", Some(TaintEffect::NoSchedule));
            }
            let pod = p.build();
            let config = crate::config::SchedulerConfig::defaults();
            let fw = crate::plugins::build_framework(&config.profiles[0], &crate::plugins::CompiledArgs::default(), &mut snap.interner)
                .expect("the default profile builds");
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("no PreFilter rejects this pod");
            let ids: Vec<NodeIdx> = (0..snap.nodes.len() as u32).rev().map(NodeIdx).collect();
            let mut verdicts = Vec::new();
            filter_nodes(&fw, cx, &state, &skip, &ids, &mut verdicts);
            let plain: Vec<_> = ids.iter().map(|&n| filter_node(&fw, cx, &state, &skip, n)).collect();
            proptest::prop_assert_eq!(&verdicts, &plain);
            // In row order (NodeResourcesFit reads the block as a range of rows), written out and
            // kept lazily as the filter pass reads them (one rejecting plugin's output, or every
            // verdict when several reject).
            let rows: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
            let plain_rows: Vec<_> = plain.into_iter().rev().collect();
            filter_nodes(&fw, cx, &state, &skip, &rows, &mut verdicts);
            proptest::prop_assert_eq!(&verdicts, &plain_rows);
            let mut scratch = FilterScratch::default();
            let lazy: Vec<_> = if filter_nodes_lazy(&fw, cx, &state, &skip, &rows, &mut verdicts, &mut scratch) {
                let v = scratch.verdicts(&verdicts);
                (0..rows.len()).map(|k| v.get(k)).collect()
            } else {
                vec![None; rows.len()]
            };
            proptest::prop_assert_eq!(lazy, plain_rows);
        }
    }

    proptest::proptest! {
        /// The skips of the cycle leave decisions alone: a filter plugin that says it rejects no
        /// node rejects none, a score plugin that says it scores every node alike does, and the
        /// cycle that leaves such plugins out (no per-plugin table) picks the node the full
        /// table's totals pick, with totals differing by one constant.
        #[test]
        fn skipped_plugins_cannot_change_the_decision(
            nodes in proptest::collection::vec((0u8..8, 1i64..5), 2..30),
            tolerate in proptest::bool::ANY,
            image in proptest::bool::ANY,
        ) {
            use crate::snapshot::testing::{MakeNode, MakePod};
            use crate::snapshot::{TaintEffect, TolerationOp};
            let mut snap = Snapshot::new();
            for (i, &(kind, cpus)) in nodes.iter().enumerate() {
                // kind bit 0: unschedulable; 1: a PreferNoSchedule taint; 2: holds the image.
                let mut n = MakeNode::new(&mut snap, &format!("n{i}")).capacity(cpus * 1000, 1 << 34);
                if kind & 1 != 0 {
                    n = n.unschedulable();
                }
                if kind & 2 != 0 {
                    n = n.taint("soft", "x", TaintEffect::PreferNoSchedule);
                }
                if kind & 4 != 0 {
                    n = n.image(&["registry.example/app:1"], 300 << 20);
                }
                n.add();
            }
            let mut p = MakePod::new(&mut snap, "p").req(100, 1 << 20);
            if tolerate {
                p = p.toleration("soft", TolerationOp::Equal, "x", Some(TaintEffect::PreferNoSchedule));
            }
            if image {
                p = p.image("registry.example/app:1");
            }
            let pod = p.build();
            let fw = default_fw(&mut snap);
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("no PreFilter rejects this pod");
            let all: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
            for &pid in &fw.filter {
                if !skip[pid] && fw.plugin(pid).filter_rejects_none(cx, &state) {
                    let mut out = vec![None; all.len()];
                    fw.plugin(pid).filter(cx, &state, &all, &mut out);
                    proptest::prop_assert!(out.iter().all(Option::is_none), "{} rejected", fw.plugin(pid).name());
                }
            }
            let engine = Engine::new(1, 1, None);
            let (feasible, _) = engine.find_feasible(&fw, cx, &state, &skip, None, all.len(), 0, all.len());
            let mut verdicts = Vec::new();
            filter_nodes(&fw, cx, &state, &skip, &all, &mut verdicts);
            let want: Vec<NodeIdx> = all.iter().zip(&verdicts).filter(|(_, v)| v.is_none()).map(|(&n, _)| n).collect();
            proptest::prop_assert_eq!(&feasible, &want);
            // Without verdicts: the same survivors, at their positions.
            let mut scratch = FilterScratch::default();
            if filter_nodes_passing(&fw, cx, &state, &skip, &all, &mut scratch) {
                let (alive, pos) = scratch.survivors();
                proptest::prop_assert_eq!(alive, &want[..]);
                proptest::prop_assert!(pos.iter().zip(alive).all(|(&p, &n)| all[p as usize] == n));
            } else {
                proptest::prop_assert_eq!(&all, &want);
            }
            if feasible.len() < 2 {
                return Ok(());
            }
            let full = engine.score(&fw, cx, &mut state, &feasible, true).expect("scores");
            for (pid, _, scores) in &full.plugins {
                if fw.plugin(*pid).score_is_uniform(cx, &state) {
                    proptest::prop_assert!(scores.iter().all(|&s| s == scores[0]), "{} not uniform", fw.plugin(*pid).name());
                }
            }
            let lean = engine.score(&fw, cx, &mut state, &feasible, false).expect("scores");
            let shift = full.totals[0] - lean.totals[0];
            proptest::prop_assert!(full.totals.iter().zip(&lean.totals).all(|(f, l)| f - l == shift));
            let mut heap = Vec::new();
            proptest::prop_assert_eq!(select_host(&mut heap, &full.totals), select_host(&mut heap, &lean.totals));
        }
    }

    proptest::proptest! {
        /// The pass over NodeResourcesFit's candidates (the nodes carrying a rare extended
        /// resource) finds what the plain pass finds from any start: the same first k feasible
        /// nodes, the same number of nodes evaluated, and, among the failures, exactly the plain
        /// pass's failing candidates; when no node fits it leaves the pass to the plain one.
        #[test]
        fn sparse_filter_pass_is_the_plain_pass(
            nodes in proptest::collection::vec((0u8..40, 0i64..3, 0u8..3), 16..90),
            want in 1i64..3,
            start_seed in 0usize..1000,
            k in 1usize..4,
        ) {
            use crate::snapshot::testing::{MakeNode, MakePod};
            use crate::snapshot::TaintEffect;
            let mut snap = Snapshot::new();
            // kind 0-2: carries `rare` units of example.com/rare; 3: unschedulable; 4: tainted.
            // The carriers get the resource once every node exists, so its column stays sparse.
            let make = |snap: &mut Snapshot, i: usize, carry: bool| {
                let (kind, rare, _) = nodes[i];
                let mut n = MakeNode::new(snap, &format!("n{i}")).capacity(4000, 1 << 34);
                if carry {
                    n = n.scalar("example.com/rare", rare);
                }
                if kind == 3 || kind == 0 && rare == 2 {
                    n = n.unschedulable();
                }
                if kind == 4 {
                    n = n.taint("dedicated", "x", TaintEffect::NoSchedule);
                }
                n.spec()
            };
            for i in 0..nodes.len() {
                let spec = make(&mut snap, i, false);
                snap.add_node(&spec).expect("test node names are unique");
            }
            for (i, &(kind, _, _)) in nodes.iter().enumerate() {
                if kind < 3 {
                    let spec = make(&mut snap, i, true);
                    snap.update_node(&spec).expect("the node exists");
                }
            }
            for (i, &(kind, _, used)) in nodes.iter().enumerate() {
                if kind < 3 && used > 0 {
                    MakePod::new(&mut snap, &format!("e{i}")).scalar_req("example.com/rare", used as i64).place(&format!("n{i}"));
                }
            }
            let pod = MakePod::new(&mut snap, "p").req(100, 1 << 20).scalar_req("example.com/rare", want).build();
            let fw = default_fw(&mut snap);
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("no PreFilter rejects this pod");
            let n = snap.nodes.len();
            let start = start_seed % n;
            let engine = Engine::new(1, 1, None);
            let (feasible, failures) = engine.find_feasible(&fw, cx, &state, &skip, None, n, start, k);
            // The pass that counts failures once a node fits: the same nodes and number of failures.
            let (f, x, unlisted) = engine.filter_pass(&fw, cx, &state, &skip, None, n, start, k, false);
            proptest::prop_assert_eq!(&f, &feasible);
            proptest::prop_assert_eq!(x.len() + unlisted, failures.len());
            if feasible.is_empty() {
                proptest::prop_assert_eq!(&x, &failures);
            }
            let Some((f, x, unlisted)) = engine.sparse_filter_pass(&fw, cx, &state, &skip, n, start, k) else {
                let mut cands = Vec::new();
                let offered = fw.filter.iter().any(|&pid| fw.plugin(pid).filter_candidates(cx, &state, true, &mut cands));
                proptest::prop_assert!(feasible.is_empty() || !offered || cands.len() * SPARSE_FILTER_DIVISOR >= n);
                return Ok(());
            };
            proptest::prop_assert_eq!(&f, &feasible);
            proptest::prop_assert_eq!(f.len() + x.len() + unlisted, feasible.len() + failures.len());
            let mut cands = Vec::new();
            let fit = fw.filter.iter().find(|&&pid| fw.plugin(pid).filter_candidates(cx, &state, true, &mut cands));
            proptest::prop_assert!(fit.is_some());
            let listed: Vec<NodeFailure> = failures.iter().filter(|x| cands.contains(&x.node)).collect();
            proptest::prop_assert_eq!(x.to_vec(), listed);
        }
    }

    proptest::proptest! {
        /// The pass over PodTopologySpread's candidates (a hostname spread constraint narrowed by
        /// its taint policy: the nodes whose matching count is within the skew, plus the tainted
        /// ones, which count 0) finds what the plain pass finds from any start, as above.
        #[test]
        fn sparse_filter_pass_over_spread_candidates_is_the_plain_pass(
            nodes in proptest::collection::vec((0u8..8, 0u8..3), 8..140),
            max_skew in 1i32..3,
            start_seed in 0usize..1000,
            k in 1usize..6,
            all_keyed in proptest::bool::ANY,
        ) {
            use crate::snapshot::testing::{sel_exists, MakeNode, MakePod};
            use crate::snapshot::{InclusionPolicy, SpreadConstraint, TaintEffect, WhenUnsatisfiable};
            let mut snap = Snapshot::new();
            // kind 0: no hostname label (unless `all_keyed`: every node has one, so PodTopologySpread
            // takes its row-bitset path); 1: tainted; 2: unschedulable; 3: small (the pod does not
            // fit); else plain. `placed` matching pods on each labelled node.
            for (i, &(kind, _)) in nodes.iter().enumerate() {
                let name = format!("n{i}");
                let cpu = if kind == 3 { 50 } else { 4000 };
                let mut b = MakeNode::new(&mut snap, &name).capacity(cpu, 1 << 34);
                if kind != 0 || all_keyed {
                    b = b.label("kubernetes.io/hostname", &name);
                }
                if kind == 1 {
                    b = b.taint("dedicated", "x", TaintEffect::NoSchedule);
                }
                if kind == 2 {
                    b = b.unschedulable();
                }
                b.add();
            }
            for (i, &(_, placed)) in nodes.iter().enumerate() {
                for j in 0..placed {
                    MakePod::new(&mut snap, &format!("e{i}-{j}")).label("foo", "").req(0, 0).place(&format!("n{i}"));
                }
            }
            let sel = sel_exists(&mut snap, "foo");
            let key = snap.interner.intern("kubernetes.io/hostname");
            let mut c = SpreadConstraint::new(max_skew, key, WhenUnsatisfiable::DoNotSchedule, sel);
            c.node_taints_policy = InclusionPolicy::Honor;
            let pod = MakePod::new(&mut snap, "p").label("foo", "").req(100, 1 << 20).spread_constraint(c).build();
            snap.prepare_pod(&pod);
            let fw = default_fw(&mut snap);
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let Ok((skip, _, _)) = Engine::run_pre_filter(&fw, cx, &mut state) else { return Ok(()) };
            let n = snap.nodes.len();
            let start = start_seed % n;
            let engine = Engine::new(1, 1, None);
            let (feasible, failures) = engine.find_feasible(&fw, cx, &state, &skip, None, n, start, k);
            let mut cands = Vec::new();
            let untolerated = untolerated_taints_rejected(&fw, &effective_skip(&fw, cx, &state, &skip));
            let offered = fw.filter.iter().find(|&&pid| !skip[pid] && fw.plugin(pid).filter_candidates(cx, &state, untolerated, &mut cands));
            // The constraint is narrowed (so listed) when some labelled node carries the taint.
            let tainted = nodes.iter().any(|&(kind, _)| kind == 1);
            proptest::prop_assert_eq!(offered.is_some(), tainted, "PodTopologySpread offers its passing nodes");
            let Some((f, x, unlisted)) = engine.sparse_filter_pass(&fw, cx, &state, &skip, n, start, k) else {
                proptest::prop_assert!(feasible.is_empty() || !tainted || cands.len() * SPARSE_FILTER_DIVISOR >= n);
                return Ok(());
            };
            proptest::prop_assert_eq!(&f, &feasible);
            proptest::prop_assert_eq!(f.len() + x.len() + unlisted, feasible.len() + failures.len());
            let listed: Vec<NodeFailure> = failures.iter().filter(|x| cands.contains(&x.node)).collect();
            proptest::prop_assert_eq!(x.to_vec(), listed);
        }
    }

    #[test]
    fn sparse_filter_pass_runs_while_the_resource_column_is_sparse() {
        use crate::snapshot::testing::{MakeNode, MakePod};
        // (nodes, carriers of the pod's resource, sparse pass taken): past 1/8 carriers the
        // column turns dense and NodeResourcesFit offers no candidates.
        for (n, carriers, sparse) in [(16, 2, true), (16, 3, false), (64, 8, true), (64, 9, false), (16, 0, false)] {
            let mut snap = Snapshot::new();
            for i in 0..n {
                MakeNode::new(&mut snap, &format!("n{i}")).capacity(4000, 1 << 34).add();
            }
            // Carriers added once every node exists: the column stays sparse.
            for i in (0..n).filter(|i| i % 5 == 1 && i / 5 < carriers) {
                let spec = MakeNode::new(&mut snap, &format!("n{i}"))
                    .capacity(4000, 1 << 34)
                    .scalar("example.com/rare", 1)
                    .spec();
                snap.update_node(&spec).expect("the node exists");
            }
            let pod = MakePod::new(&mut snap, "p").req(100, 1 << 20).scalar_req("example.com/rare", 1).build();
            let fw = default_fw(&mut snap);
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("no PreFilter rejects this pod");
            let engine = Engine::new(1, 1, None);
            let got = engine.sparse_filter_pass(&fw, cx, &state, &skip, n, 3, 1);
            // With no carrier no node fits: the plain pass runs for the diagnosis.
            assert_eq!(got.is_some(), sparse, "{n} nodes, {carriers} carriers");
            if let Some((feasible, failures, unlisted)) = got {
                let (want, want_failures) = engine.find_feasible(&fw, cx, &state, &skip, None, n, 3, 1);
                assert_eq!(feasible, want);
                assert_eq!(failures.len() + unlisted, want_failures.len());
            }
        }
    }

    fn default_fw(snap: &mut Snapshot) -> Framework {
        let config = crate::config::SchedulerConfig::defaults();
        crate::plugins::build_framework(
            &config.profiles[0],
            &crate::plugins::CompiledArgs::default(),
            &mut snap.interner,
        )
        .expect("the default profile builds")
    }

    /// A pod whose required node affinity is `metadata.name In` each of `terms` (one term each).
    fn pinned_pod(snap: &mut Snapshot, terms: &[&[&str]]) -> PodInfo {
        use crate::snapshot::testing::MakePod;
        use crate::snapshot::{NameRequirement, NodeSelector, NodeTerm};
        let terms = terms
            .iter()
            .map(|names| NodeTerm {
                labels: vec![],
                fields: names.iter().map(|n| NameRequirement { in_set: true, name: snap.interner.intern(n) }).collect(),
                valid: true,
                pinned: None,
            })
            .collect();
        let mut pod = MakePod::new(snap, "p").req(100, 1 << 20).build();
        pod.required_affinity = Some(NodeSelector { terms });
        pod
    }

    fn five_nodes() -> Snapshot {
        use crate::snapshot::testing::MakeNode;
        let mut snap = Snapshot::new();
        for i in 0..5 {
            MakeNode::new(&mut snap, &format!("n{i}")).capacity(4000, 1 << 34).add();
        }
        snap
    }

    #[test]
    fn next_start_index_skips_nodes_without_a_status() {
        // findNodesThatFitPod: next = (next + len(feasible) + NodeToStatus.Len()) % len(allNodes);
        // nodes outside a PreFilterResult have no status of their own (absent), so they do not move it.
        let mut snap = five_nodes();
        let fw = default_fw(&mut snap);
        let pod = pinned_pod(&mut snap, &[&["n1"], &["n3"]]);
        let mut engine = Engine::new(1, 1, None);
        let r = engine.schedule_one(&fw, &snap, &pod);
        assert!(matches!(r, CycleResult::Scheduled { evaluated_nodes: 2, feasible_nodes: 2, .. }), "{r:?}");
        assert_eq!(engine.next_start_node_index, 2);
    }

    /// Upstream's one-worker pass cancels when a (k+1)-th node passes: the nodes that fail after the
    /// k-th feasible one are evaluated, keep their status and move `nextStartNodeIndex`.
    #[test]
    fn the_pass_runs_on_to_the_next_feasible_node() {
        use crate::snapshot::testing::{MakeNode, MakePod};
        // (nodes that fit, in order: true fits; k = 100 of 250 nodes) -> (failures, next start)
        let fits_after_100 = |failing: usize, rest_fit: bool| -> Vec<bool> {
            let mut v = vec![true; 100];
            v.extend(std::iter::repeat_n(false, failing));
            v.extend(std::iter::repeat_n(rest_fit, 250 - 100 - failing));
            v
        };
        let cases: &[(&str, Vec<bool>, usize, usize)] = &[
            ("the next node fits", vec![true; 250], 0, 100),
            ("four fail, then one fits", fits_after_100(4, true), 4, 104),
            ("every node after the k-th fails", fits_after_100(150, false), 150, 0),
        ];
        for (case, fits, want_failures, want_next) in cases {
            let mut snap = Snapshot::new();
            for (i, &fit) in fits.iter().enumerate() {
                MakeNode::new(&mut snap, &format!("n{i:03}")).capacity(if fit { 4000 } else { 10 }, 1 << 34).add();
            }
            let fw = default_fw(&mut snap);
            let pod = MakePod::new(&mut snap, "p").req(100, 1 << 20).build();
            let mut engine = Engine::new(1, 1, Some(40));
            let r = engine.schedule_one(&fw, &snap, &pod);
            let CycleResult::Scheduled { evaluated_nodes, feasible_nodes, .. } = r else { panic!("{case}: {r:?}") };
            assert_eq!((feasible_nodes, evaluated_nodes), (100, 100 + want_failures), "{case}");
            assert_eq!(engine.next_start_node_index, *want_next, "{case}");
        }
    }

    #[test]
    fn pre_filter_rejection_message_is_the_status_message_once() {
        // FitError.Error() with a PreFilterMsg: " <msg>." after "0/N nodes are available:", no counts.
        let mut snap = five_nodes();
        let fw = default_fw(&mut snap);
        let mut pod = pinned_pod(&mut snap, &[&["n1"]]);
        // Two fields in one term that pin different names: the terms conflict.
        let n2 = snap.interner.intern("n2");
        pod.required_affinity.as_mut().unwrap().terms[0]
            .fields
            .push(crate::snapshot::NameRequirement { in_set: true, name: n2 });
        let mut engine = Engine::new(1, 1, None);
        let CycleResult::Unschedulable(diag) = engine.schedule_one(&fw, &snap, &pod) else { panic!("fits nowhere") };
        let cx = CycleCx { snap: &snap, pod: &pod };
        assert_eq!(diag.message(&fw, cx, &CycleState::new()), "0/5 nodes are available: pod affinity terms conflict.");
        assert_eq!(engine.next_start_node_index, 0, "a PreFilter rejection does not move the index");
    }

    #[test]
    fn no_nodes_is_errnonodesavailable() {
        let mut snap = Snapshot::new();
        let fw = default_fw(&mut snap);
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        let CycleResult::Unschedulable(diag) = Engine::new(1, 1, None).schedule_one(&fw, &snap, &pod) else {
            panic!("no node to fit")
        };
        let cx = CycleCx { snap: &snap, pod: &pod };
        assert_eq!(diag.message(&fw, cx, &CycleState::new()), "no nodes available to schedule pods");
    }

    #[test]
    fn absent_nodes_count_under_the_framework_reason() {
        // Pinned to n1 and n3, both too small: 2 evaluated, 3 absent.
        use crate::snapshot::testing::MakeNode;
        let mut snap = Snapshot::new();
        for i in 0..5 {
            let cpu = if i % 2 == 1 { 50 } else { 4000 };
            MakeNode::new(&mut snap, &format!("n{i}")).capacity(cpu, 1 << 34).add();
        }
        let fw = default_fw(&mut snap);
        let pod = pinned_pod(&mut snap, &[&["n1"], &["n3"]]);
        let mut engine = Engine::new(1, 1, None);
        let CycleResult::Unschedulable(diag) = engine.schedule_one(&fw, &snap, &pod) else { panic!("fits nowhere") };
        let cx = CycleCx { snap: &snap, pod: &pod };
        assert_eq!(
            diag.message(&fw, cx, &CycleState::new()),
            "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        );
        assert_eq!(engine.next_start_node_index, 2);
    }

    #[test]
    fn a_failed_nominated_node_keeps_its_status() {
        // evaluateNominatedNode shares the diagnosis: a nominated node that fails and that the
        // sampled pass does not reach still counts in NodeToStatus, so in nextStartNodeIndex.
        // 200 nodes: 100 feasible wanted, found in n0..n99; the nominated n199 is too small.
        use crate::snapshot::testing::{MakeNode, MakePod};
        let mut snap = Snapshot::new();
        for i in 0..200 {
            let cpu = if i == 199 { 10 } else { 4000 };
            MakeNode::new(&mut snap, &format!("n{i}")).capacity(cpu, 1 << 34).add();
        }
        let fw = default_fw(&mut snap);
        let mut pod = MakePod::new(&mut snap, "p").req(100, 1 << 20).build();
        pod.nominated_node = Some(snap.interner.intern("n199"));
        let mut engine = Engine::new(1, 1, None);
        let r = engine.schedule_one(&fw, &snap, &pod);
        assert!(matches!(r, CycleResult::Scheduled { evaluated_nodes: 101, feasible_nodes: 100, .. }), "{r:?}");
        assert_eq!(engine.next_start_node_index, 101);
    }

    /// A PreFilter-only plugin with a fixed outcome (and an optional node-name restriction).
    struct FixedPreFilter(&'static str, Code, Option<Vec<Sym>>);

    impl crate::framework::Plugin for FixedPreFilter {
        fn name(&self) -> &'static str {
            self.0
        }
        fn pre_filter(&self, _cx: CycleCx<'_>, _state: &mut CycleState) -> (Status, crate::framework::PreFilterResult) {
            let st = if self.1 == Code::Success { Status::success() } else { Status::new(self.1, self.0) };
            (st, crate::framework::PreFilterResult { node_names: self.2.clone() })
        }
    }

    #[test]
    fn pre_filter_outcome_as_run_pre_filter_plugins() {
        // (plugins in order as (name, code, names), want Ok(names) or Err((code, reason))).
        let mut snap = five_nodes();
        let (a, b) = (snap.interner.intern("n1"), snap.interner.intern("n2"));
        type Case = (Vec<FixedPreFilter>, Result<Option<Vec<Sym>>, (Code, &'static str)>);
        let cases: Vec<Case> = vec![
            // Unschedulable lets the later plugins run; their U&U wins.
            (
                vec![
                    FixedPreFilter("A", Code::Unschedulable, None),
                    FixedPreFilter("B", Code::UnschedulableAndUnresolvable, None),
                ],
                Err((Code::UnschedulableAndUnresolvable, "B")),
            ),
            // ... and is returned at the end otherwise.
            (
                vec![FixedPreFilter("A", Code::Unschedulable, None), FixedPreFilter("B", Code::Success, None)],
                Err((Code::Unschedulable, "A")),
            ),
            // U&U stops at once.
            (
                vec![
                    FixedPreFilter("A", Code::UnschedulableAndUnresolvable, None),
                    FixedPreFilter("B", Code::Unschedulable, None),
                ],
                Err((Code::UnschedulableAndUnresolvable, "A")),
            ),
            // Disjoint PreFilterResults: the framework's own status.
            (
                vec![
                    FixedPreFilter("B", Code::Success, Some(vec![a])),
                    FixedPreFilter("A", Code::Success, Some(vec![b])),
                ],
                Err((Code::UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [A B] simultaneously")),
            ),
            (
                vec![FixedPreFilter("A", Code::Success, Some(vec![]))],
                Err((Code::UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin A")),
            ),
            (
                vec![
                    FixedPreFilter("A", Code::Success, Some(vec![a, b])),
                    FixedPreFilter("B", Code::Success, Some(vec![b])),
                ],
                Ok(Some(vec![b])),
            ),
            // An Error is wrapped with the plugin's name.
            (vec![FixedPreFilter("A", Code::Error, None)], Err((Code::Error, "running PreFilter plugin \"A\": A"))),
        ];
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        for (plugins, want) in cases {
            let mut fw = default_fw(&mut snap);
            fw.plugins = plugins
                .into_iter()
                .map(|p| std::sync::Arc::new(p) as std::sync::Arc<dyn crate::framework::Plugin>)
                .collect();
            fw.pre_filter = (0..fw.plugins.len()).collect();
            let got = Engine::run_pre_filter(&fw, CycleCx { snap: &snap, pod: &pod }, &mut CycleState::new())
                .map(|(_, names, _)| names)
                .map_err(|(_, st)| (st.code, st.reasons.join(", ")));
            let want = want.map_err(|(c, r)| (c, r.to_string()));
            assert_eq!(got, want);
        }
    }

    #[test]
    fn filter_pass_scans_zones_round_robin() {
        // Added a1, a2, b1, b2: the scan order is a1, b1, a2, b2 (node tree), so the first two
        // feasible nodes from index 0 are a1 and b1, and from index 1 b1 and a2.
        use crate::snapshot::testing::MakeNode;
        let mut snap = Snapshot::new();
        for (name, zone) in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")] {
            MakeNode::new(&mut snap, name).capacity(4000, 1 << 34).label("topology.kubernetes.io/zone", zone).add();
        }
        let fw = default_fw(&mut snap);
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").req(100, 1 << 20).build();
        let cx = CycleCx { snap: &snap, pod: &pod };
        let mut state = CycleState::new();
        let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("no PreFilter rejects this pod");
        let engine = Engine::new(1, 1, None);
        let names = |start: usize| -> Vec<&str> {
            let (feasible, _) = engine.find_feasible(&fw, cx, &state, &skip, None, 4, start, 2);
            feasible.iter().map(|&n| snap.node_name(n)).collect()
        };
        assert_eq!(names(0), ["a1", "b1"]);
        assert_eq!(names(1), ["b1", "a2"]);
        assert_eq!(names(3), ["b2", "a1"]);
    }

    #[test]
    fn select_host_takes_the_root_of_gos_heap() {
        // (totals in scan order, the index `heap.Init` leaves at the root). Worked by hand from
        // container/heap: `down` from n/2-1 to 0, the right child only when strictly greater.
        let cases: &[(&[i64], usize)] = &[
            (&[5], 0),
            (&[1, 3, 2], 1),    // sorted_nodes_test "descending by TotalScore": node3 first.
            (&[3, 2, 1, 3], 0), // "mixed scores" without Randomizer: node3.1 stays at the root.
            (&[1, 9, 3, 2], 1),
            (&[5, 5, 5, 5], 0),    // all tied: nothing moves.
            (&[5, 7, 7], 1),       // equal children: the left one.
            (&[1, 5, 1, 5], 1),    // index 3 is not greater than its parent 1.
            (&[1, 1, 5, 5], 3),    // index 3 rises to 1 first, then beats its equal sibling 2.
            (&[3, 5, 5, 9], 3),    // the unique max always wins.
            (&[0, 4, 4, 4, 4], 1), // index 1 stays above its equal children, then rises over 0.
        ];
        let mut heap = Vec::new();
        for &(totals, want) in cases {
            assert_eq!(go_heap_init_root(totals), want, "reference, totals {totals:?}");
            assert_eq!(select_host(&mut heap, totals), want, "totals {totals:?}");
        }
    }

    /// Go's `heap.Init` as written (`down` with swaps), then the root: the plain reference.
    fn go_heap_init_root(totals: &[i64]) -> usize {
        let mut h: Vec<usize> = (0..totals.len()).collect();
        let less = |h: &[usize], i: usize, j: usize| totals[h[i]] > totals[h[j]];
        let n = h.len();
        for i0 in (0..n / 2).rev() {
            let mut i = i0;
            loop {
                let j1 = 2 * i + 1;
                if j1 >= n {
                    break;
                }
                let mut j = j1;
                if j1 + 1 < n && less(&h, j1 + 1, j1) {
                    j = j1 + 1;
                }
                if !less(&h, j, i) {
                    break;
                }
                h.swap(i, j);
                i = j;
            }
        }
        h[0]
    }

    proptest::proptest! {
        /// The tournament gives the root plain `heap.Init` leaves, always a maximum (few distinct
        /// totals, so many ties).
        #[test]
        fn select_host_is_gos_heap_root(totals in proptest::collection::vec(0i64..4, 1..200)) {
            let mut heap = vec![(7, 7); 3];
            let i = select_host(&mut heap, &totals);
            proptest::prop_assert_eq!(i, go_heap_init_root(&totals));
            proptest::prop_assert_eq!(totals[i], *totals.iter().max().unwrap());
        }
    }
}

#[cfg(test)]
mod nominated_adds_tests {
    use super::*;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use proptest::prelude::*;

    proptest! {
        /// The plan's per-node sums from the maintained `NominatedSums` equal the walk of every
        /// nomination (as sets: the row order is not the map's), whenever `all_count` lets the
        /// sums stand in, the filtered pod nominated itself or not.
        #[test]
        fn adds_from_sums_are_the_walk(
            noms in proptest::collection::vec((0usize..5, 1i32..3, 1i64..3000, any::<bool>()), 0..12),
            pod_prio in 0i32..3,
            own in proptest::option::of(0usize..5),
            placed in proptest::option::of(0usize..12),
        ) {
            let mut snap = Snapshot::new();
            for n in 0..4 {
                MakeNode::new(&mut snap, &format!("n{n}")).capacity(100_000, 1 << 40).pods(110).add();
            }
            let node = |snap: &mut Snapshot, n: usize| snap.interner.intern(&format!("n{n}"));
            let mut placed_uid = None;
            for (i, &(n, prio, cpu, ported)) in noms.iter().enumerate() {
                let b = MakePod::new(&mut snap, &format!("q{i}")).priority(prio).req(cpu, cpu << 20);
                let p = Arc::new(if ported { b.host_port("TCP", "", 9000) } else { b }.build());
                let sym = node(&mut snap, n);
                snap.nominate(p.clone(), sym);
                if placed == Some(i) && n < 4 {
                    snap.place_pod(p.clone(), sym).expect("placed");
                    placed_uid = Some(p.uid);
                }
            }
            let pod = Arc::new(MakePod::new(&mut snap, "pod").priority(pod_prio).req(100, 1 << 20).build());
            if let Some(n) = own {
                let sym = node(&mut snap, n);
                snap.nominate(pod.clone(), sym);
            }
            let walk = Engine::nominated_adds_walk(&snap, &pod);
            if let Some(rows) = snap.nominated_sums().all_count(pod.priority) {
                prop_assert!(placed_uid.is_none());
                let mut fast = nominated_adds_from_sums(rows, snap.nomination_of(pod.uid));
                let mut walk = walk.expect("every counted pod is plain");
                fast.sort_by_key(|a| a.1);
                walk.sort_by_key(|a| a.1);
                // What the table plan reads: each row's nominated columns less the pod's own
                // nomination, and whether any row adds something.
                let own = own_nomination(&snap, &pod);
                let t = &snap.nodes;
                let mut table: Vec<(i64, i64, i64, NodeIdx)> = (0..t.len())
                    .map(|i| {
                        let (o_cpu, o_pods) = own.filter(|(o, _)| o.ix() == i).map_or((0, 0), |(_, s)| (s.cpu_milli, s.pods));
                        (t.nom_cpu_milli[i] - o_cpu, t.nom_memory[i], t.nom_pods[i] - o_pods, NodeIdx(i as u32))
                    })
                    .filter(|r| r.2 > 0)
                    .collect();
                for r in &mut table {
                    if let Some((o, s)) = own.filter(|(o, _)| *o == r.3) {
                        prop_assert_eq!(o, r.3);
                        r.1 -= s.memory;
                    }
                }
                let want: Vec<(i64, i64, i64, NodeIdx)> = walk.iter().map(|(s, i)| (s.cpu_milli, s.memory, s.pods, *i)).collect();
                prop_assert_eq!(&table, &want);
                prop_assert_eq!(table_counts_any(rows, own), !walk.is_empty());
                prop_assert_eq!(fast, walk);
            }
        }
    }
}
