//! NodeAffinity: `spec.nodeSelector` AND required node affinity (Filter), preferred terms (Score),
//! plus the scheduler-enforced `addedAffinity` of NodeAffinityArgs. `plugins/nodeaffinity`.

use super::helper::{ResolvedLabelSet, ResolvedSelector, ResolvedTerm};
use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{
    default_normalize_score, Code, CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status, MAX_NODE_SCORE,
};
use crate::snapshot::PodInfo;
use crate::snapshot::{NodeIdx, NodeSelector, PreferredTerm, Sym};

pub const NAME: &str = "NodeAffinity";
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

const DETAIL_POD: u64 = 0;
const DETAIL_ENFORCED: u64 = 1;

/// The plugin with its compiled `addedAffinity`.
#[derive(Default)]
pub struct NodeAffinity {
    pub added_required: Option<NodeSelector>,
    pub added_preferred: Vec<PreferredTerm>,
    /// `addedAffinity` lists preferred terms (upstream's non-nil `addedPrefSchedTerms`).
    pub added_preferred_set: bool,
}

impl NodeAffinity {
    /// The union over terms of `metadata.name In` names, when every term pins names (PreFilterResult).
    /// `Some(empty)` means the terms conflict.
    fn pinned_node_names(sel: &NodeSelector) -> Option<Vec<Sym>> {
        let mut union: Option<Vec<Sym>> = None;
        for term in &sel.terms {
            let mut term_names: Option<Vec<Sym>> = term.pinned.clone();
            if term.pinned.is_none() {
                for f in term.fields.iter().filter(|f| f.in_set) {
                    term_names = Some(match term_names {
                        None => vec![f.name],
                        Some(prev) => prev.into_iter().filter(|n| *n == f.name).collect(),
                    });
                }
            }
            let names = term_names?;
            let u = union.get_or_insert_with(Vec::new);
            for n in names {
                if !u.contains(&n) {
                    u.push(n);
                }
            }
        }
        union
    }
}

impl Plugin for NodeAffinity {
    fn filter_reads_only_columns(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn enforced_node_selector(&self) -> Option<&NodeSelector> {
        self.added_required.as_ref()
    }

    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sig.put(keys::NODE_AFFINITY, &pod.sign.node_affinity);
        sig.put(keys::NODE_SELECTOR, &pod.node_selector);
        Sign::Signed
    }

