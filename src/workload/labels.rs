//! scheduler_perf's `-perf-scheduling-label-filter`: which workloads a run selects by label.

use crate::error::InputError;

/// A parsed label filter: comma-separated labels; `label` or `+label` must be present, `-label`
/// must be absent. An empty filter selects everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelFilter {
    pub required: Vec<String>,
    pub excluded: Vec<String>,
}

impl Default for LabelFilter {
    /// Upstream's default filter, `performance`.
    fn default() -> Self {
        LabelFilter { required: vec!["performance".to_string()], excluded: Vec::new() }
    }
}

impl LabelFilter {
    /// The name errors are reported under.
    pub const FLAG: &'static str = "--label-filter";

    /// Parses `performance`, `+short`, `-slow`, `short,-performance`, or the empty string.
    pub fn parse(text: &str) -> Result<LabelFilter, InputError> {
        let mut filter = LabelFilter { required: Vec::new(), excluded: Vec::new() };
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (list, label) = match item.as_bytes()[0] {
                b'-' => (&mut filter.excluded, &item[1..]),
                b'+' => (&mut filter.required, &item[1..]),
                _ => (&mut filter.required, item),
            };
            if label.is_empty() {
                return Err(InputError::new(
                    Self::FLAG,
                    "",
                    format!("{item:?} has no label: expected label, +label or -label"),
                ));
            }
            list.push(label.to_string());
        }
        Ok(filter)
    }

    /// Whether a workload with these labels (test case labels ∪ workload labels) is selected.
    pub fn matches(&self, labels: &[String]) -> bool {
        let has = |l: &String| labels.contains(l);
        self.required.iter().all(has) && !self.excluded.iter().any(has)
    }
}

impl std::fmt::Display for LabelFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let items: Vec<String> =
            self.required.iter().map(|l| l.to_string()).chain(self.excluded.iter().map(|l| format!("-{l}"))).collect();
        write!(f, "{}", items.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(filter: &str, labels: &[&str], expected: bool) {
        let labels: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        let f = LabelFilter::parse(filter).unwrap();
        assert_eq!(f.matches(&labels), expected, "filter {filter:?} on {labels:?}");
    }

    #[test]
    fn filter_table() {
        check("performance", &["performance"], true);
        check("performance", &["performance", "short"], true);
        check("performance", &["integration-test", "short"], false);
        check("performance", &[], false);
        check("+short", &["integration-test", "short"], true);
        check("+short", &["performance"], false);
        check("-slow", &["performance"], true);
        check("-slow", &[], true);
        check("-slow", &["performance", "slow"], false);
        check("short,-performance", &["integration-test", "short"], true);
        check("short,-performance", &["performance", "short"], false);
        check("short,-performance", &["integration-test"], false);
        check("", &[], true);
        check("", &["anything"], true);
        check(" performance , +scale ", &["performance", "scale"], true);
        check("performance,+scale", &["performance"], false);
    }

    #[test]
    fn default_is_performance_and_display_round_trips() {
        assert_eq!(LabelFilter::default(), LabelFilter::parse("performance").unwrap());
        assert_eq!(LabelFilter::parse("+short,-performance,x").unwrap().to_string(), "short,x,-performance");
    }

    #[test]
    fn bare_prefix_is_rejected() {
        for bad in ["+", "-", "performance,-"] {
            let e = LabelFilter::parse(bad).unwrap_err();
            assert_eq!(e.file, LabelFilter::FLAG, "{bad:?}");
            assert!(e.message.contains("has no label"), "{bad:?}: {}", e.message);
        }
    }
}
