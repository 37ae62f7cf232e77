//! The simulated agent's stage file (`--agent-config FILE`) and its command-line overrides.
//!
//! ```yaml
//! name: realistic
//! seed: 1
//! stages:                      # KWOK-style: each delay plus a uniform jitter in [0, jitterMs]
//!   bind:   {delayMs: 5,    jitterMs: 2}
//!   start:  {delayMs: 1000, jitterMs: 2000}   # Bound -> SandboxReady, ContainersStarted, Running
//!   delete: {delayMs: 1000, jitterMs: 200}
//! failures:
//!   bindFailureRate: 0.05      # probability that a bind ends in BindFailed
//!   startFailureRate: 0.0      # probability that a bound pod ends in Failed instead of Running
//!   nodeFailures:              # explicit failures: the node's pods are evicted at that time
//!     - {node: node-3, atMs: 30000}
//!   nodeFailureIntervalMs: 0   # mean time between random node failures (exponential); 0 = none
//! ```

use serde::Deserialize;

use crate::error::InputError;

/// One stage: a delay plus a uniform jitter in `[0, jitter]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stage {
    pub delay_us: u64,
    pub jitter_us: u64,
}

impl Stage {
    pub fn is_zero(self) -> bool {
        self.delay_us == 0 && self.jitter_us == 0
    }
}

/// A node failure at a fixed time since the start of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFailure {
    pub node: String,
    pub at_us: u64,
}

/// A validated simulated-agent configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    pub name: String,
    /// Seeds every random draw (per pod, so the outcome does not depend on thread interleaving).
    pub seed: u64,
    pub bind: Stage,
    pub start: Stage,
    pub delete: Stage,
    pub bind_failure_rate: f64,
    pub start_failure_rate: f64,
    pub node_failures: Vec<NodeFailure>,
    /// Mean time between random node failures; 0 disables them.
    pub node_failure_interval_us: u64,
    /// KWOK Stage objects: when set, they drive a bound pod's life (start, phase, deletion)
    /// instead of `start` and `delete` (see [`super::kwok`]).
    pub kwok_stages: Vec<super::kwok::KwokStage>,
}

