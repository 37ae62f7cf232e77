//! NodeResourcesFit (Filter + the three scoring strategies) and NodeResourcesBalancedAllocation,
//! `plugins/noderesources`. All scoring is integer math as upstream, except BalancedAllocation's
//! standard deviation (f64, as upstream).

use crate::framework::sign::{keys, Sign, SignBuilder};
use crate::snapshot::PodInfo;
use std::borrow::Cow;

use crate::api::names::{is_extended_resource_name, is_scalar_resource_name};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, ScoreMemoKey, Status, MAX_NODE_SCORE};
use crate::plugins::dynamicresources::extended::{self, ExtendedScoring};
use crate::snapshot::nodes::{CoreRequests, ScalarColumn};
use crate::snapshot::Resources;
use crate::snapshot::{NodeIdx, Snapshot, Sym};

pub const FIT: &str = "NodeResourcesFit";
pub const BALANCED: &str = "NodeResourcesBalancedAllocation";

/// `MaxCustomPriorityScore`: RequestedToCapacityRatio shape scores run 0..=10, scaled by 10.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
/// Utilization runs 0..=100 in RequestedToCapacityRatio shapes.
const MAX_UTILIZATION: i64 = 100;

/// The scoring strategy of NodeResourcesFitArgs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StrategyKind {
    LeastAllocated,
    MostAllocated,
    /// Shape points (utilization 0..=100, score 0..=10 as configured).
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

/// A resource the scorer looks at, with its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoredResource {
    pub name: Sym,
    pub weight: i64,
}

/// Which column a resource name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ResKind {
    Cpu,
    Memory,
    Ephemeral,
    Scalar(Sym),
    /// Not a resource the node table tracks (e.g. `pods`): always skipped.
    Other,
}

fn res_kind(snap: &Snapshot, name: Sym) -> ResKind {
    match snap.interner.resolve(name) {
        "cpu" => ResKind::Cpu,
        "memory" => ResKind::Memory,
        "ephemeral-storage" => ResKind::Ephemeral,
        s if is_scalar_resource_name(s) => ResKind::Scalar(name),
        _ => ResKind::Other,
    }
}

/// One resource of a score, resolved against the node table for one pod. Sparse scalar columns
/// are materialized (once per pod, only when the pod requests that resource).
struct ScoreColumn<'a> {
    alloc: Cow<'a, [i64]>,
    requested: Cow<'a, [i64]>,
    pod_request: i64,
    weight: i64,
}

/// Resolves the configured resources for one pod: `use_requested` picks real requests (Balanced)
/// over the non-zero scoring defaults (Fit; the pod's side without pod-level requests, as
/// upstream's Fit scorer). Resources a pod does not request that are scalar,
/// and resources the table does not track, are left out (upstream's `(0, 0)`).
fn score_columns<'a>(
    snap: &'a Snapshot,
    cx: CycleCx<'_>,
    resources: &[ScoredResource],
    use_requested: bool,
) -> Vec<ScoreColumn<'a>> {
    let t = &snap.nodes;
    let pod = cx.pod;
    let mut out = Vec::with_capacity(resources.len());
    for r in resources {
        let col = match res_kind(snap, r.name) {
            ResKind::Cpu => {
                let (req, pod_request) = if use_requested {
                    (&t.req_cpu_milli, pod.requests.cpu_milli)
                } else {
                    (&t.non_zero_cpu_milli, pod.fit_score_cpu_milli)
                };
                ScoreColumn {
                    alloc: Cow::Borrowed(&t.alloc_cpu_milli),
                    requested: Cow::Borrowed(req),
                    pod_request,
                    weight: r.weight,
                }
            }
            ResKind::Memory => {
                let (req, pod_request) = if use_requested {
                    (&t.req_memory, pod.requests.memory)
                } else {
                    (&t.non_zero_memory, pod.fit_score_memory)
                };
                ScoreColumn {
                    alloc: Cow::Borrowed(&t.alloc_memory),
                    requested: Cow::Borrowed(req),
                    pod_request,
                    weight: r.weight,
                }
            }
            ResKind::Ephemeral => ScoreColumn {
                alloc: Cow::Borrowed(&t.alloc_ephemeral_storage),
                requested: Cow::Borrowed(&t.req_ephemeral_storage),
                pod_request: pod.requests.ephemeral_storage,
                weight: r.weight,
            },
            ResKind::Scalar(name) => {
                let pod_request = pod.requests.scalar(name);
                if pod_request == 0 {
                    continue;
                }
                let Some(c) = t.scalar_column(name) else { continue };
                let (alloc, requested) = match c.dense_rows() {
                    Some((a, r)) => (Cow::Borrowed(a), Cow::Borrowed(r)),
                    None => {
                        let (a, r) = c.to_dense(t.len());
                        (Cow::Owned(a), Cow::Owned(r))
                    }
                };
                ScoreColumn { alloc, requested, pod_request, weight: r.weight }
            }
            ResKind::Other => continue,
        };
        out.push(col);
    }
    out
}

/// Whether the pod requests extended resources backed by DRA (DynamicResources' PreFilter wrote
/// their device counts): its scores then depend on allocations, not on the node row alone. One
/// test for a pod without extended resources.
fn dra_scored(cx: CycleCx<'_>, state: &CycleState) -> bool {
    !cx.pod.requests.scalars.is_empty() && state.read::<ExtendedScoring>(extended::SCORING_KEY).is_some()
}

/// The scored resources backed by DRA that no node advertises (so [`score_columns`] left them
/// out) and the pod requests: allocatable is the node's devices of the class, requested the
/// allocated ones (`calculateDRAExtendedResourceAllocatableRequest`).
fn add_dra_columns<'a>(
    cx: CycleCx<'_>,
    state: &'a CycleState,
    resources: &[ScoredResource],
    cols: &mut Vec<ScoreColumn<'a>>,
) {
    if cx.pod.requests.scalars.is_empty() {
        return;
    }
    let Some(dra) = state.read::<ExtendedScoring>(extended::SCORING_KEY) else { return };
    for r in resources {
        // No node advertises it (DynamicResources' PreFilter refuses a pod otherwise): a column
        // `score_columns` made from pods' requests has allocatable 0 everywhere and counts nowhere.
        let Some(c) = dra.column(r.name) else { continue };
        cols.push(ScoreColumn {
            alloc: Cow::Borrowed(&c.capacity),
            requested: Cow::Borrowed(&c.allocated),
            pod_request: c.quantity,
            weight: r.weight,
        });
    }
}

/// The pod's side of every scored resource, as [`score_columns`] reads it: with the node row, all
/// that the Fit and BalancedAllocation scores depend on (their memo key).
fn pod_side_key(cx: CycleCx<'_>, resources: &[ScoredResource], use_requested: bool) -> ScoreMemoKey {
    let pod = cx.pod;
    resources
        .iter()
        .map(|r| match res_kind(cx.snap, r.name) {
            ResKind::Cpu if use_requested => pod.requests.cpu_milli,
            ResKind::Cpu => pod.fit_score_cpu_milli,
            ResKind::Memory if use_requested => pod.requests.memory,
            ResKind::Memory => pod.fit_score_memory,
            ResKind::Ephemeral => pod.requests.ephemeral_storage,
            ResKind::Scalar(name) => pod.requests.scalar(name),
            ResKind::Other => 0,
        })
        .collect()
}

/// `a / b` rounded down, for `0 <= a`, `0 < b`, `a + 2b < 2^63` and a small quotient (`a / b <
/// 2^51`; scores are at most a few hundred). Exact and branch-free: the f64 quotient rounded to the
/// nearest integer by adding 2^52 (which leaves the integer in the low mantissa bits), then one
/// integer multiply-compare each way fixes an estimate off by one. A 64-bit integer division costs
/// tens of cycles and the score kernels do one per node per resource.
#[inline]
pub fn div_small(a: i64, b: i64) -> i64 {
    debug_assert!(a >= 0 && b > 0);
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let x = a as f64 / b as f64 + TWO_52;
    let q = x.to_bits().wrapping_sub(TWO_52.to_bits()) as i64;
    let q = q - (q.wrapping_mul(b) > a) as i64;
    q + ((q + 1).wrapping_mul(b) <= a) as i64
}

/// `leastRequestedScore`.
#[inline]
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    least_requested_score_nonzero(requested, capacity)
}

/// `leastRequestedScore` for `capacity > 0`, without branches: requests above capacity score 0.
#[inline]
fn least_requested_score_nonzero(requested: i64, capacity: i64) -> i64 {
    div_small((capacity - requested).max(0) * MAX_NODE_SCORE, capacity)
}

/// `mostRequestedScore`: requests above capacity count as capacity.
#[inline]
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    most_requested_score_nonzero(requested, capacity)
}

/// `mostRequestedScore` for `capacity > 0`, without branches.
#[inline]
fn most_requested_score_nonzero(requested: i64, capacity: i64) -> i64 {
    div_small(requested.min(capacity).max(0) * MAX_NODE_SCORE, capacity)
}

/// `BuildBrokenLinearFunction` over shape points already scaled to 0..=100 scores.
#[inline]
pub fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for i in 0..shape.len() {
        if p <= shape[i].0 {
            if i == 0 {
                return shape[0].1;
            }
            let (u0, s0) = shape[i - 1];
            let (u1, s1) = shape[i];
            return s0 + (s1 - s0) * (p - u0) / (u1 - u0);
        }
    }
    shape.last().map_or(0, |s| s.1)
}

