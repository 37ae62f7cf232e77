"""Fill in each case's `expect` from what schedperf-oracle explain answers (the real kube-scheduler).

    python3 tests/data/conformance-ndf/record.py oracle/bin/schedperf-oracle \
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
    flt, codes = {}, {}
    for n in res["nodes"]:
        if n["feasible"]:
            flt[n["name"]] = "pass"
        else:
            r = n["filter"]["reasons"]
            flt[n["name"]] = r[0] if len(r) == 1 else r
            codes[n["name"]] = n["filter"]["code"]
    case["expect"] = {"filter": flt}
    if codes:
        case["expect"]["filterCode"] = codes
    case["oracleSelected"] = res["selected"]
    out_docs.append(case)
print("# NodeDeclaredFeatures cases in the conformance format (/work/shared/conformance/README.md): nodes'")
print("# status.declaredFeatures against pods needing the registry's real features. The expectations")
print("# are the oracle's answers (schedperf-oracle explain: the real kube-scheduler v1.37.2), recorded by record.py")
print("# from cases.in, not written by hand; `oracleSelected` is the node its cycle chose (not read by run.py).")
print("# Run: python3 /work/shared/conformance/run.py target/release/schedperf tests/data/conformance-ndf --verbose")
print(yaml.safe_dump_all(out_docs, sort_keys=False, width=120), end="")
