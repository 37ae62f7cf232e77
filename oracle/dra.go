package main

// Dynamic Resource Allocation (resource.k8s.io/v1) in the oracle: the kinds it loads, the names an apiserver
// generates, the resourceclaim controller that scheduler_perf runs beside the scheduler, and its
// allocResourceClaims op.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/cel"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	resourceinstall "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

var (
	resourceClaimsGVR         = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}
	resourceClaimTemplatesGVR = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaimtemplates"}
	resourceSlicesGVR         = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	deviceClassesGVR          = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"}
	deviceTaintRulesGVR       = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "devicetaintrules"}
)

// draGVR maps the resource.k8s.io/v1 kinds the oracle loads to their resource.
func draGVR(obj runtime.Object) (schema.GroupVersionResource, bool) {
	switch obj.(type) {
	case *resourceapi.ResourceClaim:
		return resourceClaimsGVR, true
	case *resourceapi.ResourceClaimTemplate:
		return resourceClaimTemplatesGVR, true
	case *resourceapi.ResourceSlice:
		return resourceSlicesGVR, true
	case *resourceapi.DeviceClass:
		return deviceClassesGVR, true
	case *resourceapi.DeviceTaintRule:
		return deviceTaintRulesGVR, true
	}
	return schema.GroupVersionResource{}, false
}

// clusterScoped reports the loaded resources that have no namespace.
func clusterScoped(resource string) bool {
	switch resource {
	case "nodes", "namespaces", "priorityclasses", "persistentvolumes", "storageclasses", "csinodes",
		"csidrivers", "deviceclasses", "resourceslices", "devicetaintrules":
		return true
	}
	return false
}

// generatedNameAlphabet is the apiserver's (k8s.io/apimachinery/pkg/util/rand alphanums).
const generatedNameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// generatedName is the name an apiserver would give an object created with only generateName: the prefix
// and 5 characters of the apiserver's alphabet. The apiserver draws them at random; here they are a digest
// of (resource, namespace, prefix, attempt), so a run names the same objects the same way whatever order
// its controllers create them in. attempt counts names already taken.
func generatedName(resource, ns, prefix string, attempt int) string {
	sum := sha256.Sum256([]byte(resource + "/" + ns + "/" + prefix + "/" + strconv.Itoa(attempt)))
	v := binary.BigEndian.Uint64(sum[:8])
	b := make([]byte, 5)
	for i := range b {
		b[i] = generatedNameAlphabet[v%uint64(len(generatedNameAlphabet))]
		v /= uint64(len(generatedNameAlphabet))
	}
	return prefix + string(b)
}

// draControllerWanted says whether scheduler_perf would run the resourceclaim controller: its harness
// starts it when the test case's or workload's featureGates set DynamicResourceAllocation (util.go
// mustSetupCluster); the gate must also be on now.
func draControllerWanted(gates map[string]bool) bool {
	return gates["DynamicResourceAllocation"] && utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation)
}

// startClaimController runs the real resourceclaim controller (k8s.io/kubernetes/pkg/controller/resourceclaim,
// as test/integration/util CreateResourceClaimController builds it: 5 workers) on the given informers, which
// must not have been started yet (their Start starts the controller's informers). It creates the
// ResourceClaims of a pod's resourceClaimTemplateName entries (generateName `<pod>-<claim>-`), writes the
// pod's status.resourceClaimStatuses, removes reservedFor entries of pods that are gone or done, and then
// clears the allocation of a claim nobody uses any more.
func startClaimController(ctx context.Context, client kubernetes.Interface, inf informers.SharedInformerFactory) error {
	c, err := resourceclaim.NewController(klog.FromContext(ctx), client, inf.Core().V1().Pods(),
		inf.Scheduling().V1beta1().PodGroups(), inf.Resource().V1().ResourceClaims(),
		inf.Resource().V1().ResourceClaimTemplates())
	if err != nil {
		return fmt.Errorf("resourceclaim controller: %v", err)
	}
	go c.Run(ctx, 5)
	return nil
}

// templateClaims lists the pod's claims that come from a ResourceClaimTemplate and have no generated
// claim in status.resourceClaimStatuses yet.
func templateClaims(pod *v1.Pod) []v1.PodResourceClaim {
	have := map[string]bool{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		have[s.Name] = true
	}
	var out []v1.PodResourceClaim
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil && !have[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// materializeTemplateClaims does for explain, where no controller runs before the one cycle, what the
// resourceclaim controller does for a new pod: for each claim from a template, a ResourceClaim owned by
// the pod (generateName `<pod>-<claim>-`, the template's labels, annotations and spec, the
// resource.kubernetes.io/pod-claim-name annotation), and the pod's status.resourceClaimStatuses entry.
// Templates are looked up among objs; the new claims are returned.
func materializeTemplateClaims(pod *v1.Pod, objs []runtime.Object) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, pc := range templateClaims(pod) {
		var tmpl *resourceapi.ResourceClaimTemplate
		for _, o := range objs {
			if t, ok := o.(*resourceapi.ResourceClaimTemplate); ok && t.Namespace == pod.Namespace && t.Name == *pc.ResourceClaimTemplateName {
				tmpl = t
			}
		}
		if tmpl == nil {
			return nil, fmt.Errorf("spec.resourceClaims[%s]: no ResourceClaimTemplate %s/%s in the cluster", pc.Name, pod.Namespace, *pc.ResourceClaimTemplateName)
		}
		claim := claimFromTemplate(pod, pc.Name, tmpl)
		name := claim.Name
		out = append(out, claim)
		pod.Status.ResourceClaimStatuses = append(pod.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: &name})
	}
	sort.Slice(pod.Status.ResourceClaimStatuses, func(i, j int) bool {
		return pod.Status.ResourceClaimStatuses[i].Name < pod.Status.ResourceClaimStatuses[j].Name
	})
	return out, nil
}

