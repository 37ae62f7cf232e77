//! A realistic two-run report with fake but plausible numbers and real serialized histograms, for
//! the renderer and schema tests. The second run's workload name holds HTML/Markdown metacharacters,
//! it fails its threshold, loses pods, has an inconsistent cache and a CRI section.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::histogram;
use super::model::*;

/// A latency histogram of `n` log-normal-ish samples around `median` (same unit), and its percentiles.
fn latency(rng: &mut ChaCha8Rng, n: usize, median: f64, spread: f64) -> (Histogram<u64>, Percentiles) {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for _ in 0..n {
        // The sum of three uniforms approximates a normal; exp() of it is log-normal.
        let z: f64 = (0..3).map(|_| rng.gen::<f64>()).sum::<f64>() - 1.5;
        h.record((median * (z * spread).exp()).max(1.0) as u64).unwrap();
    }
    let p = crate::metrics::percentiles_of(&h, 1.0);
    (h, p)
}

fn plugin_timings(scale: f64) -> Vec<PluginTiming> {
    let rows: &[(&str, &str, f64, f64)] = &[
        ("NodeResourcesFit", "Filter", 0.9, 3.1),
        ("NodeResourcesFit", "Score", 1.4, 4.0),
        ("NodeResourcesBalancedAllocation", "Score", 1.2, 3.3),
        ("InterPodAffinity", "PreFilter", 6.5, 21.0),
        ("InterPodAffinity", "Filter", 2.2, 8.7),
        ("InterPodAffinity", "Score", 3.9, 12.5),
        ("PodTopologySpread", "Filter", 1.0, 3.9),
        ("PodTopologySpread", "Score", 1.1, 4.2),
        ("TaintToleration", "Filter", 0.2, 0.6),
        ("TaintToleration", "Score", 0.3, 0.8),
        ("NodeAffinity", "Filter", 0.2, 0.5),
        ("ImageLocality", "Score", 0.6, 1.7),
        ("DefaultBinder", "Bind", 0.4, 2.0),
    ];
    rows.iter()
        .map(|&(plugin, ep, p50, p99)| {
            let calls = 500;
            PluginTiming {
                plugin: plugin.to_string(),
                extension_point: ep.to_string(),
                calls,
                p50_micros: p50 * scale,
                p99_micros: p99 * scale,
                total_micros: p50 * scale * 1.15 * calls as f64,
            }
        })
        .collect()
}

fn stages(rng: &mut ChaCha8Rng, n: usize) -> BTreeMap<String, Percentiles> {
    let mut m = BTreeMap::new();
    m.insert("createdToScheduled".to_string(), latency(rng, n, 40.0, 1.0).1);
    m.insert("scheduledToBound".to_string(), latency(rng, n, 2.0, 0.6).1);
    m.insert("boundToRunning".to_string(), latency(rng, n, 900.0, 0.3).1);
    m
}

