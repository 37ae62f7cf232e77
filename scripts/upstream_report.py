#!/usr/bin/env python3
"""Converts one run of upstream's scheduler_perf benchmark into a schedperf report.json run.

Used by scripts/upstream-apiserver.sh; one call per benchmark process (one workload):

    upstream_report.py --data-items DIR --log LOG --config performance-config.yaml \
        --time TIMEFILE --wall-seconds S --rep N --command-line ARG... > run.json
    upstream_report.py --merge run1.json run2.json ... > report.json

Inputs, all written by upstream's harness (k8s.io/kubernetes v1.37.2 test/integration/scheduler_perf):
- DIR/BenchmarkPerfScheduling_*.json: DataItems. SchedulingThroughput gives Average (upstream's: the mean
  of its 1 s samples), Perc50/90/95/99; SchedulingDuration the measured phase's length (from the start of
  the collectMetrics op, pod creation included, to its end); scheduler_scheduling_attempt_duration_seconds
  {result=scheduled} the attempt latency percentiles (from the histogram, ms).
- DIR/*.dat: the throughput collector's samples, one line per 1 s sample:
  `ts completed attempts observedTotal observedRate active backoff unschedulable gated`.
- LOG: the benchmark's output; its `"Successfully bound pod to node" pod="ns/name" node="n"` lines give
  the placements (pod names are the apiserver's generateName suffixes, so they never equal schedperf's).
- TIMEFILE: `/usr/bin/time -f 'user=%U sys=%S maxrss_kb=%M'` of the benchmark process (apiserver,
  scheduler and harness; etcd is a separate process and not counted).

The report follows docs/report.schema.json. What upstream does not measure is 0 and said so in
oracle/README.md ("upstream as users run it"): attempt latency max and count, e2e latency, placement
quality. `throughput.average` is schedperf's definition (measured pods / SchedulingDuration); upstream's
own Average (mean of the 1 s samples) is what its thresholds are checked against, so `thresholdPassed`
uses that one.

Bad input: one line on stderr naming the file and field, exit 2.
"""

import argparse
import glob
import hashlib
import json
import os
import platform
import re
import sys
import time

ENGINE = "kube-scheduler v1.37.2 (apiserver+etcd, scheduler_perf)"
KUBERNETES = "v1.37.2"
BOUND = re.compile(r'"Successfully bound pod to node" pod="([^"]+)" node="([^"]+)"')


class InputError(Exception):
    """A bad input: names the file and the field."""

    def __init__(self, file, field, expected):
        super().__init__(f"{file}: {field}: {expected}")


def zero_percentiles():
    return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "count": 0}


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(path, "(file)", f"expected readable JSON ({e})") from e


def one_file(pattern, what):
    files = sorted(glob.glob(pattern))
    if len(files) != 1:
        raise InputError(pattern, "(file)", f"expected exactly one {what}, found {len(files)}")
    return files[0]


def item(items, path, metric, **labels):
    """The one DataItem with labels.Metric == metric and the given labels, or None."""
    found = [
        it
        for it in items
        if it.get("labels", {}).get("Metric") == metric
        and all(it.get("labels", {}).get(k) == v for k, v in labels.items())
    ]
    if len(found) > 1:
        raise InputError(path, f"dataItems[Metric={metric}]", "expected at most one item (one measured phase)")
    return found[0] if found else None


def number(d, path, field):
    """d[last part of field], a non-negative number; field is the path shown in errors."""
    v = d.get(field.rsplit(".", 1)[-1])
    if not isinstance(v, (int, float)) or v != v or v < 0:
        raise InputError(path, field, f"expected a non-negative number, got {v!r}")
    return float(v)


def read_dat(path):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                cols = line.split()
                if len(cols) != 9 or not cols[0].endswith("s"):
                    raise InputError(path, f"line {n}", "expected 9 columns `ts completed attempts total rate ...`")
                rows.append(
                    {
                        "completed": int(cols[1]),
                        "attempts": int(cols[2]),
                        "observedTotal": int(cols[3]),
                        "rate": float(cols[4]),
                    }
                )
    except OSError as e:
        raise InputError(path, "(file)", f"expected a readable .dat file ({e})") from e
    except ValueError as e:
        raise InputError(path, "(line)", f"expected numbers ({e})") from e
    return rows


def read_placements(path):
    placements = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = BOUND.search(line)
                if m:
                    placements[m.group(1)] = m.group(2)
    except OSError as e:
        raise InputError(path, "(file)", f"expected the benchmark's log ({e})") from e
    return placements


