//! The CRI node agent: runs bound pods on a real container runtime (containerd, CRI-O) through the
//! Kubernetes CRI v1 gRPC API (`runtime.v1.RuntimeService`, `runtime.v1.ImageService`), the way
//! kubelet does, and measures every call.
//!
//! # Shape
//! - [`CriAgent::connect`] connects to every endpoint (a wrong one fails at once with an
//!   [`AgentError`] naming it) and starts the agent's own tokio runtime. tokio is used nowhere
//!   else in schedperf: the [`NodeAgent`] methods are synchronous and never wait for the runtime;
//!   `bind` and `delete` spawn their work on the agent's runtime and report through events.
//! - A bind: `Bound` at once, then RunPodSandbox (`SandboxReady`), init containers in order, each
//!   run to completion (sidecars started and left running), CreateContainer + StartContainer for
//!   each container (`ContainersStarted`), ContainerStatus polls until all run (`Running`).
//!   Any error is `Failed(message)` with the gRPC code and message.
//! - A delete: StopContainer (grace 0) + RemoveContainer for each container, StopPodSandbox,
//!   RemovePodSandbox, then `Deleted`.
//! - Each endpoint's Status is probed every second; when it fails twice in a row, the endpoint's
//!   Running pods are reported `Failed` (the runtime went away).
//! - Pods are spread over the endpoints by a stable hash of their node's name; each endpoint
//!   starts or tears down at most `max_concurrent_pods_per_endpoint` pods at once.
//! - Every sandbox and container carries the label `schedperf.io/run-id`; [`NodeAgent::shutdown`]
//!   removes what the agent holds, then sweeps the runtime for anything else with its run id.
//!   [`CriAgent::cleanup_on_signal`] runs that sweep on Ctrl-C or SIGTERM.
//! - Images are never pulled: [`ImageMap`] substitutes images present in the runtime for the ones a
//!   workload names, and [`CriAgent::preflight`] refuses a run whose images are missing.
//!
//! # Invariants
//! - No call is ever made without a deadline, so a runtime that stops answering turns into
//!   `Failed` events, never into a hang.
//! - A start is never dropped half way through a call: every id the runtime returned is recorded
//!   before the next call, so a teardown removes everything that was created.
//!
//! Test against a real runtime with `eval "$(scripts/cri-env.sh /tmp/cri up)"`, then
//! `cargo test --lib agent::cri -- --include-ignored`.

mod check;
mod client;
mod endpoint;
mod image_map;
mod lifecycle;
pub mod proto;
mod stats;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossbeam_channel::Sender;
use tokio::sync::Notify;

use crate::agent::{AgentError, AgentEvent, AgentEventKind, AgentPod, NodeAgent, PodUid, ShutdownReport};
use crate::clock::Clock;

pub use check::{cri_check, CheckReport, RuntimeConditionReport, SmokeTest};
pub use client::{describe_error, describe_status, CriCallError, CriTimeouts, Rpc};
pub use endpoint::{endpoint_for_node, CriEndpoint};
pub use image_map::{ImageMap, CATCH_ALL};
pub use stats::{CriStats, PodTimings, HISTOGRAM_MAX_US};

use client::CriClient;
use stats::StatsRecorder;

/// The label every sandbox and container of a run carries, with the run id as value.
pub const LABEL_RUN_ID: &str = "schedperf.io/run-id";
/// The label that names the schedperf pod (`pod-0000002a`) of a sandbox or container.
pub const LABEL_POD_UID: &str = "schedperf.io/pod-uid";
/// The label that names a container within its pod.
pub const LABEL_CONTAINER: &str = "schedperf.io/container";

/// Pods started or torn down at once on one endpoint, unless configured otherwise.
pub const DEFAULT_MAX_CONCURRENT_PODS_PER_ENDPOINT: usize = 8;

/// The longest pause between two status polls of a container, unless configured otherwise.
pub const DEFAULT_POLL_INTERVAL_MAX: Duration = Duration::from_millis(50);

/// How often each endpoint's Status is probed, unless configured otherwise.
pub const DEFAULT_HEALTH_INTERVAL: Duration = Duration::from_secs(1);

/// Failed Status probes in a row after which an endpoint counts as gone.
pub const RUNTIME_DOWN_AFTER_FAILED_PROBES: u32 = 2;

/// The worker threads of the agent's tokio runtime. The agent's work is waiting on sockets; two
/// threads keep it responsive without taking cores from the scheduler.
pub const RUNTIME_WORKER_THREADS: usize = 2;

