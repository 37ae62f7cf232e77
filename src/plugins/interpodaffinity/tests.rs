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
