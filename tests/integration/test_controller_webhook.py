# SPDX-License-Identifier: Apache-2.0
"""End-to-end: the pod-binding webhook of `gangbridge serve` over HTTPS.

serve runs with a throwaway certificate (made by the openssl CLI in a temporary directory)
against the stand-in with Volcano and coscheduling CRDs.  Real AdmissionReview v1 documents
for JobSet-like pods of managed TrainJobs are answered with a JSON Patch that binds the pod
(Volcano annotation or coscheduling label, and the configured scheduler name) only for
replicated jobs in the binding plan; pods of earlier waves lose a group annotation or label
Trainer put on them; pods of a TrainJob whose PodGroup gangbridge does not own are not bound
(with a warning and a PodGroupMismatch Event); pods of unknown JobSets and of TrainJobs
gangbridge leaves alone are admitted untouched; malformed reviews are answered (400), never
crash the service.
"""

import base64
import copy
import http.client
import json
import os
import ssl
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import Env, Runner, fail, namespace, runtime, trainjob  # noqa: E402

REVIEW = {
    "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
    "request": {
        "uid": "00000000-0000-4000-8000-000000000001",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": None, "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
        "object": {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"generateName": "x-", "labels": {}},
            "spec": {"schedulerName": "default-scheduler",
                     "containers": [{"name": "node", "image": "pytorch:1"}]},
        },
        "dryRun": False,
    },
}


def make_cert(tmp):
    crt, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", crt,
                        "-days", "1", "-subj", "/CN=gangbridge-test",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail("openssl: %s" % r.stderr)
    return crt, key


class Hook:
    def __init__(self, env, cafile):
        self.env = env
        self.ctx = ssl.create_default_context(cafile=cafile)

    def post(self, body, ctype="application/json"):
        c = http.client.HTTPSConnection("127.0.0.1", self.env.hook_port, context=self.ctx,
                                        timeout=10)
        try:
            c.request("POST", "/mutate-pods", body=body, headers={"Content-Type": ctype})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def review(self, ns, jobset, rjob, uid="00000000-0000-4000-8000-000000000001",
               annotations=None, labels=None):
        rv = copy.deepcopy(REVIEW)
        rv["request"]["uid"] = uid
        rv["request"]["namespace"] = ns
        rv["request"]["object"]["metadata"]["namespace"] = ns
        rv["request"]["object"]["metadata"]["labels"] = {
            "jobset.sigs.k8s.io/jobset-name": jobset,
            "jobset.sigs.k8s.io/replicatedjob-name": rjob,
            "batch.kubernetes.io/job-completion-index": "0"}
        rv["request"]["object"]["metadata"]["labels"].update(labels or {})
        if annotations:
            rv["request"]["object"]["metadata"]["annotations"] = annotations
        status, body = self.post(json.dumps(rv))
        if status != 200:
            fail("webhook answered %d: %r" % (status, body[:300]))
        out = json.loads(body)
        resp = out["response"]
        if resp["uid"] != uid:
            fail("response uid %r" % resp["uid"])
        patch = json.loads(base64.b64decode(resp["patch"])) if resp.get("patch") else None
        return resp, patch


def test_volcano_binding(env, hook):
    ns = "w-vol"
    env.create(namespace(ns))
    env.create(runtime("torch-init", ns, initializer=True))
    env.create(trainjob("job", ns, "torch-init", num_nodes=2))
    env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup")
    resp, patch = hook.review(ns, "job", "node")
    if not resp["allowed"] or patch is None:
        fail("trainer pod not patched: %r" % resp)
    ops = {(p["op"], p["path"]): p.get("value") for p in patch}
    if ops.get(("add", "/metadata/annotations")) != {"scheduling.k8s.io/group-name": "job"}:
        fail("no group-name annotation: %r" % patch)
    if ops.get(("replace", "/spec/schedulerName"), ops.get(("add", "/spec/schedulerName"))) \
            != "volcano":
        fail("schedulerName not set to volcano: %r" % patch)
    # The initializer runs in an earlier wave: it must not join the gang.
    resp, patch = hook.review(ns, "job", "dataset-initializer")
    if not resp["allowed"] or patch is not None:
        fail("initializer pod was patched: %r" % patch)
    # A JobSet no TrainJob owns.
    resp, patch = hook.review(ns, "someone-elses-jobset", "node")
    if not resp["allowed"] or patch is not None:
        fail("foreign JobSet pod was patched: %r" % patch)


def test_unbound_loses_group_keys(env, hook):
    # Take-over mode: Trainer put its group annotation on every pod template, the
    # initializer's included; the webhook removes it so Volcano does not wait for it.
    trainer = {"scheduling.k8s.io/group-name": "job"}
    resp, patch = hook.review("w-vol", "job", "dataset-initializer", annotations=trainer,
                              labels={"scheduling.x-k8s.io/pod-group": "job"})
    if not resp["allowed"] or patch is None:
        fail("initializer pod keeps its group keys: %r" % resp)
    want = [{"op": "remove", "path": "/metadata/annotations/scheduling.k8s.io~1group-name"},
            {"op": "remove", "path": "/metadata/labels/scheduling.x-k8s.io~1pod-group"}]
    if patch != want:
        fail("unbinding patch %r, want %r" % (patch, want))


