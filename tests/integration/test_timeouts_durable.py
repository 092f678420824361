# SPDX-License-Identifier: Apache-2.0
"""End-to-end: gang timeouts platform teams can trust (issue 18), on the stand-in API server.

- restart: a gang that started (its pods scheduled, gangbridge records
  `gangbridge.io/started-at` on its own PodGroup) whose pods JobSet then replaced (new
  unscheduled pods, PodGroup phase back to Inqueue), then `serve` restarted and the leader
  changed, long after the gang's deadline: the TrainJob's resourceVersion does not change and
  no GangTimeout is recorded.  The controller's later server-side apply of the PodGroup
  (manager gangbridge) keeps the fact and sees no drift (no PodGroupOutdated).
- tamper: a far-future `gangbridge.io/requeue-resume-at` written by the tenant on its running
  TrainJob does not switch the timeout off (GangTimeout, requeue, RequeueStateIgnored); an
  attempt counter rewritten beyond maxAttempts is not believed (the next timeout gives up);
  the resume time removed while suspended is resumed at the end of the backoff anyway.
- maximum: a Namespace's `gangbridge.io/schedule-timeout-max` and config `timeouts.max` clamp
  a tenant's 720h timeout, with a TimeoutClamped Warning naming the sources.
- Kueue: the queue label alone exempts nothing (the TrainJob is requeued); a Kueue Workload
  owned by the TrainJob (Kueue's API served) does.
- counting: a timeout is counted once over the replicas, also when leadership moves right
  after it (the leader is stopped with SIGSTOP, not restarted, so both counts stay visible);
  a resume is counted under its PodGroup's labels.
- until ready: with `timeouts.until: ready` a gang whose pods are scheduled but not Ready times
  out, and the Event says so.
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (Env, Runner, fail, gang_pod, namespace,  # noqa: E402
                                runtime, trainjob)
from test_timeouts_e2e import Replica, wait_leader  # noqa: E402
import kubeclient  # noqa: E402

TJ_API = "trainer.kubeflow.org/v1alpha1"
PG_API = "scheduling.volcano.sh/v1beta1"
POLICY = "gangbridge.io/schedule-timeout"
POLICY_MAX = "gangbridge.io/schedule-timeout-max"
STARTED = "gangbridge.io/started-at"
TIMED_OUT = "gangbridge.io/timed-out-at"
ATTEMPT = "gangbridge.io/requeue-attempt"
BY = "gangbridge.io/requeued-by"
RESUME_AT = "gangbridge.io/requeue-resume-at"
WL_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "workloads.kueue.x-k8s.io"},
    "spec": {"group": "kueue.x-k8s.io", "scope": "Namespaced",
             "names": {"plural": "workloads", "singular": "workload", "kind": "Workload",
                       "listKind": "WorkloadList"},
             "versions": [{"name": "v1beta1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
REQUEUE = ["--set", "timeouts.action=requeue", "--set", "timeouts.requeue.baseDelay=1s",
           "--set", "timeouts.requeue.maxDelay=2s", "--set", "timeouts.requeue.maxAttempts=2",
           "--set", "timeouts.max=1h", "--set", "scheduling.discoveryInterval=2s",
           "--set", "controller.queueMaxDelay=1s"]


def now_ts():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def ann(env, api, kind, ns, name):
    o = env.get(api, kind, ns, name)
    return (o["metadata"].get("annotations") or {}) if o else {}


def setup_job(env, ns, timeout, labels=None, tj_ann=None, ns_ann=None):
    env.create(namespace(ns, annotations=ns_ann))
    env.create(runtime("torch", ns))
    tj = trainjob("job", ns, "torch", num_nodes=2, labels=labels)
    tj["metadata"]["annotations"] = dict({POLICY: timeout}, **(tj_ann or {}))
    env.create(tj)
    return env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup %s/job" % ns)


def scheduled_pods(env, ns, n, ready=False):
    for i in range(n):
        env.create(gang_pod("job-node-0-%d" % i, ns, "job"))
        conds = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now_ts()}]
        if ready:
            conds.append({"type": "Ready", "status": "True", "lastTransitionTime": now_ts()})
        env.merge_patch("v1", "Pod", ns, "job-node-0-%d" % i, {"status": {"conditions": conds}},
                        sub="/status")


def pg_status_sub(env):
    """Volcano's PodGroup CRD as vendored has no status subresource: status is written on the
    object itself, as Volcano's scheduler does there."""
    r = env.c.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                  "podgroups.scheduling.volcano.sh")
    v = [x for x in r.json["spec"]["versions"] if x["name"] == "v1beta1"][0]
    return "/status" if "status" in (v.get("subresources") or {}) else ""


