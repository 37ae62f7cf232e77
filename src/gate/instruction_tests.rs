//! The gate on instruction counts (`run --measure instructions`): verdicts from the ratio and the
//! spread of the runs, one run per side, the per-plugin table in every output.

use std::collections::BTreeMap;

use super::evaluate::{decide_count, evaluate, Verdict, EXIT_PASS, EXIT_REGRESSION, INSTRUCTION_TEST};
use super::input::{LatencySummary, RunSample, Throughput};
use super::{bench, json, junit, markdown, table, GateFlags, Metric, Policy};
use crate::report::InstructionsReport;

/// A run of `T/w` that counted `per_pod` instructions per scheduled pod over 100 pods, of which
/// `fit_score` in NodeResourcesFit/Score and 1000 in NodeUnschedulable/Filter.
fn irun(rep: u32, per_pod: f64, fit_score: u64) -> RunSample {
    let pods = 100u64;
    let lat = LatencySummary { p50: 1.0, p90: 1.0, p99: 1.0, max: 1.0 };
    let both: BTreeMap<String, u64> = [
        ("NodeResourcesFit/Score".to_string(), fit_score * pods),
        ("NodeUnschedulable/Filter".to_string(), 1000 * pods),
    ]
    .into();
    RunSample {
        test_case: "T".into(),
        workload: "w".into(),
        seed: 1,
        config_digest: "cfg".into(),
        workload_digest: Some("wl".into()),
        rep,
        pair: None,
        arm: None,
        throughput: Throughput { average: 1.0, p50: 1.0, p90: 1.0, p95: 1.0, p99: 1.0 },
        attempt_latency_us: lat,
        e2e_latency_us: lat,
        measured_pods: pods,
        placement_digest: "pd".into(),
        placements: None,
        instructions: Some(InstructionsReport {
            source: "callgrind".into(),
            tool: "valgrind-3.19.0".into(),
            total: (per_pod * pods as f64) as u64,
            attempts: pods,
            scheduled_pods: pods,
            per_scheduled_pod: per_pod,
            per_attempt: per_pod,
            by_plugin: [
                ("NodeResourcesFit".to_string(), fit_score * pods),
                ("NodeUnschedulable".to_string(), 1000 * pods),
            ]
            .into(),
            by_extension_point: [("Score".to_string(), fit_score * pods), ("Filter".to_string(), 1000 * pods)].into(),
            by_plugin_extension_point: both,
        }),
    }
}

fn iruns(per_pod: &[f64]) -> Vec<RunSample> {
    per_pod.iter().enumerate().map(|(i, &v)| irun(i as u32, v, 20_000)).collect()
}

#[test]
fn decide_count_table() {
    // (ratio, low, high, budget) -> verdict
    let cases: &[(f64, f64, f64, f64, Verdict)] = &[
        (1.000, 1.000, 1.000, 0.01, Verdict::Ok),
        (1.009, 1.009, 1.009, 0.01, Verdict::Ok),
        (1.011, 1.011, 1.011, 0.01, Verdict::Regressed),
        (1.038, 1.030, 1.045, 0.01, Verdict::Regressed),
        (1.012, 1.008, 1.016, 0.01, Verdict::Suspect),
        (1.000, 0.970, 1.030, 0.01, Verdict::Noisy),
        (0.985, 0.985, 0.985, 0.01, Verdict::Improved),
        (0.995, 0.995, 0.995, 0.01, Verdict::Ok),
        (1.040, 1.040, 1.040, 0.05, Verdict::Ok),
    ];
    for &(ratio, low, high, budget, want) in cases {
        assert_eq!(decide_count(ratio, low, high, budget), want, "{ratio} [{low}, {high}] budget {budget}");
    }
}

#[test]
fn instruction_verdicts_with_one_run_per_side() {
    // (base per pod, current per pod, verdict of instructions-per-pod, exit code)
    let cases: &[(&[f64], &[f64], Verdict, i32)] = &[
        (&[80_000.0], &[80_000.0], Verdict::Ok, EXIT_PASS),
        (&[80_000.0], &[80_300.0], Verdict::Ok, EXIT_PASS), // +0.375%: A/A-sized
        (&[80_000.0], &[81_600.0], Verdict::Regressed, EXIT_REGRESSION), // +2%
        (&[80_000.0], &[83_215.0], Verdict::Regressed, EXIT_REGRESSION), // percentageOfNodesToScore 50
        (&[80_000.0], &[78_000.0], Verdict::Improved, EXIT_PASS),
        (&[80_000.0, 80_100.0], &[80_900.0, 81_500.0], Verdict::Suspect, EXIT_PASS),
        (&[80_000.0, 83_000.0], &[80_000.0, 83_000.0], Verdict::Noisy, EXIT_PASS),
    ];
    for &(b, c, want, code) in cases {
        let r = evaluate(&iruns(b), &iruns(c), &Policy::default(), false).unwrap();
        let cell = r.cells.iter().find(|c| c.metric == Metric::InstructionsPerPod).unwrap();
        assert_eq!(cell.verdict, want, "{b:?} -> {c:?}");
        assert_eq!(cell.test, INSTRUCTION_TEST);
        assert_eq!(cell.budget, Some(0.01));
        assert_eq!(r.exit_code(GateFlags::default()), code, "{b:?} -> {c:?}");
        // Instruction runs carry no timed cells and are outside the Holm family.
        assert!(r.cells.iter().all(|c| c.metric.is_instructions()), "{:?}", r.cells);
        assert_eq!(r.holm_family(), 0);
        let per_attempt = r.cells.iter().find(|c| c.metric == Metric::InstructionsPerAttempt).unwrap();
        assert_eq!(per_attempt.verdict, Verdict::ReportOnly, "per attempt is report-only by default");
    }
}

