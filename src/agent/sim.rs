//! The simulated node agent, in the style of KWOK stages: each step of a pod's life (bind, start,
//! delete) takes a delay plus a seeded jitter, binds and starts fail with configured probabilities,
//! and nodes fail and have their pods evicted.
//!
//! Randomness is drawn per pod from a ChaCha8 stream keyed by (seed, pod uid, bind attempt), so a pod's
//! delays and failures do not depend on the order in which binder threads call the agent.
//!
//! Time: the agent keeps one heap of due events.
//! - [`TimeMode::Virtual`]: nothing moves until the driver calls [`NodeAgent::advance_to`]; the driver
//!   finds the next event with [`NodeAgent::next_due_nanos`] and jumps its `VirtualClock` there.
//! - [`TimeMode::Wall`]: one timer thread waits on a condvar for the earliest due event and emits it
//!   (never one thread per pod).
//! - Events due at once (zero latency) are emitted inline by the call that caused them, in both modes.
//!
//! A pod is held (listed by [`NodeAgent::pods`]) from `bind` until its `BindFailed`, `Deleted` or
//! `Evicted`. Deleting a pod whose bind is still pending cancels the bind: the pod gets `Deleted` and
//! never `Bound`. A failed node's bound pods get `Evicted`, its binding pods `BindFailed`; the node is
//! usable again at once (a controller would recreate the pods elsewhere or there).

mod config;
pub mod kwok;

pub use config::{NodeFailure, SimConfig, SimOverrides, Stage};

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use ahash::AHashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::Sender;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{AgentError, AgentEvent, AgentEventKind, AgentPod, NodeAgent, PodUid, ShutdownReport};
use crate::clock::Clock;
use crate::sync::{Condvar, Mutex, MutexGuard};

/// How the agent's time moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeMode {
    Wall,
    Virtual,
}

/// Salts that separate the random streams of the different draws.
const DELETE_SALT: u64 = 0x5d1e_7e00_0000_0001;
const NODE_FAILURE_SALT: u64 = 0x0de0_fa11_0000_0002;
const KWOK_SALT: u64 = 0x6b77_6f6b_0000_0003;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Binding,
    Bound,
    Started,
    Deleting,
}

struct PodRec {
    node: Arc<str>,
    phase: Phase,
    /// Bumped when pending events of the pod are cancelled (a delete).
    generation: u32,
    /// Drawn at bind time: start delay and whether the start fails.
    start_after_nanos: u64,
    start_fails: bool,
    /// With KWOK stages: what their selectors see, and how many stages were chosen so far (keys
    /// the random stream of each choice).
    view: Option<Box<kwok::PodView>>,
    kwok_steps: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    BindDone {
        fail: bool,
    },
    Start,
    DeleteDone,
    /// Apply KWOK stage `config.kwok_stages[i]`.
    Kwok(usize),
    /// `None`: a random node among those holding pods.
    NodeFailure(Option<String>),
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at_nanos: u64,
    seq: u64,
    uid: PodUid,
    generation: u32,
    action: Action,
}

struct State {
    /// Iterated only where the order cannot show (sorted or counted after), so a fast hasher.
    pods: AHashMap<PodUid, PodRec>,
    /// Bind attempts per pod, to key the random stream of each attempt.
    bind_attempts: AHashMap<PodUid, u32>,
    heap: BinaryHeap<Reverse<Due>>,
    next_seq: u64,
    shut_down: bool,
    random_failure_pending: bool,
    failure_rng: ChaCha8Rng,
}

struct Shared {
    config: SimConfig,
    events: Sender<AgentEvent>,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Wakes the wall-clock timer thread when an earlier event is scheduled or on shutdown.
    wake: Condvar,
}

/// The simulated agent. See the module docs.
pub struct SimAgent {
    shared: Arc<Shared>,
    timer: Mutex<Option<JoinHandle<()>>>,
}

