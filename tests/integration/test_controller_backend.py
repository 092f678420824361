# SPDX-License-Identifier: Apache-2.0
"""End-to-end: backend choice and selection modes of `gangbridge serve`.

Only the coscheduling PodGroup CRD is installed at first: `scheduling.backend: auto` gives
a coscheduling PodGroup equal to `gangbridge render --scheduler coscheduling`.  Then the
Volcano CRDs are applied: the CRD watch re-runs discovery at once, the not-yet-running
gang moves to a Volcano PodGroup and its coscheduling PodGroup is deleted.  Namespace
policy annotations (gangbridge.io/backend, gangbridge.io/gang-scope) override the config.
Finally serve restarts in optIn and namespaceSelector modes and only selected TrainJobs get
PodGroups.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (Env, Runner, fail, namespace, runtime, same_as_render,  # noqa: E402
                                trainjob)

TJ_API = "trainer.kubeflow.org/v1alpha1"


def test_cosched_when_no_volcano(env):
    ns = "b-cos"
    env.create(namespace(ns))
    rt = env.create(runtime("torch", ns))
    tj = env.create(trainjob("job", ns, "torch", num_nodes=3))
    pg = env.wait(lambda: env.podgroup("coscheduling", ns, "job"), "coscheduling PodGroup")
    problems = same_as_render(pg, env.render([rt, tj], "--scheduler", "coscheduling")[0])
    if problems:
        fail("; ".join(problems))
    env.wait(lambda: 'gangbridge_podgroups{backend="coscheduling",phase="None"} 1'
             in env.http_get("/metrics")[1], "coscheduling PodGroup in /metrics")


def test_volcano_appears(env):
    ns = "b-cos"
    env.install("volcano")
    pg = env.wait(lambda: env.podgroup("volcano", ns, "job"), "Volcano PodGroup after the CRD",
                  timeout=20)
    if pg["spec"]["minMember"] != 3:
        fail("minMember %r" % pg["spec"]["minMember"])
    env.wait(lambda: env.podgroup("coscheduling", ns, "job") is None,
             "stale coscheduling PodGroup deleted")
    env.create(trainjob("job2", ns, "torch"))
    env.wait(lambda: env.podgroup("volcano", ns, "job2"), "Volcano PodGroup for a new TrainJob")


def test_namespace_policy(env):
    ns = "b-policy"
    env.create(namespace(ns, annotations={"gangbridge.io/backend": "coscheduling",
                                          "gangbridge.io/gang-scope": "all"}))
    env.create(runtime("torch-init", ns, initializer=True))
    env.create(trainjob("job", ns, "torch-init", num_nodes=2))
    pg = env.wait(lambda: env.podgroup("coscheduling", ns, "job"), "coscheduling by annotation")
    # gang-scope all counts the initializer too (1 + 2 pods).
    if pg["spec"]["minMember"] != 3:
        fail("gang-scope all: minMember %r" % pg["spec"]["minMember"])
    if env.podgroup("volcano", ns, "job") is not None:
        fail("a Volcano PodGroup too")


def test_opt_in(env):
    env.stop_serve()
    env.start_serve(["--selection", "optIn"])
    ns = "b-optin"
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    env.create(trainjob("plain", ns, "torch"))
    env.create(trainjob("in", ns, "torch", labels={"gangbridge.io/enabled": "true"}))
    env.wait(lambda: env.podgroup("volcano", ns, "in"), "PodGroup of the opted-in TrainJob")
    time.sleep(0.5)
    if env.podgroup("volcano", ns, "plain") is not None:
        fail("a TrainJob without the opt-in label got a PodGroup")


def test_namespace_selector(env):
    env.stop_serve()
    env.start_serve(["--selection", "namespaceSelector", "--namespace-selector", "gang=yes"])
    for ns, labels in (("b-sel-yes", {"gang": "yes"}), ("b-sel-no", {"gang": "no"})):
        env.create(namespace(ns, labels=labels))
        env.create(runtime("torch", ns))
        env.create(trainjob("job", ns, "torch"))
    env.wait(lambda: env.podgroup("volcano", "b-sel-yes", "job"), "PodGroup in selected ns")
    time.sleep(0.5)
    if env.podgroup("volcano", "b-sel-no", "job") is not None:
        fail("a TrainJob in an unselected namespace got a PodGroup")
    # Labelling the namespace brings its TrainJobs in.
    env.merge_patch("v1", "Namespace", None, "b-sel-no", {"metadata": {"labels": {"gang": "yes"}}})
    env.wait(lambda: env.podgroup("volcano", "b-sel-no", "job"), "PodGroup after relabel")


def test_watch_namespaces(env):
    """kube.watchNamespaces: the namespaced kinds are listed and watched in those namespaces
    only (a Role each in deploy/namespaced/), one cache for the controller: a TrainJob of a
    watched namespace gets its PodGroup, one elsewhere is not even seen; the cluster-scoped
    reads (a ClusterTrainingRuntime) still work."""
    env.stop_serve()
    env.start_serve(["--selection", "unmanaged", "--set", "kube.watchNamespaces=b-w-one,b-w-two"])
    env.create(runtime("torch-c"))
    for ns in ("b-w-one", "b-w-two", "b-w-off"):
        env.create(namespace(ns))
        env.create(runtime("torch", ns))
        env.create(trainjob("job", ns, "torch"))
    env.create(trainjob("job-c", "b-w-two", "torch-c", kind="ClusterTrainingRuntime"))
    for ns, name in (("b-w-one", "job"), ("b-w-two", "job"), ("b-w-two", "job-c")):
        env.wait(lambda: env.podgroup("volcano", ns, name), "PodGroup %s/%s" % (ns, name))
    time.sleep(1.0)
    if env.podgroup("volcano", "b-w-off", "job") is not None:
        fail("a TrainJob in a namespace that is not watched got a PodGroup")
    log = env.serve_log()
    if "b-w-off" in log:
        fail("serve saw the unwatched namespace's TrainJob:\n" + log[-2000:])


def main():
    env = Env(crds=("trainer", "coscheduling"))
    r = Runner()
    try:
        env.start_serve()
        r.run("auto without Volcano: coscheduling", test_cosched_when_no_volcano, env)
        r.run("Volcano CRD appears: switch", test_volcano_appears, env)
        r.run("namespace backend/scope policy", test_namespace_policy, env)
        r.run("selection optIn", test_opt_in, env)
        r.run("selection namespaceSelector", test_namespace_selector, env)
        r.run("kube.watchNamespaces", test_watch_namespaces, env)
        r.run("clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
