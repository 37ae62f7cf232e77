//! Behaviour tests of the gate: verdicts from synthetic runs, exit codes, errors and outputs.

use std::collections::BTreeMap;

use super::evaluate::{decide, evaluate, GateFlags, GateReport, Verdict};
use super::input::{LatencySummary, RunSample, Throughput};
use super::metric::Metric;
use super::policy::Policy;
use super::*;

/// Base run factors: a fixed list with about +-8% spread.
const SPREAD: [f64; 10] = [1.00, 1.04, 0.97, 1.10, 0.93, 1.06, 0.99, 1.02, 0.95, 1.08];
/// The same values in another order, for "no change".
const SHUFFLED: [f64; 10] = [1.06, 0.95, 1.10, 1.00, 1.02, 0.93, 1.08, 0.97, 1.04, 0.99];

/// A run whose every metric is `factor` times worse than a nominal run (throughput 1000/factor pods/s,
/// latencies times factor).
fn run(key: &str, rep: u32, factor: f64) -> RunSample {
    let (test_case, workload) = key.split_once('/').unwrap();
    let t = 1000.0 / factor;
    let lat = |base: f64| LatencySummary {
        p50: base * factor,
        p90: 2.0 * base * factor,
        p99: 4.0 * base * factor,
        max: 9.0 * base * factor,
    };
    RunSample {
        test_case: test_case.into(),
        workload: workload.into(),
        seed: 7,
        config_digest: "cfg".into(),
        workload_digest: Some("wl".into()),
        rep,
        pair: None,
        arm: None,
        throughput: Throughput { average: t, p50: t, p90: t, p95: t, p99: t },
        attempt_latency_us: lat(100.0),
        e2e_latency_us: lat(1000.0),
        measured_pods: 5000,
        placement_digest: "pd".into(),
        placements: None,
        instructions: None,
    }
}

fn runs(key: &str, factors: &[f64]) -> Vec<RunSample> {
    factors.iter().enumerate().map(|(i, f)| run(key, i as u32, *f)).collect()
}

fn scaled(factors: &[f64], by: f64) -> Vec<f64> {
    factors.iter().map(|f| f * by).collect()
}

fn policy_with(budget: f64) -> Policy {
    let mut p = Policy::default();
    for m in Metric::DEFAULT_GATED {
        p.defaults.insert(m, budget);
    }
    p
}

fn cell(report: &GateReport, metric: Metric) -> &Cell {
    report.cells.iter().find(|c| c.metric == metric).unwrap()
}

#[test]
fn verdicts_from_synthetic_independent_runs() {
    // (candidate factors, budget, expected verdict of every gated cell, expected ratio estimate)
    let check = |cand: Vec<f64>, budget: f64, want: Verdict, ratio: f64| {
        let report = evaluate(&runs("T/w", &SPREAD), &runs("T/w", &cand), &policy_with(budget), false).unwrap();
        for c in report.cells.iter().filter(|c| c.gated) {
            assert_eq!(c.verdict, want, "{} {:?}", c.metric.name(), c);
            assert!((c.ratio - ratio).abs() < 1e-9, "{}: ratio {} want {ratio}", c.metric.name(), c.ratio);
        }
        // Throughput and the p50/p90 attempt latency are gated; p99 is not (5000 pods < 10000).
        assert_eq!(report.gated(), 3);
    };
    check(scaled(&SPREAD, 1.5), 0.20, Verdict::Regressed, 1.5);
    check(scaled(&SPREAD, 1.25), 0.20, Verdict::Suspect, 1.25);
    check(SHUFFLED.to_vec(), 0.02, Verdict::Noisy, 1.0);
    check(scaled(&SPREAD, 0.8), 0.20, Verdict::Improved, 0.8);
    check(SHUFFLED.to_vec(), 0.20, Verdict::Ok, 1.0);
}

#[test]
fn throughput_orientation_and_change() {
    let report =
        evaluate(&runs("T/w", &SPREAD), &runs("T/w", &scaled(&SPREAD, 1.25)), &Policy::default(), false).unwrap();
    let t = cell(&report, Metric::Throughput);
    // 25% worse throughput: base/cand = 1.25, a change of 1/1.25 - 1 = -20%.
    assert!((t.ratio - 1.25).abs() < 1e-9);
    assert!((t.change().0 + 0.2).abs() < 1e-9);
    assert!(t.change().1 < t.change().0 && t.change().0 < t.change().2);
    let l = cell(&report, Metric::AttemptP50);
    assert!((l.change().0 - 0.25).abs() < 1e-9);
    // Medians of the raw values: the middle two throughputs are 1000/1.02 and 1000/1.00.
    let middle = (1000.0 / 1.02 + 1000.0 / 1.00) / 2.0;
    let middle_cand = (1000.0 / (1.02 * 1.25) + 1000.0 / 1.25) / 2.0;
    assert_eq!((t.median_base, t.median_cand), (middle, middle_cand));
}

