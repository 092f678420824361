#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates deploy/: every manifest loads with python3-yaml and has the right kind, apiVersion
# and required fields; the Deployment, Services, webhook, certificate, PDB and ConfigMap agree
# with each other and with the code (ports, webhook path, config keys from the layers' tables
# as `gangbridge serve --print-keys` lists them,
# the gRPC grace period); RBAC grants exactly the resource/verb list below, which is
# cross-checked against the Kubernetes client call sites with grep; the ConfigMap's config.yaml
# passes `gangbridge serve --config F --print-config` (the service's own validation); the
# example renders a PodGroup and matches the Trainer CRD schemas; and the real kubectl applies
# everything (`kubectl apply --validate=false -k deploy/`, then the examples) to the stand-in
# API server.  The stand-in serves only core kinds, so the test first registers permissive
# CRDs for the other API groups (apps, rbac, policy, admissionregistration, cert-manager): that
# proves kubectl parses, maps and sends every object, and the server stores it; field-level
# validation of those kinds is the Python part's job.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
SHARED="${GB_SHARED:-$SRC/../shared}"
GANGBRIDGE="${GANGBRIDGE:-$SRC/build/gangbridge}"
KUBECTL="${GB_KUBECTL:-${KUBECTL:-/usr/bin/kubectl}}"
DEPLOY="$SRC/deploy"

# shellcheck source=../common/apiserver.sh
source "$SRC/tests/common/apiserver.sh"

WORK="$(mktemp -d)"
trap 'apiserver_stop; rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -x "$GANGBRIDGE" ] || fail "gangbridge binary not found at $GANGBRIDGE"

# ---- 1. static checks (python3-yaml) ----------------------------------------------------
"$GANGBRIDGE" serve --print-keys >"$WORK/keys.tsv" || fail "gangbridge serve --print-keys failed"
python3 - "$SRC" "$WORK" <<'PY'
import glob, os, re, sys
import yaml

src, work = sys.argv[1], sys.argv[2]
deploy = os.path.join(src, "deploy")
errors = []
def err(msg):
    errors.append(msg)

# The RBAC the code needs: (apiGroup, resource) -> verbs.  Keep this list explicit; it is
# compared with the manifests (exactly) and with the code's call sites (below).
REQUIRED = {
    ("trainer.kubeflow.org", "trainjobs"): {"get", "list", "watch", "patch"},
    ("trainer.kubeflow.org", "trainingruntimes"): {"get", "list", "watch"},
    ("trainer.kubeflow.org", "clustertrainingruntimes"): {"get", "list", "watch"},
    ("trainer.kubeflow.org", "trainjobs/finalizers"): {"update"},
    ("scheduling.volcano.sh", "podgroups"): {"get", "list", "watch", "create", "patch", "delete"},
    ("scheduling.x-k8s.io", "podgroups"): {"get", "list", "watch", "create", "patch", "delete"},
    ("scheduling.run.ai", "podgroups"): {"get", "list", "watch", "create", "patch", "delete"},
    ("scheduling.k8s.io", "workloads"): {"get", "list", "watch", "create", "patch", "delete"},
    # The Workload API's PodGroup (a backend's other object, more_kind): read, created once
    # and deleted, never changed.
    ("scheduling.k8s.io", "podgroups"): {"get", "create", "delete"},
    ("scheduling.volcano.sh", "queues"): {"get", "list", "watch"},
    ("", "namespaces"): {"get", "list", "watch"},
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
    ("", "pods"): {"get", "list", "watch", "patch"},
    ("", "events"): {"create", "patch", "get"},
    # The live cluster model (bridge/model) and the placement release (bridge/placement).
    ("", "nodes"): {"get", "list", "watch"},
    ("topology.volcano.sh", "hypernodes"): {"get", "list", "watch"},
    # The timeout tracker's check that Kueue really manages a TrainJob (bridge/timeouts).
    ("kueue.x-k8s.io", "workloads"): {"list"},
}
# Leader election, namespaced in gangbridge-system: the Lease, and the leader's label on its
# own pod (bridge/kube/gb_selflabel.c).
REQUIRED_NS = {("coordination.k8s.io", "leases"): {"get", "create", "update"},
               ("", "pods"): {"get", "patch"}}
# Granted although no call site shows them literally, and why.
JUSTIFIED = {
    ("scheduling.volcano.sh", "podgroups", "create"): "server-side apply creates missing objects",
    ("scheduling.x-k8s.io", "podgroups", "create"): "server-side apply creates missing objects",
    ("scheduling.run.ai", "podgroups", "create"): "server-side apply creates missing objects",
    ("scheduling.k8s.io", "workloads", "create"): "server-side apply creates missing objects",
}

# --- load ---
docs = []  # (file, doc)
for path in sorted(glob.glob(os.path.join(deploy, "**", "*.yaml"), recursive=True)):
    # namespaced/ holds the namespaced mode's RBAC, used instead of rbac.yaml
    # (tests/bridge/test_deploy_security.py checks it against this file's list).
    if os.path.basename(path) == "kustomization.yaml" or os.path.relpath(path, deploy).startswith("namespaced/"):
        continue
    with open(path) as f:
        try:
            for d in yaml.safe_load_all(f):
                if d is None:
                    continue
                docs.append((os.path.relpath(path, deploy), d))
        except yaml.YAMLError as e:
            err("%s: %s" % (path, e))
if errors:
    print("\n".join(errors)); sys.exit(1)

