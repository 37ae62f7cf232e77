//! The volume plugins' queueing hints against upstream's tables (`TestIsSchedulableAfter*` of
//! volume_binding_test.go and volume_zone_test.go, volume_restrictions_test.go's
//! `Test_isSchedulableAfter*`, csi_test.go's `TestCSILimits*QHint`). Upstream's "type
//! conversion error" cases have no counterpart (the event's objects are typed here); a missing
//! object says Queue, as upstream's error path does.

use super::*;
use crate::cluster::{build_snapshot, Cluster, UidGen};
use crate::snapshot::volumes::StorageEventObject;

use StorageAction::{Add, Update};
use StorageKind::*;

/// The pod of `pod` (YAML) and, in order, the storage objects of `objects` (YAML documents) as
/// the hints read them.
fn world(pod: &str, objects: &[&str]) -> (PodInfo, Vec<StorageEventObject>) {
    let mut docs = vec![pod.to_string()];
    docs.extend(objects.iter().map(|o| o.to_string()));
    let cluster = Cluster::parse(&[("t.yaml".to_string(), docs.join("\n---\n"))]).expect("parses");
    let (mut snap, pods) = build_snapshot(&cluster, "t.yaml", &mut UidGen::default()).expect("builds");
    let objs =
        cluster.storage.iter().map(|o| StorageEventObject::of(o, &mut snap.interner).expect("storage").1).collect();
    (pods.into_iter().next().expect("a pod"), objs)
}

/// The pods of `a` and `b` (YAML), compiled with one interner.
fn two_pods(a: &str, b: &str) -> (PodInfo, PodInfo) {
    let yaml = format!("{a}\n---\n{b}");
    let cluster = Cluster::parse(&[("t.yaml".to_string(), yaml)]).expect("parses");
    let (_, pods) = build_snapshot(&cluster, "t.yaml", &mut UidGen::default()).expect("builds");
    let mut it = pods.into_iter();
    (it.next().expect("a"), it.next().expect("b"))
}

/// A pod named `name` in `ns` with `volumes` (a YAML flow list).
fn pod(name: &str, ns: &str, volumes: &str) -> String {
    format!("kind: Pod\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{volumes: {volumes}}}\n")
}

/// `plugin`'s hint for `action` on `kind`: `old` (for an update) then `new`.
fn storage(plugin: &str, kind: StorageKind, action: StorageAction, pod: &str, old: Option<&str>, new: &str) -> bool {
    let objects: Vec<&str> = old.into_iter().chain([new]).collect();
    let (p, objs) = world(pod, &objects);
    let (old, new) = if objs.len() == 2 { (Some(&objs[0]), &objs[1]) } else { (None, &objs[0]) };
    storage_hint(plugin, kind, action, old, Some(new), &p)
}

const Q: bool = true;
const SKIP: bool = false;

#[test]
fn volume_binding_csi_node_change() {
    // TestIsSchedulableAfterCSINodeChange.
    let p = pod("pod-a", "default", "[]");
    let csi = |ann: Option<&str>| {
        match ann {
        Some(a) => format!(
            "{{kind: CSINode, apiVersion: storage.k8s.io/v1, metadata: {{name: csinode-a, annotations: {{storage.alpha.kubernetes.io/migrated-plugins: \"{a}\"}}}}}}"
        ),
        None => "{kind: CSINode, apiVersion: storage.k8s.io/v1, metadata: {name: csinode-a}}".to_string(),
    }
    };
    type Case<'a> = (&'a str, Option<Option<&'a str>>, Option<&'a str>, bool);
    let cases: &[Case<'_>] = &[
        ("CSINode is newly created", None, None, Q),
        ("migrated-plugins annotation is added", Some(Some("test1")), Some("test1, test2"), Q),
        ("migrated-plugins annotation is updated", Some(Some("test1")), Some("test2"), Q),
        ("annotation unchanged", Some(Some("test1")), Some("test1"), SKIP),
    ];
    for (name, old, new, want) in cases {
        let action = if old.is_some() { Update } else { Add };
        let old = old.map(csi);
        let got = storage(binding::NAME, CsiNode, action, &p, old.as_deref(), &csi(*new));
        assert_eq!(got, *want, "{name}");
    }
}

