//! `schedperf gate` and `schedperf compare`: per workload and metric, a Hodges-Lehmann ratio with a
//! confidence interval, Holm-corrected p-values, a verdict and an exit code; plus a same-seed
//! placement check (the decision gate beside the speed gate).
//!
//! Design: `/work/shared/reference/ci-gates.md`, section 3; user guide: `docs/ci.md`.
//!
//! - [`input`] reads `report.json` files ([`RunSample`] is one run).
//! - [`metric`] says how each metric is read, oriented (`s > 1` = worse) and budgeted by default.
//! - [`policy`] reads `gate.toml` ([`Policy`]).
//! - [`evaluate()`] turns two sets of runs into a [`GateReport`]; [`GateReport::exit_code`] maps it to 0/1/3.
//! - [`table`], [`json`], [`markdown`], [`junit`] and [`mod@bench`] render it.
//!
//! Exit codes: 0 pass, 1 regression, 2 usage or input error (returned as `Err(InputError)`), 3 noisy
//! under `--fail-on-noisy`.

pub mod bench;
pub mod evaluate;
pub mod format;
pub mod input;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod metric;
pub mod policy;
pub mod runner;
pub mod sweep;
pub mod table;
pub mod upstream;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use evaluate::{
    decide, evaluate, Cell, GateFlags, GateReport, PlacementCheck, Verdict, EXIT_INPUT, EXIT_NOISY, EXIT_PASS,
    EXIT_REGRESSION, MIN_SAMPLES,
};
pub use input::{load_report, Arm, Report, RunSample};
pub use metric::Metric;
pub use policy::{Policy, WorkloadPolicy};

use crate::error::{Error, InputError};
use evaluate::{evaluate_with, Options, Source};

/// Arguments of `schedperf gate`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct GateArgs {
    /// The baseline report.json; or an `ab` report holding both arms, with CURRENT omitted.
    pub baseline: PathBuf,
    /// The current report.json (omit it to gate the two arms of an `ab` report).
    pub current: Option<PathBuf>,
    /// A gate.toml with alpha, gated metrics and budgets.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Exit 3 when a gated cell is too noisy to judge (and nothing regressed).
    #[arg(long)]
    pub fail_on_noisy: bool,
    /// Exit 1 when the same seed placed pods differently.
    #[arg(long)]
    pub fail_on_placement_change: bool,
    /// Exit 1 on suspect cells too.
    #[arg(long)]
    pub strict: bool,
    /// Output formats: table, json, markdown, junit, bmf, gab (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', default_value = "table")]
    pub format: Vec<String>,
    /// A directory for the output files (compare.json, summary.md, junit.xml, bmf.json,
    /// gab-bigger.json, gab-smaller.json, gate.txt); without it, formats print to stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Arguments of `schedperf compare`, in one of two modes decided by the arguments
/// ([`CompareArgs::mode`]): two saved `.json` reports and no `--config` compare saved runs (report
/// only); a workload path with two or more `--config` files runs every config and compares them.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct CompareArgs {
    /// Two report.json files (saved mode), or one workload file or directory (config mode).
    #[arg(required = true, num_args = 1..=2)]
    pub paths: Vec<PathBuf>,
    /// Config mode: the test case to run.
    #[arg(long)]
    pub test_case: Option<String>,
    /// Config mode: only this workload of the test case.
    #[arg(long)]
    pub workload: Option<String>,
    /// Config mode: a KubeSchedulerConfiguration (repeat; the first is the reference).
    #[arg(long)]
    pub config: Vec<PathBuf>,
    /// Config mode: repetitions per config, each in a fresh process.
    #[arg(long, default_value_t = 10)]
    pub reps: u32,
    /// Config mode: the seed every run uses.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Config mode: write compare.json, compare.md, compare.html and `<config>/report.json` here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Saved mode: table, json, markdown, bmf, gab (comma-separated or repeated).
    /// Config mode: one of table, json, markdown, html.
    #[arg(long, value_delimiter = ',', default_value = "table")]
    pub format: Vec<String>,
    /// Upstream mode: the oracle binary (`scripts/oracle.sh | tail -1`); every selected workload runs
    /// on schedperf and on the real kube-scheduler in-process, interleaved (see [`upstream`]).
    #[arg(long)]
    pub upstream: Option<PathBuf>,
    /// Upstream mode: scheduler_perf's label filter, when no workload is named.
    #[arg(long, default_value = "performance")]
    pub label_filter: String,
}

