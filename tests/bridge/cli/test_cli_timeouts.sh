#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gangbridge timeouts report`: a generated history of 10,000 PodGroups (Volcano and coscheduling,
# three queues, every size class, 3 % of the gangs never scheduled, extra pods beyond minMember,
# every timeout notation) with known truth: the generator keeps every gang's real wait and computes
# the expected figures on its own (nearest-rank quantiles over the scheduled gangs, Kaplan-Meier
# over all of them, never-scheduled counts and ages, the suggestion rule, --what-if counts); the
# report's -o json must match it (every p50/p90/p99 within 1 s of the truth; before issue 18 the
# never-scheduled were counted as if scheduled at the dump's newest timestamp and every cell was
# wrong).  The same history as one kubectl List of 30 MB (over the old 16 MiB limit) from a file
# and from stdin gives the same report.  Then inputs (YAML, directories, Lists), errors at
# file:line:col (JSON and YAML, exact positions), usage, the table, and the HTML page: no external
# references, and a real headless Chromium screenshot that shows the table, the curves and both
# timeout marks.
set -u
cd "${GB_SRC:?}"
bin=${GANGBRIDGE:?}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # description, wanted exit, command...
  local what=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" = "$want" ]; then pass=$((pass+1)); else
    echo "FAIL $what: exit $got, want $want"; sed 's/^/    /' "$tmp/err" | head; fail=$((fail+1)); fi
}
has() { # description, file, fixed string
  if grep -qF -- "$3" "$2"; then pass=$((pass+1)); else
    echo "FAIL $1: '$3' not in $2:"; sed 's/^/    /' "$2" | head -20; fail=$((fail+1)); fi
}
check() { # description, command...
  local what=$1; shift
  if "$@" >"$tmp/chk" 2>&1; then pass=$((pass+1)); else
    echo "FAIL $what:"; sed 's/^/    /' "$tmp/chk" | head -30; fail=$((fail+1)); fi
}

# ---- the generated dump and its expected report ---------------------------------------------
cat >"$tmp/gen.py" <<'PY'
import json, math, os, random, sys

out_dir, n_total = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261124)
T0 = 1767225600  # 2026-01-01T00:00:00Z
NOW = T0 + n_total * 30 + 600

def ts(t):
    import datetime
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

# (backend, queue) -> mean wait per size class, seconds.
QUEUES = [("volcano", "research", [20, 60, 240, 900, 2400]),
          ("volcano", "prod", [5, 15, 45, 200, 700]),
          ("coscheduling", "", [3, 10, 40, 150, 500])]
SIZES = [(1, 1), (2, 7), (8, 31), (32, 40), (128, 134)]
WEIGHTS = [40, 30, 20, 8, 2]

def timeout_of(backend, queue):
    """Returns (metadata annotations, spec fields, effective timeout or None)."""
    r = rng.random()
    if backend == "volcano":
        if queue == "research":
            if r < 0.8: return {"volcano.sh/sla-waiting-time": "10m"}, {}, 600
            if r < 0.9: return {"volcano.sh/sla-waiting-time": "1h0m30s"}, {}, 3630
            return {}, {}, None
        if r < 0.7: return {"sla-waiting-time": "5m"}, {}, 300
        if r < 0.71: return {"volcano.sh/sla-waiting-time": "0s"}, {}, None  # Volcano ignores <= 0
        return {}, {}, None
    if r < 0.7: return {}, {"scheduleTimeoutSeconds": 300}, 300
    if r < 0.85: return {}, {"scheduleTimeoutSeconds": 1200}, 900  # kube-scheduler's cap
    return {}, {}, None

