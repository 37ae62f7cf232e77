//! Upstream's own scheduler_perf config files at the pinned release, unmodified, straight from the
//! Go module cache (the oracle build downloads `k8s.io/kubernetes@v1.37.2`): every `short`
//! workload of misc, affinity, topology_spreading, default_preemption, batching, event_handling,
//! starvation and the pod-group suites (podgroup/basicscheduling, podgroup/gangscheduling,
//! workload_preemption: gate GenericWorkload; podgroup/tas: TopologyAwareWorkloadScheduling too), volumes,
//! dra and nodedeclaredfeatures (its Go test hook: `workload::HarnessHooks`) runs or is skipped with a reason, `list`
//! and `run` agree on which, and nothing that went wrong is reported as a success.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

const MODULE: &str = "k8s.io/kubernetes@v1.37.2";
const SUITES: &[&str] = &[
    "misc",
    "affinity",
    "topology_spreading",
    "default_preemption",
    "batching",
    "event_handling",
    "starvation",
    "podgroup/basicscheduling",
    "podgroup/gangscheduling",
    "podgroup/tas",
    "workload_preemption",
    "volumes",
    "dra",
    "nodedeclaredfeatures",
];

/// Short workloads that must run (not be skipped): the volume suite's persistent-volume cases
/// (`createPods` with volume templates, `nodeAllocatableStrategy`'s CSINodes) and
/// EventHandlingPodDelete, which uses both; podgroup/tas's topology-aware gangs; the basic DRA workloads
/// (claims from templates and by name).
const MUST_RUN: &[&str] = &[
    "SchedulingWithResourceClaimTemplate/fast",
    "SchedulingWithResourceClaimTemplate/selector_fast",
    "SchedulingWithResourceClaimTemplate/match_fast",
    "SchedulingWithResourceClaim/fast",
    "SchedulingInTreePVs/5Nodes",
    "SchedulingMigratedInTreePVs/5Nodes",
    "SchedulingCSIPVs/5Nodes",
    "PreemptionPVs/5Nodes",
    "PreemptionPVs/1000Nodes",
    "EventHandlingPodDelete/2Nodes_20Pods",
    "EventHandlingPodDelete/50Nodes_500Pods",
    "TopologyAwareScheduling/10Nodes_3Gangs",
    "NodeDeclaredFeaturesEnabled/5Nodes5DeclaredFeatures",
];

/// `test/integration/scheduler_perf` of the pinned module: `go env GOMODCACHE`, else `$HOME/go/pkg/mod`.
fn scheduler_perf_dir() -> PathBuf {
    let from_go = Command::new("go")
        .args(["env", "GOMODCACHE"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty());
    let cache = from_go
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into())).join("go/pkg/mod"));
    let dir = cache.join(MODULE).join("test/integration/scheduler_perf");
    assert!(
        dir.join("misc/performance-config.yaml").is_file(),
        "upstream's scheduler_perf files are not in the Go module cache: {} is missing. Download the \
         module (`go mod download {MODULE}`, as the oracle build does) and run the test again.",
        dir.display()
    );
    dir
}

