//! The cluster snapshot the scheduling cycle reads: interned strings, the struct-of-arrays
//! [`NodeTable`], and the pods placed on nodes.
//!
//! Owned by the scheduling thread. Filter and score workers borrow it immutably during a cycle.

pub mod bits;
pub mod compile;
pub mod dra;
pub mod features;
pub mod intern;
pub mod model;
pub mod node_tree;
pub mod nodes;
pub mod nominated;
pub mod placement;
pub mod pod_index;
#[cfg(test)]
pub mod testing;
pub mod volumes;

use std::sync::Arc;

use ahash::AHashMap;

pub use intern::{Interner, Sym};
pub use model::*;
pub use node_tree::{NodeTree, ZoneLabels};
pub use nodes::{NodeIdx, NodeTable};
pub use placement::Placement;
pub use pod_index::PodIndex;

use crate::ids::PodUid;

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
    /// The labels of a node's zone key (`GetZoneKey`), for the scan order.
    pub zone_labels: ZoneLabels,
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
            zone_labels: ZoneLabels {
                beta_zone: i.intern("failure-domain.beta.kubernetes.io/zone"),
                zone: i.intern("topology.kubernetes.io/zone"),
                beta_region: i.intern("failure-domain.beta.kubernetes.io/region"),
                region: i.intern("topology.kubernetes.io/region"),
                empty: i.intern(""),
            },
        }
    }
}

/// A pod placed on a node: assumed by the scheduler or bound.
#[derive(Debug, Clone)]
pub struct PlacedPod {
    pub info: Arc<PodInfo>,
    pub node: Sym,
}

/// A `PodDisruptionBudget`, as preemption reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pdb {
    pub namespace: Sym,
    /// `spec.selector`; an empty selector selects no pod for preemption purposes (upstream skips it).
    pub selector: LabelSelector,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// `status.disruptedPods` (names), already counted against the budget.
    pub disrupted_pods: Vec<String>,
}

/// A `PriorityClass`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityClass {
    pub name: Sym,
    pub value: i32,
    pub global_default: bool,
    pub preemption_policy: PreemptionPolicy,
}

/// Cluster objects other than Nodes and Pods that plugins read. Filled by the api compile layer.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    /// Namespace name -> labels sorted by key (InterPodAffinity `namespaceSelector`).
    pub namespaces: AHashMap<Sym, Vec<(Sym, Sym)>>,
    /// Services: (namespace, `spec.selector` sorted by key). Services with a nil selector are left out.
    pub services: Vec<(Sym, Vec<(Sym, Sym)>)>,
    /// ReplicationControllers by (namespace, name): `spec.selector` sorted by key.
    pub replication_controllers: AHashMap<(Sym, Sym), Vec<(Sym, Sym)>>,
    /// ReplicaSets by (namespace, name): `spec.selector`.
    pub replica_sets: AHashMap<(Sym, Sym), LabelSelector>,
    /// StatefulSets by (namespace, name): `spec.selector`.
    pub stateful_sets: AHashMap<(Sym, Sym), LabelSelector>,
    pub pdbs: Vec<Pdb>,
    pub priority_classes: Vec<PriorityClass>,
    /// PersistentVolumes, claims, StorageClasses and CSINodes (the volume plugins).
    pub volumes: volumes::VolumeObjects,
    /// DeviceClasses, ResourceClaims, their templates and ResourceSlices (DynamicResources).
    pub dra: dra::DraObjects,
}

