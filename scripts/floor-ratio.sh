#!/usr/bin/env bash
# schedperf's throughput divided by the floor's, measured interleaved on this machine.
#
# The floor (../shared/floor beside the repository) is the least work the default profile must do
# per pod for a SchedulingBasic-shaped workload: one plain single-threaded loop (its README). This
# script builds it into target/floor with schedperf's own [profile.release] settings, builds
# schedperf release, then runs the two one after the other for every workload, ROUNDS times
# (schedperf, floor, schedperf, floor, ...), so the machine's load falls on both alike.
#
# Usage: scripts/floor-ratio.sh [--rounds N] [WORKLOAD ...] [-- RUN ARGS ...]
#   WORKLOAD   TestCase/Workload as `schedperf list workloads` prints it (default: every
#              `performance` workload of workloads/ with 5,000 nodes, `scale` excluded)
#   --rounds   rounds per workload (default 5; or ROUNDS=N)
#   RUN ARGS   passed to every `schedperf run` (e.g. -- --threads 2)
# Environment: SCHEDPERF (a prebuilt binary: no cargo build), FLOOR_DIR (default ../shared/floor).
#
# Per workload it prints schedperf's pods/s (the report's SchedulingThroughput/Average, upstream's
# metric), the floor's pods/s for NODES INIT_PODS MEASURED_PODS taken from the workload's params,
# each as median (min-max), and the ratio of the medians. The load average is printed before and
# after. Exit 0 when everything ran; 2 on bad input; 4 when a run fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-5}
wanted=()
run_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds)
        [ $# -ge 2 ] || { echo "floor-ratio.sh: --rounds needs a number" >&2; exit 2; }
        rounds=$2
        shift 2
        ;;
    --)
        shift
        run_args=("$@")
        break
        ;;
    -h | --help)
        sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        wanted+=("$1")
        shift
        ;;
    esac
done
case "$rounds" in
'' | *[!0-9]* | 0)
    echo "floor-ratio.sh: --rounds: expected a positive integer, got '$rounds'" >&2
    exit 2
    ;;
esac

floor_dir=${FLOOR_DIR:-$root/../shared/floor}
if [ ! -f "$floor_dir/Cargo.toml" ]; then
    echo "floor-ratio.sh: the floor is not at $floor_dir (expected ../shared/floor beside the repository, with its Cargo.toml; set FLOOR_DIR to another checkout)" >&2
    exit 2
fi

# schedperf's release profile, applied to the floor too (environment settings override the
# floor's own manifest), so both binaries come from the same optimisation flags.
profile_value() {
    sed -n '/^\[profile\.release\]/,/^\[/p' Cargo.toml | sed -n "s/^$1 *= *//p" | tr -d '"' | head -1
}
export CARGO_PROFILE_RELEASE_LTO=$(profile_value lto)
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=$(profile_value codegen-units)
export CARGO_PROFILE_RELEASE_DEBUG=$(profile_value debug)
echo "building the floor ($floor_dir) into target/floor: lto=$CARGO_PROFILE_RELEASE_LTO codegen-units=$CARGO_PROFILE_RELEASE_CODEGEN_UNITS debug=$CARGO_PROFILE_RELEASE_DEBUG" >&2
cargo build --release --quiet --manifest-path "$floor_dir/Cargo.toml" --target-dir "$root/target/floor" >&2
floor=$root/target/floor/release/floor
unset CARGO_PROFILE_RELEASE_LTO CARGO_PROFILE_RELEASE_CODEGEN_UNITS CARGO_PROFILE_RELEASE_DEBUG
if [ -n "${SCHEDPERF:-}" ]; then
    bin=$SCHEDPERF
else
    echo "building schedperf (release)" >&2
    cargo build --release --quiet >&2
    bin=$root/target/release/schedperf
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" list workloads >"$tmp/list.txt"

# Resolve the workloads: file, test case, workload, and the floor's NODES INIT MEASURED.
python3 - "$tmp/list.txt" "$tmp/plan.tsv" "${wanted[@]+"${wanted[@]}"}" <<'EOF'
import re, sys
listing, plan_path, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, file = {}, None
for line in open(listing):
    if line.startswith("# "):
        file = "workloads/" + line[2:].strip().split("workloads/", 1)[-1]
        continue
    parts = line.split()
    if not parts or parts[0] == "WORKLOAD" or file is None:
        continue
    name, labels = parts[0], parts[1].split(",")
    params = dict(p.split("=", 1) for p in parts[3:] if "=" in p and p.split("=", 1)[1].isdigit())
    rows[name] = (file, labels, params)
