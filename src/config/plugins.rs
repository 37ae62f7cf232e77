//! Plugin sets: merging a profile's `plugins` into the defaults (`mergePluginSet`), then expanding
//! `multiPoint` into per-extension-point lists and collecting score weights, as
//! `framework/runtime/framework.go` does in `NewFramework`, `expandMultiPointPlugins` and
//! `getScoreWeights`.

use std::collections::{HashMap, HashSet};

use super::catalog::{plugin_info, ExtensionPoint, PLUGINS};
use super::ProfilePlugins;
use crate::error::InputError;

/// Upstream `framework.MaxNodeScore`: the highest score one plugin gives one node.
pub const MAX_NODE_SCORE: i64 = 100;

/// Upstream `framework.MaxTotalScore` (`math.MaxInt64`): the weighted sum of all score plugins
/// must stay below it.
pub const MAX_TOTAL_SCORE: i64 = i64::MAX;

/// Where a plugin entry came from in the user's file, so errors can point at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    /// The field path of the entry, as `profiles[0].plugins.score.enabled[2]`.
    pub path: String,
    /// The entry's index in its `enabled` list.
    pub index: usize,
}

/// One `enabled` entry: a plugin name and an optional weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PluginRef {
    pub name: String,
    pub weight: Option<i32>,
    /// `None` for entries that come from the defaults.
    pub origin: Option<Origin>,
}

/// A `PluginSet`: enabled entries in order, and disabled names (`*` disables every default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PluginSet {
    pub enabled: Vec<PluginRef>,
    pub disabled: Vec<String>,
}

/// A profile's `plugins`: the `multiPoint` set and one set per extension point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PluginSets {
    pub multi_point: PluginSet,
    /// Indexed by [`ExtensionPoint::index`].
    pub points: [PluginSet; 12],
}

impl PluginSets {
    /// The v1.31 defaults: every default plugin in `multiPoint`, nothing at the specific points
    /// (`getDefaultPlugins`).
    pub fn defaults() -> Self {
        let enabled = PLUGINS
            .iter()
            .filter(|p| p.in_defaults)
            .map(|p| PluginRef { name: p.name.to_string(), weight: p.default_weight, origin: None })
            .collect();
        PluginSets { multi_point: PluginSet { enabled, disabled: Vec::new() }, points: Default::default() }
    }

    pub fn point(&self, point: ExtensionPoint) -> &PluginSet {
        &self.points[point.index()]
    }
}

/// Merges a profile's sets into the defaults, set by set (`mergePlugins`).
pub(crate) fn merge_plugins(defaults: &PluginSets, custom: &PluginSets) -> PluginSets {
    let mut merged = PluginSets {
        multi_point: merge_plugin_set(&defaults.multi_point, &custom.multi_point),
        points: Default::default(),
    };
    for point in ExtensionPoint::ALL {
        merged.points[point.index()] = merge_plugin_set(defaults.point(point), custom.point(point));
    }
    merged
}

