package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// request is one line of the serve protocol (see README.md).
type request struct {
	Op           string            `json:"op"`
	Cluster      *string           `json:"cluster"`
	Pod          *string           `json:"pod"`
	Config       *string           `json:"config"`
	FeatureGates map[string]bool   `json:"featureGates"`
	Objects      []json.RawMessage `json:"objects"`
	Namespace    string            `json:"namespace"`
	Name         string            `json:"name"`
	Seconds      float64           `json:"seconds"`
}

type errorResponse struct {
	Error string `json:"error"`
}

// serve answers one JSON line per request line.
func serve(stdin io.Reader, stdout, stderr io.Writer) error {
	in := bufio.NewReaderSize(stdin, 1<<20)
	out := bufio.NewWriter(stdout)
	s := &server{stderr: stderr}
	defer s.close()
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			resp := s.handle(line)
			b, merr := json.Marshal(resp)
			if merr != nil {
				b, _ = json.Marshal(errorResponse{Error: "encoding response: " + merr.Error()})
			}
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

type server struct {
	stderr      io.Writer
	lastCluster string
	lastObjs    []k8sruntime.Object
	lock        *lockstep
}

func (s *server) close() {
	if s.lock != nil {
		s.lock.close()
	}
}

func (s *server) handle(line []byte) (resp any) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(s.stderr, "panic: %v\n%s", r, debug.Stack())
			resp = errorResponse{Error: fmt.Sprintf("internal error (panic): %v", r)}
		}
	}()
	var req request
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return errorResponse{Error: "request: " + err.Error()}
	}
	var r any
	var err error
	switch req.Op {
	case "explain":
		r, err = s.explain(&req)
	case "init":
		r, err = s.init(&req)
	case "apply", "delete", "schedule", "scheduleGroup", "state", "advance", "allocClaims":
		if s.lock == nil {
			return errorResponse{Error: req.Op + ": no scheduler: send {\"op\":\"init\"} first"}
		}
		switch req.Op {
		case "apply":
			r, err = s.lock.apply(req.Objects)
		case "delete":
			r, err = s.lock.delete(req.Objects)
		case "schedule":
			r, err = s.lock.schedule(req.Namespace, req.Name)
		case "scheduleGroup":
			r, err = s.lock.scheduleGroup(req.Namespace, req.Name)
		case "state":
			r, err = s.lock.state()
		case "advance":
			r, err = s.lock.advance(req.Seconds)
		case "allocClaims":
			r, err = s.lock.allocClaims(req.Namespace)
		}
	default:
		err = fmt.Errorf("op: unknown %q (want explain, init, apply, delete, schedule, scheduleGroup, state, advance, allocClaims)", req.Op)
	}
	if err != nil {
		return errorResponse{Error: err.Error()}
	}
	return r
}

// configFor applies the gates, then decodes (or reuses) the configuration.
func configFor(text *string, gates map[string]bool) (*config.KubeSchedulerConfiguration, error) {
	if err := applyGates(gates); err != nil {
		return nil, err
	}
	data := ""
	if text != nil {
		data = *text
	}
	keys := make([]string, 0, len(gates))
	for k, v := range gates {
		keys = append(keys, fmt.Sprintf("%s=%t", k, v))
	}
	sort.Strings(keys)
	key := strings.Join(keys, ",") + "\x00" + data
	if cfg, ok := configCache[key]; ok {
		return cfg, nil
	}
	cfg, err := loadConfig([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	configCache[key] = cfg
	return cfg, nil
}

func (s *server) explain(req *request) (any, error) {
	if req.Pod == nil {
		return nil, fmt.Errorf("pod: missing")
	}
	cfg, err := configFor(req.Config, req.FeatureGates)
	if err != nil {
		return nil, err
	}
	cluster := ""
	if req.Cluster != nil {
		cluster = *req.Cluster
	}
	if cluster != s.lastCluster || s.lastObjs == nil {
		objs, err := decodeObjects("cluster", []byte(cluster))
		if err != nil {
			return nil, err
		}
		s.lastCluster, s.lastObjs = cluster, objs
	}
	objs := make([]k8sruntime.Object, len(s.lastObjs))
	for i, o := range s.lastObjs {
		objs[i] = o.DeepCopyObject()
	}
	pod, err := decodePod("pod", []byte(*req.Pod))
	if err != nil {
		return nil, err
	}
	return explainPod(cfg, objs, pod)
}

func (s *server) init(req *request) (any, error) {
	cfg, err := configFor(req.Config, req.FeatureGates)
	if err != nil {
		return nil, err
	}
	if s.lock != nil {
		s.lock.close()
		s.lock = nil
	}
	l, err := newLockstep(cfg)
	if err != nil {
		return nil, err
	}
	s.lock = l
	return map[string]any{"ok": true, "kubernetes": kubernetesVersion}, nil
}
