//! The storage objects the volume plugins read, compiled: PersistentVolumes, PersistentVolumeClaims,
//! StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities (upstream's listers), and a pod's volumes ([`PodVolumes`],
//! `None` on a pod without any volume the plugins read, so such pods cost nothing).

use ahash::AHashMap;

use super::compile::{compile_label_selector, compile_node_selector};
use super::{Interner, LabelSelector, NodeSelector, Sym};
use crate::api;
use crate::api::storage::{AccessMode, PersistentVolumeMode, Volume};
use crate::api::Quantity;

/// `v1.BetaStorageClassAnnotation`: read before `spec.storageClassName`.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// `volume.AnnBindCompleted`: a claim is fully bound when it names a volume and carries this.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// `volume.AnnSelectedNode`.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// `v1.MigratedPluginsAnnotationKey` on a CSINode.
pub const ANN_MIGRATED_PLUGINS: &str = "storage.alpha.kubernetes.io/migrated-plugins";

/// An in-tree volume source the CSI translation library can migrate, as the plugins see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InTreeDisk {
    /// `kubernetes.io/gce-pd`: the disk's name.
    GcePd(Sym),
    /// `kubernetes.io/aws-ebs`: the volume id as written.
    AwsEbs(Sym),
}

/// A `PersistentVolume`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pv {
    pub name: Sym,
    /// Labels sorted by key (VolumeZone reads the topology ones).
    pub labels: Vec<(Sym, Sym)>,
    /// `spec.nodeAffinity.required`.
    pub node_affinity: Option<NodeSelector>,
    pub storage_class: Sym,
    /// `spec.csi`: (driver, volumeHandle).
    pub csi: Option<(Sym, Sym)>,
    pub in_tree: Option<InTreeDisk>,
    /// `GetPersistentVolumeClass`: the beta annotation, else `spec.storageClassName` (VolumeBinding's
    /// class index).
    pub class: Sym,
    /// `spec.capacity.storage` (zero when unset).
    pub capacity: Quantity,
    /// `spec.accessModes` as an [`access_mode_bits`] set.
    pub access_modes: u8,
    /// `spec.claimRef`.
    pub claim_ref: Option<ClaimRef>,
    /// `spec.volumeMode: Block` (unset means Filesystem).
    pub block: bool,
    /// `status.phase: Available`.
    pub available: bool,
    /// `metadata.deletionTimestamp` set.
    pub deleting: bool,
}

/// A PersistentVolume's `spec.claimRef`: the claim it is bound (or reserved) to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRef {
    pub namespace: Sym,
    pub name: Sym,
    /// `Sym` of "" when unset (any claim of that name).
    pub uid: Sym,
}

/// One bit per `v1.PersistentVolumeAccessMode`.
pub fn access_mode_bits(modes: &[AccessMode]) -> u8 {
    modes.iter().fold(0, |b, m| {
        b | match m {
            AccessMode::ReadWriteOnce => 1,
            AccessMode::ReadOnlyMany => 2,
            AccessMode::ReadWriteMany => 4,
            AccessMode::ReadWriteOncePod => 8,
        }
    })
}

/// A `PersistentVolumeClaim`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pvc {
    pub namespace: Sym,
    pub name: Sym,
    /// `spec.volumeName` (`Sym` of "" when unset).
    pub volume_name: Sym,
    /// `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`, else "".
    pub class: Sym,
    /// `spec.volumeName` set and the bind-completed annotation present.
    pub fully_bound: bool,
    pub lost: bool,
    pub deleting: bool,
    pub read_write_once_pod: bool,
    /// The uid of the controller in `metadata.ownerReferences` (an ephemeral claim's pod).
    pub controller_uid: Option<String>,
    /// The selected-node annotation (a claim being provisioned).
    pub selected_node: Option<Sym>,
    /// `metadata.uid` (matched against a volume's `claimRef.uid`).
    pub uid: Sym,
    /// `spec.resources.requests.storage`, `None` when not requested.
    pub request: Option<Quantity>,
    /// `spec.accessModes` as an [`access_mode_bits`] set.
    pub access_modes: u8,
    /// `spec.selector`, compiled (`None`: no selector).
    pub selector: Option<LabelSelector>,
    /// `spec.volumeMode: Block`.
    pub block: bool,
}

