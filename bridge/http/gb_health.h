/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_health: liveness and readiness endpoints in kube-apiserver's style.
 * Named checks are registered for liveness (/healthz, /livez), readiness
 * (/readyz) or both; a check is a callback or a flag the service flips
 * ("informers-synced", "leader-or-standby").  Built in: "ping" (always ok, on
 * every endpoint) and, on /readyz only, "shutdown", which fails once
 * gb_health_shutdown is called so that a terminating pod leaves the Service
 * endpoints before it stops serving.  Answers, exactly as kube-apiserver
 * writes them: 200 "ok" when every check passes; with "?verbose" one line per
 * check ("[+]ping ok") then "<endpoint> check passed"; on failure 500 with
 * every line ("[-]informers-synced failed: reason withheld") then
 * "<endpoint> check failed" (reasons go to the log, not to the anonymous
 * caller); "?exclude=<name>" (repeatable) skips a check; "/readyz/<name>"
 * runs one check: 200 "ok", or 500 "internal server error: <reason>", or 404
 * for an unknown name.  Checks are registered before the server starts;
 * flags may be set from any thread at any time.  It also owns the /metrics
 * route (gb_health_metrics_route), so the registry in base/ needs no HTTP.
 */
#ifndef GB_HEALTH_H
#define GB_HEALTH_H

#include <stddef.h>

#include "gb_http.h"
#include "gb_metrics.h"

#define GB_HEALTH_LIVE 1u
#define GB_HEALTH_READY 2u
#define GB_HEALTH_MAX_CHECKS 32
#define GB_HEALTH_NAME_MAX 63
#define GB_HEALTH_REASON_MAX 256

/* A check: returns 0 when healthy; otherwise non-zero with a reason written
 * into `reason` (a NUL-terminated string of at most `size` bytes).  It runs
 * on an HTTP thread, concurrently with others, and must be quick. */
typedef int (*gb_health_check_fn)(void *ctx, char *reason, size_t size);

struct gb_health;

/* Creates a registry with the built-in checks; NULL when out of memory. */
struct gb_health *gb_health_new(void);

/* Frees it.  Accepts NULL.  The HTTP server using its routes must be stopped. */
void gb_health_free(struct gb_health *h);

/* Adds a callback check to the endpoints in `kinds` (GB_HEALTH_LIVE and/or
 * GB_HEALTH_READY).  Names are [a-z0-9-], 1..GB_HEALTH_NAME_MAX long, unique.
 * `ctx` is borrowed until gb_health_free.  Returns 0, GC_EINVAL, GC_EUSAGE
 * (duplicate name) or GC_ELIMIT. */
int gb_health_add_check(struct gb_health *h, unsigned kinds, const char *name,
                        gb_health_check_fn fn, void *ctx);

/* Makes the built-in "shutdown" readiness check fail from now on. */
void gb_health_shutdown(struct gb_health *h);

/* Writes the /healthz, /livez and /readyz routes (GET; the last two also
 * serve "/<endpoint>/<check>") into `out`; returns how many (3), or 0 when
 * cap < 3.  `h` is borrowed until the server stops. */
size_t gb_health_routes(struct gb_health *h, struct gb_http_route *out, size_t cap);

/* An HTTP route serving the registry at `path` (GET), e.g. "/metrics".  The
 * registry is borrowed until the server stops.  It lives here, with the other
 * routes the probes server serves, so that the registry (base/) knows nothing
 * of HTTP. */
struct gb_http_route gb_health_metrics_route(struct gb_metrics *reg, const char *path);

#endif
