//! Fresh-process runs of `schedperf run` for `compare`, `ab` and `calibrate`: the order in which
//! the sides run (interleaving), how one child process is started and read back, and the A/B driver
//! that gates its pairs and extends a suspect workload once.
//!
//! Every orchestrator takes the runner as a closure (`&mut dyn FnMut(&RunRequest) -> ...`), so the
//! scheduling logic is tested without starting processes; [`spawn_run`] is the real one.

use std::path::PathBuf;
use std::process::Command;

use super::evaluate::{evaluate, GateReport, Verdict};
use super::input::{parse_report, Arm};
use super::policy::Policy;
use crate::error::{child_failure, Error, InputError};
use crate::report::{Report as RunDocument, RunReport};

/// One fresh-process run: a binary and the arguments after it (starting with `run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRequest {
    pub bin: PathBuf,
    pub args: Vec<String>,
}

/// The signature of a runner: starts one run and returns the report it printed.
pub type Runner<'a> = dyn FnMut(&RunRequest) -> Result<RunDocument, Error> + 'a;

/// Flags of `schedperf run` the orchestrators set themselves; a user's copy (and its value) is dropped.
pub const OWNED_RUN_FLAGS: &[&str] = &["--format", "--reps", "--out", "--events", "--rep-index"];

/// Normalises user-given run arguments: drops a leading `run` and every flag in `drop` with its
/// value (`--flag value` or `--flag=value`).
pub fn run_arguments(user: &[String], drop: &[&str]) -> Vec<String> {
    let mut args = user;
    if args.first().map(String::as_str) == Some("run") {
        args = &args[1..];
    }
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if drop.contains(&a) {
            i += 2;
            continue;
        }
        if drop.iter().any(|f| a.starts_with(&format!("{f}="))) {
            i += 1;
            continue;
        }
        out.push(args[i].clone());
        i += 1;
    }
    out
}

/// The full argument list of a child: `run <args> --format json`.
pub fn child_arguments(args: &[String]) -> Vec<String> {
    let mut out = vec!["run".to_string()];
    out.extend(run_arguments(args, OWNED_RUN_FLAGS));
    out.extend(["--format".to_string(), "json".to_string()]);
    out
}

