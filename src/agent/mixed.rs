//! A composite agent: some pods go to a real agent (the CRI agent), the rest to a simulated one.
//!
//! Many simulated nodes, one real runtime: a 5,000-node workload can start a chosen share of its
//! pods on one containerd while every other pod runs on the KWOK-like [`crate::agent::sim`] agent.
//! Both sub-agents were created with the run's event channel, so their events reach the driver
//! unchanged; [`MixedAgent`] only routes the calls.
//!
//! # Routing
//! Each pod is routed once, when it is first bound, and keeps its route for a rebind after a
//! `BindFailed`, for `delete` and for `pods()`:
//! - [`RealShare::All`]: every pod is real.
//! - [`RealShare::Count`]`(n)`: the first `n` distinct pods bound are real. Which pods those are
//!   follows the order of the `bind` calls (the scheduling order; binder threads may swap
//!   neighbours); the count is exact.
//! - [`RealShare::FractionPpm`]`(f)`: pod `uid` is real when `floor(uid * f / 1e6)` exceeds
//!   `floor((uid - 1) * f / 1e6)`: every k-th uid for `f = 1e6 / k`, exactly `f` parts per million of
//!   any run of consecutive uids, whatever the bind order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::agent::{AgentError, AgentPod, NodeAgent, PodUid, ShutdownReport};

/// Parts per million in one (the unit of [`RealShare::FractionPpm`]).
pub const PPM_ONE: u64 = 1_000_000;

/// Which pods of a run go to the real agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealShare {
    /// Every pod.
    All,
    /// The first `n` distinct pods bound.
    Count(u64),
    /// This many parts per million of the uids, spread evenly (see the module docs).
    FractionPpm(u64),
}

impl RealShare {
    /// Whether a share of `FractionPpm(ppm)` routes `uid` to the real agent:
    /// `floor(uid * ppm / 1e6) > floor((uid - 1) * ppm / 1e6)`.
    pub fn fraction_selects(ppm: u64, uid: PodUid) -> bool {
        let ppm = u128::from(ppm.min(PPM_ONE));
        let uid = u128::from(uid.0);
        let one = u128::from(PPM_ONE);
        uid * ppm / one > uid.saturating_sub(1) * ppm / one
    }
}

/// Where a pod was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Real,
    Sim,
}

#[derive(Default)]
struct Routes {
    by_uid: HashMap<PodUid, Route>,
    real_count: u64,
}

/// Routes each pod to `real` or `sim` (see the module docs).
pub struct MixedAgent {
    name: String,
    real: Arc<dyn NodeAgent>,
    sim: Arc<dyn NodeAgent>,
    share: RealShare,
    routes: Mutex<Routes>,
}

impl MixedAgent {
    /// A composite of `real` and `sim`. Its name is the real agent's when every pod is real, else
    /// `real+sim` (`cri+sim`).
    pub fn new(real: Arc<dyn NodeAgent>, sim: Arc<dyn NodeAgent>, share: RealShare) -> MixedAgent {
        let name = match share {
            RealShare::All => real.name().to_string(),
            _ => format!("{}+{}", real.name(), sim.name()),
        };
        MixedAgent { name, real, sim, share, routes: Mutex::new(Routes::default()) }
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The route of `uid`, decided (and remembered) now if the pod was never bound.
    fn route_for_bind(&self, uid: PodUid) -> Route {
        let mut routes = self.routes();
        if let Some(r) = routes.by_uid.get(&uid) {
            return *r;
        }
        let real = match self.share {
            RealShare::All => true,
            RealShare::Count(n) => routes.real_count < n,
            RealShare::FractionPpm(ppm) => RealShare::fraction_selects(ppm, uid),
        };
        let route = if real { Route::Real } else { Route::Sim };
        if real {
            routes.real_count += 1;
        }
        routes.by_uid.insert(uid, route);
        route
    }

    /// Where `uid` was sent, if it was ever bound.
    pub fn route(&self, uid: PodUid) -> Option<Route> {
        self.routes().by_uid.get(&uid).copied()
    }

    /// Every pod ever sent to the real agent, in uid order.
    pub fn real_uids(&self) -> Vec<PodUid> {
        let mut uids: Vec<PodUid> =
            self.routes().by_uid.iter().filter(|(_, r)| **r == Route::Real).map(|(u, _)| *u).collect();
        uids.sort();
        uids
    }

    fn agent(&self, route: Route) -> &dyn NodeAgent {
        match route {
            Route::Real => self.real.as_ref(),
            Route::Sim => self.sim.as_ref(),
        }
    }
}

impl NodeAgent for MixedAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn bind(&self, pod: AgentPod) {
        let route = self.route_for_bind(pod.uid);
        self.agent(route).bind(pod);
    }

