//! Cases modelled on upstream's `default_preemption_test.go` (TestSelectNodesForPreemption,
//! TestPickOneNodeForPreemption, TestPodEligibleToPreemptOthers, TestPostFilter) and
//! `runtime/framework_test.go` (RunFilterPluginsWithNominatedPods).

use super::*;
use crate::config::DefaultPreemptionArgs;
use crate::engine::cycle::CycleResult;
use crate::engine::Engine;
use crate::snapshot::testing::{sel_labels, MakeNode, MakePod};

const GI: i64 = 1024 * 1024 * 1024;

fn framework(snap: &mut Snapshot) -> Framework {
    let filters = ["NodeResourcesFit", "TaintToleration", "InterPodAffinity"];
    crate::plugins::testutil::framework_with(snap, &["NodeResourcesFit", "InterPodAffinity"], &filters, &[NAME])
}

fn args() -> DefaultPreemptionArgs {
    DefaultPreemptionArgs { min_candidate_nodes_percentage: 10, min_candidate_nodes_absolute: 100 }
}

/// A node of `cpu_milli` CPU and 32Gi, and low-priority pods on it: (name, cpu, priority, start).
fn node_with(snap: &mut Snapshot, node: &str, cpu_milli: i64, pods: &[(&str, i64, i32, i64)]) {
    MakeNode::new(snap, node).capacity(cpu_milli, 32 * GI).label("kubernetes.io/hostname", node).add();
    for (name, cpu, prio, start) in pods {
        MakePod::new(snap, name).req(*cpu, GI).priority(*prio).start_time(*start).label("app", name).place(node);
    }
}

/// Runs a cycle (which must fail) then PostFilter.
fn preempt(snap: &mut Snapshot, pod: &PodInfo) -> Result<(Preemption, Arc<PodInfo>), NoPreemption> {
    let fw = framework(snap);
    let mut engine = Engine::new(1, 1, None);
    let diag = match engine.schedule_one(&fw, snap, pod) {
        CycleResult::Unschedulable(d) => d,
        other => panic!("expected an unschedulable pod, got {other:?}"),
    };
    let a = args();
    let plugin = DefaultPreemption {
        min_candidate_nodes_percentage: a.min_candidate_nodes_percentage,
        min_candidate_nodes_absolute: a.min_candidate_nodes_absolute,
    };
    // The engine's RNG as `Engine::new(1, ..)` seeds it (its cycle draws nothing from it).
    plugin.preempt(&fw, snap, pod, &diag, &mut <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1))
}

fn names(p: &Preemption) -> Vec<&str> {
    p.victims.iter().map(|v| v.name.as_str()).collect()
}

#[test]
fn victims_and_node_choice_table() {
    type Setup = fn(&mut Snapshot);
    // (name, setup, incoming cpu, incoming priority, want node, want victims)
    type Case = (&'static str, Setup, i64, i32, &'static str, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            "reprieve the most important pods that still fit",
            |s| node_with(s, "node1", 4000, &[("p1", 1000, 1, 0), ("p2", 2000, 2, 0), ("p3", 1000, 3, 0)]),
            2000,
            10,
            "node1",
            vec!["p2"],
        ),
        (
            "the node whose highest victim priority is lowest wins",
            |s| {
                node_with(s, "node1", 4000, &[("a", 4000, 5, 0)]);
                node_with(s, "node2", 4000, &[("b", 4000, 1, 0)]);
            },
            2000,
            10,
            "node2",
            vec!["b"],
        ),
        (
            "then the smallest sum of victim priorities",
            |s| {
                node_with(s, "node1", 4000, &[("a1", 2000, 3, 0), ("a2", 2000, 3, 0)]);
                node_with(s, "node2", 4000, &[("b1", 2000, 3, 0), ("b2", 2000, 1, 0)]);
            },
            4000,
            10,
            "node2",
            vec!["b1", "b2"],
        ),
        (
            "then the fewest victims",
            |s| {
                node_with(s, "node1", 4000, &[("a1", 1000, 1, 0), ("a2", 1000, 1, 0), ("a3", 2000, 2, 0)]);
                node_with(s, "node2", 4000, &[("b1", 2000, 2, 0), ("b2", 2000, 1, 0)]);
            },
            4000,
            10,
            // node1: 3 victims, sum 4; node2: 2 victims, sum 3 -> node2 by sum already.
            "node2",
            vec!["b1", "b2"],
        ),
        (
            "equal victims: the latest start time among the top-priority victims wins",
            |s| {
                node_with(s, "node1", 4000, &[("old", 4000, 1, 100)]);
                node_with(s, "node2", 4000, &[("new", 4000, 1, 200)]);
            },
            4000,
            10,
            "node2",
            vec!["new"],
        ),
        (
            "higher-priority pods are never victims",
            |s| {
                node_with(s, "node1", 4000, &[("high", 2000, 20, 0), ("low", 2000, 1, 0)]);
                node_with(s, "node2", 4000, &[("high2", 4000, 20, 0)]);
            },
            2000,
            10,
            "node1",
            vec!["low"],
        ),
    ];
    for (name, setup, cpu, prio, want_node, want_victims) in cases {
        let mut snap = Snapshot::new();
        setup(&mut snap);
        let before: Vec<u32> = snap.nodes.pod_count.clone();
        let pod = MakePod::new(&mut snap, "preemptor").req(cpu, GI).priority(prio).build();
        let (p, nominated) = preempt(&mut snap, &pod).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(snap.interner.resolve(p.node), want_node, "{name}");
        assert_eq!(names(&p), want_victims, "{name}");
        assert_eq!(nominated.nominated_node, Some(p.node), "{name}");
        assert_eq!(snap.nominated[&p.node].len(), 1, "{name}: nomination recorded");
        assert_eq!(snap.nodes.pod_count, before, "{name}: dry runs restore the snapshot");
    }
}

