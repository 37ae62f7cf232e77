//! DynamicResources' hints as tables of upstream v1.37.2's cases (`dynamicresources_test.go`
//! `TestIsSchedulableAfterClaimChange`, `TestIsSchedulableAfterTargetPodUpdate`), its registered
//! events, NodeResourcesFit's DeviceClass hint (`fit.go`), and the queue moving a pod that
//! DynamicResources rejected only on an event that concerns it.

use std::sync::Arc;

use super::*;
use crate::api::resource::ResourceClaim;
use crate::api::{parse_objects, Object};
use crate::queue::{
    hint_fn, ClusterEvent, DraAction, EventObjects, HintArgs, HintSyms, Location, NodeChange, PluginSet, QueuedPod,
    SchedulingQueue,
};
use crate::snapshot::dra::pod_claim_refs;
use crate::snapshot::testing::MakePod;
use crate::snapshot::{PodInfo, Snapshot, Taint, TaintEffect};

const POD: &str =
    "kind: Pod\nmetadata: {name: my-pod, namespace: default, uid: pod-uid}\nspec:\n  containers: [{name: c}]\n";
/// `podWithClaimName`.
const CLAIM_NAME: &str = "  resourceClaims: [{name: my-resource, resourceClaimName: my-pod-my-resource}]\n";
/// `podWithClaimTemplate`.
const CLAIM_TEMPLATE: &str = "  resourceClaims: [{name: my-resource, resourceClaimTemplateName: my-pod-my-resource}]\n";
/// `podWithTwoClaimTemplates`.
const TWO_TEMPLATES: &str = "  resourceClaims:\n  - {name: my-resource, resourceClaimTemplateName: my-pod-my-resource}\n  - {name: my-resource-2, resourceClaimTemplateName: my-pod-my-resource}\n";
/// `podWithClaimTemplateInStatus`'s status.
const IN_STATUS: &str =
    "status:\n  resourceClaimStatuses: [{name: my-resource, resourceClaimName: my-pod-my-resource}]\n";

fn pod(snap: &mut Snapshot, spec_claims: &str, status: &str) -> PodInfo {
    let text = format!("{POD}{spec_claims}{status}");
    let objects = parse_objects(&text, "pod.yaml").expect("pod yaml");
    let Object::Pod(p) = &objects[0] else { panic!("not a pod") };
    let mut info = MakePod::new(snap, "my-pod").namespace("default").build();
    info.claims = pod_claim_refs(p, "my-pod", info.uid);
    info
}

/// A claim `name` owned by the pod (`pendingClaim`, or `otherClaim` without an owner), allocated
/// or not, with `extra` metadata lines.
fn claim(name: &str, uid: &str, owned: bool, allocated: bool, extra: &str) -> ResourceClaim {
    let owner = if owned {
        ", ownerReferences: [{apiVersion: v1, kind: Pod, name: my-pod, uid: pod-uid, controller: true}]"
    } else {
        ""
    };
    let status = if allocated { "status: {allocation: {devices: {results: []}}}\n" } else { "" };
    let text = format!(
        "kind: ResourceClaim\nmetadata: {{name: {name}, namespace: default, uid: {uid}{owner}{extra}}}\nspec: {{devices: {{requests: [{{name: req-1, exactly: {{deviceClassName: my-resource-class}}}}]}}}}\n{status}"
    );
    let objects = parse_objects(&text, "claim.yaml").expect("claim yaml");
    let Object::ResourceClaim(c) = &objects[0] else { panic!("not a claim") };
    c.clone()
}

fn pending() -> ResourceClaim {
    claim("my-pod-my-resource", "claim-uid", true, false, "")
}

fn allocated() -> ResourceClaim {
    claim("my-pod-my-resource", "claim-uid", true, true, "")
}

fn other_allocated() -> ResourceClaim {
    claim("not-my-claim", "other-uid", false, true, "")
}

/// A lister holding `claims` and then the event's new claim (as the informer stored it).
fn lister(claims: &[&ResourceClaim], new: Option<&ResourceClaim>) -> ClaimLister {
    let l = ClaimLister::default();
    for c in claims.iter().copied().chain(new) {
        l.insert(c);
    }
    l
}

