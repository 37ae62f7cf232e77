//! The lock-free assume cache: one atomic state word per pod, moved by compare-and-swap.
//!
//! As in kube-scheduler's `backend/cache/cache.go`, the scheduling thread *assumes* a pod onto its
//! node at once (the caller adds the pod's requests to the node in its snapshot) and moves on to the
//! next pod; the binder later ends the binding cycle. Here the per-pod bookkeeping is a growing
//! table of `AtomicU64` words indexed by [`PodUid`] (segments of doubling size, see
//! [`AssumeCache`]), so neither side ever takes a lock.
//!
//! # The state machine
//!
//! | operation        | from                         | to        | who (in `run`)       | resources (caller's job)        |
//! |------------------|------------------------------|-----------|----------------------|---------------------------------|
//! | [`assume`]       | Initial, Forgotten           | Assumed   | scheduling thread    | add to the node                 |
//! | [`finish_binding`] | Assumed                    | Bound     | binder               | none                            |
//! | [`forget`]       | Assumed                      | Forgotten | binder               | remove from the node returned (the scheduling thread, on the failed result) |
//! | [`confirm_bound`]| Initial, Forgotten           | Bound     | start of a run (`--cluster` pods) | add to the node ([`Confirmed::Added`]) |
//! | [`confirm_bound`]| Assumed, Bound (same node)   | Bound     | event handler        | none ([`Confirmed::AlreadyAccounted`]) |
//! | [`confirm_bound`]| Assumed, Bound (other node)  | Bound     | event handler        | move ([`Confirmed::Moved`])     |
//! | [`delete`]       | any but Deleted              | Deleted   | scheduling thread    | remove if it was Assumed or Bound |
//!
//! Any other pair is refused with a [`TransitionError`] that names the state found, and the word is
//! left as it was. Deleted is terminal: pod uids are never reused within a run. Assumed pods never
//! expire (upstream's `durationToExpireAssumedPod` is 0).
//!
//! The binder owns the end of the binding cycle, as upstream's binding goroutine does: FinishBinding
//! when the bind succeeded, ForgetPod when any step failed (Permit rejected or timed out on the
//! permit timer thread, PreBind failed on a worker, the bind failed). In `run` the scheduling
//! thread reads the agent's events and hands each to the binder (`Binder::end_binding`, which
//! returns the bind result), so FinishBinding and a failed bind's forget run inside the binder's
//! code on that thread; Permit
//! and PreBind failures forget on binder threads, and an embedder's router thread
//! (`Binder::spawn_router`) runs all of them off the scheduling thread. The races this leaves,
//! each checked by a loom test below:
//! - the binder's `finish_binding` racing the pod's `delete`: exactly one of them wins the Assumed
//!   word; the node's resources are released exactly once, by `delete`.
//! - the binder's `forget` racing the pod's `delete`: exactly one of them reports the node.
//! - a pod's first transition growing the table while the binder moves another pod's word.
//!
//! `confirm_bound` runs single-threaded at the start of a run; its transitions are in the table
//! test, not in a loom model.
//!
//! # Protocol of the state word
//!
//! Bits 0..8 hold the [`PodState`], bits 32..64 the node index (`u32::MAX` when none). Both halves
//! change in one compare-and-swap, so a reader never sees a state with another state's node. Writers
//! use `AcqRel`, readers `Acquire`: whatever the winner of a transition wrote before it (for example the
//! snapshot update the assume stands for) is visible to whoever observes the new state. Words are not
//! cache-padded: a pod's word is touched by the scheduling thread and by one binder, briefly, and
//! padding a slab of a million pods would cost 128 MB.
//!
//! [`assume`]: AssumeCache::assume
//! [`finish_binding`]: AssumeCache::finish_binding
//! [`forget`]: AssumeCache::forget
//! [`confirm_bound`]: AssumeCache::confirm_bound
//! [`delete`]: AssumeCache::delete

use std::fmt;

use crate::ids::PodUid;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::OnceLock;

/// Where a pod stands in the cache. See the module docs for the transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PodState {
    /// Not on any node as far as the cache knows (pending, queued, or being scheduled).
    Initial = 0,
    /// Put on a node by the scheduling thread; binding in flight.
    Assumed = 1,
    /// Bound: the binding cycle finished, or the pod was seen bound.
    Bound = 2,
    /// An assume undone after a failed binding cycle; the pod may be assumed again.
    Forgotten = 3,
    /// Deleted. Terminal.
    Deleted = 4,
}