gangs, pgs, pods = [], [], []
for i in range(n_total):
    backend, queue, means = QUEUES[i % 3]
    cls = rng.choices(range(5), WEIGHTS)[0]
    size = rng.randint(*SIZES[cls])
    ns = "team-%d" % (i % 7)
    name = "pg-%05d" % i
    created = T0 + i * 30
    ann, spec_extra, timeout = timeout_of(backend, queue)
    wait = int(rng.expovariate(1.0 / means[cls]))
    # 3 % of the gangs, of any age, never got scheduled: their real waits are unknown.
    censored = rng.random() < 0.03
    spec = {"minMember": size}
    spec.update(spec_extra)
    if backend == "volcano":
        pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(created)},
              "spec": dict(spec, queue=queue), "status": {"phase": "Pending" if censored else "Running"}}
    else:
        pg = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
              "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(created)},
              "spec": spec}
    if ann:
        pg["metadata"]["annotations"] = ann
    pgs.append(pg)
    # The last counted pod (the minMember-th to schedule) schedules at created + wait; the others
    # earlier; a censored gang has one pod fewer scheduled; some gangs have a later extra pod.
    times = [created + rng.randint(0, wait) for _ in range(size - 1)] + [created + wait]
    if censored:
        times[-1] = None
    if rng.random() < 0.1 and not censored:
        times.append(created + wait + 500)
    rng.shuffle(times)
    for k, t in enumerate(times):
        meta = {"name": "%s-%d" % (name, k), "namespace": ns}
        if backend == "volcano":
            meta["annotations"] = {"scheduling.k8s.io/group-name": name}
        else:
            meta["labels"] = {"scheduling.x-k8s.io/pod-group": name}
        cond = ({"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(t)} if t
                else {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                      "lastTransitionTime": ts(created)})
        pods.append({"metadata": meta, "status": {"phase": "Running" if t else "Pending",
                                                  "conditions": [cond]}})
    gangs.append(dict(backend=backend, queue=queue, cls=cls, ns=ns, name=name,
                      wait=(NOW - created) if censored else wait, censored=censored,
                      timeout=timeout))

# A third of the dump as kubectl List JSON files (PodList typed, items without kind), the PodGroups
# as one YAML List per backend chunk: the loader sees both notations and directories.
os.makedirs(os.path.join(out_dir, "pods"), exist_ok=True)
for c in range(0, len(pods), 20000):
    with open(os.path.join(out_dir, "pods", "pods-%03d.json" % (c // 20000)), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": pods[c:c + 20000]}, f)
for c in range(0, len(pgs), 2500):
    with open(os.path.join(out_dir, "podgroups-%d.json" % (c // 2500)), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": pgs[c:c + 2500]}, f, indent=1)
# The whole history as kubectl writes `get podgroups,pods -A -o json`: one List, keys sorted
# (items before kind), every item with its kind, 4-space indentation.
for p in pods:
    p["apiVersion"], p["kind"] = "v1", "Pod"
with open(os.path.join(out_dir, "..", "single.json"), "w") as f:
    json.dump({"apiVersion": "v1", "items": pgs + pods, "kind": "List",
               "metadata": {"resourceVersion": ""}}, f, indent=4, sort_keys=True)

# ---- expected figures, computed independently of gangbridge ----
MARGIN, FLOOR, WHATIF = 1.5, 60, 600
def rank(vals, p):  # nearest rank: value at 1-based rank ceil(p/100 * n)
    return vals[max(1, math.ceil(p * len(vals) / 100)) - 1] if vals else None
def km(waits, ages, p):  # Kaplan-Meier: first wait where the estimated share reaches p %
    s, at_risk, events = 1.0, len(waits) + len(ages), sorted(waits)
    ages = sorted(ages)
    j, i = 0, 0
    while i < len(events):
        t = events[i]
        while j < len(ages) and ages[j] < t:
            j += 1; at_risk -= 1
        d = events.count(t)
        s *= 1 - d / at_risk
        if s <= 1 - p / 100 + 1e-12:
            return t
        at_risk -= d; i += d
    return None
def suggest(p99, backend):
    raw = math.ceil(p99 * 1500 / 1000)
    step = 10 if raw < 120 else 60 if raw < 3600 else 300
    v = math.ceil(raw / step) * step
    v = max(v, FLOOR)
    capped = backend == "coscheduling" and v > 900
    return (900 if capped else v), capped
CLASSNAMES = ["1", "2-7", "8-31", "32-127", "128+"]
rows = {}
for g in gangs:
    rows.setdefault((0 if g["backend"] == "volcano" else 1, g["queue"], g["cls"]), []).append(g)
expected = []
for key in sorted(rows):
    gs = rows[key]
    waits = sorted(g["wait"] for g in gs if not g["censored"])
    ages = sorted(g["wait"] for g in gs if g["censored"])
    counts = {}
    for g in gs:
        counts[g["timeout"]] = counts.get(g["timeout"], 0) + 1
    best = max(counts.items(), key=lambda kv: (kv[1], -(kv[0] if kv[0] is not None else -1)))
    sugg, capped = suggest(rank(waits, 99), gs[0]["backend"])
    oldest = max((g for g in gs if g["censored"]), key=lambda g: g["wait"], default=None)
    expected.append({
        "backend": gs[0]["backend"], "queue": key[1], "sizeClass": CLASSNAMES[key[2]],
        "gangs": len(gs), "scheduled": len(waits), "censored": len(ages),
        "p50Seconds": rank(waits, 50), "p90Seconds": rank(waits, 90),
        "p99Seconds": rank(waits, 99), "maxSeconds": waits[-1],
        "kaplanMeier": {"p50Seconds": km(waits, ages, 50), "p90Seconds": km(waits, ages, 90),
                        "p99Seconds": km(waits, ages, 99)},
        "neverScheduled": {"count": len(ages), "ageP50Seconds": rank(ages, 50),
                           "ageMaxSeconds": ages[-1] if ages else None,
                           "oldest": "%s/%s" % (oldest["ns"], oldest["name"]) if oldest else None},
        "timeoutSeconds": best[0], "timeoutGangs": best[1],
        "exceeded": sum(1 for g in gs if g["timeout"] is not None and g["wait"] > g["timeout"]),
        "suggestedSeconds": sugg, "suggestedCapped": capped,
        "wouldCut": sum(1 for g in gs if g["wait"] > sugg),
        "whatIfCut": sum(1 for g in gs if g["wait"] > WHATIF)})
json.dump({"now": ts(NOW), "rows": expected}, open(os.path.join(out_dir, "..", "expected.json"), "w"))
PY

cat >"$tmp/compare.py" <<'PY'
import json, sys
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert got["now"] == want["now"], (got["now"], want["now"])
assert len(got["rows"]) == len(want["rows"]) == 15, (len(got["rows"]), len(want["rows"]))
bad = 0
worst = 0
for g, w in zip(got["rows"], want["rows"]):
    for k, v in w.items():
        if k in ("p50Seconds", "p90Seconds", "p99Seconds") and g.get(k) is not None:
            worst = max(worst, abs(g[k] - v))
            if abs(g[k] - v) > 1:  # the acceptance bound: within 1 s of the truth
                print("row %s/%s/%s: %s = %r, truth %r" % (w["backend"], w["queue"], w["sizeClass"], k, g.get(k), v))
                bad += 1
        elif g.get(k) != v:
            print("row %s/%s/%s: %s = %r, want %r" % (w["backend"], w["queue"], w["sizeClass"], k, g.get(k), v))
            bad += 1
    if not g.get("reason", "").startswith("p99 "):
        print("row reason: %r" % g.get("reason")); bad += 1
tot = got["totals"]
assert tot["gangs"] == 10000, tot
assert tot["censored"] == sum(w["censored"] for w in want["rows"]), tot
assert tot["whatIfCut"] == sum(w["whatIfCut"] for w in want["rows"]), tot
assert got["whatIfSeconds"] == 600 and got["rule"]["marginPermille"] == 1500, got
assert got["quantiles"].startswith("nearest rank"), got["quantiles"]
print("15 cells: largest quantile difference from the truth %d s; never scheduled %d" % (worst, tot["censored"]))
sys.exit(1 if bad else 0)
PY

mkdir -p "$tmp/dump/in"
check "generator" /usr/bin/python3 "$tmp/gen.py" "$tmp/dump/in" 10000
now=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["now"])' "$tmp/dump/expected.json")
expect "report over 10,000 PodGroups" 0 "$bin" timeouts report -f "$tmp/dump/in" --now "$now" --what-if 10m -o json
cp "$tmp/out" "$tmp/big.json"
check "quantiles within 1 s of the truth, never-scheduled counts, suggestions, what-if" /usr/bin/python3 "$tmp/compare.py" "$tmp/big.json" "$tmp/dump/expected.json"
sed 's/^/    /' "$tmp/chk"
# The same history as one kubectl List over 16 MiB, from a file and from stdin: the same report.
ls -l "$tmp/dump/single.json" | awk '{printf "    single kubectl List: %.1f MB\n", $5 / 1e6}'
expect "one List over 16 MiB" 0 "$bin" timeouts report -f "$tmp/dump/single.json" --now "$now" --what-if 10m -o json
check "one List gives the same report" cmp "$tmp/out" "$tmp/big.json"
expect "the List on stdin" 0 sh -c "$bin timeouts report -f - --now '$now' --what-if 10m -o json <'$tmp/dump/single.json'"
check "stdin gives the same report" cmp "$tmp/out" "$tmp/big.json"
expect "table over the dump" 0 "$bin" timeouts report -f "$tmp/dump/in" --now "$now" --what-if 10m
has "table header" "$tmp/out" "QUEUE"
has "table what-if column" "$tmp/out" "CUT BY 10m0s"
has "table coscheduling cap" "$tmp/out" "capped at kube-scheduler's 15m Permit limit"

# ---- small inputs: stdin, YAML, default now, matching rules ---------------------------------
cat >"$tmp/small.yaml" <<'Y'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: g1
  namespace: ml
  creationTimestamp: "2026-03-01T10:00:00Z"
  annotations: {volcano.sh/sla-waiting-time: 2m}
spec: {minMember: 2, queue: gpu}
---
apiVersion: v1
kind: Pod
metadata: {name: g1-a, namespace: ml, annotations: {scheduling.k8s.io/group-name: g1}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:01:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: g1-b, namespace: ml, annotations: {scheduling.k8s.io/group-name: g1}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:03:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: other-ns, namespace: elsewhere, annotations: {scheduling.k8s.io/group-name: g1}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:00:10Z"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: g2, namespace: ml, creationTimestamp: "2026-03-01T10:00:00Z"}
spec: {minMember: 1, queue: gpu}
---
apiVersion: v1
kind: Pod
metadata: {name: last, namespace: ml}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:20:00Z"}
Y
expect "stdin yaml" 0 sh -c "$bin timeouts report -o json -f - <'$tmp/small.yaml'"
check "small: waits, censoring, default now" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["now"] == "2026-03-01T10:20:00Z", d["now"]   # the newest timestamp in the dump
r1, = [r for r in d["rows"] if r["sizeClass"] == "2-7"]
assert r1["queue"] == "gpu" and r1["p50Seconds"] == 180 and r1["censored"] == 0, r1
assert r1["timeoutSeconds"] == 120 and r1["exceeded"] == 1, r1    # 3m > 2m
r2, = [r for r in d["rows"] if r["sizeClass"] == "1"]
assert r2["censored"] == 1 and r2["scheduled"] == 0 and r2["maxSeconds"] is None, r2
assert r2["neverScheduled"] == {"count": 1, "ageP50Seconds": 1200, "ageMaxSeconds": 1200,
                                "oldest": "ml/g2"}, r2
assert r2["suggestedSeconds"] is None and r2["timeoutSeconds"] is None, r2
' "$tmp/out"

# ---- the upstream Workload API: its PodGroups are the gangs (not the Workload), the quorum is
# spec.schedulingPolicy.gang.minCount, pods join by spec.schedulingGroup.podGroupName, and each
# version has its own scheduled condition (v1alpha2 PodGroupScheduled, v1beta1
# PodGroupInitiallyScheduled: the old name on a v1beta1 PodGroup says nothing) -------------------
cat >"$tmp/workload.yaml" <<'Y'
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: x, namespace: ml, creationTimestamp: "2026-03-01T10:00:00Z"}
spec:
  podGroupTemplates:
  - name: gang
    schedulingPolicy: {gang: {minCount: 2}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: x-gang, namespace: ml, creationTimestamp: "2026-03-01T10:00:00Z"}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  workloadRef: {workloadName: x, templateName: gang}
---
apiVersion: v1
kind: Pod
metadata: {name: x-0, namespace: ml}
spec: {schedulingGroup: {podGroupName: x-gang}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:01:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: x-1, namespace: ml}
spec: {schedulingGroup: {podGroupName: x-gang}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:02:00Z"}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: y-gang, namespace: ml, creationTimestamp: "2026-03-01T10:00:00Z"}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
status:
  conditions:
  - {type: PodGroupScheduled, status: "True", lastTransitionTime: "2026-03-01T10:00:30Z"}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: z-gang, namespace: ml, creationTimestamp: "2026-03-01T10:00:00Z"}
spec:
  schedulingPolicy: {gang: {minCount: 4}}
status:
  conditions:
  - {type: PodGroupScheduled, status: "True", lastTransitionTime: "2026-03-01T10:00:30Z"}
  - {type: PodGroupInitiallyScheduled, status: "False", reason: Unschedulable}
---
apiVersion: v1
kind: Pod
metadata: {name: last, namespace: ml}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:10:00Z"}
Y
expect "workload api" 0 "$bin" timeouts report -o json -f "$tmp/workload.yaml"
check "workload api: PodGroups, minCount, spec-field pods, per-version condition" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["totals"]["gangs"] == 3, d["totals"]                 # the Workload x is no gang
r, = d["rows"]
assert r["backend"] == "workload" and r["sizeClass"] == "2-7", r
assert r["scheduled"] == 2 and r["censored"] == 1, r
assert r["p50Seconds"] == 30 and r["maxSeconds"] == 120, r    # y by condition, x at its 2nd pod
assert r["neverScheduled"]["oldest"] == "ml/z-gang", r
' "$tmp/out"

# ---- KAI: every pod of the TrainJob carries pod-group-name; the initializers' sub-groups
# (minMember 0) are not the gang, so the wait ends at the second trainer node (6 min), not at
# the second pod of any kind (20 s, what the report said before) --------------------------------
cat >"$tmp/kai.yaml" <<'Y'
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: k
  namespace: ml
  creationTimestamp: "2026-03-01T10:00:00Z"
  annotations: {gangbridge.io/min-member: "2"}
spec:
  minSubGroup: 3
  subGroups:
  - {name: dataset-initializer, minMember: 0}
  - {name: model-initializer, minMember: 0}
  - {name: node, minMember: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: k-d, namespace: ml, annotations: {pod-group-name: k}, labels: {kai.scheduler/subgroup-name: dataset-initializer}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:00:10Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: k-m, namespace: ml, annotations: {pod-group-name: k}, labels: {kai.scheduler/subgroup-name: model-initializer}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:00:20Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: k-n0, namespace: ml, annotations: {pod-group-name: k}, labels: {kai.scheduler/subgroup-name: node}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:05:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: k-n1, namespace: ml, annotations: {pod-group-name: k}, labels: {kai.scheduler/subgroup-name: node}}
status:
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-01T10:06:00Z"}
Y
expect "kai" 0 "$bin" timeouts report -o json -f "$tmp/kai.yaml"
check "kai: initializer pods are not the quorum" /usr/bin/python3 -c '
import json, sys
r, = json.load(open(sys.argv[1]))["rows"]
assert r["backend"] == "kai" and r["scheduled"] == 1 and r["maxSeconds"] == 360, r
' "$tmp/out"

# ---- errors at file:line:col; every one reported ---------------------------------------------
printf 'kind: PodGroup\nmetadata: [1, 2\n' >"$tmp/bad1.yaml"
cat >"$tmp/bad2.yaml" <<'Y'
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: late
  namespace: ml
  creationTimestamp: "yesterday"
spec: {minMember: 2}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: t, namespace: ml, creationTimestamp: "2026-03-01T10:00:00Z"}
spec: {minMember: 2, scheduleTimeoutSeconds: "soon"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: v
  namespace: ml
  creationTimestamp: "2026-03-01T10:00:00Z"
  annotations: {volcano.sh/sla-waiting-time: "ten minutes"}
spec: {minMember: 2}
Y
expect "bad inputs" 1 "$bin" timeouts report -f "$tmp/bad1.yaml" -f "$tmp/bad2.yaml"
has "syntax error at file:line:col" "$tmp/err" "$tmp/bad1.yaml:3:1: did not find expected"
has "bad timestamp at file:line:col" "$tmp/err" "$tmp/bad2.yaml:6:22: ml/late: metadata.creationTimestamp: not an RFC 3339 timestamp"
has "bad timeout at file:line:col" "$tmp/err" "$tmp/bad2.yaml:12:46: ml/t: spec.scheduleTimeoutSeconds: not an integer"
has "bad sla annotation warned" "$tmp/err" "ml/v: metadata.annotations.volcano.sh/sla-waiting-time: \"ten minutes\" is not a Go duration"
# JSON: the exact position of a bad value inside a List item (the item is read again with positions).
printf '{"apiVersion": "v1", "kind": "List", "items": [\n  {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",\n   "metadata": {"name": "j", "namespace": "ml",\n                "creationTimestamp": "soon"}, "spec": {"minMember": 1}}\n]}\n' >"$tmp/bad3.json"
printf '{"apiVersion": "v1", "kind": "List", "items": [\n  {"kind": "PodGroup",,}\n]}\n' >"$tmp/bad4.json"
expect "bad json inputs" 1 "$bin" timeouts report -f "$tmp/bad3.json" -f "$tmp/bad4.json"
has "bad timestamp in JSON at file:line:col" "$tmp/err" "$tmp/bad3.json:4:38: ml/j: metadata.creationTimestamp: not an RFC 3339 timestamp"
has "JSON syntax error at file:line:col" "$tmp/err" "$tmp/bad4.json:2:23:"
expect "missing file" 1 "$bin" timeouts report -f "$tmp/none.yaml"
has "missing file named" "$tmp/err" "$tmp/none.yaml"
expect "no podgroups" 1 "$bin" timeouts report -f "$tmp/dump/in/pods"
has "no podgroups said" "$tmp/err" "no PodGroup"

# ---- the live path: the stand-in API server ---------------------------------------------------
SRC=$GB_SRC WORK=$tmp
fail_live() { echo "FAIL live: $*"; fail=$((fail+1)); }
# shellcheck source=../common/apiserver.sh
source "$GB_SRC/tests/common/apiserver.sh"
fail() { fail_live "$@"; }
apiserver_start --verbose --crd "$GB_SHARED/crds/volcano/scheduling.volcano.sh_podgroups.yaml" \
  --crd "$GB_SHARED/crds/coscheduling/scheduling.x-k8s.io_podgroups.yaml"
trap 'apiserver_stop; rm -rf "$tmp"' EXIT
# The server stamps creationTimestamp itself, so the pods' PodScheduled times are set after it,
# relative to what it stamped: Volcano gang of 2 done at +90 s (5m waiting time), coscheduling
# gang of 1 done at +120 s (timeout 60 s: exceeded).
check "live: objects created" /usr/bin/python3 - "$URL" <<'PY'
import datetime, json, sys, urllib.request
url = sys.argv[1]
def call(method, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method=method,
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=20))
def ts(base, plus):
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%SZ") + datetime.timedelta(seconds=plus)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")
v = call("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
         {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "live-v", "annotations": {"volcano.sh/sla-waiting-time": "5m"}},
          "spec": {"minMember": 2, "queue": "q1"}})
c = call("POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
         {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
          "metadata": {"name": "live-c"}, "spec": {"minMember": 1, "scheduleTimeoutSeconds": 60}})
pods = [("v-0", {"annotations": {"scheduling.k8s.io/group-name": "live-v"}}, v, 30),
        ("v-1", {"annotations": {"scheduling.k8s.io/group-name": "live-v"}}, v, 90),
        ("c-0", {"labels": {"scheduling.x-k8s.io/pod-group": "live-c"}}, c, 120)]
for name, meta, pg, plus in pods:
    pod = call("POST", "/api/v1/namespaces/default/pods",
               {"apiVersion": "v1", "kind": "Pod", "metadata": dict(meta, name=name),
                "spec": {"containers": [{"name": "m", "image": "busybox"}]}})
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "PodScheduled", "status": "True",
         "lastTransitionTime": ts(pg["metadata"]["creationTimestamp"], plus)}]}
    call("PUT", "/api/v1/namespaces/default/pods/%s/status" % name, pod)
