//! Creating, updating and deleting cluster objects (nodes, pods, anything `createAny` names).

use std::sync::Arc;

use crate::api::{self, Object};
use crate::error::InputError;
use crate::ids::PodUid;
use crate::queue::{ClusterEvent, DraAction, EventObjects, NodeChange, NodeObject, QueuedPod};
use crate::runner::RunError;
use crate::snapshot::compile::{compile_node, compile_pod};
use crate::snapshot::volumes::{StorageAction, StorageEventObject};
use crate::snapshot::{NodeIdx, NodeSpec, PodInfo, Resources, Snapshot, Sym};

use super::{
    declared_features_fingerprint, node_fingerprint, ChurnObject, CompiledTemplate, Driver, NodeFingerprint, PodRec,
    PodState,
};

/// The name of the `created`-th pod made from a template with `meta`: the template's name for the
/// first pod when it has one; otherwise (and for every later pod of a `generateName` template)
/// `generateName` (or `pod-`) and the six-digit count.
pub(crate) fn pod_name(meta: &api::ObjectMeta, created: u64) -> String {
    if meta.name.is_empty() || created > 0 && !meta.generate_name.is_empty() {
        let prefix = if meta.generate_name.is_empty() { "pod-" } else { &meta.generate_name };
        let mut name = String::with_capacity(prefix.len() + 20);
        name.push_str(prefix);
        push_decimal(&mut name, created, 6);
        name
    } else {
        meta.name.clone()
    }
}

/// Appends `n` in base 10, zero-padded to `width` digits (`format!("{n:0width$}")` without the
/// formatting machinery, for names made once per pod).
pub(super) fn push_decimal(buf: &mut String, n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut n = n;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend(std::iter::repeat_n('0', width.saturating_sub(digits.len())));
    let at = at.min(digits.len().saturating_sub(width));
    buf.extend(digits[at..].iter().map(|&d| d as char));
}

/// The name of a node without one, the `created`-th node: `generateName` (or `node-`) and the count.
fn node_name(meta: &api::ObjectMeta, created: u64) -> String {
    let prefix = if meta.generate_name.is_empty() { "node-" } else { &meta.generate_name };
    format!("{prefix}{created}")
}

/// `candidate` (cpu milli, memory) when it is larger than `current`: more CPU, or as much CPU
/// and more memory.
fn larger_shape(current: (i64, i64), candidate: (i64, i64)) -> Option<(i64, i64)> {
    let (c, m) = candidate;
    (c > current.0 || (c == current.0 && m > current.1)).then_some(candidate)
}

/// What a node update from `old` to `new` changes, as the queue's `NodeChange` bits (as
/// `updateAny` computes it for the event it delivers).
pub(crate) fn node_update_change(old: &api::Node, new: &api::Node) -> NodeChange {
    node_change(node_fingerprint(old), node_fingerprint(new))
}

/// Whether an assigned pod's update from `old` to `new` requests scales it down (the
/// `AssignedPodUpdate` flag `updateAny` sets): upstream's `extractPodScaleDown`, some resource it
/// requested (cpu, memory, ephemeral storage, an extended resource) is requested less or no more.
pub(crate) fn requests_scaled_down(old: &Resources, new: &Resources) -> bool {
    new.cpu_milli < old.cpu_milli
        || new.memory < old.memory
        || new.ephemeral_storage < old.ephemeral_storage
        || old.scalars.iter().any(|&(r, v)| new.scalar(r) < v)
}

/// What changed between two [`node_fingerprint`]s, as the queue's `NodeChange` bits.
fn node_change(old: NodeFingerprint, new: NodeFingerprint) -> NodeChange {
    let bits = [
        NodeChange::ALLOCATABLE,
        NodeChange::LABEL,
        NodeChange::TAINT,
        NodeChange::UNSCHEDULABLE,
        NodeChange::DECLARED_FEATURES,
    ];
    (0..bits.len()).filter(|&i| old[i] != new[i]).fold(NodeChange::default(), |c, i| c.union(bits[i]))
}

impl Driver {
    /// Replaces node `name`'s row with `spec` (fingerprint `new`) and says what changed: the row,
    /// the queue's change bits and the event's objects (the node before and after; `None` when
    /// the queue wants none or the node as it was is unknown: a node of the loaded cluster, for
    /// which the coarse table decides).
    fn apply_node_update(
        &mut self,
        name: String,
        spec: NodeSpec,
        new: NodeFingerprint,
        file: &str,
    ) -> Result<(u32, NodeChange, Option<Arc<EventObjects>>), InputError> {
        let idx = self.snap.update_node(&spec).map_err(|e| InputError::new(file, "metadata.name", e))?;
        let old = self.node_fingerprints.insert(name.clone(), new).unwrap_or([u64::MAX; 5]);
        let change = node_change(old, new);
        let obj = self.node_object(spec);
        let old_obj = self.node_objects.insert(name, obj.clone());
        let objs = (self.queue.wants_event_objects() && old_obj.is_some())
            .then(|| Arc::new(EventObjects { old_node: old_obj, new_node: Some(obj), ..EventObjects::default() }));
        Ok((idx.0, change, objs))
    }

