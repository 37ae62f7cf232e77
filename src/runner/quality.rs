//! End-of-run placement quality and the placement digest.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::plugins::podtopologyspread::{constraint_skews, PodTopologySpread};
use crate::report::{PlacementQuality, ResourceUtilization, TopologySkew};
use crate::snapshot::{
    InclusionPolicy, Interner, LabelOp, LabelSelector, PodInfo, Snapshot, SpreadConstraint, Sym, WhenUnsatisfiable,
};

fn stats(values: &[f64]) -> ResourceUtilization {
    if values.is_empty() {
        return ResourceUtilization::default();
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    ResourceUtilization { mean, stddev: var.sqrt(), max: values.iter().copied().fold(0.0, f64::max) }
}

/// Utilization per resource across nodes, nodes used, and fragmentation for pods of the largest
/// shape (`largest` = (cpu millicores, memory bytes)).
pub fn placement_quality(snap: &Snapshot, largest: (i64, i64), pending_pods: u64) -> PlacementQuality {
    let t = &snap.nodes;
    let n = t.len();
    let frac = |req: &[i64], alloc: &[i64]| -> Vec<f64> {
        (0..n).map(|i| if alloc[i] > 0 { req[i] as f64 / alloc[i] as f64 } else { 0.0 }).collect()
    };
    let cpu = frac(&t.req_cpu_milli, &t.alloc_cpu_milli);
    let mem = frac(&t.req_memory, &t.alloc_memory);
    let mut utilization = BTreeMap::new();
    utilization.insert("cpu".to_string(), stats(&cpu));
    utilization.insert("memory".to_string(), stats(&mem));
    let nodes_used = t.pod_count.iter().filter(|c| **c > 0).count() as u64;
    // Fragmentation: how many more pods of the largest shape the summed free capacity would hold,
    // minus how many actually fit node by node.
    let (lc, lm) = largest;
    let fragmentation_pods = if lc <= 0 && lm <= 0 {
        0
    } else {
        let mut fit_nodewise = 0u64;
        let (mut free_cpu, mut free_mem, mut free_slots) = (0i64, 0i64, 0i64);
        for i in 0..n {
            let fc = (t.alloc_cpu_milli[i] - t.req_cpu_milli[i]).max(0);
            let fm = (t.alloc_memory[i] - t.req_memory[i]).max(0);
            let fs = (t.alloc_pods[i] - t.pod_count[i] as i64).max(0);
            free_cpu += fc;
            free_mem += fm;
            free_slots += fs;
            let by_cpu = if lc > 0 { fc / lc } else { i64::MAX };
            let by_mem = if lm > 0 { fm / lm } else { i64::MAX };
            fit_nodewise += by_cpu.min(by_mem).min(fs).max(0) as u64;
        }
        let by_cpu = if lc > 0 { free_cpu / lc } else { i64::MAX };
        let by_mem = if lm > 0 { free_mem / lm } else { i64::MAX };
        let fit_pooled = by_cpu.min(by_mem).min(free_slots).max(0) as u64;
        fit_pooled.saturating_sub(fit_nodewise)
    };
    PlacementQuality {
        utilization,
        nodes_used,
        nodes_total: n as u64,
        fragmentation_pods,
        topology_skew: Vec::new(),
        pending_pods,
        node_cpu_utilization: cpu,
    }
}

/// `placementQuality.topologySkew`: one entry per distinct spread constraint of `pods` (each with
/// the index of its profile), its own or, for a pod without any, the default ones of its profile's
/// PodTopologySpread (`spread[profile]`, `None` when the profile does not enable the plugin), with
/// the skew it ends with ([`constraint_skews`]). Constraints that render to the same text (same
/// namespace, key, selector, kind and options) are one entry; when pods with different node
/// affinity or tolerations see different eligible domains for it, the entry keeps the worst.
pub fn topology_skew<'a>(
    snap: &Snapshot,
    spread: &[Option<PodTopologySpread>],
    pods: impl Iterator<Item = (usize, &'a PodInfo)>,
) -> Vec<TopologySkew> {
    // Pods sharing a template share constraints, namespace, labels, node affinity and
    // tolerations: each such pod shape is evaluated once (the last two compare by equality within
    // a bucket, as they do not hash).
    type Labels<'p> = &'p [(Sym, Sym)];
    type Shape<'p> = (usize, &'p [SpreadConstraint], Sym, Labels<'p>, Labels<'p>);
    type Rest<'p> = (&'p Option<crate::snapshot::NodeSelector>, &'p [crate::snapshot::Toleration]);
    // Sized for every pod up front: with a pod signature label (one value per pod by default)
    // every pod is its own shape.
    let mut seen: ahash::AHashMap<Shape<'a>, Vec<Rest<'a>>> =
        ahash::AHashMap::with_capacity(pods.size_hint().1.unwrap_or(0));
    let mut by_text: BTreeMap<String, TopologySkew> = BTreeMap::new();
    for (profile, pod) in pods {
        let shape = (
            profile,
            pod.constraints.topology_spread.as_slice(),
            pod.namespace,
            pod.labels.as_slice(),
            pod.node_selector.as_slice(),
        );
        let rest = (&pod.required_affinity, pod.tolerations.as_slice());
        let bucket = seen.entry(shape).or_default();
        if bucket.contains(&rest) {
            continue;
        }
        bucket.push(rest);
        let plugin = spread.get(profile).and_then(Option::as_ref);
        for s in constraint_skews(plugin, snap, pod) {
            let text = constraint_text(&snap.interner, pod, &s.constraint, s.defaulted);
            let entry = by_text.entry(text.clone()).or_insert(TopologySkew {
                constraint: text,
                max_skew: i64::from(s.constraint.max_skew),
                worst_skew: 0,
            });
            entry.worst_skew = entry.worst_skew.max(s.skew);
        }
    }
    by_text.into_values().collect()
}

