//! Plugins with little to compute here: PrioritySort (queue order), SchedulingGates (PreEnqueue),
//! DefaultBinder (Bind through the node agent), and the plugins that find nothing to do for any
//! pod here (`NO_OP_PLUGINS`: the in-tree volume limits).

use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{
    BindingPod, Code, CycleCx, CycleState, Plugin, PreFilterResult, QueueSortFn, QueueSortKey, Status,
};
use crate::snapshot::PodInfo;

pub const PRIORITY_SORT: &str = "PrioritySort";
pub const SCHEDULING_GATES: &str = "SchedulingGates";
pub const DEFAULT_BINDER: &str = "DefaultBinder";

/// QueueSort: higher priority first, then earlier queue timestamp (`priority_sort.go`).
pub struct PrioritySort;

impl PrioritySort {
    /// `Less(a, b)`: whether `a` is popped before `b`.
    pub fn less(a_priority: i32, a_ts: u64, b_priority: i32, b_ts: u64) -> bool {
        a_priority > b_priority || (a_priority == b_priority && a_ts < b_ts)
    }
}

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        PRIORITY_SORT
    }

    fn queue_sort_less(&self) -> Option<QueueSortFn> {
        fn less(a: &QueueSortKey, b: &QueueSortKey) -> bool {
            PrioritySort::less(a.priority, a.timestamp_nanos, b.priority, b.timestamp_nanos)
        }
        Some(less)
    }
}

/// PreEnqueue: a pod with scheduling gates waits outside the active queue.
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        SCHEDULING_GATES
    }

    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        if pod.scheduling_gates.is_empty() {
            return Status::success();
        }
        Status::new(
            Code::UnschedulableAndUnresolvable,
            format!("waiting for scheduling gates: [{}]", pod.scheduling_gates.join(" ")),
        )
    }
}

/// Bind: the binder hands the pod to the node agent (the API server's bind, here).
pub struct DefaultBinder;

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        DEFAULT_BINDER
    }

    /// Takes every pod: the binder then writes the binding through the node agent.
    fn bind(&self, _pod: &BindingPod<'_>) -> Status {
        Status::success()
    }
}

/// A plugin of `NO_OP_PLUGINS`: the in-tree volume limits plugins (gone upstream at v1.37).
/// PreFilter returns Skip, as upstream's does for such pods, and Filter never runs.
pub struct NoVolumes(pub &'static str);

impl Plugin for NoVolumes {
    fn name(&self) -> &'static str {
        self.0
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// Volume plugins sign the pod's volumes.
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        crate::plugins::volumes::sign_volumes(pod, sig);
        Sign::Signed
    }

    fn pre_filter(&self, _cx: CycleCx<'_>, _state: &mut CycleState) -> (Status, PreFilterResult) {
        (Status::skip(), PreFilterResult::default())
    }

    /// Scores 0 on every node (the trait's Score).
    fn score_is_uniform(&self, _cx: CycleCx<'_>, _state: &CycleState) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_sort_less() {
        // (a prio, a ts, b prio, b ts, a first)
        for (ap, at, bp, bt, want) in
            [(10, 5, 1, 1, true), (1, 1, 10, 5, false), (5, 1, 5, 2, true), (5, 2, 5, 1, false), (5, 1, 5, 1, false)]
        {
            assert_eq!(PrioritySort::less(ap, at, bp, bt), want);
        }
    }
}
