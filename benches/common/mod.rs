//! Fixtures shared by the benches: the default profile, and SchedulingBasic-shaped clusters built from the workload templates through `crate::api` and
//! `snapshot::compile`, exactly as `schedperf run` builds them.
//!
//! Each bench binary uses a different subset of these helpers, so dead-code warnings are allowed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schedperf::agent::PodUid;
use schedperf::api::{self, Object};
use schedperf::config::{Profile, SchedulerConfig};
use schedperf::framework::Framework;
use schedperf::plugins::compile_args;
use schedperf::snapshot::compile::{compile_node, compile_pod, Priorities};
use schedperf::snapshot::{NodeIdx, PodInfo, Snapshot};

/// The repository root (benches run with the package root as their working directory, but this
/// does not rely on it).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `workloads/templates/<name>`.
pub fn template_path(name: &str) -> PathBuf {
    repo_root().join("workloads/templates").join(name)
}

/// Keeps the plugins of `profile` for which `keep` holds, at every extension point.
fn retain_plugins(mut profile: Profile, keep: impl Fn(&str) -> bool) -> Profile {
    let p = &mut profile.plugins;
    for list in [
        &mut p.pre_enqueue,
        &mut p.queue_sort,
        &mut p.pre_filter,
        &mut p.filter,
        &mut p.post_filter,
        &mut p.pre_score,
        &mut p.reserve,
        &mut p.permit,
        &mut p.pre_bind,
        &mut p.bind,
        &mut p.post_bind,
    ] {
        list.retain(|n| keep(n));
    }
    p.score.retain(|(n, _)| keep(n));
    profile
}

/// Removes `names` from every extension point of `profile`.
pub fn without_plugins(profile: Profile, names: &[&str]) -> Profile {
    retain_plugins(profile, |n| !names.contains(&n))
}

/// Keeps only `names` at every extension point of `profile` (in the profile's order and weights).
pub fn only_plugins(profile: Profile, names: &[&str]) -> Profile {
    retain_plugins(profile, |n| names.contains(&n))
}

/// The default profile (`SchedulerConfig::defaults()`): every default plugin of the pinned release.
pub fn bench_profile() -> Profile {
    SchedulerConfig::defaults().profiles.remove(0)
}

/// Builds `profile`'s framework against `snap`'s interner.
pub fn framework(snap: &mut Snapshot, profile: &Profile) -> Framework {
    let compiled = compile_args(&profile.args, &mut snap.interner, "<bench>").expect("bench profile args compile");
    schedperf::plugins::build_framework(profile, &compiled, &mut snap.interner).expect("bench profile builds")
}

fn load_node(template: &str) -> api::Node {
    let path = template_path(template);
    let text = std::fs::read_to_string(&path).expect("node template readable");
    match api::parse_objects(&text, &path.display().to_string()).expect("node template parses").remove(0) {
        Object::Node(n) => n,
        o => panic!("{template} is not a node: {o:?}"),
    }
}

fn load_pod(template: &str) -> api::Pod {
    let path = template_path(template);
    let text = std::fs::read_to_string(&path).expect("pod template readable");
    match api::parse_objects(&text, &path.display().to_string()).expect("pod template parses").remove(0) {
        Object::Pod(p) => p,
        o => panic!("{template} is not a pod: {o:?}"),
    }
}

/// The label every node of a [`Cluster`] with `pool_label` carries, and a nodeSelector pod selects.
pub const POOL_LABEL: (&str, &str) = ("example.com/pool", "default");

/// A SchedulingBasic-shaped snapshot and a pod to schedule on it.
pub struct Cluster {
    pub snap: Snapshot,
    /// A `pod-default.yaml` pod (100m CPU, 500Mi), not placed.
    pub pod: PodInfo,
    /// The same pod with `nodeSelector: {POOL_LABEL}`, not placed.
    pub selector_pod: PodInfo,
}

/// `nodes` nodes from `node-default.yaml` (4 CPU, 32Gi, 110 pods) named `scheduler-perf-<i>`, and
/// `existing_pods` `pod-default.yaml` pods (100m, 500Mi) spread evenly over them. With
/// `pool_label` every node also carries [`POOL_LABEL`].
pub fn cluster(nodes: usize, existing_pods: usize, pool_label: bool) -> Cluster {
    let mut snap = Snapshot::new();
    let node_template = load_node("node-default.yaml");
    let mut names = Vec::with_capacity(nodes);
    for i in 0..nodes {
        let mut node = node_template.clone();
        node.metadata.name = format!("scheduler-perf-{i}");
        if pool_label {
            node.metadata.labels.insert(POOL_LABEL.0.into(), POOL_LABEL.1.into());
        }
        let spec = compile_node(&node, &mut snap.interner);
        names.push(spec.name);
        snap.add_node(&spec).expect("node names are unique");
    }
    let pod_template = load_pod("pod-default.yaml");
    let priorities = Priorities::default();
    let wk = snap.wk.clone();
    let mut uid = 0u64;
    let mut compile = |snap: &mut Snapshot, pod: &api::Pod, name: &str| -> PodInfo {
        uid += 1;
        compile_pod(pod, name, PodUid(uid), &priorities, &mut snap.interner, &wk).expect("pod compiles")
    };
    let mut placed = pod_template.clone();
    placed.metadata.namespace = "namespace-0".into();
    for i in 0..existing_pods {
        let info = compile(&mut snap, &placed, &format!("pod-{i:06}"));
        let node = names[i * nodes / existing_pods.max(1)];
        snap.place_pod(Arc::new(info), node).expect("node exists, pod unplaced");
    }
    let mut measured = pod_template.clone();
    measured.metadata.namespace = "namespace-1".into();
    let pod = compile(&mut snap, &measured, "measured-pod");
    let mut selecting = measured.clone();
    selecting.spec.node_selector.insert(POOL_LABEL.0.into(), POOL_LABEL.1.into());
    let selector_pod = compile(&mut snap, &selecting, "selector-pod");
    Cluster { snap, pod, selector_pod }
}

/// Every node index of `snap`, in table order.
pub fn all_nodes(snap: &Snapshot) -> Vec<NodeIdx> {
    (0..snap.nodes.len() as u32).map(NodeIdx).collect()
}