impl PodState {
    fn from_u8(v: u8) -> PodState {
        match v {
            0 => PodState::Initial,
            1 => PodState::Assumed,
            2 => PodState::Bound,
            3 => PodState::Forgotten,
            4 => PodState::Deleted,
            other => panic!("assume cache: corrupt state byte {other}"),
        }
    }

    /// Whether a pod in this state holds resources on a node.
    pub fn holds_node(self) -> bool {
        matches!(self, PodState::Assumed | PodState::Bound)
    }
}

/// The operations of the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Assume(u32),
    FinishBinding,
    Forget,
    ConfirmBound(u32),
    Delete,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Assume(_) => "assume",
            Op::FinishBinding => "finish_binding",
            Op::Forget => "forget",
            Op::ConfirmBound(_) => "confirm_bound",
            Op::Delete => "delete",
        }
    }
}

/// A refused transition: the pod was not in a state the operation accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{uid}: cannot {op} a pod in state {found:?}")]
pub struct TransitionError {
    pub uid: PodUid,
    pub op: &'static str,
    pub found: PodState,
}

/// What [`AssumeCache::confirm_bound`] means for the node's resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmed {
    /// The pod was on no node: add its requests to `node`.
    Added,
    /// The pod was already assumed or bound on that node: nothing to do.
    AlreadyAccounted,
    /// The pod was assumed on another node: remove it from `from`, add it to the confirmed node.
    Moved { from: u32 },
}

/// What a successful transition reports to its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// assume, finish_binding: nothing for the caller to undo.
    Done,
    /// forget, delete: the node whose resources the caller must release (`None` when the pod held none).
    Released(Option<u32>),
    /// confirm_bound.
    Confirmed(Confirmed),
}

const NO_NODE: u32 = u32::MAX;

fn pack(state: PodState, node: u32) -> u64 {
    ((node as u64) << 32) | state as u64
}

fn unpack(word: u64) -> (PodState, u32) {
    (PodState::from_u8((word & 0xff) as u8), (word >> 32) as u32)
}

/// The transition table: the next word and the outcome, or the state found when `op` is refused.
/// A pure function of the current word, so the whole table is unit-tested without threads.
pub fn transition(op: Op, word: u64) -> Result<(u64, Outcome), PodState> {
    use PodState::*;
    let (state, node) = unpack(word);
    match (op, state) {
        (Op::Assume(n), Initial | Forgotten) => Ok((pack(Assumed, n), Outcome::Done)),
        (Op::FinishBinding, Assumed) => Ok((pack(Bound, node), Outcome::Done)),
        (Op::Forget, Assumed) => Ok((pack(Forgotten, NO_NODE), Outcome::Released(Some(node)))),
        (Op::ConfirmBound(n), Initial | Forgotten) => Ok((pack(Bound, n), Outcome::Confirmed(Confirmed::Added))),
        (Op::ConfirmBound(n), Assumed | Bound) if n == node => {
            Ok((pack(Bound, n), Outcome::Confirmed(Confirmed::AlreadyAccounted)))
        }
        (Op::ConfirmBound(n), Assumed | Bound) => {
            Ok((pack(Bound, n), Outcome::Confirmed(Confirmed::Moved { from: node })))
        }
        (Op::Delete, Assumed | Bound) => Ok((pack(Deleted, NO_NODE), Outcome::Released(Some(node)))),
        (Op::Delete, Initial | Forgotten) => Ok((pack(Deleted, NO_NODE), Outcome::Released(None))),
        (_, found) => Err(found),
    }
}

/// Words in segment 0; segment `k` holds `FIRST_SEGMENT_WORDS << k` words. Small under loom, so
/// that a model with a handful of pods crosses segment boundaries.
const FIRST_SEGMENT_WORDS: usize = if cfg!(schedperf_loom) { 2 } else { 1024 };
/// Segment slots: with doubling segments, 64 slots cover every `u64` uid (memory runs out first).
const SEGMENTS: usize = 64;

