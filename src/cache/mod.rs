//! The lock-free assume cache: one atomic state word per pod, moved by compare-and-swap.
//!
//! As in kube-scheduler's `backend/cache/cache.go`, the scheduling thread *assumes* a pod onto its
//! node at once (the caller adds the pod's requests to the node in its snapshot) and moves on to the
//! next pod; binder threads later report the outcome. Here the per-pod bookkeeping is a slab of
//! `AtomicU64` words indexed by [`PodUid`], so neither side ever takes a lock.
//!
//! # The state machine
//!
//! | operation        | from                         | to        | who                | resources (caller's job)        |
//! |------------------|------------------------------|-----------|--------------------|---------------------------------|
//! | [`assume`]       | Initial, Forgotten           | Assumed   | scheduling thread  | add to the node                 |
//! | [`finish_binding`] | Assumed                    | Bound     | binder thread      | none                            |
//! | [`forget`]       | Assumed                      | Forgotten | scheduling thread  | remove from the node returned   |
//! | [`confirm_bound`]| Initial, Forgotten           | Bound     | event handler      | add to the node ([`Confirmed::Added`]) |
//! | [`confirm_bound`]| Assumed, Bound (same node)   | Bound     | event handler      | none ([`Confirmed::AlreadyAccounted`]) |
//! | [`confirm_bound`]| Assumed, Bound (other node)  | Bound     | event handler      | move ([`Confirmed::Moved`])     |
//! | [`delete`]       | any but Deleted              | Deleted   | anyone             | remove if it was Assumed or Bound |
//!
//! Any other pair is refused with a [`TransitionError`] that names the state found, and the word is
//! left as it was. Deleted is terminal: pod uids are never reused within a run. Assumed pods never
//! expire (upstream's `durationToExpireAssumedPod` is 0).
//!
//! The races this settles, each checked by a loom test below:
//! - a binder's `finish_binding` racing the pod's `delete`: exactly one of them wins the Assumed word;
//!   the node's resources are released exactly once, by `delete`.
//! - `forget` (a bind failure) racing `confirm_bound` (the bind was seen to succeed after all): the
//!   node's resources end up accounted exactly once, whichever wins.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransitionError {
    pub uid: PodUid,
    pub op: &'static str,
    pub found: PodState,
}

impl fmt::Display for TransitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: cannot {} a pod in state {:?}", self.uid, self.op, self.found)
    }
}

impl std::error::Error for TransitionError {}

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

/// A slab of per-pod state words, indexed by `PodUid.0`, shared by the scheduling thread and the
/// binders (`Arc<AssumeCache>`). Lock-free: every operation is one compare-and-swap loop.
pub struct AssumeCache {
    /// One word per pod; see the module docs for the protocol.
    words: Box<[AtomicU64]>,
}

impl fmt::Debug for AssumeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AssumeCache").field("capacity", &self.words.len()).finish()
    }
}

impl AssumeCache {
    /// A cache for pods with uids `0..capacity`, all Initial. The workload assigns uids densely in
    /// creation order, so `capacity` is the number of pods the run creates.
    pub fn new(capacity: usize) -> Self {
        let words = (0..capacity).map(|_| AtomicU64::new(pack(PodState::Initial, NO_NODE))).collect();
        AssumeCache { words }
    }

    pub fn capacity(&self) -> usize {
        self.words.len()
    }

    fn word(&self, uid: PodUid) -> &AtomicU64 {
        let i = uid.0 as usize;
        assert!(i < self.words.len(), "assume cache: {uid} is beyond the capacity {}", self.words.len());
        &self.words[i]
    }

    /// The pod's state and the node it holds (if Assumed or Bound).
    pub fn state(&self, uid: PodUid) -> (PodState, Option<u32>) {
        let (state, node) = unpack(self.word(uid).load(Ordering::Acquire));
        (state, if state.holds_node() { Some(node) } else { None })
    }

