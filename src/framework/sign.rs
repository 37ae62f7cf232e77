//! Pod signatures (upstream's `SignPod`, `framework/runtime/framework.go`): two pods with the same
//! signature get the same feasibility and scores on the same nodes in the same state, which is what
//! lets OpportunisticBatching reuse one cycle's ranking for the next pod.
//!
//! Each plugin at PreFilter, Filter, PreScore or Score contributes fragments under upstream's keys
//! (`fwk.*SignerName`), or says the pod cannot be signed. A profile signs pods only when every such
//! plugin can sign ([`Plugin::signs_pods`]) and it has no extenders. Fragments are keyed like
//! upstream's map, so two plugins writing the same key (NodeResourcesFit and
//! NodeResourcesBalancedAllocation both write the requests) write it once.
//!
//! The values are canonical byte strings of the compiled pod: two pods compare equal exactly when
//! upstream's JSON of the same fragments would (interned symbols are equal iff their strings are).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use super::{Framework, Plugin};
use crate::snapshot::PodInfo;

/// Upstream's fragment keys (`k8s.io/kube-scheduler/framework/signers.go`).
pub mod keys {
    pub const IMAGE_NAMES: &str = "v1.Pod.Spec.CanonicalImageNames()";
    pub const LABELS: &str = "v1.Pod.Labels";
    pub const NODE_NAME: &str = "v1.Pod.Spec.NodeName";
    pub const NODE_AFFINITY: &str = "v1.Pod.Spec.Affinity.NodeAffinity";
    pub const NODE_SELECTOR: &str = "v1.Pod.Spec.Affinity.NodeSelector";
    pub const HOST_PORTS: &str = "v1.Pod.Spec.HostPorts()";
    pub const RESOURCES: &str = "v1.Pod.Spec.ContainerRequestsAndOverheads()";
    pub const SCHEDULER_NAME: &str = "v1.Pod.Spec.SchedulerName";
    pub const TOLERATIONS: &str = "v1.Pod.Spec.Tolerations";
    pub const VOLUMES: &str = "v1.Pod.Spec.Volumes.NonSyntheticSources()";
    pub const FEATURES: &str = "v1.Pod.Spec.RequiredFeatures()";
}

/// A pod's signature under one profile. Compared whole; cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature(Arc<[u8]>);

/// What a plugin's `SignPod` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sign {
    /// Fragments written (possibly none).
    Signed,
    /// This pod cannot be signed (upstream's non-success status); the reason is upstream's text.
    Unsignable(&'static str),
}

/// The fragments of one pod, by key.
#[derive(Default)]
pub struct SignBuilder {
    fragments: BTreeMap<&'static str, String>,
}

impl SignBuilder {
    /// Writes fragment `key` (a later write of the same key replaces it, as upstream's map does).
    pub fn put(&mut self, key: &'static str, value: impl Debug) {
        self.fragments.insert(key, format!("{value:?}"));
    }

    pub(crate) fn finish(self) -> Signature {
        let mut bytes = Vec::new();
        for (k, v) in self.fragments {
            bytes.extend_from_slice(k.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(v.as_bytes());
            bytes.push(0);
        }
        Signature(bytes.into())
    }
}

/// `TolerationsSigner`: the pod's tolerations as a sorted list (compared as a multiset).
pub fn tolerations_signature(pod: &PodInfo) -> Vec<String> {
    let mut v: Vec<String> = pod.tolerations.iter().map(|t| format!("{t:?}")).collect();
    v.sort_unstable();
    v
}

/// Whether every plugin upstream asks to sign (those at PreFilter, Filter, PreScore and Score) can
/// sign pods (`computeBatchablePlugins`; extenders would disable it too, and schedperf has none),
/// and none of them refuses every pod (so the default profile, whose PodTopologySpread has
/// system default constraints, skips signing altogether: upstream signs and gets nil each time).
pub fn profile_signs_pods(fw: &Framework) -> bool {
    let points = fw.pre_filter.iter().chain(&fw.filter).chain(&fw.pre_score).chain(fw.score.iter().map(|(p, _)| p));
    points.into_iter().all(|&p| fw.plugin(p).signs_pods() && !fw.plugin(p).signs_no_pod())
}

/// `SignPod`: the pod's signature under `fw`, or `None` when the profile does not sign pods or a
/// plugin cannot sign this one. Plugins are asked once each, in upstream's order (PreFilter, then
/// Filter, PreScore and Score plugins not seen yet).
pub fn sign_pod(fw: &Framework, pod: &PodInfo, scheduler_name: &str) -> Option<Signature> {
    let mut seen: Vec<usize> = Vec::new();
    let mut b = SignBuilder::default();
    b.put(keys::SCHEDULER_NAME, scheduler_name);
    let points = fw.pre_filter.iter().chain(&fw.filter).chain(&fw.pre_score).chain(fw.score.iter().map(|(p, _)| p));
    for &p in points {
        if seen.contains(&p) {
            continue;
        }
        seen.push(p);
        let plugin: &dyn Plugin = fw.plugin(p);
        if !plugin.signs_pods() {
            return None;
        }
        if let Sign::Unsignable(_) = plugin.sign_pod(pod, &mut b) {
            return None;
        }
    }
    Some(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_written_twice_counts_once_and_order_does_not_matter() {
        let mut a = SignBuilder::default();
        a.put(keys::RESOURCES, (100, 200));
        a.put(keys::LABELS, ["x"]);
        a.put(keys::RESOURCES, (100, 200));
        let mut b = SignBuilder::default();
        b.put(keys::LABELS, ["x"]);
        b.put(keys::RESOURCES, (100, 200));
        assert_eq!(a.finish(), b.finish());
        let mut c = SignBuilder::default();
        c.put(keys::LABELS, ["y"]);
        c.put(keys::RESOURCES, (100, 200));
        let mut d = SignBuilder::default();
        d.put(keys::LABELS, ["x"]);
        d.put(keys::RESOURCES, (100, 200));
        assert_ne!(c.finish(), d.finish());
    }
}
