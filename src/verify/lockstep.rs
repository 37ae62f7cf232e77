//! Lockstep replay of scheduler_perf workloads against the oracle.
//!
//! Both sides start from the same empty cluster and receive the same objects, rendered once from
//! the workload's templates (so neither sees a field the other does not). Pods are scheduled one
//! at a time, in creation order, each right after it is created: the oracle runs one real
//! scheduling cycle for that pod (`schedule`), schedperf runs its cycle on its own snapshot, and
//! the two choices must be the same node (or both none). Both then hold the pod on that node.
//!
//! Preemption: upstream starts its candidate search at a random offset, so when the two sides
//! nominate different nodes the replay accepts it when schedperf's own candidates include the
//! oracle's node with the same victims; schedperf then follows the oracle's victims and
//! nomination so the states stay equal, and the preemptor is retried at once on both sides.
//! Unschedulable pods stay pending; pending pods are retried (in PrioritySort order) after pods
//! are deleted, after a `createAny` op that creates storage objects, and after each `updateAny`
//! op (whose templated nodes and pods replace the ones of that name on both sides, as upstream's
//! Update + UpdateStatus do).
//!
//! DRA: DeviceClasses, ResourceSlices, ResourceClaims and their templates go to both sides like
//! any object; a pod's claims from templates are made at its creation (schedperf's
//! `controller::create_pod_claims`; the oracle waits for the real resourceclaim controller), a
//! deleted pod's claims are released the same way, and `allocResourceClaims` runs on each side
//! (the oracle's `allocClaims`), so a different allocation shows as a later divergence. Pending
//! pods are retried after a `createAny` of DRA objects, as after storage objects.
//!
//! What a workload does that lockstep cannot replay (churn, steady state) makes it skip
//! that workload with the reason, never count it as agreement.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{start_oracle, Oracle, OracleError, VerifyArgs};
use crate::api::{self, Object};
use crate::cluster::{register_object, UidGen};
use crate::config::SchedulerConfig;
use crate::engine::cycle::CycleResult;
use crate::engine::Engine;
use crate::error::InputError;
use crate::framework::Framework;
use crate::plugins::compile_args;
use crate::plugins::defaultpreemption::podgroup::GroupPostFilter;
use crate::runner::driver::{
    alloc_resource_claims_in, group_algorithm, group_post_filter, has_pod_group_post_filter, member_failure_after,
    pod_name, validate_group, GroupOutcome, GroupTopology, Trial,
};
use crate::snapshot::compile::{compile_node, compile_pod, Priorities};
use crate::snapshot::{PodInfo, Snapshot};
use crate::workload::volumes::{self, VolumeTemplates};
use crate::workload::{
    apply_node_allocatable, label_node_prepare, load_path, render_template, resolve, skip_reason, template_env,
    unique_node_label, workload_labels, LabelFilter, ParamValue, ResolvedOp, ResolvedWorkload,
};

/// The outcome of one workload's replay.
#[derive(Debug, Default)]
pub struct Replay {
    pub pods: u64,
    pub agreed: u64,
    /// Preemptions where the two sides nominated different nodes that schedperf also found valid.
    pub preemption_ties: u64,
    /// Cycles where both sides placed the pod on OpportunisticBatching's hint.
    pub hints: u64,
    /// Members of a failed pod group whose upstream message carries PodGroupPostFilter's (group
    /// preemption found nothing to do) after schedperf's.
    pub group_post_filter: u64,
    /// Pod-group cycles where both sides' PodGroupPostFilter preempted the same victims (as sets)
    /// and nominated the same nodes.
    pub group_preemptions: u64,
    /// Pod-group cycles both sides held back at PreEnqueue (a gang short of `minCount`, a gated pod).
    pub groups_gated: u64,
    pub first_divergence: Option<String>,
}

pub fn run(args: &VerifyArgs) -> Result<i32, InputError> {
    let workloads = select(args)?;
    let mut oracle = start_oracle(args)?;
    let mut failed = false;
    let (mut total, mut agreed) = (0u64, 0u64);
    for (w, skip) in &workloads {
        if let Some(reason) = skip.clone().or_else(|| unsupported(w)) {
            println!("verify: {}: skipped ({reason})", w.name);
            continue;
        }
        match replay(w, &mut oracle) {
            Ok(r) => {
                total += r.pods;
                agreed += r.agreed;
                let ties = if r.preemption_ties > 0 {
                    format!(", {} preemption ties upstream breaks at random", r.preemption_ties)
                } else {
                    String::new()
                };
                let hints =
                    if r.hints > 0 { format!(", {} on a batch hint on both sides", r.hints) } else { String::new() };
                let post = if r.group_post_filter > 0 {
                    format!(", {} with upstream's PodGroupPostFilter message appended", r.group_post_filter)
                } else {
                    String::new()
                };
                let post = if r.group_preemptions > 0 {
                    format!("{post}, {} group preemptions with the same victims and nominations", r.group_preemptions)
                } else {
                    post
                };
                let gated = if r.groups_gated > 0 {
                    format!(", {} pod-group entities held back at PreEnqueue on both sides", r.groups_gated)
                } else {
                    String::new()
                };
                println!("verify: {}: {}/{} pods agree{ties}{hints}{post}{gated}", w.name, r.agreed, r.pods);
                if let Some(d) = r.first_divergence {
                    failed = true;
                    let dir = args.out.join(w.name.replace('/', "_"));
                    let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join("diff.txt"), &d));
                    println!("verify: {}: first divergence (also in {}):\n{d}", w.name, dir.join("diff.txt").display());
                }
            }
            Err(ReplayError::Input(e)) => return Err(e),
            Err(ReplayError::Oracle(e)) => {
                println!("verify: {}: the oracle failed: {e}", w.name);
                return Ok(crate::error::exit::FAILED.into());
            }
        }
    }
    println!("verify: {agreed}/{total} pods agree");
    use crate::error::exit;
    Ok(i32::from(if failed || agreed != total { exit::FAILED } else { exit::OK }))
}

fn select(args: &VerifyArgs) -> Result<Vec<(ResolvedWorkload, Option<String>)>, InputError> {
    let filter = LabelFilter::parse(args.label_filter.as_deref().unwrap_or("short"))?;
    let mut out = Vec::new();
    for path in &args.paths {
        for (_, cases) in load_path(path)? {
            for tc in &cases {
                if !args.test_case.is_empty() && !args.test_case.contains(&tc.name) {
                    continue;
                }
                for w in &tc.workloads {
                    if !args.workload.is_empty() && !args.workload.contains(&w.name) {
                        continue;
                    }
                    // Selected by labels before resolving: a workload left out need not resolve
                    // (upstream's steady-state workloads leave `measurePods` undefined).
                    if args.workload.is_empty() && !filter.matches(&workload_labels(tc, w)) {
                        continue;
                    }
                    // What `schedperf run` skips (disruptionMode, gates it lacks), verify skips too.
                    out.push((resolve(tc, w)?, skip_reason(tc, w)));
                }
            }
        }
    }
    if out.is_empty() {
        return Err(InputError::new(
            "verify",
            "",
            "no workload matches the paths, --test-case, --workload and --label-filter",
        ));
    }
    Ok(out)
}

