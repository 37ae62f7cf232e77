//! Building the driver for one workload run, and running it.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use crate::agent::sim::{SimAgent, TimeMode};
use crate::agent::{AgentEvent, NodeAgent};
use crate::binder::{BindResult, Binder, FrameworkBinding};
use crate::cache::AssumeCache;
use crate::clock::{Clock, CycleCostModel, VirtualClock, WallClock};
use crate::cluster::{build_snapshot_counted, Cluster, UidGen};
use crate::config::SchedulerConfig;
use crate::engine::Engine;
use crate::error::InputError;
use crate::framework::{Framework, Plugin, WaitingPods};
use crate::metrics::{cpu_seconds, Histograms};
use crate::plugins::compile_args;
use crate::queue::dra_hints::ClaimLister;
use crate::queue::{hint_fn, HintArgs, HintSyms, QueuedPod, SchedulingQueue};
use crate::report::{Counters, RunReport};
use crate::runner::objects::Templates;
use crate::runner::{AgentSpec, RunError, RunOptions};
use crate::snapshot::{PodInfo, Snapshot};
use crate::workload::ResolvedWorkload;

use super::{node_fingerprint, podgroup, Driver, PodRec, PodState, Window};

/// Runs one workload once and returns its report entry.
/// Registers the queueing hints of every profile's plugins ([`hint_fn`]: upstream's where the
/// event's objects are known, the coarse table otherwise): profile `i`'s plugin `p` gets queue id
/// `base[i] + p` (while ids last; see [`Driver::queue_ids`]). Returns the bases.
pub(crate) fn register_hints(
    queue: &mut SchedulingQueue<()>,
    frameworks: &[Arc<Framework>],
    syms: HintSyms,
    dra_claims: Option<Arc<ClaimLister>>,
) -> Vec<usize> {
    let mut bases = Vec::with_capacity(frameworks.len());
    let mut next = 0;
    for fw in frameworks {
        bases.push(next);
        for (p, plugin) in fw.plugins.iter().enumerate() {
            if next + p >= 63 {
                break;
            }
            let mut args = HintArgs::of(&**plugin);
            args.dra_claims.clone_from(&dra_claims);
            if let Some(h) = hint_fn::<()>(plugin.name(), syms, args) {
                queue.register_hint((next + p) as u8, h);
            }
        }
        next += fw.plugins.len();
    }
    bases
}

/// The interned strings of [`HintSyms`].
pub(crate) fn hint_syms(interner: &mut crate::snapshot::Interner, wk: &crate::snapshot::WellKnown) -> HintSyms {
    use crate::snapshot::{Taint, TaintEffect};
    let unschedulable_taint =
        Taint { key: wk.taint_unschedulable, value: interner.intern(""), effect: TaintEffect::NoSchedule };
    HintSyms { wildcard_ip: wk.default_host_ip, unschedulable_taint }
}

pub fn run_workload(w: &ResolvedWorkload, opts: &RunOptions) -> Result<RunReport, RunError> {
    let config = match (&opts.config_override, &w.scheduler_config_path) {
        (Some(p), _) | (None, Some(p)) => SchedulerConfig::load(p)?,
        (None, None) => SchedulerConfig::defaults(),
    };
    run_workload_with(w, opts, &config, &[])
}