API = {
    "Namespace": "v1", "ServiceAccount": "v1", "ConfigMap": "v1", "Service": "v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
    "Deployment": "apps/v1", "PodDisruptionBudget": "policy/v1",
    "MutatingWebhookConfiguration": "admissionregistration.k8s.io/v1",
    "Issuer": "cert-manager.io/v1", "Certificate": "cert-manager.io/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "ValidatingAdmissionPolicy": "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io/v1",
    "ClusterTrainingRuntime": "trainer.kubeflow.org/v1alpha1", "TrainJob": "trainer.kubeflow.org/v1alpha1",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                  "ClusterTrainingRuntime", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
NS = "gangbridge-system"
by_kind = {}
for f, d in docs:
    if not isinstance(d, dict):
        err("%s: document is not a mapping" % f); continue
    kind, av = d.get("kind"), d.get("apiVersion")
    md = d.get("metadata") or {}
    name = md.get("name")
    if kind not in API:
        err("%s: unexpected kind %r" % (f, kind)); continue
    if av != API[kind]:
        err("%s: %s %s: apiVersion %r, want %r" % (f, kind, name, av, API[kind]))
    if not name or not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name):
        err("%s: %s: bad or missing metadata.name %r" % (f, kind, name))
    is_example = f.startswith("examples/")
    if kind in CLUSTER_SCOPED:
        if "namespace" in md:
            err("%s: %s/%s is cluster-scoped but has a namespace" % (f, kind, name))
    elif not is_example and md.get("namespace") != NS:
        err("%s: %s/%s: namespace %r, want %s" % (f, kind, name, md.get("namespace"), NS))
    if not is_example:
        labels = md.get("labels") or {}
        if labels.get("app.kubernetes.io/name") != "gangbridge":
            err("%s: %s/%s lacks label app.kubernetes.io/name=gangbridge" % (f, kind, name))
    by_kind.setdefault(kind, []).append((f, d))

def one(kind, name=None):
    items = [d for _, d in by_kind.get(kind, []) if name is None or d["metadata"]["name"] == name]
    if len(items) != 1:
        err("want exactly one %s%s, found %d" % (kind, " " + name if name else "", len(items)))
        return {}
    return items[0]

for kind in ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
             "RoleBinding", "Deployment", "Service", "PodDisruptionBudget",
             "MutatingWebhookConfiguration", "Issuer", "Certificate", "ConfigMap"]:
    if not any(not f.startswith("examples/") for f, _ in by_kind.get(kind, [])):
        err("deploy/ has no %s" % kind)

# --- kustomization lists every top-level manifest ---
kust = yaml.safe_load(open(os.path.join(deploy, "kustomization.yaml")))
if kust.get("kind") != "Kustomization" or kust.get("apiVersion") != "kustomize.config.k8s.io/v1beta1":
    err("kustomization.yaml: wrong kind/apiVersion")
top = sorted(os.path.basename(p) for p in glob.glob(os.path.join(deploy, "*.yaml"))
             if os.path.basename(p) != "kustomization.yaml")
if sorted(kust.get("resources", [])) != top:
    err("kustomization.yaml resources %s != files %s" % (sorted(kust.get("resources", [])), top))

ns = one("Namespace", NS)

# --- code facts ---
def read(rel):
    return open(os.path.join(src, rel)).read()
# The scheduler backends, from their descriptors (gangcalc/gc_backend_<name>.c): name, default
# scheduler name, the group object's API group and resource, and the Queue resource if any.
backends = []
for path in sorted(glob.glob(os.path.join(src, "gangcalc", "gc_backend_*.c"))):
    t = read(os.path.relpath(path, src))
    def field(name, text=t):
        m = re.search(r'\.' + name + r'\s*=\s*"([^"]*)"', text)
        return m.group(1) if m else None
    q = re.search(r'\.queue\s*=\s*\{(.*?)\}', t, re.S)
    more = re.search(r'\.more_kind\s*=\s*\{\s*"[^"]*",\s*"([^"]*)"\s*\}', t)
    backends.append({"name": field("name"), "scheduler": field("scheduler_name"),
                     "group": field("group"), "resource": field("resource"),
                     "queues": field("resource", q.group(1)) if q else None,
                     "more": more.group(1) if more else None})
if len(backends) < 2 or not all(b["name"] and b["group"] and b["resource"] for b in backends):
    err("could not read the backend descriptors gangcalc/gc_backend_*.c: %r" % backends)
keys = {}  # path -> (type, default), from the layers' tables
for line in open(os.path.join(work, "keys.tsv")):
    path, typ, default = line.rstrip("\n").split("\t")[:3]
    keys[path] = (typ, default)
if len(keys) < 30:
    err("could not read the key tables from gangbridge serve --print-keys (%d keys)" % len(keys))
grace_ms = int(re.search(r"#define GB_RPC_DEFAULT_GRACE_MS (\d+)", read("bridge/rpc/gb_rpc_server.h")).group(1))
http_grace_ms = int(re.search(r"grace_ms;\s*/\*.*default (\d+)", read("bridge/http/gb_http.h")).group(1))

# --- ConfigMap / config.yaml ---
cm = one("ConfigMap", "gangbridge-config")
cfg_text = (cm.get("data") or {}).get("config.yaml")
cfg = {}
if not cfg_text:
    err("ConfigMap gangbridge-config has no data.config.yaml")
else:
    open(os.path.join(work, "config.yaml"), "w").write(cfg_text)
    cfg = yaml.safe_load(cfg_text)
    def flat(d, prefix=""):
        for k, v in d.items():
            p = prefix + k
            if isinstance(v, dict):
                yield from flat(v, p + ".")
            else:
                yield p, v
    for k, v in flat(cfg):
        if k not in keys:
            err("config.yaml: key %s is not a gangbridge setting (gangbridge serve --print-keys)" % k)
