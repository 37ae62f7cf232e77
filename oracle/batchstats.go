package main

import (
	"k8s.io/component-base/metrics/legacyregistry"
)

// batchInfo is what OpportunisticBatching did in one lockstep cycle, read from the scheduler's own
// counters (scheduler_batch_attempts_total, scheduler_batch_cache_flushed_total), so that schedperf
// can follow the batch state and take upstream's wall-clock expiry (maxBatchAge) as given.
type batchInfo struct {
	// Cycle is the scheduling cycle of the pod (SchedulingQueue.SchedulingCycle after its Pop).
	Cycle int64 `json:"cycle"`
	// Attempts counts the cycle's batch results by label (no_hint, hint_used, hint_not_used).
	Attempts map[string]int `json:"attempts"`
	// Flushed counts rankings given up in the cycle, by reason (expired, pod_incompatible, ...).
	Flushed map[string]int `json:"flushed"`
}

// batchCounters reads the batch counters, summed over profiles, keyed "attempts/<result>" and
// "flushed/<reason>".
func batchCounters() map[string]float64 {
	out := map[string]float64{}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, mf := range families {
		var kind, label string
		switch mf.GetName() {
		case "scheduler_batch_attempts_total":
			kind, label = "attempts", "result"
		case "scheduler_batch_cache_flushed_total":
			kind, label = "flushed", "reason"
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out[kind+"/"+lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// batchDelta is what changed between two readings of batchCounters.
func batchDelta(before, after map[string]float64, cycle int64) *batchInfo {
	b := &batchInfo{Cycle: cycle, Attempts: map[string]int{}, Flushed: map[string]int{}}
	for k, v := range after {
		d := int(v - before[k])
		if d <= 0 {
			continue
		}
		switch {
		case len(k) > 9 && k[:9] == "attempts/":
			b.Attempts[k[9:]] = d
		case len(k) > 8 && k[:8] == "flushed/":
			b.Flushed[k[8:]] = d
		}
	}
	return b
}