/// How the CRI agent runs. [`CriConfig::new`] gives the defaults.
#[derive(Clone, Debug)]
pub struct CriConfig {
    /// `unix:///run/containerd/containerd.sock`, `tcp://host:port`; at least one.
    pub endpoints: Vec<String>,
    pub image_map: ImageMap,
    /// Labels everything the run creates and makes pod uids unique across runs.
    pub run_id: String,
    /// Pod log directories are `log_root/<run_id>/<namespace>_<name>_<uid>`.
    pub log_root: PathBuf,
    pub timeouts: CriTimeouts,
    /// Pods started or torn down at once on one endpoint. A start holds its slot from
    /// RunPodSandbox until Running or Failed (init containers included); later binds wait.
    pub max_concurrent_pods_per_endpoint: usize,
    /// The CRI runtime handler (`""`: the runtime's default).
    pub runtime_handler: String,
    /// Given to a regular container that names no command or args when its image would only run
    /// a bare shell (which exits at once without a terminal), so the pod stays Running.
    pub default_command: Vec<String>,
    /// The longest pause between two status polls (they start at 2 ms and double).
    pub poll_interval_max: Duration,
    /// How often each endpoint is asked for its Status while the agent runs (`None`: never).
    /// After [`RUNTIME_DOWN_AFTER_FAILED_PROBES`] failed probes in a row, every Running pod on
    /// that endpoint is reported `Failed` (the runtime went away).
    pub health_interval: Option<Duration>,
    /// Keep `log_root/<run_id>` (the containers' logs) after `shutdown`; by default it is removed
    /// once nothing of the run is left in the runtime.
    pub keep_logs: bool,
}

impl CriConfig {
    /// The defaults: a fresh run id, logs under the system temp directory, 30 s deadlines for
    /// RunPodSandbox/CreateContainer/StartContainer and 10 s for other calls, 8 pods at once per
    /// endpoint, `sleep 3600` as the default command.
    pub fn new(endpoints: Vec<String>) -> CriConfig {
        CriConfig {
            endpoints,
            image_map: ImageMap::new(),
            run_id: default_run_id(),
            log_root: std::env::temp_dir().join("schedperf-cri"),
            timeouts: CriTimeouts::default(),
            max_concurrent_pods_per_endpoint: DEFAULT_MAX_CONCURRENT_PODS_PER_ENDPOINT,
            runtime_handler: String::new(),
            default_command: vec!["sleep".to_string(), "3600".to_string()],
            poll_interval_max: DEFAULT_POLL_INTERVAL_MAX,
            keep_logs: false,
            health_interval: Some(DEFAULT_HEALTH_INTERVAL),
        }
    }
}

/// A run id unique on this machine: seconds since the epoch and the process id, as
/// `sp-<secs>-<pid>`.
pub fn default_run_id() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("sp-{secs}-{}", std::process::id())
}

/// The ids the runtime gave one pod.
#[derive(Debug, Default)]
struct PodRuntime {
    sandbox_id: Option<String>,
    /// In creation order.
    containers: Vec<String>,
}

impl PodRuntime {
    fn is_empty(&self) -> bool {
        self.sandbox_id.is_none() && self.containers.is_empty()
    }
}

/// A pod the agent holds.
struct PodSlot {
    uid: PodUid,
    node: String,
    endpoint: usize,
    /// Set once by `delete` or `shutdown`: the start stops at its next step and reports nothing.
    cancel: AtomicBool,
    /// Set while a delete is in flight, so `pods()` no longer lists the pod.
    deleting: AtomicBool,
    /// Set once the pod reached Running.
    running: AtomicBool,
    /// Set once `Failed` was reported for the pod's start or its runtime, so it is reported once.
    failed: AtomicBool,
    /// Wakes a start that sleeps between polls when `cancel` is set.
    wake: Notify,
    /// Held by the start from `bind` until it ends, then by a teardown.
    state: Arc<tokio::sync::Mutex<PodRuntime>>,
}

impl PodSlot {
    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Acquire)
    }

    fn cancel(&self) {
        self.cancel.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }
}

