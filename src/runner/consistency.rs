//! The end-of-run consistency check (`cacheConsistent`): the snapshot, the assume cache and the
//! node agent must tell the same story, and no cache transition may have been refused.
//!
//! What is compared, pod by pod and node by node:
//! - where the driver says each pod is against the cache's state word (Queued: Initial or
//!   Forgotten; Bound on node n: Bound on n; Deleted: Deleted; Assumed: never at the end of a run);
//! - the cache against the snapshot: a pod holds a node in the cache exactly when the snapshot has
//!   it placed there;
//! - per node, the snapshot's pod list and requested columns (cpu, memory, pod count) against the
//!   pods the cache says hold the node and the sum of their requests;
//! - the cache against the agent: a pod this run created is held by the agent, on the same node,
//!   exactly when it is bound (a deleted pod may still be stopping at the agent, so it is not checked);
//! - every refused cache transition, as reported by whoever attempted it.

use std::collections::BTreeMap;

use crate::cache::{AssumeCache, PodState as CacheState};
use crate::ids::PodUid;
use crate::snapshot::{NodeIdx, Snapshot, Sym};

/// Where the driver says a pod is at the end of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expected {
    Queued,
    Assumed(Sym),
    Bound(Sym),
    Deleted,
}

/// One pod the driver knows.
pub(super) struct PodLine<'a> {
    pub uid: PodUid,
    pub name: &'a str,
    pub expected: Expected,
    /// Created by this run (the agent knows only these; `--cluster` pods are not its).
    pub created_by_run: bool,
}

