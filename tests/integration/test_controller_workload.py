# SPDX-License-Identifier: Apache-2.0
"""End-to-end: `gangbridge serve` with the upstream Workload API (scheduling.k8s.io) as the
gang backend, on the stand-in serving one Kubernetes release at a time.

For each of --workload-api 1.35, 1.36 and 1.37 (only the Trainer CRDs installed, so
`scheduling.backend: auto` falls back to the Workload API, last in its order): discovery
picks the version the release serves; a TrainJob with an initializer gets one Workload at
that version, equal to `gangbridge render --scheduler workload --api-version V`, owned by
the TrainJob, and from v1alpha2 on its PodGroup `<name>-gang`; its trainer pods, created
through serve's webhook, carry the pod spec field of the version (v1alpha1
spec.workloadRef {name, podGroup}, later spec.schedulingGroup.podGroupName) and the stand-in
accepts them; the initializer's pod is not bound; a pod that already names a scheduling
group is left exactly as it is with an admission warning.  When the TrainJob completes,
the Workload and its PodGroup are deleted.  A TrainJob whose runtime pod template already
names a scheduling group (something else gangs it) gets no Workload and a GangedElsewhere
Event.  A Workload of that name that gangbridge did not make is never changed or deleted.
A suspended TrainJob loses its Workload and gets it back when resumed.  On 1.36, switching
the served release to 1.37 (the stand-in drops the v1alpha2 objects) converges on exactly
one v1beta1 Workload and its PodGroup.  With --workload-api none the TrainJob waits with a
PodGroupAPIMissing Event naming the GenericWorkload gate.  On 1.37 with Volcano installed,
a Namespace annotated `gangbridge.io/backend: workload` gets a Workload, not a Volcano
PodGroup, and `scheduling.backend: workload` is accepted.
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (GANGBRIDGE, PLURAL, Env, Runner, fail, namespace,  # noqa: E402
                                runtime, same_as_render, trainjob)
from placement_helpers import admit_review  # noqa: E402

TJ_API = "trainer.kubeflow.org/v1alpha1"
PLURAL.setdefault("Workload", "workloads")
VERSION = {"1.35": "v1alpha1", "1.36": "v1alpha2", "1.37": "v1beta1"}
COMPLETE = {"status": {"conditions": [
    {"type": "Complete", "status": "True", "reason": "JobSetCompleted", "message": "done",
     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def api(version):
    return "scheduling.k8s.io/" + version


def workload(env, version, ns, name):
    return env.get(api(version), "Workload", ns, name)


def podgroup(env, version, ns, name):
    return env.get(api(version), "PodGroup", ns, name)


def workloads(env, version, ns):
    r = env.c.get("/apis/scheduling.k8s.io/%s/namespaces/%s/workloads" % (version, ns))
    if r.status != 200:
        fail("list workloads %s: %r" % (version, r))
    return r.json["items"]


def pod(jobset, ns, rjob, i, spec_extra=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "%s-%s-0-%d" % (jobset, rjob, i), "namespace": ns,
                      "labels": {"jobset.sigs.k8s.io/jobset-name": jobset,
                                 "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                                 "batch.kubernetes.io/job-completion-index": str(i)}},
         "spec": {"schedulerName": "default-scheduler",
                  "containers": [{"name": rjob, "image": "pytorch:1"}]}}
    if spec_extra:
        p["spec"].update(spec_extra)
    return p


def review(env, p):
    """Sends p to serve's webhook as the API server would; returns (patched pod, warnings)."""
    return admit_review(env.hook_port, p)


def create_through_webhook(env, p):
    patched, warnings = review(env, p)
    env.create(patched)
    return env.get("v1", "Pod", p["metadata"]["namespace"], p["metadata"]["name"]), warnings


def ours(obj, tj):
    md = obj["metadata"]
    refs = [r for r in md.get("ownerReferences") or [] if r.get("controller")]
    return ((md.get("labels") or {}).get("app.kubernetes.io/managed-by") == "gangbridge" and
            len(refs) == 1 and refs[0]["uid"] == tj["metadata"]["uid"] and
            refs[0]["kind"] == "TrainJob")


def binding(version, p):
    spec = p["spec"]
    if version == "v1alpha1":
        return spec.get("workloadRef")
    return spec.get("schedulingGroup")


def want_binding(version, name):
    if version == "v1alpha1":
        return {"name": name, "podGroup": "gang"}
    return {"podGroupName": name + "-gang"}


def finish(env, ns, name):
    env.merge_patch(TJ_API, "TrainJob", ns, name, COMPLETE, sub="/status")


