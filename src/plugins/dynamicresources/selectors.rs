//! [`CelSelectors`]: the allocator's [`DeviceSelectors`] over [`crate::cel::Selector`], as
//! upstream's `cel.Cache` and `CompilationResult.DeviceMatches`: each distinct expression is
//! compiled once (compile errors are kept and reported on every use), and a device of a
//! ResourceSlice is presented as a [`DeviceEnv`] whose qualified names (`domain/id`) are split at
//! the first `/` and whose unqualified names belong to the driver's domain (`parseQualifiedName`).

use std::collections::HashMap;

use super::allocator::{DeviceSelectors, SelectorError};
use crate::api::resource::{Device, DeviceAttribute};
use crate::cel::{AttributeValue, DeviceEnv, Selector};

/// Compiled selectors by expression text.
#[derive(Default)]
pub struct CelSelectors {
    compiled: HashMap<Box<str>, Result<Selector, String>>,
}

impl CelSelectors {
    pub fn new() -> Self {
        Self::default()
    }

    /// The compiled form of `expression`, compiling it on first use.
    pub fn compile(&mut self, expression: &str) -> &Result<Selector, String> {
        if !self.compiled.contains_key(expression) {
            let compiled = Selector::compile(expression).map_err(|e| e.message);
            self.compiled.insert(expression.into(), compiled);
        }
        &self.compiled[expression]
    }

    /// How many distinct expressions have been compiled.
    pub fn len(&self) -> usize {
        self.compiled.len()
    }

    pub fn is_empty(&self) -> bool {
        self.compiled.is_empty()
    }
}

/// `parseQualifiedName`: `domain/id`, or the driver's domain for a bare `id`.
pub fn qualified<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    name.split_once('/').unwrap_or((driver, name))
}

