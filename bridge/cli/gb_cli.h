/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cli: the gangbridge subcommands.  Each takes the arguments after its
 * name (argv[0] is the subcommand) and returns the process exit status:
 * 0 ok, 1 input errors (all printed, one per line on stderr), 2 usage.
 */
#ifndef GB_CLI_H
#define GB_CLI_H

#define GB_EXIT_OK 0
#define GB_EXIT_INPUT 1
#define GB_EXIT_USAGE 2

int gb_cmd_render(int argc, char **argv);
int gb_cmd_render_explain(int argc, char **argv);
int gb_cmd_place(int argc, char **argv);
int gb_cmd_serve(int argc, char **argv);
int gb_cmd_call(int argc, char **argv);
int gb_cmd_timeouts(int argc, char **argv);
int gb_cmd_placement(int argc, char **argv);

#endif
