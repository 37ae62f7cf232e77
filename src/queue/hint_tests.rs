//! Tables of upstream v1.37.2's hint tests (`pkg/scheduler/framework/plugins/*/*_test.go`), each
//! case named as upstream names it, run through [`hint_fn`] with the event's objects.

use std::sync::Arc;

use super::super::{
    ClusterEvent, EventObjects, Location, NodeChange, NodeObject, PluginSet, QueuedPod, QueueingHint, SchedulingQueue,
};
use super::*;
use crate::snapshot::testing::{sel_exists, sel_labels, MakeNode, MakePod};
use crate::snapshot::{
    AffinityTerm, InclusionPolicy, LabelOp, LabelRequirement, LabelSelector, NamespaceSet, NodeSpec, Snapshot,
    SpreadConstraint, Taint, TaintEffect, TolerationOp, WhenUnsatisfiable,
};

use QueueingHint::{Queue, Skip};

/// Every node change bit: the hint sees the update as upstream's tests call it, directly.
const ANY_CHANGE: NodeChange = NodeChange(31);

fn obj(spec: NodeSpec) -> NodeObject {
    NodeObject { spec: Arc::new(spec), label_ints: Vec::new() }
}

fn node_event(old: Option<NodeSpec>, new: NodeSpec) -> (ClusterEvent, EventObjects) {
    let event = match old {
        None => ClusterEvent::NodeAdd { node: 0 },
        Some(_) => ClusterEvent::NodeUpdate { node: 0, change: ANY_CHANGE },
    };
    (event, EventObjects { old_node: old.map(obj), new_node: Some(obj(new)), ..EventObjects::default() })
}

fn syms(snap: &mut Snapshot) -> HintSyms {
    let value = snap.interner.intern("");
    HintSyms {
        wildcard_ip: snap.wk.default_host_ip,
        unschedulable_taint: Taint { key: snap.wk.taint_unschedulable, value, effect: TaintEffect::NoSchedule },
    }
}

fn run(snap: &mut Snapshot, plugin: &str, pod: PodInfo, event: &ClusterEvent, objs: &EventObjects) -> QueueingHint {
    let f = hint_fn::<()>(plugin, syms(snap), HintArgs::default()).expect("known plugin");
    let qp = QueuedPod::new(pod.uid, 0, ()).with_spec(Arc::new(pod));
    f(event, Some(objs), &qp)
}

/// noderesources `Test_isSchedulableAfterNodeChange` (nodes of `st.MakeNode().Capacity`: 32 pods).
#[test]
fn node_resources_fit_after_node_change() {
    let mut s = Snapshot::new();
    let node = |s: &mut Snapshot, mem: i64, scalars: &[(&str, i64)]| {
        let mut n = MakeNode::new(s, "n").capacity(0, mem).pods(32);
        for &(name, v) in scalars {
            n = n.scalar(name, v);
        }
        n.spec()
    };
    let pod = |s: &mut Snapshot, mem: i64, a: i64| {
        let mut p = MakePod::new(s, "p").req(0, mem);
        if a > 0 {
            p = p.scalar_req("example.com/aaa", a);
        }
        p.build()
    };
    let (a, b) = ("example.com/aaa", "example.com/bbb");
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, PodInfo, Option<NodeSpec>, NodeSpec, QueueingHint)> = vec![
        ("skip-queue-on-node-add-without-sufficient-resources", pod(&mut s, 2, 0), None, node(&mut s, 1, &[]), Skip),
        (
            "skip-queue-on-node-add-without-required-resource-type",
            pod(&mut s, 0, 1),
            None,
            node(&mut s, 0, &[(b, 1)]),
            Skip,
        ),
        ("queue-on-node-add-with-sufficient-resources", pod(&mut s, 2, 1), None, node(&mut s, 4, &[(a, 2)]), Queue),
        (
            "skip-queue-on-node-unrelated-changes",
            pod(&mut s, 2, 1),
            Some(node(&mut s, 2, &[(a, 2)])),
            node(&mut s, 2, &[(a, 1), (b, 2)]),
            Skip,
        ),
        (
            "queue-on-pod-requested-resources-increase",
            pod(&mut s, 2, 1),
            Some(node(&mut s, 2, &[(a, 1)])),
            node(&mut s, 2, &[(a, 2)]),
            Queue,
        ),
        (
            "skip-queue-on-node-changes-from-suitable-to-unsuitable",
            pod(&mut s, 2, 1),
            Some(node(&mut s, 4, &[(a, 2)])),
            node(&mut s, 1, &[(a, 2)]),
            Skip,
        ),
        (
            "queue-on-node-changes-from-unsuitable-to-suitable",
            pod(&mut s, 2, 1),
            Some(node(&mut s, 1, &[(a, 2)])),
            node(&mut s, 4, &[(a, 2)]),
            Queue,
        ),
    ];
    for (name, pod, old, new, want) in cases {
        let (event, objs) = node_event(old, new);
        assert_eq!(run(&mut s, "NodeResourcesFit", pod, &event, &objs), want, "{name}");
    }
}

/// noderesources `Test_isSchedulableAfterAssignedPodScaleDown` (the assigned-pod cases).
#[test]
fn node_resources_fit_after_assigned_pod_scale_down() {
    let mut s = Snapshot::new();
    let cases = [
        ("skip-queue-on-unrelated-resource-scale-down", (1000, 0), (0, 2), (0, 1), Skip),
        ("queue-on-relevant-resource-scale-down", (1000, 0), (2000, 0), (1000, 0), Queue),
    ];
    for (name, want_req, old_req, new_req, want) in cases {
        let pod = MakePod::new(&mut s, "pod1").req(want_req.0, want_req.1).build();
        let old = Arc::new(MakePod::new(&mut s, "pod2").req(old_req.0, old_req.1).build());
        let new = Arc::new(MakePod::new(&mut s, "pod2").req(new_req.0, new_req.1).build());
        let event = ClusterEvent::AssignedPodUpdate { pod: old.uid, node: 0, resources_scaled_down: true };
        let objs = EventObjects { old_pod: Some(old), new_pod: Some(new), ..EventObjects::default() };
        assert_eq!(run(&mut s, "NodeResourcesFit", pod, &event, &objs), want, "{name}");
    }
}

