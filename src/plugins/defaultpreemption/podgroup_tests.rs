//! PodGroupPostFilter's victim selection as tables of cases, after upstream v1.37.2's
//! `preemption/podgrouppreemption_test.go` (eligibility, ongoing preemption, no victims, PDB
//! ordering, `disruptionMode: all` groups, the reprieve order).

use super::*;
use crate::plugins::defaultpreemption::GroupMeta;
use crate::snapshot::testing::{sel_labels, MakeNode, MakePod};
use crate::snapshot::Pdb;

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
/// `errPodGroupUnschedulable`'s text, what [`first_fit`] says when a member fits nowhere.
const UNSCHEDULABLE: &str = "pod group is unschedulable";

fn framework(snap: &mut Snapshot) -> Framework {
    crate::plugins::testutil::framework_with(snap, &["NodeResourcesFit"], &["NodeResourcesFit"], &[super::super::NAME])
}

/// A running pod: name, node, priority, cpu (milli), group, label app=foo, terminating.
type Running = (&'static str, &'static str, i32, i64, Option<&'static str>, bool, bool);

/// A plain pod-group scheduling function: each member on the first node (in order) where it
/// fits with the members before it held; Success only if every member fits; reverted at the end.
fn first_fit(fw: &Framework, snap: &mut Snapshot, members: &[Arc<PodInfo>]) -> GroupSchedule {
    let mut assignments = Vec::new();
    let mut held = Vec::new();
    for m in members {
        let node = (0..snap.nodes.len())
            .map(|i| NodeIdx(i as u32))
            .find(|&ix| fits_with_nominated(fw, snap, m, ix, None).is_none())
            .map(|ix| snap.nodes.name[ix.ix()]);
        if let Some(n) = node {
            snap.place_pod(m.clone(), n).unwrap();
            held.push(m.uid);
        }
        assignments.push(node);
    }
    for uid in held {
        snap.unplace_pod(uid);
    }
    let status = if assignments.iter().all(Option::is_some) {
        GroupStatus::Success
    } else {
        GroupStatus::Unschedulable(UNSCHEDULABLE.into())
    };
    GroupSchedule { assignments, status }
}

struct Case {
    name: &'static str,
    /// Nodes of 1000m cpu each.
    nodes: &'static [&'static str],
    /// Lower-priority groups: name, priority, disruptionMode all.
    groups: &'static [(&'static str, i32, bool)],
    running: &'static [Running],
    /// A PDB (0 disruptions allowed) over app=foo.
    pdb: bool,
    /// The preemptor: priority, preemptionPolicy Never, members' cpu, the first member's nominated node.
    priority: i32,
    never: bool,
    member_cpu: &'static [i64],
    nominated: Option<&'static str>,
    /// Expected: victims (sorted names), PDB violations, members' nodes; or the rejection.
    want: Want,
}

