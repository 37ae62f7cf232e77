package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// run on testdata/dra: allocResourceClaims takes devices the pods then cannot get, the resourceclaim
// controller releases a deleted pod's claims, a shared claim keeps its pods on one node.
func TestRunDRA(t *testing.T) {
	ws, err := parseWorkloadFile("testdata/dra/performance-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		acc        accounting
		placements map[string]string
	}{
		"DRAInitClaims": {accounting{Created: 3, Bound: 1}, map[string]string{"test/dra-pod-000000": "dra-0"}},
		"DRADeallocate": {accounting{Created: 4, Bound: 2, Deleted: 2},
			map[string]string{"second/dra-pod-000002": "dra-0", "second/dra-pod-000003": "dra-0"}},
		"DRASharedClaim": {accounting{Created: 3, Bound: 3}, map[string]string{"test/shared-pod-000000": "dra-0",
			"test/shared-pod-000001": "dra-0", "test/shared-pod-000002": "dra-0"}},
	}
	for _, w := range ws {
		want, ok := cases[w.testCase]
		if !ok || w.skip != "" {
			t.Fatalf("%s: unexpected or skipped (%s)", w.testCase, w.skip)
		}
		delete(cases, w.testCase)
		rr, err := runWorkload(w, runOptions{parallelism: 1, gates: w.gates})
		if err != nil {
			t.Fatalf("%s: %v", w.testCase, err)
		}
		a := rr.Accounting
		if a.Created != want.acc.Created || a.Bound != want.acc.Bound || a.Deleted != want.acc.Deleted || a.Lost != 0 {
			t.Errorf("%s: accounting %+v, want %+v", w.testCase, a, want.acc)
		}
		for k, n := range want.placements {
			if rr.Placements[k] != n {
				t.Errorf("%s: %s on %q, want %s (placements %v)", w.testCase, k, rr.Placements[k], n, rr.Placements)
			}
		}
	}
	if len(cases) != 0 {
		t.Fatalf("test cases missing from the file: %v", cases)
	}
}

func TestGeneratedName(t *testing.T) {
	a := generatedName("resourceclaims", "ns", "pod-gpu-", 0)
	if len(a) != len("pod-gpu-")+5 || !strings.HasPrefix(a, "pod-gpu-") {
		t.Fatalf("%q: want the prefix and 5 characters", a)
	}
	for _, c := range a[len("pod-gpu-"):] {
		if !strings.ContainsRune(generatedNameAlphabet, c) {
			t.Fatalf("%q: %c is not in the apiserver's alphabet", a, c)
		}
	}
	if generatedName("resourceclaims", "ns", "pod-gpu-", 0) != a {
		t.Fatal("not deterministic")
	}
	if generatedName("resourceclaims", "ns", "pod-gpu-", 1) == a || generatedName("resourceclaims", "other", "pod-gpu-", 0) == a {
		t.Fatal("attempt and namespace must change the name")
	}
}

