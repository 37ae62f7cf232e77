//! JUnit XML: a testsuite per workload, a testcase per metric (and one for placements).
//!
//! The ratio and interval go in the `<failure>` body, since GitLab ignores `message` and properties.
//! Report-only and noisy cells are `<skipped>`.

use super::evaluate::{Cell, GateFlags, GateReport, Verdict};
use super::{format, table};
use crate::report::html::escape as xml;

/// Renders the report as JUnit XML.
pub fn render(report: &GateReport, flags: GateFlags) -> String {
    let mut suites: Vec<(String, Vec<String>, usize, usize)> = Vec::new();
    for c in &report.cells {
        let key = c.key();
        if suites.last().map(|s| &s.0) != Some(&key) {
            suites.push((key.clone(), Vec::new(), 0, 0));
        }
        let suite = suites.last_mut().expect("pushed");
        let plugins = if c.metric.is_instructions() { report.top_plugin_changes(&key, 5) } else { String::new() };
        let (case, failed, skipped) = cell_case(c, flags, &plugins);
        suite.1.push(case);
        suite.2 += failed as usize;
        suite.3 += skipped as usize;
    }
    for p in &report.placements {
        let key = format!("{}/{}", p.test_case, p.workload);
        let Some(suite) = suites.iter_mut().find(|s| s.0 == key) else {
            continue;
        };
        let name = format!("placements seed {}", p.seed);
        let text = table::placement_text(p);
        let case = if p.changed && flags.fail_on_placement_change {
            suite.2 += 1;
            format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n      <failure message=\"placements changed\" type=\"placement-change\">{}</failure>\n    </testcase>\n",
                xml(&key),
                xml(&name),
                xml(&text)
            )
        } else {
            format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n      <system-out>{}</system-out>\n    </testcase>\n",
                xml(&key),
                xml(&name),
                xml(&text)
            )
        };
        suite.1.push(case);
    }
    let tests: usize = suites.iter().map(|s| s.1.len()).sum();
    let failures: usize = suites.iter().map(|s| s.2).sum();
    let skipped: usize = suites.iter().map(|s| s.3).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out += &format!(
        "<testsuites name=\"schedperf gate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n"
    );
    for (name, cases, failures, skipped) in &suites {
        out += &format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n",
            xml(name),
            cases.len()
        );
        for case in cases {
            out += case;
        }
        out += "  </testsuite>\n";
    }
    out += "</testsuites>\n";
    out
}

/// One `<testcase>`; returns it with whether it failed and whether it was skipped.
fn cell_case(c: &Cell, flags: GateFlags, plugins: &str) -> (String, bool, bool) {
    let (change, low, high) = c.change();
    let mut body = format!(
        "{} {}: ratio {:.4} (worse-oriented, 95% CI [{:.4}, {:.4}]); change {} [{}, {}]; p={} p_holm={}; budget {}; base median {} {} (n={}), current median {} {} (n={}); {} test",
        c.key(),
        c.metric.name(),
        c.ratio,
        c.ratio_low,
        c.ratio_high,
        format::pct(change),
        format::pct(low),
        format::pct(high),
        format::p(c.p),
        c.p_holm.map(format::p).unwrap_or_else(|| "-".into()),
        format::budget(c.budget),
        format::value(c.median_base),
        c.unit,
        c.n_base,
        format::value(c.median_cand),
        c.unit,
        c.n_cand,
        c.test
    );
    if !plugins.is_empty() {
        body += &format!("; instructions per scheduled pod that changed most, by plugin/extension point: {plugins}");
    }
    let fails = c.verdict == Verdict::Regressed || (flags.strict && c.verdict == Verdict::Suspect);
    let open = format!("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n", xml(&c.key()), xml(c.metric.name()));
    let inner = if fails {
        format!(
            "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
            xml(&format!("{} {}", c.metric.name(), c.verdict.as_str())),
            c.verdict.as_str(),
            xml(&body)
        )
    } else if matches!(c.verdict, Verdict::ReportOnly | Verdict::Noisy) {
        let why = c.note.clone().unwrap_or_else(|| c.verdict.as_str().to_string());
        format!("      <skipped message=\"{}\"/>\n      <system-out>{}</system-out>\n", xml(&why), xml(&body))
    } else {
        format!("      <system-out>{} ({})</system-out>\n", xml(&body), c.verdict.as_str())
    };
    let skipped = !fails && matches!(c.verdict, Verdict::ReportOnly | Verdict::Noisy);
    (format!("{open}{inner}    </testcase>\n"), fails, skipped)
}
