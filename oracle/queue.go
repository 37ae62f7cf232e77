package main

// queue: queue scripts run on upstream's real PriorityQueue (pkg/scheduler/backend/queue), with a fake
// clock and the flushes of its Run loop driven at the virtual times they would run. See README.md,
// "queue: scripts on the real scheduling queue".

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	_ "unsafe" // go:linkname to the queue's unexported flush methods.

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/schedulinggates"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"
)

// The two methods upstream's Run starts on tickers (a 1 s ticker aligned to whole seconds, and a 30 s
// wait.Until from the start). They are unexported; linked here so that they run at exact virtual times.
//
//go:linkname flushBackoffQCompleted k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushBackoffQCompleted
func flushBackoffQCompleted(p *queue.PriorityQueue, logger klog.Logger)

//go:linkname flushUnschedulableEntitiesLeftover k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushUnschedulableEntitiesLeftover
func flushUnschedulableEntitiesLeftover(p *queue.PriorityQueue, logger klog.Logger)

// queueScript is one script: gates and steps (see README.md for the step kinds).
type queueScript struct {
	PopFromBackoffQ *bool       `json:"popFromBackoffQ"`
	Steps           []queueStep `json:"steps"`
}

type queueStep struct {
	Op       string   `json:"op"`
	Pod      string   `json:"pod"`
	Priority int32    `json:"priority"`
	Gated    bool     `json:"gated"`
	Plugins  []string `json:"plugins"`
	Ms       int64    `json:"ms"`
	Event    string   `json:"event"`
	Change   string   `json:"change"`
}

// queueState is the answer after each step: what pop returned and each sub-queue's pods, by name.
type queueState struct {
	Popped        *string  `json:"popped,omitempty"`
	Active        []string `json:"active"`
	Backoff       []string `json:"backoff"`
	Unschedulable []string `json:"unschedulable"`
	Gated         []string `json:"gated"`
}

// queueEpoch is virtual time 0: a whole second, so windows and ticks fall on whole seconds of script time.
var queueEpoch = time.Unix(1_000_000_000, 0)

// queueHintEvents lists, per plugin, the events on which its hint answers Queue (other events: not
// registered, so the plugin never requeues a pod on them). This is schedperf's coarse table
// (src/queue/hints.rs), so the check covers the queue's mechanics, not the plugins' hint bodies.
var queueHintEvents = func() map[string][]fwk.ClusterEvent {
	node := func(a fwk.ActionType) fwk.ClusterEvent { return fwk.ClusterEvent{Resource: fwk.Node, ActionType: a} }
	assigned := func(a fwk.ActionType) fwk.ClusterEvent {
		return fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: a}
	}
	own := []fwk.ClusterEvent{
		{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodLabel},
		{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated},
	}
	with := func(es []fwk.ClusterEvent, more ...fwk.ClusterEvent) []fwk.ClusterEvent {
		return append(append([]fwk.ClusterEvent{}, more...), es...)
	}
	return map[string][]fwk.ClusterEvent{
		"NodeResourcesFit": with(own, node(fwk.Add), node(fwk.UpdateNodeAllocatable), assigned(fwk.Delete),
			assigned(fwk.UpdatePodScaleDown)),
		"NodeAffinity":      with(own, node(fwk.Add), node(fwk.UpdateNodeLabel)),
		"NodeName":          {node(fwk.Add)},
		"TaintToleration":   with(own, node(fwk.Add), node(fwk.UpdateNodeTaint)),
		"NodeUnschedulable": {node(fwk.Add), node(fwk.UpdateNodeTaint)},
		"NodePorts":         {node(fwk.Add), assigned(fwk.Delete)},
		"PodTopologySpread": with(own, node(fwk.Add), node(fwk.Delete), node(fwk.UpdateNodeLabel),
			node(fwk.UpdateNodeTaint), assigned(fwk.Add), assigned(fwk.UpdatePodLabel),
			assigned(fwk.UpdatePodScaleDown), assigned(fwk.Delete)),
		"InterPodAffinity": with(own, node(fwk.Add), node(fwk.UpdateNodeLabel), assigned(fwk.Add),
			assigned(fwk.UpdatePodLabel), assigned(fwk.UpdatePodScaleDown), assigned(fwk.Delete)),
		"SchedulingGates": own,
	}
}()