    /// Applies `op` with a compare-and-swap loop.
    pub fn apply(&self, uid: PodUid, op: Op) -> Result<Outcome, TransitionError> {
        let word = self.word(uid);
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

    /// Binder thread: the binding cycle succeeded (Assumed → Bound). Refused with `found: Deleted` when
    /// the pod was deleted meanwhile (the delete released its resources).
    pub fn finish_binding(&self, uid: PodUid) -> Result<(), TransitionError> {
        self.apply(uid, Op::FinishBinding).map(|_| ())
    }

    /// Scheduling thread: undoes an assume after a failed binding cycle (Assumed → Forgotten).
    /// Returns the node whose resources the caller must release.
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

    /// How many pods are in `state` (a scan, for end-of-run checks).
    pub fn count(&self, state: PodState) -> usize {
        self.words.iter().filter(|w| unpack(w.load(Ordering::Acquire)).0 == state).count()
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
        let cache = AssumeCache::new(4);
        let p = PodUid(2);
        assert_eq!(cache.state(p), (Initial, None));
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
        assert_eq!(cache.count(Initial), 3);
        assert_eq!(cache.count(Deleted), 1);
    }

    #[test]
    #[should_panic(expected = "beyond the capacity")]
    fn uid_beyond_capacity_is_an_invariant_violation() {
        AssumeCache::new(1).state(PodUid(1));
    }

    #[test]
    fn concurrent_finish_and_delete_release_once() {
        // Many threads race finish_binding against delete on distinct pods; the ledger must balance.
        let cache = std::sync::Arc::new(AssumeCache::new(10_000));
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
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A binder's finish_binding races the pod's delete: resources are released exactly once and the
    /// two observations agree on the order.
    #[test]
    fn finish_binding_races_delete() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new(1));
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

    /// forget (bind failure) races confirm_bound (the bind was seen after all): the node ends up
    /// accounted exactly once and the pod ends Bound.
    #[test]
    fn forget_races_confirm() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new(1));
            let p = PodUid(0);
            cache.assume(p, 3).unwrap();
            let c = cache.clone();
            let confirmer = thread::spawn(move || c.confirm_bound(p, 3).unwrap());
            let forgot = cache.forget(p);
            let confirmed = confirmer.join().unwrap();
            let mut accounted: i32 = 1; // the assume
            if forgot.is_ok() {
                accounted -= 1;
            }
            match confirmed {
                Confirmed::Added => accounted += 1,
                Confirmed::AlreadyAccounted => {}
                Confirmed::Moved { .. } => panic!("same node"),
            }
            assert_eq!(accounted, 1);
            assert_eq!(cache.state(p), (PodState::Bound, Some(3)));
        });
    }

    /// The pod is seen bound (confirm from Initial) while it is deleted: whichever wins, the node's
    /// ledger returns to zero and the pod ends Deleted.
    #[test]
    fn confirm_races_delete() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new(1));
            let p = PodUid(0);
            let c = cache.clone();
            let confirmer = thread::spawn(move || c.confirm_bound(p, 4));
            let released = cache.delete(p).unwrap();
            let confirmed = confirmer.join().unwrap();
            let mut accounted: i32 = 0;
            match confirmed {
                Ok(Confirmed::Added) => accounted += 1,
                Ok(other) => panic!("confirm from Initial reported {other:?}"),
                Err(e) => assert_eq!(e.found, PodState::Deleted),
            }
            if released.is_some() {
                accounted -= 1;
            }
            assert_eq!(accounted, 0);
            assert_eq!(cache.state(p), (PodState::Deleted, None));
        });
    }

    /// Two binders finishing two pods while the owner assumes a third: words are independent.
    #[test]
    fn independent_pods_do_not_interfere() {
        loom::model(|| {
            let cache = Arc::new(AssumeCache::new(3));
            cache.assume(PodUid(0), 1).unwrap();
            cache.assume(PodUid(1), 2).unwrap();
            let c0 = cache.clone();
            let t0 = thread::spawn(move || c0.finish_binding(PodUid(0)).unwrap());
            let c1 = cache.clone();
            let t1 = thread::spawn(move || c1.forget(PodUid(1)).unwrap());
            cache.assume(PodUid(2), 5).unwrap();
            t0.join().unwrap();
            assert_eq!(t1.join().unwrap(), 2);
            assert_eq!(cache.state(PodUid(0)), (PodState::Bound, Some(1)));
            assert_eq!(cache.state(PodUid(1)), (PodState::Forgotten, None));
            assert_eq!(cache.state(PodUid(2)), (PodState::Assumed, Some(5)));
        });
    }
}
