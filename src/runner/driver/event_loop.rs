//! The scheduling thread's loop: schedule, drain events, and wait for the next thing due.

use std::cell::Cell;
use std::time::Duration;

use crate::ids::PodUid;
use crate::runner::RunError;

use super::{Driver, PodRec, NO_PROGRESS_WAIT_NANOS, UPSTREAM_WAIT_TIMEOUT_NANOS};

impl Driver {
    /// Runs the loop until `done` holds, the deadline passes, or nothing more can happen.
    pub(super) fn run_until(&mut self, deadline: Option<u64>, done: &dyn Fn(&Driver) -> bool) -> Result<(), RunError> {
        let progress = |d: &Driver| d.counters.scheduled + d.counters.bind_failures + d.deleted;
        let (mut last_progress, mut last_progress_at) = (progress(self), self.now());
        let started = self.now();
        loop {
            self.drain();
            self.expire_permits();
            self.fire_churn()?;
            let now = self.now();
            if done(self) || deadline.is_some_and(|d| now >= d) {
                return Ok(());
            }
            if deadline.is_none() && now.saturating_sub(started) >= UPSTREAM_WAIT_TIMEOUT_NANOS {
                return Ok(());
            }
            // An open-ended wait ends when nothing was bound or deleted for a while: the pods still
            // waited for cannot be scheduled (background churn alone keeps the loop busy).
            if progress(self) != last_progress {
                (last_progress, last_progress_at) = (progress(self), now);
            } else if deadline.is_none() && now.saturating_sub(last_progress_at) > NO_PROGRESS_WAIT_NANOS {
                return Ok(());
            }
            if self.schedule_next() {
                continue;
            }
            // Idle: nothing is ready to schedule.
            self.flush_binds();
            let lens = self.queue.lens();
            let stalled = self.binds_in_flight == 0
                && lens.active == 0
                && lens.backoff == 0
                && self.preemptions.is_empty()
                // Background deletions (deletePods with skipWaitToCompletion) still to come can free
                // room for the pods waited for: upstream's wait goes on while they happen.
                && self.deleters.is_empty()
                && deadline.is_none();
            if stalled && !self.drain() {
                return Ok(());
            }
            let mut wake =
                [self.queue.next_wakeup_nanos(), self.next_churn_nanos(), self.next_permit_deadline_nanos(), deadline]
                    .into_iter()
                    .flatten()
                    .min();
            match &self.vclock {
                Some(v) => {
                    if let Some(a) = self.agent.next_due_nanos() {
                        wake = Some(wake.map_or(a, |w| w.min(a)));
                    }
                    match wake {
                        Some(t) => {
                            v.advance_to(t);
                            self.agent.advance_to(t);
                        }
                        None => return Ok(()),
                    }
                }
                None => {
                    let now = self.now();
                    let timeout =
                        wake.map_or(Duration::from_millis(20), |w| Duration::from_nanos(w.saturating_sub(now)));
                    let timeout = timeout.min(Duration::from_millis(20));
                    crossbeam_channel::select! {
                        recv(self.bind_results) -> r => if let Ok(r) = r {
                            let at = self.now();
                            self.on_bind_result(r, at);
                        },
                        recv(self.agent_events) -> e => if let Ok(e) = e { self.handle_agent_event(e) },
                        default(timeout) => {},
                    }
                }
            }
        }
    }

    pub(super) fn pods_settled(&self, pred: &dyn Fn(&PodRec) -> bool, attempted_only: bool) -> bool {
        self.pods.iter().filter(|r| pred(r)).all(|r| r.settled(attempted_only))
    }

    /// [`pods_settled`](Self::pods_settled) for a wait that `run_until` checks after every event:
    /// the pods before `*from` were seen settled (or not matching `pred`) by an earlier call and are
    /// not looked at again, so a wait costs O(pods) in all instead of O(pods) per event. Sound only
    /// for a wait on scheduling (not `attempted_only`): a bound pod leaves that state only by
    /// deletion, and a deleted one never does, so a settled pod stays settled; `pred` must depend
    /// on the record's fixed fields only (namespace, template, created_by_run, measured).
    pub(super) fn pods_scheduled_from(&self, pred: &dyn Fn(&PodRec) -> bool, from: &Cell<usize>) -> bool {
        let mut i = from.get();
        while i < self.pods.len() && (!pred(&self.pods[i]) || self.pods[i].settled(false)) {
            i += 1;
        }
        from.set(i);
        i == self.pods.len()
    }

    /// Whether every pod of `uids` is bound or deleted, looking from `uids[*from]` on (see
    /// [`pods_scheduled_from`](Self::pods_scheduled_from)).
    pub(super) fn uids_scheduled_from(&self, uids: &[PodUid], from: &Cell<usize>) -> bool {
        let mut i = from.get();
        while i < uids.len() && self.rec(uids[i]).settled(false) {
            i += 1;
        }
        from.set(i);
        i == uids.len()
    }
}
