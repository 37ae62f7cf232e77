//! DRAPrioritizedList and DRAConsumableCapacity in the structured allocator: cases after
//! upstream's (v1.37.2 `allocatortesting/allocator_testing.go` subrequest cases and
//! `incubating/consumable_capacity_test.go`), on the helpers of the basic cases.

use super::*;
use crate::plugins::dynamicresources::allocator::{allocate_with, DraFeatures};
use crate::plugins::dynamicresources::allocator_capacity::SharedState;

fn first_available(name: &str, subs: &[(&str, &str, i64)]) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        exactly: None,
        first_available: subs
            .iter()
            .map(|&(n, class, count)| DeviceSubRequest {
                name: n.into(),
                device_class_name: class.into(),
                count: Some(count),
                allocation_mode: Some(DeviceAllocationMode::ExactCount),
                ..DeviceSubRequest::default()
            })
            .collect(),
    }
}

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap()
}

/// A device allowing multiple allocations, with capacity `bandwidth` of `value` and a policy.
fn shareable(name: &str, value: &str, policy: Option<CapacityRequestPolicy>, index: i64) -> Device {
    let mut d = with_attr(device(name), "index", AttributeValue::Int(index));
    d.allow_multiple_allocations = Some(true);
    d.capacity.insert("bandwidth".into(), DeviceCapacity { value: q(value), request_policy: policy });
    d
}

/// upstream's scheduler_perf policy: default 1M, valid range from 1M in steps of 8.
fn range_policy() -> Option<CapacityRequestPolicy> {
    Some(CapacityRequestPolicy {
        default: Some(q("1M")),
        valid_values: Vec::new(),
        valid_range: Some(CapacityRequestPolicyRange { min: Some(q("1M")), max: None, step: Some(q("8")) }),
    })
}

fn with_bandwidth(mut r: DeviceRequest, amount: &str) -> DeviceRequest {
    r.exactly.as_mut().unwrap().capacity =
        Some(CapacityRequirements { requests: [("bandwidth".to_string(), q(amount))].into() });
    r
}

fn distinct(attribute: &str, requests: &[&str]) -> DeviceConstraint {
    DeviceConstraint {
        requests: requests.iter().map(|r| r.to_string()).collect(),
        match_attribute: None,
        distinct_attribute: Some(format!("{DRIVER_A}/{attribute}")),
    }
}

/// (request, device, consumed bandwidth, has a share id) of each result of each claim, or the
/// error, with `shared` standing for what allocated claims hold.
type Got = Result<Option<Vec<Vec<(String, String, Option<Quantity>, bool)>>>, String>;

fn run_shared(c: &Case, shared: &SharedState) -> Got {
    let matches = |_: &NodeSelector| true;
    let node = NodeView { name: c.node.0, selector_matches: &matches };
    let claims: Vec<&ResourceClaim> = c.claims.iter().collect();
    let slices: Vec<&ResourceSlice> = c.slices.iter().collect();
    let classes: BTreeMap<String, DeviceClass> =
        c.classes.iter().map(|k| (k.metadata.name.clone(), k.clone())).collect();
    let allocated: HashSet<DeviceId> = c.allocated.iter().map(|(d, p, n)| DeviceId::new(d, p, n)).collect();
    match allocate_with(
        &claims,
        &node,
        &slices,
        &classes,
        &allocated,
        shared,
        DraFeatures::default(),
        &mut CountingCel::default(),
    )? {
        Outcome::Unfit => Ok(None),
        Outcome::Allocated(results) => Ok(Some(
            results
                .iter()
                .map(|a| {
                    a.devices
                        .results
                        .iter()
                        .map(|r| {
                            (
                                r.request.clone(),
                                r.device.clone(),
                                r.consumed_capacity.get("bandwidth").copied(),
                                r.share_id.is_some(),
                            )
                        })
                        .collect()
                })
                .collect(),
        )),
    }
}

