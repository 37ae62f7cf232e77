//! VolumeZone (`plugins/volumezone`): the zone and region labels of the PersistentVolumes a pod's
//! `persistentVolumeClaim` volumes are bound to must match the node's (a node without any zone or
//! region label passes). Claims of a WaitForFirstConsumer class not yet bound are left out.

use super::{claim_not_found, sign_volumes, unresolvable};
use crate::framework::sign::{Sign, SignBuilder};
use crate::framework::{CycleCx, CycleState, Plugin, PreFilterResult, Reject, Status};
use crate::snapshot::volumes::PodVolume;
use crate::snapshot::{NodeIdx, PodInfo, Sym};

pub const NAME: &str = "VolumeZone";

/// `ErrReasonConflict`.
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

/// `topologyLabels`, in upstream's order.
pub const TOPOLOGY_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// `translateToGALabel`.
fn ga_label(key: &str) -> &str {
    match key {
        "failure-domain.beta.kubernetes.io/region" => "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone" => "topology.kubernetes.io/zone",
        other => other,
    }
}

pub struct VolumeZone;

/// A [`Topology`] with its label columns looked up: (key's column, GA key's column, zones).
type ResolvedTopology<'a> = (Option<&'a [Sym]>, Option<&'a [Sym]>, &'a [Sym]);

/// One PV topology label: its key, the key's GA form, and the zones it lists (interned; a zone
/// no object ever had is left out: no node carries it).
struct Topology {
    key: Option<Sym>,
    ga_key: Option<Sym>,
    values: Vec<Sym>,
}

/// `volumehelpers.LabelZonesToSet`: zones separated by `__` (or commas), trimmed; `None` when
/// one is empty (the label is then ignored).
pub fn label_zones(value: &str) -> Option<Vec<String>> {
    value.replace("__", ",").split(',').map(|z| Some(z.trim()).filter(|t| !t.is_empty()).map(str::to_string)).collect()
}

impl Plugin for VolumeZone {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    fn sign_pod(&self, pod: &PodInfo, sig: &mut SignBuilder) -> Sign {
        sign_volumes(pod, sig);
        Sign::Signed
    }

    /// `getPVbyPod`.
    fn pre_filter(&self, cx: CycleCx<'_>, state: &mut CycleState) -> (Status, PreFilterResult) {
        let none = PreFilterResult::default;
        let Some(vols) = &cx.pod.volumes else { return (Status::skip(), none()) };
        let snap = cx.snap;
        let i = &snap.interner;
        let objs = &snap.cluster.volumes;
        let mut topologies = Vec::new();
        for v in &vols.list {
            let PodVolume::Claim { claim, ephemeral: false } = v else { continue };
            let name = i.resolve(*claim);
            if name.is_empty() {
                return (unresolvable("PersistentVolumeClaim had no name"), none());
            }
            let Some(pvc) = objs.pvc(cx.pod.namespace, *claim) else {
                return (unresolvable(claim_not_found(name)), none());
            };
            let pv_name = i.resolve(pvc.volume_name);
            if pv_name.is_empty() {
                let class = i.resolve(pvc.class);
                if class.is_empty() {
                    return (unresolvable("PersistentVolumeClaim had no pv name and storageClass name"), none());
                }
                let Some(sc) = objs.classes.get(&pvc.class) else {
                    return (unresolvable(format!("storageclass.storage.k8s.io \"{class}\" not found")), none());
                };
                if sc.wait_for_first_consumer {
                    continue;
                }
                return (unresolvable("PersistentVolume had no name"), none());
            }
            let Some(pv) = objs.pvs.get(&pvc.volume_name) else {
                return (unresolvable(format!("persistentvolume \"{pv_name}\" not found")), none());
            };
            for key in TOPOLOGY_LABELS {
                let Some(ksym) = i.get(key) else { continue };
                let Ok(at) = pv.labels.binary_search_by_key(&ksym, |(k, _)| *k) else { continue };
                let Some(zones) = label_zones(i.resolve(pv.labels[at].1)) else { continue };
                topologies.push(Topology {
                    key: Some(ksym),
                    ga_key: i.get(ga_label(key)),
                    values: zones.iter().filter_map(|z| i.get(z)).collect(),
                });
            }
        }
        if topologies.is_empty() {
            return (Status::skip(), none());
        }
        state.write(NAME, topologies);
        (Status::success(), none())
    }

    fn filter(&self, cx: CycleCx<'_>, state: &CycleState, nodes: &[NodeIdx], out: &mut [Option<Reject>]) {
        let Some(topologies) = state.read::<Vec<Topology>>(NAME) else { return };
        let snap = cx.snap;
        let col = |k: Option<Sym>| k.and_then(|k| snap.nodes.label_column(k));
        let constraint_cols: Vec<&[Sym]> = TOPOLOGY_LABELS.iter().filter_map(|k| col(snap.interner.get(k))).collect();
        let resolved: Vec<ResolvedTopology<'_>> =
            topologies.iter().map(|t| (col(t.key), col(t.ga_key), t.values.as_slice())).collect();
        for (&n, o) in nodes.iter().zip(out.iter_mut()) {
            let ix = n.ix();
            if !constraint_cols.iter().any(|c| !c[ix].is_none()) {
                continue;
            }
            let fits = resolved.iter().all(|(key, ga, values)| {
                let mut v = key.map_or(Sym::NONE, |c| c[ix]);
                if v.is_none() {
                    v = ga.map_or(Sym::NONE, |c| c[ix]);
                }
                !v.is_none() && values.contains(&v)
            });
            if !fits {
                *o = Some(Reject::unresolvable(0));
            }
        }
    }

    fn reasons(&self, _cx: CycleCx<'_>, _state: &CycleState, _reject: Reject) -> Vec<String> {
        vec![ERR_REASON_CONFLICT.to_string()]
    }
}
