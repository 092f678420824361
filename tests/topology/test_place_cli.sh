#!/usr/bin/env bash
# CLI test for `gangbridge place` over the fixtures in tests/topology/data:
# table and JSON output (JSON parsed with python3), hard/soft/tier flags,
# label levels, profiles, TrainJob input, SVG output, infeasible reasons,
# input errors (exit 1, naming file and object) and usage errors (exit 2).
set -euo pipefail
: "${GANGBRIDGE:?}" "${GB_SRC:?}"
D="$GB_SRC/tests/topology/data"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
C=(-c "$D/cluster.yaml" -c "$D/hypernodes.yaml")

# JSON field checks: json_check FILE 'python expression over j'
json_check() {
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); ok=eval(sys.argv[2]); sys.exit(0 if ok else 1)' "$1" "$2" \
    || { cat "$1" >&2; fail "json check: $2"; }
}

# 1. Table, feasible at tier 1 (the gang's own policy: hard, tier 1).
"$GANGBRIDGE" place "${C[@]}" -f "$D/gang-2x8.yaml" >"$T/out" || fail "table exit $?"
grep -q '^FEASIBLE: rack-2 (tier 1, rack): 2 pods on 2 node(s)' "$T/out" || { cat "$T/out"; fail "table header"; }
grep -Eq '^n3 +worker +1$' "$T/out" && grep -Eq '^n4 +worker +1$' "$T/out" || fail "table rows"

# 2. JSON of the same.
"$GANGBRIDGE" place "${C[@]}" -f "$D/gang-2x8.yaml" -o json >"$T/j"
json_check "$T/j" 'j["feasible"] is True and j["hyperNode"]=="rack-2" and j["tier"]==1 and j["tierName"]=="rack"'
json_check "$T/j" 'sorted((a["node"],a["podSet"],a["pods"]) for a in j["assignments"])==[("n3","worker",1),("n4","worker",1)]'
json_check "$T/j" 'j["reasons"]==[] and j["mode"]=="hard" and j["highestTier"]==1 and j["domainFree"]["nvidia.com/gpu"]=="16"'

# 3. Infeasible everywhere (soft): exit 0, per-tier reasons with limits.
"$GANGBRIDGE" place "${C[@]}" -f "$D/gang-6x8.yaml" --mode soft -o json >"$T/j" || fail "infeasible must exit 0"
json_check "$T/j" 'j["feasible"] is False and j["hyperNode"] is None and j["tier"] is None and j["assignments"]==[]'
json_check "$T/j" '"rack-2 (tier 1): fits 2 of 6 pods; nvidia.com/gpu short by 32" in j["reasons"]'
json_check "$T/j" '"spine-a (tier 2): fits 3 of 6 pods; nvidia.com/gpu short by 20" in j["reasons"]'
json_check "$T/j" 'any(r.startswith("whole cluster (tier 3): fits 4 of 6 pods") and "n6: taint gpu=broken:NoSchedule" in r for r in j["reasons"])'
"$GANGBRIDGE" place "${C[@]}" -f "$D/gang-6x8.yaml" --mode soft >"$T/out"
grep -q '^INFEASIBLE' "$T/out" && grep -q '  - rack-2 (tier 1): fits 2 of 6 pods' "$T/out" || fail "table reasons"

# 4. Tier flags: 3 pods of 8 GPUs fit spine-a (tier 2) only.
sed 's/count: 2/count: 3/; s/llm-small/llm-3/' "$D/gang-2x8.yaml" >"$T/g3.yaml"
"$GANGBRIDGE" place "${C[@]}" -f "$T/g3.yaml" -o json >"$T/j"
json_check "$T/j" 'j["feasible"] is False and any("hard mode" in r for r in j["reasons"])'
"$GANGBRIDGE" place "${C[@]}" -f "$T/g3.yaml" --highest-tier 2 -o json >"$T/j"
json_check "$T/j" 'j["hyperNode"]=="spine-a" and j["tier"]==2 and sum(a["pods"] for a in j["assignments"])==3'
"$GANGBRIDGE" place "${C[@]}" -f "$T/g3.yaml" --highest-tier-name spine -o json >"$T/j"
json_check "$T/j" 'j["hyperNode"]=="spine-a"'
"$GANGBRIDGE" place "${C[@]}" -f "$T/g3.yaml" --mode soft -o json >"$T/j"
json_check "$T/j" 'j["hyperNode"]=="spine-a" and j["reasons"][0].startswith("rack-2 (tier 1): fits 2 of 3")'

# 5. Node-label levels instead of HyperNodes.
"$GANGBRIDGE" place -c "$D/cluster.yaml" --levels block,rack -f "$D/gang-2x8.yaml" -o json >"$T/j" 2>"$T/err"
json_check "$T/j" 'j["hyperNode"]=="b1/r2" and j["tier"]==1 and j["tierName"]=="rack"'

