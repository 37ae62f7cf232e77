//! Queue scripts: the scheduling queue's timing and order checked against upstream's real
//! `PriorityQueue` (`schedperf-oracle queue`, see oracle/README.md).
//!
//! A script sets SchedulerPopFromBackoffQ and lists steps: add a pod (priority, gated), pop, the
//! popped pod's outcome (done, fail with rejecting plugins, error), advance the clock (running the
//! backoffQ flush at every whole second and the unschedulablePods leftover flush every 30 s, as
//! upstream's `Run` does), a cluster event, the pod's own update (ungate, label), activate, delete.
//! After each step both sides report what pop returned and the pods of activeQ, backoffQ,
//! unschedulablePods and the gated ones (sets, by name; pops check the order).
//!
//! [`generate`] draws scripts by running them on schedperf's queue as it goes (what is in flight
//! decides which outcomes can follow); every pod's timestamp is unique, so QueueSort never meets a
//! tie, which upstream's heaps would break arbitrarily. The hints are schedperf's coarse table on
//! both sides (the oracle registers it), so the check covers the queue, not the plugins' hint bodies.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::InputError;
use crate::ids::PodUid;
use crate::queue::{
    default_hint_fn, ClusterEvent, Location, NodeChange, PluginSet, QueuedPod, SchedulingQueue, DEFAULT_HINT_PLUGINS,
    DEFAULT_INITIAL_BACKOFF_NANOS, DEFAULT_MAX_BACKOFF_NANOS,
};

use super::{Oracle, OracleError, VerifyArgs};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// A queue script (the JSON the oracle reads; field names as in oracle/queue.go).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    pub pop_from_backoff_q: bool,
    pub steps: Vec<Step>,
}

/// One step. `op` is one of add, pop, done, fail, error, advance, event, ungate, update, activate,
/// delete; the other fields are the op's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    pub op: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gated: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub ms: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub event: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub change: String,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// The state after a step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub popped: Option<String>,
    pub active: Vec<String>,
    pub backoff: Vec<String>,
    pub unschedulable: Vec<String>,
    pub gated: Vec<String>,
}

/// The event kinds a script may deliver, with the changes they take.
const EVENTS: &[(&str, &[&str])] = &[
    ("NodeAdd", &[""]),
    ("NodeDelete", &[""]),
    ("NodeUpdate", &["Allocatable", "Label", "Taint", "Condition"]),
    ("AssignedPodAdd", &[""]),
    ("AssignedPodDelete", &[""]),
    ("AssignedPodUpdate", &["Label", "ScaleDown"]),
];

/// The rejecting plugins scripts use: the ones with a default hint.
fn plugin_id(name: &str) -> Option<u8> {
    DEFAULT_HINT_PLUGINS.iter().position(|p| *p == name).map(|i| i as u8)
}

/// schedperf's queue running a script, with the pods the script handed out.
pub struct Ours {
    q: SchedulingQueue<()>,
    now: u64,
    uids: BTreeMap<String, PodUid>,
    names: BTreeMap<PodUid, String>,
    in_flight: BTreeMap<String, QueuedPod<()>>,
    gated: BTreeSet<String>,
}

impl Ours {
    pub fn new(pop_from_backoff: bool) -> Self {
        let mut q = SchedulingQueue::new(DEFAULT_INITIAL_BACKOFF_NANOS, DEFAULT_MAX_BACKOFF_NANOS)
            .with_pop_from_backoff(pop_from_backoff);
        for (id, name) in DEFAULT_HINT_PLUGINS.iter().enumerate() {
            q.register_hint(id as u8, default_hint_fn(name).expect("a default hint"));
        }
        Ours {
            q,
            now: 0,
            uids: BTreeMap::new(),
            names: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            gated: BTreeSet::new(),
        }
    }

    fn uid(&self, name: &str) -> Result<PodUid, String> {
        self.uids.get(name).copied().ok_or_else(|| format!("pod {name:?} was not added"))
    }

