package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	apiv1 "k8s.io/kubernetes/pkg/apis/core/v1"
	apischedulingv1beta1 "k8s.io/kubernetes/pkg/apis/scheduling/v1beta1"
	"sigs.k8s.io/yaml"
)

// defaulter applies the apiserver's defaulting of core/v1 and scheduling.k8s.io/v1beta1 (PodGroup's
// preemptionPolicy under PodGroupPreemptionPolicy), as a create through the API would. PodGroups get no
// Priority admission: upstream's scheduler_perf harness disables that plugin, and its files set
// spec.priority directly (schedperf reads spec.priority too).
var defaulter = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apiv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apischedulingv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

var deserializer = clientscheme.Codecs.UniversalDeserializer()

// decodeObjects reads multi-document YAML or JSON (Lists flattened). Kinds the client scheme does not know
// are skipped with a note on stderr. `source` names the input in messages.
func decodeObjects(source string, data []byte) ([]runtime.Object, error) {
	var out []runtime.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", source, i+1, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: invalid YAML: %v", source, i+1, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		objs, err := decodeOne(source, i+1, js)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func decodeOne(source string, doc int, js []byte) ([]runtime.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("%s: document %d: %v", source, doc, err)
	}
	if tm.Kind == "" {
		return nil, fmt.Errorf("%s: document %d: kind: missing", source, doc)
	}
	if tm.Kind == "List" {
		var l metav1.List
		if err := yaml.Unmarshal(js, &l); err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", source, doc, err)
		}
		var out []runtime.Object
		for _, it := range l.Items {
			objs, err := decodeOne(source, doc, it.Raw)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	if tm.APIVersion == "" {
		return nil, fmt.Errorf("%s: document %d (%s): apiVersion: missing", source, doc, tm.Kind)
	}
	if tm.Kind == "PodGroup" && tm.APIVersion == "scheduling.k8s.io/v1alpha3" {
		// The apiserver serves one PodGroup resource in both versions (their fields are the same); the
		// scheduler watches v1beta1, so a v1alpha3 object is stored as the v1beta1 one.
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %v", source, doc, tm.Kind, err)
		}
		m["apiVersion"] = "scheduling.k8s.io/v1beta1"
		js, _ = json.Marshal(m)
	}
	obj, _, err := deserializer.Decode(js, nil, nil)
	if err != nil {
		if runtime.IsNotRegisteredError(err) {
			fmt.Fprintf(os.Stderr, "note: %s: document %d: kind %s %s ignored\n", source, doc, tm.APIVersion, tm.Kind)
			return nil, nil
		}
		return nil, fmt.Errorf("%s: document %d (%s): %v", source, doc, tm.Kind, err)
	}
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", source, doc, err)
		}
		var out []runtime.Object
		for _, it := range items {
			out = append(out, keepKind(source, doc, "", it)...)
		}
		return out, nil
	}
	return keepKind(source, doc, tm.Kind, obj), nil
}

// keepKind drops (with a note) kinds the oracle does not load into the cluster.
func keepKind(source string, doc int, kind string, obj runtime.Object) []runtime.Object {
	if _, ok := clusterGVR(obj); !ok {
		if kind == "" {
			kind = fmt.Sprintf("%T", obj)
		}
		fmt.Fprintf(os.Stderr, "note: %s: document %d: kind %s ignored\n", source, doc, kind)
		return nil
	}
	return []runtime.Object{obj}
}

// normalize applies what an apiserver would on create: namespace and name defaults, a UID, the v1
// defaulting, and (for pods) the Priority admission plugin's resolution of spec.priority and the pod
// create strategy's merge of matchLabelKeys into selectors.
func normalize(obj runtime.Object, classes map[string]*schedulingv1.PriorityClass) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	gvr, _ := clusterGVR(obj)
	namespaced := gvr.Resource != "nodes" && gvr.Resource != "namespaces" && gvr.Resource != "priorityclasses" &&
		gvr.Resource != "persistentvolumes" && gvr.Resource != "storageclasses" && gvr.Resource != "csinodes" &&
		gvr.Resource != "csidrivers"
	if namespaced && acc.GetNamespace() == "" {
		acc.SetNamespace(metav1.NamespaceDefault)
	}
	if acc.GetName() == "" {
		if acc.GetGenerateName() == "" {
			return fmt.Errorf("metadata.name: missing (and no generateName)")
		}
		acc.SetName(acc.GetGenerateName() + "00000")
	}
	if acc.GetUID() == "" {
		acc.SetUID(uidOf(gvr.Resource, acc.GetNamespace(), acc.GetName()))
	}
	defaulter.Default(obj)
	if pod, ok := obj.(*v1.Pod); ok {
		if err := resolvePriority(pod, classes); err != nil {
			return err
		}
		if err := admitPodSelectors(pod); err != nil {
			return err
		}
	}
	return nil
}

// resolvePriority does what the Priority admission plugin does on pod creation: spec.priority from the
// class (or the globalDefault class), and the class's preemptionPolicy when the pod has none.
func resolvePriority(pod *v1.Pod, classes map[string]*schedulingv1.PriorityClass) error {
	var value int32
	var policy *v1.PreemptionPolicy
	name := pod.Spec.PriorityClassName
	switch {
	case name == "system-node-critical":
		value = 2000001000
	case name == "system-cluster-critical":
		value = 2000000000
	case name != "":
		pc, ok := classes[name]
		if !ok {
			return fmt.Errorf("spec.priorityClassName: no PriorityClass with name %q was found", name)
		}
		value, policy = pc.Value, pc.PreemptionPolicy
	default:
		for _, pc := range classes {
			if pc.GlobalDefault {
				value, policy = pc.Value, pc.PreemptionPolicy
			}
		}
	}
	if pod.Spec.Priority == nil {
		pod.Spec.Priority = &value
	}
	if pod.Spec.PreemptionPolicy == nil {
		p := v1.PreemptLowerPriority
		if policy != nil {
			p = *policy
		}
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

// podKey is "namespace/name".
func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// readFile reads a file, naming it in the error.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, strings.TrimPrefix(err.Error(), "open "+path+": "))
	}
	return b, nil
}

// uidOf is the UID an object gets when its manifest has none: a digest of resource, namespace and
// name, so the same object has the same UID in every run.
func uidOf(resource, ns, name string) types.UID {
	sum := sha256.Sum256([]byte(resource + "/" + ns + "/" + name))
	return types.UID(hex.EncodeToString(sum[:16]))
}