/// nodeaffinity `Test_isSchedulableAfterNodeChange` (without `addedAffinity`), pod with
/// `NodeAffinityIn("foo", ["bar"])`.
#[test]
fn node_affinity_after_node_change() {
    let mut s = Snapshot::new();
    let plain = MakeNode::new(&mut s, "n").spec();
    let foo_bar = MakeNode::new(&mut s, "n").label("foo", "bar").spec();
    let k_v = MakeNode::new(&mut s, "n").label("k", "v").spec();
    let bigger = MakeNode::new(&mut s, "n").capacity(1000, 0).spec();
    let bigger_foo_bar = MakeNode::new(&mut s, "n").capacity(1000, 0).label("foo", "bar").spec();
    let cases = [
        ("skip-queue-on-add", None, plain.clone(), Skip),
        ("queue-on-add", None, foo_bar.clone(), Queue),
        ("skip-unrelated-changes", Some(plain.clone()), bigger, Skip),
        ("skip-unrelated-changes-on-labels", Some(plain.clone()), k_v.clone(), Skip),
        ("skip-labels-changes-on-node-from-suitable-to-unsuitable", Some(foo_bar.clone()), k_v, Skip),
        ("queue-on-labels-change-makes-pod-schedulable", Some(plain), foo_bar.clone(), Queue),
        ("skip-unrelated-change-that-keeps-pod-schedulable", Some(foo_bar), bigger_foo_bar, Skip),
    ];
    for (name, old, new, want) in cases {
        let pod = MakePod::new(&mut s, "p").affinity_in("foo", &["bar"]).build();
        let (event, objs) = node_event(old, new);
        assert_eq!(run(&mut s, "NodeAffinity", pod, &event, &objs), want, "{name}");
    }
    // nodeSelector is part of the required affinity (`GetRequiredNodeAffinity`).
    let pod = MakePod::new(&mut s, "p").node_selector("foo", "bar").build();
    let (event, objs) = node_event(None, MakeNode::new(&mut s, "n").label("foo", "baz").spec());
    assert_eq!(run(&mut s, "NodeAffinity", pod, &event, &objs), Skip, "nodeSelector mismatch");
}

/// tainttoleration `TestIsSchedulableAfterNodeChange`: a pod tolerating `dedicated=user2:NoSchedule`.
#[test]
fn taint_toleration_after_node_change() {
    let mut s = Snapshot::new();
    let tainted = |s: &mut Snapshot, values: &[&str]| {
        values.iter().fold(MakeNode::new(s, "nodeA"), |n, v| n.taint("dedicated", v, TaintEffect::NoSchedule)).spec()
    };
    let cases = [
        ("skip-queue-on-untoleratedtaint-node-added", None, tainted(&mut s, &["user1"]), Skip),
        ("queue-on-toleratedtaint-node-added", None, tainted(&mut s, &["user2"]), Queue),
        ("skip-unrelated-change", Some(tainted(&mut s, &["user1"])), tainted(&mut s, &["user1", "user3"]), Skip),
        ("queue-on-taint-change", Some(tainted(&mut s, &["user1"])), tainted(&mut s, &["user2"]), Queue),
    ];
    for (name, old, new, want) in cases {
        let pod = MakePod::new(&mut s, "pod1")
            .toleration("dedicated", TolerationOp::Equal, "user2", Some(TaintEffect::NoSchedule))
            .build();
        let (event, objs) = node_event(old, new);
        assert_eq!(run(&mut s, "TaintToleration", pod, &event, &objs), want, "{name}");
    }
}

/// nodeunschedulable `TestIsSchedulableAfterNodeChange`.
#[test]
fn node_unschedulable_after_node_change() {
    let mut s = Snapshot::new();
    let node = |s: &mut Snapshot, unschedulable: bool, not_ready: bool| {
        let mut n = MakeNode::new(s, "n");
        if unschedulable {
            n = n.unschedulable();
        }
        if not_ready {
            n = n.taint("node.kubernetes.io/not-ready", "", TaintEffect::NoExecute);
        }
        n.spec()
    };
    let cases = [
        ("skip-queue-on-unschedulable-node-added", None, node(&mut s, true, false), Skip),
        ("queue-on-schedulable-node-added", None, node(&mut s, false, false), Queue),
        ("skip-unrelated-change-unschedulable-true", Some(node(&mut s, true, false)), node(&mut s, true, true), Skip),
        (
            "skip-unrelated-change-unschedulable-false",
            Some(node(&mut s, false, false)),
            node(&mut s, false, true),
            Skip,
        ),
        ("queue-on-unschedulable-field-change", Some(node(&mut s, true, false)), node(&mut s, false, false), Queue),
    ];
    for (name, old, new, want) in cases {
        let pod = MakePod::new(&mut s, "p").build();
        let (event, objs) = node_event(old, new);
        assert_eq!(run(&mut s, "NodeUnschedulable", pod, &event, &objs), want, "{name}");
    }
}