def read_time(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(path, "(file)", f"expected /usr/bin/time output ({e})") from e
    vals = dict(re.findall(r"(user|sys|maxrss_kb)=([0-9.]+)", text))
    for k in ("user", "sys", "maxrss_kb"):
        if k not in vals:
            raise InputError(path, k, "expected `user=S sys=S maxrss_kb=K`")
    return float(vals["user"]) + float(vals["sys"]), int(vals["maxrss_kb"]) * 1024


def workload_spec(config_path, test_case, workload):
    """Labels and threshold of the workload in upstream's config file."""
    import yaml  # PyYAML; only needed here.

    try:
        with open(config_path, encoding="utf-8") as f:
            cases = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise InputError(config_path, "(file)", f"expected upstream's workload YAML ({e})") from e
    for tc in cases or []:
        if tc.get("name") != test_case:
            continue
        for w in tc.get("workloads") or []:
            if w.get("name") == workload:
                return (tc.get("labels") or []) + (w.get("labels") or []), w.get("threshold"), tc
    raise InputError(config_path, f"{test_case}/{workload}", "expected that test case and workload")


def digest(placements):
    h = hashlib.sha256()
    for k in sorted(placements):
        h.update(f"{k}\t{placements[k]}\n".encode())
    return h.hexdigest()


def convert(args):
    data_file = one_file(os.path.join(args.data_items, "BenchmarkPerfScheduling_*.json"), "DataItems JSON")
    doc = read_json(data_file)
    items = doc.get("dataItems")
    if not isinstance(items, list) or not items:
        raise InputError(data_file, "dataItems", "expected a non-empty list (did the benchmark run a workload?)")
    tp = item(items, data_file, "SchedulingThroughput")
    if tp is None:
        raise InputError(data_file, "dataItems[Metric=SchedulingThroughput]", "expected one item")
    name = tp.get("labels", {}).get("Name", "")
    parts = name.split("/")
    if len(parts) < 4 or parts[0] != "BenchmarkPerfScheduling":
        raise InputError(data_file, "labels.Name", f"expected BenchmarkPerfScheduling/TC/W/NAMESPACE, got {name!r}")
    test_case, workload, namespaces = parts[1], parts[2], set(parts[3].split(","))
    tpd = tp.get("data", {})
    up_avg = number(tpd, data_file, "data.Average")
    dur = item(items, data_file, "SchedulingDuration")
    if dur is None:
        raise InputError(data_file, "dataItems[Metric=SchedulingDuration]", "expected one item")
    duration_s = number(dur.get("data", {}), data_file, "data.Duration")
    att = item(items, data_file, "scheduler_scheduling_attempt_duration_seconds", result="scheduled")

    dat_files = sorted(glob.glob(os.path.join(args.data_items, "*.dat")))
    dat = read_dat(dat_files[0]) if len(dat_files) == 1 else []
    placements = read_placements(args.log)
    measured = sum(1 for p in placements if p.split("/", 1)[0] in namespaces)
    if measured == 0 and dat:
        measured = max(r["observedTotal"] for r in dat)
    if measured == 0 or duration_s <= 0:
        raise InputError(args.log, "bound pods", f"expected measured pods in namespace(s) {sorted(namespaces)}")
    cpu_s, rss = read_time(args.time)
    labels, threshold, tc = workload_spec(args.config, test_case, workload)

    latency = zero_percentiles()
    if att is not None:
        d = att.get("data", {})
        latency = {
            "p50": number(d, data_file, "attempt.data.Perc50") * 1e3,
            "p90": number(d, data_file, "attempt.data.Perc90") * 1e3,
            "p99": number(d, data_file, "attempt.data.Perc99") * 1e3,
            "max": 0.0,
            "count": 0,
            "mean": d.get("Average", 0.0) * 1e3,
        }
    extension = {}
    for it in items:
        lb = it.get("labels", {})
        if lb.get("Metric") == "scheduler_framework_extension_point_duration_seconds":
            d = it.get("data", {})
            extension[lb.get("extension_point", "?")] = {
                "p50": d.get("Perc50", 0.0) * 1e3,
                "p90": d.get("Perc90", 0.0) * 1e3,
                "p99": d.get("Perc99", 0.0) * 1e3,
                "max": 0.0,
                "count": 0,
                "mean": d.get("Average", 0.0) * 1e3,
            }
    bound = len(placements)
    last = dat[-1] if dat else {"attempts": bound, "completed": bound}
    return {
        "testCase": test_case,
        "workload": workload,
        "labels": labels,
        "seed": 0,
        "threads": 16,
        "rep": args.rep,
        "configSource": tc.get("schedulerConfigPath") or "default",
        "configDigest": "",
        "workloadDigest": "",
        "agent": "kube-apiserver+etcd",
        "virtualTime": False,
        "featureGatesIgnored": [],
        "featureGatesHonoured": [],
        # Only a benchmark that finished is converted: upstream's harness fails the others.
        "outcome": {
            "passed": True,
            "message": "",
            "failedOp": None,
            "podsWaitedFor": measured,
            "podsNotDone": 0,
            "reasons": {},
        },
        "measuredPods": measured,
        "scheduledPods": measured,
        "unschedulablePods": 0,
        "durationSeconds": duration_s,
        "wallSeconds": args.wall_seconds,
        "cpuSeconds": cpu_s,
        "throughput": {
            "average": measured / duration_s,
            "p50": number(tpd, data_file, "data.Perc50"),
            "p90": number(tpd, data_file, "data.Perc90"),
            "p95": number(tpd, data_file, "data.Perc95"),
            "p99": number(tpd, data_file, "data.Perc99"),
            "samples": [r["rate"] for r in dat],
            "intervalSeconds": 1.0,
        },
        "attemptLatencyMicros": latency,
        "attemptLatencyByResultMicros": {"scheduled": latency} if att is not None else {},
        "e2eLatencyMicros": zero_percentiles(),
        "podStartupMillis": zero_percentiles(),
        "podStartupStagesMillis": {},
        "extensionPointMicros": extension,
        "pluginTimings": [],
        "pluginSamplePercent": 0,
        "counters": {
            "attempts": last["attempts"],
            "scheduled": last["completed"],
            "unschedulable": 0,
            "errors": 0,
            "preemptions": 0,
            "preemptionVictims": 0,
            "bindFailures": 0,
            "retries": 0,
            "evictions": 0,
        },
        # The benchmark passed (the script converts only then): upstream's createPods waited until every
        # pod was scheduled, so nothing is pending or lost.
        "accounting": {"created": bound, "bound": bound, "unschedulable": 0, "deleted": 0, "pending": 0, "lost": 0},
        "unschedulableReasons": {},
        "cacheConsistent": True,
        "cacheDifferences": [],
        "placementQuality": {
            "utilization": {},
            "nodesUsed": len(set(placements.values())),
            "nodesTotal": 0,
            "fragmentationPods": 0,
            "topologySkew": [],
            "pendingPods": 0,
            "nodeCpuUtilization": [],
        },
        "placementDigest": digest(placements),
        "peakRssBytes": rss,
        "threshold": threshold,
        "thresholdMetric": "SchedulingThroughput/Average",
        "thresholdPassed": None if threshold is None else up_avg >= threshold,
        "histograms": {},
        # Not in the schema's run object: kept only in the intermediate file, dropped by --merge.
        "_upstreamAverage": up_avg,
    }


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as f:
            mem = int(f.readline().split()[1]) * 1024
    except OSError:
        mem = 0
    return {"cpuModel": cpu, "cores": os.cpu_count() or 0, "memoryBytes": mem, "kernel": platform.release()}


def merge(files, command_line):
    runs = []
    for path in files:
        run = read_json(path)
        if not isinstance(run, dict) or "testCase" not in run:
            raise InputError(path, "testCase", "expected a run written by upstream_report.py")
        run.pop("_upstreamAverage", None)
        runs.append(run)
    return {
        "schemaVersion": "schedperf.report/v1",
        "tool": {"name": "upstream-apiserver.sh", "version": KUBERNETES, "gitCommit": ""},
        "engine": ENGINE,
        "commandLine": command_line,
        "machine": machine(),
        "createdUnixSeconds": int(time.time()),
        "upstream": {"kubernetes": KUBERNETES},
        "runs": runs,
    }


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-items")
    p.add_argument("--log")
    p.add_argument("--config")
    p.add_argument("--time")
    p.add_argument("--wall-seconds", type=float, default=0.0)
    p.add_argument("--rep", type=int, default=0)
    p.add_argument("--merge", nargs="+")
    p.add_argument("--command-line", nargs=argparse.REMAINDER, default=[])
    args = p.parse_args(argv)
    try:
        if args.merge:
            out = merge(args.merge, args.command_line)
        else:
            for flag in ("data_items", "log", "config", "time"):
                if getattr(args, flag) is None:
                    raise InputError("(command line)", "--" + flag.replace("_", "-"), "required")
            out = convert(args)
    except InputError as e:
        print(f"upstream_report.py: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
