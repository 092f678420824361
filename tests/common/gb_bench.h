/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_bench: clocks and memory readings shared by the benchmark programs
 * (tests/bench/bench_*.c).  Header-only (static inline) because benchmarks
 * link gbcore alone, without the Check-based test helpers.
 */
#ifndef GB_BENCH_H
#define GB_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Monotonic wall-clock seconds. */
static inline double gb_bench_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds used by this process (all threads, user + system). */
static inline double gb_bench_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's resident set size in KiB (VmRSS), or -1 when unknown. */
static inline long gb_bench_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long v = -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "VmRSS:", 6))
      v = strtol(line + 6, NULL, 10);
  fclose(f);
  return v;
}

#endif