#[test]
fn volume_binding_claim_change() {
    // TestIsSchedulableAfterPersistentVolumeClaimChange.
    let pvc = |name: &str| format!("{{kind: PersistentVolumeClaim, metadata: {{name: {name}}}}}");
    let claims = |names: &[&str]| {
        let v: Vec<String> =
            names.iter().map(|n| format!("{{name: {n}, persistentVolumeClaim: {{claimName: {n}}}}}")).collect();
        format!("[{}]", v.join(", "))
    };
    let ephemeral = |names: &[&str]| {
        let v: Vec<String> = names.iter().map(|n| format!("{{name: {n}, ephemeral: {{}}}}")).collect();
        format!("[{}]", v.join(", "))
    };
    let cases: &[(&str, String, bool, &str, bool)] = &[
        (
            "pod has no pvc or ephemeral volumes",
            pod("pod-a", "default", "[{name: e, emptyDir: {}}]"),
            true,
            "pvc-b",
            SKIP,
        ),
        (
            "same name in a different namespace",
            pod("pod-a", "ns-a", &claims(&["pvc-a", "pvc-b"])),
            false,
            "pvc-b",
            SKIP,
        ),
        (
            "pod has no pvc that is being modified",
            pod("pod-a", "default", &claims(&["pvc-a", "pvc-c"])),
            true,
            "pvc-b",
            SKIP,
        ),
        (
            "pod has no generic ephemeral volume that is being modified",
            pod("pod-a", "default", &ephemeral(&["ephemeral-a", "ephemeral-c"])),
            true,
            "pod-a-ephemeral-b",
            SKIP,
        ),
        (
            "pod has the pvc that is being modified",
            pod("pod-a", "default", &claims(&["pvc-a", "pvc-b"])),
            true,
            "pvc-b",
            Q,
        ),
        (
            "pod has the generic ephemeral volume that is being modified",
            pod("pod-a", "default", &ephemeral(&["ephemeral-a", "ephemeral-b"])),
            true,
            "pod-a-ephemeral-b",
            Q,
        ),
    ];
    for (name, p, update, claim, want) in cases {
        let new = pvc(claim);
        let (action, old) = if *update { (Update, Some(new.as_str())) } else { (Add, None) };
        assert_eq!(storage(binding::NAME, PersistentVolumeClaim, action, p, old, &new), *want, "{name}");
    }
}

#[test]
fn volume_binding_storage_class_change() {
    // TestIsSchedulableAfterStorageClassChange.
    let p = pod("pod-a", "default", "[]");
    let plain = "{kind: StorageClass, apiVersion: storage.k8s.io/v1, metadata: {name: sc-a}, provisioner: p}";
    let topo = "{kind: StorageClass, apiVersion: storage.k8s.io/v1, metadata: {name: sc-a}, provisioner: p, allowedTopologies: [{matchLabelExpressions: [{key: kubernetes.io/hostname, values: [node-a]}]}]}";
    assert_eq!(storage(binding::NAME, StorageClass, Add, &p, None, plain), Q, "created");
    assert_eq!(storage(binding::NAME, StorageClass, Update, &p, Some(plain), topo), Q, "allowedTopologies changed");
    assert_eq!(storage(binding::NAME, StorageClass, Update, &p, Some(plain), plain), SKIP, "no change");
}

