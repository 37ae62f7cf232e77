//! Table tests of the volume plugins, ported from upstream's `*_test.go` tables: each case is a
//! small cluster in YAML (storage objects, nodes, placed pods) and a pod, checked through the
//! plugin's PreFilter and Filter on one node.

use super::*;
use crate::cluster::{build_snapshot, Cluster, UidGen};
use crate::framework::{Code, CycleCx, CycleState, Plugin};
use crate::plugins::testutil::filter_one;
use crate::snapshot::{PodInfo, Snapshot};

/// The snapshot of `yaml` (a multi-document manifest) and its pending pods.
fn world(yaml: &str) -> (Snapshot, Vec<PodInfo>) {
    let cluster = Cluster::parse(&[("t.yaml".to_string(), yaml.to_string())]).expect("parses");
    build_snapshot(&cluster, "t.yaml", &mut UidGen::default()).expect("builds")
}

type Want<'a> = Option<(Code, &'a str)>;

fn check(plugin: &dyn Plugin, name: &str, yaml: &str, node: &str, want: Want<'_>) {
    let (snap, pods) = world(yaml);
    let got = filter_one(plugin, &snap, &pods[0], node);
    match want {
        None => assert_eq!(got, Ok(()), "{name}"),
        Some((code, reason)) => assert_eq!(got, Err((code, vec![reason.to_string()])), "{name}"),
    }
    // A Filter rejection is worded alike without the cycle state (the run words a failed cycle's
    // message after the cycle).
    let cx = CycleCx { snap: &snap, pod: &pods[0] };
    let mut state = CycleState::new();
    if plugin.pre_filter(cx, &mut state).0.code == Code::Success {
        let idx = snap.nodes.idx_of(snap.interner.get(node).unwrap()).unwrap();
        let mut out = [None];
        plugin.filter(cx, &state, &[idx], &mut out);
        if let Some(r) = out[0] {
            assert_eq!(plugin.reasons(cx, &CycleState::new(), r), plugin.reasons(cx, &state, r), "{name}: stateless");
        }
    }
}

fn pod_with_claim(claim: &str) -> String {
    format!("kind: Pod\nmetadata: {{name: pod_1}}\nspec: {{volumes: [{{name: v, persistentVolumeClaim: {{claimName: {claim}}}}}]}}\n")
}

const UAU: Code = Code::UnschedulableAndUnresolvable;

#[test]
fn volume_zone_single_zone() {
    // volume_zone_test.go TestSingleZone.
    let objects = "\
kind: List
items:
- {kind: PersistentVolume, metadata: {name: Vol_1, labels: {failure-domain.beta.kubernetes.io/zone: us-west1-a}}}
- {kind: PersistentVolume, metadata: {name: Vol_2, labels: {failure-domain.beta.kubernetes.io/region: us-west1, uselessLabel: none}}}
- {kind: PersistentVolume, metadata: {name: Vol_Stable_1, labels: {topology.kubernetes.io/zone: us-west1-a}}}
- {kind: PersistentVolume, metadata: {name: Vol_Stable_2, labels: {topology.kubernetes.io/region: us-west1, uselessLabel: none}}}
- {kind: PersistentVolume, metadata: {name: Vol_Stable_3, labels: {topology.kubernetes.io/zone: us-west1-a, topology.kubernetes.io/region: us-west1-a}}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_1}, spec: {volumeName: Vol_1}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_2}, spec: {volumeName: Vol_2}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_4}, spec: {volumeName: Vol_not_exist}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_Stable_1}, spec: {volumeName: Vol_Stable_1}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_Stable_2}, spec: {volumeName: Vol_Stable_2}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_Stable_3}, spec: {volumeName: Vol_Stable_3}}
";
    let conflict = Some((UAU, zone::ERR_REASON_CONFLICT));
    let cases: &[(&str, &str, &str, Want<'_>)] = &[
        ("node without labels", "PVC_1", "{}", None),
        (
            "beta zone label matched",
            "PVC_1",
            "{failure-domain.beta.kubernetes.io/zone: us-west1-a, uselessLabel: none}",
            None,
        ),
        (
            "beta region label matched",
            "PVC_2",
            "{failure-domain.beta.kubernetes.io/region: us-west1, uselessLabel: none}",
            None,
        ),
        (
            "beta region label doesn't match",
            "PVC_2",
            "{failure-domain.beta.kubernetes.io/region: no_us-west1}",
            conflict,
        ),
        ("beta zone label doesn't match", "PVC_1", "{failure-domain.beta.kubernetes.io/zone: no_us-west1-a}", conflict),
        ("zone label matched", "PVC_Stable_1", "{topology.kubernetes.io/zone: us-west1-a, uselessLabel: none}", None),
        ("region label matched", "PVC_Stable_2", "{topology.kubernetes.io/region: us-west1}", None),
        ("region label doesn't match", "PVC_Stable_2", "{topology.kubernetes.io/region: no_us-west1}", conflict),
        ("zone label doesn't match", "PVC_Stable_1", "{topology.kubernetes.io/zone: no_us-west1-a}", conflict),
        (
            "pv with zone and region, node with only zone",
            "PVC_Stable_3",
            "{topology.kubernetes.io/zone: us-west1-a}",
            conflict,
        ),
        (
            "pv with zone,node with beta zone",
            "PVC_Stable_1",
            "{failure-domain.beta.kubernetes.io/zone: us-west1-a}",
            conflict,
        ),
        ("pv with beta label,node with ga label, matched", "PVC_1", "{topology.kubernetes.io/zone: us-west1-a}", None),
        (
            "pv with beta label,node with ga label, don't match",
            "PVC_1",
            "{topology.kubernetes.io/zone: us-west1-b}",
            conflict,
        ),
        ("pv does not exist", "PVC_4", "{}", Some((UAU, "persistentvolume \"Vol_not_exist\" not found"))),
        ("claim does not exist", "PVC_9", "{}", Some((UAU, "persistentvolumeclaim \"PVC_9\" not found"))),
    ];
    for (name, pvc, labels, want) in cases {
        let yaml = format!(
            "{objects}---\nkind: Node\nmetadata: {{name: host1, labels: {labels}}}\n---\n{}",
            pod_with_claim(pvc)
        );
        check(&VolumeZone, name, &yaml, "host1", *want);
    }
}

