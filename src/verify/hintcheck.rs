//! Queueing hints checked against upstream's real `QueueingHintFn`s (`schedperf-oracle hint`, see
//! oracle/README.md).
//!
//! A case is a plugin that rejected a pod, a cluster event and its objects: a node added, updated
//! (old and new) or deleted, an assigned pod added, updated or deleted, or the rejected pod's own
//! update. schedperf answers with [`hint_fn`] (its [`fine_hint`](crate::queue::fine_hint), the
//! coarse table where that has no rule), on the event the run's driver would deliver for those
//! objects ([`node_update_change`], [`requests_scaled_down`]); the oracle answers with the plugin's
//! own registrations and hint functions, on the events upstream's handlers split the change into.
//! Nodes and pods come from [`gen`]'s vocabulary (labels, taints, allocatable, requests, affinity,
//! spread constraints, tolerations, host ports), so the objects are the random check's.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::api::{self, Object};
use crate::config::SchedulerConfig;
use crate::error::InputError;
use crate::ids::PodUid;
use crate::plugins::compile_args;
use crate::queue::{hint_fn, ClusterEvent, EventObjects, HintArgs, NodeObject, QueuedPod, QueueingHint};
use crate::runner::driver::{hint_syms, node_update_change, requests_scaled_down};
use crate::snapshot::compile::{compile_node, compile_pod, Priorities};
use crate::snapshot::{PodInfo, Snapshot};

use super::gen::{self, chance, pick};
use super::{Oracle, OracleError, VerifyArgs};

/// The plugins whose hints are checked.
pub const PLUGINS: [&str; 7] = [
    "NodeResourcesFit",
    "NodeAffinity",
    "TaintToleration",
    "NodeUnschedulable",
    "NodePorts",
    "InterPodAffinity",
    "PodTopologySpread",
];

/// The events a case can carry (names as the oracle reads them).
pub const EVENTS: [&str; 7] = [
    "NodeAdd",
    "NodeUpdate",
    "NodeDelete",
    "AssignedPodAdd",
    "AssignedPodUpdate",
    "AssignedPodDelete",
    "UnscheduledPodUpdate",
];

/// The NodeAffinity `addedAffinity` terms a case's profile may carry (few, so the oracle builds
/// few schedulers).
const ADDED_AFFINITY: [&str; 3] = [
    r#"{"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}"#,
    r#"{"matchExpressions":[{"key":"tier","operator":"NotIn","values":["a"]}]}"#,
    r#"{"matchExpressions":[{"key":"cores","operator":"Gt","values":["4"]}]}"#,
];

/// One case: the request the oracle reads (oracle/hint.go `hintCase`).
#[derive(Clone, Debug, PartialEq)]
pub struct HintCase {
    pub plugin: &'static str,
    pub config: Option<String>,
    pub event: &'static str,
    pub old: Option<Value>,
    pub new: Option<Value>,
    pub pod: Value,
}

impl HintCase {
    pub fn request(&self) -> Value {
        json!({"plugin": self.plugin, "config": self.config, "event": self.event,
               "oldObj": self.old, "newObj": self.new, "pod": self.pod})
    }
}

/// The events `plugin` registers upstream (most cases draw from these, so that the hint's body
/// runs; the rest draw from every event, where unregistered ones must be Skip).
fn registered_events(plugin: &str) -> &'static [&'static str] {
    match plugin {
        "NodeResourcesFit" => {
            &["NodeAdd", "NodeUpdate", "AssignedPodUpdate", "AssignedPodDelete", "UnscheduledPodUpdate"]
        }
        "NodeAffinity" | "TaintToleration" | "NodeUnschedulable" => &["NodeAdd", "NodeUpdate", "UnscheduledPodUpdate"],
        "NodePorts" => &["NodeAdd", "AssignedPodDelete"],
        "InterPodAffinity" => &[
            "NodeAdd",
            "NodeUpdate",
            "AssignedPodAdd",
            "AssignedPodUpdate",
            "AssignedPodDelete",
            "UnscheduledPodUpdate",
        ],
        _ => &EVENTS,
    }
}

