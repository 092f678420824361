/* SPDX-License-Identifier: Apache-2.0
 *
 * test_rpc_server: the gRPC server, service and C client, in process.  Each
 * test starts a server on 127.0.0.1:0 with a 1 MiB message cap and calls
 * it through gb_rpc_client.  Check's fork mode is off (set below): fork()
 * after grpc_init() breaks gRPC.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gangbridge/v1/calculator.pb-c.h"
#include "gangbridge/v1/placement.pb-c.h"
#include "gb_emit.h"
#include "gb_manifest.h"
#include "gb_rpc_client.h"
#include "gb_rpc_client_test.h"
#include "gb_rpc_server.h"
#include "gb_rpc_server_test.h"
#include "gb_rpc_service.h"
#include "gb_rpc_service_test.h"
#include "gb_test.h"
#include "gc_gang.h"
#include "grpc/health/v1/health.pb-c.h"

#define CALC "/gangbridge.v1.GangCalculator/Calculate"
#define EVAL "/gangbridge.v1.PlacementEvaluator/Evaluate"
#define REPLACE "/gangbridge.v1.PlacementEvaluator/ReplaceSnapshot"
#define UPDATE "/gangbridge.v1.PlacementEvaluator/UpdateNodes"
#define STATUS "/gangbridge.v1.PlacementEvaluator/GetSnapshotStatus"
#define CHECK "/grpc.health.v1.Health/Check"
#define WATCH "/grpc.health.v1.Health/Watch"
#define CAP (1 << 20)

static struct gb_rpc_service *svc;
static struct gb_rpc_server *srv;
static struct gb_rpc_client *cl;
static char addr[64];

static struct gb_rpc_client *client_for(const char *target) {
  struct gb_rpc_client_config cc;
  memset(&cc, 0, sizeof(cc));
  cc.addr = target;
  struct gb_rpc_client *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_client_new(&cc, &c, &d), 0);
  gc_diags_destroy(&d);
  return c;
}

static const char *addr_of(int port) {
  static char buf[64];
  snprintf(buf, sizeof(buf), "127.0.0.1:%d", port);
  return buf;
}

/* Starts srv (with the real service unless extra is set up by the test). */
static void start_server(int threads, int grace_ms) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = threads;
  cfg.max_message_bytes = CAP;
  cfg.grace_ms = grace_ms;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  svc = gb_rpc_service_new();
  ck_assert_ptr_nonnull(svc);
  ck_assert_int_eq(gb_rpc_service_register(svc, srv), 0);
  gb_rpc_service_allow_writes(svc, 1); /* as serve --offline does */
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  ck_assert_int_gt(gb_rpc_server_port(srv), 0);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gb_rpc_server_port(srv));
  cl = client_for(addr);
}

static void setup(void) {
  start_server(2, 2000);
}

static void teardown(void) {
  gb_rpc_client_free(cl);
  cl = NULL;
  gb_rpc_server_free(srv);
  srv = NULL;
  gb_rpc_service_free(svc);
  svc = NULL;
  gb_test_strings_free();
}

/* Calls method and returns the status code; *reply set when OK. */
static int call(const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *rd, int timeout_ms, ProtobufCMessage **reply,
                char *msg, size_t msg_cap) {
  struct gb_rpc_status st = {0, NULL};
  ProtobufCMessage *r = NULL;
  ck_assert_int_eq(gb_rpc_client_call(cl, method, req, rd, timeout_ms, &r, &st), 0);
  int code = st.code;
  if (msg)
    snprintf(msg, msg_cap, "%s", st.message ? st.message : "");
  gb_rpc_status_clear(&st);
  if (reply)
    *reply = r;
  else if (r)
    protobuf_c_message_free_unpacked(r, NULL);
  return code;
}

static int health(const char *service, int *serving) {
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  req.service = (char *)service;
  ProtobufCMessage *r = NULL;
  int code = call(CHECK, &req.base, &grpc__health__v1__health_check_response__descriptor, 5000,
                  &r, NULL, 0);
  if (r) {
    *serving = ((Grpc__Health__V1__HealthCheckResponse *)r)->status;
    protobuf_c_message_free_unpacked(r, NULL);
  }
  return code;
}

/* ---------------------------------------------------------------- health */

