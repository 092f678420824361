# SPDX-License-Identifier: Apache-2.0
"""End-to-end: the controller never touches the wrong gang.

- A runtime edited under a Pending gang whose pods exist leaves its PodGroup unchanged and
  says so (Event PodGroupOutdated, on the TrainJob and the PodGroup); suspending the
  TrainJob, or the pods going away, lets the change apply.
- A same-name PodGroup that gangbridge did not create is untouched (no label, no
  ownerReference, same resourceVersion) through create, finish and delete of the TrainJob,
  with an Event PodGroupExists.
- A backend switch (Namespace annotation) while the gang's pods exist keeps the old
  PodGroup; once the pods are gone the old one is deleted and the new one created: never
  two PodGroups for one TrainJob.
- A runtime with podGroupPolicy leaves a Normal Event; PodGroups carry the JobSet and
  TrainJob name labels; Events are not duplicated across a controller restart.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (Env, Runner, fail, gang_pod, namespace, runtime,  # noqa: E402
                                trainjob)

TJ_API = "trainer.kubeflow.org/v1alpha1"
VC_API = "scheduling.volcano.sh/v1beta1"


def min_member(env, backend, ns, name):
    return ((env.podgroup(backend, ns, name) or {}).get("spec") or {}).get("minMember")


def runtime_sized(env, ns, name):
    """A TrainJob without trainer.numNodes: the runtime's mlPolicy.numNodes sizes it."""
    tj = trainjob(name, ns, "torch")
    del tj["spec"]["trainer"]["numNodes"]
    return env.create(tj)


def test_outdated_while_pods_exist(env):
    ns = "s-outdated"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    # The JobSets have their pods while the groups are Pending.  The pods are made first so
    # that the controller's pod cache has them before the runtime changes (its caches are
    # watched independently).
    env.create(gang_pod("job-node-0-0", ns, "job"))
    env.create(gang_pod("job2-node-0-0", ns, "job2"))
    runtime_sized(env, ns, "job")
    runtime_sized(env, ns, "job2")
    for name in ("job", "job2"):
        env.wait(lambda: min_member(env, "volcano", ns, name) == 1, "%s minMember 1" % name)
    before = env.podgroup("volcano", ns, "job")
    env.merge_patch(TJ_API, "TrainingRuntime", ns, "torch", {"spec": {"mlPolicy": {"numNodes": 3}}})
    ev = env.wait(lambda: len(env.events(ns, "job", "PodGroupOutdated")) == 2 and
                  env.events(ns, "job", "PodGroupOutdated"), "PodGroupOutdated")
    msgs = " ".join(e["message"] for e in ev)
    if "spec.minMember: 1 -> 3" not in msgs or "suspend" not in msgs:
        fail("PodGroupOutdated does not say what differs and how: %r" % msgs)
    kinds = sorted(e["involvedObject"]["kind"] for e in ev)
    if kinds != ["PodGroup", "TrainJob"]:
        fail("PodGroupOutdated posted on %r, want the TrainJob and the PodGroup" % kinds)
    time.sleep(1.0)
    after = env.podgroup("volcano", ns, "job")
    if after["spec"] != before["spec"] or \
            after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]:
        fail("the PodGroup of a gang with pods was changed: %r -> %r"
             % (before["spec"], after["spec"]))
    # Suspending the TrainJob lets the change apply.
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": True}})
    env.wait(lambda: min_member(env, "volcano", ns, "job") == 3, "applied after suspend")
    env.wait(lambda: env.events(ns, "job", "PodGroupUpdated"), "PodGroupUpdated Event")
    # So does the gang's pods going away.
    if min_member(env, "volcano", ns, "job2") != 1:
        fail("job2 changed while its pod exists")
    env.delete("v1", "Pod", ns, "job2-node-0-0")
    env.wait(lambda: min_member(env, "volcano", ns, "job2") == 3, "applied after the pods went")


def untouched(env, ns, before):
    pg = env.podgroup("volcano", ns, "mine")
    if pg is None:
        fail("the foreign PodGroup was deleted")
    md = pg["metadata"]
    if md["resourceVersion"] != before["metadata"]["resourceVersion"] or \
            md.get("labels") or md.get("ownerReferences") or pg["spec"] != before["spec"]:
        fail("the foreign PodGroup was changed: %r" % pg)