# More pods than one page holds (500): the report must follow `continue`.
for i in range(1100):
    call("POST", "/api/v1/namespaces/default/pods",
         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other-%d" % i},
          "spec": {"containers": [{"name": "m", "image": "busybox"}]}})
PY
expect "live report" 0 "$bin" timeouts report --kubeconfig "$tmp/kubeconfig" -o json
check "live: waits and timeouts from the cluster" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = {(r["backend"], r["queue"], r["sizeClass"]): r for r in d["rows"]}
assert set(rows) == {("volcano", "q1", "2-7"), ("coscheduling", "", "1")}, rows
v, c = rows["volcano", "q1", "2-7"], rows["coscheduling", "", "1"]
assert (v["p50Seconds"], v["timeoutSeconds"], v["exceeded"], v["censored"]) == (90, 300, 0, 0), v
assert (c["p50Seconds"], c["timeoutSeconds"], c["exceeded"]) == (120, 60, 1), c
' "$tmp/out"
pages=$(grep -c 'GET /api/v1/pods?limit=500' "$tmp/server.log")
conts=$(grep -c 'GET /api/v1/pods?limit=500&continue=' "$tmp/server.log")
if [ "$pages" -ge 3 ] && [ "$conts" -ge 2 ]; then pass=$((pass+1)); else
  echo "FAIL live: pods not listed page by page ($pages pages, $conts with continue)"; fail=$((fail+1)); fi