/// The segment and the offset in it of word `i`: segment `k` starts at `FIRST * (2^k - 1)`.
fn locate(i: u64) -> (usize, usize) {
    let first = FIRST_SEGMENT_WORDS as u64;
    let j = i / first + 1;
    let k = 63 - j.leading_zeros() as usize;
    let start = first * ((1u64 << k) - 1);
    (k, (i - start) as usize)
}

/// Per-pod state words, indexed by `PodUid.0`, shared by the scheduling thread and the binder
/// (`Arc<AssumeCache>`). Lock-free: every operation is one compare-and-swap loop on one word.
///
/// It grows without a bound set in advance: the words live in segments of doubling size, each
/// allocated on the first transition of a pod in it (pods are never moved, so a reference to a
/// word stays valid). A segment slot is a `OnceLock`: reading a slot is one acquire load; the
/// first writer of a segment allocates it (a one-time step, about log2(pods / 1024) times a run,
/// done by the scheduling thread, which assumes or deletes a pod before any binder touches it).
/// A pod whose segment was never allocated is Initial.
pub struct AssumeCache {
    /// Segment `k` holds the words of pods `FIRST * (2^k - 1) ..`; see the module docs for the
    /// protocol of a word.
    segments: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl fmt::Debug for AssumeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AssumeCache").field("allocated_words", &self.allocated_words()).finish()
    }
}

impl Default for AssumeCache {
    fn default() -> Self {
        Self::new()
    }
}

impl AssumeCache {
    /// An empty cache: every pod Initial. It grows as pods with higher uids are touched.
    pub fn new() -> Self {
        AssumeCache { segments: (0..SEGMENTS).map(|_| OnceLock::new()).collect() }
    }

    /// Words allocated so far (a multiple of the first segment's size).
    pub fn allocated_words(&self) -> usize {
        self.segments.iter().enumerate().filter(|(_, s)| s.get().is_some()).map(|(k, _)| FIRST_SEGMENT_WORDS << k).sum()
    }

    /// The pod's word, if its segment exists.
    fn word(&self, uid: PodUid) -> Option<&AtomicU64> {
        let (k, offset) = locate(uid.0);
        self.segments[k].get().map(|seg| &seg[offset])
    }

    /// The pod's word, allocating its segment on first use.
    fn word_or_grow(&self, uid: PodUid) -> &AtomicU64 {
        let (k, offset) = locate(uid.0);
        let seg = self.segments[k].get_or_init(|| {
            (0..FIRST_SEGMENT_WORDS << k).map(|_| AtomicU64::new(pack(PodState::Initial, NO_NODE))).collect()
        });
        &seg[offset]
    }

    /// The pod's state and the node it holds (if Assumed or Bound).
    pub fn state(&self, uid: PodUid) -> (PodState, Option<u32>) {
        let Some(word) = self.word(uid) else { return (PodState::Initial, None) };
        let (state, node) = unpack(word.load(Ordering::Acquire));
        (state, if state.holds_node() { Some(node) } else { None })
    }