def cget(path):
    if path not in keys:
        err("config key %s vanished from the key tables (gangbridge serve --print-keys)" % path)
        return None
    d = cfg
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return keys[path][1]  # the default
        d = d[part]
    return d
def port_of(addr):
    return int(str(addr).rsplit(":", 1)[1])

# --- Deployment ---
dep = one("Deployment", "gangbridge")
spec = dep.get("spec", {})
pod = spec.get("template", {}).get("spec", {})
pod_labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
sel = spec.get("selector", {}).get("matchLabels", {})
if spec.get("replicas") != 2:
    err("Deployment: replicas %r, want 2" % spec.get("replicas"))
if not sel or any(pod_labels.get(k) != v for k, v in sel.items()):
    err("Deployment: selector does not match the pod labels")
if pod.get("serviceAccountName") != "gangbridge":
    err("Deployment: serviceAccountName")
psc = pod.get("securityContext", {})
if psc.get("runAsNonRoot") is not True or psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
    err("Deployment: pod securityContext needs runAsNonRoot and seccomp RuntimeDefault")
if not isinstance(psc.get("runAsUser"), int) or psc["runAsUser"] == 0:
    err("Deployment: runAsUser must be a non-zero uid")
tgp = pod.get("terminationGracePeriodSeconds", 30)
if not tgp > (grace_ms + http_grace_ms) / 1000.0 + 5:
    err("Deployment: terminationGracePeriodSeconds %s not above the gRPC (%d ms) + HTTP (%d ms) "
        "grace plus the lease release" % (tgp, grace_ms, http_grace_ms))
ctrs = pod.get("containers", [])
if len(ctrs) != 1:
    err("Deployment: want one container")
c = ctrs[0] if ctrs else {}
argv = (c.get("command") or []) + (c.get("args") or [])
if not argv or not argv[0].endswith("gangbridge") or argv[1:] != ["serve", "--config", "/etc/gangbridge/config.yaml"]:
    err("Deployment: command %r, want gangbridge serve --config /etc/gangbridge/config.yaml" % argv)
ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
want_ports = {"grpc": 9090, "http": 8080, "webhook": 9443, "sched": 9444}
if ports != want_ports:
    err("Deployment: ports %r, want %r" % (ports, want_ports))
if cfg:
    for name, key in (("grpc", "grpc.address"), ("http", "http.address"), ("webhook", "webhook.address"),
                      ("sched", "sched.address")):
        v = cget(key)
        if not v or port_of(v) != want_ports[name]:
            err("config.yaml %s %r does not listen on the %s port %d" % (key, v, name, want_ports[name]))
for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
    hg = c.get(probe, {}).get("httpGet", {})
    if hg.get("path") != path or hg.get("port") not in ("http", 8080):
        err("Deployment: %s must GET %s on the http port, has %r" % (probe, path, hg))
csc = c.get("securityContext", {})
if not (csc.get("readOnlyRootFilesystem") is True and csc.get("allowPrivilegeEscalation") is False
        and csc.get("capabilities", {}).get("drop") == ["ALL"] and not csc.get("capabilities", {}).get("add")
        and csc.get("privileged") in (None, False)):
    err("Deployment: container securityContext must be read-only root, no escalation, drop ALL")
res = c.get("resources", {})
if not res.get("requests", {}).get("cpu") or not res.get("requests", {}).get("memory") or not res.get("limits", {}).get("memory"):
    err("Deployment: resources need cpu/memory requests and a memory limit")
env = {e.get("name"): e for e in c.get("env", [])}
for name, field in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")):
    if env.get(name, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != field:
        err("Deployment: env %s must come from the downward API %s" % (name, field))
vols = {v.get("name"): v for v in pod.get("volumes", [])}
mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}
cm_mount = mounts.get("/etc/gangbridge/config.yaml")
if not cm_mount or vols.get(cm_mount["name"], {}).get("configMap", {}).get("name") != "gangbridge-config":
    err("Deployment: /etc/gangbridge/config.yaml must come from ConfigMap gangbridge-config")
if cfg:
    for key in ("webhook.tlsCert", "webhook.tlsKey"):
        p = cget(key)
        d_ = os.path.dirname(p or "")
        m = mounts.get(d_)
        if not m or "secret" not in vols.get(m["name"], {}):
            err("config.yaml %s=%r is not in a mounted Secret" % (key, p))
        else:
            tls_secret = vols[m["name"]]["secret"]["secretName"]
if "/tmp" not in mounts:
    err("Deployment: a writable /tmp (emptyDir) is expected with a read-only root")

# --- Services ---
svcs = {d["metadata"]["name"]: d for _, d in by_kind.get("Service", [])}
# The leader labels its own pod (bridge/kube/gb_selflabel.h); only the leader-only Service of
# the scheduler endpoints may select it, and it must.
leader_key = re.search(r'#define GB_LEADER_LABEL "([^"]+)"', read("bridge/kube/gb_selflabel.h")).group(1)
leader_val = re.search(r'#define GB_LEADER_LABEL_VALUE "([^"]+)"', read("bridge/kube/gb_selflabel.h")).group(1)
for name, s in svcs.items():
    ssel = dict(s.get("spec", {}).get("selector", {}))
    sched_only = [p for p in s.get("spec", {}).get("ports", [])] and all(
        p.get("targetPort") == "sched" for p in s.get("spec", {}).get("ports", []))
    if sched_only != (ssel.get(leader_key) == leader_val):
        err("Service %s: the sched port must be served by a Service selecting %s=%s, and only it"
            % (name, leader_key, leader_val))
    ssel.pop(leader_key, None)
    if not ssel or any(pod_labels.get(k) != v for k, v in ssel.items()):
        err("Service %s: selector does not select the pods" % name)
    for p in s.get("spec", {}).get("ports", []):
        if p.get("targetPort") not in ports and p.get("targetPort") not in ports.values():
            err("Service %s: targetPort %r is not a container port" % (name, p.get("targetPort")))
