//! Extended resources backed by DRA (DRAExtendedResource, on and locked in v1.37.2): a pod's
//! extended-resource request (`example.com/gpu: 1`, or the implicit
//! `deviceclass.resource.kubernetes.io/<class>`) that a DeviceClass maps and that the node does not
//! advertise in its allocatable is satisfied by devices, through one special ResourceClaim per pod.
//!
//! - The mapping ([`device_class_for`]) is dynamic-resource-allocation v0.37.2's
//!   `extendedresourcecache`: a class's `extendedResourceName` (the newest class by creation
//!   timestamp, then the smallest name, wins a name several classes give) and its implicit
//!   `deviceclass.resource.kubernetes.io/<class name>` (which a class that lost the explicit name
//!   when it was added does not get; added here in name order).
//! - NodeResourcesFit leaves a request to DRA when the node's allocatable for it is 0
//!   (`shouldDelegateResourceToDRA`): [`delegated`]. Its scorers score such a resource with the
//!   devices of the node the class selects as allocatable and the allocated ones as requested
//!   (`calculateDRAResourceTotals`): [`ExtendedScoring`], written by DynamicResources' PreFilter.
//! - DynamicResources' PreFilter adds the special claim to the pod's claims
//!   (`preFilterExtendedResources`, [`special_claim`]): one `ExactCount` request per resource,
//!   allocated with the pod's other claims; PreBind writes it under the name the API server would
//!   give `<pod>-extended-resources-` (owned by the pod, annotated
//!   [`EXTENDED_RESOURCE_CLAIM_ANNOTATION`]).
//!
//! Not modelled (each refused or noted where it would matter): a DRA-backed resource that some
//! node also advertises (device plugin) makes PreFilter fail with an Error naming it
//! ([`mixed_reason`]); the requests are one per resource with the pod's effective quantity
//! (upstream: one per container, init containers reusing later ones; the same for a pod whose one
//! container requests it); the pod's `status.extendedResourceClaimStatus` is not written; a special
//! claim left from an earlier cycle (a crash after PreBind) is not looked for.

use std::collections::{BTreeMap, HashSet};

use super::allocator::{DeviceId, DeviceSelectors};
use super::controller::{allocated_devices, generated_name};
use super::cycle::{shared_state_of, Claims, InFlight, PodClaims};
use super::plugin::node_selector_matches;
use crate::api::names::is_extended_resource_name;
use crate::api::objects::{OwnerReference, Pod};
use crate::api::resource::{
    DeviceAllocationMode, DeviceClass, DeviceRequest, ExactDeviceRequest, ResourceClaim, ResourceSlice,
};
use crate::framework::{Code, CycleState, Status};
use crate::snapshot::dra::DraObjects;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot, Sym};

/// `resourceapi.ResourceDeviceClassPrefix`: the implicit extended resource name of a class.
pub const DEVICE_CLASS_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// `resourceapi.ExtendedResourceClaimAnnotation`: marks a pod's special claim.
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";

/// The apiserver's `maxGeneratedNameLength` (63 - 5): a longer `generateName` is cut to this.
pub const MAX_GENERATED_BASE_LEN: usize = 58;

/// The cycle-state key of [`ExtendedScoring`] (written by DynamicResources, read by the
/// NodeResourcesFit and BalancedAllocation scorers).
pub const SCORING_KEY: &str = "DynamicResources/extendedScoring";

/// `IsDRAExtendedResourceName`: an extended resource name or an implicit class name.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(DEVICE_CLASS_PREFIX)
}

/// `(creationTimestamp, name)` order of `extendedresourcecache`: `a` beats `b` for an explicit
/// name when it is newer, or as old with a smaller name.
fn beats(a: &DeviceClass, b: &DeviceClass) -> bool {
    let (ta, tb) = (a.metadata.creation_timestamp.as_deref(), b.metadata.creation_timestamp.as_deref());
    ta > tb || (ta == tb && a.metadata.name < b.metadata.name)
}

