//! Substituting a workload's parameters into its test case's template: concrete ops for the runner.
//!
//! As upstream (`unrollWorkloadTemplate`, `patchParams`): `createPodSets` is unrolled into one
//! `createPods` per namespace `<namespacePrefix>-<i>`; a `createPods` or `churn` op without a
//! namespace gets `namespace-<index>`, where index is its position in the unrolled list; counts
//! become numbers; a parameter the template never uses is an error (a likely typo).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use super::spec::{
    ChurnMode, CreatePodsOp, LabelNodePrepareStrategy, NodeAllocatableStrategy, Op, ParamValue, Parameterized,
    StageRequirement, TestCase, Threshold, ThresholdMetricSelector, UniqueNodeLabelStrategy, Workload,
};
use crate::error::InputError;

/// One workload of one test case with every parameter substituted.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedWorkload {
    pub test_case: String,
    pub workload: String,
    /// `<test case>/<workload>`, upstream's sub-benchmark name.
    pub name: String,
    /// Test case labels followed by the workload's own, without duplicates.
    pub labels: Vec<String>,
    /// Test case feature gates overridden by the workload's.
    pub feature_gates: BTreeMap<String, bool>,
    /// What each of `feature_gates` means for the run (see [`super::gates::status`]).
    pub gate_statuses: Vec<(String, bool, super::gates::GateStatus)>,
    pub scheduler_config_path: Option<PathBuf>,
    pub threshold: Option<Threshold>,
    pub threshold_metric_selector: ThresholdMetricSelector,
    pub ops: Vec<ResolvedOp>,
    /// Upstream's Go test hooks this workload selects ([`HarnessHooks`]).
    pub hooks: HarnessHooks,
}

/// Workload parameters that upstream's Go test code reads, not the file's ops (a suite's
/// `_test.go` hook): schedperf runs each hook itself when its parameter is present
/// ([`HarnessHooks`]), so the parameter counts as used.
pub const HOOK_PARAMS: &[&str] = &[NUM_NODE_DECLARED_FEATURES];

/// The parameter of nodedeclaredfeatures/node_declared_features_test.go's hooks.
pub const NUM_NODE_DECLARED_FEATURES: &str = "numNodeDeclaredFeatures";

/// Upstream's Go test hooks (`WithPreRunFn`, `WithNodeUpdateFn` of a suite's `_test.go`) that a
/// workload selects by their parameter; the file says nothing else about them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HarnessHooks {
    /// nodedeclaredfeatures/node_declared_features_test.go, on when the workload has
    /// `numNodeDeclaredFeatures` = N and its own `featureGates` set NodeDeclaredFeatures: true
    /// (upstream's hooks read `w.FeatureGates`, the workload's own): after every `createNodes` op,
    /// every node's `status.declaredFeatures` becomes `Feature1..FeatureN` sorted as strings
    /// (`updateNodesWithDeclaredFeatures`: UpdateStatus, one node update each, then it waits for
    /// the scheduler's cache: here the update is applied at once, through the driver's node-update
    /// path). Its PreRunFn assigns N mock features to `features.AllFeatures`, which the scheduler
    /// never reads again (`ndf.DefaultFramework` was built from it at Go package initialisation):
    /// the scheduler keeps the real registry, so the names are unknown to it and its pods require
    /// nothing (`snapshot::features`). `Some(N)`: the hook is on.
    pub node_declared_features: Option<u64>,
}

