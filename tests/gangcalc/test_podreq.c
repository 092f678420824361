/* SPDX-License-Identifier: Apache-2.0
 *
 * Per-pod request (Kubernetes PodRequests): containers, native sidecars,
 * init containers' maximum, pod-level resources, overhead, limits-only.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"
#include "gc_podreq.h"

struct pr {
  struct gb_docset *ds;
  struct gc_arena *a;
  struct gc_diags d;
  struct gc_podreq req;
  int rc;
};

static void compute(struct pr *p, const char *podspec_yaml) {
  memset(p, 0, sizeof(*p));
  gc_diags_init(&p->d);
  p->ds = gb_test_load(podspec_yaml);
  p->a = gc_arena_new(0);
  p->rc = gc_podreq_compute(p->a, p->ds->docs[0].root, "ns/x: spec", &p->req, &p->d);
}

static void done(struct pr *p) {
  gc_arena_free(p->a);
  gb_docset_free(p->ds);
  gc_diags_destroy(&p->d);
}

static void want(const struct gc_reslist *l, const char *name, const char *q) {
  char buf[GC_QUANTITY_BUFSZ];
  const char *got = gb_test_qty(l, name, buf);
  if (!q) {
    ck_assert_msg(got == NULL, "%s present", name);
    return;
  }
  ck_assert_msg(got != NULL, "%s missing", name);
  ck_assert_str_eq(got, q);
}

START_TEST(podreq_containers_sum) {
  struct pr p;
  compute(&p, "containers:\n- {name: a, resources: {requests: {cpu: 500m, memory: 1Gi}}}\n"
              "- {name: b, resources: {requests: {cpu: 250m, example.com/foo: 2}}}\n"
              "- {name: c}\n");
  ck_assert_int_eq(p.rc, 0);
  want(&p.req.request, "cpu", "750m");
  want(&p.req.request, "memory", "1Gi");
  want(&p.req.request, "example.com/foo", "2");
  ck_assert_uint_eq(p.req.n_notes, 0);
  done(&p);
}
END_TEST

START_TEST(podreq_init_max) {
  /* Init containers run one at a time: the pod needs the larger of the
   * container sum and each init container. */
  struct pr p;
  compute(&p, "containers: [{name: a, resources: {requests: {cpu: 1, memory: 1Gi}}}]\n"
              "initContainers:\n- {name: i1, resources: {requests: {cpu: 3}}}\n"
              "- {name: i2, resources: {requests: {memory: 512Mi, cpu: 2}}}\n");
  ck_assert_int_eq(p.rc, 0);
  want(&p.req.request, "cpu", "3");
  want(&p.req.request, "memory", "1Gi");
  done(&p);
}
END_TEST

START_TEST(podreq_sidecars) {
  /* A native sidecar adds to the sum and to every later init container. */
  struct pr p;
  compute(&p, "containers: [{name: a, resources: {requests: {cpu: 1}}}]\n"
              "initContainers:\n"
              "- {name: early, resources: {requests: {cpu: 1500m}}}\n"
              "- {name: side, restartPolicy: Always, resources: {requests: {cpu: 500m, "
              "memory: 100Mi}}}\n"
              "- {name: late, resources: {requests: {cpu: 2}}}\n");
  ck_assert_int_eq(p.rc, 0);
  /* sum = 1 + 0.5 = 1.5; early uses 1.5; side uses 0.5; late uses 2 + 0.5. */
  want(&p.req.request, "cpu", "2500m");
  want(&p.req.request, "memory", "100Mi");
  done(&p);
}
END_TEST

START_TEST(podreq_sidecar_larger_than_init) {
  struct pr p;
  compute(&p, "containers: [{name: a, resources: {requests: {cpu: 2}}}]\n"
              "initContainers:\n"
              "- {name: s1, restartPolicy: Always, resources: {requests: {cpu: 1}}}\n"
              "- {name: i, resources: {requests: {cpu: 1}}}\n");
  ck_assert_int_eq(p.rc, 0);
  /* sum = 3; i uses 2; max = 3 */
  want(&p.req.request, "cpu", "3");
  done(&p);
}
END_TEST

START_TEST(podreq_pod_level_and_overhead) {
  struct pr p;
  compute(&p, "containers: [{name: a, resources: {requests: {cpu: 1, memory: 1Gi, "
              "nvidia.com/gpu: 1}}}]\n"
              "resources: {requests: {cpu: 4, nvidia.com/gpu: 8}}\n"
              "overhead: {cpu: 250m, memory: 64Mi}\n");
  ck_assert_int_eq(p.rc, 0);
  /* Pod-level replaces cpu (a supported resource) but not the GPU. */
  want(&p.req.request, "cpu", "4250m");
  want(&p.req.request, "memory", "1088Mi");
  want(&p.req.request, "nvidia.com/gpu", "1");
  done(&p);
}
END_TEST

