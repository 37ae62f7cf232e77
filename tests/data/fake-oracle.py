#!/usr/bin/env python3
"""A stand-in for `schedperf-oracle serve` in tests of `schedperf verify`'s plumbing.

It answers `explain` requests with schedperf's own answer (computed by `SCHEDPERF explain`), so
FAKE_MODE decides what the check sees:
  self     the same answer: every case must agree;
  perturb  the answer with `selected` changed on every third case: those must diverge;
  crash    exits without answering on the third request;
  hang     never answers the third request.
"""
import json, os, subprocess, sys, tempfile, time

mode = os.environ.get("FAKE_MODE", "self")
schedperf = os.environ["SCHEDPERF"]
if sys.argv[1:] != ["serve"]:
    sys.exit(2)
for n, line in enumerate(sys.stdin):
    req = json.loads(line)
    if n == 2 and mode == "crash":
        sys.exit(1)
    if n == 2 and mode == "hang":
        time.sleep(3600)
    if req.get("op") != "explain":
        print(json.dumps({"error": "fake oracle: only explain"}), flush=True)
        continue
    with tempfile.TemporaryDirectory() as d:
        args = [schedperf, "explain", "--output", "json"]
        for name in ("cluster", "pod", "config"):
            if req.get(name):
                open(f"{d}/{name}.yaml", "w").write(req[name])
                args += [f"--{name}", f"{d}/{name}.yaml"]
        out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        print(json.dumps({"error": out.stderr.strip()}), flush=True)
        continue
    answer = json.loads(out.stdout)
    if mode == "perturb" and n % 3 == 0:
        answer["selected"] = "no-such-node"
    print(json.dumps(answer), flush=True)
