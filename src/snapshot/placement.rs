//! A placement (v1.37.2 `fwk.Placement`): a named subset of the snapshot's nodes that a pod-group
//! cycle tries its group in (TopologyAwareWorkloadScheduling). It holds node rows, never nodes:
//! the rows in scan order (what the filter pass walks) and a row bitset (membership in O(1)).
//! Valid while no node is added or removed, as upstream's is for one cycle's snapshot.

use super::bits;
use super::intern::Sym;
use super::nodes::NodeIdx;

/// One placement: its name (the topology domain's value; `Sym::NONE` for the whole cluster) and
/// its rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    pub name: Sym,
    /// The placement's rows, in the snapshot's scan order.
    pub rows: Vec<NodeIdx>,
    /// One bit per row of the snapshot, set for the rows in `rows`.
    mask: Vec<u64>,
}

impl Placement {
    /// A placement named `name` of `rows` (in scan order).
    pub fn new(name: Sym, rows: Vec<NodeIdx>) -> Placement {
        let mut mask = Vec::new();
        for r in &rows {
            bits::set(&mut mask, r.ix(), true);
        }
        Placement { name, rows, mask }
    }

    /// Whether row `node` is in the placement.
    #[inline]
    pub fn contains(&self, node: NodeIdx) -> bool {
        bits::get(&self.mask, node.ix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_is_the_rows_given() {
        let p = Placement::new(Sym::NONE, vec![NodeIdx(3), NodeIdx(70), NodeIdx(1)]);
        let members: Vec<u32> = (0..130).filter(|i| p.contains(NodeIdx(*i))).collect();
        assert_eq!(members, vec![1, 3, 70]);
        assert_eq!(p.rows, vec![NodeIdx(3), NodeIdx(70), NodeIdx(1)], "the scan order is kept");
    }
}