    /// Applies `op` with a compare-and-swap loop.
    pub fn apply(&self, uid: PodUid, op: Op) -> Result<Outcome, TransitionError> {
        let word = match self.word(uid) {
            Some(w) => w,
            // An unallocated pod is Initial: allocate only for an operation Initial accepts.
            None => {
                transition(op, pack(PodState::Initial, NO_NODE)).map_err(|found| TransitionError {
                    uid,
                    op: op.name(),
                    found,
                })?;
                self.word_or_grow(uid)
            }
        };
        let mut current = word.load(Ordering::Acquire);
        loop {
            let (next, outcome) =
                transition(op, current).map_err(|found| TransitionError { uid, op: op.name(), found })?;
            match word.compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(outcome),
                Err(actual) => current = actual,
            }
        }
    }

    /// Scheduling thread: puts the pod on `node` (Initial or Forgotten → Assumed).
    pub fn assume(&self, uid: PodUid, node: u32) -> Result<(), TransitionError> {
        self.apply(uid, Op::Assume(node)).map(|_| ())
    }

    /// Binder: the binding cycle succeeded (Assumed → Bound). Refused with `found: Deleted` when
    /// the pod was deleted meanwhile (the delete released its resources).
    pub fn finish_binding(&self, uid: PodUid) -> Result<(), TransitionError> {
        self.apply(uid, Op::FinishBinding).map(|_| ())
    }

    /// Binder: undoes an assume after a failed binding cycle (Assumed → Forgotten). Returns the
    /// node whose resources the scheduling thread must release (it does so when it reads the
    /// failed result). Refused with `found: Deleted` when the pod was deleted meanwhile.
    pub fn forget(&self, uid: PodUid) -> Result<u32, TransitionError> {
        match self.apply(uid, Op::Forget)? {
            Outcome::Released(Some(node)) => Ok(node),
            other => unreachable!("forget reported {other:?}"),
        }
    }

    /// Event handler: the pod was seen bound to `node` (the informer's Add in kube-scheduler).
    pub fn confirm_bound(&self, uid: PodUid, node: u32) -> Result<Confirmed, TransitionError> {
        match self.apply(uid, Op::ConfirmBound(node))? {
            Outcome::Confirmed(c) => Ok(c),
            other => unreachable!("confirm_bound reported {other:?}"),
        }
    }

    /// The pod was deleted (any state but Deleted → Deleted). Returns the node whose resources the
    /// caller must release, if the pod held one.
    pub fn delete(&self, uid: PodUid) -> Result<Option<u32>, TransitionError> {
        match self.apply(uid, Op::Delete)? {
            Outcome::Released(node) => Ok(node),
            other => unreachable!("delete reported {other:?}"),
        }
    }

    /// Every pod the cache has seen leave Initial, with its state and node, in uid order (a scan,
    /// for end-of-run checks).
    pub fn pods(&self) -> Vec<(PodUid, PodState, Option<u32>)> {
        let mut out = Vec::new();
        for (k, seg) in self.segments.iter().enumerate() {
            let Some(seg) = seg.get() else { continue };
            let start = FIRST_SEGMENT_WORDS as u64 * ((1u64 << k) - 1);
            for (i, w) in seg.iter().enumerate() {
                let (state, node) = unpack(w.load(Ordering::Acquire));
                if state != PodState::Initial {
                    out.push((PodUid(start + i as u64), state, state.holds_node().then_some(node)));
                }
            }
        }
        out
    }

    /// How many pods are in `state`, Initial excepted (a never-touched pod has no word).
    pub fn count(&self, state: PodState) -> usize {
        assert!(state != PodState::Initial, "the cache does not count Initial pods");
        self.pods().iter().filter(|p| p.1 == state).count()
    }
}

#[cfg(all(test, not(schedperf_loom)))]
mod tests {
    use super::*;
    use PodState::*;

    fn check(op: Op, from: (PodState, u32), expected: Result<((PodState, u32), Outcome), PodState>) {
        let got = transition(op, pack(from.0, from.1)).map(|(w, o)| (unpack(w), o));
        assert_eq!(got, expected, "{op:?} from {from:?}");
    }