/// The scheduler's view of the cluster.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub interner: Interner,
    pub nodes: NodeTable,
    pub pods: AHashMap<PodUid, PlacedPod>,
    pub wk: WellKnown,
    /// Incremental counters for PodTopologySpread and InterPodAffinity (see [`pod_index`]).
    pub pod_index: PodIndex,
    pub cluster: ClusterObjects,
    /// Pods nominated to a node by preemption and not yet placed: node -> pods (upstream's
    /// nominator). Filtering other pods counts them (`RunFilterPluginsWithNominatedPods`).
    pub nominated: AHashMap<Sym, Vec<Arc<PodInfo>>>,
    /// The node each pod in [`Snapshot::nominated`] is nominated to (set by [`Snapshot::nominate`]),
    /// so clearing one nomination touches that node's list alone.
    nominated_at: AHashMap<PodUid, Sym>,
    /// [`Snapshot::nominated`] summed per node ([`nominated::NominatedSums`]).
    nominated_sums: nominated::NominatedSums,
    /// Zones and their nodes in upstream's order; gives the scan order ([`Snapshot::scan_order`]).
    pub node_tree: NodeTree,
    /// PodGroups and their members, as DefaultPreemption weighs victims (GenericWorkload).
    pub pod_groups: crate::plugins::defaultpreemption::PodGroupTable,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self::new()
    }
}

impl Snapshot {
    /// Whether PreFilter's outcome for `pod` can change when pods are placed or removed. Only
    /// PodTopologySpread, InterPodAffinity and VolumeRestrictions read placed pods at PreFilter; they
    /// do so when the pod has spread constraints (or a default spread selector), required pod
    /// (anti-)affinity, volumes (VolumeRestrictions counts the placed users of its ReadWriteOncePod
    /// claims), or when a placed pod's required anti-affinity term selects it.
    pub fn pre_filter_reads_pods(&self, pod: &PodInfo) -> bool {
        let c = &pod.constraints;
        if pod.volumes.is_some()
            || !c.topology_spread.is_empty()
            || !c.affinity.required_affinity.is_empty()
            || !c.affinity.required_anti_affinity.is_empty()
            || self.default_spread_selector(pod).is_some()
        {
            return true;
        }
        let ns = pod_index::ns_labels(self, pod.namespace);
        self.pod_index.carried.iter().any(|t| {
            t.kind == pod_index::CarriedKind::RequiredAntiAffinity
                && t.total > 0
                && t.term.selector.matches(pod.namespace, &pod.labels, ns, &self.interner)
        })
    }

    pub fn new() -> Self {
        let mut interner = Interner::new();
        let wk = WellKnown::new(&mut interner);
        Snapshot {
            interner,
            nodes: NodeTable::new(),
            pods: AHashMap::new(),
            wk,
            pod_index: PodIndex::default(),
            cluster: ClusterObjects::default(),
            nominated: AHashMap::new(),
            nominated_at: AHashMap::new(),
            nominated_sums: nominated::NominatedSums::default(),
            node_tree: NodeTree::default(),
            pod_groups: Default::default(),
        }
    }

    /// Adds a node. Errors if a node of that name exists.
    pub fn add_node(&mut self, spec: &NodeSpec) -> Result<NodeIdx, String> {
        if self.nodes.idx_of(spec.name).is_some() {
            return Err(format!("node {:?} exists already", self.interner.resolve(spec.name)));
        }
        let idx = self.nodes.add_node(spec);
        self.nominated_sums.node_added(spec.name, idx);
        self.nodes.set_nominated(idx, &self.nominated_sums.sum_of(spec.name));
        self.node_tree.add(spec.name, self.wk.zone_labels.key_of(&spec.labels));
        self.pod_index.on_add_node(&self.nodes, idx);
        self.pod_index.grow_domains();
        Ok(idx)
    }

    /// Replaces a node's spec (labels, taints, allocatable, images), keeping its pods; keeps the
    /// pod index's domains in step. Use this rather than `nodes.update_node`.
    pub fn update_node(&mut self, spec: &NodeSpec) -> Result<NodeIdx, String> {
        let Some(idx) = self.nodes.idx_of(spec.name) else {
            return Err(format!("node {:?} does not exist", self.interner.resolve(spec.name)));
        };
        let pods: Vec<Arc<PodInfo>> = self.nodes.pods[idx.ix()].iter().map(|u| self.pods[u].info.clone()).collect();
        for p in &pods {
            self.index_pod(idx, p, -1);
        }
        self.nodes.update_node(idx, spec);
        self.node_tree.update(spec.name, self.wk.zone_labels.key_of(&spec.labels));
        self.pod_index.on_relabel_node(&self.nodes, idx);
        self.pod_index.grow_domains();
        for p in &pods {
            self.index_pod(idx, p, 1);
        }
        Ok(idx)
    }

