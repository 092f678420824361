/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_main: the gangbridge binary; dispatches to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "gb_cli.h"
#include "gb_version.h"

struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
};

static const struct command commands[] = {
    {"render", gb_cmd_render, "print the PodGroup(s) gang scheduling needs for TrainJobs"},
    {"explain", gb_cmd_render_explain,
     "explain each TrainJob's gang: pods, requests, binding, warnings"},
    {"place", gb_cmd_place, "evaluate where a gang fits on a cluster topology"},
    {"serve", gb_cmd_serve, "run the gRPC service (GangCalculator, PlacementEvaluator, Health)"},
    {"call", gb_cmd_call, "call a running service: calculate, evaluate or health"},
    {"timeouts", gb_cmd_timeouts, "report gang scheduling waits and suggest PodGroup timeouts"},
    {"placement", gb_cmd_placement, "list the gangs a running serve holds for placement, and why"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f, "usage: gangbridge <command> [options]\n\ncommands:\n");
  for (const struct command *c = commands; c->name; c++)
    fprintf(f, "  %-9s %s\n", c->name, c->summary);
  fprintf(f, "\nRun 'gangbridge <command> --help' for a command's options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return GB_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
    usage(stdout);
    return GB_EXIT_OK;
  }
  if (!strcmp(name, "--version") || !strcmp(name, "version")) {
    if (GB_VERSION_GIT[0])
      printf("gangbridge %s (git %s)\n", GB_VERSION, GB_VERSION_GIT);
    else
      printf("gangbridge %s\n", GB_VERSION);
    return GB_EXIT_OK;
  }
  for (const struct command *c = commands; c->name; c++)
    if (!strcmp(c->name, name))
      return c->run(argc - 1, argv + 1);
  fprintf(stderr, "gangbridge: unknown command '%s'\n", name);
  usage(stderr);
  return GB_EXIT_USAGE;
}
