//! The score memo: a score plugin whose Score depends only on a node's row and a per-pod key
//! ([`Plugin::score_memo_key`](crate::framework::Plugin::score_memo_key)) is scored once per row
//! generation and key. Pods of one template share a key, and between two visits of a node (the
//! filter pass rotates over the cluster) few rows change, so most cycles score only the rows that
//! moved. Exact: a row's generation changes with every change to the row and is never reused.

use crate::framework::{PluginId, ScoreMemoKey, Status};
use crate::snapshot::NodeIdx;
use rayon::prelude::*;
use smallvec::SmallVec;

/// Keys kept per plugin (least recently used goes first): a workload's pod shapes in turn.
pub const MEMO_KEYS_PER_PLUGIN: usize = 4;

/// Copies the memoized score of each of `nodes` whose row generation is unchanged into `out`; the
/// others go to `misses`, with their position (`first_pos` + index) in `miss_pos`. Not inlined:
/// inlined into `ScoreMemo::score` it compiled to a slower loop (SchedulingBasic/500Nodes_2000Pods
/// +2.3% instructions per pod under callgrind).
#[inline(never)]
fn lookup(
    rows: &[(u64, i64)],
    generation: &[u64],
    nodes: &[NodeIdx],
    out: &mut [i64],
    first_pos: usize,
    misses: &mut Vec<NodeIdx>,
    miss_pos: &mut Vec<u32>,
) {
    for (i, (&n, o)) in nodes.iter().zip(out.iter_mut()).enumerate() {
        let (g, s) = rows[n.ix()];
        // Stored on a miss too (a stale score the caller overwrites): the hit path is then one
        // load, one compare and one store, with the branch only to the rare miss.
        *o = s;
        if g != generation[n.ix()] {
            misses.push(n);
            miss_pos.push((first_pos + i) as u32);
        }
    }
}

/// One plugin's scores for one key: per row, (generation the score was taken at, score).
/// Generation 0 never names a row, so it marks an empty entry.
struct Table {
    plugin: PluginId,
    key: ScoreMemoKey,
    last_used: u64,
    rows: Vec<(u64, i64)>,
}

/// The memo of one engine (the scheduling thread's).
#[derive(Default)]
pub struct ScoreMemo {
    tables: Vec<Table>,
    clock: u64,
    misses: Vec<NodeIdx>,
    miss_pos: Vec<u32>,
    miss_scores: Vec<i64>,
    /// [`ScoreMemo::score_fused`]'s chunks, kept across cycles (no allocation once grown).
    chunks: Vec<FusedChunk>,
}

impl ScoreMemo {
    /// Scores `nodes` into `out` for plugin `pid` and `key`: memoized rows whose generation is
    /// unchanged are copied (in parallel chunks on `pool`, if given), the others are scored by
    /// `run` (in one call, in order) and kept.
    #[allow(clippy::too_many_arguments)]
    pub fn score(
        &mut self,
        pid: PluginId,
        key: ScoreMemoKey,
        generation: &[u64],
        nodes: &[NodeIdx],
        out: &mut [i64],
        pool: Option<&rayon::ThreadPool>,
        run: impl FnOnce(&[NodeIdx], &mut [i64]) -> Result<(), Status>,
    ) -> Result<(), Status> {
        let t = self.table_index(pid, key);
        let ScoreMemo { tables, misses, miss_pos, miss_scores, .. } = self;
        let table = &mut tables[t];
        if table.rows.len() < generation.len() {
            table.rows.resize(generation.len(), (0, 0));
        }
        let rows = &mut table.rows[..generation.len()];
        misses.clear();
        miss_pos.clear();
        match pool {
            None => lookup(rows, generation, nodes, out, 0, misses, miss_pos),
            Some(pool) => {
                // Chunks looked up in parallel; their misses are joined in order.
                let chunk = nodes.len().div_ceil(pool.current_num_threads() * 2);
                let rows: &[(u64, i64)] = rows;
                let parts: Vec<(Vec<NodeIdx>, Vec<u32>)> = pool.install(|| {
                    nodes
                        .par_chunks(chunk)
                        .zip(out.par_chunks_mut(chunk))
                        .enumerate()
                        .map(|(c, (nodes, out))| {
                            let (mut m, mut p) = (Vec::new(), Vec::new());
                            lookup(rows, generation, nodes, out, c * chunk, &mut m, &mut p);
                            (m, p)
                        })
                        .collect()
                });
                for (m, p) in parts {
                    misses.extend_from_slice(&m);
                    miss_pos.extend_from_slice(&p);
                }
            }
        }
        if misses.is_empty() {
            return Ok(());
        }
        miss_scores.clear();
        miss_scores.resize(misses.len(), 0);
        run(misses, miss_scores)?;
        for ((&n, &i), &s) in misses.iter().zip(miss_pos.iter()).zip(miss_scores.iter()) {
            rows[n.ix()] = (generation[n.ix()], s);
            out[i as usize] = s;
        }
        Ok(())
    }