    /// nodedeclaredfeatures/node_declared_features_test.go's `updateNodesWithDeclaredFeatures`
    /// (`HarnessHooks::node_declared_features`), after a `createNodes` op: every node, in name
    /// order as a List returns them, gets `status.declaredFeatures` = `Feature1..FeatureN` sorted
    /// as strings, through the node-update path (the snapshot's row, then the queue's
    /// NodeUpdate event with `DECLARED_FEATURES`, as upstream's informer turns each UpdateStatus
    /// into an `UpdateNodeDeclaredFeature` event; an update that changes nothing raises none).
    pub(super) fn declare_node_features(&mut self, n: u64, file: &str) -> Result<(), InputError> {
        let mut features: Vec<String> = (1..=n).map(|i| format!("Feature{i}")).collect();
        features.sort();
        let fingerprint = declared_features_fingerprint(&features);
        let declared: Vec<Sym> = features.iter().map(|f| self.snap.interner.intern(f)).collect();
        let set = crate::snapshot::features::default_framework().try_map(features.as_slice());
        let mut names: Vec<String> =
            self.snap.nodes.name.iter().map(|&s| self.snap.interner.resolve(s).to_string()).collect();
        names.sort();
        for name in names {
            let spec = match self.node_objects.get(&name) {
                Some(o) => (*o.spec).clone(),
                None => match self.cluster.nodes.iter().find(|n| n.metadata.name == name) {
                    Some(node) => compile_node(node, &mut self.snap.interner),
                    None => continue,
                },
            };
            let spec = NodeSpec { declared_features: declared.clone(), declared_feature_set: set, ..spec };
            let mut new = self.node_fingerprints.get(&name).copied().unwrap_or([u64::MAX; 5]);
            new[4] = fingerprint;
            let (node, change, objs) = self.apply_node_update(name, spec, new, file)?;
            if change != NodeChange::default() {
                let now = self.now();
                self.queue.on_event_with(ClusterEvent::NodeUpdate { node, change }, objs, now);
            }
        }
        Ok(())
    }

    /// A node as the queue's hints read it: its spec and label values as integers.
    fn node_object(&self, spec: NodeSpec) -> NodeObject {
        let label_ints = spec.labels.iter().map(|&(_, v)| self.snap.interner.as_int(v)).collect();
        NodeObject { spec: Arc::new(spec), label_ints }
    }

    /// The objects of an assigned pod's deletion: the pod (when some pod would read them).
    pub(super) fn deleted_pod_objects(&self, uid: PodUid) -> Option<Arc<EventObjects>> {
        self.queue
            .wants_event_objects()
            .then(|| Arc::new(EventObjects { old_pod: Some(self.rec(uid).info.clone()), ..EventObjects::default() }))
    }

    pub(super) fn create_node(&mut self, mut node: api::Node, file: &str) -> Result<String, InputError> {
        if node.metadata.name.is_empty() {
            node.metadata.name = node_name(&node.metadata, self.nodes_created);
        }
        self.nodes_created += 1;
        // A kubelet labels its node with its hostname; simulated nodes do as a registered node would.
        node.metadata.labels.entry("kubernetes.io/hostname".to_string()).or_insert_with(|| node.metadata.name.clone());
        let spec = compile_node(&node, &mut self.snap.interner);
        let idx = self.snap.add_node(&spec).map_err(|e| InputError::new(file, "metadata.name", e))?;
        self.node_fingerprints.insert(node.metadata.name.clone(), node_fingerprint(&node));
        let now = self.now();
        let obj = self.node_object(spec);
        let objs = self
            .queue
            .wants_event_objects()
            .then(|| Arc::new(EventObjects { new_node: Some(obj.clone()), ..EventObjects::default() }));
        self.node_objects.insert(node.metadata.name.clone(), obj);
        self.queue.on_event_with(ClusterEvent::NodeAdd { node: idx.0 }, objs, now);
        Ok(node.metadata.name)
    }

    /// Creates storage objects (PersistentVolumes, claims, CSINodes: documents from
    /// [`crate::workload::volumes`]) in the snapshot's listers.
    pub(super) fn create_storage(&mut self, docs: &[serde_json::Value], file: &str) -> Result<(), InputError> {
        for obj in crate::workload::volumes::parse(docs, file)? {
            crate::cluster::register_object(&mut self.snap, &obj);
            self.storage_event(&obj, StorageAction::Add);
        }
        Ok(())
    }

