package main

// `schedperf-oracle run`: scheduler_perf workload files on the real kube-scheduler (scheduler.New with its
// queue, cache, framework and binding cycle, run as sched.Run runs it) against client-go's fake clientset, with
// the measurements schedperf makes, written as a schedperf report.json.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// stallTimeout fails a wait when no pod got bound for this long (upstream's waits time out too).
const stallTimeout = 60 * time.Second

// watchBuffer is the fake watchers' channel size for a workload: the fake panics when a watcher falls this
// far behind, so it holds every event the workload can queue on one watch (a node or object created, a pod
// created, bound, patched, deleted), plus slack.
func watchBuffer(w workload) int32 {
	n := 1024
	for _, o := range w.ops {
		switch o.kind {
		case opCreateNodes, opCreateAny, opCreateNamespaces, opCreatePodGroups:
			n += o.count
		case opCreatePods:
			n += 4 * o.count
		}
	}
	return int32(n)
}

type runOptions struct {
	parallelism int
	rep         uint32
	gates       map[string]bool
	// apiLatency is how long each of preemption's API calls takes (`--api-latency`; apilatency.go).
	apiLatency time.Duration
	// trace is `--events` (nil: none).
	trace *eventTrace
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	testCase := fs.String("test-case", "", "only this test case")
	workloadName := fs.String("workload", "", "only this workload")
	filter := fs.String("label-filter", "performance", "scheduler_perf label filter")
	out := fs.String("out", "", "write report.json here")
	format := fs.String("format", "table", "table or json (stdout)")
	gates := fs.String("feature-gates", "", "A=true,B=false (over each workload's own)")
	parallelism := fs.Int("parallelism", 0, "scheduler parallelism (0 = the configuration's, 16 by default)")
	rep := fs.Uint("rep", 0, "repetition index written into the report")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run here")
	apiLatency := fs.Duration("api-latency", 0, "each preemption API call (a victim's status patch, its delete) takes this long (schedperf models 1ms)")
	eventsFile := fs.String("events", "", "write a JSON-lines trace of preemptions and binds here")
	// Flags may follow the path, as in schedperf run.
	var paths []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return badInput("run: %v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(paths) != 1 {
		return badInput("run: expected one workload file or directory, got %d", len(paths))
	}
	if *format != "table" && *format != "json" {
		return badInput("run: --format: expected table or json, got %q", *format)
	}
	if *parallelism < 0 {
		return badInput("run: --parallelism: %d: expected >= 0", *parallelism)
	}
	if *apiLatency < 0 {
		return badInput("run: --api-latency: %v: expected >= 0", *apiLatency)
	}
	lf, err := parseLabelFilter(*filter)
	if err != nil {
		return err
	}
	cliGates, err := parseGateFlag(*gates)
	if err != nil {
		return badInput("%v", err)
	}
	all, err := loadWorkloads(paths[0])
	if err != nil {
		return err
	}
	var selected []workload
	for _, w := range all {
		if *testCase != "" && w.testCase != *testCase || *workloadName != "" && w.name != *workloadName {
			continue
		}
		wanted := *workloadName != "" || *testCase != "" && *filter == "performance" || lf.matches(w.labels)
		if wanted {
			selected = append(selected, w)
		}
	}
	if len(selected) == 0 {
		return badInput("%s: no workload matches (test case %q, workload %q, label filter %q)", paths[0], *testCase, *workloadName, *filter)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return badInput("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return badInput("--cpuprofile: %v", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	doc := reportDoc{
		SchemaVersion: reportSchemaVersion,
		Tool:          toolInfo{Name: "schedperf-oracle", Version: kubernetesVersion},
		Engine:        engineName,
		CommandLine:   append([]string{"schedperf-oracle", "run"}, args...),
		Machine:       thisMachine(),
		Upstream:      upstreamInfo{Kubernetes: kubernetesVersion},
		Runs:          []runReport{},
	}
	var trace *eventTrace
	if *eventsFile != "" {
		f, err := os.Create(*eventsFile)
		if err != nil {
			return badInput("run: --events: %v", err)
		}
		defer func() { _ = f.Close() }()
		trace = &eventTrace{out: f}
	}
	failed := 0
	for _, w := range selected {
		name := w.testCase + "/" + w.name
		if w.skip != "" {
			fmt.Fprintf(stderr, "skip %s: %s\n", name, w.skip)
			continue
		}
		g := map[string]bool{}
		for k, v := range w.gates {
			g[k] = v
		}
		for k, v := range cliGates {
			g[k] = v
		}
		if trace != nil {
			trace.write(map[string]any{"event": "workload", "rep": *rep, "testCase": w.testCase, "workload": w.name})
		}
		opt := runOptions{parallelism: *parallelism, rep: uint32(*rep), gates: g, apiLatency: *apiLatency, trace: trace}
		rr, runErr := runWorkload(w, opt)
		if rr == nil {
			return runErr
		}
		if runErr != nil {
			failed++
			fmt.Fprintf(stderr, "FAIL %s: %v\n", name, runErr)
		}
		doc.Runs = append(doc.Runs, *rr)
		if *format == "table" {
			fmt.Fprintf(stdout, "%-50s %10.1f pods/s  attempt p50 %8.1f µs p99 %8.1f µs  %d/%d measured bound  lost %d  peak RSS %d MiB\n",
				name, rr.Throughput.Average, rr.AttemptLatencyMicros.P50, rr.AttemptLatencyMicros.P99,
				rr.ScheduledPods, rr.MeasuredPods, rr.Accounting.Lost, rr.PeakRSSBytes>>20)
		}
	}
	doc.CreatedUnixSeconds = time.Now().Unix()
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out %s: %v", *out, err)
		}
		f, err := os.Create(filepath.Join(*out, "report.json"))
		if err != nil {
			return fmt.Errorf("--out %s: %v", *out, err)
		}
		werr := writeJSON(f, doc)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	if *format == "json" {
		if err := writeJSON(stdout, doc); err != nil {
			return err
		}
	}
	if trace != nil && trace.err != nil {
		return fmt.Errorf("--events %s: %v", *eventsFile, trace.err)
	}
	if failed > 0 {
		return fmt.Errorf("%d workload(s) failed", failed)
	}
	return nil
}