/// nodeports `Test_isSchedulableAfterAssignedPodDeleted`: a pod asking for host port 8080.
#[test]
fn node_ports_after_assigned_pod_deleted() {
    let mut s = Snapshot::new();
    let cases = [
        ("skip-queue-on-non-hostport", None, Skip),
        ("skip-queue-on-unrelated-hostport", Some(8081), Skip),
        ("queue-on-released-hostport", Some(8080), Queue),
    ];
    for (name, port, want) in cases {
        let pod = MakePod::new(&mut s, "p").host_port("", "", 8080).build();
        let mut deleted = MakePod::new(&mut s, "d");
        if let Some(p) = port {
            deleted = deleted.host_port("", "", p);
        }
        let deleted = Arc::new(deleted.build());
        let event = ClusterEvent::AssignedPodDelete { pod: deleted.uid, node: 0 };
        let objs = EventObjects { old_pod: Some(deleted), ..EventObjects::default() };
        assert_eq!(run(&mut s, "NodePorts", pod, &event, &objs), want, "{name}");
    }
}

/// Without objects, or for a queued pod without its spec, the coarse table decides.
#[test]
fn missing_objects_fall_back_to_the_coarse_table() {
    let mut s = Snapshot::new();
    let f = hint_fn::<()>("NodeResourcesFit", syms(&mut s), HintArgs::default()).unwrap();
    let pod = Arc::new(MakePod::new(&mut s, "p").req(0, 2).build());
    let add = ClusterEvent::NodeAdd { node: 0 };
    let small =
        EventObjects { new_node: Some(obj(MakeNode::new(&mut s, "n").capacity(0, 1).spec())), ..Default::default() };
    let with_spec = QueuedPod::new(pod.uid, 0, ()).with_spec(pod.clone());
    let without_spec = QueuedPod::new(pod.uid, 0, ());
    assert_eq!(f(&add, Some(&small), &with_spec), Skip);
    assert_eq!(f(&add, None, &with_spec), Queue);
    assert_eq!(f(&add, Some(&small), &without_spec), Queue);
    // An update whose old node is unknown: coarse.
    let upd = ClusterEvent::NodeUpdate { node: 0, change: NodeChange::ALLOCATABLE };
    assert_eq!(f(&upd, Some(&small), &with_spec), Queue);
}

/// The queue keeps an event's objects for a pod in flight and replays them when it comes back.
#[test]
fn in_flight_events_replay_with_their_objects() {
    let mut s = Snapshot::new();
    let pod = Arc::new(MakePod::new(&mut s, "p").req(0, 2).build());
    let small = MakeNode::new(&mut s, "small").capacity(0, 1).spec();
    let big = MakeNode::new(&mut s, "big").capacity(0, 4).spec();
    for (node, stays) in [(small, true), (big, false)] {
        let mut q = SchedulingQueue::<()>::new(0, 0);
        q.register_hint(0, hint_fn("NodeResourcesFit", syms(&mut s), HintArgs::default()).unwrap());
        q.add(QueuedPod::new(pod.uid, 0, ()).with_spec(pod.clone()), 0);
        let qp = q.pop(0).unwrap();
        assert!(q.wants_event_objects());
        let objs = EventObjects { new_node: Some(obj(node)), ..EventObjects::default() };
        q.on_event_with(ClusterEvent::NodeAdd { node: 0 }, Some(Arc::new(objs)), 1);
        let got = q.add_unschedulable(qp, PluginSet::of(&[0]), 2);
        assert_eq!(got == Location::Unschedulable, stays);
    }
}

/// The rejected pod's own update: nodeunschedulable `TestIsSchedulableAfterPodTolerationChange`,
/// tainttoleration `Test_isSchedulableAfterTargetPodTolerationChange` (any toleration change
/// queues), noderesources `Test_isSchedulableAfterTargetPodScaleDown`; NodeAffinity registers no
/// pod update.
#[test]
fn own_update_hints() {
    let mut s = Snapshot::new();
    let exists = |s: &mut Snapshot, key: &str| {
        let p = MakePod::new(s, "p");
        if key.is_empty() {
            return p.build();
        }
        p.toleration(key, TolerationOp::Exists, "", Some(TaintEffect::NoSchedule)).build()
    };
    let cases = [
        ("NodeUnschedulable", "queue-when-the-unsched-pod-gets-toleration", "node.kubernetes.io/unschedulable", Queue),
        ("NodeUnschedulable", "skip-when-the-unsched-pod-gets-unrelated-toleration", "unrelated-key", Skip),
        ("TaintToleration", "queue-on-toleration-change", "unrelated-key", Queue),
        ("TaintToleration", "skip-when-tolerations-do-not-change", "", Skip),
        ("NodeAffinity", "no-pod-update-event", "unrelated-key", Skip),
    ];
    for (plugin, name, key, want) in cases {
        let old = Arc::new(exists(&mut s, ""));
        let mut new = exists(&mut s, key);
        new.uid = old.uid;
        let event = ClusterEvent::UnscheduledPodUpdate { pod: old.uid };
        let objs =
            EventObjects { old_pod: Some(old.clone()), new_pod: Some(Arc::new(new.clone())), ..Default::default() };
        assert_eq!(run(&mut s, plugin, new, &event, &objs), want, "{plugin} {name}");
    }
    for (name, old_cpu, new_cpu, want) in
        [("queue-on-scale-down", 2000, 1000, Queue), ("skip-on-scale-up", 1000, 2000, Skip)]
    {
        let old = Arc::new(MakePod::new(&mut s, "p").req(old_cpu, 0).build());
        let mut new = MakePod::new(&mut s, "p").req(new_cpu, 0).build();
        new.uid = old.uid;
        let event = ClusterEvent::UnscheduledPodUpdate { pod: old.uid };
        let objs =
            EventObjects { old_pod: Some(old.clone()), new_pod: Some(Arc::new(new.clone())), ..Default::default() };
        assert_eq!(run(&mut s, "NodeResourcesFit", new, &event, &objs), want, "{name}");
    }
}

