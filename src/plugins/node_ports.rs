//! NodePorts: a pod's host ports must be free on the node (`plugins/nodeports`,
//! `HostPortInfo.CheckConflict`).

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status};
use crate::snapshot::PodInfo;
use crate::snapshot::{HostPort, NodeIdx, Sym};
use smallvec::SmallVec;

pub const NAME: &str = "NodePorts";
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

pub struct NodePorts;

/// Whether `want` conflicts with ports in `used` (both sanitized). A wildcard IP (`0.0.0.0`)
/// conflicts with the same protocol and port on any IP, and any IP conflicts with the wildcard.
pub fn conflicts(used: &[HostPort], want: &HostPort, wildcard: Sym) -> bool {
    if want.port <= 0 {
        return false;
    }
    used.iter().any(|u| {
        u.port == want.port
            && u.protocol == want.protocol
            && (want.ip == wildcard || u.ip == wildcard || u.ip == want.ip)
    })
}

/// Whether `want` (port > 0) conflicts with a port in `used`: [`conflicts`] without the port check,
/// the wildcard test on `want` hoisted out of the loop.
#[inline]
fn conflicts_wanted(used: &[HostPort], want: &HostPort, wildcard: Sym) -> bool {
    if want.ip == wildcard {
        used.iter().any(|u| u.port == want.port && u.protocol == want.protocol)
    } else {
        used.iter().any(|u| u.port == want.port && u.protocol == want.protocol && (u.ip == wildcard || u.ip == want.ip))
    }
}

