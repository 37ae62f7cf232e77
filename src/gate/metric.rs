//! The gated metrics: how each is read from a run, oriented, and budgeted by default.

use super::input::RunSample;

/// The minimum `measuredPods` per run for a p99 to be gated: our heuristic of at least 100 events
/// above the quantile. Below it, p99 cells are report-only.
pub const P99_MIN_MEASURED_PODS: u64 = 10_000;

/// A per-run metric. Throughput is bigger-is-better; latencies are smaller-is-better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// `throughput.average`, pods/s.
    Throughput,
    AttemptP50,
    AttemptP90,
    AttemptP99,
    AttemptMax,
    E2eP50,
    E2eP90,
    E2eP99,
    E2eMax,
    /// `instructions.perScheduledPod` (`run --measure instructions`): near-deterministic.
    InstructionsPerPod,
    /// `instructions.perAttempt`.
    InstructionsPerAttempt,
}

/// Which row of the reference budget table a metric falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BudgetClass {
    Central,
    P90,
    P99,
    ReportOnly,
    /// Instruction counts: repeatable to a fraction of a percent, so a 1% budget.
    Instructions,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 11] = [
        Metric::Throughput,
        Metric::AttemptP50,
        Metric::AttemptP90,
        Metric::AttemptP99,
        Metric::AttemptMax,
        Metric::E2eP50,
        Metric::E2eP90,
        Metric::E2eP99,
        Metric::E2eMax,
        Metric::InstructionsPerPod,
        Metric::InstructionsPerAttempt,
    ];

    /// The wall-clock metrics, read from runs measured in time.
    pub const TIMED: [Metric; 9] = [
        Metric::Throughput,
        Metric::AttemptP50,
        Metric::AttemptP90,
        Metric::AttemptP99,
        Metric::AttemptMax,
        Metric::E2eP50,
        Metric::E2eP90,
        Metric::E2eP99,
        Metric::E2eMax,
    ];

    /// The instruction-count metrics, read from runs with `instructions` (`--measure instructions`).
    pub const INSTRUCTIONS: [Metric; 2] = [Metric::InstructionsPerPod, Metric::InstructionsPerAttempt];

    /// The metrics gated when the policy does not say otherwise: throughput and the scheduling
    /// attempt latency percentiles. End-to-end latency mostly restates throughput (pods wait in the
    /// queue), so it is reported but not gated by default, which keeps the Holm family small.
    /// Instructions per scheduled pod is gated too (instruction runs carry no timed metrics and
    /// timed runs no instruction metrics, so each report gates what it measured).
    pub const DEFAULT_GATED: [Metric; 5] =
        [Metric::Throughput, Metric::AttemptP50, Metric::AttemptP90, Metric::AttemptP99, Metric::InstructionsPerPod];

    /// The name used in reports, policies and Bencher measures.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::AttemptP50 => "attempt-p50",
            Metric::AttemptP90 => "attempt-p90",
            Metric::AttemptP99 => "attempt-p99",
            Metric::AttemptMax => "attempt-max",
            Metric::E2eP50 => "e2e-p50",
            Metric::E2eP90 => "e2e-p90",
            Metric::E2eP99 => "e2e-p99",
            Metric::E2eMax => "e2e-max",
            Metric::InstructionsPerPod => "instructions-per-pod",
            Metric::InstructionsPerAttempt => "instructions-per-attempt",
        }
    }

    /// Parses a [`Metric::name`].
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The unit of the raw value.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Throughput => "pods/s",
            Metric::InstructionsPerPod => "instr/pod",
            Metric::InstructionsPerAttempt => "instr/attempt",
            _ => "us",
        }
    }

    /// True for throughput, where a smaller value is worse.
    pub fn bigger_is_better(self) -> bool {
        self == Metric::Throughput
    }

    /// True for the p99 metrics, gated only with at least [`P99_MIN_MEASURED_PODS`] per run.
    pub fn is_p99(self) -> bool {
        matches!(self, Metric::AttemptP99 | Metric::E2eP99)
    }

    /// True for the instruction-count metrics (compared as counts, not with a rank test).
    pub fn is_instructions(self) -> bool {
        matches!(self, Metric::InstructionsPerPod | Metric::InstructionsPerAttempt)
    }

    /// The raw value of this metric in one run (NaN for an instruction metric of a run without
    /// `instructions`).
    pub fn value(self, run: &RunSample) -> f64 {
        match self {
            Metric::InstructionsPerPod => run.instructions.as_ref().map_or(f64::NAN, |i| i.per_scheduled_pod),
            Metric::InstructionsPerAttempt => run.instructions.as_ref().map_or(f64::NAN, |i| i.per_attempt),
            Metric::Throughput => run.throughput.average,
            Metric::AttemptP50 => run.attempt_latency_us.p50,
            Metric::AttemptP90 => run.attempt_latency_us.p90,
            Metric::AttemptP99 => run.attempt_latency_us.p99,
            Metric::AttemptMax => run.attempt_latency_us.max,
            Metric::E2eP50 => run.e2e_latency_us.p50,
            Metric::E2eP90 => run.e2e_latency_us.p90,
            Metric::E2eP99 => run.e2e_latency_us.p99,
            Metric::E2eMax => run.e2e_latency_us.max,
        }
    }

    /// The log of the value oriented so that larger is worse: `-ln v` for throughput, `ln v` for
    /// latency. A difference of two oriented logs is `ln s`, with `s = base/cand` for pods/s and
    /// `s = cand/base` for latency, so `s > 1` always means worse. Latencies of 0 (below the
    /// histogram's 1 us resolution) count as 0.5 us.
    pub fn oriented_log(self, value: f64) -> f64 {
        if self.bigger_is_better() {
            -value.ln()
        } else {
            value.max(0.5).ln()
        }
    }

    fn budget_class(self) -> BudgetClass {
        match self {
            Metric::Throughput | Metric::AttemptP50 | Metric::E2eP50 => BudgetClass::Central,
            Metric::AttemptP90 | Metric::E2eP90 => BudgetClass::P90,
            Metric::AttemptP99 | Metric::E2eP99 => BudgetClass::P99,
            Metric::AttemptMax | Metric::E2eMax => BudgetClass::ReportOnly,
            Metric::InstructionsPerPod | Metric::InstructionsPerAttempt => BudgetClass::Instructions,
        }
    }

    /// The default budget as a fraction (0.05 = 5% worse allowed), from the reference table:
    /// A/B interleaved 5/10/15% and stored baseline 20/25/35% for throughput and p50, p90, p99;
    /// `None` for max (report only); 1% for instruction counts in both modes (A/A runs differ by
    /// well under 0.5%, see docs/ci.md).
    pub fn default_budget(self, paired: bool) -> Option<f64> {
        match (self.budget_class(), paired) {
            (BudgetClass::Central, true) => Some(0.05),
            (BudgetClass::P90, true) => Some(0.10),
            (BudgetClass::P99, true) => Some(0.15),
            (BudgetClass::Central, false) => Some(0.20),
            (BudgetClass::P90, false) => Some(0.25),
            (BudgetClass::P99, false) => Some(0.35),
            (BudgetClass::ReportOnly, _) => None,
            (BudgetClass::Instructions, _) => Some(0.01),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_budgets_follow_the_reference_table() {
        let check = |m: Metric, ab: Option<f64>, stored: Option<f64>| {
            assert_eq!((m.default_budget(true), m.default_budget(false)), (ab, stored), "{}", m.name());
        };
        check(Metric::Throughput, Some(0.05), Some(0.20));
        check(Metric::AttemptP50, Some(0.05), Some(0.20));
        check(Metric::E2eP90, Some(0.10), Some(0.25));
        check(Metric::AttemptP99, Some(0.15), Some(0.35));
        check(Metric::E2eMax, None, None);
        check(Metric::InstructionsPerPod, Some(0.01), Some(0.01));
        check(Metric::InstructionsPerAttempt, Some(0.01), Some(0.01));
    }

    #[test]
    fn orientation_makes_larger_worse() {
        // Throughput 100 -> 80 pods/s and latency 100 -> 125 us are both 1.25x worse.
        let check = |m: Metric, base: f64, cand: f64, want_s: f64| {
            let s = (m.oriented_log(cand) - m.oriented_log(base)).exp();
            assert!((s - want_s).abs() < 1e-12, "{}: {s}", m.name());
        };
        check(Metric::Throughput, 100.0, 80.0, 1.25);
        check(Metric::AttemptP50, 100.0, 125.0, 1.25);
        check(Metric::Throughput, 80.0, 100.0, 0.8);
        check(Metric::E2eMax, 0.0, 1.0, 2.0);
    }

    #[test]
    fn names_round_trip() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        assert_eq!(Metric::from_name("p99"), None);
    }
}
