//! The `resource.k8s.io/v1` objects of dynamic resource allocation (DRA) that the DynamicResources
//! plugin and its structured allocator read: DeviceClass, ResourceClaim, ResourceClaimTemplate and
//! ResourceSlice, and a pod's `spec.resourceClaims` / `status.resourceClaimStatuses`. Only the
//! fields the scheduler reads; unknown fields are ignored, a field of the wrong type or an unknown
//! enum value is an error naming the field. A list written as `null` (scheduler_perf's templates
//! print `constraints: null` for an unset parameter) reads as empty, as Go's decoder does.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::objects::{NodeSelector, ObjectMeta};
use super::quantity::Quantity;

/// Reads a list or map where `null` means empty, as Go's JSON decoder does for a nil slice or map.
pub(super) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// The namespace an object lives in: `default` when unset.
fn namespace_or_default(meta: &ObjectMeta) -> &str {
    if meta.namespace.is_empty() {
        "default"
    } else {
        &meta.namespace
    }
}

/// `v1.PodResourceClaim`: one entry of a pod's `spec.resourceClaims`; exactly one of the two sources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodResourceClaim {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// `v1.PodResourceClaimStatus`: the claim the resourceclaim controller made for a template entry
/// (`None`: the controller decided no claim is needed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodResourceClaimStatus {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}

/// `resource.k8s.io/v1` DeviceClass (cluster-scoped).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClass {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DeviceClassSpec,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    pub selectors: Vec<DeviceSelector>,
    /// Opaque driver configuration, copied into an allocation's config; not read otherwise.
    #[serde(default, deserialize_with = "null_as_default")]
    pub config: Vec<serde_norway::Value>,
    /// DRAExtendedResource: pods requesting this extended resource get a claim for the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

/// `DeviceSelector`: a CEL expression over one device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSelector {
    #[serde(default)]
    pub cel: Option<CelDeviceSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CelDeviceSelector {
    pub expression: String,
}

/// `resource.k8s.io/v1` ResourceClaim.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaim {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ResourceClaimSpec,
    #[serde(default)]
    pub status: ResourceClaimStatus,
}

impl ResourceClaim {
    /// The claim's namespace: `default` when unset.
    pub fn namespace(&self) -> &str {
        namespace_or_default(&self.metadata)
    }
}

/// `ResourceClaimSpec`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimSpec {
    #[serde(default)]
    pub devices: DeviceClaim,
}

/// `DeviceClaim`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClaim {
    #[serde(default, deserialize_with = "null_as_default")]
    pub requests: Vec<DeviceRequest>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub constraints: Vec<DeviceConstraint>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub config: Vec<serde_norway::Value>,
}

/// `DeviceRequest`: exactly one of `exactly` and `firstAvailable` (DRAPrioritizedList).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequest {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exactly: Option<ExactDeviceRequest>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub first_available: Vec<DeviceSubRequest>,
}

/// `ExactDeviceRequest`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExactDeviceRequest {
    pub device_class_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub selectors: Vec<DeviceSelector>,
    /// Defaulted to `ExactCount` by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<DeviceAllocationMode>,
    /// Defaulted to 1 for `ExactCount` by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// DRADeviceTaints.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<super::resource_counters::DeviceToleration>,
    /// DRAConsumableCapacity: how much of each capacity of a device the request consumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

/// `CapacityRequirements` (DRAConsumableCapacity): the capacity a request consumes of a device
/// that allows multiple allocations, by capacity name.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityRequirements {
    #[serde(default, deserialize_with = "null_as_default")]
    pub requests: BTreeMap<String, Quantity>,
}

impl ExactDeviceRequest {
    /// The allocation mode after defaulting.
    pub fn mode(&self) -> DeviceAllocationMode {
        self.allocation_mode.unwrap_or(DeviceAllocationMode::ExactCount)
    }

    /// The count after defaulting (1 when unset).
    pub fn count(&self) -> i64 {
        self.count.unwrap_or(1)
    }
}

/// `DeviceSubRequest` (DRAPrioritizedList).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSubRequest {
    pub name: String,
    pub device_class_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub selectors: Vec<DeviceSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<DeviceAllocationMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// DRADeviceTaints.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<super::resource_counters::DeviceToleration>,
    /// DRAConsumableCapacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

/// `DeviceAllocationMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum DeviceAllocationMode {
    ExactCount,
    All,
}

/// `DeviceConstraint`: `requests` empty means every request of the claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceConstraint {
    #[serde(default, deserialize_with = "null_as_default")]
    pub requests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_attribute: Option<String>,
    /// DRAConsumableCapacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_attribute: Option<String>,
}

