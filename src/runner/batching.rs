//! The run's OpportunisticBatching state (`engine::batch`): one batch per profile, the scheduling
//! cycle count upstream compares (every pod the queue pops counts, even one then skipped), and
//! whether each profile signs pods at all.

use crate::engine::{BatchCx, BatchStats, OpportunisticBatch};
use crate::framework::{sign, Framework};
use crate::snapshot::PodInfo;

/// Feature gate name.
pub const GATE: &str = "OpportunisticBatching";

pub struct Batches {
    per_profile: Vec<OpportunisticBatch>,
    /// Per profile: every plugin it asks can sign pods (`computeBatchablePlugins`).
    signs: Vec<bool>,
    /// Pods popped so far (`SchedulingQueue.SchedulingCycle()`).
    cycle: u64,
}

impl Batches {
    /// `None` when the gate is off (it is on by default at v1.37.2).
    pub fn new<'a>(gate_on: bool, frameworks: impl IntoIterator<Item = &'a Framework>) -> Option<Self> {
        gate_on.then(|| {
            let signs: Vec<bool> = frameworks.into_iter().map(sign::profile_signs_pods).collect();
            Batches { per_profile: signs.iter().map(|_| OpportunisticBatch::default()).collect(), signs, cycle: 0 }
        })
    }

    /// Sets the cycle count (lockstep takes kube-scheduler's).
    pub fn set_cycle(&mut self, cycle: u64) {
        self.cycle = cycle;
    }

    /// The queue popped a pod.
    pub fn popped(&mut self) {
        self.cycle += 1;
    }

    /// What the engine batches `pod`'s cycle with under `profile`; `None` for a profile that signs
    /// no pod (the default one): its batch could never hold a ranking, so the cycle skips the
    /// bookkeeping (and its counters stay at 0, where upstream counts a `pod_not_batchable` flush
    /// per cycle).
    pub fn cx<'a>(&'a mut self, profile: usize, fw: &Framework, pod: &PodInfo, now_nanos: u64) -> Option<BatchCx<'a>> {
        if !self.signs[profile] {
            return None;
        }
        let signature = sign::sign_pod(fw, pod, &fw.scheduler_name);
        Some(BatchCx { batch: &mut self.per_profile[profile], signature, cycle: self.cycle, now_nanos })
    }

    /// The counters of every profile, summed.
    pub fn stats(&self) -> BatchStats {
        let mut s = BatchStats::default();
        for b in &self.per_profile {
            s.merge(&b.stats);
        }
        s
    }
}
