//! TaintToleration: `NoSchedule`/`NoExecute` taints must be tolerated (Filter); fewer intolerable
//! `PreferNoSchedule` taints score higher (Score, normalized in reverse). `plugins/tainttoleration`.
//!
//! Nodes share taint lists, so both verdicts are computed once per distinct taint set per pod and
//! looked up per node.

use crate::framework::sign::{keys, tolerations_signature, Sign, SignBuilder};
use crate::framework::{default_normalize_score, CycleCx, CycleState, Plugin, Reject, Status, MAX_NODE_SCORE};
use crate::snapshot::PodInfo;
use crate::snapshot::{tolerations_tolerate, NodeIdx, TaintEffect, Toleration};

pub const NAME: &str = "TaintToleration";
/// The Filter reason (v1.37 `TaintToleration.Filter`).
pub const ERR_REASON_UNTOLERATED: &str = "node(s) had untolerated taint(s)";

/// "No untolerated taint" in the per-set filter table.
const TOLERATED: u32 = u32::MAX;

pub struct TaintToleration;

/// For each taint set: the index of the first untolerated NoSchedule/NoExecute taint (or `TOLERATED`).
fn filter_table(cx: CycleCx<'_>) -> Vec<u32> {
    let sets = &cx.snap.nodes.taint_sets;
    (0..sets.len() as u32)
        .map(|s| {
            sets.get(s)
                .iter()
                .position(|t| {
                    matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
                        && !tolerations_tolerate(&cx.pod.tolerations, t)
                })
                .map_or(TOLERATED, |i| i as u32)
        })
        .collect()
}

/// For each taint set: how many PreferNoSchedule taints no toleration (of effect empty or
/// PreferNoSchedule) tolerates.
fn score_table(cx: CycleCx<'_>) -> Vec<i64> {
    let prefer: Vec<Toleration> = cx
        .pod
        .tolerations
        .iter()
        .filter(|t| t.effect.is_none() || t.effect == Some(TaintEffect::PreferNoSchedule))
        .copied()
        .collect();
    let sets = &cx.snap.nodes.taint_sets;
    (0..sets.len() as u32)
        .map(|s| {
            sets.get(s)
                .iter()
                .filter(|t| t.effect == TaintEffect::PreferNoSchedule && !tolerations_tolerate(&prefer, t))
                .count() as i64
        })
        .collect()
}

/// The per-taint-set score table, and whether it is all zero (no node has a PreferNoSchedule
/// taint the pod does not tolerate: every score is 0, and normalized in reverse, 100).
struct PreScoreState {
    table: Vec<i64>,
    all_zero: bool,
}

impl PreScoreState {
    fn new(table: Vec<i64>) -> Self {
        let all_zero = table.iter().all(|&c| c == 0);
        PreScoreState { table, all_zero }
    }
}

impl Plugin for TaintToleration {
    fn filter_reads_only_columns(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sig.put(keys::TOLERATIONS, tolerations_signature(pod));
        Sign::Signed
    }

