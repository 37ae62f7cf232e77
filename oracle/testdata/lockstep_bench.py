import json, subprocess, sys, time
B = sys.argv[1]
p = subprocess.Popen([B, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(o):
    p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
    r = json.loads(p.stdout.readline())
    if "error" in r: print("ERR", o.get("op"), r); sys.exit(1)
    return r
def node(n):
    return {"apiVersion":"v1","kind":"Node","metadata":{"name":n,"labels":{"kubernetes.io/hostname":n,"topology.kubernetes.io/zone":"z"+n[-1]}},
            "status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}
def pod(n):
    return {"apiVersion":"v1","kind":"Pod","metadata":{"name":n,"namespace":"default","labels":{"app":"a"}},
       "spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"100m"}}}],
       "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app":"a"}}}]}}
call({"op":"init","config":"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 10\n","featureGates":{"OpportunisticBatching":False}})
t=time.time()
call({"op":"apply","objects":[node(f"n{i:03d}") for i in range(300)]})
print(f"300 nodes applied in {time.time()-t:.2f}s")
# parking: apply 5 pods then schedule in reverse order
call({"op":"apply","objects":[pod(f"q{i}") for i in range(5)]})
for i in reversed(range(5)):
    r = call({"op":"schedule","namespace":"default","name":f"q{i}"}); assert r["selected"], r
t=time.time(); sel=[]
for i in range(1000):
    call({"op":"apply","objects":[pod(f"p{i}")]})
    r = call({"op":"schedule","namespace":"default","name":f"p{i}"}); sel.append((r["selected"], r["evaluatedNodes"], r["feasibleNodes"]))
dt=time.time()-t
print(f"1000 apply+schedule in {dt:.2f}s = {1000/dt:.0f} pods/s; first: {sel[:3]}")
st = call({"op":"state"}); print(len(st["pods"]), "pods;", sum(1 for v in st["pods"].values() if v), "bound")
p.stdin.close(); p.wait()