    fn index_pod(&mut self, idx: NodeIdx, pod: &PodInfo, sign: i32) {
        // Namespace labels only matter to registered queries (namespaceSelector).
        let ns = if self.pod_index.queries.is_empty() {
            &[][..]
        } else {
            self.cluster.namespaces.get(&pod.namespace).map_or(&[][..], |v| v.as_slice())
        };
        self.pod_index.apply_pod(&self.nodes, &self.interner, ns, idx, pod, sign);
    }

    /// Registers the pod index queries of `pod`'s spread constraints (or its default spread
    /// selector) and pod (anti-)affinity terms, so the cycle reads counters instead of scanning.
    /// Call when a pod enters the queue; cheap when already registered. Placed pods' queries are
    /// registered automatically.
    pub fn prepare_pod(&mut self, pod: &PodInfo) {
        let default = self.default_spread_selector(pod);
        let keys = [self.wk.hostname_key, self.wk.zone_key];
        for (q, ks) in pod_index::queries_of(pod, default.as_ref(), keys) {
            pod_index::ensure_query(self, &q, &ks);
        }
    }

    /// Upstream `helper.DefaultSelector` as a pod selector in the pod's namespace: the union of the
    /// selectors of Services selecting the pod and of its controlling ReplicationController,
    /// ReplicaSet or StatefulSet. `None` when empty (no default spreading).
    pub fn default_spread_selector(&self, pod: &PodInfo) -> Option<PodSelector> {
        let interner = &self.interner;
        let mut set: Vec<(Sym, Sym)> = Vec::new();
        let merge = |set: &mut Vec<(Sym, Sym)>, other: &[(Sym, Sym)]| {
            for &(k, v) in other {
                match set.iter_mut().find(|(kk, _)| *kk == k) {
                    Some(e) => e.1 = v,
                    None => set.push((k, v)),
                }
            }
        };
        for (ns, sel) in &self.cluster.services {
            let all_match = sel.iter().all(|(k, v)| pod.label(*k) == *v);
            if *ns == pod.namespace && all_match {
                merge(&mut set, sel);
            }
        }
        let mut extra: Vec<LabelRequirement> = Vec::new();
        if let Some(c) = pod.constraints.controller {
            let key = (pod.namespace, c.name);
            match c.kind {
                ControllerKind::ReplicationController => {
                    if let Some(sel) = self.cluster.replication_controllers.get(&key) {
                        merge(&mut set, sel);
                    }
                }
                ControllerKind::ReplicaSet | ControllerKind::StatefulSet => {
                    let m = if c.kind == ControllerKind::ReplicaSet {
                        &self.cluster.replica_sets
                    } else {
                        &self.cluster.stateful_sets
                    };
                    if let Some(sel) = m.get(&key) {
                        if !sel.matches_nothing {
                            extra.extend(sel.reqs.iter().cloned());
                        }
                    }
                }
            }
        }
        let _ = interner;
        set.sort();
        let labels = LabelSelector::new(&set, extra);
        if labels.is_empty() {
            return None;
        }
        Some(PodSelector { namespaces: NamespaceSet::only(pod.namespace), labels })
    }

    /// Adds or relabels Namespace `name` (labels sorted by key). Registered queries whose terms
    /// use a `namespaceSelector` are recounted, since which namespaces they select may change.
    pub fn set_namespace(&mut self, name: Sym, labels: Vec<(Sym, Sym)>) {
        self.cluster.namespaces.insert(name, labels);
        let stale: Vec<usize> = (0..self.pod_index.queries.len())
            .filter(|&i| self.pod_index.queries[i].query.all_of.iter().any(|s| s.namespaces.selector.is_some()))
            .collect();
        for i in stale {
            let fresh = pod_index::scan_per_node(self, &self.pod_index.queries[i].query);
            self.pod_index.reset_query(i, fresh);
        }
    }