/// Why a workload cannot be replayed in lockstep, if it cannot.
fn unsupported(w: &ResolvedWorkload) -> Option<String> {
    w.ops.iter().find_map(|op| match op {
        ResolvedOp::Churn { .. } => Some("churn runs against wall-clock time".to_string()),
        ResolvedOp::CreatePods { steady_state: true, .. } => Some("steady-state pod creation".to_string()),
        _ => None,
    })
}

enum ReplayError {
    Input(InputError),
    Oracle(OracleError),
}

impl From<InputError> for ReplayError {
    fn from(e: InputError) -> Self {
        ReplayError::Input(e)
    }
}

impl From<OracleError> for ReplayError {
    fn from(e: OracleError) -> Self {
        ReplayError::Oracle(e)
    }
}

/// One side of the replay: schedperf's snapshot and engine.
struct Ours {
    snap: Snapshot,
    engine: Engine,
    frameworks: Vec<Framework>,
    priorities: Priorities,
    uids: UidGen,
    /// Pods by `namespace/name`: their compiled form and the node they are on.
    pods: BTreeMap<String, (Arc<PodInfo>, Option<String>)>,
    /// Pending pods in creation order.
    pending: Vec<String>,
    /// OpportunisticBatching, when its gate is on; cycles are kube-scheduler's.
    batches: Option<crate::runner::batching::Batches>,
    /// The batch's clock (see `schedule`).
    batch_clock: u64,
    /// Raw objects by `namespace/name`, for label-selector deletes.
    labels: BTreeMap<String, BTreeMap<String, String>>,
    /// GenericWorkload is on: pods naming a PodGroup are scheduled in pod-group cycles.
    groups_enabled: bool,
    /// TopologyAwareWorkloadScheduling is on too: pod-group cycles try placements.
    topology: bool,
    /// PodGroups by `namespace/name`.
    groups: BTreeMap<String, LockstepGroup>,
    /// The PodGroup (`namespace/name`) of each member pod, while GenericWorkload is on.
    member_of: BTreeMap<String, String>,
    /// Pod-group cycles each member took part in (`PodGroupMemberPodsOrderingFunc`'s attempts).
    attempts: BTreeMap<String, u32>,
}

impl Ours {
    /// schedperf's side of a replay: an empty snapshot and the config's frameworks.
    fn new(config: &SchedulerConfig, gates: &BTreeMap<String, bool>) -> Result<Ours, InputError> {
        let mut snap = Snapshot::new();
        let mut frameworks = Vec::new();
        for profile in &config.profiles {
            let compiled = compile_args(&profile.args, &mut snap.interner, &config.source)?;
            frameworks.push(
                crate::plugins::build_framework(profile, &compiled, &mut snap.interner)
                    .map_err(|e| InputError::new(&config.source, "profiles", e))?,
            );
        }
        let groups_enabled = gates.get("GenericWorkload").copied().unwrap_or(false);
        snap.pod_groups.set_enabled(groups_enabled);
        snap.cluster.dra.features = crate::runner::driver::dra_features(gates);
        Ok(Ours {
            snap,
            engine: Engine::new(0, 1, config.percentage_of_nodes_to_score),
            batch_clock: 0,
            batches: crate::runner::batching::Batches::new(
                gates.get(crate::runner::batching::GATE).copied().unwrap_or(true),
                &frameworks,
            ),
            frameworks,
            priorities: Priorities::default(),
            uids: UidGen::default(),
            pods: BTreeMap::new(),
            pending: Vec::new(),
            labels: BTreeMap::new(),
            groups_enabled,
            topology: groups_enabled && gates.get("TopologyAwareWorkloadScheduling").copied().unwrap_or(false),
            groups: BTreeMap::new(),
            member_of: BTreeMap::new(),
            attempts: BTreeMap::new(),
        })
    }
}

/// Whether two candidates' victims agree: in order, or as sets with GenericWorkload on (upstream
/// lists a `disruptionMode: all` group's members in map order).
fn same_victims(ours: &[String], theirs: &[String], as_sets: bool) -> bool {
    if !as_sets {
        return ours == theirs;
    }
    let (mut a, mut b) = (ours.to_vec(), theirs.to_vec());
    a.sort();
    b.sort();
    a == b
}

/// A PodGroup as the lockstep's schedperf side knows it.
struct LockstepGroup {
    /// `gang.minCount` (None: basic).
    min_count: Option<u32>,
    /// `spec.priority` (0 when unset).
    priority: i32,
    /// `schedulingConstraints.topology[0].key`.
    topology_key: Option<String>,
}

struct Objects {
    nodes_created: u64,
    pods_created: u64,
}

