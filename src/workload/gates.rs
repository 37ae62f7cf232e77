//! Feature gates as workload files set them (`featureGates:` on a test case or a workload), checked
//! against Kubernetes v1.37.2's gates (`pkg/features/kube_features.go`, the entry that applies at
//! 1.37: its default and whether it is locked).
//!
//! What a gate does in a run ([`status`]):
//! - at its v1.37.2 default: the engine's behaviour (it models the release's defaults);
//! - a scheduler gate the engine runs either way (SchedulerPopFromBackoffQ, SchedulerAsyncPreemption,
//!   OpportunisticBatching, GenericWorkload): honoured, per workload;
//! - not read by kube-scheduler, or only changing how it dispatches API calls: not applicable;
//! - enabling a subsystem schedperf does not have (workload-aware scheduling, DRA's alpha
//!   features, volume capacity scoring): the workload is skipped with the reason;
//! - any other scheduler gate away from its default: not honoured (the engine runs the default),
//!   and the run says so;
//! - a locked gate set away from its default: skipped, as upstream's harness cannot set it either;
//! - a name that is not a v1.37.2 gate: bad input (exit 2).

/// One gate of the pinned release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub name: &'static str,
    pub default: bool,
    /// `LockToDefault`: setting another value fails.
    pub locked: bool,
    /// Read somewhere under `pkg/scheduler` (`features.<Name>`).
    pub read_by_scheduler: bool,
}

/// The pinned release these gates come from.
pub const RELEASE: &str = "v1.37.2";

/// Scheduler gates that only change how kube-scheduler talks to the apiserver.
const API_PATH_ONLY: &[(&str, &str)] = &[(
    "SchedulerAsyncAPICalls",
    "only changes how kube-scheduler dispatches its API calls (status updates, binding); schedperf has no apiserver",
)];

/// Scheduler gates the engine runs at either value, with what the non-default value does.
pub const HONOURED: &[(&str, &str)] = &[
    (
        "SchedulerPopFromBackoffQ",
        "the queue pops only from activeQ, and backoffQ keeps exact expiry times, earliest first \
         (on: it pops backoffQ's head when activeQ is empty, with 1-second windows ordered by QueueSort)",
    ),
    (
        "SchedulerAsyncPreemption",
        "PostFilter deletes the victims before the cycle ends (on: they are deleted after it, and the \
         preemptor waits in unschedulablePods until the last one is gone)",
    ),
    (
        "GenericWorkload",
        "pods naming a PodGroup (spec.schedulingGroup) are queued as one entity per group and \
         scheduled in pod-group cycles, gang groups all-or-nothing (GangScheduling); off: one by one, \
         the group ignored",
    ),
    (
        "TopologyAwareWorkloadScheduling",
        "a pod-group cycle tries the whole cluster once (on: TopologyPlacementGenerator splits the nodes \
         by the group's schedulingConstraints.topology key, the group is tried in each domain, and \
         NodeResourcesFit and PodGroupPodsCount score the domains where it fits)",
    ),
    (
        "DRAWorkloadResourceClaims",
        "every claim is the pod's own (on, with GenericWorkload: a pod's claim entry matching one of its \
         PodGroup's spec.resourceClaims is the group's claim, made once per group from a template, \
         reserved for the group; plugins::dynamicresources::pod_claims)",
    ),
    (
        "DRADeviceCompatibilityGroups",
        "devices that consume counters are allocated without comparing their compatibility groups, and \
         slices declaring groups are ignored (on: devices drawing from one counter set are co-allocated \
         only while their groups intersect, as upstream's experimental allocator does)",
    ),
    (
        "DRAListTypeAttributes",
        "device attributes hold one value, and a ResourceSlice with a list attribute is refused at \
         creation, as the API server drops the list fields and then finds no value (on: `ints`, \
         `bools`, `strings`, `versions` attributes; matchAttribute and distinctAttribute compare \
         sets, as upstream's experimental allocator does)",
    ),
    (
        "OpportunisticBatching",
        "every pod runs a full cycle (on: a pod with the same signature as the previous one is first \
         tried on the next node of the previous cycle's ranking)",
    ),
];

