//! Running this binary's workloads under valgrind's callgrind, one process per workload and
//! repetition, and attaching the counted instructions to each run.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{callgrind::parse_callgrind, instructions_report, TOGGLE_COLLECT};
use crate::error::{child_failure, Error, InputError};
use crate::report::RepOutcome;

/// The environment variable naming the valgrind program (default `valgrind` on `PATH`).
pub const VALGRIND_ENV: &str = "SCHEDPERF_VALGRIND";

/// The Debian/Ubuntu package that provides valgrind (named in the error when it is missing).
pub const PACKAGE: &str = "valgrind";

/// The valgrind program to run: `$SCHEDPERF_VALGRIND` or `valgrind`.
pub fn valgrind_program() -> String {
    std::env::var(VALGRIND_ENV).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| "valgrind".to_string())
}

/// Checks that `program --version` runs and returns its version (`valgrind-3.19.0`); otherwise an
/// input error (exit 2) naming the package to install.
pub fn check_available(program: &str) -> Result<String, InputError> {
    let missing = |why: String| {
        InputError::new(
            "--measure",
            "instructions",
            format!(
                "needs valgrind at run time, and `{program} --version` {why}: install the Debian/Ubuntu package `{PACKAGE}` (`apt-get install -y {PACKAGE}`; Fedora: `dnf install {PACKAGE}`), or set {VALGRIND_ENV} to valgrind's path"
            ),
        )
    };
    let out = Command::new(program).arg("--version").output().map_err(|e| missing(format!("failed ({e})")))?;
    if !out.status.success() {
        return Err(missing(format!("exited with {}", out.status)));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !version.starts_with("valgrind") {
        return Err(missing(format!("printed {version:?}, not a valgrind version")));
    }
    Ok(version)
}

/// `argv` without the given flags and their values (`--flag v` and `--flag=v` forms).
pub fn strip_flags(argv: &[String], flags_with_value: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i].as_str();
        if flags_with_value.contains(&a) {
            i += 2;
            continue;
        }
        if !flags_with_value.iter().any(|f| a.starts_with(&format!("{f}="))) {
            out.push(argv[i].clone());
        }
        i += 1;
    }
    out
}

/// The flags the parent handles (or overrides) and does not pass to a measured child.
const PARENT_FLAGS: &[&str] = &[
    "--reps",
    "--out",
    "--format",
    "--events",
    "--measure",
    "--plugin-sample-percent",
    "--rep-index",
    "--workload-index",
];

/// The valgrind command line of one measured child: `run_args` are this `schedperf run`'s
/// arguments (after `run`'s position, as given); the child runs workload `index` of the selection,
/// repetition `rep`, with plugin timing off (it is measurement overhead, not scheduling work).
pub fn child_command(
    valgrind: &str,
    exe: &Path,
    run_args: &[String],
    out_file: &Path,
    rep: u32,
    index: usize,
) -> Command {
    let mut cmd = Command::new(valgrind);
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg("--collect-atstart=no")
        .arg(format!("--toggle-collect={TOGGLE_COLLECT}"))
        .arg("--dump-instr=no")
        .arg("--compress-pos=no")
        .arg(exe)
        .args(strip_flags(run_args, PARENT_FLAGS))
        .args([
            "--plugin-sample-percent",
            "0",
            "--rep-index",
            &rep.to_string(),
            "--workload-index",
            &index.to_string(),
        ]);
    cmd
}

/// A child under callgrind that could not run or printed nothing: a runtime failure (exit 4).
fn child_error(what: String) -> Error {
    Error::Runtime(format!("--measure instructions: {what}"))
}