def check_gang(env, release):
    version = VERSION[release]
    ns = "w-gang"
    env.create(namespace(ns))
    rt = env.create(runtime("torch-init", ns, initializer=True))
    tj = env.create(trainjob("job", ns, "torch-init", num_nodes=2))
    wl = env.wait(lambda: workload(env, version, ns, "job"), "Workload at %s" % version)
    rendered = env.render([rt, tj], "--scheduler", "workload", "--api-version", version)
    problems = same_as_render(wl, rendered[0])
    if problems:
        fail("Workload: " + "; ".join(problems))
    if not ours(wl, tj):
        fail("Workload not owned by the TrainJob: %r" % wl["metadata"])
    pg = None
    if version != "v1alpha1":
        pg = env.wait(lambda: podgroup(env, version, ns, "job-gang"), "PodGroup job-gang")
        problems = same_as_render(pg, rendered[1])
        if problems:
            fail("PodGroup: " + "; ".join(problems))
        if not ours(pg, tj):
            fail("PodGroup not owned by the TrainJob: %r" % pg["metadata"])
    elif len(rendered) != 1:
        fail("render gave %d objects at v1alpha1" % len(rendered))
    # Pods through the webhook: the trainer's are bound by the version's spec field.
    for i in range(2):
        p, _ = create_through_webhook(env, pod("job", ns, "node", i))
        if binding(version, p) != want_binding(version, "job"):
            fail("%s: binding %r" % (p["metadata"]["name"], binding(version, p)))
    p, _ = create_through_webhook(env, pod("job", ns, "dataset-initializer", 0))
    if p["spec"].get("workloadRef") or p["spec"].get("schedulingGroup"):
        fail("the initializer's pod was bound: %r" % p["spec"])
    # A pod that already names a group is left exactly as it is, with a warning.
    own = ({"workloadRef": {"name": "mine", "podGroup": "g"}} if version == "v1alpha1"
           else {"schedulingGroup": {"podGroupName": "mine"}})
    before = pod("job", ns, "node", 7, own)
    after, warnings = review(env, before)
    if after != before:
        fail("a pod naming its own group was changed: %r" % after)
    if not any("already names a scheduling group" in w for w in warnings):
        fail("no warning for a pod naming its own group: %r" % warnings)
    # Never resized while pods exist: the Workload is as it was.
    time.sleep(1.0)
    if workload(env, version, ns, "job")["metadata"]["resourceVersion"] != \
            wl["metadata"]["resourceVersion"]:
        fail("the Workload was written again while its pods exist")
    finish(env, ns, "job")
    env.wait(lambda: workload(env, version, ns, "job") is None, "Workload deleted at finish")
    if version != "v1alpha1":
        env.wait(lambda: podgroup(env, version, ns, "job-gang") is None,
                 "PodGroup deleted at finish")
    return version


def check_ganged_elsewhere(env, version):
    ns = "w-aside"
    env.create(namespace(ns))
    rt = runtime("theirs", ns)
    # Trainer's CRD knows spec.schedulingGroup only (not 1.35's spec.workloadRef): a
    # runtime naming a group there steps aside at every version.
    field = {"schedulingGroup": {"podGroupName": "x"}}
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"].update(field)
    served = env.create(rt)
    node = served["spec"]["template"]["spec"]["replicatedJobs"][0]
    if not set(field) <= set(node["template"]["spec"]["template"]["spec"]):
        fail("the stand-in dropped the runtime's pod spec field: %r" % node)
    env.create(trainjob("job", ns, "theirs"))
    ev = env.wait(lambda: env.events(ns, "job", "GangedElsewhere"), "GangedElsewhere Event")
    if "scheduling group" not in ev[0].get("message", ""):
        fail("GangedElsewhere does not say why: %r" % ev[0])
    if workloads(env, version, ns):
        fail("a Workload for a TrainJob something else gangs: %r" % workloads(env, version, ns))


