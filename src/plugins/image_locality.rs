//! ImageLocality: nodes that already hold the pod's images score higher, scaled by how widely each
//! image is spread. `plugins/imagelocality`.

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, Status, MAX_NODE_SCORE};
use crate::snapshot::NodeIdx;
use crate::snapshot::PodInfo;

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this sum a node scores 0.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at or above this sum a node scores 100.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

/// `calculatePriority`: clamp the sum to [min, max·containers] and scale to 0..=100.
pub fn calculate_priority(sum: i64, num_containers: i64) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers;
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// The set of normalized image names (init containers and containers).
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        let mut names: Vec<_> = pod.images.iter().map(|i| i.0).collect();
        names.sort_unstable();
        names.dedup();
        sig.put(keys::IMAGE_NAMES, names);
        Sign::Signed
    }

    /// No node holds any of the pod's images: every node sums 0 and scores the same.
    fn score_is_uniform(&self, cx: CycleCx<'_>, _state: &CycleState) -> bool {
        cx.pod.images.iter().all(|img| cx.snap.nodes.image_state(img.0).is_none())
    }

    fn score(&self, cx: CycleCx<'_>, _state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let t = &cx.snap.nodes;
        let total = t.len() as f64;
        // Per pod image (init containers, then containers; repeats count again): its scaled score,
        // `size × spread` with spread = nodes with it / all nodes. The size is the cache's shared
        // one (first node to report the name), the same on every node, so the score is worked out
        // once per pod. Images no node has are left out.
        let images: smallvec::SmallVec<[(crate::snapshot::Sym, i64); 4]> = cx
            .pod
            .images
            .iter()
            .filter_map(|img| {
                let (num_nodes, size) = t.image_state(img.0)?;
                Some((img.0, (size as f64 * (num_nodes as f64 / total)) as i64))
            })
            .collect();
        let containers = cx.pod.container_count as i64;
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            let mut sum = 0i64;
            if !t.images[n.ix()].is_empty() {
                for &(img, scaled) in &images {
                    if t.has_image(n, img) {
                        sum += scaled;
                    }
                }
            }
            *o = calculate_priority(sum, containers);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::names::normalized_image_name;
    use crate::plugins::testutil::score_all;
    use crate::snapshot::testing::{MakeNode, MakePod};
    use crate::snapshot::Snapshot;

    #[test]
    fn priority_table() {
        // image_locality_test.go TestImageLocalityPriority, with node1 {gcr.io/40:latest 40MB,
        // gcr.io/300:latest 300MB, gcr.io/2000:latest 2000MB} and node2 {gcr.io/250:latest 250MB,
        // gcr.io/10:latest+v1 10MB}.
        let cases: &[(&str, &[&str], [i64; 2])] = &[
            ("two images spread on two nodes, prefer the larger", &["gcr.io/40", "gcr.io/250"], [0, 5]),
            ("images on the same node", &["gcr.io/40", "gcr.io/300"], [7, 0]),
            ("a large image on half the nodes", &["gcr.io/2000", "gcr.io/10"], [49, 0]),
        ];
        for (name, images, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "node1")
                .image(&["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB)
                .image(&["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB)
                .image(&["gcr.io/2000:latest"], 2000 * MB)
                .add();
            MakeNode::new(&mut snap, "node2")
                .image(&["gcr.io/250:latest"], 250 * MB)
                .image(&["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)
                .add();
            let mut p = MakePod::new(&mut snap, "p");
            for img in *images {
                p = p.image(&normalized_image_name(img));
            }
            let pod = p.build();
            assert_eq!(score_all(&ImageLocality, &snap, &pod), Some(want.to_vec()), "{name}");
        }
    }

    #[test]
    fn image_size_is_the_first_reporters() {
        // The scheduler cache keeps one ImageStateSummary per name, sized by the first node that
        // reported it: node2's own 100MB is not used. (name, node sizes in add order, want)
        let cases: &[(&str, [i64; 3], [i64; 3])] = &[
            // 500MB × 2/3 = 333MB on node1 and node2: (333 − 23) × 100 / 977 = 31.
            ("first node's size for every node", [500, 100, 0], [31, 31, 0]),
            ("smaller first size", [100, 500, 0], [4, 4, 0]),
            ("only the third node", [0, 0, 900], [0, 0, 28]),
        ];
        for (name, sizes, want) in cases {
            let mut snap = Snapshot::new();
            for (i, size) in sizes.iter().enumerate() {
                let mut n = MakeNode::new(&mut snap, &format!("node{}", i + 1));
                if *size > 0 {
                    n = n.image(&["gcr.io/x:latest"], size * MB);
                }
                n.add();
            }
            let pod = MakePod::new(&mut snap, "p").image("gcr.io/x:latest").build();
            assert_eq!(score_all(&ImageLocality, &snap, &pod), Some(want.to_vec()), "{name}");
        }
    }

    #[test]
    fn normalization() {
        for (input, want) in [
            ("gcr.io/10", "gcr.io/10:latest"),
            ("gcr.io/10:v1", "gcr.io/10:v1"),
            ("localhost:5000/img", "localhost:5000/img:latest"),
            ("localhost:5000/img:1", "localhost:5000/img:1"),
            ("busybox", "busybox:latest"),
        ] {
            assert_eq!(normalized_image_name(input), want);
        }
        assert_eq!(calculate_priority(0, 0), 0, "no containers, no division by zero");
    }
}