#[test]
fn pdb_violations_are_avoided() {
    let mut snap = Snapshot::new();
    node_with(&mut snap, "node1", 4000, &[("guarded", 4000, 1, 0)]);
    node_with(&mut snap, "node2", 4000, &[("free", 4000, 5, 0)]);
    let selector = sel_labels(&mut snap, &[("app", "guarded")]);
    let ns = snap.wk.default_namespace;
    snap.cluster.pdbs.push(Pdb { namespace: ns, selector, disruptions_allowed: 0, disrupted_pods: vec![] });
    let pod = MakePod::new(&mut snap, "preemptor").req(4000, GI).priority(10).build();
    let (p, _) = preempt(&mut snap, &pod).unwrap();
    assert_eq!((snap.interner.resolve(p.node), names(&p), p.num_pdb_violations), ("node2", vec!["free"], 0));

    // With the budget allowing one disruption, the lower-priority victim wins again.
    snap.cluster.pdbs[0].disruptions_allowed = 1;
    snap.clear_nominations();
    let (p, _) = preempt(&mut snap, &pod).unwrap();
    assert_eq!((snap.interner.resolve(p.node), names(&p), p.num_pdb_violations), ("node1", vec!["guarded"], 0));

    // When every candidate violates a budget, preemption still happens and reports it.
    let mut snap = Snapshot::new();
    node_with(&mut snap, "node1", 4000, &[("guarded", 4000, 1, 0)]);
    let selector = sel_labels(&mut snap, &[("app", "guarded")]);
    snap.cluster.pdbs.push(Pdb { namespace: ns, selector, disruptions_allowed: 0, disrupted_pods: vec![] });
    let pod = MakePod::new(&mut snap, "preemptor").req(4000, GI).priority(10).build();
    let (p, _) = preempt(&mut snap, &pod).unwrap();
    assert_eq!((names(&p), p.num_pdb_violations), (vec!["guarded"], 1));
}

#[test]
fn eligibility_and_no_candidates() {
    // preemptionPolicy: Never.
    let mut snap = Snapshot::new();
    node_with(&mut snap, "node1", 4000, &[("low", 4000, 1, 0)]);
    let pod = MakePod::new(&mut snap, "p").req(4000, GI).priority(10).preemption_never().build();
    assert_eq!(
        preempt(&mut snap, &pod).unwrap_err(),
        NoPreemption::NotEligible("not eligible due to preemptionPolicy=Never.".into())
    );
    // A terminating lower-priority pod on the nominated node: wait for it.
    let mut snap = Snapshot::new();
    MakeNode::new(&mut snap, "node1").capacity(4000, 32 * GI).add();
    MakePod::new(&mut snap, "dying").req(4000, GI).priority(1).terminating().place("node1");
    let mut pod = MakePod::new(&mut snap, "p").req(4000, GI).priority(10).build();
    pod.nominated_node = Some(snap.interner.intern("node1"));
    assert!(matches!(eligible_to_preempt(&snap, &pod, None), Err(NoPreemption::NotEligible(_))));
    // Unless the nominated node was found UnschedulableAndUnresolvable.
    let idx = snap.nodes.idx_of(pod.nominated_node.unwrap()).unwrap();
    let diag = Diagnosis {
        failures: vec![crate::engine::NodeFailure { node: idx, plugin: 0, reject: Reject::unresolvable(0) }].into(),
        num_all_nodes: 1,
        ..Default::default()
    };
    assert_eq!(eligible_to_preempt(&snap, &pod, Some(&diag)), Ok(()));
    // Only higher-priority pods: no victims anywhere.
    let mut snap = Snapshot::new();
    node_with(&mut snap, "node1", 4000, &[("high", 4000, 20, 0)]);
    let pod = MakePod::new(&mut snap, "p").req(4000, GI).priority(10).build();
    assert!(matches!(preempt(&mut snap, &pod), Err(NoPreemption::NoCandidates(_))));
    // UnschedulableAndUnresolvable nodes (an untolerated taint) are not candidates.
    let mut snap = Snapshot::new();
    MakeNode::new(&mut snap, "node1")
        .capacity(4000, 32 * GI)
        .taint("k", "v", crate::snapshot::TaintEffect::NoSchedule)
        .add();
    MakePod::new(&mut snap, "low").req(4000, GI).priority(1).place("node1");
    let pod = MakePod::new(&mut snap, "p").req(4000, GI).priority(10).build();
    assert!(matches!(preempt(&mut snap, &pod), Err(NoPreemption::NoCandidates(_))));
}

#[test]
fn anti_affinity_victims() {
    // The incoming pod's required anti-affinity (Unschedulable) is resolved by evicting the
    // lower-priority pod it repels, even though resources suffice.
    let mut snap = Snapshot::new();
    node_with(&mut snap, "node1", 4000, &[("repelled", 1000, 1, 0), ("other", 1000, 1, 0)]);
    let pod = MakePod::new(&mut snap, "p")
        .req(1000, GI)
        .priority(10)
        .pod_anti_affinity("app", Some(&["repelled"]), "kubernetes.io/hostname")
        .build();
    let (p, _) = preempt(&mut snap, &pod).unwrap();
    assert_eq!(names(&p), vec!["repelled"]);
}

