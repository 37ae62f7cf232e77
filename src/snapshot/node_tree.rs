//! The scan order of the nodes, as upstream's `nodeTree` (`pkg/scheduler/backend/cache/node_tree.go`).
//!
//! Upstream's snapshot lists nodes round-robin over zones: the first node of every zone (zones in
//! the order first seen), then the second of every zone, and so on; within a zone, nodes keep
//! their insertion order. The list is rebuilt from the tree only when a node is added or removed;
//! a relabel that changes a node's zone moves it in the tree (to the end of its new zone) but the
//! list keeps its old order until the next add or remove. `nextStartNodeIndex` indexes this list.
//!
//! Here the tree holds node names; the list is a permutation of [`NodeIdx`] built lazily after an
//! add or remove (node rows are swap-removed, so indices are valid until the next add or remove),
//! and costs nothing per cycle.

use std::sync::OnceLock;

use ahash::AHashMap;

use super::intern::Sym;
use super::nodes::{NodeIdx, NodeTable};

/// A node's zone key: `(region, zone)` as upstream's `GetZoneKey`, with an absent label read as
/// the empty string. Equal pairs are equal keys (`region + ":\x00:" + zone`, no NUL in values).
pub type ZoneKey = (Sym, Sym);

/// The label keys `GetZoneKey` reads and the empty string (interned).
#[derive(Clone, Copy, Debug)]
pub struct ZoneLabels {
    pub beta_zone: Sym,
    pub zone: Sym,
    pub beta_region: Sym,
    pub region: Sym,
    pub empty: Sym,
}

impl ZoneLabels {
    /// `GetZoneKey`: the beta label when present (even empty), else the GA label, else "".
    pub fn key_of(&self, labels: &[(Sym, Sym)]) -> ZoneKey {
        let get = |k: Sym| labels.iter().find(|(lk, _)| *lk == k).map(|&(_, v)| v);
        let zone = get(self.beta_zone).or_else(|| get(self.zone)).unwrap_or(self.empty);
        let region = get(self.beta_region).or_else(|| get(self.region)).unwrap_or(self.empty);
        (region, zone)
    }
}

/// Zones in first-seen order, each with its nodes in insertion order, and the cached list.
#[derive(Clone, Debug, Default)]
pub struct NodeTree {
    zones: Vec<(ZoneKey, Vec<Sym>)>,
    zone_of: AHashMap<Sym, ZoneKey>,
    num_nodes: usize,
    /// The round-robin list as row indices, and whether it is `0, 1, 2, ...`; emptied by add
    /// and remove, rebuilt on first use.
    list: OnceLock<(Vec<NodeIdx>, bool)>,
}

impl NodeTree {
    /// `addNode`: appends `name` to its zone (a new zone goes last). Invalidates the list.
    pub fn add(&mut self, name: Sym, key: ZoneKey) {
        self.insert(name, key);
        self.list = OnceLock::new();
    }

