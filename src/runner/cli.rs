//! `schedperf run`: selects workloads, runs each (repetitions in fresh processes), writes reports.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::Command;

use super::{run_workload, AgentSpec, RunError, RunOptions};
use crate::agent::sim::{SimConfig, SimOverrides};
use crate::error::InputError;
use crate::report::{Machine, Report, RunReport, ToolInfo, SCHEMA_VERSION};
use crate::workload::{load_path, resolve, LabelFilter, ResolvedWorkload};

/// Output format of the summary on stdout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RunFormat {
    Table,
    Json,
    Markdown,
}

/// What a run measures.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Measure {
    /// Wall-clock time (throughput, latencies).
    Time,
    /// Instructions of the measured phase, each workload and repetition re-run under valgrind's
    /// callgrind (needs the `valgrind` package at run time; times are then ~50x slow, not gated).
    Instructions,
}

/// Which node agent runs the bound pods.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentKind {
    Sim,
    Cri,
}

/// Arguments of `schedperf run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// A workload file (scheduler_perf format) or a directory of them.
    pub path: PathBuf,
    /// Only this test case.
    #[arg(long)]
    pub test_case: Option<String>,
    /// Only this workload of the test case(s).
    #[arg(long)]
    pub workload: Option<String>,
    /// scheduler_perf's label filter: `performance`, `+short`, `-slow`, comma-separated.
    #[arg(long, default_value = "performance")]
    pub label_filter: String,
    /// A KubeSchedulerConfiguration that replaces each test case's.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// An initial cluster (`kubectl get nodes,pods -A -o yaml`), before the workload's ops (repeatable).
    #[arg(long)]
    pub cluster: Vec<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads for the filter and score passes.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    #[arg(long, value_enum, default_value = "sim")]
    pub agent: AgentKind,
    /// A simulated-agent stage file (see workloads/agents/).
    #[arg(long)]
    pub agent_config: Option<PathBuf>,
    #[arg(long)]
    pub sim_bind_latency_ms: Option<f64>,
    #[arg(long)]
    pub sim_start_latency_ms: Option<f64>,
    #[arg(long)]
    pub sim_jitter_ms: Option<f64>,
    #[arg(long)]
    pub sim_bind_failure_rate: Option<f64>,
    /// Virtual time: agent latencies cost no wall time; scheduling work still costs real time.
    #[arg(long)]
    pub virtual_time: bool,
    /// Repetitions of each workload, each in a fresh process.
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
    /// Write report.json, report.md and report.html here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: RunFormat,
    /// A JSON-lines trace of every pod's life.
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Percent of cycles whose plugins are timed one by one.
    #[arg(long, default_value_t = 10)]
    pub plugin_sample_percent: u32,
    /// CRI endpoints (`unix:///run/containerd.sock`, `tcp://host:port`), with `--agent cri` (repeatable).
    #[arg(long)]
    pub cri_endpoint: Vec<String>,
    /// With `--agent cri`: how many pods the real runtime starts, a count (`10`) or a fraction
    /// (`0.1`); the rest run on the simulated agent (`--agent-config`, `--sim-*`). Default: all.
    #[arg(long)]
    pub cri_pods: Option<String>,
    /// With `--agent cri`: images to run instead of the ones the workload names (a benchmark never
    /// pulls): `FROM=TO[,FROM=TO]`, `*=TO` for every image, or a file of `FROM -> TO` lines (repeatable).
    #[arg(long)]
    pub cri_image_map: Vec<String>,
    /// `time` (default) or `instructions`: count the measured phase's instructions under
    /// valgrind's callgrind (report field `instructions`, per plugin and extension point).
    #[arg(long, value_enum, default_value = "time")]
    pub measure: Measure,
    /// Internal: run only the selected workload with this index (instruction children).
    #[arg(long, hide = true)]
    pub workload_index: Option<usize>,
    /// Internal: run one repetition and print its runs as JSON (used for fresh-process repetitions).
    #[arg(long, hide = true)]
    pub rep_index: Option<u32>,
}

/// Selected workloads of `path`, resolved.
pub fn select(args: &RunArgs) -> Result<Vec<ResolvedWorkload>, InputError> {
    let filter = LabelFilter::parse(&args.label_filter)?;
    let mut out = Vec::new();
    for (_, cases) in load_path(&args.path)? {
        for tc in &cases {
            if args.test_case.as_ref().is_some_and(|n| n != &tc.name) {
                continue;
            }
            for w in &tc.workloads {
                if args.workload.as_ref().is_some_and(|n| n != &w.name) {
                    continue;
                }
                let r = resolve(tc, w)?;
                // A named workload runs whatever its labels; otherwise the filter decides.
                if args.workload.is_some()
                    || args.test_case.is_some() && args.label_filter == "performance"
                    || filter.matches(&r.labels)
                {
                    out.push(r);
                }
            }
        }
    }
    if let Some(i) = args.workload_index {
        if i >= out.len() {
            return Err(InputError::new(
                "--workload-index",
                "",
                format!("{i}; the selection has {} workloads", out.len()),
            ));
        }
        out = vec![out.swap_remove(i)];
    }
    if out.is_empty() {
        return Err(InputError::new(
            args.path.display().to_string(),
            "",
            format!(
                "no workload matches (test case {:?}, workload {:?}, label filter {:?}); `schedperf list {}` shows them",
                args.test_case,
                args.workload,
                args.label_filter,
                args.path.display()
            ),
        ));
    }
    Ok(out)
}

