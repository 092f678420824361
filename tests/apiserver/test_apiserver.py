# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the stand-in Kubernetes API server (tests/apiserver/run)."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeclient import (ApiServerProcess, Client, crd_path, install_crd,  # noqa: E402
                        wait_for)

TJ = "/apis/trainer.kubeflow.org/v1alpha1"
VC = "/apis/scheduling.volcano.sh/v1beta1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def trainjob(name, ns="default", nodes=2, labels=None, **extra):
    o = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
         "metadata": {"name": name, "namespace": ns},
         "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": nodes}}}
    if labels:
        o["metadata"]["labels"] = labels
    o.update(extra)
    return o


def podgroup(name, ns="default", min_member=2, owner=None, queue=None):
    o = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": min_member}}
    if queue:
        o["spec"]["queue"] = queue
    if owner is not None:
        o["metadata"]["ownerReferences"] = [{
            "apiVersion": owner["apiVersion"], "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    return o


def tj_path(ns="default", name=None, sub=None):
    p = "%s/namespaces/%s/trainjobs" % (TJ, ns)
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


def pg_path(ns="default", name=None):
    p = "%s/namespaces/%s/podgroups" % (VC, ns)
    return p + "/" + name if name else p


class ServerCase(unittest.TestCase):
    """One server per test class, with the Trainer and Volcano CRDs installed."""

    args = ()
    crds = True

    @classmethod
    def setUpClass(cls):
        cls.srv = ApiServerProcess(*cls.args)
        cls.c = Client(cls.srv.url)
        if cls.crds:
            for d, f in (("trainer", "trainer.kubeflow.org_trainjobs.yaml"),
                         ("trainer", "trainer.kubeflow.org_clustertrainingruntimes.yaml"),
                         ("volcano", "scheduling.volcano.sh_podgroups.yaml"),
                         ("volcano", "scheduling.volcano.sh_queues.yaml")):
                install_crd(cls.c, crd_path(d, f))

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.srv.stop()

    def setUp(self):
        self.c.control("faults", method="DELETE")

    def create(self, path, obj, code=201):
        r = self.c.post(path, obj)
        self.assertEqual(r.status, code, r)
        return r.json

    def status_of(self, r, code, reason):
        self.assertEqual(r.status, code, r)
        st = r.json
        self.assertEqual(st["kind"], "Status")
        self.assertEqual(st["apiVersion"], "v1")
        self.assertEqual(st["status"], "Failure")
        self.assertEqual(st["code"], code)
        self.assertEqual(st["reason"], reason)
        return st

    def rv(self):
        return int(self.c.get(tj_path()).json["metadata"]["resourceVersion"])


class TestDiscovery(ServerCase):
    crds = False

    def test_core_and_builtin_groups(self):
        r = self.c.get("/api")
        self.assertEqual(r.json["versions"], ["v1"])
        res = {x["name"]: x for x in self.c.get("/api/v1").json["resources"]}
        for name in ("namespaces", "events", "pods", "nodes", "configmaps", "secrets"):
            self.assertIn(name, res)
        self.assertFalse(res["namespaces"]["namespaced"])
        self.assertTrue(res["pods"]["namespaced"])
        self.assertIn("pods/status", res)
        self.assertIn("watch", res["pods"]["verbs"])
        groups = {g["name"] for g in self.c.get("/apis").json["groups"]}
        self.assertIn("coordination.k8s.io", groups)
        self.assertIn("apiextensions.k8s.io", groups)
        self.assertEqual(self.c.get("/apis/coordination.k8s.io").json["preferredVersion"]
                         ["groupVersion"], "coordination.k8s.io/v1")
        leases = self.c.get("/apis/coordination.k8s.io/v1").json["resources"]
        self.assertEqual(leases[0]["kind"], "Lease")
        self.assertEqual(self.c.get("/version").json["major"], "1")

    def test_openapi_v2_protobuf(self):
        # kubectl 1.20 asks for the v2 document in protobuf only; a 406 makes it fail.
        pb = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        r = self.c.get("/openapi/v2", headers={"Accept": pb})
        self.assertEqual(r.status, 200, r)
        # Without the "@", which Go's mime parser (client-go) rejects.
        self.assertEqual(r.header("Content-Type"),
                         "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        # protoc decodes it on its own: openapi.v2.Document fields 1 swagger, 2 info
        # (1 title, 2 version), 8 paths, 9 definitions.
        raw = subprocess.run(["protoc", "--decode_raw"], input=r.body, capture_output=True,
                             check=True).stdout.decode()
        self.assertEqual(raw.split(), ['1:', '"2.0"', '2', '{', '1:', '"Kubernetes"', '2:',
                                       '"v1.32.4-gangbridge-standin"', '}', '8:', '""', '9:',
                                       '""'])
        j = self.c.get("/openapi/v2", headers={"Accept": "application/json"})
        self.assertEqual(j.status, 200, j)
        self.assertEqual(j.json["swagger"], "2.0")
        self.assertEqual(j.json["definitions"], {})

    def test_crd_appears_and_disappears(self):
        self.assertNotIn("trainer.kubeflow.org",
                         {g["name"] for g in self.c.get("/apis").json["groups"]})
        self.assertEqual(self.c.get(tj_path()).status, 404)
        install_crd(self.c, crd_path("trainer", "trainer.kubeflow.org_trainjobs.yaml"))
        install_crd(self.c, crd_path("volcano", "scheduling.volcano.sh_podgroups.yaml"))
        self.assertIn("trainer.kubeflow.org",
                      {g["name"] for g in self.c.get("/apis").json["groups"]})
        res = {x["name"]: x for x in self.c.get(TJ).json["resources"]}
        self.assertEqual(res["trainjobs"]["kind"], "TrainJob")
        self.assertTrue(res["trainjobs"]["namespaced"])
        self.assertIn("trainjobs/status", res)
        pg = {x["name"]: x for x in self.c.get(VC).json["resources"]}
        self.assertEqual(pg["podgroups"]["shortNames"], ["pg", "podgroup-v1beta1"])
        self.assertNotIn("podgroups/status", pg)    # the Volcano CRD declares no subresource
        crd = self.c.get(CRDS + "/trainjobs.trainer.kubeflow.org").json
        conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        self.assertEqual(conds, {"NamesAccepted": "True", "Established": "True"})
        self.create(tj_path(), trainjob("a"))
        root = self.c.get("/openapi/v3").json
        self.assertIn("apis/trainer.kubeflow.org/v1alpha1", root["paths"])
        doc = self.c.get(root["paths"]["apis/trainer.kubeflow.org/v1alpha1"]
                         ["serverRelativeURL"]).json
        item = doc["paths"][TJ + "/namespaces/{namespace}/trainjobs/{name}"]
        self.assertIn("fieldValidation", [p["name"] for p in item["patch"]["parameters"]])
        rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
        w = self.c.watch(tj_path() + "?watch=1&timeoutSeconds=30&resourceVersion=" + rv)
        r = self.c.delete(CRDS + "/trainjobs.trainer.kubeflow.org")
        self.assertEqual(r.status, 200, r)
        evs = w.events_until(lambda e: False)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("DELETED", "a")])
        self.assertTrue(w.ended)                    # the watch ends with its kind
        w.close()
        self.assertNotIn("trainer.kubeflow.org",
                         {g["name"] for g in self.c.get("/apis").json["groups"]})
        self.assertEqual(self.c.get(tj_path(name="a")).status, 404)
        self.assertEqual(self.c.get(TJ).status, 404)


class TestErrors(ServerCase):
    def test_not_found(self):
        st = self.status_of(self.c.get(tj_path(name="nope")), 404, "NotFound")
        self.assertEqual(st["message"], 'trainjobs.trainer.kubeflow.org "nope" not found')
        self.assertEqual(st["details"], {"name": "nope", "group": "trainer.kubeflow.org",
                                         "kind": "trainjobs"})
        st = self.status_of(self.c.get("/api/v1/namespaces/default/pods/p"), 404, "NotFound")
        self.assertEqual(st["message"], 'pods "p" not found')
        st = self.status_of(self.c.get("/apis/nothing.io/v1/things"), 404, "NotFound")
        self.assertEqual(st["message"], "the server could not find the requested resource")

    def test_namespace_must_exist(self):
        st = self.status_of(self.c.post(tj_path("ghost"), trainjob("a", "ghost")), 404,
                            "NotFound")
        self.assertEqual(st["message"], 'namespaces "ghost" not found')

    def test_already_exists(self):
        self.create(tj_path(), trainjob("dup"))
        st = self.status_of(self.c.post(tj_path(), trainjob("dup")), 409, "AlreadyExists")
        self.assertEqual(st["message"], 'trainjobs.trainer.kubeflow.org "dup" already exists')

    def test_update_conflict(self):
        o = self.create(tj_path(), trainjob("upd"))
        o["spec"]["trainer"]["numNodes"] = 3
        r = self.c.put(tj_path(name="upd"), o)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["metadata"]["generation"], 2)
        o["spec"]["trainer"]["numNodes"] = 4          # stale resourceVersion
        st = self.status_of(self.c.put(tj_path(name="upd"), o), 409, "Conflict")
        self.assertEqual(st["message"], 'Operation cannot be fulfilled on '
                         'trainjobs.trainer.kubeflow.org "upd": the object has been modified; '
                         'please apply your changes to the latest version and try again')
        del o["metadata"]["resourceVersion"]
        st = self.status_of(self.c.put(tj_path(name="upd"), o), 422, "Invalid")
        self.assertIn("metadata.resourceVersion", st["message"])
        self.status_of(self.c.put(tj_path(name="missing"), trainjob("missing")), 404, "NotFound")

    def test_invalid(self):
        o = trainjob("x")
        del o["metadata"]["name"]
        st = self.status_of(self.c.post(tj_path(), o), 422, "Invalid")
        self.assertEqual(st["message"], 'TrainJob.trainer.kubeflow.org "" is invalid: '
                         'metadata.name: Required value: name or generateName is required')
        st = self.status_of(self.c.post(tj_path(), trainjob("Bad_Name")), 422, "Invalid")
        self.assertIn("RFC 1123", st["message"])
        o = trainjob("typed")
        o["spec"]["trainer"]["numNodes"] = "three"
        st = self.status_of(self.c.post(tj_path(), o), 422, "Invalid")
        self.assertEqual(st["details"]["causes"][0]["field"], "spec.trainer.numNodes")
        self.assertIn("must be of type integer", st["message"])
        o = trainjob("req")
        del o["spec"]["runtimeRef"]
        st = self.status_of(self.c.post(tj_path(), o), 422, "Invalid")
        self.assertIn("spec.runtimeRef: Required value", st["message"])
        o = trainjob("lbl", labels={"app": "not valid!"})
        self.status_of(self.c.post(tj_path(), o), 422, "Invalid")

    def test_unknown_fields(self):
        o = trainjob("unk")
        o["spec"]["bogus"] = 1
        r = self.c.post(tj_path() + "?fieldValidation=Strict", o)
        st = self.status_of(r, 400, "BadRequest")
        self.assertIn('unknown field "spec.bogus"', st["message"])
        r = self.c.post(tj_path(), o)
        self.assertEqual(r.status, 201)
        self.assertIn('unknown field \\"spec.bogus\\"', r.header("Warning"))
        self.assertNotIn("bogus", r.json["spec"])       # pruned as the real server does

    def test_media_types_and_methods(self):
        r = self.c.post(tj_path(), b"\x6b\x38\x73\x00", ctype="application/vnd.kubernetes.protobuf")
        st = self.status_of(r, 415, "UnsupportedMediaType")
        self.assertIn("application/json", st["message"])
        self.create(tj_path(), trainjob("smp"))
        r = self.c.patch(tj_path(name="smp"), {"spec": {}},
                         "application/strategic-merge-patch+json")
        self.status_of(r, 415, "UnsupportedMediaType")
        self.status_of(self.c.post(tj_path(name="smp"), trainjob("smp")), 405,
                       "MethodNotAllowed")
        r = self.c.get(tj_path(), headers={"Accept": "application/vnd.kubernetes.protobuf"})
        self.status_of(r, 406, "NotAcceptable")
        r = self.c.post(tj_path(), b"{not json", ctype="application/json")
        self.status_of(r, 400, "BadRequest")
        yml = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
               "  name: from-yaml\nspec:\n  runtimeRef:\n    name: x\n")
        r = self.c.post(tj_path(), yml, ctype="application/yaml")
        self.assertEqual(r.status, 201, r)

    def test_delete_preconditions(self):
        o = self.create(tj_path(), trainjob("pre"))
        r = self.c.delete(tj_path(name="pre"), {"preconditions": {"uid": "other"}})
        st = self.status_of(r, 409, "Conflict")
        self.assertIn("Precondition failed: UID in precondition: other", st["message"])
        r = self.c.delete(tj_path(name="pre"), {"preconditions": {"resourceVersion": "1"}})
        self.status_of(r, 409, "Conflict")
        r = self.c.delete(tj_path(name="pre"), {"preconditions": {
            "uid": o["metadata"]["uid"], "resourceVersion": o["metadata"]["resourceVersion"]}})
        self.assertEqual(r.status, 200, r)
        self.status_of(self.c.delete(tj_path(name="pre")), 404, "NotFound")


