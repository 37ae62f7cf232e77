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

/// The failed nodes of a filter pass, in order, each with its first failing filter: upstream's
/// `NodeToStatus`, kept compact. Consecutive nodes that failed the same way (the same plugin and
/// `Reject`) share one run, so the failures of a pass where one plugin rejects every node the same
/// way (a preemptor on a full cluster) are a list of node ids and one run: the message, the
/// rejecting plugins and the preemption candidates' filter read the runs, not every node, and
/// a node's status is rebuilt only when read ([`Failures::get`], [`Failures::iter`]). Runs are
/// maximal (a push that matches the last run extends it), so two lists are equal exactly when
/// their failures are, node by node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    nodes: Vec<NodeIdx>,
    runs: Vec<FailureRun>,
}

/// Nodes `nodes[previous run's end..end]` of a [`Failures`] failed at `plugin` with `reject`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FailureRun {
    end: usize,
    plugin: PluginId,
    reject: Reject,
}

impl Failures {
    pub fn new() -> Self {
        Failures::default()
    }

    /// How many nodes failed.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn clear(&mut self) {
        self.nodes.clear();
        self.runs.clear();
    }

    /// Appends a failure (it joins the last run when it failed the same way).
    #[inline]
    pub fn push(&mut self, f: NodeFailure) {
        self.push_parts(f.node, f.plugin, f.reject);
    }

    /// [`Failures::push`] from its parts.
    #[inline]
    pub fn push_parts(&mut self, node: NodeIdx, plugin: PluginId, reject: Reject) {
        self.nodes.push(node);
        let end = self.nodes.len();
        match self.runs.last_mut() {
            Some(r) if r.plugin == plugin && r.reject == reject => r.end = end,
            _ => self.runs.push(FailureRun { end, plugin, reject }),
        }
    }

    /// Appends a block of failures at once: `nodes[k]` rejected by `plugin` with `rejects[k]`,
    /// every entry `Some` (a block of the filter pass that one plugin rejected whole). The node
    /// ids are copied whole and a run is opened only where the rejection changes, so it equals
    /// pushing them one by one (proptest `failures_are_the_eager_list`).
    pub fn push_rejected(&mut self, plugin: PluginId, nodes: &[NodeIdx], rejects: &[Option<Reject>]) {
        assert_eq!(nodes.len(), rejects.len(), "one rejection per node");
        let base = self.nodes.len();
        self.nodes.extend_from_slice(nodes);
        // Each maximal stretch of equal rejections is one run: found by comparing each verdict
        // with the stretch's first (a rejection is unwrapped once per stretch, not per node).
        let mut k = 0;
        while k < rejects.len() {
            let first = rejects[k];
            let reject = first.expect("every node of the block was rejected");
            let e = k + 1 + rejects[k + 1..].iter().position(|o| *o != first).unwrap_or(rejects.len() - k - 1);
            match self.runs.last_mut() {
                // At the block's first node, the last run before it may continue.
                Some(l) if k == 0 && l.plugin == plugin && l.reject == reject => l.end = base + e,
                _ => self.runs.push(FailureRun { end: base + e, plugin, reject }),
            }
            k = e;
        }
    }

    /// Appends the first `count` failures of `other` (node ids copied whole, runs joined at the
    /// seam).
    pub fn extend_prefix(&mut self, other: &Failures, count: usize) {
        if count == 0 {
            return;
        }
        let base = self.nodes.len();
        self.nodes.extend_from_slice(&other.nodes[..count]);
        for r in &other.runs {
            let from = self.runs.last().map_or(0, |l| l.end);
            let end = base + r.end.min(count);
            match self.runs.last_mut() {
                Some(l) if l.plugin == r.plugin && l.reject == r.reject => l.end = end,
                _ if end > from => self.runs.push(FailureRun { end, ..*r }),
                _ => {}
            }
            if r.end >= count {
                break;
            }
        }
    }

    /// Appends every failure of `other`.
    pub fn extend_from(&mut self, other: &Failures) {
        self.extend_prefix(other, other.len());
    }

    /// The failed nodes, in order.
    pub fn nodes(&self) -> &[NodeIdx] {
        &self.nodes
    }

    /// Whether `node` failed.
    pub fn contains_node(&self, node: NodeIdx) -> bool {
        self.nodes.contains(&node)
    }

    /// The runs in order: the plugin, its rejection, and the nodes that failed so.
    pub fn runs(&self) -> impl Iterator<Item = (PluginId, Reject, &[NodeIdx])> + '_ {
        let mut from = 0;
        self.runs.iter().map(move |r| {
            let nodes = &self.nodes[from..r.end];
            from = r.end;
            (r.plugin, r.reject, nodes)
        })
    }

    /// The `k`-th failure.
    pub fn get(&self, k: usize) -> NodeFailure {
        let r = &self.runs[self.runs.partition_point(|r| r.end <= k)];
        NodeFailure { node: self.nodes[k], plugin: r.plugin, reject: r.reject }
    }

    /// Every failure once, from the `k`-th on and then from the first (`get(k % len)`,
    /// `get((k + 1) % len)`, ...): a walk from an offset, the run found once rather than searched
    /// per failure (proptest `wrapping_walk_is_get`).
    pub fn iter_wrapping_from(&self, k: usize) -> impl Iterator<Item = NodeFailure> + '_ {
        let n = self.nodes.len();
        let mut at = if n == 0 { 0 } else { k % n };
        let mut run = self.runs.partition_point(|r| r.end <= at);
        (0..n).map(move |_| {
            if at == n {
                (at, run) = (0, 0);
            }
            while self.runs[run].end <= at {
                run += 1;
            }
            let r = &self.runs[run];
            let f = NodeFailure { node: self.nodes[at], plugin: r.plugin, reject: r.reject };
            at += 1;
            f
        })
    }

    /// Every failure, in order.
    pub fn iter(&self) -> impl Iterator<Item = NodeFailure> + '_ {
        self.runs()
            .flat_map(|(plugin, reject, nodes)| nodes.iter().map(move |&node| NodeFailure { node, plugin, reject }))
    }

    /// Every failure, listed.
    pub fn to_vec(&self) -> Vec<NodeFailure> {
        self.iter().collect()
    }
}

