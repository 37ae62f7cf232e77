//! The conformance suite every [`NodeAgent`] backend must pass.
//!
//! A backend's test calls [`run_conformance`] with a factory; each check builds a fresh agent from it.
//! The factory must build an agent without failure injection. With [`Driver::Virtual`] the suite owns a
//! `VirtualClock` and moves it to the agent's next due event whenever it waits; with [`Driver::Wall`]
//! it waits on the event channel (at most [`WALL_TIMEOUT`] per wait). A slow backend (real containers)
//! may lower the number of concurrent pods with [`run_conformance_with`].
//!
//! The checks:
//! - a bind produces `Bound`, `SandboxReady`, `ContainersStarted`, `Running`, in that order, with
//!   non-decreasing timestamps;
//! - a delete produces `Deleted`, and so does the delete of a pod the agent does not hold;
//! - `pods()` reflects binds and deletes;
//! - `shutdown()` removes every pod and leaves nothing behind;
//! - many pods bound from several threads at once all run, each pod's events in order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::{AgentEvent, AgentEventKind, AgentPod, NodeAgent, PodUid};
use crate::clock::{Clock, VirtualClock, WallClock};

/// How the suite moves time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    Wall,
    Virtual,
}

/// The longest the suite waits for one expected event in wall-clock mode.
pub const WALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A factory: the agent sends its events on the sender and reads time from the clock.
pub type MakeAgent<'a> = &'a dyn Fn(Sender<AgentEvent>, Arc<dyn Clock>) -> Arc<dyn NodeAgent>;

/// A minimal pod for `node`.
pub fn test_pod(uid: u64, node: &str) -> AgentPod {
    AgentPod {
        uid: PodUid(uid),
        namespace: "default".into(),
        name: format!("pod-{uid}").into(),
        node: node.into(),
        labels: Default::default(),
        host_network: false,
        init_containers: Arc::from([]),
        containers: Arc::from([super::ContainerSpec {
            name: "c".into(),
            image: "registry.k8s.io/pause:3.10".into(),
            command: Vec::new(),
            args: Vec::new(),
            sidecar: false,
        }]),
    }
}

/// The life of a pod up to Running, in order.
const LIFECYCLE: [&str; 4] = ["Bound", "SandboxReady", "ContainersStarted", "Running"];

fn kind_name(k: &AgentEventKind) -> &'static str {
    match k {
        AgentEventKind::Bound => "Bound",
        AgentEventKind::BindFailed(_) => "BindFailed",
        AgentEventKind::SandboxReady => "SandboxReady",
        AgentEventKind::ContainersStarted => "ContainersStarted",
        AgentEventKind::Running => "Running",
        AgentEventKind::Failed(_) => "Failed",
        AgentEventKind::Deleted => "Deleted",
        AgentEventKind::Evicted(_) => "Evicted",
    }
}

/// One agent under test with its event log.
pub struct Harness {
    pub agent: Arc<dyn NodeAgent>,
    rx: Receiver<AgentEvent>,
    virtual_clock: Option<Arc<VirtualClock>>,
    /// Every event received, per pod, in arrival order.
    pub log: HashMap<PodUid, Vec<AgentEvent>>,
}

