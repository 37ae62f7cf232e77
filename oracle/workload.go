package main

// Reading scheduler_perf workload files (the format of upstream's test/integration/scheduler_perf and of
// schedperf's workloads/): test cases, their op templates and workloads, `$param` substitution and the label
// filter. Upstream's own types live in package benchmark, which links the integration test framework (etcd,
// kube-apiserver), so the small part `run` needs is written here.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// knownOpcodes are upstream's opcodes at v1.37.2; those `run` executes are in supportedOps.
var knownOpcodes = map[string]bool{
	"createNodes": true, "createNamespaces": true, "createPods": true, "createPodSets": true, "deletePods": true,
	"churn": true, "barrier": true, "sleep": true, "startCollectingMetrics": true, "stopCollectingMetrics": true,
	"createAny": true, "updateAny": true, "createPodGroups": true, "createResourceClaims": true,
	"allocResourceClaims": true, "startCollectingProfile": true, "stopCollectingProfile": true,
}

var supportedOps = map[string]bool{
	"createNodes": true, "createNamespaces": true, "createPods": true, "deletePods": true, "barrier": true,
	"sleep": true, "startCollectingMetrics": true, "stopCollectingMetrics": true, "createAny": true,
	"startCollectingProfile": true, "stopCollectingProfile": true, "createPodGroups": true,
	"allocResourceClaims": true,
}

type rawTestCase struct {
	Name                           string            `json:"name"`
	FeatureGates                   map[string]bool   `json:"featureGates"`
	MetricsCollectorConfig         json.RawMessage   `json:"metricsCollectorConfig"`
	WorkloadTemplate               []json.RawMessage `json:"workloadTemplate"`
	Workloads                      []rawWorkload     `json:"workloads"`
	SchedulerConfigPath            string            `json:"schedulerConfigPath"`
	DefaultPodTemplatePath         string            `json:"defaultPodTemplatePath"`
	Labels                         []string          `json:"labels"`
	DefaultThresholdMetricSelector json.RawMessage   `json:"defaultThresholdMetricSelector"`
}

type rawWorkload struct {
	Name                    string          `json:"name"`
	Labels                  []string        `json:"labels"`
	FeatureGates            map[string]bool `json:"featureGates"`
	Params                  map[string]any  `json:"params"`
	Threshold               json.RawMessage `json:"threshold"`
	ThresholdMetricSelector json.RawMessage `json:"thresholdMetricSelector"`
}

// rawOp is the union of the fields of every op (each op is checked for the fields it uses).
type rawOp struct {
	Opcode                   string            `json:"opcode"`
	Count                    *int64            `json:"count"`
	CountParam               string            `json:"countParam"`
	CountMultiplierParam     string            `json:"countMultiplierParam"`
	NodeTemplatePath         string            `json:"nodeTemplatePath"`
	NodeAllocatableStrategy  *allocStrategy    `json:"nodeAllocatableStrategy"`
	LabelNodePrepareStrategy *labelStrategy    `json:"labelNodePrepareStrategy"`
	UniqueNodeLabelStrategy  *uniqueStrategy   `json:"uniqueNodeLabelStrategy"`
	TemplateParams           map[string]any    `json:"templateParams"`
	Prefix                   string            `json:"prefix"`
	NamespaceTemplatePath    string            `json:"namespaceTemplatePath"`
	CollectMetrics           bool              `json:"collectMetrics"`
	Namespace                *string           `json:"namespace"`
	PodTemplatePath          string            `json:"podTemplatePath"`
	SkipWaitToCompletion     bool              `json:"skipWaitToCompletion"`
	PersistentVolumeTemplate string            `json:"persistentVolumeTemplatePath"`
	PersistentVolumeClaim    string            `json:"persistentVolumeClaimTemplatePath"`
	SteadyState              any               `json:"steadyState"`
	SteadyStateParam         string            `json:"steadyStateParam"`
	Duration                 any               `json:"duration"`
	DurationParam            string            `json:"durationParam"`
	SignatureBatchSize       any               `json:"signatureBatchSize"`
	SignatureBatchSizeParam  string            `json:"signatureBatchSizeParam"`
	LabelSelector            map[string]string `json:"labelSelector"`
	DeletePodsPerSecond      int64             `json:"deletePodsPerSecond"`
	Namespaces               []string          `json:"namespaces"`
	StageRequirement         string            `json:"stageRequirement"`
	TemplatePath             string            `json:"templatePath"`
	Mode                     string            `json:"mode"`
	Number                   int64             `json:"number"`
	IntervalMilliseconds     int64             `json:"intervalMilliseconds"`
	TemplatePaths            []string          `json:"templatePaths"`
	Name                     string            `json:"name"`
	NamespacePrefix          string            `json:"namespacePrefix"`
	CreatePodsOp             json.RawMessage   `json:"createPodsOp"`
	UpdatePerSecond          int64             `json:"updatePerSecond"`
	Subresources             []string          `json:"subresources"`
}

