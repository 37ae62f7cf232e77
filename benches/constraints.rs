//! One scheduling cycle at 5,000 nodes (3 zones, 4 CPU / 32Gi / 110 pods each, thousands of
//! existing matching pods) with the default profile, for the constraint plugins:
//! a required anti-affinity pod on hostname, a required affinity pod on zone, a DoNotSchedule
//! spread pod (zone, maxSkew 5), and a preempting pod (failed cycle + PostFilter).
//!
//! Run: `cargo bench --bench constraints`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use schedperf::agent::PodUid;
use schedperf::config::SchedulerConfig;
use schedperf::engine::{CycleResult, Engine};
use schedperf::framework::Framework;
use schedperf::plugins::CompiledArgs;
use schedperf::snapshot::{
    AffinityTerm, LabelSelector, NamespaceSet, NodeSpec, PodConstraints, PodInfo, PreemptionPolicy, Resources,
    Snapshot, SpreadConstraint, Sym, WhenUnsatisfiable,
};

const NODES: usize = 5000;
const EXISTING: usize = 3000;
const GI: i64 = 1024 * 1024 * 1024;

fn cluster() -> Snapshot {
    let mut snap = Snapshot::new();
    let (host, zone) = (snap.wk.hostname_key, snap.wk.zone_key);
    for i in 0..NODES {
        let name = snap.interner.intern(&format!("node-{i}"));
        let z = snap.interner.intern(&format!("zone-{}", i % 3));
        let mut labels = vec![(host, name), (zone, z)];
        labels.sort();
        let spec = NodeSpec {
            name,
            labels,
            allocatable: Resources { cpu_milli: 4000, memory: 32 * GI, ..Default::default() },
            allowed_pod_number: 110,
            ..Default::default()
        };
        snap.add_node(&spec).unwrap();
    }
    snap
}

fn pod(snap: &mut Snapshot, uid: u64, app: &str, cpu_milli: i64, priority: i32) -> PodInfo {
    let (k, v) = (snap.interner.intern("app"), snap.interner.intern(app));
    PodInfo {
        uid: PodUid(uid),
        namespace: snap.wk.default_namespace,
        name: format!("{app}-{uid}"),
        labels: vec![(k, v)],
        node_name: None,
        requests: Resources { cpu_milli, memory: GI / 4, ..Default::default() },
        non_zero_cpu_milli: cpu_milli,
        non_zero_memory: GI / 4,
        fit_score_cpu_milli: cpu_milli,
        fit_score_memory: GI / 4,
        node_selector: Vec::new(),
        required_affinity: None,
        preferred_affinity: Vec::new(),
        preferred_affinity_set: false,
        tolerations: Vec::new(),
        host_ports: Vec::new(),
        images: Vec::new(),
        container_count: 1,
        priority,
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        scheduler_name: snap.wk.default_scheduler,
        scheduling_gates: Vec::new(),
        terminating: false,
        host_network: false,
        nominated_node: None,
        constraints: PodConstraints { start_time_ms: uid as i64, ..Default::default() },
        sign: Default::default(),
        volumes: None,
        claims: None,
        feature_facts: Default::default(),
    }
}

fn app_selector(snap: &mut Snapshot, app: &str) -> LabelSelector {
    let (k, v) = (snap.interner.intern("app"), snap.interner.intern(app));
    LabelSelector::new(&[(k, v)], vec![])
}

fn term(snap: &mut Snapshot, app: &str, key: Sym) -> AffinityTerm {
    let sel = app_selector(snap, app);
    AffinityTerm::new(NamespaceSet::only(snap.wk.default_namespace), sel, key)
}

fn node(snap: &Snapshot, i: usize) -> Sym {
    snap.interner.get(&format!("node-{i}")).unwrap()
}

fn framework(snap: &mut Snapshot) -> (Framework, schedperf::config::Profile) {
    let profile = SchedulerConfig::defaults().profiles[0].clone();
    let fw = schedperf::plugins::build_framework(&profile, &CompiledArgs::default(), &mut snap.interner).unwrap();
    (fw, profile)
}

