//! The data model of `report.json` (schema `schedperf.report/v1`, documented in
//! `docs/report-schema.md`). Field names are camelCase in JSON; units are last in names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::metrics::{Percentiles, Throughput};

/// The schema version written into every report.
pub const SCHEMA_VERSION: &str = "schedperf.report/v1";

/// A whole report: one `schedperf run` (or `compare`/`ab`) invocation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: String,
    pub tool: ToolInfo,
    /// The scheduler that produced the runs: `schedperf <version>`, or the oracle's
    /// `kube-scheduler v1.37.2 (in-process)` (empty in reports of older versions).
    #[serde(default)]
    pub engine: String,
    /// argv of the command that produced the report.
    pub command_line: Vec<String>,
    pub machine: Machine,
    /// Seconds since the Unix epoch when the report was written.
    pub created_unix_seconds: u64,
    /// The pinned upstream release the engine reproduces (absent in reports of older versions).
    #[serde(default)]
    pub upstream: Upstream,
    pub runs: Vec<RunReport>,
}

/// The `engine` of schedperf's own reports.
pub fn schedperf_engine() -> String {
    format!("schedperf {}", env!("CARGO_PKG_VERSION"))
}

/// The upstream release a report's decisions follow.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// The Kubernetes release, e.g. `v1.37.2` ([`crate::UPSTREAM_KUBERNETES`]).
    pub kubernetes: String,
}

impl Upstream {
    /// The release this build reproduces.
    pub fn pinned() -> Self {
        Upstream { kubernetes: crate::UPSTREAM_KUBERNETES.to_string() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    pub git_commit: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub attempts: u64,
    pub scheduled: u64,
    pub unschedulable: u64,
    pub errors: u64,
    pub preemptions: u64,
    pub preemption_victims: u64,
    pub bind_failures: u64,
    pub retries: u64,
    pub evictions: u64,
}

/// Every pod the run created, accounted for. `lost` must be 0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Accounting {
    pub created: u64,
    pub bound: u64,
    pub unschedulable: u64,
    pub deleted: u64,
    /// Pods still pending when the run ended that were never found unschedulable (gated, skipped waits).
    pub pending: u64,
    pub lost: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUtilization {
    pub mean: f64,
    pub stddev: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopologySkew {
    /// `topologyKey` and selector of the constraint, as text.
    pub constraint: String,
    pub max_skew: i64,
    pub worst_skew: i64,
}

/// Placement quality at the end of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PlacementQuality {
    /// Requested / allocatable per node, per resource (`cpu`, `memory`), as fractions 0..1.
    pub utilization: BTreeMap<String, ResourceUtilization>,
    pub nodes_used: u64,
    pub nodes_total: u64,
    /// Pods of the workload's largest shape that no longer fit on any node although the summed free
    /// capacity would hold them.
    pub fragmentation_pods: u64,
    pub topology_skew: Vec<TopologySkew>,
    pub pending_pods: u64,
    /// Per-node CPU utilization (0..1) in node order, for the utilization chart.
    pub node_cpu_utilization: Vec<f64>,
}

/// Time spent in one plugin at one extension point (sampled cycles only).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PluginTiming {
    pub plugin: String,
    pub extension_point: String,
    pub calls: u64,
    pub p50_micros: f64,
    pub p99_micros: f64,
    pub total_micros: f64,
}

/// Real-runtime figures (issue 7), present when `--agent cri`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CriReport {
    pub endpoints: Vec<String>,
    pub real_pods: u64,
    pub real_pods_running: u64,
    pub pod_startup_millis: Percentiles,
    pub pod_startup_stages_millis: BTreeMap<String, Percentiles>,
    pub cri_call_millis: BTreeMap<String, Percentiles>,
    pub cri_errors: BTreeMap<String, u64>,
    /// Real pods that failed (their start, or later: the runtime went away) or never reached
    /// Running; more than 0 makes `run` exit 4 (a runtime failure).
    #[serde(default)]
    pub real_pods_failed: u64,
    /// Why, by reason: each failed pod's message (shortened), or "never reached Running".
    #[serde(default)]
    pub failure_reasons: BTreeMap<String, u64>,
}