type allocStrategy struct {
	NodeAllocatable    map[string]string `json:"nodeAllocatable"`
	CSINodeAllocatable json.RawMessage   `json:"csiNodeAllocatable"`
	MigratedPlugins    []string          `json:"migratedPlugins"`
}

type labelStrategy struct {
	LabelKey    string   `json:"labelKey"`
	LabelValues []string `json:"labelValues"`
}

type uniqueStrategy struct {
	LabelKey string `json:"labelKey"`
}

// opKind is a resolved op's code.
type opKind int

const (
	opCreateNodes opKind = iota
	opCreateNamespaces
	opCreatePods
	opDeletePods
	opBarrier
	opSleep
	opStartMetrics
	opStopMetrics
	opCreateAny
	opCreatePodGroups
	opAllocClaims
	opNoop
)

// op is one op with its parameters substituted.
type op struct {
	kind           opKind
	count          int
	templatePath   string // node, pod or object template ("" = the built-in default)
	alloc          map[string]string
	label          *labelStrategy
	unique         *uniqueStrategy
	templateParams map[string]any
	prefix         string
	namespace      string // createPods, deletePods, createAny ("" = cluster-scoped or default)
	collect        bool
	skipWait       bool
	labelSelector  map[string]string
	namespaces     []string
	perSecond      int64
	signatureBatch int            // createPods: pods per value of the "signature" label (>= 1)
	strategy       *allocStrategy // createNodes: nodeAllocatableStrategy (its CSINodes)
	pvTemplate     string         // createPods: persistentVolumeTemplatePath
	pvcTemplate    string         // createPods: persistentVolumeClaimTemplatePath ("" = no volumes)
	duration       time.Duration
}

// workload is one workload of one test case, ready to run, or skipped with a reason.
type workload struct {
	file, testCase, name string
	labels               []string
	gates                map[string]bool
	configPath           string
	ops                  []op
	skip                 string
	// ndfFeatures is nodedeclaredfeatures/node_declared_features_test.go's hook (run_ndf.go): the
	// workload's numNodeDeclaredFeatures when its own featureGates set NodeDeclaredFeatures: true, else -1.
	ndfFeatures int
}

// loadWorkloads reads a workload file or every *.yaml under a directory (sorted), as schedperf does.
func loadWorkloads(path string) ([]workload, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, badInput("%s: %v", path, err)
	}
	var files []string
	if st.IsDir() {
		// As schedperf: every *.yaml/*.yml (recursively, path order, skipping templates/ and dot dirs)
		// that is a YAML list whose first item has workloadTemplate or workloads.
		err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != path && (d.Name() == "templates" || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) && looksLikeWorkloadFile(p) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, badInput("%s: %v", path, err)
		}
		sort.Strings(files)
	} else {
		files = []string{path}
	}
	var out []workload
	for _, f := range files {
		ws, err := parseWorkloadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	return out, nil
}