    /// A storage object was added or updated (`obj`, as it is now): the queue gets upstream's
    /// storage event with the object before and after, as the volume plugins' hints read them.
    /// Other kinds: nothing.
    fn storage_event(&mut self, obj: &Object, action: StorageAction) {
        let Some((kind, now_obj)) = StorageEventObject::of(obj, &mut self.snap.interner) else { return };
        let namespace = match obj {
            Object::PersistentVolumeClaim(c) => c.namespace(),
            Object::CsiStorageCapacity(c) if c.metadata.namespace.is_empty() => "default",
            Object::CsiStorageCapacity(c) => &c.metadata.namespace,
            _ => "",
        };
        let new = Arc::new(now_obj);
        let old = self.storage_objects.insert((kind, format!("{namespace}/{}", obj.name())), new.clone());
        let objs = self
            .queue
            .wants_event_objects()
            .then(|| Arc::new(EventObjects { old_storage: old, new_storage: Some(new), ..EventObjects::default() }));
        let now = self.now();
        self.queue.on_event_with(ClusterEvent::Storage { kind, action }, objs, now);
    }

    /// Pod `i` of a `createPods` op with volume templates, as upstream's
    /// `CreatePodWithPersistentVolume`: its claim and volume first, pre-bound, then the pod from
    /// `template` with its volumes replaced by the one naming the claim.
    pub(super) fn create_pod_with_claim(
        &mut self,
        vt: &crate::workload::volumes::VolumeTemplates,
        template: Arc<api::Pod>,
        namespace: &str,
        i: u64,
        file: &str,
        signature: Option<(Sym, Sym)>,
    ) -> Result<PodUid, InputError> {
        use crate::workload::volumes;
        self.create_storage(&volumes::pod_volume_objects(vt, namespace, i), file)?;
        let mut pod = (*template).clone();
        pod.spec.volumes = vec![api::storage::Volume {
            name: volumes::CLAIM_VOLUME_NAME.to_string(),
            persistent_volume_claim: Some(api::storage::PersistentVolumeClaimVolumeSource {
                claim_name: volumes::claim_name(i),
                read_only: false,
            }),
            ..Default::default()
        }];
        let pod = Arc::new(pod);
        let uid = self.create_pod(pod.clone(), namespace, file, signature)?;
        // Each pod has its own template: drop its compiled entry rather than keep one per pod.
        self.compiled.remove(&(Arc::as_ptr(&pod) as usize));
        Ok(uid)
    }

    /// Creates a pod from `template`. `signature`: the interned key and value of the `signature`
    /// label scheduler_perf's createPods gives a pod made from a template file
    /// (`signature-label-<index / signatureBatchSize>`), which decides which pods can batch.
    pub(super) fn create_pod(
        &mut self,
        template: Arc<api::Pod>,
        namespace: &str,
        file: &str,
        signature: Option<(Sym, Sym)>,
    ) -> Result<PodUid, InputError> {
        let now = self.now();
        self.create_pod_at(template, namespace, file, signature, now)
    }

    /// [`create_pod`](Self::create_pod) with its creation time `now` read by the caller: a
    /// `createPods` op reads the clock once per chunk of pods it creates back to back
    /// (`CREATE_CHUNK_PODS`), as a client creating a burst of pods at that instant would.
    pub(super) fn create_pod_at(
        &mut self,
        template: Arc<api::Pod>,
        namespace: &str,
        file: &str,
        signature: Option<(Sym, Sym)>,
        now: u64,
    ) -> Result<PodUid, InputError> {
        let name = pod_name(&template.metadata, self.pods_created);
        self.pods_created += 1;
        let uid = self.uids.next_uid();
        let info = self.compile_from_template(&template, namespace, name, uid, file, signature)?;
        self.admit_pod(Arc::new(info), template, namespace, file, now)
    }