#[test]
fn volume_binding_capacity_change() {
    // TestIsSchedulableAfterCSIStorageCapacityChange.
    let p = pod("pod-a", "default", "[]");
    let cap = |c: Option<i64>, m: Option<i64>| {
        let mut s =
            "{kind: CSIStorageCapacity, apiVersion: storage.k8s.io/v1, metadata: {name: cap-a}, storageClassName: sc"
                .to_string();
        if let Some(c) = c {
            s += &format!(", capacity: \"{c}\"");
        }
        if let Some(m) = m {
            s += &format!(", maximumVolumeSize: \"{m}\"");
        }
        s + "}"
    };
    assert_eq!(storage(binding::NAME, CsiStorageCapacity, Add, &p, None, &cap(None, None)), Q, "created");
    type C = (Option<i64>, Option<i64>);
    let cases: &[(&str, C, C, bool)] = &[
        ("increase (capacity set)", (None, None), (Some(100), None), Q),
        ("increase (maximumVolumeSize set)", (None, None), (None, Some(100)), Q),
        ("increase (capacity increase)", (Some(50), None), (Some(100), None), Q),
        ("increase (maximumVolumeSize unset)", (Some(100), Some(50)), (Some(100), None), Q),
        ("increase (maximumVolumeSize increase)", (Some(100), Some(50)), (Some(100), Some(60)), Q),
        ("no changes", (Some(100), Some(50)), (Some(100), Some(50)), SKIP),
        ("equal (capacity)", (Some(100), None), (Some(100), None), SKIP),
        ("equal (maximumVolumeSize unset)", (Some(100), Some(50)), (Some(50), None), SKIP),
        ("decrease (capacity)", (Some(100), None), (Some(90), None), SKIP),
        ("decrease (maximumVolumeSize)", (None, Some(100)), (None, Some(90)), SKIP),
    ];
    for (name, old, new, want) in cases {
        let got = storage(binding::NAME, CsiStorageCapacity, Update, &p, Some(&cap(old.0, old.1)), &cap(new.0, new.1));
        assert_eq!(got, *want, "{name}");
    }
}

#[test]
fn volume_binding_csi_driver_change() {
    // TestIsSchedulableAfterCSIDriverChange.
    let drv = |name: &str, sc: Option<bool>| {
        match sc {
        Some(b) => format!(
            "{{kind: CSIDriver, apiVersion: storage.k8s.io/v1, metadata: {{name: {name}}}, spec: {{storageCapacity: {b}}}}}"
        ),
        None => format!("{{kind: CSIDriver, apiVersion: storage.k8s.io/v1, metadata: {{name: {name}}}}}"),
    }
    };
    let plain = pod("pod-a", "default", "[]");
    let csi = pod("pod-a", "default", "[{name: c, csi: {driver: test1}}]");
    type Case<'a> = (&'a str, &'a String, &'a str, Option<bool>, Option<bool>, bool);
    let cases: &[Case<'_>] = &[
        ("pod has no CSIDriver", &plain, "test1", None, Some(true), SKIP),
        ("driver names differ", &csi, "test2", Some(true), Some(false), SKIP),
        ("original StorageCapacity is nil", &csi, "test1", None, None, SKIP),
        ("original StorageCapacity is false", &csi, "test1", Some(false), Some(false), SKIP),
        ("modified StorageCapacity is nil", &csi, "test1", Some(true), None, Q),
        ("modified StorageCapacity is true", &csi, "test1", Some(true), Some(true), SKIP),
        ("modified StorageCapacity is false", &csi, "test1", Some(true), Some(false), Q),
    ];
    for (name, p, driver, old, new, want) in cases {
        let got = storage(binding::NAME, CsiDriver, Update, p, Some(&drv(driver, *old)), &drv(driver, *new));
        assert_eq!(got, *want, "{name}");
    }
    // A CSIDriver add is not registered.
    assert!(!storage(binding::NAME, CsiDriver, Add, &csi, None, &drv("test1", Some(false))));
}

fn pod_with(name: &str, volume: &str) -> String {
    pod(name, "default", &format!("[{{name: v, {volume}}}]"))
}

