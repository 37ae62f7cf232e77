//! NodeDeclaredFeatures (`plugins/nodedeclaredfeatures`, v1.37.2; the NodeDeclaredFeatures gate
//! is GA and locked on): a pod that needs node features (inferred from its spec by the feature
//! registry, `snapshot::features`) fits only nodes whose `status.declaredFeatures` include them.
//!
//! PreFilter infers the pod's requirements and returns Skip when there are none (every pod of
//! the usual workloads: then Filter never runs for it); Filter tests each node's declared set
//! (`NodeTable::declared_features`, one word per row) with one AND, rejecting
//! UnschedulableAndUnresolvable with upstream's reason. Registered events: node add and
//! `UpdateNodeDeclaredFeature` (Queue when the node is new or its declared list changed), and the
//! pod's own update (Queue when its inferred requirements changed): [`node_hint`],
//! [`pod_update_hint`], dispatched by `queue::hints`.
//!
//! Not modelled: the InPlacePodVerticalScalingSchedulerPreemption gate's skip for a pod whose
//! resize is deferred (alpha, off at v1.37.2, and not honoured: `workload::gates`); a Filter
//! without its PreFilter's state passes (upstream: an Error status), as the other plugins here do.

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status};
use crate::snapshot::features::{self, FeatureSet, Framework, PodFeatureFacts, Version};
use crate::snapshot::{NodeIdx, PodInfo, Sym};

pub const NAME: &str = "NodeDeclaredFeatures";
/// `errReasonUnsatisfiedRequirements`.
pub const ERR_REASON_UNSATISFIED_REQUIREMENTS: &str = "node(s) didn't match Pod's required features";
const PRE_FILTER_KEY: &str = "PreFilterNodeDeclaredFeatures";

/// The plugin: the registry it infers with and the scheduler's version.
pub struct NodeDeclaredFeatures {
    framework: &'static Framework,
    version: Version,
}

impl Default for NodeDeclaredFeatures {
    /// The scheduler's plugin: `ndf.DefaultFramework` at v1.37.2, the registry the snapshot maps
    /// nodes' declared features with.
    fn default() -> Self {
        NodeDeclaredFeatures { framework: features::default_framework(), version: features::SCHEDULER_VERSION }
    }
}

/// PreFilter's state: the pod's required features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PreFilterState(FeatureSet);

/// The features `pod` requires under the scheduler's registry (`InferForPodScheduling`).
pub fn requirements(pod: PodFeatureFacts) -> FeatureSet {
    features::default_framework().infer_for_pod_scheduling(pod, features::SCHEDULER_VERSION)
}

/// `isSchedulableAfterNodeChange`: a node added (`old` is `None`) or one whose declared list
/// changed may now fit the pod. Compares the lists as given, as upstream's `slices.Equal`.
pub fn node_hint(old: Option<&[Sym]>, new: &[Sym]) -> bool {
    old != Some(new)
}

/// `isSchedulableAfterTargetPodUpdate`: the pod's own update matters when its inferred
/// requirements changed.
pub fn pod_update_hint(old: PodFeatureFacts, new: PodFeatureFacts) -> bool {
    requirements(old) != requirements(new)
}

/// Filter over a block: a node whose declared set lacks a required feature is rejected
/// UnschedulableAndUnresolvable. Returns whether it rejected any.
fn filter_block(cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) -> bool {
    let Some(&PreFilterState(reqs)) = state.read::<PreFilterState>(PRE_FILTER_KEY) else { return false };
    let declared = &cx.snap.nodes.declared_features;
    let mut any = false;
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        if !reqs.is_subset(declared[n.ix()]) {
            *o = Some(Reject::unresolvable(0));
            any = true;
        }
    }
    any
}