/// The state shared by the agent's handle and its tasks.
struct Inner {
    cfg: CriConfig,
    clients: Vec<CriClient>,
    /// `runtime_name runtime_version (CRI runtime_api_version)` per endpoint.
    versions: Vec<String>,
    events: Sender<AgentEvent>,
    clock: Arc<dyn Clock>,
    pods: Mutex<HashMap<PodUid, Arc<PodSlot>>>,
    stats: Arc<StatsRecorder>,
    closed: AtomicBool,
    /// Resolved image -> whether it needs `default_command` (see [`image_runs_bare_shell`]).
    bare_shell_images: Mutex<HashMap<String, bool>>,
}

impl Inner {
    /// Sends an event stamped with the agent's clock; returns the stamp. A dropped receiver is
    /// not an error: the run is over.
    fn emit(&self, uid: PodUid, kind: AgentEventKind) -> u64 {
        let at_nanos = self.clock.now_nanos();
        let _ = self.events.send(AgentEvent { uid, kind, at_nanos });
        at_nanos
    }

    fn pods(&self) -> std::sync::MutexGuard<'_, HashMap<PodUid, Arc<PodSlot>>> {
        self.pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reports `Failed(message)` for the pod, unless it was reported already.
    fn report_failed(&self, slot: &PodSlot, message: String) {
        if !slot.failed.swap(true, Ordering::AcqRel) {
            let at = self.emit(slot.uid, AgentEventKind::Failed(message.clone()));
            self.stats.pod_stage(slot.uid, stats::Stage::Failed, at);
            self.stats.pod_update(slot.uid, |t| t.failure = Some(message));
        }
    }

    fn forget(&self, uid: PodUid) {
        self.pods().remove(&uid);
    }

    /// Whether `image` (already resolved) needs the default command; asks the runtime once per
    /// image. A runtime that does not describe its images gets `false`.
    async fn needs_default_command(&self, client: &CriClient, image: &str) -> bool {
        let known =
            self.bare_shell_images.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(image).copied();
        if let Some(known) = known {
            return known;
        }
        let bare = match client.image_status(image, true).await {
            Ok(status) => image_runs_bare_shell(&status.info),
            Err(_) => false,
        };
        self.bare_shell_images
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(image.to_string(), bare);
        bare
    }
}

/// The log directory of `pod`: `log_root/<run_id>/<namespace>_<name>_<uid>`.
fn pod_log_dir(cfg: &CriConfig, pod: &AgentPod) -> PathBuf {
    cfg.log_root.join(&cfg.run_id).join(format!("{}_{}_{}", pod.namespace, pod.name, pod.uid))
}

/// Whether an image's default process is a bare shell (no entrypoint, and a command that is just
/// `sh`, `ash` or `bash`), read from the verbose ImageStatus `info` (containerd puts the OCI image
/// config under `info.imageSpec.config`). Such a container exits at once without a terminal.
pub fn image_runs_bare_shell(info: &HashMap<String, String>) -> bool {
    const SHELLS: [&str; 3] = ["sh", "ash", "bash"];
    info.values().any(|text| {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return false;
        };
        let Some(config) = value.pointer("/imageSpec/config") else {
            return false;
        };
        let entrypoint_empty = match config.get("Entrypoint") {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        let cmd: Vec<&str> = match config.get("Cmd") {
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(serde_json::Value::as_str).collect(),
            _ => Vec::new(),
        };
        let bare_shell = cmd.len() == 1 && SHELLS.contains(&cmd[0].rsplit('/').next().unwrap_or(""));
        entrypoint_empty && bare_shell
    })
}

/// The CRI agent. See the module docs.
pub struct CriAgent {
    runtime: Option<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
}

impl CriAgent {
    /// Connects to every endpoint of `cfg` (asking each for its version) and starts the agent.
    /// Fails with an error that names the endpoint when one cannot be reached or is not a CRI v1
    /// runtime.
    pub fn connect(cfg: CriConfig, events: Sender<AgentEvent>, clock: Arc<dyn Clock>) -> Result<CriAgent, AgentError> {
        if cfg.endpoints.is_empty() {
            return Err(AgentError("the CRI agent needs at least one endpoint".to_string()));
        }
        for e in &cfg.endpoints {
            CriEndpoint::parse(e)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_WORKER_THREADS)
            .thread_name("cri-agent")
            .enable_all()
            .build()
            .map_err(|e| AgentError(format!("cannot start the CRI agent's runtime: {e}")))?;
        let stats = Arc::new(StatsRecorder::default());
        let mut clients = Vec::with_capacity(cfg.endpoints.len());
        let mut versions = Vec::with_capacity(cfg.endpoints.len());
        for endpoint in &cfg.endpoints {
            let (client, v) = runtime.block_on(CriClient::connect(
                endpoint,
                cfg.timeouts,
                cfg.max_concurrent_pods_per_endpoint,
                stats.clone(),
            ))?;
            clients.push(client);
            versions.push(format!("{} {} (CRI {})", v.runtime_name, v.runtime_version, v.runtime_api_version));
        }
        let inner = Arc::new(Inner {
            cfg,
            clients,
            versions,
            events,
            clock,
            pods: Mutex::new(HashMap::new()),
            stats,
            closed: AtomicBool::new(false),
            bare_shell_images: Mutex::new(HashMap::new()),
        });
        if let Some(every) = inner.cfg.health_interval {
            runtime.spawn(watch_health(inner.clone(), every));
        }
        Ok(CriAgent { runtime: Some(runtime), inner })
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives as long as the agent")
    }