/// Upstream `mergePluginSet`: the custom `disabled` names (then the default ones) are kept; unless
/// `*` is disabled, each default entry not disabled stays in place, replaced by the custom entry of
/// the same name if there is one (the last such entry); every custom entry that replaced nothing is
/// appended in order, duplicates included (the framework rejects them later).
pub(crate) fn merge_plugin_set(default: &PluginSet, custom: &PluginSet) -> PluginSet {
    let disabled: Vec<String> = custom.disabled.iter().chain(&default.disabled).cloned().collect();
    let disabled_names: HashSet<&str> = disabled.iter().map(String::as_str).collect();
    let mut custom_by_name: HashMap<&str, usize> = HashMap::new();
    for (i, p) in custom.enabled.iter().enumerate() {
        custom_by_name.insert(p.name.as_str(), i);
    }
    let mut replaced = vec![false; custom.enabled.len()];
    let mut enabled = Vec::new();
    if !disabled_names.contains("*") {
        for p in &default.enabled {
            if disabled_names.contains(p.name.as_str()) {
                continue;
            }
            match custom_by_name.get(p.name.as_str()) {
                Some(&i) => {
                    replaced[i] = true;
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(p.clone()),
            }
        }
    }
    for (i, p) in custom.enabled.iter().enumerate() {
        if !replaced[i] {
            enabled.push(p.clone());
        }
    }
    PluginSet { enabled, disabled }
}

/// A set of names that remembers insertion order (upstream `orderedSet`).
#[derive(Default)]
struct OrderedSet {
    list: Vec<String>,
}

impl OrderedSet {
    fn has(&self, name: &str) -> bool {
        self.list.iter().any(|n| n == name)
    }
    fn insert(&mut self, name: &str) {
        if !self.has(name) {
            self.list.push(name.to_string());
        }
    }
}

/// Builds the final per-point lists of a merged profile, as `NewFramework` does: the specific
/// points first (`updatePluginList`), then `multiPoint` expansion, then the queue-sort and bind
/// counts, then the score weights. `plugins_path` is `profiles[i].plugins`; every name must
/// already be in the catalogue.
pub(crate) fn build_profile_plugins(plugins_path: &str, merged: &PluginSets) -> Result<ProfilePlugins, InputError> {
    let entry_path = |p: &PluginRef, fallback: &str| match &p.origin {
        Some(o) => o.path.clone(),
        None => format!("{plugins_path}.{fallback}"),
    };
    let mut lists: [Vec<String>; 12] = Default::default();
    for point in ExtensionPoint::ALL {
        let set = merged.point(point);
        let mut seen = HashSet::new();
        for p in &set.enabled {
            let info = plugin_info(&p.name).expect("plugin names are checked before merging");
            if !info.implements(point) {
                return Err(InputError::new(
                    "",
                    format!("{}.name", entry_path(p, point.field_name())),
                    format!(
                        "plugin {} does not implement {point}; it implements {}; enable it at one of those or in multiPoint",
                        p.name,
                        points_list(info.extension_points)
                    ),
                ));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(InputError::new(
                    "",
                    entry_path(p, point.field_name()),
                    format!("plugin {} is enabled twice at {point}; list it once", p.name),
                ));
            }
            lists[point.index()].push(p.name.clone());
        }
    }

    if !merged.multi_point.enabled.is_empty() {
        for point in ExtensionPoint::ALL {
            expand_multi_point(plugins_path, merged, point, &mut lists[point.index()])?;
        }
    }

    let queue_sort = &lists[ExtensionPoint::QueueSort.index()];
    if queue_sort.len() != 1 {
        return Err(InputError::new(
            "",
            format!("{plugins_path}.queueSort"),
            format!(
                "exactly one queue sort plugin is required, got {} ({}); keep PrioritySort enabled",
                queue_sort.len(),
                if queue_sort.is_empty() { "none".to_string() } else { queue_sort.join(", ") }
            ),
        ));
    }
    if lists[ExtensionPoint::Bind.index()].is_empty() {
        return Err(InputError::new(
            "",
            format!("{plugins_path}.bind"),
            "at least one bind plugin is required; keep DefaultBinder enabled",
        ));
    }

    let weights = score_weights(merged)
        .map_err(|p| InputError::new("", entry_path(p, "score"), "total score of Score plugins could overflow"))?;
    let [pre_enqueue, queue_sort, pre_filter, filter, post_filter, pre_score, score, reserve, permit, pre_bind, bind, post_bind] =
        lists;
    let score = score
        .into_iter()
        .map(|name| {
            let w = *weights.get(&name).expect("every Score plugin comes from score.enabled or multiPoint.enabled");
            (name, w)
        })
        .collect();
    Ok(ProfilePlugins {
        pre_enqueue,
        queue_sort,
        pre_filter,
        filter,
        post_filter,
        pre_score,
        score,
        reserve,
        permit,
        pre_bind,
        bind,
        post_bind,
    })
}

fn points_list(points: &[ExtensionPoint]) -> String {
    points.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
}

/// Upstream `expandMultiPointPlugins` for one extension point. `list` holds the plugins enabled at
/// the point itself and is rewritten as: plugins enabled at the point that multiPoint also names
/// (the overrides, in the point's order), then multiPoint plugins not named at the point (in
/// multiPoint order), then the point's other plugins. `disabled: [{name: "*"}]` at the point skips
/// the expansion; a plugin disabled at the point is skipped; a plugin named twice in multiPoint
/// that would land here twice is an error.
fn expand_multi_point(
    plugins_path: &str,
    merged: &PluginSets,
    point: ExtensionPoint,
    list: &mut Vec<String>,
) -> Result<(), InputError> {
    let set = merged.point(point);
    let mut enabled = OrderedSet::default();
    for name in list.iter() {
        enabled.insert(name);
    }
    let disabled: HashSet<&str> = set.disabled.iter().map(String::as_str).collect();
    if disabled.contains("*") {
        return Ok(());
    }
    let mut multi_point_enabled = OrderedSet::default();
    let mut overrides = OrderedSet::default();
    for p in &merged.multi_point.enabled {
        let info = plugin_info(&p.name).expect("plugin names are checked before merging");
        if !info.implements(point) || disabled.contains(p.name.as_str()) {
            continue;
        }
        if enabled.has(&p.name) {
            overrides.insert(&p.name);
            continue;
        }
        if multi_point_enabled.has(&p.name) {
            // Point at the user's last entry with this name: that is the one to delete.
            let last = merged
                .multi_point
                .enabled
                .iter()
                .filter(|q| q.name == p.name)
                .filter_map(|q| q.origin.as_ref())
                .max_by_key(|o| o.index);
            let path = match last {
                Some(o) => o.path.clone(),
                None => format!("{plugins_path}.multiPoint"),
            };
            return Err(InputError::new(
                "",
                path,
                format!("plugin {} is registered twice at {point} through multiPoint; list it once", p.name),
            ));
        }
        multi_point_enabled.insert(&p.name);
    }
    let mut expanded = Vec::with_capacity(enabled.list.len() + multi_point_enabled.list.len());
    expanded.extend(enabled.list.iter().filter(|n| overrides.has(n)).cloned());
    expanded.extend(multi_point_enabled.list.iter().cloned());
    expanded.extend(enabled.list.iter().filter(|n| !overrides.has(n)).cloned());
    *list = expanded;
    Ok(())
}

/// Upstream `getScoreWeights` over `score.enabled` followed by `multiPoint.enabled`: the first entry
/// of a Score plugin sets its weight (so `score.enabled` wins), an absent or zero weight means 1,
/// and the running total of weight x [`MAX_NODE_SCORE`] must stay within [`MAX_TOTAL_SCORE`].
/// On overflow returns the entry that overflowed.
pub(crate) fn score_weights(merged: &PluginSets) -> Result<HashMap<String, i32>, &PluginRef> {
    score_weights_within(merged, MAX_TOTAL_SCORE)
}

fn score_weights_within(merged: &PluginSets, max_total_score: i64) -> Result<HashMap<String, i32>, &PluginRef> {
    let mut weights = HashMap::new();
    let mut total: i64 = 0;
    let entries = merged.point(ExtensionPoint::Score).enabled.iter().chain(&merged.multi_point.enabled);
    for p in entries {
        let implements_score = plugin_info(&p.name).is_some_and(|i| i.implements(ExtensionPoint::Score));
        if !implements_score || weights.contains_key(&p.name) {
            continue;
        }
        let weight = match p.weight {
            None | Some(0) => 1,
            Some(w) => w,
        };
        weights.insert(p.name.clone(), weight);
        if i64::from(weight) * MAX_NODE_SCORE > max_total_score - total {
            return Err(p);
        }
        total += i64::from(weight) * MAX_NODE_SCORE;
    }
    Ok(weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(entries: &[(&str, Option<i32>)]) -> Vec<PluginRef> {
        entries.iter().map(|&(n, w)| PluginRef { name: n.to_string(), weight: w, origin: None }).collect()
    }

    fn set(enabled: &[(&str, Option<i32>)], disabled: &[&str]) -> PluginSet {
        PluginSet { enabled: refs(enabled), disabled: disabled.iter().map(|s| s.to_string()).collect() }
    }

    /// The cases of upstream `TestMergePlugins` (`v1/default_plugins_test.go`).
    #[test]
    fn merge_plugin_set_cases() {
        let check = |default: PluginSet, custom: PluginSet, expected: PluginSet| {
            assert_eq!(merge_plugin_set(&default, &custom), expected);
        };
        let d12 = || set(&[("D1", None), ("D2", None)], &[]);
        // Append a custom plugin.
        check(d12(), set(&[("C", None)], &[]), set(&[("D1", None), ("D2", None), ("C", None)], &[]));
        // Disable one default.
        check(d12(), set(&[], &["D1"]), set(&[("D2", None)], &["D1"]));
        // Disable all defaults, keep customs in their order, defaults re-enabled explicitly.
        check(
            d12(),
            set(&[("C", None), ("D1", None), ("D2", None)], &["*"]),
            set(&[("C", None), ("D1", None), ("D2", None)], &["*"]),
        );
        check(d12(), set(&[("D2", None), ("D1", None)], &["*"]), set(&[("D2", None), ("D1", None)], &["*"]));
        // Overrides keep the default order.
        let p123 = || set(&[("P1", None), ("P2", None), ("P3", None)], &[]);
        check(
            p123(),
            set(&[("P2", Some(2)), ("P1", Some(1))], &[]),
            set(&[("P1", Some(1)), ("P2", Some(2)), ("P3", None)], &[]),
        );
        // A repeated custom plugin: the last one replaces the default, the first is appended.
        check(
            p123(),
            set(&[("P1", None), ("P2", Some(2)), ("P3", None), ("P2", Some(4))], &[]),
            set(&[("P1", None), ("P2", Some(4)), ("P3", None), ("P2", Some(2))], &[]),
        );
        // Disabled names of the default set are kept after the custom ones.
        check(
            set(&[("D", None)], &["D2"]),
            set(&[("C", None)], &["X"]),
            set(&[("D", None), ("C", None)], &["X", "D2"]),
        );
    }

    fn sets_with_score(score: &[(&str, Option<i32>)], multi_point: &[(&str, Option<i32>)]) -> PluginSets {
        let mut s = PluginSets { multi_point: set(multi_point, &[]), points: Default::default() };
        s.points[ExtensionPoint::Score.index()] = set(score, &[]);
        s
    }

    #[test]
    fn score_weights_cases() {
        let check = |score: &[(&str, Option<i32>)], mp: &[(&str, Option<i32>)], expected: &[(&str, i32)]| {
            let got = score_weights(&sets_with_score(score, mp)).unwrap();
            let want: HashMap<String, i32> = expected.iter().map(|&(n, w)| (n.to_string(), w)).collect();
            assert_eq!(got, want);
        };
        // score.enabled wins over multiPoint; non-score plugins get no weight.
        check(
            &[("NodeAffinity", Some(5))],
            &[("NodeAffinity", Some(2)), ("NodePorts", Some(7))],
            &[("NodeAffinity", 5)],
        );
        // Absent weight means 1.
        check(
            &[],
            &[("TaintToleration", None), ("ImageLocality", Some(4))],
            &[("TaintToleration", 1), ("ImageLocality", 4)],
        );
    }

    #[test]
    fn score_total_overflow_names_the_entry() {
        let sets = sets_with_score(&[], &[("TaintToleration", Some(3)), ("ImageLocality", Some(2))]);
        assert!(score_weights_within(&sets, 500).is_ok());
        assert_eq!(score_weights_within(&sets, 499).unwrap_err().name, "ImageLocality");
        assert_eq!(score_weights_within(&sets, 299).unwrap_err().name, "TaintToleration");
    }
}