/// NodeResourcesFit.
pub struct Fit {
    pub ignored_resources: Vec<Sym>,
    pub ignored_resource_groups: Vec<String>,
    pub strategy: StrategyKind,
    pub resources: Vec<ScoredResource>,
}

/// PreFilter state: the pod's scalar requests that are checked, with their columns' positions.
struct FitState {
    scalars: Vec<(Sym, i64, Option<u32>)>,
}

impl Fit {
    #[inline(always)]
    fn fit_state(&self, cx: CycleCx<'_>) -> FitState {
        let snap = cx.snap;
        let scalars = cx
            .pod
            .requests
            .scalars
            .iter()
            .filter(|(_, q)| *q != 0)
            .filter(|(name, _)| {
                let s = snap.interner.resolve(*name);
                if !is_extended_resource_name(s) {
                    return true;
                }
                let prefix = s.split('/').next().unwrap_or("");
                !(self.ignored_resources.contains(name) || self.ignored_resource_groups.iter().any(|g| g == prefix))
            })
            // Left to DynamicResources: a resource a DeviceClass maps and no node advertises.
            .filter(|&&(name, _)| snap.cluster.dra.classes.is_empty() || !extended::delegated(snap, name))
            .map(|&(name, q)| (name, q, snap.nodes.scalar_column_index(name)))
            .collect();
        FitState { scalars }
    }

    fn shape_scaled(&self) -> Vec<(i64, i64)> {
        match &self.strategy {
            StrategyKind::RequestedToCapacityRatio(shape) => {
                shape.iter().map(|&(u, s)| (u, s * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE))).collect()
            }
            _ => Vec::new(),
        }
    }

    /// [`Fit::filter_rows`] while the table counts nominated pods ([`filter_rows_nominated`]); a
    /// function of its own, so the plain loop's code stays as it was.
    #[inline(never)]
    fn filter_rows_nominated(
        &self,
        cx: CycleCx<'_>,
        state: &CycleState,
        nodes: &[NodeIdx],
        out: &mut [Option<Reject>],
    ) -> bool {
        let owned;
        let st = match state.read::<FitState>(FIT) {
            Some(s) => s,
            None => {
                owned = self.fit_state(cx);
                &owned
            }
        };
        let columns = cx.snap.nodes.scalar_columns();
        let scalars: smallvec::SmallVec<[(i64, Option<&ScalarColumn>); 2]> =
            st.scalars.iter().map(|&(_, q, col)| (q, col.map(|c| &columns[c as usize]))).collect();
        filter_rows_nominated(&cx.snap.nodes, &cx.pod.requests, &scalars, nodes, out)
    }

    /// NodeResourcesFit's Filter over `nodes`: writes each rejection into `out`; true when it
    /// rejected a node.
    fn filter_rows(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) -> bool {
        let mut any = false;
        let owned;
        let st = match state.read::<FitState>(FIT) {
            Some(s) => s,
            None => {
                owned = self.fit_state(cx);
                &owned
            }
        };
        let t = &cx.snap.nodes;
        let r = &cx.pod.requests;
        let all_zero = r.cpu_milli == 0 && r.memory == 0 && r.ephemeral_storage == 0 && r.scalars.is_empty();
        let columns = t.scalar_columns();
        let scalars: smallvec::SmallVec<[(i64, Option<&ScalarColumn>); 2]> =
            st.scalars.iter().map(|&(_, q, col)| (q, col.map(|c| &columns[c as usize]))).collect();
        // A resource is checked only when the pod requests it (upstream skips zero requests; a pod
        // requesting nothing is checked for the pod count only). The per-node checks are
        // branch-free: each comparison sets its bit.
        let ephemeral = r.ephemeral_storage > 0;
        // A zero request is not checked: i64::MIN exceeds no free amount (and needs no flag the
        // loops would have to keep in a register).
        let need = |q: i64| if q > 0 { q } else { i64::MIN };
        let (cpu_need, memory_need) = (need(r.cpu_milli), need(r.memory));
        // Every column cut to the table's length: one bounds check per node covers them all.
        let len = t.len();
        let (pod_count, alloc_pods) = (&t.pod_count[..len], &t.alloc_pods[..len]);
        let (alloc_cpu, req_cpu) = (&t.alloc_cpu_milli[..len], &t.req_cpu_milli[..len]);
        let (alloc_memory, req_memory) = (&t.alloc_memory[..len], &t.req_memory[..len]);
        if scalars.is_empty() && !ephemeral {
            // The common pod (CPU and memory at most): the pod count and two columns, no loop
            // over scalar resources per node.
            if let Some(lo) = row_range(nodes) {
                // A block of consecutive rows (the filter pass in row order): every column cut to
                // the block, read by position (no node id loaded, no bounds check per node).
                let m = nodes.len();
                let out = &mut out[..m];
                let (pod_count, alloc_pods) = (&pod_count[lo..][..m], &alloc_pods[lo..][..m]);
                let (alloc_cpu, req_cpu) = (&alloc_cpu[lo..][..m], &req_cpu[lo..][..m]);
                let (alloc_memory, req_memory) = (&alloc_memory[lo..][..m], &req_memory[lo..][..m]);
                for k in 0..m {
                    let bits = ((pod_count[k] as i64 + 1 > alloc_pods[k]) as u64 * FIT_PODS)
                        | ((cpu_need > alloc_cpu[k] - req_cpu[k]) as u64 * FIT_CPU)
                        | ((memory_need > alloc_memory[k] - req_memory[k]) as u64 * FIT_MEMORY);
                    if bits != 0 {
                        any = true;
                        out[k] = Some(common_reject(bits, r, alloc_cpu[k], alloc_memory[k]));
                    }
                }
                return any;
            }
            for (n, o) in nodes.iter().zip(out.iter_mut()) {
                let i = n.ix();
                let bits = ((pod_count[i] as i64 + 1 > alloc_pods[i]) as u64 * FIT_PODS)
                    | ((cpu_need > alloc_cpu[i] - req_cpu[i]) as u64 * FIT_CPU)
                    | ((memory_need > alloc_memory[i] - req_memory[i]) as u64 * FIT_MEMORY);
                if bits != 0 {
                    any = true;
                    // No ephemeral-storage request here: its allocatable is not read.
                    *o = Some(core_reject(bits, r, alloc_cpu[i], alloc_memory[i], i64::MAX));
                }
            }
            return any;
        }
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            let i = n.ix();
            let mut bits = (pod_count[i] as i64 + 1 > alloc_pods[i]) as u64 * FIT_PODS;
            bits |= (cpu_need > alloc_cpu[i] - req_cpu[i]) as u64 * FIT_CPU;
            bits |= (memory_need > alloc_memory[i] - req_memory[i]) as u64 * FIT_MEMORY;
            if ephemeral && r.ephemeral_storage > t.alloc_ephemeral_storage[i] - t.req_ephemeral_storage[i] {
                bits |= FIT_EPHEMERAL;
            }
            if !all_zero {
                for (j, &(q, col)) in scalars.iter().enumerate() {
                    let free = col.map_or(0, |c| c.free(*n));
                    if q > free {
                        bits |= 1 << (FIT_SCALAR_SHIFT + j.min(59) as u32);
                    }
                }
            }
            if bits != 0 {
                any = true;
                // A resource requested beyond the node's allocatable can never fit there:
                // UnschedulableAndUnresolvable (preemption skips the node), as v1.37's fitsRequest.
                // Worked out only for rejected nodes, off the hot path.
                let unresolvable = (bits & FIT_CPU != 0 && r.cpu_milli > alloc_cpu[i])
                    || (bits & FIT_MEMORY != 0 && r.memory > alloc_memory[i])
                    || (bits & FIT_EPHEMERAL != 0 && r.ephemeral_storage > t.alloc_ephemeral_storage[i])
                    || scalars.iter().enumerate().any(|(j, &(q, col))| {
                        bits & (1 << (FIT_SCALAR_SHIFT + j.min(59) as u32)) != 0
                            && q > col.map_or(0, |c| c.allocatable(*n))
                    });
                *o = Some(if unresolvable { Reject::unresolvable(bits) } else { Reject::unschedulable(bits) });
            }
        }
        any
    }
}

/// `nodes` as a range of rows: `Some(first)` when `nodes[k]` is row `first + k` for every `k` (the
/// filter pass's blocks when the scan order is the row order), so a kernel can cut its columns to
/// the block and read them by position. Branch-free over the block (an OR of differences).
#[inline]
pub fn row_range(nodes: &[NodeIdx]) -> Option<usize> {
    let first = nodes.first()?.0;
    let off = nodes.iter().zip(0u32..).fold(0u32, |acc, (n, k)| acc | (n.0 ^ first.wrapping_add(k)));
    (off == 0).then_some(first as usize)
}

/// Every verdict of the common pod (no ephemeral or scalar request checked) by its code: the
/// rejection bits (`FIT_PODS`, `FIT_CPU`, `FIT_MEMORY`), plus 8 when a rejected resource is
/// requested beyond the node's allocatable ([`common_reject`]'s UnschedulableAndUnresolvable).
/// Code 0 passes. The branch-free kernels write `COMMON_VERDICTS[code]` per node.
const COMMON_VERDICTS: [Option<Reject>; 16] = {
    let mut t = [None; 16];
    let mut c = 1;
    while c < 16 {
        let bits = (c & 7) as u64;
        if bits != 0 {
            t[c] = Some(if c & 8 != 0 { Reject::unresolvable(bits) } else { Reject::unschedulable(bits) });
        }
        c += 1;
    }
    t
};