    fn pre_filter(&self, cx: CycleCx<'_>, _state: &mut CycleState) -> (Status, PreFilterResult) {
        let pod = cx.pod;
        if pod.required_affinity.is_none() && self.added_required.is_none() && pod.node_selector.is_empty() {
            return (Status::skip(), PreFilterResult::default());
        }
        let Some(req) = &pod.required_affinity else { return (Status::success(), PreFilterResult::default()) };
        if req.terms.is_empty() {
            return (Status::success(), PreFilterResult::default());
        }
        match Self::pinned_node_names(req) {
            Some(names) if names.is_empty() => {
                (Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_CONFLICT), PreFilterResult::default())
            }
            Some(names) => (Status::success(), PreFilterResult { node_names: Some(names) }),
            None => (Status::success(), PreFilterResult::default()),
        }
    }

    fn filter(&self, cx: CycleCx<'_>, _state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let snap = cx.snap;
        let added = self.added_required.as_ref().map(|s| ResolvedSelector::new(snap, &s.terms));
        let selector = ResolvedLabelSet::new(snap, &cx.pod.node_selector);
        let required = cx.pod.required_affinity.as_ref().map(|s| ResolvedSelector::new(snap, &s.terms));
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            if added.as_ref().is_some_and(|a| !a.matches(snap, n)) {
                *o = Some(Reject::unresolvable(DETAIL_ENFORCED));
            } else if !selector.matches(n) || required.as_ref().is_some_and(|r| !r.matches(snap, n)) {
                *o = Some(Reject::unresolvable(DETAIL_POD));
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, reject: Reject) -> Vec<String> {
        let r = if reject.detail == DETAIL_ENFORCED { ERR_REASON_ENFORCED } else { ERR_REASON_POD };
        vec![r.to_string()]
    }

    fn pre_score(&self, cx: CycleCx<'_>, _state: &mut CycleState, _feasible: &[NodeIdx]) -> Status {
        // `NewPreferredSchedulingTerms` fails on any term with a parse error: an Error status.
        if let Some(i) = cx.pod.preferred_affinity.iter().position(|t| !t.term.valid) {
            return Status::new(
                Code::Error,
                format!("[{i}]: preferred node affinity term {i} has an invalid requirement (key, operator or values)"),
            );
        }
        // Upstream skips only when the pod's list is nil and addedAffinity has no preferred terms:
        // a pod with only empty or weight-0 terms is scored (0 everywhere).
        if !cx.pod.preferred_affinity_set && !self.added_preferred_set {
            return Status::skip();
        }
        Status::success()
    }

    fn score(&self, cx: CycleCx<'_>, _state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let snap = cx.snap;
        let terms: Vec<(i64, ResolvedTerm<'_>)> = self
            .added_preferred
            .iter()
            .chain(cx.pod.preferred_affinity.iter())
            .filter(|t| t.weight != 0)
            .map(|t| (t.weight as i64, ResolvedTerm::new(snap, &t.term)))
            .collect();
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            *o = terms.iter().filter(|(_, t)| t.matches(snap, n)).map(|(w, _)| *w).sum();
        }
        Ok(())
    }

    fn normalize(&self, _cx: CycleCx<'_>, _state: &CycleState, _nodes: &[NodeIdx], scores: &mut [i64]) {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{filter_one, score_all};
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::{LabelOp, LabelRequirement, NameRequirement, NodeTerm, Snapshot};
    use smallvec::smallvec;

    #[test]
    fn filter_table() {
        // node_affinity_test.go TestNodeAffinity (a selection), as (name, node labels, pod builder, want pass).
        type Build = fn(MakePod<'_>) -> MakePod<'_>;
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Build, bool);
        let cases: Vec<Case> = vec![
            ("no selector schedules anywhere", vec![], |p| p, true),
            ("missing labels", vec![], |p| p.node_selector("foo", "bar"), false),
            ("same labels", vec![("foo", "bar")], |p| p.node_selector("foo", "bar"), true),
            (
                "node labels are superset",
                vec![("foo", "bar"), ("baz", "blah")],
                |p| p.node_selector("foo", "bar"),
                true,
            ),
            (
                "node labels are subset",
                vec![("foo", "bar")],
                |p| p.node_selector("foo", "bar").node_selector("baz", "blah"),
                false,
            ),
            ("In matches", vec![("foo", "bar")], |p| p.affinity_in("foo", &["bar", "value2"]), true),
            ("In does not match", vec![("foo", "bar")], |p| p.affinity_in("foo", &["value1", "value2"]), false),
            (
                "terms are ORed",
                vec![("foo", "bar")],
                |p| p.affinity_in("foo", &["x"]).affinity_in("foo", &["bar"]),
                true,
            ),
            (
                "selector AND affinity",
                vec![("foo", "bar")],
                |p| p.affinity_in("foo", &["bar"]).node_selector("baz", "q"),
                false,
            ),
        ];
        for (name, labels, build, want) in cases {
            let mut snap = Snapshot::new();
            let mut n = MakeNode::new(&mut snap, "node1");
            for (k, v) in &labels {
                n = n.label(k, v);
            }
            n.add();
            let pod = build(MakePod::new(&mut snap, "p")).build();
            let got = filter_one(&NodeAffinity::default(), &snap, &pod, "node1");
            assert_eq!(got.is_ok(), want, "{name}: {got:?}");
            if let Err((code, r)) = got {
                assert_eq!(code, Code::UnschedulableAndUnresolvable, "{name}");
                assert_eq!(r, vec![ERR_REASON_POD.to_string()], "{name}");
            }
        }
    }

    #[test]
    fn operators() {
        // (operator, node label value or None, want)
        let mut snap = Snapshot::new();
        let key = snap.interner.intern("k");
        let v5 = snap.interner.intern("5");
        let vx = snap.interner.intern("x");
        let cases: Vec<(LabelOp, Option<&str>, bool)> = vec![
            (LabelOp::Gt(4), Some("5"), true),
            (LabelOp::Gt(5), Some("5"), false),
            (LabelOp::Lt(6), Some("5"), true),
            (LabelOp::Gt(1), Some("x"), false),
            (LabelOp::Gt(1), None, false),
            (LabelOp::NotIn(smallvec![vx]), None, true),
            (LabelOp::NotIn(smallvec![v5]), Some("5"), false),
            (LabelOp::Exists, None, false),
            (LabelOp::DoesNotExist, None, true),
            (LabelOp::DoesNotExist, Some("x"), false),
        ];
        for (i, (op, val, want)) in cases.into_iter().enumerate() {
            let name = format!("n{i}");
            let mut n = MakeNode::new(&mut snap, &name);
            if let Some(v) = val {
                n = n.label("k", v);
            }
            n.add();
            let mut pod = MakePod::new(&mut snap, "p").build();
            pod.required_affinity = Some(NodeSelector {
                terms: vec![NodeTerm {
                    labels: vec![LabelRequirement { key, op: op.clone() }],
                    fields: vec![],
                    valid: true,
                    pinned: None,
                }],
            });
            assert_eq!(filter_one(&NodeAffinity::default(), &snap, &pod, &name).is_ok(), want, "{op:?} on {val:?}");
        }
    }

    #[test]
    fn match_fields_prefilter_and_enforced() {
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "a").add();
        MakeNode::new(&mut snap, "b").add();
        let a = snap.interner.intern("a");
        let mut pod = MakePod::new(&mut snap, "p").build();
        pod.required_affinity = Some(NodeSelector {
            terms: vec![NodeTerm {
                labels: vec![],
                fields: vec![NameRequirement { in_set: true, name: a }],
                valid: true,
                pinned: None,
            }],
        });
        let cx = CycleCx { snap: &snap, pod: &pod };
        let (st, res) = NodeAffinity::default().pre_filter(cx, &mut CycleState::new());
        assert!(st.is_success());
        assert_eq!(res.node_names, Some(vec![a]));
        assert!(filter_one(&NodeAffinity::default(), &snap, &pod, "a").is_ok());
        assert!(filter_one(&NodeAffinity::default(), &snap, &pod, "b").is_err());
        // Scheduler-enforced affinity rejects with its own reason.
        let plugin = NodeAffinity {
            added_required: Some(NodeSelector {
                terms: vec![NodeTerm {
                    labels: vec![],
                    fields: vec![NameRequirement { in_set: true, name: a }],
                    valid: true,
                    pinned: None,
                }],
            }),
            added_preferred: vec![],
            added_preferred_set: false,
        };
        let plain = MakePod::new(&mut snap, "q").build();
        assert_eq!(
            filter_one(&plugin, &snap, &plain, "b"),
            Err((Code::UnschedulableAndUnresolvable, vec![ERR_REASON_ENFORCED.to_string()]))
        );
        assert!(filter_one(&plugin, &snap, &plain, "a").is_ok());
    }

    /// Compiles a pod whose node affinity is given as YAML (the `affinity.nodeAffinity` value).
    fn pod_with_node_affinity(snap: &mut Snapshot, yaml: &str) -> crate::snapshot::PodInfo {
        let doc = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c}}]\n  affinity:\n    nodeAffinity: {yaml}\n"
        );
        let pod = match crate::api::parse_objects(&doc, "pod.yaml").unwrap().remove(0) {
            crate::api::Object::Pod(p) => p,
            o => panic!("not a pod: {o:?}"),
        };
        let wk = snap.wk.clone();
        let prio = crate::snapshot::compile::Priorities::default();
        crate::snapshot::compile::compile_pod(&pod, "p", crate::agent::PodUid(1), &prio, &mut snap.interner, &wk)
            .unwrap()
    }

    #[test]
    fn required_terms_parse_with_label_validation() {
        // node_affinity_test.go TestNodeAffinity "invalid value in Affinity term", plus the other
        // parse errors of labels.NewRequirement: the term matches nothing. Node labels foo=bar, n=5.
        let req = |exprs: &str| {
            format!("{{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{exprs}]}}}}")
        };
        let cases: &[(&str, String, bool)] = &[
            (
                "NotIn with an invalid value",
                req(r#"{matchExpressions: [{key: foo, operator: NotIn, values: ["invalid value: ___@#$%^"]}]}"#),
                false,
            ),
            ("NotIn with a valid value", req("{matchExpressions: [{key: foo, operator: NotIn, values: [baz]}]}"), true),
            (
                "Gt -1 is not a label value",
                req(r#"{matchExpressions: [{key: n, operator: Gt, values: ["-1"]}]}"#),
                false,
            ),
            ("Gt 4", req(r#"{matchExpressions: [{key: n, operator: Gt, values: ["4"]}]}"#), true),
            ("an invalid key", req("{matchExpressions: [{key: 'invalid key', operator: DoesNotExist}]}"), false),
            ("In without values", req("{matchExpressions: [{key: foo, operator: In, values: []}]}"), false),
            (
                "an invalid term does not spoil a valid one",
                req(
                    r#"{matchExpressions: [{key: n, operator: Lt, values: ["-1"]}]}, {matchExpressions: [{key: foo, operator: In, values: [bar]}]}"#,
                ),
                true,
            ),
            (
                "a field other than metadata.name reads as empty: In x",
                req("{matchFields: [{key: metadata.uid, operator: In, values: [x]}]}"),
                false,
            ),
            (
                "a field other than metadata.name reads as empty: NotIn x",
                req("{matchFields: [{key: metadata.uid, operator: NotIn, values: [x]}]}"),
                true,
            ),
            (
                "a field with two values",
                req("{matchFields: [{key: metadata.name, operator: NotIn, values: [a, b]}]}"),
                false,
            ),
        ];
        for (name, yaml, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "node1").label("foo", "bar").label("n", "5").add();
            let pod = pod_with_node_affinity(&mut snap, yaml);
            let got = filter_one(&NodeAffinity::default(), &snap, &pod, "node1");
            assert_eq!(got.is_ok(), *want, "{name}: {got:?}");
        }
    }

    #[test]
    fn pre_filter_pins_names_from_the_raw_fields() {
        // NodeAffinity.PreFilter reads `matchFields` as written: `metadata.name In [a, b]` (invalid
        // for the term: one value only) still pins {a, b}; a term without such a field pins none.
        let req = |terms: &str| {
            format!("{{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{terms}]}}}}")
        };
        let cases: &[(&str, Option<&[&str]>)] = &[
            ("{matchFields: [{key: metadata.name, operator: In, values: [a, b]}]}", Some(&["a", "b"])),
            ("{matchFields: [{key: metadata.name, operator: In, values: [a]}, {key: metadata.name, operator: In, values: [a, b]}]}", Some(&["a"])),
            ("{matchFields: [{key: metadata.name, operator: In, values: [a]}]}, {matchExpressions: [{key: foo, operator: Exists}]}", None),
            ("{matchFields: [{key: metadata.name, operator: NotIn, values: [a]}]}", None),
        ];
        for (terms, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "a").add();
            let pod = pod_with_node_affinity(&mut snap, &req(terms));
            let (st, res) =
                NodeAffinity::default().pre_filter(CycleCx { snap: &snap, pod: &pod }, &mut CycleState::new());
            assert!(st.is_success(), "{terms}: {st:?}");
            let got: Option<Vec<&str>> = res.node_names.map(|v| v.iter().map(|s| snap.interner.resolve(*s)).collect());
            assert_eq!(got.as_deref(), *want, "{terms}");
        }
    }

    #[test]
    fn an_invalid_preferred_term_is_a_pre_score_error() {
        // TestNodeAffinityPriority "PreScore returns error when an incoming Pod has a broken affinity".
        let cases: &[(&str, Option<Code>)] = &[
            (
                "[{weight: 2, preference: {matchExpressions: [{key: 'invalid key', operator: In, values: [bar]}]}}]",
                Some(Code::Error),
            ),
            (
                r#"[{weight: 2, preference: {matchExpressions: [{key: foo, operator: Gt, values: ["-1"]}]}}]"#,
                Some(Code::Error),
            ),
            // Weight 0 and empty terms are dropped before parsing, but the list is non-nil: PreScore
            // does not skip (the pod scores 0 everywhere).
            (
                "[{weight: 0, preference: {matchExpressions: [{key: 'invalid key', operator: In, values: [bar]}]}}]",
                None,
            ),
            ("[{weight: 3, preference: {}}]", None),
            ("[]", None),
            ("null", Some(Code::Skip)),
            ("[{weight: 3, preference: {matchExpressions: [{key: foo, operator: In, values: [bar]}]}}]", None),
        ];
        for (terms, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "node1").label("foo", "bar").add();
            let pod = pod_with_node_affinity(
                &mut snap,
                &format!("{{preferredDuringSchedulingIgnoredDuringExecution: {terms}}}"),
            );
            let cx = CycleCx { snap: &snap, pod: &pod };
            let st = NodeAffinity::default().pre_score(cx, &mut CycleState::new(), &[NodeIdx(0)]);
            let got = (st.code != Code::Success).then_some(st.code);
            assert_eq!(got, *want, "{terms}: {st:?}");
        }
    }

    #[test]
    fn score_table() {
        // TestNodeAffinityPriority: all nodes same priority when no preferences; weights summed.
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "machine1").label("foo", "bar").add();
        MakeNode::new(&mut snap, "machine2").label("key", "value").add();
        MakeNode::new(&mut snap, "machine3").label("foo", "bar").label("key", "value").label("az", "az1").add();
        let pod = MakePod::new(&mut snap, "p")
            .preferred_in(2, "foo", &["bar"])
            .preferred_in(4, "key", &["value"])
            .preferred_in(5, "az", &["az1"])
            .build();
        // Raw 2, 4, 11 -> 18, 36, 100.
        assert_eq!(score_all(&NodeAffinity::default(), &snap, &pod), Some(vec![18, 36, 100]));
        let none = MakePod::new(&mut snap, "q").build();
        assert_eq!(score_all(&NodeAffinity::default(), &snap, &none), None, "PreScore skips without preferences");
        let no_list = pod_with_node_affinity(&mut snap, "{}");
        assert_eq!(score_all(&NodeAffinity::default(), &snap, &no_list), None, "PreScore skips a nil list");
        let empty_term = pod_with_node_affinity(
            &mut snap,
            "{preferredDuringSchedulingIgnoredDuringExecution: [{weight: 3, preference: {}}]}",
        );
        assert_eq!(
            score_all(&NodeAffinity::default(), &snap, &empty_term),
            Some(vec![0, 0, 0]),
            "an empty term scores 0"
        );
        let added = NodeAffinity { added_preferred_set: true, ..NodeAffinity::default() };
        assert_eq!(score_all(&added, &snap, &none), Some(vec![0, 0, 0]), "addedAffinity terms keep the scores");
    }
}
