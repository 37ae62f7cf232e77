package main

// hint: one plugin's real QueueingHintFns on one event (see README.md, "hint: the plugins' queueing
// hints"). The plugin is the profile's own instance (built by scheduler.New from the configuration, so
// its args are upstream's defaults or the configuration's); its registrations come from its
// EventsToRegister, matched and called as the scheduling queue's isPodWorthRequeuing does.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// hintCase is one request: the plugin that rejected `pod`, the event and its objects.
type hintCase struct {
	Plugin string          `json:"plugin"`
	Config *string         `json:"config"`
	Event  string          `json:"event"`
	OldObj json.RawMessage `json:"oldObj"`
	NewObj json.RawMessage `json:"newObj"`
	Pod    json.RawMessage `json:"pod"`
}

// hintAnswer is Queue or Skip, with the events the update was split into (as the event handlers split
// it) and, per event, each matching registration's answer ("Queue", "Skip" or "error: ...").
type hintAnswer struct {
	Hint   string              `json:"hint"`
	Events map[string][]string `json:"events"`
}

// hintServer keeps one scheduler per configuration text (building one costs milliseconds).
type hintServer struct {
	envs map[string]*env
}

func (h *hintServer) close() {
	for _, e := range h.envs {
		e.close()
	}
}

func (h *hintServer) plugin(cfgText *string, profile, name string) (fwk.EnqueueExtensions, error) {
	key := ""
	if cfgText != nil {
		key = *cfgText
	}
	e, ok := h.envs[key]
	if !ok {
		cfg, err := configFor(cfgText, nil)
		if err != nil {
			return nil, err
		}
		e, err = newEnv(cfg, cfg.Profiles, cfg.PercentageOfNodesToScore, nil)
		if err != nil {
			return nil, err
		}
		h.envs[key] = e
	}
	fw, ok := e.sched.Profiles[profile]
	if !ok {
		return nil, fmt.Errorf("pod: spec.schedulerName %q: no such profile", profile)
	}
	for _, ext := range fw.EnqueueExtensions() {
		if ext.Name() == name {
			return ext, nil
		}
	}
	return nil, fmt.Errorf("plugin: %q is not an enabled plugin with queueing hints in profile %q", name, profile)
}

// decodeHintObject reads a Node or Pod as an apiserver would store it (normalize); nil for null.
func decodeHintObject(field string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	objs, err := decodeOne(field, 1, raw)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s: expected one Node or Pod", field)
	}
	if err := normalize(objs[0], nil); err != nil {
		return nil, fmt.Errorf("%s: %v", field, err)
	}
	switch o := objs[0].(type) {
	case *v1.Node:
		return o, nil
	case *v1.Pod:
		return o, nil
	}
	return nil, fmt.Errorf("%s: expected a Node or a Pod", field)
}

// events are the cluster events the scheduler's event handlers (or, for the pod's own update, the
// queue's Update) deliver for the case, with their objects.
func (c *hintCase) events(oldObj, newObj any) ([]fwk.ClusterEvent, error) {
	oldNode, _ := oldObj.(*v1.Node)
	newNode, _ := newObj.(*v1.Node)
	oldPod, _ := oldObj.(*v1.Pod)
	newPod, _ := newObj.(*v1.Pod)
	need := func(ok bool, what string) error {
		if !ok {
			return fmt.Errorf("event %s: needs %s", c.Event, what)
		}
		return nil
	}
	switch c.Event {
	case "NodeAdd":
		return []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Add}}, need(newNode != nil, "newObj: a Node")
	case "NodeDelete":
		return []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Delete}}, need(oldNode != nil, "oldObj: a Node")
	case "NodeUpdate":
		if err := need(oldNode != nil && newNode != nil, "oldObj and newObj: Nodes"); err != nil {
			return nil, err
		}
		return framework.NodeSchedulingPropertiesChange(newNode, oldNode), nil
	case "AssignedPodAdd":
		return []fwk.ClusterEvent{framework.EventAssignedPodAdd}, need(newPod != nil && newPod.Spec.NodeName != "", "newObj: a Pod with spec.nodeName")
	case "AssignedPodDelete":
		return []fwk.ClusterEvent{framework.EventAssignedPodDelete}, need(oldPod != nil && oldPod.Spec.NodeName != "", "oldObj: a Pod with spec.nodeName")
	case "AssignedPodUpdate":
		if err := need(oldPod != nil && newPod != nil && newPod.Spec.NodeName != "", "oldObj and newObj: Pods with spec.nodeName"); err != nil {
			return nil, err
		}
		return framework.PodSchedulingPropertiesChange(newPod, oldPod, false), nil
	case "UnscheduledPodUpdate":
		if err := need(oldPod != nil && newPod != nil && newPod.Spec.NodeName == "", "oldObj and newObj: the rejected pod before and after"); err != nil {
			return nil, err
		}
		return framework.PodSchedulingPropertiesChange(newPod, oldPod, true), nil
	}
	return nil, fmt.Errorf("event: unknown %q (want NodeAdd, NodeUpdate, NodeDelete, AssignedPodAdd, AssignedPodUpdate, AssignedPodDelete or UnscheduledPodUpdate)", c.Event)
}

