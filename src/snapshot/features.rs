//! Node declared features: component-helpers v0.37.2 `nodedeclaredfeatures` (`framework.go`,
//! `featureset.go`, `bitmap.go`, `features/registry.go`), the part the scheduler runs.
//!
//! A [`Framework`] is a registry of features sorted by name; a [`FeatureSet`] is a bitmap over
//! it (bit i = the i-th feature by name). A node's `status.declaredFeatures` becomes a set with
//! [`Framework::try_map`] when the node enters the snapshot (upstream's `NodeInfo.SetNode`:
//! `ndf.DefaultFramework.TryMap`, unknown names ignored), kept as one `u64` per row
//! (`NodeTable::declared_features`); a pod's requirements are [`Framework::infer_for_pod_scheduling`]
//! over the facts [`PodFeatureFacts`] compiled from its spec. Filter is then one AND per node.
//!
//! The registry the scheduler uses is [`default_framework`]: `features.AllFeatures` of v0.37.2,
//! nine features, of which three can be required by a pod at scheduling time
//! (RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport,
//! VolumeBindMountOptions: but the apiserver drops `bindMountOptions` at the default gates,
//! [`PodFeatureFacts::admitted`]); the others infer nothing for scheduling (the in-place resize
//! ones only for pod updates, which the scheduler does not ask). None has a MaxVersion.
//!
//! Upstream's `DefaultFramework` is a package variable built at Go package initialisation from
//! `features.AllFeatures`. scheduler_perf's nodedeclaredfeatures suite assigns mock features to
//! `features.AllFeatures` afterwards (its PreRunFn), which leaves `DefaultFramework` (the slice it
//! copied at init) unchanged: the scheduler in that suite runs with the real registry, so its
//! nodes' `Feature1..FeatureN` are unknown names and its pods require nothing
//! (`runner::driver` `declare_node_features`, ARCHITECTURE.md).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::api;

/// The Kubernetes version the scheduler passes to the inference (`version.Get()`): a feature
/// whose MaxVersion is below it is no longer required (GA and past the skew window).
pub const SCHEDULER_VERSION: Version = Version { major: 1, minor: 37, patch: 2 };

/// A semantic version (major.minor.patch; upstream compares pre-release parts too, which no
/// feature's MaxVersion has).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    /// Parses `1.35.0` (or `v1.35.0`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Version> {
        let mut it = s.strip_prefix('v').unwrap_or(s).split('.').map(|p| p.parse::<u32>().ok());
        let v = Version { major: it.next()??, minor: it.next()??, patch: it.next()?? };
        it.next().is_none().then_some(v)
    }
}

/// What the features' `InferForScheduling` read of a pod spec, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PodFeatureFacts(pub u8);

impl PodFeatureFacts {
    /// A container or init container has a restart rule with action `RestartAllContainers`.
    pub const RESTART_ALL_CONTAINERS: u8 = 1;
    /// `hostNetwork: true` and `hostUsers: false`.
    pub const USER_NAMESPACES_HOST_NETWORK: u8 = 2;
    /// A container, init container or ephemeral container mounts a volume with `bindMountOptions`.
    pub const BIND_MOUNT_OPTIONS: u8 = 4;
    /// `spec.resources` is set (pod-level resources; what scheduler_perf's mock features read).
    pub const POD_LEVEL_RESOURCES: u8 = 8;

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The facts of a pod as the apiserver stores it at v1.37.2's default gates: the pod create
    /// strategy's `dropDisabledFields` strips `bindMountOptions` while the VolumeBindMountOptions
    /// gate (alpha) is off, so no created pod needs that feature (the oracle's pods go through the
    /// same strategy). What the scheduler compiles.
    pub fn admitted(spec: &api::PodSpec) -> PodFeatureFacts {
        PodFeatureFacts(Self::of(spec).0 & !Self::BIND_MOUNT_OPTIONS)
    }