// queueHintMap builds the profile's QueueingHintMap from queueHintEvents. A hint on the pod's own update
// (TargetPod) answers Queue only for that pod (an in-flight pod also sees other pods' updates).
func queueHintMap() queue.QueueingHintMap {
	m := queue.QueueingHintMap{}
	for plugin, events := range queueHintEvents {
		for _, e := range events {
			fn := func(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
				return fwk.Queue, nil
			}
			if e.Resource == fwk.TargetPod {
				fn = func(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
					if p, ok := newObj.(*v1.Pod); ok && p.UID == pod.UID {
						return fwk.Queue, nil
					}
					return fwk.QueueSkip, nil
				}
			}
			m[e] = append(m[e], &queue.QueueingHintFunction{PluginName: plugin, QueueingHintFn: fn})
		}
	}
	return m
}

// queueRun is one script's queue and what the script has handed out.
type queueRun struct {
	ctx      context.Context
	logger   klog.Logger
	clock    *testingclock.FakeClock
	q        *queue.PriorityQueue
	pods     map[string]*v1.Pod
	inFlight map[string]*framework.QueuedPodInfo
	now      time.Duration
}

func queuePod(name string, priority int32, gated bool) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{SchedulerName: v1.DefaultSchedulerName, Priority: &priority},
	}
	if gated {
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/gate"}}
	}
	return p
}

func newQueueRun(s *queueScript) (*queueRun, error) {
	gates := map[string]bool{}
	if s.PopFromBackoffQ != nil {
		gates["SchedulerPopFromBackoffQ"] = *s.PopFromBackoffQ
	}
	if err := applyGates(gates); err != nil {
		return nil, err
	}
	metrics.Register() // Once; the queue's gauges are nil before.
	ctx := context.Background()
	logger := klog.FromContext(ctx)
	sortPl, _ := queuesort.New(ctx, nil, nil)
	gatesPl, err := schedulinggates.New(ctx, nil, nil, plfeature.Features{})
	if err != nil {
		return nil, err
	}
	clock := testingclock.NewFakeClock(queueEpoch)
	informerFactory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	q := queue.NewPriorityQueue(
		sortPl.(fwk.QueueSortPlugin).Less,
		informerFactory,
		queue.WithClock(clock),
		queue.WithQueueingHintMapPerProfile(queue.QueueingHintMapPerProfile{v1.DefaultSchedulerName: queueHintMap()}),
		queue.WithPreEnqueuePluginMap(map[string]map[string]fwk.PreEnqueuePlugin{
			v1.DefaultSchedulerName: {schedulinggates.Name: gatesPl.(fwk.PreEnqueuePlugin)},
		}),
		queue.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, time.Hour, ctx.Done())),
	)
	return &queueRun{ctx: ctx, logger: logger, clock: clock, q: q, pods: map[string]*v1.Pod{},
		inFlight: map[string]*framework.QueuedPodInfo{}}, nil
}

// advance moves the clock to now+d, running the Run loop's flushes at each whole second (backoffQ) and
// each 30 s (unschedulable leftovers; after the backoff flush when both fall at once).
func (r *queueRun) advance(d time.Duration) {
	target := r.now + d
	for {
		next := (r.now/time.Second + 1) * time.Second
		if next > target {
			break
		}
		r.now = next
		r.clock.SetTime(queueEpoch.Add(r.now))
		flushBackoffQCompleted(r.q, r.logger)
		if r.now%(30*time.Second) == 0 {
			flushUnschedulableEntitiesLeftover(r.q, r.logger)
		}
	}
	r.now = target
	r.clock.SetTime(queueEpoch.Add(r.now))
}

func (r *queueRun) pod(name string) (*v1.Pod, error) {
	p, ok := r.pods[name]
	if !ok {
		return nil, fmt.Errorf("pod %q was not added", name)
	}
	return p, nil
}