svc_ports = {(n, p.get("targetPort")) for n, s in svcs.items() for p in s.get("spec", {}).get("ports", [])}
for pname in ("grpc", "http", "webhook", "sched"):
    if not any(tp == pname for _, tp in svc_ports):
        err("no Service exposes the %s port" % pname)

# --- webhook ---
mwc = one("MutatingWebhookConfiguration")
hooks = mwc.get("webhooks", [])
if len(hooks) != 1:
    err("MutatingWebhookConfiguration: want one webhook")
h = hooks[0] if hooks else {}
cc = h.get("clientConfig", {}).get("service", {})
ws = svcs.get(cc.get("name"))
if not ws or cc.get("namespace") != NS:
    err("webhook: clientConfig.service %r is not a Service in %s" % (cc, NS))
elif not any(p.get("port") == cc.get("port", 443) and p.get("targetPort") == "webhook"
             for p in ws["spec"]["ports"]):
    err("webhook: Service %s has no port %s to the webhook port" % (cc.get("name"), cc.get("port", 443)))
if cfg and cc.get("path") != cget("webhook.path"):
    err("webhook: path %r != config webhook.path %r" % (cc.get("path"), cget("webhook.path")))
if keys.get("webhook.path", (None, None))[1] != "/mutate-pods" or cc.get("path") != "/mutate-pods":
    err("webhook: path must be the served /mutate-pods (docs/internals/http.md)")
if h.get("admissionReviewVersions") != ["v1"] or h.get("sideEffects") != "None" or h.get("timeoutSeconds") != 5:
    err("webhook: admissionReviewVersions [v1], sideEffects None, timeoutSeconds 5 required")
if h.get("failurePolicy") not in ("Fail", "Ignore"):
    err("webhook: failurePolicy must be set")
whtext = open(os.path.join(deploy, "webhook.yaml")).read()
if not re.search(r"#.*failurePolicy: %s" % h.get("failurePolicy"), whtext):
    err("webhook.yaml: the failurePolicy choice must be explained in a comment")
