#!/usr/bin/env python3
"""Tests of scripts/upstream_report.py on a cut of a real run (scripts/testdata/upstream-apiserver/: the
DataItems, .dat samples and log of SchedulingBasic/500Nodes behind kube-apiserver and etcd, 2026-12-03).

    python3 scripts/upstream_report_test.py
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "testdata", "upstream-apiserver")
sys.path.insert(0, HERE)
import upstream_report  # noqa: E402


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = upstream_report.main(argv)
    return code, out.getvalue(), err.getvalue()


def convert_args(data_items=os.path.join(DATA, "data"), config=os.path.join(DATA, "performance-config.yaml")):
    return [
        "--data-items", data_items,
        "--log", os.path.join(DATA, "bench.log"),
        "--config", config,
        "--time", os.path.join(DATA, "time.txt"),
        "--wall-seconds", "14.25",
        "--rep", "2",
    ]


class Convert(unittest.TestCase):
    def setUp(self):
        code, out, err = run(convert_args())
        self.assertEqual(code, 0, err)
        self.run_ = json.loads(out)

    def test_names_and_labels_come_from_the_item_and_upstreams_file(self):
        r = self.run_
        self.assertEqual((r["testCase"], r["workload"], r["rep"]), ("SchedulingBasic", "500Nodes", 2))
        self.assertEqual(r["labels"], ["basic", "performance"])
        self.assertEqual(r["agent"], "kube-apiserver+etcd")

    def test_throughput_average_is_measured_pods_over_scheduling_duration(self):
        r = self.run_
        # 4 of the log's 6 bound pods are in the measured namespace (namespace-2).
        self.assertEqual(r["measuredPods"], 4)
        self.assertAlmostEqual(r["durationSeconds"], 4.636971758)
        self.assertAlmostEqual(r["throughput"]["average"], 4 / 4.636971758)
        self.assertAlmostEqual(r["throughput"]["p50"], 201.2279878894029)
        self.assertAlmostEqual(r["throughput"]["p99"], 371.67990740534293)
        self.assertEqual(r["throughput"]["samples"], [201.227988, 200.072288, 371.679907])

    def test_threshold_is_checked_against_upstreams_own_average(self):
        # Upstream's Average (mean of its samples) is 257.66 >= the fixture's 250, though pods/duration is not.
        self.assertEqual(self.run_["threshold"], 250)
        self.assertIs(self.run_["thresholdPassed"], True)
        self.assertAlmostEqual(self.run_["_upstreamAverage"], 257.66006100429223)

    def test_attempt_latency_is_upstreams_histogram_in_micros(self):
        a = self.run_["attemptLatencyMicros"]
        self.assertAlmostEqual(a["p50"], 105558.44155844155)
        self.assertAlmostEqual(a["p99"], 254967.74193548388)
        self.assertEqual((a["max"], a["count"]), (0.0, 0))
        self.assertEqual(sorted(self.run_["extensionPointMicros"]), ["Bind", "Filter"])

    def test_placements_accounting_and_process_figures(self):
        r = self.run_
        self.assertEqual(r["accounting"]["bound"], 6)
        self.assertEqual(r["accounting"]["lost"], 0)
        self.assertEqual(r["placementQuality"]["nodesUsed"], 6)
        self.assertEqual(len(r["placementDigest"]), 64)
        self.assertEqual(r["counters"]["attempts"], 1500)
        self.assertAlmostEqual(r["cpuSeconds"], 11.0)
        self.assertEqual(r["peakRssBytes"], 500000 * 1024)

    def test_merged_report_passes_the_schema(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run.json")
            with open(path, "w") as f:
                json.dump(self.run_, f)
            code, out, err = run(["--merge", path, "--command-line", "scripts/upstream-apiserver.sh", "x/y"])
        self.assertEqual(code, 0, err)
        report = json.loads(out)
        self.assertEqual(report["engine"], "kube-scheduler v1.37.2 (apiserver+etcd, scheduler_perf)")
        self.assertNotIn("_upstreamAverage", report["runs"][0])
        try:
            import jsonschema
        except ImportError:
            self.skipTest("jsonschema not installed")
        with open(os.path.join(ROOT, "docs", "report.schema.json")) as f:
            jsonschema.validate(report, json.load(f))


class BadInput(unittest.TestCase):
    def check(self, argv, *expected):
        code, out, err = run(argv)
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        for e in expected:
            self.assertIn(e, err)

    def test_missing_throughput_item_names_file_and_metric(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(DATA, "data"), os.path.join(d, "data"))
            (name,) = [f for f in os.listdir(os.path.join(d, "data")) if f.endswith(".json")]
            path = os.path.join(d, "data", name)
            with open(path) as f:
                doc = json.load(f)
            doc["dataItems"] = [i for i in doc["dataItems"] if i["labels"]["Metric"] != "SchedulingThroughput"]
            with open(path, "w") as f:
                json.dump(doc, f)
            self.check(convert_args(data_items=os.path.join(d, "data")), name, "Metric=SchedulingThroughput")

    def test_empty_data_items_say_no_workload_ran(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "BenchmarkPerfScheduling_benchmark_misc_x.json"), "w") as f:
                json.dump({"version": "v1", "dataItems": None}, f)
            self.check(convert_args(data_items=d), "dataItems", "non-empty list")

    def test_workload_missing_from_config(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "c.yaml")
            with open(cfg, "w") as f:
                f.write("- name: Other\n  workloads: []\n")
            self.check(convert_args(config=cfg), "c.yaml", "SchedulingBasic/500Nodes")

    def test_missing_flag(self):
        self.check(["--log", "x"], "--data-items", "required")

    def test_script_exit_code(self):
        p = subprocess.run([sys.executable, os.path.join(HERE, "upstream_report.py"), "--merge", "/nonexistent.json"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent.json", p.stderr)


if __name__ == "__main__":
    unittest.main()