func (h *hintServer) answer(c *hintCase) (*hintAnswer, error) {
	oldObj, err := decodeHintObject("oldObj", c.OldObj)
	if err != nil {
		return nil, err
	}
	newObj, err := decodeHintObject("newObj", c.NewObj)
	if err != nil {
		return nil, err
	}
	po, err := decodeHintObject("pod", c.Pod)
	if err != nil {
		return nil, err
	}
	pod, ok := po.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod: expected a Pod")
	}
	if c.Event == "UnscheduledPodUpdate" {
		// The queue updates the pod's info before it asks the hints (PriorityQueue.Update).
		newPod, _ := newObj.(*v1.Pod)
		if newPod == nil || newPod.Namespace != pod.Namespace || newPod.Name != pod.Name {
			return nil, fmt.Errorf("event UnscheduledPodUpdate: newObj must be the rejected pod")
		}
		pod = newPod
	}
	events, err := c.events(oldObj, newObj)
	if err != nil {
		return nil, err
	}
	ext, err := h.plugin(c.Config, pod.Spec.SchedulerName, c.Plugin)
	if err != nil {
		return nil, err
	}
	regs, err := ext.EventsToRegister(context.Background())
	if err != nil {
		return nil, fmt.Errorf("plugin %s: EventsToRegister: %v", c.Plugin, err)
	}
	logger := klog.Background()
	out := &hintAnswer{Hint: "Skip", Events: map[string][]string{}}
	for _, ev := range events {
		answers := []string{}
		for _, reg := range regs {
			candidates := []fwk.ClusterEvent{reg.Event}
			if reg.Event.Resource == fwk.Pod {
				candidates = framework.UnrollPodEvent(reg.Event)
			}
			matched := false
			for _, cand := range candidates {
				matched = matched || framework.MatchClusterEvents(cand, ev)
			}
			if !matched {
				continue
			}
			hint, herr := fwk.Queue, error(nil)
			if reg.QueueingHintFn != nil {
				hint, herr = reg.QueueingHintFn(logger, pod, oldObj, newObj)
			}
			switch {
			case herr != nil:
				// isPodWorthRequeuing: an error counts as Queue.
				answers = append(answers, "error: "+herr.Error())
				out.Hint = "Queue"
			case hint == fwk.Queue:
				answers = append(answers, "Queue")
				out.Hint = "Queue"
			default:
				answers = append(answers, "Skip")
			}
		}
		out.Events[ev.Label()] = answers
	}
	return out, nil
}

// cmdHint reads one case per line on stdin and answers one line each: {"hint":"Queue"|"Skip",
// "events":{...}}, or {"error":"..."} for a case it cannot run.
func cmdHint(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		return badInput("hint: unexpected argument %q (cases come on stdin, one per line)", args[0])
	}
	h := &hintServer{envs: map[string]*env{}}
	defer h.close()
	in := bufio.NewReaderSize(stdin, 1<<20)
	out := bufio.NewWriter(stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var resp any
			var c hintCase
			dec := json.NewDecoder(strings.NewReader(string(line)))
			dec.DisallowUnknownFields()
			if derr := dec.Decode(&c); derr != nil {
				resp = errorResponse{Error: "case: " + derr.Error()}
			} else if a, aerr := h.answer(&c); aerr != nil {
				resp = errorResponse{Error: aerr.Error()}
			} else {
				resp = a
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
