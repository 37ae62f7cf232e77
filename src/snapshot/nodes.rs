//! The node table: one column per fact, one row per node (struct-of-arrays).
//!
//! The table owns the row count; every column has exactly `len()` entries. Rows are addressed by
//! [`NodeIdx`]. Removing a node swap-removes its row, so the last node takes its index.

use ahash::AHashMap;
use smallvec::SmallVec;

use super::intern::Sym;
use super::model::{HostPort, NodeSpec, PodInfo, Taint, TaintEffect};
use crate::ids::PodUid;

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

/// Taint sets holding a NoSchedule/NoExecute taint that get a row bitset
/// ([`NodeTable::hard_taint_rows`]): at most this many bitsets of `nodes / 8` bytes each (a
/// cluster has a handful of taint sets; one set per node would otherwise cost `nodes^2 / 8`).
pub const MAX_TRACKED_HARD_TAINT_SETS: usize = 64;

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

/// A sparse column becomes dense when more than `len / SCALAR_DENSE_DIVISOR` nodes carry the
/// resource (a nonzero allocatable or requested amount): dense costs 16 bytes per node, sparse 24
/// bytes per carrier, so past 1/8 of the nodes the dense rows' direct indexing is worth the memory.
pub const SCALAR_DENSE_DIVISOR: usize = 8;

/// A dense column becomes sparse again when fewer than `len / SCALAR_SPARSE_DIVISOR` nodes carry
/// the resource. The gap to [`SCALAR_DENSE_DIVISOR`] is hysteresis: a column switches at most once
/// per `len / 10` or so writes, so each O(len) conversion is amortized.
pub const SCALAR_SPARSE_DIVISOR: usize = 32;

/// One node's amounts in a sparse [`ScalarColumn`]; present only when one of them is nonzero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SparseEntry {
    node: u32,
    allocatable: i64,
    requested: i64,
}

/// The rows of a [`ScalarColumn`].
#[derive(Debug, Clone)]
enum ScalarValues {
    /// One amount per node (`len()` rows each).
    Dense { allocatable: Vec<i64>, requested: Vec<i64> },
    /// Entries sorted by node, one per carrier; nodes without one have zero of both.
    Sparse(Vec<SparseEntry>),
}

/// Whether a write made a node start or stop carrying the resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    Unchanged,
    Appeared,
    Vanished,
}

/// A scalar resource's allocatable and requested amounts per node. Dense for resources most nodes
/// carry (e.g. `nvidia.com/gpu`), sparse (memory proportional to the carriers) for the rest; see
/// [`SCALAR_DENSE_DIVISOR`]. A node without the resource reads as zero allocatable and zero
/// requested; pods may still add requests there (then it carries a requested amount only).
#[derive(Debug, Clone)]
pub struct ScalarColumn {
    pub name: Sym,
    values: ScalarValues,
    /// Nodes with a nonzero allocatable or requested amount.
    carriers: u32,
}

impl ScalarColumn {
    fn sparse(name: Sym) -> Self {
        ScalarColumn { name, values: ScalarValues::Sparse(Vec::new()), carriers: 0 }
    }

    /// The allocatable amount on `node` (0 when the node lacks the resource).
    #[inline]
    pub fn allocatable(&self, node: NodeIdx) -> i64 {
        match &self.values {
            ScalarValues::Dense { allocatable, .. } => allocatable[node.ix()],
            ScalarValues::Sparse(e) => sparse_find(e, node.0).map_or(0, |k| e[k].allocatable),
        }
    }

    /// The amount requested by the pods on `node`.
    #[inline]
    pub fn requested(&self, node: NodeIdx) -> i64 {
        match &self.values {
            ScalarValues::Dense { requested, .. } => requested[node.ix()],
            ScalarValues::Sparse(e) => sparse_find(e, node.0).map_or(0, |k| e[k].requested),
        }
    }

    /// Allocatable minus requested on `node`, with one lookup.
    #[inline]
    pub fn free(&self, node: NodeIdx) -> i64 {
        match &self.values {
            ScalarValues::Dense { allocatable, requested } => allocatable[node.ix()] - requested[node.ix()],
            ScalarValues::Sparse(e) => sparse_find(e, node.0).map_or(0, |k| e[k].allocatable - e[k].requested),
        }
    }

    /// How many nodes have a nonzero allocatable or requested amount.
    pub fn carriers(&self) -> usize {
        self.carriers as usize
    }

    pub fn is_dense(&self) -> bool {
        matches!(self.values, ScalarValues::Dense { .. })
    }

    /// The (allocatable, requested) rows when the column is dense.
    pub fn dense_rows(&self) -> Option<(&[i64], &[i64])> {
        match &self.values {
            ScalarValues::Dense { allocatable, requested } => Some((allocatable, requested)),
            ScalarValues::Sparse(_) => None,
        }
    }

    /// The (allocatable, requested) rows of a table of `len` nodes, materialized when sparse.
    pub fn to_dense(&self, len: usize) -> (Vec<i64>, Vec<i64>) {
        match &self.values {
            ScalarValues::Dense { allocatable, requested } => (allocatable.clone(), requested.clone()),
            ScalarValues::Sparse(entries) => {
                let (mut a, mut r) = (vec![0; len], vec![0; len]);
                for e in entries {
                    a[e.node as usize] = e.allocatable;
                    r[e.node as usize] = e.requested;
                }
                (a, r)
            }
        }
    }

    /// When the column is sparse: the nodes whose allocatable amount is at least `q`, in node
    /// order, into `out` (cleared first); false (and `out` untouched) when it is dense.
    pub fn sparse_nodes_allocating(&self, q: i64, out: &mut Vec<NodeIdx>) -> bool {
        match &self.values {
            ScalarValues::Dense { .. } => false,
            ScalarValues::Sparse(e) => {
                out.clear();
                out.extend(e.iter().filter(|e| e.allocatable >= q).map(|e| NodeIdx(e.node)));
                true
            }
        }
    }

    /// The nodes carrying the resource with their (allocatable, requested), in node order.
    pub fn carrier_rows(&self) -> Vec<(NodeIdx, i64, i64)> {
        match &self.values {
            ScalarValues::Dense { allocatable, requested } => (0..allocatable.len())
                .filter(|&i| allocatable[i] != 0 || requested[i] != 0)
                .map(|i| (NodeIdx(i as u32), allocatable[i], requested[i]))
                .collect(),
            ScalarValues::Sparse(e) => e.iter().map(|e| (NodeIdx(e.node), e.allocatable, e.requested)).collect(),
        }
    }

    /// Adds `delta` to the requested amount on `node`.
    fn add_requested(&mut self, node: NodeIdx, delta: i64) -> Carrier {
        self.write(node.0, |_, r| *r += delta)
    }

    /// Sets the allocatable amount on `node`.
    fn set_allocatable(&mut self, node: NodeIdx, v: i64) -> Carrier {
        self.write(node.0, |a, _| *a = v)
    }

