//! Partitionable devices in the structured allocator (DRAPartitionableDevices, on in v1.37), as
//! upstream's `incubating` allocator has them:
//!
//! - A pool's counter sets come from its slices with `sharedCounters` (wherever they point: the
//!   pool's other slices are read when the node's own do not make it complete). A counter set
//!   name twice in a pool, or a device consuming from a set or counter the pool does not have,
//!   makes the pool invalid (`getAndValidateCounterSets`, `validateDeviceCounterConsumption`).
//! - What is available of each counter: the sets' values less what the pool's devices already
//!   allocated (or in flight) consume, computed once per allocation (negative means none left).
//! - A device that consumes counters is allocated only if, with it and the devices picked so far
//!   in the search, no counter of its pool is consumed beyond what is available
//!   (`checkAvailableCounters`, which checks every counter of the pool); undone on backtrack.
//! - Per-device node selection: a slice with `perDeviceNodeSelection` reaches a node when one of
//!   its devices does (`nodeName`, `allNodes` or `nodeSelector` on the device), and each device
//!   is offered only on the nodes it reaches.

use std::collections::HashSet;

use super::allocator::{DeviceId, NodeView};
use crate::api::resource::{Device, ResourceSlice};
use crate::api::resource_counters::CounterSet;

/// Whether the slice sets `perDeviceNodeSelection: true`.
pub(super) fn per_device(slice: &ResourceSlice) -> bool {
    slice.spec.per_device_node_selection == Some(true)
}

/// `NodeMatches` for a device of a slice with per-device node selection.
pub(super) fn device_reaches(node: &NodeView<'_>, device: &Device) -> bool {
    match (
        device.node_name.as_deref().filter(|n| !n.is_empty()),
        device.all_nodes.unwrap_or(false),
        &device.node_selector,
    ) {
        (Some(name), _, _) => node.name == name,
        (None, true, _) => true,
        (None, false, Some(selector)) => (node.selector_matches)(selector),
        _ => false,
    }
}

/// A slice with per-device node selection is relevant for the node when one of its devices is.
pub(super) fn any_device_reaches(node: &NodeView<'_>, slice: &ResourceSlice) -> bool {
    slice.spec.devices.iter().any(|d| device_reaches(node, d))
}

/// The counter sets of a pool's slices, or why the pool is invalid. `counter_slices`: its slices
/// with `sharedCounters`; `device_slices`: the others (reaching the node or not), whose devices'
/// consumption must name sets and counters that exist.
pub(super) fn pool_counter_sets<'a>(
    counter_slices: &[&'a ResourceSlice],
    device_slices: &[&'a ResourceSlice],
) -> Result<Vec<&'a CounterSet>, String> {
    let mut sets: Vec<&'a CounterSet> = Vec::new();
    for slice in counter_slices {
        for set in &slice.spec.shared_counters {
            if sets.iter().any(|s| s.name == set.name) {
                return Err(format!("duplicate counter set name {}", set.name));
            }
            sets.push(set);
        }
    }
    for slice in device_slices {
        for device in &slice.spec.devices {
            for consumption in &device.consumes_counters {
                let Some(set) = sets.iter().find(|s| s.name == consumption.counter_set) else {
                    return Err(format!("counter set {} not found", consumption.counter_set));
                };
                if let Some(name) = consumption.counters.keys().find(|n| !set.counters.contains_key(*n)) {
                    return Err(format!("counter {name} not found in counter set {}", set.name));
                }
            }
        }
    }
    Ok(sets)
}

/// The counters of one pool during one allocation: per (set, counter), what is available and
/// what the devices picked so far consume (in nano-units).
pub(super) struct PoolCounters<'a> {
    keys: Vec<(&'a str, &'a str)>,
    available: Vec<i128>,
    consumed: Vec<i128>,
}

impl<'a> PoolCounters<'a> {
    /// The counters of `sets`, less what the allocated devices of `device_slices` (pool
    /// `driver`/`pool`) consume.
    pub(super) fn new(
        sets: &[&'a CounterSet],
        device_slices: &[&'a ResourceSlice],
        allocated: &HashSet<DeviceId>,
    ) -> Self {
        let mut keys = Vec::new();
        let mut available = Vec::new();
        for set in sets {
            for (name, counter) in &set.counters {
                keys.push((set.name.as_str(), name.as_str()));
                available.push(counter.value.nanos());
            }
        }
        let mut counters = PoolCounters { consumed: vec![0; keys.len()], keys, available };
        for slice in device_slices {
            for device in slice.spec.devices.iter().filter(|d| !d.consumes_counters.is_empty()) {
                if !allocated.contains(&DeviceId::new(&slice.spec.driver, &slice.spec.pool.name, &device.name)) {
                    continue;
                }
                for consumption in &device.consumes_counters {
                    for (name, c) in &consumption.counters {
                        if let Some(i) = counters.index(&consumption.counter_set, name) {
                            counters.available[i] -= c.value.nanos();
                        }
                    }
                }
            }
        }
        counters
    }

    fn index(&self, set: &str, counter: &str) -> Option<usize> {
        self.keys.iter().position(|&(s, c)| s == set && c == counter)
    }

    /// `checkAvailableCounters`: adds `device`'s consumption; if then any counter of the pool is
    /// consumed beyond what is available, takes it back and returns false.
    pub(super) fn reserve(&mut self, device: &Device) -> bool {
        self.add(device, 1);
        if self.available.iter().zip(&self.consumed).any(|(a, c)| a < c) {
            self.add(device, -1);
            return false;
        }
        true
    }

    /// `deallocateCountersForDevice`.
    pub(super) fn release(&mut self, device: &Device) {
        self.add(device, -1);
    }

    fn add(&mut self, device: &Device, sign: i128) {
        for consumption in &device.consumes_counters {
            for (name, c) in &consumption.counters {
                if let Some(i) = self.index(&consumption.counter_set, name) {
                    self.consumed[i] += sign * c.value.nanos();
                }
            }
        }
    }
}