fn agent_spec(args: &RunArgs) -> Result<AgentSpec, InputError> {
    let base = match &args.agent_config {
        Some(p) => SimConfig::load(p)?,
        None => SimConfig::zero_latency(),
    };
    let sim = base.with_overrides(&SimOverrides {
        bind_latency_ms: args.sim_bind_latency_ms,
        start_latency_ms: args.sim_start_latency_ms,
        jitter_ms: args.sim_jitter_ms,
        bind_failure_rate: args.sim_bind_failure_rate,
    })?;
    match args.agent {
        AgentKind::Sim => {
            super::cri::reject_cri_flags(args)?;
            Ok(AgentSpec::Sim(sim))
        }
        // The simulated config runs the pods that `--cri-pods` leaves simulated.
        AgentKind::Cri => super::cri::agent_spec(args, sim, super::cri::workload_images(&select(args)?)?),
    }
}

fn options(args: &RunArgs, rep: u32) -> Result<RunOptions, InputError> {
    Ok(RunOptions {
        seed: args.seed,
        threads: args.threads.max(1),
        config_override: args.config.clone(),
        cluster: args.cluster.clone(),
        agent: agent_spec(args)?,
        virtual_time: args.virtual_time,
        plugin_sample_percent: args.plugin_sample_percent.min(100),
        events_file: args.events.clone(),
        progress: std::io::stderr().is_terminal() && args.rep_index.is_none(),
        rep,
        ..RunOptions::default()
    })
}

/// Runs one repetition of every selected workload in this process.
pub fn run_in_process(args: &RunArgs, rep: u32) -> Result<Vec<RunReport>, RunError> {
    let opts = options(args, rep)?;
    let mut runs = Vec::new();
    for w in select(args)? {
        runs.push(run_workload(&w, &opts)?);
    }
    Ok(runs)
}

/// Runs one repetition in a fresh process of this same binary and reads its runs back.
fn run_fresh_process(rep: u32) -> Result<Vec<RunReport>, RunError> {
    let exe = std::env::current_exe().map_err(|e| RunError::Agent(format!("cannot find this program: {e}")))?;
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    // Drop --reps/--out/--format/--events and their values; the child prints JSON runs.
    let mut i = 0;
    let mut filtered = Vec::new();
    while i < argv.len() {
        let a = &argv[i];
        let takes_value = ["--reps", "--out", "--format", "--events"];
        if takes_value.contains(&a.as_str()) {
            i += 2;
            continue;
        }
        if takes_value.iter().any(|f| a.starts_with(&format!("{f}="))) {
            i += 1;
            continue;
        }
        filtered.push(a.clone());
        i += 1;
    }
    argv = filtered;
    let out = Command::new(exe)
        .args(&argv)
        .arg("--rep-index")
        .arg(rep.to_string())
        .output()
        .map_err(|e| RunError::Agent(format!("cannot start a repetition: {e}")))?;
    if !out.status.success() {
        return Err(RunError::Agent(format!(
            "repetition {rep} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| RunError::Agent(format!("repetition {rep} printed no runs: {e}")))
}

fn git_commit() -> String {
    option_env!("SCHEDPERF_GIT_COMMIT").map(str::to_string).unwrap_or_else(|| {
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".to_string())
    })
}

/// This machine, coarsely (for the report header).
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or_else(|| "unknown".to_string(), |s| s.trim().to_string());
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    Machine { cpu_model, cores: std::thread::available_parallelism().map_or(1, |n| n.get()), memory_bytes, kernel }
}

/// A report around `runs`.
pub fn report(runs: Vec<RunReport>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION.to_string(),
        tool: ToolInfo {
            name: "schedperf".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: git_commit(),
        },
        command_line: std::env::args().collect(),
        machine: machine(),
        created_unix_seconds: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        runs,
    }
}

/// `schedperf run`: returns the exit code (0, or 1 when a workload missed its threshold).
pub fn run_command(args: &RunArgs) -> Result<i32, RunError> {
    if let Some(rep) = args.rep_index {
        let runs = run_in_process(args, rep)?;
        println!("{}", serde_json::to_string(&runs).expect("runs serialize"));
        return Ok(0);
    }
    // Validate everything before the first repetition starts.
    select(args)?;
    options(args, 0)?;
    if args.measure == Measure::Instructions && args.agent != AgentKind::Sim {
        return Err(InputError::new(
            "--measure",
            "instructions",
            "counts the scheduling cycles under valgrind with the simulated agent; drop --agent cri",
        )
        .into());
    }
    let mut runs = Vec::new();
    if args.measure == Measure::Instructions {
        runs = crate::instructions::valgrind::measure(args.reps.max(1), select(args)?.len(), args.out.as_deref())?;
    } else if args.reps <= 1 {
        runs = run_in_process(args, 0)?;
    } else {
        for rep in 0..args.reps {
            runs.extend(run_fresh_process(rep)?);
        }
    }
    let report = report(runs);
    match args.format {
        RunFormat::Table => print!("{}", crate::report::summary_table(&report)),
        RunFormat::Json => println!("{}", serde_json::to_string_pretty(&report).expect("report serializes")),
        RunFormat::Markdown => print!("{}", crate::report::markdown(&report)),
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .and_then(|_| crate::report::write_outputs(&report, dir))
            .map_err(|e| InputError::new(dir.display().to_string(), "", format!("cannot write the report: {e}")))?;
    }
    let failed = report.runs.iter().any(|r| r.threshold_passed == Some(false));
    Ok(if failed { 1 } else { 0 })
}
