use super::*;
use crate::agent::conformance::{run_conformance, test_pod, Driver};
use crate::clock::VirtualClock;
use crate::error::InputError;
use crossbeam_channel::Receiver;
use std::path::Path;

fn agents_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/agents")
}

fn load(name: &str) -> SimConfig {
    SimConfig::load(&agents_dir().join(name)).unwrap()
}

fn maker(config: SimConfig, mode: TimeMode) -> impl Fn(Sender<AgentEvent>, Arc<dyn Clock>) -> Arc<dyn NodeAgent> {
    move |tx, clock| Arc::new(SimAgent::new(config.clone(), tx, clock, mode)) as Arc<dyn NodeAgent>
}

#[test]
fn conformance_zero_latency_wall() {
    run_conformance(&maker(load("zero-latency.yaml"), TimeMode::Wall), Driver::Wall);
}

#[test]
fn conformance_zero_latency_virtual() {
    run_conformance(&maker(load("zero-latency.yaml"), TimeMode::Virtual), Driver::Virtual);
}

#[test]
fn conformance_realistic_virtual() {
    run_conformance(&maker(load("realistic.yaml"), TimeMode::Virtual), Driver::Virtual);
}

#[test]
fn conformance_short_delays_wall() {
    // Exercises the timer thread with real waits, kept short.
    let o = SimOverrides {
        bind_latency_ms: Some(1.0),
        start_latency_ms: Some(3.0),
        jitter_ms: Some(2.0),
        ..Default::default()
    };
    let config = load("realistic.yaml").with_overrides(&o).unwrap();
    run_conformance(&maker(config, TimeMode::Wall), Driver::Wall);
}

#[test]
fn stage_files_load() {
    let check =
        |file: &str, bind: (u64, u64), start: (u64, u64), delete: (u64, u64), bind_fail: f64, interval_us: u64| {
            let c = load(file);
            assert_eq!(c.name, file.trim_end_matches(".yaml"));
            assert_eq!((c.bind.delay_us, c.bind.jitter_us), bind, "{file} bind");
            assert_eq!((c.start.delay_us, c.start.jitter_us), start, "{file} start");
            assert_eq!((c.delete.delay_us, c.delete.jitter_us), delete, "{file} delete");
            assert_eq!(c.bind_failure_rate, bind_fail, "{file}");
            assert_eq!(c.node_failure_interval_us, interval_us, "{file}");
        };
    check("zero-latency.yaml", (0, 0), (0, 0), (0, 0), 0.0, 0);
    check("realistic.yaml", (4000, 2000), (1_000_000, 2_000_000), (900_000, 200_000), 0.0, 0);
    check("chaos.yaml", (4000, 2000), (1_000_000, 2_000_000), (900_000, 200_000), 0.05, 60_000_000);
    assert!(load("zero-latency.yaml").is_zero_latency());
    assert!(!load("realistic.yaml").is_zero_latency());
}

#[test]
fn bad_stage_files_name_the_field() {
    let check = |text: &str, path: &str, message_part: &str| {
        let e: InputError = SimConfig::parse("a.yaml", text).unwrap_err();
        assert_eq!((e.file.as_str(), e.path.as_str()), ("a.yaml", path), "{text}: {e}");
        assert!(e.message.contains(message_part), "{text}: {e}");
    };
    check("stages: {bind: {delayMs: -1}}", "stages.bind.delayMs", "between 0 and one year");
    check("stages: {start: {jitterMs: .nan}}", "stages.start.jitterMs", "between 0 and one year");
    check("stages: {bind: {delay: 5}}", "stages.bind.delay", "unknown field");
    check("stages: {bind: {delayMs: fast}}", "stages.bind.delayMs", "invalid type");
    check("failures: {bindFailureRate: 1.5}", "failures.bindFailureRate", "probability");
    check("failures: {nodeFailures: [{node: '', atMs: 5}]}", "failures.nodeFailures[0].node", "node name");
    check("failures: {nodeFailures: [{node: n, atMs: -5}]}", "failures.nodeFailures[0].atMs", "milliseconds");
    check("colour: blue", "colour", "unknown field");
    check("[1, 2]", "", "invalid type");
    let missing = SimConfig::load(Path::new("/nonexistent/agent.yaml")).unwrap_err();
    assert_eq!(missing.file, "/nonexistent/agent.yaml");
}

