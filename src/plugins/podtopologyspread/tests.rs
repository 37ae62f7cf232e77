//! Cases modelled on upstream's `filtering_test.go` (TestSingleConstraint, TestMultipleConstraints)
//! and `scoring_test.go` (TestPodTopologySpreadScore). Every case runs twice: with the pod's
//! queries registered in the pod index (the counters path) and without (the scan path).

use super::*;
use crate::framework::Code;
use crate::plugins::testutil::filter_one;
use crate::snapshot::testing::{sel_exists, MakeNode, MakePod};
use crate::snapshot::{ControllerKind, PodConstraints, Snapshot};
use WhenUnsatisfiable::*;

/// An existing pod: (node, labels, namespace, terminating).
type Existing = (&'static str, &'static [(&'static str, &'static str)], &'static str, bool);
type Nodes = &'static [(&'static str, &'static [(&'static str, &'static str)])];

const P: Option<(Code, &str)> = None;
const SKEW: Option<(Code, &str)> = Some((Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH));
const LABEL: Option<(Code, &str)> = Some((Code::UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH));

const FOO: &[(&str, &str)] = &[("foo", "")];
const BAR: &[(&str, &str)] = &[("bar", "")];

const ZONES_4: Nodes = &[
    ("node-a", &[("zone", "zone1"), ("node", "node-a")]),
    ("node-b", &[("zone", "zone1"), ("node", "node-b")]),
    ("node-x", &[("zone", "zone2"), ("node", "node-x")]),
    ("node-y", &[("zone", "zone2"), ("node", "node-y")]),
];

fn setup(nodes: Nodes, existing: &[Existing]) -> Snapshot {
    let mut snap = Snapshot::new();
    for (name, labels) in nodes {
        let mut n = MakeNode::new(&mut snap, name);
        for (k, v) in labels.iter() {
            n = n.label(k, v);
        }
        n.add();
    }
    for (i, (node, labels, ns, terminating)) in existing.iter().enumerate() {
        let mut p = MakePod::new(&mut snap, &format!("e{i}")).namespace(ns);
        for (k, v) in labels.iter() {
            p = p.label(k, v);
        }
        if *terminating {
            p = p.terminating();
        }
        p.place(node);
    }
    snap
}

fn plugin() -> PodTopologySpread {
    PodTopologySpread { default_constraints: Vec::new(), system_defaulted: false }
}

type PodFn = fn(&mut Snapshot) -> PodInfo;
type Want = Option<(Code, &'static str)>;

fn check_filter(name: &str, nodes: Nodes, existing: &[Existing], pod: PodFn, want: &[(&str, Option<(Code, &str)>)]) {
    for prepared in [false, true] {
        let mut snap = setup(nodes, existing);
        let pod = pod(&mut snap);
        if prepared {
            snap.prepare_pod(&pod);
        }
        for (node, w) in want {
            let got = filter_one(&plugin(), &snap, &pod, node);
            let want = w.map(|(c, r)| (c, vec![r.to_string()]));
            assert_eq!(got.err(), want, "{name}: node {node} (prepared {prepared})");
        }
    }
}

#[test]
fn single_constraint_filter() {
    let spread_foo = |s: &mut Snapshot| {
        let sel = sel_exists(s, "foo");
        MakePod::new(s, "p").label("foo", "").spread(1, "zone", DoNotSchedule, sel).build()
    };
    type Case = (&'static str, Nodes, Vec<Existing>, PodFn, Vec<(&'static str, Want)>);
    let cases: Vec<Case> = vec![
        (
            "no existing pods",
            ZONES_4,
            vec![],
            spread_foo,
            vec![("node-a", P), ("node-b", P), ("node-x", P), ("node-y", P)],
        ),
        (
            "no existing pods, incoming pod doesn't match itself",
            ZONES_4,
            vec![],
            |s| {
                let sel = sel_exists(s, "bar");
                MakePod::new(s, "p").label("foo", "").spread(1, "zone", DoNotSchedule, sel).build()
            },
            vec![("node-a", P), ("node-b", P), ("node-x", P), ("node-y", P)],
        ),
        (
            // countPodsMatchSelector returns 0 for an empty selector (labelSelector: {}).
            "an empty selector counts no pod",
            ZONES_4,
            vec![
                ("node-x", FOO, "default", false),
                ("node-x", BAR, "default", false),
                ("node-y", FOO, "default", false),
            ],
            |s| {
                MakePod::new(s, "p")
                    .label("foo", "")
                    .spread(1, "zone", DoNotSchedule, LabelSelector::everything())
                    .build()
            },
            vec![("node-a", P), ("node-b", P), ("node-x", P), ("node-y", P)],
        ),
        (
            "existing pods in a different namespace do not count",
            ZONES_4,
            vec![
                ("node-a", FOO, "ns1", false),
                ("node-b", FOO, "default", false),
                ("node-x", FOO, "default", false),
                ("node-x", FOO, "default", false),
            ],
            spread_foo,
            vec![("node-a", P), ("node-b", P), ("node-x", SKEW), ("node-y", SKEW)],
        ),
        (
            "terminating pods do not count",
            ZONES_4,
            vec![
                ("node-a", FOO, "default", false),
                ("node-x", FOO, "default", false),
                ("node-x", FOO, "default", true),
                ("node-y", FOO, "default", false),
            ],
            spread_foo,
            // zone1 1, zone2 2 (the terminating pod is not counted).
            vec![("node-a", P), ("node-x", SKEW)],
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            ZONES_4,
            vec![
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-x", FOO, "default", false),
                ("node-y", FOO, "default", false),
                ("node-y", FOO, "default", false),
            ],
            spread_foo,
            vec![("node-a", P), ("node-b", P), ("node-x", P), ("node-y", P)],
        ),
        (
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            &[
                ("node-a", &[("zone", "zone1"), ("node", "node-a")]),
                ("node-b", &[("zon", "zone1"), ("node", "node-b")]),
                ("node-x", &[("zone", "zone2"), ("node", "node-x")]),
                ("node-y", &[("zone", "zone2"), ("node", "node-y")]),
            ],
            vec![
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-x", FOO, "default", false),
                ("node-y", FOO, "default", false),
            ],
            spread_foo,
            vec![("node-a", P), ("node-b", LABEL), ("node-x", SKEW), ("node-y", SKEW)],
        ),
        (
            "pod cannot be scheduled as all nodes don't have label 'rack'",
            &[("node-a", &[("zone", "zone1")]), ("node-x", &[("zone", "zone2")])],
            vec![],
            |s| {
                let sel = sel_exists(s, "foo");
                MakePod::new(s, "p").label("foo", "").spread(1, "rack", DoNotSchedule, sel).build()
            },
            vec![("node-a", LABEL), ("node-x", LABEL)],
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            ZONES_4,
            vec![
                ("node-a", FOO, "default", false),
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-y", FOO, "default", false),
                ("node-y", FOO, "default", false),
                ("node-y", FOO, "default", false),
            ],
            |s| {
                let sel = sel_exists(s, "foo");
                MakePod::new(s, "p").label("foo", "").spread(1, "node", DoNotSchedule, sel).build()
            },
            vec![("node-a", SKEW), ("node-b", SKEW), ("node-x", P), ("node-y", SKEW)],
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            ZONES_4,
            vec![
                ("node-a", FOO, "default", false),
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-y", FOO, "default", false),
                ("node-y", FOO, "default", false),
                ("node-y", FOO, "default", false),
            ],
            |s| {
                let sel = sel_exists(s, "foo");
                MakePod::new(s, "p").label("foo", "").spread(2, "node", DoNotSchedule, sel).build()
            },
            vec![("node-a", SKEW), ("node-b", P), ("node-x", P), ("node-y", SKEW)],
        ),
        (
            "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            ZONES_4,
            vec![
                ("node-a", BAR, "default", false),
                ("node-a", BAR, "default", false),
                ("node-b", BAR, "default", false),
                ("node-y", BAR, "default", false),
                ("node-y", BAR, "default", false),
                ("node-y", BAR, "default", false),
            ],
            |s| {
                let sel = sel_exists(s, "bar");
                MakePod::new(s, "p").label("foo", "").spread(1, "node", DoNotSchedule, sel).build()
            },
            vec![("node-a", SKEW), ("node-b", P), ("node-x", P), ("node-y", SKEW)],
        ),
        (
            "minDomains 3 with 2 domains treats the global minimum as 0",
            ZONES_4,
            vec![
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-x", FOO, "default", false),
            ],
            |s| {
                let sel = sel_exists(s, "foo");
                let zone = s.interner.intern("zone");
                let mut c = SpreadConstraint::new(2, zone, DoNotSchedule, sel);
                c.min_domains = 3;
                MakePod::new(s, "p").label("foo", "").spread_constraint(c).build()
            },
            vec![("node-a", SKEW), ("node-b", SKEW), ("node-x", P), ("node-y", P)],
        ),
        (
            "minDomains 2 with 2 domains keeps the real minimum",
            ZONES_4,
            vec![
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-x", FOO, "default", false),
            ],
            |s| {
                let sel = sel_exists(s, "foo");
                let zone = s.interner.intern("zone");
                let mut c = SpreadConstraint::new(2, zone, DoNotSchedule, sel);
                c.min_domains = 2;
                MakePod::new(s, "p").label("foo", "").spread_constraint(c).build()
            },
            vec![("node-a", P), ("node-b", P), ("node-x", P), ("node-y", P)],
        ),
        (
            "nodeAffinityPolicy Honor: nodes outside the pod's nodeSelector are not domains",
            ZONES_4,
            vec![("node-a", FOO, "default", false), ("node-b", FOO, "default", false)],
            |s| {
                let sel = sel_exists(s, "foo");
                MakePod::new(s, "p")
                    .label("foo", "")
                    .node_selector("zone", "zone1")
                    .spread(1, "zone", DoNotSchedule, sel)
                    .build()
            },
            vec![("node-a", P), ("node-b", P)],
        ),
        (
            "nodeAffinityPolicy Ignore: every node with the key is a domain",
            ZONES_4,
            vec![("node-a", FOO, "default", false), ("node-b", FOO, "default", false)],
            |s| {
                let sel = sel_exists(s, "foo");
                let zone = s.interner.intern("zone");
                let mut c = SpreadConstraint::new(1, zone, DoNotSchedule, sel);
                c.node_affinity_policy = InclusionPolicy::Ignore;
                MakePod::new(s, "p").label("foo", "").node_selector("zone", "zone1").spread_constraint(c).build()
            },
            vec![("node-a", SKEW), ("node-b", SKEW)],
        ),
        (
            "matchLabelKeys narrows the selector to the pod's value",
            ZONES_4,
            vec![
                ("node-a", &[("foo", ""), ("rev", "1")], "default", false),
                ("node-a", &[("foo", ""), ("rev", "1")], "default", false),
                ("node-x", &[("foo", ""), ("rev", "2")], "default", false),
            ],
            |s| {
                let sel = sel_exists(s, "foo");
                let zone = s.interner.intern("zone");
                let rev = s.interner.intern("rev");
                let pod = MakePod::new(s, "p").label("foo", "").label("rev", "2").build();
                let c = SpreadConstraint::new(1, zone, DoNotSchedule, sel).with_match_label_keys(&[rev], &pod.labels);
                PodInfo { constraints: PodConstraints { topology_spread: vec![c], ..Default::default() }, ..pod }
            },
            // Only rev=2 pods count: zone1 0, zone2 1.
            vec![("node-a", P), ("node-x", SKEW)],
        ),
    ];
    for (name, nodes, existing, pod, want) in cases {
        check_filter(name, nodes, &existing, pod, &want);
    }
}

#[test]
fn taints_policy_filter() {
    // node-x and node-y carry an untolerated NoSchedule taint.
    for (policy, want_a) in [(InclusionPolicy::Honor, P), (InclusionPolicy::Ignore, SKEW)] {
        for prepared in [false, true] {
            let mut snap = Snapshot::new();
            for (n, z) in [("node-a", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")] {
                let mut b = MakeNode::new(&mut snap, n).label("zone", z);
                if z == "zone2" {
                    b = b.taint("k", "v", TaintEffect::NoSchedule);
                }
                b.add();
            }
            MakePod::new(&mut snap, "e").label("foo", "").place("node-a");
            let sel = sel_exists(&mut snap, "foo");
            let zone = snap.interner.intern("zone");
            let mut c = SpreadConstraint::new(1, zone, DoNotSchedule, sel);
            c.node_taints_policy = policy;
            let pod = MakePod::new(&mut snap, "p").label("foo", "").spread_constraint(c).build();
            if prepared {
                snap.prepare_pod(&pod);
            }
            let got = filter_one(&plugin(), &snap, &pod, "node-a").err();
            assert_eq!(got, want_a.map(|(c, r)| (c, vec![r.to_string()])), "{policy:?} prepared {prepared}");
        }
    }
}

#[test]
fn multiple_constraints_filter() {
    // TestMultipleConstraints: zone spreads 3/3 and node spreads 2/1/0/3, so only node-x fits.
    let existing: Vec<Existing> = vec![
        ("node-a", FOO, "default", false),
        ("node-a", FOO, "default", false),
        ("node-b", FOO, "default", false),
        ("node-y", FOO, "default", false),
        ("node-y", FOO, "default", false),
        ("node-y", FOO, "default", false),
    ];
    let pod: PodFn = |s| {
        let sel = sel_exists(s, "foo");
        MakePod::new(s, "p")
            .label("foo", "")
            .spread(1, "zone", DoNotSchedule, sel.clone())
            .spread(1, "node", DoNotSchedule, sel)
            .build()
    };
    check_filter(
        "two constraints",
        ZONES_4,
        &existing,
        pod,
        &[("node-a", SKEW), ("node-b", SKEW), ("node-x", P), ("node-y", SKEW)],
    );
    // A node missing the second key is not a domain of the first: node-b lacks "node", so zone1
    // counts only node-a's 2 pods against zone2's 3 (min 2): zone2 nodes fail on zone skew.
    let nodes: Nodes = &[
        ("node-a", &[("zone", "zone1"), ("node", "node-a")]),
        ("node-b", &[("zone", "zone1")]),
        ("node-x", &[("zone", "zone2"), ("node", "node-x")]),
        ("node-y", &[("zone", "zone2"), ("node", "node-y")]),
    ];
    check_filter("node missing a key", nodes, &existing, pod, &[("node-b", LABEL), ("node-x", SKEW), ("node-y", SKEW)]);
}

/// Normalized scores of `nodes` after filtering to `candidates` (all when empty).
fn scores(plugin: &PodTopologySpread, snap: &Snapshot, pod: &PodInfo, candidates: &[&str]) -> Option<Vec<i64>> {
    let cx = CycleCx { snap, pod };
    let mut state = CycleState::new();
    let nodes: Vec<NodeIdx> = if candidates.is_empty() {
        (0..snap.nodes.len() as u32).map(NodeIdx).collect()
    } else {
        candidates.iter().map(|n| snap.nodes.idx_of(snap.interner.get(n).unwrap()).unwrap()).collect()
    };
    if plugin.pre_score(cx, &mut state, &nodes).code == Code::Skip {
        return None;
    }
    let mut out = vec![0; nodes.len()];
    plugin.score(cx, &state, &nodes, &mut out).unwrap();
    plugin.normalize(cx, &state, &nodes, &mut out);
    Some(out)
}

const HOSTS_4: Nodes = &[
    ("node-a", &[("kubernetes.io/hostname", "node-a"), ("zone", "zone1")]),
    ("node-b", &[("kubernetes.io/hostname", "node-b"), ("zone", "zone1")]),
    ("node-c", &[("kubernetes.io/hostname", "node-c"), ("zone", "zone2")]),
    ("node-d", &[("kubernetes.io/hostname", "node-d"), ("zone", "zone2")]),
];

#[test]
fn score_table() {
    let soft_host: PodFn = |s| {
        let sel = sel_exists(s, "foo");
        MakePod::new(s, "p").label("foo", "").spread(1, "kubernetes.io/hostname", ScheduleAnyway, sel).build()
    };
    let soft_zone: PodFn = |s| {
        let sel = sel_exists(s, "foo");
        MakePod::new(s, "p").label("foo", "").spread(1, "zone", ScheduleAnyway, sel).build()
    };
    let spread_2_1_0_3: Vec<Existing> = vec![
        ("node-a", FOO, "default", false),
        ("node-a", FOO, "default", false),
        ("node-b", FOO, "default", false),
        ("node-d", FOO, "default", false),
        ("node-d", FOO, "default", false),
        ("node-d", FOO, "default", false),
    ];
    type Case = (&'static str, Vec<Existing>, PodFn, Vec<&'static str>, Option<Vec<i64>>);
    let cases: Vec<Case> = vec![
        ("one constraint on node, no existing pods", vec![], soft_host, vec![], Some(vec![100, 100, 100, 100])),
        (
            "one constraint on node, only one node is candidate",
            vec![
                ("node-a", FOO, "default", false),
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
            ],
            soft_host,
            vec!["node-a"],
            Some(vec![100]),
        ),
        (
            "one constraint on node, all nodes have the same number of matching pods",
            vec![
                ("node-a", FOO, "default", false),
                ("node-b", FOO, "default", false),
                ("node-c", FOO, "default", false),
                ("node-d", FOO, "default", false),
            ],
            soft_host,
            vec![],
            Some(vec![100, 100, 100, 100]),
        ),
        // weight ln(6): raw 4, 2, 0, 5 -> 100·(5+0−s)/5.
        (
            "one constraint on node, all 4 nodes are candidates",
            spread_2_1_0_3.clone(),
            soft_host,
            vec![],
            Some(vec![20, 60, 100, 0]),
        ),
        // zone1 3 pods, zone2 3 pods, 2 zones: weight ln 4; raw round(3·1.386) = 4 everywhere.
        ("one constraint on zone, balanced", spread_2_1_0_3.clone(), soft_zone, vec![], Some(vec![100, 100, 100, 100])),
        (
            // zone1 2, zone2 0: raw round(2·ln4)=3 vs 0 -> 100·(3+0−3)/3 = 0 and 100.
            "one constraint on zone, 2/0",
            vec![("node-a", FOO, "default", false), ("node-b", FOO, "default", false)],
            soft_zone,
            vec![],
            Some(vec![0, 0, 100, 100]),
        ),
        (
            // Only zone1 nodes are candidates: size 1, weight ln 3; zone1 has 1 pod -> raw 1 on both.
            "one constraint on zone, candidates in one zone",
            vec![
                ("node-a", FOO, "default", false),
                ("node-c", FOO, "default", false),
                ("node-c", FOO, "default", false),
            ],
            soft_zone,
            vec!["node-a", "node-b"],
            Some(vec![100, 100]),
        ),
        (
            // Two soft constraints: hostname (weight ln 6) and zone (weight ln 4), maxSkew 1 each.
            // a: 2·1.792 + 3·1.386 = 7.74 -> 8; b: 1.792 + 4.159 = 5.95 -> 6; c: 0 + 3·1.386 = 4.16 -> 4;
            // d: 5.375 + 4.159 = 9.53 -> 10. Normalized 100·(10+4−s)/10.
            "two constraints on hostname and zone",
            spread_2_1_0_3.clone(),
            |s| {
                let sel = sel_exists(s, "foo");
                MakePod::new(s, "p")
                    .label("foo", "")
                    .spread(1, "kubernetes.io/hostname", ScheduleAnyway, sel.clone())
                    .spread(1, "zone", ScheduleAnyway, sel)
                    .build()
            },
            vec![],
            Some(vec![60, 80, 100, 40]),
        ),
        ("no soft constraints skips", vec![], |s| MakePod::new(s, "p").build(), vec![], None),
    ];
    for (name, existing, pod, candidates, want) in cases {
        for prepared in [false, true] {
            let mut snap = setup(HOSTS_4, &existing);
            let pod = pod(&mut snap);
            if prepared {
                snap.prepare_pod(&pod);
            }
            assert_eq!(scores(&plugin(), &snap, &pod, &candidates), want, "{name} (prepared {prepared})");
        }
    }
}

#[test]
fn score_node_missing_key_is_ignored() {
    // A candidate without the zone key scores 0; the others are normalized among themselves.
    let nodes: Nodes = &[
        ("node-a", &[("zone", "zone1")]),
        ("node-b", &[("zone", "zone1")]),
        ("node-x", &[("zone", "zone2")]),
        ("node-n", &[("other", "x")]),
    ];
    let mut snap = setup(nodes, &[("node-a", FOO, "default", false), ("node-n", FOO, "default", false)]);
    let sel = sel_exists(&mut snap, "foo");
    let pod = MakePod::new(&mut snap, "p").label("foo", "").spread(1, "zone", ScheduleAnyway, sel).build();
    // size 2 -> ln 4; a,b raw round(1.386) = 1, x raw 0 -> 100·(1+0−1)/1 = 0 and 100.
    assert_eq!(scores(&plugin(), &snap, &pod, &[]), Some(vec![0, 0, 100, 0]));
}

#[test]
fn system_default_constraints_apply_to_selected_pods() {
    let mut snap = setup(HOSTS_4, &[]);
    let app = snap.interner.intern("app");
    let web = snap.interner.intern("web");
    let ns = snap.wk.default_namespace;
    let rs = snap.interner.intern("web-rs");
    snap.cluster.replica_sets.insert((ns, rs), LabelSelector::new(&[(app, web)], vec![]));
    for n in ["node-a", "node-a", "node-c"] {
        MakePod::new(&mut snap, "e").label("app", "web").place(n);
    }
    let p = PodTopologySpread {
        default_constraints: system_default_constraints(snap.wk.hostname_key, snap.wk.zone_key),
        system_defaulted: true,
    };
    // Not selected by anything: no default constraints.
    let lone = MakePod::new(&mut snap, "lone").label("app", "web").build();
    assert_eq!(scores(&p, &snap, &lone, &[]), None);
    // Owned by the ReplicaSet: hostname maxSkew 3 (ln 6), zone maxSkew 5 (ln 4: two zones).
    // Zone key is "zone" here, not the well-known one, so only hostname spreading applies to
    // nodes... the well-known zone key is absent on every node: system defaults do not require it.
    let owned =
        MakePod::new(&mut snap, "owned").label("app", "web").controller(ControllerKind::ReplicaSet, "web-rs").build();
    // hostname raw: a 2·1.792+2 = 5.58 -> 6; b 2; c 1.792+2 = 3.79 -> 4; d 2. 100·(6+2−s)/6.
    assert_eq!(scores(&p, &snap, &owned, &[]), Some(vec![33, 100, 66, 100]));
    snap.prepare_pod(&owned);
    assert_eq!(scores(&p, &snap, &owned, &[]), Some(vec![33, 100, 66, 100]));
    // A Service selecting the pod also makes it spread; DoNotSchedule defaults are none, so
    // PreFilter skips.
    snap.cluster.services.push((ns, vec![(app, web)]));
    let svc = MakePod::new(&mut snap, "svc").label("app", "web").build();
    assert_eq!(scores(&p, &snap, &svc, &[]), Some(vec![33, 100, 66, 100]));
    let mut state = CycleState::new();
    assert_eq!(p.pre_filter(CycleCx { snap: &snap, pod: &svc }, &mut state).0.code, Code::Skip);
}

#[test]
fn normalizing_helpers() {
    // (size, weight) boundary values of topologyNormalizingWeight; scoreForCount.
    for (size, want) in [(0usize, 2f64.ln()), (1, 3f64.ln()), (5000, 5002f64.ln())] {
        assert!((topology_normalizing_weight(size) - want).abs() < 1e-12);
    }
    assert_eq!(score_for_count(0, 1, 1.5), 0.0);
    assert_eq!(score_for_count(2, 3, 1.5), 5.0);
}

#[test]
fn placements_are_identical_at_any_thread_count() {
    use crate::config::SchedulerConfig;
    use crate::engine::{CycleResult, Engine};
    use crate::plugins::CompiledArgs;
    use crate::snapshot::NodeSpec;
    // 9,000 nodes so the filter and score passes go parallel; pods with zone spreading, hostname
    // anti-affinity and preferred zone affinity, placed one after another.
    fn run(threads: usize) -> Vec<String> {
        let mut snap = Snapshot::new();
        let (host, zone) = (snap.wk.hostname_key, snap.wk.zone_key);
        for i in 0..9000 {
            let name = snap.interner.intern(&format!("n{i}"));
            let z = snap.interner.intern(&format!("z{}", i % 3));
            let mut labels = vec![(host, name), (zone, z)];
            labels.sort();
            let mut spec = NodeSpec { name, labels, allowed_pod_number: 110, ..Default::default() };
            spec.allocatable.cpu_milli = 4000;
            spec.allocatable.memory = 1 << 35;
            snap.add_node(&spec).unwrap();
        }
        let profile = SchedulerConfig::defaults().profiles[0].clone();
        let fw = crate::plugins::build_framework(&profile, &CompiledArgs::default(), &mut snap.interner).unwrap();
        let mut engine = Engine::new(42, threads, None);
        let mut out = Vec::new();
        for i in 0..60 {
            let sel = crate::snapshot::testing::sel_labels(&mut snap, &[("app", "web")]);
            let pod = MakePod::new(&mut snap, &format!("p{i}"))
                .label("app", "web")
                .req(500, 1 << 28)
                .spread(1, "topology.kubernetes.io/zone", DoNotSchedule, sel)
                .pod_anti_affinity("app", Some(&["web"]), "kubernetes.io/hostname")
                .preferred_pod_affinity(10, "app", Some(&["web"]), "topology.kubernetes.io/zone")
                .build();
            snap.prepare_pod(&pod);
            match engine.schedule_one(&fw, &snap, &pod) {
                CycleResult::Scheduled { node, .. } => {
                    let name = snap.nodes.name[node.ix()];
                    out.push(snap.interner.resolve(name).to_string());
                    snap.place_pod(std::sync::Arc::new(pod), name).unwrap();
                }
                other => panic!("{other:?}"),
            }
        }
        out
    }
    let one = run(1);
    assert_eq!(one, run(4));
    let mut distinct = one.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), one.len(), "hostname anti-affinity puts each pod on its own node");
    let mut per_zone = [0i32; 3];
    for (i, n) in one.iter().enumerate() {
        per_zone[n[1..].parse::<usize>().unwrap() % 3] += 1;
        let (lo, hi) = (per_zone.iter().min().unwrap(), per_zone.iter().max().unwrap());
        assert!(hi - lo <= 1, "zone skew stays within maxSkew after pod {i}: {per_zone:?}");
    }
}