/// One workload repetition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub test_case: String,
    pub workload: String,
    pub labels: Vec<String>,
    pub seed: u64,
    pub threads: usize,
    /// Repetition index (0-based).
    pub rep: u32,
    /// Interleaved A/B pair index (`ab` and `compare` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair: Option<u32>,
    /// `base` / `cand` in `ab`, or the config label in `compare`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    pub config_source: String,
    pub config_digest: String,
    pub workload_digest: String,
    pub agent: String,
    pub virtual_time: bool,
    /// What one scheduling cycle costs in virtual time (present with `--virtual-time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_cycle_cost: Option<crate::clock::CycleCostModel>,
    pub feature_gates_ignored: Vec<String>,
    /// OpportunisticBatching's counters over the run (absent when the gate is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opportunistic_batching: Option<BatchingReport>,
    /// Gates the workload set away from their v1.37.2 default that the engine runs as set
    /// (`Name=value`; see `workload::gates::HONOURED`).
    #[serde(default)]
    pub feature_gates_honoured: Vec<String>,
    /// Whether the workload passed upstream's outcome checks (its waits for pods).
    #[serde(default)]
    pub outcome: Outcome,
    pub measured_pods: u64,
    pub scheduled_pods: u64,
    pub unschedulable_pods: u64,
    /// Measured time (from the first measured pod created to the last measured pod bound).
    pub duration_seconds: f64,
    pub wall_seconds: f64,
    pub cpu_seconds: f64,
    pub throughput: Throughput,
    /// Scheduling attempt duration over all attempts.
    pub attempt_latency_micros: Percentiles,
    /// By result: `scheduled`, `unschedulable`, `error`.
    pub attempt_latency_by_result_micros: BTreeMap<String, Percentiles>,
    /// Queued (created) to bound, over measured pods.
    pub e2e_latency_micros: Percentiles,
    /// Created to Running over measured pods (agent time: virtual in `--virtual-time`).
    pub pod_startup_millis: Percentiles,
    /// Created→scheduled, scheduled→bound, bound→running (and the CRI stages when real).
    pub pod_startup_stages_millis: BTreeMap<String, Percentiles>,
    pub extension_point_micros: BTreeMap<String, Percentiles>,
    pub plugin_timings: Vec<PluginTiming>,
    pub plugin_sample_percent: u32,
    pub counters: Counters,
    pub accounting: Accounting,
    /// Unschedulable pods' FitError reasons, counted.
    pub unschedulable_reasons: BTreeMap<String, u64>,
    pub cache_consistent: bool,
    pub cache_differences: Vec<String>,
    pub placement_quality: PlacementQuality,
    /// sha256 of the sorted pod→node map.
    pub placement_digest: String,
    /// The pod→node map itself, only when small (≤ 20,000 pods), for counting moved pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placements: Option<BTreeMap<String, String>>,
    pub peak_rss_bytes: u64,
    pub threshold: Option<f64>,
    pub threshold_metric: String,
    pub threshold_passed: Option<bool>,
    /// Serialized HdrHistograms (V2 format, base64), by metric name, to recompute any percentile.
    pub histograms: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cri: Option<CriReport>,
    /// The measured phase counted in instructions (`run --measure instructions`, issue 16). A run
    /// with this object ran under valgrind: its times are ~50x slow and are not gated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionsReport>,
}

/// What OpportunisticBatching did over a run (upstream's `scheduler_batch_attempts_total` and
/// `scheduler_batch_cache_flushed_total`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BatchingReport {
    /// Cycles that placed the pod on the previous cycle's next-best node without a full pass.
    pub hint_used: u64,
    /// Hints that no longer fit (a full cycle ran).
    pub hint_not_used: u64,
    /// Cycles that got no hint.
    pub no_hint: u64,
    /// Rankings given up, by upstream's reason label.
    pub flushed: BTreeMap<String, u64>,
}

/// The outcome checks of upstream's harness: a `createPods` op that waits for its pods, or a
/// barrier, fails the workload when some of the pods it waits for are not done. The run stops at
/// the failed op; the report still holds what ran until then.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub passed: bool,
    /// Why it failed (the op, how many pods, why); empty when it passed.
    pub message: String,
    /// The index of the op whose wait failed (0-based).
    pub failed_op: Option<u64>,
    /// Pods the failed wait waited for, and those of them not done (not bound, or not attempted
    /// for an `attempted` barrier).
    pub pods_waited_for: u64,
    pub pods_not_done: u64,
    /// The unschedulable reasons counted when the wait failed (as `unschedulableReasons`), most frequent first in `message`.
    pub reasons: BTreeMap<String, u64>,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            passed: true,
            message: String::new(),
            failed_op: None,
            pods_waited_for: 0,
            pods_not_done: 0,
            reasons: BTreeMap::new(),
        }
    }
}

/// Instructions executed by the measured phase (the scheduling cycles and PostFilter of the pods
/// created in the `collectMetrics` window), counted by valgrind's callgrind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InstructionsReport {
    /// `callgrind`.
    pub source: String,
    /// The counting tool's version (`valgrind-3.19.0`).
    pub tool: String,
    /// Instructions of the whole measured phase.
    pub total: u64,
    /// Measured scheduling attempts (calls of the measured cycle).
    pub attempts: u64,
    /// Measured pods scheduled (the divisor of `perScheduledPod`).
    pub scheduled_pods: u64,
    pub per_scheduled_pod: f64,
    pub per_attempt: f64,
    /// Inclusive instructions per plugin (all its extension points), over the measured phase.
    pub by_plugin: BTreeMap<String, u64>,
    /// Inclusive instructions per extension point (all plugins), over the measured phase.
    pub by_extension_point: BTreeMap<String, u64>,
    /// Inclusive instructions per `Plugin/ExtensionPoint`, over the measured phase.
    pub by_plugin_extension_point: BTreeMap<String, u64>,
}

/// What one repetition produced: the reports of the workloads that ran to the end, and the
/// workloads that failed (name, why), as upstream's harness would fail them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RepOutcome {
    pub runs: Vec<RunReport>,
    pub failures: Vec<(String, String)>,
}
