//! Running PreFilter and Filter as upstream's `frameworkImpl` does (`RunPreFilterPlugins`,
//! `RunFilterPlugins`), the diagnosis of a pod no node passed, and the nominated pods a filter
//! must count (`addGEPriorityPodsToNode`). The engine's filter pass and PostFilter plugins
//! (preemption's dry runs) both run filters through here.

use std::sync::Arc;

use super::profile::{timed, Point};
use super::{Code, CycleCx, CycleState, Framework, PluginId, Reject, Status};
use crate::snapshot::{NodeIdx, PodInfo, Snapshot, Sym};

/// A node rejected by a filter plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeFailure {
    pub node: NodeIdx,
    pub plugin: PluginId,
    pub reject: Reject,
}

/// Why a pod did not fit: the PreFilter rejection, or every evaluated node's first failing filter.
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    /// A PreFilter plugin rejected the pod for every node.
    pub pre_filter: Option<(PluginId, Status)>,
    /// Nodes outside a PreFilterResult (UnschedulableAndUnresolvable).
    pub pre_filter_excluded: usize,
    /// The plugins that narrowed the node set.
    pub pre_filter_result_plugins: Vec<PluginId>,
    pub failures: Vec<NodeFailure>,
    pub num_all_nodes: usize,
}

impl Diagnosis {
    /// The plugins that rejected the pod on at least one node (the queue's hint input).
    pub fn rejector_plugins(&self) -> Vec<PluginId> {
        // Failures come in runs of one plugin: each run adds its plugin once.
        let mut v: Vec<PluginId> = Vec::new();
        let mut last = None;
        for f in &self.failures {
            if last != Some(f.plugin) {
                last = Some(f.plugin);
                if !v.contains(&f.plugin) {
                    v.push(f.plugin);
                }
            }
        }
        v.extend(self.pre_filter.as_ref().map(|(p, _)| *p));
        v.extend(self.pre_filter_result_plugins.iter().copied());
        v.sort_unstable();
        v.dedup();
        v
    }

    /// `FitError.Error()`: "0/N nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    /// A PreFilter rejection gives its own message once ("0/N nodes are available: <reasons>.");
    /// otherwise each evaluated node's reasons are counted, and the nodes with no status of their
    /// own (outside a PreFilterResult) count under the framework's reason.
    pub fn message(&self, fw: &Framework, cx: CycleCx<'_>, state: &CycleState) -> String {
        if self.num_all_nodes == 0 {
            // `ErrNoNodesAvailable`: the cycle ends before PreFilter.
            return "no nodes available to schedule pods".to_string();
        }
        if let Some((_, st)) = &self.pre_filter {
            return format!("0/{} nodes are available: {}.", self.num_all_nodes, st.reasons.join(", "));
        }
        let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        let absent = self.num_all_nodes.saturating_sub(self.failures.len());
        if !self.pre_filter_result_plugins.is_empty() && absent > 0 {
            *counts.entry(self.absent_reason(fw)).or_default() += absent;
        }
        // A plugin's reasons depend on its rejection alone (not on the node): each distinct
        // rejection is worded once and counted as many times as nodes carry it.
        let mut distinct: std::collections::BTreeMap<(PluginId, Code, u64), usize> = std::collections::BTreeMap::new();
        // Consecutive failures mostly share their rejection: each run is counted into the map once.
        let mut run: Option<((PluginId, Code, u64), usize)> = None;
        for f in &self.failures {
            let key = (f.plugin, f.reject.code, f.reject.detail);
            match &mut run {
                Some((k, n)) if *k == key => *n += 1,
                _ => {
                    if let Some((k, n)) = run.replace((key, 1)) {
                        *distinct.entry(k).or_default() += n;
                    }
                }
            }
        }
        if let Some((k, n)) = run {
            *distinct.entry(k).or_default() += n;
        }
        for ((plugin, code, detail), n) in distinct {
            for r in fw.plugin(plugin).reasons(cx, state, Reject { code, detail }) {
                *counts.entry(r).or_default() += n;
            }
        }
        let mut parts: Vec<String> = counts.into_iter().map(|(r, n)| format!("{n} {r}")).collect();
        parts.sort();
        if parts.is_empty() {
            return format!("0/{} nodes are available:", self.num_all_nodes);
        }
        format!("0/{} nodes are available: {}.", self.num_all_nodes, parts.join(", "))
    }

