//! `schedperf explain`: every node's filter verdict and scores for one pod, without sampling.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::api::{self, Object};
use crate::cluster::{build_snapshot, Cluster, UidGen};
use crate::config::SchedulerConfig;
use crate::engine::cycle::{filter_nodes, Diagnosis, NodeFailure};
use crate::engine::Engine;
use crate::error::InputError;
use crate::framework::{Code, CycleCx, CycleState, Framework, PluginId, Reject};
use crate::plugins::compile_args;
use crate::snapshot::compile::compile_pod;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot};

/// A filter verdict in the output.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FilterVerdict {
    pub plugin: String,
    pub code: String,
    pub reasons: Vec<String>,
}

/// One plugin's score on a node: after NormalizeScore, before the weight (`score`), and as its
/// Score gave it, before NormalizeScore (`raw`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PluginScore {
    pub score: i64,
    pub weight: i64,
    pub raw: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeExplanation {
    pub name: String,
    pub feasible: bool,
    pub filter: Option<FilterVerdict>,
    pub scores: Option<std::collections::BTreeMap<String, PluginScore>>,
    pub total_score: Option<i64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub pod: String,
    pub profile: String,
    pub nodes: Vec<NodeExplanation>,
    pub selected: Option<String>,
    /// The pod-level outcome: "0/3 nodes are available: ..." when nothing fits.
    pub message: Option<String>,
    /// Plugins whose PreScore returned Skip (absent from `scores`).
    pub skipped_score_plugins: Vec<String>,
    /// What PostFilter (DefaultPreemption) would do: present only when no node is feasible and
    /// the profile enables DefaultPreemption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionExplanation>,
    /// The attempt failed with an Error status (a PreScore or Score plugin failed): upstream's
    /// error text. The pod is not placed; the scheduler retries it after backoff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// PostFilter's dry run for a pod that fits nowhere.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionExplanation {
    /// The node preemption would nominate.
    pub nominated_node: Option<String>,
    /// The pods it would delete there (namespace/name), in upstream's order.
    pub victims: Vec<String>,
    /// Every node where preemption would let the pod fit, and the victims there: every
    /// potential node is tried. (PostFilter itself visits the nodes from a random offset and
    /// stops once it holds a candidate without PDB violations and `numCandidates`, from
    /// minCandidateNodesPercentage/Absolute, in all; `nominatedNode` is its pick from offset 0.)
    pub candidates: Vec<PreemptionCandidate>,
    /// When upstream's random offset can change the nomination: every candidate it may nominate
    /// (found by trying every potential node), `nominatedNode` included. Absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub may_nominate: Vec<PreemptionCandidate>,
    /// Why preemption finds nothing, in upstream's words.
    pub message: Option<String>,
}

/// A node where evicting `victims` lets the pod fit.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionCandidate {
    pub node: String,
    /// namespace/name, most important first.
    pub victims: Vec<String>,
    pub num_pdb_violations: usize,
}

/// What `explain` needs.
#[derive(Debug, Clone)]
pub struct ExplainInput {
    pub cluster: Vec<PathBuf>,
    pub pod: PathBuf,
    pub config: Option<PathBuf>,
    pub seed: u64,
}

fn load_pod(path: &std::path::Path) -> Result<api::Pod, InputError> {
    let file = path.display().to_string();
    let mut pods: Vec<api::Pod> = api::load_objects(path)?
        .into_iter()
        .filter_map(|o| match o {
            Object::Pod(p) => Some(p),
            _ => None,
        })
        .collect();
    match pods.len() {
        1 => Ok(pods.remove(0)),
        n => Err(InputError::new(file, "", format!("expected exactly one Pod, found {n}"))),
    }
}

/// Evaluates every node for the pod (no sampling, all feasible nodes scored).
pub fn explain(input: &ExplainInput) -> Result<Explanation, InputError> {
    let mut l = load(input)?;
    let mut engine = Engine::new(input.seed, 1, l.percentage_of_nodes_to_score);
    Ok(explain_pod(&l.fw, &mut engine, &mut l.snap, &l.pod, &l.key))
}

/// The inputs of one explanation, compiled.
struct Loaded {
    fw: Framework,
    snap: Snapshot,
    pod: PodInfo,
    key: String,
    percentage_of_nodes_to_score: Option<i32>,
}

fn load(input: &ExplainInput) -> Result<Loaded, InputError> {
    let config = match &input.config {
        Some(p) => SchedulerConfig::load(p)?,
        None => SchedulerConfig::defaults(),
    };
    let cluster_file = input.cluster.first().map(|p| p.display().to_string()).unwrap_or_default();
    let cluster = Cluster::load(&input.cluster)?;
    let pod_file = input.pod.display().to_string();
    let raw_pod = load_pod(&input.pod)?;
    compile_inputs(&config, &cluster, &cluster_file, &raw_pod, &pod_file)
}

