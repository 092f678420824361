/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve_config: serve's configuration, stitched from the layers' tables
 * (see the header).
 */
#include <string.h>

#include "gb_serve_config.h"
#include "gb_serve_config_test.h"

int gb_serve_config_init(struct gb_serve_config *c, struct gc_diags *d) {
  memset(c, 0, sizeof(*c));
  /* The order the configuration is printed in: a section shared by two
   * tables (timeouts, placement) is printed where it first appears. */
  const struct gb_options_part parts[GB_SERVE_CONFIG_PARTS] = {
      {&gb_kube_options_table, &c->kube},          {&gb_log_opt_table, &c->log},
      {&gb_rpc_options_table, &c->grpc},           {&gb_http_options_table, &c->http},
      {&gb_config_webhook_table, &c->webhook},     {&gb_sched_options_table, &c->sched},
      {gb_config_table(), &c->controller},         {&gb_kube_options_events_table, &c->events},
      {&gb_kube_options_leader_table, &c->leader}, {&gb_placement_options_table, &c->placement},
      {&gb_plan_options_table, &c->plan},          {&gb_timeouts_options_table, &c->timeouts},
  };
  memcpy(c->parts, parts, sizeof(parts));
  return gb_options_init(&c->opts, c->parts, GB_SERVE_CONFIG_PARTS, d);
}

void gb_serve_config_destroy(struct gb_serve_config *c) {
  if (!c)
    return;
  gb_options_destroy(&c->opts);
}

int gb_serve_config_load_buffer(struct gb_serve_config *c, const char *name, const char *buf,
                                size_t len, struct gc_diags *d) {
  return gb_options_load_buffer(&c->opts, name, buf, len, d);
}

int gb_serve_config_set(struct gb_serve_config *c, const char *key, const char *value,
                        struct gc_diags *d) {
  return gb_options_set(&c->opts, key, value, "--set", d);
}

int gb_serve_config_validate(struct gb_serve_config *c, struct gc_diags *d) {
  return gb_options_check(&c->opts, d);
}

void gb_serve_config_write(const struct gb_serve_config *c, FILE *f) {
  gb_options_write(&c->opts, f);
}

void gb_serve_config_write_help(const struct gb_serve_config *c, FILE *f) {
  fprintf(f, "\nConfiguration keys (sections of the --config file, or --set KEY=VALUE), by the "
             "layer that owns them:\n");
  gb_options_write_help(&c->opts, f);
}

/* ---- flags ---------------------------------------------------------------------- */

static void usage(const struct gb_serve_config *c, FILE *f) {
  fprintf(f, "usage: gangbridge serve [--config FILE] [options]\n"
             "       gangbridge serve --offline --grpc-addr HOST:PORT [options]  (no cluster)\n"
             "\n"
             "Runs the controller: watches TrainJobs and keeps one PodGroup per gang,\n"
             "serves the pod-binding webhook, /metrics, /healthz and /readyz, and\n"
             "(with --grpc-addr) the gRPC API.  Stops gracefully on SIGTERM or SIGINT.\n"
             "\n"
             "  --config FILE             YAML configuration file (read first)\n"
             "  --set KEY=VALUE           set any configuration key (repeatable)\n"
             "  --print-config            print the effective configuration and exit\n"
             "  --print-keys              print every key: path, type, default, flag, layer\n");
  for (size_t p = 0; p < c->opts.n_parts; p++)
    for (size_t i = 0; i < c->parts[p].table->n; i++) {
      const struct gb_opt *k = &c->parts[p].table->keys[i];
      if (k->flag)
        fprintf(f, "  --%-23s %s (default \"%s\")\n", k->flag, k->path, k->def);
    }
  fprintf(f, "  -h, --help                show this help\n"
             "\nEvery key and default: below, and docs/operating.md.\n");
}

/* Reads every --config FILE first, so flags override the file wherever
 * they appear.  Returns 0 or an error (messages in d). */
static int load_configs(struct gb_serve_config *c, int argc, char **argv, struct gc_diags *d) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *file = NULL;
    if (!strcmp(a, "--config")) {
      if (i + 1 >= argc) {
        gc_diags_addf(d, "option '--config' needs a value");
        return GC_EUSAGE;
      }
      file = argv[++i];
    } else if (!strncmp(a, "--config=", 9)) {
      file = a + 9;
    } else if (!strcmp(a, "--")) {
      break;
    }
    int rc = file ? gb_options_load_file(&c->opts, file, d) : 0;
    if (rc)
      return rc == GC_ENOMEM ? rc : GC_EINVAL;
  }
  return 0;
}

/* --set KEY=VALUE. */
static int set_pair(struct gb_serve_config *c, const char *val, struct gc_diags *d) {
  const char *e = strchr(val, '=');
  char key[128];
  if (!e || (size_t)(e - val) >= sizeof(key)) {
    gc_diags_addf(d, "--set needs KEY=VALUE, not '%.128s'", val);
    return GC_EUSAGE;
  }
  memcpy(key, val, (size_t)(e - val));
  key[e - val] = '\0';
  int rc = gb_serve_config_set(c, key, e + 1, d);
  return rc == GC_ENOTFOUND ? GC_EUSAGE : rc;
}

/* One flag at argv[*i] (advancing *i past its value).  Returns 0 or an
 * error (messages in d). */
static int take_flag(struct gb_serve_config *c, int argc, char **argv, int *i, struct gc_diags *d) {
  const char *a = argv[*i];
  if (strncmp(a, "--", 2) != 0 || !a[2]) {
    gc_diags_addf(d, "unexpected argument '%.128s'", a);
    return GC_EUSAGE;
  }
  const char *name = a + 2;
  const char *eq = strchr(name, '=');
  size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
  const char *val = eq ? eq + 1 : NULL;
  int is_config = nlen == 6 && !strncmp(name, "config", 6);
  int is_set = nlen == 3 && !strncmp(name, "set", 3);
  const struct gb_opt *k = is_config || is_set ? NULL : gb_options_find_flag(&c->opts, name, nlen);
  if (!is_config && !is_set && !k) {
    gc_diags_addf(d, "unknown option '%.128s'", a);
    return GC_EUSAGE;
  }
  if (!val) {
    /* Boolean flags may stand alone ("--leader-elect"). */
    if (k && k->type == GB_OPT_BOOL &&
        (*i + 1 >= argc || !strncmp(argv[*i + 1], "--", 2) || !gb_options_is_bool(argv[*i + 1]))) {
      val = "true";
    } else if (*i + 1 >= argc) {
      gc_diags_addf(d, "option '--%.*s' needs a value", (int)nlen, name);
      return GC_EUSAGE;
    } else {
      val = argv[++*i];
    }
  }
  if (is_config)
    return 0;
  if (is_set)
    return set_pair(c, val, d);
  char where[160];
  snprintf(where, sizeof(where), "--%.*s", (int)nlen, name);
  return gb_options_set_key(&c->opts, k, val, where, d);
}

int gb_serve_config_parse_args(struct gb_serve_config *c, int argc, char **argv, FILE *out,
                               struct gc_diags *d) {
  int rc = load_configs(c, argc, argv, d), print = 0;
  for (int i = 1; !rc && i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(c, out);
      return 1;
    }
    if (!strcmp(a, "--print-keys")) {
      gb_options_write_keys(&c->opts, out);
      return 3;
    }
    if (!strcmp(a, "--print-config"))
      print = 1;
    else
      rc = take_flag(c, argc, argv, &i, d);
  }
  return rc ? rc : print ? 2 : 0;
}
