//! The passes of a cycle alone: the filter pass, the score pass, one cycle per plugin set, and the
//! streaming floor (summing the columns a cycle reads) to compare them with.
//!
//! Run: `cargo bench --bench kernels` (see `benches/README.md`).

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use schedperf::engine::cycle::filter_nodes;
use schedperf::engine::{CycleResult, Engine};
use schedperf::framework::{CycleCx, CycleState};

const SEED: u64 = 1;
const NODES: usize = 5000;
const EXISTING_PODS: usize = 1000;

/// The default filter plugins over all 5,000 nodes: through `Engine::find_feasible` (blocks, k =
/// every node) and through one `filter_nodes` call.
fn filter(c: &mut Criterion) {
    let common::Cluster { mut snap, pod, .. } = common::cluster(NODES, EXISTING_PODS, false);
    let fw = common::framework(&mut snap, &common::bench_profile());
    let engine = Engine::new(SEED, 1, Some(100));
    let cx = CycleCx { snap: &snap, pod: &pod };
    let mut state = CycleState::new();
    let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("pre-filter passes");
    let nodes = common::all_nodes(&snap);
    let (feasible, _) = engine.find_feasible(&fw, cx, &state, &skip, None, NODES, 0, NODES);
    assert_eq!(feasible.len(), NODES, "every node is feasible");
    let mut g = c.benchmark_group("filter");
    g.throughput(Throughput::Elements(NODES as u64));
    g.bench_function(BenchmarkId::new("find_feasible", NODES), |b| {
        b.iter(|| black_box(engine.find_feasible(&fw, cx, &state, &skip, None, NODES, 0, NODES)))
    });
    let mut verdicts = Vec::with_capacity(NODES);
    g.bench_function(BenchmarkId::new("filter_nodes", NODES), |b| {
        b.iter(|| {
            filter_nodes(&fw, cx, &state, &skip, black_box(&nodes), &mut verdicts);
            black_box(&verdicts);
        })
    });
    g.finish();
}

/// PreScore, Score and NormalizeScore of the default score plugins over 500 and 5,000 feasible
/// nodes (500 is what adaptive sampling hands over at 5,000 nodes).
fn score(c: &mut Criterion) {
    let common::Cluster { mut snap, pod, .. } = common::cluster(NODES, EXISTING_PODS, false);
    let fw = common::framework(&mut snap, &common::bench_profile());
    let engine = Engine::new(SEED, 1, None);
    let cx = CycleCx { snap: &snap, pod: &pod };
    let mut state = CycleState::new();
    Engine::run_pre_filter(&fw, cx, &mut state).expect("pre-filter passes");
    let nodes = common::all_nodes(&snap);
    let mut g = c.benchmark_group("score");
    for m in [500, NODES] {
        let feasible = &nodes[..m];
        engine.score(&fw, cx, &mut state, feasible, false).expect("scores are valid");
        g.throughput(Throughput::Elements(m as u64));
        g.bench_with_input(BenchmarkId::from_parameter(m), &m, |b, _| {
            b.iter(|| black_box(engine.score(&fw, cx, &mut state, black_box(feasible), false)))
        });
    }
    g.finish();
}

/// One cycle (5,000 nodes, adaptive sampling) per plugin set, all for the same pod, which has a
/// nodeSelector every node satisfies: (a) NodeResourcesFit only, (b) + TaintToleration +
/// NodeAffinity, (c) the default set. The same 500 nodes are evaluated in each.
fn plugin_set(c: &mut Criterion) {
    let common::Cluster { mut snap, selector_pod: pod, .. } = common::cluster(NODES, EXISTING_PODS, true);
    let default = common::bench_profile();
    let sets = [
        ("a_fit", common::only_plugins(default.clone(), &["NodeResourcesFit"])),
        (
            "b_fit_taint_affinity",
            common::only_plugins(default.clone(), &["NodeResourcesFit", "TaintToleration", "NodeAffinity"]),
        ),
        ("c_default", default),
    ];
    let mut g = c.benchmark_group("plugin_set");
    for (name, profile) in sets {
        let fw = common::framework(&mut snap, &profile);
        let mut engine = Engine::new(SEED, 1, None);
        match engine.schedule_one(&fw, &snap, &pod) {
            CycleResult::Scheduled { evaluated_nodes, .. } => {
                assert_eq!(evaluated_nodes, 500, "{name}: adaptive sampling evaluates 500 nodes")
            }
            other => panic!("{name}: the bench pod must fit: {other:?}"),
        }
        g.throughput(Throughput::Elements(500));
        g.bench_function(name, |b| b.iter(|| black_box(engine.schedule_one(&fw, &snap, black_box(&pod)))));
    }
    g.finish();
}

/// Sums the four `i64` columns NodeResourcesFit reads (allocatable and requested CPU and memory)
/// over the first `m` rows: the cost of merely streaming a cycle's main inputs.
fn sum4(cols: [&[i64]; 4], m: usize) -> i64 {
    let [a, b, c, d] = cols;
    a[..m].iter().zip(&b[..m]).zip(&c[..m]).zip(&d[..m]).map(|(((a, b), c), d)| a + b + c + d).sum()
}

/// The streaming floor over 500 and 5,000 nodes.
fn floor(c: &mut Criterion) {
    let common::Cluster { snap, .. } = common::cluster(NODES, EXISTING_PODS, false);
    let t = &snap.nodes;
    let cols = [&t.alloc_cpu_milli[..], &t.alloc_memory[..], &t.req_cpu_milli[..], &t.req_memory[..]];
    let mut g = c.benchmark_group("floor");
    for m in [500, NODES] {
        g.throughput(Throughput::Elements(m as u64));
        g.bench_with_input(BenchmarkId::new("sum4", m), &m, |b, &m| b.iter(|| black_box(sum4(black_box(cols), m))));
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = filter, score, plugin_set, floor
}
criterion_main!(benches);