/// Quick overrides from the command line (`--sim-bind-latency-ms` and friends).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimOverrides {
    pub bind_latency_ms: Option<f64>,
    pub start_latency_ms: Option<f64>,
    /// Applies to every stage.
    pub jitter_ms: Option<f64>,
    pub bind_failure_rate: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawStage {
    #[serde(default)]
    delay_ms: f64,
    #[serde(default)]
    jitter_ms: f64,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawStages {
    #[serde(default)]
    bind: RawStage,
    #[serde(default)]
    start: RawStage,
    #[serde(default)]
    delete: RawStage,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawNodeFailure {
    node: String,
    at_ms: f64,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFailures {
    #[serde(default)]
    bind_failure_rate: f64,
    #[serde(default)]
    start_failure_rate: f64,
    #[serde(default)]
    node_failures: Vec<RawNodeFailure>,
    #[serde(default)]
    node_failure_interval_ms: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSimConfig {
    #[serde(default)]
    name: String,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    stages: RawStages,
    #[serde(default)]
    failures: RawFailures,
}

/// Milliseconds (finite, >= 0, at most a year) to whole microseconds.
fn ms_to_us(file: &str, path: &str, ms: f64) -> Result<u64, InputError> {
    const YEAR_MS: f64 = 365.0 * 24.0 * 3600.0 * 1000.0;
    if !ms.is_finite() || !(0.0..=YEAR_MS).contains(&ms) {
        return Err(InputError::new(
            file,
            path,
            format!("{ms} is not a duration in milliseconds between 0 and one year"),
        ));
    }
    Ok((ms * 1000.0).round() as u64)
}

fn rate(file: &str, path: &str, r: f64) -> Result<f64, InputError> {
    if !(0.0..=1.0).contains(&r) {
        return Err(InputError::new(file, path, format!("{r} is not a probability between 0 and 1")));
    }
    Ok(r)
}

impl SimConfig {
    /// Every stage instant, no failures: events are emitted inline, for pure scheduler throughput.
    pub fn zero_latency() -> Self {
        SimConfig {
            name: "zero-latency".into(),
            seed: 0,
            bind: Stage::default(),
            start: Stage::default(),
            delete: Stage::default(),
            bind_failure_rate: 0.0,
            start_failure_rate: 0.0,
            node_failures: Vec::new(),
            node_failure_interval_us: 0,
            kwok_stages: Vec::new(),
        }
    }

    /// Reads and validates a stage file.
    pub fn load(path: &std::path::Path) -> Result<SimConfig, InputError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&file, "", format!("cannot read the agent stage file: {e}")))?;
        Self::parse(&file, &text)
    }

    /// Parses and validates stage-file text; `file` names it in errors. A file of KWOK `Stage`
    /// objects (`apiVersion: kwok.x-k8s.io/v1alpha1`) is read as such.
    pub fn parse(file: &str, text: &str) -> Result<SimConfig, InputError> {
        if super::kwok::is_stage_file(text) {
            let stages = super::kwok::parse_stages(file, text)?;
            let name = std::path::Path::new(file)
                .file_stem()
                .map_or_else(|| "kwok".to_string(), |s| s.to_string_lossy().to_string());
            return Ok(SimConfig { name, kwok_stages: stages, ..SimConfig::zero_latency() });
        }
        let de = serde_norway::Deserializer::from_str(text);
        let raw: RawSimConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            InputError::new(file, path, format!("{}; expected a stage file (name, seed, stages, failures)", e.inner()))
        })?;
        let stage = |name: &str, s: &RawStage| -> Result<Stage, InputError> {
            Ok(Stage {
                delay_us: ms_to_us(file, &format!("stages.{name}.delayMs"), s.delay_ms)?,
                jitter_us: ms_to_us(file, &format!("stages.{name}.jitterMs"), s.jitter_ms)?,
            })
        };
        let f = &raw.failures;
        let node_failures = f
            .node_failures
            .iter()
            .enumerate()
            .map(|(i, nf)| {
                if nf.node.is_empty() {
                    return Err(InputError::new(
                        file,
                        format!("failures.nodeFailures[{i}].node"),
                        "expected a node name",
                    ));
                }
                Ok(NodeFailure {
                    node: nf.node.clone(),
                    at_us: ms_to_us(file, &format!("failures.nodeFailures[{i}].atMs"), nf.at_ms)?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SimConfig {
            name: if raw.name.is_empty() { "sim".into() } else { raw.name },
            seed: raw.seed,
            bind: stage("bind", &raw.stages.bind)?,
            start: stage("start", &raw.stages.start)?,
            delete: stage("delete", &raw.stages.delete)?,
            bind_failure_rate: rate(file, "failures.bindFailureRate", f.bind_failure_rate)?,
            start_failure_rate: rate(file, "failures.startFailureRate", f.start_failure_rate)?,
            node_failures,
            node_failure_interval_us: ms_to_us(file, "failures.nodeFailureIntervalMs", f.node_failure_interval_ms)?,
            kwok_stages: Vec::new(),
        })
    }

    /// Applies the command-line overrides; each flag is validated and named in errors.
    pub fn with_overrides(mut self, o: &SimOverrides) -> Result<SimConfig, InputError> {
        if let Some(ms) = o.bind_latency_ms {
            self.bind.delay_us = ms_to_us("--sim-bind-latency-ms", "", ms)?;
        }
        if let Some(ms) = o.start_latency_ms {
            self.start.delay_us = ms_to_us("--sim-start-latency-ms", "", ms)?;
        }
        if let Some(ms) = o.jitter_ms {
            let us = ms_to_us("--sim-jitter-ms", "", ms)?;
            for s in [&mut self.bind, &mut self.start, &mut self.delete] {
                s.jitter_us = us;
            }
        }
        if let Some(r) = o.bind_failure_rate {
            self.bind_failure_rate = rate("--sim-bind-failure-rate", "", r)?;
        }
        Ok(self)
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Whether every event is emitted inline (no stage takes time).
    pub fn is_zero_latency(&self) -> bool {
        self.bind.is_zero()
            && self.start.is_zero()
            && self.delete.is_zero()
            && self
                .kwok_stages
                .iter()
                .all(|s| s.kind != super::kwok::StageKind::Pod || s.delay_ms == 0 && s.jitter_ms.unwrap_or(0) == 0)
    }
}
