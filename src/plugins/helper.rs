//! Node-selector matching over the label columns, shared by NodeAffinity and others.
//!
//! Columns are resolved once per pod (or per chunk); the per-node check is integer compares.

use crate::snapshot::{LabelRequirement, NameRequirement, NodeIdx, NodeTerm, Snapshot, Sym};

/// A node selector term with its label columns looked up.
pub struct ResolvedTerm<'a> {
    labels: Vec<(Option<&'a [Sym]>, &'a LabelRequirement)>,
    fields: &'a [NameRequirement],
    valid: bool,
}

impl<'a> ResolvedTerm<'a> {
    pub fn new(snap: &'a Snapshot, term: &'a NodeTerm) -> Self {
        let labels = term.labels.iter().map(|r| (snap.nodes.label_column(r.key), r)).collect();
        ResolvedTerm { labels, fields: &term.fields, valid: term.valid }
    }

    /// `nodeSelectorTerm.match`: all label requirements and all field requirements hold.
    /// Never inlined: NodeAffinity's Filter calls it per node and term, and left to the inliner
    /// its code moved as unrelated code changed; inlined into the Filter's loop it costs more
    /// (the CI instruction gate's SchedulingNodeAffinity +4.6%; benches/README, branch `pre11`).
    #[inline(never)]
    pub fn matches(&self, snap: &Snapshot, node: NodeIdx) -> bool {
        if !self.valid {
            return false;
        }
        for (col, req) in &self.labels {
            let v = col.map_or(Sym::NONE, |c| c[node.ix()]);
            if !req.matches_value(v, &snap.interner) {
                return false;
            }
        }
        let name = snap.nodes.name[node.ix()];
        self.fields.iter().all(|f| f.in_set == (name == f.name))
    }
}

/// Terms ORed (a required node affinity).
pub struct ResolvedSelector<'a> {
    terms: Vec<ResolvedTerm<'a>>,
}

impl<'a> ResolvedSelector<'a> {
    pub fn new(snap: &'a Snapshot, terms: &'a [NodeTerm]) -> Self {
        ResolvedSelector { terms: terms.iter().map(|t| ResolvedTerm::new(snap, t)).collect() }
    }

    #[inline]
    pub fn matches(&self, snap: &Snapshot, node: NodeIdx) -> bool {
        self.terms.iter().any(|t| t.matches(snap, node))
    }
}

/// `spec.nodeSelector`: every (key, value) must be on the node.
pub struct ResolvedLabelSet<'a> {
    pairs: Vec<(Option<&'a [Sym]>, Sym)>,
}

impl<'a> ResolvedLabelSet<'a> {
    pub fn new(snap: &'a Snapshot, pairs: &[(Sym, Sym)]) -> Self {
        ResolvedLabelSet { pairs: pairs.iter().map(|&(k, v)| (snap.nodes.label_column(k), v)).collect() }
    }

    #[inline]
    pub fn matches(&self, node: NodeIdx) -> bool {
        self.pairs.iter().all(|(col, v)| col.is_some_and(|c| c[node.ix()] == *v))
    }
}
