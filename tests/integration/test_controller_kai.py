# SPDX-License-Identifier: Apache-2.0
"""End-to-end: KAI Scheduler's PodGroup (scheduling.run.ai/v2alpha2) from `gangbridge serve`.

The stand-in serves the Trainer CRDs only at first: a TrainJob waits with a
PodGroupAPIMissing Event naming KAI among what to install.  Then KAI's PodGroup CRD is
applied: the CRD watch re-runs discovery and `scheduling.backend: auto` picks KAI.  A TrainJob whose runtime has an initializer and tells KAI's grouper to keep
out gets a KAI PodGroup equal to `gangbridge render --scheduler kai` (one sub-group per
replicated job: the trainer's with its pod count, the initializer's with minMember 0, root
minSubGroup = all); its pods, created through serve's webhook as the API server would, carry
the annotation pod-group-name and the label kai.scheduler/subgroup-name of their replicated
job (the initializer's too) and KAI's scheduler name; when the TrainJob completes its
PodGroup is deleted.  A runtime without the grouper-skip annotation gets a
SchedulerGrouperNotSkipped Event.  A TrainJob whose KAI PodGroup someone else made is left
alone: the PodGroup is never changed or deleted and its pods are not bound.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (Env, Runner, fail, namespace, runtime, same_as_render,  # noqa: E402
                                trainjob)
from placement_helpers import admit  # noqa: E402

TJ_API = "trainer.kubeflow.org/v1alpha1"
KAI_API = "scheduling.run.ai/v2alpha2"
SKIP = {"kai.scheduler/skip-podgrouper": "true"}


def pod(jobset, ns, rjob, i):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "%s-%s-0-%d" % (jobset, rjob, i), "namespace": ns,
                         "labels": {"jobset.sigs.k8s.io/jobset-name": jobset,
                                    "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                                    "batch.kubernetes.io/job-completion-index": str(i)}},
            "spec": {"schedulerName": "default-scheduler",
                     "containers": [{"name": rjob, "image": "pytorch:1"}]}}


def create_through_webhook(env, ns, jobset, rjob, i):
    env.create(admit(env, pod(jobset, ns, rjob, i)))
    return env.get("v1", "Pod", ns, "%s-%s-0-%d" % (jobset, rjob, i))


def test_discovery(env):
    ns = "k-disc"
    env.create(namespace(ns))
    env.create(runtime("torch", ns, annotations=SKIP))
    env.create(trainjob("job", ns, "torch"))
    ev = env.wait(lambda: env.events(ns, "job", "PodGroupAPIMissing"), "PodGroupAPIMissing")
    if "podgroups.scheduling.run.ai/v2alpha2" not in ev[0].get("message", ""):
        fail("PodGroupAPIMissing does not name KAI's API: %r" % ev[0].get("message"))
    env.install("kai")
    env.wait(lambda: env.podgroup("kai", ns, "job"), "KAI PodGroup after its CRD", timeout=20)


def test_kai_gang(env):
    ns = "k-gang"
    env.create(namespace(ns))
    rt = env.create(runtime("torch-init", ns, initializer=True, annotations=SKIP))
    tj = env.create(trainjob("job", ns, "torch-init", num_nodes=3,
                             labels={"kai.scheduler/queue": "team-k"}))
    pg = env.wait(lambda: env.podgroup("kai", ns, "job"), "KAI PodGroup")
    problems = same_as_render(pg, env.render([rt, tj], "--scheduler", "kai")[0])
    if problems:
        fail("; ".join(problems))
    spec = pg["spec"]
    want = [{"minMember": 0, "name": "dataset-initializer"}, {"minMember": 3, "name": "node"}]
    if spec.get("subGroups") != want or spec.get("minSubGroup") != 2 or "minMember" in spec:
        fail("spec %r" % spec)
    if spec.get("queue") != "team-k":
        fail("queue %r" % spec.get("queue"))
    if env.events(ns, "job", "SchedulerGrouperNotSkipped"):
        fail("grouper warning although the runtime skips KAI's grouper")
    # Pods through the webhook: every pod joins, each to its replicated job's sub-group.
    for rjob, n in (("dataset-initializer", 1), ("node", 3)):
        for i in range(n):
            p = create_through_webhook(env, ns, "job", rjob, i)
            md = p["metadata"]
            if (md.get("annotations") or {}).get("pod-group-name") != "job":
                fail("%s: no pod-group-name annotation: %r" % (md["name"], md))
            if md["labels"].get("kai.scheduler/subgroup-name") != rjob:
                fail("%s: sub-group label %r" % (md["name"], md["labels"]))
            if p["spec"].get("schedulerName") != "kai-scheduler":
                fail("%s: schedulerName %r" % (md["name"], p["spec"].get("schedulerName")))
            if p["spec"].get("schedulingGates"):
                fail("%s gated without a placement policy" % md["name"])
    # Finish: the PodGroup goes.
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "JobSetCompleted", "message": "done",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, sub="/status")
    env.wait(lambda: env.podgroup("kai", ns, "job") is None, "KAI PodGroup deleted at finish")


def test_grouper_warning(env):
    ns = "k-warn"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch"))
    env.wait(lambda: env.podgroup("kai", ns, "job"), "KAI PodGroup")
    ev = env.wait(lambda: env.events(ns, "job", "SchedulerGrouperNotSkipped"),
                  "SchedulerGrouperNotSkipped Event")
    if "kai.scheduler/skip-podgrouper" not in ev[0].get("message", ""):
        fail("Event does not say what to add: %r" % ev[0])


def test_foreign_left_alone(env):
    ns = "k-foreign"
    env.create(namespace(ns))
    env.create(runtime("torch", ns, annotations=SKIP))
    before = env.create({"apiVersion": KAI_API, "kind": "PodGroup",
                         "metadata": {"name": "theirs", "namespace": ns},
                         "spec": {"minMember": 5, "queue": "other"}})
    env.create(trainjob("theirs", ns, "torch", num_nodes=2))
    env.wait(lambda: env.events(ns, "theirs", "PodGroupExists"), "PodGroupExists Event")
    p = create_through_webhook(env, ns, "theirs", "node", 0)
    labels, ann = p["metadata"]["labels"], p["metadata"].get("annotations") or {}
    if "pod-group-name" in ann or "kai.scheduler/subgroup-name" in labels:
        fail("a pod of a foreign-ganged TrainJob was bound: %r" % p["metadata"])
    env.merge_patch(TJ_API, "TrainJob", ns, "theirs", {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "JobSetCompleted", "message": "done",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, sub="/status")
    time.sleep(1.0)
    now = env.podgroup("kai", ns, "theirs")
    if now is None:
        fail("the foreign KAI PodGroup was deleted")
    if now["spec"] != before["spec"] or now["metadata"].get("labels") != \
            before["metadata"].get("labels"):
        fail("the foreign KAI PodGroup was changed: %r" % now)


def main():
    env = Env(crds=("trainer",))
    r = Runner()
    try:
        env.start_serve()
        r.run("KAI CRD appears: discovery", test_discovery, env)
        r.run("auto picks KAI; gang, pods, finish", test_kai_gang, env)
        r.run("grouper not skipped: Event", test_grouper_warning, env)
        r.run("foreign KAI PodGroup left alone", test_foreign_left_alone, env)
        r.run("clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
