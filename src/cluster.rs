//! A cluster as users describe it: Kubernetes objects from manifests (`kubectl get -o yaml`
//! lists, multi-document files), sorted by kind, and turned into a [`Snapshot`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::api::{self, Object};
use crate::error::InputError;
use crate::ids::PodUid;
use crate::snapshot::compile::{compile_node, compile_pod, Priorities};
use crate::snapshot::{PodInfo, Snapshot};

/// The objects of a cluster, by kind, in input order.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub nodes: Vec<api::Node>,
    pub pods: Vec<api::Pod>,
    pub namespaces: Vec<api::Namespace>,
    pub services: Vec<api::Service>,
    pub replica_sets: Vec<api::ReplicaSet>,
    pub stateful_sets: Vec<api::StatefulSet>,
    pub replication_controllers: Vec<api::ReplicationController>,
    pub pod_disruption_budgets: Vec<api::PodDisruptionBudget>,
    pub priority_classes: Vec<api::PriorityClass>,
    /// PodGroups (read by a run whose workload sets GenericWorkload).
    pub pod_groups: Vec<api::PodGroup>,
    /// PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers and
    /// CSIStorageCapacities, in input order.
    pub storage: Vec<Object>,
    /// DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices, in input order.
    pub dra: Vec<Object>,
    /// Kinds the scheduler does not read, with how many objects of each were skipped.
    pub ignored_kinds: BTreeMap<String, usize>,
    /// The files the objects came from (empty when built from objects in memory).
    pub files: Vec<String>,
    /// Per node and per pod (same order as `nodes`, `pods`): its index in `files`.
    pub node_files: Vec<usize>,
    pub pod_files: Vec<usize>,
}

/// What became of a cluster's pods when its snapshot was built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSummary {
    /// Pods that name a node: placed there, holding capacity.
    pub bound: usize,
    /// Pods without a node, for the run's scheduler.
    pub pending: usize,
    /// Succeeded or Failed pods: they hold no capacity and are not scheduled.
    pub finished: usize,
}

impl Cluster {
    pub fn add(&mut self, obj: Object) {
        match obj {
            Object::Node(o) => self.nodes.push(o),
            Object::Pod(o) => self.pods.push(o),
            Object::Namespace(o) => self.namespaces.push(o),
            Object::Service(o) => self.services.push(o),
            Object::ReplicaSet(o) => self.replica_sets.push(o),
            Object::StatefulSet(o) => self.stateful_sets.push(o),
            Object::ReplicationController(o) => self.replication_controllers.push(o),
            Object::PodDisruptionBudget(o) => self.pod_disruption_budgets.push(o),
            Object::PriorityClass(o) => self.priority_classes.push(o),
            Object::PodGroup(o) => self.pod_groups.push(o),
            o @ (Object::PersistentVolume(_)
            | Object::PersistentVolumeClaim(_)
            | Object::StorageClass(_)
            | Object::CsiNode(_)
            | Object::CsiDriver(_)
            | Object::CsiStorageCapacity(_)) => self.storage.push(o),
            o @ (Object::DeviceClass(_)
            | Object::ResourceClaim(_)
            | Object::ResourceClaimTemplate(_)
            | Object::ResourceSlice(_)
            | Object::DeviceTaintRule(_)) => self.dra.push(o),
            Object::Other { kind, .. } => *self.ignored_kinds.entry(kind).or_default() += 1,
        }
    }

    pub fn from_objects(objs: Vec<Object>) -> Self {
        let mut c = Cluster::default();
        for o in objs {
            c.add(o);
        }
        c
    }

    /// Loads every object of `paths` (YAML or JSON, lists, multi-document streams). Each file is
    /// read once (a `<(kubectl get ...)` pipe can only be read once).
    pub fn load(paths: &[PathBuf]) -> Result<Self, InputError> {
        let mut texts = Vec::with_capacity(paths.len());
        for path in paths {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError::new(&file, "", format!("cannot read the cluster file: {e}")))?;
            texts.push((file, text));
        }
        Self::parse(&texts)
    }

    /// Parses `(file name, text)` pairs; errors and object origins name the file.
    pub fn parse(texts: &[(String, String)]) -> Result<Self, InputError> {
        let mut c = Cluster::default();
        for (i, (file, text)) in texts.iter().enumerate() {
            c.files.push(file.clone());
            for obj in api::parse_objects(text, file)? {
                match &obj {
                    Object::Node(_) => c.node_files.push(i),
                    Object::Pod(_) => c.pod_files.push(i),
                    _ => {}
                }
                c.add(obj);
            }
        }
        Ok(c)
    }

    /// The file node `i` came from, else `fallback`.
    fn node_file<'a>(&'a self, i: usize, fallback: &'a str) -> &'a str {
        self.node_files.get(i).and_then(|&f| self.files.get(f)).map_or(fallback, String::as_str)
    }

    fn pod_file<'a>(&'a self, i: usize, fallback: &'a str) -> &'a str {
        self.pod_files.get(i).and_then(|&f| self.files.get(f)).map_or(fallback, String::as_str)
    }

    /// One line per kind the scheduler does not read (`Deployment: 3 objects ignored`).
    pub fn ignored_summary(&self) -> Option<String> {
        if self.ignored_kinds.is_empty() {
            return None;
        }
        let kinds: Vec<String> = self.ignored_kinds.iter().map(|(k, n)| format!("{k} ({n})")).collect();
        Some(format!("kinds the scheduler does not read, ignored: {}", kinds.join(", ")))
    }

    pub fn priorities(&self) -> Priorities {
        let mut p = Priorities::default();
        for pc in &self.priority_classes {
            p.add(pc);
        }
        p
    }
}