    /// The scheduling thread's part of creating a pod whose `PodInfo` is built (named, with its uid
    /// and labels; in-thread by [`create_pod_at`](Self::create_pod_at) or by a `createPods` op's
    /// producer thread, `producer.rs`): its profile, the measurement window, the snapshot's queries,
    /// PreEnqueue, its record and its queue insert, at creation time `now`. A per-pod hook that needs
    /// the cluster (objects made from the pod's templates, say) goes here, before `prepare_pod`:
    /// `info` is not shared yet (`Arc::get_mut` succeeds), whichever thread built it.
    pub(super) fn admit_pod(
        &mut self,
        info: Arc<PodInfo>,
        template: Arc<api::Pod>,
        namespace: &str,
        file: &str,
        now: u64,
    ) -> Result<PodUid, InputError> {
        let uid = info.uid;
        let mut info = info;
        if let Some(refs) = info.claims.clone() {
            let claims = self.make_pod_claims(&refs, namespace, &info.name, uid);
            Arc::make_mut(&mut info).claims = Some(claims);
        }
        let profile = self.profile_of(&info).ok_or_else(|| {
            InputError::new(
                file,
                "spec.schedulerName",
                format!("no scheduler profile named {:?}", self.snap.interner.resolve(info.scheduler_name)),
            )
        })?;
        let measured = self.window.measures(namespace);
        if measured && self.window.start_nanos.is_none() {
            self.window.start_nanos = Some(now);
        }
        self.snap.prepare_pod(&info);
        let gated = !self.frameworks[profile].run_pre_enqueue(&info).is_success();
        let priority = info.priority;
        if let Some(c) = self.largest_shape_candidate(&info) {
            self.largest_shape = c;
        }
        if *self.last_namespace != *namespace {
            self.last_namespace = Arc::from(namespace);
        }
        self.push_rec(
            uid,
            PodRec {
                info,
                template,
                namespace: self.last_namespace.clone(),
                created_by_run: true,
                measured,
                profile,
                attempts: 0,
                unschedulable: false,
                created_nanos: now,
                scheduled_nanos: None,
                bound_nanos: None,
                running_nanos: None,
                failed: false,
                state: PodState::Queued,
            },
        );
        self.trace(now, uid, "created", |_| serde_json::json!({"gated": gated}));
        if let Some(key) = self.group_key_of(uid) {
            self.enqueue_group_member(uid, key, now);
            return Ok(uid);
        }
        let spec = self.rec(uid).info.clone();
        let mut qp = QueuedPod::new(uid, priority, ()).gated(gated).with_spec(spec);
        qp.timestamp_nanos = now;
        self.queue.add(qp, now);
        Ok(uid)
    }

    /// The compiled entry of `template` in `namespace`, compiled now (with the pod's `name` and
    /// `uid`) when it is new: once per (template, namespace).
    pub(super) fn compiled_template(
        &mut self,
        template: &Arc<api::Pod>,
        namespace: &str,
        name: &str,
        uid: PodUid,
        file: &str,
    ) -> Result<&mut CompiledTemplate, InputError> {
        let key = Arc::as_ptr(template) as usize;
        let known = self
            .compiled
            .get(&key)
            .and_then(|v| v.iter().position(|c| Arc::ptr_eq(&c.template, template) && c.namespace == namespace));
        let at = match known {
            Some(at) => at,
            None => {
                let mut pod = (**template).clone();
                pod.metadata.namespace = namespace.to_string();
                let wk = self.snap.wk.clone();
                let info = compile_pod(&pod, name, uid, &self.priorities, &mut self.snap.interner, &wk)
                    .map_err(|e| InputError::new(file, "spec.priorityClassName", e))?;
                let start_from_uid = pod
                    .status
                    .start_time
                    .as_deref()
                    .or(pod.metadata.creation_timestamp.as_deref())
                    .and_then(crate::api::time::rfc3339_ms)
                    .is_none();
                let entry = CompiledTemplate {
                    template: template.clone(),
                    namespace: namespace.to_string(),
                    info,
                    start_from_uid,
                    signed: None,
                    last_signature: None,
                };
                let v = self.compiled.entry(key).or_default();
                // A template pointer freed and reused by another template: the old entry is stale.
                v.retain(|c| Arc::ptr_eq(&c.template, template));
                v.push(entry);
                v.len() - 1
            }
        };
        Ok(&mut self.compiled.get_mut(&key).expect("compiled above")[at])
    }

    /// The compiled pod for `template` in `namespace`, with the `signature` label when given:
    /// compiled once per (template, namespace), the label added once per signature value, and
    /// cloned with the pod's own uid and name (and start time, when the template sets none).
    pub(super) fn compile_from_template(
        &mut self,
        template: &Arc<api::Pod>,
        namespace: &str,
        name: String,
        uid: PodUid,
        file: &str,
        signature: Option<(Sym, Sym)>,
    ) -> Result<PodInfo, InputError> {
        let c = self.compiled_template(template, namespace, &name, uid, file)?;
        let mut info = match signature {
            None => c.info.clone(),
            Some((_, value)) if c.signed.as_ref().is_some_and(|(v, _)| *v == value) => {
                c.signed.as_ref().expect("checked").1.clone()
            }
            Some((label, value)) => {
                let mut info = c.info.clone();
                match info.labels.binary_search_by_key(&label, |(k, _)| *k) {
                    Ok(i) => info.labels[i].1 = value,
                    Err(i) => info.labels.insert(i, (label, value)),
                }
                // Kept from the second pod of a batch on: with a batch of one (the default) every
                // pod has its own value, and keeping would cost a second clone per pod.
                if c.last_signature == Some(value) {
                    c.signed = Some((value, info.clone()));
                }
                c.last_signature = Some(value);
                info
            }
        };
        info.uid = uid;
        info.name = name;
        if c.start_from_uid {
            info.constraints.start_time_ms = uid.0 as i64;
        }
        Ok(info)
    }