rules = h.get("rules", [])
if rules != [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Namespaced"}]:
    err("webhook: rules must be exactly CREATE of core v1 pods: %r" % rules)
os_ = h.get("objectSelector", {}).get("matchExpressions", [])
if {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"} not in os_:
    err("webhook: objectSelector must require jobset.sigs.k8s.io/jobset-name (Exists)")
nsx = h.get("namespaceSelector", {}).get("matchExpressions", [])
if not any(e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "NotIn"
           and {"kube-system", NS} <= set(e.get("values", [])) for e in nsx):
    err("webhook: namespaceSelector must exclude kube-system and %s" % NS)
inject = mwc.get("metadata", {}).get("annotations", {}).get("cert-manager.io/inject-ca-from", "")
cert = one("Certificate", inject.split("/")[-1]) if "/" in inject else {}
if not inject.startswith(NS + "/") or not cert:
    err("webhook: cert-manager.io/inject-ca-from %r names no Certificate" % inject)
if "caBundle" in h.get("clientConfig", {}):
    err("webhook: caBundle is injected by cert-manager, not committed")
if not re.search(r"(?i)without cert-manager.*\n.*caBundle", whtext):
    err("webhook.yaml: a note for manual certificates is expected")

# --- certificate ---
if cert:
    cs = cert.get("spec", {})
    if cs.get("secretName") != locals().get("tls_secret"):
        err("Certificate secretName %r is not the Secret the Deployment mounts" % cs.get("secretName"))
    want_dns = "%s.%s.svc" % (cc.get("name"), NS)
    if want_dns not in cs.get("dnsNames", []):
        err("Certificate dnsNames must include %s" % want_dns)
    ir = cs.get("issuerRef", {})
    if ir.get("kind", "Issuer") != "Issuer" or not one("Issuer", ir.get("name")):
        err("Certificate issuerRef %r is not the Issuer in deploy/" % ir)

# --- gRPC: mutual TLS, snapshot writes off, a NetworkPolicy, memory budget within the limit ---
if cfg:
    grpc_secret = None
    for key in ("grpc.tlsCert", "grpc.tlsKey", "grpc.clientCA"):
        p = cget(key)
        m = mounts.get(os.path.dirname(p or ""))
        if not p or not m or "secret" not in vols.get(m["name"], {}):
            err("config.yaml %s=%r is not in a mounted Secret" % (key, p))
        else:
            grpc_secret = vols[m["name"]]["secret"]["secretName"]
    gcert = [d for _, d in by_kind.get("Certificate", [])
             if d.get("spec", {}).get("secretName") == grpc_secret]
    if not gcert:
        err("no Certificate writes the gRPC Secret %r" % grpc_secret)
    elif "server auth" not in gcert[0]["spec"].get("usages", []):
        err("gRPC Certificate: usages must include server auth")
    if cget("grpc.allowSnapshotWrites") not in (False, None):
        err("config.yaml grpc.allowSnapshotWrites must stay false in a cluster")
    def mib(q):
        units = {"Mi": 1, "Gi": 1024}
        return int(q[:-2]) * units[q[-2:]] if q and q[-2:] in units else None
    limit = mib(str(res.get("limits", {}).get("memory")))
    budget = cget("grpc.memoryBudget") or 640
    if limit is None or budget + 256 > limit:
        err("grpc.memoryBudget %r MiB + 256 MiB for the rest exceeds the memory limit %r" %
            (budget, res.get("limits", {}).get("memory")))
np_ = one("NetworkPolicy")
nsel = np_.get("spec", {}).get("podSelector", {}).get("matchLabels", {})
if not nsel or any(pod_labels.get(k) != v for k, v in nsel.items()):
    err("NetworkPolicy: podSelector does not select the pods")
for rule in np_.get("spec", {}).get("ingress", []):
    if any(p.get("port") in ("grpc", 9090) for p in rule.get("ports", [])) and not rule.get("from"):
        err("NetworkPolicy: the gRPC port must be admitted only from selected peers")

# --- the scheduler side's configuration (deploy/scheduler/) --------------------------------
# The Volcano plugin arguments and the KubeSchedulerConfiguration must name the Service's sched
# port, the endpoints' prefixes and only verbs the endpoints serve (bridge/sched/gb_sched.h).
sched_h = read("bridge/sched/gb_sched.h")
verbs = set(re.findall(r'#define GB_SCHED_VERB_\w+ "(\w+)"', sched_h))
sched_svc = [(n, p) for n, s in svcs.items() for p in s.get("spec", {}).get("ports", [])
             if p.get("targetPort") == "sched"]
sched_name, sched_port = (sched_svc[0][0], sched_svc[0][1].get("port")) if sched_svc else (None, None)
def check_url(where, url, prefix):
    want = "http://%s.%s.svc:%s%s" % (sched_name, NS, sched_port, prefix)
    if url != want:
        err("%s: urlPrefix %r, want %r" % (where, url, want))
try:
    vc = yaml.safe_load(open(os.path.join(deploy, "scheduler", "volcano-scheduler.conf")))
    ext = [p for t in vc.get("tiers", []) for p in t.get("plugins", []) if p.get("name") == "extender"]
    args = ext[0].get("arguments", {}) if ext else {}
    check_url("volcano-scheduler.conf", args.get("extender.urlPrefix"), cget("sched.volcanoPrefix") or "/volcano")
    for k, v in args.items():
        if k.endswith("Verb") and v not in verbs:
            err("volcano-scheduler.conf: %s=%r is not a verb gangbridge serves %s" % (k, v, sorted(verbs)))
    if args.get("extender.ignorable") is not True:
        err("volcano-scheduler.conf: extender.ignorable must be true (docs/scheduler-integration.md)")
    ks = yaml.safe_load(open(os.path.join(deploy, "scheduler", "kube-scheduler-config.conf")))
    if ks.get("kind") != "KubeSchedulerConfiguration" or ks.get("apiVersion") != "kubescheduler.config.k8s.io/v1":
        err("kube-scheduler-config.conf: wrong kind/apiVersion")
    ke = (ks.get("extenders") or [{}])[0]
    check_url("kube-scheduler-config.conf", ke.get("urlPrefix"), cget("sched.kubePrefix") or "/kube")
    for k in ("filterVerb", "prioritizeVerb"):
        if ke.get(k) not in verbs:
            err("kube-scheduler-config.conf: %s=%r is not served" % (k, ke.get(k)))
    if not ke.get("weight", 0) > 0 or ke.get("ignorable") is not True:
        err("kube-scheduler-config.conf: weight must be > 0 and ignorable true")
except (OSError, yaml.YAMLError) as e:
    err("deploy/scheduler: %s" % e)

# --- PDB ---
pdb = one("PodDisruptionBudget")
psel = pdb.get("spec", {}).get("selector", {}).get("matchLabels", {})
if not psel or any(pod_labels.get(k) != v for k, v in psel.items()):
    err("PodDisruptionBudget: selector does not select the pods")
if pdb.get("spec", {}).get("minAvailable") != 1 and pdb.get("spec", {}).get("maxUnavailable") != 1:
    err("PodDisruptionBudget: minAvailable 1 (or maxUnavailable 1) with 2 replicas")

# --- config: leader election on ---
if cfg:
    if cget("leaderElection.enabled") is not True:
        err("config.yaml: leaderElection.enabled must be true with 2 replicas")
    lns = cget("leaderElection.namespace")
    if lns not in ("", NS):
        err("config.yaml: leaderElection.namespace must be %s (or empty: POD_NAMESPACE)" % NS)

# --- RBAC (manifests) ---
def rules_of(d):
    out = {}
    for r in d.get("rules", []):
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    if "*" in (g, res, v):
                        err("RBAC: wildcard in %s %s" % (d["kind"], d["metadata"]["name"]))
                    out.setdefault((g, res), set()).add(v)
        if r.get("resourceNames") or r.get("nonResourceURLs"):
            err("RBAC: unexpected resourceNames/nonResourceURLs")
    return out
cr = one("ClusterRole", "gangbridge")
role = one("Role")
got = rules_of(cr)
if got != REQUIRED:
    for k in sorted(set(got) | set(REQUIRED)):
        if got.get(k) != REQUIRED.get(k):
            err("ClusterRole: %s/%s grants %s, want %s" % (k[0] or "core", k[1],
                sorted(got.get(k, [])), sorted(REQUIRED.get(k, []))))
if rules_of(role) != REQUIRED_NS or role.get("metadata", {}).get("namespace") != NS:
    err("Role: %r, want %r in %s" % (rules_of(role), REQUIRED_NS, NS))
for bkind, rkind, rname in (("ClusterRoleBinding", "ClusterRole", cr.get("metadata", {}).get("name")),
                            ("RoleBinding", "Role", role.get("metadata", {}).get("name"))):
    b = one(bkind)
    if b.get("roleRef") != {"apiGroup": "rbac.authorization.k8s.io", "kind": rkind, "name": rname}:
        err("%s: roleRef %r" % (bkind, b.get("roleRef")))
    if b.get("subjects") != [{"kind": "ServiceAccount", "name": "gangbridge", "namespace": NS}]:
        err("%s: subjects must be exactly the gangbridge ServiceAccount" % bkind)

# --- RBAC (code): every call site's resource and verb is in the explicit list ---
VERB_OF = {"gb_kube_client_create": "create", "gb_kube_client_merge_patch": "patch", "gb_kube_client_apply": "patch",
           "gb_kube_client_delete": "delete", "gb_kube_client_get": "get", "gb_kube_client_list": "list"}
GROUP_OF = {"GC_TRAINER_GROUP": ["trainer.kubeflow.org"]}
# A call site naming a backend descriptor's group object (X->group, X->version, X->resource)
# reaches every backend's; an informer definition from a descriptor likewise (its Queues with
# X->queue.resource).
DESC = r'\w+(?:->\w+)*->'
DESC_PATH = r'gb_kube_client_path\([^;]*?,\s*' + DESC + r'group,\s*' + DESC + r'version,\s*' + DESC + r'resource\b'
# A path at a version chosen at run time, of the group object or the backend's other object
# (X->more_kind.resource): gangbridge only reads, creates and deletes the other one.
DESC_VPATH = (r'gb_kube_client_path\([^;]*?,\s*' + DESC + r'group,\s*[^,]*->version,\s*[^,]*' +
              DESC + r'more_kind\.resource\s*:\s*' + DESC + r'resource\b')
MORE_VERBS = {"get", "create", "delete"}
DESC_INF = r'\(struct inf_def\)\{\s*' + DESC + r'group,\s*' + DESC + r'version,\s*' + DESC + r'resource\b'
DESC_QINF = r'\(struct inf_def\)\{\s*' + DESC + r'group,\s*' + DESC + r'queue\.version,\s*' + DESC + r'queue\.resource\b' 
# Files that implement the transport, not call sites: their resources come from callers.
TRANSPORT = {"gb_kube_client.c", "gb_kube_watch.c", "gb_informer.c", "gb_informer_loop.c",
             "gb_kube_discovery.c",
             "gb_kube_config.c", "gb_cmd_call.c", "gb_rpc_client.c"}
# CLI commands that run with the user's kubeconfig, not the service account.
TRANSPORT |= {"gb_live_docs.c", "gb_cmd_timeouts.c"}
needed = {}
def need(g, r, v, where):
    needed.setdefault((g, r), set()).add(v)
    if v not in REQUIRED.get((g, r), set()) | REQUIRED_NS.get((g, r), set()):
        err("%s uses %s on %s/%s, which the RBAC list does not grant" % (where, v, g or "core", r))
for path in sorted(glob.glob(os.path.join(src, "bridge", "**", "*.c"), recursive=True)):
    base = os.path.basename(path)
    if base in TRANSPORT:
        continue
    text = open(path).read()
    calls = set(re.findall(r"\b(gb_kube_client_(?:create|merge_patch|apply|delete|get|list|request))(?:_timeout)?\s*\(", text))
    # Discovery reads /apis/GROUP/VERSION, which every authenticated user may.
    calls.discard("gb_kube_client_get") if "gb_kube_discovery_check" in text and "gb_kube_client_path" not in text else None
    informers = re.findall(r'\{\s*(GC_TRAINER_GROUP|"[^"]*"),\s*"(v[0-9a-z]+)",\s*"([a-z]+)",', text)
    for b in backends:
        if re.search(DESC_INF, text):
            informers.append(('"%s"' % b["group"], "", b["resource"]))
        if re.search(DESC_QINF, text) and b["queues"]:
            informers.append(('"%s"' % b["group"], "", b["queues"]))
    for g, _, r in informers:
        for grp in GROUP_OF.get(g, [g.strip('"')]):
            for v in ("get", "list", "watch"):
                need(grp, r, v, base + " (informer)")
    if not calls:
        continue
    targets = re.findall(r'gb_kube_client_path\([^;]*?,\s*(GC_TRAINER_GROUP|"[^"]*"),\s*[^,]+,\s*"([a-z]+)"', text, re.S)
    more_targets = []
    if re.search(DESC_PATH, text, re.S) or re.search(DESC_VPATH, text, re.S):
        targets += [('"%s"' % b["group"], b["resource"]) for b in backends]
    if re.search(DESC_VPATH, text, re.S):
        more_targets = [(b["group"], b["more"]) for b in backends if b["more"]]
    if not targets:
        err("%s calls %s but names no resource through gb_kube_client_path: extend this test" % (base, sorted(calls)))
    verbs = {VERB_OF[c] for c in calls if c in VERB_OF}
    if "gb_kube_client_request" in calls:
        for m in re.finditer(r'gb_kube_client_request(?:_timeout)?\([^;]*?"(GET|PUT|POST|PATCH|DELETE)"', text, re.S):
            verbs.add({"GET": "get", "PUT": "update", "POST": "create", "PATCH": "patch", "DELETE": "delete"}[m.group(1)])
    for g, r in targets:
        for grp in GROUP_OF.get(g, [g.strip('"')]):
            for v in verbs:
                need(grp, r, v, base)
    for g, r in more_targets:
        for v in verbs & MORE_VERBS:
            need(g, r, v, base + " (other object)")
# The model's informers are a table (resource names and groups by kind, macros for HyperNodes).
mw = read("bridge/model/gb_model_watch.c")
macros = dict(re.findall(r'#define (HN_[A-Z]+) "([^"]*)"', mw))
def table(name):
    m = re.search(name + r'\[GB_INF_N\] = \{([^}]*)\}', mw)
    if not m:
        err("gb_model_watch.c: no %s table: extend this test" % name)
        return []
    return [macros.get(x.strip(), x.strip().strip('"')) for x in m.group(1).split(",") if x.strip()]
for r, g in zip(table("KIND_NAMES"), table("groups")):
    for v in ("get", "list", "watch"):
        need(g, r, v, "gb_model_watch.c (informer)")
# blockOwnerDeletion on the PodGroup's ownerReference to its TrainJob.
if "blockOwnerDeletion" in read("gangcalc/gc_render.c"):
    need("trainer.kubeflow.org", "trainjobs/finalizers", "update", "gc_render.c (blockOwnerDeletion)")
# Conversely, nothing granted is unused (least privilege), except the justified extras.
for (g, r), vs in list(REQUIRED.items()) + list(REQUIRED_NS.items()):
    for v in vs:
        if v not in needed.get((g, r), set()) and (g, r, v) not in JUSTIFIED:
            err("RBAC grants %s on %s/%s but no call site uses it" % (v, g or "core", r))
for (g, r, v), why in JUSTIFIED.items():
    if v not in REQUIRED.get((g, r), set()):
        err("JUSTIFIED lists %s %s/%s which is not granted" % (v, g, r))

# --- example ---
ex_kinds = sorted(d["kind"] for f, d in docs if f.startswith("examples/"))
if ex_kinds != ["ClusterTrainingRuntime", "Namespace", "TrainJob"]:
    err("examples: want a Namespace, a ClusterTrainingRuntime and a TrainJob, have %r" % ex_kinds)
for f, d in docs:
    if d.get("kind") == "TrainJob":
        rr = d["spec"]["runtimeRef"]
        if not any(x["metadata"]["name"] == rr["name"] and x["kind"] == rr["kind"] for _, x in docs):
            err("%s: runtimeRef %r is not in the examples" % (f, rr))
    if d.get("kind") == "ClusterTrainingRuntime" and "podGroupPolicy" in d.get("spec", {}):
        err("%s: the example runtime must leave podGroupPolicy to gangbridge" % f)

# Non-built-in kinds for the stand-in: permissive CRDs.
crds = []
plural = {"Deployment": "deployments", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
          "Role": "roles", "RoleBinding": "rolebindings", "PodDisruptionBudget": "poddisruptionbudgets",
          "MutatingWebhookConfiguration": "mutatingwebhookconfigurations", "Issuer": "issuers",
          "Certificate": "certificates", "NetworkPolicy": "networkpolicies",
          "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
          "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}
for kind, pl in plural.items():
    group, version = API[kind].split("/")
    crds.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "%s.%s" % (pl, group)},
                 "spec": {"group": group, "scope": "Cluster" if kind in CLUSTER_SCOPED else "Namespaced",
                          "names": {"kind": kind, "plural": pl, "singular": kind.lower(),
                                    "listKind": kind + "List"},
                          "versions": [{"name": version, "served": True, "storage": True,
                                        "schema": {"openAPIV3Schema": {"type": "object",
                                                   "x-kubernetes-preserve-unknown-fields": True}}}]}})