#[test]
fn volume_zone_multi_zone_and_unbound() {
    // TestMultiZone (zones joined with `__`) and TestWithBinding's unbound claims. A class read
    // from a manifest has the API server's default binding mode (Immediate), never upstream's
    // test-only nil; a missing class reads `storageclass.storage.k8s.io` as the informer's lister
    // words it (the test's fake lister says `storageclasses`).
    let objects = "\
kind: List
items:
- {kind: PersistentVolume, metadata: {name: Vol_1, labels: {failure-domain.beta.kubernetes.io/zone: us-west1-a}}}
- {kind: PersistentVolume, metadata: {name: Vol_2, labels: {failure-domain.beta.kubernetes.io/zone: us-west1-b, uselessLabel: none}}}
- {kind: PersistentVolume, metadata: {name: Vol_3, labels: {failure-domain.beta.kubernetes.io/zone: us-west1-c__us-west1-a}}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_1}, spec: {volumeName: Vol_1}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_2}, spec: {volumeName: Vol_2}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_3}, spec: {volumeName: Vol_3}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_EmptySC}, spec: {}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_NoSC}, spec: {storageClassName: Class_0}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_Immediate}, spec: {storageClassName: Class_Immediate}}
- {kind: PersistentVolumeClaim, metadata: {name: PVC_Wait}, spec: {storageClassName: Class_Wait}}
- {kind: StorageClass, metadata: {name: Class_Immediate}, provisioner: p, volumeBindingMode: Immediate}
- {kind: StorageClass, metadata: {name: Class_Wait}, provisioner: p, volumeBindingMode: WaitForFirstConsumer}
";
    let conflict = Some((UAU, zone::ERR_REASON_CONFLICT));
    let zone_a = "{failure-domain.beta.kubernetes.io/zone: us-west1-a}";
    let cases: &[(&str, &str, &str, Want<'_>)] = &[
        ("node without labels", "PVC_3", "{}", None),
        ("beta zone label matched", "PVC_3", zone_a, None),
        ("beta zone label doesn't match", "PVC_1", "{failure-domain.beta.kubernetes.io/zone: us-west1-b}", conflict),
        ("zone label matched", "PVC_3", "{topology.kubernetes.io/zone: us-west1-a}", None),
        ("zone label doesn't match", "PVC_2", "{topology.kubernetes.io/zone: us-west1-a}", conflict),
        ("label zone failure domain matched", "PVC_1", zone_a, None),
        (
            "unbound volume empty storage class",
            "PVC_EmptySC",
            zone_a,
            Some((UAU, "PersistentVolumeClaim had no pv name and storageClass name")),
        ),
        (
            "unbound volume no storage class",
            "PVC_NoSC",
            zone_a,
            Some((UAU, "storageclass.storage.k8s.io \"Class_0\" not found")),
        ),
        ("unbound volume immediate binding mode", "PVC_Immediate", zone_a, Some((UAU, "PersistentVolume had no name"))),
        ("unbound volume wait binding mode", "PVC_Wait", zone_a, None),
    ];
    for (name, pvc, labels, want) in cases {
        let yaml = format!(
            "{objects}---\nkind: Node\nmetadata: {{name: host1, labels: {labels}}}\n---\n{}",
            pod_with_claim(pvc)
        );
        check(&VolumeZone, name, &yaml, "host1", *want);
    }
}

#[test]
fn volume_restrictions_disk_conflicts() {
    // volume_restrictions_test.go TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts,
    // TestISCSIDiskConflicts: (volume of the pod, volume of the pod on the node, conflicts).
    let cases: &[(&str, &str, &str, bool)] = &[
        ("gce nothing", "{name: v, gcePersistentDisk: {pdName: foo}}", "", false),
        (
            "gce one state",
            "{name: v, gcePersistentDisk: {pdName: foo}}",
            "{name: v, gcePersistentDisk: {pdName: foo}}",
            true,
        ),
        (
            "gce other disk",
            "{name: v, gcePersistentDisk: {pdName: foo}}",
            "{name: v, gcePersistentDisk: {pdName: bar}}",
            false,
        ),
        (
            "gce both read-only",
            "{name: v, gcePersistentDisk: {pdName: foo, readOnly: true}}",
            "{name: v, gcePersistentDisk: {pdName: foo, readOnly: true}}",
            false,
        ),
        (
            "aws same",
            "{name: v, awsElasticBlockStore: {volumeID: foo}}",
            "{name: v, awsElasticBlockStore: {volumeID: foo}}",
            true,
        ),
        (
            "aws read-only still conflicts",
            "{name: v, awsElasticBlockStore: {volumeID: foo, readOnly: true}}",
            "{name: v, awsElasticBlockStore: {volumeID: foo, readOnly: true}}",
            true,
        ),
        (
            "aws other",
            "{name: v, awsElasticBlockStore: {volumeID: foo}}",
            "{name: v, awsElasticBlockStore: {volumeID: bar}}",
            false,
        ),
        (
            "rbd overlapping monitors",
            "{name: v, rbd: {monitors: [a, b], pool: foo, image: bar}}",
            "{name: v, rbd: {monitors: [b, c], pool: foo, image: bar}}",
            true,
        ),
        (
            "rbd disjoint monitors",
            "{name: v, rbd: {monitors: [a, b], pool: foo, image: bar}}",
            "{name: v, rbd: {monitors: [c, d], pool: foo, image: bar}}",
            false,
        ),
        (
            "rbd other image",
            "{name: v, rbd: {monitors: [a], pool: foo, image: bar}}",
            "{name: v, rbd: {monitors: [a], pool: foo, image: baz}}",
            false,
        ),
        (
            "iscsi same",
            "{name: v, iscsi: {targetPortal: 127.0.0.1:3260, iqn: iqn.2016-12.server:storage.target01, lun: 0}}",
            "{name: v, iscsi: {targetPortal: 127.0.0.1:3260, iqn: iqn.2016-12.server:storage.target01, lun: 0}}",
            true,
        ),
        ("iscsi other", "{name: v, iscsi: {iqn: a}}", "{name: v, iscsi: {iqn: b}}", false),
        (
            "iscsi both read-only",
            "{name: v, iscsi: {iqn: a, readOnly: true}}",
            "{name: v, iscsi: {iqn: a, readOnly: true}}",
            false,
        ),
    ];
    for (name, vol, existing, conflicts) in cases {
        let placed = if existing.is_empty() {
            String::new()
        } else {
            format!("---\nkind: Pod\nmetadata: {{name: old}}\nspec: {{nodeName: n, volumes: [{existing}]}}\n")
        };
        let yaml = format!("kind: Node\nmetadata: {{name: n}}\n{placed}---\nkind: Pod\nmetadata: {{name: p}}\nspec: {{volumes: [{vol}]}}\n");
        let want = conflicts.then_some((Code::Unschedulable, restrictions::ERR_REASON_DISK_CONFLICT));
        check(&VolumeRestrictions, name, &yaml, "n", want);
    }
}

