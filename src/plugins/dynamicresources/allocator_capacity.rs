//! DRAConsumableCapacity for the structured allocator: devices with `allowMultipleAllocations`
//! are shared, each allocation (a "share", with a `shareID`) consuming part of the device's
//! capacities; a request's `capacity.requests` says how much, rounded up by the capacity's
//! `requestPolicy`. A port of upstream's `internal/incubating/consumable_capacity.go` and of the
//! consumed-capacity bookkeeping of `allocator_incubating.go` (v1.37.2, where the feature is on by
//! default), and of the `distinctAttribute` constraint (`constraint.go`).
//!
//! What upstream's allocator reads as `AllocatedState` is [`SharedState`] here: the devices an
//! allocated (or in-flight) claim holds as shares, and the capacity those shares consume, summed
//! per device. A shared result is not in the caller's set of allocated devices.
//!
//! `shareID`: upstream draws a random UUID (`uuid.NewUUID`) per share, so the oracle's differ from
//! run to run and are never compared; here it is [`share_id`], a digest of the claim, the result's
//! index and the device, in UUID form: deterministic, and unique per claim and device.

use std::collections::{BTreeMap, HashMap, HashSet};

use sha2::{Digest, Sha256};

use super::allocator::DeviceId;
use crate::api::quantity::Quantity;
use crate::api::resource::{
    AllocationResult, AttrRef, AttributeValue, CapacityRequestPolicy, CapacityRequestPolicyRange, CapacityRequirements,
    DeviceAttribute, DeviceCapacity,
};

/// Consumed capacity by capacity name (upstream's `ConsumedCapacity`).
pub type Consumed = BTreeMap<String, Quantity>;

/// The shares allocated claims hold (upstream's `AllocatedSharedDeviceIDs` and
/// `AggregatedCapacity` of `AllocatedState`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SharedState {
    /// Devices with at least one share allocated.
    pub shared: HashSet<DeviceId>,
    /// Per device: the capacity its shares consume, summed.
    pub consumed: HashMap<DeviceId, Consumed>,
}

impl SharedState {
    /// Adds the shares of `allocation` (results with a `shareID`; admin-access results are not
    /// allocated, as upstream's `foreachAllocatedDevice` has it).
    pub fn add(&mut self, allocation: &AllocationResult) {
        for r in &allocation.devices.results {
            if r.share_id.is_none() || r.admin_access == Some(true) {
                continue;
            }
            let id = DeviceId::new(&r.driver, &r.pool, &r.device);
            if !r.consumed_capacity.is_empty() {
                add_consumed(self.consumed.entry(id.clone()).or_default(), &r.consumed_capacity);
            }
            self.shared.insert(id);
        }
    }

    /// The shares of every allocation in `allocations`.
    pub fn of<'a>(allocations: impl IntoIterator<Item = &'a AllocationResult>) -> SharedState {
        let mut state = SharedState::default();
        for a in allocations {
            state.add(a);
        }
        state
    }
}

/// Adds `more` to `to`, name by name.
pub fn add_consumed(to: &mut Consumed, more: &Consumed) {
    for (name, q) in more {
        let entry = to.entry(name.clone()).or_insert(Quantity::ZERO);
        *entry = entry.saturating_add(*q);
    }
}

/// Subtracts `less` from `from`, name by name (undoing [`add_consumed`]).
pub fn sub_consumed(from: &mut Consumed, less: &Consumed) {
    for (name, q) in less {
        if let Some(entry) = from.get_mut(name) {
            *entry = entry.saturating_sub(*q);
        }
    }
}

/// Why a capacity request aborts the allocation (upstream's fatal errors of
/// `CmpRequestOverCapacity`: not representable, or negative).
pub type CapacityError = String;