/// A constraint as the report names it: `zone app=web (DoNotSchedule, namespace default)`, with
/// minDomains and the inclusion policies when they are not the defaults, and `default` for a
/// profile's default constraint.
fn constraint_text(interner: &Interner, pod: &PodInfo, c: &SpreadConstraint, defaulted: bool) -> String {
    let when = match c.when_unsatisfiable {
        WhenUnsatisfiable::DoNotSchedule => "DoNotSchedule",
        WhenUnsatisfiable::ScheduleAnyway => "ScheduleAnyway",
    };
    let mut extra = vec![when.to_string(), format!("namespace {}", interner.resolve(pod.namespace))];
    if c.min_domains > 1 {
        extra.push(format!("minDomains {}", c.min_domains));
    }
    if c.node_affinity_policy == InclusionPolicy::Ignore {
        extra.push("nodeAffinityPolicy Ignore".into());
    }
    if c.node_taints_policy == InclusionPolicy::Honor {
        extra.push("nodeTaintsPolicy Honor".into());
    }
    if defaulted {
        extra.push("default constraint".into());
    }
    format!("{} {} ({})", interner.resolve(c.topology_key), selector_text(interner, &c.selector), extra.join(", "))
}

/// A label selector in kubectl's syntax (`app=web,tier in (a,b),!legacy`); `{}` selects
/// everything, `<nil>` nothing.
pub fn selector_text(interner: &Interner, sel: &LabelSelector) -> String {
    if sel.matches_nothing {
        return "<nil>".into();
    }
    if sel.reqs.is_empty() {
        return "{}".into();
    }
    let values = |v: &[Sym]| v.iter().map(|s| interner.resolve(*s)).collect::<Vec<_>>().join(",");
    sel.reqs
        .iter()
        .map(|r| {
            let k = interner.resolve(r.key);
            match &r.op {
                LabelOp::In(v) if v.len() == 1 => format!("{k}={}", values(v)),
                LabelOp::In(v) => format!("{k} in ({})", values(v)),
                LabelOp::NotIn(v) => format!("{k} notin ({})", values(v)),
                LabelOp::Exists => k.to_string(),
                LabelOp::DoesNotExist => format!("!{k}"),
                LabelOp::Gt(n) => format!("{k}>{n}"),
                LabelOp::Lt(n) => format!("{k}<{n}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// sha256 over the sorted `pod -> node` lines.
pub fn placement_digest(placements: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (pod, node) in placements {
        h.update(pod.as_bytes());
        h.update(b"\t");
        h.update(node.as_bytes());
        h.update(b"\n");
    }
    format!("{:x}", h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::testing::{sel_labels, MakeNode, MakePod};
    use crate::snapshot::TaintEffect;

    #[test]
    fn fragmentation_counts_stranded_capacity() {
        // Two nodes with 1000m each, each half used: 1000m free in total holds one 1000m pod, but no
        // single node does.
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "a").capacity(1000, 1 << 30).add();
        MakeNode::new(&mut snap, "b").capacity(1000, 1 << 30).add();
        MakePod::new(&mut snap, "p1").req(500, 0).place("a");
        MakePod::new(&mut snap, "p2").req(500, 0).place("b");
        let q = placement_quality(&snap, (1000, 0), 0);
        assert_eq!(q.fragmentation_pods, 1);
        assert_eq!(q.nodes_used, 2);
        assert!((q.utilization["cpu"].mean - 0.5).abs() < 1e-9);
        assert!(q.utilization["cpu"].stddev.abs() < 1e-9);
    }

    /// One node: name, zone (none: the node lacks the key), extra label, tainted NoSchedule.
    type NodeDef = (&'static str, Option<&'static str>, Option<(&'static str, &'static str)>, bool);

    const THREE_ZONES: &[NodeDef] =
        &[("a", Some("z1"), None, false), ("b", Some("z2"), None, false), ("c", Some("z3"), None, false)];

    /// A cluster of `nodes` with `placed[i]` pods labelled app=web (namespace default) on node i.
    fn cluster(nodes: &[NodeDef], placed: &[usize]) -> Snapshot {
        let mut snap = Snapshot::new();
        for (name, zone, extra, tainted) in nodes {
            let mut n = MakeNode::new(&mut snap, name).label("kubernetes.io/hostname", name);
            if let Some(z) = zone {
                n = n.label("zone", z);
            }
            if let Some((k, v)) = extra {
                n = n.label(k, v);
            }
            if *tainted {
                n = n.taint("dedicated", "x", TaintEffect::NoSchedule);
            }
            n.add();
        }
        for ((name, ..), count) in nodes.iter().zip(placed) {
            for i in 0..*count {
                MakePod::new(&mut snap, &format!("{name}-{i}")).label("app", "web").place(name);
            }
        }
        // Pods that match nothing: another label, another namespace.
        MakePod::new(&mut snap, "other-label").label("app", "db").place(nodes[0].0);
        MakePod::new(&mut snap, "other-ns").namespace("elsewhere").label("app", "web").place(nodes[0].0);
        snap
    }

    /// An app=web pod with one constraint on `key`, changed by `tweak`.
    fn pod_with(snap: &mut Snapshot, key: &str, tweak: &dyn Fn(&mut SpreadConstraint)) -> PodInfo {
        let sel = sel_labels(snap, &[("app", "web")]);
        let mut c = SpreadConstraint::new(1, snap.interner.intern(key), WhenUnsatisfiable::DoNotSchedule, sel);
        tweak(&mut c);
        MakePod::new(snap, "incoming").label("app", "web").spread_constraint(c).build()
    }

    #[test]
    fn skew_is_max_minus_min_over_eligible_domains() {
        type Tweak = fn(&mut SpreadConstraint);
        let none: Tweak = |_| {};
        let tiered: &[NodeDef] = &[
            ("a", Some("z1"), Some(("tier", "x")), false),
            ("b", Some("z2"), Some(("tier", "x")), false),
            ("c", Some("z3"), None, false),
        ];
        let tainted: &[NodeDef] =
            &[("a", Some("z1"), None, false), ("b", Some("z2"), None, false), ("c", Some("z3"), None, true)];
        let keyless: &[NodeDef] =
            &[("a", Some("z1"), None, false), ("b", Some("z2"), None, false), ("d", None, None, false)];
        // (case, nodes, app=web pods per node, topology key, constraint change, the pod selects
        // tier=x, the skew).
        type Case<'a> = (&'a str, &'a [NodeDef], &'a [usize], &'a str, Tweak, bool, i64);
        let cases: &[Case] = &[
            ("counts per zone", THREE_ZONES, &[3, 1, 1], "zone", none, false, 2),
            ("an empty zone is the minimum", THREE_ZONES, &[3, 1, 0], "zone", none, false, 3),
            ("every node its own domain", THREE_ZONES, &[4, 1, 2], "kubernetes.io/hostname", none, false, 3),
            (
                "fewer domains than minDomains: the minimum is 0",
                THREE_ZONES,
                &[3, 1, 1],
                "zone",
                |c| c.min_domains = 4,
                false,
                3,
            ),
            ("as many domains as minDomains", THREE_ZONES, &[3, 1, 1], "zone", |c| c.min_domains = 3, false, 2),
            ("a node without the key is no domain", keyless, &[3, 1, 9], "zone", none, false, 2),
            ("nodeAffinityPolicy Honor: the pod's nodeSelector drops z3", tiered, &[3, 2, 0], "zone", none, true, 1),
            (
                "nodeAffinityPolicy Ignore keeps z3",
                tiered,
                &[3, 2, 0],
                "zone",
                |c| c.node_affinity_policy = InclusionPolicy::Ignore,
                true,
                3,
            ),
            ("nodeTaintsPolicy Ignore (default) keeps the tainted zone", tainted, &[3, 2, 0], "zone", none, false, 3),
            (
                "nodeTaintsPolicy Honor drops it",
                tainted,
                &[3, 2, 0],
                "zone",
                |c| c.node_taints_policy = InclusionPolicy::Honor,
                false,
                1,
            ),
            ("balanced", THREE_ZONES, &[2, 2, 2], "zone", none, false, 0),
        ];
        for (name, nodes, placed, key, tweak, selects_tier, want) in cases {
            let mut snap = cluster(nodes, placed);
            let mut pod = pod_with(&mut snap, key, tweak);
            if *selects_tier {
                pod.node_selector = vec![(snap.interner.intern("tier"), snap.interner.intern("x"))];
            }
            let got = topology_skew(&snap, &[None], [(0, &pod)].into_iter());
            assert_eq!(got.len(), 1, "{name}: {got:?}");
            assert_eq!((got[0].max_skew, got[0].worst_skew), (1, *want), "{name}: {}", got[0].constraint);
        }
    }

    #[test]
    fn entries_are_per_distinct_constraint_and_keep_the_worst() {
        let mut snap = cluster(THREE_ZONES, &[3, 1, 0]);
        let zone = pod_with(&mut snap, "zone", &|_| {});
        let twin = pod_with(&mut snap, "zone", &|_| {});
        let host = pod_with(&mut snap, "kubernetes.io/hostname", &|c| {
            c.when_unsatisfiable = WhenUnsatisfiable::ScheduleAnyway
        });
        let got = topology_skew(&snap, &[None], [(0, &zone), (0, &twin), (0, &host)].into_iter());
        let texts: Vec<(&str, i64)> = got.iter().map(|t| (t.constraint.as_str(), t.worst_skew)).collect();
        assert_eq!(
            texts,
            vec![
                ("kubernetes.io/hostname app=web (ScheduleAnyway, namespace default)", 3),
                ("zone app=web (DoNotSchedule, namespace default)", 3),
            ]
        );
        // Without pods that carry constraints (and no defaults), nothing to report.
        let plain = MakePod::new(&mut snap, "plain").label("app", "web").build();
        assert!(topology_skew(&snap, &[None], [(0, &plain)].into_iter()).is_empty());
    }

    #[test]
    fn pods_that_see_different_domains_are_each_counted() {
        use crate::snapshot::{Toleration, TolerationOp};
        let tainted: &[NodeDef] =
            &[("a", Some("z1"), None, false), ("b", Some("z2"), None, false), ("c", Some("z3"), None, true)];
        let mut snap = cluster(tainted, &[3, 2, 0]);
        let honor = |c: &mut SpreadConstraint| c.node_taints_policy = InclusionPolicy::Honor;
        let plain = pod_with(&mut snap, "zone", &honor);
        let mut tolerant = pod_with(&mut snap, "zone", &honor);
        let key = snap.interner.intern("dedicated");
        tolerant.tolerations = vec![Toleration {
            key: Some(key),
            op: TolerationOp::Exists,
            value: Sym::NONE,
            effect: Some(TaintEffect::NoSchedule),
        }];
        // Alone, the plain pod sees z1 and z2 (skew 1); the tolerant one sees z3 too (skew 3).
        let alone = topology_skew(&snap, &[None], [(0, &plain), (0, &plain)].into_iter());
        assert_eq!(alone[0].worst_skew, 1);
        let both = topology_skew(&snap, &[None], [(0, &plain), (0, &tolerant)].into_iter());
        assert_eq!(both.len(), 1, "one constraint text: {both:?}");
        assert_eq!(both[0].worst_skew, 3, "the worst of the two views");
    }

    #[test]
    fn default_constraints_apply_to_pods_without_their_own() {
        let mut snap = cluster(THREE_ZONES, &[3, 1, 1]);
        // A Service selecting app=web gives the pods their default selector.
        let (ns, app, web) = (snap.wk.default_namespace, snap.interner.intern("app"), snap.interner.intern("web"));
        snap.cluster.services.push((ns, vec![(app, web)]));
        let plain = MakePod::new(&mut snap, "plain").label("app", "web").build();
        let args = crate::config::PodTopologySpreadArgs {
            default_constraints: vec![
                serde_json::json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}),
            ],
            defaulting_type: crate::config::DefaultingType::List,
        };
        let listed = PodTopologySpread::from_args(&args, &mut snap.interner).unwrap();
        let got = topology_skew(&snap, &[Some(listed)], [(0, &plain)].into_iter());
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].constraint, "zone app=web (DoNotSchedule, namespace default, default constraint)");
        assert_eq!(got[0].worst_skew, 2);
        // System defaulting: hostname (maxSkew 3) and topology.kubernetes.io/zone (maxSkew 5),
        // ScheduleAnyway; no node here carries the zone key, so that one has no domain: skew 0.
        let system = crate::config::PodTopologySpreadArgs {
            default_constraints: vec![],
            defaulting_type: crate::config::DefaultingType::System,
        };
        let system = PodTopologySpread::from_args(&system, &mut snap.interner).unwrap();
        let got = topology_skew(&snap, &[Some(system)], [(0, &plain)].into_iter());
        let got: Vec<(i64, i64)> = got.iter().map(|t| (t.max_skew, t.worst_skew)).collect();
        assert_eq!(got, vec![(3, 2), (5, 0)]);
        // A profile without PodTopologySpread has no default constraints.
        assert!(topology_skew(&snap, &[None], [(0, &plain)].into_iter()).is_empty());
    }

    #[test]
    fn selectors_render_in_kubectl_syntax() {
        use crate::snapshot::LabelRequirement;
        let mut snap = Snapshot::new();
        let mut i = |s: &str| snap.interner.intern(s);
        let (app, tier, legacy, gen, a, b) = (i("app"), i("tier"), i("legacy"), i("gen"), i("a"), i("b"));
        let sel = LabelSelector::new(
            &[(app, a)],
            vec![
                LabelRequirement { key: tier, op: LabelOp::NotIn(smallvec::smallvec![a, b]) },
                LabelRequirement { key: legacy, op: LabelOp::DoesNotExist },
                LabelRequirement { key: gen, op: LabelOp::Gt(2) },
            ],
        );
        let text = selector_text(&snap.interner, &sel);
        for part in ["app=a", "tier notin (a,b)", "!legacy", "gen>2"] {
            assert!(text.split(',').any(|p| p == part) || text.contains(part), "{part} in {text}");
        }
        assert_eq!(selector_text(&snap.interner, &LabelSelector::everything()), "{}");
        assert_eq!(selector_text(&snap.interner, &LabelSelector::nothing()), "<nil>");
    }

    #[test]
    fn digest_depends_on_every_placement() {
        let mut a = BTreeMap::new();
        a.insert("ns/p1".to_string(), "n1".to_string());
        a.insert("ns/p2".to_string(), "n2".to_string());
        let mut b = a.clone();
        assert_eq!(placement_digest(&a), placement_digest(&b));
        b.insert("ns/p2".to_string(), "n1".to_string());
        assert_ne!(placement_digest(&a), placement_digest(&b));
    }
}