START_TEST(test_health) {
  int st = -1;
  ck_assert_int_eq(health("", &st), GB_RPC_OK);
  ck_assert_int_eq(st, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
  const char *names[] = {GB_RPC_SERVICE_CALCULATOR, GB_RPC_SERVICE_PLACEMENT,
                         GB_RPC_SERVICE_HEALTH};
  for (size_t i = 0; i < 3; i++) {
    st = -1;
    ck_assert_int_eq(health(names[i], &st), GB_RPC_OK);
    ck_assert_int_eq(st, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
  }
  ck_assert_int_eq(health("nope.v1.Missing", &st), GB_RPC_NOT_FOUND);
  gb_rpc_service_set_serving(svc, 0);
  ck_assert_int_eq(health("", &st), GB_RPC_OK);
  ck_assert_int_eq(st, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
}
END_TEST

START_TEST(test_health_watch_unimplemented) {
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  char msg[256];
  ck_assert_int_eq(call(WATCH, &req.base, &grpc__health__v1__health_check_response__descriptor,
                        5000, NULL, msg, sizeof(msg)),
                   GB_RPC_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(msg, "Watch"));
}
END_TEST

START_TEST(test_unknown_method) {
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  char msg[256];
  ck_assert_int_eq(call("/gangbridge.v1.GangCalculator/Nope", &req.base,
                        &grpc__health__v1__health_check_response__descriptor, 5000, NULL, msg,
                        sizeof(msg)),
                   GB_RPC_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(msg, "/gangbridge.v1.GangCalculator/Nope"));
  ck_assert_int_eq(call("/no.such.Service/Method", &req.base,
                        &grpc__health__v1__health_check_response__descriptor, 5000, NULL, NULL,
                        0),
                   GB_RPC_UNIMPLEMENTED);
}
END_TEST

/* ------------------------------------------------------------- Calculate */

/* Example manifests, read once by main. */
static char *runtime_text, *job_text;

static const char *runtime_yaml(void) {
  return runtime_text;
}

static const char *job_yaml(void) {
  return job_text;
}

/* Computes the gang of the given manifests locally, as render does, and
 * returns the PodGroup's pretty JSON (malloc'd) and min_member. */
static char *local_render(const char *const *texts, size_t n, const struct gc_backend *backend,
                          int32_t *min_member) {
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(gb_manifest_load_buffer(ds, "x", texts[i], strlen(texts[i]), &d), 0);
  const struct gc_value *job = NULL;
  for (size_t i = 0; i < ds->n; i++) {
    const char *kind = NULL;
    if (!gc_catalog_trainer_kind(ds->docs[i].root, &kind))
      continue;
    if (!strcmp(kind, "TrainJob"))
      job = ds->docs[i].root;
    else
      gc_catalog_add(cat, ds->docs[i].root, "x", &d);
  }
  ck_assert_ptr_nonnull(job);
  struct gc_options o;
  memset(&o, 0, sizeof(o));
  o.backend = backend;
  struct gc_gang *g = NULL;
  ck_assert_int_eq(gc_gang_compute(job, cat, &o, &g, &d), 0);
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *pg = NULL;
  ck_assert_int_eq(gc_render_podgroup(g, a, &pg), 0);
  char *json = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_emit_json(pg, 1, &json, &len), 0);
  *min_member = g->min_member;
  gc_arena_free(a);
  gc_gang_free(g);
  gc_catalog_free(cat);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return json;
}

static int calculate(const char *const *texts, size_t n, Gangbridge__V1__Backend backend,
                     Gangbridge__V1__CalculateResponse **resp, char *msg, size_t cap) {
  ProtobufCBinaryData docs[8];
  ck_assert_uint_le(n, 8);
  for (size_t i = 0; i < n; i++) {
    docs[i].data = (uint8_t *)texts[i];
    docs[i].len = strlen(texts[i]);
  }
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  req.manifests = docs;
  req.n_manifests = n;
  req.backend = backend;
  ProtobufCMessage *r = NULL;
  int code = call(CALC, &req.base, &gangbridge__v1__calculate_response__descriptor, 10000, &r,
                  msg, cap);
  if (resp)
    *resp = (Gangbridge__V1__CalculateResponse *)r;
  else if (r)
    protobuf_c_message_free_unpacked(r, NULL);
  return code;
}

/* The wire values of gangbridge.v1.Backend are the descriptors' (the one
 * place the mapping lives): every non-zero value of the generated enum is
 * the backend of that name, and every backend has its value there. */
START_TEST(test_backend_wire_values) {
  const ProtobufCEnumDescriptor *e = &gangbridge__v1__backend__descriptor;
  size_t named = 0;
  for (unsigned i = 0; i < e->n_values; i++) {
    const ProtobufCEnumValue *v = &e->values[i];
    const struct gc_backend *b = gc_backend_by_proto(v->value);
    if (v->value == GANGBRIDGE__V1__BACKEND__BACKEND_UNSPECIFIED) {
      ck_assert_ptr_null(b);
      continue;
    }
    ck_assert_msg(b != NULL, "%s (%d) has no backend descriptor", v->name, v->value);
    char want[64];
    int n = snprintf(want, sizeof(want), "BACKEND_");
    for (const char *p = b->name; *p && (size_t)n + 1 < sizeof(want); p++)
      want[n++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    want[n] = '\0';
    ck_assert_str_eq(v->name, want);
    named++;
  }
  ck_assert_uint_eq(named, gc_backend_count());
}
END_TEST

START_TEST(test_calculate_matches_render) {
  const char *texts[] = {runtime_yaml(), job_yaml()};
  Gangbridge__V1__Backend backends[] = {GANGBRIDGE__V1__BACKEND__BACKEND_UNSPECIFIED,
                                        GANGBRIDGE__V1__BACKEND__BACKEND_COSCHEDULING};
  const struct gc_backend *local[] = {NULL, gc_backend_by_name("coscheduling")};
  for (size_t b = 0; b < 2; b++) {
    Gangbridge__V1__CalculateResponse *resp = NULL;
    char msg[1024];
    ck_assert_msg(calculate(texts, 2, backends[b], &resp, msg, sizeof(msg)) == GB_RPC_OK, "%s",
                  msg);
    int32_t min_member = 0;
    char *want = local_render(texts, 2, local[b], &min_member);
    ck_assert_ptr_nonnull(resp->gang);
    ck_assert_int_eq(resp->gang->min_member, min_member);
    ck_assert_int_gt(resp->gang->min_member, 0);
    ck_assert_str_eq(resp->gang->name, "multi-node-example");
    ck_assert_str_eq(resp->gang->namespace_, "default");
    ck_assert_str_eq(resp->gang->runtime_name, "torch-distributed");
    ck_assert_int_eq(resp->gang->backend, b ? GANGBRIDGE__V1__BACKEND__BACKEND_COSCHEDULING
                                            : GANGBRIDGE__V1__BACKEND__BACKEND_VOLCANO);
    ck_assert_uint_ge(resp->gang->n_pod_sets, 1);
    int32_t counted = 0;
    for (size_t i = 0; i < resp->gang->n_pod_sets; i++)
      if (resp->gang->pod_sets[i]->binding == GANGBRIDGE__V1__BINDING__BINDING_GANG)
        counted += resp->gang->pod_sets[i]->count * resp->gang->pod_sets[i]->replicas;
    ck_assert_int_eq(counted, min_member);
    ck_assert_uint_eq(resp->pod_group_json.len, strlen(want));
    ck_assert(memcmp(resp->pod_group_json.data, want, strlen(want)) == 0);
    free(want);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
  }
}
END_TEST

/* A repeated request is answered from the reply cache with the same bytes;
 * a request that differs in one option is not. */
START_TEST(test_calculate_cache) {
  const char *texts[] = {runtime_yaml(), job_yaml()};
  Gangbridge__V1__CalculateResponse *a = NULL, *b = NULL, *c = NULL;
  ck_assert_int_eq(calculate(texts, 2, 0, &a, NULL, 0), GB_RPC_OK);
  ck_assert_int_eq(calculate(texts, 2, 0, &b, NULL, 0), GB_RPC_OK);
  ck_assert_int_eq(calculate(texts, 2, GANGBRIDGE__V1__BACKEND__BACKEND_COSCHEDULING, &c, NULL, 0),
                   GB_RPC_OK);
  size_t la = gangbridge__v1__calculate_response__get_packed_size(a);
  size_t lb = gangbridge__v1__calculate_response__get_packed_size(b);
  uint8_t *pa = malloc(la), *pb = malloc(lb);
  gangbridge__v1__calculate_response__pack(a, pa);
  gangbridge__v1__calculate_response__pack(b, pb);
  ck_assert_uint_eq(la, lb);
  ck_assert(memcmp(pa, pb, la) == 0);
  ck_assert_int_eq(c->gang->backend, GANGBRIDGE__V1__BACKEND__BACKEND_COSCHEDULING);
  ck_assert_int_eq(a->gang->backend, GANGBRIDGE__V1__BACKEND__BACKEND_VOLCANO);
  free(pa);
  free(pb);
  protobuf_c_message_free_unpacked(&a->base, NULL);
  protobuf_c_message_free_unpacked(&b->base, NULL);
  protobuf_c_message_free_unpacked(&c->base, NULL);
}
END_TEST

/* gb_rpc_server_invoke runs the same path as a call: same reply bytes,
 * same status for bad input and unknown methods. */
START_TEST(test_invoke) {
  const char *texts[] = {runtime_yaml(), job_yaml()};
  ProtobufCBinaryData docs[2] = {{strlen(texts[0]), (uint8_t *)texts[0]},
                                 {strlen(texts[1]), (uint8_t *)texts[1]}};
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  req.manifests = docs;
  req.n_manifests = 2;
  size_t len = gangbridge__v1__calculate_request__get_packed_size(&req);
  uint8_t *bytes = malloc(len);
  gangbridge__v1__calculate_request__pack(&req, bytes);
  void *out = NULL, *net = NULL;
  size_t out_len = 0, net_len = 0;
  int code = -1;
  char msg[256];
  ck_assert_int_eq(gb_rpc_server_invoke(srv, CALC, bytes, len, &out, &out_len, &code, msg,
                                        sizeof(msg)),
                   0);
  ck_assert_int_eq(code, GB_RPC_OK);
  struct gb_rpc_status st = {0, NULL};
  ck_assert_int_eq(gb_rpc_client_call_raw(cl, CALC, bytes, len, 5000, &net, &net_len, &st), 0);
  ck_assert_int_eq(st.code, GB_RPC_OK);
  ck_assert_uint_eq(out_len, net_len);
  ck_assert(memcmp(out, net, out_len) == 0);
  gb_rpc_status_clear(&st);
  free(out);
  free(net);
  ck_assert_int_eq(gb_rpc_server_invoke(srv, CALC, "\xff\xff", 2, &out, &out_len, &code, msg,
                                        sizeof(msg)),
                   0);
  ck_assert_int_eq(code, GB_RPC_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(gb_rpc_server_invoke(srv, WATCH, "", 0, &out, &out_len, &code, msg,
                                        sizeof(msg)),
                   0);
  ck_assert_int_eq(code, GB_RPC_UNIMPLEMENTED);
  free(bytes);
}
END_TEST

/* Cached documents are named by their position in each request. */
START_TEST(test_document_cache_origins) {
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  const char *noname = "apiVersion: trainer.kubeflow.org/v1alpha1\n"
                       "kind: ClusterTrainingRuntime\nmetadata: {}\nspec: {}\n";
  const char *first[] = {noname, job_yaml()};
  ck_assert_int_eq(calculate(first, 2, 0, NULL, msg, sizeof(msg)), GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "manifests[0]:") != NULL, "%s", msg);
  const char *second[] = {job_yaml(), noname};
  ck_assert_int_eq(calculate(second, 2, 0, NULL, msg, sizeof(msg)), GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "manifests[1]:") != NULL && !strstr(msg, "manifests[0]:"), "%s",
                msg);
}
END_TEST

START_TEST(test_calculate_errors) {
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  /* No manifests at all. */
  ck_assert_int_eq(calculate(NULL, 0, 0, NULL, msg, sizeof(msg)), GB_RPC_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(msg, "manifests"));
  /* A syntax error names the entry, line and column. */
  const char *bad[] = {"apiVersion: v1\nkind: [unclosed\n"};
  ck_assert_int_eq(calculate(bad, 1, 0, NULL, msg, sizeof(msg)), GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "manifests[0]:") != NULL, "%s", msg);
  /* A TrainJob whose runtime is not given. */
  const char *alone[] = {job_yaml()};
  ck_assert_int_eq(calculate(alone, 1, 0, NULL, msg, sizeof(msg)), GB_RPC_NOT_FOUND);
  ck_assert_msg(strstr(msg, "torch-distributed") != NULL, "%s", msg);
  /* Only a runtime: no TrainJob. */
  const char *rt[] = {runtime_yaml()};
  ck_assert_int_eq(calculate(rt, 1, 0, NULL, msg, sizeof(msg)), GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "no TrainJob") != NULL, "%s", msg);
  /* A semantic error names the object and the field path. */
  const char *neg[] = {runtime_yaml(),
                       "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                       "metadata: {name: neg, namespace: team}\n"
                       "spec:\n  runtimeRef: {name: torch-distributed}\n"
                       "  trainer: {numNodes: -2}\n"};
  ck_assert_int_eq(calculate(neg, 2, 0, NULL, msg, sizeof(msg)), GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "team/neg") && strstr(msg, "spec.trainer.numNodes"), "%s", msg);
  /* For the Workload API, a runtime carrying Trainer's own scheduling stanza is ganged by
   * Trainer: there is no object to give (never a second Workload for one TrainJob). */
  const char *stanza[] = {"apiVersion: trainer.kubeflow.org/v1alpha1\n"
                          "kind: ClusterTrainingRuntime\nmetadata: {name: torch-distributed}\n"
                          "spec:\n  scheduling: {schedulingPolicy: {gang: {}}}\n"
                          "  mlPolicy: {numNodes: 2, torch: {}}\n"
                          "  template:\n    spec:\n      replicatedJobs:\n      - name: node\n"
                          "        template:\n          metadata: {labels: "
                          "{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
                          "          spec: {template: {spec: {containers: [{name: node}]}}}\n",
                          job_yaml()};
  ck_assert_int_eq(
      calculate(stanza, 2, GANGBRIDGE__V1__BACKEND__BACKEND_WORKLOAD, NULL, msg, sizeof(msg)),
      GB_RPC_FAILED_PRECONDITION);
  ck_assert_msg(strstr(msg, "spec.scheduling") && strstr(msg, "writes no Workload"), "%s", msg);
  /* The same runtime rendered for Volcano is a gang as usual. */
  ck_assert_int_eq(
      calculate(stanza, 2, GANGBRIDGE__V1__BACKEND__BACKEND_VOLCANO, NULL, msg, sizeof(msg)),
      GB_RPC_OK);
}
END_TEST

