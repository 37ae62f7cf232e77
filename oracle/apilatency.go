package main

// `run --api-latency D --events FILE`: preemption's API calls take a modelled time, as schedperf models them,
// and the run writes a trace of the preemption and the binds, so a gate's effect on a run (SchedulerAsyncPreemption:
// whether the scheduling thread waits for the victims) can be compared with schedperf's `run --virtual-time --events`.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// latencyClient is the clientset the scheduler gets: the fake, with preemption's two API calls per victim
// (the DisruptionTarget status patch and the delete, pkg/scheduler/framework/preemption/executor.go's
// PreemptPod) each taking r.apiLatency before it reaches the fake. The wait is outside the fake's lock (which
// serialises every call), so the executor's parallel calls overlap as on an apiserver. Other calls (binds, the
// preemptor's own status patches, the informers' lists and watches) take no time, as in schedperf's model.
type latencyClient struct {
	*fake.Clientset
	r *runner
}

func (c latencyClient) CoreV1() corev1client.CoreV1Interface {
	return latencyCore{CoreV1Interface: c.Clientset.CoreV1(), r: c.r}
}

type latencyCore struct {
	corev1client.CoreV1Interface
	r *runner
}

func (c latencyCore) Pods(namespace string) corev1client.PodInterface {
	return latencyPods{PodInterface: c.CoreV1Interface.Pods(namespace), r: c.r, ns: namespace}
}

type latencyPods struct {
	corev1client.PodInterface
	r  *runner
	ns string
}

// Patch: a victim's DisruptionTarget condition is its first call, the trace's "preempted".
func (p latencyPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Pod, error) {
	if len(subresources) == 1 && subresources[0] == "status" && bytes.Contains(data, []byte(v1.DisruptionTarget)) {
		p.r.trace.add(p.r, "preempted", podsKey(p.ns, name), nil)
		time.Sleep(p.r.apiLatency)
		pod, err := p.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
		if apierrors.IsNotFound(err) {
			// Another preemption deleted it first: the executor makes no delete call (and, for a last
			// victim, no deletion event follows).
			p.r.trace.add(p.r, "notFound", podsKey(p.ns, name), nil)
		}
		return pod, err
	}
	return p.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
}

// Delete: only the scheduler deletes through the client (preemption's victims).
func (p latencyPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	time.Sleep(p.r.apiLatency)
	err := p.PodInterface.Delete(ctx, name, opts)
	switch {
	case err == nil:
		p.r.trace.add(p.r, "deleted", podsKey(p.ns, name), nil)
	case apierrors.IsNotFound(err):
		p.r.trace.add(p.r, "notFound", podsKey(p.ns, name), nil)
	}
	return err
}

// eventTrace is `run --events`: JSON lines in the shape of schedperf's `run --events` trace
// ({"event","pod","tNanos","detail"}), tNanos from the workload's start on the real clock. Events:
// "workload" (testCase, workload), "nominated" (the failure handler got a nominated node: detail.node),
// "preempted" (a victim's first API call starts), "deleted" (a victim's delete call succeeded),
// "notFound" (its status patch or delete found it deleted already), "bound" (the bind call reached the fake:
// detail.node). A nil trace records nothing.
type eventTrace struct {
	mu  sync.Mutex
	out io.Writer
	err error
}

func (t *eventTrace) add(r *runner, event, pod string, detail map[string]any) {
	if t == nil {
		return
	}
	line := map[string]any{"event": event, "pod": pod, "tNanos": time.Since(r.start).Nanoseconds(), "detail": detail}
	t.write(line)
}

func (t *eventTrace) write(line map[string]any) {
	b, err := json.Marshal(line)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		_, err = t.out.Write(append(b, '\n'))
	}
	if t.err == nil {
		t.err = err
	}
}
