//! The structured allocator against upstream's own cases (v1.37.2
//! `structured/internal/allocatortesting/allocator_testing.go`) that use only the basic features,
//! with their names and expectations, selectors evaluated by `crate::cel` through [`CelSelectors`].

use std::collections::{BTreeMap, HashSet};

use super::allocator::{
    allocate, allocate_with, DeviceId, DeviceSelectors, DraFeatures, NodeView, Outcome, SelectorError,
};
use super::allocator_capacity::SharedState;
use super::selectors::CelSelectors;
use crate::api::objects::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta};
use crate::api::resource::*;
use crate::api::Quantity;

const DRIVER_A: &str = "driver-a";
const DRIVER_B: &str = "driver-b";
const POOL1: &str = "pool-1";
const POOL2: &str = "pool-2";
const POOL3: &str = "pool-3";
const POOL4: &str = "pool-4";
const NODE1: &str = "node-1";
const NODE2: &str = "node-2";
const CLASS_A: &str = "class-a";
const CLASS_B: &str = "class-b";

/// The real selectors ([`CelSelectors`]), counting evaluations.
#[derive(Default)]
struct CountingCel {
    cel: CelSelectors,
    evaluations: usize,
}

impl DeviceSelectors for CountingCel {
    fn matches(&mut self, expression: &str, driver: &str, device: &Device) -> Result<bool, SelectorError> {
        self.evaluations += 1;
        self.cel.matches(expression, driver, device)
    }
}

/// Where a slice's devices are reachable.
enum Reach {
    Node(&'static str),
    Labels(&'static str, &'static str),
    All,
}

fn slice(name: &str, reach: Reach, pool: &str, driver: &str, devices: Vec<Device>) -> ResourceSlice {
    let mut spec = ResourceSliceSpec {
        driver: driver.into(),
        pool: ResourcePool { name: pool.into(), generation: 1, resource_slice_count: 1 },
        devices,
        ..ResourceSliceSpec::default()
    };
    match reach {
        Reach::Node(n) => spec.node_name = Some(n.into()),
        Reach::Labels(k, v) => spec.node_selector = Some(label_selector(k, v)),
        Reach::All => spec.all_nodes = Some(true),
    }
    ResourceSlice { metadata: ObjectMeta { name: name.into(), ..ObjectMeta::default() }, spec }
}

fn label_selector(key: &str, value: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: key.into(),
                operator: NodeSelectorOperator::In,
                values: vec![value.into()],
            }],
            match_fields: Vec::new(),
        }],
    }
}

fn local_selector(node: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Vec::new(),
            match_fields: vec![NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: NodeSelectorOperator::In,
                values: vec![node.into()],
            }],
        }],
    }
}

fn device(name: &str) -> Device {
    Device { name: name.into(), ..Device::default() }
}

fn with_memory(mut d: Device, memory: &str) -> Device {
    d.capacity
        .insert("memory".into(), DeviceCapacity { value: Quantity::parse(memory).unwrap(), request_policy: None });
    d
}

fn with_attr(mut d: Device, name: &str, value: AttributeValue) -> Device {
    let mut a = DeviceAttribute::default();
    match value {
        AttributeValue::Int(v) => a.int = Some(v),
        AttributeValue::Bool(v) => a.bool = Some(v),
        AttributeValue::String(v) => a.string = Some(v),
        AttributeValue::Version(v) => a.version = Some(v),
    }
    d.attributes.insert(name.into(), a);
    d
}

fn class(name: &str, driver: &str) -> DeviceClass {
    DeviceClass {
        metadata: ObjectMeta { name: name.into(), ..ObjectMeta::default() },
        spec: DeviceClassSpec {
            selectors: vec![DeviceSelector {
                cel: Some(CelDeviceSelector { expression: format!("device.driver == \"{driver}\"") }),
            }],
            ..DeviceClassSpec::default()
        },
    }
}

fn request(name: &str, class: &str, count: i64) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.into(),
            count: Some(count),
            allocation_mode: Some(DeviceAllocationMode::ExactCount),
            ..ExactDeviceRequest::default()
        }),
        first_available: Vec::new(),
    }
}

fn request_all(name: &str, class: &str) -> DeviceRequest {
    let mut r = request(name, class, 0);
    let exact = r.exactly.as_mut().unwrap();
    exact.allocation_mode = Some(DeviceAllocationMode::All);
    exact.count = None;
    r
}

fn with_selector(mut r: DeviceRequest, expression: String) -> DeviceRequest {
    r.exactly.as_mut().unwrap().selectors.push(DeviceSelector { cel: Some(CelDeviceSelector { expression }) });
    r
}

fn memory_at_least(q: &str) -> String {
    format!("device.capacity[\"{DRIVER_A}\"].memory.compareTo(quantity(\"{q}\")) >= 0")
}

fn claim(name: &str, requests: Vec<DeviceRequest>, constraints: Vec<DeviceConstraint>) -> ResourceClaim {
    ResourceClaim {
        metadata: ObjectMeta { name: name.into(), ..ObjectMeta::default() },
        spec: ResourceClaimSpec { devices: DeviceClaim { requests, constraints, config: Vec::new() } },
        status: ResourceClaimStatus::default(),
    }
}

fn match_attribute(attribute: &str, requests: &[&str]) -> DeviceConstraint {
    DeviceConstraint {
        requests: requests.iter().map(|r| r.to_string()).collect(),
        match_attribute: Some(format!("{DRIVER_A}/{attribute}")),
        distinct_attribute: None,
    }
}

/// (request, driver, pool, device, adminAccess) of one allocated device.
type DeviceWant = (&'static str, &'static str, &'static str, &'static str, bool);

/// One claim's expected node selector and devices.
type ClaimWant = (Option<NodeSelector>, Vec<DeviceWant>);

