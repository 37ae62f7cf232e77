#!/usr/bin/env bash
# The performance gate of CI: runs the ci workloads (workloads/ci/, label `ci`) 6 times each, every
# repetition in a fresh process, and gates them against the committed baseline
# (reports/baselines/ci.json) with the policy in gate.toml. Prints the verdict table; the exit code is
# the gate's (0 pass, 1 regression, 2 bad input, 3 noisy under --fail-on-noisy).
#
#   scripts/ci-gate.sh             # gate (called from .ci/run)
#   scripts/ci-gate.sh --refresh   # re-record the baseline with 10 repetitions (review the diff!)
#
# Environment: SCHEDPERF (a built binary; default: cargo build --release, honouring
# CARGO_TARGET_DIR), SCHEDPERF_CI_CONFIG (a KubeSchedulerConfiguration to run instead of the default
# profile), SCHEDPERF_CI_OUT (a directory for current.json and the gate outputs; default: a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SCHEDPERF:-}" ]; then
  cargo build --release --quiet
  SCHEDPERF="${CARGO_TARGET_DIR:-target}/release/schedperf"
fi
config=()
if [ -n "${SCHEDPERF_CI_CONFIG:-}" ]; then
  config=(--config "$SCHEDPERF_CI_CONFIG")
fi
baseline=reports/baselines/ci.json

if [ "${1:-}" = "--refresh" ]; then
  "$SCHEDPERF" run workloads/ci/ --label-filter ci --reps 10 "${config[@]}" --format json > "$baseline.new"
  mv "$baseline.new" "$baseline"
  echo "== wrote $baseline; commit it with the compare output in the pull request"
  exit 0
fi

out="${SCHEDPERF_CI_OUT:-$(mktemp -d /tmp/schedperf-ci-gate.XXXXXX)}"
mkdir -p "$out"
echo "== perf gate: workloads/ci/ x 6 reps vs $baseline (policy gate.toml), outputs in $out"
"$SCHEDPERF" run workloads/ci/ --label-filter ci --reps 6 "${config[@]}" --format json > "$out/current.json"
set +e
"$SCHEDPERF" gate "$baseline" "$out/current.json" --policy gate.toml --format table,json,markdown,junit --out "$out"
code=$?
set -e
echo "== perf gate: exit $code"
exit "$code"
