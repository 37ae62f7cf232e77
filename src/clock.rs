//! Time comes from an injected [`Clock`], so seeded runs replay exactly and virtual-time runs are possible.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A source of monotonic time in nanoseconds since the start of a run.
pub trait Clock: Send + Sync {
    fn now_nanos(&self) -> u64;
}

/// Wall-clock time since the clock was created.
#[derive(Debug)]
pub struct WallClock {
    start: Instant,
}

impl WallClock {
    pub fn new() -> Self {
        WallClock { start: Instant::now() }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for WallClock {
    fn now_nanos(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// Virtual time: it moves only when the run advances it.
///
/// Protocol: one owner (the run's driver) calls [`VirtualClock::advance_to`]; any thread may read.
/// Time never goes backwards (`fetch_max`).
#[derive(Debug, Default)]
pub struct VirtualClock {
    now_nanos: AtomicU64,
}

impl VirtualClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves time forward to `t_nanos` (never backwards).
    pub fn advance_to(&self, t_nanos: u64) {
        self.now_nanos.fetch_max(t_nanos, Ordering::AcqRel);
    }

    /// Moves time forward by `d_nanos`.
    pub fn advance_by(&self, d_nanos: u64) {
        self.now_nanos.fetch_add(d_nanos, Ordering::AcqRel);
    }
}

impl Clock for VirtualClock {
    fn now_nanos(&self) -> u64 {
        self.now_nanos.load(Ordering::Acquire)
    }
}
