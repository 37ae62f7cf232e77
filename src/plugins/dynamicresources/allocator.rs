//! The structured allocator for the basic DRA features: requests `exactly` (device class,
//! selectors, `ExactCount` / `All`, count, admin access), the classes' selectors, `matchAttribute`
//! constraints, and devices already allocated excluded. A port of upstream's
//! `k8s.io/dynamic-resource-allocation/structured` allocator as v1.37.2 runs it with the default
//! feature gates (the `incubating` variant, since DRAConsumableCapacity and
//! DRADeviceBindingConditions are on): pools sorted by (driver, pool), a pool's slices by name,
//! devices in slice order, an exhaustive depth-first search that takes the first full solution
//! (claims in order, then their requests, then each request's devices), undoing a device when
//! the rest cannot be allocated. For these features it decides as the `stable` variant does,
//! whose only difference is its unsorted pool order (one pool per node in scheduler_perf).
//!
//! Partitionable devices (shared counters, per-device node selection) are in
//! [`super::allocator_counters`], device taints and tolerations in [`super::allocator_taints`],
//! DRAConsumableCapacity (devices allowing multiple allocations, capacity requests and request
//! policies, `distinctAttribute`) in [`super::allocator_capacity`], DRAPrioritizedList
//! (`firstAvailable`: subrequests tried in order, results named `<request>/<subrequest>`) in
//! [`super::allocator_prioritized`]; all hook into the pools and the search here.
//!
//! DRADeviceCompatibilityGroups (off by default; on, upstream runs its `experimental` allocator,
//! which decides as `incubating` does for everything else here) is in
//! [`super::allocator_groups`]: the run's [`DraFeatures`] say whether it is on.
//!
//! DRAListTypeAttributes (off by default; on, upstream runs `experimental` too): `matchAttribute`
//! keeps a stack of running intersections (a scalar is a one-element set; a device joins when the
//! intersection with its set stays non-empty) and `distinctAttribute` wants each device's set
//! disjoint from every earlier one; off, the scalar comparisons of `incubating`.
//!
//! Not here (the caller refuses such claims and slices before allocating; a workload using them
//! is skipped): binding conditions.
//!
//! CEL selectors are evaluated through [`DeviceSelectors`], so each distinct expression is compiled
//! once by whoever implements it; results are cached per (request, device) as upstream does.

use std::collections::{BTreeMap, HashSet};

use super::allocator_capacity::{self as capacity, Consumed, DistinctAttribute, SharedState};
use super::allocator_counters::{self as counters, PoolCounters};
use super::allocator_groups::{self as groups, GroupsUndo, PoolGroups};
use super::allocator_prioritized::{self as prioritized, RequestForm, MAX_SIZE_EXCEEDED};
use super::allocator_taints::taint_prevents_allocation;
use crate::api::objects::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm};
use crate::api::resource::{
    AllocationResult, AttrRef, CapacityRequirements, Device, DeviceAllocationMode, DeviceAllocationResult,
    DeviceAttribute, DeviceClass, DeviceRequestAllocationResult, DeviceSelector, ResourceClaim, ResourceSlice,
};
use crate::api::resource_counters::DeviceToleration;
pub use crate::snapshot::dra::DraFeatures;

/// `resourceapi.AllocationResultsMaxSize`: at most this many devices per claim.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// The error when no allocation was found and some pool reaching the node was invalid; not
/// fatal for other nodes (upstream wraps it in `ErrFailedAllocationOnNode`).
pub const INVALID_POOLS: &str = "invalid resource pools were encountered";

/// A device's identity: (driver, pool, device) names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    pub driver: String,
    pub pool: String,
    pub device: String,
}

impl DeviceId {
    pub fn new(driver: &str, pool: &str, device: &str) -> Self {
        DeviceId { driver: driver.to_string(), pool: pool.to_string(), device: device.to_string() }
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// Why a selector could not be evaluated (the message is cel-go's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectorError {
    Compile(String),
    Runtime(String),
}

/// Evaluates CEL device selectors. Implementations compile each distinct expression once
/// ([`super::selectors::CelSelectors`]).
pub trait DeviceSelectors {
    /// Whether `device` of `driver` satisfies `expression`.
    fn matches(&mut self, expression: &str, driver: &str, device: &Device) -> Result<bool, SelectorError>;
}

/// The node an allocation is for: its name and how a node selector matches it.
pub struct NodeView<'a> {
    pub name: &'a str,
    /// Whether the node satisfies a slice's (or device's) `nodeSelector`.
    pub selector_matches: &'a dyn Fn(&NodeSelector) -> bool,
}

/// What an allocation attempt found.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// One result per claim, in the claims' order.
    Allocated(Vec<AllocationResult>),
    /// The claims cannot all be allocated on this node.
    Unfit,
}

/// `NodeMatches`: a slice (or device) with a node name, all nodes or a node selector.
fn node_matches(
    node: &NodeView<'_>,
    node_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelector>,
) -> bool {
    match (node_name.filter(|n| !n.is_empty()), all_nodes, selector) {
        (Some(name), _, _) => node.name == name,
        (None, true, _) => true,
        (None, false, Some(selector)) => (node.selector_matches)(selector),
        _ => false,
    }
}

