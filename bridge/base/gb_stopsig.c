/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_stopsig: the signal watcher of `gangbridge serve` (see gb_stopsig.h).
 *
 * The watcher decides under the mutex whether start-up is over, so a signal
 * arriving just as gb_stopsig_started runs is either a forced exit (start-up
 * was not over) or a graceful stop, never lost.  The forced exit uses
 * _exit: the main thread may be blocked anywhere (in open() on a FIFO, in a
 * TLS handshake), and what it holds is released by the kernel.
 */
#include "gb_stopsig.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gc_diag.h"

struct gb_stopsig {
  const char *who;
  sigset_t set;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started; /* start-up over */
  int got;     /* the signal for gb_stopsig_wait, 0 = none yet */
  int closing; /* gb_stopsig_free: the next signal only ends the watcher */
};

static const char *sig_name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

static void *watch_main(void *arg) {
  struct gb_stopsig *s = arg;
  for (;;) {
    int sig = 0;
    if (sigwait(&s->set, &sig) != 0)
      continue;
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
      pthread_mutex_unlock(&s->mu);
      return NULL;
    }
    if (!s->started || s->got) {
      /* dprintf, not stdio: the main thread may hold stderr's lock. */
      dprintf(2, "%s: %s received %s: exiting at once (status %d)\n", s->who, sig_name(sig),
              s->started ? "again while stopping" : "during start-up, before serving",
              128 + sig);
      _exit(128 + sig);
    }
    s->got = sig;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
}

int gb_stopsig_start(const char *who, struct gb_stopsig **out) {
  *out = NULL;
  struct gb_stopsig *s = calloc(1, sizeof(*s));
  if (!s)
    return GC_ENOMEM;
  s->who = who;
  sigemptyset(&s->set);
  sigaddset(&s->set, SIGTERM);
  sigaddset(&s->set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &s->set, NULL);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->thread, NULL, watch_main, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return GC_ENOMEM;
  }
  *out = s;
  return 0;
}

void gb_stopsig_started(struct gb_stopsig *s) {
  pthread_mutex_lock(&s->mu);
  s->started = 1;
  pthread_mutex_unlock(&s->mu);
}

int gb_stopsig_wait(struct gb_stopsig *s) {
  pthread_mutex_lock(&s->mu);
  while (!s->got)
    pthread_cond_wait(&s->cv, &s->mu);
  int sig = s->got;
  pthread_mutex_unlock(&s->mu);
  return sig;
}

void gb_stopsig_free(struct gb_stopsig *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->closing = 1;
  pthread_mutex_unlock(&s->mu);
  /* The watcher sits in sigwait: a signal aimed at it wakes it. */
  pthread_kill(s->thread, SIGTERM);
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}