#[test]
fn overrides_apply_and_are_validated() {
    let base = load("realistic.yaml");
    let o = SimOverrides {
        bind_latency_ms: Some(2.5),
        start_latency_ms: Some(0.0),
        jitter_ms: Some(1.0),
        bind_failure_rate: Some(0.25),
    };
    let c = base.clone().with_overrides(&o).unwrap();
    assert_eq!(
        (c.bind, c.start, c.delete.jitter_us),
        (Stage { delay_us: 2500, jitter_us: 1000 }, Stage { delay_us: 0, jitter_us: 1000 }, 1000)
    );
    assert_eq!(c.bind_failure_rate, 0.25);
    assert_eq!(base.clone().with_overrides(&SimOverrides::default()).unwrap(), base);
    let check = |o: SimOverrides, flag: &str| {
        assert_eq!(base.clone().with_overrides(&o).unwrap_err().file, flag);
    };
    check(SimOverrides { bind_latency_ms: Some(-1.0), ..Default::default() }, "--sim-bind-latency-ms");
    check(SimOverrides { start_latency_ms: Some(f64::INFINITY), ..Default::default() }, "--sim-start-latency-ms");
    check(SimOverrides { jitter_ms: Some(-0.5), ..Default::default() }, "--sim-jitter-ms");
    check(SimOverrides { bind_failure_rate: Some(2.0), ..Default::default() }, "--sim-bind-failure-rate");
}

/// A virtual-time run: binds `uids` (in the given order) at time 0 and drives the agent until idle.
/// Returns every event and the receiver is drained.
fn run_virtual(config: SimConfig, uids: &[u64], nodes: u64) -> Vec<AgentEvent> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let clock = Arc::new(VirtualClock::new());
    let agent = SimAgent::new(config, tx, clock.clone(), TimeMode::Virtual);
    for &u in uids {
        agent.bind(test_pod(u, &format!("node-{}", u % nodes)));
    }
    drive(&agent, &clock, &rx, |_| false)
}

/// Advances virtual time to each next event until no event is pending or `stop` says so.
fn drive(
    agent: &SimAgent,
    clock: &VirtualClock,
    rx: &Receiver<AgentEvent>,
    stop: impl Fn(&[AgentEvent]) -> bool,
) -> Vec<AgentEvent> {
    let mut events: Vec<AgentEvent> = rx.try_iter().collect();
    while let Some(t) = agent.next_due_nanos() {
        if stop(&events) {
            break;
        }
        clock.advance_to(t);
        agent.advance_to(t);
        events.extend(rx.try_iter());
    }
    events
}

#[test]
fn seeded_jitter_is_reproducible_and_independent_of_call_order() {
    let config = load("realistic.yaml").with_seed(7);
    let forward: Vec<u64> = (0..200).collect();
    let backward: Vec<u64> = (0..200).rev().collect();
    let sorted = |mut v: Vec<AgentEvent>| {
        v.sort_by_key(|e| (e.uid, e.at_nanos));
        v
    };
    let a = sorted(run_virtual(config.clone(), &forward, 10));
    assert_eq!(a, sorted(run_virtual(config.clone(), &forward, 10)), "same seed, same events");
    assert_eq!(a, sorted(run_virtual(config.clone(), &backward, 10)), "bind order does not matter");
    assert_ne!(a, sorted(run_virtual(config.with_seed(8), &forward, 10)), "another seed, other delays");
    // Every delay lies within its stage's [delay, delay + jitter].
    for uid in 0..200 {
        let at = |kind: AgentEventKind| a.iter().find(|e| e.uid == PodUid(uid) && e.kind == kind).unwrap().at_nanos;
        let bound = at(AgentEventKind::Bound);
        let running = at(AgentEventKind::Running);
        assert!((4_000_000..=6_000_000).contains(&bound), "bind delay {bound}");
        assert!((1_000_000_000..=3_000_000_000).contains(&(running - bound)), "start delay {}", running - bound);
    }
}