/// A pool of devices that reach the node: complete and valid, or not (then nothing is allocated
/// from it, and an `All` request fails).
struct Pool<'a> {
    driver: &'a str,
    name: &'a str,
    incomplete: bool,
    invalid: bool,
    slices: Vec<&'a ResourceSlice>,
    /// DRAPartitionableDevices: the pool's counter sets, and its slices that do not reach the node
    /// (their allocated devices consume counters too).
    counter_sets: Vec<&'a crate::api::resource_counters::CounterSet>,
    other_slices: Vec<&'a ResourceSlice>,
}

/// `GatherPools`: the pools with a slice reaching `node`, the newest generation of each, sorted by
/// (driver, pool), their slices by name.
/// With compatibility groups off, a slice whose devices declare groups is ignored (and not counted
/// towards its pool's completeness).
fn gather_pools<'a>(slices: &[&'a ResourceSlice], node: &NodeView<'_>, features: DraFeatures) -> Vec<Pool<'a>> {
    let ignored = |slice: &ResourceSlice| !features.compatibility_groups && groups::uses_groups(slice);
    let mut by_pool: BTreeMap<(&'a str, &'a str), Vec<&'a ResourceSlice>> = BTreeMap::new();
    for &slice in slices {
        if ignored(slice) {
            continue;
        }
        let spec = &slice.spec;
        let all_nodes = spec.all_nodes.unwrap_or(false);
        if spec.node_name.as_deref().is_none_or(str::is_empty) && !all_nodes && spec.node_selector.is_none() {
            if !counters::per_device(slice) || !counters::any_device_reaches(node, slice) {
                continue;
            }
        } else if !node_matches(node, spec.node_name.as_deref(), all_nodes, spec.node_selector.as_ref()) {
            continue;
        }
        let entry = by_pool.entry((spec.driver.as_str(), spec.pool.name.as_str())).or_default();
        match entry.first().map(|s| s.spec.pool.generation) {
            Some(g) if spec.pool.generation < g => {}
            Some(g) if spec.pool.generation > g => *entry = vec![slice],
            _ => entry.push(slice),
        }
    }
    let mut pools = Vec::with_capacity(by_pool.len());
    for ((driver, name), mut pool_slices) in by_pool {
        let generation = pool_slices[0].spec.pool.generation;
        let count = pool_slices[0].spec.pool.resource_slice_count;
        let mut other_slices = Vec::new();
        if pool_slices.len() as i64 != count {
            // checkSlicesInPool: every slice of the pool, wherever it points.
            let mut obsolete = false;
            let mut all = 0i64;
            for s in slices {
                if s.spec.driver != driver || s.spec.pool.name != name {
                    continue;
                }
                match s.spec.pool.generation.cmp(&generation) {
                    std::cmp::Ordering::Equal if ignored(s) => {}
                    std::cmp::Ordering::Equal => {
                        all += 1;
                        if !pool_slices.iter().any(|p| p.metadata.name == s.metadata.name) {
                            other_slices.push(*s);
                        }
                    }
                    std::cmp::Ordering::Greater => obsolete = true,
                    std::cmp::Ordering::Less => {}
                }
            }
            if obsolete {
                continue;
            }
            if all != count {
                pools.push(Pool {
                    driver,
                    name,
                    incomplete: true,
                    invalid: false,
                    slices: Vec::new(),
                    counter_sets: Vec::new(),
                    other_slices: Vec::new(),
                });
                continue;
            }
        }
        pool_slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut names = HashSet::new();
        let mut invalid = !pool_slices.iter().flat_map(|s| &s.spec.devices).all(|d| names.insert(d.name.as_str()));
        let (counter_slices, device_slices): (Vec<&ResourceSlice>, Vec<&ResourceSlice>) =
            pool_slices.iter().chain(&other_slices).partition(|s| !s.spec.shared_counters.is_empty());
        let counter_sets = counters::pool_counter_sets(&counter_slices, &device_slices).unwrap_or_else(|_| {
            invalid = true;
            Vec::new()
        });
        other_slices.retain(|s| s.spec.shared_counters.is_empty());
        pools.push(Pool { driver, name, incomplete: false, invalid, slices: pool_slices, counter_sets, other_slices });
    }
    pools
}

/// One device of a usable pool, in search order.
struct Candidate<'a> {
    id: DeviceId,
    device: &'a Device,
    slice: &'a ResourceSlice,
    /// Index of its pool in the search's `counters`.
    pool: usize,
    /// Per-device node selection: whether the device reaches the node (true otherwise).
    reachable: bool,
}

/// A request (or one subrequest of a `firstAvailable` request) as the search needs it.
struct RequestData<'a> {
    /// The request's name (the parent's for a subrequest: constraints name it).
    name: &'a str,
    /// The subrequest's name, for a `firstAvailable` alternative.
    sub_name: Option<&'a str>,
    selectors: &'a [DeviceSelector],
    admin: bool,
    capacity: Option<&'a CapacityRequirements>,
    /// DRADeviceTaints: the request's (or subrequest's) tolerations.
    tolerations: &'a [DeviceToleration],
    class: &'a DeviceClass,
    num_devices: usize,
    /// `All`: the candidates (indices) picked before the search.
    all_devices: Option<Vec<usize>>,
    /// Where this request's row of `Search::selectable` starts.
    offset: usize,
    /// A `firstAvailable` request: its subrequests, in order (then the fields above are unused).
    subrequests: Vec<RequestData<'a>>,
}