// claimFromTemplate is the controller's handleClaim object (pkg/controller/resourceclaim/controller.go),
// named as generatedName names it.
func claimFromTemplate(pod *v1.Pod, podClaimName string, tmpl *resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaim {
	isTrue := true
	annotations := map[string]string{}
	for k, v := range tmpl.Spec.ObjectMeta.Annotations {
		annotations[k] = v
	}
	annotations[resourceapi.PodResourceClaimAnnotation] = podClaimName
	generateName := pod.Name + "-" + podClaimName + "-"
	const maxBaseLen = 57
	if len(generateName) > maxBaseLen {
		generateName = pod.Name[0:len(pod.Name)*maxBaseLen/len(generateName)] + "-" +
			podClaimName[0:len(podClaimName)*maxBaseLen/len(generateName)]
	}
	name := generatedName(resourceClaimsGVR.Resource, pod.Namespace, generateName, 0)
	return &resourceapi.ResourceClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, GenerateName: generateName, Namespace: pod.Namespace,
			UID: uidOf(resourceClaimsGVR.Resource, pod.Namespace, name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: &isTrue}},
			Annotations: annotations,
			Labels:      tmpl.Spec.ObjectMeta.Labels,
		},
		Spec: *tmpl.Spec.Spec.DeepCopy(),
	}
}

// allocResourceClaims is upstream's allocResourceClaimsOp (test/integration/scheduler_perf/dra.go): every
// unallocated ResourceClaim in the namespace ("" = all) gets an allocation from the structured allocator,
// written with UpdateStatus, without a pod. Upstream tries the nodes in a fresh random order per claim;
// here claim i (claims sorted by namespace/name, as an apiserver lists them) tries the nodes sorted by
// name starting at node i mod len(nodes), and takes the first that fits: deterministic, and spread over
// the nodes as upstream's random choice is.
func allocResourceClaims(ctx context.Context, client kubernetes.Interface, namespace string) error {
	claimList, err := client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("allocResourceClaims: list claims: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	inf := informers.NewSharedInformerFactory(client, 0)
	claimInformer := inf.Resource().V1().ResourceClaims().Informer()
	nodeLister := inf.Core().V1().Nodes().Lister()
	opts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            inf.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = inf.Resource().V1().DeviceTaintRules()
	}
	sliceTracker, err := resourceslicetracker.StartTracker(ctx, opts)
	if err != nil {
		return fmt.Errorf("allocResourceClaims: resource slice tracker: %v", err)
	}
	claimCache := assumecache.NewAssumeCache(logger, claimInformer, "ResourceClaim", "", nil)
	manager := dynamicresources.NewDRAManager(ctx, claimCache, sliceTracker, inf)
	inf.Start(ctx.Done())
	defer func() {
		cancel() // Shutdown waits for the informers, which stop with ctx.
		inf.Shutdown()
	}()
	inf.WaitForCacheSync(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), sliceTracker.HasSynced) {
		return fmt.Errorf("allocResourceClaims: resource slice tracker did not sync")
	}
	handle := claimCache.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if !cache.WaitForCacheSync(ctx.Done(), handle.HasSynced) {
		return fmt.Errorf("allocResourceClaims: claim cache did not sync")
	}
	celCache := cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		EnableListTypeAttributes: utilfeature.DefaultFeatureGate.Enabled(features.DRAListTypeAttributes),
	})
	nodes, err := nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	slices, err := manager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return err
	}
	items := claimList.Items
	sort.Slice(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
claims:
	for i := range items {
		claim := &items[i]
		if claim.Status.Allocation != nil {
			continue
		}
		state, err := allocatedState(manager)
		if err != nil {
			return err
		}
		allocator, err := structured.NewAllocator(ctx, structured.Features{
			PrioritizedList:      utilfeature.DefaultFeatureGate.Enabled(features.DRAPrioritizedList),
			AdminAccess:          utilfeature.DefaultFeatureGate.Enabled(features.DRAAdminAccess),
			DeviceTaints:         utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaints),
			PartitionableDevices: utilfeature.DefaultFeatureGate.Enabled(features.DRAPartitionableDevices),
			ConsumableCapacity:   utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
			CompatibilityGroups:  utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceCompatibilityGroups),
		}, state, manager.DeviceClasses(), slices, celCache)
		if err != nil {
			return fmt.Errorf("allocResourceClaims: allocator: %v", err)
		}
		for k := range nodes {
			node := nodes[(i+k)%len(nodes)]
			result, err := allocator.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return fmt.Errorf("allocResourceClaims: claim %s/%s: %v", claim.Namespace, claim.Name, err)
			}
			if result != nil {
				c := claim.DeepCopy()
				c.Status.Allocation = &result[0]
				c, err := client.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
				if err != nil {
					return fmt.Errorf("allocResourceClaims: update claim status: %v", err)
				}
				if err := manager.ResourceClaims().AssumeClaimAfterAPICall(c); err != nil {
					return fmt.Errorf("allocResourceClaims: assume claim: %v", err)
				}
				continue claims
			}
		}
		return fmt.Errorf("allocResourceClaims: could not allocate claim %d out of %d", i, len(items))
	}
	return nil
}

