//! Incremental pod counters for PodTopologySpread and InterPodAffinity.
//!
//! Three kinds of data, all kept up to date by `Snapshot::place_pod` / `unplace_pod` and the node
//! hooks, so a scheduling cycle never rescans the placed pods:
//! - [`TopologyKeyIndex`]: for a topology key, each node's dense domain id (its label value).
//! - [`QueryCounter`]: for a registered [`PodQuery`] (the pods a spread constraint or an affinity
//!   term counts), the number of matching placed pods per node and per domain of each tracked key.
//! - [`CarriedCounter`]: for a pod affinity term that placed pods *carry* (their own required or
//!   preferred (anti-)affinity), how many carriers sit on each node and in each domain of the
//!   term's key. Symmetry checks test the incoming pod against each distinct term once.
//!
//! Queries are registered by [`super::Snapshot::prepare_pod`] (one scan of the placed pods per new
//! query) and automatically for the queries of every placed pod. Plugins fall back to a scan when a
//! query is not registered ([`per_node_counts`]), so correctness never depends on registration.

use std::borrow::Cow;

use ahash::AHashMap;
use smallvec::SmallVec;

use super::intern::{Interner, Sym};
use super::model::{AffinityTerm, PodInfo, PodSelector};
use super::nodes::{NodeIdx, NodeTable};
use super::Snapshot;

/// "The node lacks this topology key".
pub const NO_DOMAIN: u32 = u32::MAX;

/// The pods a constraint or term counts: placed pods matching every selector in `all_of`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodQuery {
    /// Selectors ANDed (InterPodAffinity's "matches all required affinity terms" uses several).
    pub all_of: SmallVec<[PodSelector; 1]>,
    /// PodTopologySpread skips terminating pods; InterPodAffinity counts them.
    pub count_terminating: bool,
}

impl PodQuery {
    pub fn single(sel: PodSelector, count_terminating: bool) -> Self {
        PodQuery { all_of: smallvec::smallvec![sel], count_terminating }
    }

    /// Whether placed pod `pod` is counted. `ns_labels` are its Namespace's labels.
    pub fn matches(&self, pod: &PodInfo, ns_labels: &[(Sym, Sym)], interner: &Interner) -> bool {
        (self.count_terminating || !pod.terminating)
            && self.all_of.iter().all(|s| s.matches(pod.namespace, &pod.labels, ns_labels, interner))
    }
}

/// A topology key's domains: dense ids for its values, one per node.
#[derive(Clone, Debug)]
pub struct TopologyKeyIndex {
    pub key: Sym,
    /// Domain id of each node ([`NO_DOMAIN`] when the node lacks the key).
    pub dom_of_node: Vec<u32>,
    /// The label value of each domain.
    pub value_of_dom: Vec<Sym>,
    /// Nodes carrying each domain's value (0 once all its nodes left).
    pub nodes_in_dom: Vec<u32>,
    dom_of_value: AHashMap<Sym, u32>,
    /// Domains carried by two or more nodes now (kept with `nodes_in_dom`).
    shared_doms: u32,
    /// Nodes lacking the key now ([`NO_DOMAIN`] in `dom_of_node`).
    keyless: u32,
}

impl TopologyKeyIndex {
    /// Builds the index for `key` over every node (O(nodes)).
    pub fn build(nodes: &NodeTable, key: Sym) -> Self {
        let mut t = TopologyKeyIndex {
            key,
            dom_of_node: Vec::with_capacity(nodes.len()),
            value_of_dom: Vec::new(),
            nodes_in_dom: Vec::new(),
            dom_of_value: AHashMap::new(),
            shared_doms: 0,
            keyless: 0,
        };
        let col = nodes.label_column(key);
        for n in 0..nodes.len() {
            let v = col.map_or(Sym::NONE, |c| c[n]);
            let d = t.dom_for(v);
            t.dom_of_node.push(d);
        }
        t
    }

