//! `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1`): loading, defaulting, plugin
//! merging and validation, from a YAML file to validated profiles with their final plugin lists.
//!
//! The pipeline follows kube-scheduler: decode, default (`apis/config/v1/defaults.go`), merge each
//! profile's `plugins` into the default `multiPoint` set (`mergePlugins`), validate
//! (`apis/config/validation`), then build each profile's per-extension-point lists the way
//! `NewFramework` does (`expandMultiPointPlugins`, `getScoreWeights`). Where schedperf is stricter
//! than upstream it says so: an explicit score weight of 0 or below, an unknown name in a
//! `disabled` list and a `pluginConfig` for an unknown plugin are errors. Unknown fields are ignored.

mod args;
mod catalog;
mod plugins;

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub(crate) use args::validate_qualified_name;
pub use args::{
    BalancedAllocationArgs, DefaultPreemptionArgs, DefaultingType, InterPodAffinityArgs, NodeAffinityArgs,
    NodeResourcesFitArgs, PluginArgs, PodTopologySpreadArgs, ResourceSpec, ScoringStrategy, ScoringStrategyType,
    UtilizationShapePoint, VolumeBindingArgs, MAX_CUSTOM_PRIORITY_SCORE,
};
pub use catalog::{plugin_info, ExtensionPoint, PluginInfo, PLUGINS, REMOVED_PLUGINS};
pub use plugins::{MAX_NODE_SCORE, MAX_TOTAL_SCORE};

use crate::error::InputError;
use plugins::{build_profile_plugins, merge_plugins, Origin, PluginRef, PluginSet, PluginSets};

/// The only accepted `apiVersion`.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The only accepted `kind`.
pub const KIND: &str = "KubeSchedulerConfiguration";
/// The profile name a single profile without `schedulerName` gets (`v1.DefaultSchedulerName`).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// The `source` of [`SchedulerConfig::defaults`].
pub const DEFAULTS_SOURCE: &str = "<defaults>";

/// A validated scheduler configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedulerConfig {
    /// The file the config came from, or `<defaults>`.
    #[serde(skip)]
    pub source: String,
    /// The global percentage of nodes to score; `None` and `Some(0)` mean adaptive.
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Workers for the parallel filter and score passes.
    pub parallelism: i32,
    pub pod_initial_backoff_seconds: i64,
    pub pod_max_backoff_seconds: i64,
    pub profiles: Vec<Profile>,
    /// The sha256 (hex) of the canonical JSON of every field above except `source`.
    #[serde(skip)]
    pub digest: String,
}

/// One scheduling profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    pub scheduler_name: String,
    /// Overrides the global percentage when set; `Some(0)` means adaptive.
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: ProfilePlugins,
    pub args: PluginArgs,
}

/// The final plugin list of each extension point after merging and `multiPoint` expansion, in
/// execution order. Score plugins carry their weight.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProfilePlugins {
    pub pre_enqueue: Vec<String>,
    pub queue_sort: Vec<String>,
    pub pre_filter: Vec<String>,
    pub filter: Vec<String>,
    pub post_filter: Vec<String>,
    pub pre_score: Vec<String>,
    pub score: Vec<(String, i32)>,
    pub reserve: Vec<String>,
    pub permit: Vec<String>,
    pub pre_bind: Vec<String>,
    pub bind: Vec<String>,
    pub post_bind: Vec<String>,
}

impl ProfilePlugins {
    /// The plugin names at `point` (for Score, without the weights).
    pub fn at(&self, point: ExtensionPoint) -> Vec<&str> {
        let list = match point {
            ExtensionPoint::PreEnqueue => &self.pre_enqueue,
            ExtensionPoint::QueueSort => &self.queue_sort,
            ExtensionPoint::PreFilter => &self.pre_filter,
            ExtensionPoint::Filter => &self.filter,
            ExtensionPoint::PostFilter => &self.post_filter,
            ExtensionPoint::PreScore => &self.pre_score,
            ExtensionPoint::Score => return self.score.iter().map(|(n, _)| n.as_str()).collect(),
            ExtensionPoint::Reserve => &self.reserve,
            ExtensionPoint::Permit => &self.permit,
            ExtensionPoint::PreBind => &self.pre_bind,
            ExtensionPoint::Bind => &self.bind,
            ExtensionPoint::PostBind => &self.post_bind,
        };
        list.iter().map(String::as_str).collect()
    }

