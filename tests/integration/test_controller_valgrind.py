# SPDX-License-Identifier: Apache-2.0
"""`gangbridge serve` under a memory checker through a full controller cycle.

serve runs under `valgrind --leak-check=full` (definite and indirect leaks and every memory
error fail the run through --error-exitcode) while it creates a PodGroup, re-renders it,
emits Events, counts a gang's pods (a change under them is PodGroupOutdated, applied once
they go), leaves a foreign PodGroup alone, answers webhook reviews (one malformed), deletes
a finished TrainJob's PodGroup, runs the upstream Workload API backend (discovery of the
served version, the Workload and its PodGroup read and created at it, the webhook writing the
pod spec field and leaving a pod that names its own group alone, the 1.36 -> 1.37 switch made
good, suspend and finish deleting both) and stops on SIGTERM.  A binary built with AddressSanitizer cannot run under
valgrind; it checks the same errors and leaks itself, so for such a build the same
scenario runs without the valgrind wrapper and ASan's exit status is checked instead.
"""

import base64
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (GANGBRIDGE, Env, fail, gang_pod, namespace, runtime,  # noqa: E402
                                trainjob)

TJ_API = "trainer.kubeflow.org/v1alpha1"


def asan_build():
    out = subprocess.run(["nm", "-D", GANGBRIDGE], capture_output=True, text=True)
    out2 = subprocess.run(["nm", GANGBRIDGE], capture_output=True, text=True)
    return "__asan_init" in out.stdout or "__asan_init" in out2.stdout


def post_review(env, body):
    req = urllib.request.Request("http://127.0.0.1:%d/mutate-pods" % env.hook_port, data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def review_of(ns, jobset, spec):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-w", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "operation": "CREATE", "namespace": ns,
                        "object": {"metadata": {"labels": {
                            "jobset.sigs.k8s.io/jobset-name": jobset,
                            "jobset.sigs.k8s.io/replicatedjob-name": "node"}},
                            "spec": spec}}}


def workload_cycle(env):
    """The Workload API backend, chosen by the Namespace (Volcano is served too)."""
    ns = "vg-w"
    wl = "/apis/scheduling.k8s.io/%s/namespaces/" + ns + "/%s/%s"

    def get(version, resource, name):
        r = env.c.get(wl % (version, resource, name))
        return r.json if r.status == 200 else None
    env.create(namespace(ns, annotations={"gangbridge.io/backend": "workload"}))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch", num_nodes=2))
    env.wait(lambda: get("v1alpha2", "podgroups", "job-gang"), "v1alpha2 PodGroup", 60)
    status, body = post_review(env, json.dumps(review_of(ns, "job", {
        "containers": [{"name": "n"}]})).encode())
    if status != 200 or b"schedulingGroup" not in base64.b64decode(
            json.loads(body)["response"].get("patch") or ""):
        fail("webhook (Workload): %d %r" % (status, body[:200]))
    status, body = post_review(env, json.dumps(review_of(ns, "job", {
        "containers": [{"name": "n"}], "schedulingGroup": {"podGroupName": "x"}})).encode())
    if status != 200 or not json.loads(body)["response"].get("warnings"):
        fail("webhook (own group): %d %r" % (status, body[:200]))
    r = env.c.post("/_control/workload-api", {"release": "1.37"})
    if r.status != 200:
        fail("switch to 1.37: %r" % r)
    env.wait(lambda: get("v1beta1", "podgroups", "job-gang"), "v1beta1 PodGroup", 60)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": True}})
    env.wait(lambda: get("v1beta1", "workloads", "job") is None, "Workload gone on suspend", 60)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": False}})
    env.wait(lambda: get("v1beta1", "podgroups", "job-gang"), "made again on resume", 60)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "x", "message": "x",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, sub="/status")
    env.wait(lambda: get("v1beta1", "podgroups", "job-gang") is None, "deleted at finish", 60)


def main():
    wrapper = []
    if asan_build():
        print("checker: AddressSanitizer (this build); valgrind cannot run ASan binaries")
    else:
        wrapper = ["valgrind", "--quiet", "--leak-check=full",
                   "--errors-for-leak-kinds=definite,indirect",
                   "--show-leak-kinds=definite,indirect", "--error-exitcode=99",
                   "--trace-children=no"]
        print("checker: valgrind")
    env = Env(crds=("trainer", "volcano"), apiserver_args=("--workload-api", "1.36"))
    try:
        env.start_serve(["--workers", "2"], wrapper=wrapper, ready_timeout=90)
        ns = "vg"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, initializer=True))
        env.create(trainjob("job", ns, "torch", num_nodes=2, suspend=True))
        env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup", 60)
        env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"trainer": {"numNodes": 3}}})
        env.wait(lambda: env.podgroup("volcano", ns, "job")["spec"]["minMember"] == 3,
                 "re-render", 60)
        env.wait(lambda: env.events(ns, "job", "QueueNotFound"), "QueueNotFound", 60)
        # Resume: with a gang pod, a change waits (PodGroupOutdated) until the pod goes.
        env.create(gang_pod("job-node-0-0", ns, "job"))
        env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": False}})
        env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"trainer": {"numNodes": 4}}})
        env.wait(lambda: env.events(ns, "job", "PodGroupOutdated"), "PodGroupOutdated", 60)
        env.delete("v1", "Pod", ns, "job-node-0-0")
        env.wait(lambda: env.podgroup("volcano", ns, "job")["spec"]["minMember"] == 4,
                 "applied once the pod went", 60)
        # A PodGroup gangbridge did not create.
        env.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": "other", "namespace": ns}, "spec": {"minMember": 5}})
        env.create(trainjob("other", ns, "torch"))
        env.wait(lambda: env.events(ns, "other", "PodGroupExists"), "PodGroupExists", 60)
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": "u-1", "kind": {"group": "", "version": "v1",
                                                     "kind": "Pod"},
                              "operation": "CREATE", "namespace": ns,
                              "object": {"metadata": {"labels": {
                                  "jobset.sigs.k8s.io/jobset-name": "job",
                                  "jobset.sigs.k8s.io/replicatedjob-name": "node"}},
                                  "spec": {"containers": [{"name": "n"}]}}}}
        status, body = post_review(env, json.dumps(review).encode())
        if status != 200 or not json.loads(body)["response"].get("patch"):
            fail("webhook: %d %r" % (status, body[:200]))
        status, _ = post_review(env, b'{"apiVersion": "admission.k8s.io/v1", "kind": ')
        if status != 400:
            fail("malformed review: %d" % status)
        env.merge_patch(TJ_API, "TrainJob", ns, "job", {"status": {"conditions": [
            {"type": "Failed", "status": "True", "reason": "x", "message": "x",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, sub="/status")
        env.wait(lambda: env.podgroup("volcano", ns, "job") is None, "delete on Failed", 60)
        workload_cycle(env)
        code, _ = env.http_get("/metrics")
        if code != 200:
            fail("/metrics %d" % code)
        env.stop_serve()  # fails on a non-zero exit: memory errors or leaks
        print("ok   serve under the memory checker: no errors, no leaks")
    finally:
        env.stop()


if __name__ == "__main__":
    main()
