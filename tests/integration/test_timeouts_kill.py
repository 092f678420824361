# SPDX-License-Identifier: Apache-2.0
"""Gang timeouts under SIGKILL: the requeue cycle and the started fact survive a replica killed at
random moments, with two replicas answering at once (issue 18; docs/timeouts.md).

For each seed (GB_TIMEOUT_KILL_SEEDS, default 3; the seeds and outcomes are printed): two
replicas under leader election with `timeouts.action: requeue` (backoff 1 s..2 s, 2 attempts);
three never-scheduled gangs with a 2 s timeout and one gang that started.  While the requeue
cycles run, a replica (the leader, mostly) is killed with SIGKILL at random moments and a new one
is started (six times per seed, 1 to 4 s apart).  A watch on every TrainJob records each
version; afterwards:

- every TrainJob went through exactly: suspend (attempt 1), resume, suspend (attempt 2),
  resume, suspend for good (attempt 2, no resume time): no repeated or skipped attempt, no
  suspend of a suspended TrainJob, no resume before its resume time;
- the started gang's TrainJob was never written and got no GangTimeout.
"""

import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import Env, Runner, fail, gang_pod, namespace, runtime, trainjob  # noqa: E402
from test_timeouts_e2e import Replica  # noqa: E402

TJ_API = "trainer.kubeflow.org/v1alpha1"
PG_API = "scheduling.volcano.sh/v1beta1"
ATTEMPT = "gangbridge.io/requeue-attempt"
BY = "gangbridge.io/requeued-by"
RESUME_AT = "gangbridge.io/requeue-resume-at"
REQUEUE = ["--set", "timeouts.action=requeue", "--set", "timeouts.requeue.baseDelay=1s",
           "--set", "timeouts.requeue.maxDelay=2s", "--set", "timeouts.requeue.maxAttempts=2",
           "--set", "scheduling.discoveryInterval=2s", "--set", "controller.queueMaxDelay=1s"]


def rfc3339(ts):
    return time.mktime(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


class Watch(threading.Thread):
    """Every version of the TrainJobs of one namespace prefix, in order, with the time seen."""

    def __init__(self, env, prefix):
        super().__init__(daemon=True)
        self.env, self.prefix, self.stop, self.seen = env, prefix, False, {}

    def run(self):
        w = self.env.c.watch("/apis/trainer.kubeflow.org/v1alpha1/trainjobs?watch=1&"
                             "timeoutSeconds=600", timeout=610)
        while not self.stop:
            ev = w.next_event()
            if ev is None:
                break
            o = ev["object"]
            if not o["metadata"]["namespace"].startswith(self.prefix):
                continue
            a = o["metadata"].get("annotations") or {}
            self.seen.setdefault(o["metadata"]["namespace"], []).append(
                (time.time(), bool(o["spec"].get("suspend")), a.get(ATTEMPT), a.get(BY),
                 a.get(RESUME_AT), o["metadata"]["resourceVersion"]))
        w.close()


def check_cycle(ns, states):
    """The states of one TrainJob make exactly the cycle of 2 requeues and a give-up."""
    steps, prev = [], None
    for st in states:
        if prev is not None and st[1] != prev[1]:
            if st[1]:
                steps.append(("suspend", st[2], st[4] is not None))
            else:
                steps.append(("resume", st[2], None))
                resume_at = prev[4]
                if resume_at is not None and st[0] < rfc3339(resume_at) - 1.0:
                    fail("%s resumed at %.1f, before its resume time %s" % (ns, st[0], resume_at))
        prev = st
    want = [("suspend", "1", True), ("resume", "1", None), ("suspend", "2", True),
            ("resume", "2", None), ("suspend", "2", False)]
    if steps != want:
        fail("%s: cycle %r, want %r" % (ns, steps, want))
    last = states[-1]
    if not last[1] or last[3] != "gangbridge" or last[4] is not None:
        fail("%s: not given up at the end: %r" % (ns, last))


class Killable(Replica):
    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()


def one_seed(env, seed):
    rng = random.Random(seed)
    prefix = "k%d-" % seed
    w = Watch(env, prefix)
    w.start()
    time.sleep(0.3)
    replicas = [Killable(env, "s%d-a" % seed, REQUEUE), Killable(env, "s%d-b" % seed, REQUEUE)]
    kills = 0
    try:
        started = prefix + "started"
        env.create(namespace(started))
        env.create(runtime("torch", started))
        for i in range(2):
            env.create(gang_pod("job-node-0-%d" % i, started, "job"))
            env.merge_patch("v1", "Pod", started, "job-node-0-%d" % i, {"status": {"conditions": [
                {"type": "PodScheduled", "status": "True",
                 "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}},
                sub="/status")
        jobs = [prefix + "j%d" % i for i in range(3)]
        for ns in [started] + jobs:
            if ns != started:
                env.create(namespace(ns))
                env.create(runtime("torch", ns))
            tj = trainjob("job", ns, "torch", num_nodes=2)
            tj["metadata"]["annotations"] = {"gangbridge.io/schedule-timeout": "2s"}
            env.create(tj)
        started_rv = None

        def given_up(ns):
            o = env.get(TJ_API, "TrainJob", ns, "job")
            a = o["metadata"].get("annotations") or {}
            return o["spec"].get("suspend") and a.get(BY) and RESUME_AT not in a \
                and a.get(ATTEMPT) == "2"

        deadline = time.time() + 120
        while not all(given_up(ns) for ns in jobs):
            if time.time() > deadline:
                fail("seed %d: not every TrainJob gave up within 120 s: %r" % (seed, {
                    ns: (env.get(TJ_API, "TrainJob", ns, "job")["metadata"].get("annotations"))
                    for ns in jobs}))
            if started_rv is None and env.get(PG_API, "PodGroup", started, "job"):
                started_rv = env.get(TJ_API, "TrainJob", started, "job")["metadata"]["resourceVersion"]
            time.sleep(rng.uniform(1.0, 4.0))
            if kills >= 6:
                continue  # enough: let the cycles finish
            # Mostly the leader, sometimes the standby; a new replica replaces it at once.
            leaders = [r for r in replicas if r.leader()]
            victim = leaders[0] if leaders and rng.random() < 0.8 else rng.choice(replicas)
            victim.kill()
            replicas.remove(victim)
            kills += 1
            replicas.append(Killable(env, "s%d-%d" % (seed, kills), REQUEUE))
        time.sleep(3)  # longer than a backoff and a timeout: nothing more happens
        w.stop = True
        for ns in jobs:
            check_cycle(ns, w.seen.get(ns, []))
        rv = env.get(TJ_API, "TrainJob", started, "job")["metadata"]["resourceVersion"]
        if started_rv is None or rv != started_rv:
            fail("seed %d: the started gang's TrainJob was written (%s -> %s)" % (seed, started_rv, rv))
        if env.events(started, "job", "GangTimeout"):
            fail("seed %d: the started gang got GangTimeout" % seed)
        print("    seed %d: %d SIGKILLs; 3 TrainJobs: suspend 1, resume, suspend 2, resume, "
              "give up, each exactly once; the started gang untouched" % (seed, kills))
    finally:
        for r in replicas:
            r.kill()


def test_kill(env):
    n = int(os.environ.get("GB_TIMEOUT_KILL_SEEDS", "3"))
    for seed in range(1, n + 1):
        one_seed(env, seed)


def main():
    r = Runner()
    env = Env()
    try:
        r.run("requeue cycle under SIGKILL", test_kill, env)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
