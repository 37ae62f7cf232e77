// Package upstream holds no code of its own: it pins upstream's scheduler_perf harness (k8s.io/kubernetes
// v1.37.2, test/integration/scheduler_perf) and what its misc suite's test imports, so that
// `go test -c k8s.io/kubernetes/test/integration/scheduler_perf/misc` builds that suite's benchmark binary
// from this module (scripts/upstream-apiserver.sh).
package upstream

import (
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/kubernetes/test/integration/scheduler_perf"
)
