//! PodTopologySpread: `DoNotSchedule` constraints filter on skew, `ScheduleAnyway` constraints
//! (or the default constraints) score. `plugins/podtopologyspread/{common,filtering,scoring}.go`.
//!
//! Counts come from the snapshot's pod index ([`crate::snapshot::pod_index`]): per-node and
//! per-domain counts of the pods each constraint's selector matches, kept up to date as pods are
//! placed. When every node carrying the topology key is eligible (the common case: no node
//! inclusion policy narrows the nodes) the per-domain counters are read as they are; otherwise
//! the per-node counts are summed over the eligible nodes (O(nodes), integer arrays). Filter's
//! common narrowed case (a hostname-like key, one node per domain, only `nodeTaintsPolicy: Honor`
//! narrowing) allocates nothing per node: PreFilter takes the minimum in one pass over the
//! columns and Filter reads the pod index's per-node counts ([`eligible_node_min`]). When every
//! node carries the key, PreFilter works on row bitsets instead (the query's nodes with a matching
//! pod, the nodes of each untolerated taint set: [`free_eligible_rows`], O(nodes / 64)), and at
//! limit 0 offers the free eligible nodes as the sparse pass's candidates, without the untolerated
//! nodes when TaintToleration rejects them.

#[cfg(test)]
mod tests;

use crate::framework::sign::{Sign, SignBuilder};
use serde_json::Value;

use super::helper::{ResolvedLabelSet, ResolvedSelector};
use crate::framework::{Code, CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status, MAX_NODE_SCORE};
use crate::snapshot::bits;
use crate::snapshot::pod_index::{self, PodQuery, TopologyKeyIndex, NO_DOMAIN};
use crate::snapshot::{
    tolerations_tolerate, InclusionPolicy, Interner, LabelSelector, NamespaceSet, NodeIdx, PodInfo, PodSelector,
    Snapshot, SpreadConstraint, Sym, TaintEffect, WhenUnsatisfiable,
};

pub const NAME: &str = "PodTopologySpread";
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str = "node(s) didn't match pod topology spread constraints";
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const DETAIL_LABEL: u64 = 0;
const DETAIL_SKEW: u64 = 1;

/// How the plugin picks constraints for pods that define none.
#[derive(Clone, Debug, PartialEq)]
pub struct PodTopologySpread {
    /// Default constraints (selector ignored: it is deduced per pod).
    pub default_constraints: Vec<SpreadConstraint>,
    /// `defaultingType: System`: nodes missing a default key still get hostname spreading.
    pub system_defaulted: bool,
}

/// Upstream `systemDefaultConstraints`: hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway.
pub fn system_default_constraints(hostname_key: Sym, zone_key: Sym) -> Vec<SpreadConstraint> {
    vec![
        SpreadConstraint::new(3, hostname_key, WhenUnsatisfiable::ScheduleAnyway, LabelSelector::everything()),
        SpreadConstraint::new(5, zone_key, WhenUnsatisfiable::ScheduleAnyway, LabelSelector::everything()),
    ]
}

/// Compiles `PodTopologySpreadArgs.defaultConstraints` (already validated by the config loader).
pub fn compile_default_constraints(raw: &[Value], interner: &mut Interner) -> Result<Vec<SpreadConstraint>, String> {
    raw.iter()
        .enumerate()
        .map(|(i, v)| {
            let bad = |f: &str| format!("defaultConstraints[{i}].{f} is invalid");
            let max_skew = v.get("maxSkew").and_then(Value::as_i64).ok_or_else(|| bad("maxSkew"))? as i32;
            let key = v.get("topologyKey").and_then(Value::as_str).ok_or_else(|| bad("topologyKey"))?;
            let when = match v.get("whenUnsatisfiable").and_then(Value::as_str) {
                Some("DoNotSchedule") => WhenUnsatisfiable::DoNotSchedule,
                Some("ScheduleAnyway") => WhenUnsatisfiable::ScheduleAnyway,
                _ => return Err(bad("whenUnsatisfiable")),
            };
            let mut c = SpreadConstraint::new(max_skew, interner.intern(key), when, LabelSelector::everything());
            if let Some(m) = v.get("minDomains").and_then(Value::as_i64) {
                c.min_domains = m as i32;
            }
            let policy = |f: &str, d: InclusionPolicy| match v.get(f).and_then(Value::as_str) {
                Some("Honor") => Ok(InclusionPolicy::Honor),
                Some("Ignore") => Ok(InclusionPolicy::Ignore),
                None => Ok(d),
                Some(_) => Err(bad(f)),
            };
            c.node_affinity_policy = policy("nodeAffinityPolicy", InclusionPolicy::Honor)?;
            c.node_taints_policy = policy("nodeTaintsPolicy", InclusionPolicy::Ignore)?;
            Ok(c)
        })
        .collect()
}

/// The query that counts the pods `c` selects for `pod` (same namespace, not terminating). Must
/// match what [`pod_index::queries_of`] registers.
pub fn constraint_query(pod: &PodInfo, c: &SpreadConstraint) -> PodQuery {
    PodQuery::single(PodSelector { namespaces: NamespaceSet::only(pod.namespace), labels: c.selector.clone() }, false)
}