// watchThrough is a watch reactor that serves every watch from tr, so informers see the writes
// (and the resourceVersions) the tracker stamps.
func watchThrough(tr clienttesting.ObjectTracker) clienttesting.WatchReactionFunc {
	return func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		wi, err := tr.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, wi, nil
	}
}

// rvTracker is the fake's object tracker with a resourceVersion stamped on every write, as an apiserver
// does (the scheduler ignores pod updates whose resourceVersion did not change).
type rvTracker struct {
	clienttesting.ObjectTracker
	rv atomic.Int64
}

func (t *rvTracker) stamp(obj k8sruntime.Object) {
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetResourceVersion(strconv.FormatInt(t.rv.Add(1), 10))
	}
}

// Create also does what the fake does not: an object with only generateName gets a name (generatedName:
// the first free one) and every object without a UID gets one (uidOf), as from an apiserver. The
// resourceclaim controller creates claims so, and the scheduler keys claims by UID.
func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.CreateOptions) error {
	if acc, err := meta.Accessor(obj); err == nil {
		if acc.GetName() == "" && acc.GetGenerateName() != "" {
			for attempt := 0; ; attempt++ {
				name := generatedName(gvr.Resource, ns, acc.GetGenerateName(), attempt)
				if _, err := t.ObjectTracker.Get(gvr, ns, name); apierrors.IsNotFound(err) {
					acc.SetName(name)
					break
				}
			}
		}
		if acc.GetUID() == "" {
			acc.SetUID(uidOf(gvr.Resource, ns, acc.GetName()))
		}
	}
	t.stamp(obj)
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

// Apply (server-side apply, as the resourceclaim controller writes pod.status.resourceClaimStatuses): the
// fake merges the patch into the object; a resourceVersion in the patch stamps the result.
func (t *rvTracker) Apply(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Apply(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

// podRec is one pod the run created.
type podRec struct {
	op        int
	created   time.Time
	measured  bool
	node      string
	boundAt   time.Time
	deleted   bool
	byRun     bool // deleted by a deletePods op (not by preemption)
	cpuMilli  int64
	memBytes  int64
	failure   string // the last failed attempt's message
	failCode  fwk.Code
	namespace string
	labels    map[string]string
}

type window struct {
	open       bool
	namespaces []string
	start      time.Time
}

// runner is one workload on one fresh Scheduler.
type runner struct {
	w       workload
	ctx     context.Context
	cancel  context.CancelFunc
	client  *fake.Clientset
	tracker *rvTracker
	inf     informers.SharedInformerFactory
	sched   *scheduler.Scheduler
	logger  klog.Logger
	classes map[string]*schedulingv1PC
	// parallelism is the scheduler's (16 unless the configuration or --parallelism says otherwise).
	parallelism int
	// apiLatency and trace: runOptions' (apilatency.go); start is the workload's start, the trace's zero.
	apiLatency time.Duration
	trace      *eventTrace
	start      time.Time

	mu            sync.Mutex
	pods          map[string]*podRec
	pendingByOp   map[int]int
	lastBind      time.Time
	measuredBinds []time.Time
	e2e           []int64
	win           window
	nodesCreated  int
	podsCreated   int
	nodeNames     []string
	victims       uint64

	// Attempts, written by the scheduling loop goroutine only (read after it stopped).
	cycleUID   types.UID
	cycleStart time.Time
	cycleRetry bool
	cycleFail  fwk.Code
	cycleFails bool
	// A pod-group cycle: its members (retried or not) and each one's failure code, if it failed.
	cycleGroup map[types.UID]*groupAttempt
	attempts   map[string][]int64
	counters   counters
	loopDone   chan struct{}
}

func podsKey(ns, name string) string { return ns + "/" + name }

// newRunner builds scheduler.New on an empty fake clientset and starts it.
func newRunner(w workload, cfg *config.KubeSchedulerConfiguration, opt runOptions) (*runner, error) {
	ctx, cancel := context.WithCancel(context.Background())
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	client := fake.NewClientset()
	tr := &rvTracker{ObjectTracker: clienttesting.NewObjectTracker(clientscheme.Scheme, clientscheme.Codecs.UniversalDecoder())}
	r := &runner{w: w, ctx: ctx, cancel: cancel, client: client, tracker: tr, logger: logger,
		classes: map[string]*schedulingv1PC{}, pods: map[string]*podRec{}, pendingByOp: map[int]int{},
		attempts: map[string][]int64{}, loopDone: make(chan struct{}), lastBind: time.Now(),
		apiLatency: opt.apiLatency, trace: opt.trace, start: time.Now()}
	// The fake's own tracker is replaced by tr: every write gets a resourceVersion.
	client.ReactionChain = nil
	client.WatchReactionChain = nil
	// Binding sets spec.nodeName through the tracker, which sends the update to the informers' watches.
	client.AddReactor("create", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
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
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, b.Name,
				fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		if err := tr.Update(podsGVR, pod, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		r.trace.add(r, "bound", podsKey(pod.Namespace, pod.Name), map[string]any{"node": b.Target.Name})
		return true, b, nil
	})
	client.AddReactor("delete", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		// Only the scheduler deletes through the client (preemption victims); runs delete through the tracker.
		atomic.AddUint64(&r.victims, 1)
		return false, nil, nil
	})
	addPVController(client, tr)
	client.AddReactor("*", "*", clienttesting.ObjectReaction(tr))
	client.AddWatchReactor("*", watchThrough(tr))
	inf := scheduler.NewInformerFactory(client, 0, nil)
	recorder := &events.FakeRecorder{}
	recorderFactory := profile.RecorderFactory(func(string) events.EventRecorderLogger { return recorder })
	parallelism := opt.parallelism
	if parallelism == 0 {
		parallelism = int(cfg.Parallelism)
	}
	// The informers read the fake; the scheduler's own calls go through latencyClient (apilatency.go).
	sched, err := scheduler.New(ctx, latencyClient{Clientset: client, r: r}, inf, nil, recorderFactory,
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithParallelism(int32(parallelism)),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
	)
	if err != nil {
		cancel()
		return nil, err
	}
	r.sched, r.inf, r.parallelism = sched, inf, parallelism
	if _, err := inf.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
				r.onBound(p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*v1.Pod)
			n, ok2 := newObj.(*v1.Pod)
			if ok1 && ok2 && o.Spec.NodeName == "" && n.Spec.NodeName != "" {
				r.onBound(n)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				r.onDeleted(p)
			}
		},
	}); err != nil {
		cancel()
		return nil, err
	}
	if draControllerWanted(opt.gates) {
		// scheduler_perf runs the resourceclaim controller beside the scheduler (run_dra.go).
		if err := startClaimController(ctx, client, inf); err != nil {
			cancel()
			return nil, err
		}
	}
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	if err := waitForHandlers(ctx, sched); err != nil {
		cancel()
		return nil, err
	}
	r.startScheduling()
	// The fake records every action it serves; the scheduler's binds and patches would pile up.
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				client.ClearActions()
			}
		}
	}()
	return r, nil
}

