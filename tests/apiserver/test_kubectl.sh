#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real kubectl against the stand-in API server: apply a Namespace, the Trainer, Volcano
# and coscheduling CRDs, runtimes, TrainJobs and PodGroups, then get, re-apply, and delete.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
SHARED="${GB_SHARED:-$SRC/../shared}"
UP="$SRC/tests/golden/inputs/upstream"
# shellcheck source=../common/apiserver.sh
source "$SRC/tests/common/apiserver.sh"

WORK="$(mktemp -d)"
trap 'apiserver_stop; rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

apiserver_start

# json_check FILE PYTHON-EXPR: evaluate an assertion on the JSON document in FILE (as d).
json_check() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2], {"d": d})
if not ok:
    sys.stderr.write("assertion failed: %s\n" % sys.argv[2])
    sys.exit(1)
PY
}

# kubectl's version dispatcher and discovery work against the server.
k version -o json >"$WORK/version.json"
json_check "$WORK/version.json" 'd["serverVersion"]["major"] == "1"'

# Namespaces: `kubectl create namespace` sends protobuf, so apply a manifest.
cat >"$WORK/ns.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels:
    gangbridge.io/policy: volcano
EOF
k apply -f "$WORK/ns.yaml" >"$WORK/out.txt"
grep -q "namespace/team-a created" "$WORK/out.txt" || fail "namespace apply"

# Custom kinds are unknown until their CRDs exist.
if k get trainjobs -A >/dev/null 2>"$WORK/err"; then fail "trainjobs served before the CRD"; fi
grep -q "the server doesn't have a resource type" "$WORK/err" || fail "unexpected error: $(cat "$WORK/err")"

# The Trainer CRDs are applied server-side, as Trainer's own install does.
k apply --server-side -f "$SHARED/crds/trainer/" -f "$SHARED/crds/volcano/" \
  -f "$SHARED/crds/coscheduling/" >"$WORK/crds.out"
[ "$(grep -c serverside-applied "$WORK/crds.out")" -eq 7 ] || fail "CRDs: $(cat "$WORK/crds.out")"
k get crd trainjobs.trainer.kubeflow.org -o json $SHOW_MANAGED_FIELDS >"$WORK/crd.json"
json_check "$WORK/crd.json" '{c["type"]: c["status"] for c in d["status"]["conditions"]}["Established"] == "True"'
json_check "$WORK/crd.json" 'd["metadata"]["managedFields"][0]["manager"] == "kubectl" and d["metadata"]["managedFields"][0]["operation"] == "Apply"'
k api-resources --api-group=trainer.kubeflow.org -o name >"$WORK/res.txt"
grep -qx "trainjobs.trainer.kubeflow.org" "$WORK/res.txt" || fail "api-resources: $(cat "$WORK/res.txt")"

# Runtimes and TrainJobs from upstream, validated (kubectl uses /openapi/v3 and
# server-side field validation).
k apply -f "$UP/runtimes/torch_distributed.yaml" >"$WORK/out.txt"
grep -q "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created" "$WORK/out.txt" || fail "ClusterTrainingRuntime apply"
k apply -n team-a -f "$UP/examples/05-multi-step.yaml" >"$WORK/ms.out"
grep -q "trainingruntime.trainer.kubeflow.org/torch-with-dataset-init created" "$WORK/ms.out" || fail "TrainingRuntime apply"
grep -q "trainjob.trainer.kubeflow.org/multi-step-example created" "$WORK/ms.out" || fail "TrainJob apply"
k apply -n team-a -f "$UP/examples/01-multi-node.yaml" -f "$UP/examples/04-volcano-integration.yaml" >/dev/null