#[test]
fn verdicts_from_synthetic_pairs() {
    // Interleaved pairs: each candidate run is its partner times `shift` with +-2% jitter.
    const JITTER: [f64; 10] = [1.01, 0.99, 1.02, 0.98, 1.00, 1.015, 0.985, 1.005, 0.995, 1.012];
    let pairs = |factors: &[f64]| -> Vec<RunSample> {
        factors
            .iter()
            .enumerate()
            .map(|(i, f)| RunSample { pair: Some(i as u32), ..run("T/w", i as u32, *f) })
            .collect()
    };
    let check = |shift: f64, want: Verdict| {
        let cand: Vec<f64> = SPREAD.iter().zip(JITTER).map(|(b, j)| b * shift * j).collect();
        let report = evaluate(&pairs(&SPREAD), &pairs(&cand), &Policy::default(), true).unwrap();
        let t = cell(&report, Metric::Throughput);
        assert_eq!((t.test, t.verdict), ("wilcoxon", want), "shift {shift}: {t:?}");
        // All 10 differences share a sign: exact p = 2 / 2^10.
        if shift != 1.0 {
            assert!((t.p - 2.0 / 1024.0).abs() < 1e-12, "{}", t.p);
        }
    };
    // A/B budgets: 5% for throughput. Pairing removes the +-8% spread between runs.
    check(1.10, Verdict::Regressed);
    check(1.06, Verdict::Suspect);
    check(1.0, Verdict::Ok);
    check(0.90, Verdict::Improved);
}

#[test]
fn decide_follows_the_reference_order() {
    // (ratio, low, high, p, p_holm, budget) -> verdict; alpha 0.05.
    let check = |r: f64, lo: f64, hi: f64, p: f64, ph: f64, b: f64, want: Verdict| {
        assert_eq!(decide(r, lo, hi, p, ph, b, 0.05), want, "{r} [{lo}, {hi}] p={p} p_holm={ph} budget {b}");
    };
    check(1.30, 1.25, 1.35, 0.001, 0.004, 0.20, Verdict::Regressed);
    // Whole CI beyond the line but Holm does not confirm it: suspect, not regressed.
    check(1.30, 1.25, 1.35, 0.01, 0.08, 0.20, Verdict::Suspect);
    // Estimate beyond the line, CI crosses it.
    check(1.25, 1.15, 1.35, 0.001, 0.004, 0.20, Verdict::Suspect);
    // A suspect-sized estimate that is not significant is noisy when the CI is wide...
    check(1.25, 0.90, 1.60, 0.20, 0.60, 0.20, Verdict::Noisy);
    // ...and ok when it is narrow enough.
    check(1.10, 0.95, 1.30, 0.20, 0.60, 0.20, Verdict::Ok);
    // Noisy is checked before improved.
    check(0.80, 0.55, 0.97, 0.001, 0.003, 0.10, Verdict::Noisy);
    check(0.80, 0.75, 0.85, 0.001, 0.003, 0.10, Verdict::Improved);
    // Significant but not beyond the budget, and a CI touching 1: ok.
    check(1.03, 1.01, 1.05, 0.001, 0.003, 0.05, Verdict::Ok);
    check(0.97, 0.95, 1.0, 0.001, 0.003, 0.05, Verdict::Ok);
    // The boundaries are strict: low exactly at the line is not a regression.
    check(1.30, 1.20, 1.35, 0.001, 0.004, 0.20, Verdict::Suspect);
}

