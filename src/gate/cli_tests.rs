//! Argument modes of `compare`, `ab` and `calibrate`.

use std::path::{Path, PathBuf};

use clap::Parser;

use super::{AbArgs, CalibrateArgs, CompareArgs, CompareMode, SweepFormat};

#[derive(Parser)]
struct CompareCli {
    #[command(flatten)]
    args: CompareArgs,
}

#[derive(Parser)]
struct AbCli {
    #[command(flatten)]
    args: AbArgs,
}

#[derive(Parser)]
struct CalibrateCli {
    #[command(flatten)]
    args: CalibrateArgs,
}

fn compare_mode(argv: &str) -> Result<CompareMode, String> {
    let args = CompareCli::try_parse_from(std::iter::once("compare").chain(argv.split_whitespace()))
        .map_err(|e| format!("clap: {}", e.kind()))?
        .args;
    args.mode(Path::new("/bin/schedperf")).map_err(|e| format!("{}: {}", e.file, e.message))
}

#[test]
fn compare_mode_is_decided_by_the_arguments() {
    let saved = |a: &str, b: &str| Ok(CompareMode::Saved { a: a.into(), b: b.into() });
    let check = |argv: &str, expected: Result<CompareMode, &str>| {
        let got = compare_mode(argv);
        match (&got, &expected) {
            (Ok(g), Ok(e)) => assert_eq!(g, e, "{argv}"),
            (Err(g), Err(e)) => assert!(g.starts_with(e), "{argv}: {g}"),
            _ => panic!("{argv}: got {got:?}, expected {expected:?}"),
        }
    };
    check("a/report.json b/report.json", saved("a/report.json", "b/report.json"));
    check("a.json b.json --format json,markdown", saved("a.json", "b.json"));
    check("a.json", Err("compare:"));
    check("a.yaml b.yaml", Err("compare:"));
    check("a.json b.json c.json", Err("clap:"));
    check("a.json b.json --config x.yaml --config y.yaml", Err("compare:"));
    check("w/ --test-case T --config x.yaml", Err("--config:"));
    check("w/ --config x.yaml --config y.yaml", Err("--test-case:"));
    check("w/ --test-case T --config x.yaml --config y.yaml --reps 0", Err("--reps:"));
    let plan = match compare_mode(
        "workloads/ci/ --test-case T --workload w --config x.yaml --config y.yaml --config z.yaml --reps 4 --seed 9",
    ) {
        Ok(CompareMode::Configs(p)) => p,
        other => panic!("{other:?}"),
    };
    assert_eq!(plan.bin, PathBuf::from("/bin/schedperf"));
    assert_eq!(plan.path, PathBuf::from("workloads/ci/"));
    assert_eq!((plan.test_case.as_str(), plan.workload.as_deref()), ("T", Some("w")));
    assert_eq!(plan.configs.len(), 3);
    assert_eq!((plan.reps, plan.seed), (4, 9));
    match compare_mode("w/ --test-case T --config x.yaml --config y.yaml") {
        Ok(CompareMode::Configs(p)) => assert_eq!((p.reps, p.seed, p.workload), (10, 1, None)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sweep_format_takes_one_value() {
    let check = |v: &[&str], expected: Option<SweepFormat>| {
        let values: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        assert_eq!(SweepFormat::parse(&values).ok(), expected, "{v:?}");
    };
    check(&["table"], Some(SweepFormat::Table));
    check(&["html"], Some(SweepFormat::Html));
    check(&["md"], Some(SweepFormat::Markdown));
    check(&["json"], Some(SweepFormat::Json));
    check(&["table,json"], None);
    check(&["bmf"], None);
}

#[test]
fn ab_and_calibrate_take_run_arguments_after_the_separator() {
    let ab = AbCli::try_parse_from([
        "ab",
        "--base-bin",
        "old",
        "--cand-bin",
        "new",
        "--strict",
        "--",
        "run",
        "w/",
        "--label-filter",
        "ci",
    ])
    .unwrap()
    .args;
    assert_eq!((ab.pairs, ab.strict, ab.no_extend), (10, true, false));
    assert_eq!(ab.run_args, ["run", "w/", "--label-filter", "ci"]);
    assert!(AbCli::try_parse_from(["ab", "--base-bin", "old", "--cand-bin", "new"]).is_err());
    let cal = CalibrateCli::try_parse_from(["calibrate", "--bin", "x", "--pairs", "12", "--", "w/"]).unwrap().args;
    assert_eq!(
        (cal.pairs, cal.out.as_path(), cal.run_args.as_slice()),
        (12, Path::new("gate.toml"), &["w/".to_string()][..])
    );
}