def gang_timeouts(env, ns):
    return [e for e in env.events(ns, "job", "GangTimeout")
            if e["involvedObject"]["kind"] == "TrainJob"]


def counter(metrics, name, **labels):
    total = 0.0
    for line in metrics.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all('%s="%s"' % kv in line for kv in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


# ---- restart: a started gang is never acted on again ---------------------------------------

def restart_started_gang(env, replicas):
    ns = "d-restart"
    pg = setup_job(env, ns, "3s")
    created = pg["metadata"]["creationTimestamp"]
    scheduled_pods(env, ns, 2)
    a = env.wait(lambda: ann(env, PG_API, "PodGroup", ns, "job").get(STARTED),
                 "the started fact on the PodGroup", 20)
    print("    %s=%s (PodGroup created %s)" % (STARTED, a, created))
    # JobSet replaces the pods: new ones, not scheduled; Volcano puts the group back to Inqueue.
    for i in range(2):
        env.delete("v1", "Pod", ns, "job-node-0-%d" % i)
    for i in range(2):
        env.create(gang_pod("job-node-1-%d" % i, ns, "job"))
    env.merge_patch(PG_API, "PodGroup", ns, "job", {"status": {"phase": "Inqueue"}},
                    sub=pg_status_sub(env))
    rv = env.get(TJ_API, "TrainJob", ns, "job")["metadata"]["resourceVersion"]
    pg_rv = env.get(PG_API, "PodGroup", ns, "job")["metadata"]["resourceVersion"]
    # serve restarted and a leader change, all long after creation + 3 s.
    leader = wait_leader(replicas)
    replicas.append(Replica(env, "r3", REQUEUE))
    leader.stop()
    replicas.remove(leader)
    leader = wait_leader(replicas)
    replicas.append(Replica(env, "r4", REQUEUE))
    leader.stop()
    replicas.remove(leader)
    wait_leader(replicas)
    time.sleep(5)  # a deadline long past would be acted on within milliseconds
    now_rv = env.get(TJ_API, "TrainJob", ns, "job")["metadata"]["resourceVersion"]
    print("    TrainJob resourceVersion %s before, %s after the restart and leader changes"
          % (rv, now_rv))
    if now_rv != rv:
        fail("the started gang's TrainJob was written: %r" % env.get(TJ_API, "TrainJob", ns, "job"))
    if gang_timeouts(env, ns):
        fail("a started gang got GangTimeout: %r" % gang_timeouts(env, ns))
    # The controller's apply kept the fact and saw no drift.
    pg = env.get(PG_API, "PodGroup", ns, "job")
    if pg["metadata"]["annotations"].get(STARTED) != a:
        fail("the started fact was lost: %r" % pg["metadata"])
    if env.events(ns, "job", "PodGroupOutdated"):
        fail("the fact was seen as drift: %r" % env.events(ns, "job", "PodGroupOutdated"))
    print("    PodGroup resourceVersion %s -> %s; managers %s" % (
        pg_rv, pg["metadata"]["resourceVersion"],
        sorted({(m["manager"], m["operation"]) for m in pg["metadata"]["managedFields"]})))


def apply_keeps_fact(env):
    """A re-render (the runtime changes while the TrainJob is suspended: the controller applies
    the PodGroup again with manager gangbridge) keeps gangbridge-timeouts' annotation."""
    ns = "d-restart"
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"suspend": True}})
    for i in range(2):
        env.delete("v1", "Pod", ns, "job-node-1-%d" % i)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"spec": {"trainer": {"numNodes": 3}}})
    env.wait(lambda: env.podgroup("volcano", ns, "job")["spec"]["minMember"] == 3,
             "the PodGroup re-applied with minMember 3", 20)
    pg = env.podgroup("volcano", ns, "job")
    if STARTED not in pg["metadata"]["annotations"]:
        fail("the controller's apply removed %s: %r" % (STARTED, pg["metadata"]))


# ---- tampering ----------------------------------------------------------------------------

def tamper_far_future(env):
    ns = "d-future"
    setup_job(env, ns, "2s", tj_ann={RESUME_AT: "2099-01-01T00:00:00Z", BY: "gangbridge",
                                      ATTEMPT: "0"})
    env.wait(lambda: ann(env, TJ_API, "TrainJob", ns, "job").get(ATTEMPT) == "1",
             "the requeue despite the far-future resume time", 25)
    if not gang_timeouts(env, ns):
        fail("no GangTimeout")
    if not env.events(ns, "job", "RequeueStateIgnored"):
        fail("no RequeueStateIgnored Event")
    print("    " + env.events(ns, "job", "RequeueStateIgnored")[0]["message"])


