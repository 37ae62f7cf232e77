package main

// nodedeclaredfeatures/node_declared_features_test.go's hooks, run as scheduler_perf runs them for
// that suite: its PreRunFn (preInitNodeDeclaredFeatures) assigns numNodeDeclaredFeatures mock features
// to ndffeatures.AllFeatures before the scheduler is built, and its NodeUpdateFn
// (updateNodesWithDeclaredFeatures) gives every node status.declaredFeatures = Feature1..FeatureN
// (sorted) after each createNodes op, then waits until the scheduler's cache has them. Both act only
// when the workload's own featureGates set NodeDeclaredFeatures: true.
//
// The scheduler does not read ndffeatures.AllFeatures after Go package initialisation:
// ndf.DefaultFramework, which the plugin and NodeInfo use, was built from it then. So, as upstream's, the
// swap leaves the scheduler with the real registry (TestNDFPreRunLeavesDefaultFramework).

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	ndffeatures "k8s.io/component-helpers/nodedeclaredfeatures/features"
)

const numNodeDeclaredFeatures = "numNodeDeclaredFeatures"

// ndfHookParam is the hook's N for workload w: its numNodeDeclaredFeatures when its own featureGates set
// NodeDeclaredFeatures: true (-1 otherwise: no hook). A value that is not a non-negative integer is an error.
func ndfHookParam(w rawWorkload) (int, error) {
	v, ok := w.Params[numNodeDeclaredFeatures]
	if !ok {
		return -1, nil
	}
	f, isNum := v.(float64)
	if !isNum || f < 0 || f != float64(int(f)) {
		return -1, fmt.Errorf("expected a non-negative integer, got %v", v)
	}
	if !w.FeatureGates["NodeDeclaredFeatures"] {
		return -1, nil
	}
	return int(f), nil
}

// ndfMockFeature is the suite's mockFeature: inferred for a pod with pod-level resources, no MaxVersion.
type ndfMockFeature struct{ name string }

func (f *ndfMockFeature) Name() string                           { return f.name }
func (f *ndfMockFeature) Discover(*ndf.NodeConfiguration) bool   { return true }
func (f *ndfMockFeature) Requirements() *ndf.FeatureRequirements { return nil }
func (f *ndfMockFeature) InferForScheduling(podInfo *ndf.PodInfo) bool {
	return podInfo.Spec != nil && podInfo.Spec.Resources != nil
}
func (f *ndfMockFeature) InferForUpdate(_, _ *ndf.PodInfo) bool { return false }
func (f *ndfMockFeature) MaxVersion() *version.Version          { return nil }

// ndfPreRun is preInitNodeDeclaredFeatures: ndffeatures.AllFeatures = Feature1..FeatureN (mocks) until the
// returned cleanup runs.
func ndfPreRun(w workload) func() {
	if w.ndfFeatures < 0 {
		return func() {}
	}
	mocks := make([]ndf.Feature, 0, w.ndfFeatures)
	for i := 1; i <= w.ndfFeatures; i++ {
		mocks = append(mocks, &ndfMockFeature{name: "Feature" + strconv.Itoa(i)})
	}
	original := ndffeatures.AllFeatures
	ndffeatures.AllFeatures = mocks
	return func() { ndffeatures.AllFeatures = original }
}

// ndfFeatureNames is Feature1..FeatureN sorted as strings (nil for 0, as upstream's).
func ndfFeatureNames(n int) []string {
	var names []string
	for i := 1; i <= n; i++ {
		names = append(names, "Feature"+strconv.Itoa(i))
	}
	sort.Strings(names)
	return names
}

// ndfUpdateNodes is updateNodesWithDeclaredFeatures: every node (as a List returns them: by name) gets the
// names through UpdateStatus; then it waits until the scheduler's cache holds them all.
func (r *runner) ndfUpdateNodes() error {
	if r.w.ndfFeatures < 0 {
		return nil
	}
	names := ndfFeatureNames(r.w.ndfFeatures)
	list, err := r.client.CoreV1().Nodes().List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes for the NodeUpdateFn: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		node := list.Items[i].DeepCopy()
		node.Status.DeclaredFeatures = names
		if err := r.tracker.Update(nodesGVR, node, ""); err != nil {
			return fmt.Errorf("failed to update node %s status: %w", node.Name, err)
		}
	}
	return waitFor("nodes' declared features in the scheduler cache", func() bool {
		for i := range list.Items {
			ni, err := r.sched.Cache.GetNode(list.Items[i].Name)
			if err != nil || !slices.Equal(ni.Node().Status.DeclaredFeatures, names) {
				return false
			}
		}
		return true
	})
}