/// nodeaffinity `Test_isSchedulableAfterNodeChange`, the `*-scheduler-enforced-node-affinity`
/// cases (addedAffinity `foo In [bar]`), and one of ours where only addedAffinity rejects the node.
#[test]
fn node_affinity_after_node_change_with_added_affinity() {
    let mut s = Snapshot::new();
    let added = MakePod::new(&mut s, "a").affinity_in("foo", &["bar"]).build().required_affinity.map(Arc::new);
    let args = HintArgs { added_affinity: added, ..HintArgs::default() };
    let plain = MakeNode::new(&mut s, "n").spec();
    let foo_bar = MakeNode::new(&mut s, "n").label("foo", "bar").spec();
    let with_affinity = MakePod::new(&mut s, "p").affinity_in("foo", &["bar"]).build();
    let without = MakePod::new(&mut s, "p").build();
    let cases = [
        ("skip-queue-on-add-scheduler-enforced-node-affinity", with_affinity.clone(), plain.clone(), Skip),
        ("queue-on-add-scheduler-enforced-node-affinity", with_affinity, foo_bar.clone(), Queue),
        ("ours: skip-add-only-enforced-affinity-mismatches", without.clone(), plain, Skip),
        ("ours: queue-add-enforced-affinity-matches", without, foo_bar, Queue),
    ];
    for (name, pod, new, want) in cases {
        let f = hint_fn::<()>("NodeAffinity", syms(&mut s), args.clone()).unwrap();
        let qp = QueuedPod::new(pod.uid, 0, ()).with_spec(Arc::new(pod));
        let (event, objs) = node_event(None, new);
        assert_eq!(f(&event, Some(&objs), &qp), want, "{name}");
    }
}