# 6. Profiles: 2 one-GPU pods; BestFit takes the tightest rack, Spread the freest, one pod per node.
cat >"$T/g1.yaml" <<'Y'
apiVersion: gangbridge.io/v1alpha1
kind: Gang
metadata: {name: small}
spec:
  podSets:
  - {name: w, count: 2, requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: 1}}
Y
"$GANGBRIDGE" place "${C[@]}" -f "$T/g1.yaml" -o json >"$T/j"
json_check "$T/j" 'j["hyperNode"]=="rack-3" and j["assignments"]==[{"node":"n5","podSet":"w","pods":2}]'
"$GANGBRIDGE" place "${C[@]}" -f "$T/g1.yaml" --profile spread -o json >"$T/j"
json_check "$T/j" 'j["hyperNode"]=="rack-2" and [a["pods"] for a in j["assignments"]]==[1,1]'

# 7. TrainJob + runtime through gangcalc: 2 nodes x 8 GPUs.
"$GANGBRIDGE" place "${C[@]}" -f "$D/trainjob-gpu.yaml" \
  -f "$GB_SRC/tests/golden/inputs/upstream/runtimes/torch_distributed.yaml" -o json >"$T/j"
json_check "$T/j" 'j["gang"]=="team-a/gpu-job" and j["hyperNode"]=="rack-2" and j["pods"]==2'

# 8. SVG: well-formed XML naming the chosen domain, highlighted.
for g in gang-mixed gang-3x8 gang-6x8; do
"$GANGBRIDGE" place "${C[@]}" -f "$D/$g.yaml" --svg "$T/$g.svg" >/dev/null
python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/$g.svg" || fail "$g.svg is not XML"
done
cp "$T/gang-mixed.svg" "$T/t.svg"
python3 - "$T/t.svg" <<'P' || fail "svg"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
assert "rack-2" in text and "n3" in text and "+" in text, text
assert any(r.get("stroke") == "#e65100" for r in root.iter("{http://www.w3.org/2000/svg}rect"))
P

# 9. Input errors: exit 1, messages name the file and the object.
set +e
"$GANGBRIDGE" place -c "$D/cluster.yaml" -c "$D/bad/cycle.yaml" -f "$D/gang-2x8.yaml" 2>"$T/err" >/dev/null
rc=$?
set -e
[ $rc -eq 1 ] || fail "bad topology exit $rc"
grep -q 'cycle.yaml:[0-9]*:[0-9]*: HyperNode/rack-x: cycle in HyperNode members' "$T/err" || { cat "$T/err"; fail "cycle message"; }
grep -q 'HyperNode/rack-x: spec.members\[1\].selector.regexMatch.pattern: invalid regular expression' "$T/err" || fail "regex message"
set +e
"$GANGBRIDGE" place "${C[@]}" -f "$D/bad/gang.yaml" 2>"$T/err" >/dev/null; rc=$?
set -e
[ $rc -eq 1 ] || fail "bad gang exit $rc"
grep -q 'gang.yaml:[0-9]*:[0-9]*: Gang/broken: spec.podSets\[0\].count' "$T/err" || { cat "$T/err"; fail "gang message"; }
set +e
"$GANGBRIDGE" place -c "$D/bad/negative.yaml" -f "$D/gang-2x8.yaml" 2>"$T/err" >/dev/null; rc=$?
set -e
[ $rc -eq 1 ] || fail "negative allocatable exit $rc"
grep -q 'negative.yaml:[0-9]*:[0-9]*: Node/neg: status.allocatable.cpu: must be greater than or equal to 0$' "$T/err" || { cat "$T/err"; fail "negative allocatable message"; }
grep -q 'negative.yaml:[0-9]*:[0-9]*: Node/neg: status.allocatable.memory: not a valid quantity$' "$T/err" || { cat "$T/err"; fail "bad allocatable message"; }
for args in "-f $D/nope.yaml" "-f $D/gang-2x8.yaml --highest-tier-name nope"; do
  set +e
  "$GANGBRIDGE" place "${C[@]}" $args >/dev/null 2>"$T/err"; rc=$?
  set -e
  [ $rc -eq 1 ] || fail "'$args' exit $rc"
  [ -s "$T/err" ] || fail "'$args' no message"
done
grep -q 'highestTierName "nope"' "$T/err" || fail "tier name message"

# 10. Usage errors: exit 2.
for args in "" "--mode firm -c x -f y" "-c x -f y --highest-tier 1 --highest-tier-name r" \
            "-c x" "-c x -f y --profile dense" "-c x -f y -o yaml" "-c x -f y --levels ,"; do
  set +e
  "$GANGBRIDGE" place $args >/dev/null 2>&1; rc=$?
  set -e
  [ $rc -eq 2 ] || fail "usage '$args' exit $rc"
done
"$GANGBRIDGE" place --help | grep -q -- '--highest-tier-name' || fail "help"
echo "place CLI: ok"
