package main

import (
	"fmt"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// createPodGroups is upstream's runCreatePodGroupsOp: one PodGroup per index from the template, in the op's
// namespace, then a wait until the scheduler's cache holds every one (upstream waits for its informer).
func (r *runner) createPodGroups(o op) error {
	t, err := loadTemplate(o.templatePath)
	if err != nil {
		return err
	}
	if err := r.ensureNamespace(o.namespace); err != nil {
		return err
	}
	var created [][2]string
	for i := 0; i < o.count; i++ {
		objs, err := t.render(i, o.count, o.templateParams)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			pg, ok := obj.(*schedulingv1beta1PodGroup)
			if !ok {
				return badInput("%s: createPodGroups: the template holds a %s: expected a PodGroup", t.path,
					obj.GetObjectKind().GroupVersionKind().Kind)
			}
			pg.Namespace = o.namespace
			if err := normalize(pg, r.classes); err != nil {
				return badInput("%s: %v", t.path, err)
			}
			if err := r.tracker.Create(podGroupsGVR, pg, o.namespace); err != nil {
				return badInput("%s: podgroups %s/%s: %v", t.path, o.namespace, pg.Name, err)
			}
			created = append(created, [2]string{pg.Namespace, pg.Name})
		}
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil // Nobody watches PodGroups.
	}
	return waitFor(fmt.Sprintf("%d PodGroups in the scheduler's cache", len(created)), func() bool {
		for _, k := range created {
			if _, err := r.sched.Cache.PodGroups().Get(k[0], k[1]); err != nil {
				return false
			}
		}
		return true
	})
}

// groupAttempt is one member's part of a pod-group cycle.
type groupAttempt struct {
	retry, failed bool
	code          fwk.Code
}

// recordGroupAttempts counts a finished pod-group cycle as one attempt per member (as schedperf counts
// them), each taking an equal share of the cycle's time; called with r.mu held.
func (r *runner) recordGroupAttempts() {
	if len(r.cycleGroup) == 0 {
		return
	}
	d := time.Since(r.cycleStart).Nanoseconds() / int64(len(r.cycleGroup))
	for _, a := range r.cycleGroup {
		r.recordAttempt(d, a.failed, a.code, a.retry)
	}
	r.cycleGroup = nil
}

// recordAttempt counts one pod's scheduling attempt of d nanoseconds under its result (scheduled,
// unschedulable or error, as scheduler_perf's attempt metrics label it).
func (r *runner) recordAttempt(d int64, failed bool, code fwk.Code, retry bool) {
	result := "scheduled"
	if failed {
		result = "error"
		if code == fwk.Unschedulable || code == fwk.UnschedulableAndUnresolvable {
			result = "unschedulable"
		}
	}
	r.attempts[result] = append(r.attempts[result], d)
	r.counters.Attempts++
	switch result {
	case "scheduled":
		r.counters.Scheduled++
	case "unschedulable":
		r.counters.Unschedulable++
	default:
		r.counters.Errors++
	}
	if retry {
		r.counters.Retries++
	}
}