/// The differences found; empty when the three views agree and no transition was refused.
pub(super) fn differences(
    snap: &Snapshot,
    cache: &AssumeCache,
    pods: &[PodLine<'_>],
    agent_pods: &BTreeMap<PodUid, String>,
    transition_errors: &[String],
) -> Vec<String> {
    let mut diffs: Vec<String> = transition_errors.iter().map(|e| format!("assume cache: {e}")).collect();
    let node_name = |n: u32| snap.interner.resolve(Sym(n)).to_string();
    for p in pods {
        let (state, node) = cache.state(p.uid);
        let placed = snap.pods.get(&p.uid).map(|pp| pp.node);
        let name = p.name;
        match p.expected {
            Expected::Queued => {
                if !matches!(state, CacheState::Initial | CacheState::Forgotten) {
                    diffs.push(format!("{name}: queued, but {state:?} in the assume cache"));
                }
                if p.created_by_run && agent_pods.contains_key(&p.uid) {
                    diffs.push(format!("{name}: queued, but held by the agent"));
                }
            }
            Expected::Assumed(_) => diffs.push(format!("{name}: still assumed at the end of the run")),
            Expected::Bound(n) => {
                if (state, node) != (CacheState::Bound, Some(n.0)) {
                    let what = node.map_or(String::new(), |x| format!(" on {}", node_name(x)));
                    diffs.push(format!(
                        "{name}: bound on {}, but {state:?}{what} in the assume cache",
                        snap.interner.resolve(n)
                    ));
                }
                if p.created_by_run {
                    let want = snap.interner.resolve(n);
                    match agent_pods.get(&p.uid) {
                        Some(a) if a == want => {}
                        Some(a) => diffs.push(format!("{name}: bound on {want}, the agent has it on {a}")),
                        None => diffs.push(format!("{name}: bound on {want}, unknown to the agent")),
                    }
                }
            }
            Expected::Deleted => {
                if state != CacheState::Deleted {
                    diffs.push(format!("{name}: deleted, but {state:?} in the assume cache"));
                }
            }
        }
        match (node, placed) {
            (Some(c), Some(s)) if c == s.0 => {}
            (None, None) => {}
            (c, s) => diffs.push(format!(
                "{name}: on {} in the assume cache, on {} in the snapshot",
                c.map_or("no node".to_string(), node_name),
                s.map_or("no node".to_string(), |s| snap.interner.resolve(s).to_string())
            )),
        }
    }
    let known: ahash::AHashSet<PodUid> = pods.iter().map(|p| p.uid).collect();
    // Per node: the pods the cache says hold it, and the sum of their requests.
    let t = &snap.nodes;
    let mut holders: Vec<Vec<PodUid>> = vec![Vec::new(); t.len()];
    for (uid, state, node) in cache.pods() {
        if !known.contains(&uid) {
            diffs.push(format!("{uid}: {state:?} in the assume cache, unknown to the run"));
        }
        let Some(n) = node else { continue };
        match t.idx_of(Sym(n)) {
            Some(i) => holders[i.ix()].push(uid),
            None => diffs.push(format!("{uid}: {state:?} in the assume cache on {}, not a node", node_name(n))),
        }
    }
    for (i, cached) in holders.iter_mut().enumerate() {
        let node = snap.node_name(NodeIdx(i as u32));
        let mut listed = t.pods[i].clone();
        listed.sort_unstable();
        cached.sort_unstable();
        if listed != *cached {
            diffs.push(format!(
                "node {node}: {} pods in the snapshot, {} in the assume cache{}",
                listed.len(),
                cached.len(),
                first_difference(&listed, cached).map_or(String::new(), |u| format!(" (first differing: {u})"))
            ));
        }
        let (mut cpu, mut memory) = (0i64, 0i64);
        for uid in cached.iter() {
            if let Some(pp) = snap.pods.get(uid) {
                cpu += pp.info.requests.cpu_milli;
                memory += pp.info.requests.memory;
            }
        }
        let count = cached.len() as u32;
        if (t.req_cpu_milli[i], t.req_memory[i], t.pod_count[i]) != (cpu, memory, count) {
            diffs.push(format!(
                "node {node}: requested cpu {}m, memory {}, {} pods in the snapshot; {cpu}m, {memory}, {count} pods from the assume cache",
                t.req_cpu_milli[i], t.req_memory[i], t.pod_count[i]
            ));
        }
    }
    diffs
}

/// The first uid in one sorted list and not the other.
fn first_difference(a: &[PodUid], b: &[PodUid]) -> Option<PodUid> {
    let only_a = a.iter().find(|u| b.binary_search(u).is_err());
    let only_b = b.iter().find(|u| a.binary_search(u).is_err());
    [only_a, only_b].into_iter().flatten().min().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::testing::{MakeNode, MakePod};

    /// Two nodes; pod `a` bound on n1, `b` bound on n2, `q` queued, `d` deleted; the agent holds
    /// `a` and `b`. Consistent.
    struct World {
        snap: Snapshot,
        cache: AssumeCache,
        lines: Vec<(PodUid, &'static str, Expected)>,
        agent: BTreeMap<PodUid, String>,
        errors: Vec<String>,
    }

    fn world() -> World {
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "n1").capacity(4000, 1 << 30).add();
        MakeNode::new(&mut snap, "n2").capacity(4000, 1 << 30).add();
        let a = MakePod::new(&mut snap, "a").req(500, 1 << 20).place("n1");
        let b = MakePod::new(&mut snap, "b").req(700, 1 << 21).place("n2");
        let q = MakePod::new(&mut snap, "q").build();
        let d = MakePod::new(&mut snap, "d").build();
        let (n1, n2) = (snap.interner.get("n1").unwrap(), snap.interner.get("n2").unwrap());
        let cache = AssumeCache::new();
        cache.assume(a.uid, n1.0).unwrap();
        cache.finish_binding(a.uid).unwrap();
        cache.assume(b.uid, n2.0).unwrap();
        cache.finish_binding(b.uid).unwrap();
        cache.assume(q.uid, n1.0).unwrap();
        cache.forget(q.uid).unwrap();
        cache.delete(d.uid).unwrap();
        let agent = [(a.uid, "n1".to_string()), (b.uid, "n2".to_string())].into();
        let lines = vec![
            (a.uid, "a", Expected::Bound(n1)),
            (b.uid, "b", Expected::Bound(n2)),
            (q.uid, "q", Expected::Queued),
            (d.uid, "d", Expected::Deleted),
        ];
        World { snap, cache, lines, agent, errors: Vec::new() }
    }

    fn check(w: &World) -> Vec<String> {
        let lines: Vec<PodLine> = w
            .lines
            .iter()
            .map(|&(uid, name, expected)| PodLine { uid, name, expected, created_by_run: true })
            .collect();
        differences(&w.snap, &w.cache, &lines, &w.agent, &w.errors)
    }

    fn uid(w: &World, name: &str) -> PodUid {
        w.lines.iter().find(|l| l.1 == name).unwrap().0
    }

    #[test]
    fn a_consistent_state_has_no_differences() {
        assert_eq!(check(&world()), Vec::<String>::new());
    }

    #[test]
    fn each_inconsistency_is_reported() {
        type Break = fn(&mut World);
        let cases: Vec<(&str, Break, &[&str])> = vec![
            ("a refused transition", |w| w.errors.push("pod-1: cannot forget a pod in state Bound".into()), &[
                "assume cache: pod-1: cannot forget a pod in state Bound",
            ]),
            (
                "the agent has a bound pod on another node",
                |w| {
                    let a = uid(w, "a");
                    w.agent.insert(a, "n2".into());
                },
                &["a: bound on n1, the agent has it on n2"],
            ),
            (
                "the agent lost a bound pod",
                |w| {
                    let b = uid(w, "b");
                    w.agent.remove(&b);
                },
                &["b: bound on n2, unknown to the agent"],
            ),
            (
                "the agent holds a queued pod",
                |w| {
                    let q = uid(w, "q");
                    w.agent.insert(q, "n1".into());
                },
                &["q: queued, but held by the agent"],
            ),
            (
                "the cache forgot a bound pod the snapshot still holds",
                |w| {
                    let a = uid(w, "a");
                    w.cache.delete(a).unwrap();
                },
                &[
                    "a: bound on n1, but Deleted in the assume cache",
                    "a: on no node in the assume cache, on n1 in the snapshot",
                    "node n1: 1 pods in the snapshot, 0 in the assume cache",
                    "node n1: requested cpu 500m, memory 1048576, 1 pods in the snapshot; 0m, 0, 0 pods from the assume cache",
                ],
            ),
            (
                "the snapshot dropped a pod the cache holds",
                |w| {
                    let b = uid(w, "b");
                    w.snap.unplace_pod(b);
                },
                &[
                    "b: on n2 in the assume cache, on no node in the snapshot",
                    "node n2: 0 pods in the snapshot, 1 in the assume cache",
                ],
            ),
            (
                "the node's requested columns drifted",
                |w| {
                    w.snap.nodes.req_cpu_milli[0] += 1;
                },
                &["node n1: requested cpu 501m, memory 1048576, 1 pods in the snapshot; 500m, 1048576, 1 pods from the assume cache"],
            ),
            (
                "a pod still assumed, and one the run does not know",
                |w| {
                    w.lines[0].2 = Expected::Assumed(w.snap.interner.get("n1").unwrap());
                    w.cache.assume(PodUid(999_999), 0).unwrap();
                },
                &["a: still assumed at the end of the run", "pod-000f423f: Assumed in the assume cache, unknown to the run"],
            ),
        ];
        for (what, brk, want) in cases {
            let mut w = world();
            brk(&mut w);
            let got = check(&w);
            for line in want {
                assert!(got.iter().any(|g| g.starts_with(line)), "{what}: expected {line:?} in {got:#?}");
            }
            assert!(!got.is_empty(), "{what}");
        }
    }

    #[test]
    fn pods_of_the_initial_cluster_are_not_the_agents() {
        let w = world();
        let mut lines: Vec<PodLine> = w
            .lines
            .iter()
            .map(|&(uid, name, expected)| PodLine { uid, name, expected, created_by_run: false })
            .collect();
        let agent = BTreeMap::new();
        assert_eq!(differences(&w.snap, &w.cache, &lines, &agent, &[]), Vec::<String>::new());
        lines[0].created_by_run = true;
        let got = differences(&w.snap, &w.cache, &lines, &agent, &[]);
        assert_eq!(got, vec!["a: bound on n1, unknown to the agent".to_string()]);
    }
}
