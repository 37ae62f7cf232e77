//! The header of every report: which tool, which upstream release, which machine, which command.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::model::{Machine, Report, RunReport, ToolInfo, SCHEMA_VERSION};

/// The commit of the repository around the working directory, read from its files: `HEAD`, then
/// the branch's loose ref or its line in `packed-refs` (in the common directory for a linked
/// worktree, whose `.git` is a `gitdir:` file). A fork and exec of `git rev-parse` here cost 3-110 ms
/// of idle wall time after every `run` (and, started earlier, would compete with a short measured
/// phase for the two cores); it is only the fallback when the files say nothing.
fn head_commit(cwd: &Path) -> Option<String> {
    let dot_git = cwd.ancestors().map(|d| d.join(".git")).find(|p| p.exists())?;
    let git_dir = if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let dir = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
        if dir.is_absolute() {
            dir
        } else {
            dot_git.parent()?.join(dir)
        }
    } else {
        dot_git
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => git_dir.join(c.trim()),
        Err(_) => git_dir.clone(),
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let full = match head.strip_prefix("ref:") {
        None => head.to_string(),
        Some(r) => {
            let r = r.trim();
            let loose = [&git_dir, &common].iter().find_map(|d| std::fs::read_to_string(d.join(r)).ok());
            match loose {
                Some(h) => h.trim().to_string(),
                None => std::fs::read_to_string(common.join("packed-refs"))
                    .ok()?
                    .lines()
                    .find_map(|l| l.split_once(' ').filter(|(_, name)| *name == r).map(|(h, _)| h.to_string()))?,
            }
        }
    };
    let ok = full.len() >= 12 && full.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| full[..12].to_string())
}

fn git_commit() -> String {
    option_env!("SCHEDPERF_GIT_COMMIT").map(str::to_string).unwrap_or_else(|| {
        if let Some(c) = std::env::current_dir().ok().and_then(|d| head_commit(&d)) {
            return c;
        }
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

#[cfg(test)]
mod tests {
    use super::head_commit;

    const A: &str = "0123456789abcdef0123456789abcdef01234567";

    /// (files under the repository root with their text, the working directory in it, the commit).
    type Case<'a> = (&'a [(&'a str, String)], &'a str, Option<&'a str>);

    /// Each layout git leaves -> the 12-digit commit read from the files (None: ask `git`).
    #[test]
    fn the_commit_is_read_from_the_repository_files() {
        // (files under the repository root, relative path of the working directory, want)
        let cases: [Case; 6] = [
            (
                &[(".git/HEAD", "ref: refs/heads/main\n".into()), (".git/refs/heads/main", format!("{A}\n"))],
                "",
                Some("0123456789ab"),
            ),
            (&[(".git/HEAD", format!("{A}\n"))], "sub/dir", Some("0123456789ab")),
            (
                &[
                    (".git/HEAD", "ref: refs/heads/x\n".into()),
                    (".git/packed-refs", format!("# pack-refs\n{A} refs/heads/x\n")),
                ],
                "",
                Some("0123456789ab"),
            ),
            (
                &[
                    (".git", "gitdir: main/.git/worktrees/wt\n".into()),
                    ("main/.git/worktrees/wt/HEAD", "ref: refs/heads/wt\n".into()),
                    ("main/.git/worktrees/wt/commondir", "../..\n".into()),
                    ("main/.git/refs/heads/wt", format!("{A}\n")),
                ],
                "",
                Some("0123456789ab"),
            ),
            (&[(".git/HEAD", "ref: refs/heads/unborn\n".into())], "", None),
            (&[("README", String::new())], "", None),
        ];
        for (i, (files, cwd, want)) in cases.into_iter().enumerate() {
            let root = tempfile::tempdir().unwrap();
            for (path, text) in files {
                let p = root.path().join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            let dir = root.path().join(cwd);
            std::fs::create_dir_all(&dir).unwrap();
            assert_eq!(head_commit(&dir).as_deref(), want, "case {i}");
        }
    }
}
