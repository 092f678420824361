/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_service: the gangbridge gRPC handlers.  It converts protobuf-c
 * messages to gangcalc and topology types and back (those libraries never
 * see a protobuf-c or gRPC type): gangbridge.v1.GangCalculator/Calculate,
 * gangbridge.v1.PlacementEvaluator (Evaluate and the live snapshot
 * methods) and grpc.health.v1.Health/Check.  It owns the live cluster
 * snapshot and the serving flag; both may be changed from any thread while
 * the server runs (the Kubernetes-watching mode feeds the snapshot here).
 */
#ifndef GB_RPC_SERVICE_H
#define GB_RPC_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "gb_rpc_server.h"
#include "gc_diag.h"
#include "gc_value.h"

/* Bounds on one request, beyond the server's message cap. */
#define GB_RPC_MAX_MANIFESTS 10000 /* entries of a repeated bytes field */
#define GB_RPC_MAX_DOCS 1000000    /* documents after splitting YAML streams */

struct gb_rpc_service;

/* Creates the handlers' state: serving, no live snapshot.  NULL on OOM.
 * Free with gb_rpc_service_free after the server is freed. */
struct gb_rpc_service *gb_rpc_service_new(void);
void gb_rpc_service_free(struct gb_rpc_service *svc);

/* Adds the three services to a server that has not started.  Returns 0 or
 * a GC_E* code. */
int gb_rpc_service_register(struct gb_rpc_service *svc, struct gb_rpc_server *srv);

/* Health: serving (1) or not (0).  While not serving, Check answers
 * NOT_SERVING for "" and every service name.  Thread-safe. */
void gb_rpc_service_set_serving(struct gb_rpc_service *svc, int serving);

/* Allows (1) or refuses (0, the default) the mutating snapshot methods
 * ReplaceSnapshot and UpdateNodes.  Refused, they answer
 * FAILED_PRECONDITION: in a cluster the live model is the source of truth
 * and a gRPC caller must not overwrite it.  `serve --offline` allows them.
 * Thread-safe; gb_rpc_service_snapshot_replace is not affected. */
void gb_rpc_service_allow_writes(struct gb_rpc_service *svc, int allow);

/* Replaces the live snapshot with one built from docs (Nodes, Pods,
 * HyperNodes; origins may be NULL) and optional node-label levels.  On
 * failure the old snapshot stays and every problem is in diags.  Returns 0
 * or a GC_E* code.  Thread-safe; running evaluations finish first. */
int gb_rpc_service_snapshot_replace(struct gb_rpc_service *svc, const struct gc_value *const *docs,
                                    const char *const *origins, size_t n,
                                    const char *const *levels, size_t n_levels,
                                    struct gc_diags *diags);

/* Another owner of the live snapshot (serve's live cluster model): fn runs
 * use(arg, snapshot, generation) under its own lock and returns use's
 * result, or a negative GC_E* code (GC_ENOTFOUND: no snapshot yet) without
 * calling it.  Once set, Evaluate without inline documents and
 * GetSnapshotStatus read the source, not the snapshot ReplaceSnapshot
 * keeps.  Set it before the server starts; ctx is borrowed. */
struct tp_snapshot;
typedef int (*gb_rpc_snapshot_use_fn)(void *arg, struct tp_snapshot *s, uint64_t generation);
typedef int (*gb_rpc_snapshot_source_fn)(void *ctx, gb_rpc_snapshot_use_fn use, void *arg);
void gb_rpc_service_set_snapshot_source(struct gb_rpc_service *svc, gb_rpc_snapshot_source_fn fn,
                                        void *ctx);

#endif
