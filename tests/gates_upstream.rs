//! SchedulerAsyncPreemption on the real kube-scheduler (issue 13: "each honoured gate has a test that
//! shows the behaviour changing with the gate, and the oracle agrees"). `tests/data/async-preemption.yaml`
//! (the workload `src/runner/gate_tests.rs` runs in virtual time) with the gate on (`Async`, v1.37.2's
//! default) and off (`Sync`), run by schedperf (`run --virtual-time --events`) and by the oracle
//! (`schedperf-oracle run --api-latency 5ms --events`: upstream's scheduler on the fake clientset, each of
//! preemption's two API calls per victim taking 5 ms, 16 in parallel). Compared: the facts that
//! wall-clock noise cannot change. schedperf models 1 ms per call; the oracle's calls take 5 ms
//! ([`ORACLE_API_LATENCY`]) so that its real-time window for scheduling other pods meanwhile (two
//! calls in a row, then the last victim's two) stays wide on a loaded machine: none of the facts
//! depends on the latency's size, only on the calls taking some time. Node names are not: the two nodes are alike, so upstream's
//! nominee is the first of two equal candidates after its random offset, and its fill pods' nodes follow
//! its 16 filter workers' race; the facts are stated per role (the preemptor's node, the other one).
//!
//! The oracle is `SCHEDPERF_ORACLE` (`scripts/test.sh` sets it from `scripts/oracle.sh`), else
//! `oracle/bin/schedperf-oracle`; with neither the test fails saying how to build it (it never skips).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn oracle() -> PathBuf {
    let path = std::env::var_os("SCHEDPERF_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("oracle/bin/schedperf-oracle"));
    assert!(
        path.is_file(),
        "the oracle {} is missing: build it with scripts/oracle.sh (or set SCHEDPERF_ORACLE=$(scripts/oracle.sh | tail -1))",
        path.display()
    );
    path
}

const FILE: &str = "tests/data/async-preemption.yaml";

/// Each of the oracle's preemption API calls (see the module doc).
const ORACLE_API_LATENCY: &str = "5ms";

/// The run's trace: JSON lines of `{"event","pod","tNanos","detail"}` (both engines write this shape).
fn trace(program: &Path, args: &[&str], workload: &str) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let o = Command::new(program)
        .current_dir(root())
        .args(["run", FILE, "--label-filter", "short", "--workload", workload, "--events"])
        .arg(&events)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} run {workload}: {}{}",
        program.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(&events).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// What a pod is, by the op that created it (its namespace: `namespace-<op index>`).
fn role(pod: &str) -> &'static str {
    match pod.split('/').next().unwrap() {
        "namespace-1" => "fill",
        "namespace-2" => "preemptor",
        "namespace-3" => "small",
        other => panic!("unexpected namespace {other}"),
    }
}

#[derive(Debug, PartialEq)]
struct Facts {
    /// How many victims, and whether every one was on the node the preemptor ends on.
    victims: usize,
    victims_on_preemptor_node: bool,
    /// Whether the preemptor ends on the node it was nominated to.
    preemptor_on_nominated_node: bool,
    /// The victims' deletions in rounds: the async executor deletes all but the last in parallel,
    /// then the last; the sync one all at once.
    deletion_rounds: usize,
    /// Whether other pods were bound after the preemption started (the nomination or the first victim
    /// call, whichever came first) and before the last victim was deleted.
    scheduled_in_between: bool,
    /// Final placements: the roles on the preemptor's node, then on the other node.
    preemptor_node: Vec<&'static str>,
    other_node: Vec<&'static str>,
}

/// Whose trace: schedperf writes "preempted" when the victim goes (virtual time), the oracle when the
/// victim's first API call starts (real time).
#[derive(Clone, Copy)]
enum Engine {
    Schedperf,
    Oracle,
}

