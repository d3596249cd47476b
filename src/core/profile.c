/* The LACE_PROFILE table: one row per (primitive, where it ran), guarded
 * by `lock`; printed once at exit. */
#define _POSIX_C_SOURCE 200809L
#include "core/profile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/prim.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool enabled;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double total[LC_OP_COUNT][3];
static long count[LC_OP_COUNT][3];

static void report(void) {
  double all = 0;
  static const char *const where[3] = {"cpu", "gpu", "gpu>cpu"};
  for (int i = 0; i < LC_OP_COUNT; i++) all += total[i][0] + total[i][1] + total[i][2];
  fprintf(stderr, "lace profile (LACE_PROFILE): %.3f ms evaluating (gpu>cpu: GPU-stream nodes "
                  "computed on the CPU)\n", 1e3 * all);
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < LC_OP_COUNT; i++)
      if (count[i][pass])
        fprintf(stderr, "  %-28s %-7s %8ld nodes %10.3f ms %5.1f%%\n", lc_prims[i]->name,
                where[pass], count[i][pass], 1e3 * total[i][pass],
                all > 0 ? 100 * (total[i][pass]) / all : 0.0);
}

static void init(void) {
  const char *e = getenv("LACE_PROFILE");
  enabled = e && *e && strcmp(e, "0") != 0;
  if (enabled) atexit(report);
}

bool lc_profile_on(void) {
  pthread_once(&once, init);
  return enabled;
}

double lc_profile_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void lc_profile_add(int op, enum lc_profile_where where, double seconds) {
  if (op < 0 || op >= LC_OP_COUNT || (unsigned)where > LC_PROFILE_GPU_ON_CPU) return;
  pthread_mutex_lock(&lock);
  total[op][where] += seconds;
  count[op][where]++;
  pthread_mutex_unlock(&lock);
}
