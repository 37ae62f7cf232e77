package main

// DRA in lockstep: the resourceclaim controller runs beside the scheduler (as in scheduler_perf), and
// `apply`/`delete` wait for what the scheduler reads through its DRA manager (the claim assume cache and
// the resource slice tracker, both fed by informer handlers, so the informer's indexer alone is too early)
// and for the controller's work: a pending pod's claims from templates created and its
// status.resourceClaimStatuses written; a deleted pod's reservations removed and unused claims deallocated.

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// startLockstepClaimController starts the resourceclaim controller on the env's informers (already
// started: Start again starts the ones the controller adds) when DynamicResourceAllocation is on.
func startLockstepClaimController(e *env) (bool, error) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		return false, nil
	}
	if err := startClaimController(e.ctx, e.client, e.informers); err != nil {
		return false, err
	}
	e.informers.Start(e.ctx.Done())
	e.informers.WaitForCacheSync(e.ctx.Done())
	return true, nil
}

// allocClaims is scheduler_perf's allocResourceClaims op in lockstep: the op (dra.go's
// allocResourceClaims, the same as `run`) on the env's client, then a wait until the scheduler's claim
// cache holds every claim of the namespace ("" = all) at the resourceVersion the op left it at, and its
// index of allocated devices agrees.
func (l *lockstep) allocClaims(namespace string) (any, error) {
	if err := applyGates(l.gates); err != nil {
		return nil, err
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		return nil, fmt.Errorf("allocClaims: the DynamicResourceAllocation feature gate is off")
	}
	if err := allocResourceClaims(l.e.ctx, l.e.client, namespace); err != nil {
		return nil, err
	}
	m := draManagerOf(l.e.sched)
	if m == nil {
		return map[string]any{"ok": true}, nil
	}
	list, err := l.e.client.ResourceV1().ResourceClaims(namespace).List(l.e.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("allocClaims: list claims: %v", err)
	}
	for i := range list.Items {
		c := &list.Items[i]
		if err := waitFor("ResourceClaim "+c.Namespace+"/"+c.Name+" in the scheduler's claim cache", func() bool {
			got, err := m.ResourceClaims().Get(c.Namespace, c.Name)
			return err == nil && rvAtLeast(got.ResourceVersion, c.ResourceVersion)
		}); err != nil {
			return nil, err
		}
	}
	if err := waitDRASettled(m); err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "claims": len(list.Items)}, nil
}

// rvAtLeast compares two resourceVersions (the trackers' are decimal counters).
func rvAtLeast(got, want string) bool {
	g, err1 := strconv.ParseInt(got, 10, 64)
	w, err2 := strconv.ParseInt(want, 10, 64)
	if err1 != nil || err2 != nil {
		return got == want
	}
	return g >= w
}

// waitPodClaims waits, for a pending pod with claims from templates, until the controller has created
// them and written the pod's status.resourceClaimStatuses; it returns the pod's resourceVersion then
// (rv when there is nothing to wait for).
func (l *lockstep) waitPodClaims(pod *v1.Pod, rv string) (string, error) {
	if !l.claimController || pod.Spec.NodeName != "" || len(templateClaims(pod)) == 0 {
		return rv, nil
	}
	var latest *v1.Pod
	err := waitFor("the resourceclaim controller's claims for pod "+podKey(pod), func() bool {
		obj, err := l.e.tracker.Get(podsGVR, pod.Namespace, pod.Name)
		if err != nil {
			return false
		}
		p := obj.(*v1.Pod)
		if len(templateClaims(p)) > 0 {
			return false
		}
		latest = p
		return true
	})
	if err != nil {
		return "", err
	}
	m := draManagerOf(l.e.sched)
	for _, s := range latest.Status.ResourceClaimStatuses {
		if s.ResourceClaimName == nil || m == nil {
			continue
		}
		name := *s.ResourceClaimName
		if err := waitFor("ResourceClaim "+pod.Namespace+"/"+name+" in the scheduler's claim cache", func() bool {
			_, err := m.ResourceClaims().Get(pod.Namespace, name)
			return err == nil
		}); err != nil {
			return "", err
		}
	}
	return latest.ResourceVersion, waitDRASettled(m)
}