#[test]
fn holm_is_applied_across_workloads() {
    let mut base = runs("T/a", &SPREAD);
    base.extend(runs("T/b", &SPREAD));
    let mut cand = runs("T/a", &scaled(&SPREAD, 1.5));
    cand.extend(runs("T/b", &SHUFFLED));
    let report = evaluate(&base, &cand, &Policy::default(), false).unwrap();
    assert_eq!(report.gated(), 6);
    let gated: Vec<&Cell> = report.cells.iter().filter(|c| c.gated).collect();
    let raw: Vec<f64> = gated.iter().map(|c| c.p).collect();
    let want = crate::stats::holm(&raw);
    for (c, w) in gated.iter().zip(want) {
        assert_eq!(c.p_holm, Some(w));
    }
    // The regressed workload's p = 2/C(20,10) = 1.0825e-5 is multiplied by up to 6.
    let t = report.cells.iter().find(|c| c.key() == "T/a" && c.metric == Metric::Throughput).unwrap();
    assert!((t.p - 2.0 / 184_756.0).abs() < 1e-15);
    assert!((t.p_holm.unwrap() - 6.0 * 2.0 / 184_756.0).abs() < 1e-15);
    assert_eq!(report.workloads_with(Verdict::Regressed), ["T/a"]);
    assert!(report.cells.iter().filter(|c| !c.gated).all(|c| c.p_holm.is_none() && c.verdict == Verdict::ReportOnly));
}

#[test]
fn p99_is_gated_only_for_large_runs() {
    let big = |factors: &[f64]| -> Vec<RunSample> {
        runs("T/w", factors).into_iter().map(|r| RunSample { measured_pods: 10_000, ..r }).collect()
    };
    let report = evaluate(&big(&SPREAD), &big(&SHUFFLED), &Policy::default(), false).unwrap();
    assert!(cell(&report, Metric::AttemptP99).gated);
    let report = evaluate(&runs("T/w", &SPREAD), &big(&SHUFFLED), &Policy::default(), false).unwrap();
    let p99 = cell(&report, Metric::AttemptP99);
    assert!(!p99.gated);
    assert!(p99.note.as_deref().unwrap().contains("5000 pods"), "{:?}", p99.note);
}

#[test]
fn input_errors_and_warnings() {
    let p = Policy::default();
    let err =
        |base: Vec<RunSample>, cand: Vec<RunSample>, paired: bool| evaluate(&base, &cand, &p, paired).unwrap_err();
    // Fewer than 6 runs per side.
    let e = err(runs("T/w", &SPREAD[..5]), runs("T/w", &SPREAD), false);
    assert_eq!((e.file.as_str(), e.path.as_str()), ("baseline", "runs"));
    assert!(e.message.contains("T/w has 5 runs; at least 6"), "{e}");
    let e = err(runs("T/w", &SPREAD), runs("T/w", &SPREAD[..3]), false);
    assert_eq!(e.file, "current");
    // Six is enough.
    assert!(evaluate(&runs("T/w", &SPREAD[..6]), &runs("T/w", &SPREAD[..6]), &p, false).is_ok());
    // Paired runs need pair indices, and 6 complete pairs.
    let e = err(runs("T/w", &SPREAD), runs("T/w", &SPREAD), true);
    assert!(e.message.contains("no pair index"), "{e}");
    let paired = |n: usize| -> Vec<RunSample> {
        (0..n).map(|i| RunSample { pair: Some(i as u32), ..run("T/w", i as u32, SPREAD[i]) }).collect()
    };
    let e = err(paired(10), paired(5), true);
    assert!(e.message.contains("5 complete A/B pairs"), "{e}");
    // A different workload definition is exit 2.
    let other: Vec<RunSample> =
        runs("T/w", &SPREAD).into_iter().map(|r| RunSample { workload_digest: Some("wl2".into()), ..r }).collect();
    let e = err(runs("T/w", &SPREAD), other, false);
    assert_eq!(e.path, "runs[].workloadDigest");
    assert!(e.message.contains("not comparable"), "{e}");
    // Nothing in common.
    let e = err(runs("T/a", &SPREAD), runs("T/b", &SPREAD), false);
    assert!(e.message.contains("no workload in common"), "{e}");
    // One unmatched workload and a config change are warnings.
    let mut cand: Vec<RunSample> =
        runs("T/w", &SPREAD).into_iter().map(|r| RunSample { config_digest: "cfg2".into(), ..r }).collect();
    cand.extend(runs("T/new", &SPREAD));
    let report = evaluate(&runs("T/w", &SPREAD), &cand, &p, false).unwrap();
    assert_eq!(report.unmatched.len(), 1);
    assert!(report.warnings.iter().any(|w| w.contains("T/new is only in the current")), "{:?}", report.warnings);
    assert!(report.warnings.iter().any(|w| w.contains("configDigest differs")), "{:?}", report.warnings);
}