/// `CmpRequestOverCapacity`: whether `request` fits in a device's `capacity` on top of what
/// allocated claims consume (`allocated`) and what this search has taken so far (`allocating`).
/// `Ok(false)`: skip the device; `Err`: abort the allocation.
pub fn fits(
    request: Option<&CapacityRequirements>,
    capacity: &BTreeMap<String, DeviceCapacity>,
    allocated: Option<&Consumed>,
    allocating: Option<&Consumed>,
) -> Result<bool, CapacityError> {
    if let Some(r) = request {
        if r.requests.keys().any(|name| !capacity.contains_key(name)) {
            return Ok(false);
        }
    }
    let mut consumed = Vec::with_capacity(capacity.len());
    for (name, cap) in capacity {
        let q = consumed_of(request.and_then(|r| r.requests.get(name)), cap)
            .map_err(|e| format!("capacity \"{name}\": {e}"))?;
        if q < Quantity::ZERO {
            return Err(format!("capacity \"{name}\": capacity value is negative"));
        }
        consumed.push(q);
    }
    for ((name, cap), q) in capacity.iter().zip(consumed) {
        if violates_policy(q, cap.request_policy.as_ref()) {
            return Ok(false);
        }
        let mut total = q;
        for taken in [allocated, allocating].into_iter().flatten() {
            if let Some(t) = taken.get(name) {
                total = total.saturating_add(*t);
            }
        }
        if total > cap.value {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `GetConsumedCapacityFromRequest`: what one share consumes of each of the device's capacities.
pub fn consumed_by(
    request: Option<&CapacityRequirements>,
    capacity: &BTreeMap<String, DeviceCapacity>,
) -> Result<Consumed, CapacityError> {
    capacity
        .iter()
        .map(|(name, cap)| {
            consumed_of(request.and_then(|r| r.requests.get(name)), cap)
                .map(|q| (name.clone(), q))
                .map_err(|e| format!("capacity \"{name}\": {e}"))
        })
        .collect()
}

/// `calculateConsumedCapacity`: no request takes the policy's default, else the whole value; a
/// request is rounded up into the valid range, or to the next valid value.
fn consumed_of(requested: Option<&Quantity>, cap: &DeviceCapacity) -> Result<Quantity, CapacityError> {
    let Some(&requested) = requested else {
        return Ok(cap.request_policy.as_ref().and_then(|p| p.default).unwrap_or(cap.value));
    };
    let Some(policy) = &cap.request_policy else { return Ok(requested) };
    match &policy.valid_range {
        Some(range @ CapacityRequestPolicyRange { min: Some(_), .. }) => round_up_range(requested, range),
        _ if !policy.valid_values.is_empty() => {
            Ok(policy.valid_values.iter().find(|v| requested <= **v).copied().unwrap_or(requested))
        }
        _ => Ok(requested),
    }
}

/// `roundUpRange` on the integer path (`DRAFractionalCapacityRange` is off by default): below
/// `min` gives `min`; with a `step`, `min + step * ceil((requested - min) / step)` in whole units
/// (`Quantity.Value()` rounds each up); beyond `i64::MAX` is not representable.
fn round_up_range(requested: Quantity, range: &CapacityRequestPolicyRange) -> Result<Quantity, CapacityError> {
    let min = range.min.unwrap_or(Quantity::ZERO);
    if requested < min {
        return Ok(min);
    }
    let Some(step) = range.step else { return Ok(requested) };
    if requested > Quantity::from_value(i64::MAX) {
        return Err(format!(
            "capacity request cannot be represented in the device's range arithmetic: request {requested} exceeds MaxInt64"
        ));
    }
    let (requested, step, min) = (requested.value_ceil(), step.value_ceil(), min.value_ceil());
    let added = requested - min;
    let n = added / step + i64::from(added % step != 0);
    if min >= 0 && n > (i64::MAX - min) / step {
        return Err(format!(
            "capacity request cannot be represented in the device's range arithmetic: rounding request {requested} up to the next step passes MaxInt64"
        ));
    }
    Ok(Quantity::from_value(min + step * n))
}

/// `violatesPolicy`: the default is always valid; otherwise beyond `max`, off a `step` from `min`,
/// or not one of the valid values.
fn violates_policy(q: Quantity, policy: Option<&CapacityRequestPolicy>) -> bool {
    let Some(policy) = policy else { return false };
    if policy.default == Some(q) {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range.max.is_some_and(|max| q > max) {
            return true;
        }
        if let Some(step) = range.step {
            let min = range.min.unwrap_or(Quantity::ZERO).value_ceil();
            return (q.value_ceil() - min) % step.value_ceil() != 0;
        }
        return false;
    }
    if !policy.valid_values.is_empty() {
        return !policy.valid_values.contains(&q);
    }
    false
}

/// A `distinctAttribute` constraint: every device of its requests has the attribute, each with a
/// different value (`distinctAttributeConstraint`); with DRAListTypeAttributes, with values
/// pairwise disjoint as sets (a scalar is a one-element set).
pub struct DistinctAttribute<'a> {
    pub requests: Vec<&'a str>,
    pub attribute: &'a str,
    /// Off: each added device's scalar value (`None` for a list value, which upstream's type
    /// switch cannot compare: it is refused unless it is the first).
    pub values: Vec<Option<AttributeValue>>,
    /// DRAListTypeAttributes: each added device's value set (`None` when off).
    pub sets: Option<Vec<Vec<AttrRef<'a>>>>,
}

impl<'a> DistinctAttribute<'a> {
    pub fn new(requests: Vec<&'a str>, attribute: &'a str, list_type_attributes: bool) -> Self {
        DistinctAttribute { requests, attribute, values: Vec::new(), sets: list_type_attributes.then(Vec::new) }
    }

    /// Adds a device of `request` (`subrequest` set for a firstAvailable alternative) with
    /// `attribute`; false when it has none or a value already taken.
    pub fn add(&mut self, applies: bool, attribute: Option<&'a DeviceAttribute>) -> bool {
        if !applies {
            return true;
        }
        let Some(attribute) = attribute else { return false };
        if let Some(sets) = &mut self.sets {
            let Some(set) = attribute.as_set() else { return false };
            if sets.iter().any(|s| crate::api::resource::intersects_sorted(s, &set)) {
                return false;
            }
            sets.push(set);
            return true;
        }
        let value = attribute.value();
        match &value {
            // A value upstream's switch does not know: distinct only from nothing.
            None if !self.values.is_empty() => return false,
            Some(v) if self.values.iter().any(|x| x.as_ref() == Some(v)) => return false,
            _ => {}
        }
        self.values.push(value);
        true
    }

    /// Undoes the last `add` of an applying device.
    pub fn remove(&mut self, applies: bool) {
        if applies {
            match &mut self.sets {
                Some(sets) => {
                    sets.pop();
                }
                None => {
                    self.values.pop();
                }
            }
        }
    }
}

/// The `shareID` of result `index` of `claim` (`namespace/name`) on `device`: the first 16 bytes
/// of sha256("<claim>/<index>/<driver>/<pool>/<device>") as a version-4 UUID's text.
pub fn share_id(claim: &str, index: usize, device: &DeviceId) -> String {
    let digest = Sha256::digest(format!("{claim}/{index}/{device}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}