#[test]
fn failure_rates_hold_over_ten_thousand_pods() {
    let check = |bind_rate: f64, start_rate: f64| {
        let mut config = SimConfig::zero_latency().with_seed(3);
        config.bind_failure_rate = bind_rate;
        config.start_failure_rate = start_rate;
        let uids: Vec<u64> = (0..10_000).collect();
        let events = run_virtual(config, &uids, 50);
        let count = |f: &dyn Fn(&AgentEventKind) -> bool| events.iter().filter(|e| f(&e.kind)).count() as f64;
        let bind_failed = count(&|k| matches!(k, AgentEventKind::BindFailed(_)));
        let bound = count(&|k| *k == AgentEventKind::Bound);
        let failed = count(&|k| matches!(k, AgentEventKind::Failed(_)));
        assert_eq!(bind_failed + bound, 10_000.0);
        // Binomial standard deviation at p = 0.05, n = 10k is ~0.2%: allow 1%.
        assert!((bind_failed / 10_000.0 - bind_rate).abs() < 0.01, "bind failures {bind_failed} at rate {bind_rate}");
        assert!((failed / bound - start_rate).abs() < 0.01, "start failures {failed} of {bound} at rate {start_rate}");
    };
    check(0.0, 0.0);
    check(0.05, 0.0);
    check(0.05, 0.1);
    check(0.5, 0.01);
}

#[test]
fn a_retried_bind_draws_a_new_outcome() {
    let mut config = SimConfig::zero_latency().with_seed(11);
    config.bind_failure_rate = 0.5;
    let (tx, rx) = crossbeam_channel::unbounded();
    let agent = SimAgent::new(config, tx, Arc::new(VirtualClock::new()), TimeMode::Virtual);
    let mut outcomes = Vec::new();
    for _ in 0..32 {
        agent.bind(test_pod(1, "n"));
        let e = rx.try_recv().unwrap();
        outcomes.push(e.kind == AgentEventKind::Bound);
        if e.kind == AgentEventKind::Bound {
            agent.delete(PodUid(1));
        }
        rx.try_iter().for_each(drop);
    }
    assert!(outcomes.contains(&true) && outcomes.contains(&false), "{outcomes:?}");
}

#[test]
fn node_failure_evicts_exactly_that_nodes_pods() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let clock = Arc::new(VirtualClock::new());
    let mut config = load("realistic.yaml");
    config.node_failures = vec![NodeFailure { node: "node-2".into(), at_us: 10_000_000 }];
    let agent = SimAgent::new(config, tx, clock.clone(), TimeMode::Virtual);
    for u in 0..40 {
        agent.bind(test_pod(u, &format!("node-{}", u % 4)));
    }
    // A pod bound to node-2 just before the failure is still binding: its bind fails instead.
    clock.advance_to(10_000_000_000 - 1_000_000);
    agent.bind(test_pod(100, "node-2"));
    let events = drive(&agent, &clock, &rx, |_| false);
    let evicted: Vec<u64> =
        events.iter().filter(|e| matches!(e.kind, AgentEventKind::Evicted(_))).map(|e| e.uid.0).collect();
    let expected: Vec<u64> = (0..40).filter(|u| u % 4 == 2).collect();
    assert_eq!(evicted, expected);
    assert!(events.iter().all(|e| !matches!(&e.kind, AgentEventKind::Evicted(r) if r != "node node-2 failed")));
    let p100: Vec<&AgentEventKind> = events.iter().filter(|e| e.uid == PodUid(100)).map(|e| &e.kind).collect();
    assert_eq!(p100, vec![&AgentEventKind::BindFailed("node node-2 failed".into())]);
    let held = agent.pods();
    assert_eq!(held.len(), 30);
    assert!(held.iter().all(|(_, n)| n != "node-2"));
    // The node is usable again.
    agent.bind(test_pod(200, "node-2"));
    drive(&agent, &clock, &rx, |_| false);
    assert!(agent.pods().contains(&(PodUid(200), "node-2".to_string())));
}