// allocatedState is what upstream's allocResourceClaimsOp gathers from every allocated claim.
func allocatedState(manager *dynamicresources.DefaultDRAManager) (structured.AllocatedState, error) {
	all, err := manager.ResourceClaims().List()
	if err != nil {
		return structured.AllocatedState{}, err
	}
	devices := sets.New[structured.DeviceID]()
	shared := sets.New[structured.SharedDeviceID]()
	capacity := structured.NewConsumedCapacityCollection()
	for _, c := range all {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			devices.Insert(id)
			if r.ShareID == nil {
				continue
			}
			shared.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				capacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
		}
	}
	return structured.AllocatedState{AllocatedDevices: devices, AllocatedSharedDeviceIDs: shared, AggregatedCapacity: capacity}, nil
}

// waitDRALoaded waits until the scheduler's DRA manager holds the preloaded claims and slices (its claim
// cache and slice tracker are fed by informer handlers of their own).
func waitDRALoaded(s *scheduler.Scheduler, objs []runtime.Object) error {
	m := draManagerOf(s)
	if m == nil {
		return nil
	}
	claims, slices := 0, 0
	for _, o := range objs {
		switch o.(type) {
		case *resourceapi.ResourceClaim:
			claims++
		case *resourceapi.ResourceSlice:
			slices++
		}
	}
	if err := waitFor("claims and slices in the scheduler's DRA manager", func() bool {
		c, err1 := m.ResourceClaims().List()
		s, err2 := m.ResourceSlices().ListWithDeviceTaintRules()
		return err1 == nil && err2 == nil && len(c) >= claims && len(s) >= slices
	}); err != nil {
		return err
	}
	return waitDRASettled(m)
}

// resourceScheme knows resource.k8s.io in every served version (v1alpha3, v1beta1, v1beta2, v1) and the
// internal hub, with the apiserver's conversions (pkg/apis/resource/install).
var resourceScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	resourceinstall.Install(s)
	return s
}()

// resourceInternal decodes any served version into the internal type.
var resourceInternal = serializer.NewCodecFactory(resourceScheme).UniversalDecoder()

// resourceToV1 converts one resource.k8s.io object (JSON) to its v1 type through the internal one, as the
// apiserver stores it.
func resourceToV1(js []byte, kind string) (runtime.Object, error) {
	internal, _, err := resourceInternal.Decode(js, nil, nil)
	if err != nil {
		return nil, err
	}
	obj, err := resourceScheme.ConvertToVersion(internal, resourceapi.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(resourceapi.SchemeGroupVersion.WithKind(kind))
	return obj, nil
}

// experimentalAllocatorGates are the gates of the features whose scheduler_perf suites pin upstream's
// experimental DRA allocator in their _test.go (dra/compatibilitygroups/compatibilitygroups_test.go and
// dra/listattributes/listattributes_test.go: structured.EnableAllocators("experimental")). Only the
// experimental allocator supports these features, so structured.NewAllocator would pick it anyway; the
// pin makes that explicit, as upstream's hook does.
var experimentalAllocatorGates = []string{"DRADeviceCompatibilityGroups", "DRAListTypeAttributes"}

// pinExperimentalAllocator: whether a workload with these (merged test case and workload) gates runs
// with only the experimental allocator enabled, as upstream's suite hook runs it.
func pinExperimentalAllocator(gates map[string]bool) bool {
	for _, g := range experimentalAllocatorGates {
		if gates[g] {
			return true
		}
	}
	return false
}

// pinAllocatorsFor enables only the experimental allocator when pinExperimentalAllocator says so and
// returns what re-enables every allocator (upstream's `defer structured.EnableAllocators()`).
func pinAllocatorsFor(gates map[string]bool) func() {
	if !pinExperimentalAllocator(gates) {
		return func() {}
	}
	structured.EnableAllocators("experimental")
	return func() { structured.EnableAllocators() }
}