impl PodTopologySpread {
    /// `getConstraints` / `buildDefaultConstraints`: the pod's constraints of kind `when`, or the
    /// default ones with the pod's default selector. Also whether they are the system defaults.
    pub fn constraints(&self, snap: &Snapshot, pod: &PodInfo, when: WhenUnsatisfiable) -> Vec<SpreadConstraint> {
        if !pod.constraints.topology_spread.is_empty() {
            return pod.constraints.topology_spread.iter().filter(|c| c.when_unsatisfiable == when).cloned().collect();
        }
        let defaults: Vec<&SpreadConstraint> =
            self.default_constraints.iter().filter(|c| c.when_unsatisfiable == when).collect();
        if defaults.is_empty() {
            return Vec::new();
        }
        let Some(sel) = snap.default_spread_selector(pod) else { return Vec::new() };
        defaults.into_iter().map(|c| SpreadConstraint { selector: sel.labels.clone(), ..c.clone() }).collect()
    }
}

impl PodTopologySpread {
    /// The plugin as `PodTopologySpreadArgs` configure it: the system default constraints
    /// (hostname maxSkew 3, zone maxSkew 5) or the listed ones (already validated by the config
    /// loader).
    pub fn from_args(args: &crate::config::PodTopologySpreadArgs, interner: &mut Interner) -> Result<Self, String> {
        let system = args.defaulting_type == crate::config::DefaultingType::System;
        let default_constraints = if system {
            system_default_constraints(
                interner.intern("kubernetes.io/hostname"),
                interner.intern("topology.kubernetes.io/zone"),
            )
        } else {
            compile_default_constraints(&args.default_constraints, interner)?
        };
        Ok(PodTopologySpread { default_constraints, system_defaulted: system })
    }
}

/// One spread constraint of a pod and the skew it has now (no incoming pod).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstraintSkew {
    pub constraint: SpreadConstraint,
    /// The constraint is one of the plugin's default constraints (the pod has none of its own).
    pub defaulted: bool,
    /// max - min matching pods over the eligible domains (min 0 when fewer than `minDomains`
    /// domains are eligible); 0 when no domain is eligible.
    pub skew: i64,
}

/// The skew each of `pod`'s spread constraints has in `snap` now, as the plugin computes it for
/// an incoming pod without the pod itself (`calPreFilterState`'s counts, `minMatchNum`): matching
/// pods (same namespace, selector, not terminating) are counted per domain over the nodes that
/// carry every key of the pod's constraints of that kind and pass both inclusion policies for
/// `pod`. `plugin` gives the default constraints (for a pod without its own) and the System
/// defaulting's key rule; `None` when the profile does not enable PodTopologySpread.
pub fn constraint_skews(plugin: Option<&PodTopologySpread>, snap: &Snapshot, pod: &PodInfo) -> Vec<ConstraintSkew> {
    let explicit = !pod.constraints.topology_spread.is_empty();
    let mut out = Vec::new();
    for when in [WhenUnsatisfiable::DoNotSchedule, WhenUnsatisfiable::ScheduleAnyway] {
        let cs: Vec<SpreadConstraint> = match plugin {
            Some(p) => p.constraints(snap, pod, when),
            None => pod.constraints.topology_spread.iter().filter(|c| c.when_unsatisfiable == when).cloned().collect(),
        };
        if cs.is_empty() {
            continue;
        }
        // Filter requires every key on a node; Score too, except for System-defaulted constraints.
        let require_all =
            when == WhenUnsatisfiable::DoNotSchedule || explicit || plugin.is_none_or(|p| !p.system_defaulted);
        let domains: Vec<KeyDomains> = cs.iter().map(|c| KeyDomains::new(snap, c.topology_key)).collect();
        for (i, c) in cs.iter().enumerate() {
            if let Some((FilterCounts::EligibleNode { query, taints_ok }, min, num, _)) =
                eligible_node_counts(snap, pod, c, &cs, &domains, i)
            {
                // One node per domain, narrowed by the taint policy alone: two passes over the
                // columns, nothing allocated per node.
                let dom = &domains[i].get(snap).dom_of_node;
                let per_node = pod_index::per_node_counts(snap, &query);
                let n = dom.len();
                let max = eligible_node_max(dom, &per_node[..n], &snap.nodes.taint_set[..n], &taints_ok);
                let min = if (num as i64) < i64::from(c.min_domains) { 0 } else { min.unwrap_or(0) };
                let skew = i64::from(max.unwrap_or(0)) - i64::from(min);
                out.push(ConstraintSkew { constraint: c.clone(), defaulted: !explicit, skew });
                continue;
            }
            let (counts, present) = eligible_counts(snap, pod, c, &domains, i, require_all);
            let eligible: Vec<i64> =
                counts.iter().zip(&present).filter(|(_, p)| **p).map(|(n, _)| i64::from(*n)).collect();
            let max = eligible.iter().copied().max().unwrap_or(0);
            let min = if (eligible.len() as i64) < i64::from(c.min_domains) {
                0
            } else {
                eligible.iter().copied().min().unwrap_or(0)
            };
            out.push(ConstraintSkew { constraint: c.clone(), defaulted: !explicit, skew: max - min });
        }
    }
    out
}

/// A constraint's key index: the snapshot's when tracked, else built for this cycle.
enum KeyDomains {
    Tracked(Sym),
    Owned(TopologyKeyIndex),
}

impl KeyDomains {
    fn new(snap: &Snapshot, key: Sym) -> Self {
        match snap.pod_index.key_index(key) {
            Some(_) => KeyDomains::Tracked(key),
            None => KeyDomains::Owned(TopologyKeyIndex::build(&snap.nodes, key)),
        }
    }

