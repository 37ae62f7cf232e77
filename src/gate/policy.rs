//! Gate policy: the significance level, which metrics are gated and their budgets, from `gate.toml`.
//!
//! ```toml
//! alpha = 0.05                                   # family-wise error rate (Holm)
//! gated_metrics = ["throughput", "attempt-p50", "attempt-p90", "attempt-p99"]
//!
//! [defaults]                                     # budgets: a fraction or a "N%" string
//! throughput = 0.10
//! attempt-p99 = "30%"
//!
//! [workloads."SchedulingBasic/5000Nodes"]        # per-workload overrides
//! gated_metrics = ["throughput"]
//! throughput = "25%"
//! ```
//! A budget not given falls back to the reference table ([`Metric::default_budget`]), which depends on
//! whether the comparison is paired (A/B interleaved) or against a stored baseline.

use std::collections::BTreeMap;
use std::path::Path;

use super::metric::Metric;
use crate::error::InputError;

/// The default family-wise significance level.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Overrides for one workload (`testCase/workload`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadPolicy {
    /// Replaces the global gated metric list for this workload.
    pub gated_metrics: Option<Vec<Metric>>,
    /// Budget overrides, as fractions.
    pub budgets: BTreeMap<Metric, f64>,
}

/// A gate policy. [`Policy::default`] is the reference design: alpha 0.05, the default gated
/// metrics, the reference budgets.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Family-wise significance level; intervals are `1 - alpha` two-sided.
    pub alpha: f64,
    /// The gated metrics; `None` means [`Metric::DEFAULT_GATED`].
    pub gated_metrics: Option<Vec<Metric>>,
    /// Budget overrides for every workload, as fractions.
    pub defaults: BTreeMap<Metric, f64>,
    /// Per-workload overrides keyed by `testCase/workload`.
    pub workloads: BTreeMap<String, WorkloadPolicy>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            alpha: DEFAULT_ALPHA,
            gated_metrics: None,
            defaults: BTreeMap::new(),
            workloads: BTreeMap::new(),
        }
    }
}

impl Policy {
    /// True if `metric` is gated for workload `key` (before the p99 pod-count rule).
    pub fn is_gated(&self, key: &str, metric: Metric) -> bool {
        let list = self
            .workloads
            .get(key)
            .and_then(|w| w.gated_metrics.as_deref())
            .or(self.gated_metrics.as_deref())
            .unwrap_or(&Metric::DEFAULT_GATED);
        list.contains(&metric)
    }

    /// The budget of `metric` for workload `key`: the workload override, else `[defaults]`, else the
    /// reference table for the mode. `None` for a report-only metric without an override.
    pub fn budget(&self, key: &str, metric: Metric, paired: bool) -> Option<f64> {
        self.workloads
            .get(key)
            .and_then(|w| w.budgets.get(&metric).copied())
            .or_else(|| self.defaults.get(&metric).copied())
            .or_else(|| metric.default_budget(paired))
    }