/// NodePorts' Filter over `nodes`: rejects each node whose used ports (`used_by_node`, the
/// snapshot's `host_ports` column) conflict with one of `want` (the pod's ports with a port
/// number, so none is skipped inside the loop); returns whether it rejected one. A node without
/// used ports costs one length test.
pub fn filter_ports(
    used_by_node: &[Vec<HostPort>],
    want: &[HostPort],
    wildcard: Sym,
    nodes: &[NodeIdx],
    out: &mut [Option<Reject>],
) -> bool {
    let mut any = false;
    if want.is_empty() {
        return false;
    }
    if let [w] = want {
        // One host port (the common pod): its fields held in registers, one loop per node.
        let (port, protocol, ip, any_ip) = (w.port, w.protocol, w.ip, w.ip == wildcard);
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            for u in &used_by_node[n.ix()] {
                if u.port == port && u.protocol == protocol && (any_ip || u.ip == wildcard || u.ip == ip) {
                    *o = Some(Reject::unschedulable(0));
                    any = true;
                    break;
                }
            }
        }
        return any;
    }
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let used = &used_by_node[n.ix()];
        if !used.is_empty() && want.iter().any(|w| conflicts_wanted(used, w, wildcard)) {
            *o = Some(Reject::unschedulable(0));
            any = true;
        }
    }
    any
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sig.put(keys::HOST_PORTS, &pod.sign.host_ports);
        Sign::Signed
    }

    fn pre_filter(&self, cx: CycleCx<'_>, _state: &mut CycleState) -> (Status, PreFilterResult) {
        if cx.pod.host_ports.iter().all(|p| p.port <= 0) {
            return (Status::skip(), PreFilterResult::default());
        }
        (Status::success(), PreFilterResult::default())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        self.filter_any(cx, state, nodes, out);
    }

    /// The loop knows whether it rejected a node (no scan of `out` afterwards).
    fn filter_any(
        &self,
        cx: CycleCx<'_>,
        _state: &CycleState,
        nodes: &[NodeIdx],
        out: &mut [Option<Reject>],
    ) -> Option<bool> {
        let wildcard = cx.snap.wk.default_host_ip;
        let want: SmallVec<[HostPort; 4]> = cx.pod.host_ports.iter().copied().filter(|p| p.port > 0).collect();
        Some(filter_ports(&cx.snap.nodes.host_ports, &want, wildcard, nodes, out))
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

    type Ports = &'static [(&'static str, &'static str, i32)];

    #[test]
    fn table() {
        // node_ports_test.go TestNodePorts: (name, pod ports, existing ports on the node, want fit).
        let cases: &[(&str, Ports, Ports, bool)] = &[
            ("nothing running", &[], &[], true),
            ("other port", &[("UDP", "127.0.0.1", 8080)], &[("UDP", "127.0.0.1", 9090)], true),
            ("same udp port", &[("UDP", "127.0.0.1", 8080)], &[("UDP", "127.0.0.1", 8080)], false),
            ("same tcp port", &[("TCP", "127.0.0.1", 8080)], &[("TCP", "127.0.0.1", 8080)], false),
            ("different host ip", &[("TCP", "127.0.0.1", 8080)], &[("TCP", "127.0.0.2", 8080)], true),
            ("different protocol", &[("UDP", "127.0.0.1", 8080)], &[("TCP", "127.0.0.1", 8080)], true),
            (
                "second udp port conflict",
                &[("UDP", "127.0.0.1", 8000), ("UDP", "127.0.0.1", 8080)],
                &[("UDP", "127.0.0.1", 8080)],
                false,
            ),
            (
                "first tcp port conflict",
                &[("TCP", "127.0.0.1", 8001), ("UDP", "127.0.0.1", 8080)],
                &[("TCP", "127.0.0.1", 8001), ("UDP", "127.0.0.1", 8081)],
                false,
            ),
            (
                "first tcp port conflict due to 0.0.0.0 hostIP",
                &[("TCP", "0.0.0.0", 8001)],
                &[("TCP", "127.0.0.1", 8001)],
                false,
            ),
            (
                "TCP hostPort conflict due to 0.0.0.0 hostIP",
                &[("TCP", "10.0.10.10", 8001), ("TCP", "0.0.0.0", 8001)],
                &[("TCP", "127.0.0.1", 8001)],
                false,
            ),
            (
                "second tcp port conflict to 0.0.0.0 hostIP",
                &[("TCP", "127.0.0.1", 8001)],
                &[("TCP", "0.0.0.0", 8001)],
                false,
            ),
            ("second different protocol", &[("UDP", "127.0.0.1", 8001)], &[("TCP", "0.0.0.0", 8001)], true),
            (
                "UDP hostPort conflict due to 0.0.0.0 hostIP",
                &[("UDP", "127.0.0.1", 8001)],
                &[("TCP", "0.0.0.0", 8001), ("UDP", "0.0.0.0", 8001)],
                false,
            ),
            ("empty ip and protocol default to 0.0.0.0/TCP", &[("", "", 8001)], &[("TCP", "127.0.0.1", 8001)], false),
        ];
        for (name, want_ports, used, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "n").add();
            let mut existing = MakePod::new(&mut snap, "existing");
            for (pr, ip, port) in *used {
                existing = existing.host_port(pr, ip, *port);
            }
            existing.place("n");
            let mut p = MakePod::new(&mut snap, "p");
            for (pr, ip, port) in *want_ports {
                p = p.host_port(pr, ip, *port);
            }
            let pod = p.build();
            let got = filter_one(&NodePorts, &snap, &pod, "n");
            assert_eq!(got.is_ok(), *want, "{name}");
            if let Err((code, r)) = got {
                assert_eq!(code, crate::framework::Code::Unschedulable);
                assert_eq!(r, vec![ERR_REASON.to_string()]);
            }
        }
    }

    /// The plain per-node check: any of the pod's ports (port > 0 or not) in conflict.
    fn filter_ports_reference(
        used_by_node: &[Vec<HostPort>],
        pod: &[HostPort],
        wildcard: Sym,
        nodes: &[NodeIdx],
    ) -> Vec<bool> {
        nodes.iter().map(|n| pod.iter().any(|p| conflicts(&used_by_node[n.ix()], p, wildcard))).collect()
    }

    /// A host port from small ranges, so that conflicts are common: protocol 1..=2, IP 0..=2 (0 is
    /// the wildcard), port -1..=2.
    fn port() -> impl proptest::strategy::Strategy<Value = HostPort> {
        use proptest::strategy::Strategy;
        (1u32..3, 0u32..3, -1i32..3).prop_map(|(protocol, ip, port)| HostPort {
            protocol: Sym(protocol),
            ip: Sym(ip),
            port,
        })
    }

    proptest::proptest! {
        #[test]
        fn filter_ports_matches_reference(
            used_by_node in proptest::collection::vec(proptest::collection::vec(port(), 0..4), 1..40),
            pod in proptest::collection::vec(port(), 0..4),
            picks in proptest::collection::vec(0usize..1000, 0..60),
        ) {
            let wildcard = Sym(0);
            let nodes: Vec<NodeIdx> = picks.iter().map(|p| NodeIdx((p % used_by_node.len()) as u32)).collect();
            let want: Vec<HostPort> = pod.iter().copied().filter(|p| p.port > 0).collect();
            let mut out = vec![None; nodes.len()];
            let any = filter_ports(&used_by_node, &want, wildcard, &nodes, &mut out);
            let got: Vec<bool> = out.iter().map(Option::is_some).collect();
            let reference = filter_ports_reference(&used_by_node, &pod, wildcard, &nodes);
            proptest::prop_assert_eq!(any, reference.iter().any(|&r| r));
            proptest::prop_assert_eq!(got, reference);
        }
    }

    #[test]
    fn removing_a_pod_frees_its_ports_as_upstreams_port_set_does() {
        // Two pods on one node declare TCP 0.0.0.0:80 (both bound by nodeName). Upstream keeps
        // used ports as a set, so removing either one frees the port (preemption's dry run sees
        // this when it removes a lower-priority holder of a shared port).
        // (pods removed, the incoming pod fits)
        for (removed, fits) in [(&[][..], false), (&["a"][..], true), (&["b"][..], true), (&["a", "b"][..], true)] {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "n").add();
            let a = MakePod::new(&mut snap, "a").host_port("TCP", "", 80).host_port("TCP", "", 8080).place("n");
            let b = MakePod::new(&mut snap, "b").host_port("", "", 80).place("n");
            for r in removed {
                snap.unplace_pod(if *r == "a" { a.uid } else { b.uid }).expect("placed");
            }
            let pod = MakePod::new(&mut snap, "p").host_port("TCP", "", 80).build();
            assert_eq!(filter_one(&NodePorts, &snap, &pod, "n").is_ok(), fits, "removed {removed:?}");
        }
    }
}