impl Harness {
    pub fn new(make: MakeAgent<'_>, driver: Driver) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (clock, virtual_clock): (Arc<dyn Clock>, _) = match driver {
            Driver::Wall => (Arc::new(WallClock::new()), None),
            Driver::Virtual => {
                let vc = Arc::new(VirtualClock::new());
                (vc.clone(), Some(vc))
            }
        };
        Harness { agent: make(tx, clock), rx, virtual_clock, log: HashMap::new() }
    }

    fn record(&mut self, e: AgentEvent) {
        self.log.entry(e.uid).or_default().push(e);
    }

    /// The names of the events received for `uid`.
    pub fn kinds(&self, uid: u64) -> Vec<&'static str> {
        self.log.get(&PodUid(uid)).map(|v| v.iter().map(|e| kind_name(&e.kind)).collect()).unwrap_or_default()
    }

    fn has(&self, uid: u64, kind: &str) -> bool {
        self.kinds(uid).contains(&kind)
    }

    /// Waits until every pod in `uids` has received an event named `kind`.
    pub fn wait_all(&mut self, uids: &[u64], kind: &str) {
        let deadline = Instant::now() + WALL_TIMEOUT;
        loop {
            while let Ok(e) = self.rx.try_recv() {
                self.record(e);
            }
            if uids.iter().all(|&u| self.has(u, kind)) {
                return;
            }
            match &self.virtual_clock {
                Some(vc) => {
                    let t = self
                        .agent
                        .next_due_nanos()
                        .unwrap_or_else(|| panic!("agent stalled: no pending event, still waiting for {kind}"));
                    vc.advance_to(t);
                    self.agent.advance_to(t);
                }
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(left) {
                        Ok(e) => self.record(e),
                        Err(_) => panic!("timed out after {WALL_TIMEOUT:?} waiting for {kind}"),
                    }
                }
            }
        }
    }

    /// Asserts that each pod's events are the lifecycle in order (a prefix of it, then `Deleted` if
    /// it was deleted), with non-decreasing timestamps.
    pub fn assert_in_order(&self) {
        for (uid, events) in &self.log {
            let names: Vec<&str> = events.iter().map(|e| kind_name(&e.kind)).collect();
            let life: Vec<&str> = names.iter().copied().filter(|n| *n != "Deleted").collect();
            assert_eq!(life, LIFECYCLE[..life.len()], "{uid}: events out of order: {names:?}");
            if let Some(i) = names.iter().position(|n| *n == "Deleted") {
                assert_eq!(i, names.len() - 1, "{uid}: events after Deleted: {names:?}");
            }
            assert!(events.windows(2).all(|w| w[0].at_nanos <= w[1].at_nanos), "{uid}: time went backwards");
        }
    }
}

/// Pods bound at once by the concurrency check of [`run_conformance`].
pub const DEFAULT_CONCURRENT_PODS: u64 = 400;

/// Runs every check against agents built by `make`. Panics (with the check's name) on a failure.
pub fn run_conformance(make: MakeAgent<'_>, driver: Driver) {
    run_conformance_with(make, driver, DEFAULT_CONCURRENT_PODS);
}

/// [`run_conformance`] with `concurrent_pods` pods (bound from 8 threads) in the concurrency check.
pub fn run_conformance_with(make: MakeAgent<'_>, driver: Driver, concurrent_pods: u64) {
    bind_reaches_running(make, driver);
    delete_reports_deleted(make, driver);
    delete_of_unknown_pod_reports_deleted(make, driver);
    pods_reflects_binds_and_deletes(make, driver);
    shutdown_removes_everything(make, driver);
    many_pods_at_once(make, driver, concurrent_pods);
}

fn bind_reaches_running(make: MakeAgent<'_>, driver: Driver) {
    let mut h = Harness::new(make, driver);
    h.agent.bind(test_pod(1, "node-a"));
    h.wait_all(&[1], "Running");
    assert_eq!(h.kinds(1), LIFECYCLE, "bind_reaches_running");
    h.assert_in_order();
    assert_eq!(h.agent.pods(), vec![(PodUid(1), "node-a".to_string())], "bind_reaches_running: pods()");
}

fn delete_reports_deleted(make: MakeAgent<'_>, driver: Driver) {
    let mut h = Harness::new(make, driver);
    h.agent.bind(test_pod(1, "node-a"));
    h.wait_all(&[1], "Running");
    h.agent.delete(PodUid(1));
    h.wait_all(&[1], "Deleted");
    assert_eq!(h.kinds(1).last(), Some(&"Deleted"), "delete_reports_deleted");
    h.assert_in_order();
    assert!(h.agent.pods().is_empty(), "delete_reports_deleted: pods() after delete");
}

fn delete_of_unknown_pod_reports_deleted(make: MakeAgent<'_>, driver: Driver) {
    let mut h = Harness::new(make, driver);
    h.agent.delete(PodUid(42));
    h.wait_all(&[42], "Deleted");
    assert_eq!(h.kinds(42), vec!["Deleted"], "delete_of_unknown_pod_reports_deleted");
}

fn pods_reflects_binds_and_deletes(make: MakeAgent<'_>, driver: Driver) {
    let mut h = Harness::new(make, driver);
    for (uid, node) in [(3, "node-b"), (1, "node-a"), (2, "node-b")] {
        h.agent.bind(test_pod(uid, node));
    }
    h.wait_all(&[1, 2, 3], "Running");
    let expected = |uids: &[(u64, &str)]| uids.iter().map(|&(u, n)| (PodUid(u), n.to_string())).collect::<Vec<_>>();
    let mut got = h.agent.pods();
    got.sort();
    assert_eq!(got, expected(&[(1, "node-a"), (2, "node-b"), (3, "node-b")]), "pods_reflects_binds_and_deletes");
    h.agent.delete(PodUid(2));
    h.wait_all(&[2], "Deleted");
    let mut got = h.agent.pods();
    got.sort();
    assert_eq!(got, expected(&[(1, "node-a"), (3, "node-b")]), "pods_reflects_binds_and_deletes: after delete");
}

