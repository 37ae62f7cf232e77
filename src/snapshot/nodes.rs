//! The node table: one column per fact, one row per node (struct-of-arrays).
//!
//! The table owns the row count; every column has exactly `len()` entries. Rows are addressed by
//! [`NodeIdx`]. Removing a node swap-removes its row, so the last node takes its index.

use ahash::AHashMap;

use super::intern::Sym;
use super::model::{HostPort, NodeSpec, PodInfo, Taint};
use crate::agent::PodUid;

/// A row of the [`NodeTable`]. Valid until a node is removed (removal moves the last row into the
/// removed one's place); hold node names (`Sym`) across removals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeIdx(pub u32);

impl NodeIdx {
    #[inline]
    pub fn ix(self) -> usize {
        self.0 as usize
    }
}

/// Distinct taint lists, shared by the nodes that carry them. Most clusters have a handful, so
/// taint checks are evaluated once per set per pod, then looked up per node.
#[derive(Debug, Default, Clone)]
pub struct TaintSets {
    sets: Vec<Vec<Taint>>,
    index: AHashMap<Vec<Taint>, u32>,
}

impl TaintSets {
    pub fn intern(&mut self, taints: &[Taint]) -> u32 {
        if let Some(&id) = self.index.get(taints) {
            return id;
        }
        let id = self.sets.len() as u32;
        self.sets.push(taints.to_vec());
        self.index.insert(taints.to_vec(), id);
        id
    }

    pub fn get(&self, id: u32) -> &[Taint] {
        &self.sets[id as usize]
    }

    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

/// A label key's values on every node (`Sym::NONE` where the node lacks the label).
#[derive(Debug, Clone)]
pub struct LabelColumn {
    pub key: Sym,
    pub values: Vec<Sym>,
}

/// A scalar resource's allocatable and requested amounts on every node.
#[derive(Debug, Clone)]
pub struct ScalarColumn {
    pub name: Sym,
    pub allocatable: Vec<i64>,
    pub requested: Vec<i64>,
}

/// The node snapshot, struct-of-arrays.
#[derive(Debug, Default, Clone)]
pub struct NodeTable {
    len: usize,
    pub name: Vec<Sym>,
    pub unschedulable: Vec<bool>,
    /// Index into [`NodeTable::taint_sets`].
    pub taint_set: Vec<u32>,
    pub taint_sets: TaintSets,
    pub labels: Vec<LabelColumn>,
    label_col_of_key: AHashMap<Sym, u32>,
    pub alloc_cpu_milli: Vec<i64>,
    pub alloc_memory: Vec<i64>,
    pub alloc_ephemeral_storage: Vec<i64>,
    pub alloc_pods: Vec<i64>,
    pub req_cpu_milli: Vec<i64>,
    pub req_memory: Vec<i64>,
    pub req_ephemeral_storage: Vec<i64>,
    /// Requests with the scoring defaults (100m CPU, 200Mi memory) for containers that set none.
    pub non_zero_cpu_milli: Vec<i64>,
    pub non_zero_memory: Vec<i64>,
    pub pod_count: Vec<u32>,
    pub scalars: Vec<ScalarColumn>,
    /// Host ports in use; empty for almost every node.
    pub host_ports: Vec<Vec<HostPort>>,
    /// Images present: (normalized-or-as-reported name, size in bytes), sorted by name.
    pub images: Vec<Vec<(Sym, i64)>>,
    image_num_nodes: AHashMap<Sym, u32>,
    /// Pods on the node (bound or assumed), in arrival order.
    pub pods: Vec<Vec<PodUid>>,
    /// Bumped whenever the row changes.
    pub generation: Vec<u64>,
    by_name: AHashMap<Sym, u32>,
    next_generation: u64,
}

impl NodeTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn idx_of(&self, name: Sym) -> Option<NodeIdx> {
        self.by_name.get(&name).map(|&i| NodeIdx(i))
    }

    /// The label column for `key`, if any node ever carried that key.
    #[inline]
    pub fn label_column(&self, key: Sym) -> Option<&[Sym]> {
        self.label_col_of_key.get(&key).map(|&c| self.labels[c as usize].values.as_slice())
    }

    /// The value of label `key` on `node` (`Sym::NONE` when absent).
    pub fn label(&self, node: NodeIdx, key: Sym) -> Sym {
        self.label_column(key).map_or(Sym::NONE, |col| col[node.ix()])
    }

