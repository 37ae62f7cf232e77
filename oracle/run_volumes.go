package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