    fn get<'a>(&'a self, snap: &'a Snapshot) -> &'a TopologyKeyIndex {
        match self {
            KeyDomains::Tracked(k) => snap.pod_index.key_index(*k).expect("tracked keys stay tracked"),
            KeyDomains::Owned(t) => t,
        }
    }
}

/// Which nodes count for a constraint: all topology keys present and both inclusion policies.
struct Eligibility<'a> {
    doms: Vec<&'a [u32]>,
    affinity: Option<(ResolvedLabelSet<'a>, Option<ResolvedSelector<'a>>)>,
    /// Per taint set: whether the pod tolerates its NoSchedule/NoExecute taints.
    taints_ok: Option<Vec<bool>>,
}

impl<'a> Eligibility<'a> {
    fn new(snap: &'a Snapshot, pod: &'a PodInfo, doms: Vec<&'a [u32]>, c: &SpreadConstraint) -> Self {
        let has_affinity = !pod.node_selector.is_empty() || pod.required_affinity.is_some();
        let affinity = (c.node_affinity_policy == InclusionPolicy::Honor && has_affinity).then(|| {
            (
                ResolvedLabelSet::new(snap, &pod.node_selector),
                pod.required_affinity.as_ref().map(|s| ResolvedSelector::new(snap, &s.terms)),
            )
        });
        let taints_ok = (c.node_taints_policy == InclusionPolicy::Honor).then(|| untolerated_free_sets(snap, pod));
        let taints_ok = taints_ok.filter(|t| t.iter().any(|ok| !ok));
        Eligibility { doms, affinity, taints_ok }
    }

    /// True when every node carrying the constraint's key is eligible.
    fn is_trivial(&self) -> bool {
        self.doms.len() <= 1 && self.affinity.is_none() && self.taints_ok.is_none()
    }

    #[inline]
    fn eligible(&self, snap: &Snapshot, n: usize) -> bool {
        if self.doms.iter().any(|d| d[n] == NO_DOMAIN) {
            return false;
        }
        if let Some((sel, req)) = &self.affinity {
            let idx = NodeIdx(n as u32);
            if !sel.matches(idx) || req.as_ref().is_some_and(|r| !r.matches(snap, idx)) {
                return false;
            }
        }
        self.taints_ok.as_ref().is_none_or(|t| t[snap.nodes.taint_set[n] as usize])
    }
}

/// Per taint set: true when no NoSchedule/NoExecute taint goes untolerated.
fn untolerated_free_sets(snap: &Snapshot, pod: &PodInfo) -> Vec<bool> {
    let sets = &snap.nodes.taint_sets;
    (0..sets.len() as u32)
        .map(|s| {
            !sets.get(s).iter().any(|t| {
                matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
                    && !tolerations_tolerate(&pod.tolerations, t)
            })
        })
        .collect()
}

/// `countPodsMatchSelector` counts nothing for an empty selector (`labelSelector: {}` with no
/// matchLabelKeys merged): such a constraint sees every domain empty (the pod itself still
/// matches it, so `selfMatchNum` is 1).
fn counts_no_pod(c: &SpreadConstraint) -> bool {
    c.selector.is_empty()
}

/// Counts per domain of `c`'s key over the nodes eligible for `c`, and which domains have an
/// eligible node. `require_all` asks that nodes carry every key in `all_keys`.
fn eligible_counts(
    snap: &Snapshot,
    pod: &PodInfo,
    c: &SpreadConstraint,
    domains: &[KeyDomains],
    ci: usize,
    require_all: bool,
) -> (Vec<u32>, Vec<bool>) {
    let t = domains[ci].get(snap);
    let q = constraint_query(pod, c);
    let mut keys: Vec<&[u32]> = vec![&t.dom_of_node];
    if require_all {
        for (j, d) in domains.iter().enumerate() {
            let dj = d.get(snap);
            if j != ci && dj.key != t.key {
                keys.push(&dj.dom_of_node);
            }
        }
    }
    let elig = Eligibility::new(snap, pod, keys, c);
    if elig.is_trivial() {
        let counts =
            if counts_no_pod(c) { vec![0; t.num_domains()] } else { pod_index::dom_counts(snap, &q, t).into_owned() };
        let present = t.nodes_in_dom.iter().map(|&n| n > 0).collect();
        return (counts, present);
    }
    let per_node = if counts_no_pod(c) {
        std::borrow::Cow::Owned(vec![0; snap.nodes.len()])
    } else {
        pod_index::per_node_counts(snap, &q)
    };
    let mut counts = vec![0u32; t.num_domains()];
    let mut present = vec![false; t.num_domains()];
    if let (None, [_], Some(taints_ok)) = (&elig.affinity, elig.doms.as_slice(), &elig.taints_ok) {
        // Only the taint policy narrows the nodes (nodeTaintsPolicy: Honor, one key): one pass
        // over three columns, no per-node call.
        let taint_set = &snap.nodes.taint_set[..t.dom_of_node.len()];
        for ((&d, &c), &s) in t.dom_of_node.iter().zip(per_node.iter()).zip(taint_set) {
            if d != NO_DOMAIN && taints_ok[s as usize] {
                present[d as usize] = true;
                counts[d as usize] += c;
            }
        }
        return (counts, present);
    }
    for (n, &d) in t.dom_of_node.iter().enumerate() {
        if d != NO_DOMAIN && elig.eligible(snap, n) {
            present[d as usize] = true;
            counts[d as usize] += per_node[n];
        }
    }
    (counts, present)
}