// waitSeenDRA waits for DRA objects in the scheduler's DRA manager; false when obj is not one it reads
// through a handler-fed store.
func (l *lockstep) waitSeenDRA(obj k8sruntime.Object, rv string) (bool, error) {
	m := draManagerOf(l.e.sched)
	if m == nil {
		return false, nil
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		if err := waitFor("ResourceClaim "+o.Namespace+"/"+o.Name+" in the scheduler's claim cache", func() bool {
			got, err := m.ResourceClaims().Get(o.Namespace, o.Name)
			return err == nil && rvAtLeast(got.ResourceVersion, rv)
		}); err != nil {
			return true, err
		}
		return true, waitDRASettled(m)
	case *resourceapi.ResourceSlice:
		return true, waitFor("ResourceSlice "+o.Name+" in the scheduler's slice tracker", func() bool {
			slices, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				return false
			}
			for _, s := range slices {
				if s.Name == o.Name && rvAtLeast(s.ResourceVersion, rv) {
					return true
				}
			}
			return false
		})
	}
	return false, nil
}

// waitGoneDRA is waitGone for DRA objects and, for a pod, the controller's clean-up of its claims: no
// claim in the scheduler's cache is reserved for it any more (a claim nobody uses is then deallocated in
// the same update).
func (l *lockstep) waitGoneDRA(obj k8sruntime.Object) (bool, error) {
	m := draManagerOf(l.e.sched)
	if m == nil {
		return false, nil
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		if err := waitFor("ResourceClaim "+o.Namespace+"/"+o.Name+" removed from the scheduler's claim cache", func() bool {
			_, err := m.ResourceClaims().Get(o.Namespace, o.Name)
			return err != nil
		}); err != nil {
			return true, err
		}
		return true, waitDRASettled(m)
	case *resourceapi.ResourceSlice:
		return true, waitFor("ResourceSlice "+o.Name+" removed from the scheduler's slice tracker", func() bool {
			slices, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				return false
			}
			for _, s := range slices {
				if s.Name == o.Name {
					return false
				}
			}
			return true
		})
	case *v1.Pod:
		if !l.claimController || len(o.Spec.ResourceClaims) == 0 {
			return false, nil
		}
		if err := waitFor(fmt.Sprintf("claims of pod %s released by the resourceclaim controller", podKey(o)), func() bool {
			return !reservedFor(m.ResourceClaims().List, o.UID)
		}); err != nil {
			return false, err
		}
		return false, waitDRASettled(m)
	}
	return false, nil
}

// reservedFor reports whether any listed claim is reserved for the pod.
func reservedFor(list func() ([]*resourceapi.ResourceClaim, error), uid types.UID) bool {
	claims, err := list()
	if err != nil {
		return true
	}
	for _, c := range claims {
		for _, r := range c.Status.ReservedFor {
			if r.UID == uid {
				return true
			}
		}
	}
	return false
}

// draSettled reports whether the scheduler's index of allocated devices (fed by the claim cache through a
// handler queue of its own, so it can trail the cache) agrees with the claims in its claim cache.
func draSettled(m fwk.SharedDRAManager) bool {
	claims, err := m.ResourceClaims().List()
	if err != nil {
		return false
	}
	consumable := utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity)
	want := sets.New[structured.DeviceID]()
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess || consumable && r.ShareID != nil {
				continue
			}
			want.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
		}
	}
	got, err := m.ResourceClaims().ListAllAllocatedDevices()
	return err == nil && got.Equal(want)
}

// waitDRASettled waits for draSettled (nothing to wait for without a DRA manager).
func waitDRASettled(m fwk.SharedDRAManager) error {
	if m == nil {
		return nil
	}
	return waitFor("the scheduler's allocated devices to match its claim cache", func() bool { return draSettled(m) })
}
