//! Number, date and text formatting shared by the terminal, Markdown and HTML renderers.

use super::model::{Report, RunReport};

/// Formats a number for people: `-` when it is not finite, otherwise about four significant
/// digits without an exponent (`12346`, `812.3`, `45.68`, `0.1234`, `0`).
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    let a = x.abs();
    let decimals = if a == 0.0 || a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        4
    };
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".to_string()
        } else {
            t.to_string()
        }
    } else {
        s
    }
}

/// Formats a number with a fixed count of decimals, or `-` when it is not finite.
pub fn fixed(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "-".to_string()
    }
}

/// Formats a fraction (0..1) as a percentage with one decimal (`0.4567` → `45.7%`).
pub fn percent(fraction: f64) -> String {
    if fraction.is_finite() {
        format!("{:.1}%", fraction * 100.0)
    } else {
        "-".to_string()
    }
}

/// Bytes to MiB, one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// Bytes to GiB, one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0 * 1024.0))
}

/// The threshold verdict of a run: `PASS`, `FAIL`, or `-` when the workload has no threshold or it is
/// not judged (`--measure instructions`: callgrind's times are ~50x slow).
pub fn verdict(run: &RunReport) -> &'static str {
    match run.threshold_passed {
        Some(true) => "PASS",
        Some(false) => "FAIL",
        None => "-",
    }
}

/// A run's name as `TestCase/workload`, followed in brackets by its arm and A/B pair when it has
/// them (`TestCase/workload [cand #3]`).
pub fn run_name(run: &RunReport) -> String {
    let name = format!("{}/{}", run.test_case, run.workload);
    match (&run.arm, run.pair) {
        (Some(arm), Some(pair)) => format!("{name} [{arm} #{pair}]"),
        (Some(arm), None) => format!("{name} [{arm}]"),
        (None, Some(pair)) => format!("{name} [#{pair}]"),
        (None, None) => name,
    }
}

/// A run's repetition index, as text.
pub fn rep_label(run: &RunReport) -> String {
    run.rep.to_string()
}

/// The value a threshold is checked against. scheduler_perf compares `SchedulingThroughput`
/// thresholds with the average throughput, which is also the default metric.
pub fn threshold_value(run: &RunReport) -> Option<f64> {
    match run.threshold_metric.as_str() {
        "" | "SchedulingThroughput" => Some(run.throughput.average),
        _ => None,
    }
}

/// One footer line per run that failed its threshold, lost pods, or ended with an inconsistent cache.
pub fn problems(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for run in &report.runs {
        let who = format!("{} rep {}", run_name(run), rep_label(run));
        if run.threshold_passed == Some(false) {
            let metric = if run.threshold_metric.is_empty() { "SchedulingThroughput" } else { &run.threshold_metric };
            let threshold = run.threshold.map_or("-".to_string(), num);
            match threshold_value(run) {
                Some(v) => out.push(format!("FAIL {who}: {metric} {} below threshold {threshold}", num(v))),
                None => out.push(format!("FAIL {who}: {metric} missed threshold {threshold}")),
            }
        }
        if run.accounting.lost > 0 {
            out.push(format!(
                "LOST {who}: {} of {} created pods are unaccounted for",
                run.accounting.lost, run.accounting.created
            ));
        }
        if !run.cache_consistent {
            out.push(format!(
                "CACHE {who}: scheduler cache differs from the cluster state ({} difference(s))",
                run.cache_differences.len()
            ));
        }
        if let Some(cri) = run.cri.as_ref().filter(|c| c.real_pods_failed > 0) {
            out.push(format!(
                "RUNTIME {who}: {} of {} real pods failed or never reached Running: {}; CRI errors: {}",
                cri.real_pods_failed,
                cri.real_pods,
                most_frequent(&cri.failure_reasons),
                if cri.cri_errors.is_empty() { "none".to_string() } else { most_frequent(&cri.cri_errors) }
            ));
        }
    }
    out
}

/// Whether a run's real pods failed on the runtime (`run` exits 4 then).
pub fn runtime_failed(run: &RunReport) -> bool {
    run.cri.as_ref().is_some_and(|c| c.real_pods_failed > 0)
}

/// The three most frequent entries of `counts` as `key (n)`, and how many more there are.
fn most_frequent(counts: &std::collections::BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = counts.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut text = v.iter().take(3).map(|(k, n)| format!("{k} ({n})")).collect::<Vec<_>>().join(", ");
    if v.len() > 3 {
        text += &format!(" and {} more", v.len() - 3);
    }
    text
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC` (proleptic Gregorian calendar).
pub fn utc(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let secs = unix_seconds % 86_400;
    let (y, m, d) = crate::api::time::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Quotes one argument for a POSIX shell so that the printed command line can be pasted back.
pub fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The command line as one pasteable shell string.
pub fn command_line(argv: &[String]) -> String {
    argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
}

/// Replaces control characters (newlines, escapes) by spaces so that one value stays on one line.
pub fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let check = |x: f64, expected: &str| assert_eq!(num(x), expected, "num({x})");
        check(12345.6, "12346");
        check(812.34, "812.3");
        check(45.678, "45.68");
        check(1.5, "1.5");
        check(0.12345, "0.1235");
        check(0.0, "0");
        check(-0.00001, "0");
        check(100.0, "100");
        check(f64::NAN, "-");
        check(f64::INFINITY, "-");
        assert_eq!(percent(0.4567), "45.7%");
        assert_eq!(percent(f64::NAN), "-");
        assert_eq!(mib(3 * 1024 * 1024 + 512 * 1024), "3.5");
        assert_eq!(fixed(2.0 / 3.0, 2), "0.67");
    }

    #[test]
    fn dates() {
        let check = |s: u64, expected: &str| assert_eq!(utc(s), expected, "utc({s})");
        check(0, "1970-01-01 00:00:00 UTC");
        check(951_782_400, "2000-02-29 00:00:00 UTC");
        check(1_709_251_199, "2024-02-29 23:59:59 UTC");
        check(1_798_761_600, "2027-01-01 00:00:00 UTC");
    }

    #[test]
    fn run_names() {
        let check = |arm: Option<&str>, pair: Option<u32>, expected: &str| {
            let run = RunReport {
                test_case: "T".into(),
                workload: "w".into(),
                arm: arm.map(Into::into),
                pair,
                ..Default::default()
            };
            assert_eq!(run_name(&run), expected);
        };
        check(None, None, "T/w");
        check(Some("cand"), None, "T/w [cand]");
        check(Some("base"), Some(3), "T/w [base #3]");
        check(None, Some(0), "T/w [#0]");
    }

    #[test]
    fn quoting() {
        let check = |a: &str, expected: &str| assert_eq!(shell_quote(a), expected, "quote({a})");
        check("--workload=workloads/basic.yaml", "--workload=workloads/basic.yaml");
        check("two words", "'two words'");
        check("it's", "'it'\\''s'");
        check("", "''");
        check("$HOME", "'$HOME'");
        assert_eq!(command_line(&["schedperf".into(), "run".into(), "a b".into()]), "schedperf run 'a b'");
        assert_eq!(one_line("a\nb\tc"), "a b c");
    }
}