with open(os.path.join(work, "stub-crds.yaml"), "w") as f:
    yaml.safe_dump_all(crds, f)
with open(os.path.join(work, "objects.txt"), "w") as f:
    for fname, d in docs:
        md = d["metadata"]
        f.write("%s %s %s %s\n" % (fname.startswith("examples/") and "example" or "deploy",
                                   d["kind"], md.get("namespace", "-"), md["name"]))

if errors:
    print("\n".join("FAIL: " + e for e in errors))
    sys.exit(1)
print("static checks: %d documents, %d RBAC rules cross-checked against %d call-site needs" %
      (len(docs), sum(len(v) for v in REQUIRED.values()) + 3, sum(len(v) for v in needed.values())))
PY

# ---- 2. the service's own validation of config.yaml ----------------------------------------
"$GANGBRIDGE" serve --config "$WORK/config.yaml" --print-config >"$WORK/effective.yaml" 2>"$WORK/cfg.err" \
  || fail "gangbridge rejects the ConfigMap's config.yaml: $(cat "$WORK/cfg.err")"
python3 - "$WORK/config.yaml" "$WORK/effective.yaml" <<'PY'
import sys, yaml
given = yaml.safe_load(open(sys.argv[1]))
eff = yaml.safe_load(open(sys.argv[2]))
def walk(g, e, path):
    for k, v in g.items():
        p = path + [k]
        if not isinstance(e, dict) or k not in e:
            sys.exit("effective configuration lacks %s" % ".".join(p))
        if isinstance(v, dict):
            walk(v, e[k], p)
        elif str(v) != str(e[k]) and not (isinstance(v, str) and v.endswith(("s", "m")) and e[k] is not None):
            sys.exit("%s: given %r, effective %r" % (".".join(p), v, e[k]))