/// A `matchAttribute` constraint: every device of its requests has the attribute, with one value
/// (`incubating`'s scalar comparison) or, with DRAListTypeAttributes, values whose running
/// intersection across the devices is not empty (`experimental`: a scalar is a one-element set).
struct MatchAttribute<'a> {
    requests: Vec<&'a str>,
    attribute: &'a str,
    /// Off: the first device's scalar value (`None` when its attribute is a list, which then
    /// matches no later device, as upstream's type switch falls through).
    value: Option<crate::api::resource::AttributeValue>,
    /// DRAListTypeAttributes: the intersection after each added device (`intersectionStack`);
    /// `remove` pops, so backtracking restores the previous one.
    sets: Option<Vec<Vec<AttrRef<'a>>>>,
    num_devices: usize,
}

impl<'a> MatchAttribute<'a> {
    fn new(requests: Vec<&'a str>, attribute: &'a str, features: DraFeatures) -> Self {
        let sets = features.list_type_attributes.then(Vec::new);
        MatchAttribute { requests, attribute, value: None, sets, num_devices: 0 }
    }

    fn applies(&self, request: &str, sub: Option<&str>) -> bool {
        prioritized::constraint_applies(&self.requests, request, sub)
    }

    fn add(&mut self, request: &str, sub: Option<&str>, c: &Candidate<'a>) -> bool {
        if !self.applies(request, sub) {
            return true;
        }
        let Some(attribute) = lookup_attribute(c.device, &c.id.driver, self.attribute) else {
            return false;
        };
        if let Some(sets) = &mut self.sets {
            let Some(set) = attribute.as_set() else { return false };
            let next = match sets.last() {
                None => set,
                Some(current) => {
                    let narrowed = crate::api::resource::intersect_sorted(current, &set);
                    if narrowed.is_empty() {
                        return false;
                    }
                    narrowed
                }
            };
            sets.push(next);
            self.num_devices += 1;
            return true;
        }
        let value = attribute.value();
        if self.num_devices == 0 {
            // The first device can always get picked (even with a list value upstream's
            // scalar switch knows nothing of).
            self.value = value;
            self.num_devices = 1;
            return true;
        }
        if value.is_none() || self.value != value {
            return false;
        }
        self.num_devices += 1;
        true
    }

    fn remove(&mut self, request: &str, sub: Option<&str>) {
        if self.applies(request, sub) {
            self.num_devices -= 1;
            if let Some(sets) = &mut self.sets {
                sets.pop();
            }
        }
    }
}

/// `lookupAttribute`: the fully qualified name, else its id when the domain is the driver.
pub(super) fn lookup_attribute<'d>(device: &'d Device, driver: &str, name: &str) -> Option<&'d DeviceAttribute> {
    if let Some(a) = device.attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver {
        return None;
    }
    device.attributes.get(id)
}

/// The search's state for one `allocate` call.
struct Search<'a, 's> {
    claims: &'a [&'a ResourceClaim],
    candidates: Vec<Candidate<'a>>,
    /// Per candidate: allocated before this call (or in flight for another pod).
    in_use: Vec<bool>,
    /// Per candidate: bit i set while claim i is allocating it.
    allocating: Vec<u64>,
    /// Per claim, per request.
    requests: Vec<Vec<RequestData<'a>>>,
    constraints: Vec<Vec<MatchAttribute<'a>>>,
    /// Per claim: the `distinctAttribute` constraints (checked after the `matchAttribute` ones;
    /// each is independent of the others, so the order decides nothing).
    distinct: Vec<Vec<DistinctAttribute<'a>>>,
    /// Per claim: the devices chosen so far.
    result: Vec<Vec<Chosen>>,
    /// (claim, request or subrequest, candidate) -> selectable, filled on first use.
    selectable: Vec<Option<bool>>,
    /// Per claim, per request: the subrequest being tried (then chosen) of a `firstAvailable` one.
    chosen_sub: Vec<Vec<usize>>,
    /// Per candidate: the capacity the shares of allocated claims consume.
    allocated_consumed: Vec<Option<&'a Consumed>>,
    /// Per candidate: the capacity the shares chosen so far consume (`allocatingCapacity`).
    allocating_consumed: Vec<Option<Consumed>>,
    /// Per candidate: how many shares of it the search holds (upstream's `allocatingCapacity`
    /// entry exists exactly while one does).
    allocating_shares: Vec<u32>,
    /// Per candidate: an allocated claim holds a share of it (`AllocatedSharedDeviceIDs`).
    allocated_shared: Vec<bool>,
    selectors: &'s mut dyn DeviceSelectors,
    /// Per pool (as in `Candidate::pool`): its counters, when it has counter sets.
    counters: Vec<Option<PoolCounters<'a>>>,
    /// Per pool: its compatibility groups, when it has counter sets and the feature is on.
    groups: Vec<Option<PoolGroups<'a>>>,
}

/// One device chosen for a claim.
#[derive(Clone, Debug, PartialEq)]
struct Chosen {
    ri: usize,
    d: usize,
    /// What this share consumes, for a device that allows multiple allocations.
    share: Option<Consumed>,
    /// Whether choosing it reserved the device's counters (released when it is undone).
    counters_reserved: bool,
    /// What admitting it into its counter sets' compatibility groups replaced (restored when it
    /// is undone).
    groups_undo: Option<GroupsUndo>,
}