#[test]
fn a_budget_from_the_policy_applies_to_instructions() {
    let policy = Policy::from_toml("g.toml", "[defaults]\ninstructions-per-pod = \"5%\"\n").unwrap();
    let r = evaluate(&iruns(&[80_000.0]), &iruns(&[82_000.0]), &policy, false).unwrap();
    assert_eq!(r.cells[0].verdict, Verdict::Ok, "+2.5% within 5%");
}

#[test]
fn instructions_against_time_is_an_input_error() {
    let mut timed = iruns(&[80_000.0; 6]);
    for r in &mut timed {
        r.instructions = None;
    }
    let e = evaluate(&timed, &iruns(&[80_000.0]), &Policy::default(), false).unwrap_err().to_string();
    assert!(e.contains("compare like with like") && e.contains("runs[].instructions"), "{e}");
    let mut mixed = iruns(&[80_000.0, 80_000.0]);
    mixed[1].instructions = None;
    let e = evaluate(&mixed, &iruns(&[80_000.0]), &Policy::default(), false).unwrap_err().to_string();
    assert!(e.contains("1 of 2 runs counted instructions"), "{e}");
}

#[test]
fn a_regression_names_its_plugin_in_every_output() {
    // NodeResourcesFit/Score grows by 3,000 per pod: the whole change.
    let base = vec![irun(0, 80_000.0, 20_000)];
    let cand = vec![irun(0, 83_000.0, 23_000)];
    let r = evaluate(&base, &cand, &Policy::default(), false).unwrap();
    assert_eq!(r.exit_code(GateFlags::default()), EXIT_REGRESSION);
    let rows = r.plugin_rows("T/w");
    assert_eq!(rows[0].name, "NodeResourcesFit/Score");
    assert_eq!((rows[0].base_per_pod, rows[0].cand_per_pod), (20_000.0, 23_000.0));
    assert!((rows[0].change - 0.15).abs() < 1e-12);
    assert!((rows[0].share_of_total_change - 1.0).abs() < 1e-12);
    assert_eq!(rows[1].name, "NodeUnschedulable/Filter");
    assert_eq!(rows[1].delta(), 0.0);
    assert!(r.top_plugin_changes("T/w", 3).starts_with("NodeResourcesFit/Score +3000 (+15.0%)"));
    let flags = GateFlags::default();
    let text = table::render(&r, flags);
    assert!(text.contains("REGRESSED") && text.contains("PLUGIN/EXTENSION POINT"), "{text}");
    assert!(text.contains("most changed: NodeResourcesFit/Score"), "{text}");
    let md = markdown::render(&r, flags);
    assert!(md.contains("| NodeResourcesFit/Score | 20000 | 23000 | +3000 |"), "{md}");
    let annotations = markdown::annotations(&r, flags).join("\n");
    assert!(
        annotations.contains("most changed%3A NodeResourcesFit/Score")
            || annotations.contains("most changed: NodeResourcesFit/Score"),
        "{annotations}"
    );
    let xml = junit::render(&r, flags);
    assert!(xml.contains("<failure") && xml.contains("NodeResourcesFit/Score +3000"), "{xml}");
    let doc: serde_json::Value = serde_json::from_str(&json::render(&r, flags)).unwrap();
    assert_eq!(doc["pluginChanges"].as_array().unwrap().len(), 6, "2 plugin/point, 2 plugin, 2 point rows");
    assert_eq!(doc["cells"][0]["test"], INSTRUCTION_TEST);
    let bmf: serde_json::Value = serde_json::from_str(&bench::bmf(&r)).unwrap();
    assert_eq!(bmf["T/w"]["instructions-per-pod"]["value"], 83_000.0);
    assert_eq!(bmf["T/w"]["instructions-per-pod:NodeResourcesFit/Score"]["value"], 23_000.0);
}