    /// A pod never bound goes to the simulated agent, which answers `Deleted`.
    fn delete(&self, uid: PodUid) {
        let route = self.route(uid).unwrap_or(Route::Sim);
        self.agent(route).delete(uid);
    }

    fn pods(&self) -> Vec<(PodUid, String)> {
        let mut all = self.real.pods();
        all.extend(self.sim.pods());
        all.sort();
        all
    }

    /// Shuts both agents down (the real one first, so its cleanup starts early) and merges their
    /// reports; an error of either is the error, naming the agent.
    fn shutdown(&self) -> Result<ShutdownReport, AgentError> {
        let real = self.real.shutdown();
        let sim = self.sim.shutdown();
        match (real, sim) {
            (Ok(a), Ok(b)) => Ok(ShutdownReport {
                pods_removed: a.pods_removed + b.pods_removed,
                leftovers: a.leftovers.into_iter().chain(b.leftovers).collect(),
            }),
            (Err(e), Ok(_)) => Err(AgentError(format!("{}: {e}", self.real.name()))),
            (Ok(_), Err(e)) => Err(AgentError(format!("{}: {e}", self.sim.name()))),
            (Err(a), Err(b)) => Err(AgentError(format!("{}: {a}; {}: {b}", self.real.name(), self.sim.name()))),
        }
    }

