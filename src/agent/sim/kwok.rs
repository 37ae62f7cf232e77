//! KWOK `Stage` objects (`apiVersion: kwok.x-k8s.io/v1alpha1`, `kind: Stage`) as the simulated
//! agent's lifecycle, applied as KWOK's stage controller applies them
//! (`pkg/kwok/controllers`, `pkg/utils/lifecycle`):
//!
//! - a stage applies to an object when its `selector` matches: `matchLabels`, `matchAnnotations`
//!   and every `matchExpressions` entry (`In`, `NotIn`, `Exists`, `DoesNotExist` on a field path);
//!   a stage without a selector is dropped, as KWOK drops it;
//! - among the stages that match, one is chosen: the only one, else by `weight` (weights of 0 or
//!   1 count as 0; all zero: uniformly);
//! - it fires after `delay.durationMilliseconds`, or, with `jitterDurationMilliseconds` larger,
//!   after a uniform draw in `[duration, jitter)`; a jitter smaller than the duration is the delay;
//! - `next.statusTemplate` sets the pod's phase (the `phase:` line) and its `podIP`; `next.delete`
//!   removes the pod; then the stages are matched again against the changed pod.
//!
//! What a selector sees of a pod: `.metadata.name`, `.metadata.namespace`, `.metadata.labels.<k>`,
//! `.metadata.deletionTimestamp` (set once the pod is being deleted), `.spec.nodeName`,
//! `.spec.hostNetwork`, `.status.phase` (Pending until a stage sets it), `.status.podIP` (set by a
//! stage whose template writes `podIP:`); any other path is absent (scheduler_perf pods have no
//! owner references, so KWOK's `pod-complete` stage never applies to them). Annotations are empty.
//! Node stages are read and checked but not simulated: the run creates nodes Ready, and heartbeats
//! change nothing the scheduler reads. A phase of `Failed` is reported as the pod failing; a phase
//! of `Succeeded` is kept by the agent only (no agent event frees a completed pod's resources yet).
//! A stage that changes nothing the selectors see is not matched again (KWOK would re-apply it
//! after its delay, forever).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_norway::Value;

use crate::error::InputError;

pub const API_VERSION: &str = "kwok.x-k8s.io/v1alpha1";

/// Which objects a stage applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageKind {
    Pod,
    Node,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expression {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

/// One validated Stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KwokStage {
    pub name: String,
    pub kind: StageKind,
    pub match_labels: BTreeMap<String, String>,
    pub match_annotations: BTreeMap<String, String>,
    pub expressions: Vec<Expression>,
    /// As KWOK: weights <= 1 count as 0.
    pub weight: u64,
    pub delay_ms: u64,
    pub jitter_ms: Option<u64>,
    /// The phase `next.statusTemplate` writes, if any.
    pub next_phase: Option<String>,
    /// Whether the template writes `podIP:`.
    pub next_pod_ip: bool,
    pub next_delete: bool,
}

/// What a pod selector reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView {
    pub name: String,
    pub namespace: String,
    pub node: String,
    pub labels: BTreeMap<String, String>,
    pub host_network: bool,
    pub deleting: bool,
    pub phase: String,
    pub pod_ip: bool,
}

impl PodView {
    /// The values at `key` (empty: absent).
    fn values(&self, key: &str) -> Vec<String> {
        let key = key.trim();
        if let Some(label) = key.strip_prefix(".metadata.labels.") {
            let label = label.trim_matches(['"', '\'', '[', ']']);
            return self.labels.get(label).cloned().into_iter().collect();
        }
        if let Some(rest) = key.strip_prefix(".metadata.labels[") {
            let label = rest.trim_end_matches(']').trim_matches(['"', '\'']);
            return self.labels.get(label).cloned().into_iter().collect();
        }
        match key {
            ".metadata.name" => vec![self.name.clone()],
            ".metadata.namespace" => vec![self.namespace.clone()],
            ".metadata.deletionTimestamp" if self.deleting => vec!["deleting".into()],
            ".spec.nodeName" => vec![self.node.clone()],
            ".spec.hostNetwork" if self.host_network => vec!["true".into()],
            ".status.phase" => vec![self.phase.clone()],
            ".status.podIP" if self.pod_ip => vec!["10.0.0.1".into()],
            _ => Vec::new(),
        }
    }

