import json, subprocess, sys, time
B = sys.argv[1]; N = int(sys.argv[2])
nodes = []
for i in range(10):
    nodes.append(f"""apiVersion: v1
kind: Node
metadata: {{name: node-{i:02d}, labels: {{kubernetes.io/hostname: node-{i:02d}, topology.kubernetes.io/zone: z{i%3}}}}}
status: {{allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}, capacity: {{cpu: "8", memory: 16Gi, pods: "110"}}}}""")
pods = []
for i in range(20):
    pods.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: e{i}, namespace: default, labels: {{app: a}}}}
spec: {{nodeName: node-{i%10:02d}, containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{(i%4)+1}00m", memory: 1Gi}}}}}}]}}""")
cluster = "\n---\n".join(nodes + pods)
pod = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default, labels: {app: a}}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: a}}}]
"""
p = subprocess.Popen([B, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
req = json.dumps({"op": "explain", "cluster": cluster, "pod": pod, "config": None, "featureGates": None}) + "\n"
p.stdin.write(req); p.stdin.flush(); first = json.loads(p.stdout.readline())
print(json.dumps(first)[:300])
t = time.time()
for _ in range(N):
    p.stdin.write(req); p.stdin.flush(); r = json.loads(p.stdout.readline())
    assert r.get("selected") == first.get("selected"), r
dt = time.time() - t
print(f"{N} explains in {dt:.2f}s = {N/dt:.0f} req/s")
p.stdin.close(); p.wait()