/// Scheduler gates whose non-default value turns on a subsystem schedperf does not implement.
const NEEDS_UNIMPLEMENTED: &[(&str, &str)] = &[
    ("CompositePodGroup", "workload-aware scheduling (composite pod groups)"),
    ("PodGroupPreemptionPolicy", "pod group preemption policies"),
    ("StorageCapacityScoring", "volume capacity scoring"),
    ("VolumeAttributesClass", "volume attributes classes"),
    ("VolumeLimitScaling", "volume limit scaling"),
];

/// What a gate value means for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateStatus {
    /// The release's default, which is what the engine runs.
    Default,
    /// Away from its default, and the engine runs it so (see [`HONOURED`]).
    Honoured(String),
    NotApplicable(String),
    /// A scheduler gate away from its default: the engine still runs the default.
    NotHonoured(String),
    /// The workload cannot run: the reason names what is missing.
    Skip(String),
}

impl GateStatus {
    /// A short word for tables: `default`, `honoured`, `not applicable`, `not honoured`, `skip`.
    pub fn word(&self) -> &'static str {
        match self {
            GateStatus::Default => "default",
            GateStatus::Honoured(_) => "honoured",
            GateStatus::NotApplicable(_) => "not applicable",
            GateStatus::NotHonoured(_) => "not honoured",
            GateStatus::Skip(_) => "skip",
        }
    }
}

/// The gate called `name` at the pinned release.
pub fn lookup(name: &str) -> Option<&'static Gate> {
    GATES.iter().find(|g| g.name == name)
}

/// What setting `name` to `value` means; `Err` for a name that is not a gate of the release.
pub fn status(name: &str, value: bool) -> Result<GateStatus, String> {
    let Some(g) = lookup(name) else {
        return Err(format!("unknown feature gate {name:?}: not a feature gate of Kubernetes {RELEASE}"));
    };
    if value == g.default {
        return Ok(GateStatus::Default);
    }
    if g.locked {
        return Ok(GateStatus::Skip(format!(
            "feature gate {name}={value}: the gate is locked to {} at {RELEASE} (upstream's harness cannot set it either)",
            g.default
        )));
    }
    if !g.read_by_scheduler {
        return Ok(GateStatus::NotApplicable(format!("{name}={value}: not read by kube-scheduler")));
    }
    if let Some((_, what)) = HONOURED.iter().find(|(n, _)| *n == name) {
        return Ok(GateStatus::Honoured(format!("{name}={value}: the engine runs it: {what}")));
    }
    if let Some((_, why)) = API_PATH_ONLY.iter().find(|(n, _)| *n == name) {
        return Ok(GateStatus::NotApplicable(format!("{name}={value}: {why}")));
    }
    if let Some((_, what)) = NEEDS_UNIMPLEMENTED.iter().find(|(n, _)| *n == name) {
        if value {
            return Ok(GateStatus::Skip(format!(
                "feature gate {name}=true needs {what}, which schedperf does not implement"
            )));
        }
    }
    if name.starts_with("DRA") && value {
        return Ok(GateStatus::Skip(format!(
            "feature gate {name}=true needs dynamic resource allocation, which schedperf does not implement"
        )));
    }
    Ok(GateStatus::NotHonoured(format!("{name}={value}: the engine runs the {RELEASE} default ({name}={})", g.default)))
}

