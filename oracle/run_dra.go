package main

// `run`'s DRA ops: allocResourceClaims (dra.go), then a wait until the scheduler's own claim cache holds
// every allocation, so the pods that follow see the devices as taken in every run.

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
)

func (r *runner) allocClaims(o op) error {
	if err := allocResourceClaims(r.ctx, r.client, o.namespace); err != nil {
		return err
	}
	list, err := r.client.ResourceV1().ResourceClaims(o.namespace).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	return waitClaimsSeen(r.sched, list.Items)
}

// draManagerOf is the scheduler's shared DRA manager (nil with DynamicResourceAllocation off).
func draManagerOf(s *scheduler.Scheduler) fwk.SharedDRAManager {
	for _, f := range s.Profiles {
		if m := f.SharedDRAManager(); m != nil {
			return m
		}
	}
	return nil
}

// waitClaimsSeen waits until the scheduler's claim cache holds each claim at its resourceVersion or later.
func waitClaimsSeen(s *scheduler.Scheduler, claims []resourceapi.ResourceClaim) error {
	m := draManagerOf(s)
	if m == nil {
		return nil
	}
	for i := range claims {
		c := &claims[i]
		if err := waitFor(fmt.Sprintf("ResourceClaim %s/%s in the scheduler's claim cache", c.Namespace, c.Name), func() bool {
			got, err := m.ResourceClaims().Get(c.Namespace, c.Name)
			return err == nil && rvAtLeast(got.ResourceVersion, c.ResourceVersion)
		}); err != nil {
			return err
		}
	}
	return waitDRASettled(m)
}
