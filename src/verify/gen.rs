//! A seeded generator of scheduling cases: a cluster, a pod and a KubeSchedulerConfiguration that
//! together exercise every default plugin's inputs.
//!
//! Vocabularies are small on purpose (three zones, three apps, two teams, a handful of taint keys,
//! images and ports) so that selectors, spread constraints, affinity terms, taints and ports
//! collide often: a random case where nothing matches anything checks nothing. Everything is a
//! plain Kubernetes object (`serde_json::Value`), written the way `kubectl get -o yaml` would.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

/// One generated case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Namespaces, PriorityClasses, PDBs, Services, Nodes, storage objects, then bound Pods.
    pub cluster: Vec<Value>,
    pub pod: Value,
    /// `None`: kube-scheduler's defaults.
    pub config: Option<Value>,
}

pub(crate) const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];
pub(crate) const APPS: [&str; 3] = ["web", "db", "cache"];
pub(crate) const TEAMS: [&str; 2] = ["red", "blue"];
pub(crate) const NAMESPACES: [&str; 3] = ["default", "ns1", "ns2"];
pub(crate) const TAINT_KEYS: [&str; 3] = ["dedicated", "gpu", "node.kubernetes.io/unschedulable"];
pub(crate) const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const IMAGES: [&str; 5] = ["nginx", "nginx:1.25", "docker.io/library/redis:7", "registry.k8s.io/pause:3.10", "busybox"];
pub(crate) const EXTENDED: &str = "example.com/gpu";
pub(crate) const LABEL_KEYS: [&str; 4] = ["disk", "tier", "cores", "kubernetes.io/hostname"];
/// Values that fail label validation: a requirement holding one must match nothing.
const INVALID_VALUES: [&str; 2] = ["invalid value: ___@#$%^", "-1"];

pub(crate) fn pick<'a, T>(rng: &mut ChaCha8Rng, xs: &'a [T]) -> &'a T {
    xs.choose(rng).expect("non-empty vocabulary")
}

pub(crate) fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    rng.gen_bool(p)
}

pub(crate) fn cpu(rng: &mut ChaCha8Rng, max_milli: u32) -> String {
    let m = rng.gen_range(1..=max_milli / 50) * 50;
    if m % 1000 == 0 {
        (m / 1000).to_string()
    } else {
        format!("{m}m")
    }
}

pub(crate) fn memory(rng: &mut ChaCha8Rng, max_mi: u32) -> String {
    let mi = rng.gen_range(1..=max_mi / 64) * 64;
    if mi % 1024 == 0 {
        format!("{}Gi", mi / 1024)
    } else {
        format!("{mi}Mi")
    }
}

/// Generates case `index` of the stream `seed`.
pub fn generate(seed: u64, index: u64) -> Case {
    use rand::SeedableRng;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let rng = &mut rng;
    let mut cluster = Vec::new();
    for (i, ns) in NAMESPACES.iter().enumerate() {
        cluster.push(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"team": TEAMS[i % 2], "kubernetes.io/metadata.name": ns}}}));
    }
    let n_nodes = rng.gen_range(1..=9);
    let nodes: Vec<String> = (0..n_nodes).map(|i| format!("node-{i}")).collect();
    for name in &nodes {
        cluster.push(node(rng, name));
    }
    if chance(rng, 0.3) {
        cluster.push(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb-db", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
            "status": {"disruptionsAllowed": rng.gen_range(0..=1), "currentHealthy": 2, "desiredHealthy": 1,
                       "expectedPods": 2}}));
    }
    if chance(rng, 0.25) {
        cluster.push(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "svc", "namespace": "default"},
            "spec": {"selector": {"app": *pick(rng, &APPS)}}}));
    }
    let n_pods = rng.gen_range(0..=14);
    for i in 0..n_pods {
        let mut p = pod(rng, &format!("existing-{i}"), &nodes, false);
        p["spec"]["nodeName"] = json!(pick(rng, &nodes));
        // Running pods have distinct start times, as kubelets set them; preemption orders
        // victims of equal priority by start time.
        p["status"] = json!({"phase": "Running", "startTime": format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60)});
        cluster.push(p);
    }
    let mut incoming = pod(rng, "incoming", &nodes, true);
    let config = chance(rng, 0.5).then(|| config(rng));
    // Drawn last, so the cases without storage are the stream they were before it existed.
    if chance(rng, 0.3) {
        storage(rng, &nodes, &mut cluster, &mut incoming);
    }
    Case { cluster, pod: incoming, config }
}

