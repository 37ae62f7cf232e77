//! The end of binding cycles: batches to the binder, inline binds in virtual time, bind results
//! and agent events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::{AgentEvent, AgentEventKind, AgentPod, ContainerSpec};
use crate::api;
use crate::binder::{BindJob, BindOutcome, BindResult, BindingCycle};
use crate::framework::{BindingPod, CycleCx, CycleState};
use crate::ids::PodUid;
use crate::metrics::Hist;
use crate::queue::{ClusterEvent, EventObjects, QueuedPod};
use crate::snapshot::Sym;

use super::{Driver, PodState};

/// The part of an [`AgentPod`] its template decides, shared by the pods made from it.
pub(super) struct AgentTemplate {
    /// Held so that the pointer compared cannot be reused by another template.
    template: Arc<api::Pod>,
    labels: Arc<BTreeMap<String, String>>,
    host_network: bool,
    init_containers: Arc<[ContainerSpec]>,
    containers: Arc<[ContainerSpec]>,
}

impl AgentTemplate {
    fn of(t: &Arc<api::Pod>) -> Self {
        let cs = |c: &api::Container| ContainerSpec {
            name: c.name.clone(),
            image: c.image.clone(),
            command: c.command.clone(),
            args: c.args.clone(),
            sidecar: c.restart_policy.as_deref() == Some("Always"),
        };
        AgentTemplate {
            template: t.clone(),
            labels: Arc::new(t.metadata.labels.clone()),
            host_network: t.spec.host_network,
            init_containers: t.spec.init_containers.iter().map(cs).collect(),
            containers: t.spec.containers.iter().map(cs).collect(),
        }
    }
}

impl Driver {
    /// The binding cycle on this thread (virtual time): PreBind and Bind plugins, then the bind
    /// through the agent, whose `Bound` event ends it (PostBind in [`Driver::on_bound`]).
    pub(super) fn bind_inline(&mut self, job: BindJob) {
        let result = self.binding.pre_bind(&job).and_then(|()| self.binding.bind(&job));
        match result {
            Ok(()) => self.agent.bind(job.pod),
            Err(reason) => self.on_bind_failed(job.pod.uid, &reason),
        }
    }

    /// Hands the batched assumed pods to the binder. Tokens come back only when this thread reads
    /// the agent's events, so it reads them while the batch would not fit in the in-flight bound.
    pub(super) fn flush_binds(&mut self) {
        let Some(b) = self.binder.clone() else { return };
        if self.bind_batch.is_empty() {
            return;
        }
        let n = self.bind_batch.len().min(b.max_in_flight());
        while b.in_flight() + n > b.max_in_flight() {
            match self.agent_events.recv_timeout(Duration::from_millis(20)) {
                Ok(ev) => self.handle_agent_event(ev),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            }
        }
        let batch = std::mem::take(&mut self.bind_batch);
        if batch.len() <= n {
            b.submit_batch(batch);
        } else {
            // Larger than the whole bound: one pod at a time, reading events in between.
            for job in batch {
                self.bind_batch.push(job);
                self.flush_binds();
            }
        }
    }

    /// What the agent is told about pod `uid` bound to `node`: its template's part is built once
    /// per template (kept for the template last asked for) and shared, so a pod copies only its
    /// name and node.
    pub(super) fn agent_pod(&mut self, uid: PodUid, node: Sym) -> AgentPod {
        let rec = &self.pods[(uid.0 - 1) as usize];
        let t = &rec.template;
        let shared = match &self.agent_template {
            Some(a) if Arc::ptr_eq(&a.template, t) => a,
            _ => self.agent_template.insert(AgentTemplate::of(t)),
        };
        AgentPod {
            uid,
            namespace: rec.namespace.clone(),
            name: Arc::from(rec.info.name.as_str()),
            node: self.snap.interner.resolve_shared(node),
            labels: shared.labels.clone(),
            host_network: shared.host_network,
            init_containers: shared.init_containers.clone(),
            containers: shared.containers.clone(),
        }
    }