/// What `schedperf compare` does, decided by its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum CompareMode {
    /// Two saved reports, compared cell by cell (report only).
    Saved { a: PathBuf, b: PathBuf },
    /// Every config run on one workload path.
    Configs(sweep::SweepPlan),
    /// schedperf beside the real kube-scheduler (`--upstream BIN`).
    Upstream(upstream::UpstreamPlan),
}

impl CompareArgs {
    /// Decides the mode: no `--config` and two `.json` paths is saved mode; one path with two or
    /// more `--config` and a `--test-case` is config mode; anything else is a usage error.
    pub fn mode(&self, bin: &Path) -> Result<CompareMode, InputError> {
        let bin_path = bin;
        let is_json = |p: &PathBuf| p.extension().is_some_and(|e| e == "json");
        if let Some(bin) = &self.upstream {
            let [path] = self.paths.as_slice() else {
                return Err(InputError::new("--upstream", "", "give one workload file or directory (not two reports)"));
            };
            if !self.config.is_empty() {
                return Err(InputError::new(
                    "--config",
                    "",
                    "not with --upstream (each engine runs the workload's own config)",
                ));
            }
            if self.reps == 0 {
                return Err(InputError::new("--reps", "", "0; expected at least 1"));
            }
            return Ok(CompareMode::Upstream(upstream::UpstreamPlan {
                bin: bin_path.to_path_buf(),
                upstream: bin.clone(),
                path: path.clone(),
                test_case: self.test_case.clone(),
                workload: self.workload.clone(),
                label_filter: self.label_filter.clone(),
                reps: self.reps,
                seed: self.seed,
            }));
        }
        if self.config.is_empty() {
            return match self.paths.as_slice() {
                [a, b] if is_json(a) && is_json(b) => Ok(CompareMode::Saved {
                    a: a.clone(),
                    b: b.clone(),
                }),
                _ => Err(InputError::new(
                    "compare",
                    "",
                    "expected two saved reports (`compare A/report.json B/report.json`) or a workload with --config files (`compare PATH --test-case NAME --config A.yaml --config B.yaml`)",
                )),
            };
        }
        let [path] = self.paths.as_slice() else {
            return Err(InputError::new(
                "compare",
                "",
                "with --config, give one workload file or directory (not two reports)",
            ));
        };
        if self.config.len() < 2 {
            return Err(InputError::new("--config", "", "one config given; repeat --config to compare two or more"));
        }
        let Some(test_case) = self.test_case.clone() else {
            return Err(InputError::new(
                "--test-case",
                "",
                "missing; config mode runs one test case (`schedperf list PATH` shows them)",
            ));
        };
        if self.reps == 0 {
            return Err(InputError::new("--reps", "", "0; expected at least 1"));
        }
        Ok(CompareMode::Configs(sweep::SweepPlan {
            bin: bin.to_path_buf(),
            path: path.clone(),
            test_case,
            workload: self.workload.clone(),
            configs: self.config.clone(),
            reps: self.reps,
            seed: self.seed,
        }))
    }
}

/// The output of a config comparison on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepFormat {
    Table,
    Json,
    Markdown,
    Html,
}

impl SweepFormat {
    /// Parses config mode's `--format` (exactly one value).
    pub fn parse(values: &[String]) -> Result<SweepFormat, InputError> {
        let names: Vec<&str> =
            values.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()).collect();
        match names.as_slice() {
            ["table"] => Ok(SweepFormat::Table),
            ["json"] => Ok(SweepFormat::Json),
            ["markdown"] | ["md"] => Ok(SweepFormat::Markdown),
            ["html"] => Ok(SweepFormat::Html),
            _ => Err(InputError::new(
                "--format",
                "",
                format!("{values:?}; config mode prints one of table, json, markdown, html"),
            )),
        }
    }
}