impl Plugin for NodeDeclaredFeatures {
    fn name(&self) -> &'static str {
        NAME
    }

    fn filter_reads_only_columns(&self) -> bool {
        true
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// `SignPod`: the required set's `String()` under the registry.
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        let reqs = self.framework.infer_for_pod_scheduling(pod.feature_facts, self.version);
        sig.put(keys::FEATURES, self.framework.set_string(reqs));
        Sign::Signed
    }

    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        let reqs = self.framework.infer_for_pod_scheduling(cx.pod.feature_facts, self.version);
        if reqs.is_empty() {
            return (Status::skip(), PreFilterResult::default());
        }
        state.write(PRE_FILTER_KEY, PreFilterState(reqs));
        (Status::success(), PreFilterResult::default())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        filter_block(cx, state, nodes, out);
    }

    /// The loop knows whether it rejected a node (no scan of `out` afterwards).
    fn filter_any(
        &self,
        cx: CycleCx<'_>,
        state: &CycleState,
        nodes: &[NodeIdx],
        out: &mut [Option<Reject>],
    ) -> Option<bool> {
        Some(filter_block(cx, state, nodes, out))
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, _reject: Reject) -> Vec<String> {
        vec![ERR_REASON_UNSATISFIED_REQUIREMENTS.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::filter_one;
    use crate::snapshot::features::PodFeatureFacts as F;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::Snapshot;

    fn node_with(snap: &mut Snapshot, name: &str, declared: &[&str]) {
        let mut n = MakeNode::new(snap, name);
        n = n.declared_features(declared);
        n.add();
    }

    #[test]
    fn filter_table() {
        // TestFilter of nodedeclaredfeatures_test.go, with the registry's real features in the
        // mocks' places (A = RestartAllContainersOnContainerExits, B = UserNamespacesHostNetworkSupport,
        // C = VolumeBindMountOptions), the requirements coming from the pod's spec:
        // (name, node's declared features, pod's facts, want pass).
        const A: &str = "RestartAllContainersOnContainerExits";
        const B: &str = "UserNamespacesHostNetworkSupport";
        const C: &str = "VolumeBindMountOptions";
        let (fa, fb, fc) = (F::RESTART_ALL_CONTAINERS, F::USER_NAMESPACES_HOST_NETWORK, F::BIND_MOUNT_OPTIONS);
        let cases: &[(&str, &[&str], u8, bool)] = &[
            ("Node matches requirements", &[A, B], fa, true),
            ("Node does not match requirements", &[B], fa, false),
            ("Node with multiple features, pod requires subset", &[A, B, C], fa | fc, true),
            ("Node has no declared features", &[], fa, false),
            ("Node with some but not all required features", &[A], fa | fb, false),
            ("Pod with no requirements: PreFilter skips, every node passes", &[], 0, true),
            ("Unknown declared features are ignored", &["Feature1", "Feature2"], fb, false),
            ("Pod-level resources need no real feature", &[], F::POD_LEVEL_RESOURCES, true),
        ];
        for (name, declared, facts, want) in cases {
            let mut snap = Snapshot::new();
            node_with(&mut snap, "node-1", declared);
            let pod = MakePod::new(&mut snap, "test-pod").feature_facts(PodFeatureFacts(*facts)).build();
            let got = filter_one(&NodeDeclaredFeatures::default(), &snap, &pod, "node-1");
            assert_eq!(got.is_ok(), *want, "{name}");
            if let Err((code, reasons)) = got {
                assert_eq!(code, Code::UnschedulableAndUnresolvable, "{name}");
                assert_eq!(reasons, vec![ERR_REASON_UNSATISFIED_REQUIREMENTS.to_string()], "{name}");
            }
        }
    }

    #[test]
    fn pre_filter_skips_a_pod_without_requirements_and_keeps_them_otherwise() {
        // TestPreFilter's plugin-level cases with the real registry: (pod facts, want status, required).
        let cases: &[(u8, Code, &[&str])] = &[
            (0, Code::Skip, &[]),
            (F::POD_LEVEL_RESOURCES, Code::Skip, &[]),
            (F::RESTART_ALL_CONTAINERS, Code::Success, &["RestartAllContainersOnContainerExits"]),
            (
                F::USER_NAMESPACES_HOST_NETWORK | F::BIND_MOUNT_OPTIONS,
                Code::Success,
                &["UserNamespacesHostNetworkSupport", "VolumeBindMountOptions"],
            ),
        ];
        for (facts, code, want) in cases {
            let mut snap = Snapshot::new();
            node_with(&mut snap, "n", &[]);
            let pod = MakePod::new(&mut snap, "p").feature_facts(PodFeatureFacts(*facts)).build();
            let pl = NodeDeclaredFeatures::default();
            let mut state = CycleState::new();
            let (st, res) = pl.pre_filter(CycleCx { snap: &snap, pod: &pod }, &mut state);
            assert_eq!(st.code, *code, "{facts}");
            assert_eq!(res, PreFilterResult::default(), "PreFilter never narrows the nodes");
            let kept = state.read::<PreFilterState>(PRE_FILTER_KEY).map(|s| pl.framework.unmap(s.0));
            match code {
                Code::Skip => assert_eq!(kept, None, "{facts}: no state after Skip"),
                _ => assert_eq!(kept.as_deref(), Some(*want), "{facts}"),
            }
        }
    }

    #[test]
    fn hints_table() {
        // TestEnqueueExtensionsNodeUpdate and TestIsSchedulableAfterTargetPodUpdate.
        let mut snap = Snapshot::new();
        let a = snap.interner.intern("FeatureA");
        assert!(node_hint(None, &[a]), "Node Add with feature");
        assert!(node_hint(Some(&[]), &[a]), "Node Update (Features Added)");
        assert!(!node_hint(Some(&[a]), &[a]), "Node Update (Features Unchanged)");
        assert!(node_hint(Some(&[a]), &[]), "Node Update (Features Removed)");
        let (none, restart) = (PodFeatureFacts(0), PodFeatureFacts(F::RESTART_ALL_CONTAINERS));
        assert!(pod_update_hint(none, restart), "Pod Update adds requirement");
        assert!(pod_update_hint(restart, none), "Pod Update removes requirement");
        assert!(!pod_update_hint(none, none), "Pod Update with no change in requirements");
        // A change the registry does not read (pod-level resources) changes no requirement.
        assert!(!pod_update_hint(none, PodFeatureFacts(F::POD_LEVEL_RESOURCES)));
    }

    #[test]
    fn signs_the_required_set_as_a_bit_string() {
        let mut snap = Snapshot::new();
        let pl = NodeDeclaredFeatures::default();
        let sig = |snap: &mut Snapshot, facts: u8| {
            let pod = MakePod::new(snap, "p").feature_facts(PodFeatureFacts(facts)).build();
            let mut b = SignBuilder::default();
            assert_eq!(pl.sign_pod(&pod, &mut b), Sign::Signed);
            b.finish()
        };
        // Registry order by name: DRANodeAllocatableResources, DRAOptionalNodeOperations,
        // ExtendWebSocketsToKubelet, InPlacePodLevelResourcesVerticalScaling,
        // InPlacePodVerticalScalingInitContainers, InPlacePodVerticalScalingMemoryBackedVolumes,
        // RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport, VolumeBindMountOptions.
        assert_eq!(pl.framework.set_string(FeatureSet(0)), "000000000");
        assert_eq!(pl.framework.set_string(requirements(PodFeatureFacts(F::BIND_MOUNT_OPTIONS))), "000000001");
        assert_eq!(pl.framework.set_string(requirements(PodFeatureFacts(F::RESTART_ALL_CONTAINERS))), "000000100");
        assert_eq!(sig(&mut snap, 0), sig(&mut snap, F::POD_LEVEL_RESOURCES));
        assert_ne!(sig(&mut snap, 0), sig(&mut snap, F::BIND_MOUNT_OPTIONS));
    }
}