fn run(rng: &mut ChaCha8Rng, index: u32) -> RunReport {
    let basic = index == 0;
    let (pods, rate, nodes) = if basic { (5000u64, 9200.0, 5000usize) } else { (2000, 610.0, 500) };
    let samples: Vec<f64> = (0..12)
        .map(|i| {
            let warm = if i == 0 { 0.55 } else { 1.0 };
            rate * warm * (0.9 + 0.2 * rng.gen::<f64>())
        })
        .collect();
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| crate::metrics::nearest_rank(&sorted, q);
    let (attempt_h, attempt) = latency(rng, 4000, if basic { 95.0 } else { 1400.0 }, 1.2);
    let (e2e_h, e2e) = latency(rng, 4000, if basic { 4000.0 } else { 90_000.0 }, 1.5);
    let (startup_h, startup) = latency(rng, 4000, 1100.0, 0.4);
    let mut histograms = BTreeMap::new();
    histograms.insert(histogram::ATTEMPT_LATENCY_MICROS.to_string(), histogram::encode(&attempt_h));
    histograms.insert(histogram::E2E_LATENCY_MICROS.to_string(), histogram::encode(&e2e_h));
    histograms.insert(histogram::POD_STARTUP_MILLIS.to_string(), histogram::encode(&startup_h));
    let mut by_result = BTreeMap::new();
    by_result.insert("scheduled".to_string(), attempt);
    by_result.insert("unschedulable".to_string(), latency(rng, 40, 2500.0, 0.5).1);
    let mut extension_points = BTreeMap::new();
    for (ep, median) in [("PreFilter", 8.0), ("Filter", 30.0), ("Score", 40.0), ("Reserve", 0.5), ("Bind", 3.0)] {
        extension_points.insert(ep.to_string(), latency(rng, 2000, median, 0.8).1);
    }
    let node_cpu_utilization: Vec<f64> =
        (0..nodes).map(|_| (0.55 + 0.35 * (rng.gen::<f64>() - 0.5) * 2.0).clamp(0.0, 1.0)).collect();
    let mut utilization = BTreeMap::new();
    utilization.insert("cpu".to_string(), ResourceUtilization { mean: 0.552, stddev: 0.201, max: 0.9 });
    utilization.insert("memory".to_string(), ResourceUtilization { mean: 0.431, stddev: 0.152, max: 0.78 });
    let lost = if basic { 0 } else { 3 };
    let unschedulable = if basic { 0 } else { 40 };
    let threshold = if basic { 8000.0 } else { 700.0 };
    let average = pods as f64 / (pods as f64 / rate * 1.02);
    let mut unschedulable_reasons = BTreeMap::new();
    if !basic {
        unschedulable_reasons
            .insert("0/500 nodes are available: 500 node(s) didn't match pod affinity rules.".to_string(), 40);
    }
    RunReport {
        test_case: if basic { "SchedulingBasic" } else { "SchedulingPodAffinity" }.to_string(),
        workload: if basic { "5000Nodes" } else { "<script>&\"x\"" }.to_string(),
        labels: vec!["performance".to_string()],
        seed: 42,
        threads: 2,
        rep: index,
        pair: None,
        arm: None,
        config_source: "workloads/configs/default.yaml".to_string(),
        config_digest: "sha256:5f0c6f1d2a".to_string(),
        workload_digest: "sha256:9ab2e4c771".to_string(),
        agent: if basic { "sim" } else { "cri" }.to_string(),
        virtual_time: basic,
        virtual_cycle_cost: basic.then_some(crate::clock::CycleCostModel::DEFAULT),
        feature_gates_ignored: if basic { vec![] } else { vec!["SchedulerQueueingHints".to_string()] },
        opportunistic_batching: None,
        feature_gates_honoured: if basic { vec![] } else { vec!["SchedulerPopFromBackoffQ=false".to_string()] },
        outcome: crate::report::Outcome::default(),
        measured_pods: pods,
        scheduled_pods: pods - unschedulable,
        unschedulable_pods: unschedulable,
        duration_seconds: pods as f64 / average,
        wall_seconds: pods as f64 / average + 1.9,
        cpu_seconds: 2.0 * pods as f64 / average,
        throughput: Throughput {
            average,
            p50: at(0.5),
            p90: at(0.9),
            p95: at(0.95),
            p99: at(0.99),
            samples,
            interval_seconds: if basic { 0.05 } else { 0.25 },
        },
        attempt_latency_micros: attempt,
        attempt_latency_by_result_micros: by_result,
        e2e_latency_micros: e2e,
        pod_startup_millis: startup,
        pod_startup_stages_millis: stages(rng, 1000),
        extension_point_micros: extension_points,
        plugin_timings: plugin_timings(if basic { 1.0 } else { 14.0 }),
        plugin_sample_percent: 10,
        counters: Counters {
            attempts: pods + 2 * unschedulable,
            scheduled: pods - unschedulable,
            unschedulable,
            errors: 0,
            preemptions: if basic { 0 } else { 12 },
            preemption_victims: if basic { 0 } else { 30 },
            bind_failures: 0,
            retries: 2 * unschedulable,
            evictions: 0,
        },
        accounting: Accounting {
            created: pods + 1000,
            bound: pods + 1000 - unschedulable - lost,
            unschedulable,
            deleted: 0,
            pending: 0,
            lost,
        },
        unschedulable_reasons,
        cache_consistent: basic,
        cache_differences: if basic { vec![] } else { vec!["node-17: requested cpu 3500m != 3000m".to_string()] },
        placement_quality: PlacementQuality {
            utilization,
            nodes_used: nodes as u64 - 3,
            nodes_total: nodes as u64,
            fragmentation_pods: if basic { 0 } else { 6 },
            topology_skew: vec![TopologySkew {
                constraint: "topology.kubernetes.io/zone app=web".to_string(),
                max_skew: 1,
                worst_skew: if basic { 1 } else { 3 },
            }],
            pending_pods: unschedulable,
            node_cpu_utilization,
        },
        placement_digest: "sha256:0d1e2f3a4b5c".to_string(),
        placements: None,
        peak_rss_bytes: if basic { 412 } else { 96 } * 1024 * 1024,
        threshold: Some(threshold),
        threshold_metric: "SchedulingThroughput".to_string(),
        threshold_passed: Some(average >= threshold),
        histograms,
        cri: (!basic).then(|| {
            let mut calls = BTreeMap::new();
            calls.insert("RunPodSandbox".to_string(), latency(rng, 200, 180.0, 0.5).1);
            calls.insert("CreateContainer".to_string(), latency(rng, 200, 40.0, 0.5).1);
            calls.insert("StartContainer".to_string(), latency(rng, 200, 60.0, 0.5).1);
            let mut errors = BTreeMap::new();
            errors.insert("RunPodSandbox".to_string(), 2);
            CriReport {
                endpoints: vec!["unix:///run/containerd/containerd.sock".to_string()],
                real_pods: 200,
                real_pods_running: 198,
                pod_startup_millis: latency(rng, 200, 1200.0, 0.4).1,
                pod_startup_stages_millis: stages(rng, 200),
                cri_call_millis: calls,
                cri_errors: errors,
                real_pods_failed: 2,
                failure_reasons: BTreeMap::from([("RunPodSandbox: Unavailable: connection refused".to_string(), 2)]),
            }
        }),
        instructions: None,
    }
}

/// The sample report: run 0 is a clean `SchedulingBasic/5000Nodes` run that passes its threshold;
/// run 1 (`SchedulingPodAffinity/<script>&"x"`) fails it, loses 3 pods and has a CRI section.
pub fn sample_report() -> Report {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    Report {
        schema_version: SCHEMA_VERSION.to_string(),
        engine: crate::report::model::schedperf_engine(),
        upstream: crate::report::Upstream::pinned(),
        tool: ToolInfo {
            name: "schedperf".to_string(),
            version: "0.1.0".to_string(),
            git_commit: "892d690abcdef".to_string(),
        },
        command_line: vec![
            "schedperf".to_string(),
            "run".to_string(),
            "--workload".to_string(),
            "workloads/perf.yaml".to_string(),
            "--label".to_string(),
            "x <y> & 'z'".to_string(),
        ],
        machine: Machine {
            cpu_model: "AMD EPYC 7B13".to_string(),
            cores: 2,
            memory_bytes: 24 * 1024 * 1024 * 1024,
            kernel: "Linux 6.1.0".to_string(),
        },
        created_unix_seconds: 1_796_208_000,
        runs: vec![run(&mut rng, 0), run(&mut rng, 1)],
    }
}
