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
use crate::error::InputError;
use crate::report::{Report as RunDocument, RunReport};

/// One fresh-process run: a binary and the arguments after it (starting with `run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRequest {
    pub bin: PathBuf,
    pub args: Vec<String>,
}

/// The signature of a runner: starts one run and returns the report it printed.
pub type Runner<'a> = dyn FnMut(&RunRequest) -> Result<RunDocument, InputError> + 'a;

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
/// carries the child's stderr.
pub fn spawn_run(request: &RunRequest) -> Result<RunDocument, InputError> {
    let bin = request.bin.display().to_string();
    let out = Command::new(&request.bin)
        .args(&request.args)
        .output()
        .map_err(|e| InputError::new(&bin, "", format!("cannot start the run: {e}")))?;
    let code = out.status.code();
    if !matches!(code, Some(0) | Some(1)) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(InputError::new(
            &bin,
            "",
            format!(
                "`{} {}` failed ({}): {}",
                bin,
                request.args.join(" "),
                out.status,
                stderr.trim()
            ),
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    crate::report::parse(&text, &format!("stdout of {bin}"))
}

/// The order of `compare`: repetition by repetition, every config in turn (`A B A B ...`), as
/// `(rep, config index)`.
pub fn round_robin(configs: usize, reps: u32) -> Vec<(u32, usize)> {
    (0..reps)
        .flat_map(|rep| (0..configs).map(move |c| (rep, c)))
        .collect()
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

/// Runs `plan`: one discarded warm-up per binary, `pairs` pairs in ABBA order, a paired gate, and
/// once, for the workloads with a suspect cell, pairs `pairs..2 * pairs` and a new gate.
pub fn run_ab(
    plan: &AbPlan,
    runner: &mut Runner<'_>,
    log: &mut dyn FnMut(&str),
) -> Result<AbOutcome, InputError> {
    if plan.pairs < super::MIN_SAMPLES as u32 {
        return Err(InputError::new(
            "--pairs",
            "",
            format!(
                "{} pairs; at least {} are needed (10 recommended)",
                plan.pairs,
                super::MIN_SAMPLES
            ),
        ));
    }
    let bin = |arm: Arm| match arm {
        Arm::Base => plan.base_bin.clone(),
        Arm::Cand => plan.cand_bin.clone(),
    };
    let args = child_arguments(&plan.run_args);
    for arm in [Arm::Base, Arm::Cand] {
        log(&format!("ab: warm-up {} (discarded)", arm_name(arm)));
        runner(&RunRequest {
            bin: bin(arm),
            args: args.clone(),
        })?;
    }
    let mut header: Option<RunDocument> = None;
    let mut runs: Vec<RunReport> = Vec::new();
    let mut run_slots = |slots: Vec<(u32, Arm)>,
                         args: &[String],
                         runs: &mut Vec<RunReport>,
                         header: &mut Option<RunDocument>,
                         log: &mut dyn FnMut(&str)|
     -> Result<(), InputError> {
        for (pair, arm) in slots {
            log(&format!("ab: pair {pair} {}", arm_name(arm)));
            let doc = runner(&RunRequest {
                bin: bin(arm),
                args: args.to_vec(),
            })?;
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
    run_slots(
        abba(0, plan.pairs),
        &args,
        &mut runs,
        &mut header,
        &mut *log,
    )?;
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
            narrowed.extend([
                "--test-case".to_string(),
                test_case.clone(),
                "--workload".to_string(),
                workload.clone(),
            ]);
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
    Ok(AbOutcome {
        report: assemble(header.as_ref(), &runs),
        gate,
        extended,
    })
}

/// The `ab` report: the candidate's first report header (tool, machine) with this command line and
/// all runs of both arms.
pub fn assemble(header: Option<&RunDocument>, runs: &[RunReport]) -> RunDocument {
    let mut doc = match header {
        Some(h) => h.clone(),
        None => crate::runner::cli::report(Vec::new()),
    };
    doc.command_line = std::env::args().collect();
    doc.runs = runs.to_vec();
    doc
}

/// Gates the two arms of an `ab` report, paired (Wilcoxon signed-rank).
pub fn gate_ab(doc: &RunDocument, policy: &Policy) -> Result<GateReport, InputError> {
    let text = serde_json::to_string(doc).expect("report serializes");
    let parsed = parse_report("ab.json", &text)?;
    let mut report = evaluate(
        &parsed.arm(Arm::Base),
        &parsed.arm(Arm::Cand),
        policy,
        true,
    )?;
    report.baseline.file = "ab.json (base arm)".into();
    report.current.file = "ab.json (cand arm)".into();
    report.baseline.header = parsed.header.clone();
    report.current.header = parsed.header;
    Ok(report)
}