    /// `allocResourceClaims` ([`alloc_resource_claims_in`]); a claim that fits nowhere fails the
    /// workload, as upstream's op fails its test.
    pub(super) fn alloc_resource_claims(&mut self, namespace: &str) -> Result<(), RunError> {
        alloc_resource_claims_in(&mut self.snap, namespace)
            .map_err(|e| RunError::Failed(format!("allocResourceClaims in namespace {namespace}: {e}")))
    }

    /// DRA: the claim refs of pod `name` (a template's compiled refs are the first pod's), with
    /// its claims from templates made as the resourceclaim controller makes them, at creation.
    fn make_pod_claims(
        &mut self,
        refs: &crate::snapshot::dra::PodClaimRefs,
        namespace: &str,
        name: &str,
        uid: PodUid,
    ) -> Arc<crate::snapshot::dra::PodClaimRefs> {
        let mut refs = refs.for_pod(name, uid);
        refs.pod.metadata.namespace = namespace.to_string();
        let made = crate::plugins::dynamicresources::controller::create_pod_claims_named(
            &mut refs.pod,
            namespace,
            &mut self.snap.cluster.dra,
        );
        self.claims_made(namespace, &made);
        Arc::new(refs)
    }

    pub(super) fn largest_shape_candidate(&self, info: &PodInfo) -> Option<(i64, i64)> {
        larger_shape(self.largest_shape, (info.requests.cpu_milli, info.requests.memory))
    }

    /// Deletes a pod wherever it is: out of the queue, or off its node (the agent stops it). A
    /// pod with DRA claims first leaves them as the resourceclaim controller makes it
    /// (`controller::release_pod_claims`), so the deletion event finds its devices free.
    pub(super) fn delete_pod(&mut self, uid: PodUid) {
        let state = self.rec(uid).state;
        let now = self.now();
        let mut released = Vec::new();
        if state != PodState::Deleted {
            let info = &self.rec(uid).info;
            if let Some(refs) = info.claims.clone() {
                let namespace = self.snap.interner.resolve(info.namespace).to_string();
                use crate::plugins::dynamicresources::controller::{claim_name, release_pod_claims, ClaimRef};
                let store = self.snap.cluster.dra.claims.get_mut();
                // The pod's claims as they were, for the update events (only when they will be read).
                let mut before = Vec::new();
                if self.queue.wants_event_objects() {
                    for entry in &refs.pod.spec.resource_claims {
                        if let ClaimRef::Named(name) = claim_name(&refs.pod, entry) {
                            if let Some(c) = store.get(&(namespace.clone(), name.to_string())) {
                                before.push(c.clone());
                            }
                        }
                    }
                }
                let changed = release_pod_claims(&refs.pod, &namespace, store);
                for key in changed {
                    if let Some(i) =
                        before.iter().position(|c| c.metadata.namespace == key.0 && c.metadata.name == key.1)
                    {
                        released.push(before.swap_remove(i));
                    }
                }
            }
        }
        match state {
            PodState::Deleted => return,
            PodState::Queued => {
                self.remove_group_member(uid);
                self.queue.delete(uid);
                self.snap.clear_nomination(uid);
                let r = self.cache.delete(uid);
                self.note_cache(r);
            }
            PodState::Assumed(_) | PodState::Bound(_) => {
                self.remove_group_member(uid);
                if let Some(placed) = self.snap.unplace_pod(uid) {
                    let node = self.snap.nodes.idx_of(placed.node).map_or(u32::MAX, |n| n.0);
                    let objs = self.deleted_pod_objects(uid);
                    self.queue.on_event_with(ClusterEvent::AssignedPodDelete { pod: uid, node }, objs, now);
                }
                let r = self.cache.delete(uid);
                self.note_cache(r);
                if matches!(state, PodState::Assumed(_)) {
                    self.binds_in_flight -= 1;
                    // Not yet handed to the binder: it never will be.
                    if let Some(i) = self.bind_batch.iter().position(|j| j.pod.uid == uid) {
                        self.bind_batch.remove(i);
                    }
                    // Waiting on Permit: the wait ends with the pod (upstream rejects it).
                    let profile = self.rec(uid).profile;
                    if self.waiting[profile].contains(uid) {
                        self.waiting[profile].remove(uid);
                        self.parked.retain(|(_, j)| j.pod.uid != uid);
                        if let Some(b) = &self.binder {
                            b.reject(uid, "the pod was deleted while waiting on permit");
                        }
                    }
                }
                self.agent.delete(uid);
            }
        }
        self.trace(now, uid, "deleted", |_| serde_json::Value::Null);
        self.rec_mut(uid).state = PodState::Deleted;
        self.deleted += 1;
        // The resourceclaim controller's updates reach the queue after the pod's deletion.
        self.claims_released(released);
    }