expect "live and -f exclude each other" 2 "$bin" timeouts report --live -f "$tmp/small.yaml"
apiserver_stop
expect "live: server gone" 1 "$bin" timeouts report --kubeconfig "$tmp/kubeconfig"
has "live: listing error named" "$tmp/err" "listing /apis/scheduling.volcano.sh/v1beta1/podgroups"

# ---- usage ----------------------------------------------------------------------------------
expect "help" 0 "$bin" timeouts --help
has "help names report" "$tmp/out" "report"
expect "report help" 0 "$bin" timeouts report --help
has "report help shows --what-if" "$tmp/out" "--what-if"
expect "no subcommand" 2 "$bin" timeouts
expect "unknown subcommand" 2 "$bin" timeouts tune
expect "no input" 2 "$bin" timeouts report
expect "bad output" 2 "$bin" timeouts report -o xml -f "$tmp/small.yaml"
expect "bad what-if" 2 "$bin" timeouts report --what-if 10 -f "$tmp/small.yaml"
has "bad what-if named" "$tmp/err" "'10'"
expect "bad now" 2 "$bin" timeouts report --now today -f "$tmp/small.yaml"
expect "bad margin" 2 "$bin" timeouts report --margin 0.5 -f "$tmp/small.yaml"
expect "margin 2" 0 "$bin" timeouts report --margin 2 -o json -f "$tmp/small.yaml"
has "margin 2 applied" "$tmp/out" '"marginPermille": 2000'
expect "stray argument" 2 "$bin" timeouts report "$tmp/small.yaml"