/// [`core_reject`] for a pod requesting no ephemeral storage (the common pod: its allocatable is
/// not read), without branches.
#[inline(always)]
fn common_reject(bits: u64, r: &Resources, alloc_cpu_milli: i64, alloc_memory: i64) -> Reject {
    let unresolvable = ((bits & FIT_CPU != 0) & (r.cpu_milli > alloc_cpu_milli))
        | ((bits & FIT_MEMORY != 0) & (r.memory > alloc_memory));
    if unresolvable {
        Reject::unresolvable(bits)
    } else {
        Reject::unschedulable(bits)
    }
}

/// [`Fit::filter_rows`] while the table counts nominated pods ([`crate::snapshot::NodeTable::counts_nominated`]):
/// each row's requests and pod count are read with its nominated columns (`nom_*`) added, which is
/// what shifting the rows by those sums ([`crate::snapshot::NodeTable::shift_core_sum`]) and
/// filtering does, with no row written. `scalars` are the checked scalar requests with their
/// columns (nominated pods counted on the columns carry no scalar request). True when it rejected
/// a node. Over a block of consecutive rows, the common pod's verdicts are written for every node
/// (`None` where it passes, as the filter pass hands `out` over: all `None`).
fn filter_rows_nominated(
    t: &crate::snapshot::NodeTable,
    r: &Resources,
    scalars: &[(i64, Option<&ScalarColumn>)],
    nodes: &[NodeIdx],
    out: &mut [Option<Reject>],
) -> bool {
    let need = |q: i64| if q > 0 { q } else { i64::MIN };
    let (cpu_need, memory_need, ephemeral_need) = (need(r.cpu_milli), need(r.memory), need(r.ephemeral_storage));
    // Every column cut to the table's length: one bounds check per node covers them all.
    let len = t.len();
    let (pod_count, nom_pods, alloc_pods) = (&t.pod_count[..len], &t.nom_pods[..len], &t.alloc_pods[..len]);
    let (alloc_cpu, req_cpu, nom_cpu) = (&t.alloc_cpu_milli[..len], &t.req_cpu_milli[..len], &t.nom_cpu_milli[..len]);
    let (alloc_memory, req_memory, nom_memory) = (&t.alloc_memory[..len], &t.req_memory[..len], &t.nom_memory[..len]);
    let (alloc_eph, req_eph, nom_eph) =
        (&t.alloc_ephemeral_storage[..len], &t.req_ephemeral_storage[..len], &t.nom_ephemeral_storage[..len]);
    let mut any = false;
    if scalars.is_empty() && r.ephemeral_storage <= 0 {
        // The common pod (CPU and memory at most), as `filter_rows`'s own loop: no ephemeral or
        // scalar check per node, and the unresolvable test without branches.
        if let Some(lo) = row_range(nodes) {
            // A block of consecutive rows (the failing cycle of a preemptor scans every row in
            // order): every column cut to the block and read by position.
            let m = nodes.len();
            let out = &mut out[..m];
            let (pod_count, nom_pods, alloc_pods) =
                (&pod_count[lo..][..m], &nom_pods[lo..][..m], &alloc_pods[lo..][..m]);
            let (alloc_cpu, req_cpu, nom_cpu) = (&alloc_cpu[lo..][..m], &req_cpu[lo..][..m], &nom_cpu[lo..][..m]);
            let (alloc_memory, req_memory, nom_memory) =
                (&alloc_memory[lo..][..m], &req_memory[lo..][..m], &nom_memory[lo..][..m]);
            // Without a branch per node: each node's verdict as a code (the rejection bits, and
            // bit 3 when a rejected resource is requested beyond the allocatable, as
            // `common_reject`), written from the table of every verdict the code can stand for.
            // `need > allocatable` stands for `request > allocatable` in the unresolvable test:
            // they differ only for a zero request, whose resource is never rejected.
            let table = &COMMON_VERDICTS;
            let mut codes = 0usize;
            for k in 0..m {
                // `pods + 1 > allocatable` as `pods >= allocatable` (integers).
                let pods = (pod_count[k] as i64 + nom_pods[k] >= alloc_pods[k]) as usize;
                let cpu_over = (cpu_need > alloc_cpu[k] - (req_cpu[k] + nom_cpu[k])) as usize;
                let memory_over = (memory_need > alloc_memory[k] - (req_memory[k] + nom_memory[k])) as usize;
                let unresolvable = (cpu_over & (cpu_need > alloc_cpu[k]) as usize)
                    | (memory_over & (memory_need > alloc_memory[k]) as usize);
                let code = pods | (cpu_over << 1) | (memory_over << 2) | (unresolvable << 3);
                codes |= code;
                out[k] = table[code & 15];
            }
            return codes != 0;
        }
        for (n, o) in nodes.iter().zip(out.iter_mut()) {
            let i = n.ix();
            let bits = ((pod_count[i] as i64 + nom_pods[i] + 1 > alloc_pods[i]) as u64 * FIT_PODS)
                | ((cpu_need > alloc_cpu[i] - (req_cpu[i] + nom_cpu[i])) as u64 * FIT_CPU)
                | ((memory_need > alloc_memory[i] - (req_memory[i] + nom_memory[i])) as u64 * FIT_MEMORY);
            if bits != 0 {
                any = true;
                *o = Some(common_reject(bits, r, alloc_cpu[i], alloc_memory[i]));
            }
        }
        return any;
    }
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let i = n.ix();
        let mut bits = ((pod_count[i] as i64 + nom_pods[i] + 1 > alloc_pods[i]) as u64 * FIT_PODS)
            | ((cpu_need > alloc_cpu[i] - (req_cpu[i] + nom_cpu[i])) as u64 * FIT_CPU)
            | ((memory_need > alloc_memory[i] - (req_memory[i] + nom_memory[i])) as u64 * FIT_MEMORY)
            | ((ephemeral_need > alloc_eph[i] - (req_eph[i] + nom_eph[i])) as u64 * FIT_EPHEMERAL);
        for (j, &(q, col)) in scalars.iter().enumerate() {
            if q > col.map_or(0, |c| c.free(*n)) {
                bits |= 1 << (FIT_SCALAR_SHIFT + j.min(59) as u32);
            }
        }
        if bits != 0 {
            any = true;
            // As `filter_rows`: a resource requested beyond the node's allocatable is unresolvable.
            let unresolvable = (bits & FIT_CPU != 0 && r.cpu_milli > alloc_cpu[i])
                || (bits & FIT_MEMORY != 0 && r.memory > alloc_memory[i])
                || (bits & FIT_EPHEMERAL != 0 && r.ephemeral_storage > alloc_eph[i])
                || scalars.iter().enumerate().any(|(j, &(q, col))| {
                    bits & (1 << (FIT_SCALAR_SHIFT + j.min(59) as u32)) != 0 && q > col.map_or(0, |c| c.allocatable(*n))
                });
            *o = Some(if unresolvable { Reject::unresolvable(bits) } else { Reject::unschedulable(bits) });
        }
    }
    any
}

/// NodeResourcesFit's verdict on row `i` of `t` as if `delta` were added to its request columns
/// and pod count ([`crate::snapshot::NodeTable::shift_core_sum`]), for a pod whose Filter checks
/// no scalar resource (every scalar request zero, as [`crate::framework::Framework::filters_read_only_columns`]
/// asks): true when [`Fit::filter_rows`] would reject the node. The pod count, then CPU, memory and
/// ephemeral storage where the pod requests them. PostFilter's dry runs ask it per victim instead
/// of shifting the row and running every Filter; the verdict only grows with `delta`.
#[inline]
pub fn rejects_core_with(t: &crate::snapshot::NodeTable, i: usize, delta: &CoreRequests, r: &Resources) -> bool {
    core_bits(
        t.alloc_pods[i] - (t.pod_count[i] as i64 + delta.pods),
        t.alloc_cpu_milli[i] - (t.req_cpu_milli[i] + delta.cpu_milli),
        t.alloc_memory[i] - (t.req_memory[i] + delta.memory),
        t.alloc_ephemeral_storage[i] - (t.req_ephemeral_storage[i] + delta.ephemeral_storage),
        r,
    ) != 0
}

/// NodeResourcesFit's rejection bits (pod count, CPU, memory, ephemeral storage: the order of its
/// reasons) for a pod requesting `r`, no scalar resource checked, on a node with `pods_free` pod
/// slots left (allocatable pods minus pods) and `cpu_free`, `memory_free`, `ephemeral_free` left
/// (allocatable minus requested); 0 when the pod fits. A zero request is not checked. Fit's Filter
/// and PostFilter's dry run in locals (`defaultpreemption::fit_local`) both decide with it.
#[inline]
pub fn core_bits(pods_free: i64, cpu_free: i64, memory_free: i64, ephemeral_free: i64, r: &Resources) -> u64 {
    let need = |q: i64| if q > 0 { q } else { i64::MIN };
    ((1 > pods_free) as u64 * FIT_PODS)
        | ((need(r.cpu_milli) > cpu_free) as u64 * FIT_CPU)
        | ((need(r.memory) > memory_free) as u64 * FIT_MEMORY)
        | ((need(r.ephemeral_storage) > ephemeral_free) as u64 * FIT_EPHEMERAL)
}