def test_foreign_podgroup_not_bound(env, hook):
    # A PodGroup of the TrainJob's name that gangbridge does not own (made by someone
    # else, waiting for 5 pods): apply conflicts, and the pods must not join it.
    ns = "w-foreign"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    env.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "job", "namespace": ns}, "spec": {"minMember": 5}})
    env.create(trainjob("job", ns, "torch", num_nodes=2))
    answers = []

    def answered():
        resp, patch = hook.review(ns, "job", "node",
                                  annotations={"scheduling.k8s.io/group-name": "job"})
        answers.append((resp, patch))
        return resp["allowed"] and resp.get("warnings")
    env.wait(answered, "admission of the pod of the TrainJob with a foreign PodGroup")
    resp, patch = answers[-1]
    if any(p and any(op["op"] == "add" and "group-name" in json.dumps(op) for op in p)
           for _, p in answers):
        fail("pod bound to the foreign PodGroup: %r" % answers)
    want = [{"op": "remove", "path": "/metadata/annotations/scheduling.k8s.io~1group-name"}]
    if patch != want:
        fail("foreign PodGroup: patch %r, want %r" % (patch, want))
    if not any("not managed by gangbridge" in w for w in resp["warnings"]):
        fail("no warning naming the foreign PodGroup: %r" % resp["warnings"])
    env.wait(lambda: env.events(ns, "job", "PodGroupMismatch"), "PodGroupMismatch Event")
    if env.podgroup("volcano", ns, "job")["spec"]["minMember"] != 5:
        fail("foreign PodGroup changed")


def test_coscheduling_binding(env, hook):
    ns = "w-cos"
    env.create(namespace(ns, annotations={"gangbridge.io/backend": "coscheduling"}))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch"))
    env.wait(lambda: env.podgroup("coscheduling", ns, "job"), "coscheduling PodGroup")
    resp, patch = hook.review(ns, "job", "node")
    if patch is None:
        fail("not patched: %r" % resp)
    vals = {p["path"]: p.get("value") for p in patch}
    lab = vals.get("/metadata/labels/scheduling.x-k8s.io~1pod-group")
    if lab != "job":
        fail("no pod-group label: %r" % patch)
    if vals.get("/spec/schedulerName") != "scheduler-plugins-scheduler":
        fail("schedulerName: %r" % patch)


def test_left_alone(env, hook):
    ns = "w-skip"
    env.create(namespace(ns))
    env.create(runtime("trainer-policy", ns, policy={"volcano": {}}))
    env.create(trainjob("job", ns, "trainer-policy"))
    # Until the controller's caches hold the TrainJob and its runtime the answer may be a
    # retryable denial; it must never be a patch, and must end as a plain admission.
    answers = []

    def allowed():
        resp, patch = hook.review(ns, "job", "node")
        answers.append(patch)
        return resp["allowed"]
    env.wait(allowed, "admission of the Trainer-served TrainJob's pod")
    if any(p is not None for p in answers):
        fail("Trainer-served TrainJob's pod patched: %r" % answers)


def test_malformed(env, hook):
    for body, want in ((b"{not json", 400), (b"[]", 400),
                       (json.dumps({"kind": "AdmissionReview"}).encode(), 400)):
        status, _ = hook.post(body)
        if status != want:
            fail("malformed review %r: %d" % (body[:20], status))
    status, _ = hook.post(b"{}", ctype="text/plain")
    if status != 415:
        fail("wrong content type: %d" % status)
    # Still serving after all that.
    resp, patch = hook.review("w-vol", "job", "node", uid="00000000-0000-4000-8000-000000000002")
    if patch is None:
        fail("webhook stopped binding after malformed reviews")
    body = env.http_get("/metrics")[1]
    if 'gangbridge_webhook_admissions_total{backend="volcano",result="patched"}' not in body:
        fail("no patched admissions in /metrics")


def main():
    env = Env(crds=("trainer", "volcano", "coscheduling"))
    r = Runner()
    try:
        crt, key = make_cert(env.tmp)
        env.start_serve(["--webhook-tls-cert", crt, "--webhook-tls-key", key])
        hook = Hook(env, crt)
        r.run("Volcano pod binding", test_volcano_binding, env, hook)
        r.run("unbound pod loses Trainer's group keys", test_unbound_loses_group_keys, env,
              hook)
        r.run("foreign PodGroup: pods not bound", test_foreign_podgroup_not_bound, env, hook)
        r.run("coscheduling pod binding", test_coscheduling_binding, env, hook)
        r.run("Trainer-served TrainJob left alone", test_left_alone, env, hook)
        r.run("malformed reviews answered", test_malformed, env, hook)
        r.run("clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