START_TEST(podreq_pod_level_hugepages) {
  struct pr p;
  compute(&p, "containers: [{name: a, resources: {requests: {hugepages-2Mi: 2Mi}}}]\n"
              "resources: {limits: {hugepages-2Mi: 10Mi, memory: 1Gi}}\n");
  ck_assert_int_eq(p.rc, 0);
  want(&p.req.request, "hugepages-2Mi", "10Mi");
  want(&p.req.request, "memory", "1Gi");
  want(&p.req.limits_only, "memory", "1Gi");
  done(&p);
}
END_TEST

START_TEST(podreq_limits_only) {
  struct pr p;
  compute(&p, "containers:\n- {name: node, resources: {limits: {nvidia.com/gpu: 4, cpu: 2}, "
              "requests: {cpu: 1}}}\n"
              "initContainers:\n- {name: i, resources: {limits: {memory: 3Gi}}}\n");
  ck_assert_int_eq(p.rc, 0);
  want(&p.req.request, "nvidia.com/gpu", "4");
  want(&p.req.request, "cpu", "1"); /* requests win over limits */
  want(&p.req.request, "memory", "3Gi");
  want(&p.req.limits_only, "nvidia.com/gpu", "4");
  want(&p.req.limits_only, "memory", "3Gi");
  want(&p.req.limits_only, "cpu", NULL);
  ck_assert_uint_eq(p.req.n_notes, 2);
  int gpu = 0;
  for (size_t i = 0; i < p.req.n_notes; i++)
    if (!strcmp(p.req.notes[i].container, "node") &&
        !strcmp(p.req.notes[i].resource, "nvidia.com/gpu"))
      gpu = 1;
  ck_assert(gpu);
  done(&p);
}
END_TEST

START_TEST(podreq_empty) {
  struct pr p;
  compute(&p, "containers: [{name: a}]\n");
  ck_assert_int_eq(p.rc, 0);
  ck_assert_uint_eq(p.req.request.n, 0);
  done(&p);
}
END_TEST

START_TEST(podreq_errors_collected) {
  struct pr p;
  compute(&p, "containers:\n- {name: a, resources: {requests: {cpu: lots}}}\n"
              "- {name: b, resources: {limits: [1]}}\n"
              "- 7\n"
              "initContainers: {}\n");
  ck_assert_int_eq(p.rc, GC_EINVAL);
  ck_assert_uint_ge(p.d.errors, 4);
  ck_assert(gb_test_has_diag(&p.d, "ns/x: spec.containers[1].resources.limits: must be an "
                             "object, not array"));
  ck_assert(gb_test_has_diag(&p.d, "ns/x: spec.containers[2]: must be an object, not integer"));
  ck_assert(gb_test_has_diag(&p.d, "ns/x: spec.initContainers: must be an array, not object"));
  int found = 0;
  for (size_t i = 0; i < p.d.n; i++)
    found |= strncmp(p.d.msgs[i], "ns/x: spec.containers[0].resources.requests.cpu", 47) == 0;
  ck_assert(found);
  done(&p);
}
END_TEST

START_TEST(podreq_negative_refused) {
  /* Kubernetes refuses negative quantities; a negative one would cancel
   * another container's or job's resources in a sum. */
  struct pr p;
  compute(&p, "containers:\n- {name: a, resources: {requests: {memory: -1Gi, cpu: 1}}}\n"
              "- {name: b, resources: {limits: {nvidia.com/gpu: -1}}}\n"
              "overhead: {cpu: '-0.5'}\n");
  ck_assert_int_eq(p.rc, GC_EINVAL);
  ck_assert_uint_eq(p.d.errors, 3);
  ck_assert(gb_test_has_diag(&p.d, "ns/x: spec.containers[0].resources.requests.memory: "
                             "Invalid value: \"-1Gi\": must be greater than or equal to 0"));
  ck_assert(gb_test_has_diag(&p.d, "ns/x: spec.containers[1].resources.limits.nvidia.com/gpu: "
                             "Invalid value: \"-1\": must be greater than or equal to 0"));
  ck_assert(gb_test_has_diag(&p.d, "ns/x: spec.overhead.cpu: Invalid value: \"-0.5\": must be "
                             "greater than or equal to 0"));
  done(&p);
  /* Zero is allowed. */
  compute(&p, "containers:\n- {name: a, resources: {requests: {memory: '0', cpu: -0}}}\n");
  ck_assert_int_eq(p.rc, 0);
  done(&p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("podreq");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, podreq_containers_sum);
  tcase_add_test(tc, podreq_init_max);
  tcase_add_test(tc, podreq_sidecars);
  tcase_add_test(tc, podreq_sidecar_larger_than_init);
  tcase_add_test(tc, podreq_pod_level_and_overhead);
  tcase_add_test(tc, podreq_pod_level_hugepages);
  tcase_add_test(tc, podreq_limits_only);
  tcase_add_test(tc, podreq_empty);
  tcase_add_test(tc, podreq_errors_collected);
  tcase_add_test(tc, podreq_negative_refused);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