// Older served versions are stored as v1 (the apiserver's conversion), and v1 defaulting applies.
func TestDecodeResourceVersions(t *testing.T) {
	objs, err := decodeObjects("t", []byte(`
apiVersion: resource.k8s.io/v1beta2
kind: DeviceClass
metadata: {name: c}
spec: {extendedResourceName: example.com/gpu, selectors: [{cel: {expression: "true"}}]}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: old}
spec: {devices: {requests: [{name: r, deviceClassName: c}]}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: new}
spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("%d objects, want 3", len(objs))
	}
	dc, ok := objs[0].(*resourceapi.DeviceClass)
	if !ok || dc.Spec.ExtendedResourceName == nil || *dc.Spec.ExtendedResourceName != "example.com/gpu" {
		t.Fatalf("v1beta2 DeviceClass: %#v", objs[0])
	}
	for _, o := range objs[1:] {
		c, ok := o.(*resourceapi.ResourceClaim)
		if !ok {
			t.Fatalf("%T, want a v1 ResourceClaim", o)
		}
		if err := normalize(c, nil); err != nil {
			t.Fatal(err)
		}
		r := c.Spec.Devices.Requests[0].Exactly
		if r == nil || r.DeviceClassName != "c" || r.AllocationMode != resourceapi.DeviceAllocationModeExactCount || r.Count != 1 || c.Namespace != "default" {
			t.Fatalf("claim %s: %+v in %q, want class c, ExactCount 1 in default", c.Name, r, c.Namespace)
		}
	}
}

func TestSteadyStateParamSkipsOnlyItsWorkloads(t *testing.T) {
	p := writeWorkload(t, `
- name: S
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, countParam: $pods, steadyStateParam: $steady, durationParam: $d}
  workloads:
  - {name: burst, params: {pods: 2, steady: false, d: 0s}}
  - {name: steady, params: {steady: true, d: 10s}}
`)
	ws, err := parseWorkloadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].skip != "" || len(ws[0].ops) != 2 || ws[0].ops[1].count != 2 {
		t.Errorf("burst: skip %q, ops %+v", ws[0].skip, ws[0].ops)
	}
	if !strings.Contains(ws[1].skip, "steadyState") {
		t.Errorf("steady: skip %q, want the steady-state reason", ws[1].skip)
	}
}

// Lockstep with DRA: the resourceclaim controller makes the pods' claims from the template, the real
// cycle allocates the node's one device, and deleting its pod frees it for the next.
func TestLockstepDRA(t *testing.T) {
	s := &server{stderr: os.Stderr}
	defer s.close()
	call := func(req string) map[string]any {
		t.Helper()
		b, err := json.Marshal(s.handle([]byte(req)))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if e, ok := m["error"]; ok {
			t.Fatalf("%s: %v", req, e)
		}
		return m
	}
	pd := func(n string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + n + `"},"spec":{"containers":[{"name":"c","image":"x",` +
			`"resources":{"claims":[{"name":"gpu"}]}}],"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one"}]}}`
	}
	call(`{"op":"init","config":null,"featureGates":{"OpportunisticBatching":false}}`)
	call(`{"op":"apply","objects":[
	 {"apiVersion":"v1","kind":"Node","metadata":{"name":"plain"},"status":{"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"}}},
	 {"apiVersion":"v1","kind":"Node","metadata":{"name":"dra"},"status":{"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"}}},
	 {"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s"},"spec":{"driver":"d.example.com","nodeName":"dra",
	  "pool":{"name":"p","generation":1,"resourceSliceCount":1},"devices":[{"name":"gpu-0"}]}},
	 {"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu"},"spec":{"selectors":[{"cel":{"expression":"device.driver == \"d.example.com\""}}]}},
	 {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"one"},"spec":{"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu"}}]}}}}]}`)
	call(`{"op":"apply","objects":[` + pd("p0") + `]}`)
	if r := call(`{"op":"schedule","namespace":"default","name":"p0"}`); r["selected"] != "dra" {
		t.Fatalf("p0: %v, want dra", r)
	}
	call(`{"op":"apply","objects":[` + pd("p1") + `]}`)
	r := call(`{"op":"schedule","namespace":"default","name":"p1"}`)
	if r["selected"] != nil || !strings.Contains(r["message"].(string), "cannot allocate all claims") {
		t.Fatalf("p1 should not fit while p0 holds the device: %v", r)
	}
	call(`{"op":"delete","objects":[{"kind":"Pod","namespace":"default","name":"p0"}]}`)
	if r := call(`{"op":"schedule","namespace":"default","name":"p1"}`); r["selected"] != "dra" {
		t.Fatalf("p1 should get the freed device: %v", r)
	}
}

// The suites whose _test.go pins the experimental allocator are recognised by their gates.
func TestPinExperimentalAllocator(t *testing.T) {
	for _, c := range []struct {
		gates map[string]bool
		want  bool
	}{
		{map[string]bool{"DynamicResourceAllocation": true, "DRAPartitionableDevices": true}, false},
		{map[string]bool{"DRADeviceCompatibilityGroups": true}, true},
		{map[string]bool{"DRADeviceCompatibilityGroups": false}, false},
		{map[string]bool{"DRAListTypeAttributes": true}, true},
		{nil, false},
	} {
		if got := pinExperimentalAllocator(c.gates); got != c.want {
			t.Errorf("pinExperimentalAllocator(%v) = %v, want %v", c.gates, got, c.want)
		}
	}
}