#[test]
fn volume_restrictions_read_write_once_pod() {
    // TestAccessModeConflicts.
    let objects = "\
kind: List
items:
- {kind: Node, metadata: {name: n}}
- {kind: Node, metadata: {name: other}}
- {kind: PersistentVolumeClaim, metadata: {name: claim-with-rwop-1}, spec: {accessModes: [ReadWriteOncePod]}}
- {kind: PersistentVolumeClaim, metadata: {name: claim-with-rwop-2}, spec: {accessModes: [ReadWriteOncePod]}}
- {kind: PersistentVolumeClaim, metadata: {name: claim-with-rwo}, spec: {accessModes: [ReadWriteOnce]}}
- {kind: Pod, metadata: {name: user}, spec: {nodeName: other, volumes: [{name: v, persistentVolumeClaim: {claimName: claim-with-rwop-1}}]}}
";
    let pod = |claim: &str| format!("---\n{}", pod_with_claim(claim));
    let rwop = Some((Code::Unschedulable, restrictions::ERR_REASON_RWOP_CONFLICT));
    let cases: &[(&str, &str, Want<'_>)] = &[
        ("nothing", "claim-with-rwo", None),
        ("failed when ReadWriteOncePod PVC in use by another pod", "claim-with-rwop-1", rwop),
        ("ReadWriteOncePod PVC not in use", "claim-with-rwop-2", None),
        ("claim not found", "claim-not-found", Some((UAU, "persistentvolumeclaim \"claim-not-found\" not found"))),
    ];
    for (name, claim, want) in cases {
        check(&VolumeRestrictions, name, &format!("{objects}{}", pod(claim)), "n", *want);
    }
}

#[test]
fn volume_binding_bound_and_unbound_claims() {
    // volume_binding_test.go TestVolumeBinding (the cases without static binding or provisioning).
    let objects = "\
kind: List
items:
- {kind: Node, metadata: {name: node-a, labels: {foo: bar}}}
- {kind: StorageClass, metadata: {name: immediate-sc}, provisioner: p, volumeBindingMode: Immediate}
- {kind: StorageClass, metadata: {name: wait-sc}, provisioner: p, volumeBindingMode: WaitForFirstConsumer}
- kind: PersistentVolume
  metadata: {name: pv-a}
  spec:
    storageClassName: wait-sc
    nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: foo, operator: In, values: [bar]}]}]}}
- kind: PersistentVolume
  metadata: {name: pv-b}
  spec:
    storageClassName: wait-sc
    nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: foo, operator: In, values: [baz]}]}]}}
