//! Cases modelled on upstream's `filtering_test.go` (TestRequiredAffinitySingleNode,
//! TestRequiredAffinityMultipleNodes) and `scoring_test.go` (TestPreferredAffinity,
//! TestPreferredAffinityWithHardPodAffinitySymmetricWeight). Each runs with and without the
//! incoming pod's queries registered in the pod index.

use super::*;
use crate::framework::Code;
use crate::plugins::testutil::filter_one;
use crate::snapshot::testing::{add_namespace, sel_labels, MakeNode, MakePod};
use crate::snapshot::{LabelSelector, NamespaceSet, PodInfo};

type Nodes = &'static [(&'static str, &'static [(&'static str, &'static str)])];
type Build = fn(&mut Snapshot) -> PodInfo;
type Want = Option<(Code, &'static str)>;

const P: Option<(Code, &str)> = None;
const AFF: Option<(Code, &str)> = Some((Code::UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH));
const ANTI: Option<(Code, &str)> = Some((Code::Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH));
const EXISTING: Option<(Code, &str)> = Some((Code::Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH));

const NODE1: Nodes = &[("node1", &[("region", "r1"), ("zone", "z11"), ("hostname", "h1")])];
const THREE: Nodes = &[
    ("node1", &[("region", "r1"), ("zone", "z11")]),
    ("node2", &[("region", "r1"), ("zone", "z12")]),
    ("node3", &[("region", "r2"), ("zone", "z21")]),
];

/// Builds the snapshot: nodes, the team namespaces, then each existing pod on its node.
fn setup(nodes: Nodes, existing: &[(&str, Build)]) -> Snapshot {
    let mut snap = Snapshot::new();
    for (name, labels) in nodes {
        let mut n = MakeNode::new(&mut snap, name);
        for (k, v) in labels.iter() {
            n = n.label(k, v);
        }
        n.add();
    }
    add_namespace(&mut snap, "subteam1.team1", &[("team", "team1")]);
    add_namespace(&mut snap, "subteam2.team2", &[("team", "team2")]);
    for (node, b) in existing {
        let p = b(&mut snap);
        let node = snap.interner.intern(node);
        snap.place_pod(std::sync::Arc::new(p), node).unwrap();
    }
    snap
}

fn labelled(s: &mut Snapshot, k: &str, v: &str) -> PodInfo {
    MakePod::new(s, "e").label(k, v).build()
}

#[test]
fn required_filter_table() {
    type Case = (&'static str, Nodes, Vec<(&'static str, Build)>, Build, Vec<(&'static str, Want)>);
    let cases: Vec<Case> = vec![
        (
            "a pod without pod affinity schedules onto a node with no existing pods",
            NODE1,
            vec![],
            |s| MakePod::new(s, "p").build(),
            vec![("node1", P)],
        ),
        (
            "satisfies required affinity with In that matches the existing pod",
            NODE1,
            vec![("node1", |s| labelled(s, "service", "securityscan"))],
            |s| {
                MakePod::new(s, "p")
                    .label("security", "S1")
                    .pod_affinity("service", Some(&["securityscan", "value2"]), "region")
                    .build()
            },
            vec![("node1", P)],
        ),
        (
            "does not satisfy required affinity: the matching pod is in another namespace",
            NODE1,
            vec![("node1", |s| MakePod::new(s, "e").namespace("ns").label("service", "securityscan").build())],
            |s| MakePod::new(s, "p").pod_affinity("service", Some(&["securityscan"]), "region").build(),
            vec![("node1", AFF)],
        ),
        (
            "does not satisfy required affinity: no pod matches",
            NODE1,
            vec![("node1", |s| labelled(s, "service", "other"))],
            |s| MakePod::new(s, "p").pod_affinity("service", Some(&["securityscan"]), "region").build(),
            vec![("node1", AFF)],
        ),
        (
            "the first pod of a group matching its own term passes",
            NODE1,
            vec![],
            |s| MakePod::new(s, "p").label("service", "web").pod_affinity("service", Some(&["web"]), "region").build(),
            vec![("node1", P)],
        ),
        (
            "the first pod of a group not matching its own term fails",
            NODE1,
            vec![],
            |s| MakePod::new(s, "p").label("service", "db").pod_affinity("service", Some(&["web"]), "region").build(),
            vec![("node1", AFF)],
        ),
        (
            "required affinity fails on a node missing the topology key",
            &[("node1", &[("zone", "z11")])],
            vec![],
            |s| MakePod::new(s, "p").label("service", "web").pod_affinity("service", Some(&["web"]), "region").build(),
            vec![("node1", AFF)],
        ),
        (
            "affinity terms are ANDed: a pod must match both",
            THREE,
            vec![
                ("node1", |s| labelled(s, "app", "a")),
                ("node2", |s| MakePod::new(s, "e").label("app", "a").label("tier", "t").build()),
            ],
            |s| {
                MakePod::new(s, "p")
                    .pod_affinity("app", Some(&["a"]), "zone")
                    .pod_affinity("tier", None, "region")
                    .build()
            },
            // Only node2's pod matches both; region r1 holds it but zone z11 does not.
            vec![("node1", AFF), ("node2", P), ("node3", AFF)],
        ),
        (
            "required anti-affinity rejects the domain holding a matching pod",
            THREE,
            vec![("node1", |s| labelled(s, "service", "securityscan"))],
            |s| MakePod::new(s, "p").pod_anti_affinity("service", Some(&["securityscan"]), "region").build(),
            vec![("node1", ANTI), ("node2", ANTI), ("node3", P)],
        ),
        (
            "existing pod's anti-affinity rejects a matching incoming pod (symmetry)",
            THREE,
            vec![("node1", |s| MakePod::new(s, "e").pod_anti_affinity("security", Some(&["S1"]), "zone").build())],
            |s| MakePod::new(s, "p").label("security", "S1").build(),
            vec![("node1", EXISTING), ("node2", P), ("node3", P)],
        ),
        (
            "existing pod's anti-affinity ignores a non-matching incoming pod",
            THREE,
            vec![("node1", |s| MakePod::new(s, "e").pod_anti_affinity("security", Some(&["S1"]), "zone").build())],
            |s| MakePod::new(s, "p").label("security", "S2").build(),
            vec![("node1", P)],
        ),
        (
            "affinity is checked before anti-affinity",
            THREE,
            vec![("node1", |s| labelled(s, "service", "securityscan"))],
            |s| {
                MakePod::new(s, "p")
                    .pod_affinity("service", Some(&["nothing"]), "region")
                    .pod_anti_affinity("service", Some(&["securityscan"]), "region")
                    .build()
            },
            vec![("node1", AFF)],
        ),
        (
            "namespaceSelector selects the existing pod's namespace by labels",
            NODE1,
            vec![("node1", |s| {
                MakePod::new(s, "e").namespace("subteam1.team1").label("service", "securityscan").build()
            })],
            |s| {
                let sel = sel_labels(s, &[("service", "securityscan")]);
                let team = sel_labels(s, &[("team", "team1")]);
                let region = s.interner.intern("region");
                let t = AffinityTerm::new(NamespaceSet { names: vec![], selector: Some(team) }, sel, region);
                MakePod::new(s, "p").affinity_term(t).build()
            },
            vec![("node1", P)],
        ),
        (
            "namespaceSelector not matching the existing pod's namespace",
            NODE1,
            vec![("node1", |s| {
                MakePod::new(s, "e").namespace("subteam2.team2").label("service", "securityscan").build()
            })],
            |s| {
                let sel = sel_labels(s, &[("service", "securityscan")]);
                let team = sel_labels(s, &[("team", "team1")]);
                let region = s.interner.intern("region");
                let t = AffinityTerm::new(NamespaceSet { names: vec![], selector: Some(team) }, sel, region);
                MakePod::new(s, "p").affinity_term(t).build()
            },
            vec![("node1", AFF)],
        ),
        (
            // scheduler_perf SchedulingRequiredPodAffinityWithNSSelector: the namespaceSelector is
            // merged into the term's namespaces before the first-pod-of-a-group self-match.
            "the first pod of a group matches itself through its namespaceSelector",
            NODE1,
            vec![],
            |s| {
                let sel = sel_labels(s, &[("service", "securityscan")]);
                let team = sel_labels(s, &[("team", "team1")]);
                let region = s.interner.intern("region");
                let t = AffinityTerm::new(NamespaceSet { names: vec![], selector: Some(team) }, sel, region);
                MakePod::new(s, "p")
                    .namespace("subteam1.team1")
                    .label("service", "securityscan")
                    .affinity_term(t)
                    .build()
            },
            vec![("node1", P)],
        ),
        (
            "the first pod of a group: a namespaceSelector not selecting its own namespace",
            NODE1,
            vec![],
            |s| {
                let sel = sel_labels(s, &[("service", "securityscan")]);
                let team = sel_labels(s, &[("team", "team1")]);
                let region = s.interner.intern("region");
                let t = AffinityTerm::new(NamespaceSet { names: vec![], selector: Some(team) }, sel, region);
                MakePod::new(s, "p")
                    .namespace("subteam2.team2")
                    .label("service", "securityscan")
                    .affinity_term(t)
                    .build()
            },
            vec![("node1", AFF)],
        ),
        (
            "an empty namespaceSelector selects every namespace",
            NODE1,
            vec![("node1", |s| {
                MakePod::new(s, "e").namespace("subteam2.team2").label("service", "securityscan").build()
            })],
            |s| {
                let sel = sel_labels(s, &[("service", "securityscan")]);
                let region = s.interner.intern("region");
                let t = AffinityTerm::new(
                    NamespaceSet { names: vec![], selector: Some(LabelSelector::everything()) },
                    sel,
                    region,
                );
                MakePod::new(s, "p").affinity_term(t).build()
            },
            vec![("node1", P)],
        ),
        (
            "mismatchLabelKeys excludes pods of the same value",
            THREE,
            vec![("node1", |s| MakePod::new(s, "e").label("app", "a").label("rev", "1").build())],
            |s| {
                let app = s.interner.intern("app");
                let rev = s.interner.intern("rev");
                let zone = s.interner.intern("zone");
                let p = MakePod::new(s, "p").label("app", "a").label("rev", "1").build();
                let sel = sel_labels(s, &[("app", "a")]);
                let t = AffinityTerm::new(NamespaceSet::only(p.namespace), sel, zone).with_label_keys(
                    &[],
                    &[rev],
                    &p.labels,
                );
                let _ = app;
                let mut p = p;
                p.constraints.affinity.required_anti_affinity.push(t);
                p
            },
            // The existing pod has the same rev, so the anti-affinity term does not select it.
            vec![("node1", P)],
        ),
    ];
    for (name, nodes, existing, pod, want) in cases {
        for prepared in [false, true] {
            let mut snap = setup(nodes, &existing);
            let pod = pod(&mut snap);
            if prepared {
                snap.prepare_pod(&pod);
            }
            for (node, w) in &want {
                let got = filter_one(&InterPodAffinity::default(), &snap, &pod, node).err();
                assert_eq!(got, w.map(|(c, r)| (c, vec![r.to_string()])), "{name}: {node} (prepared {prepared})");
            }
        }
    }
}

/// Normalized scores of every node; `None` when PreScore returned Skip (nothing to score).
fn scores(plugin: &InterPodAffinity, snap: &Snapshot, pod: &PodInfo) -> Option<Vec<i64>> {
    let cx = CycleCx { snap, pod };
    let mut state = CycleState::new();
    let nodes: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
    let st = plugin.pre_score(cx, &mut state, &nodes);
    if st.code == crate::framework::Code::Skip {
        return None;
    }
    assert!(st.is_success());
    let mut out = vec![0; nodes.len()];
    plugin.score(cx, &state, &nodes, &mut out).unwrap();
    plugin.normalize(cx, &state, &nodes, &mut out);
    Some(out)
}

const SCORE_NODES: Nodes =
    &[("node1", &[("region", "China")]), ("node2", &[("region", "India")]), ("node3", &[("az", "az1")])];

#[test]
fn preferred_score_table() {
    let s1 = |s: &mut Snapshot| labelled(s, "security", "S1");
    let s2 = |s: &mut Snapshot| labelled(s, "security", "S2");
    type Case = (&'static str, Vec<(&'static str, Build)>, Build, InterPodAffinity, Option<Vec<i64>>);
    let cases: Vec<Case> = vec![
        (
            "all nodes score 0 without any affinity",
            vec![("node1", s1)],
            |s| MakePod::new(s, "p").build(),
            InterPodAffinity::default(),
            None,
        ),
        (
            "affinity: the node in the matching pod's region scores highest",
            vec![("node1", s1), ("node2", s2)],
            |s| MakePod::new(s, "p").preferred_pod_affinity(5, "security", Some(&["S1"]), "region").build(),
            InterPodAffinity::default(),
            Some(vec![100, 0, 0]),
        ),
        (
            "anti-affinity: the node with more matching pods scores lowest",
            vec![("node1", s1), ("node1", s1), ("node2", s2)],
            |s| {
                MakePod::new(s, "p")
                    .label("security", "S1")
                    .preferred_pod_anti_affinity(5, "security", Some(&["S1"]), "region")
                    .build()
            },
            InterPodAffinity::default(),
            Some(vec![0, 100, 100]),
        ),
        (
            "affinity and anti-affinity weights add up per domain",
            vec![("node1", s1), ("node2", s2), ("node2", s2)],
            |s| {
                MakePod::new(s, "p")
                    .preferred_pod_affinity(8, "security", Some(&["S1"]), "region")
                    .preferred_pod_anti_affinity(2, "security", Some(&["S2"]), "region")
                    .build()
            },
            InterPodAffinity::default(),
            // raw 8, −4, 0: lo −4, hi 8 -> 100, 0, 33.
            Some(vec![100, 0, 33]),
        ),
        (
            "existing pod's required affinity adds hardPodAffinityWeight (symmetry)",
            vec![("node1", |s| MakePod::new(s, "e").pod_affinity("security", Some(&["S1"]), "region").build())],
            |s| MakePod::new(s, "p").label("security", "S1").build(),
            InterPodAffinity { hard_pod_affinity_weight: 5, ignore_preferred_terms_of_existing_pods: false },
            Some(vec![100, 0, 0]),
        ),
        (
            "hardPodAffinityWeight 0 drops the symmetry score",
            vec![("node1", |s| MakePod::new(s, "e").pod_affinity("security", Some(&["S1"]), "region").build())],
            |s| MakePod::new(s, "p").label("security", "S1").build(),
            InterPodAffinity { hard_pod_affinity_weight: 0, ignore_preferred_terms_of_existing_pods: false },
            None,
        ),
        (
            "existing pods' preferred terms count",
            vec![("node2", |s| {
                MakePod::new(s, "e").preferred_pod_anti_affinity(7, "security", Some(&["S1"]), "region").build()
            })],
            |s| MakePod::new(s, "p").label("security", "S1").build(),
            InterPodAffinity::default(),
            Some(vec![100, 0, 100]),
        ),
        (
            "ignorePreferredTermsOfExistingPods with no incoming preferred terms scores nothing",
            vec![("node2", |s| {
                MakePod::new(s, "e").preferred_pod_anti_affinity(7, "security", Some(&["S1"]), "region").build()
            })],
            |s| MakePod::new(s, "p").label("security", "S1").build(),
            InterPodAffinity { hard_pod_affinity_weight: 1, ignore_preferred_terms_of_existing_pods: true },
            None,
        ),
        (
            "ignorePreferredTermsOfExistingPods still counts them when the pod has preferred terms",
            vec![
                ("node1", s2),
                ("node2", |s| {
                    MakePod::new(s, "e").preferred_pod_anti_affinity(7, "security", Some(&["S1"]), "region").build()
                }),
            ],
            |s| {
                MakePod::new(s, "p")
                    .label("security", "S1")
                    .preferred_pod_affinity(3, "security", Some(&["S2"]), "region")
                    .build()
            },
            InterPodAffinity { hard_pod_affinity_weight: 1, ignore_preferred_terms_of_existing_pods: true },
            // raw 3, −7, 0: lo −7, hi 3 -> 100, 0, 70.
            Some(vec![100, 0, 70]),
        ),
    ];
    for (name, existing, pod, plugin, want) in cases {
        for prepared in [false, true] {
            let mut snap = setup(SCORE_NODES, &existing);
            let pod = pod(&mut snap);
            if prepared {
                snap.prepare_pod(&pod);
            }
            assert_eq!(scores(&plugin, &snap, &pod), want, "{name} (prepared {prepared})");
        }
    }
}

#[test]
fn conformance_anti_affinity_score() {
    // examples.yaml: InterPodAffinity/score-anti-affinity-one-node-has-more-matching-pods...
    let nodes: Nodes = &[("node1", &[("az", "az1")]), ("node2", &[("region", "India")])];
    let existing: Vec<(&str, Build)> = vec![
        ("node1", |s| labelled(s, "security", "S1")),
        ("node1", |s| labelled(s, "security", "S1")),
        ("node2", |s| labelled(s, "security", "S2")),
    ];
    let mut snap = setup(nodes, &existing);
    let pod = MakePod::new(&mut snap, "pod")
        .label("security", "S1")
        .preferred_pod_anti_affinity(5, "security", Some(&["S1"]), "az")
        .build();
    assert_eq!(scores(&InterPodAffinity::default(), &snap, &pod), Some(vec![0, 100]));
}

#[test]
fn normalize_table() {
    // (raw, want)
    let cases: &[(&[i64], &[i64])] = &[
        (&[0, 0], &[0, 0]),
        (&[5, 0], &[100, 0]),
        (&[-10, 0], &[0, 100]),
        (&[-4, 8, 0], &[0, 100, 33]),
        (&[3, 3], &[0, 0]),
        // Upstream takes the real min and max, not min(0, ·) and max(0, ·).
        (&[16, 40], &[0, 100]),
        (&[-10, -4], &[0, 100]),
        (&[16, 40, 28], &[0, 100, 50]),
    ];
    for (raw, want) in cases {
        let mut s = raw.to_vec();
        normalize_scores(&mut s);
        assert_eq!(&s, want, "{raw:?}");
    }
}

#[test]
fn every_node_scoring_normalizes_from_the_lowest() {
    // Raw 16 and 40 (2 and 5 matching pods at weight 8): [0, 100], as upstream's real min/max.
    const TWO: Nodes = &[("node1", &[("region", "China")]), ("node2", &[("region", "India")])];
    let s1 = |s: &mut Snapshot| labelled(s, "security", "S1");
    let mut existing: Vec<(&str, Build)> = vec![("node1", s1), ("node1", s1)];
    existing.extend(std::iter::repeat_n(("node2", s1 as Build), 5));
    for prepared in [false, true] {
        let mut snap = setup(TWO, &existing);
        let pod = MakePod::new(&mut snap, "p").preferred_pod_affinity(8, "security", Some(&["S1"]), "region").build();
        if prepared {
            snap.prepare_pod(&pod);
        }
        assert_eq!(scores(&InterPodAffinity::default(), &snap, &pod), Some(vec![0, 100]), "prepared {prepared}");
    }
}

/// Upstream's Filter and raw Score written plainly, by a scan of every placed pod
/// (`filtering.go`'s three count maps, `scoring.go`'s `processExistingPod` and topology score map):
/// the reference the counters read in place are checked against.
mod reference {
    use super::*;
    use crate::snapshot::pod_index::ns_labels;
    use ahash::AHashMap;

    type Pair = (Sym, Sym);

    fn node_value(snap: &Snapshot, n: NodeIdx, key: Sym) -> Option<Sym> {
        let v = snap.nodes.label(n, key);
        (!v.is_none()).then_some(v)
    }

    fn placed(snap: &Snapshot) -> Vec<(&PodInfo, NodeIdx)> {
        snap.pods.values().map(|p| (&*p.info, snap.nodes.idx_of(p.node).expect("placed on a node"))).collect()
    }

    fn matches(snap: &Snapshot, t: &AffinityTerm, p: &PodInfo) -> bool {
        t.selector.matches(p.namespace, &p.labels, ns_labels(snap, p.namespace), &snap.interner)
    }

    /// Each node's Filter verdict: `None` or (code, reason).
    pub fn filter(snap: &Snapshot, pod: &PodInfo) -> Vec<Option<(Code, &'static str)>> {
        let a = &pod.constraints.affinity;
        let (mut existing_anti, mut affinity, mut anti) =
            (AHashMap::<Pair, i64>::new(), AHashMap::<Pair, i64>::new(), AHashMap::<Pair, i64>::new());
        for (p, n) in placed(snap) {
            for t in &p.constraints.affinity.required_anti_affinity {
                if let (true, Some(v)) = (matches(snap, t, pod), node_value(snap, n, t.topology_key)) {
                    *existing_anti.entry((t.topology_key, v)).or_default() += 1;
                }
            }
            if !a.required_affinity.is_empty() && a.required_affinity.iter().all(|t| matches(snap, t, p)) {
                for t in &a.required_affinity {
                    if let Some(v) = node_value(snap, n, t.topology_key) {
                        *affinity.entry((t.topology_key, v)).or_default() += 1;
                    }
                }
            }
            for t in &a.required_anti_affinity {
                if let (true, Some(v)) = (matches(snap, t, p), node_value(snap, n, t.topology_key)) {
                    *anti.entry((t.topology_key, v)).or_default() += 1;
                }
            }
        }
        let self_all = a.required_affinity.iter().all(|t| self_matches(snap, pod, &t.selector));
        (0..snap.nodes.len() as u32)
            .map(NodeIdx)
            .map(|n| {
                let mut pods_exist = true;
                let mut keys_present = true;
                for t in &a.required_affinity {
                    match node_value(snap, n, t.topology_key) {
                        Some(v) => pods_exist &= affinity.get(&(t.topology_key, v)).is_some_and(|&c| c > 0),
                        None => keys_present = false,
                    }
                }
                let affinity_ok = keys_present && (pods_exist || (affinity.is_empty() && self_all));
                let blocked = |m: &AHashMap<Pair, i64>, key: Sym| {
                    node_value(snap, n, key).is_some_and(|v| m.get(&(key, v)).is_some_and(|&c| c > 0))
                };
                if !affinity_ok {
                    Some((Code::UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH))
                } else if a.required_anti_affinity.iter().any(|t| blocked(&anti, t.topology_key)) {
                    Some((Code::Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH))
                } else if snap.nodes.labels_of(n).iter().any(|&(k, _)| blocked(&existing_anti, k)) {
                    Some((Code::Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Raw scores of every node, or `None` when the topology score map is empty (Skip).
    pub fn raw_scores(plugin: &InterPodAffinity, snap: &Snapshot, pod: &PodInfo) -> Option<Vec<i64>> {
        let a = &pod.constraints.affinity;
        let has_preferred = !a.preferred_affinity.is_empty() || !a.preferred_anti_affinity.is_empty();
        if plugin.ignore_preferred_terms_of_existing_pods && !has_preferred {
            return None;
        }
        let mut m = AHashMap::<Pair, i64>::new();
        let mut add = |n: NodeIdx, key: Sym, w: i64| {
            if let Some(v) = node_value(snap, n, key) {
                *m.entry((key, v)).or_default() += w;
            }
        };
        for (p, n) in placed(snap) {
            for w in &a.preferred_affinity {
                if matches(snap, &w.term, p) {
                    add(n, w.term.topology_key, w.weight as i64);
                }
            }
            for w in &a.preferred_anti_affinity {
                if matches(snap, &w.term, p) {
                    add(n, w.term.topology_key, -(w.weight as i64));
                }
            }
            let e = &p.constraints.affinity;
            if plugin.hard_pod_affinity_weight > 0 {
                for t in e.required_affinity.iter().filter(|t| matches(snap, t, pod)) {
                    add(n, t.topology_key, plugin.hard_pod_affinity_weight);
                }
            }
            for w in e.preferred_affinity.iter().filter(|w| matches(snap, &w.term, pod)) {
                add(n, w.term.topology_key, w.weight as i64);
            }
            for w in e.preferred_anti_affinity.iter().filter(|w| matches(snap, &w.term, pod)) {
                add(n, w.term.topology_key, -(w.weight as i64));
            }
        }
        if m.is_empty() {
            return None;
        }
        let keys: Vec<Sym> = m.keys().map(|(k, _)| *k).collect::<ahash::AHashSet<_>>().into_iter().collect();
        Some(
            (0..snap.nodes.len() as u32)
                .map(NodeIdx)
                .map(|n| keys.iter().filter_map(|&k| node_value(snap, n, k).and_then(|v| m.get(&(k, v)))).sum())
                .collect(),
        )
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// A pod's shape: its `app` label (3 = none), terminating, and up to one term of each kind
    /// (required affinity, required anti, preferred affinity, preferred anti), each as
    /// (selected app (3 = `Exists`), hostname key or zone key, weight).
    type Shape = (u8, bool, [Option<(u8, bool, i32)>; 4]);

    fn shape() -> impl Strategy<Value = Shape> {
        let term = proptest::option::weighted(0.3, (0u8..4, any::<bool>(), 1i32..=5));
        (0u8..4, proptest::bool::weighted(0.2), [term.clone(), term.clone(), term.clone(), term])
    }

    fn build(snap: &mut Snapshot, name: &str, (app, terminating, terms): &Shape) -> PodInfo {
        let mut b = MakePod::new(snap, name);
        if *app < 3 {
            b = b.label("app", &format!("a{app}"));
        }
        if *terminating {
            b = b.terminating();
        }
        for (kind, t) in terms.iter().enumerate() {
            let Some((sel, host, w)) = *t else { continue };
            let v = format!("a{sel}");
            let values = (sel < 3).then_some([v.as_str()]);
            let values = values.as_ref().map(|v| &v[..]);
            let key = if host { "kubernetes.io/hostname" } else { "topology.kubernetes.io/zone" };
            b = match kind {
                0 => b.pod_affinity("app", values, key),
                1 => b.pod_anti_affinity("app", values, key),
                2 => b.preferred_pod_affinity(w, "app", values, key),
                _ => b.preferred_pod_anti_affinity(w, "app", values, key),
            };
        }
        b.build()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Filter verdicts and raw scores from the pod index's counters, read in place, equal a
        /// plain scan of the placed pods, after placements and removals, with the incoming pod's
        /// queries registered or not.
        #[test]
        fn counters_read_in_place_equal_a_scan(
            zones in proptest::collection::vec(0u8..4, 1..7),
            existing in proptest::collection::vec((shape(), 0u8..8), 0..14),
            removed in proptest::collection::vec(0u8..16, 0..4),
            incoming in shape(),
            register in any::<bool>(),
            hard_weight in 0i64..3,
            ignore_preferred in proptest::bool::weighted(0.2),
        ) {
            let mut snap = Snapshot::new();
            for (i, z) in zones.iter().enumerate() {
                let name = format!("n{i}");
                let mut n = MakeNode::new(&mut snap, &name);
                // Zone 3: the node lacks the zone key; every fourth node lacks a hostname.
                if *z < 3 {
                    n = n.label("topology.kubernetes.io/zone", &format!("z{z}"));
                }
                if i % 4 != 3 {
                    n = n.label("kubernetes.io/hostname", &name);
                }
                n.add();
            }
            let mut uids = Vec::new();
            for (i, (s, node)) in existing.iter().enumerate() {
                let p = build(&mut snap, &format!("e{i}"), s);
                uids.push(p.uid);
                let node = snap.interner.intern(&format!("n{}", *node as usize % zones.len()));
                snap.place_pod(std::sync::Arc::new(p), node).unwrap();
            }
            for r in removed {
                if !uids.is_empty() {
                    let uid = uids.remove(r as usize % uids.len());
                    snap.unplace_pod(uid).unwrap();
                }
            }
            let pod = build(&mut snap, "p", &incoming);
            if register {
                snap.prepare_pod(&pod);
            }
            let plugin = InterPodAffinity { hard_pod_affinity_weight: hard_weight, ignore_preferred_terms_of_existing_pods: ignore_preferred };
            let cx = CycleCx { snap: &snap, pod: &pod };
            let nodes: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
            let mut state = CycleState::new();
            let (st, _) = plugin.pre_filter(cx, &mut state);
            let mut out = vec![None; nodes.len()];
            if st.code != Code::Skip {
                let any = plugin.filter_any(cx, &state, &nodes, &mut out).expect("the loop reports");
                prop_assert_eq!(any, out.iter().any(Option::is_some));
            }
            let got: Vec<_> = out.iter().map(|r| r.map(|r| (r.code, plugin.reasons(cx, &state, r)[0].as_str().to_owned()))).collect();
            let want: Vec<_> = reference::filter(&snap, &pod).into_iter().map(|r| r.map(|(c, s)| (c, s.to_owned()))).collect();
            prop_assert_eq!(got, want, "filter");
            let mut state = CycleState::new();
            let st = plugin.pre_score(cx, &mut state, &nodes);
            let got = (st.code != Code::Skip).then(|| {
                let mut out = vec![0; nodes.len()];
                plugin.score(cx, &state, &nodes, &mut out).unwrap();
                out
            });
            prop_assert_eq!(got, reference::raw_scores(&plugin, &snap, &pod), "raw scores");
        }
    }
}

mod anti_kernel {
    use super::*;
    use proptest::prelude::*;

    /// The plain two passes (`satisfyPodAntiAffinity`, then `satisfyExistingPodsAntiAffinity`),
    /// term by term, each node keeping its first rejection.
    fn reference(anti: &[Column<'_>], existing: &[Column<'_>], nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        for (terms, detail) in [(anti, DETAIL_ANTI), (existing, DETAIL_EXISTING_ANTI)] {
            for c in terms {
                for (&n, o) in nodes.iter().zip(out.iter_mut()) {
                    if o.is_none() && c.positive(n) {
                        *o = Some(Reject::unschedulable(detail));
                    }
                }
            }
        }
    }

    proptest! {
        /// One pass equals the term-by-term passes, with one shared domain column (one topology
        /// key) or two, nodes without the key, counts shorter than the domains, and nodes a
        /// previous check already rejected.
        #[test]
        fn one_pass_equals_the_term_by_term_passes(
            doms in proptest::collection::vec((0u32..6, 0u32..6), 1..40),
            counts in proptest::collection::vec(proptest::collection::vec(0u32..3, 0..6), 1..5),
            kinds in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..5),
            picks in proptest::collection::vec((0usize..1000, proptest::bool::weighted(0.1)), 0..60),
        ) {
            // Domain 5 stands for a node without the key.
            let dom = |d: u32| if d == 5 { NO_DOMAIN } else { d };
            let dom_a: Vec<u32> = doms.iter().map(|d| dom(d.0)).collect();
            let dom_b: Vec<u32> = doms.iter().map(|d| dom(d.1)).collect();
            let (mut anti, mut existing) = (Vec::new(), Vec::new());
            for (c, (is_anti, key_b)) in counts.iter().zip(&kinds) {
                let col = Column { dom_of_node: if *key_b { &dom_b } else { &dom_a }, counts: c };
                if *is_anti { anti.push(col) } else { existing.push(col) }
            }
            let nodes: Vec<NodeIdx> = picks.iter().map(|(p, _)| NodeIdx((p % doms.len()) as u32)).collect();
            let before: Vec<Option<Reject>> =
                picks.iter().map(|(_, r)| r.then(|| Reject::unresolvable(DETAIL_AFFINITY))).collect();
            let (mut got, mut want) = (before.clone(), before.clone());
            let any = filter_anti(&anti, &existing, &nodes, &mut got);
            reference(&anti, &existing, &nodes, &mut want);
            prop_assert_eq!(any, got != before);
            prop_assert_eq!(got, want);
        }
    }
}