/// Allocates `claims` (none allocated yet) for `node` from `slices`, excluding `allocated`
/// devices. `Err` is upstream's error (the pod is unschedulable on every node): a missing class,
/// a CEL error, an `All` request on an incomplete pool, a request for more than
/// [`ALLOCATION_RESULTS_MAX_SIZE`] devices, an unsupported request form.
pub fn allocate(
    claims: &[&ResourceClaim],
    node: &NodeView<'_>,
    slices: &[&ResourceSlice],
    classes: &BTreeMap<String, DeviceClass>,
    allocated: &HashSet<DeviceId>,
    selectors: &mut dyn DeviceSelectors,
) -> Result<Outcome, String> {
    allocate_with(claims, node, slices, classes, allocated, &SharedState::default(), DraFeatures::default(), selectors)
}

/// [`allocate`] with the shares allocated claims hold (`shared`; their devices are not in
/// `allocated`) and the run's `features`.
#[allow(clippy::too_many_arguments)]
pub fn allocate_with(
    claims: &[&ResourceClaim],
    node: &NodeView<'_>,
    slices: &[&ResourceSlice],
    classes: &BTreeMap<String, DeviceClass>,
    allocated: &HashSet<DeviceId>,
    shared: &SharedState,
    features: DraFeatures,
    selectors: &mut dyn DeviceSelectors,
) -> Result<Outcome, String> {
    if claims.len() > 64 {
        return Err(format!("{} claims for one pod: at most 64 are supported", claims.len()));
    }
    let pools = gather_pools(slices, node, features);
    // `IsDeviceAllocated`: a device an allocated claim holds a share of consumes its counters too.
    let with_shared;
    let counted = if shared.shared.is_empty() {
        allocated
    } else {
        with_shared = allocated.union(&shared.shared).cloned().collect::<HashSet<DeviceId>>();
        &with_shared
    };
    let mut candidates = Vec::new();
    let mut pool_counters = Vec::new();
    let mut pool_groups = Vec::new();
    for pool in pools.iter().filter(|p| !p.incomplete && !p.invalid) {
        let index = pool_counters.len();
        let device_slices: Vec<&ResourceSlice> = if pool.counter_sets.is_empty() {
            Vec::new()
        } else {
            pool.slices.iter().chain(&pool.other_slices).copied().collect()
        };
        pool_counters.push(
            (!pool.counter_sets.is_empty()).then(|| PoolCounters::new(&pool.counter_sets, &device_slices, counted)),
        );
        pool_groups.push((features.compatibility_groups && !pool.counter_sets.is_empty()).then(|| {
            let sets = pool.counter_sets.iter().map(|s| s.name.as_str()).collect();
            PoolGroups::new(sets, &device_slices, |slice, device| {
                counted.contains(&DeviceId::new(&slice.spec.driver, &slice.spec.pool.name, &device.name))
            })
        }));
        for &slice in &pool.slices {
            let per_device = counters::per_device(slice);
            for device in &slice.spec.devices {
                candidates.push(Candidate {
                    id: DeviceId::new(pool.driver, pool.name, &device.name),
                    device,
                    slice,
                    pool: index,
                    reachable: !per_device || counters::device_reaches(node, device),
                });
            }
        }
    }
    let in_use = candidates.iter().map(|c| allocated.contains(&c.id)).collect();
    let allocated_shared = candidates.iter().map(|c| shared.shared.contains(&c.id)).collect();
    let allocated_consumed = if shared.consumed.is_empty() {
        vec![None; candidates.len()]
    } else {
        candidates.iter().map(|c| shared.consumed.get(&c.id)).collect()
    };
    let rows: usize =
        claims.iter().flat_map(|c| &c.spec.devices.requests).map(|r| r.first_available.len().max(1)).sum();
    let mut search = Search {
        claims,
        allocating: vec![0; candidates.len()],
        allocating_consumed: vec![None; candidates.len()],
        allocating_shares: vec![0; candidates.len()],
        allocated_shared,
        allocated_consumed,
        selectable: vec![None; rows * candidates.len()],
        candidates,
        in_use,
        requests: Vec::with_capacity(claims.len()),
        constraints: Vec::with_capacity(claims.len()),
        distinct: Vec::with_capacity(claims.len()),
        result: vec![Vec::new(); claims.len()],
        chosen_sub: claims.iter().map(|c| vec![0; c.spec.devices.requests.len()]).collect(),
        selectors,
        counters: pool_counters,
        groups: pool_groups,
    };
    let mut offset = 0;
    for (ci, claim) in claims.iter().enumerate() {
        let key = claim_key(claim);
        let mut requests = Vec::with_capacity(claim.spec.devices.requests.len());
        let mut min_devices = 0usize;
        for request in &claim.spec.devices.requests {
            let forms = prioritized::forms_of(request);
            let mut alternatives = Vec::with_capacity(forms.len());
            for form in forms {
                let data = search.request_data(ci, &key, &request.name, form, offset, classes, &pools)?;
                offset += search.candidates.len();
                alternatives.push(data);
            }
            let data = if request.exactly.is_some() {
                alternatives.pop().expect("one form for an exact request")
            } else {
                let first = &alternatives[0];
                RequestData {
                    name: &request.name,
                    sub_name: None,
                    selectors: &[],
                    admin: false,
                    capacity: None,
                    tolerations: &[],
                    class: first.class,
                    // A lower bound: the subrequest chosen decides (`allocate_one` checks again).
                    num_devices: alternatives.iter().map(|a| a.num_devices).min().unwrap_or(0),
                    all_devices: None,
                    offset: usize::MAX,
                    subrequests: alternatives,
                }
            };
            if data.num_devices > ALLOCATION_RESULTS_MAX_SIZE - min_devices {
                return Err(format!(
                    "claim {key}, request {}: adding {} devices exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_devices} already accounted for",
                    request.name, data.num_devices
                ));
            }
            min_devices += data.num_devices;
            requests.push(data);
        }
        let mut constraints = Vec::with_capacity(claim.spec.devices.constraints.len());
        let mut distinct = Vec::new();
        for (i, c) in claim.spec.devices.constraints.iter().enumerate() {
            let requests = c.requests.iter().map(String::as_str).collect();
            if let Some(attribute) = c.match_attribute.as_deref() {
                constraints.push(MatchAttribute::new(requests, attribute, features));
            } else if let Some(attribute) = c.distinct_attribute.as_deref() {
                distinct.push(DistinctAttribute::new(requests, attribute, features.list_type_attributes));
            } else {
                return Err(format!("claim {key}, constraint #{i}: empty constraint (unsupported constraint type?)"));
            }
        }
        search.requests.push(requests);
        search.constraints.push(constraints);
        search.distinct.push(distinct);
    }
    match search.allocate_one(0, 0, 0, 0, false) {
        Ok(true) => {}
        Ok(false) => return unfit(&pools),
        // Past the claim limit in the first claim: upstream returns this error as it is.
        Err(e) => return Err(e),
    }
    Ok(Outcome::Allocated((0..claims.len()).map(|ci| search.result_of(ci)).collect()))
}