fn replay(w: &ResolvedWorkload, oracle: &mut Oracle) -> Result<Replay, ReplayError> {
    let (config, config_text) = match &w.scheduler_config_path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                InputError::new(p.display().to_string(), "", format!("cannot read the scheduler config: {e}"))
            })?;
            (SchedulerConfig::load(p)?, Some(text))
        }
        None => (SchedulerConfig::defaults(), None),
    };
    // OpportunisticBatching runs on both sides as the workload sets it (on by default). Its ranking
    // expires by wall-clock age upstream; schedperf takes each cycle's expiry from the oracle.
    let gates = w.feature_gates.clone();
    oracle.call(&json!({"op": "init", "config": config_text, "featureGates": gates}))?;
    let mut ours = Ours::new(&config, &w.feature_gates)?;
    let mut objs = Objects { nodes_created: 0, pods_created: 0 };
    let mut out = Replay::default();
    for op in &w.ops {
        match op {
            ResolvedOp::CreateNodes {
                count,
                node_template_path,
                node_allocatable_strategy,
                label_node_prepare_strategy,
                unique_node_label_strategy,
                template_params,
            } => {
                for i in 0..*count {
                    let mut node = match node_template_path {
                        Some(p) => single(instantiate(p, i, *count, template_params)?, p, "Node")?,
                        None => {
                            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "scheduler-perf-"},
                            "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                                       "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"}}})
                        }
                    };
                    let name = node["metadata"]["name"]
                        .as_str()
                        .filter(|n| !n.is_empty())
                        .map(String::from)
                        .unwrap_or_else(|| {
                            let prefix =
                                node["metadata"]["generateName"].as_str().filter(|p| !p.is_empty()).unwrap_or("node-");
                            format!("{prefix}{}", objs.nodes_created)
                        });
                    node["metadata"]["name"] = json!(name);
                    let labels = &mut node["metadata"]["labels"];
                    if labels.is_null() {
                        *labels = json!({});
                    }
                    if labels.get("kubernetes.io/hostname").is_none() {
                        labels["kubernetes.io/hostname"] = json!(name);
                    }
                    if let Some((k, v)) = label_node_prepare_strategy.as_ref().and_then(|s| label_node_prepare(i, s)) {
                        labels[k] = json!(v);
                    }
                    if let Some(s) = unique_node_label_strategy {
                        let (k, v) = unique_node_label(objs.nodes_created, s);
                        labels[k] = json!(v);
                    }
                    if let Some(s) = node_allocatable_strategy {
                        // The apiserver defaults allocatable to capacity; upstream's strategy then
                        // adds its keys to that (as the runner does).
                        if node["status"]["allocatable"].as_object().is_none_or(|m| m.is_empty()) {
                            node["status"]["allocatable"] = node["status"]["capacity"].clone();
                        }
                        let base: BTreeMap<String, String> = node["status"]["allocatable"]
                            .as_object()
                            .map(|m| {
                                m.iter()
                                    .map(|(k, v)| (k.clone(), v.as_str().map_or(v.to_string(), String::from)))
                                    .collect()
                            })
                            .unwrap_or_default();
                        for (k, v) in apply_node_allocatable(&base, s) {
                            node["status"]["allocatable"][k] = json!(v);
                        }
                    }
                    objs.nodes_created += 1;
                    let csi_node = node_allocatable_strategy.as_ref().map(|s| volumes::csi_node(&name, s));
                    apply(&mut ours, oracle, vec![node], None)?;
                    if let Some(c) = csi_node {
                        apply(&mut ours, oracle, vec![c], None)?;
                    }
                }
            }
            ResolvedOp::CreateNamespaces { prefix, count, .. } => {
                let nss: Vec<Value> = (0..*count)
                    .map(|i| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("{prefix}-{i}")}}))
                    .collect();
                apply(&mut ours, oracle, nss, None)?;
            }
            ResolvedOp::CreateAny { template_path, namespace, count, template_params } => {
                let mut retry = false;
                for i in 0..*count {
                    let docs = instantiate(template_path, i, *count, template_params)?;
                    retry |= docs.iter().any(|d| RETRY_KINDS.contains(&d["kind"].as_str().unwrap_or("")));
                    apply(&mut ours, oracle, docs, namespace.as_deref())?;
                }
                // A storage or DRA object's event may queue pods the volume plugins or
                // DynamicResources rejected: the pending pods are retried on both sides (as after
                // deletions and updates).
                if retry && !ours.pending.is_empty() {
                    retry_pending(&mut ours, oracle, &mut out)?;
                    if out.first_divergence.is_some() {
                        return Ok(out);
                    }
                }
            }
            ResolvedOp::CreatePods {
                count,
                namespace,
                pod_template_path,
                template_params,
                signature_batch_size,
                persistent_volume_template_path,
                persistent_volume_claim_template_path,
                ..
            } => {
                ensure_namespace(&mut ours, oracle, namespace)?;
                let volume_templates = match (persistent_volume_template_path, persistent_volume_claim_template_path) {
                    (Some(pv), Some(pvc)) => Some(VolumeTemplates::load(pv, pvc)?),
                    _ => None,
                };
                for i in 0..*count {
                    let mut pod = match pod_template_path {
                        Some(p) => {
                            // scheduler_perf labels each pod made from a template file.
                            let mut pod = single(instantiate(p, i, *count, template_params)?, p, "Pod")?;
                            pod["metadata"]["labels"]["signature"] =
                                json!(crate::workload::signature_label(i, *signature_batch_size));
                            pod
                        }
                        None => json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
                            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}}),
                    };
                    // Named as the driver names it (a template's own name, else generateName and the count).
                    let meta = api::ObjectMeta {
                        name: pod["metadata"]["name"].as_str().unwrap_or("").to_string(),
                        generate_name: pod["metadata"]["generateName"].as_str().unwrap_or("").to_string(),
                        ..Default::default()
                    };
                    pod["metadata"]["name"] = json!(pod_name(&meta, objs.pods_created));
                    pod["metadata"]["namespace"] = json!(namespace);
                    if let Some(vt) = &volume_templates {
                        // The claim and its volume first, as upstream's CreatePodWithPersistentVolume.
                        apply(
                            &mut ours,
                            oracle,
                            volumes::pod_volume_objects(vt, namespace, i).to_vec(),
                            Some(namespace),
                        )?;
                        pod["spec"]["volumes"] = volumes::claim_volumes(i);
                    }
                    objs.pods_created += 1;
                    let key = format!("{namespace}/{}", pod["metadata"]["name"].as_str().unwrap_or(""));
                    apply(&mut ours, oracle, vec![pod], Some(namespace))?;
                    // A gated pod never reaches a scheduling cycle on either side.
                    if !ours.pods[&key].0.scheduling_gates.is_empty() {
                        continue;
                    }
                    match ours.member_of.get(&key).cloned() {
                        // A member waits for its PodGroup to exist (upstream's incomplete pods).
                        Some(g) if !ours.groups.contains_key(&g) => {}
                        Some(g) => schedule_group(&mut ours, oracle, &g, &mut out)?,
                        None => schedule(&mut ours, oracle, &key, &mut out)?,
                    }
                    if out.first_divergence.is_some() {
                        return Ok(out);
                    }
                }
            }
            ResolvedOp::DeletePods { namespace, label_selector, .. } => {
                let keys: Vec<String> = ours
                    .labels
                    .iter()
                    .filter(|(k, labels)| {
                        k.split('/').next() == Some(namespace.as_str())
                            && ours.pods.contains_key(*k)
                            && label_selector.iter().all(|(lk, lv)| labels.get(lk) == Some(lv))
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                delete_pods(&mut ours, oracle, &keys)?;
                retry_pending(&mut ours, oracle, &mut out)?;
                if out.first_divergence.is_some() {
                    return Ok(out);
                }
            }
            ResolvedOp::Barrier { .. }
            | ResolvedOp::Sleep { .. }
            | ResolvedOp::StartCollectingMetrics { .. }
            | ResolvedOp::StopCollectingMetrics => {}
            ResolvedOp::CreatePodGroups { template_path, namespace, count, template_params } => {
                for i in 0..*count {
                    let docs = instantiate(template_path, i, *count, template_params)?;
                    if let Some(d) = docs.iter().find(|d| d["kind"] != "PodGroup") {
                        return Err(InputError::new(
                            template_path.display().to_string(),
                            "kind",
                            format!("createPodGroups: the template holds a {}: expected a PodGroup", d["kind"]),
                        )
                        .into());
                    }
                    let keys: Vec<String> = docs
                        .iter()
                        .map(|d| format!("{namespace}/{}", d["metadata"]["name"].as_str().unwrap_or("")))
                        .collect();
                    apply(&mut ours, oracle, docs, Some(namespace))?;
                    // Pods that named a group before it existed join it now (upstream's incomplete pods).
                    for g in keys {
                        if !pending_members(&ours, &g).is_empty() {
                            schedule_group(&mut ours, oracle, &g, &mut out)?;
                            if out.first_divergence.is_some() {
                                return Ok(out);
                            }
                        }
                    }
                }
            }
            ResolvedOp::UpdateAny { template_path, namespace, count, .. } => {
                // Upstream spaces the updates by a wall-clock ticker; in lockstep every update is
                // applied on both sides, then the pending pods are retried (as after deletions).
                for i in 0..*count {
                    let docs = instantiate(template_path, i, *count, &BTreeMap::new())?;
                    update(&mut ours, oracle, docs, namespace.as_deref(), template_path)?;
                }
                retry_pending(&mut ours, oracle, &mut out)?;
                if out.first_divergence.is_some() {
                    return Ok(out);
                }
            }
            ResolvedOp::AllocResourceClaims { namespace } => {
                // Each side runs the op itself (the oracle: upstream's allocator on its claims, in
                // the same node order), so a different allocation shows as a later divergence.
                oracle.call(&json!({"op": "allocClaims", "namespace": namespace}))?;
                alloc_resource_claims_in(&mut ours.snap, namespace).map_err(|e| {
                    InputError::new("<lockstep>", "allocResourceClaims", format!("namespace {namespace}: {e}"))
                })?;
            }
            ResolvedOp::Churn { .. } => unreachable!("unsupported() screens churn out"),
        }
    }
    Ok(out)
}

