/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rcmemo: what each TrainJob's last finished reconcile read, as one
 * 64-bit fingerprint per key (the controller makes it from the
 * resourceVersions and uids of the TrainJob and its PodGroups, the gang's
 * pod count, the served APIs and an epoch that every namespace-wide input
 * change bumps).  A reconcile whose fingerprint is the stored one would
 * read the same inputs, plan the same and write nothing: the controller
 * skips it.  That is the watch echo of the reconcile's own PodGroup write
 * and a periodic resync of an unchanged TrainJob.  Keys are kept as their
 * 64-bit hash only (16 bytes an entry in an open-addressed table, at most
 * GB_RCMEMO_MAX), so the memo adds little to a cached TrainJob; a key hash
 * that two keys share can only make a skip when their fingerprints, which
 * include the TrainJob's uid, are equal too.
 *
 * Thread-safety: every function may be called from any thread (one
 * mutex, a leaf).
 */
#ifndef GB_RCMEMO_H
#define GB_RCMEMO_H

#include <stddef.h>
#include <stdint.h>

#define GB_RCMEMO_MAX (1u << 22) /* keys remembered at most; more are not skipped */

struct gb_rcmemo;

/* A new, empty memo (caller frees with gb_rcmemo_free), or NULL. */
struct gb_rcmemo *gb_rcmemo_new(void);
/* Frees m.  Accepts NULL. */
void gb_rcmemo_free(struct gb_rcmemo *m);

/* 1 when fp (not 0) is the fingerprint stored for key (borrowed), else 0. */
int gb_rcmemo_same(struct gb_rcmemo *m, const char *key, uint64_t fp);

/* Stores fp for key (borrowed); fp 0 forgets the key.  Out of memory or
 * past GB_RCMEMO_MAX keys, nothing is stored (the key is then never
 * skipped). */
void gb_rcmemo_put(struct gb_rcmemo *m, const char *key, uint64_t fp);

#endif
