//! `cri_check`: is this endpoint a usable CRI runtime? Version, conditions, images, and one real
//! pod started and removed, with timings.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agent::{AgentError, AgentEventKind, AgentPod, ContainerSpec, NodeAgent, PodUid};
use crate::clock::WallClock;

use super::{default_run_id, CriAgent, CriConfig, ImageMap, CATCH_ALL};

/// One runtime condition (`RuntimeReady`, `NetworkReady`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConditionReport {
    pub kind: String,
    pub ready: bool,
    pub reason: String,
    pub message: String,
}

/// The smoke test: one pod, one container, started to Running and deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmokeTest {
    pub image: String,
    pub host_network: bool,
    pub run_pod_sandbox_us: u64,
    pub create_container_us: u64,
    pub start_container_us: u64,
    /// Bind accepted to Running.
    pub running_us: u64,
    /// The delete: stop and remove the container and the sandbox.
    pub teardown_us: u64,
}

/// What [`cri_check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub endpoint: String,
    /// `runtime_name runtime_version (CRI api_version)`.
    pub runtime: String,
    pub conditions: Vec<RuntimeConditionReport>,
    /// The image names (repo tags) the runtime has.
    pub images: Vec<String>,
    /// The image map's entries, `FROM -> (TO, present)`.
    pub mapped: BTreeMap<String, (String, bool)>,
    pub smoke: Result<SmokeTest, String>,
    /// What the smoke test left behind (should be empty).
    pub leftovers: Vec<String>,
}

impl CheckReport {
    /// Whether the runtime is ready, every mapped image is present, the smoke pod ran and nothing
    /// was left behind.
    pub fn ok(&self) -> bool {
        self.conditions.iter().filter(|c| c.kind == "RuntimeReady").all(|c| c.ready)
            && self.mapped.values().all(|(_, present)| *present)
            && self.smoke.is_ok()
            && self.leftovers.is_empty()
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "CRI endpoint {}: {}", self.endpoint, self.runtime)?;
        for c in &self.conditions {
            let state = if c.ready { "ready" } else { "NOT READY" };
            write!(f, "  condition {}: {state}", c.kind)?;
            if !c.reason.is_empty() || !c.message.is_empty() {
                write!(f, " ({} {})", c.reason, c.message)?;
            }
            writeln!(f)?;
        }
        writeln!(
            f,
            "  images present: {}",
            if self.images.is_empty() { "none".to_string() } else { self.images.join(", ") }
        )?;
        for (from, (to, present)) in &self.mapped {
            writeln!(f, "  image map: {from} -> {to}: {}", if *present { "present" } else { "MISSING" })?;
        }
        match &self.smoke {
            Ok(s) => writeln!(
                f,
                "  smoke pod ({}, {}): RunPodSandbox {:.1} ms, CreateContainer {:.1} ms, StartContainer {:.1} ms, \
                 bind to Running {:.1} ms, teardown {:.1} ms",
                s.image,
                if s.host_network { "host network" } else { "pod network" },
                ms(s.run_pod_sandbox_us),
                ms(s.create_container_us),
                ms(s.start_container_us),
                ms(s.running_us),
                ms(s.teardown_us)
            )?,
            Err(e) => writeln!(f, "  smoke pod FAILED: {e}")?,
        }
        for l in &self.leftovers {
            writeln!(f, "  LEFT BEHIND: {l}")?;
        }
        write!(f, "  verdict: {}", if self.ok() { "ok" } else { "NOT OK" })
    }
}

/// How long the smoke test waits for each of its events beyond the agent's own deadlines.
const SMOKE_EVENT_SLACK: Duration = Duration::from_secs(5);