START_TEST(test_malformed_bytes) {
  static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a, 0x80};
  struct gb_rpc_status st = {0, NULL};
  void *out = NULL;
  size_t n = 0;
  ck_assert_int_eq(gb_rpc_client_call_raw(cl, CALC, junk, sizeof(junk), 5000, &out, &n, &st), 0);
  ck_assert_int_eq(st.code, GB_RPC_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.message, "gangbridge.v1.CalculateRequest"));
  ck_assert_ptr_null(out);
  gb_rpc_status_clear(&st);
  /* The server still serves afterwards. */
  int serving = -1;
  ck_assert_int_eq(health("", &serving), GB_RPC_OK);
}
END_TEST

START_TEST(test_oversized) {
  size_t big = CAP + 4096;
  char *blob = malloc(big);
  ck_assert_ptr_nonnull(blob);
  memset(blob, 'x', big);
  ProtobufCBinaryData doc = {big, (uint8_t *)blob};
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  req.manifests = &doc;
  req.n_manifests = 1;
  char msg[512];
  ck_assert_int_eq(call(CALC, &req.base, &gangbridge__v1__calculate_response__descriptor, 10000,
                        NULL, msg, sizeof(msg)),
                   GB_RPC_RESOURCE_EXHAUSTED);
  free(blob);
  int serving = -1;
  ck_assert_int_eq(health("", &serving), GB_RPC_OK);
}
END_TEST

START_TEST(test_expired_deadline) {
  /* 200 different copies of the runtime (a comment differs, so the
   * server's document cache cannot share them) make a request that takes
   * longer than 1 ms to parse, so a 1 ms deadline passes before or while
   * it is handled. */
  size_t copies = 200, rl = strlen(runtime_yaml());
  ProtobufCBinaryData *docs = calloc(copies + 1, sizeof(*docs));
  char *texts = malloc(copies * (rl + 32));
  ck_assert_ptr_nonnull(docs);
  ck_assert_ptr_nonnull(texts);
  for (size_t i = 0; i < copies; i++) {
    char *t = texts + i * (rl + 32);
    int n = snprintf(t, rl + 32, "# copy %zu\n%s", i, runtime_yaml());
    docs[i] = (ProtobufCBinaryData){(size_t)n, (uint8_t *)t};
  }
  docs[copies] = (ProtobufCBinaryData){strlen(job_yaml()), (uint8_t *)job_yaml()};
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  req.manifests = docs;
  req.n_manifests = copies + 1;
  ck_assert_uint_lt(gangbridge__v1__calculate_request__get_packed_size(&req), CAP);
  /* With time the same request succeeds. */
  ck_assert_int_eq(call(CALC, &req.base, &gangbridge__v1__calculate_response__descriptor, 20000,
                        NULL, NULL, 0),
                   GB_RPC_OK);
  /* New copies, so neither cache can answer it at once. */
  for (size_t i = 0; i < copies; i++)
    texts[i * (rl + 32) + 2] = 'C';
  char msg[256];
  ck_assert_int_eq(call(CALC, &req.base, &gangbridge__v1__calculate_response__descriptor, 1, NULL,
                        msg, sizeof(msg)),
                   GB_RPC_DEADLINE_EXCEEDED);
  free(docs);
  free(texts);
  int serving = -1;
  ck_assert_int_eq(health("", &serving), GB_RPC_OK);
}
END_TEST

/* ------------------------------------------------------------- snapshot */

static const char *cluster_yaml =
    "apiVersion: v1\nkind: Node\nmetadata: {name: n0, labels: {rack: r0}}\n"
    "status: {allocatable: {cpu: '8', memory: 32Gi, pods: '110'}}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {rack: r0}}\n"
    "status: {allocatable: {cpu: '8', memory: 32Gi, pods: '110'}}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata: {name: n2, labels: {rack: r1}}\n"
    "status: {allocatable: {cpu: '8', memory: 32Gi, pods: '110'}}\n";

/* An UpdateNodes request that removes one node; the caller's struct owns the
 * pieces, so the request stays valid while it lives. */
struct remove_node_request {
  Gangbridge__V1__NodeUpdate update;
  Gangbridge__V1__NodeUpdate *updates[1];
  Gangbridge__V1__UpdateNodesRequest req;
};

static void remove_node_request(struct remove_node_request *r, char *node) {
  gangbridge__v1__node_update__init(&r->update);
  r->update.name = node;
  r->update.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_REMOVE;
  r->update.remove = 1;
  r->updates[0] = &r->update;
  gangbridge__v1__update_nodes_request__init(&r->req);
  r->req.updates = r->updates;
  r->req.n_updates = 1;
}

static Gangbridge__V1__SnapshotStatus *snapshot_call(const char *method,
                                                     const ProtobufCMessage *req, int want,
                                                     char *msg, size_t cap) {
  ProtobufCMessage *r = NULL;
  int code = call(method, req, &gangbridge__v1__snapshot_status__descriptor, 10000, &r, msg, cap);
  ck_assert_msg(code == want, "%s: got %s (%s)", method, gb_rpc_code_name(code), msg);
  return (Gangbridge__V1__SnapshotStatus *)r;
}