/// A required term that fails to parse is a parse error for `RequiredNodeAffinity.Match` when no
/// other term matches, and the hint answers Queue on the error, also when the bad requirement was
/// the term's only one (found by `verify --hint-random`: `Lt "-1"` is not a label value).
#[test]
fn node_affinity_hint_queues_on_a_term_that_fails_to_parse() {
    use crate::api;
    use crate::snapshot::compile::compile_node_selector;
    let mut s = Snapshot::new();
    let req = |key: &str, op: api::NodeSelectorOperator, values: &[&str]| api::NodeSelectorRequirement {
        key: key.into(),
        operator: op,
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    let term = |reqs: Vec<api::NodeSelectorRequirement>| api::NodeSelectorTerm {
        match_expressions: reqs,
        ..Default::default()
    };
    use api::NodeSelectorOperator::{DoesNotExist, Lt};
    let cases = [
        ("ours: queue-on-add-only-requirement-fails-to-parse", vec![term(vec![req("tier", Lt, &["-1"])])], Queue),
        (
            "ours: queue-on-add-bad-term-and-a-term-that-does-not-match",
            vec![term(vec![req("tier", Lt, &["-1"])]), term(vec![req("kubernetes.io/hostname", DoesNotExist, &[])])],
            Queue,
        ),
        ("ours: skip-on-add-empty-term", vec![api::NodeSelectorTerm::default()], Skip),
    ];
    for (name, terms, want) in cases {
        let sel = api::NodeSelector { node_selector_terms: terms };
        let mut pod = MakePod::new(&mut s, "p").build();
        pod.required_affinity = Some(compile_node_selector(&sel, &mut s.interner));
        let node = MakeNode::new(&mut s, "n").label("tier", "a").label("kubernetes.io/hostname", "n").spec();
        let (event, objs) = node_event(None, node);
        assert_eq!(run(&mut s, "NodeAffinity", pod, &event, &objs), want, "{name}");
    }
}

/// An assigned pod's event with its objects: add (`old` None), update, or delete (`new` None).
fn pod_event(old: Option<PodInfo>, new: Option<PodInfo>) -> (ClusterEvent, EventObjects) {
    let uid = old.as_ref().or(new.as_ref()).expect("a pod").uid;
    let event = match (&old, &new) {
        (None, _) => ClusterEvent::AssignedPodAdd { pod: uid, node: 0 },
        (Some(_), Some(_)) => ClusterEvent::AssignedPodUpdate { pod: uid, node: 0, resources_scaled_down: false },
        (Some(_), None) => ClusterEvent::AssignedPodDelete { pod: uid, node: 0 },
    };
    (event, EventObjects { old_pod: old.map(Arc::new), new_pod: new.map(Arc::new), ..EventObjects::default() })
}

/// interpodaffinity `Test_isSchedulableAfterAssignedPodChange` (the assigned-pod cases; an
/// unscheduled or only nominated pod raises no assigned-pod event here).
#[test]
fn inter_pod_affinity_after_assigned_pod_change() {
    let mut s = Snapshot::new();
    let vals: &[&str] = &["securityscan", "value2"];
    let other = |s: &mut Snapshot, labels: &[(&str, &str)]| {
        labels.iter().fold(MakePod::new(s, "other"), |p, (k, v)| p.label(k, v)).build()
    };
    let affinity = |s: &mut Snapshot| MakePod::new(s, "p").pod_affinity("service", Some(vals), "region").build();
    let anti = |s: &mut Snapshot| MakePod::new(s, "p").pod_anti_affinity("service", Some(vals), "region").build();
    let two_exists = |s: &mut Snapshot| {
        MakePod::new(s, "p").pod_affinity("aaa", None, "hostname").pod_affinity("bbb", None, "hostname").build()
    };
    let two_anti = |s: &mut Snapshot| {
        MakePod::new(s, "p")
            .pod_anti_affinity("service", Some(&["securityscan"]), "region")
            .pod_anti_affinity("app", Some(&["web"]), "region")
            .build()
    };
    let sec = [("service", "securityscan")];
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, PodInfo, Option<PodInfo>, Option<PodInfo>, QueueingHint)> = vec![
        ("add a pod which matches the pod affinity", affinity(&mut s), None, Some(other(&mut s, &sec)), Queue),
        ("add a pod which doesn't match the pod affinity", affinity(&mut s), None, Some(other(&mut s, &[("aaa", "a")])), Skip),
        (
            "update a pod from non-match to match pod affinity",
            affinity(&mut s),
            Some(other(&mut s, &[("aaa", "a")])),
            Some(other(&mut s, &sec)),
            Queue,
        ),
        (
            "the updating pod matches target pod's affinity both before and after label changes",
            affinity(&mut s),
            Some(other(&mut s, &[("service", "value2")])),
            Some(other(&mut s, &sec)),
            Skip,
        ),
        (
            "update a pod from match to non-match the pod affinity",
            affinity(&mut s),
            Some(other(&mut s, &sec)),
            Some(other(&mut s, &[("aaa", "a")])),
            Skip,
        ),
        (
            "update a pod from match to non-match pod's affinity - multiple terms case",
            two_exists(&mut s),
            Some(other(&mut s, &[("aaa", "a")])),
            Some(other(&mut s, &sec)),
            Skip,
        ),
        (
            "update a pod from non-match to match pod's affinity - multiple terms case",
            two_exists(&mut s),
            Some(other(&mut s, &[("aaa", "a")])),
            Some(other(&mut s, &[("aaa", ""), ("bbb", "")])),
            Queue,
        ),
        (
            "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
            anti(&mut s),
            Some(other(&mut s, &sec)),
            Some(other(&mut s, &[("service", "aaaa")])),
            Queue,
        ),
        (
            "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
            anti(&mut s),
            Some(other(&mut s, &[("service", "bbb")])),
            Some(other(&mut s, &sec)),
            Skip,
        ),
        ("delete a pod which doesn't match pod's anti-affinity", anti(&mut s), Some(other(&mut s, &[("aaa", "a")])), None, Skip),
        ("delete a pod which matches pod's anti-affinity", anti(&mut s), Some(other(&mut s, &sec)), None, Queue),
        (
            "delete a pod with anti-affinity that matches pending pod",
            MakePod::new(&mut s, "p").label("service", "securityscan").build(),
            Some(anti(&mut s)),
            None,
            Queue,
        ),
        (
            "delete a pod with anti-affinity that doesn't match pending pod",
            MakePod::new(&mut s, "p").label("service", "foo").build(),
            Some(anti(&mut s)),
            None,
            Skip,
        ),
        (
            "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match pending pod",
            MakePod::new(&mut s, "p").pod_anti_affinity("service", Some(vals), "region").label("service", "foo").build(),
            Some(MakePod::new(&mut s, "o").pod_anti_affinity("service", Some(vals), "region").label("service", "foo").build()),
            None,
            Skip,
        ),
        (
            "modify pod label to change it from matching only one of target pod's anti-affinity terms to matching none",
            two_anti(&mut s),
            Some(other(&mut s, &[("service", "securityscan"), ("app", "bar")])),
            Some(other(&mut s, &[("service", "foo"), ("app", "bar")])),
            Queue,
        ),
        (
            "modify pod label but it still matches one of target pod's anti-affinity terms",
            two_anti(&mut s),
            Some(other(&mut s, &[("service", "securityscan"), ("app", "bar")])),
            Some(other(&mut s, &[("service", "foo"), ("app", "web")])),
            Skip,
        ),
        ("delete a pod which matches only one of target pod's anti-affinity terms", two_anti(&mut s), Some(other(&mut s, &sec)), None, Queue),
        (
            "delete a pod with anti-affinity that matches pending pod on only one term",
            MakePod::new(&mut s, "p").label("service", "securityscan").build(),
            Some(two_anti(&mut s)),
            None,
            Queue,
        ),
    ];
    for (name, pod, old, new, want) in cases {
        let (event, objs) = pod_event(old, new);
        assert_eq!(run(&mut s, "InterPodAffinity", pod, &event, &objs), want, "{name}");
    }
}

/// Ours (upstream's table has no namespace case): the hint matches a term's namespaces as
/// `AffinityTerm.Matches(pod, nil)` does, so a `namespaceSelector` is read against no labels.
#[test]
fn inter_pod_affinity_after_assigned_pod_add_namespaces() {
    let mut s = Snapshot::new();
    let (ns1, team) = (s.interner.intern("ns1"), sel_labels(&mut s, &[("team", "devops")]));
    let not_team = {
        let key = s.interner.intern("team");
        LabelSelector::new(&[], vec![LabelRequirement { key, op: LabelOp::DoesNotExist }])
    };
    let app = sel_labels(&mut s, &[("app", "web")]);
    let tk = s.interner.intern("zone");
    let cases = [
        ("listed namespace", NamespaceSet { names: vec![ns1], selector: None }, "ns1", Queue),
        ("unlisted namespace", NamespaceSet { names: vec![ns1], selector: None }, "ns2", Skip),
        (
            "empty namespaceSelector selects all",
            NamespaceSet { names: vec![], selector: Some(LabelSelector::everything()) },
            "ns2",
            Queue,
        ),
        (
            "namespaceSelector on labels: no Namespace read",
            NamespaceSet { names: vec![], selector: Some(team) },
            "ns1",
            Skip,
        ),
        (
            "namespaceSelector that an empty set matches",
            NamespaceSet { names: vec![], selector: Some(not_team) },
            "ns2",
            Queue,
        ),
    ];
    for (name, namespaces, added_ns, want) in cases {
        let term = AffinityTerm::new(namespaces, app.clone(), tk);
        let pod = MakePod::new(&mut s, "p").namespace("ns1").affinity_term(term).build();
        let added = MakePod::new(&mut s, "o").namespace(added_ns).label("app", "web").build();
        let (event, objs) = pod_event(None, Some(added));
        assert_eq!(run(&mut s, "InterPodAffinity", pod, &event, &objs), want, "{name}");
    }
}