fn shutdown_removes_everything(make: MakeAgent<'_>, driver: Driver) {
    let mut h = Harness::new(make, driver);
    let uids: Vec<u64> = (0..5).collect();
    for &u in &uids {
        h.agent.bind(test_pod(u, "node-a"));
    }
    h.wait_all(&uids, "Running");
    let report = h.agent.shutdown().expect("shutdown_removes_everything: shutdown failed");
    assert_eq!(report.pods_removed, 5, "shutdown_removes_everything: pods_removed");
    assert!(report.leftovers.is_empty(), "shutdown_removes_everything: leftovers {:?}", report.leftovers);
    assert!(h.agent.pods().is_empty(), "shutdown_removes_everything: pods() after shutdown");
}

fn many_pods_at_once(make: MakeAgent<'_>, driver: Driver, pods: u64) {
    const THREADS: u64 = 8;
    let per_thread = pods.div_ceil(THREADS);
    let mut h = Harness::new(make, driver);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let agent = h.agent.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    let uid = t * per_thread + i;
                    agent.bind(test_pod(uid, &format!("node-{}", uid % 7)));
                }
            });
        }
    });
    let uids: Vec<u64> = (0..THREADS * per_thread).collect();
    h.wait_all(&uids, "Running");
    assert_eq!(h.agent.pods().len(), uids.len(), "many_pods_at_once: pods()");
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let agent = h.agent.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    agent.delete(PodUid(t * per_thread + i));
                }
            });
        }
    });
    h.wait_all(&uids, "Deleted");
    h.assert_in_order();
    assert!(h.agent.pods().is_empty(), "many_pods_at_once: pods() after deletes");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::sim::{SimAgent, SimConfig, TimeMode};
    use crate::agent::{AgentError, ShutdownReport};

    /// A sim agent with one defect, to show the suite catches it.
    struct Defective {
        inner: SimAgent,
        defect: &'static str,
    }

    impl NodeAgent for Defective {
        fn name(&self) -> &str {
            "defective"
        }
        fn bind(&self, pod: AgentPod) {
            self.inner.bind(pod)
        }
        fn delete(&self, uid: PodUid) {
            let held = self.inner.pods().iter().any(|(u, _)| *u == uid);
            if held || self.defect != "silent unknown delete" {
                self.inner.delete(uid)
            }
        }
        fn pods(&self) -> Vec<(PodUid, String)> {
            if self.defect == "empty pods" {
                return Vec::new();
            }
            self.inner.pods()
        }
        fn shutdown(&self) -> Result<ShutdownReport, AgentError> {
            let r = self.inner.shutdown()?;
            if self.defect == "leftovers" {
                return Ok(ShutdownReport { leftovers: vec!["sandbox-1".into()], ..r });
            }
            Ok(r)
        }
        fn next_due_nanos(&self) -> Option<u64> {
            self.inner.next_due_nanos()
        }
        fn advance_to(&self, t: u64) {
            self.inner.advance_to(t)
        }
    }

    fn run_defective(defect: &'static str) {
        let make = move |tx, clock| {
            let inner = SimAgent::new(SimConfig::zero_latency(), tx, clock, TimeMode::Virtual);
            Arc::new(Defective { inner, defect }) as Arc<dyn NodeAgent>
        };
        run_conformance(&make, Driver::Virtual);
    }

    #[test]
    fn a_sound_agent_passes() {
        run_defective("none");
    }

    #[test]
    #[should_panic(expected = "bind_reaches_running: pods()")]
    fn empty_pods_is_caught() {
        run_defective("empty pods");
    }

    #[test]
    #[should_panic(expected = "agent stalled")]
    fn a_silent_delete_of_an_unknown_pod_is_caught() {
        run_defective("silent unknown delete");
    }

    #[test]
    #[should_panic(expected = "shutdown_removes_everything: leftovers")]
    fn leftovers_are_caught() {
        run_defective("leftovers");
    }
}
