//! Queue scripts: the gates' effect on fixed scripts (the same scripts go to the oracle in the
//! ignored test), the generator's coverage, and bad scripts.

use super::*;

fn step(op: &str) -> Step {
    Step { op: op.into(), ..Step::default() }
}

fn on(op: &str, pod: &str) -> Step {
    Step { op: op.into(), pod: pod.into(), ..Step::default() }
}

fn add(pod: &str, priority: i32) -> Step {
    Step { priority, ..on("add", pod) }
}

fn fail(pod: &str, plugin: &str) -> Step {
    Step { plugins: vec![plugin.into()], ..on("fail", pod) }
}

fn advance(ms: u64) -> Step {
    Step { ms, ..step("advance") }
}

fn event(name: &str) -> Step {
    Step { event: name.into(), ..step("event") }
}

/// The pods popped by each step of `script` (None: no pop or nothing to pop).
fn pops(states: &[State]) -> Vec<Option<String>> {
    states.iter().map(|s| s.popped.clone()).collect()
}

/// SchedulerPopFromBackoffQ: a rejected pod moved to backoffQ by an event is popped at once when
/// activeQ is empty (on), or only after the flush that follows its backoff (off); and two pods whose
/// backoff ends in one 1-second window (1.2 s, 1.7 s) pop at 1.5 s by priority (on), or wait for the
/// 2 s flush (off).
fn pop_from_backoff_scripts() -> Vec<(Script, Vec<Option<&'static str>>)> {
    let one = |gate| {
        let steps = vec![
            add("a", 0),
            step("pop"),
            advance(300),
            fail("a", "NodeResourcesFit"),
            event("NodeAdd"),
            step("pop"),
            advance(1_700),
            step("pop"),
        ];
        Script { pop_from_backoff_q: gate, steps }
    };
    // a fails at 0.2 s (expiry 1.2 s), b (priority 10) at 0.7 s (expiry 1.7 s): the same window.
    let two = |gate| {
        let steps = vec![
            add("a", 0),
            advance(1),
            add("b", 10),
            step("pop"),
            step("pop"),
            advance(199),
            fail("b", "NodeAffinity"),
            advance(500),
            fail("a", "NodeAffinity"),
            event("NodeAdd"),
            advance(800),
            step("pop"),
            step("pop"),
            advance(500),
            step("pop"),
            step("pop"),
        ];
        Script { pop_from_backoff_q: gate, steps }
    };
    let p = |s: &'static str| Some(s);
    vec![
        (one(true), vec![None, p("a"), None, None, None, p("a"), None, None]),
        (one(false), vec![None, p("a"), None, None, None, None, None, p("a")]),
        (
            two(true),
            vec![
                None,
                None,
                None,
                p("b"),
                p("a"),
                None,
                None,
                None,
                None,
                None,
                None,
                p("b"),
                p("a"),
                None,
                None,
                None,
            ],
        ),
        (
            two(false),
            vec![
                None,
                None,
                None,
                p("b"),
                p("a"),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                p("b"),
                p("a"),
            ],
        ),
    ]
}

#[test]
fn pop_from_backoff_gate_changes_the_trace() {
    for (script, want) in pop_from_backoff_scripts() {
        let states = run_ours(&script).unwrap();
        let want: Vec<Option<String>> = want.into_iter().map(|p| p.map(str::to_string)).collect();
        assert_eq!(pops(&states), want, "popFromBackoffQ {}", script.pop_from_backoff_q);
    }
}

/// The fixes verify --queue-random found, as scripts: a gated pod keeps its add time when ungated
/// (it pops before a later pod of the same priority); a pod activated while in flight comes back to
/// backoffQ though its plugin's hint never queues; a leftover flush during a pod's attempt does too.
#[test]
fn queue_fixes_found_by_the_oracle() {
    let gated = Script {
        pop_from_backoff_q: true,
        steps: vec![Step { gated: true, ..add("g", 0) }, advance(1), add("b", 0), on("ungate", "g"), step("pop")],
    };
    let states = run_ours(&gated).unwrap();
    assert_eq!(states[4].popped.as_deref(), Some("g"), "{states:?}");

    // NodeName's hint queues only on NodeAdd; NodeDelete never requeues a pod it rejected.
    for (activate, want) in [(true, "backoff"), (false, "unschedulable")] {
        let mut steps = vec![add("a", 0), step("pop")];
        if activate {
            steps.push(on("activate", "a"));
        }
        steps.extend([event("NodeDelete"), fail("a", "NodeName")]);
        let states = run_ours(&Script { pop_from_backoff_q: true, steps }).unwrap();
        let last = states.last().unwrap();
        let got = if last.backoff == ["a"] { "backoff" } else { "unschedulable" };
        assert_eq!(got, want, "activate {activate}: {last:?}");
    }

    // b waits in unschedulablePods past 5 min; a is in flight when the 330 s flush takes b.
    for (flush_during, want) in [(true, "backoff"), (false, "unschedulable")] {
        let mut steps = vec![add("b", 0), step("pop"), advance(1), fail("b", "NodeName"), advance(1), add("a", 10)];
        if flush_during {
            steps.extend([step("pop"), advance(330_000)]);
        } else {
            steps.extend([advance(330_000), step("pop")]);
        }
        steps.push(fail("a", "NodeName"));
        let states = run_ours(&Script { pop_from_backoff_q: true, steps }).unwrap();
        let last = states.last().unwrap();
        assert!(last.unschedulable.contains(&"a".to_string()) == (want == "unschedulable"), "{flush_during}: {last:?}");
    }
}

