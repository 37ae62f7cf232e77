//! Feature gates the engine honours, shown changing a run: SchedulerAsyncPreemption (when the
//! victims go, and whether the scheduling thread waits for them) and SchedulerPopFromBackoffQ (when a
//! preemptor that backs off is retried), in virtual time from the run's event trace. The oracle's side:
//! `tests/gates_upstream.rs` (SchedulerAsyncPreemption on the real kube-scheduler, the same workload file),
//! `schedperf verify --queue-random` (SchedulerPopFromBackoffQ, upstream's PriorityQueue, both values).

use super::driver::run_workload;
use super::RunOptions;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const ASYNC: &str = "SchedulerAsyncPreemption";
const POP: &str = "SchedulerPopFromBackoffQ";

/// `tests/data/async-preemption.yaml` (the workload `tests/gates_upstream.rs` also runs on the real
/// kube-scheduler): two 4-CPU nodes filled by 8 pods of 900m; one pod of priority 10 that needs 3 CPU
/// (3 victims); then 4 pods of 100m, which fit beside the victims; a barrier. Its `Async` workload (no
/// gates of its own) with `gates` as the test case's.
fn workload(gates: &[(&str, bool)]) -> crate::workload::ResolvedWorkload {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/async-preemption.yaml");
    let mut tcs = crate::workload::load_workload_file(&file).unwrap();
    let tc = &mut tcs[0];
    tc.feature_gates = gates.iter().map(|(g, v)| (g.to_string(), *v)).collect();
    let w = tc.workloads.iter().find(|w| w.name == "Async").unwrap();
    assert!(w.feature_gates.is_empty());
    crate::workload::resolve(tc, w).unwrap()
}

/// What the trace says about the one preemption: the victims' deletion times and the times of other
/// pods' attempts, both relative to the nomination, and when the preemptor was assumed.
struct Seen {
    deletions_ms: Vec<f64>,
    attempts_before_last_deletion: usize,
    assumed_nanos: u64,
    honoured: Vec<String>,
}

fn run(gates: &[(&str, bool)]) -> Seen {
    let w = workload(gates);
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let opts =
        RunOptions { virtual_time: true, progress: false, events_file: Some(events.clone()), ..RunOptions::default() };
    std::fs::File::create(&events).unwrap();
    let r = run_workload(&w, &opts).unwrap();
    assert!(r.outcome.passed, "{:?}", r.outcome);
    assert_eq!((r.counters.preemptions, r.counters.preemption_victims), (1, 3), "{gates:?}");
    assert_eq!(r.accounting.bound, 13 - 3, "{gates:?}: every pod but the victims is bound");
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&events).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let at = |l: &serde_json::Value| l["tNanos"].as_u64().unwrap();
    let nominated = lines.iter().find(|l| l["event"] == "nominated").expect("a nomination");
    let (preemptor, t0) = (nominated["pod"].as_str().unwrap().to_string(), at(nominated));
    let victims: Vec<&str> =
        lines.iter().filter(|l| l["event"] == "preempted").map(|l| l["pod"].as_str().unwrap()).collect();
    let deletions: Vec<u64> = lines
        .iter()
        .filter(|l| l["event"] == "deleted" && victims.contains(&l["pod"].as_str().unwrap()))
        .map(at)
        .collect();
    let last = *deletions.iter().max().unwrap();
    let attempts_before_last_deletion = lines
        .iter()
        .filter(|l| l["event"] == "assumed" && l["pod"] != preemptor.as_str() && at(l) > t0 && at(l) < last)
        .count();
    let assumed = lines.iter().find(|l| l["event"] == "assumed" && l["pod"] == preemptor.as_str()).unwrap();
    Seen {
        deletions_ms: deletions.iter().map(|t| (t - t0) as f64 / MS as f64).collect(),
        attempts_before_last_deletion,
        assumed_nanos: at(assumed),
        honoured: r.feature_gates_honoured,
    }
}

#[test]
fn async_preemption_and_pop_from_backoff_change_the_run() {
    // (gates, victims' deletions after the nomination (ms), small pods scheduled before the last
    // victim went, the preemptor assumed by (ns), gates reported honoured).
    type Case = (&'static [(&'static str, bool)], &'static [f64], usize, std::ops::Range<u64>, &'static [&'static str]);
    let cases: &[Case] = &[
        // v1.37.2 defaults: the cycle ends at once; 2 victims go after their two API calls (2 ms), the
        // last after 2 ms more; the small pods are scheduled meanwhile; the preemptor, backing off,
        // is popped from backoffQ as soon as the last victim is gone and activeQ is empty.
        (&[], &[2.0, 2.0, 4.0], 4, 4 * MS..5 * MS, &[]),
        // Synchronous preemption: PostFilter deletes all 3 before the cycle ends (the thread waits
        // 2 ms), so nothing else is scheduled in between.
        (&[(ASYNC, false)], &[2.0, 2.0, 2.0], 0, 2 * MS..3 * MS, &["SchedulerAsyncPreemption=false"]),
        // Without popping from backoffQ the preemptor waits for its backoff (1 s from its failure)
        // and the 1-second flush tick after it: 2 s.
        (&[(POP, false)], &[2.0, 2.0, 4.0], 4, 2 * S..2 * S + MS, &["SchedulerPopFromBackoffQ=false"]),
        (
            &[(ASYNC, false), (POP, false)],
            &[2.0, 2.0, 2.0],
            0,
            2 * S..2 * S + MS,
            &["SchedulerAsyncPreemption=false", "SchedulerPopFromBackoffQ=false"],
        ),
    ];
    for (gates, deletions_ms, between, assumed, honoured) in cases {
        let seen = run(gates);
        let mut got = seen.deletions_ms.clone();
        got.sort_by(f64::total_cmp);
        let rounded: Vec<f64> = got.iter().map(|d| (d * 10.0).round() / 10.0).collect();
        assert_eq!(rounded, *deletions_ms, "{gates:?}");
        assert_eq!(seen.attempts_before_last_deletion, *between, "{gates:?}");
        assert!(assumed.contains(&seen.assumed_nanos), "{gates:?}: preemptor assumed at {} ns", seen.assumed_nanos);
        assert_eq!(seen.honoured, *honoured, "{gates:?}");
    }
}