/// interpodaffinity `Test_isSchedulableAfterNodeChange`.
#[test]
fn inter_pod_affinity_after_node_change() {
    let mut s = Snapshot::new();
    let node = |s: &mut Snapshot, labels: &[(&str, &str)]| {
        labels.iter().fold(MakeNode::new(s, "node-a"), |n, (k, v)| n.label(k, v)).spec()
    };
    let vals: &[&str] = &["securityscan", "value2"];
    let aff = |s: &mut Snapshot, tk: &str| MakePod::new(s, "p").pod_affinity("service", Some(vals), tk).build();
    let anti = |s: &mut Snapshot| MakePod::new(s, "p").pod_anti_affinity("another", Some(&["label"]), "zone").build();
    let z1 = [("zone", "zone1")];
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, PodInfo, Option<NodeSpec>, NodeSpec, QueueingHint)> = vec![
        ("add a new node with matched pod affinity topologyKey", aff(&mut s, "zone"), None, node(&mut s, &z1), Queue),
        ("add a new node without matched topologyKey", aff(&mut s, "region"), None, node(&mut s, &z1), Skip),
        (
            "update node label but not topologyKey",
            aff(&mut s, "zone"),
            Some(node(&mut s, &[("aaa", "a")])),
            node(&mut s, &[("aaa", "b")]),
            Skip,
        ),
        (
            "update node label that isn't related to the pod affinity",
            aff(&mut s, "zone"),
            Some(node(&mut s, &z1)),
            node(&mut s, &[("zone", "zone1"), ("unrelated-label", "unrelated")]),
            Skip,
        ),
        (
            "update node with different affinity topologyKey value",
            aff(&mut s, "zone"),
            Some(node(&mut s, &z1)),
            node(&mut s, &[("zone", "zone2")]),
            Queue,
        ),
        (
            "update node to have the affinity topology label",
            aff(&mut s, "zone"),
            Some(node(&mut s, &[("aaa", "a")])),
            node(&mut s, &z1),
            Queue,
        ),
        ("add a new node with matched pod anti-affinity topologyKey", anti(&mut s), None, node(&mut s, &z1), Queue),
        ("add a new node without matched pod anti-affinity topologyKey", anti(&mut s), None, node(&mut s, &[]), Queue),
        (
            "update node label that isn't related to the pod anti-affinity",
            anti(&mut s),
            Some(node(&mut s, &z1)),
            node(&mut s, &[("zone", "zone1"), ("unrelated-label", "unrelated")]),
            Skip,
        ),
        (
            "update node with different anti-affinity topologyKey value",
            anti(&mut s),
            Some(node(&mut s, &z1)),
            node(&mut s, &[("zone", "zone2")]),
            Queue,
        ),
        (
            "update node to have the anti-affinity topology label",
            anti(&mut s),
            Some(node(&mut s, &[("aaa", "a")])),
            node(&mut s, &z1),
            Skip,
        ),
        (
            "update node label not to have anti-affinity topology label",
            anti(&mut s),
            Some(node(&mut s, &z1)),
            node(&mut s, &[("aaa", "a")]),
            Queue,
        ),
    ];
    for (name, pod, old, new, want) in cases {
        let (event, objs) = node_event(old, new);
        assert_eq!(run(&mut s, "InterPodAffinity", pod, &event, &objs), want, "{name}");
    }
}

/// A pod with DoNotSchedule constraints on `keys`, with selectors `foo Exists` then `bar Exists`
/// (upstream's `fooSelector`, `barSelector`), labelled `foo: ""`.
fn spread_pod(s: &mut Snapshot, keys: &[&str]) -> PodInfo {
    let sels = [sel_exists(s, "foo"), sel_exists(s, "bar")];
    keys.iter()
        .zip(sels)
        .fold(MakePod::new(s, "p").label("foo", ""), |p, (k, sel)| {
            p.spread(1, k, WhenUnsatisfiable::DoNotSchedule, sel)
        })
        .build()
}