    /// Runs one step; an error is a script that does not make sense (as the oracle refuses it).
    pub fn step(&mut self, st: &Step) -> Result<State, String> {
        let mut popped = None;
        match st.op.as_str() {
            "add" => {
                if self.uids.contains_key(&st.pod) {
                    return Err(format!("pod {:?} added twice", st.pod));
                }
                let uid = PodUid(self.uids.len() as u64 + 1);
                self.uids.insert(st.pod.clone(), uid);
                self.names.insert(uid, st.pod.clone());
                if st.gated {
                    self.gated.insert(st.pod.clone());
                }
                self.q.add(QueuedPod::new(uid, st.priority, ()).gated(st.gated), self.now);
            }
            "pop" => {
                if let Some(p) = self.q.pop(self.now) {
                    let name = self.names[&p.uid].clone();
                    self.in_flight.insert(name.clone(), p);
                    popped = Some(name);
                }
            }
            "fail" | "error" | "done" => {
                let p = self
                    .in_flight
                    .remove(&st.pod)
                    .ok_or_else(|| format!("{}: pod {:?} is not in flight", st.op, st.pod))?;
                match st.op.as_str() {
                    "done" => self.q.done(p.uid),
                    "error" => {
                        self.q.add_backoff(p, self.now);
                    }
                    _ => {
                        let mut rejectors = PluginSet::EMPTY;
                        for name in &st.plugins {
                            rejectors.insert(plugin_id(name).ok_or_else(|| format!("fail: unknown plugin {name:?}"))?);
                        }
                        if rejectors.is_empty() {
                            return Err(format!("fail: pod {:?}: no plugins", st.pod));
                        }
                        self.q.add_unschedulable(p, rejectors, self.now);
                    }
                }
            }
            "advance" => {
                let target = self.now + st.ms * MS;
                loop {
                    let next = (self.now / S + 1) * S;
                    if next > target {
                        break;
                    }
                    self.now = next;
                    self.q.flush_backoff_completed(self.now);
                }
                self.now = target;
            }
            "event" => {
                let event = match (st.event.as_str(), st.change.as_str()) {
                    ("NodeAdd", _) => ClusterEvent::NodeAdd { node: 0 },
                    ("NodeDelete", _) => ClusterEvent::NodeDelete { node: 0 },
                    ("NodeUpdate", c) => {
                        let change = match c {
                            "Allocatable" => NodeChange::ALLOCATABLE,
                            "Label" => NodeChange::LABEL,
                            "Taint" => NodeChange::TAINT,
                            "Condition" => NodeChange::CONDITION,
                            _ => return Err(format!("event NodeUpdate: unknown change {c:?}")),
                        };
                        ClusterEvent::NodeUpdate { node: 0, change }
                    }
                    ("AssignedPodAdd", _) => ClusterEvent::AssignedPodAdd { pod: PodUid(0), node: 0 },
                    ("AssignedPodDelete", _) => ClusterEvent::AssignedPodDelete { pod: PodUid(0), node: 0 },
                    ("AssignedPodUpdate", c) => ClusterEvent::AssignedPodUpdate {
                        pod: PodUid(0),
                        node: 0,
                        resources_scaled_down: match c {
                            "ScaleDown" => true,
                            "Label" => false,
                            _ => return Err(format!("event AssignedPodUpdate: unknown change {c:?}")),
                        },
                    },
                    (e, _) => return Err(format!("unknown event {e:?}")),
                };
                self.q.on_event(event, self.now);
            }
            // As the driver's updateAny does: PreEnqueue passes now (remove_gate), or else an
            // update of the pending pod.
            "ungate" | "update" => {
                let uid = self.uid(&st.pod)?;
                if st.op == "ungate" {
                    self.gated.remove(&st.pod);
                }
                let ungated = st.op == "ungate" && self.q.remove_gate(uid);
                if !ungated {
                    self.q.on_event(ClusterEvent::UnscheduledPodUpdate { pod: uid }, self.now);
                }
            }
            "activate" => {
                let uid = self.uid(&st.pod)?;
                self.q.activate(uid);
            }
            "delete" => {
                let uid = self.uid(&st.pod)?;
                self.gated.remove(&st.pod);
                self.q.delete(uid);
            }
            op => return Err(format!("unknown op {op:?}")),
        }
        Ok(self.state(popped))
    }

    fn state(&self, popped: Option<String>) -> State {
        let mut s = State { popped, ..State::default() };
        for (uid, loc) in self.q.queued_pods() {
            let name = self.names[&uid].clone();
            match loc {
                Location::Active => s.active.push(name),
                Location::Backoff => s.backoff.push(name),
                Location::Unschedulable => s.unschedulable.push(name),
                Location::Gated => s.gated.push(name),
            }
        }
        for v in [&mut s.active, &mut s.backoff, &mut s.unschedulable, &mut s.gated] {
            v.sort();
        }
        s
    }
}