    fn write(&mut self, node: u32, f: impl FnOnce(&mut i64, &mut i64)) -> Carrier {
        let change = match &mut self.values {
            ScalarValues::Dense { allocatable, requested } => {
                let i = node as usize;
                let before = allocatable[i] != 0 || requested[i] != 0;
                f(&mut allocatable[i], &mut requested[i]);
                let after = allocatable[i] != 0 || requested[i] != 0;
                match (before, after) {
                    (false, true) => Carrier::Appeared,
                    (true, false) => Carrier::Vanished,
                    _ => Carrier::Unchanged,
                }
            }
            ScalarValues::Sparse(entries) => match entries.binary_search_by_key(&node, |e| e.node) {
                Ok(k) => {
                    let e = &mut entries[k];
                    f(&mut e.allocatable, &mut e.requested);
                    if e.allocatable == 0 && e.requested == 0 {
                        entries.remove(k);
                        Carrier::Vanished
                    } else {
                        Carrier::Unchanged
                    }
                }
                Err(k) => {
                    let mut e = SparseEntry { node, allocatable: 0, requested: 0 };
                    f(&mut e.allocatable, &mut e.requested);
                    if e.allocatable == 0 && e.requested == 0 {
                        Carrier::Unchanged
                    } else {
                        entries.insert(k, e);
                        Carrier::Appeared
                    }
                }
            },
        };
        match change {
            Carrier::Appeared => self.carriers += 1,
            Carrier::Vanished => self.carriers -= 1,
            Carrier::Unchanged => {}
        }
        change
    }
}

#[inline]
/// Moves a node's pods of priority >= `priority` (and their `meta` rows) to the front, in their
/// order, and returns how many there are; the rows after them are left for the caller to replace.
fn keep_priority_at_least(pods: &mut [PodUid], meta: &mut [PodMeta], priority: i32) -> usize {
    let mut w = 0;
    for r in 0..pods.len() {
        if meta[r].priority >= priority {
            pods[w] = pods[r];
            meta[w] = meta[r];
            w += 1;
        }
    }
    w
}

fn sparse_find(entries: &[SparseEntry], node: u32) -> Option<usize> {
    entries.binary_search_by_key(&node, |e| e.node).ok()
}

/// The node snapshot, struct-of-arrays.
#[derive(Debug, Default, Clone)]
pub struct NodeTable {
    len: usize,
    pub name: Vec<Sym>,
    /// `spec.unschedulable`, one bit per row.
    pub unschedulable: bitvec::vec::BitVec,
    /// How many rows of `unschedulable` are true (NodeUnschedulable's filter skips itself at 0).
    unschedulable_count: usize,
    /// Index into [`NodeTable::taint_sets`].
    pub taint_set: Vec<u32>,
    pub taint_sets: TaintSets,
    /// Per taint set id: the rows carrying the set, as a row bitset ([`super::bits`]), for the
    /// first [`MAX_TRACKED_HARD_TAINT_SETS`] sets holding a NoSchedule/NoExecute taint; `None`
    /// for the other sets (and missing for sets no row carried yet).
    hard_taint_rows: Vec<Option<Vec<u64>>>,
    /// Rows whose taint set holds a NoSchedule/NoExecute taint but has no bitset.
    untracked_hard_taint_rows: usize,
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
    /// Per row, the requests of the pods nominated to the node (and how many), summed: what a
    /// cycle counting nominated pods adds to `req_*` and `pod_count` when [`NodeTable::counts_nominated`]
    /// is on. Kept by the snapshot from its [`super::nominated::NominatedSums`]
    /// ([`NodeTable::set_nominated`]); not part of a row's generation (no score reads them).
    pub nom_cpu_milli: Vec<i64>,
    pub nom_memory: Vec<i64>,
    pub nom_ephemeral_storage: Vec<i64>,
    pub nom_pods: Vec<i64>,
    /// While on, NodeResourcesFit's Filter reads each row's requests and pod count with the
    /// `nom_*` columns added (a cycle counting every nomination, `Engine::schedule_one_nominated`);
    /// off at every other time.
    counts_nominated: bool,
    /// Scalar resource columns, in order of first appearance; see [`ScalarColumn`].
    scalars: Vec<ScalarColumn>,
    scalar_col_of_name: AHashMap<Sym, u32>,
    /// The dense scalar columns: the only ones that have a row for every node.
    dense_scalars: Vec<u32>,
    /// Per node, the sparse scalar columns holding an entry for it (so node removal and update
    /// touch only the node's own resources).
    sparse_scalars_of: Vec<SmallVec<[u32; 2]>>,
    /// Host ports in use; empty for almost every node.
    pub host_ports: Vec<Vec<HostPort>>,
    /// Images present: (normalized-or-as-reported name, size in bytes), sorted by name.
    pub images: Vec<Vec<(Sym, i64)>>,
    /// Per image name: how many nodes report it, and the size the scheduler cache keeps for it
    /// (the size reported by the first node that added the name while no other node had it).
    image_states: AHashMap<Sym, (u32, i64)>,
    /// Pods on the node (bound or assumed), in arrival order.
    pub pods: Vec<Vec<PodUid>>,
    /// Beside `pods`, in the same order: each pod's priority, requests and whether it is
    /// [`PodInfo::plain_on_columns`] (what preemption's dry run reads, without a lookup per pod).
    /// Whoever reorders a node's `pods` reorders this row alike ([`NodeTable::partition_by_priority`]).
    pub pod_meta: Vec<Vec<PodMeta>>,
    /// Bumped whenever the row changes: never 0, and unique in the process (`bump`).
    pub generation: Vec<u64>,
    /// `status.declaredFeatures` as a set over the scheduler's feature registry (one word per
    /// row: upstream's `NodeInfo.DeclaredFeatures`), what NodeDeclaredFeatures' Filter tests.
    pub declared_features: Vec<super::features::FeatureSet>,
    by_name: AHashMap<Sym, u32>,
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

    /// The column of scalar resource `name`, if any node or pod ever had it.
    #[inline]
    pub fn scalar_column(&self, name: Sym) -> Option<&ScalarColumn> {
        self.scalar_col_of_name.get(&name).map(|&c| &self.scalars[c as usize])
    }

    /// The position of `name`'s column in [`NodeTable::scalar_columns`]; stable for the table's life.
    #[inline]
    pub fn scalar_column_index(&self, name: Sym) -> Option<u32> {
        self.scalar_col_of_name.get(&name).copied()
    }

    /// All scalar columns, in order of first appearance.
    pub fn scalar_columns(&self) -> &[ScalarColumn] {
        &self.scalars
    }

    /// The allocatable amount of scalar resource `name` on `node` (0 when absent).
    pub fn scalar_allocatable(&self, node: NodeIdx, name: Sym) -> i64 {
        self.scalar_column(name).map_or(0, |c| c.allocatable(node))
    }

    /// The amount of scalar resource `name` requested by the pods on `node`.
    pub fn scalar_requested(&self, node: NodeIdx, name: Sym) -> i64 {
        self.scalar_column(name).map_or(0, |c| c.requested(node))
    }

    /// Sets the allocatable amount of scalar resource `name` on `node` (outside a spec update).
    pub fn set_scalar_allocatable(&mut self, node: NodeIdx, name: Sym, v: i64) {
        assert!(node.ix() < self.len, "node index out of range");
        let c = self.scalar_col(name);
        self.write_scalar(node, c, |col| col.set_allocatable(node, v));
        self.bump(node.ix());
    }