#[test]
fn placement_changes_are_counted() {
    let with = |digest: &str, placements: &[(&str, &str)]| -> Vec<RunSample> {
        let map: BTreeMap<String, String> = placements.iter().map(|(p, n)| (p.to_string(), n.to_string())).collect();
        runs("T/w", &SPREAD)
            .into_iter()
            .map(|r| RunSample { placement_digest: digest.into(), placements: Some(map.clone()), ..r })
            .collect()
    };
    let base = with("d1", &[("p1", "n1"), ("p2", "n2"), ("p3", "n3")]);
    let same =
        evaluate(&base, &with("d1", &[("p1", "n1"), ("p2", "n2"), ("p3", "n3")]), &Policy::default(), false).unwrap();
    assert!(!same.placement_changed());
    let moved = with("d2", &[("p1", "n1"), ("p2", "n3"), ("p4", "n1")]);
    let report = evaluate(&base, &moved, &Policy::default(), false).unwrap();
    let p = &report.placements[0];
    // p2 moved, p3 and p4 exist on one side only: 3 of 4 pods.
    assert_eq!((p.changed, p.moved_pods, p.compared_pods, p.seed), (true, Some(3), Some(4), 7));
    let flags = |f: bool| GateFlags { fail_on_placement_change: f, ..GateFlags::default() };
    assert_eq!((report.exit_code(flags(false)), report.exit_code(flags(true))), (0, 1));
    // Different seeds are not compared.
    let reseeded: Vec<RunSample> = runs("T/w", &SPREAD).into_iter().map(|r| RunSample { seed: 8, ..r }).collect();
    let report = evaluate(&base, &reseeded, &Policy::default(), false).unwrap();
    assert!(report.placements.is_empty());
    assert!(report.warnings.iter().any(|w| w.contains("no seed in common")));
}

#[test]
fn exit_code_mapping() {
    let base = evaluate(&runs("T/w", &SPREAD), &runs("T/w", &SHUFFLED), &Policy::default(), false).unwrap();
    let with = |verdicts: &[Verdict]| {
        let mut r = base.clone();
        r.cells.truncate(1);
        let template = r.cells[0].clone();
        r.cells = verdicts.iter().map(|v| Cell { verdict: *v, ..template.clone() }).collect();
        r
    };
    let flags = |noisy: bool, strict: bool| GateFlags { fail_on_noisy: noisy, strict, fail_on_placement_change: false };
    let check = |verdicts: &[Verdict], noisy: bool, strict: bool, want: i32| {
        assert_eq!(with(verdicts).exit_code(flags(noisy, strict)), want, "{verdicts:?} noisy={noisy} strict={strict}");
    };
    use Verdict::*;
    check(&[Ok, Improved, ReportOnly], false, false, EXIT_PASS);
    check(&[Ok, Regressed], false, false, EXIT_REGRESSION);
    check(&[Suspect], false, false, EXIT_PASS);
    check(&[Suspect], false, true, EXIT_REGRESSION);
    check(&[Noisy], false, false, EXIT_PASS);
    check(&[Noisy], true, false, EXIT_NOISY);
    check(&[Noisy, Regressed], true, false, EXIT_REGRESSION);
    check(&[Noisy, Suspect], true, true, EXIT_REGRESSION);
}

/// A deterministic normal variate stream (Box-Muller over a seeded ChaCha RNG).
fn normals(seed: u64, n: usize) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (u1, u2): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}

#[test]
fn aa_passes_and_a_real_regression_fails() {
    // 20 A/A comparisons of 10 runs per side with 5% log-normal noise: at least 19 pass.
    let noisy_runs =
        |seed: u64, shift: f64| -> Vec<f64> { normals(seed, 10).iter().map(|z| shift * (0.05 * z).exp()).collect() };
    let passes = (0..20u64)
        .filter(|i| {
            let base = runs("T/w", &noisy_runs(2 * i, 1.0));
            let cand = runs("T/w", &noisy_runs(2 * i + 1, 1.0));
            evaluate(&base, &cand, &Policy::default(), false).unwrap().exit_code(GateFlags::default()) == EXIT_PASS
        })
        .count();
    assert!(passes >= 19, "only {passes} of 20 A/A comparisons passed");
    // The same with interleaved pairs (A/B budgets, Wilcoxon).
    let paired = |seed: u64, shift: f64| -> Vec<RunSample> {
        noisy_runs(seed, shift)
            .into_iter()
            .enumerate()
            .map(|(i, f)| RunSample { pair: Some(i as u32), ..run("T/w", i as u32, f) })
            .collect()
    };
    let passes = (0..20u64)
        .filter(|i| {
            let report =
                evaluate(&paired(200 + 2 * i, 1.0), &paired(201 + 2 * i, 1.0), &Policy::default(), true).unwrap();
            report.exit_code(GateFlags::default()) == EXIT_PASS
        })
        .count();
    assert!(passes >= 19, "only {passes} of 20 paired A/A comparisons passed");
    // Scoring every node instead of 10% of 5000: about 2x slower per pod, with the same noise.
    for i in 0..5u64 {
        let base = runs("T/w", &noisy_runs(100 + 2 * i, 1.0));
        let cand = runs("T/w", &noisy_runs(101 + 2 * i, 2.0));
        let report = evaluate(&base, &cand, &Policy::default(), false).unwrap();
        assert_eq!(report.exit_code(GateFlags::default()), EXIT_REGRESSION);
    }
}

