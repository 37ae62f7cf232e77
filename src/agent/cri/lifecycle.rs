//! A pod's life on a CRI runtime: start (sandbox, init containers, containers, wait for Running)
//! and teardown (stop and remove containers, then the sandbox).
//!
//! The start of a pod holds the pod's lock from `bind` until it ends; `delete` raises the pod's
//! cancel flag, then waits for that lock, so a teardown always sees every id the start recorded.
//! The start checks the flag between calls and never drops a call half way (each call has its own
//! deadline), so no sandbox or container is lost between the runtime and the agent.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;
use tonic::Code;

use crate::agent::{AgentEventKind, AgentPod, ContainerSpec};

use super::client::{CriCallError, CriClient};
use super::proto as cri;
use super::stats::{micros, Stage};
use super::{pod_log_dir, CriConfig, Inner, PodRuntime, PodSlot, LABEL_CONTAINER, LABEL_POD_UID, LABEL_RUN_ID};

/// The first pause between two status polls; it doubles up to `CriConfig::poll_interval_max`.
pub const FIRST_POLL_INTERVAL: Duration = Duration::from_millis(2);

/// Why a start ended early.
#[derive(Debug)]
pub enum StartError {
    /// `delete` or `shutdown` asked the start to stop; nothing is reported.
    Cancelled,
    /// The pod failed; reported as `Failed(message)`.
    Failed(String),
}

impl From<CriCallError> for StartError {
    fn from(e: CriCallError) -> StartError {
        StartError::Failed(e.to_string())
    }
}

/// The terminal observation of a container being waited for.
enum Observed {
    Running,
    Exited { exit_code: i32, reason: String, message: String },
}

/// Starts `pod` and reports its stages; on failure reports `Failed`. Runs on the agent's runtime.
pub async fn start_pod(inner: Arc<Inner>, slot: Arc<PodSlot>, mut state: OwnedMutexGuard<PodRuntime>, pod: AgentPod) {
    let client = inner.clients[slot.endpoint].clone();
    let _permit = client.pod_slots.clone().acquire_owned().await.expect("the pod semaphore is never closed");
    let deadline = Instant::now() + inner.cfg.timeouts.pod_start;
    match run_pod(&inner, &client, &slot, &mut state, &pod, deadline).await {
        Ok(()) => {}
        Err(StartError::Cancelled) => {}
        Err(StartError::Failed(message)) => {
            if !slot.cancelled() {
                inner.report_failed(&slot, message);
            }
        }
    }
}