fn claim_event(
    pod: &PodInfo,
    claims: &[&ResourceClaim],
    old: Option<ResourceClaim>,
    new: Option<ResourceClaim>,
) -> bool {
    let l = lister(claims, new.as_ref());
    let objs = EventObjects { old_claim: old.map(Arc::new), new_claim: new.map(Arc::new), ..EventObjects::default() };
    let action = match (&objs.old_claim, &objs.new_claim) {
        (None, _) => DraAction::Add,
        (Some(_), Some(_)) => DraAction::Update,
        (Some(_), None) => DraAction::Delete,
    };
    hint(&ClusterEvent::ResourceClaim { action }, Some(&objs), Some(pod), pod.uid, Some(&l))
}

/// `TestIsSchedulableAfterClaimChange` (the tombstone and wrong-type cases have no counterpart:
/// a deleted claim always carries its last state, and the objects are typed).
#[test]
fn claim_change_cases() {
    let mut s = Snapshot::new();
    let template = pod(&mut s, CLAIM_TEMPLATE, "");
    let template_in_status = pod(&mut s, CLAIM_TEMPLATE, IN_STATUS);
    let named = pod(&mut s, CLAIM_NAME, "");
    let not_owned = {
        let mut c = allocated();
        c.metadata.owner_references[0].uid.push_str("123");
        c
    };
    let unrelated = {
        let mut c = allocated();
        c.metadata.name.push_str("-foo");
        c.metadata.uid.push_str("123");
        c
    };
    let finalized = {
        let mut c = pending();
        c.metadata.finalizers.push("foo".into());
        c
    };
    let with_allocation = {
        let mut c = pending();
        c.status = allocated().status;
        c
    };
    let deallocated = {
        let mut c = other_allocated();
        c.status.allocation = None;
        c
    };
    let (p, a, o) = (pending(), allocated(), other_allocated());
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, &PodInfo, Vec<&ResourceClaim>, Option<ResourceClaim>, Option<ResourceClaim>, bool)> = vec![
        ("skip-deletes", &template, vec![], Some(p.clone()), None, false),
        ("queue-on-delete-with-allocation", &template, vec![], Some(a.clone()), None, true),
        ("skip-wrong-claim", &template_in_status, vec![], None, Some(not_owned), false),
        ("skip-wrong-claim (pod's claim not made yet)", &template, vec![], None, Some(a.clone()), false),
        ("skip-unrelated-claim", &template_in_status, vec![&a], None, Some(unrelated), false),
        ("queue-on-add", &named, vec![], None, Some(p.clone()), true),
        ("skip-adding-finalizer", &named, vec![&p], Some(p.clone()), Some(finalized), false),
        ("queue-on-status-change", &named, vec![&p], Some(p.clone()), Some(with_allocation), true),
        ("claim-deallocate", &named, vec![&p, &o], Some(o.clone()), Some(deallocated.clone()), true),
        // The pod's own claim is missing: foreachPodResourceClaim fails before the deallocation check.
        (
            "deallocation, but the pod's claim does not exist",
            &named,
            vec![&o],
            Some(o.clone()),
            Some(deallocated),
            false,
        ),
    ];
    for (name, pod, claims, old, new, want) in cases {
        assert_eq!(claim_event(pod, &claims, old, new), want, "{name}");
    }
}

/// `TestIsSchedulableAfterTargetPodUpdate`, as the pod's own update (the old pod is the one
/// without the generated claim's name; an update that leaves the statuses alone is another event).
#[test]
fn target_pod_update_cases() {
    let mut s = Snapshot::new();
    let template = pod(&mut s, CLAIM_TEMPLATE, "");
    let complete = pod(&mut s, CLAIM_TEMPLATE, IN_STATUS);
    let two = pod(&mut s, TWO_TEMPLATES, "");
    let incomplete = pod(&mut s, TWO_TEMPLATES, IN_STATUS);
    let p = pending();
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, Vec<&ResourceClaim>, &PodInfo, &PodInfo, bool)> = vec![
        ("complete", vec![&p], &template, &complete, true),
        ("missing-claim", vec![], &template, &complete, false),
        ("incomplete", vec![&p], &two, &incomplete, false),
        ("statuses unchanged: not UpdatePodGeneratedResourceClaim", vec![&p], &complete, &complete, false),
    ];
    for (name, claims, old, new, want) in cases {
        let l = lister(&claims, None);
        let objs = EventObjects {
            old_pod: Some(Arc::new(old.clone())),
            new_pod: Some(Arc::new(new.clone())),
            ..EventObjects::default()
        };
        let event = ClusterEvent::UnscheduledPodUpdate { pod: old.uid };
        assert_eq!(hint(&event, Some(&objs), Some(old), old.uid, Some(&l)), want, "{name}");
        // Another pod's update is not the target pod's event.
        let other = ClusterEvent::UnscheduledPodUpdate { pod: crate::ids::PodUid(old.uid.0 + 1000) };
        assert!(!hint(&other, Some(&objs), Some(old), old.uid, Some(&l)), "{name}: another pod");
    }
}