- {kind: PersistentVolume, metadata: {name: pv-any}, spec: {storageClassName: wait-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: pvc-a, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}, spec: {volumeName: pv-a, storageClassName: wait-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: pvc-b, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}, spec: {volumeName: pv-b, storageClassName: wait-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: pvc-any, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}, spec: {volumeName: pv-any, storageClassName: wait-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: pvc-gone, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}, spec: {volumeName: pv-gone, storageClassName: wait-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: immediate-unbound}, spec: {storageClassName: immediate-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: no-class-unbound}, spec: {}}
- {kind: PersistentVolumeClaim, metadata: {name: prebound}, spec: {volumeName: pv-any, storageClassName: wait-sc}}
- {kind: PersistentVolumeClaim, metadata: {name: lost}, spec: {volumeName: pv-x}, status: {phase: Lost}}
- {kind: PersistentVolumeClaim, metadata: {name: deleting, deletionTimestamp: '2026-01-01T00:00:00Z'}, spec: {}}
";
    let cases: &[(&str, &str, Want<'_>)] = &[
        ("all bound", "pvc-a", None),
        ("all bound, no node affinity", "pvc-any", None),
        ("bound and node affinity mismatch", "pvc-b", Some((UAU, binding::ERR_REASON_NODE_CONFLICT))),
        ("PVC does not exist", "pvc-x", Some((UAU, "persistentvolumeclaim \"pvc-x\" not found"))),
        ("PV does not exist", "pvc-gone", Some((UAU, binding::ERR_REASON_PV_NOT_EXIST))),
        ("immediate claims not bound", "immediate-unbound", Some((UAU, binding::ERR_UNBOUND_IMMEDIATE))),
        ("unbound claim without class", "no-class-unbound", Some((UAU, binding::ERR_UNBOUND_IMMEDIATE))),
        ("pre-bound claim is immediate", "prebound", Some((UAU, binding::ERR_UNBOUND_IMMEDIATE))),
        (
            "claim lost",
            "lost",
            Some((UAU, "persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"pv-x\"")),
        ),
        ("claim being deleted", "deleting", Some((UAU, "persistentvolumeclaim \"deleting\" is being deleted"))),
    ];
    for (name, claim, want) in cases {
        check(&VolumeBinding::default(), name, &format!("{objects}---\n{}", pod_with_claim(claim)), "node-a", *want);
    }
    // A pod without claims: PreFilter skips.
    let (snap, pods) = world(&format!(
        "{objects}---\nkind: Pod\nmetadata: {{name: p}}\nspec: {{volumes: [{{name: e, emptyDir: {{}}}}]}}\n"
    ));
    let mut state = crate::framework::CycleState::new();
    let cx = crate::framework::CycleCx { snap: &snap, pod: &pods[0] };
    assert_eq!(VolumeBinding::default().pre_filter(cx, &mut state).0.code, Code::Skip);
    // An unbound WaitForFirstConsumer claim goes on to Filter (no volume fits: BindConflict).
    let (snap, pods) = world(&format!(
        "{objects}---\n{{kind: PersistentVolumeClaim, metadata: {{name: wait}}, spec: {{storageClassName: wait-sc}}}}\n---\n{}",
        pod_with_claim("wait")
    ));
    let cx = crate::framework::CycleCx { snap: &snap, pod: &pods[0] };
    assert_eq!(VolumeBinding::default().pre_filter(cx, &mut state).0.code, Code::Success);
}

#[test]
fn volume_binding_ephemeral_claims() {
    // TestVolumeBinding's generic ephemeral cases: the claim `<pod>-<volume>` must exist and be
    // controlled by the pod.
    let pod = "kind: Pod\nmetadata: {name: pod-a, uid: uid-a}\nspec: {volumes: [{name: eph, ephemeral: {volumeClaimTemplate: {}}}]}\n";
    let claim = |owner: &str| {
        format!(
            "kind: PersistentVolumeClaim\nmetadata: {{name: pod-a-eph, annotations: {{pv.kubernetes.io/bind-completed: 'yes'}}, \
             ownerReferences: [{{kind: Pod, name: pod-a, uid: {owner}, controller: true}}]}}\nspec: {{volumeName: pv-a}}\n"
        )
    };
    let base = "kind: Node\nmetadata: {name: n}\n---\nkind: PersistentVolume\nmetadata: {name: pv-a}\n";
    let cases: &[(&str, String, Want<'_>)] = &[
        (
            "ephemeral claim missing",
            String::new(),
            Some((UAU, "waiting for ephemeral volume controller to create the persistentvolumeclaim \"pod-a-eph\"")),
        ),
        ("ephemeral claim of the pod", format!("---\n{}", claim("uid-a")), None),
        (
            "ephemeral claim of another pod",
            format!("---\n{}", claim("uid-b")),
            Some((UAU, "PVC default/pod-a-eph was not created for pod default/pod-a (pod is not owner)")),
        ),
    ];
    for (name, extra, want) in cases {
        check(&VolumeBinding::default(), name, &format!("{base}{extra}---\n{pod}"), "n", *want);
    }
}

#[test]
fn node_volume_limits_csi() {
    // csi_test.go TestCSILimits (CSI PVs, claims provisioned by a class, in-tree migration).
    let objects = "\
kind: List
items:
- kind: CSINode
  metadata: {name: n}
  spec: {drivers: [{name: ebs.csi.aws.com, nodeID: n, allocatable: {count: 2}}, {name: csi-b, nodeID: n, allocatable: {count: 1}}]}
- {kind: Node, metadata: {name: n}}
- {kind: Node, metadata: {name: no-csinode}}
- {kind: PersistentVolume, metadata: {name: pv-1}, spec: {csi: {driver: ebs.csi.aws.com, volumeHandle: h1}}}
- {kind: PersistentVolume, metadata: {name: pv-2}, spec: {csi: {driver: ebs.csi.aws.com, volumeHandle: h2}}}
- {kind: PersistentVolume, metadata: {name: pv-3}, spec: {csi: {driver: ebs.csi.aws.com, volumeHandle: h3}}}
- {kind: PersistentVolume, metadata: {name: pv-b}, spec: {csi: {driver: csi-b, volumeHandle: hb}}}
- {kind: PersistentVolume, metadata: {name: pv-intree}, spec: {awsElasticBlockStore: {volumeID: vol-1}}}
- {kind: PersistentVolumeClaim, metadata: {name: c1}, spec: {volumeName: pv-1}}
- {kind: PersistentVolumeClaim, metadata: {name: c2}, spec: {volumeName: pv-2}}
- {kind: PersistentVolumeClaim, metadata: {name: c3}, spec: {volumeName: pv-3}}
- {kind: PersistentVolumeClaim, metadata: {name: cb}, spec: {volumeName: pv-b}}
- {kind: PersistentVolumeClaim, metadata: {name: c-intree}, spec: {volumeName: pv-intree}}
- {kind: PersistentVolumeClaim, metadata: {name: c-class}, spec: {storageClassName: sc-b}}
- {kind: StorageClass, metadata: {name: sc-b}, provisioner: csi-b}
";
    let claims = |names: &[&str]| {
        names
            .iter()
            .map(|c| format!("{{name: {c}, persistentVolumeClaim: {{claimName: {c}}}}}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let placed = |names: &[&str]| {
        format!("---\nkind: Pod\nmetadata: {{name: old}}\nspec: {{nodeName: n, volumes: [{}]}}\n", claims(names))
    };
    let over = Some((Code::Unschedulable, limits::ERR_REASON_MAX_VOLUME_COUNT));
    // (case, the pod's claims, the placed pod's claims, node, want)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a str, Want<'a>);
    let cases: &[Case<'_>] = &[
        ("fits when limit not exceeded", &["c1"], &["c2"], "n", None),
        ("doesn't when limit exceeded", &["c1", "c2"], &["c3"], "n", over),
        ("the same volume counts once", &["c1", "c2"], &["c1"], "n", None),
        ("another driver's limit", &["cb"], &["c1", "c2"], "n", None),
        ("claim provisioned by the class counts as its driver's", &["c-class"], &["cb"], "n", over),
        ("in-tree volume counts as its CSI driver's", &["c-intree"], &["c1", "c2"], "n", over),
        ("no CSINode: no limit", &["c1", "c2", "c3"], &[], "no-csinode", None),
        (
            "claim not found",
            &["nope"],
            &[],
            "n",
            Some((UAU, "looking up PVC default/nope: persistentvolumeclaim \"nope\" not found")),
        ),
    ];
    for (name, pod_claims, placed_claims, node, want) in cases {
        let old = if placed_claims.is_empty() { String::new() } else { placed(placed_claims) };
        let yaml = format!(
            "{objects}{old}---\nkind: Pod\nmetadata: {{name: p}}\nspec: {{volumes: [{}]}}\n",
            claims(pod_claims)
        );
        check(&NodeVolumeLimits, name, &yaml, node, *want);
    }
}

#[test]
fn storage_objects_are_strict() {
    // A wrong type or an unknown enum value names the file and the field.
    let bad: &[(&str, &str)] = &[
        (
            "kind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteSometimes]}\n",
            "spec.accessModes[0]",
        ),
        ("kind: StorageClass\nmetadata: {name: s}\nprovisioner: p\nvolumeBindingMode: Later\n", "volumeBindingMode"),
        ("kind: StorageClass\nmetadata: {name: s}\n", "provisioner"),
        ("kind: PersistentVolume\nmetadata: {}\n", "metadata"),
        (
            "kind: CSINode\nmetadata: {name: n}\nspec: {drivers: [{name: d, allocatable: {count: many}}]}\n",
            "spec.drivers[0].allocatable.count",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: v, gcePersistentDisk: {}}]}\n",
            "spec.volumes[0].gcePersistentDisk",
        ),
    ];
    for (yaml, path) in bad {
        let err = crate::api::parse_objects(yaml, "f.yaml").expect_err(yaml);
        assert_eq!(err.file, "f.yaml");
        assert!(err.path.starts_with(path), "{yaml}: {}", err.path);
    }
}

