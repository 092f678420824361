#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Field validation of what gangbridge writes for the upstream Workload API.

Every object `gangbridge render --scheduler workload` prints, at each version it writes, is
checked against that version's schema as the stand-in API server knows it
(tests/apiserver/builtin/scheduling.k8s.io.yaml): every emitted field must exist at that
version, with its type, bounds and unions.  Then the same objects relabelled with another
version must fail, so the schemas (and gangbridge's per-version shapes) really differ, and
each kind of defect the API server refuses is caught."""
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GB_SRC", os.path.dirname(os.path.dirname(HERE)))
BIN = os.environ.get("GANGBRIDGE", os.path.join(SRC, "build", "gangbridge"))
BUILTIN = os.path.join(SRC, "tests", "apiserver", "builtin")
INPUTS = os.path.join(SRC, "tests", "golden", "inputs")
VERSIONS = ("v1beta1", "v1alpha2", "v1alpha1")


def render(version, *files, levels=()):
    args = [BIN, "render", "--scheduler", "workload", "--api-version", version]
    for lv in levels:
        args += ["--topology-level", lv]
    for f in files:
        args += ["-f", f]
    p = subprocess.run(args, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def check(objs):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(objs, f)
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "crdcheck.py"), "--crds", BUILTIN,
                            f.name], capture_output=True, text=True)
        return p.returncode, p.stdout
    finally:
        os.unlink(f.name)


def everything(version):
    """Every shape gangbridge writes at version: other phases, priority class, topology."""
    u = os.path.join(INPUTS, "upstream")
    return (render(version, os.path.join(u, "runtimes"), os.path.join(u, "examples")) +
            render(version, os.path.join(u, "runtimes"),
                   os.path.join(INPUTS, "trainjobs", "torchtune-1b.yaml")) +
            render(version, os.path.join(INPUTS, "seeds", "hpc-torch-volcano-priority-runtime.yaml"),
                   os.path.join(INPUTS, "trainjobs", "hpc-volcano-priority.yaml")) +
            render(version, os.path.join(INPUTS, "policy", "workload-topology.yaml"),
                   levels=["topology.kubernetes.io/zone"]))


class WorkloadFields(unittest.TestCase):
    def test_every_version_valid(self):
        for v in VERSIONS:
            objs = everything(v)
            kinds = {o["kind"] for o in objs}
            self.assertEqual({o["apiVersion"] for o in objs}, {f"scheduling.k8s.io/{v}"})
            # A PodGroup per gang template from v1alpha2 on; v1alpha1 has inline groups only.
            self.assertEqual(kinds, {"Workload"} if v == "v1alpha1" else {"Workload", "PodGroup"})
            rc, out = check(objs)
            self.assertEqual(rc, 0, f"{v}:\n{out}")
            self.assertIn(f"{len(objs)} objects checked, 0 violations", out)

    def test_version_shapes_differ(self):
        # Relabelled with another version, each version's objects break that version's schema.
        for v in VERSIONS:
            objs = everything(v)
            for other in VERSIONS:
                if other == v:
                    continue
                moved = [dict(o, apiVersion=f"scheduling.k8s.io/{other}") for o in objs
                         if o["kind"] == "Workload" or other != "v1alpha1"]
                rc, out = check(moved)
                self.assertEqual(rc, 1, f"{v} objects passed as {other}:\n{out}")

    def test_defects_caught(self):
        pg = [o for o in render("v1beta1", os.path.join(INPUTS, "policy", "workload-topology.yaml"),
                                levels=["topology.kubernetes.io/zone"]) if o["kind"] == "PodGroup"][0]
        cases = {
            "more than 1 fields (a union)": ("spec", "schedulingPolicy", {"basic": {}, "gang": {"minCount": 2}}),
            "below minimum 1": ("spec", "schedulingPolicy", {"gang": {"minCount": 0}}),
            "more than 1 items": ("spec", "schedulingConstraints",
                                  {"topology": [{"key": "a.io/x"}, {"key": "a.io/y"}]}),
            "unknown field": ("spec", "podGroupTemplateRef", {"workload": {}}),
            "fewer than 1 fields": ("spec", "disruptionMode", {}),
        }
        for needle, (top, key, value) in cases.items():
            bad = yaml.safe_load(yaml.safe_dump(pg))
            bad[top][key] = value
            rc, out = check([bad])
            self.assertEqual(rc, 1, needle)
            self.assertIn(needle, out)


if __name__ == "__main__":
    unittest.main()