fn facts(lines: &[serde_json::Value], engine: Engine) -> Facts {
    let at = |l: &serde_json::Value| l["tNanos"].as_u64().unwrap();
    let pod = |l: &serde_json::Value| l["pod"].as_str().unwrap().to_string();
    let of = |e: &'static str| lines.iter().filter(move |l| l["event"] == e);
    let nominated: Vec<_> = of("nominated").collect();
    assert_eq!(nominated.len(), 1, "one nomination: {nominated:?}");
    let nominee = nominated[0]["detail"]["node"].as_str().unwrap().to_string();
    let victims: BTreeSet<String> = of("preempted").map(pod).collect();
    let deleted: BTreeMap<String, u64> = of("deleted").map(|l| (pod(l), at(l))).collect();
    assert_eq!(deleted.keys().collect::<Vec<_>>(), victims.iter().collect::<Vec<_>>(), "every victim deleted");
    // Where each pod was bound (the last bind wins; nothing is bound twice here), the victims removed.
    let mut node: BTreeMap<String, String> =
        of("bound").map(|l| (pod(l), l["detail"]["node"].as_str().unwrap().to_string())).collect();
    let victim_nodes: BTreeSet<String> = victims.iter().map(|v| node[v].clone()).collect();
    for v in &victims {
        node.remove(v);
    }
    let preemptor = pod(nominated[0]);
    let home = node.get(&preemptor).expect("the preemptor is bound").clone();
    let start = at(nominated[0]).min(of("preempted").map(at).min().unwrap());
    let last = *deleted.values().max().unwrap();
    let deletion_rounds = match engine {
        // In virtual time a round's deletions share one time.
        Engine::Schedperf => deleted.values().collect::<BTreeSet<_>>().len(),
        // On the real clock: a victim whose first call started after another victim's deletion had
        // returned is in a later round.
        Engine::Oracle => {
            let first_deletion = *deleted.values().min().unwrap();
            1 + usize::from(of("preempted").any(|l| at(l) > first_deletion))
        }
    };
    let roles_on = |n: &str| {
        let mut r: Vec<&'static str> = node.iter().filter(|(_, v)| v.as_str() == n).map(|(p, _)| role(p)).collect();
        r.sort();
        r
    };
    let other = node.values().find(|v| **v != home).expect("pods on the other node").clone();
    Facts {
        victims: victims.len(),
        victims_on_preemptor_node: victim_nodes == BTreeSet::from([home.clone()]),
        preemptor_on_nominated_node: home == nominee,
        deletion_rounds,
        scheduled_in_between: of("bound").any(|l| pod(l) != preemptor && at(l) > start && at(l) < last),
        preemptor_node: roles_on(&home),
        other_node: roles_on(&other),
    }
}

#[test]
fn async_preemption_gate_changes_the_run_as_on_the_real_kube_scheduler() {
    let oracle = oracle();
    let schedperf = PathBuf::from(env!("CARGO_BIN_EXE_schedperf"));
    let fill = |n| vec!["fill"; n];
    let with = |mut v: Vec<&'static str>, more: &[&'static str]| {
        v.extend_from_slice(more);
        v.sort();
        v
    };
    // (workload, the facts both engines must show)
    let cases = [
        (
            "Async",
            Facts {
                victims: 3,
                victims_on_preemptor_node: true,
                preemptor_on_nominated_node: true,
                deletion_rounds: 2,
                scheduled_in_between: true,
                // The small pods went to the other node while the preemptor's nomination held its node.
                preemptor_node: with(fill(1), &["preemptor"]),
                other_node: with(fill(4), &["small"; 4]),
            },
        ),
        (
            "Sync",
            Facts {
                victims: 3,
                victims_on_preemptor_node: true,
                preemptor_on_nominated_node: true,
                deletion_rounds: 1,
                scheduled_in_between: false,
                // The small pods, in activeQ when the cycle ended, go before the preemptor (in backoffQ):
                // one fits beside its nomination, the other three on the other node.
                preemptor_node: with(fill(1), &["preemptor", "small"]),
                other_node: with(fill(4), &["small"; 3]),
            },
        ),
    ];
    for (workload, want) in &cases {
        let ours = facts(&trace(&schedperf, &["--virtual-time"], workload), Engine::Schedperf);
        assert_eq!(ours, *want, "schedperf, {workload}");
        let theirs = facts(&trace(&oracle, &["--api-latency", ORACLE_API_LATENCY], workload), Engine::Oracle);
        assert_eq!(theirs, *want, "kube-scheduler v1.37.2 (the oracle), {workload}");
    }
}