#[test]
fn pre_filter_of_a_pod_with_volumes_reads_placed_pods() {
    // VolumeRestrictions counts the placed users of a ReadWriteOncePod claim at PreFilter, so
    // preemption's dry run runs PreFilter afresh with victims removed (upstream's RemovePod).
    let (snap, pods) = world(&format!(
        "kind: Node\nmetadata: {{name: n}}\n---\n{}---\nkind: Pod\nmetadata: {{name: plain}}\n",
        pod_with_claim("c")
    ));
    assert!(snap.pre_filter_reads_pods(&pods[0]));
    assert!(!snap.pre_filter_reads_pods(&pods[1]));
}

/// binder_test.go's fixtures: classes, node1/node2, volumes with node affinity on `nodeKey`, and
/// claims in namespace `testns` (all with uid `pvc-uid`, as upstream's `makeTestPVC`).
const BINDER_FIXTURES: &str = "\
kind: List
items:
- {kind: StorageClass, metadata: {name: waitClassWithProvisioner}, provisioner: test-provisioner, volumeBindingMode: WaitForFirstConsumer,
   allowedTopologies: [{matchLabelExpressions: [{key: nodeKey, values: [node1, reference-value]}]}]}
- {kind: StorageClass, metadata: {name: immediateClass}, provisioner: p, volumeBindingMode: Immediate}
- {kind: StorageClass, metadata: {name: waitClass}, provisioner: kubernetes.io/no-provisioner, volumeBindingMode: WaitForFirstConsumer}
- {kind: StorageClass, metadata: {name: topoMismatchClass}, provisioner: test-provisioner, volumeBindingMode: WaitForFirstConsumer,
   allowedTopologies: [{matchLabelExpressions: [{key: nodeKey, values: [reference-value]}]}]}
- {kind: Node, metadata: {name: node1, labels: {nodeKey: node1}}}
- {kind: Node, metadata: {name: node2, labels: {nodeKey: node2}}}
";

/// `makeTestPV(name, node, size, boundTo, class)`.
fn test_pv(name: &str, node: &str, size: &str, bound_to: Option<&str>, class: &str) -> String {
    let (claim_ref, phase) = match bound_to {
        Some(c) => (format!(", claimRef: {{namespace: testns, name: {c}, uid: pvc-uid}}"), "Bound"),
        None => (String::new(), "Available"),
    };
    format!(
        "---\n{{kind: PersistentVolume, metadata: {{name: {name}}}, spec: {{capacity: {{storage: {size}}}, storageClassName: {class}{claim_ref}, \
         nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: nodeKey, operator: In, values: [{node}]}}]}}]}}}}}}, \
         status: {{phase: {phase}}}}}\n"
    )
}