    #[test]
    fn transition_table() {
        let n = NO_NODE;
        let released = |x| Outcome::Released(x);
        let confirmed = |c| Outcome::Confirmed(c);
        // assume
        check(Op::Assume(7), (Initial, n), Ok(((Assumed, 7), Outcome::Done)));
        check(Op::Assume(7), (Forgotten, n), Ok(((Assumed, 7), Outcome::Done)));
        check(Op::Assume(7), (Assumed, 3), Err(Assumed));
        check(Op::Assume(7), (Bound, 3), Err(Bound));
        check(Op::Assume(7), (Deleted, n), Err(Deleted));
        // finish_binding
        check(Op::FinishBinding, (Assumed, 3), Ok(((Bound, 3), Outcome::Done)));
        check(Op::FinishBinding, (Initial, n), Err(Initial));
        check(Op::FinishBinding, (Bound, 3), Err(Bound));
        check(Op::FinishBinding, (Forgotten, n), Err(Forgotten));
        check(Op::FinishBinding, (Deleted, n), Err(Deleted));
        // forget
        check(Op::Forget, (Assumed, 3), Ok(((Forgotten, n), released(Some(3)))));
        check(Op::Forget, (Initial, n), Err(Initial));
        check(Op::Forget, (Bound, 3), Err(Bound));
        check(Op::Forget, (Forgotten, n), Err(Forgotten));
        check(Op::Forget, (Deleted, n), Err(Deleted));
        // confirm_bound
        check(Op::ConfirmBound(3), (Initial, n), Ok(((Bound, 3), confirmed(Confirmed::Added))));
        check(Op::ConfirmBound(3), (Forgotten, n), Ok(((Bound, 3), confirmed(Confirmed::Added))));
        check(Op::ConfirmBound(3), (Assumed, 3), Ok(((Bound, 3), confirmed(Confirmed::AlreadyAccounted))));
        check(Op::ConfirmBound(3), (Bound, 3), Ok(((Bound, 3), confirmed(Confirmed::AlreadyAccounted))));
        check(Op::ConfirmBound(3), (Assumed, 5), Ok(((Bound, 3), confirmed(Confirmed::Moved { from: 5 }))));
        check(Op::ConfirmBound(3), (Deleted, n), Err(Deleted));
        // delete
        check(Op::Delete, (Initial, n), Ok(((Deleted, n), released(None))));
        check(Op::Delete, (Assumed, 3), Ok(((Deleted, n), released(Some(3)))));
        check(Op::Delete, (Bound, 3), Ok(((Deleted, n), released(Some(3)))));
        check(Op::Delete, (Forgotten, n), Ok(((Deleted, n), released(None))));
        check(Op::Delete, (Deleted, n), Err(Deleted));
    }

    #[test]
    fn lifecycle_through_the_cache() {
        let cache = AssumeCache::new();
        let p = PodUid(2);
        assert_eq!(cache.state(p), (Initial, None));
        assert_eq!(cache.allocated_words(), 0, "nothing allocated before the first transition");
        cache.assume(p, 9).unwrap();
        assert_eq!(cache.state(p), (Assumed, Some(9)));
        assert_eq!(cache.forget(p), Ok(9));
        assert_eq!(cache.state(p), (Forgotten, None));
        cache.assume(p, 1).unwrap();
        cache.finish_binding(p).unwrap();
        assert_eq!(cache.state(p), (Bound, Some(1)));
        let err = cache.forget(p).unwrap_err();
        assert_eq!(err, TransitionError { uid: p, op: "forget", found: Bound });
        assert_eq!(err.to_string(), "pod-00000002: cannot forget a pod in state Bound");
        assert_eq!(cache.delete(p), Ok(Some(1)));
        assert_eq!(cache.delete(p).unwrap_err().found, Deleted);
        assert_eq!(cache.count(Deleted), 1);
        assert_eq!(cache.pods(), vec![(p, Deleted, None)]);
    }

    #[test]
    fn segments_tile_the_uid_space() {
        let f = FIRST_SEGMENT_WORDS as u64;
        for (i, want) in [
            (0, (0, 0)),
            (f - 1, (0, f as usize - 1)),
            (f, (1, 0)),
            (3 * f - 1, (1, 2 * f as usize - 1)),
            (3 * f, (2, 0)),
            (7 * f, (3, 0)),
        ] {
            assert_eq!(locate(i), want, "word {i}");
        }
        assert!(locate(u64::MAX).0 < SEGMENTS, "every uid has a segment slot");
        // Consecutive words never skip or repeat a slot.
        let mut prev = locate(0);
        for i in 1..20 * f {
            let next = locate(i);
            assert!(next == (prev.0, prev.1 + 1) || next == (prev.0 + 1, 0), "word {i}: {prev:?} then {next:?}");
            prev = next;
        }
    }

    #[test]
    fn grows_past_any_capacity_without_a_panic() {
        // The old cache panicked on the first uid beyond the capacity it was created with.
        let cache = AssumeCache::new();
        let uids: Vec<PodUid> = [0, 1, 1023, 1024, 5_000, 100_000, 1_000_000, 3_000_000].map(PodUid).into();
        for (i, &u) in uids.iter().enumerate() {
            cache.assume(u, i as u32).unwrap();
        }
        for (i, &u) in uids.iter().enumerate() {
            assert_eq!(cache.state(u), (Assumed, Some(i as u32)), "{u}");
        }
        assert_eq!(cache.state(PodUid(u64::MAX)), (Initial, None), "an untouched uid reads Initial");
        assert_eq!(
            cache.finish_binding(PodUid(u64::MAX >> 20)).unwrap_err().found,
            Initial,
            "refused, nothing allocated"
        );
        assert_eq!(cache.count(Assumed), uids.len());
        assert!(cache.allocated_words() < 2 * 3_000_000 + 1024, "doubling segments, allocated only when touched");
    }