def check_foreign(env, version):
    ns = "w-foreign"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    spec = {"controllerRef": {"apiGroup": "example.com", "kind": "Thing", "name": "t"}}
    if version == "v1alpha1":
        spec["podGroups"] = [{"name": "g", "policy": {"gang": {"minCount": 5}}}]
    else:
        spec["podGroupTemplates"] = [{"name": "g", "schedulingPolicy": {"gang": {"minCount": 5}}}]
    before = env.create({"apiVersion": api(version), "kind": "Workload",
                         "metadata": {"name": "theirs", "namespace": ns}, "spec": spec})
    env.create(trainjob("theirs", ns, "torch"))
    env.wait(lambda: env.events(ns, "theirs", "PodGroupExists"), "PodGroupExists Event")
    p, _ = create_through_webhook(env, pod("theirs", ns, "node", 0))
    if binding(version, p):
        fail("a pod of a TrainJob with a foreign Workload was bound: %r" % p["spec"])
    finish(env, ns, "theirs")
    time.sleep(1.5)
    now = workload(env, version, ns, "theirs")
    if now is None:
        fail("the foreign Workload was deleted")
    if now["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]:
        fail("the foreign Workload was changed: %r" % now)


def check_suspend(env, version):
    ns = "w-suspend"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch"))
    env.wait(lambda: workload(env, version, ns, "job"), "Workload")
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": True}})
    env.wait(lambda: workload(env, version, ns, "job") is None, "Workload deleted on suspend")
    if version != "v1alpha1":
        env.wait(lambda: podgroup(env, version, ns, "job-gang") is None,
                 "PodGroup deleted on suspend")
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": False}})
    env.wait(lambda: workload(env, version, ns, "job"), "Workload made again on resume")


def check_switch(env):
    ns = "w-switch"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    tj = env.create(trainjob("job", ns, "torch", num_nodes=2))
    env.wait(lambda: podgroup(env, "v1alpha2", ns, "job-gang"), "v1alpha2 PodGroup")
    for i in range(2):
        create_through_webhook(env, pod("job", ns, "node", i))
    r = env.c.post("/_control/workload-api", {"release": "1.37"})
    if r.status != 200:
        fail("switch to 1.37: %r" % r)
    wl = env.wait(lambda: workload(env, "v1beta1", ns, "job"), "v1beta1 Workload after the switch",
                  timeout=30)
    pg = env.wait(lambda: podgroup(env, "v1beta1", ns, "job-gang"), "v1beta1 PodGroup", timeout=30)
    if not ours(wl, tj) or not ours(pg, tj):
        fail("objects after the switch are not the TrainJob's")
    time.sleep(2.5)  # more discovery rounds and reconciles: still exactly one
    items = workloads(env, "v1beta1", ns)
    if [w["metadata"]["name"] for w in items] != ["job"]:
        fail("Workloads after the switch: %r" % [w["metadata"]["name"] for w in items])
    p = env.get("v1", "Pod", ns, "job-node-0-0")
    if p["spec"].get("schedulingGroup") != {"podGroupName": "job-gang"}:
        fail("pod binding after the switch: %r" % p["spec"].get("schedulingGroup"))


def check_not_served(env):
    ns = "w-none"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch"))
    ev = env.wait(lambda: env.events(ns, "job", "PodGroupAPIMissing"), "PodGroupAPIMissing")
    msg = ev[0].get("message", "")
    if "GenericWorkload" not in msg or "workloads.scheduling.k8s.io" not in msg:
        fail("PodGroupAPIMissing does not name the Workload API and its gate: %r" % msg)


def check_namespace_workload(env):
    ns = "w-ns"
    env.create(namespace(ns, annotations={"gangbridge.io/backend": "workload"}))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch", num_nodes=2))
    env.create(namespace("w-auto"))
    env.create(runtime("torch", "w-auto"))
    env.create(trainjob("job", "w-auto", "torch", num_nodes=2))
    env.wait(lambda: workload(env, "v1beta1", ns, "job"), "Workload for the annotated Namespace")
    env.wait(lambda: env.podgroup("volcano", "w-auto", "job"), "Volcano PodGroup (auto)")
    if env.podgroup("volcano", ns, "job") is not None:
        fail("a Volcano PodGroup for the Namespace that names workload")
    if workloads(env, "v1beta1", "w-auto"):
        fail("auto picked the Workload API although Volcano is served")


def check_config_accepts(env):
    p = subprocess.run([GANGBRIDGE, "serve", "--kubeconfig", env.kubeconfig, "--set",
                        "scheduling.backend=workload", "--print-config"],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 0 or "workload" not in p.stdout:
        fail("serve refused scheduling.backend=workload: exit %d, %s" % (p.returncode, p.stderr))


def run_release(r, release):
    env = Env(crds=("trainer",), apiserver_args=("--workload-api", release))
    version = VERSION[release]
    try:
        env.start_serve()
        r.run("%s: Workload, pods bound at CREATE, finish" % release, check_gang, env, release)
        r.run("%s: ganged elsewhere, left alone" % release, check_ganged_elsewhere, env,
              version)
        r.run("%s: foreign Workload left alone" % release, check_foreign, env, version)
        r.run("%s: suspend deletes, resume makes again" % release, check_suspend, env, version)
        if release == "1.36":
            r.run("1.36 -> 1.37: one Workload at v1beta1", check_switch, env)
        r.run("%s: clean shutdown" % release, env.stop_serve)
    finally:
        env.stop()


def main():
    r = Runner()
    for release in ("1.35", "1.36", "1.37"):
        run_release(r, release)
    env = Env(crds=("trainer",), apiserver_args=("--workload-api", "none"))
    try:
        env.start_serve()
        r.run("none served: PodGroupAPIMissing names the gate", check_not_served, env)
        r.run("none: clean shutdown", env.stop_serve)
    finally:
        env.stop()
    env = Env(crds=("trainer", "volcano"), apiserver_args=("--workload-api", "1.37"))
    try:
        env.start_serve()
        r.run("Namespace backend workload obeyed beside Volcano", check_namespace_workload, env)
        r.run("scheduling.backend: workload accepted", check_config_accepts, env)
        r.run("1.37+volcano: clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
