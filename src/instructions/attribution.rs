//! From a callgrind profile of one run's measured phase to the report's `instructions` object:
//! totals, per scheduled pod, per attempt, and inclusive costs per plugin and per extension point.
//!
//! Plugins run behind `dyn Plugin`, so every plugin's extension points are distinct functions in the
//! profile, demangled as `<schedperf::plugins::noderesources::Fit as
//! schedperf::framework::plugin::Plugin>::score`. The type is mapped to the plugin's name
//! ([`plugin_name`]) and the method to the extension point ([`extension_point`]). PostFilter is
//! the inclusive cost of [`super::measured_post_filter`] (DefaultPreemption, the only PostFilter
//! plugin; it includes the filters its dry runs call, which are also counted under Filter).

use std::collections::BTreeMap;

use super::callgrind::CallgrindProfile;
use crate::report::InstructionsReport;

/// The trait whose methods are the extension points.
const PLUGIN_TRAIT: &str = " as schedperf::framework::plugin::Plugin>::";

/// Plugin types whose name is not their type's name.
const RENAMED: &[(&str, &str)] =
    &[("Fit", "NodeResourcesFit"), ("BalancedAllocation", "NodeResourcesBalancedAllocation")];

/// The plugin name of an implementing type's path (`schedperf::plugins::noderesources::Fit` ->
/// `NodeResourcesFit`): the last path segment, renamed where the type is not named as the plugin.
pub fn plugin_name(type_path: &str) -> String {
    let without_generics = type_path.split('<').next().unwrap_or(type_path);
    let last = without_generics.rsplit("::").next().unwrap_or(without_generics);
    RENAMED.iter().find(|(t, _)| *t == last).map_or_else(|| last.to_string(), |(_, n)| n.to_string())
}

/// The extension point of a `Plugin` method (`pre_filter` -> `PreFilter`, `normalize` ->
/// `NormalizeScore`); `None` for methods that are not extension points (`name`, `resolvable`,
/// `reasons`).
pub fn extension_point(method: &str) -> Option<&'static str> {
    Some(match method {
        "pre_enqueue" => "PreEnqueue",
        "pre_filter" => "PreFilter",
        "filter" => "Filter",
        // `Plugin::filter_any`: a plugin's Filter that reports whether it rejected a node.
        "filter_any" => "Filter",
        "pre_score" => "PreScore",
        "score" => "Score",
        "normalize" => "NormalizeScore",
        "reserve" => "Reserve",
        "unreserve" => "Unreserve",
        "permit" => "Permit",
        _ => return None,
    })
}

/// Splits `<T as schedperf::framework::plugin::Plugin>::method` into (plugin name, extension point).
pub fn plugin_method(function: &str) -> Option<(String, &'static str)> {
    let rest = function.strip_prefix('<')?;
    let (type_path, method) = rest.rsplit_once(PLUGIN_TRAIT)?;
    Some((plugin_name(type_path), extension_point(method)?))
}

/// Builds the report's `instructions` object from the profile of a run whose measured phase
/// scheduled `scheduled_pods` pods; `tool` is valgrind's version string.
pub fn instructions_report(profile: &CallgrindProfile, scheduled_pods: u64, tool: &str) -> InstructionsReport {
    let mut by_plugin: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_point: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_both: BTreeMap<String, u64> = BTreeMap::new();
    let mut add = |plugin: &str, point: &str, cost: u64| {
        if cost == 0 {
            return;
        }
        *by_plugin.entry(plugin.to_string()).or_default() += cost;
        *by_point.entry(point.to_string()).or_default() += cost;
        *by_both.entry(format!("{plugin}/{point}")).or_default() += cost;
    };
    for (name, cost) in &profile.functions {
        if let Some((plugin, point)) = plugin_method(name) {
            add(&plugin, point, cost.inclusive);
        }
    }
    add("DefaultPreemption", "PostFilter", profile.inclusive(super::POST_FILTER_FN));
    let attempts = profile.calls(super::ATTEMPT_FN);
    let per = |n: u64| if n == 0 { 0.0 } else { profile.total as f64 / n as f64 };
    InstructionsReport {
        source: "callgrind".to_string(),
        tool: tool.to_string(),
        total: profile.total,
        attempts,
        scheduled_pods,
        per_scheduled_pod: per(scheduled_pods),
        per_attempt: per(attempts),
        by_plugin,
        by_extension_point: by_point,
        by_plugin_extension_point: by_both,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::callgrind::parse_callgrind;

    #[test]
    fn plugin_names_and_points() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("<schedperf::plugins::noderesources::Fit as schedperf::framework::plugin::Plugin>::score", Some(("NodeResourcesFit", "Score"))),
            (
                "<schedperf::plugins::noderesources::BalancedAllocation as schedperf::framework::plugin::Plugin>::normalize",
                Some(("NodeResourcesBalancedAllocation", "NormalizeScore")),
            ),
            (
                "<schedperf::plugins::podtopologyspread::PodTopologySpread as schedperf::framework::plugin::Plugin>::pre_filter",
                Some(("PodTopologySpread", "PreFilter")),
            ),
            (
                "<schedperf::plugins::noderesources::Fit as schedperf::framework::plugin::Plugin>::filter_any",
                Some(("NodeResourcesFit", "Filter")),
            ),
            ("<schedperf::plugins::node_name::NodeName as schedperf::framework::plugin::Plugin>::name", None),
            ("<schedperf::plugins::node_name::NodeName as core::fmt::Debug>::fmt", None),
            ("schedperf::engine::cycle::Engine::score", None),
        ];
        for (f, want) in cases {
            let got = plugin_method(f);
            assert_eq!(got.as_ref().map(|(p, e)| (p.as_str(), *e)), *want, "{f}");
        }
    }

    #[test]
    fn renamed_types_match_the_plugins_names() {
        assert_eq!(plugin_name("schedperf::plugins::noderesources::Fit"), crate::plugins::noderesources::FIT);
        assert_eq!(
            plugin_name("schedperf::plugins::noderesources::BalancedAllocation"),
            crate::plugins::noderesources::BALANCED
        );
    }

    #[test]
    fn report_from_the_sample_profile() {
        let p = parse_callgrind("sample", include_str!("testdata/callgrind.sample.out")).unwrap();
        let r = instructions_report(&p, 4, "valgrind-3.19.0");
        assert_eq!((r.total, r.attempts, r.scheduled_pods), (1000, 4, 4));
        assert_eq!((r.per_scheduled_pod, r.per_attempt), (250.0, 250.0));
        let want_plugin: BTreeMap<String, u64> =
            [("NodeResourcesFit", 700), ("DefaultPreemption", 180)].map(|(k, v)| (k.to_string(), v)).into();
        assert_eq!(r.by_plugin, want_plugin);
        let want_point: BTreeMap<String, u64> =
            [("Filter", 300), ("Score", 400), ("PreFilter", 80), ("PostFilter", 100)]
                .map(|(k, v)| (k.to_string(), v))
                .into();
        assert_eq!(r.by_extension_point, want_point);
        assert_eq!(r.by_plugin_extension_point["NodeResourcesFit/Score"], 400);
        assert_eq!(r.source, "callgrind");
    }

    #[test]
    fn no_scheduled_pods_gives_zero_per_pod() {
        let r = instructions_report(&CallgrindProfile { total: 10, ..Default::default() }, 0, "v");
        assert_eq!((r.per_scheduled_pod, r.per_attempt), (0.0, 0.0));
    }
}