func looksLikeWorkloadFile(p string) bool {
	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var items []map[string]json.RawMessage
	if err := yaml.Unmarshal(data, &items); err != nil || len(items) == 0 {
		return false
	}
	_, a := items[0]["workloadTemplate"]
	_, b := items[0]["workloads"]
	return a || b
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// parseWorkloadFile reads one file: every workload of every test case, resolved or with its skip reason.
func parseWorkloadFile(file string) ([]workload, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, badInput("%v", err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, badInput("%s: invalid YAML: %v", file, err)
	}
	var tcs []rawTestCase
	if err := strictJSON(js, &tcs); err != nil {
		return nil, badInput("%s: %v (expected a list of test cases: name, workloadTemplate, workloads, ...)", file, jsonErr(err))
	}
	dir := filepath.Dir(file)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	var out []workload
	for i, tc := range tcs {
		at := fmt.Sprintf("testCases[%d]", i)
		if tc.Name == "" {
			return nil, badInput("%s: %s.name: missing", file, at)
		}
		var ops []rawOp
		skip := ""
		for j, raw := range tc.WorkloadTemplate {
			var o rawOp
			if err := strictJSON(raw, &o); err != nil {
				// Ops of features run does not know (pod groups, claims, ...) carry fields of their own.
				var probe struct {
					Opcode string `json:"opcode"`
				}
				_ = json.Unmarshal(raw, &probe)
				if knownOpcodes[probe.Opcode] && !supportedOps[probe.Opcode] {
					if skip == "" {
						skip = fmt.Sprintf("op %s is not supported by schedperf-oracle run", probe.Opcode)
					}
					ops = append(ops, rawOp{Opcode: probe.Opcode})
					continue
				}
				return nil, badInput("%s: %s.workloadTemplate[%d]: %v", file, at, j, jsonErr(err))
			}
			if !knownOpcodes[o.Opcode] {
				return nil, badInput("%s: %s.workloadTemplate[%d].opcode: unknown opcode %q", file, at, j, o.Opcode)
			}
			if skip == "" {
				skip = unsupportedReason(o)
			}
			ops = append(ops, o)
		}
		for k, w := range tc.Workloads {
			wat := fmt.Sprintf("%s.workloads[%d]", at, k)
			if w.Name == "" {
				return nil, badInput("%s: %s.name: missing", file, wat)
			}
			rw := workload{file: file, testCase: tc.Name, name: w.Name, labels: mergeLabels(tc.Labels, w.Labels),
				gates: map[string]bool{}, configPath: abs(tc.SchedulerConfigPath), skip: skip, ndfFeatures: -1}
			n, err := ndfHookParam(w)
			if err != nil {
				return nil, badInput("%s: %s.params.%s: %v", file, wat, numNodeDeclaredFeatures, err)
			}
			rw.ndfFeatures = n
			for g, v := range tc.FeatureGates {
				rw.gates[g] = v
			}
			for g, v := range w.FeatureGates {
				rw.gates[g] = v
			}
			if skip == "" {
				r := resolver{file: file, at: at, params: w.Params, abs: abs, defaultPod: abs(tc.DefaultPodTemplatePath)}
				for j, o := range ops {
					err := r.op(fmt.Sprintf("%s.workloadTemplate[%d]", at, j), o, &rw.ops)
					if err == errSteadyState {
						// steadyStateParam is per workload: this one runs in steady state.
						rw.skip, rw.ops = "createPods with steadyState is not supported by schedperf-oracle run", nil
						break
					}
					if err != nil {
						return nil, badInput("%s: workload %q: %v", file, w.Name, err)
					}
				}
			}
			out = append(out, rw)
		}
	}
	return out, nil
}

// errSteadyState is a createPods whose steadyStateParam is true in the workload (it is skipped).
var errSteadyState = errors.New("steady state")

// jsonErr shortens encoding/json's messages ("json: unknown field \"x\"").
func jsonErr(err error) string { return strings.TrimPrefix(err.Error(), "json: ") }

// unsupportedReason says why run cannot execute an op ("" = it can).
func unsupportedReason(o rawOp) string {
	switch {
	case !supportedOps[o.Opcode]:
		return fmt.Sprintf("op %s is not supported by schedperf-oracle run", o.Opcode)
	case o.PersistentVolumeClaim != "" && o.PersistentVolumeTemplate == "":
		return "createPods with persistentVolumeClaimTemplatePath but no persistentVolumeTemplatePath"
	case o.SteadyState != nil && o.SteadyState != false:
		return "createPods with steadyState is not supported by schedperf-oracle run"
	case o.Opcode == "createNamespaces" && o.NamespaceTemplatePath != "":
		return "createNamespaces with namespaceTemplatePath is not supported by schedperf-oracle run"
	case o.Opcode == "barrier" && o.StageRequirement != "" && o.StageRequirement != "Scheduled":
		return fmt.Sprintf("barrier with stageRequirement %s is not supported by schedperf-oracle run", o.StageRequirement)
	}
	return ""
}

func mergeLabels(a, b []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, l := range append(append([]string{}, a...), b...) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

type resolver struct {
	file, at   string
	params     map[string]any
	abs        func(string) string
	defaultPod string
}

// param looks up `$name` (the `$` is optional in countParam as upstream writes it).
func (r *resolver) param(field, ref string) (any, error) {
	name := strings.TrimPrefix(ref, "$")
	v, ok := r.params[name]
	if !ok {
		return nil, fmt.Errorf("%s: parameter $%s is not defined in the workload's params", field, name)
	}
	return v, nil
}

// signatureBatch is createPods' signatureBatchSize (or its parameter); 0 or unset means 1, as
// upstream's createPodsOp defaults it.
func (r *resolver) signatureBatch(at string, o rawOp) (int, error) {
	v, field := o.SignatureBatchSize, at+".signatureBatchSize"
	if o.SignatureBatchSizeParam != "" {
		field = at + ".signatureBatchSizeParam"
		p, err := r.param(field, o.SignatureBatchSizeParam)
		if err != nil {
			return 0, err
		}
		v = p
	}
	if v == nil {
		return 1, nil
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) {
		return 0, fmt.Errorf("%s: %v: expected a whole number >= 0", field, v)
	}
	if f == 0 {
		return 1, nil
	}
	return int(f), nil
}

func (r *resolver) count(at string, o rawOp, dflt int64) (int, error) {
	n := dflt
	field := at + ".count"
	if o.CountParam != "" {
		field = at + ".countParam"
		v, err := r.param(field, o.CountParam)
		if err != nil {
			return 0, err
		}
		f, ok := v.(float64)
		if !ok || f < 0 || f != math.Trunc(f) {
			return 0, fmt.Errorf("%s: parameter %s = %v: expected a whole number >= 0", field, o.CountParam, v)
		}
		n = int64(f)
	} else if o.Count != nil {
		n = *o.Count
	}
	if n < 0 {
		return 0, fmt.Errorf("%s: %d: expected a whole number >= 0", field, n)
	}
	if o.CountMultiplierParam != "" {
		v, err := r.param(at+".countMultiplierParam", o.CountMultiplierParam)
		if err != nil {
			return 0, err
		}
		f, ok := v.(float64)
		if !ok || f < 0 || f != math.Trunc(f) {
			return 0, fmt.Errorf("%s.countMultiplierParam: %v: expected a whole number >= 0", at, v)
		}
		n *= int64(f)
	}
	return int(n), nil
}

func (r *resolver) templateParams(at string, raw map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range raw {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "$") {
			out[k] = v
			continue
		}
		name, dflt, hasDefault := strings.Cut(s[1:], "|")
		if pv, ok := r.params[name]; ok {
			out[k] = pv
			continue
		}
		if !hasDefault {
			return nil, fmt.Errorf("%s.templateParams.%s: parameter $%s is not defined in the workload's params", at, k, name)
		}
		var d any
		if err := yaml.Unmarshal([]byte(dflt), &d); err != nil {
			return nil, fmt.Errorf("%s.templateParams.%s: default %q is not YAML: %v", at, k, dflt, err)
		}
		out[k] = d
	}
	return out, nil
}

func (r *resolver) duration(at string, o rawOp) (time.Duration, error) {
	v := o.Duration
	if o.DurationParam != "" {
		p, err := r.param(at+".durationParam", o.DurationParam)
		if err != nil {
			return 0, err
		}
		v = p
	}
	if s, ok := v.(string); ok && strings.HasPrefix(s, "$") {
		p, err := r.param(at+".duration", s)
		if err != nil {
			return 0, err
		}
		v = p
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%s.duration: %v: expected a duration string like \"5s\"", at, v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s.duration: %v", at, err)
	}
	return d, nil
}

// op resolves one raw op into out (a createPods without namespace gets `namespace-<index>`, as upstream).
func (r *resolver) op(at string, o rawOp, out *[]op) error {
	var res op
	var err error
	switch o.Opcode {
	case "createNodes":
		res = op{kind: opCreateNodes, templatePath: r.abs(o.NodeTemplatePath), label: o.LabelNodePrepareStrategy,
			unique: o.UniqueNodeLabelStrategy}
		if o.NodeAllocatableStrategy != nil {
			res.alloc = o.NodeAllocatableStrategy.NodeAllocatable
			res.strategy = o.NodeAllocatableStrategy
		}
		if res.count, err = r.count(at, o, 0); err != nil {
			return err
		}
		if res.templateParams, err = r.templateParams(at, o.TemplateParams); err != nil {
			return err
		}
	case "createNamespaces":
		if o.Prefix == "" {
			return fmt.Errorf("%s.prefix: missing", at)
		}
		res = op{kind: opCreateNamespaces, prefix: o.Prefix}
		if res.count, err = r.count(at, o, 0); err != nil {
			return err
		}
	case "createPods":
		if o.SteadyStateParam != "" {
			v, err := r.param(at+".steadyStateParam", o.SteadyStateParam)
			if err != nil {
				return err
			}
			if v != false {
				return errSteadyState
			}
		}
		res = op{kind: opCreatePods, templatePath: r.abs(o.PodTemplatePath), collect: o.CollectMetrics,
			skipWait: o.SkipWaitToCompletion}
		if o.PersistentVolumeClaim != "" {
			res.pvTemplate, res.pvcTemplate = r.abs(o.PersistentVolumeTemplate), r.abs(o.PersistentVolumeClaim)
		}
		if res.templatePath == "" {
			res.templatePath = r.defaultPod
		}
		if o.Namespace != nil {
			res.namespace = *o.Namespace
		} else {
			res.namespace = fmt.Sprintf("namespace-%d", len(*out))
		}
		if res.count, err = r.count(at, o, 0); err != nil {
			return err
		}
		if res.templateParams, err = r.templateParams(at, o.TemplateParams); err != nil {
			return err
		}
		if res.signatureBatch, err = r.signatureBatch(at, o); err != nil {
			return err
		}
	case "deletePods":
		if o.Namespace == nil || *o.Namespace == "" {
			return fmt.Errorf("%s.namespace: missing", at)
		}
		res = op{kind: opDeletePods, namespace: *o.Namespace, labelSelector: o.LabelSelector,
			skipWait: o.SkipWaitToCompletion, perSecond: o.DeletePodsPerSecond}
	case "barrier":
		res = op{kind: opBarrier, namespaces: o.Namespaces, labelSelector: o.LabelSelector}
	case "sleep":
		res = op{kind: opSleep}
		if res.duration, err = r.duration(at, o); err != nil {
			return err
		}
	case "startCollectingMetrics":
		res = op{kind: opStartMetrics, namespaces: o.Namespaces, labelSelector: o.LabelSelector}
	case "stopCollectingMetrics":
		res = op{kind: opStopMetrics}
	case "createAny":
		if o.TemplatePath == "" {
			return fmt.Errorf("%s.templatePath: missing", at)
		}
		res = op{kind: opCreateAny, templatePath: r.abs(o.TemplatePath)}
		if o.Namespace != nil {
			res.namespace = *o.Namespace
		}
		if res.count, err = r.count(at, o, 1); err != nil {
			return err
		}
		if res.templateParams, err = r.templateParams(at, o.TemplateParams); err != nil {
			return err
		}
	case "createPodGroups":
		// Upstream's runCreatePodGroupsOp: count >= 1 PodGroups from the template, in the op's namespace.
		if o.TemplatePath == "" {
			return fmt.Errorf("%s.templatePath: missing", at)
		}
		if o.Namespace == nil || *o.Namespace == "" {
			return fmt.Errorf("%s.namespace: missing", at)
		}
		res = op{kind: opCreatePodGroups, templatePath: r.abs(o.TemplatePath), namespace: *o.Namespace}
		if res.count, err = r.count(at, o, 0); err != nil {
			return err
		}
		if res.count < 1 {
			return fmt.Errorf("%s: createPodGroups: count must be greater than 0, got %d", at, res.count)
		}
		if res.templateParams, err = r.templateParams(at, o.TemplateParams); err != nil {
			return err
		}
	case "allocResourceClaims":
		// Upstream's allocResourceClaimsOp: namespace "" means every namespace.
		res = op{kind: opAllocClaims}
		if o.Namespace != nil {
			res.namespace = *o.Namespace
		}
	default: // Profiles: no effect on scheduling.
		res = op{kind: opNoop}
	}
	*out = append(*out, res)
	return nil
}

// labelFilter is scheduler_perf's label filter: `label`/`+label` required, `-label` excluded.
type labelFilter struct{ required, excluded []string }

func parseLabelFilter(s string) (labelFilter, error) {
	var f labelFilter
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		switch item[0] {
		case '-':
			f.excluded = append(f.excluded, item[1:])
		case '+':
			f.required = append(f.required, item[1:])
		default:
			f.required = append(f.required, item)
		}
		if len(item) == 1 && (item[0] == '-' || item[0] == '+') {
			return f, badInput("--label-filter: %q has no label: expected label, +label or -label", item)
		}
	}
	return f, nil
}

func (f labelFilter) matches(labels []string) bool {
	has := func(l string) bool {
		for _, x := range labels {
			if x == l {
				return true
			}
		}
		return false
	}
	for _, l := range f.required {
		if !has(l) {
			return false
		}
	}
	for _, l := range f.excluded {
		if has(l) {
			return false
		}
	}
	return true
}
