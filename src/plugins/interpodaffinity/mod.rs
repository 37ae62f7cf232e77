//! InterPodAffinity: required pod affinity / anti-affinity and existing pods' required
//! anti-affinity (Filter); preferred terms both ways and existing pods' required affinity weighted
//! by `hardPodAffinityWeight` (Score). `plugins/interpodaffinity/{filtering,scoring}.go`.
//!
//! PreFilter reads per-domain counters from the snapshot's pod index instead of walking the
//! placed pods: the incoming pod's terms are registered queries, and existing pods' terms are
//! "carried" counters, one per distinct term, so the symmetry check tests the incoming pod once
//! per distinct term rather than once per placed pod. The cycle state names those counters and
//! reads them in place (nothing is copied per pod); Filter and Score make one pass per term over
//! the nodes, and Score reads counts only at the scored nodes.

#[cfg(test)]
mod tests;

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status, MAX_NODE_SCORE};
use crate::snapshot::pod_index::{self, ns_labels, CarriedKind, PodQuery, TopologyKeyIndex, NO_DOMAIN};
use crate::snapshot::PodInfo;
use crate::snapshot::{AffinityTerm, NodeIdx, Snapshot, Sym};
use smallvec::SmallVec;

pub const NAME: &str = "InterPodAffinity";
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod anti-affinity rules";

const DETAIL_AFFINITY: u64 = 0;
const DETAIL_ANTI: u64 = 1;
const DETAIL_EXISTING_ANTI: u64 = 2;

/// The plugin with its `InterPodAffinityArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterPodAffinity {
    pub hard_pod_affinity_weight: i64,
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity { hard_pod_affinity_weight: 1, ignore_preferred_terms_of_existing_pods: false }
    }
}

/// Domain ids of a key's nodes: the snapshot's when tracked, else owned.
enum Domains {
    Tracked(usize),
    Owned(TopologyKeyIndex),
}

impl Domains {
    fn new(snap: &Snapshot, key: Sym) -> Self {
        match snap.pod_index.key_position(key) {
            Some(k) => Domains::Tracked(k as usize),
            None => Domains::Owned(TopologyKeyIndex::build(&snap.nodes, key)),
        }
    }

    fn get<'a>(&'a self, snap: &'a Snapshot) -> &'a TopologyKeyIndex {
        match self {
            Domains::Tracked(k) => &snap.pod_index.keys[*k],
            Domains::Owned(t) => t,
        }
    }
}

/// Where a term's per-domain counts are. The index's own counters are read in place, never
/// copied: a cycle's state lives while the snapshot it was computed on is unchanged (a cycle's
/// PreFilter and Filter, PreScore and Score, run on one snapshot; a preemption dry run that moves
/// pods runs PreFilter again, `Snapshot::pre_filter_reads_pods`).
enum Counts {
    /// `pod_index.carried[i].per_dom`.
    Carried(usize),
    /// `pod_index.queries[q].per_dom[slot]`.
    Query(usize, usize),
    /// Aggregated now: the query or the key is not tracked.
    Owned(Vec<u32>),
}

impl Counts {
    /// `q`'s counts per domain of `domains` (`pod_index::dom_counts`, without the copy).
    fn of_query(snap: &Snapshot, q: &PodQuery, domains: &TopologyKeyIndex) -> Self {
        if let Some((qi, slot)) = snap.pod_index.dom_counts_slot(q, domains.key) {
            if snap.pod_index.queries[qi].per_dom[slot].1.len() == domains.num_domains() {
                return Counts::Query(qi, slot);
            }
        }
        Counts::Owned(pod_index::dom_counts(snap, q, domains).into_owned())
    }

    fn get<'a>(&'a self, snap: &'a Snapshot) -> &'a [u32] {
        match self {
            Counts::Carried(i) => &snap.pod_index.carried[*i].per_dom,
            Counts::Query(q, slot) => &snap.pod_index.queries[*q].per_dom[*slot].1,
            Counts::Owned(v) => v,
        }
    }
}

/// Per-domain counts of a term's key.
struct DomCounts {
    domains: Domains,
    counts: Counts,
}

impl DomCounts {
    fn compute(snap: &Snapshot, q: &PodQuery, key: Sym) -> Self {
        let domains = Domains::new(snap, key);
        let counts = Counts::of_query(snap, q, domains.get(snap));
        DomCounts { domains, counts }
    }

    /// The two slices a node's count is read from, looked up once per call of a plugin point.
    fn resolve<'a>(&'a self, snap: &'a Snapshot) -> Column<'a> {
        Column { dom_of_node: &self.domains.get(snap).dom_of_node, counts: self.counts.get(snap) }
    }
}

