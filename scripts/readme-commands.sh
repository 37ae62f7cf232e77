#!/usr/bin/env bash
# readme-commands.sh: runs every command of README.md, as written, in a fresh clone of HEAD.
#
#   scripts/readme-commands.sh            # all of them
#   scripts/readme-commands.sh --list     # print the commands (and their cheap forms) only
#   scripts/readme-commands.sh --prebuilt # use this checkout's target/release/schedperf: no build
#                                         # in the clone (`cargo run --release --` runs as `schedperf`)
#
# The commands are the lines of README.md's fenced code blocks marked ```sh (a line ending in `\`
# continues on the next; `#` lines are comments). They run one after another in one bash session
# (so `eval "$(scripts/cri-env.sh /tmp/cri up)"` sets what the next commands use), from the root of
# a `git clone` of HEAD (in README_CHECK_DIR, default /tmp/schedperf-readme), with the clone's
# release build first on PATH (`cargo build --release` runs first, into this checkout's target dir
# so dependencies are not rebuilt, and is timed apart). Each command must exit 0.
#
# A command that would take minutes runs in a cheap form, listed in CHEAP below with the reason;
# the script prints each substitution. The CRI block needs root (it starts a private containerd) and
# is skipped with a message otherwise; the `go env GOMODCACHE` command needs the pinned module
# (scripts/oracle.sh downloads it).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
repo=$(cd "$(dirname "$0")/.." && pwd)

# Exact README command -> the form run here, and why (the README's figure is the full command's).
declare -A CHEAP=(
  ["scripts/test.sh"]="bash -n scripts/test.sh"
  ["schedperf run workloads --label-filter performance,-scale --out reports/runs/today"]="schedperf run workloads --label-filter short --out reports/runs/today"
  ["schedperf verify --oracle \"\$(scripts/oracle.sh | tail -1)\" --random 2000 --seed 12345 --out /tmp/v"]="schedperf verify --oracle \"\$(scripts/oracle.sh | tail -1)\" --random 100 --seed 12345 --out /tmp/v"
  ["schedperf ab --base-bin \"\$(command -v schedperf)\" --cand-bin \"\$(command -v schedperf)\" -- run workloads/ci --label-filter ci"]="schedperf ab --base-bin \"\$(command -v schedperf)\" --cand-bin \"\$(command -v schedperf)\" --pairs 6 -- run workloads/misc --test-case SchedulingBasic --workload 5Nodes"
  ["schedperf calibrate --bin \"\$(command -v schedperf)\" --out /tmp/gate.toml -- run workloads/ci --label-filter ci"]="schedperf calibrate --bin \"\$(command -v schedperf)\" --pairs 6 --out /tmp/gate.toml -- run workloads/misc --test-case SchedulingBasic --workload 5Nodes"
  ["schedperf run workloads/e2e --label-filter cri --agent cri --cri-endpoint \"\$CRI_ENDPOINT\"     --cri-image-map \"localhost/cri-probe/pause:1.0=\$CRI_SANDBOX_IMAGE,localhost/cri-probe/busybox:1.0=\$CRI_TEST_IMAGE\""]="schedperf run workloads/e2e --label-filter short --agent cri --cri-endpoint \"\$CRI_ENDPOINT\" --cri-image-map \"localhost/cri-probe/pause:1.0=\$CRI_SANDBOX_IMAGE,localhost/cri-probe/busybox:1.0=\$CRI_TEST_IMAGE\""
)
declare -A WHY=(
  ["schedperf run workloads/e2e --label-filter cri --agent cri --cri-endpoint \"\$CRI_ENDPOINT\"     --cri-image-map \"localhost/cri-probe/pause:1.0=\$CRI_SANDBOX_IMAGE,localhost/cri-probe/busybox:1.0=\$CRI_TEST_IMAGE\""]="200 real pods take 30 s to 2 min: the 10-pod variant"
  ["schedperf ab --base-bin \"\$(command -v schedperf)\" --cand-bin \"\$(command -v schedperf)\" -- run workloads/ci --label-filter ci"]="22 runs of the ci workloads take a minute: 6 pairs (the least a rank test takes) of a 5-node workload"
  ["schedperf calibrate --bin \"\$(command -v schedperf)\" --out /tmp/gate.toml -- run workloads/ci --label-filter ci"]="the same: 6 pairs of a 5-node workload"
  ["scripts/test.sh"]="the whole suite takes 15+ minutes: syntax check only"
  ["schedperf run workloads --label-filter performance,-scale --out reports/runs/today"]="23 performance workloads take ~20 s to a minute: the short ones instead"
  ["schedperf verify --oracle \"\$(scripts/oracle.sh | tail -1)\" --random 2000 --seed 12345 --out /tmp/v"]="2000 cases take minutes: 100"
)

# Commands whose exit code 1 is an outcome, not a broken command: benchmarks with a throughput
# threshold and gates against committed baselines miss them on a loaded machine or after a change.
outcome_may_fail() {
  [[ $1 == *"--workload 5000Nodes_10000Pods"* || $1 == "schedperf gate "* ]]
}

