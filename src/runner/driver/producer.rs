//! Pods of a `createPods` op built on a producer thread, as upstream's `createPods` client creates
//! pods concurrently with the scheduler.
//!
//! The producer does the per-pod work that needs nothing the scheduling thread owns: the generated
//! name, the clone of the compiled template, the `signature` label's slot and the pod's allocation.
//! It runs ahead by at most [`PRODUCER_CHUNKS_AHEAD`] chunks of [`PRODUCED_CHUNK_PODS`] pods. The
//! scheduling thread still *admits* every pod itself ([`Driver::admit_pod`]: uid, the label's
//! interned value, profile, window, PreEnqueue, record, queue insert) at exactly the points of the
//! op where it created it before, taking the produced pods in order and waiting when the producer is
//! behind: where a pod enters the queue relative to the cycles never depends on thread timing.
//!
//! The producer guesses each pod's generated name from the pods created before the op; a pod
//! created in between by someone else (a controller recreating an evicted pod) shifts the count, and
//! the scheduling thread then names the pod itself ([`Driver::create_produced_pod`]), so names are
//! those of the in-thread path in every case. Virtual time keeps the in-thread path (a run that
//! must replay gains nothing from a second thread).

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use crate::api;
use crate::error::InputError;
use crate::ids::PodUid;
use crate::snapshot::{PodInfo, Sym};

use super::cluster_ops::pod_name;
use super::Driver;

/// Pods the producer sends at once: one channel message (and at most one wake-up) per chunk, not per
/// pod. The same size as the op's creation chunks, so the scheduling thread waits at most once per
/// chunk of the op.
const PRODUCED_CHUNK_PODS: u64 = 64;
/// How many chunks the producer may be ahead of the scheduling thread: 16 x 64 = 1,024 pods built
/// and not yet admitted at most (~1 KiB each), ~5 ms of cycles at ~5 us a pod: longer than a time
/// slice the producer may lose to other processes on a loaded machine, so the scheduling thread
/// seldom waits for it (a wait is a sleep and a wake-up).
const PRODUCER_CHUNKS_AHEAD: usize = 16;
/// The fewest pods an op needs for a producer thread: a thread's start and join (~30-60 us) cost
/// about as much as building ~100 pods on the scheduling thread, so smaller ops build in-thread.
/// The unit tests take the producer for every op of two pods or more, so the driver's tests run
/// both paths (the integration tests and `run` the in-thread one below 1,024).
const PRODUCER_MIN_PODS: u64 = if cfg!(test) { 2 } else { 1_024 };

/// The receiving end of a running producer, owned by the `createPods` op that started it.
pub(super) struct Producer {
    rx: Option<Receiver<Vec<Arc<PodInfo>>>>,
    thread: Option<JoinHandle<()>>,
    /// The chunk being taken from, in order.
    chunk: std::vec::IntoIter<Arc<PodInfo>>,
    /// The value of `Driver::pods_created` the next produced pod's name was made for.
    next_created: u64,
    /// The template's compiled start time is the uid (no start time in the template).
    start_from_uid: bool,
}

impl Producer {
    /// The next produced pod, waiting for the producer when it is behind.
    fn next(&mut self) -> Arc<PodInfo> {
        loop {
            if let Some(p) = self.chunk.next() {
                return p;
            }
            let rx = self.rx.as_ref().expect("a producer is taken from only while running");
            let chunk = rx.recv().expect("the producer builds every pod of its op before it ends");
            self.chunk = chunk.into_iter();
        }
    }
}