/// `makeTestPVC(name, size, node, state, pvName, class)`: state is unbound, selected (node),
/// bound (volume name + bind-completed) or prebound (volume name only).
fn test_pvc(name: &str, size: &str, state: &str, pv: &str, class: &str) -> String {
    let annotations = match state {
        "selected" => "annotations: {volume.kubernetes.io/selected-node: node1}, ".to_string(),
        "bound" => "annotations: {pv.kubernetes.io/bind-completed: 'yes'}, ".to_string(),
        _ => String::new(),
    };
    format!(
        "---\n{{kind: PersistentVolumeClaim, metadata: {{name: {name}, namespace: testns, uid: pvc-uid, {annotations}}}, \
         spec: {{volumeName: '{pv}', storageClassName: {class}, resources: {{requests: {{storage: {size}}}}}}}}}\n"
    )
}

fn pod_with_claims(claims: &[&str]) -> String {
    let vols: Vec<String> = claims
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{{name: v{i}, persistentVolumeClaim: {{claimName: {c}}}}}"))
        .collect();
    format!(
        "---\nkind: Pod\nmetadata: {{name: test-pod, namespace: testns}}\nspec: {{volumes: [{}]}}\n",
        vols.join(", ")
    )
}

fn binder_pvc(name: &str) -> String {
    match name {
        "unbound-pvc" => test_pvc(name, "1G", "unbound", "", "waitClass"),
        "unbound-pvc2" => test_pvc(name, "5G", "unbound", "", "waitClass"),
        "prebound-pvc" => test_pvc(name, "1G", "prebound", "pv-node1a", "waitClass"),
        "bound-pvc" => test_pvc(name, "1G", "bound", "pv-bound", "waitClass"),
        "immediate-unbound-pvc" => test_pvc(name, "1G", "unbound", "", "immediateClass"),
        "immediate-bound-pvc" => test_pvc(name, "1G", "bound", "pv-bound-immediate", "immediateClass"),
        "provisioned-pvc" => test_pvc(name, "1Gi", "unbound", "", "waitClassWithProvisioner"),
        "selected-node-pvc" => test_pvc("provisioned-pvc", "1Gi", "selected", "", "waitClassWithProvisioner"),
        "no-provisioner-pvc" => test_pvc(name, "1Gi", "unbound", "", "waitClass"),
        "topo-mismatch-pvc" => test_pvc(name, "1Gi", "unbound", "", "topoMismatchClass"),
        _ => unreachable!("{name}"),
    }
}

fn binder_pv(name: &str) -> String {
    match name {
        "pvNode1a" => test_pv("pv-node1a", "node1", "5G", None, "waitClass"),
        "pvNode1b" => test_pv("pv-node1b", "node1", "10G", None, "waitClass"),
        "pvNode2" => test_pv("pv-node2", "node2", "1G", None, "waitClass"),
        "pvBound" => test_pv("pv-bound", "node1", "1G", Some("bound-pvc"), "waitClass"),
        "pvNode1aBound" => test_pv("pv-node1a", "node1", "5G", Some("unbound-pvc"), "waitClass"),
        "pvBoundImmediate" => {
            test_pv("pv-bound-immediate", "node1", "1G", Some("immediate-bound-pvc"), "immediateClass")
        }
        "pvBoundImmediateNode2" => {
            test_pv("pv-bound-immediate", "node2", "1G", Some("immediate-bound-pvc"), "immediateClass")
        }
        _ => unreachable!("{name}"),
    }
}

/// The world of one binder_test.go scenario: its claims (the pod's, in order), volumes and extra objects.
fn binder_world(claims: &[&str], pvs: &[&str], extra: &str) -> String {
    let mut y = BINDER_FIXTURES.to_string();
    let mut seen = Vec::new();
    for c in claims {
        let doc = binder_pvc(c);
        if !seen.contains(&doc) {
            y += &doc;
            seen.push(doc);
        }
    }
    for p in pvs {
        y += &binder_pv(p);
    }
    y += extra;
    let names: Vec<&str> =
        claims.iter().map(|c| if *c == "selected-node-pvc" { "provisioned-pvc" } else { c }).collect();
    y + &pod_with_claims(&names)
}

