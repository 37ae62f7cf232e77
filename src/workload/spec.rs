//! The typed model of a workload file in kube-scheduler's `scheduler_perf` format, and its loader.
//!
//! A file is a YAML list of test cases; each has a `workloadTemplate` (a list of ops) and `workloads`
//! that give values to the template's `$parameters`. Loading validates everything that does not
//! depend on a workload's parameters: opcodes, fields, literal counts and durations, stage
//! requirements, and that every template file exists. Template paths are made absolute (relative
//! paths resolve against the workload file's directory). Substituting parameters is [`super::resolve()`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_norway::Value;

use super::duration::parse_go_duration;
use crate::error::InputError;

/// The opcodes this loader understands, exactly as upstream spells them.
pub const KNOWN_OPCODES: &[&str] = &[
    "createNodes",
    "createNamespaces",
    "createPods",
    "createPodSets",
    "deletePods",
    "churn",
    "barrier",
    "sleep",
    "startCollectingMetrics",
    "stopCollectingMetrics",
    "createAny",
    "updateAny",
    "createPodGroups",
    "createResourceClaims",
    "allocResourceClaims",
    "startCollectingProfile",
    "stopCollectingProfile",
];

/// The churn interval when `intervalMilliseconds` is unset or 0 (upstream's `runChurnOp`).
pub const DEFAULT_CHURN_INTERVAL_MS: u64 = 500;

/// One test case: a template of ops and the workloads (parameter sets) that run it.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    pub name: String,
    /// Why none of the test case's workloads can run (an op or object schedperf does not
    /// support), found when the file is loaded; see [`super::support::skip_reason`].
    pub unsupported: Option<String>,
    /// Whether its ops use dynamic resource allocation ([`super::support::ops_use_dra`]).
    pub uses_dra: bool,
    /// Feature gates to set for every workload (see [`super::gates`]).
    pub feature_gates: BTreeMap<String, bool>,
    /// Accepted for compatibility with upstream files and otherwise unused.
    pub metrics_collector_config: Option<Value>,
    pub workload_template: Vec<Op>,
    pub workloads: Vec<Workload>,
    /// Absolute path of the KubeSchedulerConfiguration to use, if any.
    pub scheduler_config_path: Option<PathBuf>,
    /// Absolute path of the pod template used by `createPods` ops without `podTemplatePath`.
    pub default_pod_template_path: Option<PathBuf>,
    pub labels: Vec<String>,
    pub default_threshold_metric_selector: Option<ThresholdMetricSelector>,
    /// The file the test case came from, for error messages.
    pub file: PathBuf,
    /// Position of the test case in its file, for error field paths (`testCases[index]`).
    pub index: usize,
}

/// One parameter set of a test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub labels: Vec<String>,
    /// Overrides the test case's feature gates entry by entry.
    pub feature_gates: BTreeMap<String, bool>,
    /// Values substituted for `$name` references in the template.
    pub params: BTreeMap<String, ParamValue>,
    /// Minimum (or, with `expectLower`, maximum) value of the selected metric; `None` = no check.
    pub threshold: Option<Threshold>,
    /// The metric the threshold applies to; defaulted from the test case, then to
    /// `SchedulingThroughput`/`Average` as upstream does.
    pub threshold_metric_selector: ThresholdMetricSelector,
}

/// A workload parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    /// A list, a map or null: upstream passes any JSON value on to templates (DRA's files use
    /// lists of selectors and constraints).
    Structured(Value),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Str(v) => write!(f, "{v:?}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Structured(v) => write!(f, "{}", serde_json::to_string(v).unwrap_or_else(|_| format!("{v:?}"))),
        }
    }
}

/// A threshold: one value, or values by topic name with the single value as the fallback.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Threshold {
    pub value: f64,
    pub values_by_topic: BTreeMap<String, f64>,
}

impl Threshold {
    /// The threshold for `topic`: its entry in the map, else the single value (0 = disabled).
    pub fn get(&self, topic: &str) -> f64 {
        self.values_by_topic.get(topic).copied().unwrap_or(self.value)
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let expected = "expected a number or a map of topic name to number";
        let value = Value::deserialize(deserializer)?;
        let threshold = match &value {
            Value::Number(n) => Threshold { value: n.as_f64().unwrap_or(f64::NAN), values_by_topic: BTreeMap::new() },
            Value::Mapping(map) => {
                let mut values_by_topic = BTreeMap::new();
                for (k, v) in map {
                    let (Some(topic), Some(v)) = (k.as_str(), v.as_f64()) else {
                        return Err(D::Error::custom(format!("threshold: {expected}")));
                    };
                    values_by_topic.insert(topic.to_string(), v);
                }
                Threshold { value: 0.0, values_by_topic }
            }
            _ => return Err(D::Error::custom(format!("threshold: {expected}"))),
        };
        let all = std::iter::once(threshold.value).chain(threshold.values_by_topic.values().copied());
        for v in all {
            if v.is_nan() || v < 0.0 {
                return Err(D::Error::custom(format!("threshold {v} is negative: thresholds must be >= 0")));
            }
        }
        Ok(threshold)
    }
}

