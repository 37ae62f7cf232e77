//! End-of-run placement quality and the placement digest.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::report::{PlacementQuality, ResourceUtilization};
use crate::snapshot::Snapshot;

fn stats(values: &[f64]) -> ResourceUtilization {
    if values.is_empty() {
        return ResourceUtilization::default();
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    ResourceUtilization { mean, stddev: var.sqrt(), max: values.iter().copied().fold(0.0, f64::max) }
}

/// Utilization per resource across nodes, nodes used, and fragmentation for pods of the largest
/// shape (`largest` = (cpu millicores, memory bytes)).
pub fn placement_quality(snap: &Snapshot, largest: (i64, i64), pending_pods: u64) -> PlacementQuality {
    let t = &snap.nodes;
    let n = t.len();
    let frac = |req: &[i64], alloc: &[i64]| -> Vec<f64> {
        (0..n).map(|i| if alloc[i] > 0 { req[i] as f64 / alloc[i] as f64 } else { 0.0 }).collect()
    };
    let cpu = frac(&t.req_cpu_milli, &t.alloc_cpu_milli);
    let mem = frac(&t.req_memory, &t.alloc_memory);
    let mut utilization = BTreeMap::new();
    utilization.insert("cpu".to_string(), stats(&cpu));
    utilization.insert("memory".to_string(), stats(&mem));
    let nodes_used = t.pod_count.iter().filter(|c| **c > 0).count() as u64;
    // Fragmentation: how many more pods of the largest shape the summed free capacity would hold,
    // minus how many actually fit node by node.
    let (lc, lm) = largest;
    let fragmentation_pods = if lc <= 0 && lm <= 0 {
        0
    } else {
        let mut fit_nodewise = 0u64;
        let (mut free_cpu, mut free_mem, mut free_slots) = (0i64, 0i64, 0i64);
        for i in 0..n {
            let fc = (t.alloc_cpu_milli[i] - t.req_cpu_milli[i]).max(0);
            let fm = (t.alloc_memory[i] - t.req_memory[i]).max(0);
            let fs = (t.alloc_pods[i] - t.pod_count[i] as i64).max(0);
            free_cpu += fc;
            free_mem += fm;
            free_slots += fs;
            let by_cpu = if lc > 0 { fc / lc } else { i64::MAX };
            let by_mem = if lm > 0 { fm / lm } else { i64::MAX };
            fit_nodewise += by_cpu.min(by_mem).min(fs).max(0) as u64;
        }
        let by_cpu = if lc > 0 { free_cpu / lc } else { i64::MAX };
        let by_mem = if lm > 0 { free_mem / lm } else { i64::MAX };
        let fit_pooled = by_cpu.min(by_mem).min(free_slots).max(0) as u64;
        fit_pooled.saturating_sub(fit_nodewise)
    };
    PlacementQuality {
        utilization,
        nodes_used,
        nodes_total: n as u64,
        fragmentation_pods,
        topology_skew: Vec::new(),
        pending_pods,
        node_cpu_utilization: cpu,
    }
}

/// sha256 over the sorted `pod -> node` lines.
pub fn placement_digest(placements: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (pod, node) in placements {
        h.update(pod.as_bytes());
        h.update(b"\t");
        h.update(node.as_bytes());
        h.update(b"\n");
    }
    format!("{:x}", h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::testing::{MakeNode, MakePod};

    #[test]
    fn fragmentation_counts_stranded_capacity() {
        // Two nodes with 1000m each, each half used: 1000m free in total holds one 1000m pod, but no
        // single node does.
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "a").capacity(1000, 1 << 30).add();
        MakeNode::new(&mut snap, "b").capacity(1000, 1 << 30).add();
        MakePod::new(&mut snap, "p1").req(500, 0).place("a");
        MakePod::new(&mut snap, "p2").req(500, 0).place("b");
        let q = placement_quality(&snap, (1000, 0), 0);
        assert_eq!(q.fragmentation_pods, 1);
        assert_eq!(q.nodes_used, 2);
        assert!((q.utilization["cpu"].mean - 0.5).abs() < 1e-9);
        assert!(q.utilization["cpu"].stddev.abs() < 1e-9);
    }

    #[test]
    fn digest_depends_on_every_placement() {
        let mut a = BTreeMap::new();
        a.insert("ns/p1".to_string(), "n1".to_string());
        a.insert("ns/p2".to_string(), "n2".to_string());
        let mut b = a.clone();
        assert_eq!(placement_digest(&a), placement_digest(&b));
        b.insert("ns/p2".to_string(), "n1".to_string());
        assert_ne!(placement_digest(&a), placement_digest(&b));
    }
}