    /// The run id that labels everything this agent creates.
    pub fn run_id(&self) -> &str {
        &self.inner.cfg.run_id
    }

    /// `runtime_name runtime_version (CRI api_version)` of each endpoint, in endpoint order.
    pub fn runtime_versions(&self) -> &[String] {
        &self.inner.versions
    }

    /// A snapshot of the latencies, errors and pod stages measured so far.
    pub fn stats(&self) -> CriStats {
        self.inner.stats.snapshot()
    }

    /// Checks, before a run, that every image (after the image map) is present on every endpoint.
    /// The error lists each missing image, what it was mapped to, and the images the runtime has.
    pub fn preflight(&self, images: &[String]) -> Result<(), AgentError> {
        let inner = self.inner.clone();
        let wanted: BTreeSet<String> = images.iter().cloned().collect();
        self.rt().block_on(async move {
            let mut problems = Vec::new();
            for client in &inner.clients {
                let mut missing = Vec::new();
                for image in &wanted {
                    let resolved = inner.cfg.image_map.resolve(image);
                    let status = client.image_status(resolved, true).await.map_err(AgentError::from)?;
                    match status.image {
                        Some(found) if !found.id.is_empty() => {
                            let bare = image_runs_bare_shell(&status.info);
                            inner
                                .bare_shell_images
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .insert(resolved.to_string(), bare);
                        }
                        _ if resolved != image => missing.push(format!("{image} (mapped to {resolved})")),
                        _ => missing.push(format!("{image} (not mapped)")),
                    }
                }
                if !missing.is_empty() {
                    let present: Vec<String> = client
                        .list_images()
                        .await
                        .map_err(AgentError::from)?
                        .into_iter()
                        .flat_map(|i| i.repo_tags)
                        .collect();
                    problems.push(format!(
                        "{}: missing {}; the runtime has [{}]",
                        client.endpoint,
                        missing.join(", "),
                        present.join(", ")
                    ));
                }
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(AgentError(format!(
                    "images not present in the CRI runtime (a benchmark never pulls; map them with \
                     --cri-image-map 'FROM=TO' to an image the runtime has): {}",
                    problems.join("; ")
                )))
            }
        })
    }

    /// On Ctrl-C (SIGINT) or SIGTERM: removes everything the run created (as `shutdown`), prints
    /// the outcome on stderr and exits the process with code 130. A second signal during the
    /// cleanup exits at once. Call it once, right after `connect`.
    pub fn cleanup_on_signal(&self) -> Result<(), AgentError> {
        self.on_signal(Box::new(|outcome| {
            match outcome {
                SignalOutcome::Cleaned(Ok(r)) if r.leftovers.is_empty() => {
                    eprintln!("schedperf: removed {} CRI pods", r.pods_removed)
                }
                SignalOutcome::Cleaned(Ok(r)) => {
                    eprintln!("schedperf: removed {} CRI pods; left behind: {}", r.pods_removed, r.leftovers.join("; "))
                }
                SignalOutcome::Cleaned(Err(e)) => eprintln!("schedperf: CRI cleanup failed: {e}"),
                SignalOutcome::Skipped => {
                    eprintln!("schedperf: signalled again; exiting without cleanup")
                }
            }
            std::process::exit(130);
        }))
    }