def tamper_attempt(env):
    ns = "d-attempt"
    setup_job(env, ns, "2s")
    env.wait(lambda: env.get(TJ_API, "TrainJob", ns, "job")["spec"].get("suspend"),
             "the first requeue", 25)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"metadata": {"annotations": {ATTEMPT: "99"}}})
    env.wait(lambda: [e for e in env.events(ns, "job", "RequeueStateIgnored")
                      if "99 is more than" in e["message"]], "RequeueStateIgnored for 99", 20)
    # Resumed (the rewritten counter blocks nothing), then the next timeout gives up: 99 is
    # taken as maxAttempts (2), not as a reason to stop counting.
    env.wait(lambda: [e for e in env.events(ns, "job", "GangRequeueGaveUp")
                      if e["involvedObject"]["kind"] == "TrainJob"], "gave up", 30)
    if not env.events(ns, "job", "GangResumed"):
        fail("never resumed")


def tamper_removed(env):
    ns = "d-removed"
    setup_job(env, ns, "2s")
    env.wait(lambda: RESUME_AT in ann(env, TJ_API, "TrainJob", ns, "job") and
             env.get(TJ_API, "TrainJob", ns, "job")["spec"].get("suspend"), "the first requeue", 25)
    env.merge_patch(TJ_API, "TrainJob", ns, "job", {"metadata": {"annotations": {RESUME_AT: None}}})
    env.wait(lambda: [e for e in env.events(ns, "job", "RequeueStateIgnored")
                      if "is missing" in e["message"]], "RequeueStateIgnored for the removal", 20)
    env.wait(lambda: env.events(ns, "job", "GangResumed"), "resumed anyway", 90)


# ---- the platform's maximum -----------------------------------------------------------------

def platform_max(env):
    ns = "d-max"
    pg = setup_job(env, ns, "720h", ns_ann={POLICY_MAX: "3s"})
    env.wait(lambda: env.podgroup("volcano", ns, "job")["metadata"]["annotations"].get(POLICY)
             == "3s", "the clamped timeout on the PodGroup", 20)
    ev = env.wait(lambda: env.events(ns, "job", "TimeoutClamped"), "TimeoutClamped", 20)
    msg = ev[0]["message"]
    print("    " + msg)
    for part in ("720h0m0s", "3s", "Namespace d-max: metadata.annotations[%s]" % POLICY_MAX):
        if part not in msg:
            fail("TimeoutClamped lacks %r: %s" % (part, msg))
    if ev[0]["type"] != "Warning":
        fail("TimeoutClamped is not a Warning")
    env.wait(lambda: gang_timeouts(env, ns), "GangTimeout at the clamped timeout", 20)
    # config timeouts.max (1h here) clamps where no Namespace or Queue sets one.
    ns = "d-max-config"
    setup_job(env, ns, "720h")
    env.wait(lambda: env.podgroup("volcano", ns, "job")["metadata"]["annotations"].get(POLICY)
             == "1h0m0s", "the timeout clamped to config timeouts.max", 20)
    ev = env.wait(lambda: env.events(ns, "job", "TimeoutClamped"), "TimeoutClamped", 20)
    if "config timeouts.max" not in ev[0]["message"]:
        fail("TimeoutClamped does not name config timeouts.max: %s" % ev[0]["message"])
    return pg


# ---- Kueue --------------------------------------------------------------------------------

def install_kueue(env):
    """Kueue's Workload API (a minimal CRD: the test needs only that it is served).  Installed
    first: gangbridge caches discovery answers for 30 s."""
    r = env.c.apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    "workloads.kueue.x-k8s.io", WL_CRD, manager="kubectl", force=False)
    if r.status not in (200, 201):
        fail("install the Workload CRD: %r" % r)


def kueue(env):
    label = {"kueue.x-k8s.io/queue-name": "team"}
    setup_job(env, "d-kueue-label", "2s", labels=label)
    # Kueue really manages this one: its Workload is owned by the TrainJob.
    ns = "d-kueue"
    kueue_job(env, ns, 2, "2s")
    rv = env.get(TJ_API, "TrainJob", ns, "job")["metadata"]["resourceVersion"]
    env.wait(lambda: ann(env, TJ_API, "TrainJob", "d-kueue-label", "job").get(ATTEMPT) == "1",
             "the queue label alone exempts nothing: requeued", 25)
    ev = env.wait(lambda: gang_timeouts(env, ns), "GangTimeout on the Kueue TrainJob", 25)
    if "Kueue" not in ev[0]["message"] or "Workload" not in ev[0]["message"]:
        fail("GangTimeout does not say Kueue's Workload: %s" % ev[0]["message"])
    if env.get(TJ_API, "TrainJob", ns, "job")["metadata"]["resourceVersion"] != rv:
        fail("the Kueue-managed TrainJob was written")


