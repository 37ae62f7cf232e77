#!/usr/bin/env bash
# Upstream "as users run it": kube-scheduler v1.37.2 through upstream's own scheduler_perf harness
# (k8s.io/kubernetes test/integration/scheduler_perf), with a real kube-apiserver and a real etcd, all built
# from Go modules (no binary downloads). Not run in CI: one 5,000-node workload takes minutes and GBs.
#
#   scripts/upstream-apiserver.sh [--suite misc] [--reps N] [--out DIR] [TESTCASE/WORKLOAD ...]
#
# Default workloads: SchedulingBasic/500Nodes SchedulingBasic/5000Nodes_10000Pods (suite misc).
# 1. Builds oracle/bin/etcd (etcd v3.7.0's own main, module oracle/etcd) and
#    oracle/bin/scheduler_perf_<suite>.test (`go test -c` of upstream's suite package, module oracle/upstream).
#    Go's build cache makes later builds a few seconds.
# 2. Runs each workload in its own benchmark process, in a copy of upstream's suite directory (its
#    performance-config.yaml and templates, unchanged), with oracle/bin first on PATH: upstream's harness
#    starts a fresh etcd from PATH for every workload (framework.StartEtcd(..., forceCreate=true), on a
#    unix socket in TMPDIR), then kube-apiserver in-process (apiservertesting.StartTestServer), then the
#    scheduler, and stops etcd itself when the workload ends.
#    Flags: -test.bench 'BenchmarkPerfScheduling/^TC$/^W$' -test.benchtime 1x -test.timeout 60m
#    -perf-scheduling-label-filter= (no label filter: 500Nodes has none) -data-items-dir RUN.
# 3. Converts upstream's DataItems JSON (+ its .dat samples and log) with scripts/upstream_report.py into
#    DIR/report.json (docs/report.schema.json, engine "kube-scheduler v1.37.2 (apiserver+etcd,
#    scheduler_perf)"); `schedperf compare A DIR/report.json` reads it. Prints that path last.
# The benchmark runs in its own process group (setsid); on exit, failure or interrupt that whole group
# (test binary and its etcd) is killed, so nothing is left running. Exit 1 if a benchmark fails, 2 on bad
# arguments; a run below upstream's threshold is reported (thresholdPassed false) and does not fail.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$PATH:/usr/local/go/bin"