/// Whether `pod` has what `plugin` reads, so most cases exercise the hint's body.
fn relevant(plugin: &str, pod: &Value) -> bool {
    let spec = &pod["spec"];
    let containers = || spec["containers"].as_array().into_iter().flatten();
    match plugin {
        "NodeResourcesFit" => containers().any(|c| c.get("resources").is_some()),
        "NodeAffinity" => spec.get("nodeSelector").is_some() || spec["affinity"].get("nodeAffinity").is_some(),
        "TaintToleration" | "NodeUnschedulable" => spec.get("tolerations").is_some(),
        "NodePorts" => containers().any(|c| c.get("ports").is_some()),
        "InterPodAffinity" => {
            let a = &spec["affinity"];
            a.get("podAffinity").is_some() || a.get("podAntiAffinity").is_some()
        }
        "PodTopologySpread" => spec.get("topologySpreadConstraints").is_some(),
        _ => true,
    }
}

/// The rejected pod: drawn until it has what the plugin reads (or after 30 draws, as drawn).
fn rejected_pod(rng: &mut ChaCha8Rng, plugin: &str, nodes: &[String]) -> Value {
    let mut pod = gen::pod(rng, "pending", nodes, true);
    for _ in 0..30 {
        if relevant(plugin, &pod) || chance(rng, 0.1) {
            break;
        }
        pod = gen::pod(rng, "pending", nodes, true);
    }
    pod
}

/// An assigned pod on `node`: sometimes with the rejected pod's labels and namespace, so that its
/// terms and selectors match.
fn assigned_pod(rng: &mut ChaCha8Rng, node: &str, nodes: &[String], rejected: &Value) -> Value {
    let with_terms = chance(rng, 0.3);
    let mut p = gen::pod(rng, "assigned", nodes, with_terms);
    if chance(rng, 0.3) {
        p["metadata"]["labels"] = rejected["metadata"]["labels"].clone();
        p["metadata"]["namespace"] = rejected["metadata"]["namespace"].clone();
    }
    p["spec"]["nodeName"] = json!(node);
    p
}

/// A copy of `node` with one to three changes: a label set or removed, a taint added or removed,
/// an allocatable quantity changed, `unschedulable` flipped.
fn mutate_node(rng: &mut ChaCha8Rng, old: &Value) -> Value {
    let mut n = old.clone();
    for _ in 0..rng.gen_range(1..=3) {
        match rng.gen_range(0..5) {
            0 => {
                let (key, vocab): (&str, &[&str]) = *pick(
                    rng,
                    &[
                        ("topology.kubernetes.io/zone", &gen::ZONES[..]),
                        ("disk", &["ssd", "hdd"][..]),
                        ("tier", &["a", "b", "c"][..]),
                        ("cores", &["2", "8", "32"][..]),
                    ],
                );
                n["metadata"]["labels"][key] = json!(pick(rng, vocab));
            }
            1 => {
                if let Some(labels) = n["metadata"]["labels"].as_object_mut() {
                    let keys: Vec<String> = labels.keys().cloned().collect();
                    if !keys.is_empty() {
                        labels.remove(pick(rng, &keys));
                    }
                }
            }
            2 => {
                let taints = n["spec"]["taints"].as_array().cloned().unwrap_or_default();
                let mut taints: Vec<Value> = taints;
                if !taints.is_empty() && chance(rng, 0.5) {
                    let i = rng.gen_range(0..taints.len());
                    taints.remove(i);
                } else {
                    let mut t = json!({"key": pick(rng, &gen::TAINT_KEYS), "effect": pick(rng, &gen::EFFECTS)});
                    if chance(rng, 0.6) {
                        t["value"] = json!(pick(rng, &["a", "b"]));
                    }
                    taints.push(t);
                }
                n["spec"]["taints"] = json!(taints);
            }
            3 => {
                let (key, value) = match rng.gen_range(0..5) {
                    0 => ("cpu", json!(gen::cpu(rng, 8000))),
                    1 => ("memory", json!(gen::memory(rng, 16384))),
                    2 => ("pods", json!(rng.gen_range(0..=20).to_string())),
                    3 => ("ephemeral-storage", json!(format!("{}Gi", rng.gen_range(1..=50)))),
                    _ => (gen::EXTENDED, json!(rng.gen_range(0..=4).to_string())),
                };
                n["status"]["allocatable"][key] = value.clone();
                n["status"]["capacity"][key] = value;
            }
            _ => {
                let was = n["spec"]["unschedulable"].as_bool().unwrap_or(false);
                n["spec"]["unschedulable"] = json!(!was);
            }
        }
    }
    n
}

