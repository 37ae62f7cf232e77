//! The cluster snapshot the scheduling cycle reads: interned strings, the struct-of-arrays
//! [`NodeTable`], and the pods placed on nodes.
//!
//! Owned by the scheduling thread. Filter and score workers borrow it immutably during a cycle.

pub mod compile;
pub mod intern;
pub mod model;
pub mod nodes;
#[cfg(test)]
pub mod testing;

use std::sync::Arc;

use ahash::AHashMap;

pub use intern::{Interner, Sym};
pub use model::*;
pub use nodes::{NodeIdx, NodeTable};

use crate::agent::PodUid;

/// Strings the plugins compare against, interned once.
#[derive(Debug, Clone)]
pub struct WellKnown {
    pub empty: Sym,
    pub default_host_ip: Sym,
    pub tcp: Sym,
    pub taint_unschedulable: Sym,
    pub hostname_key: Sym,
    pub zone_key: Sym,
    pub default_namespace: Sym,
    pub default_scheduler: Sym,
}

impl WellKnown {
    pub fn new(i: &mut Interner) -> Self {
        WellKnown {
            empty: i.intern(""),
            default_host_ip: i.intern("0.0.0.0"),
            tcp: i.intern("TCP"),
            taint_unschedulable: i.intern("node.kubernetes.io/unschedulable"),
            hostname_key: i.intern("kubernetes.io/hostname"),
            zone_key: i.intern("topology.kubernetes.io/zone"),
            default_namespace: i.intern("default"),
            default_scheduler: i.intern("default-scheduler"),
        }
    }
}

/// A pod placed on a node: assumed by the scheduler or bound.
#[derive(Debug, Clone)]
pub struct PlacedPod {
    pub info: Arc<PodInfo>,
    pub node: Sym,
}

/// The scheduler's view of the cluster.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub interner: Interner,
    pub nodes: NodeTable,
    pub pods: AHashMap<PodUid, PlacedPod>,
    pub wk: WellKnown,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self::new()
    }
}

impl Snapshot {
    pub fn new() -> Self {
        let mut interner = Interner::new();
        let wk = WellKnown::new(&mut interner);
        Snapshot { interner, nodes: NodeTable::new(), pods: AHashMap::new(), wk }
    }

    /// Adds a node. Errors if a node of that name exists.
    pub fn add_node(&mut self, spec: &NodeSpec) -> Result<NodeIdx, String> {
        if self.nodes.idx_of(spec.name).is_some() {
            return Err(format!("node {:?} exists already", self.interner.resolve(spec.name)));
        }
        Ok(self.nodes.add_node(spec))
    }

    /// Places `pod` on node `node` (assume or bind). Errors if the node is unknown or the pod is placed.
    pub fn place_pod(&mut self, pod: Arc<PodInfo>, node: Sym) -> Result<NodeIdx, String> {
        let Some(idx) = self.nodes.idx_of(node) else {
            return Err(format!("pod {} is on unknown node {:?}", pod.name, self.interner.resolve(node)));
        };
        if self.pods.contains_key(&pod.uid) {
            return Err(format!("pod {} is placed already", pod.name));
        }
        self.nodes.add_pod(idx, &pod);
        self.pods.insert(pod.uid, PlacedPod { info: pod, node });
        Ok(idx)
    }

    /// Removes a placed pod (forget or delete), returning it.
    pub fn unplace_pod(&mut self, uid: PodUid) -> Option<PlacedPod> {
        let placed = self.pods.remove(&uid)?;
        let idx = self.nodes.idx_of(placed.node).expect("a placed pod's node exists");
        self.nodes.remove_pod(idx, &placed.info);
        Some(placed)
    }

    /// Removes a node and the pods on it; returns the removed pods.
    pub fn remove_node(&mut self, name: Sym) -> Vec<PlacedPod> {
        let Some(idx) = self.nodes.idx_of(name) else { return Vec::new() };
        let uids = self.nodes.pods[idx.ix()].clone();
        let removed: Vec<PlacedPod> = uids.into_iter().filter_map(|u| self.unplace_pod(u)).collect();
        let idx = self.nodes.idx_of(name).expect("node still present");
        self.nodes.remove_node(idx);
        removed
    }

    /// The name of node `idx`.
    pub fn node_name(&self, idx: NodeIdx) -> &str {
        self.interner.resolve(self.nodes.name[idx.ix()])
    }
}
