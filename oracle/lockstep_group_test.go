package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestLockstepPodGroup drives upstream's pod-group cycle through scheduleGroup: a gang is gated until
// minCount pods exist, then placed whole; later members that fit nowhere fail with their own message;
// a v1alpha3 PodGroup reaches the scheduler (which watches v1beta1).
func TestLockstepPodGroup(t *testing.T) {
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
		return m
	}
	must := func(req string) map[string]any {
		t.Helper()
		m := call(req)
		if e, ok := m["error"]; ok {
			t.Fatalf("%s: %v", req, e)
		}
		return m
	}
	node := func(n string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + n + `"},"status":{"allocatable":{"cpu":"1","memory":"4Gi","pods":"110"}}}`
	}
	member := func(n string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + n + `","namespace":"ns"},"spec":{"schedulingGroup":{"podGroupName":"g"},` +
			`"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"600m"}}}]}}`
	}
	must(`{"op":"init","config":null,"featureGates":{"GenericWorkload":true}}`)
	must(`{"op":"apply","objects":[` + node("n0") + `,` + node("n1") + `]}`)
	must(`{"op":"apply","objects":[{"apiVersion":"scheduling.k8s.io/v1alpha3","kind":"PodGroup","metadata":{"name":"g","namespace":"ns"},` +
		`"spec":{"schedulingPolicy":{"gang":{"minCount":2}}}}]}`)
	must(`{"op":"apply","objects":[` + member("p0") + `]}`)
	if r := call(`{"op":"schedule","namespace":"ns","name":"p0"}`); !strings.Contains(r["error"].(string), "scheduleGroup") {
		t.Errorf("schedule of a group member should point at scheduleGroup: %v", r)
	}
	if r := must(`{"op":"scheduleGroup","namespace":"ns","name":"g"}`); r["gated"] != "GangScheduling" {
		t.Fatalf("one pod of a gang of 2 should be gated by GangScheduling: %v", r)
	}
	must(`{"op":"apply","objects":[` + member("p1") + `]}`)
	r := must(`{"op":"scheduleGroup","namespace":"ns","name":"g"}`)
	pods := r["pods"].([]any)
	nodes := map[any]bool{}
	for _, p := range pods {
		nodes[p.(map[string]any)["selected"]] = true
	}
	if len(pods) != 2 || !nodes["n0"] || !nodes["n1"] {
		t.Fatalf("the gang should take both nodes: %v", r)
	}
	must(`{"op":"apply","objects":[` + member("p2") + `]}`)
	r = must(`{"op":"scheduleGroup","namespace":"ns","name":"g"}`)
	p2 := r["pods"].([]any)[0].(map[string]any)
	if p2["selected"] != nil || p2["message"] != "0/2 nodes are available: 2 Insufficient cpu." {
		t.Fatalf("p2 fits nowhere and keeps its own message: %v", r)
	}
}
