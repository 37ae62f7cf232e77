//! `schedperf verify`'s plumbing, against a stand-in oracle (`tests/data/fake-oracle.py`) that
//! answers with schedperf's own explanation, changed or withheld as FAKE_MODE says. The real
//! oracle's agreement is checked by `.ci/run` (`scripts/verify.sh`).

use std::path::PathBuf;
use std::process::{Command, Output};

fn verify(mode: &str, cases: &str, out: &std::path::Path) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["verify", "--oracle"])
        .arg(root.join("tests/data/fake-oracle.py"))
        .args(["--random", cases, "--seed", "5", "--oracle-timeout-s", "5", "--out"])
        .arg(out)
        .env("SCHEDPERF", env!("CARGO_BIN_EXE_schedperf"))
        .env("FAKE_MODE", mode)
        .output()
        .expect("schedperf starts")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn identical_answers_agree_on_every_case() {
    let dir = tempfile::tempdir().unwrap();
    let o = verify("self", "30", dir.path());
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).lines().last(), Some("verify: 30/30 cases agree"));
    assert!(
        std::fs::read_dir(dir.path()).map_or(true, |mut d| d.next().is_none()),
        "no reproducer without a divergence"
    );
}

#[test]
fn a_divergence_fails_and_leaves_a_reproducer() {
    let dir = tempfile::tempdir().unwrap();
    let o = verify("perturb", "7", dir.path());
    assert_eq!(o.status.code(), Some(1));
    // Cases 0, 3 and 6 are changed.
    assert_eq!(stdout(&o).lines().last(), Some("verify: 4/7 cases agree"));
    let case = dir.path().join("seed5-case3");
    for f in ["cluster.yaml", "pod.yaml", "diff.txt", "schedperf.json", "kube-scheduler.json"] {
        assert!(case.join(f).is_file(), "{f} missing");
    }
    let diff = std::fs::read_to_string(case.join("diff.txt")).unwrap();
    assert!(diff.contains("selected: schedperf"), "{diff}");
    assert!(diff.contains("\"no-such-node\""), "{diff}");
}

#[test]
fn a_crashing_oracle_fails_the_run_naming_the_case() {
    let dir = tempfile::tempdir().unwrap();
    let o = verify("crash", "10", dir.path());
    assert_eq!(o.status.code(), Some(1), "a crashed oracle fails the run: exit 1");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("case 2") && err.contains("crashed"), "{err}");
    assert!(stdout(&o).contains("verify: 2/10 cases agree (stopped at case 2: the oracle failed)"));
}

#[test]
fn a_hanging_oracle_fails_the_run_naming_the_case() {
    let dir = tempfile::tempdir().unwrap();
    let o = verify("hang", "10", dir.path());
    assert_eq!(o.status.code(), Some(1), "a hung oracle fails the run: exit 1");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("case 2") && err.contains("hangs"), "{err}");
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["verify", "--oracle", "/no/such/oracle", "--random", "3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--oracle"));
    let o = Command::new(env!("CARGO_BIN_EXE_schedperf"))
        .args(["verify", "--oracle", env!("CARGO_BIN_EXE_schedperf")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "neither --random nor paths");
}