// startScheduling runs what sched.Run runs (the queue's flush loops, the API dispatcher, ScheduleOne in a
// loop), with each attempt timed from the pop to the end of its scheduling cycle (the binding cycle runs on).
func (r *runner) startScheduling() {
	s := r.sched
	next := s.NextEntity
	s.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		ent, err := next(logger)
		if qpi, ok := ent.(*framework.QueuedPodInfo); ok && qpi != nil && qpi.Pod != nil {
			r.mu.Lock()
			r.cycleUID, r.cycleStart, r.cycleRetry = qpi.Pod.UID, time.Now(), qpi.Attempts > 1
			r.mu.Unlock()
		}
		if pg, ok := ent.(*framework.QueuedPodGroupInfo); ok && pg != nil {
			r.mu.Lock()
			r.cycleGroup, r.cycleStart = map[types.UID]*groupAttempt{}, time.Now()
			pg.ForEachPodInfo(func(pi *framework.QueuedPodInfo) bool {
				r.cycleGroup[pi.Pod.UID] = &groupAttempt{retry: pi.Attempts > 1}
				return true
			})
			r.mu.Unlock()
		}
		return ent, err
	}
	failure := s.FailureHandler
	s.FailureHandler = func(ctx context.Context, f framework.Framework, pi *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		failure(ctx, f, pi, status, ni, start)
		key := podsKey(pi.Pod.Namespace, pi.Pod.Name)
		if ni != nil && ni.NominatedNodeName != "" {
			r.trace.add(r, "nominated", key, map[string]any{"node": ni.NominatedNodeName})
		}
		r.mu.Lock()
		if rec := r.pods[key]; rec != nil {
			rec.failure, rec.failCode = status.Message(), status.Code()
		}
		if a := r.cycleGroup[pi.Pod.UID]; a != nil && !a.failed {
			a.failed, a.code = true, status.Code()
		} else if pi.Pod.UID == r.cycleUID && !r.cycleFails {
			r.cycleFails, r.cycleFail = true, status.Code()
		} else {
			r.counters.BindFailures++
		}
		r.mu.Unlock()
	}
	s.SchedulingQueue.Run(r.logger)
	if s.APIDispatcher != nil {
		s.APIDispatcher.Run(r.logger)
	}
	go func() {
		defer close(r.loopDone)
		for r.ctx.Err() == nil {
			r.mu.Lock()
			r.cycleUID, r.cycleFails, r.cycleGroup = "", false, nil
			r.mu.Unlock()
			s.ScheduleOne(r.ctx)
			r.mu.Lock()
			r.recordGroupAttempts()
			if r.cycleUID != "" {
				r.recordAttempt(time.Since(r.cycleStart).Nanoseconds(), r.cycleFails, r.cycleFail, r.cycleRetry)
			}
			r.mu.Unlock()
		}
	}()
}

