package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	core "k8s.io/kubernetes/pkg/apis/core"
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
)

// admitPodSelectors applies the kube-apiserver's pod create strategy (upstream's own
// `PrepareForCreate`) to a copy of the pod and keeps what it does to the scheduling selectors:
// matchLabelKeys / mismatchLabelKeys merged into pod (anti-)affinity terms and into topology spread
// constraints' label selectors, as the feature gates in effect say. Pods reach a real scheduler
// only through that strategy; the rest of what it does (status reset, field drops) is left out so
// that bound pods keep their phase.
func admitPodSelectors(pod *v1.Pod) error {
	var internal core.Pod
	if err := corev1.Convert_v1_Pod_To_core_Pod(pod, &internal, nil); err != nil {
		return fmt.Errorf("converting the pod for the create strategy: %w", err)
	}
	podregistry.Strategy.PrepareForCreate(context.Background(), &internal)
	var out v1.Pod
	if err := corev1.Convert_core_Pod_To_v1_Pod(&internal, &out, nil); err != nil {
		return fmt.Errorf("converting the pod back from the create strategy: %w", err)
	}
	if !equality.Semantic.DeepEqual(pod.Spec.Affinity, out.Spec.Affinity) {
		pod.Spec.Affinity = out.Spec.Affinity
	}
	if !equality.Semantic.DeepEqual(pod.Spec.TopologySpreadConstraints, out.Spec.TopologySpreadConstraints) {
		pod.Spec.TopologySpreadConstraints = out.Spec.TopologySpreadConstraints
	}
	return nil
}
