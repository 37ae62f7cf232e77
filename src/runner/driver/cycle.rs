//! One scheduling cycle: pop, Filter/Score through the engine, PostFilter, Reserve and Permit.

use std::time::{Duration, Instant};

use crate::binder::BindJob;
use crate::clock::Clock;
use crate::engine::CycleResult;
use crate::framework::{CycleCx, CycleState, PermitOutcome, PluginId};
use crate::ids::PodUid;
use crate::metrics::Hist;
use crate::queue::{PluginSet, QueuedPod};
use crate::snapshot::NodeIdx;

use super::{Driver, PodState, BIND_BATCH_MAX_DELAY_NANOS, BIND_BATCH_PODS};

/// The queue's ids of a profile's `plugins` when its plugin 0 has queue id `base`: ids past the
/// queue's 64 share the last one, 63.
fn queue_ids(base: usize, plugins: &[PluginId]) -> Vec<u8> {
    plugins.iter().map(|&p| (base + p).min(63) as u8).collect()
}

impl Driver {
    /// Schedules the next pod from the active queue. Returns false when the queue has none ready.
    pub(super) fn schedule_next(&mut self) -> bool {
        let now = self.now();
        let Some(qp) = self.queue.pop(now) else { return false };
        if let Some(b) = &mut self.batches {
            b.popped();
        }
        if let Some(group) = self.groups.group_of_entity(qp.uid) {
            self.schedule_pod_group(group, qp);
            return true;
        }
        let uid = qp.uid;
        if self.rec(uid).state != PodState::Queued {
            self.queue.done(uid);
            return true;
        }
        let profile = self.rec(uid).profile;
        let info = self.rec(uid).info.clone();
        let t0 = Instant::now();
        // A measured pod's cycle runs inside the wrapper callgrind counts (`--measure instructions`).
        let measured = self.rec(uid).measured;
        let fw = &self.frameworks[profile];
        let batch = self.batches.as_mut().and_then(|b| b.cx(profile, fw, &info, now));
        let result = if measured {
            crate::instructions::measured_attempt(|| {
                self.engine.schedule_one_nominated_batched(fw, &mut self.snap, &info, batch)
            })
        } else {
            self.engine.schedule_one_nominated_batched(fw, &mut self.snap, &info, batch)
        };
        let t1 = Instant::now();
        let cycle_nanos = t1.saturating_duration_since(t0).as_nanos() as u64;
        if let Some(v) = &self.vclock {
            // Virtual time moves by the modelled cost, never by the measured one, so the run replays;
            // the agent's stages that came due during the cycle fire now, not at the next idle moment.
            let evaluated = match &result {
                CycleResult::Scheduled { evaluated_nodes, .. } => *evaluated_nodes,
                CycleResult::Unschedulable(diag) => diag.failures.len(),
                CycleResult::Error(_) => 0,
            };
            v.advance_by(self.cycle_cost.cycle_nanos(evaluated));
            self.agent.advance_to(v.now_nanos());
        }
        // The cycle's end read as the run clock (wall time: from `t1`, not a fourth clock read).
        let now = self.nanos_at(t1);
        self.counters.attempts += 1;
        self.rec_mut(uid).attempts = qp.attempts;
        if qp.attempts > 1 {
            self.counters.retries += 1;
        }
        self.hist.record_at(Hist::Attempt, cycle_nanos);
        match result {
            CycleResult::Scheduled { node, .. } => {
                self.hist.record_at(Hist::AttemptScheduled, cycle_nanos);
                let node_sym = self.snap.nodes.name[node.ix()];
                self.snap.clear_nomination(uid);
                self.snap.place_pod(info.clone(), node_sym).expect("the chosen node exists and the pod is not placed");
                let r = self.cache.assume(uid, node_sym.0);
                self.note_cache(r);
                // Reserve and Permit end the scheduling cycle, as `schedulingCycle` runs them.
                let permit_wait = match self.reserve_and_permit(uid, profile, node, &qp, now) {
                    Some(w) => w,
                    None => return true,
                };
                self.queue.done(uid);
                self.start_binding(uid, profile, node_sym, permit_wait, qp.attempts, now);
                self.apply_permit_decisions(profile);
            }
            CycleResult::Unschedulable(diag) => {
                self.hist.record_at(Hist::AttemptUnschedulable, cycle_nanos);
                self.counters.unschedulable += 1;
                let fw = &self.frameworks[profile];
                let cx = CycleCx { snap: &self.snap, pod: &info };
                let fit_msg = diag.message(fw, cx, &CycleState::new());
                let rejectors = self.queue_ids(profile, &diag.rejector_plugins());
                let record_reason = self.rec(uid).attempts <= 1 || !self.rec(uid).unschedulable;
                self.rec_mut(uid).unschedulable = true;
                // PostFilter (the profile's plugins; DefaultPreemption nominates a node and evicts
                // victims through the agent).
                let post = if self.rec(uid).measured {
                    crate::instructions::measured_post_filter(|| {
                        self.engine.post_filter(&self.frameworks[profile], &mut self.snap, &info, &diag)
                    })
                } else {
                    self.engine.post_filter(&self.frameworks[profile], &mut self.snap, &info, &diag)
                };
                // When preemption does nothing, upstream's message carries its reasons after the
                // filters' ("... 2 Too many pods. preemption: 0/3 nodes are available: ..."). The
                // dry run that words them is only paid for when the message is recorded.
                let msg = match &post {
                    Err(_) if record_reason || self.events_out.is_some() => {
                        match self.engine.preemption_failure_message(
                            &self.frameworks[profile],
                            &mut self.snap,
                            &info,
                            &diag,
                        ) {
                            Some(p) => format!("{fit_msg} {p}"),
                            None => fit_msg,
                        }
                    }
                    _ => fit_msg,
                };
                if record_reason {
                    *self.unschedulable_reasons.entry(msg.clone()).or_default() += 1;
                }
                self.trace(now, uid, "attempt", |_| serde_json::json!({"result": "unschedulable", "message": msg}));
                let mut now = now;
                if let Ok(pre) = post {
                    self.counters.preemptions += 1;
                    self.counters.preemption_victims += pre.victims.len() as u64;
                    let node = self.snap.interner.resolve(pre.node).to_string();
                    let names: Vec<String> = pre.victims.iter().map(|v| v.name.clone()).collect();
                    self.trace(now, uid, "nominated", |_| serde_json::json!({"node": node, "victims": names}));
                    self.rec_mut(uid).info = pre.pod;
                    let victims: Vec<PodUid> = pre
                        .victims
                        .iter()
                        .map(|v| v.uid)
                        .filter(|v| v.0 >= 1 && v.0 as usize <= self.pods.len())
                        .collect();
                    now = self.actuate_preemption(uid, victims, now);
                }
                self.queue.add_unschedulable(qp, PluginSet::of(&rejectors), now);
            }
            CycleResult::Error(st) => {
                self.hist.record_at(Hist::AttemptError, cycle_nanos);
                self.counters.errors += 1;
                self.trace(now, uid, "attempt", |_| serde_json::json!({"result": "error", "reasons": st.reasons}));
                self.queue.add_backoff(qp, now);
            }
        }
        true
    }