    /// The table of `pid` and `key` (made, or taking the place of the plugin's least recently used
    /// one beyond [`MEMO_KEYS_PER_PLUGIN`]), marked as used now.
    #[inline]
    fn table_index(&mut self, pid: PluginId, key: ScoreMemoKey) -> usize {
        self.clock += 1;
        let t = match self.tables.iter().position(|t| t.plugin == pid && t.key == key) {
            Some(t) => t,
            None => {
                let fresh = Table { plugin: pid, key, last_used: 0, rows: Vec::new() };
                let same_plugin = self.tables.iter().filter(|t| t.plugin == pid).count();
                if same_plugin < MEMO_KEYS_PER_PLUGIN {
                    self.tables.push(fresh);
                    self.tables.len() - 1
                } else {
                    let (lru, _) = self
                        .tables
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| t.plugin == pid)
                        .min_by_key(|(_, t)| t.last_used)
                        .expect("a table of this plugin");
                    self.tables[lru] = fresh;
                    lru
                }
            }
        };
        self.tables[t].last_used = self.clock;
        t
    }

    /// The fused score pass of a parallel cycle: for memoized plugins whose NormalizeScore leaves
    /// scores unchanged (`plugins`: plugin, key, weight, in the profile's order), one parallel step
    /// does, per chunk of `nodes` ([`SCORE_CHUNKS_PER_THREAD`] per thread of `pool`, so the threads
    /// finish together even when chunks cost differently), every plugin's lookups, the scoring of its
    /// misses (`score(j, misses, out)` for plugin number `j`), the weighted sum into `totals` (the
    /// first plugin writes them) and the chunk's top for host selection. The misses' scores are kept
    /// afterwards, on the calling thread. Returns the index [`select_host_fast`] picks, or `None`
    /// when a plugin failed or gave a score out of [0, `MAX_NODE_SCORE`] (the caller's plain pass
    /// then reports it; `totals` are left partly written).
    ///
    /// [`select_host_fast`]: super::cycle::select_host_fast
    #[inline(never)]
    pub fn score_fused(
        &mut self,
        plugins: &[(PluginId, ScoreMemoKey, i64)],
        generation: &[u64],
        nodes: &[NodeIdx],
        totals: &mut [i64],
        pool: &rayon::ThreadPool,
        score: &FusedScorer<'_>,
    ) -> Option<usize> {
        assert!(!nodes.is_empty() && nodes.len() == totals.len(), "one total per scored node");
        let tabs: SmallVec<[usize; 4]> =
            plugins.iter().map(|(pid, key, _)| self.table_index(*pid, key.clone())).collect();
        for &t in &tabs {
            if self.tables[t].rows.len() < generation.len() {
                self.tables[t].rows.resize(generation.len(), (0, 0));
            }
        }
        let chunk = nodes.len().div_ceil(pool.current_num_threads().max(1) * SCORE_CHUNKS_PER_THREAD);
        let n_chunks = nodes.len().div_ceil(chunk);
        if self.chunks.len() < n_chunks {
            self.chunks.resize_with(n_chunks, FusedChunk::default);
        }
        let ScoreMemo { tables, chunks, .. } = self;
        let rows: SmallVec<[&[(u64, i64)]; 4]> = tabs.iter().map(|&t| &tables[t].rows[..generation.len()]).collect();
        let weights: SmallVec<[i64; 4]> = plugins.iter().map(|p| p.2).collect();
        pool.install(|| {
            totals
                .par_chunks_mut(chunk)
                .zip(nodes.par_chunks(chunk))
                .zip(chunks[..n_chunks].par_iter_mut())
                .enumerate()
                // One job per chunk, so a thread done early can take any one of them.
                .with_max_len(1)
                .for_each(|(c, ((totals, nodes), fc))| {
                    fc.run(c * chunk, nodes, totals, &rows, &weights, generation, score)
                })
        });
        drop(rows);
        let mut best: Option<(i64, u64, usize)> = None;
        let mut failed = false;
        for fc in &chunks[..n_chunks] {
            for &(j, node, s) in &fc.updates {
                tables[tabs[j as usize]].rows[node.ix()] = (generation[node.ix()], s);
            }
            failed |= fc.failed;
            if let Some(top) = fc.top {
                if best.is_none_or(|b| top.0 > b.0 || (top.0 == b.0 && top.1 < b.1)) {
                    best = Some(top);
                }
            }
        }
        if failed {
            return None;
        }
        best.map(|b| b.2)
    }
}