/// The CSI driver of the generated volumes, and the in-tree plugin migrated to it.
const CSI_DRIVER: &str = "ebs.csi.aws.com";
const MIGRATED_PLUGIN: &str = "kubernetes.io/aws-ebs";
const ACCESS_MODES: [&str; 3] = ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"];
/// Disk names shared by inline volumes and PVs, so that VolumeRestrictions sees conflicts.
const DISKS: [&str; 3] = ["disk-a", "disk-b", "disk-c"];

/// Storage for the volume plugins, inserted before the pods: a StorageClass that binds at once
/// (its unbound claim is rejected at PreFilter; [`wait_for_first_consumer`] draws the others),
/// CSINodes with small attach limits (some with the in-tree plugin migrated), PersistentVolumes
/// (CSI, AWS EBS or GCE PD; zone labels; node affinity by zone or hostname) each with its bound
/// claim, an unbound claim and one bound to a missing PV, and volumes on the existing pods and the
/// incoming one (claims, missing claims, inline disks, generic ephemeral volumes).
fn storage(rng: &mut ChaCha8Rng, nodes: &[String], cluster: &mut Vec<Value>, incoming: &mut Value) {
    let mut objects = vec![json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "sc-immediate"}, "provisioner": CSI_DRIVER, "volumeBindingMode": "Immediate"})];
    for name in nodes {
        if chance(rng, 0.6) {
            let mut meta = json!({"name": name});
            if chance(rng, 0.5) {
                meta["annotations"] = json!({"storage.alpha.kubernetes.io/migrated-plugins": MIGRATED_PLUGIN});
            }
            objects.push(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta,
                "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": name,
                                      "allocatable": {"count": rng.gen_range(0..=3)}}]}}));
        }
    }
    // Claims by namespace: (name, bound).
    let mut claims: Vec<(String, String)> = Vec::new();
    for i in 0..rng.gen_range(0..=5) {
        let (pv, claim) = (format!("pv-{i}"), format!("claim-{i}"));
        let ns = *pick(rng, &NAMESPACES);
        let mode = *pick(rng, &ACCESS_MODES);
        let mut spec = json!({"accessModes": [mode], "capacity": {"storage": "1Gi"},
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns, "name": claim}});
        match rng.gen_range(0..3) {
            0 => spec["csi"] = json!({"driver": CSI_DRIVER, "volumeHandle": format!("handle-{i}")}),
            1 => spec["awsElasticBlockStore"] = json!({"volumeID": pick(rng, &DISKS)}),
            _ => spec["gcePersistentDisk"] = json!({"pdName": pick(rng, &DISKS)}),
        }
        if chance(rng, 0.3) {
            spec["storageClassName"] = json!("sc-immediate");
        }
        if chance(rng, 0.35) {
            let (key, value) = if chance(rng, 0.6) {
                ("topology.kubernetes.io/zone", pick(rng, &ZONES).to_string())
            } else {
                ("kubernetes.io/hostname", pick(rng, nodes).clone())
            };
            spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}});
        }
        let mut meta = json!({"name": pv});
        if chance(rng, 0.35) {
            let key = *pick(rng, &["topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"]);
            meta["labels"] = json!({key: pick(rng, &ZONES)});
        }
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
                            "status": {"phase": "Bound"}}));
        let mut claim_spec = json!({"accessModes": [mode], "volumeName": pv,
                                    "resources": {"requests": {"storage": "1Gi"}}});
        if spec.get("storageClassName").is_some() {
            claim_spec["storageClassName"] = json!("sc-immediate");
        } else {
            claim_spec["storageClassName"] = json!("");
        }
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": ns}, "spec": claim_spec, "status": {"phase": "Bound"}}));
        claims.push((ns.to_string(), claim));
    }
    if chance(rng, 0.3) {
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim-unbound", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "sc-immediate",
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}}));
        claims.push(("default".into(), "claim-unbound".into()));
    }
    if chance(rng, 0.15) {
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim-lost", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-missing", "storageClassName": "",
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound"}}));
        claims.push(("default".into(), "claim-lost".into()));
    }
    let first_pod = cluster.iter().position(|o| o["kind"] == "Pod").unwrap_or(cluster.len());
    let existing = cluster.len() - first_pod;
    cluster.splice(first_pod..first_pod, objects);
    let n = cluster.len();
    for p in &mut cluster[n - existing..] {
        if chance(rng, 0.4) {
            let v = volume(rng, p, &claims, false);
            p["spec"]["volumes"] = json!([v]);
        }
    }
    let mut vols: Vec<Value> = (0..rng.gen_range(1..=2)).map(|_| volume(rng, incoming, &claims, true)).collect();
    // Drawn last, so the cases without them are the stream they were before.
    if chance(rng, 0.5) {
        let ns = incoming["metadata"]["namespace"].as_str().unwrap_or("default").to_string();
        let (objects, names) = wait_for_first_consumer(rng, nodes, &ns);
        let first_pod = cluster.iter().position(|o| o["kind"] == "Pod").unwrap_or(cluster.len());
        cluster.splice(first_pod..first_pod, objects);
        vols.extend(
            names.into_iter().map(|c| json!({"name": format!("w-{c}"), "persistentVolumeClaim": {"claimName": c}})),
        );
    }
    incoming["spec"]["volumes"] = json!(vols);
}