/// `DeviceClassResolver.GetDeviceClass(resource)`: the class an extended resource name maps to.
pub fn device_class_for<'a>(dra: &'a DraObjects, resource: &str) -> Option<&'a DeviceClass> {
    if dra.classes.is_empty() {
        return None;
    }
    let explicit = dra.classes.values().filter(|c| c.spec.extended_resource_name.as_deref() == Some(resource)).fold(
        None,
        |best: Option<&DeviceClass>, c| match best {
            Some(b) if !beats(c, b) => Some(b),
            _ => Some(c),
        },
    );
    if explicit.is_some() {
        return explicit;
    }
    let class = dra.classes.get(resource.strip_prefix(DEVICE_CLASS_PREFIX)?)?;
    // Added in name order: a class whose explicit name an earlier (smaller-named) class holds
    // with an equal or newer timestamp was refused whole, its implicit name too.
    let refused = class.spec.extended_resource_name.as_deref().is_some_and(|n| {
        dra.classes
            .values()
            .take_while(|c| c.metadata.name < class.metadata.name)
            .any(|c| c.spec.extended_resource_name.as_deref() == Some(n) && !beats(class, c))
    });
    (!refused).then_some(class)
}

/// Whether some node advertises `resource` (a nonzero allocatable; pods placed by DRA leave
/// requested amounts on nodes that do not).
pub fn advertised(snap: &Snapshot, resource: Sym) -> bool {
    let Some(col) = snap.nodes.scalar_column(resource) else { return false };
    match col.dense_rows() {
        Some((alloc, _)) => alloc.iter().any(|&a| a > 0),
        None => col.carrier_rows().iter().any(|&(_, a, _)| a > 0),
    }
}

/// NodeResourcesFit's `shouldDelegateResourceToDRA` for a resource no node advertises: a class
/// maps it. One test for a cluster without DeviceClasses.
pub fn delegated(snap: &Snapshot, name: Sym) -> bool {
    !snap.cluster.dra.classes.is_empty()
        && device_class_for(&snap.cluster.dra, snap.interner.resolve(name)).is_some()
        && !advertised(snap, name)
}

/// One DRA-backed request of a pod: the resource, its quantity, the class it maps to.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtendedRequest {
    pub resource: Sym,
    pub quantity: i64,
    pub class: String,
}

/// The pod's non-zero requests a DeviceClass maps (`hasDeviceClassMappedExtendedResource`), sorted
/// by resource name (upstream sorts them to name the requests). Empty without DeviceClasses.
pub fn pod_requests(snap: &Snapshot, pod: &PodInfo) -> Vec<ExtendedRequest> {
    let dra = &snap.cluster.dra;
    if pod.requests.scalars.is_empty() || dra.classes.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<ExtendedRequest> = pod
        .requests
        .scalars
        .iter()
        .filter(|(_, q)| *q != 0)
        .filter_map(|&(resource, quantity)| {
            let name = snap.interner.resolve(resource);
            if !is_dra_extended_resource_name(name) {
                return None;
            }
            let class = device_class_for(dra, name)?;
            Some(ExtendedRequest { resource, quantity, class: class.metadata.name.clone() })
        })
        .collect();
    out.sort_by(|a, b| snap.interner.resolve(a.resource).cmp(snap.interner.resolve(b.resource)));
    out
}

/// Why the pod cannot be scheduled here: a DRA-backed resource it requests that some node also
/// advertises (`None` when no node does, the case modelled).
pub fn mixed_reason(snap: &Snapshot, requests: &[ExtendedRequest]) -> Option<String> {
    requests.iter().find(|r| advertised(snap, r.resource)).map(|r| {
        format!(
            "extended resource {} is backed by DRA (device class {}) and advertised by a node: \
             the per-node choice between device plugin and DRA is not implemented",
            snap.interner.resolve(r.resource),
            r.class
        )
    })
}

/// The `generateName` of the pod's special claim, cut as the API server cuts it.
pub fn special_claim_generate_name(pod_name: &str) -> String {
    let mut base = format!("{pod_name}-extended-resources-");
    base.truncate(MAX_GENERATED_BASE_LEN);
    base
}

