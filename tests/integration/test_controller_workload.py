# SPDX-License-Identifier: Apache-2.0
"""End-to-end: `serve` on a cluster that serves the upstream Workload API (the stand-in with
--workload-api 1.37) leaves it alone while the backend is render/explain only: a Namespace
naming `workload` is not obeyed (the gang gets the configured backend's PodGroup), no Workload
is created, serve sends no request to scheduling.k8s.io at all, and `scheduling.backend:
workload` is refused at start with a message.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import GANGBRIDGE, Env, Runner, fail, namespace, runtime, trainjob  # noqa: E402


def test_namespace_workload_not_obeyed(env):
    ns = "w-ns"
    env.create(namespace(ns, annotations={"gangbridge.io/backend": "workload"}))
    env.create(runtime("torch", ns))
    env.create(trainjob("job", ns, "torch", num_nodes=2))
    env.wait(lambda: env.podgroup("volcano", ns, "job"), "Volcano PodGroup (auto)")
    stats = env.c.control("stats", method="GET")
    # The stand-in counts requests by resource name (read before this test lists them itself);
    # no other "workloads" are served here (Kueue's are not installed).
    touched = stats["resources"].get("workloads")
    if touched:
        fail("serve sent requests to the Workload API: %r" % (touched,))
    r = env.c.get("/apis/scheduling.k8s.io/v1beta1/workloads")
    if r.status != 200 or r.json["items"]:
        fail("Workloads after serve ran: %r" % (r,))


def test_config_refuses_workload(env):
    p = subprocess.run([GANGBRIDGE, "serve", "--kubeconfig", env.kubeconfig, "--set",
                        "scheduling.backend=workload"], capture_output=True, text=True, timeout=30)
    if p.returncode == 0 or "scheduling.backend" not in p.stderr:
        fail("serve accepted scheduling.backend=workload: exit %d, %s" % (p.returncode, p.stderr))


def main():
    env = Env(crds=("trainer", "volcano"), apiserver_args=("--workload-api", "1.37"))
    r = Runner()
    try:
        env.start_serve()
        r.run("Namespace backend workload not obeyed; no Workload API request",
              test_namespace_workload_not_obeyed, env)
        r.run("scheduling.backend: workload refused", test_config_refuses_workload, env)
        r.run("clean shutdown", env.stop_serve)
    finally:
        env.stop()
    r.exit()


if __name__ == "__main__":
    main()