#[test]
fn nominated_pods_are_counted_when_filtering_others() {
    let mut snap = Snapshot::new();
    node_with(&mut snap, "node1", 4000, &[("low", 4000, 1, 0)]);
    let preemptor = MakePod::new(&mut snap, "preemptor").req(3000, GI).priority(10).build();
    let (p, nominated) = preempt(&mut snap, &preemptor).unwrap();
    assert_eq!(names(&p), vec!["low"]);
    // The pipeline deletes the victims.
    for v in &p.victims {
        snap.unplace_pod(v.uid);
    }
    let fw = framework(&mut snap);
    let mut engine = Engine::new(1, 1, None);
    // (priority, cpu, want scheduled): equal or lower priority pods see the nominated pod's 3000m.
    for (prio, cpu, want) in [(5, 2000, false), (5, 1000, true), (10, 2000, false), (20, 2000, true)] {
        let other = MakePod::new(&mut snap, "other").req(cpu, GI).priority(prio).build();
        let got = matches!(engine.schedule_one_nominated(&fw, &mut snap, &other), CycleResult::Scheduled { .. });
        assert_eq!(got, want, "priority {prio} cpu {cpu}");
        assert!(snap.pods.is_empty(), "nominated pods are removed after the cycle");
    }
    // The nominated pod itself fits on its node, tried first.
    match engine.schedule_one_nominated(&fw, &mut snap, &nominated) {
        CycleResult::Scheduled { node, evaluated_nodes, .. } => {
            assert_eq!((snap.node_name(node), evaluated_nodes), ("node1", 1));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn num_candidates_table() {
    // (nodes, percentage, absolute, want)
    for (n, pct, abs, want) in
        [(5000, 10, 100, 500), (500, 10, 100, 100), (50, 10, 100, 50), (1000, 0, 7, 7), (1000, 50, 0, 500)]
    {
        assert_eq!(num_candidates(n, pct, abs), want, "{n} {pct} {abs}");
    }
}

#[test]
fn resolve_priority_table() {
    let mut snap = Snapshot::new();
    let (hi, lo, def, missing) = (
        snap.interner.intern("high"),
        snap.interner.intern("low"),
        snap.interner.intern("default"),
        snap.interner.intern("missing"),
    );
    let class = |name, value, global_default, preemption_policy| PriorityClass {
        name,
        value,
        global_default,
        preemption_policy,
    };
    let with_default = vec![
        class(hi, 1000, false, PreemptionPolicy::Never),
        class(lo, -5, false, PreemptionPolicy::PreemptLowerPriority),
        class(def, 7, true, PreemptionPolicy::PreemptLowerPriority),
    ];
    let without_default = vec![class(hi, 1000, false, PreemptionPolicy::Never)];
    let two_defaults = vec![
        class(hi, 1000, true, PreemptionPolicy::Never),
        class(def, 7, true, PreemptionPolicy::PreemptLowerPriority),
    ];
    type Case<'a> = (Option<Sym>, &'a [PriorityClass], Result<(i32, PreemptionPolicy), Sym>);
    let cases: Vec<Case> = vec![
        (Some(hi), &with_default, Ok((1000, PreemptionPolicy::Never))),
        (Some(lo), &with_default, Ok((-5, PreemptionPolicy::PreemptLowerPriority))),
        (None, &with_default, Ok((7, PreemptionPolicy::PreemptLowerPriority))),
        (None, &without_default, Ok((0, PreemptionPolicy::PreemptLowerPriority))),
        (None, &two_defaults, Ok((7, PreemptionPolicy::PreemptLowerPriority))),
        (Some(missing), &with_default, Err(missing)),
    ];
    for (name, classes, want) in cases {
        assert_eq!(resolve_priority(name, classes), want, "{name:?}");
    }
}

#[test]
fn more_important_orders_by_priority_then_start() {
    let mut snap = Snapshot::new();
    let mut pods = [
        MakePod::new(&mut snap, "a").priority(1).start_time(5).build(),
        MakePod::new(&mut snap, "b").priority(3).start_time(9).build(),
        MakePod::new(&mut snap, "c").priority(1).start_time(2).build(),
    ];
    pods.sort_by(more_important);
    let order: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(order, vec!["b", "c", "a"]);
}

#[test]
fn nominated_pods_must_not_be_needed_to_pass() {
    // node1 passes the required affinity only thanks to the pod nominated there; upstream runs
    // the filters with and without nominated pods and both must pass, so the pod stays pending.
    let mut snap = Snapshot::new();
    for n in ["node1", "node2"] {
        MakeNode::new(&mut snap, n).capacity(4000, 32 * GI).label("kubernetes.io/hostname", n).add();
    }
    let nominated = Arc::new(MakePod::new(&mut snap, "nominated").label("app", "x").priority(10).build());
    let node1 = snap.interner.intern("node1");
    snap.nominate(nominated, node1);
    let fw = framework(&mut snap);
    let mut engine = Engine::new(1, 1, None);
    let pod =
        MakePod::new(&mut snap, "p").priority(5).pod_affinity("app", Some(&["x"]), "kubernetes.io/hostname").build();
    match engine.schedule_one_nominated(&fw, &mut snap, &pod) {
        CycleResult::Unschedulable(d) => {
            let rejected: Vec<&str> = d.failures.iter().map(|f| snap.node_name(f.node)).collect();
            assert!(rejected.contains(&"node1"), "{rejected:?}");
        }
        other => panic!("{other:?}"),
    }
    // Once the nominated pod is placed for real, the pod follows it.
    let placed = snap.nominated[&node1][0].clone();
    snap.clear_nomination(placed.uid);
    snap.place_pod(placed, node1).unwrap();
    match engine.schedule_one_nominated(&fw, &mut snap, &pod) {
        CycleResult::Scheduled { node, .. } => assert_eq!(snap.node_name(node), "node1"),
        other => panic!("{other:?}"),
    }
}

/// Which candidates upstream may nominate from some random offset: the best, and any candidate
/// without PDB violations that the dry run may find together with enough no-better ones.
#[test]
fn may_nominate_table() {
    let mut snap = Snapshot::new();
    // (priority of each victim, PDB violations)
    let cand = |snap: &mut Snapshot, i: u32, victims: &[i32], pdb: usize| Candidate {
        node: NodeIdx(i),
        victims: victims
            .iter()
            .enumerate()
            .map(|(j, &p)| Victim::of(&MakePod::new(snap, &format!("v{i}-{j}")).priority(p).start_time(0).build()))
            .collect(),
        num_pdb_violations: pdb,
    };
    type Case = (&'static str, Vec<(Vec<i32>, usize)>, usize, Vec<usize>);
    let cases: Vec<Case> = vec![
        ("one candidate", vec![(vec![5], 0)], 1, vec![0]),
        ("want 1: each may come first", vec![(vec![5], 0), (vec![7], 0), (vec![1, 1], 0)], 1, vec![0, 1, 2]),
        ("want 2: the worst never wins", vec![(vec![5], 0), (vec![7], 0), (vec![1, 1], 0)], 2, vec![0, 2]),
        ("want 3: every node visited, the best", vec![(vec![5], 0), (vec![7], 0), (vec![1, 1], 0)], 3, vec![2]),
        ("fewer candidates than want: the best", vec![(vec![5], 0), (vec![7], 0)], 5, vec![0]),
        ("a PDB-violating candidate only when best", vec![(vec![1], 1), (vec![7], 0)], 1, vec![1]),
        ("all violate: no early stop, the best", vec![(vec![1], 2), (vec![7], 1)], 1, vec![1]),
        ("ties are all drawn", vec![(vec![5], 0), (vec![5], 0), (vec![6], 0)], 3, vec![0, 1]),
    ];
    for (name, spec, want, expect) in cases {
        let cands: Vec<Candidate> =
            spec.iter().enumerate().map(|(i, (v, pdb))| cand(&mut snap, i as u32, v, *pdb)).collect();
        assert_eq!(may_nominate(&cands, want), expect, "{name}");
        // What upstream picks once it has tried every node is always among them.
        assert!(expect.contains(&pick_one(&cands)), "{name}");
    }
    // Start times: the latest earliest-start wins; victims without status.startTime read as "now"
    // upstream, so they beat known starts and tie with each other.
    let timed = |snap: &mut Snapshot, i: u32, start: Option<i64>| {
        let p = MakePod::new(snap, &format!("t{i}")).priority(5);
        let p = match start {
            Some(ms) => p.start_time(ms),
            None => p,
        };
        Candidate { node: NodeIdx(i), victims: vec![Victim::of(&p.build())], num_pdb_violations: 0 }
    };
    let cands = vec![timed(&mut snap, 0, Some(10)), timed(&mut snap, 1, Some(20)), timed(&mut snap, 2, Some(5))];
    assert_eq!(may_nominate(&cands, 3), vec![1], "the latest known start");
    assert_eq!(may_nominate(&cands, 2), vec![0, 1], "or one with a no-later start left unvisited");
    let cands = vec![timed(&mut snap, 0, Some(10)), timed(&mut snap, 1, None), timed(&mut snap, 2, None)];
    assert_eq!(may_nominate(&cands, 3), vec![1, 2], "unknown starts: upstream's draw");
}

/// A generated node for [`columns_dry_run_matches_plain`]: CPU, pod slots, tainted, and its pods
/// (cpu, priority, start, app label index, host port).
type GenNode = (i64, i64, bool, Vec<(i64, i32, i64, usize, bool)>);

/// Builds the generated cluster (the same names whatever the uids); returns the preemptor.
fn gen_cluster(
    snap: &mut Snapshot,
    nodes: &[GenNode],
    pdb_allowed: Option<i32>,
    nominated: &[(usize, i32, bool)],
    preemptor: (i64, i32),
) -> PodInfo {
    for (i, (cpu, slots, tainted, pods)) in nodes.iter().enumerate() {
        let name = format!("node{i}");
        let mut n =
            MakeNode::new(snap, &name).capacity(*cpu, 32 * GI).pods(*slots).label("kubernetes.io/hostname", &name);
        if *tainted {
            n = n.taint("dedicated", "x", crate::snapshot::TaintEffect::NoSchedule);
        }
        n.add();
        for (j, &(pcpu, prio, start, app, port)) in pods.iter().enumerate() {
            let mut p = MakePod::new(snap, &format!("n{i}p{j}"))
                .req(pcpu, GI)
                .priority(prio)
                .start_time(start)
                .label("app", ["a", "b"][app]);
            if port {
                p = p.host_port("TCP", "", 8080 + j as i32);
            }
            p.place(&name);
        }
    }
    if let Some(allowed) = pdb_allowed {
        let selector = sel_labels(snap, &[("app", "a")]);
        let ns = snap.wk.default_namespace;
        snap.cluster.pdbs.push(Pdb { namespace: ns, selector, disruptions_allowed: allowed, disrupted_pods: vec![] });
    }
    for (k, &(node, prio, port)) in nominated.iter().enumerate() {
        let node = format!("node{}", node % nodes.len());
        let sym = snap.interner.intern(&node);
        let mut p = MakePod::new(snap, &format!("nominated{k}")).req(500, GI).priority(prio);
        if port {
            p = p.host_port("TCP", "", 9090);
        }
        let p = p.build();
        snap.nominate(Arc::new(PodInfo { nominated_node: Some(sym), ..p }), sym);
    }
    MakePod::new(snap, "preemptor").req(preemptor.0, GI).priority(preemptor.1).build()
}

/// What a dry run on one node shows, by name: victims and PDB violations, or why not.
fn outcome(snap: &Snapshot, r: Result<Candidate, NotCandidate>) -> Result<(Vec<String>, usize), NotCandidate> {
    r.map(|c| (victim_pods(snap, &c.victims).iter().map(|v| v.name.clone()).collect(), c.num_pdb_violations))
}

/// Every node's pod list (by name) and request columns.
fn rows(snap: &Snapshot) -> Vec<(Vec<String>, i64, i64, i64, i64, u32)> {
    let t = &snap.nodes;
    (0..t.len())
        .map(|i| {
            let names = t.pods[i].iter().map(|u| snap.pods[u].info.name.clone()).collect();
            let meta: Vec<_> =
                t.pods[i].iter().map(|u| crate::snapshot::nodes::PodMeta::of(&snap.pods[u].info)).collect();
            assert_eq!(t.pod_meta[i], meta, "node {i}'s pod_meta follows its pod list");
            (names, t.req_cpu_milli[i], t.req_memory[i], t.non_zero_cpu_milli[i], t.non_zero_memory[i], t.pod_count[i])
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// The dry run on the request columns gives every node the plain run's verdict, victims and
    /// PDB count, and leaves every row (pod order included) as the plain run does.
    #[test]
    fn columns_dry_run_matches_plain(
        nodes in proptest::collection::vec(
            (
                proptest::sample::select(vec![1000i64, 2000, 3000, 4000]),
                1i64..6,
                proptest::bool::weighted(0.2),
                proptest::collection::vec(
                    (
                        proptest::sample::select(vec![0i64, 200, 500, 900, 1500]),
                        0i32..5,
                        0i64..3,
                        0usize..2,
                        proptest::bool::weighted(0.1),
                    ),
                    0..5,
                ),
            ),
            1..5,
        ),
        pdb_allowed in proptest::option::of(0i32..3),
        nominated in proptest::collection::vec((0usize..4, 0i32..6, proptest::bool::weighted(0.2)), 0..3),
        preemptor in (proptest::sample::select(vec![0i64, 500, 1000, 2500, 4000]), 1i32..6),
    ) {
        let mut plain = Snapshot::new();
        let pod_a = gen_cluster(&mut plain, &nodes, pdb_allowed, &nominated, preemptor);
        let fw_a = framework(&mut plain);
        let pre_a = (!plain.pre_filter_reads_pods(&pod_a)).then(|| run_pre_filter(&fw_a, &plain, &pod_a));
        // Each columns plan on its own copy of the cluster: every Filter run per reprieve, Fit
        // read from the row (with and without the reasons worked out).
        let plans = [
            OnColumns { fit_in_row: false, reasons: true },
            OnColumns { fit_in_row: true, reasons: true },
            OnColumns { fit_in_row: true, reasons: false },
        ];
        let mut cols: Vec<(Snapshot, PodInfo, Framework, Option<PreFiltered>)> = Vec::new();
        for plan in plans {
            let mut snap = Snapshot::new();
            let pod = gen_cluster(&mut snap, &nodes, pdb_allowed, &nominated, preemptor);
            let fw = framework(&mut snap);
            let pre = (!snap.pre_filter_reads_pods(&pod)).then(|| run_pre_filter(&fw, &snap, &pod));
            // These pods carry no terms: the columns path is open to them, with Fit among the Filters.
            proptest::prop_assert_eq!(columns_plan(&fw, &pod, pre.as_ref(), plan.reasons), Some(OnColumns { fit_in_row: true, ..plan }));
            cols.push((snap, pod, fw, pre));
        }
        for i in 0..nodes.len() {
            let node = NodeIdx(i as u32);
            let a = try_node(&fw_a, &mut plain, &pod_a, node, pre_a.as_ref(), None);
            let a = outcome(&plain, a);
            for (plan, (snap, pod, fw, pre)) in plans.iter().zip(cols.iter_mut()) {
                let b = try_node(fw, snap, pod, node, pre.as_ref(), Some(*plan));
                let mut b = outcome(snap, b);
                if !plan.reasons && b == Err(NotCandidate::Unfit) {
                    proptest::prop_assert!(matches!(a, Err(NotCandidate::StillUnfit(..))), "node{} {:?}", i, plan);
                    b = a.clone();
                }
                proptest::prop_assert_eq!(&a, &b, "node{} {:?}", i, plan);
                proptest::prop_assert_eq!(rows(&plain), rows(snap), "after node{} {:?}", i, plan);
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// The cycle that counts nominated pods on the request columns
    /// (`Engine::schedule_one_nominated_batched`) decides as the one that places them
    /// (`Engine::schedule_nominated_placed`): the same result, failures and evaluated nodes, over
    /// two cycles (the scan's start index moves), and every row as before.
    #[test]
    fn columns_nominated_cycle_matches_placed(
        nodes in proptest::collection::vec(
            (
                proptest::sample::select(vec![1000i64, 2000, 3000, 4000]),
                1i64..6,
                proptest::bool::weighted(0.2),
                proptest::collection::vec(
                    (
                        proptest::sample::select(vec![0i64, 200, 500, 900, 1500]),
                        0i32..5,
                        0i64..3,
                        0usize..2,
                        proptest::bool::weighted(0.1),
                    ),
                    0..5,
                ),
            ),
            1..5,
        ),
        nominated in proptest::collection::vec((0usize..4, 0i32..6, proptest::bool::weighted(0.1)), 0..4),
        preemptor in (proptest::sample::select(vec![0i64, 500, 1000, 2500, 4000]), 1i32..6),
        preemptor_nominated_to in proptest::option::of(0usize..4),
    ) {
        let build = |snap: &mut Snapshot| {
            let pod = gen_cluster(snap, &nodes, None, &nominated, preemptor);
            match preemptor_nominated_to {
                Some(n) => {
                    let sym = snap.interner.intern(&format!("node{}", n % nodes.len()));
                    let pod = PodInfo { nominated_node: Some(sym), ..pod };
                    snap.nominate(Arc::new(pod.clone()), sym);
                    pod
                }
                None => pod,
            }
        };
        let mut placed = Snapshot::new();
        let pod_a = build(&mut placed);
        let mut cols = Snapshot::new();
        let pod_b = build(&mut cols);
        let (fw_a, fw_b) = (framework(&mut placed), framework(&mut cols));
        let (mut engine_a, mut engine_b) = (Engine::new(1, 1, None), Engine::new(1, 1, None));
        for cycle in 0..2 {
            let a = engine_a.schedule_nominated_placed(&fw_a, &mut placed, &pod_a, None);
            let b = engine_b.schedule_one_nominated_batched(&fw_b, &mut cols, &pod_b, None);
            proptest::prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "cycle {}", cycle);
            proptest::prop_assert_eq!(rows(&placed), rows(&cols), "after cycle {}", cycle);
        }
    }
}

/// The Filters [`fit_local`] is held to the plain run with: node-only ones before and after
/// NodeResourcesFit.
fn framework_around_fit(snap: &mut Snapshot) -> Framework {
    let filters = ["TaintToleration", "NodeResourcesFit", "NodeUnschedulable", "InterPodAffinity"];
    crate::plugins::testutil::framework_with(snap, &["NodeResourcesFit", "InterPodAffinity"], &filters, &[NAME])
}

/// [`gen_cluster`] with unschedulable nodes (the flag beside each node) and the preemptor itself
/// nominated to node `own`, if any.
fn gen_cluster_local(
    snap: &mut Snapshot,
    nodes: &[(GenNode, bool)],
    nominated: &[(usize, i32, bool)],
    preemptor: (i64, i32),
    own: Option<usize>,
) -> PodInfo {
    for (i, ((cpu, slots, tainted, pods), unschedulable)) in nodes.iter().enumerate() {
        let name = format!("node{i}");
        let mut n =
            MakeNode::new(snap, &name).capacity(*cpu, 32 * GI).pods(*slots).label("kubernetes.io/hostname", &name);
        if *tainted {
            n = n.taint("dedicated", "x", crate::snapshot::TaintEffect::NoSchedule);
        }
        if *unschedulable {
            n = n.unschedulable();
        }
        n.add();
        for (j, &(pcpu, prio, start, app, port)) in pods.iter().enumerate() {
            let mut p = MakePod::new(snap, &format!("n{i}p{j}"))
                .req(pcpu, GI)
                .priority(prio)
                .start_time(start)
                .label("app", ["a", "b"][app]);
            if port {
                p = p.host_port("TCP", "", 8080 + j as i32);
            }
            p.place(&name);
        }
    }
    let pod = gen_cluster(snap, &[], None, &[], preemptor);
    for (k, &(node, prio, port)) in nominated.iter().enumerate() {
        let node = format!("node{}", node % nodes.len());
        let sym = snap.interner.intern(&node);
        let mut p = MakePod::new(snap, &format!("nominated{k}")).req(500, GI).priority(prio);
        if port {
            p = p.host_port("TCP", "", 9090);
        }
        let p = p.build();
        snap.nominate(Arc::new(PodInfo { nominated_node: Some(sym), ..p }), sym);
    }
    match own {
        Some(n) => {
            let sym = snap.interner.intern(&format!("node{}", n % nodes.len()));
            let pod = PodInfo { nominated_node: Some(sym), ..pod };
            snap.nominate(Arc::new(pod.clone()), sym);
            pod
        }
        None => pod,
    }
}

/// The dry run in locals on `node` (what the engine's diagnosis would say of it worked out here).
fn try_local(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    node: NodeIdx,
    pre: Option<&PreFiltered>,
    reasons: bool,
) -> Result<Candidate, NotCandidate> {
    let plan = columns_plan(fw, pod, pre, reasons);
    let lp = fit_local::LocalPlan::new(fw, snap, pod, pre, plan).expect("a plan in locals for plain pods");
    let Some(Ok((state, skip, _))) = pre else { unreachable!("the plan asks for a PreFilter that passed") };
    let fit = fw.plugins.iter().position(|p| p.name() == noderesources::FIT);
    let fit_rejected = crate::framework::runtime::filter_node(fw, CycleCx { snap, pod }, state, skip, node)
        .is_some_and(|(pid, _)| Some(pid) == fit);
    try_node_with(fw, snap, pod, node, pre, plan, Some((&lp, fit_rejected)))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// The dry run in locals (`fit_local`) gives every node the plain run's verdict (the same
    /// rejecting Filter and rejection), victims and order, and leaves every row (pod order
    /// included) as the plain run does; without reasons, a node the plain run finds unfit is
    /// `Unfit`. Nodes are tainted or unschedulable (Filters before and after Fit), nominated pods
    /// of any priority (the sums' rows or the walk), the preemptor nominated itself or not.
    #[test]
    fn fit_local_matches_plain(
        nodes in proptest::collection::vec(
            (
                (
                    proptest::sample::select(vec![1000i64, 2000, 3000, 4000]),
                    1i64..6,
                    proptest::bool::weighted(0.2),
                    proptest::collection::vec(
                        (
                            proptest::sample::select(vec![0i64, 200, 500, 900, 1500]),
                            0i32..5,
                            0i64..3,
                            0usize..2,
                            proptest::bool::weighted(0.05),
                        ),
                        0..6,
                    ),
                ),
                proptest::bool::weighted(0.15),
            ),
            1..6,
        ),
        nominated in proptest::collection::vec((0usize..5, 0i32..6, proptest::bool::weighted(0.05)), 0..4),
        preemptor in (proptest::sample::select(vec![0i64, 500, 1000, 2500, 4000, 5000]), 1i32..6),
        own in proptest::option::of(0usize..5),
    ) {
        let mut plain = Snapshot::new();
        let pod_a = gen_cluster_local(&mut plain, &nodes, &nominated, preemptor, own);
        let fw_a = framework_around_fit(&mut plain);
        let pre_a = (!plain.pre_filter_reads_pods(&pod_a)).then(|| run_pre_filter(&fw_a, &plain, &pod_a));
        let mut locals: Vec<(bool, Snapshot, PodInfo, Framework, Option<PreFiltered>)> = Vec::new();
        for reasons in [true, false] {
            let mut snap = Snapshot::new();
            let pod = gen_cluster_local(&mut snap, &nodes, &nominated, preemptor, own);
            let fw = framework_around_fit(&mut snap);
            let pre = (!snap.pre_filter_reads_pods(&pod)).then(|| run_pre_filter(&fw, &snap, &pod));
            locals.push((reasons, snap, pod, fw, pre));
        }
        for i in 0..nodes.len() {
            let node = NodeIdx(i as u32);
            let a = try_node(&fw_a, &mut plain, &pod_a, node, pre_a.as_ref(), None);
            let a = outcome(&plain, a);
            for (reasons, snap, pod, fw, pre) in locals.iter_mut() {
                let b = try_local(fw, snap, pod, node, pre.as_ref(), *reasons);
                let mut b = outcome(snap, b);
                if !*reasons && b == Err(NotCandidate::Unfit) {
                    proptest::prop_assert!(matches!(a, Err(NotCandidate::StillUnfit(..))), "node{}", i);
                    b = a.clone();
                }
                proptest::prop_assert_eq!(&a, &b, "node{} reasons {}", i, reasons);
                proptest::prop_assert_eq!(rows(&plain), rows(snap), "after node{} reasons {}", i, reasons);
            }
        }
    }
}

/// Why a node is not a candidate, as the dry run in locals reports it: NodeResourcesFit's reasons
/// in its order and its code (Unresolvable where the request exceeds the node), or the node-only
/// Filter that rejects first; the same as the plain run's. Each case: the node's CPU (milli), pod
/// slots, taint, unschedulable, its pods' (cpu, priority), the CPU of a nominated pod of priority
/// 5 there (0: none), the preemptor's CPU (priority 3), and the rejecting plugin with its reasons.
#[test]
fn fit_local_reasons_table() {
    use crate::framework::Code;
    type Case =
        (i64, i64, bool, bool, &'static [(i64, i32)], i64, i64, Option<(&'static str, Code, &'static [&'static str])>);
    let u = Code::Unschedulable;
    let cases: &[Case] = &[
        (2000, 4, false, false, &[(1000, 1), (1000, 1)], 0, 1500, None),
        (2000, 4, false, false, &[(1000, 5), (500, 1)], 0, 1500, Some(("NodeResourcesFit", u, &["Insufficient cpu"]))),
        (2000, 1, false, false, &[(0, 5), (0, 1)], 0, 0, Some(("NodeResourcesFit", u, &["Too many pods"]))),
        (
            2000,
            2,
            false,
            false,
            &[(1500, 5), (0, 5), (0, 1)],
            0,
            1000,
            Some(("NodeResourcesFit", u, &["Too many pods", "Insufficient cpu"])),
        ),
        (
            2000,
            4,
            false,
            false,
            &[(500, 1)],
            0,
            2500,
            Some(("NodeResourcesFit", Code::UnschedulableAndUnresolvable, &["Insufficient cpu"])),
        ),
        (2000, 4, false, false, &[(1000, 1)], 1000, 1500, Some(("NodeResourcesFit", u, &["Insufficient cpu"]))),
        (2000, 2, false, false, &[(500, 1)], 500, 500, None),
        (2000, 1, false, false, &[(500, 1)], 500, 500, Some(("NodeResourcesFit", u, &["Too many pods"]))),
        (
            2000,
            4,
            true,
            false,
            &[(1500, 1)],
            0,
            1000,
            Some(("TaintToleration", Code::UnschedulableAndUnresolvable, &[])),
        ),
        (
            2000,
            4,
            false,
            true,
            &[(1500, 1)],
            0,
            1000,
            Some(("NodeUnschedulable", Code::UnschedulableAndUnresolvable, &[])),
        ),
        (2000, 4, false, true, &[(1500, 5), (100, 1)], 0, 1000, Some(("NodeResourcesFit", u, &["Insufficient cpu"]))),
    ];
    for (k, &(cpu, slots, tainted, unschedulable, pods, nominated_cpu, pod_cpu, want)) in cases.iter().enumerate() {
        let build = |snap: &mut Snapshot| {
            let gen: Vec<(i64, i32, i64, usize, bool)> = pods.iter().map(|&(c, p)| (c, p, 0, 0, false)).collect();
            let node = ((cpu, slots, tainted, gen), unschedulable);
            let pod = gen_cluster_local(snap, &[node], &[], (pod_cpu, 3), None);
            if nominated_cpu > 0 {
                let sym = snap.interner.intern("node0");
                let p = MakePod::new(snap, "nominated").req(nominated_cpu, GI).priority(5).build();
                snap.nominate(Arc::new(PodInfo { nominated_node: Some(sym), ..p }), sym);
            }
            pod
        };
        let (mut plain, mut local) = (Snapshot::new(), Snapshot::new());
        let (pod_a, pod_b) = (build(&mut plain), build(&mut local));
        let (fw_a, fw_b) = (framework_around_fit(&mut plain), framework_around_fit(&mut local));
        let pre_a = run_pre_filter(&fw_a, &plain, &pod_a);
        let pre_b = run_pre_filter(&fw_b, &local, &pod_b);
        let a = try_node(&fw_a, &mut plain, &pod_a, NodeIdx(0), Some(&pre_a), None);
        let b = try_local(&fw_b, &mut local, &pod_b, NodeIdx(0), Some(&pre_b), true);
        let got = match &b {
            Ok(_) => None,
            Err(NotCandidate::StillUnfit(pid, r)) => {
                let (pid, r) = (*pid, *r);
                let state = CycleState::new();
                let reasons = fw_b.plugin(pid).reasons(CycleCx { snap: &local, pod: &pod_b }, &state, r);
                Some((fw_b.plugin(pid).name(), r.code, reasons))
            }
            Err(other) => panic!("case {k}: {other:?}"),
        };
        let want = want.map(|(name, code, reasons)| {
            let reasons: Vec<String> = if reasons.is_empty() {
                let Some((_, _, got)) = &got else { panic!("case {k}: expected a rejection") };
                got.clone()
            } else {
                reasons.iter().map(|s| s.to_string()).collect()
            };
            (name, code, reasons)
        });
        assert_eq!(got, want, "case {k}");
        assert_eq!(outcome(&plain, a), outcome(&local, b), "case {k}: the plain run");
    }
}

/// A preemption's outcome by name: the node, the victims, the PDB violations and the cleared
/// nominations, or why nothing is done.
/// Cleared nominations are named by their uid's distance from the preemptor's (two snapshots
/// built alike number their pods alike from different starts).
/// Every nominated pod's uid with its name, taken before a preemption clears some of them: uids
/// come from a process-wide counter that tests running beside this one also draw from, so two
/// snapshots built alike get different uids and only names compare.
fn nominated_names(snap: &Snapshot) -> ahash::AHashMap<PodUid, String> {
    snap.nominated.values().flatten().map(|p| (p.uid, p.name.clone())).collect()
}

fn preemption_outcome(
    snap: &Snapshot,
    names: &ahash::AHashMap<PodUid, String>,
    r: Result<(Preemption, Arc<PodInfo>), NoPreemption>,
) -> Result<(String, Vec<String>, usize, Vec<String>), NoPreemption> {
    r.map(|(p, _)| {
        let victims = p.victims.iter().map(|v| v.name.clone()).collect();
        let cleared =
            p.cleared_nominations.iter().map(|u| names.get(u).cloned().unwrap_or_else(|| format!("{u:?}"))).collect();
        (snap.interner.resolve(p.node).to_string(), victims, p.num_pdb_violations, cleared)
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// PostFilter ranking candidates in locals as it finds them (`best_in_locals`) nominates the
    /// node, evicts the victims and clears the nominations that building every candidate and
    /// picking one (`best_of_all`) does, from the same random offset, and leaves every row (pod
    /// order included) the same; each node's tally ranks as the plain run's candidate and its
    /// victims are the tail of the node's list. Few candidates wanted (the early stop), ties
    /// frequent (small priorities and start times), nominated pods of any priority.
    #[test]
    fn best_in_locals_matches_all(
        nodes in proptest::collection::vec(
            (
                (
                    proptest::sample::select(vec![1000i64, 2000, 3000, 4000]),
                    1i64..6,
                    proptest::bool::weighted(0.1),
                    proptest::collection::vec(
                        (
                            proptest::sample::select(vec![0i64, 200, 500, 900, 1500]),
                            0i32..4,
                            0i64..3,
                            0usize..2,
                            proptest::bool::weighted(0.03),
                        ),
                        0..6,
                    ),
                ),
                proptest::bool::weighted(0.1),
            ),
            1..9,
        ),
        nominated in proptest::collection::vec((0usize..8, 0i32..6, proptest::bool::weighted(0.05)), 0..4),
        preemptor in (proptest::sample::select(vec![500i64, 1000, 2500, 4000]), 2i32..6),
        own in proptest::option::of(0usize..8),
        absolute in 1i32..5,
        seed in 0u64..1000,
    ) {
        let plugin = DefaultPreemption { min_candidate_nodes_percentage: 10, min_candidate_nodes_absolute: absolute };
        let mut outcomes = Vec::new();
        for in_locals in [true, false] {
            let mut snap = Snapshot::new();
            let pod = gen_cluster_local(&mut snap, &nodes, &nominated, preemptor, own);
            let fw = framework_around_fit(&mut snap);
            let mut engine = Engine::new(1, 1, None);
            let CycleResult::Unschedulable(diag) = engine.schedule_one(&fw, &snap, &pod) else {
                return Ok(());
            };
            let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
            let names = nominated_names(&snap);
            let r = plugin.preempt_with(&fw, &mut snap, &pod, &diag, &mut rng, in_locals);
            let nominations: Vec<(String, Vec<String>)> = (0..snap.nodes.len())
                .map(|i| {
                    let name = snap.nodes.name[i];
                    let v = snap.nominated.get(&name).map_or(Vec::new(), |v| v.iter().map(|p| p.name.clone()).collect());
                    (snap.interner.resolve(name).to_string(), v)
                })
                .collect();
            outcomes.push((preemption_outcome(&snap, &names, r), rows(&snap), nominations));
        }
        proptest::prop_assert_eq!(&outcomes[0], &outcomes[1]);

        // Node by node: the tally against the plain run's candidate.
        let (mut plain, mut local) = (Snapshot::new(), Snapshot::new());
        let pod_a = gen_cluster_local(&mut plain, &nodes, &nominated, preemptor, own);
        let pod_b = gen_cluster_local(&mut local, &nodes, &nominated, preemptor, own);
        let (fw_a, fw_b) = (framework_around_fit(&mut plain), framework_around_fit(&mut local));
        let pre_a = (!plain.pre_filter_reads_pods(&pod_a)).then(|| run_pre_filter(&fw_a, &plain, &pod_a));
        let pre_b = (!local.pre_filter_reads_pods(&pod_b)).then(|| run_pre_filter(&fw_b, &local, &pod_b));
        let plan = columns_plan(&fw_b, &pod_b, pre_b.as_ref(), false);
        let Some(lp) = fit_local::LocalPlan::new(&fw_b, &local, &pod_b, pre_b.as_ref(), plan) else { return Ok(()) };
        let Some(Ok((state, skip, _))) = &pre_b else { unreachable!("a plan in locals has PreFilter's outcome") };
        let fit = fw_b.plugins.iter().position(|p| p.name() == noderesources::FIT);
        for i in 0..nodes.len() {
            let node = NodeIdx(i as u32);
            let fit_rejected = crate::framework::runtime::filter_node(&fw_b, CycleCx { snap: &local, pod: &pod_b }, state, skip, node)
                .is_some_and(|(pid, _)| Some(pid) == fit);
            let a = try_node(&fw_a, &mut plain, &pod_a, node, pre_a.as_ref(), None);
            let Some(b) = fit_local::reprieve_local(&fw_b, &mut local, &pod_b, node, state, &lp, fit_rejected) else {
                // Not in locals (a pod that is not plain): the plain run on both, in step.
                let b = try_node(&fw_b, &mut local, &pod_b, node, pre_b.as_ref(), None);
                proptest::prop_assert_eq!(outcome(&plain, a), outcome(&local, b), "node{}", i);
                continue;
            };
            match (&a, &b) {
                (Ok(c), Ok(t)) => {
                    proptest::prop_assert_eq!(rank(c), t.rank(), "node{}", i);
                    let tail = fit_local::tail_victims(&local, t);
                    proptest::prop_assert_eq!(outcome(&plain, Ok(c.clone())), outcome(&local, Ok(Candidate { node, victims: tail, num_pdb_violations: 0 })), "node{}", i);
                }
                (Err(_), Err(_)) => {}
                _ => proptest::prop_assert!(false, "node{}: {:?} against {:?}", i, a, b),
            }
            proptest::prop_assert_eq!(rows(&plain), rows(&local), "after node{}", i);
        }
    }
}

proptest::proptest! {
    /// PostFilter's walk over the potential nodes from an offset is `get` at every position
    /// from there, wrapping, for a diagnosis's failures (runs of a few rejections, Fit's among
    /// them) and for a list of nodes.
    #[test]
    fn potential_walk_is_get(
        failed in proptest::collection::vec((0u32..50, 0usize..3, 0u64..3), 0..60),
        offset in 0usize..200,
    ) {
        let failures: crate::framework::Failures = failed
            .iter()
            .map(|&(n, plugin, d)| crate::engine::NodeFailure { node: NodeIdx(n), plugin, reject: Reject::unschedulable(d) })
            .collect();
        let nodes: Vec<(NodeIdx, bool)> = failed.iter().map(|&(n, p, _)| (NodeIdx(n), p == 1)).collect();
        for potential in [Potential::Failures(&failures, 1), Potential::Nodes(nodes)] {
            let n = potential.len();
            let walked: Vec<(NodeIdx, bool)> = potential.iter_from(offset).collect();
            let got: Vec<(NodeIdx, bool)> = (0..n).map(|i| potential.get((offset + i) % n)).collect();
            proptest::prop_assert_eq!(walked, got);
        }
    }
}