def kueue_job(env, ns, nodes, timeout):
    """A TrainJob Kueue really manages: a Workload owned by it exists."""
    env.create(namespace(ns))
    env.create(runtime("torch", ns))
    tj = trainjob("job", ns, "torch", num_nodes=nodes, labels={"kueue.x-k8s.io/queue-name": "team"})
    tj["metadata"]["annotations"] = {POLICY: timeout}
    uid = env.create(tj)["metadata"]["uid"]
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
          "metadata": {"name": "trainjob-job-1a2b3", "namespace": ns,
                       "labels": {"kueue.x-k8s.io/job-uid": uid},
                       "ownerReferences": [{"apiVersion": TJ_API, "kind": "TrainJob",
                                            "name": "job", "uid": uid, "controller": True,
                                            "blockOwnerDeletion": True}]},
          "spec": {"queueName": "team", "podSets": []}}
    r = env.c.post("/apis/kueue.x-k8s.io/v1beta1/namespaces/%s/workloads" % ns, wl)
    if r.status != 201:
        fail("create the Workload: %r" % r)


def counted_once(env, replicas):
    """A timeout is counted once over the replicas, also when leadership moves right after it
    (before: the new leader, which had not acted on it itself, counted it again).  The gang is
    the only one of size class 1 and Kueue-managed, so it has exactly one timeout."""
    ns = "d-count"
    kueue_job(env, ns, 1, "2s")
    env.wait(lambda: gang_timeouts(env, ns), "GangTimeout of the counted gang", 20)
    leader = wait_leader(replicas)
    os.kill(leader.proc.pid, signal.SIGSTOP)  # leadership moves without a restart
    try:
        others = [r for r in replicas if r is not leader]
        if not kubeclient.wait_for(lambda: any(r.leader() for r in others), 30, 0.1):
            fail("no new leader")
        time.sleep(3)
    finally:
        os.kill(leader.proc.pid, signal.SIGCONT)
    time.sleep(2)
    per = [counter(Env.http_get(None, "/metrics", r.port)[1], "gangbridge_gang_timeouts_total",
                   size="1") for r in replicas]
    print("    the size-1 gang's timeout counted per replica: %s" % per)
    if sum(per) != 1:
        fail("counted %g times over the replicas, want 1" % sum(per))


def test_durable(env):
    install_kueue(env)
    replicas = [Replica(env, "r1", REQUEUE), Replica(env, "r2", REQUEUE)]
    try:
        wait_leader(replicas)
        restart_started_gang(env, replicas)
        apply_keeps_fact(env)
        tamper_far_future(env)
        tamper_attempt(env)
        tamper_removed(env)
        platform_max(env)
        kueue(env)
        counted_once(env, replicas)
        for r in replicas:
            m = Env.http_get(None, "/metrics", r.port)[1]
            for line in m.splitlines():
                if line.startswith("gangbridge_gang_requeues_total{") and 'action="resume"' in line:
                    print("    %s: %s" % (r.log_path.rsplit("/", 1)[1], line))
                    if 'backend="volcano"' not in line or 'size="2-7"' not in line:
                        fail("a resume counted under other labels: %s" % line)
    except Exception:
        for r in replicas:
            with open(r.log_path) as fh:
                print("--- %s ---\n%s" % (r.log_path, fh.read()[-6000:]))
        raise
    finally:
        for r in replicas:
            r.stop()


def test_until_ready(env):
    ns = "d-ready"
    setup_job(env, ns, "3s")
    scheduled_pods(env, ns, 2, ready=False)
    ev = env.wait(lambda: gang_timeouts(env, ns), "GangTimeout for pods never ready", 20)
    if "did not become ready" not in ev[0]["message"]:
        fail("the Event does not name readiness: %s" % ev[0]["message"])
    m = env.http_get("/metrics")[1]
    if counter(m, "gangbridge_gang_timeouts_total", phase="ready") < 1 or \
            counter(m, "gangbridge_gang_timeouts_total", phase="scheduled") != 0:
        fail("no timeout counted with phase ready:\n%s" % "\n".join(
            l for l in m.splitlines() if "gang_timeouts" in l))


def main():
    r = Runner()
    env = Env()
    try:
        r.run("durable facts, tampering, maximum, Kueue", test_durable, env)
        env.start_serve(["--set", "timeouts.until=ready", "--set", "timeouts.action=event"])
        r.run("until ready", test_until_ready, env)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