    /// Waits (on the agent's runtime) for SIGINT or SIGTERM, then runs the shutdown and hands its
    /// outcome to `done`; a second signal during the shutdown hands over `Skipped` at once.
    fn on_signal(&self, done: Box<dyn FnOnce(SignalOutcome) + Send>) -> Result<(), AgentError> {
        use tokio::signal::unix::{signal, SignalKind};
        // The handlers are installed now, not when the task first runs.
        let _entered = self.rt().enter();
        let listen = |kind: SignalKind| signal(kind).map_err(|e| AgentError(format!("cannot listen for signals: {e}")));
        let (mut interrupt, mut terminate) = (listen(SignalKind::interrupt())?, listen(SignalKind::terminate())?);
        let inner = self.inner.clone();
        self.rt().spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            eprintln!("schedperf: signalled; removing the CRI pods of run {} (signal again to skip)", inner.cfg.run_id);
            let outcome = tokio::select! {
                report = shutdown_async(inner.clone()) => SignalOutcome::Cleaned(report),
                _ = interrupt.recv() => SignalOutcome::Skipped,
                _ = terminate.recv() => SignalOutcome::Skipped,
            };
            done(outcome);
        });
        Ok(())
    }
}

/// What happened after a signal (see [`CriAgent::cleanup_on_signal`]).
enum SignalOutcome {
    Cleaned(Result<ShutdownReport, AgentError>),
    Skipped,
}

impl Drop for CriAgent {
    fn drop(&mut self) {
        // Never blocks, even when dropped from inside another runtime.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl NodeAgent for CriAgent {
    fn name(&self) -> &str {
        "cri"
    }

    fn bind(&self, pod: AgentPod) {
        let inner = &self.inner;
        if inner.closed.load(Ordering::Acquire) {
            inner.emit(pod.uid, AgentEventKind::BindFailed("the CRI agent is shut down".to_string()));
            return;
        }
        let endpoint = endpoint_for_node(&pod.node, inner.clients.len());
        let state = Arc::new(tokio::sync::Mutex::new(PodRuntime::default()));
        let guard = state.clone().try_lock_owned().expect("a new mutex is unlocked");
        let slot = Arc::new(PodSlot {
            uid: pod.uid,
            node: pod.node.to_string(),
            endpoint,
            cancel: AtomicBool::new(false),
            deleting: AtomicBool::new(false),
            running: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            wake: Notify::new(),
            state,
        });
        {
            let mut pods = inner.pods();
            if pods.contains_key(&pod.uid) {
                drop(pods);
                inner.emit(pod.uid, AgentEventKind::BindFailed(format!("{} is already bound", pod.uid)));
                return;
            }
            pods.insert(pod.uid, slot.clone());
        }
        let at = inner.emit(pod.uid, AgentEventKind::Bound);
        inner.stats.pod_bound(pod.uid, endpoint, at);
        self.rt().spawn(lifecycle::start_pod(inner.clone(), slot, guard, pod));
    }

    fn delete(&self, uid: PodUid) {
        let slot = self.inner.pods().get(&uid).cloned();
        match slot {
            None => {
                self.inner.emit(uid, AgentEventKind::Deleted);
            }
            Some(slot) => {
                if slot.deleting.swap(true, Ordering::AcqRel) {
                    return; // a delete is already in flight; it reports `Deleted`
                }
                slot.cancel();
                self.rt().spawn(lifecycle::delete_pod(self.inner.clone(), slot));
            }
        }
    }

    fn pods(&self) -> Vec<(PodUid, String)> {
        let mut held: Vec<(PodUid, String)> = self
            .inner
            .pods()
            .values()
            .filter(|s| !s.deleting.load(Ordering::Acquire))
            .map(|s| (s.uid, s.node.clone()))
            .collect();
        held.sort();
        held
    }

    fn shutdown(&self) -> Result<ShutdownReport, AgentError> {
        self.rt().block_on(shutdown_async(self.inner.clone()))
    }
}

/// Probes every endpoint's Status each `every` until the agent shuts down. When an endpoint fails
/// [`RUNTIME_DOWN_AFTER_FAILED_PROBES`] probes in a row, its Running pods are reported `Failed`
/// (pods still starting fail through their own calls). Probes run one endpoint after another.
async fn watch_health(inner: Arc<Inner>, every: Duration) {
    let mut failures = vec![0u32; inner.clients.len()];
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        for (endpoint, client) in inner.clients.iter().enumerate() {
            match client.status().await {
                Ok(_) => failures[endpoint] = 0,
                Err(e) => {
                    failures[endpoint] += 1;
                    if failures[endpoint] < RUNTIME_DOWN_AFTER_FAILED_PROBES {
                        continue;
                    }
                    let gone: Vec<Arc<PodSlot>> = inner
                        .pods()
                        .values()
                        .filter(|s| s.endpoint == endpoint && s.running.load(Ordering::Acquire))
                        .filter(|s| !s.cancelled() && !s.failed.load(Ordering::Acquire))
                        .cloned()
                        .collect();
                    for slot in gone {
                        inner.report_failed(&slot, format!("the CRI runtime went away: {e}"));
                    }
                }
            }
        }
    }
}