/// One DoNotSchedule constraint, pre-computed.
struct FilterConstraint {
    max_skew: i64,
    /// The global minimum after `minDomains`.
    min_match: i64,
    self_match: i64,
    counts: FilterCounts,
}

/// Where Filter reads the count of a node's domain.
enum FilterCounts {
    /// Per domain, summed over the eligible nodes.
    PerDomain(Vec<u32>),
    /// Every domain of the key holds at most one node and only `nodeTaintsPolicy: Honor` narrows
    /// the nodes: a domain's count is its node's count in the pod index (looked up once per
    /// Filter call, not copied per cycle) when the pod tolerates the node's taint set (`taints_ok`,
    /// per taint set), else 0 ([`eligible_node_count`]).
    EligibleNode { query: PodQuery, taints_ok: Vec<bool> },
}

/// A [`FilterCounts`] resolved against the snapshot for one Filter call.
enum CountView<'a> {
    PerDomain(&'a [u32]),
    EligibleNode { per_node: std::borrow::Cow<'a, [u32]>, taint_set: &'a [u32], taints_ok: &'a [bool] },
}

impl CountView<'_> {
    /// The count of node `n`'s domain `d` (not [`NO_DOMAIN`]).
    #[inline]
    fn count(&self, n: usize, d: u32) -> u32 {
        match self {
            CountView::PerDomain(counts) => counts.get(d as usize).copied().unwrap_or(0),
            CountView::EligibleNode { per_node, taint_set, taints_ok } => {
                eligible_node_count(per_node, taint_set, taints_ok, n)
            }
        }
    }
}

/// The count of node `n`'s domain when every domain holds at most one node and eligibility is
/// the taint policy alone: the node's matching pods when its taint set is tolerated, else 0 (the
/// domain has no eligible node).
#[inline]
pub fn eligible_node_count(per_node: &[u32], taint_set: &[u32], taints_ok: &[bool], n: usize) -> u32 {
    if taints_ok[taint_set[n] as usize] {
        per_node[n]
    } else {
        0
    }
}

/// `calPreFilterState`'s minimum and domain count when every domain of the key holds at most one
/// node and eligibility is the taint policy alone: over the nodes carrying the key
/// (`dom_of_node[n] != NO_DOMAIN`) whose taint set is tolerated, the least `per_node` count
/// (`None` when there is no such node) and how many there are (each is its own domain). One pass
/// over three columns, no allocation.
pub fn eligible_node_min(
    dom_of_node: &[u32],
    per_node: &[u32],
    taint_set: &[u32],
    taints_ok: &[bool],
) -> (Option<u32>, usize) {
    fn run(dom_of_node: &[u32], per_node: &[u32], taint_set: &[u32], ok: impl TaintsOk) -> (Option<u32>, usize) {
        let mut min = u32::MAX;
        let mut num = 0usize;
        for ((&d, &c), &s) in dom_of_node.iter().zip(per_node).zip(taint_set) {
            let elig = (d != NO_DOMAIN) & ok.tolerated(s);
            num += usize::from(elig);
            min = min.min(if elig { c } else { u32::MAX });
        }
        ((num > 0).then_some(min), num)
    }
    match taint_mask(taints_ok) {
        Some(mask) => run(dom_of_node, per_node, taint_set, mask),
        None => run(dom_of_node, per_node, taint_set, taints_ok),
    }
}

/// The greatest `per_node` count over the nodes [`eligible_node_min`] takes the least of (`None`
/// when there is no such node).
pub fn eligible_node_max(dom_of_node: &[u32], per_node: &[u32], taint_set: &[u32], taints_ok: &[bool]) -> Option<u32> {
    fn run(dom_of_node: &[u32], per_node: &[u32], taint_set: &[u32], ok: impl TaintsOk) -> Option<u32> {
        let mut max = None;
        for ((&d, &c), &s) in dom_of_node.iter().zip(per_node).zip(taint_set) {
            if (d != NO_DOMAIN) & ok.tolerated(s) {
                max = Some(max.map_or(c, |m: u32| m.max(c)));
            }
        }
        max
    }
    match taint_mask(taints_ok) {
        Some(mask) => run(dom_of_node, per_node, taint_set, mask),
        None => run(dom_of_node, per_node, taint_set, taints_ok),
    }
}

/// Whether a taint set is tolerated, per taint set: a `[bool]` table, or the same as a bit mask
/// ([`taint_mask`]: no load and no bounds check per node).
trait TaintsOk: Copy {
    fn tolerated(self, set: u32) -> bool;
}

impl TaintsOk for &[bool] {
    #[inline]
    fn tolerated(self, set: u32) -> bool {
        self[set as usize]
    }
}

impl TaintsOk for u64 {
    /// Sets past 63 cannot occur: the mask is built only for at most 64 sets.
    #[inline]
    fn tolerated(self, set: u32) -> bool {
        (self >> (set & 63)) & 1 != 0
    }
}

/// `taints_ok` as a bit mask (bit `s` set when set `s` is tolerated), when there are at most 64
/// taint sets.
fn taint_mask(taints_ok: &[bool]) -> Option<u64> {
    (taints_ok.len() <= 64).then(|| taints_ok.iter().enumerate().fold(0u64, |m, (i, &ok)| m | (u64::from(ok) << i)))
}

