//! The asynchronous binder: a pool of worker threads runs the binding cycle (WaitOnPermit, PreBind,
//! Bind, PostBind) for many pods at once, with a bound on the pods in flight.
//!
//! Flow of one pod:
//! 1. The scheduling thread calls [`Binder::submit`] (or [`Binder::try_submit`], or
//!    [`Binder::submit_batch`] for several pods at once). Each pod takes one of `max_in_flight`
//!    tokens (an atomic count, [`Tokens`]: no message per pod); the call blocks only when none is left. A batch reaches a worker as one message, so a
//!    burst of assumed pods costs one worker wake-up instead of one per pod. No mutex is taken unless Permit said
//!    Wait: the pod is then parked in the waiting-pods map (upstream's `waitingPods`) without holding
//!    a worker, until [`Binder::allow`] hands it to the workers, [`Binder::reject`] fails it, or the
//!    permit timer thread fails it at its timeout (wall-clock time).
//! 2. A worker runs [`BindingCycle::pre_bind`] and [`BindingCycle::bind`] (for a run, the
//!    profile's PreBind and Bind plugins: [`FrameworkBinding`]), then `agent.bind`, and moves on: the agent's bind is
//!    asynchronous and reports its outcome as an event.
//! 3. Whoever reads the agent's events passes each to [`Binder::on_agent_event`] (or lets
//!    [`Binder::spawn_router`] do it). On `Bound` the binder calls `AssumeCache::finish_binding` (when
//!    given a cache) and [`BindingCycle::post_bind`]; on `BindFailed` (or a delete or eviction during
//!    the bind) the pod fails. Either way a [`BindResult`] goes out on the results channel and the
//!    pod's token is returned; [`Binder::end_binding`] does the same but gives the result back to
//!    its caller (the run's scheduling thread, which reads the events: no message to itself per pod).
//!
//! The binder owns the cache transitions that end a binding cycle, as upstream's binding goroutine
//! does: FinishBinding on success, ForgetPod on any failure (Permit, PreBind, Bind), on whichever
//! binder thread saw it, before the result goes out. A pod deleted meanwhile is Deleted in the cache
//! already (its delete released it): that refusal is expected; any other refused transition is kept
//! for [`Binder::take_cache_errors`]. The scheduling thread, which owns the snapshot, releases the
//! pod's node there when it reads the failed result, runs Unreserve and requeues the pod with
//! backoff (kube-scheduler's `handleBindingCycleError`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender};

use crate::agent::{AgentEvent, AgentEventKind, AgentPod, NodeAgent};
use crate::cache::{AssumeCache, PodState, TransitionError};
use crate::framework::{BindingPod, Framework};
use crate::ids::PodUid;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::{CachePadded, Condvar, Mutex};

/// Shards of the map of pods whose bind was sent to the agent.
const PENDING_SHARDS: usize = 16;

/// The in-flight bound: `max` tokens, taken one per pod submitted and given back as its binding
/// cycle ends. Taking and giving are one atomic operation each (a bounded channel of `()` cost a
/// message per pod each way); only a taker that finds none left takes the mutex and sleeps, and a
/// giver takes the mutex to wake it only while one sleeps.
struct Tokens {
    max: usize,
    taken: CachePadded<AtomicUsize>,
    /// Takers asleep (or about to sleep) on `room`.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    room: Condvar,
}

impl Tokens {
    fn new(max: usize) -> Self {
        Tokens {
            max,
            taken: CachePadded::new(AtomicUsize::new(0)),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            room: Condvar::new(),
        }
    }

    /// Takes a token if one is left.
    fn try_take(&self) -> bool {
        self.taken.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| (t < self.max).then_some(t + 1)).is_ok()
    }

    /// Takes a token, sleeping until one is given back when none is left.
    fn take(&self) {
        if self.try_take() {
            return;
        }
        let mut g = lock(&self.lock);
        // Counted before the retry: a giver that returns a token after it sees a sleeper and wakes
        // it (under the lock, so not before this thread waits); one that returned it before, this
        // retry sees (both sides are SeqCst).
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while !self.try_take() {
            g = self.room.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Gives a token back.
    fn give(&self) {
        self.taken.fetch_sub(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.lock);
            self.room.notify_all();
        }
    }

    fn taken(&self) -> usize {
        self.taken.load(Ordering::SeqCst)
    }
}

/// One pod to bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindJob {
    pub pod: AgentPod,
    /// Permit returned Wait with this timeout; `None` when every Permit plugin allowed the pod.
    pub permit_wait: Option<Duration>,
    /// The profile that scheduled the pod (whose binding plugins run).
    pub profile: usize,
}