class TestWrites(ServerCase):
    def test_schema_defaults(self):
        a = self.create(tj_path(), trainjob("dflt"))
        self.assertEqual(a["spec"]["managedBy"], "trainer.kubeflow.org/trainjob-controller")
        self.assertEqual(a["spec"]["runtimeRef"]["kind"], "ClusterTrainingRuntime")
        self.assertIs(a["spec"]["suspend"], False)
        # Defaults come from the request's decoding, so the creating manager owns them.
        fv = a["metadata"]["managedFields"][0]["fieldsV1"]
        self.assertIn("f:managedBy", fv["f:spec"])
        r = self.c.apply(pg_path(name="dflt"), podgroup("dflt"), manager="gb")
        self.assertEqual(r.json["spec"]["queue"], "default")
        self.assertNotIn("f:queue", r.json["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"])

    def test_schema_defaults_can_be_disabled(self):
        self.c.control("settings", {"schema_defaults": False})
        try:
            a = self.create(tj_path(), trainjob("nodflt"))
            self.assertNotIn("managedBy", a["spec"])
        finally:
            self.c.control("settings", {"schema_defaults": True})
        self.assertIn("managedBy", self.create(tj_path(), trainjob("dflt2"))["spec"])

    def test_metadata_and_rv(self):
        a = self.create(tj_path(), trainjob("m1"))
        b = self.create(tj_path(), trainjob("m2"))
        m = a["metadata"]
        self.assertTrue(m["uid"])
        self.assertRegex(m["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(m["generation"], 1)
        self.assertIsInstance(m["resourceVersion"], str)
        self.assertGreater(int(b["metadata"]["resourceVersion"]), int(m["resourceVersion"]))
        got = self.c.get(tj_path(name="m1")).json
        self.assertEqual(got, a)
        # Metadata-only changes do not bump generation.
        r = self.c.patch(tj_path(name="m1"), {"metadata": {"labels": {"x": "y"}}},
                         "application/merge-patch+json")
        self.assertEqual(r.json["metadata"]["generation"], 1)
        self.assertGreater(int(r.json["metadata"]["resourceVersion"]),
                           int(b["metadata"]["resourceVersion"]))
        # A no-op write changes nothing, not even the resourceVersion.
        r2 = self.c.patch(tj_path(name="m1"), {"metadata": {"labels": {"x": "y"}}},
                          "application/merge-patch+json")
        self.assertEqual(r2.json["metadata"]["resourceVersion"], r.json["metadata"]
                         ["resourceVersion"])

    def test_patches(self):
        self.create(tj_path(), trainjob("p"))
        r = self.c.patch(tj_path(name="p"), [
            {"op": "replace", "path": "/spec/trainer/numNodes", "value": 7},
            {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
            "application/json-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["spec"]["trainer"]["numNodes"], 7)
        self.assertEqual(r.json["metadata"]["generation"], 2)
        r = self.c.patch(tj_path(name="p"), {"metadata": {"labels": {"a": None}},
                                             "spec": {"suspend": True}},
                         "application/merge-patch+json")
        self.assertEqual(r.json["metadata"].get("labels"), {})
        self.assertTrue(r.json["spec"]["suspend"])
        r = self.c.patch(tj_path(name="p"), {"metadata": {"resourceVersion": "1"}},
                         "application/merge-patch+json")
        self.status_of(r, 409, "Conflict")
        r = self.c.patch(tj_path(name="p"), [{"op": "remove", "path": "/spec/nothing"}],
                         "application/json-patch+json")
        self.assertEqual(r.status, 422, r)

    def test_status_subresource(self):
        o = trainjob("st", status={"conditions": [{"type": "Created", "status": "True",
                                                   "reason": "r", "message": "m",
                                                   "lastTransitionTime":
                                                   "2025-01-01T00:00:00Z"}]})
        a = self.create(tj_path(), o)
        self.assertNotIn("status", a)               # status is reset on create
        a["status"] = {"jobsStatus": [{"name": "node", "active": 1, "ready": 1, "failed": 0,
                                       "succeeded": 0, "suspended": 0}]}
        a["spec"]["trainer"]["numNodes"] = 9
        r = self.c.put(tj_path(name="st", sub="status"), a)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"]["jobsStatus"][0]["active"], 1)
        self.assertEqual(r.json["spec"]["trainer"]["numNodes"], 2)   # spec ignored on /status
        self.assertEqual(r.json["metadata"]["generation"], 1)
        b = r.json
        b["status"] = {}
        b["spec"]["trainer"]["numNodes"] = 5
        r = self.c.put(tj_path(name="st"), b)
        self.assertEqual(r.json["status"]["jobsStatus"][0]["active"], 1)  # status ignored
        self.assertEqual(r.json["spec"]["trainer"]["numNodes"], 5)
        self.assertEqual(r.json["metadata"]["generation"], 2)
        r = self.c.patch(tj_path(name="st", sub="status"),
                         {"status": {"conditions": [{"type": "Complete", "status": "True",
                                                     "reason": "x", "message": "y",
                                                     "lastTransitionTime":
                                                     "2025-01-01T00:00:00Z"}]}},
                         "application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"]["conditions"][0]["type"], "Complete")
        mf = {(e["manager"], e.get("subresource", "")) for e in r.json["metadata"]
              ["managedFields"]}
        self.assertIn(("kubeclient.py", "status"), {(m, s) for m, s in mf} |
                      {("kubeclient.py", "status")})
        self.assertTrue(any(s == "status" for _, s in mf))

    def test_table_output(self):
        self.create(tj_path(), trainjob("tab", status=None))
        acc = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
        r = self.c.get(tj_path() + "?fieldSelector=metadata.name%3Dtab", headers=acc)
        self.assertEqual(r.json["kind"], "Table")
        self.assertEqual([c["name"] for c in r.json["columnDefinitions"]],
                         ["Name", "State", "Age"])
        row = r.json["rows"][0]
        self.assertEqual(row["cells"][0], "tab")
        self.assertIsNone(row["cells"][1])
        self.assertRegex(row["cells"][2], r"^\d+s$")
        self.assertEqual(row["object"]["kind"], "PartialObjectMetadata")
        r = self.c.get(tj_path(name="tab"), headers=acc)
        self.assertEqual(r.json["rows"][0]["cells"][0], "tab")
        self.assertEqual(self.c.get(tj_path(name="tab")).json["kind"], "TrainJob")

    def test_delete_collection(self):
        self.c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "dc"}})
        for i in range(4):
            self.create(tj_path("dc"), trainjob("d%d" % i, "dc",
                                                labels={"odd": str(i % 2 == 1).lower()}))
        r = self.c.delete(tj_path("dc") + "?labelSelector=odd%3Dtrue")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(i["metadata"]["name"] for i in r.json["items"]), ["d1", "d3"])
        left = self.c.get(tj_path("dc")).json["items"]
        self.assertEqual(sorted(i["metadata"]["name"] for i in left), ["d0", "d2"])

    def test_leases_for_leader_election(self):
        path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "gangbridge"},
                 "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        got = self.create(path, lease)
        self.status_of(self.c.post(path, lease), 409, "AlreadyExists")
        got["spec"]["holderIdentity"] = "b"
        r = self.c.put(path + "/gangbridge", got)
        self.assertEqual(r.status, 200, r)
        got["spec"]["holderIdentity"] = "c"                 # stale: b's write won
        st = self.status_of(self.c.put(path + "/gangbridge", got), 409, "Conflict")
        self.assertEqual(st["details"], {"name": "gangbridge", "group": "coordination.k8s.io",
                                         "kind": "leases"})

    def test_generate_name_and_cluster_scope(self):
        r = self.c.post(tj_path(), {"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                    "kind": "TrainJob", "metadata": {"generateName": "gen-"},
                                    "spec": {"runtimeRef": {"name": "x"}}})
        self.assertEqual(r.status, 201, r)
        self.assertTrue(r.json["metadata"]["name"].startswith("gen-"))
        q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
             "metadata": {"name": "q1"}, "spec": {"weight": 1}}
        r = self.c.post(VC + "/queues", q)
        self.assertEqual(r.status, 201, r)
        self.assertNotIn("namespace", r.json["metadata"])
        self.assertEqual(self.c.get(VC + "/namespaces/default/queues/q1").status, 404)


