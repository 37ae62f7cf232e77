//! Node agents: what happens to a pod after the scheduler picks its node.
//!
//! A [`NodeAgent`] binds pods to nodes, starts them, stops and deletes them, and reports each step as
//! an [`AgentEvent`] on the channel it was created with. This module has no backend dependencies;
//! backends (`sim`, `cri`) live in submodules and all pass the same conformance suite.

pub mod conformance;
pub mod mixed;
pub mod sim;

use std::collections::BTreeMap;
use std::sync::Arc;

pub mod cri;

pub use crate::ids::PodUid;

/// One container of a pod, as an agent needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    pub command: Vec<String>,
    pub args: Vec<String>,
    /// An init container with `restartPolicy: Always` (a sidecar): started, left running.
    pub sidecar: bool,
}

/// What an agent is told about a pod when it is bound. The parts a pod takes from its template
/// (namespace, labels, containers) are shared (`Arc`) by the pods made from one template, so a
/// bind hand-off copies nothing but counts (the name and node are shared too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentPod {
    pub uid: PodUid,
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    /// The node the scheduler chose.
    pub node: Arc<str>,
    pub labels: Arc<BTreeMap<String, String>>,
    pub host_network: bool,
    /// Run in order, each to completion (sidecars are started and left running).
    pub init_containers: Arc<[ContainerSpec]>,
    pub containers: Arc<[ContainerSpec]>,
}

/// A step in a pod's life, as the agent saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentEventKind {
    /// The bind succeeded: the pod is on its node.
    Bound,
    /// The bind failed; the scheduler forgets the pod and retries it.
    BindFailed(String),
    /// The pod's sandbox is ready (a real runtime) or the simulated equivalent.
    SandboxReady,
    /// All init containers finished and all containers were started.
    ContainersStarted,
    /// The pod is Running.
    Running,
    /// The pod failed after it was bound (a container failed, the runtime went away, the node failed).
    Failed(String),
    /// The pod was stopped and removed, after a `delete`.
    Deleted,
    /// The node failed and the pod was evicted from it (a controller would recreate it).
    Evicted(String),
}

/// An event from an agent, stamped with the run clock's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentEvent {
    pub uid: PodUid,
    pub kind: AgentEventKind,
    pub at_nanos: u64,
}

/// An agent failed as a whole (bad endpoint, cleanup failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AgentError(pub String);

/// What an agent left behind when it shut down.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Pods still held when shutdown began, then removed.
    pub pods_removed: usize,
    /// Things that could not be removed (should be empty).
    pub leftovers: Vec<String>,
}

/// A backend that runs bound pods. Implementations are driven from binder threads and the run's
/// driver at once, so every method takes `&self`.
///
/// Events are sent on the `crossbeam_channel::Sender<AgentEvent>` the agent was constructed with.
pub trait NodeAgent: Send + Sync {
    /// A short name for reports (`sim`, `cri`).
    fn name(&self) -> &str;

    /// Starts binding `pod` to `pod.node`. Never blocks for the bind's latency: the outcome arrives
    /// later as `Bound` or `BindFailed`, then `SandboxReady`, `ContainersStarted`, `Running` (or `Failed`).
    fn bind(&self, pod: AgentPod);

    /// Stops and removes a pod (deletion or preemption). The outcome arrives as `Deleted`.
    /// Deleting a pod the agent does not hold sends `Deleted` too.
    fn delete(&self, uid: PodUid);

    /// The pods the agent holds, with their nodes, for the end-of-run consistency check.
    fn pods(&self) -> Vec<(PodUid, String)>;

    /// Removes everything the agent created.
    fn shutdown(&self) -> Result<ShutdownReport, AgentError>;

    /// Virtual time only: the time of the agent's next pending event, if any.
    fn next_due_nanos(&self) -> Option<u64> {
        None
    }

    /// Virtual time only: emits every pending event due at or before `t_nanos`.
    fn advance_to(&self, _t_nanos: u64) {}
}
