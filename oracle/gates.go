package main

import (
	"fmt"
	"github.com/go-logr/logr"
	"sort"
	"strconv"
	"strings"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	_ "k8s.io/kubernetes/pkg/features" // Registers the kube feature gates in DefaultMutableFeatureGate.
)

// schedulerGates are the gates that pkg/scheduler of v1.37.2 reads (features.X in its non-test sources).
var schedulerGates = []string{
	"CompositePodGroup", "DRAAdminAccess", "DRAConsumableCapacity", "DRADerivedAttributes",
	"DRADeviceBindingConditions", "DRADeviceCompatibilityGroups", "DRADeviceTaintRules", "DRADeviceTaints",
	"DRAExtendedResource", "DRAFractionalCapacityRange", "DRAListTypeAttributes", "DRANodeAllocatableResources",
	"DRAOptionalNodeOperations", "DRAPartitionableDevices", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus",
	"DRASchedulerFilterTimeout", "DRAWorkloadResourceClaims", "DynamicResourceAllocation", "GenericWorkload",
	"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScaling",
	"InPlacePodVerticalScalingSchedulerPreemption", "InterPodAffinityHostnameFastPath",
	"MatchLabelKeysInPodTopologySpread", "NodeDeclaredFeatures", "NodeInclusionPolicyInPodTopologySpread",
	"NominatedNodeNameForExpectation", "OpportunisticBatching", "PodGroupPreemptionPolicy", "PodLevelResources",
	"SchedulerAsyncAPICalls", "SchedulerAsyncPreemption", "SchedulerPopFromBackoffQ", "SchedulerPreQueueingHints",
	"StorageCapacityScoring", "TaintTolerationComparisonOperators", "TopologyAwareWorkloadScheduling",
	"VolumeAttributesClass", "VolumeLimitScaling",
}

// defaultGates holds every registered gate's default at v1.37.2 (AllAlpha/AllBeta excluded).
var defaultGates = func() map[string]bool {
	m := map[string]bool{}
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		if name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		m[string(name)] = spec.Default
	}
	return m
}()

// currentGates is the map last applied, so an unchanged request does not touch the gate.
var currentGates map[string]bool

// applyGates sets every gate to its default, then applies overrides. It is a no-op when the result equals
// what is already applied.
func applyGates(overrides map[string]bool) error {
	want := make(map[string]bool, len(defaultGates))
	for k, v := range defaultGates {
		want[k] = v
	}
	for k, v := range overrides {
		if _, ok := defaultGates[k]; !ok {
			return fmt.Errorf("featureGates: unknown feature gate %q", k)
		}
		want[k] = v
	}
	if currentGates != nil && mapsEqual(currentGates, want) {
		return nil
	}
	// The gate warns (through klog) about every GA or deprecated gate set explicitly; that is noise here.
	var err error
	if g, ok := utilfeature.DefaultMutableFeatureGate.(interface {
		SetFromMapWithLogger(klog.Logger, map[string]bool) error
	}); ok {
		err = g.SetFromMapWithLogger(logr.Discard(), want)
	} else {
		err = utilfeature.DefaultMutableFeatureGate.SetFromMap(want)
	}
	if err != nil {
		return fmt.Errorf("featureGates: %v", err)
	}
	currentGates = want
	return nil
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// parseGateFlag parses "A=true,B=false".
func parseGateFlag(s string) (map[string]bool, error) {
	m := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("--feature-gates: %q: expected Name=true|false", part)
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("--feature-gates: %q: expected Name=true|false", part)
		}
		m[strings.TrimSpace(k)] = b
	}
	return m, nil
}

// effectiveSchedulerGates reports the scheduler-relevant gates as they are now.
func effectiveSchedulerGates() map[string]bool {
	m := map[string]bool{}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	names := append([]string(nil), schedulerGates...)
	sort.Strings(names)
	for _, n := range names {
		if _, ok := known[featuregate.Feature(n)]; ok {
			m[n] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(n))
		}
	}
	return m
}