    /// Whether `stage` (a pod stage) selects this pod.
    pub fn matches(&self, stage: &KwokStage) -> bool {
        if stage.kind != StageKind::Pod {
            return false;
        }
        if stage.match_labels.iter().any(|(k, v)| self.labels.get(k) != Some(v)) {
            return false;
        }
        if !stage.match_annotations.is_empty() {
            return false;
        }
        stage.expressions.iter().all(|e| {
            let got = self.values(&e.key);
            match e.operator {
                Operator::Exists => !got.is_empty(),
                Operator::DoesNotExist => got.is_empty(),
                Operator::In => got.iter().any(|v| e.values.contains(v)),
                Operator::NotIn => !got.iter().any(|v| e.values.contains(v)),
            }
        })
    }
}

/// KWOK's choice among matching stages, given a uniform draw `pick(n)` in `0..n`.
pub fn choose<'a>(matching: &[&'a KwokStage], pick: &mut dyn FnMut(u64) -> u64) -> Option<&'a KwokStage> {
    match matching {
        [] => None,
        [one] => Some(one),
        _ => {
            let total: u64 = matching.iter().map(|s| s.weight).sum();
            if total == 0 {
                return Some(matching[pick(matching.len() as u64) as usize]);
            }
            let mut off = pick(total) as i64;
            for s in matching {
                if s.weight == 0 {
                    continue;
                }
                off -= s.weight as i64;
                if off < 0 {
                    return Some(s);
                }
            }
            matching.last().copied()
        }
    }
}