// canPop: Pop blocks on an empty activeQ (and, with SchedulerPopFromBackoffQ, an empty backoffQ of
// rejected pods; pods that failed with an error are never popped from backoffQ).
func (r *queueRun) canPop(popFromBackoff bool) bool {
	if len(r.q.PodsInActiveQ()) > 0 {
		return true
	}
	if !popFromBackoff {
		return false
	}
	for _, p := range r.q.PodsInBackoffQ() {
		if pi, ok := r.q.GetPod(p.Name, p.Namespace, nil); ok && pi.UnschedulablePlugins.Len()+pi.PendingPlugins.Len() > 0 {
			return true
		}
	}
	return false
}

func (r *queueRun) step(st *queueStep, popFromBackoff bool) (*queueState, error) {
	out := &queueState{}
	switch st.Op {
	case "add":
		if _, ok := r.pods[st.Pod]; ok {
			return nil, fmt.Errorf("pod %q added twice", st.Pod)
		}
		p := queuePod(st.Pod, st.Priority, st.Gated)
		r.pods[st.Pod] = p
		r.q.Add(r.ctx, p)
	case "pop":
		if r.canPop(popFromBackoff) {
			e, err := r.q.Pop(r.logger)
			if err != nil {
				return nil, err
			}
			pi, ok := e.(*framework.QueuedPodInfo)
			if !ok {
				return nil, fmt.Errorf("popped a %T", e)
			}
			r.inFlight[pi.Pod.Name] = pi
			name := pi.Pod.Name
			out.Popped = &name
		}
	case "fail", "error":
		pi, ok := r.inFlight[st.Pod]
		if !ok {
			return nil, fmt.Errorf("%s: pod %q is not in flight", st.Op, st.Pod)
		}
		delete(r.inFlight, st.Pod)
		// As the failure handler does: the rejectors of this attempt only (none for an error).
		pi.ClearRejectorPlugins()
		if st.Op == "fail" {
			if len(st.Plugins) == 0 {
				return nil, fmt.Errorf("fail: pod %q: no plugins", st.Pod)
			}
			pi.UnschedulablePlugins = sets.New(st.Plugins...)
		}
		if err := r.q.AddUnschedulablePodIfNotPresent(r.logger, pi, r.q.SchedulingCycle()); err != nil {
			return nil, err
		}
	case "done":
		if _, ok := r.inFlight[st.Pod]; !ok {
			return nil, fmt.Errorf("done: pod %q is not in flight", st.Pod)
		}
		delete(r.inFlight, st.Pod)
		r.q.Done(r.pods[st.Pod].UID)
	case "advance":
		if st.Ms < 0 {
			return nil, fmt.Errorf("advance: negative ms %d", st.Ms)
		}
		r.advance(time.Duration(st.Ms) * time.Millisecond)
	case "event":
		if err := r.event(st); err != nil {
			return nil, err
		}
	case "ungate", "update":
		old, err := r.pod(st.Pod)
		if err != nil {
			return nil, err
		}
		p := old.DeepCopy()
		if st.Op == "ungate" {
			p.Spec.SchedulingGates = nil
		} else {
			p.Labels = map[string]string{"rev": old.Labels["rev"] + "x"}
		}
		r.pods[st.Pod] = p
		r.q.Update(r.ctx, old, p)
	case "activate":
		p, err := r.pod(st.Pod)
		if err != nil {
			return nil, err
		}
		r.q.Activate(r.logger, map[string]*v1.Pod{p.Name: p})
	case "delete":
		p, err := r.pod(st.Pod)
		if err != nil {
			return nil, err
		}
		r.q.Delete(r.logger, p)
	default:
		return nil, fmt.Errorf("unknown op %q (want add, pop, fail, error, done, advance, event, ungate, update, activate or delete)", st.Op)
	}
	r.fill(out)
	return out, nil
}

