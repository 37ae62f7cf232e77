//! NodeName: a pod with `spec.nodeName` fits only that node (`plugins/nodename`).

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, Reject};
use crate::snapshot::NodeIdx;
use crate::snapshot::PodInfo;

pub const NAME: &str = "NodeName";
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

impl Plugin for NodeName {
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
        sig.put(keys::NODE_NAME, pod.node_name);
        Sign::Signed
    }

    /// The pod names no node.
    fn filter_rejects_none(&self, cx: CycleCx<'_>, _state: &CycleState) -> bool {
        cx.pod.node_name.is_none()
    }

    fn filter(&self, cx: CycleCx<'_>, _state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(want) = cx.pod.node_name else { return };
        let names = &cx.snap.nodes.name;
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            if names[n.ix()] != want {
                *o = Some(Reject::unresolvable(0));
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, _reject: Reject) -> Vec<String> {
        vec![ERR_REASON.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::filter_one;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::Snapshot;

    #[test]
    fn table() {
        // node_name_test.go: no host specified; host matches; host does not match.
        let cases = [
            ("no host specified", None, true),
            ("host matches", Some("foo"), true),
            ("host doesn't match", Some("bar"), false),
        ];
        for (name, node_name, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "foo").add();
            let mut p = MakePod::new(&mut snap, "p");
            if let Some(n) = node_name {
                p = p.node_name(n);
            }
            let pod = p.build();
            let got = filter_one(&NodeName, &snap, &pod, "foo");
            assert_eq!(got.is_ok(), want, "{name}");
            if let Err((code, r)) = got {
                assert_eq!(code, crate::framework::Code::UnschedulableAndUnresolvable);
                assert_eq!(r, vec![ERR_REASON.to_string()]);
            }
        }
    }
}
