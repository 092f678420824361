/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_stopsig: SIGTERM and SIGINT for `gangbridge serve`, from the first
 * instruction of start-up to the end of the graceful stop.  It owns a
 * watcher thread that takes both signals with sigwait (they are blocked in
 * every other thread, so gRPC's and libmicrohttpd's threads never see them).
 * During start-up, which may block on a slow file, a FIFO or the network, a
 * signal ends the process at once with status 128 + the signal number
 * (GB_EXIT_SIGTERM, GB_EXIT_SIGINT) and a message saying so: nothing is
 * serving yet, so there is nothing to stop gracefully.  Once start-up is
 * over (gb_stopsig_started), the first signal is handed to gb_stopsig_wait
 * for a graceful stop, and a second one during that stop ends the process at
 * once the same way.
 */
#ifndef GB_STOPSIG_H
#define GB_STOPSIG_H

/* Exit statuses of a stop forced by a signal (the shell's convention). */
#define GB_EXIT_SIGINT 130
#define GB_EXIT_SIGTERM 143

struct gb_stopsig;

/* Blocks SIGTERM and SIGINT in the calling thread (threads it creates later
 * inherit the mask) and starts the watcher.  `who` (static string, e.g.
 * "gangbridge serve") prefixes the messages.  Call before starting any other
 * thread.  Returns 0 with *out set (caller frees with gb_stopsig_free) or
 * GC_ENOMEM. */
int gb_stopsig_start(const char *who, struct gb_stopsig **out);

/* Start-up is over: from now on the first signal goes to gb_stopsig_wait. */
void gb_stopsig_started(struct gb_stopsig *s);

/* Waits for the first signal after gb_stopsig_started; returns its number. */
int gb_stopsig_wait(struct gb_stopsig *s);

/* Stops the watcher.  Accepts NULL.  Signals stay blocked in the caller. */
void gb_stopsig_free(struct gb_stopsig *s);

#endif