/// [`ScoreMemo::score_fused`]'s scorer: plugin number `j` scores `nodes` into `out`.
pub type FusedScorer<'a> = dyn Fn(usize, &[NodeIdx], &mut [i64]) -> Result<(), Status> + Sync + 'a;

/// Chunks of a fused score pass per thread: more than one, so a thread that finishes early takes
/// (steals) another and the threads end together when chunks cost differently (misses to score,
/// a core shared with other work); few, so the per-chunk overhead (a job, a top) stays small.
pub const SCORE_CHUNKS_PER_THREAD: usize = 4;

/// One chunk of [`ScoreMemo::score_fused`]: its buffers, the misses it scored (plugin number,
/// node, score), whether a plugin failed in it, and its top (highest total, then the
/// heap-preorder key and index of its first holder: [`super::cycle::chunk_top`]).
#[derive(Default)]
struct FusedChunk {
    scores: Vec<i64>,
    misses: Vec<NodeIdx>,
    miss_pos: Vec<u32>,
    miss_scores: Vec<i64>,
    updates: Vec<(u32, NodeIdx, i64)>,
    failed: bool,
    top: Option<(i64, u64, usize)>,
}

impl FusedChunk {
    /// Scores `nodes` (positions `base..` of the pass) for every plugin into `totals`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        base: usize,
        nodes: &[NodeIdx],
        totals: &mut [i64],
        rows: &[&[(u64, i64)]],
        weights: &[i64],
        generation: &[u64],
        score: &FusedScorer<'_>,
    ) {
        let FusedChunk { scores, misses, miss_pos, miss_scores, updates, failed, top } = self;
        updates.clear();
        *failed = false;
        *top = None;
        if scores.len() < nodes.len() {
            scores.resize(nodes.len(), 0);
        }
        let scores = &mut scores[..nodes.len()];
        for (j, (rows, &weight)) in rows.iter().zip(weights).enumerate() {
            misses.clear();
            miss_pos.clear();
            lookup(rows, generation, nodes, scores, 0, misses, miss_pos);
            if !misses.is_empty() {
                miss_scores.clear();
                miss_scores.resize(misses.len(), 0);
                if score(j, misses, miss_scores).is_err() {
                    *failed = true;
                    return;
                }
                for ((&n, &i), &s) in misses.iter().zip(miss_pos.iter()).zip(miss_scores.iter()) {
                    scores[i as usize] = s;
                    updates.push((j as u32, n, s));
                }
            }
            if super::cycle::accumulate(totals, scores, weight, j == 0) {
                *failed = true;
                return;
            }
        }
        *top = super::cycle::chunk_top(base, totals);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `lookup` against the plain loop: hits copied, misses (and their positions) listed in
        /// order after what the vectors already held.
        #[test]
        fn lookup_is_the_plain_loop(
            rows in proptest::collection::vec((0u64..3, -5i64..100), 1..80),
            gens in proptest::collection::vec(0u64..3, 80),
            picks in proptest::collection::vec(0usize..80, 0..120),
            first_pos in 0usize..1000,
            held in 0usize..3,
        ) {
            let generation = &gens[..rows.len()];
            let nodes: Vec<NodeIdx> = picks.iter().map(|&p| NodeIdx((p % rows.len()) as u32)).collect();
            let (mut misses, mut miss_pos) = (vec![NodeIdx(7); held], vec![9u32; held]);
            let mut out = vec![-1i64; nodes.len()];
            lookup(&rows, generation, &nodes, &mut out, first_pos, &mut misses, &mut miss_pos);
            let (mut want_misses, mut want_pos) = (vec![NodeIdx(7); held], vec![9u32; held]);
            for (i, &n) in nodes.iter().enumerate() {
                let (g, s) = rows[n.ix()];
                if g == generation[n.ix()] {
                    proptest::prop_assert_eq!(out[i], s);
                } else {
                    want_misses.push(n);
                    want_pos.push((first_pos + i) as u32);
                }
            }
            proptest::prop_assert_eq!(misses, want_misses);
            proptest::prop_assert_eq!(miss_pos, want_pos);
        }
    }

    proptest::proptest! {
        /// Over a run of cycles where rows change (a new generation) between cycles and keys
        /// alternate, the memo's scores are always the plain scorer's, looked up on one thread or
        /// in parallel chunks.
        #[test]
        fn memo_scores_as_the_plain_scorer(
            cycles in proptest::collection::vec(
                (proptest::collection::vec(0u32..20, 1..20), proptest::collection::vec(0usize..20, 0..4), 0i64..3),
                1..30,
            ),
        ) {
            // The "row": a value per node; a score is f(value, key).
            let f = |v: i64, key: i64| v * 7 + key;
            let mut values: Vec<i64> = (0..20).collect();
            let mut generation: Vec<u64> = (1..=20).collect();
            let mut next_gen = 21;
            let mut memo = ScoreMemo::default();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("rayon pool starts");
            for (c, (nodes, changed, key)) in cycles.into_iter().enumerate() {
                for c in changed {
                    values[c] += 1;
                    generation[c] = next_gen;
                    next_gen += 1;
                }
                let nodes: Vec<NodeIdx> = nodes.into_iter().map(NodeIdx).collect();
                let mut out = vec![-1; nodes.len()];
                // Every other cycle looks up in parallel chunks.
                let pool = (c % 2 == 1).then_some(&pool);
                memo.score(0, smallvec::smallvec![key], &generation, &nodes, &mut out, pool, |ns, o| {
                    for (n, o) in ns.iter().zip(o.iter_mut()) {
                        *o = f(values[n.ix()], key);
                    }
                    Ok(())
                })
                .expect("no error");
                let want: Vec<i64> = nodes.iter().map(|n| f(values[n.ix()], key)).collect();
                proptest::prop_assert_eq!(out, want);
            }
        }
    }

    proptest::proptest! {
        /// The fused pass (per chunk: lookups, misses, weighted totals, top) over a run of cycles
        /// where rows change and keys alternate gives the plain scorer's weighted totals and the
        /// index the tournament (`select_host`) picks, on pools of 1 to 3 threads; with a score out
        /// of range it gives `None`, and the memo still holds the plain scores after it.
        #[test]
        fn score_fused_is_the_plain_scorer(
            cycles in proptest::collection::vec(
                (
                    proptest::collection::vec(0u32..40, 1..40),
                    proptest::collection::vec(0usize..40, 0..6),
                    0i64..3,
                    proptest::bool::weighted(0.1),
                ),
                1..25,
            ),
            threads in 1usize..4,
            weights in (1i64..4, 0i64..3),
        ) {
            // Two plugins; a score is f(value, key, plugin) in 0..=4 (few values: many ties), or
            // out of range for plugin 1 on node 0 when `bad`.
            let f = |v: i64, key: i64, j: usize| (v * (j as i64 + 2) + key) % 5;
            let mut values: Vec<i64> = (0..40).collect();
            let mut generation: Vec<u64> = (1..=40).collect();
            let mut next_gen = 41;
            let mut memo = ScoreMemo::default();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool starts");
            let mut heap = Vec::new();
            for (nodes, changed, key, bad) in cycles {
                for c in changed {
                    values[c] += 1;
                    generation[c] = next_gen;
                    next_gen += 1;
                }
                if bad {
                    // Node 0's row moves, so its (bad) score is taken afresh.
                    generation[0] = next_gen;
                    next_gen += 1;
                }
                let nodes: Vec<NodeIdx> = nodes.into_iter().map(NodeIdx).collect();
                let plugins = [(0, smallvec::smallvec![key], weights.0), (1, smallvec::smallvec![key], weights.1)];
                let score = |j: usize, ns: &[NodeIdx], o: &mut [i64]| {
                    for (n, o) in ns.iter().zip(o.iter_mut()) {
                        *o = if bad && j == 1 && n.0 == 0 { -1 } else { f(values[n.ix()], key, j) };
                    }
                    Ok(())
                };
                let mut totals = vec![-7; nodes.len()];
                let best = memo.score_fused(&plugins, &generation, &nodes, &mut totals, &pool, &score);
                let want: Vec<i64> =
                    nodes.iter().map(|n| f(values[n.ix()], key, 0) * weights.0 + f(values[n.ix()], key, 1) * weights.1).collect();
                if bad && nodes.iter().any(|n| n.0 == 0) {
                    proptest::prop_assert_eq!(best, None);
                } else {
                    proptest::prop_assert_eq!(&totals, &want);
                    proptest::prop_assert_eq!(best, Some(crate::engine::cycle::select_host(&mut heap, &want)));
                }
                // The memo's rows are the plain scores (a bad score is kept as scored: the
                // plugin gives it again).
                for (j, (pid, k, _)) in plugins.iter().enumerate() {
                    let mut out = vec![0; nodes.len()];
                    memo.score(*pid, k.clone(), &generation, &nodes, &mut out, None, |ns, o| {
                        score(j, ns, o)
                    })
                    .expect("no error");
                    let plain: Vec<i64> = nodes
                        .iter()
                        .map(|n| if bad && j == 1 && n.0 == 0 { -1 } else { f(values[n.ix()], key, j) })
                        .collect();
                    proptest::prop_assert_eq!(out, plain);
                }
                if bad {
                    // The next cycle scores node 0 in range: its row moves (a memoized score
                    // depends on the row and the key alone).
                    generation[0] = next_gen;
                    next_gen += 1;
                }
            }
        }
    }

    #[test]
    fn keys_are_kept_per_plugin_up_to_the_limit() {
        let generation = vec![1u64, 2];
        let nodes = [NodeIdx(0), NodeIdx(1)];
        let mut memo = ScoreMemo::default();
        let mut calls = 0;
        let mut run_key = |memo: &mut ScoreMemo, key: i64| {
            let mut out = [0; 2];
            memo.score(0, smallvec::smallvec![key], &generation, &nodes, &mut out, None, |ns, o| {
                calls += ns.len();
                o.fill(key);
                Ok(())
            })
            .expect("no error");
            assert_eq!(out, [key, key]);
        };
        for key in 0..MEMO_KEYS_PER_PLUGIN as i64 {
            run_key(&mut memo, key);
        }
        // Every key is still there: no new scoring.
        for key in 0..MEMO_KEYS_PER_PLUGIN as i64 {
            run_key(&mut memo, key);
        }
        assert_eq!(calls, 2 * MEMO_KEYS_PER_PLUGIN);
        assert_eq!(memo.tables.len(), MEMO_KEYS_PER_PLUGIN);
    }
}
