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
pub mod table;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use evaluate::{
    decide, evaluate, Cell, GateFlags, GateReport, PlacementCheck, Verdict, EXIT_INPUT, EXIT_NOISY, EXIT_PASS,
    EXIT_REGRESSION, MIN_SAMPLES,
};
pub use input::{load_report, Arm, Report, RunSample};
pub use metric::Metric;
pub use policy::{Policy, WorkloadPolicy};

use crate::error::InputError;
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

/// Arguments of `schedperf compare` (report only, exit 0 unless an input is invalid).
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct CompareArgs {
    /// The first report.json (the reference side).
    pub a: PathBuf,
    /// The second report.json.
    pub b: PathBuf,
    /// Output formats: table, json, markdown, bmf, gab (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', default_value = "table")]
    pub format: Vec<String>,
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
pub fn run_compare(args: &CompareArgs) -> Result<i32, InputError> {
    let text = compare_reports(&args.a, &args.b, &args.format)?;
    std::io::stdout().lock().write_all(text.as_bytes()).map_err(|e| write_err(Path::new("<stdout>"), e))?;
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
mod tests;
