//! `--measure instructions`: the measured phase of a run counted in instructions, under valgrind's
//! callgrind, so that a regression gate sees a 1% change on a noisy shared machine.
//!
//! How: `schedperf run --measure instructions` re-runs this same binary under
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect=schedperf::instructions::measured_*`
//! ([`valgrind`]), one process per workload and repetition. Collection is on only inside
//! [`measured_attempt`] and [`measured_post_filter`], which the run driver calls around the
//! scheduling cycle (and PostFilter) of every *measured* pod (one created in the `collectMetrics`
//! window); everything else (setup, the initial pods, the queue, binding, the agent) is not
//! counted. The callgrind output file is parsed ([`callgrind`]) into the totals and the inclusive
//! cost of every function; the plugins' trait methods (`<T as Plugin>::filter`, `::score`, ...) give
//! the cost per plugin and per extension point ([`attribution`]).
//!
//! No `unsafe` (client requests) is needed and `cargo build` needs no system package: valgrind is
//! only looked for at run time, and its absence is an input error (exit 2) naming the package.

pub mod attribution;
pub mod callgrind;
pub mod valgrind;

pub use attribution::instructions_report;
pub use callgrind::{parse_callgrind, CallgrindProfile, FnCost};

/// The function-name pattern callgrind's `--toggle-collect` uses: both wrappers below.
pub const TOGGLE_COLLECT: &str = "schedperf::instructions::measured_*";
/// The demangled name of [`measured_attempt`], whose call count is the number of measured attempts.
pub const ATTEMPT_FN: &str = "schedperf::instructions::measured_attempt";
/// The demangled name of [`measured_post_filter`].
pub const POST_FILTER_FN: &str = "schedperf::instructions::measured_post_filter";

/// Runs one scheduling attempt of a measured pod. Never inlined: callgrind turns collection on at
/// its entry and off at its exit, so its inclusive cost is the measured phase. Outside valgrind it
/// costs one call.
#[inline(never)]
pub fn measured_attempt<R>(cycle: impl FnOnce() -> R) -> R {
    std::hint::black_box(cycle())
}

/// Runs PostFilter (preemption) for a measured pod's failed attempt; as [`measured_attempt`].
#[inline(never)]
pub fn measured_post_filter<R>(post_filter: impl FnOnce() -> R) -> R {
    std::hint::black_box(post_filter())
}

#[cfg(test)]
mod tests {
    #[test]
    fn wrappers_return_what_they_wrap() {
        assert_eq!(super::measured_attempt(|| 41 + 1), 42);
        assert_eq!(super::measured_post_filter(|| "x"), "x");
    }
}