    /// The status of nodes a PreFilterResult left out: "node(s) didn't satisfy plugin(s) [A B]"
    /// (plugin names sorted, as `sets.List`).
    pub fn absent_reason(&self, fw: &Framework) -> String {
        let mut names: Vec<&str> = self.pre_filter_result_plugins.iter().map(|p| fw.plugin(*p).name()).collect();
        names.sort_unstable();
        names.dedup();
        format!("node(s) didn't satisfy plugin(s) [{}]", names.join(" "))
    }
}

/// What the PreFilter plugins decided together: per plugin whether its Filter is skipped, the
/// node names a PreFilterResult narrowed the search to, and the plugins that narrowed it.
pub type PreFilterOutcome = (Vec<bool>, Option<Vec<Sym>>, Vec<PluginId>);

impl Framework {
    /// Runs the PreFilter plugins. Returns the plugins whose Filter is skipped, and the node-name
    /// restriction, or the rejection.
    pub fn run_pre_filter(
        &self,
        cx: CycleCx<'_>,
        state: &mut CycleState,
    ) -> Result<PreFilterOutcome, (PluginId, Status)> {
        let mut skip = vec![false; self.plugins.len()];
        let mut names: Option<Vec<Sym>> = None;
        let mut narrowing = Vec::new();
        // An Unschedulable status lets the later plugins run (preemption needs their state); the
        // last one is returned unless a later plugin ends PreFilter first.
        let mut unschedulable: Option<(PluginId, Status)> = None;
        for &pid in &self.pre_filter {
            let (st, res) = timed(pid, Point::PreFilter, || self.plugin(pid).pre_filter(cx, state));
            match st.code {
                Code::Success => {}
                Code::Skip => {
                    skip[pid] = true;
                    continue;
                }
                Code::Unschedulable => {
                    unschedulable = Some((pid, st.with_plugin(self.plugin(pid).name())));
                    continue;
                }
                Code::UnschedulableAndUnresolvable => return Err((pid, st.with_plugin(self.plugin(pid).name()))),
                _ => {
                    let name = self.plugin(pid).name();
                    let msg = format!("running PreFilter plugin {name:?}: {}", st.reasons.join(", "));
                    return Err((pid, Status::new(Code::Error, msg).with_plugin(name)));
                }
            }
            if let Some(n) = res.node_names {
                narrowing.push(pid);
                let merged = match names {
                    None => n,
                    Some(prev) => prev.into_iter().filter(|x| n.contains(x)).collect(),
                };
                if merged.is_empty() {
                    // The framework's own status (no plugin), as `RunPreFilterPlugins` words it.
                    let mut ps: Vec<&str> = narrowing.iter().map(|p| self.plugin(*p).name()).collect();
                    ps.sort_unstable();
                    ps.dedup();
                    let msg = if ps.len() == 1 {
                        format!("node(s) didn't satisfy plugin {}", ps[0])
                    } else {
                        format!("node(s) didn't satisfy plugin(s) [{}] simultaneously", ps.join(" "))
                    };
                    return Err((pid, Status::new(Code::UnschedulableAndUnresolvable, msg)));
                }
                names = Some(merged);
            }
        }
        if let Some(rejection) = unschedulable {
            return Err(rejection);
        }
        Ok((skip, names, narrowing))
    }
}

