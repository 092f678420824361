#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CRD validator must accept valid PodGroups and catch each kind of defect,
or the golden tests that rely on it prove nothing."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GB_SRC", os.path.dirname(os.path.dirname(HERE)))
CRDS = os.path.join(SRC, "tests", "shared", "crds")

VALID_VOLCANO = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: job-a
  namespace: default
  labels: {app.kubernetes.io/managed-by: gangbridge}
  ownerReferences:
  - {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: job-a, uid: u-1,
     controller: true, blockOwnerDeletion: true}
spec:
  minMember: 4
  minResources: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "8"}
  queue: research
  networkTopology: {mode: hard, highestTierAllowed: 1}
"""

VALID_COSCHED = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: job-b, namespace: team-1}
spec: {minMember: 2, minResources: {cpu: 1250m}, scheduleTimeoutSeconds: 60}
"""

VALID_KAI = """
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: job-c, namespace: team-k}
spec:
  minSubGroup: 2
  queue: team-k
  subGroups:
  - {name: dataset-initializer, minMember: 0}
  - {name: node, minMember: 4}
  topologyConstraint: {topology: cluster-topology, requiredTopologyLevel: topology.kubernetes.io/zone}
"""


def run(text):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "crdcheck.py"), "--crds", CRDS, f.name],
                           capture_output=True, text=True)
        return p.returncode, p.stdout
    finally:
        os.unlink(f.name)


class CrdCheck(unittest.TestCase):
    def test_valid(self):
        for doc in (VALID_VOLCANO, VALID_COSCHED, VALID_KAI):
            rc, out = run(doc)
            self.assertEqual(rc, 0, out)
            self.assertIn("1 objects checked, 0 violations", out)

    def assertViolation(self, doc, needle):
        rc, out = run(doc)
        self.assertEqual(rc, 1, out)
        self.assertIn(needle, out)

    def test_unknown_field(self):
        self.assertViolation(VALID_COSCHED.replace("minMember: 2", "minMember: 2, minMembers: 3"),
                             "spec.minMembers: unknown field")

    def test_type(self):
        self.assertViolation(VALID_COSCHED.replace("minMember: 2", 'minMember: "2"'),
                             "spec.minMember: must be of type integer")

    def test_minimum(self):
        self.assertViolation(VALID_VOLCANO.replace("minMember: 4", "minMember: -1"), "below minimum")

    def test_enum(self):
        self.assertViolation(VALID_VOLCANO.replace("mode: hard", "mode: strict"), "not in enum")

    def test_quantity_pattern(self):
        self.assertViolation(VALID_VOLCANO.replace("memory: 16Gi", "memory: 16GB"), "does not match")

    def test_queue_pattern(self):
        self.assertViolation(VALID_VOLCANO.replace("queue: research", "queue: Research_Q"),
                             "spec.queue")

    def test_metadata(self):
        self.assertViolation(VALID_COSCHED.replace("name: job-b", "name: Job_B"), "metadata.name")
        self.assertViolation(VALID_COSCHED.replace("namespace: team-1", "namespace: ''"),
                             "metadata.namespace")
        self.assertViolation(VALID_VOLCANO.replace("uid: u-1,", ""), "ownerReferences[0].uid")

    def test_kai_schema(self):
        self.assertViolation(VALID_KAI.replace("minSubGroup: 2", "minSubGroup: 2\n  minResources: {cpu: 1}"),
                             "spec.minResources: unknown field")
        self.assertViolation(VALID_KAI.replace("name: node,", "name: Node_1,"), "does not match")
        self.assertViolation(VALID_KAI.replace("minMember: 4", "minMember: -1"), "below minimum")

    def test_kai_rules(self):
        self.assertViolation(VALID_KAI.replace("minSubGroup: 2", "minSubGroup: 2\n  minMember: 4"),
                             "mutually exclusive")
        self.assertViolation(VALID_KAI.replace("minSubGroup: 2", "minSubGroup: 3"),
                             "spec.minSubGroup: 3 must be 1..2")
        self.assertViolation(VALID_KAI.replace("{name: node, minMember: 4}", "{name: node}"),
                             "spec.subGroups[1].minMember: required on a leaf")
        self.assertViolation(VALID_KAI.replace("name: dataset-initializer,", "name: node,"),
                             "is not unique")
        self.assertViolation(VALID_KAI.replace("minMember: 4}", "minMember: 4, parent: ghost}"),
                             "names no sub-group")

    def test_unknown_kind(self):
        self.assertViolation(VALID_COSCHED.replace("v1alpha1", "v1beta9"), "no CRD defines")


if __name__ == "__main__":
    unittest.main()
