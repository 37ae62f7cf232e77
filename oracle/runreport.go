package main

// report.json in schedperf's schema (docs/report.schema.json, schema schedperf.report/v1): the model, the
// throughput collector and the placement digest, each computed exactly as schedperf computes them.

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

const reportSchemaVersion = "schedperf.report/v1"

// engineName is what the report's `engine` says.
const engineName = "kube-scheduler " + kubernetesVersion + " (in-process)"

type reportDoc struct {
	SchemaVersion      string       `json:"schemaVersion"`
	Tool               toolInfo     `json:"tool"`
	Engine             string       `json:"engine"`
	CommandLine        []string     `json:"commandLine"`
	Machine            machineInfo  `json:"machine"`
	CreatedUnixSeconds int64        `json:"createdUnixSeconds"`
	Upstream           upstreamInfo `json:"upstream"`
	Runs               []runReport  `json:"runs"`
}

type toolInfo struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
}

type upstreamInfo struct {
	Kubernetes string `json:"kubernetes"`
}

type machineInfo struct {
	CPUModel    string `json:"cpuModel"`
	Cores       int    `json:"cores"`
	MemoryBytes uint64 `json:"memoryBytes"`
	Kernel      string `json:"kernel"`
}

type percentiles struct {
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Count uint64  `json:"count"`
}

type throughputReport struct {
	Average         float64   `json:"average"`
	P50             float64   `json:"p50"`
	P90             float64   `json:"p90"`
	P95             float64   `json:"p95"`
	P99             float64   `json:"p99"`
	Samples         []float64 `json:"samples"`
	IntervalSeconds float64   `json:"intervalSeconds"`
}

type counters struct {
	Attempts          uint64 `json:"attempts"`
	Scheduled         uint64 `json:"scheduled"`
	Unschedulable     uint64 `json:"unschedulable"`
	Errors            uint64 `json:"errors"`
	Preemptions       uint64 `json:"preemptions"`
	PreemptionVictims uint64 `json:"preemptionVictims"`
	BindFailures      uint64 `json:"bindFailures"`
	Retries           uint64 `json:"retries"`
	Evictions         uint64 `json:"evictions"`
}

type accounting struct {
	Created       uint64 `json:"created"`
	Bound         uint64 `json:"bound"`
	Unschedulable uint64 `json:"unschedulable"`
	Deleted       uint64 `json:"deleted"`
	Pending       uint64 `json:"pending"`
	Lost          uint64 `json:"lost"`
}

type utilization struct {
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Max    float64 `json:"max"`
}

type placementQuality struct {
	Utilization        map[string]utilization `json:"utilization"`
	NodesUsed          uint64                 `json:"nodesUsed"`
	NodesTotal         uint64                 `json:"nodesTotal"`
	FragmentationPods  uint64                 `json:"fragmentationPods"`
	TopologySkew       []any                  `json:"topologySkew"`
	PendingPods        uint64                 `json:"pendingPods"`
	NodeCPUUtilization []float64              `json:"nodeCpuUtilization"`
}

// runOutcome is the report's outcome checks; a workload that failed them is not in the oracle's report
// (its run returns an error), so every report it writes passed.
type runOutcome struct {
	Passed        bool              `json:"passed"`
	Message       string            `json:"message"`
	FailedOp      *uint64           `json:"failedOp"`
	PodsWaitedFor uint64            `json:"podsWaitedFor"`
	PodsNotDone   uint64            `json:"podsNotDone"`
	Reasons       map[string]uint64 `json:"reasons"`
}