/// VolumeBinding's static binding and provisioning: a WaitForFirstConsumer class (provisioning or
/// not, sometimes limited to zones), sometimes its CSIDriver with storage capacity tracking and
/// CSIStorageCapacities per zone, available volumes of the class (sizes, access modes, a volume
/// mode, labels, node affinity by zone or hostname, some already claimed), and one or two unbound
/// claims of the incoming pod's namespace (sizes, access modes, a selector, a selected node).
/// Returns the objects and the claims' names.
fn wait_for_first_consumer(rng: &mut ChaCha8Rng, nodes: &[String], ns: &str) -> (Vec<Value>, Vec<String>) {
    let provisioner = if chance(rng, 0.5) { CSI_DRIVER } else { "kubernetes.io/no-provisioner" };
    let mut class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc-wait"},
        "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"});
    if chance(rng, 0.3) {
        let mut zones: Vec<&str> = ZONES.iter().copied().filter(|_| chance(rng, 0.5)).collect();
        if zones.is_empty() {
            zones.push(ZONES[0]);
        }
        class["allowedTopologies"] =
            json!([{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": zones}]}]);
    }
    let mut objects = vec![class];
    if provisioner == CSI_DRIVER && chance(rng, 0.4) {
        objects.push(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": CSI_DRIVER},
            "spec": {"storageCapacity": true}}));
        for (i, zone) in ZONES.iter().enumerate() {
            if chance(rng, 0.6) {
                let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                    "metadata": {"name": format!("cap-{i}"), "namespace": "default"}, "storageClassName": "sc-wait",
                    "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}},
                    "capacity": format!("{}Gi", rng.gen_range(0..=8))});
                if chance(rng, 0.3) {
                    c["maximumVolumeSize"] = json!(format!("{}Gi", rng.gen_range(1..=3)));
                }
                objects.push(c);
            }
        }
    }
    let modes = |rng: &mut ChaCha8Rng| -> Vec<&str> {
        let m: Vec<&str> =
            ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"].into_iter().filter(|_| chance(rng, 0.5)).collect();
        if m.is_empty() {
            vec!["ReadWriteOnce"]
        } else {
            m
        }
    };
    for i in 0..rng.gen_range(0..=5) {
        let name = format!("pv-wait-{i}");
        let mut spec = json!({"accessModes": modes(rng), "capacity": {"storage": format!("{}Gi", rng.gen_range(1..=4))},
            "storageClassName": "sc-wait", "csi": {"driver": CSI_DRIVER, "volumeHandle": format!("wait-{i}")}});
        if chance(rng, 0.1) {
            spec["volumeMode"] = json!("Block");
        }
        if chance(rng, 0.7) {
            let (key, value) = if chance(rng, 0.5) {
                ("topology.kubernetes.io/zone", pick(rng, &ZONES).to_string())
            } else {
                ("kubernetes.io/hostname", pick(rng, nodes).clone())
            };
            spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}});
        }
        let mut phase = "Available";
        if chance(rng, 0.15) {
            spec["claimRef"] =
                json!({"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns, "name": "someone-else"});
            phase = "Bound";
        }
        let mut meta = json!({"name": name});
        if chance(rng, 0.4) {
            meta["labels"] = json!({"tier": pick(rng, &["gold", "silver"])});
        }
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
                            "status": {"phase": phase}}));
    }
    let mut names = Vec::new();
    for i in 0..rng.gen_range(1..=2) {
        let name = format!("claim-wait-{i}");
        let mut meta = json!({"name": name, "namespace": ns});
        if chance(rng, 0.1) {
            meta["annotations"] = json!({"volume.kubernetes.io/selected-node": pick(rng, nodes)});
        }
        let mut spec = json!({"accessModes": modes(rng), "storageClassName": "sc-wait",
            "resources": {"requests": {"storage": format!("{}Gi", rng.gen_range(1..=3))}}});
        if chance(rng, 0.2) {
            spec["selector"] = json!({"matchLabels": {"tier": "gold"}});
        }
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
                            "status": {"phase": "Pending"}}));
        names.push(name);
    }
    (objects, names)
}