/// The rendered documents of a template, as JSON values.
fn instantiate(
    path: &Path,
    index: u64,
    count: u64,
    params: &BTreeMap<String, ParamValue>,
) -> Result<Vec<Value>, InputError> {
    use serde::Deserialize;
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(&file, "", format!("cannot read the template: {e}")))?;
    let rendered = render_template(&text, &template_env(index, count, params))
        .map_err(|e| InputError::new(&file, format!("line {}", e.line), e.message))?;
    let mut docs = Vec::new();
    for doc in serde_norway::Deserializer::from_str(&rendered) {
        let v = Value::deserialize(doc).map_err(|e| InputError::new(&file, "", format!("not YAML: {e}")))?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

fn single(mut docs: Vec<Value>, path: &Path, kind: &str) -> Result<Value, InputError> {
    match docs.len() {
        1 if docs[0]["kind"] == kind => Ok(docs.remove(0)),
        _ => Err(InputError::new(
            path.display().to_string(),
            "kind",
            format!("expected exactly one {kind} in the template"),
        )),
    }
}

fn ensure_namespace(ours: &mut Ours, oracle: &mut Oracle, ns: &str) -> Result<(), ReplayError> {
    if ours.labels.contains_key(&format!("namespace/{ns}")) {
        return Ok(());
    }
    apply(ours, oracle, vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})], None)
}

/// `updateAny`: replaces existing objects on both sides, as upstream's Update + UpdateStatus of
/// the templated object do (a node or pod that does not exist is an error, as upstream's NotFound).
fn update(
    ours: &mut Ours,
    oracle: &mut Oracle,
    docs: Vec<Value>,
    namespace: Option<&str>,
    template: &Path,
) -> Result<(), ReplayError> {
    for d in &docs {
        let name = d["metadata"]["name"].as_str().unwrap_or("");
        let exists = match d["kind"].as_str() {
            Some("Node") => ours.snap.interner.get(name).is_some_and(|s| ours.snap.nodes.idx_of(s).is_some()),
            Some("Pod") => {
                let ns = d["metadata"]["namespace"].as_str().filter(|n| !n.is_empty()).or(namespace);
                ours.pods.contains_key(&format!("{}/{name}", ns.unwrap_or("default")))
            }
            _ => true,
        };
        if !exists {
            return Err(InputError::new(
                template.display().to_string(),
                "metadata.name",
                format!("updateAny: {} {name:?} does not exist", d["kind"]),
            )
            .into());
        }
    }
    apply(ours, oracle, docs, namespace)
}

/// Creates objects on both sides, or replaces the nodes and pods that exist already (the
/// oracle's `apply` does the same). Pods are created pending (they are scheduled by [`schedule`]).
fn apply(
    ours: &mut Ours,
    oracle: &mut Oracle,
    mut docs: Vec<Value>,
    namespace: Option<&str>,
) -> Result<(), ReplayError> {
    for d in &mut docs {
        let namespaced = !matches!(
            d["kind"].as_str(),
            Some(
                "Node"
                    | "Namespace"
                    | "PriorityClass"
                    | "PersistentVolume"
                    | "StorageClass"
                    | "CSINode"
                    | "CSIDriver"
                    | "ResourceSlice"
                    | "DeviceClass"
                    | "DeviceTaintRule"
            )
        );
        if namespaced && d["metadata"]["namespace"].as_str().is_none_or(str::is_empty) {
            d["metadata"]["namespace"] = json!(namespace.unwrap_or("default"));
        }
    }
    oracle.call(&json!({"op": "apply", "objects": docs}))?;
    Ok(apply_ours(ours, &docs)?)
}

/// schedperf's side of [`apply`].
fn apply_ours(ours: &mut Ours, docs: &[Value]) -> Result<(), InputError> {
    let text = super::to_json_stream(docs);
    for obj in api::parse_objects(&text, "<workload object>")? {
        match &obj {
            Object::Node(n) => {
                let spec = compile_node(n, &mut ours.snap.interner);
                let exists = ours.snap.nodes.idx_of(spec.name).is_some();
                if exists { ours.snap.update_node(&spec) } else { ours.snap.add_node(&spec) }
                    .map_err(|e| InputError::new("<workload node>", "metadata.name", e))?;
            }
            Object::Pod(p) if ours.pods.contains_key(&format!("{}/{}", p.namespace(), p.metadata.name)) => {
                update_pod(ours, p)?;
            }
            Object::Pod(p) => {
                let key = format!("{}/{}", p.namespace(), p.metadata.name);
                let wk = ours.snap.wk.clone();
                let mut info = compile_pod(
                    p,
                    &p.metadata.name,
                    ours.uids.next_uid(),
                    &ours.priorities,
                    &mut ours.snap.interner,
                    &wk,
                )
                .map_err(|e| InputError::new("<workload pod>", "spec.priorityClassName", e))?;
                // Its claims from templates, made as the resourceclaim controller makes them (the
                // oracle's `apply` waits for its controller to have made them).
                if let Some(refs) = &info.claims {
                    let mut refs = (**refs).clone();
                    refs.pod.metadata.namespace = p.namespace().to_string();
                    crate::plugins::dynamicresources::controller::create_pod_claims(
                        &mut refs.pod,
                        p.namespace(),
                        &mut ours.snap.cluster.dra,
                    );
                    info.claims = Some(Arc::new(refs));
                }
                ours.snap.prepare_pod(&info);
                if let Some(g) = p.spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.as_ref()) {
                    if ours.groups_enabled {
                        let (ns, name) = (ours.snap.interner.intern(p.namespace()), ours.snap.interner.intern(g));
                        ours.snap.pod_groups.add_member(info.uid, ns, name);
                        ours.member_of.insert(key.clone(), format!("{}/{g}", p.namespace()));
                    }
                }
                ours.labels.insert(key.clone(), p.metadata.labels.clone());
                ours.pods.insert(key.clone(), (Arc::new(info), None));
                ours.pending.push(key);
            }
            Object::PriorityClass(pc) => {
                ours.priorities.add(pc);
            }
            Object::PodGroup(g) => {
                let key = format!("{}/{}", g.namespace(), g.metadata.name);
                let (ns, name) =
                    (ours.snap.interner.intern(g.namespace()), ours.snap.interner.intern(&g.metadata.name));
                ours.snap.pod_groups.set_group(ns, name, crate::plugins::defaultpreemption::GroupMeta::of(g));
                ours.groups.insert(
                    key,
                    LockstepGroup {
                        min_count: g.min_count(),
                        priority: g.priority(),
                        topology_key: g.topology_key().map(str::to_string),
                    },
                );
            }
            Object::Namespace(n) => {
                ours.labels.insert(format!("namespace/{}", n.metadata.name), n.metadata.labels.clone());
                register_object(&mut ours.snap, &obj);
            }
            other => register_object(&mut ours.snap, other),
        }
    }
    Ok(())
}