type runReport struct {
	TestCase                     string                 `json:"testCase"`
	Workload                     string                 `json:"workload"`
	Labels                       []string               `json:"labels"`
	Seed                         uint64                 `json:"seed"`
	Threads                      int                    `json:"threads"`
	Rep                          uint32                 `json:"rep"`
	ConfigSource                 string                 `json:"configSource"`
	ConfigDigest                 string                 `json:"configDigest"`
	WorkloadDigest               string                 `json:"workloadDigest"`
	Agent                        string                 `json:"agent"`
	VirtualTime                  bool                   `json:"virtualTime"`
	FeatureGatesIgnored          []string               `json:"featureGatesIgnored"`
	FeatureGatesHonoured         []string               `json:"featureGatesHonoured"`
	Outcome                      runOutcome             `json:"outcome"`
	MeasuredPods                 uint64                 `json:"measuredPods"`
	ScheduledPods                uint64                 `json:"scheduledPods"`
	UnschedulablePods            uint64                 `json:"unschedulablePods"`
	DurationSeconds              float64                `json:"durationSeconds"`
	WallSeconds                  float64                `json:"wallSeconds"`
	CPUSeconds                   float64                `json:"cpuSeconds"`
	Throughput                   throughputReport       `json:"throughput"`
	AttemptLatencyMicros         percentiles            `json:"attemptLatencyMicros"`
	AttemptLatencyByResultMicros map[string]percentiles `json:"attemptLatencyByResultMicros"`
	E2ELatencyMicros             percentiles            `json:"e2eLatencyMicros"`
	PodStartupMillis             percentiles            `json:"podStartupMillis"`
	PodStartupStagesMillis       map[string]percentiles `json:"podStartupStagesMillis"`
	ExtensionPointMicros         map[string]percentiles `json:"extensionPointMicros"`
	PluginTimings                []any                  `json:"pluginTimings"`
	PluginSamplePercent          uint32                 `json:"pluginSamplePercent"`
	Counters                     counters               `json:"counters"`
	Accounting                   accounting             `json:"accounting"`
	UnschedulableReasons         map[string]uint64      `json:"unschedulableReasons"`
	CacheConsistent              bool                   `json:"cacheConsistent"`
	CacheDifferences             []string               `json:"cacheDifferences"`
	PlacementQuality             placementQuality       `json:"placementQuality"`
	PlacementDigest              string                 `json:"placementDigest"`
	Placements                   map[string]string      `json:"placements,omitempty"`
	PeakRSSBytes                 uint64                 `json:"peakRssBytes"`
	Threshold                    *float64               `json:"threshold"`
	ThresholdMetric              string                 `json:"thresholdMetric"`
	ThresholdPassed              *bool                  `json:"thresholdPassed"`
	Histograms                   map[string]string      `json:"histograms"`
}

// Throughput sampling, as schedperf's src/metrics/throughput.rs: the window is cut into
// throughputTargetSamples intervals of at most 1 s (scheduler_perf's throughputSampleInterval).
const (
	throughputTargetSamples     = 25
	throughputMaxIntervalNanos  = int64(1_000_000_000)
	placementsInReportMaxLength = 20_000
)

// throughput is scheduler_perf's throughput collector over bind times (ns from the window start): a rate per
// interval; an interval without progress is merged into the next one that has some, whose rate is then
// recorded once per merged interval; percentiles at sorted index ceil(n*p)-1; average = pods / window.
func throughput(bindNanos []int64, windowNanos int64) throughputReport {
	sort.Slice(bindNanos, func(i, j int) bool { return bindNanos[i] < bindNanos[j] })
	n := len(bindNanos)
	if n == 0 || windowNanos <= 0 {
		return throughputReport{Samples: []float64{}}
	}
	interval := windowNanos / throughputTargetSamples
	if interval < 1 {
		interval = 1
	}
	if interval > throughputMaxIntervalNanos {
		interval = throughputMaxIntervalNanos
	}
	samples := []float64{}
	idx, last, skipped := 0, 0, int64(0)
	for t := interval; t <= windowNanos; t += interval {
		for idx < n && bindNanos[idx] < t {
			idx++
		}
		if idx == last {
			skipped++
			continue
		}
		rate := float64(idx-last) / (float64(interval*(skipped+1)) / 1e9)
		for i := int64(0); i <= skipped; i++ {
			samples = append(samples, rate)
		}
		skipped, last = 0, idx
	}
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	pct := func(p float64) float64 {
		if len(sorted) == 0 {
			return 0
		}
		i := int(math.Ceil(float64(len(sorted))*p)) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(sorted) {
			i = len(sorted) - 1
		}
		return sorted[i]
	}
	return throughputReport{
		Average: float64(n) / (float64(windowNanos) / 1e9),
		P50:     pct(0.50), P90: pct(0.90), P95: pct(0.95), P99: pct(0.99),
		Samples:         samples,
		IntervalSeconds: float64(interval) / 1e9,
	}
}