/// Starts `request` as a process and parses the report it prints on stdout. A child exit code of 1
/// (a workload missed its threshold) still yields its report; anything else is an error that
/// carries the child's stderr: bad input when the child said so (exit 2), a runtime failure
/// otherwise (exit 4, a signal).
pub fn spawn_run(request: &RunRequest) -> Result<RunDocument, Error> {
    let bin = request.bin.display().to_string();
    let out = Command::new(&request.bin)
        .args(&request.args)
        .output()
        .map_err(|e| InputError::new(&bin, "", format!("cannot start the run: {e}")))?;
    let code = out.status.code();
    if !matches!(code, Some(0) | Some(1)) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(child_failure(&format!("`{} {}`", bin, request.args.join(" ")), out.status, &stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    crate::report::parse(&text, &format!("stdout of {bin}"))
        .map_err(|e| Error::Runtime(format!("`{bin}` printed no report: {e}")))
}

/// The order of `compare`: repetition by repetition, every config in turn (`A B A B ...`), as
/// `(rep, config index)`.
pub fn round_robin(configs: usize, reps: u32) -> Vec<(u32, usize)> {
    (0..reps).flat_map(|rep| (0..configs).map(move |c| (rep, c))).collect()
}

/// The order of an A/B run for pairs `from..to`: ABBA, i.e. even pairs run base first and odd pairs
/// run the candidate first, so a linear drift of the machine cancels over two pairs.
pub fn abba(from: u32, to: u32) -> Vec<(u32, Arm)> {
    (from..to)
        .flat_map(|pair| {
            if pair % 2 == 0 {
                [(pair, Arm::Base), (pair, Arm::Cand)]
            } else {
                [(pair, Arm::Cand), (pair, Arm::Base)]
            }
        })
        .collect()
}

/// An A/B (or A/A) plan.
#[derive(Debug, Clone, PartialEq)]
pub struct AbPlan {
    pub base_bin: PathBuf,
    pub cand_bin: PathBuf,
    /// `schedperf run` arguments (a leading `run` is accepted), without `--format`.
    pub run_args: Vec<String>,
    pub pairs: u32,
    pub policy: Policy,
    /// Extend each workload with a suspect cell once, from `pairs` to `2 * pairs`.
    pub extend_suspect: bool,
}

/// The result of an A/B run: the `ab` report (both arms) and its paired gate.
#[derive(Debug, Clone)]
pub struct AbOutcome {
    pub report: RunDocument,
    pub gate: GateReport,
    /// The workloads (`testCase/workload`) that were extended to `2 * pairs`.
    pub extended: Vec<String>,
}

fn arm_name(arm: Arm) -> &'static str {
    match arm {
        Arm::Base => "base",
        Arm::Cand => "cand",
    }
}

/// True when `run` arguments ask for `--measure instructions`.
pub fn measures_instructions(run_args: &[String]) -> bool {
    run_args.iter().any(|a| a == "--measure=instructions")
        || run_args.windows(2).any(|w| w[0] == "--measure" && w[1] == "instructions")
}

/// Runs `plan`: one discarded warm-up per binary, `pairs` pairs in ABBA order, a paired gate, and
/// once, for the workloads with a suspect cell, pairs `pairs..2 * pairs` and a new gate.
pub fn run_ab(plan: &AbPlan, runner: &mut Runner<'_>, log: &mut dyn FnMut(&str)) -> Result<AbOutcome, Error> {
    // Instruction counts repeat, so one pair is enough; timed runs need a rank test's sample.
    let min_pairs = if measures_instructions(&plan.run_args) { 1 } else { super::MIN_SAMPLES as u32 };
    if plan.pairs < min_pairs {
        return Err(InputError::new(
            "--pairs",
            "",
            format!("{} pairs; at least {min_pairs} are needed (10 recommended)", plan.pairs),
        )
        .into());
    }
    let bin = |arm: Arm| match arm {
        Arm::Base => plan.base_bin.clone(),
        Arm::Cand => plan.cand_bin.clone(),
    };
    let args = child_arguments(&plan.run_args);
    for arm in [Arm::Base, Arm::Cand] {
        log(&format!("ab: warm-up {} (discarded)", arm_name(arm)));
        runner(&RunRequest { bin: bin(arm), args: args.clone() })?;
    }
    let mut header: Option<RunDocument> = None;
    let mut runs: Vec<RunReport> = Vec::new();
    let mut run_slots = |slots: Vec<(u32, Arm)>,
                         args: &[String],
                         runs: &mut Vec<RunReport>,
                         header: &mut Option<RunDocument>,
                         log: &mut dyn FnMut(&str)|
     -> Result<(), Error> {
        for (pair, arm) in slots {
            log(&format!("ab: pair {pair} {}", arm_name(arm)));
            let doc = runner(&RunRequest { bin: bin(arm), args: args.to_vec() })?;
            for mut r in doc.runs.iter().cloned() {
                r.rep = pair;
                r.pair = Some(pair);
                r.arm = Some(arm_name(arm).to_string());
                runs.push(r);
            }
            if arm == Arm::Cand && header.is_none() {
                *header = Some(doc);
            }
        }
        Ok(())
    };
    run_slots(abba(0, plan.pairs), &args, &mut runs, &mut header, &mut *log)?;
    let mut gate = gate_ab(&assemble(header.as_ref(), &runs), &plan.policy)?;
    let mut extended = Vec::new();
    if plan.extend_suspect {
        let suspects: Vec<(String, String)> = {
            let mut s: Vec<(String, String)> = gate
                .cells
                .iter()
                .filter(|c| c.verdict == Verdict::Suspect)
                .map(|c| (c.test_case.clone(), c.workload.clone()))
                .collect();
            s.dedup();
            s
        };
        for (test_case, workload) in suspects {
            log(&format!(
                "ab: {test_case}/{workload} is suspect; extending from {} to {} pairs",
                plan.pairs,
                2 * plan.pairs
            ));
            let mut narrowed = run_arguments(&plan.run_args, &["--test-case", "--workload"]);
            narrowed.extend(["--test-case".to_string(), test_case.clone(), "--workload".to_string(), workload.clone()]);
            run_slots(
                abba(plan.pairs, 2 * plan.pairs),
                &child_arguments(&narrowed),
                &mut runs,
                &mut header,
                &mut *log,
            )?;
            extended.push(format!("{test_case}/{workload}"));
        }
        if !extended.is_empty() {
            gate = gate_ab(&assemble(header.as_ref(), &runs), &plan.policy)?;
        }
    }
    Ok(AbOutcome { report: assemble(header.as_ref(), &runs), gate, extended })
}

/// The `ab` report: the candidate's first report header (tool, machine) with this command line and
/// all runs of both arms.
pub fn assemble(header: Option<&RunDocument>, runs: &[RunReport]) -> RunDocument {
    let mut doc = match header {
        Some(h) => h.clone(),
        None => crate::report::header::report(Vec::new()),
    };
    doc.command_line = std::env::args().collect();
    doc.runs = runs.to_vec();
    doc
}

/// Gates the two arms of an `ab` report, paired (Wilcoxon signed-rank).
pub fn gate_ab(doc: &RunDocument, policy: &Policy) -> Result<GateReport, InputError> {
    let text = serde_json::to_string(doc).expect("report serializes");
    let parsed = parse_report("ab.json", &text)?;
    let mut report = evaluate(&parsed.arm(Arm::Base), &parsed.arm(Arm::Cand), policy, true)?;
    report.baseline.file = "ab.json (base arm)".into();
    report.current.file = "ab.json (cand arm)".into();
    report.baseline.header = parsed.header.clone();
    report.current.header = parsed.header;
    Ok(report)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::{Machine, ToolInfo, SCHEMA_VERSION};

    /// A fake run of workload `T/w` with the given throughput; latencies vary a little with `salt`
    /// so that no paired difference is exactly zero everywhere.
    pub(crate) fn fake_run(throughput: f64, salt: u32) -> RunReport {
        let mut r = RunReport {
            test_case: "T".into(),
            workload: "w".into(),
            seed: 1,
            config_digest: "c".into(),
            workload_digest: "wd".into(),
            measured_pods: 1000,
            placement_digest: "p".into(),
            ..RunReport::default()
        };
        r.throughput.average = throughput;
        r.throughput.p50 = throughput;
        let l = 100.0 + f64::from(salt % 7);
        r.attempt_latency_micros.p50 = l;
        r.attempt_latency_micros.p90 = 2.0 * l;
        r.attempt_latency_micros.p99 = 3.0 * l;
        r.attempt_latency_micros.max = 4.0 * l;
        r.e2e_latency_micros.p50 = 10.0 * l;
        r.e2e_latency_micros.p90 = 20.0 * l;
        r.e2e_latency_micros.p99 = 30.0 * l;
        r.e2e_latency_micros.max = 40.0 * l;
        r
    }

    pub(crate) fn fake_document(runs: Vec<RunReport>) -> RunDocument {
        RunDocument {
            schema_version: SCHEMA_VERSION.to_string(),
            upstream: crate::report::Upstream::pinned(),
            engine: "schedperf test".into(),
            tool: ToolInfo { name: "schedperf".into(), version: "test".into(), git_commit: "abc".into() },
            command_line: vec!["schedperf".into(), "run".into()],
            machine: Machine::default(),
            created_unix_seconds: 0,
            runs,
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn run_arguments_drop_owned_flags() {
        let check = |input: &[&str], drop: &[&str], expected: &[&str]| {
            assert_eq!(run_arguments(&strings(input), drop), strings(expected), "{input:?}");
        };
        check(&["run", "w/", "--seed", "2"], OWNED_RUN_FLAGS, &["w/", "--seed", "2"]);
        check(
            &["w/", "--format", "table", "--reps=3", "--out", "d", "--threads", "2"],
            OWNED_RUN_FLAGS,
            &["w/", "--threads", "2"],
        );
        check(
            &["w/", "--test-case", "A", "--workload=x", "--label-filter", "ci"],
            &["--test-case", "--workload"],
            &["w/", "--label-filter", "ci"],
        );
        check(&[], OWNED_RUN_FLAGS, &[]);
        assert_eq!(
            child_arguments(&strings(&["run", "w/", "--format", "md"])),
            strings(&["run", "w/", "--format", "json"])
        );
    }

    #[test]
    fn interleaving_orders() {
        assert_eq!(round_robin(2, 3), vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        assert_eq!(round_robin(3, 1), vec![(0, 0), (0, 1), (0, 2)]);
        assert!(round_robin(2, 0).is_empty());
        use Arm::{Base as A, Cand as B};
        assert_eq!(abba(0, 4), vec![(0, A), (0, B), (1, B), (1, A), (2, A), (2, B), (3, B), (3, A)]);
        // An extension continues the alternation where it stopped.
        assert_eq!(abba(3, 5), vec![(3, B), (3, A), (4, A), (4, B)]);
    }

    /// Runs an A/B plan against a fake runner whose candidate is slower by `cand_ratio(pair)`;
    /// returns the outcome and the calls as `(bin, pair or None for a warm-up, args)`.
    fn fake_ab(pairs: u32, policy: Policy, cand_ratio: impl Fn(u32) -> f64) -> (AbOutcome, Vec<(String, Vec<String>)>) {
        let plan = AbPlan {
            base_bin: "old".into(),
            cand_bin: "new".into(),
            run_args: strings(&["run", "w/", "--format", "table"]),
            pairs,
            policy,
            extend_suspect: true,
        };
        let mut calls: Vec<(String, Vec<String>)> = Vec::new();
        let mut cand_runs = 0u32;
        let mut runner = |req: &RunRequest| -> Result<RunDocument, Error> {
            let bin = req.bin.display().to_string();
            calls.push((bin.clone(), req.args.clone()));
            let salt = calls.len() as u32;
            let run = if bin == "new" {
                // The warm-up is the first candidate call; pairs follow.
                let pair = cand_runs.saturating_sub(1);
                cand_runs += 1;
                fake_run(1000.0 / cand_ratio(pair), salt)
            } else {
                fake_run(1000.0, salt)
            };
            Ok(fake_document(vec![run]))
        };
        let outcome = run_ab(&plan, &mut runner, &mut |_| {}).unwrap();
        (outcome, calls)
    }

    fn throughput_only(budget: f64) -> Policy {
        let mut p = Policy { gated_metrics: Some(vec![super::super::Metric::Throughput]), ..Policy::default() };
        p.defaults.insert(super::super::Metric::Throughput, budget);
        p
    }

    #[test]
    fn instruction_runs_need_one_pair() {
        for (args, want) in [
            (&["run", "w/", "--measure", "instructions"][..], true),
            (&["run", "w/", "--measure=instructions"][..], true),
            (&["run", "w/", "--measure", "time"][..], false),
            (&["run", "instructions"][..], false),
        ] {
            assert_eq!(measures_instructions(&strings(args)), want, "{args:?}");
        }
    }

    #[test]
    fn ab_runs_warm_up_then_abba_and_assembles_arms() {
        let (outcome, calls) = fake_ab(6, throughput_only(0.10), |_| 1.0);
        let bins: Vec<&str> = calls.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(
            bins,
            [
                "old", "new", // warm-ups, discarded
                "old", "new", "new", "old", "old", "new", "new", "old", "old", "new", "new", "old"
            ]
        );
        assert!(calls.iter().all(|(_, a)| a == &strings(&["run", "w/", "--format", "json"])));
        let runs = &outcome.report.runs;
        assert_eq!(runs.len(), 12);
        let arms: Vec<(Option<u32>, Option<&str>)> = runs.iter().take(4).map(|r| (r.pair, r.arm.as_deref())).collect();
        assert_eq!(
            arms,
            [(Some(0), Some("base")), (Some(0), Some("cand")), (Some(1), Some("cand")), (Some(1), Some("base"))]
        );
        assert!(runs.iter().all(|r| r.pair == Some(r.rep)));
        assert!(outcome.gate.paired);
        assert!(outcome.extended.is_empty());
        let t = outcome.gate.cells.iter().find(|c| c.metric == super::super::Metric::Throughput).unwrap();
        assert_eq!((t.n_base, t.n_cand, t.test), (6, 6, "wilcoxon"));
    }

    /// Per-pair slowdowns whose estimate exceeds a 10% budget while the interval crosses it.
    const SUSPECT_RATIOS: [f64; 10] = [1.02, 1.04, 1.06, 1.10, 1.12, 1.14, 1.16, 1.18, 1.22, 1.30];

    #[test]
    fn suspect_workload_is_extended_once_to_twice_the_pairs() {
        let (outcome, calls) =
            fake_ab(10, throughput_only(0.10), |pair| SUSPECT_RATIOS[pair as usize % SUSPECT_RATIOS.len()]);
        // 2 warm-ups, 20 runs for 10 pairs, 20 more for the extension.
        assert_eq!(calls.len(), 42);
        assert_eq!(outcome.extended, vec!["T/w".to_string()]);
        let narrowed = strings(&["run", "w/", "--test-case", "T", "--workload", "w", "--format", "json"]);
        assert!(calls[22..].iter().all(|(_, a)| a == &narrowed));
        assert!(calls[..22].iter().all(|(_, a)| a != &narrowed));
        let pairs: Vec<u32> = outcome.report.runs.iter().filter_map(|r| r.pair).collect();
        assert_eq!(pairs.iter().max(), Some(&19));
        let t = outcome.gate.cells.iter().find(|c| c.metric == super::super::Metric::Throughput).unwrap();
        assert_eq!(t.n_cand, 20);
    }

    #[test]
    fn suspect_ratios_are_suspect_at_ten_pairs() {
        // Guards the test above: its first ten pairs must really be a suspect verdict.
        let mut runs = Vec::new();
        for (i, r) in SUSPECT_RATIOS.iter().enumerate() {
            for (arm, t) in [("base", 1000.0), ("cand", 1000.0 / r)] {
                let mut run = fake_run(t, i as u32 * 2 + u32::from(arm == "cand"));
                run.pair = Some(i as u32);
                run.rep = i as u32;
                run.arm = Some(arm.into());
                runs.push(run);
            }
        }
        let gate = gate_ab(&fake_document(runs), &throughput_only(0.10)).unwrap();
        let verdicts: Vec<Verdict> = gate.cells.iter().filter(|c| c.gated).map(|c| c.verdict).collect();
        assert_eq!(verdicts, [Verdict::Suspect]);
    }

    #[test]
    fn a_clear_regression_is_not_extended() {
        let (outcome, calls) = fake_ab(10, throughput_only(0.10), |pair| 1.5 + f64::from(pair) * 0.01);
        assert_eq!(calls.len(), 22);
        assert!(outcome.extended.is_empty());
        assert_eq!(outcome.gate.exit_code(Default::default()), 1);
    }

    #[test]
    fn too_few_pairs_is_an_input_error() {
        let plan = AbPlan {
            base_bin: "a".into(),
            cand_bin: "b".into(),
            run_args: vec![],
            pairs: 5,
            policy: Policy::default(),
            extend_suspect: true,
        };
        let mut runner = |_: &RunRequest| -> Result<RunDocument, Error> { unreachable!() };
        let e = run_ab(&plan, &mut runner, &mut |_| {}).unwrap_err();
        assert!(matches!(&e, Error::Input(i) if i.file == "--pairs"), "{e}");
    }
}
