//! DynamicResources' PreFilter and Filter for one pod, as functions over the snapshot's DRA
//! objects, with upstream's (v1.37.2 `dynamicresources.go`) reasons and status codes for the
//! basic features: [`pre_filter`] resolves the pod's claims (`foreachPodResourceClaim`), refuses a
//! claim in use by others or being allocated for another pod, checks the device classes of the
//! claims still to allocate, and gathers the devices already allocated (the claims' allocations
//! and the allocations in flight, made at Reserve and not yet written at PreBind);
//! [`PodClaims::filter`] checks an allocated claim's node selector and allocates the rest on one
//! node; [`PodClaims::reserve`] puts the chosen node's allocations in flight,
//! [`PodClaims::unreserve`] drops them (and the pod's reservations), [`PodClaims::pre_bind`]
//! writes them with the pod's `reservedFor` entry into the claim store. The `Plugin` over them is
//! `plugin.rs`.
//!
//! Codes: upstream's `statusUnschedulable` is UnschedulableAndUnresolvable (preemption cannot
//! free devices), `statusError` is Error.

use std::collections::{BTreeMap, HashSet};

use super::allocator::{allocate_with, DeviceId, DeviceSelectors, NodeView, Outcome, INVALID_POOLS};
use super::allocator_capacity::SharedState;
use super::controller::allocated_devices;
use super::pod_claims::{bind_to, pod_group, pod_resource_claims_with};
use crate::api::objects::{NodeSelector, Pod};
use crate::api::resource::{AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceSlice};
use crate::framework::{Code, Status};
use crate::snapshot::dra::DraObjects;

/// `resourceapi.ResourceClaimReservedForMaxSize`: at most this many consumers per claim.
pub const RESERVED_FOR_MAX_SIZE: usize = 256;

/// `resourceapi.Finalizer`: the scheduler puts it on a claim it allocates; the resourceclaim
/// controller deallocates only a claim that has it (`controller::release_pod_claims`).
pub const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

/// Allocations made at Reserve and not yet written to their claims by PreBind (upstream's
/// `inFlightAllocations`), by (namespace, claim name).
pub type InFlight = BTreeMap<(String, String), AllocationResult>;

pub use crate::snapshot::dra::Claims;

/// The shares (DRAConsumableCapacity) every allocated claim of the store holds, and those of the
/// allocations in flight.
pub fn shared_state_of(claims: &Claims, in_flight: &InFlight) -> SharedState {
    let allocations = claims.values().filter_map(|c| c.status.allocation.as_ref());
    SharedState::of(allocations.chain(in_flight.values()))
}

/// What PreFilter found for a pod with claims (upstream's `stateData`).
#[derive(Debug)]
pub struct PodClaims {
    /// The pod's claims in `spec.resourceClaims` order (copies: the cycle state owns them).
    pub claims: Vec<ResourceClaim>,
    /// The claims without an allocation, by index into `claims`.
    pub to_allocate: Vec<usize>,
    /// The devices held by every allocated or in-flight claim (empty when nothing is to allocate).
    pub allocated: HashSet<DeviceId>,
    /// The shares of devices allowing multiple allocations those claims hold (not in `allocated`).
    pub shared: SharedState,
    /// Whom each claim is reserved for at PreBind (`claims`' order): the pod, or its PodGroup for
    /// a claim shared through the group (`podResourceClaimBindings`, DRAWorkloadResourceClaims).
    pub bindings: Vec<ResourceClaimConsumerReference>,
    /// DRAWorkloadResourceClaims is on: a reservation for the pod's PodGroup counts as the pod's.
    pub accept_group: bool,
}

impl PodClaims {
    /// Whether claim `i` is shared through the pod's PodGroup (reserved for the group).
    pub fn is_group_claim(&self, i: usize) -> bool {
        self.bindings.get(i).is_some_and(|b| b.resource == "podgroups")
    }
}

fn unresolvable(reason: impl Into<String>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, reason)
}

/// `klog.KObj`: `namespace/name`.
fn kobj(claim: &ResourceClaim) -> String {
    format!("{}/{}", claim.metadata.namespace, claim.metadata.name)
}

/// `resourceclaim.IsReservedForPod` (the pod's uid among the claim's consumers; with
/// `accept_group`, its PodGroup's name).
fn is_reserved_for_pod(pod: &Pod, claim: &ResourceClaim, accept_group: bool) -> bool {
    super::pod_claims::is_reserved_for_pod(pod, claim, accept_group)
}

