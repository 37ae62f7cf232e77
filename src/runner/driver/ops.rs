//! The workload ops (`createNodes`, `createPods`, `barrier`, ...) and their failed waits.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};

use crate::api::{self, Object};
use crate::error::InputError;
use crate::ids::PodUid;
use crate::runner::objects::{default_node, default_pod};
use crate::runner::RunError;
use crate::snapshot::{Interner, Sym};
use crate::workload::volumes::{self, VolumeTemplates};
use crate::workload::{apply_node_allocatable, label_node_prepare, unique_node_label, ResolvedOp};

use super::{Churner, Driver, FailedWait, PodRec, PodState, Window, UPSTREAM_WAIT_TIMEOUT_NANOS};

/// Pods a `createPods` op creates back to back before the scheduling thread runs the cycles of
/// those ready (the scheduler runs alongside the creator). The chunk's pods share one creation time,
/// read when the chunk starts: a clock read per chunk, not per pod; a pod's creation time is then
/// at most the chunk's creation (64 pods, ~20-60 us at 0.3-1 us a pod) early, which lengthens its
/// e2e latency by that much at most, and the window still starts at the first measured pod's
/// creation.
const CREATE_CHUNK_PODS: u64 = 64;

/// Why the pods a wait waited for are not done: the most frequent unschedulable reason (the first
/// by name among equals), else gates, else that nothing was attempted.
fn why_not_done(unschedulable_reasons: &BTreeMap<String, u64>, any_gated: bool) -> String {
    let mut reasons: Vec<(&String, &u64)> = unschedulable_reasons.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1));
    match reasons.first() {
        Some((r, _)) => format!("the most frequent unschedulable reason was: {r}"),
        None if any_gated => "pods still have scheduling gates".to_string(),
        None => "no scheduling attempt failed; the pods were never attempted".to_string(),
    }
}

/// The `signature` label of a createPods op's pods (`workload::signature_label`: the value changes
/// every `signatureBatchSize` pods), interned once per batch instead of formatted and interned
/// once per pod.
struct Signatures {
    batch_size: u64,
    /// The batch last asked for, with its interned key and value.
    last: Option<(u64, (Sym, Sym))>,
    /// The interned key `signature`, once interned.
    key: Option<Sym>,
    /// The value's text, rebuilt in place for each batch.
    buf: String,
}

impl Signatures {
    fn new(batch_size: u64) -> Self {
        Signatures { batch_size, last: None, key: None, buf: String::new() }
    }

    /// The interned (key, value) of the label of pod `index` of the op.
    fn label(&mut self, interner: &mut Interner, index: u64) -> (Sym, Sym) {
        let batch = index / self.batch_size.max(1);
        match self.last {
            Some((b, label)) if b == batch => label,
            _ => {
                let key = *self.key.get_or_insert_with(|| interner.intern("signature"));
                write_signature_label(&mut self.buf, batch);
                let label = (key, interner.intern(&self.buf));
                self.last = Some((batch, label));
                label
            }
        }
    }
}

/// `signature_label` of a pod of batch `batch` into `buf` (cleared first), without `format!`.
fn write_signature_label(buf: &mut String, batch: u64) {
    const PREFIX: &str = "signature-label-";
    buf.clear();
    buf.push_str(PREFIX);
    super::cluster_ops::push_decimal(buf, batch, 0);
}

impl Driver {
    /// The end of a wait that upstream's harness would fail: what is missing, and why.
    pub(super) fn wait_failure(&self, what: &str, pending: &[&PodRec], total: usize, timed_out: bool) -> RunError {
        let gated = pending.iter().any(|r| !r.info.scheduling_gates.is_empty());
        let why = why_not_done(&self.unschedulable_reasons, gated);
        let example = pending.first().map(|r| format!(" (first: {}/{})", r.namespace, r.info.name)).unwrap_or_default();
        let how = if timed_out {
            "after upstream's 10-minute wait".to_string()
        } else {
            "and nothing more could happen (upstream's harness would time out after 10 minutes)".to_string()
        };
        RunError::Failed(format!(
            "op {} ({what}): {} of {total} pods not done {how}{example}; {why}",
            self.op_index,
            pending.len()
        ))
    }

    // ---- ops -------------------------------------------------------------------------------