walk(given, eff, [])
assert eff["leaderElection"]["enabled"] is True, eff["leaderElection"]
PY
# A broken file is refused (the check above can fail).
sed 's/^leaderElection:/leaderElectionTypo:/' "$WORK/config.yaml" >"$WORK/bad-config.yaml"
cmp -s "$WORK/config.yaml" "$WORK/bad-config.yaml" && fail "could not make a broken config"
if "$GANGBRIDGE" serve --config "$WORK/bad-config.yaml" --print-config >/dev/null 2>&1; then
  fail "a config with an unknown key was accepted"
fi

# ---- 3. the example renders a gang and matches the Trainer CRDs ----------------------------
"$GANGBRIDGE" render -f "$DEPLOY/examples/" >"$WORK/pg.yaml" || fail "render of deploy/examples failed"
python3 - "$WORK/pg.yaml" <<'PY'
import sys, yaml
pg = yaml.safe_load(open(sys.argv[1]))
assert pg["kind"] == "PodGroup" and pg["metadata"]["name"] == "mnist-gang", pg
assert pg["spec"]["minMember"] == 4, pg["spec"]
assert pg["spec"]["minResources"]["nvidia.com/gpu"] == "4", pg["spec"]
PY
python3 "$SRC/tests/golden/crdcheck.py" --crds "$SHARED/crds/trainer" \
  "$DEPLOY/examples/runtime.yaml" "$DEPLOY/examples/trainjob.yaml" >"$WORK/crdcheck.out" 2>&1 \
  || fail "examples do not match the Trainer CRDs: $(cat "$WORK/crdcheck.out")"

