//! Builders for tests, in the spirit of kube-scheduler's `st.MakeNode()` / `st.MakePod()` wrappers.

use smallvec::SmallVec;

use super::*;

/// Builds a [`NodeSpec`] against a snapshot's interner.
pub struct MakeNode<'a> {
    snap: &'a mut Snapshot,
    spec: NodeSpec,
}

impl<'a> MakeNode<'a> {
    pub fn new(snap: &'a mut Snapshot, name: &str) -> Self {
        let name = snap.interner.intern(name);
        MakeNode { snap, spec: NodeSpec { name, allowed_pod_number: 110, ..Default::default() } }
    }

    pub fn capacity(mut self, cpu_milli: i64, memory: i64) -> Self {
        self.spec.allocatable.cpu_milli = cpu_milli;
        self.spec.allocatable.memory = memory;
        self
    }

    pub fn pods(mut self, n: i64) -> Self {
        self.spec.allowed_pod_number = n;
        self
    }

    pub fn ephemeral(mut self, bytes: i64) -> Self {
        self.spec.allocatable.ephemeral_storage = bytes;
        self
    }

    pub fn scalar(mut self, name: &str, v: i64) -> Self {
        let s = self.snap.interner.intern(name);
        self.spec.allocatable.scalars.push((s, v));
        self.spec
            .allocatable
            .scalars
            .sort_by(|a, b| self.snap.interner.resolve(a.0).cmp(self.snap.interner.resolve(b.0)));
        self
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        let (k, v) = (self.snap.interner.intern(k), self.snap.interner.intern(v));
        self.spec.labels.retain(|(kk, _)| *kk != k);
        self.spec.labels.push((k, v));
        self.spec.labels.sort();
        self
    }

    pub fn taint(mut self, k: &str, v: &str, effect: TaintEffect) -> Self {
        let (key, value) = (self.snap.interner.intern(k), self.snap.interner.intern(v));
        self.spec.taints.push(Taint { key, value, effect });
        self
    }

    pub fn unschedulable(mut self) -> Self {
        self.spec.unschedulable = true;
        self
    }

    pub fn image(mut self, names: &[&str], size: i64) -> Self {
        for n in names {
            let s = self.snap.interner.intern(n);
            self.spec.images.push((s, size));
        }
        self
    }

    /// `status.declaredFeatures`, mapped by the scheduler's registry as `compile_node` does.
    pub fn declared_features(mut self, names: &[&str]) -> Self {
        self.spec.declared_features = names.iter().map(|n| self.snap.interner.intern(n)).collect();
        self.spec.declared_feature_set = super::features::default_framework().try_map(names);
        self
    }

    /// The spec, not added (for `update_node`).
    pub fn spec(self) -> NodeSpec {
        self.spec
    }

    /// Adds the node to the snapshot.
    pub fn add(self) -> NodeIdx {
        let MakeNode { snap, spec } = self;
        snap.add_node(&spec).expect("test node names are unique")
    }
}

