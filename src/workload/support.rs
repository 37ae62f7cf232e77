//! What schedperf can run of an upstream workload file, and why not when it cannot.
//!
//! A test case runs unless an op, an object kind or a feature it needs is missing here; then each
//! of its workloads is skipped with a one-line reason that names the missing thing. A workload can
//! also be skipped alone, for a feature gate it sets ([`super::gates`]). `schedperf list` and
//! `schedperf run` both ask [`skip_reason`], so they agree.

use std::path::Path;

use super::gates::{self, GateStatus};
use super::spec::{Op, TestCase, Workload};

/// Kinds a template may hold that the runner creates (or registers) itself.
pub const SUPPORTED_KINDS: &[&str] = &[
    "Node",
    "Pod",
    "Namespace",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
    "PodDisruptionBudget",
    "PriorityClass",
    "PodGroup",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "ResourceSlice",
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceTaintRule",
];

/// Why workload `w` of `tc` cannot run, or `None` if it can. Every DRA feature upstream's `dra/`
/// suites exercise is implemented (`plugins::dynamicresources`: DRAPrioritizedList,
/// DRAConsumableCapacity, DRAPartitionableDevices, DRADeviceTaints, DRAExtendedResource,
/// DRAWorkloadResourceClaims, DRADeviceCompatibilityGroups, DRAListTypeAttributes), so a DRA
/// gate skips nothing by itself.
pub fn skip_reason(tc: &TestCase, w: &Workload) -> Option<String> {
    if let Some(r) = &tc.unsupported {
        return Some(r.clone());
    }
    let mut gates = tc.feature_gates.clone();
    gates.extend(w.feature_gates.iter().map(|(k, v)| (k.clone(), *v)));
    gates.iter().find_map(|(name, value)| match gates::status(name, *value) {
        Ok(GateStatus::Skip(reason)) => Some(reason),
        _ => None,
    })
}

/// The template files `op` reads (a pod op's own, else the test case's default pod template).
fn op_templates<'a>(op: &'a Op, default_pod_template: Option<&'a Path>) -> Vec<&'a Path> {
    match op {
        Op::CreatePods(p) => p.pod_template_path.as_deref().or(default_pod_template).into_iter().collect(),
        Op::CreatePodSets(p) => {
            p.create_pods_op.pod_template_path.as_deref().or(default_pod_template).into_iter().collect()
        }
        Op::CreateNodes(n) => n.node_template_path.as_deref().into_iter().collect(),
        Op::CreateAny(c) => vec![c.template_path.as_path()],
        Op::UpdateAny(u) => vec![u.template_path.as_path()],
        Op::CreatePodGroups(g) => vec![g.template_path.as_path()],
        Op::Churn(c) => c.template_paths.iter().map(|p| p.as_path()).collect(),
        _ => Vec::new(),
    }
}

/// The first thing in `ops` (or their templates) that schedperf does not support.
pub fn ops_skip_reason(ops: &[Op], default_pod_template: Option<&Path>) -> Option<String> {
    ops.iter().find_map(|op| match op {
        Op::Unsupported { reason, .. } => Some(reason.clone()),
        Op::CreatePods(p) => {
            pods_reason(p).or_else(|| op_templates(op, default_pod_template).into_iter().find_map(template_reason))
        }
        Op::CreatePodSets(p) => pods_reason(&p.create_pods_op)
            .or_else(|| op_templates(op, default_pod_template).into_iter().find_map(template_reason)),
        _ => op_templates(op, default_pod_template).into_iter().find_map(template_reason),
    })
}

/// Whether `ops` use dynamic resource allocation: an `allocResourceClaims` op, a template holding a
/// `resource.k8s.io` kind, or a pod template with `resourceClaims`.
pub fn ops_use_dra(ops: &[Op], default_pod_template: Option<&Path>) -> bool {
    ops.iter().any(|op| {
        matches!(op, Op::AllocResourceClaims { .. })
            || op_templates(op, default_pod_template).into_iter().any(template_uses_dra)
    })
}

/// Kinds of `resource.k8s.io` (for [`ops_use_dra`]).
const DRA_KINDS: &[&str] =
    &["ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule"];

fn template_uses_dra(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    text.lines().any(|line| {
        let field = line.trim_start().trim_start_matches("- ");
        field.starts_with("resourceClaims:")
            || line.strip_prefix("kind:").is_some_and(|k| DRA_KINDS.contains(&k.trim().trim_matches(['"', '\''])))
    })
}

fn pods_reason(p: &super::spec::CreatePodsOp) -> Option<String> {
    // Upstream makes volumes only when the claim template is set (`getPodStrategy`); a volume
    // template alone is ignored there, and a claim template without one fails its run.
    if p.persistent_volume_claim_template_path.is_some() && p.persistent_volume_template_path.is_none() {
        return Some("createPods with persistentVolumeClaimTemplatePath but no persistentVolumeTemplatePath".into());
    }
    None
}

/// A template whose objects the runner cannot create: an unsupported kind.
fn template_reason(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().to_string());
    for line in text.lines() {
        if let Some(kind) = line.strip_prefix("kind:") {
            let kind = kind.trim().trim_matches(['"', '\'']);
            if !kind.is_empty() && !SUPPORTED_KINDS.contains(&kind) {
                return Some(format!("template {name} holds a {kind}: objects of kind {kind} are not supported"));
            }
        }
    }
    None
}