/// PreFilter: `Ok(None)` is Skip (the pod uses no claim); `Err` ends the cycle with upstream's
/// status. `namespace` is the pod's; `claims` is the claim store's map (`dra.claims`, locked by
/// the caller); `dra` gives the device classes.
pub fn pre_filter(
    pod: &Pod,
    namespace: &str,
    dra: &DraObjects,
    claims: &Claims,
    in_flight: &InFlight,
) -> Result<Option<PodClaims>, Status> {
    if pod.spec.resource_claims.is_empty() {
        return Ok(None);
    }
    let accept_group = dra.workload_claims;
    let found = pod_resource_claims_with(pod, namespace, claims, accept_group).map_err(unresolvable)?;
    // `podResourceClaimBindings`: whom each claim is reserved for (the PodGroup's lookup fails
    // when the group does not exist).
    let group = pod_group(pod, namespace, dra).map_err(unresolvable)?;
    let mut bindings = Vec::with_capacity(found.len());
    for (entry_name, _) in &found {
        let entry =
            pod.spec.resource_claims.iter().find(|e| e.name == *entry_name).expect("found from the pod's entries");
        bindings.push(bind_to(pod, namespace, group, entry).map_err(unresolvable)?);
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut to_allocate = Vec::new();
    for (index, (_, claim)) in found.iter().enumerate() {
        if claim.status.allocation.is_some() {
            if claim.status.reserved_for.len() >= RESERVED_FOR_MAX_SIZE
                && !is_reserved_for_pod(pod, claim, accept_group)
            {
                return Err(unresolvable("resourceclaim in use"));
            }
            continue;
        }
        to_allocate.push(index);
        if in_flight.contains_key(&(claim.metadata.namespace.clone(), claim.metadata.name.clone())) {
            return Err(unresolvable(format!("resource claim {} is in the process of being allocated", kobj(claim))));
        }
        for request in &claim.spec.devices.requests {
            match (&request.exactly, request.first_available.is_empty()) {
                (Some(exact), _) => {
                    if exact.device_class_name.is_empty() {
                        return Err(Status::new(
                            Code::Error,
                            format!("request {}: unsupported request type", request.name),
                        ));
                    }
                    if !dra.classes.contains_key(&exact.device_class_name) {
                        return Err(unresolvable(format!(
                            "request {}: device class {} does not exist",
                            request.name, exact.device_class_name
                        )));
                    }
                }
                (None, false) => {
                    if dra.features.prioritized_list_off {
                        return Err(unresolvable(format!(
                            "resource claim {}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                            kobj(claim),
                            request.name
                        )));
                    }
                    // DRAPrioritizedList (on, locked): each subrequest's class, named `request/sub`.
                    for sub in &request.first_available {
                        let name = format!("{}/{}", request.name, sub.name);
                        if sub.device_class_name.is_empty() {
                            return Err(Status::new(Code::Error, format!("request {name}: unsupported request type")));
                        }
                        if !dra.classes.contains_key(&sub.device_class_name) {
                            return Err(unresolvable(format!(
                                "request {name}: device class {} does not exist",
                                sub.device_class_name
                            )));
                        }
                    }
                }
                (None, true) => {
                    return Err(unresolvable(format!(
                        "resource claim {}, request {}: unknown request type",
                        kobj(claim),
                        request.name
                    )))
                }
            }
        }
    }
    let mut allocated = HashSet::new();
    let mut shared = SharedState::default();
    if !to_allocate.is_empty() {
        allocated = allocated_devices(claims);
        for allocation in in_flight.values() {
            for r in allocation.devices.results.iter().filter(|r| r.share_id.is_none()) {
                allocated.insert(DeviceId::new(&r.driver, &r.pool, &r.device));
            }
        }
        shared = shared_state_of(claims, in_flight);
    }
    let claims = found.into_iter().map(|(_, c)| c.clone()).collect();
    Ok(Some(PodClaims { claims, to_allocate, allocated, shared, bindings, accept_group }))
}

/// The node selector of an allocated claim (`nodeSelectorFromAllocation`), `None` when it is
/// available everywhere.
fn available_on(claim: &ResourceClaim) -> Option<&NodeSelector> {
    claim.status.allocation.as_ref().and_then(|a| a.node_selector.as_ref())
}

impl PodClaims {
    /// Filter on one node: `Ok(allocations)` (one per claim of `to_allocate`, in order; empty when
    /// every claim is allocated) or upstream's status. `slices` are the cluster's ResourceSlices
    /// (by name).
    pub fn filter(
        &self,
        node: &NodeView<'_>,
        dra: &DraObjects,
        slices: &[&ResourceSlice],
        selectors: &mut dyn DeviceSelectors,
    ) -> Result<Vec<AllocationResult>, Status> {
        let unavailable =
            self.claims.iter().filter_map(available_on).any(|selector| !(node.selector_matches)(selector));
        let mut allocations = Vec::new();
        if !self.to_allocate.is_empty() {
            let claims: Vec<&ResourceClaim> = self.to_allocate.iter().map(|&i| &self.claims[i]).collect();
            match allocate_with(
                &claims,
                node,
                slices,
                &dra.classes,
                &self.allocated,
                &self.shared,
                dra.features,
                selectors,
            ) {
                Ok(Outcome::Allocated(results)) => allocations = results,
                Ok(Outcome::Unfit) => return Err(unresolvable("cannot allocate all claims")),
                Err(e) if e == INVALID_POOLS => return Err(unresolvable(e)),
                Err(e) => return Err(Status::new(Code::Error, e)),
            }
        }
        if unavailable {
            return Err(unresolvable("resourceclaim not available on the node"));
        }
        Ok(allocations)
    }
}

/// A claim's key in [`DraObjects::claims`] and [`InFlight`].
fn key_of(claim: &ResourceClaim) -> (String, String) {
    (claim.metadata.namespace.clone(), claim.metadata.name.clone())
}

impl PodClaims {
    /// Reserve on the chosen node: `allocations` (what [`PodClaims::filter`] returned for it) become
    /// in flight, one per claim to allocate (`SignalClaimPendingAllocation`).
    pub fn reserve(&self, allocations: &[AllocationResult], in_flight: &mut InFlight) -> Result<(), Status> {
        if self.to_allocate.is_empty() {
            return Ok(());
        }
        if allocations.is_empty() {
            return Err(Status::new(Code::Error, "claim allocation not found for node"));
        }
        if allocations.len() != self.to_allocate.len() {
            let (have, want) = (allocations.len(), self.to_allocate.len());
            return Err(Status::new(
                Code::Error,
                format!("internal error, have {have} allocations, {want} claims to allocate, want {want} claims"),
            ));
        }
        for (&i, allocation) in self.to_allocate.iter().zip(allocations) {
            in_flight.insert(key_of(&self.claims[i]), allocation.clone());
        }
        Ok(())
    }

    /// Unreserve: the pod's in-flight allocations are dropped, and the pod's reservation of an
    /// allocated claim is removed (upstream's `reservedFor` delete patch; a claim reserved for the
    /// pod's PodGroup keeps the group's). `claims`: the claim store's map.
    pub fn unreserve(&self, pod: &Pod, in_flight: &mut InFlight, claims: &mut Claims) {
        for claim in &self.claims {
            let key = key_of(claim);
            in_flight.remove(&key);
            if let Some(c) = claims.get_mut(&key) {
                if c.status.allocation.is_some() {
                    c.status.reserved_for.retain(|r| r.uid != pod.metadata.uid);
                }
            }
        }
    }

    /// PreBind (`bindClaim` for each claim not yet reserved for the pod or its group): the
    /// in-flight allocation is written to the claim in `claims` with [`CLAIM_FINALIZER`] and the
    /// claim's binding (the pod, or its PodGroup) added to its `reservedFor`; a claim not in
    /// `claims` yet is written there as PreFilter found it. The allocation timestamp is not
    /// modelled (nothing here reads it).
    pub fn pre_bind(&self, pod: &Pod, in_flight: &mut InFlight, claims: &mut Claims) -> Result<(), Status> {
        for (i, claim) in self.claims.iter().enumerate() {
            let key = key_of(claim);
            let current = claims.entry(key.clone()).or_insert_with(|| claim.clone());
            if is_reserved_for_pod(pod, current, self.accept_group) {
                continue;
            }
            if current.metadata.deletion_timestamp.is_some() {
                return Err(Status::new(Code::Error, format!("claim {} got deleted in the meantime", kobj(claim))));
            }
            if let Some(allocation) = in_flight.remove(&key) {
                if current.status.allocation.is_some() {
                    return Err(Status::new(
                        Code::Error,
                        format!("claim {} got allocated elsewhere in the meantime", kobj(claim)),
                    ));
                }
                current.status.allocation = Some(allocation);
                if !current.metadata.finalizers.iter().any(|f| f == CLAIM_FINALIZER) {
                    current.metadata.finalizers.push(CLAIM_FINALIZER.to_string());
                }
            }
            current.status.reserved_for.push(self.bindings.get(i).cloned().unwrap_or_else(|| {
                ResourceClaimConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }
            }));
        }
        Ok(())
    }
}