    /// Records that `pod` is nominated to `node` (replacing an earlier nomination of the pod).
    pub fn nominate(&mut self, pod: Arc<PodInfo>, node: Sym) {
        self.clear_nomination(pod.uid);
        self.nominated_at.insert(pod.uid, node);
        let placed = self.pods.contains_key(&pod.uid);
        let idx = self.nodes.idx_of(node);
        self.nominated_sums.add(&pod, node, idx, placed);
        if let Some(idx) = idx {
            self.nodes.set_nominated(idx, &self.nominated_sums.sum_of(node));
        }
        self.nominated.entry(node).or_default().push(pod);
    }

    /// Forgets `uid`'s nomination, if any: only [`Snapshot::nominate`] adds one, to one node's
    /// list, so only that list is searched.
    pub fn clear_nomination(&mut self, uid: PodUid) {
        let Some(node) = self.nominated_at.remove(&uid) else { return };
        if let Some(v) = self.nominated.get_mut(&node) {
            let placed = self.pods.contains_key(&uid);
            while let Some(k) = v.iter().position(|p| p.uid == uid) {
                let p = v.remove(k);
                self.nominated_sums.remove(&p, node, placed);
            }
            if let Some(idx) = self.nodes.idx_of(node) {
                self.nodes.set_nominated(idx, &self.nominated_sums.sum_of(node));
            }
            if v.is_empty() {
                self.nominated.remove(&node);
            }
        }
    }

    /// The nominations summed per node, kept by [`Snapshot::nominate`] and
    /// [`Snapshot::clear_nomination`].
    pub fn nominated_sums(&self) -> &nominated::NominatedSums {
        &self.nominated_sums
    }

    /// The pod `uid`'s nomination: its node and the nominated copy, if it is nominated.
    pub fn nomination_of(&self, uid: PodUid) -> Option<(Sym, &Arc<PodInfo>)> {
        let node = *self.nominated_at.get(&uid)?;
        self.nominated.get(&node)?.iter().find(|p| p.uid == uid).map(|p| (node, p))
    }

    /// Forgets every nomination (both the per-node lists and the pod -> node map).
    pub fn clear_nominations(&mut self) {
        self.nominated.clear();
        self.nominated_at.clear();
        self.nominated_sums.clear();
        self.nodes.clear_nominated();
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
        self.index_pod(idx, &pod, 1);
        let has_terms = !pod.constraints.affinity.is_empty() || !pod.constraints.topology_spread.is_empty();
        self.pods.insert(pod.uid, PlacedPod { info: pod.clone(), node });
        if !self.nominated_at.is_empty() && self.nominated_at.contains_key(&pod.uid) {
            self.nominated_sums.shift_placed(1);
        }
        if has_terms {
            self.prepare_pod(&pod);
        }
        Ok(idx)
    }

    /// Removes a placed pod (forget or delete), returning it.
    pub fn unplace_pod(&mut self, uid: PodUid) -> Option<PlacedPod> {
        let placed = self.pods.remove(&uid)?;
        if !self.nominated_at.is_empty() && self.nominated_at.contains_key(&uid) {
            self.nominated_sums.shift_placed(-1);
        }
        let idx = self.nodes.idx_of(placed.node).expect("a placed pod's node exists");
        self.nodes.remove_pod(idx, &placed.info);
        self.index_pod(idx, &placed.info, -1);
        Some(placed)
    }

    /// Removes a node and the pods on it; returns the removed pods.
    pub fn remove_node(&mut self, name: Sym) -> Vec<PlacedPod> {
        let Some(idx) = self.nodes.idx_of(name) else { return Vec::new() };
        let uids = self.nodes.pods[idx.ix()].clone();
        let removed: Vec<PlacedPod> = uids.into_iter().filter_map(|u| self.unplace_pod(u)).collect();
        let idx = self.nodes.idx_of(name).expect("node still present");
        self.pod_index.on_remove_node(idx);
        let moved = self.nodes.remove_node(idx);
        self.nominated_sums.node_removed(name, moved.map(|m| (self.nodes.name[m.ix()], m)));
        self.node_tree.remove(name);
        removed
    }