/// The nodes [`filter_eligible_node`] passes with `limit`, in row order, written into `out`
/// (cleared first): those carrying the key whose [`eligible_node_count`] is at most `limit`. One
/// pass over three columns, the list written without a branch per node.
pub fn filter_passing_nodes(
    dom_of_node: &[u32],
    per_node: &[u32],
    taint_set: &[u32],
    taints_ok: &[bool],
    limit: i64,
    out: &mut Vec<NodeIdx>,
) {
    out.clear();
    out.resize(dom_of_node.len(), NodeIdx(0));
    // Counts above u32::MAX cannot occur: a negative limit passes no node, a large one every node.
    let Ok(limit) = u32::try_from(limit.min(i64::from(u32::MAX))) else {
        out.clear();
        return;
    };
    fn run(
        dom_of_node: &[u32],
        per_node: &[u32],
        taint_set: &[u32],
        ok: impl TaintsOk,
        limit: u32,
        out: &mut [NodeIdx],
    ) -> usize {
        let mut len = 0usize;
        for (i, ((&d, &c), &s)) in dom_of_node.iter().zip(per_node).zip(taint_set).enumerate() {
            let pass = (d != NO_DOMAIN) & (!ok.tolerated(s) | (c <= limit));
            out[len] = NodeIdx(i as u32);
            len += usize::from(pass);
        }
        len
    }
    let len = match taint_mask(taints_ok) {
        Some(mask) => run(dom_of_node, per_node, taint_set, mask, limit, out),
        None => run(dom_of_node, per_node, taint_set, taints_ok, limit, out),
    };
    out.truncate(len);
}

/// Filter for one constraint over per-domain counts: a node lacking the key is rejected
/// (unresolvable), one whose domain count exceeds `limit` (maxSkew + minMatch − selfMatch) is
/// rejected for skew. `out` as [`Plugin::filter`] gives it.
pub fn filter_per_domain(
    nodes: &[NodeIdx],
    dom_of_node: &[u32],
    counts: &[u32],
    limit: i64,
    out: &mut [Option<Reject>],
) {
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let d = dom_of_node[n.ix()];
        if d == NO_DOMAIN {
            *o = Some(Reject::unresolvable(DETAIL_LABEL));
        } else if i64::from(counts.get(d as usize).copied().unwrap_or(0)) > limit {
            *o = Some(Reject::unschedulable(DETAIL_SKEW));
        }
    }
}

/// [`filter_per_domain`] for [`FilterCounts::EligibleNode`]: a domain's count is
/// [`eligible_node_count`] of its one node.
pub fn filter_eligible_node(
    nodes: &[NodeIdx],
    dom_of_node: &[u32],
    per_node: &[u32],
    taint_set: &[u32],
    taints_ok: &[bool],
    limit: i64,
    out: &mut [Option<Reject>],
) {
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let i = n.ix();
        if dom_of_node[i] == NO_DOMAIN {
            *o = Some(Reject::unresolvable(DETAIL_LABEL));
        } else if i64::from(eligible_node_count(per_node, taint_set, taints_ok, i)) > limit {
            *o = Some(Reject::unschedulable(DETAIL_SKEW));
        }
    }
}

/// The nodes whose taint set the pod does not tolerate (`taints_ok[s]` false), as a row bitset
/// ([`crate::snapshot::bits`]): the union of the node table's hard-taint rows of those sets,
/// O(sets x nodes / 64). `None` when some node's hard taint set has no bitset
/// ([`crate::snapshot::NodeTable::untracked_hard_taint_rows`]).
pub fn untolerated_rows(nodes: &crate::snapshot::NodeTable, taints_ok: &[bool]) -> Option<Vec<u64>> {
    if nodes.untracked_hard_taint_rows() > 0 {
        return None;
    }
    let mut out = vec![0u64; bits::words_for(nodes.len())];
    for (s, _) in taints_ok.iter().enumerate().filter(|(_, ok)| !**ok) {
        // An untolerated set holds a NoSchedule/NoExecute taint, so it is tracked.
        for (o, &w) in out.iter_mut().zip(nodes.hard_taint_rows(s as u32).unwrap_or(&[])) {
            *o |= w;
        }
    }
    Some(out)
}

/// [`eligible_node_min`] over row bitsets, when every one of the `rows` nodes carries the key:
/// writes into `free` the eligible nodes (not `untolerated`) with no matching pod (not
/// `occupied`), and returns whether there is one (the minimum is then 0) and how many nodes are
/// eligible. O(nodes / 64).
pub fn free_eligible_rows(rows: usize, occupied: &[u64], untolerated: &[u64], free: &mut Vec<u64>) -> (bool, usize) {
    let words = bits::words_for(rows);
    free.clear();
    let mut any = 0u64;
    let mut untolerated_count = 0usize;
    for w in 0..words {
        let valid = bits::valid_mask(rows, w);
        let u = bits::word(untolerated, w) & valid;
        untolerated_count += u.count_ones() as usize;
        let f = !bits::word(occupied, w) & !u & valid;
        any |= f;
        free.push(f);
    }
    (any != 0, rows - untolerated_count)
}

/// The row sets PreFilter found on the bitset path ([`eligible_node_counts`]).
struct RowSets {
    /// Eligible nodes with no matching pod ([`free_eligible_rows`]).
    free: Vec<u64>,
    /// Nodes whose taints the pod does not tolerate ([`untolerated_rows`]).
    untolerated: Vec<u64>,
}