/// One upstream case.
struct Case {
    name: &'static str,
    claims: Vec<ResourceClaim>,
    classes: Vec<DeviceClass>,
    slices: Vec<ResourceSlice>,
    node: (&'static str, &'static str),
    allocated: Vec<(&'static str, &'static str, &'static str)>,
    /// Per claim: the node selector and (request, driver, pool, device, adminAccess) in order;
    /// `None`: no solution on the node.
    want: Result<Option<Vec<ClaimWant>>, &'static str>,
    /// The allocator features beyond v1.37's defaults.
    features: DraFeatures,
}

fn case(name: &'static str) -> Case {
    Case {
        name,
        claims: Vec::new(),
        classes: vec![class(CLASS_A, DRIVER_A)],
        slices: Vec::new(),
        node: (NODE1, "region-1"),
        allocated: Vec::new(),
        want: Ok(None),
        features: DraFeatures::default(),
    }
}

fn run(c: &Case) -> Result<Outcome, String> {
    let labels: BTreeMap<String, String> = [("region".to_string(), c.node.1.to_string())].into();
    let matches = |s: &NodeSelector| {
        s.node_selector_terms.iter().any(|t| {
            t.match_expressions.iter().all(|r| match r.operator {
                NodeSelectorOperator::In => labels.get(&r.key).is_some_and(|v| r.values.contains(v)),
                _ => false,
            })
        })
    };
    let node = NodeView { name: c.node.0, selector_matches: &matches };
    let claims: Vec<&ResourceClaim> = c.claims.iter().collect();
    let slices: Vec<&ResourceSlice> = c.slices.iter().collect();
    let classes: BTreeMap<String, DeviceClass> =
        c.classes.iter().map(|k| (k.metadata.name.clone(), k.clone())).collect();
    let allocated: HashSet<DeviceId> = c.allocated.iter().map(|(d, p, n)| DeviceId::new(d, p, n)).collect();
    let shared = SharedState::default();
    allocate_with(&claims, &node, &slices, &classes, &allocated, &shared, c.features, &mut CountingCel::default())
}

#[test]
fn upstream_allocator_cases() {
    let one = |r: &'static str, d: &'static str, p: &'static str, n: &'static str| (r, d, p, n, false);
    let local1 = Some(local_selector(NODE1));
    let cases = vec![
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-1")])])),
            ..case("simple")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_B, vec![device("device-1")]),
                slice("slice-2", Reach::Node(NODE2), POOL2, DRIVER_A, vec![device("device-1")]),
            ],
            node: (NODE2, "region-2"),
            want: Ok(Some(vec![(Some(local_selector(NODE2)), vec![one("req-0", DRIVER_A, POOL2, "device-1")])])),
            ..case("other-node")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![
                    with_selector(request("req-0", CLASS_A, 1), memory_at_least("1Gi")),
                    with_selector(request("req-1", CLASS_A, 1), memory_at_least("2Gi")),
                ],
                vec![],
            )],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![with_memory(device("device-1"), "1Gi"), with_memory(device("device-2"), "2Gi")],
            )],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-1", DRIVER_A, POOL1, "device-2")],
            )])),
            ..case("small-and-large")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![
                    with_selector(request("req-0", CLASS_A, 1), memory_at_least("1Gi")),
                    with_selector(request("req-1", CLASS_A, 1), memory_at_least("2Gi")),
                ],
                vec![],
            )],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![with_memory(device("device-2"), "2Gi"), with_memory(device("device-1"), "1Gi")],
            )],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-1", DRIVER_A, POOL1, "device-2")],
            )])),
            ..case("small-and-large-backtrack-requests")
        },
        Case {
            claims: vec![
                claim("claim-0", vec![with_selector(request("req-0", CLASS_A, 1), memory_at_least("1Gi"))], vec![]),
                claim("claim-1", vec![with_selector(request("req-1", CLASS_A, 1), memory_at_least("2Gi"))], vec![]),
            ],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![with_memory(device("device-2"), "2Gi"), with_memory(device("device-1"), "1Gi")],
            )],
            want: Ok(Some(vec![
                (local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-1")]),
                (local1.clone(), vec![one("req-1", DRIVER_A, POOL1, "device-2")]),
            ])),
            ..case("small-and-large-backtrack-claims")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 2)], vec![])],
            slices: vec![
                slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")]),
                slice("slice-2", Reach::Node(NODE1), POOL2, DRIVER_A, vec![device("device-1")]),
            ],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-0", DRIVER_A, POOL2, "device-1")],
            )])),
            ..case("devices-split-across-different-slices")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: {
                let mut a = slice("slice-1-obsolete", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")]);
                a.spec.pool.resource_slice_count = 2;
                let mut b = a.clone();
                b.spec.devices = vec![device("device-2")];
                b.spec.pool.generation += 1;
                vec![a, b]
            },
            want: Ok(None),
            ..case("obsolete-slice")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: {
                let mut a = slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")]);
                a.spec.pool.resource_slice_count = 2;
                let mut b = a.clone();
                b.metadata.name.push_str("-2");
                vec![a, b]
            },
            want: Err("invalid resource pools were encountered"),
            ..case("duplicate-slice")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            want: Ok(None),
            ..case("no-slices")
        },
        Case {
            claims: vec![
                claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![]),
                claim("claim-0", vec![request("req-1", CLASS_A, 1)], vec![]),
            ],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(None),
            ..case("not-enough-suitable-devices")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            classes: vec![],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Err("could not retrieve device class class-a"),
            ..case("no-classes")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", "unknown-class", 1)], vec![])],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Err("could not retrieve device class unknown-class"),
            ..case("unknown-class")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", "", 1)], vec![])],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Err("claim claim-0, request req-0: missing device class name (unsupported request type?)"),
            ..case("empty-class")
        },
        Case {
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(Some(vec![])),
            ..case("no-claims-to-allocate")
        },
        Case {
            claims: vec![claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![])],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-1")])])),
            ..case("all-devices-single")
        },
        Case {
            claims: vec![claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![])],
            slices: vec![
                slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")]),
                slice("slice-1", Reach::Node(NODE1), POOL2, DRIVER_A, vec![device("device-1")]),
            ],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-0", DRIVER_A, POOL2, "device-1")],
            )])),
            ..case("all-devices-many")
        },
        Case {
            claims: vec![claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![])],
            slices: {
                let mut s = slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")]);
                s.spec.pool.resource_slice_count += 1;
                vec![s]
            },
            want: Err(
                "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated",
            ),
            ..case("all-devices-of-the-incomplete-pool")
        },
        Case {
            claims: vec![
                claim("claim-1", vec![request("req-0", CLASS_A, 1)], vec![]),
                claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![]),
            ],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(None),
            ..case("all-devices-no-solution")
        },
        Case {
            claims: vec![
                claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![]),
                claim("claim-1", vec![request("req-0", CLASS_A, 1)], vec![]),
            ],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(None),
            ..case("all-devices-no-solution-reversed")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![slice("slice-1", Reach::Labels("region", "region-1"), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(Some(vec![(
                Some(label_selector("region", "region-1")),
                vec![one("req-0", DRIVER_A, POOL1, "device-1")],
            )])),
            ..case("network-attached-device")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![slice("slice-1", Reach::Labels("region", "region-1"), POOL1, DRIVER_A, vec![device("device-1")])],
            node: (NODE2, "region-2"),
            want: Ok(None),
            ..case("unsuccessful-allocation-network-attached-device")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 4)], vec![])],
            slices: vec![
                slice("slice-1", Reach::Labels("region", "region-1"), POOL1, DRIVER_A, vec![device("device-1")]),
                slice("slice-1", Reach::All, POOL2, DRIVER_A, vec![device("device-1")]),
                // The planet label is not the node's: only region is. Upstream's node has both;
                // here the pool reaches the node by all-nodes instead, keeping four devices.
                slice("slice-1", Reach::All, POOL3, DRIVER_A, vec![device("device-1")]),
                slice("slice-1", Reach::Node(NODE1), POOL4, DRIVER_A, vec![device("device-1")]),
            ],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![
                    one("req-0", DRIVER_A, POOL1, "device-1"),
                    one("req-0", DRIVER_A, POOL2, "device-1"),
                    one("req-0", DRIVER_A, POOL3, "device-1"),
                    one("req-0", DRIVER_A, POOL4, "device-1"),
                ],
            )])),
            ..case("many-network-attached-devices (node-local last)")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 2)], vec![])],
            slices: vec![
                slice("slice-1", Reach::Labels("region", "region-1"), POOL1, DRIVER_A, vec![device("device-1")]),
                slice("slice-1", Reach::Node(NODE1), POOL2, DRIVER_A, vec![device("device-1")]),
            ],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-0", DRIVER_A, POOL2, "device-1")],
            )])),
            ..case("local-and-network-attached-devices")
        },
        Case {
            claims: vec![
                claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![]),
                claim("claim-0", vec![request("req-0", CLASS_B, 1)], vec![]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1"), device("device-2")]),
                slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_B, vec![device("device-1")]),
            ],
            want: Ok(Some(vec![
                (local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-1")]),
                (local1.clone(), vec![one("req-0", DRIVER_B, POOL1, "device-1")]),
            ])),
            ..case("several-different-drivers")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            allocated: vec![(DRIVER_A, POOL1, "device-1"), (DRIVER_A, POOL1, "device-2")],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(None),
            ..case("already-allocated-devices")
        },
        Case {
            claims: vec![{
                let mut c = claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![]);
                c.spec.devices.requests[0].exactly.as_mut().unwrap().admin_access = Some(true);
                c
            }],
            allocated: vec![(DRIVER_A, POOL1, "device-1"), (DRIVER_A, POOL1, "device-2")],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(Some(vec![(local1.clone(), vec![("req-0", DRIVER_A, POOL1, "device-1", true)])])),
            ..case("admin-access-enabled")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![request("req-0", CLASS_A, 1), request("req-1", CLASS_A, 1)],
                vec![
                    match_attribute("numa", &[]),
                    match_attribute("driverVersion", &[]),
                    match_attribute("stringAttribute", &[]),
                    match_attribute("boolAttribute", &[]),
                ],
            )],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, {
                let d = |name| {
                    let d = with_attr(device(name), "driverVersion", AttributeValue::Version("1.0.0".into()));
                    let d = with_attr(d, "numa", AttributeValue::Int(1));
                    let d = with_attr(d, "stringAttribute", AttributeValue::String("stringAttributeValue".into()));
                    with_attr(d, "boolAttribute", AttributeValue::Bool(true))
                };
                vec![d("device-1"), d("device-2")]
            })],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-1", DRIVER_A, POOL1, "device-2")],
            )])),
            ..case("with-constraint")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![match_attribute("nonExistingAttribute", &[])])],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Ok(None),
            ..case("with-constraint-non-existent-attribute")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 2)], vec![match_attribute("numa", &[])])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![
                    with_attr(device("device-1"), "numa", AttributeValue::Int(1)),
                    with_attr(device("device-2"), "numa", AttributeValue::Int(2)),
                ],
            )],
            want: Ok(None),
            ..case("with-constraint-not-matching-int-attribute")
        },
        Case {
            claims: vec![claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![match_attribute("numa", &[])])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![
                    with_attr(device("device-1"), "numa", AttributeValue::Int(1)),
                    with_attr(device("device-2"), "numa", AttributeValue::Int(2)),
                ],
            )],
            want: Err("claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied"),
            ..case("with-constraint-not-matching-int-attribute-all-devices")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![request("req-0", CLASS_A, 1), request("req-1", CLASS_A, 1)],
                vec![match_attribute("driverVersion", &["req-0"])],
            )],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![
                    with_attr(device("device-1"), "driverVersion", AttributeValue::Version("1.0.0".into())),
                    with_attr(device("device-2"), "driverVersion", AttributeValue::Version("2.0.0".into())),
                ],
            )],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-1", DRIVER_A, POOL1, "device-2")],
            )])),
            ..case("with-constraint-for-request")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![request("req-0", CLASS_A, 1), request("req-1", CLASS_A, 1)],
                vec![match_attribute("driverVersion", &["req-0"]), match_attribute("stringAttribute", &[])],
            )],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, {
                let d = |name, version: &str, s: &str| {
                    let d = with_attr(device(name), "driverVersion", AttributeValue::Version(version.into()));
                    with_attr(d, "stringAttribute", AttributeValue::String(s.into()))
                };
                vec![d("device-1", "1.0.0", "a"), d("device-2", "2.0.0", "b"), d("device-3", "3.0.0", "b")]
            })],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-2"), one("req-1", DRIVER_A, POOL1, "device-3")],
            )])),
            ..case("with-constraint-for-request-retry")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 500)], vec![])],
            want: Err("exceeds the claim limit"),
            ..case("too-many-devices-single-request")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 32)], vec![])],
            want: Ok(None),
            ..case("many-devices-okay")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 32), request("req-1", CLASS_A, 1)], vec![])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                (0..33).map(|i| device(&format!("device-{i}"))).collect(),
            )],
            want: Err("exceeds the claim limit"),
            ..case("too-many-devices-total")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![with_selector(request("req-0", CLASS_A, 1), "noSuchVar".into())],
                vec![],
            )],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![device("device-1")])],
            want: Err("undeclared reference"),
            ..case("invalid-CEL-one-device")
        },
    ];
    for c in &cases {
        let got = run(c);
        match (&c.want, got) {
            (Err(want), Err(got)) => assert!(got.contains(want), "{}: error {got:?}, want {want:?}", c.name),
            (Ok(None), Ok(Outcome::Unfit)) => {}
            (Ok(Some(want)), Ok(Outcome::Allocated(got))) => {
                let got: Vec<_> = got
                    .iter()
                    .map(|a| {
                        let devices: Vec<_> = a
                            .devices
                            .results
                            .iter()
                            .map(|r| {
                                (
                                    r.request.clone(),
                                    r.driver.clone(),
                                    r.pool.clone(),
                                    r.device.clone(),
                                    r.admin_access.unwrap_or(false),
                                )
                            })
                            .collect();
                        (a.node_selector.clone(), devices)
                    })
                    .collect();
                let want: Vec<_> = want
                    .iter()
                    .map(|(s, d)| {
                        let d: Vec<_> = d
                            .iter()
                            .map(|(r, dr, p, n, a)| (r.to_string(), dr.to_string(), p.to_string(), n.to_string(), *a))
                            .collect();
                        (s.clone(), d)
                    })
                    .collect();
                assert_eq!(got, want, "{}", c.name);
            }
            (want, got) => panic!("{}: got {got:?}, want {want:?}", c.name),
        }
    }
}

