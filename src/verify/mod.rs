//! `schedperf verify`: decisions checked against the real kube-scheduler (the Go oracle in
//! `oracle/`, built by `scripts/oracle.sh`).
//!
//! Two modes share one oracle process (`schedperf-oracle serve`, JSON lines):
//! - `--random N --seed S`: N generated cases (cluster, pod, config; see [`gen`]), each explained
//!   by both; every divergence is written as a reproducer under `--out`.
//! - `--queue-random N --seed S`: N generated queue scripts run by schedperf's queue and by upstream's
//!   `PriorityQueue` (`schedperf-oracle queue`), compared step by step (see [`queuetrace`]).
//! - `--hint-random N --seed S`: N generated queueing-hint cases (a plugin, a node or pod event and its
//!   objects, the rejected pod) answered by schedperf's hints and upstream's `QueueingHintFn`s
//!   (`schedperf-oracle hint`; see [`hintcheck`]).
//! - `PATH` (workload files): a lockstep replay (see [`lockstep`]); both schedule each pod on the
//!   same state and must pick the same node.

pub mod compare;
pub mod gen;
pub mod hintcheck;
pub mod lockstep;
pub mod oracle;
pub mod queuetrace;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use crate::api::{self, Object};
use crate::cluster::Cluster;
use crate::config::SchedulerConfig;
use crate::error::InputError;
use crate::explain::explain_parsed;

pub use oracle::{Oracle, OracleError};

#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    /// The oracle binary (`scripts/oracle.sh | tail -1` builds it and prints its path).
    #[arg(long)]
    pub oracle: PathBuf,
    /// Check N generated cases (cluster, pod, config) instead of replaying workloads.
    #[arg(long, value_name = "N")]
    pub random: Option<u64>,
    /// Check N generated queue scripts (queue timing and order, both SchedulerPopFromBackoffQ values).
    #[arg(long, value_name = "N")]
    pub queue_random: Option<u64>,
    /// Check N generated queueing-hint cases (the 7 filter plugins' hints on node and pod events).
    #[arg(long, value_name = "N")]
    pub hint_random: Option<u64>,
    /// The seed of the generated cases.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where reproducers of divergences go (cluster.yaml, pod.yaml, config.yaml, diff.txt per case).
    #[arg(long, default_value = "verify-out")]
    pub out: PathBuf,
    /// Stop after this many divergences (0: never).
    #[arg(long, default_value_t = 20)]
    pub max_divergences: u64,
    /// Seconds the oracle may take for one answer before it counts as hung.
    #[arg(long, default_value_t = 60)]
    pub oracle_timeout_s: u64,
    /// Workload files or directories to replay in lockstep.
    pub paths: Vec<PathBuf>,
    /// Only these test cases (exact name, repeatable).
    #[arg(long)]
    pub test_case: Vec<String>,
    /// Only these workloads (exact name, repeatable).
    #[arg(long)]
    pub workload: Vec<String>,
    /// Label filter as in `run` (e.g. `short`, `performance,-scale`).
    #[arg(long)]
    pub label_filter: Option<String>,
}

/// Runs `schedperf verify`; the exit code: 0 all agree, 1 a divergence or an oracle that crashed
/// or hung (the output names the case; never counted as agreement), 2 bad input.
pub fn run_verify(args: &VerifyArgs) -> Result<i32, InputError> {
    if !args.oracle.is_file() {
        return Err(InputError::new(
            "--oracle",
            "",
            format!(
                "{} is not a file; build the oracle with scripts/oracle.sh (its last line is the path)",
                args.oracle.display()
            ),
        ));
    }
    if let Some(n) = args.hint_random {
        if args.random.is_some() || args.queue_random.is_some() || !args.paths.is_empty() {
            return Err(InputError::new(
                "--hint-random",
                "",
                "give --hint-random N alone (not with --random, --queue-random or paths)",
            ));
        }
        return hintcheck::run(args, n);
    }
    if let Some(n) = args.queue_random {
        if args.random.is_some() || !args.paths.is_empty() {
            return Err(InputError::new(
                "--queue-random",
                "",
                "give --queue-random N alone (not with --random or paths)",
            ));
        }
        return queuetrace::run(args, n);
    }
    match (args.random, args.paths.is_empty()) {
        (Some(_), false) => Err(InputError::new("--random", "", "give either --random N or workload paths, not both")),
        (None, true) => Err(InputError::new(
            "verify",
            "",
            "give --random N, --queue-random N, --hint-random N or one or more workload paths",
        )),
        (Some(n), true) => run_random(args, n),
        (None, false) => lockstep::run(args),
    }
}

fn start_oracle(args: &VerifyArgs) -> Result<Oracle, InputError> {
    Oracle::start(&args.oracle, Duration::from_secs(args.oracle_timeout_s))
        .map_err(|e| InputError::new("--oracle", "", e.to_string()))
}

/// Objects as one multi-document stream (JSON documents are YAML documents).
pub fn to_json_stream(objs: &[Value]) -> String {
    objs.iter().map(|o| o.to_string()).collect::<Vec<_>>().join("\n---\n")
}