#[test]
fn suggested_budgets_are_at_least_the_defaults() {
    let noisy: Vec<f64> = normals(5, 10).iter().map(|z| (0.25 * z).exp()).collect();
    let aa = evaluate(&runs("T/w", &SPREAD), &runs("T/w", &noisy), &Policy::default(), true.then_some(false).unwrap())
        .unwrap();
    let p = suggest_budgets(&aa);
    let w = &p.workloads["T/w"];
    for c in aa.cells.iter().filter(|c| c.metric.default_budget(false).is_some()) {
        let default = c.metric.default_budget(false).unwrap();
        let want = default.max(1.5 * (c.ratio_high - c.ratio_low));
        let got = w.budgets[&c.metric];
        assert!(got >= want - 1e-12 && got < want + 0.005 + 1e-12, "{}: {got} vs {want}", c.metric.name());
        assert!(((got * 200.0).round() - got * 200.0).abs() < 1e-9, "rounded to 0.5%: {got}");
    }
    assert!(!w.budgets.contains_key(&Metric::E2eMax));
    assert_eq!(Policy::from_toml("s.toml", &p.to_toml()).unwrap(), p);
}

/// A small report for golden outputs: 6 runs per side, throughput regressed 1.5x, plus the
/// report-only attempt-max cell, a placement change and a configuration warning.
fn small_report() -> GateReport {
    let base: Vec<RunSample> = runs("Basic/5k", &SPREAD[..6]);
    let cand: Vec<RunSample> = runs("Basic/5k", &scaled(&SPREAD[..6], 1.5))
        .into_iter()
        .map(|r| RunSample { placement_digest: "pd2".into(), ..r })
        .collect();
    let policy = Policy { gated_metrics: Some(vec![Metric::Throughput]), ..Policy::default() };
    let mut report = evaluate(&base, &cand, &policy, false).unwrap();
    report.cells.retain(|c| matches!(c.metric, Metric::Throughput | Metric::AttemptMax));
    assert!(report.plugin_changes.is_empty());
    report.baseline.file = "base.json".into();
    report.current.file = "cur.json".into();
    report
}

/// Checks that `xml` is well-formed enough for JUnit consumers: balanced, properly nested tags,
/// quoted attributes, and no bare `&` or `<` in text.
fn assert_well_formed(xml: &str) {
    let body = xml.strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n").expect("XML declaration");
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| entity.starts_with(e)),
                "bare & in {text:?}"
            );
        }
        let close = rest[open..].find('>').expect("unclosed tag") + open;
        let tag = &rest[open + 1..close];
        assert!(!tag.contains('<'), "nested < in tag {tag:?}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let name = tag.split_whitespace().next().expect("tag name").to_string();
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in {tag:?}");
            assert_eq!(tag.matches('=').count(), tag.matches("=\"").count(), "unquoted attribute in {tag:?}");
            if !self_closing {
                stack.push(name);
            }
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert!(rest.trim().is_empty());
}

#[test]
fn outputs_match_golden_files() {
    let r = small_report();
    let f = GateFlags::default();
    let check = |name: &str, got: &str, want: &str| assert_eq!(got, want, "{name} differs; got:\n{got}");
    check("table", &super::table::render(&r, f), include_str!("testdata/table.golden"));
    check("markdown", &super::markdown::render(&r, f), include_str!("testdata/md.golden"));
    check("junit", &super::junit::render(&r, f), include_str!("testdata/junit.golden"));
    check("bmf", &super::bench::bmf(&r), include_str!("testdata/bmf.golden"));
    let (bigger, smaller) = super::bench::gab(&r);
    check("gab bigger", &bigger, include_str!("testdata/gab-bigger.golden"));
    check("gab smaller", &smaller, include_str!("testdata/gab-smaller.golden"));
    assert_eq!(
        super::markdown::annotations(&r, f),
        [
            "::error title=schedperf gate regressed throughput::Basic/5k throughput 981 -> 654 pods/s: -33.3%25 [-39.0%25, -27.1%25], p_holm=0.002, budget 20%25",
            "::warning title=schedperf gate placements changed::Basic/5k seed 7: changed (digest pd -> pd2; no per-pod placements recorded)",
        ]
    );
}