#[test]
fn volume_restrictions_assigned_pod_deleted() {
    // Test_isSchedulableAfterAssignedPodDeleted.
    let gce = |pd: &str| format!("gcePersistentDisk: {{pdName: {pd}}}");
    let aws = |id: &str| format!("awsElasticBlockStore: {{volumeID: {id}}}");
    let rbd = |m: &str| format!("rbd: {{monitors: [{m}], pool: p, image: i}}");
    let iscsi = |iqn: &str| format!("iscsi: {{targetPortal: tp, iqn: {iqn}, lun: 0}}");
    let claim = |c: &str| format!("persistentVolumeClaim: {{claimName: {c}}}");
    let cases: Vec<(&str, String, String, bool)> = vec![
        ("GCE disk conflicts", gce("foo"), gce("foo"), Q),
        ("GCE disk no conflict", gce("foo"), gce("bar"), SKIP),
        ("AWS disk conflicts", aws("foo"), aws("foo"), Q),
        ("AWS disk no conflict", aws("foo"), aws("bar"), SKIP),
        ("RBD conflicts", rbd("a"), rbd("a"), Q),
        ("RBD no conflict", rbd("a"), rbd("b"), SKIP),
        ("ISCSI conflicts", iscsi("a"), iscsi("a"), Q),
        ("ISCSI no conflict", iscsi("a"), iscsi("b"), SKIP),
        ("same claim", claim("claim-rwop"), claim("claim-rwop"), Q),
        ("other claim", claim("claim-1-rwop"), claim("claim-2-rwop"), SKIP),
    ];
    for (name, mine, theirs, want) in cases {
        let (p, d) = two_pods(&pod_with("pod1", &mine), &pod_with("pod2", &theirs));
        assert_eq!(assigned_pod_deleted_hint(restrictions::NAME, &d, &p), want, "{name}");
    }
    // A pod of another namespace.
    let (p, d) =
        two_pods(&pod_with("pod1", &gce("foo")), &pod("pod2", "other", &format!("[{{name: v, {}}}]", gce("foo"))));
    assert!(!assigned_pod_deleted_hint(restrictions::NAME, &d, &p));
}

#[test]
fn volume_restrictions_claim_added() {
    // Test_isSchedulableAfterPersistentVolumeClaimChange.
    let pvc = |n: &str| {
        format!("{{kind: PersistentVolumeClaim, metadata: {{name: {n}, namespace: default}}, spec: {{accessModes: [ReadWriteMany]}}}}")
    };
    let one = pod_with("pod-with-one-pvc", "persistentVolumeClaim: {claimName: claim-with-rwx-1}");
    let two = pod(
        "pod-with-two-pvcs",
        "default",
        "[{name: a, persistentVolumeClaim: {claimName: claim-with-rwx-1}}, {name: b, persistentVolumeClaim: {claimName: claim-with-rwx-2}}]",
    );
    let other_ns =
        pod("pod-with-one-pvc", "kube-system", "[{name: a, persistentVolumeClaim: {claimName: claim-with-rwx-1}}]");
    let cases: &[(&str, &String, &str, bool)] = &[
        ("pod with two claims, one added", &two, "claim-with-rwx-1", Q),
        ("pod with one claim, another added", &one, "claim-with-rwx-2", SKIP),
        ("another namespace", &other_ns, "claim-with-rwx-1", SKIP),
    ];
    for (name, p, claim, want) in cases {
        assert_eq!(storage(restrictions::NAME, PersistentVolumeClaim, Add, p, None, &pvc(claim)), *want, "{name}");
    }
    // Updates are not registered.
    assert!(!storage(
        restrictions::NAME,
        PersistentVolumeClaim,
        Update,
        &two,
        Some(&pvc("claim-with-rwx-1")),
        &pvc("claim-with-rwx-1")
    ));
}