    pub(super) fn delete_node(&mut self, name: &str) {
        let Some(sym) = self.snap.interner.get(name) else { return };
        let Some(idx) = self.snap.nodes.idx_of(sym) else { return };
        for uid in self.snap.nodes.pods[idx.ix()].clone() {
            self.delete_pod(uid);
        }
        let idx = self.snap.nodes.idx_of(sym).expect("node still there");
        self.snap.remove_node(sym);
        // The node as it was (PodTopologySpread reads its labels); unknown for a loaded cluster's node.
        let old = self.node_objects.remove(name);
        let objs = (self.queue.wants_event_objects() && old.is_some())
            .then(|| Arc::new(EventObjects { old_node: old, ..EventObjects::default() }));
        let now = self.now();
        self.queue.on_event_with(ClusterEvent::NodeDelete { node: idx.0 }, objs, now);
    }

    /// `createAny` and churn: adds any object to the cluster.
    pub(super) fn create_object(
        &mut self,
        obj: &Object,
        namespace: Option<&str>,
        file: &str,
    ) -> Result<ChurnObject, InputError> {
        Ok(match obj {
            Object::Node(n) => ChurnObject::Node(self.create_node(n.clone(), file)?),
            Object::Pod(p) => {
                let ns = namespace.map(str::to_string).unwrap_or_else(|| p.namespace().to_string());
                ChurnObject::Pod(self.create_pod(Arc::new(p.clone()), &ns, file, None)?)
            }
            Object::PodGroup(g) => {
                let ns = namespace.map(str::to_string).unwrap_or_else(|| g.namespace().to_string());
                if self.groups.enabled {
                    self.add_pod_group(g, &ns);
                }
                let mut placed = g.clone();
                placed.metadata.namespace = ns;
                self.cluster.pod_groups.push(placed);
                ChurnObject::Other
            }
            Object::PriorityClass(pc) => {
                self.priorities.add(pc);
                // Compiled templates resolved their priority against the old classes.
                self.compiled.clear();
                crate::cluster::register_object(&mut self.snap, obj);
                self.cluster.priority_classes.push(pc.clone());
                ChurnObject::Other
            }
            Object::ResourceSlice(slice) if !self.snap.cluster.dra.features.list_type_attributes => {
                refuse_list_attributes(slice, file)?;
                self.create_object_plain(obj, namespace)
            }
            other => self.create_object_plain(other, namespace),
        })
    }

    /// `createAny` of a kind registered as it is (DRA, storage, services, ...): in the op's
    /// namespace when it names one (churn: namespaced kinds only, as upstream's churn op creates
    /// them).
    fn create_object_plain(&mut self, other: &Object, namespace: Option<&str>) -> ChurnObject {
        let placed = namespace.and_then(|ns| other.in_namespace(ns)).unwrap_or_else(|| other.clone());
        crate::cluster::register_object(&mut self.snap, &placed);
        self.storage_event(&placed, StorageAction::Add);
        self.dra_object_event(&placed, DraAction::Add, None);
        self.cluster.add(placed);
        ChurnObject::Other
    }

