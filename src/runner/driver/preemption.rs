//! Preemption's victims, deleted as SchedulerAsyncPreemption says: inside PostFilter (off,
//! upstream's `prepareCandidate`) or after the cycle (on, `prepareCandidateAsync`), with the
//! preemptor blocked by DefaultPreemption's PreEnqueue until its last victim is gone.

use crate::clock::Clock;
use crate::ids::PodUid;

use super::{Driver, PodState};

/// What one API call of preemption (a victim's DisruptionTarget status patch, or its delete) takes
/// in the model: 1 ms, an apiserver write in scheduler_perf's integration setup. Modelled, not
/// measured; a victim takes two calls.
const PREEMPTION_API_CALL_NANOS: u64 = 1_000_000;
/// Victims deleted at once: upstream's parallelizer (16 workers) deletes them in waves.
const PREEMPTION_PARALLELISM: u64 = 16;

/// How long deleting `victims` victims in parallel takes: `ceil(victims / 16)` waves of two API calls.
fn victim_deletion_nanos(victims: usize) -> u64 {
    (victims as u64).div_ceil(PREEMPTION_PARALLELISM) * 2 * PREEMPTION_API_CALL_NANOS
}

/// An asynchronous preemption in flight: all victims but the last are deleted in parallel, then
/// the last one (upstream deletes the last alone, so that PreEnqueue can tell when it is gone).
pub(super) struct Preemption {
    preemptor: PodUid,
    /// When the victims but the last are gone, and them (empty once deleted).
    first_due_nanos: u64,
    first: Vec<PodUid>,
    /// When the last victim is gone.
    last_due_nanos: u64,
    last: PodUid,
}

impl Preemption {
    /// When this preemption next deletes something.
    pub(super) fn next_due_nanos(&self) -> u64 {
        if self.first.is_empty() {
            self.last_due_nanos
        } else {
            self.first_due_nanos
        }
    }
}

impl Driver {
    /// Deletes a preemptor's victims as SchedulerAsyncPreemption says; returns the time the
    /// preemptor's failure handling continues at. Off: PostFilter deletes them before it returns,
    /// and in virtual time the cycle pays for the calls. On: the cycle ends at once, the preemptor
    /// is marked as preempting in the queue, and [`Driver::fire_preemptions`] deletes the victims
    /// when their calls are done.
    pub(super) fn actuate_preemption(&mut self, preemptor: PodUid, mut victims: Vec<PodUid>, now: u64) -> u64 {
        // Victims another preemption already deleted get no API call (upstream skips those whose
        // deletion started); a PodGroup with disruptionMode `all` can be chosen by two preemptors.
        victims.retain(|v| self.rec(*v).state != PodState::Deleted);
        if victims.is_empty() {
            return now;
        }
        if !self.async_preemption {
            let mut now = now;
            if let Some(v) = &self.vclock {
                v.advance_by(victim_deletion_nanos(victims.len()));
                self.agent.advance_to(v.now_nanos());
                now = self.now();
            }
            for v in victims {
                self.trace(now, v, "preempted", |d| serde_json::json!({"by": d.key_of(preemptor)}));
                self.delete_pod(v);
            }
            return now;
        }
        let last = victims.pop().expect("not empty");
        let first_due_nanos = now + victim_deletion_nanos(victims.len());
        let last_due_nanos = first_due_nanos + victim_deletion_nanos(1);
        self.queue.set_preempting(preemptor, true);
        self.preemptions.push(Preemption { preemptor, first_due_nanos, first: victims, last_due_nanos, last });
        now
    }

    /// Deletes the victims of asynchronous preemptions whose calls are done by now; when the last
    /// victim goes, the preemptor's PreEnqueue passes again (before the deletion's event, which
    /// upstream's PreEnqueue sees with the victim already gone).
    pub(super) fn fire_preemptions(&mut self) {
        let now = self.now();
        let mut i = 0;
        while i < self.preemptions.len() {
            let p = &mut self.preemptions[i];
            let (preemptor, last) = (p.preemptor, p.last);
            if p.first_due_nanos <= now && !p.first.is_empty() {
                for v in std::mem::take(&mut p.first) {
                    self.trace(now, v, "preempted", |d| serde_json::json!({"by": d.key_of(preemptor)}));
                    self.delete_pod(v);
                }
            }
            if self.preemptions[i].last_due_nanos <= now {
                self.preemptions.swap_remove(i);
                self.queue.set_preempting(preemptor, false);
                if self.rec(last).state == PodState::Deleted {
                    // Gone meanwhile (another preemption took it): no deletion event will bring
                    // the preemptor back. Upstream's delete gets NotFound and the preemptor waits
                    // for a later event or the leftover flush, which a preemption-gated pod does
                    // not get here; schedperf activates it instead (not upstream).
                    self.queue.activate(preemptor);
                    continue;
                }
                self.trace(now, last, "preempted", |d| serde_json::json!({"by": d.key_of(preemptor)}));
                self.delete_pod(last);
                continue;
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn victims_are_deleted_in_waves_of_16_with_two_calls_each() {
        for (victims, want_ms) in [(0, 0), (1, 2), (16, 2), (17, 4), (32, 4), (33, 6)] {
            assert_eq!(victim_deletion_nanos(victims), want_ms * 1_000_000, "{victims} victims");
        }
    }
}