/// One term of a class's `allowedTopologies`: its (key, values) requirements, ANDed; `None` for a
/// term that selects nothing (no requirement, or one without values).
pub type TopologyTerm = Option<Vec<(Sym, Vec<Sym>)>>;

/// A `StorageClass`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageClassInfo {
    pub name: Sym,
    pub provisioner: Sym,
    pub wait_for_first_consumer: bool,
    /// `allowedTopologies`: terms ORed (empty: every node).
    pub allowed_topologies: Vec<TopologyTerm>,
}

/// A `CSIStorageCapacity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapacityInfo {
    /// (namespace, name): the order capacities are tried in.
    pub key: (String, String),
    pub storage_class: Sym,
    /// `nodeTopology`, compiled; `None`: no node has access.
    pub node_topology: Option<LabelSelector>,
    pub capacity: Option<Quantity>,
    pub maximum_volume_size: Option<Quantity>,
}

/// A `CSINode`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsiNodeInfo {
    /// Each driver with `allocatable.count` when set.
    pub drivers: Vec<(Sym, Option<i32>)>,
    /// The migrated-plugins annotation, split at commas.
    pub migrated_plugins: Vec<String>,
}

/// The storage objects of the cluster, by name.
#[derive(Clone, Debug, Default)]
pub struct VolumeObjects {
    pub pvs: AHashMap<Sym, Pv>,
    /// By (namespace, name).
    pub pvcs: AHashMap<(Sym, Sym), Pvc>,
    pub classes: AHashMap<Sym, StorageClassInfo>,
    /// By node name.
    pub csi_nodes: AHashMap<Sym, CsiNodeInfo>,
    /// CSIDrivers by name: `spec.storageCapacity`.
    pub csi_drivers: AHashMap<Sym, bool>,
    /// CSIStorageCapacities, sorted by (namespace, name).
    pub capacities: Vec<CapacityInfo>,
}

impl VolumeObjects {
    pub fn pvc(&self, namespace: Sym, name: Sym) -> Option<&Pvc> {
        self.pvcs.get(&(namespace, name))
    }