START_TEST(test_snapshot_lifecycle) {
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  Gangbridge__V1__GetSnapshotStatusRequest sreq;
  gangbridge__v1__get_snapshot_status_request__init(&sreq);
  Gangbridge__V1__SnapshotStatus *st = snapshot_call(STATUS, &sreq.base, GB_RPC_OK, msg,
                                                     sizeof(msg));
  ck_assert(!st->ready);
  protobuf_c_message_free_unpacked(&st->base, NULL);

  /* Updates without a snapshot are refused. */
  struct remove_node_request rm;
  remove_node_request(&rm, "n0");
  snapshot_call(UPDATE, &rm.req.base, GB_RPC_FAILED_PRECONDITION, msg, sizeof(msg));

  /* Replace with three nodes on two racks. */
  ProtobufCBinaryData doc = {strlen(cluster_yaml), (uint8_t *)cluster_yaml};
  char *levels[] = {"rack"};
  Gangbridge__V1__ReplaceSnapshotRequest rreq;
  gangbridge__v1__replace_snapshot_request__init(&rreq);
  rreq.cluster = &doc;
  rreq.n_cluster = 1;
  rreq.levels = levels;
  rreq.n_levels = 1;
  st = snapshot_call(REPLACE, &rreq.base, GB_RPC_OK, msg, sizeof(msg));
  ck_assert(st->ready);
  ck_assert_int_eq(st->nodes, 3);
  ck_assert_int_eq(st->domains, 2);
  uint64_t gen = st->generation;
  protobuf_c_message_free_unpacked(&st->base, NULL);

  /* Remove one node and change another's free resources. */
  Gangbridge__V1__NodeUpdate f;
  gangbridge__v1__node_update__init(&f);
  f.name = "n1";
  f.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_FREE;
  Gangbridge__V1__Quantities q;
  gangbridge__v1__quantities__init(&q);
  Gangbridge__V1__Quantities__ValuesEntry e;
  gangbridge__v1__quantities__values_entry__init(&e);
  e.key = "cpu";
  e.value = "2";
  Gangbridge__V1__Quantities__ValuesEntry *ep[1] = {&e};
  q.values = ep;
  q.n_values = 1;
  f.free = &q;
  Gangbridge__V1__NodeUpdate *two[2] = {&rm.update, &f};
  rm.req.updates = two;
  rm.req.n_updates = 2;
  st = snapshot_call(UPDATE, &rm.req.base, GB_RPC_OK, msg, sizeof(msg));
  ck_assert_int_eq(st->nodes, 2);
  ck_assert_uint_gt(st->generation, gen);
  protobuf_c_message_free_unpacked(&st->base, NULL);

  /* An unknown node is NOT_FOUND and nothing is applied. */
  rm.update.name = "ghost";
  rm.req.updates = rm.updates;
  rm.req.n_updates = 1;
  snapshot_call(UPDATE, &rm.req.base, GB_RPC_NOT_FOUND, msg, sizeof(msg));
  ck_assert_ptr_nonnull(strstr(msg, "updates[0].name"));

  /* A bad quantity names its field. */
  e.value = "lots";
  f.name = "n1";
  rm.req.updates = two + 1;
  snapshot_call(UPDATE, &rm.req.base, GB_RPC_INVALID_ARGUMENT, msg, sizeof(msg));
  ck_assert_msg(strstr(msg, "updates[0].free") != NULL, "%s", msg);

  /* A bad cluster document keeps the old snapshot. */
  const char *bad = "apiVersion: v1\nkind: Node\nmetadata: {name: x}\nstatus: {allocatable: "
                    "{cpu: nonsense}}\n";
  ProtobufCBinaryData bdoc = {strlen(bad), (uint8_t *)bad};
  rreq.cluster = &bdoc;
  snapshot_call(REPLACE, &rreq.base, GB_RPC_INVALID_ARGUMENT, msg, sizeof(msg));
  st = snapshot_call(STATUS, &sreq.base, GB_RPC_OK, msg, sizeof(msg));
  ck_assert(st->ready);
  ck_assert_int_eq(st->nodes, 2);
  protobuf_c_message_free_unpacked(&st->base, NULL);
}
END_TEST

static int evaluate_spec_cpu(int pods, const char *cpu_each,
                             Gangbridge__V1__EvaluateResponse **resp, char *msg, size_t cap);

/* Sends one UpdateNodes update and expects code and a message containing
 * want. */
static void update_expect(Gangbridge__V1__NodeUpdate *u, int code, const char *want) {
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  Gangbridge__V1__NodeUpdate *one[1] = {u};
  Gangbridge__V1__UpdateNodesRequest req;
  gangbridge__v1__update_nodes_request__init(&req);
  req.updates = one;
  req.n_updates = 1;
  Gangbridge__V1__SnapshotStatus *st = snapshot_call(UPDATE, &req.base, code, msg, sizeof(msg));
  if (st)
    protobuf_c_message_free_unpacked(&st->base, NULL);
  ck_assert_msg(!want || strstr(msg, want), "'%s' not in '%s'", want, msg);
}

static void replace_with(const char *yaml, int code, const char *want) {
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  ProtobufCBinaryData doc = {yaml ? strlen(yaml) : 0, (uint8_t *)yaml};
  Gangbridge__V1__ReplaceSnapshotRequest rreq;
  gangbridge__v1__replace_snapshot_request__init(&rreq);
  rreq.cluster = &doc;
  rreq.n_cluster = yaml ? 1 : 0;
  Gangbridge__V1__SnapshotStatus *st = snapshot_call(REPLACE, &rreq.base, code, msg, sizeof(msg));
  if (st)
    protobuf_c_message_free_unpacked(&st->base, NULL);
  ck_assert_msg(!want || strstr(msg, want), "'%s' not in '%s'", want, msg);
}

#define UPOD(name, node, cpu)                                                               \
  "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ns}\n"                   \
  "spec: {nodeName: " node ", containers: [{name: c, resources: {requests: {cpu: '" cpu "'}}}]}\n"

/* Every snapshot write is checked against the model; an empty replace is
 * refused; the live snapshot is unchanged by a refused update. */
START_TEST(test_snapshot_updates_validated) {
  replace_with(NULL, GB_RPC_INVALID_ARGUMENT, "cluster: no Node");
  replace_with("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", GB_RPC_INVALID_ARGUMENT,
               "cluster: no Node");
  replace_with(cluster_yaml, GB_RPC_OK, NULL);
  Gangbridge__V1__NodeUpdate u;
  /* Released but never bound. */
  const char *ghost = UPOD("ghost", "n0", "2");
  gangbridge__v1__node_update__init(&u);
  u.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_RELEASED_POD;
  u.released_pod = (ProtobufCBinaryData){strlen(ghost), (uint8_t *)ghost};
  update_expect(&u, GB_RPC_INVALID_ARGUMENT, "was never bound");
  /* A bound pod naming another node than the update. */
  gangbridge__v1__node_update__init(&u);
  u.name = "n1";
  u.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_BOUND_POD;
  u.bound_pod = (ProtobufCBinaryData){strlen(ghost), (uint8_t *)ghost};
  update_expect(&u, GB_RPC_INVALID_ARGUMENT, "updates[0].bound_pod");
  /* Free above allocatable, and negative. */
  Gangbridge__V1__Quantities q;
  gangbridge__v1__quantities__init(&q);
  Gangbridge__V1__Quantities__ValuesEntry e;
  gangbridge__v1__quantities__values_entry__init(&e);
  e.key = "cpu";
  e.value = "9";
  Gangbridge__V1__Quantities__ValuesEntry *ep[1] = {&e};
  q.values = ep;
  q.n_values = 1;
  gangbridge__v1__node_update__init(&u);
  u.name = "n1";
  u.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_FREE;
  u.free = &q;
  update_expect(&u, GB_RPC_INVALID_ARGUMENT, "updates[0].free.values[cpu]");
  e.value = "-1";
  update_expect(&u, GB_RPC_INVALID_ARGUMENT, "negative");
  /* Nothing was applied: all 3 x 8 cpu are free (6 pods of 4 fit). */
  Gangbridge__V1__EvaluateResponse *r = NULL;
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  ck_assert_int_eq(evaluate_spec_cpu(6, "4", &r, msg, sizeof(msg)), GB_RPC_OK);
  ck_assert_msg(r->feasible, "%s", msg);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  /* A proper bind then release is accepted. */
  const char *p1 = UPOD("p1", "n1", "2");
  gangbridge__v1__node_update__init(&u);
  u.name = "n1";
  u.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_BOUND_POD;
  u.bound_pod = (ProtobufCBinaryData){strlen(p1), (uint8_t *)p1};
  update_expect(&u, GB_RPC_OK, NULL);
  u.change_case = GANGBRIDGE__V1__NODE_UPDATE__CHANGE_RELEASED_POD;
  u.released_pod = u.bound_pod;
  update_expect(&u, GB_RPC_OK, NULL);
}
END_TEST

/* With snapshot writes disabled (the default outside --offline), both
 * mutating methods answer FAILED_PRECONDITION and the snapshot stays. */