    /// Adds `delta` to the requested amount of scalar resource `name` on `node` (outside a pod).
    pub fn add_scalar_requested(&mut self, node: NodeIdx, name: Sym, delta: i64) {
        assert!(node.ix() < self.len, "node index out of range");
        let c = self.scalar_col(name);
        self.write_scalar(node, c, |col| col.add_requested(node, delta));
        self.bump(node.ix());
    }

    /// How many nodes report an image under `name`.
    pub fn image_num_nodes(&self, name: Sym) -> u32 {
        self.image_states.get(&name).map_or(0, |s| s.0)
    }

    /// The image state the scheduler cache shares between nodes: (nodes reporting `name`, size).
    /// The size is the one of the first node that reported the name (the cache never updates it
    /// while any node still has the image), not necessarily the size a given node reports.
    pub fn image_state(&self, name: Sym) -> Option<(u32, i64)> {
        self.image_states.get(&name).copied().filter(|s| s.0 > 0)
    }

    /// Whether `node` reports an image under `name`.
    pub fn has_image(&self, node: NodeIdx, name: Sym) -> bool {
        self.images[node.ix()].binary_search_by_key(&name, |(n, _)| *n).is_ok()
    }

    /// Sorts a node's images by name, keeping the first-listed size of a repeated name, and counts
    /// them into the shared image states.
    fn add_images(&mut self, images: &[(Sym, i64)]) -> Vec<(Sym, i64)> {
        let mut imgs = images.to_vec();
        imgs.sort_by_key(|(n, _)| *n);
        imgs.dedup_by_key(|(n, _)| *n);
        for &(n, size) in &imgs {
            let st = self.image_states.entry(n).or_insert((0, size));
            if st.0 == 0 {
                st.1 = size;
            }
            st.0 += 1;
        }
        imgs
    }

    fn remove_images(&mut self, i: usize) {
        for (n, _) in &self.images[i] {
            if let Some(c) = self.image_states.get_mut(n) {
                c.0 -= 1;
            }
        }
    }

    /// The size of image `name` on `node`, if present.
    pub fn image_size(&self, node: NodeIdx, name: Sym) -> Option<i64> {
        let imgs = &self.images[node.ix()];
        imgs.binary_search_by_key(&name, |(n, _)| *n).ok().map(|i| imgs[i].1)
    }