    pub fn add_pv(&mut self, pv: &api::PersistentVolume, i: &mut Interner) {
        let spec = &pv.spec;
        let mut labels: Vec<(Sym, Sym)> = pv.metadata.labels.iter().map(|(k, v)| (i.intern(k), i.intern(v))).collect();
        labels.sort();
        let in_tree = if let Some(g) = &spec.gce_persistent_disk {
            Some(InTreeDisk::GcePd(i.intern(&g.pd_name)))
        } else {
            spec.aws_elastic_block_store.as_ref().map(|a| InTreeDisk::AwsEbs(i.intern(&a.volume_id)))
        };
        let compiled = Pv {
            name: i.intern(&pv.metadata.name),
            labels,
            node_affinity: spec
                .node_affinity
                .as_ref()
                .and_then(|a| a.required.as_ref())
                .map(|s| compile_node_selector(s, i)),
            storage_class: i.intern(&spec.storage_class_name),
            csi: spec.csi.as_ref().map(|c| (i.intern(&c.driver), i.intern(&c.volume_handle))),
            in_tree,
            class: i.intern(match pv.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION) {
                Some(c) => c,
                None => &spec.storage_class_name,
            }),
            capacity: spec.capacity.get("storage").copied().unwrap_or_default(),
            access_modes: access_mode_bits(&spec.access_modes),
            claim_ref: spec.claim_ref.as_ref().map(|r| ClaimRef {
                namespace: i.intern(&r.namespace),
                name: i.intern(&r.name),
                uid: i.intern(&r.uid),
            }),
            block: spec.volume_mode == Some(PersistentVolumeMode::Block),
            available: pv.status.phase == Some(api::storage::PersistentVolumePhase::Available),
            deleting: pv.metadata.deletion_timestamp.is_some(),
        };
        self.pvs.insert(compiled.name, compiled);
    }

    pub fn add_pvc(&mut self, pvc: &api::PersistentVolumeClaim, i: &mut Interner) {
        let meta = &pvc.metadata;
        let class = match meta.annotations.get(BETA_STORAGE_CLASS_ANNOTATION) {
            Some(c) => c.as_str(),
            None => pvc.spec.storage_class_name.as_deref().unwrap_or(""),
        };
        let compiled = Pvc {
            namespace: i.intern(pvc.namespace()),
            name: i.intern(&meta.name),
            volume_name: i.intern(&pvc.spec.volume_name),
            class: i.intern(class),
            fully_bound: !pvc.spec.volume_name.is_empty() && meta.annotations.contains_key(ANN_BIND_COMPLETED),
            lost: pvc.status.phase == Some(api::storage::PersistentVolumeClaimPhase::Lost),
            deleting: meta.deletion_timestamp.is_some(),
            read_write_once_pod: pvc.spec.access_modes.contains(&AccessMode::ReadWriteOncePod),
            controller_uid: meta.owner_references.iter().find(|o| o.controller == Some(true)).map(|o| o.uid.clone()),
            selected_node: meta.annotations.get(ANN_SELECTED_NODE).map(|n| i.intern(n)),
            uid: i.intern(&meta.uid),
            request: pvc.spec.resources.as_ref().and_then(|r| r.requests.get("storage").copied()),
            access_modes: access_mode_bits(&pvc.spec.access_modes),
            selector: pvc.spec.selector.as_ref().map(|s| compile_label_selector(Some(s), i)),
            block: pvc.spec.volume_mode == Some(PersistentVolumeMode::Block),
        };
        self.pvcs.insert((compiled.namespace, compiled.name), compiled);
    }

    pub fn add_class(&mut self, sc: &api::StorageClass, i: &mut Interner) {
        let c = StorageClassInfo {
            name: i.intern(&sc.metadata.name),
            provisioner: i.intern(&sc.provisioner),
            wait_for_first_consumer: sc.volume_binding_mode
                == Some(api::storage::VolumeBindingMode::WaitForFirstConsumer),
            allowed_topologies: sc
                .allowed_topologies
                .iter()
                .map(|t| {
                    let reqs = &t.match_label_expressions;
                    (!reqs.is_empty() && reqs.iter().all(|r| !r.values.is_empty())).then(|| {
                        reqs.iter()
                            .map(|r| (i.intern(&r.key), r.values.iter().map(|v| i.intern(v)).collect()))
                            .collect()
                    })
                })
                .collect(),
        };
        self.classes.insert(c.name, c);
    }

    pub fn add_csi_node(&mut self, n: &api::CsiNode, i: &mut Interner) {
        let migrated_plugins = match n.metadata.annotations.get(ANN_MIGRATED_PLUGINS) {
            Some(a) if !a.is_empty() => a.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let drivers =
            n.spec.drivers.iter().map(|d| (i.intern(&d.name), d.allocatable.as_ref().and_then(|a| a.count))).collect();
        self.csi_nodes.insert(i.intern(&n.metadata.name), CsiNodeInfo { drivers, migrated_plugins });
    }

    pub fn add_csi_driver(&mut self, d: &api::CsiDriver, i: &mut Interner) {
        self.csi_drivers.insert(i.intern(&d.metadata.name), d.spec.storage_capacity == Some(true));
    }

    pub fn add_capacity(&mut self, c: &api::CsiStorageCapacity, i: &mut Interner) {
        let ns = if c.metadata.namespace.is_empty() { "default" } else { &c.metadata.namespace };
        let info = CapacityInfo {
            key: (ns.to_string(), c.metadata.name.clone()),
            storage_class: i.intern(&c.storage_class_name),
            node_topology: c.node_topology.as_ref().map(|s| compile_label_selector(Some(s), i)),
            capacity: c.capacity,
            maximum_volume_size: c.maximum_volume_size,
        };
        match self.capacities.binary_search_by(|x| x.key.cmp(&info.key)) {
            Ok(at) => self.capacities[at] = info,
            Err(at) => self.capacities.insert(at, info),
        }
    }
}