START_TEST(test_snapshot_writes_disabled) {
  replace_with(cluster_yaml, GB_RPC_OK, NULL);
  gb_rpc_service_allow_writes(svc, 0);
  replace_with(cluster_yaml, GB_RPC_FAILED_PRECONDITION, "snapshot writes are disabled");
  struct remove_node_request rm;
  remove_node_request(&rm, "n0");
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  snapshot_call(UPDATE, &rm.req.base, GB_RPC_FAILED_PRECONDITION, msg, sizeof(msg));
  ck_assert_ptr_nonnull(strstr(msg, "snapshot writes are disabled"));
  int ready;
  uint64_t gen;
  size_t nodes, domains;
  gb_rpc_service_snapshot_status(svc, &ready, &gen, &nodes, &domains);
  ck_assert_uint_eq(nodes, 3);
}
END_TEST

static int evaluate_spec_with(int pods, const char *cpu_each, const char *cluster,
                              int with_levels, Gangbridge__V1__EvaluateResponse **resp,
                              char *msg, size_t cap);

/* Evaluate on a compact gang of `pods` pods of 4 cpu each. */
static int evaluate_spec(int pods, const char *cluster, int with_levels,
                         Gangbridge__V1__EvaluateResponse **resp, char *msg, size_t cap) {
  return evaluate_spec_with(pods, "4", cluster, with_levels, resp, msg, cap);
}

/* Evaluate pods of cpu_each cpu on the live snapshot (soft mode). */
static int evaluate_spec_cpu(int pods, const char *cpu_each,
                             Gangbridge__V1__EvaluateResponse **resp,
                             char *msg, size_t cap) {
  return evaluate_spec_with(pods, cpu_each, NULL, 0, resp, msg, cap);
}

static int evaluate_spec_with(int pods, const char *cpu_each, const char *cluster,
                              int with_levels, Gangbridge__V1__EvaluateResponse **resp,
                              char *msg, size_t cap) {
  Gangbridge__V1__GangPodSet__RequestEntry cpu;
  gangbridge__v1__gang_pod_set__request_entry__init(&cpu);
  cpu.key = "cpu";
  cpu.value = (char *)cpu_each;
  Gangbridge__V1__GangPodSet__RequestEntry *reqs[1] = {&cpu};
  Gangbridge__V1__GangPodSet ps;
  gangbridge__v1__gang_pod_set__init(&ps);
  ps.name = "worker";
  ps.pods = pods;
  ps.request = reqs;
  ps.n_request = 1;
  Gangbridge__V1__GangPodSet *sets[1] = {&ps};
  Gangbridge__V1__GangSpec spec;
  gangbridge__v1__gang_spec__init(&spec);
  spec.pod_sets = sets;
  spec.n_pod_sets = 1;
  Gangbridge__V1__EvaluateRequest req;
  gangbridge__v1__evaluate_request__init(&req);
  req.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_GANG;
  req.gang = &spec;
  Gangbridge__V1__TopologyPolicy pol;
  gangbridge__v1__topology_policy__init(&pol);
  pol.mode = "soft";
  req.policy = &pol;
  ProtobufCBinaryData doc = {cluster ? strlen(cluster) : 0, (uint8_t *)cluster};
  char *levels[] = {"rack"};
  if (cluster) {
    req.cluster = &doc;
    req.n_cluster = 1;
    if (with_levels) {
      req.levels = levels;
      req.n_levels = 1;
    }
  }
  ProtobufCMessage *r = NULL;
  int code = call(EVAL, &req.base, &gangbridge__v1__evaluate_response__descriptor, 10000, &r, msg,
                  cap);
  if (resp)
    *resp = (Gangbridge__V1__EvaluateResponse *)r;
  else if (r)
    protobuf_c_message_free_unpacked(r, NULL);
  return code;
}

static int32_t assigned_pods(const Gangbridge__V1__EvaluateResponse *r) {
  int32_t n = 0;
  for (size_t i = 0; i < r->n_assignments; i++)
    n += r->assignments[i]->pods;
  return n;
}

START_TEST(test_evaluate) {
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  /* No cluster and no live snapshot: not ready. */
  ck_assert_int_eq(evaluate_spec(2, NULL, 0, NULL, msg, sizeof(msg)), GB_RPC_UNAVAILABLE);
  /* An inline cluster: 4 pods of 4 cpu fit in rack r0 (2 nodes of 8 cpu). */
  Gangbridge__V1__EvaluateResponse *r = NULL;
  ck_assert_msg(evaluate_spec(4, cluster_yaml, 1, &r, msg, sizeof(msg)) == GB_RPC_OK, "%s", msg);
  ck_assert(r->feasible);
  ck_assert_str_eq(r->hyper_node, "r0");
  ck_assert_int_eq(r->tier_opt_case, GANGBRIDGE__V1__EVALUATE_RESPONSE__TIER_OPT_TIER);
  ck_assert_int_eq(assigned_pods(r), 4);
  ck_assert_uint_gt(r->place_json.len, 0);
  char *pj = calloc(1, r->place_json.len + 1);
  ck_assert_ptr_nonnull(pj);
  memcpy(pj, r->place_json.data, r->place_json.len);
  ck_assert_ptr_nonnull(strstr(pj, "\"feasible\": true"));
  ck_assert_ptr_nonnull(strstr(pj, "\"hyperNode\": \"r0\""));
  free(pj);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  /* 6 pods need the whole cluster (soft mode falls back to it). */
  ck_assert_int_eq(evaluate_spec(6, cluster_yaml, 1, &r, msg, sizeof(msg)), GB_RPC_OK);
  ck_assert(r->feasible);
  ck_assert_str_eq(r->hyper_node, "");
  ck_assert_int_eq(assigned_pods(r), 6);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  /* 7 pods of 4 cpu on 24 cpu: infeasible, with reasons. */
  ck_assert_int_eq(evaluate_spec(7, cluster_yaml, 1, &r, msg, sizeof(msg)), GB_RPC_OK);
  ck_assert(!r->feasible);
  ck_assert_uint_gt(r->n_reasons, 0);
  ck_assert_uint_eq(r->n_assignments, 0);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  /* Bad input names the field. */
  ck_assert_int_eq(evaluate_spec(0, cluster_yaml, 1, NULL, msg, sizeof(msg)),
                   GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "gang.pod_sets[0].pods") != NULL, "%s", msg);

  /* The live snapshot: load it, evaluate, then take a node away. */
  ProtobufCBinaryData doc = {strlen(cluster_yaml), (uint8_t *)cluster_yaml};
  char *levels[] = {"rack"};
  Gangbridge__V1__ReplaceSnapshotRequest rreq;
  gangbridge__v1__replace_snapshot_request__init(&rreq);
  rreq.cluster = &doc;
  rreq.n_cluster = 1;
  rreq.levels = levels;
  rreq.n_levels = 1;
  Gangbridge__V1__SnapshotStatus *st =
      snapshot_call(REPLACE, &rreq.base, GB_RPC_OK, msg, sizeof(msg));
  uint64_t gen = st->generation;
  protobuf_c_message_free_unpacked(&st->base, NULL);
  ck_assert_int_eq(evaluate_spec(4, NULL, 0, &r, msg, sizeof(msg)), GB_RPC_OK);
  ck_assert(r->feasible);
  ck_assert_str_eq(r->hyper_node, "r0");
  ck_assert_uint_eq(r->snapshot_generation, gen);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  struct remove_node_request rm;
  remove_node_request(&rm, "n1");
  st = snapshot_call(UPDATE, &rm.req.base, GB_RPC_OK, msg, sizeof(msg));
  protobuf_c_message_free_unpacked(&st->base, NULL);
  /* 4 pods of 4 cpu no longer fit on one rack (r0: 8 cpu, r1: 8 cpu). */
  ck_assert_int_eq(evaluate_spec(4, NULL, 0, &r, msg, sizeof(msg)), GB_RPC_OK);
  ck_assert(r->feasible);
  ck_assert_str_eq(r->hyper_node, "");
  ck_assert_int_eq(assigned_pods(r), 4);
  protobuf_c_message_free_unpacked(&r->base, NULL);
}
END_TEST