fn draw_nanos(stage: Stage, rng: &mut ChaCha8Rng) -> u64 {
    let jitter = if stage.jitter_us == 0 { 0 } else { rng.gen_range(0..=stage.jitter_us) };
    (stage.delay_us + jitter) * 1000
}

fn pod_rng(seed: u64, uid: PodUid, attempt: u32) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(uid.0);
    // Each attempt draws at most a handful of words; 256 words apart keeps attempts disjoint.
    rng.set_word_pos(attempt as u128 * 256);
    rng
}

impl SimAgent {
    /// Creates the agent; in [`TimeMode::Wall`] it starts the timer thread.
    pub fn new(config: SimConfig, events: Sender<AgentEvent>, clock: Arc<dyn Clock>, mode: TimeMode) -> Self {
        let mut failure_rng = ChaCha8Rng::seed_from_u64(config.seed ^ NODE_FAILURE_SALT);
        failure_rng.set_stream(u64::MAX);
        let mut state = State {
            pods: AHashMap::new(),
            bind_attempts: AHashMap::new(),
            heap: BinaryHeap::new(),
            next_seq: 0,
            shut_down: false,
            random_failure_pending: false,
            failure_rng,
        };
        for nf in &config.node_failures {
            push(&mut state, nf.at_us * 1000, PodUid(u64::MAX), 0, Action::NodeFailure(Some(nf.node.clone())));
        }
        let shared = Arc::new(Shared { config, events, clock, state: Mutex::new(state), wake: Condvar::new() });
        let timer = (mode == TimeMode::Wall).then(|| {
            let s = shared.clone();
            std::thread::Builder::new()
                .name("sim-agent-timer".into())
                .spawn(move || s.timer_loop())
                .expect("spawn timer")
        });
        SimAgent { shared, timer: Mutex::new(timer) }
    }

    pub fn config(&self) -> &SimConfig {
        &self.shared.config
    }

    /// Fails `node` now: its bound pods are evicted, its binding pods fail to bind.
    pub fn fail_node(&self, node: &str) {
        let now = self.shared.clock.now_nanos();
        let mut st = self.shared.lock();
        push(&mut st, now, PodUid(u64::MAX), 0, Action::NodeFailure(Some(node.to_string())));
        self.shared.fire_due(&mut st, now);
    }

    fn stop_timer(&self) {
        {
            let mut st = self.shared.lock();
            st.shut_down = true;
        }
        self.shared.wake.notify_all();
        let handle = self.timer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            // The timer thread only exits its loop; a panic there is already reported.
            let _ = h.join();
        }
    }
}