/// The outcome of `FindPodVolumes` on node1 as Filter reports it.
type FindWant<'a> = Result<(), (Code, &'a [&'a str])>;

fn check_find(name: &str, yaml: &str, want: FindWant<'_>) {
    let (snap, pods) = world(yaml);
    let got = filter_one(&VolumeBinding::default(), &snap, &pods[0], "node1");
    let want = want.map_err(|(c, r)| (c, r.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
    assert_eq!(got, want, "{name}");
}

#[test]
fn volume_binding_find_pod_volumes_without_provisioning() {
    // binder_test.go TestFindPodVolumesWithoutProvisioning (`shouldFail`: PreFilter rejects).
    use binding::{
        ERR_REASON_BIND_CONFLICT as BIND, ERR_REASON_NODE_CONFLICT as NODE, ERR_REASON_PV_NOT_EXIST as GONE,
    };
    let immediate: FindWant<'_> = Err((UAU, &[binding::ERR_UNBOUND_IMMEDIATE]));
    let cases: &[(&str, &[&str], &[&str], FindWant<'_>)] = &[
        ("bound-pvc", &["bound-pvc"], &["pvBound"], Ok(())),
        ("bound-pvc,pv-not-exists", &["bound-pvc"], &[], Err((UAU, &[GONE]))),
        ("prebound-pvc", &["prebound-pvc"], &["pvNode1aBound"], immediate),
        ("unbound-pvc,pv-same-node", &["unbound-pvc"], &["pvNode2", "pvNode1a", "pvNode1b"], Ok(())),
        ("unbound-pvc,pv-different-node", &["unbound-pvc"], &["pvNode2"], Err((UAU, &[BIND]))),
        ("two-unbound-pvcs", &["unbound-pvc", "unbound-pvc2"], &["pvNode1a", "pvNode1b"], Ok(())),
        ("two-unbound-pvcs,order-by-size", &["unbound-pvc2", "unbound-pvc"], &["pvNode1a", "pvNode1b"], Ok(())),
        ("two-unbound-pvcs,partial-match", &["unbound-pvc", "unbound-pvc2"], &["pvNode1a"], Err((UAU, &[BIND]))),
        ("one-bound,one-unbound", &["unbound-pvc", "bound-pvc"], &["pvBound", "pvNode1a"], Ok(())),
        ("one-bound,one-unbound,no-match", &["unbound-pvc", "bound-pvc"], &["pvBound", "pvNode2"], Err((UAU, &[BIND]))),
        ("one-prebound,one-unbound", &["unbound-pvc", "prebound-pvc"], &["pvNode1a", "pvNode1b"], immediate),
        ("immediate-bound-pvc", &["immediate-bound-pvc"], &["pvBoundImmediate"], Ok(())),
        ("immediate-bound-pvc-wrong-node", &["immediate-bound-pvc"], &["pvBoundImmediateNode2"], Err((UAU, &[NODE]))),
        ("immediate-unbound-pvc", &["immediate-unbound-pvc"], &[], immediate),
        ("immediate-unbound-pvc,delayed-mode-bound", &["immediate-unbound-pvc", "bound-pvc"], &["pvBound"], immediate),
        ("immediate-unbound-pvc,delayed-mode-unbound", &["immediate-unbound-pvc", "unbound-pvc"], &[], immediate),
        // Not upstream's: a bound claim on the wrong node and an unbound one without a volume.
        (
            "bound-wrong-node,unbound-no-match",
            &["immediate-bound-pvc", "unbound-pvc"],
            &["pvBoundImmediateNode2"],
            Err((UAU, &[NODE, BIND])),
        ),
    ];
    for (name, claims, pvs, want) in cases {
        check_find(name, &binder_world(claims, pvs, ""), *want);
    }
}

/// The CSIDriver of `test-provisioner` with storage capacity tracking on.
const CAPACITY_DRIVER: &str =
    "---\n{kind: CSIDriver, metadata: {name: test-provisioner}, spec: {storageCapacity: true}}\n";

#[test]
fn volume_binding_find_pod_volumes_with_provisioning() {
    // binder_test.go TestFindPodVolumesWithProvisioning, each case without and with the CSIDriver
    // (`needsCapacity`: with it and no capacity object, NotEnoughSpace).
    use binding::{ERR_REASON_BIND_CONFLICT as BIND, ERR_REASON_NOT_ENOUGH_SPACE as SPACE};
    let immediate: FindWant<'_> = Err((UAU, &[binding::ERR_UNBOUND_IMMEDIATE]));
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], FindWant<'a>, bool);
    let cases: &[Case<'_>] = &[
        ("one-provisioned", &["provisioned-pvc"], &[], Ok(()), true),
        (
            "two-unbound-pvcs,one-matched,one-provisioned",
            &["unbound-pvc", "provisioned-pvc"],
            &["pvNode1a"],
            Ok(()),
            true,
        ),
        ("one-bound,one-provisioned", &["bound-pvc", "provisioned-pvc"], &["pvBound"], Ok(()), true),
        ("one-binding,one-selected-node", &["bound-pvc", "selected-node-pvc"], &["pvBound"], Ok(()), true),
        ("immediate-unbound-pvc", &["immediate-unbound-pvc"], &[], immediate, false),
        (
            "one-immediate-bound,one-provisioned",
            &["immediate-bound-pvc", "provisioned-pvc"],
            &["pvBoundImmediate"],
            Ok(()),
            true,
        ),
        ("invalid-provisioner", &["no-provisioner-pvc"], &[], Err((UAU, &[BIND])), false),
        ("volume-topology-unsatisfied", &["topo-mismatch-pvc"], &[], Err((UAU, &[BIND])), false),
    ];
    for (name, claims, pvs, want, needs_capacity) in cases {
        check_find(name, &binder_world(claims, pvs, ""), *want);
        let with_driver: FindWant<'_> = if *needs_capacity { Err((UAU, &[SPACE])) } else { *want };
        check_find(&format!("{name} (CSIDriver)"), &binder_world(claims, pvs, CAPACITY_DRIVER), with_driver);
    }
}

#[test]
fn volume_binding_capacity() {
    // binder_test.go TestCapacity (`makeCapacity(name, class, node, capacity, maximumVolumeSize)`;
    // upstream names all three of "multiple" `net`, so the last one created stands).
    let cap = |class: &str, node: Option<&str>, capacity: &str, max: &str| {
        let topo = node.map_or("{}".to_string(), |n| format!("{{matchLabels: {{nodeKey: {n}}}}}"));
        let mut fields = String::new();
        if !capacity.is_empty() {
            fields += &format!(", capacity: {capacity}");
        }
        if !max.is_empty() {
            fields += &format!(", maximumVolumeSize: {max}");
        }
        format!(
            "---\n{{kind: CSIStorageCapacity, apiVersion: storage.k8s.io/v1, metadata: {{name: net, namespace: testns}}, \
             storageClassName: {class}, nodeTopology: {topo}{fields}}}\n"
        )
    };
    let w = "waitClassWithProvisioner";
    let space: FindWant<'_> = Err((UAU, &[binding::ERR_REASON_NOT_ENOUGH_SPACE]));
    let cases: Vec<(&str, String, FindWant<'_>)> = vec![
        ("network-attached", cap(w, None, "1Gi", ""), Ok(())),
        ("local-storage", cap(w, Some("node1"), "1Gi", ""), Ok(())),
        (
            "multiple",
            cap(w, None, "1Gi", "") + &cap(w, Some("node2"), "1Gi", "") + &cap(w, Some("node1"), "1Gi", ""),
            Ok(()),
        ),
        ("no-storage", String::new(), space),
        ("wrong-node", cap(w, Some("node2"), "1Gi", ""), space),
        ("wrong-storage-class", cap("waitClass", Some("node1"), "1Gi", ""), space),
        ("insufficient-storage", cap(w, Some("node1"), "1Mi", ""), space),
        ("insufficient-volume-size", cap(w, Some("node1"), "1Gi", "1Mi"), space),
        ("zero-storage", cap(w, Some("node1"), "0Mi", ""), space),
        ("zero-volume-size", cap(w, Some("node1"), "", "0Mi"), space),
        ("nil-storage", cap(w, Some("node1"), "", ""), space),
    ];
    for (name, caps, want) in cases {
        check_find(name, &binder_world(&["provisioned-pvc"], &[], &format!("{CAPACITY_DRIVER}{caps}")), want);
    }
}

#[test]
fn volume_binding_assume_revert_and_bind() {
    // TestAssumePodVolumes / TestRevertAssumedPodVolumes / TestBindPodVolumes through the plugin:
    // Reserve takes the smallest fitting volume, so later pods find only what is left;
    // Unreserve gives it back; PreBind binds the claim for good.
    use crate::framework::{BindingPod, CycleCx, CycleState};
    let mut yaml = binder_world(&["unbound-pvc"], &["pvNode1a", "pvNode1b"], "");
    for (pod, claim, size) in [("big", "big-pvc", "6G"), ("third", "third-pvc", "1G")] {
        yaml += &test_pvc(claim, size, "unbound", "", "waitClass");
        yaml += &format!(
            "---\nkind: Pod\nmetadata: {{name: {pod}, namespace: testns}}\nspec: {{volumes: [{{name: v, persistentVolumeClaim: {{claimName: {claim}}}}}]}}\n"
        );
    }
    let (snap, pods) = world(&yaml);
    let node1 = snap.nodes.idx_of(snap.interner.get("node1").unwrap()).unwrap();
    let vb = VolumeBinding::default();
    let filter = |pod: &PodInfo| filter_one(&vb, &snap, pod, "node1");
    let bind_conflict: Result<(), _> = Err((UAU, vec![binding::ERR_REASON_BIND_CONFLICT.to_string()]));
    let mut states: Vec<CycleState> = (0..3).map(|_| CycleState::new()).collect();
    let reserve = |i: usize, state: &mut CycleState| {
        let cx = CycleCx { snap: &snap, pod: &pods[i] };
        assert_eq!(vb.pre_filter(cx, state).0.code, Code::Success);
        assert_eq!(vb.reserve(cx, state, node1).code, Code::Success);
    };
    // Pod 0's 1G claim takes pv-node1a (5G, the smallest fit); the 6G claim still fits pv-node1b.
    reserve(0, &mut states[0]);
    assert_eq!(filter(&pods[1]), Ok(()));
    assert_eq!(filter(&pods[2]), Ok(()), "pv-node1b fits a 1G claim too");
    reserve(1, &mut states[1]);
    assert_eq!(filter(&pods[2]), bind_conflict, "both volumes are assumed");
    vb.unreserve(CycleCx { snap: &snap, pod: &pods[0] }, &mut states[0], node1);
    assert_eq!(filter(&pods[2]), Ok(()), "pv-node1a is back");
    // Reserve then PreBind: pod 0's claim is bound to pv-node1a, so it passes only where the
    // volume is, and the volume is no one else's.
    reserve(0, &mut states[0]);
    vb.pre_bind(&BindingPod { uid: pods[0].uid, namespace: "testns", name: "test-pod", node: "node1" });
    assert_eq!(filter(&pods[0]), Ok(()));
    assert_eq!(
        filter_one(&vb, &snap, &pods[0], "node2"),
        Err((UAU, vec![binding::ERR_REASON_NODE_CONFLICT.to_string()]))
    );
    assert_eq!(filter(&pods[2]), bind_conflict);
}

#[test]
fn volume_binding_score() {
    // volume_binding_test.go's StorageCapacityScoring cases: static binding of a 1G claim to a
    // 5G volume scores 100 - 20 = 80, to a 10G one 90; the node whose smallest fit is larger
    // scores higher.
    use crate::plugins::testutil::score_all;
    let mut yaml = BINDER_FIXTURES.to_string();
    yaml += &test_pv("pv-a", "node1", "5G", None, "waitClass");
    yaml += &test_pv("pv-b", "node2", "10G", None, "waitClass");
    yaml += &test_pvc("unbound-pvc", "1G", "unbound", "", "waitClass");
    yaml += &pod_with_claims(&["unbound-pvc"]);
    let (snap, pods) = world(&yaml);
    assert_eq!(score_all(&VolumeBinding::default(), &snap, &pods[0]), Some(vec![80, 90]));
    // Provisioning with capacity tracked: requested 1Gi of a 4Gi capacity: 75; untracked: 0.
    let mut yaml = binder_world(&["provisioned-pvc"], &[], CAPACITY_DRIVER);
    yaml += "---\n{kind: CSIStorageCapacity, metadata: {name: c, namespace: testns}, storageClassName: waitClassWithProvisioner, \
             nodeTopology: {}, capacity: 4Gi}\n";
    let (snap, pods) = world(&yaml);
    assert_eq!(score_all(&VolumeBinding::default(), &snap, &pods[0]), Some(vec![75, 0]));
    let (snap, pods) = world(&binder_world(&["provisioned-pvc"], &[], ""));
    assert_eq!(score_all(&VolumeBinding::default(), &snap, &pods[0]), Some(vec![0, 0]));
}