    fn insert(&mut self, name: Sym, key: ZoneKey) {
        match self.zones.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(name),
            None => self.zones.push((key, vec![name])),
        }
        self.zone_of.insert(name, key);
        self.num_nodes += 1;
    }

    /// `removeNode`: drops `name` from its zone (and an emptied zone). Invalidates the list.
    pub fn remove(&mut self, name: Sym) {
        self.take(name);
        self.list = OnceLock::new();
    }

    fn take(&mut self, name: Sym) {
        let Some(key) = self.zone_of.remove(&name) else { return };
        if let Some(z) = self.zones.iter().position(|(k, _)| *k == key) {
            let v = &mut self.zones[z].1;
            if let Some(p) = v.iter().position(|n| *n == name) {
                v.remove(p);
                self.num_nodes -= 1;
            }
            if v.is_empty() {
                self.zones.remove(z);
            }
        }
    }

    /// `updateNode`: when the zone key changed, moves the node to the end of its new zone. The
    /// list is left as it is (upstream rebuilds it only when a node is added or removed).
    pub fn update(&mut self, name: Sym, key: ZoneKey) {
        if self.zone_of.get(&name) == Some(&key) {
            return;
        }
        self.take(name);
        self.insert(name, key);
    }

    /// The scan order: every node row once, round-robin over zones.
    pub fn list(&self, nodes: &NodeTable) -> &[NodeIdx] {
        &self.built(nodes).0
    }

    /// Whether the scan order is the row order (one zone, no row moved by a removal): the filter
    /// pass then skips the indirection.
    pub fn is_row_order(&self, nodes: &NodeTable) -> bool {
        self.built(nodes).1
    }

    fn built(&self, nodes: &NodeTable) -> &(Vec<NodeIdx>, bool) {
        self.list.get_or_init(|| {
            let mut out = Vec::with_capacity(self.num_nodes);
            let longest = self.zones.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
            for i in 0..longest {
                for (_, v) in &self.zones {
                    if let Some(&name) = v.get(i) {
                        out.push(nodes.idx_of(name).expect("a node in the tree is in the table"));
                    }
                }
            }
            let identity = out.iter().enumerate().all(|(i, n)| n.ix() == i);
            (out, identity)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::snapshot::testing::MakeNode;
    use crate::snapshot::{NodeIdx, Snapshot};

    const REGION: &str = "topology.kubernetes.io/region";
    const ZONE: &str = "topology.kubernetes.io/zone";
    const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
    const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";

    /// node_tree_test.go's `allNodes`: (name, labels).
    fn all_nodes() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
        vec![
            ("node-0", vec![]),
            ("node-1", vec![(REGION, "region-1")]),
            ("node-2", vec![(ZONE, "zone-2")]),
            ("node-3", vec![(REGION, "region-1"), (ZONE, "zone-2")]),
            ("node-4", vec![(REGION, "region-1"), (ZONE, "zone-2")]),
            ("node-5", vec![(REGION, "region-1"), (ZONE, "zone-3")]),
            ("node-6", vec![(REGION, "region-2"), (ZONE, "zone-2")]),
            ("node-7", vec![(REGION, "region-2"), (ZONE, "zone-2")]),
            ("node-8", vec![(REGION, "region-2"), (ZONE, "zone-2")]),
            ("node-9", vec![(REGION, "region-2"), (ZONE, "zone-2"), (BETA_REGION, "region-2"), (BETA_ZONE, "zone-2")]),
            ("node-10", vec![(BETA_REGION, "region-2"), (BETA_ZONE, "zone-3")]),
        ]
    }

    fn add(snap: &mut Snapshot, i: usize) {
        let (name, labels) = &all_nodes()[i];
        let mut n = MakeNode::new(snap, name);
        for (k, v) in labels {
            n = n.label(k, v);
        }
        n.add();
    }

    fn order(snap: &Snapshot) -> Vec<String> {
        snap.scan_order().iter().map(|&i| snap.node_name(i).to_string()).collect()
    }

    #[test]
    fn scan_order_is_round_robin_over_zones() {
        // (nodes added by index into allNodes, then removed by index, expected list): from
        // TestNodeTree_List and TestNodeTreeMultiOperations, plus the deprecated labels.
        let cases: &[(&[usize], &[usize], &[&str])] = &[
            (&[], &[], &[]),
            (&[0], &[], &["node-0"]),
            (&[0, 1, 2, 3], &[], &["node-0", "node-1", "node-2", "node-3"]),
            (
                &[0, 1, 2, 3, 4, 5, 6, 7, 8],
                &[],
                &["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
            ),
            (&[2, 3, 4], &[2], &["node-3", "node-4"]),
            (&[2, 3, 4, 5], &[2, 3, 4], &["node-5"]),
            (&[4, 5, 6, 3, 7, 8], &[], &["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"]),
            (&[3, 4, 6, 7], &[3, 4], &["node-6", "node-7"]),
            // node-9's beta labels name the same zone as node-6; node-10's beta zone is new.
            (&[6, 10, 9], &[], &["node-6", "node-10", "node-9"]),
        ];
        for &(adds, removes, want) in cases {
            let mut snap = Snapshot::new();
            for &i in adds {
                add(&mut snap, i);
            }
            for &i in removes {
                let name = snap.interner.intern(all_nodes()[i].0);
                snap.remove_node(name);
            }
            assert_eq!(order(&snap), want, "adds {adds:?} removes {removes:?}");
            let rows: Vec<String> =
                (0..snap.nodes.len() as u32).map(|i| snap.node_name(NodeIdx(i)).to_string()).collect();
            assert_eq!(snap.scan_order_is_row_order(), rows == want, "adds {adds:?} removes {removes:?}");
        }
    }

    #[test]
    fn a_zone_change_moves_the_node_at_the_next_add() {
        let mut snap = Snapshot::new();
        for i in [3, 4, 5] {
            add(&mut snap, i);
        }
        assert_eq!(order(&snap), ["node-3", "node-5", "node-4"]);
        // node-3 moves to zone-3, behind node-5: the list is unchanged until a node is added.
        let spec = MakeNode::new(&mut snap, "node-3").label(REGION, "region-1").label(ZONE, "zone-3").spec();
        snap.update_node(&spec).unwrap();
        assert_eq!(order(&snap), ["node-3", "node-5", "node-4"]);
        add(&mut snap, 0);
        assert_eq!(order(&snap), ["node-4", "node-5", "node-0", "node-3"]);
    }
}