/// One volume of pod `p`: a claim of its namespace (or, for the incoming pod, a missing one or a
/// generic ephemeral volume whose claim does not exist), or an inline disk.
fn volume(rng: &mut ChaCha8Rng, p: &Value, claims: &[(String, String)], incoming: bool) -> Value {
    let ns = p["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = format!("v{}", rng.gen_range(0..1000));
    let own: Vec<&String> = claims.iter().filter(|(n, _)| n == ns).map(|(_, c)| c).collect();
    match rng.gen_range(0..if incoming { 6 } else { 4 }) {
        0 | 1 if !own.is_empty() => {
            json!({"name": name, "persistentVolumeClaim": {"claimName": pick(rng, &own), "readOnly": chance(rng, 0.3)}})
        }
        2 => json!({"name": name, "gcePersistentDisk": {"pdName": pick(rng, &DISKS), "readOnly": chance(rng, 0.5)}}),
        3 => {
            json!({"name": name, "awsElasticBlockStore": {"volumeID": pick(rng, &DISKS), "readOnly": chance(rng, 0.5)}})
        }
        4 => json!({"name": name, "persistentVolumeClaim": {"claimName": "claim-nope"}}),
        5 => json!({"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}}}),
        _ => json!({"name": name, "emptyDir": {}}),
    }
}

pub(crate) fn node(rng: &mut ChaCha8Rng, name: &str) -> Value {
    let mut labels = Map::new();
    labels.insert("kubernetes.io/hostname".into(), json!(name));
    if chance(rng, 0.9) {
        labels.insert("topology.kubernetes.io/zone".into(), json!(pick(rng, &ZONES)));
    }
    if chance(rng, 0.1) {
        labels.insert("failure-domain.beta.kubernetes.io/zone".into(), json!(pick(rng, &ZONES)));
    }
    if chance(rng, 0.5) {
        labels.insert("disk".into(), json!(pick(rng, &["ssd", "hdd"])));
    }
    if chance(rng, 0.4) {
        labels.insert("tier".into(), json!(pick(rng, &["a", "b", "c"])));
    }
    if chance(rng, 0.5) {
        labels.insert("cores".into(), json!(pick(rng, &["2", "8", "32"])));
    }
    let mut alloc = Map::new();
    alloc.insert("cpu".into(), json!(cpu(rng, 8000)));
    alloc.insert("memory".into(), json!(memory(rng, 16384)));
    alloc.insert("pods".into(), json!(rng.gen_range(2..=20).to_string()));
    if chance(rng, 0.3) {
        alloc.insert("ephemeral-storage".into(), json!(format!("{}Gi", rng.gen_range(1..=50))));
    }
    if chance(rng, 0.3) {
        alloc.insert(EXTENDED.into(), json!(rng.gen_range(0..=4).to_string()));
    }
    let mut taints = Vec::new();
    for _ in 0..rng.gen_range(0..=2) {
        if chance(rng, 0.35) {
            let mut t = json!({"key": pick(rng, &TAINT_KEYS), "effect": pick(rng, &EFFECTS)});
            if chance(rng, 0.6) {
                t["value"] = json!(pick(rng, &["a", "b"]));
            }
            taints.push(t);
        }
    }
    let mut images = Vec::new();
    for img in IMAGES {
        if chance(rng, 0.3) {
            let size: i64 = rng.gen_range(1..=1200) * 1024 * 1024;
            let names = match img {
                "nginx" => vec!["docker.io/library/nginx:latest".to_string()],
                "busybox" => vec!["docker.io/library/busybox:latest".to_string(), "busybox:latest".to_string()],
                other => vec![other.to_string()],
            };
            images.push(json!({"names": names, "sizeBytes": size}));
        }
    }
    let mut spec = json!({});
    if !taints.is_empty() {
        spec["taints"] = json!(taints);
    }
    if chance(rng, 0.08) {
        spec["unschedulable"] = json!(true);
    }
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
           "spec": spec, "status": {"allocatable": alloc.clone(), "capacity": alloc, "images": images}})
}

pub(crate) fn selector(rng: &mut ChaCha8Rng, empty_ok: bool) -> Value {
    match rng.gen_range(0..if empty_ok { 5 } else { 4 }) {
        0 | 1 => json!({"matchLabels": {"app": pick(rng, &APPS)}}),
        2 => json!({"matchExpressions": [{"key": "app", "operator": pick(rng, &["In", "NotIn"]),
                                           "values": [pick(rng, &APPS), pick(rng, &APPS)]}]}),
        3 => json!({"matchExpressions": [{"key": "team", "operator": pick(rng, &["Exists", "DoesNotExist"])}]}),
        _ => json!({}),
    }
}

fn container(rng: &mut ChaCha8Rng, name: &str, ports: bool) -> Value {
    let mut c = json!({"name": name, "image": pick(rng, &IMAGES)});
    let mut req = Map::new();
    if chance(rng, 0.8) {
        req.insert("cpu".into(), json!(cpu(rng, 3000)));
    }
    if chance(rng, 0.8) {
        req.insert("memory".into(), json!(memory(rng, 6144)));
    }
    if chance(rng, 0.15) {
        req.insert("ephemeral-storage".into(), json!(format!("{}Gi", rng.gen_range(1..=20))));
    }
    if chance(rng, 0.15) {
        req.insert(EXTENDED.into(), json!(rng.gen_range(1..=2).to_string()));
    }
    if !req.is_empty() {
        c["resources"] = json!({"requests": req});
    }
    if ports && chance(rng, 0.25) {
        let mut p = json!({"containerPort": 8080, "hostPort": pick(rng, &[80, 8080])});
        if chance(rng, 0.4) {
            p["protocol"] = json!(pick(rng, &["TCP", "UDP"]));
        }
        if chance(rng, 0.4) {
            p["hostIP"] = json!(pick(rng, &["0.0.0.0", "127.0.0.1", "10.0.0.1"]));
        }
        c["ports"] = json!([p]);
    }
    c
}

fn node_requirement(rng: &mut ChaCha8Rng) -> Value {
    let key = *pick(rng, &LABEL_KEYS);
    let op = *pick(rng, &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]);
    let values: Vec<String> = match op {
        "Exists" | "DoesNotExist" => vec![],
        "Gt" | "Lt" if chance(rng, 0.1) => vec![INVALID_VALUES[1].to_string()],
        "Gt" | "Lt" => vec![pick(rng, &["1", "4", "16"]).to_string()],
        _ if chance(rng, 0.08) => vec![INVALID_VALUES[0].to_string()],
        _ => {
            let vocab: &[&str] = match key {
                "disk" => &["ssd", "hdd"],
                "tier" => &["a", "b", "c"],
                "cores" => &["2", "8", "32"],
                _ => &["node-0", "node-1", "node-2", "node-3"],
            };
            (0..rng.gen_range(1..=2)).map(|_| pick(rng, vocab).to_string()).collect()
        }
    };
    let mut r = json!({"key": key, "operator": op});
    if !values.is_empty() {
        r["values"] = json!(values);
    }
    r
}

