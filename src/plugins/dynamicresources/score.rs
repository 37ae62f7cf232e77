//! DynamicResources' Score and NormalizeScore (v1.37.2 `dynamicresources.go`: `Score`,
//! `computeScore`, `NormalizeScore`). With DRAPrioritizedList on (locked on at v1.37), a node
//! scores, for every claim of the pod, each allocated subrequest `req/sub` of a `firstAvailable`
//! request at index `i` as `FirstAvailableDeviceRequestMaxSize - i` (8 - i): a node that can give
//! the pod its preferred alternatives ranks above one that can give only fallbacks. The
//! allocations are those Filter made for the node (a claim allocated before the cycle counts with
//! its `status.allocation`); NormalizeScore is `helper.DefaultNormalizeScore(100, false)`.
//!
//! Upstream scores a node only when Filter cached allocations for it, which it does only when the
//! pod has a claim to allocate (it built an allocator): a pod whose claims are all allocated
//! scores 0 everywhere, as does one without `firstAvailable` requests and the special claim of
//! extended resources backed by DRA (its requests are `exactly`; those resources are scored by
//! NodeResourcesFit and BalancedAllocation, `extended.rs`). [`ScorePlan`] is built at PreFilter
//! only for a pod that can score unevenly, so every other pod leaves the plugin out of Score
//! (`score_is_uniform`).

use crate::api::resource::{AllocationResult, ResourceClaim};

/// `resourceapi.FirstAvailableDeviceRequestMaxSize`: at most this many subrequests per request.
pub const FIRST_AVAILABLE_MAX_SIZE: i64 = 8;

/// What Score needs beyond Filter's allocations, for a pod that may score unevenly.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorePlan {
    /// For each claim of the pod (its `claims` order): whether upstream sees it without
    /// `status.allocation` (to allocate in this cycle, or a PodGroup claim whose allocation a
    /// member's Reserve made in this pod-group cycle, upstream's pending allocation, which this
    /// model has already written to the claim).
    pub unallocated: Vec<bool>,
    /// The pending allocations of such PodGroup claims, in claim order: upstream's Filter appends
    /// them after the allocations it made (`allocations = append(allocationResult, pendingResult...)`).
    pub pending: Vec<AllocationResult>,
}

/// Whether a pod with these claims can score unevenly: DRAPrioritizedList on, some claim has a
/// `firstAvailable` request, and upstream builds an allocator for it (some claim without
/// `status.allocation` in its view: to allocate, or pending).
pub fn plan(
    claims: &[ResourceClaim],
    to_allocate: &[usize],
    pending: impl Fn(usize) -> bool,
    prioritized_list: bool,
) -> Option<ScorePlan> {
    if !prioritized_list {
        return None;
    }
    let ranked = claims.iter().any(|c| c.spec.devices.requests.iter().any(|r| !r.first_available.is_empty()));
    if !ranked {
        return None;
    }
    let pending_at: Vec<usize> = (0..claims.len())
        .filter(|&i| !to_allocate.contains(&i) && claims[i].status.allocation.is_some() && pending(i))
        .collect();
    if to_allocate.is_empty() && pending_at.is_empty() {
        return None;
    }
    let unallocated = (0..claims.len()).map(|i| to_allocate.contains(&i) || pending_at.contains(&i)).collect();
    let pending = pending_at.iter().filter_map(|&i| claims[i].status.allocation.clone()).collect();
    Some(ScorePlan { unallocated, pending })
}

/// `resourceclaim.IsSubRequestRef`: a result's request names a subrequest (`req/sub`).
fn is_sub_request_ref(request: &str) -> bool {
    request.split('/').count() == 2
}

