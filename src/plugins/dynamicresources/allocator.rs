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
//! hooked into the pools and the search here.
//!
//! Not here (the caller refuses such claims and slices before allocating; a workload using them
//! is skipped): `firstAvailable` (DRAPrioritizedList), consumable capacity (`distinctAttribute`,
//! multiple allocations), binding conditions, compatibility groups, list attributes.
//!
//! CEL selectors are evaluated through [`DeviceSelectors`], so each distinct expression is compiled
//! once by whoever implements it; results are cached per (request, device) as upstream does.

use std::collections::{BTreeMap, HashSet};

use super::allocator_counters::{self as counters, PoolCounters};
use super::allocator_taints::taint_prevents_allocation;
use crate::api::objects::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm};
use crate::api::resource::{
    AllocationResult, Device, DeviceAllocationMode, DeviceAllocationResult, DeviceClass, DeviceRequestAllocationResult,
    DeviceSelector, ExactDeviceRequest, ResourceClaim, ResourceSlice,
};

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
fn gather_pools<'a>(slices: &[&'a ResourceSlice], node: &NodeView<'_>) -> Vec<Pool<'a>> {
    let mut by_pool: BTreeMap<(&'a str, &'a str), Vec<&'a ResourceSlice>> = BTreeMap::new();
    for &slice in slices {
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

/// A request as the search needs it.
struct RequestData<'a> {
    name: &'a str,
    exact: &'a ExactDeviceRequest,
    class: &'a DeviceClass,
    num_devices: usize,
    /// `All`: the candidates (indices) picked before the search.
    all_devices: Option<Vec<usize>>,
}

/// A `matchAttribute` constraint: every device of its requests has the attribute, with one value.
struct MatchAttribute<'a> {
    requests: Vec<&'a str>,
    attribute: &'a str,
    value: Option<crate::api::resource::AttributeValue>,
    num_devices: usize,
}

impl MatchAttribute<'_> {
    fn applies(&self, request: &str) -> bool {
        self.requests.is_empty() || self.requests.contains(&request)
    }

    fn add(&mut self, request: &str, c: &Candidate<'_>) -> bool {
        if !self.applies(request) {
            return true;
        }
        let Some(value) = lookup_attribute(c.device, &c.id.driver, self.attribute) else {
            return false;
        };
        if self.num_devices == 0 {
            self.value = Some(value);
            self.num_devices = 1;
            return true;
        }
        if self.value.as_ref() != Some(&value) {
            return false;
        }
        self.num_devices += 1;
        true
    }

    fn remove(&mut self, request: &str) {
        if self.applies(request) {
            self.num_devices -= 1;
        }
    }
}

