use std::sync::Arc;

use super::*;
use crate::agent::conformance::{run_conformance, test_pod, Driver};
use crate::agent::sim::{SimAgent, SimConfig, TimeMode};
use crate::agent::{AgentEvent, AgentEventKind, NodeAgent, PodUid};
use crate::clock::{Clock, VirtualClock};

fn stage(name: &str, selector: &str, delay: &str, next: &str) -> String {
    format!(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {{name: {name}}}\nspec:\n  resourceRef: {{apiGroup: v1, kind: Pod}}\n  selector: {selector}\n{delay}  next: {next}\n"
    )
}

/// pod-ready after 1-3 s, pod-delete after exactly 0.5 s.
fn delayed_stages() -> String {
    [
        stage(
            "pod-ready",
            "{matchExpressions: [{key: '.metadata.deletionTimestamp', operator: DoesNotExist}, {key: '.status.podIP', operator: DoesNotExist}]}",
            "  delay: {durationMilliseconds: 1000, jitterDurationMilliseconds: 3000}\n",
            "{statusTemplate: \"podIP: 10.0.0.1\\nphase: Running\\n\"}",
        ),
        stage(
            "pod-delete",
            "{matchExpressions: [{key: '.metadata.deletionTimestamp', operator: Exists}]}",
            "  delay: {durationMilliseconds: 500}\n",
            "{delete: true}",
        ),
    ]
    .join("---\n")
}

fn at_of(events: &[AgentEvent], uid: u64, pred: impl Fn(&AgentEventKind) -> bool) -> Option<u64> {
    events.iter().find(|e| e.uid == PodUid(uid) && pred(&e.kind)).map(|e| e.at_nanos)
}

#[test]
fn stage_delays_play_out_in_virtual_time() {
    let config = SimConfig::parse("stages.yaml", &delayed_stages()).unwrap().with_seed(7);
    assert_eq!(config.kwok_stages.len(), 2);
    assert!(!config.is_zero_latency());
    let (tx, rx) = crossbeam_channel::unbounded();
    let clock = Arc::new(VirtualClock::new());
    let agent = SimAgent::new(config, tx, clock.clone(), TimeMode::Virtual);
    for uid in 1..=50 {
        agent.bind(test_pod(uid, "node-0"));
    }
    let mut events: Vec<AgentEvent> = Vec::new();
    while let Some(t) = agent.next_due_nanos() {
        clock.advance_to(t);
        agent.advance_to(t);
        events.extend(rx.try_iter());
    }
    let mut running = Vec::new();
    for uid in 1..=50 {
        assert_eq!(at_of(&events, uid, |k| *k == AgentEventKind::Bound), Some(0), "bind is instant");
        let r = at_of(&events, uid, |k| *k == AgentEventKind::Running).expect("every pod runs");
        // KWOK: a uniform delay in [durationMilliseconds, jitterDurationMilliseconds).
        assert!((1_000_000_000..3_000_000_000).contains(&r), "pod {uid} running at {r} ns");
        running.push(r);
    }
    running.sort();
    assert!(running[49] - running[0] > 1_000_000_000, "jitter spreads the starts: {running:?}");
    // Deletion: the pod gets a deletionTimestamp; pod-delete removes it 500 ms later.
    let t0 = clock.now_nanos();
    agent.delete(PodUid(3));
    assert!(rx.try_iter().next().is_none(), "not deleted before its stage fires");
    let due = agent.next_due_nanos().unwrap();
    assert_eq!(due - t0, 500_000_000);
    clock.advance_to(due);
    agent.advance_to(due);
    let ev: Vec<AgentEvent> = rx.try_iter().collect();
    assert_eq!(ev.len(), 1);
    assert_eq!((ev[0].uid, &ev[0].kind, ev[0].at_nanos), (PodUid(3), &AgentEventKind::Deleted, due));
    assert!(!agent.pods().iter().any(|(u, _)| *u == PodUid(3)));
}

