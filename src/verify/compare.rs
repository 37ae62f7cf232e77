//! Node-by-node comparison of two `explain` answers (schedperf's and the oracle's).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Whether schedperf's error (`running Score plugins: plugin "X" failed with: ...`) is the one the
/// oracle refused the case with (`Score: running Score plugins: plugin "X" failed with: ...`): the
/// same extension point and the same plugin. The detail after the plugin's name is the plugin's
/// own wording (label validation texts, for one) and is not compared.
pub fn same_error(ours: &str, oracle: &str) -> bool {
    // The oracle labels the point it stopped at ("PreScore: ", "Score: ") before upstream's text;
    // upstream's own text starts with words ("running ...").
    let theirs = match oracle.split_once(": ") {
        Some((label, rest)) if !label.contains(' ') => rest,
        _ => oracle,
    };
    let head = |s: &str| -> Option<String> {
        let start = s.find("plugin \"")? + "plugin \"".len();
        let end = start + s[start..].find('"')?;
        Some(s[..=end].to_string())
    };
    head(ours).is_some() && head(ours) == head(theirs)
}

/// Whether upstream nominated another node than schedperf, one that schedperf lists among those
/// upstream may nominate by its random offset (`preemption.mayNominate`), with the same victims:
/// upstream's draw, not a divergence.
pub fn random_nomination(ours: &Value, theirs: &Value) -> bool {
    let (x, y) = (&ours["preemption"], &theirs["preemption"]);
    x["nominatedNode"] != y["nominatedNode"]
        && y["nominatedNode"].is_string()
        && x["mayNominate"]
            .as_array()
            .is_some_and(|alts| alts.iter().any(|c| c["node"] == y["nominatedNode"] && c["victims"] == y["victims"]))
}

/// schedperf's answer with upstream's nomination put in place of its own (see
/// [`random_nomination`]): the nominated node, its victims and the message naming them.
fn with_their_nomination(ours: &Value, theirs: &Value) -> Value {
    let mut adjusted = ours.clone();
    let (x, y) = (&ours["preemption"], &theirs["preemption"]);
    let placement = |p: &Value| {
        format!(
            "found a potential placement for pod on node {}, preempting {} victims",
            p["nominatedNode"].as_str().unwrap_or(""),
            p["victims"].as_array().map_or(0, Vec::len)
        )
    };
    if let Some(m) = ours["message"].as_str() {
        adjusted["message"] = Value::from(m.replace(&placement(x), &placement(y)));
    }
    adjusted["preemption"]["nominatedNode"] = y["nominatedNode"].clone();
    adjusted["preemption"]["victims"] = y["victims"].clone();
    adjusted
}

/// Every difference between the two answers, one line each; empty when they agree. A preemption
/// nomination upstream drew at random from the candidates schedperf says it may draw from is
/// taken as agreement ([`random_nomination`]); everything else must still match.
pub fn diff_explanations(ours: &Value, theirs: &Value) -> Vec<String> {
    if random_nomination(ours, theirs) {
        return diff_exact(&with_their_nomination(ours, theirs), theirs);
    }
    diff_exact(ours, theirs)
}