fn node_term(rng: &mut ChaCha8Rng, nodes: &[String]) -> Value {
    let mut t = json!({});
    if chance(rng, 0.8) {
        let exprs: Vec<Value> = (0..rng.gen_range(1..=2)).map(|_| node_requirement(rng)).collect();
        t["matchExpressions"] = json!(exprs);
    }
    if chance(rng, 0.25) {
        let op = *pick(rng, &["In", "NotIn"]);
        t["matchFields"] = json!([{"key": "metadata.name", "operator": op, "values": [pick(rng, nodes)]}]);
    }
    t
}

fn pod_term(rng: &mut ChaCha8Rng) -> Value {
    let mut t = json!({"topologyKey": pick(rng, &["topology.kubernetes.io/zone", "kubernetes.io/hostname"])});
    if chance(rng, 0.95) {
        t["labelSelector"] = selector(rng, false);
    }
    match rng.gen_range(0..4) {
        0 => t["namespaces"] = json!([pick(rng, &NAMESPACES)]),
        1 => t["namespaceSelector"] = json!({"matchLabels": {"team": pick(rng, &TEAMS)}}),
        2 if chance(rng, 0.3) => t["namespaceSelector"] = json!({}),
        _ => {}
    }
    if chance(rng, 0.15) {
        t[*pick(rng, &["matchLabelKeys", "mismatchLabelKeys"])] = json!(["version"]);
    }
    t
}