suite=misc
reps=1
out=""
workloads=()
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite="${2:?--suite needs a value}"; shift 2 ;;
    --reps) reps="${2:?--reps needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "upstream-apiserver.sh: unknown flag $1" >&2; exit 2 ;;
    */*) workloads+=("$1"); shift ;;
    *) echo "upstream-apiserver.sh: $1: expected TESTCASE/WORKLOAD" >&2; exit 2 ;;
  esac
done
case "$reps" in ''|*[!0-9]*|0) echo "upstream-apiserver.sh: --reps: expected a positive integer, got '$reps'" >&2; exit 2 ;; esac
case "$suite" in ''|*[!a-z0-9_]*) echo "upstream-apiserver.sh: --suite: expected a scheduler_perf suite directory name (misc, affinity, ...), got '$suite'" >&2; exit 2 ;; esac
[ ${#workloads[@]} -gt 0 ] || workloads=(SchedulingBasic/500Nodes SchedulingBasic/5000Nodes_10000Pods)
command -v go >/dev/null || { echo "upstream-apiserver.sh: go is not on PATH (Go >= 1.26)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "upstream-apiserver.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
python3 -c 'import yaml' 2>/dev/null || { echo "upstream-apiserver.sh: python3 with PyYAML is needed (apt-get install python3-yaml)" >&2; exit 2; }

bin="$root/oracle/bin"
mkdir -p "$bin"
log() { echo "upstream-apiserver.sh: $*" >&2; }
work=""
bench_pid=""
cleanup() {
  if [ -n "$bench_pid" ]; then
    kill -TERM -- "-$bench_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$bench_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
    bench_pid=""
  fi
  [ -z "$work" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
log "building etcd (go.etcd.io/etcd/server/v3 v3.7.0 etcdmain) with $(go version | cut -d' ' -f3)"
(cd "$root/oracle/etcd" && nice -n 19 go build -o "$bin/etcd" .) >&2
log "building upstream's scheduler_perf/$suite benchmark (k8s.io/kubernetes v1.37.2; the first build takes long)"
(cd "$root/oracle/upstream" && nice -n 19 go test -c -o "$bin/scheduler_perf_$suite.test" \
  "k8s.io/kubernetes/test/integration/scheduler_perf/$suite") >&2
log "built in $(( $(date +%s) - start ))s"
k8s="$(cd "$root/oracle/upstream" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
[ -f "$k8s/test/integration/scheduler_perf/$suite/performance-config.yaml" ] || {
  echo "upstream-apiserver.sh: --suite: $k8s/test/integration/scheduler_perf/$suite/performance-config.yaml not found" >&2; exit 2; }

[ -n "$out" ] || out="$root/reports/runs/upstream-apiserver-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Under /tmp, not TMPDIR or DIR: etcd's unix socket lives in the run's TMPDIR below, and a socket path
# is limited to 107 bytes ("listen unix .../etcd.sock: bind: invalid argument" past that).
work="$(mktemp -d /tmp/upstream-apiserver.XXXXXX)"

# Upstream's relative paths (performance-config.yaml, ../templates/...) resolve from the suite directory;
# a copy keeps the module cache read-only and gives each run a private TMPDIR for etcd's data.
mkdir -p "$work/scheduler_perf"
cp -r "$k8s/test/integration/scheduler_perf/$suite" "$k8s/test/integration/scheduler_perf/templates" "$work/scheduler_perf/"
chmod -R u+w "$work"
config="$work/scheduler_perf/$suite/performance-config.yaml"
for w in "${workloads[@]}"; do
  python3 - "$config" "$w" "$suite" <<'EOF' || exit 2
import sys, yaml
config, w, suite = sys.argv[1:]
tc, wl = w.split("/", 1)
cases = {c["name"]: [x["name"] for x in c.get("workloads") or []] for c in yaml.safe_load(open(config))}
if wl not in cases.get(tc, []):
    known = ", ".join(f"{tc}/{x}" for x in cases[tc]) if tc in cases else "test cases " + ", ".join(cases)
    print(f"upstream-apiserver.sh: {w}: not a workload of upstream's scheduler_perf/{suite}/performance-config.yaml"
          f" (known: {known})", file=sys.stderr)
    sys.exit(1)
EOF
done

run_files=()
failed=0
for w in "${workloads[@]}"; do
  tc="${w%%/*}"; wl="${w#*/}"
  for rep in $(seq 0 $((reps - 1))); do
    run="$out/$tc-$wl-rep$rep"
    rm -rf "$run" "$work/tmp"; mkdir -p "$run/data" "$work/tmp"
    args=(-test.run '^$' -test.bench "BenchmarkPerfScheduling/^$tc\$/^$wl\$" -test.benchtime 1x
          -test.timeout 60m -perf-scheduling-label-filter= -data-items-dir "$run/data")
    log "$tc/$wl rep $rep: scheduler_perf_$suite.test ${args[*]} (log: $run/bench.log)"
    t0=$(date +%s.%N)
    (cd "$work/scheduler_perf/$suite" && PATH="$bin:$PATH" TMPDIR="$work/tmp" exec setsid /usr/bin/time \
      -o "$run/time.txt" -f 'user=%U sys=%S maxrss_kb=%M' "$bin/scheduler_perf_$suite.test" "${args[@]}") \
      >"$run/bench.log" 2>&1 &
    bench_pid=$!
    rc=0; wait "$bench_pid" || rc=$?
    # The harness stops its etcd; anything left in the group (a crash mid-workload) is ended here.
    kill -KILL -- "-$bench_pid" 2>/dev/null || true
    bench_pid=""
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    rm -rf "$work/tmp"
    # Upstream fails a workload whose SchedulingThroughput Average is below its `threshold` (tuned for
    # upstream's CI machines), after writing the DataItems: such a run is measured and reported
    # (thresholdPassed false); any other failure is not.
    below=0
    if [ "$rc" -ne 0 ] && grep -q 'expected "SchedulingThroughput" "Average" to be higher' "$run/bench.log" \
        && ! grep -q '^panic:\|Error running workload\|timed out' "$run/bench.log" \
        && [ "$(grep -c '^    [a-z_]*\.go:[0-9]*: ERROR:$' "$run/bench.log")" -eq 1 ]; then
      below=1
      log "$tc/$wl rep $rep: below upstream's threshold (upstream marks the benchmark FAIL; measured anyway)"
    fi
    if { [ "$rc" -ne 0 ] && [ "$below" -eq 0 ]; } || { [ "$below" -eq 0 ] && ! grep -q '^PASS$' "$run/bench.log"; } \
        || grep -q -- '--- SKIP' "$run/bench.log"; then
      log "$tc/$wl rep $rep FAILED (exit $rc); last lines of $run/bench.log:"
      grep -v 'etcd output\|Successfully bound' "$run/bench.log" | tail -15 >&2
      failed=1
      continue
    fi
    python3 "$root/scripts/upstream_report.py" --data-items "$run/data" --log "$run/bench.log" \
      --config "$config" --time "$run/time.txt" --wall-seconds "$wall" --rep "$rep" >"$run/run.json"
    python3 - "$run/run.json" <<'EOF' >&2
import json, sys
r = json.load(open(sys.argv[1]))
t = r["throughput"]
print(f"upstream-apiserver.sh:   {r['testCase']}/{r['workload']}: {r['measuredPods']} pods, "
      f"{t['average']:.1f} pods/s (pods / SchedulingDuration {r['durationSeconds']:.2f} s), upstream Average "
      f"{r['_upstreamAverage']:.1f}, p50 {t['p50']:.1f}, attempt p50/p99 "
      f"{r['attemptLatencyMicros']['p50'] / 1e3:.1f}/{r['attemptLatencyMicros']['p99'] / 1e3:.1f} ms, "
      f"peak RSS {r['peakRssBytes'] / 2**20:.0f} MiB")
EOF
    run_files+=("$run/run.json")
  done
done

if [ ${#run_files[@]} -gt 0 ]; then
  python3 "$root/scripts/upstream_report.py" --merge "${run_files[@]}" \
    --command-line "scripts/upstream-apiserver.sh" --suite "$suite" --reps "$reps" "${workloads[@]}" >"$out/report.json"
  if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 - "$root/docs/report.schema.json" "$out/report.json" <<'EOF' >&2
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
print("upstream-apiserver.sh: report.json passes docs/report.schema.json")
EOF
  fi
fi
[ "$failed" -eq 0 ] || exit 1
echo "$out/report.json"