/// A term's count per node: its node's domain, then the domain's count.
#[derive(Clone, Copy)]
struct Column<'a> {
    dom_of_node: &'a [u32],
    counts: &'a [u32],
}

impl Column<'_> {
    /// The count in node `n`'s domain; `None` when the node lacks the key.
    #[inline]
    fn at(&self, n: NodeIdx) -> Option<u32> {
        let d = self.dom_of_node[n.ix()];
        (d != NO_DOMAIN).then(|| self.counts.get(d as usize).copied().unwrap_or(0))
    }

    /// Whether node `n` is in a domain with a non-zero count.
    #[inline]
    fn positive(&self, n: NodeIdx) -> bool {
        self.at(n).is_some_and(|c| c > 0)
    }
}

type Columns<'a> = SmallVec<[Column<'a>; 4]>;

fn resolve_all<'a>(snap: &'a Snapshot, terms: &'a [DomCounts]) -> Columns<'a> {
    terms.iter().map(|t| t.resolve(snap)).collect()
}

struct PreFilterState {
    /// Per required affinity term: pods matching all terms, per domain of the term's key.
    affinity: Vec<DomCounts>,
    /// No pod matching all terms sits on a node with a term's key.
    affinity_counts_empty: bool,
    /// The pod matches all its own required affinity terms (the first pod of a group).
    self_match_all: bool,
    /// Per required anti-affinity term: matching pods per domain.
    anti: Vec<DomCounts>,
    /// Existing pods' required anti-affinity terms that match the incoming pod: carriers per domain.
    existing_anti: Vec<DomCounts>,
}

/// Filter over a block of nodes: writes each rejection into `out` and returns whether it wrote
/// one. One pass per term over the block (its two slices resolved once), in upstream's order of
/// checks: a node keeps the first rejection, so a later pass looks only at nodes still passing.
fn filter_block(snap: &Snapshot, s: &PreFilterState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) -> bool {
    let mut any = false;
    if !s.affinity.is_empty() {
        // satisfyPodAffinity: every term's key present, and pods in every term's domain (or
        // none anywhere and the pod matches its own terms).
        let affinity = resolve_all(snap, &s.affinity);
        let lone_pod_ok = s.affinity_counts_empty && s.self_match_all;
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            let mut pods_exist = true;
            let mut keys_present = true;
            for c in &affinity {
                match c.at(n) {
                    None => {
                        keys_present = false;
                        break;
                    }
                    Some(0) => pods_exist = false,
                    Some(_) => {}
                }
            }
            if !(keys_present && (pods_exist || lone_pod_ok)) {
                *o = Some(Reject::unresolvable(DETAIL_AFFINITY));
                any = true;
            }
        }
    }
    // satisfyPodAntiAffinity, then satisfyExistingPodsAntiAffinity.
    if !s.anti.is_empty() || !s.existing_anti.is_empty() {
        any |= filter_anti(&resolve_all(snap, &s.anti), &resolve_all(snap, &s.existing_anti), nodes, out);
    }
    any
}

/// The anti-affinity checks over a block in one pass: each node not yet rejected is rejected with
/// [`DETAIL_ANTI`] when one of `anti` (the pod's own terms) counts a pod in its domain, else with
/// [`DETAIL_EXISTING_ANTI`] when one of `existing` (existing pods' terms that match the pod) does;
/// returns whether it rejected one.
fn filter_anti(anti: &[Column<'_>], existing: &[Column<'_>], nodes: &[NodeIdx], out: &mut [Option<Reject>]) -> bool {
    let mut any = false;
    // One term of the pod's and one existing term on the same topology key (a pod whose anti-affinity
    // selects its own kind, as upstream's SchedulingPodAntiAffinity): the two count slices and the
    // domain column held in registers, the node's domain read once.
    if let ([a], [e]) = (anti, existing) {
        if std::ptr::eq(a.dom_of_node, e.dom_of_node) {
            let (dom_of_node, ca, ce) = (a.dom_of_node, a.counts, e.counts);
            for (&n, o) in nodes.iter().zip(out.iter_mut()) {
                let d = dom_of_node[n.ix()];
                if d == NO_DOMAIN || o.is_some() {
                    continue;
                }
                let d = d as usize;
                let detail = if ca.get(d).is_some_and(|&x| x > 0) {
                    DETAIL_ANTI
                } else if ce.get(d).is_some_and(|&x| x > 0) {
                    DETAIL_EXISTING_ANTI
                } else {
                    continue;
                };
                *o = Some(Reject::unschedulable(detail));
                any = true;
            }
            return any;
        }
    }
    for (&n, o) in nodes.iter().zip(out.iter_mut()) {
        if o.is_some() {
            continue;
        }
        if anti.iter().any(|c| c.positive(n)) {
            *o = Some(Reject::unschedulable(DETAIL_ANTI));
            any = true;
        } else if existing.iter().any(|c| c.positive(n)) {
            *o = Some(Reject::unschedulable(DETAIL_EXISTING_ANTI));
            any = true;
        }
    }
    any
}

