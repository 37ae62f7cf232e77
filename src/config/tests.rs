use super::*;

const HEADER: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn parse(body: &str) -> Result<SchedulerConfig, InputError> {
    SchedulerConfig::parse(&format!("{HEADER}{body}"), "test.yaml")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn weighted(list: &[(&str, i32)]) -> Vec<(String, i32)> {
    list.iter().map(|&(n, w)| (n.to_string(), w)).collect()
}

/// v1.37.2's `ExpandedPluginsV1` (`apis/config/testing/defaults/defaults.go`), without the
/// PodGroupPostFilter and PlacementScore points, which this engine does not have.
fn default_plugins() -> ProfilePlugins {
    let filters = [
        "NodeName",
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ];
    ProfilePlugins {
        pre_enqueue: names(&["SchedulingGates", "DynamicResources", "DefaultPreemption"]),
        queue_sort: names(&["PrioritySort"]),
        pre_filter: names(&filters),
        filter: names(&filters),
        post_filter: names(&["DynamicResources", "DefaultPreemption"]),
        pre_score: names(&[
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeBinding",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ]),
        score: weighted(&[
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
        reserve: names(&["VolumeBinding", "DynamicResources"]),
        permit: vec![],
        pre_bind: names(&["VolumeBinding", "DynamicResources"]),
        bind: names(&["DefaultBinder"]),
        post_bind: vec![],
    }
}

#[test]
fn defaults_have_one_default_profile() {
    let c = SchedulerConfig::defaults();
    assert_eq!(c.source, "<defaults>");
    assert_eq!(c.percentage_of_nodes_to_score, None);
    assert_eq!((c.parallelism, c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds), (16, 1, 10));
    assert_eq!(c.profiles.len(), 1);
    let p = c.profile("default-scheduler").expect("default profile");
    assert_eq!(p.percentage_of_nodes_to_score, None);
    assert_eq!(p.plugins, default_plugins());
    assert_eq!(p.args, PluginArgs::default());
    assert!(c.profile("other").is_none());
}

#[test]
fn default_args() {
    let a = PluginArgs::default();
    let cpu_mem =
        vec![ResourceSpec { name: "cpu".into(), weight: 1 }, ResourceSpec { name: "memory".into(), weight: 1 }];
    assert_eq!(a.node_resources_fit.scoring_strategy.kind, ScoringStrategyType::LeastAllocated);
    assert_eq!(a.node_resources_fit.scoring_strategy.resources, cpu_mem);
    assert!(a.node_resources_fit.scoring_strategy.shape.is_empty());
    assert_eq!(a.balanced_allocation.resources, cpu_mem);
    assert_eq!(a.pod_topology_spread.defaulting_type, DefaultingType::System);
    assert!(a.pod_topology_spread.default_constraints.is_empty());
    assert_eq!(a.inter_pod_affinity.hard_pod_affinity_weight, 1);
    assert!(!a.inter_pod_affinity.ignore_preferred_terms_of_existing_pods);
    assert_eq!(a.default_preemption.min_candidate_nodes_percentage, 10);
    assert_eq!(a.default_preemption.min_candidate_nodes_absolute, 100);
    assert_eq!(a.node_affinity.added_affinity, None);
    let shape = &a.volume_binding.shape;
    assert_eq!((shape[0].utilization, shape[0].score, shape[1].utilization, shape[1].score), (0, 10, 100, 0));
}

/// Each case: a profile's YAML and the expected lists at the points it changes (the other points
/// keep the defaults).
#[test]
fn plugin_expansion_cases() {
    type Change = (ExtensionPoint, &'static [&'static str]);
    let check = |profile: &str, changes: &[Change], score: Option<&[(&str, i32)]>| {
        let c =
            parse(&format!("profiles:\n- schedulerName: s\n  plugins:\n{profile}")).unwrap_or_else(|e| panic!("{e}"));
        let got = &c.profiles[0].plugins;
        let want = default_plugins();
        for point in ExtensionPoint::ALL {
            let expected: Vec<&str> = match changes.iter().find(|(p, _)| *p == point) {
                Some((_, list)) => list.to_vec(),
                None if point == ExtensionPoint::Score && score.is_some() => {
                    score.unwrap().iter().map(|(n, _)| *n).collect()
                }
                None => want.at(point),
            };
            assert_eq!(got.at(point), expected, "{point} for\n{profile}");
        }
        if let Some(score) = score {
            assert_eq!(got.score, weighted(score), "score weights for\n{profile}");
        } else {
            assert_eq!(got.score, want.score);
        }
    };

    // Conformance-style: only the named plugins, plus NodeAffinity at Filter only.
    check(
        "    multiPoint:\n      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeResourcesFit}]\n      disabled: [{name: '*'}]\n    filter:\n      enabled: [{name: NodeAffinity}]\n",
        &[
            (ExtensionPoint::PreEnqueue, &[]),
            (ExtensionPoint::PreFilter, &["NodeResourcesFit"]),
            (ExtensionPoint::Filter, &["NodeResourcesFit", "NodeAffinity"]),
            (ExtensionPoint::PostFilter, &[]),
            (ExtensionPoint::PreScore, &["NodeResourcesFit"]),
            (ExtensionPoint::Reserve, &[]),
            (ExtensionPoint::PreBind, &[]),
        ],
        Some(&[("NodeResourcesFit", 1)]),
    );

    // A weight set at score.enabled wins; the overridden plugin moves to the front (part 1).
    check(
        "    score:\n      enabled: [{name: NodeAffinity, weight: 5}]\n",
        &[],
        Some(&[
            ("NodeAffinity", 5),
            ("TaintToleration", 3),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
    );

    // Listing a plugin at score.enabled without a weight gives it weight 1 (upstream: the Score
    // entry is seen first and an absent weight means 1), even though multiPoint says 3.
    check(
        "    score:\n      enabled: [{name: ImageLocality, weight: 2}, {name: TaintToleration}]\n",
        &[],
        Some(&[
            ("ImageLocality", 2),
            ("TaintToleration", 1),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
        ]),
    );

    // Re-enabling a default in multiPoint without a weight replaces it in place with weight 1.
    check(
        "    multiPoint:\n      enabled: [{name: TaintToleration}, {name: ImageLocality, weight: 4}]\n",
        &[],
        Some(&[
            ("TaintToleration", 1),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 4),
        ]),
    );

    // Disabled at one point only: Score loses ImageLocality, Filter loses NodePorts (PreFilter keeps it).
    check(
        "    score:\n      disabled: [{name: ImageLocality}]\n    filter:\n      disabled: [{name: NodePorts}]\n",
        &[(
            ExtensionPoint::Filter,
            &[
                "NodeName",
                "NodeUnschedulable",
                "TaintToleration",
                "NodeAffinity",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "NodeVolumeLimits",
                "VolumeBinding",
                "VolumeZone",
                "PodTopologySpread",
                "InterPodAffinity",
                "DynamicResources",
                "NodeDeclaredFeatures",
            ],
        )],
        Some(&[
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
        ]),
    );

    // '*' at one point skips the multiPoint expansion there; the point's own plugins remain.
    check(
        "    preScore:\n      disabled: [{name: '*'}]\n    score:\n      enabled: [{name: ImageLocality, weight: 2}]\n      disabled: [{name: '*'}]\n",
        &[(ExtensionPoint::PreScore, &[])],
        Some(&[("ImageLocality", 2)]),
    );

    // Disabling a plugin in multiPoint removes it everywhere; a non-default plugin is appended.
    check(
        "    multiPoint:\n      enabled: [{name: EBSLimits}]\n      disabled: [{name: NodeAffinity}]\n",
        &[
            (
                ExtensionPoint::PreFilter,
                &[
                    "NodeName",
                    "NodeUnschedulable",
                    "TaintToleration",
                    "NodePorts",
                    "NodeResourcesFit",
                    "VolumeRestrictions",
                    "NodeVolumeLimits",
                    "VolumeBinding",
                    "VolumeZone",
                    "PodTopologySpread",
                    "InterPodAffinity",
                    "DynamicResources",
                    "NodeDeclaredFeatures",
                ],
            ),
            (
                ExtensionPoint::Filter,
                &[
                    "NodeName",
                    "NodeUnschedulable",
                    "TaintToleration",
                    "NodePorts",
                    "NodeResourcesFit",
                    "VolumeRestrictions",
                    "NodeVolumeLimits",
                    "VolumeBinding",
                    "VolumeZone",
                    "PodTopologySpread",
                    "InterPodAffinity",
                    "DynamicResources",
                    "NodeDeclaredFeatures",
                    "EBSLimits",
                ],
            ),
            (
                ExtensionPoint::PreScore,
                &[
                    "TaintToleration",
                    "NodeResourcesFit",
                    "VolumeBinding",
                    "PodTopologySpread",
                    "InterPodAffinity",
                    "NodeResourcesBalancedAllocation",
                ],
            ),
        ],
        Some(&[
            ("TaintToleration", 3),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
    );

    // Plugins enabled at a point and not in multiPoint come after the expanded ones (part 3).
    check(
        "    filter:\n      enabled: [{name: CinderLimits}, {name: NodeName}]\n",
        &[(
            ExtensionPoint::Filter,
            &[
                "NodeName",
                "NodeUnschedulable",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "NodeVolumeLimits",
                "VolumeBinding",
                "VolumeZone",
                "PodTopologySpread",
                "InterPodAffinity",
                "DynamicResources",
                "NodeDeclaredFeatures",
                "CinderLimits",
            ],
        )],
        None,
    );
}

#[test]
fn two_profiles() {
    let c = parse(
        "percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: default-scheduler\n- schedulerName: bin-packing\n  percentageOfNodesToScore: 100\n  plugins:\n    score:\n      disabled: [{name: NodeResourcesBalancedAllocation}]\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources: [{name: cpu, weight: 2}, {name: memory}]\n",
    )
    .unwrap();
    assert_eq!(c.percentage_of_nodes_to_score, Some(30));
    let names: Vec<&str> = c.profiles.iter().map(|p| p.scheduler_name.as_str()).collect();
    assert_eq!(names, ["default-scheduler", "bin-packing"]);
    let d = c.profile("default-scheduler").unwrap();
    assert_eq!(d.plugins, default_plugins());
    assert_eq!(d.args, PluginArgs::default());
    assert_eq!(d.percentage_of_nodes_to_score, None);
    let b = c.profile("bin-packing").unwrap();
    assert_eq!(b.percentage_of_nodes_to_score, Some(100));
    assert!(!b.plugins.score.iter().any(|(n, _)| n == "NodeResourcesBalancedAllocation"));
    assert!(b.plugins.pre_score.iter().any(|n| n == "NodeResourcesBalancedAllocation"));
    let s = &b.args.node_resources_fit.scoring_strategy;
    assert_eq!(s.kind, ScoringStrategyType::MostAllocated);
    assert_eq!(
        s.resources,
        vec![ResourceSpec { name: "cpu".into(), weight: 2 }, ResourceSpec { name: "memory".into(), weight: 1 }]
    );
}

#[test]
fn plugin_args_cases() {
    let args_of = |name: &str, args: &str| -> PluginArgs {
        let body = format!("profiles:\n- pluginConfig:\n  - name: {name}\n    args: {args}\n");
        parse(&body).unwrap_or_else(|e| panic!("{e}")).profiles[0].args.clone()
    };
    let a = args_of(
        "NodeResourcesFit",
        "{kind: NodeResourcesFitArgs, apiVersion: kubescheduler.config.k8s.io/v1, ignoredResources: [example.com/foo], ignoredResourceGroups: [example.com], scoringStrategy: {type: RequestedToCapacityRatio, resources: [{name: cpu, weight: 3}], requestedToCapacityRatio: {shape: [{utilization: 0, score: 10}, {utilization: 100}]}}}",
    );
    let fit = &a.node_resources_fit;
    assert_eq!(fit.ignored_resources, ["example.com/foo"]);
    assert_eq!(fit.ignored_resource_groups, ["example.com"]);
    assert_eq!(fit.scoring_strategy.kind, ScoringStrategyType::RequestedToCapacityRatio);
    assert_eq!(fit.scoring_strategy.resources, vec![ResourceSpec { name: "cpu".into(), weight: 3 }]);
    assert_eq!(
        fit.scoring_strategy.shape,
        vec![UtilizationShapePoint { utilization: 0, score: 10 }, UtilizationShapePoint { utilization: 100, score: 0 }]
    );
    // A strategy without resources gets cpu/memory.
    let a = args_of("NodeResourcesFit", "{scoringStrategy: {type: MostAllocated}}");
    assert_eq!(
        a.node_resources_fit.scoring_strategy.resources,
        PluginArgs::default().node_resources_fit.scoring_strategy.resources
    );
    // Other args keep their defaults when one plugin is configured.
    assert_eq!(a.inter_pod_affinity, PluginArgs::default().inter_pod_affinity);

    // VolumeBindingArgs: a shape is taken as given; an empty one is defaulted.
    let a = args_of(
        "VolumeBinding",
        "{bindTimeoutSeconds: 10, shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}",
    );
    let pts = [(0, 0), (100, 10)].map(|(utilization, score)| UtilizationShapePoint { utilization, score });
    assert_eq!(a.volume_binding.shape, pts);
    assert_eq!(args_of("VolumeBinding", "{shape: []}").volume_binding, PluginArgs::default().volume_binding);

    let a = args_of("InterPodAffinity", "{hardPodAffinityWeight: 0, ignorePreferredTermsOfExistingPods: true}");
    assert_eq!(
        a.inter_pod_affinity,
        InterPodAffinityArgs { hard_pod_affinity_weight: 0, ignore_preferred_terms_of_existing_pods: true }
    );
    let a = args_of("DefaultPreemption", "{minCandidateNodesPercentage: 0}");
    assert_eq!(
        a.default_preemption,
        DefaultPreemptionArgs { min_candidate_nodes_percentage: 0, min_candidate_nodes_absolute: 100 }
    );
    let a = args_of(
        "PodTopologySpread",
        "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}",
    );
    assert_eq!(a.pod_topology_spread.defaulting_type, DefaultingType::List);
    assert_eq!(a.pod_topology_spread.default_constraints[0]["maxSkew"], 1);
    let a = args_of(
        "NodeAffinity",
        "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}",
    );
    assert!(a.node_affinity.added_affinity.unwrap().get("requiredDuringSchedulingIgnoredDuringExecution").is_some());
    let a =
        args_of("NodeResourcesBalancedAllocation", "{resources: [{name: cpu}, {name: example.com/gpu, weight: 1}]}");
    assert_eq!(a.balanced_allocation.resources[1], ResourceSpec { name: "example.com/gpu".into(), weight: 1 });
    // Plugins without an args model accept (and ignore) args.
    assert_eq!(args_of("VolumeBinding", "{bindTimeoutSeconds: 30}"), PluginArgs::default());
}

/// Each case: a config body, the field path of the error and a fragment of its message.
#[test]
fn validation_errors() {
    let check = |body: &str, path: &str, fragment: &str| {
        let e = parse(body).expect_err(body);
        assert_eq!(e.file, "test.yaml", "{body}");
        assert_eq!(e.path, path, "{body}\n{e}");
        assert!(e.message.contains(fragment), "{body}\n{e}\nexpected {fragment:?}");
    };
    let plugins = |yaml: &str| format!("profiles:\n- plugins:\n{yaml}");
    let plugin_config =
        |name: &str, args: &str| format!("profiles:\n- pluginConfig:\n  - name: {name}\n    args: {args}\n");

    // Top-level fields.
    check("parallelism: 0\n", "parallelism", "not greater than 0");
    check("parallelism: x\n", "parallelism", "invalid type");
    check("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore", "0..=100");
    check("percentageOfNodesToScore: -1\n", "percentageOfNodesToScore", "0..=100");
    check("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds", "not greater than 0");
    check(
        "podInitialBackoffSeconds: 6\npodMaxBackoffSeconds: 5\n",
        "podMaxBackoffSeconds",
        "less than podInitialBackoffSeconds",
    );
    check("profiles:\n- percentageOfNodesToScore: 101\n", "profiles[0].percentageOfNodesToScore", "0..=100");

    // Profile names and the shared queue sort.
    check("profiles:\n- schedulerName: ''\n", "profiles[0].schedulerName", "must not be empty");
    check("profiles:\n- schedulerName: a\n- {}\n", "profiles[1].schedulerName", "required");
    check(
        "profiles:\n- schedulerName: a\n- schedulerName: a\n",
        "profiles[1].schedulerName",
        "duplicate schedulerName \"a\"",
    );
    check(
        "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}]\n",
        "profiles[1].plugins.queueSort",
        "same for all profiles",
    );

    // Plugin names.
    check(
        &plugins("    filter:\n      enabled: [{name: Foo}]\n"),
        "profiles[0].plugins.filter.enabled[0].name",
        "unknown plugin \"Foo\"",
    );
    check(
        &plugins("    score:\n      enabled: [{name: NodeResourcesLeastAllocated}]\n"),
        "profiles[0].plugins.score.enabled[0].name",
        "removed",
    );
    check(
        &plugins("    multiPoint:\n      enabled: [{name: SelectorSpread}]\n"),
        "profiles[0].plugins.multiPoint.enabled[0].name",
        "PodTopologySpread",
    );
    check(
        &plugins("    filter:\n      disabled: [{name: NodePort}]\n"),
        "profiles[0].plugins.filter.disabled[0].name",
        "unknown plugin",
    );
    check(
        &plugins("    filter:\n      enabled: [{weight: 1}]\n"),
        "profiles[0].plugins.filter.enabled[0]",
        "missing field `name`",
    );
    check(
        &plugins("    filter:\n      enabled: [{name: ImageLocality}]\n"),
        "profiles[0].plugins.filter.enabled[0].name",
        "does not implement Filter",
    );

    // Duplicates.
    check(
        &plugins("    filter:\n      enabled: [{name: NodePorts}, {name: NodePorts}]\n"),
        "profiles[0].plugins.filter.enabled[1]",
        "enabled twice at Filter",
    );
    check(
        &plugins("    multiPoint:\n      enabled: [{name: ImageLocality}, {name: ImageLocality}]\n"),
        "profiles[0].plugins.multiPoint.enabled[1]",
        "registered twice at Score",
    );
    check(
        &plugins("    multiPoint:\n      enabled: [{name: EBSLimits}, {name: EBSLimits}]\n"),
        "profiles[0].plugins.multiPoint.enabled[1]",
        "registered twice at Filter",
    );

    // Weights.
    check(
        &plugins("    score:\n      enabled: [{name: NodeAffinity}, {name: TaintToleration, weight: 2}, {name: ImageLocality, weight: 0}]\n"),
        "profiles[0].plugins.score.enabled[2].weight",
        "must be at least 1",
    );
    check(
        &plugins("    multiPoint:\n      enabled: [{name: TaintToleration, weight: -3}]\n"),
        "profiles[0].plugins.multiPoint.enabled[0].weight",
        "must be at least 1",
    );

    check(
        &plugins("    score:\n      enabled: [{name: NodePorts, weight: 0}]\n"),
        "profiles[0].plugins.score.enabled[0].name",
        "does not implement Score",
    );

    // Queue sort and bind.
    check(&plugins("    queueSort:\n      disabled: [{name: '*'}]\n"), "profiles[0].plugins.queueSort", "got 0");
    check(
        &plugins("    multiPoint:\n      disabled: [{name: PrioritySort}]\n"),
        "profiles[0].plugins.queueSort",
        "exactly one queue sort",
    );
    check(
        &plugins("    multiPoint:\n      disabled: [{name: DefaultBinder}]\n"),
        "profiles[0].plugins.bind",
        "at least one bind plugin",
    );

    // pluginConfig.
    check(
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n  - name: InterPodAffinity\n",
        "profiles[0].pluginConfig[1]",
        "repeated pluginConfig",
    );
    check(&plugin_config("Foo", "{}"), "profiles[0].pluginConfig[0].name", "unknown plugin");
    check(
        &plugin_config("InterPodAffinity", "{kind: NodeAffinityArgs}"),
        "profiles[0].pluginConfig[0].args.kind",
        "InterPodAffinityArgs",
    );
    check(
        &plugin_config("InterPodAffinity", "{apiVersion: kubescheduler.config.k8s.io/v1beta3}"),
        "profiles[0].pluginConfig[0].args.apiVersion",
        "expected kubescheduler.config.k8s.io/v1",
    );
    check(&plugin_config("InterPodAffinity", "[1, 2]"), "profiles[0].pluginConfig[0].args", "got a list");
    check(
        &plugin_config("InterPodAffinity", "{hardPodAffinityWeight: x}"),
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
        "invalid type",
    );
    check(
        &plugin_config("InterPodAffinity", "{hardPodAffinityWeight: 101}"),
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
        "0..=100",
    );

    // VolumeBindingArgs (ValidateVolumeBindingArgs with StorageCapacityScoring on).
    let vb = "profiles[0].pluginConfig[0].args";
    check(
        &plugin_config("VolumeBinding", "{bindTimeoutSeconds: -10}"),
        &format!("{vb}.bindTimeoutSeconds"),
        "should not be a negative value",
    );
    check(
        &plugin_config("VolumeBinding", "{shape: [{utilization: 3, score: 3}, {utilization: 1, score: 1}]}"),
        &format!("{vb}.shape[1].utilization"),
        "strictly increasing",
    );
    check(
        &plugin_config("VolumeBinding", "{shape: [{utilization: -1, score: 1}]}"),
        &format!("{vb}.shape[0].utilization"),
        "0..=100",
    );
    check(
        &plugin_config("VolumeBinding", "{shape: [{utilization: 10, score: -1}]}"),
        &format!("{vb}.shape[0].score"),
        "0..=10",
    );
    check(
        &plugin_config("VolumeBinding", "{shape: [{utilization: 20, score: 11}]}"),
        &format!("{vb}.shape[0].score"),
        "0..=10",
    );
    check(
        &plugin_config("VolumeBinding", "{shape: [{utilization: 101, score: 1}]}"),
        &format!("{vb}.shape[0].utilization"),
        "0..=100",
    );

    // NodeResourcesFit args.
    let fit = "profiles[0].pluginConfig[0].args";
    check(
        &plugin_config("NodeResourcesFit", "{scoringStrategy: {type: Foo}}"),
        &format!("{fit}.scoringStrategy.type"),
        "unsupported scoring strategy",
    );
    check(
        &plugin_config("NodeResourcesFit", "{scoringStrategy: {}}"),
        &format!("{fit}.scoringStrategy.type"),
        "unsupported scoring strategy \"\"",
    );
    check(
        &plugin_config(
            "NodeResourcesFit",
            "{scoringStrategy: {type: LeastAllocated, resources: [{name: cpu}, {name: memory, weight: 101}]}}",
        ),
        &format!("{fit}.scoringStrategy.resources[1].weight"),
        "1..=100",
    );
    check(
        &plugin_config(
            "NodeResourcesFit",
            "{scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: -1}]}}",
        ),
        &format!("{fit}.scoringStrategy.resources[0].weight"),
        "1..=100",
    );
    check(
        &plugin_config("NodeResourcesFit", "{scoringStrategy: {type: RequestedToCapacityRatio}}"),
        &format!("{fit}.scoringStrategy.requestedToCapacityRatio"),
        "must be specified",
    );
    check(
        &plugin_config(
            "NodeResourcesFit",
            "{scoringStrategy: {type: MostAllocated, requestedToCapacityRatio: {shape: []}}}",
        ),
        &format!("{fit}.scoringStrategy.requestedToCapacityRatio"),
        "must be absent",
    );
    let shape = |points: &str| {
        plugin_config("NodeResourcesFit", &format!("{{scoringStrategy: {{type: RequestedToCapacityRatio, requestedToCapacityRatio: {{shape: {points}}}}}}}"))
    };
    let shape_path = format!("{fit}.scoringStrategy.requestedToCapacityRatio.shape");
    check(&shape("[]"), &shape_path, "at least one point");
    check(
        &shape("[{utilization: 50, score: 1}, {utilization: 50, score: 2}]"),
        &format!("{shape_path}[1].utilization"),
        "strictly increasing",
    );
    check(
        &shape("[{utilization: 0, score: 0}, {utilization: 101, score: 2}]"),
        &format!("{shape_path}[1].utilization"),
        "0..=100",
    );
    check(&shape("[{utilization: 0, score: 11}]"), &format!("{shape_path}[0].score"), "0..=10");
    check(&shape("[{utilization: 0, score: -1}]"), &format!("{shape_path}[0].score"), "0..=10");
    check(
        &plugin_config("NodeResourcesFit", "{ignoredResourceGroups: [example.com/gpu]}"),
        &format!("{fit}.ignoredResourceGroups[0]"),
        "can't contain '/'",
    );
    check(
        &plugin_config("NodeResourcesFit", "{ignoredResources: ['-bad']}"),
        &format!("{fit}.ignoredResources[0]"),
        "name part",
    );

    // Other args.
    let args = "profiles[0].pluginConfig[0].args";
    check(
        &plugin_config(
            "PodTopologySpread",
            "{defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}",
        ),
        &format!("{args}.defaultingType"),
        "defaultConstraints must be empty",
    );
    check(
        &plugin_config("PodTopologySpread", "{defaultingType: Foo}"),
        &format!("{args}.defaultingType"),
        "use System or List",
    );
    let pts =
        |c: &str| plugin_config("PodTopologySpread", &format!("{{defaultingType: List, defaultConstraints: [{c}]}}"));
    check(
        &pts("{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}"),
        &format!("{args}.defaultConstraints[0].maxSkew"),
        "not greater than 0",
    );
    check(
        &pts("{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}"),
        &format!("{args}.defaultConstraints[0].topologyKey"),
        "can not be empty",
    );
    check(
        &pts("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Sometimes}"),
        &format!("{args}.defaultConstraints[0].whenUnsatisfiable"),
        "unsupported value",
    );
    check(
        &pts("{maxSkew: 1, topologyKey: zone}"),
        &format!("{args}.defaultConstraints[0].whenUnsatisfiable"),
        "can not be empty",
    );
    check(
        &pts("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {a: b}}}"),
        &format!("{args}.defaultConstraints[0].labelSelector"),
        "must not define a selector",
    );
    check(
        &pts("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}"),
        &format!("{args}.defaultConstraints[1]"),
        "duplicate constraint",
    );
    check(&pts("{maxSkew: x}"), &format!("{args}.defaultConstraints[0].maxSkew"), "invalid type");
    check(
        &plugin_config("DefaultPreemption", "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}"),
        &format!("{args}.minCandidateNodesPercentage"),
        "cannot be zero",
    );
    check(
        &plugin_config("DefaultPreemption", "{minCandidateNodesPercentage: 101}"),
        &format!("{args}.minCandidateNodesPercentage"),
        "0..=100",
    );
    check(
        &plugin_config("DefaultPreemption", "{minCandidateNodesAbsolute: -1}"),
        &format!("{args}.minCandidateNodesAbsolute"),
        "negative",
    );
    check(
        &plugin_config("NodeResourcesBalancedAllocation", "{resources: [{name: cpu, weight: 2}]}"),
        &format!("{args}.resources[0].weight"),
        "must be 1",
    );
    check(
        &plugin_config("NodeResourcesBalancedAllocation", "{resources: [{name: cpu}, {name: cpu}]}"),
        &format!("{args}.resources[1].name"),
        "listed twice",
    );
    check(
        &plugin_config("NodeAffinity", "{addedAffinity: [1]}"),
        &format!("{args}.addedAffinity"),
        "must be a NodeAffinity mapping",
    );
}

#[test]
fn header_errors() {
    let check = |text: &str, path: &str, fragment: &str| {
        let e = SchedulerConfig::parse(text, "c.yaml").expect_err(text);
        assert_eq!((e.file.as_str(), e.path.as_str()), ("c.yaml", path), "{text}\n{e}");
        assert!(e.message.contains(fragment), "{text}\n{e}\nexpected {fragment:?}");
    };
    check("", "", "the file is empty");
    check("- a\n", "", "mapping at the top level");
    check("a: [\n", "", "invalid YAML");
    check("kind: A\nkind: B\n", "", "duplicate entry with key \"kind\"");
    check("kind: KubeSchedulerConfiguration\n", "apiVersion", "required");
    check(
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
        "apiVersion",
        "v1beta3 is not supported",
    );
    check(
        "apiVersion: v1\nkind: KubeSchedulerConfiguration\n",
        "apiVersion",
        "expected kubescheduler.config.k8s.io/v1",
    );
    check("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n", "kind", "expected KubeSchedulerConfiguration");
    check("apiVersion: kubescheduler.config.k8s.io/v1\n", "kind", "required");
}

#[test]
fn ignored_known_fields_and_empty_config_are_the_default() {
    // Null lists and sets read as empty, as Kubernetes decoding does.
    let c = parse("profiles:\n- plugins: {filter: null, score: {enabled: null}}\n  pluginConfig: null\n").unwrap();
    assert_eq!(c.profiles, SchedulerConfig::defaults().profiles);
    let c = parse("profiles: null\n").unwrap();
    assert_eq!(c.profiles, SchedulerConfig::defaults().profiles);
    let c = parse("leaderElection: {leaderElect: false}\nclientConnection: {qps: 5}\nprofiles:\n- schedulerName: default-scheduler\n").unwrap();
    let d = SchedulerConfig::defaults();
    assert_eq!(c.profiles, d.profiles);
    assert_eq!(c.digest, d.digest);
    assert_eq!(c.source, "test.yaml");
}

#[test]
fn digest_tracks_content() {
    let d = SchedulerConfig::defaults();
    assert_eq!(d.digest.len(), 64);
    assert!(d.digest.bytes().all(|b| b.is_ascii_hexdigit()));
    let check = |body: &str, same: bool| {
        let c = parse(body).unwrap();
        assert_eq!(c.digest == d.digest, same, "{body}");
    };
    check("", true);
    check("parallelism: 16\npodMaxBackoffSeconds: 10\n", true);
    check("parallelism: 8\n", false);
    check("percentageOfNodesToScore: 0\n", false);
    check("profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, weight: 2}]\n", false);
    check("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 2}\n", false);
    // Raw args are hashed with sorted keys, so key order does not matter.
    let a =
        parse("profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {addedAffinity: {a: 1, b: 2}}\n").unwrap();
    let b =
        parse("profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {addedAffinity: {b: 2, a: 1}}\n").unwrap();
    assert_eq!(a.digest, b.digest);
}

#[test]
fn example_configs_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/configs");
    let load = |file: &str| SchedulerConfig::load(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));

    let c = load("default.yaml");
    assert_eq!(c.profiles, SchedulerConfig::defaults().profiles);
    assert!(c.source.ends_with("default.yaml"));

    let c = load("most-allocated.yaml");
    let p = c.profile("default-scheduler").unwrap();
    assert_eq!(p.args.node_resources_fit.scoring_strategy.kind, ScoringStrategyType::MostAllocated);
    assert!(!p.plugins.has(ExtensionPoint::Score, "NodeResourcesBalancedAllocation"));
    assert_eq!(p.plugins.score_weight("TaintToleration"), Some(3));
    assert_eq!(p.plugins.score_weight("NodeResourcesBalancedAllocation"), None);
    assert!(p.plugins.has(ExtensionPoint::PreScore, "NodeResourcesBalancedAllocation"));

    let c = load("rtcr.yaml");
    let s = &c.profiles[0].args.node_resources_fit.scoring_strategy;
    assert_eq!(s.kind, ScoringStrategyType::RequestedToCapacityRatio);
    assert!(!s.shape.is_empty());

    let c = load("percentage-100.yaml");
    assert_eq!(c.percentage_of_nodes_to_score, Some(100));
    assert_eq!(c.profiles[0].plugins, default_plugins());

    let missing = SchedulerConfig::load(&dir.join("missing.yaml")).unwrap_err();
    assert!(missing.message.contains("cannot read"), "{missing}");
}

#[test]
fn weight_on_a_non_score_plugin_is_ignored() {
    let c = parse("profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: PrioritySort, weight: 0}, {name: NodePorts, weight: 9}]\n")
        .unwrap();
    assert_eq!(c.profiles[0].plugins, default_plugins());
}

/// Upstream decodes strictly: a misspelt field at any level is an error naming the field and where
/// it is, never silently ignored (kube-scheduler: `strict decoding error: unknown field "..."`).
#[test]
fn unknown_fields_are_rejected_at_every_level() {
    let cases: &[(&str, &str, &str)] = &[
        ("percentageOfNodeToScore: 50\n", "", "percentageOfNodeToScore"),
        ("leaderElection: {leaderElekt: false}\n", "leaderElection", "leaderElekt"),
        ("clientConnection: {qsp: 5}\n", "clientConnection", "qsp"),
        ("profiles:\n- schedulerNme: x\n", "profiles[0]", "schedulerNme"),
        ("profiles:\n- plugins: {scores: {enabled: [{name: ImageLocality}]}}\n", "profiles[0].plugins", "scores"),
        ("profiles:\n- plugins: {score: {enable: [{name: ImageLocality}]}}\n", "profiles[0].plugins.score", "enable"),
        (
            "profiles:\n- plugins: {score: {enabled: [{name: ImageLocality, wieght: 2}]}}\n",
            "profiles[0].plugins.score.enabled[0]",
            "wieght",
        ),
        ("profiles:\n- pluginConfig: [{name: NodeAffinity, arg: {}}]\n", "profiles[0].pluginConfig[0]", "arg"),
        (
            "profiles:\n- pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated, resources: [{Name: cpu, weight: 1}]}}}]\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0]",
            "Name",
        ),
        (
            "profiles:\n- pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 0, Score: 1}]}}}}]\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[0]",
            "Score",
        ),
        (
            "profiles:\n- pluginConfig: [{name: NodeResourcesFit, args: {ignoredResource: [x]}}]\n",
            "profiles[0].pluginConfig[0].args",
            "ignoredResource",
        ),
        (
            "profiles:\n- pluginConfig: [{name: NodeResourcesBalancedAllocation, args: {resource: []}}]\n",
            "profiles[0].pluginConfig[0].args",
            "resource",
        ),
        (
            "profiles:\n- pluginConfig: [{name: NodeAffinity, args: {addedAfinity: {}}}]\n",
            "profiles[0].pluginConfig[0].args",
            "addedAfinity",
        ),
        (
            "profiles:\n- pluginConfig: [{name: PodTopologySpread, args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomain: 2}]}}]\n",
            "profiles[0].pluginConfig[0].args.defaultConstraints[0]",
            "minDomain",
        ),
        (
            "profiles:\n- pluginConfig: [{name: PodTopologySpread, args: {defaultingTyp: List}}]\n",
            "profiles[0].pluginConfig[0].args",
            "defaultingTyp",
        ),
        (
            "profiles:\n- pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWieght: 2}}]\n",
            "profiles[0].pluginConfig[0].args",
            "hardPodAffinityWieght",
        ),
        (
            "profiles:\n- pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercent: 2}}]\n",
            "profiles[0].pluginConfig[0].args",
            "minCandidateNodesPercent",
        ),
        (
            "profiles:\n- pluginConfig: [{name: VolumeBinding, args: {bindTimeout: 2}}]\n",
            "profiles[0].pluginConfig[0].args",
            "bindTimeout",
        ),
        (
            "profiles:\n- pluginConfig: [{name: DynamicResources, args: {filterTimeOut: 2s}}]\n",
            "profiles[0].pluginConfig[0].args",
            "filterTimeOut",
        ),
    ];
    for (body, parent, field) in cases {
        let e = parse(body).expect_err(body);
        assert_eq!(e.file, "test.yaml", "{body}");
        let path = if parent.is_empty() { field.to_string() } else { format!("{parent}.{field}") };
        assert_eq!(e.path, path, "{body}: {e}");
        assert!(e.message.starts_with(&format!("strict decoding error: unknown field \"{field}\"")), "{body}: {e}");
    }
}

#[test]
fn known_fields_schedperf_does_not_act_on_are_accepted_and_unsupported_ones_named() {
    let ok = "leaderElection: {leaderElect: false, resourceName: x}\nclientConnection: {qps: 50, burst: 100}\n\
              enableProfiling: true\ndelayCacheUntilActive: false\nprofiles:\n- pluginConfig:\n  \
              - {name: VolumeBinding, args: {kind: VolumeBindingArgs, bindTimeoutSeconds: 600}}\n  \
              - {name: TaintToleration, args: {anything: 1}}\n";
    parse(ok).expect("accepted");
    let e = parse("extenders: [{urlPrefix: 'http://x'}]\n").expect_err("extenders");
    assert_eq!(e.path, "extenders", "{e}");
    let e = parse("profiles:\n- plugins: {placementScore: {enabled: [{name: X}]}}\n").expect_err("pod groups");
    assert_eq!(e.path, "profiles[0].plugins.placementScore.enabled", "{e}");
}