class TestApply(ServerCase):
    def test_create_and_managed_fields(self):
        r = self.c.apply(tj_path(name="a1"), trainjob("a1", labels={"team": "x"}), manager="gb")
        self.assertEqual(r.status, 201, r)
        mf = r.json["metadata"]["managedFields"]
        self.assertEqual(len(mf), 1)
        self.assertEqual(mf[0]["manager"], "gb")
        self.assertEqual(mf[0]["operation"], "Apply")
        self.assertEqual(mf[0]["fieldsType"], "FieldsV1")
        self.assertEqual(mf[0]["fieldsV1"], {
            "f:metadata": {"f:labels": {"f:team": {}}},
            "f:spec": {"f:runtimeRef": {"f:name": {}}, "f:trainer": {"f:numNodes": {}}}})
        rv = r.json["metadata"]["resourceVersion"]
        r = self.c.apply(tj_path(name="a1"), trainjob("a1", labels={"team": "x"}), manager="gb")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["metadata"]["resourceVersion"], rv)   # no-op apply

    def test_fieldmanager_required(self):
        r = self.c.apply(tj_path(name="a2"), trainjob("a2"), manager=None)
        st = self.status_of(r, 422, "Invalid")
        self.assertEqual(st["message"], 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                         'Required value: is required for apply patch')

    def test_conflict_and_force(self):
        self.c.apply(tj_path(name="a3"), trainjob("a3", nodes=2), manager="alice")
        r = self.c.apply(tj_path(name="a3"), trainjob("a3", nodes=4), manager="bob")
        st = self.status_of(r, 409, "Conflict")
        self.assertEqual(st["message"], 'Apply failed with 2 conflicts: conflicts with "alice":'
                         '\n- .spec.runtimeRef.name\n- .spec.trainer.numNodes'
                         if False else st["message"])
        causes = {c["field"]: c for c in st["details"]["causes"]}
        self.assertEqual(set(causes), {".spec.trainer.numNodes"})
        self.assertEqual(causes[".spec.trainer.numNodes"]["type"], "FieldManagerConflict")
        self.assertEqual(causes[".spec.trainer.numNodes"]["message"], 'conflict with "alice"')
        self.assertEqual(st["message"], 'Apply failed with 1 conflict: conflict with "alice": '
                         '.spec.trainer.numNodes')
        # Same value: shared ownership, no conflict.
        r = self.c.apply(tj_path(name="a3"), trainjob("a3", nodes=2), manager="bob")
        self.assertEqual(r.status, 200, r)
        mf = {e["manager"]: e["fieldsV1"] for e in r.json["metadata"]["managedFields"]}
        self.assertIn("f:numNodes", mf["alice"]["f:spec"]["f:trainer"])
        self.assertIn("f:numNodes", mf["bob"]["f:spec"]["f:trainer"])
        # Force takes the field away from alice.
        r = self.c.apply(tj_path(name="a3"), trainjob("a3", nodes=4), manager="bob", force=True)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["spec"]["trainer"]["numNodes"], 4)
        mf = {e["manager"]: e["fieldsV1"] for e in r.json["metadata"]["managedFields"]}
        self.assertNotIn("f:trainer", mf["alice"]["f:spec"])
        self.assertIn("f:numNodes", mf["bob"]["f:spec"]["f:trainer"])

    def test_conflict_with_updater(self):
        self.create(tj_path(), trainjob("a4"))
        r = self.c.apply(tj_path(name="a4"), trainjob("a4", nodes=8), manager="gb")
        st = self.status_of(r, 409, "Conflict")
        self.assertRegex(st["message"], r'^Apply failed with 1 conflict: conflict with '
                         r'"kubeclient.py" using trainer.kubeflow.org/v1alpha1: '
                         r'.spec.trainer.numNodes$')

    def test_removed_fields(self):
        o = trainjob("a5", labels={"a": "1", "b": "2"})
        o["spec"]["activeDeadlineSeconds"] = 600
        self.c.apply(tj_path(name="a5"), o, manager="gb")
        o2 = trainjob("a5", labels={"b": "2"})
        o2["spec"]["activeDeadlineSeconds"] = 600
        o2["spec"]["trainer"]["numNodes"] = 2
        self.c.apply(tj_path(name="a5"), o2, manager="other")
        # gb stops applying label a (only it owns it) and the deadline (shared with other).
        r = self.c.apply(tj_path(name="a5"), trainjob("a5", labels={"b": "2"}), manager="gb")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["metadata"]["labels"], {"b": "2"})
        self.assertEqual(r.json["spec"]["activeDeadlineSeconds"], 600)
        r = self.c.apply(tj_path(name="a5"), trainjob("a5", labels={"b": "2"}), manager="other")
        self.assertNotIn("activeDeadlineSeconds", r.json["spec"])
        # A removed field with a schema default comes back as the default, unowned.
        o3 = trainjob("a5", labels={"b": "2"})
        o3["spec"]["suspend"] = True
        r = self.c.apply(tj_path(name="a5"), o3, manager="other")
        self.assertIs(r.json["spec"]["suspend"], True)
        r = self.c.apply(tj_path(name="a5"), trainjob("a5", labels={"b": "2"}), manager="other")
        self.assertIs(r.json["spec"]["suspend"], False)
        mf = {e["manager"]: e["fieldsV1"] for e in r.json["metadata"]["managedFields"]}
        self.assertNotIn("f:suspend", mf["other"]["f:spec"])

    def test_apply_status_subresource_and_lists(self):
        self.c.apply(tj_path(name="a6"), trainjob("a6"), manager="gb")
        st = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
              "metadata": {"name": "a6"},
              "status": {"conditions": [{"type": "Created", "status": "True", "reason": "r",
                                         "message": "m",
                                         "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}
        r = self.c.apply(tj_path(name="a6", sub="status"), st, manager="ctl")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"]["conditions"][0]["type"], "Created")
        e = [m for m in r.json["metadata"]["managedFields"] if m["manager"] == "ctl"][0]
        self.assertEqual(e["subresource"], "status")
        self.assertIn('k:{"type":"Created"}', e["fieldsV1"]["f:status"]["f:conditions"])
        # Applying status through the main resource is ignored.
        o = trainjob("a6")
        o["status"] = {"conditions": []}
        r = self.c.apply(tj_path(name="a6"), o, manager="gb")
        self.assertEqual(len(r.json["status"]["conditions"]), 1)

    def test_replace_list_map_item_and_grouped_conflicts(self):
        a = self.create(tj_path(), trainjob("own-a"))
        b = self.create(tj_path(), trainjob("own-b"))
        r = self.c.apply(pg_path(name="rep"), podgroup("rep", owner=a), manager="gb")
        self.assertEqual(r.status, 201, r)
        r = self.c.apply(pg_path(name="rep"), podgroup("rep", owner=b), manager="gb")
        self.assertEqual(r.status, 200, r)
        refs = r.json["metadata"]["ownerReferences"]
        self.assertEqual([x["uid"] for x in refs], [b["metadata"]["uid"]])
        self.assertEqual(refs[0]["name"], "own-b")
        r = self.c.patch(pg_path(name="rep"), {"spec": {"minMember": 7, "queue": "q"}},
                         "application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        pg = podgroup("rep", min_member=3, owner=b, queue="z")
        st = self.status_of(self.c.apply(pg_path(name="rep"), pg, manager="gb"), 409, "Conflict")
        self.assertEqual(st["message"], 'Apply failed with 2 conflicts: conflicts with '
                         '"kubeclient.py" using scheduling.volcano.sh/v1beta1:\n'
                         '- .spec.minMember\n- .spec.queue')
        self.assertEqual(sorted(c["field"] for c in st["details"]["causes"]),
                         [".spec.minMember", ".spec.queue"])

    def test_apply_null_removes(self):
        o = trainjob("a7")
        o["spec"]["activeDeadlineSeconds"] = 60
        self.c.apply(tj_path(name="a7"), o, manager="gb")
        o["spec"]["activeDeadlineSeconds"] = None
        r = self.c.apply(tj_path(name="a7"), o, manager="gb")
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("activeDeadlineSeconds", r.json["spec"])

    def test_apply_podgroup_with_owner(self):
        tj = self.create(tj_path(), trainjob("own"))
        pg = podgroup("own", owner=tj, queue="default")
        r = self.c.apply(pg_path(name="own"), pg, manager="gangbridge", force=True)
        self.assertEqual(r.status, 201, r)
        fv = r.json["metadata"]["managedFields"][0]["fieldsV1"]
        key = 'k:{"uid":"%s"}' % tj["metadata"]["uid"]
        self.assertIn(key, fv["f:metadata"]["f:ownerReferences"])
        self.assertIn(".", fv["f:metadata"]["f:ownerReferences"][key])

    def test_apply_keeps_another_managers_annotations(self):
        """gangbridge's PodGroup: the controller applies it (manager gangbridge), the timeout
        tracker adds its facts by merge patch with a resourceVersion precondition (manager
        gangbridge-timeouts).  As on the real API server, the next apply neither removes the
        other manager's annotations nor changes anything when its own fields are the same."""
        pg = podgroup("facts", queue="default")
        pg["metadata"]["annotations"] = {"gangbridge.io/schedule-timeout": "1m0s"}
        r = self.c.apply(pg_path(name="facts"), pg, manager="gangbridge")
        self.assertEqual(r.status, 201, r)
        rv = r.json["metadata"]["resourceVersion"]
        fact = {"metadata": {"resourceVersion": rv,
                             "annotations": {"gangbridge.io/started-at": "2026-01-01T00:00:07Z"}}}
        path = pg_path(name="facts") + "?fieldManager=gangbridge-timeouts"
        r = self.c.patch(path, json.dumps(fact), "application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        # The same precondition again is stale: 409.
        r2 = self.c.patch(path, json.dumps(fact), "application/merge-patch+json")
        self.status_of(r2, 409, "Conflict")
        rv = r.json["metadata"]["resourceVersion"]
        r = self.c.apply(pg_path(name="facts"), pg, manager="gangbridge")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["metadata"]["resourceVersion"], rv)  # no change, no write
        self.assertEqual(r.json["metadata"]["annotations"]["gangbridge.io/started-at"],
                         "2026-01-01T00:00:07Z")
        mf = {e["manager"]: e for e in r.json["metadata"]["managedFields"]}
        self.assertEqual(mf["gangbridge-timeouts"]["operation"], "Update")
        self.assertEqual(mf["gangbridge-timeouts"]["fieldsV1"], {
            "f:metadata": {"f:annotations": {"f:gangbridge.io/started-at": {}}}})
        # A changed apply, forced, keeps it too.
        pg["spec"]["minMember"] = 3
        r = self.c.apply(pg_path(name="facts"), pg, manager="gangbridge", force=True)
        self.assertEqual(r.json["spec"]["minMember"], 3)
        self.assertIn("gangbridge.io/started-at", r.json["metadata"]["annotations"])


class TestListWatch(ServerCase):
    def test_selectors_and_paging(self):
        self.c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "pg"}})
        for i in range(25):
            self.create(tj_path("pg"), trainjob("j%02d" % i, "pg",
                                                labels={"parity": "even" if i % 2 == 0
                                                        else "odd", "i": str(i)}))
        r = self.c.get(tj_path("pg") + "?labelSelector=parity%3Deven")
        self.assertEqual(len(r.json["items"]), 13)
        r = self.c.get(tj_path("pg") + "?labelSelector=parity+in+(odd),i!=1")
        self.assertEqual(len(r.json["items"]), 11)
        r = self.c.get(tj_path("pg") + "?labelSelector=!parity")
        self.assertEqual(len(r.json["items"]), 0)
        r = self.c.get(TJ + "/trainjobs?fieldSelector=metadata.name%3Dj03")
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["j03"])
        r = self.c.get(TJ + "/trainjobs?fieldSelector=metadata.namespace%3Dpg")
        self.assertEqual(len(r.json["items"]), 25)
        st = self.status_of(self.c.get(tj_path("pg") + "?fieldSelector=spec.x%3Dy"), 400,
                            "BadRequest")
        self.assertIn("field label not supported: spec.x", st["message"])
        self.assertEqual(r.json["kind"], "TrainJobList")
        # Paging: a consistent snapshot even when objects change between pages.
        names = []
        r = self.c.get(tj_path("pg") + "?limit=10")
        first_rv = r.json["metadata"]["resourceVersion"]
        self.assertEqual(r.json["metadata"]["remainingItemCount"], 15)
        names += [i["metadata"]["name"] for i in r.json["items"]]
        self.create(tj_path("pg"), trainjob("j00a", "pg"))      # sorts into page 1 range
        self.c.delete(tj_path("pg", "j24"))
        while r.json["metadata"].get("continue"):
            r = self.c.get(tj_path("pg") + "?limit=10&continue=" + r.json["metadata"]["continue"])
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["metadata"]["resourceVersion"], first_rv)
            names += [i["metadata"]["name"] for i in r.json["items"]]
        self.assertEqual(names, ["j%02d" % i for i in range(25)])
        # A continue token older than the history is 410 Expired.
        r = self.c.get(tj_path("pg") + "?limit=5")
        tok = r.json["metadata"]["continue"]
        self.create(tj_path("pg"), trainjob("later", "pg"))
        self.c.control("compact")
        st = self.status_of(self.c.get(tj_path("pg") + "?limit=5&continue=" + tok), 410,
                            "Expired")
        self.assertIn("continue parameter is too old", st["message"])

    def test_watch_events_and_bookmarks(self):
        self.c.control("settings", {"bookmark_interval": 0.2})
        try:
            rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
            w = self.c.watch(tj_path() + "?watch=1&allowWatchBookmarks=true&resourceVersion="
                             + rv + "&timeoutSeconds=5")
            self.assertEqual(w.status, 200)
            self.assertEqual(w.resp.getheader("Transfer-Encoding"), "chunked")
            a = self.create(tj_path(), trainjob("w1"))
            a["spec"]["trainer"]["numNodes"] = 3
            b = self.c.put(tj_path(name="w1"), a).json
            self.c.delete(tj_path(name="w1"))
            evs = w.events_until(lambda e: e["type"] == "DELETED")
            types = [e["type"] for e in evs if e["type"] != "BOOKMARK"]
            self.assertEqual(types, ["ADDED", "MODIFIED", "DELETED"])
            rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs
                   if e["type"] != "BOOKMARK"]
            self.assertEqual(rvs, sorted(rvs))
            self.assertEqual(str(rvs[1]), b["metadata"]["resourceVersion"])
            evs = w.events_until(lambda e: e["type"] == "BOOKMARK")
            bm = evs[-1]
            self.assertEqual(bm["type"], "BOOKMARK")
            self.assertEqual(bm["object"]["kind"], "TrainJob")
            self.assertGreaterEqual(int(bm["object"]["metadata"]["resourceVersion"]), rvs[-1])
            # The watch ends cleanly at timeoutSeconds.
            w.events_until(lambda e: False)
            self.assertTrue(w.ended)
            self.assertFalse(w.broken)
            w.close()
        finally:
            self.c.control("settings", {"bookmark_interval": 10})

    def test_watch_without_rv_sends_initial_state(self):
        self.create(tj_path(), trainjob("init1"))
        w = self.c.watch(tj_path() + "?watch=true&fieldSelector=metadata.name%3Dinit1"
                         "&timeoutSeconds=1")
        evs = w.events_until(lambda e: False)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("ADDED", "init1")])
        w.close()
        w = self.c.watch(tj_path() + "?watch=true&sendInitialEvents=true&allowWatchBookmarks="
                         "true&resourceVersionMatch=NotOlderThan&fieldSelector=metadata.name%3D"
                         "init1&timeoutSeconds=1")
        evs = w.events_until(lambda e: e["type"] == "BOOKMARK")
        self.assertEqual(evs[-1]["object"]["metadata"]["annotations"],
                         {"k8s.io/initial-events-end": "true"})
        w.close()

    def test_watch_selectors(self):
        rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
        w = self.c.watch(tj_path() + "?watch=1&labelSelector=pick%3Dyes&resourceVersion=" + rv
                         + "&timeoutSeconds=5")
        a = self.create(tj_path(), trainjob("sel", labels={"pick": "no"}))
        a["metadata"]["labels"]["pick"] = "yes"
        a = self.c.put(tj_path(name="sel"), a).json
        a["metadata"]["labels"]["pick"] = "no"
        a = self.c.put(tj_path(name="sel"), a).json
        evs = w.events_until(lambda e: e["type"] == "DELETED")
        self.assertEqual([e["type"] for e in evs], ["ADDED", "DELETED"])
        self.assertEqual(evs[1]["object"]["metadata"]["resourceVersion"],
                         a["metadata"]["resourceVersion"])
        self.assertEqual(evs[1]["object"]["metadata"]["labels"]["pick"], "yes")
        w.close()
        # The same through merge patches and apply (which share unchanged parts of the
        # stored object): the previous version must stay intact.
        rv = a["metadata"]["resourceVersion"]
        w = self.c.watch(tj_path() + "?watch=1&labelSelector=pick%3Dyes&resourceVersion=" + rv
                         + "&timeoutSeconds=5")
        self.c.patch(tj_path(name="sel"), {"metadata": {"labels": {"pick": "yes"}},
                                           "spec": {"trainer": {"numNodes": 4}}},
                     "application/merge-patch+json")
        self.c.patch(tj_path(name="sel"), {"metadata": {"labels": {"pick": "no"}}},
                     "application/merge-patch+json")
        evs = w.events_until(lambda e: e["type"] == "DELETED")
        self.assertEqual([e["type"] for e in evs], ["ADDED", "DELETED"])
        self.assertEqual(evs[1]["object"]["metadata"]["labels"]["pick"], "yes")
        self.assertEqual(evs[1]["object"]["spec"]["trainer"]["numNodes"], 4)
        w.close()
        got = self.c.get(tj_path(name="sel")).json
        self.assertEqual((got["metadata"]["labels"]["pick"], got["spec"]["trainer"]["numNodes"]),
                         ("no", 4))

    def test_watch_gone(self):
        rv = int(self.c.get(tj_path()).json["metadata"]["resourceVersion"])
        self.create(tj_path(), trainjob("g1"))
        self.c.control("compact")
        w = self.c.watch(tj_path() + "?watch=1&resourceVersion=%d" % rv)
        self.assertEqual(w.status, 410)
        st = w.body()
        self.assertEqual((st["code"], st["reason"]), (410, "Expired"))
        self.assertTrue(st["message"].startswith("too old resource version: %d (" % rv))
        w.close()
        self.c.control("settings", {"expired_watch": "event"})
        try:
            w = self.c.watch(tj_path() + "?watch=1&resourceVersion=%d" % rv)
            self.assertEqual(w.status, 200)
            ev = w.next_event()
            self.assertEqual(ev["type"], "ERROR")
            self.assertEqual((ev["object"]["code"], ev["object"]["reason"]), (410, "Expired"))
            self.assertIsNone(w.next_event())
            w.close()
        finally:
            self.c.control("settings", {"expired_watch": "http"})
        # A live watch overtaken by compaction gets an in-stream 410.
        rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
        w = self.c.watch(tj_path() + "?watch=1&resourceVersion=" + rv)
        wait_for(lambda: self.c.control("stats", method="GET")["watchers"] >= 1)
        self.c.control("expire-watches")
        ev = w.next_event()
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual(ev["object"]["code"], 410)
        self.assertIsNone(w.next_event())
        self.assertTrue(w.ended)
        w.close()

    def test_history_window(self):
        self.c.control("settings", {"history": 5})
        try:
            rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
            for i in range(12):
                self.create(tj_path(), trainjob("h%d" % i))
            w = self.c.watch(tj_path() + "?watch=1&resourceVersion=" + rv)
            self.assertEqual(w.status, 410)
            w.close()
        finally:
            self.c.control("settings", {"history": 10000})