#[test]
fn junit_is_well_formed_with_ratio_and_ci_in_the_failure_body() {
    let mut r = small_report();
    r.cells[0].test_case = "Odd<&>\"'".into();
    let flags = GateFlags { fail_on_placement_change: true, ..GateFlags::default() };
    let xml = super::junit::render(&r, flags);
    assert_well_formed(&xml);
    let failure = xml.split("<failure").nth(1).unwrap();
    let body = &failure[failure.find('>').unwrap() + 1..failure.find("</failure>").unwrap()];
    assert!(body.contains("ratio 1.5000") && body.contains("95% CI [1.3726, 1.6392]"), "{body}");
    assert!(xml.contains("Odd&lt;&amp;&gt;&quot;&#39;/5k"));
    // The placement change fails under --fail-on-placement-change: 2 failures in all.
    assert!(
        xml.contains("<testsuites name=\"schedperf gate\" tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"1\">"),
        "{xml}"
    );
    assert!(std::panic::catch_unwind(|| assert_well_formed(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a><b></a></b>\n"
    ))
    .is_err());
}

#[test]
fn json_is_versioned_and_complete() {
    let r = small_report();
    let doc: serde_json::Value = serde_json::from_str(&super::json::render(&r, GateFlags::default())).unwrap();
    assert_eq!(doc["schemaVersion"], "schedperf.compare/v1");
    assert_eq!(
        (doc["exitCode"].as_i64(), doc["mode"].as_str(), doc["kind"].as_str()),
        (Some(1), Some("stored-baseline"), Some("gate"))
    );
    let cell = &doc["cells"][0];
    assert_eq!(
        (cell["metric"].as_str(), cell["verdict"].as_str(), cell["nBase"].as_u64()),
        (Some("throughput"), Some("regressed"), Some(6))
    );
    for field in ["medianBase", "medianCand", "ratio", "ratioLow", "ratioHigh", "p", "pHolm", "budget"] {
        assert!(cell[field].is_f64(), "{field}: {}", cell[field]);
    }
    // p = 2 / C(12, 6) with a family of one.
    assert!((cell["pHolm"].as_f64().unwrap() - 2.0 / 924.0).abs() < 1e-12);
    assert_eq!(doc["cells"][1]["pHolm"], serde_json::Value::Null);
    assert_eq!(doc["placements"][0]["changed"], true);
    assert_eq!(doc["counts"]["regressed"], 1);
}

#[test]
fn markdown_stays_under_the_step_summary_cap() {
    let mut r = small_report();
    let template = r.cells[1].clone();
    r.cells.extend((0..20_000).map(|i| Cell { workload: format!("w{i}"), ..template.clone() }));
    let md = super::markdown::render(&r, GateFlags::default());
    assert!(md.len() < super::markdown::STEP_SUMMARY_MAX_BYTES, "{}", md.len());
    assert!(md.contains("too large for the step summary"));
    // At most ten annotations.
    let regressed = r.cells[0].clone();
    r.cells.extend((0..15).map(|i| Cell { workload: format!("r{i}"), ..regressed.clone() }));
    assert_eq!(super::markdown::annotations(&r, GateFlags::default()).len(), super::markdown::MAX_ANNOTATIONS);
}

fn report_file(dir: &std::path::Path, name: &str, runs: &[serde_json::Value]) -> std::path::PathBuf {
    let path = dir.join(name);
    let doc = serde_json::json!({"schemaVersion": "schedperf.report/v1", "env": {"cpu": "test"}, "runs": runs});
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// Report runs as JSON: `factor` scales every metric worse, as in [`run`].
fn json_runs(key: &str, factors: &[f64], arm: Option<&str>) -> Vec<serde_json::Value> {
    factors
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (test_case, workload) = key.split_once('/').unwrap();
            let mut v = super::input::tests::run_json(test_case, workload, i as u32, 1000.0 / f);
            for group in ["attemptLatencyMicros", "e2eLatencyMicros"] {
                for q in ["p50", "p90", "p99", "max"] {
                    let x = v[group][q].as_f64().unwrap();
                    v[group][q] = (x * f).into();
                }
            }
            if let Some(arm) = arm {
                v["arm"] = arm.into();
                v["pair"] = i.into();
            }
            v
        })
        .collect()
}