/// `lookupAttribute`: the fully qualified name, else its id when the domain is the driver.
fn lookup_attribute(device: &Device, driver: &str, name: &str) -> Option<crate::api::resource::AttributeValue> {
    if let Some(a) = device.attributes.get(name) {
        return a.value();
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver {
        return None;
    }
    device.attributes.get(id).and_then(|a| a.value())
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
    /// Per claim: (request index, candidate index) chosen so far.
    result: Vec<Vec<(usize, usize)>>,
    /// (claim, request, candidate) -> selectable, filled on first use.
    selectable: Vec<Option<bool>>,
    /// Per claim, per request: where its row of `selectable` starts.
    request_offsets: Vec<Vec<usize>>,
    selectors: &'s mut dyn DeviceSelectors,
    /// Per pool (as in `Candidate::pool`): its counters, when it has counter sets.
    counters: Vec<Option<PoolCounters<'a>>>,
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
    if claims.len() > 64 {
        return Err(format!("{} claims for one pod: at most 64 are supported", claims.len()));
    }
    let pools = gather_pools(slices, node);
    let mut candidates = Vec::new();
    let mut pool_counters = Vec::new();
    for pool in pools.iter().filter(|p| !p.incomplete && !p.invalid) {
        let index = pool_counters.len();
        pool_counters.push((!pool.counter_sets.is_empty()).then(|| {
            let device_slices: Vec<&ResourceSlice> = pool.slices.iter().chain(&pool.other_slices).copied().collect();
            PoolCounters::new(&pool.counter_sets, &device_slices, allocated)
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
    let mut search = Search {
        claims,
        allocating: vec![0; candidates.len()],
        candidates,
        in_use,
        requests: Vec::with_capacity(claims.len()),
        constraints: Vec::with_capacity(claims.len()),
        result: vec![Vec::new(); claims.len()],
        selectable: Vec::new(),
        request_offsets: Vec::new(),
        selectors,
        counters: pool_counters,
    };
    let mut offset = 0;
    for claim in claims {
        let n = claim.spec.devices.requests.len();
        search.request_offsets.push((0..n).map(|r| offset + r * search.candidates.len()).collect());
        offset += n * search.candidates.len();
    }
    search.selectable = vec![None; offset];
    for (ci, claim) in claims.iter().enumerate() {
        let key = claim_key(claim);
        let mut requests = Vec::with_capacity(claim.spec.devices.requests.len());
        let mut min_devices = 0usize;
        for (ri, request) in claim.spec.devices.requests.iter().enumerate() {
            let Some(exact) = &request.exactly else {
                return Err(format!(
                    "claim {key}, request {}: has subrequests (firstAvailable), which schedperf does not implement",
                    request.name
                ));
            };
            for (i, s) in exact.selectors.iter().enumerate() {
                if s.cel.is_none() {
                    return Err(format!(
                        "claim {key}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                        request.name
                    ));
                }
            }
            if exact.device_class_name.is_empty() {
                return Err(format!(
                    "claim {key}, request {}: missing device class name (unsupported request type?)",
                    request.name
                ));
            }
            let Some(class) = classes.get(&exact.device_class_name) else {
                return Err(format!(
                    "claim {key}, request {}: could not retrieve device class {}: deviceclass.resource.k8s.io \"{}\" not found",
                    request.name, exact.device_class_name, exact.device_class_name
                ));
            };
            let mut data = RequestData { name: &request.name, exact, class, num_devices: 0, all_devices: None };
            match exact.mode() {
                DeviceAllocationMode::ExactCount => data.num_devices = usize::try_from(exact.count()).unwrap_or(0),
                DeviceAllocationMode::All => {
                    for pool in &pools {
                        if pool.incomplete {
                            return Err(format!(
                                "claim {key}, request {}: asks for all devices, but resource pool {}/{} is currently being updated",
                                request.name, pool.driver, pool.name
                            ));
                        }
                        if pool.invalid {
                            return Err(format!(
                                "claim {key}, request {}: asks for all devices, but resource pool {}/{} is currently invalid",
                                request.name, pool.driver, pool.name
                            ));
                        }
                    }
                    let mut all = Vec::new();
                    for d in 0..search.candidates.len() {
                        if search.is_selectable(ci, ri, class, exact, d)? {
                            all.push(d);
                        }
                    }
                    data.num_devices = all.len();
                    data.all_devices = Some(all);
                }
            }
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
        for (i, c) in claim.spec.devices.constraints.iter().enumerate() {
            let Some(attribute) = c.match_attribute.as_deref() else {
                return Err(format!("claim {key}, constraint #{i}: empty constraint (unsupported constraint type?)"));
            };
            constraints.push(MatchAttribute {
                requests: c.requests.iter().map(String::as_str).collect(),
                attribute,
                value: None,
                num_devices: 0,
            });
        }
        search.requests.push(requests);
        search.constraints.push(constraints);
    }
    if !search.allocate_one(0, 0, 0)? {
        // Not fatal for other nodes; surfaced only when allocation fails on every node.
        if pools.iter().any(|p| p.invalid) {
            return Err(INVALID_POOLS.into());
        }
        return Ok(Outcome::Unfit);
    }
    Ok(Outcome::Allocated((0..claims.len()).map(|ci| search.result_of(ci)).collect()))
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
    /// `isSelectable`: the class's selectors, then the request's, cached per (request, device).
    fn is_selectable(
        &mut self,
        ci: usize,
        ri: usize,
        class: &DeviceClass,
        exact: &ExactDeviceRequest,
        d: usize,
    ) -> Result<bool, String> {
        let slot = self.request_offsets[ci][ri] + d;
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
        })? && selectors_match(selectors, &c.id, c.device, &exact.selectors, || {
            format!("claim {}", claim_key(claim))
        })? && c.reachable;
        self.selectable[slot] = Some(matches);
        Ok(matches)
    }

    /// `allocateOne`: the `di`-th device of request `ri` of claim `ci`, and everything after it.
    fn allocate_one(&mut self, ci: usize, ri: usize, di: usize) -> Result<bool, String> {
        if ci >= self.claims.len() {
            return Ok(true);
        }
        if ri >= self.requests[ci].len() {
            return self.allocate_one(ci + 1, 0, 0);
        }
        let num_devices = self.requests[ci][ri].num_devices;
        if let Some(all) = &self.requests[ci][ri].all_devices {
            if all.is_empty() {
                return Ok(false);
            }
        }
        if di >= num_devices {
            return self.allocate_one(ci, ri + 1, 0);
        }
        if let Some(all) = &self.requests[ci][ri].all_devices {
            let d = all[di];
            if !self.allocate_device(ci, ri, d, true)? {
                return Ok(false);
            }
            if self.allocate_one(ci, ri, di + 1)? {
                return Ok(true);
            }
            self.deallocate_device(ci, ri, d);
            return Ok(false);
        }
        let admin = self.requests[ci][ri].exact.admin_access.unwrap_or(false);
        for d in 0..self.candidates.len() {
            if admin {
                if self.allocating[d] & (1 << ci) != 0 {
                    continue;
                }
            } else if self.in_use[d] || self.allocating[d] != 0 {
                continue;
            }
            let (class, exact) = (self.requests[ci][ri].class, self.requests[ci][ri].exact);
            if !self.is_selectable(ci, ri, class, exact, d)? {
                continue;
            }
            if !self.allocate_device(ci, ri, d, false)? {
                continue;
            }
            if self.allocate_one(ci, ri, di + 1)? {
                return Ok(true);
            }
            self.deallocate_device(ci, ri, d);
        }
        Ok(false)
    }

    /// `allocateDevice`: in use, then the claim's constraints; on success the device is recorded.
    fn allocate_device(&mut self, ci: usize, ri: usize, d: usize, must: bool) -> Result<bool, String> {
        let admin = self.requests[ci][ri].exact.admin_access.unwrap_or(false);
        if admin {
            if self.allocating[d] & (1 << ci) != 0 {
                return Ok(false);
            }
        } else if self.in_use[d] || self.allocating[d] != 0 {
            return Ok(false);
        }
        let name = self.requests[ci][ri].name;
        let candidate = &self.candidates[d];
        let reserved = !candidate.device.consumes_counters.is_empty();
        if reserved && !self.counters[candidate.pool].as_mut().is_some_and(|c| c.reserve(candidate.device)) {
            return Ok(false);
        }
        let release = |counters: &mut Vec<Option<PoolCounters<'a>>>| {
            if let Some(c) = counters[candidate.pool].as_mut().filter(|_| reserved) {
                c.release(candidate.device);
            }
        };
        if taint_prevents_allocation(candidate.device, &self.requests[ci][ri].exact.tolerations) {
            release(&mut self.counters);
            return Ok(false);
        }
        for k in 0..self.constraints[ci].len() {
            if !self.constraints[ci][k].add(name, candidate) {
                for j in (0..k).rev() {
                    self.constraints[ci][j].remove(name);
                }
                release(&mut self.counters);
                if must {
                    return Err(format!(
                        "claim {}, request {name}: cannot add device {} because a claim constraint would not be satisfied",
                        claim_key(self.claims[ci]),
                        candidate.id
                    ));
                }
                return Ok(false);
            }
        }
        self.allocating[d] |= 1 << ci;
        self.result[ci].push((ri, d));
        Ok(true)
    }

    /// `rollbackDevice` of a device `allocate_device` accepted (the last one of claim `ci`).
    fn deallocate_device(&mut self, ci: usize, ri: usize, d: usize) {
        let popped = self.result[ci].pop();
        debug_assert_eq!(popped, Some((ri, d)));
        self.allocating[d] &= !(1 << ci);
        let c = &self.candidates[d];
        if let Some(counters) = self.counters[c.pool].as_mut().filter(|_| !c.device.consumes_counters.is_empty()) {
            counters.release(c.device);
        }
        let name = self.requests[ci][ri].name;
        for k in (0..self.constraints[ci].len()).rev() {
            self.constraints[ci][k].remove(name);
        }
    }

    /// The allocation of claim `ci` (devices in the order chosen, and where they are reachable).
    fn result_of(&self, ci: usize) -> AllocationResult {
        let results = self.result[ci]
            .iter()
            .map(|&(ri, d)| {
                let c = &self.candidates[d];
                DeviceRequestAllocationResult {
                    request: self.requests[ci][ri].name.to_string(),
                    driver: c.id.driver.clone(),
                    pool: c.id.pool.clone(),
                    device: c.id.device.clone(),
                    admin_access: self.requests[ci][ri].exact.admin_access.filter(|&a| a),
                    tolerations: self.requests[ci][ri].exact.tolerations.clone(),
                }
            })
            .collect();
        let node_selector = node_selector_of(self.result[ci].iter().map(|&(_, d)| {
            let c = &self.candidates[d];
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
