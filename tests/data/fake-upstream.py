#!/usr/bin/env python3
"""A stand-in for `schedperf-oracle run` in tests of `schedperf compare --upstream`'s plumbing.

`run PATH ... --format json --rep N` runs `$SCHEDPERF run PATH ... --format json` and prints its report
as the oracle would: engine "fake upstream", every throughput figure divided by FAKE_SLOWDOWN (default 2),
placements unchanged (so the digests agree). FAKE_MODE=crash exits 3 without a report.
"""
import json, os, subprocess, sys

if len(sys.argv) < 2 or sys.argv[1] != "run":
    sys.exit(2)
if os.environ.get("FAKE_MODE") == "crash":
    print("fake upstream: crashed", file=sys.stderr)
    sys.exit(3)
args, rest = [], sys.argv[2:]
rep = 0
i = 0
while i < len(rest):
    if rest[i] == "--rep":
        rep = int(rest[i + 1])
        i += 2
        continue
    args.append(rest[i])
    i += 1
out = subprocess.run([os.environ["SCHEDPERF"], "run"] + args, capture_output=True, text=True)
if out.returncode not in (0, 1):
    sys.stderr.write(out.stderr)
    sys.exit(out.returncode)
doc = json.loads(out.stdout)
slow = float(os.environ.get("FAKE_SLOWDOWN", "2"))
doc["engine"] = "fake upstream"
doc["tool"]["name"] = "fake-upstream"
for r in doc["runs"]:
    r["rep"] = rep
    t = r["throughput"]
    for k in ("average", "p50", "p90", "p95", "p99"):
        t[k] /= slow
    t["samples"] = [s / slow for s in t["samples"]]
print(json.dumps(doc))