impl<'a> Search<'a, '_> {
    /// `validateDeviceRequest`: the class, the selectors, the count (for `All`: the devices).
    #[allow(clippy::too_many_arguments)]
    fn request_data(
        &mut self,
        ci: usize,
        key: &str,
        request_name: &'a str,
        form: RequestForm<'a>,
        offset: usize,
        classes: &'a BTreeMap<String, DeviceClass>,
        pools: &[Pool<'_>],
    ) -> Result<RequestData<'a>, String> {
        let name = form.display_name(request_name);
        for (i, s) in form.selectors.iter().enumerate() {
            if s.cel.is_none() {
                return Err(format!(
                    "claim {key}, request {name}, selector #{i}: CEL expression empty (unsupported selector type?)"
                ));
            }
        }
        if form.device_class_name.is_empty() {
            return Err(format!("claim {key}, request {name}: missing device class name (unsupported request type?)"));
        }
        let Some(class) = classes.get(form.device_class_name) else {
            return Err(format!(
                "claim {key}, request {name}: could not retrieve device class {0}: deviceclass.resource.k8s.io \"{0}\" not found",
                form.device_class_name
            ));
        };
        let mut data = RequestData {
            name: request_name,
            sub_name: form.sub_name,
            selectors: form.selectors,
            admin: form.admin,
            capacity: form.capacity,
            tolerations: form.tolerations,
            class,
            num_devices: 0,
            all_devices: None,
            offset,
            subrequests: Vec::new(),
        };
        match form.mode {
            DeviceAllocationMode::ExactCount => data.num_devices = usize::try_from(form.count).unwrap_or(0),
            DeviceAllocationMode::All => {
                for pool in pools {
                    if pool.incomplete {
                        return Err(format!(
                            "claim {key}, request {name}: asks for all devices, but resource pool {}/{} is currently being updated",
                            pool.driver, pool.name
                        ));
                    }
                    if pool.invalid {
                        return Err(format!(
                            "claim {key}, request {name}: asks for all devices, but resource pool {}/{} is currently invalid",
                            pool.driver, pool.name
                        ));
                    }
                }
                let mut all = Vec::new();
                for d in 0..self.candidates.len() {
                    if !self.is_selectable(ci, offset, class, form.selectors, d)? {
                        continue;
                    }
                    // Static capacity only: what is taken is checked when allocating, so a
                    // device short of capacity stays in the list and `All` fails.
                    let device = self.candidates[d].device;
                    if !capacity::fits(form.capacity, &device.capacity, None, None).map_err(|e| {
                        format!("claim {key}, request {name}: checking capacity for device {}: {e}", device.name)
                    })? {
                        continue;
                    }
                    all.push(d);
                }
                data.num_devices = all.len();
                data.all_devices = Some(all);
            }
        }
        Ok(data)
    }
}