fn want(claims: &[&[(&str, &str, Option<&str>)]]) -> Got {
    Ok(Some(
        claims
            .iter()
            .map(|c| c.iter().map(|&(r, d, b)| (r.to_string(), d.to_string(), b.map(q), b.is_some())).collect())
            .collect(),
    ))
}

#[test]
fn prioritized_list_cases() {
    let plain = |n: &str| device(n);
    let cases: Vec<(Case, Got)> = vec![
        (
            // prioritized-list-first-unavailable: sub-0's class has no device.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![first_available("req-0", &[("sub-0", CLASS_B, 1), ("sub-1", CLASS_A, 1)])],
                    vec![],
                )],
                classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
                slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![plain("device-1")])],
                ..case("prioritized-list-first-unavailable")
            },
            want(&[&[("req-0/sub-1", "device-1", None)]]),
        ),
        (
            // The first subrequest is taken when it can be.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![first_available("req-0", &[("sub-0", CLASS_A, 1), ("sub-1", CLASS_A, 2)])],
                    vec![],
                )],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![plain("device-1"), plain("device-2")],
                )],
                ..case("prioritized-list-first-available")
            },
            want(&[&[("req-0/sub-0", "device-1", None)]]),
        ),
        (
            // Not enough devices for sub-0 (2): sub-1 (1) is taken.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![first_available("req-0", &[("sub-0", CLASS_A, 2), ("sub-1", CLASS_A, 1)])],
                    vec![],
                )],
                slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![plain("device-1")])],
                ..case("prioritized-list-fallback-fewer-devices")
            },
            want(&[&[("req-0/sub-1", "device-1", None)]]),
        ),
        (
            // A subrequest past the claim limit (40 > 32) is skipped for the next one.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![first_available("req-0", &[("sub-0", CLASS_A, 40), ("sub-1", CLASS_A, 1)])],
                    vec![],
                )],
                slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![plain("device-1")])],
                ..case("prioritized-list-max-size-exceeded")
            },
            want(&[&[("req-0/sub-1", "device-1", None)]]),
        ),
        (
            // A constraint naming the subrequest: sub-0 cannot match req-1's device, sub-1 can.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![
                        request("req-1", CLASS_A, 1),
                        first_available("req-0", &[("sub-0", CLASS_A, 1), ("sub-1", CLASS_A, 1)]),
                    ],
                    vec![match_attribute("numa", &["req-0/sub-1", "req-1"])],
                )],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![
                        with_attr(plain("device-1"), "numa", AttributeValue::Int(1)),
                        with_attr(plain("device-2"), "numa", AttributeValue::Int(2)),
                        with_attr(plain("device-3"), "numa", AttributeValue::Int(1)),
                    ],
                )],
                ..case("prioritized-list-constraint-on-subrequest")
            },
            // sub-0 is not constrained and takes device-2.
            want(&[&[("req-1", "device-1", None), ("req-0/sub-0", "device-2", None)]]),
        ),
        (
            // Every subrequest's class is looked up first.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![first_available("req-0", &[("sub-0", CLASS_A, 1), ("sub-1", "no-such-class", 1)])],
                    vec![],
                )],
                slices: vec![slice("slice-1", Reach::Node(NODE1), POOL1, DRIVER_A, vec![plain("device-1")])],
                ..case("prioritized-list-missing-class")
            },
            Err("claim claim-0, request sub-1: could not retrieve device class no-such-class: deviceclass.resource.k8s.io \"no-such-class\" not found".into()),
        ),
    ];
    for (c, want) in &cases {
        assert_eq!(&run_shared(c, &SharedState::default()), want, "{}", c.name);
    }
}