    /// Reads a `gate.toml` file.
    pub fn load(path: &Path) -> Result<Policy, InputError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&file, "", format!("cannot read the policy: {e}")))?;
        Policy::from_toml(&file, &text)
    }

    /// Parses the text of a `gate.toml`; `file` names it in errors. Unknown keys are errors, so a
    /// misspelt metric never silently falls back to a default.
    pub fn from_toml(file: &str, text: &str) -> Result<Policy, InputError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            InputError::new(file, "", format!("not valid TOML: {}", e.message()))
        })?;
        let mut policy = Policy::default();
        for (key, value) in &table {
            match key.as_str() {
                "alpha" => {
                    let alpha = number(value).filter(|a| *a > 0.0 && *a < 0.5).ok_or_else(|| {
                        InputError::new(file, "alpha", "expected a number between 0 and 0.5, as 0.05")
                    })?;
                    policy.alpha = alpha;
                }
                "gated_metrics" => policy.gated_metrics = Some(metric_list(file, "gated_metrics", value)?),
                "defaults" => {
                    let t = value.as_table().ok_or_else(|| InputError::new(file, "defaults", "expected a table"))?;
                    for (name, v) in t {
                        let path = format!("defaults.{name}");
                        policy.defaults.insert(metric_name(file, &path, name)?, budget(file, &path, v)?);
                    }
                }
                "workloads" => {
                    let t = value.as_table().ok_or_else(|| InputError::new(file, "workloads", "expected a table"))?;
                    for (workload, w) in t {
                        let base = format!("workloads.\"{workload}\"");
                        if !workload.contains('/') {
                            return Err(InputError::new(file, &base, "expected a \"testCase/workload\" key"));
                        }
                        let w = w.as_table().ok_or_else(|| InputError::new(file, &base, "expected a table"))?;
                        let mut wp = WorkloadPolicy::default();
                        for (name, v) in w {
                            let path = format!("{base}.{name}");
                            if name == "gated_metrics" {
                                wp.gated_metrics = Some(metric_list(file, &path, v)?);
                            } else {
                                wp.budgets.insert(metric_name(file, &path, name)?, budget(file, &path, v)?);
                            }
                        }
                        policy.workloads.insert(workload.clone(), wp);
                    }
                }
                other => {
                    return Err(InputError::new(
                        file,
                        other,
                        "unknown key; expected alpha, gated_metrics, [defaults] or [workloads.\"testCase/workload\"]",
                    ))
                }
            }
        }
        policy.check_gated_have_budgets(file)?;
        Ok(policy)
    }

    /// Every gated metric needs a budget in both modes; max has none by default.
    fn check_gated_have_budgets(&self, file: &str) -> Result<(), InputError> {
        let mut keys: Vec<&str> = vec![""];
        keys.extend(self.workloads.keys().map(String::as_str));
        for key in keys {
            for metric in Metric::ALL {
                if self.is_gated(key, metric) && self.budget(key, metric, false).is_none() {
                    let path = if key.is_empty() {
                        "gated_metrics".to_string()
                    } else {
                        format!("workloads.\"{key}\"")
                    };
                    return Err(InputError::new(
                        file,
                        path,
                        format!(
                            "{} is report-only by default; give it a budget to gate it",
                            metric.name()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Writes the policy as `gate.toml` text that [`Policy::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        let mut out = format!("alpha = {}\n", self.alpha);
        if let Some(list) = &self.gated_metrics {
            out += &format!("gated_metrics = [{}]\n", quoted(list));
        }
        if !self.defaults.is_empty() {
            out += "\n[defaults]\n";
            for (m, b) in &self.defaults {
                out += &format!("{} = {}\n", m.name(), b);
            }
        }
        for (key, w) in &self.workloads {
            out += &format!("\n[workloads.\"{key}\"]\n");
            if let Some(list) = &w.gated_metrics {
                out += &format!("gated_metrics = [{}]\n", quoted(list));
            }
            for (m, b) in &w.budgets {
                out += &format!("{} = {}\n", m.name(), b);
            }
        }
        out
    }
}

fn quoted(list: &[Metric]) -> String {
    list.iter()
        .map(|m| format!("\"{}\"", m.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn number(value: &toml::Value) -> Option<f64> {
    match value {
        toml::Value::Float(f) => Some(*f),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// A budget: a fraction (`0.05`) or a percentage string (`"5%"`), in (0, 10].
fn budget(file: &str, path: &str, value: &toml::Value) -> Result<f64, InputError> {
    let parsed = match value {
        toml::Value::String(s) => s
            .trim()
            .strip_suffix('%')
            .and_then(|p| p.trim().parse::<f64>().ok())
            .map(|p| p / 100.0),
        other => number(other),
    };
    parsed
        .filter(|b| *b > 0.0 && *b <= 10.0 && b.is_finite())
        .ok_or_else(|| {
            InputError::new(
                file,
                path,
                format!(
                    "{value} is not a budget; expected a fraction as 0.05 or a string as \"5%\""
                ),
            )
        })
}

fn metric_name(file: &str, path: &str, name: &str) -> Result<Metric, InputError> {
    Metric::from_name(name).ok_or_else(|| {
        InputError::new(
            file,
            path,
            format!("unknown metric; expected one of {}", all_names()),
        )
    })
}

fn metric_list(file: &str, path: &str, value: &toml::Value) -> Result<Vec<Metric>, InputError> {
    let array = value
        .as_array()
        .ok_or_else(|| InputError::new(file, path, "expected an array of metric names"))?;
    array
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = format!("{path}[{i}]");
            let name = v
                .as_str()
                .ok_or_else(|| InputError::new(file, &p, "expected a metric name string"))?;
            metric_name(file, &p, name)
        })
        .collect()
}

fn all_names() -> String {
    Metric::ALL
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
alpha = 0.01
gated_metrics = ["throughput", "attempt-p99"]

[defaults]
throughput = 0.10
attempt-p99 = "30%"

[workloads."SchedulingBasic/5000Nodes"]
gated_metrics = ["throughput", "e2e-max"]
throughput = "25%"
e2e-max = 0.5
"#;

    #[test]
    fn reads_overrides_in_order() {
        let p = Policy::from_toml("gate.toml", EXAMPLE).unwrap();
        assert_eq!(p.alpha, 0.01);
        let check = |key: &str, m: Metric, paired: bool, gated: bool, budget: Option<f64>| {
            assert_eq!(p.is_gated(key, m), gated, "{key} {}", m.name());
            assert_eq!(p.budget(key, m, paired), budget, "{key} {}", m.name());
        };
        check(
            "SchedulingBasic/5000Nodes",
            Metric::Throughput,
            true,
            true,
            Some(0.25),
        );
        check(
            "SchedulingBasic/5000Nodes",
            Metric::E2eMax,
            true,
            true,
            Some(0.5),
        );
        check(
            "SchedulingBasic/5000Nodes",
            Metric::AttemptP99,
            true,
            false,
            Some(0.30),
        );
        check("Other/w", Metric::Throughput, false, true, Some(0.10));
        check("Other/w", Metric::AttemptP50, false, false, Some(0.20));
        check("Other/w", Metric::AttemptP90, true, false, Some(0.10));
        check("Other/w", Metric::E2eMax, true, false, None);
    }

    #[test]
    fn default_policy_gates_the_default_metrics() {
        let p = Policy::default();
        let gated: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|m| p.is_gated("A/b", *m))
            .collect();
        assert_eq!(gated, Metric::DEFAULT_GATED);
    }

    #[test]
    fn round_trips_through_toml() {
        let p = Policy::from_toml("gate.toml", EXAMPLE).unwrap();
        assert_eq!(Policy::from_toml("again.toml", &p.to_toml()).unwrap(), p);
    }

    #[test]
    fn errors_name_the_field() {
        let check = |text: &str, path: &str, contains: &str| {
            let e = Policy::from_toml("gate.toml", text).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.path.as_str()),
                ("gate.toml", path),
                "{e}"
            );
            assert!(e.message.contains(contains), "{e}");
        };
        check("alpha = 2", "alpha", "between 0 and 0.5");
        check(
            "[defaults]\nthroughput = -1",
            "defaults.throughput",
            "not a budget",
        );
        check(
            "[defaults]\nthroughput = \"five\"",
            "defaults.throughput",
            "not a budget",
        );
        check("[defaults]\np99 = 0.1", "defaults.p99", "unknown metric");
        check(
            "gated_metrics = [\"throughput\", 3]",
            "gated_metrics[1]",
            "metric name",
        );
        check(
            "gated_metrics = [\"attempt-max\"]",
            "gated_metrics",
            "report-only",
        );
        check(
            "[workloads.basic]\nthroughput = 0.1",
            "workloads.\"basic\"",
            "testCase/workload",
        );
        check("budget = 1", "budget", "unknown key");
        check("alpha = ", "", "not valid TOML");
    }
}