    fn dom_for(&mut self, v: Sym) -> u32 {
        if v.is_none() {
            self.keyless += 1;
            return NO_DOMAIN;
        }
        let next = self.value_of_dom.len() as u32;
        let d = *self.dom_of_value.entry(v).or_insert(next);
        if d == next {
            self.value_of_dom.push(v);
            self.nodes_in_dom.push(0);
        }
        self.nodes_in_dom[d as usize] += 1;
        self.shared_doms += u32::from(self.nodes_in_dom[d as usize] == 2);
        d
    }

    /// A node of domain `d` left it (removed or relabelled).
    fn leave(&mut self, d: u32) {
        if d != NO_DOMAIN {
            self.shared_doms -= u32::from(self.nodes_in_dom[d as usize] == 2);
            self.nodes_in_dom[d as usize] -= 1;
        } else {
            self.keyless -= 1;
        }
    }

    /// True when every node carries the key. O(1).
    pub fn every_node_has_key(&self) -> bool {
        self.keyless == 0
    }

    /// True when no domain is carried by more than one node (hostname-like keys): a domain's
    /// count is then its one node's count. O(1).
    pub fn one_node_per_domain(&self) -> bool {
        self.shared_doms == 0
    }

    pub fn num_domains(&self) -> usize {
        self.value_of_dom.len()
    }

    /// The domain of label value `v`, if some node ever carried it.
    pub fn dom_of_value(&self, v: Sym) -> Option<u32> {
        self.dom_of_value.get(&v).copied()
    }
}

/// Matching placed pods of one [`PodQuery`].
#[derive(Clone, Debug)]
pub struct QueryCounter {
    pub query: PodQuery,
    /// Matching pods on each node.
    pub per_node: Vec<u32>,
    /// The nodes with a matching pod (`per_node[n] > 0`) as a row bitset ([`super::bits`]), so
    /// the nodes with none are found 64 at a time (PodTopologySpread's minimum and candidates).
    pub occupied: Vec<u64>,
    /// For each tracked key (index into [`PodIndex::keys`]): matching pods per domain.
    pub per_dom: Vec<(u32, Vec<u32>)>,
}

/// Which of a placed pod's own terms a [`CarriedCounter`] tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CarriedKind {
    RequiredAffinity,
    RequiredAntiAffinity,
    PreferredAffinity(i32),
    PreferredAntiAffinity(i32),
}

/// Placed pods carrying one distinct (term, kind).
#[derive(Clone, Debug)]
pub struct CarriedCounter {
    pub term: AffinityTerm,
    pub kind: CarriedKind,
    /// Index into [`PodIndex::keys`] of the term's topology key.
    pub key_idx: u32,
    pub per_node: Vec<u32>,
    pub per_dom: Vec<u32>,
    /// Carriers placed anywhere.
    pub total: u64,
}

/// The incremental indexes. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct PodIndex {
    pub keys: Vec<TopologyKeyIndex>,
    key_idx: AHashMap<Sym, u32>,
    pub queries: Vec<QueryCounter>,
    query_idx: AHashMap<PodQuery, u32>,
    /// Queries that only pods carrying a given label pair can match (their selector requires
    /// `key In [value]`), by that pair: a placed pod is tested only against the queries anchored
    /// on its own labels, plus [`PodIndex::unanchored`].
    query_by_pair: AHashMap<(Sym, Sym), SmallVec<[u32; 2]>>,
    /// Queries with no single-value `In` requirement: tested against every placed pod.
    unanchored: Vec<u32>,
    pub carried: Vec<CarriedCounter>,
    carried_idx: AHashMap<(AffinityTerm, CarriedKind), u32>,
}

/// A placed pod's terms with their kinds.
fn carried_terms(pod: &PodInfo) -> impl Iterator<Item = (&AffinityTerm, CarriedKind)> {
    let a = &pod.constraints.affinity;
    a.required_affinity
        .iter()
        .map(|t| (t, CarriedKind::RequiredAffinity))
        .chain(a.required_anti_affinity.iter().map(|t| (t, CarriedKind::RequiredAntiAffinity)))
        .chain(a.preferred_affinity.iter().map(|w| (&w.term, CarriedKind::PreferredAffinity(w.weight))))
        .chain(a.preferred_anti_affinity.iter().map(|w| (&w.term, CarriedKind::PreferredAntiAffinity(w.weight))))
}