/// `ResourceClaimStatus`: the allocation and the consumers it is reserved for.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationResult>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
}

/// `AllocationResult`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocationResult {
    #[serde(default)]
    pub devices: DeviceAllocationResult,
    /// Where the allocated devices are reachable; `None`: everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
}

/// `DeviceAllocationResult`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceAllocationResult {
    #[serde(default, deserialize_with = "null_as_default")]
    pub results: Vec<DeviceRequestAllocationResult>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<serde_norway::Value>,
}

/// `DeviceRequestAllocationResult`: one allocated device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequestAllocationResult {
    pub request: String,
    pub driver: String,
    pub pool: String,
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// DRADeviceTaints: the request's tolerations, copied by the allocator.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<super::resource_counters::DeviceToleration>,
    /// DRAConsumableCapacity: set when the device allows multiple allocations (one share of it).
    #[serde(default, rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// DRAConsumableCapacity: the capacity this share consumes, by capacity name.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "BTreeMap::is_empty")]
    pub consumed_capacity: BTreeMap<String, Quantity>,
}

/// `ResourceClaimConsumerReference`: a pod (or PodGroup) the claim is reserved for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimConsumerReference {
    #[serde(default)]
    pub api_group: String,
    pub resource: String,
    pub name: String,
    #[serde(default)]
    pub uid: String,
}

/// `resource.k8s.io/v1` ResourceClaimTemplate.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimTemplate {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ResourceClaimTemplateSpec,
}

impl ResourceClaimTemplate {
    /// The template's namespace: `default` when unset.
    pub fn namespace(&self) -> &str {
        namespace_or_default(&self.metadata)
    }
}

/// `ResourceClaimTemplateSpec`: the metadata and spec of the claims made from the template.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimTemplateSpec {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ResourceClaimSpec,
}

/// `resource.k8s.io/v1` ResourceSlice (cluster-scoped): devices of one driver's pool.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSlice {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ResourceSliceSpec,
}

/// `ResourceSliceSpec`: exactly one of `nodeName`, `nodeSelector`, `allNodes`
/// (or `perDeviceNodeSelection`, DRAPartitionableDevices).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceSpec {
    pub driver: String,
    pub pool: ResourcePool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub devices: Vec<Device>,
    /// DRAPartitionableDevices.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub shared_counters: Vec<super::resource_counters::CounterSet>,
}

/// `ResourcePool`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcePool {
    pub name: String,
    pub generation: i64,
    pub resource_slice_count: i64,
}

/// `Device`: name, attributes and capacity; the fields of later features are kept so that a
/// workload using them can be recognised (and skipped).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    /// DRAPartitionableDevices.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub consumes_counters: Vec<super::resource_counters::DeviceCounterConsumption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// DRADeviceTaints.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<super::resource_counters::DeviceTaint>,
    /// DRAConsumableCapacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_multiple_allocations: Option<bool>,
    /// DRADeviceBindingConditions.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub binding_conditions: Vec<String>,
}

/// `DeviceAttribute`: exactly one of the four scalar values or (DRAListTypeAttributes) the four
/// non-empty lists. A list field present but empty is kept as `Some(vec![])` so that validation
/// can refuse it as upstream's does ("must not be empty if specified").
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceAttribute {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// A semantic version (`1.2.3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// DRAListTypeAttributes: a non-empty list of numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ints: Option<Vec<i64>>,
    /// DRAListTypeAttributes: a non-empty list of booleans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bools: Option<Vec<bool>>,
    /// DRAListTypeAttributes: a non-empty list of strings (each at most 64 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strings: Option<Vec<String>>,
    /// DRAListTypeAttributes: a non-empty list of semantic versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
}

/// A device attribute's one value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttributeValue {
    Int(i64),
    Bool(bool),
    String(String),
    Version(String),
}

