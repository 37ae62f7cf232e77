//! Plugins with little to compute here: PrioritySort (queue order), SchedulingGates (PreEnqueue),
//! DefaultBinder (Bind through the node agent), and the plugins that find nothing to do for any
//! pod here (`NO_OP_PLUGINS`: NodeDeclaredFeatures, the in-tree volume limits; DynamicResources is
//! listed there too, but the registry builds `dynamicresources::plugin` for it).

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{
    BindingPod, Code, CycleCx, CycleState, Diagnosis, Framework, Plugin, PostFilterPlan, PostFilterResult,
    PreFilterResult, QueueSortFn, QueueSortKey, Status,
};
use crate::snapshot::{PodInfo, Snapshot};

const DYNAMIC_RESOURCES: &str = "DynamicResources";

use crate::plugins::dynamicresources::plugin::{pre_filter_ran as dynamic_resources_pre_filter_ran, NO_STATE};

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

/// A plugin of `NO_OP_PLUGINS`: DynamicResources as it was for pods without claims (the test
/// below keeps its PostFilter's behaviour; the registry builds `dynamicresources::plugin`),
/// NodeDeclaredFeatures (no declared features) and the in-tree volume limits plugins (gone
/// upstream at v1.37). PreFilter returns Skip, as upstream's does for such pods, and Filter
/// never runs.
pub struct NoVolumes(pub &'static str);

impl Plugin for NoVolumes {
    fn name(&self) -> &'static str {
        self.0
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// Volume plugins sign the pod's volumes; DynamicResources signs nothing for a pod
    /// without claims; NodeDeclaredFeatures signs the features the pod needs (none inferred here).
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        match self.0 {
            DYNAMIC_RESOURCES => {}
            "NodeDeclaredFeatures" => sig.put(keys::FEATURES, ""),
            _ => crate::plugins::volumes::sign_volumes(pod, sig),
        }
        Sign::Signed
    }

    fn pre_filter(&self, _cx: CycleCx<'_>, _state: &mut CycleState) -> (Status, PreFilterResult) {
        (Status::skip(), PreFilterResult::default())
    }

    /// DynamicResources' PostFilter: no claims to deallocate (Unschedulable, the next plugin
    /// tries), or [`NO_STATE`] when its PreFilter never ran. The others have no PostFilter.
    fn post_filter(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        _rng: &mut dyn rand::RngCore,
    ) -> Result<PostFilterResult, Status> {
        match self.post_filter_message(fw, snap, pod, diag) {
            Some(m) => Err(Status::new(Code::Error, m)),
            None => Err(Status { code: Code::Unschedulable, reasons: Vec::new(), plugin: "" }),
        }
    }

    fn post_filter_message(
        &self,
        fw: &Framework,
        _snap: &mut Snapshot,
        _pod: &PodInfo,
        diag: &Diagnosis,
    ) -> Option<String> {
        (self.0 == DYNAMIC_RESOURCES && !dynamic_resources_pre_filter_ran(fw, diag)).then(|| NO_STATE.to_string())
    }

    fn post_filter_plan(
        &self,
        fw: &Framework,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        _exhaustive: bool,
    ) -> Option<PostFilterPlan> {
        let message = self.post_filter_message(fw, snap, pod, diag)?;
        Some(PostFilterPlan { message: Some(message), error: true, ..PostFilterPlan::default() })
    }

    /// Scores 0 on every node (the trait's Score), as upstream's DynamicResources does for a pod
    /// without claims.
    fn score_is_uniform(&self, _cx: CycleCx<'_>, _state: &CycleState) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_resources_post_filter_errs_when_its_pre_filter_never_ran() {
        let config = crate::config::SchedulerConfig::defaults();
        let mut interner = crate::snapshot::Interner::default();
        let fw = crate::plugins::registry::build_framework(
            &config.profiles[0],
            &crate::plugins::CompiledArgs::default(),
            &mut interner,
        )
        .unwrap();
        let id = |name: &str| (0..fw.plugins.len()).find(|&p| fw.plugin(p).name() == name).unwrap();
        let dra = NoVolumes(DYNAMIC_RESOURCES);
        let mut snap = Snapshot::new();
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        // (PreFilter's end: the plugin and its code; None = every PreFilter plugin passed) -> message.
        type Case = (Option<(&'static str, Code)>, Option<&'static str>);
        let cases: &[Case] = &[
            (None, None),
            // Unschedulable lets the later PreFilter plugins run: DynamicResources wrote its state.
            (Some(("VolumeBinding", Code::Unschedulable)), None),
            // An earlier plugin ended PreFilter: no state, "not found", PostFilter ends there.
            (Some(("VolumeBinding", Code::UnschedulableAndUnresolvable)), Some(NO_STATE)),
            (Some(("NodeAffinity", Code::UnschedulableAndUnresolvable)), Some(NO_STATE)),
            (Some(("InterPodAffinity", Code::UnschedulableAndUnresolvable)), Some(NO_STATE)),
            (Some((DYNAMIC_RESOURCES, Code::UnschedulableAndUnresolvable)), None),
        ];
        for (end, want) in cases {
            let diag = Diagnosis {
                pre_filter: end.map(|(name, code)| (id(name), Status::new(code, "rejected"))),
                num_all_nodes: 1,
                ..Default::default()
            };
            let got = dra.post_filter_message(&fw, &mut snap, &pod, &diag);
            assert_eq!(got.as_deref(), *want, "{end:?}");
            let plan = dra.post_filter_plan(&fw, &mut snap, &pod, &diag, false);
            assert_eq!(plan.as_ref().map(|p| p.error), want.map(|_| true), "{end:?}: plan");
            let st = dra.post_filter(&fw, &mut snap, &pod, &diag, &mut rng).unwrap_err();
            let code = if want.is_some() { Code::Error } else { Code::Unschedulable };
            assert_eq!(st.code, code, "{end:?}: status");
            // Only DynamicResources has a PostFilter among the no-op plugins.
            assert_eq!(NoVolumes("NodeDeclaredFeatures").post_filter_message(&fw, &mut snap, &pod, &diag), None);
        }
    }

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