/// Removes every pod the agent holds (cancelling starts), then sweeps each endpoint for sandboxes
/// labelled with the run id and removes them too; whatever is still listed after that is a
/// leftover. When nothing is left, the run's log directory goes too (unless `keep_logs`).
async fn shutdown_async(inner: Arc<Inner>) -> Result<ShutdownReport, AgentError> {
    inner.closed.store(true, Ordering::Release);
    let slots: Vec<Arc<PodSlot>> = inner.pods().values().cloned().collect();
    for slot in &slots {
        slot.cancel();
    }
    let mut report = ShutdownReport::default();
    // Errors of the first pass, by endpoint; they count only if the sweep cannot clear that endpoint.
    let mut first_pass_errors: Vec<Vec<String>> = vec![Vec::new(); inner.clients.len()];
    let mut tasks = tokio::task::JoinSet::new();
    for slot in slots {
        let inner = inner.clone();
        tasks.spawn(async move {
            let mut state = slot.state.clone().lock_owned().await;
            if state.is_empty() {
                return (slot.uid, false, Ok(()));
            }
            let client = inner.clients[slot.endpoint].clone();
            let _permit = client.pod_slots.clone().acquire_owned().await.expect("the pod semaphore is never closed");
            (slot.uid, true, lifecycle::teardown(&client, &mut state).await.map_err(|e| (slot.endpoint, e)))
        });
    }
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((uid, held, Ok(()))) => {
                inner.forget(uid);
                report.pods_removed += usize::from(held);
            }
            Ok((uid, _, Err((endpoint, errors)))) => {
                first_pass_errors[endpoint].extend(errors.iter().map(|e| format!("{uid}: {e}")));
            }
            Err(e) => report.leftovers.push(format!("a teardown task failed: {e}")),
        }
    }
    let run_label = HashMap::from([(LABEL_RUN_ID.to_string(), inner.cfg.run_id.clone())]);
    for (client, first_errors) in inner.clients.iter().zip(first_pass_errors) {
        let sandboxes = match client.list_pod_sandbox(run_label.clone()).await {
            Ok(s) => s,
            Err(e) => {
                report.leftovers.extend(first_errors);
                report.leftovers.push(format!("cannot list the sandboxes of run {}: {e}", inner.cfg.run_id));
                continue;
            }
        };
        for sandbox in sandboxes {
            let containers = match client.list_containers(&sandbox.id, HashMap::new()).await {
                Ok(c) => c.into_iter().map(|c| c.id).collect(),
                Err(_) => Vec::new(),
            };
            let mut state = PodRuntime { sandbox_id: Some(sandbox.id.clone()), containers };
            match lifecycle::teardown(client, &mut state).await {
                Ok(()) => report.pods_removed += 1,
                Err(errors) => {
                    for e in errors {
                        report.leftovers.push(format!("sandbox {}: {e}", sandbox.id));
                    }
                }
            }
        }
        match client.list_pod_sandbox(run_label.clone()).await {
            Ok(rest) if rest.is_empty() => {}
            Ok(rest) => {
                report.leftovers.extend(first_errors);
                for sandbox in rest {
                    let name = sandbox.metadata.map(|m| format!("{}/{}", m.namespace, m.name)).unwrap_or_default();
                    report.leftovers.push(format!("sandbox {} ({name}) is still on {}", sandbox.id, client.endpoint));
                }
            }
            Err(e) => {
                report.leftovers.extend(first_errors);
                report.leftovers.push(format!("cannot list the sandboxes of run {}: {e}", inner.cfg.run_id));
            }
        }
    }
    let log_dir = inner.cfg.log_root.join(&inner.cfg.run_id);
    if report.leftovers.is_empty() && !inner.cfg.keep_logs {
        match std::fs::remove_dir_all(&log_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => report.leftovers.push(format!("cannot remove the log directory {}: {e}", log_dir.display())),
        }
    }
    Ok(report)
}