/// Cases of upstream's `TestPlugin` (`dynamicresources_test.go`) that use the basic features,
/// with their names, objects and PreFilter/Filter statuses, and two of ours (`claim-in-flight`,
/// `claim-in-use`) for PreFilter's other refusals.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::objects::NodeSelectorOperator;
    use crate::api::{parse_objects, Object};
    use crate::plugins::dynamicresources::selectors::CelSelectors;

    const POD: &str = "kind: Pod\nmetadata: {name: my-pod, namespace: default, uid: '1234'}\nspec:\n  containers: [{name: c}]\n  resourceClaims: [{name: my-resource, resourceClaimName: my-pod-my-resource}]\n";
    const CLASS: &str = "kind: DeviceClass\nmetadata: {name: my-resource-class}\nspec: {selectors: [{cel: {expression: 'device.driver == \"some-driver\"'}}]}\n";
    const SLICE: &str = "kind: ResourceSlice\nmetadata: {name: worker-some-driver}\nspec: {driver: some-driver, nodeName: worker, pool: {name: worker, generation: 1, resourceSliceCount: 1}, devices: [{name: instance-1}]}\n";
    const PENDING: &str = "kind: ResourceClaim\nmetadata: {name: my-pod-my-resource, namespace: default}\nspec: {devices: {requests: [{name: req-1, exactly: {deviceClassName: my-resource-class}}]}}\n";

    /// A claim allocated `instance-1` on `node` (`allocatedClaim`, or with the wrong topology).
    fn allocated(name: &str, node: &str) -> String {
        format!(
            "kind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\nspec: {{devices: {{requests: [{{name: req-1, exactly: {{deviceClassName: my-resource-class}}}}]}}}}\nstatus:\n  allocation:\n    devices: {{results: [{{request: req-1, driver: some-driver, pool: worker, device: instance-1}}]}}\n    nodeSelector: {{nodeSelectorTerms: [{{matchFields: [{{key: metadata.name, operator: In, values: [{node}]}}]}}]}}\n"
        )
    }

    fn load(docs: &[&str]) -> (Pod, DraObjects) {
        let mut pod = None;
        let mut dra = DraObjects::default();
        for o in parse_objects(&docs.join("---\n"), "case.yaml").unwrap() {
            match o {
                Object::Pod(p) => pod = Some(p),
                Object::DeviceClass(c) => dra.add_class(&c),
                Object::ResourceSlice(s) => dra.add_slice(&s),
                Object::ResourceClaim(c) => dra.add_claim(&c),
                _ => unreachable!(),
            }
        }
        (pod.unwrap(), dra)
    }

    /// `matchFields` on `metadata.name` only (what allocations and the cases use).
    fn name_matches(node: &str, selector: &NodeSelector) -> bool {
        selector.node_selector_terms.iter().any(|t| {
            t.match_expressions.is_empty()
                && t.match_fields.iter().all(|r| {
                    r.key == "metadata.name"
                        && matches!(r.operator, NodeSelectorOperator::In)
                        && r.values.iter().any(|v| v == node)
                })
        })
    }

    /// (PreFilter, Filter on `worker`): `Ok(None)` Skip; `Ok(Some(n))` n allocations; `Err(code, reason)`.
    type Want = (Result<Option<usize>, (Code, &'static str)>, Option<(Code, &'static str)>);

    #[test]
    fn upstream_plugin_cases() {
        let uu = Code::UnschedulableAndUnresolvable;
        let in_use = {
            let mut c = allocated("my-pod-my-resource", "worker");
            c.push_str("  reservedFor:\n");
            for i in 0..RESERVED_FOR_MAX_SIZE {
                c.push_str(&format!("  - {{resource: pods, name: p{i}, uid: u{i}}}\n"));
            }
            c
        };
        let template_pod = POD.replace("resourceClaimName: my-pod-my-resource", "resourceClaimTemplateName: t");
        let no_claims =
            "kind: Pod\nmetadata: {name: my-pod, namespace: default, uid: '1234'}\nspec: {containers: [{name: c}]}\n";
        let other_allocated = allocated("other", "worker");
        let allocated_worker = allocated("my-pod-my-resource", "worker");
        let allocated_wrong = allocated("my-pod-my-resource", "other-node");
        let in_flight_other: &str = "other";
        let cases: Vec<(&str, Vec<&str>, Option<&str>, Want)> = vec![
            ("empty", vec![no_claims], None, (Ok(None), None)),
            (
                "missing-claim",
                vec![&template_pod, CLASS],
                None,
                (Err((uu, "pod \"default/my-pod\": ResourceClaim not created yet")), None),
            ),
            ("no-resources", vec![POD, PENDING, CLASS], None, (Ok(Some(1)), Some((uu, "cannot allocate all claims")))),
            ("with-resources", vec![POD, PENDING, CLASS, SLICE], None, (Ok(Some(1)), None)),
            (
                "exhausted-resources-in-informer-cache",
                vec![POD, PENDING, &other_allocated, CLASS, SLICE],
                None,
                (Ok(Some(1)), Some((uu, "cannot allocate all claims"))),
            ),
            (
                "exhausted-resources-in-flight-claim",
                vec![POD, PENDING, CLASS, SLICE],
                Some(in_flight_other),
                (Ok(Some(1)), Some((uu, "cannot allocate all claims"))),
            ),
            (
                "claim-in-flight",
                vec![POD, PENDING, CLASS, SLICE],
                Some("my-pod-my-resource"),
                (Err((uu, "resource claim default/my-pod-my-resource is in the process of being allocated")), None),
            ),
            (
                "missing-class",
                vec![POD, PENDING],
                None,
                (Err((uu, "request req-1: device class my-resource-class does not exist")), None),
            ),
            (
                "wrong-topology",
                vec![POD, &allocated_wrong],
                None,
                (Ok(Some(0)), Some((uu, "resourceclaim not available on the node"))),
            ),
            ("good-topology", vec![POD, &allocated_worker], None, (Ok(Some(0)), None)),
            ("claim-in-use", vec![POD, &in_use], None, (Err((uu, "resourceclaim in use")), None)),
        ];
        for (name, docs, in_flight_claim, (want_pre, want_filter)) in cases {
            let (pod, dra) = load(&docs);
            let mut in_flight = InFlight::new();
            if let Some(claim) = in_flight_claim {
                let (_, with) = load(&[no_claims, &allocated(claim, "worker")]);
                let c = with.claim("default", claim).unwrap();
                in_flight.insert(("default".into(), claim.into()), c.status.allocation.clone().unwrap());
            }
            let got = pre_filter(&pod, "default", &dra, &dra.claims.lock(), &in_flight);
            let state = match (&want_pre, got) {
                (Ok(None), Ok(None)) => continue,
                (Ok(Some(n)), Ok(Some(s))) => {
                    assert_eq!(s.to_allocate.len(), *n, "{name}: claims to allocate");
                    s
                }
                (Err((code, reason)), Err(st)) => {
                    assert_eq!((st.code, st.reasons.join(", ")), (*code, reason.to_string()), "{name}");
                    continue;
                }
                (_, got) => panic!("{name}: PreFilter {got:?}, want {want_pre:?}"),
            };
            let matches = |s: &NodeSelector| name_matches("worker", s);
            let node = NodeView { name: "worker", selector_matches: &matches };
            let slices: Vec<&ResourceSlice> = dra.slices.values().collect();
            let got = state.filter(&node, &dra, &slices, &mut CelSelectors::new());
            match (want_filter, got) {
                (None, Ok(allocations)) => {
                    assert_eq!(allocations.len(), state.to_allocate.len(), "{name}");
                    if let Some(a) = allocations.first() {
                        assert_eq!(a.devices.results[0].device, "instance-1", "{name}");
                        assert!(name_matches("worker", a.node_selector.as_ref().unwrap()), "{name}");
                    }
                }
                (Some((code, reason)), Err(st)) => {
                    assert_eq!((st.code, st.reasons.join(", ")), (code, reason.to_string()), "{name}")
                }
                (want, got) => panic!("{name}: Filter {got:?}, want {want:?}"),
            }
        }
    }

    /// DRAPrioritizedList off (upstream's PreFilter; the gate is locked on at v1.37): a claim to
    /// allocate with `firstAvailable` is refused, an allocated one or an `exactly` request is not.
    /// (case, claim, gate off) -> PreFilter's reason, or `None` when it passes.
    #[test]
    fn first_available_needs_the_prioritized_list_gate() {
        let first = "kind: ResourceClaim\nmetadata: {name: my-pod-my-resource, namespace: default}\nspec: {devices: {requests: [{name: req-1, firstAvailable: [{name: sub-1, deviceClassName: my-resource-class}]}]}}\n";
        let first_allocated = format!(
            "{first}status:\n  allocation:\n    devices: {{results: [{{request: req-1/sub-1, driver: some-driver, pool: worker, device: instance-1}}]}}\n"
        );
        let refused = "resource claim default/my-pod-my-resource, request req-1: has subrequests, but the DRAPrioritizedList feature is disabled";
        let cases: [(&str, &str, bool, Option<&str>); 4] = [
            ("firstAvailable, gate on", first, false, None),
            ("firstAvailable, gate off", first, true, Some(refused)),
            ("firstAvailable allocated, gate off", &first_allocated, true, None),
            ("exactly, gate off", PENDING, true, None),
        ];
        for (name, claim, off, want) in cases {
            let (pod, mut dra) = load(&[POD, claim, CLASS, SLICE]);
            dra.features.prioritized_list_off = off;
            let got = pre_filter(&pod, "default", &dra, &dra.claims.lock(), &InFlight::new());
            match (want, got) {
                (None, Ok(Some(_))) => {}
                (Some(reason), Err(st)) => {
                    assert_eq!(
                        (st.code, st.reasons.join(", ")),
                        (Code::UnschedulableAndUnresolvable, reason.to_string()),
                        "{name}"
                    )
                }
                (want, got) => panic!("{name}: PreFilter {got:?}, want {want:?}"),
            }
        }
    }

    /// with-resources through Reserve, PreBind and a second pod: the allocation is in flight after
    /// Reserve, written with the pod's reservation at PreBind, and the device is then taken.
    #[test]
    fn reserve_pre_bind_unreserve() {
        let (pod, mut dra) = load(&[POD, PENDING, CLASS, SLICE]);
        let mut in_flight = InFlight::new();
        let state = pre_filter(&pod, "default", &dra, &dra.claims.lock(), &in_flight).unwrap().unwrap();
        let matches = |s: &NodeSelector| name_matches("worker", s);
        let node = NodeView { name: "worker", selector_matches: &matches };
        let slices: Vec<ResourceSlice> = dra.slices.values().cloned().collect();
        let slices: Vec<&ResourceSlice> = slices.iter().collect();
        let allocations = state.filter(&node, &dra, &slices, &mut CelSelectors::new()).unwrap();
        assert_eq!(state.reserve(&[], &mut in_flight).unwrap_err().reasons, ["claim allocation not found for node"]);
        state.reserve(&allocations, &mut in_flight).unwrap();
        assert_eq!(in_flight.len(), 1);
        // Another pod using the claim now waits for the allocation to finish.
        let again = pre_filter(&pod, "default", &dra, &dra.claims.lock(), &in_flight).unwrap_err();
        assert_eq!(again.reasons, ["resource claim default/my-pod-my-resource is in the process of being allocated"]);
        state.unreserve(&pod, &mut in_flight, dra.claims.get_mut());
        assert!(in_flight.is_empty());
        state.reserve(&allocations, &mut in_flight).unwrap();
        state.pre_bind(&pod, &mut in_flight, dra.claims.get_mut()).unwrap();
        assert!(in_flight.is_empty());
        let claim = dra.claim("default", "my-pod-my-resource").unwrap();
        assert_eq!(claim.status.allocation.as_ref(), allocations.first());
        assert_eq!(claim.status.reserved_for.len(), 1);
        assert_eq!(claim.status.reserved_for[0].uid, "1234");
        // Bound again (already reserved): nothing changes.
        state.pre_bind(&pod, &mut in_flight, dra.claims.get_mut()).unwrap();
        assert_eq!(dra.claim("default", "my-pod-my-resource").unwrap().status.reserved_for.len(), 1);
        // The pod's next PreFilter sees an allocated claim reserved for it: nothing to allocate.
        let next = pre_filter(&pod, "default", &dra, &dra.claims.lock(), &in_flight).unwrap().unwrap();
        assert!(next.to_allocate.is_empty());
        // Unreserve of the bound pod removes its reservation, keeps the allocation.
        next.unreserve(&pod, &mut in_flight, dra.claims.get_mut());
        let claim = dra.claim("default", "my-pod-my-resource").unwrap();
        assert!(claim.status.reserved_for.is_empty() && claim.status.allocation.is_some());
    }

    /// A pod group with the shared claims of upstream's workloadresourceclaims suite: `g` shares
    /// `shared` (by name, `test-claim-0`) and `resource` (from template `t`, made as
    /// `g-resource-xxxxx`, owned by the group).
    fn group_dra(workload_claims: bool) -> DraObjects {
        let mut dra = DraObjects::default();
        for o in parse_objects(
            &[
                CLASS,
                SLICE,
                "kind: ResourceClaim\nmetadata: {name: test-claim-0, namespace: default}\nspec: {devices: {requests: [{name: req-1, exactly: {deviceClassName: my-resource-class}}]}}\n",
                "kind: ResourceClaim\nmetadata:\n  name: g-resource-xxxxx\n  namespace: default\n  ownerReferences: [{apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, name: g, uid: g-uid, controller: true}]\nspec: {devices: {requests: [{name: req-1, exactly: {deviceClassName: my-resource-class}}]}}\n",
                "kind: ResourceClaim\nmetadata:\n  name: h-resource-xxxxx\n  namespace: default\n  ownerReferences: [{apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, name: h, uid: h-uid, controller: true}]\nspec: {devices: {requests: [{name: req-1, exactly: {deviceClassName: my-resource-class}}]}}\n",
            ]
            .join("---\n"),
            "case.yaml",
        )
        .unwrap()
        {
            match o {
                Object::DeviceClass(c) => dra.add_class(&c),
                Object::ResourceSlice(s) => dra.add_slice(&s),
                Object::ResourceClaim(c) => dra.add_claim(&c),
                _ => unreachable!(),
            }
        }
        dra.workload_claims = workload_claims;
        let claims = vec![
            crate::api::objects::PodGroupResourceClaim {
                name: "shared".into(),
                resource_claim_name: Some("test-claim-0".into()),
                resource_claim_template_name: None,
            },
            crate::api::objects::PodGroupResourceClaim {
                name: "resource".into(),
                resource_claim_name: None,
                resource_claim_template_name: Some("t".into()),
            },
        ];
        let statuses = [("resource".to_string(), "g-resource-xxxxx".to_string())].into();
        dra.pod_groups.insert(
            ("default".into(), "g".into()),
            crate::snapshot::dra::GroupClaims { uid: "g-uid".into(), claims, statuses },
        );
        dra
    }

    /// A pod `p` (uid `u1`) with one claim entry, in group `group` when set, with
    /// `status.resourceClaimStatuses` `[{name: resource, resourceClaimName: status}]` when set.
    fn group_pod(entry: &str, group: Option<&str>, status: Option<&str>) -> Pod {
        let mut text = format!(
            "kind: Pod\nmetadata: {{name: p, namespace: default, uid: u1}}\nspec:\n  containers: [{{name: c}}]\n  resourceClaims: [{entry}]\n"
        );
        if let Some(g) = group {
            text.push_str(&format!("  schedulingGroup: {{podGroupName: {g}}}\n"));
        }
        if let Some(s) = status {
            text.push_str(&format!("status:\n  resourceClaimStatuses: [{{name: resource, resourceClaimName: {s}}}]\n"));
        }
        let Object::Pod(pod) = parse_objects(&text, "pod.yaml").unwrap().remove(0) else { panic!() };
        pod
    }

    /// Claim resolution through a pod's PodGroup (DRAWorkloadResourceClaims): (case, gate on, pod
    /// entry, group, pod status) -> PreFilter's claim and whom PreBind reserves it for
    /// (`podgroups/g` or `pods/p`), or its UnschedulableAndUnresolvable reason.
    #[test]
    fn claims_resolve_through_the_pod_group() {
        const REF: &str = "{name: shared, resourceClaimName: test-claim-0}";
        const TEMPLATE: &str = "{name: resource, resourceClaimTemplateName: t}";
        type Case = (
            &'static str,
            bool,
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            Result<(&'static str, &'static str), &'static str>,
        );
        let cases: [Case; 11] = [
            ("claim ref matching the group's", true, REF, Some("g"), None, Ok(("test-claim-0", "podgroups/g"))),
            ("template, the group's claim recorded", true, TEMPLATE, Some("g"), Some("g-resource-xxxxx"), Ok(("g-resource-xxxxx", "podgroups/g"))),
            ("claim ref, gate off", false, REF, Some("g"), None, Ok(("test-claim-0", "pods/p"))),
            ("claim ref, pod not in a group", true, REF, None, None, Ok(("test-claim-0", "pods/p"))),
            ("same name, another claim: the pod's own", true, "{name: shared, resourceClaimName: test-claim-1}", Some("g"), None, Err("could not find ResourceClaim \"default/test-claim-1\"")),
            ("another entry name: the pod's own", true, "{name: other, resourceClaimName: test-claim-0}", Some("g"), None, Ok(("test-claim-0", "pods/p"))),
            ("group missing", true, REF, Some("nope"), None, Err("pod group state not found for pod group podgroup/default/nope")),
            ("claim not yet created", true, TEMPLATE, Some("g"), None, Err("pod \"default/p\": ResourceClaim not created yet")),
            ("group's claim, pod not in a group", true, TEMPLATE, None, Some("g-resource-xxxxx"), Err("ResourceClaim default/g-resource-xxxxx was not created for Pod default/p (Pod is not owner)")),
            ("group's claim, gate off", false, TEMPLATE, Some("g"), Some("g-resource-xxxxx"), Err("ResourceClaim default/g-resource-xxxxx was not created for Pod default/p (Pod is not owner)")),
            ("another group's claim", true, TEMPLATE, Some("g"), Some("h-resource-xxxxx"), Err("ResourceClaim default/h-resource-xxxxx was not created for Pod default/p (neither Pod nor PodGroup g is the owner)")),
        ];
        for (name, gate, entry, group, status, want) in cases {
            let dra = group_dra(gate);
            let pod = group_pod(entry, group, status);
            let got = pre_filter(&pod, "default", &dra, &dra.claims.lock(), &InFlight::new());
            match (want, got) {
                (Ok((claim, binding)), Ok(Some(s))) => {
                    assert_eq!(s.claims.len(), 1, "{name}");
                    assert_eq!(s.claims[0].metadata.name, claim, "{name}");
                    let b = &s.bindings[0];
                    assert_eq!(format!("{}/{}", b.resource, b.name), binding, "{name}");
                    assert_eq!(s.is_group_claim(0), binding.starts_with("podgroups"), "{name}");
                    if s.is_group_claim(0) {
                        assert_eq!((b.api_group.as_str(), b.uid.as_str()), ("scheduling.k8s.io", "g-uid"), "{name}");
                    }
                }
                (Err(reason), Err(st)) => {
                    assert_eq!(
                        (st.code, st.reasons.join(", ")),
                        (Code::UnschedulableAndUnresolvable, reason.to_string()),
                        "{name}"
                    )
                }
                (want, got) => panic!("{name}: PreFilter {got:?}, want {want:?}"),
            }
        }
    }

    /// reservedFor through a PodGroup: PreBind of the first member writes the allocation and one
    /// `podgroups` entry; every other member then finds the claim reserved for it (nothing to
    /// allocate, PreBind adds nothing), past `RESERVED_FOR_MAX_SIZE` members too, while a pod
    /// outside the group finds the claim in use once it has that many consumers; a member's
    /// Unreserve after PreBind leaves the group's reservation.
    #[test]
    fn reserved_for_names_the_group_once() {
        let mut dra = group_dra(true);
        let member = |uid: &str| {
            let mut p = group_pod("{name: shared, resourceClaimName: test-claim-0}", Some("g"), None);
            p.metadata.uid = uid.into();
            p.metadata.name = format!("p-{uid}");
            p
        };
        let matches = |s: &NodeSelector| name_matches("worker", s);
        let node = NodeView { name: "worker", selector_matches: &matches };
        let slices: Vec<ResourceSlice> = dra.slices.values().cloned().collect();
        let slices: Vec<&ResourceSlice> = slices.iter().collect();
        let first = member("m0");
        let state = pre_filter(&first, "default", &dra, &dra.claims.lock(), &InFlight::new()).unwrap().unwrap();
        assert_eq!(state.to_allocate, [0]);
        let allocations = state.filter(&node, &dra, &slices, &mut CelSelectors::new()).unwrap();
        let mut in_flight = InFlight::new();
        state.reserve(&allocations, &mut in_flight).unwrap();
        state.pre_bind(&first, &mut in_flight, dra.claims.get_mut()).unwrap();
        let reserved = |dra: &DraObjects| {
            let c = dra.claim("default", "test-claim-0").unwrap();
            c.status
                .reserved_for
                .iter()
                .map(|r| format!("{}/{}/{}", r.api_group, r.resource, r.name))
                .collect::<Vec<_>>()
        };
        assert_eq!(reserved(&dra), ["scheduling.k8s.io/podgroups/g"]);
        // Fill reservedFor with other consumers up to the limit.
        {
            let claims = dra.claims.get_mut();
            let c = claims.get_mut(&("default".to_string(), "test-claim-0".to_string())).unwrap();
            for i in 1..RESERVED_FOR_MAX_SIZE {
                c.status.reserved_for.push(ResourceClaimConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    name: format!("o{i}"),
                    uid: format!("o{i}"),
                });
            }
        }
        for uid in ["m1", "m2"] {
            let m = member(uid);
            let s = pre_filter(&m, "default", &dra, &dra.claims.lock(), &InFlight::new()).unwrap().unwrap();
            assert!(s.to_allocate.is_empty(), "{uid}");
            s.pre_bind(&m, &mut InFlight::new(), dra.claims.get_mut()).unwrap();
            assert_eq!(reserved(&dra).len(), RESERVED_FOR_MAX_SIZE, "{uid}: nothing added");
            s.unreserve(&m, &mut InFlight::new(), dra.claims.get_mut());
            assert_eq!(reserved(&dra)[0], "scheduling.k8s.io/podgroups/g", "{uid}: the group's stays");
        }
        let mut outsider = member("x");
        outsider.spec.scheduling_group = None;
        let st = pre_filter(&outsider, "default", &dra, &dra.claims.lock(), &InFlight::new()).unwrap_err();
        assert_eq!(st.reasons, ["resourceclaim in use"]);
    }
}