def shape(params):
    # Nodes: every node-count parameter (initNodes; normalNodes + taintNodes; nodesWith...).
    nodes = sum(int(v) for k, v in params.items() if re.search(r"(?i)nodes", k))
    return nodes, int(params.get("initPods", 0)), int(params.get("measurePods", 0))
if wanted:
    names = []
    for w in wanted:
        if w not in rows:
            sys.exit(f"floor-ratio.sh: workload '{w}': expected TestCase/Workload as `schedperf list workloads` prints it")
        names.append(w)
else:
    names = [n for n, (f, labels, p) in rows.items()
             if "performance" in labels and "scale" not in labels and shape(p)[0] == 5000 and shape(p)[2] > 0]
with open(plan_path, "w") as out:
    for n in names:
        f, _, p = rows[n]
        nodes, init, measured = shape(p)
        if nodes == 0 or measured == 0:
            sys.exit(f"floor-ratio.sh: workload '{n}': its params give no node count or no measurePods for the floor")
        tc, wl = n.split("/", 1)
        print(f, tc, wl, nodes, init, measured, sep="\t", file=out)
EOF
[ -s "$tmp/plan.tsv" ] || { echo "floor-ratio.sh: no workload selected" >&2; exit 2; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $load_before; rounds: $rounds; run args: ${run_args[*]:-(none)}" >&2
: >"$tmp/results.tsv"
while IFS=$'\t' read -r file tc wl nodes init measured; do
    for r in $(seq 1 "$rounds"); do
        # Exit 1 is a missed threshold (upstream's pods/s floor): the run still measured.
        rc=0
        "$bin" run "$file" --test-case "$tc" --workload "$wl" --format json \
            ${run_args[@]+"${run_args[@]}"} >"$tmp/run.json" 2>"$tmp/run.err" || rc=$?
        if [ "$rc" -gt 1 ] || [ ! -s "$tmp/run.json" ]; then
            echo "floor-ratio.sh: schedperf run $file --test-case $tc --workload $wl failed (exit $rc):" >&2
            tail -5 "$tmp/run.err" >&2
            exit 4
        fi
        s=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; print(r["throughput"]["average"], r["placementDigest"])' "$tmp/run.json")
        f=$("$floor" "$nodes" "$init" "$measured" | sed -n 's/.*pods_per_sec=\([0-9.]*\).*/\1/p')
        [ -n "$f" ] || { echo "floor-ratio.sh: the floor printed no pods_per_sec for $nodes $init $measured" >&2; exit 4; }
        printf '%s/%s\t%s\t%s\n' "$tc" "$wl" "$s" "$f" >>"$tmp/results.tsv"
        printf "  %s/%s round %s: schedperf %.0f pods/s, floor %s pods/s\n" "$tc" "$wl" "$r" "${s%% *}" "$f" >&2
    done
done <"$tmp/plan.tsv"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$tmp/results.tsv" "$rounds" "$load_before" "$load_after" <<'EOF'
import statistics, sys
path, rounds, before, after = sys.argv[1:]
order, res = [], {}
for line in open(path):
    name, sched, floor = line.rstrip("\n").split("\t")
    pps, digest = sched.split()
    if name not in res:
        order.append(name)
        res[name] = ([], [], set())
    res[name][0].append(float(pps)); res[name][1].append(float(floor)); res[name][2].add(digest)
def fmt(xs):
    return f"{statistics.median(xs):,.0f} ({min(xs):,.0f}-{max(xs):,.0f})"
print(f"{rounds} interleaved rounds; load average (1/5/15 min) before {before}, after {after}")
print()
print("| workload | schedperf pods/s median (range) | floor pods/s median (range) | ratio of medians |")
print("|---|---:|---:|---:|")
for n in order:
    s, f, digests = res[n]
    note = "" if len(digests) == 1 else " (placementDigest differed between rounds)"
    print(f"| {n} | {fmt(s)} | {fmt(f)} | {statistics.median(s) / statistics.median(f):.3f}{note} |")
EOF