pub(crate) fn pod(rng: &mut ChaCha8Rng, name: &str, nodes: &[String], incoming: bool) -> Value {
    let ns = if chance(rng, 0.7) { "default" } else { *pick(rng, &NAMESPACES) };
    let mut labels = Map::new();
    labels.insert("app".into(), json!(pick(rng, &APPS)));
    if chance(rng, 0.5) {
        labels.insert("team".into(), json!(pick(rng, &TEAMS)));
    }
    if chance(rng, 0.5) {
        labels.insert("version".into(), json!(pick(rng, &["v1", "v2"])));
    }
    let containers: Vec<Value> =
        (0..rng.gen_range(if incoming { 0 } else { 1 }..=2)).map(|i| container(rng, &format!("c{i}"), true)).collect();
    let mut spec = json!({"containers": containers});
    if chance(rng, 0.2) {
        let mut inits = Vec::new();
        for i in 0..rng.gen_range(1..=2) {
            let mut c = container(rng, &format!("init{i}"), false);
            if chance(rng, 0.4) {
                c["restartPolicy"] = json!("Always");
            }
            inits.push(c);
        }
        spec["initContainers"] = json!(inits);
    }
    if chance(rng, 0.1) {
        spec["overhead"] = json!({"cpu": cpu(rng, 500), "memory": memory(rng, 512)});
    }
    if chance(rng, 0.08) {
        spec["resources"] = json!({"requests": {"cpu": cpu(rng, 4000), "memory": memory(rng, 4096)}});
    }
    let priority: i32 = *pick(rng, &[0, 0, 100, 1000, -5]);
    spec["priority"] = json!(priority);
    if incoming {
        if chance(rng, 0.3) {
            spec["nodeSelector"] = json!({*pick(rng, &["disk", "tier"]): pick(rng, &["ssd", "a", "b"])});
        }
        let mut affinity = Map::new();
        if chance(rng, 0.35) {
            let mut na = json!({});
            if chance(rng, 0.6) {
                let terms: Vec<Value> = (0..rng.gen_range(1..=2)).map(|_| node_term(rng, nodes)).collect();
                na["requiredDuringSchedulingIgnoredDuringExecution"] = json!({"nodeSelectorTerms": terms});
            }
            if chance(rng, 0.6) {
                let prefs: Vec<Value> = (0..rng.gen_range(1..=2))
                    .map(|_| json!({"weight": rng.gen_range(1..=100), "preference": node_term(rng, nodes)}))
                    .collect();
                na["preferredDuringSchedulingIgnoredDuringExecution"] = json!(prefs);
            }
            affinity.insert("nodeAffinity".into(), na);
        }
        for kind in ["podAffinity", "podAntiAffinity"] {
            if chance(rng, 0.3) {
                let mut pa = json!({});
                if chance(rng, 0.5) {
                    pa["requiredDuringSchedulingIgnoredDuringExecution"] = json!([pod_term(rng)]);
                }
                if chance(rng, 0.6) {
                    pa["preferredDuringSchedulingIgnoredDuringExecution"] =
                        json!([{"weight": rng.gen_range(1..=100), "podAffinityTerm": pod_term(rng)}]);
                }
                affinity.insert(kind.into(), pa);
            }
        }
        if !affinity.is_empty() {
            spec["affinity"] = Value::Object(affinity);
        }
        if chance(rng, 0.35) {
            let constraints: Vec<Value> = (0..rng.gen_range(1..=2)).map(|_| spread_constraint(rng)).collect();
            spec["topologySpreadConstraints"] = json!(constraints);
        }
        if chance(rng, 0.4) {
            let tols: Vec<Value> = (0..rng.gen_range(1..=2)).map(|_| toleration(rng)).collect();
            spec["tolerations"] = json!(tols);
        }
        if chance(rng, 0.15) {
            spec["preemptionPolicy"] = json!(pick(rng, &["Never", "PreemptLowerPriority"]));
        }
    } else if chance(rng, 0.2) {
        // Existing pods with affinity terms make InterPodAffinity's symmetric checks matter.
        let kind = *pick(rng, &["podAffinity", "podAntiAffinity"]);
        let mut pa = json!({});
        if chance(rng, 0.5) {
            pa["requiredDuringSchedulingIgnoredDuringExecution"] = json!([pod_term(rng)]);
        } else {
            pa["preferredDuringSchedulingIgnoredDuringExecution"] =
                json!([{"weight": rng.gen_range(1..=100), "podAffinityTerm": pod_term(rng)}]);
        }
        spec["affinity"] = json!({kind: pa});
    }
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": labels, "uid": format!("uid-{name}")},
           "spec": spec})
}