fn gate_args(baseline: std::path::PathBuf, current: Option<std::path::PathBuf>) -> GateArgs {
    GateArgs {
        baseline,
        current,
        policy: None,
        fail_on_noisy: false,
        fail_on_placement_change: false,
        strict: false,
        format: vec!["table".into()],
        out: None,
    }
}

#[test]
fn run_gate_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let base = report_file(dir.path(), "base.json", &json_runs("T/w", &SPREAD, None));
    let same = report_file(dir.path(), "same.json", &json_runs("T/w", &SHUFFLED, None));
    let slow = report_file(dir.path(), "slow.json", &json_runs("T/w", &scaled(&SPREAD, 1.5), None));
    let run = |args: &GateArgs, env: &OutputEnv| {
        let mut stdout = Vec::new();
        let code = run_gate_with(args, env, &mut stdout);
        (code, String::from_utf8(stdout).unwrap())
    };
    let none = OutputEnv::default();
    let (code, out) = run(&gate_args(base.clone(), Some(same.clone())), &none);
    assert_eq!(code, Ok(EXIT_PASS), "{out}");
    assert!(out.contains("result: PASS (exit 0)"), "{out}");
    // A regression, with every format written to --out and the step summary appended.
    let summary = dir.path().join("summary-env.md");
    std::fs::write(&summary, "previous step\n").unwrap();
    let out_dir = dir.path().join("out");
    let args = GateArgs {
        format: vec!["table,json".into(), "markdown".into(), "junit".into(), "bmf".into(), "gab".into()],
        out: Some(out_dir.clone()),
        ..gate_args(base.clone(), Some(slow.clone()))
    };
    let (code, out) = run(&args, &OutputEnv { step_summary: Some(summary.clone()) });
    assert_eq!(code, Ok(EXIT_REGRESSION), "{out}");
    assert!(out.contains("REGRESSED") && out.contains("::error title=schedperf gate regressed throughput::"), "{out}");
    for file in
        ["gate.txt", "compare.json", "summary.md", "junit.xml", "bmf.json", "gab-bigger.json", "gab-smaller.json"]
    {
        assert!(out_dir.join(file).exists(), "{file} missing");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("compare.json")).unwrap()).unwrap();
    assert_eq!(json["baseline"]["header"]["env"]["cpu"], "test");
    assert_eq!(json["exitCode"], 1);
    let appended = std::fs::read_to_string(&summary).unwrap();
    assert!(appended.starts_with("previous step\n## schedperf gate: FAIL (exit 1)"), "{appended}");
    // Input errors: a missing file, a bad format, an `ab` report passed with a second file.
    let e = run(&gate_args(dir.path().join("missing.json"), Some(same.clone())), &none).0.unwrap_err();
    assert!(e.file.ends_with("missing.json") && e.message.contains("cannot read"), "{e}");
    let e = run(&GateArgs { format: vec!["xml".into()], ..gate_args(base.clone(), Some(same.clone())) }, &none)
        .0
        .unwrap_err();
    assert_eq!(e.file, "--format");
    let e = run(&gate_args(base.clone(), None), &none).0.unwrap_err();
    assert!(e.message.contains("must be an `ab` report"), "{e}");
}

#[test]
fn run_gate_on_an_ab_report_pairs_the_arms() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = json_runs("T/w", &SPREAD, Some("base"));
    let cand: Vec<f64> = SPREAD.iter().map(|f| f * 1.10).collect();
    runs.extend(json_runs("T/w", &cand, Some("cand")));
    let ab = report_file(dir.path(), "ab.json", &runs);
    let mut stdout = Vec::new();
    let args = GateArgs { format: vec!["json".into()], ..gate_args(ab.clone(), None) };
    assert_eq!(run_gate_with(&args, &OutputEnv::default(), &mut stdout), Ok(EXIT_REGRESSION));
    let doc: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!((doc["mode"].as_str(), doc["cells"][0]["test"].as_str()), (Some("ab"), Some("wilcoxon")));
    // A 10% slowdown exceeds the 5% A/B budget; against a stored baseline (20%) it would not.
    assert_eq!(doc["cells"][0]["verdict"], "regressed");
    assert_eq!(doc["cells"][0]["budget"], 0.05);
    let e = run_gate_with(&gate_args(ab.clone(), Some(ab)), &OutputEnv::default(), &mut Vec::new()).unwrap_err();
    assert!(e.message.contains("holds both A/B arms"), "{e}");
}