const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

/// What scores a node: the weighted counts of every term that contributes, summed over the terms
/// (upstream sums them per topology key and value first; the sum is the same).
struct PreScoreState {
    terms: Vec<(DomCounts, i64)>,
}

fn required_affinity_query(terms: &[AffinityTerm]) -> PodQuery {
    PodQuery { all_of: terms.iter().map(|t| t.selector.clone()).collect(), count_terminating: true }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// Pods with pod (anti-)affinity cannot be signed; otherwise the labels (which other pods'
    /// terms may select), unless only pods with affinity count (`ignorePreferredTermsOfExistingPods`).
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        if pod.sign.pod_affinity_set {
            return Sign::Unsignable("pods with InterPodAffinity are not signable");
        }
        if !self.ignore_preferred_terms_of_existing_pods {
            sig.put(keys::LABELS, &pod.labels);
        }
        Sign::Signed
    }

    fn score_state_missing(&self) -> Option<&'static str> {
        Some("failed to read \"PreScoreInterPodAffinity\" from cycleState: not found")
    }

    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        let (snap, pod) = (cx.snap, cx.pod);
        let a = &pod.constraints.affinity;
        let pod_ns_labels = ns_labels(snap, pod.namespace);
        let existing_anti: Vec<DomCounts> = snap
            .pod_index
            .carried
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == CarriedKind::RequiredAntiAffinity && c.total > 0)
            .filter(|(_, c)| c.term.selector.matches(pod.namespace, &pod.labels, pod_ns_labels, &snap.interner))
            .map(|(i, c)| DomCounts { domains: Domains::Tracked(c.key_idx as usize), counts: Counts::Carried(i) })
            .collect();
        if a.required_affinity.is_empty() && a.required_anti_affinity.is_empty() && existing_anti.is_empty() {
            return (Status::skip(), PreFilterResult::default());
        }
        let mut affinity = Vec::new();
        let mut affinity_counts_empty = true;
        if !a.required_affinity.is_empty() {
            let q = required_affinity_query(&a.required_affinity);
            for t in &a.required_affinity {
                let dc = DomCounts::compute(snap, &q, t.topology_key);
                affinity_counts_empty &= dc.counts.get(snap).iter().all(|&c| c == 0);
                affinity.push(dc);
            }
        }
        let self_match_all = a.required_affinity.iter().all(|t| self_matches(snap, pod, &t.selector));
        let anti = a
            .required_anti_affinity
            .iter()
            .map(|t| DomCounts::compute(snap, &PodQuery::single(t.selector.clone(), true), t.topology_key))
            .collect();
        state.write(
            PRE_FILTER_KEY,
            PreFilterState { affinity, affinity_counts_empty, self_match_all, anti, existing_anti },
        );
        (Status::success(), PreFilterResult::default())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        if let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) {
            filter_block(cx.snap, s, nodes, out);
        }
    }

    /// The loop knows whether it rejected a node (no scan of `out` afterwards).
    fn filter_any(
        &self,
        cx: CycleCx<'_>,
        state: &CycleState,
        nodes: &[NodeIdx],
        out: &mut [Option<Reject>],
    ) -> Option<bool> {
        Some(state.read::<PreFilterState>(PRE_FILTER_KEY).is_some_and(|s| filter_block(cx.snap, s, nodes, out)))
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        let r = match reject.detail {
            DETAIL_AFFINITY => ERR_REASON_AFFINITY_RULES_NOT_MATCH,
            DETAIL_ANTI => ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
            _ => ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
        };
        vec![r.to_string()]
    }

    fn pre_score(&self, cx: CycleCx<'_>, state: &mut CycleState, _feasible: &[NodeIdx]) -> Status {
        let (snap, pod) = (cx.snap, cx.pod);
        let a = &pod.constraints.affinity;
        let has_preferred = !a.preferred_affinity.is_empty() || !a.preferred_anti_affinity.is_empty();
        if self.ignore_preferred_terms_of_existing_pods && !has_preferred {
            return Status::skip();
        }
        // A term contributes when it has a weight and a pod it counts sits on a node with its key
        // (upstream adds a topologyScore entry exactly then).
        let mut terms = Vec::new();
        let mut add = |dc: DomCounts, weight: i64| {
            if weight != 0 && dc.counts.get(snap).iter().any(|&c| c != 0) {
                terms.push((dc, weight));
            }
        };
        // The incoming pod's preferred terms against existing pods.
        for (ts, sign) in [(&a.preferred_affinity, 1i64), (&a.preferred_anti_affinity, -1)] {
            for w in ts.iter() {
                let q = PodQuery::single(w.term.selector.clone(), true);
                add(DomCounts::compute(snap, &q, w.term.topology_key), sign * w.weight as i64);
            }
        }
        // Existing pods' terms against the incoming pod.
        let pod_ns_labels = ns_labels(snap, pod.namespace);
        for (i, c) in snap.pod_index.carried.iter().enumerate().filter(|(_, c)| c.total > 0) {
            let weight = match c.kind {
                CarriedKind::RequiredAntiAffinity => continue,
                CarriedKind::RequiredAffinity => self.hard_pod_affinity_weight,
                CarriedKind::PreferredAffinity(w) => w as i64,
                CarriedKind::PreferredAntiAffinity(w) => -(w as i64),
            };
            if c.term.selector.matches(pod.namespace, &pod.labels, pod_ns_labels, &snap.interner) {
                add(DomCounts { domains: Domains::Tracked(c.key_idx as usize), counts: Counts::Carried(i) }, weight);
            }
        }
        // Nothing contributes a score: upstream returns Skip when its topologyScore map is empty.
        if terms.is_empty() {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, PreScoreState { terms });
        Status::success()
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            out.fill(0);
            return Ok(());
        };
        let terms: SmallVec<[(Column<'_>, i64); 4]> = s.terms.iter().map(|(dc, w)| (dc.resolve(cx.snap), *w)).collect();
        score_nodes(&terms, nodes, out);
        Ok(())
    }

    fn normalize(&self, _cx: CycleCx<'_>, _state: &CycleState, _nodes: &[NodeIdx], scores: &mut [i64]) {
        normalize_scores(scores);
    }
}

