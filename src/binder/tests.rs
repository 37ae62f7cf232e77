use super::*;
use crate::agent::conformance::test_pod;
use crate::agent::sim::{SimAgent, SimConfig, SimOverrides, TimeMode};
use crate::clock::{Clock, VirtualClock, WallClock};
use std::collections::BTreeSet;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

struct Rig {
    binder: Arc<Binder>,
    results: Receiver<BindResult>,
    agent: Arc<SimAgent>,
    clock: Arc<VirtualClock>,
    /// Every agent event, forwarded by the router (kept open so the router keeps running).
    _events: Receiver<AgentEvent>,
}

fn rig(
    config: SimConfig,
    mode: TimeMode,
    workers: usize,
    max_in_flight: usize,
    cycle: Arc<dyn BindingCycle>,
    cache: Option<Arc<AssumeCache>>,
) -> Rig {
    let (events_tx, events_rx) = crossbeam_channel::unbounded();
    let clock = Arc::new(VirtualClock::new());
    let agent_clock: Arc<dyn Clock> = match mode {
        TimeMode::Wall => Arc::new(WallClock::new()),
        TimeMode::Virtual => clock.clone(),
    };
    let agent = Arc::new(SimAgent::new(config, events_tx, agent_clock, mode));
    let (results_tx, results) = crossbeam_channel::unbounded();
    let binder = Arc::new(Binder::start(workers, max_in_flight, agent.clone(), cycle, cache, results_tx));
    let (sink, events) = crossbeam_channel::unbounded();
    binder.spawn_router(events_rx, sink);
    Rig { binder, results, agent, clock, _events: events }
}

fn collect(results: &Receiver<BindResult>, n: usize) -> Vec<BindResult> {
    (0..n)
        .map(|i| results.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("result {i} of {n} missing")))
        .collect()
}

/// Counts pods between PreBind and PostBind, and fails PreBind for chosen pods.
#[derive(Default)]
struct Probe {
    active: AtomicUsize,
    max_active: AtomicUsize,
    post_binds: AtomicUsize,
    fail_pre_bind: BTreeSet<u64>,
}

impl BindingCycle for Probe {
    fn pre_bind(&self, job: &BindJob) -> Result<(), String> {
        if self.fail_pre_bind.contains(&job.pod.uid.0) {
            return Err("volume not ready".into());
        }
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_active.fetch_max(now, Ordering::SeqCst);
        Ok(())
    }

