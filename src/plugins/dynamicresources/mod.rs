//! DynamicResources (dynamic resource allocation, `resource.k8s.io/v1`): the structured allocator
//! (`allocator`, its CEL selectors evaluated by `crate::cel` through `selectors::CelSelectors`;
//! `allocator_prioritized`: firstAvailable subrequests; `allocator_capacity`: consumable capacity;
//! `allocator_groups`: device compatibility groups),
//! the resourceclaim controller's part scheduler_perf runs (`controller`: a claim per template
//! entry of a pod, named as the controller names it, and `allocResourceClaims`), the claims a pod
//! uses with upstream's PreEnqueue messages (`pod_claims`), and the plugin's PreFilter, Filter,
//! Reserve/Unreserve and PreBind for one pod as functions over the snapshot's DRA objects
//! (`cycle`), its Score and NormalizeScore (`score`: DRAPrioritizedList's ranking of the
//! subrequests Filter allocated), and the plugin over them (`plugin`); extended resources backed by DRA, the special
//! claim of a pod that requests them and what NodeResourcesFit reads of them (`extended`). The
//! plugin's registered cluster events and queueing hints are `crate::queue::dra_hints`.

pub mod allocator;
pub mod allocator_capacity;
mod allocator_counters;
mod allocator_groups;
pub mod allocator_prioritized;
mod allocator_taints;
#[cfg(test)]
mod allocator_tests;
pub mod controller;
pub mod cycle;
pub mod extended;
pub mod plugin;
pub mod pod_claims;
pub mod score;
pub mod selectors;