pub(crate) fn toleration(rng: &mut ChaCha8Rng) -> Value {
    let mut t = json!({});
    if chance(rng, 0.9) {
        t["key"] = json!(pick(rng, &TAINT_KEYS));
    }
    let exists = t.get("key").is_none() || chance(rng, 0.4);
    t["operator"] = json!(if exists { "Exists" } else { "Equal" });
    if !exists {
        t["value"] = json!(pick(rng, &["a", "b"]));
    }
    if chance(rng, 0.6) {
        t["effect"] = json!(pick(rng, &EFFECTS));
    }
    t
}

fn spread_constraint(rng: &mut ChaCha8Rng) -> Value {
    let hard = chance(rng, 0.6);
    let mut c = json!({
        "maxSkew": rng.gen_range(1..=2),
        "topologyKey": pick(rng, &["topology.kubernetes.io/zone", "kubernetes.io/hostname", "disk"]),
        "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
    });
    if chance(rng, 0.95) {
        c["labelSelector"] = selector(rng, true);
    }
    if hard && chance(rng, 0.25) {
        c["minDomains"] = json!(rng.gen_range(1..=4));
    }
    if chance(rng, 0.3) {
        c["nodeAffinityPolicy"] = json!(pick(rng, &["Honor", "Ignore"]));
    }
    if chance(rng, 0.3) {
        c["nodeTaintsPolicy"] = json!(pick(rng, &["Honor", "Ignore"]));
    }
    if chance(rng, 0.2) {
        c["matchLabelKeys"] = json!(["version"]);
    }
    c
}