fn push(st: &mut State, at_nanos: u64, uid: PodUid, generation: u32, action: Action) {
    let seq = st.next_seq;
    st.next_seq += 1;
    st.heap.push(Reverse(Due { at_nanos, seq, uid, generation, action }));
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn emit(&self, uid: PodUid, kind: AgentEventKind, at_nanos: u64) {
        // A closed channel means the run is over; the event has no reader.
        let _ = self.events.send(AgentEvent { uid, kind, at_nanos });
    }

    /// Schedules `action` at `at_nanos` and wakes the timer if it became the earliest future event.
    /// An action due at `now` is left to the caller, which fires what is due before it returns: waking
    /// the timer thread for it would cost a context switch per pod with a zero-latency stage.
    fn schedule(&self, st: &mut State, now: u64, at_nanos: u64, uid: PodUid, generation: u32, action: Action) {
        let earliest = st.heap.peek().is_none_or(|Reverse(d)| at_nanos < d.at_nanos);
        push(st, at_nanos, uid, generation, action);
        if earliest && at_nanos > now {
            self.wake.notify_one();
        }
    }

    /// Emits every event due at or before `t_nanos`, in (time, sequence) order.
    fn fire_due(&self, st: &mut State, t_nanos: u64) {
        while st.heap.peek().is_some_and(|Reverse(d)| d.at_nanos <= t_nanos) {
            let Reverse(due) = st.heap.pop().expect("peeked");
            self.fire(st, due);
        }
    }

    fn fire(&self, st: &mut State, due: Due) {
        let at = due.at_nanos;
        let uid = due.uid;
        if let Action::NodeFailure(node) = due.action {
            self.fail_node(st, node, at);
            return;
        }
        let Some(rec) = st.pods.get_mut(&uid) else { return };
        if rec.generation != due.generation {
            return;
        }
        match due.action {
            Action::BindDone { fail: true } => {
                st.pods.remove(&uid);
                self.emit(uid, AgentEventKind::BindFailed("simulated bind failure".into()), at);
            }
            Action::BindDone { fail: false } => {
                rec.phase = Phase::Bound;
                let (after, generation) = (rec.start_after_nanos, rec.generation);
                self.emit(uid, AgentEventKind::Bound, at);
                if rec.view.is_some() {
                    self.kwok_next(st, uid, at);
                    return;
                }
                if after == 0 {
                    let rec = st.pods.get_mut(&uid).expect("held");
                    self.start(uid, rec, at);
                } else {
                    self.schedule(st, at, at + after, uid, generation, Action::Start);
                }
            }
            Action::Start => self.start(uid, rec, at),
            Action::DeleteDone => {
                st.pods.remove(&uid);
                self.emit(uid, AgentEventKind::Deleted, at);
            }
            Action::Kwok(i) => self.kwok_apply(st, uid, i, at),
            Action::NodeFailure(_) => unreachable!("handled above"),
        }
    }

    /// Chooses the KWOK stage that applies to pod `uid` now, if any, and schedules it.
    fn kwok_next(&self, st: &mut State, uid: PodUid, now: u64) {
        let Some(rec) = st.pods.get_mut(&uid) else { return };
        let Some(view) = rec.view.as_deref() else { return };
        let matching: Vec<(usize, &kwok::KwokStage)> =
            self.config.kwok_stages.iter().enumerate().filter(|(_, s)| view.matches(s)).collect();
        let mut rng = pod_rng(self.config.seed ^ KWOK_SALT, uid, rec.kwok_steps);
        let mut pick = |n: u64| if n == 0 { 0 } else { rng.gen_range(0..n) };
        let stages: Vec<&kwok::KwokStage> = matching.iter().map(|(_, s)| *s).collect();
        let Some(chosen) = kwok::choose(&stages, &mut pick) else { return };
        let index = matching.iter().find(|(_, s)| std::ptr::eq(*s, chosen)).map(|(i, _)| *i).expect("chosen matches");
        let after_nanos = kwok::delay_ms(chosen, &mut pick) * 1_000_000;
        rec.kwok_steps += 1;
        let generation = rec.generation;
        self.schedule(st, now, now + after_nanos, uid, generation, Action::Kwok(index));
    }

    /// Applies KWOK stage `i` to pod `uid`: its phase, its pod IP, or its deletion; then the next.
    fn kwok_apply(&self, st: &mut State, uid: PodUid, i: usize, at: u64) {
        let stage = &self.config.kwok_stages[i];
        if stage.next_delete {
            st.pods.remove(&uid);
            self.emit(uid, AgentEventKind::Deleted, at);
            return;
        }
        let Some(rec) = st.pods.get_mut(&uid) else { return };
        let Some(view) = rec.view.as_deref_mut() else { return };
        let before = view.clone();
        if stage.next_pod_ip {
            view.pod_ip = true;
        }
        if let Some(phase) = &stage.next_phase {
            view.phase = phase.clone();
        }
        let changed = *view != before;
        let phase = view.phase.clone();
        if phase != before.phase {
            match phase.as_str() {
                "Running" if rec.phase == Phase::Bound => {
                    rec.phase = Phase::Started;
                    self.emit(uid, AgentEventKind::SandboxReady, at);
                    self.emit(uid, AgentEventKind::ContainersStarted, at);
                    self.emit(uid, AgentEventKind::Running, at);
                }
                "Failed" => {
                    self.emit(uid, AgentEventKind::Failed(format!("KWOK stage {} set phase Failed", stage.name)), at)
                }
                _ => {}
            }
        }
        // A stage that changes nothing would match again at once: KWOK would loop; we stop.
        if changed {
            self.kwok_next(st, uid, at);
        }
    }

    fn start(&self, uid: PodUid, rec: &mut PodRec, at: u64) {
        rec.phase = Phase::Started;
        self.emit(uid, AgentEventKind::SandboxReady, at);
        if rec.start_fails {
            self.emit(uid, AgentEventKind::Failed("simulated container failure".into()), at);
        } else {
            self.emit(uid, AgentEventKind::ContainersStarted, at);
            self.emit(uid, AgentEventKind::Running, at);
        }
    }

    fn fail_node(&self, st: &mut State, node: Option<String>, at: u64) {
        let random = node.is_none();
        let node = match node {
            Some(n) => Some(n),
            None => {
                st.random_failure_pending = false;
                let mut nodes: Vec<&Arc<str>> = st.pods.values().map(|r| &r.node).collect();
                nodes.sort();
                nodes.dedup();
                if nodes.is_empty() {
                    None
                } else {
                    let i = st.failure_rng.gen_range(0..nodes.len());
                    Some(nodes[i].to_string())
                }
            }
        };
        if let Some(node) = node {
            let victims: BTreeMap<PodUid, Phase> = st
                .pods
                .iter()
                .filter(|(_, r)| *r.node == *node && r.phase != Phase::Deleting)
                .map(|(u, r)| (*u, r.phase))
                .collect();
            for (uid, phase) in victims {
                st.pods.remove(&uid);
                let reason = format!("node {node} failed");
                let kind = if phase == Phase::Binding {
                    AgentEventKind::BindFailed(reason)
                } else {
                    AgentEventKind::Evicted(reason)
                };
                self.emit(uid, kind, at);
            }
        }
        if random && !st.pods.is_empty() {
            self.schedule_random_failure(st, at);
        }
    }

    fn schedule_random_failure(&self, st: &mut State, now: u64) {
        let mean_us = self.config.node_failure_interval_us;
        if mean_us == 0 || st.random_failure_pending {
            return;
        }
        let u: f64 = st.failure_rng.gen_range(f64::EPSILON..1.0);
        let after_nanos = (-u.ln() * mean_us as f64 * 1000.0) as u64;
        st.random_failure_pending = true;
        self.schedule(st, now, now + after_nanos.max(1), PodUid(u64::MAX), 0, Action::NodeFailure(None));
    }

    fn timer_loop(&self) {
        let mut st = self.lock();
        loop {
            if st.shut_down {
                return;
            }
            let now = self.clock.now_nanos();
            self.fire_due(&mut st, now);
            st = match st.heap.peek().map(|Reverse(d)| d.at_nanos) {
                None => self.wake.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(at) => {
                    let wait = Duration::from_nanos(at.saturating_sub(now));
                    self.wake.wait_timeout(st, wait).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }
}

impl NodeAgent for SimAgent {
    fn name(&self) -> &str {
        "sim"
    }

    fn bind(&self, pod: AgentPod) {
        let s = &self.shared;
        let now = s.clock.now_nanos();
        let mut st = s.lock();
        let uid = pod.uid;
        if st.shut_down {
            s.emit(uid, AgentEventKind::BindFailed("the agent was shut down".into()), now);
            return;
        }
        if st.pods.contains_key(&uid) {
            s.emit(uid, AgentEventKind::BindFailed(format!("{uid} is already bound")), now);
            return;
        }
        let attempt = st.bind_attempts.entry(uid).or_insert(0);
        let this_attempt = *attempt;
        *attempt += 1;
        let c = &s.config;
        // The pod's random stream is set up only when something is drawn from it (a jitter or a
        // failure rate): the draws, and so the run, are the same either way.
        let (bind_after, bind_fails, start_after_nanos, start_fails) = if c.bind.jitter_us == 0
            && c.start.jitter_us == 0
            && c.bind_failure_rate <= 0.0
            && c.start_failure_rate <= 0.0
        {
            (c.bind.delay_us * 1000, false, c.start.delay_us * 1000, false)
        } else {
            let mut rng = pod_rng(c.seed, uid, this_attempt);
            let bind_after = draw_nanos(c.bind, &mut rng);
            let bind_fails = c.bind_failure_rate > 0.0 && rng.gen_bool(c.bind_failure_rate);
            let start_after_nanos = draw_nanos(c.start, &mut rng);
            let start_fails = c.start_failure_rate > 0.0 && rng.gen_bool(c.start_failure_rate);
            (bind_after, bind_fails, start_after_nanos, start_fails)
        };
        let generation = 0;
        let view = (!s.config.kwok_stages.is_empty()).then(|| {
            Box::new(kwok::PodView {
                name: pod.name.to_string(),
                namespace: pod.namespace.to_string(),
                node: pod.node.to_string(),
                labels: (*pod.labels).clone(),
                host_network: pod.host_network,
                deleting: false,
                phase: "Pending".to_string(),
                pod_ip: false,
            })
        });
        st.pods.insert(
            uid,
            PodRec {
                node: pod.node,
                phase: Phase::Binding,
                generation,
                start_after_nanos,
                start_fails,
                view,
                kwok_steps: 0,
            },
        );
        s.schedule(&mut st, now, now + bind_after, uid, generation, Action::BindDone { fail: bind_fails });
        s.schedule_random_failure(&mut st, now);
        s.fire_due(&mut st, now);
    }

    fn delete(&self, uid: PodUid) {
        let s = &self.shared;
        let now = s.clock.now_nanos();
        let mut st = s.lock();
        let Some(rec) = st.pods.get_mut(&uid) else {
            s.emit(uid, AgentEventKind::Deleted, now);
            return;
        };
        if rec.phase == Phase::Deleting {
            return;
        }
        rec.phase = Phase::Deleting;
        rec.generation += 1;
        if let Some(view) = rec.view.as_deref_mut() {
            // KWOK: the pod gets a deletionTimestamp; a stage (pod-delete) removes it.
            view.deleting = true;
            s.kwok_next(&mut st, uid, now);
            s.fire_due(&mut st, now);
            return;
        }
        let generation = rec.generation;
        let attempt = st.bind_attempts.get(&uid).copied().unwrap_or(0);
        let mut rng = pod_rng(s.config.seed ^ DELETE_SALT, uid, attempt);
        let after = draw_nanos(s.config.delete, &mut rng);
        s.schedule(&mut st, now, now + after, uid, generation, Action::DeleteDone);
        s.fire_due(&mut st, now);
    }

    fn pods(&self) -> Vec<(PodUid, String)> {
        let st = self.shared.lock();
        let mut v: Vec<(PodUid, String)> = st.pods.iter().map(|(u, r)| (*u, r.node.to_string())).collect();
        v.sort();
        v
    }

    fn shutdown(&self) -> Result<ShutdownReport, AgentError> {
        let pods_removed = {
            let mut st = self.shared.lock();
            let n = st.pods.len();
            st.pods.clear();
            st.heap.clear();
            n
        };
        self.stop_timer();
        Ok(ShutdownReport { pods_removed, leftovers: Vec::new() })
    }

    fn next_due_nanos(&self) -> Option<u64> {
        self.shared.lock().heap.peek().map(|Reverse(d)| d.at_nanos)
    }

    fn advance_to(&self, t_nanos: u64) {
        let mut st = self.shared.lock();
        self.shared.fire_due(&mut st, t_nanos);
    }
}

impl Drop for SimAgent {
    fn drop(&mut self) {
        self.stop_timer();
    }
}

#[cfg(test)]
mod tests;