impl Drop for Producer {
    /// Stops the producer (an op that ended early: its next send fails) and waits for it.
    fn drop(&mut self) {
        drop(self.rx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Pod `j` of a producer's op: a clone of `base` named for `created` pods before it, with a slot for
/// the `signature` label (key `label_key`) whose value the scheduling thread fills in.
fn produce_pod(base: &PodInfo, meta: &api::ObjectMeta, created: u64, label_key: Option<Sym>) -> Arc<PodInfo> {
    let mut info = base.clone();
    info.name = pod_name(meta, created);
    if let Some(key) = label_key {
        if let Err(i) = info.labels.binary_search_by_key(&key, |(k, _)| *k) {
            info.labels.insert(i, (key, Sym::NONE));
        }
    }
    Arc::new(info)
}

/// Sets the `signature` label (`key`, `value`) of a pod whose slot [`produce_pod`] made.
fn set_label(info: &mut PodInfo, (key, value): (Sym, Sym)) {
    match info.labels.binary_search_by_key(&key, |(k, _)| *k) {
        Ok(i) => info.labels[i].1 = value,
        Err(i) => info.labels.insert(i, (key, value)),
    }
}

impl Driver {
    /// Starts a producer for the `count` pods a `createPods` op makes from the static `template` in
    /// `namespace`, or `None` when the op builds its pods in-thread (virtual time, fewer than
    /// [`PRODUCER_MIN_PODS`] pods, or a template that does not compile: the in-thread path reports
    /// that error at its pod). `first_signature`: the interned `signature` label of the op's first
    /// pod, interned by the caller before the template is compiled here, as the in-thread path
    /// interns them (the interner's order decides every `Sym`).
    pub(super) fn start_producer(
        &mut self,
        template: &Arc<api::Pod>,
        namespace: &str,
        file: &str,
        count: u64,
        first_signature: Option<(Sym, Sym)>,
    ) -> Option<Producer> {
        if self.vclock.is_some() || count < PRODUCER_MIN_PODS {
            return None;
        }
        // The compiled template, compiled now (if new) with the first pod's name and uid, as the
        // in-thread path would compile it at the first pod.
        let name = pod_name(&template.metadata, self.pods_created);
        let uid = PodUid(self.uids.issued() + 1);
        let entry = self.compiled_template(template, namespace, &name, uid, file).ok()?;
        let base = entry.info.clone();
        let start_from_uid = entry.start_from_uid;
        let meta = api::ObjectMeta {
            name: template.metadata.name.clone(),
            generate_name: template.metadata.generate_name.clone(),
            ..api::ObjectMeta::default()
        };
        let label_key = first_signature.map(|(k, _)| k);
        let first_created = self.pods_created;
        let (tx, rx) = crossbeam_channel::bounded(PRODUCER_CHUNKS_AHEAD);
        let thread = std::thread::Builder::new()
            .name("pod-producer".into())
            .spawn(move || {
                let mut j = 0;
                while j < count {
                    let n = PRODUCED_CHUNK_PODS.min(count - j);
                    let chunk = (j..j + n).map(|k| produce_pod(&base, &meta, first_created + k, label_key)).collect();
                    if tx.send(chunk).is_err() {
                        return;
                    }
                    j += n;
                }
            })
            .ok()?;
        Some(Producer {
            rx: Some(rx),
            thread: Some(thread),
            chunk: Vec::new().into_iter(),
            next_created: first_created,
            start_from_uid,
        })
    }

    /// [`create_pod_at`](Self::create_pod_at) for the next pod of `producer`'s op, made from
    /// `template` (the producer's): the pod's uid, its label's value and, when another pod was
    /// created since the producer named it, its name, then [`admit_pod`](Self::admit_pod).
    pub(super) fn create_produced_pod(
        &mut self,
        producer: &mut Producer,
        template: Arc<api::Pod>,
        namespace: &str,
        file: &str,
        signature: Option<(Sym, Sym)>,
        now: u64,
    ) -> Result<PodUid, InputError> {
        let mut info = producer.next();
        let created = self.pods_created;
        self.pods_created += 1;
        let uid = self.uids.next_uid();
        let p = Arc::get_mut(&mut info).expect("a produced pod is not shared before it is admitted");
        if created != producer.next_created {
            p.name = pod_name(&template.metadata, created);
        }
        producer.next_created += 1;
        p.uid = uid;
        if producer.start_from_uid {
            p.constraints.start_time_ms = uid.0 as i64;
        }
        if let Some(label) = signature {
            set_label(p, label);
        }
        self.admit_pod(info, template, namespace, file, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A produced pod with its label set is the in-thread path's pod: the label replaced when the
    /// template has one, inserted in key order when not, and no label slot without a signature.
    #[test]
    fn a_produced_pod_is_the_in_thread_pod() {
        let mut snap = crate::snapshot::Snapshot::new();
        let base_pod = crate::snapshot::testing::MakePod::new(&mut snap, "p").build();
        let interner = &mut snap.interner;
        let (a, sig, z, v1, v2) = (
            interner.intern("a"),
            interner.intern("signature"),
            interner.intern("z"),
            interner.intern("1"),
            interner.intern("2"),
        );
        let meta = api::ObjectMeta { generate_name: "web-".into(), ..Default::default() };
        // (template labels, signature) -> labels of the pod
        let cases = [
            (vec![(a, v1), (z, v1)], Some((sig, v2)), vec![(a, v1), (sig, v2), (z, v1)]),
            (vec![(a, v1), (sig, v1), (z, v1)], Some((sig, v2)), vec![(a, v1), (sig, v2), (z, v1)]),
            (vec![], Some((sig, v2)), vec![(sig, v2)]),
            (vec![(a, v1)], None, vec![(a, v1)]),
        ];
        for (labels, signature, want) in cases {
            let base = PodInfo { labels: labels.clone(), ..base_pod.clone() };
            let mut pod = produce_pod(&base, &meta, 7, signature.map(|(k, _)| k));
            let p = Arc::get_mut(&mut pod).expect("unshared");
            if let Some(l) = signature {
                set_label(p, l);
            }
            assert_eq!(p.labels, want, "{labels:?} {signature:?}");
            assert_eq!(p.name, pod_name(&meta, 7));
        }
    }
}