/// A copy of `pod` with one or two changes: a label set or removed, a container's request scaled,
/// a toleration added (`own`: the rejected pod, which may gain tolerations).
fn mutate_pod(rng: &mut ChaCha8Rng, old: &Value, own: bool) -> Value {
    let mut p = old.clone();
    for _ in 0..rng.gen_range(1..=2) {
        match rng.gen_range(0..if own { 3 } else { 2 }) {
            0 => {
                let key = *pick(rng, &["app", "team", "version"]);
                if chance(rng, 0.3) {
                    if let Some(l) = p["metadata"]["labels"].as_object_mut() {
                        l.remove(key);
                    }
                } else {
                    let value = match key {
                        "app" => *pick(rng, &gen::APPS),
                        "team" => *pick(rng, &gen::TEAMS),
                        _ => *pick(rng, &["v1", "v2"]),
                    };
                    p["metadata"]["labels"][key] = json!(value);
                }
            }
            1 => {
                let Some(cs) = p["spec"]["containers"].as_array_mut().filter(|cs| !cs.is_empty()) else { continue };
                let i = rng.gen_range(0..cs.len());
                let (key, value) = match rng.gen_range(0..4) {
                    0 => ("cpu", json!(gen::cpu(rng, 3000))),
                    1 => ("memory", json!(gen::memory(rng, 6144))),
                    2 => ("ephemeral-storage", json!(format!("{}Gi", rng.gen_range(1..=20)))),
                    _ => (gen::EXTENDED, json!(rng.gen_range(1..=2).to_string())),
                };
                let c = &mut cs[i];
                if c.get("resources").is_none() {
                    c["resources"] = json!({"requests": {}});
                }
                if chance(rng, 0.2) {
                    if let Some(r) = c["resources"]["requests"].as_object_mut() {
                        r.remove(key);
                    }
                } else {
                    c["resources"]["requests"][key] = value;
                }
            }
            _ => {
                let mut tols = p["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
                tols.push(gen::toleration(rng));
                p["spec"]["tolerations"] = json!(tols);
            }
        }
    }
    p
}

/// The `index`-th case of `seed`.
pub fn generate(seed: u64, index: u64) -> HintCase {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6869_6e74_0000_0000 ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let plugin = *pick(&mut rng, &PLUGINS);
    let event =
        if chance(&mut rng, 0.75) { *pick(&mut rng, registered_events(plugin)) } else { *pick(&mut rng, &EVENTS) };
    let nodes: Vec<String> = (0..4).map(|i| format!("node-{i}")).collect();
    let config = (plugin == "NodeAffinity" && chance(&mut rng, 0.3)).then(|| {
        let text: &&str = pick(&mut rng, &ADDED_AFFINITY);
        let term: Value = serde_json::from_str(text).expect("a valid term");
        json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
               "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{"name": "NodeAffinity",
               "args": {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [term]}}}}]}]})
        .to_string()
    });
    let pod = rejected_pod(&mut rng, plugin, &nodes);
    let node_name = pick(&mut rng, &nodes).clone();
    let (old, new) = match event {
        "NodeAdd" => (None, Some(gen::node(&mut rng, &node_name))),
        "NodeDelete" => (Some(gen::node(&mut rng, &node_name)), None),
        "NodeUpdate" => {
            let old = gen::node(&mut rng, &node_name);
            let new = mutate_node(&mut rng, &old);
            (Some(old), Some(new))
        }
        "AssignedPodAdd" => (None, Some(assigned_pod(&mut rng, &node_name, &nodes, &pod))),
        "AssignedPodDelete" => (Some(assigned_pod(&mut rng, &node_name, &nodes, &pod)), None),
        "AssignedPodUpdate" => {
            let old = assigned_pod(&mut rng, &node_name, &nodes, &pod);
            let new = mutate_pod(&mut rng, &old, false);
            (Some(old), Some(new))
        }
        _ => {
            let new = mutate_pod(&mut rng, &pod, true);
            (Some(pod.clone()), Some(new))
        }
    };
    // The rejected pod as the queue holds it: after its own update, the new one.
    let pod = if event == "UnscheduledPodUpdate" { new.clone().expect("an update has a new pod") } else { pod };
    HintCase { plugin, config, event, old, new, pod }
}