#[derive(Debug, PartialEq)]
enum Want {
    Preempt(Vec<&'static str>, usize, Vec<&'static str>),
    Ongoing,
    Rejected(&'static str, bool),
}

fn run(c: &Case) -> Want {
    let mut snap = Snapshot::new();
    snap.pod_groups.set_enabled(true);
    for n in c.nodes {
        MakeNode::new(&mut snap, n).capacity(1000, 1 << 30).add();
    }
    let ns = snap.wk.default_namespace;
    for &(name, priority, disrupt_all) in c.groups {
        let g = snap.interner.intern(name);
        snap.pod_groups.set_group(ns, g, GroupMeta { priority, disrupt_all });
    }
    for (i, &(name, node, priority, cpu, group, foo, terminating)) in c.running.iter().enumerate() {
        let mut b = MakePod::new(&mut snap, name).req(cpu, 0).priority(priority).start_time(i as i64);
        if foo {
            b = b.label("app", "foo");
        }
        if terminating {
            b = b.terminating();
        }
        let p = b.place(node);
        if let Some(g) = group {
            let g = snap.interner.intern(g);
            snap.pod_groups.add_member(p.uid, ns, g);
        }
    }
    if c.pdb {
        let selector = sel_labels(&mut snap, &[("app", "foo")]);
        snap.cluster.pdbs.push(Pdb { namespace: ns, selector, disruptions_allowed: 0, disrupted_pods: vec![] });
    }
    let fw = framework(&mut snap);
    let members: Vec<Arc<PodInfo>> = c
        .member_cpu
        .iter()
        .enumerate()
        .map(|(i, &cpu)| {
            let mut b = MakePod::new(&mut snap, &format!("m{i}")).req(cpu, 0).priority(c.priority);
            if c.never {
                b = b.preemption_never();
            }
            let mut p = b.build();
            if i == 0 {
                p.nominated_node = c.nominated.map(|n| snap.interner.intern(n));
            }
            Arc::new(p)
        })
        .collect();
    let policy = if c.never { PreemptionPolicy::Never } else { PreemptionPolicy::PreemptLowerPriority };
    let preemptor = GroupPreemptor { priority: c.priority, policy, members: &members };
    let where_ = |snap: &Snapshot| {
        let mut v: Vec<_> = snap.pods.iter().map(|(u, p)| (*u, p.node)).collect();
        v.sort();
        v
    };
    let before = where_(&snap);
    let out = preempt_pod_group(&fw, &mut snap, &preemptor, |s| first_fit(&fw, s, &members));
    assert_eq!(before, where_(&snap), "{}: the snapshot is restored", c.name);
    match out {
        GroupPostFilter::Preempt { victims, num_pdb_violations, nominations } => {
            let mut v: Vec<&'static str> =
                victims.iter().map(|p| c.running.iter().find(|r| r.0 == p.name).unwrap().0).collect();
            v.sort();
            let nodes = nominations
                .iter()
                .map(|(_, n)| *c.nodes.iter().find(|x| **x == snap.interner.resolve(*n)).unwrap())
                .collect();
            Want::Preempt(v, num_pdb_violations, nodes)
        }
        GroupPostFilter::Ongoing => Want::Ongoing,
        GroupPostFilter::Rejected { message, unresolvable } => {
            let known = [NO_VICTIMS, NOT_ELIGIBLE, UNSCHEDULABLE];
            Want::Rejected(known.into_iter().find(|k| *k == message).expect("a known message"), unresolvable)
        }
        GroupPostFilter::Error(e) => panic!("{}: error {e}", c.name),
    }
}

#[test]
fn pod_group_preemption_table() {
    const N12: &[&str] = &["n1", "n2"];
    let cases = [
        Case {
            name: "a gang of two evicts the fewest pods: the last reprieved on each node",
            nodes: N12,
            groups: &[],
            running: &[
                ("a1", "n1", LOW, 300, None, false, false),
                ("a2", "n1", LOW, 300, None, false, false),
                ("b1", "n2", LOW, 300, None, false, false),
                ("b2", "n2", LOW, 300, None, false, false),
            ],
            pdb: false,
            priority: HIGH,
            never: false,
            member_cpu: &[600, 600],
            nominated: None,
            want: Want::Preempt(vec!["a2", "b2"], 0, vec!["n1", "n2"]),
        },
        Case {
            name: "more important victims are reprieved first (priority before start time)",
            nodes: &["n1"],
            groups: &[],
            running: &[("old", "n1", LOW, 500, None, false, false), ("mid", "n1", MID, 500, None, false, false)],
            pdb: false,
            priority: HIGH,
            never: false,
            member_cpu: &[500],
            nominated: None,
            want: Want::Preempt(vec!["old"], 0, vec!["n1"]),
        },
        Case {
            name: "PDB-violating victims are reprieved before the others",
            nodes: &["n1"],
            groups: &[],
            running: &[("foo", "n1", LOW, 500, None, true, false), ("mid", "n1", MID, 500, None, false, false)],
            pdb: true,
            priority: HIGH,
            never: false,
            member_cpu: &[500],
            nominated: None,
            want: Want::Preempt(vec!["mid"], 0, vec!["n1"]),
        },
        Case {
            name: "a PDB-violating victim that cannot be reprieved counts its violation",
            nodes: &["n1"],
            groups: &[],
            running: &[("foo", "n1", LOW, 600, None, true, false)],
            pdb: true,
            priority: HIGH,
            never: false,
            member_cpu: &[500],
            nominated: None,
            want: Want::Preempt(vec!["foo"], 1, vec!["n1"]),
        },
        Case {
            name: "a disruptionMode all group goes whole, its member on the other node too",
            nodes: N12,
            groups: &[("pg", LOW, true)],
            running: &[
                ("g1", "n1", LOW, 600, Some("pg"), false, false),
                ("g2", "n2", LOW, 100, Some("pg"), false, false),
            ],
            pdb: false,
            priority: HIGH,
            never: false,
            member_cpu: &[1000],
            nominated: None,
            want: Want::Preempt(vec!["g1", "g2"], 0, vec!["n1"]),
        },
        Case {
            name: "single mode members are units of their own",
            nodes: N12,
            groups: &[("pg", LOW, false)],
            running: &[
                ("g1", "n1", LOW, 600, Some("pg"), false, false),
                ("g2", "n2", LOW, 100, Some("pg"), false, false),
            ],
            pdb: false,
            priority: HIGH,
            never: false,
            member_cpu: &[1000],
            nominated: None,
            want: Want::Preempt(vec!["g1"], 0, vec!["n1"]),
        },
        Case {
            name: "a group's priority, not its pods', decides (a high-priority pod of a low group is a victim)",
            nodes: &["n1"],
            groups: &[("pg", LOW, false)],
            running: &[("g1", "n1", HIGH, 600, Some("pg"), false, false)],
            pdb: false,
            priority: MID,
            never: false,
            member_cpu: &[500],
            nominated: None,
            want: Want::Preempt(vec!["g1"], 0, vec!["n1"]),
        },
        Case {
            name: "a group whose priority is not higher finds no victims",
            nodes: &["n1"],
            groups: &[],
            running: &[("p", "n1", HIGH, 600, None, false, false)],
            pdb: false,
            priority: HIGH,
            never: false,
            member_cpu: &[500],
            nominated: None,
            want: Want::Rejected(NO_VICTIMS, true),
        },
        Case {
            name: "preemptionPolicy Never is not eligible",
            nodes: &["n1"],
            groups: &[],
            running: &[("p", "n1", LOW, 600, None, false, false)],
            pdb: false,
            priority: HIGH,
            never: true,
            member_cpu: &[500],
            nominated: None,
            want: Want::Rejected(NOT_ELIGIBLE, false),
        },
        Case {
            name: "a terminating lower-priority pod on a member's nominated node: ongoing preemption",
            nodes: &["n1"],
            groups: &[],
            running: &[("p", "n1", LOW, 600, None, false, true)],
            pdb: false,
            priority: HIGH,
            never: false,
            member_cpu: &[500],
            nominated: Some("n1"),
            want: Want::Ongoing,
        },
        Case {
            name: "a terminating pod of higher priority is no ongoing preemption",
            nodes: &["n1"],
            groups: &[],
            running: &[("h", "n1", HIGH, 100, None, false, true), ("p", "n1", LOW, 600, None, false, false)],
            pdb: false,
            priority: MID,
            never: false,
            member_cpu: &[500],
            nominated: Some("n1"),
            want: Want::Preempt(vec!["p"], 0, vec!["n1"]),
        },
    ];
    for c in &cases {
        assert_eq!(run(c), c.want, "{}", c.name);
    }
}

#[test]
fn a_group_that_fits_nowhere_even_without_victims_is_rejected_with_the_functions_message() {
    let c = Case {
        name: "too big",
        nodes: &["n1"],
        groups: &[],
        running: &[("p", "n1", LOW, 100, None, false, false)],
        pdb: false,
        priority: HIGH,
        never: false,
        member_cpu: &[2000],
        nominated: None,
        want: Want::Rejected(UNSCHEDULABLE, false),
    };
    assert_eq!(run(&c), Want::Rejected(UNSCHEDULABLE, false));
    let out = GroupPostFilter::Rejected { message: UNSCHEDULABLE.into(), unresolvable: false };
    assert_eq!(out.message(), "pod group preemption: pod group is unschedulable");
}

#[test]
fn messages_are_upstreams() {
    let cases: &[(GroupPostFilter, &str)] = &[
        (
            GroupPostFilter::Preempt { victims: vec![], num_pdb_violations: 0, nominations: vec![] },
            "pod group preemption: found a placement for podgroup, preempting 0 victims",
        ),
        (GroupPostFilter::Ongoing, "pod group preemption: ongoing preemption on nominated nodes"),
        (
            GroupPostFilter::Rejected { message: NO_VICTIMS.into(), unresolvable: true },
            "pod group preemption: No preemption victims found for incoming preemptor",
        ),
    ];
    for (out, want) in cases {
        assert_eq!(out.message(), *want);
    }
}