impl PodIndex {
    pub fn key_index(&self, key: Sym) -> Option<&TopologyKeyIndex> {
        self.key_idx.get(&key).map(|&i| &self.keys[i as usize])
    }

    pub fn key_position(&self, key: Sym) -> Option<u32> {
        self.key_idx.get(&key).copied()
    }

    pub fn query(&self, q: &PodQuery) -> Option<&QueryCounter> {
        self.query_idx.get(q).map(|&i| &self.queries[i as usize])
    }

    /// Per-domain counts of query `q` for `key`, when both are tracked.
    pub fn dom_counts(&self, q: &PodQuery, key: Sym) -> Option<&[u32]> {
        let k = self.key_position(key)?;
        self.query(q)?.per_dom.iter().find(|(kk, _)| *kk == k).map(|(_, v)| v.as_slice())
    }

    /// Where [`PodIndex::dom_counts`] finds its slice: the query's position in
    /// [`PodIndex::queries`] and the slot of `key` in its `per_dom`, when both are tracked.
    pub fn dom_counts_slot(&self, q: &PodQuery, key: Sym) -> Option<(usize, usize)> {
        let k = self.key_position(key)?;
        let qi = *self.query_idx.get(q)? as usize;
        let slot = self.queries[qi].per_dom.iter().position(|(kk, _)| *kk == k)?;
        Some((qi, slot))
    }

    /// Tracks `key` (O(nodes) the first time).
    pub fn ensure_key(&mut self, nodes: &NodeTable, key: Sym) -> u32 {
        if let Some(&k) = self.key_idx.get(&key) {
            return k;
        }
        let k = self.keys.len() as u32;
        self.keys.push(TopologyKeyIndex::build(nodes, key));
        self.key_idx.insert(key, k);
        k
    }

    /// Node `idx` was appended to the table.
    pub(super) fn on_add_node(&mut self, nodes: &NodeTable, idx: NodeIdx) {
        debug_assert_eq!(idx.ix() + 1, nodes.len());
        for t in &mut self.keys {
            let v = nodes.label(idx, t.key);
            let d = t.dom_for(v);
            t.dom_of_node.push(d);
        }
        for q in &mut self.queries {
            q.per_node.push(0);
        }
        for c in &mut self.carried {
            c.per_node.push(0);
        }
    }

    /// Node `idx` (with no pods left) is swap-removed from the table.
    pub(super) fn on_remove_node(&mut self, idx: NodeIdx) {
        let i = idx.ix();
        for t in &mut self.keys {
            let d = t.dom_of_node.swap_remove(i);
            t.leave(d);
        }
        for q in &mut self.queries {
            debug_assert_eq!(q.per_node[i], 0);
            let last = q.per_node.len() - 1;
            q.per_node.swap_remove(i);
            super::bits::swap_remove(&mut q.occupied, i, last);
        }
        for c in &mut self.carried {
            c.per_node.swap_remove(i);
        }
    }

    /// Node `idx`'s labels changed; its pods were removed from the index before and are re-added after.
    pub(super) fn on_relabel_node(&mut self, nodes: &NodeTable, idx: NodeIdx) {
        let i = idx.ix();
        for t in &mut self.keys {
            let old = t.dom_of_node[i];
            t.leave(old);
            let v = nodes.label(idx, t.key);
            t.dom_of_node[i] = t.dom_for(v);
        }
    }