/// Registers a non-pod, non-node object with the snapshot (what the plugins read of it).
pub fn register_object(snap: &mut Snapshot, obj: &Object) {
    use crate::snapshot::compile::compile_label_selector;
    let i = &mut snap.interner;
    let pairs = |m: &BTreeMap<String, String>, i: &mut crate::snapshot::Interner| {
        let mut v: Vec<_> = m.iter().map(|(k, v)| (i.intern(k), i.intern(v))).collect();
        v.sort();
        v
    };
    let ns_of =
        |meta: &api::ObjectMeta| if meta.namespace.is_empty() { "default".to_string() } else { meta.namespace.clone() };
    match obj {
        Object::Namespace(n) => {
            let name = i.intern(&n.metadata.name);
            let labels = pairs(&n.metadata.labels, i);
            snap.set_namespace(name, labels);
        }
        Object::Service(svc) => {
            // A Service without a selector selects no pods.
            if !svc.spec.selector.is_empty() {
                let ns = i.intern(&ns_of(&svc.metadata));
                let sel = pairs(&svc.spec.selector, i);
                snap.cluster.services.push((ns, sel));
            }
        }
        Object::ReplicationController(rc) => {
            let key = (i.intern(&ns_of(&rc.metadata)), i.intern(&rc.metadata.name));
            let sel = pairs(&rc.spec.selector, i);
            snap.cluster.replication_controllers.insert(key, sel);
        }
        Object::ReplicaSet(rs) => {
            let key = (i.intern(&ns_of(&rs.metadata)), i.intern(&rs.metadata.name));
            let sel = compile_label_selector(rs.spec.selector.as_ref(), i);
            snap.cluster.replica_sets.insert(key, sel);
        }
        Object::StatefulSet(ss) => {
            let key = (i.intern(&ns_of(&ss.metadata)), i.intern(&ss.metadata.name));
            let sel = compile_label_selector(ss.spec.selector.as_ref(), i);
            snap.cluster.stateful_sets.insert(key, sel);
        }
        Object::PodDisruptionBudget(pdb) => {
            let namespace = i.intern(&ns_of(&pdb.metadata));
            let selector = compile_label_selector(pdb.spec.selector.as_ref(), i);
            let status = &pdb.status;
            snap.cluster.pdbs.push(crate::snapshot::Pdb {
                namespace,
                selector,
                disruptions_allowed: status.disruptions_allowed,
                disrupted_pods: status.disrupted_pods.keys().cloned().collect(),
            });
        }
        Object::PriorityClass(pc) => {
            let name = i.intern(&pc.metadata.name);
            let preemption_policy = match pc.preemption_policy {
                Some(api::PreemptionPolicy::Never) => crate::snapshot::PreemptionPolicy::Never,
                _ => crate::snapshot::PreemptionPolicy::PreemptLowerPriority,
            };
            snap.cluster.priority_classes.push(crate::snapshot::PriorityClass {
                name,
                value: pc.value,
                global_default: pc.global_default,
                preemption_policy,
            });
        }
        Object::PersistentVolume(pv) => snap.cluster.volumes.add_pv(pv, i),
        Object::PersistentVolumeClaim(pvc) => snap.cluster.volumes.add_pvc(pvc, i),
        Object::StorageClass(sc) => snap.cluster.volumes.add_class(sc, i),
        Object::CsiNode(n) => snap.cluster.volumes.add_csi_node(n, i),
        Object::DeviceClass(c) => snap.cluster.dra.add_class(c),
        Object::ResourceClaim(c) => snap.cluster.dra.add_claim(c),
        Object::ResourceClaimTemplate(t) => snap.cluster.dra.add_template(t),
        Object::ResourceSlice(s) => snap.cluster.dra.add_slice(s),
        Object::DeviceTaintRule(r) => snap.cluster.dra.add_taint_rule(r),
        Object::CsiDriver(d) => snap.cluster.volumes.add_csi_driver(d, i),
        Object::CsiStorageCapacity(c) => snap.cluster.volumes.add_capacity(c, i),
        Object::Node(_) | Object::Pod(_) | Object::PodGroup(_) | Object::Other { .. } => {}
    }
}