impl BindJob {
    pub fn new(pod: AgentPod) -> Self {
        BindJob { pod, permit_wait: None, profile: 0 }
    }

    pub fn with_profile(mut self, profile: usize) -> Self {
        self.profile = profile;
        self
    }

    pub fn with_permit_wait(mut self, timeout: Duration) -> Self {
        self.permit_wait = Some(timeout);
        self
    }
}

/// The step of the binding cycle that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindStage {
    Permit,
    PreBind,
    Bind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindOutcome {
    Bound,
    Failed { stage: BindStage, reason: String },
}

/// The end of one pod's binding cycle, sent to the scheduling thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindResult {
    pub job: BindJob,
    pub outcome: BindOutcome,
}

/// The plugin hooks of the binding cycle. They run on binder threads (post_bind on the thread that
/// handles the agent's `Bound`).
pub trait BindingCycle: Send + Sync {
    /// PreBind plugins; an error fails the pod.
    fn pre_bind(&self, _job: &BindJob) -> Result<(), String> {
        Ok(())
    }

    /// Bind plugins; `Ok` when one took the pod (the binder then sends the bind to the agent), an
    /// error fails the pod.
    fn bind(&self, _job: &BindJob) -> Result<(), String> {
        Ok(())
    }

    /// PostBind plugins (informational).
    fn post_bind(&self, _job: &BindJob) {}
}

/// A binding cycle with no PreBind or PostBind plugins.
#[derive(Debug, Default)]
pub struct NoPlugins;

impl BindingCycle for NoPlugins {}

/// The binding cycle of the profiles' frameworks: a job's PreBind, Bind and PostBind plugins are
/// those of the profile it was scheduled by ([`BindJob::profile`]).
pub struct FrameworkBinding {
    frameworks: Vec<Arc<Framework>>,
}

impl FrameworkBinding {
    pub fn new(frameworks: Vec<Arc<Framework>>) -> Self {
        FrameworkBinding { frameworks }
    }

    fn framework(&self, job: &BindJob) -> &Framework {
        &self.frameworks[job.profile]
    }
}

/// The pod of `job` as the binding plugins see it.
pub fn binding_pod(job: &BindJob) -> BindingPod<'_> {
    BindingPod { uid: job.pod.uid, namespace: &job.pod.namespace, name: &job.pod.name, node: &job.pod.node }
}

impl BindingCycle for FrameworkBinding {
    fn pre_bind(&self, job: &BindJob) -> Result<(), String> {
        self.framework(job).run_pre_bind(&binding_pod(job)).map_err(|st| st.reasons.join(", "))
    }

    fn bind(&self, job: &BindJob) -> Result<(), String> {
        match self.framework(job).run_bind(&binding_pod(job)) {
            Ok(Some(_)) => Ok(()),
            // `schedule_one.go`'s bind(): a Skip from every plugin is an error.
            Ok(None) => Err("bind status: Skip".to_string()),
            Err(st) => Err(st.reasons.join(", ")),
        }
    }

    fn post_bind(&self, job: &BindJob) {
        self.framework(job).run_post_bind(&binding_pod(job));
    }
}

/// Counters of the binder, cache-padded (written by several threads).
#[derive(Debug, Default)]
pub struct BinderStats {
    pub bound: CachePadded<AtomicU64>,
    pub failed: CachePadded<AtomicU64>,
    pub permit_waits: CachePadded<AtomicU64>,
}

/// A pod parked on Permit.
struct Waiting {
    job: BindJob,
    /// When the pod started waiting (its deadline is this plus `job.permit_wait`).
    started: Instant,
    /// Tells this parking from an earlier one of the same pod in the timer's heap.
    seq: u64,
}

/// Pods parked on Permit and their deadlines. Guarded by one mutex, never taken for pods that Permit
/// allowed at once.
#[derive(Default)]
struct Permits {
    waiting: HashMap<PodUid, Waiting>,
    /// (deadline, seq, uid), earliest first; entries whose pod left `waiting` are stale.
    deadlines: BinaryHeap<Reverse<(Instant, u64, PodUid)>>,
    next_seq: u64,
    shut_down: bool,
}