/// [`core_bits`]'s thresholds for a pod requesting `r`, in its order (pod slots, CPU, memory,
/// ephemeral storage): the free amount each must reach (`i64::MIN` for a zero request, never
/// checked). Worked out once per pod for [`core_rejects`].
#[inline]
pub fn core_needs(r: &Resources) -> [i64; 4] {
    let need = |q: i64| if q > 0 { q } else { i64::MIN };
    [1, need(r.cpu_milli), need(r.memory), need(r.ephemeral_storage)]
}

/// `core_bits(free[0], free[1], free[2], free[3], r) != 0` with `needs` = [`core_needs`]`(r)`
/// (proptest `core_rejects_is_core_bits`), without a branch.
#[inline(always)]
pub fn core_rejects(free: &[i64; 4], needs: &[i64; 4]) -> bool {
    (needs[0] > free[0]) | (needs[1] > free[1]) | (needs[2] > free[2]) | (needs[3] > free[3])
}

/// Fit's [`Reject`] for the non-zero `bits` of [`core_bits`]: UnschedulableAndUnresolvable when a
/// rejected resource is requested beyond the node's allocatable (preemption cannot help), as
/// v1.37's fitsRequest; Unschedulable otherwise. [`Plugin::reasons`] turns it into text.
#[inline]
pub fn core_reject(bits: u64, r: &Resources, alloc_cpu_milli: i64, alloc_memory: i64, alloc_ephemeral: i64) -> Reject {
    let unresolvable = (bits & FIT_CPU != 0 && r.cpu_milli > alloc_cpu_milli)
        || (bits & FIT_MEMORY != 0 && r.memory > alloc_memory)
        || (bits & FIT_EPHEMERAL != 0 && r.ephemeral_storage > alloc_ephemeral);
    if unresolvable {
        Reject::unresolvable(bits)
    } else {
        Reject::unschedulable(bits)
    }
}

const FIT_PODS: u64 = 1;
const FIT_CPU: u64 = 1 << 1;
const FIT_MEMORY: u64 = 1 << 2;
const FIT_EPHEMERAL: u64 = 1 << 3;
const FIT_SCALAR_SHIFT: u32 = 4;

impl Plugin for Fit {
    fn filter_reads_only_columns(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        FIT
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// The requests NodeResourcesFit filters with (containers, overhead, pod-level resources).
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sig.put(keys::RESOURCES, &pod.requests);
        Sign::Signed
    }

    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        state.write(FIT, self.fit_state(cx));
        (Status::success(), PreFilterResult::default())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        if cx.snap.nodes.counts_nominated() {
            self.filter_rows_nominated(cx, state, nodes, out);
            return;
        }
        self.filter_rows(cx, state, nodes, out);
    }

    /// The loop knows whether it rejected a node (no scan of `out` afterwards).
    fn filter_any(
        &self,
        cx: CycleCx<'_>,
        state: &CycleState,
        nodes: &[NodeIdx],
        out: &mut [Option<Reject>],
    ) -> Option<bool> {
        if cx.snap.nodes.counts_nominated() {
            return Some(self.filter_rows_nominated(cx, state, nodes, out));
        }
        Some(self.filter_rows(cx, state, nodes, out))
    }

    /// A pod requesting a scalar resource fits only where its allocatable covers the request: the
    /// carriers of the requested resource held by the fewest nodes when its column is sparse (a
    /// resource no node has: none).
    fn filter_candidates(
        &self,
        cx: CycleCx<'_>,
        state: &CycleState,
        _untolerated_rejected: bool,
        out: &mut Vec<NodeIdx>,
    ) -> bool {
        let Some(st) = state.read::<FitState>(FIT) else { return false };
        let columns = cx.snap.nodes.scalar_columns();
        let mut best: Option<(usize, i64, Option<u32>)> = None;
        for &(_, q, col) in &st.scalars {
            if q <= 0 {
                continue;
            }
            let carriers = match col {
                None => 0,
                Some(c) if columns[c as usize].is_dense() => continue,
                Some(c) => columns[c as usize].carriers(),
            };
            if best.is_none_or(|(b, _, _)| carriers < b) {
                best = Some((carriers, q, col));
            }
        }
        match best {
            None => false,
            Some((_, _, None)) => {
                out.clear();
                true
            }
            Some((_, q, Some(c))) => columns[c as usize].sparse_nodes_allocating(q, out),
        }
    }

    fn reasons(&self, cx: CycleCx<'_>, state: &CycleState, reject: Reject) -> Vec<String> {
        let owned;
        let st = match state.read::<FitState>(FIT) {
            Some(s) => s,
            None => {
                owned = self.fit_state(cx);
                &owned
            }
        };
        let b = reject.detail;
        let mut out = Vec::new();
        if b & FIT_PODS != 0 {
            out.push("Too many pods".to_string());
        }
        if b & FIT_CPU != 0 {
            out.push("Insufficient cpu".to_string());
        }
        if b & FIT_MEMORY != 0 {
            out.push("Insufficient memory".to_string());
        }
        if b & FIT_EPHEMERAL != 0 {
            out.push("Insufficient ephemeral-storage".to_string());
        }
        for (j, (name, _, _)) in st.scalars.iter().enumerate() {
            if b & (1 << (FIT_SCALAR_SHIFT + j.min(59) as u32)) != 0 {
                out.push(format!("Insufficient {}", cx.snap.interner.resolve(*name)));
            }
        }
        out
    }

    /// Every strategy scores a node from its row and the pod's requests; no NormalizeScore.
    fn score_memo_key(&self, cx: CycleCx<'_>, state: &CycleState) -> Option<ScoreMemoKey> {
        if dra_scored(cx, state) {
            return None;
        }
        Some(pod_side_key(cx, &self.resources, false))
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        let mut cols = score_columns(cx.snap, cx, &self.resources, false);
        add_dra_columns(cx, state, &self.resources, &mut cols);
        match &self.strategy {
            StrategyKind::LeastAllocated => score_weighted(&cols, nodes, out, least_requested_score_nonzero),
            StrategyKind::MostAllocated => score_weighted(&cols, nodes, out, most_requested_score_nonzero),
            StrategyKind::RequestedToCapacityRatio(_) => {
                let shape = self.shape_scaled();
                score_rtcr(&cols, nodes, out, &shape)
            }
        }
        Ok(())
    }
}

/// Least/MostAllocated: weighted integer average over resources the node has. `f` is the
/// per-resource score for a capacity above zero (resources with capacity 0 are left out).
fn score_weighted<F: Fn(i64, i64) -> i64 + Copy>(cols: &[ScoreColumn<'_>], nodes: &[NodeIdx], out: &mut [i64], f: F) {
    if let [a, b] = cols {
        // The common case (cpu and memory): when the weight sum is a power of two, the average's
        // floor division is a shift.
        let wsum = a.weight + b.weight;
        if wsum > 0 && (wsum & (wsum - 1)) == 0 && a.weight > 0 && b.weight > 0 {
            let shift = wsum.trailing_zeros();
            // Every column cut to one length: one bounds check per node covers them all.
            let len = a.alloc.len();
            let (a_alloc, a_req, b_alloc, b_req) =
                (&a.alloc[..len], &a.requested[..len], &b.alloc[..len], &b.requested[..len]);
            for (n, o) in nodes.iter().zip(out.iter_mut()) {
                let i = n.ix();
                let (aa, ba) = (a_alloc[i], b_alloc[i]);
                if aa != 0 && ba != 0 {
                    let sa = f(a_req[i] + a.pod_request, aa);
                    let sb = f(b_req[i] + b.pod_request, ba);
                    *o = (sa * a.weight + sb * b.weight) >> shift;
                } else {
                    *o = weighted_one(cols, i, f);
                }
            }
            return;
        }
    }
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        *o = weighted_one(cols, n.ix(), f);
    }
}

