package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testNodes = `
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
spec: {taints: [{key: dedicated, value: x, effect: NoSchedule}]}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {kubernetes.io/hostname: n3}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}, capacity: {cpu: "2", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: default}
spec:
  nodeName: n3
  priority: 0
  containers: [{name: c, image: x, resources: {requests: {cpu: "1500m"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec:
  nodeName: n2
  priority: 5
  containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]
`

func pod(extra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + extra
}

func TestExplain(t *testing.T) {
	cases := []struct {
		name       string
		pod        string
		selected   string            // "" = none
		filters    map[string]string // node -> "plugin code" ("" = feasible)
		nominated  string
		victims    []string
		messageHas string
	}{{
		name:     "a pod that fits goes to the only node with room",
		pod:      pod("  containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]\n"),
		selected: "n2",
		filters:  map[string]string{"n1": "TaintToleration UnschedulableAndUnresolvable", "n2": "", "n3": ""},
	}, {
		name:     "a toleration opens the tainted node",
		pod:      pod("  tolerations: [{key: dedicated, operator: Exists}]\n  containers: [{name: c, image: x, resources: {requests: {cpu: 3500m}}}]\n"),
		selected: "n1",
		filters:  map[string]string{"n1": "", "n2": "NodeResourcesFit Unschedulable", "n3": "NodeResourcesFit UnschedulableAndUnresolvable"},
	}, {
		name:       "a high-priority pod that fits nowhere preempts the lowest-priority victim",
		pod:        pod("  priority: 100\n  containers: [{name: c, image: x, resources: {requests: {cpu: 1500m}}}]\n"),
		filters:    map[string]string{"n1": "TaintToleration UnschedulableAndUnresolvable", "n2": "NodeResourcesFit Unschedulable", "n3": "NodeResourcesFit Unschedulable"},
		messageHas: "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. preemption: found a potential placement for pod on node n3, preempting 1 victims",
		victims:    []string{"default/low"},
	}, {
		name:       "a missing PVC is rejected at PreFilter for every node",
		pod:        pod("  volumes: [{name: v, persistentVolumeClaim: {claimName: nope}}]\n  containers: [{name: c, image: x}]\n"),
		filters:    map[string]string{"n1": "VolumeRestrictions UnschedulableAndUnresolvable", "n2": "VolumeRestrictions UnschedulableAndUnresolvable", "n3": "VolumeRestrictions UnschedulableAndUnresolvable"},
		messageHas: `persistentvolumeclaim "nope" not found`,
	}, {
		name:       "nodes outside a PreFilterResult did not satisfy the plugin",
		pod:        pod("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n3]}]}]}}}\n  containers: [{name: c, image: x}]\n"),
		selected:   "n3",
		filters:    map[string]string{"n1": "NodeAffinity UnschedulableAndUnresolvable", "n2": "NodeAffinity UnschedulableAndUnresolvable", "n3": ""},
		messageHas: "",
	}}
	if err := applyGates(nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := decodeObjects("cluster", []byte(testNodes))
			if err != nil {
				t.Fatal(err)
			}
			p, err := decodePod("pod", []byte(tc.pod))
			if err != nil {
				t.Fatal(err)
			}
			out, err := explainPod(cfg, cluster, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(out.Nodes); got != "n1,n2,n3" {
				t.Errorf("node order %s, want n1,n2,n3 (informer list order)", got)
			}
			sel := ""
			if out.Selected != nil {
				sel = *out.Selected
			}
			if sel != tc.selected {
				t.Errorf("selected %q, want %q", sel, tc.selected)
			}
			for _, n := range out.Nodes {
				got := ""
				if n.Filter != nil {
					got = n.Filter.Plugin + " " + n.Filter.Code
				}
				if got != tc.filters[n.Name] {
					t.Errorf("node %s: filter %q, want %q", n.Name, got, tc.filters[n.Name])
				}
				if n.Feasible != (n.Scores != nil) || n.Feasible != (n.TotalScore != nil) {
					t.Errorf("node %s: scores present iff feasible", n.Name)
				}
			}
			msg := ""
			if out.Message != nil {
				msg = *out.Message
			}
			if (tc.messageHas == "") != (msg == "") && tc.selected == "" || !strings.Contains(msg, tc.messageHas) {
				t.Errorf("message %q, want it to contain %q", msg, tc.messageHas)
			}
			if tc.victims != nil {
				if out.Preemption == nil || out.Preemption.NominatedNode == nil || *out.Preemption.NominatedNode != "n3" {
					t.Fatalf("preemption %+v, want nomination on n3", out.Preemption)
				}
				if strings.Join(out.Preemption.Victims, ",") != strings.Join(tc.victims, ",") {
					t.Errorf("victims %v, want %v", out.Preemption.Victims, tc.victims)
				}
				if len(out.Preemption.Candidates) != 2 || out.Preemption.Candidates[0].Node != "n2" || out.Preemption.Candidates[1].Node != "n3" {
					t.Errorf("candidates %+v, want n2 and n3 sorted by name", out.Preemption.Candidates)
				}
			}
		})
	}
}

func names(ns []nodeExplanation) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