/// PreFilter's counts for `cs[ci]` through [`FilterCounts::EligibleNode`], when it applies: the
/// constraints have one key, whose domains hold at most one node each, only the taint policy
/// narrows the nodes (and does narrow them), and the pod index counts the constraint's query.
/// Returns the counts with the minimum and number of eligible domains ([`eligible_node_min`]),
/// and, when every node carries the key and the untolerated nodes are known as a bitset, the
/// [`RowSets`] (then the minimum costs O(nodes / 64) whenever some eligible node has no matching
/// pod, else one column pass); `None` sends the caller to [`eligible_counts`], which gives the
/// same answers (per domain).
fn eligible_node_counts(
    snap: &Snapshot,
    pod: &PodInfo,
    c: &SpreadConstraint,
    cs: &[SpreadConstraint],
    domains: &[KeyDomains],
    ci: usize,
) -> Option<(FilterCounts, Option<u32>, usize, Option<RowSets>)> {
    let has_affinity = !pod.node_selector.is_empty() || pod.required_affinity.is_some();
    if cs.iter().any(|o| o.topology_key != c.topology_key)
        || (c.node_affinity_policy == InclusionPolicy::Honor && has_affinity)
        || c.node_taints_policy != InclusionPolicy::Honor
        || counts_no_pod(c)
    {
        return None;
    }
    let t = domains[ci].get(snap);
    if !t.one_node_per_domain() {
        return None;
    }
    let query = constraint_query(pod, c);
    let counter = snap.pod_index.query(&query)?;
    let taints_ok = untolerated_free_sets(snap, pod);
    if taints_ok.iter().all(|ok| *ok) {
        return None;
    }
    let n = t.dom_of_node.len();
    let rows = if t.every_node_has_key() { untolerated_rows(&snap.nodes, &taints_ok) } else { None };
    if let Some(untolerated) = rows {
        let mut free = Vec::new();
        let (some_free, num) = free_eligible_rows(n, &counter.occupied, &untolerated, &mut free);
        let min = if some_free || num == 0 {
            (num > 0).then_some(0)
        } else {
            eligible_node_min(&t.dom_of_node, &counter.per_node[..n], &snap.nodes.taint_set[..n], &taints_ok).0
        };
        let sets = RowSets { free, untolerated };
        return Some((FilterCounts::EligibleNode { query, taints_ok }, min, num, Some(sets)));
    }
    let per_node = &counter.per_node;
    let (min, num) = eligible_node_min(&t.dom_of_node, &per_node[..n], &snap.nodes.taint_set[..n], &taints_ok);
    Some((FilterCounts::EligibleNode { query, taints_ok }, min, num, None))
}

/// PodTopologySpread's candidates for the engine's sparse filter pass
/// ([`Plugin::filter_candidates`]).
enum Candidates {
    /// Exactly the nodes Filter passes, in row order ([`filter_passing_nodes`]).
    List(Vec<NodeIdx>),
    /// When the limit is 0 with every node carrying the key: Filter passes the eligible nodes
    /// with no matching pod (`free`) and the untolerated ones (which count 0); the latter are
    /// left out when another Filter rejects them.
    Rows(RowSets),
}

struct PreFilterState {
    domains: Vec<KeyDomains>,
    constraints: Vec<FilterConstraint>,
    /// The nodes Filter passes, when the pod's one constraint reads
    /// [`FilterCounts::EligibleNode`] (offered as [`Plugin::filter_candidates`]).
    candidates: Option<Candidates>,
}

/// The soft constraints, pre-computed for Score.
struct ScoreConstraint {
    max_skew: i64,
    weight: f64,
    hostname: bool,
    /// Per-domain counts (non-hostname) or per-node counts (hostname); empty when `tracked`.
    counts: Vec<u32>,
    /// A hostname constraint whose query the pod index counts: Score reads the index's per-node
    /// counts (looked up once per call) instead of a copy of them made per cycle.
    tracked: Option<PodQuery>,
}

struct PreScoreState {
    domains: Vec<KeyDomains>,
    constraints: Vec<ScoreConstraint>,
    require_all: bool,
}

impl PreScoreState {
    /// Each constraint's node-to-domain column, looked up once per call (not per node).
    fn dom_columns<'a>(&'a self, snap: &'a Snapshot) -> Vec<&'a [u32]> {
        self.domains.iter().map(|d| d.get(snap).dom_of_node.as_slice()).collect()
    }

    /// A node lacking a key the constraints require scores 0 (`doms` from [`Self::dom_columns`]).
    #[inline]
    fn ignored(&self, doms: &[&[u32]], n: NodeIdx) -> bool {
        self.require_all && doms.iter().any(|d| d[n.ix()] == NO_DOMAIN)
    }
}