/// Working buffers of [`filter_nodes_with`], kept across the blocks of a cycle.
#[derive(Default)]
pub struct FilterScratch {
    alive: Vec<NodeIdx>,
    pos: Vec<u32>,
    out: Vec<Option<Reject>>,
}

impl FilterScratch {
    /// After [`filter_nodes_with`] returned true: the nodes of its block that passed every plugin,
    /// in block order, with their positions in the block.
    pub fn survivors(&self) -> (&[NodeIdx], &[u32]) {
        (&self.alive, &self.pos)
    }

    /// Sets the survivors of a block, the nodes that `passes`, as [`filter_nodes_with`] leaves
    /// them (for tests that stand in for the filter plugins).
    #[cfg(test)]
    pub(crate) fn set_survivors(&mut self, nodes: &[NodeIdx], passes: impl Fn(NodeIdx) -> bool) {
        self.alive.clear();
        self.pos.clear();
        for (r, &n) in nodes.iter().enumerate() {
            if passes(n) {
                self.alive.push(n);
                self.pos.push(r as u32);
            }
        }
    }
}

/// Runs the filter plugins in order over `nodes`; `verdicts[i]` is the first rejection of
/// `nodes[i]` (or `None`). A node stops at its first failing plugin, as upstream.
pub fn filter_nodes(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    skip: &[bool],
    nodes: &[NodeIdx],
    verdicts: &mut Vec<Option<(PluginId, Reject)>>,
) {
    if !filter_nodes_with(fw, cx, state, skip, nodes, verdicts, &mut FilterScratch::default()) {
        verdicts.resize(nodes.len(), None);
    }
}

/// [`filter_nodes`] with caller-owned working buffers (no allocation once they have grown), except
/// that when no node is rejected it returns false and leaves `verdicts` empty (the common block:
/// no verdict to write or read). `#[inline]`: the engine's filter pass calls it per block from
/// another module.
#[inline]
pub fn filter_nodes_with(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    skip: &[bool],
    nodes: &[NodeIdx],
    verdicts: &mut Vec<Option<(PluginId, Reject)>>,
    scratch: &mut FilterScratch,
) -> bool {
    verdicts.clear();
    run_filters(fw, cx, state, skip, nodes, Some(verdicts), scratch)
}

/// [`filter_nodes_with`] for a caller that needs only which nodes pass, not why the others
/// failed: no verdict is written. Returns whether a node was rejected; then the nodes that
/// passed are [`FilterScratch::survivors`].
#[inline]
pub fn filter_nodes_passing(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    skip: &[bool],
    nodes: &[NodeIdx],
    scratch: &mut FilterScratch,
) -> bool {
    run_filters(fw, cx, state, skip, nodes, None, scratch)
}

/// The filter plugins over a block, as [`filter_nodes_with`] (`verdicts` written when given).
#[inline]
fn run_filters(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    skip: &[bool],
    nodes: &[NodeIdx],
    mut verdicts: Option<&mut Vec<Option<(PluginId, Reject)>>>,
    scratch: &mut FilterScratch,
) -> bool {
    let FilterScratch { alive, pos, out } = scratch;
    // Until a plugin rejects something, every node is alive: the plugins read `nodes` itself, and
    // `alive` and `pos` are built only at the first compaction (most blocks never have one).
    let mut compacted = false;
    // `out` is all `None` and as long as the alive nodes before every plugin: reset only after a
    // plugin that rejected something.
    out.clear();
    out.resize(nodes.len(), None);
    for &pid in &fw.filter {
        let live: &[NodeIdx] = if compacted { alive } else { nodes };
        if skip[pid] || live.is_empty() {
            continue;
        }
        let plugin = fw.plugin(pid);
        let rejected = timed(pid, Point::Filter, || {
            plugin.filter_any(cx, state, live, out).unwrap_or_else(|| {
                plugin.filter(cx, state, live, out);
                out.iter().any(Option::is_some)
            })
        });
        if !rejected {
            // Most plugins reject nothing for most pods: skip the compaction.
            continue;
        }
        let w = if compacted {
            compact(pid, out, alive, pos, verdicts.as_deref_mut().map(|v| &mut v[..]))
        } else {
            compacted = true;
            first_compaction(pid, nodes, out, alive, pos, verdicts.as_deref_mut())
        };
        out.clear();
        out.resize(w, None);
    }
    compacted
}