/// One value of an attribute's set, borrowed from it (see [`DeviceAttribute::as_set`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttrRef<'a> {
    Int(i64),
    Bool(bool),
    String(&'a str),
    Version(&'a str),
}

/// `DeviceAttribute.String()`'s limit on a string or version value (`DeviceAttributeMaxValueLength`).
pub const DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: usize = 64;
/// `ResourceSliceMaxAttributeValuesPerDevice`: scalar attributes plus every list item.
pub const RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE: usize = 48;
/// `ResourceSliceMaxDevicesWithAdvancedFeatures`: the device limit of a slice using list attributes.
pub const RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES: usize = 64;

impl DeviceAttribute {
    /// The scalar value set, `None` when none or more than one field is (validation rejects
    /// both) or the value is a list.
    pub fn value(&self) -> Option<AttributeValue> {
        if self.fields_set() != 1 {
            return None;
        }
        if let Some(v) = self.int {
            return Some(AttributeValue::Int(v));
        }
        if let Some(v) = self.bool {
            return Some(AttributeValue::Bool(v));
        }
        if let Some(v) = &self.string {
            return Some(AttributeValue::String(v.clone()));
        }
        self.version.clone().map(AttributeValue::Version)
    }

    /// How many of the eight value fields are present (an empty list counts, as upstream's
    /// `!= nil`).
    pub fn fields_set(&self) -> usize {
        usize::from(self.int.is_some())
            + usize::from(self.bool.is_some())
            + usize::from(self.string.is_some())
            + usize::from(self.version.is_some())
            + usize::from(self.ints.is_some())
            + usize::from(self.bools.is_some())
            + usize::from(self.strings.is_some())
            + usize::from(self.versions.is_some())
    }

    /// Whether a list field is present (`draListTypeAttributesFeatureInUse`).
    pub fn has_list(&self) -> bool {
        self.ints.is_some() || self.bools.is_some() || self.strings.is_some() || self.versions.is_some()
    }

    /// The list field present, by its JSON name (for messages).
    pub fn list_field(&self) -> Option<&'static str> {
        [
            (self.ints.is_some(), "ints"),
            (self.bools.is_some(), "bools"),
            (self.strings.is_some(), "strings"),
            (self.versions.is_some(), "versions"),
        ]
        .into_iter()
        .find_map(|(set, name)| set.then_some(name))
    }

    /// The experimental allocator's `attributeAsSet`: a non-empty list (ints, bools, strings,
    /// versions, in that order) else the scalar, as a sorted set without duplicates of values
    /// borrowed from the attribute; `None` when it has no value. Upstream compares sets of one Go
    /// type, so two sets of different types never intersect; here a set's values are of one
    /// variant and [`AttrRef`]'s order sorts by variant first, which gives the same answers.
    pub fn as_set(&self) -> Option<Vec<AttrRef<'_>>> {
        let mut set: Vec<AttrRef<'_>> = match self {
            Self { ints: Some(v), .. } if !v.is_empty() => v.iter().map(|&i| AttrRef::Int(i)).collect(),
            Self { bools: Some(v), .. } if !v.is_empty() => v.iter().map(|&b| AttrRef::Bool(b)).collect(),
            Self { strings: Some(v), .. } if !v.is_empty() => v.iter().map(|s| AttrRef::String(s)).collect(),
            Self { versions: Some(v), .. } if !v.is_empty() => v.iter().map(|s| AttrRef::Version(s)).collect(),
            Self { int: Some(i), .. } => vec![AttrRef::Int(*i)],
            Self { bool: Some(b), .. } => vec![AttrRef::Bool(*b)],
            Self { string: Some(s), .. } => vec![AttrRef::String(s)],
            Self { version: Some(s), .. } => vec![AttrRef::Version(s)],
            _ => return None,
        };
        set.sort_unstable();
        set.dedup();
        Some(set)
    }

    /// How many values this attribute counts toward `ResourceSliceMaxAttributeValuesPerDevice`
    /// (`numEntriesDeviceAttribute`: one for a scalar, else every list item).
    fn num_values(&self) -> usize {
        let items = [self.ints.as_ref().map(Vec::len), self.bools.as_ref().map(Vec::len)]
            .into_iter()
            .chain([self.strings.as_ref().map(Vec::len), self.versions.as_ref().map(Vec::len)])
            .flatten()
            .sum::<usize>();
        if items == 0 {
            1
        } else {
            items
        }
    }
}

/// The intersection of two sorted sets without duplicates (as [`DeviceAttribute::as_set`]
/// returns them), sorted: a merge in O(|a| + |b|).
pub fn intersect_sorted<T: Ord + Clone>(a: &[T], b: &[T]) -> Vec<T> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Whether two sorted sets without duplicates share a value.
pub fn intersects_sorted<T: Ord>(a: &[T], b: &[T]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// `DeviceCapacity`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCapacity {
    pub value: Quantity,
    /// DRAConsumableCapacity: how requests for this capacity are rounded and checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_policy: Option<CapacityRequestPolicy>,
}

/// `CapacityRequestPolicy` (DRAConsumableCapacity): the value taken when a request names no
/// amount, and at most one of the valid values (ascending) or a valid range.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityRequestPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Quantity>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub valid_values: Vec<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_range: Option<CapacityRequestPolicyRange>,
}