/// `EventsToRegister`: what the plugin registers queues (without a hint function, always);
/// everything else is skipped.
#[test]
fn registered_events() {
    use ClusterEvent::*;
    let pod = crate::ids::PodUid(7);
    let change = |c| NodeUpdate { node: 0, change: c };
    let cases: Vec<(&str, ClusterEvent, bool)> = vec![
        ("node add", NodeAdd { node: 0 }, true),
        ("node label update", change(NodeChange::LABEL), true),
        ("node allocatable update", change(NodeChange::ALLOCATABLE), true),
        ("node taint update", change(NodeChange::TAINT), false),
        ("node unschedulable update", change(NodeChange::UNSCHEDULABLE), false),
        ("node delete", NodeDelete { node: 0 }, false),
        ("assigned pod add", AssignedPodAdd { pod, node: 0 }, false),
        ("assigned pod delete", AssignedPodDelete { pod, node: 0 }, false),
        ("slice add", ResourceSlice { action: DraAction::Add }, true),
        ("slice update", ResourceSlice { action: DraAction::Update }, true),
        ("slice delete", ResourceSlice { action: DraAction::Delete }, false),
        ("class add", DeviceClass { action: DraAction::Add }, true),
        ("class update", DeviceClass { action: DraAction::Update }, true),
        ("class delete", DeviceClass { action: DraAction::Delete }, false),
        ("claim add without objects", ResourceClaim { action: DraAction::Add }, true),
        ("own update without objects", UnscheduledPodUpdate { pod }, true),
        ("another pod's update", UnscheduledPodUpdate { pod: crate::ids::PodUid(8) }, false),
        ("the leftover flush", UnschedulableTimeout, true),
    ];
    for (name, event, want) in cases {
        assert_eq!(hint(&event, None, None, pod, None), want, "{name}");
    }
}

/// NodeResourcesFit's `isSchedulableAfterDeviceClassEvent`.
#[test]
fn fit_device_class_cases() {
    let mut s = Snapshot::new();
    let gpu = s.interner.intern("example.com/gpu");
    let implicit = s.interner.intern("deviceclass.resource.kubernetes.io/my-class");
    let class = |ext: Option<&str>, ext_sym, imp| DeviceClassObject {
        name: "my-class".into(),
        extended_resource_name: ext.map(str::to_string),
        implicit: imp,
        explicit: ext_sym,
    };
    let wants_gpu = MakePod::new(&mut s, "p").scalar_req("example.com/gpu", 1).build().requests;
    let wants_implicit =
        MakePod::new(&mut s, "q").scalar_req("deviceclass.resource.kubernetes.io/my-class", 1).build().requests;
    let none = MakePod::new(&mut s, "r").build().requests;
    let with_gpu = class(Some("example.com/gpu"), Some(gpu), Some(implicit));
    let plain = class(None, None, Some(implicit));
    let other_ext = class(Some("example.com/other"), None, Some(implicit));
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, Option<&DeviceClassObject>, &DeviceClassObject, &crate::snapshot::Resources, bool)> = vec![
        ("add: the pod requests the class's extended resource", None, &with_gpu, &wants_gpu, true),
        ("add: the pod requests the implicit name", None, &plain, &wants_implicit, true),
        ("add: the pod requests neither", None, &with_gpu, &none, false),
        ("update: same extended resource name", Some(&with_gpu), &with_gpu, &wants_gpu, false),
        ("update: the name changed to the requested one", Some(&other_ext), &with_gpu, &wants_gpu, true),
        ("update: the name changed to another", Some(&with_gpu), &other_ext, &wants_gpu, false),
        ("update: the implicit name is not read", Some(&other_ext), &plain, &wants_implicit, false),
    ];
    for (name, old, new, requests, want) in cases {
        assert_eq!(fit_device_class_hint(old, new, requests), want, "{name}");
    }
}