/// `computeScore` over one node: `claims` in the pod's order (the special claim of extended
/// resources last), `unallocated` as [`ScorePlan::unallocated`], `results` upstream's
/// `allocationResults` for the node (Filter's allocations of the claims to allocate, in order,
/// then the pending ones), taken in turn by the unallocated claims, as upstream takes them: by
/// position, so with a pending claim before a claim to allocate, each gets the other's result.
/// `Err`: upstream's error when `results` run out.
pub fn compute_score(
    claims: &[ResourceClaim],
    unallocated: &[bool],
    results: &[&AllocationResult],
) -> Result<i64, String> {
    let mut score = 0;
    let mut next = 0;
    let mut allocated_sub: Vec<&str> = Vec::new();
    for (i, claim) in claims.iter().enumerate() {
        let own = claim.status.allocation.as_ref().filter(|_| !unallocated.get(i).copied().unwrap_or(false));
        let allocation = match own {
            Some(a) => a,
            None => {
                let Some(a) = results.get(next) else {
                    return Err(format!(
                        "number of allocations {} is smaller than number of claims needing allocation",
                        results.len()
                    ));
                };
                next += 1;
                a
            }
        };
        allocated_sub.clear();
        allocated_sub
            .extend(allocation.devices.results.iter().map(|r| r.request.as_str()).filter(|r| is_sub_request_ref(r)));
        for request in claim.spec.devices.requests.iter().filter(|r| r.exactly.is_none()) {
            for (at, sub) in request.first_available.iter().enumerate() {
                let name = request.name.len() + 1 + sub.name.len();
                let chosen = allocated_sub.iter().any(|r| {
                    r.len() == name
                        && r.starts_with(request.name.as_str())
                        && r.as_bytes()[request.name.len()] == b'/'
                        && r.ends_with(sub.name.as_str())
                });
                if chosen {
                    score += FIRST_AVAILABLE_MAX_SIZE - at as i64;
                }
            }
        }
    }
    Ok(score)
}

/// `helper.DefaultNormalizeScore(MaxNodeScore, false, scores)`: each score scaled to
/// `100 * score / max`; all left as they are when the highest is 0.
pub fn normalize(scores: &mut [i64]) {
    let max = scores.iter().copied().fold(0, i64::max);
    if max == 0 {
        return;
    }
    for s in scores {
        *s = crate::framework::MAX_NODE_SCORE * *s / max;
    }
}