/// Which metric a threshold is compared with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThresholdMetricSelector {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub data_bucket: String,
    /// If true the threshold is a maximum (the metric must be strictly lower), else a minimum.
    #[serde(default)]
    pub expect_lower: bool,
}

impl Default for ThresholdMetricSelector {
    /// Upstream's default: `SchedulingThroughput`, bucket `Average`.
    fn default() -> Self {
        ThresholdMetricSelector {
            name: "SchedulingThroughput".to_string(),
            labels: BTreeMap::new(),
            data_bucket: "Average".to_string(),
            expect_lower: false,
        }
    }
}

/// A value written literally or as a `$parameter` reference.
#[derive(Debug, Clone, PartialEq)]
pub enum Parameterized<T> {
    Literal(T),
    /// The parameter name, without the `$`.
    Param(String),
}

/// One op of a workload template, as written (parameters not yet substituted).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    CreateNodes(CreateNodesOp),
    CreateNamespaces(CreateNamespacesOp),
    CreatePods(CreatePodsOp),
    CreatePodSets(CreatePodSetsOp),
    DeletePods(DeletePodsOp),
    Churn(ChurnOp),
    Barrier(BarrierOp),
    Sleep(SleepOp),
    StartCollectingMetrics(StartCollectingMetricsOp),
    StopCollectingMetrics,
    CreateAny(CreateAnyOp),
    UpdateAny(UpdateAnyOp),
    CreatePodGroups(CreatePodGroupsOp),
    /// `allocResourceClaims`: every unallocated ResourceClaim of `namespace` gets an allocation.
    AllocResourceClaims {
        namespace: String,
    },
    /// An op upstream has and schedperf does not run: the workload is skipped with `reason`.
    Unsupported {
        opcode: String,
        reason: String,
    },
    /// An op with no effect on scheduling (CPU profiling): accepted and ignored.
    Noop(&'static str),
}

impl Op {
    /// The op's upstream opcode.
    pub fn opcode(&self) -> &'static str {
        match self {
            Op::CreateNodes(_) => "createNodes",
            Op::CreateNamespaces(_) => "createNamespaces",
            Op::CreatePods(_) => "createPods",
            Op::CreatePodSets(_) => "createPodSets",
            Op::DeletePods(_) => "deletePods",
            Op::Churn(_) => "churn",
            Op::Barrier(_) => "barrier",
            Op::Sleep(_) => "sleep",
            Op::StartCollectingMetrics(_) => "startCollectingMetrics",
            Op::StopCollectingMetrics => "stopCollectingMetrics",
            Op::CreateAny(_) => "createAny",
            Op::UpdateAny(_) => "updateAny",
            Op::CreatePodGroups(_) => "createPodGroups",
            Op::AllocResourceClaims { .. } => "allocResourceClaims",
            Op::Unsupported { .. } => "unsupported",
            Op::Noop(code) => code,
        }
    }

    /// Whether this op makes the workload report metrics (upstream's `collectsMetrics`).
    pub fn collects_metrics(&self) -> bool {
        match self {
            Op::CreatePods(op) => op.collect_metrics,
            Op::CreatePodSets(op) => op.create_pods_op.collect_metrics,
            Op::StopCollectingMetrics => true,
            _ => false,
        }
    }
}

/// `labelNodePrepareStrategy`: label key set on every node, values assigned round-robin.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelNodePrepareStrategy {
    pub label_key: String,
    pub label_values: Vec<String>,
}

/// `uniqueNodeLabelStrategy`: a label key whose value differs on every node.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UniqueNodeLabelStrategy {
    pub label_key: String,
}

