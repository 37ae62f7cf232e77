//! NodeUnschedulable: nodes with `spec.unschedulable` reject pods that do not tolerate
//! `node.kubernetes.io/unschedulable:NoSchedule` (`plugins/nodeunschedulable`).

use crate::framework::sign::{keys, tolerations_signature, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, Reject};
use crate::snapshot::PodInfo;
use crate::snapshot::{tolerations_tolerate, NodeIdx, Taint, TaintEffect};

pub const NAME: &str = "NodeUnschedulable";
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn filter_reads_only_columns(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sig.put(keys::TOLERATIONS, tolerations_signature(pod));
        Sign::Signed
    }

    /// No node of the snapshot is unschedulable.
    fn filter_rejects_none(&self, cx: CycleCx<'_>, _state: &CycleState) -> bool {
        cx.snap.nodes.unschedulable_nodes() == 0
    }

    fn filter(&self, cx: CycleCx<'_>, _state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let taint =
            Taint { key: cx.snap.wk.taint_unschedulable, value: cx.snap.wk.empty, effect: TaintEffect::NoSchedule };
        if tolerations_tolerate(&cx.pod.tolerations, &taint) {
            return;
        }
        let col = &cx.snap.nodes.unschedulable;
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            if col[n.ix()] {
                *o = Some(Reject::unresolvable(0));
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, _reject: Reject) -> Vec<String> {
        vec![ERR_REASON_UNSCHEDULABLE.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::filter_one;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::{Snapshot, TolerationOp};

    #[test]
    fn table() {
        // Cases of node_unschedulable_test.go: (node unschedulable, pod tolerates, want pass).
        let cases = [
            ("schedule pod to normal node", false, false, true),
            ("unschedulable node rejects pod", true, false, false),
            ("normal node, pod tolerates", false, true, true),
            ("unschedulable node, pod tolerates unschedulable taint", true, true, true),
        ];
        for (name, unsched, tolerates, want) in cases {
            let mut snap = Snapshot::new();
            let mut n = MakeNode::new(&mut snap, "n");
            if unsched {
                n = n.unschedulable();
            }
            n.add();
            let mut p = MakePod::new(&mut snap, "p");
            if tolerates {
                p = p.toleration(
                    "node.kubernetes.io/unschedulable",
                    TolerationOp::Exists,
                    "",
                    Some(TaintEffect::NoSchedule),
                );
            }
            let pod = p.build();
            let got = filter_one(&NodeUnschedulable, &snap, &pod, "n");
            assert_eq!(got.is_ok(), want, "{name}");
            if let Err((code, reasons)) = got {
                assert_eq!(code, crate::framework::Code::UnschedulableAndUnresolvable, "{name}");
                assert_eq!(reasons, vec![ERR_REASON_UNSCHEDULABLE.to_string()], "{name}");
            }
        }
    }
}
