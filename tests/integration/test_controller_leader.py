# SPDX-License-Identifier: Apache-2.0
"""End-to-end: two `gangbridge serve` replicas with leader election on a Lease.

Both replicas run with client-go's timings (15 s lease, 10 s renew deadline, 2 s retry).
Exactly one holds the Lease; only it writes (the standby's log shows no apply and its
/metrics shows gangbridge_leader 0); both are ready.  The leader is killed with SIGKILL
(no release): the standby takes over once the lease expires, re-queues every TrainJob and
creates the PodGroup of a TrainJob made meanwhile.  The handover time is printed.  The new
leader stops with SIGTERM, releases the Lease (holderIdentity cleared) and exits 0.
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (GANGBRIDGE, Env, Runner, fail, free_port, namespace,  # noqa: E402
                                runtime, trainjob)
import kubeclient  # noqa: E402

LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/gangbridge"


class Replica:
    def __init__(self, env, name):
        self.name = name
        self.port = free_port()
        self.log_path = os.path.join(env.tmp, "serve-%s.log" % name)
        self.log = open(self.log_path, "w")
        e = dict(os.environ, POD_NAME=name, POD_NAMESPACE="default")
        self.proc = subprocess.Popen(
            [GANGBRIDGE, "serve", "--kubeconfig", env.kubeconfig, "--leader-elect",
             "--http-addr", "127.0.0.1:%d" % self.port, "--webhook-addr", "",
             "--log-level", "debug", "--set", "events.minInterval=0s"],
            stdout=self.log, stderr=subprocess.STDOUT, env=e)

    def metrics(self):
        env_get = Env.http_get
        return env_get(None, "/metrics", self.port)[1]

    def ready(self):
        return Env.http_get(None, "/readyz", self.port) == (200, "ok")

    def text(self):
        with open(self.log_path) as fh:
            return fh.read()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def holder(env):
    r = env.c.get(LEASE)
    return r.json["spec"].get("holderIdentity", "") if r.status == 200 else None


def main():
    env = Env(crds=("trainer", "volcano"))
    r = Runner()
    reps = []
    try:
        env.create(namespace("lead"))
        env.create(runtime("torch", "lead"))
        reps = [Replica(env, "replica-a"), Replica(env, "replica-b")]
        state = {}

        def one_leader():
            h = holder(env)
            if h not in ("replica-a", "replica-b"):
                fail("lease holder %r" % h)
            state["leader"] = next(x for x in reps if x.name == h)
            state["standby"] = next(x for x in reps if x.name != h)

        def test_single_writer():
            env.wait(lambda: holder(env) in ("replica-a", "replica-b"), "a lease holder", 30)
            env.wait(lambda: all(x.ready() for x in reps), "both replicas ready", 30)
            one_leader()
            env.create(trainjob("first", "lead", "torch"))
            env.wait(lambda: env.podgroup("volcano", "lead", "first"), "PodGroup by the leader")
            time.sleep(1)
            lead, standby = state["leader"], state["standby"]
            def applies(rep):
                return [ln for ln in rep.text().splitlines()
                        if "msg=reconciled" in ln and "action=apply" in ln]
            if not applies(lead):
                fail("the leader logged no apply")
            if applies(standby):
                fail("the standby applied: %s" % applies(standby))
            if "not the leader: no writes" not in standby.text():
                fail("the standby never reconciled (nothing proves it held back)")
            if "gangbridge_leader 1" not in lead.metrics():
                fail("leader gauge not 1 on the leader")
            if "gangbridge_leader 0" not in standby.metrics():
                fail("leader gauge not 0 on the standby")

        def test_handover():
            lead, standby = state["leader"], state["standby"]
            lead.stop(signal.SIGKILL)
            t0 = time.monotonic()
            env.create(trainjob("second", "lead", "torch"))
            env.wait(lambda: holder(env) == standby.name, "the standby taking the lease", 40)
            env.wait(lambda: env.podgroup("volcano", "lead", "second"),
                     "PodGroup by the new leader", 20)
            print("     handover: new leader wrote %.1fs after the old one was killed"
                  % (time.monotonic() - t0))

        def test_release():
            standby = state["standby"]
            rc = standby.stop()
            if rc != 0:
                fail("new leader exited %s:\n%s" % (rc, standby.text()[-3000:]))
            if holder(env) != "":
                fail("lease not released: holder %r" % holder(env))

        r.run("one leader writes, standby does not", test_single_writer)
        r.run("leader killed: standby takes over", test_handover)
        r.run("clean stop releases the lease", test_release)
    finally:
        for x in reps:
            x.stop(signal.SIGKILL)
        env.stop()
    r.exit()


if __name__ == "__main__":
    _ = kubeclient
    main()