/// Upstream's `Test_computesScore` and `TestNormalizeScore` (dynamicresources_test.go) as tables,
/// and the pending PodGroup allocation's place in the results.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resource::{
        DeviceAllocationResult, DeviceRequest, DeviceRequestAllocationResult, DeviceSubRequest, ExactDeviceRequest,
    };

    /// A claim with one `firstAvailable` request per `(name, subrequest count)`, subrequests
    /// `subreq-1..=n`; `(name, 0)` is an `exactly` request.
    fn claim(requests: &[(&str, usize)]) -> ResourceClaim {
        let mut c = ResourceClaim::default();
        c.spec.devices.requests = requests
            .iter()
            .map(|&(name, n)| DeviceRequest {
                name: name.into(),
                exactly: (n == 0)
                    .then(|| ExactDeviceRequest { device_class_name: "class".into(), ..Default::default() }),
                first_available: (1..=n)
                    .map(|i| DeviceSubRequest {
                        name: format!("subreq-{i}"),
                        device_class_name: "class".into(),
                        ..Default::default()
                    })
                    .collect(),
            })
            .collect();
        c
    }

    fn result(requests: &[&str]) -> AllocationResult {
        AllocationResult {
            devices: DeviceAllocationResult {
                results: requests
                    .iter()
                    .map(|r| DeviceRequestAllocationResult { request: r.to_string(), ..Default::default() })
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn allocated(mut c: ResourceClaim, requests: &[&str]) -> ResourceClaim {
        c.status.allocation = Some(result(requests));
        c
    }

    #[test]
    fn compute_score_table() {
        // (case, claims, unallocated, results) -> score or error.
        type Case = (&'static str, Vec<ResourceClaim>, Vec<bool>, Vec<AllocationResult>, Result<i64, &'static str>);
        let cases: Vec<Case> = vec![
            (
                "more-claims-than-allocations",
                vec![claim(&[("req-1", 1)]), claim(&[("req-2", 1)])],
                vec![true, true],
                vec![],
                Err("number of allocations 0 is smaller than number of claims needing allocation"),
            ),
            (
                "mix-of-allocated-and-unallocated-claims",
                vec![allocated(claim(&[("req-1", 0)]), &["req-1"]), claim(&[("req-1", 0)])],
                vec![false, true],
                vec![result(&["req-1"])],
                Ok(0),
            ),
            (
                "single-request-only-subrequest-allocated",
                vec![claim(&[("req-1", 1)])],
                vec![true],
                vec![result(&["req-1/subreq-1"])],
                Ok(8),
            ),
            (
                "single-request-last-subrequest-allocated",
                vec![claim(&[("req-1", 8)])],
                vec![true],
                vec![result(&["req-1/subreq-8"])],
                Ok(1),
            ),
            (
                "multiple-requests-with-middle-subrequests-allocated",
                vec![claim(&[("req-1", 4), ("req-2", 5)])],
                vec![true],
                vec![result(&["req-1/subreq-4", "req-2/subreq-5"])],
                Ok(9),
            ),
            (
                "multiple-requests-with-top-subrequests-allocated",
                vec![claim(&[("req-1", 8), ("req-2", 1)])],
                vec![true],
                vec![result(&["req-1/subreq-8", "req-2/subreq-1"])],
                Ok(9),
            ),
            (
                "multiple-claims-with-last-subrequests-allocated",
                vec![claim(&[("req-1", 8)]), claim(&[("req-2", 8)])],
                vec![true, true],
                vec![result(&["req-1/subreq-8"]), result(&["req-2/subreq-8"])],
                Ok(2),
            ),
            (
                "multiple-claims-with-top-subrequests-allocated",
                vec![claim(&[("req-1", 1)]), claim(&[("req-2", 1)])],
                vec![true, true],
                vec![result(&["req-1/subreq-1"]), result(&["req-2/subreq-1"])],
                Ok(16),
            ),
            // Ours: an allocated claim counts with its own allocation, taking no result.
            (
                "allocated claim with a chosen subrequest",
                vec![allocated(claim(&[("req-1", 2)]), &["req-1/subreq-2"]), claim(&[("req-2", 2)])],
                vec![false, true],
                vec![result(&["req-2/subreq-1"])],
                Ok(7 + 8),
            ),
            // A request named like another's subrequest prefix does not match it.
            (
                "a result of another request",
                vec![claim(&[("req-1", 2)])],
                vec![true],
                vec![result(&["req-10/subreq-1", "req/1/subreq-1"])],
                Ok(0),
            ),
            // The pending allocation of a PodGroup claim comes after Filter's: by position, the
            // claim before takes Filter's result (a req-2 result: nothing of req-1), the one after
            // the pending one.
            (
                "pending group claim before a claim to allocate",
                vec![allocated(claim(&[("req-1", 2)]), &["req-1/subreq-1"]), claim(&[("req-2", 2)])],
                vec![true, true],
                vec![result(&["req-2/subreq-2"]), result(&["req-1/subreq-1"])],
                Ok(0),
            ),
        ];
        for (name, claims, unallocated, results, want) in cases {
            let results: Vec<&AllocationResult> = results.iter().collect();
            let got = compute_score(&claims, &unallocated, &results);
            assert_eq!(got, want.map_err(str::to_string), "{name}");
        }
    }

    #[test]
    fn normalize_table() {
        const M: i64 = i32::MAX as i64;
        let cases: [(&str, Vec<i64>, Vec<i64>); 8] = [
            ("empty", vec![], vec![]),
            ("single-score", vec![42], vec![100]),
            ("all-same", vec![8, 8], vec![100, 100]),
            ("all-same-very-large", vec![M, M], vec![100, 100]),
            ("max-and-min-values", vec![M, 0], vec![100, 0]),
            ("mid-value", vec![99, 98, 97], vec![100, 98, 97]),
            ("large-spread-lost-precision", vec![M, M - 1, 1, 0], vec![100, 99, 0, 0]),
            ("all-zero", vec![0, 0], vec![0, 0]),
        ];
        for (name, mut scores, want) in cases {
            normalize(&mut scores);
            assert_eq!(scores, want, "{name}");
        }
    }

    /// (case, claims, to allocate, pending, gate on) -> the plan's `unallocated`, or no plan
    /// (the pod scores 0 on every node).
    #[test]
    fn plan_table() {
        let ranked = || claim(&[("req-1", 2)]);
        let exact = || claim(&[("req-1", 0)]);
        type Case = (&'static str, Vec<ResourceClaim>, Vec<usize>, Vec<usize>, bool, Option<Vec<bool>>);
        let cases: Vec<Case> = vec![
            ("firstAvailable to allocate", vec![ranked()], vec![0], vec![], true, Some(vec![true])),
            ("gate off", vec![ranked()], vec![0], vec![], false, None),
            ("no firstAvailable request", vec![exact(), exact()], vec![0, 1], vec![], true, None),
            (
                "all allocated: no allocator upstream",
                vec![allocated(ranked(), &["req-1/subreq-1"])],
                vec![],
                vec![],
                true,
                None,
            ),
            (
                "allocated ranked claim, exact claim to allocate",
                vec![allocated(ranked(), &["req-1/subreq-1"]), exact()],
                vec![1],
                vec![],
                true,
                Some(vec![false, true]),
            ),
            (
                "pending PodGroup claim only",
                vec![allocated(ranked(), &["req-1/subreq-1"])],
                vec![],
                vec![0],
                true,
                Some(vec![true]),
            ),
        ];
        for (name, claims, to_allocate, pending, gate, want) in cases {
            let got = plan(&claims, &to_allocate, |i| pending.contains(&i), gate);
            assert_eq!(got.as_ref().map(|p| p.unallocated.clone()), want, "{name}");
            if let Some(p) = got {
                assert_eq!(p.pending.len(), pending.len(), "{name}: pending allocations");
            }
        }
    }

    /// A node `name` with a ResourceSlice of `devices` devices of driver `some-driver` (pool `name`),
    /// the first with attribute `healthy: {healthy}` when set.
    fn node_with_devices(name: &str, devices: usize, healthy: Option<bool>) -> String {
        let attrs = healthy.map_or(String::new(), |h| format!(", attributes: {{healthy: {{bool: {h}}}}}"));
        let devices: Vec<String> =
            (1..=devices).map(|i| format!("{{name: instance-{i}{}}}", if i == 1 { &attrs } else { "" })).collect();
        format!(
            "- {{apiVersion: v1, kind: Node, metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}, status: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}}}}}\n\
             - apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  metadata: {{name: slice-{name}}}\n  spec: {{driver: some-driver, nodeName: {name}, pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}, devices: [{}]}}\n",
            devices.join(", ")
        )
    }

    /// A pending claim `name` with one `firstAvailable` request per entry of `requests` (named
    /// `req-1`, `req-2`, ...), each a list of subrequests `subreq-1`, ... given as (count, CEL
    /// selector).
    fn claim_yaml(name: &str, requests: &[&[(u32, Option<&str>)]]) -> String {
        let reqs: Vec<String> = requests
            .iter()
            .enumerate()
            .map(|(r, subs)| {
                let subs: Vec<String> = subs
                    .iter()
                    .enumerate()
                    .map(|(i, (count, cel))| {
                        let sel =
                            cel.map_or(String::new(), |c| format!(", selectors: [{{cel: {{expression: '{c}'}}}}]"));
                        format!("{{name: subreq-{}, deviceClassName: my-resource-class, count: {count}{sel}}}", i + 1)
                    })
                    .collect();
                format!("{{name: req-{}, firstAvailable: [{}]}}", r + 1, subs.join(", "))
            })
            .collect();
        format!(
            "- apiVersion: resource.k8s.io/v1\n  kind: ResourceClaim\n  metadata: {{name: {name}, namespace: default}}\n  spec: {{devices: {{requests: [{}]}}}}\n",
            reqs.join(", ")
        )
    }

    /// Upstream's `TestPlugin` scoring cases (dynamicresources_test.go: single-claim-, multiple-claims-
    /// and multiple-requests-prioritized-list-scoring) through `schedperf explain` with the default
    /// profile: (case, cluster, the pod's claims) -> each node's DynamicResources (raw, normalized)
    /// score, or `None` for a node Filter rejects.
    #[test]
    fn prioritized_list_scoring_through_explain() {
        const CLASS: &str =
            "- {apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: my-resource-class}}\n";
        type Case = (&'static str, Vec<String>, Vec<&'static str>, Vec<(&'static str, Option<(i64, i64)>)>);
        let cases: Vec<Case> = vec![
            (
                "single-claim-prioritized-list-scoring",
                vec![
                    node_with_devices("worker", 1, Some(true)),
                    node_with_devices("worker-2", 1, Some(false)),
                    claim_yaml(
                        "my-pod-claim",
                        &[&[(1, Some("device.attributes[\"some-driver\"].healthy")), (1, None)]],
                    ),
                ],
                vec!["my-pod-claim"],
                vec![("worker", Some((8, 100))), ("worker-2", Some((7, 87)))],
            ),
            (
                "multiple-claims-prioritized-list-scoring",
                vec![
                    node_with_devices("worker", 4, None),
                    node_with_devices("worker-2", 2, None),
                    node_with_devices("worker-3", 1, None),
                    claim_yaml("my-pod-claim", &[&[(1, None)]]),
                    claim_yaml("my-pod-claim-2", &[&[(4, None), (3, None), (2, None), (1, None)]]),
                ],
                vec!["my-pod-claim", "my-pod-claim-2"],
                vec![("worker", Some((15, 100))), ("worker-2", Some((13, 86))), ("worker-3", None)],
            ),
            (
                "multiple-requests-prioritized-list-scoring",
                vec![
                    node_with_devices("worker", 4, None),
                    node_with_devices("worker-2", 3, None),
                    node_with_devices("worker-3", 2, None),
                    claim_yaml("my-pod-claim", &[&[(2, None), (1, None)], &[(2, None), (1, None)]]),
                ],
                vec!["my-pod-claim"],
                vec![("worker", Some((16, 100))), ("worker-2", Some((15, 93))), ("worker-3", Some((14, 87)))],
            ),
        ];
        for (name, objects, claims, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let cluster = d.path().join("cluster.yaml");
            std::fs::write(&cluster, format!("apiVersion: v1\nkind: List\nitems:\n{CLASS}{}", objects.concat()))
                .unwrap();
            let entries: Vec<String> =
                claims.iter().map(|c| format!("{{name: {c}, resourceClaimName: {c}}}")).collect();
            let pod = d.path().join("pod.yaml");
            std::fs::write(
                &pod,
                format!(
                    "apiVersion: v1\nkind: Pod\nmetadata: {{name: my-pod, namespace: default, uid: '1234'}}\nspec:\n  containers: [{{name: c, image: i}}]\n  resourceClaims: [{}]\n",
                    entries.join(", ")
                ),
            )
            .unwrap();
            let input = crate::explain::ExplainInput { cluster: vec![cluster], pod, config: None, seed: 1 };
            let e = crate::explain::explain(&input).unwrap();
            for (node, want) in want {
                let n = e.nodes.iter().find(|n| n.name == node).unwrap();
                let got = n.scores.as_ref().map(|s| {
                    let s = &s["DynamicResources"];
                    assert_eq!(s.weight, 2, "{name}: {node}: the default profile's weight");
                    (s.raw, s.score)
                });
                assert_eq!(got, want, "{name}: {node}: {:?}", n.filter);
            }
            assert_eq!(e.selected.as_deref(), Some("worker"), "{name}: the highest DynamicResources score wins");
        }
    }
}