    fn post_bind(&self, _job: &BindJob) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.post_binds.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn burst_of_a_thousand_through_the_zero_latency_agent() {
    let probe = Arc::new(Probe::default());
    let cache = Arc::new(AssumeCache::new());
    let r = rig(SimConfig::zero_latency(), TimeMode::Wall, 4, 16, probe.clone(), Some(cache.clone()));
    for u in 0..1000 {
        cache.assume(PodUid(u), (u % 10) as u32).unwrap();
        r.binder.submit(BindJob::new(test_pod(u, &format!("node-{}", u % 10))));
        assert!(r.binder.in_flight() <= 16);
    }
    let results = collect(&r.results, 1000);
    let uids: BTreeSet<u64> = results.iter().map(|x| x.job.pod.uid.0).collect();
    assert_eq!(uids.len(), 1000, "one result per pod");
    assert!(results.iter().all(|x| x.outcome == BindOutcome::Bound));
    assert!(probe.max_active.load(Ordering::SeqCst) <= 16, "in-flight bound held");
    assert_eq!(probe.post_binds.load(Ordering::SeqCst), 1000);
    assert_eq!(cache.count(crate::cache::PodState::Bound), 1000, "finish_binding for every pod");
    assert_eq!(r.binder.stats().bound.load(Ordering::Relaxed), 1000);
    assert_eq!(r.agent.pods().len(), 1000);
    assert_eq!(r.binder.in_flight(), 0);
}

#[test]
fn the_in_flight_bound_is_reached_and_respected() {
    // 1 ms binds: the binder keeps 16 pods in flight, never more.
    let probe = Arc::new(Probe::default());
    let o = SimOverrides { bind_latency_ms: Some(1.0), ..Default::default() };
    let config = SimConfig::zero_latency().with_overrides(&o).unwrap();
    let r = rig(config, TimeMode::Wall, 4, 16, probe.clone(), None);
    for u in 0..300 {
        r.binder.submit(BindJob::new(test_pod(u, "n")));
    }
    collect(&r.results, 300);
    let max = probe.max_active.load(Ordering::SeqCst);
    assert!((8..=16).contains(&max), "max in flight {max}");
}

#[test]
fn try_submit_refuses_beyond_the_bound() {
    // Virtual time: no bind completes until the clock moves.
    let r = rig(
        SimConfig::zero_latency()
            .with_overrides(&SimOverrides { bind_latency_ms: Some(5.0), ..Default::default() })
            .unwrap(),
        TimeMode::Virtual,
        2,
        4,
        Arc::new(NoPlugins),
        None,
    );
    for u in 0..4 {
        assert!(r.binder.try_submit(BindJob::new(test_pod(u, "n"))).is_ok());
    }
    let refused = r.binder.try_submit(BindJob::new(test_pod(4, "n"))).unwrap_err();
    assert_eq!(refused.pod.uid, PodUid(4));
    assert_eq!(r.binder.in_flight(), 4);
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.agent.pods().len() < 4 {
        assert!(Instant::now() < deadline, "workers did not bind");
        std::thread::yield_now();
    }
    r.clock.advance_to(5_000_000);
    r.agent.advance_to(5_000_000);
    collect(&r.results, 4);
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.binder.in_flight() > 0 {
        assert!(Instant::now() < deadline, "tokens not returned");
        std::thread::yield_now();
    }
    assert!(r.binder.try_submit(BindJob::new(test_pod(4, "n"))).is_ok());
}

#[test]
fn failures_in_a_burst_are_exactly_the_failing_pods() {
    let mut config = SimConfig::zero_latency().with_seed(5);
    config.bind_failure_rate = 0.1;
    let pre_bind_failures: BTreeSet<u64> = [100, 500].into();
    // Which binds the agent fails: its draws depend only on (seed, uid, attempt).
    let (tx, rx) = crossbeam_channel::unbounded();
    let reference = SimAgent::new(config.clone(), tx, Arc::new(VirtualClock::new()), TimeMode::Virtual);
    for u in (0..1000).filter(|u| !pre_bind_failures.contains(u)) {
        reference.bind(test_pod(u, "n"));
    }
    let expected_bind_failures: BTreeSet<u64> =
        rx.try_iter().filter(|e| matches!(e.kind, AgentEventKind::BindFailed(_))).map(|e| e.uid.0).collect();
    assert!((50..=150).contains(&expected_bind_failures.len()));

    let probe = Arc::new(Probe { fail_pre_bind: pre_bind_failures.clone(), ..Default::default() });
    let r = rig(config, TimeMode::Wall, 4, 16, probe, None);
    for u in 0..1000 {
        r.binder.submit(BindJob::new(test_pod(u, "n")));
    }
    let results = collect(&r.results, 1000);
    let failed_at = |stage: BindStage| -> BTreeSet<u64> {
        results
            .iter()
            .filter(|x| matches!(&x.outcome, BindOutcome::Failed { stage: s, .. } if *s == stage))
            .map(|x| x.job.pod.uid.0)
            .collect()
    };
    assert_eq!(failed_at(BindStage::Bind), expected_bind_failures);
    assert_eq!(failed_at(BindStage::PreBind), pre_bind_failures);
    assert!(failed_at(BindStage::Permit).is_empty());
    let bound = results.iter().filter(|x| x.outcome == BindOutcome::Bound).count();
    assert_eq!(bound, 1000 - expected_bind_failures.len() - 2);
    assert_eq!(r.agent.pods().len(), bound);
}

#[test]
fn permit_wait_is_released_by_allow_reject_or_timeout() {
    enum Then {
        Allow,
        Reject,
        Nothing,
    }
    let check = |then: Then, timeout: Duration, expected: BindOutcome| {
        let r = rig(SimConfig::zero_latency(), TimeMode::Wall, 2, 4, Arc::new(NoPlugins), None);
        r.binder.submit(BindJob::new(test_pod(1, "n")).with_permit_wait(timeout));
        assert!(!r.binder.allow(PodUid(2)), "pod 2 is not waiting");
        match then {
            Then::Allow => assert!(r.binder.allow(PodUid(1))),
            Then::Reject => assert!(r.binder.reject(PodUid(1), "gang incomplete")),
            Then::Nothing => {}
        }
        let result = collect(&r.results, 1).remove(0);
        assert_eq!(result.outcome, expected);
        assert!(!r.binder.allow(PodUid(1)), "no longer waiting");
        assert_eq!(r.binder.stats().permit_waits.load(Ordering::Relaxed), 1);
    };
    let long = Duration::from_secs(30);
    check(Then::Allow, long, BindOutcome::Bound);
    check(Then::Reject, long, BindOutcome::Failed { stage: BindStage::Permit, reason: "gang incomplete".into() });
    check(
        Then::Nothing,
        Duration::from_millis(20),
        BindOutcome::Failed {
            stage: BindStage::Permit,
            reason: "rejected due to timeout after waiting 20ms at permit".into(),
        },
    );
}

#[test]
fn pods_waiting_on_permit_do_not_hold_workers() {
    // One worker, three parked pods: the others still bind.
    let r = rig(SimConfig::zero_latency(), TimeMode::Wall, 1, 8, Arc::new(NoPlugins), None);
    for u in 1..4 {
        r.binder.submit(BindJob::new(test_pod(u, "n")).with_permit_wait(Duration::from_secs(30)));
    }
    for u in 4..8 {
        r.binder.submit(BindJob::new(test_pod(u, "n")));
    }
    let first: BTreeSet<u64> = collect(&r.results, 4).iter().map(|x| x.job.pod.uid.0).collect();
    assert_eq!(first, (4..8).collect());
    assert_eq!(r.binder.waiting_on_permit(), 3);
    assert_eq!(r.binder.in_flight(), 3, "parked pods count as in flight");
    assert!(r.binder.allow(PodUid(2)));
    assert!(r.binder.reject(PodUid(3), "no"));
    assert!(r.binder.allow(PodUid(1)));
    let mut rest: Vec<(u64, bool)> =
        collect(&r.results, 3).into_iter().map(|x| (x.job.pod.uid.0, x.outcome == BindOutcome::Bound)).collect();
    rest.sort();
    assert_eq!(rest, vec![(1, true), (2, true), (3, false)]);
    assert_eq!(r.binder.waiting_on_permit(), 0);
}

#[test]
fn permit_timeouts_fire_in_deadline_order() {
    let r = rig(SimConfig::zero_latency(), TimeMode::Wall, 1, 8, Arc::new(NoPlugins), None);
    for (u, ms) in [(1, 60), (2, 20), (3, 40)] {
        r.binder.submit(BindJob::new(test_pod(u, "n")).with_permit_wait(Duration::from_millis(ms)));
    }
    let order: Vec<u64> = collect(&r.results, 3).iter().map(|x| x.job.pod.uid.0).collect();
    assert_eq!(order, vec![2, 3, 1]);
}

#[test]
fn a_pod_deleted_while_binding_fails_its_cycle() {
    let cache = Arc::new(AssumeCache::new());
    let slow = SimOverrides { bind_latency_ms: Some(5.0), ..Default::default() };
    let r = rig(
        SimConfig::zero_latency().with_overrides(&slow).unwrap(),
        TimeMode::Virtual,
        1,
        4,
        Arc::new(NoPlugins),
        Some(cache.clone()),
    );
    cache.assume(PodUid(1), 0).unwrap();
    cache.assume(PodUid(2), 0).unwrap();
    r.binder.submit(BindJob::new(test_pod(1, "n")));
    r.binder.submit(BindJob::new(test_pod(2, "n")));
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.agent.pods().len() < 2 {
        assert!(Instant::now() < deadline);
        std::thread::yield_now();
    }
    // Pod 1: deleted in the cache only (the agent still binds it). Pod 2: deleted at the agent.
    assert_eq!(cache.delete(PodUid(1)), Ok(Some(0)));
    r.agent.delete(PodUid(2));
    r.clock.advance_to(5_000_000);
    r.agent.advance_to(5_000_000);
    let mut results = collect(&r.results, 2);
    results.sort_by_key(|x| x.job.pod.uid);
    let reasons: Vec<(u64, BindOutcome)> = results.into_iter().map(|x| (x.job.pod.uid.0, x.outcome)).collect();
    assert_eq!(
        reasons,
        vec![
            (
                1,
                BindOutcome::Failed {
                    stage: BindStage::Bind,
                    reason: "pod-00000001: cannot finish_binding a pod in state Deleted".into()
                }
            ),
            (2, BindOutcome::Failed { stage: BindStage::Bind, reason: "the pod was deleted while binding".into() }),
        ]
    );
    assert_eq!(r.binder.take_cache_errors(), vec![], "refusals for a pod deleted first are expected");
}

#[test]
fn a_failed_binding_cycle_forgets_the_pod_in_the_cache_on_the_binder() {
    // Pod 1 fails PreBind (on a worker), pod 2 is rejected at Permit, pod 3 times out at Permit (on
    // the permit timer thread), pod 4 binds. Pod 5 fails PreBind without ever being assumed: the
    // refused forget is kept as an inconsistency.
    let cache = Arc::new(AssumeCache::new());
    let probe = Arc::new(Probe { fail_pre_bind: [1, 5].into(), ..Default::default() });
    let r = rig(SimConfig::zero_latency(), TimeMode::Wall, 2, 8, probe, Some(cache.clone()));
    for u in 1..=4 {
        cache.assume(PodUid(u), 7).unwrap();
    }
    r.binder.submit(BindJob::new(test_pod(1, "n")));
    r.binder.submit(BindJob::new(test_pod(2, "n")).with_permit_wait(Duration::from_secs(60)));
    r.binder.submit(BindJob::new(test_pod(3, "n")).with_permit_wait(Duration::from_millis(1)));
    r.binder.submit(BindJob::new(test_pod(4, "n")));
    r.binder.submit(BindJob::new(test_pod(5, "n")));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !r.binder.reject(PodUid(2), "rejected by a test") {
        assert!(Instant::now() < deadline, "pod 2 parks on Permit");
        std::thread::yield_now();
    }
    let mut results = collect(&r.results, 5);
    results.sort_by_key(|x| x.job.pod.uid);
    let bound: Vec<bool> = results.iter().map(|x| x.outcome == BindOutcome::Bound).collect();
    assert_eq!(bound, [false, false, false, true, false]);
    let states: Vec<_> = (1..=5).map(|u| cache.state(PodUid(u))).collect();
    use crate::cache::PodState::*;
    assert_eq!(states, [(Forgotten, None), (Forgotten, None), (Forgotten, None), (Bound, Some(7)), (Initial, None)]);
    let errors: Vec<String> = r.binder.take_cache_errors().iter().map(|e| e.to_string()).collect();
    assert_eq!(errors, ["pod-00000005: cannot forget a pod in state Initial"]);
}

#[test]
fn batches_bind_every_pod_and_park_the_ones_waiting_on_permit() {
    // 1 ms binds, 8 tokens: batches of 5 keep at most 8 pods in flight; the Permit-waiting pod in
    // each batch is parked until allowed, the others go to the workers together.
    let probe = Arc::new(Probe::default());
    let o = SimOverrides { bind_latency_ms: Some(1.0), ..Default::default() };
    let config = SimConfig::zero_latency().with_overrides(&o).unwrap();
    let r = rig(config, TimeMode::Wall, 2, 8, probe.clone(), None);
    let mut parked = Vec::new();
    for b in 0..20u64 {
        let jobs: Vec<BindJob> = (0..5u64)
            .map(|i| {
                let u = b * 5 + i;
                let job = BindJob::new(test_pod(u, "n"));
                if i == 0 {
                    parked.push(PodUid(u));
                    job.with_permit_wait(Duration::from_secs(30))
                } else {
                    job
                }
            })
            .collect();
        r.binder.submit_batch(jobs);
        assert!(r.binder.in_flight() <= 8);
        // Parked pods hold tokens: release them so the next batch can get its own.
        for uid in parked.drain(..) {
            assert!(r.binder.allow(uid), "{uid} was parked on Permit");
        }
    }
    let results = collect(&r.results, 100);
    assert!(results.iter().all(|x| x.outcome == BindOutcome::Bound));
    let uids: BTreeSet<u64> = results.iter().map(|x| x.job.pod.uid.0).collect();
    assert_eq!(uids, (0..100).collect::<BTreeSet<u64>>(), "one result per pod");
    assert_eq!(r.binder.stats().permit_waits.load(Ordering::Relaxed), 20);
    assert!(probe.max_active.load(Ordering::SeqCst) <= 8, "in-flight bound held across batches");
    r.binder.submit_batch(Vec::new());
    assert_eq!(r.binder.in_flight(), 0);
}

#[test]
fn tokens_count_what_is_taken_and_a_taker_sleeps_until_one_comes_back() {
    let t = Arc::new(Tokens::new(3));
    // (takes tried, gives) -> taken after, and whether the last try succeeded.
    assert!(t.try_take() && t.try_take() && t.try_take());
    assert!(!t.try_take(), "no fourth token");
    assert_eq!(t.taken(), 3);
    t.give();
    assert_eq!(t.taken(), 2);
    assert!(t.try_take());
    // A blocked taker wakes on a give from another thread, many times over.
    let done = Arc::new(AtomicUsize::new(0));
    let (t2, d2) = (t.clone(), done.clone());
    let taker = std::thread::spawn(move || {
        for _ in 0..1000 {
            t2.take();
            d2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let mut given = 0;
    while done.load(std::sync::atomic::Ordering::SeqCst) < 1000 {
        if given < 1000 && t.taken() == 3 {
            t.give();
            given += 1;
        }
        std::thread::yield_now();
    }
    taker.join().expect("taker");
    assert_eq!(given, 1000);
    assert_eq!(t.taken(), 3);
}

#[test]
fn end_binding_gives_the_result_back_instead_of_sending_it() {
    // The reader of the agent's events is this test (no router), as the run's scheduling thread.
    let (events_tx, events) = crossbeam_channel::unbounded();
    let agent =
        Arc::new(SimAgent::new(SimConfig::zero_latency(), events_tx, Arc::new(WallClock::new()), TimeMode::Wall));
    let (results_tx, results) = crossbeam_channel::unbounded();
    let cache = Arc::new(AssumeCache::new());
    let binder = Binder::start(1, 4, agent, Arc::new(NoPlugins), Some(cache.clone()), results_tx);
    for uid in 1..=3u64 {
        cache.assume(PodUid(uid), 1).expect("assume");
    }
    binder.submit_batch((1..=3).map(|u| BindJob::new(test_pod(u, "n1"))).collect());
    assert_eq!(binder.in_flight(), 3);
    let mut ended = Vec::new();
    while ended.len() < 3 {
        let ev: AgentEvent = events.recv_timeout(Duration::from_secs(30)).expect("an agent event");
        // (event kind) -> whether it ends a binding cycle: only Bound here.
        match binder.end_binding(&ev) {
            Some(r) => {
                assert_eq!(ev.kind, AgentEventKind::Bound, "{ev:?}");
                assert_eq!(r.outcome, BindOutcome::Bound);
                ended.push(r.job.pod.uid.0);
            }
            None => assert_ne!(ev.kind, AgentEventKind::Bound, "{ev:?}"),
        }
    }
    ended.sort_unstable();
    assert_eq!(ended, vec![1, 2, 3]);
    assert_eq!(binder.in_flight(), 0, "every token is back");
    assert!(results.try_recv().is_err(), "nothing was sent on the results channel");
    // An event for a pod not in flight ends nothing.
    assert!(binder.end_binding(&AgentEvent { uid: PodUid(99), kind: AgentEventKind::Bound, at_nanos: 1 }).is_none());
}
