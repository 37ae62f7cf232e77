//! The `schedperf` command line. Thin: parses flags, calls the library, maps errors to exit codes
//! ([`schedperf::error::exit`]: 0 ok, 1 a threshold, gate or outcome failed, 2 bad input or usage,
//! 3 a noisy gate, 4 a runtime failure).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use schedperf::error::{exit, Error};
use schedperf::explain::{explain, render_table, ExplainInput};

// mimalloc (the allocator named for the core), built without transparent huge pages: see
// ARCHITECTURE.md, "The allocator".
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "schedperf",
    version = schedperf::VERSION,
    about = "kube-scheduler's scheduling cycle on a data-oriented core, for benchmarks",
    after_help = exit::HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ExplainOutput {
    Json,
    Table,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate every node for one pod (no sampling) and show each filter verdict and score.
    Explain {
        /// Cluster manifests: Nodes, bound Pods, Namespaces, Services, PriorityClasses, ... (repeatable).
        #[arg(long, required = true)]
        cluster: Vec<PathBuf>,
        /// The pod to schedule (a Pod manifest).
        #[arg(long)]
        pod: PathBuf,
        /// A KubeSchedulerConfiguration file (default: kube-scheduler's defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "table")]
        output: ExplainOutput,
        /// Seed for breaking ties between equally scored nodes.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Run scheduler_perf workloads on a simulated cluster and report throughput, latency and placement.
    Run(Box<schedperf::runner::cli::RunArgs>),
    /// Gate CI on a regression: compare a baseline report with a current one (exit 1 on regression).
    Gate(schedperf::gate::GateArgs),
    /// Compare two saved reports, or run several configs on one workload and compare them (report only).
    Compare(schedperf::gate::CompareArgs),
    /// Talk to a CRI runtime directly (`cri check`: is this endpoint usable for `run --agent cri`?).
    Cri(schedperf::runner::cri::CriArgs),
    /// Interleaved A/B runs of two builds on this machine, gated paired (exit 0/1/2/3 as `gate`).
    Ab(schedperf::gate::AbArgs),
    /// An A/A run of one build: the noise floor per metric and suggested budgets as a gate.toml.
    Calibrate(schedperf::gate::CalibrateArgs),
    /// Check decisions against the real kube-scheduler (the oracle): generated cases, or a lockstep
    /// replay of workload files (exit 0 all agree, 1 a divergence or the oracle crashed or hung, 2 bad input).
    Verify(Box<schedperf::verify::VerifyArgs>),
    /// List the test cases, workloads, labels and thresholds of workload files.
    List {
        /// A workload file or a directory of them.
        path: PathBuf,
        /// Only the workloads `run --label-filter` would select with the same filter
        /// (e.g. `short`, `performance,-scale`); default: every workload.
        #[arg(long)]
        label_filter: Option<String>,
    },
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Explain { cluster, pod, config, output, seed } => {
            let e = explain(&ExplainInput { cluster, pod, config, seed })?;
            match output {
                ExplainOutput::Json => {
                    println!("{}", serde_json::to_string_pretty(&e).expect("explanation serializes"))
                }
                ExplainOutput::Table => print!("{}", render_table(&e)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => match schedperf::runner::cli::run_command(&args) {
            Ok(code) => Ok(ExitCode::from(code as u8)),
            Err(schedperf::runner::RunError::Input(e)) => Err(e.into()),
            Err(e) => {
                eprintln!("error: {e}");
                Ok(ExitCode::from(e.exit_code()))
            }
        },
        Command::Gate(args) => Ok(ExitCode::from(schedperf::gate::run_gate(&args)? as u8)),
        Command::Compare(args) => Ok(ExitCode::from(schedperf::gate::run_compare(&args)? as u8)),
        Command::Cri(args) => Ok(ExitCode::from(schedperf::runner::cri::cri_command(&args)? as u8)),
        Command::Ab(args) => Ok(ExitCode::from(schedperf::gate::run_ab_command(&args)? as u8)),
        Command::Calibrate(args) => Ok(ExitCode::from(schedperf::gate::run_calibrate(&args)? as u8)),
        Command::Verify(args) => Ok(ExitCode::from(schedperf::verify::run_verify(&args)? as u8)),
        Command::List { path, label_filter } => {
            let filter = label_filter.as_deref().map(schedperf::workload::LabelFilter::parse).transpose()?;
            print!("{}", schedperf::workload::list(&path, filter.as_ref())?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { exit::BAD_INPUT } else { exit::OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
