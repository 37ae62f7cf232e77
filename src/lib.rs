//! schedperf: kube-scheduler's scheduling cycle on a data-oriented core, for benchmarking.
//!
//! See `ARCHITECTURE.md` for the bird's-eye view and the code map.

/// The Kubernetes release whose kube-scheduler schedperf reproduces, as a literal for `concat!`.
/// The oracle (`oracle/go.mod`) embeds the same release.
#[macro_export]
macro_rules! upstream_kubernetes {
    () => {
        "v1.37.2"
    };
}

/// The Kubernetes release whose kube-scheduler schedperf reproduces (reports carry it).
pub const UPSTREAM_KUBERNETES: &str = upstream_kubernetes!();

/// `schedperf --version`: the crate version and the reproduced release.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (kube-scheduler ", upstream_kubernetes!(), ")");

pub mod agent;
pub mod api;
pub mod binder;
pub mod cache;
pub mod cel;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod engine;
pub mod error;
pub mod explain;
pub mod framework;
pub mod gate;
pub mod ids;
pub mod instructions;
pub mod metrics;
pub mod plugins;
pub mod queue;
pub mod report;
pub mod runner;
pub mod snapshot;
pub mod stats;
pub mod sync;
pub mod verify;
pub mod workload;