/// Runs a whole script on schedperf's queue.
pub fn run_ours(script: &Script) -> Result<Vec<State>, String> {
    let mut ours = Ours::new(script.pop_from_backoff_q);
    script.steps.iter().enumerate().map(|(i, st)| ours.step(st).map_err(|e| format!("steps[{i}]: {e}"))).collect()
}

/// Script `index` of `seed`: both gate values, every step kind, up to 6 pods, 40-80 steps.
pub fn generate(seed: u64, index: u64) -> Script {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index);
    let pop_from_backoff_q = index.is_multiple_of(2);
    let mut ours = Ours::new(pop_from_backoff_q);
    let mut steps = Vec::new();
    let n_steps = rng.gen_range(40..=80);
    let n_pods = rng.gen_range(2..=6);
    let mut added = 0usize;
    // Pods that may still be named: added, neither deleted nor done (a scheduled pod's updates are
    // no longer the queue's).
    let mut live: Vec<String> = Vec::new();
    // The time of the last step that stamped a pod (add, fail, error): stamps stay unique.
    let mut last_stamp: Option<u64> = None;
    let plugins: Vec<&str> = DEFAULT_HINT_PLUGINS.to_vec();
    while steps.len() < n_steps {
        let in_flight: Vec<String> = ours.in_flight.keys().cloned().collect();
        let roll = rng.gen_range(0..100);
        let step = if roll < 12 && added < n_pods {
            added += 1;
            Step {
                op: "add".into(),
                pod: format!("p{added}"),
                priority: [0, 0, 5, 10][rng.gen_range(0..4)],
                gated: rng.gen_bool(0.2),
                ..Step::default()
            }
        } else if roll < 30 {
            Step { op: "pop".into(), ..Step::default() }
        } else if roll < 50 && !in_flight.is_empty() {
            let pod = in_flight[rng.gen_range(0..in_flight.len())].clone();
            match rng.gen_range(0..10) {
                0..=5 if live.contains(&pod) => {
                    let k = rng.gen_range(1..=2);
                    let mut ps: Vec<String> =
                        (0..k).map(|_| plugins[rng.gen_range(0..plugins.len())].to_string()).collect();
                    ps.sort();
                    ps.dedup();
                    Step { op: "fail".into(), pod, plugins: ps, ..Step::default() }
                }
                6..=7 if live.contains(&pod) => Step { op: "error".into(), pod, ..Step::default() },
                _ => Step { op: "done".into(), pod, ..Step::default() },
            }
        } else if roll < 68 {
            let ms = match rng.gen_range(0..20) {
                0..=7 => rng.gen_range(1..400),
                8..=15 => rng.gen_range(400..3_000),
                16..=18 => rng.gen_range(3_000..20_000),
                _ => rng.gen_range(250_000..330_000),
            };
            Step { op: "advance".into(), ms, ..Step::default() }
        } else if roll < 84 {
            let (event, changes) = EVENTS[rng.gen_range(0..EVENTS.len())];
            let change = changes[rng.gen_range(0..changes.len())].to_string();
            Step { op: "event".into(), event: event.into(), change, ..Step::default() }
        } else if !live.is_empty() {
            let pod = live[rng.gen_range(0..live.len())].clone();
            let gated: Vec<String> = ours.gated.iter().filter(|p| live.contains(p)).cloned().collect();
            match rng.gen_range(0..10) {
                0..=2 if !gated.is_empty() => {
                    Step { op: "ungate".into(), pod: gated[rng.gen_range(0..gated.len())].clone(), ..Step::default() }
                }
                0..=3 => Step { op: "update".into(), pod, ..Step::default() },
                4..=7 => Step { op: "activate".into(), pod, ..Step::default() },
                // A pod deleted in flight is done when its cycle ends (it finds the pod gone).
                _ => Step { op: "delete".into(), pod, ..Step::default() },
            }
        } else {
            continue;
        };
        let stamps = matches!(step.op.as_str(), "add" | "fail" | "error");
        if stamps && last_stamp == Some(ours.now) {
            let tick = Step { op: "advance".into(), ms: 1, ..Step::default() };
            ours.step(&tick).expect("advance runs");
            steps.push(tick);
        }
        if stamps {
            last_stamp = Some(ours.now);
        }
        match step.op.as_str() {
            "add" => live.push(step.pod.clone()),
            "delete" | "done" => live.retain(|p| *p != step.pod),
            _ => {}
        }
        ours.step(&step).expect("generated steps run");
        steps.push(step);
    }
    Script { pop_from_backoff_q, steps }
}

