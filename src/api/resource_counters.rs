//! The `resource.k8s.io/v1` fields of partitionable devices (DRAPartitionableDevices: a slice's
//! `sharedCounters`, a device's `consumesCounters`) and of device taints (DRADeviceTaints: a
//! device's `taints`, a request's `tolerations`, the `DeviceTaintRule` kind), with the checks of
//! upstream's API validation that the allocator relies on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::objects::ObjectMeta;
use super::quantity::Quantity;
use super::resource::{ResourceSlice, ResourceSliceSpec};

/// `CounterSet`: named counters a slice shares among the devices of its pool.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterSet {
    pub name: String,
    #[serde(default)]
    pub counters: BTreeMap<String, Counter>,
}

/// `Counter`: an amount.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counter {
    pub value: Quantity,
}

/// `DeviceCounterConsumption`: what a device takes from one counter set of its pool.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCounterConsumption {
    pub counter_set: String,
    #[serde(default)]
    pub counters: BTreeMap<String, Counter>,
    /// DRADeviceCompatibilityGroups: opaque group names (at most
    /// [`DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE`], unique, DNS labels). Devices drawing from one
    /// counter set are co-allocated only while the intersection of their groups is non-empty; no
    /// groups co-allocates only with no groups.
    #[serde(default, deserialize_with = "super::resource::null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub compatibility_groups: Vec<String>,
}

/// `resourceapi.DeviceCompatibilityGroupsMaxSize`.
pub const DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE: usize = 2;

/// Whether `name` is a DNS-1123 label (`k8s-short-name`): 1 to 63 lowercase alphanumerics or
/// '-', starting and ending with an alphanumeric.
fn is_dns_label(name: &str) -> bool {
    let b = name.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && b.len() <= 63 && alnum(&b[0]) && alnum(&b[b.len() - 1]) && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// `DeviceTaint`. The effect is kept as written: `NoSchedule` and `NoExecute` prevent allocation,
/// `None` (and any effect a later version adds) does not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaint {
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    pub effect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

/// `DeviceToleration`; an empty operator is `Equal` (the API server's default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceToleration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// The effects a taint may have (`validDeviceTaintEffects`).
pub const DEVICE_TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "None"];

impl DeviceToleration {
    /// `resourceclaim.ToleratesTaint`.
    pub fn tolerates(&self, taint: &DeviceTaint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "" | "Equal" => self.value == taint.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// `resource.k8s.io/v1` DeviceTaintRule (cluster-scoped): a taint added to every device its
/// selector matches (DRADeviceTaintRules, on by default in v1.37).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRule {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DeviceTaintRuleSpec,
}

/// `DeviceTaintRuleSpec`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRuleSpec {
    /// `None` (or `null`) selects no device; an empty selector selects every device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_selector: Option<DeviceTaintSelector>,
    pub taint: DeviceTaint,
}

/// `DeviceTaintSelector`: each field set narrows the devices selected.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// The tracker's `applyPatches`: `slice` with the taint of every rule (in order) that selects a
/// device appended to that device's taints; `None` when no rule selects any of its devices.
pub fn apply_taint_rules(slice: &ResourceSlice, rules: &[&DeviceTaintRule]) -> Option<ResourceSlice> {
    let mut patched: Option<ResourceSlice> = None;
    for rule in rules {
        let Some(selector) = &rule.spec.device_selector else {
            continue;
        };
        if selector.driver.as_ref().is_some_and(|d| *d != slice.spec.driver)
            || selector.pool.as_ref().is_some_and(|p| *p != slice.spec.pool.name)
        {
            continue;
        }
        for (i, device) in slice.spec.devices.iter().enumerate() {
            if selector.device.as_ref().is_some_and(|d| *d != device.name) {
                continue;
            }
            let target = patched.get_or_insert_with(|| slice.clone());
            target.spec.devices[i].taints.push(rule.spec.taint.clone());
        }
    }
    patched
}

/// Checks a taint (`validateDeviceTaint`): a key, a known effect. `path` names the taint.
pub fn validate_taint(taint: &DeviceTaint, path: &str) -> Result<(), (String, String)> {
    if taint.key.is_empty() {
        return Err((format!("{path}.key"), "Required value".into()));
    }
    if taint.effect.is_empty() {
        return Err((format!("{path}.effect"), "Required value".into()));
    }
    if !DEVICE_TAINT_EFFECTS.contains(&taint.effect.as_str()) {
        return Err((
            format!("{path}.effect"),
            format!("Unsupported value: {:?}: supported values: {DEVICE_TAINT_EFFECTS:?}", taint.effect),
        ));
    }
    Ok(())
}