func (r *runner) stop() {
	r.cancel()
	if r.sched.APIDispatcher != nil {
		r.sched.APIDispatcher.Close()
	}
	r.sched.SchedulingQueue.Close()
	<-r.loopDone
}

func (r *runner) onBound(p *v1.Pod) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.pods[podsKey(p.Namespace, p.Name)]
	if rec == nil || rec.node != "" {
		return
	}
	rec.node, rec.boundAt = p.Spec.NodeName, now
	r.lastBind = now
	r.pendingByOp[rec.op]--
	if rec.measured {
		r.measuredBinds = append(r.measuredBinds, now)
		r.e2e = append(r.e2e, now.Sub(rec.created).Nanoseconds())
	}
}

func (r *runner) onDeleted(p *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.pods[podsKey(p.Namespace, p.Name)]
	if rec == nil || rec.deleted {
		return
	}
	rec.deleted = true
	if rec.node == "" {
		r.pendingByOp[rec.op]--
	}
}

// templateFuncs is upstream's getTemplateFuncs (test/integration/scheduler_perf/operations.go).
var templateFuncs = template.FuncMap{
	"AddFloat": func(n ...any) float64 { return foldFloat(0, n, func(a, b float64) float64 { return a + b }) },
	"AddInt":   func(n ...any) int { return int(foldFloat(0, n, func(a, b float64) float64 { return a + b })) },
	"DivideFloat": func(i, j any) float64 {
		d := toFloat64(j)
		if d == 0 {
			panic("division by zero")
		}
		return toFloat64(i) / d
	},
	"DivideInt": func(i, j any) int {
		d := toFloat64(j)
		if d == 0 {
			panic("division by zero")
		}
		return int(toFloat64(i) / d)
	},
	"Int":           toInt,
	"JSON":          toJSONText,
	"Mod":           func(a, b any) int { return int(toFloat64(a)) % int(toFloat64(b)) },
	"MultiplyFloat": func(n ...any) float64 { return foldFloat(1, n, func(a, b float64) float64 { return a * b }) },
	"MultiplyInt":   func(n ...any) int { return int(foldFloat(1, n, func(a, b float64) float64 { return a * b })) },
	"SubtractFloat": func(i, j any) float64 { return toFloat64(i) - toFloat64(j) },
	"SubtractInt":   func(i, j any) int { return int(toFloat64(i) - toFloat64(j)) },
}

func foldFloat(init float64, n []any, f func(a, b float64) float64) float64 {
	acc := init
	for _, v := range n {
		acc = f(acc, toFloat64(v))
	}
	return acc
}

func toFloat64(v any) float64 {
	switch i := v.(type) {
	case float64:
		return i
	case float32:
		return float64(i)
	case int64:
		return float64(i)
	case int32:
		return float64(i)
	case int:
		return float64(i)
	case uint64:
		return float64(i)
	case uint32:
		return float64(i)
	case uint:
		return float64(i)
	case string:
		if f, err := strconv.ParseFloat(i, 64); err == nil {
			return f
		}
	}
	panic(fmt.Sprintf("cannot cast %v to float64", v))
}

func toInt(v any) int {
	if s, ok := v.(string); ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			panic(fmt.Sprintf("cannot cast %v to int", v))
		}
		return n
	}
	return int(toFloat64(v))
}

func toJSONText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("cannot JSON-encode %v: %v", v, err))
	}
	return strings.TrimSpace(b.String())
}

// objTemplate is one template file: rendered per object when it has actions, else decoded once.
type objTemplate struct {
	path   string
	tmpl   *template.Template
	static []k8sruntime.Object
}

func loadTemplate(path string) (*objTemplate, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, badInput("%v", err)
	}
	t := &objTemplate{path: path}
	if !bytes.Contains(data, []byte("{{")) {
		objs, err := decodeObjects(path, data)
		if err != nil {
			return nil, badInput("%v", err)
		}
		t.static = objs
		return t, nil
	}
	t.tmpl, err = template.New("object").Funcs(templateFuncs).Parse(string(data))
	if err != nil {
		return nil, badInput("%s: %v", path, err)
	}
	return t, nil
}

// render returns fresh objects for index i of count.
func (t *objTemplate) render(i, count int, params map[string]any) (objs []k8sruntime.Object, err error) {
	if t.tmpl == nil {
		for _, o := range t.static {
			objs = append(objs, o.DeepCopyObject())
		}
		return objs, nil
	}
	env := map[string]any{}
	for k, v := range params {
		env[k] = v
	}
	env["Index"], env["Count"] = i, count
	defer func() {
		if p := recover(); p != nil {
			err = badInput("%s: template: %v", t.path, p)
		}
	}()
	var b bytes.Buffer
	if err := t.tmpl.Execute(&b, env); err != nil {
		return nil, badInput("%s: %v", t.path, err)
	}
	objs, err = decodeObjects(t.path, b.Bytes())
	if err != nil {
		return nil, badInput("%v", err)
	}
	return objs, nil
}

