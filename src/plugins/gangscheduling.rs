//! GangScheduling (v1.37.2, `framework/plugins/gangscheduling`): all-or-nothing scheduling for
//! the pods of a PodGroup with a gang policy. Enabled with the GenericWorkload gate
//! (`applyGangScheduling` appends it to the default multiPoint list).
//!
//! Its three decisions are free functions over counts, so the pod-group cycle
//! (`runner::driver::podgroup`) and the tests call the same code:
//! - PreEnqueue ([`pre_enqueue`]): a gang's pods stay out of activeQ until `minCount` of them
//!   exist (`AllPodsCount`: pending, assumed and bound);
//! - PlacementFeasible ([`placement_feasible`]): during a pod-group cycle, after each pod,
//!   whether the group can still reach `minCount` (stop early) and whether it has;
//! - Permit ([`permit`]): a gang's pod waits (5 minutes at most) until `minCount` of the group are
//!   assumed or bound; the pod that completes the quorum allows every waiting one.

use std::time::Duration;

/// The plugin's name in configurations and status messages.
pub const NAME: &str = "GangScheduling";

/// How long a gang's pod waits on Permit for the quorum (`permitTimeoutDuration`).
pub const PERMIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// PreEnqueue's rejection while the gang is short of pods.
pub const WAITING_FOR_MIN_COUNT_PODS: &str = "waiting for minCount pods from a gang to appear in scheduling queue";

/// Permit's Wait reason.
pub const WAITING_FOR_MIN_COUNT_SCHEDULED: &str = "waiting for minCount pods from a gang to be scheduled";

/// PreEnqueue's rejection for a pod whose PodGroup does not exist (yet).
pub fn waiting_for_group(group: &str) -> String {
    format!("waiting for pods's pod group {group:?} to appear in scheduling queue")
}

/// `getMinCount`: a gang's `minCount`; 1 for a basic group (`min_count` None).
pub fn min_count(min_count: Option<u32>) -> u32 {
    min_count.unwrap_or(1)
}

/// PreEnqueue for a pod of a group with `min_count` (None: basic) when the group has
/// `all_pods` pods: `Err(reason)` (UnschedulableAndUnresolvable) keeps it out of activeQ.
pub fn pre_enqueue(min_count: Option<u32>, all_pods: usize) -> Result<(), &'static str> {
    match min_count {
        Some(m) if all_pods < m as usize => Err(WAITING_FOR_MIN_COUNT_PODS),
        _ => Ok(()),
    }
}

/// What PlacementFeasible says about a group's progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Feasible {
    /// `minCount` is met.
    Success,
    /// `minCount` may still be met by the remaining pods.
    Wait(String),
    /// `minCount` cannot be met any more: the cycle stops.
    Unschedulable(String),
}

/// `PlacementFeasible` with `scheduled` pods of the group placed (before this cycle and in it) and
/// `remaining` still to be tried in this cycle.
pub fn placement_feasible(min_count: u32, scheduled: usize, remaining: usize) -> Feasible {
    let m = min_count as usize;
    if remaining + scheduled < m {
        return Feasible::Unschedulable(format!(
            "minCount ({m}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
        ));
    }
    if scheduled < m {
        return Feasible::Wait(format!(
            "minCount ({m}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
        ));
    }
    Feasible::Success
}

/// Permit for a pod of a gang (`min_count` Some) when `scheduled` pods of its group (it included)
/// are assumed or bound: `true` allows it and every waiting pod of the group, `false` waits
/// ([`PERMIT_TIMEOUT`]). A basic group's pods are always allowed.
pub fn permit(min_count: Option<u32>, scheduled: usize) -> bool {
    match min_count {
        Some(m) => scheduled >= m as usize,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `TestGangSchedulingPreEnqueue` cases, as (minCount, pods of the group, admitted).
    #[test]
    fn pre_enqueue_admits_a_gang_once_min_count_pods_exist() {
        let cases: &[(&str, Option<u32>, usize, bool)] = &[
            ("basic policy: never gated", None, 1, true),
            ("gang, fewer pods than minCount", Some(3), 2, false),
            ("gang, exactly minCount pods", Some(3), 3, true),
            ("gang, more pods than minCount", Some(3), 5, true),
            ("gang of one", Some(1), 1, true),
        ];
        for (name, min, all, want) in cases {
            let got = pre_enqueue(*min, *all);
            assert_eq!(got.is_ok(), *want, "{name}");
            if let Err(reason) = got {
                assert_eq!(reason, WAITING_FOR_MIN_COUNT_PODS, "{name}");
            }
        }
    }

    /// Upstream's `TestPlacementFeasible` table (minCount, scheduled, remaining -> status).
    #[test]
    fn placement_feasible_stops_early_waits_and_succeeds() {
        let cases: &[(u32, usize, usize, Feasible)] = &[
            (3, 0, 3, Feasible::Wait("minCount (3) is not yet satisfied: 0 scheduled, 3 remaining".into())),
            (3, 1, 1, Feasible::Unschedulable("minCount (3) cannot be satisfied: 1 scheduled, 1 remaining".into())),
            (3, 2, 1, Feasible::Wait("minCount (3) is not yet satisfied: 2 scheduled, 1 remaining".into())),
            (3, 3, 0, Feasible::Success),
            (3, 4, 2, Feasible::Success),
            (1, 0, 0, Feasible::Unschedulable("minCount (1) cannot be satisfied: 0 scheduled, 0 remaining".into())),
            (1, 1, 0, Feasible::Success),
            (2, 0, 1, Feasible::Unschedulable("minCount (2) cannot be satisfied: 0 scheduled, 1 remaining".into())),
        ];
        for (min, scheduled, remaining, want) in cases {
            assert_eq!(&placement_feasible(*min, *scheduled, *remaining), want, "min {min} {scheduled}/{remaining}");
        }
    }

    #[test]
    fn permit_waits_for_the_quorum() {
        let cases: &[(Option<u32>, usize, bool)] =
            &[(Some(3), 1, false), (Some(3), 2, false), (Some(3), 3, true), (Some(3), 4, true), (None, 1, true)];
        for (min, scheduled, want) in cases {
            assert_eq!(permit(*min, *scheduled), *want, "{min:?} {scheduled}");
        }
        assert_eq!(min_count(None), 1);
        assert_eq!(min_count(Some(4)), 4);
    }
}
