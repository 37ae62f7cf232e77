//! The header of every report: which tool, which upstream release, which machine, which command.

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use super::model::{Machine, Report, RunReport, ToolInfo, SCHEMA_VERSION};

/// The `git rev-parse` that [`prefetch_git_commit`] started, read by the report header.
static GIT_COMMIT: Mutex<Option<Child>> = Mutex::new(None);

fn rev_parse() -> Command {
    let mut c = Command::new("git");
    c.args(["rev-parse", "--short=12", "HEAD"]);
    c
}

/// Starts `git rev-parse` now, so that the report header need not wait for it after the runs (a
/// fork and exec of `git` took 3-110 ms at the end of every `run`, idle wall time; it now overlaps
/// loading and setting up the workloads). Does nothing when the commit was fixed at build time.
pub fn prefetch_git_commit() {
    if option_env!("SCHEDPERF_GIT_COMMIT").is_some() {
        return;
    }
    let child = rev_parse().stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().ok();
    *GIT_COMMIT.lock().unwrap_or_else(|e| e.into_inner()) = child;
}

fn git_commit() -> String {
    option_env!("SCHEDPERF_GIT_COMMIT").map(str::to_string).unwrap_or_else(|| {
        let started = GIT_COMMIT.lock().unwrap_or_else(|e| e.into_inner()).take();
        match started {
            Some(child) => child.wait_with_output(),
            None => rev_parse().output(),
        }
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

/// A report around `runs`: this tool, this machine, this command line, now.
pub fn report(runs: Vec<RunReport>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION.to_string(),
        upstream: crate::report::Upstream::pinned(),
        engine: crate::report::model::schedperf_engine(),
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