#[test]
fn same_seed_same_delays() {
    let run = |seed: u64| {
        let config = SimConfig::parse("s.yaml", &delayed_stages()).unwrap().with_seed(seed);
        let (tx, rx) = crossbeam_channel::unbounded();
        let clock = Arc::new(VirtualClock::new());
        let agent = SimAgent::new(config, tx, clock.clone(), TimeMode::Virtual);
        for uid in 1..=20 {
            agent.bind(test_pod(uid, "n"));
        }
        while let Some(t) = agent.next_due_nanos() {
            clock.advance_to(t);
            agent.advance_to(t);
        }
        rx.try_iter().map(|e| (e.uid, e.at_nanos)).collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn kwok_default_stage_set_drives_the_agent() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/agents/kwok-default.yaml");
    let config = SimConfig::load(&path).unwrap();
    let names: Vec<(&str, StageKind)> = config.kwok_stages.iter().map(|s| (s.name.as_str(), s.kind)).collect();
    assert_eq!(
        names,
        [
            ("pod-ready", StageKind::Pod),
            ("pod-complete", StageKind::Pod),
            ("pod-delete", StageKind::Pod),
            ("node-initialize", StageKind::Node),
            ("node-heartbeat", StageKind::Node)
        ]
    );
    assert_eq!(config.kwok_stages[0].next_phase.as_deref(), Some("Running"));
    assert!(config.kwok_stages[0].next_pod_ip);
    assert_eq!(config.kwok_stages[1].next_phase.as_deref(), Some("Succeeded"));
    assert!(config.kwok_stages[2].next_delete);
    assert_eq!((config.kwok_stages[4].delay_ms, config.kwok_stages[4].jitter_ms), (20_000, Some(25_000)));
    assert!(config.is_zero_latency(), "the default pod stages have no delay");
    let make = move |tx, clock: Arc<dyn Clock>| {
        Arc::new(SimAgent::new(config.clone(), tx, clock, TimeMode::Virtual)) as Arc<dyn NodeAgent>
    };
    run_conformance(&make, Driver::Virtual);
}

#[test]
fn selectors_as_kwok_evaluates_them() {
    let pod = PodView {
        name: "p".into(),
        namespace: "ns".into(),
        node: "n1".into(),
        labels: [("app".to_string(), "web".to_string())].into(),
        host_network: false,
        deleting: false,
        phase: "Running".into(),
        pod_ip: true,
    };
    let s = |labels: &str, exprs: &str| {
        let text = stage("s", &format!("{{matchLabels: {labels}, matchExpressions: {exprs}}}"), "", "{delete: true}");
        parse_stages("s.yaml", &text).unwrap().remove(0)
    };
    let cases: &[(&str, &str, bool)] = &[
        ("{}", "[]", true),
        ("{app: web}", "[]", true),
        ("{app: db}", "[]", false),
        ("{}", "[{key: '.status.phase', operator: In, values: [Running]}]", true),
        ("{}", "[{key: '.status.phase', operator: NotIn, values: [Running]}]", false),
        ("{}", "[{key: '.status.podIP', operator: Exists}]", true),
        ("{}", "[{key: '.metadata.deletionTimestamp', operator: Exists}]", false),
        ("{}", "[{key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job]}]", false),
        ("{}", "[{key: '.metadata.ownerReferences.[].kind', operator: NotIn, values: [Job]}]", true),
        ("{}", "[{key: '.metadata.labels.app', operator: In, values: [web]}]", true),
        ("{}", "[{key: '.spec.nodeName', operator: In, values: [n2]}]", false),
    ];
    for (labels, exprs, want) in cases {
        assert_eq!(pod.matches(&s(labels, exprs)), *want, "{labels} {exprs}");
    }
}

#[test]
fn weights_and_delays_follow_kwok() {
    let mk = |w: u64| KwokStage {
        name: format!("w{w}"),
        kind: StageKind::Pod,
        match_labels: BTreeMap::new(),
        match_annotations: BTreeMap::new(),
        expressions: Vec::new(),
        weight: w,
        delay_ms: 0,
        jitter_ms: None,
        next_phase: None,
        next_pod_ip: false,
        next_delete: false,
    };
    let (a, b, zero) = (mk(2), mk(6), mk(0));
    // Weighted: offset 0..2 picks a, 2..8 picks b; weight 0 never.
    assert_eq!(choose(&[&a, &zero, &b], &mut |_| 1).unwrap().name, "w2");
    assert_eq!(choose(&[&a, &zero, &b], &mut |_| 2).unwrap().name, "w6");
    // All zero: uniform over the matches.
    assert_eq!(choose(&[&zero, &mk(0)], &mut |n| n - 1).unwrap().name, "w0");
    assert!(choose(&[], &mut |_| 0).is_none());
    let mut d = mk(0);
    d.delay_ms = 1000;
    assert_eq!(delay_ms(&d, &mut |_| 99), 1000);
    d.jitter_ms = Some(3000);
    assert_eq!(delay_ms(&d, &mut |n| n - 1), 2999);
    d.jitter_ms = Some(400);
    assert_eq!(delay_ms(&d, &mut |_| 99), 400, "a jitter below the duration is the delay");
}

#[test]
fn malformed_stages_name_the_field() {
    let check = |text: &str, path: &str, part: &str| {
        let e = SimConfig::parse("bad.yaml", text).unwrap_err();
        assert_eq!((e.file.as_str(), e.path.as_str()), ("bad.yaml", path), "{text}: {e}");
        assert!(e.message.contains(part), "{text}: {e}");
    };
    let ok_sel = "{matchExpressions: [{key: '.status.phase', operator: Exists}]}";
    check(
        &stage("s", "{matchExpressions: [{key: '.a', operator: Has}]}", "", "{}"),
        "documents[0].spec.selector.matchExpressions[0].operator",
        "expected In, NotIn",
    );
    check(
        &stage("s", "{matchExpressions: [{key: '.a', operator: In}]}", "", "{}"),
        "documents[0].spec.selector.matchExpressions[0].values",
        "need values",
    );
    check(
        &stage("s", ok_sel, "  delay: {durationMilliseconds: -5}\n", "{}"),
        "documents[0].spec.delay.durationMilliseconds",
        "negative",
    );
    check(
        &stage("s", ok_sel, "  delay: {durationMillis: 5}\n", "{}"),
        "documents[0].spec.delay.durationMillis",
        "unknown field",
    );
    check(&stage("s", ok_sel, "", "{delete: maybe}"), "documents[0].spec.next.delete", "invalid type");
    check(
        &stage("s", ok_sel, "", "{}").replace("kind: Pod", "kind: Deployment"),
        "documents[0].spec.resourceRef",
        "Pods and Nodes only",
    );
    check(
        &format!(
            "{}---\n{}",
            stage("a", ok_sel, "", "{}"),
            stage("b", ok_sel, "", "{}").replace("kind: Stage", "kind: Stages")
        ),
        "documents[1].kind",
        "expected Stage",
    );
}