/// KWOK's delay: the duration, or a uniform draw in `[duration, jitter)` when the jitter is larger
/// (`pick(n)` draws in `0..n`), or the jitter when it is smaller.
pub fn delay_ms(stage: &KwokStage, pick: &mut dyn FnMut(u64) -> u64) -> u64 {
    match stage.jitter_ms {
        None => stage.delay_ms,
        Some(j) if j < stage.delay_ms => j,
        Some(j) if j == stage.delay_ms => j,
        Some(j) => stage.delay_ms + pick(j - stage.delay_ms),
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawStage {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: RawMeta,
    spec: RawSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawMeta {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    resource_ref: RawResourceRef,
    #[serde(default)]
    selector: Option<RawSelector>,
    #[serde(default)]
    weight: i64,
    #[serde(default)]
    weight_from: Option<Value>,
    #[serde(default)]
    delay: Option<RawDelay>,
    #[serde(default)]
    next: RawNext,
    #[serde(default)]
    immediate_next_stage: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawResourceRef {
    #[serde(default)]
    api_group: String,
    kind: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSelector {
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_annotations: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<RawExpression>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawExpression {
    key: String,
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawDelay {
    #[serde(default)]
    duration_milliseconds: Option<i64>,
    #[serde(default)]
    duration_from: Option<Value>,
    #[serde(default)]
    jitter_duration_milliseconds: Option<i64>,
    #[serde(default)]
    jitter_duration_from: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawNext {
    #[serde(default)]
    status_template: Option<String>,
    #[serde(default)]
    delete: bool,
    #[serde(default)]
    finalizers: Option<Value>,
    #[serde(default)]
    event: Option<Value>,
    #[serde(default)]
    patches: Option<Value>,
    #[serde(default)]
    status_subresource: Option<String>,
    #[serde(default)]
    status_patch_as: Option<Value>,
}

/// Whether `text` holds KWOK Stage objects (rather than a schedperf stage file).
pub fn is_stage_file(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("apiVersion:") && l.contains(API_VERSION))
}

/// Parses every document of `text` as a Stage; errors name `file`, the document and the field.
pub fn parse_stages(file: &str, text: &str) -> Result<Vec<KwokStage>, InputError> {
    let mut out = Vec::new();
    for (doc_index, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let at = |p: &str| {
            if p.is_empty() {
                format!("documents[{doc_index}]")
            } else {
                format!("documents[{doc_index}].{p}")
            }
        };
        let value = Value::deserialize(doc).map_err(|e| InputError::new(file, at(""), format!("not YAML: {e}")))?;
        if value.is_null() {
            continue;
        }
        let raw: RawStage = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            InputError::new(
                file,
                at(if path == "." { "" } else { &path }),
                format!("{}; expected a KWOK Stage", e.inner()),
            )
        })?;
        if raw.api_version != API_VERSION {
            return Err(InputError::new(
                file,
                at("apiVersion"),
                format!("{:?}: expected {API_VERSION}", raw.api_version),
            ));
        }
        if raw.kind != "Stage" {
            return Err(InputError::new(file, at("kind"), format!("{:?}: expected Stage", raw.kind)));
        }
        let name = raw.metadata.name.clone();
        let spec = raw.spec;
        let kind = match (spec.resource_ref.api_group.as_str(), spec.resource_ref.kind.as_str()) {
            ("v1" | "", "Pod") => StageKind::Pod,
            ("v1" | "", "Node") => StageKind::Node,
            (g, k) => {
                return Err(InputError::new(
                    file,
                    at("spec.resourceRef"),
                    format!("{g}/{k}: the simulated agent applies stages to v1 Pods and Nodes only"),
                ))
            }
        };
        if spec.weight_from.is_some() {
            return Err(InputError::new(file, at("spec.weightFrom"), "not supported: use weight"));
        }
        if spec.weight < 0 {
            return Err(InputError::new(
                file,
                at("spec.weight"),
                format!("{} is negative: expected >= 0", spec.weight),
            ));
        }
        let _ = spec.immediate_next_stage;
        let (mut delay_ms, mut jitter_ms) = (0, None);
        if let Some(d) = &spec.delay {
            if d.duration_from.is_some() {
                return Err(InputError::new(
                    file,
                    at("spec.delay.durationFrom"),
                    "not supported: use durationMilliseconds",
                ));
            }
            if d.jitter_duration_from.is_some() {
                return Err(InputError::new(
                    file,
                    at("spec.delay.jitterDurationFrom"),
                    "not supported: use jitterDurationMilliseconds",
                ));
            }
            let ms = |v: Option<i64>, field: &str| -> Result<Option<u64>, InputError> {
                v.map(|n| {
                    u64::try_from(n).map_err(|_| {
                        InputError::new(file, at(field), format!("{n} is negative: expected milliseconds >= 0"))
                    })
                })
                .transpose()
            };
            delay_ms = ms(d.duration_milliseconds, "spec.delay.durationMilliseconds")?.unwrap_or(0);
            jitter_ms = ms(d.jitter_duration_milliseconds, "spec.delay.jitterDurationMilliseconds")?;
        }
        let Some(selector) = spec.selector else {
            // KWOK drops a stage without a selector.
            continue;
        };
        let mut expressions = Vec::new();
        for (i, e) in selector.match_expressions.iter().enumerate() {
            let field = format!("spec.selector.matchExpressions[{i}].operator");
            let operator = match e.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(InputError::new(
                        file,
                        at(&field),
                        format!("{other:?}: expected In, NotIn, Exists or DoesNotExist"),
                    ))
                }
            };
            if matches!(operator, Operator::In | Operator::NotIn) && e.values.is_empty() {
                return Err(InputError::new(
                    file,
                    at(&format!("spec.selector.matchExpressions[{i}].values")),
                    "empty: In and NotIn need values",
                ));
            }
            if e.key.trim().is_empty() {
                return Err(InputError::new(file, at(&format!("spec.selector.matchExpressions[{i}].key")), "empty"));
            }
            expressions.push(Expression { key: e.key.clone(), operator, values: e.values.clone() });
        }
        let template = spec.next.status_template.as_deref().unwrap_or("");
        // Top-level keys of the rendered status (KWOK's templates write them at column 0).
        let next_phase = template
            .lines()
            .find_map(|l| l.strip_prefix("phase:").map(|p| p.trim().trim_matches(['"', '\'']).to_string()));
        let next_pod_ip = template.lines().any(|l| l.trim_start() == l && l.starts_with("podIP:"));
        let _ = (
            &spec.next.finalizers,
            &spec.next.event,
            &spec.next.patches,
            &spec.next.status_subresource,
            &spec.next.status_patch_as,
        );
        out.push(KwokStage {
            name,
            kind,
            match_labels: selector.match_labels,
            match_annotations: selector.match_annotations,
            expressions,
            weight: if spec.weight > 1 { spec.weight as u64 } else { 0 },
            delay_ms,
            jitter_ms,
            next_phase,
            next_pod_ip,
            next_delete: spec.next.delete,
        });
    }
    if out.is_empty() {
        return Err(InputError::new(file, "", "no Stage with a selector: expected at least one KWOK Stage"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
