//! Identities every layer shares. They live here, below everything else, so that the snapshot, the
//! queue, the cache and the plugins need not import the node-agent module to name a pod.

use std::fmt;

/// Identifies a pod for the lifetime of a run. Never reused within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodUid(pub u64);

impl fmt::Display for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pod-{:08x}", self.0)
    }
}