fn diff_exact(ours: &Value, theirs: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let nodes = |v: &Value| -> BTreeMap<String, Value> {
        v["nodes"]
            .as_array()
            .map(|a| a.iter().map(|n| (n["name"].as_str().unwrap_or("").to_string(), n.clone())).collect())
            .unwrap_or_default()
    };
    let (a, b) = (nodes(ours), nodes(theirs));
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for name in names {
        let (Some(x), Some(y)) = (a.get(name), b.get(name)) else {
            out.push(format!("node {name}: present in only one answer"));
            continue;
        };
        diff_node(name, x, y, &mut out);
    }
    let field = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    if field(ours, "selected") != field(theirs, "selected") {
        out.push(format!(
            "selected: schedperf {} vs kube-scheduler {}",
            field(ours, "selected"),
            field(theirs, "selected")
        ));
    }
    let tops = |v: &Value| top_nodes(v);
    if tops(ours) != tops(theirs) {
        out.push(format!("top-scoring nodes: schedperf {:?} vs kube-scheduler {:?}", tops(ours), tops(theirs)));
    }
    if field(ours, "error") != field(theirs, "error") {
        out.push(format!("error: schedperf {} vs kube-scheduler {}", field(ours, "error"), field(theirs, "error")));
    }
    if field(ours, "message") != field(theirs, "message") {
        out.push(format!(
            "message:\n  schedperf:      {}\n  kube-scheduler: {}",
            field(ours, "message"),
            field(theirs, "message")
        ));
    }
    let skipped = |v: &Value| -> BTreeSet<String> {
        v["skippedScorePlugins"]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    // Only meaningful when something was scored.
    if !a.values().all(|n| n["scores"].is_null()) && skipped(ours) != skipped(theirs) {
        out.push(format!(
            "skipped score plugins: schedperf {:?} vs kube-scheduler {:?}",
            skipped(ours),
            skipped(theirs)
        ));
    }
    diff_preemption(&field(ours, "preemption"), &field(theirs, "preemption"), &mut out);
    out
}

fn diff_node(name: &str, x: &Value, y: &Value, out: &mut Vec<String>) {
    if x["feasible"] != y["feasible"] {
        out.push(format!(
            "node {name}: feasible schedperf {} vs kube-scheduler {} (schedperf filter {}, kube-scheduler filter {})",
            x["feasible"],
            y["feasible"],
            compact(&x["filter"]),
            compact(&y["filter"])
        ));
        return;
    }
    if !x["filter"].is_null() || !y["filter"].is_null() {
        for k in ["plugin", "code", "reasons"] {
            if x["filter"][k] != y["filter"][k] {
                out.push(format!(
                    "node {name}: filter {k}: schedperf {} vs kube-scheduler {}",
                    x["filter"][k], y["filter"][k]
                ));
            }
        }
    }
    let scores = |v: &Value| -> BTreeMap<String, (i64, i64)> {
        v["scores"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, s)| {
                        (k.clone(), (s["score"].as_i64().unwrap_or(i64::MIN), s["weight"].as_i64().unwrap_or(i64::MIN)))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (sx, sy) = (scores(x), scores(y));
    let plugins: BTreeSet<&String> = sx.keys().chain(sy.keys()).collect();
    for p in plugins {
        match (sx.get(p), sy.get(p)) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => out.push(format!(
                "node {name}: {p} (score, weight): schedperf {} vs kube-scheduler {}",
                a.map_or("absent".into(), |v| format!("{v:?}")),
                b.map_or("absent".into(), |v| format!("{v:?}"))
            )),
        }
    }
    if x["totalScore"] != y["totalScore"] {
        out.push(format!(
            "node {name}: totalScore schedperf {} vs kube-scheduler {}",
            x["totalScore"], y["totalScore"]
        ));
    }
}

/// The nodes that share the best total score.
pub fn top_nodes(v: &Value) -> Vec<String> {
    let Some(nodes) = v["nodes"].as_array() else { return Vec::new() };
    let best = nodes.iter().filter_map(|n| n["totalScore"].as_i64()).max();
    let mut top: Vec<String> = nodes
        .iter()
        .filter(|n| best.is_some() && n["totalScore"].as_i64() == best)
        .filter_map(|n| n["name"].as_str().map(String::from))
        .collect();
    top.sort();
    top
}

fn diff_preemption(x: &Value, y: &Value, out: &mut Vec<String>) {
    if x.is_null() != y.is_null() {
        out.push(format!("preemption: schedperf {} vs kube-scheduler {}", compact(x), compact(y)));
        return;
    }
    if x.is_null() {
        return;
    }
    // Upstream starts the candidate search at a random offset, so candidates are compared as a set.
    let cands = |v: &Value| -> BTreeMap<String, (Value, Value)> {
        v["candidates"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        (
                            c["node"].as_str().unwrap_or("").to_string(),
                            (c["victims"].clone(), c["numPdbViolations"].clone()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (cx, cy) = (cands(x), cands(y));
    if cx != cy {
        out.push(format!(
            "preemption candidates: schedperf {} vs kube-scheduler {}",
            compact(&x["candidates"]),
            compact(&y["candidates"])
        ));
    }
    if x["nominatedNode"] != y["nominatedNode"] {
        out.push(format!(
            "preemption nominated node: schedperf {} vs kube-scheduler {}",
            x["nominatedNode"], y["nominatedNode"]
        ));
    }
    if x["victims"] != y["victims"] {
        out.push(format!("preemption victims: schedperf {} vs kube-scheduler {}", x["victims"], y["victims"]));
    }
    if x["message"] != y["message"] {
        out.push(format!(
            "preemption message:\n  schedperf:      {}\n  kube-scheduler: {}",
            x["message"], y["message"]
        ));
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_agree_on_the_point_and_the_plugin_not_the_detail() {
        let ours = r#"running PreScore plugin "NodeAffinity": [0]: preferred term 0 is invalid"#;
        for (oracle, same) in [
            (
                r#"PreScore: running PreScore plugin "NodeAffinity": [0].matchExpressions[0].values[0][disk]: Invalid value"#,
                true,
            ),
            (r#"PreScore: running PreScore plugin "InterPodAffinity": boom"#, false),
            (r#"Score: running Score plugins: plugin "NodeAffinity" failed with: x"#, false),
            ("cluster: cannot parse", false),
        ] {
            assert_eq!(same_error(ours, oracle), same, "{oracle}");
        }
        let ours = r#"running Score plugins: plugin "TaintToleration" failed with: failed to read "PreScoreTaintToleration" from cycleState: not found"#;
        assert!(same_error(ours, &format!("Score: {ours}")));
        assert!(same_error(ours, ours), "an oracle that gives upstream's text without the label");
        assert!(!same_error("no plugin named here", "Score: no plugin named here"));
    }

    fn answer(n2_score: i64, selected: &str) -> Value {
        json!({"nodes": [
            {"name": "n1", "feasible": true, "filter": null,
             "scores": {"NodeResourcesFit": {"score": 50, "weight": 1}}, "totalScore": 50},
            {"name": "n2", "feasible": true, "filter": null,
             "scores": {"NodeResourcesFit": {"score": n2_score, "weight": 1}}, "totalScore": n2_score},
            {"name": "n3", "feasible": false, "scores": null, "totalScore": null,
             "filter": {"plugin": "TaintToleration", "code": "UnschedulableAndUnresolvable",
                        "reasons": ["node(s) had untolerated taint(s)"]}}],
            "selected": selected, "message": null, "skippedScorePlugins": []})
    }

    #[test]
    fn equal_answers_agree() {
        assert!(diff_explanations(&answer(40, "n1"), &answer(40, "n1")).is_empty());
    }

    #[test]
    fn a_score_difference_names_node_and_plugin() {
        let d = diff_explanations(&answer(40, "n1"), &answer(60, "n2"));
        assert!(d.iter().any(|l| l.starts_with("node n2: NodeResourcesFit")), "{d:?}");
        assert!(d.iter().any(|l| l.starts_with("selected:")), "{d:?}");
        assert!(d.iter().any(|l| l.starts_with("top-scoring nodes:")), "{d:?}");
    }

    #[test]
    fn a_reason_difference_is_reported() {
        let mut b = answer(40, "n1");
        b["nodes"][2]["filter"]["reasons"] = json!(["node(s) had untolerated taint {dedicated: a}"]);
        let d = diff_explanations(&answer(40, "n1"), &b);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("filter reasons"));
    }

    #[test]
    fn preemption_candidates_compare_as_a_set() {
        let mut a = answer(40, "n1");
        let mut b = answer(40, "n1");
        a["preemption"] = json!({"nominatedNode": "n1", "victims": ["default/p"], "message": null,
            "candidates": [{"node": "n1", "victims": ["default/p"], "numPdbViolations": 0},
                           {"node": "n2", "victims": ["default/q"], "numPdbViolations": 0}]});
        b["preemption"] = a["preemption"].clone();
        b["preemption"]["candidates"] = json!([{"node": "n2", "victims": ["default/q"], "numPdbViolations": 0},
                                              {"node": "n1", "victims": ["default/p"], "numPdbViolations": 0}]);
        assert!(diff_explanations(&a, &b).is_empty());
        b["preemption"]["candidates"][0]["victims"] = json!(["default/r"]);
        assert_eq!(diff_explanations(&a, &b).len(), 1);
    }

    #[test]
    fn a_nomination_upstream_may_draw_agrees_only_with_its_victims() {
        let preemption = |node: &str, victims: serde_json::Value, n: usize| {
            let all = json!([{"node": "n1", "victims": ["default/p"], "numPdbViolations": 0},
                             {"node": "n2", "victims": ["default/q", "default/r"], "numPdbViolations": 0}]);
            let may = all.as_array().unwrap()[..n].to_vec();
            json!({"nominatedNode": node, "victims": victims, "message": null, "candidates": all, "mayNominate": may})
        };
        let message = |node: &str, n: usize| {
            json!(format!("0/3 nodes are available: 3 Insufficient cpu. preemption: found a potential placement for pod on node {node}, preempting {n} victims"))
        };
        let (mut a, mut b) = (answer(40, "n1"), answer(40, "n1"));
        a["preemption"] = preemption("n1", json!(["default/p"]), 2);
        a["message"] = message("n1", 1);
        b["preemption"] = preemption("n2", json!(["default/q", "default/r"]), 0);
        b["preemption"].as_object_mut().unwrap().remove("mayNominate");
        b["message"] = message("n2", 2);
        assert!(random_nomination(&a, &b));
        assert!(diff_explanations(&a, &b).is_empty(), "{:?}", diff_explanations(&a, &b));
        // Other victims on the same node: a divergence.
        b["preemption"]["victims"] = json!(["default/q"]);
        assert!(!random_nomination(&a, &b));
        assert!(diff_explanations(&a, &b).iter().any(|l| l.starts_with("preemption nominated node")));
        // A node schedperf says upstream cannot draw: a divergence.
        b["preemption"]["victims"] = json!(["default/q", "default/r"]);
        a["preemption"] = preemption("n1", json!(["default/p"]), 1);
        assert!(!random_nomination(&a, &b));
        assert!(!diff_explanations(&a, &b).is_empty());
    }
}