/// A KubeSchedulerConfiguration with one profile that varies plugin args, weights and the plugin set.
fn config(rng: &mut ChaCha8Rng) -> Value {
    let mut plugin_config = Vec::new();
    if chance(rng, 0.5) {
        let strategy = match rng.gen_range(0..3) {
            0 => json!({"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": rng.gen_range(1..=3)},
                                                                  {"name": "memory", "weight": 1}]}),
            1 => json!({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                                 {"name": "memory", "weight": rng.gen_range(1..=3)},
                                                                 {"name": EXTENDED, "weight": 2}]}),
            _ => json!({"type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                                               {"utilization": 100, "score": 0}]}}),
        };
        let mut args = json!({"scoringStrategy": strategy});
        if chance(rng, 0.3) {
            args["ignoredResources"] = json!([EXTENDED]);
        }
        plugin_config.push(json!({"name": "NodeResourcesFit", "args": args}));
    }
    if chance(rng, 0.3) {
        let mut args = json!({"defaultingType": "List"});
        if chance(rng, 0.7) {
            args["defaultConstraints"] = json!([{"maxSkew": rng.gen_range(1..=3),
                "topologyKey": pick(rng, &["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
                "whenUnsatisfiable": pick(rng, &["ScheduleAnyway", "DoNotSchedule"])}]);
        }
        plugin_config.push(json!({"name": "PodTopologySpread", "args": args}));
    }
    if chance(rng, 0.3) {
        let mut args = json!({"hardPodAffinityWeight": rng.gen_range(0..=100)});
        if chance(rng, 0.3) {
            args["ignorePreferredTermsOfExistingPods"] = json!(true);
        }
        plugin_config.push(json!({"name": "InterPodAffinity", "args": args}));
    }
    if chance(rng, 0.2) {
        plugin_config.push(json!({"name": "NodeAffinity", "args": {"addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["hdd"]}]}]}}}}));
    }
    if chance(rng, 0.2) {
        plugin_config.push(json!({"name": "DefaultPreemption",
            "args": {"minCandidateNodesPercentage": rng.gen_range(0..=100), "minCandidateNodesAbsolute": rng.gen_range(1..=10)}}));
    }
    let mut plugins = json!({});
    if chance(rng, 0.4) {
        let mut score = Vec::new();
        for n in [
            "NodeResourcesFit",
            "NodeResourcesBalancedAllocation",
            "ImageLocality",
            "InterPodAffinity",
            "PodTopologySpread",
            "TaintToleration",
            "NodeAffinity",
        ] {
            if chance(rng, 0.4) {
                score.push(json!({"name": n, "weight": rng.gen_range(1..=5)}));
            }
        }
        if !score.is_empty() {
            plugins["score"] = json!({"enabled": score});
        }
    }
    if chance(rng, 0.2) {
        let off = *pick(
            rng,
            &[
                "NodeResourcesBalancedAllocation",
                "ImageLocality",
                "InterPodAffinity",
                "PodTopologySpread",
                "TaintToleration",
                "NodePorts",
            ],
        );
        plugins["multiPoint"] = json!({"disabled": [{"name": off}]});
    }
    let mut profile = json!({"schedulerName": "default-scheduler", "pluginConfig": plugin_config});
    if plugins.as_object().is_some_and(|m| !m.is_empty()) {
        profile["plugins"] = plugins;
    }
    json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [profile]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_and_index_give_the_same_case() {
        let a = generate(7, 3);
        let b = generate(7, 3);
        assert_eq!(a.cluster, b.cluster);
        assert_eq!(a.pod, b.pod);
        assert_eq!(a.config, b.config);
        assert_ne!(generate(7, 4).cluster, a.cluster);
    }

    #[test]
    fn every_case_loads_in_schedperf() {
        for i in 0..300 {
            let c = generate(1, i);
            let text = super::super::to_json_stream(&c.cluster);
            crate::api::parse_objects(&text, "cluster").unwrap_or_else(|e| panic!("case {i}: {e}"));
            crate::api::parse_objects(&c.pod.to_string(), "pod").unwrap_or_else(|e| panic!("case {i}: {e}"));
            if let Some(cfg) = &c.config {
                crate::config::SchedulerConfig::parse(&cfg.to_string(), "config")
                    .unwrap_or_else(|e| panic!("case {i}: {e}"));
            }
        }
    }

    #[test]
    fn the_stream_covers_every_plugin_input() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..500 {
            let c = generate(2, i);
            let all =
                format!("{} {} {}", super::super::to_json_stream(&c.cluster), c.pod, c.config.unwrap_or_default());
            for needle in [
                "\"taints\"",
                "tolerations",
                "nodeSelector",
                "requiredDuringScheduling",
                "preferredDuringScheduling",
                "matchFields",
                "\"Gt\"",
                "invalid value",
                "hostPort",
                "hostIP",
                "UDP",
                EXTENDED,
                "overhead",
                "initContainers",
                "\"Always\"",
                "topologySpreadConstraints",
                "minDomains",
                "nodeTaintsPolicy",
                "matchLabelKeys",
                "mismatchLabelKeys",
                "namespaceSelector",
                "podAntiAffinity",
                "unschedulable",
                "PodDisruptionBudget",
                "MostAllocated",
                "RequestedToCapacityRatio",
                "defaultConstraints",
                "addedAffinity",
                "images",
                "Never",
                "persistentVolumeClaim",
                "CSINode",
                "migrated-plugins",
                "ReadWriteOncePod",
                "claim-unbound",
                "pv-missing",
                "gcePersistentDisk",
                "awsElasticBlockStore",
                "ephemeral",
                "\"required\":{\"nodeSelectorTerms\"",
            ] {
                if all.contains(needle) {
                    seen.insert(needle);
                }
            }
        }
        assert_eq!(seen.len(), 40, "inputs never generated: {seen:?}");
    }
}