/// The pod's special claim (`preFilterExtendedResources` with the requests Filter gives it on a
/// node that advertises none of them, `createRequestsAndMappings`), named as PreBind's create
/// would name it. `uid` is the pod's uid as the DRA objects spell it.
pub fn special_claim(snap: &Snapshot, pod: &PodInfo, uid: &str, requests: &[ExtendedRequest]) -> ResourceClaim {
    let namespace = snap.interner.resolve(pod.namespace).to_string();
    let generate_name = special_claim_generate_name(&pod.name);
    let mut claim = ResourceClaim::default();
    claim.metadata.name = generated_name("resourceclaims", &namespace, &generate_name, 0);
    claim.metadata.generate_name = generate_name;
    claim.metadata.namespace = namespace;
    claim.metadata.annotations = BTreeMap::from([(EXTENDED_RESOURCE_CLAIM_ANNOTATION.to_string(), "true".to_string())]);
    claim.metadata.owner_references = vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.name.clone(),
        uid: uid.to_string(),
        controller: Some(true),
    }];
    // The request's name indexes the resource among the container's requests, sorted by name.
    let mut names: Vec<&str> = pod.requests.scalars.iter().map(|&(n, _)| snap.interner.resolve(n)).collect();
    if pod.requests.cpu_milli != 0 {
        names.push("cpu");
    }
    if pod.requests.memory != 0 {
        names.push("memory");
    }
    if pod.requests.ephemeral_storage != 0 {
        names.push("ephemeral-storage");
    }
    names.sort_unstable();
    let mut reqs: Vec<DeviceRequest> = requests
        .iter()
        .map(|r| {
            let name = snap.interner.resolve(r.resource);
            let ridx = names.iter().position(|n| *n == name).unwrap_or(0);
            DeviceRequest {
                name: format!("container-0-request-{ridx}"),
                exactly: Some(ExactDeviceRequest {
                    device_class_name: r.class.clone(),
                    allocation_mode: Some(DeviceAllocationMode::ExactCount),
                    count: Some(r.quantity),
                    ..ExactDeviceRequest::default()
                }),
                first_available: Vec::new(),
            }
        })
        .collect();
    reqs.sort_by(|a, b| a.name.cmp(&b.name));
    claim.spec.devices.requests = reqs;
    claim
}

/// What the scorers read for a pod with DRA-backed requests: per resource, each node's devices of
/// the class (`capacity`) and how many of them are allocated (`allocated`), by node row.
pub struct ExtendedScoring {
    pub columns: Vec<ExtendedColumn>,
}

pub struct ExtendedColumn {
    pub resource: Sym,
    pub quantity: i64,
    pub capacity: Vec<i64>,
    pub allocated: Vec<i64>,
}

impl ExtendedScoring {
    /// The column of `resource`, if the pod requests it through DRA.
    pub fn column(&self, resource: Sym) -> Option<&ExtendedColumn> {
        self.columns.iter().find(|c| c.resource == resource)
    }
}