/// Arguments of `schedperf ab`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct AbArgs {
    /// The baseline build.
    #[arg(long)]
    pub base_bin: PathBuf,
    /// The candidate build.
    #[arg(long)]
    pub cand_bin: PathBuf,
    /// Interleaved pairs (ABBA order after one discarded warm-up per binary).
    #[arg(long, default_value_t = 10)]
    pub pairs: u32,
    /// A directory for ab.json and the gate outputs (gate.txt, compare.json, summary.md, junit.xml).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A gate.toml with alpha, gated metrics and budgets.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Exit 3 when a gated cell is too noisy to judge (and nothing regressed).
    #[arg(long)]
    pub fail_on_noisy: bool,
    /// Exit 1 when the same seed placed pods differently.
    #[arg(long)]
    pub fail_on_placement_change: bool,
    /// Exit 1 on suspect cells too (after the extension).
    #[arg(long)]
    pub strict: bool,
    /// Do not extend suspect workloads to twice the pairs.
    #[arg(long)]
    pub no_extend: bool,
    /// `schedperf run` arguments, after `--` (a leading `run` is accepted).
    #[arg(last = true, required = true)]
    pub run_args: Vec<String>,
}

/// Arguments of `schedperf calibrate`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct CalibrateArgs {
    /// The build to measure against itself.
    #[arg(long)]
    pub bin: PathBuf,
    /// Interleaved A/A pairs.
    #[arg(long, default_value_t = 10)]
    pub pairs: u32,
    /// Where to write the suggested gate.toml.
    #[arg(long, default_value = "gate.toml")]
    pub out: PathBuf,
    /// Also write the A/A report (ab.json) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// `schedperf run` arguments, after `--` (a leading `run` is accepted).
    #[arg(last = true, required = true)]
    pub run_args: Vec<String>,
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Markdown,
    Junit,
    Bmf,
    Gab,
}

impl Format {
    /// Parses the `--format` values, each one name or a comma-separated list (duplicates are ignored).
    pub fn parse_list(values: &[String]) -> Result<Vec<Format>, InputError> {
        let mut out = Vec::new();
        for v in values.iter().flat_map(|v| v.split(',')).filter(|v| !v.trim().is_empty()) {
            let f = match v.trim() {
                "table" => Format::Table,
                "json" => Format::Json,
                "markdown" | "md" => Format::Markdown,
                "junit" => Format::Junit,
                "bmf" => Format::Bmf,
                "gab" => Format::Gab,
                other => {
                    return Err(InputError::new(
                        "--format",
                        "",
                        format!("unknown format {other:?}; expected table, json, markdown, junit, bmf or gab"),
                    ))
                }
            };
            if !out.contains(&f) {
                out.push(f);
            }
        }
        Ok(out)
    }

    /// The files this format writes under `--out`, with their contents.
    fn render(self, report: &GateReport, flags: GateFlags) -> Vec<(&'static str, String)> {
        match self {
            Format::Table => vec![("gate.txt", table::render(report, flags))],
            Format::Json => vec![("compare.json", json::render(report, flags))],
            Format::Markdown => vec![("summary.md", markdown::render(report, flags))],
            Format::Junit => vec![("junit.xml", junit::render(report, flags))],
            Format::Bmf => vec![("bmf.json", bench::bmf(report))],
            Format::Gab => {
                let (bigger, smaller) = bench::gab(report);
                vec![("gab-bigger.json", bigger), ("gab-smaller.json", smaller)]
            }
        }
    }
}

/// Where the gate writes besides stdout: the GitHub step summary, if any.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputEnv {
    /// `$GITHUB_STEP_SUMMARY`: Markdown is appended there and annotations are printed to stdout.
    pub step_summary: Option<PathBuf>,
}

impl OutputEnv {
    /// Reads `GITHUB_STEP_SUMMARY` from the environment.
    pub fn from_env() -> Self {
        OutputEnv { step_summary: std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()).map(PathBuf::from) }
    }
}