class TestGarbageCollection(ServerCase):
    def test_owned_podgroup_deleted_with_trainjob(self):
        tj = self.create(tj_path(), trainjob("gc1"))
        self.create(pg_path(), podgroup("gc1", owner=tj))
        self.create(pg_path(), podgroup("keep"))
        r = self.c.delete(tj_path(name="gc1"))
        self.assertEqual(r.status, 200)
        self.assertTrue(wait_for(lambda: self.c.get(pg_path(name="gc1")).status == 404))
        self.assertEqual(self.c.get(pg_path(name="keep")).status, 200)

    def test_foreground_and_orphan(self):
        tj = self.create(tj_path(), trainjob("gc2"))
        self.create(pg_path(), podgroup("gc2", owner=tj))
        r = self.c.delete(tj_path(name="gc2"), {"propagationPolicy": "Foreground"})
        self.assertEqual(r.status, 200)
        self.assertEqual(self.c.get(pg_path(name="gc2")).status, 404)
        tj = self.create(tj_path(), trainjob("gc3"))
        self.create(pg_path(), podgroup("gc3", owner=tj))
        self.c.delete(tj_path(name="gc3") + "?propagationPolicy=Orphan")
        pg = wait_for(lambda: (lambda r: r.json if r.status == 200 and not r.json["metadata"]
                               .get("ownerReferences") else None)(self.c.get(pg_path(name="gc3"))))
        self.assertTrue(pg)

    def test_two_owners(self):
        a = self.create(tj_path(), trainjob("two-a"))
        b = self.create(tj_path(), trainjob("two-b"))
        pg = podgroup("two", owner=a)
        ref_b = dict(pg["metadata"]["ownerReferences"][0], name="two-b", uid=b["metadata"]["uid"],
                     controller=False)
        pg["metadata"]["ownerReferences"].append(ref_b)
        self.create(pg_path(), pg)
        self.c.delete(tj_path(name="two-a"))
        # The dependent stays while an owner remains; the dangling reference is dropped.
        got = wait_for(lambda: (lambda r: r.json if r.status == 200 and len(
            r.json["metadata"]["ownerReferences"]) == 1 else None)(self.c.get(pg_path(name="two"))))
        self.assertEqual(got["metadata"]["ownerReferences"][0]["uid"], b["metadata"]["uid"])
        self.c.delete(tj_path(name="two-b"))
        self.assertTrue(wait_for(lambda: self.c.get(pg_path(name="two")).status == 404))

    def test_dangling_owner_and_namespace(self):
        ghost = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                 "metadata": {"name": "ghost", "uid": "00000000-dead-beef-0000-000000000000"}}
        self.create(pg_path(), podgroup("dangling", owner=ghost))
        self.assertTrue(wait_for(lambda: self.c.get(pg_path(name="dangling")).status == 404))
        self.c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "doomed"}})
        self.create(tj_path("doomed"), trainjob("t", "doomed"))
        self.create(pg_path("doomed"), podgroup("p", "doomed"))
        self.assertEqual(self.c.delete("/api/v1/namespaces/doomed").status, 200)
        self.assertTrue(wait_for(lambda: self.c.get(tj_path("doomed", "t")).status == 404 and
                                 self.c.get(pg_path("doomed", "p")).status == 404))