    /// Adds (`sign` = 1) or removes (-1) placed pod `pod` on node `idx`.
    pub(super) fn apply_pod(
        &mut self,
        nodes: &NodeTable,
        interner: &Interner,
        ns_labels: &[(Sym, Sym)],
        idx: NodeIdx,
        pod: &PodInfo,
        sign: i32,
    ) {
        let i = idx.ix();
        let bump = |v: &mut u32| *v = (*v as i64 + sign as i64) as u32;
        let keys = &self.keys;
        let by_pair = &self.query_by_pair;
        let anchored = pod.labels.iter().filter(|_| !by_pair.is_empty()).filter_map(|pair| by_pair.get(pair)).flatten();
        for &qi in self.unanchored.iter().chain(anchored) {
            let q = &mut self.queries[qi as usize];
            if q.query.matches(pod, ns_labels, interner) {
                bump(&mut q.per_node[i]);
                super::bits::set(&mut q.occupied, i, q.per_node[i] > 0);
                for (k, v) in &mut q.per_dom {
                    let d = keys[*k as usize].dom_of_node[i];
                    if d != NO_DOMAIN {
                        bump(&mut v[d as usize]);
                    }
                }
            }
        }
        if pod.constraints.affinity.is_empty() {
            return;
        }
        for (term, kind) in carried_terms(pod) {
            let c = match self.carried_idx.get(&(term.clone(), kind)) {
                Some(&c) => c as usize,
                None => {
                    assert!(sign > 0, "a carried term is registered when its first carrier is placed");
                    let k = self.ensure_key(nodes, term.topology_key);
                    let c = self.carried.len();
                    self.carried.push(CarriedCounter {
                        term: term.clone(),
                        kind,
                        key_idx: k,
                        per_node: vec![0; nodes.len()],
                        per_dom: Vec::new(),
                        total: 0,
                    });
                    self.carried_idx.insert((term.clone(), kind), c as u32);
                    c
                }
            };
            let keys = &self.keys;
            let cc = &mut self.carried[c];
            let t = &keys[cc.key_idx as usize];
            if cc.per_dom.len() < t.num_domains() {
                cc.per_dom.resize(t.num_domains(), 0);
            }
            bump(&mut cc.per_node[i]);
            cc.total = (cc.total as i64 + sign as i64) as u64;
            let d = t.dom_of_node[i];
            if d != NO_DOMAIN {
                bump(&mut cc.per_dom[d as usize]);
            }
        }
    }

    /// Replaces query `qi`'s per-node counts (a recount) and re-aggregates its per-domain counts.
    pub(super) fn reset_query(&mut self, qi: usize, per_node: Vec<u32>) {
        let keys = &self.keys;
        let q = &mut self.queries[qi];
        for (k, v) in &mut q.per_dom {
            let t = &keys[*k as usize];
            *v = aggregate_by_domain(&t.dom_of_node, t.num_domains(), &per_node, |_| true);
        }
        q.occupied = occupied_rows(&per_node);
        q.per_node = per_node;
    }

    /// Sizes every per-domain vector to its key's domain count (after nodes brought new values).
    pub(super) fn grow_domains(&mut self) {
        let keys = &self.keys;
        for q in &mut self.queries {
            for (k, v) in &mut q.per_dom {
                v.resize(keys[*k as usize].num_domains().max(v.len()), 0);
            }
        }
        for c in &mut self.carried {
            c.per_dom.resize(keys[c.key_idx as usize].num_domains().max(c.per_dom.len()), 0);
        }
    }
}

/// [`QueryCounter::occupied`] from the per-node counts (a registration or a recount).
pub fn occupied_rows(per_node: &[u32]) -> Vec<u64> {
    super::bits::from_fn(per_node.len(), |n| per_node[n] > 0)
}

/// Namespace labels of `ns` in `snap` (empty when the Namespace is unknown).
pub fn ns_labels(snap: &Snapshot, ns: Sym) -> &[(Sym, Sym)] {
    snap.cluster.namespaces.get(&ns).map_or(&[], |v| v.as_slice())
}

/// Registers query `q` with per-domain counts for `keys`: one scan of the placed pods the first
/// time, then incremental.
pub fn ensure_query(snap: &mut Snapshot, q: &PodQuery, keys: &[Sym]) {
    let key_ids: Vec<u32> = keys.iter().map(|&k| snap.pod_index.ensure_key(&snap.nodes, k)).collect();
    let qi = match snap.pod_index.query_idx.get(q) {
        Some(&qi) => qi as usize,
        None => {
            let per_node = scan_per_node(snap, q);
            let idx = &mut snap.pod_index;
            let qi = idx.queries.len();
            let occupied = occupied_rows(&per_node);
            idx.queries.push(QueryCounter { query: q.clone(), per_node, occupied, per_dom: Vec::new() });
            idx.query_idx.insert(q.clone(), qi as u32);
            match anchor(q) {
                Anchor::Pair(pair) => idx.query_by_pair.entry(pair).or_default().push(qi as u32),
                Anchor::Every => idx.unanchored.push(qi as u32),
                Anchor::Never => {}
            }
            qi
        }
    };
    let idx = &mut snap.pod_index;
    for k in key_ids {
        if idx.queries[qi].per_dom.iter().any(|(kk, _)| *kk == k) {
            continue;
        }
        let t = &idx.keys[k as usize];
        let v = aggregate_by_domain(&t.dom_of_node, t.num_domains(), &idx.queries[qi].per_node, |_| true);
        idx.queries[qi].per_dom.push((k, v));
    }
}