    /// Marks `uid` assumed on `node_sym` and starts its binding cycle: to the binder in a batch
    /// (wall time), parked on Permit for `permit_wait`, or bound inline (virtual time).
    pub(super) fn start_binding(
        &mut self,
        uid: PodUid,
        profile: usize,
        node_sym: crate::snapshot::Sym,
        permit_wait: Option<Duration>,
        attempt: u32,
        now: u64,
    ) {
        let rec = self.rec_mut(uid);
        rec.state = PodState::Assumed(node_sym);
        rec.unschedulable = false;
        rec.scheduled_nanos = Some(now);
        self.binds_in_flight += 1;
        self.trace(
            now,
            uid,
            "assumed",
            |d| serde_json::json!({"node": d.snap.interner.resolve(node_sym), "attempt": attempt}),
        );
        let mut job = BindJob::new(self.agent_pod(uid, node_sym)).with_profile(profile);
        if let Some(t) = permit_wait {
            job = job.with_permit_wait(t);
        }
        if self.binder.is_some() {
            if self.bind_batch.is_empty() {
                self.bind_batch_since_nanos = now;
            }
            self.bind_batch.push(job);
            if self.bind_batch.len() >= BIND_BATCH_PODS
                || now.saturating_sub(self.bind_batch_since_nanos) >= BIND_BATCH_MAX_DELAY_NANOS
            {
                self.flush_binds();
            }
        } else if let Some(t) = permit_wait {
            self.parked.push((now.saturating_add(t.as_nanos() as u64), job));
        } else {
            self.bind_inline(job);
        }
    }

    /// The queue's plugin ids of `plugins` of `profile` (see [`Driver::hint_base`]); ids past the
    /// queue's 64 share the last one, which has no hint (a rejection there requeues on any event).
    pub(super) fn queue_ids(&self, profile: usize, plugins: &[PluginId]) -> Vec<u8> {
        queue_ids(self.hint_base[profile], plugins)
    }

