//! TopologyPlacementGenerator (v1.37.2, `framework/plugins/topologyaware`) and the PlacementScore
//! plugins the TopologyAwareWorkloadScheduling gate enables (`applyTopologyAwareWorkloadScheduling`
//! appends TopologyPlacementGenerator and PodGroupPodsCount (weight 1) to the default multiPoint
//! list; NodeResourcesFit scores placements too once the gate is on).
//!
//! As GangScheduling's, their decisions are free functions over the snapshot's columns, called by
//! the pod-group cycle (`runner::driver::podgroup::group_algorithm`):
//! - PlacementGenerate ([`generate_placements`]): a group with `schedulingConstraints.topology`
//!   gets one placement per value of the first constraint's node label (the nodes carrying it);
//!   once some of its pods are scheduled, only their domain; without a constraint, the whole
//!   cluster (the parent placement);
//! - PlacementScore: NodeResourcesFit's [`fit_placement_score`] (MostAllocated over the
//!   placement's summed requests and allocatable, the group's proposed pods added) and
//!   PodGroupPodsCount's [`pods_count_scores`] (scheduled + proposed pods, normalized to the most);
//!   [`best_placement`] takes the highest weighted total, ties broken by a random draw per
//!   placement as `findBestPlacement` does.
//!
//! Not modelled: NodeResourcesFit's `scoringStrategy.resources` (the placement score always weighs
//! cpu and memory 1 each, the default) and disabling either plugin in a profile (they run whenever
//! the gate is on, as GangScheduling does).

use crate::snapshot::{NodeIdx, NodeTable, Placement, Sym};

/// The generator's name in configurations and status messages.
pub const NAME: &str = "TopologyPlacementGenerator";

/// PodGroupPodsCount's name.
pub const PODS_COUNT: &str = "PodGroupPodsCount";

/// NodeResourcesFit's name (a PlacementScore plugin with the gate on).
pub const FIT: &str = "NodeResourcesFit";

/// `MaxNodeScore` (and `MaxScore` for placements).
pub const MAX_SCORE: i64 = 100;

/// RunPlacementGeneratePlugins' status when the generator returns no placement.
pub const NO_FEASIBLE_PLACEMENTS: &str = "no feasible placements found";

/// PodGroupPodsCount's NormalizePlacementScore error when no placement has a pod of the group.
pub const NO_PODS_ASSIGNED: &str = "no pods from pod group are assigned to any of the candidate placements";

/// A scheduled pod of the group, as the generator reads it: its `namespace/name` and its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledPod {
    pub key: String,
    pub node: Sym,
}

/// What PlacementGenerate gives a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Generated {
    /// No topology constraint: the parent placement (every node) as it is.
    Parent,
    /// One placement per domain, in the order the scan order first meets each domain (upstream's
    /// come from a Go map: random order).
    Domains(Vec<Placement>),
}

/// `GeneratePlacements` for a group whose topology key is `key` (`None`: no constraint), over the
/// nodes in `scan` (the parent placement: every node in scan order), with the group's `scheduled`
/// pods. `Err` is the plugin's error status message (RunPlacementGeneratePlugins returns it with
/// the plugin's name: the group's cycle ends in an error).
pub fn generate_placements(
    nodes: &NodeTable,
    scan: &[NodeIdx],
    key: Option<Sym>,
    scheduled: &[ScheduledPod],
    resolve: impl Fn(Sym) -> String,
) -> Result<Generated, String> {
    let Some(key) = key else { return Ok(Generated::Parent) };
    let column = nodes.label_column(key);
    let domain_of = |row: NodeIdx| column.map_or(Sym::NONE, |c| c[row.ix()]);
    // `getScheduledPodsTopologyDomain`: every scheduled pod's node, one domain for all of them.
    let mut required: Option<Sym> = None;
    for pod in scheduled {
        let row = nodes.idx_of(pod.node).ok_or_else(|| {
            format!(
                "cannot determine domain for already scheduled pods: getting node for pod {}: nodeinfo not found for node name {:?}",
                pod.key,
                resolve(pod.node)
            )
        })?;
        let domain = domain_of(row);
        if domain.is_none() {
            return Err(format!(
                "cannot determine domain for already scheduled pods: no topology domain found for pod {}",
                pod.key
            ));
        }
        if let Some(d) = required.filter(|d| *d != domain) {
            return Err(format!(
                "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: {}, {}",
                resolve(d),
                resolve(domain)
            ));
        }
        required = Some(domain);
    }
    // Nodes per domain: the domains in first-seen order, each with its rows in scan order. The
    // domain's slot is found through the last one used (nodes of a domain mostly come together)
    // and else a scan of the few domains so far: no hashing per node.
    let mut placements: Vec<Placement> = Vec::new();
    let mut rows: Vec<Vec<NodeIdx>> = Vec::new();
    let mut names: Vec<Sym> = Vec::new();
    let mut last = usize::MAX;
    for &row in scan {
        let domain = domain_of(row);
        if domain.is_none() || required.is_some_and(|d| d != domain) {
            continue;
        }
        if last >= names.len() || names[last] != domain {
            last = match names.iter().position(|n| *n == domain) {
                Some(i) => i,
                None => {
                    names.push(domain);
                    rows.push(Vec::new());
                    names.len() - 1
                }
            };
        }
        rows[last].push(row);
    }
    for (name, rows) in names.into_iter().zip(rows) {
        placements.push(Placement::new(name, rows));
    }
    Ok(Generated::Domains(placements))
}