#[test]
fn compare_is_report_only() {
    let dir = tempfile::tempdir().unwrap();
    let a = report_file(dir.path(), "a.json", &json_runs("T/w", &SPREAD[..3], None));
    let other_def: Vec<serde_json::Value> = json_runs("T/w", &scaled(&SPREAD[..3], 1.5), None)
        .into_iter()
        .map(|mut v| {
            v["workloadDigest"] = "w2".into();
            v
        })
        .collect();
    let b = report_file(dir.path(), "b.json", &other_def);
    // Three runs and a different workload digest are fine for a report-only comparison.
    let text = compare_reports(&a, &b, &["table".into()]).unwrap();
    assert!(text.starts_with("schedperf compare: "), "{text}");
    assert!(!text.contains("VERDICT") && !text.contains("result:"), "{text}");
    assert!(text.contains("warning: T/w: workloadDigest w2 differs"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&compare_reports(&a, &b, &["json".into()]).unwrap()).unwrap();
    assert_eq!((json["kind"].as_str(), json["exitCode"].is_null()), (Some("compare"), true));
    assert!(compare_reports(&a, &dir.path().join("nope.json"), &["table".into()]).is_err());
}

#[test]
fn smallest_p_and_blind_families() {
    let check = |n: usize, m: usize, paired: bool, want: f64| {
        let got = super::evaluate::min_achievable_p(n, m, paired);
        assert!((got - want).abs() < 1e-15, "n={n} m={m} paired={paired}: {got} want {want}");
    };
    // 2 / C(n + m, n) and 2 / 2^n.
    check(10, 10, false, 2.0 / 184_756.0);
    check(6, 6, false, 2.0 / 924.0);
    check(10, 10, true, 2.0 / 1024.0);
    check(6, 6, true, 2.0 / 64.0);
    // Six pairs cannot reach p_holm < 0.05 with three gated cells: 3 * 2/64 >= 0.05.
    let pairs = |factors: &[f64]| -> Vec<RunSample> {
        factors
            .iter()
            .enumerate()
            .map(|(i, f)| RunSample { pair: Some(i as u32), ..run("T/w", i as u32, *f) })
            .collect()
    };
    let report = evaluate(&pairs(&SPREAD[..6]), &pairs(&scaled(&SPREAD[..6], 2.0)), &Policy::default(), true).unwrap();
    assert!(report.warnings.iter().any(|w| w.starts_with("3 of 3 gated cells cannot reach")), "{:?}", report.warnings);
    assert_eq!(report.count(Verdict::Regressed), 0);
    // Ten pairs can.
    let report = evaluate(&pairs(&SPREAD), &pairs(&scaled(&SPREAD, 2.0)), &Policy::default(), true).unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.count(Verdict::Regressed), 3);
}

#[test]
fn cli_arguments_parse() {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        gate: GateArgs,
    }
    let check = |argv: &[&str], want: GateArgs| assert_eq!(Cli::try_parse_from(argv).unwrap().gate, want, "{argv:?}");
    let base =
        |current: Option<&str>| GateArgs { current: current.map(Into::into), ..gate_args("a.json".into(), None) };
    check(&["gate", "a.json", "b.json"], base(Some("b.json")));
    check(&["gate", "ab.json"], GateArgs { baseline: "ab.json".into(), ..base(None) });
    check(
        &[
            "gate",
            "a.json",
            "b.json",
            "--format",
            "json,junit",
            "--format",
            "bmf",
            "--fail-on-noisy",
            "--strict",
            "--out",
            "perf",
        ],
        GateArgs {
            format: vec!["json".into(), "junit".into(), "bmf".into()],
            fail_on_noisy: true,
            strict: true,
            out: Some("perf".into()),
            ..base(Some("b.json"))
        },
    );
    check(
        &["gate", "a.json", "b.json", "--policy", "gate.toml", "--fail-on-placement-change"],
        GateArgs { policy: Some("gate.toml".into()), fail_on_placement_change: true, ..base(Some("b.json")) },
    );
    assert!(Cli::try_parse_from(["gate"]).is_err());
}