/// schedperf's side: what the registered hint function answers.
pub fn ours(case: &HintCase) -> Result<QueueingHint, String> {
    let mut snap = Snapshot::new();
    let syms = hint_syms(&mut snap.interner, &snap.wk);
    let config = match &case.config {
        Some(text) => SchedulerConfig::parse(text, "config.json").map_err(|e| e.to_string())?,
        None => SchedulerConfig::defaults(),
    };
    let profile = &config.profiles[0];
    let compiled = compile_args(&profile.args, &mut snap.interner, &config.source).map_err(|e| e.to_string())?;
    let fw = crate::plugins::build_framework(profile, &compiled, &mut snap.interner)?;
    let plugin = fw.plugins.iter().find(|p| p.name() == case.plugin).ok_or("plugin not in the profile")?;
    let args = HintArgs::of(&**plugin);
    let parse = |v: &Value, field: &str| -> Result<Object, String> {
        api::parse_objects(&v.to_string(), field).map_err(|e| e.to_string())?.pop().ok_or(format!("{field}: empty"))
    };
    let node = |v: &Option<Value>, field: &str| -> Result<Option<api::Node>, String> {
        match v.as_ref().map(|v| parse(v, field)).transpose()? {
            None => Ok(None),
            Some(Object::Node(n)) => Ok(Some(n)),
            Some(_) => Err(format!("{field}: expected a Node")),
        }
    };
    let pod = |v: &Option<Value>, field: &str| -> Result<Option<api::Pod>, String> {
        match v.as_ref().map(|v| parse(v, field)).transpose()? {
            None => Ok(None),
            Some(Object::Pod(p)) => Ok(Some(p)),
            Some(_) => Err(format!("{field}: expected a Pod")),
        }
    };
    let wk = snap.wk.clone();
    let priorities = Priorities::default();
    let rejected_uid = PodUid(1);
    let mut compile = |p: &api::Pod, uid: PodUid| -> Result<Arc<PodInfo>, String> {
        compile_pod(p, &p.metadata.name, uid, &priorities, &mut snap.interner, &wk).map(Arc::new)
    };
    let rejected = pod(&Some(case.pod.clone()), "pod")?.expect("a pod");
    let rejected = compile(&rejected, rejected_uid)?;
    let mut objs = EventObjects::default();
    let event = if case.event.starts_with("Node") {
        let (old, new) = (node(&case.old, "oldObj")?, node(&case.new, "newObj")?);
        let mut object = |n: &api::Node| {
            let spec = compile_node(n, &mut snap.interner);
            let label_ints = spec.labels.iter().map(|&(_, v)| snap.interner.as_int(v)).collect();
            NodeObject { spec: Arc::new(spec), label_ints }
        };
        objs.old_node = old.as_ref().map(&mut object);
        objs.new_node = new.as_ref().map(&mut object);
        match (&old, &new) {
            (None, Some(_)) => ClusterEvent::NodeAdd { node: 0 },
            (Some(_), None) => ClusterEvent::NodeDelete { node: 0 },
            (Some(o), Some(n)) => ClusterEvent::NodeUpdate { node: 0, change: node_update_change(o, n) },
            (None, None) => return Err("a node event without a node".into()),
        }
    } else {
        let (old, new) = (pod(&case.old, "oldObj")?, pod(&case.new, "newObj")?);
        let own = case.event == "UnscheduledPodUpdate";
        let uid = if own { rejected_uid } else { PodUid(2) };
        objs.old_pod = old.as_ref().map(|p| compile(p, uid)).transpose()?;
        objs.new_pod = new.as_ref().map(|p| compile(p, uid)).transpose()?;
        match (&objs.old_pod, &objs.new_pod) {
            _ if own => ClusterEvent::UnscheduledPodUpdate { pod: uid },
            (None, Some(_)) => ClusterEvent::AssignedPodAdd { pod: uid, node: 0 },
            (Some(_), None) => ClusterEvent::AssignedPodDelete { pod: uid, node: 0 },
            (Some(o), Some(n)) => ClusterEvent::AssignedPodUpdate {
                pod: uid,
                node: 0,
                resources_scaled_down: requests_scaled_down(&o.requests, &n.requests),
            },
            (None, None) => return Err("a pod event without a pod".into()),
        }
    };
    let f = hint_fn::<()>(case.plugin, syms, args).ok_or("no hint function")?;
    let queued = QueuedPod::new(rejected_uid, rejected.priority, ()).with_spec(rejected);
    Ok(f(&event, Some(&objs), &queued))
}

fn hint_name(h: QueueingHint) -> &'static str {
    match h {
        QueueingHint::Queue => "Queue",
        QueueingHint::Skip => "Skip",
    }
}