    /// The weight of Score plugin `name`, if it scores in this profile.
    pub fn score_weight(&self, name: &str) -> Option<i32> {
        self.score.iter().find(|(n, _)| n == name).map(|&(_, w)| w)
    }

    /// Whether `name` runs at `point`.
    pub fn has(&self, point: ExtensionPoint, name: &str) -> bool {
        self.at(point).contains(&name)
    }
}

impl SchedulerConfig {
    /// The configuration kube-scheduler runs with when given no file: one `default-scheduler`
    /// profile with the default plugins and args.
    pub fn defaults() -> Self {
        let raw = RawConfig::default();
        build(raw, DEFAULTS_SOURCE).expect("the built-in defaults are valid")
    }

    /// Reads and validates the config file at `path`.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&file, "", format!("cannot read the scheduler config: {e}")))?;
        Self::parse(&text, &file)
    }

    /// Parses and validates a config; `file` names it in errors and becomes [`Self::source`].
    pub fn parse(text: &str, file: &str) -> Result<Self, InputError> {
        parse_inner(text, file).map_err(|mut e| {
            e.file = file.to_string();
            e
        })
    }

    /// The profile whose `schedulerName` is `scheduler_name`.
    pub fn profile(&self, scheduler_name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.scheduler_name == scheduler_name)
    }
}

// Decoding is strict, as upstream's (`serializer.EnableStrict`): every struct below names all the
// fields of its v1 type, and a field it does not name is an error ("strict decoding error: unknown
// field"). Fields schedperf does not act on (leader election, the client connection, profiling)
// are decoded and ignored, as they change nothing in a scheduling cycle.

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "apiVersion")]
    _api_version: Option<Value>,
    #[serde(rename = "kind")]
    _kind: Option<Value>,
    parallelism: Option<i32>,
    #[serde(rename = "leaderElection")]
    _leader_election: Option<RawLeaderElection>,
    #[serde(rename = "clientConnection")]
    _client_connection: Option<RawClientConnection>,
    #[serde(rename = "enableProfiling")]
    _enable_profiling: Option<Value>,
    #[serde(rename = "enableContentionProfiling")]
    _enable_contention_profiling: Option<Value>,
    percentage_of_nodes_to_score: Option<i32>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    profiles: Vec<RawProfile>,
    #[serde(default, deserialize_with = "null_as_default")]
    extenders: Vec<Value>,
    #[serde(rename = "delayCacheUntilActive")]
    _delay_cache_until_active: Option<Value>,
}

/// componentbaseconfig `LeaderElectionConfiguration` (decoded for strictness, not used).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct RawLeaderElection {
    leader_elect: Option<Value>,
    lease_duration: Option<Value>,
    renew_deadline: Option<Value>,
    retry_period: Option<Value>,
    resource_lock: Option<Value>,
    resource_name: Option<Value>,
    resource_namespace: Option<Value>,
}

/// componentbaseconfig `ClientConnectionConfiguration` (decoded for strictness, not used).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct RawClientConnection {
    kubeconfig: Option<Value>,
    accept_content_types: Option<Value>,
    content_type: Option<Value>,
    qps: Option<Value>,
    burst: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProfile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i32>,
    plugins: Option<RawPlugins>,
    #[serde(default, deserialize_with = "null_as_default")]
    plugin_config: Vec<RawPluginConfig>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPlugins {
    multi_point: Option<RawPluginSet>,
    pre_enqueue: Option<RawPluginSet>,
    queue_sort: Option<RawPluginSet>,
    pre_filter: Option<RawPluginSet>,
    filter: Option<RawPluginSet>,
    post_filter: Option<RawPluginSet>,
    pre_score: Option<RawPluginSet>,
    score: Option<RawPluginSet>,
    reserve: Option<RawPluginSet>,
    permit: Option<RawPluginSet>,
    pre_bind: Option<RawPluginSet>,
    bind: Option<RawPluginSet>,
    post_bind: Option<RawPluginSet>,
    /// The pod-group points of v1.37 (workload-aware scheduling); schedperf schedules single pods.
    placement_generate: Option<RawPluginSet>,
    placement_score: Option<RawPluginSet>,
    pod_group_post_filter: Option<RawPluginSet>,
}