#[test]
fn fail_node_evicts_now() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let agent = SimAgent::new(SimConfig::zero_latency(), tx, Arc::new(VirtualClock::new()), TimeMode::Virtual);
    for u in 0..6 {
        agent.bind(test_pod(u, if u < 2 { "a" } else { "b" }));
    }
    rx.try_iter().for_each(drop);
    agent.fail_node("a");
    let evicted: Vec<u64> =
        rx.try_iter().filter(|e| matches!(e.kind, AgentEventKind::Evicted(_))).map(|e| e.uid.0).collect();
    assert_eq!(evicted, vec![0, 1]);
    assert_eq!(agent.pods().len(), 4);
}

#[test]
fn random_node_failures_evict_pods() {
    let uids: Vec<u64> = (0..1000).collect();
    let (tx, rx) = crossbeam_channel::unbounded();
    let clock = Arc::new(VirtualClock::new());
    let agent = SimAgent::new(load("chaos.yaml"), tx, clock.clone(), TimeMode::Virtual);
    for &u in &uids {
        agent.bind(test_pod(u, &format!("node-{}", u % 20)));
    }
    // Ten simulated minutes: about ten random failures at a one-minute mean.
    let events = drive(&agent, &clock, &rx, |_| clock.now_nanos() > 600_000_000_000);
    let evicted_nodes: std::collections::BTreeSet<u64> =
        events.iter().filter(|e| matches!(e.kind, AgentEventKind::Evicted(_))).map(|e| e.uid.0 % 20).collect();
    assert!(evicted_nodes.len() >= 2, "nodes failed: {evicted_nodes:?}");
    let bind_failed = events.iter().filter(|e| matches!(e.kind, AgentEventKind::BindFailed(_))).count();
    assert!((20..=90).contains(&bind_failed), "5% of 1000 binds fail: {bind_failed}");
}

#[test]
fn virtual_time_runs_five_thousand_slow_pods_fast() {
    let started = std::time::Instant::now();
    let uids: Vec<u64> = (0..5000).collect();
    let events = run_virtual(load("realistic.yaml"), &uids, 100);
    let running = events.iter().filter(|e| e.kind == AgentEventKind::Running).count();
    assert_eq!(running, 5000);
    let last = events.iter().map(|e| e.at_nanos).max().unwrap();
    assert!(last >= 2_000_000_000, "simulated time spans seconds: {last}");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}

#[test]
fn delete_during_bind_cancels_it() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let clock = Arc::new(VirtualClock::new());
    let agent = SimAgent::new(load("realistic.yaml"), tx, clock.clone(), TimeMode::Virtual);
    agent.bind(test_pod(1, "n"));
    agent.delete(PodUid(1));
    let kinds: Vec<AgentEventKind> = drive(&agent, &clock, &rx, |_| false).into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![AgentEventKind::Deleted]);
    assert!(agent.pods().is_empty());
}

#[test]
fn bind_after_shutdown_fails() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let agent = SimAgent::new(SimConfig::zero_latency(), tx, Arc::new(VirtualClock::new()), TimeMode::Wall);
    agent.shutdown().unwrap();
    agent.bind(test_pod(1, "n"));
    assert!(matches!(rx.try_recv().unwrap().kind, AgentEventKind::BindFailed(_)));
}