#[test]
fn generated_scripts_cover_every_step_kind_and_both_gates() {
    let mut ops = BTreeSet::new();
    let mut events = BTreeSet::new();
    let mut gates = BTreeSet::new();
    for i in 0..60 {
        let s = generate(7, i);
        gates.insert(s.pop_from_backoff_q);
        assert_eq!(s, generate(7, i), "same seed and index, same script");
        for st in &s.steps {
            ops.insert(st.op.clone());
            if st.op == "event" {
                events.insert(format!("{}{}", st.event, st.change));
            }
        }
        let states = run_ours(&s).unwrap();
        assert_eq!(states.len(), s.steps.len());
    }
    let all = ["activate", "add", "advance", "delete", "done", "error", "event", "fail", "pop", "ungate", "update"];
    assert_eq!(ops.into_iter().collect::<Vec<_>>(), all);
    assert_eq!(events.len(), 10, "{events:?}");
    assert_eq!(gates.len(), 2);
}

#[test]
fn scripts_that_make_no_sense_are_refused_naming_the_step() {
    let cases: &[(Vec<Step>, &str)] = &[
        (vec![on("done", "a")], "steps[0]: done: pod \"a\" is not in flight"),
        (vec![add("a", 0), add("a", 0)], "steps[1]: pod \"a\" added twice"),
        (vec![add("a", 0), step("pop"), fail("a", "Nope")], "steps[2]: fail: unknown plugin \"Nope\""),
        (vec![step("jump")], "steps[0]: unknown op \"jump\""),
        (vec![on("activate", "x")], "steps[0]: pod \"x\" was not added"),
    ];
    for (steps, want) in cases {
        let err = run_ours(&Script { pop_from_backoff_q: true, steps: steps.clone() }).unwrap_err();
        assert_eq!(err, *want);
    }
    let parsed: Result<Script, _> = serde_json::from_str(r#"{"popFromBackoffQ":true,"steps":[{"op":"pop","when":1}]}"#);
    assert!(parsed.unwrap_err().to_string().contains("unknown field `when`"));
}

#[test]
fn the_first_difference_names_the_step_and_the_prefix() {
    let script = Script { pop_from_backoff_q: false, steps: vec![add("a", 0), step("pop")] };
    let ours = run_ours(&script).unwrap();
    assert_eq!(first_difference(&script, &ours, &ours), None);
    let mut theirs = ours.clone();
    theirs[1].popped = None;
    theirs[1].active = vec!["a".into()];
    let d = first_difference(&script, &ours, &theirs).unwrap();
    assert!(d.starts_with("step 1 ({\"op\":\"pop\"}): schedperf {\"popped\":\"a\""), "{d}");
    assert!(d.ends_with(r#"{"popFromBackoffQ":false,"steps":[{"op":"add","pod":"a"},{"op":"pop"}]}"#), "{d}");
}

/// The same scripts on upstream's queue: the gate changes its trace the same way.
#[test]
#[ignore = "needs the oracle: SCHEDPERF_ORACLE=$(scripts/oracle.sh | tail -1) cargo test --lib queuetrace -- --ignored"]
fn the_oracle_agrees_on_the_gate_scripts() {
    let bin = std::env::var("SCHEDPERF_ORACLE").expect("SCHEDPERF_ORACLE: the oracle binary");
    let mut oracle = Oracle::start_cmd(std::path::Path::new(&bin), "queue", Duration::from_secs(60)).unwrap();
    for (script, _) in pop_from_backoff_scripts() {
        let theirs = oracle.call(&serde_json::to_value(&script).unwrap()).unwrap();
        let theirs: Vec<State> = serde_json::from_value(theirs["states"].clone()).unwrap();
        assert_eq!(first_difference(&script, &run_ours(&script).unwrap(), &theirs), None);
    }
}