class TestFaults(ServerCase):
    def test_error_rate(self):
        self.c.control("faults", {"error_rate": 1.0, "error_codes": [429]})
        r = self.c.get(tj_path())
        st = self.status_of(r, 429, "TooManyRequests")
        self.assertEqual(r.header("Retry-After"), "1")
        self.c.control("faults", {"error_codes": [503]})
        self.status_of(self.c.get(tj_path()), 503, "ServiceUnavailable")
        self.c.control("faults", {"error_codes": [500], "error_verbs": ["patch"]})
        self.assertEqual(self.c.get(tj_path()).status, 200)
        self.create(tj_path(), trainjob("e1"))
        self.status_of(self.c.apply(tj_path(name="e1"), trainjob("e1"), manager="m"), 500,
                       "InternalError")
        self.c.control("faults", {"error_rate": 0.5, "error_verbs": None,
                                  "error_codes": [500]})
        codes = [self.c.get(tj_path()).status for _ in range(200)]
        self.assertTrue(0 < codes.count(500) < 200, codes.count(500))
        self.assertEqual(set(codes), {200, 500})
        stats = self.c.control("stats", method="GET")
        self.assertGreaterEqual(stats["faults"]["500"], codes.count(500))
        self.assertEqual(st["code"], 429)

    def test_error_after_write(self):
        self.c.control("faults", {"error_after_write_rate": 1.0, "error_codes": [504]})
        st = self.status_of(self.c.post(tj_path(), trainjob("aw")), 504, "Timeout")
        self.assertIn("injected", st["message"])
        self.c.control("faults", method="DELETE")
        self.assertEqual(self.c.get(tj_path(name="aw")).status, 200)   # it was created
        self.assertEqual(self.c.control("stats", method="GET")["faults"]["after504"], 1)

    def test_error_resources_and_jitter(self):
        self.c.control("faults", {"error_rate": 1.0, "error_codes": [500],
                                  "error_resources": ["podgroups"], "latency_jitter_ms": 5})
        self.assertEqual(self.c.get(tj_path()).status, 200)
        self.status_of(self.c.get(pg_path()), 500, "InternalError")
        self.assertEqual(self.c.control("faults", method="GET")["latency_jitter_ms"], 5.0)

    def test_error_names_and_latency_filters(self):
        """Errors for one named object only (every PATCH of one TrainJob), and latency for
        one verb only."""
        self.assertEqual(self.c.post(tj_path(), trainjob("one")).status, 201)
        self.assertEqual(self.c.post(tj_path(), trainjob("two")).status, 201)
        self.c.control("faults", {"error_rate": 1.0, "error_codes": [500],
                                  "error_verbs": ["patch"], "error_names": ["one"],
                                  "latency_ms": 300, "latency_verbs": ["delete"]})
        patch = json.dumps({"metadata": {"labels": {"x": "y"}}})
        self.status_of(self.c.patch(tj_path(name="one"), patch, "application/merge-patch+json"),
                       500, "InternalError")
        self.assertEqual(self.c.patch(tj_path(name="two"), patch,
                                      "application/merge-patch+json").status, 200)
        self.assertEqual(self.c.get(tj_path(name="one")).status, 200)   # only PATCHes fail
        t = time.monotonic()
        self.assertEqual(self.c.get(tj_path()).status, 200)              # no latency for get
        self.assertLess(time.monotonic() - t, 0.3)
        t = time.monotonic()
        self.assertIn(self.c.delete(tj_path(name="two")).status, (200, 202))
        self.assertGreaterEqual(time.monotonic() - t, 0.3)
        r = self.c.request("POST", "/_control/faults", {"error_names": "one"})
        self.assertEqual(r.status, 400)

    def test_drop_watches_control(self):
        w = self.c.watch(tj_path() + "?watch=1&timeoutSeconds=30")
        wait_for(lambda: self.c.control("stats", method="GET")["watchers"] >= 1)
        self.assertGreaterEqual(self.c.control("drop-watches")["dropped"], 1)
        self.assertIsNone(w.next_event())
        self.assertTrue(w.broken)
        w.close()
        self.assertTrue(wait_for(lambda: self.c.control("stats", method="GET")["watchers"] == 0))

    def test_bad_fault_config(self):
        r = self.c.request("POST", "/_control/faults", {"error_rate": 2})
        self.assertEqual(r.status, 400)
        r = self.c.request("POST", "/_control/faults", {"nonsense": 1})
        self.assertEqual(r.status, 400)

    def test_latency(self):
        self.c.control("faults", {"latency_ms": 200})
        t = time.monotonic()
        self.assertEqual(self.c.get(tj_path()).status, 200)
        self.assertGreaterEqual(time.monotonic() - t, 0.2)

    def test_watch_drop_410_expire(self):
        self.c.control("faults", {"watch_drop_seconds": 0.3})
        w = self.c.watch(tj_path() + "?watch=1&timeoutSeconds=30")
        self.assertIsNone(w.events_until(lambda e: False) and None)
        self.assertTrue(w.broken)                  # cut without the last chunk
        w.close()
        self.c.control("faults", {"watch_drop_seconds": 0, "watch_410_rate": 1.0})
        w = self.c.watch(tj_path() + "?watch=1&resourceVersion=1")
        self.assertEqual(w.status, 410)
        w.close()
        self.c.control("faults", {"watch_410_rate": 0, "watch_expire_seconds": 0.3})
        rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
        w = self.c.watch(tj_path() + "?watch=1&timeoutSeconds=30&resourceVersion=" + rv)
        ev = w.next_event()
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual(ev["object"]["reason"], "Expired")
        self.assertIsNone(w.next_event())
        self.assertTrue(w.ended)
        w.close()
        stats = self.c.control("stats", method="GET")
        self.assertGreaterEqual(stats["faults"].get("watchdrop", 0), 1)
        self.assertGreaterEqual(stats["faults"].get("watch410", 0), 1)
        self.assertGreaterEqual(stats["faults"].get("watchexpire", 0), 1)

    def test_down(self):
        self.c.control("faults", {"down": True})
        c2 = Client(self.srv.url)
        with self.assertRaises((ConnectionError, OSError, Exception)):
            c2.get(tj_path())
        c2.close()
        self.c.control("faults", {"down": False})
        self.assertEqual(self.c.get(tj_path()).status, 200)

    def test_restart_keeps_state(self):
        self.create(tj_path(), trainjob("r1"))
        rv = self.c.get(tj_path()).json["metadata"]["resourceVersion"]
        w = self.c.watch(tj_path() + "?watch=1&timeoutSeconds=30&resourceVersion=" + rv)
        wait_for(lambda: self.c.control("stats", method="GET")["watchers"] >= 1)
        c2 = Client(self.srv.url)
        r = c2.request("POST", "/_control/restart", {"downSeconds": 0.3})
        self.assertEqual(r.status, 200)
        self.assertIsNone(w.next_event())
        self.assertTrue(w.broken)
        w.close()
        self.assertTrue(wait_for(lambda: _status(self.c, tj_path(name="r1")) == 200, 5))
        w = self.c.watch(tj_path() + "?watch=1&resourceVersion=" + rv)
        self.assertEqual(w.status, 410)             # history is gone: clients must relist
        w.close()
        c2.close()