fn run_cycle(c: &mut Criterion, name: &str, snap: &Snapshot, fw: &Framework, p: &PodInfo) {
    let mut engine = Engine::new(7, 1, None);
    assert!(matches!(engine.schedule_one(fw, snap, p), CycleResult::Scheduled { .. }), "{name} schedules");
    c.bench_function(name, |b| b.iter(|| engine.schedule_one(fw, snap, p)));
}

fn benches(c: &mut Criterion) {
    // Required anti-affinity on hostname: 3,000 pods that repel each other, one per node.
    {
        let mut snap = cluster();
        let host = snap.wk.hostname_key;
        for i in 0..EXISTING {
            let mut p = pod(&mut snap, i as u64 + 1, "anti", 100, 0);
            p.constraints.affinity.required_anti_affinity.push(term(&mut snap, "anti", host));
            let n = node(&snap, i);
            snap.place_pod(Arc::new(p), n).unwrap();
        }
        let mut p = pod(&mut snap, 1_000_000, "anti", 100, 0);
        p.constraints.affinity.required_anti_affinity.push(term(&mut snap, "anti", host));
        snap.prepare_pod(&p);
        let (fw, _) = framework(&mut snap);
        run_cycle(c, "cycle/anti_affinity_hostname", &snap, &fw, &p);
    }
    // Required affinity on zone: 3,000 matching pods spread over the nodes.
    {
        let mut snap = cluster();
        let zone = snap.wk.zone_key;
        for i in 0..EXISTING {
            let p = pod(&mut snap, i as u64 + 1, "aff", 100, 0);
            let n = node(&snap, (i * 7) % NODES);
            snap.place_pod(Arc::new(p), n).unwrap();
        }
        let mut p = pod(&mut snap, 1_000_000, "aff", 100, 0);
        p.constraints.affinity.required_affinity.push(term(&mut snap, "aff", zone));
        snap.prepare_pod(&p);
        let (fw, _) = framework(&mut snap);
        run_cycle(c, "cycle/affinity_zone", &snap, &fw, &p);
    }
    // DoNotSchedule spread on zone, maxSkew 5: 3,000 matching pods that carry the constraint.
    {
        let mut snap = cluster();
        let zone = snap.wk.zone_key;
        let sel = app_selector(&mut snap, "spread");
        let c5 = SpreadConstraint::new(5, zone, WhenUnsatisfiable::DoNotSchedule, sel);
        for i in 0..EXISTING {
            let mut p = pod(&mut snap, i as u64 + 1, "spread", 100, 0);
            p.constraints.topology_spread.push(c5.clone());
            let n = node(&snap, (i * 13) % NODES);
            snap.place_pod(Arc::new(p), n).unwrap();
        }
        let mut p = pod(&mut snap, 1_000_000, "spread", 100, 0);
        p.constraints.topology_spread.push(c5);
        snap.prepare_pod(&p);
        let (fw, _) = framework(&mut snap);
        run_cycle(c, "cycle/spread_zone", &snap, &fw, &p);
    }
    // Preemption: every node full of 4 x 1000m priority-0 pods; a 1000m priority-100 pod.
    {
        let mut snap = cluster();
        let mut uid = 1;
        for i in 0..NODES {
            for _ in 0..4 {
                let p = pod(&mut snap, uid, "low", 1000, 0);
                uid += 1;
                let n = node(&snap, i);
                snap.place_pod(Arc::new(p), n).unwrap();
            }
        }
        let p = pod(&mut snap, 1_000_000, "high", 1000, 100);
        let (fw, _profile) = framework(&mut snap);
        let mut engine = Engine::new(7, 1, None);
        c.bench_function("cycle/preemption", |b| {
            b.iter_batched(
                || (),
                |_| {
                    let diag = match engine.schedule_one(&fw, &snap, &p) {
                        CycleResult::Unschedulable(d) => d,
                        other => panic!("{other:?}"),
                    };
                    let pre = engine.post_filter(&fw, &mut snap, &p, &diag).unwrap();
                    assert_eq!(pre.victims.len(), 1);
                    snap.clear_nominations();
                },
                BatchSize::SmallInput,
            )
        });
    }
}

criterion_group! {
    name = constraints;
    config = Criterion::default().sample_size(20);
    targets = benches
}
criterion_main!(constraints);
