package main

// The lockstep's pod-group cycle: `scheduleGroup` pops one PodGroup's queue entity and runs one real
// ScheduleOne on it (upstream's scheduleOnePodGroup: validate, the trial of every queued member, then the
// binding cycles of a feasible group's pods or the failure handler of each member), and reports each
// member's outcome.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// groupRun is what one scheduleGroup request observed.
type groupRun struct {
	key string
	// members are the pods of the popped entity, in its order.
	members []*v1.Pod
	// failed holds the failure handler's status message and nomination per member.
	failed map[types.UID]groupFailure
}

type groupFailure struct {
	message, nominated string
}

// groupOf is "ns/name" of the PodGroup a pod names ("" when it names none).
func groupOf(pod *v1.Pod) string {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return pod.Namespace + "/" + *sg.PodGroupName
	}
	return ""
}

// recordGroupFailure records a member's failure during a scheduleGroup request; false when no group
// request is running or the pod is not one of its members.
func (l *lockstep) recordGroupFailure(pod *v1.Pod, status *fwk.Status, ni *fwk.NominatingInfo) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.group == nil || groupOf(pod) != l.group.key {
		return false
	}
	f := groupFailure{message: status.Message()}
	if ni != nil && ni.Mode() == fwk.ModeOverride {
		f.nominated = ni.NominatedNodeName
	}
	l.group.failed[pod.UID] = f
	return true
}

type groupMemberResponse struct {
	Pod           string  `json:"pod"`
	Selected      *string `json:"selected"`
	Message       *string `json:"message"`
	NominatedNode *string `json:"nominatedNode"`
}

type scheduleGroupResponse struct {
	PodGroup string `json:"podGroup"`
	// Gated names the PreEnqueue plugin that keeps the group's entity out of activeQ (no cycle ran).
	Gated *string `json:"gated"`
	// Pods are the members the cycle attempted, in the entity's order.
	Pods    []groupMemberResponse `json:"pods"`
	Victims []string              `json:"victims"`
}

// scheduleGroup runs one pod-group scheduling cycle for the PodGroup ns/name and waits until every
// member's outcome is settled (bound and confirmed in the cache, or failed and handled).
func (l *lockstep) scheduleGroup(ns, name string) (any, error) {
	if err := applyGates(l.gates); err != nil {
		return nil, err
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil, fmt.Errorf("scheduleGroup: the GenericWorkload feature gate is off")
	}
	if ns == "" {
		ns = "default"
	}
	key := ns + "/" + name
	s := l.e.sched
	q := s.SchedulingQueue
	// The group's informer handler adds the group to the queue right after the cache; its members may
	// still be on their way from the pod informer.
	var pods map[string]*v1.Pod
	gated := ""
	if err := waitFor("the queue entity of PodGroup "+key, func() bool {
		pg, ok := q.GetPodGroup(name, ns, fwk.PodGroupKeyType)
		if !ok {
			return false
		}
		pods, gated = map[string]*v1.Pod{}, pg.GatingPlugin
		pg.ForEachPodInfo(func(pi *framework.QueuedPodInfo) bool {
			pods[podKey(pi.Pod)] = pi.Pod
			return true
		})
		return len(pods) > 0
	}); err != nil {
		return nil, fmt.Errorf("scheduleGroup: %v", err)
	}
	if gated != "" {
		return &scheduleGroupResponse{PodGroup: key, Gated: &gated, Pods: []groupMemberResponse{}, Victims: []string{}}, nil
	}
	inActiveQ := func() bool {
		for _, p := range q.PodsInActiveQ() {
			if _, ok := pods[podKey(p)]; ok {
				return true
			}
		}
		return false
	}
	if !inActiveQ() {
		q.Activate(l.e.logger, pods)
	}
	if !inActiveQ() {
		return nil, fmt.Errorf("scheduleGroup: PodGroup %s: its entity is not in the scheduling queue", key)
	}
	l.mu.Lock()
	l.target, l.parked, l.result, l.scores, l.scored, l.numAllNodes = "", nil, nil, nil, false, 0
	l.failed, l.failMsg, l.nominate, l.victims, l.victimPo = false, "", "", nil, nil
	l.group = &groupRun{key: key, failed: map[types.UID]groupFailure{}}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.group = nil
		l.mu.Unlock()
	}()
	if err := l.scheduleOneWithin(s); err != nil {
		return nil, fmt.Errorf("scheduleGroup: PodGroup %s: %w", key, err)
	}
	l.unpark()

	l.mu.Lock()
	members := append([]*v1.Pod(nil), l.group.members...)
	l.mu.Unlock()
	get := l.podLister()
	resp := &scheduleGroupResponse{PodGroup: key, Pods: []groupMemberResponse{}, Victims: []string{}}
	for _, m := range members {
		// Every member either failed in the cycle (the failure handler ran before ScheduleOne returned)
		// or is in its binding cycle: wait for the bind (or the binding cycle's failure).
		var node string
		if err := waitFor("member "+podKey(m)+" bound", func() bool {
			l.mu.Lock()
			_, failed := l.group.failed[m.UID]
			l.mu.Unlock()
			if failed {
				return true
			}
			p, err := get(m.Namespace, m.Name)
			if err != nil || p.Spec.NodeName == "" {
				return false
			}
			assumed, err := s.Cache.IsAssumedPod(p)
			node = p.Spec.NodeName
			return err == nil && !assumed
		}); err != nil {
			return nil, err
		}
		l.mu.Lock()
		f, failed := l.group.failed[m.UID]
		l.mu.Unlock()
		r := groupMemberResponse{Pod: podKey(m)}
		if failed {
			msg := f.message
			r.Message = &msg
			if f.nominated != "" {
				nn := f.nominated
				r.NominatedNode = &nn
			}
		} else {
			n := node
			r.Selected = &n
		}
		resp.Pods = append(resp.Pods, r)
	}
	// Victims of a group preemption: wait until they are gone.
	l.mu.Lock()
	victims := append([]*v1.Pod(nil), l.victimPo...)
	if l.victims != nil {
		resp.Victims = l.victims
	}
	l.mu.Unlock()
	for _, v := range victims {
		if err := waitFor("victim "+podKey(v)+" deleted", func() bool {
			if _, err := get(v.Namespace, v.Name); err == nil {
				return false
			}
			_, err := s.Cache.GetPod(v)
			return err != nil
		}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}