/// `CapacityRequestPolicyRange`: `min` (required), an optional `max`, and an optional `step`
/// from `min`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityRequestPolicyRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Quantity>,
}

/// Splits a qualified attribute or capacity name into (domain, id); a name without a domain
/// belongs to the device's driver (`resourceapi.FullyQualifiedName`'s rule).
pub fn split_qualified_name<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

/// `validateDeviceAttribute`: exactly one value field, a list not empty, strings and versions at
/// most 64 bytes. Returns the field below the attribute (`""`, `.strings`, `.strings[3]`) and
/// the message of the first problem.
fn validate_attribute(a: &DeviceAttribute) -> Result<(), (String, String)> {
    if a.fields_set() != 1 {
        return Err((
            String::new(),
            "exactly one value must be specified: one of `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`".into(),
        ));
    }
    let too_long = |field: String, v: &str| {
        if v.len() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
            Err((field, format!("must have at most {DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH} bytes, got {}", v.len())))
        } else {
            Ok(())
        }
    };
    if let Some(s) = a.string.as_deref().or(a.version.as_deref()) {
        too_long(if a.string.is_some() { ".string" } else { ".version" }.into(), s)?;
    }
    let empty = |field: &str, len: Option<usize>| match len {
        Some(0) => Err((format!(".{field}"), "must not be empty if specified".to_string())),
        _ => Ok(()),
    };
    empty("ints", a.ints.as_ref().map(Vec::len))?;
    empty("bools", a.bools.as_ref().map(Vec::len))?;
    empty("strings", a.strings.as_ref().map(Vec::len))?;
    empty("versions", a.versions.as_ref().map(Vec::len))?;
    for (field, list) in [("strings", &a.strings), ("versions", &a.versions)] {
        for (i, v) in list.iter().flatten().enumerate() {
            too_long(format!(".{field}[{i}]"), v)?;
        }
    }
    Ok(())
}

/// Checks the fields a decoded ResourceSlice needs beyond their types: each attribute has exactly
/// one value (scalar or list, see [`validate_attribute`]), a device at most 48 attribute values,
/// a slice with list attributes at most 64 devices. Returns the field path and message of the
/// first problem.
pub fn validate_slice(slice: &ResourceSlice) -> Result<(), (String, String)> {
    if slice.spec.driver.is_empty() {
        return Err(("spec.driver".into(), "missing field `driver`".into()));
    }
    let lists = slice.spec.devices.iter().any(|d| d.attributes.values().any(DeviceAttribute::has_list));
    if lists && slice.spec.devices.len() > RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES {
        return Err((
            "spec.devices".into(),
            format!(
                "must have at most {RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES} items when a device has a list attribute, got {}",
                slice.spec.devices.len()
            ),
        ));
    }
    for (d, device) in slice.spec.devices.iter().enumerate() {
        for (name, attribute) in &device.attributes {
            validate_attribute(attribute)
                .map_err(|(field, message)| (format!("spec.devices[{d}].attributes.{name}{field}"), message))?;
        }
        let values: usize = device.attributes.values().map(DeviceAttribute::num_values).sum();
        if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE {
            return Err((
                format!("spec.devices[{d}]"),
                format!(
                    "the total number of attribute values must not exceed {RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE}, got {values}"
                ),
            ));
        }
        for (name, capacity) in &device.capacity {
            validate_capacity(capacity)
                .map_err(|(field, message)| (format!("spec.devices[{d}].capacity.{name}{field}"), message))?;
        }
    }
    super::resource_counters::validate_slice_partitions(&slice.spec)
}

/// Checks a device capacity (DRAConsumableCapacity's request policy as the API validates it): a
/// non-negative value; at most one of `validValues` (ascending, unique, at most
/// [`CAPACITY_VALID_VALUES_MAX_SIZE`]) and `validRange` (with `min`, a positive `step`,
/// `min <= max`). Returns the field below the capacity (`.requestPolicy.validRange.min`) and why.
fn validate_capacity(capacity: &DeviceCapacity) -> Result<(), (String, String)> {
    if capacity.value < Quantity::ZERO {
        return Err((".value".into(), "must be non-negative".into()));
    }
    let Some(policy) = &capacity.request_policy else { return Ok(()) };
    if !policy.valid_values.is_empty() && policy.valid_range.is_some() {
        return Err((".requestPolicy".into(), "expected at most one of `validValues` and `validRange`".into()));
    }
    if policy.valid_values.len() > CAPACITY_VALID_VALUES_MAX_SIZE {
        return Err((
            ".requestPolicy.validValues".into(),
            format!("must have at most {CAPACITY_VALID_VALUES_MAX_SIZE} items"),
        ));
    }
    if policy.valid_values.windows(2).any(|w| w[0] >= w[1]) {
        return Err((
            ".requestPolicy.validValues".into(),
            "must be sorted in ascending order, without duplicates".into(),
        ));
    }
    if let Some(range) = &policy.valid_range {
        let Some(min) = range.min else {
            return Err((".requestPolicy.validRange.min".into(), "required".into()));
        };
        if min < Quantity::ZERO {
            return Err((".requestPolicy.validRange.min".into(), "must be non-negative".into()));
        }
        if range.step.is_some_and(|s| s <= Quantity::ZERO) {
            return Err((".requestPolicy.validRange.step".into(), "must be greater than zero".into()));
        }
        if range.max.is_some_and(|m| m < min) {
            return Err((".requestPolicy.validRange.max".into(), "must be greater than or equal to min".into()));
        }
    }
    Ok(())
}