/// Explains one pod given as parsed inputs (what `schedperf verify` generates in memory).
pub fn explain_parsed(
    config: &SchedulerConfig,
    cluster: &Cluster,
    cluster_file: &str,
    raw_pod: &api::Pod,
    pod_file: &str,
    seed: u64,
) -> Result<Explanation, InputError> {
    let mut l = compile_inputs(config, cluster, cluster_file, raw_pod, pod_file)?;
    let mut engine = Engine::new(seed, 1, l.percentage_of_nodes_to_score);
    Ok(explain_pod(&l.fw, &mut engine, &mut l.snap, &l.pod, &l.key))
}

fn compile_inputs(
    config: &SchedulerConfig,
    cluster: &Cluster,
    cluster_file: &str,
    raw_pod: &api::Pod,
    pod_file: &str,
) -> Result<Loaded, InputError> {
    let mut uids = UidGen::default();
    let (mut snap, _pending) = build_snapshot(cluster, cluster_file, &mut uids)?;
    let scheduler_name =
        if raw_pod.spec.scheduler_name.is_empty() { "default-scheduler" } else { &raw_pod.spec.scheduler_name };
    let profile = config.profile(scheduler_name).ok_or_else(|| {
        InputError::new(
            pod_file,
            "spec.schedulerName",
            format!(
                "no profile named {scheduler_name:?} in {}; profiles: {:?}",
                config.source,
                config.profiles.iter().map(|p| &p.scheduler_name).collect::<Vec<_>>()
            ),
        )
    })?;
    let name = if raw_pod.metadata.name.is_empty() {
        format!("{}00000", raw_pod.metadata.generate_name)
    } else {
        raw_pod.metadata.name.clone()
    };
    let wk = snap.wk.clone();
    let uid = uids.next_uid();
    let mut pod = compile_pod(raw_pod, &name, uid, &cluster.priorities(), &mut snap.interner, &wk)
        .map_err(|e| InputError::new(pod_file, "spec.priorityClassName", e))?;
    // The pod's claims from templates, made as the resourceclaim controller makes them (the
    // oracle's explain does the same before its one cycle).
    if let Some(refs) = &pod.claims {
        let mut refs = (**refs).clone();
        refs.pod.metadata.namespace = raw_pod.namespace().to_string();
        let namespace = refs.pod.metadata.namespace.clone();
        crate::plugins::dynamicresources::controller::create_pod_claims(
            &mut refs.pod,
            &namespace,
            &mut snap.cluster.dra,
        );
        pod.claims = Some(std::sync::Arc::new(refs));
    }
    let compiled = compile_args(&profile.args, &mut snap.interner, &config.source)?;
    let fw = crate::plugins::build_framework(profile, &compiled, &mut snap.interner)
        .map_err(|e| InputError::new(&config.source, "profiles", e))?;
    Ok(Loaded {
        fw,
        snap,
        pod,
        key: format!("{}/{}", raw_pod.namespace(), name),
        percentage_of_nodes_to_score: config.percentage_of_nodes_to_score,
    })
}

/// The evaluation itself, for a compiled pod against a snapshot. When no node is feasible, runs
/// PostFilter as a dry run: the snapshot is restored afterwards (up to the order of pods within a
/// node) and nothing is nominated.
pub fn explain_pod(
    fw: &Framework,
    engine: &mut Engine,
    snap: &mut Snapshot,
    pod: &PodInfo,
    pod_key: &str,
) -> Explanation {
    let (mut out, diag) = evaluate(fw, engine, snap, pod, pod_key);
    if let Some(diag) = diag {
        out.preemption = explain_preemption(fw, snap, pod, &diag);
        // `FitError.Error()` ends with PostFilter's message when preemption did not help.
        // `FitError.Error()` ends with PostFilter's status message: why preemption did not help,
        // or, when it found a node, upstream's "found a potential placement ..." (preemption.go).
        let post = out.preemption.as_ref().and_then(|p| match (&p.message, &p.nominated_node) {
            (Some(m), _) => Some(m.clone()),
            (None, Some(node)) => Some(format!(
                "preemption: found a potential placement for pod on node {node}, preempting {} victims",
                p.victims.len()
            )),
            (None, None) => None,
        });
        if let (Some(m), Some(p)) = (&mut out.message, post) {
            m.push(' ');
            m.push_str(&p);
        }
    }
    out
}