/// Network-attached pools: the allocation's node selector is the union of the slices' one-term
/// selectors (upstream's `many-network-attached-devices`, less the node-local pool).
#[test]
fn network_attached_selectors_are_merged() {
    let c = Case {
        claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 2)], vec![])],
        slices: vec![
            slice("slice-1", Reach::Labels("region", "region-1"), POOL1, DRIVER_A, vec![device("device-1")]),
            slice("slice-1", Reach::All, POOL2, DRIVER_A, vec![device("device-1")]),
        ],
        ..case("merged")
    };
    let Ok(Outcome::Allocated(got)) = run(&c) else { panic!() };
    assert_eq!(got[0].node_selector, Some(label_selector("region", "region-1")));
    let c = Case {
        claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
        slices: vec![slice("slice-1", Reach::All, POOL2, DRIVER_A, vec![device("device-1")])],
        ..case("everywhere")
    };
    let Ok(Outcome::Allocated(got)) = run(&c) else { panic!() };
    assert_eq!(got[0].node_selector, None, "all nodes: no selector");
}

/// Each (request, device) pair is evaluated once, however often the search revisits it.
#[test]
fn selector_results_are_cached_per_request_and_device() {
    let c = Case {
        claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 3)], vec![match_attribute("pciRoot", &[])])],
        slices: vec![slice(
            "slice-1",
            Reach::Node(NODE1),
            POOL1,
            DRIVER_A,
            (0..6)
                .map(|i| {
                    with_attr(device(&format!("device-{i}")), "pciRoot", AttributeValue::String(format!("{}", i % 4)))
                })
                .collect(),
        )],
        ..case("cache")
    };
    let labels: BTreeMap<String, String> = BTreeMap::new();
    let matches = |_: &NodeSelector| labels.is_empty();
    let node = NodeView { name: NODE1, selector_matches: &matches };
    let mut cel = CountingCel::default();
    let slices: Vec<&ResourceSlice> = c.slices.iter().collect();
    let classes: BTreeMap<String, DeviceClass> =
        c.classes.iter().map(|k| (k.metadata.name.clone(), k.clone())).collect();
    let got = allocate(&[&c.claims[0]], &node, &slices, &classes, &HashSet::new(), &mut cel).unwrap();
    // Only devices 0 and 4 share a root, so no three match: an exhaustive search, each device's
    // class selector evaluated once.
    assert_eq!(got, Outcome::Unfit);
    assert_eq!(cel.evaluations, 6);
}

