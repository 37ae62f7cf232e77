//! CEL device selectors: compiling scheduler_perf's DRA selector, and evaluating it and the
//! DeviceClass selector against the device of `resourceslice-basic-devices.yaml` (13
//! attributes in three domains, two capacities).
//!
//! Run: `cargo bench --bench cel` (see `benches/README.md`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use schedperf::api::quantity::Quantity;
use schedperf::cel::{AttributeValue as A, DeviceEnv, Selector};

/// scheduler_perf's `performance-config.yaml` selector (v1.37.2).
const PERF_SELECTOR: &str = r#"device.attributes["test-driver.cdi.k8s.io"].driverVersion.major() >= 1 && device.capacity["test-driver.cdi.k8s.io"].memory.isGreaterThan(quantity("1Mi"))"#;

/// The DeviceClass selector of `templates/deviceclass.yaml`.
const CLASS_SELECTOR: &str = r#"device.driver == "test-driver.cdi.k8s.io""#;

const D: &str = "test-driver.cdi.k8s.io";

fn selectors(c: &mut Criterion) {
    let attributes = [
        (D, "driver", A::String("xe")),
        (D, "driverVersion", A::Version("1.2.3")),
        ("resource.k8s.io", "pciRoot", A::String("1")),
        (D, "family", A::String("Arc Pro B-Series")),
        (D, "health", A::String("Healthy")),
        (D, "model", A::String("B60")),
        (D, "pciAddress", A::String("0000:01:00.0")),
        (D, "pciId", A::String("0xe211")),
        (D, "pciRoot", A::String("01")),
        ("resource.kubernetes.io", "pciBusID", A::String("0000:01:00.0")),
        ("resource.kubernetes.io", "pciRoot", A::String("pci0000:01")),
        (D, "sriov", A::Bool(true)),
        (D, "type", A::String("gpu")),
    ];
    let capacity = [
        (D, "memory", Quantity::parse("24480Mi").expect("quantity")),
        (D, "millicores", Quantity::parse("1k").expect("quantity")),
    ];
    let env = DeviceEnv { driver: D, attributes: &attributes, capacity: &capacity, allow_multiple_allocations: false };
    let perf = Selector::compile(PERF_SELECTOR).expect("compiles");
    let class = Selector::compile(CLASS_SELECTOR).expect("compiles");
    assert_eq!(perf.matches(&env), Ok(true));
    assert_eq!(class.matches(&env), Ok(true));
    let mut g = c.benchmark_group("cel");
    g.bench_function("compile/perf_selector", |b| b.iter(|| Selector::compile(black_box(PERF_SELECTOR))));
    g.bench_function("matches/perf_selector", |b| b.iter(|| perf.matches(black_box(&env))));
    g.bench_function("matches/deviceclass", |b| b.iter(|| class.matches(black_box(&env))));
    g.finish();
}

criterion_group!(benches, selectors);
criterion_main!(benches);
