//! Device compatibility groups (DRADeviceCompatibilityGroups, off by default at v1.37) as
//! upstream's `experimental` allocator has them (`compatibility_groups.go`,
//! `checkAndConsumeCompatibilityGroups`, `compatibilityGroupsBaselineForPool`):
//!
//! - Per (pool, counter set), a rolling intersection of the groups of the devices drawing from
//!   it: seeded from the pool's already allocated devices (the baseline, read from every slice of
//!   the pool as the counters are), then narrowed by each device the search picks.
//! - A device that consumes counters is admitted only if, for every counter set it consumes, its
//!   groups intersect the running ones (no groups: only while every member so far had none; the
//!   first member of a set is always admitted). It is checked before its counters, and skipped for
//!   a further share of a device whose counters are already charged (`skipCounterCheck`).
//! - Each admission returns what it replaced, restored when the device is rejected later in
//!   `allocateDevice` or undone on backtrack.
//! - Off, `GatherPools` ignores every slice whose devices declare groups, so their pools are
//!   incomplete ([`uses_groups`]).

use crate::api::resource::{Device, ResourceSlice};

/// `compatibilityGroupIntersection`: the groups every member of a counter set shares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Intersection {
    /// False until the first device is placed on the counter set (then anything is admitted).
    has_members: bool,
    /// Every member so far declared no groups (only meaningful with members).
    all_empty: bool,
    /// The running intersection of the members' (non-empty) groups.
    groups: Vec<String>,
}

impl Intersection {
    /// `admits`.
    pub(super) fn admits(&self, groups: &[String]) -> bool {
        if !self.has_members {
            return true;
        }
        if groups.is_empty() {
            return self.all_empty;
        }
        if self.all_empty {
            return false;
        }
        self.groups.iter().any(|g| groups.contains(g))
    }

    /// `add`: the intersection with one more member (one `admits` accepted, or an allocated one).
    pub(super) fn add(&self, groups: &[String]) -> Intersection {
        if !self.has_members {
            let mut unique: Vec<String> = Vec::with_capacity(groups.len());
            for g in groups {
                if !unique.contains(g) {
                    unique.push(g.clone());
                }
            }
            return Intersection { has_members: true, all_empty: groups.is_empty(), groups: unique };
        }
        if self.all_empty || groups.is_empty() {
            return self.clone();
        }
        let groups = self.groups.iter().filter(|g| groups.contains(g)).cloned().collect();
        Intersection { has_members: true, all_empty: false, groups }
    }
}

/// `sliceUsesCompatibilityGroups`.
pub(super) fn uses_groups(slice: &ResourceSlice) -> bool {
    slice.spec.devices.iter().flat_map(|d| &d.consumes_counters).any(|c| !c.compatibility_groups.is_empty())
}

/// What one admission replaced: per counter set (index), its running state before (`None`: it had
/// none, so the baseline applied).
pub(super) type GroupsUndo = Vec<(usize, Option<Intersection>)>;

/// The compatibility groups of one pool during one allocation.
pub(super) struct PoolGroups<'a> {
    /// The pool's counter set names (as in its counters).
    sets: Vec<&'a str>,
    /// Per set: the intersection of the allocated devices' groups.
    baseline: Vec<Intersection>,
    /// Per set: the running intersection once the search placed a device on it.
    running: Vec<Option<Intersection>>,
}

impl<'a> PoolGroups<'a> {
    /// The baseline of `sets` from the devices of `device_slices` that `is_allocated`, in slice
    /// and device order.
    pub(super) fn new(
        sets: Vec<&'a str>,
        device_slices: &[&'a ResourceSlice],
        is_allocated: impl Fn(&ResourceSlice, &Device) -> bool,
    ) -> Self {
        let mut baseline = vec![Intersection::default(); sets.len()];
        for slice in device_slices {
            for device in slice.spec.devices.iter().filter(|d| !d.consumes_counters.is_empty()) {
                if !is_allocated(slice, device) {
                    continue;
                }
                for c in &device.consumes_counters {
                    if let Some(i) = sets.iter().position(|s| *s == c.counter_set) {
                        baseline[i] = baseline[i].add(&c.compatibility_groups);
                    }
                }
            }
        }
        let running = vec![None; sets.len()];
        PoolGroups { sets, baseline, running }
    }

    /// `checkAndConsumeCompatibilityGroups`: `Some(undo)` with `device` folded into every counter
    /// set it consumes, or `None` (nothing changed) when one of them does not admit it.
    pub(super) fn admit(&mut self, device: &Device) -> Option<GroupsUndo> {
        let mut saved: GroupsUndo = Vec::with_capacity(device.consumes_counters.len());
        for c in &device.consumes_counters {
            // A set the pool lacks makes the pool invalid: never reached.
            let Some(i) = self.sets.iter().position(|s| *s == c.counter_set) else { continue };
            let current = self.running[i].as_ref().unwrap_or(&self.baseline[i]);
            if !current.admits(&c.compatibility_groups) {
                self.restore(saved);
                return None;
            }
            let next = current.add(&c.compatibility_groups);
            saved.push((i, self.running[i].replace(next)));
        }
        Some(saved)
    }

    /// Undoes one admission (in reverse order).
    pub(super) fn restore(&mut self, undo: GroupsUndo) {
        for (i, prev) in undo.into_iter().rev() {
            self.running[i] = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// `compatibility_groups_test.go`'s cases for `admits`/`add`, as a table: members added in
    /// order, then whether a candidate is admitted.
    #[test]
    fn intersection_admits_as_upstream() {
        /// (name, members added in order, candidate, admitted).
        type AdmitCase<'a> = (&'a str, &'a [&'a [&'a str]], &'a [&'a str], bool);
        let cases: &[AdmitCase] = &[
            ("no members admits groups", &[], &["a"], true),
            ("no members admits no groups", &[], &[], true),
            ("shared group", &[&["a", "b"]], &["b", "c"], true),
            ("disjoint groups", &[&["a"]], &["b"], false),
            ("no groups after grouped", &[&["a"]], &[], false),
            ("grouped after no groups", &[&[]], &["a"], false),
            ("no groups after no groups", &[&[]], &[], true),
            ("intersection narrows", &[&["a", "b"], &["b", "c"]], &["a"], false),
            ("intersection keeps the common one", &[&["a", "b"], &["b", "c"]], &["b"], true),
            ("duplicates count once", &[&["a", "a"]], &["a"], true),
        ];
        for (name, members, candidate, want) in cases {
            let mut i = Intersection::default();
            for m in *members {
                assert!(i.admits(&g(m)), "{name}: member {m:?} admitted");
                i = i.add(&g(m));
            }
            assert_eq!(i.admits(&g(candidate)), *want, "{name}");
        }
        // Adding an empty list to a grouped set (allocated devices are not checked) changes nothing.
        let grouped = Intersection::default().add(&g(&["a"]));
        assert_eq!(grouped.add(&[]), grouped);
    }
}
