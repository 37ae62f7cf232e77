package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestThroughputCollector(t *testing.T) {
	// 100 pods evenly over 1 s: 25 intervals of 40 ms, 4 pods each -> 100 pods/s everywhere.
	var even []int64
	for i := int64(0); i < 100; i++ {
		even = append(even, i*10_000_000)
	}
	tp := throughput(even, 1_000_000_000)
	if len(tp.Samples) != 25 || math.Abs(tp.Average-100) > 1e-9 || math.Abs(tp.P50-100) > 1e-9 || math.Abs(tp.P99-100) > 1e-9 {
		t.Fatalf("even: %+v", tp)
	}
	// Every pod in the last interval: the empty intervals merge into it, 25 samples of 100/s.
	late := make([]int64, 100)
	for i := range late {
		late[i] = 990_000_000
	}
	tp = throughput(late, 1_000_000_000)
	if len(tp.Samples) != 25 || math.Abs(tp.P50-100) > 1e-9 {
		t.Fatalf("late: %+v", tp)
	}
	// Half early, half late.
	var split []int64
	for i := 0; i < 50; i++ {
		split = append(split, 1)
	}
	for i := 0; i < 50; i++ {
		split = append(split, 999_000_000)
	}
	tp = throughput(split, 1_000_000_000)
	if math.Abs(tp.Samples[0]-50/0.04) > 1e-6 || math.Abs(tp.Samples[1]-50/0.96) > 1e-6 {
		t.Fatalf("split: %v", tp.Samples[:2])
	}
	// Long windows sample every second (scheduler_perf's interval).
	tp = throughput([]int64{1, 59_000_000_000}, 60_000_000_000)
	if tp.IntervalSeconds != 1 || len(tp.Samples) != 60 {
		t.Fatalf("long: interval %v, %d samples", tp.IntervalSeconds, len(tp.Samples))
	}
	if tp := throughput(nil, 10); len(tp.Samples) != 0 || tp.Average != 0 {
		t.Fatalf("empty: %+v", tp)
	}
}

func TestPlacementDigestIsSchedperfs(t *testing.T) {
	// sha256("ns/p1\tn1\nns/p2\tn2\n"), the bytes schedperf's placement_digest hashes for this map.
	got := placementDigest(map[string]string{"ns/p2": "n2", "ns/p1": "n1"})
	const want = "11aad388df0a5b2fd1406a86acaab52d5448f73a8523ad99bd8f55d0a43bc155"
	if got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	if placementDigest(map[string]string{"ns/p1": "n1", "ns/p2": "n1"}) == got {
		t.Fatal("the digest must depend on every placement")
	}
}

func TestPercentiles(t *testing.T) {
	var v []int64
	for i := int64(1); i <= 100; i++ {
		v = append(v, i*1000)
	}
	p := percentilesOf(v, 1e3)
	if p.P50 != 50 || p.P90 != 90 || p.P99 != 99 || p.Max != 100 || p.Count != 100 {
		t.Fatalf("%+v", p)
	}
	if p := percentilesOf(nil, 1e3); p.Count != 0 || p.P50 != 0 {
		t.Fatalf("%+v", p)
	}
}

func TestQualityCountsStrandedCapacity(t *testing.T) {
	// Two nodes of 1000m, each half used: the pooled 1000m holds one 1000m pod, no single node does.
	nodes := []nodeUsage{
		{allocCPU: 1000, allocMem: 1 << 30, allocPods: 110, reqCPU: 500, pods: 1},
		{allocCPU: 1000, allocMem: 1 << 30, allocPods: 110, reqCPU: 500, pods: 1},
	}
	q := quality(nodes, 1000, 0, 0)
	if q.FragmentationPods != 1 || q.NodesUsed != 2 || math.Abs(q.Utilization["cpu"].Mean-0.5) > 1e-9 {
		t.Fatalf("%+v", q)
	}
}

func TestTemplateFunctions(t *testing.T) {
	cases := []struct{ text, want string }{
		{`{{Mod .Index 3}}`, "2"},
		{`{{DivideInt .Index 2}}`, "2"},
		{`{{AddInt .Index 1 2}}`, "8"},
		{`{{SubtractInt .Count .Index}}`, "5"},
		{`{{MultiplyInt .Index 2}}`, "10"},
		{`{{DivideFloat .Index 2}}`, "2.5"},
		{`{{Int "7"}}`, "7"},
		{`{{JSON .list}}`, `["a","<b>"]`},
	}
	for _, c := range cases {
		dir := t.TempDir()
		p := filepath.Join(dir, "t.yaml")
		text := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  labels: {v: '" + c.text + "'}\n"
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		tmpl, err := loadTemplate(p)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := tmpl.render(5, 10, map[string]any{"list": []any{"a", "<b>"}})
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		b, _ := json.Marshal(objs[0])
		if !bytes.Contains(b, []byte(`"v":`+string(mustJSON(c.want)))) {
			t.Errorf("%s: got %s, want label %s", c.text, b, c.want)
		}
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func writeWorkload(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "performance-config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWorkloadFileErrorsNameFileAndField(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"undefined parameter", "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, countParam: $nodes}\n  workloads:\n  - {name: w, params: {node: 3}}\n",
			"testCases[0].workloadTemplate[0].countParam: parameter $nodes is not defined"},
		{"unknown op field", "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, count: 1, bogus: 1}\n  workloads: [{name: w}]\n",
			`testCases[0].workloadTemplate[0]: unknown field "bogus"`},
		{"unknown opcode", "- name: T\n  workloadTemplate:\n  - {opcode: makeCoffee}\n  workloads: [{name: w}]\n",
			`testCases[0].workloadTemplate[0].opcode: unknown opcode "makeCoffee"`},
		{"count not a number", "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, countParam: $size}\n  workloads:\n  - {name: w, params: {size: lots}}\n",
			"countParam: parameter $size = lots: expected a whole number >= 0"},
		{"missing test case name", "- workloadTemplate: []\n  workloads: []\n", "testCases[0].name: missing"},
		{"not a list", "name: T\n", "expected a list of test cases"},
	}
	for _, c := range cases {
		p := writeWorkload(t, c.text)
		_, err := parseWorkloadFile(p)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if _, ok := err.(*inputError); !ok || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %T %v; want the file and %q", c.name, err, err, c.want)
		}
	}
}

