package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	testingclock "k8s.io/utils/clock/testing"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// podGroupsGVR is where PodGroups live: v1.37.2's scheduler watches scheduling.k8s.io/v1beta1 (an
// apiserver serves a v1alpha3 object there too; decodeOne converts it).
var podGroupsGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}

// clusterGVR maps the kinds the oracle loads to their resource.
func clusterGVR(obj runtime.Object) (schema.GroupVersionResource, bool) {
	switch obj.(type) {
	case *v1.Node:
		return schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, true
	case *v1.Pod:
		return podsGVR, true
	case *v1.Namespace:
		return schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, true
	case *v1.Service:
		return schema.GroupVersionResource{Version: "v1", Resource: "services"}, true
	case *v1.ReplicationController:
		return schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, true
	case *v1.PersistentVolume:
		return schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, true
	case *v1.PersistentVolumeClaim:
		return schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, true
	case *schedulingv1.PriorityClass:
		return schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}, true
	case *policyv1.PodDisruptionBudget:
		return schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, true
	case *appsv1.ReplicaSet:
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, true
	case *appsv1.StatefulSet:
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, true
	case *storagev1.StorageClass:
		return schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}, true
	case *storagev1.CSINode:
		return schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"}, true
	case *storagev1.CSIDriver:
		return schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"}, true
	case *storagev1.CSIStorageCapacity:
		return schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csistoragecapacities"}, true
	case *schedulingv1beta1.PodGroup:
		return podGroupsGVR, true
	}
	return draGVR(obj)
}

// priorityClasses collects the PriorityClasses among objs.
func priorityClasses(objs []runtime.Object) map[string]*schedulingv1.PriorityClass {
	m := map[string]*schedulingv1.PriorityClass{}
	for _, o := range objs {
		if pc, ok := o.(*schedulingv1.PriorityClass); ok {
			m[pc.Name] = pc
		}
	}
	return m
}

// terminal reports pods the scheduler's pod informer filters out (status.phase Succeeded or Failed);
// the fake clientset ignores field selectors, so they are dropped before they reach it.
func terminal(obj runtime.Object) bool {
	p, ok := obj.(*v1.Pod)
	return ok && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
}

// env is one real Scheduler on a fake clientset, with its informers started and synced.
type env struct {
	ctx       context.Context
	cancel    context.CancelFunc
	client    *fake.Clientset
	tracker   *rvTracker // every write stamps a resourceVersion
	informers informers.SharedInformerFactory
	sched     *scheduler.Scheduler
	snapshot  *internalcache.Snapshot
	clock     *testingclock.FakeClock
	logger    klog.Logger
}

// startTime is the fake clock's origin (fixed, so runs replay).
var startTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newEnv builds scheduler.New on a fake clientset preloaded with objs (informers list them sorted by
// namespace/name, as the fake tracker does, so nodes enter the cache in name order).
func newEnv(cfg *config.KubeSchedulerConfiguration, profiles []config.KubeSchedulerProfile, pct *int32, objs []runtime.Object) (*env, error) {
	ctx, cancel := context.WithCancel(context.Background())
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	client := fake.NewClientset(objs...)
	// Every write goes through tr, which stamps a new resourceVersion as an apiserver does: the
	// scheduler drops a pod update whose resourceVersion did not change (updatePodInSchedulingQueue),
	// so without the stamp its own status patch (PodScheduled, status.nominatedNodeName) would never
	// reach the queued copy of the pod, and a nominated pod's retry would not try its node first.
	tr := &rvTracker{ObjectTracker: client.Tracker()}
	client.ReactionChain = nil
	client.WatchReactionChain = nil
	// Bind through the tracker: the fake's subresource create would drop the Binding.
	client.AddReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		ca, ok := action.(clienttesting.CreateAction)
		if !ok || action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b, ok := ca.GetObject().(*v1.Binding)
		if !ok {
			return false, nil, nil
		}
		obj, err := tr.Get(podsGVR, action.GetNamespace(), b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		pod.Spec.NodeName = b.Target.Name
		if err := tr.Update(podsGVR, pod, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, b, nil
	})
	addPVController(client, tr)
	client.AddReactor("*", "*", clienttesting.ObjectReaction(tr))
	client.AddWatchReactor("*", watchThrough(tr))
	informerFactory := scheduler.NewInformerFactory(client, 0, nil)
	clock := testingclock.NewFakeClock(startTime)
	snapshot := internalcache.NewEmptySnapshot()
	recorder := &events.FakeRecorder{}
	recorderFactory := profile.RecorderFactory(func(string) events.EventRecorderLogger { return recorder })
	sched, err := scheduler.New(ctx, client, informerFactory, nil, recorderFactory,
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithProfiles(profiles...),
		scheduler.WithParallelism(1),
		scheduler.WithPercentageOfNodesToScore(pct),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithClock(clock),
		scheduler.WithNodeInfoSnapshot(snapshot),
	)
	if err != nil {
		cancel()
		return nil, err
	}
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	if err := waitForHandlers(ctx, sched); err != nil {
		cancel()
		return nil, err
	}
	if err := waitDRALoaded(sched, objs); err != nil {
		cancel()
		return nil, err
	}
	return &env{ctx: ctx, cancel: cancel, client: client, tracker: tr, informers: informerFactory, sched: sched,
		snapshot: snapshot, clock: clock, logger: logger}, nil
}

func (e *env) close() { e.cancel() }

// waitForHandlers waits until the scheduler's event handlers have seen the informers' initial
// lists. WaitForHandlersSync polls every 100 ms; short deadlines make it poll every millisecond.
func waitForHandlers(ctx context.Context, sched *scheduler.Scheduler) error {
	for {
		c, done := context.WithTimeout(ctx, time.Millisecond)
		err := sched.WaitForHandlersSync(c)
		done()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("informers did not sync")
		}
	}
}

// defaultPreemptionOf finds the profile's DefaultPreemption instance (it is also a PreEnqueue plugin), and
// replaces its random candidate offset by 0 so the dry run visits nodes in snapshot order.
func defaultPreemptionOf(fw framework.Framework) *defaultpreemption.DefaultPreemption {
	for _, p := range fw.PreEnqueuePlugins() {
		if dp, ok := p.(*defaultpreemption.DefaultPreemption); ok {
			if _, done := dp.Evaluator.Interface.(zeroOffset); !done {
				dp.Evaluator.Interface = zeroOffset{dp}
			}
			return dp
		}
	}
	return nil
}

// zeroOffset is DefaultPreemption with GetOffsetAndNumCandidates' random offset (an unexported package
// variable bound to the global math/rand) fixed at 0; the number of candidates is upstream's.
type zeroOffset struct {
	*defaultpreemption.DefaultPreemption
}

func (z zeroOffset) GetOffsetAndNumCandidates(n int32) (int32, int32) {
	_, num := z.DefaultPreemption.GetOffsetAndNumCandidates(n)
	return 0, num
}

type ctxT = context.Context

type dpT = *defaultpreemption.DefaultPreemption

type (
	schedulingv1PriorityClass   = schedulingv1.PriorityClass
	policyv1PDB                 = policyv1.PodDisruptionBudget
	appsv1RS                    = appsv1.ReplicaSet
	appsv1SS                    = appsv1.StatefulSet
	storagev1SC                 = storagev1.StorageClass
	storagev1CSINode            = storagev1.CSINode
	storagev1CSIDriver          = storagev1.CSIDriver
	storagev1CSIStorageCapacity = storagev1.CSIStorageCapacity
	schedulingv1beta1PodGroup   = schedulingv1beta1.PodGroup
)