/// A concrete op.
#[derive(Debug, Clone, PartialEq)]
pub enum ResolvedOp {
    CreateNodes {
        count: u64,
        /// `None`: the built-in default node.
        node_template_path: Option<PathBuf>,
        node_allocatable_strategy: Option<NodeAllocatableStrategy>,
        label_node_prepare_strategy: Option<LabelNodePrepareStrategy>,
        unique_node_label_strategy: Option<UniqueNodeLabelStrategy>,
        template_params: BTreeMap<String, ParamValue>,
    },
    CreateNamespaces {
        /// Namespaces are named `<prefix>-<i>` for i in 0..count.
        prefix: String,
        count: u64,
        namespace_template_path: Option<PathBuf>,
    },
    CreatePods {
        count: u64,
        namespace: String,
        /// The op's template, else the test case's default; `None`: the built-in default pod.
        pod_template_path: Option<PathBuf>,
        collect_metrics: bool,
        skip_wait_to_completion: bool,
        steady_state: bool,
        duration: Option<Duration>,
        persistent_volume_template_path: Option<PathBuf>,
        persistent_volume_claim_template_path: Option<PathBuf>,
        template_params: BTreeMap<String, ParamValue>,
        /// Consecutive pods sharing one `signature` label value (1 = every pod its own).
        signature_batch_size: u64,
    },
    DeletePods {
        namespace: String,
        label_selector: BTreeMap<String, String>,
        skip_wait_to_completion: bool,
        delete_pods_per_second: u64,
    },
    Churn {
        mode: ChurnMode,
        number: u64,
        interval_ms: u64,
        namespace: String,
        template_paths: Vec<PathBuf>,
    },
    Barrier {
        /// Empty = all namespaces.
        namespaces: Vec<String>,
        label_selector: BTreeMap<String, String>,
        stage_requirement: StageRequirement,
    },
    Sleep {
        duration: Duration,
    },
    /// `allocResourceClaims`.
    AllocResourceClaims {
        namespace: String,
    },
    StartCollectingMetrics {
        name: String,
        namespaces: Vec<String>,
        label_selector: BTreeMap<String, String>,
    },
    StopCollectingMetrics,
    CreateAny {
        template_path: PathBuf,
        /// `None` for cluster-scoped objects.
        namespace: Option<String>,
        count: u64,
        template_params: BTreeMap<String, ParamValue>,
    },
    /// `createPodGroups`: `count` >= 1 PodGroups in `namespace`.
    CreatePodGroups {
        template_path: PathBuf,
        namespace: String,
        count: u64,
        template_params: BTreeMap<String, ParamValue>,
    },
    UpdateAny {
        template_path: PathBuf,
        namespace: Option<String>,
        count: u64,
        update_per_second: u64,
        subresources: Vec<String>,
    },
}

/// The labels a workload is filtered by: test case labels then workload labels, deduplicated.
pub fn workload_labels(tc: &TestCase, w: &Workload) -> Vec<String> {
    let mut seen = BTreeSet::new();
    tc.labels.iter().chain(&w.labels).filter(|l| seen.insert(l.as_str())).cloned().collect()
}

/// Substitutes `w`'s parameters into `tc`'s template.
pub fn resolve(tc: &TestCase, w: &Workload) -> Result<ResolvedWorkload, InputError> {
    let mut r = Resolver { tc, w, used: BTreeSet::new() };
    let mut ops = Vec::with_capacity(tc.workload_template.len());
    for (i, op) in tc.workload_template.iter().enumerate() {
        let at = format!("testCases[{}].workloadTemplate[{i}]", tc.index);
        r.op(&at, op, &mut ops)?;
    }
    let windex = tc.workloads.iter().position(|x| x.name == w.name).unwrap_or(0);
    let unused: Vec<&str> = w
        .params
        .keys()
        .filter(|k| !r.used.contains(k.as_str()) && !HOOK_PARAMS.contains(&k.as_str()))
        .map(String::as_str)
        .collect();
    if !unused.is_empty() {
        return Err(InputError::new(
            tc.file.display().to_string(),
            format!("testCases[{}].workloads[{windex}].params", tc.index),
            format!("parameters {unused:?} are defined but the template never uses them: check for typos"),
        ));
    }
    let mut hooks = HarnessHooks::default();
    if let Some(v) = w.params.get(NUM_NODE_DECLARED_FEATURES) {
        let n = match v {
            ParamValue::Int(n) if *n >= 0 => *n as u64,
            other => {
                return Err(InputError::new(
                    tc.file.display().to_string(),
                    format!("testCases[{}].workloads[{windex}].params.{NUM_NODE_DECLARED_FEATURES}", tc.index),
                    format!("expected a non-negative integer (the number of node declared features), got {other}"),
                ))
            }
        };
        if w.feature_gates.get("NodeDeclaredFeatures") == Some(&true) {
            hooks.node_declared_features = Some(n);
        }
    }
    let mut feature_gates = tc.feature_gates.clone();
    feature_gates.extend(w.feature_gates.iter().map(|(k, v)| (k.clone(), *v)));
    let mut gate_statuses = Vec::new();
    for (name, value) in &feature_gates {
        let status = super::gates::status(name, *value).map_err(|m| {
            InputError::new(tc.file.display().to_string(), format!("testCases[{}].featureGates.{name}", tc.index), m)
        })?;
        gate_statuses.push((name.clone(), *value, status));
    }
    Ok(ResolvedWorkload {
        gate_statuses,
        test_case: tc.name.clone(),
        workload: w.name.clone(),
        name: format!("{}/{}", tc.name, w.name),
        labels: workload_labels(tc, w),
        feature_gates,
        scheduler_config_path: tc.scheduler_config_path.clone(),
        threshold: w.threshold.clone(),
        threshold_metric_selector: w.threshold_metric_selector.clone(),
        ops,
        hooks,
    })
}