struct Shared {
    agent: Arc<dyn NodeAgent>,
    cycle: Arc<dyn BindingCycle>,
    cache: Option<Arc<AssumeCache>>,
    results: Sender<BindResult>,
    /// The in-flight bound.
    tokens: Tokens,
    /// Pods whose bind went to the agent, waiting for its outcome event.
    pending: Vec<Mutex<AHashMap<PodUid, BindJob>>>,
    permits: Mutex<Permits>,
    /// Wakes the permit timer when an earlier deadline arrives or on shutdown.
    permit_wake: Condvar,
    stats: BinderStats,
    /// Cache transitions refused for another reason than a delete that came first.
    cache_errors: Mutex<Vec<TransitionError>>,
}

/// The binder pool. Dropping it stops the workers (binds already sent to the agent are abandoned).
pub struct Binder {
    shared: Arc<Shared>,
    /// Batches of pods for the workers.
    jobs: Option<Sender<Vec<BindJob>>>,
    max_in_flight: usize,
    workers: Vec<JoinHandle<()>>,
    permit_timer: Option<JoinHandle<()>>,
}

impl Binder {
    /// A binder with no PreBind/PostBind plugins and no cache.
    pub fn new(workers: usize, max_in_flight: usize, agent: Arc<dyn NodeAgent>, results: Sender<BindResult>) -> Self {
        Self::start(workers, max_in_flight, agent, Arc::new(NoPlugins), None, results)
    }

    /// Starts `workers` threads. `cache`, when given, gets `finish_binding` for every bound pod before
    /// its result is sent.
    pub fn start(
        workers: usize,
        max_in_flight: usize,
        agent: Arc<dyn NodeAgent>,
        cycle: Arc<dyn BindingCycle>,
        cache: Option<Arc<AssumeCache>>,
        results: Sender<BindResult>,
    ) -> Self {
        assert!(workers > 0 && max_in_flight > 0, "a binder needs workers and room for pods in flight");
        let shared = Arc::new(Shared {
            agent,
            cycle,
            cache,
            results,
            tokens: Tokens::new(max_in_flight),
            pending: (0..PENDING_SHARDS).map(|_| Mutex::new(AHashMap::new())).collect(),
            permits: Mutex::new(Permits::default()),
            permit_wake: Condvar::new(),
            stats: BinderStats::default(),
            cache_errors: Mutex::new(Vec::new()),
        });
        let (jobs, job_rx) = crossbeam_channel::unbounded::<Vec<BindJob>>();
        let workers = (0..workers)
            .map(|i| {
                let s = shared.clone();
                let rx = job_rx.clone();
                std::thread::Builder::new()
                    .name(format!("binder-{i}"))
                    .spawn(move || {
                        for batch in rx {
                            for job in batch {
                                s.run(job);
                            }
                        }
                    })
                    .expect("spawn binder worker")
            })
            .collect();
        let s = shared.clone();
        let permit_timer = std::thread::Builder::new()
            .name("binder-permit-timer".into())
            .spawn(move || s.permit_timer_loop())
            .expect("spawn permit timer");
        Binder { shared, jobs: Some(jobs), max_in_flight, workers, permit_timer: Some(permit_timer) }
    }

    fn to_workers(&self, batch: Vec<BindJob>) {
        self.jobs.as_ref().expect("binder running").send(batch).expect("binder workers alive");
    }

    fn enqueue(&self, job: BindJob) {
        let Some(timeout) = job.permit_wait else { return self.to_workers(vec![job]) };
        self.shared.stats.permit_waits.fetch_add(1, Ordering::Relaxed);
        let uid = job.pod.uid;
        let started = Instant::now();
        let deadline = started + timeout;
        let mut p = lock(&self.shared.permits);
        let seq = p.next_seq;
        p.next_seq += 1;
        let earliest = p.deadlines.peek().is_none_or(|Reverse((d, _, _))| deadline < *d);
        p.deadlines.push(Reverse((deadline, seq, uid)));
        let previous = p.waiting.insert(uid, Waiting { job, started, seq });
        assert!(previous.is_none(), "{uid} is already waiting on Permit");
        if earliest {
            self.shared.permit_wake.notify_one();
        }
    }

    /// Hands a pod to the workers; blocks while `max_in_flight` pods are in flight.
    pub fn submit(&self, job: BindJob) {
        self.shared.tokens.take();
        self.enqueue(job);
    }

    /// Hands several pods to the workers as one message (pods waiting on Permit are parked one by
    /// one); blocks while `max_in_flight` pods are in flight, as [`submit`](Self::submit) does.
    pub fn submit_batch(&self, jobs: Vec<BindJob>) {
        for _ in 0..jobs.len() {
            self.shared.tokens.take();
        }
        if jobs.iter().all(|j| j.permit_wait.is_none()) {
            if !jobs.is_empty() {
                self.to_workers(jobs);
            }
            return;
        }
        let (waiting, allowed): (Vec<BindJob>, Vec<BindJob>) = jobs.into_iter().partition(|j| j.permit_wait.is_some());
        for job in waiting {
            self.enqueue(job);
        }
        if !allowed.is_empty() {
            self.to_workers(allowed);
        }
    }