/// [`run_workload`] with a loaded `config` whose profiles may also name `extra` plugins (besides
/// the in-tree registry's): for tests and embedders with plugins of their own.
pub(crate) fn run_workload_with(
    w: &ResolvedWorkload,
    opts: &RunOptions,
    config: &SchedulerConfig,
    extra: &[Arc<dyn Plugin>],
) -> Result<RunReport, RunError> {
    let wall_start = Instant::now();
    let cpu_start = cpu_seconds();
    let (vclock, clock, wall_origin): (Option<Arc<VirtualClock>>, Arc<dyn Clock>, _) = if opts.virtual_time {
        let v = Arc::new(VirtualClock::new());
        (Some(v.clone()), v, None)
    } else {
        let w = WallClock::new();
        let origin = w.origin();
        (None, Arc::new(w), Some(origin))
    };
    let cluster_file = opts.cluster.first().map(|p| p.display().to_string()).unwrap_or_default();
    // A cluster given as loaded objects (read once for every workload and repetition) or as paths.
    let cluster = match &opts.cluster_objects {
        Some(c) => (**c).clone(),
        None if opts.cluster.is_empty() => Cluster::default(),
        None => Cluster::load(&opts.cluster)?,
    };
    let mut uids = UidGen::default();
    let (mut snap, pending, _) = build_snapshot_counted(&cluster, &cluster_file, &mut uids)?;
    let mut frameworks = Vec::new();
    for profile in &config.profiles {
        let compiled = compile_args(&profile.args, &mut snap.interner, &config.source)?;
        let mut registry = crate::plugins::in_tree(&compiled);
        for p in extra {
            registry.register_instance(p.clone()).map_err(|e| InputError::new(&config.source, "profiles", e))?;
        }
        let fw = Framework::new(profile, &registry, &mut snap.interner)
            .map_err(|e| InputError::new(&config.source, "profiles", e))?;
        frameworks.push(Arc::new(fw));
    }
    let mut spread = Vec::new();
    for (profile, fw) in config.profiles.iter().zip(&frameworks) {
        use crate::plugins::podtopologyspread::{PodTopologySpread, NAME};
        let enabled = fw.plugins.iter().any(|p| p.name() == NAME);
        spread.push(if enabled {
            Some(
                PodTopologySpread::from_args(&profile.args.pod_topology_spread, &mut snap.interner)
                    .map_err(|e| InputError::new(&config.source, "profiles", e))?,
            )
        } else {
            None
        });
    }
    let gate = |name: &str| {
        w.feature_gates
            .get(name)
            .copied()
            .unwrap_or_else(|| crate::workload::gates::lookup(name).is_some_and(|g| g.default))
    };
    snap.cluster.dra.features = dra_features(&w.feature_gates);
    let mut queue = SchedulingQueue::new(
        config.pod_initial_backoff_seconds as u64 * 1_000_000_000,
        config.pod_max_backoff_seconds as u64 * 1_000_000_000,
    )
    .with_pop_from_backoff(gate("SchedulerPopFromBackoffQ"));
    // Every profile has the same QueueSort (the config checks it): the first one's order.
    if let Some(less) = frameworks[0].queue_sort_fn() {
        queue = queue.with_queue_sort(less);
    }
    let claim_lister = Arc::new(ClaimLister::default());
    let hint_base =
        register_hints(&mut queue, &frameworks, hint_syms(&mut snap.interner, &snap.wk), Some(claim_lister.clone()));
    let (agent_tx, agent_rx) = crossbeam_channel::unbounded::<AgentEvent>();
    let agent: Arc<dyn NodeAgent> = match &opts.agent {
        AgentSpec::Sim(cfg) => {
            let mode = if opts.virtual_time { TimeMode::Virtual } else { TimeMode::Wall };
            Arc::new(SimAgent::new(cfg.clone().with_seed(opts.seed), agent_tx, clock.clone(), mode))
        }
        // An agent that cannot start (an endpoint that does not answer, images it lacks) is bad
        // input, as `cri check` says; a runtime that dies later is a runtime failure (exit 4).
        AgentSpec::Custom { factory, .. } => factory(agent_tx, clock.clone()).map_err(|e| {
            RunError::Input(InputError::new("--agent", "", format!("the node agent cannot start: {e}")))
        })?,
    };
    let cache = Arc::new(AssumeCache::new());
    let (results_tx, results_rx) = crossbeam_channel::unbounded::<BindResult>();
    let binding = Arc::new(FrameworkBinding::new(frameworks.clone()));
    let (binder, agent_events) = if opts.virtual_time {
        (None, agent_rx)
    } else {
        let b = Arc::new(Binder::start(
            opts.bind_workers.max(1),
            opts.max_binds_in_flight.max(1),
            agent.clone(),
            binding.clone(),
            Some(cache.clone()),
            results_tx.clone(),
        ));
        (Some(b), agent_rx)
    };
    // The workloads of one repetition append to one trace (`runner::cli` empties it first); a
    // `workload` line says where each starts.
    let events_out = match &opts.events_file {
        Some(p) => {
            let mut out = std::fs::OpenOptions::new().create(true).append(true).open(p).map(std::io::BufWriter::new);
            if let Ok(o) = &mut out {
                let line = serde_json::json!({"event": "workload", "testCase": w.test_case, "workload": w.workload, "rep": opts.rep});
                let _ = writeln!(o, "{line}");
            }
            Some(out.map_err(|e| {
                InputError::new(p.display().to_string(), "", format!("cannot open the events file: {e}"))
            })?)
        }
        None => None,
    };
    let progress = opts.progress.then(|| {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} pods {per_sec} eta {eta}")
                .expect("valid progress template"),
        );
        pb.set_prefix(w.name.clone());
        pb
    });
    let priorities = cluster.priorities();
    let mut d = Driver {
        opts: opts.clone(),
        clock,
        wall_origin,
        vclock,
        cycle_cost: CycleCostModel::DEFAULT,
        engine: Engine::new(opts.seed, opts.threads, config.percentage_of_nodes_to_score)
            .with_plugin_sampling(opts.plugin_sample_percent),
        batches: super::super::batching::Batches::new(
            w.feature_gates.get(super::super::batching::GATE).copied().unwrap_or(true),
            frameworks.iter().map(|f| &**f),
        ),
        queue,
        cache,
        cache_errors: Vec::new(),
        pods: Vec::new(),
        uids: UidGen::default(),
        priorities,
        agent,
        binder,
        bind_results: results_rx,
        agent_events,
        binds_in_flight: 0,
        bind_batch: Vec::new(),
        bind_batch_since_nanos: 0,
        agent_template: None,
        templates: Templates::default(),
        compiled: ahash::AHashMap::new(),
        last_namespace: Arc::from(""),
        churners: Vec::new(),
        deleters: Vec::new(),
        window: Window::default(),
        nodes_created: 0,
        pods_created: 0,
        deleted: 0,
        hist: Histograms::default(),
        counters: Counters::default(),
        unschedulable_reasons: BTreeMap::new(),
        measured_bind_nanos: Vec::new(),
        events_out,
        largest_shape: (0, 0),
        progress,
        config_source: config.source.clone(),
        config_digest: config.digest.clone(),
        waiting: frameworks.iter().map(|_| WaitingPods::new()).collect(),
        hint_base,
        parked: Vec::new(),
        binding,
        frameworks,
        spread,
        snap: Snapshot::new(),
        cluster: Cluster::default(),
        node_fingerprints: cluster.nodes.iter().map(|n| (n.metadata.name.clone(), node_fingerprint(n))).collect(),
        node_objects: Default::default(),
        storage_objects: Default::default(),
        claim_lister,
        op_index: 0,
        async_preemption: gate("SchedulerAsyncPreemption"),
        preemptions: Vec::new(),
        failed_wait: None,
        groups: podgroup::Groups::new(gate("GenericWorkload"), gate("TopologyAwareWorkloadScheduling")),
        hooks: w.hooks.clone(),
    };
    drop(results_tx);
    // The initial cluster: its bound pods are in the snapshot; give them records too.
    let bound: Vec<_> = snap.pods.values().map(|p| (p.info.clone(), p.node)).collect();
    let mut bound = bound;
    bound.sort_by_key(|(i, _)| i.uid);
    d.uids = uids;
    let mut recs: Vec<Option<PodRec>> = (0..d.uids.issued()).map(|_| None).collect();
    for (info, node) in bound {
        let idx = (info.uid.0 - 1) as usize;
        let r = d.cache.confirm_bound(info.uid, node.0);
        d.note_cache(r);
        let namespace = snap.interner.resolve(info.namespace).to_string();
        recs[idx] = Some(PodRec::of_cluster(info, namespace, PodState::Bound(node)));
    }
    let pending_infos: Vec<PodInfo> = pending;
    for info in &pending_infos {
        let idx = (info.uid.0 - 1) as usize;
        let namespace = snap.interner.resolve(info.namespace).to_string();
        recs[idx] = Some(PodRec::of_cluster(Arc::new(info.clone()), namespace, PodState::Queued));
    }
    d.pods = recs.into_iter().map(|r| r.expect("every cluster pod has a record")).collect();
    d.snap = snap;
    d.snap.pod_groups.set_enabled(d.groups.enabled);
    // DRAWorkloadResourceClaims depends on GenericWorkload (upstream's gate dependencies): only with it.
    d.snap.cluster.dra.workload_claims = d.groups.enabled && gate("DRAWorkloadResourceClaims");
    d.claim_lister.fill(d.snap.cluster.dra.claims.get_mut());
    d.claim_lister.set_accept_group_owner(d.snap.cluster.dra.workload_claims);
    if d.groups.enabled {
        for g in &cluster.pod_groups {
            d.add_pod_group(g, g.namespace());
        }
    }
    d.cluster = cluster;
    let mut other_schedulers: BTreeMap<String, u64> = BTreeMap::new();
    for info in pending_infos {
        // schedulerName picks the profile; a pod for another scheduler is left to it.
        let Some(profile) = d.profile_of(&info) else {
            *other_schedulers.entry(d.snap.interner.resolve(info.scheduler_name).to_string()).or_default() += 1;
            continue;
        };
        d.rec_mut(info.uid).profile = profile;
        let gated = !d.frameworks[profile].run_pre_enqueue(&info).is_success();
        let mut qp = QueuedPod::new(info.uid, info.priority, ()).gated(gated).with_spec(d.rec(info.uid).info.clone());
        qp.timestamp_nanos = 0;
        d.queue.add(qp, 0);
    }

    if !other_schedulers.is_empty() && opts.rep == 0 {
        let names: Vec<String> = other_schedulers.iter().map(|(n, c)| format!("{c} for {n:?}")).collect();
        eprintln!(
            "{}: pending --cluster pods whose schedulerName has no profile in this run, left to that scheduler: {}",
            w.name,
            names.join(", ")
        );
    }
    // A wait upstream's harness would fail ends the workload there; its report says so (`outcome`).
    let mut failure = None;
    for (i, op) in w.ops.iter().enumerate() {
        d.op_index = i;
        match d.run_op(op) {
            Ok(()) => {}
            Err(RunError::Failed(why)) => {
                failure = Some(why);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    // Let in-flight binds finish before accounting.
    d.churners.clear();
    d.deleters.clear();
    d.run_until(None, &|d: &Driver| d.binds_in_flight == 0)?;
    // Pod start-up is measured to Running: give bound pods the time the agent needs to start them.
    let grace_nanos = if opts.virtual_time { 3_600_000_000_000 } else { 120_000_000_000 };
    let until = d.now() + grace_nanos;
    d.run_until(Some(until), &|d: &Driver| {
        d.pods.iter().all(|r| {
            !matches!(r.state, PodState::Bound(_)) || !r.created_by_run || r.running_nanos.is_some() || r.failed
        })
    })?;
    if let Some(pb) = &d.progress {
        pb.finish_and_clear();
    }
    let failed_wait = d.failed_wait.take();
    let mut report = d.finish(w, wall_start, cpu_start);
    if let Some(message) = failure {
        report.outcome = crate::report::Outcome {
            passed: false,
            message,
            failed_op: failed_wait.as_ref().map(|f| f.op as u64),
            pods_waited_for: failed_wait.as_ref().map_or(0, |f| f.waited_for as u64),
            pods_not_done: failed_wait.as_ref().map_or(0, |f| f.not_done as u64),
            reasons: report.unschedulable_reasons.clone(),
        };
    }
    Ok(report)
}

/// The DRA allocator features a workload's gates turn on (each gate's v1.37.2 default when the
/// workload does not set it).
pub(crate) fn dra_features(gates: &BTreeMap<String, bool>) -> crate::snapshot::dra::DraFeatures {
    let gate = |name: &str| {
        gates.get(name).copied().unwrap_or_else(|| crate::workload::gates::lookup(name).is_some_and(|g| g.default))
    };
    crate::snapshot::dra::DraFeatures {
        compatibility_groups: gate("DRADeviceCompatibilityGroups"),
        prioritized_list_off: !gate("DRAPrioritizedList"),
        list_type_attributes: gate("DRAListTypeAttributes"),
    }
}