# ---- 4. the real kubectl applies everything to the stand-in API server ---------------------
apiserver_start

k apply --server-side -f "$WORK/stub-crds.yaml" >/dev/null || fail "stub CRDs"
k apply --server-side -f "$SHARED/crds/trainer/" >/dev/null || fail "Trainer CRDs"
# The namespace first: kubectl applies in file order, and namespaced objects need it.
k apply --validate=false -f "$DEPLOY/namespace.yaml" >/dev/null || fail "namespace"
# kubectl before 1.21 embeds kustomize v2, which does not know the kustomization's `labels`
# (docs/deploy.md says so): with such a kubectl, check that -k fails for that reason and apply
# the files the kustomization names instead, as the docs tell its users to.
KUST=(-k "$DEPLOY")
KUST_LABELS=1
if ! k kustomize "$DEPLOY" >/dev/null 2>"$WORK/kust.err"; then
  grep -q 'unknown field "labels"' "$WORK/kust.err" || fail "kubectl kustomize: $(cat "$WORK/kust.err")"
  KUST=()
  KUST_LABELS=0
  for f in $(python3 -c 'import sys, yaml; print(" ".join(yaml.safe_load(open(sys.argv[1]))["resources"]))' "$DEPLOY/kustomization.yaml"); do
    KUST+=(-f "$DEPLOY/$f")
  done
fi
k apply --validate=false "${KUST[@]}" >"$WORK/apply.out" 2>&1 || fail "kubectl apply -k deploy/: $(cat "$WORK/apply.out")"
k apply --validate=false -f "$DEPLOY/examples/namespace.yaml" >/dev/null || fail "example namespace"
# Examples with validation on: the stand-in checks them against the Trainer CRD schemas.
k apply -f "$DEPLOY/examples/" >>"$WORK/apply.out" 2>&1 || fail "kubectl apply examples: $(cat "$WORK/apply.out")"
# Every object is on the server as written.
while read -r where kind ns name; do
  if [ "$ns" = "-" ]; then
    k get "$kind" "$name" -o json >"$WORK/obj.json" 2>"$WORK/get.err" || fail "$kind/$name not stored: $(cat "$WORK/get.err")"
  else
    k get -n "$ns" "$kind" "$name" -o json >"$WORK/obj.json" 2>"$WORK/get.err" || fail "$ns/$kind/$name not stored: $(cat "$WORK/get.err")"
  fi
  python3 - "$WORK/obj.json" "$kind" "$name" "$where$KUST_LABELS" <<'PY' || fail "$kind/$name differs on the server"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == sys.argv[2] and d["metadata"]["name"] == sys.argv[3], d
if sys.argv[4] == "deploy1":
    assert d["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kustomize", d["metadata"]
PY
done <"$WORK/objects.txt"
k get -n gangbridge-system deployment gangbridge -o json >"$WORK/dep.json"
python3 - "$WORK/dep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["spec"]["template"]["spec"]["containers"][0]
assert c["image"] == "ghcr.io/gangbridge/gangbridge:0.1.0", c["image"]
assert c["securityContext"]["readOnlyRootFilesystem"] is True
PY
# Re-applying changes nothing.  Client-side re-apply of a PodDisruptionBudget always sends a
# strategic merge patch (its selector is patchStrategy "replace"), which the stand-in does not
# speak for kinds it serves through CRDs, so the idempotence check uses server-side apply: the
# first takes over the fields, the second must leave every resourceVersion as it was.
rvs() {
  k get "${KUST[@]}" -o json | python3 -c 'import json,sys; print("\n".join(sorted("%s/%s %s" % (i["kind"], i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in json.load(sys.stdin)["items"])))'
}
k apply --server-side --force-conflicts --validate=false "${KUST[@]}" >"$WORK/ssa1.out" 2>&1 \
  || fail "server-side apply: $(cat "$WORK/ssa1.out")"
rvs >"$WORK/rv1"
k apply --server-side --validate=false "${KUST[@]}" >"$WORK/ssa2.out" 2>&1 \
  || fail "server-side re-apply: $(cat "$WORK/ssa2.out")"
rvs >"$WORK/rv2"
[ "$(wc -l <"$WORK/rv1")" -ge 16 ] || fail "kubectl get -k returned $(wc -l <"$WORK/rv1") objects"
cmp -s "$WORK/rv1" "$WORK/rv2" || fail "re-apply changed objects: $(diff "$WORK/rv1" "$WORK/rv2")"
echo "deploy manifests: $(wc -l <"$WORK/objects.txt") objects validated and applied"
