//! The CRI agent in `schedperf run --agent cri`, and `schedperf cri check`.
//!
//! `run --agent cri --cri-endpoint E [--cri-pods N|F] [--cri-image-map M]` builds, per run, a
//! [`CriAgent`] on the endpoints and a [`SimAgent`] for the pods that stay simulated, behind one
//! [`MixedAgent`] (all pods real by default). Before the run starts, every image the selected
//! workloads' pod templates name must be present in the runtime after the image map (a benchmark
//! never pulls); a bad endpoint or a missing image ends the command with exit code 2. Ctrl-C removes
//! what the run created. At the end of the run the agent waits until every real pod it holds is
//! Running or Failed (see [`SETTLE_STALL_TIMEOUT`]), removes everything, and the run's report gets a
//! [`CriReport`] computed by [`cri_report`].
//!
//! CRI runs are wall-clock runs: the runtime's latencies are the measurement.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::cli::RunArgs;
use super::objects::{default_pod, Templates};
use super::{AgentFactory, AgentReportFn, AgentSpec, PodTimesLookup};
use crate::agent::cri::{cri_check, CriAgent, CriConfig, CriEndpoint, CriStats, ImageMap};
use crate::agent::mixed::{MixedAgent, RealShare, PPM_ONE};
use crate::agent::sim::{SimAgent, SimConfig, TimeMode};
use crate::agent::{AgentError, AgentPod, NodeAgent, ShutdownReport};
use crate::api::{self, Object};
use crate::error::InputError;
use crate::ids::PodUid;
use crate::metrics::LatencyHist;
use crate::report::{CriReport, Percentiles};
use crate::workload::{ResolvedOp, ResolvedWorkload};

/// At the end of a run, how long the CRI agent waits for its next real pod to reach Running or
/// Failed before it removes everything anyway. The wait restarts whenever a pod settles, so a
/// long queue of starts on a slow runtime is waited for as long as it makes progress.
pub const SETTLE_STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the end-of-run wait looks at the pods' stages.
const SETTLE_POLL: Duration = Duration::from_millis(20);

/// Parses `--cri-pods`: a whole number is a count of pods (`10`), a number with a decimal point a
/// fraction in `(0, 1]` of them (`0.1`, `1.0`).
pub fn parse_real_share(text: &str) -> Result<RealShare, InputError> {
    let bad = |why: &str| {
        InputError::new(
            "--cri-pods",
            "",
            format!("{text:?} {why}; expected a count of pods (10) or a fraction in (0, 1] (0.1)"),
        )
    };
    let t = text.trim();
    if t.contains('.') {
        let f: f64 = t.parse().map_err(|_| bad("is not a number"))?;
        if !(f > 0.0 && f <= 1.0) {
            return Err(bad("is not a fraction in (0, 1]"));
        }
        let ppm = (f * PPM_ONE as f64).round() as u64;
        if ppm == 0 {
            return Err(bad("is below one part per million"));
        }
        Ok(if ppm >= PPM_ONE { RealShare::All } else { RealShare::FractionPpm(ppm) })
    } else {
        t.parse::<u64>().map(RealShare::Count).map_err(|_| bad("is not a whole number"))
    }
}