/// Replaces a known pod's spec and labels, keeping its uid, its node (a bound pod is re-placed
/// with its new requests) or its nomination.
fn update_pod(ours: &mut Ours, p: &api::Pod) -> Result<(), InputError> {
    let key = format!("{}/{}", p.namespace(), p.metadata.name);
    let (old, node) = ours.pods[&key].clone();
    let wk = ours.snap.wk.clone();
    let mut info = compile_pod(p, &p.metadata.name, old.uid, &ours.priorities, &mut ours.snap.interner, &wk)
        .map_err(|e| InputError::new("<workload pod>", "spec.priorityClassName", e))?;
    info.nominated_node = info.nominated_node.or(old.nominated_node);
    let info = Arc::new(info);
    ours.snap.prepare_pod(&info);
    match &node {
        Some(n) => {
            let sym = ours.snap.interner.intern(n);
            ours.snap.unplace_pod(old.uid);
            ours.snap.place_pod(info.clone(), sym).map_err(|e| InputError::new("<lockstep>", key.as_str(), e))?;
        }
        None => {
            if let Some(n) = info.nominated_node {
                ours.snap.nominate(info.clone(), n);
            }
        }
    }
    ours.labels.insert(key.clone(), p.metadata.labels.clone());
    ours.pods.insert(key, (info, node));
    Ok(())
}

fn delete_pods(ours: &mut Ours, oracle: &mut Oracle, keys: &[String]) -> Result<(), ReplayError> {
    if keys.is_empty() {
        return Ok(());
    }
    let refs: Vec<Value> = keys
        .iter()
        .map(|k| {
            let (ns, name) = k.split_once('/').unwrap_or(("default", k));
            json!({"kind": "Pod", "namespace": ns, "name": name})
        })
        .collect();
    oracle.call(&json!({"op": "delete", "objects": refs}))?;
    for k in keys {
        if let Some((info, node)) = ours.pods.remove(k) {
            release_claims(ours, &info);
            if node.is_some() {
                ours.snap.unplace_pod(info.uid);
            }
            ours.snap.clear_nomination(info.uid);
            ours.snap.pod_groups.remove_member(info.uid);
        }
        ours.pending.retain(|p| p != k);
        ours.labels.remove(k);
        ours.member_of.remove(k);
    }
    Ok(())
}

/// A deleted pod's claims left as the resourceclaim controller leaves them
/// (`controller::release_pod_claims`: its reservations removed, a claim nobody uses deallocated),
/// as the oracle's `delete` waits for its controller to have done.
fn release_claims(ours: &mut Ours, info: &PodInfo) {
    if let Some(refs) = &info.claims {
        let namespace = ours.snap.interner.resolve(info.namespace).to_string();
        crate::plugins::dynamicresources::controller::release_pod_claims(
            &refs.pod,
            &namespace,
            ours.snap.cluster.dra.claims.get_mut(),
        );
    }
}

/// The kinds whose creation raises a storage or DRA event (`queue::ClusterEvent::Storage`, the
/// DynamicResources plugin's events), after which the pending pods are retried.
const RETRY_KINDS: &[&str] = &[
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "ResourceSlice",
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceTaintRule",
];

/// Pending pods, highest priority first, then in creation order (PrioritySort).
fn retry_pending(ours: &mut Ours, oracle: &mut Oracle, out: &mut Replay) -> Result<(), ReplayError> {
    let mut keys: Vec<String> =
        ours.pending.iter().filter(|k| ours.pods[*k].0.scheduling_gates.is_empty()).cloned().collect();
    keys.sort_by_key(|k| std::cmp::Reverse(ours.pods[k].0.priority));
    let mut groups_done = std::collections::BTreeSet::new();
    for k in keys {
        match ours.member_of.get(&k).cloned() {
            Some(g) if !ours.groups.contains_key(&g) => {}
            // A group's pending members are retried together, in one pod-group cycle.
            Some(g) => {
                if groups_done.insert(g.clone()) {
                    schedule_group(ours, oracle, &g, out)?;
                }
            }
            None => schedule(ours, oracle, &k, out)?,
        }
        if out.first_divergence.is_some() {
            break;
        }
    }
    Ok(())
}