/// `resourceapi.CapacityRequestPolicyDiscreteMaxOptions`: at most this many valid values.
pub const CAPACITY_VALID_VALUES_MAX_SIZE: usize = 10;

/// `resourceapi.FirstAvailableDeviceRequestMaxSize`: at most this many subrequests.
pub const FIRST_AVAILABLE_MAX_SIZE: usize = 8;

/// Checks a request's (or subrequest's) capacity requests: each non-negative.
fn validate_capacity_requests(capacity: Option<&CapacityRequirements>, path: &str) -> Result<(), (String, String)> {
    for (name, q) in capacity.map(|c| &c.requests).into_iter().flatten() {
        if *q < Quantity::ZERO {
            return Err((format!("{path}.capacity.requests.{name}"), "must be non-negative".into()));
        }
    }
    Ok(())
}

/// Checks a claim spec: each request has exactly one of `exactly` and `firstAvailable`, a positive
/// count for `ExactCount`. Returns the field path (below `spec`) and message of the first problem.
pub fn validate_claim_spec(spec: &ResourceClaimSpec) -> Result<(), (String, String)> {
    for (r, request) in spec.devices.requests.iter().enumerate() {
        match (&request.exactly, request.first_available.is_empty()) {
            (Some(exact), true) => {
                if exact.mode() == DeviceAllocationMode::ExactCount && exact.count() <= 0 {
                    return Err((
                        format!("devices.requests[{r}].exactly.count"),
                        format!("must be greater than zero, found {}", exact.count()),
                    ));
                }
                for (t, toleration) in exact.tolerations.iter().enumerate() {
                    super::resource_counters::validate_toleration(
                        toleration,
                        &format!("devices.requests[{r}].exactly.tolerations[{t}]"),
                    )?;
                }
                validate_capacity_requests(exact.capacity.as_ref(), &format!("devices.requests[{r}].exactly"))?;
            }
            (None, false) => {
                if request.first_available.len() > FIRST_AVAILABLE_MAX_SIZE {
                    return Err((
                        format!("devices.requests[{r}].firstAvailable"),
                        format!("must have at most {FIRST_AVAILABLE_MAX_SIZE} items"),
                    ));
                }
                for (i, sub) in request.first_available.iter().enumerate() {
                    let path = format!("devices.requests[{r}].firstAvailable[{i}]");
                    if sub.name.is_empty() || request.first_available[..i].iter().any(|o| o.name == sub.name) {
                        return Err((format!("{path}.name"), "must be set and unique within the request".into()));
                    }
                    let mode = sub.allocation_mode.unwrap_or(DeviceAllocationMode::ExactCount);
                    if mode == DeviceAllocationMode::ExactCount && sub.count.unwrap_or(1) <= 0 {
                        return Err((
                            format!("{path}.count"),
                            format!("must be greater than zero, found {}", sub.count.unwrap_or(1)),
                        ));
                    }
                    validate_capacity_requests(sub.capacity.as_ref(), &path)?;
                    for (t, toleration) in sub.tolerations.iter().enumerate() {
                        super::resource_counters::validate_toleration(toleration, &format!("{path}.tolerations[{t}]"))?;
                    }
                }
            }
            _ => {
                return Err((
                    format!("devices.requests[{r}]"),
                    "expected exactly one of `exactly` and `firstAvailable`".into(),
                ))
            }
        }
    }
    for (i, c) in spec.devices.constraints.iter().enumerate() {
        if c.match_attribute.is_some() == c.distinct_attribute.is_some() {
            return Err((
                format!("devices.constraints[{i}]"),
                "expected exactly one of `matchAttribute` and `distinctAttribute`".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{parse_objects, Object};

    const SLICE: &str = r#"kind: ResourceSlice
apiVersion: resource.k8s.io/v1
metadata: {name: resourceslice-0}
spec:
  pool: {name: resourceslice-0, generation: 1, resourceSliceCount: 1}
  driver: test-driver.cdi.k8s.io
  nodeName: scheduler-perf-dra-0
  devices:
  - name: basic-device-0
    attributes:
      driverVersion: {version: "1.2.3"}
      resource.kubernetes.io/pciRoot: {string: pci0000:00}
      sriov: {bool: true}
      cores: {int: 8}
    capacity:
      memory: {value: 24480Mi}
    unknownField: ignored
"#;

    #[test]
    fn reads_a_slice_with_every_attribute_kind() {
        let objects = parse_objects(SLICE, "slice.yaml").unwrap();
        let Object::ResourceSlice(slice) = &objects[0] else { panic!("{objects:?}") };
        assert_eq!(slice.spec.driver, "test-driver.cdi.k8s.io");
        assert_eq!(slice.spec.node_name.as_deref(), Some("scheduler-perf-dra-0"));
        assert_eq!(slice.spec.pool.resource_slice_count, 1);
        let device = &slice.spec.devices[0];
        let value = |name: &str| device.attributes[name].value().unwrap();
        assert_eq!(value("driverVersion"), AttributeValue::Version("1.2.3".into()));
        assert_eq!(value("resource.kubernetes.io/pciRoot"), AttributeValue::String("pci0000:00".into()));
        assert_eq!(value("sriov"), AttributeValue::Bool(true));
        assert_eq!(value("cores"), AttributeValue::Int(8));
        assert_eq!(device.capacity["memory"].value, Quantity::parse("24480Mi").unwrap());
        assert_eq!(split_qualified_name("resource.kubernetes.io/pciRoot", "d"), ("resource.kubernetes.io", "pciRoot"));
        assert_eq!(split_qualified_name("sriov", "d"), ("d", "sriov"));
    }

    #[test]
    fn reads_a_template_with_null_lists_and_defaults() {
        // scheduler_perf's resourceclaimtemplate.yaml with its parameters unset.
        let text = r#"apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: test-claim-template}
spec:
  spec:
    devices:
      constraints: null
      requests:
      - name: req-0
        exactly:
          deviceClassName: test-class
          selectors: null
"#;
        let objects = parse_objects(text, "t.yaml").unwrap();
        let Object::ResourceClaimTemplate(t) = &objects[0] else { panic!("{objects:?}") };
        assert_eq!(t.namespace(), "default");
        let devices = &t.spec.spec.devices;
        assert!(devices.constraints.is_empty());
        let exact = devices.requests[0].exactly.as_ref().unwrap();
        assert_eq!(
            (exact.device_class_name.as_str(), exact.mode(), exact.count()),
            ("test-class", DeviceAllocationMode::ExactCount, 1)
        );
        assert!(exact.selectors.is_empty());
    }

    #[test]
    fn reads_classes_claims_and_pod_claims() {
        let text = r#"kind: DeviceClass
metadata: {name: test-class}
spec:
  selectors:
  - cel: {expression: 'device.driver == "x"'}
---
kind: ResourceClaim
metadata: {name: c, namespace: init}
spec:
  devices:
    requests:
    - name: r
      exactly: {deviceClassName: test-class, allocationMode: All}
    constraints:
    - {matchAttribute: resource.kubernetes.io/pciRoot}
status:
  allocation:
    devices:
      results:
      - {request: r, driver: d, pool: p, device: dev}
  reservedFor:
  - {resource: pods, name: p0, uid: u0}
---
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c}]
  resourceClaims:
  - {name: a, resourceClaimTemplateName: t}
  - {name: b, resourceClaimName: c}
status:
  resourceClaimStatuses:
  - {name: a, resourceClaimName: p-a-x}
"#;
        let objects = parse_objects(text, "m.yaml").unwrap();
        let Object::DeviceClass(class) = &objects[0] else { panic!() };
        assert_eq!(class.spec.selectors[0].cel.as_ref().unwrap().expression, "device.driver == \"x\"");
        let Object::ResourceClaim(claim) = &objects[1] else { panic!() };
        assert_eq!(claim.namespace(), "init");
        assert_eq!(claim.spec.devices.requests[0].exactly.as_ref().unwrap().mode(), DeviceAllocationMode::All);
        assert_eq!(
            claim.spec.devices.constraints[0].match_attribute.as_deref(),
            Some("resource.kubernetes.io/pciRoot")
        );
        let allocation = claim.status.allocation.as_ref().unwrap();
        assert_eq!(allocation.devices.results[0].device, "dev");
        assert_eq!(claim.status.reserved_for[0].uid, "u0");
        let Object::Pod(pod) = &objects[2] else { panic!() };
        assert_eq!(pod.spec.resource_claims[0].resource_claim_template_name.as_deref(), Some("t"));
        assert_eq!(pod.spec.resource_claims[1].resource_claim_name.as_deref(), Some("c"));
        assert_eq!(pod.status.resource_claim_statuses[0].resource_claim_name.as_deref(), Some("p-a-x"));
        assert!(objects[0].in_namespace("x").is_none(), "DeviceClass is cluster-scoped");
        assert_eq!(objects[1].in_namespace("x").unwrap().kind(), "ResourceClaim");
    }

    #[test]
    fn bad_fields_name_the_file_and_the_field() {
        let cases = [
            (SLICE.replace("{int: 8}", "{int: eight}"), "spec.devices[0].attributes.cores.int"),
            (SLICE.replace("{int: 8}", "{int: 8, bool: true}"), "spec.devices[0].attributes.cores"),
            (SLICE.replace("{int: 8}", "{}"), "spec.devices[0].attributes.cores"),
            (SLICE.replace("generation: 1,", "generation: one,"), "spec.pool.generation"),
            (SLICE.replace("{value: 24480Mi}", "{value: lots}"), "spec.devices[0].capacity.memory.value"),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: x, allocationMode: Some}}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].exactly.allocationMode",
            ),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: x, count: 0}}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].exactly.count",
            ),
            (
                "kind: ResourceClaimTemplate\nmetadata: {name: t}\nspec: {spec: {devices: {requests: [{name: r}]}}}\n".to_string(),
                "spec.spec.devices.requests[0]",
            ),
            (
                SLICE.replace("{value: 24480Mi}", "{value: 1G, requestPolicy: {validRange: {step: 8}}}"),
                "spec.devices[0].capacity.memory.requestPolicy.validRange.min",
            ),
            (
                SLICE.replace("{value: 24480Mi}", "{value: 1G, requestPolicy: {validRange: {min: 1M, step: 0}}}"),
                "spec.devices[0].capacity.memory.requestPolicy.validRange.step",
            ),
            (
                SLICE.replace("{value: 24480Mi}", "{value: 1G, requestPolicy: {validValues: [2M, 1M]}}"),
                "spec.devices[0].capacity.memory.requestPolicy.validValues",
            ),
            (
                SLICE.replace("{value: 24480Mi}", "{value: 1G, requestPolicy: {default: lots}}"),
                "spec.devices[0].capacity.memory.requestPolicy.default",
            ),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: x, capacity: {requests: {bw: -1}}}}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].exactly.capacity.requests.bw",
            ),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, firstAvailable: [{name: a, deviceClassName: x, count: 0}]}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].firstAvailable[0].count",
            ),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, firstAvailable: [{name: a, deviceClassName: x}, {name: a, deviceClassName: y}]}]}}\n"
                    .to_string(),
                "spec.devices.requests[0].firstAvailable[1].name",
            ),
            (
                "kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {constraints: [{matchAttribute: a, distinctAttribute: b}]}}\n"
                    .to_string(),
                "spec.devices.constraints[0]",
            ),
            ("kind: DeviceClass\nmetadata: {}\n".to_string(), "metadata"),
            ("kind: Pod\nmetadata: {name: p}\nspec: {resourceClaims: [{name: a, resourceClaimName: [x]}]}\n".to_string(), "spec.resourceClaims[0].resourceClaimName"),
        ];
        for (text, path) in cases {
            let err = parse_objects(&text, "bad.yaml").unwrap_err();
            assert_eq!((err.file.as_str(), err.path.as_str()), ("bad.yaml", path), "{err}");
        }
    }

    #[test]
    fn reads_list_attributes_as_upstream_writes_them() {
        // As upstream's resourceslice-list-attributes-devices.yaml renders a device.
        let text = SLICE.replace(
            "cores: {int: 8}",
            "cores: {int: 8}\n      dra.example.com/match:\n        strings:\n        - shared-value\n        - device-0-value-0\n      numa: {ints: [4, 5, 5]}\n      ok: {bools: [true]}\n      v: {versions: [1.0.0, 2.0.0]}",
        );
        let objects = parse_objects(&text, "slice.yaml").unwrap();
        let Object::ResourceSlice(slice) = &objects[0] else { panic!("{objects:?}") };
        let a = &slice.spec.devices[0].attributes;
        let m = &a["dra.example.com/match"];
        assert_eq!(m.strings.as_deref(), Some(&["shared-value".to_string(), "device-0-value-0".to_string()][..]));
        assert_eq!(m.value(), None, "a list is no scalar");
        assert_eq!(m.list_field(), Some("strings"));
        assert_eq!(a["numa"].as_set(), Some(vec![AttrRef::Int(4), AttrRef::Int(5)]));
        assert_eq!(a["ok"].as_set(), Some(vec![AttrRef::Bool(true)]));
        assert_eq!(m.as_set(), Some(vec![AttrRef::String("device-0-value-0"), AttrRef::String("shared-value")]));
        assert_eq!(a["v"].list_field(), Some("versions"));
        assert_eq!(a["cores"].as_set(), Some(vec![AttrRef::Int(8)]));
        assert!(!a["cores"].has_list());
    }

    /// `validateDeviceAttribute` and the per-device and per-slice limits, as (mutation of
    /// `SLICE`, the field named, words of the message).
    #[test]
    fn list_attribute_validation() {
        let long = "x".repeat(65);
        let many: Vec<String> = (0..48).map(|i| format!("v{i}")).collect();
        let cases = [
            ("{strings: []}".to_string(), "spec.devices[0].attributes.cores.strings", "must not be empty"),
            ("{ints: []}".to_string(), "spec.devices[0].attributes.cores.ints", "must not be empty"),
            ("{int: 8, ints: [8]}".to_string(), "spec.devices[0].attributes.cores", "exactly one value"),
            ("{ints: [8], strings: [a]}".to_string(), "spec.devices[0].attributes.cores", "exactly one value"),
            (format!("{{strings: [a, {long}]}}"), "spec.devices[0].attributes.cores.strings[1]", "at most 64 bytes"),
            (format!("{{string: {long}}}"), "spec.devices[0].attributes.cores.string", "at most 64 bytes"),
            ("{ints: [eight]}".to_string(), "spec.devices[0].attributes.cores.ints[0]", "invalid type"),
            // 48 list items plus the device's three scalar attributes.
            (format!("{{strings: [{}]}}", many.join(", ")), "spec.devices[0]", "must not exceed 48, got 51"),
        ];
        for (value, path, words) in cases {
            let text = SLICE.replace("{int: 8}", &value);
            let err = parse_objects(&text, "bad.yaml").unwrap_err();
            assert_eq!((err.file.as_str(), err.path.as_str()), ("bad.yaml", path), "{value}: {err}");
            assert!(err.message.contains(words), "{value}: {err}");
        }
        // Exactly at the limits: 45 items and three scalars; 64 devices with a list.
        let fits = SLICE.replace("{int: 8}", &format!("{{strings: [{}]}}", many[..45].join(", ")));
        parse_objects(&fits, "ok.yaml").unwrap();
        let device = "  - name: d{i}\n    attributes:\n      l: {ints: [1]}\n";
        let slice = |n: usize| {
            let devices: String = (0..n).map(|i| device.replace("{i}", &i.to_string())).collect();
            SLICE[..SLICE.find("  - name: basic-device-0").unwrap()].to_string() + &devices
        };
        parse_objects(&slice(64), "ok.yaml").unwrap();
        let err = parse_objects(&slice(65), "bad.yaml").unwrap_err();
        assert_eq!(err.path, "spec.devices", "{err}");
        assert!(err.message.contains("at most 64 items"), "{err}");
    }

    /// The merge intersection against sets: a plain reference.
    #[test]
    fn sorted_intersection_matches_sets() {
        use proptest::prelude::*;
        use std::collections::BTreeSet;
        let value = prop_oneof![
            (0i64..6).prop_map(AttributeValue::Int),
            any::<bool>().prop_map(AttributeValue::Bool),
            "[a-c]{1,2}".prop_map(AttributeValue::String),
            "[1-2]\\.0\\.0".prop_map(AttributeValue::Version),
        ];
        let list = proptest::collection::vec(value, 0..12);
        proptest!(|(a in list.clone(), b in list)| {
            let (sa, sb): (BTreeSet<_>, BTreeSet<_>) = (a.iter().cloned().collect(), b.iter().cloned().collect());
            let (va, vb): (Vec<_>, Vec<_>) = (sa.iter().cloned().collect(), sb.iter().cloned().collect());
            let want: Vec<_> = sa.intersection(&sb).cloned().collect();
            prop_assert_eq!(intersect_sorted(&va, &vb), want.clone());
            prop_assert_eq!(intersects_sorted(&va, &vb), !want.is_empty());
        });
    }
}