/// One volume of a pod, as the volume plugins read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodVolume {
    /// `persistentVolumeClaim` (`ephemeral: false`: `claim` is `claimName`) or a generic ephemeral
    /// volume (`claim` is the volume's name; its claim is `<pod name>-<volume name>`, named when
    /// looked up, as pods made from one template share their compiled volumes).
    Claim {
        claim: Sym,
        ephemeral: bool,
    },
    GcePd {
        pd_name: Sym,
        read_only: bool,
    },
    AwsEbs {
        volume_id: Sym,
        read_only: bool,
    },
    Rbd {
        monitors: Vec<Sym>,
        pool: Sym,
        image: Sym,
        read_only: bool,
    },
    Iscsi {
        iqn: Sym,
        read_only: bool,
    },
    /// An inline CSI volume: signed, neither checked nor counted.
    Csi {
        driver: Sym,
    },
}

/// A pod's volumes that the volume plugins read, with the pod's `metadata.uid` (an ephemeral
/// claim must be controlled by its pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodVolumes {
    pub list: Vec<PodVolume>,
    pub pod_uid: String,
}

impl PodVolumes {
    /// The claims of the pod's volumes, in order: (claim name or ephemeral volume name, ephemeral).
    pub fn claims(&self) -> impl Iterator<Item = (Sym, bool)> + '_ {
        self.list.iter().filter_map(|v| match v {
            PodVolume::Claim { claim, ephemeral } => Some((*claim, *ephemeral)),
            _ => None,
        })
    }
}

/// The volumes of `pod` the plugins read; `None` when it has none.
pub fn compile_pod_volumes(pod: &api::Pod, i: &mut Interner) -> Option<std::sync::Arc<PodVolumes>> {
    if pod.spec.volumes.is_empty() {
        return None;
    }
    let list: Vec<PodVolume> = pod.spec.volumes.iter().filter_map(|v| compile_volume(v, i)).collect();
    if list.is_empty() {
        return None;
    }
    Some(std::sync::Arc::new(PodVolumes { list, pod_uid: pod.metadata.uid.clone() }))
}

fn compile_volume(v: &Volume, i: &mut Interner) -> Option<PodVolume> {
    Some(if let Some(c) = &v.persistent_volume_claim {
        PodVolume::Claim { claim: i.intern(&c.claim_name), ephemeral: false }
    } else if v.ephemeral.is_some() {
        PodVolume::Claim { claim: i.intern(&v.name), ephemeral: true }
    } else if let Some(g) = &v.gce_persistent_disk {
        PodVolume::GcePd { pd_name: i.intern(&g.pd_name), read_only: g.read_only }
    } else if let Some(a) = &v.aws_elastic_block_store {
        PodVolume::AwsEbs { volume_id: i.intern(&a.volume_id), read_only: a.read_only }
    } else if let Some(r) = &v.rbd {
        PodVolume::Rbd {
            monitors: r.monitors.iter().map(|m| i.intern(m)).collect(),
            pool: i.intern(if r.pool.is_empty() { "rbd" } else { &r.pool }),
            image: i.intern(&r.image),
            read_only: r.read_only,
        }
    } else if let Some(s) = &v.iscsi {
        PodVolume::Iscsi { iqn: i.intern(&s.iqn), read_only: s.read_only }
    } else if let Some(c) = &v.csi {
        PodVolume::Csi { driver: i.intern(&c.driver) }
    } else {
        return None;
    })
}

/// The storage kinds whose informers feed the scheduling queue (upstream's `fwk.EventResource`s
/// of `eventhandlers.go`'s storage handlers; VolumeAttachment is not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageKind {
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CsiNode,
    CsiDriver,
    CsiStorageCapacity,
}

/// What happened to a storage object (`fwk.Add`, `fwk.Update`, `fwk.Delete`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageAction {
    Add,
    Update,
    Delete,
}