/// No allocation on this node: with an invalid pool reaching it, upstream's error (not fatal for
/// other nodes; surfaced only when allocation fails on every node), else unfit.
fn unfit(pools: &[Pool<'_>]) -> Result<Outcome, String> {
    if pools.iter().any(|p| p.invalid) {
        return Err(INVALID_POOLS.into());
    }
    Ok(Outcome::Unfit)
}

/// `klog.KObj`: `namespace/name`, or the name alone without a namespace.
fn claim_key(claim: &ResourceClaim) -> String {
    if claim.metadata.namespace.is_empty() {
        claim.metadata.name.clone()
    } else {
        format!("{}/{}", claim.metadata.namespace, claim.metadata.name)
    }
}

impl<'a> Search<'a, '_> {
    /// The request `ri` of claim `ci`, or the subrequest being tried of a `firstAvailable` one.
    fn req(&self, ci: usize, ri: usize) -> &RequestData<'a> {
        let r = &self.requests[ci][ri];
        if r.subrequests.is_empty() {
            r
        } else {
            &r.subrequests[self.chosen_sub[ci][ri]]
        }
    }

    /// `isSelectable`: the class's selectors, then the request's, cached per (request, device).
    fn is_selectable(
        &mut self,
        ci: usize,
        offset: usize,
        class: &DeviceClass,
        request_selectors: &[DeviceSelector],
        d: usize,
    ) -> Result<bool, String> {
        let slot = offset + d;
        if let Some(known) = self.selectable[slot] {
            return Ok(known);
        }
        let c = &self.candidates[d];
        if !c.device.binding_conditions.is_empty() {
            // Binding conditions are refused by the caller; such a device is not offered.
            self.selectable[slot] = Some(false);
            return Ok(false);
        }
        let claim = self.claims[ci];
        let selectors = &mut *self.selectors;
        let matches = selectors_match(selectors, &c.id, c.device, &class.spec.selectors, || {
            format!("class {}", class.metadata.name)
        })? && selectors_match(selectors, &c.id, c.device, request_selectors, || {
            format!("claim {}", claim_key(claim))
        })? && c.reachable;
        self.selectable[slot] = Some(matches);
        Ok(matches)
    }

    /// `allocateOne`: the `di`-th device of request `ri` of claim `ci`, and everything after it;
    /// candidates from `start` on (the devices of one request are taken in candidate order).
    /// `in_sub`: the subrequest of a `firstAvailable` request is chosen (`chosen_sub`).
    /// `Err(MAX_SIZE_EXCEEDED)`: the claim would pass [`ALLOCATION_RESULTS_MAX_SIZE`] (a
    /// `firstAvailable` request may then try its next subrequest).
    fn allocate_one(&mut self, ci: usize, ri: usize, di: usize, start: usize, in_sub: bool) -> Result<bool, String> {
        if ci >= self.claims.len() {
            return Ok(true);
        }
        if ri >= self.requests[ci].len() {
            return match self.allocate_one(ci + 1, 0, 0, 0, false) {
                Err(e) if e == MAX_SIZE_EXCEEDED => Ok(false),
                other => other,
            };
        }
        if !in_sub && !self.requests[ci][ri].subrequests.is_empty() {
            return self.allocate_subrequests(ci, ri);
        }
        let num_devices = self.req(ci, ri).num_devices;
        if let Some(all) = &self.req(ci, ri).all_devices {
            if all.is_empty() {
                return Ok(false);
            }
        }
        if di >= num_devices {
            return self.allocate_one(ci, ri + 1, 0, 0, false);
        }
        if num_devices - di > ALLOCATION_RESULTS_MAX_SIZE - self.result[ci].len() {
            return Err(MAX_SIZE_EXCEEDED.into());
        }
        if let Some(all) = &self.req(ci, ri).all_devices {
            let d = all[di];
            if !self.allocate_device(ci, ri, d, true)? {
                return Ok(false);
            }
            let done = self.allocate_one(ci, ri, di + 1, 0, in_sub);
            if !matches!(done, Ok(true)) {
                self.deallocate_device(ci, ri, d);
            }
            return done;
        }
        let admin = self.req(ci, ri).admin;
        for d in start..self.candidates.len() {
            if admin {
                if self.allocating[d] & (1 << ci) != 0 {
                    continue;
                }
            } else if self.in_use[d] || self.allocating[d] != 0 {
                continue;
            }
            let r = self.req(ci, ri);
            let (class, selectors, offset) = (r.class, r.selectors, r.offset);
            if !self.is_selectable(ci, offset, class, selectors, d)? {
                continue;
            }
            if !self.capacity_fits(ci, ri, d)? {
                continue;
            }
            if !self.allocate_device(ci, ri, d, false)? {
                continue;
            }
            match self.allocate_one(ci, ri, di + 1, d + 1, in_sub) {
                Ok(true) => return Ok(true),
                Ok(false) => self.deallocate_device(ci, ri, d),
                Err(e) => {
                    self.deallocate_device(ci, ri, d);
                    return Err(e);
                }
            }
        }
        Ok(false)
    }

    /// A `firstAvailable` request: its subrequests in order, the first that leads to a full
    /// solution is kept (`chosen_sub`). `Err(MAX_SIZE_EXCEEDED)` when every one passed the claim
    /// limit: no solution goes through the devices chosen before.
    fn allocate_subrequests(&mut self, ci: usize, ri: usize) -> Result<bool, String> {
        let mut all_exceeded = true;
        for si in 0..self.requests[ci][ri].subrequests.len() {
            self.chosen_sub[ci][ri] = si;
            match self.allocate_one(ci, ri, 0, 0, true) {
                Err(e) if e == MAX_SIZE_EXCEEDED => continue,
                Err(e) => return Err(e),
                Ok(true) => return Ok(true),
                Ok(false) => all_exceeded = false,
            }
        }
        if all_exceeded {
            return Err(MAX_SIZE_EXCEEDED.into());
        }
        Ok(false)
    }

    /// `CmpRequestOverCapacity` for candidate `d` and request `ri` of claim `ci`: what allocated
    /// claims and this search's shares take of it, plus what the request would take, within its
    /// capacities.
    fn capacity_fits(&self, ci: usize, ri: usize, d: usize) -> Result<bool, String> {
        let c = &self.candidates[d];
        let r = self.req(ci, ri);
        capacity::fits(r.capacity, &c.device.capacity, self.allocated_consumed[d], self.allocating_consumed[d].as_ref())
            .map_err(|e| {
                format!(
                    "claim {}, request {}: checking capacity for device {}: {e}",
                    claim_key(self.claims[ci]),
                    r.sub_name.unwrap_or(r.name),
                    c.id
                )
            })
    }

    /// `allocateDevice`: in use, then the device's counters (partitionable devices), its taints,
    /// the claim's constraints, then the capacity; on success the device is recorded (a device
    /// allowing multiple allocations is not marked in use: its share consumes capacity instead).
    /// Every rejection after the counters were reserved releases them (`rollbackDevice`).
    fn allocate_device(&mut self, ci: usize, ri: usize, d: usize, must: bool) -> Result<bool, String> {
        let multiple = self.candidates[d].device.allow_multiple_allocations == Some(true);
        let (admin, name, sub, request_capacity, tolerations) = {
            let r = self.req(ci, ri);
            (r.admin, r.name, r.sub_name, r.capacity, r.tolerations)
        };
        if admin {
            if !multiple && self.allocating[d] & (1 << ci) != 0 {
                return Ok(false);
            }
        } else if self.in_use[d] || self.allocating[d] != 0 {
            return Ok(false);
        }
        let (pool, device) = (self.candidates[d].pool, self.candidates[d].device);
        // A further share of a device already shared does not charge its counters again.
        let capacity_in_use =
            self.allocated_shared[d] || self.allocated_consumed[d].is_some() || self.allocating_shares[d] > 0;
        let skip_counter_check = multiple && capacity_in_use;
        let counters_reserved = !skip_counter_check && !device.consumes_counters.is_empty();
        // Compatibility groups, gated as the counters are and checked before them.
        let mut groups_undo = None;
        if counters_reserved {
            if let Some(g) = self.groups[pool].as_mut() {
                match g.admit(device) {
                    Some(undo) => groups_undo = Some(undo),
                    None => return Ok(false),
                }
            }
        }
        if counters_reserved && !self.counters[pool].as_mut().is_some_and(|c| c.reserve(device)) {
            self.rollback(pool, device, false, groups_undo.take());
            return Ok(false);
        }
        if taint_prevents_allocation(device, tolerations) {
            self.rollback(pool, device, counters_reserved, groups_undo.take());
            return Ok(false);
        }
        let constraint_error = |search: &Self| {
            format!(
                "claim {}, request {}: cannot add device {} because a claim constraint would not be satisfied",
                claim_key(search.claims[ci]),
                sub.unwrap_or(name),
                search.candidates[d].id
            )
        };
        for k in 0..self.constraints[ci].len() {
            if !self.constraints[ci][k].add(name, sub, &self.candidates[d]) {
                for j in (0..k).rev() {
                    self.constraints[ci][j].remove(name, sub);
                }
                self.rollback(pool, device, counters_reserved, groups_undo.take());
                return if must { Err(constraint_error(self)) } else { Ok(false) };
            }
        }
        for k in 0..self.distinct[ci].len() {
            let c = &self.distinct[ci][k];
            let applies = prioritized::constraint_applies(&c.requests, name, sub);
            let attribute =
                if applies { lookup_attribute(device, &self.candidates[d].id.driver, c.attribute) } else { None };
            if !self.distinct[ci][k].add(applies, attribute) {
                self.undo_constraints(ci, name, sub, k);
                self.rollback(pool, device, counters_reserved, groups_undo.take());
                return if must { Err(constraint_error(self)) } else { Ok(false) };
            }
        }
        match self.capacity_fits(ci, ri, d) {
            Ok(true) => {}
            other => {
                self.undo_constraints(ci, name, sub, self.distinct[ci].len());
                self.rollback(pool, device, counters_reserved, groups_undo.take());
                return other;
            }
        }
        let share = if multiple {
            let consumed = match capacity::consumed_by(request_capacity, &device.capacity) {
                Ok(consumed) => consumed,
                Err(e) => {
                    self.undo_constraints(ci, name, sub, self.distinct[ci].len());
                    self.rollback(pool, device, counters_reserved, groups_undo.take());
                    return Err(format!(
                        "claim {}, request {}: computing consumed capacity for device {}: {e}",
                        claim_key(self.claims[ci]),
                        sub.unwrap_or(name),
                        self.candidates[d].id
                    ));
                }
            };
            capacity::add_consumed(self.allocating_consumed[d].get_or_insert_with(Consumed::new), &consumed);
            self.allocating_shares[d] += 1;
            Some(consumed)
        } else {
            self.allocating[d] |= 1 << ci;
            None
        };
        self.result[ci].push(Chosen { ri, d, share, counters_reserved, groups_undo });
        Ok(true)
    }

    /// `rollbackDevice`'s pool part: the compatibility groups an admission replaced, then the
    /// counters reserved.
    fn rollback(&mut self, pool: usize, device: &Device, counters_reserved: bool, groups_undo: Option<GroupsUndo>) {
        if let (Some(g), Some(undo)) = (self.groups[pool].as_mut(), groups_undo) {
            g.restore(undo);
        }
        if let Some(c) = self.counters[pool].as_mut().filter(|_| counters_reserved) {
            c.release(device);
        }
    }

    /// Removes a device of (`name`, `sub`) from every `matchAttribute` constraint and from the
    /// first `distinct` `distinctAttribute` ones of claim `ci`.
    fn undo_constraints(&mut self, ci: usize, name: &str, sub: Option<&str>, distinct: usize) {
        for k in (0..distinct).rev() {
            let applies = prioritized::constraint_applies(&self.distinct[ci][k].requests, name, sub);
            self.distinct[ci][k].remove(applies);
        }
        for k in (0..self.constraints[ci].len()).rev() {
            self.constraints[ci][k].remove(name, sub);
        }
    }

    /// `rollbackDevice` of a device `allocate_device` accepted (the last one of claim `ci`).
    fn deallocate_device(&mut self, ci: usize, ri: usize, d: usize) {
        let popped = self.result[ci].pop().expect("a device to deallocate");
        debug_assert_eq!((popped.ri, popped.d), (ri, d));
        let counters_reserved = match &popped.share {
            // The entry stays (empty) once made: upstream keeps it while an earlier share holds it,
            // and an empty entry changes no sum.
            Some(consumed) => {
                let entry = self.allocating_consumed[d].get_or_insert_with(Consumed::new);
                capacity::sub_consumed(entry, consumed);
                self.allocating_shares[d] -= 1;
                popped.counters_reserved
            }
            None => {
                self.allocating[d] &= !(1 << ci);
                popped.counters_reserved
            }
        };
        let (pool, device) = (self.candidates[d].pool, self.candidates[d].device);
        self.rollback(pool, device, counters_reserved, popped.groups_undo);
        let (name, sub) = {
            let r = self.req(ci, ri);
            (r.name, r.sub_name)
        };
        self.undo_constraints(ci, name, sub, self.distinct[ci].len());
    }

    /// The allocation of claim `ci` (devices in the order chosen, and where they are reachable).
    fn result_of(&self, ci: usize) -> AllocationResult {
        let key = claim_key(self.claims[ci]);
        let results = self.result[ci]
            .iter()
            .enumerate()
            .map(|(i, chosen)| {
                let c = &self.candidates[chosen.d];
                let r = self.req(ci, chosen.ri);
                DeviceRequestAllocationResult {
                    request: prioritized::result_name(r.name, r.sub_name),
                    driver: c.id.driver.clone(),
                    pool: c.id.pool.clone(),
                    device: c.id.device.clone(),
                    admin_access: Some(true).filter(|_| r.admin),
                    tolerations: r.tolerations.to_vec(),
                    share_id: chosen.share.as_ref().map(|_| capacity::share_id(&key, i, &c.id)),
                    consumed_capacity: chosen.share.clone().unwrap_or_default(),
                }
            })
            .collect();
        let node_selector = node_selector_of(self.result[ci].iter().map(|chosen| {
            let c = &self.candidates[chosen.d];
            if counters::per_device(c.slice) {
                (c.device.node_name.as_deref(), c.device.node_selector.as_ref())
            } else {
                (c.slice.spec.node_name.as_deref(), c.slice.spec.node_selector.as_ref())
            }
        }));
        AllocationResult { devices: DeviceAllocationResult { results, config: Vec::new() }, node_selector }
    }
}