    fn score_state_missing(&self) -> Option<&'static str> {
        Some("failed to read \"PreScoreTaintToleration\" from cycleState: not found")
    }

    /// The pod tolerates every NoSchedule and NoExecute taint of every taint set (one check per
    /// distinct set of taints, as each filter call makes, not per node).
    fn filter_rejects_none(&self, cx: CycleCx<'_>, _state: &CycleState) -> bool {
        filter_table(cx).iter().all(|&t| t == TOLERATED)
    }

    /// Filter rejects exactly the nodes with an untolerated NoSchedule/NoExecute taint.
    fn filter_rejects_untolerated_taints(&self) -> bool {
        true
    }

    fn filter(&self, cx: CycleCx<'_>, _state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let table = filter_table(cx);
        if table.iter().all(|&t| t == TOLERATED) {
            return;
        }
        let col = &cx.snap.nodes.taint_set;
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            let set = col[n.ix()];
            let t = table[set as usize];
            if t != TOLERATED {
                *o = Some(Reject::unresolvable(((set as u64) << 32) | t as u64));
            }
        }
    }

    /// v1.37 words every untolerated-taint rejection the same way, without the taint (which is
    /// only logged), so that nodes with different taints count under one reason.
    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, _reject: Reject) -> Vec<String> {
        vec![ERR_REASON_UNTOLERATED.to_string()]
    }

    fn pre_score(&self, cx: CycleCx<'_>, state: &mut CycleState, _feasible: &[NodeIdx]) -> Status {
        state.write(NAME, PreScoreState::new(score_table(cx)));
        Status::success()
    }

    /// No node carries a PreferNoSchedule taint the pod does not tolerate (PreScore's table is
    /// all zero): every node scores 0, normalized to 100.
    fn score_is_uniform(&self, _cx: CycleCx<'_>, state: &CycleState) -> bool {
        state.read::<PreScoreState>(NAME).is_some_and(|s| s.all_zero)
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let owned;
        let st = match state.read::<PreScoreState>(NAME) {
            Some(s) => s,
            None => {
                owned = PreScoreState::new(score_table(cx));
                &owned
            }
        };
        if st.all_zero {
            out.fill(0);
            return Ok(());
        }
        let col = &cx.snap.nodes.taint_set;
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            *o = st.table[col[n.ix()] as usize];
        }
        Ok(())
    }

    fn normalize(&self, _cx: CycleCx<'_>, state: &CycleState, _nodes: &[NodeIdx], scores: &mut [i64]) {
        if state.read::<PreScoreState>(NAME).is_some_and(|s| s.all_zero) {
            // What the reverse normalization makes of all-zero scores, without the pass for the maximum.
            scores.fill(MAX_NODE_SCORE);
            return;
        }
        default_normalize_score(MAX_NODE_SCORE, true, scores);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{filter_one, score_all};
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::{Snapshot, TolerationOp::*};
    use TaintEffect::*;

    type Tol = (&'static str, crate::snapshot::TolerationOp, &'static str, Option<TaintEffect>);

    #[test]
    fn filter_table_cases() {
        // taint_toleration_test.go TestTaintTolerationFilter: (name, node taints, pod tolerations, want reason).
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str, TaintEffect)>, Vec<Tol>, Option<&'a str>);
        let cases: Vec<Case> = vec![
            (
                "no tolerations, tainted node",
                vec![("dedicated", "user1", NoSchedule)],
                vec![],
                Some(ERR_REASON_UNTOLERATED),
            ),
            (
                "toleration matches",
                vec![("dedicated", "user1", NoSchedule)],
                vec![("dedicated", Equal, "user1", Some(NoSchedule))],
                None,
            ),
            (
                "toleration value differs",
                vec![("dedicated", "user1", NoSchedule)],
                vec![("dedicated", Equal, "user2", Some(NoSchedule))],
                Some(ERR_REASON_UNTOLERATED),
            ),
            (
                "exists tolerates any value",
                vec![("foo", "bar", NoSchedule)],
                vec![("foo", Exists, "", Some(NoSchedule))],
                None,
            ),
            (
                "multiple taints, all tolerated",
                vec![("dedicated", "user2", NoSchedule), ("foo", "bar", NoSchedule)],
                vec![("dedicated", Equal, "user2", Some(NoSchedule)), ("foo", Exists, "", Some(NoSchedule))],
                None,
            ),
            (
                "effect mismatch",
                vec![("foo", "bar", NoSchedule)],
                vec![("foo", Equal, "bar", Some(PreferNoSchedule))],
                Some(ERR_REASON_UNTOLERATED),
            ),
            ("PreferNoSchedule taint is ignored by filter", vec![("foo", "bar", PreferNoSchedule)], vec![], None),
            (
                "empty effect tolerates all effects",
                vec![("foo", "bar", NoExecute)],
                vec![("foo", Equal, "bar", None)],
                None,
            ),
            (
                "empty key with Exists tolerates everything",
                vec![("a", "b", NoSchedule), ("c", "d", NoExecute)],
                vec![("", Exists, "", None)],
                None,
            ),
        ];
        for (name, taints, tols, want) in cases {
            let mut snap = Snapshot::new();
            let mut n = MakeNode::new(&mut snap, "n");
            for (k, v, e) in &taints {
                n = n.taint(k, v, *e);
            }
            n.add();
            let mut p = MakePod::new(&mut snap, "p");
            for (k, op, v, e) in &tols {
                p = p.toleration(k, *op, v, *e);
            }
            let pod = p.build();
            let got = filter_one(&TaintToleration, &snap, &pod, "n");
            match want {
                None => assert!(got.is_ok(), "{name}: {got:?}"),
                Some(r) => {
                    let (code, reasons) = got.expect_err(name);
                    assert_eq!(code, crate::framework::Code::UnschedulableAndUnresolvable, "{name}");
                    assert_eq!(reasons, vec![r.to_string()], "{name}");
                }
            }
        }
    }

    #[test]
    fn score_table_cases() {
        // TestTaintTolerationScore.
        type Case = (&'static str, Vec<Tol>, Vec<Vec<(&'static str, &'static str, TaintEffect)>>, Vec<i64>);
        let cases: Vec<Case> = vec![
            (
                "node with taints tolerated by the pod gets higher score",
                vec![("foo", Equal, "bar", Some(PreferNoSchedule))],
                vec![vec![("foo", "bar", PreferNoSchedule)], vec![("foo", "blah", PreferNoSchedule)]],
                vec![100, 0],
            ),
            (
                "all taints tolerated",
                vec![
                    ("cpu-type", Equal, "arm64", Some(PreferNoSchedule)),
                    ("disk-type", Equal, "ssd", Some(PreferNoSchedule)),
                ],
                vec![
                    vec![],
                    vec![("cpu-type", "arm64", PreferNoSchedule)],
                    vec![("cpu-type", "arm64", PreferNoSchedule), ("disk-type", "ssd", PreferNoSchedule)],
                ],
                vec![100, 100, 100],
            ),
            (
                "more intolerable taints score lower",
                vec![("foo", Equal, "bar", Some(PreferNoSchedule))],
                vec![
                    vec![],
                    vec![("cpu-type", "arm64", PreferNoSchedule)],
                    vec![("cpu-type", "arm64", PreferNoSchedule), ("disk-type", "ssd", PreferNoSchedule)],
                ],
                vec![100, 50, 0],
            ),
            (
                "only PreferNoSchedule taints count",
                vec![("cpu-type", Equal, "arm64", Some(NoSchedule)), ("disk-type", Equal, "ssd", Some(NoSchedule))],
                vec![
                    vec![],
                    vec![("cpu-type", "arm64", NoSchedule)],
                    vec![("cpu-type", "arm64", PreferNoSchedule), ("disk-type", "ssd", PreferNoSchedule)],
                ],
                vec![100, 100, 0],
            ),
            (
                "no taints, no tolerations",
                vec![],
                vec![vec![("cpu-type", "arm64", PreferNoSchedule)], vec![]],
                vec![0, 100],
            ),
        ];
        for (name, tols, nodes, want) in cases {
            let mut snap = Snapshot::new();
            for (i, taints) in nodes.iter().enumerate() {
                let mut n = MakeNode::new(&mut snap, &format!("n{i}"));
                for (k, v, e) in taints {
                    n = n.taint(k, v, *e);
                }
                n.add();
            }
            let mut p = MakePod::new(&mut snap, "p");
            for (k, op, v, e) in &tols {
                p = p.toleration(k, *op, v, *e);
            }
            let pod = p.build();
            assert_eq!(score_all(&TaintToleration, &snap, &pod), Some(want), "{name}");
        }
    }
}