/// One cycle for pod `key` on both sides; records agreement or the first divergence.
fn schedule(ours: &mut Ours, oracle: &mut Oracle, key: &str, out: &mut Replay) -> Result<(), ReplayError> {
    let (ns, name) = key.split_once('/').unwrap_or(("default", key));
    for attempt in 0..2 {
        let theirs = oracle.call(&json!({"op": "schedule", "namespace": ns, "name": name}))?;
        let info = ours.pods[key].0.clone();
        let profile = ours
            .frameworks
            .iter()
            .position(|f| ours.snap.interner.resolve(info.scheduler_name) == f.scheduler_name)
            .unwrap_or(0);
        let fw = &ours.frameworks[profile];
        // The oracle's cycle count, and its expiry verdict (maxBatchAge is wall-clock there): the
        // batch clock stands still, and jumps past the age whenever upstream's ranking expired.
        if theirs["batch"]["flushed"]["expired"].as_u64().unwrap_or(0) > 0 {
            ours.batch_clock += 2 * crate::engine::batch::MAX_BATCH_AGE_NANOS;
        }
        let hints_before = ours.batches.as_ref().map_or(0, |b| b.stats().hint_used);
        let clock = ours.batch_clock;
        let batch = ours.batches.as_mut().and_then(|b| {
            b.set_cycle(theirs["batch"]["cycle"].as_u64().unwrap_or(0));
            b.cx(profile, fw, &info, clock)
        });
        let result = ours.engine.schedule_one_nominated_batched(fw, &mut ours.snap, &info, batch);
        // Whether each side placed the pod on its batch hint: a decision too, even when the node agrees.
        let our_hint = ours.batches.as_ref().map_or(0, |b| b.stats().hint_used) > hints_before;
        let their_hint = theirs["batch"]["attempts"]["hint_used"].as_u64().unwrap_or(0) > 0;
        if our_hint != their_hint && matches!(result, CycleResult::Scheduled { .. }) {
            let side = |used: bool| if used { "placed it on its batch hint" } else { "ran a full cycle" };
            out.first_divergence = Some(format!(
                "pod {key}: schedperf {}, kube-scheduler {} (its batch counters {})",
                side(our_hint),
                side(their_hint),
                theirs["batch"]
            ));
            return Ok(());
        }
        out.hints += u64::from(our_hint && their_hint);
        let their_node = theirs["selected"].as_str().map(String::from);
        out.pods += u64::from(attempt == 0);
        match result {
            CycleResult::Scheduled { node, evaluated_nodes, feasible_nodes } => {
                let our_node = ours.snap.node_name(node).to_string();
                if their_node.as_deref() != Some(our_node.as_str()) {
                    out.first_divergence = Some(format!(
                        "pod {key}: schedperf chose {our_node} (evaluated {evaluated_nodes}, feasible {feasible_nodes}); \
                         kube-scheduler chose {} (evaluated {}, feasible {}; top nodes {}; message {}; batch {})",
                        their_node.as_deref().unwrap_or("no node"),
                        theirs["evaluatedNodes"],
                        theirs["feasibleNodes"],
                        theirs["topNodes"],
                        theirs["message"],
                        theirs["batch"]
                    ));
                    return Ok(());
                }
                let sym = ours.snap.nodes.name[node.ix()];
                ours.snap.clear_nomination(info.uid);
                ours.snap.place_pod(info.clone(), sym).map_err(|e| InputError::new("<lockstep>", key, e))?;
                // Reserve and PreBind as the driver's cycle and binder run them (VolumeBinding
                // assumes and binds a WaitForFirstConsumer claim's volume there).
                let cx = crate::framework::CycleCx { snap: &ours.snap, pod: &info };
                let reserved = fw.run_reserve(cx, &mut ours.engine.state, node);
                let bound = fw.run_pre_bind(&crate::framework::BindingPod {
                    uid: info.uid,
                    namespace: ours.snap.interner.resolve(info.namespace),
                    name: &info.name,
                    node: &our_node,
                });
                if let Some(st) = (!reserved.is_success()).then_some(reserved).or(bound.err()) {
                    out.first_divergence = Some(format!(
                        "pod {key}: schedperf's Reserve or PreBind failed: {} {:?}",
                        st.plugin, st.reasons
                    ));
                    return Ok(());
                }
                ours.pods.get_mut(key).expect("a known pod").1 = Some(our_node);
                ours.pending.retain(|p| p != key);
                out.agreed += 1;
                return Ok(());
            }
            CycleResult::Error(st) => {
                out.first_divergence =
                    Some(format!("pod {key}: schedperf's cycle failed: {} {:?}", st.plugin, st.reasons));
                return Ok(());
            }
            CycleResult::Unschedulable(diag) => {
                if let Some(n) = their_node {
                    out.first_divergence = Some(format!(
                        "pod {key}: schedperf found no node; kube-scheduler chose {n} (evaluated {}, feasible {})",
                        theirs["evaluatedNodes"], theirs["feasibleNodes"]
                    ));
                    return Ok(());
                }
                let their_nominated = theirs["nominatedNode"].as_str().map(String::from);
                let their_victims: Vec<String> = theirs["victims"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                    .unwrap_or_default();
                // The candidates upstream may nominate from its random offset, to judge a
                // different nomination.
                let plan = fw.post_filter_plan(&mut ours.snap, &info, &diag, true).unwrap_or_default();
                let candidates: Vec<(String, Vec<String>)> = plan
                    .may_nominate
                    .iter()
                    .map(|&i| &plan.candidates[i])
                    .map(|c| {
                        let victims = c
                            .victims
                            .iter()
                            .map(|v| format!("{}/{}", ours.snap.interner.resolve(v.namespace), v.name))
                            .collect();
                        (ours.snap.interner.resolve(c.node).to_string(), victims)
                    })
                    .collect();
                let post = ours.engine.post_filter(fw, &mut ours.snap, &info, &diag);
                let our_nominated = post.as_ref().ok().map(|p| ours.snap.interner.resolve(p.node).to_string());
                match (&our_nominated, &their_nominated) {
                    (None, None) => {
                        out.agreed += u64::from(attempt == 0);
                        return Ok(());
                    }
                    // With pod groups, the victims must agree too (as sets: upstream lists an
                    // `all` group's members in map order): a whole group, on every node.
                    (Some(a), Some(b)) if a == b && ours.groups_enabled => {
                        let mut mine: Vec<String> = post
                            .as_ref()
                            .map(|p| {
                                p.victims
                                    .iter()
                                    .map(|v| format!("{}/{}", ours.snap.interner.resolve(v.namespace), v.name))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let mut theirs_sorted = their_victims.clone();
                        mine.sort();
                        theirs_sorted.sort();
                        if mine != theirs_sorted {
                            out.first_divergence = Some(format!(
                                "pod {key}: preemption on {a}: schedperf's victims {mine:?}, kube-scheduler's {theirs_sorted:?}"
                            ));
                            return Ok(());
                        }
                    }
                    (Some(a), Some(b)) if a == b => {}
                    (Some(_), Some(b))
                        if candidates
                            .iter()
                            .any(|(n, v)| n == b && same_victims(v, &their_victims, ours.groups_enabled)) =>
                    {
                        out.preemption_ties += 1;
                    }
                    _ => {
                        let shown: Vec<_> = candidates.iter().take(5).collect();
                        out.first_divergence = Some(format!(
                            "pod {key}: preemption: schedperf nominated {:?}, kube-scheduler {:?} (victims {:?}); \
                             the {} candidates schedperf says upstream may nominate{} {:?}",
                            our_nominated,
                            their_nominated,
                            their_victims,
                            candidates.len(),
                            if candidates.len() > shown.len() { ", the first five:" } else { ":" },
                            shown
                        ));
                        return Ok(());
                    }
                }
                // Follow the oracle's nomination and victims so both states stay equal.
                let node_name = their_nominated.expect("both nominated");
                let sym = ours.snap.interner.intern(&node_name);
                let mut nominated = (*info).clone();
                nominated.nominated_node = Some(sym);
                let nominated = Arc::new(nominated);
                ours.snap.clear_nomination(info.uid);
                ours.snap.nominate(nominated.clone(), sym);
                ours.pods.get_mut(key).expect("a known pod").0 = nominated;
                for v in &their_victims {
                    if let Some((vi, _)) = ours.pods.remove(v) {
                        release_claims(ours, &vi);
                        ours.snap.unplace_pod(vi.uid);
                        ours.pending.retain(|p| p != v);
                        ours.labels.remove(v);
                        ours.member_of.remove(v);
                        ours.snap.pod_groups.remove_member(vi.uid);
                    }
                }
                if attempt == 1 {
                    out.first_divergence = Some(format!("pod {key}: nominated twice without fitting"));
                }
            }
        }
    }
    Ok(())
}

/// The pending members of PodGroup `group` (`namespace/name`): its queue entity's pods.
fn pending_members(ours: &Ours, group: &str) -> Vec<String> {
    ours.pending.iter().filter(|k| ours.member_of.get(*k).map(String::as_str) == Some(group)).cloned().collect()
}

/// One pod-group cycle for PodGroup `group` on both sides (the oracle's `scheduleGroup`, the
/// driver's trial here); each member's node, or its failure message, must be the same. A group
/// whose entity PreEnqueue holds back (GangScheduling short of `minCount` pods) must be held back
/// on both sides.
fn schedule_group(ours: &mut Ours, oracle: &mut Oracle, group: &str, out: &mut Replay) -> Result<(), ReplayError> {
    let (ns, name) = group.split_once('/').unwrap_or(("default", group));
    let theirs = oracle.call(&json!({"op": "scheduleGroup", "namespace": ns, "name": name}))?;
    let mut members = pending_members(ours, group);
    let min_count = ours.groups[group].min_count;
    let all_pods = ours.member_of.values().filter(|g| *g == group).count();
    let profile = members
        .first()
        .map(|k| ours.pods[k].0.clone())
        .and_then(|info| {
            ours.frameworks.iter().position(|f| ours.snap.interner.resolve(info.scheduler_name) == f.scheduler_name)
        })
        .unwrap_or(0);
    let fw = &ours.frameworks[profile];
    // PreEnqueue of the group's entity: GangScheduling's quorum, then every member's own plugins
    // (one pod held back by its scheduling gates holds back the entity).
    let gated = crate::plugins::gangscheduling::pre_enqueue(min_count, all_pods).is_err()
        || members.iter().any(|k| !fw.run_pre_enqueue(&ours.pods[k].0).is_success());
    let their_gate = theirs["gated"].as_str();
    if gated != their_gate.is_some() {
        out.first_divergence = Some(format!(
            "PodGroup {group}: schedperf {} its entity ({all_pods} pods, minCount {min_count:?}); kube-scheduler {}",
            if gated { "gates" } else { "does not gate" },
            their_gate.map_or("does not gate it".to_string(), |p| format!("gates it ({p})"))
        ));
        return Ok(());
    }
    if gated {
        out.groups_gated += 1;
        return Ok(());
    }
    // `PodGroupMemberPodsOrderingFunc`: priority, attempts (descending), then the queue timestamp
    // (the oracle's clock stands still in lockstep, so every member's is the same), then the name.
    members.sort_by(|a, b| {
        let (pa, pb) = (&ours.pods[a].0, &ours.pods[b].0);
        pb.priority
            .cmp(&pa.priority)
            .then(ours.attempts.get(b).cmp(&ours.attempts.get(a)))
            .then_with(|| pa.name.cmp(&pb.name))
    });
    for k in &members {
        *ours.attempts.entry(k.clone()).or_default() += 1;
    }
    let infos: Vec<Arc<PodInfo>> = members.iter().map(|k| ours.pods[k].0.clone()).collect();
    let placed: Vec<Arc<PodInfo>> = ours
        .member_of
        .iter()
        .filter(|(k, g)| *g == group && ours.pods[*k].1.is_some())
        .map(|(k, _)| ours.pods[k].0.clone())
        .collect();
    let tas = ours.topology.then(|| {
        let key = ours.groups[group].topology_key.clone().map(|k| ours.snap.interner.intern(&k));
        let scheduled = ours
            .member_of
            .iter()
            .filter(|(_, g)| *g == group)
            .filter_map(|(k, _)| {
                let node = ours.pods[k].1.as_ref()?;
                Some(crate::plugins::topologyaware::ScheduledPod {
                    key: k.clone(),
                    node: ours.snap.interner.intern(node),
                })
            })
            .collect::<Vec<_>>();
        // Upstream draws between placements that score alike: follow the one it took.
        let prefer = theirs["pods"]
            .as_array()
            .and_then(|a| a.iter().find_map(|p| p["selected"].as_str().filter(|n| !n.is_empty())))
            .map(|n| ours.snap.interner.intern(n));
        GroupTopology { key, scheduled, prefer }
    });
    let frameworks = &ours.frameworks;
    let interner = &ours.snap.interner;
    let validation = validate_group(
        ours.groups[group].priority,
        infos.iter().chain(&placed).map(|info| {
            let name = interner.resolve(info.scheduler_name);
            let p = frameworks.iter().position(|f| name == f.scheduler_name).unwrap_or(0);
            (p, name, &**info)
        }),
    );
    let (trials, outcome) = match validation {
        Err(e) => (infos.iter().map(|_| Trial::NotEvaluated).collect(), GroupOutcome::Error(e)),
        Ok(_) => {
            let min = crate::plugins::gangscheduling::min_count(min_count);
            group_algorithm(&mut ours.engine, &mut ours.snap, fw, &infos, min, placed.len(), tas.as_ref(), |_, _| {})
        }
    };
    // PodGroupPostFilter (group preemption) for an unschedulable group.
    let post = match &outcome {
        GroupOutcome::Unschedulable(_) if has_pod_group_post_filter(fw) => {
            let min = crate::plugins::gangscheduling::min_count(min_count);
            let priority = ours.groups[group].priority;
            Some(group_post_filter(
                &mut ours.engine,
                &mut ours.snap,
                fw,
                &infos,
                min,
                placed.len(),
                priority,
                tas.as_ref(),
                |_, _| {},
            ))
        }
        _ => None,
    };
    // The nomination each member leaves the cycle with, and the victims (sorted `namespace/name`).
    let our_nominated: Vec<Option<String>> = infos
        .iter()
        .enumerate()
        .map(|(i, info)| match &post {
            Some(GroupPostFilter::Preempt { nominations, .. }) => {
                nominations.iter().find(|(j, _)| *j == i).map(|(_, n)| ours.snap.interner.resolve(*n).to_string())
            }
            Some(GroupPostFilter::Ongoing) => info.nominated_node.map(|n| ours.snap.interner.resolve(n).to_string()),
            _ => None,
        })
        .collect();
    let mut our_victims: Vec<String> = match &post {
        Some(GroupPostFilter::Preempt { victims, .. }) => {
            victims.iter().map(|v| format!("{}/{}", ours.snap.interner.resolve(v.namespace), v.name)).collect()
        }
        _ => Vec::new(),
    };
    our_victims.sort();
    // Each member's outcome as upstream's submitPodGroupAlgorithmResult gives it.
    let ours_of = |trial: &Trial| -> (Option<String>, Option<String>) {
        match (&outcome, trial) {
            (GroupOutcome::Success, Trial::Feasible(node)) => {
                (Some(ours.snap.interner.resolve(*node).to_string()), None)
            }
            _ => (None, member_failure_after(&outcome, trial, post.as_ref())),
        }
    };
    let decided: Vec<(Option<String>, Option<String>)> = trials.iter().map(ours_of).collect();
    let their_pods: BTreeMap<String, &Value> = theirs["pods"]
        .as_array()
        .map(|a| a.iter().map(|p| (p["pod"].as_str().unwrap_or("").to_string(), p)).collect())
        .unwrap_or_default();
    let mut ours_sorted = members.clone();
    ours_sorted.sort();
    if their_pods.keys().cloned().collect::<Vec<_>>() != ours_sorted {
        out.first_divergence = Some(format!(
            "PodGroup {group}: the cycle's members differ: schedperf {members:?}, kube-scheduler {:?}",
            their_pods.keys().collect::<Vec<_>>()
        ));
        return Ok(());
    }
    let mut their_victims: Vec<String> = theirs["victims"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    their_victims.sort();
    if their_victims != our_victims {
        out.first_divergence = Some(format!(
            "PodGroup {group}: PodGroupPostFilter's victims: schedperf {our_victims:?}, kube-scheduler {their_victims:?}"
        ));
        return Ok(());
    }
    for ((k, (node, message)), nominated) in members.iter().zip(&decided).zip(&our_nominated) {
        let t = their_pods[k];
        let their_node = t["selected"].as_str();
        let their_message = t["message"].as_str();
        let their_nominated = t["nominatedNode"].as_str().filter(|n| !n.is_empty());
        out.pods += 1;
        // Without a PodGroupPostFilter plugin schedperf appends nothing; upstream's message may
        // carry PodGroupPostFilter's after the group's.
        let post_filter = match (their_message, message.as_deref()) {
            (Some(t), Some(o)) if t != o => {
                t.strip_prefix(o).filter(|rest| rest.starts_with(", pod group preemption: "))
            }
            _ => None,
        };
        let same_message = their_message == message.as_deref() || post_filter.is_some();
        if their_node != node.as_deref() || !same_message || their_nominated != nominated.as_deref() {
            out.first_divergence = Some(format!(
                "PodGroup {group}, pod {k} (cycle outcome {outcome:?}): schedperf {}; kube-scheduler {}",
                describe(node.as_deref(), message.as_deref(), nominated.as_deref()),
                describe(their_node, their_message, their_nominated)
            ));
            return Ok(());
        }
        out.agreed += 1;
        out.group_post_filter += u64::from(post_filter.is_some());
    }
    // Follow the group preemption: members nominated, victims gone (the oracle waited for them).
    if matches!(post, Some(GroupPostFilter::Preempt { .. })) {
        out.group_preemptions += 1;
        for (k, nominated) in members.iter().zip(&our_nominated) {
            let Some(n) = nominated else { continue };
            let sym = ours.snap.interner.intern(n);
            let nominated = Arc::new(PodInfo { nominated_node: Some(sym), ..(*ours.pods[k].0).clone() });
            ours.snap.nominate(nominated.clone(), sym);
            ours.pods.get_mut(k).expect("a known pod").0 = nominated;
        }
        for v in &their_victims {
            if let Some((vi, _)) = ours.pods.remove(v) {
                release_claims(ours, &vi);
                ours.snap.unplace_pod(vi.uid);
                ours.snap.clear_nomination(vi.uid);
                ours.pending.retain(|p| p != v);
                ours.labels.remove(v);
                ours.member_of.remove(v);
                ours.snap.pod_groups.remove_member(vi.uid);
            }
        }
    }
    // A feasible group's pods are assumed and bound on both sides.
    for (k, (node, _)) in members.iter().zip(decided) {
        let Some(node) = node else { continue };
        let info = ours.pods[k].0.clone();
        let sym = ours.snap.interner.intern(&node);
        ours.snap.clear_nomination(info.uid);
        ours.snap.place_pod(info, sym).map_err(|e| InputError::new("<lockstep>", k.as_str(), e))?;
        ours.pods.get_mut(k).expect("a known pod").1 = Some(node);
        ours.pending.retain(|p| p != k);
    }
    Ok(())
}

/// One side's outcome for a member, in words.
fn describe(node: Option<&str>, message: Option<&str>, nominated: Option<&str>) -> String {
    match (node, message) {
        (Some(n), _) => format!("placed it on {n}"),
        (None, Some(m)) => {
            format!("left it unscheduled ({m}){}", nominated.map_or(String::new(), |n| format!(", nominated {n}")))
        }
        (None, None) => "left it unscheduled".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, unschedulable: bool, zone: Option<&str>) -> Value {
        let labels = zone.map_or(json!({}), |z| json!({"topology.kubernetes.io/zone": z}));
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
               "spec": {"unschedulable": unschedulable},
               "status": {"allocatable": {"pods": "110", "cpu": "4", "memory": "4Gi"}}})
    }

    fn pod(name: &str, memory: &str, color: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": {"color": color}},
               "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"memory": memory}}}]}})
    }

    /// `updateAny`'s schedperf side: a node or pod applied again replaces the one there, keeping
    /// a pod's uid and its node (re-placed with its new requests) or its nomination.
    #[test]
    fn an_applied_again_node_or_pod_replaces_the_one_there() {
        let mut ours = Ours::new(&SchedulerConfig::defaults(), &BTreeMap::new()).unwrap();
        apply_ours(&mut ours, &[node("n1", true, None), node("n2", false, None)]).unwrap();
        apply_ours(&mut ours, &[pod("bound", "1Gi", "green"), pod("nominated", "1Gi", "green")]).unwrap();
        let n2 = ours.snap.interner.intern("n2");
        let bound = ours.pods["ns/bound"].0.clone();
        ours.snap.place_pod(bound.clone(), n2).unwrap();
        ours.pods.get_mut("ns/bound").unwrap().1 = Some("n2".into());
        let mut nominated = (*ours.pods["ns/nominated"].0).clone();
        nominated.nominated_node = Some(n2);
        let nominated = Arc::new(nominated);
        ours.snap.nominate(nominated.clone(), n2);
        ours.pods.get_mut("ns/nominated").unwrap().0 = nominated.clone();

        apply_ours(
            &mut ours,
            &[node("n1", false, Some("z1")), pod("bound", "1Mi", "blue"), pod("nominated", "2Gi", "red")],
        )
        .unwrap();
        let n1 = ours.snap.nodes.idx_of(ours.snap.interner.intern("n1")).unwrap();
        assert!(!ours.snap.nodes.unschedulable[n1.ix()], "n1's spec.unschedulable is the update's");
        assert_eq!(ours.snap.nodes.len(), 2, "no node is added");
        let n2i = ours.snap.nodes.idx_of(n2).unwrap();
        assert_eq!(ours.snap.nodes.req_memory[n2i.ix()], 1 << 20, "n2 holds the bound pod's new request");
        assert_eq!(ours.snap.pods[&bound.uid].info.requests.memory, 1 << 20);
        assert_eq!(ours.pods["ns/bound"].0.uid, bound.uid);
        assert_eq!(ours.pods["ns/bound"].1.as_deref(), Some("n2"));
        assert_eq!(ours.labels["ns/bound"]["color"], "blue");
        let renominated = &ours.snap.nominated[&n2];
        assert_eq!(renominated.len(), 1, "one nomination on n2");
        assert_eq!((renominated[0].uid, renominated[0].requests.memory), (nominated.uid, 2 << 30));
        assert_eq!(ours.pods["ns/nominated"].0.nominated_node, Some(n2));
        assert_eq!(ours.pending, vec!["ns/bound".to_string(), "ns/nominated".to_string()], "no pod is added");
    }
}
