//! One scheduling cycle (`Engine::schedule_one`) on SchedulingBasic clusters with the default
//! profile, and the thread-count sweep that locates where the parallel filter pass pays.
//!
//! Run: `cargo bench --bench cycle` (see `benches/README.md`). Iterations never change the
//! snapshot; only the engine's rotating start index advances, as it does between real cycles.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use schedperf::engine::{CycleResult, Engine};
use schedperf::framework::{CycleCx, CycleState, Framework};
use schedperf::snapshot::{PodInfo, Snapshot};

const SEED: u64 = 1;
/// Node counts of the thread sweep (`percentageOfNodesToScore: 100`, so every node is evaluated).
const SWEEP_NODES: &[usize] = &[500, 1000, 2000, 5000, 10_000];
/// Existing pods per node in the sweep: SchedulingBasic's 1,000 pods on 5,000 nodes.
const SWEEP_PODS_PER_NODE_INV: usize = 5;

/// Runs one cycle and returns the number of nodes it evaluated; panics unless the pod fits.
fn evaluated(engine: &mut Engine, fw: &Framework, snap: &Snapshot, pod: &PodInfo) -> usize {
    match engine.schedule_one(fw, snap, pod) {
        CycleResult::Scheduled { evaluated_nodes, .. } => evaluated_nodes,
        other => panic!("the bench pod must fit: {other:?}"),
    }
}

/// SchedulingBasic 5000Nodes: one cycle for a 100m/500Mi pod, adaptive sampling (500 of 5,000
/// nodes evaluated). `per_pod` is the cycle time; `per_node` the same cycle per node evaluated.
fn cycle_5000(c: &mut Criterion) {
    let common::Cluster { mut snap, pod, .. } = common::cluster(5000, 1000, false);
    let fw = common::framework(&mut snap, &common::bench_profile());
    let mut engine = Engine::new(SEED, 1, None);
    let n_eval = evaluated(&mut engine, &fw, &snap, &pod);
    assert_eq!(n_eval, 500, "adaptive sampling evaluates 10 % of 5,000 nodes");
    let mut g = c.benchmark_group("cycle_5000nodes");
    g.bench_function("per_pod", |b| b.iter(|| black_box(engine.schedule_one(&fw, &snap, black_box(&pod)))));
    g.throughput(Throughput::Elements(n_eval as u64));
    g.bench_function("per_node", |b| b.iter(|| black_box(engine.schedule_one(&fw, &snap, black_box(&pod)))));
    g.finish();
}

/// The engine as it runs: `percentageOfNodesToScore: 100`, threads 1 and 2. Below
/// `PARALLEL_MIN_FILTER_NODES` (and `PARALLEL_MIN_SCORE_NODES`) the engine stays serial even with
/// 2 threads, so the two lines coincide there by construction.
fn sweep_cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("sweep_cycle_pct100");
    for &n in SWEEP_NODES {
        let common::Cluster { mut snap, pod, .. } = common::cluster(n, n / SWEEP_PODS_PER_NODE_INV, false);
        let fw = common::framework(&mut snap, &common::bench_profile());
        g.throughput(Throughput::Elements(n as u64));
        for threads in [1, 2] {
            let mut engine = Engine::new(SEED, threads, Some(100));
            assert_eq!(evaluated(&mut engine, &fw, &snap, &pod), n, "pct 100 evaluates every node");
            g.bench_with_input(BenchmarkId::new(format!("threads{threads}"), n), &n, |b, _| {
                b.iter(|| black_box(engine.schedule_one(&fw, &snap, black_box(&pod))))
            });
        }
    }
    g.finish();
}

/// Node counts of the filter-pass sweep: below and above `PARALLEL_MIN_FILTER_NODES` (16,384),
/// where `Engine::find_feasible` with a 2-thread pool goes parallel.
const FILTER_SWEEP_NODES: &[usize] = &[5000, 20_000, 50_000];

/// The filter pass as the engine runs it, `Engine::find_feasible` over every node (k = n, from
/// start index 0), with 1 and 2 engine threads: one chunk on this thread below
/// `PARALLEL_MIN_FILTER_NODES` nodes wanted, waves of one contiguous chunk per thread from there
/// (so at 5,000 nodes the two lines coincide by construction).
fn sweep_filter(c: &mut Criterion) {
    let mut g = c.benchmark_group("sweep_find_feasible");
    for &n in FILTER_SWEEP_NODES {
        let common::Cluster { mut snap, pod, .. } = common::cluster(n, n / SWEEP_PODS_PER_NODE_INV, false);
        let fw = common::framework(&mut snap, &common::bench_profile());
        let cx = CycleCx { snap: &snap, pod: &pod };
        let mut state = CycleState::new();
        let (skip, _, _) = Engine::run_pre_filter(&fw, cx, &mut state).expect("pre-filter passes");
        g.throughput(Throughput::Elements(n as u64));
        for threads in [1, 2] {
            let engine = Engine::new(SEED, threads, Some(100));
            let (feasible, _) = engine.find_feasible(&fw, cx, &state, &skip, None, n, 0, n);
            assert_eq!(feasible.len(), n, "every node is feasible");
            g.bench_with_input(BenchmarkId::new(format!("threads{threads}"), n), &n, |b, _| {
                b.iter(|| black_box(engine.find_feasible(&fw, cx, &state, &skip, None, n, 0, n)))
            });
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = cycle_5000, sweep_cycle, sweep_filter
}
criterion_main!(benches);
