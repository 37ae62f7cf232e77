package main

import "testing"

// run creates PodGroups (createPodGroups) and the real scheduler's pod-group cycles place them
// (workloads/podgroup). PodGroupPartialFit: the gang of three never binds (two of its pods would fit
// alone), the pair binds and is deleted, the basic group binds the two that fit. PodGroupNoFit: the
// three gangs of two bind; the gang and basic groups that fit nowhere stay pending (retried, not lost).
func TestRunPodGroups(t *testing.T) {
	ws, err := parseWorkloadFile("../workloads/podgroup/performance-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]accounting{
		"PodGroupPartialFit": {Created: 8, Bound: 2, Deleted: 2},
		"PodGroupNoFit":      {Created: 11, Bound: 6},
		// validatePodGroup refuses the group whose pods have priority 5 (the group has 0); a scheduling
		// gate on one pod holds back its group.
		"PodGroupPriorityMismatch": {Created: 6, Bound: 2},
	}
	for _, w := range ws {
		want, ok := cases[w.testCase]
		if !ok || w.skip != "" {
			t.Fatalf("%s: unexpected or skipped (%s)", w.testCase, w.skip)
		}
		delete(cases, w.testCase)
		rr, err := runWorkload(w, runOptions{parallelism: 1, gates: map[string]bool{"GenericWorkload": true}})
		if err != nil {
			t.Fatalf("%s: %v", w.testCase, err)
		}
		a := rr.Accounting
		if a.Created != want.Created || a.Bound != want.Bound || a.Deleted != want.Deleted || a.Lost != 0 ||
			a.Bound+a.Deleted+a.Unschedulable+a.Pending != a.Created {
			t.Errorf("%s: accounting %+v, want created %d bound %d deleted %d", w.testCase, a, want.Created, want.Bound, want.Deleted)
		}
	}
	if len(cases) != 0 {
		t.Fatalf("test cases missing from the file: %v", cases)
	}
}
