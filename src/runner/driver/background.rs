//! Work that goes on behind later ops: churn and rate-limited pod deletion.

use std::collections::{BTreeMap, VecDeque};

use crate::error::InputError;
use crate::ids::PodUid;

use super::{ChurnObject, Churner, Driver};

impl Churner {
    /// Starts the next round of creations if one is due by `now`, returning its number (1, 2, ...).
    /// Rounds come every interval from the first; past `number` rounds a `create` churn only lets
    /// its clock run (a `recreate` churn goes on, replacing its oldest objects).
    fn next_round(&mut self, now: u64) -> Option<u64> {
        while self.next_nanos <= now {
            self.next_nanos += self.interval_nanos.max(1);
            if !self.recreate && self.number > 0 && self.created >= self.number {
                continue;
            }
            self.created += 1;
            return Some(self.created);
        }
        None
    }
}

/// `deletePods` with `skipWaitToCompletion`: pods deleted in the background, one per interval.
pub(super) struct Deleter {
    /// When the next pod goes.
    pub(super) next_nanos: u64,
    pub(super) interval_nanos: u64,
    pub(super) left: VecDeque<PodUid>,
}

impl Deleter {
    /// The pods whose deletion is due by `now`, in order; the clock moves one interval per pod.
    fn due(&mut self, now: u64) -> Vec<PodUid> {
        let mut out = Vec::new();
        while self.next_nanos <= now {
            let Some(uid) = self.left.pop_front() else { break };
            self.next_nanos += self.interval_nanos;
            out.push(uid);
        }
        out
    }
}

impl Driver {
    pub(super) fn fire_churn(&mut self) -> Result<(), InputError> {
        self.fire_deleters();
        self.fire_preemptions();
        let now = self.now();
        for ci in 0..self.churners.len() {
            while let Some(round) = self.churners[ci].next_round(now) {
                let c = &self.churners[ci];
                let (templates, ns, recreate, number) =
                    (c.templates.clone(), c.namespace.clone(), c.recreate, c.number);
                for (ti, path) in templates.iter().enumerate() {
                    if recreate && self.churners[ci].alive[ti].len() as u64 >= number.max(1) {
                        match self.churners[ci].alive[ti].pop_front() {
                            Some(ChurnObject::Pod(uid)) => self.delete_pod(uid),
                            Some(ChurnObject::Node(name)) => self.delete_node(&name),
                            _ => {}
                        }
                    }
                    let objs = self.templates.instantiate(path, round, number, &BTreeMap::new())?;
                    let file = path.display().to_string();
                    for o in objs.iter() {
                        let made = self.create_object(o, Some(&ns), &file)?;
                        self.churners[ci].alive[ti].push_back(made);
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) fn next_churn_nanos(&self) -> Option<u64> {
        let churn = self.churners.iter().map(|c| c.next_nanos).min();
        let del = self.deleters.iter().filter(|d| !d.left.is_empty()).map(|d| d.next_nanos).min();
        let preemption = self.preemptions.iter().map(|p| p.next_due_nanos()).min();
        [churn, del, preemption].into_iter().flatten().min()
    }

    pub(super) fn fire_deleters(&mut self) {
        let now = self.now();
        for i in 0..self.deleters.len() {
            for uid in self.deleters[i].due(now) {
                self.delete_pod(uid);
            }
        }
        self.deleters.retain(|d| !d.left.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn churner(recreate: bool, number: u64, interval_nanos: u64) -> Churner {
        Churner {
            recreate,
            number,
            interval_nanos,
            namespace: "ns".into(),
            templates: Vec::new(),
            next_nanos: 0,
            created: 0,
            alive: Vec::new(),
        }
    }

    /// The rounds started at each of `times` in turn.
    fn rounds(c: &mut Churner, times: &[u64]) -> Vec<Vec<u64>> {
        times.iter().map(|&t| std::iter::from_fn(|| c.next_round(t)).collect()).collect()
    }

    #[test]
    fn churn_rounds_come_every_interval_and_stop_after_number_unless_recreating() {
        // (recreate, number, interval, times) -> rounds started at each time
        type Case<'a> = (bool, u64, u64, &'a [u64], &'a [&'a [u64]]);
        let cases: &[Case] = &[
            // One round at 0, then one per 10 ns; a late look catches up on every round missed.
            (false, 0, 10, &[0, 5, 10, 35], &[&[1], &[], &[2], &[3, 4]]),
            // `create` with number 2: two rounds, then nothing however long it runs.
            (false, 2, 10, &[0, 10, 20, 100], &[&[1], &[2], &[], &[]]),
            // `recreate` with number 2 goes on.
            (true, 2, 10, &[0, 10, 20], &[&[1], &[2], &[3]]),
            // A zero interval is one nanosecond (never a loop without end).
            (false, 0, 0, &[0, 2], &[&[1], &[2, 3]]),
        ];
        for (recreate, number, interval, times, want) in cases {
            let mut c = churner(*recreate, *number, *interval);
            let want: Vec<Vec<u64>> = want.iter().map(|w| w.to_vec()).collect();
            assert_eq!(rounds(&mut c, times), want, "recreate={recreate} number={number} interval={interval}");
        }
    }

    #[test]
    fn a_deleter_deletes_one_pod_per_interval_in_order() {
        let pods = |ids: &[u64]| ids.iter().map(|&i| PodUid(i)).collect::<Vec<_>>();
        let mut d = Deleter { next_nanos: 100, interval_nanos: 50, left: pods(&[1, 2, 3, 4]).into() };
        assert_eq!(d.due(99), pods(&[]));
        assert_eq!(d.due(100), pods(&[1]));
        assert_eq!(d.due(149), pods(&[]));
        assert_eq!(d.due(260), pods(&[2, 3, 4]), "late: every pod due by then, none more");
        assert_eq!(d.due(10_000), pods(&[]));
        assert_eq!(d.next_nanos, 300);
    }
}