/// Runs `schedperf gate`: returns the exit code (0 pass, 1 regression, 3 noisy under
/// `--fail-on-noisy`), or an [`InputError`] for exit 2.
pub fn run_gate(args: &GateArgs) -> Result<i32, InputError> {
    run_gate_with(args, &OutputEnv::from_env(), &mut std::io::stdout().lock())
}

/// [`run_gate`] with an explicit environment and stdout, for tests and embedding.
pub fn run_gate_with(args: &GateArgs, env: &OutputEnv, stdout: &mut dyn Write) -> Result<i32, InputError> {
    let formats = Format::parse_list(&args.format)?;
    let policy = match &args.policy {
        Some(p) => Policy::load(p)?,
        None => Policy::default(),
    };
    let flags = GateFlags {
        fail_on_noisy: args.fail_on_noisy,
        fail_on_placement_change: args.fail_on_placement_change,
        strict: args.strict,
    };
    let report = gate_reports(&args.baseline, args.current.as_deref(), &policy, false)?;
    let code = report.exit_code(flags);
    emit(&report, flags, &formats, args.out.as_deref(), env, stdout)?;
    Ok(code)
}

/// Loads one or two reports and evaluates them: two files are independent runs (stored baseline);
/// one file must be an `ab` report and its arms are paired.
fn gate_reports(
    baseline: &Path,
    current: Option<&Path>,
    policy: &Policy,
    compare_only: bool,
) -> Result<GateReport, InputError> {
    let a = load_report(baseline)?;
    let min_samples = if compare_only { 1 } else { MIN_SAMPLES };
    let (base_runs, cand_runs, paired, b) = match current {
        None => {
            if !a.has_arms() {
                return Err(InputError::new(
                    &a.file,
                    "runs[].arm",
                    "a single report must be an `ab` report with base and cand arms; pass BASELINE and CURRENT otherwise",
                ));
            }
            (a.arm(Arm::Base), a.arm(Arm::Cand), true, None)
        }
        Some(path) => {
            let b = load_report(path)?;
            for r in [&a, &b] {
                let arms: std::collections::BTreeSet<_> = r.runs.iter().filter_map(|x| x.arm).collect();
                if arms.len() > 1 {
                    return Err(InputError::new(
                        &r.file,
                        "runs[].arm",
                        "holds both A/B arms; gate an `ab` report on its own (schedperf gate ab.json)",
                    ));
                }
            }
            (a.runs.clone(), b.runs.clone(), false, Some(b))
        }
    };
    let cand_file = b.as_ref().map(|b| b.file.clone()).unwrap_or_else(|| format!("{} (cand arm)", a.file));
    let base_file = if b.is_some() { a.file.clone() } else { format!("{} (base arm)", a.file) };
    let options = Options { base_label: &base_file, cand_label: &cand_file, min_samples, compare_only };
    let mut report = evaluate_with(&base_runs, &cand_runs, policy, paired, &options)?;
    report.baseline = Source { file: base_file.clone(), header: a.header.clone() };
    report.current = match &b {
        Some(b) => Source { file: b.file.clone(), header: b.header.clone() },
        None => Source { file: cand_file.clone(), header: a.header.clone() },
    };
    Ok(report)
}

fn write_err(file: &Path, e: std::io::Error) -> InputError {
    InputError::new(file.display().to_string(), "", format!("cannot write: {e}"))
}