func (t *objTemplate) one(i, count int, params map[string]any, kind string) (k8sruntime.Object, error) {
	objs, err := t.render(i, count, params)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 || objs[0].GetObjectKind().GroupVersionKind().Kind != kind {
		if len(objs) == 1 {
			if _, ok := objs[0].(*v1.Node); ok && kind == "Node" {
				return objs[0], nil
			}
			if _, ok := objs[0].(*v1.Pod); ok && kind == "Pod" {
				return objs[0], nil
			}
		}
		return nil, badInput("%s: kind: expected exactly one %s in the template", t.path, kind)
	}
	return objs[0], nil
}

var defaultNodeYAML = []byte("apiVersion: v1\nkind: Node\nmetadata:\n  generateName: scheduler-perf-\nstatus:\n  capacity: {pods: '110', cpu: '4', memory: 32Gi}\n  allocatable: {pods: '110', cpu: '4', memory: 32Gi}\n")

var defaultPodYAML = []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: pod-\nspec:\n  containers:\n  - name: pause\n    image: registry.k8s.io/pause:3.10\n    resources:\n      requests: {cpu: 100m, memory: 500Mi}\n")

var nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// uidOf is a stable UID for an object name (as normalize gives).
// templateOr loads the template at path, or, when the op names none, upstream's default object.
func templateOr(path, name string, def []byte) (*objTemplate, error) {
	if path != "" {
		return loadTemplate(path)
	}
	objs, err := decodeObjects(name, def)
	if err != nil {
		return nil, err
	}
	return &objTemplate{path: name, static: objs}, nil
}