#[test]
fn compile_default_constraints_table() {
    use serde_json::json;
    let mut snap = Snapshot::new();
    let raw = vec![
        json!({"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}),
        json!({"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 3,
               "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"}),
    ];
    let got = compile_default_constraints(&raw, &mut snap.interner).unwrap();
    let (zone, rack) = (snap.interner.intern("zone"), snap.interner.intern("rack"));
    let mut want1 = SpreadConstraint::new(1, rack, ScheduleAnyway, LabelSelector::everything());
    want1.min_domains = 3;
    want1.node_affinity_policy = InclusionPolicy::Ignore;
    want1.node_taints_policy = InclusionPolicy::Honor;
    assert_eq!(got, vec![SpreadConstraint::new(2, zone, DoNotSchedule, LabelSelector::everything()), want1]);
    // (bad constraint, field named in the error)
    for (bad, field) in [
        (json!({"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}), "maxSkew"),
        (json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}), "whenUnsatisfiable"),
        (
            json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "x"}),
            "nodeTaintsPolicy",
        ),
    ] {
        let err = compile_default_constraints(&[bad], &mut snap.interner).unwrap_err();
        assert!(err.contains(field), "{err}");
    }
    // List defaulting: the default constraints with the pod's default selector filter the pod.
    let mut snap = setup(ZONES_4, &[("node-a", FOO, "default", false), ("node-b", FOO, "default", false)]);
    let foo = snap.interner.intern("foo");
    let empty = snap.interner.intern("");
    snap.cluster.services.push((snap.wk.default_namespace, vec![(foo, empty)]));
    let p = PodTopologySpread {
        default_constraints: compile_default_constraints(&raw[..1], &mut snap.interner).unwrap(),
        system_defaulted: false,
    };
    let pod = MakePod::new(&mut snap, "p").label("foo", "").build();
    // zone1 2, zone2 0, maxSkew 2: zone1 nodes get skew 3.
    let skew = Some((Code::Unschedulable, vec![ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string()]));
    assert_eq!(filter_one(&p, &snap, &pod, "node-a").err(), skew);
    assert_eq!(filter_one(&p, &snap, &pod, "node-x").err(), None);
}

proptest::proptest! {
    /// With only the taint policy narrowing the nodes, `eligible_counts`'s one-pass loop counts
    /// what the per-node eligibility test counts (nodes missing the key, tainted nodes, shared
    /// domains, pods of other namespaces), on the counters path and the scan path.
    #[test]
    fn taint_policy_counts_are_the_per_node_counts(
        nodes in proptest::collection::vec((0u8..4, 0u8..3, 0u8..3), 1..40),
        prepared in proptest::bool::ANY,
    ) {
        let mut snap = Snapshot::new();
        for (i, &(zone, taint, _)) in nodes.iter().enumerate() {
            let mut b = MakeNode::new(&mut snap, &format!("n{i}"));
            if zone > 0 {
                b = b.label("zone", &format!("z{zone}"));
            }
            b = match taint {
                1 => b.taint("k", "v", TaintEffect::NoSchedule),
                2 => b.taint("k", "v", TaintEffect::PreferNoSchedule),
                _ => b,
            };
            b.add();
        }
        for (i, &(_, _, pods)) in nodes.iter().enumerate() {
            for j in 0..pods {
                let ns = if j == 2 { "other" } else { "default" };
                MakePod::new(&mut snap, &format!("e{i}-{j}")).namespace(ns).label("foo", "").place(&format!("n{i}"));
            }
        }
        let sel = sel_exists(&mut snap, "foo");
        let zone = snap.interner.intern("zone");
        let mut c = SpreadConstraint::new(1, zone, DoNotSchedule, sel);
        c.node_taints_policy = InclusionPolicy::Honor;
        let pod = MakePod::new(&mut snap, "p").label("foo", "").spread_constraint(c.clone()).build();
        if prepared {
            snap.prepare_pod(&pod);
        }
        let domains = vec![KeyDomains::new(&snap, zone)];
        let (counts, present) = eligible_counts(&snap, &pod, &c, &domains, 0, true);
        let t = domains[0].get(&snap);
        let elig = Eligibility::new(&snap, &pod, vec![&t.dom_of_node], &c);
        let per_node = pod_index::per_node_counts(&snap, &constraint_query(&pod, &c));
        let (mut want_counts, mut want_present) = (vec![0u32; t.num_domains()], vec![false; t.num_domains()]);
        for (n, &d) in t.dom_of_node.iter().enumerate() {
            if d != NO_DOMAIN && elig.eligible(&snap, n) {
                want_present[d as usize] = true;
                want_counts[d as usize] += per_node[n];
            }
        }
        proptest::prop_assert_eq!(counts, want_counts);
        proptest::prop_assert_eq!(present, want_present);
    }
}

proptest::proptest! {
    /// The cast-based rounding is `f64::round` (half away from zero) wherever an i64 holds it:
    /// halves, values next to halves, large magnitudes, NaN.
    #[test]
    fn round_half_away_from_zero_is_f64_round(
        whole in -(1i64 << 53)..(1i64 << 53),
        frac in proptest::prop_oneof![0.0f64..1.0, proptest::strategy::Just(0.5), proptest::strategy::Just(0.49999999999999994)],
        scale in proptest::prop_oneof![proptest::strategy::Just(1.0f64), proptest::strategy::Just(1e-3), proptest::strategy::Just(1e6)],
    ) {
        let x = (whole as f64 + frac) * scale;
        proptest::prop_assert_eq!(round_half_away_from_zero(x), x.round() as i64, "{}", x);
        proptest::prop_assert_eq!(round_half_away_from_zero(-x), (-x).round() as i64, "{}", -x);
    }
}

#[test]
fn round_half_away_from_zero_edges() {
    for x in [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.49999999999999994,
        4503599627370495.5,
        1e300,
        -1e300,
        f64::NAN,
        f64::INFINITY,
    ] {
        assert_eq!(round_half_away_from_zero(x), x.round() as i64, "{x}");
    }
}

/// The one-node-per-domain kernels ([`eligible_node_min`], [`eligible_node_count`]) against the
/// plain per-domain sums over the eligible nodes (`eligible_counts`' taint-only loop).
mod eligible_node_kernels {
    use super::*;
    use proptest::prelude::*;

    /// Per-domain counts and presence over the nodes whose taint set is tolerated.
    fn reference(
        dom_of_node: &[u32],
        num_domains: usize,
        per_node: &[u32],
        taint_set: &[u32],
        taints_ok: &[bool],
    ) -> (Vec<u32>, Vec<bool>) {
        let mut counts = vec![0u32; num_domains];
        let mut present = vec![false; num_domains];
        for n in 0..dom_of_node.len() {
            let d = dom_of_node[n];
            if d != NO_DOMAIN && taints_ok[taint_set[n] as usize] {
                present[d as usize] = true;
                counts[d as usize] += per_node[n];
            }
        }
        (counts, present)
    }

    /// Nodes as (carries the key, matching pods, taint set), a permutation giving each node its
    /// own domain, the number of domains (some held by no node), and which of 4 taint sets are
    /// tolerated.
    type Cluster = (Vec<(bool, u32, u32)>, Vec<u32>, usize, Vec<bool>);

    fn cluster() -> impl Strategy<Value = Cluster> {
        (0usize..48, 0usize..4).prop_flat_map(|(n, extra)| {
            (
                proptest::collection::vec((proptest::bool::weighted(0.8), 0u32..6, 0u32..4), n),
                Just((0..(n + extra) as u32).collect::<Vec<u32>>()).prop_shuffle(),
                Just(n + extra),
                proptest::collection::vec(any::<bool>(), 4),
            )
        })
    }

    proptest! {
        #[test]
        fn match_per_domain_sums((nodes, perm, num_domains, taints_ok) in cluster()) {
            let dom_of_node: Vec<u32> =
                nodes.iter().zip(&perm).map(|((has, _, _), &d)| if *has { d } else { NO_DOMAIN }).collect();
            let per_node: Vec<u32> = nodes.iter().map(|n| n.1).collect();
            let taint_set: Vec<u32> = nodes.iter().map(|n| n.2).collect();
            let (counts, present) = reference(&dom_of_node, num_domains, &per_node, &taint_set, &taints_ok);
            let want_min = counts.iter().zip(&present).filter(|(_, p)| **p).map(|(c, _)| *c).min();
            let want_num = present.iter().filter(|p| **p).count();
            let want_max = counts.iter().zip(&present).filter(|(_, p)| **p).map(|(c, _)| *c).max();
            prop_assert_eq!(eligible_node_max(&dom_of_node, &per_node, &taint_set, &taints_ok), want_max);
            prop_assert_eq!(
                eligible_node_min(&dom_of_node, &per_node, &taint_set, &taints_ok),
                (want_min, want_num)
            );
            for (n, &d) in dom_of_node.iter().enumerate() {
                if d != NO_DOMAIN {
                    prop_assert_eq!(eligible_node_count(&per_node, &taint_set, &taints_ok, n), counts[d as usize]);
                }
            }
            // Filter through the kernel against Filter over the reference's per-domain counts.
            let all: Vec<NodeIdx> = (0..dom_of_node.len() as u32).map(NodeIdx).collect();
            for limit in -1..4 {
                let mut want = vec![None; all.len()];
                filter_per_domain(&all, &dom_of_node, &counts, limit, &mut want);
                let mut got = vec![None; all.len()];
                filter_eligible_node(&all, &dom_of_node, &per_node, &taint_set, &taints_ok, limit, &mut got);
                prop_assert_eq!(got, want);
            }
        }

        /// The listing pass lists exactly the nodes Filter passes, in row order.
        #[test]
        fn listing_is_the_filter_passing_set((nodes, perm, _num_domains, taints_ok) in cluster(), limit in -1i64..5) {
            let dom_of_node: Vec<u32> =
                nodes.iter().zip(&perm).map(|((has, _, _), &d)| if *has { d } else { NO_DOMAIN }).collect();
            let per_node: Vec<u32> = nodes.iter().map(|n| n.1).collect();
            let taint_set: Vec<u32> = nodes.iter().map(|n| n.2).collect();
            let all: Vec<NodeIdx> = (0..dom_of_node.len() as u32).map(NodeIdx).collect();
            let mut verdicts = vec![None; all.len()];
            filter_eligible_node(&all, &dom_of_node, &per_node, &taint_set, &taints_ok, limit, &mut verdicts);
            let passing: Vec<NodeIdx> = all.iter().zip(&verdicts).filter(|(_, v)| v.is_none()).map(|(&n, _)| n).collect();
            let mut list = vec![NodeIdx(7)];
            filter_passing_nodes(&dom_of_node, &per_node, &taint_set, &taints_ok, limit, &mut list);
            prop_assert_eq!(&list, &passing);
            // More than 64 taint sets: the per-set table instead of the bit mask, same answers.
            let mut wide = taints_ok.clone();
            wide.resize(65, false);
            filter_passing_nodes(&dom_of_node, &per_node, &taint_set, &wide, limit, &mut list);
            prop_assert_eq!(&list, &passing);
            prop_assert_eq!(
                eligible_node_min(&dom_of_node, &per_node, &taint_set, &wide),
                eligible_node_min(&dom_of_node, &per_node, &taint_set, &taints_ok)
            );
        }

        /// With every node carrying the key, the row-bitset kernel ([`free_eligible_rows`]) says
        /// what the column pass says: the minimum is 0 exactly when it finds a free eligible node,
        /// the same eligible count; and its rows with the untolerated ones are the nodes Filter
        /// passes at limit 0 (`Candidates::Rows`), without them the eligible ones among those.
        #[test]
        fn row_bitsets_are_the_column_pass(
            nodes in proptest::collection::vec((0u32..3, 0u32..4), 0..200),
            taints_ok in proptest::collection::vec(any::<bool>(), 4),
            stale_words in 0usize..3,
        ) {
            let dom_of_node: Vec<u32> = (0..nodes.len() as u32).collect();
            let per_node: Vec<u32> = nodes.iter().map(|n| n.0).collect();
            let taint_set: Vec<u32> = nodes.iter().map(|n| n.1).collect();
            // Incremental sets may be shorter (missing words read 0) or carry zero words past the rows.
            let mut occupied = crate::snapshot::pod_index::occupied_rows(&per_node);
            occupied.resize(bits::trimmed(&occupied).len() + stale_words, 0);
            let untolerated = bits::from_fn(nodes.len(), |n| !taints_ok[taint_set[n] as usize]);
            let mut free = vec![7u64];
            let (some_free, num) = free_eligible_rows(nodes.len(), &occupied, &untolerated, &mut free);
            let (min, want_num) = eligible_node_min(&dom_of_node, &per_node, &taint_set, &taints_ok);
            prop_assert_eq!(num, want_num);
            prop_assert_eq!(some_free, min == Some(0));
            let mut passing = Vec::new();
            filter_passing_nodes(&dom_of_node, &per_node, &taint_set, &taints_ok, 0, &mut passing);
            let both: Vec<u64> = free.iter().enumerate().map(|(w, &f)| f | bits::word(&untolerated, w)).collect();
            let mut got = Vec::new();
            bits::push_ones(&both, &mut got);
            prop_assert_eq!(&got, &passing);
            got.clear();
            bits::push_ones(&free, &mut got);
            let eligible: Vec<NodeIdx> =
                passing.iter().copied().filter(|n| taints_ok[taint_set[n.ix()] as usize]).collect();
            prop_assert_eq!(&got, &eligible);
        }
    }
}
