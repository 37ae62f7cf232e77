//! The score memo: a score plugin whose Score depends only on a node's row and a per-pod key
//! ([`Plugin::score_memo_key`](crate::framework::Plugin::score_memo_key)) is scored once per row
//! generation and key. Pods of one template share a key, and between two visits of a node (the
//! filter pass rotates over the cluster) few rows change, so most cycles score only the rows that
//! moved. Exact: a row's generation changes with every change to the row and is never reused.

use crate::framework::{PluginId, ScoreMemoKey, Status};
use crate::snapshot::NodeIdx;
use rayon::prelude::*;

/// Keys kept per plugin (least recently used goes first): a workload's pod shapes in turn.
pub const MEMO_KEYS_PER_PLUGIN: usize = 4;

/// Copies the memoized score of each of `nodes` whose row generation is unchanged into `out`; the
/// others go to `misses`, with their position (`first_pos` + index) in `miss_pos`.
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
        if g == generation[n.ix()] {
            *o = s;
        } else {
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
        let ScoreMemo { tables, clock, misses, miss_pos, miss_scores } = self;
        let table = &mut tables[t];
        table.last_used = *clock;
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