/// Writes the requested formats (to `out` or stdout), the step summary and the annotations.
fn emit(
    report: &GateReport,
    flags: GateFlags,
    formats: &[Format],
    out: Option<&Path>,
    env: &OutputEnv,
    stdout: &mut dyn Write,
) -> Result<(), InputError> {
    let to_stdout = |stdout: &mut dyn Write, text: &str| {
        stdout.write_all(text.as_bytes()).map_err(|e| write_err(Path::new("<stdout>"), e))
    };
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
    }
    for format in formats {
        for (name, text) in format.render(report, flags) {
            match out {
                Some(dir) => {
                    let path = dir.join(name);
                    std::fs::write(&path, &text).map_err(|e| write_err(&path, e))?;
                    if *format == Format::Table {
                        to_stdout(stdout, &text)?;
                    }
                }
                None => to_stdout(stdout, &text)?,
            }
        }
    }
    if let Some(summary) = &env.step_summary {
        let mut file =
            std::fs::OpenOptions::new().create(true).append(true).open(summary).map_err(|e| write_err(summary, e))?;
        file.write_all(markdown::render(report, flags).as_bytes()).map_err(|e| write_err(summary, e))?;
        for line in markdown::annotations(report, flags) {
            to_stdout(stdout, &format!("{line}\n"))?;
        }
    }
    Ok(())
}

/// `schedperf compare A B`: a report-only side-by-side comparison of two saved reports, rendered in
/// `formats` (concatenated). Nothing is gated; digest mismatches are warnings.
pub fn compare_reports(a: &Path, b: &Path, formats: &[String]) -> Result<String, InputError> {
    let formats = Format::parse_list(formats)?;
    let report = gate_reports(a, Some(b), &Policy::default(), true)?;
    let mut out = String::new();
    for f in formats {
        for (_, text) in f.render(&report, GateFlags::default()) {
            out += &text;
        }
    }
    Ok(out)
}

/// Runs `schedperf compare` and prints to stdout; returns exit code 0.
pub fn run_compare(args: &CompareArgs) -> Result<i32, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| InputError::new("schedperf", "", format!("cannot find this program: {e}")))?;
    let stdout = &mut std::io::stdout().lock();
    match args.mode(&exe)? {
        CompareMode::Saved { a, b } => {
            let text = compare_reports(&a, &b, &args.format)?;
            stdout.write_all(text.as_bytes()).map_err(|e| write_err(Path::new("<stdout>"), e))?;
        }
        CompareMode::Upstream(plan) => {
            let text =
                upstream::run_command(&plan, args.out.as_deref(), &mut runner::spawn_run, &mut |m| eprintln!("{m}"))?;
            stdout.write_all(text.as_bytes()).map_err(|e| write_err(Path::new("<stdout>"), e))?;
        }
        CompareMode::Configs(plan) => {
            let format = SweepFormat::parse(&args.format)?;
            let arms = sweep::run_sweep(&plan, &mut runner::spawn_run, &mut |m| eprintln!("{m}"))?;
            let report = sweep::summarize(&arms, plan.seed, plan.reps);
            let text = match format {
                SweepFormat::Table => sweep::render_table(&report),
                SweepFormat::Json => serde_json::to_string_pretty(&report).expect("compare report serializes") + "\n",
                SweepFormat::Markdown => sweep::render_markdown(&report),
                SweepFormat::Html => sweep::render_html(&report),
            };
            stdout.write_all(text.as_bytes()).map_err(|e| write_err(Path::new("<stdout>"), e))?;
            if let Some(dir) = &args.out {
                sweep::write_outputs(dir, &report, &arms)?;
            }
        }
    }
    Ok(EXIT_PASS)
}

/// Runs `schedperf ab`: interleaved A/B runs, a paired gate, one extension of suspect workloads;
/// returns the gate's exit code (0, 1 or 3), or an [`Error`]: bad input (exit 2), a crashed run (exit 4).
pub fn run_ab_command(args: &AbArgs) -> Result<i32, Error> {
    let policy = match &args.policy {
        Some(p) => Policy::load(p)?,
        None => Policy::default(),
    };
    let plan = runner::AbPlan {
        base_bin: args.base_bin.clone(),
        cand_bin: args.cand_bin.clone(),
        run_args: args.run_args.clone(),
        pairs: args.pairs,
        policy,
        extend_suspect: !args.no_extend,
    };
    let outcome = runner::run_ab(&plan, &mut runner::spawn_run, &mut |m| eprintln!("{m}"))?;
    let flags = GateFlags {
        fail_on_noisy: args.fail_on_noisy,
        fail_on_placement_change: args.fail_on_placement_change,
        strict: args.strict,
    };
    let stdout = &mut std::io::stdout().lock();
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
        let path = dir.join("ab.json");
        let text = serde_json::to_string_pretty(&outcome.report).expect("report serializes") + "\n";
        std::fs::write(&path, text).map_err(|e| write_err(&path, e))?;
    }
    let formats = if args.out.is_some() {
        vec![Format::Table, Format::Json, Format::Markdown, Format::Junit]
    } else {
        vec![Format::Table]
    };
    emit(&outcome.gate, flags, &formats, args.out.as_deref(), &OutputEnv::from_env(), stdout)?;
    for key in &outcome.extended {
        let _ = writeln!(stdout, "extended {key} from {} to {} pairs", args.pairs, 2 * args.pairs);
    }
    Ok(outcome.gate.exit_code(flags))
}