/// OpportunisticBatching: `workloads/batching`'s HostPortConflict at 100 nodes with the gate on
/// (v1.37.2's default) and off, replayed in lockstep with the oracle (`schedperf verify`, upstream's
/// own batch counters read after each cycle): every pod agrees, whether it was placed on a batch hint
/// included (a hint taken on one side only is a divergence), and hints are taken only with the gate on.
#[test]
fn opportunistic_batching_gate_changes_the_cycles_as_on_the_real_kube_scheduler() {
    let oracle = oracle();
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .current_dir(root())
        .args(["verify", "--oracle"])
        .arg(&oracle)
        .args(["workloads/batching", "--test-case", "HostPortConflict", "--label-filter", "short", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    for (workload, hints) in
        [("100Nodes_100Pods_10BatchSize", true), ("100Nodes_100Pods_OpportunisticBatchingDisabled", false)]
    {
        let line = text
            .lines()
            .find(|l| l.starts_with("verify: ") && l.contains(&format!("{workload}: ")))
            .unwrap_or_else(|| panic!("no verify line for {workload}: {text}"));
        assert!(line.contains(": 100/100 pods agree"), "{line}");
        assert_eq!(line.contains("on a batch hint on both sides"), hints, "{line}");
    }
}

/// GenericWorkload (off at v1.37.2, on in `workloads/podgroup`): the same file with the gate off, where
/// kube-scheduler ignores the pods' groups and schedules each member on its own. Replayed in lockstep
/// with the oracle, every pod agrees; and the run changes with the gate: PodGroupPartialFit's gang of 3
/// no longer waits for its quorum, its members take both nodes one by one, and the pair created after
/// them cannot fit (the workload's wait fails, exit 1), where with the gate on the gang places nothing
/// and the pair fits.
#[test]
fn generic_workload_gate_off_schedules_members_one_by_one_as_on_the_real_kube_scheduler() {
    let oracle = oracle();
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("workloads/podgroup");
    let text = std::fs::read_to_string(src.join("performance-config.yaml")).unwrap();
    let gates_on = text.matches("GenericWorkload: true").count();
    assert!(gates_on >= 3, "workloads/podgroup sets GenericWorkload on in each test case");
    let file = dir.path().join("podgroup-gate-off.yaml");
    std::fs::write(&file, text.replace("GenericWorkload: true", "GenericWorkload: false")).unwrap();
    let templates = dir.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    for entry in std::fs::read_dir(src.join("templates")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), templates.join(entry.file_name())).unwrap();
    }

    let out = dir.path().join("verify");
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["verify", "--oracle"])
        .arg(&oracle)
        .arg(&file)
        .args(["--label-filter", "short", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    let last = text.lines().rfind(|l| l.starts_with("verify: ")).unwrap_or_else(|| panic!("no verify line: {text}"));
    let (agreed, total) = last
        .strip_prefix("verify: ")
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.split_once('/'))
        .map(|(a, n)| (a.parse::<u32>().unwrap(), n.parse::<u32>().unwrap()))
        .unwrap_or_else(|| panic!("unreadable verify line: {last}"));
    assert!(total >= 20 && agreed == total, "{last}");

    let run = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_schedperf"))
            .current_dir(root())
            .arg("run")
            .arg(path)
            .args(["--test-case", "PodGroupPartialFit", "--label-filter", "short", "--virtual-time"])
            .output()
            .unwrap()
    };
    let on = run(&src.join("performance-config.yaml"));
    assert_eq!(on.status.code(), Some(0), "gate on: {}", String::from_utf8_lossy(&on.stdout));
    let off = run(&file);
    let said = String::from_utf8_lossy(&off.stdout).to_string() + &String::from_utf8_lossy(&off.stderr);
    assert_eq!(off.status.code(), Some(1), "gate off: {said}");
    assert!(said.contains("2 of 2 pods not done") && said.contains("pair-pod"), "gate off: {said}");
}
