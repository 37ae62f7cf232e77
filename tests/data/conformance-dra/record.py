"""Fill in each case's `expect` from what schedperf-oracle explain answers (the real kube-scheduler): each
node's verdict, the code of a failure, and the plugin's normalized score on each feasible node when it scores.

    python3 tests/data/conformance-dra/record.py oracle/bin/schedperf-oracle \
        tests/data/conformance-dra/cases.in > tests/data/conformance-dra/dra.yaml
    python3 tests/data/conformance-dra/record.py oracle/bin/schedperf-oracle \
        tests/data/conformance-ndf/cases.in > tests/data/conformance-ndf/ndf.yaml

Uses /work/shared/conformance/run.py's config (only the plugin under test, PrioritySort, DefaultBinder).
"""
import json, os, subprocess, sys, tempfile
import yaml

sys.path.insert(0, os.environ.get("CONFORMANCE_DIR", "/work/shared/conformance"))
from run import config_for, dump_all  # noqa: E402

binary, path = sys.argv[1], sys.argv[2]
out_docs = []
for case in yaml.safe_load_all(open(path)):
    if not case:
        continue
    with tempfile.TemporaryDirectory() as d:
        cluster = (case.get("objects") or []) + case["nodes"] + (case.get("existingPods") or [])
        open(f"{d}/cluster.yaml", "w").write(dump_all(cluster))
        open(f"{d}/pod.yaml", "w").write(yaml.safe_dump(case["pod"], sort_keys=False))
        case["expect"] = {"filter": {n["metadata"]["name"]: "pass" for n in case["nodes"]}}
        open(f"{d}/config.yaml", "w").write(yaml.safe_dump(config_for(case), sort_keys=False))
        p = subprocess.run([binary, "explain", "--cluster", f"{d}/cluster.yaml", "--pod", f"{d}/pod.yaml",
                            "--config", f"{d}/config.yaml", "--output", "json"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            sys.exit(f"{case['name']}: {p.stderr.strip()}")
        res = json.loads(p.stdout)
    flt, codes, scores = {}, {}, {}
    for n in res["nodes"]:
        if n["feasible"]:
            flt[n["name"]] = "pass"
            # The plugin's score after NormalizeScore (before its weight), when it scores.
            sc = (n.get("scores") or {}).get(case["plugin"])
            if sc is not None:
                scores[n["name"]] = sc["score"]
        else:
            r = n["filter"]["reasons"]
            flt[n["name"]] = r[0] if len(r) == 1 else r
            codes[n["name"]] = n["filter"]["code"]
    case["expect"] = {"filter": flt}
    if codes:
        case["expect"]["filterCode"] = codes
    if scores:
        case["expect"]["scores"] = scores
    case["oracleSelected"] = res["selected"]
    out_docs.append(case)
# The header names the cases: the lines of `header.txt` beside cases.in when there is one (other case sets
# recorded with this script: tests/data/conformance-ndf), else DynamicResources'.
header_file = os.path.join(os.path.dirname(os.path.abspath(path)), "header.txt")
if os.path.exists(path) and os.path.exists(header_file):
    with open(header_file) as f:
        print(f.read(), end="")
else:
    print("# DynamicResources (DRA, resource.k8s.io/v1) cases in the conformance format (/work/shared/conformance/README.md).")
    print("# `objects` holds DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates; `scores` are")
    print("# DynamicResources' after NormalizeScore (DRAPrioritizedList's ranking of firstAvailable subrequests). The expectations")
print("# are the oracle's answers (schedperf-oracle explain: the real kube-scheduler v1.37.2), recorded by record.py")
print("# from cases.in, not written by hand; `oracleSelected` is the node its cycle chose (not read by run.py).")
print(f"# Run: python3 /work/shared/conformance/run.py target/release/schedperf {os.path.dirname(path) or '.'} --verbose")
print(yaml.safe_dump_all(out_docs, sort_keys=False, width=120), end="")