/// Which placed pods a query must be tested against.
enum Anchor {
    /// Only pods carrying this label pair.
    Pair((Sym, Sym)),
    /// Every pod.
    Every,
    /// No pod (a selector matches nothing).
    Never,
}

fn anchor(q: &PodQuery) -> Anchor {
    if q.all_of.iter().any(|s| s.labels.matches_nothing) {
        return Anchor::Never;
    }
    for s in &q.all_of {
        for r in &s.labels.reqs {
            if let super::model::LabelOp::In(vals) = &r.op {
                if vals.len() == 1 {
                    return Anchor::Pair((r.key, vals[0]));
                }
            }
        }
    }
    Anchor::Every
}

/// Matching placed pods per node by scanning every placed pod (registration and fallback).
pub fn scan_per_node(snap: &Snapshot, q: &PodQuery) -> Vec<u32> {
    let mut per_node = vec![0u32; snap.nodes.len()];
    for p in snap.pods.values() {
        if q.matches(&p.info, ns_labels(snap, p.info.namespace), &snap.interner) {
            let idx = snap.nodes.idx_of(p.node).expect("a placed pod's node exists");
            per_node[idx.ix()] += 1;
        }
    }
    per_node
}

/// Per-node counts of `q`: the index's column when registered, else a scan.
pub fn per_node_counts<'a>(snap: &'a Snapshot, q: &PodQuery) -> Cow<'a, [u32]> {
    match snap.pod_index.query(q) {
        Some(c) => Cow::Borrowed(&c.per_node),
        None => Cow::Owned(scan_per_node(snap, q)),
    }
}

/// The domains of `key`: the index's when tracked, else built now.
pub fn key_domains<'a>(snap: &'a Snapshot, key: Sym) -> Cow<'a, TopologyKeyIndex> {
    match snap.pod_index.key_index(key) {
        Some(t) => Cow::Borrowed(t),
        None => Cow::Owned(TopologyKeyIndex::build(&snap.nodes, key)),
    }
}

/// Per-domain counts of `q` over every node carrying `key`: the index's counters when tracked,
/// else aggregated from per-node counts.
pub fn dom_counts<'a>(snap: &'a Snapshot, q: &PodQuery, t: &TopologyKeyIndex) -> Cow<'a, [u32]> {
    if let Some(v) = snap.pod_index.dom_counts(q, t.key) {
        if v.len() == t.num_domains() {
            return Cow::Borrowed(v);
        }
    }
    let per_node = per_node_counts(snap, q);
    Cow::Owned(aggregate_by_domain(&t.dom_of_node, t.num_domains(), &per_node, |_| true))
}

/// Sums `per_node[n]` into its node's domain for every node `n` with `eligible(n)`.
#[inline]
pub fn aggregate_by_domain(
    dom_of_node: &[u32],
    num_domains: usize,
    per_node: &[u32],
    eligible: impl Fn(usize) -> bool,
) -> Vec<u32> {
    let mut out = vec![0u32; num_domains];
    for (n, (&d, &c)) in dom_of_node.iter().zip(per_node).enumerate() {
        if d != NO_DOMAIN && c != 0 && eligible(n) {
            out[d as usize] += c;
        }
    }
    out
}

