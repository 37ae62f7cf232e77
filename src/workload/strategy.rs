//! Pure helpers for `createNodes`' node-prepare strategies; the runner applies them per node.

use std::collections::BTreeMap;

use super::spec::{LabelNodePrepareStrategy, NodeAllocatableStrategy, UniqueNodeLabelStrategy};

/// The label `labelNodePrepareStrategy` puts on the `i`-th node of the op: values round-robin
/// (`labelValues[i % len]`), as upstream's `PreparePatch`. `None` if there are no values.
pub fn label_node_prepare(i: u64, strategy: &LabelNodePrepareStrategy) -> Option<(&str, &str)> {
    let n = strategy.label_values.len() as u64;
    if n == 0 {
        return None;
    }
    Some((strategy.label_key.as_str(), strategy.label_values[(i % n) as usize].as_str()))
}

/// The label `uniqueNodeLabelStrategy` puts on the `i`-th node: the key with a value no other node
/// of the op has. Upstream uses a random UUID; we use `unique-<i>` so seeded runs replay exactly.
pub fn unique_node_label(i: u64, strategy: &UniqueNodeLabelStrategy) -> (&str, String) {
    (strategy.label_key.as_str(), format!("unique-{i}"))
}

/// The resource quantities `nodeAllocatableStrategy` writes over a node's allocatable
/// (resource name -> quantity text).
pub fn node_allocatable(strategy: &NodeAllocatableStrategy) -> &BTreeMap<String, String> {
    &strategy.node_allocatable
}

/// `allocatable` with `nodeAllocatableStrategy`'s entries written over it (added or replaced).
pub fn apply_node_allocatable(
    allocatable: &BTreeMap<String, String>,
    strategy: &NodeAllocatableStrategy,
) -> BTreeMap<String, String> {
    let mut out = allocatable.clone();
    out.extend(strategy.node_allocatable.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_round_robin() {
        let s = LabelNodePrepareStrategy {
            label_key: "topology.kubernetes.io/zone".into(),
            label_values: vec!["moon-1".into(), "moon-2".into(), "moon-3".into()],
        };
        let got: Vec<&str> = (0..7).map(|i| label_node_prepare(i, &s).unwrap().1).collect();
        assert_eq!(got, ["moon-1", "moon-2", "moon-3", "moon-1", "moon-2", "moon-3", "moon-1"]);
        assert_eq!(label_node_prepare(4, &s).unwrap().0, "topology.kubernetes.io/zone");
        let empty = LabelNodePrepareStrategy { label_key: "k".into(), label_values: vec![] };
        assert_eq!(label_node_prepare(0, &empty), None);
    }

    #[test]
    fn unique_labels_differ_per_node() {
        let s = UniqueNodeLabelStrategy { label_key: "unique".into() };
        let values: std::collections::BTreeSet<String> = (0..100).map(|i| unique_node_label(i, &s).1).collect();
        assert_eq!(values.len(), 100);
        assert_eq!(unique_node_label(7, &s), ("unique", "unique-7".to_string()));
    }

    #[test]
    fn allocatable_is_overridden_entry_by_entry() {
        let base: BTreeMap<String, String> = [("cpu", "4"), ("memory", "32Gi"), ("pods", "110")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let s = NodeAllocatableStrategy {
            node_allocatable: [("cpu", "8"), ("attachable-volumes-csi-ebs.csi.aws.com", "39")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            csi_node_allocatable: None,
            migrated_plugins: vec![],
        };
        let got = apply_node_allocatable(&base, &s);
        let want: BTreeMap<String, String> =
            [("attachable-volumes-csi-ebs.csi.aws.com", "39"), ("cpu", "8"), ("memory", "32Gi"), ("pods", "110")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(got, want);
        assert_eq!(node_allocatable(&s).len(), 2);
    }
}

/// The `signature` label scheduler_perf's createPods puts on the `index`-th pod it makes from a
/// template file: pods in the same run of `batch_size` share it.
pub fn signature_label(index: u64, batch_size: u64) -> String {
    format!("signature-label-{}", index / batch_size.max(1))
}

#[cfg(test)]
mod signature_tests {
    #[test]
    fn signature_labels_change_every_batch() {
        let cases = [
            (0, 1, "signature-label-0"),
            (1, 1, "signature-label-1"),
            (9, 10, "signature-label-0"),
            (10, 10, "signature-label-1"),
            (25, 10, "signature-label-2"),
            (3, 0, "signature-label-3"),
        ];
        for (i, b, want) in cases {
            assert_eq!(super::signature_label(i, b), want, "index {i}, batch {b}");
        }
    }
}