#[test]
fn consumable_capacity_cases() {
    let two_devices = || {
        vec![slice(
            "slice-1",
            Reach::Node(NODE1),
            POOL1,
            DRIVER_A,
            vec![shareable("dev-0", "10G", range_policy(), 0), shareable("dev-1", "10G", range_policy(), 1)],
        )]
    };
    let bw = |name: &str, count: i64, amount: &str| with_bandwidth(request(name, CLASS_A, count), amount);
    let consumed = |device: &str, amount: &str| {
        let mut s = SharedState::default();
        let id = DeviceId::new(DRIVER_A, POOL1, device);
        s.consumed.insert(id.clone(), [("bandwidth".to_string(), q(amount))].into());
        s.shared.insert(id);
        s
    };
    let cases: Vec<(Case, SharedState, Got)> = vec![
        (
            // scheduler_perf's ConsumableCapacity: two shares on distinct devices.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 2, "2500M")], vec![distinct("index", &["req-0"])])],
                slices: two_devices(),
                ..case("distinct-devices-two-shares")
            },
            SharedState::default(),
            want(&[&[("req-0", "dev-0", Some("2500M")), ("req-0", "dev-1", Some("2500M"))]]),
        ),
        (
            // One request does not take the same device twice.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 2, "1G")], vec![])],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![shareable("dev-0", "10G", range_policy(), 0)],
                )],
                ..case("one-device-one-share-per-request")
            },
            SharedState::default(),
            Ok(None),
        ),
        (
            // Two requests share one device.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 1, "4G"), bw("req-1", 1, "4G")], vec![])],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![shareable("dev-0", "10G", range_policy(), 0)],
                )],
                ..case("two-requests-share-a-device")
            },
            SharedState::default(),
            want(&[&[("req-0", "dev-0", Some("4G")), ("req-1", "dev-0", Some("4G"))]]),
        ),
        (
            // What this search took counts: the second share does not fit, and is undone.
            Case {
                claims: vec![
                    claim("claim-0", vec![bw("req-0", 1, "6G")], vec![]),
                    claim("claim-1", vec![bw("req-0", 1, "6G")], vec![]),
                ],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![shareable("dev-0", "10G", range_policy(), 0)],
                )],
                ..case("capacity-of-the-search")
            },
            SharedState::default(),
            Ok(None),
        ),
        (
            // What allocated claims consume counts.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 1, "2500M")], vec![])],
                slices: two_devices(),
                ..case("capacity-allocated-before")
            },
            consumed("dev-0", "8G"),
            want(&[&[("req-0", "dev-1", Some("2500M"))]]),
        ),
        (
            // No amount requested: the policy's default.
            Case {
                claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
                slices: two_devices(),
                ..case("default-amount")
            },
            SharedState::default(),
            want(&[&[("req-0", "dev-0", Some("1M"))]]),
        ),
        (
            // Rounded up to the next step from min: 1M + 8 * ceil((1000017 - 1M) / 8).
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 1, "1000017")], vec![])],
                slices: two_devices(),
                ..case("round-up-range")
            },
            SharedState::default(),
            want(&[&[("req-0", "dev-0", Some("1000024"))]]),
        ),
        (
            // Rounded up to the next valid value.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 1, "2G")], vec![])],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![shareable(
                        "dev-0",
                        "10G",
                        Some(CapacityRequestPolicy {
                            default: Some(q("1G")),
                            valid_values: vec![q("1G"), q("5G")],
                            valid_range: None,
                        }),
                        0,
                    )],
                )],
                ..case("round-up-valid-values")
            },
            SharedState::default(),
            want(&[&[("req-0", "dev-0", Some("5G"))]]),
        ),
        (
            // Past the largest valid value: the request itself, not valid, so the device is skipped.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 1, "6G")], vec![])],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![shareable(
                        "dev-0",
                        "10G",
                        Some(CapacityRequestPolicy {
                            default: Some(q("1G")),
                            valid_values: vec![q("1G"), q("5G")],
                            valid_range: None,
                        }),
                        0,
                    )],
                )],
                ..case("violates-valid-values")
            },
            SharedState::default(),
            Ok(None),
        ),
        (
            // A capacity the device does not have: the device is skipped.
            Case {
                claims: vec![claim(
                    "claim-0",
                    vec![{
                        let mut r = request("req-0", CLASS_A, 1);
                        r.exactly.as_mut().unwrap().capacity =
                            Some(CapacityRequirements { requests: [("memory".to_string(), q("1G"))].into() });
                        r
                    }],
                    vec![],
                )],
                slices: two_devices(),
                ..case("unknown-capacity")
            },
            SharedState::default(),
            Ok(None),
        ),
        (
            // distinctAttribute with one value among the devices.
            Case {
                claims: vec![claim("claim-0", vec![bw("req-0", 2, "1G")], vec![distinct("index", &[])])],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![shareable("dev-0", "10G", None, 0), shareable("dev-1", "10G", None, 0)],
                )],
                ..case("distinct-attribute-duplicated")
            },
            SharedState::default(),
            Ok(None),
        ),
        (
            // A device without multiple allocations: no share, whole capacity, in use after.
            Case {
                claims: vec![claim("claim-0", vec![request("req-0", CLASS_A, 1)], vec![])],
                slices: vec![slice(
                    "slice-1",
                    Reach::Node(NODE1),
                    POOL1,
                    DRIVER_A,
                    vec![with_memory(device("dev-0"), "1Gi")],
                )],
                ..case("dedicated-device")
            },
            SharedState::default(),
            want(&[&[("req-0", "dev-0", None)]]),
        ),
    ];
    for (c, shared, want) in &cases {
        assert_eq!(&run_shared(c, shared), want, "{}", c.name);
    }
}