/// `mostRequestedScore`: `requested` (at most `capacity`) as a share of `capacity`, 0..=100.
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_SCORE / capacity
}

/// NodeResourcesFit's `ScorePlacement` (`scorePlacement` with the MostAllocated scorer over cpu
/// and memory, weight 1 each): the placement's nodes' non-zero requests plus the group's proposed
/// pods' (`proposed`: (cpu millis, memory bytes) each, their non-zero requests), against the
/// nodes' summed allocatable; a resource no node of the placement has is left out.
pub fn fit_placement_score(nodes: &NodeTable, rows: &[NodeIdx], proposed: &[(i64, i64)]) -> i64 {
    let (mut req_cpu, mut req_mem) = proposed.iter().fold((0, 0), |(c, m), p| (c + p.0, m + p.1));
    let (mut alloc_cpu, mut alloc_mem) = (0i64, 0i64);
    for r in rows {
        let i = r.ix();
        if nodes.alloc_cpu_milli[i] != 0 {
            alloc_cpu += nodes.alloc_cpu_milli[i];
            req_cpu += nodes.non_zero_cpu_milli[i];
        }
        if nodes.alloc_memory[i] != 0 {
            alloc_mem += nodes.alloc_memory[i];
            req_mem += nodes.non_zero_memory[i];
        }
    }
    let (mut score, mut weights) = (0, 0);
    for (req, alloc) in [(req_cpu, alloc_cpu), (req_mem, alloc_mem)] {
        if alloc != 0 {
            score += most_requested_score(req, alloc);
            weights += 1;
        }
    }
    if weights == 0 {
        0
    } else {
        score / weights
    }
}

/// PodGroupPodsCount's `ScorePlacement` and `NormalizePlacementScore` for every placement:
/// `scheduled` pods of the group plus each placement's proposed ones, scaled so the most is
/// [`MAX_SCORE`]. `Err` ([`NO_PODS_ASSIGNED`]) when every count is 0.
pub fn pods_count_scores(scheduled: usize, proposed: &[usize]) -> Result<Vec<i64>, &'static str> {
    let counts: Vec<i64> = proposed.iter().map(|p| (scheduled + p) as i64).collect();
    let max = counts.iter().copied().max().unwrap_or(0);
    if max == 0 {
        return Err(NO_PODS_ASSIGNED);
    }
    Ok(counts.iter().map(|c| c * MAX_SCORE / max).collect())
}