/// `schedperf list FILE`: workload name -> its STATUS column (`run` or `skip: reason`), for the
/// workloads labelled `short`.
fn listed_short(file: &str) -> BTreeMap<String, String> {
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf")).args(["list", file]).output().unwrap();
    assert!(o.status.success(), "list {file}: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let mut out = BTreeMap::new();
    for line in text.lines().skip(1).filter(|l| !l.starts_with('#') && !l.ends_with(" workloads")) {
        let cols: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        let (name, labels) = (cols[0], cols[1]);
        let status =
            cols.iter().rev().find(|c| **c == "run" || c.starts_with("skip: ")).unwrap_or_else(|| panic!("{line}"));
        if labels.split(',').any(|l| l == "short") {
            out.insert(name.to_string(), status.to_string());
        }
    }
    out
}

/// Upstream short workloads that fail here, with why (README, "Status and known gaps"). A failure
/// not listed fails the test.
const KNOWN_FAILURES: &[(&str, &str)] = &[(
    "EventHandlingPodAdd/1000Pods",
    "3,001 pods on a 3,000-pod node: score ties broken by scan order, where upstream's 16 filter workers race",
)];

#[test]
fn upstream_short_workloads_run_or_are_skipped_with_a_reason() {
    let dir = scheduler_perf_dir();
    let mut table = Vec::new();
    let mut ran_anywhere = BTreeSet::new();
    for suite in SUITES {
        let file = dir.join(suite).join("performance-config.yaml").display().to_string();
        let listed = listed_short(&file);
        assert!(!listed.is_empty(), "{suite}: no short workload listed");
        let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
            .args(["run", &file, "--label-filter", "short", "--format", "json"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        let code = o.status.code();
        assert!(code == Some(0) || code == Some(1), "{suite}: exit {code:?} (bad input?): {stderr}");
        let report: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{suite}: no JSON report ({e}): {stderr}"));
        let mut ran = BTreeSet::new();
        let mut thresholds_failed = false;
        for run in report["runs"].as_array().unwrap() {
            let name = format!("{}/{}", run["testCase"].as_str().unwrap(), run["workload"].as_str().unwrap());
            assert_eq!(run["accounting"]["lost"].as_u64(), Some(0), "{suite} {name}: pods lost");
            // A failed workload is in the report too, with its outcome; it is counted from its FAILED line.
            if run["outcome"]["passed"] == false {
                assert!(stderr.contains(&format!("FAILED {name}: ")), "{suite} {name}: failed outcome, no FAILED line");
                continue;
            }
            // A run that passed: all its measured pods scheduled, none lost.
            assert_eq!(
                run["scheduledPods"], run["measuredPods"],
                "{suite} {name}: reported as a success with pods unscheduled"
            );
            assert_eq!(run["accounting"]["lost"].as_u64(), Some(0), "{suite} {name}: pods lost");
            assert_eq!(run["cacheConsistent"].as_bool(), Some(true), "{suite} {name}: {}", run["cacheDifferences"]);
            thresholds_failed |= run["thresholdPassed"].as_bool() == Some(false);
            table.push(format!("{suite:<20} {name:<75} ran"));
            ran.insert(name);
        }
        let mut skipped = BTreeMap::new();
        let mut failed = BTreeMap::new();
        for line in stderr.lines() {
            if let Some((name, reason)) = line.strip_prefix("skipped ").and_then(|l| l.split_once(": ")) {
                assert!(!reason.trim().is_empty(), "{suite} {name}: skipped without a reason");
                skipped.insert(name.to_string(), reason.to_string());
            }
            if let Some((name, why)) = line.strip_prefix("FAILED ").and_then(|l| l.split_once(": ")) {
                failed.insert(name.to_string(), why.to_string());
            }
        }
        // Failures are reported as failures: exit 1, never 0.
        assert_eq!(
            code == Some(1),
            !failed.is_empty() || thresholds_failed,
            "{suite}: exit {code:?} with failures {failed:?}"
        );
        for (name, status) in &listed {
            let outcomes = [ran.contains(name), skipped.contains_key(name), failed.contains_key(name)];
            assert_eq!(
                outcomes.iter().filter(|b| **b).count(),
                1,
                "{suite} {name}: ran/skipped/failed {outcomes:?}\n{stderr}"
            );
            match status.strip_prefix("skip: ") {
                Some(reason) => assert_eq!(
                    skipped.get(name).map(String::as_str),
                    Some(reason),
                    "{suite} {name}: list and run disagree"
                ),
                None => assert!(!skipped.contains_key(name), "{suite} {name}: list says run, run skipped it"),
            }
        }
        for (name, reason) in &skipped {
            table.push(format!("{suite:<20} {name:<75} skipped: {reason}"));
        }
        for (name, why) in &failed {
            assert!(
                KNOWN_FAILURES.iter().any(|(n, _)| n == name),
                "{suite} {name}: failed, and it is not a known failure: {why}"
            );
            table.push(format!("{suite:<20} {name:<75} FAILED: {why}"));
        }
        let all: BTreeSet<&String> = ran.iter().chain(skipped.keys()).chain(failed.keys()).collect();
        assert_eq!(all.len(), listed.len(), "{suite}: run saw workloads list did not: {all:?} vs {:?}", listed.keys());
        ran_anywhere.extend(ran);
    }
    for name in MUST_RUN {
        assert!(ran_anywhere.contains(*name), "{name}: did not run to the end");
    }
    eprintln!("{}", table.join("\n"));
}

/// Every config file of upstream's scheduler_perf tree (DRA, pod groups, volumes, ... too) loads:
/// each of its workloads runs or is skipped with a reason, none is rejected as bad input.
#[test]
fn every_upstream_config_file_loads_and_each_workload_runs_or_is_skipped() {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.file_name().is_some_and(|n| n == "performance-config.yaml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&scheduler_perf_dir(), &mut files);
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let (mut runs, mut skips) = (0, 0);
    for file in &files {
        let o = Command::new(env!("CARGO_BIN_EXE_schedperf")).args(["list"]).arg(file).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
        for line in text.lines().skip(1).filter(|l| !l.starts_with('#') && !l.ends_with(" workloads")) {
            if line.ends_with(" run") {
                runs += 1;
            } else {
                let reason = line.split_once("skip: ").map(|(_, r)| r.trim()).unwrap_or_default();
                assert!(!reason.is_empty(), "{}: {line}", file.display());
                skips += 1;
            }
        }
    }
    // 266 run and 1 skipped since podgroup/tas's 8 (TopologyAwareWorkloadScheduling), the 21
    // basic DRA workloads (steady state included) and those of partitionable devices, device
    // taints, consumable capacity, prioritized lists, DRA-backed extended resources, pod groups'
    // claims (dra/workloadresourceclaims: 6), device compatibility groups
    // (dra/compatibilitygroups: 9) and list attributes (dra/listattributes: 2) run, and
    // nodedeclaredfeatures' 4 (its Go test hook, `HarnessHooks`). Skipped: the workload setting
    // NodeDeclaredFeatures' locked gate off (1).
    assert!(runs >= 266 && runs + skips == 267, "{runs} run, {skips} skipped");
}

/// The oracle: `SCHEDPERF_ORACLE`, else `oracle/bin/schedperf-oracle` (built by scripts/oracle.sh).
fn oracle() -> PathBuf {
    let path = std::env::var_os("SCHEDPERF_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oracle/bin/schedperf-oracle"));
    assert!(path.is_file(), "the oracle {} is missing: build it with scripts/oracle.sh", path.display());
    path
}

/// The volume suite's persistent-volume cases and EventHandlingPodDelete replayed in lockstep with
/// the oracle: both sides get the same pre-bound PVs and claims and the same CSINodes
/// (`src/workload/volumes.rs`), and every pod agrees.
#[test]
fn volume_workloads_agree_with_the_oracle_in_lockstep() {
    let oracle = oracle();
    let dir = scheduler_perf_dir();
    let cases = [
        ("volumes", "SchedulingInTreePVs", "5Nodes", 15),
        ("volumes", "SchedulingMigratedInTreePVs", "5Nodes", 15),
        ("volumes", "SchedulingCSIPVs", "5Nodes", 15),
        ("volumes", "PreemptionPVs", "5Nodes", 25),
        ("event_handling", "EventHandlingPodDelete", "2Nodes_20Pods", 110),
    ];
    for (suite, test_case, workload, min_pods) in cases {
        let file = dir.join(suite).join("performance-config.yaml");
        let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
            .args(["verify", "--oracle"])
            .arg(&oracle)
            .arg(&file)
            .args(["--test-case", test_case, "--workload", workload])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "{test_case}/{workload}: {text}{}", String::from_utf8_lossy(&o.stderr));
        let last =
            text.lines().rfind(|l| l.starts_with("verify: ")).unwrap_or_else(|| panic!("no verify line: {text}"));
        let (agreed, total) = last
            .strip_prefix("verify: ")
            .and_then(|r| r.split(' ').next())
            .and_then(|r| r.split_once('/'))
            .map(|(a, n)| (a.parse::<u32>().unwrap(), n.parse::<u32>().unwrap()))
            .unwrap_or_else(|| panic!("unreadable verify line: {last}"));
        assert!(total >= min_pods && agreed == total, "{test_case}/{workload}: {last}");
    }
}

/// Upstream's dra/listattributes test case (DRAListTypeAttributes, the experimental allocator) in
/// lockstep with the oracle: its `fast` workload, and variants of ours over the same templates
/// that make the list semantics decide (several pods filling the nodes' matching suffix,
/// `distinctAttribute` over the lists: pairwise disjoint, so one pod per node at most), as
/// (workload, pods, pods scheduled by schedperf's `run`). With the gate off, a ResourceSlice
/// holding a list is refused at creation (the API server drops the lists, then finds no value):
/// exit 2, naming the file and the field.
#[test]
fn list_attribute_workloads_agree_with_the_oracle_in_lockstep() {
    let oracle = oracle();
    let upstream = scheduler_perf_dir().join("dra");
    let text = std::fs::read_to_string(upstream.join("listattributes/performance-config.yaml")).unwrap();
    let variant = |name: &str, nodes: u32, pods: u32, requests: u32, constraint: &str| {
        format!(
            "  - name: {name}\n    labels: [short]\n    params:\n      nodesWithDRA: {nodes}\n      measurePods: {pods}\n      \
             steadyState: false\n      duration: 0s\n      numDevices: 64\n      numNonMatchingDevices: 32\n      \
             numRequests: {requests}\n      numListValues: 47\n      constraints:\n      - {constraint}: dra.example.com/match\n"
        )
    };
    let at = text.find("  - name: empty_500nodes").expect("upstream's empty_500nodes workload");
    let variants = [
        variant("three_nodes_four_pods", 3, 4, 32, "matchAttribute"),
        variant("half_requests", 2, 5, 16, "matchAttribute"),
        variant("distinct", 2, 3, 32, "distinctAttribute"),
    ]
    .concat();
    let config = format!("{}{variants}{}", &text[..at], &text[at..]);
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(upstream.join("templates"), dir.path().join("templates")).unwrap();
    std::fs::create_dir(dir.path().join("lists")).unwrap();
    let file = dir.path().join("lists/performance-config.yaml");
    std::fs::write(&file, &config).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["verify", "--oracle"])
        .arg(&oracle)
        .arg(&file)
        .args(["--label-filter", "short"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    let agreed = |workload: &str| {
        let prefix = format!("verify: SchedulingWithResourceClaimTemplateListAttributes/{workload}: ");
        let line = out.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("{workload}: {out}"));
        line.split(' ').next().unwrap().to_string()
    };
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .arg("run")
        .arg(&file)
        .args(["--label-filter", "short", "--format", "json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let scheduled: BTreeMap<String, u64> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["workload"].as_str().unwrap().to_string(), r["scheduledPods"].as_u64().unwrap()))
        .collect();
    // fast: 32 requests fit the 32 matching devices. Three nodes hold three such pods; with 16
    // requests each node holds two; distinct: the 32 devices without the shared value are
    // pairwise disjoint, the 32 with it are not, so each node holds one pod.
    for (workload, pods, placed) in
        [("fast", 1, 1), ("three_nodes_four_pods", 4, 3), ("half_requests", 5, 4), ("distinct", 3, 2)]
    {
        assert_eq!(agreed(workload), format!("{pods}/{pods}"), "{workload}: {out}");
        assert_eq!(scheduled.get(workload), Some(&placed), "{workload}: {scheduled:?}");
    }

    let off = config.replacen("DRAListTypeAttributes: true", "DRAListTypeAttributes: false", 1);
    std::fs::write(&file, off).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .arg("run")
        .arg(&file)
        .args(["--workload", "fast"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("resourceslice-list-attributes-devices.yaml")
            && stderr.contains("spec.devices[0].attributes.dra.example.com/match.strings")
            && stderr.contains("DRAListTypeAttributes"),
        "{stderr}"
    );
}