/// A device consuming `amount` of counter `counter` of set `set`.
fn consumes(mut d: Device, set: &str, counter: &str, amount: &str) -> Device {
    use crate::api::resource_counters::{Counter, DeviceCounterConsumption};
    let counters = [(counter.to_string(), Counter { value: Quantity::parse(amount).unwrap() })].into();
    d.consumes_counters.push(DeviceCounterConsumption {
        counter_set: set.into(),
        counters,
        compatibility_groups: vec![],
    });
    d
}

/// `consumes` declaring compatibility `groups` for that counter set.
fn consumes_in(d: Device, set: &str, amount: &str, groups: &[&str]) -> Device {
    let mut d = consumes(d, set, "memory", amount);
    d.consumes_counters.last_mut().unwrap().compatibility_groups = groups.iter().map(|g| g.to_string()).collect();
    d
}

/// A counter slice of `pool` (of `count` slices) with each of `sets` holding `memory: 4`.
fn counter_sets_slice(name: &str, pool: &str, count: i64, sets: &[&str]) -> ResourceSlice {
    use crate::api::resource_counters::{Counter, CounterSet};
    let mut s = slice(name, Reach::Node(NODE1), pool, DRIVER_A, Vec::new());
    s.spec.pool.resource_slice_count = count;
    for set in sets {
        let counters = [("memory".to_string(), Counter { value: Quantity::parse("4").unwrap() })].into();
        s.spec.shared_counters.push(CounterSet { name: set.to_string(), counters });
    }
    s
}