impl DeviceSelectors for CelSelectors {
    fn matches(&mut self, expression: &str, driver: &str, device: &Device) -> Result<bool, SelectorError> {
        let selector = match self.compile(expression) {
            Ok(s) => s,
            Err(e) => return Err(SelectorError::Compile(e.clone())),
        };
        let mut attributes = Vec::with_capacity(device.attributes.len());
        for (name, attribute) in &device.attributes {
            // `getAttributeValue`'s order: the lists first, then the scalars.
            let value = match attribute {
                DeviceAttribute { ints: Some(v), .. } => AttributeValue::Ints(v),
                DeviceAttribute { bools: Some(v), .. } => AttributeValue::Bools(v),
                DeviceAttribute { strings: Some(v), .. } => AttributeValue::Strings(v),
                DeviceAttribute { versions: Some(v), .. } => AttributeValue::Versions(v),
                DeviceAttribute { int: Some(v), .. } => AttributeValue::Int(*v),
                DeviceAttribute { bool: Some(v), .. } => AttributeValue::Bool(*v),
                DeviceAttribute { string: Some(v), .. } => AttributeValue::String(v),
                DeviceAttribute { version: Some(v), .. } => AttributeValue::Version(v),
                // Refused when loaded (an attribute has exactly one value).
                _ => continue,
            };
            let (domain, id) = qualified(name, driver);
            attributes.push((domain, id, value));
        }
        let capacity: Vec<_> = device
            .capacity
            .iter()
            .map(|(name, c)| {
                let (domain, id) = qualified(name, driver);
                (domain, id, c.value)
            })
            .collect();
        let env = DeviceEnv {
            driver,
            attributes: &attributes,
            capacity: &capacity,
            allow_multiple_allocations: device.allow_multiple_allocations.unwrap_or(false),
        };
        selector.matches(&env).map_err(|e| SelectorError::Runtime(e.message))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::api::resource::{DeviceAttribute, DeviceCapacity};
    use crate::api::Quantity;

    fn device() -> Device {
        let mut attributes = BTreeMap::new();
        attributes.insert("model".to_string(), DeviceAttribute { string: Some("a100".into()), ..Default::default() });
        attributes
            .insert("other.example.com/cores".to_string(), DeviceAttribute { int: Some(8), ..Default::default() });
        attributes.insert(
            "driverVersion".to_string(),
            DeviceAttribute { version: Some("1.2.3".into()), ..Default::default() },
        );
        let mut capacity = BTreeMap::new();
        capacity.insert(
            "memory".to_string(),
            DeviceCapacity { value: Quantity::parse("40Gi").unwrap(), request_policy: None },
        );
        Device { name: "gpu-0".into(), attributes, capacity, ..Device::default() }
    }

    #[test]
    fn names_and_errors() {
        let d = device();
        let cases: &[(&str, Result<bool, &str>)] = &[
            (r#"device.driver == "gpu.example.com""#, Ok(true)),
            (r#"device.attributes["gpu.example.com"].model == "a100""#, Ok(true)),
            (r#"device.attributes["other.example.com"].cores == 8"#, Ok(true)),
            (r#""cores" in device.attributes["gpu.example.com"]"#, Ok(false)),
            (r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("32Gi")) >= 0"#, Ok(true)),
            (r#"device.attributes["x"].model == "a100""#, Err("runtime: no such key: model")),
            ("device.nope", Err("compile")),
            ("noSuchVar", Err("compile")),
            ("1", Err("compile")),
        ];
        for (expression, want) in cases {
            let mut cel = CelSelectors::new();
            let got = cel.matches(expression, "gpu.example.com", &d);
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{expression}"),
                (Err(w), Err(SelectorError::Compile(_))) if *w == "compile" => {}
                (Err(w), Err(SelectorError::Runtime(m)))
                    if w.strip_prefix("runtime: ").is_some_and(|w| m.contains(w)) => {}
                _ => panic!("{expression}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn compiles_each_expression_once() {
        let d = device();
        let mut cel = CelSelectors::new();
        for _ in 0..3 {
            assert_eq!(cel.matches("device.driver == \"a\"", "a", &d), Ok(true));
            assert!(matches!(cel.matches("device.nope", "a", &d), Err(SelectorError::Compile(_))));
        }
        assert_eq!(cel.len(), 2);
    }

    /// An unparsable version attribute fails every evaluation, as upstream's `DeviceMatches`.
    #[test]
    fn bad_version_fails_every_selector() {
        let mut d = device();
        d.attributes.insert("bad".to_string(), DeviceAttribute { version: Some("1.x".into()), ..Default::default() });
        let got = CelSelectors::new().matches("device.driver == \"a\"", "a", &d);
        assert!(matches!(&got, Err(SelectorError::Runtime(m)) if m.contains("parse semantic version")), "{got:?}");
    }

    /// scheduler_perf's `dra/templates/resourceslice-basic-devices.yaml` (device 1 of slice 0)
    /// against `deviceclass.yaml`'s selector and `performance-config.yaml`'s request selector.
    #[test]
    fn scheduler_perf_basic_device() {
        let slice = r#"kind: ResourceSlice
metadata: {name: resourceslice-0}
spec:
  pool: {name: resourceslice-0, generation: 1, resourceSliceCount: 1}
  driver: test-driver.cdi.k8s.io
  nodeName: scheduler-perf-dra-0
  devices:
  - name: basic-device-1
    attributes:
      driver: {string: xe}
      driverVersion: {version: "1.2.3"}
      resource.k8s.io/pciRoot: {string: "1"}
      pciRoot: {string: "01"}
      resource.kubernetes.io/pciRoot: {string: pci0000:01}
      sriov: {bool: true}
    capacity:
      memory: {value: 24480Mi}
"#;
        let objects = crate::api::parse_objects(slice, "s.yaml").unwrap();
        let crate::api::Object::ResourceSlice(slice) = &objects[0] else { panic!() };
        let (driver, d) = (slice.spec.driver.as_str(), &slice.spec.devices[0]);
        let mut cel = CelSelectors::new();
        let cases = [
            (r#"device.driver == "test-driver.cdi.k8s.io""#, true),
            (
                r#"device.attributes["test-driver.cdi.k8s.io"].driverVersion.major() >= 1 && device.capacity["test-driver.cdi.k8s.io"].memory.isGreaterThan(quantity("1Mi"))"#,
                true,
            ),
            (r#"device.attributes["test-driver.cdi.k8s.io"].pciRoot == "01""#, true),
            (r#"device.attributes["resource.k8s.io"].pciRoot == "1""#, true),
            (r#"device.attributes["resource.kubernetes.io"].pciRoot == "pci0000:01""#, true),
            (
                r#"device.attributes["test-driver.cdi.k8s.io"].sriov && device.attributes["test-driver.cdi.k8s.io"].driver == "xe""#,
                true,
            ),
            (r#"device.capacity["test-driver.cdi.k8s.io"].memory.isGreaterThan(quantity("24Gi"))"#, false),
        ];
        for (expression, want) in cases {
            assert_eq!(cel.matches(expression, driver, d), Ok(want), "{expression}");
        }
    }
}
