/* SPDX-License-Identifier: Apache-2.0 */
#include "gb_standin.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc_diag.h"

/* Forks the server; its first stdout line is its URL. */
static int spawn(struct gb_standin *s) {
  int fds[2];
  if (pipe(fds))
    return -1;
  s->pid = fork();
  if (s->pid < 0) {
    s->pid = 0;
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (s->pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execl("/usr/bin/python3", "python3", GB_SRC_DIR "/tests/apiserver/run", "--port", "0",
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  int ok = f && fgets(s->url, sizeof(s->url), f) && !strncmp(s->url, "http://", 7);
  if (f)
    fclose(f);
  else
    close(fds[0]);
  s->url[strcspn(s->url, "\r\n")] = '\0';
  if (!ok) {
    fprintf(stderr, "gb_standin: the stand-in printed no URL: %s\n", s->url);
    return -1;
  }
  return 0;
}

int gb_standin_start(struct gb_standin *s) {
  memset(s, 0, sizeof(*s));
  if (spawn(s))
    return -1;
  char kc[512];
  snprintf(kc, sizeof(kc),
           "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
           "clusters: [{name: c, cluster: {server: '%s'}}]\n",
           s->url);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_client_opts o = {.qps = -1};
  int rc = gb_kube_config_load_buffer("t", kc, strlen(kc), NULL, &s->cfg, &d) ||
           gb_kube_client_new(s->cfg, &o, &s->cli, &d);
  if (rc)
    fprintf(stderr, "gb_standin: no client for %s: %s\n", s->url,
            d.n ? d.msgs[0] : "unknown error");
  gc_diags_destroy(&d);
  return rc ? -1 : 0;
}

void gb_standin_stop(struct gb_standin *s) {
  gb_kube_client_free(s->cli);
  gb_kube_config_free(s->cfg);
  s->cli = NULL;
  s->cfg = NULL;
  if (s->pid > 0) {
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
  }
  s->pid = 0;
}