// percentilesOf summarizes durations in ns, reported in units of `unitNanos` (1000 = µs): the value at
// sorted index ceil(n*p)-1.
func percentilesOf(nanos []int64, unitNanos float64) percentiles {
	if len(nanos) == 0 {
		return percentiles{}
	}
	s := append([]int64(nil), nanos...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(p float64) float64 {
		i := int(math.Ceil(float64(len(s))*p)) - 1
		if i < 0 {
			i = 0
		}
		return float64(s[i]) / unitNanos
	}
	return percentiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: float64(s[len(s)-1]) / unitNanos, Count: uint64(len(s))}
}

// placementDigest is schedperf's: sha256 over the sorted `namespace/pod \t node \n` lines.
func placementDigest(placements map[string]string) string {
	keys := make([]string, 0, len(placements))
	for k := range placements {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte("\t"))
		h.Write([]byte(placements[k]))
		h.Write([]byte("\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// nodeUsage is what placement quality needs of one node.
type nodeUsage struct {
	allocCPU, allocMem, allocPods int64
	reqCPU, reqMem, pods          int64
}

func utilStats(values []float64) utilization {
	if len(values) == 0 {
		return utilization{}
	}
	n := float64(len(values))
	var sum, max float64
	for _, v := range values {
		sum += v
		if v > max {
			max = v
		}
	}
	mean := sum / n
	var v2 float64
	for _, v := range values {
		v2 += (v - mean) * (v - mean)
	}
	return utilization{Mean: mean, Stddev: math.Sqrt(v2 / n), Max: max}
}

// quality is schedperf's placement_quality (src/runner/quality.rs) over nodes in creation order; largest is
// the (cpu millicores, memory bytes) of the largest pod shape the workload created.
func quality(nodes []nodeUsage, largestCPU, largestMem int64, pending uint64) placementQuality {
	frac := func(req, alloc int64) float64 {
		if alloc > 0 {
			return float64(req) / float64(alloc)
		}
		return 0
	}
	cpu := make([]float64, len(nodes))
	mem := make([]float64, len(nodes))
	var used uint64
	for i, n := range nodes {
		cpu[i], mem[i] = frac(n.reqCPU, n.allocCPU), frac(n.reqMem, n.allocMem)
		if n.pods > 0 {
			used++
		}
	}
	var frag uint64
	if largestCPU > 0 || largestMem > 0 {
		max0 := func(v int64) int64 {
			if v < 0 {
				return 0
			}
			return v
		}
		fit := func(c, m, slots int64) int64 {
			byCPU, byMem := int64(math.MaxInt64), int64(math.MaxInt64)
			if largestCPU > 0 {
				byCPU = c / largestCPU
			}
			if largestMem > 0 {
				byMem = m / largestMem
			}
			return max0(min(byCPU, byMem, slots))
		}
		var nodewise, fc, fm, fs int64
		for _, n := range nodes {
			c, m, s := max0(n.allocCPU-n.reqCPU), max0(n.allocMem-n.reqMem), max0(n.allocPods-n.pods)
			fc, fm, fs = fc+c, fm+m, fs+s
			nodewise += fit(c, m, s)
		}
		if pooled := fit(fc, fm, fs); pooled > nodewise {
			frag = uint64(pooled - nodewise)
		}
	}
	return placementQuality{
		Utilization:        map[string]utilization{"cpu": utilStats(cpu), "memory": utilStats(mem)},
		NodesUsed:          used,
		NodesTotal:         uint64(len(nodes)),
		FragmentationPods:  frag,
		TopologySkew:       []any{},
		PendingPods:        pending,
		NodeCPUUtilization: cpu,
	}
}

// peakRSSBytes is VmHWM of this process.
func peakRSSBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// cpuSeconds is user + system time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// thisMachine mirrors schedperf's `machine()`.
func thisMachine() machineInfo {
	m := machineInfo{CPUModel: "unknown", Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					m.CPUModel = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				f := strings.Fields(l)
				if len(f) >= 2 {
					kb, _ := strconv.ParseUint(f[1], 10, 64)
					m.MemoryBytes = kb * 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
