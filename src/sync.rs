//! The one concurrency facade: lock-free code imports its atomics from here so that loom can check it.
//!
//! Built with `--cfg schedperf_loom` (a cfg of our own, so that tokio and hyper in the CRI agent do
//! not switch to their own loom builds), [`atomic`] and [`Arc`] are loom's model-checked versions; otherwise they are
//! `std`'s. Only the lock-free parts (the assume cache's per-pod state words) go through the switched
//! types. Blocking structures (the simulated agent's timer, the binder's permit waiters) use `std`'s
//! `Mutex` and `Condvar`, re-exported here unswitched: loom does not model them in this crate.
//!
//! Run the loom tests with
//! `RUSTFLAGS="--cfg schedperf_loom" CARGO_TARGET_DIR=target/loom cargo test --release --lib cache::`.

/// Atomics: loom's under `--cfg schedperf_loom`, `std`'s otherwise.
pub mod atomic {
    #[cfg(schedperf_loom)]
    pub use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    #[cfg(not(schedperf_loom))]
    pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
}

#[cfg(schedperf_loom)]
pub use loom::sync::Arc;
#[cfg(not(schedperf_loom))]
pub use std::sync::Arc;

/// Blocking primitives, never switched to loom (see the module docs).
pub use std::sync::{Condvar, Mutex, MutexGuard};

/// One-time initialisation (the assume cache's segment slots): `get` is one acquire load. Never
/// switched to loom, which has no `OnceLock`: the loom models exercise growth, but loom does not
/// explore the interleavings inside `std`'s `OnceLock` itself.
pub use std::sync::OnceLock;

/// Pads a shared value to a cache line so that writers on different cores do not false-share.
pub use crossbeam_utils::CachePadded;
