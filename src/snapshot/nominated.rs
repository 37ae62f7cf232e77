//! The nominations summed per node ([`NominatedSums`]), kept up to date by the snapshot's
//! `nominate`, `clear_nomination`, `place_pod`, `unplace_pod`, `add_node` and `remove_node`, so a
//! cycle that counts nominated pods on the request columns reads one row per node with
//! nominations instead of walking every nominated pod (a hash lookup per pod and per node).

use std::collections::BTreeMap;

use ahash::AHashMap;

use super::nodes::{CoreRequests, NodeIdx};
use super::{PodInfo, Sym};

/// One node name with nominated pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NominatedRow {
    pub node: Sym,
    /// The node's row; `None` while no node of that name exists.
    pub idx: Option<NodeIdx>,
    /// Every pod nominated there, its requests summed ([`CoreRequests::add`]; `sum.pods` of them).
    pub sum: CoreRequests,
}

/// Aggregates of every nomination: per node name the nominated pods' requests summed, and what
/// decides whether all of them count for a pod on the columns ([`NominatedSums::all_count`]).
#[derive(Clone, Debug, Default)]
pub struct NominatedSums {
    rows: Vec<NominatedRow>,
    /// Node name -> position in `rows`.
    pos: AHashMap<Sym, u32>,
    /// The nominated pods' priorities, as a multiset (value -> how many).
    priorities: BTreeMap<i32, u32>,
    /// Nominated pods that are not [`PodInfo::plain_on_columns`].
    non_plain: u32,
    /// Nominated pods that are also placed in the snapshot.
    placed: u32,
}

impl NominatedSums {
    /// Counts `p`, nominated to `node` (row `idx`; `placed` if the snapshot holds it placed).
    pub fn add(&mut self, p: &PodInfo, node: Sym, idx: Option<NodeIdx>, placed: bool) {
        let k = match self.pos.get(&node) {
            Some(&k) => k as usize,
            None => {
                self.pos.insert(node, self.rows.len() as u32);
                self.rows.push(NominatedRow { node, idx, sum: CoreRequests::default() });
                self.rows.len() - 1
            }
        };
        self.rows[k].sum.add(p);
        *self.priorities.entry(p.priority).or_default() += 1;
        self.non_plain += !p.plain_on_columns() as u32;
        self.placed += placed as u32;
    }

    /// Forgets `p`, nominated to `node` (counted by [`NominatedSums::add`]).
    pub fn remove(&mut self, p: &PodInfo, node: Sym, placed: bool) {
        let Some(&k) = self.pos.get(&node) else { return };
        let k = k as usize;
        let mut one = CoreRequests::default();
        one.add(p);
        self.rows[k].sum.sub_sum(&one);
        if self.rows[k].sum.pods == 0 {
            self.pos.remove(&node);
            self.rows.swap_remove(k);
            if let Some(moved) = self.rows.get(k) {
                self.pos.insert(moved.node, k as u32);
            }
        }
        if let Some(n) = self.priorities.get_mut(&p.priority) {
            *n -= 1;
            if *n == 0 {
                self.priorities.remove(&p.priority);
            }
        }
        self.non_plain -= !p.plain_on_columns() as u32;
        self.placed -= placed as u32;
    }

    /// A nominated pod was placed (`+1`) or unplaced (`-1`).
    pub fn shift_placed(&mut self, sign: i32) {
        self.placed = (self.placed as i64 + sign as i64) as u32;
    }

    /// Node `node` now exists at row `idx`.
    pub fn node_added(&mut self, node: Sym, idx: NodeIdx) {
        if let Some(&k) = self.pos.get(&node) {
            self.rows[k as usize].idx = Some(idx);
        }
    }

    /// Node `node` was removed; `moved` is the node that took its row, if any.
    pub fn node_removed(&mut self, node: Sym, moved: Option<(Sym, NodeIdx)>) {
        if let Some(&k) = self.pos.get(&node) {
            self.rows[k as usize].idx = None;
        }
        if let Some((name, idx)) = moved {
            self.node_added(name, idx);
        }
    }

    /// The rows, when every nominated pod counts for a pod of priority `priority` apart from the
    /// pod itself (each has priority >= `priority`), none is placed, and every one is plain on
    /// the columns; otherwise `None` (walk the nominations).
    pub fn all_count(&self, priority: i32) -> Option<&[NominatedRow]> {
        let min = self.priorities.keys().next().copied();
        (self.placed == 0 && self.non_plain == 0 && min.is_none_or(|m| m >= priority)).then_some(&self.rows)
    }

    /// The requests of every pod nominated to `node`, summed (zero when none is).
    pub fn sum_of(&self, node: Sym) -> CoreRequests {
        self.pos.get(&node).map_or_else(CoreRequests::default, |&k| self.rows[k as usize].sum)
    }

    /// Every row (node names with nominations, in no particular order).
    pub fn rows(&self) -> &[NominatedRow] {
        &self.rows
    }

    /// Forgets every nomination.
    pub fn clear(&mut self) {
        *self = NominatedSums::default();
    }
}