/// Every container image (init containers included) that the pods of `workloads` name, sorted,
/// without duplicates: the op's pod template (rendered for its first pod), the built-in default
/// pod, and the pods of churn and `createAny` templates.
pub fn workload_images(workloads: &[ResolvedWorkload]) -> Result<Vec<String>, InputError> {
    let mut templates = Templates::default();
    let mut images = BTreeSet::new();
    let add_pod = |pod: &api::Pod, images: &mut BTreeSet<String>| {
        for c in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
            images.insert(c.image.clone());
        }
    };
    let no_params = BTreeMap::new();
    for w in workloads {
        for op in &w.ops {
            match op {
                ResolvedOp::CreatePods { count, pod_template_path, template_params, .. } => {
                    let pod = match pod_template_path {
                        Some(p) => templates.pod(p, 0, *count, template_params)?,
                        None => default_pod(),
                    };
                    add_pod(&pod, &mut images);
                }
                ResolvedOp::Churn { template_paths, number, .. } => {
                    for p in template_paths {
                        for o in templates.instantiate(p, 0, *number, &no_params)?.iter() {
                            if let Object::Pod(pod) = o {
                                add_pod(pod, &mut images);
                            }
                        }
                    }
                }
                ResolvedOp::CreateAny { template_path, count, template_params, .. } => {
                    for o in templates.instantiate(template_path, 0, *count, template_params)?.iter() {
                        if let Object::Pod(pod) = o {
                            add_pod(pod, &mut images);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(images.into_iter().collect())
}

/// The CRI flags of `run`, checked.
#[derive(Clone, Debug)]
struct CriFlags {
    endpoints: Vec<String>,
    image_map: ImageMap,
    share: RealShare,
}

fn cri_flags(args: &RunArgs) -> Result<CriFlags, InputError> {
    if args.virtual_time {
        return Err(InputError::new(
            "--virtual-time",
            "",
            "a CRI run measures a real runtime and runs on the wall clock; drop --virtual-time or use --agent sim",
        ));
    }
    if args.cri_endpoint.is_empty() {
        return Err(InputError::new(
            "--cri-endpoint",
            "",
            "--agent cri needs at least one --cri-endpoint (unix:///run/containerd/containerd.sock)",
        ));
    }
    for e in &args.cri_endpoint {
        CriEndpoint::parse(e).map_err(|err| InputError::new("--cri-endpoint", "", err.0))?;
    }
    let image_map = ImageMap::from_flag_values(&args.cri_image_map)?;
    let share = match &args.cri_pods {
        Some(text) => parse_real_share(text)?,
        None => RealShare::All,
    };
    Ok(CriFlags { endpoints: args.cri_endpoint.clone(), image_map, share })
}

/// Refuses CRI flags on a run whose agent is not the CRI agent.
pub fn reject_cri_flags(args: &RunArgs) -> Result<(), InputError> {
    let used: Vec<&str> = [
        ("--cri-endpoint", !args.cri_endpoint.is_empty()),
        ("--cri-pods", args.cri_pods.is_some()),
        ("--cri-image-map", !args.cri_image_map.is_empty()),
    ]
    .into_iter()
    .filter_map(|(flag, set)| set.then_some(flag))
    .collect();
    match used.first() {
        None => Ok(()),
        Some(flag) => Err(InputError::new(*flag, "", format!("{} only apply with --agent cri", used.join(", ")))),
    }
}

/// The agents of the run in progress, for its report.
struct Live {
    cri: Arc<CriAgent>,
    mixed: Arc<MixedAgent>,
    endpoints: Vec<String>,
}

/// The agent spec of `run --agent cri`: `sim` runs the pods that stay simulated (seeded with
/// `--seed`), `images` are checked before each run (see [`workload_images`]).
pub fn agent_spec(args: &RunArgs, sim: SimConfig, images: Vec<String>) -> Result<AgentSpec, InputError> {
    let flags = cri_flags(args)?;
    let seed = args.seed;
    let live: Arc<Mutex<Option<Live>>> = Arc::new(Mutex::new(None));
    let live_for_factory = live.clone();
    let factory: AgentFactory = Arc::new(move |events, clock| {
        let mut cfg = CriConfig::new(flags.endpoints.clone());
        cfg.image_map = flags.image_map.clone();
        let cri = CriAgent::connect(cfg, events.clone(), clock.clone()).map_err(|e| e.0)?;
        cri.cleanup_on_signal().map_err(|e| e.0)?;
        if flags.share != RealShare::Count(0) {
            cri.preflight(&images).map_err(|e| e.0)?;
        }
        let cri = Arc::new(cri);
        let endpoints = flags.endpoints.iter().zip(cri.runtime_versions()).map(|(e, v)| format!("{e}: {v}")).collect();
        let real: Arc<dyn NodeAgent> =
            Arc::new(SettlingCri { agent: cri.clone(), stall_timeout: SETTLE_STALL_TIMEOUT });
        let sim: Arc<dyn NodeAgent> =
            Arc::new(SimAgent::new(sim.clone().with_seed(seed), events, clock, TimeMode::Wall));
        let mixed = Arc::new(MixedAgent::new(real, sim, flags.share));
        *live_for_factory.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Live { cri, mixed: mixed.clone(), endpoints });
        Ok(mixed as Arc<dyn NodeAgent>)
    });
    let report: AgentReportFn = Arc::new(move |times: PodTimesLookup<'_>| {
        let live = live.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        Some(cri_report(live.endpoints, &live.cri.stats(), &live.mixed.real_uids(), times))
    });
    Ok(AgentSpec::Custom { name: "cri".to_string(), factory, report: Some(report) })
}

/// The CRI agent, waiting at shutdown until the pods it holds have settled (see
/// [`SETTLE_STALL_TIMEOUT`]).
struct SettlingCri {
    agent: Arc<CriAgent>,
    stall_timeout: Duration,
}

impl SettlingCri {
    /// Pods held that are neither Running nor Failed.
    fn unsettled(&self) -> usize {
        let stats = self.agent.stats();
        self.agent
            .pods()
            .iter()
            .filter(|(uid, _)| stats.pods.get(uid).is_some_and(|t| t.running_us.is_none() && t.failed_us.is_none()))
            .count()
    }
}

impl NodeAgent for SettlingCri {
    fn name(&self) -> &str {
        self.agent.name()
    }
    fn bind(&self, pod: AgentPod) {
        self.agent.bind(pod);
    }
    fn delete(&self, uid: PodUid) {
        self.agent.delete(uid);
    }
    fn pods(&self) -> Vec<(PodUid, String)> {
        self.agent.pods()
    }
    fn shutdown(&self) -> Result<ShutdownReport, AgentError> {
        let mut left = self.unsettled();
        let mut progress_at = Instant::now();
        while left > 0 && progress_at.elapsed() < self.stall_timeout {
            std::thread::sleep(SETTLE_POLL);
            let now_left = self.unsettled();
            if now_left < left {
                progress_at = Instant::now();
            }
            left = now_left;
        }
        self.agent.shutdown()
    }
}

/// Percentiles of a histogram of microseconds, in milliseconds.
fn micros_to_millis(h: &Histogram<u64>) -> Percentiles {
    crate::metrics::percentiles_of(h, 1e3)
}

/// The stages of a real pod's start, in report order: created → scheduled → bound (the driver's
/// times) → sandbox ready → containers started → Running (the CRI agent's).
pub const CRI_STAGES: [&str; 5] = [
    "createdToScheduled",
    "scheduledToBound",
    "boundToSandboxReady",
    "sandboxReadyToContainersStarted",
    "containersStartedToRunning",
];

/// The report of the real pods `real` (every pod routed to the runtime): start-up (created to
/// Running, over the real pods that reached Running) and its stages, every CRI call's latency,
/// failed calls by RPC and gRPC code (`RunPodSandbox/DeadlineExceeded`). Times the CRI agent
/// measured from its bind are placed on the run clock by the bind's time stamp (both agents share
/// the driver's clock).
pub fn cri_report(endpoints: Vec<String>, stats: &CriStats, real: &[PodUid], times: PodTimesLookup<'_>) -> CriReport {
    let mut startup = LatencyHist::default();
    let mut stages: Vec<LatencyHist> = CRI_STAGES.iter().map(|_| LatencyHist::default()).collect();
    let mut running = 0u64;
    let mut failure_reasons: BTreeMap<String, u64> = BTreeMap::new();
    for uid in real {
        let Some(t) = stats.pods.get(uid) else {
            *failure_reasons.entry(NEVER_RAN.to_string()).or_default() += 1;
            continue;
        };
        match (&t.failure, t.failed_us, t.running_us) {
            (Some(why), _, _) => *failure_reasons.entry(failure_reason(why)).or_default() += 1,
            (None, Some(_), _) | (None, None, None) => *failure_reasons.entry(NEVER_RAN.to_string()).or_default() += 1,
            (None, None, Some(_)) => {}
        }
        let driver = times(*uid);
        let us = |v: u64| v * 1_000;
        if let Some(d) = driver {
            if let Some(s) = d.scheduled_nanos {
                stages[0].record_nanos(s.saturating_sub(d.created_nanos));
                if let Some(b) = d.bound_nanos {
                    stages[1].record_nanos(b.saturating_sub(s));
                }
            }
        }
        if let Some(sr) = t.sandbox_ready_us {
            stages[2].record_nanos(us(sr));
            if let Some(cs) = t.containers_started_us {
                stages[3].record_nanos(us(cs.saturating_sub(sr)));
            }
        }
        if let (Some(cs), Some(r)) = (t.containers_started_us, t.running_us) {
            stages[4].record_nanos(us(r.saturating_sub(cs)));
        }
        if let Some(r) = t.running_us {
            running += 1;
            if let Some(d) = driver {
                startup.record_nanos((t.bound_at_nanos + us(r)).saturating_sub(d.created_nanos));
            }
        }
    }
    CriReport {
        endpoints,
        real_pods: real.len() as u64,
        real_pods_running: running,
        pod_startup_millis: startup.percentiles(1e6),
        pod_startup_stages_millis: CRI_STAGES
            .iter()
            .zip(&stages)
            .map(|(name, h)| (name.to_string(), h.percentiles(1e6)))
            .collect(),
        cri_call_millis: stats.call_micros.iter().map(|(rpc, h)| (rpc.clone(), micros_to_millis(h))).collect(),
        cri_errors: stats.errors_by_rpc.clone(),
        real_pods_failed: failure_reasons.values().sum(),
        failure_reasons,
    }
}

/// The reason of a real pod that neither failed with a message nor reached Running.
pub const NEVER_RAN: &str = "never reached Running";

/// A failure message as a reason to count: its first line, at most [`REASON_CHARS`] characters
/// (messages carry sandbox ids and the like past that, which would make every pod its own reason).
fn failure_reason(message: &str) -> String {
    let line = message.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}

/// How much of a failure message names its reason.
const REASON_CHARS: usize = 120;

/// Arguments of `schedperf cri`.
#[derive(Debug, Clone, clap::Args)]
pub struct CriArgs {
    #[command(subcommand)]
    pub command: CriCommand,
}

/// Subcommands of `schedperf cri`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum CriCommand {
    /// Check a CRI endpoint: version, runtime conditions, images, and one pod started and removed
    /// (exit 0 ok, 1 the check failed, 2 bad endpoint or input).
    Check(CriCheckArgs),
}

/// Arguments of `schedperf cri check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CriCheckArgs {
    /// The CRI endpoint (`unix:///run/containerd/containerd.sock`, `tcp://host:port`); repeatable.
    #[arg(long, required = true)]
    pub cri_endpoint: Vec<String>,
    /// Images to use instead of the ones workloads name: `FROM=TO[,FROM=TO]` or a file of
    /// `FROM -> TO` lines; the smoke pod runs the `*` target, else the first target present.
    #[arg(long)]
    pub cri_image_map: Vec<String>,
}

/// `schedperf cri ...`: prints each endpoint's check and returns the exit code (0 every check
/// passed, 1 one failed). An endpoint that cannot be reached or a bad flag is an `InputError`.
pub fn cri_command(args: &CriArgs) -> Result<i32, InputError> {
    match &args.command {
        CriCommand::Check(check) => {
            let map = ImageMap::from_flag_values(&check.cri_image_map)?;
            for e in &check.cri_endpoint {
                CriEndpoint::parse(e).map_err(|err| InputError::new("--cri-endpoint", "", err.0))?;
            }
            let mut ok = true;
            for e in &check.cri_endpoint {
                let report = cri_check(e, &map).map_err(|err| InputError::new("--cri-endpoint", "", err.0))?;
                println!("{report}");
                ok &= report.ok();
            }
            Ok(i32::from(if ok { crate::error::exit::OK } else { crate::error::exit::FAILED }))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::Parser;

    use super::*;
    use crate::agent::cri::{PodTimings, HISTOGRAM_MAX_US};
    use crate::runner::PodTimes;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["schedperf", "workloads/e2e"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).expect("flags parse").run
    }

    #[test]
    fn parses_cri_pods() {
        let check = |text: &str, want: Result<RealShare, &str>| {
            let got = parse_real_share(text).map_err(|e| e.to_string());
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{text}"),
                (Err(g), Err(w)) => assert!(g.contains(w), "{text}: {g}"),
                (g, w) => panic!("{text}: got {g:?}, want {w:?}"),
            }
        };
        check("10", Ok(RealShare::Count(10)));
        check(" 0 ", Ok(RealShare::Count(0)));
        check("0.1", Ok(RealShare::FractionPpm(100_000)));
        check("0.25", Ok(RealShare::FractionPpm(250_000)));
        check("1.0", Ok(RealShare::All));
        check("0.000001", Ok(RealShare::FractionPpm(1)));
        check("0.0000001", Err("below one part per million"));
        check("0.0", Err("not a fraction in (0, 1]"));
        check("1.5", Err("not a fraction in (0, 1]"));
        check("-3", Err("not a whole number"));
        check("ten", Err("not a whole number"));
        check("0.x", Err("not a number"));
    }

    #[test]
    fn run_flags_are_checked_before_anything_connects() {
        let check = |extra: &[&str], want: Option<&str>| {
            let a = args(extra);
            let got = match a.agent {
                super::super::cli::AgentKind::Cri => cri_flags(&a).map(|_| ()),
                super::super::cli::AgentKind::Sim => reject_cri_flags(&a),
            };
            match (got, want) {
                (Ok(()), None) => {}
                (Err(e), Some(w)) => assert!(e.to_string().contains(w), "{extra:?}: {e}"),
                (g, w) => panic!("{extra:?}: got {g:?}, want {w:?}"),
            }
        };
        let ep = "unix:///run/x.sock";
        check(&["--agent", "cri", "--cri-endpoint", ep], None);
        check(&["--agent", "cri", "--cri-endpoint", ep, "--cri-pods", "0.5", "--cri-image-map", "a=b,c=d"], None);
        check(&["--agent", "cri"], Some("needs at least one --cri-endpoint"));
        check(&["--agent", "cri", "--cri-endpoint", ep, "--virtual-time"], Some("wall clock"));
        check(&["--agent", "cri", "--cri-endpoint", "run/x.sock"], Some("--cri-endpoint"));
        check(&["--agent", "cri", "--cri-endpoint", "tcp://host"], Some("needs a port"));
        check(&["--agent", "cri", "--cri-endpoint", ep, "--cri-pods", "2.5"], Some("--cri-pods"));
        check(&["--agent", "cri", "--cri-endpoint", ep, "--cri-image-map", "a=b,a=c"], Some("mapped twice"));
        check(&["--agent", "cri", "--cri-endpoint", ep, "--cri-image-map", "/no/such/map"], Some("cannot read"));
        check(&[], None);
        check(&["--cri-endpoint", ep], Some("only apply with --agent cri"));
        check(&["--cri-pods", "3"], Some("--cri-pods only apply"));
    }

    #[test]
    fn collects_the_images_of_the_selected_workloads() {
        let dir = tempfile::tempdir().unwrap();
        let w = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        w("pod-a.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: a-}\nspec:\n  initContainers:\n  - {name: init, image: img/init:1}\n  containers:\n  - {name: a, image: img/a:1}\n  - {name: b, image: img/b:1}\n");
        w(
            "any.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: any}\nspec:\n  containers:\n  - {name: c, image: img/any:1}\n",
        );
        w(
            "config.yaml",
            "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, count: 1}\n  - {opcode: createPods, count: 2, podTemplatePath: pod-a.yaml, collectMetrics: true}\n  - {opcode: createPods, count: 1}\n  - {opcode: createAny, templatePath: any.yaml, namespace: ns}\n  workloads:\n  - {name: w, labels: [short]}\n",
        );
        let mut a = args(&["--label-filter", "short"]);
        a.path = dir.path().join("config.yaml");
        let images = workload_images(&super::super::cli::select(&a).unwrap().workloads).unwrap();
        assert_eq!(images, ["img/a:1", "img/any:1", "img/b:1", "img/init:1", "registry.k8s.io/pause:3.10"]);

        let mut e2e = args(&["--label-filter", "cri"]);
        e2e.path = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/e2e");
        let images = workload_images(&super::super::cli::select(&e2e).unwrap().workloads).unwrap();
        assert_eq!(images, ["localhost/cri-probe/busybox:1.0", "localhost/cri-probe/pause:1.0"]);
    }

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, 3).unwrap();
        for v in values_us {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn report_combines_driver_and_runtime_times() {
        let ms = 1_000_000u64;
        let mut stats = CriStats::default();
        // Pod 1 ran: created 0, scheduled 2 ms, bound 5 ms; sandbox +10 ms, containers +30 ms,
        // Running +45 ms after the bind (driver's bound time ~ agent's bound stamp).
        stats.pods.insert(
            PodUid(1),
            PodTimings {
                bound_at_nanos: 5 * ms,
                sandbox_ready_us: Some(10_000),
                containers_started_us: Some(30_000),
                running_us: Some(45_000),
                ..PodTimings::default()
            },
        );
        // Pod 3 failed in its sandbox; pod 4 was routed real but never reached the agent.
        stats
            .pods
            .insert(PodUid(3), PodTimings { bound_at_nanos: 7 * ms, failed_us: Some(1_000), ..PodTimings::default() });
        stats.call_micros.insert("RunPodSandbox".into(), hist(&[8_000, 12_000]));
        stats.errors_by_code.insert("Unavailable".into(), 2);
        stats.errors_by_rpc.insert("RunPodSandbox/Unavailable".into(), 2);
        let times = |uid: PodUid| match uid.0 {
            1 => Some(PodTimes {
                created_nanos: 0,
                scheduled_nanos: Some(2 * ms),
                bound_nanos: Some(5 * ms),
                measured: true,
            }),
            3 => Some(PodTimes {
                created_nanos: ms,
                scheduled_nanos: Some(4 * ms),
                bound_nanos: Some(7 * ms),
                measured: true,
            }),
            _ => None,
        };
        let r = cri_report(vec!["unix:///x: containerd".into()], &stats, &[PodUid(1), PodUid(3), PodUid(4)], &times);
        assert_eq!((r.real_pods, r.real_pods_running), (3, 1));
        assert_eq!(r.endpoints, ["unix:///x: containerd"]);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.002;
        assert!(near(r.pod_startup_millis.p50, 50.0) && r.pod_startup_millis.count == 1, "{:?}", r.pod_startup_millis);
        let stage = |k: &str| r.pod_startup_stages_millis[k];
        assert_eq!(r.pod_startup_stages_millis.keys().count(), CRI_STAGES.len());
        for (k, want_p50, want_count) in [
            ("createdToScheduled", 2.0, 2),
            ("scheduledToBound", 3.0, 2),
            ("boundToSandboxReady", 10.0, 1),
            ("sandboxReadyToContainersStarted", 20.0, 1),
            ("containersStartedToRunning", 15.0, 1),
        ] {
            assert!(near(stage(k).p50, want_p50) && stage(k).count == want_count, "{k}: {:?}", stage(k));
        }
        let call = r.cri_call_millis["RunPodSandbox"];
        assert!(near(call.p50, 8.0) && near(call.max, 12.0) && call.count == 2, "{call:?}");
        assert_eq!(r.cri_errors, BTreeMap::from([("RunPodSandbox/Unavailable".to_string(), 2)]));
    }
}