#[inline]
fn weighted_one<F: Fn(i64, i64) -> i64>(cols: &[ScoreColumn<'_>], i: usize, f: F) -> i64 {
    let (mut score, mut weights) = (0i64, 0i64);
    for c in cols {
        let alloc = c.alloc[i];
        if alloc == 0 {
            continue;
        }
        score += f(c.requested[i] + c.pod_request, alloc) * c.weight;
        weights += c.weight;
    }
    if weights == 0 {
        0
    } else {
        div_small(score, weights)
    }
}

/// The plain per-node loop the fast path is checked against: upstream's formulas with integer
/// division (`most`: MostAllocated, else LeastAllocated).
#[cfg(test)]
fn score_weighted_reference(cols: &[ScoreColumn<'_>], nodes: &[NodeIdx], out: &mut [i64], most: bool) {
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let i = n.ix();
        let (mut score, mut weights) = (0i64, 0i64);
        for c in cols {
            let (requested, capacity) = (c.requested[i] + c.pod_request, c.alloc[i]);
            if capacity == 0 {
                continue;
            }
            let s = if most {
                requested.min(capacity) * MAX_NODE_SCORE / capacity
            } else if requested > capacity {
                0
            } else {
                (capacity - requested) * MAX_NODE_SCORE / capacity
            };
            score += s * c.weight;
            weights += c.weight;
        }
        *o = if weights == 0 { 0 } else { score / weights };
    }
}

/// RequestedToCapacityRatio: only resources scoring above 0 are averaged, rounded.
fn score_rtcr(cols: &[ScoreColumn<'_>], nodes: &[NodeIdx], out: &mut [i64], shape: &[(i64, i64)]) {
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let i = n.ix();
        let (mut score, mut weights) = (0i64, 0i64);
        for c in cols {
            let alloc = c.alloc[i];
            if alloc == 0 {
                continue;
            }
            let req = c.requested[i] + c.pod_request;
            let util = if req > alloc { MAX_UTILIZATION } else { req * MAX_UTILIZATION / alloc };
            let s = broken_linear(shape, util);
            if s > 0 {
                score += s * c.weight;
                weights += c.weight;
            }
        }
        *o = if weights == 0 { 0 } else { (score as f64 / weights as f64).round() as i64 };
    }
}

/// NodeResourcesBalancedAllocation: v1.37 scores the change in balance that placing the pod makes,
/// `50 + (50 + with − without) / 2`, where each side is 100 × (1 − std of the requested fractions).
pub struct BalancedAllocation {
    pub resources: Vec<ScoredResource>,
}

/// `balancedResourceScore` for one node's fractions (each already capped at 1).
pub fn balanced_score(fractions: &[f64]) -> i64 {
    let std = match fractions.len() {
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n if n > 2 => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            (fractions.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n as f64).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// `balancedResourceScorer`: the balance after placing the pod against the balance before, mapped
/// back to [50, 100] (both sides are in [50, 100], so the sum is never negative and Go's
/// truncating division is a floor).
#[inline]
pub fn balanced_change(with_pod: i64, without_pod: i64) -> i64 {
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with_pod - without_pod) / 2
}

/// `balancedResourceScore` for two fractions (the common cpu and memory case).
#[inline]
fn balanced_score_two(x: f64, y: f64) -> i64 {
    ((1.0 - ((x - y) / 2.0).abs()) * MAX_NODE_SCORE as f64) as i64
}

impl BalancedAllocation {
    /// Not `isBestEffortPod`: the pod really requests (no scoring defaults) a scored resource.
    fn requests_any(&self, cx: CycleCx<'_>) -> bool {
        let r = &cx.pod.requests;
        self.resources.iter().any(|res| match res_kind(cx.snap, res.name) {
            ResKind::Cpu => r.cpu_milli != 0,
            ResKind::Memory => r.memory != 0,
            ResKind::Ephemeral => r.ephemeral_storage != 0,
            ResKind::Scalar(name) => r.scalar(name) != 0,
            ResKind::Other => false,
        })
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        BALANCED
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// The requests NodeResourcesFit filters with (containers, overhead, pod-level resources).
    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sig.put(keys::RESOURCES, &pod.requests);
        Sign::Signed
    }

    /// Skips pods that request none of the scored resources (`isBestEffortPod` over the real
    /// requests, no scoring defaults), so best-effort pods do not pile onto one node.
    fn pre_score(&self, cx: CycleCx<'_>, _state: &mut CycleState, _feasible: &[NodeIdx]) -> Status {
        if self.requests_any(cx) {
            Status::success()
        } else {
            Status::skip()
        }
    }

    /// A node's score comes from its row and the pod's real requests; no NormalizeScore.
    fn score_memo_key(&self, cx: CycleCx<'_>, state: &CycleState) -> Option<ScoreMemoKey> {
        if dra_scored(cx, state) {
            return None;
        }
        Some(pod_side_key(cx, &self.resources, true))
    }

    fn score(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [i64]) -> Result<(), Status> {
        // Without PreScore (enabled at score only), upstream's Score checks best-effort itself
        // and scores 0.
        if !self.requests_any(cx) {
            for o in out.iter_mut().take(nodes.len()) {
                *o = 0;
            }
            return Ok(());
        }
        let mut cols = score_columns(cx.snap, cx, &self.resources, true);
        add_dra_columns(cx, state, &self.resources, &mut cols);
        match cols.as_slice() {
            [a, b] => balanced_two(a, b, nodes, out),
            _ => balanced_general(&cols, nodes, out),
        }
        Ok(())
    }
}

/// BalancedAllocation over two resources (cpu and memory, the common case), without the general
/// path's buffer. A node missing either resource has at most one fraction on both sides: standard
/// deviation 0, scores 100 and 100, change 75.
fn balanced_two(a: &ScoreColumn<'_>, b: &ScoreColumn<'_>, nodes: &[NodeIdx], out: &mut [i64]) {
    // Every column cut to one length: one bounds check per node covers them all.
    let len = a.alloc.len();
    let (a_alloc, a_req, b_alloc, b_req) = (&a.alloc[..len], &a.requested[..len], &b.alloc[..len], &b.requested[..len]);
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let i = n.ix();
        let (aa, ba) = (a_alloc[i], b_alloc[i]);
        *o = if aa == 0 || ba == 0 {
            balanced_change(MAX_NODE_SCORE, MAX_NODE_SCORE)
        } else {
            let (aa, ba) = (aa as f64, ba as f64);
            let x0 = (a_req[i] as f64 / aa).min(1.0);
            let y0 = (b_req[i] as f64 / ba).min(1.0);
            let x1 = ((a_req[i] + a.pod_request) as f64 / aa).min(1.0);
            let y1 = ((b_req[i] + b.pod_request) as f64 / ba).min(1.0);
            balanced_change(balanced_score_two(x1, y1), balanced_score_two(x0, y0))
        };
    }
}

/// BalancedAllocation over any number of resources: `balancedResourceScorer` per node.
fn balanced_general(cols: &[ScoreColumn<'_>], nodes: &[NodeIdx], out: &mut [i64]) {
    let mut with: smallvec::SmallVec<[f64; 4]> = smallvec::SmallVec::new();
    let mut without: smallvec::SmallVec<[f64; 4]> = smallvec::SmallVec::new();
    for (n, o) in nodes.iter().zip(out.iter_mut()) {
        let i = n.ix();
        with.clear();
        without.clear();
        for c in cols {
            let alloc = c.alloc[i];
            if alloc == 0 {
                continue;
            }
            without.push((c.requested[i] as f64 / alloc as f64).min(1.0));
            with.push(((c.requested[i] + c.pod_request) as f64 / alloc as f64).min(1.0));
        }
        *o = balanced_change(balanced_score(&with), balanced_score(&without));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{filter_one, score_all};
    use crate::snapshot::testing::{MakeNode, MakePod};

    fn cpu_mem(snap: &mut Snapshot) -> Vec<ScoredResource> {
        vec![
            ScoredResource { name: snap.interner.intern("cpu"), weight: 1 },
            ScoredResource { name: snap.interner.intern("memory"), weight: 1 },
        ]
    }

    fn fit(snap: &mut Snapshot, strategy: StrategyKind) -> Fit {
        Fit { ignored_resources: vec![], ignored_resource_groups: vec![], strategy, resources: cpu_mem(snap) }
    }

    #[test]
    fn enough_requests_table() {
        // fit_test.go TestEnoughRequests: node 10 cpu / 20 memory / 32 pods with 5/19 used by an existing pod,
        // extended resource example.com/aaa: 5. A request above the node's allocatable is
        // UnschedulableAndUnresolvable (U&U). (name, pod cpu, pod mem, pod scalar aaa, existing
        // cpu, existing mem, want code, want reasons)
        const U: Code = Code::Unschedulable;
        const UU: Code = Code::UnschedulableAndUnresolvable;
        type Case<'a> = (&'a str, i64, i64, i64, i64, i64, Code, &'a [&'a str]);
        let cases: &[Case] = &[
            ("no resources requested always fits", 0, 0, 0, 10, 20, U, &[]),
            ("too many resources fails", 1, 1, 0, 10, 20, U, &["Insufficient cpu", "Insufficient memory"]),
            ("too many cpu fails", 1, 1, 0, 10, 1, U, &["Insufficient cpu"]),
            ("fits exactly", 5, 5, 0, 5, 15, U, &[]),
            ("one resource memory fits", 2, 1, 0, 9, 5, U, &["Insufficient cpu"]),
            ("one resource cpu fits", 1, 2, 0, 5, 19, U, &["Insufficient memory"]),
            ("equal edge case", 5, 1, 0, 5, 19, U, &[]),
            ("extended resource fits", 1, 1, 1, 0, 0, U, &[]),
            ("extended resource capacity enforced", 1, 1, 10, 0, 0, UU, &["Insufficient example.com/aaa"]),
            ("cpu above allocatable", 11, 1, 0, 0, 0, UU, &["Insufficient cpu"]),
            ("memory above allocatable", 1, 21, 0, 0, 0, UU, &["Insufficient memory"]),
            (
                "one resource above allocatable makes it unresolvable",
                11,
                1,
                0,
                10,
                20,
                UU,
                &["Insufficient cpu", "Insufficient memory"],
            ),
            ("exactly the allocatable is resolvable", 10, 1, 0, 1, 0, U, &["Insufficient cpu"]),
        ];
        for (name, cpu, mem, aaa, ecpu, emem, want_code, want) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "n").capacity(10, 20).pods(32).scalar("example.com/aaa", 5).add();
            if *ecpu > 0 || *emem > 0 {
                MakePod::new(&mut snap, "existing").req(*ecpu, *emem).place("n");
            }
            let mut p = MakePod::new(&mut snap, "p").req(*cpu, *mem);
            if *aaa > 0 {
                p = p.scalar_req("example.com/aaa", *aaa);
            }
            let pod = p.build();
            let plugin = fit(&mut snap, StrategyKind::LeastAllocated);
            let got = filter_one(&plugin, &snap, &pod, "n");
            if want.is_empty() {
                assert!(got.is_ok(), "{name}: {got:?}");
            } else {
                let (code, reasons) = got.expect_err(name);
                assert_eq!(code, *want_code, "{name}");
                assert_eq!(reasons, want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{name}");
            }
        }
    }

    #[test]
    fn balanced_allocation_skips_pods_requesting_none_of_its_resources() {
        // balanced_allocation_test.go: PreScore returns Skip for a best-effort pod (requests, not
        // the scoring defaults); any request of a scored resource keeps it.
        let cases: &[(i64, i64, &str, bool)] = &[
            (0, 0, "", true),
            (100, 0, "", false),
            (0, 1 << 20, "", false),
            // A scalar the plugin does not score does not count.
            (0, 0, "example.com/gpu", true),
        ];
        for &(cpu, mem, scalar, skip) in cases {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "n").capacity(4000, 1 << 34).scalar("example.com/gpu", 4).add();
            let mut p = MakePod::new(&mut snap, "p").req(cpu, mem);
            if !scalar.is_empty() {
                p = p.scalar_req(scalar, 1);
            }
            let pod = p.build();
            let plugin = BalancedAllocation { resources: cpu_mem(&mut snap) };
            let cx = CycleCx { snap: &snap, pod: &pod };
            let st = plugin.pre_score(cx, &mut CycleState::new(), &[NodeIdx(0)]);
            assert_eq!(st.code == Code::Skip, skip, "cpu {cpu} memory {mem} scalar {scalar:?}");
            // Scored without PreScore (enabled at score only), a best-effort pod scores 0.
            let mut out = [-1];
            plugin.score(cx, &CycleState::new(), &[NodeIdx(0)], &mut out).unwrap();
            assert_eq!(out[0] == 0, skip, "score without PreScore: cpu {cpu} memory {mem} scalar {scalar:?}");
        }
    }

    #[test]
    fn extended_resources_dense_and_sparse_columns() {
        // 16 nodes: example.com/gpu (2 each) on n1..n15 (a dense column), example.com/rare (1) on n0
        // only (a sparse one: n0 is added last, when 1 carrier is under 16 / 8), and a pod on n2
        // already using one gpu.
        let mut snap = Snapshot::new();
        for i in (1..16).chain([0]) {
            let mut n = MakeNode::new(&mut snap, &format!("n{i}")).capacity(10, 20);
            n = if i == 0 { n.scalar("example.com/rare", 1) } else { n.scalar("example.com/gpu", 2) };
            n.add();
        }
        MakePod::new(&mut snap, "existing").scalar_req("example.com/gpu", 1).place("n2");
        let gpu = snap.interner.intern("example.com/gpu");
        let rare = snap.interner.intern("example.com/rare");
        assert!(snap.nodes.scalar_column(gpu).is_some_and(|c| c.is_dense()));
        assert!(snap.nodes.scalar_column(rare).is_some_and(|c| !c.is_dense()));
        // (node, gpu request, rare request, want code, want reasons): more than the node's
        // allocatable (0 where it has none) is UnschedulableAndUnresolvable.
        const U: Code = Code::Unschedulable;
        const UU: Code = Code::UnschedulableAndUnresolvable;
        type Case<'a> = (&'a str, i64, i64, Code, &'a [&'a str]);
        let cases: &[Case] = &[
            ("n1", 2, 0, U, &[]),
            ("n1", 3, 0, UU, &["Insufficient example.com/gpu"]),
            ("n2", 1, 0, U, &[]),
            ("n2", 2, 0, U, &["Insufficient example.com/gpu"]),
            ("n0", 1, 0, UU, &["Insufficient example.com/gpu"]),
            ("n0", 0, 1, U, &[]),
            ("n0", 0, 2, UU, &["Insufficient example.com/rare"]),
            ("n5", 0, 1, UU, &["Insufficient example.com/rare"]),
            ("n5", 1, 1, UU, &["Insufficient example.com/rare"]),
            ("n0", 1, 1, UU, &["Insufficient example.com/gpu"]),
        ];
        let plugin = fit(&mut snap, StrategyKind::LeastAllocated);
        for &(node, g, r, code, want) in cases {
            let mut p = MakePod::new(&mut snap, "p").req(1, 1);
            if g > 0 {
                p = p.scalar_req("example.com/gpu", g);
            }
            if r > 0 {
                p = p.scalar_req("example.com/rare", r);
            }
            let mut pod = p.build();
            pod.requests.scalars.sort();
            let got = filter_one(&plugin, &snap, &pod, node);
            let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            if want.is_empty() {
                assert!(got.is_ok(), "{node} gpu {g} rare {r}: {got:?}");
            } else {
                assert_eq!(got, Err((code, want)), "{node} gpu {g} rare {r}");
            }
        }
    }

    #[test]
    fn sparse_scalar_scores_like_dense() {
        // MostAllocated over cpu, memory and example.com/x, where x is on n15 only (sparse): n15
        // scores the x fraction in, the others leave it out (no allocatable).
        let mut snap = Snapshot::new();
        for i in 0..15 {
            MakeNode::new(&mut snap, &format!("n{i}")).capacity(4000, 10000).add();
        }
        MakeNode::new(&mut snap, "n15").capacity(4000, 10000).scalar("example.com/x", 4).add();
        let x = snap.interner.intern("example.com/x");
        assert!(snap.nodes.scalar_column(x).is_some_and(|c| !c.is_dense()));
        let pod = MakePod::new(&mut snap, "p").req(2000, 5000).scalar_req("example.com/x", 4).build();
        let mut plugin = fit(&mut snap, StrategyKind::MostAllocated);
        plugin.resources.push(ScoredResource { name: x, weight: 2 });
        // n15: (50 + 50 + 100 * 2) / 4 = 75; others: (50 + 50) / 2 = 50.
        let mut want = vec![50; 16];
        want[15] = 75;
        assert_eq!(score_all(&plugin, &snap, &pod), Some(want));
    }

    #[test]
    fn too_many_pods_and_ignored_resources() {
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "n").capacity(10, 20).pods(1).add();
        MakePod::new(&mut snap, "existing").place("n");
        let pod = MakePod::new(&mut snap, "p").build();
        let plugin = fit(&mut snap, StrategyKind::LeastAllocated);
        assert_eq!(
            filter_one(&plugin, &snap, &pod, "n"),
            Err((Code::Unschedulable, vec!["Too many pods".to_string()]))
        );

        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "n").capacity(10, 20).add();
        let pod = MakePod::new(&mut snap, "p").req(1, 1).scalar_req("example.com/bbb", 1).build();
        let mut plugin = fit(&mut snap, StrategyKind::LeastAllocated);
        assert!(filter_one(&plugin, &snap, &pod, "n").is_err());
        plugin.ignored_resource_groups = vec!["example.com".to_string()];
        assert!(filter_one(&plugin, &snap, &pod, "n").is_ok(), "ignored group skips the check");
        plugin.ignored_resource_groups.clear();
        plugin.ignored_resources = vec![snap.interner.intern("example.com/bbb")];
        assert!(filter_one(&plugin, &snap, &pod, "n").is_ok(), "ignored resource skips the check");
    }

    #[test]
    fn least_and_most_allocated_scores() {
        // least_allocated_test.go "nothing scheduled, resources requested, differently sized nodes":
        // node1 4000m/10000, node2 6000m/10000, pod 3000m/5000 -> 37 and 50 (least); most: 62, 50.
        for (strategy, want) in
            [(StrategyKind::LeastAllocated, vec![37, 50]), (StrategyKind::MostAllocated, vec![62, 50])]
        {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "node1").capacity(4000, 10000).add();
            MakeNode::new(&mut snap, "node2").capacity(6000, 10000).add();
            let pod = MakePod::new(&mut snap, "p").req(3000, 5000).build();
            let plugin = fit(&mut snap, strategy.clone());
            assert_eq!(score_all(&plugin, &snap, &pod), Some(want), "{strategy:?}");
        }
    }

    #[test]
    fn requested_to_capacity_ratio_scores() {
        // requested_to_capacity_ratio_test.go: shape {0:10, 100:0} (i.e. least allocated-like),
        // nodes 4000m/10000 and 6000m/10000 both empty, pod 3000m/5000: cpu util 75 and 50, memory 50.
        let mut snap = Snapshot::new();
        MakeNode::new(&mut snap, "node1").capacity(4000, 10000).add();
        MakeNode::new(&mut snap, "node2").capacity(6000, 10000).add();
        let pod = MakePod::new(&mut snap, "p").req(3000, 5000).build();
        let plugin = fit(&mut snap, StrategyKind::RequestedToCapacityRatio(vec![(0, 10), (100, 0)]));
        // node1: cpu 100-75=25, mem 50 -> round(75/2)=38; node2: 50, 50 -> 50.
        assert_eq!(score_all(&plugin, &snap, &pod), Some(vec![38, 50]));
        assert_eq!(broken_linear(&[(10, 10), (50, 100)], 5), 10);
        assert_eq!(broken_linear(&[(10, 10), (50, 100)], 30), 55);
        assert_eq!(broken_linear(&[(10, 10), (50, 100)], 90), 100);
    }

    #[test]
    fn balanced_allocation_scores() {
        // balanced_allocation_test.go (v1.37.2): the change in balance, 50 + (50 + with − without) / 2.
        // (name, node1 cpu/mem/gpu, node2 cpu/mem/gpu, existing pod on node1 and on node2 as
        // cpu/mem/gpu, pod cpu/mem/gpu, score gpu too, want)
        type Res = (i64, i64, i64);
        type Case<'a> = (&'a str, Res, Res, Res, Res, Res, bool, [i64; 2]);
        let cases: &[Case] = &[
            (
                "nothing scheduled, differently sized nodes",
                (4000, 10000, 0),
                (6000, 10000, 0),
                (0, 0, 0),
                (0, 0, 0),
                (3000, 5000, 0),
                false,
                [68, 75],
            ),
            (
                "pods scheduled with resources",
                (10000, 20000, 0),
                (10000, 20000, 0),
                (3000, 0, 0),
                (3000, 5000, 0),
                (3000, 5000, 0),
                false,
                [73, 74],
            ),
            (
                "pods scheduled, differently sized nodes",
                (10000, 20000, 0),
                (10000, 50000, 0),
                (3000, 0, 0),
                (3000, 5000, 0),
                (3000, 5000, 0),
                false,
                [73, 70],
            ),
            (
                "nodes to reach min/max score",
                (3000, 5000, 0),
                (3000, 5000, 0),
                (3000, 0, 0),
                (0, 0, 0),
                (0, 5000, 0),
                false,
                [100, 50],
            ),
            (
                "requested resources at node capacity",
                (6000, 10000, 0),
                (6000, 10000, 0),
                (3000, 0, 0),
                (3000, 5000, 0),
                (3000, 0, 0),
                false,
                [62, 62],
            ),
            (
                "scalar included when requested",
                (3500, 40000, 8),
                (3500, 40000, 8),
                (3000, 5000, 3),
                (3000, 5000, 0),
                (0, 0, 1),
                true,
                [75, 76],
            ),
            (
                "scalar left out when not requested",
                (3500, 40000, 8),
                (3500, 40000, 0),
                (0, 0, 0),
                (0, 0, 0),
                (3000, 5000, 0),
                true,
                [56, 56],
            ),
        ];
        for (name, n1, n2, e1, e2, p, gpu, want) in cases {
            let mut snap = Snapshot::new();
            for (node, (cpu, mem, g)) in [("node1", n1), ("node2", n2)] {
                let mut n = MakeNode::new(&mut snap, node).capacity(*cpu, *mem);
                if *g > 0 {
                    n = n.scalar("nvidia.com/gpu", *g);
                }
                n.add();
            }
            for (node, (cpu, mem, g)) in [("node1", e1), ("node2", e2)] {
                if (*cpu, *mem, *g) != (0, 0, 0) {
                    let mut e = MakePod::new(&mut snap, &format!("on-{node}")).req(*cpu, *mem);
                    if *g > 0 {
                        e = e.scalar_req("nvidia.com/gpu", *g);
                    }
                    e.place(node);
                }
            }
            let mut pb = MakePod::new(&mut snap, "p").req(p.0, p.1);
            if p.2 > 0 {
                pb = pb.scalar_req("nvidia.com/gpu", p.2);
            }
            let pod = pb.build();
            let mut resources = cpu_mem(&mut snap);
            if *gpu {
                resources.push(ScoredResource { name: snap.interner.intern("nvidia.com/gpu"), weight: 1 });
            }
            let plugin = BalancedAllocation { resources };
            assert_eq!(score_all(&plugin, &snap, &pod), Some(want.to_vec()), "{name}");
        }
        assert_eq!(balanced_score(&[0.5, 0.5, 0.5]), 100);
        assert_eq!(balanced_score(&[1.0]), 100);
        assert_eq!(balanced_change(100, 50), 100);
        assert_eq!(balanced_change(50, 100), 50);
        assert_eq!(balanced_change(87, 100), 68);
    }

    proptest::proptest! {
        #[test]
        fn weighted_kernel_matches_reference(
            nodes in proptest::collection::vec((0i64..64_000, 0i64..70_000, 0i64..(1i64 << 36), 0i64..(1i64 << 37)), 1..64),
            pod in (0i64..8_000, 0i64..(1i64 << 33)),
            weights in (1i64..4, 1i64..4),
            most in proptest::bool::ANY,
        ) {
            // Some nodes without the resource (capacity 0) take the general path.
            let alloc_cpu: Vec<i64> = nodes.iter().map(|n| if n.0 % 17 == 0 { 0 } else { n.0 }).collect();
            let req_cpu: Vec<i64> = nodes.iter().map(|n| n.1).collect();
            let alloc_mem: Vec<i64> = nodes.iter().map(|n| if n.2 % 13 == 0 { 0 } else { n.2 }).collect();
            let req_mem: Vec<i64> = nodes.iter().map(|n| n.3).collect();
            let cols = [
                ScoreColumn { alloc: Cow::Borrowed(&alloc_cpu), requested: Cow::Borrowed(&req_cpu), pod_request: pod.0, weight: weights.0 },
                ScoreColumn { alloc: Cow::Borrowed(&alloc_mem), requested: Cow::Borrowed(&req_mem), pod_request: pod.1, weight: weights.1 },
            ];
            let idx: Vec<NodeIdx> = (0..nodes.len() as u32).rev().map(NodeIdx).collect();
            let f = if most { most_requested_score_nonzero } else { least_requested_score_nonzero };
            let (mut fast, mut slow) = (vec![0; idx.len()], vec![0; idx.len()]);
            score_weighted(&cols, &idx, &mut fast, f);
            score_weighted_reference(&cols, &idx, &mut slow, most);
            proptest::prop_assert_eq!(fast, slow);
        }

        #[test]
        fn balanced_two_matches_the_general_scorer(
            nodes in proptest::collection::vec((0i64..64_000, 0i64..70_000, 0i64..(1i64 << 36), 0i64..(1i64 << 37)), 1..64),
            pod in (0i64..8_000, 0i64..(1i64 << 33)),
        ) {
            let alloc_cpu: Vec<i64> = nodes.iter().map(|n| if n.0 % 17 == 0 { 0 } else { n.0 }).collect();
            let req_cpu: Vec<i64> = nodes.iter().map(|n| n.1).collect();
            let alloc_mem: Vec<i64> = nodes.iter().map(|n| if n.2 % 13 == 0 { 0 } else { n.2 }).collect();
            let req_mem: Vec<i64> = nodes.iter().map(|n| n.3).collect();
            let cols = [
                ScoreColumn { alloc: Cow::Borrowed(&alloc_cpu), requested: Cow::Borrowed(&req_cpu), pod_request: pod.0, weight: 1 },
                ScoreColumn { alloc: Cow::Borrowed(&alloc_mem), requested: Cow::Borrowed(&req_mem), pod_request: pod.1, weight: 1 },
            ];
            let idx: Vec<NodeIdx> = (0..nodes.len() as u32).rev().map(NodeIdx).collect();
            let (mut fast, mut slow) = (vec![0; idx.len()], vec![0; idx.len()]);
            balanced_two(&cols[0], &cols[1], &idx, &mut fast);
            balanced_general(&cols, &idx, &mut slow);
            proptest::prop_assert_eq!(fast, slow);
        }

        #[test]
        fn div_small_is_integer_division(a in 0i64..(1i64 << 50), b in 1i64..(1i64 << 50)) {
            let a = a % (b.saturating_mul(300).max(1));
            proptest::prop_assert_eq!(div_small(a, b), a / b);
        }

        #[test]
        fn div_small_is_exact_at_multiples_and_near_them(b in 1i64..(1i64 << 54), q in 0i64..=100, d in -2i64..=2) {
            let a = (q * b + d).max(0);
            proptest::prop_assert_eq!(div_small(a, b), a / b);
        }
    }

    proptest::proptest! {
        /// [`rejects_core_with`] is Fit's Filter on the row shifted by `delta`.
        #[test]
        fn rejects_core_with_matches_filter(
            node in (0i64..4_000, 0i64..4_000, 1i64..6, 0i64..3_000),
            existing in (0i64..3_000, 0i64..3_000, 0i64..2_000),
            delta in (-2_000i64..2_000, -2_000i64..2_000, -1_500i64..1_500, -1i64..4),
            pod in (0i64..3_000, 0i64..3_000, 0i64..2_000),
        ) {
            let mut snap = Snapshot::new();
            MakeNode::new(&mut snap, "n").capacity(node.0, node.1).pods(node.2).ephemeral(node.3).add();
            let mut e = MakePod::new(&mut snap, "existing").req(existing.0, existing.1).build();
            e.requests.ephemeral_storage = existing.2;
            snap.place_pod(std::sync::Arc::new(e), snap.interner.get("n").expect("interned")).expect("placed");
            let mut p = MakePod::new(&mut snap, "p").req(pod.0, pod.1).build();
            p.requests.ephemeral_storage = pod.2;
            let d = CoreRequests { cpu_milli: delta.0, memory: delta.1, ephemeral_storage: delta.2, pods: delta.3, ..CoreRequests::default() };
            let fast = rejects_core_with(&snap.nodes, 0, &d, &p.requests);
            let f = fit(&mut snap, StrategyKind::LeastAllocated);
            snap.nodes.shift_core_sum(NodeIdx(0), &d, 1);
            let slow = filter_one(&f, &snap, &p, "n").is_err();
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    proptest::proptest! {
        /// Fit's Filter counting the nominated columns ([`filter_rows_nominated`]) is Fit's Filter
        /// on the rows shifted by those sums (the plain reference), rejection codes and reasons
        /// included, for pods with and without ephemeral-storage and scalar requests.
        #[test]
        fn nominated_columns_match_shifted_rows(
            nodes in proptest::collection::vec(
                ((0i64..4_000, 0i64..4_000, 1i64..6, 0i64..3_000, 0i64..4),
                 (0i64..3_000, 0i64..3_000, 0i64..2_000),
                 (0i64..2_000, 0i64..2_000, 0i64..1_500, 0i64..4)),
                1..12,
            ),
            pod in (
                0i64..3_000,
                0i64..3_000,
                proptest::sample::select(vec![0i64, 0, 300, 1_500]),
                proptest::sample::select(vec![0i64, 0, 0, 1, 3]),
            ),
        ) {
            let mut snap = Snapshot::new();
            for (k, (node, existing, nom)) in nodes.iter().enumerate() {
                let name = format!("n{k}");
                MakeNode::new(&mut snap, &name).capacity(node.0, node.1).pods(node.2).ephemeral(node.3)
                    .scalar("example.com/aaa", node.4).add();
                let mut e = MakePod::new(&mut snap, &format!("e{k}")).req(existing.0, existing.1).build();
                e.requests.ephemeral_storage = existing.2;
                snap.place_pod(std::sync::Arc::new(e), snap.interner.get(&name).expect("interned")).expect("placed");
                let d = CoreRequests { cpu_milli: nom.0, memory: nom.1, ephemeral_storage: nom.2, pods: nom.3, ..CoreRequests::default() };
                snap.nodes.set_nominated(NodeIdx(k as u32), &d);
            }
            let mut b = MakePod::new(&mut snap, "p").req(pod.0, pod.1);
            if pod.3 > 0 {
                b = b.scalar_req("example.com/aaa", pod.3);
            }
            let mut p = b.build();
            p.requests.ephemeral_storage = pod.2;
            let f = fit(&mut snap, StrategyKind::LeastAllocated);
            let names: Vec<String> = (0..nodes.len()).map(|k| format!("n{k}")).collect();
            snap.nodes.set_counts_nominated(true);
            let fast: Vec<_> = names.iter().map(|n| filter_one(&f, &snap, &p, n)).collect();
            snap.nodes.set_counts_nominated(false);
            for (k, (_, _, nom)) in nodes.iter().enumerate() {
                let d = CoreRequests { cpu_milli: nom.0, memory: nom.1, ephemeral_storage: nom.2, pods: nom.3, ..CoreRequests::default() };
                snap.nodes.shift_core_sum(NodeIdx(k as u32), &d, 1);
            }
            let slow: Vec<_> = names.iter().map(|n| filter_one(&f, &snap, &p, n)).collect();
            proptest::prop_assert_eq!(fast, slow);
        }

        /// The kernels' path over a block of consecutive rows ([`row_range`]) gives each node the
        /// verdict the per-node path (node ids read one by one, here in reverse order) gives it,
        /// with and without nominated columns, for pods requesting nothing, some or too much.
        #[test]
        fn row_blocks_match_indexed_nodes(
            nodes in proptest::collection::vec(
                ((1i64..4_000, 1i64..4_000, 1i64..6), (0i64..3_000, 0i64..3_000), (0i64..2_000, 0i64..2_000, 0i64..3)),
                1..40,
            ),
            pod in (proptest::sample::select(vec![0i64, 1, 500, 2_500, 5_000]), proptest::sample::select(vec![0i64, 1, 500, 2_500, 5_000])),
            nominated in proptest::bool::ANY,
        ) {
            let mut snap = Snapshot::new();
            for (k, (node, existing, nom)) in nodes.iter().enumerate() {
                let name = format!("n{k}");
                MakeNode::new(&mut snap, &name).capacity(node.0, node.1).pods(node.2).add();
                if existing.0 + existing.1 > 0 {
                    let e = MakePod::new(&mut snap, &format!("e{k}")).req(existing.0, existing.1).build();
                    snap.place_pod(std::sync::Arc::new(e), snap.interner.get(&name).expect("interned")).expect("placed");
                }
                let d = CoreRequests { cpu_milli: nom.0, memory: nom.1, pods: nom.2, ..CoreRequests::default() };
                snap.nodes.set_nominated(NodeIdx(k as u32), &d);
            }
            snap.nodes.set_counts_nominated(nominated);
            let p = MakePod::new(&mut snap, "p").req(pod.0, pod.1).build();
            let f = fit(&mut snap, StrategyKind::LeastAllocated);
            let cx = CycleCx { snap: &snap, pod: &p };
            let mut state = CycleState::new();
            f.pre_filter(cx, &mut state);
            let rows: Vec<NodeIdx> = (0..nodes.len() as u32).map(NodeIdx).collect();
            proptest::prop_assert_eq!(row_range(&rows), Some(0));
            let mut block = vec![None; rows.len()];
            let any = f.filter_any(cx, &state, &rows, &mut block).expect("Fit says whether it rejected");
            let reversed: Vec<NodeIdx> = rows.iter().rev().copied().collect();
            let mut one_by_one = vec![None; rows.len()];
            f.filter(cx, &state, &reversed, &mut one_by_one);
            one_by_one.reverse();
            proptest::prop_assert_eq!(any, block.iter().any(Option::is_some));
            proptest::prop_assert_eq!(block, one_by_one);
        }
    }

    proptest::proptest! {
        /// [`row_range`]'s branch-free fold is the plain check (every node the row after the one
        /// before), for blocks long and short, one node moved or none, near the top of `u32`.
        #[test]
        fn row_range_is_the_plain_check(
            first in proptest::sample::select(vec![0u32, 7, 1_000, u32::MAX - 20]),
            len in 0usize..45,
            moved in proptest::option::of((0usize..45, 1u32..3)),
        ) {
            let mut ids: Vec<NodeIdx> = (0..len as u32).map(|k| NodeIdx(first.wrapping_add(k))).collect();
            if let Some((at, by)) = moved {
                if let Some(n) = ids.get_mut(at) {
                    n.0 = n.0.wrapping_add(by);
                }
            }
            let plain = ids.first().and_then(|f| {
                ids.iter().enumerate().all(|(k, n)| n.0 == f.0.wrapping_add(k as u32)).then_some(f.0 as usize)
            });
            proptest::prop_assert_eq!(row_range(&ids), plain);
        }

        /// [`core_rejects`] with the pod's [`core_needs`] is [`core_bits`] `!= 0`, for requests
        /// zero or not and free amounts around them (negative, zero, the extremes).
        #[test]
        fn core_rejects_is_core_bits(
            req in proptest::array::uniform3(proptest::sample::select(vec![0i64, 1, 7, 1_000, i64::MAX])),
            free in proptest::array::uniform4(proptest::sample::select(vec![i64::MIN, -1, 0, 1, 6, 7, 8, 999, 1_000, i64::MAX])),
        ) {
            let r = Resources { cpu_milli: req[0], memory: req[1], ephemeral_storage: req[2], ..Resources::default() };
            let plain = core_bits(free[0], free[1], free[2], free[3], &r) != 0;
            proptest::prop_assert_eq!(core_rejects(&free, &core_needs(&r)), plain);
        }
    }

    /// The branch-free kernel's table holds, for every code, what [`common_reject`] builds: the
    /// rejection bits, UnschedulableAndUnresolvable exactly when a rejected CPU or memory request
    /// exceeds the allocatable.
    #[test]
    fn common_verdicts_are_common_reject() {
        assert_eq!(COMMON_VERDICTS[0], None);
        for bits in 1..8u64 {
            for (cpu_beyond, memory_beyond) in [(false, false), (true, false), (false, true), (true, true)] {
                let r = Resources { cpu_milli: 1_000, memory: 1_000, ..Resources::default() };
                let alloc_cpu = if cpu_beyond { 500 } else { 2_000 };
                let alloc_memory = if memory_beyond { 500 } else { 2_000 };
                let unresolvable = (bits & FIT_CPU != 0 && cpu_beyond) || (bits & FIT_MEMORY != 0 && memory_beyond);
                let code = bits as usize | (unresolvable as usize) << 3;
                assert_eq!(
                    COMMON_VERDICTS[code],
                    Some(common_reject(bits, &r, alloc_cpu, alloc_memory)),
                    "bits {bits:b}, cpu beyond {cpu_beyond}, memory beyond {memory_beyond}"
                );
            }
        }
    }

    #[test]
    fn row_range_table() {
        let ids = |v: &[u32]| v.iter().map(|&i| NodeIdx(i)).collect::<Vec<_>>();
        for (nodes, want) in [
            (vec![], None),
            (vec![7], Some(7)),
            (vec![3, 4, 5, 6], Some(3)),
            (vec![3, 5, 4], None),
            (vec![4, 3], None),
            (vec![0, 1, 2, 2], None),
            (vec![u32::MAX - 1, u32::MAX], Some(u32::MAX as usize - 1)),
        ] {
            assert_eq!(row_range(&ids(&nodes)), want, "{nodes:?}");
        }
    }

    #[test]
    fn resource_name_classes() {
        for (name, ext, scalar) in [
            ("example.com/foo", true, true),
            ("cpu", false, false),
            ("hugepages-2Mi", false, true),
            ("kubernetes.io/foo", false, true),
            ("requests.example.com/foo", false, false),
        ] {
            assert_eq!(is_extended_resource_name(name), ext, "{name}");
            assert_eq!(is_scalar_resource_name(name), scalar, "{name}");
        }
    }
}