START_TEST(test_evaluate_trainjob) {
  /* The TrainJob of the examples (3 nodes) against an inline cluster, as
   * `place -f runtime -f trainjob --cluster ...` would do. */
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  const char *texts[] = {runtime_yaml(), job_yaml()};
  ProtobufCBinaryData docs[2] = {{strlen(texts[0]), (uint8_t *)texts[0]},
                                 {strlen(texts[1]), (uint8_t *)texts[1]}};
  Gangbridge__V1__CalculateRequest calc;
  gangbridge__v1__calculate_request__init(&calc);
  calc.manifests = docs;
  calc.n_manifests = 2;
  Gangbridge__V1__EvaluateRequest req;
  gangbridge__v1__evaluate_request__init(&req);
  req.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_CALCULATE;
  req.calculate = &calc;
  ProtobufCBinaryData cdoc = {strlen(cluster_yaml), (uint8_t *)cluster_yaml};
  char *levels[] = {"rack"};
  req.cluster = &cdoc;
  req.n_cluster = 1;
  req.levels = levels;
  req.n_levels = 1;
  Gangbridge__V1__TopologyPolicy pol;
  gangbridge__v1__topology_policy__init(&pol);
  pol.mode = "soft";
  req.policy = &pol;
  ProtobufCMessage *r = NULL;
  ck_assert_msg(call(EVAL, &req.base, &gangbridge__v1__evaluate_response__descriptor, 10000, &r,
                     msg, sizeof(msg)) == GB_RPC_OK,
                "%s", msg);
  Gangbridge__V1__EvaluateResponse *er = (Gangbridge__V1__EvaluateResponse *)r;
  ck_assert(er->feasible);
  ck_assert_int_eq(assigned_pods(er), 3);
  for (size_t i = 0; i < er->n_assignments; i++)
    ck_assert_str_eq(er->assignments[i]->pod_set, "node");
  protobuf_c_message_free_unpacked(r, NULL);
  /* The calculate part's errors carry its field path. */
  calc.n_manifests = 0;
  ck_assert_int_eq(call(EVAL, &req.base, &gangbridge__v1__evaluate_response__descriptor, 10000,
                        NULL, msg, sizeof(msg)),
                   GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "calculate.manifests") != NULL, "%s", msg);
  /* No gang at all. */
  req.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE__NOT_SET;
  ck_assert_int_eq(call(EVAL, &req.base, &gangbridge__v1__evaluate_response__descriptor, 10000,
                        NULL, msg, sizeof(msg)),
                   GB_RPC_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "gang_source") != NULL, "%s", msg);
}
END_TEST

/* ------------------------------------------------- lifecycle and threads */

START_TEST(test_port_in_use) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = addr; /* the fixture's server holds it */
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_rpc_server *second = NULL;
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &second, &d), 0);
  ck_assert_int_eq(gb_rpc_server_start(second, &d), GC_EIO);
  ck_assert_uint_ge(d.n, 1);
  gb_rpc_server_free(second);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_bad_config) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_rpc_server *s = NULL;
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &s, &d), GC_EUSAGE); /* no address */
  cfg.addr = "127.0.0.1:0";
  cfg.tls_cert_file = "cert.pem"; /* no key */
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &s, &d), GC_EUSAGE);
  cfg.tls_key_file = "/nonexistent/key.pem";
  cfg.tls_cert_file = "/nonexistent/cert.pem";
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &s, &d), 0);
  /* A missing file is GC_ENOTFOUND, as for every file gb_file reads. */
  ck_assert_int_eq(gb_rpc_server_start(s, &d), GC_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(d.msgs[d.n - 1], "/nonexistent/cert.pem"));
  gb_rpc_server_free(s);
  gc_diags_destroy(&d);
}
END_TEST

/* A slow handler for the shutdown and deadline tests. */
static atomic_int slow_running;

static int slow_check(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *req,
                      ProtobufCMessage **reply) {
  (void)data;
  const Grpc__Health__V1__HealthCheckRequest *r = (const Grpc__Health__V1__HealthCheckRequest *)req;
  atomic_fetch_add(&slow_running, 1);
  long ms = strtol(r->service, NULL, 10);
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  atomic_fetch_sub(&slow_running, 1);
  if (gb_rpc_ctx_ms_left(ctx) <= 0)
    return gb_rpc_server_fail(ctx, GB_RPC_DEADLINE_EXCEEDED, "too slow");
  Grpc__Health__V1__HealthCheckResponse *out = gc_arena_alloc(ctx->arena, sizeof(*out));
  grpc__health__v1__health_check_response__init(out);
  out->status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
  *reply = &out->base;
  return GB_RPC_OK;
}

static void start_slow_server(int grace_ms) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = 4;
  cfg.grace_ms = grace_ms;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  static const gb_rpc_handler h[2] = {slow_check, NULL};
  static const char *const streaming[] = {"Watch", NULL};
  ck_assert_int_eq(gb_rpc_server_add_service(srv, &grpc__health__v1__health__descriptor, h,
                                             streaming, NULL),
                   0);
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gb_rpc_server_port(srv));
  cl = client_for(addr);
}

START_TEST(test_handler_past_deadline) {
  start_slow_server(2000);
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  req.service = "300";
  ck_assert_int_eq(call(CHECK, &req.base, &grpc__health__v1__health_check_response__descriptor,
                        100, NULL, NULL, 0),
                   GB_RPC_DEADLINE_EXCEEDED);
  req.service = "1";
  ck_assert_int_eq(call(CHECK, &req.base, &grpc__health__v1__health_check_response__descriptor,
                        5000, NULL, NULL, 0),
                   GB_RPC_OK);
}
END_TEST

struct load_arg {
  const char *addr;
  const char *sleep_ms;
  int timeout_ms;
  atomic_int *ok, *failed, *other;
  atomic_int *stop;
};

static void *load_thread(void *p) {
  struct load_arg *a = p;
  struct gb_rpc_client *c = client_for(a->addr);
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  req.service = (char *)a->sleep_ms;
  while (!atomic_load(a->stop)) {
    struct gb_rpc_status st = {0, NULL};
    ProtobufCMessage *r = NULL;
    if (gb_rpc_client_call(c, CHECK, &req.base,
                           &grpc__health__v1__health_check_response__descriptor, a->timeout_ms,
                           &r, &st) == 0) {
      if (st.code == GB_RPC_OK)
        atomic_fetch_add(a->ok, 1);
      else if (st.code == GB_RPC_UNAVAILABLE || st.code == GB_RPC_CANCELLED ||
               st.code == GB_RPC_DEADLINE_EXCEEDED)
        atomic_fetch_add(a->failed, 1);
      else
        atomic_fetch_add(a->other, 1);
    }
    if (r)
      protobuf_c_message_free_unpacked(r, NULL);
    gb_rpc_status_clear(&st);
  }
  gb_rpc_client_free(c);
  return NULL;
}

/* Stops the server while 16 clients keep calls running (some longer than
 * the grace period): every call ends with a status, nothing crashes, no
 * context leaks (LSan checks at exit), and stop returns. */
START_TEST(test_shutdown_under_load) {
  start_slow_server(300);
  atomic_int ok = 0, failed = 0, other = 0, stop = 0;
  pthread_t th[16];
  struct load_arg args[16];
  for (int i = 0; i < 16; i++) {
    args[i] = (struct load_arg){addr, i % 4 == 0 ? "600" : "5", 2000, &ok, &failed, &other,
                                &stop};
    ck_assert_int_eq(pthread_create(&th[i], NULL, load_thread, &args[i]), 0);
  }
  /* Let calls flow (a busy machine may need a while), then stop. */
  struct timespec ts = {0, 50 * 1000000L};
  for (int i = 0; i < 200 && atomic_load(&ok) < 20; i++)
    nanosleep(&ts, NULL);
  nanosleep(&ts, NULL);
  ck_assert_int_gt(atomic_load(&ok), 0);
  gb_rpc_server_stop(srv); /* handlers of 600 ms outlive the 300 ms grace */
  ck_assert_int_eq(atomic_load(&slow_running), 0);
  atomic_store(&stop, 1);
  for (int i = 0; i < 16; i++)
    pthread_join(th[i], NULL);
  ck_assert_int_eq(atomic_load(&other), 0);
  ck_assert_uint_ge(gb_rpc_server_calls(srv), (uint64_t)atomic_load(&ok));
}
END_TEST

/* A fast Health/Check for the starvation test. */
static int fast_check(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *req,
                      ProtobufCMessage **reply) {
  (void)data;
  (void)req;
  Grpc__Health__V1__HealthCheckResponse *out = gc_arena_alloc(ctx->arena, sizeof(*out));
  grpc__health__v1__health_check_response__init(out);
  out->status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
  *reply = &out->base;
  return GB_RPC_OK;
}