const PRE_FILTER_KEY: &str = "PreFilterPodTopologySpread";
const PRE_SCORE_KEY: &str = "PreScorePodTopologySpread";

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn signs_no_pod(&self) -> bool {
        !self.default_constraints.is_empty()
    }

    fn spread_defaults_soft(&self) -> bool {
        self.default_constraints.iter().all(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
    }

    /// No pod with spread constraints of its own or the profile's defaults can be signed.
    fn sign_pod(&self, pod: &PodInfo, _sig: &mut SignBuilder) -> Sign {
        if !pod.constraints.topology_spread.is_empty() {
            return Sign::Unsignable("pods with topology constraints are not signable");
        }
        if !self.default_constraints.is_empty() {
            return Sign::Unsignable("pods with default topology constraints are not signable");
        }
        Sign::Signed
    }

    fn score_state_missing(&self) -> Option<&'static str> {
        Some("error reading \"PreScorePodTopologySpread\" from cycleState: not found")
    }

    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        let (snap, pod) = (cx.snap, cx.pod);
        let cs = self.constraints(snap, pod, WhenUnsatisfiable::DoNotSchedule);
        if cs.is_empty() {
            return (Status::skip(), PreFilterResult::default());
        }
        let domains: Vec<KeyDomains> = cs.iter().map(|c| KeyDomains::new(snap, c.topology_key)).collect();
        let mut candidates = None;
        let constraints: Vec<FilterConstraint> = cs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let self_match = c.selector.matches(&pod.labels, &snap.interner) as i64;
                let (counts, min, num_domains, rows) = match eligible_node_counts(snap, pod, c, &cs, &domains, i) {
                    Some(fast) => fast,
                    None => {
                        let (counts, present) = eligible_counts(snap, pod, c, &domains, i, true);
                        let num_domains = present.iter().filter(|p| **p).count();
                        let min = counts.iter().zip(&present).filter(|(_, p)| **p).map(|(c, _)| *c).min();
                        (FilterCounts::PerDomain(counts), min, num_domains, None)
                    }
                };
                let min = min.map(i64::from);
                let min_match = if (num_domains as i64) < c.min_domains as i64 { 0 } else { min.unwrap_or(0) };
                let max_skew = c.max_skew as i64;
                let limit = max_skew + min_match - self_match;
                if let (true, FilterCounts::EligibleNode { query, taints_ok }) = (cs.len() == 1, &counts) {
                    candidates = Some(match rows {
                        // Count <= 0 is "no matching pod": the bitset PreFilter already has.
                        Some(rows) if limit == 0 => Candidates::Rows(rows),
                        _ => {
                            let per_node = pod_index::per_node_counts(snap, query);
                            let dom = &domains[i].get(snap).dom_of_node;
                            let taint_set = &snap.nodes.taint_set[..dom.len()];
                            let mut list = Vec::new();
                            filter_passing_nodes(dom, &per_node[..dom.len()], taint_set, taints_ok, limit, &mut list);
                            Candidates::List(list)
                        }
                    });
                }
                FilterConstraint { max_skew, min_match, self_match, counts }
            })
            .collect();
        state.write(PRE_FILTER_KEY, PreFilterState { domains, constraints, candidates });
        (Status::success(), PreFilterResult::default())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else { return };
        if let ([c], [domains]) = (s.constraints.as_slice(), s.domains.as_slice()) {
            // One constraint (the common case): a loop over the columns, nothing allocated.
            let dom = &domains.get(cx.snap).dom_of_node;
            let limit = c.max_skew + c.min_match - c.self_match;
            match &c.counts {
                FilterCounts::PerDomain(counts) => filter_per_domain(nodes, dom, counts, limit, out),
                FilterCounts::EligibleNode { query, taints_ok } => {
                    let per_node = pod_index::per_node_counts(cx.snap, query);
                    filter_eligible_node(nodes, dom, &per_node, &cx.snap.nodes.taint_set, taints_ok, limit, out);
                }
            }
            return;
        }
        let doms: Vec<&[u32]> = s.domains.iter().map(|d| d.get(cx.snap).dom_of_node.as_slice()).collect();
        let views: Vec<CountView<'_>> = s
            .constraints
            .iter()
            .map(|c| match &c.counts {
                FilterCounts::PerDomain(counts) => CountView::PerDomain(counts),
                FilterCounts::EligibleNode { query, taints_ok } => CountView::EligibleNode {
                    per_node: pod_index::per_node_counts(cx.snap, query),
                    taint_set: &cx.snap.nodes.taint_set,
                    taints_ok,
                },
            })
            .collect();
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            for ((c, dom), view) in s.constraints.iter().zip(&doms).zip(&views) {
                let d = dom[n.ix()];
                if d == NO_DOMAIN {
                    *o = Some(Reject::unresolvable(DETAIL_LABEL));
                    break;
                }
                let count = view.count(n.ix(), d) as i64;
                if count + c.self_match - c.min_match > c.max_skew {
                    *o = Some(Reject::unschedulable(DETAIL_SKEW));
                    break;
                }
            }
        }
    }

    /// The pod's one constraint on a key whose domains hold one node each, narrowed by the taint
    /// policy alone: the nodes PreFilter found passing (a list copied, or row bitsets read 64
    /// nodes at a time), without the untolerated ones when another Filter rejects them.
    fn filter_candidates(
        &self,
        _cx: CycleCx<'_>,
        state: &CycleState,
        untolerated_rejected: bool,
        out: &mut Vec<NodeIdx>,
    ) -> bool {
        let Some(c) = state.read::<PreFilterState>(PRE_FILTER_KEY).and_then(|s| s.candidates.as_ref()) else {
            return false;
        };
        out.clear();
        match c {
            Candidates::List(list) => out.extend_from_slice(list),
            Candidates::Rows(rows) if untolerated_rejected => bits::push_ones(&rows.free, out),
            Candidates::Rows(rows) => {
                let both: Vec<u64> =
                    rows.free.iter().enumerate().map(|(w, &f)| f | bits::word(&rows.untolerated, w)).collect();
                bits::push_ones(&both, out);
            }
        }
        true
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        let r = if reject.detail == DETAIL_LABEL {
            ERR_REASON_NODE_LABEL_NOT_MATCH
        } else {
            ERR_REASON_CONSTRAINTS_NOT_MATCH
        };
        vec![r.to_string()]
    }

    fn pre_score(&self, cx: CycleCx<'_>, state: &mut CycleState, feasible: &[NodeIdx]) -> Status {
        let (snap, pod) = (cx.snap, cx.pod);
        if snap.nodes.is_empty() {
            return Status::skip();
        }
        let cs = self.constraints(snap, pod, WhenUnsatisfiable::ScheduleAnyway);
        if cs.is_empty() {
            return Status::skip();
        }
        let require_all = !pod.constraints.topology_spread.is_empty() || !self.system_defaulted;
        let domains: Vec<KeyDomains> = cs.iter().map(|c| KeyDomains::new(snap, c.topology_key)).collect();
        let mut s = PreScoreState { domains, constraints: Vec::new(), require_all };
        let doms = s.dom_columns(snap);
        let scored: Vec<NodeIdx> = feasible.iter().copied().filter(|n| !s.ignored(&doms, *n)).collect();
        let hostname_key = snap.wk.hostname_key;
        let mut constraints = Vec::with_capacity(cs.len());
        for (i, c) in cs.iter().enumerate() {
            let t = s.domains[i].get(snap);
            if c.topology_key == hostname_key {
                let q = constraint_query(pod, c);
                let (counts, tracked) = if counts_no_pod(c) {
                    (vec![0; snap.nodes.len()], None)
                } else if snap.pod_index.query(&q).is_some() {
                    (Vec::new(), Some(q))
                } else {
                    (pod_index::per_node_counts(snap, &q).into_owned(), None)
                };
                let weight = topology_normalizing_weight(scored.len());
                constraints.push(ScoreConstraint {
                    max_skew: c.max_skew as i64,
                    weight,
                    hostname: true,
                    counts,
                    tracked,
                });
                continue;
            }
            // Distinct values on the scored nodes; a node lacking the key adds the empty value.
            let mut seen = vec![false; t.num_domains()];
            let mut size = 0;
            let mut missing = false;
            for n in &scored {
                match t.dom_of_node[n.ix()] {
                    NO_DOMAIN => missing = true,
                    d if !seen[d as usize] => {
                        seen[d as usize] = true;
                        size += 1;
                    }
                    _ => {}
                }
            }
            let (counts, _) = eligible_counts(snap, pod, c, &s.domains, i, require_all);
            let weight = topology_normalizing_weight(size + missing as usize);
            constraints.push(ScoreConstraint {
                max_skew: c.max_skew as i64,
                weight,
                hostname: false,
                counts,
                tracked: None,
            });
        }
        s.constraints = constraints;
        state.write(PRE_SCORE_KEY, s);
        Status::success()
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return Err(Status::new(Code::Error, "reading PreScorePodTopologySpread from cycleState: not found"));
        };
        let doms = s.dom_columns(cx.snap);
        let counts: Vec<std::borrow::Cow<'_, [u32]>> = s
            .constraints
            .iter()
            .map(|c| match &c.tracked {
                Some(q) => pod_index::per_node_counts(cx.snap, q),
                None => std::borrow::Cow::Borrowed(c.counts.as_slice()),
            })
            .collect();
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            if s.ignored(&doms, *n) {
                *o = 0;
                continue;
            }
            let mut score = 0f64;
            for ((c, dom), counts) in s.constraints.iter().zip(&doms).zip(&counts) {
                let d = dom[n.ix()];
                if d == NO_DOMAIN {
                    continue;
                }
                let cnt = if c.hostname { counts[n.ix()] } else { counts.get(d as usize).copied().unwrap_or(0) };
                score += score_for_count(cnt as i64, c.max_skew, c.weight);
            }
            *o = round_half_away_from_zero(score);
        }
        Ok(())
    }

    fn normalize(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], scores: &mut [i64]) {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else { return };
        let doms = s.dom_columns(cx.snap);
        let mut min = i64::MAX;
        let mut max = 0i64;
        for (n, sc) in nodes.iter().zip(scores.iter()) {
            if !s.ignored(&doms, *n) {
                min = min.min(*sc);
                max = max.max(*sc);
            }
        }
        for (n, sc) in nodes.iter().zip(scores.iter_mut()) {
            *sc = if s.ignored(&doms, *n) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *sc) / max
            };
        }
    }
}

/// `math.Round(x)` as an integer (half away from zero), as `x.round() as i64` but without a
/// libm call on the baseline x86-64 target: the truncation is one instruction and, below 2^52,
/// `x - trunc(x)` is exact. Larger magnitudes are integers already (or saturate, as the cast does).
#[inline]
pub fn round_half_away_from_zero(x: f64) -> i64 {
    if x.is_nan() || x.abs() >= (1u64 << 52) as f64 {
        return x as i64;
    }
    let t = x as i64;
    let frac = x - t as f64;
    t + (frac >= 0.5) as i64 - (frac <= -0.5) as i64
}

/// `topologyNormalizingWeight`: ln(size + 2).
pub fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

/// `scoreForCount`: cnt · weight + (maxSkew − 1).
pub fn score_for_count(cnt: i64, max_skew: i64, weight: f64) -> f64 {
    cnt as f64 * weight + (max_skew - 1) as f64
}
