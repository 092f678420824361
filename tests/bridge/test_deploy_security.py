#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Reads deploy/ (and the code's defaults) and fails when gangbridge's surfaces are open to
tenants (issue 19):

1. a NetworkPolicy port other than the webhook's (the API server is not a pod) is open to a
   pod label alone: every peer must carry a namespaceSelector AND a podSelector, each
   non-empty, in one `from` element (a tenant can label its own pods, not create pods in
   another namespace);
2. /debug/placement is served on the probes address by default: its default address
   (the key tables, as `gangbridge serve --print-keys` lists them), and the ConfigMap's, must
   be loopback or empty, and the
   probes' routes in bridge/cli/gb_serve.c must not carry it;
3. the RBAC header and the rules disagree: every resource the rules let gangbridge write must
   be named in the header with its verb, no "cannot" sentence may deny a write the rules grant,
   and the pod and TrainJob patches must be narrowed by the ValidatingAdmissionPolicy bound
   to the same service account; the namespaced mode's RBAC (deploy/namespaced/rbac.yaml) must
   grant exactly the same rights, split into cluster-wide reads (no write) and a ClusterRole
   bound per watched namespace, covering the controller's namespaced and cluster-scoped
   informers;
4. docs/operating.md's security table names every port and every path served.
"""
import glob
import os
import re
import subprocess
import sys

import yaml

SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(SRC, "deploy")
errors = []


def err(msg):
    errors.append(msg)


def docs():
    out = []
    for path in sorted(glob.glob(os.path.join(DEPLOY, "*.yaml"))):
        if os.path.basename(path) == "kustomization.yaml":
            continue
        for d in yaml.safe_load_all(open(path)):
            if d:
                out.append((os.path.basename(path), d))
    return out


ALL = docs()


def kind(k):
    return [d for _, d in ALL if d.get("kind") == k]


def read(rel):
    return open(os.path.join(SRC, rel)).read()


# ---- 1. NetworkPolicy: no port open to a label alone ------------------------------------
def selector_nonempty(sel):
    return bool(sel) and bool(sel.get("matchLabels") or sel.get("matchExpressions"))


nps = kind("NetworkPolicy")
if not nps:
    err("deploy/ has no NetworkPolicy")
covered = set()
for np_ in nps:
    for i, rule in enumerate(np_.get("spec", {}).get("ingress", [])):
        ports = [p.get("port") for p in rule.get("ports", [])] or ["(every port)"]
        covered.update(ports)
        peers = rule.get("from")
        if not peers:
            for p in ports:
                if p not in ("webhook", 9443):
                    err("NetworkPolicy rule %d: port %r is open to every source" % (i, p))
            continue
        for j, peer in enumerate(peers):
            if "ipBlock" in peer:
                continue
            if not (selector_nonempty(peer.get("namespaceSelector"))
                    and selector_nonempty(peer.get("podSelector"))):
                err("NetworkPolicy rule %d peer %d: ports %r are open to %s alone, not a "
                    "namespace AND a pod label" % (i, j, ports, sorted(peer)))
for p in ("grpc", "sched", "http"):
    if p not in covered:
        err("NetworkPolicy: the %s port has no rule (a pod selected by the policy would refuse "
            "it, say so on purpose)" % p)

# ---- 2. /debug/placement is not on the probes address -----------------------------------
BIN = os.environ.get("GANGBRIDGE") or os.path.join(SRC, "build", "gangbridge")
key_defaults = {}
for line in subprocess.run([BIN, "serve", "--print-keys"], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    cols = line.split("\t")
    key_defaults[cols[0]] = cols[2]
if "placement.debugAddress" not in key_defaults or "http.address" not in key_defaults:
    err("serve --print-keys: no placement.debugAddress or http.address key")
else:
    dflt = key_defaults["placement.debugAddress"]
    if dflt and not (dflt.startswith("127.") or dflt.startswith("[::1]")):
        err("placement.debugAddress defaults to %r: not loopback" % dflt)
    if dflt == key_defaults["http.address"]:
        err("placement.debugAddress defaults to the probes address %r" % dflt)
cm = [d for d in kind("ConfigMap") if d["metadata"]["name"] == "gangbridge-config"]
cfg = yaml.safe_load(cm[0]["data"]["config.yaml"]) if cm else {}
dbg = (cfg.get("placement") or {}).get("debugAddress")
http_addr = (cfg.get("http") or {}).get("address")
if dbg is not None and dbg and not (str(dbg).startswith("127.") or str(dbg).startswith("[::1]")):
    err("config.yaml placement.debugAddress %r is not loopback" % dbg)
if dbg and dbg == http_addr:
    err("config.yaml serves /debug/placement on the probes address %r" % dbg)
serve_c = read("bridge/cli/gb_serve.c")
probes_block = serve_c[serve_c.find("gb_health_routes(r->health"):serve_c.find("start_http(&probes")]
if not probes_block or "gb_placer_route" in probes_block:
    err("bridge/cli/gb_serve.c: the probes' routes carry /debug/placement")
if "placement.debug_address" not in serve_c:
    err("bridge/cli/gb_serve.c: /debug/placement is not on placement.debugAddress")

# ---- 3. RBAC header and rules agree ------------------------------------------------------
WRITES = {"create", "update", "patch", "delete"}


def rules_of(roles):
    out = {}
    for cr in roles:
        for r in cr.get("rules", []):
            for g in r.get("apiGroups", []):
                for res in r.get("resources", []):
                    out.setdefault((g, res), set()).update(r.get("verbs", []))
    return out


def check_header(rel, roles):
    """The file's leading comment names every write the roles grant on a tenant's objects, and
    no "cannot" sentence denies one."""
    text = read(rel)
    header = " ".join(l.lstrip("# ").strip() for l in text.splitlines()
                      if l.startswith("#")).lower()
    header = header.split("apiversion")[0]
    granted = {}
    for (g, res), verbs in rules_of(roles).items():
        granted.setdefault(res, set()).update(verbs & WRITES)
    sentences = re.split(r"(?<=[.;:])\s+", header)
    for res, verbs in sorted(granted.items()):
        if not verbs or "/" in res or res in ("podgroups", "events", "leases"):
            continue
        for v in verbs:
            if not re.search(r"\b%s\w*\b[^.]*\b%s\b" % (v, res), header):
                err("%s header does not say that gangbridge may %s %s" % (rel, v, res))
        for s in sentences:
            if ("cannot" in s or "nothing here lets" in s) and re.search(r"\b%s\b" % res, s):
                denied = set(re.findall(r"\b(write|create|update|patch|delete)\b", s))
                if "write" in denied:
                    denied |= WRITES
                if denied & verbs:
                    err("%s header denies %s on %s, which the rules grant: %r" %
                        (rel, sorted(denied & verbs), res, s))
    return granted


granted = check_header("deploy/rbac.yaml", kind("ClusterRole") + kind("Role"))

# The namespaced mode (kube.watchNamespaces): the same rights, split into cluster-wide reads and
# a ClusterRole bound per watched namespace; no write outside those namespaces.
ns_docs = [d for d in yaml.safe_load_all(open(os.path.join(DEPLOY, "namespaced", "rbac.yaml")))
           if d]
ns_roles = {d["metadata"]["name"]: d for d in ns_docs if d["kind"] == "ClusterRole"}
reads, per_ns = ns_roles.get("gangbridge-cluster-reads"), ns_roles.get("gangbridge-namespace")
if not reads or not per_ns:
    err("deploy/namespaced/rbac.yaml needs ClusterRoles gangbridge-cluster-reads and "
        "gangbridge-namespace")
else:
    base = rules_of([d for d in kind("ClusterRole") if d["metadata"]["name"] == "gangbridge"])
    split = rules_of([reads, per_ns])
    if base != split:
        for k in sorted(set(base) | set(split)):
            if base.get(k) != split.get(k):
                err("namespaced RBAC grants %s on %s/%s, deploy/rbac.yaml %s" %
                    (sorted(split.get(k, [])), k[0] or "core", k[1], sorted(base.get(k, []))))
    for k, verbs in rules_of([reads]).items():
        if verbs & WRITES:
            err("gangbridge-cluster-reads grants %s on %s cluster-wide" % (sorted(verbs & WRITES), k))
    # The controller's namespaced informers are what the per-namespace role must cover, and
    # its cluster-scoped ones what the cluster reads cover.
    ctrl = read("bridge/controller/gb_controller.c")
    for grp, res, nsd in re.findall(
            r'\{(GC_TRAINER_GROUP|"[^"]*"),\s*"v[0-9a-z]+",\s*"([a-z]+)",[^{}]*?,\s*([01]),\s*[01]\}',
            ctrl):
        g = "trainer.kubeflow.org" if grp == "GC_TRAINER_GROUP" else grp.strip('"')
        role = per_ns if nsd == "1" else reads
        if not {"get", "list", "watch"} <= rules_of([role]).get((g, res), set()):
            err("%s/%s is watched %s but %s does not let gangbridge read it" %
                (g or "core", res, "per namespace" if nsd == "1" else "cluster-wide",
                 role["metadata"]["name"]))
    bindings = [d for d in ns_docs if d["kind"] == "RoleBinding"]
    if not bindings:
        err("deploy/namespaced/rbac.yaml binds gangbridge-namespace in no namespace")
    seen_ns = set()
    for b in bindings:
        if b.get("roleRef", {}).get("name") != "gangbridge-namespace" or \
                b.get("subjects") != [{"kind": "ServiceAccount", "name": "gangbridge",
                                       "namespace": "gangbridge-system"}]:
            err("RoleBinding %s/%s must bind gangbridge-namespace to the service account" %
                (b["metadata"].get("namespace"), b["metadata"]["name"]))
        seen_ns.add(b["metadata"].get("namespace"))
    if len(seen_ns) != len(bindings):
        err("deploy/namespaced/rbac.yaml binds a namespace twice")
    check_header("deploy/namespaced/rbac.yaml", [reads, per_ns])
# The pod and TrainJob patches are narrowed by the admission policy, bound to that account.
sa = "system:serviceaccount:gangbridge-system:gangbridge"
vaps = kind("ValidatingAdmissionPolicy")
bindings = kind("ValidatingAdmissionPolicyBinding")
if "patch" in granted.get("pods", set()) | granted.get("trainjobs", set()):
    if len(vaps) != 1 or len(bindings) != 1:
        err("pods/trainjobs patch is granted but deploy/ has no ValidatingAdmissionPolicy + binding")
    else:
        v, b = vaps[0], bindings[0]
        spec = v["spec"]
        if spec.get("failurePolicy") != "Fail":
            err("ValidatingAdmissionPolicy: failurePolicy must be Fail")
        rules = spec.get("matchConstraints", {}).get("resourceRules", [])
        for res, group in (("pods", ""), ("trainjobs", "trainer.kubeflow.org")):
            if res in granted and "patch" in granted[res] and not any(
                    res in r.get("resources", []) and group in r.get("apiGroups", [])
                    and "UPDATE" in r.get("operations", []) for r in rules):
                err("ValidatingAdmissionPolicy does not match UPDATE of %s" % res)
        conds = [c.get("expression", "") for c in spec.get("matchConditions", [])]
        if not any(sa in c for c in conds):
            err("ValidatingAdmissionPolicy is not limited to %s" % sa)
        if b["spec"].get("policyName") != v["metadata"]["name"] or \
                b["spec"].get("validationActions") != ["Deny"]:
            err("ValidatingAdmissionPolicyBinding must bind the policy with [Deny]")
        text = " ".join(x.get("expression", "") for x in spec.get("validations", []))
        for must in ("gangbridge.io/placement", "gangbridge.io/leader", "gangbridge.io/requeue",
                     "object.spec.containers == oldObject.spec.containers",
                     "authentication.kubernetes.io/pod-name"):
            if must not in text and must not in " ".join(
                    x.get("expression", "") for x in spec.get("variables", [])):
                err("ValidatingAdmissionPolicy never checks %r" % must)
for crb in kind("ClusterRoleBinding"):
    for s in crb.get("subjects", []):
        if "system:serviceaccount:%s:%s" % (s.get("namespace"), s.get("name")) != sa:
            err("ClusterRoleBinding subject %r is not the account the policy names" % s)

# ---- 4. the security table names every port and path ------------------------------------
ops = read("docs/operating.md")
sec = ops[ops.find("### Security posture of each port"):]
sec = sec[:sec.find("\n### ", 5)]
sched_h = read("bridge/sched/gb_sched.h")
paths = ["/healthz", "/livez", "/readyz", "/metrics", "/debug/placement", "/mutate-pods",
         "/volcano/", "/kube/"]
for p in paths:
    if p not in sec:
        err("docs/operating.md security table does not name %s" % p)
for key in ("http.address", "webhook.address", "grpc.address", "sched.address",
            "placement.debugAddress"):
    if key not in sec:
        err("docs/operating.md security table has no row for %s" % key)
for verb in re.findall(r'#define GB_SCHED_VERB_\w+ "(\w+)"', sched_h):
    if verb not in sec:
        err("docs/operating.md security table does not name the %s verb" % verb)

if errors:
    print("\n".join("FAIL: " + e for e in errors))
    sys.exit(1)
print("deploy security: network policy, debug address, RBAC header and admission policy, "
      "security table: 4 passed, 0 failed")
