//! The Kubernetes object subset the scheduler reads, its quantities, and the manifest loader.
//!
//! [`parse_objects`] and [`load_objects`] turn YAML or JSON manifests into [`Object`]s; every error is
//! an [`InputError`](crate::error::InputError) naming the file and the field path.

pub mod load;
pub mod names;
pub mod objects;
pub mod quantity;
pub mod resource;
pub mod resource_counters;
pub mod storage;
pub mod time;

pub use load::{load_object_files, load_objects, objects_from_documents, parse_documents, parse_objects, Object};
pub use objects::*;
pub use quantity::Quantity;
pub use resource::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
pub use storage::{CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass};
