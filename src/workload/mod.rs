//! Workload files in kube-scheduler's `scheduler_perf` format (`test/integration/scheduler_perf/`).
//!
//! - [`spec`]: the typed model and [`load_workload_file`] (parse + validate + absolute template paths).
//! - [`resolve()`]: one workload's parameters substituted into its test case's ops.
//! - [`LabelFilter`]: upstream's `-perf-scheduling-label-filter` (default `performance`).
//! - [`strategy`]: pure helpers for `createNodes`' node-prepare strategies.
//! - [`template`]: object templates with Go `text/template` semantics and upstream's function map.
//! - [`list`]: the text of `schedperf list PATH`.
//!
//! # What the runner must do with the resolved ops (upstream's `executor.go`)
//!
//! Ops run in order. `createPods` creates its namespace if needed, creates `count` pods from the
//! template and waits until all of them are bound, unless `skipWaitToCompletion` (then a later
//! `barrier` waits for them). With `collectMetrics`, metrics collection starts before the pods are
//! created and stops once they are all bound; `startCollectingMetrics`/`stopCollectingMetrics` do
//! the same around several ops. `steadyState` keeps `count` pods for `duration`, deleting each batch
//! once it is bound. `churn` runs in the background until the workload ends: every
//! `interval_ms` it creates one object per template (`create`: until `number` ticks, 0 = no limit)
//! or, in `recreate`, cycles `number` slots per template, deleting the slot's previous object and
//! creating a new one on alternate visits. `deletePods` deletes the matching pods at
//! `delete_pods_per_second` (0 = all at once), in the background if `skip_wait_to_completion`.
//! `barrier` waits until every pod of the namespaces (all if empty) is bound (`Scheduled`) or has
//! had a scheduling attempt (`Attempted`). Templates containing `{{` are rendered per object with
//! [`render_template`] and [`template_env`] (`.Index`, `.Count`, the op's template params).
//! A `createNodes` op applies at most one strategy ([`label_node_prepare`], [`unique_node_label`],
//! [`apply_node_allocatable`]) to node `i` of the op. `updateAny` renders its template per object
//! (`.Index`, `.Count`) and replaces the named node or pod (spec and status, as Update +
//! UpdateStatus do). Ops upstream has and schedperf does not run make [`skip_reason`] skip the
//! workload; [`gates`] says what each feature gate means for a run.

pub mod duration;
pub mod gates;
pub mod labels;
pub mod resolve;
pub mod spec;
pub mod strategy;
pub mod support;
pub mod template;
pub mod volumes;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use labels::LabelFilter;
pub use resolve::{resolve, workload_labels, HarnessHooks, ResolvedOp, ResolvedWorkload};
pub use spec::{load_workload_file, Op, ParamValue, TestCase, Threshold, Workload};
pub use strategy::{apply_node_allocatable, label_node_prepare, node_allocatable, signature_label, unique_node_label};
pub use support::skip_reason;
pub use template::{is_templated, render_template, template_env, Template, TemplateError};

use crate::error::InputError;

/// Directory names [`load_path`] does not descend into: template directories hold objects, not
/// test cases.
const SKIPPED_DIRS: &[&str] = &["templates"];

/// Loads a workload file, or every `*.yaml`/`*.yml` under a directory (recursively, in path order,
/// skipping `templates` directories and files that are not a list of test cases, such as
/// scheduler configs).
///
/// A file named directly must load; under a directory, a YAML list whose first item has a
/// `workloadTemplate` or `workloads` key is a workload file and must load; anything else is skipped.
pub fn load_path(path: &Path) -> Result<Vec<(PathBuf, Vec<TestCase>)>, InputError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| InputError::new(path.display().to_string(), "", format!("cannot open: {e}")))?;
    if meta.is_file() {
        return Ok(vec![(path.to_path_buf(), load_workload_file(path)?)]);
    }
    let mut files = Vec::new();
    collect_yaml(path, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for file in files {
        if looks_like_workload_file(&file) {
            let cases = load_workload_file(&file)?;
            out.push((file, cases));
        }
    }
    Ok(out)
}

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let read_err =
        |e: std::io::Error| InputError::new(dir.display().to_string(), "", format!("cannot read directory: {e}"));
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&name) && !name.starts_with('.') {
                collect_yaml(&path, out)?;
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(path);
        }
    }
    Ok(())
}

/// A YAML list whose first item is a map with `workloadTemplate` or `workloads`.
fn looks_like_workload_file(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(serde_norway::Value::Sequence(items)) = serde_norway::from_str::<serde_norway::Value>(&text) else {
        return false;
    };
    items
        .first()
        .and_then(|i| i.as_mapping())
        .is_some_and(|m| m.contains_key("workloadTemplate") || m.contains_key("workloads"))
}

/// The text of `schedperf list PATH`: for each file, each `test case/workload` with its labels,
/// its threshold and the parameters, in aligned columns; with a filter, only the workloads whose
/// labels it matches.
pub fn list(path: &Path, filter: Option<&LabelFilter>) -> Result<String, InputError> {
    let files = load_path(path)?;
    let mut rows: Vec<[String; 5]> = Vec::new();
    let mut file_starts = Vec::new();
    for (file, cases) in &files {
        file_starts.push((rows.len(), file.display().to_string()));
        for tc in cases {
            for w in &tc.workloads {
                if filter.is_some_and(|f| !f.matches(&workload_labels(tc, w))) {
                    continue;
                }
                let threshold = match &w.threshold {
                    None => "-".to_string(),
                    Some(t) => format_threshold(t, &w.threshold_metric_selector),
                };
                let params: Vec<String> = w.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                rows.push([
                    format!("{}/{}", tc.name, w.name),
                    {
                        let labels = workload_labels(tc, w).join(",");
                        if labels.is_empty() {
                            "-".to_string()
                        } else {
                            labels
                        }
                    },
                    threshold,
                    params.join(" "),
                    skip_reason(tc, w).map_or_else(|| "run".to_string(), |r| format!("skip: {r}")),
                ]);
            }
        }
    }
    let header = ["WORKLOAD", "LABELS", "THRESHOLD", "PARAMS", "STATUS"].map(String::from);
    let table: Vec<Vec<String>> = std::iter::once(&header).chain(&rows).map(|r| r.to_vec()).collect();
    let laid_out = crate::report::table::columns(&table, &[], false);
    let mut lines = laid_out.lines();
    let mut out = format!("{}\n", lines.next().unwrap_or_default());
    let mut starts = file_starts.into_iter().peekable();
    for (i, line) in lines.enumerate() {
        while let Some((_, file)) = starts.next_if(|(start, _)| *start == i) {
            out.push_str(&format!("# {file}\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    for (_, file) in starts {
        out.push_str(&format!("# {file}\n"));
    }
    let workloads = rows.len();
    out.push_str(&format!("{} files, {workloads} workloads\n", files.len()));
    Ok(out)
}

fn format_threshold(t: &Threshold, selector: &spec::ThresholdMetricSelector) -> String {
    let op = if selector.expect_lower { "<" } else { ">" };
    let mut s = if t.values_by_topic.is_empty() || t.value != 0.0 { format!("{op}{}", t.value) } else { String::new() };
    for (topic, v) in &t.values_by_topic {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(&format!("{topic}:{op}{v}"));
    }
    let default = spec::ThresholdMetricSelector::default();
    if selector.name != default.name || selector.data_bucket != default.data_bucket {
        s.push_str(&format!(" ({} {})", selector.name, selector.data_bucket));
    }
    s
}