k get trainjobs -n team-a -o json >"$WORK/tjs.json"
json_check "$WORK/tjs.json" 'sorted(i["metadata"]["name"] for i in d["items"]) == ["multi-node-example", "multi-step-example", "volcano-example"]'
json_check "$WORK/tjs.json" 'd["kind"] == "List" or d["kind"] == "TrainJobList"'
k get trainjob multi-node-example -n team-a -o json >"$WORK/tj.json"
json_check "$WORK/tj.json" 'd["spec"]["trainer"]["numNodes"] == 3 and d["metadata"]["generation"] == 1'
json_check "$WORK/tj.json" 'd["spec"]["runtimeRef"]["name"] == "torch-distributed"'
k get clustertrainingruntime torch-distributed-volcano -o json >"$WORK/ctr.json"
json_check "$WORK/ctr.json" '"volcano" in d["spec"]["podGroupPolicy"]'
k get trainingruntime -n team-a torch-with-dataset-init -o json >/dev/null

# Re-applying a changed manifest patches the object (JSON merge patch for custom kinds).
sed 's/numNodes: 3/numNodes: 5/' "$UP/examples/01-multi-node.yaml" >"$WORK/mn5.yaml"
k apply -n team-a -f "$WORK/mn5.yaml" >"$WORK/out.txt"
grep -q "trainjob.trainer.kubeflow.org/multi-node-example configured" "$WORK/out.txt" || fail "re-apply"
k get trainjob multi-node-example -n team-a -o json >"$WORK/tj.json"
json_check "$WORK/tj.json" 'd["spec"]["trainer"]["numNodes"] == 5 and d["metadata"]["generation"] == 2'
k apply -n team-a -f "$WORK/mn5.yaml" >"$WORK/out.txt"
grep -q "unchanged" "$WORK/out.txt" || fail "idempotent re-apply"

# Invalid objects are refused with the server's messages.
cat >"$WORK/bad.yaml" <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: bad
  namespace: team-a
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: three
EOF
if k apply -f "$WORK/bad.yaml" 2>"$WORK/err"; then fail "invalid TrainJob accepted"; fi
grep -q "spec.trainer.numNodes" "$WORK/err" || fail "no field in error: $(cat "$WORK/err")"
sed 's/numNodes: three/numNodes: 2\n    bogusField: 1/' "$WORK/bad.yaml" >"$WORK/unknown.yaml"
if k apply --help | grep -q -- "--validate='strict'"; then
  if k apply -f "$WORK/unknown.yaml" 2>"$WORK/err"; then fail "unknown field accepted under strict validation"; fi
  grep -q 'unknown field "spec.trainer.bogusField"' "$WORK/err" || fail "strict validation: $(cat "$WORK/err")"
else
  # kubectl before 1.25 sends no fieldValidation: the server's default (Warn) drops the field
  # and says so in a Warning header, which kubectl prints.
  k apply -f "$WORK/unknown.yaml" >/dev/null 2>"$WORK/err" || fail "warn validation: $(cat "$WORK/err")"
  grep -q 'Warning: unknown field "spec.trainer.bogusField"' "$WORK/err" || fail "no warning: $(cat "$WORK/err")"
  k get trainjob bad -n team-a -o json >"$WORK/bad.json"
  json_check "$WORK/bad.json" '"bogusField" not in d["spec"]["trainer"]'
  k delete trainjob bad -n team-a >/dev/null
fi

# PodGroups of both backends; the Volcano one owned by a TrainJob.
UID_TJ="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["uid"])' "$WORK/tj.json")"
cat >"$WORK/pg.yaml" <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: multi-node-example
  namespace: team-a
  ownerReferences:
  - apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    name: multi-node-example
    uid: $UID_TJ
    controller: true
    blockOwnerDeletion: true
spec:
  minMember: 5
  queue: default
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: cosched
  namespace: team-a
spec:
  minMember: 2
  scheduleTimeoutSeconds: 60