    /// Like [`submit`](Self::submit) but gives the job back instead of blocking when the bound is reached.
    // The job comes back by value: boxing it would allocate on the scheduling thread's path.
    #[allow(clippy::result_large_err)]
    pub fn try_submit(&self, job: BindJob) -> Result<(), BindJob> {
        if self.shared.tokens.try_take() {
            self.enqueue(job);
            Ok(())
        } else {
            Err(job)
        }
    }

    /// Pods submitted whose binding cycle has not ended.
    pub fn in_flight(&self) -> usize {
        self.shared.tokens.taken()
    }

    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    pub fn stats(&self) -> &BinderStats {
        &self.shared.stats
    }

    /// Releases a pod waiting on Permit to the workers. Returns false if it was not waiting.
    pub fn allow(&self, uid: PodUid) -> bool {
        let Some(w) = lock(&self.shared.permits).waiting.remove(&uid) else { return false };
        self.to_workers(vec![w.job]);
        true
    }

    /// Gives a pod waiting on Permit a new timeout, from the start of its wait (a Permit plugin
    /// whose timeout was the shortest allowed it; others still wait). Returns false if it was not
    /// waiting.
    pub fn extend_permit(&self, uid: PodUid, timeout: Duration) -> bool {
        let mut p = lock(&self.shared.permits);
        let seq = p.next_seq;
        let Some(w) = p.waiting.get_mut(&uid) else { return false };
        w.seq = seq;
        w.job.permit_wait = Some(timeout);
        let deadline = w.started + timeout;
        p.next_seq += 1;
        // The old deadline's heap entry is stale now (another seq); the timer skips it.
        p.deadlines.push(Reverse((deadline, seq, uid)));
        self.shared.permit_wake.notify_one();
        true
    }

    /// Rejects a pod waiting on Permit: its binding cycle fails. Returns false if it was not waiting.
    pub fn reject(&self, uid: PodUid, reason: &str) -> bool {
        let Some(w) = lock(&self.shared.permits).waiting.remove(&uid) else { return false };
        self.shared.fail(w.job, BindStage::Permit, reason.to_string());
        true
    }

    /// Takes the cache transitions the binder saw refused (other than for a pod deleted first): each
    /// is an inconsistency to report.
    pub fn take_cache_errors(&self) -> Vec<TransitionError> {
        std::mem::take(&mut *lock(&self.shared.cache_errors))
    }

    /// Pods parked on Permit.
    pub fn waiting_on_permit(&self) -> usize {
        lock(&self.shared.permits).waiting.len()
    }

    /// Feeds one agent event. Returns true if it ended the binding cycle of a pod in flight; that
    /// pod's [`BindResult`] goes out on the results channel.
    pub fn on_agent_event(&self, event: &AgentEvent) -> bool {
        match self.shared.end_binding(event) {
            Some(r) => {
                // A closed results channel means the run is over.
                let _ = self.shared.results.send(r);
                true
            }
            None => false,
        }
    }

    /// [`on_agent_event`](Self::on_agent_event) for a reader that handles the result itself: the
    /// binding cycle the event ended (FinishBinding or Forget in the cache, PostBind, the token
    /// returned) is given back instead of being sent on the results channel, so the scheduling
    /// thread, which reads the agent's events, does not send a message to itself per pod.
    pub fn end_binding(&self, event: &AgentEvent) -> Option<BindResult> {
        self.shared.end_binding(event)
    }

    /// Starts a thread that passes every event from `events` to [`on_agent_event`](Self::on_agent_event)
    /// and then forwards it on `forward`. The thread ends when `events` closes.
    pub fn spawn_router(self: &Arc<Self>, events: Receiver<AgentEvent>, forward: Sender<AgentEvent>) -> JoinHandle<()> {
        let binder = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("binder-router".into())
            .spawn(move || {
                for e in events {
                    if let Some(b) = binder.upgrade() {
                        b.on_agent_event(&e);
                    }
                    if forward.send(e).is_err() {
                        return;
                    }
                }
            })
            .expect("spawn binder router")
    }
}