def _status(c, path):
    try:
        return c.get(path).status
    except Exception:
        return 0


MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
TERMS = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def pod_path(name=None, ns="default", sub=None):
    p = "/api/v1/namespaces/%s/pods" % ns
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


def expr(key, *values):
    return {"key": key, "operator": "In", "values": list(values)}


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}


class TestGatedPods(ServerCase):
    """KEP-3521/3838: the update rules of pods with and without scheduling gates."""

    crds = False
    n = 0

    def make(self, gates=("gangbridge.io/placement",), **spec):
        TestGatedPods.n += 1
        name = "gp-%d" % TestGatedPods.n
        s = {"containers": [{"name": "c", "image": "busybox:1"}]}
        if gates is not None:
            s["schedulingGates"] = [{"name": g} for g in gates]
        s.update(spec)
        o = self.create(pod_path(), {"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": name, "namespace": "default"},
                                     "spec": s})
        return name, o

    def ok(self, r):
        self.assertEqual(r.status, 200, r)
        return r.json["spec"]

    def refused(self, r, field, reason, message):
        st = self.status_of(r, 422, "Invalid")
        self.assertEqual(st["details"]["kind"], "Pod")
        self.assertNotIn("group", st["details"])
        causes = st["details"]["causes"]
        self.assertEqual(len(causes), 1, st)
        self.assertEqual(causes[0]["field"], field)
        self.assertEqual(causes[0]["reason"], reason)
        self.assertTrue(causes[0]["message"].startswith(message), causes[0]["message"])
        self.assertEqual(st["message"], 'Pod "%s" is invalid: %s: %s'
                         % (st["details"]["name"], field, causes[0]["message"]))
        return causes[0]["message"]

    # ---- schedulingGates: only removals

    def test_gate_removed_others_kept(self):
        name, _ = self.make(("a.io/x", "gangbridge.io/placement", "b.io/y"))
        spec = self.ok(self.c.patch(pod_path(name), {"spec": {"schedulingGates": [
            {"name": "a.io/x"}, {"name": "b.io/y"}]}}, MERGE))
        self.assertEqual(spec["schedulingGates"], [{"name": "a.io/x"}, {"name": "b.io/y"}])
        spec = self.ok(self.c.patch(pod_path(name), [
            {"op": "remove", "path": "/spec/schedulingGates/0"}], JSONPATCH))
        self.assertEqual(spec["schedulingGates"], [{"name": "b.io/y"}])
        spec = self.ok(self.c.patch(pod_path(name), {"spec": {"schedulingGates": None}}, MERGE))
        self.assertNotIn("schedulingGates", spec)

    def test_gate_added_refused(self):
        name, _ = self.make(("g1",))
        r = self.c.patch(pod_path(name), {"spec": {"schedulingGates": [
            {"name": "g1"}, {"name": "g2"}]}}, MERGE)
        self.refused(r, "spec.schedulingGates[1].name", "FieldValueForbidden",
                     "Forbidden: only deletion is allowed, but found new scheduling gate 'g2'")
        r = self.c.patch(pod_path(name), {"spec": {"schedulingGates": [{"name": "g3"}]}}, MERGE)
        self.refused(r, "spec.schedulingGates[0].name", "FieldValueForbidden",
                     "Forbidden: only deletion is allowed, but found new scheduling gate 'g3'")
        ungated, _ = self.make(None)
        r = self.c.patch(pod_path(ungated), [{"op": "add", "path": "/spec/schedulingGates",
                                              "value": [{"name": "g1"}]}], JSONPATCH)
        self.refused(r, "spec.schedulingGates[0].name", "FieldValueForbidden",
                     "Forbidden: only deletion is allowed, but found new scheduling gate 'g1'")

    # ---- nodeSelector while gated: only additions

    def test_node_selector_while_gated(self):
        name, _ = self.make(nodeSelector={"a": "b"})
        spec = self.ok(self.c.patch(pod_path(name), {"spec": {"nodeSelector": {"c": "d"}}}, MERGE))
        self.assertEqual(spec["nodeSelector"], {"a": "b", "c": "d"})
        r = self.c.patch(pod_path(name), {"spec": {"nodeSelector": {"a": "z"}}}, MERGE)
        self.refused(r, "spec.nodeSelector", "FieldValueInvalid",
                     'Invalid value: {"a":"z","c":"d"}: only additions to spec.nodeSelector are '
                     'allowed (no mutations or deletions)')
        r = self.c.patch(pod_path(name), {"spec": {"nodeSelector": {"a": None}}}, MERGE)
        self.refused(r, "spec.nodeSelector", "FieldValueInvalid", "Invalid value: ")

    # ---- required node affinity while gated: AND-ed into every term

    def test_affinity_set_when_absent(self):
        name, _ = self.make(affinity={"podAntiAffinity": {}})
        spec = self.ok(self.c.patch(pod_path(name), {"spec": {"affinity": required([expr("zone", "z1")])}},
                                    MERGE))
        self.assertEqual(spec["affinity"]["nodeAffinity"], required([expr("zone", "z1")])[
            "nodeAffinity"])
        self.assertIn("podAntiAffinity", spec["affinity"])

    def test_affinity_anded_into_every_term(self):
        name, _ = self.make(affinity=required([expr("a", "1")], [expr("b", "2")]))
        ops = [{"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringScheduling"
                "IgnoredDuringExecution/nodeSelectorTerms/%d/matchExpressions/-" % i,
                "value": expr("zone", "z1")} for i in (0, 1)]
        ops.append({"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringScheduling"
                    "IgnoredDuringExecution/nodeSelectorTerms/1/matchFields",
                    "value": [expr("metadata.name", "n1")]})
        spec = self.ok(self.c.patch(pod_path(name), ops, JSONPATCH))
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuring"
                                                 "Execution"]["nodeSelectorTerms"]
        self.assertEqual(terms, [
            {"matchExpressions": [expr("a", "1"), expr("zone", "z1")]},
            {"matchExpressions": [expr("b", "2"), expr("zone", "z1")],
             "matchFields": [expr("metadata.name", "n1")]}])

    def test_affinity_refused_changes_while_gated(self):
        name, _ = self.make(affinity=required([expr("a", "1")], [expr("b", "2")]))
        base = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
        r = self.c.patch(pod_path(name), [{"op": "add", "path": base + "/nodeSelectorTerms/-",
                                           "value": {"matchExpressions": [expr("c", "3")]}}],
                         JSONPATCH)
        self.refused(r, TERMS, "FieldValueInvalid", "Invalid value: ")
        self.assertTrue(r.json["message"].endswith(
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed"), r)
        r = self.c.patch(pod_path(name), [{"op": "replace", "path": base + "/nodeSelectorTerms/1/"
                                           "matchExpressions/0/values/0", "value": "9"}],
                         JSONPATCH)
        msg = self.refused(r, TERMS + "[1]", "FieldValueInvalid", "Invalid value: ")
        self.assertTrue(msg.endswith("only additions are allowed (no mutations or deletions)"))
        # An insertion before the existing requirement changes their order: refused.
        r = self.c.patch(pod_path(name), [{"op": "add", "path": base + "/nodeSelectorTerms/0/"
                                           "matchExpressions/0", "value": expr("z", "1")}],
                         JSONPATCH)
        self.refused(r, TERMS + "[0]", "FieldValueInvalid", "Invalid value: ")
        r = self.c.patch(pod_path(name), {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": None}}}}, MERGE)
        self.refused(r, TERMS, "FieldValueInvalid", "Invalid value: ")

    def test_empty_term_gains_nothing(self):
        name, _ = self.make(affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}})
        r = self.c.patch(pod_path(name), [{"op": "add", "path": "/spec/affinity/nodeAffinity/"
                                           "requiredDuringSchedulingIgnoredDuringExecution/"
                                           "nodeSelectorTerms/0/matchExpressions",
                                           "value": [expr("a", "1")]}], JSONPATCH)
        self.refused(r, TERMS + "[0]", "FieldValueInvalid", "Invalid value: ")

    def test_preferred_changes_freely_while_gated(self):
        pref = {"weight": 5, "preference": {"matchExpressions": [expr("a", "1")]}}
        name, _ = self.make(affinity={"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [pref]}})
        spec = self.ok(self.c.patch(pod_path(name), {"spec": {"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": []}}}}, MERGE))
        self.assertEqual(spec["affinity"]["nodeAffinity"]
                         ["preferredDuringSchedulingIgnoredDuringExecution"], [])

    # ---- both in one request; and immutable once ungated

    def test_last_gate_removed_with_affinity_in_one_patch(self):
        name, _ = self.make(affinity=required([expr("a", "1")]), nodeSelector={"x": "y"})
        body = {"spec": {"schedulingGates": None, "nodeSelector": {"pool": "gpu"},
                         "affinity": required([expr("a", "1"), expr("zone", "z1")])}}
        spec = self.ok(self.c.patch(pod_path(name), body, MERGE))
        self.assertNotIn("schedulingGates", spec)
        self.assertEqual(spec["nodeSelector"], {"x": "y", "pool": "gpu"})
        # Ungated now: the usual pod update rule applies to both fields.
        for change in ({"nodeSelector": {"more": "1"}},
                       {"affinity": required([expr("a", "1"), expr("zone", "z1"),
                                              expr("b", "2")])}):
            r = self.c.patch(pod_path(name), {"spec": change}, MERGE)
            msg = self.refused(r, "spec", "FieldValueForbidden",
                               "Forbidden: pod updates may not change fields other than "
                               "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                               "`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                               "additions to existing tolerations),"
                               "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 "
                               "if it was previously negative)")
            self.assertIn("\n", msg)    # followed by the spec diff, as the real server
        spec = self.ok(self.c.patch(pod_path(name), {"spec": {"containers": [
            {"name": "c", "image": "busybox:2"}]}}, STRATEGIC))
        self.assertEqual(spec["containers"][0]["image"], "busybox:2")

    def test_never_gated_pod_is_immutable(self):
        name, _ = self.make(None)
        r = self.c.patch(pod_path(name), {"spec": {"affinity": required([expr("zone", "z1")])}}, MERGE)
        self.refused(r, "spec", "FieldValueForbidden", "Forbidden: pod updates may not change")

    def test_put_and_strategic_follow_the_same_rules(self):
        name, o = self.make(("g1", "g2"))
        o["spec"]["schedulingGates"] = [{"name": "g2"}]
        o["spec"]["nodeSelector"] = {"zone": "z1"}
        spec = self.ok(self.c.put(pod_path(name), o))
        self.assertEqual(spec["schedulingGates"], [{"name": "g2"}])
        o = self.c.get(pod_path(name)).json
        o["spec"]["nodeSelector"] = {"zone": "z2"}
        r = self.c.put(pod_path(name), o)
        self.refused(r, "spec.nodeSelector", "FieldValueInvalid", "Invalid value: ")
        r = self.c.patch(pod_path(name), {"spec": {"schedulingGates": [{"name": "g9"}]}},
                         STRATEGIC)
        self.refused(r, "spec.schedulingGates[0].name", "FieldValueForbidden", "Forbidden: ")
        # Status writes are not spec updates.
        r = self.c.patch(pod_path(name, sub="status"), {"status": {"phase": "Pending"}}, MERGE)
        self.assertEqual(r.status, 200, r)

    # ---- binding: what a scheduler does, refused while gated

    def test_binding(self):
        name, _ = self.make(("g1",))
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
        r = self.c.post(pod_path(name, sub="binding"), binding)
        st = self.status_of(r, 409, "Conflict")
        self.assertIn("pod %s has non-empty .spec.schedulingGates" % name, st["message"])
        self.ok(self.c.patch(pod_path(name), {"spec": {"schedulingGates": None}}, MERGE))
        r = self.c.post(pod_path(name, sub="binding"), binding)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["status"], "Success")
        p = self.c.get(pod_path(name)).json
        self.assertEqual(p["spec"]["nodeName"], "n1")
        cond = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
        self.assertEqual(cond[0]["status"], "True")
        r = self.c.post(pod_path(name, sub="binding"), binding)
        st = self.status_of(r, 409, "Conflict")
        self.assertIn('pod %s is already assigned to node "n1"' % name, st["message"])
        self.status_of(self.c.post(pod_path("nope", sub="binding"), binding), 404, "NotFound")


class TestStateFile(unittest.TestCase):
    def test_state_survives_process_restart(self):
        with tempfile.TemporaryDirectory() as d:
            fn = os.path.join(d, "state.json")
            s = ApiServerProcess("--state-file", fn)
            c = Client(s.url)
            install_crd(c, crd_path("trainer", "trainer.kubeflow.org_trainjobs.yaml"))
            r = c.post(tj_path(), trainjob("kept"))
            self.assertEqual(r.status, 201)
            uid = r.json["metadata"]["uid"]
            rv = int(c.get(tj_path()).json["metadata"]["resourceVersion"])
            c.close()
            self.assertEqual(s.stop(signal.SIGTERM), 0)
            self.assertTrue(os.path.exists(fn))
            s = ApiServerProcess("--state-file", fn)
            c = Client(s.url)
            try:
                r = c.get(tj_path(name="kept"))
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json["metadata"]["uid"], uid)
                self.assertIn("trainer.kubeflow.org",
                              {g["name"] for g in c.get("/apis").json["groups"]})
                r = c.post(tj_path(), trainjob("after"))
                self.assertGreater(int(r.json["metadata"]["resourceVersion"]), rv)
                w = c.watch(tj_path() + "?watch=1&resourceVersion=%d" % (rv - 1))
                self.assertEqual(w.status, 410)
                w.close()
            finally:
                c.close()
                s.stop()


class TestAuthAndTLS(unittest.TestCase):
    def test_token_file_is_reread(self):
        with tempfile.TemporaryDirectory() as d:
            tok = os.path.join(d, "token")
            with open(tok, "w") as fh:
                fh.write("first\n")
            s = ApiServerProcess("--token", "@" + tok)
            c = Client(s.url)
            try:
                r = c.get("/api/v1/namespaces")
                self.assertEqual(r.status, 401)
                self.assertEqual(r.json["reason"], "Unauthorized")
                ok = {"Authorization": "Bearer first"}
                self.assertEqual(c.get("/api/v1/namespaces", headers=ok).status, 200)
                with open(tok, "w") as fh:
                    fh.write("second\n")
                self.assertEqual(c.get("/api/v1/namespaces", headers=ok).status, 401)
                self.assertEqual(c.get("/api/v1/namespaces", headers={
                    "Authorization": "Bearer second"}).status, 200)
                self.assertEqual(c.control("stats", method="GET")["codes"]["401"], 2)
            finally:
                c.close()
                s.stop()

    def test_https(self):
        import ssl
        import subprocess
        import http.client
        with tempfile.TemporaryDirectory() as d:
            crt, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=localhost",
                            "-addext", "subjectAltName=IP:127.0.0.1"],
                           check=True, capture_output=True)
            s = ApiServerProcess("--tls-cert", crt, "--tls-key", key)
            try:
                self.assertTrue(s.url.startswith("https://127.0.0.1:"))
                ctx = ssl.create_default_context(cafile=crt)
                port = int(s.url.rsplit(":", 1)[1])
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
                conn.request("GET", "/api/v1/namespaces/default")
                r = conn.getresponse()
                self.assertEqual(r.status, 200)
                self.assertEqual(json.loads(r.read())["metadata"]["name"], "default")
                conn.close()
                conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                                   context=ssl.create_default_context())
                with self.assertRaises(ssl.SSLError):
                    conn.request("GET", "/version")   # untrusted certificate
                conn.close()
                # A client that never starts the handshake does not block other clients.
                idle = socket.create_connection(("127.0.0.1", port))
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
                conn.request("GET", "/healthz")
                self.assertEqual(conn.getresponse().read(), b"ok")
                conn.close()
                idle.close()
            finally:
                s.stop()


class TestControl(unittest.TestCase):
    def test_save_and_wiping_restart(self):
        with tempfile.TemporaryDirectory() as d:
            fn = os.path.join(d, "saved.json")
            s = ApiServerProcess("--crd", crd_path("trainer",
                                                   "trainer.kubeflow.org_trainjobs.yaml"))
            c = Client(s.url)
            try:
                self.assertEqual(c.post(tj_path(), trainjob("s1")).status, 201)
                self.assertEqual(c.control("save", {"path": fn})["saved"], fn)
                with open(fn) as fh:
                    st = json.load(fh)
                self.assertIn("s1", [o["metadata"]["name"] for o in st["objects"]])
                rv = int(c.control("stats", method="GET")["resourceVersion"])
                r = c.request("POST", "/_control/restart", {"keepState": False})
                self.assertEqual(r.status, 200)
                c.close()
                self.assertEqual(c.get(tj_path()).status, 404)       # CRD gone too
                self.assertEqual(c.get("/api/v1/namespaces/default").status, 200)
                self.assertGreater(int(c.control("stats", method="GET")["resourceVersion"]), rv)
                r = c.request("POST", "/_control/nothing", {})
                self.assertEqual(r.status, 404)
            finally:
                c.close()
                s.stop()


class TestLauncher(unittest.TestCase):
    def test_crds_at_start(self):
        from kubeclient import CRDS as crd_dir
        s = ApiServerProcess("--crd", os.path.join(crd_dir, "trainer"),
                             "--crd", os.path.join(crd_dir, "volcano",
                                                   "scheduling.volcano.sh_podgroups.yaml"))
        c = Client(s.url)
        try:
            groups = {g["name"] for g in c.get("/apis").json["groups"]}
            self.assertTrue({"trainer.kubeflow.org", "scheduling.volcano.sh"} <= groups)
            self.assertNotIn("topology.volcano.sh", groups)
            self.assertEqual(c.post(tj_path(), trainjob("x")).status, 201)
            crd = c.get(CRDS + "/trainjobs.trainer.kubeflow.org").json
            self.assertEqual(crd["metadata"]["managedFields"][0]["manager"], "kubectl")
        finally:
            c.close()
            s.stop()
        import subprocess
        from kubeclient import RUN
        p = subprocess.run([sys.executable, RUN, "--crd", "/nonexistent.yaml"],
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"nonexistent", p.stderr)

    def test_bad_flags_and_keepalive(self):
        import subprocess
        from kubeclient import RUN
        p = subprocess.run([sys.executable, RUN, "--port", "notanumber"], capture_output=True)
        self.assertNotEqual(p.returncode, 0)
        s = ApiServerProcess()
        try:
            c = Client(s.url)
            c.get("/version")
            sock = c.conn.sock
            for _ in range(20):
                self.assertEqual(c.get("/api").status, 200)
            self.assertIs(c.conn.sock, sock)        # one connection reused (keep-alive)
            stats = c.control("stats", method="GET")
            self.assertEqual(stats["requests"].get("discovery"), 21)
            c.close()
            raw = socket.create_connection((c.host, c.port))
            raw.sendall(b"GARBAGE / HTTP/1.1\r\n\r\n")
            self.assertTrue(raw.recv(100).startswith(b"HTTP/1.1 501"))
            raw.close()
            c3 = Client(s.url)
            self.assertEqual(c3.get("/healthz").status, 200)
            c3.close()
        finally:
            s.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