/// Upstream's `compatibility-groups-*` cases (v1.37.2 `allocatortesting/allocator_testing.go`,
/// run there on the experimental allocator) and ours (narrowing across devices of one counter
/// set, backtracking restoring the intersection), as (name, features on, claims, slices,
/// allocated devices, want: per claim (request, pool, device), `None`: unfit).
#[test]
fn compatibility_group_cases() {
    type Want = Option<Vec<Vec<(&'static str, &'static str, &'static str)>>>;
    let on = DraFeatures { compatibility_groups: true, ..DraFeatures::default() };
    let off = DraFeatures::default();
    let (s1, s2) = ("counter-set-1", "counter-set-2");
    let two_requests =
        || vec![claim("claim-0", vec![request("req-0", CLASS_A, 1), request("req-1", CLASS_A, 1)], vec![])];
    let one_request = || vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])];
    let dev = |name: &str, set: &str, groups: &[&str]| consumes_in(device(name), set, "1", groups);
    let devices = |devs: Vec<Device>| device_slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, devs);
    let sets = |names: &[&str]| counter_sets_slice("slice-2", POOL1, 2, names);
    /// (name, features, claims, slices, allocated devices of pool-1, want).
    type GroupCase = (&'static str, DraFeatures, Vec<ResourceClaim>, Vec<ResourceSlice>, Vec<&'static str>, Want);
    let cases: Vec<GroupCase> = vec![
        (
            "compatibility-groups-compatible",
            on,
            two_requests(),
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["mig"])]), sets(&[s1])],
            vec![],
            Some(vec![vec![("req-0", POOL1, "device-1"), ("req-1", POOL1, "device-2")]]),
        ),
        (
            "compatibility-groups-incompatible",
            on,
            two_requests(),
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["vgpu"])]), sets(&[s1])],
            vec![],
            None,
        ),
        (
            // Without the feature the pool is ignored (its slice declares groups).
            "compatibility-groups-incompatible-feature-off",
            off,
            two_requests(),
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["vgpu"])]), sets(&[s1])],
            vec![],
            None,
        ),
        (
            "compatibility-groups-taint-rollback",
            on,
            one_request(),
            vec![
                devices(vec![tainted(dev("device-1", s1, &["mig"]), "NoSchedule"), dev("device-2", s1, &["vgpu"])]),
                sets(&[s1]),
            ],
            vec![],
            Some(vec![vec![("req-0", POOL1, "device-2")]]),
        ),
        (
            "compatibility-groups-incompatible-with-allocated-peer",
            on,
            one_request(),
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["vgpu"])]), sets(&[s1])],
            vec!["device-1"],
            None,
        ),
        (
            "compatibility-groups-compatible-with-allocated-peer",
            on,
            one_request(),
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["mig"])]), sets(&[s1])],
            vec!["device-1"],
            Some(vec![vec![("req-0", POOL1, "device-2")]]),
        ),
        (
            "compatibility-groups-disabled-skips-grouped-pool",
            off,
            one_request(),
            vec![
                devices(vec![consumes_in(device("device-1"), s1, "2", &["mig"])]),
                sets(&[s1]),
                device_slice("slice-3", Reach::Node(NODE1), POOL2, DRIVER_A, vec![dev("device-2", s2, &[])]),
                counter_sets_slice("slice-4", POOL2, 2, &[s2]),
            ],
            vec![],
            Some(vec![vec![("req-0", POOL2, "device-2")]]),
        ),
        (
            "compatibility-groups-disabled-skips-ungrouped-device-in-grouped-pool",
            off,
            one_request(),
            vec![
                {
                    let mut s = devices(vec![dev("device-1", s1, &["mig"])]);
                    s.spec.pool.resource_slice_count = 3;
                    s
                },
                {
                    let mut s =
                        device_slice("slice-1b", Reach::Node(NODE1), POOL1, DRIVER_A, vec![dev("device-2", s1, &[])]);
                    s.spec.pool.resource_slice_count = 3;
                    s
                },
                counter_sets_slice("slice-2", POOL1, 3, &[s1]),
            ],
            vec![],
            None,
        ),
        (
            "compatibility-groups-multiple-counter-sets",
            on,
            two_requests(),
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s2, &["vgpu"])]), sets(&[s1, s2])],
            vec![],
            Some(vec![vec![("req-0", POOL1, "device-1"), ("req-1", POOL1, "device-2")]]),
        ),
        (
            "compatibility-groups-multiple-counter-sets-spanning-device",
            on,
            two_requests(),
            vec![
                devices(vec![
                    dev("device-1", s1, &["mig"]),
                    consumes_in(dev("device-2", s1, &["vgpu"]), s2, "1", &["vgpu"]),
                ]),
                sets(&[s1, s2]),
            ],
            vec![],
            None,
        ),
        (
            "compatibility-groups-multiple-claims",
            on,
            vec![
                claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![]),
                claim("claim-1", vec![request("req-0", CLASS_A, 1)], vec![]),
            ],
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["mig"])]), sets(&[s1])],
            vec![],
            Some(vec![vec![("req-0", POOL1, "device-1")], vec![("req-0", POOL1, "device-2")]]),
        ),
        (
            "compatibility-groups-multiple-claims-incompatible",
            on,
            vec![
                claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![]),
                claim("claim-1", vec![request("req-0", CLASS_A, 1)], vec![]),
            ],
            vec![devices(vec![dev("device-1", s1, &["mig"]), dev("device-2", s1, &["vgpu"])]), sets(&[s1])],
            vec![],
            None,
        ),
        (
            // {a,b} then {b,c} narrow the set to {b}: {a} no longer fits, {b} does.
            "intersection-narrows-across-devices",
            on,
            vec![claim("claim-0", vec![request("req-0", CLASS_A, 3)], vec![])],
            vec![
                devices(vec![
                    dev("device-1", s1, &["a", "b"]),
                    dev("device-2", s1, &["b", "c"]),
                    dev("device-3", s1, &["a"]),
                    dev("device-4", s1, &["b"]),
                ]),
                sets(&[s1]),
            ],
            vec![],
            Some(vec![vec![("req-0", POOL1, "device-1"), ("req-0", POOL1, "device-2"), ("req-0", POOL1, "device-4")]]),
        ),
        (
            // req-0 takes device-1 ({x}); req-1 finds only {y} devices and fails; undoing device-1
            // must restore the empty set, or req-0's next try, device-2 ({y}), would be refused.
            "backtracking-restores-the-intersection",
            on,
            vec![claim(
                "claim-0",
                vec![request("req-0", CLASS_A, 1), request("req-1", CLASS_A, 1)],
                vec![match_attribute("kind", &["req-0", "req-1"])],
            )],
            vec![
                devices(vec![
                    with_attr(dev("device-1", s1, &["x"]), "kind", AttributeValue::String("a".into())),
                    with_attr(dev("device-2", s1, &["y"]), "kind", AttributeValue::String("b".into())),
                    with_attr(dev("device-3", s1, &["y"]), "kind", AttributeValue::String("b".into())),
                ]),
                sets(&[s1]),
            ],
            vec![],
            Some(vec![vec![("req-0", POOL1, "device-2"), ("req-1", POOL1, "device-3")]]),
        ),
    ];
    for (name, features, claims, slices, allocated, want) in cases {
        let c = Case {
            claims,
            slices,
            allocated: allocated.into_iter().map(|d| (DRIVER_A, POOL1, d)).collect(),
            features,
            ..case(name)
        };
        let got = match run(&c) {
            Ok(Outcome::Unfit) => None,
            Ok(Outcome::Allocated(a)) => Some(
                a.iter()
                    .map(|a| {
                        a.devices
                            .results
                            .iter()
                            .map(|r| (r.request.clone(), r.pool.clone(), r.device.clone()))
                            .collect()
                    })
                    .collect::<Vec<Vec<_>>>(),
            ),
            Err(e) => panic!("{name}: {e}"),
        };
        let want = want.map(|w| {
            w.into_iter()
                .map(|c| c.into_iter().map(|(r, p, d)| (r.to_string(), p.to_string(), d.to_string())).collect())
                .collect::<Vec<Vec<_>>>()
        });
        assert_eq!(got, want, "{name}");
    }
}

/// A slice of pool `pool` (two slices) holding the counter set `set` with `counter: amount`.
fn counter_slice(
    name: &str,
    reach: Reach,
    pool: &str,
    driver: &str,
    set: &str,
    counter: &str,
    amount: &str,
) -> ResourceSlice {
    use crate::api::resource_counters::{Counter, CounterSet};
    let mut s = slice(name, reach, pool, driver, Vec::new());
    s.spec.pool.resource_slice_count = 2;
    let counters = [(counter.to_string(), Counter { value: Quantity::parse(amount).unwrap() })].into();
    s.spec.shared_counters.push(CounterSet { name: set.into(), counters });
    s
}

/// A device slice of a two-slice pool (the other holds the counter sets).
fn device_slice(name: &str, reach: Reach, pool: &str, driver: &str, devices: Vec<Device>) -> ResourceSlice {
    let mut s = slice(name, reach, pool, driver, devices);
    s.spec.pool.resource_slice_count = 2;
    s
}

/// A slice whose devices name their nodes (`perDeviceNodeSelection`).
fn per_device_slice(name: &str, pool: &str, driver: &str, devices: Vec<Device>) -> ResourceSlice {
    let mut s = device_slice(name, Reach::All, pool, driver, devices);
    s.spec.all_nodes = None;
    s.spec.per_device_node_selection = Some(true);
    s
}

fn on_node(mut d: Device, node: &str) -> Device {
    d.node_name = Some(node.into());
    d
}

fn tainted(mut d: Device, effect: &str) -> Device {
    use crate::api::resource_counters::DeviceTaint;
    d.taints.push(DeviceTaint {
        key: "example.com/taint".into(),
        value: "tainted".into(),
        effect: effect.into(),
        time_added: None,
    });
    d
}

