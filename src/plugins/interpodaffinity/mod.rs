//! InterPodAffinity: required pod affinity / anti-affinity and existing pods' required
//! anti-affinity (Filter); preferred terms both ways and existing pods' required affinity weighted
//! by `hardPodAffinityWeight` (Score). `plugins/interpodaffinity/{filtering,scoring}.go`.
//!
//! PreFilter reads per-domain counters from the snapshot's pod index instead of walking the
//! placed pods: the incoming pod's terms are registered queries, and existing pods' terms are
//! "carried" counters, one per distinct term, so the symmetry check tests the incoming pod once
//! per distinct term rather than once per placed pod.

#[cfg(test)]
mod tests;

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status, MAX_NODE_SCORE};
use crate::snapshot::pod_index::{self, ns_labels, CarriedKind, PodQuery, TopologyKeyIndex, NO_DOMAIN};
use crate::snapshot::PodInfo;
use crate::snapshot::{AffinityTerm, NodeIdx, Snapshot, Sym};

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
    Tracked(Sym),
    Owned(TopologyKeyIndex),
}

impl Domains {
    fn new(snap: &Snapshot, key: Sym) -> Self {
        match snap.pod_index.key_index(key) {
            Some(_) => Domains::Tracked(key),
            None => Domains::Owned(TopologyKeyIndex::build(&snap.nodes, key)),
        }
    }

    fn get<'a>(&'a self, snap: &'a Snapshot) -> &'a TopologyKeyIndex {
        match self {
            Domains::Tracked(k) => snap.pod_index.key_index(*k).expect("tracked keys stay tracked"),
            Domains::Owned(t) => t,
        }
    }
}

/// Per-domain counts of a term's key.
struct DomCounts {
    domains: Domains,
    counts: Vec<u32>,
}

impl DomCounts {
    fn compute(snap: &Snapshot, q: &PodQuery, key: Sym) -> Self {
        let domains = Domains::new(snap, key);
        let counts = pod_index::dom_counts(snap, q, domains.get(snap)).into_owned();
        DomCounts { domains, counts }
    }

    #[inline]
    fn at(&self, snap: &Snapshot, n: NodeIdx) -> Option<u32> {
        let d = self.domains.get(snap).dom_of_node[n.ix()];
        (d != NO_DOMAIN).then(|| self.counts.get(d as usize).copied().unwrap_or(0))
    }
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

const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

/// Per topology key: the score of each domain.
struct PreScoreState {
    keys: Vec<(Domains, Vec<i64>)>,
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
            .filter(|c| c.kind == CarriedKind::RequiredAntiAffinity && c.total > 0)
            .filter(|c| c.term.selector.matches(pod.namespace, &pod.labels, pod_ns_labels, &snap.interner))
            .map(|c| DomCounts { domains: Domains::Tracked(c.term.topology_key), counts: c.per_dom.clone() })
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
                affinity_counts_empty &= dc.counts.iter().all(|&c| c == 0);
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
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else { return };
        let snap = cx.snap;
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            // satisfyPodAffinity
            let mut pods_exist = true;
            let mut keys_present = true;
            for dc in &s.affinity {
                match dc.at(snap, n) {
                    None => {
                        keys_present = false;
                        break;
                    }
                    Some(0) => pods_exist = false,
                    Some(_) => {}
                }
            }
            let affinity_ok = keys_present && (pods_exist || (s.affinity_counts_empty && s.self_match_all));
            if !affinity_ok {
                *o = Some(Reject::unresolvable(DETAIL_AFFINITY));
            } else if s.anti.iter().any(|dc| dc.at(snap, n).is_some_and(|c| c > 0)) {
                *o = Some(Reject::unschedulable(DETAIL_ANTI));
            } else if s.existing_anti.iter().any(|dc| dc.at(snap, n).is_some_and(|c| c > 0)) {
                *o = Some(Reject::unschedulable(DETAIL_EXISTING_ANTI));
            }
        }
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
        let mut s = PreScoreState { keys: Vec::new() };
        if self.ignore_preferred_terms_of_existing_pods && !has_preferred {
            return Status::skip();
        }
        let add = |s: &mut PreScoreState, key: Sym, counts: &[u32], weight: i64| {
            if weight == 0 || counts.iter().all(|&c| c == 0) {
                return;
            }
            let i = match s.keys.iter().position(|(d, _)| d.get(snap).key == key) {
                Some(i) => i,
                None => {
                    let d = Domains::new(snap, key);
                    let n = d.get(snap).num_domains();
                    s.keys.push((d, vec![0; n]));
                    s.keys.len() - 1
                }
            };
            let v = &mut s.keys[i].1;
            for (d, &c) in counts.iter().enumerate().take(v.len()) {
                v[d] += weight * c as i64;
            }
        };
        // The incoming pod's preferred terms against existing pods.
        for (terms, sign) in [(&a.preferred_affinity, 1i64), (&a.preferred_anti_affinity, -1)] {
            for w in terms.iter() {
                let q = PodQuery::single(w.term.selector.clone(), true);
                let d = Domains::new(snap, w.term.topology_key);
                let counts = pod_index::dom_counts(snap, &q, d.get(snap)).into_owned();
                add(&mut s, w.term.topology_key, &counts, sign * w.weight as i64);
            }
        }
        // Existing pods' terms against the incoming pod.
        let pod_ns_labels = ns_labels(snap, pod.namespace);
        for c in snap.pod_index.carried.iter().filter(|c| c.total > 0) {
            let weight = match c.kind {
                CarriedKind::RequiredAntiAffinity => continue,
                CarriedKind::RequiredAffinity => self.hard_pod_affinity_weight,
                CarriedKind::PreferredAffinity(w) => w as i64,
                CarriedKind::PreferredAntiAffinity(w) => -(w as i64),
            };
            if c.term.selector.matches(pod.namespace, &pod.labels, pod_ns_labels, &snap.interner) {
                add(&mut s, c.term.topology_key, &c.per_dom, weight);
            }
        }
        // Nothing contributes a score: upstream returns Skip when its topologyScore map is empty.
        if s.keys.is_empty() {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, s);
        Status::success()
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            out.fill(0);
            return Ok(());
        };
        let keys: Vec<(&[u32], &[i64])> =
            s.keys.iter().map(|(d, v)| (d.get(cx.snap).dom_of_node.as_slice(), v.as_slice())).collect();
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            *o = keys
                .iter()
                .map(|(dom, v)| match dom[n.ix()] {
                    NO_DOMAIN => 0,
                    d => v.get(d as usize).copied().unwrap_or(0),
                })
                .sum();
        }
        Ok(())
    }

    fn normalize(&self, _cx: CycleCx<'_>, _state: &CycleState, _nodes: &[NodeIdx], scores: &mut [i64]) {
        normalize_scores(scores);
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
    let (Some(&hi), Some(&lo)) = (scores.iter().max(), scores.iter().min()) else { return };
    let diff = hi - lo;
    for s in scores.iter_mut() {
        *s = if diff > 0 { (MAX_NODE_SCORE as f64 * ((*s - lo) as f64 / diff as f64)) as i64 } else { 0 };
    }
}