/// The first step at which the two traces differ, as text; `None` when they agree.
pub fn first_difference(script: &Script, ours: &[State], theirs: &[State]) -> Option<String> {
    let i = (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i))?;
    let show = |s: Option<&State>| s.map_or("(none)".to_string(), |s| serde_json::to_string(s).unwrap_or_default());
    let prefix = Script { pop_from_backoff_q: script.pop_from_backoff_q, steps: script.steps[..=i].to_vec() };
    Some(format!(
        "step {i} ({}): schedperf {} vs kube-scheduler {}\nreproduce with this prefix (schedperf-oracle queue < script):\n{}",
        serde_json::to_string(&script.steps[i]).unwrap_or_default(),
        show(ours.get(i)),
        show(theirs.get(i)),
        serde_json::to_string(&prefix).unwrap_or_default()
    ))
}

/// `schedperf verify --queue-random N`: N generated scripts run by both queues, step by step.
pub fn run(args: &VerifyArgs, n: u64) -> Result<i32, InputError> {
    let mut oracle = Oracle::start_cmd(&args.oracle, "queue", Duration::from_secs(args.oracle_timeout_s))
        .map_err(|e| InputError::new("--oracle", "", e.to_string()))?;
    let started = Instant::now();
    let (mut agree, mut diverged) = (0u64, 0u64);
    let mut steps_total = 0usize;
    for i in 0..n {
        let script = generate(args.seed, i);
        steps_total += script.steps.len();
        let ours = run_ours(&script).expect("generated scripts run on schedperf's queue");
        let request = serde_json::to_value(&script).expect("a script serializes");
        let theirs = match oracle.call(&request) {
            Ok(v) => v,
            Err(OracleError::Refused(e)) => serde_json::json!({ "error": e }),
            Err(e) => {
                eprintln!("verify: queue script {i} (seed {}): {e}", args.seed);
                println!("verify: {agree}/{n} queue scripts agree (stopped at script {i}: the oracle failed)");
                return Ok(crate::error::exit::FAILED.into());
            }
        };
        let refused = theirs.get("refused").and_then(Value::as_str);
        let diff = match theirs.get("states").cloned().map(serde_json::from_value::<Vec<State>>) {
            // Refused at step k: the first k states are compared; equal, the refusal is the difference.
            Some(Ok(states)) => {
                first_difference(&script, &ours[..states.len().min(ours.len())], &states).or_else(|| {
                    refused.map(|e| {
                        format!(
                            "kube-scheduler refused the script: {e}\n{}",
                            serde_json::to_string(&script).unwrap_or_default()
                        )
                    })
                })
            }
            Some(Err(e)) => Some(format!("the oracle's states do not parse: {e}")),
            None => Some(format!(
                "kube-scheduler refused the script: {}\n{}",
                theirs.get("error").and_then(Value::as_str).unwrap_or("?"),
                serde_json::to_string(&script).unwrap_or_default()
            )),
        };
        match diff {
            None => agree += 1,
            Some(d) => {
                diverged += 1;
                eprintln!(
                    "verify: queue script {i} (seed {}, popFromBackoffQ {}) diverges at {d}",
                    args.seed, script.pop_from_backoff_q
                );
                if args.max_divergences > 0 && diverged >= args.max_divergences {
                    println!(
                        "verify: {agree}/{n} queue scripts agree (stopped after {diverged} divergences at script {i})"
                    );
                    return Ok(crate::error::exit::FAILED.into());
                }
            }
        }
    }
    eprintln!("verify: {n} queue scripts, {steps_total} steps, {:.1} s", started.elapsed().as_secs_f64());
    println!("verify: {agree}/{n} queue scripts agree");
    use crate::error::exit;
    Ok(i32::from(if agree == n { exit::OK } else { exit::FAILED }))
}

#[cfg(test)]
mod tests;