    pub(super) fn on_bound(&mut self, uid: PodUid, at_nanos: u64) {
        let PodState::Assumed(node) = self.rec(uid).state else { return };
        self.binds_in_flight -= 1;
        // With a binder, the binder finished the binding cycle in the cache (FinishBinding).
        if self.binder.is_none() {
            let r = self.cache.finish_binding(uid);
            self.note_cache(r);
            let rec = self.rec(uid);
            let fw = &self.frameworks[rec.profile];
            if !fw.post_bind.is_empty() {
                let node = self.snap.interner.resolve(node);
                fw.run_post_bind(&BindingPod { uid, namespace: &rec.namespace, name: &rec.info.name, node });
            }
        }
        let rec = self.rec_mut(uid);
        rec.state = PodState::Bound(node);
        rec.bound_nanos = Some(at_nanos);
        let (created, measured) = (rec.created_nanos, rec.measured);
        // DynamicResources' PreBind wrote the pod's claims (the claim assume cache's update).
        self.claims_bound(uid);
        self.counters.scheduled += 1;
        if measured {
            self.hist.record_at(Hist::E2e, at_nanos.saturating_sub(created));
            self.measured_bind_nanos.push(at_nanos);
            if let Some(pb) = &self.progress {
                pb.inc(1);
            }
        }
        if let Some(s) = self.rec(uid).scheduled_nanos {
            self.hist.record_at(Hist::ScheduledToBound, at_nanos.saturating_sub(s));
            self.hist.record_at(Hist::CreatedToScheduled, s.saturating_sub(created));
        }
        let idx = self.snap.nodes.idx_of(node).map_or(u32::MAX, |n| n.0);
        let now = self.now();
        // The pod as bound (InterPodAffinity and PodTopologySpread read its labels and namespace).
        let objs = self
            .queue
            .wants_event_objects()
            .then(|| Arc::new(EventObjects { new_pod: Some(self.rec(uid).info.clone()), ..EventObjects::default() }));
        self.queue.on_event_with(ClusterEvent::AssignedPodAdd { pod: uid, node: idx }, objs, now);
        self.trace(at_nanos, uid, "bound", |d| serde_json::json!({"node": d.snap.interner.resolve(node)}));
    }

    pub(super) fn on_bind_failed(&mut self, uid: PodUid, reason: &str) {
        let PodState::Assumed(node) = self.rec(uid).state else { return };
        self.binds_in_flight -= 1;
        self.counters.bind_failures += 1;
        // `handleBindingCycleError`: Unreserve (every Reserve plugin, in reverse), then forget.
        let profile = self.rec(uid).profile;
        self.waiting[profile].remove(uid);
        if let Some(idx) = self.snap.nodes.idx_of(node) {
            let info = self.rec(uid).info.clone();
            let mut state = CycleState::new();
            self.frameworks[profile].run_unreserve(CycleCx { snap: &self.snap, pod: &info }, &mut state, idx);
        }
        // With a binder, the binder forgot the pod in the cache when its binding cycle failed.
        if self.binder.is_none() {
            let r = self.cache.forget(uid);
            self.note_cache(r);
        }
        self.snap.unplace_pod(uid);
        let now = self.now();
        let idx = self.snap.nodes.idx_of(node).map_or(u32::MAX, |n| n.0);
        let objs = self.deleted_pod_objects(uid);
        self.queue.on_event_with(ClusterEvent::AssignedPodDelete { pod: uid, node: idx }, objs, now);
        let rec = self.rec_mut(uid);
        rec.state = PodState::Queued;
        let (priority, attempts) = (rec.info.priority, rec.attempts);
        self.trace(now, uid, "bindFailed", |_| serde_json::json!({"reason": reason}));
        if self.requeue_group_member(uid) {
            return;
        }
        let spec = self.rec(uid).info.clone();
        let mut qp = QueuedPod::new(uid, priority, ()).with_spec(spec);
        qp.attempts = attempts;
        qp.timestamp_nanos = now;
        self.queue.add_backoff(qp, now);
    }