/// Each node's score: the sum over the terms of weight × the count in the node's domain (0 where
/// the node lacks the term's key).
/// One pass per term over the nodes (the first writes, the others add).
fn score_nodes(terms: &[(Column<'_>, i64)], nodes: &[NodeIdx], out: &mut [i64]) {
    let Some(((first, w0), rest)) = terms.split_first() else {
        out.fill(0);
        return;
    };
    for (&n, o) in nodes.iter().zip(out.iter_mut()) {
        *o = w0 * first.at(n).unwrap_or(0) as i64;
    }
    for (c, w) in rest {
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            *o += w * c.at(n).unwrap_or(0) as i64;
        }
    }
}

/// `podMatchesAllAffinityTerms` for one of the incoming pod's own required affinity terms, after
/// PreFilter's `mergeAffinityTermNamespacesIfNotEmpty`: a non-empty `namespaceSelector` is turned
/// into the names of the existing Namespaces it selects (and then selects nothing), so the pod's
/// own namespace counts when it exists and its labels match; an empty selector (`{}`) is kept and
/// matches the nil namespace labels the check passes, so it selects every namespace.
fn self_matches(snap: &Snapshot, pod: &crate::snapshot::PodInfo, sel: &crate::snapshot::PodSelector) -> bool {
    let ns = pod.namespace;
    let ns_ok = sel.namespaces.names.binary_search(&ns).is_ok()
        || sel.namespaces.selector.as_ref().is_some_and(|s| {
            s.is_empty() || snap.cluster.namespaces.get(&ns).is_some_and(|labels| s.matches(labels, &snap.interner))
        });
    ns_ok && sel.labels.matches(&pod.labels, &snap.interner)
}

/// InterPodAffinity's NormalizeScore: lo = min, hi = max of the scores (the real ones, not
/// clamped to 0); s' = ⌊100 · (s − lo) / (hi − lo)⌋ (float), 0 when hi = lo.
pub fn normalize_scores(scores: &mut [i64]) {
    let Some(&first) = scores.first() else { return };
    let (lo, hi) = scores.iter().fold((first, first), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    let diff = hi - lo;
    for s in scores.iter_mut() {
        *s = if diff > 0 { (MAX_NODE_SCORE as f64 * ((*s - lo) as f64 / diff as f64)) as i64 } else { 0 };
    }
}
