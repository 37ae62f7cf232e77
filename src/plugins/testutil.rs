//! Helpers for plugin tests: run one plugin's PreFilter+Filter on one node, or its
//! PreScore+Score+NormalizeScore on every node, as upstream's plugin unit tests do.

use crate::config::{PluginArgs, Profile, ProfilePlugins};
use crate::framework::{Code, CycleCx, CycleState, Framework, Plugin};
use crate::plugins::CompiledArgs;
use crate::snapshot::{NodeIdx, PodInfo, Snapshot};

/// A `default-scheduler` profile's framework with exactly these PreFilter, Filter and PostFilter
/// plugins (default args).
pub fn framework_with(snap: &mut Snapshot, pre_filter: &[&str], filter: &[&str], post_filter: &[&str]) -> Framework {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let plugins = ProfilePlugins {
        pre_filter: names(pre_filter),
        filter: names(filter),
        post_filter: names(post_filter),
        ..Default::default()
    };
    let profile = Profile {
        scheduler_name: "default-scheduler".into(),
        percentage_of_nodes_to_score: None,
        plugins,
        args: PluginArgs::default(),
    };
    crate::plugins::build_framework(&profile, &CompiledArgs::default(), &mut snap.interner).unwrap()
}

/// `Ok(())` when the node passes; otherwise the code and reasons.
pub fn filter_one(plugin: &dyn Plugin, snap: &Snapshot, pod: &PodInfo, node: &str) -> Result<(), (Code, Vec<String>)> {
    let cx = CycleCx { snap, pod };
    let mut state = CycleState::new();
    let (st, _) = plugin.pre_filter(cx, &mut state);
    if st.code == Code::Skip {
        return Ok(());
    }
    if st.code != Code::Success {
        return Err((st.code, st.reasons));
    }
    let idx = snap.nodes.idx_of(snap.interner.get(node).expect("node interned")).expect("node exists");
    let mut out = [None];
    plugin.filter(cx, &state, &[idx], &mut out);
    match out[0] {
        None => Ok(()),
        Some(r) => Err((r.code, plugin.reasons(cx, &state, r))),
    }
}

/// Normalized scores of every node in table order; `None` when PreScore skipped.
pub fn score_all(plugin: &dyn Plugin, snap: &Snapshot, pod: &PodInfo) -> Option<Vec<i64>> {
    let cx = CycleCx { snap, pod };
    let mut state = CycleState::new();
    let nodes: Vec<NodeIdx> = (0..snap.nodes.len() as u32).map(NodeIdx).collect();
    let _ = plugin.pre_filter(cx, &mut state);
    let st = plugin.pre_score(cx, &mut state, &nodes);
    if st.code == Code::Skip {
        return None;
    }
    let mut scores = vec![0; nodes.len()];
    plugin.score(cx, &state, &nodes, &mut scores).expect("score succeeds");
    plugin.normalize(cx, &state, &nodes, &mut scores);
    Some(scores)
}