fn run_random(args: &VerifyArgs, n: u64) -> Result<i32, InputError> {
    let mut oracle = start_oracle(args)?;
    let started = Instant::now();
    let (mut agree, mut diverged, mut drawn) = (0u64, 0u64, 0u64);
    for i in 0..n {
        let case = gen::generate(args.seed, i);
        let ours = explain_ours(&case);
        let request = json!({
            "op": "explain",
            "cluster": to_json_stream(&case.cluster),
            "pod": case.pod.to_string(),
            "config": case.config.as_ref().map(|c| c.to_string()),
        });
        let theirs = match oracle.call(&request) {
            Ok(v) => Ok(v),
            Err(OracleError::Refused(e)) => Err(e),
            Err(e) => {
                let dir =
                    write_reproducer(&args.out, args.seed, i, &case, &[format!("oracle failure: {e}")], None, None);
                eprintln!("verify: case {i} (seed {}): {e}; reproducer in {}", args.seed, dir.display());
                println!("verify: {agree}/{n} cases agree (stopped at case {i}: the oracle failed)");
                return Ok(crate::error::exit::FAILED.into());
            }
        };
        let diff = match (&ours, &theirs) {
            (Ok(a), Ok(b)) => compare::diff_explanations(a, b),
            (Err(a), Err(b)) => {
                let _ = (a, b);
                Vec::new()
            }
            (Err(a), Ok(_)) => vec![format!("schedperf refused the case: {a}")],
            (Ok(a), Err(b)) => match a.get("error").and_then(Value::as_str) {
                Some(e) if compare::same_error(e, b) => Vec::new(),
                Some(e) => vec![format!("error: schedperf {e:?} vs kube-scheduler {b:?}")],
                None => vec![format!("kube-scheduler refused the case: {b}")],
            },
        };
        if diff.is_empty() {
            agree += 1;
            if let (Ok(a), Ok(b)) = (&ours, &theirs) {
                drawn += u64::from(compare::random_nomination(a, b));
            }
        } else {
            diverged += 1;
            let dir = write_reproducer(&args.out, args.seed, i, &case, &diff, ours.as_ref().ok(), theirs.as_ref().ok());
            eprintln!("verify: case {i} diverges ({} differences): {}", diff.len(), dir.display());
            for line in diff.iter().take(3) {
                eprintln!("    {line}");
            }
            if args.max_divergences > 0 && diverged >= args.max_divergences {
                println!("verify: {agree}/{n} cases agree (stopped after {diverged} divergences at case {i})");
                return Ok(crate::error::exit::FAILED.into());
            }
        }
        if (i + 1) % 1000 == 0 {
            eprintln!("verify: {} cases, {} diverge, {:.1} s", i + 1, diverged, started.elapsed().as_secs_f64());
        }
    }
    if drawn > 0 {
        println!(
            "verify: in {drawn} agreeing cases upstream's random preemption offset led it to another candidate \
             that schedperf lists in mayNominate, with the same victims"
        );
    }
    println!("verify: {agree}/{n} cases agree");
    use crate::error::exit;
    Ok(i32::from(if agree == n { exit::OK } else { exit::FAILED }))
}

/// schedperf's answer for a generated case, as the JSON `schedperf explain --output json` prints.
fn explain_ours(case: &gen::Case) -> Result<Value, String> {
    let objs = api::parse_objects(&to_json_stream(&case.cluster), "cluster.yaml").map_err(|e| e.to_string())?;
    let cluster = Cluster::from_objects(objs);
    let pod = match api::parse_objects(&case.pod.to_string(), "pod.yaml").map_err(|e| e.to_string())?.pop() {
        Some(Object::Pod(p)) => p,
        _ => return Err("pod.yaml: expected one Pod".into()),
    };
    let config = match &case.config {
        Some(c) => SchedulerConfig::parse(&c.to_string(), "config.yaml").map_err(|e| e.to_string())?,
        None => SchedulerConfig::defaults(),
    };
    let e = explain_parsed(&config, &cluster, "cluster.yaml", &pod, "pod.yaml", 0).map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(e).expect("an explanation serializes"))
}

fn yaml_stream(objs: &[Value]) -> String {
    objs.iter().map(|o| serde_norway::to_string(o).unwrap_or_default()).collect::<Vec<_>>().join("---\n")
}

/// Writes cluster.yaml, pod.yaml, config.yaml, diff.txt and both answers; returns the directory.
fn write_reproducer(
    out: &Path,
    seed: u64,
    index: u64,
    case: &gen::Case,
    diff: &[String],
    ours: Option<&Value>,
    theirs: Option<&Value>,
) -> PathBuf {
    let dir = out.join(format!("seed{seed}-case{index}"));
    let write = |name: &str, text: String| {
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join(name), text)) {
            eprintln!("verify: cannot write {}: {e}", dir.join(name).display());
        }
    };
    write("cluster.yaml", yaml_stream(&case.cluster));
    write("pod.yaml", serde_norway::to_string(&case.pod).unwrap_or_default());
    if let Some(c) = &case.config {
        write("config.yaml", serde_norway::to_string(c).unwrap_or_default());
    }
    let mut text = diff.join("\n");
    text.push('\n');
    let cfg = if case.config.is_some() { " --config config.yaml" } else { "" };
    text.push_str(&format!(
        "\n# reproduce:\n#   schedperf explain --cluster cluster.yaml --pod pod.yaml{cfg} --output json\n#   schedperf-oracle explain --cluster cluster.yaml --pod pod.yaml{cfg} --output json\n"
    ));
    write("diff.txt", text);
    if let Some(v) = ours {
        write("schedperf.json", serde_json::to_string_pretty(v).unwrap_or_default());
    }
    if let Some(v) = theirs {
        write("kube-scheduler.json", serde_json::to_string_pretty(v).unwrap_or_default());
    }
    dir
}
