//! Virtual time replays: the same churn workload with the chaos agent (bind and start failures, so
//! backoff expiry, churn ticks and the agent's stages interleave) gives the same placements run
//! after run and at any thread count, whatever the machine's speed or load.

use std::path::PathBuf;
use std::process::Command;

fn run_digest(threads: &str) -> (String, serde_json::Value) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["run", "tests/data/churn-chaos.yaml", "--label-filter", "replay", "--virtual-time"])
        .args(["--agent-config", "workloads/agents/chaos.yaml", "--threads", threads, "--format", "json"])
        .current_dir(root)
        .output()
        .expect("schedperf starts");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json report");
    let run = report["runs"][0].clone();
    (run["placementDigest"].as_str().expect("a digest").to_string(), run)
}

#[test]
fn a_virtual_time_churn_run_with_failures_replays() {
    let (first, run) = run_digest("1");
    // The workload exercises what makes timing matter: failed binds retried after backoff, churn.
    assert!(run["counters"]["bindFailures"].as_u64().unwrap() > 0, "{}", run["counters"]);
    assert!(run["accounting"]["created"].as_u64().unwrap() > 800, "{}", run["accounting"]);
    assert_eq!(run["cacheConsistent"], true, "{}", run["cacheDifferences"]);
    let cost = &run["virtualCycleCost"];
    assert!(cost["perAttemptNanos"].as_u64().unwrap() > 0, "the cost model is reported: {cost}");
    let (second, _) = run_digest("1");
    assert_eq!(first, second, "two runs, one placement");
    let (two_threads, _) = run_digest("2");
    assert_eq!(first, two_threads, "--threads 2 places as --threads 1");
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .arg("run")
        .args(args)
        .args(["--label-filter", "replay", "--format", "json"])
        .current_dir(root)
        .output()
        .expect("schedperf starts");
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("json report")
}

#[test]
fn steady_state_creates_pods_beyond_any_planned_count_and_the_cache_keeps_up() {
    // In virtual time the count is exact; the wall-clock run goes through the binder threads.
    let r = run_json(&["tests/data/steady-state.yaml", "--virtual-time"]);
    let run = &r["runs"][0];
    let created = run["accounting"]["created"].as_u64().unwrap();
    assert!(created > 10 * 1024, "far more pods than the 100 planned and than the cache's first segment: {created}");
    assert_eq!(run["accounting"]["lost"], 0, "{}", run["accounting"]);
    assert_eq!(run["cacheConsistent"], true, "{}", run["cacheDifferences"]);
    let wall = run_json(&["tests/data/steady-state.yaml"]);
    let run = &wall["runs"][0];
    assert_eq!(run["accounting"]["lost"], 0, "{}", run["accounting"]);
    assert_eq!(run["cacheConsistent"], true, "{}", run["cacheDifferences"]);
}