impl Drop for Binder {
    fn drop(&mut self) {
        self.jobs = None;
        lock(&self.shared.permits).shut_down = true;
        self.shared.permit_wake.notify_all();
        for w in self.workers.drain(..).chain(self.permit_timer.take()) {
            // A worker that panicked already reported it; the binder is going away.
            let _ = w.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn shard(&self, uid: PodUid) -> &Mutex<AHashMap<PodUid, BindJob>> {
        &self.pending[(uid.0 as usize) % PENDING_SHARDS]
    }

    /// Ends a binding cycle: counts it, returns the pod's token, and gives its result back.
    fn settle(&self, job: BindJob, outcome: BindOutcome) -> BindResult {
        let counter = if outcome == BindOutcome::Bound { &self.stats.bound } else { &self.stats.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        self.tokens.give();
        BindResult { job, outcome }
    }

    /// Keeps a refused cache transition, unless the pod was deleted first (expected: the delete
    /// released it).
    fn note_cache(&self, r: Result<(), TransitionError>) {
        if let Err(e) = r {
            if e.found != PodState::Deleted {
                lock(&self.cache_errors).push(e);
            }
        }
    }

    /// The binding cycle failed: forget the assume (upstream's ForgetPod), then report.
    fn fail(&self, job: BindJob, stage: BindStage, reason: String) {
        let r = self.failed(job, stage, reason);
        // A closed results channel means the run is over.
        let _ = self.results.send(r);
    }

    /// [`fail`](Self::fail) with the result given back instead of sent.
    fn failed(&self, job: BindJob, stage: BindStage, reason: String) -> BindResult {
        if let Some(c) = &self.cache {
            self.note_cache(c.forget(job.pod.uid).map(|_| ()));
        }
        self.settle(job, BindOutcome::Failed { stage, reason })
    }

    /// Fails every parked pod whose deadline has passed; sleeps until the next deadline.
    fn permit_timer_loop(&self) {
        let mut p = lock(&self.permits);
        loop {
            if p.shut_down {
                return;
            }
            let now = Instant::now();
            while let Some(&Reverse((deadline, seq, uid))) = p.deadlines.peek() {
                if deadline > now {
                    break;
                }
                p.deadlines.pop();
                if p.waiting.get(&uid).is_some_and(|w| w.seq == seq) {
                    let w = p.waiting.remove(&uid).expect("checked");
                    let timeout = w.job.permit_wait.unwrap_or_default();
                    let reason = format!("rejected due to timeout after waiting {timeout:?} at permit");
                    self.fail(w.job, BindStage::Permit, reason);
                }
            }
            p = match p.deadlines.peek().map(|Reverse((d, _, _))| *d) {
                None => self.permit_wake.wait(p).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let wait = d.saturating_duration_since(Instant::now());
                    self.permit_wake.wait_timeout(p, wait).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }

    fn run(&self, job: BindJob) {
        if let Err(reason) = self.cycle.pre_bind(&job) {
            return self.fail(job, BindStage::PreBind, reason);
        }
        if let Err(reason) = self.cycle.bind(&job) {
            return self.fail(job, BindStage::Bind, reason);
        }
        let pod = job.pod.clone();
        // Registered before the bind: a zero-latency agent reports the outcome inline.
        lock(self.shard(pod.uid)).insert(pod.uid, job);
        self.agent.bind(pod);
    }

    /// The binding cycle `e` ends, if it ends one of a pod in flight: its result, not yet sent.
    fn end_binding(&self, e: &AgentEvent) -> Option<BindResult> {
        let ends = matches!(
            e.kind,
            AgentEventKind::Bound
                | AgentEventKind::BindFailed(_)
                | AgentEventKind::Deleted
                | AgentEventKind::Evicted(_)
        );
        if !ends {
            return None;
        }
        let job = lock(self.shard(e.uid)).remove(&e.uid)?;
        Some(match &e.kind {
            AgentEventKind::Bound => match self.cache.as_ref().map(|c| c.finish_binding(e.uid)) {
                // Deleted while binding: the delete released the node; the cycle failed.
                Some(Err(err)) => {
                    self.note_cache(Err(err));
                    self.settle(job, BindOutcome::Failed { stage: BindStage::Bind, reason: err.to_string() })
                }
                _ => {
                    self.cycle.post_bind(&job);
                    self.settle(job, BindOutcome::Bound)
                }
            },
            AgentEventKind::BindFailed(reason) => self.failed(job, BindStage::Bind, reason.clone()),
            AgentEventKind::Deleted => self.failed(job, BindStage::Bind, "the pod was deleted while binding".into()),
            AgentEventKind::Evicted(reason) => self.failed(job, BindStage::Bind, reason.clone()),
            _ => unreachable!("filtered above"),
        })
    }
}

#[cfg(test)]
mod tests;