EOF
k apply -f "$WORK/pg.yaml" >"$WORK/pg.out"
grep -q "podgroup.scheduling.volcano.sh/multi-node-example created" "$WORK/pg.out" || fail "volcano PodGroup: $(cat "$WORK/pg.out")"
grep -q "podgroup.scheduling.x-k8s.io/cosched created" "$WORK/pg.out" || fail "coscheduling PodGroup"
k get podgroups.scheduling.volcano.sh -n team-a -o json >"$WORK/pgs.json"
json_check "$WORK/pgs.json" '[(i["metadata"]["name"], i["spec"]["minMember"]) for i in d["items"]] == [("multi-node-example", 5)]'
k get podgroups.scheduling.x-k8s.io cosched -n team-a -o json >"$WORK/cpg.json"
json_check "$WORK/cpg.json" 'd["spec"]["scheduleTimeoutSeconds"] == 60'
# Human-readable output: kubectl asks for a server-side Table with the CRD's printer columns.
k get trainjobs -n team-a >"$WORK/table.txt"
head -n1 "$WORK/table.txt" | grep -Eq '^NAME +STATE +AGE$' || fail "kubectl get columns: $(cat "$WORK/table.txt")"
grep -Eq '^multi-step-example +[0-9]+s$' "$WORK/table.txt" || fail "kubectl get rows: $(cat "$WORK/table.txt")"
k get podgroups.scheduling.volcano.sh -n team-a >"$WORK/table.txt"
head -n1 "$WORK/table.txt" | grep -Eq '^NAME +STATUS +MINMEMBER +RUNNINGS +AGE$' || fail "PodGroup columns: $(cat "$WORK/table.txt")"

# Server-side apply conflicts between managers surface in kubectl.
cat >"$WORK/pg-ssa.yaml" <<EOF
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: cosched
  namespace: team-a
spec:
  minMember: 3
EOF
if k apply --server-side --field-manager=other -f "$WORK/pg-ssa.yaml" 2>"$WORK/err"; then
  fail "conflicting server-side apply accepted"
fi
grep -q "conflict" "$WORK/err" || fail "no conflict reported: $(cat "$WORK/err")"
k apply --server-side --field-manager=other --force-conflicts -f "$WORK/pg-ssa.yaml" >/dev/null
k get podgroups.scheduling.x-k8s.io cosched -n team-a -o json $SHOW_MANAGED_FIELDS >"$WORK/cpg.json"
json_check "$WORK/cpg.json" 'd["spec"]["minMember"] == 3 and any(m["manager"] == "other" and m["operation"] == "Apply" for m in d["metadata"]["managedFields"])'

# Deleting the TrainJob garbage-collects its PodGroup; kubectl delete waits for it.
k delete trainjob multi-node-example -n team-a --wait=true --timeout=20s >"$WORK/out.txt"
grep -q deleted "$WORK/out.txt" || fail "delete TrainJob"
for _ in $(seq 1 100); do
  k get podgroups.scheduling.volcano.sh -n team-a -o json >"$WORK/pgs.json"
  if json_check "$WORK/pgs.json" 'd["items"] == []' 2>/dev/null; then break; fi
  sleep 0.1
done
json_check "$WORK/pgs.json" 'd["items"] == []'
if k get trainjob multi-node-example -n team-a 2>"$WORK/err"; then fail "deleted TrainJob still served"; fi
grep -q 'trainjobs.trainer.kubeflow.org "multi-node-example" not found' "$WORK/err" || fail "NotFound message: $(cat "$WORK/err")"
k delete -n team-a -f "$UP/examples/05-multi-step.yaml" --wait=true --timeout=20s >/dev/null

# Deleting a CRD removes its kind from discovery.
k delete crd podgroups.scheduling.x-k8s.io >/dev/null
if k get podgroups.scheduling.x-k8s.io -n team-a >/dev/null 2>&1; then fail "coscheduling PodGroups still served"; fi
k get trainjobs -n team-a -o json >"$WORK/tjs.json"
json_check "$WORK/tjs.json" '[i["metadata"]["name"] for i in d["items"]] == ["volcano-example"]'

echo "kubectl against the stand-in API server: all checks passed"