func TestWorkloadResolution(t *testing.T) {
	p := writeWorkload(t, `
- name: T
  labels: [a]
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes, labelNodePrepareStrategy: {labelKey: zone, labelValues: [z1, z2]}}
  - {opcode: createPods, countParam: $pods}
  - {opcode: createPods, count: 2, namespace: mine, collectMetrics: true, podTemplatePath: pod.yaml}
  workloads:
  - {name: w, labels: [b, a], params: {nodes: 4, pods: 3}}
- name: Skipped
  workloadTemplate:
  - {opcode: churn, mode: create, templatePaths: [x.yaml]}
  workloads: [{name: w}]
`)
	ws, err := parseWorkloadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 {
		t.Fatalf("%d workloads", len(ws))
	}
	w := ws[0]
	if strings.Join(w.labels, ",") != "a,b" || len(w.ops) != 3 || w.ops[0].count != 4 || w.ops[1].count != 3 {
		t.Fatalf("%+v", w)
	}
	if w.ops[1].namespace != "namespace-1" || w.ops[2].namespace != "mine" || !w.ops[2].collect {
		t.Fatalf("namespaces %q %q", w.ops[1].namespace, w.ops[2].namespace)
	}
	if w.ops[2].templatePath != filepath.Join(filepath.Dir(p), "pod.yaml") {
		t.Fatalf("template path %q", w.ops[2].templatePath)
	}
	if ws[1].skip != "op churn is not supported by schedperf-oracle run" {
		t.Fatalf("skip %q", ws[1].skip)
	}
}

func TestLabelFilter(t *testing.T) {
	cases := []struct {
		filter string
		labels []string
		want   bool
	}{
		{"performance", []string{"performance"}, true},
		{"performance", []string{"short"}, false},
		{"+short", []string{"integration-test", "short"}, true},
		{"-slow", []string{"performance", "slow"}, false},
		{"short,-performance", []string{"short"}, true},
		{"", nil, true},
	}
	for _, c := range cases {
		f, err := parseLabelFilter(c.filter)
		if err != nil {
			t.Fatal(err)
		}
		if f.matches(c.labels) != c.want {
			t.Errorf("%q on %v: want %v", c.filter, c.labels, c.want)
		}
	}
	if _, err := parseLabelFilter("performance,-"); err == nil {
		t.Error("a bare - must be rejected")
	}
}

// A small workload end to end on the real scheduler: every pod bound, none lost, schedperf's names, and
// with one filter worker the same placements every time.
func TestRunSmallWorkload(t *testing.T) {
	p := writeWorkload(t, `
- name: Basic
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes}
  - {opcode: createPods, countParam: $init}
  - {opcode: createPods, countParam: $measured, collectMetrics: true}
  workloads:
  - {name: small, params: {nodes: 5, init: 5, measured: 10}}
`)
	ws, err := parseWorkloadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	opt := runOptions{parallelism: 1, gates: map[string]bool{"OpportunisticBatching": false}}
	var digests []string
	for i := 0; i < 2; i++ {
		rr, err := runWorkload(ws[0], opt)
		if err != nil {
			t.Fatal(err)
		}
		if rr.Accounting.Created != 15 || rr.Accounting.Bound != 15 || rr.Accounting.Lost != 0 || !rr.CacheConsistent {
			t.Fatalf("accounting %+v, cache %v %v", rr.Accounting, rr.CacheConsistent, rr.CacheDifferences)
		}
		if rr.MeasuredPods != 10 || rr.ScheduledPods != 10 || rr.Throughput.Average <= 0 || rr.AttemptLatencyMicros.Count != 15 {
			t.Fatalf("measured %d scheduled %d throughput %+v attempts %+v", rr.MeasuredPods, rr.ScheduledPods, rr.Throughput, rr.AttemptLatencyMicros)
		}
		if rr.Placements["namespace-1/pod-000000"] == "" || rr.Placements["namespace-2/pod-000014"] == "" {
			t.Fatalf("pod names: %v", rr.Placements)
		}
		for _, n := range rr.Placements {
			if !strings.HasPrefix(n, "scheduler-perf-") && !strings.HasPrefix(n, "node-") {
				t.Fatalf("node name %q", n)
			}
		}
		digests = append(digests, rr.PlacementDigest)
	}
	if digests[0] != digests[1] {
		t.Fatalf("parallelism 1 placed differently: %v", digests)
	}
}
