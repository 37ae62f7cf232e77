//! Cases from upstream v1.37.2's `defaultpreemption/default_preemption_test.go`
//! (TestSelectVictimsOnNode, its "Workload Aware" and "Cross-node PodGroup" rows) and
//! `preemption/util_test.go` (TestMoreImportantVictim, TestGetPodPriority,
//! TestFilterVictimsWithPDBViolation).

use super::*;
use crate::plugins::defaultpreemption::try_node;
use crate::snapshot::testing::{sel_labels, MakeNode, MakePod};
use crate::snapshot::Pdb;

/// Upstream's priorities and resources (cpu milli, memory bytes).
const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
const VERY_HIGH: i32 = 10000;
const SMALL: (i64, i64) = (100, 100);
const MEDIUM: (i64, i64) = (200, 200);
const LARGE: (i64, i64) = (300, 300);
const VERY_LARGE: (i64, i64) = (500, 500);

fn framework(snap: &mut Snapshot) -> Framework {
    crate::plugins::testutil::framework_with(snap, &["NodeResourcesFit"], &["NodeResourcesFit"], &[super::super::NAME])
}

/// A pod of a test row: name, node, priority, requests, group, label app=foo.
type Row = (&'static str, &'static str, i32, (i64, i64), Option<&'static str>, bool);

/// Builds the snapshot (GenericWorkload on), runs `SelectVictimsOnNode` for a preemptor of
/// `prio` asking `LARGE` on `main`: the victims (sorted names) and the PDB violations.
fn select(
    on: bool,
    nodes: &[&str],
    groups: &[(&str, i32, bool)],
    pods: &[Row],
    pdb: bool,
    main: &str,
    prio: i32,
) -> Result<(Vec<String>, usize), NotCandidate> {
    let mut snap = Snapshot::new();
    snap.pod_groups.set_enabled(on);
    for n in nodes {
        MakeNode::new(&mut snap, n).capacity(VERY_LARGE.0, VERY_LARGE.1).add();
    }
    let ns = snap.wk.default_namespace;
    for &(name, priority, disrupt_all) in groups {
        let g = snap.interner.intern(name);
        snap.pod_groups.set_group(ns, g, GroupMeta { priority, disrupt_all });
    }
    for &(name, node, priority, (cpu, mem), group, foo) in pods {
        let mut b = MakePod::new(&mut snap, name).req(cpu, mem).priority(priority);
        if foo {
            b = b.label("app", "foo");
        }
        let p = b.place(node);
        if let Some(g) = group {
            let g = snap.interner.intern(g);
            snap.pod_groups.add_member(p.uid, ns, g);
        }
    }
    if pdb {
        let selector = sel_labels(&mut snap, &[("app", "foo")]);
        snap.cluster.pdbs.push(Pdb { namespace: ns, selector, disruptions_allowed: 0, disrupted_pods: vec![] });
    }
    let fw = framework(&mut snap);
    let pod = MakePod::new(&mut snap, "p").req(LARGE.0, LARGE.1).priority(prio).build();
    let node = snap.nodes.idx_of(snap.interner.intern(main)).unwrap();
    let before: Vec<_> = {
        let mut v: Vec<_> = snap.pods.iter().map(|(u, p)| (*u, p.node)).collect();
        v.sort();
        v
    };
    let out = try_node(&fw, &mut snap, &pod, node, None, None);
    let mut after: Vec<_> = snap.pods.iter().map(|(u, p)| (*u, p.node)).collect();
    after.sort();
    assert_eq!(before, after, "the dry run leaves every pod where it was");
    out.map(|c| {
        let mut v: Vec<String> = super::super::victim_pods(&snap, &c.victims).iter().map(|p| p.name.clone()).collect();
        v.sort();
        (v, c.num_pdb_violations)
    })
}

#[test]
fn select_victims_on_node_workload_aware_table() {
    type Case = (
        &'static str,
        Vec<&'static str>,
        Vec<(&'static str, i32, bool)>,
        Vec<Row>,
        bool,
        i32,
        Vec<&'static str>,
        usize,
    );
    let n1 = vec!["node1"];
    let cases: Vec<Case> = vec![
        (
            "Workload Aware: Atomic preemption of PodGroup",
            n1.clone(),
            vec![("pg1", LOW, true)],
            vec![("g1-1", "node1", LOW, SMALL, Some("pg1"), false), ("g1-2", "node1", LOW, MEDIUM, Some("pg1"), false)],
            false,
            HIGH,
            vec!["g1-1", "g1-2"],
            0,
        ),
        (
            "Workload Aware: prefer single pod over podGroup for preemption candidate",
            n1.clone(),
            vec![("pg1", LOW, true)],
            vec![
                ("p1", "node1", LOW, SMALL, None, false),
                ("g1-1", "node1", LOW, SMALL, Some("pg1"), false),
                ("g1-2", "node1", LOW, SMALL, Some("pg1"), false),
            ],
            false,
            HIGH,
            vec!["p1"],
            0,
        ),
        (
            "Workload Aware: preempt lower priority pod group instead of higher priority single pod",
            n1.clone(),
            vec![("pg1", LOW, true)],
            vec![("p1", "node1", HIGH, MEDIUM, None, false), ("g1-1", "node1", LOW, MEDIUM, Some("pg1"), false)],
            false,
            VERY_HIGH,
            vec!["g1-1"],
            0,
        ),
        (
            "Workload Aware: preempt lower priority single pod instead of higher priority pod group",
            n1.clone(),
            vec![("pg1", HIGH, true)],
            vec![("p1", "node1", LOW, MEDIUM, None, false), ("g1-1", "node1", HIGH, MEDIUM, Some("pg1"), false)],
            false,
            VERY_HIGH,
            vec!["p1"],
            0,
        ),
        (
            "Workload Aware: PDB: PodGroup as victim with 2 PDB violations",
            n1.clone(),
            vec![("pg1", LOW, true)],
            vec![("g1-1", "node1", LOW, MEDIUM, Some("pg1"), true), ("g1-2", "node1", LOW, MEDIUM, Some("pg1"), true)],
            true,
            HIGH,
            vec!["g1-1", "g1-2"],
            2,
        ),
        (
            "Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority violating PodGroup (DisruptionModeAll)",
            n1.clone(),
            vec![("pg-violating", LOW, true), ("pg-non-violating", MID, true)],
            vec![
                ("g1-1", "node1", LOW, MEDIUM, Some("pg-violating"), true),
                ("g2-1", "node1", MID, MEDIUM, Some("pg-non-violating"), false),
            ],
            true,
            HIGH,
            vec!["g2-1"],
            0,
        ),
        (
            "Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority violating PodGroup (DisruptionModeSingle)",
            n1.clone(),
            vec![("pg-violating", LOW, false), ("pg-non-violating", MID, false)],
            vec![
                ("g1-1", "node1", LOW, MEDIUM, Some("pg-violating"), true),
                ("g2-1", "node1", MID, MEDIUM, Some("pg-non-violating"), false),
            ],
            true,
            HIGH,
            vec!["g2-1"],
            0,
        ),
        (
            "Cross-node PodGroup: whole pod group across multiple nodes expected to be preempted",
            vec!["node-a", "node-b"],
            vec![("pg1", LOW, true)],
            vec![("pod-a", "node-a", LOW, LARGE, Some("pg1"), false), ("pod-b", "node-b", LOW, LARGE, Some("pg1"), false)],
            false,
            HIGH,
            vec!["pod-a", "pod-b"],
            0,
        ),
        // Not upstream rows: the same layout with disruptionMode single evicts the local member
        // alone; a group priority above the preemptor's protects pods of lower own priority.
        (
            "single: only the member on the node",
            vec!["node-a", "node-b"],
            vec![("pg1", LOW, false)],
            vec![("pod-a", "node-a", LOW, LARGE, Some("pg1"), false), ("pod-b", "node-b", LOW, LARGE, Some("pg1"), false)],
            false,
            HIGH,
            vec!["pod-a"],
            0,
        ),
        (
            "the group's priority, not the pod's, is weighed",
            n1.clone(),
            vec![("pg1", VERY_HIGH, false)],
            vec![("g1-1", "node1", LOW, LARGE, Some("pg1"), false), ("p1", "node1", MID, MEDIUM, None, false)],
            false,
            HIGH,
            vec![],
            0,
        ),
    ];
    for (name, nodes, groups, pods, pdb, prio, want, want_pdb) in cases {
        let main = nodes[0];
        let got = select(true, &nodes, &groups, &pods, pdb, main, prio);
        if want.is_empty() {
            assert!(matches!(got, Err(NotCandidate::StillUnfit(..))), "{name}: {got:?}");
            continue;
        }
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, Ok((want, want_pdb)), "{name}");
    }
}

#[test]
fn gate_off_pods_are_their_own_units() {
    // TestSelectVictimsOnNode's "Atomic preemption" layout with GenericWorkload off: the group is
    // not read, each pod is weighed alone (the small one is reprieved).
    let pods = [("g1-1", "node1", LOW, SMALL, Some("pg1"), false), ("g1-2", "node1", LOW, MEDIUM, Some("pg1"), false)];
    let got = select(false, &["node1"], &[("pg1", LOW, true)], &pods, false, "node1", HIGH);
    assert_eq!(got, Ok((vec!["g1-2".to_string()], 0)));
}

fn unit(kind: UnitKind, priority: i32, size: usize, start: i64) -> Unit {
    let mut snap = Snapshot::new();
    let pods = (0..size)
        .map(|i| (Arc::new(MakePod::new(&mut snap, &format!("p{i}")).start_time(start).build()), Sym::default()))
        .collect();
    Unit::new(kind, priority, pods)
}

#[test]
fn more_important_victim_table() {
    use UnitKind::{Pod, PodGroup};
    // TestMoreImportantVictim: (name, a, b, a is more important).
    let cases = [
        ("vi1 has higher priority", unit(Pod, 20, 1, 0), unit(Pod, 10, 1, 0), true),
        ("vi2 has higher priority", unit(Pod, 10, 1, 0), unit(Pod, 20, 1, 0), false),
        ("vi1 is PG, vi2 is Pod, same priority", unit(PodGroup, 10, 1, 0), unit(Pod, 10, 1, 0), true),
        ("vi1 is Pod, vi2 is PG, same priority", unit(Pod, 10, 1, 0), unit(PodGroup, 10, 1, 0), false),
        ("both Pods, vi1 older", unit(Pod, 10, 1, 0), unit(Pod, 10, 1, 5), true),
        ("both Pods, vi2 older", unit(Pod, 10, 1, 5), unit(Pod, 10, 1, 0), false),
        ("both PGs, vi1 larger", unit(PodGroup, 10, 2, 5), unit(PodGroup, 10, 1, 0), true),
        ("both PGs, vi2 larger", unit(PodGroup, 10, 1, 0), unit(PodGroup, 10, 2, 5), false),
        ("both PGs, same size, vi1 older", unit(PodGroup, 10, 2, 0), unit(PodGroup, 10, 2, 5), true),
        ("both PGs, same size, vi2 older", unit(PodGroup, 10, 2, 5), unit(PodGroup, 10, 2, 0), false),
    ];
    for (name, a, b, want) in cases {
        assert_eq!(more_important_unit(&a, &b) == Ordering::Less, want, "{name}");
    }
}

#[test]
fn victim_priority_table() {
    // TestGetPodPriority (without composite groups): a member takes its group's priority; a pod
    // without a group, or whose group does not exist, or with the gate off, keeps its own.
    for (name, on, group_exists, member, want) in [
        ("pod without a group", true, true, false, 7),
        ("member of an existing group", true, true, true, 50),
        ("group not found", true, false, true, 7),
        ("gate off", false, true, true, 7),
    ] {
        let mut snap = Snapshot::new();
        snap.pod_groups.set_enabled(on);
        let (ns, g) = (snap.wk.default_namespace, snap.interner.intern("pg"));
        if group_exists {
            snap.pod_groups.set_group(ns, g, GroupMeta { priority: 50, disrupt_all: false });
        }
        let p = MakePod::new(&mut snap, "p").priority(7).build();
        if member {
            snap.pod_groups.add_member(p.uid, ns, g);
        }
        assert_eq!(victim_priority(&snap, &p), want, "{name}");
    }
}

#[test]
fn pdb_violations_are_counted_per_unit() {
    // TestFilterVictimsWithPDBViolation: a unit with any violating pod is violating, with the
    // count of its violating pods; budgets are consumed across units in order.
    let mut snap = Snapshot::new();
    let ns = snap.wk.default_namespace;
    let selector = sel_labels(&mut snap, &[("app", "foo")]);
    snap.cluster.pdbs.push(Pdb { namespace: ns, selector, disruptions_allowed: 1, disrupted_pods: vec![] });
    let pod = |snap: &mut Snapshot, name: &str, foo: bool| {
        let b = MakePod::new(snap, name);
        Arc::new(if foo { b.label("app", "foo") } else { b }.build())
    };
    let u = |pods: Vec<Arc<PodInfo>>| {
        Unit::new(UnitKind::PodGroup, 0, pods.into_iter().map(|p| (p, Sym::default())).collect())
    };
    let a = u(vec![pod(&mut snap, "a1", true), pod(&mut snap, "a2", false)]);
    let b = u(vec![pod(&mut snap, "b1", true), pod(&mut snap, "b2", true)]);
    let c = u(vec![pod(&mut snap, "c1", false)]);
    let (violating, ok) = split_units_by_pdb(&snap, vec![a, b, c]);
    let names = |u: &Unit| u.pods.iter().map(|(p, _)| p.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        violating.iter().map(|(u, n)| (names(u), *n)).collect::<Vec<_>>(),
        vec![(vec!["b1".to_string(), "b2".to_string()], 2)]
    );
    assert_eq!(
        ok.iter().map(names).collect::<Vec<_>>(),
        vec![vec!["a1".to_string(), "a2".to_string()], vec!["c1".to_string()]]
    );
}