/// Builds a [`PodInfo`] against a snapshot's interner.
pub struct MakePod<'a> {
    snap: &'a mut Snapshot,
    pod: PodInfo,
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl<'a> MakePod<'a> {
    pub fn new(snap: &'a mut Snapshot, name: &str) -> Self {
        let uid = PodUid(NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let pod = PodInfo {
            uid,
            namespace: snap.wk.default_namespace,
            name: name.to_string(),
            labels: Vec::new(),
            node_name: None,
            requests: Resources::default(),
            non_zero_cpu_milli: 100,
            non_zero_memory: 200 * 1024 * 1024,
            fit_score_cpu_milli: 100,
            fit_score_memory: 200 * 1024 * 1024,
            node_selector: Vec::new(),
            required_affinity: None,
            preferred_affinity: Vec::new(),
            preferred_affinity_set: false,
            tolerations: Vec::new(),
            host_ports: Vec::new(),
            images: Vec::new(),
            container_count: 1,
            priority: 0,
            preemption_policy: PreemptionPolicy::default(),
            scheduler_name: snap.wk.default_scheduler,
            scheduling_gates: Vec::new(),
            terminating: false,
            host_network: false,
            nominated_node: None,
            constraints: PodConstraints::default(),
            sign: SignParts::default(),
            volumes: None,
            claims: None,
            feature_facts: Default::default(),
        };
        MakePod { snap, pod }
    }

    /// What NodeDeclaredFeatures' inference reads of the spec.
    pub fn feature_facts(mut self, facts: super::features::PodFeatureFacts) -> Self {
        self.pod.feature_facts = facts;
        self
    }

    /// Sets the pod's volumes (the volume plugins' view of `spec.volumes`).
    pub fn volumes(mut self, list: Vec<super::volumes::PodVolume>) -> Self {
        self.pod.volumes = Some(std::sync::Arc::new(super::volumes::PodVolumes { list, pod_uid: String::new() }));
        self
    }

    /// Sets requests as one container would (non-zero scoring values follow them).
    pub fn req(mut self, cpu_milli: i64, memory: i64) -> Self {
        self.pod.requests.cpu_milli = cpu_milli;
        self.pod.requests.memory = memory;
        self.pod.non_zero_cpu_milli = cpu_milli;
        self.pod.non_zero_memory = memory;
        self.pod.fit_score_cpu_milli = cpu_milli;
        self.pod.fit_score_memory = memory;
        self
    }

    pub fn scalar_req(mut self, name: &str, v: i64) -> Self {
        let s = self.snap.interner.intern(name);
        self.pod.requests.scalars.push((s, v));
        self
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        let (k, v) = (self.snap.interner.intern(k), self.snap.interner.intern(v));
        self.pod.labels.push((k, v));
        self.pod.labels.sort();
        self
    }

    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        let (k, v) = (self.snap.interner.intern(k), self.snap.interner.intern(v));
        self.pod.node_selector.push((k, v));
        self.pod.node_selector.sort();
        self
    }

    pub fn node_name(mut self, n: &str) -> Self {
        self.pod.node_name = Some(self.snap.interner.intern(n));
        self
    }

    pub fn toleration(mut self, key: &str, op: TolerationOp, value: &str, effect: Option<TaintEffect>) -> Self {
        let key = if key.is_empty() { None } else { Some(self.snap.interner.intern(key)) };
        let value = self.snap.interner.intern(value);
        self.pod.tolerations.push(Toleration { key, op, value, effect });
        self
    }

    pub fn host_port(mut self, protocol: &str, ip: &str, port: i32) -> Self {
        let protocol = self.snap.interner.intern(if protocol.is_empty() { "TCP" } else { protocol });
        let ip = self.snap.interner.intern(if ip.is_empty() { "0.0.0.0" } else { ip });
        self.pod.host_ports.push(HostPort { protocol, ip, port });
        self
    }

    pub fn image(mut self, name: &str) -> Self {
        let s = self.snap.interner.intern(name);
        self.pod.images.push(ImageRef(s));
        self.pod.container_count = self.pod.images.len() as u32;
        self
    }

    /// Adds a required node-affinity term made of `In` requirements.
    pub fn affinity_in(mut self, key: &str, values: &[&str]) -> Self {
        let key = self.snap.interner.intern(key);
        let vals: SmallVec<[Sym; 4]> = values.iter().map(|v| self.snap.interner.intern(v)).collect();
        let term = NodeTerm {
            labels: vec![LabelRequirement { key, op: LabelOp::In(vals) }],
            fields: vec![],
            valid: true,
            pinned: None,
        };
        self.pod.required_affinity.get_or_insert_with(NodeSelector::default).terms.push(term);
        self
    }

    pub fn preferred_in(mut self, weight: i32, key: &str, values: &[&str]) -> Self {
        let key = self.snap.interner.intern(key);
        let vals: SmallVec<[Sym; 4]> = values.iter().map(|v| self.snap.interner.intern(v)).collect();
        let term = NodeTerm {
            labels: vec![LabelRequirement { key, op: LabelOp::In(vals) }],
            fields: vec![],
            valid: true,
            pinned: None,
        };
        self.pod.preferred_affinity.push(PreferredTerm { weight, term });
        self.pod.preferred_affinity_set = true;
        self
    }

    pub fn priority(mut self, p: i32) -> Self {
        self.pod.priority = p;
        self
    }

    pub fn namespace(mut self, ns: &str) -> Self {
        self.pod.namespace = self.snap.interner.intern(ns);
        self
    }

    pub fn terminating(mut self) -> Self {
        self.pod.terminating = true;
        self
    }

    pub fn start_time(mut self, ms: i64) -> Self {
        self.pod.constraints.start_time_ms = ms;
        self.pod.constraints.start_time_known = true;
        self
    }

    pub fn preemption_never(mut self) -> Self {
        self.pod.preemption_policy = PreemptionPolicy::Never;
        self
    }

    pub fn controller(mut self, kind: ControllerKind, name: &str) -> Self {
        let name = self.snap.interner.intern(name);
        self.pod.constraints.controller = Some(ControllerRef { kind, name });
        self
    }

    /// Adds a topology spread constraint (`st.SpreadConstraint`); `selector` from [`sel_exists`] etc.
    pub fn spread(mut self, max_skew: i32, key: &str, when: WhenUnsatisfiable, selector: LabelSelector) -> Self {
        let key = self.snap.interner.intern(key);
        self.pod.constraints.topology_spread.push(SpreadConstraint::new(max_skew, key, when, selector));
        self
    }

    /// Adds a fully specified spread constraint.
    pub fn spread_constraint(mut self, c: SpreadConstraint) -> Self {
        self.pod.constraints.topology_spread.push(c);
        self
    }

    fn term(&mut self, label_key: &str, values: Option<&[&str]>, topology_key: &str) -> AffinityTerm {
        let k = self.snap.interner.intern(label_key);
        let op = match values {
            Some(vs) => LabelOp::In(vs.iter().map(|v| self.snap.interner.intern(v)).collect()),
            None => LabelOp::Exists,
        };
        let tk = self.snap.interner.intern(topology_key);
        AffinityTerm::new(
            NamespaceSet::only(self.pod.namespace),
            LabelSelector::new(&[], vec![LabelRequirement { key: k, op }]),
            tk,
        )
    }

    /// Required pod affinity `label_key In values` (or `Exists` when `values` is `None`).
    pub fn pod_affinity(mut self, label_key: &str, values: Option<&[&str]>, topology_key: &str) -> Self {
        let t = self.term(label_key, values, topology_key);
        self.pod.constraints.affinity.required_affinity.push(t);
        self
    }

    pub fn pod_anti_affinity(mut self, label_key: &str, values: Option<&[&str]>, topology_key: &str) -> Self {
        let t = self.term(label_key, values, topology_key);
        self.pod.constraints.affinity.required_anti_affinity.push(t);
        self
    }

    pub fn preferred_pod_affinity(mut self, weight: i32, label_key: &str, values: Option<&[&str]>, tk: &str) -> Self {
        let term = self.term(label_key, values, tk);
        self.pod.constraints.affinity.preferred_affinity.push(WeightedTerm { weight, term });
        self
    }

    pub fn preferred_pod_anti_affinity(
        mut self,
        weight: i32,
        label_key: &str,
        values: Option<&[&str]>,
        tk: &str,
    ) -> Self {
        let term = self.term(label_key, values, tk);
        self.pod.constraints.affinity.preferred_anti_affinity.push(WeightedTerm { weight, term });
        self
    }

    /// Adds a fully specified required affinity term.
    pub fn affinity_term(mut self, t: AffinityTerm) -> Self {
        self.pod.constraints.affinity.required_affinity.push(t);
        self
    }

    pub fn build(mut self) -> PodInfo {
        self.sign();
        self.pod
    }

    /// The signature parts, as `compile::sign_parts` would find them in an API pod written with
    /// the same fields.
    fn sign(&mut self) {
        let p = &mut self.pod;
        let a = &p.constraints.affinity;
        p.sign.pod_affinity_set = !(a.required_affinity.is_empty()
            && a.required_anti_affinity.is_empty()
            && a.preferred_affinity.is_empty()
            && a.preferred_anti_affinity.is_empty());
        let mut ports: Vec<i32> = p.host_ports.iter().map(|h| h.port).filter(|&x| x != 0).collect();
        ports.sort_unstable();
        ports.dedup();
        p.sign.host_ports = ports;
        p.sign.node_affinity = (p.required_affinity.is_some() || p.preferred_affinity_set)
            .then(|| format!("{:?} {:?}", p.required_affinity, p.preferred_affinity).into());
    }

    /// Places the pod on `node` in the snapshot.
    pub fn place(mut self, node: &str) -> Arc<PodInfo> {
        self.sign();
        let MakePod { snap, pod } = self;
        let node = snap.interner.intern(node);
        let pod = Arc::new(pod);
        snap.place_pod(pod.clone(), node).expect("test pods go on known nodes");
        pod
    }
}

/// `key Exists`.
pub fn sel_exists(snap: &mut Snapshot, key: &str) -> LabelSelector {
    let key = snap.interner.intern(key);
    LabelSelector::new(&[], vec![LabelRequirement { key, op: LabelOp::Exists }])
}

/// `matchLabels`.
pub fn sel_labels(snap: &mut Snapshot, pairs: &[(&str, &str)]) -> LabelSelector {
    let mut v: Vec<(Sym, Sym)> =
        pairs.iter().map(|(k, x)| (snap.interner.intern(k), snap.interner.intern(x))).collect();
    v.sort();
    LabelSelector::new(&v, vec![])
}

/// Adds a Namespace with labels.
pub fn add_namespace(snap: &mut Snapshot, name: &str, labels: &[(&str, &str)]) {
    let n = snap.interner.intern(name);
    let mut v: Vec<(Sym, Sym)> =
        labels.iter().map(|(k, x)| (snap.interner.intern(k), snap.interner.intern(x))).collect();
    v.sort();
    snap.cluster.namespaces.insert(n, v);
}