# The commands of README.md's ```sh blocks, NUL-separated, continuation lines joined.
extract() {
  awk '
    /^```sh[[:space:]]*$/ { inside = 1; next }
    /^```/ { if (inside && cmd != "") { printf "%s%c", cmd, 0; cmd = "" } inside = 0; next }
    !inside { next }
    {
      line = $0
      if (cmd == "" && (line ~ /^[[:space:]]*#/ || line ~ /^[[:space:]]*$/)) next
      if (line ~ /\\$/) { cmd = cmd substr(line, 1, length(line) - 1); next }
      cmd = cmd line
      printf "%s%c", cmd, 0
      cmd = ""
    }
  ' "$1"
}

mapfile -d '' commands < <(extract "$repo/README.md")
((${#commands[@]})) || { echo "readme-commands: no \`\`\`sh blocks in README.md" >&2; exit 1; }

prebuilt=0
if [[ ${1:-} == --prebuilt ]]; then
  prebuilt=1
  for c in "${commands[@]}"; do
    if [[ $c == "cargo run --release -- "* ]]; then
      CHEAP[$c]="schedperf ${c#cargo run --release -- }"
      WHY[$c]="--prebuilt: the checkout's release build"
    fi
  done
fi

if [[ ${1:-} == --list ]]; then
  for c in "${commands[@]}"; do
    printf '%s\n' "$c"
    [[ -n ${CHEAP[$c]+x} ]] && printf '    runs as: %s  (%s)\n' "${CHEAP[$c]}" "${WHY[$c]}"
  done
  exit 0
fi

# A fixed place, so that cargo's fingerprints of the clone stay fresh from one run to the next.
work=${README_CHECK_DIR:-/tmp/schedperf-readme}
cri_up=0
cleanup() {
  local rc=$?
  if ((cri_up)); then (cd "$work/clone" && scripts/cri-env.sh /tmp/cri down >/dev/null 2>&1) || true; fi
  exit "$rc"
}
trap cleanup EXIT
rm -rf --one-file-system "$work"
mkdir -p "$work"
git clone -q "$repo" "$work/clone"
cd "$work/clone"
# Every file at the commit's time (a clone stamps them now, which would rebuild schedperf each run).
commit_time=$(git log -1 --format=%ct)
git ls-files -z | xargs -0 touch -h -d "@$commit_time"

# The clone builds into this checkout's target dir (dependencies built once); `schedperf` on PATH
# is the clone's release build.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
if ((prebuilt)); then
  [[ -x $CARGO_TARGET_DIR/release/schedperf ]] || { echo "readme-commands: no $CARGO_TARGET_DIR/release/schedperf" >&2; exit 1; }
  echo "== --prebuilt: $CARGO_TARGET_DIR/release/schedperf" >&2
else
  echo "== cargo build --release in the clone (not counted below)" >&2
  t0=$(date +%s.%N)
  cargo build --release -q
  printf '== build: %.0f s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" >&2
fi
export PATH="$CARGO_TARGET_DIR/release:$PATH"

failed=()
total=0
for c in "${commands[@]}"; do
  run=$c
  note=""
  if [[ -n ${CHEAP[$c]+x} ]]; then
    run=${CHEAP[$c]}
    note=" [cheap form: ${WHY[$c]}]"
  fi
  if [[ $run == *cri-env.sh* || $run == *CRI_ENDPOINT* ]] && { [[ $(id -u) != 0 ]] || ! command -v containerd >/dev/null; }; then
    echo "-- skipped (needs root and containerd): $c" >&2
    continue
  fi
  [[ $run == *"cri-env.sh /tmp/cri up"* ]] && cri_up=1
  echo "-- $run$note" >&2
  t0=$(date +%s.%N)
  set +e
  (eval "$run") >"$work/out" 2>&1 </dev/null
  rc=$?
  # The CRI setup exports variables for the next commands: run it in this shell too (it is a no-op
  # that prints the same lines once containerd is up).
  [[ $run == eval* ]] && eval "$run" >/dev/null 2>&1
  set -e
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  total=$(echo "$total + $secs" | bc)
  printf '   exit %d, %.1f s\n' "$rc" "$secs" >&2
  if ((rc == 1)) && outcome_may_fail "$run"; then
    echo "   (exit 1 is an outcome here: a threshold or budget missed)" >&2
    tail -n 3 "$work/out" | sed 's/^/   | /' >&2
  elif ((rc != 0)); then
    failed+=("$run")
    tail -n 15 "$work/out" | sed 's/^/   | /' >&2
  fi
  [[ $run == *"cri-env.sh /tmp/cri down"* ]] && cri_up=0
done
printf '== %d commands, %.0f s in all (build excluded)\n' "${#commands[@]}" "$total" >&2
if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== every README command ran (exit 0; 1 only where a threshold or budget may be missed)" >&2