/// PostFilter's dry run for an unschedulable pod through the profile's PostFilter plugins (as
/// configured: their args, their order); `None` when none of them has a plan (the profile
/// enables no PostFilter plugin, e.g. DefaultPreemption disabled).
pub fn explain_preemption(
    fw: &Framework,
    snap: &mut Snapshot,
    pod: &PodInfo,
    diag: &Diagnosis,
) -> Option<PreemptionExplanation> {
    let plan = fw.post_filter_plan(snap, pod, diag, false)?;
    let all = fw.post_filter_plan(snap, pod, diag, true).unwrap_or_default();
    let key = |p: &PodInfo| format!("{}/{}", snap.interner.resolve(p.namespace), p.name);
    let candidate = |c: &crate::framework::PostFilterCandidate| PreemptionCandidate {
        node: snap.interner.resolve(c.node).to_string(),
        victims: c.victims.iter().map(|v| key(v)).collect(),
        num_pdb_violations: c.num_pdb_violations,
    };
    let chosen = plan.chosen.map(|i| candidate(&plan.candidates[i]));
    let candidates: Vec<PreemptionCandidate> = all.candidates.iter().map(candidate).collect();
    let may_nominate = match all.may_nominate.len() {
        0 | 1 => Vec::new(),
        _ => all.may_nominate.iter().map(|&i| candidate(&all.candidates[i])).collect(),
    };
    Some(PreemptionExplanation {
        nominated_node: chosen.as_ref().map(|b| b.node.clone()),
        victims: chosen.map(|b| b.victims).unwrap_or_default(),
        message: plan.message,
        candidates,
        may_nominate,
    })
}

/// Filter and score every node; the diagnosis PostFilter reads when no node is feasible.
fn evaluate(
    fw: &Framework,
    engine: &mut Engine,
    snap: &Snapshot,
    pod: &PodInfo,
    pod_key: &str,
) -> (Explanation, Option<Diagnosis>) {
    let cx = CycleCx { snap, pod };
    let mut state = CycleState::new();
    let n = snap.nodes.len();
    let all: Vec<NodeIdx> = (0..n as u32).map(NodeIdx).collect();
    let mut verdicts: Vec<Option<(PluginId, Reject)>> = vec![None; n];
    let mut framework_reject: Vec<Option<FilterVerdict>> = vec![None; n];
    let mut excluded = vec![false; n];
    let mut out = Explanation {
        pod: pod_key.to_string(),
        profile: fw.scheduler_name.clone(),
        nodes: Vec::with_capacity(n),
        selected: None,
        message: None,
        skipped_score_plugins: Vec::new(),
        preemption: None,
        error: None,
    };
    let mut diag = Diagnosis { num_all_nodes: n, ..Default::default() };
    match Engine::run_pre_filter(fw, cx, &mut state) {
        Err((pid, st)) => {
            let v = FilterVerdict {
                plugin: fw.plugin(pid).name().to_string(),
                code: st.code.to_string(),
                reasons: st.reasons.clone(),
            };
            for node in &all {
                out.nodes.push(NodeExplanation {
                    name: snap.node_name(*node).to_string(),
                    feasible: false,
                    filter: Some(v.clone()),
                    scores: None,
                    total_score: None,
                });
            }
            out.message = Some(format!("0/{n} nodes are available: {}.", st.reasons.join(", ")));
            // An Error status ends the cycle before PostFilter.
            let diag = (st.code != Code::Error).then_some(Diagnosis { pre_filter: Some((pid, st)), ..diag });
            return (out, diag);
        }
        Ok((skip, names, narrowing)) => {
            filter_nodes(fw, cx, &state, &skip, &all, &mut verdicts);
            if let Some(names) = names {
                let mut plugins: Vec<&str> = narrowing.iter().map(|p| fw.plugin(*p).name()).collect();
                plugins.sort_unstable();
                plugins.dedup();
                for node in &all {
                    let outside = !names.contains(&snap.nodes.name[node.ix()]);
                    excluded[node.ix()] = outside;
                    if outside {
                        framework_reject[node.ix()] = Some(FilterVerdict {
                            plugin: plugins.first().copied().unwrap_or("").to_string(),
                            code: Code::UnschedulableAndUnresolvable.to_string(),
                            reasons: vec![format!("node(s) didn't satisfy plugin(s) [{}]", plugins.join(" "))],
                        });
                    }
                }
            }
            diag.pre_filter_result_plugins = narrowing;
        }
    }
    // As the engine sees it: nodes outside a PreFilterResult are excluded, not filtered.
    diag.pre_filter_excluded = excluded.iter().filter(|e| **e).count();
    diag.failures = all
        .iter()
        .filter(|node| !excluded[node.ix()])
        .filter_map(|node| verdicts[node.ix()].map(|(plugin, reject)| NodeFailure { node: *node, plugin, reject }))
        .collect();
    // In scan order, as the filter pass finds them: host selection breaks ties by heap position.
    let feasible: Vec<NodeIdx> = snap
        .scan_order()
        .iter()
        .copied()
        .filter(|i| verdicts[i.ix()].is_none() && framework_reject[i.ix()].is_none())
        .collect();
    let table = if feasible.is_empty() {
        None
    } else {
        match engine.score(fw, cx, &mut state, &feasible, true) {
            Ok(t) => Some(t),
            Err(st) => {
                out.error = Some(st.reasons.join(", "));
                None
            }
        }
    };
    if let Some(t) = &table {
        let scored: Vec<PluginId> = t.plugins.iter().map(|(p, _, _)| *p).collect();
        out.skipped_score_plugins = fw
            .score
            .iter()
            .filter(|(p, _)| !scored.contains(p))
            .map(|(p, _)| fw.plugin(*p).name().to_string())
            .collect();
        out.selected = Some(snap.node_name(engine.select(&feasible, &t.totals)).to_string());
    }
    let mut failures = 0;
    for node in &all {
        let i = node.ix();
        // Upstream never filters a node a PreFilterResult left out: its status is the framework's.
        let filter = match (verdicts[i], &framework_reject[i]) {
            (_, Some(v)) => {
                failures += 1;
                Some(v.clone())
            }
            (Some((pid, rej)), None) => {
                failures += 1;
                let p = fw.plugin(pid);
                Some(FilterVerdict {
                    plugin: p.name().to_string(),
                    code: rej.code.to_string(),
                    reasons: p.reasons(cx, &state, rej),
                })
            }
            (None, None) => None,
        };
        let (scores, total) = match (&filter, &table) {
            (None, Some(t)) => {
                let j = feasible.iter().position(|f| f == node).expect("feasible node is scored");
                let m = t
                    .plugins
                    .iter()
                    .zip(&t.raw)
                    .map(|((p, w, s), (_, raw))| {
                        (fw.plugin(*p).name().to_string(), PluginScore { score: s[j], weight: *w, raw: raw[j] })
                    })
                    .collect();
                (Some(m), Some(t.totals[j]))
            }
            _ => (None, None),
        };
        out.nodes.push(NodeExplanation {
            name: snap.node_name(*node).to_string(),
            feasible: filter.is_none(),
            filter,
            scores,
            total_score: total,
        });
    }
    if feasible.is_empty() {
        let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        for nd in &out.nodes {
            for r in nd.filter.iter().flat_map(|f| f.reasons.iter()) {
                *counts.entry(r.clone()).or_default() += 1;
            }
        }
        // `FitError.Error()`: "count reason" strings in byte order (`sort.Strings`).
        let mut parts: Vec<String> = counts.into_iter().map(|(r, c)| format!("{c} {r}")).collect();
        parts.sort();
        out.message = Some(format!("0/{n} nodes are available: {}.", parts.join(", ")));
    }
    debug_assert_eq!(failures + feasible.len(), n);
    let diag = feasible.is_empty().then_some(diag);
    (out, diag)
}