/// Whether every CEL selector of `class` matches `device` (`deviceMatchesClass`); `Err` when one
/// fails to evaluate.
fn class_matches(
    class: &DeviceClass,
    driver: &str,
    device: &crate::api::resource::Device,
    selectors: &mut dyn DeviceSelectors,
) -> Result<bool, ()> {
    for s in &class.spec.selectors {
        let Some(cel) = &s.cel else { continue };
        if !selectors.matches(&cel.expression, driver, device).map_err(|_| ())? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The rows a slice's devices are available on (`calculateDRAResourceTotals`' node test: all
/// nodes, the named node, or the nodes its selector matches). Per-device node selection is
/// not read (partitionable devices).
fn slice_rows(snap: &Snapshot, slice: &ResourceSlice, out: &mut Vec<NodeIdx>) {
    out.clear();
    let spec = &slice.spec;
    let n = snap.nodes.len();
    if spec.all_nodes.unwrap_or(false) {
        out.extend((0..n).map(|i| NodeIdx(i as u32)));
    } else if let Some(selector) = &spec.node_selector {
        out.extend((0..n).map(|i| NodeIdx(i as u32)).filter(|&i| node_selector_matches(snap, i, selector)));
    } else if let Some(name) = spec.node_name.as_deref().filter(|s| !s.is_empty()) {
        if let Some(i) = snap.interner.get(name).and_then(|s| snap.nodes.idx_of(s)) {
            out.push(i);
        }
    }
}

/// [`ExtendedScoring`] for `requests`: every slice's devices the class selects, counted on the rows
/// the slice serves, those in `allocated` counted again as allocated. A selector that fails to
/// evaluate leaves the rows of that slice at (0, 0) for the resource (upstream logs the error and
/// scores the node without it).
pub fn scoring(
    snap: &Snapshot,
    requests: &[ExtendedRequest],
    allocated: &HashSet<DeviceId>,
    selectors: &mut dyn DeviceSelectors,
) -> ExtendedScoring {
    let dra = &snap.cluster.dra;
    let n = snap.nodes.len();
    let mut rows = Vec::new();
    let columns = requests
        .iter()
        .map(|r| {
            let mut capacity = vec![0i64; n];
            let mut taken = vec![0i64; n];
            let mut failed = Vec::new();
            if let Some(class) = dra.classes.get(&r.class) {
                for slice in dra.slices.values() {
                    slice_rows(snap, slice, &mut rows);
                    if rows.is_empty() {
                        continue;
                    }
                    let (mut cap, mut used, mut error) = (0i64, 0i64, false);
                    for device in &slice.spec.devices {
                        match class_matches(class, &slice.spec.driver, device, selectors) {
                            Ok(true) => {
                                cap += 1;
                                let id = DeviceId::new(&slice.spec.driver, &slice.spec.pool.name, &device.name);
                                used += i64::from(allocated.contains(&id));
                            }
                            Ok(false) => {}
                            Err(()) => error = true,
                        }
                    }
                    for &row in &rows {
                        if error {
                            failed.push(row);
                        }
                        capacity[row.ix()] += cap;
                        taken[row.ix()] += used;
                    }
                }
            }
            for row in failed {
                capacity[row.ix()] = 0;
                taken[row.ix()] = 0;
            }
            ExtendedColumn { resource: r.resource, quantity: r.quantity, capacity, allocated: taken }
        })
        .collect();
    ExtendedScoring { columns }
}

/// What DynamicResources keeps for a pod with DRA-backed requests: the pod as the claims name it
/// (its own `PodClaimRefs` pod, or one cut down to name, namespace and uid for a pod without
/// claims) and its special claim's key (Unreserve after PreBind deletes that claim).
pub struct CycleExtended {
    pub pod: Pod,
    pub claim: (String, String),
}

/// A pod without claims as the DRA objects name it: namespace, name and uid.
pub fn slim_pod(snap: &Snapshot, pod: &PodInfo) -> Pod {
    let mut slim = Pod::default();
    slim.metadata.name.clone_from(&pod.name);
    slim.metadata.namespace = snap.interner.resolve(pod.namespace).to_string();
    slim.metadata.uid = crate::snapshot::dra::uid_string(pod.uid);
    slim
}

/// PreFilter's part for DRA-backed `requests` (non-empty) after the pod's own claims were found
/// (`found`): the special claim joins the claims to allocate (the devices already allocated are
/// gathered when nothing else needed them), and [`ExtendedScoring`] is written for the scorers.
/// `pod` is the pod as the claims name it. An Error when a node also advertises a resource
/// ([`mixed_reason`]).
#[allow(clippy::too_many_arguments)]
pub fn pre_filter(
    snap: &Snapshot,
    info: &PodInfo,
    pod: &Pod,
    requests: &[ExtendedRequest],
    found: Option<PodClaims>,
    written: &Claims,
    selectors: &mut dyn DeviceSelectors,
    state: &mut CycleState,
) -> Result<(PodClaims, CycleExtended), Status> {
    if let Some(reason) = mixed_reason(snap, requests) {
        return Err(Status::new(Code::Error, reason));
    }
    let claim = special_claim(snap, info, &pod.metadata.uid, requests);
    let key = (claim.metadata.namespace.clone(), claim.metadata.name.clone());
    let mut claims = found.unwrap_or(PodClaims {
        claims: Vec::new(),
        to_allocate: Vec::new(),
        allocated: HashSet::new(),
        shared: Default::default(),
        bindings: Vec::new(),
        accept_group: snap.cluster.dra.workload_claims,
    });
    if claims.to_allocate.is_empty() {
        claims.allocated = allocated_devices(written);
        claims.shared = shared_state_of(written, &InFlight::new());
    }
    claims.to_allocate.push(claims.claims.len());
    claims.claims.push(claim);
    state.write(SCORING_KEY, scoring(snap, requests, &claims.allocated, selectors));
    Ok((claims, CycleExtended { pod: pod.clone(), claim: key }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{parse_objects, Object};

    fn dra(yaml: &str) -> DraObjects {
        let mut dra = DraObjects::default();
        for o in parse_objects(yaml, "test.yaml").expect("valid objects") {
            if let Object::DeviceClass(c) = o {
                dra.add_class(&c);
            }
        }
        dra
    }

    fn class(name: &str, extended: Option<&str>, created: Option<&str>) -> String {
        let mut s = format!("kind: DeviceClass\nmetadata:\n  name: {name}\n");
        if let Some(t) = created {
            s.push_str(&format!("  creationTimestamp: '{t}'\n"));
        }
        s.push_str("spec:\n  selectors: []\n");
        if let Some(e) = extended {
            s.push_str(&format!("  extendedResourceName: {e}\n"));
        }
        s.push_str("---\n");
        s
    }

    /// `extendedresourcecache_test.go`'s mapping cases: (name, classes, resource, class it maps to).
    #[test]
    fn device_class_mapping_table() {
        let t1 = Some("2025-01-01T00:00:00Z");
        let t2 = Some("2025-01-02T00:00:00Z");
        let cases: &[(&str, Vec<String>, &str, Option<&str>)] = &[
            ("explicit name", vec![class("gpu", Some("example.com/gpu"), None)], "example.com/gpu", Some("gpu")),
            ("implicit name", vec![class("gpu", None, None)], "deviceclass.resource.kubernetes.io/gpu", Some("gpu")),
            (
                "implicit name of a class with an explicit one",
                vec![class("gpu", Some("example.com/gpu"), None)],
                "deviceclass.resource.kubernetes.io/gpu",
                Some("gpu"),
            ),
            ("no class maps it", vec![class("gpu", None, None)], "example.com/gpu", None),
            ("no such implicit class", vec![class("gpu", None, None)], "deviceclass.resource.kubernetes.io/x", None),
            (
                "same explicit name, same age: the smaller name",
                vec![class("b", Some("example.com/gpu"), t1), class("a", Some("example.com/gpu"), t1)],
                "example.com/gpu",
                Some("a"),
            ),
            (
                "same explicit name: the newer class",
                vec![class("a", Some("example.com/gpu"), t1), class("b", Some("example.com/gpu"), t2)],
                "example.com/gpu",
                Some("b"),
            ),
            (
                "a class refused for its explicit name has no implicit one",
                vec![class("a", Some("example.com/gpu"), t1), class("b", Some("example.com/gpu"), t1)],
                "deviceclass.resource.kubernetes.io/b",
                None,
            ),
        ];
        for (name, classes, resource, want) in cases {
            let d = dra(&classes.concat());
            let got = device_class_for(&d, resource).map(|c| c.metadata.name.as_str());
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn dra_extended_resource_names() {
        for (name, want) in [
            ("example.com/gpu", true),
            ("deviceclass.resource.kubernetes.io/gpu", true),
            ("cpu", false),
            ("kubernetes.io/gpu", false),
            ("requests.example.com/gpu", false),
            ("hugepages-2Mi", false),
        ] {
            assert_eq!(is_dra_extended_resource_name(name), want, "{name}");
        }
    }

    #[test]
    fn generate_name_is_cut_at_the_apiservers_length() {
        assert_eq!(special_claim_generate_name("p"), "p-extended-resources-");
        let long = "x".repeat(60);
        assert_eq!(special_claim_generate_name(&long).len(), MAX_GENERATED_BASE_LEN);
    }

    mod plugins {
        use super::super::*;
        use crate::api::{parse_objects, Object};
        use crate::framework::{CycleCx, Plugin};
        use crate::plugins::dynamicresources::plugin::DynamicResources;
        use crate::plugins::noderesources::{Fit, ScoredResource, StrategyKind};
        use crate::plugins::testutil::filter_one;
        use crate::snapshot::testing::{MakeNode, MakePod};

        /// Class `gpu` (`example.com/gpu`); node-a has one free device, node-b's only device is
        /// taken by an allocated claim, node-c has two, node-d none.
        const OBJECTS: &str = "kind: DeviceClass\nmetadata: {name: gpu}\nspec: {selectors: [{cel: {expression: 'device.driver == \"gpu.example.com\"'}}], extendedResourceName: example.com/gpu}\n---\nkind: ResourceSlice\nmetadata: {name: slice-a}\nspec: {driver: gpu.example.com, nodeName: node-a, pool: {name: node-a, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}\n---\nkind: ResourceSlice\nmetadata: {name: slice-b}\nspec: {driver: gpu.example.com, nodeName: node-b, pool: {name: node-b, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}\n---\nkind: ResourceSlice\nmetadata: {name: slice-c}\nspec: {driver: gpu.example.com, nodeName: node-c, pool: {name: node-c, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0}, {name: gpu-1}]}\n---\nkind: ResourceClaim\nmetadata: {name: taken, namespace: default}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}\nstatus:\n  allocation:\n    devices: {results: [{request: r, driver: gpu.example.com, pool: node-b, device: gpu-0}]}\n";

        fn snapshot(with_objects: bool) -> Snapshot {
            let mut snap = Snapshot::default();
            for n in ["node-a", "node-b", "node-c", "node-d"] {
                MakeNode::new(&mut snap, n).capacity(4000, 1 << 34).pods(110).add();
            }
            if with_objects {
                for o in parse_objects(OBJECTS, "objects.yaml").expect("valid objects") {
                    match o {
                        Object::DeviceClass(c) => snap.cluster.dra.add_class(&c),
                        Object::ResourceSlice(s) => snap.cluster.dra.add_slice(&s),
                        Object::ResourceClaim(c) => snap.cluster.dra.add_claim(&c),
                        _ => {}
                    }
                }
            }
            snap
        }

        fn fit(snap: &mut Snapshot, resources: &[&str]) -> Fit {
            let resources =
                resources.iter().map(|r| ScoredResource { name: snap.interner.intern(r), weight: 1 }).collect();
            Fit {
                ignored_resources: vec![],
                ignored_resource_groups: vec![],
                strategy: StrategyKind::LeastAllocated,
                resources,
            }
        }

        /// NodeResourcesFit and DynamicResources on each node for a pod requesting `gpu` of
        /// `example.com/gpu` (upstream's `TestPlugin` extended-resource cases and `fit_test.go`'s
        /// `shouldDelegateResourceToDRA` ones): (case, with DRA objects, gpu, node, Fit, DynamicResources).
        #[test]
        fn filter_table() {
            let cannot = Err((Code::UnschedulableAndUnresolvable, vec!["cannot allocate all claims".to_string()]));
            let insufficient =
                Err((Code::UnschedulableAndUnresolvable, vec!["Insufficient example.com/gpu".to_string()]));
            #[allow(clippy::type_complexity)]
            let cases: Vec<(
                &str,
                bool,
                i64,
                &str,
                Result<(), (Code, Vec<String>)>,
                Result<(), (Code, Vec<String>)>,
            )> = vec![
                ("free device", true, 1, "node-a", Ok(()), Ok(())),
                ("device taken", true, 1, "node-b", Ok(()), cannot.clone()),
                ("two devices", true, 2, "node-c", Ok(()), Ok(())),
                ("one device of two wanted", true, 2, "node-a", Ok(()), cannot.clone()),
                ("no devices", true, 1, "node-d", Ok(()), cannot.clone()),
                ("no class: a plain extended resource", false, 1, "node-a", insufficient, Ok(())),
            ];
            for (name, objects, gpu, node, want_fit, want_dra) in cases {
                let mut snap = snapshot(objects);
                let f = fit(&mut snap, &["cpu", "memory"]);
                let pod = MakePod::new(&mut snap, "p").scalar_req("example.com/gpu", gpu).build();
                assert_eq!(filter_one(&f, &snap, &pod, node), want_fit, "{name}: NodeResourcesFit");
                let dra = DynamicResources::default();
                assert_eq!(filter_one(&dra, &snap, &pod, node), want_dra, "{name}: DynamicResources");
            }
        }

        /// Reserve writes the special claim (allocated, reserved for the pod, owned by it), named as
        /// the API server names `<pod>-extended-resources-`; Unreserve after PreBind deletes it.
        #[test]
        fn reserve_writes_the_special_claim() {
            let mut snap = snapshot(true);
            let pod = MakePod::new(&mut snap, "p").scalar_req("example.com/gpu", 1).build();
            let dra = DynamicResources::default();
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let (st, _) = dra.pre_filter(cx, &mut state);
            assert_eq!(st.code, Code::Success);
            let a = snap.nodes.idx_of(snap.interner.get("node-a").unwrap()).unwrap();
            let mut out = [None];
            dra.filter(cx, &state, &[a], &mut out);
            assert_eq!(out[0], None);
            assert_eq!(dra.reserve(cx, &mut state, a).code, Code::Success);
            let name = generated_name("resourceclaims", "default", "p-extended-resources-", 0);
            let key = ("default".to_string(), name.clone());
            let claim = snap.cluster.dra.claims.lock().get(&key).cloned().expect("the special claim is written");
            assert_eq!(claim.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION], "true");
            assert_eq!(claim.metadata.owner_references[0].name, "p");
            assert_eq!(claim.spec.devices.requests[0].name, "container-0-request-0");
            let results = &claim.status.allocation.as_ref().expect("allocated").devices.results;
            assert_eq!((results[0].pool.as_str(), results[0].device.as_str()), ("node-a", "gpu-0"));
            assert_eq!(claim.status.reserved_for[0].name, "p");
            let binding =
                crate::framework::BindingPod { uid: pod.uid, namespace: "default", name: "p", node: "node-a" };
            assert_eq!(dra.pre_bind(&binding).code, Code::Success);
            dra.unreserve(cx, &mut state, a);
            assert!(snap.cluster.dra.claims.lock().get(&key).is_none(), "Unreserve after PreBind deletes it");
        }

        /// A rejection is worded without the cycle's state: the run words a failed cycle's message
        /// after the cycle ("0/2 nodes are available: 2 cannot allocate all claims.").
        #[test]
        fn reasons_outlive_the_cycle_state() {
            let mut snap = snapshot(true);
            let pod = MakePod::new(&mut snap, "p").scalar_req("example.com/gpu", 1).build();
            let dra = DynamicResources::default();
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            assert_eq!(dra.pre_filter(cx, &mut state).0.code, Code::Success);
            let b = snap.nodes.idx_of(snap.interner.get("node-b").unwrap()).unwrap();
            let mut out = [None];
            dra.filter(cx, &state, &[b], &mut out);
            let reject = out[0].expect("node-b's only device is taken");
            assert_eq!(dra.reasons(cx, &CycleState::new(), reject), ["cannot allocate all claims"]);
        }

        /// NodeResourcesFit scores example.com/gpu from the devices of the class on each node
        /// (allocatable) and the allocated ones (requested), LeastAllocated: node-a 1 device, 0
        /// allocated, pod 1 -> 0; node-b 1 of 1 allocated -> 0; node-c 2 devices -> 50; node-d
        /// none -> left out (only cpu and memory count).
        #[test]
        fn fit_scores_dra_backed_resources_from_devices() {
            let mut snap = snapshot(true);
            let f = fit(&mut snap, &["example.com/gpu"]);
            let pod = MakePod::new(&mut snap, "p").scalar_req("example.com/gpu", 1).build();
            let cx = CycleCx { snap: &snap, pod: &pod };
            let mut state = CycleState::new();
            let dra = DynamicResources::default();
            let _ = f.pre_filter(cx, &mut state);
            let _ = dra.pre_filter(cx, &mut state);
            assert_eq!(f.score_memo_key(cx, &state), None, "scores depend on allocations");
            let nodes: Vec<NodeIdx> = (0..4).map(NodeIdx).collect();
            let mut scores = vec![0; 4];
            f.score(cx, &state, &nodes, &mut scores).unwrap();
            assert_eq!(scores, vec![0, 0, 50, 0]);
        }
    }
}