/// The queries a pod's own constraints and terms count, with the keys they are counted by:
/// what [`Snapshot::prepare_pod`] registers. Default spread constraints are registered through
/// `default_selector` (hostname and zone keys).
pub fn queries_of(
    pod: &PodInfo,
    default_selector: Option<&PodSelector>,
    wk_keys: [Sym; 2],
) -> Vec<(PodQuery, Vec<Sym>)> {
    let mut out: Vec<(PodQuery, Vec<Sym>)> = Vec::new();
    let c = &pod.constraints;
    for sc in &c.topology_spread {
        let sel =
            PodSelector { namespaces: super::model::NamespaceSet::only(pod.namespace), labels: sc.selector.clone() };
        out.push((PodQuery::single(sel, false), vec![sc.topology_key]));
    }
    if c.topology_spread.is_empty() {
        if let Some(sel) = default_selector {
            out.push((PodQuery::single(sel.clone(), false), wk_keys.to_vec()));
        }
    }
    let a = &c.affinity;
    if !a.required_affinity.is_empty() {
        let q = PodQuery {
            all_of: a.required_affinity.iter().map(|t| t.selector.clone()).collect(),
            count_terminating: true,
        };
        out.push((q, a.required_affinity.iter().map(|t| t.topology_key).collect()));
    }
    for t in a
        .required_anti_affinity
        .iter()
        .chain(a.preferred_affinity.iter().map(|w| &w.term))
        .chain(a.preferred_anti_affinity.iter().map(|w| &w.term))
    {
        out.push((PodQuery::single(t.selector.clone(), true), vec![t.topology_key]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::{LabelSelector, NamespaceSet, NodeSpec};
    use proptest::prelude::*;

    /// From-scratch recount of every registered query and carried term.
    fn recount(snap: &Snapshot) {
        let idx = &snap.pod_index;
        for t in &idx.keys {
            let fresh = TopologyKeyIndex::build(&snap.nodes, t.key);
            for n in 0..snap.nodes.len() {
                let a = t.dom_of_node[n];
                let b = fresh.dom_of_node[n];
                let va = if a == NO_DOMAIN { Sym::NONE } else { t.value_of_dom[a as usize] };
                let vb = if b == NO_DOMAIN { Sym::NONE } else { fresh.value_of_dom[b as usize] };
                assert_eq!(va, vb, "domain of node {n}");
            }
            for (d, v) in t.value_of_dom.iter().enumerate() {
                let want = fresh.dom_of_value(*v).map_or(0, |fd| fresh.nodes_in_dom[fd as usize]);
                assert_eq!(t.nodes_in_dom[d], want, "nodes in domain {v:?}");
            }
            assert_eq!(t.one_node_per_domain(), t.nodes_in_dom.iter().all(|&c| c <= 1), "one node per domain");
            assert_eq!(t.every_node_has_key(), !t.dom_of_node.contains(&NO_DOMAIN), "every node has the key");
        }
        for q in &idx.queries {
            let fresh = scan_per_node(snap, &q.query);
            assert_eq!(q.per_node, fresh, "per-node counts");
            let want = occupied_rows(&fresh);
            assert_eq!(super::super::bits::trimmed(&q.occupied), super::super::bits::trimmed(&want), "occupied rows");
            for (k, v) in &q.per_dom {
                let t = &idx.keys[*k as usize];
                let want = aggregate_by_domain(&t.dom_of_node, t.num_domains(), &fresh, |_| true);
                assert_eq!(&v[..], &want[..], "per-domain counts");
            }
        }
        for c in &idx.carried {
            let t = &idx.keys[c.key_idx as usize];
            let mut per_node = vec![0u32; snap.nodes.len()];
            let mut total = 0;
            for p in snap.pods.values() {
                if carried_terms(&p.info).any(|(tt, k)| *tt == c.term && k == c.kind) {
                    per_node[snap.nodes.idx_of(p.node).unwrap().ix()] += 1;
                    total += 1;
                }
            }
            assert_eq!(c.per_node, per_node, "carried per-node");
            assert_eq!(c.total, total, "carried total");
            let want = aggregate_by_domain(&t.dom_of_node, t.num_domains(), &per_node, |_| true);
            assert_eq!(&c.per_dom[..want.len()], &want[..], "carried per-domain");
            assert!(c.per_dom[want.len()..].iter().all(|&x| x == 0));
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Place { app: u8, node: u8, terminating: bool, anti: bool },
        Unplace(u8),
        AddNode { zone: u8 },
        RemoveNode(u8),
        Relabel { node: u8, zone: u8 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (0u8..3, 0u8..8, any::<bool>(), any::<bool>()).prop_map(|(app, node, terminating, anti)| Op::Place { app, node, terminating, anti }),
            3 => (0u8..64).prop_map(Op::Unplace),
            1 => (0u8..4).prop_map(|zone| Op::AddNode { zone }),
            1 => (0u8..8).prop_map(Op::RemoveNode),
            1 => (0u8..8, 0u8..4).prop_map(|(node, zone)| Op::Relabel { node, zone }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
        #[test]
        fn incremental_counters_equal_recount(ops in proptest::collection::vec(op(), 1..80)) {
            let mut snap = Snapshot::new();
            let zone = snap.wk.zone_key;
            let host = snap.wk.hostname_key;
            let app = snap.interner.intern("app");
            let mut next_node = 0u32;
            let mut node_names: Vec<String> = Vec::new();
            for z in 0..3 {
                let name = format!("n{next_node}");
                next_node += 1;
                MakeNode::new(&mut snap, &name).label("topology.kubernetes.io/zone", &format!("z{z}")).label("kubernetes.io/hostname", &name).add();
                node_names.push(name);
            }
            // Register queries up front and after some placements (both paths are covered).
            let vals: Vec<Sym> = (0..3).map(|i| snap.interner.intern(&format!("a{i}"))).collect();
            let dns = snap.wk.default_namespace;
            let sel = |v: Sym| PodSelector { namespaces: NamespaceSet::only(dns), labels: LabelSelector::new(&[(app, v)], vec![]) };
            let q0 = PodQuery::single(sel(vals[0]), false);
            ensure_query(&mut snap, &q0, &[zone, host]);
            let mut placed: Vec<crate::agent::PodUid> = Vec::new();
            for (step, o) in ops.into_iter().enumerate() {
                match o {
                    Op::Place { app: a, node, terminating, anti } => {
                        if node_names.is_empty() { continue; }
                        let n = node_names[node as usize % node_names.len()].clone();
                        let mut p = MakePod::new(&mut snap, "p").label("app", &format!("a{a}")).build();
                        p.terminating = terminating;
                        if anti {
                            p.constraints.affinity.required_anti_affinity.push(AffinityTerm::new(NamespaceSet::only(p.namespace), LabelSelector::new(&[(app, vals[a as usize])], vec![]), host));
                        }
                        let uid = p.uid;
                        let node = snap.interner.intern(&n);
                        snap.place_pod(std::sync::Arc::new(p), node).unwrap();
                        placed.push(uid);
                    }
                    Op::Unplace(i) => {
                        if placed.is_empty() { continue; }
                        let uid = placed.remove(i as usize % placed.len());
                        snap.unplace_pod(uid).unwrap();
                    }
                    Op::AddNode { zone: z } => {
                        let name = format!("n{next_node}");
                        next_node += 1;
                        let mut b = MakeNode::new(&mut snap, &name).label("kubernetes.io/hostname", &name);
                        if z < 3 { b = b.label("topology.kubernetes.io/zone", &format!("z{z}")); }
                        b.add();
                        node_names.push(name);
                    }
                    Op::RemoveNode(i) => {
                        if node_names.is_empty() { continue; }
                        let name = node_names.remove(i as usize % node_names.len());
                        let s = snap.interner.intern(&name);
                        for p in snap.remove_node(s) { placed.retain(|u| *u != p.info.uid); }
                    }
                    Op::Relabel { node, zone: z } => {
                        if node_names.is_empty() { continue; }
                        let name = node_names[node as usize % node_names.len()].clone();
                        let s = snap.interner.intern(&name);
                        let mut labels = vec![(host, s)];
                        if z < 3 { labels.push((zone, snap.interner.intern(&format!("z{z}")))); }
                        labels.sort();
                        let spec = NodeSpec { name: s, labels, allowed_pod_number: 110, ..Default::default() };
                        snap.update_node(&spec).unwrap();
                    }
                }
                if step == 10 {
                    let q1 = PodQuery::single(sel(vals[1]), true);
                    ensure_query(&mut snap, &q1, &[zone]);
                }
                if step == 5 {
                    // Unanchored (Exists) and never-matching selectors.
                    let exists = LabelSelector::new(&[], vec![crate::snapshot::LabelRequirement { key: app, op: crate::snapshot::LabelOp::Exists }]);
                    let q2 = PodQuery::single(PodSelector { namespaces: NamespaceSet::only(dns), labels: exists }, false);
                    ensure_query(&mut snap, &q2, &[host]);
                    let q3 = PodQuery::single(PodSelector { namespaces: NamespaceSet::only(dns), labels: LabelSelector::nothing() }, true);
                    ensure_query(&mut snap, &q3, &[zone]);
                }
                recount(&snap);
            }
        }
    }

    #[test]
    fn namespace_relabel_recounts_selector_queries() {
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "n1").label("topology.kubernetes.io/zone", "z1").add();
        let team = snap.interner.intern("team");
        let (t1, t2) = (snap.interner.intern("t1"), snap.interner.intern("t2"));
        let ns = snap.interner.intern("ns-a");
        snap.set_namespace(ns, vec![(team, t1)]);
        MakePod::new(&mut snap, "p").namespace("ns-a").label("app", "x").place("n1");
        let sel = PodSelector {
            namespaces: NamespaceSet { names: vec![], selector: Some(LabelSelector::new(&[(team, t1)], vec![])) },
            labels: LabelSelector::everything(),
        };
        let q = PodQuery::single(sel, true);
        let zone = snap.wk.zone_key;
        ensure_query(&mut snap, &q, &[zone]);
        // (namespace labels, want count)
        for (labels, want) in [(vec![(team, t2)], 0u32), (vec![(team, t1)], 1)] {
            snap.set_namespace(ns, labels);
            assert_eq!(snap.pod_index.query(&q).unwrap().per_node, vec![want]);
            assert_eq!(snap.pod_index.dom_counts(&q, snap.wk.zone_key).unwrap(), &[want]);
        }
    }

    #[test]
    fn namespace_set_for_term_table() {
        let (own, a, b) = (Sym(1), Sym(2), Sym(3));
        // (names, selector, want names, want selector)
        let cases = vec![
            (vec![], None, vec![own], None),
            (vec![b, a, b], None, vec![a, b], None),
            (vec![], Some(LabelSelector::everything()), vec![], Some(LabelSelector::everything())),
        ];
        for (names, sel, want_names, want_sel) in cases {
            assert_eq!(NamespaceSet::for_term(own, names, sel), NamespaceSet { names: want_names, selector: want_sel });
        }
    }

    #[test]
    fn query_matching_table() {
        // (pod labels, terminating, selector labels, count_terminating, want)
        let mut snap = Snapshot::new();
        let (a, x, y) = (snap.interner.intern("app"), snap.interner.intern("x"), snap.interner.intern("y"));
        let ns = snap.wk.default_namespace;
        let other = snap.interner.intern("other");
        type Case = (Vec<(Sym, Sym)>, Sym, bool, LabelSelector, bool, bool);
        let cases: Vec<Case> = vec![
            (vec![(a, x)], ns, false, LabelSelector::new(&[(a, x)], vec![]), false, true),
            (vec![(a, y)], ns, false, LabelSelector::new(&[(a, x)], vec![]), false, false),
            (vec![(a, x)], ns, true, LabelSelector::new(&[(a, x)], vec![]), false, false),
            (vec![(a, x)], ns, true, LabelSelector::new(&[(a, x)], vec![]), true, true),
            (vec![(a, x)], other, false, LabelSelector::new(&[(a, x)], vec![]), false, false),
            (vec![], ns, false, LabelSelector::everything(), false, true),
            (vec![(a, x)], ns, false, LabelSelector::nothing(), false, false),
        ];
        for (i, (labels, pns, term, sel, ct, want)) in cases.into_iter().enumerate() {
            let mut p = MakePod::new(&mut snap, "p").build();
            p.labels = labels;
            p.namespace = pns;
            p.terminating = term;
            let q = PodQuery::single(PodSelector { namespaces: NamespaceSet::only(ns), labels: sel }, ct);
            assert_eq!(q.matches(&p, &[], &snap.interner), want, "case {i}");
        }
    }
}