func (r *runner) createNodes(o op) error {
	t, err := templateOr(o.templatePath, "<default node>", defaultNodeYAML)
	if err != nil {
		return err
	}
	for i := 0; i < o.count; i++ {
		obj, err := t.one(i, o.count, o.templateParams, "Node")
		if err != nil {
			return err
		}
		node := obj.(*v1.Node)
		// Names as schedperf gives them (placements compare byte for byte).
		if node.Name == "" {
			prefix := node.GenerateName
			if prefix == "" {
				prefix = "node-"
			}
			node.Name = prefix + strconv.Itoa(r.nodesCreated)
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		if _, ok := node.Labels["kubernetes.io/hostname"]; !ok {
			node.Labels["kubernetes.io/hostname"] = node.Name
		}
		if o.label != nil && len(o.label.LabelValues) > 0 {
			node.Labels[o.label.LabelKey] = o.label.LabelValues[i%len(o.label.LabelValues)]
		}
		if o.unique != nil {
			node.Labels[o.unique.LabelKey] = "unique-" + strconv.Itoa(r.nodesCreated)
		}
		if len(o.alloc) > 0 {
			// The apiserver defaults allocatable to capacity; upstream's strategy then adds its keys.
			if len(node.Status.Allocatable) == 0 {
				node.Status.Allocatable = node.Status.Capacity.DeepCopy()
			}
			if node.Status.Allocatable == nil {
				node.Status.Allocatable = v1.ResourceList{}
			}
			for k, v := range o.alloc {
				q, err := resource.ParseQuantity(v)
				if err != nil {
					return badInput("%s: nodeAllocatableStrategy.nodeAllocatable.%s: %v", r.w.file, k, err)
				}
				node.Status.Allocatable[v1.ResourceName(k)] = q
			}
		}
		r.nodesCreated++
		if err := normalize(node, r.classes); err != nil {
			return badInput("%s: %v", t.path, err)
		}
		if err := r.tracker.Create(nodesGVR, node, ""); err != nil {
			return badInput("%s: node %s: %v", t.path, node.Name, err)
		}
		if o.strategy != nil {
			if err := r.createCSINode(node.Name, o.strategy); err != nil {
				return err
			}
		}
		r.nodeNames = append(r.nodeNames, node.Name)
	}
	// Pods come after the nodes are in the scheduler's cache, as after upstream's createNodes.
	want := len(r.nodeNames)
	if err := waitFor("nodes in the scheduler cache", func() bool { return r.sched.Cache.NodeCount() >= want }); err != nil {
		return err
	}
	// scheduler_perf's NodeUpdateFn runs after every createNodes op (run_ndf.go).
	return r.ndfUpdateNodes()
}

func (r *runner) ensureNamespace(name string) error {
	if _, err := r.tracker.Get(namespacesGVR, "", name); err == nil {
		return nil
	}
	ns := &v1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := normalize(ns, r.classes); err != nil {
		return err
	}
	if err := r.tracker.Create(namespacesGVR, ns, ""); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func (r *runner) createPods(opIndex int, o op) error {
	if err := r.ensureNamespace(o.namespace); err != nil {
		return err
	}
	t, err := templateOr(o.templatePath, "<default pod>", defaultPodYAML)
	if err != nil {
		return err
	}
	if o.collect {
		r.mu.Lock()
		r.win = window{open: true, namespaces: []string{o.namespace}}
		r.mu.Unlock()
	}
	var volumes *volumeTemplates
	if o.pvcTemplate != "" {
		if volumes, err = loadVolumeTemplates(o.pvTemplate, o.pvcTemplate); err != nil {
			return err
		}
	}
	// A template without actions is prepared once (defaulting, priority, requests) and copied per pod.
	var prepared *v1.Pod
	var cpu, mem int64
	var tmplName string
	prepare := func(i int) (*v1.Pod, error) {
		if prepared != nil {
			return prepared.DeepCopy(), nil
		}
		obj, err := t.one(i, o.count, o.templateParams, "Pod")
		if err != nil {
			return nil, err
		}
		pod := obj.(*v1.Pod)
		tmplName = pod.Name
		pod.Namespace = o.namespace
		if err := normalize(pod, r.classes); err != nil {
			return nil, badInput("%s: %v", t.path, err)
		}
		req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		cpu, mem = req.Cpu().MilliValue(), req.Memory().Value()
		if t.tmpl == nil {
			prepared = pod.DeepCopy()
		}
		return pod, nil
	}
	for i := 0; i < o.count; i++ {
		pod, err := prepare(i)
		if err != nil {
			return err
		}
		// schedperf's naming: generateName (or "pod-") and the run's pod counter, six digits.
		gen := pod.GenerateName
		if tmplName == "" || r.podsCreated > 0 && gen != "" {
			prefix := gen
			if prefix == "" {
				prefix = "pod-"
			}
			pod.Name = fmt.Sprintf("%s%06d", prefix, r.podsCreated)
		}
		pod.UID = uidOf("pods", o.namespace, pod.Name)
		if o.templatePath != "" {
			// scheduler_perf's createPods labels each pod made from a template file.
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels["signature"] = fmt.Sprintf("signature-label-%d", i/max(o.signatureBatch, 1))
		}
		r.podsCreated++
		if volumes != nil {
			if err := r.podVolumes(volumes, o.namespace, i, pod); err != nil {
				return err
			}
		}
		now := time.Now()
		pod.CreationTimestamp = metav1.NewTime(now)
		key := podsKey(o.namespace, pod.Name)
		r.mu.Lock()
		measured := r.win.open && (len(r.win.namespaces) == 0 || contains(r.win.namespaces, o.namespace))
		if measured && r.win.start.IsZero() {
			r.win.start = now
		}
		r.pods[key] = &podRec{op: opIndex, created: now, measured: measured, cpuMilli: cpu, memBytes: mem,
			namespace: o.namespace, labels: pod.Labels}
		r.pendingByOp[opIndex]++
		r.mu.Unlock()
		if err := r.tracker.Create(podsGVR, pod, o.namespace); err != nil {
			return badInput("%s: pod %s: %v", t.path, key, err)
		}
	}
	if !o.skipWait {
		if err := r.waitPending(fmt.Sprintf("op %d (createPods)", opIndex), func() int {
			return r.pendingByOp[opIndex]
		}); err != nil {
			return err
		}
	}
	if o.collect {
		r.mu.Lock()
		r.win.open = false
		r.mu.Unlock()
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// waitPending polls until pending() (called under r.mu) is 0; no bind for stallTimeout fails the wait.
func (r *runner) waitPending(what string, pending func() int) error {
	for {
		r.mu.Lock()
		n := pending()
		stalled := time.Since(r.lastBind) > stallTimeout
		r.mu.Unlock()
		if n <= 0 {
			return nil
		}
		if stalled {
			return &waitError{fmt.Sprintf("%s: %d pods not scheduled, no pod bound for %s", what, n, stallTimeout)}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitError is a wait that upstream's harness would fail (the workload fails, exit 1).
type waitError struct{ msg string }

func (e *waitError) Error() string { return e.msg }

func (r *runner) matching(namespaces []string, selector map[string]string) func(*podRec) bool {
	return func(rec *podRec) bool {
		if len(namespaces) > 0 && !contains(namespaces, rec.namespace) {
			return false
		}
		for k, v := range selector {
			if rec.labels[k] != v {
				return false
			}
		}
		return true
	}
}

func (r *runner) barrier(opIndex int, o op) error {
	match := r.matching(o.namespaces, o.labelSelector)
	r.mu.Lock()
	r.lastBind = time.Now()
	r.mu.Unlock()
	return r.waitPending(fmt.Sprintf("op %d (barrier)", opIndex), func() int {
		n := 0
		for _, rec := range r.pods {
			if rec.node == "" && !rec.deleted && match(rec) {
				n++
			}
		}
		return n
	})
}

func (r *runner) deletePods(opIndex int, o op) error {
	match := r.matching([]string{o.namespace}, o.labelSelector)
	var keys []string
	r.mu.Lock()
	for k, rec := range r.pods {
		if !rec.deleted && match(rec) {
			keys = append(keys, k)
		}
	}
	r.mu.Unlock()
	sort.Strings(keys)
	var tick <-chan time.Time
	if o.perSecond > 0 {
		t := time.NewTicker(time.Second / time.Duration(o.perSecond))
		defer t.Stop()
		tick = t.C
	}
	for _, k := range keys {
		if tick != nil {
			<-tick
		}
		ns, name, _ := cutKey(k)
		r.mu.Lock()
		r.pods[k].byRun = true
		r.mu.Unlock()
		if err := r.tracker.Delete(podsGVR, ns, name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("op %d (deletePods): %s: %v", opIndex, k, err)
		}
	}
	if o.skipWait {
		return nil
	}
	return waitFor(fmt.Sprintf("op %d (deletePods)", opIndex), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, k := range keys {
			if !r.pods[k].deleted {
				return false
			}
		}
		return true
	})
}

func (r *runner) createAny(o op) error {
	t, err := loadTemplate(o.templatePath)
	if err != nil {
		return err
	}
	for i := 0; i < o.count; i++ {
		objs, err := t.render(i, o.count, o.templateParams)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			gvr, _ := clusterGVR(obj)
			acc, _ := meta.Accessor(obj)
			if o.namespace != "" && acc.GetNamespace() == "" && !clusterScoped(gvr.Resource) {
				acc.SetNamespace(o.namespace)
			}
			if ns := acc.GetNamespace(); ns != "" {
				if err := r.ensureNamespace(ns); err != nil {
					return err
				}
			}
			if pc, ok := obj.(*schedulingv1PC); ok {
				r.classes[pc.Name] = pc
			}
			if err := normalize(obj, r.classes); err != nil {
				return badInput("%s: %v", t.path, err)
			}
			if _, ok := obj.(*v1.Pod); ok {
				return badInput("%s: createAny of a Pod is not supported by schedperf-oracle run (use createPods)", t.path)
			}
			if err := r.tracker.Create(gvr, obj, acc.GetNamespace()); err != nil {
				return badInput("%s: %s %s: %v", t.path, gvr.Resource, acc.GetName(), err)
			}
		}
	}
	return nil
}

// runWorkload runs one workload on a fresh scheduler. A nil report comes with a bad-input error; a report
// with an error is a failed workload.
func runWorkload(w workload, opt runOptions) (*runReport, error) {
	if err := applyGates(opt.gates); err != nil {
		return nil, badInput("%s: %s/%s: %v", w.file, w.testCase, w.name, err)
	}
	// Upstream's dra/compatibilitygroups and dra/listattributes suites pin the experimental allocator in
	// their _test.go (structured.EnableAllocators("experimental") around RunIntegrationPerfScheduling):
	// the oracle does the same for a workload whose gates turn on the feature those suites exercise.
	defer pinAllocatorsFor(opt.gates)()
	var cfgData []byte
	configSource := "default"
	if w.configPath != "" {
		b, err := readFile(w.configPath)
		if err != nil {
			return nil, badInput("%v", err)
		}
		cfgData, configSource = b, w.configPath
	}
	cfg, err := decodeConfig(cfgData)
	if err != nil {
		return nil, badInput("%s: %v", nameOr(w.configPath, "default config"), err)
	}
	watch.DefaultChanSize = watchBuffer(w)
	// nodedeclaredfeatures' PreRunFn, before the scheduler is built, as upstream's (run_ndf.go).
	defer ndfPreRun(w)()
	wallStart, cpuStart := time.Now(), cpuSeconds()
	r, err := newRunner(w, cfg, opt)
	if err != nil {
		return nil, badInput("%s: %s/%s: scheduler.New: %v", w.file, w.testCase, w.name, err)
	}
	var runErr error
	for i, o := range w.ops {
		switch o.kind {
		case opCreateNodes:
			err = r.createNodes(o)
		case opCreateNamespaces:
			for j := 0; j < o.count && err == nil; j++ {
				err = r.ensureNamespace(fmt.Sprintf("%s-%d", o.prefix, j))
			}
		case opCreatePods:
			err = r.createPods(i, o)
		case opDeletePods:
			err = r.deletePods(i, o)
		case opBarrier:
			err = r.barrier(i, o)
		case opSleep:
			time.Sleep(o.duration)
		case opStartMetrics:
			r.mu.Lock()
			r.win = window{open: true, namespaces: o.namespaces}
			r.mu.Unlock()
		case opStopMetrics:
			r.mu.Lock()
			r.win.open = false
			r.mu.Unlock()
		case opCreateAny:
			err = r.createAny(o)
		case opCreatePodGroups:
			err = r.createPodGroups(o)
		case opAllocClaims:
			err = r.allocClaims(o)
		}
		if err != nil {
			if _, ok := err.(*inputError); ok {
				r.stop()
				return nil, err
			}
			runErr = err
			break
		}
	}
	rr := r.finish(opt, configSource, cfgData, wallStart, cpuStart)
	if runErr == nil && rr.Accounting.Lost > 0 {
		runErr = fmt.Errorf("%d pods lost", rr.Accounting.Lost)
	}
	return rr, runErr
}

// finish stops the scheduler and accounts for every pod the run created.
func (r *runner) finish(opt runOptions, configSource string, cfgData []byte, wallStart time.Time, cpuStart float64) *runReport {
	// Pods bound in the tracker but not yet seen by the informer: give the watch a moment.
	_ = waitFor("informer catch-up", func() bool {
		pods, err := r.tracker.List(podsGVR, v1.SchemeGroupVersion.WithKind("Pod"), "")
		if err != nil {
			return true
		}
		list := pods.(*v1.PodList)
		r.mu.Lock()
		defer r.mu.Unlock()
		for i := range list.Items {
			p := &list.Items[i]
			if rec := r.pods[podsKey(p.Namespace, p.Name)]; rec != nil && p.Spec.NodeName != "" && rec.node == "" {
				return false
			}
		}
		return true
	})
	// Pending pods: in the queue (unschedulable or pending), or lost. Pods created just before the end
	// (skipWaitToCompletion) may still be on their way through the informer: give them a moment too.
	var queued map[string]bool
	_ = waitFor("pending pods in the queue", func() bool {
		queued = map[string]bool{}
		pending, _ := r.sched.SchedulingQueue.PendingPods()
		// A pod-group entity that did not fit goes back to backoffQ and is retried (never parked as
		// unschedulable): at the end its pods may be in a cycle.
		pending = append(pending, r.sched.SchedulingQueue.InFlightPods()...)
		for _, p := range pending {
			queued[podsKey(p.Namespace, p.Name)] = true
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for k, rec := range r.pods {
			if !rec.deleted && rec.node == "" && !queued[k] {
				return false
			}
		}
		return true
	})
	var diffs []string
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var acc accounting
	placements := map[string]string{}
	reasons := map[string]uint64{}
	var measured, scheduled, unsched uint64
	nodeIdx := map[string]int{}
	nodes := make([]nodeUsage, len(r.nodeNames))
	for i, n := range r.nodeNames {
		nodeIdx[n] = i
		obj, err := r.tracker.Get(nodesGVR, "", n)
		if err != nil {
			continue
		}
		a := obj.(*v1.Node).Status.Allocatable
		nodes[i] = nodeUsage{allocCPU: a.Cpu().MilliValue(), allocMem: a.Memory().Value(), allocPods: a.Pods().Value()}
	}
	var largestCPU, largestMem int64
	keys := make([]string, 0, len(r.pods))
	for k := range r.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pendingTotal uint64
	for _, k := range keys {
		rec := r.pods[k]
		acc.Created++
		if rec.cpuMilli > largestCPU || rec.cpuMilli == largestCPU && rec.memBytes > largestMem {
			largestCPU, largestMem = rec.cpuMilli, rec.memBytes
		}
		if rec.measured {
			measured++
		}
		switch {
		case rec.deleted:
			acc.Deleted++
		case rec.node != "":
			acc.Bound++
			placements[k] = rec.node
			if rec.measured {
				scheduled++
			}
			if i, ok := nodeIdx[rec.node]; ok {
				nodes[i].reqCPU += rec.cpuMilli
				nodes[i].reqMem += rec.memBytes
				nodes[i].pods++
			}
			ns, name, _ := cutKey(k)
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uidOf("pods", ns, name)}, Spec: v1.PodSpec{NodeName: rec.node}}
			if _, err := r.sched.Cache.GetPod(p); err != nil && len(diffs) < 50 {
				diffs = append(diffs, fmt.Sprintf("%s: bound to %s, not in the scheduler cache", k, rec.node))
			}
		case !queued[k]:
			acc.Lost++
		case rec.failure != "" && rec.failCode != fwk.Error:
			acc.Unschedulable++
			reasons[rec.failure]++
			pendingTotal++
			if rec.measured {
				unsched++
			}
		default:
			acc.Pending++
			pendingTotal++
		}
	}
	var binds []int64
	var window int64
	if !r.win.start.IsZero() {
		for _, t := range r.measuredBinds {
			d := t.Sub(r.win.start).Nanoseconds()
			if d < 0 {
				d = 0
			}
			binds = append(binds, d)
			if d+1 > window {
				window = d + 1
			}
		}
	}
	tp := throughput(binds, window)
	var all []int64
	byResult := map[string]percentiles{}
	for _, res := range []string{"scheduled", "unschedulable", "error"} {
		if len(r.attempts[res]) > 0 {
			byResult[res] = percentilesOf(r.attempts[res], 1e3)
			all = append(all, r.attempts[res]...)
		}
	}
	cfgDigest := ""
	if len(cfgData) > 0 {
		s := sha256.Sum256(cfgData)
		cfgDigest = hex.EncodeToString(s[:])
	}
	c := r.counters
	c.PreemptionVictims = atomic.LoadUint64(&r.victims)
	rr := &runReport{
		TestCase: r.w.testCase, Workload: r.w.name, Labels: r.w.labels, Threads: r.parallelism,
		Rep: opt.rep, ConfigSource: configSource, ConfigDigest: cfgDigest, Agent: "fake-clientset",
		FeatureGatesIgnored: []string{}, FeatureGatesHonoured: []string{},
		Outcome: runOutcome{Passed: true, Reasons: map[string]uint64{}}, MeasuredPods: measured, ScheduledPods: scheduled, UnschedulablePods: unsched,
		DurationSeconds: float64(window) / 1e9, WallSeconds: time.Since(wallStart).Seconds(),
		CPUSeconds: cpuSeconds() - cpuStart, Throughput: tp,
		AttemptLatencyMicros: percentilesOf(all, 1e3), AttemptLatencyByResultMicros: byResult,
		E2ELatencyMicros: percentilesOf(r.e2e, 1e3), PodStartupStagesMillis: map[string]percentiles{},
		ExtensionPointMicros: map[string]percentiles{}, PluginTimings: []any{}, Counters: c, Accounting: acc,
		UnschedulableReasons: reasons, CacheConsistent: len(diffs) == 0, CacheDifferences: append([]string{}, diffs...),
		PlacementQuality: quality(nodes, largestCPU, largestMem, pendingTotal),
		PlacementDigest:  placementDigest(placements), PeakRSSBytes: peakRSSBytes(),
		ThresholdMetric: "SchedulingThroughput/Average", Histograms: map[string]string{},
	}
	if len(placements) <= placementsInReportMaxLength {
		rr.Placements = placements
	}
	return rr
}