    #[test]
    fn concurrent_finish_and_delete_release_once() {
        // Many threads race finish_binding against delete on distinct pods; the ledger must balance.
        let cache = std::sync::Arc::new(AssumeCache::new());
        for i in 0..10_000 {
            cache.assume(PodUid(i), (i % 7) as u32).unwrap();
        }
        let c1 = cache.clone();
        let finisher =
            std::thread::spawn(move || (0..10_000).filter(|&i| c1.finish_binding(PodUid(i)).is_ok()).count());
        let c2 = cache.clone();
        let deleter =
            std::thread::spawn(move || (0..10_000).rev().filter(|&i| c2.delete(PodUid(i)).unwrap().is_some()).count());
        let finished = finisher.join().unwrap();
        let released = deleter.join().unwrap();
        assert_eq!(released, 10_000, "every pod held a node when deleted");
        assert!(finished <= 10_000);
        assert_eq!(cache.count(Deleted), 10_000);
    }
}

#[cfg(all(test, schedperf_loom))]
mod loom_tests {
    //! The races the product has (see the module docs): the binder ends a binding cycle
    //! (finish_binding or forget) while the scheduling thread deletes the pod, or grows the table.

    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// The binder's finish_binding races the pod's delete: resources are released exactly once and
    /// the two observations agree on the order.
    #[test]
    fn finish_binding_races_delete() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new());
            let p = PodUid(0);
            cache.assume(p, 3).unwrap();
            let c = cache.clone();
            let binder = thread::spawn(move || c.finish_binding(p));
            let released = cache.delete(p).unwrap();
            let finished = binder.join().unwrap();
            assert_eq!(released, Some(3), "delete releases the node whether it saw Assumed or Bound");
            match finished {
                Ok(()) => {}
                Err(e) => assert_eq!(e.found, PodState::Deleted),
            }
            assert_eq!(cache.state(p), (PodState::Deleted, None));
        });
    }

    /// The binder's forget (a failed binding cycle) races the pod's delete: exactly one of them
    /// reports the node, so the scheduling thread releases it once; the pod ends Deleted.
    #[test]
    fn forget_races_delete() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new());
            let p = PodUid(1);
            cache.assume(p, 3).unwrap();
            let c = cache.clone();
            let binder = thread::spawn(move || c.forget(p));
            let deleted = cache.delete(p).unwrap();
            let forgot = binder.join().unwrap();
            match (forgot, deleted) {
                (Ok(3), None) => {}
                (Err(e), Some(3)) => assert_eq!(e.found, PodState::Deleted),
                other => panic!("the node must be reported exactly once: {other:?}"),
            }
            assert_eq!(cache.state(p), (PodState::Deleted, None));
        });
    }

    /// The scheduling thread's first transitions of pods in new segments grow the table while the
    /// binder ends the binding cycles of two pods in the first segment: every word ends as its
    /// owner left it.
    #[test]
    fn growth_races_the_binder() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new());
            cache.assume(PodUid(0), 1).unwrap();
            cache.assume(PodUid(1), 2).unwrap();
            let c = cache.clone();
            let binder = thread::spawn(move || {
                c.finish_binding(PodUid(0)).unwrap();
                c.forget(PodUid(1)).unwrap()
            });
            // Uids 2 and 6 start segments 1 and 2 (two words in segment 0 under loom).
            cache.assume(PodUid(2), 5).unwrap();
            cache.delete(PodUid(6)).unwrap();
            assert_eq!(binder.join().unwrap(), 2);
            assert_eq!(cache.state(PodUid(0)), (PodState::Bound, Some(1)));
            assert_eq!(cache.state(PodUid(1)), (PodState::Forgotten, None));
            assert_eq!(cache.state(PodUid(2)), (PodState::Assumed, Some(5)));
            assert_eq!(cache.state(PodUid(6)), (PodState::Deleted, None));
        });
    }
}