/// `nodeAllocatableStrategy`: resource name -> quantity written over each node's allocatable.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAllocatableStrategy {
    #[serde(default)]
    pub node_allocatable: BTreeMap<String, String>,
    /// CSI driver name -> `VolumeNodeResources`; accepted, kept as written.
    #[serde(default)]
    pub csi_node_allocatable: Option<Value>,
    #[serde(default)]
    pub migrated_plugins: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateNodesOp {
    pub count: Parameterized<u64>,
    pub node_template_path: Option<PathBuf>,
    pub node_allocatable_strategy: Option<NodeAllocatableStrategy>,
    pub label_node_prepare_strategy: Option<LabelNodePrepareStrategy>,
    pub unique_node_label_strategy: Option<UniqueNodeLabelStrategy>,
    pub template_params: BTreeMap<String, Parameterized<ParamValue>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateNamespacesOp {
    pub prefix: String,
    pub count: Parameterized<u64>,
    pub namespace_template_path: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreatePodsOp {
    pub count: Parameterized<u64>,
    /// Parameter (without `$`) the count is multiplied by.
    pub count_multiplier_param: Option<String>,
    pub steady_state: Parameterized<bool>,
    pub duration: Option<Parameterized<Duration>>,
    pub collect_metrics: bool,
    pub namespace: Option<String>,
    pub pod_template_path: Option<PathBuf>,
    pub skip_wait_to_completion: bool,
    pub persistent_volume_template_path: Option<PathBuf>,
    pub persistent_volume_claim_template_path: Option<PathBuf>,
    pub template_params: BTreeMap<String, Parameterized<ParamValue>>,
    pub signature_batch_size: Option<Parameterized<u64>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreatePodSetsOp {
    pub count: Parameterized<u64>,
    pub namespace_prefix: String,
    pub create_pods_op: CreatePodsOp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeletePodsOp {
    pub namespace: String,
    pub label_selector: BTreeMap<String, String>,
    pub skip_wait_to_completion: bool,
    /// 0 deletes all matching pods at once.
    pub delete_pods_per_second: u64,
}

/// How a `churn` op churns objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChurnMode {
    /// Create objects until `number` exist (0 = without limit), never deleting.
    Create,
    /// Create `number` objects per template, then delete them, and repeat.
    Recreate,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChurnOp {
    pub mode: ChurnMode,
    pub number: u64,
    pub interval_ms: u64,
    pub namespace: Option<String>,
    pub template_paths: Vec<PathBuf>,
}

/// What a `barrier` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageRequirement {
    /// Every pod in the namespaces is bound.
    Scheduled,
    /// Every pod in the namespaces has had at least one scheduling attempt.
    Attempted,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BarrierOp {
    /// Empty = all namespaces.
    pub namespaces: Vec<String>,
    pub label_selector: BTreeMap<String, String>,
    pub stage_requirement: StageRequirement,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SleepOp {
    pub duration: Parameterized<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StartCollectingMetricsOp {
    pub name: String,
    pub namespaces: Vec<String>,
    pub label_selector: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateAnyOp {
    pub namespace: Option<String>,
    pub template_path: PathBuf,
    /// Defaults to 1.
    pub count: Parameterized<u64>,
    pub template_params: BTreeMap<String, Parameterized<ParamValue>>,
}

/// `createPodGroups`: PodGroup objects from a template, named by `.Index` (upstream's
/// `runCreatePodGroupsOp`).
#[derive(Debug, Clone, PartialEq)]
pub struct CreatePodGroupsOp {
    pub namespace: String,
    pub template_path: PathBuf,
    /// Must resolve to at least 1, as upstream's `isValid` requires.
    pub count: Parameterized<u64>,
    pub template_params: BTreeMap<String, Parameterized<ParamValue>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpdateAnyOp {
    pub namespace: Option<String>,
    pub template_path: PathBuf,
    /// Defaults to 1.
    pub count: Parameterized<u64>,
    /// 0 updates all objects at once.
    pub update_per_second: u64,
    pub subresources: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Raw (serde) forms. Ops are decoded in a second pass so that every error carries its full path.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawTestCase {
    name: String,
    #[serde(default)]
    feature_gates: BTreeMap<String, bool>,
    #[serde(default)]
    metrics_collector_config: Option<Value>,
    #[serde(default)]
    workload_template: Vec<Value>,
    #[serde(default)]
    workloads: Vec<RawWorkload>,
    #[serde(default)]
    scheduler_config_path: Option<String>,
    #[serde(default)]
    default_pod_template_path: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    default_threshold_metric_selector: Option<ThresholdMetricSelector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawWorkload {
    name: String,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    feature_gates: BTreeMap<String, bool>,
    #[serde(default)]
    params: BTreeMap<String, Value>,
    #[serde(default)]
    threshold: Option<Threshold>,
    #[serde(default)]
    threshold_metric_selector: Option<ThresholdMetricSelector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawCreateNodes {
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    #[serde(default)]
    node_template_path: Option<String>,
    #[serde(default)]
    node_allocatable_strategy: Option<NodeAllocatableStrategy>,
    #[serde(default)]
    label_node_prepare_strategy: Option<LabelNodePrepareStrategy>,
    #[serde(default)]
    unique_node_label_strategy: Option<UniqueNodeLabelStrategy>,
    #[serde(default)]
    template_params: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawCreateNamespaces {
    prefix: String,
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    #[serde(default)]
    namespace_template_path: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawCreatePods {
    #[serde(default)]
    opcode: Option<String>,
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    #[serde(default)]
    count_multiplier_param: Option<String>,
    #[serde(default)]
    steady_state: bool,
    #[serde(default)]
    steady_state_param: Option<String>,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    duration_param: Option<String>,
    #[serde(default)]
    collect_metrics: bool,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    pod_template_path: Option<String>,
    #[serde(default)]
    skip_wait_to_completion: bool,
    #[serde(default)]
    persistent_volume_template_path: Option<String>,
    #[serde(default)]
    persistent_volume_claim_template_path: Option<String>,
    #[serde(default)]
    template_params: BTreeMap<String, Value>,
    #[serde(default)]
    signature_batch_size: Option<i64>,
    #[serde(default)]
    signature_batch_size_param: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawCreatePodSets {
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    namespace_prefix: String,
    create_pods_op: RawCreatePods,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawDeletePods {
    namespace: String,
    #[serde(default)]
    label_selector: BTreeMap<String, String>,
    #[serde(default, alias = "skipWaitForPodsDeleted")]
    skip_wait_to_completion: bool,
    #[serde(default)]
    delete_pods_per_second: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawChurn {
    mode: String,
    #[serde(default)]
    number: i64,
    #[serde(default)]
    interval_milliseconds: Option<i64>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    template_paths: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawBarrier {
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    label_selector: BTreeMap<String, String>,
    #[serde(default)]
    stage_requirement: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSleep {
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    duration_param: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawStartCollectingMetrics {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    label_selector: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawStopCollectingMetrics {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawCreateAny {
    #[serde(default)]
    namespace: Option<String>,
    template_path: String,
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    #[serde(default)]
    template_params: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawCreatePodGroups {
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    template_path: String,
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    #[serde(default)]
    template_params: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawUpdateAny {
    #[serde(default)]
    namespace: Option<String>,
    template_path: String,
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    count_param: Option<String>,
    #[serde(default)]
    update_per_second: i64,
    #[serde(default)]
    subresources: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Loading.

/// Loads one workload file: parses, validates, and makes template paths absolute.
pub fn load_workload_file(path: &Path) -> Result<Vec<TestCase>, InputError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(&file, "", format!("cannot read the workload file: {e}")))?;
    let dir = absolute(path.parent().unwrap_or(Path::new(".")));
    parse_test_cases(&text, path, &dir)
}

/// Parses the text of a workload file; `dir` is the directory relative paths resolve against.
pub fn parse_test_cases(text: &str, file_path: &Path, dir: &Path) -> Result<Vec<TestCase>, InputError> {
    let file = file_path.display().to_string();
    let de = serde_norway::Deserializer::from_str(text);
    let raw: Vec<RawTestCase> = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = field_path("testCases", &e.path().to_string());
        InputError::new(&file, path, strip_path_prefix(&e.into_inner().to_string()))
    })?;
    if raw.is_empty() {
        return Err(InputError::new(&file, "", "no test cases defined: expected a YAML list of test cases"));
    }
    let ctx = Ctx { file: &file, dir };
    let mut names = BTreeSet::new();
    let mut out = Vec::with_capacity(raw.len());
    for (index, rtc) in raw.into_iter().enumerate() {
        let at = format!("testCases[{index}]");
        if !names.insert(rtc.name.clone()) {
            return Err(
                ctx.err(format!("{at}.name"), format!("test case name {:?} is not unique in this file", rtc.name))
            );
        }
        out.push(ctx.test_case(rtc, index, &at)?);
    }
    Ok(out)
}

/// Joins serde_path_to_error's path (`[2].name`, or `.` for the root) onto `prefix`.
fn field_path(prefix: &str, path: &str) -> String {
    match path {
        "" | "." => prefix.to_string(),
        p if p.starts_with('[') => format!("{prefix}{p}"),
        p => format!("{prefix}.{p}"),
    }
}

/// The YAML parser puts the path in some messages (`.[0].name: duplicate entry ...`); the
/// `InputError` carries it already.
fn strip_path_prefix(message: &str) -> String {
    if message.starts_with(['.', '[']) {
        if let Some((_, rest)) = message.split_once(": ") {
            return rest.to_string();
        }
    }
    message.to_string()
}

/// `path` made absolute against the current directory, without touching the file system.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|cwd| cwd.join(path)).unwrap_or_else(|_| path.to_path_buf())
    }
}

struct Ctx<'a> {
    file: &'a str,
    dir: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, path: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError::new(self.file, path, message)
    }

    /// Resolves a template path against the file's directory; it must exist.
    fn template(&self, at: &str, path: &str) -> Result<PathBuf, InputError> {
        if path.is_empty() {
            return Err(self.err(at, "empty path: expected a template file path"));
        }
        let joined = self.dir.join(path);
        let abs = std::fs::canonicalize(&joined)
            .map_err(|e| self.err(at, format!("template file {} cannot be opened: {e}", joined.display())))?;
        // Go parses a template before it renders it: an unknown function fails here, before any op runs.
        if let Ok(text) = std::fs::read_to_string(&abs) {
            if super::template::is_templated(&text) {
                if let Err(e) = super::template::Template::parse(&text) {
                    return Err(InputError::new(
                        abs.display().to_string(),
                        format!("line {}", e.line),
                        format!("{} (template named by {} {at})", e.message, self.file),
                    ));
                }
            }
        }
        Ok(abs)
    }

    fn opt_template(&self, at: &str, path: Option<String>) -> Result<Option<PathBuf>, InputError> {
        path.map(|p| self.template(at, &p)).transpose()
    }

    fn decode<T: DeserializeOwned>(&self, at: &str, value: Value) -> Result<T, InputError> {
        serde_path_to_error::deserialize(value)
            .map_err(|e| self.err(field_path(at, &e.path().to_string()), e.into_inner().to_string()))
    }

    fn test_case(&self, rtc: RawTestCase, index: usize, at: &str) -> Result<TestCase, InputError> {
        if rtc.workloads.is_empty() {
            return Err(self.err(format!("{at}.workloads"), "no workloads defined: expected at least one"));
        }
        if rtc.workload_template.is_empty() {
            return Err(self.err(format!("{at}.workloadTemplate"), "no ops defined: expected at least one"));
        }
        for (name, value) in &rtc.feature_gates {
            super::gates::status(name, *value).map_err(|m| self.err(format!("{at}.featureGates.{name}"), m))?;
        }
        for (i, w) in rtc.workloads.iter().enumerate() {
            for (name, value) in &w.feature_gates {
                super::gates::status(name, *value)
                    .map_err(|m| self.err(format!("{at}.workloads[{i}].featureGates.{name}"), m))?;
            }
        }
        let mut ops = Vec::with_capacity(rtc.workload_template.len());
        for (i, value) in rtc.workload_template.into_iter().enumerate() {
            ops.push(self.op(&format!("{at}.workloadTemplate[{i}]"), value)?);
        }
        if !ops.iter().any(Op::collects_metrics) {
            return Err(self.err(
                format!("{at}.workloadTemplate"),
                "no op collects metrics: set collectMetrics: true on a createPods op, or use stopCollectingMetrics",
            ));
        }
        let default_selector = rtc.default_threshold_metric_selector;
        if let Some(s) = &default_selector {
            check_selector(self, &format!("{at}.defaultThresholdMetricSelector"), s)?;
        }
        let mut workload_names = BTreeSet::new();
        let mut workloads = Vec::with_capacity(rtc.workloads.len());
        for (i, rw) in rtc.workloads.into_iter().enumerate() {
            let wat = format!("{at}.workloads[{i}]");
            if !workload_names.insert(rw.name.clone()) {
                return Err(self.err(
                    format!("{wat}.name"),
                    format!("workload name {:?} is not unique in this test case", rw.name),
                ));
            }
            let mut params = BTreeMap::new();
            for (name, value) in rw.params {
                let v = param_value(&value).ok_or_else(|| {
                    self.err(
                        format!("{wat}.params.{name}"),
                        "expected an integer, a number, a string, a boolean, a list or a map",
                    )
                })?;
                params.insert(name, v);
            }
            let selector = rw.threshold_metric_selector.or_else(|| default_selector.clone()).unwrap_or_default();
            check_selector(self, &format!("{wat}.thresholdMetricSelector"), &selector)?;
            workloads.push(Workload {
                name: rw.name,
                labels: rw.labels,
                feature_gates: rw.feature_gates,
                params,
                threshold: rw.threshold,
                threshold_metric_selector: selector,
            });
        }
        let default_pod_template_path =
            self.opt_template(&format!("{at}.defaultPodTemplatePath"), rtc.default_pod_template_path)?;
        let unsupported = super::support::ops_skip_reason(&ops, default_pod_template_path.as_deref());
        let uses_dra = super::support::ops_use_dra(&ops, default_pod_template_path.as_deref());
        Ok(TestCase {
            name: rtc.name,
            unsupported,
            uses_dra,
            feature_gates: rtc.feature_gates,
            metrics_collector_config: rtc.metrics_collector_config,
            workload_template: ops,
            workloads,
            scheduler_config_path: self
                .opt_template(&format!("{at}.schedulerConfigPath"), rtc.scheduler_config_path)?,
            default_pod_template_path,
            labels: rtc.labels,
            default_threshold_metric_selector: default_selector,
            file: PathBuf::from(self.file),
            index,
        })
    }

    fn op(&self, at: &str, value: Value) -> Result<Op, InputError> {
        let Value::Mapping(mut map) = value else {
            return Err(self.err(at, "expected an op: a map with an opcode field"));
        };
        let opcode = match map.remove("opcode") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(self.err(format!("{at}.opcode"), "expected a string")),
            None => return Err(self.err(at, format!("missing opcode: expected one of {}", KNOWN_OPCODES.join(", ")))),
        };
        let value = Value::Mapping(map);
        match opcode.as_str() {
            "startCollectingProfile" => return Ok(Op::Noop("startCollectingProfile")),
            "stopCollectingProfile" => return Ok(Op::Noop("stopCollectingProfile")),
            "createResourceClaims" => {
                return Ok(Op::Unsupported {
                    reason: format!("op {opcode}: not implemented (no workload of the basic DRA suite uses it)"),
                    opcode,
                })
            }
            "allocResourceClaims" => {
                let namespace = match value.get("namespace") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => return Err(self.err(format!("{at}.namespace"), "expected the claims' namespace")),
                };
                return Ok(Op::AllocResourceClaims { namespace });
            }
            _ => {}
        }
        Ok(match opcode.as_str() {
            "createNodes" => {
                let r: RawCreateNodes = self.decode(at, value)?;
                self.check_node_strategies(at, &r)?;
                Op::CreateNodes(CreateNodesOp {
                    count: self.count(at, r.count, r.count_param, 0)?,
                    node_template_path: self.opt_template(&format!("{at}.nodeTemplatePath"), r.node_template_path)?,
                    node_allocatable_strategy: r.node_allocatable_strategy,
                    label_node_prepare_strategy: r.label_node_prepare_strategy,
                    unique_node_label_strategy: r.unique_node_label_strategy,
                    template_params: self.template_params(at, r.template_params)?,
                })
            }
            "createNamespaces" => {
                let r: RawCreateNamespaces = self.decode(at, value)?;
                Op::CreateNamespaces(CreateNamespacesOp {
                    prefix: r.prefix,
                    count: self.count(at, r.count, r.count_param, 0)?,
                    namespace_template_path: self
                        .opt_template(&format!("{at}.namespaceTemplatePath"), r.namespace_template_path)?,
                })
            }
            "createPods" => Op::CreatePods(self.create_pods(at, self.decode(at, value)?)?),
            "createPodSets" => {
                let r: RawCreatePodSets = self.decode(at, value)?;
                let inner_at = format!("{at}.createPodsOp");
                if let Some(code) = &r.create_pods_op.opcode {
                    if code != "createPods" {
                        return Err(self.err(format!("{inner_at}.opcode"), format!("{code:?}: expected createPods")));
                    }
                }
                Op::CreatePodSets(CreatePodSetsOp {
                    count: self.count(at, r.count, r.count_param, 0)?,
                    namespace_prefix: r.namespace_prefix,
                    create_pods_op: self.create_pods(&inner_at, r.create_pods_op)?,
                })
            }
            "deletePods" => {
                let r: RawDeletePods = self.decode(at, value)?;
                Op::DeletePods(DeletePodsOp {
                    namespace: r.namespace,
                    label_selector: r.label_selector,
                    skip_wait_to_completion: r.skip_wait_to_completion,
                    delete_pods_per_second: self
                        .non_negative(&format!("{at}.deletePodsPerSecond"), r.delete_pods_per_second)?,
                })
            }
            "churn" => {
                let r: RawChurn = self.decode(at, value)?;
                let mode = match r.mode.as_str() {
                    "create" => ChurnMode::Create,
                    "recreate" => ChurnMode::Recreate,
                    other => {
                        return Err(self
                            .err(format!("{at}.mode"), format!("unknown mode {other:?}: expected create or recreate")))
                    }
                };
                let number = self.non_negative(&format!("{at}.number"), r.number)?;
                if mode == ChurnMode::Recreate && number == 0 {
                    return Err(self.err(format!("{at}.number"), "must be > 0 when mode is recreate"));
                }
                // As upstream, 0 (or unset) means the default interval.
                let interval_ms = match self
                    .non_negative(&format!("{at}.intervalMilliseconds"), r.interval_milliseconds.unwrap_or(0))?
                {
                    0 => DEFAULT_CHURN_INTERVAL_MS,
                    ms => ms,
                };
                if r.template_paths.is_empty() {
                    return Err(self.err(format!("{at}.templatePaths"), "at least one template file is needed"));
                }
                let template_paths = r
                    .template_paths
                    .iter()
                    .enumerate()
                    .map(|(i, p)| self.template(&format!("{at}.templatePaths[{i}]"), p))
                    .collect::<Result<_, _>>()?;
                Op::Churn(ChurnOp { mode, number, interval_ms, namespace: r.namespace, template_paths })
            }
            "barrier" => {
                let r: RawBarrier = self.decode(at, value)?;
                let stage_requirement = match r.stage_requirement.as_deref() {
                    None | Some("") | Some("Scheduled") => StageRequirement::Scheduled,
                    Some("Attempted") => StageRequirement::Attempted,
                    Some(other) => {
                        return Err(self.err(
                            format!("{at}.stageRequirement"),
                            format!("unknown stageRequirement {other:?}: expected Scheduled or Attempted"),
                        ))
                    }
                };
                Op::Barrier(BarrierOp { namespaces: r.namespaces, label_selector: r.label_selector, stage_requirement })
            }
            "sleep" => {
                let r: RawSleep = self.decode(at, value)?;
                let duration = self.duration(at, r.duration, r.duration_param)?.ok_or_else(|| {
                    self.err(format!("{at}.duration"), "missing: expected a duration like 5s or durationParam")
                })?;
                Op::Sleep(SleepOp { duration })
            }
            "startCollectingMetrics" => {
                let r: RawStartCollectingMetrics = self.decode(at, value)?;
                if r.namespaces.is_empty() {
                    return Err(self.err(format!("{at}.namespaces"), "namespaces cannot be empty"));
                }
                Op::StartCollectingMetrics(StartCollectingMetricsOp {
                    name: r.name,
                    namespaces: r.namespaces,
                    label_selector: r.label_selector,
                })
            }
            "stopCollectingMetrics" => {
                let _: RawStopCollectingMetrics = self.decode(at, value)?;
                Op::StopCollectingMetrics
            }
            "createAny" => {
                let r: RawCreateAny = self.decode(at, value)?;
                Op::CreateAny(CreateAnyOp {
                    namespace: r.namespace.filter(|n| !n.is_empty()),
                    template_path: self.template(&format!("{at}.templatePath"), &r.template_path)?,
                    count: self.count(at, r.count, r.count_param, 1)?,
                    template_params: self.template_params(at, r.template_params)?,
                })
            }
            "createPodGroups" => {
                let r: RawCreatePodGroups = self.decode(at, value)?;
                if r.namespace.is_empty() {
                    return Err(self.err(format!("{at}.namespace"), "namespace must be set: the PodGroups' namespace"));
                }
                if r.template_path.is_empty() {
                    return Err(self.err(format!("{at}.templatePath"), "templatePath must be set: a PodGroup template"));
                }
                Op::CreatePodGroups(CreatePodGroupsOp {
                    namespace: r.namespace,
                    template_path: self.template(&format!("{at}.templatePath"), &r.template_path)?,
                    count: self.count(at, r.count, r.count_param, 0)?,
                    template_params: self.template_params(at, r.template_params)?,
                })
            }
            "updateAny" => {
                let r: RawUpdateAny = self.decode(at, value)?;
                Op::UpdateAny(UpdateAnyOp {
                    namespace: r.namespace.filter(|n| !n.is_empty()),
                    template_path: self.template(&format!("{at}.templatePath"), &r.template_path)?,
                    count: self.count(at, r.count, r.count_param, 1)?,
                    update_per_second: self.non_negative(&format!("{at}.updatePerSecond"), r.update_per_second)?,
                    subresources: r.subresources,
                })
            }
            other => {
                return Err(self.err(
                    format!("{at}.opcode"),
                    format!("unknown opcode {other:?}: expected one of {}", KNOWN_OPCODES.join(", ")),
                ))
            }
        })
    }

    fn create_pods(&self, at: &str, r: RawCreatePods) -> Result<CreatePodsOp, InputError> {
        let steady_state = match r.steady_state_param {
            Some(p) => Parameterized::Param(self.param_ref(&format!("{at}.steadyStateParam"), &p)?),
            None => Parameterized::Literal(r.steady_state),
        };
        let duration = self.duration(at, r.duration, r.duration_param)?;
        if r.collect_metrics && r.skip_wait_to_completion {
            return Err(self.err(
                format!("{at}.skipWaitToCompletion"),
                "collectMetrics and skipWaitToCompletion cannot both be true",
            ));
        }
        if r.skip_wait_to_completion && steady_state == Parameterized::Literal(true) {
            return Err(self.err(
                format!("{at}.skipWaitToCompletion"),
                "skipWaitToCompletion and steadyState cannot both be true",
            ));
        }
        if steady_state == Parameterized::Literal(true) && duration.is_none() {
            return Err(self.err(format!("{at}.duration"), "steadyState needs a duration > 0"));
        }
        let count_multiplier_param =
            r.count_multiplier_param.map(|p| self.param_ref(&format!("{at}.countMultiplierParam"), &p)).transpose()?;
        let signature_batch_size = match (r.signature_batch_size, r.signature_batch_size_param) {
            (_, Some(p)) => Some(Parameterized::Param(self.param_ref(&format!("{at}.signatureBatchSizeParam"), &p)?)),
            (Some(n), None) => Some(Parameterized::Literal(self.non_negative(&format!("{at}.signatureBatchSize"), n)?)),
            (None, None) => None,
        };
        Ok(CreatePodsOp {
            count: self.count(at, r.count, r.count_param, 0)?,
            count_multiplier_param,
            steady_state,
            duration,
            collect_metrics: r.collect_metrics,
            namespace: r.namespace,
            pod_template_path: self.opt_template(&format!("{at}.podTemplatePath"), r.pod_template_path)?,
            skip_wait_to_completion: r.skip_wait_to_completion,
            persistent_volume_template_path: self
                .opt_template(&format!("{at}.persistentVolumeTemplatePath"), r.persistent_volume_template_path)?,
            persistent_volume_claim_template_path: self.opt_template(
                &format!("{at}.persistentVolumeClaimTemplatePath"),
                r.persistent_volume_claim_template_path,
            )?,
            template_params: self.template_params(at, r.template_params)?,
            signature_batch_size,
        })
    }

    /// Upstream applies one strategy per op (the first of allocatable, label, unique) and indexes
    /// `labelValues` unchecked; we reject what it would silently ignore or crash on.
    fn check_node_strategies(&self, at: &str, r: &RawCreateNodes) -> Result<(), InputError> {
        let set = [
            ("nodeAllocatableStrategy", r.node_allocatable_strategy.is_some()),
            ("labelNodePrepareStrategy", r.label_node_prepare_strategy.is_some()),
            ("uniqueNodeLabelStrategy", r.unique_node_label_strategy.is_some()),
        ];
        let names: Vec<&str> = set.iter().filter(|(_, on)| *on).map(|(n, _)| *n).collect();
        if names.len() > 1 {
            return Err(self.err(
                format!("{at}.{}", names[1]),
                format!("at most one node strategy may be set, found {}", names.join(" and ")),
            ));
        }
        if let Some(l) = &r.label_node_prepare_strategy {
            let lat = format!("{at}.labelNodePrepareStrategy");
            if l.label_key.is_empty() {
                return Err(self.err(format!("{lat}.labelKey"), "empty: expected a label key"));
            }
            if l.label_values.is_empty() {
                return Err(
                    self.err(format!("{lat}.labelValues"), "empty: expected at least one value (assigned round-robin)")
                );
            }
        }
        if let Some(u) = &r.unique_node_label_strategy {
            if u.label_key.is_empty() {
                return Err(self.err(format!("{at}.uniqueNodeLabelStrategy.labelKey"), "empty: expected a label key"));
            }
        }
        Ok(())
    }

    /// `count`/`countParam`: the parameter takes precedence, as upstream; neither gives `default`.
    fn count(
        &self,
        at: &str,
        count: Option<i64>,
        param: Option<String>,
        default: u64,
    ) -> Result<Parameterized<u64>, InputError> {
        if let Some(p) = param.filter(|p| !p.is_empty()) {
            return Ok(Parameterized::Param(self.param_ref(&format!("{at}.countParam"), &p)?));
        }
        match count {
            Some(n) => Ok(Parameterized::Literal(self.non_negative(&format!("{at}.count"), n)?)),
            None => Ok(Parameterized::Literal(default)),
        }
    }

    fn non_negative(&self, at: &str, n: i64) -> Result<u64, InputError> {
        u64::try_from(n).map_err(|_| self.err(at, format!("{n} is negative: expected a number >= 0")))
    }

    /// A `$name` reference; returns the name.
    fn param_ref(&self, at: &str, text: &str) -> Result<String, InputError> {
        match text.strip_prefix('$') {
            Some(name) if !name.is_empty() => Ok(name.to_string()),
            _ => Err(self.err(at, format!("{text:?} is not a parameter reference: expected $name, like $initNodes"))),
        }
    }

    /// `duration` (a Go duration or a `$param`) / `durationParam`.
    fn duration(
        &self,
        at: &str,
        duration: Option<String>,
        param: Option<String>,
    ) -> Result<Option<Parameterized<Duration>>, InputError> {
        if let Some(p) = param.filter(|p| !p.is_empty()) {
            return Ok(Some(Parameterized::Param(self.param_ref(&format!("{at}.durationParam"), &p)?)));
        }
        let Some(text) = duration else {
            return Ok(None);
        };
        let dat = format!("{at}.duration");
        if text.starts_with('$') {
            return Ok(Some(Parameterized::Param(self.param_ref(&dat, &text)?)));
        }
        parse_go_duration(&text).map(|d| Some(Parameterized::Literal(d))).map_err(|m| self.err(dat, m))
    }

    fn template_params(
        &self,
        at: &str,
        raw: BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, Parameterized<ParamValue>>, InputError> {
        let mut out = BTreeMap::new();
        for (k, v) in raw {
            let kat = format!("{at}.templateParams.{k}");
            let value = match &v {
                // `$name|default`: the default (YAML) applies when the workload has no `name`.
                Value::String(s) if s.starts_with('$') => Parameterized::Param(self.param_ref(&kat, s)?),
                _ => Parameterized::Literal(param_value(&v).ok_or_else(|| {
                    self.err(&kat, "expected an integer, a number, a string, a boolean, a list or a map")
                })?),
            };
            out.insert(k, value);
        }
        Ok(out)
    }
}

fn check_selector(ctx: &Ctx<'_>, at: &str, s: &ThresholdMetricSelector) -> Result<(), InputError> {
    if s.data_bucket.is_empty() {
        return Err(ctx.err(format!("{at}.dataBucket"), format!("dataBucket must be set for metric {:?}", s.name)));
    }
    Ok(())
}

fn param_value(v: &Value) -> Option<ParamValue> {
    match v {
        Value::Number(n) => n.as_i64().map(ParamValue::Int).or_else(|| n.as_f64().map(ParamValue::Float)),
        Value::String(s) => Some(ParamValue::Str(s.clone())),
        Value::Bool(b) => Some(ParamValue::Bool(*b)),
        Value::Sequence(_) | Value::Mapping(_) | Value::Null => Some(ParamValue::Structured(v.clone())),
        Value::Tagged(_) => None,
    }
}
