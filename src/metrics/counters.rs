//! The run's counters: cache-padded atomics, bumped from the scheduling thread, binders and the
//! event handler without contention on a shared line.

use serde::Serialize;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::CachePadded;

/// One counter of [`Counters`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Scheduling attempts (pops from the queue).
    Attempts,
    /// Attempts that ended Unschedulable or UnschedulableAndUnresolvable.
    Unschedulable,
    /// Attempts that ended in an Error status.
    Errors,
    /// Pods that preempted victims (PostFilter nominated a node).
    Preemptions,
    /// Binding cycles that failed (Permit, PreBind or the agent's bind).
    BindFailures,
    /// Pods requeued for another attempt.
    Retries,
    /// Pods evicted by a node failure.
    Evictions,
    /// Pods that became bound (the throughput collector's count).
    PodsBound,
}

impl Counter {
    pub const ALL: [Counter; 8] = [
        Counter::Attempts,
        Counter::Unschedulable,
        Counter::Errors,
        Counter::Preemptions,
        Counter::BindFailures,
        Counter::Retries,
        Counter::Evictions,
        Counter::PodsBound,
    ];
}

/// Shared counters. Each is on its own cache line; increments are `Relaxed` (counts, no ordering).
#[derive(Debug, Default)]
pub struct Counters {
    cells: [CachePadded<AtomicU64>; 8],
}

/// The counters' values at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CounterSnapshot {
    pub attempts: u64,
    pub unschedulable: u64,
    pub errors: u64,
    pub preemptions: u64,
    pub bind_failures: u64,
    pub retries: u64,
    pub evictions: u64,
    pub pods_bound: u64,
}

impl Counters {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&self, c: Counter, n: u64) {
        self.cells[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn incr(&self, c: Counter) {
        self.add(c, 1);
    }

    pub fn get(&self, c: Counter) -> u64 {
        self.cells[c as usize].load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            attempts: self.get(Counter::Attempts),
            unschedulable: self.get(Counter::Unschedulable),
            errors: self.get(Counter::Errors),
            preemptions: self.get(Counter::Preemptions),
            bind_failures: self.get(Counter::BindFailures),
            retries: self.get(Counter::Retries),
            evictions: self.get(Counter::Evictions),
            pods_bound: self.get(Counter::PodsBound),
        }
    }
}

#[cfg(all(test, not(schedperf_loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_counter_counts_on_its_own() {
        let c = std::sync::Arc::new(Counters::new());
        std::thread::scope(|s| {
            for _ in 0..4 {
                let c = c.clone();
                s.spawn(move || {
                    for (i, k) in Counter::ALL.iter().enumerate() {
                        c.add(*k, i as u64 + 1);
                    }
                });
            }
        });
        let expected = CounterSnapshot {
            attempts: 4,
            unschedulable: 8,
            errors: 12,
            preemptions: 16,
            bind_failures: 20,
            retries: 24,
            evictions: 28,
            pods_bound: 32,
        };
        assert_eq!(c.snapshot(), expected);
        assert_eq!(serde_json::to_value(expected).unwrap()["bind_failures"], 20);
    }
}
