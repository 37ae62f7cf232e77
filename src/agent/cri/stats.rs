//! What the CRI agent measured: per-RPC latency histograms, errors by gRPC code, per-pod stages.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::agent::PodUid;

use super::client::Rpc;

/// The largest latency a histogram holds exactly: ten minutes, in microseconds. Longer values are
/// clamped to it.
pub const HISTOGRAM_MAX_US: u64 = 600_000_000;

/// Significant decimal digits kept by every histogram.
const HISTOGRAM_DIGITS: u8 = 3;

/// A new latency histogram in microseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, HISTOGRAM_DIGITS).expect("constant histogram bounds are valid")
}

/// The stages of one pod, in microseconds since its bind was accepted (`Bound`), measured with the
/// agent's clock; and the time spent in its CRI calls, measured with the wall clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodTimings {
    /// The endpoint (index into the configured endpoints) that runs the pod.
    pub endpoint: usize,
    /// When the bind was accepted, on the agent's clock.
    pub bound_at_nanos: u64,
    pub sandbox_ready_us: Option<u64>,
    pub containers_started_us: Option<u64>,
    pub running_us: Option<u64>,
    pub failed_us: Option<u64>,
    /// RunPodSandbox alone.
    pub run_pod_sandbox_us: Option<u64>,
    /// CreateContainer, summed over the pod's containers (init containers included).
    pub create_containers_us: u64,
    /// StartContainer, summed over the pod's containers (init containers included).
    pub start_containers_us: u64,
    /// From the first init container's CreateContainer until the last one exited (or the last
    /// sidecar ran).
    pub init_containers_us: Option<u64>,
    /// The whole teardown of a `delete` (stop and remove containers and sandbox).
    pub teardown_us: Option<u64>,
    /// Why the pod failed (the message of its `Failed` event), when it did.
    pub failure: Option<String>,
}

/// A snapshot of everything the agent measured so far.
#[derive(Clone, Debug)]
pub struct CriStats {
    /// Latency of every CRI call by RPC name (`RunPodSandbox`, ...), in microseconds, successful
    /// or not.
    pub call_micros: BTreeMap<String, Histogram<u64>>,
    /// Failed calls by gRPC code name (`Unavailable`, `NotFound`, `DeadlineExceeded`, ...).
    pub errors_by_code: BTreeMap<String, u64>,
    /// Failed calls by `RPC/Code`, such as `RunPodSandbox/Unknown`.
    pub errors_by_rpc: BTreeMap<String, u64>,
    /// Bind accepted to `Running`, in microseconds, over all pods that reached Running.
    pub pod_running_micros: Histogram<u64>,
    /// Every pod bound in this run.
    pub pods: BTreeMap<PodUid, PodTimings>,
}

impl Default for CriStats {
    fn default() -> Self {
        CriStats {
            call_micros: BTreeMap::new(),
            errors_by_code: BTreeMap::new(),
            errors_by_rpc: BTreeMap::new(),
            pod_running_micros: new_histogram(),
            pods: BTreeMap::new(),
        }
    }
}

/// Microseconds in `d`, saturating.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The shared, locked recorder behind [`CriStats`]. The lock is held for a few map operations and
/// never across an await.
#[derive(Debug, Default)]
pub struct StatsRecorder {
    stats: Mutex<CriStats>,
}

/// A stage of a pod's start, for [`StatsRecorder::pod_stage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    SandboxReady,
    ContainersStarted,
    Running,
    Failed,
}

impl StatsRecorder {
    fn lock(&self) -> std::sync::MutexGuard<'_, CriStats> {
        self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn snapshot(&self) -> CriStats {
        self.lock().clone()
    }

    /// Records one call's latency and, when it failed, its gRPC code.
    pub fn record_call(&self, rpc: Rpc, elapsed: Duration, error: Option<tonic::Code>) {
        let mut s = self.lock();
        s.call_micros
            .entry(rpc.name().to_string())
            .or_insert_with(new_histogram)
            .saturating_record(micros(elapsed).max(1));
        if let Some(code) = error {
            let name = code_name(code);
            *s.errors_by_rpc.entry(format!("{}/{name}", rpc.name())).or_default() += 1;
            *s.errors_by_code.entry(name).or_default() += 1;
        }
    }

    pub fn pod_bound(&self, uid: PodUid, endpoint: usize, at_nanos: u64) {
        self.lock().pods.insert(uid, PodTimings { endpoint, bound_at_nanos: at_nanos, ..PodTimings::default() });
    }

    /// Records that `uid` reached `stage` at `at_nanos` (agent clock).
    pub fn pod_stage(&self, uid: PodUid, stage: Stage, at_nanos: u64) {
        let mut s = self.lock();
        let Some(p) = s.pods.get_mut(&uid) else {
            return;
        };
        let since_us = at_nanos.saturating_sub(p.bound_at_nanos) / 1_000;
        let slot = match stage {
            Stage::SandboxReady => &mut p.sandbox_ready_us,
            Stage::ContainersStarted => &mut p.containers_started_us,
            Stage::Running => &mut p.running_us,
            Stage::Failed => &mut p.failed_us,
        };
        *slot = Some(since_us);
        if stage == Stage::Running {
            s.pod_running_micros.saturating_record(since_us.max(1));
        }
    }

    /// Applies `f` to the timings of `uid`, if it is known.
    pub fn pod_update(&self, uid: PodUid, f: impl FnOnce(&mut PodTimings)) {
        if let Some(p) = self.lock().pods.get_mut(&uid) {
            f(p);
        }
    }
}

/// The name of a gRPC code as the gRPC spec spells it in CamelCase (`DeadlineExceeded`).
pub fn code_name(code: tonic::Code) -> String {
    format!("{code:?}")
}