/* A Calculate that only sleeps 3 s: a stand-in for a big Evaluate. */
static int sleepy_calculate(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *req,
                            ProtobufCMessage **reply) {
  (void)data;
  (void)req;
  atomic_fetch_add(&slow_running, 1);
  struct timespec ts = {3, 0};
  nanosleep(&ts, NULL);
  atomic_fetch_sub(&slow_running, 1);
  Gangbridge__V1__CalculateResponse *out = gc_arena_alloc(ctx->arena, sizeof(*out));
  gangbridge__v1__calculate_response__init(out);
  *reply = &out->base;
  return GB_RPC_OK;
}

struct sleepy_arg {
  const char *addr;
  int code;
};

static void *sleepy_thread(void *p) {
  struct sleepy_arg *a = p;
  struct gb_rpc_client *c = client_for(a->addr);
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  struct gb_rpc_status st = {0, NULL};
  ProtobufCMessage *r = NULL;
  a->code = -1;
  if (gb_rpc_client_call(c, CALC, &req.base, &gangbridge__v1__calculate_response__descriptor,
                         20000, &r, &st) == 0)
    a->code = st.code;
  if (r)
    protobuf_c_message_free_unpacked(r, NULL);
  gb_rpc_status_clear(&st);
  gb_rpc_client_free(c);
  return NULL;
}

/* Eight long calls on a server of four workers: Health/Check still answers
 * at once (a worker is kept for light calls), two heavy calls wait their
 * turn and the ones beyond the queue are refused with RESOURCE_EXHAUSTED. */
START_TEST(test_health_under_heavy_load) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = 4;
  cfg.max_queued = 2;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  static const gb_rpc_handler hh[2] = {fast_check, NULL};
  static const gb_rpc_handler hc[1] = {sleepy_calculate};
  static const char *const streaming[] = {"Watch", NULL};
  ck_assert_int_eq(gb_rpc_server_add_service(srv, &grpc__health__v1__health__descriptor, hh,
                                             streaming, NULL),
                   0);
  ck_assert_int_eq(gb_rpc_server_add_service(srv, &gangbridge__v1__gang_calculator__descriptor,
                                             hc, NULL, NULL),
                   0);
  ck_assert_int_eq(gb_rpc_server_mark_light(srv, CHECK), 0);
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gb_rpc_server_port(srv));
  cl = client_for(addr);
  /* Static: a failed assertion leaves this frame while the threads run. */
  static pthread_t th[8];
  static struct sleepy_arg args[8];
  for (int i = 0; i < 8; i++) {
    args[i] = (struct sleepy_arg){addr, -1};
    ck_assert_int_eq(pthread_create(&th[i], NULL, sleepy_thread, &args[i]), 0);
  }
  struct timespec ts = {0, 20 * 1000000L};
  for (int i = 0; i < 100 && atomic_load(&slow_running) < 3; i++)
    nanosleep(&ts, NULL);
  nanosleep(&ts, NULL);
  Grpc__Health__V1__HealthCheckRequest hreq;
  grpc__health__v1__health_check_request__init(&hreq);
  /* The heavy calls hold their workers for 3 s; a 1.5 s deadline is
   * missed only if Check waits for one of them. */
  for (int k = 0; k < 3; k++)
    ck_assert_int_eq(call(CHECK, &hreq.base, &grpc__health__v1__health_check_response__descriptor,
                          1500, NULL, NULL, 0),
                     GB_RPC_OK);
  int ok = 0, busy = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    ok += args[i].code == GB_RPC_OK;
    busy += args[i].code == GB_RPC_RESOURCE_EXHAUSTED;
  }
  /* Three run (four workers, one kept free), two wait, three are refused. */
  ck_assert_int_eq(ok, 5);
  ck_assert_int_eq(busy, 3);
}
END_TEST

/* Opens a TCP connection to 127.0.0.1:port that never sends a byte; -1
 * when out of descriptors. */
static int idle_socket(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Waits (at most ~20 s) until the self-check says `want_alive`. */
static int wait_alive(int want_alive, char *reason, size_t cap) {
  struct timespec ts = {0, 50 * 1000000L};
  for (int i = 0; i < 400; i++) {
    int dead = gb_rpc_server_check(srv, reason, cap);
    if (!dead == !!want_alive)
      return 1;
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* gRPC core 1.51 stops accepting for good after accept4 fails with EMFILE;
 * a plain-text port is therefore accepted by gangbridge itself
 * (gb_rpc_accept), which backs off instead.  Exhaust the descriptors of
 * this process (server and idle clients share them), give them back, and
 * check that the port answers a new connection again and that the
 * self-check says it is alive (with the core's listener it stayed dead). */
START_TEST(test_listener_survives_emfile) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = 2;
  cfg.self_check_ms = 100;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  svc = gb_rpc_service_new();
  ck_assert_int_eq(gb_rpc_service_register(svc, srv), 0);
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  int port = gb_rpc_server_port(srv);
  char reason[256];
  ck_assert_msg(wait_alive(1, reason, sizeof(reason)), "never alive: %s", reason);
  struct rlimit old;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit low = old;
  low.rlim_cur = 256;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  static int fds[512];
  int n = 0;
  while (n < 512 && (fds[n] = idle_socket(port)) >= 0)
    n++;
  /* Our side ran out; let the server run out too on a few more accepts. */
  struct timespec ts = {0, 100 * 1000000L};
  for (int k = 0; k < 8 && n > 0; k++) {
    close(fds[--n]);
    nanosleep(&ts, NULL);
    int fd = idle_socket(port);
    if (fd >= 0)
      fds[n++] = fd;
    nanosleep(&ts, NULL);
  }
  while (n > 0)
    close(fds[--n]);
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
  /* Descriptors are back: the port accepts again (the backlog's
   * connections first), and a new connection gets an answer. */
  int answered = 0;
  for (int attempt = 0; attempt < 40 && !answered; attempt++) {
    struct gb_rpc_client *fresh = client_for(addr_of(port));
    Grpc__Health__V1__HealthCheckRequest hreq;
    grpc__health__v1__health_check_request__init(&hreq);
    struct gb_rpc_status st = {0, NULL};
    ProtobufCMessage *r = NULL;
    ck_assert_int_eq(gb_rpc_client_call(fresh, CHECK, &hreq.base,
                                        &grpc__health__v1__health_check_response__descriptor,
                                        1000, &r, &st),
                     0);
    answered = st.code == GB_RPC_OK;
    if (r)
      protobuf_c_message_free_unpacked(r, NULL);
    gb_rpc_status_clear(&st);
    gb_rpc_client_free(fresh);
  }
  ck_assert_msg(answered, "the port never answered again after EMFILE");
  ck_assert_msg(wait_alive(1, reason, sizeof(reason)), "the self-check says dead: %s", reason);
}
END_TEST

/* A request whose parse would cost more than the server's memory budget is
 * refused before it is decoded, naming the budget; a small one still runs. */
START_TEST(test_memory_budget) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = 2;
  cfg.max_message_bytes = CAP;
  cfg.memory_budget = 4 << 20;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  svc = gb_rpc_service_new();
  ck_assert_int_eq(gb_rpc_service_register(svc, srv), 0);
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gb_rpc_server_port(srv));
  cl = client_for(addr);
  /* 512 KiB of YAML comments: cheap on the wire, about 12 MiB to parse. */
  size_t big = 512 << 10;
  char *text = malloc(big + 1);
  ck_assert_ptr_nonnull(text);
  for (size_t i = 0; i < big; i += 64)
    memcpy(text + i, "# padding padding padding padding padding padding padding paddi\n", 64);
  text[big] = '\0';
  ProtobufCBinaryData doc = {big, (uint8_t *)text};
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  req.manifests = &doc;
  req.n_manifests = 1;
  char msg[GB_RPC_MAX_STATUS_MESSAGE];
  int code = call(CALC, &req.base, &gangbridge__v1__calculate_response__descriptor, 10000, NULL,
                  msg, sizeof(msg));
  free(text);
  ck_assert_msg(code == GB_RPC_RESOURCE_EXHAUSTED, "%s: %s", gb_rpc_code_name(code), msg);
  ck_assert_msg(strstr(msg, "memory budget") != NULL, "%s", msg);
  int st = -1;
  ck_assert_int_eq(health("", &st), GB_RPC_OK);
  const char *texts[] = {runtime_yaml(), job_yaml()};
  ck_assert_int_eq(calculate(texts, 2, GANGBRIDGE__V1__BACKEND__BACKEND_VOLCANO, NULL, msg,
                             sizeof(msg)),
                   GB_RPC_OK);
}
END_TEST

/* Calculate from several threads at once gives the same answer each time. */
struct calc_arg {
  int n_ok;
  int n_bad;
};

static void *calc_thread(void *p) {
  struct calc_arg *a = p;
  struct gb_rpc_client *c = client_for(addr);
  const char *texts[] = {runtime_yaml(), job_yaml()};
  ProtobufCBinaryData docs[2] = {{strlen(texts[0]), (uint8_t *)texts[0]},
                                 {strlen(texts[1]), (uint8_t *)texts[1]}};
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  req.manifests = docs;
  req.n_manifests = 2;
  for (int i = 0; i < 50; i++) {
    struct gb_rpc_status st = {0, NULL};
    ProtobufCMessage *r = NULL;
    if (gb_rpc_client_call(c, CALC, &req.base, &gangbridge__v1__calculate_response__descriptor,
                           10000, &r, &st) == 0 &&
        st.code == GB_RPC_OK && ((Gangbridge__V1__CalculateResponse *)r)->gang->min_member == 3)
      a->n_ok++;
    else
      a->n_bad++;
    if (r)
      protobuf_c_message_free_unpacked(r, NULL);
    gb_rpc_status_clear(&st);
  }
  gb_rpc_client_free(c);
  return NULL;
}

START_TEST(test_concurrent_calculate) {
  pthread_t th[8];
  struct calc_arg args[8];
  memset(args, 0, sizeof(args));
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, calc_thread, &args[i]), 0);
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(args[i].n_bad, 0);
    ck_assert_int_eq(args[i].n_ok, 50);
  }
}
END_TEST

