//! `schedperf run`: executes a scheduler_perf workload against the engine, a scheduling queue, the
//! assume cache, the binder and a node agent, and measures everything.
//!
//! One driver thread owns the snapshot, the queue and the engine (the scheduling thread). Binding
//! runs on binder threads in wall-clock mode; in virtual time it runs inline and the clock moves by
//! a fixed cost per cycle (`clock::CycleCostModel`), so that seeded runs replay exactly on any
//! machine (the simulated agent draws each pod's delays from its own seeded stream).

pub(crate) mod batching;
pub mod cli;
mod consistency;
pub mod cri;
pub mod driver;
#[cfg(test)]
mod extension_point_tests;
#[cfg(test)]
mod gate_tests;
#[cfg(test)]
mod hint_run_tests;
#[cfg(test)]
mod ndf_run_tests;
pub mod objects;
#[cfg(test)]
mod podgroup_tests;
pub mod quality;

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::Sender;

use crate::agent::sim::SimConfig;
use crate::agent::{AgentEvent, NodeAgent};
use crate::clock::Clock;
use crate::error::InputError;
use crate::ids::PodUid;
use crate::report::CriReport;

pub use driver::run_workload;

/// Builds a node agent that sends its events on the given channel, stamped by the given clock.
pub type AgentFactory =
    Arc<dyn Fn(Sender<AgentEvent>, Arc<dyn Clock>) -> Result<Arc<dyn NodeAgent>, String> + Send + Sync>;

/// A pod's times as the run driver recorded them, on the run clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodTimes {
    pub created_nanos: u64,
    /// When the scheduler assumed the pod on its node (the last time, after retries).
    pub scheduled_nanos: Option<u64>,
    pub bound_nanos: Option<u64>,
    /// Created inside the measurement window.
    pub measured: bool,
}

/// Looks up the driver's times of a pod by uid (`None`: not a pod of this run).
pub type PodTimesLookup<'a> = &'a dyn Fn(PodUid) -> Option<PodTimes>;

/// Builds an agent's part of the run report at the end of the run (after the agent's shutdown),
/// given the driver's per-pod times.
pub type AgentReportFn = Arc<dyn Fn(PodTimesLookup<'_>) -> Option<CriReport> + Send + Sync>;

/// Which node agent a run uses.
#[derive(Clone)]
pub enum AgentSpec {
    /// The simulated, KWOK-style agent.
    Sim(SimConfig),
    /// Any other agent (the CRI agent), built by the factory; `report` fills `RunReport.cri`.
    Custom { name: String, factory: AgentFactory, report: Option<AgentReportFn> },
}

/// How a run is set up, besides the workload itself.
#[derive(Clone)]
pub struct RunOptions {
    pub seed: u64,
    /// Filter/score threads (1 = all on the scheduling thread).
    pub threads: usize,
    /// A KubeSchedulerConfiguration that replaces the test case's.
    pub config_override: Option<PathBuf>,
    /// Manifests of an initial cluster (nodes, bound pods, namespaces, ...).
    pub cluster: Vec<PathBuf>,
    /// The same cluster already loaded: every workload and repetition starts from it (a
    /// `<(kubectl get ...)` pipe can be read only once). Takes precedence over `cluster`.
    pub cluster_objects: Option<Arc<crate::cluster::Cluster>>,
    pub agent: AgentSpec,
    pub virtual_time: bool,
    /// Share of cycles whose plugins are timed one by one (upstream samples 10 %).
    pub plugin_sample_percent: u32,
    /// Write a JSON-lines trace of every pod's life here.
    pub events_file: Option<PathBuf>,
    pub progress: bool,
    pub rep: u32,
    pub bind_workers: usize,
    pub max_binds_in_flight: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 1,
            threads: 1,
            config_override: None,
            cluster: Vec::new(),
            cluster_objects: None,
            agent: AgentSpec::Sim(SimConfig::zero_latency()),
            virtual_time: false,
            plugin_sample_percent: 10,
            events_file: None,
            progress: false,
            rep: 0,
            bind_workers: 2,
            max_binds_in_flight: 4096,
        }
    }
}

/// Why a run could not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: exit 2.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A child process of the run (a repetition, valgrind) crashed or printed nothing: exit 4.
    #[error("runtime failure: {0}")]
    Runtime(String),
    /// The workload failed as upstream's harness would fail it (pods never scheduled, a wait
    /// timed out): exit 1, and the message says how many pods and why.
    #[error("{0}")]
    Failed(String),
}

impl RunError {
    /// The exit code this error ends `schedperf run` with.
    pub fn exit_code(&self) -> u8 {
        use crate::error::exit;
        match self {
            RunError::Input(_) => exit::BAD_INPUT,
            RunError::Runtime(_) => exit::RUNTIME,
            RunError::Failed(_) => exit::FAILED,
        }
    }
}

impl From<crate::error::Error> for RunError {
    fn from(e: crate::error::Error) -> Self {
        match e {
            crate::error::Error::Input(e) => RunError::Input(e),
            crate::error::Error::Runtime(e) => RunError::Runtime(e),
        }
    }
}