// event delivers a cluster event as the scheduler's event handlers do (MoveAllToActiveOrBackoffQueue).
func (r *queueRun) event(st *queueStep) error {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	assigned := queuePod("assigned", 0, false)
	assigned.Spec.NodeName = "node-1"
	var (
		e              fwk.ClusterEvent
		oldObj, newObj interface{}
	)
	switch st.Event {
	case "NodeAdd":
		e, newObj = fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, node
	case "NodeDelete":
		e, oldObj = fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Delete}, node
	case "NodeUpdate":
		actions := map[string]fwk.ActionType{"Allocatable": fwk.UpdateNodeAllocatable, "Label": fwk.UpdateNodeLabel,
			"Taint": fwk.UpdateNodeTaint, "Condition": fwk.UpdateNodeCondition}
		a, ok := actions[st.Change]
		if !ok {
			return fmt.Errorf("event NodeUpdate: unknown change %q (want Allocatable, Label, Taint or Condition)", st.Change)
		}
		e, oldObj, newObj = fwk.ClusterEvent{Resource: fwk.Node, ActionType: a}, node, node.DeepCopy()
	case "AssignedPodAdd":
		e, newObj = framework.EventAssignedPodAdd, assigned
	case "AssignedPodDelete":
		e, oldObj = framework.EventAssignedPodDelete, assigned
	case "AssignedPodUpdate":
		a := fwk.UpdatePodLabel
		if st.Change == "ScaleDown" {
			a = fwk.UpdatePodScaleDown
		} else if st.Change != "Label" {
			return fmt.Errorf("event AssignedPodUpdate: unknown change %q (want Label or ScaleDown)", st.Change)
		}
		e, oldObj, newObj = fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: a}, assigned, assigned.DeepCopy()
	default:
		return fmt.Errorf("unknown event %q", st.Event)
	}
	r.q.MoveAllToActiveOrBackoffQueue(r.logger, e, oldObj, newObj, nil)
	return nil
}

func (r *queueRun) fill(out *queueState) {
	names := func(ps []*v1.Pod) []string {
		s := make([]string, 0, len(ps))
		for _, p := range ps {
			s = append(s, p.Name)
		}
		sort.Strings(s)
		return s
	}
	out.Active = names(r.q.PodsInActiveQ())
	out.Backoff = names(r.q.PodsInBackoffQ())
	out.Unschedulable, out.Gated = []string{}, []string{}
	for _, p := range r.q.UnschedulablePods() {
		if pi, ok := r.q.GetPod(p.Name, p.Namespace, nil); ok && pi.Gated() {
			out.Gated = append(out.Gated, p.Name)
		} else {
			out.Unschedulable = append(out.Unschedulable, p.Name)
		}
	}
	sort.Strings(out.Unschedulable)
	sort.Strings(out.Gated)
}

// runQueueScript runs one script; an error names the step.
func runQueueScript(s *queueScript) ([]*queueState, error) {
	r, err := newQueueRun(s)
	if err != nil {
		return nil, err
	}
	defer r.q.Close()
	popFromBackoff := s.PopFromBackoffQ == nil || *s.PopFromBackoffQ
	states := make([]*queueState, 0, len(s.Steps))
	for i := range s.Steps {
		st, err := r.step(&s.Steps[i], popFromBackoff)
		if err != nil {
			return states, fmt.Errorf("steps[%d]: %v", i, err)
		}
		states = append(states, st)
	}
	return states, nil
}

// cmdQueue reads one script per line on stdin and answers one line each: {"states":[...]}; a step that
// makes no sense (popping nothing into done, an unknown op) answers {"refused":"steps[i]: ...","states":[the
// states before it]}, a line that is not a script {"error":...}.
func cmdQueue(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		return badInput("queue: unexpected argument %q (scripts come on stdin, one per line)", args[0])
	}
	in := bufio.NewReaderSize(stdin, 1<<20)
	out := bufio.NewWriter(stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var resp any
			var s queueScript
			dec := json.NewDecoder(strings.NewReader(string(line)))
			dec.DisallowUnknownFields()
			if derr := dec.Decode(&s); derr != nil {
				resp = errorResponse{Error: "script: " + derr.Error()}
			} else if states, rerr := runQueueScript(&s); rerr != nil {
				// The states of the steps before the refused one, so a client can find where it parted.
				resp = map[string]any{"refused": rerr.Error(), "states": states}
			} else {
				resp = map[string]any{"states": states}
			}
			b, _ := json.Marshal(resp)
			out.Write(b)
			out.WriteByte('\n')
			if ferr := out.Flush(); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
