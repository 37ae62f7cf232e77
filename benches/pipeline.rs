//! A whole small run: `run_workload` of SchedulingBasic with 500 nodes and 2,000 pods (1,000 initial,
//! 1,000 measured) through the queue, the assume cache, the binder and the zero-latency simulated
//! agent, in virtual time and in wall time. Throughput is every pod the run schedules.
//!
//! Run: `cargo bench --bench pipeline` (see `benches/README.md`).

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schedperf::agent::sim::SimConfig;
use schedperf::runner::{run_workload, AgentSpec, RunOptions};
use schedperf::workload::{load_workload_file, resolve, ParamValue, ResolvedWorkload};

const NODES: i64 = 500;
const INIT_PODS: i64 = 1000;
const MEASURE_PODS: i64 = 1000;

/// SchedulingBasic from `workloads/misc/performance-config.yaml` with 500 nodes, 1,000 initial and
/// 1,000 measured pods.
fn workload() -> ResolvedWorkload {
    let path = common::repo_root().join("workloads/misc/performance-config.yaml");
    let cases = load_workload_file(&path).expect("workload file loads");
    let tc = cases.iter().find(|t| t.name == "SchedulingBasic").expect("SchedulingBasic exists");
    let mut w = tc.workloads.iter().find(|w| w.name == "500Nodes").expect("SchedulingBasic/500Nodes exists").clone();
    w.name = "500Nodes_2000Pods".into();
    w.params.insert("initNodes".into(), ParamValue::Int(NODES));
    w.params.insert("initPods".into(), ParamValue::Int(INIT_PODS));
    w.params.insert("measurePods".into(), ParamValue::Int(MEASURE_PODS));
    resolve(tc, &w).expect("workload resolves")
}

fn pipeline(c: &mut Criterion) {
    let w = workload();
    let pods = (INIT_PODS + MEASURE_PODS) as u64;
    let mut g = c.benchmark_group("pipeline_500nodes_2000pods");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(pods));
    for (name, virtual_time) in [("virtual_time", true), ("wall_time", false)] {
        let opts = RunOptions {
            virtual_time,
            agent: AgentSpec::Sim(SimConfig::zero_latency()),
            progress: false,
            ..RunOptions::default()
        };
        let report = run_workload(&w, &opts).expect("run succeeds");
        assert_eq!(report.measured_pods, MEASURE_PODS as u64, "{name}: measured pods");
        assert_eq!(report.scheduled_pods, report.measured_pods, "{name}: every measured pod is scheduled");
        g.bench_function(name, |b| b.iter(|| black_box(run_workload(black_box(&w), &opts).expect("run succeeds"))));
    }
    g.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
