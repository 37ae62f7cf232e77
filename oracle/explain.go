package main

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

type filterVerdict struct {
	Plugin  string   `json:"plugin"`
	Code    string   `json:"code"`
	Reasons []string `json:"reasons"`
}

type pluginScore struct {
	Score  int64 `json:"score"`
	Weight int64 `json:"weight"`
}

type nodeExplanation struct {
	Name       string                 `json:"name"`
	Feasible   bool                   `json:"feasible"`
	Filter     *filterVerdict         `json:"filter"`
	Scores     map[string]pluginScore `json:"scores"`
	TotalScore *int64                 `json:"totalScore"`
}

type preemptionCandidate struct {
	Node             string   `json:"node"`
	Victims          []string `json:"victims"`
	NumPdbViolations int64    `json:"numPdbViolations"`
}

type preemptionExplanation struct {
	NominatedNode *string               `json:"nominatedNode"`
	Victims       []string              `json:"victims"`
	Candidates    []preemptionCandidate `json:"candidates"`
	Message       *string               `json:"message"`
}

type explanation struct {
	Pod                 string                 `json:"pod"`
	Profile             string                 `json:"profile"`
	Nodes               []nodeExplanation      `json:"nodes"`
	Selected            *string                `json:"selected"`
	Message             *string                `json:"message"`
	SkippedScorePlugins []string               `json:"skippedScorePlugins"`
	Preemption          *preemptionExplanation `json:"preemption,omitempty"`
}

func verdict(st *fwk.Status, plugin string) *filterVerdict {
	reasons := st.Reasons()
	if reasons == nil {
		reasons = []string{}
	}
	return &filterVerdict{Plugin: plugin, Code: st.Code().String(), Reasons: reasons}
}

func victimNames(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podKey(p))
	}
	return out
}