    /// The facts of `spec`, as the features' `InferForScheduling` read it.
    pub fn of(spec: &api::PodSpec) -> PodFeatureFacts {
        let mut f = 0;
        let restart_all =
            |c: &api::Container| c.restart_policy_rules.iter().any(|r| r.action == "RestartAllContainers");
        if spec.containers.iter().chain(&spec.init_containers).any(restart_all) {
            f |= Self::RESTART_ALL_CONTAINERS;
        }
        if spec.host_network && spec.host_users == Some(false) {
            f |= Self::USER_NAMESPACES_HOST_NETWORK;
        }
        let bind_opts = |c: &api::Container| c.volume_mounts.iter().any(|m| !m.bind_mount_options.is_empty());
        if spec.containers.iter().chain(&spec.init_containers).chain(&spec.ephemeral_containers).any(bind_opts) {
            f |= Self::BIND_MOUNT_OPTIONS;
        }
        if spec.resources.is_some() {
            f |= Self::POD_LEVEL_RESOURCES;
        }
        PodFeatureFacts(f)
    }
}

/// A feature's `InferForScheduling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Infer {
    /// Never required at scheduling (only discovered, or inferred for pod updates).
    Never,
    /// Required when the pod has this [`PodFeatureFacts`] bit.
    Fact(u8),
    /// A mock's fixed answer (upstream's unit tests).
    Always(bool),
}

/// One registered feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feature {
    pub name: Cow<'static, str>,
    pub infer: Infer,
    /// `MaxVersion()`: past it the feature is no longer required. `None`: no bound.
    pub max_version: Option<Version>,
}

impl Feature {
    pub const fn real(name: &'static str, infer: Infer) -> Feature {
        Feature { name: Cow::Borrowed(name), infer, max_version: None }
    }

    fn infer_for_scheduling(&self, pod: PodFeatureFacts) -> bool {
        match self.infer {
            Infer::Never => false,
            Infer::Fact(bit) => pod.has(bit),
            Infer::Always(b) => b,
        }
    }
}

/// `features.AllFeatures` of component-helpers v0.37.2, in its order, with each feature's
/// `InferForScheduling` (see the module doc).
pub fn all_features() -> Vec<Feature> {
    use PodFeatureFacts as F;
    vec![
        Feature::real("RestartAllContainersOnContainerExits", Infer::Fact(F::RESTART_ALL_CONTAINERS)),
        Feature::real("InPlacePodLevelResourcesVerticalScaling", Infer::Never),
        Feature::real("ExtendWebSocketsToKubelet", Infer::Never),
        Feature::real("InPlacePodVerticalScalingInitContainers", Infer::Never),
        Feature::real("InPlacePodVerticalScalingMemoryBackedVolumes", Infer::Never),
        Feature::real("UserNamespacesHostNetworkSupport", Infer::Fact(F::USER_NAMESPACES_HOST_NETWORK)),
        Feature::real("DRANodeAllocatableResources", Infer::Never),
        Feature::real("VolumeBindMountOptions", Infer::Fact(F::BIND_MOUNT_OPTIONS)),
        Feature::real("DRAOptionalNodeOperations", Infer::Never),
    ]
}

/// A set of features of one [`Framework`]: bit i is its i-th feature by name. Registries here
/// have at most 64 features ([`Framework::new`] checks), so a set is one word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FeatureSet(pub u64);

impl FeatureSet {
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `IsSubset`: every feature of `self` is in `other`.
    pub fn is_subset(self, other: FeatureSet) -> bool {
        self.0 & !other.0 == 0
    }
}

/// `ndf.Framework`: the registry, sorted by name.
#[derive(Clone, Debug)]
pub struct Framework {
    features: Vec<Feature>,
    /// Some feature is required whatever the pod (a mock answering true): a pod without facts
    /// may still require something.
    infers_without_facts: bool,
}

impl Framework {
    /// `ndf.New`: sorts the features by name. Panics past 64 features (a broken invariant: the
    /// registries here are the real one and tests' mocks).
    pub fn new(mut features: Vec<Feature>) -> Framework {
        assert!(features.len() <= 64, "a feature registry of more than 64 features");
        features.sort_by(|a, b| a.name.cmp(&b.name));
        let infers_without_facts = features.iter().any(|f| f.infer == Infer::Always(true));
        Framework { features, infers_without_facts }
    }