    /// `updateAny`: replaces a node or a pod by name, as upstream's Update + UpdateStatus do.
    pub(super) fn update_object(
        &mut self,
        obj: &Object,
        namespace: Option<&str>,
        file: &str,
    ) -> Result<(), InputError> {
        let now = self.now();
        match obj {
            Object::Node(node) => {
                let name = node.metadata.name.clone();
                let missing =
                    || InputError::new(file, "metadata.name", format!("updateAny: node {name:?} does not exist"));
                let sym = self.snap.interner.get(&name).ok_or_else(missing)?;
                if self.snap.nodes.idx_of(sym).is_none() {
                    return Err(missing());
                }
                let spec = compile_node(node, &mut self.snap.interner);
                let change = self.apply_node_update(name, spec, node_fingerprint(node), file)?;
                // As every update, even one that changed nothing the events name.
                self.queue.on_event_with(ClusterEvent::NodeUpdate { node: change.0, change: change.1 }, change.2, now);
            }
            Object::Pod(pod) => {
                let ns = namespace.map(str::to_string).unwrap_or_else(|| pod.namespace().to_string());
                let name = pod.metadata.name.clone();
                let uid = self
                    .pods
                    .iter()
                    .find(|r| r.state != PodState::Deleted && *r.namespace == *ns && r.info.name == name)
                    .map(|r| r.info.uid)
                    .ok_or_else(|| {
                        InputError::new(file, "metadata.name", format!("updateAny: pod {ns}/{name} does not exist"))
                    })?;
                let mut p = pod.clone();
                p.metadata.namespace = ns;
                let wk = self.snap.wk.clone();
                let info = compile_pod(&p, &name, uid, &self.priorities, &mut self.snap.interner, &wk)
                    .map_err(|e| InputError::new(file, "spec.priorityClassName", e))?;
                let old = self.rec(uid).info.clone();
                let scaled_down = requests_scaled_down(&old.requests, &info.requests);
                let info = Arc::new(info);
                self.snap.prepare_pod(&info);
                let state = self.rec(uid).state;
                {
                    let rec = self.rec_mut(uid);
                    rec.info = info.clone();
                    rec.template = Arc::new(p);
                }
                match state {
                    PodState::Queued => {
                        self.queue.update_spec(uid, info.clone());
                        let profile = self.rec(uid).profile;
                        if self.frameworks[profile].run_pre_enqueue(&info).is_success() && self.queue.remove_gate(uid) {
                            self.trace(now, uid, "ungated", |_| serde_json::Value::Null);
                        } else {
                            let objs = self.queue.wants_event_objects().then(|| {
                                Arc::new(EventObjects {
                                    old_pod: Some(old.clone()),
                                    new_pod: Some(info.clone()),
                                    ..EventObjects::default()
                                })
                            });
                            self.queue.on_event_with(ClusterEvent::UnscheduledPodUpdate { pod: uid }, objs, now);
                        }
                    }
                    PodState::Assumed(node) | PodState::Bound(node) => {
                        self.snap.unplace_pod(uid);
                        self.snap
                            .place_pod(info.clone(), node)
                            .map_err(|e| InputError::new(file, "metadata.name", e))?;
                        let idx = self.snap.nodes.idx_of(node).map_or(u32::MAX, |n| n.0);
                        let objs = self.queue.wants_event_objects().then(|| {
                            Arc::new(EventObjects {
                                old_pod: Some(old.clone()),
                                new_pod: Some(info.clone()),
                                ..EventObjects::default()
                            })
                        });
                        self.queue.on_event_with(
                            ClusterEvent::AssignedPodUpdate { pod: uid, node: idx, resources_scaled_down: scaled_down },
                            objs,
                            now,
                        );
                    }
                    PodState::Deleted => {}
                }
            }
            other => {
                // Objects the scheduler reads as a whole (services, PDBs, namespaces) are replaced,
                // in the op's namespace when it names one.
                let placed = namespace.and_then(|ns| other.in_namespace(ns)).unwrap_or_else(|| other.clone());
                let before = self.dra_object_before(&placed);
                crate::cluster::register_object(&mut self.snap, &placed);
                self.storage_event(&placed, StorageAction::Update);
                self.dra_object_event(&placed, DraAction::Update, before);
            }
        }
        Ok(())
    }
}

/// `allocResourceClaims`: the namespace's unallocated claims allocated on the nodes sorted by name
/// (`controller::alloc_resource_claims`, the oracle's order). The snapshot's DRA objects change only
/// when every claim found a node; the error names the claim that fits nowhere.
pub(crate) fn alloc_resource_claims_in(snap: &mut Snapshot, namespace: &str) -> Result<(), String> {
    use crate::plugins::dynamicresources::{allocator::NodeView, controller, plugin, selectors::CelSelectors};
    let dra = {
        let snap = &*snap;
        let mut nodes: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
        nodes.sort_by(|a, b| snap.node_name(*a).cmp(snap.node_name(*b)));
        let matchers: Vec<_> = nodes
            .iter()
            .map(|&n| move |s: &crate::api::objects::NodeSelector| plugin::node_selector_matches(snap, n, s))
            .collect();
        let views: Vec<NodeView<'_>> = nodes
            .iter()
            .zip(&matchers)
            .map(|(&n, m)| NodeView { name: snap.node_name(n), selector_matches: m })
            .collect();
        let mut dra = snap.cluster.dra.clone();
        controller::alloc_resource_claims(&mut dra, namespace, &views, &mut CelSelectors::new())?;
        dra
    };
    snap.cluster.dra = dra;
    Ok(())
}