# ---- HTML: self-contained, and it renders -----------------------------------------------------
expect "html" 0 "$bin" timeouts report -f "$tmp/dump/in" --now "$now" -o html
cp "$tmp/out" "$tmp/report.html"
check "html is self-contained" /usr/bin/python3 -c '
import re, sys
h = open(sys.argv[1]).read()
assert h.startswith("<!DOCTYPE html>"), h[:40]
for pat in [r"https?:", r"\bsrc\s*=", r"<link\b", r"@import", r"url\(", r"<script\b"]:
    m = re.search(pat, h, re.I)
    assert not m, "external reference: %r near %r" % (pat, h[max(0, m.start() - 60):m.end() + 60])
assert h.count("<svg") == 3, h.count("<svg")  # one chart per backend and queue
assert h.index("<table") < h.index("<svg"), "the table is not on top"
for part in ("nearest rank", "Rule", "Example", "never<br>scheduled", "Kaplan"):
    assert part in h, part
' "$tmp/report.html"

chrome=$(command -v chromium || true)
if [ -z "$chrome" ]; then
  echo "FAIL html screenshot: chromium is not installed (bash scripts/install-deps.sh installs it)"
  fail=$((fail+1))
else
  # The table on top and the first queue's chart below it fit a 1100x1100 window.
  timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$tmp/chrome" --window-size=1100,1100 --screenshot="$tmp/shot.png" \
    "file://$tmp/report.html" >"$tmp/chrome.log" 2>&1
  [ -n "${GB_TIMEOUTS_SHOT:-}" ] && cp "$tmp/shot.png" "$GB_TIMEOUTS_SHOT"
  check "html screenshot shows the table, the curves and both timeouts" /usr/bin/python3 - "$tmp/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride = zlib.decompress(idat), w * bpp
