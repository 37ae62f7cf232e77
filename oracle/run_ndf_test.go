package main

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	ndffeatures "k8s.io/component-helpers/nodedeclaredfeatures/features"
)

// The nodedeclaredfeatures suite's PreRunFn swaps ndffeatures.AllFeatures, but the scheduler reads
// ndf.DefaultFramework, built from the real list at package initialisation: the mocks never reach it.
func TestNDFPreRunLeavesDefaultFramework(t *testing.T) {
	cleanup := ndfPreRun(workload{ndfFeatures: 3})
	defer cleanup()
	if len(ndffeatures.AllFeatures) != 3 {
		t.Fatalf("AllFeatures has %d features, want the 3 mocks", len(ndffeatures.AllFeatures))
	}
	spec := &v1.PodSpec{Resources: &v1.ResourceRequirements{}}
	v := version.MustParse("1.37.2")
	reqs, err := ndf.DefaultFramework.InferForPodScheduling(&ndf.PodInfo{Spec: spec}, v)
	if err != nil || !reqs.IsEmpty() {
		t.Fatalf("DefaultFramework infers %v (%v) for a pod with pod-level resources: the mocks reached it", reqs, err)
	}
	if fs := ndf.DefaultFramework.TryMap(ndfFeatureNames(3)); !fs.IsEmpty() {
		t.Fatalf("DefaultFramework maps Feature1..3 to %v", fs)
	}
	// A framework built from the swapped list is what the suite meant to test.
	reqs, err = ndf.New(ndffeatures.AllFeatures).InferForPodScheduling(&ndf.PodInfo{Spec: spec}, v)
	if err != nil || reqs.String() != "111" {
		t.Fatalf("a framework of the mocks infers %v (%v), want 111", reqs, err)
	}
}

func TestNDFFeatureNamesSortAsStrings(t *testing.T) {
	got := ndfFeatureNames(11)
	want := []string{"Feature1", "Feature10", "Feature11", "Feature2", "Feature3", "Feature4", "Feature5",
		"Feature6", "Feature7", "Feature8", "Feature9"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	if ndfFeatureNames(0) != nil {
		t.Fatalf("no features: nil, as upstream's")
	}
}