    pub(super) fn run_op(&mut self, op: &ResolvedOp) -> Result<(), RunError> {
        match op {
            ResolvedOp::CreateNodes {
                count,
                node_template_path,
                node_allocatable_strategy,
                label_node_prepare_strategy,
                unique_node_label_strategy,
                template_params,
            } => {
                let file =
                    node_template_path.as_ref().map_or("<default node>".to_string(), |p| p.display().to_string());
                // The built-in node is parsed once per op, not once per node (parsing it was 30% of a
                // HostPortConflict run's instructions).
                let builtin = node_template_path.is_none().then(default_node);
                for i in 0..*count {
                    let mut node = match node_template_path {
                        Some(p) => self.templates.node(p, i, *count, template_params)?,
                        None => builtin.clone().unwrap_or_else(default_node),
                    };
                    if let Some(s) = label_node_prepare_strategy {
                        if let Some((k, v)) = label_node_prepare(i, s) {
                            node.metadata.labels.insert(k.to_string(), v.to_string());
                        }
                    }
                    if let Some(s) = unique_node_label_strategy {
                        let (k, v) = unique_node_label(self.nodes_created, s);
                        node.metadata.labels.insert(k.to_string(), v);
                    }
                    if let Some(s) = node_allocatable_strategy {
                        // The apiserver defaults allocatable to capacity; upstream's strategy then adds
                        // its keys to that (`NodeAllocatableStrategy.PrepareNode`).
                        if node.status.allocatable.is_empty() {
                            node.status.allocatable = node.status.capacity.clone();
                        }
                        let base: BTreeMap<String, String> =
                            node.status.allocatable.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
                        for (k, v) in apply_node_allocatable(&base, s) {
                            let q = api::Quantity::parse(&v).map_err(|e| {
                                InputError::new(&file, format!("nodeAllocatableStrategy.nodeAllocatable.{k}"), e)
                            })?;
                            node.status.allocatable.insert(k, q);
                        }
                    }
                    let name = self.create_node(node, &file)?;
                    if let Some(s) = node_allocatable_strategy {
                        self.create_storage(&[volumes::csi_node(&name, s)], &file)?;
                    }
                }
                if let Some(n) = self.hooks.node_declared_features {
                    self.declare_node_features(n, &file)?;
                }
            }
            ResolvedOp::CreateNamespaces { prefix, count, namespace_template_path } => {
                for i in 0..*count {
                    let mut ns = api::Namespace::default();
                    if let Some(p) = namespace_template_path {
                        if let Some(Object::Namespace(n)) =
                            self.templates.instantiate(p, i, *count, &BTreeMap::new())?.first()
                        {
                            ns = n.clone();
                        }
                    }
                    ns.metadata.name = format!("{prefix}-{i}");
                    crate::cluster::register_object(&mut self.snap, &Object::Namespace(ns.clone()));
                    self.cluster.namespaces.push(ns);
                }
            }
            ResolvedOp::CreatePods {
                count,
                namespace,
                pod_template_path,
                collect_metrics,
                skip_wait_to_completion,
                steady_state,
                duration,
                template_params,
                signature_batch_size,
                persistent_volume_template_path,
                persistent_volume_claim_template_path,
            } => {
                let volume_templates = match (persistent_volume_template_path, persistent_volume_claim_template_path) {
                    (Some(pv), Some(pvc)) => Some(VolumeTemplates::load(pv, pvc)?),
                    _ => None,
                };
                if *collect_metrics {
                    self.window = Window { open: true, namespaces: vec![namespace.clone()], start_nanos: None };
                    if let Some(pb) = &self.progress {
                        pb.set_length(*count);
                        pb.set_position(0);
                    }
                }
                let file = pod_template_path.as_ref().map_or("<default pod>".to_string(), |p| p.display().to_string());
                let mut uids = Vec::with_capacity(*count as usize);
                // Every pod gets a record (and a measured one a bind time): grow once, not by doubling
                // (each doubling copied every record and touched fresh pages while pods were scheduled).
                self.pods.reserve(*count as usize);
                if *collect_metrics {
                    self.measured_bind_nanos.reserve(*count as usize);
                }
                // A static template is one shared object: looked up once, not once per pod.
                let static_template = match pod_template_path {
                    Some(p) => self.templates.static_pod(p)?,
                    None => Some(default_pod()),
                };
                let mut signatures = pod_template_path.as_ref().map(|_| Signatures::new(*signature_batch_size));
                // A large op's pods are built on a producer thread (`producer.rs`) and admitted here,
                // in order, at the same points as pods built in-thread.
                let mut producer = match (&static_template, &volume_templates) {
                    (Some(t), None) => {
                        let first = signatures.as_mut().map(|s| s.label(&mut self.snap.interner, 0));
                        self.start_producer(t, namespace, &file, *count, first)
                    }
                    _ => None,
                };
                // The creation time of the chunk of pods being created (read once per chunk).
                let mut chunk_nanos = 0;
                for i in 0..*count {
                    let t = match (&static_template, pod_template_path) {
                        (Some(t), _) => t.clone(),
                        (None, Some(p)) => self.templates.pod(p, i, *count, template_params)?,
                        (None, None) => default_pod(),
                    };
                    let signature = signatures.as_mut().map(|s| s.label(&mut self.snap.interner, i));
                    if i % CREATE_CHUNK_PODS == 0 {
                        chunk_nanos = self.now();
                    }
                    match &volume_templates {
                        None => uids.push(match &mut producer {
                            Some(p) => self.create_produced_pod(p, t, namespace, &file, signature, chunk_nanos)?,
                            None => self.create_pod_at(t, namespace, &file, signature, chunk_nanos)?,
                        }),
                        Some(vt) => uids.push(self.create_pod_with_claim(vt, t, namespace, i, &file, signature)?),
                    }
                    // Keep scheduling while creating, as the scheduler runs alongside the creator.
                    if i % CREATE_CHUNK_PODS == CREATE_CHUNK_PODS - 1 {
                        self.drain();
                        while self.schedule_next() {}
                        self.flush_binds();
                    }
                }
                drop(producer);
                if *steady_state {
                    let end = self.now() + duration.unwrap_or_default().as_nanos() as u64;
                    let tmpl = pod_template_path.clone();
                    while self.now() < end {
                        self.run_until(Some(end.min(self.now() + 5_000_000)), &|_| false)?;
                        // Bound pods finish and are replaced, keeping `count` pods in the namespace.
                        for (j, slot) in uids.iter_mut().enumerate() {
                            if matches!(self.pods[(slot.0 - 1) as usize].state, PodState::Bound(_)) {
                                self.delete_pod(*slot);
                                let t = match (&static_template, &tmpl) {
                                    (Some(t), _) => t.clone(),
                                    (None, Some(p)) => self.templates.pod(p, j as u64, *count, template_params)?,
                                    (None, None) => default_pod(),
                                };
                                let signature = signatures.as_mut().map(|s| s.label(&mut self.snap.interner, j as u64));
                                *slot = self.create_pod(t, namespace, &file, signature)?;
                            }
                        }
                    }
                } else if !*skip_wait_to_completion {
                    let start = self.now();
                    let from = Cell::new(0);
                    self.run_until(None, &|d: &Driver| d.uids_scheduled_from(&uids, &from))?;
                    let pending: Vec<&PodRec> = uids
                        .iter()
                        .map(|u| self.rec(*u))
                        .filter(|r| matches!(r.state, PodState::Queued | PodState::Assumed(_)))
                        .collect();
                    if !pending.is_empty() {
                        let timed_out = self.now().saturating_sub(start) >= UPSTREAM_WAIT_TIMEOUT_NANOS;
                        let err = self.wait_failure(
                            &format!("createPods in namespace {namespace} waits for its pods to be scheduled"),
                            &pending,
                            uids.len(),
                            timed_out,
                        );
                        let not_done = pending.len();
                        self.failed_wait = Some(FailedWait { op: self.op_index, waited_for: uids.len(), not_done });
                        return Err(err);
                    }
                }
                if *collect_metrics {
                    self.window.open = false;
                }
            }
            ResolvedOp::DeletePods { namespace, label_selector, skip_wait_to_completion, delete_pods_per_second } => {
                let targets: Vec<PodUid> = self
                    .pods
                    .iter()
                    .filter(|r| r.state != PodState::Deleted && *r.namespace == **namespace)
                    .filter(|r| label_selector.iter().all(|(k, v)| r.template.metadata.labels.get(k) == Some(v)))
                    .map(|r| r.info.uid)
                    .collect();
                let gap = if *delete_pods_per_second > 0 { 1_000_000_000 / delete_pods_per_second } else { 0 };
                if *skip_wait_to_completion && gap > 0 {
                    // Deletion goes on in the background while the next ops run, as upstream.
                    self.deleters.push(super::background::Deleter {
                        next_nanos: self.now(),
                        interval_nanos: gap,
                        left: targets.into_iter().collect(),
                    });
                    return Ok(());
                }
                for uid in targets {
                    if gap > 0 {
                        let until = self.now() + gap;
                        self.run_until(Some(until), &|_| false)?;
                    }
                    self.delete_pod(uid);
                }
                if !*skip_wait_to_completion {
                    self.drain();
                }
            }
            ResolvedOp::Churn { mode, number, interval_ms, namespace, template_paths } => {
                let now = self.now();
                self.churners.push(Churner {
                    recreate: matches!(mode, crate::workload::spec::ChurnMode::Recreate),
                    number: *number,
                    interval_nanos: interval_ms * 1_000_000,
                    namespace: namespace.clone(),
                    templates: template_paths.clone(),
                    next_nanos: now,
                    created: 0,
                    alive: template_paths.iter().map(|_| VecDeque::new()).collect(),
                });
            }
            ResolvedOp::Barrier { namespaces, label_selector, stage_requirement } => {
                let attempted = matches!(stage_requirement, crate::workload::spec::StageRequirement::Attempted);
                let ns = namespaces.clone();
                let sel = label_selector.clone();
                let pred = move |r: &PodRec| {
                    r.created_by_run
                        && (ns.is_empty() || ns.iter().any(|n| **n == *r.namespace))
                        && sel.iter().all(|(k, v)| r.template.metadata.labels.get(k) == Some(v))
                };
                let start = self.now();
                let from = Cell::new(0);
                self.run_until(None, &|d: &Driver| {
                    if attempted {
                        d.pods_settled(&pred, true)
                    } else {
                        d.pods_scheduled_from(&pred, &from)
                    }
                })?;
                let matching: Vec<&PodRec> = self.pods.iter().filter(|r| pred(r)).collect();
                let pending: Vec<&PodRec> = matching.iter().copied().filter(|r| !r.settled(attempted)).collect();
                if !pending.is_empty() {
                    let timed_out = self.now().saturating_sub(start) >= UPSTREAM_WAIT_TIMEOUT_NANOS;
                    let what = if attempted { "barrier: every pod attempted" } else { "barrier: every pod scheduled" };
                    let err = self.wait_failure(what, &pending, matching.len(), timed_out);
                    let (waited_for, not_done) = (matching.len(), pending.len());
                    self.failed_wait = Some(FailedWait { op: self.op_index, waited_for, not_done });
                    return Err(err);
                }
            }
            ResolvedOp::AllocResourceClaims { namespace } => self.alloc_resource_claims(namespace)?,
            ResolvedOp::Sleep { duration } => {
                let until = self.now() + duration.as_nanos() as u64;
                self.run_until(Some(until), &|_| false)?;
            }
            ResolvedOp::StartCollectingMetrics { namespaces, .. } => {
                self.window = Window { open: true, namespaces: namespaces.clone(), start_nanos: None };
            }
            ResolvedOp::StopCollectingMetrics => {
                // The pods measured now: those created later in the wait are not waited for.
                let measured: Vec<PodUid> = self.pods.iter().filter(|r| r.measured).map(|r| r.info.uid).collect();
                let from = Cell::new(0);
                self.run_until(None, &|d: &Driver| d.uids_scheduled_from(&measured, &from))?;
                self.window.open = false;
            }
            ResolvedOp::CreateAny { template_path, namespace, count, template_params } => {
                let file = template_path.display().to_string();
                for i in 0..*count {
                    let objs = self.templates.instantiate(template_path, i, *count, template_params)?;
                    for o in objs.iter() {
                        if let Some(ns) = namespace.as_deref().filter(|ns| o.in_namespace(ns).is_none()) {
                            // Upstream's createAny refuses a namespace for a cluster-scoped object.
                            return Err(InputError::new(
                                &file,
                                "namespace",
                                format!("createAny: namespace {ns:?} set, but a {} is cluster-scoped", o.kind()),
                            )
                            .into());
                        }
                        self.create_object(o, namespace.as_deref(), &file)?;
                    }
                }
            }
            ResolvedOp::CreatePodGroups { template_path, namespace, count, template_params } => {
                // Upstream's `runCreatePodGroupsOp`: one PodGroup per index, in the op's namespace.
                let file = template_path.display().to_string();
                for i in 0..*count {
                    let objs = self.templates.instantiate(template_path, i, *count, template_params)?;
                    for o in objs.iter() {
                        if !matches!(o, crate::api::Object::PodGroup(_)) {
                            return Err(InputError::new(
                                &file,
                                "kind",
                                format!("createPodGroups: the template holds a {}: expected a PodGroup", o.kind()),
                            )
                            .into());
                        }
                        self.create_object(o, Some(namespace), &file)?;
                    }
                }
            }
            ResolvedOp::UpdateAny { template_path, namespace, count, update_per_second, .. } => {
                let file = template_path.display().to_string();
                // As upstream's ticker: the first update one interval after the op starts.
                let gap = if *update_per_second > 0 { 1_000_000_000 / update_per_second } else { 0 };
                for i in 0..*count {
                    if gap > 0 {
                        let until = self.now() + gap;
                        self.run_until(Some(until), &|_| false)?;
                    }
                    let objs = self.templates.instantiate(template_path, i, *count, &BTreeMap::new())?;
                    for o in objs.iter() {
                        self.update_object(o, namespace.as_deref(), &file)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::signature_label;

    #[test]
    fn signatures_are_the_workload_labels_interned_once_per_batch() {
        let mut interner = Interner::default();
        // (batch size, pod indices): each pod's label is `signature_label`'s, whatever the order.
        let cases: &[(u64, &[u64])] =
            &[(1, &[0, 1, 2, 10, 99, 100, 12345, u64::MAX]), (10, &[0, 9, 10, 25, 3, 1009]), (0, &[3, 4, 3])];
        for &(batch, indices) in cases {
            let mut s = Signatures::new(batch);
            for &i in indices {
                let (k, v) = s.label(&mut interner, i);
                assert_eq!(interner.resolve(k), "signature");
                assert_eq!(interner.resolve(v), signature_label(i, batch), "batch {batch}, pod {i}");
            }
        }
    }

    #[test]
    fn a_failed_wait_names_the_most_frequent_reason_else_gates_else_no_attempt() {
        let reasons = |rs: &[(&str, u64)]| rs.iter().map(|(r, n)| (r.to_string(), *n)).collect::<BTreeMap<_, _>>();
        let cases = [
            (reasons(&[("b", 2), ("a", 5), ("c", 1)]), false, "the most frequent unschedulable reason was: a"),
            // Equal counts: the first by name.
            (reasons(&[("z", 3), ("m", 3)]), true, "the most frequent unschedulable reason was: m"),
            (reasons(&[]), true, "pods still have scheduling gates"),
            (reasons(&[]), false, "no scheduling attempt failed; the pods were never attempted"),
        ];
        for (rs, gated, want) in cases {
            assert_eq!(why_not_done(&rs, gated), want, "{rs:?} gated={gated}");
        }
    }
}

#[cfg(test)]
mod create_any_tests {
    use crate::runner::{RunError, RunOptions};

    /// A workload that creates `object` with `createAny` in namespace `spread`, then 4 pods
    /// labelled app=web in `spread` on 2 nodes. The temporary directory holds the templates.
    fn workload(object: &str) -> (tempfile::TempDir, crate::workload::ResolvedWorkload) {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p.display().to_string()
        };
        let node = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/templates/node-default.yaml");
        let object = write("object.yaml", object);
        let pod = write(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: web-\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    image: img\n    resources: {requests: {cpu: 100m}}\n",
        );
        let text = format!(
            "- name: CreateAny\n  workloadTemplate:\n  - opcode: createNodes\n    count: 2\n    nodeTemplatePath: {}\n  - opcode: createAny\n    templatePath: {object}\n    namespace: spread\n  - opcode: createPods\n    count: 4\n    namespace: spread\n    podTemplatePath: {pod}\n    collectMetrics: true\n  workloads:\n  - name: small\n",
            node.display()
        );
        let file = write("w.yaml", &text);
        let tcs = crate::workload::load_workload_file(std::path::Path::new(&file)).unwrap();
        let w = crate::workload::resolve(&tcs[0], &tcs[0].workloads[0]).unwrap();
        (dir, w)
    }

    fn run(w: &crate::workload::ResolvedWorkload) -> Result<crate::report::RunReport, RunError> {
        let opts = RunOptions { virtual_time: true, ..RunOptions::default() };
        crate::runner::driver::run_workload_with(w, &opts, &crate::config::SchedulerConfig::defaults(), &[])
    }

    #[test]
    fn create_any_puts_a_namespaced_object_in_the_ops_namespace() {
        // A Service without a namespace of its own, created in `spread`: it selects the pods there,
        // so their default spreading constraints (DefaultTopologySpreading) have a selector and
        // the report has their skew.
        let (_dir, w) =
            workload("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n");
        let r = run(&w).unwrap();
        assert_eq!(r.accounting.bound, 4);
        let skews = &r.placement_quality.topology_skew;
        assert!(
            skews.iter().any(|s| s.constraint.contains("app=web") && s.constraint.contains("namespace spread")),
            "{skews:?}"
        );
    }

    #[test]
    fn create_any_refuses_a_namespace_for_a_cluster_scoped_object() {
        let (_dir, w) = workload("apiVersion: v1\nkind: Node\nmetadata: {name: extra}\n");
        match run(&w) {
            Err(RunError::Input(e)) => {
                assert_eq!(e.path, "namespace");
                assert!(e.message.contains("cluster-scoped") && e.message.contains("Node"), "{e}");
            }
            other => panic!("expected bad input, got {:?}", other.map(|r| r.accounting)),
        }
    }
}