/// The table for people: one row per node, the same facts as the JSON.
pub fn render_table(e: &Explanation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "pod {}  profile {}", e.pod, e.profile);
    let mut rows = vec![["NODE", "FEASIBLE", "TOTAL", "DETAIL"].map(String::from).to_vec()];
    for n in &e.nodes {
        let total = n.total_score.map_or("-".to_string(), |t| t.to_string());
        let detail = match (&n.filter, &n.scores) {
            (Some(f), _) => format!("{} {}: {}", f.plugin, f.code, f.reasons.join("; ")),
            (None, Some(sc)) => {
                // `P=SxW`, with the raw score when NormalizeScore changed it: `P=S(raw R)xW`.
                sc.iter()
                    .map(|(p, v)| match v.raw == v.score {
                        true => format!("{p}={}x{}", v.score, v.weight),
                        false => format!("{p}={}(raw {})x{}", v.score, v.raw, v.weight),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            (None, None) => String::new(),
        };
        rows.push(vec![n.name.clone(), if n.feasible { "yes" } else { "no" }.to_string(), total, detail]);
    }
    s.push_str(&crate::report::table::columns(&rows, &[false, false, true, false], false));
    if !e.skipped_score_plugins.is_empty() {
        let _ = writeln!(s, "skipped at PreScore: {}", e.skipped_score_plugins.join(", "));
    }
    match (&e.selected, &e.message) {
        (Some(sel), _) => {
            let _ = writeln!(s, "selected: {sel}");
        }
        (None, Some(m)) => {
            let _ = writeln!(s, "{m}");
        }
        (None, None) => {}
    }
    if let Some(err) = &e.error {
        let _ = writeln!(s, "error: {err}");
    }
    if let Some(p) = &e.preemption {
        let _ = writeln!(s, "preemption:");
        if let Some(node) = &p.nominated_node {
            let _ = writeln!(s, "  nominated node: {node}");
            let _ = writeln!(s, "  victims: {}", p.victims.join(", "));
        }
        for c in &p.candidates {
            let _ = writeln!(
                s,
                "  candidate {}: {} victim(s), {} PDB violation(s): {}",
                c.node,
                c.victims.len(),
                c.num_pdb_violations,
                c.victims.join(", ")
            );
        }
        if let Some(m) = &p.message {
            let _ = writeln!(s, "  {m}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node with `cpu` cores, optionally tainted NoSchedule.
    fn node(name: &str, cpu: &str, tainted: bool) -> String {
        let taints = if tainted { "\n  spec: {taints: [{key: dedicated, value: x, effect: NoSchedule}]}" } else { "" };
        format!(
            "- apiVersion: v1\n  kind: Node\n  metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}{taints}\n  status: {{allocatable: {{cpu: '{cpu}', memory: 8Gi, pods: '110'}}}}\n"
        )
    }

    /// A pod bound to `node` (`None`: the incoming pod) requesting `cpu`, with a priority.
    fn pod(name: &str, node: Option<&str>, cpu: &str, priority: i32, extra: &str) -> String {
        let node = node.map_or(String::new(), |n| format!("\n    nodeName: {n}"));
        format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: {name}, namespace: default, labels: {{app: {name}}}}}\n  spec:{node}\n    priority: {priority}{extra}\n    containers: [{{name: c, image: i, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\n"
        )
    }

    /// A budget over the pods labelled app=`app` that allows no disruption.
    fn pdb(app: &str) -> String {
        format!(
            "- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n  metadata: {{name: pdb-{app}, namespace: default}}\n  spec: {{selector: {{matchLabels: {{app: {app}}}}}}}\n  status: {{disruptionsAllowed: 0}}\n"
        )
    }

    const NO_POST_FILTER: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins: {postFilter: {disabled: [{name: DefaultPreemption}]}}
";

    /// DefaultPreemption wanting a single candidate (0% of the nodes, at least 1).
    const ONE_CANDIDATE: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 1}
";

    /// Writes the cluster, the incoming pod and an optional config; the loaded input.
    fn input(dir: &std::path::Path, cluster: &[String], incoming: &str, config: Option<&str>) -> ExplainInput {
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let cluster = write("cluster.yaml", &format!("apiVersion: v1\nkind: List\nitems:\n{}", cluster.concat()));
        let incoming = incoming.replacen("- ", "", 1).replace("\n  ", "\n");
        ExplainInput {
            cluster: vec![cluster],
            pod: write("pod.yaml", &incoming),
            config: config.map(|c| write("config.yaml", c)),
            seed: 1,
        }
    }

    /// What the `preemption` field must hold (`None`: absent).
    struct Want {
        nominated: Option<&'static str>,
        victims: Vec<&'static str>,
        /// (node, victims, PDB violations), in output order.
        candidates: Vec<(&'static str, Vec<&'static str>, usize)>,
        /// Nodes upstream may nominate by its random offset (listed when more than one).
        may_nominate: Vec<&'static str>,
        message: Option<&'static str>,
    }

    fn check(name: &str, e: &Explanation, want: Option<Want>) {
        let json = serde_json::to_value(e).unwrap();
        assert_eq!(json.get("preemption").is_some(), want.is_some(), "{name}: field present: {json}");
        let (Some(got), Some(want)) = (&e.preemption, want) else { return };
        assert_eq!(got.nominated_node.as_deref(), want.nominated, "{name}: nominated node");
        assert_eq!(got.victims, want.victims, "{name}: victims");
        let cands: Vec<(&str, Vec<&str>, usize)> = got
            .candidates
            .iter()
            .map(|c| (c.node.as_str(), c.victims.iter().map(String::as_str).collect(), c.num_pdb_violations))
            .collect();
        assert_eq!(cands, want.candidates, "{name}: candidates");
        let may: Vec<&str> = got.may_nominate.iter().map(|c| c.node.as_str()).collect();
        assert_eq!(may, want.may_nominate, "{name}: may nominate");
        assert_eq!(got.message.as_deref(), want.message, "{name}: message");
        assert_eq!(json["preemption"]["nominatedNode"], serde_json::json!(want.nominated), "{name}: JSON name");
        assert!(e.selected.is_none(), "{name}: preemption only for a pod that fits nowhere");
    }

    /// (name, cluster, incoming pod, config, want).
    type Case = (&'static str, Vec<String>, String, Option<&'static str>, Option<Want>);

    #[test]
    fn preemption_dry_run_table() {
        let never = "\n    preemptionPolicy: Never";
        let cases: Vec<Case> = vec![
            (
                "a pod that fits has no preemption field",
                vec![node("node-a", "4", false), pod("low", Some("node-a"), "1", 1, "")],
                pod("web", None, "2", 100, ""),
                None,
                None,
            ),
            (
                "a high-priority pod preempts the lower-priority pod",
                vec![node("node-a", "4", false), pod("low", Some("node-a"), "3", 1, "")],
                pod("web", None, "2", 100, ""),
                None,
                Some(Want {
                    nominated: Some("node-a"),
                    victims: vec!["default/low"],
                    candidates: vec![("node-a", vec!["default/low"], 0)],
                    may_nominate: vec![],
                    message: None,
                }),
            ),
            (
                "only the pods needed are victims, most important first",
                vec![
                    node("node-a", "4", false),
                    pod("p1", Some("node-a"), "1", 1, ""),
                    pod("p2", Some("node-a"), "1", 2, ""),
                    pod("p3", Some("node-a"), "1", 3, ""),
                    pod("keep", Some("node-a"), "1", 500, ""),
                ],
                pod("web", None, "2", 100, ""),
                None,
                Some(Want {
                    nominated: Some("node-a"),
                    victims: vec!["default/p2", "default/p1"],
                    candidates: vec![("node-a", vec!["default/p2", "default/p1"], 0)],
                    may_nominate: vec![],
                    message: None,
                }),
            ),
            (
                "preemptionPolicy Never: no victims, upstream's reason",
                vec![node("node-a", "4", false), pod("low", Some("node-a"), "3", 1, "")],
                pod("web", None, "2", 100, never),
                None,
                Some(Want {
                    nominated: None,
                    victims: vec![],
                    candidates: vec![],
                    may_nominate: vec![],
                    message: Some("preemption: not eligible due to preemptionPolicy=Never."),
                }),
            ),
            (
                "only equal- or higher-priority pods: no victims",
                vec![
                    node("node-a", "4", false),
                    pod("same", Some("node-a"), "3", 100, ""),
                    node("node-b", "4", false),
                    pod("higher", Some("node-b"), "3", 200, ""),
                ],
                pod("web", None, "2", 100, ""),
                None,
                Some(Want {
                    nominated: None,
                    victims: vec![],
                    candidates: vec![],
                    may_nominate: vec![],
                    message: Some(
                        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
                    ),
                }),
            ),
            (
                "allocatable below the request; an unresolvable node is not tried",
                vec![
                    node("node-a", "1", false),
                    pod("low", Some("node-a"), "500m", 1, ""),
                    node("node-b", "8", true),
                    pod("low-b", Some("node-b"), "1", 1, ""),
                ],
                pod("web", None, "2", 100, ""),
                None,
                Some(Want {
                    nominated: None,
                    victims: vec![],
                    candidates: vec![],
                    // node-a's 1 cpu is below the request: UnschedulableAndUnresolvable since
                    // v1.37, so preemption does not try it either.
                    may_nominate: vec![],
                    message: Some("preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."),
                }),
            ),
            (
                "without budgets the node with the lowest-priority victim wins",
                vec![
                    node("node-a", "4", false),
                    pod("guarded", Some("node-a"), "3", 1, ""),
                    node("node-b", "4", false),
                    pod("other", Some("node-b"), "3", 5, ""),
                ],
                pod("web", None, "2", 100, ""),
                None,
                Some(Want {
                    nominated: Some("node-a"),
                    victims: vec!["default/guarded"],
                    candidates: vec![("node-a", vec!["default/guarded"], 0), ("node-b", vec!["default/other"], 0)],
                    may_nominate: vec![],
                    message: None,
                }),
            ),
            (
                "the dry run stops at numCandidates: the first node's victims, though the second's are cheaper; \
                 upstream's random offset may start at either",
                vec![
                    node("node-a", "4", false),
                    pod("other", Some("node-a"), "3", 5, ""),
                    node("node-b", "4", false),
                    pod("cheap", Some("node-b"), "3", 1, ""),
                ],
                pod("web", None, "2", 100, ""),
                Some(ONE_CANDIDATE),
                Some(Want {
                    nominated: Some("node-a"),
                    victims: vec!["default/other"],
                    candidates: vec![("node-a", vec!["default/other"], 0), ("node-b", vec!["default/cheap"], 0)],
                    may_nominate: vec!["node-a", "node-b"],
                    message: None,
                }),
            ),
            (
                "a node whose victim violates a PDB does not stop the dry run: it goes on to one that does not",
                vec![
                    node("node-a", "4", false),
                    pod("guarded", Some("node-a"), "3", 1, ""),
                    node("node-b", "4", false),
                    pod("other", Some("node-b"), "3", 5, ""),
                    pdb("guarded"),
                ],
                pod("web", None, "2", 100, ""),
                Some(ONE_CANDIDATE),
                Some(Want {
                    nominated: Some("node-b"),
                    victims: vec!["default/other"],
                    candidates: vec![("node-b", vec!["default/other"], 0), ("node-a", vec!["default/guarded"], 1)],
                    may_nominate: vec![],
                    message: None,
                }),
            ),
            (
                "a node whose victim violates a PDB loses to one whose victim does not",
                vec![
                    node("node-a", "4", false),
                    pod("guarded", Some("node-a"), "3", 1, ""),
                    node("node-b", "4", false),
                    pod("other", Some("node-b"), "3", 5, ""),
                    pdb("guarded"),
                ],
                pod("web", None, "2", 100, ""),
                None,
                Some(Want {
                    nominated: Some("node-b"),
                    victims: vec!["default/other"],
                    candidates: vec![("node-b", vec!["default/other"], 0), ("node-a", vec!["default/guarded"], 1)],
                    may_nominate: vec![],
                    message: None,
                }),
            ),
            (
                "a profile without DefaultPreemption has no preemption field",
                vec![node("node-a", "4", false), pod("low", Some("node-a"), "3", 1, "")],
                pod("web", None, "2", 100, ""),
                Some(NO_POST_FILTER),
                None,
            ),
        ];
        for (name, cluster, incoming, config, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let e =
                explain(&input(d.path(), &cluster, &incoming, config)).unwrap_or_else(|err| panic!("{name}: {err}"));
            check(name, &e, want);
        }
    }

    #[test]
    fn scoring_errors_end_the_attempt_with_upstreams_text() {
        let profile = |plugins: &str| {
            format!(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n  plugins: {plugins}\n"
            )
        };
        let preferred = "\n    affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, preference: {matchExpressions: [{key: disk, operator: Gt, values: ['-1x']}]}}]}}";
        let cases: Vec<(&str, String, Option<String>, Option<&str>)> = vec![
            ("the default profile scores", pod("web", None, "1", 0, ""), None, None),
            (
                // Enabled at Score only: its Score cannot read what PreScore never wrote.
                "TaintToleration scored without its PreScore",
                pod("web", None, "1", 0, ""),
                Some(profile("{multiPoint: {disabled: [{name: TaintToleration}]}, score: {enabled: [{name: TaintToleration, weight: 3}]}}")),
                Some(r#"running Score plugins: plugin "TaintToleration" failed with: failed to read "PreScoreTaintToleration" from cycleState: not found"#),
            ),
            (
                "PodTopologySpread scored without its PreScore",
                pod("web", None, "1", 0, ""),
                Some(profile("{preScore: {disabled: [{name: PodTopologySpread}]}}")),
                Some(r#"running Score plugins: plugin "PodTopologySpread" failed with: error reading "PreScorePodTopologySpread" from cycleState: not found"#),
            ),
            (
                "NodeAffinity reads its preferred terms itself when PreScore is off",
                pod("web", None, "1", 0, ""),
                Some(profile("{preScore: {disabled: [{name: NodeAffinity}]}}")),
                None,
            ),
            (
                "an unparsable preferred term fails NodeAffinity's PreScore",
                pod("web", None, "1", 0, preferred),
                None,
                Some(r#"running PreScore plugin "NodeAffinity": "#),
            ),
        ];
        for (name, incoming, config, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let cluster = [node("node-a", "4", false), node("node-b", "4", false)];
            let e = explain(&input(d.path(), &cluster, &incoming, config.as_deref())).unwrap();
            match want {
                None => {
                    assert_eq!(e.error, None, "{name}");
                    assert!(e.selected.is_some(), "{name}: placed");
                }
                Some(w) => {
                    let got = e.error.as_deref().unwrap_or_else(|| panic!("{name}: expected an error"));
                    assert!(got.starts_with(w), "{name}: {got}");
                    assert_eq!((e.selected.as_deref(), e.message.as_deref()), (None, None), "{name}: not placed");
                    let json = serde_json::to_value(&e).unwrap();
                    assert_eq!(json["error"].as_str(), Some(got), "{name}: JSON");
                }
            }
        }
    }

    #[test]
    fn preemption_keeps_the_filter_outcome_and_leaves_the_snapshot_alone() {
        let d = tempfile::tempdir().unwrap();
        let cluster = [
            node("node-a", "4", false),
            pod("low", Some("node-a"), "3", 1, ""),
            node("node-b", "4", false),
            pod("mid", Some("node-b"), "3", 5, ""),
        ];
        let mut l = load(&input(d.path(), &cluster, &pod("web", None, "2", 100, ""), None)).unwrap();
        let placement = |s: &Snapshot| {
            let mut v: Vec<(u64, String)> =
                s.pods.iter().map(|(u, p)| (u.0, s.interner.resolve(p.node).to_string())).collect();
            v.sort();
            v
        };
        let before = placement(&l.snap);
        let mut engine = Engine::new(1, 1, None);
        let first = explain_pod(&l.fw, &mut engine, &mut l.snap, &l.pod, &l.key);
        assert_eq!(placement(&l.snap), before, "victims stay placed");
        assert!(l.snap.nominated.values().all(Vec::is_empty), "nothing is nominated");
        assert_eq!(
            first.message.as_deref(),
            Some(
                "0/2 nodes are available: 2 Insufficient cpu. \
                 preemption: found a potential placement for pod on node node-a, preempting 1 victims"
            )
        );
        assert!(first.nodes.iter().all(|n| !n.feasible));
        let second = explain_pod(&l.fw, &mut engine, &mut l.snap, &l.pod, &l.key);
        assert_eq!(first, second, "a second explanation is the same");
        let table = render_table(&first);
        for want in [
            "preemption:",
            "nominated node: node-a",
            "victims: default/low",
            "candidate node-a: 1 victim(s), 0 PDB violation(s): default/low",
            "candidate node-b: 1 victim(s), 0 PDB violation(s): default/mid",
        ] {
            assert!(table.contains(want), "table lacks {want:?}:\n{table}");
        }
    }

    /// A PostFilter plugin of the profile's own that shows a fixed plan: `node-b` without victims,
    /// or only a message.
    struct PlannedPostFilter(bool);

    impl crate::framework::Plugin for PlannedPostFilter {
        fn name(&self) -> &'static str {
            "PlannedPostFilter"
        }

        fn post_filter_plan(
            &self,
            _fw: &Framework,
            snap: &mut Snapshot,
            _pod: &PodInfo,
            _diag: &Diagnosis,
            _exhaustive: bool,
        ) -> Option<crate::framework::PostFilterPlan> {
            use crate::framework::{PostFilterCandidate, PostFilterPlan};
            Some(if self.0 {
                let node = snap.interner.get("node-b").unwrap();
                let c = PostFilterCandidate { node, victims: Vec::new(), num_pdb_violations: 0 };
                PostFilterPlan {
                    candidates: vec![c],
                    chosen: Some(0),
                    may_nominate: vec![0],
                    message: None,
                    error: false,
                }
            } else {
                PostFilterPlan { message: Some("planned: cannot help".into()), ..PostFilterPlan::default() }
            })
        }
    }

    #[test]
    fn preemption_comes_from_the_profiles_own_post_filter_plugins() {
        use crate::config::{PluginArgs, Profile, ProfilePlugins};
        let d = tempfile::tempdir().unwrap();
        let cluster = [node("node-a", "4", false), node("node-b", "4", false)];
        // (post-filter plugins, whether the planned plugin picks a node) -> (nominated node, message)
        type Case<'a> = (&'a [&'a str], bool, Option<&'a str>, Option<&'a str>);
        let cases: [Case; 4] = [
            (&["PlannedPostFilter"], true, Some("node-b"), None),
            (&["PlannedPostFilter"], false, None, Some("planned: cannot help")),
            // DefaultPreemption cannot help here (no node has room even empty): the next plugin's
            // node is the plan; without one, DefaultPreemption's reason.
            (&["DefaultPreemption", "PlannedPostFilter"], true, Some("node-b"), None),
            (
                &["DefaultPreemption", "PlannedPostFilter"],
                false,
                None,
                Some("preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."),
            ),
        ];
        for (post_filter, picks, nominated, message) in cases {
            let mut l = load(&input(d.path(), &cluster, &pod("web", None, "8", 100, ""), None)).unwrap();
            let profile = Profile {
                scheduler_name: "default-scheduler".into(),
                percentage_of_nodes_to_score: None,
                plugins: ProfilePlugins {
                    pre_filter: vec!["NodeResourcesFit".into()],
                    filter: vec!["NodeResourcesFit".into()],
                    post_filter: post_filter.iter().map(|s| s.to_string()).collect(),
                    ..Default::default()
                },
                args: PluginArgs::default(),
            };
            let mut registry = crate::plugins::in_tree(&crate::plugins::CompiledArgs::default());
            registry.register_instance(std::sync::Arc::new(PlannedPostFilter(picks))).unwrap();
            let fw = Framework::new(&profile, &registry, &mut l.snap.interner).unwrap();
            let mut engine = Engine::new(1, 1, None);
            let e = explain_pod(&fw, &mut engine, &mut l.snap, &l.pod, &l.key);
            let p = e.preemption.as_ref().unwrap_or_else(|| panic!("{post_filter:?} {picks}: no preemption field"));
            assert_eq!(p.nominated_node.as_deref(), nominated, "{post_filter:?} {picks}");
            assert_eq!(p.message.as_deref(), message, "{post_filter:?} {picks}");
        }
    }
}