    /// Gives row `i` a new generation, unique across every table of the process (a clone keeps
    /// its rows' generations, and each later change draws a fresh one), so a generation names one
    /// row content for good: the engine's score memo relies on it.
    fn bump(&mut self, i: usize) {
        // A plain counter, not a synchronization point: `std` atomics outside `crate::sync`.
        static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        self.generation[i] = NEXT_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether taint set `s` holds a NoSchedule or NoExecute taint (the only sets a pod can fail
    /// to tolerate in TaintToleration's Filter or PodTopologySpread's `nodeTaintsPolicy`).
    pub fn is_hard_taint_set(&self, s: u32) -> bool {
        self.taint_sets.get(s).iter().any(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
    }

    /// The rows carrying taint set `s` as a row bitset ([`super::bits`]: words past its end read
    /// 0), when `s` holds a NoSchedule/NoExecute taint and is among the first
    /// [`MAX_TRACKED_HARD_TAINT_SETS`] such sets seen; `None` otherwise. Kept up to date by node
    /// adds, updates and removals (O(1) each).
    pub fn hard_taint_rows(&self, s: u32) -> Option<&[u64]> {
        self.hard_taint_rows.get(s as usize).and_then(|b| b.as_deref())
    }

    /// Rows whose taint set holds a NoSchedule/NoExecute taint but has no
    /// [`NodeTable::hard_taint_rows`] (0 when every such row is in a bitset).
    pub fn untracked_hard_taint_rows(&self) -> usize {
        self.untracked_hard_taint_rows
    }

    /// Row `i` starts (`on`) or stops carrying taint set `s` in the hard-taint bookkeeping.
    fn mark_taint_row(&mut self, i: usize, s: u32, on: bool) {
        while self.hard_taint_rows.len() <= s as usize {
            let id = self.hard_taint_rows.len() as u32;
            let tracked = self.hard_taint_rows.iter().filter(|b| b.is_some()).count();
            let track = self.is_hard_taint_set(id) && tracked < MAX_TRACKED_HARD_TAINT_SETS;
            self.hard_taint_rows.push(track.then(Vec::new));
        }
        let hard = self.is_hard_taint_set(s);
        match &mut self.hard_taint_rows[s as usize] {
            Some(bits) => super::bits::set(bits, i, on),
            None if hard => {
                if on {
                    self.untracked_hard_taint_rows += 1;
                } else {
                    self.untracked_hard_taint_rows -= 1;
                }
            }
            None => {}
        }
    }

    /// How many nodes are unschedulable (`spec.unschedulable`).
    pub fn unschedulable_nodes(&self) -> usize {
        self.unschedulable_count
    }

    /// Adds a node with no pods. Panics if a node of that name exists (callers check first).
    pub fn add_node(&mut self, spec: &NodeSpec) -> NodeIdx {
        assert!(!self.by_name.contains_key(&spec.name), "node added twice");
        let i = self.len;
        self.len += 1;
        self.name.push(spec.name);
        self.by_name.insert(spec.name, i as u32);
        self.unschedulable.push(spec.unschedulable);
        self.unschedulable_count += spec.unschedulable as usize;
        let ts = self.taint_sets.intern(&spec.taints);
        self.taint_set.push(ts);
        self.mark_taint_row(i, ts, true);
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
        self.nom_cpu_milli.push(0);
        self.nom_memory.push(0);
        self.nom_ephemeral_storage.push(0);
        self.nom_pods.push(0);
        self.sparse_scalars_of.push(SmallVec::new());
        for &c in &self.dense_scalars {
            if let ScalarValues::Dense { allocatable, requested } = &mut self.scalars[c as usize].values {
                allocatable.push(0);
                requested.push(0);
            }
        }
        let sparse_again: SmallVec<[u32; 4]> = self
            .dense_scalars
            .iter()
            .copied()
            .filter(|&c| self.scalars[c as usize].carriers() * SCALAR_SPARSE_DIVISOR < self.len)
            .collect();
        for c in sparse_again {
            self.make_sparse(c as usize);
        }
        for &(name, v) in &spec.allocatable.scalars {
            let c = self.scalar_col(name);
            self.write_scalar(NodeIdx(i as u32), c, |col| col.set_allocatable(NodeIdx(i as u32), v));
        }
        self.host_ports.push(Vec::new());
        let imgs = self.add_images(&spec.images);
        self.images.push(imgs);
        self.pods.push(Vec::new());
        self.pod_meta.push(Vec::new());
        self.generation.push(0);
        self.declared_features.push(spec.declared_feature_set);
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
        if let Some(&c) = self.scalar_col_of_name.get(&name) {
            return c as usize;
        }
        let c = self.scalars.len();
        self.scalars.push(ScalarColumn::sparse(name));
        self.scalar_col_of_name.insert(name, c as u32);
        c
    }

    /// Applies one write to column `c` at `node`, keeping the per-node lists and the column's
    /// representation in step with its carriers.
    fn write_scalar(&mut self, node: NodeIdx, c: usize, w: impl FnOnce(&mut ScalarColumn) -> Carrier) {
        let col = &mut self.scalars[c];
        let change = w(col);
        let (dense, carriers) = (col.is_dense(), col.carriers());
        match (change, dense) {
            (Carrier::Appeared, false) => {
                self.sparse_scalars_of[node.ix()].push(c as u32);
                if carriers * SCALAR_DENSE_DIVISOR > self.len {
                    self.make_dense(c);
                }
            }
            (Carrier::Vanished, false) => {
                let list = &mut self.sparse_scalars_of[node.ix()];
                let p = list.iter().position(|&x| x as usize == c).expect("a sparse carrier lists its column");
                list.swap_remove(p);
            }
            (Carrier::Vanished, true) if carriers * SCALAR_SPARSE_DIVISOR < self.len => self.make_sparse(c),
            _ => {}
        }
    }

    fn make_dense(&mut self, c: usize) {
        let col = &mut self.scalars[c];
        let (allocatable, requested) = col.to_dense(self.len);
        let ScalarValues::Sparse(entries) =
            std::mem::replace(&mut col.values, ScalarValues::Dense { allocatable, requested })
        else {
            unreachable!("make_dense on a dense column")
        };
        for e in entries {
            let list = &mut self.sparse_scalars_of[e.node as usize];
            let p = list.iter().position(|&x| x as usize == c).expect("a sparse carrier lists its column");
            list.swap_remove(p);
        }
        self.dense_scalars.push(c as u32);
    }

    fn make_sparse(&mut self, c: usize) {
        let col = &mut self.scalars[c];
        let entries: Vec<SparseEntry> = col
            .carrier_rows()
            .into_iter()
            .map(|(n, allocatable, requested)| SparseEntry { node: n.0, allocatable, requested })
            .collect();
        for e in &entries {
            self.sparse_scalars_of[e.node as usize].push(c as u32);
        }
        col.values = ScalarValues::Sparse(entries);
        let p = self.dense_scalars.iter().position(|&x| x as usize == c).expect("a dense column is listed");
        self.dense_scalars.swap_remove(p);
    }

    /// Removes a node that has no pods left. Returns the node moved into its row, if any.
    pub fn remove_node(&mut self, idx: NodeIdx) -> Option<NodeIdx> {
        let i = idx.ix();
        assert!(i < self.len, "node index out of range");
        assert!(self.pods[i].is_empty(), "remove a node's pods before the node");
        let name = self.name[i];
        self.by_name.remove(&name);
        self.remove_images(i);
        let last = self.len - 1;
        self.name.swap_remove(i);
        self.unschedulable_count -= self.unschedulable.swap_remove(i) as usize;
        self.mark_taint_row(i, self.taint_set[i], false);
        if i != last {
            let moved = self.taint_set[last];
            self.mark_taint_row(last, moved, false);
            self.mark_taint_row(i, moved, true);
        }
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
            &mut self.nom_cpu_milli,
            &mut self.nom_memory,
            &mut self.nom_ephemeral_storage,
            &mut self.nom_pods,
        ] {
            v.swap_remove(i);
        }
        self.pod_count.swap_remove(i);
        self.remove_scalar_row(i, last);
        self.host_ports.swap_remove(i);
        self.images.swap_remove(i);
        self.pods.swap_remove(i);
        self.pod_meta.swap_remove(i);
        self.generation.swap_remove(i);
        self.declared_features.swap_remove(i);
        self.len -= 1;
        if i != last {
            self.by_name.insert(self.name[i], i as u32);
            self.bump(i);
            Some(NodeIdx(i as u32))
        } else {
            None
        }
    }

    /// Drops row `i` of every scalar column and renumbers row `last` to `i` (swap-remove).
    fn remove_scalar_row(&mut self, i: usize, last: usize) {
        for &c in &self.dense_scalars {
            let col = &mut self.scalars[c as usize];
            if let ScalarValues::Dense { allocatable, requested } = &mut col.values {
                if allocatable[i] != 0 || requested[i] != 0 {
                    col.carriers -= 1;
                }
                allocatable.swap_remove(i);
                requested.swap_remove(i);
            }
        }
        for &c in &self.sparse_scalars_of[i] {
            let col = &mut self.scalars[c as usize];
            if let ScalarValues::Sparse(entries) = &mut col.values {
                let k = sparse_find(entries, i as u32).expect("a listed sparse column has the node's entry");
                entries.remove(k);
                col.carriers -= 1;
            }
        }
        if i != last {
            for &c in &self.sparse_scalars_of[last] {
                if let ScalarValues::Sparse(entries) = &mut self.scalars[c as usize].values {
                    let k = sparse_find(entries, last as u32).expect("a listed sparse column has the node's entry");
                    let mut e = entries.remove(k);
                    e.node = i as u32;
                    let at = entries.binary_search_by_key(&e.node, |x| x.node).unwrap_err();
                    entries.insert(at, e);
                }
            }
        }
        self.sparse_scalars_of.swap_remove(i);
    }

    /// Adds a pod's requests, ports and identity to `node` (assume or bind).
    pub fn add_pod(&mut self, node: NodeIdx, pod: &PodInfo) {
        self.apply(node, pod, 1);
        self.host_ports[node.ix()].extend_from_slice(&pod.host_ports);
        self.pods[node.ix()].push(pod.uid);
        self.pod_meta[node.ix()].push(PodMeta::of(pod));
    }

    /// Removes what [`NodeTable::add_pod`] added (forget or delete).
    pub fn remove_pod(&mut self, node: NodeIdx, pod: &PodInfo) {
        let i = node.ix();
        let pos = self.pods[i].iter().position(|u| *u == pod.uid).expect("pod is on the node it is removed from");
        self.pods[i].remove(pos);
        self.pod_meta[i].remove(pos);
        self.apply(node, pod, -1);
        // Upstream's `HostPortInfo` is a set: removing a pod frees each of its ports even when
        // another pod on the node (bound by nodeName, past the NodePorts filter) declares it too.
        // Removing every copy keeps the distinct entries equal to that set.
        if !pod.host_ports.is_empty() {
            self.host_ports[i].retain(|h| !pod.host_ports.contains(h));
        }
    }

    fn apply(&mut self, node: NodeIdx, pod: &PodInfo, sign: i64) {
        let i = node.ix();
        self.apply_core(i, pod, sign);
        for &(name, v) in &pod.requests.scalars {
            if v == 0 {
                continue;
            }
            let c = self.scalar_col(name);
            self.write_scalar(node, c, |col| col.add_requested(node, sign * v));
        }
        self.bump(i);
    }

    /// A pod's CPU, memory and ephemeral-storage requests (and their non-zero forms) and its place
    /// in the pod count, added to (`sign` 1) or taken from (-1) row `i`.
    fn apply_core(&mut self, i: usize, pod: &PodInfo, sign: i64) {
        let r = &pod.requests;
        self.req_cpu_milli[i] += sign * r.cpu_milli;
        self.req_memory[i] += sign * r.memory;
        self.req_ephemeral_storage[i] += sign * r.ephemeral_storage;
        self.non_zero_cpu_milli[i] += sign * pod.non_zero_cpu_milli;
        self.non_zero_memory[i] += sign * pod.non_zero_memory;
        self.pod_count[i] = (self.pod_count[i] as i64 + sign) as u32;
    }

    /// Moves only the request columns and the pod count of `node` by `pod` (`sign` 1 adds, -1
    /// takes away), leaving the pod list, host ports and scalar resources alone: preemption's dry
    /// run takes a node's lower-priority pods off (and reprieves them) on the columns when nothing
    /// else it filters with reads them. The caller restores the row.
    pub fn shift_core_requests(&mut self, node: NodeIdx, pod: &PodInfo, sign: i64) {
        self.apply_core(node.ix(), pod, sign);
        self.bump(node.ix());
    }

    /// Reorders `node`'s pods as a stable partition: those of priority >= `priority` first, then
    /// the others, each group in its order; then the pods of `back` (not on the node's list) are
    /// appended in order. The pod list and [`NodeTable::pod_meta`] move alike; the columns do not.
    pub fn partition_by_priority<'a>(
        &mut self,
        node: NodeIdx,
        priority: i32,
        keep_lower: bool,
        back: impl IntoIterator<Item = &'a PodInfo>,
    ) {
        let i = node.ix();
        let (pods, meta) = (&mut self.pods[i], &mut self.pod_meta[i]);
        let lower: SmallVec<[(PodUid, PodMeta); 8]> = if keep_lower {
            (0..pods.len()).filter(|&r| meta[r].priority < priority).map(|r| (pods[r], meta[r])).collect()
        } else {
            SmallVec::new()
        };
        let w = keep_priority_at_least(pods, meta, priority);
        pods.truncate(w);
        meta.truncate(w);
        for (u, m) in lower {
            pods.push(u);
            meta.push(m);
        }
        for p in back {
            pods.push(p.uid);
            meta.push(PodMeta::of(p));
        }
    }

    /// [`NodeTable::partition_by_priority`] with the pods to append given by their positions in
    /// the node's list as it is now: the pods of priority >= `priority` stay first, in their order,
    /// then the pods at `back`, in that order. `back` holds every position of a lower-priority pod
    /// once (preemption's dry run: the reprieved pods, then the victims). When `back` is the list's
    /// tail in order (the other pods already first), the list is left as it is.
    pub fn partition_by_priority_to(&mut self, node: NodeIdx, priority: i32, back: &[u32]) {
        let i = node.ix();
        let (pods, meta) = (&mut self.pods[i], &mut self.pod_meta[i]);
        // `back` names each lower-priority position once: if it is `w, w+1, ..., len-1`, the
        // positions before `w` are the other pods, in order, and nothing moves.
        let w = pods.len().wrapping_sub(back.len());
        if back.len() <= pods.len() && back.iter().enumerate().all(|(k, &r)| r as usize == w + k) {
            debug_assert!(meta[..w].iter().all(|m| m.priority >= priority), "back holds every lower-priority pod");
            return;
        }
        let tail: SmallVec<[(PodUid, PodMeta); 8]> =
            back.iter().map(|&r| (pods[r as usize], meta[r as usize])).collect();
        let w = keep_priority_at_least(pods, meta, priority);
        assert_eq!(w + tail.len(), pods.len(), "back holds every lower-priority pod once");
        pods.truncate(w);
        meta.truncate(w);
        for (u, m) in tail {
            pods.push(u);
            meta.push(m);
        }
    }

    /// [`NodeTable::shift_core_requests`] for several pods at once: `sum` is their requests added
    /// up ([`CoreRequests::add`]); the row ends as shifting them one by one leaves it.
    pub fn shift_core_sum(&mut self, node: NodeIdx, sum: &CoreRequests, sign: i64) {
        let i = node.ix();
        self.req_cpu_milli[i] += sign * sum.cpu_milli;
        self.req_memory[i] += sign * sum.memory;
        self.req_ephemeral_storage[i] += sign * sum.ephemeral_storage;
        self.non_zero_cpu_milli[i] += sign * sum.non_zero_cpu_milli;
        self.non_zero_memory[i] += sign * sum.non_zero_memory;
        self.pod_count[i] = (self.pod_count[i] as i64 + sign * sum.pods) as u32;
        self.bump(i);
    }

    /// Sets row `node`'s nominated columns (`nom_*`) to `sum` (the requests of every pod nominated
    /// to the node, summed). Leaves the row's generation: no score reads these columns.
    pub fn set_nominated(&mut self, node: NodeIdx, sum: &CoreRequests) {
        let i = node.ix();
        self.nom_cpu_milli[i] = sum.cpu_milli;
        self.nom_memory[i] = sum.memory;
        self.nom_ephemeral_storage[i] = sum.ephemeral_storage;
        self.nom_pods[i] = sum.pods;
    }

    /// Adds `sign` times `sum` to row `node`'s nominated columns (a cycle leaving the pod's own
    /// nomination out, then putting it back). Leaves the row's generation.
    pub fn shift_nominated(&mut self, node: NodeIdx, sum: &CoreRequests, sign: i64) {
        let i = node.ix();
        self.nom_cpu_milli[i] += sign * sum.cpu_milli;
        self.nom_memory[i] += sign * sum.memory;
        self.nom_ephemeral_storage[i] += sign * sum.ephemeral_storage;
        self.nom_pods[i] += sign * sum.pods;
    }

    /// Zeroes every row's nominated columns.
    pub fn clear_nominated(&mut self) {
        for v in [&mut self.nom_cpu_milli, &mut self.nom_memory, &mut self.nom_ephemeral_storage, &mut self.nom_pods] {
            v.fill(0);
        }
    }

    /// Whether NodeResourcesFit's Filter adds the nominated columns ([`NodeTable::nom_cpu_milli`], ...).
    pub fn counts_nominated(&self) -> bool {
        self.counts_nominated
    }

    /// Turns [`NodeTable::counts_nominated`] on or off (the engine, around one filter pass).
    pub fn set_counts_nominated(&mut self, on: bool) {
        self.counts_nominated = on;
    }

    /// Replaces a node's spec (labels, taints, allocatable, images), keeping its pods.
    pub fn update_node(&mut self, idx: NodeIdx, spec: &NodeSpec) {
        let i = idx.ix();
        assert_eq!(self.name[i], spec.name, "update_node keeps the node's name");
        self.unschedulable_count -= self.unschedulable[i] as usize;
        self.unschedulable.set(i, spec.unschedulable);
        self.unschedulable_count += spec.unschedulable as usize;
        self.mark_taint_row(i, self.taint_set[i], false);
        self.taint_set[i] = self.taint_sets.intern(&spec.taints);
        self.mark_taint_row(i, self.taint_set[i], true);
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
        let held: SmallVec<[u32; 8]> = self.sparse_scalars_of[i].iter().chain(&self.dense_scalars).copied().collect();
        for c in held {
            let c = c as usize;
            let col = &self.scalars[c];
            if col.allocatable(idx) != 0 && !spec.allocatable.scalars.iter().any(|(n, _)| *n == col.name) {
                self.write_scalar(idx, c, |col| col.set_allocatable(idx, 0));
            }
        }
        for &(name, v) in &spec.allocatable.scalars {
            let c = self.scalar_col(name);
            self.write_scalar(idx, c, |col| col.set_allocatable(idx, v));
        }
        self.remove_images(i);
        self.images[i] = self.add_images(&spec.images);
        self.declared_features[i] = spec.declared_feature_set;
        self.bump(i);
    }
}

#[cfg(test)]
impl NodeTable {
    /// Asserts the scalar columns' bookkeeping: the name index, each representation's rows, the
    /// carrier counts, the dense list and the per-node sparse lists.
    fn check_scalar_invariants(&self) {
        assert_eq!(self.scalar_col_of_name.len(), self.scalars.len());
        assert_eq!(self.sparse_scalars_of.len(), self.len);
        let mut listed = 0;
        for (c, col) in self.scalars.iter().enumerate() {
            assert_eq!(self.scalar_col_of_name.get(&col.name), Some(&(c as u32)));
            let in_dense_list = self.dense_scalars.contains(&(c as u32));
            match &col.values {
                ScalarValues::Dense { allocatable, requested } => {
                    assert!(in_dense_list, "dense column {c} is listed");
                    assert_eq!((allocatable.len(), requested.len()), (self.len, self.len));
                    let nz = (0..self.len).filter(|&i| allocatable[i] != 0 || requested[i] != 0).count();
                    assert_eq!(col.carriers(), nz, "dense carriers of column {c}");
                }
                ScalarValues::Sparse(entries) => {
                    assert!(!in_dense_list, "sparse column {c} is not in the dense list");
                    assert!(entries.windows(2).all(|w| w[0].node < w[1].node), "sorted, unique");
                    for e in entries {
                        assert!((e.node as usize) < self.len);
                        assert!(e.allocatable != 0 || e.requested != 0, "no all-zero entries");
                        assert!(self.sparse_scalars_of[e.node as usize].contains(&(c as u32)));
                    }
                    assert_eq!(col.carriers(), entries.len());
                    listed += entries.len();
                }
            }
        }
        assert_eq!(self.sparse_scalars_of.iter().map(|l| l.len()).sum::<usize>(), listed, "no stale list entries");
        let mut dense = self.dense_scalars.clone();
        dense.sort();
        dense.dedup();
        assert_eq!(dense.len(), self.dense_scalars.len(), "dense list has no duplicates");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::snapshot::testing::MakePod;
    use crate::snapshot::{Resources, Snapshot};

    const RESOURCES: usize = 5;

    fn resource_names(snap: &mut Snapshot) -> Vec<Sym> {
        (0..RESOURCES).map(|r| snap.interner.intern(&format!("example.com/r{r}"))).collect()
    }

    fn resources(names: &[Sym], amounts: &BTreeMap<u8, i64>) -> Resources {
        let mut r = Resources::default();
        let mut scalars: Vec<(Sym, i64)> = amounts.iter().map(|(&k, &v)| (names[k as usize], v)).collect();
        scalars.sort();
        r.scalars = scalars.into_iter().collect();
        r
    }

    fn node_spec(snap: &mut Snapshot, name: &str, names: &[Sym], alloc: &BTreeMap<u8, i64>) -> NodeSpec {
        NodeSpec {
            name: snap.interner.intern(name),
            allocatable: resources(names, alloc),
            allowed_pod_number: 110,
            ..Default::default()
        }
    }

    #[test]
    fn promotion_and_demotion_follow_carriers() {
        // 64 nodes: a column turns dense past 64/8 = 8 carriers and sparse again below 64/32 = 2.
        let mut snap = Snapshot::new();
        let x = snap.interner.intern("example.com/x");
        let mut t = NodeTable::new();
        for i in 0..64 {
            t.add_node(&node_spec(&mut snap, &format!("n{i}"), &[], &BTreeMap::new()));
        }
        // (node, allocatable to set, carriers after, dense after)
        let steps: &[(u32, i64, usize, bool)] = &[
            (0, 1, 1, false),
            (1, 1, 2, false),
            (2, 1, 3, false),
            (3, 1, 4, false),
            (4, 1, 5, false),
            (5, 1, 6, false),
            (6, 1, 7, false),
            (7, 1, 8, false),
            (8, 1, 9, true),
            (8, 5, 9, true),
            (8, 0, 8, true),
            (7, 0, 7, true),
            (6, 0, 6, true),
            (5, 0, 5, true),
            (4, 0, 4, true),
            (3, 0, 3, true),
            (2, 0, 2, true),
            (1, 0, 1, false),
            (1, 0, 1, false),
            (0, 0, 0, false),
        ];
        for &(node, v, carriers, dense) in steps {
            t.set_scalar_allocatable(NodeIdx(node), x, v);
            t.check_scalar_invariants();
            let col = t.scalar_column(x).unwrap();
            assert_eq!((col.carriers(), col.is_dense()), (carriers, dense), "after setting node {node} to {v}");
            assert_eq!(col.allocatable(NodeIdx(node)), v);
        }
    }

    #[test]
    fn one_resource_per_node_stays_sparse() {
        // SchedulingWithExtendedResource's shape: node i alone has foo.com/bar-i. Columns created while
        // the table is tiny start dense and turn sparse as it grows.
        let mut snap = Snapshot::new();
        let mut t = NodeTable::new();
        let n = 200;
        for i in 0..n {
            let r = snap.interner.intern(&format!("foo.com/bar-{i}"));
            let mut spec = node_spec(&mut snap, &format!("n{i}"), &[], &BTreeMap::new());
            spec.allocatable.scalars.push((r, 1));
            t.add_node(&spec);
        }
        t.check_scalar_invariants();
        assert_eq!(t.scalar_columns().len(), n);
        assert!(t.scalar_columns().iter().all(|c| !c.is_dense() && c.carriers() == 1));
        for i in 0..n {
            let col = t.scalar_column(snap.interner.intern(&format!("foo.com/bar-{i}"))).unwrap();
            for j in [0, i, n - 1] {
                let want = i64::from(i == j);
                assert_eq!(col.allocatable(NodeIdx(j as u32)), want, "bar-{i} on n{j}");
            }
        }
    }

    #[test]
    fn requests_on_a_node_without_the_resource() {
        // A pod bound where the resource is absent (e.g. the node was updated away from it): the
        // request is kept, free goes negative, and unplacing the pod leaves no entry behind.
        let mut snap = Snapshot::new();
        let names = resource_names(&mut snap);
        let mut t = NodeTable::new();
        let alloc = BTreeMap::from([(0u8, 4i64)]);
        for i in 0..16 {
            t.add_node(&node_spec(&mut snap, &format!("n{i}"), &names, &alloc));
        }
        let mut pod = MakePod::new(&mut snap, "p").build();
        pod.requests = resources(&names, &BTreeMap::from([(0u8, 3i64), (1u8, 2i64)]));
        let n = NodeIdx(3);
        t.add_pod(n, &pod);
        t.check_scalar_invariants();
        let (r0, r1) = (t.scalar_column(names[0]).unwrap(), t.scalar_column(names[1]).unwrap());
        assert_eq!((r0.allocatable(n), r0.requested(n), r0.free(n)), (4, 3, 1));
        assert_eq!((r1.allocatable(n), r1.requested(n), r1.free(n), r1.carriers()), (0, 2, -2, 1));
        t.remove_pod(n, &pod);
        t.check_scalar_invariants();
        let r1 = t.scalar_column(names[1]).unwrap();
        assert_eq!((r1.requested(n), r1.carriers()), (0, 0));
    }

    #[derive(Debug, Clone)]
    enum Op {
        AddNode(u8, BTreeMap<u8, i64>),
        UpdateNode(u8, BTreeMap<u8, i64>),
        RemoveNode(u8),
        Place(u8, BTreeMap<u8, i64>),
        Unplace(u8),
    }

    /// Amounts over the resources: r0 is on most nodes (dense), the others on few (sparse), and
    /// zero amounts appear too.
    fn amounts() -> impl Strategy<Value = BTreeMap<u8, i64>> {
        let res = prop_oneof![5 => Just(0u8), 1 => 1u8..RESOURCES as u8];
        proptest::collection::btree_map(res, 0i64..4, 0..3)
    }

    fn op() -> impl Strategy<Value = Op> {
        let name = 0u8..48;
        prop_oneof![
            5 => (name.clone(), amounts()).prop_map(|(n, a)| Op::AddNode(n, a)),
            2 => (name.clone(), amounts()).prop_map(|(n, a)| Op::UpdateNode(n, a)),
            1 => name.clone().prop_map(Op::RemoveNode),
            4 => (name, amounts()).prop_map(|(n, a)| Op::Place(n, a)),
            2 => any::<u8>().prop_map(Op::Unplace),
        ]
    }

    /// The plain model: allocatable per (node, resource) and the placed pods' requests.
    #[derive(Default)]
    struct Model {
        alloc: BTreeMap<u8, BTreeMap<u8, i64>>,
        pods: Vec<(u8, PodInfo, BTreeMap<u8, i64>)>,
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
        #[test]
        fn scalar_columns_match_a_plain_model(ops in proptest::collection::vec(op(), 1..240)) {
            let mut snap = Snapshot::new();
            let names = resource_names(&mut snap);
            let mut t = NodeTable::new();
            let mut m = Model::default();
            for op in ops {
                match op {
                    Op::AddNode(n, a) => {
                        if m.alloc.contains_key(&n) {
                            continue;
                        }
                        t.add_node(&node_spec(&mut snap, &format!("n{n}"), &names, &a));
                        m.alloc.insert(n, a);
                    }
                    Op::UpdateNode(n, a) => {
                        if !m.alloc.contains_key(&n) {
                            continue;
                        }
                        let spec = node_spec(&mut snap, &format!("n{n}"), &names, &a);
                        t.update_node(t.idx_of(spec.name).unwrap(), &spec);
                        m.alloc.insert(n, a);
                    }
                    Op::RemoveNode(n) => {
                        if !m.alloc.contains_key(&n) {
                            continue;
                        }
                        let idx = t.idx_of(snap.interner.intern(&format!("n{n}"))).unwrap();
                        for (_, pod, _) in m.pods.iter().filter(|(pn, _, _)| *pn == n) {
                            t.remove_pod(idx, pod);
                        }
                        m.pods.retain(|(pn, _, _)| *pn != n);
                        t.remove_node(idx);
                        m.alloc.remove(&n);
                    }
                    Op::Place(n, req) => {
                        if !m.alloc.contains_key(&n) {
                            continue;
                        }
                        let mut pod = MakePod::new(&mut snap, "p").build();
                        pod.requests = resources(&names, &req);
                        t.add_pod(t.idx_of(snap.interner.intern(&format!("n{n}"))).unwrap(), &pod);
                        m.pods.push((n, pod, req));
                    }
                    Op::Unplace(k) => {
                        if m.pods.is_empty() {
                            continue;
                        }
                        let (n, pod, _) = m.pods.remove(k as usize % m.pods.len());
                        t.remove_pod(t.idx_of(snap.interner.intern(&format!("n{n}"))).unwrap(), &pod);
                    }
                }
                t.check_scalar_invariants();
                prop_assert_eq!(t.len(), m.alloc.len());
                for (&n, alloc) in &m.alloc {
                    let idx = t.idx_of(snap.interner.intern(&format!("n{n}"))).unwrap();
                    for r in 0..RESOURCES as u8 {
                        let want_alloc = alloc.get(&r).copied().unwrap_or(0);
                        let want_req: i64 = m
                            .pods
                            .iter()
                            .filter(|(pn, _, _)| *pn == n)
                            .map(|(_, _, q)| q.get(&r).copied().unwrap_or(0))
                            .sum();
                        let name = names[r as usize];
                        prop_assert_eq!(t.scalar_allocatable(idx, name), want_alloc, "alloc n{} r{}", n, r);
                        prop_assert_eq!(t.scalar_requested(idx, name), want_req, "requested n{} r{}", n, r);
                        if let Some(col) = t.scalar_column(name) {
                            prop_assert_eq!(col.free(idx), want_alloc - want_req);
                        }
                    }
                }
            }
        }
    }

    /// The taint set of a test node: `v` picks one of 400 sets (far more than
    /// [`MAX_TRACKED_HARD_TAINT_SETS`] hard ones): even values NoSchedule, odd PreferNoSchedule,
    /// 0 no taint.
    fn taint_spec(snap: &mut Snapshot, name: &str, v: u16) -> NodeSpec {
        let mut spec = NodeSpec { name: snap.interner.intern(name), allowed_pod_number: 110, ..Default::default() };
        if v > 0 {
            let effect = if v.is_multiple_of(2) { TaintEffect::NoSchedule } else { TaintEffect::PreferNoSchedule };
            spec.taints =
                vec![Taint { key: snap.interner.intern("k"), value: snap.interner.intern(&format!("v{v}")), effect }];
        }
        spec
    }

    #[test]
    fn hard_taint_sets_past_the_cap_are_counted_untracked() {
        let mut snap = Snapshot::new();
        let mut t = NodeTable::new();
        // Node i carries hard set i (v = 2i + 2): the sets past the cap have no bitset.
        for i in 0..MAX_TRACKED_HARD_TAINT_SETS + 6 {
            t.add_node(&taint_spec(&mut snap, &format!("n{i}"), 2 * i as u16 + 2));
        }
        t.add_node(&taint_spec(&mut snap, "soft", 1));
        assert_eq!(t.untracked_hard_taint_rows(), 6);
        assert!(t.hard_taint_rows(t.taint_set[0]).is_some());
        assert!(t.hard_taint_rows(t.taint_set[MAX_TRACKED_HARD_TAINT_SETS]).is_none());
        assert!(t.hard_taint_rows(t.taint_set[MAX_TRACKED_HARD_TAINT_SETS + 6]).is_none(), "soft set");
        // Untracked rows removed (or updated to a tracked set): the count follows.
        let last = format!("n{}", MAX_TRACKED_HARD_TAINT_SETS + 5);
        t.remove_node(t.idx_of(snap.interner.intern(&last)).unwrap());
        let spec = taint_spec(&mut snap, &format!("n{MAX_TRACKED_HARD_TAINT_SETS}"), 2);
        t.update_node(t.idx_of(spec.name).unwrap(), &spec);
        assert_eq!(t.untracked_hard_taint_rows(), 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
        /// The hard-taint row bitsets and the untracked count equal a recount from the `taint_set`
        /// column after any node adds, updates (taints changed) and removals.
        #[test]
        fn hard_taint_rows_equal_a_recount(ops in proptest::collection::vec((0u8..3, 0u8..40, 0u16..400), 1..400)) {
            let mut snap = Snapshot::new();
            let mut t = NodeTable::new();
            let mut live: Vec<u8> = Vec::new();
            for (op, n, v) in ops {
                let name = format!("n{n}");
                match op {
                    0 if !live.contains(&n) => {
                        t.add_node(&taint_spec(&mut snap, &name, v));
                        live.push(n);
                    }
                    1 if live.contains(&n) => {
                        let spec = taint_spec(&mut snap, &name, v);
                        t.update_node(t.idx_of(spec.name).unwrap(), &spec);
                    }
                    2 if live.contains(&n) => {
                        t.remove_node(t.idx_of(snap.interner.intern(&name)).unwrap());
                        live.retain(|&x| x != n);
                    }
                    _ => continue,
                }
                let mut untracked = 0;
                let mut tracked = 0;
                for s in 0..t.taint_sets.len() as u32 {
                    let want = crate::snapshot::bits::from_fn(t.len(), |r| t.taint_set[r] == s);
                    match t.hard_taint_rows(s) {
                        Some(bits) => {
                            prop_assert!(t.is_hard_taint_set(s));
                            prop_assert_eq!(crate::snapshot::bits::trimmed(bits), crate::snapshot::bits::trimmed(&want), "set {}", s);
                            tracked += 1;
                        }
                        None if t.is_hard_taint_set(s) => untracked += t.taint_set.iter().filter(|&&x| x == s).count(),
                        None => {}
                    }
                }
                prop_assert!(tracked <= MAX_TRACKED_HARD_TAINT_SETS);
                prop_assert_eq!(t.untracked_hard_taint_rows(), untracked);
            }
        }
    }
}

/// The request columns [`NodeTable::shift_core_requests`] moves, summed over some pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreRequests {
    pub cpu_milli: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub non_zero_cpu_milli: i64,
    pub non_zero_memory: i64,
    pub pods: i64,
}

impl CoreRequests {
    /// Adds `pod`'s requests (and one pod).
    pub fn add(&mut self, pod: &PodInfo) {
        let r = &pod.requests;
        self.cpu_milli += r.cpu_milli;
        self.memory += r.memory;
        self.ephemeral_storage += r.ephemeral_storage;
        self.non_zero_cpu_milli += pod.non_zero_cpu_milli;
        self.non_zero_memory += pod.non_zero_memory;
        self.pods += 1;
    }
}

/// What preemption's dry run reads of a placed pod, kept beside the node's pod list
/// ([`NodeTable::pod_meta`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodMeta {
    pub priority: i32,
    /// [`PodInfo::plain_on_columns`].
    pub plain: bool,
    /// `status.startTime` is set (`PodConstraints::start_time_known`).
    pub start_time_known: bool,
    /// `PodConstraints::start_time_ms`, which `MoreImportantPod` reads.
    pub start_time_ms: i64,
    pub requests: CoreRequests,
}

impl PodMeta {
    pub fn of(pod: &PodInfo) -> PodMeta {
        let mut requests = CoreRequests::default();
        requests.add(pod);
        PodMeta {
            priority: pod.priority,
            plain: pod.plain_on_columns(),
            start_time_known: pod.constraints.start_time_known,
            start_time_ms: pod.constraints.start_time_ms,
            requests,
        }
    }
}

impl CoreRequests {
    /// Adds the sum of other pods.
    pub fn add_sum(&mut self, other: &CoreRequests) {
        self.cpu_milli += other.cpu_milli;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.non_zero_cpu_milli += other.non_zero_cpu_milli;
        self.non_zero_memory += other.non_zero_memory;
        self.pods += other.pods;
    }