/// Runs `reps` repetitions of each of the `workloads` selected workloads under callgrind and returns
/// their runs with `instructions` filled. The callgrind files are kept under `keep/callgrind/`
/// when `keep` is given (for `callgrind_annotate --inclusive=yes`), else removed.
pub fn measure(reps: u32, workloads: usize, keep: Option<&Path>) -> Result<RepOutcome, Error> {
    let valgrind = valgrind_program();
    let version = check_available(&valgrind)?;
    let exe = std::env::current_exe().map_err(|e| child_error(format!("cannot find this program: {e}")))?;
    let run_args: Vec<String> = std::env::args().skip(1).collect();
    let dir: PathBuf = match keep {
        Some(d) => d.join("callgrind"),
        None => std::env::temp_dir().join(format!("schedperf-callgrind-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| child_error(format!("cannot create {}: {e}", dir.display())))?;
    let mut outcome = RepOutcome::default();
    for rep in 0..reps {
        for index in 0..workloads {
            let out_file = dir.join(format!("callgrind.w{index}.rep{rep}.out"));
            let out = child_command(&valgrind, &exe, &run_args, &out_file, rep, index)
                .output()
                .map_err(|e| child_error(format!("cannot start {valgrind}: {e}")))?;
            if !out.status.success() {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
                let tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
                return Err(child_failure(
                    &format!("workload {index}, repetition {rep} under callgrind"),
                    out.status,
                    &tail,
                ));
            }
            let child: RepOutcome = serde_json::from_slice(&out.stdout)
                .map_err(|e| child_error(format!("workload {index}, repetition {rep} printed no runs: {e}")))?;
            outcome.failures.extend(child.failures);
            let mut child_runs = child.runs;
            let file = out_file.display().to_string();
            let text =
                std::fs::read_to_string(&out_file).map_err(|e| child_error(format!("cannot read {file}: {e}")))?;
            let profile = parse_callgrind(&file, &text)?;
            for run in &mut child_runs {
                eprintln!(
                    "instructions: {}/{} rep {rep}: {} instructions, {:.0} per scheduled pod",
                    run.test_case,
                    run.workload,
                    profile.total,
                    if run.scheduled_pods == 0 { 0.0 } else { profile.total as f64 / run.scheduled_pods as f64 }
                );
                run.instructions = Some(instructions_report(&profile, run.scheduled_pods, &version));
            }
            outcome.runs.extend(child_runs);
        }
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn strip_flags_table() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["run", "w/", "--reps", "3", "--seed", "2"], &["run", "w/", "--seed", "2"]),
            (&["run", "w/", "--measure=instructions", "--out", "d"], &["run", "w/"]),
            (&["run", "w/", "--measure", "instructions", "--virtual-time"], &["run", "w/", "--virtual-time"]),
            (&["run", "w/", "--plugin-sample-percent", "10", "--format=json"], &["run", "w/"]),
        ];
        for (argv, want) in cases {
            assert_eq!(strip_flags(&strings(argv), PARENT_FLAGS), strings(want), "{argv:?}");
        }
    }

    #[test]
    fn child_command_scopes_collection_to_the_measured_phase() {
        let cmd =
            child_command("vg", Path::new("/bin/sp"), &strings(&["run", "w/", "--reps", "2"]), Path::new("/t/o"), 1, 3);
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().to_string()).collect();
        assert_eq!(cmd.get_program(), "vg");
        for want in [
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=schedperf::instructions::measured_*",
            "--callgrind-out-file=/t/o",
        ] {
            assert!(args.contains(&want.to_string()), "{want} in {args:?}");
        }
        let tail: Vec<&str> = args.iter().skip_while(|a| *a != "/bin/sp").map(String::as_str).collect();
        assert_eq!(
            tail,
            ["/bin/sp", "run", "w/", "--plugin-sample-percent", "0", "--rep-index", "1", "--workload-index", "3"]
        );
    }

    #[test]
    fn missing_valgrind_names_the_package() {
        let e = check_available("/nonexistent/valgrind-for-a-test").unwrap_err().to_string();
        assert!(e.contains("`valgrind`") && e.contains("apt-get install"), "{e}");
        // `true` runs but is not valgrind.
        let e = check_available("true").unwrap_err().to_string();
        assert!(e.contains("not a valgrind version"), "{e}");
    }
}