// TestLockstep drives one scheduler: three nodes, pods, a delete, a preemption.
func TestLockstep(t *testing.T) {
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
	node := func(n string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + n + `"},"status":{"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"}}}`
	}
	pd := func(n string, prio int) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + n + `"},"spec":{"priority":` + itoa(prio) +
			`,"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1500m"}}}]}}`
	}
	call(`{"op":"init","config":null,"featureGates":{"OpportunisticBatching":false}}`)
	call(`{"op":"apply","objects":[` + node("n3") + `,` + node("n1") + `,` + node("n2") + `]}`)
	placed := map[string]bool{}
	for _, p := range []string{"p0", "p1", "p2"} {
		call(`{"op":"apply","objects":[` + pd(p, 0) + `]}`)
		r := call(`{"op":"schedule","namespace":"default","name":"` + p + `"}`)
		sel, _ := r["selected"].(string)
		if sel == "" || placed[sel] {
			t.Fatalf("%s: selected %v (each pod needs its own node)", p, r["selected"])
		}
		placed[sel] = true
	}
	st := call(`{"op":"state"}`)
	if got := st["nodes"].([]any); len(got) != 3 || got[0] != "n3" || got[1] != "n1" || got[2] != "n2" {
		t.Errorf("node order %v, want event order n3,n1,n2", got)
	}
	call(`{"op":"apply","objects":[` + pd("p3", 0) + `]}`)
	r := call(`{"op":"schedule","namespace":"default","name":"p3"}`)
	if r["selected"] != nil || !strings.Contains(r["message"].(string), "Insufficient cpu") {
		t.Fatalf("p3 should not fit: %v", r)
	}
	freed := st["pods"].(map[string]any)["default/p1"].(string)
	call(`{"op":"delete","objects":[{"kind":"Pod","namespace":"default","name":"p1"}]}`)
	if r := call(`{"op":"schedule","namespace":"default","name":"p3"}`); r["selected"] != freed {
		t.Fatalf("p3 should take the freed node %s: %v", freed, r)
	}
	call(`{"op":"apply","objects":[` + pd("hi", 100) + `]}`)
	r = call(`{"op":"schedule","namespace":"default","name":"hi"}`)
	nn, _ := r["nominatedNode"].(string)
	victims := r["victims"].([]any)
	if nn == "" || len(victims) != 1 {
		t.Fatalf("hi should preempt one pod: %v", r)
	}
	st = call(`{"op":"state"}`)
	if _, still := st["pods"].(map[string]any)[victims[0].(string)]; still {
		t.Errorf("victim %v not deleted", victims[0])
	}
	if r := call(`{"op":"schedule","namespace":"default","name":"hi"}`); r["selected"] != nn {
		t.Errorf("hi should land on its nominated node %s: %v", nn, r)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cluster := write("cluster.yaml", testNodes)
	good := write("pod.yaml", pod("  containers: [{name: c, image: x}]\n"))
	badYAML := write("bad.yaml", "kind: Pod\n  metadata: [\n")
	unknownField := write("unknown.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogusField: 1\n")
	invalid := write("invalid.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 200\n")
	cases := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unreadable file", []string{"explain", "--cluster", filepath.Join(dir, "missing.yaml"), "--pod", good}, "missing.yaml"},
		{"invalid YAML", []string{"explain", "--cluster", badYAML, "--pod", good}, "bad.yaml"},
		{"unknown config field", []string{"explain", "--cluster", cluster, "--pod", good, "--config", unknownField}, "bogusField"},
		{"invalid config", []string{"explain", "--cluster", cluster, "--pod", good, "--config", invalid}, "percentageOfNodesToScore"},
		{"unknown feature gate", []string{"explain", "--cluster", cluster, "--pod", good, "--feature-gates", "NoSuchGate=true"}, "NoSuchGate"},
		{"unknown flag", []string{"explain", "--frobnicate"}, "frobnicate"},
		{"no pod", []string{"explain", "--cluster", cluster}, "--pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errb)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
			if !strings.Contains(errb.String(), tc.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
				t.Errorf("stderr %q, want one line naming %q", errb.String(), tc.want)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run([]string{"explain", "--cluster", cluster, "--pod", good, "--output", "json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("good input: exit %d: %s", code, errb.String())
	}
}

// TestServeAnswersEveryLine: one response line per request line, errors included.
func TestServeAnswersEveryLine(t *testing.T) {
	explain, _ := json.Marshal(map[string]any{"op": "explain", "cluster": testNodes,
		"pod": pod("  containers: [{name: c, image: x}]\n"), "config": nil, "featureGates": nil})
	in := string(explain) + "\n{not json\n" + `{"op":"schedule","name":"p"}` + "\n" + `{"op":"nope"}` + "\n"
	var out bytes.Buffer
	if err := serve(strings.NewReader(in), &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d response lines, want 4: %q", len(lines), out.String())
	}
	var first explanation
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Selected == nil || *first.Selected != "n2" {
		t.Errorf("explain answered %s", lines[0])
	}
	for _, l := range lines[1:] {
		var e errorResponse
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Error == "" {
			t.Errorf("want an error response, got %s", l)
		}
	}
}