/// The noise floor of an A/A comparison: per cell, the workload, the metric, the pairs, the CI
/// half-width of the ratio and the suggested budget.
pub fn noise_table(aa: &GateReport, suggested: &Policy) -> String {
    let mut rows = vec![["WORKLOAD", "METRIC", "PAIRS", "A/A CHANGE", "CI HALF-WIDTH", "SUGGESTED BUDGET"]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()];
    for c in &aa.cells {
        let (change, _, _) = c.change();
        rows.push(vec![
            c.key(),
            format!("{} ({})", c.metric.name(), c.unit),
            c.n_cand.to_string(),
            format::pct(change),
            format!("±{:.1}%", (c.ratio_high - c.ratio_low) / 2.0 * 100.0),
            format::budget(suggested.workloads.get(&c.key()).and_then(|w| w.budgets.get(&c.metric)).copied()),
        ]);
    }
    crate::report::table::columns(&rows, &[], false)
}

/// Runs `schedperf calibrate`: an A/A run of one build, prints the noise floor and writes the
/// suggested budgets as a gate.toml.
pub fn run_calibrate(args: &CalibrateArgs) -> Result<i32, Error> {
    let plan = runner::AbPlan {
        base_bin: args.bin.clone(),
        cand_bin: args.bin.clone(),
        run_args: args.run_args.clone(),
        pairs: args.pairs,
        policy: Policy::default(),
        extend_suspect: false,
    };
    let outcome = runner::run_ab(&plan, &mut runner::spawn_run, &mut |m| eprintln!("{m}"))?;
    let suggested = suggest_budgets(&outcome.gate);
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", noise_table(&outcome.gate, &suggested));
    let toml = format!(
        "# Suggested by `schedperf calibrate` from an A/A run of {} pairs: max(default, 3 x CI half-width).\n{}",
        args.pairs,
        suggested.to_toml()
    );
    std::fs::write(&args.out, toml).map_err(|e| write_err(&args.out, e))?;
    let _ = writeln!(out, "wrote {}", args.out.display());
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&outcome.report).expect("report serializes") + "\n";
        std::fs::write(path, text).map_err(|e| write_err(path, e))?;
    }
    Ok(EXIT_PASS)
}

/// Budgets from an A/A calibration run: per workload and metric with a default budget,
/// `max(default, 3 x CI half-width)` where the half-width is `(ratio_high - ratio_low) / 2`, rounded
/// up to 0.5%. The policy keeps the calibration's alpha.
pub fn suggest_budgets(aa: &GateReport) -> Policy {
    let mut policy = Policy { alpha: aa.alpha, ..Policy::default() };
    for c in &aa.cells {
        let Some(default) = c.metric.default_budget(aa.paired) else {
            continue;
        };
        let half_width = (c.ratio_high - c.ratio_low) / 2.0;
        let budget = (default.max(3.0 * half_width) * 200.0 - 1e-9).ceil() / 200.0;
        policy.workloads.entry(c.key()).or_default().budgets.insert(c.metric, budget);
    }
    policy
}

#[cfg(test)]
mod cli_tests;
#[cfg(test)]
mod instruction_tests;
#[cfg(test)]
mod tests;