    pub(super) fn on_agent_event(&mut self, ev: AgentEvent) {
        let uid = ev.uid;
        if uid.0 == 0 || uid.0 as usize > self.pods.len() {
            return;
        }
        match ev.kind {
            AgentEventKind::Bound => {
                if self.binder.is_none() {
                    self.on_bound(uid, ev.at_nanos)
                }
            }
            AgentEventKind::BindFailed(reason) => {
                if self.binder.is_none() {
                    self.on_bind_failed(uid, &reason)
                }
            }
            AgentEventKind::Running => {
                self.trace(ev.at_nanos, uid, "running", |_| serde_json::Value::Null);
                let rec = self.rec_mut(uid);
                if rec.running_nanos.is_none() {
                    rec.running_nanos = Some(ev.at_nanos);
                    let (created, bound, measured) = (rec.created_nanos, rec.bound_nanos, rec.measured);
                    if measured {
                        self.hist.record_at(Hist::Startup, ev.at_nanos.saturating_sub(created));
                    }
                    if let Some(b) = bound {
                        self.hist.record_at(Hist::BoundToRunning, ev.at_nanos.saturating_sub(b));
                    }
                }
            }
            AgentEventKind::Evicted(reason) => {
                if matches!(self.rec(uid).state, PodState::Bound(_) | PodState::Assumed(_)) {
                    self.counters.evictions += 1;
                    let template = self.rec(uid).template.clone();
                    let ns = self.rec(uid).namespace.clone();
                    self.trace(ev.at_nanos, uid, "evicted", |_| serde_json::json!({"reason": reason}));
                    self.delete_pod(uid);
                    // A controller recreates evicted pods.
                    let _ = self.create_pod(template, &ns, "<eviction>", None);
                }
            }
            AgentEventKind::Failed(reason) => {
                self.rec_mut(uid).failed = true;
                self.trace(ev.at_nanos, uid, "failed", |_| serde_json::json!({"reason": reason}));
            }
            AgentEventKind::SandboxReady | AgentEventKind::ContainersStarted | AgentEventKind::Deleted => {}
        }
    }

    pub(super) fn drain(&mut self) -> bool {
        let mut any = self.drain_bind_results();
        while let Ok(ev) = self.agent_events.try_recv() {
            any = true;
            self.handle_agent_event(ev);
        }
        any
    }

    /// Handles the binding cycles that ended off this thread (a PreBind or Bind plugin failed on a
    /// worker, Permit rejected or timed out): those the agent's events end are handled as each event
    /// is read ([`Driver::handle_agent_event`]).
    pub(super) fn drain_bind_results(&mut self) -> bool {
        let mut any = false;
        while let Ok(r) = self.bind_results.try_recv() {
            any = true;
            let at = self.now();
            self.on_bind_result(r, at);
        }
        any
    }

    /// One event from the agent. The scheduling thread is the binder's event reader (a router
    /// thread would be one more hand-off per pod on two cores): an event that ends a binding cycle
    /// makes the binder finish it (FinishBinding, PostBind) and give its result back
    /// (`Binder::end_binding`: not sent on the results channel to be read back here), which is
    /// handled before the event itself so that `Bound` precedes `Running`.
    pub(super) fn handle_agent_event(&mut self, ev: AgentEvent) {
        if let Some(b) = &self.binder {
            if let Some(r) = b.end_binding(&ev) {
                // The pod was bound when the agent said so, not when this thread got to it.
                self.on_bind_result(r, ev.at_nanos);
            }
        }
        self.on_agent_event(ev);
    }

    /// A finished binding cycle; `at_nanos` is when it ended.
    pub(super) fn on_bind_result(&mut self, r: BindResult, at_nanos: u64) {
        match r.outcome {
            BindOutcome::Bound => self.on_bound(r.job.pod.uid, at_nanos),
            BindOutcome::Failed { reason, .. } => self.on_bind_failed(r.job.pod.uid, &reason),
        }
    }
}