/// The selectors of a class or a request, in order, against one device, with upstream's errors.
fn selectors_match(
    selectors: &mut dyn DeviceSelectors,
    id: &DeviceId,
    device: &Device,
    list: &[DeviceSelector],
    owner: impl Fn() -> String,
) -> Result<bool, String> {
    for (i, s) in list.iter().enumerate() {
        let expression = s.cel.as_ref().map_or("", |c| c.expression.as_str());
        match selectors.matches(expression, &id.driver, device) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(SelectorError::Compile(e)) => {
                return Err(format!("{}: selector #{i}: CEL compile error: {e}", owner()))
            }
            Err(SelectorError::Runtime(e)) => {
                return Err(format!("{}: selector #{i} on device {id}: CEL runtime error: {e}", owner()))
            }
        }
    }
    Ok(true)
}

/// `createNodeSelector`: a device of a node-local slice (or a node-local device of a slice with
/// per-device node selection) pins the claim to that node; otherwise the one-term selectors are
/// merged; `None` when the devices are reachable everywhere. Takes each device's (node name,
/// node selector).
fn node_selector_of<'a>(
    reach: impl Iterator<Item = (Option<&'a str>, Option<&'a NodeSelector>)>,
) -> Option<NodeSelector> {
    let mut term = NodeSelectorTerm::default();
    for (node_name, node_selector) in reach {
        if let Some(name) = node_name.filter(|n| !n.is_empty()) {
            return Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Vec::new(),
                    match_fields: vec![NodeSelectorRequirement {
                        key: "metadata.name".into(),
                        operator: NodeSelectorOperator::In,
                        values: vec![name.to_string()],
                    }],
                }],
            });
        }
        if let Some(selector) = node_selector {
            if let [only] = selector.node_selector_terms.as_slice() {
                add_new_requirements(&only.match_fields, &mut term.match_fields);
                add_new_requirements(&only.match_expressions, &mut term.match_expressions);
            }
        }
    }
    if term.match_fields.is_empty() && term.match_expressions.is_empty() {
        return None;
    }
    Some(NodeSelector { node_selector_terms: vec![term] })
}

fn add_new_requirements(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for r in from {
        let values: HashSet<&String> = r.values.iter().collect();
        let present = to
            .iter()
            .any(|t| t.key == r.key && t.operator == r.operator && t.values.iter().collect::<HashSet<_>>() == values);
        if !present {
            to.push(r.clone());
        }
    }
}