/// Checks one endpoint: its version, its conditions, the images it has, the image map's targets,
/// and one pod (the catch-all target of `image_map`, else its first present target) started to
/// Running and deleted. The pod uses the pod network when the runtime says `NetworkReady`, else
/// the host network. Fails only when the endpoint cannot be reached; everything else is in the
/// report.
pub fn cri_check(endpoint: &str, image_map: &ImageMap) -> Result<CheckReport, AgentError> {
    let (events_tx, events) = crossbeam_channel::unbounded();
    let mut cfg = CriConfig::new(vec![endpoint.to_string()]);
    cfg.image_map = image_map.clone();
    cfg.run_id = format!("check-{}", default_run_id().trim_start_matches("sp-"));
    let agent = CriAgent::connect(cfg, events_tx, Arc::new(WallClock::new()))?;
    let client = agent.inner.clients[0].clone();
    let (status, images) = agent.rt().block_on(async { (client.status().await, client.list_images().await) });
    let status = status.map_err(AgentError::from)?;
    let conditions: Vec<RuntimeConditionReport> = status
        .status
        .map(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .map(|c| RuntimeConditionReport { kind: c.r#type, ready: c.status, reason: c.reason, message: c.message })
        .collect();
    let mut images: Vec<String> = images.map_err(AgentError::from)?.into_iter().flat_map(|i| i.repo_tags).collect();
    images.sort();
    let mapped: BTreeMap<String, (String, bool)> = image_map
        .entries()
        .map(|(from, to)| (from.to_string(), (to.to_string(), images.iter().any(|i| i == to))))
        .collect();
    let network_ready = conditions.iter().any(|c| c.kind == "NetworkReady" && c.ready);
    let smoke_image = mapped
        .get(CATCH_ALL)
        .filter(|(_, present)| *present)
        .or_else(|| mapped.values().find(|(_, present)| *present))
        .map(|(to, _)| to.clone());
    let smoke = match smoke_image {
        None => Err("no image map target is present in the runtime; pass --cri-image-map FROM=TO with one of \
                     the images above"
            .to_string()),
        Some(image) => smoke_pod(&agent, &events, image, !network_ready),
    };
    let leftovers = agent.shutdown()?.leftovers;
    Ok(CheckReport {
        endpoint: endpoint.to_string(),
        runtime: agent.runtime_versions()[0].clone(),
        conditions,
        images,
        mapped,
        smoke,
        leftovers,
    })
}

fn smoke_pod(
    agent: &CriAgent,
    events: &crossbeam_channel::Receiver<crate::agent::AgentEvent>,
    image: String,
    host_network: bool,
) -> Result<SmokeTest, String> {
    let uid = PodUid(1);
    agent.bind(AgentPod {
        uid,
        namespace: "schedperf-check".into(),
        name: "cri-check".into(),
        node: "cri-check".into(),
        labels: Default::default(),
        host_network,
        init_containers: Arc::from([]),
        containers: Arc::from([ContainerSpec {
            name: "main".to_string(),
            image: image.clone(),
            command: Vec::new(),
            args: Vec::new(),
            sidecar: false,
        }]),
    });
    let wait = agent.inner.cfg.timeouts.pod_start + SMOKE_EVENT_SLACK;
    let until = |want: fn(&AgentEventKind) -> bool| -> Result<(), String> {
        let give_up = Instant::now() + wait;
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            match events.recv_timeout(left) {
                Ok(e) if e.uid == uid && want(&e.kind) => return Ok(()),
                Ok(e) => {
                    if let AgentEventKind::Failed(m) | AgentEventKind::BindFailed(m) = e.kind {
                        return Err(m);
                    }
                }
                Err(_) => return Err(format!("no answer within {wait:?}")),
            }
        }
    };
    let started = until(|k| *k == AgentEventKind::Running);
    agent.delete(uid);
    let deleted = until(|k| *k == AgentEventKind::Deleted);
    started?;
    deleted.map_err(|e| format!("the pod ran, but its delete failed: {e}"))?;
    let t = agent.stats().pods.get(&uid).cloned().unwrap_or_default();
    Ok(SmokeTest {
        image,
        host_network,
        run_pod_sandbox_us: t.run_pod_sandbox_us.unwrap_or(0),
        create_container_us: t.create_containers_us,
        start_container_us: t.start_containers_us,
        running_us: t.running_us.unwrap_or(0),
        teardown_us: t.teardown_us.unwrap_or(0),
    })
}