fn tolerating(mut r: DeviceRequest, effect: &str) -> DeviceRequest {
    use crate::api::resource_counters::DeviceToleration;
    r.exactly.as_mut().unwrap().tolerations.push(DeviceToleration {
        key: "example.com/taint".into(),
        operator: "Exists".into(),
        effect: effect.into(),
        ..DeviceToleration::default()
    });
    r
}

/// Upstream's cases of partitionable devices (`partitionable-devices-*`) and device taints
/// (`tainted-*`) that use no other feature beyond the basic ones.
#[test]
fn upstream_partitionable_and_taint_cases() {
    let one = |r: &'static str, d: &'static str, p: &'static str, n: &'static str| (r, d, p, n, false);
    let local1 = Some(local_selector(NODE1));
    let set = "counter-set-1";
    let mem = |name: &str, amount: &str| consumes(device(name), set, "memory", amount);
    let cases = vec![
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                device_slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![mem("device-1", "4Gi")]),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "memory", "8Gi"),
            ],
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-1")])])),
            ..case("partitionable-devices-single-device")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1), request("req-1", CLASS_A, 1)], vec![])],
            slices: vec![
                device_slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![mem("device-1", "4Gi"), mem("device-2", "6Gi"), mem("device-3", "4Gi")],
                ),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "memory", "8Gi"),
            ],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-1"), one("req-1", DRIVER_A, POOL1, "device-3")],
            )])),
            ..case("partitionable-devices-multiple-devices")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                device_slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![mem("device-1", "4Gi"), mem("device-2", "16Gi")],
                ),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "memory", "18Gi"),
            ],
            allocated: vec![(DRIVER_A, POOL1, "device-2")],
            want: Ok(None),
            ..case("partitionable-devices-no-capacity-available")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                device_slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![mem("device-1", "4Gi"), mem("device-2", "20Gi")],
                ),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "memory", "18Gi"),
            ],
            allocated: vec![(DRIVER_A, POOL1, "device-2")],
            want: Ok(None),
            ..case("partitionable-devices-overallocated-capacity-pool")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                device_slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![
                        tainted(consumes(device("device-1"), set, "c", "1"), "NoSchedule"),
                        consumes(device("device-2"), set, "c", "1"),
                    ],
                ),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "c", "1"),
            ],
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-2")])])),
            ..case("partitionable-devices-taint-releases-counter")
        },
        Case {
            claims: vec![claim(
                "claim-0",
                vec![request("req-0", CLASS_A, 2)],
                vec![match_attribute("stringAttribute", &[])],
            )],
            slices: vec![
                device_slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    ["red", "blue", "blue"]
                        .iter()
                        .enumerate()
                        .map(|(i, colour)| {
                            let d = with_attr(
                                device(&format!("device-{}", i + 1)),
                                "stringAttribute",
                                AttributeValue::String(colour.to_string()),
                            );
                            consumes(d, set, "c", "1")
                        })
                        .collect(),
                ),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "c", "2"),
            ],
            want: Ok(Some(vec![(
                local1.clone(),
                vec![one("req-0", DRIVER_A, POOL1, "device-2"), one("req-0", DRIVER_A, POOL1, "device-3")],
            )])),
            ..case("partitionable-devices-constraint-releases-counter")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                per_device_slice(
                    "slice-1",
                    POOL1,
                    DRIVER_A,
                    vec![on_node(mem("device-1", "6Gi"), NODE2), on_node(mem("device-2", "4Gi"), NODE1)],
                ),
                {
                    let mut s = counter_slice("slice-2", Reach::All, POOL1, DRIVER_A, set, "memory", "18Gi");
                    s.spec.all_nodes = None;
                    s.spec.per_device_node_selection = Some(true);
                    s
                },
            ],
            // The device on node-2 is not offered; the allocation is pinned to node-1.
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-2")])])),
            ..case("partitionable-devices-per-device-node-selection-nodename")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                per_device_slice("slice-1", POOL1, DRIVER_A, {
                    let mut d = mem("device-1", "4Gi");
                    d.node_selector = Some(label_selector("region", "region-1"));
                    vec![d]
                }),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "memory", "18Gi"),
            ],
            want: Ok(Some(vec![(
                Some(label_selector("region", "region-1")),
                vec![one("req-0", DRIVER_A, POOL1, "device-1")],
            )])),
            ..case("partitionable-devices-per-device-node-selection-node-selector")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![
                device_slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![consumes(device("device-1"), "missing", "c", "1")],
                ),
                counter_slice("slice-2", Reach::Node(NODE1), POOL1, DRIVER_A, set, "c", "1"),
            ],
            // A device consuming from a counter set the pool lacks makes the pool invalid.
            want: Err("invalid resource pools were encountered"),
            ..case("partitionable-devices-invalid-counter-set")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![tainted(device("device-1"), "NoSchedule"), tainted(device("device-2"), "NoExecute")],
            )],
            want: Ok(None),
            ..case("tainted-two-devices")
        },
        Case {
            claims: vec![claim("claim-0", vec![tolerating(request("req-0", CLASS_A, 1), "NoExecute")], vec![])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![tainted(device("device-1"), "NoSchedule"), tainted(device("device-2"), "NoExecute")],
            )],
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-2")])])),
            ..case("tainted-two-devices-tolerated")
        },
        Case {
            claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![tainted(device("device-1"), "None")],
            )],
            want: Ok(Some(vec![(local1.clone(), vec![one("req-0", DRIVER_A, POOL1, "device-1")])])),
            ..case("tainted-no-effect")
        },
        Case {
            claims: vec![claim("claim-0", vec![request_all("req-0", CLASS_A)], vec![])],
            slices: vec![slice(
                "slice-1",
                Reach::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![tainted(device("device-1"), "NoSchedule")],
            )],
            want: Ok(None),
            ..case("tainted-all-devices-single")
        },
    ];
    for c in cases {
        match (c.want.clone(), run(&c)) {
            (Err(want), Err(got)) => assert!(got.contains(want), "{}: {got}", c.name),
            (Ok(None), Ok(Outcome::Unfit)) => {}
            (Ok(Some(want)), Ok(Outcome::Allocated(got))) => {
                let got: Vec<ClaimWant> = got
                    .iter()
                    .map(|a| {
                        let devices = a
                            .devices
                            .results
                            .iter()
                            .map(|r| {
                                let find = |s: &str| -> &'static str {
                                    [
                                        DRIVER_A, DRIVER_B, POOL1, POOL2, "req-0", "req-1", "device-1", "device-2",
                                        "device-3",
                                    ]
                                    .into_iter()
                                    .find(|k| *k == s)
                                    .unwrap_or("?")
                                };
                                (
                                    find(&r.request),
                                    find(&r.driver),
                                    find(&r.pool),
                                    find(&r.device),
                                    r.admin_access.unwrap_or(false),
                                )
                            })
                            .collect();
                        (a.node_selector.clone(), devices)
                    })
                    .collect();
                assert_eq!(got, want, "{}", c.name);
            }
            (want, got) => panic!("{}: got {got:?}, want {want:?}", c.name),
        }
    }
}