impl FromIterator<NodeFailure> for Failures {
    fn from_iter<I: IntoIterator<Item = NodeFailure>>(iter: I) -> Self {
        let mut out = Failures::new();
        for f in iter {
            out.push(f);
        }
        out
    }
}

impl From<Vec<NodeFailure>> for Failures {
    fn from(v: Vec<NodeFailure>) -> Self {
        v.into_iter().collect()
    }
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
    pub failures: Failures,
    pub num_all_nodes: usize,
}

impl Diagnosis {
    /// The plugins that rejected the pod on at least one node (the queue's hint input).
    pub fn rejector_plugins(&self) -> Vec<PluginId> {
        // Each run of the failures adds its plugin once.
        let mut v: Vec<PluginId> = Vec::new();
        for (plugin, _, _) in self.failures.runs() {
            if !v.contains(&plugin) {
                v.push(plugin);
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
        // Each run of the failures (nodes that failed the same way) is counted into the map once.
        for (plugin, reject, nodes) in self.failures.runs() {
            *distinct.entry((plugin, reject.code, reject.detail)).or_default() += nodes.len();
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
    /// The first rejecting plugin's output over the whole block, while it is the only plugin
    /// that rejected a node of the block (`first_plugin` is `Some`): the block's verdicts are
    /// then `(first_plugin, first[k])`, not written out per node ([`FilterScratch::verdicts`]).
    first: Vec<Option<Reject>>,
    first_plugin: Option<PluginId>,
}

/// A block's verdicts after [`filter_nodes_lazy`] rejected a node of it.
pub enum BlockVerdicts<'a> {
    /// One plugin rejected nodes of the block, the others none: node `k`'s verdict is the
    /// plugin's rejection `rejects[k]` (or it passed).
    One(PluginId, &'a [Option<Reject>]),
    /// Several plugins rejected: node `k`'s first rejection.
    Many(&'a [Option<(PluginId, Reject)>]),
}

impl BlockVerdicts<'_> {
    /// Node `k`'s first rejection, `None` when it passed.
    #[inline]
    pub fn get(&self, k: usize) -> Option<(PluginId, Reject)> {
        match self {
            BlockVerdicts::One(pid, rejects) => rejects[k].map(|r| (*pid, r)),
            BlockVerdicts::Many(v) => v[k],
        }
    }
}

impl FilterScratch {
    /// After [`filter_nodes_lazy`] returned true with `verdicts`: the block's verdicts.
    pub fn verdicts<'a>(&'a self, verdicts: &'a [Option<(PluginId, Reject)>]) -> BlockVerdicts<'a> {
        match self.first_plugin {
            Some(pid) => BlockVerdicts::One(pid, &self.first),
            None => BlockVerdicts::Many(verdicts),
        }
    }

    /// Writes out the verdicts of a block that only one plugin rejected (`verdicts` empty until
    /// then); afterwards they are all in `verdicts`.
    fn materialize(&mut self, verdicts: &mut Vec<Option<(PluginId, Reject)>>) {
        if let Some(pid) = self.first_plugin.take() {
            verdicts.clear();
            verdicts.extend(self.first.iter().map(|o| o.map(|r| (pid, r))));
        }
    }

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
    let rejected = run_filters(fw, cx, state, skip, nodes, Some(&mut *verdicts), scratch);
    if rejected {
        scratch.materialize(verdicts);
    }
    rejected
}

/// [`filter_nodes_with`], except that a block only one plugin rejected nodes of keeps that
/// plugin's output as its verdicts (no verdict written per node): read them with
/// [`FilterScratch::verdicts`]. The engine's filter pass lists failures from it.
#[inline]
pub fn filter_nodes_lazy(
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
    let FilterScratch { alive, pos, out, first, first_plugin } = scratch;
    *first_plugin = None;
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
            if let (Some(first_pid), Some(v)) = (first_plugin.take(), verdicts.as_deref_mut()) {
                // A second plugin rejects: the first one's verdicts are written out now.
                v.clear();
                v.extend(first.iter().map(|o| o.map(|r| (first_pid, r))));
            }
            compact(pid, out, alive, pos, verdicts.as_deref_mut().map(|v| &mut v[..]))
        } else {
            compacted = true;
            // The first plugin's output stands for the block's verdicts (kept, not written out
            // per node) until another plugin rejects a node.
            let w = first_compaction(nodes, out, alive, pos);
            if verdicts.is_some() {
                std::mem::swap(out, first);
                *first_plugin = Some(pid);
            }
            w
        };
        out.clear();
        out.resize(w, None);
    }
    compacted
}

/// The first plugin that rejected a node of the block: keeps the survivors of `nodes`, with their
/// positions, in `alive` and `pos`; returns how many survived. Reads `nodes` directly (no copy of
/// the block into `alive` first, no identity `pos`). The rejections stay in `out` (the caller
/// keeps them as the block's verdicts).
#[inline]
fn first_compaction(nodes: &[NodeIdx], out: &[Option<Reject>], alive: &mut Vec<NodeIdx>, pos: &mut Vec<u32>) -> usize {
    alive.clear();
    alive.resize(nodes.len(), NodeIdx(0));
    pos.clear();
    pos.resize(nodes.len(), 0);
    let mut w = 0;
    // Branch-free: every node is written at the next slot, which only a survivor keeps.
    for (r, (&n, o)) in nodes.iter().zip(out).enumerate() {
        alive[w] = n;
        pos[w] = r as u32;
        w += o.is_none() as usize;
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn failure(node: u32, plugin: usize, unresolvable: bool, detail: u64) -> NodeFailure {
        let reject = if unresolvable { Reject::unresolvable(detail) } else { Reject::unschedulable(detail) };
        NodeFailure { node: NodeIdx(node), plugin, reject }
    }

    fn arb_failures() -> impl Strategy<Value = Vec<NodeFailure>> {
        // Few distinct rejections, so runs are long and joined at seams as often as not.
        proptest::collection::vec(
            (0u32..40, 0usize..3, proptest::bool::weighted(0.2), 0u64..3).prop_map(|(n, p, u, d)| failure(n, p, u, d)),
            0..60,
        )
    }

    proptest! {
        /// The run-length failures read back exactly as the eager list they were built from: node
        /// by node (`iter`, `get`), in length, in which nodes failed, in the plugins that rejected
        /// (`Diagnosis::rejector_plugins`) and in the count of each distinct rejection (what
        /// `Diagnosis::message` words); built by pushes or by a prefix of another list.
        #[test]
        fn failures_are_the_eager_list(a in arb_failures(), b in arb_failures(), cut in 0usize..61, probe in 0u32..40) {
            let count = cut.min(b.len());
            let mut built: Failures = a.iter().copied().collect();
            built.extend_prefix(&Failures::from(b.clone()), count);
            let eager: Vec<NodeFailure> = a.iter().chain(&b[..count]).copied().collect();
            prop_assert_eq!(built.to_vec(), eager.clone());
            prop_assert_eq!(&built, &Failures::from(eager.clone()));
            prop_assert_eq!(built.len(), eager.len());
            for (k, f) in eager.iter().enumerate() {
                prop_assert_eq!(built.get(k), *f);
            }
            prop_assert_eq!(built.contains_node(NodeIdx(probe)), eager.iter().any(|f| f.node == NodeIdx(probe)));
            let mut plugins: Vec<PluginId> = eager.iter().map(|f| f.plugin).collect();
            plugins.sort_unstable();
            plugins.dedup();
            let diag = Diagnosis { failures: built.clone(), num_all_nodes: 40, ..Diagnosis::default() };
            prop_assert_eq!(diag.rejector_plugins(), plugins);
            let mut want = std::collections::BTreeMap::new();
            for f in &eager {
                *want.entry((f.plugin, f.reject.code, f.reject.detail)).or_insert(0usize) += 1;
            }
            let mut got = std::collections::BTreeMap::new();
            for (plugin, reject, nodes) in built.runs() {
                prop_assert!(!nodes.is_empty());
                *got.entry((plugin, reject.code, reject.detail)).or_insert(0usize) += nodes.len();
            }
            prop_assert_eq!(got, want);
        }

        /// The walk from an offset is `get` at every position from there, wrapping.
        #[test]
        fn wrapping_walk_is_get(a in arb_failures(), k in 0usize..100) {
            let built: Failures = a.iter().copied().collect();
            let n = built.len();
            let walked: Vec<NodeFailure> = built.iter_wrapping_from(k).collect();
            let got: Vec<NodeFailure> = (0..n).map(|i| built.get((k + i) % n)).collect();
            prop_assert_eq!(walked, got);
        }

        /// A block one plugin rejected whole, appended at once ([`Failures::push_rejected`]), is
        /// the same list (runs included: `==` compares them) as its failures pushed one by one,
        /// after any list and before more pushes.
        #[test]
        fn push_rejected_is_the_pushes(
            a in arb_failures(),
            block in proptest::collection::vec((0u32..40, proptest::bool::weighted(0.2), 0u64..3), 0..30),
            plugin in 0usize..3,
            c in arb_failures(),
        ) {
            let nodes: Vec<NodeIdx> = block.iter().map(|&(n, _, _)| NodeIdx(n)).collect();
            let rejects: Vec<Option<Reject>> =
                block.iter().map(|&(_, u, d)| Some(failure(0, plugin, u, d).reject)).collect();
            let mut built: Failures = a.iter().copied().collect();
            built.push_rejected(plugin, &nodes, &rejects);
            for f in &c {
                built.push(*f);
            }
            let eager: Vec<NodeFailure> = a
                .iter()
                .copied()
                .chain(block.iter().map(|&(n, u, d)| failure(n, plugin, u, d)))
                .chain(c.iter().copied())
                .collect();
            prop_assert_eq!(built.to_vec(), eager.clone());
            prop_assert_eq!(built, Failures::from(eager));
        }
    }
}