    /// The number of registered features (a set's `String()` has this many characters).
    pub fn len(&self) -> usize {
        self.features.len()
    }

    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.features.iter().map(|f| f.name.as_ref())
    }

    /// `TryMap`: the set of `sorted` (a node's declared features), unknown names ignored. The
    /// merge walk assumes `sorted` is sorted, as upstream's does (a name out of order may be
    /// missed, as there).
    pub fn try_map<S: AsRef<str>>(&self, sorted: &[S]) -> FeatureSet {
        let (mut i, mut j, mut bits) = (0, 0, 0u64);
        while i < sorted.len() && j < self.features.len() {
            match sorted[i].as_ref().cmp(self.features[j].name.as_ref()) {
                Ordering::Equal => {
                    bits |= 1 << j;
                    i += 1;
                    j += 1;
                }
                Ordering::Less => i += 1,
                Ordering::Greater => j += 1,
            }
        }
        FeatureSet(bits)
    }

    /// `InferForPodScheduling` at `version`: the features the pod requires.
    pub fn infer_for_pod_scheduling(&self, pod: PodFeatureFacts, version: Version) -> FeatureSet {
        if pod.0 == 0 && !self.infers_without_facts {
            // Every feature's answer is false for a pod without facts (most pods).
            return FeatureSet(0);
        }
        let mut bits = 0u64;
        for (i, f) in self.features.iter().enumerate() {
            if f.max_version.is_some_and(|max| version > max) {
                continue;
            }
            if f.infer_for_scheduling(pod) {
                bits |= 1 << i;
            }
        }
        FeatureSet(bits)
    }

    /// `FeatureSet.String()`: one character per registered feature, `1` for a member.
    pub fn set_string(&self, s: FeatureSet) -> String {
        (0..self.features.len()).map(|i| if (s.0 >> i) & 1 == 1 { '1' } else { '0' }).collect()
    }

    /// `Unmap`: the names of the members, sorted.
    pub fn unmap(&self, s: FeatureSet) -> Vec<&str> {
        (0..self.features.len()).filter(|&i| (s.0 >> i) & 1 == 1).map(|i| self.features[i].name.as_ref()).collect()
    }
}

