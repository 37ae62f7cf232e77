//! One CRI runtime: a tonic channel, typed calls with deadlines, latency and error accounting.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;

use crate::agent::AgentError;

use super::endpoint::CriEndpoint;
use super::proto::image_service_client::ImageServiceClient;
use super::proto::runtime_service_client::RuntimeServiceClient;
use super::proto::{self as cri};
use super::stats::StatsRecorder;

/// The CRI calls the agent makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rpc {
    Version,
    Status,
    RunPodSandbox,
    StopPodSandbox,
    RemovePodSandbox,
    ListPodSandbox,
    CreateContainer,
    StartContainer,
    StopContainer,
    RemoveContainer,
    ContainerStatus,
    ListContainers,
    ImageStatus,
    ListImages,
}

impl Rpc {
    /// The method name in `runtime.v1.RuntimeService` / `runtime.v1.ImageService`.
    pub fn name(self) -> &'static str {
        match self {
            Rpc::Version => "Version",
            Rpc::Status => "Status",
            Rpc::RunPodSandbox => "RunPodSandbox",
            Rpc::StopPodSandbox => "StopPodSandbox",
            Rpc::RemovePodSandbox => "RemovePodSandbox",
            Rpc::ListPodSandbox => "ListPodSandbox",
            Rpc::CreateContainer => "CreateContainer",
            Rpc::StartContainer => "StartContainer",
            Rpc::StopContainer => "StopContainer",
            Rpc::RemoveContainer => "RemoveContainer",
            Rpc::ContainerStatus => "ContainerStatus",
            Rpc::ListContainers => "ListContainers",
            Rpc::ImageStatus => "ImageStatus",
            Rpc::ListImages => "ListImages",
        }
    }

    /// Whether the call does heavy work in the runtime (creates processes, mounts, networks) and
    /// so gets [`CriTimeouts::heavy`].
    pub fn is_heavy(self) -> bool {
        matches!(self, Rpc::RunPodSandbox | Rpc::CreateContainer | Rpc::StartContainer)
    }
}

impl fmt::Display for Rpc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Deadlines. Every CRI call has one; a pod's whole start has one too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CriTimeouts {
    /// RunPodSandbox, CreateContainer, StartContainer.
    pub heavy: Duration,
    /// Every other call.
    pub light: Duration,
    /// Establishing the connection to an endpoint.
    pub connect: Duration,
    /// Bind accepted to Running (init containers included); past it the pod is `Failed`.
    pub pod_start: Duration,
}

impl Default for CriTimeouts {
    fn default() -> Self {
        CriTimeouts {
            heavy: Duration::from_secs(30),
            light: Duration::from_secs(10),
            connect: Duration::from_secs(5),
            pod_start: Duration::from_secs(300),
        }
    }
}

impl CriTimeouts {
    /// The deadline of one call of `rpc`.
    pub fn for_rpc(&self, rpc: Rpc) -> Duration {
        if rpc.is_heavy() {
            self.heavy
        } else {
            self.light
        }
    }
}

/// A failed CRI call: which call, where, the gRPC code and the message (with the transport
/// error's source chain).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{rpc} on {endpoint}: {code:?}: {message}")]
pub struct CriCallError {
    pub rpc: Rpc,
    pub endpoint: String,
    pub code: Code,
    pub message: String,
}

impl From<CriCallError> for AgentError {
    fn from(e: CriCallError) -> AgentError {
        AgentError(e.to_string())
    }
}

/// The message of `status` followed by its source chain: tonic says only `transport error` at the
/// top, and the cause (`No such file or directory`, `Connection refused`) is in the sources.
/// A source whose text repeats the previous one is skipped.
pub fn describe_status(status: &tonic::Status) -> String {
    let mut text = if status.message().is_empty() {
        status.code().description().to_string()
    } else {
        status.message().to_string()
    };
    append_sources(&mut text, std::error::Error::source(status));
    text
}

/// `error`'s text followed by its source chain, joined with `: `.
pub fn describe_error(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    append_sources(&mut text, error.source());
    text
}

