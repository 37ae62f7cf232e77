package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// volumeTemplates are a createPods op's persistentVolumeTemplatePath and
// persistentVolumeClaimTemplatePath, read as upstream's getSpecFromFile (no templating).
type volumeTemplates struct {
	pv  *v1.PersistentVolume
	pvc *v1.PersistentVolumeClaim
}

func loadVolumeTemplates(pvPath, pvcPath string) (*volumeTemplates, error) {
	t := &volumeTemplates{pv: &v1.PersistentVolume{}, pvc: &v1.PersistentVolumeClaim{}}
	for _, f := range []struct {
		path string
		into any
	}{{pvPath, t.pv}, {pvcPath, t.pvc}} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, badInput("%v", err)
		}
		if err := yaml.UnmarshalStrict(data, f.into); err != nil {
			return nil, badInput("%s: %v", f.path, err)
		}
	}
	return t, nil
}

// podVolumes creates pod i's claim and volume in namespace ns as upstream's
// CreatePodWithPersistentVolume (bindVolume) with getCustomVolumeFactory, and sets the pod's volumes.
func (r *runner) podVolumes(t *volumeTemplates, ns string, i int, pod *v1.Pod) error {
	pvcName := fmt.Sprintf("pvc-%d", i)
	pvc := t.pvc.DeepCopy()
	pvc.Name = pvcName
	pvc.Namespace = ns
	pv := t.pv.DeepCopy()
	volumeID := fmt.Sprintf("vol-%d", i)
	pv.Name = fmt.Sprintf("%s-%s", ns, volumeID)
	if pvs := pv.Spec.PersistentVolumeSource; pvs.CSI != nil {
		pvs.CSI.VolumeHandle = pv.Name
	} else if pvs.AWSElasticBlockStore != nil {
		pvs.AWSElasticBlockStore.VolumeID = volumeID
	}
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvcName, APIVersion: "v1"}
	pv.Status.Phase = v1.VolumeBound
	pvc.Spec.VolumeName = pv.Name
	pvc.Status.Phase = v1.ClaimBound
	pvc.UID = uidOf("persistentvolumeclaims", ns, pvcName)
	pv.UID = uidOf("persistentvolumes", "", pv.Name)
	if err := r.tracker.Create(kindGVR["PersistentVolumeClaim"], pvc, ns); err != nil {
		return badInput("claim %s/%s: %v", ns, pvcName, err)
	}
	if err := r.tracker.Create(kindGVR["PersistentVolume"], pv, ""); err != nil {
		return badInput("volume %s: %v", pv.Name, err)
	}
	pod.Spec.Volumes = []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvcName}}}}
	return nil
}

// createCSINode creates the CSINode of nodeAllocatableStrategy (upstream's createCSINode).
func (r *runner) createCSINode(node string, s *allocStrategy) error {
	alloc := map[string]*storagev1.VolumeNodeResources{}
	if len(s.CSINodeAllocatable) > 0 {
		if err := json.Unmarshal(s.CSINodeAllocatable, &alloc); err != nil {
			return badInput("nodeAllocatableStrategy.csiNodeAllocatable: %v", err)
		}
	}
	c := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: node,
			Annotations: map[string]string{v1.MigratedPluginsAnnotationKey: strings.Join(s.MigratedPlugins, ",")}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	for driver, a := range alloc {
		c.Spec.Drivers = append(c.Spec.Drivers, storagev1.CSINodeDriver{Name: driver, Allocatable: a, NodeID: node})
	}
	if err := r.tracker.Create(kindGVR["CSINode"], c, ""); err != nil {
		return badInput("csinode %s: %v", node, err)
	}
	return nil
}

var (
	pvGVR    = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	pvcGVR   = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	nodeGVR  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	classGVR = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
)

const (
	annBindCompleted = "pv.kubernetes.io/bind-completed"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
)