struct Resolver<'a> {
    tc: &'a TestCase,
    w: &'a Workload,
    used: BTreeSet<String>,
}

impl Resolver<'_> {
    fn err(&self, at: &str, message: String) -> InputError {
        InputError::new(self.tc.file.display().to_string(), at, format!("workload {:?}: {message}", self.w.name))
    }

    fn param(&mut self, at: &str, name: &str) -> Result<&ParamValue, InputError> {
        self.used.insert(name.to_string());
        self.w
            .params
            .get(name)
            .ok_or_else(|| self.err(at, format!("parameter ${name} is not defined in the workload's params")))
    }

    fn int(&mut self, at: &str, value: &Parameterized<u64>) -> Result<u64, InputError> {
        let name = match value {
            Parameterized::Literal(n) => return Ok(*n),
            Parameterized::Param(name) => name,
        };
        match self.param(at, name)?.clone() {
            ParamValue::Int(n) if n >= 0 => Ok(n as u64),
            ParamValue::Float(f) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Ok(f as u64),
            other => Err(self.err(at, format!("parameter ${name} = {other}: expected a whole number >= 0"))),
        }
    }

    fn duration(&mut self, at: &str, value: &Parameterized<Duration>) -> Result<Duration, InputError> {
        let name = match value {
            Parameterized::Literal(d) => return Ok(*d),
            Parameterized::Param(name) => name,
        };
        match self.param(at, name)?.clone() {
            ParamValue::Str(s) => {
                super::duration::parse_go_duration(&s).map_err(|m| self.err(at, format!("parameter ${name}: {m}")))
            }
            other => Err(self.err(at, format!("parameter ${name} = {other}: expected a duration string like \"5s\""))),
        }
    }

    fn boolean(&mut self, at: &str, value: &Parameterized<bool>) -> Result<bool, InputError> {
        let name = match value {
            Parameterized::Literal(b) => return Ok(*b),
            Parameterized::Param(name) => name,
        };
        match self.param(at, name)?.clone() {
            ParamValue::Bool(b) => Ok(b),
            other => Err(self.err(at, format!("parameter ${name} = {other}: expected true or false"))),
        }
    }

    fn template_params(
        &mut self,
        at: &str,
        raw: &BTreeMap<String, Parameterized<ParamValue>>,
    ) -> Result<BTreeMap<String, ParamValue>, InputError> {
        let mut out = BTreeMap::new();
        for (k, v) in raw {
            let value = match v {
                Parameterized::Literal(v) => v.clone(),
                // Upstream's `$name|default`: the default is YAML, used when the parameter is absent.
                Parameterized::Param(name) => match name.split_once('|') {
                    Some((name, default)) if !self.w.params.contains_key(name) => {
                        let kat = format!("{at}.templateParams.{k}");
                        let parsed: serde_norway::Value = serde_norway::from_str(default).map_err(|e| {
                            self.err(&kat, format!("default {default:?} of parameter ${name} is not YAML: {e}"))
                        })?;
                        match parsed {
                            serde_norway::Value::Number(n) => {
                                n.as_i64().map(ParamValue::Int).or_else(|| n.as_f64().map(ParamValue::Float))
                            }
                            serde_norway::Value::String(s) => Some(ParamValue::Str(s)),
                            serde_norway::Value::Bool(b) => Some(ParamValue::Bool(b)),
                            // `$selectors|`: an empty default is YAML null, passed on as nil.
                            serde_norway::Value::Null => Some(ParamValue::Structured(serde_norway::Value::Null)),
                            _ => None,
                        }
                        .ok_or_else(|| self.err(&kat, format!("default {default:?} of ${name}: expected a scalar")))?
                    }
                    Some((name, _)) => self.param(&format!("{at}.templateParams.{k}"), name)?.clone(),
                    None => self.param(&format!("{at}.templateParams.{k}"), name)?.clone(),
                },
            };
            out.insert(k.clone(), value);
        }
        Ok(out)
    }

    fn count_at(at: &str, count: &Parameterized<u64>) -> String {
        match count {
            Parameterized::Param(_) => format!("{at}.countParam"),
            Parameterized::Literal(_) => format!("{at}.count"),
        }
    }

    fn create_pods(
        &mut self,
        at: &str,
        op: &CreatePodsOp,
        namespace: Option<String>,
        out: &mut Vec<ResolvedOp>,
    ) -> Result<(), InputError> {
        let mut count = self.int(&Self::count_at(at, &op.count), &op.count)?;
        if let Some(m) = &op.count_multiplier_param {
            let multiplier = self.int(&format!("{at}.countMultiplierParam"), &Parameterized::Param(m.clone()))?;
            count = count.checked_mul(multiplier).ok_or_else(|| self.err(at, "count overflows".to_string()))?;
        }
        let steady_state = self.boolean(&format!("{at}.steadyState"), &op.steady_state)?;
        let duration = op.duration.as_ref().map(|d| self.duration(&format!("{at}.duration"), d)).transpose()?;
        if steady_state && duration.is_none_or(|d| d.is_zero()) {
            return Err(self.err(&format!("{at}.duration"), "steadyState needs a duration > 0".to_string()));
        }
        if steady_state && op.skip_wait_to_completion {
            return Err(self.err(at, "skipWaitToCompletion and steadyState cannot both be true".to_string()));
        }
        let signature_batch_size = match &op.signature_batch_size {
            Some(s) => self.int(&format!("{at}.signatureBatchSize"), s)?.max(1),
            None => 1,
        };
        let index = out.len();
        out.push(ResolvedOp::CreatePods {
            count,
            namespace: namespace.or_else(|| op.namespace.clone()).unwrap_or_else(|| format!("namespace-{index}")),
            pod_template_path: op.pod_template_path.clone().or_else(|| self.tc.default_pod_template_path.clone()),
            collect_metrics: op.collect_metrics,
            skip_wait_to_completion: op.skip_wait_to_completion,
            steady_state,
            duration,
            persistent_volume_template_path: op.persistent_volume_template_path.clone(),
            persistent_volume_claim_template_path: op.persistent_volume_claim_template_path.clone(),
            template_params: self.template_params(at, &op.template_params)?,
            signature_batch_size,
        });
        Ok(())
    }

    fn op(&mut self, at: &str, op: &Op, out: &mut Vec<ResolvedOp>) -> Result<(), InputError> {
        let resolved = match op {
            Op::CreateNodes(o) => ResolvedOp::CreateNodes {
                count: self.int(&Self::count_at(at, &o.count), &o.count)?,
                node_template_path: o.node_template_path.clone(),
                node_allocatable_strategy: o.node_allocatable_strategy.clone(),
                label_node_prepare_strategy: o.label_node_prepare_strategy.clone(),
                unique_node_label_strategy: o.unique_node_label_strategy.clone(),
                template_params: self.template_params(at, &o.template_params)?,
            },
            Op::CreateNamespaces(o) => ResolvedOp::CreateNamespaces {
                prefix: o.prefix.clone(),
                count: self.int(&Self::count_at(at, &o.count), &o.count)?,
                namespace_template_path: o.namespace_template_path.clone(),
            },
            Op::CreatePods(o) => return self.create_pods(at, o, None, out),
            Op::Noop(_) => return Ok(()),
            Op::Unsupported { reason, .. } => return Err(self.err(at, format!("cannot run: {reason}"))),
            Op::CreatePodSets(o) => {
                let sets = self.int(&Self::count_at(at, &o.count), &o.count)?;
                let inner_at = format!("{at}.createPodsOp");
                if sets == 0 {
                    // Parameters of the inner op still count as used, as they would be with sets > 0.
                    let mut scratch = Vec::new();
                    return self.create_pods(&inner_at, &o.create_pods_op, Some(String::new()), &mut scratch);
                }
                for i in 0..sets {
                    let namespace = format!("{}-{i}", o.namespace_prefix);
                    self.create_pods(&inner_at, &o.create_pods_op, Some(namespace), out)?;
                }
                return Ok(());
            }
            Op::DeletePods(o) => ResolvedOp::DeletePods {
                namespace: o.namespace.clone(),
                label_selector: o.label_selector.clone(),
                skip_wait_to_completion: o.skip_wait_to_completion,
                delete_pods_per_second: o.delete_pods_per_second,
            },
            Op::Churn(o) => ResolvedOp::Churn {
                mode: o.mode,
                number: o.number,
                interval_ms: o.interval_ms,
                namespace: o.namespace.clone().unwrap_or_else(|| format!("namespace-{}", out.len())),
                template_paths: o.template_paths.clone(),
            },
            Op::Barrier(o) => ResolvedOp::Barrier {
                namespaces: o.namespaces.clone(),
                label_selector: o.label_selector.clone(),
                stage_requirement: o.stage_requirement,
            },
            Op::AllocResourceClaims { namespace } => ResolvedOp::AllocResourceClaims { namespace: namespace.clone() },
            Op::Sleep(o) => ResolvedOp::Sleep { duration: self.duration(&format!("{at}.duration"), &o.duration)? },
            Op::StartCollectingMetrics(o) => ResolvedOp::StartCollectingMetrics {
                name: o.name.clone(),
                namespaces: o.namespaces.clone(),
                label_selector: o.label_selector.clone(),
            },
            Op::StopCollectingMetrics => ResolvedOp::StopCollectingMetrics,
            Op::CreateAny(o) => ResolvedOp::CreateAny {
                template_path: o.template_path.clone(),
                namespace: o.namespace.clone(),
                count: self.int(&Self::count_at(at, &o.count), &o.count)?,
                template_params: self.template_params(at, &o.template_params)?,
            },
            Op::CreatePodGroups(o) => {
                let count_at = Self::count_at(at, &o.count);
                let count = self.int(&count_at, &o.count)?;
                if count < 1 {
                    return Err(
                        self.err(&count_at, format!("createPodGroups: count must be greater than 0, got {count}"))
                    );
                }
                ResolvedOp::CreatePodGroups {
                    template_path: o.template_path.clone(),
                    namespace: o.namespace.clone(),
                    count,
                    template_params: self.template_params(at, &o.template_params)?,
                }
            }
            Op::UpdateAny(o) => ResolvedOp::UpdateAny {
                template_path: o.template_path.clone(),
                namespace: o.namespace.clone(),
                count: self.int(&Self::count_at(at, &o.count), &o.count)?,
                update_per_second: o.update_per_second,
                subresources: o.subresources.clone(),
            },
        };
        out.push(resolved);
        Ok(())
    }
}
