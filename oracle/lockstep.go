package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

// settleTimeout bounds every wait for the scheduler to observe a change.
const settleTimeout = 30 * time.Second

// lockstep is one persistent Scheduler driven one operation at a time.
type lockstep struct {
	e     *env
	gates map[string]bool

	mu     sync.Mutex
	target types.UID
	// group is the run of a scheduleGroup request: the PodGroup ("ns/name") to pop, and what its cycle did.
	group    *groupRun
	parked   []framework.QueuedEntityInfo
	result   *scheduler.ScheduleResult
	scores   []fwk.NodePluginScores
	scored   bool
	failed   bool
	failMsg  string
	nominate string
	victims  []string
	victimPo []*v1.Pod
	failures chan struct{}
	// numAllNodes is the FitError's node count when the cycle found no fit.
	numAllNodes int
	// claimController: the resourceclaim controller runs (DynamicResourceAllocation on; lockstep_dra.go).
	claimController bool
}

// scoreCapture is the profile's framework with RunScorePlugins observed (the scores of the real cycle).
type scoreCapture struct {
	framework.Framework
	l *lockstep
}

func (c scoreCapture) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	s, st := c.Framework.RunScorePlugins(ctx, state, pod, nodes)
	c.l.mu.Lock()
	c.l.scores, c.l.scored = s, true
	c.l.mu.Unlock()
	return s, st
}

func newLockstep(cfg *config.KubeSchedulerConfiguration) (*lockstep, error) {
	e, err := newEnv(cfg, cfg.Profiles, cfg.PercentageOfNodesToScore, nil)
	if err != nil {
		return nil, err
	}
	l := &lockstep{e: e, gates: currentGates, failures: make(chan struct{}, 1)}
	if l.claimController, err = startLockstepClaimController(e); err != nil {
		e.close()
		return nil, err
	}
	s := e.sched
	if s.APIDispatcher != nil {
		s.APIDispatcher.Run(e.logger)
	}
	queue := s.SchedulingQueue
	// Only the requested pod is scheduled: others popped before it are parked and put back afterwards.
	s.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		for {
			ent, err := queue.Pop(logger)
			if err != nil || ent == nil {
				return ent, err
			}
			if qpi, ok := ent.(*framework.QueuedPodInfo); ok && qpi.Pod != nil && qpi.Pod.UID == l.target {
				return ent, nil
			}
			if pg, ok := ent.(*framework.QueuedPodGroupInfo); ok && l.group != nil &&
				pg.GetNamespace()+"/"+pg.GetName() == l.group.key {
				pg.ForEachPodInfo(func(pi *framework.QueuedPodInfo) bool {
					l.group.members = append(l.group.members, pi.Pod)
					return true
				})
				return ent, nil
			}
			l.parked = append(l.parked, ent)
		}
	}
	schedulePod := s.SchedulePod
	s.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, pi *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		r, err := schedulePod(ctx, scoreCapture{Framework: f, l: l}, state, pi)
		l.mu.Lock()
		if err == nil {
			l.result = &r
		} else if fe, ok := err.(*framework.FitError); ok {
			l.numAllNodes = fe.NumAllNodes
		}
		l.mu.Unlock()
		return r, err
	}
	failure := s.FailureHandler
	s.FailureHandler = func(ctx context.Context, f framework.Framework, pi *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		failure(ctx, f, pi, status, ni, start)
		if l.recordGroupFailure(pi.Pod, status, ni) {
			return
		}
		if pi.Pod.UID != l.target {
			return
		}
		l.mu.Lock()
		l.failed, l.failMsg = true, status.Message()
		if ni != nil && ni.Mode() == fwk.ModeOverride {
			l.nominate = ni.NominatedNodeName
		}
		l.mu.Unlock()
		select {
		case l.failures <- struct{}{}:
		default:
		}
	}
	for _, f := range s.Profiles {
		dp := defaultPreemptionOf(f)
		if dp == nil {
			continue
		}
		preemptPod := dp.Executor.PreemptPod
		dp.Executor.PreemptPod = func(ctx context.Context, c preemption.Candidate, p preemption.ExecutorPreemptor, victim *v1.Pod, plugin string) (bool, error) {
			l.mu.Lock()
			if l.victims == nil {
				l.victims = victimNames(c.Victims().Pods)
				l.victimPo = c.Victims().Pods
			}
			l.mu.Unlock()
			return preemptPod(ctx, c, p, victim, plugin)
		}
	}
	return l, nil
}

func (l *lockstep) close() {
	if l.e.sched.APIDispatcher != nil {
		l.e.sched.APIDispatcher.Close()
	}
	l.e.sched.SchedulingQueue.Close()
	l.e.close()
}