/// `ndf.DefaultFramework`: the real registry ([`all_features`]), built once.
pub fn default_framework() -> &'static Framework {
    static F: std::sync::OnceLock<Framework> = std::sync::OnceLock::new();
    F.get_or_init(|| Framework::new(all_features()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mock(name: &'static str, infer: bool, max: Option<&str>) -> Feature {
        Feature { name: Cow::Borrowed(name), infer: Infer::Always(infer), max_version: max.and_then(Version::parse) }
    }

    #[test]
    fn the_registry_sorts_by_name_and_maps_sorted_lists() {
        let f = default_framework();
        let names: Vec<&str> = f.names().collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(f.len(), 9);
        // (node's declared features, the members mapped): unknown names are ignored; the walk
        // assumes a sorted list (upstream's TryMap), so a name out of order after a later one is missed.
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &[]),
            (&["Feature1", "Feature10", "Feature2"], &[]),
            (&["VolumeBindMountOptions"], &["VolumeBindMountOptions"]),
            (
                &["A", "RestartAllContainersOnContainerExits", "Unknown", "VolumeBindMountOptions", "Zzz"],
                &["RestartAllContainersOnContainerExits", "VolumeBindMountOptions"],
            ),
            (&["VolumeBindMountOptions", "RestartAllContainersOnContainerExits"], &["VolumeBindMountOptions"]),
        ];
        for (declared, want) in cases {
            assert_eq!(f.unmap(f.try_map(declared)), *want, "{declared:?}");
        }
    }

    #[test]
    fn inference_table() {
        // TestPreFilter's framework cases (nodedeclaredfeatures_test.go): mocks with fixed
        // answers and MaxVersions, at a component version. (features, version, required names).
        type Case = (&'static str, Vec<Feature>, &'static str, &'static [&'static str]);
        let cases: Vec<Case> = vec![
            (
                "Pod with feature requirements",
                vec![mock("TestFeature1", true, None), mock("TestFeature2", false, None)],
                "1.35.0",
                &["TestFeature1"],
            ),
            (
                "Pod with multiple feature requirements",
                vec![mock("TestFeature1", true, Some("1.38.0")), mock("TestFeature2", true, Some("1.38.0"))],
                "1.35.0",
                &["TestFeature1", "TestFeature2"],
            ),
            (
                "Pod with no requirements",
                vec![mock("TestFeature1", false, None), mock("TestFeature2", false, None)],
                "1.35.0",
                &[],
            ),
            (
                "Feature not required, version > MaxVersion",
                vec![mock("TestFeature1", true, Some("1.33.0")), mock("TestFeature2", false, None)],
                "1.34.0",
                &[],
            ),
            ("MaxVersion equal to the version still applies", vec![mock("F", true, Some("1.34.0"))], "1.34.0", &["F"]),
        ];
        for (name, features, version, want) in cases {
            let f = Framework::new(features);
            let got = f.infer_for_pod_scheduling(PodFeatureFacts::default(), Version::parse(version).unwrap());
            assert_eq!(f.unmap(got), want, "{name}");
        }
    }

    #[test]
    fn real_features_infer_from_the_pod_spec() {
        let c = |yaml: &str| -> api::PodSpec { serde_norway::from_str(yaml).unwrap() };
        let f = default_framework();
        let infer = |spec: &api::PodSpec| {
            f.unmap(f.infer_for_pod_scheduling(PodFeatureFacts::of(spec), SCHEDULER_VERSION))
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        // (pod spec, required features), after each feature's _test.go.
        let cases: &[(&str, &[&str])] = &[
            ("containers: [{name: a}]", &[]),
            ("resources: {requests: {cpu: 100m}}\ncontainers: [{name: a}]", &[]),
            ("containers: [{name: a, restartPolicyRules: [{action: Restart}]}]", &[]),
            (
                "containers: [{name: a, restartPolicyRules: [{action: RestartAllContainers}]}]",
                &["RestartAllContainersOnContainerExits"],
            ),
            (
                "initContainers: [{name: i, restartPolicyRules: [{action: RestartAllContainers}]}]\ncontainers: [{name: a}]",
                &["RestartAllContainersOnContainerExits"],
            ),
            ("hostNetwork: true\ncontainers: [{name: a}]", &[]),
            ("hostNetwork: true\nhostUsers: true\ncontainers: [{name: a}]", &[]),
            ("hostUsers: false\ncontainers: [{name: a}]", &[]),
            ("hostNetwork: true\nhostUsers: false\ncontainers: [{name: a}]", &["UserNamespacesHostNetworkSupport"]),
            ("containers: [{name: a, volumeMounts: [{name: v, mountPath: /v}]}]", &[]),
            (
                "containers: [{name: a, volumeMounts: [{name: v, mountPath: /v, bindMountOptions: [noexec]}]}]",
                &["VolumeBindMountOptions"],
            ),
            (
                "containers: [{name: a}]\nephemeralContainers: [{name: e, volumeMounts: [{name: v, bindMountOptions: [nodev]}]}]",
                &["VolumeBindMountOptions"],
            ),
            (
                "hostNetwork: true\nhostUsers: false\ncontainers: [{name: a, restartPolicyRules: [{action: RestartAllContainers}], volumeMounts: [{name: v, bindMountOptions: [nosuid]}]}]",
                &["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport", "VolumeBindMountOptions"],
            ),
        ];
        for (yaml, want) in cases {
            assert_eq!(infer(&c(yaml)), *want, "{yaml}");
            // As stored by the apiserver at the default gates: never VolumeBindMountOptions.
            let admitted = f.infer_for_pod_scheduling(PodFeatureFacts::admitted(&c(yaml)), SCHEDULER_VERSION);
            let mut stored: Vec<&str> = want.iter().copied().filter(|w| *w != "VolumeBindMountOptions").collect();
            stored.sort();
            assert_eq!(f.unmap(admitted), stored, "{yaml}");
        }
    }

    #[test]
    fn set_strings_and_subsets() {
        let f = Framework::new(vec![
            mock("FeatureA", false, None),
            mock("FeatureB", false, None),
            mock("FeatureC", false, None),
        ]);
        let a = f.try_map(&["FeatureA"]);
        let ab = f.try_map(&["FeatureA", "FeatureB"]);
        let abc = f.try_map(&["FeatureA", "FeatureB", "FeatureC"]);
        assert_eq!(f.set_string(a), "100");
        assert_eq!(f.set_string(FeatureSet::default()), "000");
        assert!(a.is_subset(ab) && ab.is_subset(abc) && !ab.is_subset(a));
        assert!(FeatureSet::default().is_subset(FeatureSet::default()));
        assert!(f.try_map(&["FeatureA", "FeatureC"]).is_subset(abc));
    }
}