    fn next_due_nanos(&self) -> Option<u64> {
        match (self.real.next_due_nanos(), self.sim.next_due_nanos()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance_to(&self, t_nanos: u64) {
        self.real.advance_to(t_nanos);
        self.sim.advance_to(t_nanos);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::agent::sim::{SimAgent, SimConfig, TimeMode};
    use crate::agent::{AgentEvent, AgentEventKind};
    use crate::clock::VirtualClock;

    /// A fake agent that records its calls and holds what it was given.
    struct Fake {
        name: &'static str,
        binds: Mutex<Vec<PodUid>>,
        deletes: Mutex<Vec<PodUid>>,
        held: Mutex<BTreeMap<PodUid, String>>,
        shutdown_error: Option<&'static str>,
    }

    impl Fake {
        fn new(name: &'static str) -> Arc<Fake> {
            Arc::new(Fake {
                name,
                binds: Mutex::default(),
                deletes: Mutex::default(),
                held: Mutex::default(),
                shutdown_error: None,
            })
        }
        fn binds(&self) -> Vec<u64> {
            self.binds.lock().unwrap().iter().map(|u| u.0).collect()
        }
        fn deletes(&self) -> Vec<u64> {
            self.deletes.lock().unwrap().iter().map(|u| u.0).collect()
        }
    }

    impl NodeAgent for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn bind(&self, pod: AgentPod) {
            self.binds.lock().unwrap().push(pod.uid);
            self.held.lock().unwrap().insert(pod.uid, pod.node.to_string());
        }
        fn delete(&self, uid: PodUid) {
            self.deletes.lock().unwrap().push(uid);
            self.held.lock().unwrap().remove(&uid);
        }
        fn pods(&self) -> Vec<(PodUid, String)> {
            self.held.lock().unwrap().iter().map(|(u, n)| (*u, n.clone())).collect()
        }
        fn shutdown(&self) -> Result<ShutdownReport, AgentError> {
            if let Some(e) = self.shutdown_error {
                return Err(AgentError(e.to_string()));
            }
            let n = std::mem::take(&mut *self.held.lock().unwrap()).len();
            Ok(ShutdownReport { pods_removed: n, leftovers: vec![format!("{} leftover", self.name)] })
        }
    }

    fn pod(uid: u64, node: &str) -> AgentPod {
        AgentPod {
            uid: PodUid(uid),
            namespace: "ns".into(),
            name: format!("p{uid}").into(),
            node: node.into(),
            labels: Default::default(),
            host_network: false,
            init_containers: Arc::from([]),
            containers: Arc::from([]),
        }
    }

    fn mixed(share: RealShare) -> (MixedAgent, Arc<Fake>, Arc<Fake>) {
        let (real, sim) = (Fake::new("cri"), Fake::new("sim"));
        (MixedAgent::new(real.clone(), sim.clone(), share), real, sim)
    }

    /// Binds `order` and returns the uids each agent received.
    fn route_all(share: RealShare, order: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let (m, real, sim) = mixed(share);
        for &u in order {
            m.bind(pod(u, "n"));
        }
        (real.binds(), sim.binds())
    }

    #[test]
    fn routes_by_share() {
        let ten: Vec<u64> = (1..=10).collect();
        let check = |share: RealShare, order: &[u64], real: &[u64], sim: &[u64]| {
            assert_eq!(route_all(share, order), (real.to_vec(), sim.to_vec()), "{share:?} {order:?}");
        };
        check(RealShare::All, &ten, &ten, &[]);
        check(RealShare::Count(0), &ten, &[], &ten);
        check(RealShare::Count(3), &ten, &[1, 2, 3], &[4, 5, 6, 7, 8, 9, 10]);
        check(RealShare::Count(3), &[7, 2, 9, 1], &[7, 2, 9], &[1]);
        check(RealShare::Count(20), &ten, &ten, &[]);
        // Every 4th uid for a quarter; every 10th for 0.1.
        check(RealShare::FractionPpm(250_000), &ten, &[4, 8], &[1, 2, 3, 5, 6, 7, 9, 10]);
        check(RealShare::FractionPpm(100_000), &ten, &[10], &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        check(RealShare::FractionPpm(PPM_ONE), &ten, &ten, &[]);
        check(RealShare::FractionPpm(0), &ten, &[], &ten);
        // A fraction does not depend on bind order.
        check(RealShare::FractionPpm(250_000), &[8, 5, 4, 1], &[8, 4], &[5, 1]);
    }

    /// Over uids `1..=n` a fraction selects exactly `floor(n * ppm / 1e6)` pods.
    #[test]
    fn fraction_is_exact_over_consecutive_uids() {
        for (ppm, uids, want) in [
            (100_000u64, 1..=1000u64, 100usize),
            (300_000, 1..=1000, 300),
            (290_000, 1..=100, 29),
            (333_333, 1..=999_999, 333_332),
            (333_333, 1..=1_000_000, 333_333),
            (1, 1..=999_999, 0),
            (1, 1..=1_000_000, 1),
        ] {
            let got = uids.filter(|u| RealShare::fraction_selects(ppm, PodUid(*u))).count();
            assert_eq!(got, want, "ppm {ppm}");
        }
    }

    #[test]
    fn routes_are_deterministic_and_remembered() {
        let order = [5u64, 3, 9, 1, 4];
        assert_eq!(route_all(RealShare::Count(2), &order), route_all(RealShare::Count(2), &order));
        // A rebind (after BindFailed) keeps the first route even once the count is used up.
        let (m, real, sim) = mixed(RealShare::Count(1));
        m.bind(pod(1, "a"));
        m.bind(pod(2, "b"));
        m.bind(pod(1, "c"));
        m.bind(pod(2, "d"));
        assert_eq!((real.binds(), sim.binds()), (vec![1, 1], vec![2, 2]));
        assert_eq!(m.route(PodUid(1)), Some(Route::Real));
        assert_eq!(m.route(PodUid(2)), Some(Route::Sim));
        assert_eq!(m.route(PodUid(3)), None);
        assert_eq!(m.real_uids(), vec![PodUid(1)]);
    }

    #[test]
    fn delete_goes_where_the_pod_went() {
        let (m, real, sim) = mixed(RealShare::FractionPpm(500_000));
        for u in 1..=4 {
            m.bind(pod(u, "n"));
        }
        for u in [4, 1, 2, 99] {
            m.delete(PodUid(u));
        }
        // Even uids are real; a pod never bound is the simulated agent's to answer.
        assert_eq!(real.deletes(), vec![4, 2]);
        assert_eq!(sim.deletes(), vec![1, 99]);
    }

    #[test]
    fn pods_is_the_sorted_union_and_shutdown_merges() {
        let (m, _real, _sim) = mixed(RealShare::FractionPpm(500_000));
        for (u, n) in [(3, "c"), (2, "b"), (1, "a"), (4, "d")] {
            m.bind(pod(u, n));
        }
        let want: Vec<(PodUid, String)> =
            [(1, "a"), (2, "b"), (3, "c"), (4, "d")].iter().map(|(u, n)| (PodUid(*u), n.to_string())).collect();
        assert_eq!(m.pods(), want);
        assert_eq!(
            m.shutdown(),
            Ok(ShutdownReport { pods_removed: 4, leftovers: vec!["cri leftover".into(), "sim leftover".into()] })
        );
        let failing =
            Arc::new(Fake { shutdown_error: Some("socket gone"), ..Arc::into_inner(Fake::new("cri")).unwrap() });
        let m = MixedAgent::new(failing, Fake::new("sim"), RealShare::All);
        assert_eq!(m.shutdown(), Err(AgentError("cri: socket gone".into())));
    }

    #[test]
    fn names_say_what_runs_the_pods() {
        for (share, want) in
            [(RealShare::All, "cri"), (RealShare::Count(3), "cri+sim"), (RealShare::FractionPpm(1), "cri+sim")]
        {
            assert_eq!(mixed(share).0.name(), want);
        }
    }

    /// Two real simulated agents on one channel: every pod's events arrive, each from the agent
    /// its route names, and the virtual-time hooks reach both.
    #[test]
    fn two_sim_agents_share_the_event_channel() {
        let (tx, rx) = crossbeam_channel::unbounded::<AgentEvent>();
        let clock = Arc::new(VirtualClock::new());
        let cfg = SimConfig::zero_latency();
        let a: Arc<dyn NodeAgent> = Arc::new(SimAgent::new(cfg.clone(), tx.clone(), clock.clone(), TimeMode::Virtual));
        let b: Arc<dyn NodeAgent> = Arc::new(SimAgent::new(cfg, tx, clock.clone(), TimeMode::Virtual));
        let m = MixedAgent::new(a.clone(), b.clone(), RealShare::Count(2));
        for u in 1..=5 {
            m.bind(pod(u, &format!("n{u}")));
        }
        while let Some(t) = m.next_due_nanos() {
            clock.advance_to(t);
            m.advance_to(t);
        }
        let running: Vec<u64> = rx
            .try_iter()
            .filter(|e| e.kind == AgentEventKind::Running)
            .map(|e| e.uid.0)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(running, vec![1, 2, 3, 4, 5]);
        assert_eq!(a.pods().iter().map(|(u, _)| u.0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(b.pods().iter().map(|(u, _)| u.0).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(m.pods().len(), 5);
        m.delete(PodUid(2));
        while let Some(t) = m.next_due_nanos() {
            clock.advance_to(t);
            m.advance_to(t);
        }
        assert_eq!(a.pods().iter().map(|(u, _)| u.0).collect::<Vec<_>>(), vec![1]);
        assert!(rx.try_iter().any(|e| e.uid == PodUid(2) && e.kind == AgentEventKind::Deleted));
    }
}
