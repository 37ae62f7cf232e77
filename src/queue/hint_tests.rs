//! Tables of upstream v1.37.2's hint tests (`pkg/scheduler/framework/plugins/*/*_test.go`), each
//! case named as upstream names it, run through [`hint_fn`] with the event's objects.

use std::sync::Arc;

use super::super::{
    ClusterEvent, EventObjects, Location, NodeChange, NodeObject, PluginSet, QueuedPod, QueueingHint, SchedulingQueue,
};
use super::*;
use crate::snapshot::testing::{MakeNode, MakePod};
use crate::snapshot::{NodeSpec, Snapshot, Taint, TaintEffect, TolerationOp};

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
    let f = hint_fn::<()>(plugin, syms(snap)).expect("known plugin");
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
    let f = hint_fn::<()>("NodeResourcesFit", syms(&mut s)).unwrap();
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
        q.register_hint(0, hint_fn("NodeResourcesFit", syms(&mut s)).unwrap());
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