// waitFor polls cond until it holds.
func waitFor(what string, cond func() bool) error {
	deadline := time.Now().Add(settleTimeout)
	sleep := 50 * time.Microsecond
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(sleep)
		if sleep < 2*time.Millisecond {
			sleep *= 2
		}
	}
	return nil
}

func (l *lockstep) podLister() func(ns, name string) (*v1.Pod, error) {
	pl := l.e.informers.Core().V1().Pods().Lister()
	return func(ns, name string) (*v1.Pod, error) { return pl.Pods(ns).Get(name) }
}

// apply creates or updates objects and waits until the scheduler's cache, queue or listers show them.
func (l *lockstep) apply(raws []json.RawMessage) (any, error) {
	if err := applyGates(l.gates); err != nil {
		return nil, err
	}
	classes := map[string]*schedulingv1PC{}
	pcs, _ := l.e.informers.Scheduling().V1().PriorityClasses().Lister().List(labels.Everything())
	for _, pc := range pcs {
		classes[pc.Name] = pc
	}
	var objs []k8sruntime.Object
	for i, raw := range raws {
		decoded, err := decodeOne("objects", i+1, raw)
		if err != nil {
			return nil, err
		}
		for _, o := range decoded {
			if pc, ok := o.(*schedulingv1PC); ok {
				classes[pc.Name] = pc
			}
		}
		objs = append(objs, decoded...)
	}
	tracker := l.e.tracker
	for _, obj := range objs {
		if err := normalize(obj, classes); err != nil {
			return nil, fmt.Errorf("objects: %v", err)
		}
		gvr, _ := clusterGVR(obj)
		acc, _ := meta.Accessor(obj)
		ns, name := acc.GetNamespace(), acc.GetName()
		_, getErr := tracker.Get(gvr, ns, name)
		exists := getErr == nil
		if terminal(obj) {
			// The scheduler's pod informer never sees Succeeded/Failed pods: for it they are deleted.
			if exists {
				if err := l.deleteOne(gvr, ns, name); err != nil {
					return nil, err
				}
			}
			continue
		}
		var err error
		if exists {
			err = tracker.Update(gvr, obj, ns)
		} else {
			err = tracker.Create(gvr, obj, ns)
		}
		if err != nil {
			return nil, fmt.Errorf("objects: %s %s/%s: %v", gvr.Resource, ns, name, err)
		}
		rv := acc.GetResourceVersion() // stamped by the tracker
		if p, ok := obj.(*v1.Pod); ok {
			if rv, err = l.waitPodClaims(p, rv); err != nil {
				return nil, err
			}
		}
		if err := l.waitSeen(gvr, obj, rv); err != nil {
			return nil, err
		}
	}
	return map[string]any{"ok": true}, nil
}

type schedulingv1PC = schedulingv1PriorityClass

// waitSeen waits until the scheduler's structures hold obj at resourceVersion rv.
func (l *lockstep) waitSeen(gvr schema.GroupVersionResource, obj k8sruntime.Object, rv string) error {
	s := l.e.sched
	if done, err := l.waitSeenDRA(obj, rv); done || err != nil {
		return err
	}
	switch o := obj.(type) {
	case *v1.Node:
		return waitFor("node "+o.Name, func() bool {
			ni, err := s.Cache.GetNode(o.Name)
			return err == nil && ni.Node() != nil && ni.Node().ResourceVersion == rv
		})
	case *schedulingv1beta1PodGroup:
		if _, err := s.Cache.PodGroups().Get(o.Namespace, o.Name); err != nil && err.Error() == "generic workload feature gate is disabled" {
			return nil // The scheduler does not watch PodGroups with GenericWorkload off.
		}
		// At least this version: the scheduler may have written the group's status since.
		return waitFor("PodGroup "+o.Namespace+"/"+o.Name+" in the scheduler's cache", func() bool {
			pg, err := s.Cache.PodGroups().Get(o.Namespace, o.Name)
			return err == nil && rvAtLeast(pg.ResourceVersion, rv)
		})
	case *v1.Pod:
		key := podKey(o)
		if o.Spec.NodeName != "" {
			return waitFor("pod "+key+" in the cache", func() bool {
				p, err := s.Cache.GetPod(o)
				return err == nil && p.ResourceVersion == rv
			})
		}
		if _, ours := s.Profiles[o.Spec.SchedulerName]; ours {
			return waitFor("pod "+key+" in the scheduling queue", func() bool {
				qpi, ok := s.SchedulingQueue.GetPod(o.Name, o.Namespace, o.Spec.SchedulingGroup)
				return ok && qpi.Pod.ResourceVersion == rv
			})
		}
	}
	gi, err := l.e.informers.ForResource(gvr)
	if err != nil || !gi.Informer().HasSynced() {
		return nil // Nobody in the scheduler watches this kind.
	}
	acc, _ := meta.Accessor(obj)
	key := acc.GetName()
	if acc.GetNamespace() != "" {
		key = acc.GetNamespace() + "/" + key
	}
	return waitFor(gvr.Resource+" "+key, func() bool {
		got, exists, err := gi.Informer().GetIndexer().GetByKey(key)
		if err != nil || !exists {
			return false
		}
		a, err := meta.Accessor(got)
		return err == nil && a.GetResourceVersion() == rv
	})
}

type objectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

var kindGVR = map[string]schema.GroupVersionResource{}

func init() {
	for kind, obj := range map[string]k8sruntime.Object{
		"Node": &v1.Node{}, "Pod": &v1.Pod{}, "Namespace": &v1.Namespace{}, "Service": &v1.Service{},
		"ReplicationController": &v1.ReplicationController{}, "PersistentVolume": &v1.PersistentVolume{},
		"PersistentVolumeClaim": &v1.PersistentVolumeClaim{}, "PriorityClass": &schedulingv1PriorityClass{},
		"PodDisruptionBudget": &policyv1PDB{}, "ReplicaSet": &appsv1RS{}, "StatefulSet": &appsv1SS{},
		"StorageClass": &storagev1SC{}, "CSINode": &storagev1CSINode{}, "PodGroup": &schedulingv1beta1PodGroup{},
		"ResourceClaim": &resourceapi.ResourceClaim{}, "ResourceClaimTemplate": &resourceapi.ResourceClaimTemplate{},
		"ResourceSlice": &resourceapi.ResourceSlice{}, "DeviceClass": &resourceapi.DeviceClass{},
		"DeviceTaintRule": &resourceapi.DeviceTaintRule{},
		"CSIDriver":       &storagev1CSIDriver{}, "CSIStorageCapacity": &storagev1CSIStorageCapacity{},
	} {
		gvr, _ := clusterGVR(obj)
		kindGVR[kind] = gvr
	}
}

// delete removes objects and waits until the scheduler no longer holds them.
func (l *lockstep) delete(raws []json.RawMessage) (any, error) {
	if err := applyGates(l.gates); err != nil {
		return nil, err
	}
	for i, raw := range raws {
		var ref objectRef
		if err := json.Unmarshal(raw, &ref); err != nil {
			return nil, fmt.Errorf("objects[%d]: %v", i, err)
		}
		gvr, ok := kindGVR[ref.Kind]
		if !ok {
			return nil, fmt.Errorf("objects[%d].kind: unsupported %q", i, ref.Kind)
		}
		ns := ref.Namespace
		if ns == "" && !clusterScoped(gvr.Resource) {
			ns = "default"
		}
		if err := l.deleteOne(gvr, ns, ref.Name); err != nil {
			return nil, fmt.Errorf("objects[%d]: %v", i, err)
		}
	}
	return map[string]any{"ok": true}, nil
}