/// Checks a toleration (`validateDeviceToleration`): a known operator (empty: `Equal`), no value
/// for `Exists`, a known effect when set.
pub fn validate_toleration(t: &DeviceToleration, path: &str) -> Result<(), (String, String)> {
    match t.operator.as_str() {
        "Exists" if !t.value.is_empty() => {
            return Err((format!("{path}.value"), "must be empty for operator `Exists`".into()));
        }
        "" | "Equal" | "Exists" => {}
        other => {
            return Err((
                format!("{path}.operator"),
                format!("Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\""),
            ))
        }
    }
    if !t.effect.is_empty() && !DEVICE_TAINT_EFFECTS.contains(&t.effect.as_str()) {
        return Err((
            format!("{path}.effect"),
            format!("Unsupported value: {:?}: supported values: {DEVICE_TAINT_EFFECTS:?}", t.effect),
        ));
    }
    Ok(())
}

/// Checks the partitionable-device and taint fields of a slice spec as upstream's validation
/// does: `sharedCounters` and `devices` not both set; counter sets and consumptions named, with
/// counters, set names unique; per-device node selection (exactly one of `nodeName`,
/// `nodeSelector`, `allNodes` on each device when the slice sets `perDeviceNodeSelection`, none
/// otherwise); taints.
pub fn validate_slice_partitions(spec: &ResourceSliceSpec) -> Result<(), (String, String)> {
    if !spec.shared_counters.is_empty() && !spec.devices.is_empty() {
        return Err(("spec".into(), "only one of `sharedCounters` or `devices` is allowed".into()));
    }
    if spec.per_device_node_selection == Some(false) {
        return Err(("spec.perDeviceNodeSelection".into(), "must be either unset or set to true".into()));
    }
    let mut names = std::collections::HashSet::new();
    for (i, set) in spec.shared_counters.iter().enumerate() {
        if set.name.is_empty() {
            return Err((format!("spec.sharedCounters[{i}].name"), "Required value".into()));
        }
        if set.counters.is_empty() {
            return Err((format!("spec.sharedCounters[{i}].counters"), "Required value".into()));
        }
        if !names.insert(set.name.as_str()) {
            return Err((format!("spec.sharedCounters[{i}].name"), format!("Duplicate value: {:?}", set.name)));
        }
    }
    let per_device = spec.per_device_node_selection == Some(true);
    for (d, device) in spec.devices.iter().enumerate() {
        let mut sets = std::collections::HashSet::new();
        for (i, c) in device.consumes_counters.iter().enumerate() {
            let path = format!("spec.devices[{d}].consumesCounters[{i}]");
            if c.counter_set.is_empty() {
                return Err((format!("{path}.counterSet"), "Required value".into()));
            }
            if c.counters.is_empty() {
                return Err((format!("{path}.counters"), "Required value".into()));
            }
            if !sets.insert(c.counter_set.as_str()) {
                return Err((format!("{path}.counterSet"), format!("Duplicate value: {:?}", c.counter_set)));
            }
            let groups = &c.compatibility_groups;
            if groups.len() > DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE {
                return Err((
                    format!("{path}.compatibilityGroups"),
                    format!(
                        "Too many: {}: must have at most {DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE} items",
                        groups.len()
                    ),
                ));
            }
            for (g, group) in groups.iter().enumerate() {
                if !is_dns_label(group) {
                    return Err((
                        format!("{path}.compatibilityGroups[{g}]"),
                        format!(
                            "Invalid value: {group:?}: expected a DNS-1123 label (at most 63 lowercase alphanumeric characters or '-', starting and ending with an alphanumeric)"
                        ),
                    ));
                }
                if groups[..g].contains(group) {
                    return Err((format!("{path}.compatibilityGroups[{g}]"), format!("Duplicate value: {group:?}")));
                }
            }
        }
        let set = usize::from(device.node_name.is_some())
            + usize::from(device.node_selector.is_some())
            + usize::from(device.all_nodes.is_some());
        if per_device && set != 1 {
            return Err((
                format!("spec.devices[{d}]"),
                "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec".into(),
            ));
        }
        if !per_device && set != 0 {
            return Err((
                format!("spec.devices[{d}]"),
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec".into(),
            ));
        }
        for (t, taint) in device.taints.iter().enumerate() {
            validate_taint(taint, &format!("spec.devices[{d}].taints[{t}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::api::{parse_objects, Object};

    const COUNTERS: &str = "kind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  pool: {name: p, generation: 1, resourceSliceCount: 2}\n  nodeName: n\n  sharedCounters:\n  - name: set\n    counters: {mem: {value: 8Gi}}\n";
    const DEVICES: &str = "kind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  pool: {name: p, generation: 1, resourceSliceCount: 2}\n  nodeName: n\n  devices:\n  - name: dev\n    consumesCounters:\n    - counterSet: set\n      counters: {mem: {value: 4Gi}}\n    taints: [{key: k, value: v, effect: NoSchedule}]\n";
    const RULE: &str = "kind: DeviceTaintRule\nmetadata: {name: r}\nspec:\n  deviceSelector:\n  taint: {key: example.com/taint, value: tainted, effect: NoSchedule}\n";

    #[test]
    fn partitionable_fields_and_taint_rules_parse() {
        let objects = parse_objects(&format!("{COUNTERS}---\n{DEVICES}---\n{RULE}"), "ok.yaml").unwrap();
        let Object::ResourceSlice(counters) = &objects[0] else { panic!() };
        assert_eq!(counters.spec.shared_counters[0].counters["mem"].value, crate::api::Quantity::parse("8Gi").unwrap());
        let Object::ResourceSlice(devices) = &objects[1] else { panic!() };
        assert_eq!(devices.spec.devices[0].consumes_counters[0].counter_set, "set");
        assert!(devices.spec.devices[0].consumes_counters[0].compatibility_groups.is_empty());
        let grouped = DEVICES.replace(
            "counters: {mem: {value: 4Gi}}",
            "counters: {mem: {value: 4Gi}}\n      compatibilityGroups: [mig, mig-2]",
        );
        let Object::ResourceSlice(grouped) = &parse_objects(&grouped, "ok.yaml").unwrap()[0] else { panic!() };
        assert_eq!(grouped.spec.devices[0].consumes_counters[0].compatibility_groups, ["mig", "mig-2"]);
        assert_eq!(devices.spec.devices[0].taints[0].effect, "NoSchedule");
        let Object::DeviceTaintRule(rule) = &objects[2] else { panic!() };
        // An empty (null) selector: no selector, which selects no device.
        assert_eq!(rule.spec.device_selector, None);
        assert!(objects[2].in_namespace("x").is_none(), "DeviceTaintRule is cluster-scoped");
    }

    #[test]
    fn bad_partitionable_and_taint_fields_name_the_file_and_the_field() {
        let both = COUNTERS.replace("  sharedCounters:", "  devices: [{name: x}]\n  sharedCounters:");
        let cases = [
            (COUNTERS.replace("value: 8Gi", "value: lots"), "spec.sharedCounters[0].counters.mem.value"),
            (COUNTERS.replace("{mem: {value: 8Gi}}", "{}"), "spec.sharedCounters[0].counters"),
            (both, "spec"),
            (DEVICES.replace("counterSet: set", "counterSet: ''"), "spec.devices[0].consumesCounters[0].counterSet"),
            (DEVICES.replace("effect: NoSchedule", "effect: Sometimes"), "spec.devices[0].taints[0].effect"),
            (
                DEVICES.replace("counters: {mem: {value: 4Gi}}", "counters: {mem: {value: 4Gi}}\n      compatibilityGroups: [a, b, c]"),
                "spec.devices[0].consumesCounters[0].compatibilityGroups",
            ),
            (
                DEVICES.replace("counters: {mem: {value: 4Gi}}", "counters: {mem: {value: 4Gi}}\n      compatibilityGroups: [a, a]"),
                "spec.devices[0].consumesCounters[0].compatibilityGroups[1]",
            ),
            (
                DEVICES.replace("counters: {mem: {value: 4Gi}}", "counters: {mem: {value: 4Gi}}\n      compatibilityGroups: [MIG]"),
                "spec.devices[0].consumesCounters[0].compatibilityGroups[0]",
            ),
            (
                DEVICES.replace("counters: {mem: {value: 4Gi}}", "counters: {mem: {value: 4Gi}}\n      compatibilityGroups: mig"),
                "spec.devices[0].consumesCounters[0].compatibilityGroups",
            ),
            (DEVICES.replace("{key: k, ", "{"), "spec.devices[0].taints[0]"),
            (DEVICES.replace("    taints:", "    nodeName: n\n    taints:"), "spec.devices[0]"),
            (DEVICES.replace("  nodeName: n\n", "  perDeviceNodeSelection: true\n"), "spec.devices[0]"),
            (RULE.replace("effect: NoSchedule", "effect: Never"), "spec.taint.effect"),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: x, tolerations: [{operator: Maybe}]}}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].exactly.tolerations[0].operator",
            ),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: x, tolerations: [{operator: Exists, value: v}]}}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].exactly.tolerations[0].value",
            ),
        ];
        for (text, path) in cases {
            let err = parse_objects(&text, "bad.yaml").unwrap_err();
            assert_eq!((err.file.as_str(), err.path.as_str()), ("bad.yaml", path), "{err}");
        }
    }
}