/// With DRAListTypeAttributes off, the API server drops a slice's list fields
/// (`dropDisableDRAListTypeAttributesFields`) and its validation then finds an attribute without a
/// value, so the create fails (and upstream's `createAny` op with it): the first such attribute,
/// named with its file and field.
fn refuse_list_attributes(slice: &crate::api::resource::ResourceSlice, file: &str) -> Result<(), InputError> {
    for (d, device) in slice.spec.devices.iter().enumerate() {
        for (name, attribute) in &device.attributes {
            if let Some(list) = attribute.list_field() {
                return Err(InputError::new(
                    file,
                    format!("spec.devices[{d}].attributes.{name}.{list}"),
                    "a list attribute needs the DRAListTypeAttributes feature gate: with it off the API server drops \
                     the list and the attribute has no value (exactly one value must be specified)",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    /// `extractPodScaleDown`: any requested resource lower or gone (found by `verify
    /// --hint-random`: an ephemeral-storage scale-down was not one).
    #[test]
    fn requests_scaled_down_is_any_resource_lower() {
        let mut i = crate::snapshot::Interner::new();
        let gpu = i.intern("example.com/gpu");
        let r = |cpu, mem, eph, g: i64| Resources {
            cpu_milli: cpu,
            memory: mem,
            ephemeral_storage: eph,
            scalars: if g > 0 { vec![(gpu, g)].into() } else { Default::default() },
        };
        let cases = [
            ("cpu down", r(2, 1, 1, 1), r(1, 1, 1, 1), true),
            ("memory down", r(1, 2, 1, 1), r(1, 1, 1, 1), true),
            ("ephemeral storage down", r(1, 1, 17, 0), r(1, 1, 6, 0), true),
            ("extended down", r(1, 1, 1, 2), r(1, 1, 1, 1), true),
            ("extended gone", r(1, 1, 1, 2), r(1, 1, 1, 0), true),
            ("unchanged", r(1, 1, 1, 1), r(1, 1, 1, 1), false),
            ("up", r(1, 1, 1, 0), r(2, 2, 2, 1), false),
        ];
        for (name, old, new, want) in cases {
            assert_eq!(requests_scaled_down(&old, &new), want, "{name}");
        }
    }
    use super::*;
    use crate::runner::driver::node_fingerprint;

    fn meta(name: &str, generate_name: &str) -> api::ObjectMeta {
        api::ObjectMeta { name: name.into(), generate_name: generate_name.into(), ..Default::default() }
    }

    #[test]
    fn pods_and_nodes_are_named_as_the_harness_names_them() {
        // (name, generateName, pods created before) -> pod name
        let pods = [
            ("", "", 0, "pod-000000"),
            ("", "", 12, "pod-000012"),
            ("", "web-", 3, "web-000003"),
            ("fixed", "", 0, "fixed"),
            ("fixed", "", 7, "fixed"),
            // A template with both: its name for the first pod, generated ones after.
            ("fixed", "web-", 0, "fixed"),
            ("fixed", "web-", 1, "web-000001"),
        ];
        for (name, generate, created, want) in pods {
            assert_eq!(pod_name(&meta(name, generate), created), want, "{name:?} {generate:?} {created}");
        }
        assert_eq!(node_name(&meta("", ""), 4), "node-4");
        // push_decimal against format!, at widths 0 and 6, across digit counts.
        for n in [0, 7, 99, 123_456, 1_234_567, u64::MAX] {
            for width in [0, 6, 20, 25] {
                let mut got = String::from("x");
                push_decimal(&mut got, n, width);
                assert_eq!(got, format!("x{n:0width$}"), "{n} width {width}");
            }
        }
        assert_eq!(node_name(&meta("", "worker-"), 12), "worker-12");
    }

    #[test]
    fn the_largest_shape_is_more_cpu_then_more_memory() {
        let cases = [
            ((0, 0), (100, 1), Some((100, 1))),
            ((100, 5), (100, 6), Some((100, 6))),
            ((100, 5), (100, 5), None),
            ((100, 5), (99, 1_000), None),
            ((100, 5), (101, 0), Some((101, 0))),
        ];
        for (current, candidate, want) in cases {
            assert_eq!(larger_shape(current, candidate), want, "{current:?} vs {candidate:?}");
        }
    }

    #[test]
    fn a_node_update_reports_exactly_what_changed() {
        let base = api::Node { metadata: meta("n1", ""), ..Default::default() };
        let mut labelled = base.clone();
        labelled.metadata.labels.insert("zone".into(), "a".into());
        let mut tainted = base.clone();
        tainted.spec.taints.push(api::Taint {
            key: "k".into(),
            value: "v".into(),
            effect: api::TaintEffect::NoSchedule,
        });
        let mut cordoned = base.clone();
        cordoned.spec.unschedulable = true;
        let mut resized = base.clone();
        resized.status.allocatable.insert("cpu".into(), api::Quantity::parse("2").unwrap());
        let mut both = labelled.clone();
        both.spec.unschedulable = true;
        let mut declaring = base.clone();
        declaring.status.declared_features = vec!["Feature1".into(), "Feature2".into()];
        let cases = [
            (&declaring, NodeChange::DECLARED_FEATURES),
            (&base, NodeChange::default()),
            (&labelled, NodeChange::LABEL),
            (&tainted, NodeChange::TAINT),
            (&cordoned, NodeChange::UNSCHEDULABLE),
            (&resized, NodeChange::ALLOCATABLE),
            (&both, NodeChange::LABEL.union(NodeChange::UNSCHEDULABLE)),
        ];
        for (new, want) in cases {
            assert_eq!(node_change(node_fingerprint(&base), node_fingerprint(new)), want, "{new:?}");
        }
        // A node never seen before (no fingerprint): every bit.
        let all =
            NodeChange::ALLOCATABLE.union(NodeChange::LABEL).union(NodeChange::TAINT).union(NodeChange::UNSCHEDULABLE);
        assert_eq!(node_change([u64::MAX; 5], node_fingerprint(&base)), all.union(NodeChange::DECLARED_FEATURES));
    }
}