/// Writes the case, both answers and the difference as one JSON file; returns its path.
fn write_reproducer(out: &Path, seed: u64, index: u64, case: &HintCase, ours: &str, theirs: &Value) -> String {
    let path = out.join(format!("hint-seed{seed}-case{index}.json"));
    let doc = json!({"request": case.request(), "schedperf": ours, "kube-scheduler": theirs,
                     "reproduce": "schedperf-oracle hint < (the request on one line)"});
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    if let Err(e) = std::fs::create_dir_all(out).and_then(|_| std::fs::write(&path, text)) {
        eprintln!("verify: cannot write {}: {e}", path.display());
    }
    path.display().to_string()
}

/// `schedperf verify --hint-random N`: N cases through both; exit 0 when all agree.
pub fn run(args: &VerifyArgs, n: u64) -> Result<i32, InputError> {
    let mut oracle = Oracle::start_cmd(&args.oracle, "hint", Duration::from_secs(args.oracle_timeout_s))
        .map_err(|e| InputError::new("--oracle", "", e.to_string()))?;
    let (mut agree, mut diverged) = (0u64, 0u64);
    // (plugin, event, schedperf's answer, upstream's) -> count, for the summary.
    let mut kinds: BTreeMap<(&str, &str, String, String), u64> = BTreeMap::new();
    // Per plugin, the agreeing answers: [Queue, Skip or error].
    let mut answers: BTreeMap<&str, [u64; 2]> = BTreeMap::new();
    for i in 0..n {
        let case = generate(args.seed, i);
        let ours = match ours(&case) {
            Ok(h) => hint_name(h).to_string(),
            Err(e) => format!("error: {e}"),
        };
        let theirs = match oracle.call(&case.request()) {
            Ok(v) => v,
            Err(OracleError::Refused(e)) => json!({ "error": e }),
            Err(e) => {
                eprintln!("verify: hint case {i} (seed {}): the oracle failed: {e}", args.seed);
                println!("verify: {agree}/{n} hint cases agree (stopped at case {i}: the oracle failed)");
                return Ok(crate::error::exit::FAILED.into());
            }
        };
        let theirs_hint = match (theirs.get("hint").and_then(Value::as_str), theirs.get("error")) {
            (Some(h), _) => h.to_string(),
            (None, Some(e)) => format!("error: {}", e.as_str().unwrap_or_default()),
            _ => format!("error: unexpected answer {theirs}"),
        };
        if ours == theirs_hint {
            agree += 1;
            let tally = answers.entry(case.plugin).or_default();
            tally[usize::from(ours != "Queue")] += 1;
            continue;
        }
        diverged += 1;
        let short = |s: &str| s.chars().take(60).collect::<String>();
        *kinds.entry((case.plugin, case.event, short(&ours), short(&theirs_hint))).or_default() += 1;
        let path = write_reproducer(&args.out, args.seed, i, &case, &ours, &theirs);
        if diverged <= 10 {
            eprintln!(
                "verify: hint case {i}: {} on {}: schedperf {ours}, kube-scheduler {theirs_hint} ({path})",
                case.plugin, case.event
            );
        }
        if args.max_divergences > 0 && diverged >= args.max_divergences {
            println!("verify: {agree}/{n} hint cases agree (stopped after {diverged} divergences at case {i})");
            return Ok(crate::error::exit::FAILED.into());
        }
    }
    for ((plugin, event, ours, theirs), count) in &kinds {
        println!("verify: {count} x {plugin} on {event}: schedperf {ours}, kube-scheduler {theirs}");
    }
    let tallies: Vec<String> = answers.iter().map(|(p, [q, k])| format!("{p} {q} Queue/{k} Skip")).collect();
    println!("verify: agreeing answers: {}", tallies.join(", "));
    println!("verify: {agree}/{n} hint cases agree");
    use crate::error::exit;
    Ok(i32::from(if agree == n { exit::OK } else { exit::FAILED }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_and_index_give_the_same_case() {
        assert_eq!(generate(7, 3), generate(7, 3));
        assert_ne!(generate(7, 3), generate(7, 4));
    }

    /// Every plugin meets every event in a short stream, and schedperf answers every case.
    #[test]
    fn the_stream_covers_every_plugin_and_event_and_schedperf_answers() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..2000 {
            let case = generate(1, i);
            seen.insert((case.plugin, case.event));
            if let Err(e) = ours(&case) {
                panic!("case {i} ({} on {}): {e}", case.plugin, case.event);
            }
        }
        assert_eq!(seen.len(), PLUGINS.len() * EVENTS.len(), "{seen:?}");
    }
}