// addPVController stands in for the PV controller and a provisioner on the fake clientset, as
// schedperf's VolumeBinding PreBind does: VolumeBinding's PreBind writes a PV's claimRef (static
// binding) or a claim's selected-node annotation (provisioning) and then waits until the claim is
// fully bound. A PV written with a claimRef is marked Bound and its claim bound to it; a claim
// written with a selected node and no volume gets a new PV "pvc-<claim uid>" (the class's
// provisioner as its CSI driver, the claim's request as capacity, node affinity on the node's
// kubernetes.io/hostname label) and is bound to it. Registered before the tracker's reaction.
func addPVController(client *fake.Clientset, tr *rvTracker) {
	bindClaim := func(ns, name, pvName string) (*v1.PersistentVolumeClaim, error) {
		obj, err := tr.Get(pvcGVR, ns, name)
		if err != nil {
			return nil, err
		}
		claim := obj.(*v1.PersistentVolumeClaim).DeepCopy()
		claim.Spec.VolumeName = pvName
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, annBindCompleted, "yes")
		claim.Status.Phase = v1.ClaimBound
		return claim, tr.Update(pvcGVR, claim, ns)
	}
	client.AddReactor("update", "persistentvolumes", func(action clienttesting.Action) (bool, runtime.Object, error) {
		ua, ok := action.(clienttesting.UpdateAction)
		if !ok || action.GetSubresource() != "" {
			return false, nil, nil
		}
		pv, ok := ua.GetObject().(*v1.PersistentVolume)
		if !ok || pv.Spec.ClaimRef == nil || pv.Status.Phase == v1.VolumeBound {
			return false, nil, nil
		}
		ref := pv.Spec.ClaimRef
		if _, err := tr.Get(pvcGVR, ref.Namespace, ref.Name); err != nil {
			return false, nil, nil
		}
		pv = pv.DeepCopy()
		if pv.Spec.ClaimRef.UID == "" {
			pv.Spec.ClaimRef.UID = uidOf("persistentvolumeclaims", ref.Namespace, ref.Name)
		}
		pv.Status.Phase = v1.VolumeBound
		if err := tr.Update(pvGVR, pv, ""); err != nil {
			return true, nil, err
		}
		if _, err := bindClaim(ref.Namespace, ref.Name, pv.Name); err != nil {
			return true, nil, err
		}
		return true, pv, nil
	})
	client.AddReactor("update", "persistentvolumeclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		ua, ok := action.(clienttesting.UpdateAction)
		if !ok || action.GetSubresource() != "" {
			return false, nil, nil
		}
		claim, ok := ua.GetObject().(*v1.PersistentVolumeClaim)
		if !ok || claim.Spec.VolumeName != "" || claim.Annotations[annSelectedNode] == "" {
			return false, nil, nil
		}
		node := claim.Annotations[annSelectedNode]
		hostname := node
		if obj, err := tr.Get(nodeGVR, "", node); err == nil {
			if h, ok := obj.(*v1.Node).Labels[v1.LabelHostname]; ok {
				hostname = h
			}
		}
		uid := claim.UID
		if uid == "" {
			uid = uidOf("persistentvolumeclaims", claim.Namespace, claim.Name)
		}
		class := ""
		if claim.Spec.StorageClassName != nil {
			class = *claim.Spec.StorageClassName
		}
		driver := "provisioned"
		if obj, err := tr.Get(classGVR, "", class); err == nil {
			driver = obj.(*storagev1.StorageClass).Provisioner
		}
		pvName := "pvc-" + string(uid)
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName, UID: uidOf("persistentvolumes", "", pvName)},
			Spec: v1.PersistentVolumeSpec{
				Capacity:         v1.ResourceList{v1.ResourceStorage: claim.Spec.Resources.Requests[v1.ResourceStorage]},
				AccessModes:      claim.Spec.AccessModes,
				StorageClassName: class,
				ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: claim.Namespace, Name: claim.Name, UID: uid},
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: pvName}},
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{hostname}}},
				}}}},
			},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
		}
		// The selected-node write itself, then the volume, then the binding.
		claim = claim.DeepCopy()
		if err := tr.Update(pvcGVR, claim, claim.Namespace); err != nil {
			return true, nil, err
		}
		if err := tr.Create(pvGVR, pv, ""); err != nil {
			return true, nil, err
		}
		bound, err := bindClaim(claim.Namespace, claim.Name, pvName)
		if err != nil {
			return true, nil, err
		}
		return true, bound, nil
	})
}