fn append_sources(text: &mut String, mut source: Option<&(dyn std::error::Error + 'static)>) {
    let mut last = text.clone();
    while let Some(e) = source {
        let s = e.to_string();
        if !s.is_empty() && s != last && !last.ends_with(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        last = s;
        source = e.source();
    }
}

/// A connected CRI runtime. Cheap to clone: the tonic channel multiplexes calls over one HTTP/2
/// connection and reconnects by itself.
#[derive(Clone)]
pub struct CriClient {
    /// The endpoint as the user wrote it, for messages.
    pub endpoint: String,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
    timeouts: CriTimeouts,
    stats: Arc<StatsRecorder>,
    /// Bounds the pods started or torn down at once on this endpoint.
    pub pod_slots: Arc<Semaphore>,
}

impl CriClient {
    /// Connects to `endpoint` and asks for its version, so a wrong endpoint fails here, with an
    /// error that names it.
    pub async fn connect(
        endpoint: &str,
        timeouts: CriTimeouts,
        max_concurrent_pods: usize,
        stats: Arc<StatsRecorder>,
    ) -> Result<(CriClient, cri::VersionResponse), AgentError> {
        let parsed = CriEndpoint::parse(endpoint)?;
        let channel_endpoint = Endpoint::from_shared(parsed.uri())
            .map_err(|e| AgentError(format!("CRI endpoint {endpoint}: {}", describe_error(&e))))?
            .connect_timeout(timeouts.connect)
            .tcp_nodelay(true);
        let channel = match tokio::time::timeout(timeouts.connect, channel_endpoint.connect()).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(e)) => {
                return Err(AgentError(format!("CRI endpoint {endpoint}: cannot connect: {}", describe_error(&e))))
            }
            Err(_) => {
                return Err(AgentError(format!(
                    "CRI endpoint {endpoint}: cannot connect: no connection within {:?}",
                    timeouts.connect
                )))
            }
        };
        let client = CriClient {
            endpoint: endpoint.to_string(),
            runtime: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
            timeouts,
            stats,
            pod_slots: Arc::new(Semaphore::new(max_concurrent_pods.max(1))),
        };
        let version = client.version().await.map_err(|e| {
            AgentError(format!("CRI endpoint {endpoint}: connected, but it does not answer as a CRI v1 runtime: {e}"))
        })?;
        Ok((client, version))
    }

    /// Runs one call with its deadline (sent to the server as `grpc-timeout` and enforced here
    /// too, so a hung runtime cannot hold a caller), and records its latency and error code.
    async fn call<Req, Resp, F, Fut>(&self, rpc: Rpc, message: Req, send: F) -> Result<Resp, CriCallError>
    where
        F: FnOnce(RuntimeServiceClient<Channel>, ImageServiceClient<Channel>, tonic::Request<Req>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let deadline = self.timeouts.for_rpc(rpc);
        let mut request = tonic::Request::new(message);
        request.set_timeout(deadline);
        let started = Instant::now();
        let outcome =
            match tokio::time::timeout(deadline, send(self.runtime.clone(), self.images.clone(), request)).await {
                Ok(Ok(response)) => Ok(response.into_inner()),
                Ok(Err(status)) => Err((status.code(), describe_status(&status))),
                Err(_) => Err((Code::DeadlineExceeded, format!("no answer within the {deadline:?} deadline"))),
            };
        self.stats.record_call(rpc, started.elapsed(), outcome.as_ref().err().map(|e| e.0));
        outcome.map_err(|(code, message)| CriCallError { rpc, endpoint: self.endpoint.clone(), code, message })
    }

    pub async fn version(&self) -> Result<cri::VersionResponse, CriCallError> {
        let msg = cri::VersionRequest { version: "v1".to_string() };
        self.call(Rpc::Version, msg, |mut rt, _, req| async move { rt.version(req).await }).await
    }

    pub async fn status(&self) -> Result<cri::StatusResponse, CriCallError> {
        let msg = cri::StatusRequest { verbose: false };
        self.call(Rpc::Status, msg, |mut rt, _, req| async move { rt.status(req).await }).await
    }

    /// Returns the new sandbox's id.
    pub async fn run_pod_sandbox(&self, config: cri::PodSandboxConfig, handler: &str) -> Result<String, CriCallError> {
        let msg = cri::RunPodSandboxRequest { config: Some(config), runtime_handler: handler.to_string() };
        let r = self.call(Rpc::RunPodSandbox, msg, |mut rt, _, req| async move { rt.run_pod_sandbox(req).await });
        Ok(r.await?.pod_sandbox_id)
    }

    pub async fn stop_pod_sandbox(&self, id: &str) -> Result<(), CriCallError> {
        let msg = cri::StopPodSandboxRequest { pod_sandbox_id: id.to_string() };
        self.call(Rpc::StopPodSandbox, msg, |mut rt, _, req| async move { rt.stop_pod_sandbox(req).await }).await?;
        Ok(())
    }

    pub async fn remove_pod_sandbox(&self, id: &str) -> Result<(), CriCallError> {
        let msg = cri::RemovePodSandboxRequest { pod_sandbox_id: id.to_string() };
        self.call(Rpc::RemovePodSandbox, msg, |mut rt, _, req| async move { rt.remove_pod_sandbox(req).await }).await?;
        Ok(())
    }

    /// The sandboxes whose labels include all of `labels`.
    pub async fn list_pod_sandbox(
        &self,
        labels: HashMap<String, String>,
    ) -> Result<Vec<cri::PodSandbox>, CriCallError> {
        let msg = cri::ListPodSandboxRequest {
            filter: Some(cri::PodSandboxFilter { label_selector: labels, ..Default::default() }),
        };
        let r = self.call(Rpc::ListPodSandbox, msg, |mut rt, _, req| async move { rt.list_pod_sandbox(req).await });
        Ok(r.await?.items)
    }

    /// Returns the new container's id.
    pub async fn create_container(
        &self,
        sandbox_id: &str,
        config: cri::ContainerConfig,
        sandbox_config: cri::PodSandboxConfig,
    ) -> Result<String, CriCallError> {
        let msg = cri::CreateContainerRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        let r = self.call(Rpc::CreateContainer, msg, |mut rt, _, req| async move { rt.create_container(req).await });
        Ok(r.await?.container_id)
    }

    pub async fn start_container(&self, id: &str) -> Result<(), CriCallError> {
        let msg = cri::StartContainerRequest { container_id: id.to_string() };
        self.call(Rpc::StartContainer, msg, |mut rt, _, req| async move { rt.start_container(req).await }).await?;
        Ok(())
    }

    /// Stops a container, killing it after `grace_secs` (0: at once).
    pub async fn stop_container(&self, id: &str, grace_secs: i64) -> Result<(), CriCallError> {
        let msg = cri::StopContainerRequest { container_id: id.to_string(), timeout: grace_secs };
        self.call(Rpc::StopContainer, msg, |mut rt, _, req| async move { rt.stop_container(req).await }).await?;
        Ok(())
    }

    pub async fn remove_container(&self, id: &str) -> Result<(), CriCallError> {
        let msg = cri::RemoveContainerRequest { container_id: id.to_string() };
        self.call(Rpc::RemoveContainer, msg, |mut rt, _, req| async move { rt.remove_container(req).await }).await?;
        Ok(())
    }

    pub async fn container_status(&self, id: &str) -> Result<cri::ContainerStatus, CriCallError> {
        let msg = cri::ContainerStatusRequest { container_id: id.to_string(), verbose: false };
        let r = self.call(Rpc::ContainerStatus, msg, |mut rt, _, req| async move { rt.container_status(req).await });
        let response = r.await?;
        response.status.ok_or_else(|| CriCallError {
            rpc: Rpc::ContainerStatus,
            endpoint: self.endpoint.clone(),
            code: Code::Internal,
            message: format!("the runtime answered without a status for container {id}"),
        })
    }

    /// The containers of the sandboxes with `sandbox_id` (empty: all) whose labels include `labels`.
    pub async fn list_containers(
        &self,
        sandbox_id: &str,
        labels: HashMap<String, String>,
    ) -> Result<Vec<cri::Container>, CriCallError> {
        let msg = cri::ListContainersRequest {
            filter: Some(cri::ContainerFilter {
                pod_sandbox_id: sandbox_id.to_string(),
                label_selector: labels,
                ..Default::default()
            }),
        };
        let r = self.call(Rpc::ListContainers, msg, |mut rt, _, req| async move { rt.list_containers(req).await });
        Ok(r.await?.containers)
    }

    /// The image's status; `image` is `None` when the runtime does not have it (not an error).
    pub async fn image_status(&self, image: &str, verbose: bool) -> Result<cri::ImageStatusResponse, CriCallError> {
        let msg = cri::ImageStatusRequest {
            image: Some(cri::ImageSpec { image: image.to_string(), ..Default::default() }),
            verbose,
        };
        self.call(Rpc::ImageStatus, msg, |_, mut im, req| async move { im.image_status(req).await }).await
    }

    pub async fn list_images(&self) -> Result<Vec<cri::Image>, CriCallError> {
        let msg = cri::ListImagesRequest { filter: None };
        let r = self.call(Rpc::ListImages, msg, |_, mut im, req| async move { im.list_images(req).await });
        Ok(r.await?.images)
    }
}
