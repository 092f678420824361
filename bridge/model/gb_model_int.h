/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_model_int: the model's private state, shared by its two files:
 * gb_model.c (the records, the snapshot and the feed) and gb_model_watch.c
 * (the informers, HyperNode discovery and the housekeeping thread).  Not
 * for use outside bridge/model/.
 */
#ifndef GB_MODEL_INT_H
#define GB_MODEL_INT_H

#include <json-c/json.h>
#include <pthread.h>

#include "gb_hash.h"
#include "gb_informer.h"
#include "gb_kube_discovery.h"
#include "gb_model.h"

#define GB_MODEL_MAX_POD_RES 32          /* distinct resources one pod may request */
#define GB_MODEL_MAX_TOLS 64             /* tolerations kept per pod (more: the pod is refused) */
#define GB_MODEL_MSG_MAX 256             /* PodScheduled message bytes kept */
#define GB_MODEL_MAX_HN_BYTES (1u << 20) /* one HyperNode's JSON text */
#define GB_MODEL_MAX_PODS 4000000        /* the Pod informer's cache bound */

enum { GB_INF_NODE, GB_INF_POD, GB_INF_HN, GB_INF_CRD, GB_INF_N };

/* A HyperNode the current snapshot left out, and whether its Event was
 * written. */
struct gb_model_drop {
  char *name, *why;
  int evented;
};
#define GB_MODEL_MAX_DROPS 1024 /* left-out HyperNodes reported one by one; more are counted */

struct gb_model_handler {
  struct gb_model *m;
  int kind; /* GB_INF_* */
};

struct gb_model {
  struct gb_model_opts o;
  char **levels; /* owned copies of o.levels */
  pthread_mutex_t mu;

  /* Records (under mu). */
  struct gb_htab pods, nodes, gangs, tols, hns;
  const char *res_name[TP_MAX_RESOURCES]; /* interned resource names (owned) */
  int snap_r[TP_MAX_RESOURCES];           /* index in s, -1 unknown */
  size_t n_res;
  size_t record_bytes, n_pods, n_nodes;
  struct gc_arena *scratch; /* per-event parsing, reset each time */

  /* The snapshot (under mu). */
  struct tp_snapshot *s;
  uint64_t generation;
  int dirty;    /* a rebuild is due (HyperNodes changed, churn) */
  int fed_done; /* gb_model_feed_done was called */
  int synced;   /* the first snapshot exists and every informer listed */
  size_t arena_at_build;
  uint64_t rebuilds, pod_events, node_events;
  uint64_t ticks; /* housekeeping rounds, for gb_model_stats */
  int capacity_due; /* free may have grown since on_capacity last ran */
  int depth;        /* nested gb_model_with_snapshot calls (no rebuild inside) */
  int changed;      /* the change being applied changed what the model keeps */
  char last_error[256];
  struct gb_model_drop *drops; /* the snapshot's left-out HyperNodes (at most GB_MODEL_MAX_DROPS) */
  size_t n_drops, n_dropped;   /* reported one by one; left out in all */

  /* Informers (the factory's) and the housekeeping thread (gb_model_watch.c). */
  struct gb_informer *inf[GB_INF_N];
  struct gb_model_handler h[GB_INF_N];
  struct gb_kube_discovery *disc;
  int hn_served;   /* the HyperNode informer runs */
  int crd_changed; /* the HyperNode CRD changed: re-run discovery now */
  int stop, started;
  pthread_cond_t cond;
  pthread_t thread;
};

/* A change from an informer or the feed, applied under m->mu.  Fills
 * gang_ns/gang_js (bounded by GB_PLAN_KEY_MAX) when a gang pod changed.
 * Returns 0 or a GC_E* code with diags. */
int gb_model_apply(struct gb_model *m, int kind, int op, json_object *obj, char *gang_ns,
                   char *gang_js, struct gc_diags *diags);
/* Rebuilds the snapshot from the records when it is missing or dirty
 * (under m->mu).  Returns 0 or a GC_E* code. */
int gb_model_rebuild_if_due(struct gb_model *m);
/* Drops every HyperNode record (the CRD went away); under m->mu. */
void gb_model_drop_hypernodes(struct gb_model *m);
/* What the records read of kind (GB_INF_*): static keep paths. */
void gb_model_keep(int kind, const struct gb_keep **keep, size_t *n);
/* Registers the model's handlers on o.informers (gb_model_new). */
int gb_model_register(struct gb_model *m, struct gc_diags *d);
/* Frees the discovery cache (after gb_model_stop). */
void gb_model_watch_free(struct gb_model *m);
/* Calls on_capacity once when due (no lock held on entry). */
void gb_model_flush_capacity(struct gb_model *m);
/* After a rebuild (under m->mu): the snapshot's left-out HyperNodes become
 * m->drops, each new one logged; one still left out for the same reason
 * keeps its Event state. */
void gb_model_note_drops(struct gb_model *m);
/* Writes the Warning Event of every left-out HyperNode not reported yet,
 * while leading (no lock held on entry; the writes happen outside it). */
void gb_model_flush_drops(struct gb_model *m);
/* Frees m->drops. */
void gb_model_drops_free(struct gb_model *m);

#endif
