//! How many feasible nodes to look for (`percentageOfNodesToScore`), as `schedule_one.go`.

/// Below this many nodes, every node is evaluated (`minFeasibleNodesToFind`).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this (`minFeasibleNodesPercentageToFind`).
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// `numFeasibleNodesToFind`: with percentage 0 (adaptive), `50 - n/125` percent, at least 5 %;
/// the result is at least 100 nodes, or all of them when there are fewer than 100.
/// `profile_pct` (when set) wins over `global_pct`.
pub fn num_feasible_nodes_to_find(profile_pct: Option<i32>, global_pct: Option<i32>, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let mut pct = profile_pct.or(global_pct).unwrap_or(0) as i64;
    if pct == 0 {
        pct = (50 - num_all_nodes as i64 / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let n = (num_all_nodes as i64 * pct / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries() {
        // (profile, global, nodes, want): schedule_one_test.go TestNumFeasibleNodesToFind and the reference's examples.
        let cases = [
            (None, None, 10, 10),
            (None, None, 99, 99),
            (None, None, 100, 100),
            (None, None, 500, 230),
            (None, None, 1000, 420),
            (None, None, 5000, 500),
            (None, None, 6000, 300),
            (None, None, 15000, 750),
            (None, None, 100_000, 5000),
            (None, Some(40), 10, 10),
            (None, Some(40), 1000, 400),
            (None, Some(10), 500, 100),
            (None, Some(100), 5000, 5000),
            (Some(40), Some(10), 1000, 400),
            (Some(0), Some(10), 1000, 420),
            (Some(100), None, 1000, 1000),
            (Some(1), None, 1000, 100),
        ];
        for (profile, global, n, want) in cases {
            assert_eq!(
                num_feasible_nodes_to_find(profile, global, n),
                want,
                "profile {profile:?} global {global:?} nodes {n}"
            );
        }
    }
}
