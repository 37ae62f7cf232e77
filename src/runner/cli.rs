//! `schedperf run`: selects workloads, runs each (repetitions in fresh processes), writes reports.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use super::{run_workload, AgentSpec, RunError, RunOptions};
use crate::agent::sim::{SimConfig, SimOverrides};
use crate::cluster::Cluster;
use crate::error::InputError;
use crate::report::RepOutcome;
use crate::workload::gates::GateStatus;
use crate::workload::{load_path, resolve, skip_reason, workload_labels, LabelFilter, ResolvedWorkload};

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
    /// Seed of every random choice (preemption candidates, the simulated agent's latencies and
    /// failures): the same seed, workload and config give the same placements.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads for the filter and score passes (at least 1; 1 keeps them on the scheduling thread).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The node agent bound pods go to: `sim` (simulated, KWOK-like stages) or `cri` (a real
    /// container runtime, with --cri-endpoint).
    #[arg(long, value_enum, default_value = "sim")]
    pub agent: AgentKind,
    /// A simulated-agent stage file (see workloads/agents/).
    #[arg(long)]
    pub agent_config: Option<PathBuf>,
    /// Simulated agent: milliseconds from bind to Bound (overrides --agent-config).
    #[arg(long)]
    pub sim_bind_latency_ms: Option<f64>,
    /// Simulated agent: milliseconds from Bound to Running (overrides --agent-config).
    #[arg(long)]
    pub sim_start_latency_ms: Option<f64>,
    /// Simulated agent: uniform jitter in milliseconds added to each stage's latency.
    #[arg(long)]
    pub sim_jitter_ms: Option<f64>,
    /// Simulated agent: the share of binds that fail (0..1); failed pods are retried.
    #[arg(long)]
    pub sim_bind_failure_rate: Option<f64>,
    /// Virtual time: agent latencies cost no wall time, and each scheduling cycle advances the clock
    /// by a fixed model (2.5 µs per attempt + 30 ns per evaluated node, `virtualCycleCost` in the
    /// report), so the same inputs replay the same placements on any machine.
    #[arg(long)]
    pub virtual_time: bool,
    /// Repetitions of each workload, each in a fresh process.
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
    /// Write report.json, report.md and report.html here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The summary on stdout: an aligned `table`, the whole report as `json`, or `markdown`.
    #[arg(long, value_enum, default_value = "table")]
    pub format: RunFormat,
    /// A JSON-lines trace of every pod's life (a `workload` line starts each workload). With
    /// --reps N > 1, one file per repetition: `trace.jsonl` becomes `trace.rep0.jsonl`, ...
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Percent of cycles whose plugins are timed one by one (0..=100; cycle k is timed when
    /// floor(k * P / 100) steps up, so exactly P of every 100 cycles are).
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

/// The workloads `run` would run, and those it skips (name, reason).
#[derive(Debug, Default)]
pub struct Selection {
    pub workloads: Vec<ResolvedWorkload>,
    pub skipped: Vec<(String, String)>,
}

/// Selected workloads of `path`, resolved; workloads schedperf cannot run are skipped with a
/// reason ([`crate::workload::skip_reason`], the same answer `schedperf list` gives).
pub fn select(args: &RunArgs) -> Result<Selection, InputError> {
    let filter = LabelFilter::parse(&args.label_filter)?;
    let mut out = Selection::default();
    for (_, cases) in load_path(&args.path)? {
        for tc in &cases {
            if args.test_case.as_ref().is_some_and(|n| n != &tc.name) {
                continue;
            }
            for w in &tc.workloads {
                if args.workload.as_ref().is_some_and(|n| n != &w.name) {
                    continue;
                }
                // A named workload runs whatever its labels; otherwise the filter decides.
                let wanted = args.workload.is_some()
                    || args.test_case.is_some() && args.label_filter == "performance"
                    || filter.matches(&workload_labels(tc, w));
                if !wanted {
                    continue;
                }
                match skip_reason(tc, w) {
                    Some(reason) => out.skipped.push((format!("{}/{}", tc.name, w.name), reason)),
                    None => out.workloads.push(resolve(tc, w)?),
                }
            }
        }
    }
    if let Some(i) = args.workload_index {
        if i >= out.workloads.len() {
            return Err(InputError::new(
                "--workload-index",
                "",
                format!("{i}; the selection has {} workloads", out.workloads.len()),
            ));
        }
        out.workloads = vec![out.workloads.swap_remove(i)];
    }
    if out.workloads.is_empty() && out.skipped.is_empty() {
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
        AgentKind::Cri => super::cri::agent_spec(args, sim, super::cri::workload_images(&select(args)?.workloads)?),
    }
}

fn options(args: &RunArgs, rep: u32, cluster: Option<Arc<Cluster>>) -> Result<RunOptions, InputError> {
    if args.threads == 0 {
        return Err(InputError::new(
            "--threads",
            "",
            "0 threads; expected at least 1 (1 keeps every pass on the scheduling thread)",
        ));
    }
    if args.plugin_sample_percent > 100 {
        return Err(InputError::new(
            "--plugin-sample-percent",
            "",
            format!("{}; expected a percentage 0..=100", args.plugin_sample_percent),
        ));
    }
    Ok(RunOptions {
        seed: args.seed,
        threads: args.threads,
        config_override: args.config.clone(),
        cluster: args.cluster.clone(),
        cluster_objects: cluster,
        agent: agent_spec(args)?,
        virtual_time: args.virtual_time,
        plugin_sample_percent: args.plugin_sample_percent,
        events_file: args.events.as_ref().map(|p| events_path(p, args, rep)),
        progress: std::io::stderr().is_terminal() && args.rep_index.is_none(),
        rep,
        ..RunOptions::default()
    })
}

/// The trace file of repetition `rep`: `--events` as given for a single repetition, else with
/// `.rep<N>` before the extension (`trace.jsonl` -> `trace.rep2.jsonl`).
pub fn events_path(events: &std::path::Path, args: &RunArgs, rep: u32) -> PathBuf {
    if args.reps <= 1 && args.rep_index.is_none() {
        return events.to_path_buf();
    }
    let stem = events.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match events.extension() {
        Some(ext) => format!("{stem}.rep{rep}.{}", ext.to_string_lossy()),
        None => format!("{stem}.rep{rep}"),
    };
    events.with_file_name(name)
}

/// Prints what each workload's feature gates mean for the run (once per workload).
fn print_gates(w: &ResolvedWorkload) {
    for (name, value, st) in &w.gate_statuses {
        let detail = match st {
            GateStatus::Default => format!("the {} default, which the engine runs", crate::workload::gates::RELEASE),
            GateStatus::Honoured(r)
            | GateStatus::NotApplicable(r)
            | GateStatus::NotHonoured(r)
            | GateStatus::Skip(r) => r.clone(),
        };
        eprintln!("{}: feature gate {name}={value}: {}: {detail}", w.name, st.word());
    }
}

/// Runs one repetition of every selected workload in this process.
pub fn run_in_process(args: &RunArgs, rep: u32, cluster: Option<Arc<Cluster>>) -> Result<RepOutcome, RunError> {
    let opts = options(args, rep, cluster)?;
    if let Some(path) = &opts.events_file {
        // One trace per repetition: every workload of it appends to the file made empty here.
        std::fs::File::create(path).map_err(|e| {
            InputError::new(path.display().to_string(), "", format!("cannot create the events file: {e}"))
        })?;
    }
    let mut out = RepOutcome::default();
    for w in select(args)?.workloads {
        if rep == 0 && args.rep_index.is_none() {
            print_gates(&w);
        }
        // Each workload's peak RSS is its own, not the high-water mark of the ones before it.
        crate::metrics::reset_peak_rss();
        match run_workload(&w, &opts) {
            Ok(r) => {
                if !r.outcome.passed {
                    out.failures.push((w.name.clone(), r.outcome.message.clone()));
                }
                out.runs.push(r);
            }
            Err(RunError::Failed(why)) => out.failures.push((w.name.clone(), why)),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Runs one repetition in a fresh process of this same binary and reads its outcome back.
/// `cluster_copies` replace the `--cluster` files (already read by this process).
fn run_fresh_process(rep: u32, cluster_copies: &[PathBuf]) -> Result<RepOutcome, RunError> {
    let exe = std::env::current_exe().map_err(|e| RunError::Runtime(format!("cannot find this program: {e}")))?;
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // Drop --reps/--out/--format and their values (the child prints its outcome as JSON), and
    // --cluster (replaced by the copies). --events stays: the child writes its repetition's file
    // (`events_path`).
    let mut i = 0;
    let mut filtered = Vec::new();
    while i < argv.len() {
        let a = &argv[i];
        let takes_value = ["--reps", "--out", "--format", "--cluster"];
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
    for copy in cluster_copies {
        filtered.push("--cluster".into());
        filtered.push(copy.display().to_string());
    }
    let out = Command::new(exe)
        .args(&filtered)
        .arg("--rep-index")
        .arg(rep.to_string())
        .output()
        .map_err(|e| RunError::Runtime(format!("cannot start a repetition: {e}")))?;
    if !out.status.success() {
        // The child's own exit code says what failed: bad input stays exit 2, a dead runtime or a
        // crash (a signal) is a runtime failure, exit 4.
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(match out.status.code() {
            Some(c) if c == i32::from(crate::error::exit::RUNTIME) => {
                RunError::Runtime(format!("repetition {rep}: {}", stderr.trim()))
            }
            _ => crate::error::child_failure(&format!("repetition {rep}"), out.status, &stderr).into(),
        });
    }
    // What the first repetition says about the run (cluster pods left to other schedulers, ...).
    if rep == 0 {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| RunError::Runtime(format!("repetition {rep} printed no outcome: {e}")))
}

/// Copies of the `--cluster` inputs for fresh-process repetitions: the originals may be pipes
/// that this process has already read.
fn cluster_copies(args: &RunArgs, cluster: &Cluster) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    if args.cluster.is_empty() {
        return Ok(out);
    }
    let dir = std::env::temp_dir();
    for (i, path) in args.cluster.iter().enumerate() {
        let copy = dir.join(format!("schedperf-cluster-{}-{i}.yaml", std::process::id()));
        let original = cluster.files.get(i).cloned().unwrap_or_else(|| path.display().to_string());
        let body = CLUSTER_TEXTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(i)
            .cloned()
            .ok_or_else(|| InputError::new(&original, "", "the cluster file was not read"))?;
        std::fs::write(&copy, body).map_err(|e| {
            InputError::new(copy.display().to_string(), "", format!("cannot write a copy of {original}: {e}"))
        })?;
        out.push(copy);
    }
    Ok(out)
}

/// The text of each `--cluster` file as this process read it (for fresh-process repetitions).
static CLUSTER_TEXTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `schedperf run`: returns the exit code (0; 1 when a workload missed its threshold or failed
/// as upstream's harness would fail it; 4 when real pods failed on a CRI runtime). Errors: bad
/// input, an agent that cannot start included (exit 2), a crashed repetition (exit 4).
pub fn run_command(args: &RunArgs) -> Result<i32, RunError> {
    if let Some(rep) = args.rep_index {
        // The parent handed over copies of the cluster files; each is read once here.
        let cluster = if args.cluster.is_empty() { None } else { Some(Arc::new(Cluster::load(&args.cluster)?)) };
        let outcome = run_in_process(args, rep, cluster)?;
        println!("{}", serde_json::to_string(&outcome).expect("outcome serializes"));
        return Ok(crate::error::exit::OK.into());
    }
    // Validate everything before the first repetition starts; read the cluster once.
    let selection = select(args)?;
    if args.measure == Measure::Instructions && args.agent != AgentKind::Sim {
        return Err(InputError::new(
            "--measure",
            "instructions",
            "counts the scheduling cycles under valgrind with the simulated agent; drop --agent cri",
        )
        .into());
    }
    let cluster = if args.cluster.is_empty() {
        None
    } else {
        let mut texts = Vec::new();
        for path in &args.cluster {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError::new(&file, "", format!("cannot read the cluster file: {e}")))?;
            texts.push((file, text));
        }
        *CLUSTER_TEXTS.lock().unwrap_or_else(|e| e.into_inner()) = texts.iter().map(|(_, t)| t.clone()).collect();
        let c = Cluster::parse(&texts)?;
        report_cluster(&c)?;
        Some(Arc::new(c))
    };
    options(args, 0, cluster.clone())?;
    for (name, reason) in &selection.skipped {
        eprintln!("skipped {name}: {reason}");
    }
    let mut outcome = RepOutcome::default();
    if args.measure == Measure::Instructions {
        outcome =
            crate::instructions::valgrind::measure(args.reps.max(1), selection.workloads.len(), args.out.as_deref())?;
        // Thresholds are throughputs, and callgrind's times are ~50x slow: reported, not judged.
        for run in &mut outcome.runs {
            run.threshold_passed = None;
        }
    } else if args.reps <= 1 {
        outcome = run_in_process(args, 0, cluster)?;
    } else {
        let copies = match &cluster {
            Some(c) => cluster_copies(args, c)?,
            None => Vec::new(),
        };
        for w in &selection.workloads {
            print_gates(w);
        }
        let mut result = Ok(());
        for rep in 0..args.reps {
            match run_fresh_process(rep, &copies) {
                Ok(o) => {
                    outcome.runs.extend(o.runs);
                    outcome.failures.extend(o.failures.into_iter().map(|(n, why)| (format!("{n} (rep {rep})"), why)));
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        for copy in &copies {
            let _ = std::fs::remove_file(copy);
        }
        result?;
    }
    let report = crate::report::header::report(outcome.runs);
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
    for (name, why) in &outcome.failures {
        eprintln!("FAILED {name}: {why}");
    }
    if !selection.skipped.is_empty() || !outcome.failures.is_empty() {
        eprintln!(
            "{} workloads ran to the end, {} failed, {} skipped",
            report.runs.iter().filter(|r| r.outcome.passed).count(),
            outcome.failures.len(),
            selection.skipped.len()
        );
    }
    // A runtime failure (real pods that failed on a CRI runtime) outranks an outcome failure.
    use crate::error::exit;
    let runtime_failed = report.runs.iter().any(crate::report::runtime_failed);
    let failed = !outcome.failures.is_empty() || report.runs.iter().any(|r| r.threshold_passed == Some(false));
    Ok(i32::from(if runtime_failed {
        exit::RUNTIME
    } else if failed {
        exit::FAILED
    } else {
        exit::OK
    }))
}

/// Says on stderr what the run makes of a `--cluster` input.
fn report_cluster(cluster: &Cluster) -> Result<(), InputError> {
    let files = cluster.files.join(", ");
    let mut uids = crate::cluster::UidGen::default();
    let (_, _, summary) = crate::cluster::build_snapshot_counted(cluster, &files, &mut uids)?;
    eprintln!(
        "cluster {files}: {} nodes, {} bound pods, {} pending pods, {} Succeeded/Failed pods (they hold no capacity)",
        cluster.nodes.len(),
        summary.bound,
        summary.pending,
        summary.finished
    );
    if let Some(line) = cluster.ignored_summary() {
        eprintln!("cluster {files}: {line}");
    }
    let names: std::collections::BTreeSet<&str> = cluster
        .pods
        .iter()
        .filter(|p| p.spec.node_name.is_empty())
        .filter(|p| !matches!(p.status.phase, Some(crate::api::PodPhase::Succeeded | crate::api::PodPhase::Failed)))
        .map(|p| if p.spec.scheduler_name.is_empty() { "default-scheduler" } else { p.spec.scheduler_name.as_str() })
        .collect();
    if !names.is_empty() {
        let names: Vec<&str> = names.into_iter().collect();
        eprintln!(
            "cluster {files}: pending pods name schedulers {names:?}: each goes to the profile of that name; a pod whose scheduler has no profile here is left to that scheduler (not scheduled, not counted)"
        );
    }
    Ok(())
}
