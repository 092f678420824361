#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The stand-in serves the upstream Workload API (scheduling.k8s.io) as built-in resources of
one Kubernetes release at a time (--workload-api, /_control/workload-api), as a cluster with the
GenericWorkload gate on does: discovery lists only that release's version; the objects
gangbridge renders for it are accepted and the other versions' shapes refused (schemas of
tests/apiserver/builtin); switching 1.36 -> 1.37 serves v1beta1 instead and drops the v1alpha2
objects (the release note asks operators to delete them first); and a pod's scheduling group
field cannot change once the pod exists, gated or not."""
import os
import subprocess
import sys
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kubeclient import ApiServerProcess, Client  # noqa: E402

SRC = os.environ.get("GB_SRC", os.path.dirname(os.path.dirname(HERE)))
BIN = os.environ.get("GANGBRIDGE", os.path.join(SRC, "build", "gangbridge"))
INPUTS = os.path.join(SRC, "tests", "golden", "inputs")
MERGE = "application/merge-patch+json"


def rendered(version):
    p = subprocess.run([BIN, "render", "--scheduler", "workload", "--api-version", version,
                        "-f", os.path.join(INPUTS, "upstream", "runtimes"),
                        "-f", os.path.join(INPUTS, "trainjobs", "torchtune-1b.yaml")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def path(obj, plural=None):
    v = obj["apiVersion"]
    plural = plural or obj["kind"].lower() + "s"
    return "/apis/%s/namespaces/%s/%s" % (v, obj["metadata"]["namespace"], plural)


class WorkloadApi(unittest.TestCase):
    def start(self, *args):
        srv = ApiServerProcess(*args)
        self.addCleanup(srv.stop)
        c = Client(srv.url)
        self.addCleanup(c.close)
        return c

    def served(self, c):
        r = c.get("/apis")
        return {v["version"] for g in r.json["groups"] if g["name"] == "scheduling.k8s.io"
                for v in g["versions"]}

    def test_gate_off_by_default(self):
        c = self.start()
        self.assertEqual(self.served(c), set())
        self.assertEqual(c.get("/apis/scheduling.k8s.io/v1beta1").status, 404)

    def test_release_136_then_137(self):
        c = self.start("--workload-api", "1.36")
        self.assertEqual(self.served(c), {"v1alpha2"})
        res = {r["name"] for r in c.get("/apis/scheduling.k8s.io/v1alpha2").json["resources"]}
        self.assertTrue({"workloads", "podgroups"} <= res, res)
        self.assertEqual(c.get("/apis/scheduling.k8s.io/v1beta1").status, 404)
        # What gangbridge renders for 1.36 is accepted whole (no field dropped).
        for obj in rendered("v1alpha2"):
            r = c.post(path(obj) + "?fieldValidation=Strict", obj)
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.json["spec"], obj["spec"])
        # 1.37's shapes are not 1.36's.
        beta_pg = [o for o in rendered("v1beta1") if o["kind"] == "PodGroup"][0]
        beta_pg = dict(beta_pg, apiVersion="scheduling.k8s.io/v1alpha2",
                       metadata=dict(beta_pg["metadata"], name="other-gang"))
        r = c.post(path(beta_pg) + "?fieldValidation=Strict", beta_pg)
        self.assertEqual(r.status, 422, r)  # 1.37's disruptionMode union is 1.36's string
        self.assertIn("spec.disruptionMode", r.json["message"])
        beta_pg["spec"] = {k: v for k, v in beta_pg["spec"].items() if k != "disruptionMode"}
        r = c.post(path(beta_pg) + "?fieldValidation=Strict", beta_pg)
        self.assertEqual(r.status, 400, r)
        self.assertIn('unknown field "spec.workloadRef"', r.json["message"])
        # The upgrade: v1beta1 served, v1alpha2 gone with its objects.
        self.assertEqual(c.control("workload-api", {"release": "1.37"})["release"], "1.37")
        self.assertEqual(self.served(c), {"v1beta1"})
        self.assertEqual(c.get("/apis/scheduling.k8s.io/v1alpha2").status, 404)
        lst = c.get("/apis/scheduling.k8s.io/v1beta1/workloads").json
        self.assertEqual(lst["items"], [])
        for obj in rendered("v1beta1"):
            r = c.post(path(obj) + "?fieldValidation=Strict", obj)
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.json["spec"], obj["spec"])
        r = c.request("POST", "/_control/workload-api", {"release": "1.38"})
        self.assertEqual(r.status, 400, r)

    def test_fields_validated(self):
        c = self.start("--workload-api", "1.37")
        pg = [o for o in rendered("v1beta1") if o["kind"] == "PodGroup"][0]
        for i, (spec, field) in enumerate((
                ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "spec.schedulingPolicy.gang.minCount"),
                ({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}}, "spec.schedulingPolicy"),
                ({"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {}},
                 "spec.disruptionMode"))):
            bad = dict(pg, metadata=dict(pg["metadata"], name="bad-%d" % i), spec=spec)
            r = c.post(path(bad), bad)
            self.assertEqual(r.status, 422, r)
            self.assertIn(field, [x["field"] for x in r.json["details"]["causes"]], r.json)

    def test_pod_group_field_immutable(self):
        c = self.start("--workload-api", "1.37")
        for gates in ([], [{"name": "gangbridge.io/placement"}]):
            name = "p-%d" % len(gates)
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": "default"},
                   "spec": {"containers": [{"name": "c", "image": "busybox:1"}],
                            "schedulingGates": gates,
                            "schedulingGroup": {"podGroupName": "tj-gang"}}}
            self.assertEqual(c.post("/api/v1/namespaces/default/pods", pod).status, 201)
            p = "/api/v1/namespaces/default/pods/" + name
            for change in ({"schedulingGroup": {"podGroupName": "other"}},
                           {"schedulingGroup": None}):
                r = c.patch(p, {"spec": change}, MERGE)
                self.assertEqual(r.status, 422, r)
            # Nor can a pod created without one gain one.
            bare = dict(pod, metadata={"name": name + "-bare", "namespace": "default"},
                        spec=dict(pod["spec"]))
            del bare["spec"]["schedulingGroup"]
            self.assertEqual(c.post("/api/v1/namespaces/default/pods", bare).status, 201)
            r = c.patch(p + "-bare", {"spec": {"schedulingGroup": {"podGroupName": "x"}}}, MERGE)
            self.assertEqual(r.status, 422, r)


if __name__ == "__main__":
    unittest.main()