func (l *lockstep) deleteOne(gvr schema.GroupVersionResource, ns, name string) error {
	tracker := l.e.tracker
	obj, err := tracker.Get(gvr, ns, name)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	if err := tracker.Delete(gvr, ns, name); err != nil {
		return fmt.Errorf("%s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return l.waitGone(gvr, obj)
}

func (l *lockstep) waitGone(gvr schema.GroupVersionResource, obj k8sruntime.Object) error {
	s := l.e.sched
	if done, err := l.waitGoneDRA(obj); done || err != nil {
		return err
	}
	switch o := obj.(type) {
	case *v1.Node:
		return waitFor("node "+o.Name+" removed", func() bool {
			ni, err := s.Cache.GetNode(o.Name)
			return err != nil || ni.Node() == nil
		})
	case *v1.Pod:
		get := l.podLister()
		return waitFor("pod "+podKey(o)+" removed", func() bool {
			if _, err := get(o.Namespace, o.Name); err == nil {
				return false
			}
			if _, err := s.Cache.GetPod(o); err == nil {
				return false
			}
			_, queued := s.SchedulingQueue.GetPod(o.Name, o.Namespace, o.Spec.SchedulingGroup)
			return !queued
		})
	}
	gi, err := l.e.informers.ForResource(gvr)
	if err != nil || !gi.Informer().HasSynced() {
		return nil
	}
	acc, _ := meta.Accessor(obj)
	key := acc.GetName()
	if acc.GetNamespace() != "" {
		key = acc.GetNamespace() + "/" + key
	}
	return waitFor(gvr.Resource+" "+key+" removed", func() bool {
		_, exists, err := gi.Informer().GetIndexer().GetByKey(key)
		return err == nil && !exists
	})
}

type scheduleResponse struct {
	Pod            string   `json:"pod"`
	Selected       *string  `json:"selected"`
	EvaluatedNodes int      `json:"evaluatedNodes"`
	FeasibleNodes  int      `json:"feasibleNodes"`
	Message        *string  `json:"message"`
	NominatedNode  *string  `json:"nominatedNode"`
	Victims        []string `json:"victims"`
	TopNodes       []string `json:"topNodes"`
	// Batch is what OpportunisticBatching did in this cycle.
	Batch *batchInfo `json:"batch"`
}

// schedule runs one real scheduling cycle (ScheduleOne) for the named pending pod and waits until its
// outcome is settled.
func (l *lockstep) schedule(ns, name string) (any, error) {
	if err := applyGates(l.gates); err != nil {
		return nil, err
	}
	if ns == "" {
		ns = "default"
	}
	s := l.e.sched
	key := ns + "/" + name
	pod, err := l.podLister()(ns, name)
	if err != nil {
		return nil, fmt.Errorf("schedule: pod %s: %v", key, err)
	}
	if pod.Spec.NodeName != "" {
		return nil, fmt.Errorf("schedule: pod %s is already bound to %s", key, pod.Spec.NodeName)
	}
	if _, ok := s.Profiles[pod.Spec.SchedulerName]; !ok {
		return nil, fmt.Errorf("schedule: pod %s: spec.schedulerName %q has no profile", key, pod.Spec.SchedulerName)
	}
	if g := groupOf(pod); g != "" && utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil, fmt.Errorf("schedule: pod %s is a member of PodGroup %s: use scheduleGroup", key, g)
	}
	if !l.inActiveQ(pod.UID) {
		s.SchedulingQueue.Activate(l.e.logger, map[string]*v1.Pod{key: pod})
	}
	if !l.inActiveQ(pod.UID) {
		qpi, ok := s.SchedulingQueue.GetPod(name, ns, pod.Spec.SchedulingGroup)
		if ok && qpi.GatingPlugin != "" {
			return nil, fmt.Errorf("schedule: pod %s is gated by PreEnqueue plugin %s", key, qpi.GatingPlugin)
		}
		return nil, fmt.Errorf("schedule: pod %s is not in the scheduling queue", key)
	}
	l.mu.Lock()
	l.target, l.parked, l.result, l.scores, l.scored, l.numAllNodes = pod.UID, nil, nil, nil, false, 0
	l.failed, l.failMsg, l.nominate, l.victims, l.victimPo = false, "", "", nil, nil
	l.mu.Unlock()
	select {
	case <-l.failures:
	default:
	}

	batchBefore := batchCounters()
	if err := l.scheduleOneWithin(s); err != nil {
		return nil, fmt.Errorf("schedule: pod %s: %w", key, err)
	}
	l.unpark()

	l.mu.Lock()
	result := l.result
	l.mu.Unlock()
	if result != nil {
		// Bound and confirmed in the cache, or the binding cycle failed.
		err := waitFor("pod "+key+" bound", func() bool {
			l.mu.Lock()
			failed := l.failed
			l.mu.Unlock()
			if failed {
				return true
			}
			p, err := l.podLister()(ns, name)
			if err != nil || p.Spec.NodeName == "" {
				return false
			}
			assumed, err := s.Cache.IsAssumedPod(p)
			return err == nil && !assumed
		})
		if err != nil {
			return nil, err
		}
		// PreBind's claim updates: the next cycle must see the devices taken (lockstep_dra.go).
		if err := waitDRASettled(draManagerOf(s)); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	failed := l.failed
	l.mu.Unlock()
	if failed {
		if err := l.settlePreemption(pod); err != nil {
			return nil, err
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	resp := &scheduleResponse{Pod: key, Victims: []string{}, Batch: batchDelta(batchBefore, batchCounters(), s.SchedulingQueue.SchedulingCycle())}
	if l.failed {
		msg := l.failMsg
		resp.Message = &msg
		if l.nominate != "" {
			nn := l.nominate
			resp.NominatedNode = &nn
		}
		if l.victims != nil {
			resp.Victims = l.victims
		}
	} else if result != nil {
		sel := result.SuggestedHost
		resp.Selected = &sel
	}
	if result != nil {
		resp.EvaluatedNodes, resp.FeasibleNodes = result.EvaluatedNodes, result.FeasibleNodes
	} else {
		resp.EvaluatedNodes = l.numAllNodes
	}
	if l.scored {
		var best int64
		for i, ns := range l.scores {
			if i == 0 || ns.TotalScore > best {
				best = ns.TotalScore
			}
		}
		resp.TopNodes = []string{}
		for _, ns := range l.scores {
			if ns.TotalScore == best {
				resp.TopNodes = append(resp.TopNodes, ns.Name)
			}
		}
	}
	return resp, nil
}

// settlePreemption waits for an asynchronous preemption to finish, its victims to leave the cache, and
// the nominated node to reach the pod object.
func (l *lockstep) settlePreemption(pod *v1.Pod) error {
	s := l.e.sched
	for _, f := range s.Profiles {
		if dp := defaultPreemptionOf(f); dp != nil {
			if err := waitFor("preemption by "+podKey(pod), func() bool { return !dp.Executor.IsPodRunningPreemption(pod.UID) }); err != nil {
				return err
			}
		}
	}
	l.mu.Lock()
	victims := append([]*v1.Pod(nil), l.victimPo...)
	nominated := l.nominate
	l.mu.Unlock()
	get := l.podLister()
	for _, v := range victims {
		if err := waitFor("victim "+podKey(v)+" deleted", func() bool {
			if _, err := get(v.Namespace, v.Name); err == nil {
				return false
			}
			_, err := s.Cache.GetPod(v)
			return err != nil
		}); err != nil {
			return err
		}
	}
	if nominated != "" {
		return waitFor("nominated node of "+podKey(pod), func() bool {
			p, err := get(pod.Namespace, pod.Name)
			return err != nil || p.Status.NominatedNodeName == nominated
		})
	}
	return nil
}

func cutKey(k string) (string, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return "", k, false
}

func (l *lockstep) inActiveQ(uid types.UID) bool {
	for _, p := range l.e.sched.SchedulingQueue.PodsInActiveQ() {
		if p.UID == uid {
			return true
		}
	}
	return false
}

// unpark returns pods popped before the requested one to the active queue.
func (l *lockstep) unpark() {
	q := l.e.sched.SchedulingQueue
	for _, ent := range l.parked {
		if pg, ok := ent.(*framework.QueuedPodGroupInfo); ok {
			// Each member goes back as an unschedulable pod of its group (Done, then into a new entity in
			// activeQ, or the group's entity if one formed meanwhile).
			var pods map[string]*v1.Pod
			pg.ForEachPodInfo(func(pi *framework.QueuedPodInfo) bool {
				if err := q.AddUnschedulablePodIfNotPresent(l.e.logger, pi, q.SchedulingCycle()); err == nil {
					if pods == nil {
						pods = map[string]*v1.Pod{}
					}
					pods[podKey(pi.Pod)] = pi.Pod
				}
				return true
			})
			if pods != nil {
				q.Activate(l.e.logger, pods)
			}
			continue
		}
		qpi, ok := ent.(*framework.QueuedPodInfo)
		if !ok || qpi.Pod == nil {
			continue
		}
		if err := q.AddUnschedulablePodIfNotPresent(l.e.logger, qpi, q.SchedulingCycle()); err == nil {
			q.Activate(l.e.logger, map[string]*v1.Pod{podKey(qpi.Pod): qpi.Pod})
		}
	}
	l.parked = nil
}

type stateResponse struct {
	Pods  map[string]string `json:"pods"`
	Nodes []string          `json:"nodes"`
}

func (l *lockstep) state() (any, error) {
	pods, err := l.e.informers.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	resp := stateResponse{Pods: map[string]string{}, Nodes: []string{}}
	for _, p := range pods {
		resp.Pods[podKey(p)] = p.Spec.NodeName
	}
	snap := internalcache.NewEmptySnapshot()
	if err := l.e.sched.Cache.UpdateSnapshot(l.e.logger, snap); err != nil {
		return nil, err
	}
	nodes, err := snap.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		resp.Nodes = append(resp.Nodes, n.Node().Name)
	}
	return resp, nil
}

func (l *lockstep) advance(seconds float64) (any, error) {
	if seconds < 0 {
		return nil, fmt.Errorf("seconds: must be >= 0")
	}
	l.e.clock.Step(time.Duration(seconds * float64(time.Second)))
	return map[string]any{"ok": true}, nil
}

// scheduleOneWithin runs one ScheduleOne, failing when the cycle does not finish within settleTimeout.
func (l *lockstep) scheduleOneWithin(s *scheduler.Scheduler) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ScheduleOne(l.e.ctx)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(settleTimeout):
		return fmt.Errorf("the scheduling cycle did not finish")
	}
}
