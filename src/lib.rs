//! schedperf: kube-scheduler's scheduling cycle on a data-oriented core, for benchmarking.
//!
//! See `ARCHITECTURE.md` for the bird's-eye view and the code map.

pub mod agent;
pub mod api;
pub mod binder;
pub mod cache;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod engine;
pub mod error;
pub mod explain;
pub mod framework;
pub mod gate;
pub mod instructions;
pub mod metrics;
pub mod plugins;
pub mod queue;
pub mod report;
pub mod runner;
pub mod snapshot;
pub mod stats;
pub mod sync;
pub mod workload;