    /// All labels of `node`, sorted by key Sym. For explanations and slow paths only.
    pub fn labels_of(&self, node: NodeIdx) -> Vec<(Sym, Sym)> {
        let mut out: Vec<(Sym, Sym)> = self
            .labels
            .iter()
            .filter(|c| !c.values[node.ix()].is_none())
            .map(|c| (c.key, c.values[node.ix()]))
            .collect();
        out.sort();
        out
    }

    pub fn scalar_column(&self, name: Sym) -> Option<&ScalarColumn> {
        self.scalars.iter().find(|c| c.name == name)
    }

    /// How many nodes report an image under `name`.
    pub fn image_num_nodes(&self, name: Sym) -> u32 {
        self.image_num_nodes.get(&name).copied().unwrap_or(0)
    }

    /// The size of image `name` on `node`, if present.
    pub fn image_size(&self, node: NodeIdx, name: Sym) -> Option<i64> {
        let imgs = &self.images[node.ix()];
        imgs.binary_search_by_key(&name, |(n, _)| *n).ok().map(|i| imgs[i].1)
    }

    fn bump(&mut self, i: usize) {
        self.next_generation += 1;
        self.generation[i] = self.next_generation;
    }

    /// Adds a node with no pods. Panics if a node of that name exists (callers check first).
    pub fn add_node(&mut self, spec: &NodeSpec) -> NodeIdx {
        assert!(!self.by_name.contains_key(&spec.name), "node added twice");
        let i = self.len;
        self.len += 1;
        self.name.push(spec.name);
        self.by_name.insert(spec.name, i as u32);
        self.unschedulable.push(spec.unschedulable);
        let ts = self.taint_sets.intern(&spec.taints);
        self.taint_set.push(ts);
        for col in &mut self.labels {
            col.values.push(Sym::NONE);
        }
        for &(k, v) in &spec.labels {
            let c = self.label_col(k);
            self.labels[c].values[i] = v;
        }
        self.alloc_cpu_milli.push(spec.allocatable.cpu_milli);
        self.alloc_memory.push(spec.allocatable.memory);
        self.alloc_ephemeral_storage.push(spec.allocatable.ephemeral_storage);
        self.alloc_pods.push(spec.allowed_pod_number);
        self.req_cpu_milli.push(0);
        self.req_memory.push(0);
        self.req_ephemeral_storage.push(0);
        self.non_zero_cpu_milli.push(0);
        self.non_zero_memory.push(0);
        self.pod_count.push(0);
        for col in &mut self.scalars {
            col.allocatable.push(0);
            col.requested.push(0);
        }
        for &(name, v) in &spec.allocatable.scalars {
            let c = self.scalar_col(name);
            self.scalars[c].allocatable[i] = v;
        }
        self.host_ports.push(Vec::new());
        let mut imgs = spec.images.clone();
        imgs.sort();
        imgs.dedup_by_key(|(n, _)| *n);
        for (n, _) in &imgs {
            *self.image_num_nodes.entry(*n).or_insert(0) += 1;
        }
        self.images.push(imgs);
        self.pods.push(Vec::new());
        self.generation.push(0);
        self.bump(i);
        NodeIdx(i as u32)
    }

    fn label_col(&mut self, key: Sym) -> usize {
        if let Some(&c) = self.label_col_of_key.get(&key) {
            return c as usize;
        }
        let c = self.labels.len();
        self.labels.push(LabelColumn { key, values: vec![Sym::NONE; self.len] });
        self.label_col_of_key.insert(key, c as u32);
        c
    }

    fn scalar_col(&mut self, name: Sym) -> usize {
        if let Some(c) = self.scalars.iter().position(|c| c.name == name) {
            return c;
        }
        self.scalars.push(ScalarColumn { name, allocatable: vec![0; self.len], requested: vec![0; self.len] });
        self.scalars.len() - 1
    }