/// Hands out run-unique pod ids.
#[derive(Debug, Default)]
pub struct UidGen(u64);

impl UidGen {
    pub fn next_uid(&mut self) -> PodUid {
        self.0 += 1;
        PodUid(self.0)
    }

    /// How many ids were handed out (the last one is `PodUid(issued)`).
    pub fn issued(&self) -> u64 {
        self.0
    }
}

/// A snapshot of `cluster`: its nodes added in name order (as an informer's List delivers them),
/// and its pods that name a node placed there. Returns the pods that are not bound (pending),
/// compiled, in input order. Succeeded and Failed pods are left out: they hold no resources and
/// nothing schedules them. `file` names the input in errors when the cluster does not know the
/// file an object came from.
pub fn build_snapshot(
    cluster: &Cluster,
    file: &str,
    uids: &mut UidGen,
) -> Result<(Snapshot, Vec<PodInfo>), InputError> {
    build_snapshot_counted(cluster, file, uids).map(|(s, p, _)| (s, p))
}

/// [`build_snapshot`], also saying what became of the pods.
pub fn build_snapshot_counted(
    cluster: &Cluster,
    file: &str,
    uids: &mut UidGen,
) -> Result<(Snapshot, Vec<PodInfo>, PodSummary), InputError> {
    let mut summary = PodSummary::default();
    let mut snap = Snapshot::new();
    // The scheduler learns pre-existing nodes from an informer's List, which returns them in name
    // order (byte-wise); the node tree (the scan order) keeps that insertion order per zone.
    let mut specs = Vec::with_capacity(cluster.nodes.len());
    for (i, node) in cluster.nodes.iter().enumerate() {
        let mut spec = compile_node(node, &mut snap.interner);
        if node.metadata.name.is_empty() {
            spec.name = snap.interner.intern(&format!("{}{i:05}", node.metadata.generate_name));
        }
        specs.push((i, spec));
    }
    specs.sort_by(|a, b| snap.interner.resolve(a.1.name).cmp(snap.interner.resolve(b.1.name)).then(a.0.cmp(&b.0)));
    for (i, spec) in &specs {
        snap.add_node(spec)
            .map_err(|e| InputError::new(cluster.node_file(*i, file), format!("nodes[{i}].metadata.name"), e))?;
    }
    for ns in &cluster.namespaces {
        register_object(&mut snap, &Object::Namespace(ns.clone()));
    }
    for o in &cluster.services {
        register_object(&mut snap, &Object::Service(o.clone()));
    }
    for o in &cluster.replica_sets {
        register_object(&mut snap, &Object::ReplicaSet(o.clone()));
    }
    for o in &cluster.stateful_sets {
        register_object(&mut snap, &Object::StatefulSet(o.clone()));
    }
    for o in &cluster.replication_controllers {
        register_object(&mut snap, &Object::ReplicationController(o.clone()));
    }
    for o in &cluster.pod_disruption_budgets {
        register_object(&mut snap, &Object::PodDisruptionBudget(o.clone()));
    }
    for o in &cluster.priority_classes {
        register_object(&mut snap, &Object::PriorityClass(o.clone()));
    }
    for o in cluster.storage.iter().chain(&cluster.dra) {
        register_object(&mut snap, o);
    }
    let priorities = cluster.priorities();
    let mut pending = Vec::new();
    for (i, pod) in cluster.pods.iter().enumerate() {
        if matches!(pod.status.phase, Some(api::PodPhase::Succeeded | api::PodPhase::Failed)) {
            summary.finished += 1;
            continue;
        }
        let file = cluster.pod_file(i, file);
        let name = if pod.metadata.name.is_empty() {
            format!("{}{:05}", pod.metadata.generate_name, i)
        } else {
            pod.metadata.name.clone()
        };
        let wk = snap.wk.clone();
        let info = compile_pod(pod, &name, uids.next_uid(), &priorities, &mut snap.interner, &wk).map_err(|e| {
            InputError::new(file, format!("pods[{i}] ({}/{name}).spec.priorityClassName", pod.namespace()), e)
        })?;
        match info.node_name {
            Some(node) => {
                snap.place_pod(Arc::new(info), node).map_err(|e| {
                    InputError::new(
                        file,
                        format!("pods[{i}] ({}/{name}).spec.nodeName", pod.namespace()),
                        format!("{e}; bound pods must name a node of the cluster"),
                    )
                })?;
            }
            None => pending.push(info),
        }
    }
    summary.pending = pending.len();
    summary.bound = cluster.pods.len() - summary.pending - summary.finished;
    Ok((snap, pending, summary))
}