fn syms(snap: &mut Snapshot) -> HintSyms {
    let value = snap.interner.intern("");
    HintSyms {
        wildcard_ip: snap.wk.default_host_ip,
        unschedulable_taint: Taint { key: snap.wk.taint_unschedulable, value, effect: TaintEffect::NoSchedule },
    }
}

/// The queue: a pod DynamicResources rejected stays in unschedulablePods on an assigned pod's
/// add or delete, a slice deletion and an unrelated claim's update, and moves on the update of
/// its own claim; a second such pod moves when another claim is deallocated.
#[test]
fn queue_moves_a_dra_rejected_pod_only_on_a_relevant_event() {
    let mut s = Snapshot::new();
    let claims = Arc::new(ClaimLister::default());
    let mut q = SchedulingQueue::<()>::new(1_000_000_000, 10_000_000_000);
    let args = HintArgs { dra_claims: Some(claims.clone()), ..HintArgs::default() };
    q.register_hint(
        0,
        hint_fn(crate::plugins::dynamicresources::plugin::NAME, syms(&mut s), args)
            .expect("DynamicResources has hints"),
    );
    let named = Arc::new(pod(&mut s, CLAIM_NAME, ""));
    let (p, o) = (pending(), other_allocated());
    claims.insert(&p);
    claims.insert(&o);
    q.add(QueuedPod::new(named.uid, 0, ()).with_spec(named.clone()), 0);
    let popped = q.pop(0).expect("the pod");
    assert_eq!(q.add_unschedulable(popped, PluginSet::of(&[0]), 0), Location::Unschedulable);
    let claim_update = |old: &ResourceClaim, new: &ResourceClaim| {
        Some(Arc::new(EventObjects {
            old_claim: Some(Arc::new(old.clone())),
            new_claim: Some(Arc::new(new.clone())),
            ..EventObjects::default()
        }))
    };
    let other = crate::ids::PodUid(99);
    assert_eq!(q.on_event(ClusterEvent::AssignedPodAdd { pod: other, node: 0 }, 1), 0);
    assert_eq!(q.on_event(ClusterEvent::AssignedPodDelete { pod: other, node: 0 }, 1), 0);
    assert_eq!(q.on_event(ClusterEvent::ResourceSlice { action: DraAction::Delete }, 1), 0);
    let mut o_reserved = o.clone();
    o_reserved.status.reserved_for.push(crate::api::resource::ResourceClaimConsumerReference {
        resource: "pods".into(),
        name: "x".into(),
        uid: "x".into(),
        ..Default::default()
    });
    let event = ClusterEvent::ResourceClaim { action: DraAction::Update };
    assert_eq!(q.on_event_with(event, claim_update(&o, &o_reserved), 1), 0, "an unrelated claim's update");
    assert_eq!(q.location(named.uid), Some(Location::Unschedulable));
    let mut p_allocated = p.clone();
    p_allocated.status = allocated().status;
    assert_eq!(q.on_event_with(event, claim_update(&p, &p_allocated), 2), 1, "its own claim's status changed");
    assert_ne!(q.location(named.uid), Some(Location::Unschedulable));

    // A deallocation frees devices for any pod whose claims resolve.
    let second = Arc::new({
        let mut info = pod(&mut s, CLAIM_NAME, "");
        info.uid = crate::ids::PodUid(info.uid.0 + 500);
        info
    });
    q.add(QueuedPod::new(second.uid, 0, ()).with_spec(second.clone()), 3);
    let popped = loop {
        let p = q.pop(3).expect("a pod");
        if p.uid == second.uid {
            break p;
        }
        q.done(p.uid);
    };
    assert_eq!(q.add_unschedulable(popped, PluginSet::of(&[0]), 3), Location::Unschedulable);
    let mut o_free = o.clone();
    o_free.status.allocation = None;
    assert_eq!(q.on_event_with(event, claim_update(&o, &o_free), 4), 1, "another claim deallocated");
}