    /// Removes a node that has no pods left. Returns the node moved into its row, if any.
    pub fn remove_node(&mut self, idx: NodeIdx) -> Option<NodeIdx> {
        let i = idx.ix();
        assert!(i < self.len, "node index out of range");
        assert!(self.pods[i].is_empty(), "remove a node's pods before the node");
        let name = self.name[i];
        self.by_name.remove(&name);
        for (n, _) in &self.images[i] {
            if let Some(c) = self.image_num_nodes.get_mut(n) {
                *c -= 1;
            }
        }
        let last = self.len - 1;
        self.name.swap_remove(i);
        self.unschedulable.swap_remove(i);
        self.taint_set.swap_remove(i);
        for col in &mut self.labels {
            col.values.swap_remove(i);
        }
        for v in [
            &mut self.alloc_cpu_milli,
            &mut self.alloc_memory,
            &mut self.alloc_ephemeral_storage,
            &mut self.alloc_pods,
            &mut self.req_cpu_milli,
            &mut self.req_memory,
            &mut self.req_ephemeral_storage,
            &mut self.non_zero_cpu_milli,
            &mut self.non_zero_memory,
        ] {
            v.swap_remove(i);
        }
        self.pod_count.swap_remove(i);
        for col in &mut self.scalars {
            col.allocatable.swap_remove(i);
            col.requested.swap_remove(i);
        }
        self.host_ports.swap_remove(i);
        self.images.swap_remove(i);
        self.pods.swap_remove(i);
        self.generation.swap_remove(i);
        self.len -= 1;
        if i != last {
            self.by_name.insert(self.name[i], i as u32);
            self.bump(i);
            Some(NodeIdx(i as u32))
        } else {
            None
        }
    }

    /// Adds a pod's requests, ports and identity to `node` (assume or bind).
    pub fn add_pod(&mut self, node: NodeIdx, pod: &PodInfo) {
        self.apply(node, pod, 1);
        self.host_ports[node.ix()].extend_from_slice(&pod.host_ports);
        self.pods[node.ix()].push(pod.uid);
    }

    /// Removes what [`NodeTable::add_pod`] added (forget or delete).
    pub fn remove_pod(&mut self, node: NodeIdx, pod: &PodInfo) {
        let i = node.ix();
        let pos = self.pods[i].iter().position(|u| *u == pod.uid).expect("pod is on the node it is removed from");
        self.pods[i].remove(pos);
        self.apply(node, pod, -1);
        for hp in &pod.host_ports {
            if let Some(p) = self.host_ports[i].iter().position(|h| h == hp) {
                self.host_ports[i].swap_remove(p);
            }
        }
    }

    fn apply(&mut self, node: NodeIdx, pod: &PodInfo, sign: i64) {
        let i = node.ix();
        let r = &pod.requests;
        self.req_cpu_milli[i] += sign * r.cpu_milli;
        self.req_memory[i] += sign * r.memory;
        self.req_ephemeral_storage[i] += sign * r.ephemeral_storage;
        self.non_zero_cpu_milli[i] += sign * pod.non_zero_cpu_milli;
        self.non_zero_memory[i] += sign * pod.non_zero_memory;
        self.pod_count[i] = (self.pod_count[i] as i64 + sign) as u32;
        for &(name, v) in &r.scalars {
            let c = self.scalar_col(name);
            self.scalars[c].requested[i] += sign * v;
        }
        self.bump(i);
    }

    /// Replaces a node's spec (labels, taints, allocatable, images), keeping its pods.
    pub fn update_node(&mut self, idx: NodeIdx, spec: &NodeSpec) {
        let i = idx.ix();
        assert_eq!(self.name[i], spec.name, "update_node keeps the node's name");
        self.unschedulable[i] = spec.unschedulable;
        self.taint_set[i] = self.taint_sets.intern(&spec.taints);
        for col in &mut self.labels {
            col.values[i] = Sym::NONE;
        }
        for &(k, v) in &spec.labels {
            let c = self.label_col(k);
            self.labels[c].values[i] = v;
        }
        self.alloc_cpu_milli[i] = spec.allocatable.cpu_milli;
        self.alloc_memory[i] = spec.allocatable.memory;
        self.alloc_ephemeral_storage[i] = spec.allocatable.ephemeral_storage;
        self.alloc_pods[i] = spec.allowed_pod_number;
        for col in &mut self.scalars {
            col.allocatable[i] = 0;
        }
        for &(name, v) in &spec.allocatable.scalars {
            let c = self.scalar_col(name);
            self.scalars[c].allocatable[i] = v;
        }
        for (n, _) in &self.images[i] {
            if let Some(c) = self.image_num_nodes.get_mut(n) {
                *c -= 1;
            }
        }
        let mut imgs = spec.images.clone();
        imgs.sort();
        imgs.dedup_by_key(|(n, _)| *n);
        for (n, _) in &imgs {
            *self.image_num_nodes.entry(*n).or_insert(0) += 1;
        }
        self.images[i] = imgs;
        self.bump(i);
    }
}