#[test]
fn share_ids_are_deterministic_and_distinct() {
    let c = Case {
        claims: vec![
            claim("claim-0", vec![with_bandwidth(request("req-0", CLASS_A, 1), "1G")], vec![]),
            claim("claim-1", vec![with_bandwidth(request("req-0", CLASS_A, 1), "1G")], vec![]),
        ],
        slices: vec![slice(
            "slice-1",
            Reach::Node(NODE1),
            POOL1,
            DRIVER_A,
            vec![shareable("dev-0", "10G", range_policy(), 0)],
        )],
        ..case("share-ids")
    };
    let ids = || {
        let matches = |_: &NodeSelector| true;
        let node = NodeView { name: NODE1, selector_matches: &matches };
        let claims: Vec<&ResourceClaim> = c.claims.iter().collect();
        let slices: Vec<&ResourceSlice> = c.slices.iter().collect();
        let classes: BTreeMap<String, DeviceClass> = [(CLASS_A.to_string(), class(CLASS_A, DRIVER_A))].into();
        let Ok(Outcome::Allocated(a)) = allocate_with(
            &claims,
            &node,
            &slices,
            &classes,
            &HashSet::new(),
            &SharedState::default(),
            DraFeatures::default(),
            &mut CountingCel::default(),
        ) else {
            panic!()
        };
        a.iter().map(|a| a.devices.results[0].share_id.clone().unwrap()).collect::<Vec<_>>()
    };
    let first = ids();
    assert_eq!(first, ids());
    assert_ne!(first[0], first[1]);
    assert_eq!(first[0].len(), 36);
    assert_eq!(&first[0][14..15], "4", "a version-4 UUID's form");
    // What an allocation's shares consume is summed per device.
    let mut a = AllocationResult::default();
    for id in &first {
        a.devices.results.push(DeviceRequestAllocationResult {
            request: "req-0".into(),
            driver: DRIVER_A.into(),
            pool: POOL1.into(),
            device: "dev-0".into(),
            share_id: Some(id.clone()),
            consumed_capacity: [("bandwidth".to_string(), q("1G"))].into(),
            ..DeviceRequestAllocationResult::default()
        });
    }
    let state = SharedState::of([&a]);
    assert_eq!(state.consumed[&DeviceId::new(DRIVER_A, POOL1, "dev-0")]["bandwidth"], q("2G"));
}