#[test]
fn volume_zone_hints() {
    // TestIsSchedulableAfterPersistentVolumeClaimAdded.
    let pvc = |ns: &str, vol: &str| {
        format!("{{kind: PersistentVolumeClaim, metadata: {{name: PVC_1, namespace: {ns}}}, spec: {{volumeName: \"{vol}\"}}}}")
    };
    let with = |c: &str| pod_with("pod_1", &format!("persistentVolumeClaim: {{claimName: {c}}}"));
    let none = pod("pod_1", "default", "[]");
    let cases: &[(&str, String, Option<String>, String, bool)] = &[
        ("pod without volumes", none.clone(), None, pvc("default", "Vol_1"), SKIP),
        ("pod with another claim", with("PVC_2"), None, pvc("default", "Vol_1"), SKIP),
        ("claim in another namespace", with("PVC_1"), None, pvc("ns1", "Vol_1"), SKIP),
        ("claim added", with("PVC_1"), None, pvc("default", "Vol_1"), Q),
        ("claim bound", with("PVC_1"), Some(pvc("default", "")), pvc("default", "Vol_1"), Q),
        ("claim bound, pod without volumes", none, Some(pvc("default", "")), pvc("default", "Vol_1"), SKIP),
    ];
    for (name, p, old, new, want) in cases {
        let action = if old.is_some() { Update } else { Add };
        assert_eq!(storage(zone::NAME, PersistentVolumeClaim, action, p, old.as_deref(), new), *want, "{name}");
    }
    // TestIsSchedulableAfterStorageClassAdded.
    let p = with("PVC_1");
    let sc = "{kind: StorageClass, apiVersion: storage.k8s.io/v1, metadata: {name: SC_1}, provisioner: p}";
    let wffc = "{kind: StorageClass, apiVersion: storage.k8s.io/v1, metadata: {name: SC_1}, provisioner: p, volumeBindingMode: WaitForFirstConsumer}";
    assert!(!storage(zone::NAME, StorageClass, Add, &p, None, sc), "immediate class");
    assert!(storage(zone::NAME, StorageClass, Add, &p, None, wffc), "WaitForFirstConsumer class");
    assert!(!storage(zone::NAME, StorageClass, Update, &p, Some(sc), wffc), "updates are not registered");
    // TestIsSchedulableAfterPersistentVolumeChange.
    let pv = |labels: &str| format!("{{kind: PersistentVolume, metadata: {{name: Vol_1, labels: {labels}}}}}");
    let b = "{failure-domain.beta.kubernetes.io/zone: us-west1-b}";
    let a = "{failure-domain.beta.kubernetes.io/zone: us-west1-a}";
    let a_plus = "{failure-domain.beta.kubernetes.io/zone: us-west1-a, topology.kubernetes.io/region: us-west1}";
    let a_other = "{failure-domain.beta.kubernetes.io/zone: us-west1-a, uselessLabel: none}";
    assert!(storage(zone::NAME, PersistentVolume, Add, &p, None, &pv(b)), "PV created");
    assert!(storage(zone::NAME, PersistentVolume, Update, &p, Some(&pv(a)), &pv(a_plus)), "topology label added");
    assert!(!storage(zone::NAME, PersistentVolume, Update, &p, Some(&pv(a)), &pv(a_other)), "topology unchanged");
    assert!(
        !storage(
            zone::NAME,
            PersistentVolume,
            Update,
            &p,
            Some(&pv("{topology.kubernetes.io/zone: a__b}")),
            &pv("{topology.kubernetes.io/zone: b__a}")
        ),
        "the same zone set"
    );
}