    /// The order the filter pass scans nodes in (`nextStartNodeIndex` indexes it): upstream's
    /// node list, round-robin over zones (see [`node_tree`]). Built once after nodes are added or
    /// removed.
    pub fn scan_order(&self) -> &[NodeIdx] {
        self.node_tree.list(&self.nodes)
    }

    /// Whether [`Snapshot::scan_order`] is `0, 1, 2, ...`.
    pub fn scan_order_is_row_order(&self) -> bool {
        self.node_tree.is_row_order(&self.nodes)
    }

    /// The name of node `idx`.
    pub fn node_name(&self, idx: NodeIdx) -> &str {
        self.interner.resolve(self.nodes.name[idx.ix()])
    }
}

#[cfg(test)]
mod nomination_tests {
    use super::testing::MakePod;
    use super::*;

    /// `nominate` / `clear_nomination` through a table of steps: the lists per node after each,
    /// in nomination order (a renomination moves the pod; an emptied list leaves the map).
    #[test]
    fn nominate_and_clear_table() {
        enum Step {
            Nominate(usize, &'static str),
            Clear(usize),
        }
        use Step::*;
        /// (node, the pods nominated there by index, in order)
        type Lists = &'static [(&'static str, &'static [usize])];
        let cases: &[(&str, &[Step], Lists)] = &[
            ("one", &[Nominate(0, "n1")], &[("n1", &[0])]),
            ("two on a node, in order", &[Nominate(0, "n1"), Nominate(1, "n1")], &[("n1", &[0, 1])]),
            (
                "renominated moves",
                &[Nominate(0, "n1"), Nominate(1, "n1"), Nominate(0, "n2")],
                &[("n1", &[1]), ("n2", &[0])],
            ),
            ("cleared empties the node", &[Nominate(0, "n1"), Nominate(1, "n2"), Clear(0)], &[("n2", &[1])]),
            ("clearing the unnominated is a no-op", &[Nominate(0, "n1"), Clear(1), Clear(1)], &[("n1", &[0])]),
            (
                "renominated to the same node goes last",
                &[Nominate(0, "n1"), Nominate(1, "n1"), Nominate(0, "n1")],
                &[("n1", &[1, 0])],
            ),
        ];
        for (name, steps, want) in cases {
            let mut snap = Snapshot::new();
            let pods: Vec<Arc<PodInfo>> =
                (0..2).map(|i| Arc::new(MakePod::new(&mut snap, &format!("p{i}")).build())).collect();
            for step in steps.iter() {
                match step {
                    Nominate(i, node) => {
                        let node = snap.interner.intern(node);
                        snap.nominate(pods[*i].clone(), node);
                    }
                    Clear(i) => snap.clear_nomination(pods[*i].uid),
                }
            }
            let mut got: Vec<(String, Vec<PodUid>)> = snap
                .nominated
                .iter()
                .map(|(n, v)| (snap.interner.resolve(*n).to_string(), v.iter().map(|p| p.uid).collect()))
                .collect();
            got.sort();
            let want: Vec<(String, Vec<PodUid>)> =
                want.iter().map(|(n, v)| (n.to_string(), v.iter().map(|i| pods[*i].uid).collect())).collect();
            assert_eq!(got, want, "{name}");
        }
    }
}

#[cfg(test)]
mod nominated_sums_tests {
    use super::nodes::CoreRequests;
    use super::testing::{MakeNode, MakePod};
    use super::*;
    use proptest::prelude::*;