    /// Reserve, then Permit, for a pod just assumed on `node` (`schedulingCycle` after assume).
    /// `Some(wait)`: the binding cycle goes ahead, first waiting on Permit for `wait` if set.
    /// `None`: a Reserve failure or a Permit rejection; Unreserve ran (every Reserve plugin, in
    /// reverse order), the pod is forgotten and back in the queue (unschedulable with the plugin
    /// as rejector, or backing off after an error), as upstream's failure handler does.
    pub(super) fn reserve_and_permit(
        &mut self,
        uid: PodUid,
        profile: usize,
        node: NodeIdx,
        qp: &QueuedPod<()>,
        now: u64,
    ) -> Option<Option<Duration>> {
        let fw = &self.frameworks[profile];
        if fw.reserve.is_empty() && fw.permit.is_empty() {
            return Some(None);
        }
        let info = self.rec(uid).info.clone();
        let fw = &self.frameworks[profile];
        let cx = CycleCx { snap: &self.snap, pod: &info };
        let state = &mut self.engine.state;
        let st = fw.run_reserve(cx, state, node);
        let (stage, st) = if !st.is_success() {
            ("Reserve", st)
        } else {
            match fw.run_permit(cx, state, node, &mut self.waiting[profile]) {
                PermitOutcome::Allow => return Some(None),
                PermitOutcome::Wait(t) => return Some(Some(t)),
                PermitOutcome::Reject(st) => ("Permit", st),
            }
        };
        fw.run_unreserve(cx, state, node);
        let rejector = fw.plugins.iter().position(|p| p.name() == st.plugin);
        self.snap.unplace_pod(uid);
        let r = self.cache.forget(uid);
        self.note_cache(r);
        let msg = st.reasons.join(", ");
        self.trace(
            now,
            uid,
            "attempt",
            |_| serde_json::json!({"result": "rejected", "stage": stage, "plugin": st.plugin, "message": msg}),
        );
        let mut requeued = qp.clone();
        if st.code.is_rejection() {
            self.counters.unschedulable += 1;
            let record_reason = qp.attempts <= 1 || !self.rec(uid).unschedulable;
            self.rec_mut(uid).unschedulable = true;
            if record_reason {
                let reason = format!("0/1 nodes are available: {}.", st.reasons.join(", "));
                *self.unschedulable_reasons.entry(reason).or_default() += 1;
            }
            let ids = self.queue_ids(profile, rejector.as_slice());
            self.queue.add_unschedulable(requeued, PluginSet::of(&ids), now);
        } else {
            self.counters.errors += 1;
            requeued.timestamp_nanos = now;
            self.queue.add_backoff(requeued, now);
        }
        // A rejecting Permit plugin may have decided about waiting pods too.
        self.apply_permit_decisions(profile);
        None
    }

    /// Applies what Permit plugins decided about waiting pods: an allowed pod goes on to bind, a
    /// rejected one fails its binding cycle (Unreserve, forget, requeue).
    pub(super) fn apply_permit_decisions(&mut self, profile: usize) {
        let (allowed, rejected) = self.waiting[profile].take_decisions();
        let extended = self.waiting[profile].take_extensions();
        if allowed.is_empty() && rejected.is_empty() && extended.is_empty() {
            return;
        }
        if let Some(b) = self.binder.clone() {
            // A waiting pod may still be in the batch: the binder must hold it to release it.
            self.flush_binds();
            for (uid, timeout) in extended {
                b.extend_permit(uid, timeout);
            }
            for uid in allowed {
                b.allow(uid);
            }
            for (uid, msg) in rejected {
                b.reject(uid, &msg);
            }
            return;
        }
        for (uid, timeout) in extended {
            if let Some((deadline, job)) = self.parked.iter_mut().find(|(_, j)| j.pod.uid == uid) {
                let started = deadline.saturating_sub(job.permit_wait.unwrap_or_default().as_nanos() as u64);
                *deadline = started.saturating_add(timeout.as_nanos() as u64);
                job.permit_wait = Some(timeout);
            }
        }
        for uid in allowed {
            if let Some(i) = self.parked.iter().position(|(_, j)| j.pod.uid == uid) {
                let (_, job) = self.parked.remove(i);
                self.bind_inline(job);
            }
        }
        for (uid, msg) in rejected {
            if let Some(i) = self.parked.iter().position(|(_, j)| j.pod.uid == uid) {
                self.parked.remove(i);
                self.on_bind_failed(uid, &msg);
            }
        }
    }

    /// Virtual time: fails the pods whose Permit wait has run out by now (the binder's permit
    /// timer in wall-clock time).
    pub(super) fn expire_permits(&mut self) {
        let now = self.now();
        while let Some(i) = self.parked.iter().position(|(deadline, _)| *deadline <= now) {
            let (_, job) = self.parked.remove(i);
            let timeout = job.permit_wait.unwrap_or_default();
            self.on_bind_failed(job.pod.uid, &format!("rejected due to timeout after waiting {timeout:?} at permit"));
        }
    }

    /// The earliest Permit deadline of a parked pod (virtual time).
    pub(super) fn next_permit_deadline_nanos(&self) -> Option<u64> {
        self.parked.iter().map(|(d, _)| *d).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_ids_offset_by_the_profile_base_and_saturate_at_63() {
        let cases: &[(usize, &[PluginId], &[u8])] =
            &[(0, &[0, 3], &[0, 3]), (10, &[0, 5], &[10, 15]), (60, &[2, 3, 4, 200], &[62, 63, 63, 63]), (5, &[], &[])];
        for (base, plugins, want) in cases {
            assert_eq!(queue_ids(*base, plugins), want.to_vec(), "base {base}, plugins {plugins:?}");
        }
    }
}