impl RawPlugins {
    fn point(&self, point: ExtensionPoint) -> Option<&RawPluginSet> {
        match point {
            ExtensionPoint::PreEnqueue => self.pre_enqueue.as_ref(),
            ExtensionPoint::QueueSort => self.queue_sort.as_ref(),
            ExtensionPoint::PreFilter => self.pre_filter.as_ref(),
            ExtensionPoint::Filter => self.filter.as_ref(),
            ExtensionPoint::PostFilter => self.post_filter.as_ref(),
            ExtensionPoint::PreScore => self.pre_score.as_ref(),
            ExtensionPoint::Score => self.score.as_ref(),
            ExtensionPoint::Reserve => self.reserve.as_ref(),
            ExtensionPoint::Permit => self.permit.as_ref(),
            ExtensionPoint::PreBind => self.pre_bind.as_ref(),
            ExtensionPoint::Bind => self.bind.as_ref(),
            ExtensionPoint::PostBind => self.post_bind.as_ref(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPluginSet {
    #[serde(default, deserialize_with = "null_as_default")]
    enabled: Vec<RawPlugin>,
    #[serde(default, deserialize_with = "null_as_default")]
    disabled: Vec<RawPlugin>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugin {
    name: String,
    weight: Option<i32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPluginConfig {
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    args: Value,
}

/// Deserializes an absent or `null` field as the type's default, as Kubernetes decoding does.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Deserializes `value` into `T`, naming the failing field path (relative to `value`). An unknown
/// field is reported as upstream's strict decoding reports it, with the fields that are known.
pub(crate) fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, InputError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let message = e.into_inner().to_string();
        InputError::new("", path, strict_message(&message).unwrap_or(message))
    })
}

/// serde's "unknown field `x`, expected one of `a`, `b`" as upstream words it: `strict decoding
/// error: unknown field "x"`, then the known fields (without the `_`-prefixed ignored ones' names
/// changing: they are listed by their YAML names).
fn strict_message(serde_message: &str) -> Option<String> {
    let rest = serde_message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let known = rest
        .trim_start_matches(", ")
        .trim_start_matches("expected one of ")
        .trim_start_matches("expected ")
        .replace('`', "");
    let known = if known.starts_with("there are no fields") { "none".to_string() } else { known };
    Some(format!("strict decoding error: unknown field {field:?} (known fields: {known}); check its spelling"))
}

fn parse_inner(text: &str, file: &str) -> Result<SchedulerConfig, InputError> {
    // Going through the YAML value rejects repeated keys, which a direct decode would let the last win.
    let yaml: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| InputError::new("", "", format!("invalid YAML: {e}")))?;
    let doc: Value = serde_json::to_value(yaml)
        .map_err(|e| InputError::new("", "", format!("unsupported YAML (keys must be strings or numbers): {e}")))?;
    let obj = match &doc {
        Value::Object(obj) => obj,
        Value::Null => {
            return Err(InputError::new(
                "",
                "",
                format!("the file is empty; expected a {KIND} with apiVersion: {API_VERSION}"),
            ));
        }
        _ => return Err(InputError::new("", "", format!("expected a {KIND} mapping at the top level"))),
    };
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some(API_VERSION) => {}
        Some(v) if v.starts_with("kubescheduler.config.k8s.io/") => {
            return Err(InputError::new(
                "",
                "apiVersion",
                format!(
                    "{v} is not supported (v1beta* configs were removed in kube-scheduler 1.29); use {API_VERSION}"
                ),
            ));
        }
        Some(v) => return Err(InputError::new("", "apiVersion", format!("expected {API_VERSION}, got {v:?}"))),
        None => return Err(InputError::new("", "apiVersion", format!("required; set apiVersion: {API_VERSION}"))),
    }
    match obj.get("kind").and_then(Value::as_str) {
        Some(KIND) => {}
        Some(k) => return Err(InputError::new("", "kind", format!("expected {KIND}, got {k:?}"))),
        None => return Err(InputError::new("", "kind", format!("required; set kind: {KIND}"))),
    }
    let raw: RawConfig = decode_value(doc)?;
    build(raw, file)
}

/// Defaults, merges and validates a decoded config, in kube-scheduler's order: the global fields
/// and each profile's own fields and args, unique names, a common queue sort, then each profile's
/// framework (plugin lists and weights).
fn build(mut raw: RawConfig, source: &str) -> Result<SchedulerConfig, InputError> {
    let parallelism = raw.parallelism.unwrap_or(16);
    if parallelism <= 0 {
        return Err(InputError::new("", "parallelism", format!("{parallelism} is not greater than 0")));
    }
    validate_percentage(raw.percentage_of_nodes_to_score, "percentageOfNodesToScore")?;
    let initial = raw.pod_initial_backoff_seconds.unwrap_or(1);
    let max = raw.pod_max_backoff_seconds.unwrap_or(10);
    if initial <= 0 {
        return Err(InputError::new("", "podInitialBackoffSeconds", format!("{initial} is not greater than 0")));
    }
    if max < initial {
        return Err(InputError::new(
            "",
            "podMaxBackoffSeconds",
            format!("{max} is less than podInitialBackoffSeconds ({initial}); it must be greater than or equal"),
        ));
    }

    if !raw.extenders.is_empty() {
        return Err(InputError::new(
            "",
            "extenders",
            "scheduler extenders (HTTP webhooks) are not modelled by schedperf; remove them to benchmark the profiles",
        ));
    }
    if raw.profiles.is_empty() {
        raw.profiles.push(RawProfile::default());
    }
    let single = raw.profiles.len() == 1;
    let mut names: Vec<String> = Vec::with_capacity(raw.profiles.len());
    let mut custom_sets: Vec<PluginSets> = Vec::with_capacity(raw.profiles.len());
    let mut all_args: Vec<PluginArgs> = Vec::with_capacity(raw.profiles.len());
    for (i, p) in raw.profiles.iter().enumerate() {
        let path = format!("profiles[{i}]");
        let name = match &p.scheduler_name {
            None if single => DEFAULT_SCHEDULER_NAME.to_string(),
            Some(n) if !n.is_empty() => n.clone(),
            Some(_) => {
                return Err(InputError::new(
                    "",
                    format!("{path}.schedulerName"),
                    "must not be empty; name the profile or omit schedulerName for default-scheduler",
                ));
            }
            None => {
                return Err(InputError::new(
                    "",
                    format!("{path}.schedulerName"),
                    "required: every profile needs a schedulerName when there is more than one profile",
                ));
            }
        };
        validate_percentage(p.percentage_of_nodes_to_score, &format!("{path}.percentageOfNodesToScore"))?;
        if let Some(plugins) = &p.plugins {
            for (field, set) in [
                ("placementGenerate", &plugins.placement_generate),
                ("placementScore", &plugins.placement_score),
                ("podGroupPostFilter", &plugins.pod_group_post_filter),
            ] {
                if set.as_ref().is_some_and(|s| !s.enabled.is_empty()) {
                    return Err(InputError::new(
                        "",
                        format!("{path}.plugins.{field}.enabled"),
                        "the pod-group extension points are not modelled (schedperf schedules pods one at a time); remove the entries",
                    ));
                }
            }
        }
        custom_sets.push(custom_plugin_sets(p.plugins.as_ref(), &format!("{path}.plugins"))?);
        all_args.push(plugin_args(&p.plugin_config, &format!("{path}.pluginConfig"))?);
        if let Some(first) = names.iter().position(|n| *n == name) {
            return Err(InputError::new(
                "",
                format!("{path}.schedulerName"),
                format!("duplicate schedulerName {name:?} (also profiles[{first}]); give each profile its own name"),
            ));
        }
        names.push(name);
    }
    for (i, sets) in custom_sets.iter().enumerate().skip(1) {
        if !same_plugin_set(sets.point(ExtensionPoint::QueueSort), custom_sets[0].point(ExtensionPoint::QueueSort)) {
            return Err(InputError::new(
                "",
                format!("profiles[{i}].plugins.queueSort"),
                "must be the same for all profiles (as written in profiles[0]); all profiles share one queue",
            ));
        }
    }

    let defaults = PluginSets::defaults();
    let mut profiles: Vec<Profile> = Vec::with_capacity(names.len());
    for (i, ((name, custom), args)) in names.into_iter().zip(&custom_sets).zip(all_args).enumerate() {
        let merged = merge_plugins(&defaults, custom);
        let plugins = build_profile_plugins(&format!("profiles[{i}].plugins"), &merged)?;
        if let Some(first) = profiles.first() {
            if first.plugins.queue_sort != plugins.queue_sort {
                return Err(InputError::new(
                    "",
                    format!("profiles[{i}].plugins.queueSort"),
                    format!(
                        "queue sort plugin {:?} differs from profiles[0]'s {:?}; all profiles share one queue",
                        plugins.queue_sort, first.plugins.queue_sort
                    ),
                ));
            }
        }
        profiles.push(Profile {
            scheduler_name: name,
            percentage_of_nodes_to_score: raw.profiles[i].percentage_of_nodes_to_score,
            plugins,
            args,
        });
    }

    let mut config = SchedulerConfig {
        source: source.to_string(),
        percentage_of_nodes_to_score: raw.percentage_of_nodes_to_score,
        parallelism,
        pod_initial_backoff_seconds: initial,
        pod_max_backoff_seconds: max,
        profiles,
        digest: String::new(),
    };
    config.digest = digest(&config);
    Ok(config)
}

fn validate_percentage(value: Option<i32>, path: &str) -> Result<(), InputError> {
    match value {
        Some(v) if !(0..=100).contains(&v) => {
            Err(InputError::new("", path, format!("{v} is not in the valid range 0..=100 (0 means adaptive)")))
        }
        _ => Ok(()),
    }
}

/// Upstream compares the queueSort sets as written (`validateCommonQueueSort`): enabled names and
/// weights, and disabled names.
fn same_plugin_set(a: &PluginSet, b: &PluginSet) -> bool {
    let key = |s: &PluginSet| {
        let enabled: Vec<(String, Option<i32>)> = s.enabled.iter().map(|p| (p.name.clone(), p.weight)).collect();
        (enabled, s.disabled.clone())
    };
    key(a) == key(b)
}

/// Converts a profile's `plugins` into plugin sets that remember where each entry was written,
/// rejecting unknown names and explicit weights below 1 on the way.
fn custom_plugin_sets(raw: Option<&RawPlugins>, path: &str) -> Result<PluginSets, InputError> {
    let mut sets = PluginSets::default();
    let Some(raw) = raw else {
        return Ok(sets);
    };
    sets.multi_point = custom_plugin_set(raw.multi_point.as_ref(), &format!("{path}.multiPoint"), true)?;
    for point in ExtensionPoint::ALL {
        let set_path = format!("{path}.{}", point.field_name());
        sets.points[point.index()] = custom_plugin_set(raw.point(point), &set_path, point == ExtensionPoint::Score)?;
    }
    Ok(sets)
}

fn custom_plugin_set(raw: Option<&RawPluginSet>, path: &str, weighted: bool) -> Result<PluginSet, InputError> {
    let mut set = PluginSet::default();
    let Some(raw) = raw else {
        return Ok(set);
    };
    for (i, p) in raw.enabled.iter().enumerate() {
        let entry = format!("{path}.enabled[{i}]");
        let Some(info) = plugin_info(&p.name) else {
            return Err(InputError::new("", format!("{entry}.name"), catalog::unknown_plugin_message(&p.name)));
        };
        // Only a Score plugin's weight is used; upstream ignores it on the others.
        let scored = weighted && info.implements(ExtensionPoint::Score);
        if let Some(w) = p.weight.filter(|w| scored && *w <= 0) {
            return Err(InputError::new(
                "",
                format!("{entry}.weight"),
                format!(
                    "weight {w} of plugin {} must be at least 1; omit it for the default, or disable the plugin at score to turn it off",
                    p.name
                ),
            ));
        }
        set.enabled.push(PluginRef {
            name: p.name.clone(),
            weight: p.weight,
            origin: Some(Origin { path: entry, index: i }),
        });
    }
    for (i, p) in raw.disabled.iter().enumerate() {
        if p.name != "*" && plugin_info(&p.name).is_none() {
            return Err(InputError::new(
                "",
                format!("{path}.disabled[{i}].name"),
                format!("{} (use \"*\" to disable every default plugin)", catalog::unknown_plugin_message(&p.name)),
            ));
        }
        set.disabled.push(p.name.clone());
    }
    Ok(set)
}

/// Decodes a profile's `pluginConfig` into [`PluginArgs`], defaults for the plugins not listed.
fn plugin_args(configs: &[RawPluginConfig], path: &str) -> Result<PluginArgs, InputError> {
    let mut out = PluginArgs::default();
    for (j, c) in configs.iter().enumerate() {
        let entry = format!("{path}[{j}]");
        if configs[..j].iter().any(|prev| prev.name == c.name) {
            return Err(InputError::new(
                "",
                entry,
                format!("repeated pluginConfig for plugin {}; merge the entries into one", c.name),
            ));
        }
        if plugin_info(&c.name).is_none() {
            return Err(InputError::new("", format!("{entry}.name"), catalog::unknown_plugin_message(&c.name)));
        }
        args::apply_plugin_args(&c.name, &c.args, &format!("{entry}.args"), &mut out)?;
    }
    Ok(out)
}

/// The sha256 (hex) of the canonical JSON of `config`: object keys sorted, no whitespace.
fn digest(config: &SchedulerConfig) -> String {
    let value = serde_json::to_value(config).expect("a SchedulerConfig always serializes");
    let mut text = String::new();
    write_canonical(&value, &mut text);
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests;