// explainPod evaluates one pod against a cluster on a fresh Scheduler (percentageOfNodesToScore 100,
// parallelism 1). cluster holds decoded objects; they and pod are normalized here (copies are not made).
func explainPod(cfg *config.KubeSchedulerConfiguration, cluster []runtime.Object, pod *v1.Pod) (*explanation, error) {
	classes := priorityClasses(cluster)
	objs := make([]runtime.Object, 0, len(cluster)+1)
	for _, o := range cluster {
		if terminal(o) {
			continue
		}
		if err := normalize(o, classes); err != nil {
			return nil, fmt.Errorf("cluster: %v", err)
		}
		objs = append(objs, o)
	}
	if err := normalize(pod, classes); err != nil {
		return nil, fmt.Errorf("pod: %v", err)
	}
	pod.Spec.NodeName = ""
	// No resourceclaim controller runs before the one cycle: its claims from templates are made here.
	generated, err := materializeTemplateClaims(pod, objs)
	if err != nil {
		return nil, fmt.Errorf("pod: %v", err)
	}
	objs = append(objs, generated...)
	key := podKey(pod)
	kept := objs[:0]
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok && podKey(p) == key {
			continue
		}
		kept = append(kept, o)
	}
	objs = append(kept, pod)

	hundred := int32(100)
	e, err := newEnv(cfg, withoutSampling(cfg), &hundred, objs)
	if err != nil {
		return nil, err
	}
	defer e.close()
	fw, ok := e.sched.Profiles[pod.Spec.SchedulerName]
	if !ok {
		return nil, fmt.Errorf("pod: spec.schedulerName: no profile named %q", pod.Spec.SchedulerName)
	}
	ctx := e.ctx
	if err := e.sched.Cache.UpdateSnapshot(e.logger, e.snapshot); err != nil {
		return nil, err
	}
	nodes, err := e.snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	dp := defaultPreemptionOf(fw)
	if dp != nil {
		// A dry run: victims are chosen but never deleted.
		dp.Executor.PreemptPod = func(_ ctxT, _ preemption.Candidate, _ preemption.ExecutorPreemptor, _ *v1.Pod, _ string) (bool, error) {
			return false, nil
		}
	}
	out := &explanation{Pod: key, Profile: fw.ProfileName(), Nodes: make([]nodeExplanation, 0, len(nodes)),
		SkippedScorePlugins: []string{}}

	// The real decision.
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	podInfo, _ := framework.NewPodInfo(pod)
	result, schedErr := e.sched.SchedulePod(ctx, fw, state, &framework.QueuedPodInfo{PodInfo: podInfo})
	if schedErr == nil {
		sel := result.SuggestedHost
		out.Selected = &sel
	}

	// Every node, without sampling.
	detail := framework.NewCycleState()
	detail.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	preRes, s, unsched := fw.RunPreFilterPlugins(ctx, detail, pod)
	var feasible []fwk.NodeInfo
	index := map[string]int{}
	if !s.IsSuccess() {
		v := verdict(s, s.Plugin())
		for _, ni := range nodes {
			out.Nodes = append(out.Nodes, nodeExplanation{Name: ni.Node().Name, Filter: v})
		}
	} else {
		var outside *filterVerdict
		if !preRes.AllNodes() {
			names := sets.List(unsched)
			first := ""
			if len(names) > 0 {
				first = names[0]
			}
			outside = verdict(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", names)), first)
		}
		for _, ni := range nodes {
			name := ni.Node().Name
			if outside != nil && !preRes.NodeNames.Has(name) {
				out.Nodes = append(out.Nodes, nodeExplanation{Name: name, Filter: outside})
				continue
			}
			st := fw.RunFilterPluginsWithNominatedPods(ctx, detail, pod, ni)
			if st.IsSuccess() {
				index[name] = len(out.Nodes)
				out.Nodes = append(out.Nodes, nodeExplanation{Name: name, Feasible: true})
				feasible = append(feasible, ni)
			} else {
				out.Nodes = append(out.Nodes, nodeExplanation{Name: name, Filter: verdict(st, st.Plugin())})
			}
		}
	}
	if len(feasible) > 0 {
		if st := fw.RunPreScorePlugins(ctx, detail, pod, feasible); !st.IsSuccess() {
			return nil, fmt.Errorf("PreScore: %v", st.AsError())
		}
		// The skip set has no order: report it in the profile's score-plugin order.
		skipped := detail.GetSkipScorePlugins()
		listed := fw.ListPlugins()
		weights := map[string]int64{}
		for _, p := range listed.Score.Enabled {
			weights[p.Name] = int64(p.Weight)
			if skipped.Has(p.Name) {
				out.SkippedScorePlugins = append(out.SkippedScorePlugins, p.Name)
			}
		}
		scores, st := fw.RunScorePlugins(ctx, detail, pod, feasible)
		if !st.IsSuccess() {
			return nil, fmt.Errorf("Score: %v", st.AsError())
		}
		for _, ns := range scores {
			n := &out.Nodes[index[ns.Name]]
			n.Scores = map[string]pluginScore{}
			for _, ps := range ns.Scores {
				w := weights[ps.Name]
				if w == 0 {
					w = 1
				}
				n.Scores[ps.Name] = pluginScore{Score: ps.Score / w, Weight: w}
			}
			total := ns.TotalScore
			n.TotalScore = &total
		}
	}

	if schedErr != nil {
		if fitErr, ok := schedErr.(*framework.FitError); ok && fw.HasPostFilterPlugins() {
			var pre *preemptionExplanation
			var cands []preemption.Candidate
			if dp != nil {
				pre = &preemptionExplanation{Victims: []string{}, Candidates: []preemptionCandidate{}}
				// Every candidate (every potential node tried): upstream's own run visits them from a
				// random offset, in map order, and stops early, so its set is not repeatable.
				cands, err = dryRunCandidates(e, fw, dp, state, pod, fitErr, true)
				if err != nil {
					return nil, err
				}
				for _, c := range cands {
					pre.Candidates = append(pre.Candidates, preemptionCandidate{Node: c.Name(),
						Victims: victimNames(c.Victims().Pods), NumPdbViolations: c.Victims().NumPDBViolations})
				}
				sort.Slice(pre.Candidates, func(i, j int) bool { return pre.Candidates[i].Node < pre.Candidates[j].Node })
			}
			res, pst := fw.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
			fitErr.Diagnosis.PostFilterMsg = pst.Message()
			if pre != nil {
				if res != nil && res.NominatingInfo != nil && res.NominatedNodeName != "" {
					nn := res.NominatedNodeName
					pre.NominatedNode = &nn
					for _, c := range pre.Candidates {
						if c.Node == nn {
							pre.Victims = c.Victims
						}
					}
				}
				if !pst.IsSuccess() {
					m := pst.Message()
					pre.Message = &m
				}
				out.Preemption = pre
			}
		}
		msg := schedErr.Error()
		out.Message = &msg
	}
	return out, nil
}

// dryRunCandidates lists every preemption candidate the way DefaultPreemption's evaluate does
// (eligibility, nodes whose status is Unschedulable, PDBs, DryRunPreemption), with offset 0;
// with every, it goes on to the last potential node instead of stopping at numCandidates.
func dryRunCandidates(e *env, fw framework.Framework, dp dpT, state fwk.CycleState, pod *v1.Pod, fitErr *framework.FitError, every bool) ([]preemption.Candidate, error) {
	nominated := fitErr.Diagnosis.NodeToStatus.Get(pod.Status.NominatedNodeName)
	if ok, _ := dp.PodEligibleToPreemptOthers(e.ctx, pod, nominated); !ok {
		return nil, nil
	}
	potential, err := fitErr.Diagnosis.NodeToStatus.NodesForStatusCode(fw.SnapshotSharedLister().NodeInfos(), fwk.Unschedulable)
	if err != nil || len(potential) == 0 {
		return nil, err
	}
	pdbs, err := dp.Evaluator.PdbLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	_, num := dp.GetOffsetAndNumCandidates(int32(len(potential)))
	if every {
		num = int32(len(potential))
	}
	cands, _, err := dp.Evaluator.DryRunPreemption(e.ctx, state, pod, potential, pdbs, 0, num)
	if err != nil && len(cands) == 0 {
		return nil, err
	}
	return cands, nil
}