/// podtopologyspread `Test_isSchedulableAfterNodeChange` (`fooSelector` on every constraint).
#[test]
fn pod_topology_spread_after_node_change() {
    let mut s = Snapshot::new();
    let node = |s: &mut Snapshot, labels: &[(&str, &str)], taint: Option<&str>| {
        let n = labels.iter().fold(MakeNode::new(s, "node-a"), |n, (k, v)| n.label(k, v));
        match taint {
            Some(k) => n.taint(k, "bbb", TaintEffect::NoSchedule),
            None => n,
        }
        .spec()
    };
    let one = |s: &mut Snapshot| {
        let foo = sel_exists(s, "foo");
        MakePod::new(s, "p").spread(1, "zone", WhenUnsatisfiable::DoNotSchedule, foo).build()
    };
    let two = |s: &mut Snapshot| {
        let foo = sel_exists(s, "foo");
        MakePod::new(s, "p")
            .spread(1, "zone", WhenUnsatisfiable::DoNotSchedule, foo.clone())
            .spread(1, "node", WhenUnsatisfiable::DoNotSchedule, foo)
            .build()
    };
    let (z1, zn) = ([("zone", "zone1")], [("zone", "zone1"), ("node", "node1")]);
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, PodInfo, Option<NodeSpec>, Option<NodeSpec>, QueueingHint)> = vec![
        (
            "node updates label which matches topologyKey",
            one(&mut s),
            Some(node(&mut s, &z1, None)),
            Some(node(&mut s, &[("zone", "zone2")], None)),
            Queue,
        ),
        (
            "node that doesn't match topologySpreadConstraints updates non-related label",
            one(&mut s),
            Some(node(&mut s, &[("foo", "bar1")], None)),
            Some(node(&mut s, &[("foo", "bar2")], None)),
            Skip,
        ),
        (
            "node that match topologySpreadConstraints adds non-related label",
            two(&mut s),
            Some(node(&mut s, &[("zone", "zone1"), ("node", "node1"), ("foo", "bar")], None)),
            Some(node(&mut s, &zn, None)),
            Skip,
        ),
        ("create node with non-related labels", one(&mut s), None, Some(node(&mut s, &[("foo", "bar")], None)), Skip),
        ("create node with related labels", one(&mut s), None, Some(node(&mut s, &z1, None)), Queue),
        ("delete node with non-related labels", one(&mut s), Some(node(&mut s, &[("foo", "bar")], None)), None, Skip),
        ("delete node with related labels", one(&mut s), Some(node(&mut s, &z1, None)), None, Queue),
        (
            "add node with related labels that only match one of topologySpreadConstraints",
            two(&mut s),
            None,
            Some(node(&mut s, &z1, None)),
            Skip,
        ),
        (
            "add node with related labels that match all topologySpreadConstraints",
            two(&mut s),
            None,
            Some(node(&mut s, &zn, None)),
            Queue,
        ),
        (
            "update node with related labels that only match one of topologySpreadConstraints",
            two(&mut s),
            Some(node(&mut s, &z1, None)),
            Some(node(&mut s, &z1, None)),
            Skip,
        ),
        (
            "update node with related labels that match all topologySpreadConstraints",
            two(&mut s),
            Some(node(&mut s, &zn, None)),
            Some(node(&mut s, &[("zone", "zone1"), ("node", "node2")], None)),
            Queue,
        ),
        (
            "update node with different taints that match all topologySpreadConstraints",
            two(&mut s),
            Some(node(&mut s, &zn, Some("aaa"))),
            Some(node(&mut s, &zn, Some("ccc"))),
            Queue,
        ),
        (
            "update node with different taints that only match one of topologySpreadConstraints",
            two(&mut s),
            Some(node(&mut s, &[("node", "node1")], Some("aaa"))),
            Some(node(&mut s, &[("node", "node1")], Some("ccc"))),
            Skip,
        ),
    ];
    for (name, pod, old, new, want) in cases {
        let (event, objs) = match new {
            Some(new) => node_event(old, new),
            None => (
                ClusterEvent::NodeDelete { node: 0 },
                EventObjects { old_node: old.map(obj), ..EventObjects::default() },
            ),
        };
        assert_eq!(run(&mut s, "PodTopologySpread", pod, &event, &objs), want, "{name}");
    }
}

/// podtopologyspread `Test_isSchedulableAfterAssignedPodChange` (the assigned-pod cases).
#[test]
fn pod_topology_spread_after_assigned_pod_change() {
    let mut s = Snapshot::new();
    let other = |s: &mut Snapshot, labels: &[(&str, &str)]| {
        labels.iter().fold(MakePod::new(s, "p2"), |p, (k, v)| p.label(k, v)).build()
    };
    let foo = [("foo", "")];
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, &[&str], Option<PodInfo>, Option<PodInfo>, QueueingHint)> = vec![
        ("add pod with labels match topologySpreadConstraints selector", &["zone"], None, Some(other(&mut s, &foo)), Queue),
        (
            "add pod with different namespace",
            &["zone"],
            None,
            Some(MakePod::new(&mut s, "p2").namespace("fake-namespace").label("foo", "").build()),
            Skip,
        ),
        ("add pod with labels don't match topologySpreadConstraints selector", &["zone"], None, Some(other(&mut s, &[("bar", "")])), Skip),
        ("delete pod with labels that match topologySpreadConstraints selector", &["zone"], Some(other(&mut s, &foo)), None, Queue),
        ("delete pod with labels that don't match topologySpreadConstraints selector", &["zone"], Some(other(&mut s, &[("bar", "")])), None, Skip),
        (
            "update pod's non-related label",
            &["zone"],
            Some(other(&mut s, &[("foo", ""), ("bar", "bar1")])),
            Some(other(&mut s, &[("foo", ""), ("bar", "bar2")])),
            Skip,
        ),
        ("add pod's label that matches topologySpreadConstraints selector", &["zone"], Some(other(&mut s, &[])), Some(other(&mut s, &foo)), Queue),
        ("delete pod label that matches topologySpreadConstraints selector", &["zone"], Some(other(&mut s, &foo)), Some(other(&mut s, &[])), Queue),
        (
            "change pod's label that matches topologySpreadConstraints selector",
            &["zone"],
            Some(other(&mut s, &[("foo", "foo1")])),
            Some(other(&mut s, &[("foo", "foo2")])),
            Skip,
        ),
        (
            "add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
            &["zone", "node"],
            Some(other(&mut s, &foo)),
            Some(other(&mut s, &[("foo", ""), ("bar", "bar2")])),
            Queue,
        ),
        (
            "change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
            &["zone", "node"],
            Some(other(&mut s, &foo)),
            Some(other(&mut s, &[("foo", ""), ("baz", "")])),
            Skip,
        ),
        (
            "change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
            &["zone", "node"],
            Some(other(&mut s, &[("foo", ""), ("bar", "")])),
            Some(other(&mut s, &[("foo", ""), ("bar", "bar2")])),
            Skip,
        ),
    ];
    for (name, keys, old, new, want) in cases {
        let pod = spread_pod(&mut s, keys);
        let (event, objs) = pod_event(old, new);
        assert_eq!(run(&mut s, "PodTopologySpread", pod, &event, &objs), want, "{name}");
    }
}