    /// The sums and the `all_count` verdict worked out from scratch from the nominations.
    fn check_sums(snap: &Snapshot) {
        let mut want: Vec<(Sym, Option<NodeIdx>, CoreRequests)> = snap
            .nominated
            .iter()
            .map(|(n, v)| {
                let mut s = CoreRequests::default();
                v.iter().for_each(|p| s.add(p));
                (*n, snap.nodes.idx_of(*n), s)
            })
            .collect();
        let mut got: Vec<(Sym, Option<NodeIdx>, CoreRequests)> =
            snap.nominated_sums().rows().iter().map(|r| (r.node, r.idx, r.sum)).collect();
        want.sort_by_key(|w| w.0);
        got.sort_by_key(|g| g.0);
        // The table's nominated columns hold each existing node's sum (zero for the others).
        for i in 0..snap.nodes.len() {
            let name = snap.nodes.name[i];
            let s = want.iter().find(|w| w.0 == name).map_or_else(CoreRequests::default, |w| w.2);
            let t = &snap.nodes;
            assert_eq!(
                (t.nom_cpu_milli[i], t.nom_memory[i], t.nom_ephemeral_storage[i], t.nom_pods[i]),
                (s.cpu_milli, s.memory, s.ephemeral_storage, s.pods),
                "row {i}"
            );
        }
        assert_eq!(got, want);
        for prio in -1..4 {
            let all = snap
                .nominated
                .values()
                .flatten()
                .all(|p| p.priority >= prio && p.plain_on_columns() && !snap.pods.contains_key(&p.uid));
            assert_eq!(snap.nominated_sums().all_count(prio).is_some(), all, "priority {prio}");
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Nominate(usize, usize),
        Clear(usize),
        Place(usize, usize),
        Unplace(usize),
        AddNode(usize),
        RemoveNode(usize),
        ClearAll,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..6, 0usize..4).prop_map(|(p, n)| Op::Nominate(p, n)),
            2 => (0usize..6).prop_map(Op::Clear),
            2 => (0usize..6, 0usize..4).prop_map(|(p, n)| Op::Place(p, n)),
            1 => (0usize..6).prop_map(Op::Unplace),
            1 => (0usize..4).prop_map(Op::AddNode),
            1 => (0usize..4).prop_map(Op::RemoveNode),
            1 => Just(Op::ClearAll),
        ]
    }

    proptest! {
        /// `NominatedSums` as the snapshot keeps it equals the sums worked out from the
        /// nominations after every step (nominate, clear, place, unplace, node added / removed).
        #[test]
        fn nominated_sums_follow_the_nominations(
            pods in proptest::collection::vec((0i32..3, 1i64..2000, any::<bool>()), 6),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let mut snap = Snapshot::new();
            for n in 0..3 {
                MakeNode::new(&mut snap, &format!("n{n}")).capacity(100_000, 1 << 40).pods(110).add();
            }
            let pods: Vec<Arc<PodInfo>> = pods
                .iter()
                .enumerate()
                .map(|(i, &(prio, cpu, ported))| {
                    let b = MakePod::new(&mut snap, &format!("p{i}")).priority(prio).req(cpu, cpu << 20);
                    Arc::new(if ported { b.host_port("TCP", "", 8000 + i as i32) } else { b }.build())
                })
                .collect();
            for op in ops {
                let name = |snap: &mut Snapshot, n: usize| snap.interner.intern(&format!("n{n}"));
                match op {
                    Op::Nominate(p, n) => {
                        let node = name(&mut snap, n);
                        snap.nominate(pods[p].clone(), node);
                    }
                    Op::Clear(p) => snap.clear_nomination(pods[p].uid),
                    Op::Place(p, n) => {
                        let node = name(&mut snap, n);
                        let _ = snap.place_pod(pods[p].clone(), node);
                    }
                    Op::Unplace(p) => {
                        snap.unplace_pod(pods[p].uid);
                    }
                    Op::AddNode(n) => {
                        let node = name(&mut snap, n);
                        if snap.nodes.idx_of(node).is_none() {
                            MakeNode::new(&mut snap, &format!("n{n}")).capacity(100_000, 1 << 40).pods(110).add();
                        }
                    }
                    Op::RemoveNode(n) => {
                        let node = name(&mut snap, n);
                        snap.remove_node(node);
                    }
                    Op::ClearAll => snap.clear_nominations(),
                }
                check_sums(&snap);
            }
        }
    }
}