    /// Subtracts another sum (the row's change when those pods leave).
    pub fn sub_sum(&mut self, other: &CoreRequests) {
        self.cpu_milli -= other.cpu_milli;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.non_zero_cpu_milli -= other.non_zero_cpu_milli;
        self.non_zero_memory -= other.non_zero_memory;
        self.pods -= other.pods;
    }
}

#[cfg(test)]
mod partition_to_tests {
    use super::*;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::Snapshot;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// `partition_by_priority_to` as it was before its no-move shortcut: the pods of priority
    /// >= `priority` in order, then those at `back`.
    fn reference(pods: &[PodUid], meta: &[PodMeta], priority: i32, back: &[u32]) -> Vec<(PodUid, PodMeta)> {
        let mut out: Vec<(PodUid, PodMeta)> =
            pods.iter().zip(meta).filter(|(_, m)| m.priority >= priority).map(|(u, m)| (*u, *m)).collect();
        out.extend(back.iter().map(|&r| (pods[r as usize], meta[r as usize])));
        out
    }

    proptest! {
        /// With or without the shortcut (`back` already the list's tail in order), the node's pod
        /// list and `pod_meta` end as the reference leaves them.
        #[test]
        fn partition_to_matches_the_reference(
            prios in proptest::collection::vec(0i32..3, 0..8),
            priority in 0i32..3,
            shuffle in any::<u64>(),
            keep_order in any::<bool>(),
        ) {
            let mut snap = Snapshot::new();
            let node = MakeNode::new(&mut snap, "n").capacity(100_000, 1 << 40).pods(110).add();
            let name = snap.nodes.name[node.ix()];
            for (i, &p) in prios.iter().enumerate() {
                let pod = Arc::new(MakePod::new(&mut snap, &format!("p{i}")).priority(p).req(10, 10).build());
                snap.place_pod(pod, name).expect("placed");
            }
            let pods = snap.nodes.pods[node.ix()].clone();
            let meta = snap.nodes.pod_meta[node.ix()].clone();
            let mut back: Vec<u32> =
                (0..pods.len() as u32).filter(|&r| meta[r as usize].priority < priority).collect();
            if !keep_order && back.len() > 1 {
                let k = (shuffle % back.len() as u64) as usize;
                back.rotate_left(k.max(1));
            }
            let want = reference(&pods, &meta, priority, &back);
            snap.nodes.partition_by_priority_to(node, priority, &back);
            let got: Vec<(PodUid, PodMeta)> = snap.nodes.pods[node.ix()]
                .iter()
                .copied()
                .zip(snap.nodes.pod_meta[node.ix()].iter().copied())
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
