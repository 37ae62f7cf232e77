//! The extension points after Filter, run as upstream's `frameworkImpl` runs them: PostFilter,
//! Reserve/Unreserve, Permit (with the waiting pods), PreBind, Bind, PostBind; and PreEnqueue and
//! QueueSort, which the scheduling queue asks. Called once per pod, never per node.

use std::time::Duration;

use super::plugin::{BindingPod, PostFilterPlan, PostFilterResult, QueueSortFn};
use super::runtime::Diagnosis;
use super::{Code, CycleCx, CycleState, Framework, PluginId, Status};
use crate::ids::PodUid;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot};

/// The longest a pod may wait on Permit (`maxTimeout`: 15 minutes).
pub const MAX_PERMIT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// What the Permit plugins decided together (`RunPermitPlugins`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PermitOutcome {
    Allow,
    /// A plugin rejected the pod (its status, with the plugin named).
    Reject(Status),
    /// At least one plugin said Wait: the binding cycle waits until every waiting plugin allowed
    /// the pod, one rejects it, or a timeout passes; this is the shortest timeout (it grows when
    /// the plugin it belongs to allows the pod: [`WaitingPods::take_extensions`]).
    Wait(Duration),
}

/// The pods of a profile waiting on Permit, as Permit plugins see them through the framework
/// handle (`IterateOverWaitingPods`, `GetWaitingPod`), and what plugins decided about them. The
/// owner of the waiting pods (the binder, or the run's loop in virtual time) applies the decisions.
/// As upstream's `waitingPod`: each plugin that said Wait has its own timeout, and a pod is
/// released only when every one of them has allowed it; a rejection from any plugin (or the
/// first timeout) rejects it.
#[derive(Debug, Default)]
pub struct WaitingPods {
    /// The pods waiting, in the order they started, each with the plugins it still waits for and
    /// their timeouts (from the start of the wait).
    waiting: Vec<(PodUid, Vec<(&'static str, Duration)>)>,
    allowed: Vec<PodUid>,
    rejected: Vec<(PodUid, String)>,
    /// Pods whose earliest timeout moved later because the plugin it belonged to allowed them:
    /// the new wait, from the start of the wait.
    extended: Vec<(PodUid, Duration)>,
}

impl WaitingPods {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pods waiting now, in the order they started waiting.
    pub fn pods(&self) -> Vec<PodUid> {
        self.waiting.iter().map(|(u, _)| *u).collect()
    }

    pub fn contains(&self, uid: PodUid) -> bool {
        self.waiting.iter().any(|(u, _)| *u == uid)
    }

    /// A pod starts waiting on the plugins that said Wait, each with its timeout
    /// (`newWaitingPod`). A pod already waiting is left as it is.
    pub fn add(&mut self, uid: PodUid, pending: Vec<(&'static str, Duration)>) {
        if !self.contains(uid) {
            self.waiting.push((uid, pending));
        }
    }

    /// The pod stopped waiting (allowed, rejected, timed out or deleted).
    pub fn remove(&mut self, uid: PodUid) {
        self.waiting.retain(|(u, _)| *u != uid);
    }

    /// How long the pod waits at most now: its earliest pending timeout.
    pub fn timeout(&self, uid: PodUid) -> Option<Duration> {
        let (_, pending) = self.waiting.iter().find(|(u, _)| *u == uid)?;
        pending.iter().map(|(_, t)| *t).min()
    }

    /// Plugin `plugin` allows a waiting pod (`WaitingPod.Allow`): the pod no longer waits for
    /// that plugin, and is released when no plugin is left. Returns false if it was not waiting.
    pub fn allow(&mut self, uid: PodUid, plugin: &str) -> bool {
        let Some(i) = self.waiting.iter().position(|(u, _)| *u == uid) else { return false };
        let before = self.timeout(uid);
        self.waiting[i].1.retain(|(p, _)| *p != plugin);
        if self.waiting[i].1.is_empty() {
            self.waiting.remove(i);
            self.allowed.push(uid);
        } else if let Some(after) = self.timeout(uid).filter(|t| Some(*t) != before) {
            self.extended.retain(|(u, _)| *u != uid);
            self.extended.push((uid, after));
        }
        true
    }

    /// A plugin rejects a waiting pod (`WaitingPod.Reject`). Returns false if it was not waiting.
    pub fn reject(&mut self, uid: PodUid, message: &str) -> bool {
        if !self.contains(uid) {
            return false;
        }
        self.remove(uid);
        self.extended.retain(|(u, _)| *u != uid);
        self.rejected.push((uid, message.to_string()));
        true
    }

    /// The decisions taken since the last call: (allowed, rejected with a message).
    pub fn take_decisions(&mut self) -> (Vec<PodUid>, Vec<(PodUid, String)>) {
        (std::mem::take(&mut self.allowed), std::mem::take(&mut self.rejected))
    }

    /// The pods whose wait grew since the last call (a plugin allowed them while others did not
    /// yet): each with its new timeout from the start of its wait.
    pub fn take_extensions(&mut self) -> Vec<(PodUid, Duration)> {
        let ext = std::mem::take(&mut self.extended);
        ext.into_iter().filter(|(u, _)| self.contains(*u)).collect()
    }
}

impl Framework {
    /// PreEnqueue (`RunPreEnqueuePlugins`): the first plugin that does not return Success keeps
    /// the pod out of the active queue; its status is returned with the plugin named.
    pub fn run_pre_enqueue(&self, pod: &PodInfo) -> Status {
        for &pid in &self.pre_enqueue {
            let p = self.plugin(pid);
            let st = p.pre_enqueue(pod);
            if !st.is_success() {
                return st.with_plugin(p.name());
            }
        }
        Status::success()
    }

    /// The QueueSort plugin's order (exactly one QueueSort plugin per profile; `None` when the
    /// plugin there gives none, and the queue keeps its own, PrioritySort's).
    pub fn queue_sort_fn(&self) -> Option<QueueSortFn> {
        self.queue_sort.first().and_then(|&pid| self.plugin(pid).queue_sort_less())
    }

    /// PostFilter (`RunPostFilterPlugins`) for a pod the filters rejected everywhere: plugins run
    /// in order until one succeeds (its result is returned) or one returns
    /// UnschedulableAndUnresolvable or Error; otherwise the rejections are merged into one
    /// Unschedulable status naming the first plugin. `Err` with no reasons when no PostFilter
    /// plugin is enabled.
    pub fn run_post_filter(
        &self,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        rng: &mut dyn rand::RngCore,
    ) -> Result<PostFilterResult, Status> {
        let mut reasons = Vec::new();
        let mut first: Option<&'static str> = None;
        for &pid in &self.post_filter {
            let p = self.plugin(pid);
            let st = match p.post_filter(self, snap, pod, diag, rng) {
                Ok(r) => return Ok(r),
                Err(st) => st,
            };
            match st.code {
                Code::Unschedulable => {
                    first.get_or_insert(p.name());
                    reasons.extend(st.reasons);
                }
                Code::UnschedulableAndUnresolvable => return Err(st.with_plugin(p.name())),
                // `fwk.AsStatus(s.AsError())`: the plugin's message as it is.
                _ => return Err(Status { code: Code::Error, ..st }.with_plugin(p.name())),
            }
        }
        Err(Status { code: Code::Unschedulable, reasons, plugin: first.unwrap_or("") })
    }

    /// PostFilter as a dry run (`explain`, `verify`): the profile's PostFilter plugins in order,
    /// each asked for its [`PostFilterPlan`]; the first plan that picks a node is what PostFilter
    /// would do (as the first plugin that succeeds ends PostFilter), else the first plan (why the
    /// first plugin cannot help). `None` when no PostFilter plugin has a plan: the profile has
    /// none, or they have nothing to show. Leaves the snapshot as it found it.
    pub fn post_filter_plan(
        &self,
        snap: &mut Snapshot,
        pod: &PodInfo,
        diag: &Diagnosis,
        exhaustive: bool,
    ) -> Option<PostFilterPlan> {
        let mut first = None;
        for &pid in &self.post_filter {
            let Some(plan) = self.plugin(pid).post_filter_plan(self, snap, pod, diag, exhaustive) else { continue };
            if plan.chosen.is_some() || plan.error {
                return Some(plan);
            }
            first.get_or_insert(plan);
        }
        first
    }

    /// Why PostFilter does not help this pod: the status message of the first PostFilter plugin
    /// that can say, in upstream's words (a dry run that changes nothing); `None` without
    /// PostFilter plugins or when one would succeed.
    pub fn post_filter_message(&self, snap: &mut Snapshot, pod: &PodInfo, diag: &Diagnosis) -> Option<String> {
        self.post_filter.iter().find_map(|&pid| self.plugin(pid).post_filter_message(self, snap, pod, diag))
    }

    /// Reserve (`RunReservePluginsReserve`): in order until one fails; the failing status is
    /// returned with the plugin named. On failure the caller runs [`Self::run_unreserve`].
    pub fn run_reserve(&self, cx: CycleCx<'_>, state: &mut CycleState, node: NodeIdx) -> Status {
        for &pid in &self.reserve {
            let p = self.plugin(pid);
            let st = p.reserve(cx, state, node);
            if !st.is_success() {
                if st.code.is_rejection() {
                    return st.with_plugin(p.name());
                }
                let msg = format!("running Reserve plugin {:?}: {}", p.name(), st.reasons.join(", "));
                return Status::new(Code::Error, msg).with_plugin(p.name());
            }
        }
        Status::success()
    }

    /// Unreserve (`RunReservePluginsUnreserve`): every Reserve plugin, in reverse order.
    pub fn run_unreserve(&self, cx: CycleCx<'_>, state: &mut CycleState, node: NodeIdx) {
        for &pid in self.reserve.iter().rev() {
            self.plugin(pid).unreserve(cx, state, node);
        }
    }

    /// Permit (`RunPermitPlugins`): a rejection or an error ends it at once (with the plugin
    /// named); otherwise, if any plugin said Wait, the pod starts waiting in `waiting` on each of
    /// them with its own timeout (at most [`MAX_PERMIT_TIMEOUT`]), and the outcome is the
    /// shortest.
    pub fn run_permit(
        &self,
        cx: CycleCx<'_>,
        state: &mut CycleState,
        node: NodeIdx,
        waiting: &mut WaitingPods,
    ) -> PermitOutcome {
        let mut pending: Vec<(&'static str, Duration)> = Vec::new();
        for &pid in &self.permit {
            let p = self.plugin(pid);
            let (st, timeout) = p.permit(cx, state, node, waiting);
            match st.code {
                Code::Success => {}
                Code::Wait => pending.push((p.name(), timeout.min(MAX_PERMIT_TIMEOUT))),
                c if c.is_rejection() => return PermitOutcome::Reject(st.with_plugin(p.name())),
                _ => {
                    let msg = format!("running Permit plugin {:?}: {}", p.name(), st.reasons.join(", "));
                    return PermitOutcome::Reject(Status::new(Code::Error, msg).with_plugin(p.name()));
                }
            }
        }
        match pending.iter().map(|(_, t)| *t).min() {
            Some(t) => {
                waiting.add(cx.pod.uid, pending);
                PermitOutcome::Wait(t)
            }
            None => PermitOutcome::Allow,
        }
    }

    /// PreBind (`RunPreBindPlugins`): in order; the first failure fails the binding cycle.
    pub fn run_pre_bind(&self, pod: &BindingPod<'_>) -> Result<(), Status> {
        for &pid in &self.pre_bind {
            let p = self.plugin(pid);
            let st = p.pre_bind(pod);
            match st.code {
                Code::Success | Code::Skip => {}
                _ => return Err(st.with_plugin(p.name())),
            }
        }
        Ok(())
    }

    /// Bind (`RunBindPlugins`): plugins in order until one does not return Skip. `Ok(Some(id))`:
    /// plugin `id` took the pod (the binder then writes the binding through the node agent);
    /// `Ok(None)`: every plugin skipped; `Err`: the plugin's failure.
    pub fn run_bind(&self, pod: &BindingPod<'_>) -> Result<Option<PluginId>, Status> {
        for &pid in &self.bind {
            let p = self.plugin(pid);
            let st = p.bind(pod);
            match st.code {
                Code::Skip => continue,
                Code::Success => return Ok(Some(pid)),
                c if c.is_rejection() => return Err(st.with_plugin(p.name())),
                _ => {
                    let msg = format!("running Bind plugin {:?}: {}", p.name(), st.reasons.join(", "));
                    return Err(Status::new(Code::Error, msg).with_plugin(p.name()));
                }
            }
        }
        Ok(None)
    }

    /// PostBind (`RunPostBindPlugins`): every plugin, informational.
    pub fn run_post_bind(&self, pod: &BindingPod<'_>) {
        for &pid in &self.post_bind {
            self.plugin(pid).post_bind(pod);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::framework::Plugin;

    /// A plugin with a fixed answer at Permit (code, timeout in s) and at Bind.
    struct Fixed(&'static str, Code, u64);

    impl Plugin for Fixed {
        fn name(&self) -> &'static str {
            self.0
        }
        fn permit(&self, _: CycleCx<'_>, _: &mut CycleState, _: NodeIdx, _: &mut WaitingPods) -> (Status, Duration) {
            (Status { code: self.1, reasons: vec![self.0.into()], plugin: "" }, Duration::from_secs(self.2))
        }
        fn bind(&self, _pod: &BindingPod<'_>) -> Status {
            Status { code: self.1, reasons: vec![self.0.into()], plugin: "" }
        }
    }

    fn framework(plugins: Vec<Fixed>) -> Framework {
        let mut fw = Framework::empty("test");
        fw.plugins = plugins.into_iter().map(|p| Arc::new(p) as Arc<dyn Plugin>).collect();
        fw.permit = (0..fw.plugins.len()).collect();
        fw.bind = (0..fw.plugins.len()).collect();
        fw
    }

    #[test]
    fn permit_outcomes_as_run_permit_plugins() {
        use Code::*;
        let cases: Vec<(Vec<Fixed>, PermitOutcome)> = vec![
            (vec![], PermitOutcome::Allow),
            (vec![Fixed("A", Success, 0)], PermitOutcome::Allow),
            // The shortest wait wins; every wait is capped at 15 minutes.
            (vec![Fixed("A", Wait, 30), Fixed("B", Wait, 10)], PermitOutcome::Wait(Duration::from_secs(10))),
            (vec![Fixed("A", Wait, 3600)], PermitOutcome::Wait(MAX_PERMIT_TIMEOUT)),
            // A rejection ends Permit, even after a Wait.
            (
                vec![Fixed("A", Wait, 10), Fixed("B", Unschedulable, 0), Fixed("C", Error, 0)],
                PermitOutcome::Reject(Status { code: Unschedulable, reasons: vec!["B".into()], plugin: "B" }),
            ),
            (
                vec![Fixed("A", Error, 0)],
                PermitOutcome::Reject(Status::new(Error, "running Permit plugin \"A\": A").with_plugin("A")),
            ),
        ];
        let mut snap = crate::snapshot::Snapshot::new();
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        for (plugins, want) in cases {
            let fw = framework(plugins);
            let cx = CycleCx { snap: &snap, pod: &pod };
            let got = fw.run_permit(cx, &mut CycleState::new(), NodeIdx(0), &mut WaitingPods::new());
            assert_eq!(got, want);
        }
    }

    #[test]
    fn bind_runs_until_a_plugin_does_not_skip() {
        use Code::*;
        let pod = BindingPod { uid: PodUid(1), namespace: "ns", name: "p", node: "n" };
        type Case = (Vec<Fixed>, Result<Option<usize>, Code>);
        let cases: Vec<Case> = vec![
            (vec![], Ok(None)),
            (vec![Fixed("A", Skip, 0), Fixed("B", Skip, 0)], Ok(None)),
            (vec![Fixed("A", Skip, 0), Fixed("B", Success, 0), Fixed("C", Error, 0)], Ok(Some(1))),
            (vec![Fixed("A", Skip, 0), Fixed("B", Error, 0), Fixed("C", Success, 0)], Err(Error)),
        ];
        for (plugins, want) in cases {
            let fw = framework(plugins);
            assert_eq!(fw.run_bind(&pod).map_err(|st| st.code), want);
        }
    }

    #[test]
    fn waiting_pods_record_decisions_once() {
        let mut w = WaitingPods::new();
        let secs = Duration::from_secs;
        w.add(PodUid(1), vec![("A", secs(5))]);
        w.add(PodUid(2), vec![("A", secs(5))]);
        assert!(w.allow(PodUid(1), "A"));
        assert!(!w.allow(PodUid(1), "A"), "no longer waiting");
        assert!(w.reject(PodUid(2), "no"));
        assert!(w.pods().is_empty());
        assert_eq!(w.take_decisions(), (vec![PodUid(1)], vec![(PodUid(2), "no".to_string())]));
        assert_eq!(w.take_decisions(), (vec![], vec![]));
    }

    #[test]
    fn a_waiting_pod_is_released_when_every_waiting_plugin_allowed_it() {
        let secs = Duration::from_secs;
        let p = PodUid(7);
        // (allows and rejects in order: plugin, Some(message) for a reject) ->
        // (released, rejected, the timeout after, the extensions reported)
        type Step = (&'static str, Option<&'static str>);
        type Case = (&'static [Step], bool, bool, Option<Duration>, Vec<(PodUid, Duration)>);
        let cases: Vec<Case> = vec![
            (&[], false, false, Some(secs(2)), vec![]),
            // One of two: still waiting; B's 2 s were the shortest, so the wait grows to A's 10 s.
            (&[("B", None)], false, false, Some(secs(10)), vec![(p, secs(10))]),
            // A allows first: B's 2 s stay the shortest, nothing grows.
            (&[("A", None)], false, false, Some(secs(2)), vec![]),
            (&[("A", None), ("B", None)], true, false, None, vec![]),
            (&[("B", None), ("A", None)], true, false, None, vec![]),
            // A plugin that never said Wait allowing changes nothing.
            (&[("C", None)], false, false, Some(secs(2)), vec![]),
            // A rejection from any plugin rejects, even after an allow.
            (&[("B", None), ("A", Some("no"))], false, true, None, vec![]),
        ];
        for (steps, released, rejected, timeout, extensions) in cases {
            let mut w = WaitingPods::new();
            w.add(p, vec![("A", secs(10)), ("B", secs(2))]);
            for (plugin, reject) in steps {
                match reject {
                    None => assert!(w.allow(p, plugin), "{steps:?}"),
                    Some(m) => assert!(w.reject(p, m), "{steps:?}"),
                }
            }
            let (a, r) = w.take_decisions();
            assert_eq!((!a.is_empty(), !r.is_empty()), (released, rejected), "{steps:?}");
            assert_eq!(w.timeout(p), timeout, "{steps:?}");
            assert_eq!(w.contains(p), !released && !rejected, "{steps:?}");
            assert_eq!(w.take_extensions(), extensions, "{steps:?}");
        }
    }

    #[test]
    fn run_permit_makes_the_pod_wait_on_each_waiting_plugin() {
        use Code::*;
        let mut snap = crate::snapshot::Snapshot::new();
        let pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        let fw = framework(vec![Fixed("A", Wait, 30), Fixed("B", Success, 0), Fixed("C", Wait, 10)]);
        let mut w = WaitingPods::new();
        let cx = CycleCx { snap: &snap, pod: &pod };
        assert_eq!(
            fw.run_permit(cx, &mut CycleState::new(), NodeIdx(0), &mut w),
            PermitOutcome::Wait(Duration::from_secs(10))
        );
        assert_eq!(w.pods(), vec![pod.uid]);
        assert!(w.allow(pod.uid, "C"));
        assert_eq!(w.take_decisions(), (vec![], vec![]), "A still waits");
        assert_eq!(w.take_extensions(), vec![(pod.uid, Duration::from_secs(30))]);
        assert!(w.allow(pod.uid, "A"));
        assert_eq!(w.take_decisions(), (vec![pod.uid], vec![]));
    }
}