def test_foreign_podgroup(env):
    ns = "s-foreign"
    env.create(namespace(ns))
    # With an initializer wave, a PodGroup gangbridge made would say GangScopeNarrowed.
    env.create(runtime("torch", ns, initializer=True))
    before = env.create({"apiVersion": VC_API, "kind": "PodGroup",
                         "metadata": {"name": "mine", "namespace": ns},
                         "spec": {"minMember": 7, "queue": "default"}})
    env.create(trainjob("mine", ns, "torch", num_nodes=2))
    ev = env.wait(lambda: env.events(ns, "mine", "PodGroupExists"), "PodGroupExists Event")
    if not any(e["involvedObject"]["kind"] == "TrainJob" for e in ev):
        fail("PodGroupExists not posted on the TrainJob: %r" % ev)
    time.sleep(1.0)
    untouched(env, ns, before)
    if env.events(ns, "mine", "GangScopeNarrowed") or env.events(ns, "mine", "PodGroupCreated"):
        fail("Events claim gangbridge made the PodGroup")
    env.merge_patch(TJ_API, "TrainJob", ns, "mine", {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "JobSetCompleted", "message": "done",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, sub="/status")
    time.sleep(1.0)
    untouched(env, ns, before)
    env.delete(TJ_API, "TrainJob", ns, "mine")
    time.sleep(1.0)
    untouched(env, ns, before)


def both_backends(env, ns, name):
    return env.podgroup("volcano", ns, name) is not None and \
        env.podgroup("coscheduling", ns, name) is not None


def test_backend_switch(env):
    ns = "s-switch"
    env.create(namespace(ns, annotations={"gangbridge.io/backend": "coscheduling"}))
    env.create(runtime("torch", ns))
    env.create(gang_pod("sw-node-0-0", ns, "sw", backend="coscheduling"))
    env.create(trainjob("sw", ns, "torch", num_nodes=1))
    env.wait(lambda: env.podgroup("coscheduling", ns, "sw"), "coscheduling PodGroup")
    env.merge_patch("v1", "Namespace", None, ns,
                    {"metadata": {"annotations": {"gangbridge.io/backend": "volcano"}}})
    ev = env.wait(lambda: env.events(ns, "sw", "PodGroupOutdated"), "PodGroupOutdated (backend)")
    if "backend coscheduling -> volcano" not in ev[0]["message"]:
        fail("PodGroupOutdated does not name the backend change: %r" % ev[0]["message"])
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        if env.podgroup("volcano", ns, "sw") is not None:
            fail("a second PodGroup in the new backend while the pods exist")
        time.sleep(0.1)
    if env.podgroup("coscheduling", ns, "sw") is None:
        fail("the PodGroup the pods reference was deleted")
    env.delete("v1", "Pod", ns, "sw-node-0-0")

    def switched():
        if both_backends(env, ns, "sw"):
            fail("two PodGroups for one TrainJob")
        return env.podgroup("volcano", ns, "sw") is not None
    env.wait(switched, "Volcano PodGroup after the pods went")
    if env.podgroup("coscheduling", ns, "sw") is not None:
        fail("old PodGroup left behind")
    if not env.events(ns, "sw", "PodGroupDeleted"):
        fail("no PodGroupDeleted Event")


def test_labels_and_policy_event(env):
    ns = "s-labels"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    env.create(runtime("by-trainer", ns, policy={"coscheduling": {"scheduleTimeoutSeconds": 60}}))
    env.create(trainjob("lab", ns, "torch"))
    env.create(trainjob("tp", ns, "by-trainer"))
    env.wait(lambda: env.podgroup("volcano", ns, "lab"), "PodGroup")
    for sel in ("jobset.sigs.k8s.io/jobset-name=lab", "trainer.kubeflow.org/trainjob-name=lab"):
        r = env.c.get("/apis/%s/namespaces/%s/podgroups?labelSelector=%s" % (VC_API, ns, sel))
        names = [i["metadata"]["name"] for i in r.json["items"]]
        if names != ["lab"]:
            fail("podgroups -l %s: %r" % (sel, names))
    ev = env.wait(lambda: env.events(ns, "tp", "TrainerManagesPodGroup"),
                  "TrainerManagesPodGroup Event")
    if ev[0]["type"] != "Normal" or "Trainer creates" not in ev[0]["message"]:
        fail("policy Event: %r" % ev[0])
    created = env.wait(lambda: env.events(ns, "lab", "PodGroupCreated"), "PodGroupCreated Event")
    if [e["involvedObject"]["kind"] for e in created] != ["TrainJob"] or \
            created[0]["type"] != "Normal":
        fail("PodGroupCreated: one Normal Event on the TrainJob: %r" % created)


def event_names(env, nss):
    out = set()
    for ns in nss:
        r = env.c.get("/api/v1/namespaces/%s/events" % ns)
        out |= {(e["metadata"]["name"], e["reason"]) for e in r.json["items"]}
    return out


def test_no_duplicate_events_after_restart(env):
    nss = ("s-outdated", "s-foreign", "s-switch", "s-labels")
    before = event_names(env, nss)
    env.stop_serve()
    env.start_serve()
    # Every TrainJob is reconciled again after the restart; wait until that has happened.
    env.wait(lambda: 'gangbridge_reconciles_total{' in env.http_get("/metrics")[1],
             "reconciles after the restart")
    time.sleep(2.0)
    after = event_names(env, nss)
    new = sorted(after - before)
    if new:
        fail("Events re-posted after a restart: %r" % new)


def main():
    env = Env(crds=("trainer", "volcano", "coscheduling"))
    r = Runner()
    try:
        env.start_serve()
        r.run("outdated while pods exist", test_outdated_while_pods_exist, env)
        r.run("foreign PodGroup untouched", test_foreign_podgroup, env)
        r.run("backend switch waits for pods", test_backend_switch, env)
        r.run("labels and podGroupPolicy Event", test_labels_and_policy_event, env)
        r.run("no duplicate Events after restart", test_no_duplicate_events_after_restart, env)
        r.run("clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