/// `findBestPlacement`: the index of the highest of `totals`; among equal totals, the one whose
/// draw (`draws[i]`, upstream's `rand.Int()` per placement) is highest, the first on equal draws.
pub fn best_placement(totals: &[i64], draws: &[u64]) -> usize {
    let mut best = 0;
    for i in 1..totals.len() {
        if totals[i] > totals[best] || (totals[i] == totals[best] && draws[i] > draws[best]) {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::testing::*;
    use crate::snapshot::Snapshot;

    const RACK: &str = "topology.kubernetes.io/rack";

    /// Nodes `(name, rack)` (`""`: no rack label) with 4 CPUs and 32 GiB each.
    fn cluster(nodes: &[(&str, &str)]) -> Snapshot {
        let mut snap = Snapshot::default();
        for (name, rack) in nodes {
            let mut n = MakeNode::new(&mut snap, name).capacity(4000, 32 << 30);
            if !rack.is_empty() {
                n = n.label(RACK, rack);
            }
            n.add();
        }
        snap
    }

    fn generate(snap: &mut Snapshot, key: Option<&str>, scheduled: &[(&str, &str)]) -> Result<Generated, String> {
        let key = key.map(|k| snap.interner.intern(k));
        let scheduled: Vec<ScheduledPod> = scheduled
            .iter()
            .map(|(pod, node)| ScheduledPod { key: format!("ns/{pod}"), node: snap.interner.intern(node) })
            .collect();
        let snap = &*snap;
        generate_placements(&snap.nodes, snap.scan_order(), key, &scheduled, |s| snap.interner.resolve(s).to_string())
    }

    /// The placements as (domain, node names), sorted by domain (upstream's come in map order).
    fn named(snap: &Snapshot, g: &Generated) -> Vec<(String, Vec<String>)> {
        let Generated::Domains(ps) = g else { return vec![("<parent>".into(), vec![])] };
        let mut out: Vec<(String, Vec<String>)> = ps
            .iter()
            .map(|p| {
                let nodes = p.rows.iter().map(|r| snap.node_name(*r).to_string()).collect();
                (snap.interner.resolve(p.name).to_string(), nodes)
            })
            .collect();
        out.sort();
        out
    }

    /// Upstream's `TestTopologyPlacementGenerator` cases: (name, nodes, topology key, scheduled
    /// pods (pod, node), the placements by domain, or the error's words).
    #[test]
    fn generate_placements_cases() {
        type Case<'a> = (
            &'a str,
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
            &'a [(&'a str, &'a str)],
            Result<&'a [(&'a str, &'a [&'a str])], &'a str>,
        );
        let three: &[(&str, &str)] = &[("node1", "rack1"), ("node2", "rack1"), ("node3", "rack2")];
        let cases: &[Case] = &[
            ("no topology constraint: the parent placement", three, None, &[], Ok(&[("<parent>", &[])])),
            (
                "one placement per domain",
                three,
                Some(RACK),
                &[],
                Ok(&[("rack1", &["node1", "node2"]), ("rack2", &["node3"])]),
            ),
            (
                "nodes without the label are left out",
                &[("node1", "rack1"), ("node2", ""), ("node3", "rack2")],
                Some(RACK),
                &[],
                Ok(&[("rack1", &["node1"]), ("rack2", &["node3"])]),
            ),
            ("no node has the label: no placement", &[("node1", ""), ("node2", "")], Some(RACK), &[], Ok(&[])),
            ("scheduled pods pin their domain", three, Some(RACK), &[("p1", "node3")], Ok(&[("rack2", &["node3"])])),
            (
                "scheduled pods in one domain",
                three,
                Some(RACK),
                &[("p1", "node1"), ("p2", "node2")],
                Ok(&[("rack1", &["node1", "node2"])]),
            ),
            (
                "scheduled pods in two domains",
                three,
                Some(RACK),
                &[("p1", "node1"), ("p2", "node3")],
                Err("more than 1 domain found for pod group: rack1, rack2"),
            ),
            (
                "a scheduled pod on a node without the label",
                &[("node1", "rack1"), ("node2", "")],
                Some(RACK),
                &[("p1", "node2")],
                Err("no topology domain found for pod ns/p1"),
            ),
            (
                "a scheduled pod on a node not in the snapshot",
                three,
                Some(RACK),
                &[("p1", "node9")],
                Err("getting node for pod ns/p1"),
            ),
        ];
        for (name, nodes, key, scheduled, want) in cases {
            let mut snap = cluster(nodes);
            let got = generate(&mut snap, *key, scheduled);
            match (got, want) {
                (Ok(g), Ok(want)) => {
                    let want: Vec<(String, Vec<String>)> = want
                        .iter()
                        .map(|(d, ns)| (d.to_string(), ns.iter().map(|n| n.to_string()).collect()))
                        .collect();
                    assert_eq!(named(&snap, &g), want, "{name}");
                }
                (Err(e), Err(words)) => {
                    assert!(e.starts_with("cannot determine domain for already scheduled pods: "), "{name}: {e}");
                    assert!(e.contains(words), "{name}: {e}");
                }
                (got, _) => panic!("{name}: got {got:?}"),
            }
        }
    }

    /// A placement's rows keep the scan order (zones round-robin), and its mask matches its rows.
    #[test]
    fn placements_keep_the_scan_order() {
        let mut snap = Snapshot::default();
        for (name, zone, rack) in [("a1", "z1", "r1"), ("a2", "z1", "r1"), ("b1", "z2", "r1"), ("b2", "z2", "r2")] {
            MakeNode::new(&mut snap, name)
                .capacity(1000, 1 << 30)
                .label("topology.kubernetes.io/zone", zone)
                .label(RACK, rack)
                .add();
        }
        let Ok(Generated::Domains(ps)) = generate(&mut snap, Some(RACK), &[]) else { panic!() };
        let names = |p: &Placement| p.rows.iter().map(|r| snap.node_name(*r).to_string()).collect::<Vec<_>>();
        assert_eq!(names(&ps[0]), ["a1", "b1", "a2"], "scan order a1, b1, a2, b2");
        assert_eq!(names(&ps[1]), ["b2"]);
        for p in &ps {
            for r in 0..snap.nodes.len() as u32 {
                assert_eq!(p.contains(NodeIdx(r)), p.rows.contains(&NodeIdx(r)));
            }
        }
    }

    /// `scorePlacement` with MostAllocated: (cpu, memory) allocatable per node, their non-zero
    /// requests, the proposed pods' requests -> score.
    #[test]
    fn fit_placement_score_is_most_allocated_over_the_placement() {
        let gib = 1i64 << 30;
        type Case<'a> = (&'a str, &'a [(i64, i64)], &'a [(i64, i64)], i64);
        let cases: &[Case] = &[
            ("empty placement, nothing proposed", &[(4000, 32 * gib)], &[], 0),
            // cpu 2000/4000 = 50, memory 16/32 = 50.
            ("half of cpu and memory", &[(4000, 32 * gib)], &[(2000, 16 * gib)], 50),
            // cpu 2000/8000 = 25, memory 48/64 capped... 48/64 = 75 -> (25 + 75) / 2 = 50.
            ("summed over two nodes", &[(4000, 32 * gib), (4000, 32 * gib)], &[(2000, 48 * gib)], 50),
            // More than allocatable counts as allocatable: cpu 100, memory 0 -> 50.
            ("capped at allocatable", &[(1000, 32 * gib)], &[(3000, 0)], 50),
            // 400m of 400 cores rounds down to 0: the tas workloads' first gangs all score 0.
            ("a gang of 4 in a rack of 100 rounds to 0", &[(4000, 32 * gib); 100], &[(100, 100 << 20); 4], 0),
        ];
        for (name, alloc, proposed, want) in cases {
            let mut snap = Snapshot::default();
            for (i, (cpu, mem)) in alloc.iter().enumerate() {
                MakeNode::new(&mut snap, &format!("n{i}")).capacity(*cpu, *mem).add();
            }
            let rows: Vec<NodeIdx> = (0..alloc.len() as u32).map(NodeIdx).collect();
            assert_eq!(fit_placement_score(&snap.nodes, &rows, proposed), *want, "{name}");
        }
        // Placed pods count with their non-zero requests (100m / 200Mi for a pod without requests).
        let mut snap = cluster(&[("n1", "r1")]);
        MakePod::new(&mut snap, "p").place("n1");
        let score = fit_placement_score(&snap.nodes, &[NodeIdx(0)], &[(1900, 0)]);
        // cpu 2000 of 4000: 50; memory 200Mi of 32Gi: 0.
        assert_eq!(score, 50 / 2);
    }

    /// `TestPodGroupPodsCount`-style cases: (scheduled, proposed per placement) -> normalized scores.
    #[test]
    fn pods_count_scores_normalize_to_the_most() {
        type Case<'a> = (usize, &'a [usize], Result<&'a [i64], &'a str>);
        let cases: &[Case] = &[
            (0, &[4, 4, 4], Ok(&[100, 100, 100])),
            (0, &[1, 2, 4], Ok(&[25, 50, 100])),
            (2, &[1, 2], Ok(&[75, 100])),
            (0, &[3], Ok(&[100])),
            (0, &[0, 0], Err(NO_PODS_ASSIGNED)),
            (1, &[0, 0], Ok(&[100, 100])),
        ];
        for (scheduled, proposed, want) in cases {
            assert_eq!(pods_count_scores(*scheduled, proposed), want.map(|w| w.to_vec()), "{scheduled} {proposed:?}");
        }
    }

    /// `findBestPlacement`: the highest total; ties go to the highest draw; on equal draws the first.
    #[test]
    fn best_placement_breaks_ties_by_draw() {
        let cases: &[(&[i64], &[u64], usize)] = &[
            (&[10], &[0], 0),
            (&[10, 20, 15], &[9, 1, 5], 1),
            (&[20, 20, 15], &[1, 9, 50], 1),
            (&[20, 20, 20], &[7, 7, 7], 0),
            (&[0, 0, 0], &[3, 8, 5], 1),
        ];
        for (totals, draws, want) in cases {
            assert_eq!(best_placement(totals, draws), *want, "{totals:?} {draws:?}");
        }
    }
}