/* A reply over the cap is refused with RESOURCE_EXHAUSTED, not sent. */
START_TEST(test_reply_cap) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.max_message_bytes = 1024;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  svc = gb_rpc_service_new();
  ck_assert_int_eq(gb_rpc_service_register(svc, srv), 0);
  /* 64 one-cpu nodes, loaded through the service API (a ReplaceSnapshot
   * request that size would itself be over the cap). */
  char *yaml = malloc(64 * 200);
  size_t len = 0;
  for (int i = 0; i < 64; i++)
    len += (size_t)snprintf(yaml + len, 64 * 200 - len,
                            "---\napiVersion: v1\nkind: Node\nmetadata: {name: node-%02d}\n"
                            "status: {allocatable: {cpu: '1', pods: '10'}}\n",
                            i);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "nodes", yaml, len, &d), 0);
  const struct gc_value **docs = calloc(ds->n, sizeof(*docs));
  for (size_t i = 0; i < ds->n; i++)
    docs[i] = ds->docs[i].root;
  ck_assert_int_eq(gb_rpc_service_snapshot_replace(svc, docs, NULL, ds->n, NULL, 0, &d), 0);
  free(docs);
  gb_docset_free(ds);
  free(yaml);
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gb_rpc_server_port(srv));
  cl = client_for(addr);
  char msg[512];
  /* 2 pods: a small reply.  60 pods on 60 nodes: far over 1 KiB. */
  ck_assert_int_eq(evaluate_spec_cpu(2, "1", NULL, msg, sizeof(msg)), GB_RPC_OK);
  ck_assert_int_eq(evaluate_spec_cpu(60, "1", NULL, msg, sizeof(msg)), GB_RPC_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(msg, "exceeds the cap of 1024") != NULL, "%s", msg);
}
END_TEST

/* The on_call hook sees every call with its method and status. */
static atomic_int seen_ok, seen_unknown, seen_invalid, seen_bad_time;

static void count_call(void *arg, const char *method, int code, int cancelled, double seconds) {
  (void)arg;
  (void)cancelled;
  if (!(seconds >= 0 && seconds < 60)) /* no ck_assert off the test's thread */
    atomic_fetch_add(&seen_bad_time, 1);
  if (code == GB_RPC_OK && !strcmp(method, CHECK))
    atomic_fetch_add(&seen_ok, 1);
  else if (code == GB_RPC_UNIMPLEMENTED && !strcmp(method, "unknown"))
    atomic_fetch_add(&seen_unknown, 1);
  else if (code == GB_RPC_INVALID_ARGUMENT && !strcmp(method, CALC))
    atomic_fetch_add(&seen_invalid, 1);
}

START_TEST(test_on_call_hook) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.on_call = count_call;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_rpc_server_new(&cfg, &srv, &d), 0);
  svc = gb_rpc_service_new();
  ck_assert_int_eq(gb_rpc_service_register(svc, srv), 0);
  ck_assert_int_eq(gb_rpc_server_start(srv, &d), 0);
  gc_diags_destroy(&d);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gb_rpc_server_port(srv));
  cl = client_for(addr);
  int serving;
  ck_assert_int_eq(health("", &serving), GB_RPC_OK);
  ck_assert_int_eq(health("", &serving), GB_RPC_OK);
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  ck_assert_int_eq(call(WATCH, &req.base, &grpc__health__v1__health_check_response__descriptor,
                        5000, NULL, NULL, 0),
                   GB_RPC_UNIMPLEMENTED);
  struct gb_rpc_status st = {0, NULL};
  void *out = NULL;
  size_t n = 0;
  ck_assert_int_eq(gb_rpc_client_call_raw(cl, CALC, "\xff", 1, 5000, &out, &n, &st), 0);
  gb_rpc_status_clear(&st);
  /* The hook runs when the server's final batch completes, just after the
   * client has its answer. */
  struct timespec ts = {0, 10 * 1000000L};
  for (int i = 0; i < 500 && (atomic_load(&seen_ok) < 2 || atomic_load(&seen_unknown) < 1 ||
                              atomic_load(&seen_invalid) < 1);
       i++)
    nanosleep(&ts, NULL);
  ck_assert_int_eq(atomic_load(&seen_ok), 2);
  ck_assert_int_eq(atomic_load(&seen_unknown), 1);
  ck_assert_int_eq(atomic_load(&seen_invalid), 1);
  ck_assert_int_eq(atomic_load(&seen_bad_time), 0);
}
END_TEST

static Suite *rpc_suite(void) {
  Suite *s = suite_create("rpc");
  TCase *tc = tcase_create("service");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_health);
  tcase_add_test(tc, test_health_watch_unimplemented);
  tcase_add_test(tc, test_unknown_method);
  tcase_add_test(tc, test_backend_wire_values);
  tcase_add_test(tc, test_calculate_matches_render);
  tcase_add_test(tc, test_calculate_cache);
  tcase_add_test(tc, test_calculate_errors);
  tcase_add_test(tc, test_document_cache_origins);
  tcase_add_test(tc, test_invoke);
  tcase_add_test(tc, test_malformed_bytes);
  tcase_add_test(tc, test_oversized);
  tcase_add_test(tc, test_expired_deadline);
  tcase_add_test(tc, test_snapshot_lifecycle);
  tcase_add_test(tc, test_snapshot_updates_validated);
  tcase_add_test(tc, test_snapshot_writes_disabled);
  tcase_add_test(tc, test_evaluate);
  tcase_add_test(tc, test_evaluate_trainjob);
  tcase_add_test(tc, test_port_in_use);
  tcase_add_test(tc, test_concurrent_calculate);
  suite_add_tcase(s, tc);
  TCase *tl = tcase_create("lifecycle");
  tcase_add_checked_fixture(tl, NULL, teardown);
  tcase_set_timeout(tl, 60);
  tcase_add_test(tl, test_bad_config);
  tcase_add_test(tl, test_handler_past_deadline);
  tcase_add_test(tl, test_shutdown_under_load);
  tcase_add_test(tl, test_on_call_hook);
  tcase_add_test(tl, test_reply_cap);
  tcase_add_test(tl, test_health_under_heavy_load);
  tcase_add_test(tl, test_memory_budget);
  tcase_add_test(tl, test_listener_survives_emfile);
  suite_add_tcase(s, tl);
  return s;
}

static char *read_src(const char *rel) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", GB_SRC_DIR, rel);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(EXIT_FAILURE);
  }
  char *buf = calloc(1, 1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (!n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(EXIT_FAILURE);
  }
  return buf;
}

int main(void) {
  runtime_text = read_src("examples/runtimes/torch_distributed.yaml");
  job_text = read_src("examples/trainjobs/01-multi-node.yaml");
  SRunner *sr = srunner_create(rpc_suite());
  /* fork() after grpc_init() breaks gRPC: run every test in this process. */
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  free(runtime_text);
  free(job_text);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