/// The sandbox config of `pod`; also sent again with every CreateContainer.
pub fn sandbox_config(cfg: &CriConfig, pod: &AgentPod) -> cri::PodSandboxConfig {
    let mut labels: HashMap<String, String> = pod.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    labels.insert(LABEL_RUN_ID.to_string(), cfg.run_id.clone());
    labels.insert(LABEL_POD_UID.to_string(), pod.uid.to_string());
    let network = if pod.host_network { cri::NamespaceMode::Node } else { cri::NamespaceMode::Pod };
    cri::PodSandboxConfig {
        metadata: Some(cri::PodSandboxMetadata {
            name: pod.name.to_string(),
            uid: format!("{}-{}", cfg.run_id, pod.uid),
            namespace: pod.namespace.to_string(),
            attempt: 0,
        }),
        // A host-network sandbox shares the node's UTS namespace: runc refuses to set a hostname.
        hostname: if pod.host_network { String::new() } else { hostname_for(&pod.name) },
        log_directory: pod_log_dir(cfg, pod).display().to_string(),
        labels,
        linux: Some(cri::LinuxPodSandboxConfig {
            security_context: Some(cri::LinuxSandboxSecurityContext {
                namespace_options: Some(cri::NamespaceOption {
                    network: network as i32,
                    pid: cri::NamespaceMode::Container as i32,
                    ipc: cri::NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A DNS label from a pod name: at most 63 characters, no trailing dot or dash.
pub fn hostname_for(name: &str) -> String {
    let cut: String = name.chars().take(63).collect();
    cut.trim_end_matches(['-', '.']).to_string()
}

async fn run_pod(
    inner: &Inner,
    client: &CriClient,
    slot: &PodSlot,
    state: &mut PodRuntime,
    pod: &AgentPod,
    deadline: Instant,
) -> Result<(), StartError> {
    if slot.cancelled() {
        return Err(StartError::Cancelled);
    }
    let sandbox_config = sandbox_config(&inner.cfg, pod);
    // containerd creates the container log files but not their directory when the runtime is
    // local; a remote runtime ignores this directory.
    let _ = std::fs::create_dir_all(&sandbox_config.log_directory);
    let started = Instant::now();
    let sandbox_id = client.run_pod_sandbox(sandbox_config.clone(), &inner.cfg.runtime_handler).await?;
    state.sandbox_id = Some(sandbox_id.clone());
    let run_us = micros(started.elapsed());
    inner.stats.pod_update(pod.uid, |t| t.run_pod_sandbox_us = Some(run_us));
    let at = inner.emit(pod.uid, AgentEventKind::SandboxReady);
    inner.stats.pod_stage(pod.uid, Stage::SandboxReady, at);

    let mut keep_running: Vec<(String, String)> = Vec::new();
    if !pod.init_containers.is_empty() {
        let init_started = Instant::now();
        for spec in pod.init_containers.iter() {
            let runs_to_completion = !spec.sidecar;
            let id = create_and_start(
                inner,
                client,
                slot,
                state,
                pod,
                &sandbox_id,
                &sandbox_config,
                spec,
                runs_to_completion,
            )
            .await?;
            match wait_for(inner, client, slot, &id, !spec.sidecar, deadline).await? {
                Observed::Running => keep_running.push((spec.name.clone(), id)),
                Observed::Exited { exit_code: 0, .. } if !spec.sidecar => {}
                Observed::Exited { exit_code, reason, message } => {
                    let kind = if spec.sidecar { "sidecar" } else { "init container" };
                    return Err(StartError::Failed(exited_message(kind, &spec.name, exit_code, &reason, &message)));
                }
            }
        }
        let init_us = micros(init_started.elapsed());
        inner.stats.pod_update(pod.uid, |t| t.init_containers_us = Some(init_us));
    }
    let mut started_ids = Vec::with_capacity(pod.containers.len());
    for spec in pod.containers.iter() {
        let id = create_and_start(inner, client, slot, state, pod, &sandbox_id, &sandbox_config, spec, false).await?;
        started_ids.push((spec.name.clone(), id));
    }
    let at = inner.emit(pod.uid, AgentEventKind::ContainersStarted);
    inner.stats.pod_stage(pod.uid, Stage::ContainersStarted, at);

    keep_running.extend(started_ids);
    for (name, id) in &keep_running {
        match wait_for(inner, client, slot, id, false, deadline).await? {
            Observed::Running => {}
            Observed::Exited { exit_code, reason, message } => {
                return Err(StartError::Failed(exited_message("container", name, exit_code, &reason, &message)));
            }
        }
    }
    if slot.cancelled() {
        return Err(StartError::Cancelled);
    }
    let at = inner.emit(pod.uid, AgentEventKind::Running);
    inner.stats.pod_stage(pod.uid, Stage::Running, at);
    slot.running.store(true, Ordering::Release);
    Ok(())
}

fn exited_message(kind: &str, name: &str, exit_code: i32, reason: &str, message: &str) -> String {
    let mut text = format!("{kind} {name} exited with code {exit_code}");
    if !reason.is_empty() {
        text.push_str(&format!(" ({reason})"));
    }
    if !message.is_empty() {
        text.push_str(&format!(": {message}"));
    }
    text
}

#[allow(clippy::too_many_arguments)]
async fn create_and_start(
    inner: &Inner,
    client: &CriClient,
    slot: &PodSlot,
    state: &mut PodRuntime,
    pod: &AgentPod,
    sandbox_id: &str,
    sandbox_config: &cri::PodSandboxConfig,
    spec: &ContainerSpec,
    runs_to_completion: bool,
) -> Result<String, StartError> {
    if slot.cancelled() {
        return Err(StartError::Cancelled);
    }
    let image = inner.cfg.image_map.resolve(&spec.image).to_string();
    let mut command = spec.command.clone();
    if command.is_empty()
        && spec.args.is_empty()
        && !runs_to_completion
        && inner.needs_default_command(client, &image).await
    {
        command = inner.cfg.default_command.clone();
    }
    let mut labels = HashMap::new();
    labels.insert(LABEL_RUN_ID.to_string(), inner.cfg.run_id.clone());
    labels.insert(LABEL_POD_UID.to_string(), pod.uid.to_string());
    labels.insert(LABEL_CONTAINER.to_string(), spec.name.clone());
    let config = cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata { name: spec.name.clone(), attempt: 0 }),
        image: Some(cri::ImageSpec { image, ..Default::default() }),
        command,
        args: spec.args.clone(),
        labels,
        log_path: format!("{}_0.log", spec.name),
        ..Default::default()
    };
    let t = Instant::now();
    let id = client.create_container(sandbox_id, config, sandbox_config.clone()).await?;
    state.containers.push(id.clone());
    let create_us = micros(t.elapsed());
    if slot.cancelled() {
        return Err(StartError::Cancelled);
    }
    let t = Instant::now();
    client.start_container(&id).await?;
    let start_us = micros(t.elapsed());
    inner.stats.pod_update(pod.uid, |p| {
        p.create_containers_us += create_us;
        p.start_containers_us += start_us;
    });
    Ok(id)
}

/// Polls ContainerStatus until the container runs (unless `until_exit`) or has exited.
async fn wait_for(
    inner: &Inner,
    client: &CriClient,
    slot: &PodSlot,
    id: &str,
    until_exit: bool,
    deadline: Instant,
) -> Result<Observed, StartError> {
    let mut pause = FIRST_POLL_INTERVAL;
    loop {
        if slot.cancelled() {
            return Err(StartError::Cancelled);
        }
        let status = client.container_status(id).await?;
        match cri::ContainerState::try_from(status.state) {
            Ok(cri::ContainerState::ContainerRunning) if !until_exit => return Ok(Observed::Running),
            Ok(cri::ContainerState::ContainerExited) => {
                return Ok(Observed::Exited {
                    exit_code: status.exit_code,
                    reason: status.reason,
                    message: status.message,
                })
            }
            _ => {}
        }
        if Instant::now() >= deadline {
            let what = if until_exit { "exit" } else { "run" };
            return Err(StartError::Failed(format!(
                "container {id} did not {what} within the pod start deadline of {:?}",
                inner.cfg.timeouts.pod_start
            )));
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = slot.wake.notified() => {}
        }
        pause = (pause * 2).min(inner.cfg.poll_interval_max);
    }
}

/// Whether a failed teardown call means the thing is already gone.
fn already_gone(e: &CriCallError) -> bool {
    e.code == Code::NotFound
}

/// Stops and removes the pod's containers (last created first), then its sandbox. Errors other
/// than NotFound are collected; the ids that could not be removed stay in `state`.
pub async fn teardown(client: &CriClient, state: &mut PodRuntime) -> Result<(), Vec<CriCallError>> {
    let mut errors = Vec::new();
    let mut kept = Vec::new();
    while let Some(id) = state.containers.pop() {
        let stopped = match client.stop_container(&id, 0).await {
            Ok(()) => Ok(()),
            Err(e) if already_gone(&e) => Ok(()),
            Err(e) => Err(e),
        };
        let removed = match stopped {
            Ok(()) => match client.remove_container(&id).await {
                Ok(()) => Ok(()),
                Err(e) if already_gone(&e) => Ok(()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = removed {
            errors.push(e);
            kept.push(id);
        }
    }
    state.containers = kept;
    if let Some(id) = state.sandbox_id.clone() {
        let stopped = match client.stop_pod_sandbox(&id).await {
            Ok(()) => Ok(()),
            Err(e) if already_gone(&e) => Ok(()),
            Err(e) => Err(e),
        };
        let removed = match stopped {
            Ok(()) => client.remove_pod_sandbox(&id).await,
            Err(e) => Err(e),
        };
        match removed {
            Ok(()) => state.sandbox_id = None,
            Err(e) if already_gone(&e) => state.sandbox_id = None,
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Deletes one pod: cancels its start, waits for it, tears it down, reports `Deleted` (or
/// `Failed` when the runtime refused; the pod is then kept for `shutdown`).
pub async fn delete_pod(inner: Arc<Inner>, slot: Arc<PodSlot>) {
    let mut state = slot.state.clone().lock_owned().await;
    let client = inner.clients[slot.endpoint].clone();
    let _permit = client.pod_slots.clone().acquire_owned().await.expect("the pod semaphore is never closed");
    let t = Instant::now();
    let outcome = teardown(&client, &mut state).await;
    let teardown_us = micros(t.elapsed());
    inner.stats.pod_update(slot.uid, |p| p.teardown_us = Some(teardown_us));
    match outcome {
        Ok(()) => {
            inner.forget(slot.uid);
            inner.emit(slot.uid, AgentEventKind::Deleted);
        }
        Err(errors) => {
            slot.deleting.store(false, Ordering::Release);
            let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
            inner.emit(slot.uid, AgentEventKind::Failed(format!("delete failed: {}", text.join("; "))));
        }
    }
}