#[test]
fn node_volume_limits_hints() {
    // TestCSILimitsQHint (the deleted pod is assigned).
    let p = pod_with("p", "persistentVolumeClaim: {claimName: csi-ebs.csi.aws.com-2}");
    let cases: &[(&str, String, bool)] = &[
        ("a deleted pod has a PVC", pod_with("d", "persistentVolumeClaim: {claimName: placeholder}"), Q),
        ("a deleted pod has an inline migratable volume", pod_with("d", "awsElasticBlockStore: {volumeID: x}"), Q),
        ("a deleted pod has no volume", pod("d", "default", "[]"), SKIP),
    ];
    for (name, deleted, want) in cases {
        let (p, d) = two_pods(&p, deleted);
        assert_eq!(assigned_pod_deleted_hint(limits::NAME, &d, &p), *want, "{name}");
    }
    // TestCSILimitsAddedPVCQHint.
    let pvc = |n: &str, ns: &str| format!("{{kind: PersistentVolumeClaim, metadata: {{name: {n}, namespace: {ns}}}}}");
    let cases: &[(&str, String, String, bool)] = &[
        ("another namespace", pod("p", "ns1", "[]"), pvc("x", "ns2"), SKIP),
        (
            "the pod's claim",
            pod("p", "ns1", "[{name: v, persistentVolumeClaim: {claimName: pvc1}}]"),
            pvc("pvc1", "ns1"),
            Q,
        ),
        (
            "the pod's ephemeral claim",
            pod("pod1", "ns1", "[{name: ephemeral, ephemeral: {}}]"),
            pvc("pod1-ephemeral", "ns1"),
            Q,
        ),
        (
            "another claim",
            pod("p", "ns1", "[{name: v, persistentVolumeClaim: {claimName: pvc1}}]"),
            pvc("pvc2", "ns1"),
            SKIP,
        ),
        ("a pod without claims", pod("p", "ns1", "[]"), pvc("pvc2", "ns1"), SKIP),
    ];
    for (name, p, new, want) in cases {
        assert_eq!(storage(limits::NAME, PersistentVolumeClaim, Add, p, None, new), *want, "{name}");
    }
    // TestCSILimitsAfterCSINodeUpdatedQHint.
    let csi = |n: i32| {
        format!("{{kind: CSINode, apiVersion: storage.k8s.io/v1, metadata: {{name: test-node}}, spec: {{drivers: [{{name: ebs.csi.aws.com, nodeID: n, allocatable: {{count: {n}}}}}]}}}}")
    };
    let p = pod("p", "default", "[]");
    let cases: &[(&str, i32, i32, bool)] =
        &[("limit raised", 1, 2, Q), ("limit decreased", 2, 1, SKIP), ("limit unchanged", 1, 1, SKIP)];
    for (name, old, new, want) in cases {
        assert_eq!(storage(limits::NAME, CsiNode, Update, &p, Some(&csi(*old)), &csi(*new)), *want, "{name}");
    }
    // A CSINode add has no hint function.
    assert!(storage(limits::NAME, CsiNode, Add, &p, None, &csi(1)));
}

#[test]
fn registered_events_are_upstreams() {
    use StorageAction::Delete;
    let table: &[(&str, StorageKind, StorageAction, bool)] = &[
        (binding::NAME, PersistentVolume, Add, true),
        (binding::NAME, PersistentVolume, Delete, false),
        (binding::NAME, CsiDriver, Add, false),
        (binding::NAME, CsiDriver, Update, true),
        (binding::NAME, CsiStorageCapacity, Update, true),
        (restrictions::NAME, PersistentVolumeClaim, Update, false),
        (restrictions::NAME, StorageClass, Add, false),
        (zone::NAME, StorageClass, Update, false),
        (zone::NAME, PersistentVolume, Update, true),
        (zone::NAME, CsiNode, Add, false),
        (limits::NAME, CsiNode, Update, true),
        (limits::NAME, PersistentVolume, Add, false),
        (limits::NAME, PersistentVolumeClaim, Update, false),
        ("NodeAffinity", PersistentVolume, Add, false),
    ];
    for (plugin, kind, action, want) in table {
        assert_eq!(registers_storage(plugin, *kind, *action), *want, "{plugin} {kind:?} {action:?}");
    }
    assert!(registers_node_event(binding::NAME, false) && registers_node_event(zone::NAME, true));
    assert!(registers_node_event(restrictions::NAME, true) && !registers_node_event(restrictions::NAME, false));
    assert!(!registers_node_event(limits::NAME, true));
    assert!(registers_assigned_pod_delete(limits::NAME) && !registers_assigned_pod_delete(binding::NAME));
}