prev, counts = bytearray(stride), {}
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = tuple(line[x:x + 3])
        counts[px] = counts.get(px, 0) + 1
    prev = line
def near(rgb, tol=24):
    return sum(n for px, n in counts.items() if all(abs(px[i] - rgb[i]) <= tol for i in range(3)))
total = w * h
white = near((255, 255, 255), 4)
classes = [near(c, 18) for c in ((0x00, 0x72, 0xb2), (0xe6, 0x9f, 0x00), (0x00, 0x9e, 0x73),
                                 (0xcc, 0x79, 0xa7), (0xd5, 0x5e, 0x00))]
current, suggested = near((0xb0, 0x00, 0x20), 30), near((0x00, 0x70, 0x3c), 30)
never = near((0xfd, 0xe8, 0xe8), 3)
print("pixels %d, non-white %d, size-class curves %s, current %d, suggested %d, never-scheduled "
      "cells %d" % (total, total - white, classes, current, suggested, never))
assert total - white > total // 50, "the page looks blank"
assert all(c > 300 for c in classes), "a size class's curve is missing"
assert current > 200, "no current timeouts in the table"
assert suggested > 200, "no suggested timeouts in the table"
assert never > 2000, "never-scheduled gangs are not shown"
PY
fi

echo "timeouts CLI: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