/// A storage object as the volume plugins' queueing hints read it (upstream's `oldObj`/`newObj`
/// of a storage event): only the fields some `isSchedulableAfter*` compares.
#[derive(Clone, Debug, PartialEq)]
pub enum StorageEventObject {
    /// A claim: its namespace and name, and every way its name reads as `<pod name>-<volume
    /// name>` (an ephemeral volume's claim, `ephemeral.VolumeClaimName`): (pod name, volume name)
    /// for each `-` whose right side is an interned name (no other can name a pod's volume).
    Pvc {
        namespace: Sym,
        name: Sym,
        ephemeral: Vec<(String, Sym)>,
    },
    /// A volume: VolumeZone's `getPVTopologies` (each topology label in upstream's order whose
    /// value parses, with its zone set sorted).
    Pv {
        topologies: Vec<(String, Vec<String>)>,
    },
    StorageClass {
        wait_for_first_consumer: bool,
        allowed_topologies: Vec<api::storage::TopologySelectorTerm>,
    },
    /// A CSINode: the migrated-plugins annotation and each driver's `allocatable.count` (0 when unset).
    CsiNode {
        migrated_plugins: Option<String>,
        limits: Vec<(Sym, i32)>,
    },
    CsiDriver {
        name: Sym,
        storage_capacity: bool,
    },
    /// `volumeLimit`: `maximumVolumeSize` when set, else `capacity`.
    CsiStorageCapacity {
        volume_limit: Option<Quantity>,
    },
}

/// VolumeZone's `topologyLabels`, in upstream's order.
const PV_TOPOLOGY_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// `volumehelpers.LabelZonesToSet`: the `__`-separated zones, trimmed, sorted; `None` when one is empty.
fn label_zones_to_set(value: &str) -> Option<Vec<String>> {
    let mut zones = Vec::new();
    for z in value.split("__") {
        let z = z.trim();
        if z.is_empty() {
            return None;
        }
        zones.push(z.to_string());
    }
    zones.sort();
    zones.dedup();
    Some(zones)
}

impl StorageEventObject {
    /// The hint's view of `obj`; `None` for a kind that is not a storage kind. Interns the names
    /// it compares by symbol.
    pub fn of(obj: &api::Object, i: &mut Interner) -> Option<(StorageKind, Self)> {
        use api::Object as O;
        Some(match obj {
            O::PersistentVolumeClaim(pvc) => {
                let name = &pvc.metadata.name;
                let ephemeral = name
                    .match_indices('-')
                    .filter_map(|(at, _)| i.get(&name[at + 1..]).map(|v| (name[..at].to_string(), v)))
                    .collect();
                let (namespace, name) = (i.intern(pvc.namespace()), i.intern(name));
                (StorageKind::PersistentVolumeClaim, StorageEventObject::Pvc { namespace, name, ephemeral })
            }
            O::PersistentVolume(pv) => {
                let topologies = PV_TOPOLOGY_LABELS
                    .iter()
                    .filter_map(|k| {
                        let zones = label_zones_to_set(pv.metadata.labels.get(*k)?)?;
                        Some((k.to_string(), zones))
                    })
                    .collect();
                (StorageKind::PersistentVolume, StorageEventObject::Pv { topologies })
            }
            O::StorageClass(sc) => (
                StorageKind::StorageClass,
                StorageEventObject::StorageClass {
                    wait_for_first_consumer: sc.volume_binding_mode
                        == Some(api::storage::VolumeBindingMode::WaitForFirstConsumer),
                    allowed_topologies: sc.allowed_topologies.clone(),
                },
            ),
            O::CsiNode(n) => (
                StorageKind::CsiNode,
                StorageEventObject::CsiNode {
                    migrated_plugins: n.metadata.annotations.get(ANN_MIGRATED_PLUGINS).cloned(),
                    limits: n
                        .spec
                        .drivers
                        .iter()
                        .map(|d| (i.intern(&d.name), d.allocatable.as_ref().and_then(|a| a.count).unwrap_or(0)))
                        .collect(),
                },
            ),
            O::CsiDriver(d) => (
                StorageKind::CsiDriver,
                StorageEventObject::CsiDriver {
                    name: i.intern(&d.metadata.name),
                    storage_capacity: d.spec.storage_capacity == Some(true),
                },
            ),
            O::CsiStorageCapacity(c) => (
                StorageKind::CsiStorageCapacity,
                StorageEventObject::CsiStorageCapacity { volume_limit: c.maximum_volume_size.or(c.capacity) },
            ),
            _ => return None,
        })
    }
}