/// Every gate of the pinned release with its default at 1.37 (generated from
/// `pkg/features/kube_features.go` at v1.37.2: the last versioned entry at or before 1.37).
pub const GATES: &[Gate] = &[
    Gate { name: "APIResponseCompression", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "APIServerIdentity", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "APIServerWebhookAuthenticationToken", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "APIServingWithRoutine", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "AggregatedDiscoveryRemoveBetaType", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "AllowDNSOnlyNodeCSR", default: false, locked: false, read_by_scheduler: false },
    Gate {
        name: "AllowInsecureKubeletCertificateSigningRequests",
        default: false,
        locked: false,
        read_by_scheduler: false,
    },
    Gate {
        name: "AllowOverwriteTerminationGracePeriodSeconds",
        default: false,
        locked: true,
        read_by_scheduler: false,
    },
    Gate { name: "AllowParsingUserUIDFromCertAuth", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "AllowServiceExternalIPs", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "AllowUnsafeMalformedObjectDeletion", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "AtomicWriteVolumeUserFields", default: false, locked: false, read_by_scheduler: false },
    Gate {
        name: "AuthorizePodWebsocketUpgradeCreatePermission",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "CBORServingAndStorage", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "CPUCFSQuotaPeriod", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "CPUManagerPolicyAlphaOptions", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "CPUManagerPolicyBetaOptions", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "CPUManagerPolicyOptions", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "CRDObservedGenerationTracking", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "CRDValidationRatcheting", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "CRIListStreaming", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "CSIServiceAccountTokenSecrets", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "CSIVolumeHealth", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "ChangeContainerStatusOnKubeletRestart", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "ClearingNominatedNodeNameAfterBinding", default: true, locked: false, read_by_scheduler: false },
    Gate {
        name: "CloudControllerManagerWatchBasedRoutesReconciliation",
        default: false,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "CloudControllerManagerWebhook", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "ClusterTrustBundle", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ClusterTrustBundleProjection", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ComponentFlagz", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ComponentStatusz", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "CompositePodGroup", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "ConcurrentWatchObjectDecode", default: true, locked: false, read_by_scheduler: false },
    Gate {
        name: "ConsistentListFromCacheSkipTimeoutFallback",
        default: false,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "ConstrainedImpersonation", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ContainerCheckpoint", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ContainerRestartRules", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ContainerStopSignals", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "CoordinatedLeaderElection", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "CrossNamespaceVolumeDataSource", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "CustomResourceFieldSelectors", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "DRAAdminAccess", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "DRAConsumableCapacity", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRADerivedAttributes", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "DRADeviceBindingConditions", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRADeviceCompatibilityGroups", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "DRADeviceTaintRules", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRADeviceTaints", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRAExtendedResource", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "DRAFractionalCapacityRange", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRAListTypeAttributes", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "DRANodeAllocatableResources", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "DRAOptionalNodeOperations", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "DRAPartitionableDevices", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRAPartitionableDevicesType", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "DRAPrioritizedList", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "DRAResourceClaimDeviceStatus", default: true, locked: true, read_by_scheduler: true },
    Gate {
        name: "DRAResourceClaimGranularStatusAuthorization",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "DRAResourcePoolStatus", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "DRASchedulerFilterTimeout", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "DRAWorkloadResourceClaims", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "DeclarativeValidation", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "DeclarativeValidationBeta", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "DeclarativeValidationTakeover", default: false, locked: true, read_by_scheduler: false },
    Gate { name: "DefaultPodSysctls", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "DeploymentReplicaSetTerminatingReplicas", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "DetectCacheInconsistency", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "DisableAllocatorDualWrite", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "DisableCPUQuotaWithExclusiveCPUs", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "DisableNodeKubeProxyVersion", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "DynamicResourceAllocation", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "EmptyDirVolumeMode", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "EnvFiles", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "EtcdRangeStream", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "EventedPLEG", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "EvictionRequestAPI", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "ExcludeAdmissionWebhookVirtualResources", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ExecProbeTimeout", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ExtendWebSocketsToKubelet", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ExternalServiceAccountTokenSigner", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "GRPCContainerProbeTLS", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "GenericWorkload", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "GitRepoVolumeDriver", default: false, locked: true, read_by_scheduler: false },
    Gate { name: "GracefulNodeShutdown", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "GracefulNodeShutdownBasedOnPodPriority", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "H2CContainerProbe", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "HPAConfigurableTolerance", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "HPAGeneration", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "HPAOptimizedSelectorStore", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "HPAScaleToZero", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "HostnameOverride", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "HugepageAwareEviction", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ImageMaximumGCAge", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ImageVolume", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ImageVolumeWithDigest", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "InPlacePodLevelResourcesVerticalScaling", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "InPlacePodVerticalScaling", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "InPlacePodVerticalScalingExclusiveCPUs", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "InPlacePodVerticalScalingExclusiveMemory", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "InPlacePodVerticalScalingInitContainers", default: true, locked: true, read_by_scheduler: false },
    Gate {
        name: "InPlacePodVerticalScalingMemoryBackedVolumes",
        default: false,
        locked: false,
        read_by_scheduler: false,
    },
    Gate {
        name: "InPlacePodVerticalScalingSchedulerPreemption",
        default: false,
        locked: false,
        read_by_scheduler: true,
    },
    Gate { name: "InterPodAffinityHostnameFastPath", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "JobManagedBy", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "KMSv1", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "KubeProxyIPVS", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "KubeProxyNFTablesLocalhostNodePorts", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletAllocatedPodsEndpoint", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletCgroupDriverFromCRI", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "KubeletCrashLoopBackOffMax", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletEnsureSecretPulledImages", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletFineGrainedAuthz", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "KubeletInUserNamespace", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletPSI", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "KubeletPodResourcesDynamicResources", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "KubeletPodResourcesGet", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "KubeletPodResourcesListUseActivePods", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletRegistrationGetOnExistsOnly", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "KubeletSeparateDiskGC", default: true, locked: false, read_by_scheduler: false },
    Gate {
        name: "KubeletServiceAccountTokenForCredentialProviders",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "KubeletTracing", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ListFromCacheSnapshot", default: true, locked: false, read_by_scheduler: false },
    Gate {
        name: "LocalStorageCapacityIsolationFSQuotaMonitoring",
        default: false,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "ManifestBasedAdmissionControlConfig", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "MatchLabelKeysInPodAffinity", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "MatchLabelKeysInPodTopologySpread", default: true, locked: false, read_by_scheduler: true },
    Gate {
        name: "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "MaxUnavailableStatefulSet", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "MemoryQoS", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "MultiCIDRServiceAllocator", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "MutableCSINodeAllocatableCount", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "MutablePVNodeAffinity", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "MutablePodResourcesForSuspendedJobs", default: true, locked: false, read_by_scheduler: false },
    Gate {
        name: "MutableSchedulingDirectivesForSuspendedJobs",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "MutatingAdmissionPolicy", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "NFTablesNetlink", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "NFTablesProxyMode", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "NodeControllerLeaseCircuitBreaker", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "NodeDeclaredFeatures", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "NodeInclusionPolicyInPodTopologySpread", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "NodeLifecycleConditions", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "NodeLogQuery", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "NodeSwap", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "NominatedNodeNameForExpectation", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "OpenAPIEnums", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "OpportunisticBatching", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "PLEGOnDemandRelist", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "PersistentVolumeClaimUnusedSinceTime", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PodAndContainerStatsFromCRI", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "PodCertificateRequest", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PodDeletionCost", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PodGroupPreemptionPolicy", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "PodLevelResourceManagers", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "PodLevelResources", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "PodLevelResourcesFixDefaulting", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PodLevelResourcesFixKubeletQOSClass", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PodLogsQuerySplitStreams", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "PodObservedGenerationTracking", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "PodReadyToStartContainersCondition", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "PodSchedulingReadiness", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "PodTopologyLabelsAdmission", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PodsAPI", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PortForwardWebsockets", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "PreferSameTrafficDistribution", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ProcMountType", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "QOSReserved", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "RecoverVolumeExpansionFailure", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "RecursiveReadOnlyMounts", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ReduceDefaultCrashLoopBackOffDecay", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "RelaxedEnvironmentVariableValidation", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "RelaxedServiceNameValidation", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ReloadKubeletClientCAFile", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ReloadKubeletServerCertificateFile", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "RemoteRequestHeaderUID", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ResourceHealthStatus", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ResourceHealthStatusMessage", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "RestartAllContainersOnContainerExits", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "RotateKubeletServerCertificate", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "RuntimeClassInImageCriAPI", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "SELinuxChangePolicy", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "SELinuxMount", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "SELinuxMountReadWriteOncePod", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "SchedulerAsyncAPICalls", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "SchedulerAsyncPreemption", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "SchedulerPopFromBackoffQ", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "SchedulerPreQueueingHints", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "SeparateCacheWatchRPC", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "SeparateTaintEvictionController", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ServiceAccountNodeAudienceRestriction", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ServiceAccountTokenJTI", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ServiceAccountTokenNodeBinding", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ServiceAccountTokenNodeBindingValidation", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ServiceAccountTokenPodNodeInfo", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "ServiceCIDRStatusFieldWiping", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "ShardedListAndWatch", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "SizeBasedListCostEstimate", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StaleControllerConsistencyDaemonSet", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StaleControllerConsistencyHPA", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StaleControllerConsistencyJob", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StaleControllerConsistencyReplicaSet", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StaleControllerConsistencyStatefulSet", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StatefulSetRecreateStrategy", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "StatefulSetSemanticRevisionComparison", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StorageCapacityScoring", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "StorageNamespaceIndex", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StorageVersionAPI", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "StorageVersionHash", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StorageVersionMigrator", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "StrictIPCIDRValidation", default: true, locked: false, read_by_scheduler: false },
    Gate {
        name: "StructuredAuthenticationConfigurationEgressSelector",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate {
        name: "StructuredAuthenticationConfigurationJWKSMetrics",
        default: true,
        locked: false,
        read_by_scheduler: false,
    },
    Gate { name: "SupplementalGroupsPolicy", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "SystemdWatchdog", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "TaintTolerationComparisonOperators", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "TokenRequestServiceAccountUIDValidation", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "TopologyAwareWorkloadScheduling", default: false, locked: false, read_by_scheduler: true },
    Gate { name: "TopologyManagerPolicyAlphaOptions", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "TopologyManagerPolicyBetaOptions", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "TopologyManagerPolicyOptions", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "TranslateStreamCloseWebsocketRequests", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "UnauthenticatedHTTP2DOSMitigation", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "UnknownVersionInteroperabilityProxy", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "UserNamespacesHostNetworkSupport", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "UserNamespacesSupport", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "VolumeAttributesClass", default: true, locked: true, read_by_scheduler: true },
    Gate { name: "VolumeBindMountOptions", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "VolumeLimitScaling", default: true, locked: false, read_by_scheduler: true },
    Gate { name: "WatchCacheInitializationPostStartHook", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "WatchList", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "WatchListCompression", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "WebhookRoundTripLoadBalancing", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "WinDSR", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "WinOverlay", default: true, locked: true, read_by_scheduler: false },
    Gate { name: "WindowsCPUAndMemoryAffinity", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "WindowsGracefulNodeShutdown", default: true, locked: false, read_by_scheduler: false },
    Gate { name: "WindowsHostNetwork", default: false, locked: false, read_by_scheduler: false },
    Gate { name: "WorkloadWithJob", default: false, locked: false, read_by_scheduler: false },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_at_the_pinned_release() {
        let cases: &[(&str, bool, &str)] = &[
            ("SchedulerAsyncPreemption", true, "default"),
            ("SchedulerAsyncPreemption", false, "honoured"),
            ("SchedulerPopFromBackoffQ", false, "honoured"),
            ("SchedulerPopFromBackoffQ", true, "default"),
            ("SchedulerPreQueueingHints", true, "not honoured"),
            ("OpportunisticBatching", false, "honoured"),
            ("OpportunisticBatching", true, "default"),
            ("SchedulerAsyncAPICalls", true, "not applicable"),
            ("SchedulerAsyncAPICalls", false, "default"),
            ("GenericWorkload", true, "honoured"),
            ("GenericWorkload", false, "default"),
            ("CompositePodGroup", true, "skip"),
            ("TopologyAwareWorkloadScheduling", true, "honoured"),
            ("NodeDeclaredFeatures", false, "skip"),
            ("NodeDeclaredFeatures", true, "default"),
            ("DynamicResourceAllocation", true, "default"),
            ("APIResponseCompression", false, "not applicable"),
        ];
        for (name, value, want) in cases {
            assert_eq!(status(name, *value).unwrap().word(), *want, "{name}={value}");
        }
        assert!(status("SchedulerQueueingHint", true).unwrap_err().contains("unknown feature gate"));
        for (name, _) in HONOURED {
            let g = lookup(name).expect("an honoured gate is a gate of the release");
            assert!(g.read_by_scheduler && !g.locked, "{name}");
        }
        let names: std::collections::BTreeSet<&str> = GATES.iter().map(|g| g.name).collect();
        assert_eq!(names.len(), GATES.len(), "gate names are unique");
    }
}