/// The first plugin that rejected a node of the block: writes the verdicts of its rejections
/// (`verdicts`, when given, cleared) and keeps the survivors of `nodes`, with their positions, in
/// `alive` and `pos`; returns how many survived. Reads `nodes` directly (no copy of the block
/// into `alive` first, no identity `pos`).
#[inline]
fn first_compaction(
    pid: PluginId,
    nodes: &[NodeIdx],
    out: &[Option<Reject>],
    alive: &mut Vec<NodeIdx>,
    pos: &mut Vec<u32>,
    verdicts: Option<&mut Vec<Option<(PluginId, Reject)>>>,
) -> usize {
    alive.clear();
    alive.resize(nodes.len(), NodeIdx(0));
    pos.clear();
    pos.resize(nodes.len(), 0);
    let mut w = 0;
    match verdicts {
        Some(verdicts) => {
            verdicts.clear();
            verdicts.resize(nodes.len(), None);
            for (r, ((&n, o), v)) in nodes.iter().zip(out).zip(verdicts.iter_mut()).enumerate() {
                match *o {
                    Some(rej) => *v = Some((pid, rej)),
                    None => {
                        alive[w] = n;
                        pos[w] = r as u32;
                        w += 1;
                    }
                }
            }
        }
        None => {
            // Branch-free: every node is written at the next slot, which only a survivor keeps.
            for (r, (&n, o)) in nodes.iter().zip(out).enumerate() {
                alive[w] = n;
                pos[w] = r as u32;
                w += o.is_none() as usize;
            }
        }
    }
    alive.truncate(w);
    pos.truncate(w);
    w
}

/// A later plugin's rejections among the alive nodes: their verdicts (at their block positions)
/// written when `verdicts` is given, the survivors compacted in place; returns how many survived.
#[inline]
fn compact(
    pid: PluginId,
    out: &[Option<Reject>],
    alive: &mut Vec<NodeIdx>,
    pos: &mut Vec<u32>,
    mut verdicts: Option<&mut [Option<(PluginId, Reject)>]>,
) -> usize {
    let mut w = 0;
    for r in 0..alive.len() {
        match out[r] {
            Some(rej) => {
                if let Some(v) = verdicts.as_deref_mut() {
                    v[pos[r] as usize] = Some((pid, rej));
                }
            }
            None => {
                alive[w] = alive[r];
                pos[w] = pos[r];
                w += 1;
            }
        }
    }
    alive.truncate(w);
    pos.truncate(w);
    w
}

/// [`filter_nodes`] for a single node without allocating (preemption's dry runs call it often).
pub fn filter_node(
    fw: &Framework,
    cx: CycleCx<'_>,
    state: &CycleState,
    skip: &[bool],
    node: NodeIdx,
) -> Option<(PluginId, Reject)> {
    let nodes = [node];
    for &pid in &fw.filter {
        if skip[pid] {
            continue;
        }
        let mut out = [None];
        fw.plugin(pid).filter(cx, state, &nodes, &mut out);
        if let Some(rej) = out[0] {
            return Some((pid, rej));
        }
    }
    None
}

/// Nominated pods on `node` that count when filtering `pod`: priority >= the pod's, not the pod.
pub fn nominated_for(snap: &Snapshot, pod: &PodInfo, node: Sym) -> Vec<Arc<PodInfo>> {
    snap.nominated
        .get(&node)
        .map(|v| v.iter().filter(|p| p.uid != pod.uid && p.priority >= pod.priority).cloned().collect())
        .unwrap_or_default()
}