/// The allocation result carries the request's tolerations (upstream copies them).
#[test]
fn allocation_results_carry_tolerations() {
    let c = Case {
        claims: vec![claim("claim-0", vec![tolerating(request("req-0", CLASS_A, 1), "NoSchedule")], vec![])],
        slices: vec![slice(
            "slice-1",
            Reach::Node(NODE1),
            POOL1,
            DRIVER_A,
            vec![tainted(device("device-1"), "NoSchedule")],
        )],
        ..case("tolerations-copied")
    };
    let Ok(Outcome::Allocated(got)) = run(&c) else { panic!() };
    let want = &c.claims[0].spec.devices.requests[0].exactly.as_ref().unwrap().tolerations;
    assert_eq!(&got[0].devices.results[0].tolerations, want);
}

#[path = "allocator_features_tests.rs"]
mod features;

/// An attribute's value: a scalar string or (DRAListTypeAttributes) a list.
enum Attr {
    S(&'static str),
    Strings(&'static [&'static str]),
    Ints(&'static [i64]),
    Bools(&'static [bool]),
    Versions(&'static [&'static str]),
    /// Present with no value (validation refuses it; the allocator must still answer).
    Empty,
}

fn with_list_attr(mut d: Device, name: &str, value: &Attr) -> Device {
    let owned = |l: &[&str]| Some(l.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let a = match value {
        Attr::S(s) => DeviceAttribute { string: Some(s.to_string()), ..DeviceAttribute::default() },
        Attr::Strings(l) => DeviceAttribute { strings: owned(l), ..DeviceAttribute::default() },
        Attr::Ints(l) => DeviceAttribute { ints: Some(l.to_vec()), ..DeviceAttribute::default() },
        Attr::Bools(l) => DeviceAttribute { bools: Some(l.to_vec()), ..DeviceAttribute::default() },
        Attr::Versions(l) => DeviceAttribute { versions: owned(l), ..DeviceAttribute::default() },
        Attr::Empty => DeviceAttribute::default(),
    };
    d.attributes.insert(name.into(), a);
    d
}

/// Upstream's `list-attributes-*` and `numanode-matchattribute-*` cases (v1.37.2
/// `allocatortesting/allocator_testing.go`; the experimental allocator with ListTypeAttributes on,
/// `incubating`'s scalar comparison with it off) as (name, gate on, distinct (else match),
/// attribute, requests (name, count) all under the constraint, devices (name, value) of one
/// slice in order, want: the devices allocated in order, `None`: unfit).
#[test]
fn list_attribute_cases() {
    use Attr::*;
    type ListCase = (
        &'static str,
        bool,
        bool,
        &'static str,
        Vec<(&'static str, i64)>,
        Vec<(&'static str, Attr)>,
        Option<Vec<&'static str>>,
    );
    let one = |n: i64| vec![("req-0", n)];
    let d = |name: &'static str, a: Attr| (name, a);
    let s = "stringAttribute";
    let cases: Vec<ListCase> = vec![
        (
            "list-attributes-match-constaint-scalar-string-values",
            true,
            false,
            s,
            one(2),
            vec![d("device-1", S("value1")), d("device-2", S("value1"))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-match-constaint-list-of-string-values-with-common-elements",
            true,
            false,
            s,
            one(2),
            vec![
                d("device-1", Strings(&["value1", "value2", "value3"])),
                d("device-2", Strings(&["value2", "value3", "value4"])),
            ],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            // Pairwise each shares a value, but no value is common to all three.
            "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements",
            true,
            false,
            s,
            one(3),
            vec![
                d("device-1", Strings(&["value1", "value2"])),
                d("device-2", Strings(&["value2", "value3"])),
                d("device-3", Strings(&["value3", "value1"])),
            ],
            None,
        ),
        (
            // device-2 narrows the intersection to {value1}, device-3 then fails; backtracking
            // must restore {value1, value2} so that device-3 and device-4 fit after device-1.
            "list-attributes-match-constraint-backtrack-needs-intersection-restore",
            true,
            false,
            s,
            one(3),
            vec![
                d("device-1", Strings(&["value1", "value2"])),
                d("device-2", Strings(&["value1"])),
                d("device-3", Strings(&["value2"])),
                d("device-4", Strings(&["value2"])),
            ],
            Some(vec!["device-1", "device-3", "device-4"]),
        ),
        (
            "list-attributes-match-constaint-list-of-string-values-without-common-elements",
            true,
            false,
            s,
            vec![("req-0", 1), ("req-1", 1)],
            vec![d("device-1", Strings(&["value1", "value2"])), d("device-2", Strings(&["value3", "value4"]))],
            None,
        ),
        (
            // A scalar is a one-element set.
            "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements",
            true,
            false,
            s,
            one(2),
            vec![d("device-1", S("value1")), d("device-2", Strings(&["value1", "value2"]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements",
            true,
            false,
            s,
            one(3),
            vec![
                d("device-1", S("value1")),
                d("device-2", Strings(&["value1", "value2"])),
                d("device-3", Strings(&["value2", "value3"])),
            ],
            None,
        ),
        (
            "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements",
            true,
            false,
            s,
            one(2),
            vec![d("device-1", S("value1")), d("device-2", Strings(&["value2", "value3"]))],
            None,
        ),
        (
            "list-attributes-match-constaint-list-of-int-values-with-common-elements",
            true,
            false,
            "numa",
            one(2),
            vec![d("device-1", Ints(&[0, 1, 2])), d("device-2", Ints(&[1, 2, 3]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "numanode-matchattribute-overlapping-lists-are-co-placed",
            true,
            false,
            "numaNode",
            one(2),
            vec![d("device-1", Ints(&[4])), d("device-2", Ints(&[4, 5, 6, 7]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "numanode-matchattribute-disjoint-lists-are-not-allocated",
            true,
            false,
            "numaNode",
            one(2),
            vec![d("device-1", Ints(&[0])), d("device-2", Ints(&[4, 5, 6, 7]))],
            None,
        ),
        (
            "list-attributes-match-constaint-list-of-bool-values-with-common-elements",
            true,
            false,
            "boolAttribute",
            one(2),
            vec![d("device-1", Bools(&[true, false])), d("device-2", Bools(&[true]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-match-constaint-list-of-version-values-with-common-elements",
            true,
            false,
            "driverVersion",
            one(2),
            vec![
                d("device-1", Versions(&["1.0.0", "1.1.0", "2.0.0"])),
                d("device-2", Versions(&["1.1.0", "2.0.0", "2.1.0"])),
            ],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            // Ours: values of different types never intersect ("1" the string is not 1 the int).
            "list-attributes-match-different-types-do-not-intersect",
            true,
            false,
            s,
            one(2),
            vec![d("device-1", Ints(&[1])), d("device-2", Strings(&["1"]))],
            None,
        ),
        (
            // Ours: duplicates and order do not matter.
            "list-attributes-match-set-semantics",
            true,
            false,
            s,
            one(2),
            vec![d("device-1", Strings(&["b", "a", "a"])), d("device-2", Strings(&["a"]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            // Upstream's case expects the class selector's CEL error for the valueless
            // attribute; ours evaluates no such attribute (validation refuses the slice), so
            // only the constraint's answer is compared: neither device has a value set.
            "list-attributes-match-constaint-with-empty-or-unknown-type",
            true,
            false,
            s,
            one(2),
            vec![d("device-1", Empty), d("device-2", Strings(&[]))],
            None,
        ),
        (
            // Gate off: the first device is taken whatever its value, a list then matches nothing.
            "list-attributes-disabled-match-constraint-with-lists",
            false,
            false,
            s,
            one(2),
            vec![
                d("device-1", Strings(&["value1", "value2", "value3"])),
                d("device-2", Strings(&["value2", "value3", "value4"])),
            ],
            None,
        ),
        (
            // Ours: gate off, one device needs no comparison.
            "list-attributes-disabled-match-one-device",
            false,
            false,
            s,
            one(1),
            vec![d("device-1", Strings(&["value1"]))],
            Some(vec!["device-1"]),
        ),
        (
            "list-attributes-distinct-constraint-scalar-string-values-all-distinct",
            true,
            true,
            s,
            one(2),
            vec![d("device-1", S("value1")), d("device-2", S("value2"))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-distinct-constraint-scalar-string-values-not-distinct",
            true,
            true,
            s,
            one(2),
            vec![d("device-1", S("value1")), d("device-2", S("value1"))],
            None,
        ),
        (
            "list-attributes-distinct-constraint-single-request-count-3-not-distinct",
            true,
            true,
            s,
            one(3),
            vec![d("device-1", S("value1")), d("device-2", S("value2")), d("device-3", S("value1"))],
            None,
        ),
        (
            "list-attributes-distinct-constraint-single-request-count-3-all-distinct",
            true,
            true,
            s,
            one(3),
            vec![d("device-1", S("value1")), d("device-2", S("value2")), d("device-3", S("value3"))],
            Some(vec!["device-1", "device-2", "device-3"]),
        ),
        (
            "list-attributes-distinct-constraint-list-of-string-values-all-distinct",
            true,
            true,
            s,
            one(2),
            vec![
                d("device-1", Strings(&["value1", "value2"])),
                d("device-2", Strings(&["value2", "value3"])),
                d("device-3", Strings(&["value3", "value4"])),
            ],
            Some(vec!["device-1", "device-3"]),
        ),
        (
            "list-attributes-distinct-constraint-list-of-string-values-with-common-elements",
            true,
            true,
            s,
            one(2),
            vec![
                d("device-1", Strings(&["value1", "value2", "value3"])),
                d("device-2", Strings(&["value2", "value4", "value5"])),
            ],
            None,
        ),
        (
            "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct",
            true,
            true,
            s,
            one(2),
            vec![
                d("device-1", S("value1")),
                d("device-2", Strings(&["value1", "value2"])),
                d("device-3", Strings(&["value2", "value3"])),
            ],
            Some(vec!["device-1", "device-3"]),
        ),
        (
            "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements",
            true,
            true,
            s,
            one(2),
            vec![d("device-1", S("value1")), d("device-2", Strings(&["value1", "value2"]))],
            None,
        ),
        (
            "list-attributes-distinct-constraint-list-of-int-values-all-distinct",
            true,
            true,
            "numa",
            one(2),
            vec![d("device-1", Ints(&[0, 1])), d("device-2", Ints(&[2, 3]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-distinct-constraint-list-of-bool-values-all-distinct",
            true,
            true,
            "boolAttribute",
            one(2),
            vec![d("device-1", Bools(&[true])), d("device-2", Bools(&[false]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-distinct-constraint-list-of-version-values-all-distinct",
            true,
            true,
            "driverVersion",
            one(2),
            vec![d("device-1", Versions(&["1.0.0", "1.1.0"])), d("device-2", Versions(&["2.0.0", "2.1.0"]))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-distinct-constaint-with-empty-or-unknown-type",
            true,
            true,
            s,
            one(2),
            vec![d("device-1", Empty), d("device-2", Strings(&[]))],
            None,
        ),
        (
            // Gate off: the first list is distinct from nothing, the second from nothing known.
            "list-attributes-disabled-distinct-constraint-with-lists",
            false,
            true,
            s,
            one(2),
            vec![
                d("device-1", Strings(&["value1", "value2", "value3"])),
                d("device-2", Strings(&["value2", "value3", "value4"])),
            ],
            None,
        ),
        (
            // Gate off: a scalar after a list is compared with the scalars only.
            "list-attributes-disabled-distinct-list-then-scalar",
            false,
            true,
            s,
            one(2),
            vec![d("device-1", Strings(&["value1"])), d("device-2", S("value1"))],
            Some(vec!["device-1", "device-2"]),
        ),
        (
            "list-attributes-distinct-constraint-backtrack-needs-remove",
            true,
            true,
            s,
            vec![("req-0", 1), ("req-1", 1), ("req-2", 1)],
            vec![
                d("device-1", Strings(&["value1", "value2", "value3"])),
                d("device-2", Strings(&["value3", "value4", "value5"])),
                d("device-3", Strings(&["value1", "value2"])),
                d("device-4", Strings(&["value3", "value4"])),
                d("device-0", Strings(&["value5", "value6"])),
            ],
            Some(vec!["device-3", "device-4", "device-0"]),
        ),
    ];
    for (name, on, distinct, attribute, requests, devices, want) in cases {
        let features = DraFeatures { list_type_attributes: on, ..DraFeatures::default() };
        let mut constraint = match_attribute(attribute, &[]);
        if distinct {
            constraint.distinct_attribute = constraint.match_attribute.take();
        }
        let requests = requests.iter().map(|(r, n)| request(r, CLASS_A, *n)).collect();
        let devices = devices.iter().map(|(n, a)| with_list_attr(device(n), attribute, a)).collect();
        let c = Case {
            claims: vec![claim("claim-0", requests, vec![constraint])],
            slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, devices)],
            features,
            ..case(name)
        };
        let got = match run(&c) {
            Ok(Outcome::Allocated(a)) => {
                Some(a[0].devices.results.iter().map(|r| r.device.clone()).collect::<Vec<_>>())
            }
            Ok(Outcome::Unfit) => None,
            other => panic!("{name}: {other:?}"),
        };
        let want = want.map(|w| w.iter().map(|d| d.to_string()).collect::<Vec<_>>());
        assert_eq!(got, want, "{name}");
    }
}
