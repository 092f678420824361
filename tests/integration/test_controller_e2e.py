# SPDX-License-Identifier: Apache-2.0
"""End-to-end: `gangbridge serve` against the stand-in API server over real HTTP.

One server and one controller (Volcano and Trainer CRDs installed) run these scenarios,
each in its own namespace: create -> PodGroup equal to `gangbridge render` of the same
objects; a suspended update (numNodes, then a runtime change) is re-rendered; a running
PodGroup is left alone; Complete -> PodGroup deleted; a runtime created after its
TrainJob converges (RuntimeNotFound first); QueueNotFound and QueueClosed Events and the
namespace's default queue; a field taken by another manager gives a PodGroupConflict
Event and is not fought over; Trainer-served runtimes, managedBy and opt-out are left
alone; /metrics shows the work.  serve must exit 0 on SIGTERM.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import subprocess  # noqa: E402

from controller_helpers import (GANGBRIDGE, Env, Runner, fail, free_port, gang_pod,  # noqa: E402
                                namespace, runtime, same_as_render, trainjob)

TJ_API = "trainer.kubeflow.org/v1alpha1"


def setup_ns(env, ns, **kw):
    env.create(namespace(ns, **kw))


def test_create_equals_render(env):
    setup_ns(env, "e2e-create")
    rt = env.create(runtime("torch", "e2e-create", initializer=True))
    tj = env.create(trainjob("job", "e2e-create", "torch", num_nodes=3))
    pg = env.wait(lambda: env.podgroup("volcano", "e2e-create", "job"), "PodGroup")
    rendered = env.render([rt, tj])
    problems = same_as_render(pg, rendered[0])
    if problems:
        fail("; ".join(problems))
    if pg["spec"]["minMember"] != 3:
        fail("minMember %r" % pg["spec"]["minMember"])
    if pg["metadata"]["ownerReferences"][0]["uid"] != tj["metadata"]["uid"]:
        fail("ownerReference does not point at the TrainJob")
    # The initializer wave is left out of the gang: a GangScopeNarrowed Event says so.
    env.wait(lambda: env.events("e2e-create", "job", "GangScopeNarrowed"), "GangScopeNarrowed")
    # Created by POST (only when no PodGroup of that name exists), so recorded as an Update.
    mf = [f for f in pg["metadata"].get("managedFields", []) if f.get("manager") == "gangbridge"]
    if [f.get("operation") for f in mf] != ["Update"]:
        fail("want one Update entry for gangbridge's create: %r"
             % pg["metadata"].get("managedFields"))


def test_suspended_update_rerenders(env):
    ns = "e2e-suspend"
    setup_ns(env, ns)
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch", num_nodes=2, suspend=True))
    env.wait(lambda: (env.podgroup("volcano", ns, "job") or {}).get("spec", {}).get("minMember")
             == 2, "minMember 2")
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"trainer": {"numNodes": 5}}})
    env.wait(lambda: env.podgroup("volcano", ns, "job")["spec"]["minMember"] == 5,
             "re-render to minMember 5")
    # The update is a server-side apply; the fields gangbridge's own create recorded were
    # taken over, not fought over (no PodGroupConflict).
    mf = env.podgroup("volcano", ns, "job")["metadata"]["managedFields"]
    if "Apply" not in [f.get("operation") for f in mf if f.get("manager") == "gangbridge"]:
        fail("no Apply entry for gangbridge after the update: %r" % mf)
    if env.events(ns, "job", "PodGroupConflict"):
        fail("gangbridge reported a conflict with itself")
    # A runtime change reaches the PodGroup of a suspended TrainJob too.
    env.merge_patch(TJ_API, "TrainingRuntime", ns, "torch", {"spec": {"template": {
        "metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "gold"}}}}})
    env.wait(lambda: env.podgroup("volcano", ns, "job")["spec"].get("queue") == "gold",
             "queue from the runtime")
    tj = env.get(TJ_API, "TrainJob", ns, "job")
    rt = env.get(TJ_API, "TrainingRuntime", ns, "torch")
    problems = same_as_render(env.podgroup("volcano", ns, "job"), env.render([rt, tj])[0])
    if problems:
        fail("after updates: " + "; ".join(problems))


def test_running_left_alone(env):
    ns = "e2e-running"
    setup_ns(env, ns)
    env.create(runtime("torch", ns))
    # The gang's pods exist (made first, so the controller's pod cache has them): from now on
    # the PodGroup is left as it is.
    env.create(gang_pod("job-node-0-0", ns, "job"))
    env.create(trainjob("job", ns, "torch", num_nodes=2))
    env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup")
    # The scheduler reports the gang running.
    env.merge_patch("scheduling.volcano.sh/v1beta1", "PodGroup", ns, "job",
                    {"status": {"phase": "Running", "running": 2}})  # no status subresource
    env.wait(lambda: "gangbridge_podgroups{backend=\"volcano\",phase=\"Running\"} 1"
             in env.http_get("/metrics")[1], "Running in /metrics")
    env.merge_patch(TJ_API, "TrainingRuntime", ns, "torch", {"spec": {"template": {
        "metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "other"}}}}})
    time.sleep(1.5)
    if env.podgroup("volcano", ns, "job")["spec"].get("queue") == "other":
        fail("a running PodGroup was re-rendered")
    body = env.http_get("/metrics")[1]
    if ('gangbridge_gang_time_to_schedule_seconds_count{backend="volcano",queue="default",'
            'size="2-7"}') not in body:
        fail("no time-to-schedule observation in /metrics")


def test_complete_deletes(env):
    ns = "e2e-complete"
    setup_ns(env, ns)
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch"))
    env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup")
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "JobSetCompleted", "message": "done",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, sub="/status")
    env.wait(lambda: env.podgroup("volcano", ns, "job") is None, "PodGroup deleted")
    time.sleep(0.5)
    if env.podgroup("volcano", ns, "job") is not None:
        fail("PodGroup came back after Complete")


def test_runtime_late(env):
    ns = "e2e-late"
    setup_ns(env, ns)
    env.create(trainjob("job", ns, "late-rt", num_nodes=4))
    env.wait(lambda: env.events(ns, "job", "RuntimeNotFound"), "RuntimeNotFound Event")
    if env.podgroup("volcano", ns, "job") is not None:
        fail("PodGroup without a runtime")
    env.create(runtime("late-rt", ns))
    pg = env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup after the runtime")
    if pg["spec"]["minMember"] != 4:
        fail("minMember %r" % pg["spec"]["minMember"])


def test_queues(env):
    ns = "e2e-queue"
    setup_ns(env, ns, annotations={"scheduling.volcano.sh/queue-name": "closed-q"})
    q = env.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": "closed-q"}, "spec": {"weight": 1}})
    env.merge_patch("scheduling.volcano.sh/v1beta1", "Queue", None, q["metadata"]["name"],
                    {"status": {"state": "Closed"}}, sub="/status")
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch"))
    pg = env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup")
    if pg["spec"].get("queue") != "closed-q":
        fail("namespace default queue not used: %r" % pg["spec"])
    ev = env.wait(lambda: env.events(ns, "job", "QueueClosed"), "QueueClosed Event")
    if ev[0]["type"] != "Warning" or "closed-q" not in ev[0]["message"]:
        fail("QueueClosed event %r" % ev[0])
    # A TrainJob whose runtime names a queue that does not exist.
    env.create(runtime("torch-missing", ns,
                       annotations={"scheduling.volcano.sh/queue-name": "nope"}))
    env.create(trainjob("job2", ns, "torch-missing"))
    ev = env.wait(lambda: env.events(ns, "job2", "QueueNotFound"), "QueueNotFound Event")
    if '"nope"' not in ev[0]["message"]:
        fail("QueueNotFound message %r" % ev[0]["message"])
    # Reconciling again repeats the Event: the same Event's count goes up, no new object.
    env.merge_patch(TJ_API, "TrainJob", ns, "job2", {"metadata": {"labels": {"touch": "1"}}})
    env.wait(lambda: (env.events(ns, "job2", "QueueNotFound") or [{}])[0].get("count", 0) >= 2,
             "QueueNotFound count 2")
    if len(env.events(ns, "job2", "QueueNotFound")) != 1:
        fail("repeated Event created a second object: %r" % env.events(ns, "job2"))


def test_conflict_not_fought(env):
    ns = "e2e-conflict"
    setup_ns(env, ns)
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch", num_nodes=2, suspend=True))
    env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup")
    # Another manager takes spec.minMember by force.
    r = env.c.apply("/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/job" % ns,
                    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": "job", "namespace": ns}, "spec": {"minMember": 99}},
                    manager="someone-else", force=True)
    if r.status != 200:
        fail("other manager's apply: %r" % r)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"trainer": {"numNodes": 3}}})
    ev = env.wait(lambda: env.events(ns, "job", "PodGroupConflict"), "PodGroupConflict Event")
    if "someone-else" not in ev[0]["message"]:
        fail("conflict message does not name the other manager: %r" % ev[0]["message"])
    time.sleep(1.5)
    pg = env.podgroup("volcano", ns, "job")
    if pg["spec"]["minMember"] != 99:
        fail("gangbridge fought over minMember: %r" % pg["spec"]["minMember"])
    applies = [f for f in pg["metadata"]["managedFields"] if f.get("manager") == "gangbridge"]
    if not applies:
        fail("gangbridge lost all its fields")


def test_left_alone(env):
    ns = "e2e-skip"
    setup_ns(env, ns)
    env.create(runtime("trainer-policy", ns, policy={"coscheduling": {"scheduleTimeoutSeconds": 60}}))
    env.create(runtime("torch", ns))
    env.create(trainjob("by-trainer", ns, "trainer-policy"))
    mk = trainjob("multikueue", ns, "torch")
    mk["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    env.create(mk)
    env.create(trainjob("opted-out", ns, "torch", labels={"gangbridge.io/enabled": "false"}))
    env.create(trainjob("marker", ns, "torch"))
    env.wait(lambda: env.podgroup("volcano", ns, "marker"), "PodGroup of the marker TrainJob")
    time.sleep(0.5)
    for name in ("by-trainer", "multikueue", "opted-out"):
        for b in ("volcano",):
            if env.podgroup(b, ns, name) is not None:
                fail("%s got a PodGroup" % name)


def test_metrics(env):
    code, body = env.http_get("/metrics")
    if code != 200:
        fail("/metrics %d" % code)
    # The watch event of each PodGroup gangbridge wrote is not reconciled again.
    for want in ('gangbridge_reconciles_total{result="success"}',
                 'gangbridge_reconciles_total{result="skipped"}',
                 'gangbridge_reconciles_total{result="unchanged"}',
                 'gangbridge_podgroups{backend="volcano",phase="None"}',
                 'gangbridge_api_request_duration_seconds_count{verb="PATCH",resource="all",code="200"}',
                 "gangbridge_workqueue_depth 0"):
        if want not in body:
            fail("/metrics lacks %s" % want)
    if env.http_get("/healthz") != (200, "ok"):
        fail("/healthz")


def test_grpc(env, port):
    out = subprocess.run([GANGBRIDGE, "call", "health", "--addr", "127.0.0.1:%d" % port],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0 or "SERVING" not in out.stdout:
        fail("gRPC health on the controller's server: %d %r %r"
             % (out.returncode, out.stdout, out.stderr))


def main():
    env = Env(crds=("trainer", "volcano"))
    r = Runner()
    grpc_port = free_port()
    try:
        env.start_serve(["--grpc-addr", "127.0.0.1:%d" % grpc_port])
        r.run("gRPC served alongside", test_grpc, env, grpc_port)
        r.run("create equals render", test_create_equals_render, env)
        r.run("suspended update re-renders", test_suspended_update_rerenders, env)
        r.run("running PodGroup left alone", test_running_left_alone, env)
        r.run("Complete deletes the PodGroup", test_complete_deletes, env)
        r.run("runtime created late converges", test_runtime_late, env)
        r.run("queue missing/closed Events", test_queues, env)
        r.run("409 conflict: Event, no fight", test_conflict_not_fought, env)
        r.run("not ours: left alone", test_left_alone, env)
        r.run("metrics and health", test_metrics, env)
        r.run("clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