/// The rejected pod's own update: podtopologyspread `Test_isSchedulableAfterTargetPodChange`
/// (zone constraint with `nodeTaintsPolicy` as given, node constraint on `bar`) and interpodaffinity
/// `Test_isSchedulableAfterTargetPodUpdateLabel` (any label change queues).
#[test]
fn own_update_hints_of_spread_and_inter_pod_affinity() {
    let mut s = Snapshot::new();
    let pod = |s: &mut Snapshot, policy: InclusionPolicy, labels: &[&str], toleration: bool| {
        let (foo, bar) = (sel_exists(s, "foo"), sel_exists(s, "bar"));
        let zone = s.interner.intern("zone");
        let c = SpreadConstraint {
            node_taints_policy: policy,
            ..SpreadConstraint::new(1, zone, WhenUnsatisfiable::DoNotSchedule, foo)
        };
        let mut p = MakePod::new(s, "p").spread_constraint(c).spread(1, "node", WhenUnsatisfiable::DoNotSchedule, bar);
        for l in labels {
            p = p.label(l, "");
        }
        if toleration {
            p = p.toleration("node.kubernetes.io/unschedulable", TolerationOp::Exists, "", None);
        }
        p.build()
    };
    use InclusionPolicy::{Honor, Ignore};
    let cases = [
        (
            "PodTopologySpread",
            "has NodeTaintsPolicy:Honor and has got a new toleration",
            Honor,
            &["foo"][..],
            false,
            &["foo"][..],
            true,
            Queue,
        ),
        (
            "PodTopologySpread",
            "without NodeTaintsPolicy:Honor and has got a new toleration",
            Ignore,
            &["foo"],
            false,
            &["foo"],
            true,
            Skip,
        ),
        (
            "PodTopologySpread",
            "has got a new label matching the selector of the constraint",
            Ignore,
            &[],
            false,
            &["foo"],
            false,
            Queue,
        ),
        ("PodTopologySpread", "has got a new unrelated label", Ignore, &[], false, &["unrelated"], false, Skip),
        ("InterPodAffinity", "ours: label change", Ignore, &["foo"], false, &["baz"], false, Queue),
        ("InterPodAffinity", "ours: no label change", Ignore, &["foo"], false, &["foo"], true, Skip),
    ];
    for (plugin, name, policy, old_labels, old_tol, new_labels, new_tol, want) in cases {
        let old = Arc::new(pod(&mut s, policy, old_labels, old_tol));
        let mut new = pod(&mut s, policy, new_labels, new_tol);
        new.uid = old.uid;
        let event = ClusterEvent::UnscheduledPodUpdate { pod: old.uid };
        let objs =
            EventObjects { old_pod: Some(old.clone()), new_pod: Some(Arc::new(new.clone())), ..Default::default() };
        assert_eq!(run(&mut s, plugin, new, &event, &objs), want, "{plugin} {name}");
    }
}

/// A pod without spread constraints of its own, under a profile whose default constraints are all
/// ScheduleAnyway (the system defaults): upstream's `getConstraints` returns no hard constraint,
/// so an assigned pod's event never matters and a node's matters only by its taints or as a node
/// added or deleted (found by `verify --hint-random`). With defaults that may be hard, the coarse
/// table decides (Queue).
#[test]
fn pod_topology_spread_without_constraints_under_soft_defaults() {
    let mut s = Snapshot::new();
    let soft = HintArgs { spread_defaults_soft: true, ..HintArgs::default() };
    let zone = |s: &mut Snapshot, z: &str, tainted: bool| {
        let n = MakeNode::new(s, "n").label("topology.kubernetes.io/zone", z);
        if tainted {
            n.taint("dedicated", "x", TaintEffect::NoSchedule).spec()
        } else {
            n.spec()
        }
    };
    let other = |s: &mut Snapshot| MakePod::new(s, "other").label("app", "web").build();
    let cases = [
        ("ours: skip-assigned-pod-add", pod_event(None, Some(other(&mut s))), Skip, Queue),
        ("ours: skip-assigned-pod-delete", pod_event(Some(other(&mut s)), None), Skip, Queue),
        ("ours: queue-node-add", node_event(None, zone(&mut s, "a", false)), Queue, Queue),
        (
            "ours: skip-node-label-change",
            node_event(Some(zone(&mut s, "a", false)), zone(&mut s, "b", false)),
            Skip,
            Queue,
        ),
        (
            "ours: queue-node-taint-change",
            node_event(Some(zone(&mut s, "a", false)), zone(&mut s, "a", true)),
            Queue,
            Queue,
        ),
    ];
    for (name, (event, objs), want_soft, want_unknown) in cases {
        for (args, want) in [(soft.clone(), want_soft), (HintArgs::default(), want_unknown)] {
            let pod = MakePod::new(&mut s, "p").label("app", "web").build();
            let f = hint_fn::<()>("PodTopologySpread", syms(&mut s), args.clone()).unwrap();
            let qp = QueuedPod::new(pod.uid, 0, ()).with_spec(Arc::new(pod));
            assert_eq!(f(&event, Some(&objs), &qp), want, "{name} (soft defaults: {})", args.spread_defaults_soft);
        }
    }
}
